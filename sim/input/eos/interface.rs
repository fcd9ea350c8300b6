//! Interfaces: EOS interface names (`Et4` → `Ethernet4`), the global `interface` command that
//! enters interface mode, and the interface-mode commands (switchport, ip address/ospf/nat, mtu).

use crate::diag::Diagnostic;
use crate::model::{AddrConfig, IfId, IfOspf, Interface};

use super::cursor::{is_number, negated_value, negation, number_or_none, prefix, Cur, MaskForm, Neg, Reject};
use super::ignored::{ignored_by_design, nothing, skip_block, skip_unmodelled, KeywordContext};
use super::keywords::{keyword, Match, IF_IP_WORDS, IF_OSPF_WORDS, IF_TYPES, IF_WORDS};
use super::{Apply, Ctx, Mode};

/// "et4", "Et4", "ethernet 4", "Ethernet4", "eth4" → Some("Ethernet4"); "lo0"/"loopback 0" →
/// "Loopback0"; "ma1" → "Management1"; "vlan10" → "Vlan10"; Ethernet with module "Ethernet1/1"
/// too. None if not an EOS interface name.
pub fn canonical_interface(name: &str) -> Option<String> {
    let name = name.trim();
    let digit = name.find(|c: char| c.is_ascii_digit())?;
    let (kind, number) = name.split_at(digit);
    let kind = kind.trim_end();
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let kind = match keyword(kind, IF_TYPES) {
        Match::One(k) => k,
        Match::Ambiguous(_) | Match::None => return None,
    };
    Some(format!("{}{}", if_type_name(kind), canonical_if_number(number)?))
}

/// An interface name written as one word (`Et4`) or two (`ethernet 4`).
pub(super) fn interface_name(c: &mut Cur) -> Result<String, Reject> {
    const WHAT: &str = "an interface name (e.g. Ethernet4)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if let Some(name) = canonical_interface(t.text) {
        c.pos += 1;
        return Ok(name);
    }
    let joined = c.toks.get(c.pos + 1).map(|n| format!("{} {}", t.text, n.text));
    match joined.as_deref().and_then(canonical_interface) {
        Some(name) => {
            c.pos += 2;
            Ok(name)
        }
        None => Err(c.expected(WHAT)),
    }
}

fn if_type_name(kind: &str) -> &'static str {
    match kind {
        "ethernet" => "Ethernet",
        "loopback" => "Loopback",
        "management" => "Management",
        "port-channel" => "Port-Channel",
        "tunnel" => "Tunnel",
        "vlan" => "Vlan",
        _ => "Vxlan",
    }
}

/// `4`, `1/1`, `1/1/2`, `4.100` (sub-interface); leading zeros dropped as EOS does.
fn canonical_if_number(number: &str) -> Option<String> {
    let (main, sub) = match number.split_once('.') {
        Some((m, s)) => (m, Some(s)),
        None => (number, None),
    };
    let parts: Option<Vec<String>> = main
        .split('/')
        .map(|p| p.parse::<u32>().ok().map(|n| n.to_string()))
        .collect();
    let mut out = parts?.join("/");
    if let Some(sub) = sub {
        out = format!("{out}.{}", sub.parse::<u32>().ok()?);
    }
    Some(out)
}

/// Ethernet and Port-Channel ports are switchports until `no switchport`; the rest route.
fn routed_by_default(name: &str) -> bool {
    !(name.starts_with("Ethernet") || name.starts_with("Port-Channel"))
}

fn default_mtu(name: &str) -> u32 {
    if name.starts_with("Loopback") {
        65535
    } else {
        1500
    }
}

pub(super) fn interface(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let name_at = c.here();
    let name = match interface_name(c) {
        Ok(name) => name,
        // `interface Ethernet1-4` / `interface Et1,Et3`: valid EOS ranges fabsim does not expand.
        // The block is skipped whatever the `no`/`default` prefix.
        Err(_) if c.peek().is_some_and(|t| is_interface_range(t.text)) => {
            return Ok(skip_block(c, Neg::Set, start));
        }
        Err(e) => return Err(e),
    };
    c.end()?;
    match neg {
        Neg::Set => Ok(Box::new(move |ctx: &mut Ctx| {
            let id = ctx.ensure_iface(&name, name_at);
            ctx.mode = Mode::Interface(id);
        })),
        Neg::No if !routed_by_default(&name) || name.starts_with("Management") => Err(Reject {
            col0: start,
            msg: format!("% Removal of physical interfaces is not permitted ({name})"),
        }),
        Neg::No | Neg::Default => Ok(Box::new(move |ctx: &mut Ctx| reset_interface(ctx, &name, neg, start))),
    }
}

/// `Ethernet1-4`, `Et1,3`: a range or list after the interface number.
fn is_interface_range(text: &str) -> bool {
    text.find(|ch: char| ch.is_ascii_digit())
        .and_then(|d| text.get(d..))
        .is_some_and(|number| number.contains(['-', ',']))
}

/// `default interface X` restores defaults; `no interface X` deletes a virtual interface,
/// which fabsim (whose interface ids are fixed) models as a defaulted, shut-down one.
fn reset_interface(ctx: &mut Ctx, name: &str, neg: Neg, col0: usize) {
    let Some(id) = ctx.net.iface_by_name(ctx.dev, name) else {
        return;
    };
    if let Some(i) = ctx.iface_mut(id) {
        i.routed = routed_by_default(name);
        i.admin_up = neg == Neg::Default;
        i.addr = AddrConfig::None;
        i.mtu = default_mtu(name);
        i.ospf = IfOspf::default();
        i.nat_overload_acl = None;
    }
    if neg == Neg::No {
        let msg = format!("deleting {name} is modelled as unconfiguring and shutting it down");
        ctx.warn(col0, msg);
    }
}

impl Ctx<'_> {
    pub(super) fn iface_name(&self, id: IfId) -> String {
        self.net
            .interfaces
            .get(id.idx())
            .map_or_else(String::new, |i| i.name.clone())
    }

    fn iface_mut(&mut self, id: IfId) -> Option<&mut Interface> {
        self.net.interfaces.get_mut(id.idx())
    }

    /// The interface, created if the topology did not declare it.
    fn ensure_iface(&mut self, name: &str, col0: usize) -> IfId {
        if let Some(id) = self.net.iface_by_name(self.dev, name) {
            return id;
        }
        let span = self.span(col0);
        let id = self.net.add_interface(self.dev, name, routed_by_default(name), span);
        self.net.interfaces[id.idx()].mtu = default_mtu(name);
        id
    }

    /// EOS keeps an address configured on a switchport but does not use it, and says so.
    pub(super) fn check_switchport_addresses(&mut self) {
        let mut seen: Vec<IfId> = Vec::new();
        for (id, span) in self.addressed.iter().rev() {
            if seen.contains(id) {
                continue;
            }
            seen.push(*id);
            let Some(i) = self.net.interfaces.get(id.idx()) else {
                continue;
            };
            if !i.routed && i.addr != AddrConfig::None {
                let msg = format!(
                    "IP configuration will be ignored while interface {} is not a routed port",
                    i.name
                );
                let d = Diagnostic::warning(span.clone(), msg).with_hint("add `no switchport` under the interface");
                self.warnings.push(d);
            }
        }
    }
}

pub(super) fn parse_interface(c: &mut Cur, id: IfId, name: String) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, IF_WORDS, "an interface command")?;
    match word {
        "switchport" => switchport(c, id, neg, start, name),
        "shutdown" => {
            c.end()?;
            let up = neg != Neg::Set;
            Ok(if_apply(id, move |i| i.admin_up = up))
        }
        "mtu" => {
            let mtu = match neg {
                Neg::Set => c.number::<u32>("an MTU (68-65535)", 68, 65535)?,
                Neg::No | Neg::Default => {
                    c.skip_if(is_number);
                    default_mtu(&name)
                }
            };
            c.end()?;
            Ok(if_apply(id, move |i| i.mtu = mtu))
        }
        "ip" => if_ip(c, id, neg, start),
        w if ignored_by_design(KeywordContext::Interface, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn if_apply(id: IfId, f: impl FnOnce(&mut Interface) + 'static) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            f(i)
        }
    })
}

fn switchport(c: &mut Cur, id: IfId, neg: Neg, start: usize, name: String) -> Result<Apply, Reject> {
    if !c.at_end() {
        // `switchport mode trunk`, `switchport access vlan 10`: VLANs are not modelled.
        return Ok(skip_unmodelled(c, start));
    }
    if routed_by_default(&name) {
        // EOS rejects `[no] switchport` on Loopback/Vlan/Management (netlab#1884).
        let keyword_at = c.toks.get(c.pos.saturating_sub(1)).map_or(start, |t| t.col0);
        return Err(Reject {
            col0: keyword_at,
            msg: format!("% Invalid input: {name} is always routed; it has no switchport mode"),
        });
    }
    let routed = neg == Neg::No;
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            i.routed = routed;
        }
        let span = ctx.span(start);
        ctx.addressed.push((id, span));
    }))
}

fn if_ip(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    match c.keyword(IF_IP_WORDS, "an interface ip command")? {
        "address" => ip_address(c, id, neg, start),
        "ospf" => if_ospf(c, id, neg, start),
        "nat" => if_nat(c, id, neg, start),
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn ip_address(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if neg != Neg::Set {
        c.skip_rest();
        return Ok(if_apply(id, |i| i.addr = AddrConfig::None));
    }
    if c.opt_keyword(&["dhcp"]).is_some() {
        c.end()?;
        return Ok(set_address(id, AddrConfig::Dhcp, start));
    }
    let at = c.here();
    let net = prefix(c, MaskForm::Netmask)?;
    if net.prefix_len() == 0 {
        return Err(Reject {
            col0: at,
            msg: "expected a prefix length 1-32, found '/0'".into(),
        });
    }
    if c.opt_keyword(&["secondary"]).is_some() {
        c.end()?;
        return Ok(skip_unmodelled(c, start));
    }
    c.end()?;
    Ok(set_address(id, AddrConfig::Static(net), start))
}

fn set_address(id: IfId, addr: AddrConfig, start: usize) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            i.addr = addr;
        }
        let span = ctx.span(start);
        ctx.addressed.push((id, span));
    })
}

fn if_ospf(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let set = neg == Neg::Set;
    match c.keyword(IF_OSPF_WORDS, "an interface OSPF command")? {
        "cost" => {
            let cost = number_or_none::<u32>(c, set, "a cost (1-65535)", 1, 65535)?;
            Ok(if_apply(id, move |i| i.ospf.cost = cost))
        }
        "priority" => {
            let prio = number_or_none::<u8>(c, set, "a priority (0-255)", 0, 255)?;
            Ok(if_apply(id, move |i| i.ospf.priority = prio))
        }
        "network" => {
            if set {
                c.keyword(&["point-to-point"], "point-to-point")?;
            }
            negated_value(c, set, |w| keyword(w, &["point-to-point"]).is_one())?;
            Ok(if_apply(id, move |i| i.ospf.point_to_point = set))
        }
        // `ip ospf area`, timers, authentication…: valid EOS that fabsim does not model.
        _ => Ok(skip_unmodelled(c, start)),
    }
}

/// `ip nat source dynamic access-list NAME overload`; other NAT forms warn.
fn if_nat(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let pat = c.opt_keyword(&["destination", "source"]) == Some("source")
        && c.opt_keyword(&["dynamic", "static"]) == Some("dynamic")
        && c.opt_keyword(&["access-list"]).is_some();
    if !pat {
        return Ok(skip_unmodelled(c, start));
    }
    let acl = c.word("an ACL name")?.text.to_string();
    if neg != Neg::Set {
        c.skip_rest();
        return Ok(if_apply(id, move |i| {
            if i.nat_overload_acl.as_deref() == Some(acl.as_str()) {
                i.nat_overload_acl = None;
            }
        }));
    }
    match c.keyword(&["overload", "pool"], "overload or pool")? {
        "overload" => {
            c.end()?;
            Ok(if_apply(id, move |i| i.nat_overload_acl = Some(acl)))
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}
