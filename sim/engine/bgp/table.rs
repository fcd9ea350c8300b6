//! A speaker's table: every path it holds per prefix (received, originated, and on BIRD the
//! routes of its other protocols), next hops resolved through the IGP tables, the best path per
//! flavour, and the routes handed to forwarding.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;

use super::decision::{self, Candidate, Step};
use super::session::SessionId;
use super::Bgp;
use crate::engine::bgp_state::{BgpOrigin, BgpState, EcmpRole, NhMetric, PathAttrs, TableDest, TableRoute};
use crate::engine::local_iface;
use crate::engine::state::{NextHop, Proto, Route, State};
use crate::model::bgp::{BgpRedistSource, BirdStaticDest, Value};
use crate::model::{BgpFlavor, DeviceId, DeviceKind, Network, ZEBRA_ROUTE_METRIC};

/// BIRD protocol preferences (`DEF_PREF_*`, nest/route.h).
const PREF_DIRECT: u32 = 240;
const PREF_STATIC: u32 = 200;
const PREF_BGP: u32 = 100;
const PREF_KERNEL: u32 = 10;
/// An IGP metric BIRD does not know (`(100/?)`) compares worse than any known one.
const METRIC_UNKNOWN: u32 = u32::MAX / 2;

/// Where a table entry came from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    /// Received on a session with this ADD-PATH path id.
    Peer(SessionId, u32),
    /// Originated here: BIRD's static/direct/kernel protocols, EOS `network` / `redistribute`.
    Local { protocol: String, dest: LocalDest },
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LocalDest {
    Blackhole,
    Unreachable,
    Hop(NextHop),
    Device(NextHop),
    /// EOS network/redistribute: forwarding is whatever the RIB already has.
    Rib,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub src_id: u32,
    pub origin: Origin,
    pub attrs: Arc<PathAttrs>,
    pub accepted: bool,
    pub preference: u32,
    pub arrival: u64,
    pub since: u64,
    // Decision results.
    pub valid: bool,
    pub dest: TableDest,
    pub nh_metric: Option<NhMetric>,
    pub igp_metric: u32,
    pub best: bool,
    pub ecmp: EcmpRole,
    pub decided_by: Option<Step>,
}

#[derive(Clone, Debug)]
pub(crate) struct Speaker {
    pub device: DeviceId,
    pub flavor: BgpFlavor,
    pub asn: u32,
    pub router_id: Ipv4Addr,
    pub sessions: Vec<SessionId>,
    pub table: BTreeMap<Ipv4Net, Vec<Entry>>,
    /// Entries in `table`, kept by every function that changes it: the engine's memory guard
    /// reads it every few hundred events, and summing the tables there was most of a large
    /// fabric's run time.
    pub paths: usize,
}

impl Speaker {
    pub(crate) fn new(device: DeviceId, flavor: BgpFlavor, asn: u32, router_id: Ipv4Addr) -> Self {
        Speaker {
            device,
            flavor,
            asn,
            router_id,
            sessions: Vec::new(),
            table: BTreeMap::new(),
            paths: 0,
        }
    }

    /// Forget everything learned over a session that went down.
    pub(crate) fn flush_session(&mut self, sid: SessionId) {
        for entries in self.table.values_mut() {
            entries.retain(|e| !matches!(e.origin, Origin::Peer(s, _) if s == sid));
        }
        self.table.retain(|_, v| !v.is_empty());
        self.count_paths();
    }

    fn count_paths(&mut self) {
        self.paths = self.table.values().map(Vec::len).sum();
    }

    pub(crate) fn table_view(&self, bgp: &Bgp) -> Vec<TableRoute> {
        let mut out = Vec::with_capacity(self.paths);
        for (prefix, entries) in &self.table {
            let mut order: Vec<&Entry> = entries.iter().collect();
            order.sort_by_key(|e| (!e.best, e.arrival));
            for e in order {
                let (protocol, from, path_id, ebgp) = match &e.origin {
                    Origin::Peer(s, id) => {
                        let sess = &bgp.sessions[s.idx()];
                        let name = sess.cfg.name.clone().unwrap_or_else(|| "bgp".into());
                        (name, Some(sess.neighbor), *id, !sess.internal)
                    }
                    Origin::Local { protocol, .. } => (protocol.clone(), None, 0, false),
                };
                out.push(TableRoute {
                    prefix: *prefix,
                    protocol,
                    from,
                    path_id,
                    attrs: Some(e.attrs.clone()),
                    dest: e.dest.clone(),
                    nh_metric: e.nh_metric,
                    preference: e.preference,
                    ebgp,
                    valid: e.valid && e.accepted,
                    best: e.best,
                    ecmp: e.ecmp,
                    since_ms: e.since,
                    decided_by: e.decided_by.map(Step::describe),
                });
            }
        }
        out
    }
}

/// An UPDATE for one prefix arrives on session `to`: drop paths that carry our own AS (the
/// receiver-side loop check; they are not counted), apply import policy, replace what this
/// session said about the prefix before.
pub(super) fn receive(
    bgp: &mut Bgp,
    net: &Network,
    now: u64,
    to: SessionId,
    gen: u32,
    prefix: Ipv4Net,
    paths: Vec<(u32, Arc<PathAttrs>)>,
) -> bool {
    let Some(s) = bgp.sessions.get(to.idx()) else {
        return false;
    };
    if s.gen != gen || s.state != BgpState::Established {
        return false;
    }
    let (dev, local_as, internal) = (s.device, s.local_as, s.internal);
    let import = s.cfg.import.clone();
    if let Some(p) = s.peer {
        bgp.sessions[p.idx()].msgs_sent += 1;
    }
    let device = net.device(dev);
    let kept: Vec<(u32, Arc<PathAttrs>, bool)> = paths
        .into_iter()
        .filter(|(_, a)| !a.as_path.contains(&local_as))
        .map(|(id, a)| {
            // LOCAL_PREF is not carried over eBGP; the receiver attaches its default (100),
            // which BIRD and EOS both display (seed-lab.md s3b `BGP.local_pref: 100`).
            let a = if internal || a.local_pref.is_some() {
                a
            } else {
                bgp.attrs.intern(PathAttrs {
                    local_pref: Some(100),
                    ..(*a).clone()
                })
            };
            let (a, ok) = super::export::import_policy(device, &import, internal, prefix, a, &format!("{to:?}"));
            (id, bgp.attrs.share(a), ok)
        })
        .collect();
    let kept = guard_paths(bgp, net, dev, to, prefix, kept);
    let s = &mut bgp.sessions[to.idx()];
    s.msgs_rcvd += 1;
    if kept.is_empty() {
        s.adj_in.remove(&prefix);
    } else {
        let accepted = kept.iter().filter(|k| k.2).count();
        s.adj_in.insert(prefix, (kept.len() as u32, accepted as u32));
    }
    let mut fresh = Vec::new();
    let mut changed = false;
    {
        let Some(sp) = bgp.speakers.get_mut(&dev) else {
            return false;
        };
        let entries = sp.table.entry(prefix).or_default();
        let before = entries.len();
        sp.paths -= before;
        entries.retain(|e| match &e.origin {
            Origin::Peer(x, id) if *x == to => kept.iter().any(|(k, _, _)| k == id),
            _ => true,
        });
        changed |= entries.len() != before;
        for (id, attrs, ok) in kept {
            match entries.iter_mut().find(|e| e.origin == Origin::Peer(to, id)) {
                // An identical re-announcement changes nothing (BIRD `rte_same`).
                Some(e) if e.attrs == attrs && e.accepted == ok => {}
                Some(e) => {
                    e.attrs = attrs;
                    e.accepted = ok;
                    e.since = now;
                    fresh.push((prefix, to, id));
                    changed = true;
                }
                None => {
                    // Exactly as many as held: a prefix usually has one path (a node) or one per
                    // spine (a leaf), and `push`'s minimum of four would be most of the table.
                    entries.reserve_exact(1);
                    entries.push(new_entry(0, Origin::Peer(to, id), attrs, ok, PREF_BGP, 0, now));
                    fresh.push((prefix, to, id));
                    changed = true;
                }
            }
        }
        sp.paths += entries.len();
        if entries.is_empty() {
            sp.table.remove(&prefix);
        }
    }
    for (p, sid, id) in fresh {
        let (src, t) = (bgp.new_src(), bgp.tick());
        if let Some(e) = bgp
            .speakers
            .get_mut(&dev)
            .and_then(|sp| sp.table.get_mut(&p))
            .and_then(|v| v.iter_mut().find(|e| e.origin == Origin::Peer(sid, id)))
        {
            if e.src_id == 0 {
                e.src_id = src;
            }
            e.arrival = t;
        }
    }
    changed
}

/// The path-explosion guard: keep at most `path_limit` paths per prefix on a speaker and say
/// so once, naming the prefix and the cause.
fn guard_paths(
    bgp: &mut Bgp,
    net: &Network,
    dev: DeviceId,
    from: SessionId,
    prefix: Ipv4Net,
    mut kept: Vec<(u32, Arc<PathAttrs>, bool)>,
) -> Vec<(u32, Arc<PathAttrs>, bool)> {
    let others = bgp
        .speakers
        .get(&dev)
        .and_then(|sp| sp.table.get(&prefix))
        .map_or(0, |v| {
            v.iter()
                .filter(|e| !matches!(e.origin, Origin::Peer(s, _) if s == from))
                .count()
        });
    let room = bgp.path_limit.saturating_sub(others);
    if kept.len() <= room {
        return kept;
    }
    let total = others + kept.len();
    kept.truncate(room);
    let name = &net.device(dev).name;
    let msg = format!(
        "path explosion: {name} would hold {total}+ paths for {prefix} (limit {}); cause: ADD-PATH \
         peers re-advertise every path they hold, so through a full mesh of eBGP speakers every \
         loop-free AS path reaches every node (their number grows factorially with the mesh)",
        bgp.path_limit
    );
    if !bgp
        .findings
        .iter()
        .any(|f| f.starts_with(&format!("path explosion: {name} ")) && f.contains(&format!(" {prefix} ")))
    {
        bgp.findings.push(msg);
    }
    kept
}

fn new_entry(
    src_id: u32,
    origin: Origin,
    attrs: Arc<PathAttrs>,
    accepted: bool,
    preference: u32,
    arrival: u64,
    now: u64,
) -> Entry {
    Entry {
        src_id,
        origin,
        attrs,
        accepted,
        preference,
        arrival,
        since: now,
        valid: false,
        dest: TableDest::Unreachable,
        nh_metric: None,
        igp_metric: 0,
        best: false,
        ecmp: EcmpRole::None,
        decided_by: None,
    }
}

/// What a speaker originates from the device's own tables: EOS `network` and `redistribute`;
/// BIRD's static routes, direct routes of the listed interfaces, and kernel routes it learns.
fn local_routes(net: &Network, st: &State, dev: DeviceId) -> Vec<(Ipv4Net, String, LocalDest, u32, BgpOrigin)> {
    let d = net.device(dev);
    let fib = &st.devices[dev.idx()].fib;
    let mut out = Vec::new();
    if let Some(b) = &d.bird {
        for sr in &b.statics {
            let dest = match sr.dest {
                BirdStaticDest::Blackhole => LocalDest::Blackhole,
                BirdStaticDest::Unreachable => LocalDest::Unreachable,
                BirdStaticDest::Via(gw) => match fib.lookup(gw).filter(|r| r.proto == Proto::Connected) {
                    Some(r) => LocalDest::Hop(NextHop {
                        via: Some(gw),
                        iface: r.nexthops[0].iface,
                    }),
                    None => continue,
                },
            };
            out.push((
                sr.prefix.trunc(),
                "static1".to_string(),
                dest,
                PREF_STATIC,
                BgpOrigin::Igp,
            ));
        }
        if let Some(patterns) = &b.direct {
            for r in fib.iter().filter(|r| r.proto == Proto::Connected) {
                let Some(nh) = r.nexthops.first() else { continue };
                if iface_selected(patterns, &net.iface(nh.iface).name) {
                    out.push((
                        r.prefix,
                        "direct1".into(),
                        LocalDest::Device(nh.clone()),
                        PREF_DIRECT,
                        BgpOrigin::Igp,
                    ));
                }
            }
        }
        if b.kernel.as_ref().is_some_and(|k| k.learn) {
            // `learn` imports alien routes; BIRD skips the kernel's own device routes
            // (`proto kernel`) and its own (`proto bird`).
            for r in fib
                .iter()
                .filter(|r| !matches!(r.proto, Proto::Connected | Proto::Bird))
            {
                let dest = if r.blackhole {
                    LocalDest::Blackhole
                } else if let Some(nh) = r.nexthops.first() {
                    if nh.via.is_some() {
                        LocalDest::Hop(nh.clone())
                    } else {
                        LocalDest::Device(nh.clone())
                    }
                } else {
                    continue;
                };
                out.push((r.prefix, "kernel1".into(), dest, PREF_KERNEL, BgpOrigin::Incomplete));
            }
        }
    }
    if let (Some(cfg), None) = (&d.bgp, &d.bird) {
        for p in &cfg.networks {
            if fib.with_prefix(*p).next().is_some() {
                out.push((*p, "network".into(), LocalDest::Rib, PREF_BGP, BgpOrigin::Igp));
            }
        }
        for red in &cfg.redistribute {
            for r in fib.iter() {
                let hit = match red.source {
                    BgpRedistSource::Connected => r.proto == Proto::Connected,
                    BgpRedistSource::Static => r.proto == Proto::Static,
                    BgpRedistSource::Ospf => {
                        matches!(
                            r.proto,
                            Proto::OspfIntra | Proto::OspfInter | Proto::OspfE1 | Proto::OspfE2
                        )
                    }
                };
                if hit {
                    out.push((
                        r.prefix,
                        "redistribute".into(),
                        LocalDest::Rib,
                        PREF_BGP,
                        BgpOrigin::Incomplete,
                    ));
                }
            }
        }
    }
    out
}

/// BIRD `interface` patterns: the first pattern that matches decides; `-` excludes.
fn iface_selected(patterns: &[crate::model::bgp::IfacePattern], name: &str) -> bool {
    patterns
        .iter()
        .find(|p| glob(&p.pattern, name))
        .is_some_and(|p| !p.exclude)
}

fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            name.starts_with(head) && (0..=name.len() - head.len()).any(|i| glob(rest, &name[head.len() + i..]))
        }
    }
}

/// Refresh originated entries: new ones arrive now, unchanged ones keep their age.
fn refresh_local(bgp: &mut Bgp, net: &Network, st: &State, dev: DeviceId, now: u64) {
    let wanted = local_routes(net, st, dev);
    let mut news = Vec::new();
    let Some(sp) = bgp.speakers.get_mut(&dev) else { return };
    for (prefix, entries) in sp.table.iter_mut() {
        entries.retain(|e| match &e.origin {
            Origin::Local { protocol, dest } => wanted
                .iter()
                .any(|(p, pr, d, _, _)| p == prefix && pr == protocol && d == dest),
            Origin::Peer(..) => true,
        });
    }
    for (prefix, protocol, dest, pref, origin) in wanted {
        let entries = sp.table.entry(prefix).or_default();
        let exists = entries
            .iter()
            .any(|e| matches!(&e.origin, Origin::Local { protocol: p, dest: d } if *p == protocol && *d == dest));
        if !exists {
            news.push((prefix, protocol, dest, pref, origin));
        }
    }
    sp.table.retain(|_, v| !v.is_empty());
    for (prefix, protocol, dest, pref, origin) in news {
        let attrs = bgp.attrs.intern(PathAttrs {
            as_path: Vec::new(),
            next_hop: None,
            origin,
            local_pref: None,
            med: None,
        });
        let (src, t) = (bgp.new_src(), bgp.tick());
        if let Some(sp) = bgp.speakers.get_mut(&dev) {
            let e = new_entry(src, Origin::Local { protocol, dest }, attrs, true, pref, t, now);
            let entries = sp.table.entry(prefix).or_default();
            entries.reserve_exact(1);
            entries.push(e);
        }
    }
    if let Some(sp) = bgp.speakers.get_mut(&dev) {
        sp.count_paths();
    }
}

/// Resolve a BGP next hop through the device's tables without BGP (recursive, like BIRD's
/// `gateway recursive` and EOS): on a connected network → via the next hop itself (metric 0);
/// through a gateway route → via that gateway, metric the route's (or unknown for
/// kernel/static routes); nothing, a blackhole, or our own address → unresolvable.
fn resolve(net: &Network, st: &State, dev: DeviceId, flavor: BgpFlavor, nh: Ipv4Addr) -> (TableDest, NhMetric) {
    if local_iface(net, st, dev, nh).is_some() {
        return (TableDest::Unreachable, NhMetric::Unresolvable);
    }
    let Some(r) = st.devices[dev.idx()]
        .fib
        .lookup(nh)
        .filter(|r| !r.blackhole && !r.nexthops.is_empty())
    else {
        return (TableDest::Unreachable, NhMetric::Unresolvable);
    };
    if r.proto == Proto::Connected {
        return (
            TableDest::Via(NextHop {
                via: Some(nh),
                iface: r.nexthops[0].iface,
            }),
            NhMetric::Known(0),
        );
    }
    let metric = match (flavor, r.proto) {
        (_, Proto::OspfIntra | Proto::OspfInter | Proto::OspfE1 | Proto::OspfE2) => NhMetric::Known(r.metric),
        (BgpFlavor::Bird, _) => NhMetric::Unknown,
        _ => NhMetric::Known(r.metric),
    };
    let dest = if r.nexthops.len() == 1 {
        TableDest::Via(r.nexthops[0].clone())
    } else {
        TableDest::Multipath(r.nexthops.clone())
    };
    (dest, metric)
}

/// Best paths for every speaker; returns the routes each device installs from BGP.
pub(super) fn decide(bgp: &mut Bgp, net: &Network, st: &State, now: u64) -> BTreeMap<DeviceId, Vec<Route>> {
    let devices: Vec<DeviceId> = bgp.speakers.keys().copied().collect();
    let mut out = BTreeMap::new();
    for dev in devices {
        refresh_local(bgp, net, st, dev, now);
        let routes = decide_speaker(bgp, net, st, dev);
        out.insert(dev, routes);
    }
    out
}

fn decide_speaker(bgp: &mut Bgp, net: &Network, st: &State, dev: DeviceId) -> Vec<Route> {
    let Some(sp) = bgp.speakers.get(&dev) else {
        return Vec::new();
    };
    let flavor = sp.flavor;
    let cfg = net.device(dev).bgp.as_ref();
    let max_paths = cfg.and_then(|c| c.max_paths).unwrap_or(1) as usize;
    let relax = cfg.is_some_and(|c| c.multipath_relax);
    // Per-session facts the decision needs.
    let sess: BTreeMap<SessionId, (bool, Ipv4Addr, Ipv4Addr, u32, bool)> = sp
        .sessions
        .iter()
        .map(|s| {
            let x = &bgp.sessions[s.idx()];
            let recursive = x.cfg.gateway_recursive || x.cfg.multihop.is_some() || flavor != BgpFlavor::Bird;
            (
                *s,
                (
                    !x.internal,
                    x.peer_rid.unwrap_or(Ipv4Addr::UNSPECIFIED),
                    x.neighbor,
                    x.cfg.remote_as.unwrap_or(0),
                    recursive,
                ),
            )
        })
        .collect();
    // BIRD resolves `gateway recursive` next hops in its own table (`hostentry`).
    let covers = (flavor == BgpFlavor::Bird).then(|| {
        super::hostentry::covers(&sp.table, |o| match o {
            Origin::Peer(s, _) => sess.get(s).is_none_or(|f| f.4),
            Origin::Local { .. } => false,
        })
    });
    let mut routes = Vec::new();
    let Some(sp) = bgp.speakers.get_mut(&dev) else {
        return routes;
    };
    for (prefix, entries) in sp.table.iter_mut() {
        for e in entries.iter_mut() {
            resolve_entry(net, st, dev, flavor, e, &sess, covers.as_ref());
        }
        let idx: Vec<usize> = (0..entries.len())
            .filter(|i| entries[*i].accepted && (flavor == BgpFlavor::Bird || entries[*i].valid))
            .collect();
        let (chosen, group) = {
            let cands: Vec<Candidate> = idx.iter().map(|i| candidate(&entries[*i], &sess)).collect();
            let chosen = decision::select(flavor, &cands);
            let mut group = Vec::new();
            if let Some((b, _)) = chosen {
                group.push(idx[b]);
                if max_paths > 1 && flavor != BgpFlavor::Bird {
                    for (k, i) in idx.iter().enumerate() {
                        let equal = decision::multipath_equal(flavor, relax, &cands[b], &cands[k]);
                        if k != b && group.len() < max_paths && equal {
                            group.push(*i);
                        }
                    }
                }
            }
            (chosen, group)
        };
        for e in entries.iter_mut() {
            e.best = false;
            e.ecmp = EcmpRole::None;
            e.decided_by = None;
        }
        let Some((_, step)) = chosen else { continue };
        let best = group[0];
        entries[best].best = true;
        entries[best].decided_by = step;
        if group.len() > 1 {
            entries[best].ecmp = EcmpRole::Head;
            for i in &group[1..] {
                entries[*i].ecmp = EcmpRole::Member;
            }
        }
        if let Some(r) = fib_route(net, dev, flavor, *prefix, entries, &group, &sess) {
            routes.push(r);
        }
    }
    routes
}

type SessFacts = BTreeMap<SessionId, (bool, Ipv4Addr, Ipv4Addr, u32, bool)>;

fn resolve_entry(
    net: &Network,
    st: &State,
    dev: DeviceId,
    flavor: BgpFlavor,
    e: &mut Entry,
    sess: &SessFacts,
    covers: Option<&BTreeMap<Ipv4Net, super::hostentry::Cover>>,
) {
    match &e.origin {
        Origin::Local { dest, .. } => {
            e.valid = true;
            e.nh_metric = None;
            e.igp_metric = 0;
            e.dest = match dest {
                LocalDest::Blackhole => TableDest::Blackhole,
                LocalDest::Unreachable => TableDest::Unreachable,
                LocalDest::Hop(nh) => TableDest::Via(nh.clone()),
                LocalDest::Device(nh) => TableDest::Device(nh.clone()),
                LocalDest::Rib => TableDest::Unreachable,
            };
        }
        Origin::Peer(s, _) => {
            let recursive = sess.get(s).is_none_or(|f| f.4);
            let Some(nh) = e.attrs.next_hop else {
                e.valid = false;
                e.dest = TableDest::Unreachable;
                e.nh_metric = Some(NhMetric::Unresolvable);
                return;
            };
            let (dest, metric) = match covers {
                Some(c) if recursive && local_iface(net, st, dev, nh).is_none() => super::hostentry::resolve(c, nh),
                _ => resolve(net, st, dev, flavor, nh),
            };
            // `gateway direct`: the next hop must be on a connected network.
            let direct_ok = recursive || matches!(metric, NhMetric::Known(0));
            e.valid = !matches!(dest, TableDest::Unreachable) && direct_ok;
            e.igp_metric = match metric {
                NhMetric::Known(m) => m,
                NhMetric::Unknown => METRIC_UNKNOWN,
                NhMetric::Unresolvable => u32::MAX,
            };
            e.dest = if e.valid { dest } else { TableDest::Unreachable };
            e.nh_metric = Some(if e.valid { metric } else { NhMetric::Unresolvable });
        }
    }
}

fn candidate<'a>(e: &'a Entry, sess: &SessFacts) -> Candidate<'a> {
    let (ebgp, rid, peer, peer_as) = match &e.origin {
        Origin::Peer(s, _) => sess
            .get(s)
            .map_or((false, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0), |f| {
                (f.0, f.1, f.2, f.3)
            }),
        Origin::Local { .. } => (false, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0),
    };
    let local = matches!(e.origin, Origin::Local { .. });
    Candidate {
        attrs: Some(&e.attrs),
        preference: e.preference,
        weight: 0,
        local,
        ebgp,
        reachable: e.valid,
        igp_metric: e.igp_metric,
        router_id: rid,
        peer_addr: peer,
        peer_as,
        arrival: e.arrival,
        selected: e.best,
    }
}

/// The route forwarding gets from this prefix's best path(s): on EOS a `B E`/`B I` RIB route
/// at the BGP distance (received paths only: originated ones are already in the RIB); on a
/// BIRD host what the kernel protocol exports (`proto bird`), except routes BIRD took from the
/// kernel or from interfaces.
fn fib_route(
    net: &Network,
    dev: DeviceId,
    flavor: BgpFlavor,
    prefix: Ipv4Net,
    entries: &[Entry],
    group: &[usize],
    sess: &SessFacts,
) -> Option<Route> {
    let best = &entries[group[0]];
    let d = net.device(dev);
    match flavor {
        BgpFlavor::Bird => {
            let kernel = d.bird.as_ref()?.kernel.as_ref()?;
            if let Origin::Local { protocol, .. } = &best.origin {
                if protocol == "kernel1" || protocol == "direct1" {
                    return None;
                }
            }
            let exported =
                super::export::policy_result(d.bird.as_ref(), &kernel.export, prefix, &best.attrs, "kernel1")?;
            // The kernel protocol installs blackhole and unreachable routes as such
            // (sysdep/unix/krt.c `krt_capable`): an unresolvable best path becomes an
            // `unreachable` kernel route that shadows shorter prefixes.
            let (mut nexthops, blackhole, unreachable) = match &best.dest {
                TableDest::Via(nh) | TableDest::Device(nh) => (vec![nh.clone()], false, false),
                TableDest::Multipath(v) => (v.clone(), false, false),
                TableDest::Blackhole => (Vec::new(), true, false),
                TableDest::Unreachable => (Vec::new(), false, true),
            };
            // Calico's BIRD fork (projectcalico/bird `sysdep/linux/netlink.c` `nl_send_route`):
            // a gateway route whose export set `krt_tunnel` to an existing device goes out of
            // that device to the route's BGP next hop, `onlink` — not to the gateway `gateway
            // recursive` resolved, so a node in another subnet is the tunnel's far end. An
            // empty or unknown device name, a device route or a multipath route is installed
            // as BIRD resolved it.
            let tunnel = match exported.attrs.get("krt_tunnel") {
                Some(Value::Str(name)) => net.iface_by_name(dev, name),
                _ => None,
            };
            let mut onlink = false;
            if let (Some(tunl), TableDest::Via(_), Some(gw)) = (tunnel, &best.dest, exported.bgp_next_hop) {
                nexthops = vec![NextHop {
                    via: Some(gw),
                    iface: tunl,
                }];
                onlink = true;
            }
            Some(Route {
                prefix,
                proto: Proto::Bird,
                distance: 0,
                metric: 0,
                nexthops,
                src: None,
                blackhole,
                unreachable,
                linux_proto: Some("bird"),
                scope_link: false,
                onlink,
            })
        }
        BgpFlavor::Eos | BgpFlavor::Frr => {
            let Origin::Peer(s, _) = &best.origin else { return None };
            let ebgp = sess.get(s).is_some_and(|f| f.0);
            let (e_dist, i_dist) = d
                .bgp
                .as_ref()
                .and_then(|c| c.distance)
                .map_or((d.profile.distance_ebgp, d.profile.distance_ibgp), |(e, i, _)| (e, i));
            let mut nexthops: Vec<NextHop> = Vec::new();
            for i in group {
                match &entries[*i].dest {
                    TableDest::Via(nh) | TableDest::Device(nh) => nexthops.push(nh.clone()),
                    TableDest::Multipath(v) => nexthops.extend(v.iter().cloned()),
                    _ => {}
                }
            }
            nexthops.sort();
            nexthops.dedup();
            if nexthops.is_empty() {
                return None;
            }
            Some(Route {
                prefix,
                proto: if ebgp { Proto::BgpExternal } else { Proto::BgpInternal },
                distance: if ebgp { e_dist } else { i_dist },
                // zebra installs every route into the Linux kernel with one metric.
                metric: if d.kind == DeviceKind::Linux {
                    ZEBRA_ROUTE_METRIC
                } else {
                    best.attrs.med.unwrap_or(0)
                },
                nexthops,
                src: None,
                blackhole: false,
                unreachable: false,
                linux_proto: Some("bgp"),
                scope_link: false,
                onlink: false,
            })
        }
    }
}
