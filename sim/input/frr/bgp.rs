//! bgpd: `router bgp ASN` and its `address-family ipv4 unicast` → `BgpConfig` (flavour FRR).
//!
//! Neighbour settings are recorded as they come, per neighbour address or peer-group name, and
//! the neighbours are built when the file ends: FRR's defaults, then the peer-group's settings,
//! then the neighbour's own (a member's own setting wins over its group's, wherever it is
//! written). AF-level neighbour commands are also accepted at router level, as bgpd does for
//! IPv4 unicast.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::{Bad, Ctx, Handled, Line};
use crate::diag::Span;
use crate::model::bgp::{BgpRedistSource, BgpRedistribute, BgpTimers, NextHopSelf, Policy};
use crate::model::policy::RoutePolicies;
use crate::model::{BgpConfig, BgpFlavor, BgpNeighbor};

/// `maximum-paths` when the configuration does not say: FRR's compile-time `MULTIPATH_NUM`,
/// 64 in FRR's own container image (the one containerlab labs run; Debian's packages build 256):
/// bgp-profiles.md §2. Build-dependent, so a setting.
pub const FRR_DEFAULT_MAXIMUM_PATHS: u32 = 64;

/// `frr defaults datacenter` BGP timers (keepalive, hold): bgpd/bgp_vty.c `FRR_CFG_DEFAULT_*`.
const DATACENTER_TIMERS: (u32, u32) = (3, 9);

/// One neighbour setting, as written.
#[derive(Clone, Debug)]
enum Setting {
    RemoteAs(u32),
    RemoteInternal,
    RemoteExternal,
    UpdateSource(String),
    Multihop(u8),
    NextHopSelf(NextHopSelf),
    RouteReflectorClient,
    Shutdown(bool),
    Timers(u32, u32),
    ConnectRetry(u32),
    Activate(bool),
    AddPathTxAll,
    RouteMapIn(String),
    RouteMapOut(String),
    Description(String),
}

pub(super) struct Builder {
    cfg: BgpConfig,
    /// Neighbour addresses in the order they first appear.
    neighbors: Vec<(Ipv4Addr, Span)>,
    groups: BTreeMap<String, Span>,
    member_of: BTreeMap<Ipv4Addr, String>,
    /// Settings per neighbour address or group name, in file order.
    settings: BTreeMap<String, Vec<Setting>>,
}

/// `router bgp ASN [vrf NAME]`: Ok(true) enters router-bgp mode, Ok(false) skips a VRF block.
pub(super) fn start(ctx: &mut Ctx, l: &Line) -> Result<bool, Bad> {
    let asn = l.number(2, "an AS number 1-4294967295")?;
    if l.word(3).is_some_and(|w| w == "vrf" || w == "view") {
        ctx.not_modelled(l, "BGP in a VRF or view is not modelled; the block is skipped");
        return Ok(false);
    }
    l.end(3)?;
    match &ctx.bgp {
        Some(b) if b.cfg.asn != asn => Err(Bad {
            col0: l.col(2),
            msg: format!("% BGP is already running; AS is {}", b.cfg.asn),
        }),
        Some(_) => Ok(true),
        None => {
            ctx.bgp = Some(Builder {
                cfg: BgpConfig::new(BgpFlavor::Frr, asn, ctx.span(l.col(0))),
                neighbors: Vec::new(),
                groups: BTreeMap::new(),
                member_of: BTreeMap::new(),
                settings: BTreeMap::new(),
            });
            Ok(true)
        }
    }
}

fn builder<'a>(ctx: &'a mut Ctx) -> &'a mut Builder {
    ctx.bgp.as_mut().expect("router bgp mode has a speaker")
}

/// Router-level commands (and, as bgpd accepts them there, IPv4 unicast ones).
pub(super) fn router_line(ctx: &mut Ctx, l: &Line) -> Handled {
    let w = |i| l.word(i).unwrap_or_default();
    let joined = format!("{} {}", w(0), w(1));
    if super::ignored::by_design(super::ignored::Context::RouterBgp, &joined) {
        return Some(Ok(()));
    }
    let r = match (w(0), w(1), w(2)) {
        ("bgp", "router-id", _) => l.address(2).and_then(|a| {
            builder(ctx).cfg.router_id = Some(a);
            l.end(3)
        }),
        ("bgp", "ebgp-requires-policy", _) | ("no", "bgp", "ebgp-requires-policy") => {
            let on = w(0) == "bgp";
            builder(ctx).cfg.ebgp_requires_policy = on;
            l.end(if on { 2 } else { 3 })
        }
        ("bgp", "default", "ipv4-unicast") | ("no", "bgp", "default") if w(0) == "bgp" || w(3) == "ipv4-unicast" => {
            let on = w(0) == "bgp";
            builder(ctx).cfg.default_ipv4_unicast = on;
            l.end(if on { 3 } else { 4 })
        }
        ("bgp", "bestpath", "as-path") if w(3) == "multipath-relax" => {
            builder(ctx).cfg.multipath_relax = true;
            l.end(4)
        }
        ("timers", "bgp", _) => l.number(2, "a keepalive time in seconds").and_then(|ka| {
            let hold = l.number(3, "a hold time in seconds")?;
            let t = &mut builder(ctx).cfg.timers;
            (t.keepalive, t.hold) = (Some(ka), Some(hold));
            l.end(4)
        }),
        ("neighbor", _, _) => neighbor(ctx, l, 0),
        ("no", "neighbor", _) => neighbor(ctx, l, 1),
        ("address-family", "ipv4", _) if matches!(w(2), "" | "unicast") => {
            ctx.mode = super::Mode::BgpAf;
            l.end(if w(2).is_empty() { 2 } else { 3 })
        }
        ("address-family", _, _) => {
            ctx.not_modelled(
                l,
                "only the IPv4 unicast address family is modelled; its lines are skipped",
            );
            ctx.mode = super::Mode::BgpAfOther;
            Ok(())
        }
        ("bgp" | "no" | "coalesce-time" | "update-delay" | "write-quanta" | "read-quanta", _, _) => {
            ctx.not_modelled(l, "not a BGP setting fabsim models");
            Ok(())
        }
        _ => return af_line(ctx, l),
    };
    Some(r)
}

/// `address-family ipv4 unicast` commands.
pub(super) fn af_line(ctx: &mut Ctx, l: &Line) -> Handled {
    let w = |i| l.word(i).unwrap_or_default();
    let r = match (w(0), w(1)) {
        ("network", _) => l.prefix(1).map(|p| {
            if l.word(2).is_some() {
                ctx.not_modelled(l, "`network … route-map|label-index|backdoor` options are not modelled");
            } else {
                builder(ctx).cfg.networks.push(p.trunc());
            }
        }),
        ("redistribute", _) => redistribute(ctx, l),
        ("maximum-paths", "ibgp") => {
            ctx.not_modelled(l, "fabsim has one maximum-paths for eBGP and iBGP (`maximum-paths N`)");
            Ok(())
        }
        ("maximum-paths", _) => l.number(1, "a number of paths 1-256").and_then(|n| {
            builder(ctx).cfg.max_paths = Some(n);
            l.end(2)
        }),
        ("distance", "bgp") => distance(ctx, l),
        ("neighbor", _) => neighbor(ctx, l, 0),
        ("no", "neighbor") => neighbor(ctx, l, 1),
        ("aggregate-address" | "table-map" | "bgp" | "import" | "export" | "label" | "rd" | "rt" | "distance", _) => {
            ctx.not_modelled(l, "not an address-family setting fabsim models");
            Ok(())
        }
        _ => return None,
    };
    Some(r)
}

fn redistribute(ctx: &mut Ctx, l: &Line) -> Result<(), Bad> {
    let source = match l.word(1) {
        Some("connected") => BgpRedistSource::Connected,
        Some("static") => BgpRedistSource::Static,
        Some("ospf") => BgpRedistSource::Ospf,
        Some("kernel" | "rip" | "isis" | "table" | "babel" | "eigrp" | "openfabric" | "sharp" | "vnc") => {
            ctx.not_modelled(
                l,
                "only connected, static and ospf are redistributed into BGP by fabsim",
            );
            return Ok(());
        }
        _ => return Err(l.bad(1, "a route source (connected, static, ospf, …)")),
    };
    if l.word(2).is_some() {
        ctx.not_modelled(l, "`redistribute … route-map|metric` options are not modelled");
        return Ok(());
    }
    let span = ctx.span(l.col(0));
    builder(ctx).cfg.redistribute.push(BgpRedistribute { source, span });
    Ok(())
}

/// `distance bgp EXTERNAL INTERNAL LOCAL`.
fn distance(ctx: &mut Ctx, l: &Line) -> Result<(), Bad> {
    let mut d = [0u8; 3];
    for (k, slot) in d.iter_mut().enumerate() {
        let n = l.number(2 + k, "a distance 1-255")?;
        *slot = u8::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| l.bad(2 + k, "a distance 1-255"))?;
    }
    l.end(5)?;
    builder(ctx).cfg.distance = Some((d[0], d[1], d[2]));
    Ok(())
}

/// `[no] neighbor ADDR|GROUP …` (`no` only for `activate` and `shutdown`); `at` = 1 after `no`.
fn neighbor(ctx: &mut Ctx, l: &Line, at: usize) -> Result<(), Bad> {
    let no = at == 1;
    let who = l
        .word(at + 1)
        .ok_or_else(|| l.bad(at + 1, "a neighbour address or peer-group name"))?;
    let addr = who.parse::<Ipv4Addr>().ok();
    let word = l.word(at + 2).unwrap_or_default();
    let arg = at + 3;
    if !no && word == "interface" {
        ctx.not_modelled(l, "BGP unnumbered (IPv6 link-local sessions) is not modelled");
        return Ok(());
    }
    if !no && word == "peer-group" && addr.is_none() {
        l.end(arg)?;
        let span = ctx.span(l.col(0));
        builder(ctx).groups.entry(who.to_string()).or_insert(span);
        return Ok(());
    }
    if addr.is_none() && !builder(ctx).groups.contains_key(who) {
        return Err(Bad {
            col0: l.col(at + 1),
            msg: format!("% Create the peer-group or interface first: `{who}` is not an IPv4 address or a peer-group defined above"),
        });
    }
    if super::ignored::by_design(super::ignored::Context::Neighbor, word) {
        return Ok(());
    }
    let setting = match (no, word) {
        (false, "remote-as") => match l.word(arg) {
            Some("internal") => Setting::RemoteInternal,
            Some("external") => Setting::RemoteExternal,
            _ => Setting::RemoteAs(l.number(arg, "an AS number, `internal` or `external`")?),
        },
        (false, "peer-group") => {
            let group = l.word(arg).ok_or_else(|| l.bad(arg, "a peer-group name"))?;
            let Some(addr) = addr else {
                return Err(l.bad(at + 1, "a neighbour address"));
            };
            if !builder(ctx).groups.contains_key(group) {
                return Err(Bad {
                    col0: l.col(arg),
                    msg: format!("% Configure the peer-group first: `{group}` is not defined above"),
                });
            }
            l.end(arg + 1)?;
            let span = ctx.span(l.col(0));
            let b = builder(ctx);
            b.member_of.insert(addr, group.to_string());
            note_neighbor(b, addr, span);
            return Ok(());
        }
        (false, "update-source") => Setting::UpdateSource(
            l.word(arg)
                .ok_or_else(|| l.bad(arg, "an interface or address"))?
                .to_string(),
        ),
        (false, "ebgp-multihop") => {
            let ttl = match l.word(arg) {
                None => 255,
                Some(_) => u8::try_from(l.number(arg, "a TTL 1-255")?).map_err(|_| l.bad(arg, "a TTL 1-255"))?,
            };
            Setting::Multihop(ttl)
        }
        (false, "next-hop-self") if l.word(arg) == Some("force") => Setting::NextHopSelf(NextHopSelf::All),
        (false, "next-hop-self") => Setting::NextHopSelf(NextHopSelf::NotReflected),
        (false, "route-reflector-client") => Setting::RouteReflectorClient,
        (_, "shutdown") => Setting::Shutdown(!no),
        (_, "activate") => Setting::Activate(!no),
        (false, "addpath-tx-all-paths") => Setting::AddPathTxAll,
        (false, "timers") if l.word(arg) == Some("connect") => {
            Setting::ConnectRetry(l.number(arg + 1, "a connect retry time in seconds")?)
        }
        (false, "timers") => {
            let ka = l.number(arg, "a keepalive time in seconds")?;
            Setting::Timers(ka, l.number(arg + 1, "a hold time in seconds")?)
        }
        (false, "route-map") => {
            let name = l.word(arg).ok_or_else(|| l.bad(arg, "a route-map name"))?.to_string();
            match l.word(arg + 1) {
                Some("in") => Setting::RouteMapIn(name),
                Some("out") => Setting::RouteMapOut(name),
                _ => return Err(l.bad(arg + 1, "`in` or `out`")),
            }
        }
        (false, "description") => Setting::Description(l.rest(arg)),
        (false, "prefix-list" | "filter-list" | "distribute-list") => {
            ctx.not_modelled(
                l,
                "only route-maps are modelled as neighbour policy (with ebgp-requires-policy this neighbour now counts as having none)",
            );
            return Ok(());
        }
        (
            false,
            "password"
            | "bfd"
            | "capability"
            | "allowas-in"
            | "as-override"
            | "send-community"
            | "solo"
            | "ttl-security"
            | "local-as"
            | "passive"
            | "advertisement-interval"
            | "maximum-prefix"
            | "remove-private-AS"
            | "weight"
            | "default-originate"
            | "attribute-unchanged"
            | "disable-connected-check"
            | "enforce-first-as"
            | "graceful-restart"
            | "addpath-tx-bestpath-per-AS"
            | "unsuppress-map"
            | "port"
            | "strict-capability-match"
            | "dont-capability-negotiate"
            | "override-capability"
            | "sender-as-path-loop-detection"
            | "update-group"
            | "disable-addpath-rx"
            | "extended-optional-parameters",
        ) => {
            ctx.not_modelled(l, "not a neighbour setting fabsim models");
            return Ok(());
        }
        _ => {
            return Err(l.bad(
                at + 2,
                "a neighbour command (remote-as, peer-group, update-source, ebgp-multihop, next-hop-self, \
                 route-reflector-client, shutdown, timers, activate, addpath-tx-all-paths, route-map, …)",
            ))
        }
    };
    let known_end = match &setting {
        Setting::RemoteAs(_) | Setting::RemoteInternal | Setting::RemoteExternal | Setting::UpdateSource(_) => arg + 1,
        Setting::Multihop(_) => arg + usize::from(l.word(arg).is_some()),
        Setting::NextHopSelf(nhs) => arg + usize::from(*nhs == NextHopSelf::All),
        Setting::ConnectRetry(_) => arg + 2,
        Setting::Timers(..) | Setting::RouteMapIn(_) | Setting::RouteMapOut(_) => arg + 2,
        Setting::Description(_) => l.toks.len(),
        _ => arg,
    };
    l.end(known_end)?;
    let span = ctx.span(l.col(0));
    let b = builder(ctx);
    if let Some(a) = addr {
        note_neighbor(b, a, span);
    }
    b.settings.entry(who.to_string()).or_default().push(setting);
    Ok(())
}

fn note_neighbor(b: &mut Builder, addr: Ipv4Addr, span: Span) {
    if !b.neighbors.iter().any(|(a, _)| *a == addr) {
        b.neighbors.push((addr, span));
    }
}

fn apply(n: &mut BgpNeighbor, asn: u32, s: &Setting) {
    match s {
        Setting::RemoteAs(a) => (n.remote_as, n.remote_as_external) = (Some(*a), false),
        Setting::RemoteInternal => (n.remote_as, n.remote_as_external) = (Some(asn), false),
        Setting::RemoteExternal => (n.remote_as, n.remote_as_external) = (None, true),
        Setting::UpdateSource(src) => match src.parse::<Ipv4Addr>() {
            Ok(a) => n.source_address = Some(a),
            Err(_) => n.update_source = Some(src.clone()),
        },
        Setting::Multihop(ttl) => n.multihop = Some(*ttl),
        Setting::NextHopSelf(nhs) => n.next_hop_self = *nhs,
        Setting::RouteReflectorClient => n.route_reflector_client = true,
        Setting::Shutdown(on) => n.shutdown = *on,
        Setting::Timers(ka, hold) => (n.timers.keepalive, n.timers.hold) = (Some(*ka), Some(*hold)),
        Setting::ConnectRetry(s) => n.timers.connect_retry = Some(*s),
        Setting::Activate(on) => n.overrides.activate = Some(*on),
        Setting::AddPathTxAll => n.add_path_tx = true,
        Setting::RouteMapIn(name) => n.import = Policy::RouteMap(name.clone()),
        Setting::RouteMapOut(name) => n.export = Policy::RouteMap(name.clone()),
        Setting::Description(d) => n.description = Some(d.clone()),
    }
}

impl Builder {
    /// The speaker, once the whole file is read: neighbours with FRR's defaults, their group's
    /// settings, then their own; the device's route-maps and prefix-lists.
    pub(super) fn build(mut self, ctx: &mut Ctx, policies: RoutePolicies, datacenter: bool) -> BgpConfig {
        let asn = self.cfg.asn;
        if datacenter {
            self.cfg.ebgp_requires_policy = false;
            let (ka, hold) = DATACENTER_TIMERS;
            let t: &mut BgpTimers = &mut self.cfg.timers;
            t.keepalive.get_or_insert(ka);
            t.hold.get_or_insert(hold);
        }
        self.cfg.max_paths.get_or_insert(FRR_DEFAULT_MAXIMUM_PATHS);
        for (addr, span) in &self.neighbors {
            let mut n = BgpNeighbor::new(*addr, span.clone());
            // bgpd always advertises ADD-PATH receive (bgp-profiles.md §3).
            n.add_path_rx = true;
            let group = self.member_of.get(addr).and_then(|g| self.settings.get(g));
            let own = self.settings.get(&addr.to_string());
            for s in group.into_iter().chain(own).flatten() {
                apply(&mut n, asn, s);
            }
            n.activate = n.overrides.activate.unwrap_or(self.cfg.default_ipv4_unicast);
            if n.remote_as.is_none() && !n.remote_as_external {
                let d = crate::diag::Diagnostic::warning(
                    span.clone(),
                    format!("neighbor {addr} has no remote-as: bgpd does not create the session"),
                );
                ctx.warnings.push(d);
            }
            self.cfg.neighbors.push(n);
        }
        for name in policies_named(&self.cfg) {
            if !policies.route_maps.contains_key(&name) {
                let d = crate::diag::Diagnostic::warning(
                    self.cfg.span.clone(),
                    format!("route-map {name} is not defined: bgpd denies every route through it"),
                );
                ctx.warnings.push(d);
            }
        }
        self.cfg.policies = policies;
        self.cfg
    }
}

/// The route-maps the neighbours name, each once.
fn policies_named(cfg: &BgpConfig) -> std::collections::BTreeSet<String> {
    cfg.neighbors
        .iter()
        .flat_map(|n| [&n.import, &n.export])
        .filter_map(|p| match p {
            Policy::RouteMap(name) => Some(name.clone()),
            _ => None,
        })
        .collect()
}
