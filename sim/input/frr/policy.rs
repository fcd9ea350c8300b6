//! `ip prefix-list NAME [seq N] permit|deny P [ge G] [le L]` and `route-map NAME permit|deny N`
//! with `match ip address prefix-list NAME`, `set local-preference N`, `set metric N`,
//! `set as-path prepend AS…` → `model::policy`. Without `seq`, FRR numbers prefix-list entries
//! 5, 10, 15… after the list's highest (`lib/plist.c` `prefix_new_seq_get`).

use super::{Bad, Ctx, Handled, Line};
use crate::model::policy::{Action, PrefixListEntry, RouteMapEntry};

fn action(l: &Line, i: usize) -> Result<Action, Bad> {
    match l.word(i) {
        Some("permit") => Ok(Action::Permit),
        Some("deny") => Ok(Action::Deny),
        _ => Err(l.bad(i, "`permit` or `deny`")),
    }
}

pub(super) fn prefix_list(ctx: &mut Ctx, l: &Line) -> Result<(), Bad> {
    let name = l.word(2).ok_or_else(|| l.bad(2, "a prefix-list name"))?.to_string();
    let mut i = 3;
    let entries = ctx.policies.prefix_lists.entry(name.clone()).or_default();
    let seq = if l.word(i) == Some("seq") {
        i += 2;
        l.number(i - 1, "a sequence number")?
    } else {
        entries.iter().map(|e| e.seq).max().unwrap_or(0) / 5 * 5 + 5
    };
    if l.word(i) == Some("description") {
        return Ok(()); // a remark, as on the other vendors; no entry
    }
    let action = action(l, i)?;
    let prefix = l.prefix(i + 1)?;
    let (mut ge, mut le) = (None, None);
    let mut j = i + 2;
    while let Some(word) = l.word(j) {
        let n = l.number(j + 1, "a prefix length 0-32")?;
        let n = u8::try_from(n)
            .ok()
            .filter(|n| *n <= 32)
            .ok_or_else(|| l.bad(j + 1, "a prefix length 0-32"))?;
        match word {
            "ge" => ge = Some(n),
            "le" => le = Some(n),
            _ => return Err(l.bad(j, "`ge` or `le`")),
        }
        j += 2;
    }
    // FRR refuses lengths that cannot match (`lib/plist.c` `vty_prefix_list_install`).
    let len = prefix.prefix_len();
    if ge.is_some_and(|g| g < len) || le.is_some_and(|x| x < len || ge.is_some_and(|g| x < g)) {
        return Err(Bad {
            col0: l.col(i + 2),
            msg: "% Invalid prefix range: expected len <= ge-value <= le-value".to_string(),
        });
    }
    let span = ctx.span(l.col(0));
    let entries = ctx.policies.prefix_lists.entry(name).or_default();
    entries.retain(|e| e.seq != seq);
    entries.push(PrefixListEntry {
        seq,
        action,
        prefix: prefix.trunc(),
        ge,
        le,
        span,
    });
    entries.sort_by_key(|e| e.seq);
    Ok(())
}

/// `route-map NAME permit|deny SEQ`: creates (or reopens) the entry; returns where it is.
pub(super) fn route_map_entry(ctx: &mut Ctx, l: &Line) -> Result<(String, u32), Bad> {
    let name = l.word(1).ok_or_else(|| l.bad(1, "a route-map name"))?.to_string();
    let action = action(l, 2)?;
    let seq = l.number(3, "a sequence number 1-65535")?;
    l.end(4)?;
    let span = ctx.span(l.col(0));
    let entries = ctx.policies.route_maps.entry(name.clone()).or_default();
    match entries.iter_mut().find(|e| e.seq == seq) {
        Some(e) => e.action = action,
        None => {
            entries.push(RouteMapEntry {
                seq,
                action,
                match_prefix_list: None,
                set_local_pref: None,
                set_metric: None,
                set_prepend: Vec::new(),
                span,
            });
            entries.sort_by_key(|e| e.seq);
        }
    }
    Ok((name, seq))
}

pub(super) fn route_map_line(ctx: &mut Ctx, name: &str, seq: u32, l: &Line) -> Handled {
    let w = |i| l.word(i).unwrap_or_default();
    let r = match (w(0), w(1)) {
        ("match", "ip") if (w(2), w(3)) == ("address", "prefix-list") => {
            let list = l.word(4).map(str::to_string);
            match list {
                Some(list) => {
                    if let Some(e) = entry(ctx, name, seq) {
                        e.match_prefix_list = Some(list);
                    }
                    l.end(5)
                }
                None => Err(l.bad(4, "a prefix-list name")),
            }
        }
        ("set", "local-preference") => l.number(2, "a local preference").and_then(|n| {
            if let Some(e) = entry(ctx, name, seq) {
                e.set_local_pref = Some(n);
            }
            l.end(3)
        }),
        ("set", "metric") => l.number(2, "a metric (MED)").and_then(|n| {
            if let Some(e) = entry(ctx, name, seq) {
                e.set_metric = Some(n);
            }
            l.end(3)
        }),
        ("set", "as-path") if w(2) == "prepend" => {
            let mut asns = Vec::new();
            let mut i = 3;
            while l.word(i).is_some() {
                match l.number(i, "an AS number") {
                    Ok(a) => asns.push(a),
                    Err(e) => return Some(Err(e)),
                }
                i += 1;
            }
            if asns.is_empty() {
                return Some(Err(l.bad(3, "an AS number")));
            }
            if let Some(e) = entry(ctx, name, seq) {
                e.set_prepend = asns;
            }
            Ok(())
        }
        ("match" | "set" | "on-match" | "continue" | "call" | "description", _) => {
            ctx.not_modelled(
                l,
                "fabsim's route-maps match prefix-lists and set local-preference, metric and as-path prepend only",
            );
            Ok(())
        }
        _ => return None,
    };
    Some(r)
}

/// The entry `route-map NAME … SEQ` opened.
fn entry<'a>(ctx: &'a mut Ctx, name: &str, seq: u32) -> Option<&'a mut RouteMapEntry> {
    ctx.policies.route_maps.get_mut(name)?.iter_mut().find(|e| e.seq == seq)
}
