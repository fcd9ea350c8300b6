//! What each established session advertises (Adj-RIB-Out) and the UPDATEs that change it.
//! Per flavour: BIRD with ADD-PATH tx sends every route its export filter accepts (unresolvable
//! and non-best ones included), otherwise the best; EOS sends its best path only when it is
//! active in the RIB (unless `bgp advertise-inactive`); nothing goes back to the session it
//! came from, iBGP paths are not passed to iBGP peers without route reflection. Outgoing
//! attributes: the local AS prepended and next hop self on eBGP; next hop kept on iBGP. The
//! policy step of both directions (BIRD filters, FRR route-maps, `ebgp-requires-policy`) is here.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;
use rustc_hash::FxHashMap;

use super::adj::Paths;
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
use crate::model::bgp::Policy;
use crate::model::{BgpFlavor, BirdDaemon, Device, Network};

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

/// Bring every established session's Adj-RIB-Out up to date. What a session advertises for a
/// prefix follows from the prefix's paths in the speaker's table, the session's own facts
/// (`ExportKey`), its device's configuration and, on EOS, whether the prefix's route in the
/// forwarding table is BGP's (`before` holds the tables the last export saw). So a session is
/// re-derived whole only when its facts or its device's configuration changed
/// (`Bgp::rederive`, from each sync); otherwise only the prefixes whose paths changed since
/// the last export (`Speaker::dirty`) or whose EOS activity did. The others would come out as they are, so the
/// UPDATEs are the same, in the same order, as re-deriving every prefix of every session.
pub(super) fn export(bgp: &mut Bgp, net: &Network, st: &State, before: &[Before], now: u64, out: &mut Out) {
    let rederive = std::mem::take(&mut bgp.rederive);
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
        for sid in sessions {
            let s = &bgp.sessions[sid.idx()];
            if s.state != BgpState::Established {
                continue;
            }
            let key = ExportKey::of(s);
            let only = (!rederive.contains(&dev) && s.exported_as == Some(key)).then_some(&changed[..]);
            export_session(bgp, net, &mut per_device, now, sid, only, out);
            bgp.sessions[sid.idx()].exported_as = Some(key);
        }
    }
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

/// Re-derive session `sid`'s advertisements: for every prefix, or `only` those.
fn export_session(
    bgp: &mut Bgp,
    net: &Network,
    per_device: &mut DeviceExport,
    now: u64,
    sid: SessionId,
    only: Option<&[Held]>,
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
    let every: Vec<Held>;
    let prefixes = match only {
        Some(only) => only,
        None => {
            // The table's prefixes, then those advertised that it no longer has.
            let mut all: Vec<Held> = per_device.table.iter().map(|(p, v)| (*p, Some(&v[..]))).collect();
            all.extend(s.adj_out.prefixes().map(|p| (*p, None)));
            // Stable: of a prefix in both, the table's comes first and is kept.
            all.sort_by_key(|(p, _)| NetOrd(*p));
            all.dedup_by_key(|(p, _)| *p);
            every = all;
            &every[..]
        }
    };
    // Sized up front: a session's first export changes every prefix (grown one push at a
    // time, its reallocations were a hundredth of an eBGP fabric's run).
    let mut updates: Vec<(Ipv4Net, Paths)> = Vec::with_capacity(prefixes.len());
    let cx = Advertise {
        sessions: &bgp.sessions,
        dev: net.device(sp.device),
        sp,
        sid,
    };
    for &(prefix, entries) in prefixes {
        let want = cx.paths(prefix, entries, per_device, &mut bgp.attrs);
        // The sets are the attribute table's, as the Adj-RIB-Out's are: equal is the same.
        if bgp.sessions[sid.idx()].adj_out.get(&prefix) == &want[..] {
            continue;
        }
        updates.push((prefix, want));
    }
    if updates.is_empty() {
        return;
    }
    if bgp.wire.is_some() || peer.is_none() {
        let msg = update_message(&bgp.sessions[sid.idx()], &updates);
        if peer.is_none() {
            bgp.live_out.push(msg.clone());
        }
        log_wire(bgp, now, sid, BgpWire::Send(msg));
    }
    // A session's first advertisements are all new slots (later ones mostly replace theirs).
    let adj_out = &mut bgp.sessions[sid.idx()].adj_out;
    if adj_out.paths() == 0 {
        adj_out.reserve(updates.len());
    }
    let Some(peer) = peer else {
        let s = &mut bgp.sessions[sid.idx()];
        for (prefix, want) in updates {
            s.adj_out.set(prefix, want);
        }
        return;
    };
    // What a session sends at one instant leaves together (one burst of UPDATE messages) and
    // arrives after the sender's message delay, never before what it sent earlier.
    let flavor = bgp.sessions[sid.idx()].flavor;
    let delay = bgp.jitter.message_ms(flavor);
    let peer_gen = bgp.sessions[peer.idx()].gen;
    let s = &mut bgp.sessions[sid.idx()];
    let at = (now + delay).max(s.last_arrival);
    s.last_arrival = at;
    let mut burst = VecDeque::with_capacity(updates.len());
    for (prefix, want) in updates {
        s.adj_out.set(prefix, want.clone());
        burst.push_back((prefix, want));
    }
    out.push((
        at,
        Event::Update {
            to: peer,
            gen: peer_gen,
            updates: burst,
        },
    ));
}

/// The UPDATE that takes session `s` from what it advertised to `updates`: with ADD-PATH the
/// path ids no longer sent are withdrawn and new or changed paths announced (RFC 7911 §3: a
/// path id is replaced by announcing it again); without, one path per prefix or a withdrawal.
fn update_message(s: &Session, updates: &[(Ipv4Net, Paths)]) -> BgpMessage {
    let mut withdrawn = Vec::new();
    let mut announced = Vec::new();
    for (prefix, want) in updates {
        let had = s.adj_out.get(prefix);
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

/// What an export reads to say what session `sid` of speaker `sp` advertises.
struct Advertise<'a> {
    sessions: &'a [Session],
    dev: &'a Device,
    sp: &'a Speaker,
    sid: SessionId,
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
            if let Origin::Peer(from, _) = e.origin {
                if from == sid {
                    continue;
                }
                let from_s = &self.sessions[from.idx()];
                if from_s.internal && s.internal && !from_s.cfg.route_reflector_client && !s.cfg.route_reflector_client
                {
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
                next_hop: next_hop_out(s, e, src),
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
/// §5.1.3): the path's own on iBGP unless `next-hop-self`, and on eBGP only with BIRD's
/// `next hop keep`; the speaker's address for what it originates and wherever the path has none.
fn next_hop_out(s: &Session, e: &Entry, src: Ipv4Addr) -> Ipv4Addr {
    let local = matches!(e.origin, Origin::Local(_));
    let keep = !local
        && if s.internal {
            !s.cfg.next_hop_self
        } else {
            s.cfg.next_hop_keep
        };
    match e.next_hop {
        Some(nh) if keep => nh,
        _ => src,
    }
}
