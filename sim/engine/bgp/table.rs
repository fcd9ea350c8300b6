//! A speaker's table: every path it holds per prefix (received, originated, and on BIRD the
//! routes of its other protocols), next hops resolved through the IGP tables, the best path per
//! flavour, and the routes handed to forwarding.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;

use fnv::FnvHashMap;
use ipnet::Ipv4Net;
use smallvec::smallvec;

use super::decision::{self, Candidate, Step};
use super::filter::Prepared;
use super::prefix_map::{NetOrd, Place, PrefixMap};
use super::session::SessionId;
use super::Bgp;
use crate::engine::bgp_state::{
    Advertised, BgpOrigin, BgpState, EcmpRole, NhMetric, PathAttrs, TableDest, TableRoute, DEFAULT_LOCAL_PREF,
};
use crate::engine::fib_update::BgpRoutes;
use crate::engine::local_iface;
use crate::engine::state::{LinuxProto, NextHop, NextHops, Proto, Route, State};
use crate::model::bgp::{BgpRedistSource, BirdStaticDest, Policy, Value};
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
    /// Boxed: few entries are originated, and inline it made every received path 32 bytes
    /// larger.
    Local(Box<Local>),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Local {
    /// `static1`, `direct1`, `kernel1` (BIRD), `network`, `redistribute` (EOS).
    pub protocol: &'static str,
    pub dest: LocalDest,
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
    /// BGP NEXT_HOP, beside the shared set (`PathAttrs`); None on a route originated here.
    pub next_hop: Option<Ipv4Addr>,
    pub accepted: bool,
    pub preference: u32,
    pub arrival: u64,
    pub since: u64,
    // Decision results.
    pub valid: bool,
    /// Where the next hop resolves: an index into the speaker's [`Resolutions`].
    pub resolved: u32,
    pub best: bool,
    pub ecmp: EcmpRole,
    pub decided_by: Option<Step>,
}

/// Where a path's next hop resolves, and at what IGP metric. A speaker's paths resolve through
/// a handful of next hops (a node's leaf, a leaf's spines), so each distinct resolution is held
/// once per speaker ([`Resolutions`]) and a path names it by index: inline it was 28 of an
/// entry's 88 bytes, over the tens of millions of paths of an eBGP fabric.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Resolution {
    pub dest: TableDest,
    pub nh_metric: Option<NhMetric>,
    /// What the decision compares (`NhMetric` made a number: unknown after every known one).
    pub igp_metric: u32,
}

/// A path not decided yet: it resolves nowhere. Index 0 of every speaker's [`Resolutions`].
const UNDECIDED: Resolution = Resolution {
    dest: TableDest::Unreachable,
    nh_metric: None,
    igp_metric: 0,
};

/// A speaker's resolutions, by the index its paths hold. Only ever added to, so an index stays
/// good for as long as a snapshot holds the table that names it; the list is shared with the
/// snapshots (`TableSnapshot`), and copied only when a resolution is added while a view holds it.
#[derive(Clone, Debug)]
pub(crate) struct Resolutions {
    list: Arc<Vec<Resolution>>,
    ids: FnvHashMap<Resolution, u32>,
    /// The index `id` gave last: a decision writes the same resolution for path after path
    /// (every path of a node's table is through its leaf), and comparing it is cheaper than
    /// hashing it.
    last: u32,
}

impl Default for Resolutions {
    fn default() -> Self {
        Resolutions {
            list: Arc::new(vec![UNDECIDED]),
            ids: std::iter::once((UNDECIDED, 0)).collect(),
            last: 0,
        }
    }
}

impl Resolutions {
    pub(crate) fn get(&self, id: u32) -> &Resolution {
        &self.list[id as usize]
    }

    /// The index of `r`, added if new.
    fn id(&mut self, r: &Resolution) -> u32 {
        if *self.get(self.last) == *r {
            return self.last;
        }
        self.last = match self.ids.get(r) {
            Some(id) => *id,
            None => {
                // Far fewer than 2^32: one per distinct (gateway, interface, metric) resolved.
                let id = self.list.len() as u32;
                Arc::make_mut(&mut self.list).push(r.clone());
                self.ids.insert(r.clone(), id);
                id
            }
        };
        self.last
    }
}

/// A speaker's paths per prefix. Each prefix's paths are shared with the snapshots the views
/// hold (`TableSnapshot`): changing a prefix replaces its paths (and copies the chunk of the
/// map that holds it, `PrefixMap`), so a snapshot keeps the table as it was, and a speaker
/// whose table did not change costs nothing.
pub(crate) type Table = PrefixMap<Paths>;

// A table holds an entry per path: an eBGP fabric's nodes and leaves hold tens of millions.
const _: () = assert!(std::mem::size_of::<Entry>() == 64);

/// A prefix's paths in a table (never none). A node of an eBGP fabric holds one path for
/// every prefix of the fabric, so a single path sits in the table's chunk itself: as a slice
/// of its own it was an allocation of 112 bytes beside the chunk's 24-byte slot, made again at
/// every path received. Several (a leaf's, from each spine) are shared (`Arc`): a copied chunk
/// copies a pointer per prefix, not the paths.
#[derive(Clone, Debug)]
pub(crate) enum Paths {
    One(Entry),
    Several(Arc<[Entry]>),
}

// The enum's tag sits in a niche of the entry: a single path costs the chunk nothing more.
const _: () = assert!(std::mem::size_of::<Paths>() == 64);

impl std::ops::Deref for Paths {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        match self {
            Paths::One(e) => std::slice::from_ref(e),
            Paths::Several(all) => all,
        }
    }
}

impl Paths {
    /// `entries`, drained (at least one).
    fn drained(entries: &mut Vec<Entry>) -> Paths {
        match entries.pop() {
            Some(e) if entries.is_empty() => Paths::One(e),
            last => Paths::Several(entries.drain(..).chain(last).collect()),
        }
    }

    /// The paths to change in place (copied first where a snapshot shares them).
    fn make_mut(&mut self) -> &mut [Entry] {
        match self {
            Paths::One(e) => std::slice::from_mut(e),
            Paths::Several(all) => Arc::make_mut(all),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Speaker {
    pub device: DeviceId,
    pub flavor: BgpFlavor,
    pub asn: u32,
    pub router_id: Ipv4Addr,
    pub sessions: Vec<SessionId>,
    /// Never holds an empty slice: a prefix without paths is removed.
    pub table: Arc<Table>,
    /// Where the table's paths resolve (`Entry::resolved`).
    pub resolutions: Resolutions,
    /// Entries in `table`, kept by every function that changes it: the engine's memory guard
    /// reads it every few hundred events, and summing the tables there was most of a large
    /// fabric's run time.
    pub paths: usize,
    /// What the view says of each session's paths, by session (`sessions`, sorted by id).
    pub peers: Arc<[(SessionId, PeerInfo)]>,
    /// Prefixes whose paths changed since the last export, as they changed: unsorted, and a
    /// prefix may be here more than once (`export` sorts them). A B-tree set here was a
    /// twentieth of an eBGP fabric's run: every path received inserted into it.
    pub dirty: Vec<Ipv4Net>,
    /// Prefixes whose paths changed since the last decision, as they changed (unsorted, a
    /// prefix maybe more than once): while `memo` holds, the next decision decides only these.
    undecided: Vec<Ipv4Net>,
    /// What the last decision read besides the paths (None: the next one decides every
    /// prefix).
    pub memo: Option<Memo>,
}

/// What a speaker's decision reads besides its paths: its sessions' facts, its multipath
/// configuration and the resolution of every next hop its paths name. The decision of a
/// prefix whose paths did not change since is then the decision it has (the entries hold it)
/// — as in the daemons, which decide a prefix again when something about it changes (a
/// path, the resolution of a next hop), not at every change anywhere. The rest of what it
/// reads (the device's configuration and interfaces) changes only through `Bgp::sync`, which
/// drops the memo.
#[derive(Clone, Debug)]
pub(crate) struct Memo {
    sess: SessFacts,
    max_paths: usize,
    relax: bool,
    local: BTreeMap<Ipv4Addr, bool>,
    igp: BTreeMap<Ipv4Addr, (TableDest, NhMetric)>,
    hosts: BTreeMap<Ipv4Addr, (TableDest, NhMetric)>,
}

impl Memo {
    /// Does the memo still describe what a decision would read now? Resolves each next hop it
    /// names again through `rv` (which keeps the answers for the decision).
    fn holds(&self, rv: &mut Resolver, sess: &SessFacts, max_paths: usize, relax: bool) -> bool {
        self.sess == *sess
            && self.max_paths == max_paths
            && self.relax == relax
            && self.local.iter().all(|(nh, was)| rv.is_local(*nh) == *was)
            && self.igp.iter().all(|(nh, was)| rv.igp(*nh) == *was)
            && self.hosts.iter().all(|(nh, was)| rv.recursive(*nh) == *was)
    }
}

/// How the view shows the paths received on one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PeerInfo {
    /// BIRD's protocol name; `bgp` on EOS and FRR.
    protocol: String,
    neighbor: Ipv4Addr,
    ebgp: bool,
}

impl PeerInfo {
    pub(crate) fn of(s: &super::session::Session) -> Self {
        PeerInfo {
            protocol: s.cfg.name.clone().unwrap_or_else(|| "bgp".into()),
            neighbor: s.neighbor,
            ebgp: !s.internal,
        }
    }
}

impl Speaker {
    pub(crate) fn new(device: DeviceId, flavor: BgpFlavor, asn: u32, router_id: Ipv4Addr) -> Self {
        Speaker {
            device,
            flavor,
            asn,
            router_id,
            sessions: Vec::new(),
            table: Arc::default(),
            resolutions: Resolutions::default(),
            paths: 0,
            peers: Arc::new([]),
            dirty: Vec::new(),
            undecided: Vec::new(),
            memo: None,
        }
    }

    /// The table to change. A snapshot a view still holds keeps the old map (the chunks and
    /// the paths stay shared until they change).
    fn table_mut(&mut self) -> &mut Table {
        Arc::make_mut(&mut self.table)
    }

    /// `prefix` now holds `entries`, taken out (none: the prefix goes). Drained into the
    /// table's slice with one allocation, so a caller's vector can serve again.
    fn set_entries(&mut self, prefix: Ipv4Net, entries: &mut Vec<Entry>) {
        let place = self.table.place(&prefix);
        self.set_entries_at(place, prefix, entries);
    }

    /// `set_entries`, `prefix` being at `place` in the table.
    fn set_entries_at(&mut self, place: Option<Place>, prefix: Ipv4Net, entries: &mut Vec<Entry>) {
        self.dirty.push(prefix);
        self.undecided.push(prefix);
        if entries.is_empty() {
            if place.is_some_and(|p| self.table.get_at(p).is_some()) {
                self.table_mut().remove(&prefix);
            }
        } else {
            let paths = Paths::drained(entries);
            self.table_mut().insert_at(place, prefix, paths);
        }
    }

    /// Forget everything learned over a session that went down.
    pub(crate) fn flush_session(&mut self, sid: SessionId) {
        let from = |e: &Entry| matches!(e.origin, Origin::Peer(s, _) if s == sid);
        let hit: Vec<Ipv4Net> = self
            .table
            .iter()
            .filter(|(_, v)| v.iter().any(from))
            .map(|(p, _)| *p)
            .collect();
        for prefix in hit {
            let mut kept = self
                .table
                .get(&prefix)
                .map_or_else(Vec::new, |v| v.iter().filter(|e| !from(e)).cloned().collect());
            self.set_entries(prefix, &mut kept);
        }
        self.count_paths();
    }

    fn count_paths(&mut self) {
        self.paths = self.table.values().map(|v| v.len()).sum();
    }

    /// The session list changed: what the view says of each session follows.
    pub(crate) fn set_sessions(&mut self, sessions: Vec<SessionId>, all: &[super::session::Session]) {
        let mut peers: Vec<(SessionId, PeerInfo)> =
            sessions.iter().map(|s| (*s, PeerInfo::of(&all[s.idx()]))).collect();
        peers.sort_by_key(|p| p.0);
        self.peers = peers.into();
        self.sessions = sessions;
    }

    /// The table as it is now, for a view.
    pub(crate) fn snapshot(&self) -> TableSnapshot {
        TableSnapshot {
            table: self.table.clone(),
            resolutions: self.resolutions.list.clone(),
            peers: self.peers.clone(),
            paths: self.paths,
        }
    }
}

/// A speaker's table as it was when a view was taken (`BgpTable`), turned into `TableRoute`s
/// when read.
#[derive(Clone, Debug)]
pub(crate) struct TableSnapshot {
    table: Arc<Table>,
    resolutions: Arc<Vec<Resolution>>,
    peers: Arc<[(SessionId, PeerInfo)]>,
    paths: usize,
}

impl TableSnapshot {
    pub(crate) fn len(&self) -> usize {
        self.paths
    }

    /// Taken from the same table: the same routes.
    pub(crate) fn same(&self, other: &TableSnapshot) -> bool {
        Arc::ptr_eq(&self.table, &other.table) && self.peers == other.peers
    }

    pub(crate) fn routes(&self) -> Vec<TableRoute> {
        let mut out = Vec::with_capacity(self.paths);
        for (prefix, entries) in self.table.iter() {
            self.prefix_routes(*prefix, entries, &mut out);
        }
        out
    }

    pub(crate) fn for_prefix(&self, prefix: Ipv4Net) -> Vec<TableRoute> {
        let mut out = Vec::new();
        if let Some(entries) = self.table.get(&prefix) {
            self.prefix_routes(prefix, entries, &mut out);
        }
        out
    }

    /// One prefix's paths, the best first, then by arrival.
    fn prefix_routes(&self, prefix: Ipv4Net, entries: &[Entry], out: &mut Vec<TableRoute>) {
        let mut order: Vec<&Entry> = entries.iter().collect();
        order.sort_by_key(|e| (!e.best, e.arrival));
        for e in order {
            let (protocol, from, path_id, ebgp) = match &e.origin {
                Origin::Peer(s, id) => {
                    // A table holds paths only from its speaker's sessions: a session that
                    // closes takes its paths with it (`flush_session`).
                    match self.peers.binary_search_by_key(s, |p| p.0) {
                        Ok(i) => {
                            let p = &self.peers[i].1;
                            (p.protocol.clone(), Some(p.neighbor), *id, p.ebgp)
                        }
                        Err(_) => ("bgp".to_string(), None, *id, false),
                    }
                }
                Origin::Local(l) => (l.protocol.to_string(), None, 0, false),
            };
            // LOCAL_PREF is not carried over eBGP; the receiver attaches its default (100),
            // which BIRD and EOS both display (seed-lab.md s3b `BGP.local_pref: 100`). The
            // table holds the set as it arrived, the very one the sender's Adj-RIB-Out holds,
            // and the path is shown with the 100 attached: a copy per (receiver, path) made
            // on arrival was a sixth of an eBGP fabric's attribute sets and its time.
            let resolved = &self.resolutions[e.resolved as usize];
            let attrs = if ebgp && e.attrs.local_pref.is_none() {
                Arc::new(PathAttrs {
                    local_pref: Some(DEFAULT_LOCAL_PREF),
                    ..(*e.attrs).clone()
                })
            } else {
                e.attrs.clone()
            };
            out.push(TableRoute {
                prefix,
                protocol,
                from,
                path_id,
                attrs: Some(attrs),
                next_hop: e.next_hop,
                dest: resolved.dest.clone(),
                nh_metric: resolved.nh_metric,
                preference: e.preference,
                ebgp,
                valid: e.valid && e.accepted,
                accepted: e.accepted,
                best: e.best,
                ecmp: e.ecmp,
                since_ms: e.since,
                decided_by: e.decided_by.map(Step::describe),
            });
        }
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
    paths: super::adj::Paths,
) -> bool {
    let Some(s) = bgp.sessions.get(to.idx()) else {
        return false;
    };
    if s.gen != gen || s.state != BgpState::Established {
        return false;
    }
    if let Some(p) = s.peer {
        bgp.sessions[p.idx()].msgs_sent += 1;
    }
    // Borrowed beside the attribute table (per path received: no copy of the policy).
    let (s, attrs) = (&bgp.sessions[to.idx()], &mut bgp.attrs);
    let (dev, local_as, internal) = (s.device, s.local_as, s.internal);
    let simulated = s.live != super::session::Live::Real;
    let import = &s.cfg.import;
    // The protocol name a BIRD import filter sees (`proto`: the receiving protocol's); only
    // a filter reads it.
    let proto = match import {
        Policy::Filter(_) => s.cfg.name.as_deref().unwrap_or_default(),
        _ => "",
    };
    let device = net.device(dev);
    // Sized up front, as are `entries` below: grown one push at a time, these vectors'
    // reallocations were a twentieth of an eBGP fabric's run.
    let mut kept = Kept::new();
    kept.extend(paths.into_iter().filter(|p| !p.attrs.as_path.contains(&local_as)).map(
        |Advertised { id, next_hop, attrs: a }| {
            // A set from a simulated peer is already the attribute table's (the peer's
            // Adj-RIB-Out holds it); one from a live peer, or one an import route-map
            // changed, is shared here. An eBGP path without LOCAL_PREF stays without: the
            // receiver's default is attached where the path is shown (`TableSnapshot`) and
            // the decision reads a missing one as that default.
            let sent = Arc::as_ptr(&a);
            let (a, ok) = super::export::import_policy(device, import, internal, prefix, a, next_hop, proto);
            let a = if simulated && Arc::as_ptr(&a) == sent {
                a
            } else {
                attrs.share(a)
            };
            (Advertised { id, next_hop, attrs: a }, ok)
        },
    ));
    bgp.sessions[to.idx()].msgs_rcvd += 1;
    let Some(sp) = bgp.speakers.get_mut(&dev) else {
        return false;
    };
    let place = sp.table.place(&prefix);
    let held = place.and_then(|p| sp.table.get_at(p)).map_or(&[][..], |v| &v[..]);
    let from_here = |e: &&Entry| matches!(e.origin, Origin::Peer(x, _) if x == to);
    let others = held.len() - held.iter().filter(from_here).count();
    let name = &net.device(dev).name;
    let kept = guard_paths(&mut bgp.findings, bgp.path_limit, name, prefix, others, kept);
    // The prefix's entries are made in a vector kept between calls.
    let mut entries = std::mem::take(&mut bgp.scratch.entries);
    entries.clear();
    entries.extend_from_slice(held);
    // The session's Adj-RIB-In for the prefix is its entries here: replace their counts.
    let count = |oks: &mut dyn Iterator<Item = bool>| oks.fold((0, 0), |(n, acc), ok| (n + 1, acc + u32::from(ok)));
    let old = count(&mut entries.iter().filter(from_here).map(|e| e.accepted));
    let new = count(&mut kept.iter().map(|k| k.1));
    bgp.sessions[to.idx()].adj_in.replace(old, new);
    let before = entries.len();
    entries.retain(|e| match &e.origin {
        Origin::Peer(x, id) if *x == to => kept.iter().any(|(k, _)| k.id == *id),
        _ => true,
    });
    let mut changed = entries.len() != before;
    let mut fresh: smallvec::SmallVec<[u32; 4]> = smallvec::SmallVec::new();
    for (Advertised { id, next_hop, attrs }, ok) in kept {
        let next_hop = Some(next_hop);
        match entries.iter_mut().find(|e| e.origin == Origin::Peer(to, id)) {
            // An identical re-announcement changes nothing (BIRD `rte_same`).
            Some(e) if e.attrs == attrs && e.next_hop == next_hop && e.accepted == ok => {}
            Some(e) => {
                e.attrs = attrs;
                e.next_hop = next_hop;
                e.accepted = ok;
                e.since = now;
                fresh.push(id);
                changed = true;
            }
            None => {
                let e = new_entry(0, Origin::Peer(to, id), attrs, ok, PREF_BGP, 0, now);
                entries.push(Entry { next_hop, ..e });
                fresh.push(id);
                changed = true;
            }
        }
    }
    // Each new or changed path arrives now, in order; a new one gets its route source.
    for id in fresh {
        bgp.next_src += 1;
        bgp.clock += 1;
        if let Some(e) = entries.iter_mut().find(|e| e.origin == Origin::Peer(to, id)) {
            if e.src_id == 0 {
                e.src_id = bgp.next_src;
            }
            e.arrival = bgp.clock;
        }
    }
    if changed {
        sp.paths = sp.paths - before + entries.len();
        sp.set_entries_at(place, prefix, &mut entries);
    }
    entries.clear();
    bgp.scratch.entries = entries;
    changed
}

/// Vectors kept from call to call, empty between them: a received prefix's entries
/// (`receive`: one allocation fewer per prefix received), and a decision's changed prefixes
/// and their entries' decisions (`decide_speaker`: grown from empty at every decision, their
/// reallocations were a hundredth of an eBGP fabric's run).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    entries: Vec<Entry>,
    changes: Vec<(Place, Ipv4Net, usize)>,
    decided: Vec<Decided>,
}

/// The paths of one UPDATE kept after the loop check, each as import policy left it and
/// whether it accepted it. One but with ADD-PATH, so held inline (an allocation per path
/// received as a `Vec`).
type Kept = smallvec::SmallVec<[(Advertised, bool); 2]>;

/// The path-explosion guard: keep at most `path_limit` paths per prefix on device `name`,
/// which holds `others` paths for it from elsewhere, and say so once, naming the prefix and
/// the cause.
fn guard_paths(
    findings: &mut Vec<String>,
    path_limit: usize,
    name: &str,
    prefix: Ipv4Net,
    others: usize,
    mut kept: Kept,
) -> Kept {
    let room = path_limit.saturating_sub(others);
    if kept.len() <= room {
        return kept;
    }
    let total = others + kept.len();
    kept.truncate(room);
    let msg = format!(
        "path explosion: {name} would hold {total}+ paths for {prefix} (limit {}); cause: ADD-PATH \
         peers re-advertise every path they hold, so through a full mesh of eBGP speakers every \
         loop-free AS path reaches every node (their number grows factorially with the mesh)",
        path_limit
    );
    if !findings
        .iter()
        .any(|f| f.starts_with(&format!("path explosion: {name} ")) && f.contains(&format!(" {prefix} ")))
    {
        findings.push(msg);
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
        next_hop: None,
        accepted,
        preference,
        arrival,
        since: now,
        valid: false,
        resolved: 0,
        best: false,
        ecmp: EcmpRole::None,
        decided_by: None,
    }
}

/// What a speaker originates from the device's own tables: EOS `network` and `redistribute`;
/// BIRD's static routes, direct routes of the listed interfaces, and kernel routes it learns.
fn local_routes(net: &Network, st: &State, dev: DeviceId) -> Vec<(Ipv4Net, &'static str, LocalDest, u32, BgpOrigin)> {
    let d = net.device(dev);
    let fib = &st.devices[dev.idx()].fib;
    let mut out = Vec::new();
    if let Some(b) = &d.bird {
        for sr in &b.statics {
            let dest = match sr.dest {
                BirdStaticDest::Blackhole => LocalDest::Blackhole,
                BirdStaticDest::Unreachable => LocalDest::Unreachable,
                BirdStaticDest::Via(gw) => match fib.lookup_without_bgp(gw).filter(|r| r.proto == Proto::Connected) {
                    Some(r) => LocalDest::Hop(NextHop {
                        via: Some(gw),
                        iface: r.nexthops[0].iface,
                    }),
                    None => continue,
                },
            };
            out.push((sr.prefix.trunc(), "static1", dest, PREF_STATIC, BgpOrigin::Igp));
        }
        if let Some(patterns) = &b.direct {
            for r in fib.iter().filter(|r| r.proto == Proto::Connected) {
                let Some(nh) = r.nexthops.first() else { continue };
                if iface_selected(patterns, &net.iface(nh.iface).name) {
                    out.push((
                        r.prefix,
                        "direct1",
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
                out.push((r.prefix, "kernel1", dest, PREF_KERNEL, BgpOrigin::Incomplete));
            }
        }
    }
    if let (Some(cfg), None) = (&d.bgp, &d.bird) {
        for p in &cfg.networks {
            if fib.with_prefix(*p).next().is_some() {
                out.push((*p, "network", LocalDest::Rib, PREF_BGP, BgpOrigin::Igp));
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
                        "redistribute",
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
    let Some(sp) = bgp.speakers.get_mut(&dev) else { return };
    let is_wanted = |prefix: &Ipv4Net, e: &Entry| match &e.origin {
        Origin::Local(l) => wanted
            .iter()
            .any(|(p, pr, d, _, _)| p == prefix && *pr == l.protocol && *d == l.dest),
        Origin::Peer(..) => true,
    };
    // Only prefixes that lose an entry are copied (`set_entries`).
    let stale: Vec<Ipv4Net> = sp
        .table
        .iter()
        .filter(|(p, v)| !v.iter().all(|e| is_wanted(p, e)))
        .map(|(p, _)| *p)
        .collect();
    for prefix in stale {
        let mut kept = sp.table.get(&prefix).map_or_else(Vec::new, |v| {
            v.iter().filter(|e| is_wanted(&prefix, e)).cloned().collect()
        });
        sp.set_entries(prefix, &mut kept);
    }
    let news: Vec<_> = wanted
        .into_iter()
        .filter(|(prefix, protocol, dest, _, _)| {
            !sp.table.get(prefix).is_some_and(|v| {
                v.iter()
                    .any(|e| matches!(&e.origin, Origin::Local(l) if l.protocol == *protocol && l.dest == *dest))
            })
        })
        .collect();
    for (prefix, protocol, dest, pref, origin) in news {
        let attrs = bgp.attrs.intern(PathAttrs {
            as_path: Vec::new(),
            origin,
            local_pref: None,
            med: None,
        });
        let (src, t) = (bgp.new_src(), bgp.tick());
        if let Some(sp) = bgp.speakers.get_mut(&dev) {
            let e = new_entry(
                src,
                Origin::Local(Box::new(Local { protocol, dest })),
                attrs,
                true,
                pref,
                t,
                now,
            );
            let mut entries = sp.table.get(&prefix).map_or_else(Vec::new, |v| v.to_vec());
            entries.push(e);
            sp.set_entries(prefix, &mut entries);
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
        .lookup_without_bgp(nh)
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
        TableDest::Multipath(Box::new(r.nexthops.iter().cloned().collect()))
    };
    (dest, metric)
}

/// Best paths for speaker `dev`; returns the routes the device installs from BGP.
pub(super) fn decide(bgp: &mut Bgp, net: &Network, st: &State, now: u64, dev: DeviceId, in_place: bool) -> BgpRoutes {
    refresh_local(bgp, net, st, dev, now);
    decide_speaker(bgp, net, st, dev, in_place)
}

/// `in_place`: the device's table holds the routes the last decision handed over; then a
/// decision made only for the prefixes whose paths changed hands over only theirs.
fn decide_speaker(bgp: &mut Bgp, net: &Network, st: &State, dev: DeviceId, in_place: bool) -> BgpRoutes {
    let Some(sp) = bgp.speakers.get_mut(&dev) else {
        return BgpRoutes {
            routes: Vec::new(),
            only: None,
        };
    };
    let flavor = sp.flavor;
    let cfg = net.device(dev).bgp.as_ref();
    let max_paths = cfg.and_then(|c| c.max_paths).unwrap_or(1) as usize;
    let relax = cfg.is_some_and(|c| c.multipath_relax);
    // Per-session facts the decision needs.
    let sess: SessFacts = sp
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
    let memo = sp.memo.take();
    let undecided = std::mem::take(&mut sp.undecided);
    let sp = &*sp;
    let mut resolver = Resolver {
        net,
        st,
        dev,
        flavor,
        table: &sp.table,
        resolutions: &sp.resolutions,
        sess: &sess,
        local: BTreeMap::new(),
        igp: BTreeMap::new(),
        hosts: BTreeMap::new(),
    };
    // Only the prefixes whose paths changed are decided again while nothing else the decision
    // reads did; None: every prefix.
    let only = memo
        .is_some_and(|m| m.holds(&mut resolver, &sess, max_paths, relax))
        .then(|| {
            let mut only = undecided;
            only.sort_by_key(|p| NetOrd(*p));
            only.dedup();
            only
        });
    let ctx = Ctx {
        net,
        dev,
        flavor,
        max_paths,
        relax,
        kernel: net
            .device(dev)
            .bird
            .as_ref()
            .and_then(|b| Some(Prepared::new(b, &b.kernel.as_ref()?.export))),
    };
    let mut routes = Vec::with_capacity(sp.paths);
    // Decided on the side and written only where it changed: an unchanged prefix stays shared
    // with the views' snapshots.
    // Each changed prefix's decision is its count of `decided`, in the entries' order (one
    // vector for all: a vector per prefix was an allocation per prefix decided).
    let mut changes = std::mem::take(&mut bgp.scratch.changes);
    let mut decided = std::mem::take(&mut bgp.scratch.decided);
    let mut work = Work::default();
    let mut pending = only.as_ref().map(|o| o.iter().peekable());
    #[cfg(test)]
    let mut kept = 0;
    for (place, prefix, entries) in sp.table.iter_placed() {
        if let Some(pending) = pending.as_mut() {
            while pending.next_if(|p| NetOrd(**p) < NetOrd(*prefix)).is_some() {}
            if pending.next_if_eq(&prefix).is_none() {
                // The decision this prefix has stands; its route is in the table, or is made
                // again for a table made without BGP.
                #[cfg(test)]
                {
                    check_kept(&ctx, &mut resolver, *prefix, entries, &mut work);
                    kept += 1;
                }
                if !in_place {
                    routes.extend(decided_route(&ctx, *prefix, entries, &sp.resolutions, &sess));
                }
                continue;
            }
        }
        routes.extend(decide_prefix(&ctx, &mut resolver, *prefix, entries, &mut work));
        if entries.iter().zip(&work.dec).any(|(e, d)| !d.is(e, &sp.resolutions)) {
            changes.push((place, *prefix, work.dec.len()));
            decided.extend_from_slice(&work.dec);
        }
    }
    let Resolver { local, igp, hosts, .. } = resolver;
    #[cfg(test)]
    {
        bgp.decisions_kept += kept;
    }
    let routes = BgpRoutes {
        routes,
        only: only.filter(|_| in_place),
    };
    let Some(sp) = bgp.speakers.get_mut(&dev) else {
        return routes;
    };
    sp.memo = Some(Memo {
        sess,
        max_paths,
        relax,
        local,
        igp,
        hosts,
    });
    if !changes.is_empty() {
        sp.dirty.extend(changes.iter().map(|c| c.1));
        let Speaker { table, resolutions, .. } = sp;
        let table = Arc::make_mut(table);
        let mut dec = decided.drain(..);
        // The table has not changed since it was decided: each prefix is where it was.
        for &(place, _, n) in &changes {
            let mut dec = dec.by_ref().take(n);
            if let Some(slot) = table.get_mut_at(place) {
                for (e, d) in slot.make_mut().iter_mut().zip(&mut dec) {
                    d.write(e, resolutions);
                }
            }
            // Whatever was not written (none: the prefix's entries are those decided) is
            // skipped.
            dec.for_each(drop);
        }
    }
    changes.clear();
    decided.clear();
    bgp.scratch.changes = changes;
    bgp.scratch.decided = decided;
    routes
}

/// In test builds, a decision kept is made again: the same route and the same entries (but
/// the deciding step, which the incumbent may change).
#[cfg(test)]
fn check_kept<'e>(ctx: &Ctx, rv: &mut Resolver, prefix: Ipv4Net, entries: &'e [Entry], work: &mut Work<'e>) {
    let again = decide_prefix(ctx, rv, prefix, entries, work);
    let stands = decided_route(ctx, prefix, entries, rv.resolutions, rv.sess);
    assert_eq!(again, stands, "{prefix}: a decision kept differs from one made again");
    assert!(
        entries.iter().zip(&work.dec).all(|(e, d)| Decided {
            decided_by: e.decided_by,
            ..d.clone()
        }
        .is(e, rv.resolutions)),
        "{prefix}: a decision kept differs from one made again"
    );
}

/// What a speaker's decision reads of its device and configuration, for each prefix.
struct Ctx<'a> {
    net: &'a Network,
    dev: DeviceId,
    flavor: BgpFlavor,
    max_paths: usize,
    relax: bool,
    /// BIRD's kernel protocol's export filter (None: no kernel protocol).
    kernel: Option<Prepared<'a>>,
}

/// Work vectors reused from prefix to prefix: a speaker decides thousands every recompute.
/// `dec` holds the last prefix's decision.
#[derive(Default)]
struct Work<'a> {
    dec: Vec<Decided>,
    idx: Vec<usize>,
    group: Vec<usize>,
    cands: Vec<Candidate<'a>>,
}

/// Decide one prefix over `entries` (into `work.dec`): resolve each path's next hop, select
/// the best and the multipath group; return the route it hands to forwarding.
fn decide_prefix<'e>(
    ctx: &Ctx,
    rv: &mut Resolver,
    prefix: Ipv4Net,
    entries: &'e [Entry],
    work: &mut Work<'e>,
) -> Option<Route> {
    let Work { dec, idx, group, cands } = work;
    let flavor = ctx.flavor;
    dec.clear();
    dec.extend(entries.iter().map(|e| Decided::start(e, rv.resolutions)));
    for (e, d) in entries.iter().zip(dec.iter_mut()) {
        resolve_entry(rv, e, d);
    }
    idx.clear();
    idx.extend((0..entries.len()).filter(|i| entries[*i].accepted && (flavor == BgpFlavor::Bird || dec[*i].valid)));
    cands.clear();
    cands.extend(idx.iter().map(|i| candidate(&entries[*i], &dec[*i], rv.sess)));
    let chosen = decision::select(flavor, cands);
    group.clear();
    if let Some((b, _)) = chosen {
        group.push(idx[b]);
        if ctx.max_paths > 1 && flavor != BgpFlavor::Bird {
            for (k, i) in idx.iter().enumerate() {
                let equal = decision::multipath_equal(flavor, ctx.relax, &cands[b], &cands[k]);
                if k != b && group.len() < ctx.max_paths && equal {
                    group.push(*i);
                }
            }
        }
    }
    for d in dec.iter_mut() {
        d.best = false;
        d.ecmp = EcmpRole::None;
        d.decided_by = None;
    }
    let (_, step) = chosen?;
    let best = group[0];
    dec[best].best = true;
    dec[best].decided_by = step;
    if group.len() > 1 {
        dec[best].ecmp = EcmpRole::Head;
        for i in &group[1..] {
            dec[*i].ecmp = EcmpRole::Member;
        }
    }
    let dests: Dests = group.iter().map(|i| &dec[*i].res.dest).collect();
    fib_route(ctx, prefix, &entries[best], &dests, rv.sess)
}

/// Where a prefix's selected paths go, the best path's first: one path but with multipath, and
/// made once per prefix decided (an allocation each as a `Vec`).
type Dests<'a> = smallvec::SmallVec<[&'a TableDest; 4]>;

/// The route of a prefix whose entries hold their decision: the best path, then the other
/// members of its multipath group in entry order, as `decide_prefix` groups them.
fn decided_route(ctx: &Ctx, prefix: Ipv4Net, entries: &[Entry], res: &Resolutions, sess: &SessFacts) -> Option<Route> {
    let best = entries.iter().find(|e| e.best)?;
    let dest = |e: &Entry| &res.get(e.resolved).dest;
    let dests: Dests = std::iter::once(dest(best))
        .chain(entries.iter().filter(|e| e.ecmp == EcmpRole::Member).map(dest))
        .collect();
    fib_route(ctx, prefix, best, &dests, sess)
}

/// What one recompute decides about an entry: its next hop resolved, and its part in the
/// selection.
#[derive(Clone, Debug)]
struct Decided {
    valid: bool,
    res: Resolution,
    best: bool,
    ecmp: EcmpRole,
    decided_by: Option<Step>,
}

impl Decided {
    /// Before resolving: the selection as it stands (the incumbent counts in some ties) and the
    /// IGP metric, which a path without a next hop keeps.
    fn start(e: &Entry, res: &Resolutions) -> Self {
        Decided {
            valid: false,
            res: Resolution {
                igp_metric: res.get(e.resolved).igp_metric,
                ..UNDECIDED
            },
            best: e.best,
            ecmp: e.ecmp,
            decided_by: e.decided_by,
        }
    }

    /// The entry already says this.
    fn is(&self, e: &Entry, res: &Resolutions) -> bool {
        self.valid == e.valid
            && self.res == *res.get(e.resolved)
            && self.best == e.best
            && self.ecmp == e.ecmp
            && self.decided_by == e.decided_by
    }

    fn write(self, e: &mut Entry, res: &mut Resolutions) {
        e.valid = self.valid;
        if *res.get(e.resolved) != self.res {
            e.resolved = res.id(&self.res);
        }
        e.best = self.best;
        e.ecmp = self.ecmp;
        e.decided_by = self.decided_by;
    }
}

type SessFacts = BTreeMap<SessionId, (bool, Ipv4Addr, Ipv4Addr, u32, bool)>;

/// Next-hop resolution during one speaker's decision. The tables do not change meanwhile, so
/// each next hop is looked up once, not once per path (a leaf holds a path per spine for every
/// prefix); BIRD's recursive next hops look at the covering prefixes of its table only (not a
/// map of every prefix's cover, which a node rebuilt every recompute for its one next hop).
struct Resolver<'a> {
    net: &'a Network,
    st: &'a State,
    dev: DeviceId,
    flavor: BgpFlavor,
    table: &'a Table,
    resolutions: &'a Resolutions,
    sess: &'a SessFacts,
    /// Next hops that are the device's own address.
    local: BTreeMap<Ipv4Addr, bool>,
    /// Through the IGP tables (`resolve`) and through BIRD's own table (`hostentry`).
    igp: BTreeMap<Ipv4Addr, (TableDest, NhMetric)>,
    hosts: BTreeMap<Ipv4Addr, (TableDest, NhMetric)>,
}

impl Resolver<'_> {
    fn is_local(&mut self, nh: Ipv4Addr) -> bool {
        let (net, st, dev) = (self.net, self.st, self.dev);
        *self
            .local
            .entry(nh)
            .or_insert_with(|| local_iface(net, st, dev, nh).is_some())
    }

    fn igp(&mut self, nh: Ipv4Addr) -> (TableDest, NhMetric) {
        let (net, st, dev, flavor) = (self.net, self.st, self.dev, self.flavor);
        self.igp
            .entry(nh)
            .or_insert_with(|| resolve(net, st, dev, flavor, nh))
            .clone()
    }

    /// BIRD resolves `gateway recursive` next hops in its own table (`hostentry`).
    fn recursive(&mut self, nh: Ipv4Addr) -> (TableDest, NhMetric) {
        if let Some(r) = self.hosts.get(&nh) {
            return r.clone();
        }
        let sess = self.sess;
        let covers = super::hostentry::covering(self.table, self.resolutions, |o| match o {
            Origin::Peer(s, _) => sess.get(s).is_none_or(|f| f.4),
            Origin::Local(_) => false,
        });
        let r = super::hostentry::resolve(covers, nh);
        self.hosts.insert(nh, r.clone());
        r
    }
}

fn resolve_entry(rv: &mut Resolver, e: &Entry, d: &mut Decided) {
    match &e.origin {
        Origin::Local(l) => {
            d.valid = true;
            d.res.nh_metric = None;
            d.res.igp_metric = 0;
            d.res.dest = match &l.dest {
                LocalDest::Blackhole => TableDest::Blackhole,
                LocalDest::Unreachable => TableDest::Unreachable,
                LocalDest::Hop(nh) => TableDest::Via(nh.clone()),
                LocalDest::Device(nh) => TableDest::Device(nh.clone()),
                LocalDest::Rib => TableDest::Unreachable,
            };
        }
        Origin::Peer(s, _) => {
            let recursive = rv.sess.get(s).is_none_or(|f| f.4);
            let Some(nh) = e.next_hop else {
                d.valid = false;
                d.res.dest = TableDest::Unreachable;
                d.res.nh_metric = Some(NhMetric::Unresolvable);
                return;
            };
            let (dest, metric) = if rv.flavor == BgpFlavor::Bird && recursive && !rv.is_local(nh) {
                rv.recursive(nh)
            } else {
                rv.igp(nh)
            };
            // `gateway direct`: the next hop must be on a connected network.
            let direct_ok = recursive || matches!(metric, NhMetric::Known(0));
            d.valid = !matches!(dest, TableDest::Unreachable) && direct_ok;
            d.res.igp_metric = match metric {
                NhMetric::Known(m) => m,
                NhMetric::Unknown => METRIC_UNKNOWN,
                NhMetric::Unresolvable => u32::MAX,
            };
            d.res.dest = if d.valid { dest } else { TableDest::Unreachable };
            d.res.nh_metric = Some(if d.valid { metric } else { NhMetric::Unresolvable });
        }
    }
}

fn candidate<'a>(e: &'a Entry, d: &Decided, sess: &SessFacts) -> Candidate<'a> {
    let (ebgp, rid, peer, peer_as) = match &e.origin {
        Origin::Peer(s, _) => sess
            .get(s)
            .map_or((false, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0), |f| {
                (f.0, f.1, f.2, f.3)
            }),
        Origin::Local(_) => (false, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, 0),
    };
    let local = matches!(e.origin, Origin::Local(_));
    Candidate {
        attrs: Some(&e.attrs),
        preference: e.preference,
        weight: 0,
        local,
        ebgp,
        reachable: d.valid,
        igp_metric: d.res.igp_metric,
        router_id: rid,
        peer_addr: peer,
        peer_as,
        arrival: e.arrival,
        selected: d.best,
    }
}

/// The route forwarding gets from this prefix's best path(s): on EOS a `B E`/`B I` RIB route
/// at the BGP distance (received paths only: originated ones are already in the RIB); on a
/// BIRD host what the kernel protocol exports (`proto bird`), except routes BIRD took from the
/// kernel or from interfaces. `dests`: where the selected paths go, the best path's first.
fn fib_route(ctx: &Ctx, prefix: Ipv4Net, best: &Entry, dests: &[&TableDest], sess: &SessFacts) -> Option<Route> {
    let (net, dev, flavor) = (ctx.net, ctx.dev, ctx.flavor);
    let best_dest = dests.first().copied()?;
    let d = net.device(dev);
    match flavor {
        BgpFlavor::Bird => {
            let kernel = ctx.kernel?;
            if let Origin::Local(l) = &best.origin {
                if l.protocol == "kernel1" || l.protocol == "direct1" {
                    return None;
                }
            }
            let exported = super::export::policy_result(kernel, prefix, best.next_hop, "kernel1")?;
            // The kernel protocol installs blackhole and unreachable routes as such
            // (sysdep/unix/krt.c `krt_capable`): an unresolvable best path becomes an
            // `unreachable` kernel route that shadows shorter prefixes.
            let (mut nexthops, blackhole, unreachable) = match best_dest {
                TableDest::Via(nh) | TableDest::Device(nh) => (smallvec![nh.clone()], false, false),
                TableDest::Multipath(v) => (v.iter().cloned().collect(), false, false),
                TableDest::Blackhole => (NextHops::new(), true, false),
                TableDest::Unreachable => (NextHops::new(), false, true),
            };
            // Calico's BIRD fork (projectcalico/bird `sysdep/linux/netlink.c` `nl_send_route`):
            // a gateway route whose export set `krt_tunnel` to an existing device goes out of
            // that device to the route's BGP next hop, `onlink` — not to the gateway `gateway
            // recursive` resolved, so a node in another subnet is the tunnel's far end. An
            // empty or unknown device name, a device route or a multipath route is installed
            // as BIRD resolved it.
            let tunnel = match exported.attr("krt_tunnel") {
                Some(Value::Str(name)) => net.iface_by_name(dev, name),
                _ => None,
            };
            let mut onlink = false;
            if let (Some(tunl), TableDest::Via(_), Some(gw)) = (tunnel, best_dest, exported.bgp_next_hop) {
                nexthops = smallvec![NextHop {
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
                linux_proto: Some(LinuxProto::Bird),
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
            let mut nexthops = NextHops::new();
            for dest in dests {
                match dest {
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
                linux_proto: Some(LinuxProto::Bgp),
                scope_link: false,
                onlink: false,
            })
        }
    }
}
