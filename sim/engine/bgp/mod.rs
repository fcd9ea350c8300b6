//! BGP: one speaker per device (EOS `router bgp`, BIRD's `protocol bgp`s), sessions in virtual
//! time over the simulated network, UPDATEs as delayed events, a table per speaker with
//! best-path selection per flavour (`decision`), recursive next hops through the IGP tables,
//! ADD-PATH, and the routes each speaker hands to forwarding.
//!
//! Module map: `attrs` (the shared attribute sets), `adj` (a session's Adj-RIB counters and
//! Adj-RIB-Out), `session` (connect, OPEN checks, hold timer), `table` (local routes, next-hop
//! resolution, selection, what goes to the FIB, the snapshots views read), `prefix_map` (the
//! chunked copy-on-write map a table is kept in),
//! `hostentry` (BIRD's recursive next-hop
//! lookup in its own table), `live` (a real speaker in place of one session's peer,
//! `fabsim peer`), `export` (Adj-RIB-Out per session and the
//! UPDATEs that change it, and the policy step), `route_map` (FRR route-maps and
//! prefix-lists), `jitter` (the seeded timer randomisation and message delays).

mod adj;
mod attrs;
pub mod decision;
mod export;
pub mod filter;
mod hostentry;
mod jitter;
pub(crate) mod live;
mod prefix_map;
mod route_map;
mod session;
mod speakers;
mod table;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::bgp_state::{BgpTable, BgpView, BgpWireRecord};
use super::state::State;
use crate::model::{BgpConfig, BirdDaemon, DeviceId, Network};
use ipnet::Ipv4Net;

pub(crate) use jitter::Jitter;
pub use jitter::{MessageDelays, DEFAULT_MESSAGE_DELAY_MS};
pub(crate) use session::SessionId;
pub(crate) use table::TableSnapshot;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    /// The active side of a session opens (or retries) its TCP connection.
    Connect { session: SessionId, gen: u32 },
    /// Periodic liveness check of an established session (keepalives).
    Keepalive { session: SessionId, gen: u32 },
    /// The hold timer of a session that stopped hearing keepalives runs out (one-shot, so a
    /// run does not count as quiet while a session is dying).
    HoldExpire { session: SessionId, gen: u32 },
    /// UPDATEs arrive, one prefix each: for each, the complete set of paths the sender now
    /// advertises for it on this session (an empty set withdraws). What one session sent at one
    /// instant is one event (one queue slot instead of one per prefix, most of an eBGP fabric's
    /// queue), delivered one prefix per engine step (`take_first`), as separate events were.
    Update {
        to: SessionId,
        gen: u32,
        updates: VecDeque<(Ipv4Net, adj::Paths)>,
    },
    /// The first prefix of a burst (`Update`), taken out to be handled in its own step: held
    /// by itself, not in a deque of one (an allocation per prefix received).
    UpdateOne {
        to: SessionId,
        gen: u32,
        prefix: Ipv4Net,
        paths: adj::Paths,
    },
}

impl Event {
    /// Retries of sessions that cannot come up and keepalives go on forever in a steady network.
    pub(crate) fn is_periodic(&self) -> bool {
        matches!(self, Event::Keepalive { .. } | Event::Connect { .. })
    }

    /// What one engine step handles of a burst of UPDATEs that holds more than one prefix:
    /// the first, taken out; the rest keeps its place in the queue. None: the event is handled
    /// whole.
    pub(crate) fn take_first(&mut self) -> Option<Event> {
        match self {
            Event::Update { to, gen, updates } if updates.len() > 1 => {
                let (prefix, paths) = updates.pop_front()?;
                Some(Event::UpdateOne {
                    to: *to,
                    gen: *gen,
                    prefix,
                    paths,
                })
            }
            _ => None,
        }
    }
}

/// The BGP runtime of the whole network.
#[derive(Clone, Debug)]
pub(crate) struct Bgp {
    speakers: speakers::Speakers,
    sessions: Vec<session::Session>,
    /// Logical clock of route arrivals (history: older paths win some ties).
    clock: u64,
    /// Route source ids (BIRD gives every route source a global id; it is the ADD-PATH path id).
    next_src: u32,
    /// Most paths one speaker keeps for one prefix; more is reported as a path explosion
    /// (ADD-PATH through an eBGP full mesh grows factorially with the node count).
    pub(crate) path_limit: usize,
    /// Problems found while converging, for the run's report (each reported once).
    pub(crate) findings: Vec<String>,
    /// The speakers' timer randomisation, drawn from the run's seed.
    pub(crate) jitter: Jitter,
    /// Bumped whenever something a packet walk reads (interfaces, forwarding tables, the
    /// configuration) may have changed: a session's transport verdict is good until then.
    pub(crate) forwarding_epoch: u64,
    /// Every message sent, for captures (`Engine::record_bgp_wire`); None: not kept.
    pub(crate) wire: Option<WireLog>,
    /// UPDATEs for the real speaker of a `fabsim peer` session, until it takes them.
    pub(crate) live_out: Vec<super::bgp_state::BgpMessage>,
    /// Every attribute set held, once (`attrs`).
    attrs: attrs::AttrTable,
    /// Each device's BGP and BIRD configuration as its sessions' advertisements were last
    /// derived from (policies, filters, a neighbour's options): a sync whose configuration
    /// differs puts the device in `rederive`.
    derived_from: BTreeMap<DeviceId, (Option<BgpConfig>, Option<BirdDaemon>)>,
    /// The devices whose sessions the next export re-derives whole (`export`). A session's own
    /// facts (a new connection, its address) are its `ExportKey`.
    rederive: BTreeSet<DeviceId>,
    /// Each device's update groups (`export::OutGroup`), by device index; a session's
    /// `AdjOut::group` is an index into its device's.
    groups: Vec<Vec<export::OutGroup>>,
    /// Vectors kept between UPDATEs and decisions (`table::Scratch`).
    scratch: table::Scratch,
    /// Decisions kept (not made again) so far, for the tests that check them.
    #[cfg(test)]
    pub(crate) decisions_kept: usize,
}

/// The BGP messages a run sent, in order, with a number per TCP connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct WireLog {
    pub(crate) records: Vec<BgpWireRecord>,
    connections: u64,
    /// Interfaces whose segments captures want (`WirePath` is kept for those only).
    pub(crate) taps: std::collections::BTreeSet<crate::model::IfId>,
    /// Records before this one have been walked.
    pub(crate) walked: usize,
}

impl WireLog {
    pub(crate) fn new(taps: std::collections::BTreeSet<crate::model::IfId>) -> Self {
        WireLog {
            taps,
            ..Default::default()
        }
    }

    fn new_connection(&mut self) -> u64 {
        self.connections += 1;
        self.connections
    }

    fn push(&mut self, r: BgpWireRecord) {
        self.records.push(r);
    }
}

/// The seed a run uses unless told otherwise (`fabsim run --seed`).
pub const DEFAULT_SEED: u64 = 1;

/// Default path-explosion guard (clarifications.md: 10,000 paths per prefix per device).
pub(crate) const DEFAULT_PATH_LIMIT: usize = 10_000;

impl Bgp {
    /// Paths held by every speaker, all prefixes (for the engine's memory guard).
    pub(crate) fn entry_count(&self) -> usize {
        self.speakers.values().map(|s| s.paths).sum()
    }
}

impl Default for Bgp {
    fn default() -> Self {
        Bgp {
            speakers: speakers::Speakers::default(),
            sessions: Vec::new(),
            clock: 0,
            next_src: 0,
            path_limit: DEFAULT_PATH_LIMIT,
            findings: Vec::new(),
            forwarding_epoch: 0,
            jitter: Jitter::new(DEFAULT_SEED),
            wire: None,
            live_out: Vec::new(),
            attrs: attrs::AttrTable::default(),
            derived_from: BTreeMap::new(),
            rederive: BTreeSet::new(),
            groups: Vec::new(),
            scratch: table::Scratch::default(),
            #[cfg(test)]
            decisions_kept: 0,
        }
    }
}

type Out = Vec<(u64, Event)>;

impl Bgp {
    /// Bring speakers and sessions in line with configuration and power on `devices`
    /// (ascending; see `session::sync`).
    pub(crate) fn sync(&mut self, net: &Network, st: &State, now: u64, devices: &[DeviceId], out: &mut Out) -> bool {
        for &d in devices {
            // What a decision reads of the device (configuration, interfaces, power) may have
            // changed: the next one decides every prefix (`table::Memo`).
            if let Some(sp) = self.speakers.get_mut(&d) {
                sp.memo = None;
            }
            let dev = net.device(d);
            let derived = self.derived_from.get(&d);
            if derived.is_none_or(|(bgp, bird)| *bgp != dev.bgp || *bird != dev.bird) {
                self.derived_from.insert(d, (dev.bgp.clone(), dev.bird.clone()));
                self.rederive.insert(d);
            }
        }
        session::sync(self, net, st, now, devices, out)
    }

    /// Stop a device's speaker in an orderly way: every peer gets a Cease first.
    pub(crate) fn shut_down(&mut self, dev: DeviceId, now: u64, out: &mut Out) {
        session::stop_speaker(self, dev, now, true, out);
    }

    pub(crate) fn handle(&mut self, net: &Network, st: &State, now: u64, ev: Event, out: &mut Out) -> bool {
        match ev {
            Event::Connect { session, gen } => session::connect(self, net, st, now, session, gen, out),
            Event::Keepalive { session, gen } => session::keepalive(self, net, st, now, session, gen, out),
            Event::HoldExpire { session, gen } => session::hold_expire(self, now, session, gen, out),
            Event::Update { to, gen, updates } => updates.into_iter().fold(false, |changed, (prefix, paths)| {
                table::receive(self, net, now, to, gen, prefix, paths) | changed
            }),
            Event::UpdateOne { to, gen, prefix, paths } => table::receive(self, net, now, to, gen, prefix, paths),
        }
    }

    /// The devices that run a BGP speaker, in order.
    pub(crate) fn speaker_devices(&self) -> Vec<DeviceId> {
        self.speakers.keys().collect()
    }

    /// Select `dev`'s best paths with next hops resolved through its current (IGP) tables;
    /// return the routes the device installs from BGP (`in_place`: the table holds those of
    /// the last decision, and only the changed ones are asked for). A speaker's decision reads
    /// only its own device's tables and interfaces.
    pub(crate) fn decide(
        &mut self,
        net: &Network,
        st: &State,
        now: u64,
        dev: DeviceId,
        in_place: bool,
    ) -> super::fib_update::BgpRoutes {
        table::decide(self, net, st, now, dev, in_place)
    }

    /// Every speaker decides every prefix next time, as after a sync (for the tests that
    /// compare kept decisions with decisions made again).
    #[cfg(test)]
    pub(crate) fn forget_decisions(&mut self) {
        for sp in self.speakers.values_mut() {
            sp.memo = None;
        }
    }

    /// Whether `dev` runs a BGP speaker.
    pub(crate) fn has_speaker(&self, dev: DeviceId) -> bool {
        self.speakers.contains_key(&dev)
    }

    /// Send UPDATEs for whatever changed in what each session should advertise.
    /// `before`: each device's forwarding table as the last export saw it.
    pub(crate) fn export(
        &mut self,
        net: &Network,
        st: &State,
        before: &[super::fib_update::Before],
        now: u64,
        out: &mut Out,
    ) {
        export::export(self, net, st, before, now, out)
    }

    /// `dev`'s view; with `table`, that table in it instead of the speaker's table now.
    pub(crate) fn view(&self, dev: DeviceId, table: Option<BgpTable>) -> Option<BgpView> {
        let sp = self.speakers.get(&dev)?;
        Some(BgpView {
            asn: sp.asn,
            router_id: Some(sp.router_id),
            sessions: sp
                .sessions
                .iter()
                .map(|s| {
                    let x = &self.sessions[s.idx()];
                    let mut v = x.view();
                    // `remote-as external`: the AS is the one the peer's OPEN carried.
                    if v.remote_as.is_none() && x.cfg.remote_as_external {
                        v.remote_as = x.peer.map(|p| self.sessions[p.idx()].local_as);
                    }
                    v
                })
                .collect(),
            table: table.unwrap_or_else(|| BgpTable::of_speaker(sp.snapshot())),
        })
    }

    /// `dev`'s table as it is now, for its view.
    pub(crate) fn table_view(&self, dev: DeviceId) -> Option<BgpTable> {
        self.speakers.get(&dev).map(|sp| BgpTable::of_speaker(sp.snapshot()))
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn new_src(&mut self) -> u32 {
        self.next_src += 1;
        self.next_src
    }
}
