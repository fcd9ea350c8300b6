//! IP access lists: the global `ip access-list` command that enters ACL mode, and ACL-mode rules
//! (sequence numbers, protocols, `any`/`host`/wildcard addresses, unmodelled port matches).

use ipnet::Ipv4Net;

use crate::diag::Diagnostic;
use crate::model::{Acl, AclAction, AclEntry};

use super::cursor::{prefix, Cur, MaskForm, Neg, Reject};
use super::ignored::{ignored_by_design, nothing, skip_block, skip_unmodelled, KeywordContext};
use super::keywords::{keyword, Match, ACL_PROTOCOLS, ACL_WORDS};
use super::{Apply, Ctx, Mode};

pub(super) fn ip_access_list(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    // `ip access-list standard NAME`: source-only ACLs, not modelled.
    if c.peek().is_some_and(|t| t.text.eq_ignore_ascii_case("standard")) {
        c.word("standard")?;
        c.word("an ACL name")?;
        c.end()?;
        return Ok(skip_block(c, neg, start));
    }
    let name = c.word("an ACL name")?.text.to_string();
    c.end()?;
    Ok(Box::new(move |ctx: &mut Ctx| {
        let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
            return;
        };
        if neg != Neg::Set {
            d.acls.remove(&name);
            return;
        }
        d.acls.entry(name.clone()).or_insert_with(|| Acl {
            name: name.clone(),
            entries: Vec::new(),
        });
        ctx.mode = Mode::Acl(name);
    }))
}

struct AclRule {
    action: AclAction,
    protocol: Option<u8>,
    src: Ipv4Net,
    dst: Ipv4Net,
    /// Parts of the rule fabsim does not model (ports, flags, options), with their offsets.
    notes: Vec<(usize, String)>,
}

pub(super) fn parse_acl(c: &mut Cur, acl: String) -> Result<Apply, Reject> {
    let start = c.here();
    let neg = match c.peek().map(|t| keyword(t.text, ACL_WORDS)) {
        Some(Match::One("no")) => Neg::No,
        Some(Match::One("default")) => Neg::Default,
        _ => Neg::Set,
    };
    if neg != Neg::Set {
        c.pos += 1;
    }
    let seq = seq_number(c)?;
    if let (Neg::No | Neg::Default, Some(seq)) = (neg, seq) {
        // `no 20`: remove by sequence number.
        c.end()?;
        return Ok(acl_edit(acl, move |a| a.entries.retain(|e| e.seq != seq)));
    }
    match c.keyword(ACL_WORDS, "permit, deny or a sequence number")? {
        word @ ("permit" | "deny") => {
            let action = if word == "permit" {
                AclAction::Permit
            } else {
                AclAction::Deny
            };
            let rule = acl_rule(c, action)?;
            if neg != Neg::Set {
                return Ok(remove_rule(acl, rule));
            }
            Ok(add_rule(acl, seq, rule, start))
        }
        "no" | "default" => Err(c.expected("permit or deny")),
        w if ignored_by_design(KeywordContext::Acl, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn seq_number(c: &mut Cur) -> Result<Option<u32>, Reject> {
    match c.peek() {
        Some(t) if t.text.starts_with(|ch: char| ch.is_ascii_digit()) => {
            let what = "a sequence number (1-4294967295)";
            Ok(Some(c.number::<u32>(what, 1, u32::MAX as u64)?))
        }
        _ => Ok(None),
    }
}

/// An edit of the ACL this mode is in.
fn acl_edit(name: String, f: impl FnOnce(&mut Acl) + 'static) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        let acls = ctx.net.devices.get_mut(ctx.dev.idx()).map(|d| &mut d.acls);
        if let Some(acl) = acls.and_then(|acls| acls.get_mut(&name)) {
            f(acl)
        }
    })
}

fn add_rule(acl: String, seq: Option<u32>, rule: AclRule, start: usize) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        for (col0, msg) in &rule.notes {
            ctx.warn(*col0, msg.clone());
        }
        let span = ctx.span(start);
        let acls = ctx.net.devices.get_mut(ctx.dev.idx()).map(|d| &mut d.acls);
        let Some(a) = acls.and_then(|acls| acls.get_mut(&acl)) else {
            return;
        };
        // EOS appends after the highest sequence number, in steps of 10.
        let seq = seq.unwrap_or_else(|| a.entries.iter().map(|e| e.seq).max().unwrap_or(0).saturating_add(10));
        if a.entries.iter().any(|e| e.seq == seq) {
            let d = Diagnostic::error(span, format!("% Error: duplicate sequence number {seq}"));
            ctx.errors.push(d);
            return;
        }
        let entry = AclEntry {
            seq,
            action: rule.action,
            protocol: rule.protocol,
            src: rule.src,
            dst: rule.dst,
            span,
        };
        let at = a.entries.partition_point(|e| e.seq < seq);
        a.entries.insert(at, entry);
    })
}

fn remove_rule(acl: String, rule: AclRule) -> Apply {
    acl_edit(acl, move |a| {
        a.entries.retain(|e| {
            !(e.action == rule.action && e.protocol == rule.protocol && e.src == rule.src && e.dst == rule.dst)
        })
    })
}

/// `PROTOCOL SRC [PORTS] DST [PORTS] [OPTIONS]`.
fn acl_rule(c: &mut Cur, action: AclAction) -> Result<AclRule, Reject> {
    let protocol = acl_protocol(c)?;
    let mut notes = Vec::new();
    let src = acl_address(c)?;
    acl_ports(c, &mut notes);
    let dst = acl_address(c)?;
    acl_ports(c, &mut notes);
    while let Some(t) = c.peek() {
        c.pos += 1;
        if !ignored_by_design(KeywordContext::AclRuleOption, &t.text.to_ascii_lowercase()) {
            let msg = format!("ACL rule option '{}' is not modelled by fabsim; ignored", t.text);
            notes.push((t.col0, msg));
        }
    }
    Ok(AclRule {
        action,
        protocol,
        src,
        dst,
        notes,
    })
}

fn acl_protocol(c: &mut Cur) -> Result<Option<u8>, Reject> {
    const WHAT: &str = "a protocol (ip, tcp, udp, icmp, … or 0-255)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if t.text.starts_with(|ch: char| ch.is_ascii_digit()) {
        return Ok(Some(c.number::<u8>(WHAT, 0, 255)?));
    }
    let names: Vec<&'static str> = ACL_PROTOCOLS.iter().map(|(n, _)| *n).collect();
    let name = c.keyword(&names, WHAT)?;
    let number = ACL_PROTOCOLS.iter().find(|(n, _)| *n == name).map_or(0, |(_, p)| *p);
    Ok((name != "ip").then_some(number))
}

fn acl_address(c: &mut Cur) -> Result<Ipv4Net, Reject> {
    match c.opt_keyword(&["any", "host"]) {
        Some("any") => Ok(Ipv4Net::default()),
        Some(_) => Ok(Ipv4Net::from(c.ipv4("a host address (A.B.C.D)")?)),
        None => Ok(prefix(c, MaskForm::Wildcard)?.trunc()),
    }
}

/// TCP/UDP port matches (`eq 80`, `range 1000 2000`): accepted, not modelled, so the rule
/// matches every port. Said in a warning because it widens the rule.
fn acl_ports(c: &mut Cur, notes: &mut Vec<(usize, String)>) {
    let Some(t) = c.peek() else { return };
    let Some(op) = c.opt_keyword(&["eq", "gt", "lt", "neq", "range"]) else {
        return;
    };
    let values = if op == "range" { 2 } else { 1 };
    let mut text = t.text.to_string();
    for _ in 0..values {
        if let Some(v) = c.peek() {
            text.push(' ');
            text.push_str(v.text);
            c.pos += 1;
        }
    }
    let msg = format!("port match '{text}' is not modelled by fabsim; the rule matches all ports");
    notes.push((t.col0, msg));
}
