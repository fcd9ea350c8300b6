//! BGP: the global `router bgp ASN` command and the router-bgp and `address-family ipv4` mode
//! commands, into `BgpConfig` with `BgpFlavor::Eos`. Unmodelled sub-modes of router bgp (other
//! address families, `vrf`, `vlan`) are skipped with one warning; peer groups are warned about.

use std::net::Ipv4Addr;

use crate::diag::{Diagnostic, Span};
use crate::model::bgp::{BgpRedistSource, BgpRedistribute, NextHopSelf};
use crate::model::{BgpConfig, BgpFlavor, BgpNeighbor};

use super::cursor::{is_number, negated_value, negation, prefix, router_id, Cur, MaskForm, Neg, Reject};
use super::ignored::{ignored_by_design, nothing, skip_unmodelled, statement, KeywordContext};
use super::interface::interface_name;
use super::keywords::{
    keyword, Match, ADDRESS_FAMILIES, AF_NEIGHBOR_WORDS, BGP_AF_BGP_WORDS, BGP_AF_WORDS, BGP_BGP_WORDS,
    BGP_REDIST_SOURCES, BGP_WORDS, NEIGHBOR_WORDS,
};
use super::{edit_apply, Apply, Ctx, Mode};

/// `ebgp-multihop` without a TTL. Arista's manual was not retrievable; 255 is the industry-CLI
/// default (Cisco IOS BGP command handbook, Dell OS9, Edgecore: "default 255") and Batfish's EOS
/// grammar takes the number as optional. Provisional: re-check on cEOS.
const DEFAULT_MULTIHOP_TTL: u8 = 255;

/// Which router-bgp grammar a line is parsed with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Level {
    Router,
    /// `address-family ipv4 [unicast]`.
    Af,
}

/// A sub-mode of router bgp fabsim does not model: its lines are recognised by their grammar
/// and ignored (one warning when entering it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum OtherKind {
    /// Another address family: address-family grammar.
    Af,
    /// `vrf NAME`: router-bgp grammar, with nested address families (`nested`).
    Vrf { nested: bool },
    /// `vlan N` / `vlan-aware-bundle NAME`: `rd`, `route-target`, `redistribute`, `vlan`.
    Vlan,
    /// A `router bgp` rejected for its AS number: router-bgp grammar, silently.
    Rejected,
}

const VLAN_BLOCK_WORDS: &[&str] = &["default", "no", "rd", "redistribute", "route-target", "vlan"];

// ---------------------------------------------------------------------------------------------
// Global mode: `router bgp ASN`, `no router bgp [ASN]`.

/// `router bgp ASN` (after `router bgp` has been read).
pub(super) fn router_bgp(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let asn_col = c.here();
    let asn = if neg == Neg::Set || !c.at_end() {
        Some(asn(c)?)
    } else {
        None
    };
    c.end()?;
    let text = statement(c);
    Ok(Box::new(move |ctx: &mut Ctx| {
        let span = ctx.span(start);
        let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
            return;
        };
        match (neg, asn, d.bgp.as_ref().map(|b| b.asn)) {
            (Neg::Set, Some(asn), None) => {
                d.bgp = Some(BgpConfig::new(BgpFlavor::Eos, asn, span));
                ctx.mode = Mode::Bgp;
            }
            (Neg::Set, Some(asn), Some(running)) if asn == running => ctx.mode = Mode::Bgp,
            (Neg::Set, _, Some(running)) => {
                let msg = format!("% BGP is already running with AS number {running}");
                ctx.errors.push(Diagnostic::error(ctx.span(asn_col), msg));
                ctx.mode = Mode::BgpOther(OtherKind::Rejected);
            }
            (_, Some(asn), Some(running)) if asn != running => ctx.warn(
                start,
                format!("'{text}': BGP is running with AS number {running}; ignored"),
            ),
            (_, _, Some(_)) => d.bgp = None,
            (_, _, None) => ctx.warn(start, format!("'{text}': BGP is not running; ignored")),
        }
    }))
}

/// An AS number: asplain (`65011`, 1-4294967295) or asdot (`1.10` = 65546).
fn asn(c: &mut Cur) -> Result<u32, Reject> {
    const WHAT: &str = "an AS number (1-4294967295 or 1-65535.0-65535)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    let n = match t.text.split_once('.') {
        None => t.text.parse::<u32>().ok(),
        Some((hi, lo)) => hi
            .parse::<u16>()
            .ok()
            .zip(lo.parse::<u16>().ok())
            .map(|(hi, lo)| (u32::from(hi) << 16) | u32::from(lo)),
    };
    let n = n.filter(|n| *n != 0).ok_or_else(|| c.expected(WHAT))?;
    c.pos += 1;
    Ok(n)
}

fn is_asn(w: &str) -> bool {
    w.split('.').all(is_number)
}

// ---------------------------------------------------------------------------------------------
// Router-bgp and address-family modes.

/// An edit of the device's BGP speaker (if it still exists); inherited neighbour settings are
/// brought up to date afterwards.
fn bgp_apply(f: impl FnOnce(&mut BgpConfig, Span) + 'static, start: usize) -> Apply {
    edit_apply(
        |d| d.bgp.as_mut(),
        move |b, span| {
            f(b, span);
            inherit(b);
        },
        start,
    )
}

/// EOS neighbours take `activate` and the add-path flags from the speaker unless they set them.
fn inherit(b: &mut BgpConfig) {
    for n in &mut b.neighbors {
        n.activate = n.overrides.activate.unwrap_or(b.default_ipv4_unicast);
        n.add_path_rx = n.overrides.add_path_rx.unwrap_or(b.addpath_receive);
        n.add_path_tx = n.overrides.add_path_tx.unwrap_or(b.addpath_send);
    }
}

/// A new EOS neighbour: recursive next-hop resolution through the RIB, the rest inherited.
fn eos_neighbor(addr: Ipv4Addr, span: Span) -> BgpNeighbor {
    let mut n = BgpNeighbor::new(addr, span);
    n.gateway_recursive = true;
    n
}

/// One line of router-bgp (`Level::Router`) or address-family ipv4 (`Level::Af`) mode.
pub(super) fn parse_bgp(c: &mut Cur, level: Level) -> Result<Apply, Reject> {
    let start = c.here();
    let words = match level {
        Level::Router => BGP_WORDS,
        Level::Af => BGP_AF_WORDS,
    };
    let (neg, word) = negation(c, words, "a router bgp command")?;
    let set = neg == Neg::Set;
    match word {
        "neighbor" => neighbor(c, neg, level, start),
        "network" => network(c, set, start),
        "redistribute" => redistribute(c, set, start),
        "bgp" => bgp_option(c, neg, level, start),
        "router-id" => {
            let id = router_id(c, set)?;
            Ok(bgp_apply(move |b, _| b.router_id = id, start))
        }
        "maximum-paths" => maximum_paths(c, set, start),
        "distance" => distance(c, set, start),
        "timers" => {
            c.keyword(&["bgp"], "bgp")?;
            let t = timers(c, set)?;
            Ok(bgp_apply(
                move |b, _| (b.timers.keepalive, b.timers.hold) = (t.map(|t| t.0), t.map(|t| t.1)),
                start,
            ))
        }
        "shutdown" => {
            c.end()?;
            Ok(bgp_apply(move |b, _| b.shutdown = set, start))
        }
        "graceful-restart" => graceful_restart(c, set, start),
        "address-family" => address_family(c, neg, start),
        "exit-address-family" => {
            c.end()?;
            Ok(Box::new(|ctx: &mut Ctx| ctx.mode = Mode::Bgp))
        }
        "vrf" | "vlan" | "vlan-aware-bundle" if set => {
            c.word("a name")?;
            c.end()?;
            let kind = match word {
                "vrf" => OtherKind::Vrf { nested: false },
                _ => OtherKind::Vlan,
            };
            Ok(enter_other(c, kind, start))
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}

/// Enter an unmodelled sub-mode of router bgp, warning once.
fn enter_other(c: &mut Cur, kind: OtherKind, start: usize) -> Apply {
    let text = statement(c);
    c.skip_rest();
    Box::new(move |ctx: &mut Ctx| {
        let msg = format!("'{text}' inside router bgp is not modelled by fabsim; ignored, with its block");
        ctx.warn(start, msg);
        ctx.mode = Mode::BgpOther(kind);
    })
}

/// A line in an unmodelled sub-mode: absorbed if it belongs there (by that mode's grammar),
/// `exit` leaves one level; otherwise an error, and the caller tries router bgp, then global.
pub(super) fn parse_other(c: &mut Cur, kind: OtherKind) -> Result<Apply, Reject> {
    let first = c.peek().map_or("", |t| t.text);
    if matches!(keyword(first, &["exit", "exit-address-family"]), Match::One(_)) && c.toks.len() == 1 {
        let next = match kind {
            OtherKind::Vrf { nested: true } => Mode::BgpOther(OtherKind::Vrf { nested: false }),
            _ => Mode::Bgp,
        };
        return Ok(Box::new(move |ctx: &mut Ctx| ctx.mode = next));
    }
    match kind {
        OtherKind::Af => parse_bgp(c, Level::Af).map(|_| nothing()),
        OtherKind::Rejected => parse_bgp(c, Level::Router).map(|_| nothing()),
        OtherKind::Vrf { .. } => {
            let opens_af = matches!(keyword(first, BGP_WORDS), Match::One("address-family"));
            // Parsed for validity only: the block is not modelled.
            let _ignored: Apply = parse_bgp(c, Level::Router).or_else(|e| {
                c.pos = 0;
                parse_bgp(c, Level::Af).map_err(|_| e)
            })?;
            if !opens_af {
                return Ok(nothing());
            }
            Ok(Box::new(|ctx: &mut Ctx| {
                ctx.mode = Mode::BgpOther(OtherKind::Vrf { nested: true })
            }))
        }
        OtherKind::Vlan => {
            c.keyword(VLAN_BLOCK_WORDS, "a vlan command")?;
            c.skip_rest();
            Ok(nothing())
        }
    }
}

fn address_family(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let af = c.keyword(ADDRESS_FAMILIES, "an address family (e.g. ipv4)")?;
    let unicast = af == "ipv4" && (c.at_end() || c.opt_keyword(&["unicast"]).is_some());
    if !unicast || neg != Neg::Set {
        if neg != Neg::Set {
            return Ok(skip_unmodelled(c, start));
        }
        return Ok(enter_other(c, OtherKind::Af, start));
    }
    c.end()?;
    Ok(Box::new(|ctx: &mut Ctx| ctx.mode = Mode::BgpAf))
}

fn network(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let net = match c.peek() {
        // IPv6 prefixes: fabsim models IPv4 only.
        Some(t) if t.text.contains(':') => return Ok(skip_unmodelled(c, start)),
        Some(t) if t.text.contains('/') => prefix(c, MaskForm::Netmask)?,
        _ => {
            let addr = c.ipv4("a prefix (A.B.C.D/L or A.B.C.D mask MASK)")?;
            c.keyword(&["mask"], "mask")?;
            prefix_with_mask(c, addr)?
        }
    }
    .trunc();
    let route_map = route_map_option(c, set)?;
    Ok(Box::new(move |ctx: &mut Ctx| {
        warn_route_map(ctx, route_map);
        bgp_apply(
            move |b, _| {
                b.networks.retain(|n| *n != net);
                if set {
                    b.networks.push(net);
                }
            },
            start,
        )(ctx)
    }))
}

/// `A.B.C.D mask M`: the mask after `mask`.
fn prefix_with_mask(c: &mut Cur, addr: Ipv4Addr) -> Result<ipnet::Ipv4Net, Reject> {
    const WHAT: &str = "a contiguous netmask (e.g. 255.255.255.0)";
    let col0 = c.here();
    let mask = u32::from(c.ipv4(WHAT)?);
    let len = mask.leading_ones();
    if mask.checked_shl(len).unwrap_or(0) != 0 {
        return Err(Reject {
            col0,
            msg: format!("expected {WHAT}"),
        });
    }
    ipnet::Ipv4Net::new(addr, len as u8).map_err(|_| c.expected(WHAT))
}

/// Trailing `route-map NAME` (set form only); then the line must end.
fn route_map_option(c: &mut Cur, set: bool) -> Result<Option<(usize, String)>, Reject> {
    if !set {
        c.skip_rest();
        return Ok(None);
    }
    let rm = match c.opt_keyword(&["route-map"]) {
        Some(_) => Some((c.here(), c.word("a route-map name")?.text.to_string())),
        None => None,
    };
    c.end()?;
    Ok(rm)
}

fn warn_route_map(ctx: &mut Ctx, route_map: Option<(usize, String)>) {
    if let Some((col0, name)) = route_map {
        ctx.warn(
            col0,
            format!("route-map '{name}' is not modelled by fabsim; applying without it"),
        );
    }
}

fn redistribute(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let source = match c.keyword(BGP_REDIST_SOURCES, "connected, static or ospf")? {
        "connected" => BgpRedistSource::Connected,
        "static" => BgpRedistSource::Static,
        "ospf" => BgpRedistSource::Ospf,
        _ => return Ok(skip_unmodelled(c, start)),
    };
    let mut unmodelled = None;
    if source == BgpRedistSource::Ospf && set && c.opt_keyword(&["match"]).is_some() {
        unmodelled = Some(c.here());
        c.keyword(
            &["external", "internal", "nssa-external"],
            "internal, external or nssa-external",
        )?;
        c.skip_if(|w| w == "1" || w == "2");
    }
    let route_map = route_map_option(c, set)?;
    let text = statement(c);
    Ok(Box::new(move |ctx: &mut Ctx| {
        warn_route_map(ctx, route_map);
        if let Some(col0) = unmodelled {
            ctx.warn(
                col0,
                format!("'{text}': 'match' is not modelled by fabsim; redistributing all OSPF routes"),
            );
        }
        bgp_apply(
            move |b, span| {
                b.redistribute.retain(|r| r.source != source);
                if set {
                    b.redistribute.push(BgpRedistribute { source, span });
                }
            },
            start,
        )(ctx)
    }))
}

fn maximum_paths(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let (paths, ecmp) = if set {
        let n = c.number::<u32>("a path count (1-1024)", 1, 1024)?;
        let m = match c.opt_keyword(&["ecmp"]) {
            Some(_) => Some(c.number::<u32>("an ECMP group size (1-1024)", 1, 1024)?),
            None => None,
        };
        (Some(n), m)
    } else {
        c.skip_rest();
        (None, None)
    };
    c.end()?;
    Ok(bgp_apply(move |b, _| (b.max_paths, b.max_ecmp) = (paths, ecmp), start))
}

/// `distance bgp EXTERNAL [INTERNAL LOCAL]`; the ones not given keep the EOS default 200.
fn distance(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    c.keyword(&["bgp"], "bgp")?;
    let d = if set {
        const WHAT: &str = "a distance (1-255)";
        let e = c.number::<u8>(WHAT, 1, 255)?;
        let (i, l) = if c.at_end() {
            (200, 200)
        } else {
            (c.number::<u8>(WHAT, 1, 255)?, c.number::<u8>(WHAT, 1, 255)?)
        };
        Some((e, i, l))
    } else {
        c.skip_rest();
        None
    };
    c.end()?;
    Ok(bgp_apply(move |b, _| b.distance = d, start))
}

/// `KEEPALIVE HOLD` (keepalive 0-3600, hold 0 or 3-7200), or None for `no`/`default` forms.
fn timers(c: &mut Cur, set: bool) -> Result<Option<(u32, u32)>, Reject> {
    if !set {
        c.skip_if(is_number);
        c.skip_if(is_number);
        c.end()?;
        return Ok(None);
    }
    let keepalive = c.number::<u32>("a keepalive time (0-3600)", 0, 3600)?;
    const HOLD: &str = "a hold time (0 or 3-7200)";
    let col0 = c.here();
    let hold = c.number::<u32>(HOLD, 0, 7200)?;
    if hold != 0 && hold < 3 {
        return Err(Reject {
            col0,
            msg: format!("expected {HOLD}, found '{hold}'"),
        });
    }
    c.end()?;
    Ok(Some((keepalive, hold)))
}

fn graceful_restart(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let mut timing = None;
    while set && !c.at_end() {
        timing.get_or_insert(c.here());
        c.keyword(&["restart-time", "stalepath-time"], "restart-time or stalepath-time")?;
        c.number::<u32>("a time in seconds (1-3600)", 1, 3600)?;
    }
    if !set {
        c.skip_rest();
    }
    let text = statement(c);
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some(col0) = timing {
            ctx.warn(
                col0,
                format!("'{text}': graceful-restart timers are not modelled by fabsim; ignored"),
            );
        }
        bgp_apply(move |b, _| b.graceful_restart = set, start)(ctx)
    }))
}

/// `bgp …` options.
fn bgp_option(c: &mut Cur, neg: Neg, level: Level, start: usize) -> Result<Apply, Reject> {
    let set = neg == Neg::Set;
    let words = match level {
        Level::Router => BGP_BGP_WORDS,
        Level::Af => BGP_AF_BGP_WORDS,
    };
    match c.keyword(words, "a bgp option")? {
        "additional-paths" => {
            let dir = c.keyword(&["install", "receive", "send"], "receive or send")?;
            let dir_send = match dir {
                "receive" => false,
                "send" if set => {
                    if c.keyword(&["any", "backup", "ecmp", "limit"], "any")? != "any" {
                        return Ok(skip_unmodelled(c, start));
                    }
                    true
                }
                "send" => {
                    c.skip_rest();
                    true
                }
                _ => return Ok(skip_unmodelled(c, start)),
            };
            c.end()?;
            // `default bgp additional-paths …` restores the EOS default: receive on, send off.
            let on = match neg {
                Neg::Set => true,
                Neg::No => false,
                Neg::Default => !dir_send,
            };
            Ok(bgp_apply(
                move |b, _| match dir_send {
                    true => b.addpath_send = on,
                    false => b.addpath_receive = on,
                },
                start,
            ))
        }
        "advertise-inactive" => {
            c.end()?;
            Ok(bgp_apply(move |b, _| b.advertise_inactive = set, start))
        }
        "bestpath" => {
            if c.opt_keyword(&["as-path"]).is_some() && c.opt_keyword(&["multipath-relax"]).is_some() {
                c.end()?;
                // `default` restores the EOS default (on).
                return Ok(bgp_apply(move |b, _| b.multipath_relax = neg != Neg::No, start));
            }
            Ok(skip_unmodelled(c, start))
        }
        "default" => match c.keyword(&["ipv4-unicast", "ipv6-unicast"], "ipv4-unicast")? {
            "ipv4-unicast" => {
                c.end()?;
                Ok(bgp_apply(move |b, _| b.default_ipv4_unicast = neg != Neg::No, start))
            }
            _ => Ok(skip_unmodelled(c, start)),
        },
        w if ignored_by_design(KeywordContext::BgpOption, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}

// ---------------------------------------------------------------------------------------------
// `neighbor …`

/// Who a `neighbor` line is about.
#[derive(Clone, Debug)]
enum NbrId {
    V4(Ipv4Addr),
    V6,
    Group(String),
}

/// What a `neighbor` line does.
#[derive(Clone, Debug)]
enum NbrCmd {
    /// `no neighbor A`.
    Remove,
    RemoteAs(Option<u32>),
    UpdateSource(Option<String>),
    Multihop(Option<u8>),
    NextHopSelf(bool),
    RrClient(bool),
    Shutdown(bool),
    Passive(bool),
    Description(Option<String>),
    Activate(Option<bool>),
    Timers(Option<(u32, u32)>),
    AddPathRx(Option<bool>),
    AddPathTx(Option<bool>),
    GracefulRestart(bool),
    /// `neighbor A peer group NAME` / `peer-group NAME`.
    Member(Option<String>),
    /// `neighbor NAME peer group` / `peer-group`.
    DefineGroup,
    Unmodelled,
}

fn neighbor_id(c: &mut Cur) -> Result<NbrId, Reject> {
    const WHAT: &str = "a neighbor address or peer group name";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    let id = if let Ok(a) = t.text.parse::<Ipv4Addr>() {
        NbrId::V4(a)
    } else if t.text.contains(':') {
        NbrId::V6
    } else if t.text.starts_with(|ch: char| ch.is_ascii_digit()) {
        return Err(c.expected(WHAT));
    } else {
        NbrId::Group(t.text.to_string())
    };
    c.pos += 1;
    Ok(id)
}

fn neighbor(c: &mut Cur, neg: Neg, level: Level, start: usize) -> Result<Apply, Reject> {
    let id = neighbor_id(c)?;
    let set = neg == Neg::Set;
    // Tri-state overrides: `no` = off, `default` = inherit.
    let tri = match neg {
        Neg::Set => Some(true),
        Neg::No => Some(false),
        Neg::Default => None,
    };
    if !set && c.at_end() && level == Level::Router {
        return Ok(neighbor_apply(id, NbrCmd::Remove, start, statement(c)));
    }
    let words = match level {
        Level::Router => NEIGHBOR_WORDS,
        Level::Af => AF_NEIGHBOR_WORDS,
    };
    let cmd = match c.keyword(words, "a neighbor option")? {
        "remote-as" => {
            let n = if set { Some(asn(c)?) } else { None };
            negated_value(c, set, is_asn)?;
            NbrCmd::RemoteAs(n)
        }
        "update-source" => {
            let name = if set { Some(interface_name(c)?) } else { None };
            if !set {
                c.skip_rest();
            }
            c.end()?;
            NbrCmd::UpdateSource(name)
        }
        "ebgp-multihop" => {
            let ttl = match (set, c.at_end()) {
                (true, true) => Some(DEFAULT_MULTIHOP_TTL),
                (true, false) => Some(c.number::<u8>("a TTL (1-255)", 1, 255)?),
                (false, _) => None,
            };
            negated_value(c, set, is_number)?;
            NbrCmd::Multihop(ttl)
        }
        w @ ("next-hop-self" | "route-reflector-client" | "shutdown" | "passive" | "graceful-restart") => {
            if w == "shutdown" && set {
                // `shutdown reason TEXT` (EOS 4.22+): the reason is free text.
                if c.opt_keyword(&["reason"]).is_some() {
                    c.word("a reason")?;
                    c.skip_rest();
                }
            }
            c.end()?;
            match w {
                "next-hop-self" => NbrCmd::NextHopSelf(set),
                "route-reflector-client" => NbrCmd::RrClient(set),
                "shutdown" => NbrCmd::Shutdown(set),
                "passive" => NbrCmd::Passive(set),
                _ => NbrCmd::GracefulRestart(set),
            }
        }
        "description" => {
            let text = if set {
                c.word("a description")?;
                c.pos -= 1;
                let words: Vec<&str> = c.toks[c.pos..].iter().map(|t| t.text).collect();
                Some(words.join(" "))
            } else {
                None
            };
            c.skip_rest();
            NbrCmd::Description(text)
        }
        "activate" => {
            c.end()?;
            NbrCmd::Activate(tri)
        }
        "timers" => NbrCmd::Timers(timers(c, set)?),
        "additional-paths" => match c.keyword(&["receive", "send"], "receive or send")? {
            "receive" => {
                c.end()?;
                NbrCmd::AddPathRx(tri)
            }
            _ if set => match c.keyword(&["any", "backup", "ecmp", "limit"], "any")? {
                "any" => {
                    c.end()?;
                    NbrCmd::AddPathTx(tri)
                }
                _ => {
                    c.skip_rest();
                    NbrCmd::Unmodelled
                }
            },
            _ => {
                c.skip_if(|w| w.eq_ignore_ascii_case("any"));
                c.end()?;
                NbrCmd::AddPathTx(tri)
            }
        },
        w @ ("peer" | "peer-group") => {
            if w == "peer" {
                c.keyword(&["group"], "group")?;
            }
            match (&id, c.at_end()) {
                (NbrId::Group(_), true) => NbrCmd::DefineGroup,
                _ => {
                    let name = if set {
                        Some(c.word("a peer group name")?.text.to_string())
                    } else {
                        c.skip_rest();
                        None
                    };
                    c.end()?;
                    NbrCmd::Member(name)
                }
            }
        }
        _ => {
            c.skip_rest();
            NbrCmd::Unmodelled
        }
    };
    Ok(neighbor_apply(id, cmd, start, statement(c)))
}

fn neighbor_apply(id: NbrId, cmd: NbrCmd, start: usize, text: String) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        let addr = match (&id, &cmd) {
            (NbrId::V4(a), _) => *a,
            (NbrId::V6, _) => return ctx.not_modelled(start, &text),
            (NbrId::Group(_), NbrCmd::DefineGroup) => {
                return ctx.warn(
                    start,
                    format!("'{text}': peer groups are not modelled by fabsim; ignored"),
                )
            }
            (NbrId::Group(g), _) => {
                let msg = format!(
                    "'{text}': peer group '{g}' is not modelled by fabsim; its members do not inherit this; ignored"
                );
                return ctx.warn(start, msg);
            }
        };
        match &cmd {
            NbrCmd::Unmodelled => ctx.not_modelled(start, &text),
            NbrCmd::Member(Some(g)) => {
                let msg = format!(
                    "'{text}': peer group '{g}' is not modelled by fabsim; {addr} inherits none of its settings"
                );
                ctx.warn(start, msg)
            }
            _ => {}
        }
        bgp_apply(move |b, span| edit_neighbor(b, addr, cmd, span), start)(ctx)
    })
}

fn edit_neighbor(b: &mut BgpConfig, addr: Ipv4Addr, cmd: NbrCmd, span: Span) {
    if matches!(cmd, NbrCmd::Remove) {
        b.neighbors.retain(|n| n.address != addr);
        return;
    }
    let idx = match b.neighbors.iter().position(|n| n.address == addr) {
        Some(i) => i,
        None => {
            b.neighbors.push(eos_neighbor(addr, span));
            b.neighbors.len() - 1
        }
    };
    let n = &mut b.neighbors[idx];
    match cmd {
        NbrCmd::RemoteAs(asn) => n.remote_as = asn,
        NbrCmd::UpdateSource(name) => n.update_source = name,
        NbrCmd::Multihop(ttl) => n.multihop = ttl,
        NbrCmd::NextHopSelf(on) => n.next_hop_self = NextHopSelf::every_path_if(on),
        NbrCmd::RrClient(on) => n.route_reflector_client = on,
        NbrCmd::Shutdown(on) => n.shutdown = on,
        NbrCmd::Passive(on) => n.passive = on,
        NbrCmd::Description(text) => n.description = text,
        NbrCmd::Activate(on) => n.overrides.activate = on,
        NbrCmd::Timers(t) => (n.timers.keepalive, n.timers.hold) = (t.map(|t| t.0), t.map(|t| t.1)),
        NbrCmd::AddPathRx(on) => n.overrides.add_path_rx = on,
        NbrCmd::AddPathTx(on) => n.overrides.add_path_tx = on,
        NbrCmd::GracefulRestart(on) => n.graceful_restart = on,
        NbrCmd::Remove | NbrCmd::Member(_) | NbrCmd::DefineGroup | NbrCmd::Unmodelled => {}
    }
}
