//! What each established session advertises (Adj-RIB-Out) and the UPDATEs that change it.
//! Per flavour: BIRD with ADD-PATH tx sends every route its export filter accepts (unresolvable
//! and non-best ones included), otherwise the best; EOS sends its best path only when it is
//! active in the RIB (unless `bgp advertise-inactive`); nothing goes back to the session it
//! came from, iBGP paths are not passed to iBGP peers without route reflection. Outgoing
//! attributes: the local AS prepended and next hop self on eBGP; next hop kept on iBGP. The
//! policy step of both directions (BIRD filters, FRR route-maps, `ebgp-requires-policy`) is here.

use std::collections::{BTreeSet, VecDeque};
use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;
use rustc_hash::FxHashMap;

use super::adj::{AdjOut, Paths};
use super::attrs::AttrTable;
use super::filter::{run_filter, FilterRoute, Prepared, Verdict};
use super::prefix_map::NetOrd;
use super::route_map;
use super::session::{log_wire, Live, Session, SessionId};
use super::table::{Entry, Origin, Speaker, Table};
use super::{Bgp, Event, Out};
use crate::engine::bgp_state::{Advertised, BgpMessage, BgpState, BgpWire, PathAttrs, DEFAULT_LOCAL_PREF};
use crate::engine::fib_update::Before;
use crate::engine::state::{Fib, Proto, State};
use crate::model::bgp::{NextHopSelf, Policy};
use crate::model::{BgpFlavor, BirdDaemon, Device, DeviceId, Network};

/// What `policy` decides without running a filter (`Ok`: accepted or not), or the daemon whose
/// BIRD filter decides (`Err`). Asked for every path received and advertised, so a verdict
/// that needs no filter makes no route to run one on.
fn without_filter<'a>(daemon: Option<&'a BirdDaemon>, policy: &Policy) -> Result<bool, &'a BirdDaemon> {
    match (policy, daemon) {
        (Policy::All, _) | (Policy::Filter(_), None) => Ok(true),
        // Route-maps need the speaker's policies: `import_policy`/`export_policy` run them
        // before this is reached, and BIRD's kernel protocol never names one.
        (Policy::None | Policy::RouteMap(_), _) => Ok(false),
        (Policy::Filter(_), Some(d)) => Err(d),
    }
}

/// The route a BIRD filter starts from: the filters Calico writes read its `bgp_next_hop`.
fn filter_route(prefix: Ipv4Net, next_hop: Option<Ipv4Addr>, proto: &str) -> FilterRoute<'_> {
    let mut r = FilterRoute::new(prefix, proto);
    r.bgp_next_hop = next_hop;
    r
}

/// Does `policy` accept a route for `prefix`? BIRD filters run on the device's daemon; without
/// one (EOS) only `all`/`none` exist.
pub(crate) fn policy_accepts(
    daemon: Option<&BirdDaemon>,
    policy: &Policy,
    prefix: Ipv4Net,
    next_hop: Option<Ipv4Addr>,
    proto: &str,
) -> bool {
    without_filter(daemon, policy)
        .unwrap_or_else(|d| run_filter(d, policy, &mut filter_route(prefix, next_hop, proto)) == Verdict::Accept)
}

/// The route as a prepared policy (the kernel protocol's export) left it — the attributes it
/// set, such as Calico's `krt_tunnel` — or None when rejected.
pub(crate) fn policy_result<'a>(
    policy: Prepared<'a>,
    prefix: Ipv4Net,
    next_hop: Option<Ipv4Addr>,
    proto: &'a str,
) -> Option<FilterRoute<'a>> {
    let mut r = filter_route(prefix, next_hop, proto);
    (policy.run(&mut r) == Verdict::Accept).then_some(r)
}

/// The policy step of a received path (before it enters the table): the path as the import
/// policy left it and whether it was accepted. FRR's `ebgp-requires-policy` refuses every path
/// of an eBGP neighbour without an inbound policy (bgpd `bgp_update`: "inbound policy
/// missing"); a route-map may change the path (`bgp_input_modifier`).
pub(crate) fn import_policy(
    dev: &Device,
    policy: &Policy,
    internal: bool,
    prefix: Ipv4Net,
    attrs: Arc<PathAttrs>,
    next_hop: Ipv4Addr,
    proto: &str,
) -> (Arc<PathAttrs>, bool) {
    let speaker = dev.bgp.as_ref();
    if !internal && speaker.is_some_and(|c| c.ebgp_requires_policy) && *policy == Policy::All {
        return (attrs, false);
    }
    match policy {
        Policy::RouteMap(name) => match speaker.and_then(|c| route_map::evaluate(&c.policies, name, prefix)) {
            Some(sets) => {
                let mut a = (*attrs).clone();
                sets.apply(&mut a, 0);
                (Arc::new(a), true)
            }
            None => (attrs, false),
        },
        _ => {
            let ok = policy_accepts(dev.bird.as_ref(), policy, prefix, Some(next_hop), proto);
            (attrs, ok)
        }
    }
}

/// The attribute sets one device's export has made, by what `outgoing` reads of the path
/// and of the session. A prefix's best path leaves all of a leaf's sessions, or all of a
/// spine's, with one set (the next hop, each session's own address, goes beside it:
/// `next_hop_out`): each path's set is made and looked up in the attribute table once per
/// export rather than once per (session, prefix), as FRR formats an UPDATE once per update
/// group and rewrites the next hop per peer (`bpacket_reformat_for_peer`). Made and built per
/// set, these were a quarter of `converge/ebgp-4x32x16`'s export. A path is keyed by its
/// set's address: the table holds every set its entries name until the device's export ends,
/// when this is dropped, so no address is reused under it.
#[derive(Default)]
struct Outgoing(FxHashMap<OutKey, Arc<PathAttrs>>);

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct OutKey {
    path: usize,
    local: bool,
    local_as: u32,
    internal: bool,
}

impl Outgoing {
    fn get(&mut self, s: &Session, e: &Entry, table: &mut AttrTable) -> Arc<PathAttrs> {
        let key = OutKey {
            path: Arc::as_ptr(&e.attrs) as usize,
            local: matches!(e.origin, Origin::Local(_)),
            local_as: s.local_as,
            internal: s.internal,
        };
        self.0
            .entry(key)
            .or_insert_with(|| table.intern(outgoing(s, e)))
            .clone()
    }
}

/// An update group's Adj-RIB-Out: what each member advertises but for the next hop, its own
/// address, and the paths that came from the member itself (`AdjOut::exception`). Sessions
/// join when their advertisements are derived whole (a new connection, a re-derived device)
/// and leave when their facts change or they go down; a re-derived device's groups are made
/// again. The group's slots carry the next hop of the session they were derived for, never
/// read: each member advertises its own (`AdjOut::own_next_hop`).
#[derive(Clone, Debug)]
pub(super) struct OutGroup {
    sig: GroupSig,
    out: AdjOut,
}

/// What a session's advertisements follow from besides the speaker's table, its device and
/// which paths came from the session itself — for a session whose next hop is always its own
/// address (eBGP without `next hop keep`, iBGP with a `next-hop-self` that covers reflected
/// paths too), simulated on both ends.
/// Sessions with equal facts advertise the same, but for their next hop and their own paths.
#[derive(Clone, Debug, PartialEq)]
struct GroupSig {
    internal: bool,
    local_as: u32,
    add_path_tx: bool,
    route_reflector_client: bool,
    export: Policy,
}

impl GroupSig {
    fn of(s: &Session) -> Option<GroupSig> {
        let own_next_hop = if s.internal {
            s.cfg.next_hop_self == NextHopSelf::All
        } else {
            !s.cfg.next_hop_keep
        };
        let grouped = own_next_hop
            && s.state == BgpState::Established
            && s.live == Live::Simulated
            && s.peer.is_some()
            && s.local_address().is_some();
        grouped.then(|| GroupSig {
            internal: s.internal,
            local_as: s.local_as,
            add_path_tx: s.add_path_tx,
            route_reflector_client: s.cfg.route_reflector_client,
            export: s.cfg.export.clone(),
        })
    }
}

/// What a session advertises for a prefix: paths of its own Adj-RIB-Out (empty: nothing), or
/// its update group's, each with the session's own address as next hop.
enum Had<'a> {
    Own(&'a [Advertised]),
    Group(&'a [Advertised], Ipv4Addr),
}

impl Had<'_> {
    /// What session `s` advertises for `prefix`.
    fn of<'a>(s: &'a Session, groups: &'a [OutGroup], prefix: &Ipv4Net) -> Had<'a> {
        let own = &s.adj_out;
        match (own.group, own.exception(prefix)) {
            (Some(g), None) => Had::Group(groups[g].out.get(prefix), own.own_next_hop),
            (_, mine) => Had::Own(mine.unwrap_or_default()),
        }
    }

    /// The same as `want`. (The sets are the attribute table's, as the Adj-RIB-Out's are:
    /// equal is the same.)
    fn is(&self, want: &[Advertised]) -> bool {
        match self {
            Had::Own(own) => *own == want,
            Had::Group(paths, next_hop) => {
                same_but_next_hop(paths, want) && want.iter().all(|w| w.next_hop == *next_hop)
            }
        }
    }

    fn paths(&self) -> Paths {
        match self {
            Had::Own(own) => own.iter().cloned().collect(),
            Had::Group(paths, next_hop) => paths
                .iter()
                .map(|a| Advertised {
                    next_hop: *next_hop,
                    ..a.clone()
                })
                .collect(),
        }
    }
}

/// The same paths but for their next hops (a member's and its group's).
fn same_but_next_hop(a: &[Advertised], b: &[Advertised]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.id == y.id && x.attrs == y.attrs)
}

/// Session `s` leaves its update group: what it advertises becomes its own Adj-RIB-Out.
fn leave_group(s: &mut Session, groups: &[OutGroup]) {
    let Some(g) = s.adj_out.group else { return };
    // A prefix both hold comes twice, to the same paths: the second sets its slot again.
    let advertised = groups[g]
        .out
        .prefixes()
        .chain(s.adj_out.prefixes())
        .map(|p| (*p, Had::of(s, groups, p).paths()))
        .collect();
    s.adj_out.leave_group(advertised);
}

/// Bring every established session's Adj-RIB-Out up to date. What a session advertises for a
/// prefix follows from the prefix's paths in the speaker's table, the session's own facts
/// (`ExportKey`), its device's configuration and, on EOS, whether the prefix's route in the
/// forwarding table is BGP's (`before` holds the tables the last export saw). So a session is
/// re-derived whole only when its facts or its device's configuration changed
/// (`Bgp::rederive`, from each sync); otherwise only the prefixes whose paths changed since
/// the last export (`Speaker::dirty`) or whose EOS activity did. The others would come out as they are, so the
/// UPDATEs are the same, in the same order, as re-deriving every prefix of every session.
/// Update groups (`OutGroup`) change what is kept, not what is sent: each member's UPDATEs are
/// the difference between what it advertised and what it should, as without them.
pub(super) fn export(bgp: &mut Bgp, net: &Network, st: &State, before: &[Before], now: u64, out: &mut Out) {
    let rederive = std::mem::take(&mut bgp.rederive);
    bgp.groups.resize_with(net.devices.len(), Vec::new);
    // A re-derived device's sessions leave their groups, which are made again: their facts
    // may have changed with the configuration.
    if rederive.iter().any(|d| !bgp.groups[d.idx()].is_empty()) {
        for s in bgp.sessions.iter_mut().filter(|s| rederive.contains(&s.device)) {
            leave_group(s, &bgp.groups[s.device.idx()]);
        }
        for d in &rederive {
            bgp.groups[d.idx()].clear();
        }
    }
    let devices: Vec<_> = bgp.speakers.keys().collect();
    for dev in devices {
        let Some(sp) = bgp.speakers.get_mut(&dev) else { continue };
        let sessions = sp.sessions.clone();
        let mut dirty = std::mem::take(&mut sp.dirty);
        if sp.flavor == BgpFlavor::Eos {
            if let Some(old) = before.get(dev.idx()) {
                dirty.extend(old.bgp_activity_changed(&st.devices[dev.idx()].fib));
            }
        }
        // A merge sort: the list is a few ascending runs (each UPDATE burst received, the
        // decision's changes, all in prefix order), which it finds and merges; a quicksort
        // of it was a twentieth of an eBGP fabric's run.
        dirty.sort_by_key(|p| NetOrd(*p));
        dirty.dedup();
        // Each changed prefix's paths are looked up once for all the device's sessions (a
        // leaf's node and spine sessions each searched the table for every prefix: a fifth of
        // the export). The table is held here, not borrowed from the speaker: the sessions'
        // Adj-RIBs-Out and the attribute table change while it is read, the table does not.
        let table = Arc::clone(&sp.table);
        let changed: Vec<Held> = dirty.iter().map(|p| (*p, table.get(p).map(|v| &v[..]))).collect();
        let mut per_device = DeviceExport {
            table: &table,
            activity: Activity {
                fib: &st.devices[dev.idx()].fib,
                known: FxHashMap::default(),
            },
            made: Outgoing::default(),
        };
        let mut groups = std::mem::take(&mut bgp.groups[dev.idx()]);
        let plan = plan_groups(bgp, &mut groups, &sessions, &rederive, dev);
        let derived: Vec<Option<Vec<(Ipv4Net, Paths)>>> = groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let who = plan.iter().find(|m| m.group == Some(g))?;
                let full = !plan.iter().any(|m| m.group == Some(g) && m.only);
                let list = if full {
                    every(&table, &group.out)
                } else {
                    changed.clone()
                };
                let cx = Advertise {
                    sessions: &bgp.sessions,
                    dev: net.device(dev),
                    sp: bgp.speakers.get(&dev)?,
                    sid: who.sid,
                    exclude: None,
                };
                Some(
                    list.into_iter()
                        .map(|(p, entries)| (p, cx.paths(p, entries, &mut per_device, &mut bgp.attrs)))
                        .collect(),
                )
            })
            .collect();
        for m in &plan {
            let only = m.only.then_some(&changed[..]);
            let member = m.group.map(|g| Member {
                index: g,
                group: &groups[g],
                derived: derived[g].as_deref().unwrap_or_default(),
                next: 0,
            });
            export_session(bgp, net, &mut per_device, now, m.sid, only, &groups, member, out);
            bgp.sessions[m.sid.idx()].exported_as = Some(m.key);
        }
        for (group, derived) in groups.iter_mut().zip(derived) {
            for (p, paths) in derived.unwrap_or_default() {
                group.out.set(p, paths);
            }
        }
        // A group no session is in keeps nothing: whoever joins it next derives it whole.
        for (g, group) in groups.iter_mut().enumerate() {
            if !sessions
                .iter()
                .any(|sid| bgp.sessions[sid.idx()].adj_out.group == Some(g))
            {
                group.out.clear();
            }
        }
        bgp.groups[dev.idx()] = groups;
    }
}

/// One established session's part in its device's export.
struct Planned {
    sid: SessionId,
    key: ExportKey,
    /// Only the changed prefixes (else every one).
    only: bool,
    /// The update group it is in or joins (an index into the device's groups).
    group: Option<usize>,
}

/// The device's established sessions, in order, each with what its export re-derives and the
/// update group it ends in. A session whose facts changed leaves its group first (what it
/// advertised is known only with the group as it stands); a session re-derived whole joins
/// the group of its facts, made if there is none — when another established session shares
/// them. Alone, a group would hold what the session's peer sent it besides what it
/// advertises (a Calico node's export takes every pool route, the leaf sent it those) and the
/// session would keep each of them as its own difference, withheld: twice the slots of
/// keeping what it advertises. (bgpd sends a one-peer subgroup nothing of its peer's own,
/// `subgroup_announce_check`'s `onlypeer`.)
fn plan_groups(
    bgp: &mut Bgp,
    groups: &mut Vec<OutGroup>,
    sessions: &[SessionId],
    rederive: &BTreeSet<DeviceId>,
    dev: DeviceId,
) -> Vec<Planned> {
    let sigs: Vec<Option<GroupSig>> = sessions
        .iter()
        .map(|sid| GroupSig::of(&bgp.sessions[sid.idx()]))
        .collect();
    let shared = |sig: &GroupSig| sigs.iter().flatten().filter(|s| *s == sig).nth(1).is_some();
    let mut plan = Vec::with_capacity(sessions.len());
    for (&sid, sig) in sessions.iter().zip(&sigs) {
        let s = &mut bgp.sessions[sid.idx()];
        if s.state != BgpState::Established {
            // Down, it was cleared and left; otherwise what it advertised stays known.
            leave_group(s, groups);
            continue;
        }
        let key = ExportKey::of(s);
        let only = !rederive.contains(&dev) && s.exported_as == Some(key);
        let stays = s
            .adj_out
            .group
            .is_some_and(|g| only && sig.as_ref() == Some(&groups[g].sig));
        if s.adj_out.group.is_some() && !stays {
            leave_group(s, groups);
        }
        let group = match sig {
            _ if stays => s.adj_out.group,
            Some(sig) if !only && shared(sig) => Some(groups.iter().position(|g| g.sig == *sig).unwrap_or_else(|| {
                groups.push(OutGroup {
                    sig: sig.clone(),
                    out: AdjOut::default(),
                });
                groups.len() - 1
            })),
            _ => None,
        };
        plan.push(Planned { sid, key, only, group });
    }
    plan
}

/// Every prefix of the table, then those `out` advertises that the table no longer has.
fn every<'t>(table: &'t Table, out: &AdjOut) -> Vec<Held<'t>> {
    let mut all: Vec<Held> = table.iter().map(|(p, v)| (*p, Some(&v[..]))).collect();
    all.extend(out.prefixes().map(|p| (*p, None)));
    // Stable: of a prefix in both, the table's comes first and is kept.
    all.sort_by_key(|(p, _)| NetOrd(*p));
    all.dedup_by_key(|(p, _)| *p);
    all
}

/// A prefix and its paths in the speaker's table (None: it has none).
type Held<'t> = (Ipv4Net, Option<&'t [Entry]>);

/// What one device's export keeps while it goes over the device's sessions.
struct DeviceExport<'a> {
    /// The speaker's table.
    table: &'a Table,
    activity: Activity<'a>,
    made: Outgoing,
}

/// Whether a prefix's route in an EOS speaker's forwarding table is BGP's, looked up once per
/// prefix of an export rather than once per session and prefix: a leaf has a session per
/// node and per spine, and the per-session range searches of its table were a twentieth of
/// an eBGP fabric's run.
struct Activity<'a> {
    fib: &'a Fib,
    known: FxHashMap<Ipv4Net, bool>,
}

impl Activity<'_> {
    fn active(&mut self, prefix: Ipv4Net) -> bool {
        let fib = self.fib;
        *self.known.entry(prefix).or_insert_with(|| {
            fib.with_prefix(prefix)
                .next()
                .is_some_and(|r| matches!(r.proto, Proto::BgpExternal | Proto::BgpInternal))
        })
    }
}

/// What of a session, besides the table and the configuration, decides what it advertises: a
/// new connection (`gen`) starts from an empty Adj-RIB-Out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExportKey {
    gen: u32,
    live: Live,
    peer: Option<SessionId>,
    add_path_tx: bool,
    source: Option<Ipv4Addr>,
}

impl ExportKey {
    fn of(s: &Session) -> Self {
        ExportKey {
            gen: s.gen,
            live: s.live,
            peer: s.peer,
            add_path_tx: s.add_path_tx,
            source: s.local_address(),
        }
    }
}

/// A session's update group in its export: the group as the last export left it and what
/// this export derived for it (by prefix, in prefix order), read in prefix order from
/// `next`.
struct Member<'g> {
    index: usize,
    group: &'g OutGroup,
    derived: &'g [(Ipv4Net, Paths)],
    next: usize,
}

impl Member<'_> {
    /// The group's paths for `prefix` after this export; the prefixes asked ascend.
    fn paths(&mut self, prefix: Ipv4Net) -> &[Advertised] {
        let rest = &self.derived[self.next..];
        self.next += rest.partition_point(|(p, _)| NetOrd(*p) < NetOrd(prefix));
        match self.derived.get(self.next) {
            Some((p, paths)) if *p == prefix => paths,
            _ => self.group.out.get(&prefix),
        }
    }
}

/// Re-derive session `sid`'s advertisements: for every prefix, or `only` those. In an update
/// group (`member`) it keeps only where it differs from the group; one derived whole (`only`
/// None) joins it.
#[allow(clippy::too_many_arguments)]
fn export_session(
    bgp: &mut Bgp,
    net: &Network,
    per_device: &mut DeviceExport,
    now: u64,
    sid: SessionId,
    only: Option<&[Held]>,
    groups: &[OutGroup],
    mut member: Option<Member>,
    out: &mut Out,
) {
    let s = &bgp.sessions[sid.idx()];
    // A real speaker's session has no simulated peer: its UPDATEs leave through `live_out`.
    let peer = match (s.live, s.peer) {
        (Live::Real, _) => None,
        (_, Some(p)) => Some(p),
        (_, None) => return,
    };
    let Some(sp) = bgp.speakers.get(&s.device) else { return };
    let every_prefix: Vec<Held>;
    let prefixes = match only {
        Some(only) => only,
        None => {
            every_prefix = every(per_device.table, &s.adj_out);
            &every_prefix[..]
        }
    };
    // Sized up front: a session's first export changes every prefix (grown one push at a
    // time, its reallocations were a hundredth of an eBGP fabric's run).
    let mut updates: Vec<(Ipv4Net, Paths, Paths)> = Vec::with_capacity(prefixes.len());
    // In an update group: what the session keeps of its own, where that changes.
    let mut kept: Vec<Kept> = Vec::new();
    let joins = member.is_some() && only.is_none();
    let cx = Advertise {
        sessions: &bgp.sessions,
        dev: net.device(sp.device),
        sp,
        sid,
        exclude: Some(sid),
    };
    let own = &bgp.sessions[sid.idx()];
    for &(prefix, entries) in prefixes {
        let want = cx.paths(prefix, entries, per_device, &mut bgp.attrs);
        let had = Had::of(own, groups, &prefix);
        let changed = !had.is(&want);
        if let Some(m) = &mut member {
            // Kept where it changed, and where the group's change makes it differ from the
            // group or no longer differ (its own path appearing: the group advertises it,
            // the session does not).
            let same = same_but_next_hop(&want, m.paths(prefix));
            let differed = !joins && matches!(had, Had::Own(_));
            if joins || changed || same == differed {
                let before = match had {
                    Had::Own(p) | Had::Group(p, _) => p.len(),
                };
                kept.push(Kept {
                    prefix,
                    paths: want.clone(),
                    before,
                    same,
                });
            }
        }
        if changed {
            updates.push((prefix, had.paths(), want));
        }
    }
    if !updates.is_empty() && (bgp.wire.is_some() || peer.is_none()) {
        let msg = update_message(&bgp.sessions[sid.idx()], &updates);
        if peer.is_none() {
            bgp.live_out.push(msg.clone());
        }
        log_wire(bgp, now, sid, BgpWire::Send(msg));
    }
    keep_advertised(&mut bgp.sessions[sid.idx()], member.as_ref(), joins, &updates, kept);
    if updates.is_empty() {
        return;
    }
    let Some(peer) = peer else { return };
    // What a session sends at one instant leaves together (one burst of UPDATE messages) and
    // arrives after the sender's message delay, never before what it sent earlier.
    let flavor = bgp.sessions[sid.idx()].flavor;
    let delay = bgp.jitter.message_ms(flavor);
    let peer_gen = bgp.sessions[peer.idx()].gen;
    let s = &mut bgp.sessions[sid.idx()];
    let at = (now + delay).max(s.last_arrival);
    s.last_arrival = at;
    let burst: VecDeque<(Ipv4Net, Paths)> = updates.into_iter().map(|(p, _, want)| (p, want)).collect();
    out.push((
        at,
        Event::Update {
            to: peer,
            gen: peer_gen,
            updates: burst,
        },
    ));
}

/// A prefix a group member keeps: what it advertises, how many paths it advertised before,
/// and whether that is the group's (then nothing is kept of its own).
struct Kept {
    prefix: Ipv4Net,
    paths: Paths,
    before: usize,
    same: bool,
}

/// Keep what session `s` now advertises: `updates` (prefix, before, now) in its own
/// Adj-RIB-Out, or as a member of an update group `kept`, where it differs from the group. A
/// session that `joins` its group (`kept`: every prefix) keeps from then on only those
/// differences.
fn keep_advertised(
    s: &mut Session,
    member: Option<&Member>,
    joins: bool,
    updates: &[(Ipv4Net, Paths, Paths)],
    kept: Vec<Kept>,
) {
    match member {
        Some(m) => {
            if joins {
                let own = s.local_address().unwrap_or(Ipv4Addr::UNSPECIFIED);
                s.adj_out.join_group(m.index, own);
            }
            for k in kept {
                let before = if joins { 0 } else { k.before };
                s.adj_out.set_member(k.prefix, k.paths, before, k.same);
            }
        }
        None => {
            // A session's first advertisements are all new slots (later ones mostly replace theirs).
            if s.adj_out.paths() == 0 {
                s.adj_out.reserve(updates.len());
            }
            for (prefix, _, want) in updates {
                s.adj_out.set(*prefix, want.clone());
            }
        }
    }
}

/// The UPDATE that takes session `s` from what it advertised to what it should, per prefix
/// (prefix, before, now): with ADD-PATH the path ids no longer sent are withdrawn and new or
/// changed paths announced (RFC 7911 §3: a path id is replaced by announcing it again);
/// without, one path per prefix or a withdrawal.
fn update_message(s: &Session, updates: &[(Ipv4Net, Paths, Paths)]) -> BgpMessage {
    let mut withdrawn = Vec::new();
    let mut announced = Vec::new();
    for (prefix, had, want) in updates {
        for h in had {
            if !want.iter().any(|w| w.id == h.id) {
                withdrawn.push((*prefix, h.id));
            }
        }
        for w in want {
            if !had.contains(w) {
                announced.push((*prefix, w.clone()));
            }
        }
    }
    BgpMessage::Update {
        add_path: s.add_path_tx,
        withdrawn,
        announced,
    }
}

/// What an export reads to say what session `sid` of speaker `sp` advertises. `exclude`: the
/// session whose own paths are not sent back to it — `sid` itself, or none for what its
/// update group advertises.
struct Advertise<'a> {
    sessions: &'a [Session],
    dev: &'a Device,
    sp: &'a Speaker,
    sid: SessionId,
    exclude: Option<SessionId>,
}

impl Advertise<'_> {
    /// The paths the session should be advertising for `prefix` now, by path id.
    fn paths(
        &self,
        prefix: Ipv4Net,
        entries: Option<&[Entry]>,
        per_device: &mut DeviceExport,
        table: &mut AttrTable,
    ) -> Paths {
        let (sp, sid, dev) = (self.sp, self.sid, self.dev);
        let s = &self.sessions[sid.idx()];
        let Some(entries) = entries else {
            return Paths::new();
        };
        let all_paths = s.add_path_tx;
        let chosen = entries.iter().filter(|e| e.accepted).filter(|e| {
            if all_paths {
                sp.flavor == BgpFlavor::Bird || e.valid
            } else {
                e.best
            }
        });
        if sp.flavor == BgpFlavor::Eos && !all_paths {
            let advertise_inactive = dev.bgp.as_ref().is_some_and(|c| c.advertise_inactive);
            if let Some(best) = chosen.clone().next() {
                let received = matches!(best.origin, Origin::Peer(..));
                if received && !advertise_inactive && !per_device.activity.active(prefix) {
                    return Paths::new();
                }
            }
        }
        let mut out = Paths::new();
        for e in chosen {
            let mut reflected = false;
            if let Origin::Peer(from, _) = e.origin {
                if Some(from) == self.exclude {
                    continue;
                }
                let from_s = &self.sessions[from.idx()];
                reflected = from_s.internal && s.internal;
                if reflected && !from_s.cfg.route_reflector_client && !s.cfg.route_reflector_client {
                    continue;
                }
            }
            let proto = match &e.origin {
                Origin::Peer(from, _) => self.sessions[from.idx()].cfg.name.as_deref().unwrap_or_default(),
                Origin::Local(l) => l.protocol,
            };
            let Some(src) = s.local_address() else { continue };
            let Some(attrs) = self.export_policy(e, prefix, proto, &mut per_device.made, table) else {
                continue;
            };
            out.push(Advertised {
                id: if all_paths { e.src_id } else { 0 },
                next_hop: next_hop_out(s, e, src, reflected),
                attrs,
            });
        }
        out.sort_by_key(|a| a.id);
        out
    }

    /// The policy step of an advertisement: the attributes path `e` leaves with on session `s`
    /// (shared: the attribute table's), or None when the export policy stops it. FRR's
    /// `ebgp-requires-policy` sends nothing to an eBGP neighbour without an outbound policy
    /// (`subgroup_announce_check`). A route-map's sets apply to the path after the MED of another
    /// AS is dropped; a prepend goes behind the speaker's own AS, which bgpd adds when it encodes
    /// the UPDATE; LOCAL_PREF never leaves on eBGP.
    fn export_policy(
        &self,
        e: &Entry,
        prefix: Ipv4Net,
        proto: &str,
        made: &mut Outgoing,
        table: &mut AttrTable,
    ) -> Option<Arc<PathAttrs>> {
        let (dev, s) = (self.dev, &self.sessions[self.sid.idx()]);
        let speaker = dev.bgp.as_ref();
        if !s.internal && speaker.is_some_and(|c| c.ebgp_requires_policy) && s.cfg.export == Policy::All {
            return None;
        }
        match &s.cfg.export {
            Policy::RouteMap(name) => {
                let mut sets = speaker.and_then(|c| route_map::evaluate(&c.policies, name, prefix))?;
                if !s.internal {
                    sets.local_pref = None;
                }
                let mut attrs = outgoing(s, e);
                sets.apply(&mut attrs, usize::from(!s.internal));
                Some(table.intern(attrs))
            }
            policy => {
                policy_accepts(dev.bird.as_ref(), policy, prefix, e.next_hop, proto).then(|| made.get(s, e, table))
            }
        }
    }
}

/// Attributes but the NEXT_HOP as they leave on session `s` (RFC 4271 §5.1; BIRD
/// `bgp_update_attrs`): on iBGP LOCAL_PREF set, on eBGP the local AS prepended, LOCAL_PREF
/// dropped and a MED kept only from this AS.
fn outgoing(s: &Session, e: &Entry) -> PathAttrs {
    let a = &*e.attrs;
    let local = matches!(e.origin, Origin::Local(_));
    if s.internal {
        PathAttrs {
            local_pref: Some(a.local_pref.unwrap_or(DEFAULT_LOCAL_PREF)),
            ..a.clone()
        }
    } else {
        let mut as_path = Vec::with_capacity(a.as_path.len() + 1);
        as_path.push(s.local_as);
        as_path.extend_from_slice(&a.as_path);
        PathAttrs {
            as_path,
            origin: a.origin,
            local_pref: None,
            med: if local { a.med } else { None },
        }
    }
}

/// The NEXT_HOP path `e` leaves with on session `s`, whose own address is `src` (RFC 4271
/// §5.1.3): the path's own on iBGP unless `next-hop-self` covers it (a `reflected` path: learned
/// and sent over iBGP), and on eBGP only with BIRD's `next hop keep`; the speaker's address for
/// what it originates and wherever the path has none.
fn next_hop_out(s: &Session, e: &Entry, src: Ipv4Addr, reflected: bool) -> Ipv4Addr {
    let local = matches!(e.origin, Origin::Local(_));
    let keep = !local
        && if s.internal {
            match s.cfg.next_hop_self {
                NextHopSelf::Off => true,
                NextHopSelf::NotReflected => reflected,
                NextHopSelf::All => false,
            }
        } else {
            s.cfg.next_hop_keep
        };
    match e.next_hop {
        Some(nh) if keep => nh,
        _ => src,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{converge, Engine};
    use crate::gen::{CalicoMode, LeafSpine, Underlay};
    use crate::input::topology::parse_topology;

    /// For every established session: what it advertises, read through its update group,
    /// against what it should advertise derived from scratch; and how many sessions are in a
    /// group, how many slots they keep of their own and how many paths they advertise.
    fn check_every_session(e: &mut Engine) -> (usize, usize, usize) {
        let (net, st, bgp) = (&e.net, &e.state, &mut e.bgp);
        let (mut members, mut own_slots, mut advertised) = (0, 0, 0);
        for dev in bgp.speakers.keys().collect::<Vec<_>>() {
            let sp = bgp.speakers.get(&dev).expect("speaker").clone();
            let groups = bgp.groups.get(dev.idx()).cloned().unwrap_or_default();
            let mut per_device = DeviceExport {
                table: &sp.table,
                activity: Activity {
                    fib: &st.devices[dev.idx()].fib,
                    known: FxHashMap::default(),
                },
                made: Outgoing::default(),
            };
            for &sid in &sp.sessions {
                let s = &bgp.sessions[sid.idx()];
                if s.state != BgpState::Established {
                    continue;
                }
                if s.adj_out.group.is_some() {
                    members += 1;
                    own_slots += s.adj_out.prefixes().count();
                    advertised += s.adj_out.paths() as usize;
                }
                let cx = Advertise {
                    sessions: &bgp.sessions,
                    dev: net.device(dev),
                    sp: &sp,
                    sid,
                    exclude: Some(sid),
                };
                let mut paths = 0;
                for (prefix, entries) in every(&sp.table, &s.adj_out) {
                    let want = cx.paths(prefix, entries, &mut per_device, &mut bgp.attrs);
                    let had = Had::of(s, &groups, &prefix).paths();
                    assert_eq!(
                        had,
                        want,
                        "{} session to {} for {prefix}",
                        net.device(dev).name,
                        s.neighbor
                    );
                    paths += want.len();
                }
                assert_eq!(
                    s.adj_out.paths() as usize,
                    paths,
                    "{} to {}",
                    net.device(dev).name,
                    s.neighbor
                );
            }
        }
        (members, own_slots, advertised)
    }

    /// A 2x4x2 eBGP fabric with Calico peering `calico`, converged, checked, then through a
    /// spine–leaf link's failure and repair, checked after each.
    fn group_members_through_failures_and_repairs(calico: CalicoMode) {
        let text = LeafSpine {
            underlay: Underlay::Ebgp,
            calico,
            pods_per_node: 1,
            ..LeafSpine::new(2, 4, 2)
        }
        .generate();
        let loaded = parse_topology(&text, "fabric.yaml").expect("generated topology");
        let (mut e, c) = converge(loaded.net);
        assert!(c.quiet);
        // Each leaf's spine sessions form one group (eBGP, its AS, no policy), and so do its
        // node sessions (eBGP too, or iBGP to RR clients with `next-hop-self`), as do each
        // spine's leaf sessions; each member keeps only what came from its own peer.
        let (members, own, advertised) = check_every_session(&mut e);
        assert_eq!(members, 4 * 4 + 2 * 4, "every leaf and spine session is in a group");
        assert!(
            own * 3 < advertised,
            "members keep {own} slots of their own for {advertised} paths"
        );
        let spine = e.net.device_by_name("spine-1").expect("spine-1");
        let port = e.net.iface_by_name(spine, "Ethernet1").expect("Ethernet1");
        for broken in [true, false] {
            e.set_severed(&[port], broken);
            assert!(e.run_until_quiet().quiet);
            check_every_session(&mut e);
        }
    }

    #[test]
    fn a_group_member_advertises_what_it_would_alone_through_failures_and_repairs() {
        group_members_through_failures_and_repairs(CalicoMode::Tor);
    }

    /// The leaf's iBGP sessions to its route-reflector clients, `next-hop-self` on all of them:
    /// reflected paths leave each member with its own address too.
    #[test]
    fn reflector_clients_with_next_hop_self_advertise_as_a_group() {
        group_members_through_failures_and_repairs(CalicoMode::Rr);
    }
}
