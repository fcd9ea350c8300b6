//! The engine owns virtual time: a discrete-event simulator (events ordered by time, then
//! sequence number) that boots devices, runs OSPF and DHCP, and computes RIBs and FIBs.
//! It reads the model and writes `State`; it never parses or formats text.
//!
//! History matters (OSPF DR election does not pre-empt; later, BGP ties are decided by arrival
//! order), so there is no "fresh solve": a change is an event applied to the running state,
//! which then evolves until quiet.

mod bgp;
pub mod bgp_state;
mod fib_update;
mod live;
pub use bgp::{filter, MessageDelays, DEFAULT_MESSAGE_DELAY_MS, DEFAULT_SEED};
mod ospf;
mod queue;
pub use ospf::{LsaBody, OspfDest, OspfHello, OspfLsa, OspfPacket, OspfWireRecord, RouterLink, OPTIONS_E};
mod rib;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};

#[cfg(test)]
use crate::model::L2Id;
use crate::model::{DeviceId, IfId, Network};
pub use bgp_state::*;
pub use live::{LiveOpen, LiveSession};
pub use state::*;

/// How long nothing may change before the network counts as quiet: one OSPF dead interval
/// (so a neighbour that stopped sending hellos has been declared down) plus a hello.
const QUIET_MS: u64 = 41_000;
/// A wait at least this long lets OSPF's timers pass outside the queue (`pass_steady`). The
/// default hello interval: a shorter wait fires each hello at most once, and taking the
/// timers out and back costs about what it saves.
const STEADY_MIN_MS: u64 = 10_000;
/// Upper bound on one convergence run, so a network that never settles cannot hang fabsim.
const MAX_RUN_MS: u64 = 3_600_000;
/// Delay between a router installing a route and the other routers seeing its AS-external
/// LSA (EOS initial LSA throttle, eos-linux-formats.md §1.4).
const LSA_DELAY_MS: u64 = 1_000;
/// BGP's TCP port (RFC 4271 §8.2.1).
const BGP_PORT: u16 = 179;
/// An external LSA for one prefix that changes this often within one run is oscillating.
const FLAP_LIMIT: u32 = 20;
/// Default event budget: the most protocol events one convergence run processes before it
/// stops with a finding. Virtual time is bounded by `MAX_RUN_MS`, but events at one instant
/// (a zero-delay chain between protocols) would not advance it; this bounds the wall time.
/// The seed lab's largest run (cold start with Calico) takes about 10^5 events; an OSPF
/// 16×256×16 fabric a few million. An eBGP one of that size takes more than 50 M (each prefix
/// of an UPDATE is an event): its scenario needs `limits: events` (BENCHMARKS.md). 50 M is
/// minutes of CPU, not hours.
pub const DEFAULT_EVENT_BUDGET: u64 = 50_000_000;
/// What one forwarding route, one next hop held apart from its route and one BGP path cost at
/// a run's peak: a least-squares fit of the peak RSS of seven generated fabrics, OSPF and eBGP
/// from 4x32x16 to 16x256x16, against what their tables hold once converged (BENCHMARKS.md,
/// 2026-12-06, "The memory guard's costs"), each rounded up. A cost stands for everything that
/// grows with its entry: a route's share of OSPF's own tables and of BGP's decided routes, a
/// path's share of the Adj-RIB-Out slots, attribute sets and UPDATEs in flight. One cost per
/// entry, as before, could not fit both underlays: a leaf's OSPF route over 16 spines and a
/// node's route over one gateway differ fivefold, so the 600 bytes the OSPF fabric needed put
/// an eBGP fabric at twice what it took, and stopped one that needed 6 GiB at 12.
pub const FIB_ROUTE_BYTES: u64 = 220;
/// See [`FIB_ROUTE_BYTES`]: a next hop of a route with several ([`state::Fib::spilled_hops`]).
pub const FIB_HOP_BYTES: u64 = 40;
/// See [`FIB_ROUTE_BYTES`].
pub const BGP_PATH_BYTES: u64 = 120;
/// The memory guard counts the tables every this many events, or every as many as there are
/// devices where there are more: counting reads every device's table sizes, and every 256
/// events it was 3% of an eBGP 16x64x16 fabric's run, growing with the fabric. Between two
/// counts at most that many events add entries.
const MEMORY_CHECK_EVERY: u64 = 256;
/// The memory bound (`--max-memory`) for engines created from now on; 0: the default.
static MEMORY_LIMIT_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Set the memory bound for engines created from now on (`fabsim --max-memory`).
pub fn set_memory_limit(bytes: u64) {
    MEMORY_LIMIT_BYTES.store(bytes.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// The memory bound new engines get: `set_memory_limit`'s, else half the machine's memory
/// (`MemTotal` of /proc/meminfo; 4 GiB where that cannot be read), so that fabsim stops with a
/// finding well before the kernel's OOM killer would stop it with nothing.
pub fn memory_limit() -> u64 {
    match MEMORY_LIMIT_BYTES.load(std::sync::atomic::Ordering::Relaxed) {
        0 => default_memory_limit(),
        n => n,
    }
}

fn default_memory_limit() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    total_kib.map_or(4 << 30, |k| k.saturating_mul(1024) / 2)
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    Boot(DeviceId),
    /// An engineer enters a device's configuration (`Network::timed[i]`).
    TimedConfig(usize),
    Ospf(ospf::Event),
    Bgp(bgp::Event),
    /// Recompute routing tables (coalesced: at most one pending per instant).
    Recompute,
}

impl Event {
    /// Periodic events keep firing forever in a steady network; they do not hold off quiet.
    fn is_periodic(&self) -> bool {
        match self {
            Event::Ospf(e) => e.is_periodic(),
            Event::Bgp(e) => e.is_periodic(),
            _ => false,
        }
    }
}

/// What a convergence run found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Convergence {
    /// Virtual time of the last change to any forwarding table.
    pub routes_changed_ms: u64,
    /// Problems found while converging (an oscillating prefix, a path explosion).
    pub findings: Vec<String>,
    /// False when the run hit `MAX_RUN_MS` with changes still happening.
    pub quiet: bool,
}

/// A running simulation of one network.
#[derive(Clone, Debug)]
pub struct Engine {
    net: Network,
    now: u64,
    seq: u64,
    queue: queue::EventQueue<Event>,
    one_shot_pending: usize,
    recompute_pending: bool,
    /// Last protocol activity that could still change routes (holds off quiet).
    last_change: u64,
    /// Last time a forwarding table actually changed.
    routes_changed: u64,
    /// External-LSA changes per prefix during the current run (oscillation detection).
    flips: BTreeMap<ipnet::Ipv4Net, u32>,
    /// The prefixes of `flips` that reached `FLAP_LIMIT`: the run looks for one after every
    /// event, and scanning `flips` for it was a sixth of a large fabric's convergence.
    flapping: std::collections::BTreeSet<ipnet::Ipv4Net>,
    findings: Vec<String>,
    /// When the current convergence run gives up (`begin_run`).
    deadline: u64,
    /// Prefixes found oscillating in the current run (each reported once).
    oscillating: std::collections::BTreeSet<ipnet::Ipv4Net>,
    bgp: bgp::Bgp,
    ospf: ospf::Ospf,
    state: State,
    /// What each device's forwarding table was made of, so that a recompute makes again only
    /// what moved.
    made: Vec<fib_update::Made>,
    /// The buffer OSPF handlers queue their events in (`ospf::Out`), kept between events.
    ospf_out: Vec<(u64, u64, ospf::Event)>,
    /// The same for BGP's handlers: a keepalive queues its successor, and a fresh vector per
    /// event was an allocation per keepalive of a long wait.
    bgp_out: Vec<(u64, bgp::Event)>,
    /// Ports whose medium is broken (a cut cable, a dead optic): physical faults, not
    /// configuration, so they live here and not in the model.
    severed: BTreeSet<IfId>,
    /// Events processed in the current run, and the most it may process (the event budget).
    events_run: u64,
    event_budget: u64,
    /// The memory guard's bound: the most bytes the routing tables (forwarding routes and BGP
    /// paths, all devices, at their measured costs) may take.
    memory_bytes: u64,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// What the routing tables hold, all devices (the memory guard's measure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableEntries {
    /// Forwarding routes.
    pub routes: u64,
    /// Next hops the forwarding routes hold on the heap ([`Fib::spilled_hops`](state::Fib::spilled_hops)).
    pub hops: u64,
    /// BGP paths, in the speakers' tables.
    pub paths: u64,
}

impl TableEntries {
    /// Both together.
    pub fn total(&self) -> u64 {
        self.routes + self.paths
    }

    /// What they take, at their measured costs ([`FIB_ROUTE_BYTES`], [`FIB_HOP_BYTES`],
    /// [`BGP_PATH_BYTES`]).
    pub fn bytes(&self) -> u64 {
        self.routes * FIB_ROUTE_BYTES + self.hops * FIB_HOP_BYTES + self.paths * BGP_PATH_BYTES
    }
}

/// How a device loses power.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerLoss {
    /// An orderly shutdown (`reboot`): daemons stop first, so BGP speakers send their peers a
    /// NOTIFICATION (Cease, administrative shutdown; bgp-profiles.md §7) before the power goes.
    Orderly,
    /// The power is cut: nothing is sent. Directly connected neighbours see carrier drop;
    /// others notice only when their hold or dead timers run out.
    Abrupt,
}

impl Engine {
    /// Start a simulation: every device is scheduled to power on at its `boot_ms`.
    pub fn new(net: Network) -> Self {
        let mut e = Engine {
            ospf: ospf::Ospf::new(&net),
            state: State::default(),
            made: Vec::new(),
            ospf_out: Vec::new(),
            bgp_out: Vec::new(),
            net,
            now: 0,
            seq: 0,
            queue: queue::EventQueue::default(),
            one_shot_pending: 0,
            recompute_pending: false,
            last_change: 0,
            routes_changed: 0,
            flips: BTreeMap::new(),
            flapping: std::collections::BTreeSet::new(),
            findings: Vec::new(),
            deadline: MAX_RUN_MS,
            oscillating: Default::default(),
            bgp: bgp::Bgp::default(),
            severed: BTreeSet::new(),
            events_run: 0,
            event_budget: DEFAULT_EVENT_BUDGET,
            memory_bytes: 0,
        };
        e.set_memory_limit(memory_limit());
        e.state.ifaces = vec![IfState::default(); e.net.interfaces.len()];
        e.state.devices = (0..e.net.devices.len())
            .map(|i| DevState {
                device: Some(DeviceId(i as u32)),
                ..DevState::default()
            })
            .collect();
        let boots: Vec<u64> = e.net.devices.iter().map(|d| d.boot_ms).collect();
        for (i, at) in boots.into_iter().enumerate() {
            e.schedule(at, Event::Boot(DeviceId(i as u32)));
        }
        let timed: Vec<u64> = e.net.timed.iter().map(|t| t.at_ms).collect();
        for (i, at) in timed.into_iter().enumerate() {
            e.schedule(at, Event::TimedConfig(i));
        }
        e
    }

    /// Seed the run's random timing (BIRD's timer jitter, BGP message delays); before anything
    /// has run.
    pub fn set_seed(&mut self, seed: u64) {
        self.bgp.jitter.reseed(seed);
    }

    /// The range each BGP flavour's UPDATEs take to arrive (default
    /// [`DEFAULT_MESSAGE_DELAY_MS`] for all); before anything has run.
    pub fn set_message_delays(&mut self, delays: MessageDelays) {
        self.bgp.jitter.set_message_delays(delays);
    }

    /// The most protocol events one convergence run processes before it stops with an
    /// event-budget finding (default [`DEFAULT_EVENT_BUDGET`]).
    pub fn set_event_budget(&mut self, events: u64) {
        self.event_budget = events.max(1);
    }

    /// The memory this engine's routing tables may take ([`FIB_ROUTE_BYTES`] a forwarding
    /// route, [`FIB_HOP_BYTES`] a next hop apart from it, [`BGP_PATH_BYTES`] a BGP path) before a run stops with a memory-limit finding
    /// (default [`memory_limit`]).
    pub fn set_memory_limit(&mut self, bytes: u64) {
        self.memory_bytes = bytes.max(1);
    }

    /// Routing entries held now: every device's forwarding routes, and BGP paths.
    pub fn entry_count(&self) -> TableEntries {
        TableEntries {
            routes: self.state.devices.iter().map(|d| d.fib.len() as u64).sum(),
            hops: self.state.devices.iter().map(|d| d.fib.spilled_hops()).sum(),
            paths: self.bgp.entry_count() as u64,
        }
    }

    /// The most paths one BGP speaker keeps for one prefix before fabsim reports a path
    /// explosion (default 10,000).
    pub fn set_path_limit(&mut self, limit: usize) {
        self.bgp.path_limit = limit.max(1);
    }

    /// Keep every BGP message sent from now on, for captures: the TCP connection it belongs
    /// to and, for the segments that cross one of `taps`, their path through the network at
    /// the instant they were sent.
    pub fn record_bgp_wire(&mut self, taps: BTreeSet<IfId>) {
        self.bgp.wire = Some(bgp::WireLog::new(taps));
    }

    /// The BGP messages sent since [`Engine::record_bgp_wire`], in order.
    pub fn bgp_wire(&self) -> &[BgpWireRecord] {
        self.bgp.wire.as_ref().map_or(&[], |w| &w.records)
    }

    /// Keep every OSPF packet a tapped interface sees from now on, for captures: the hellos
    /// as sent, and the LS Updates of the flooding (`ospf::wire` says what is abstracted).
    pub fn record_ospf_wire(&mut self, taps: BTreeSet<IfId>) {
        self.ospf.wire = Some(ospf::WireLog::new(taps));
        let mut out = ospf::Out::new(self.seq, std::mem::take(&mut self.ospf_out));
        self.ospf.listen_all(&self.net, &mut out);
        self.queue_ospf(out);
    }

    /// The OSPF packets logged since [`Engine::record_ospf_wire`], in order.
    pub fn ospf_wire(&self) -> &[OspfWireRecord] {
        self.ospf.wire.as_ref().map_or(&[], |w| &w.records)
    }

    /// Walk the segments of the messages logged since the last call through the network as it
    /// is now (the instant they were sent).
    fn walk_wire(&mut self) {
        let Some(log) = self.bgp.wire.as_mut() else { return };
        let (net, st) = (&self.net, &self.state);
        for r in &mut log.records[log.walked..] {
            let tcp = crate::dataplane::ProbeKind::Tcp { dst_port: BGP_PORT };
            let there = crate::dataplane::probe_src(net, st, r.device, Some(r.from), r.to, r.ttl, tcp);
            let back = crate::dataplane::probe_src(net, st, r.peer, Some(r.to), r.from, r.peer_ttl, tcp);
            let tapped =
                |h: &crate::dataplane::Hop| [h.ingress, h.egress].iter().flatten().any(|i| log.taps.contains(i));
            if there.forward.iter().chain(&back.forward).any(tapped) {
                r.path = Some(WirePath {
                    one_way_us: there.forward.last().map_or(0, |h| h.at_us),
                    there: there.forward,
                    back: back.forward,
                });
            }
        }
        log.walked = log.records.len();
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    pub fn now_ms(&self) -> u64 {
        self.now
    }

    /// Change the configuration. The closure edits the model; the engine then re-derives
    /// interface state, restarts what the change touched and recomputes routes.
    pub fn reconfigure<R>(&mut self, edit: impl FnOnce(&mut Network) -> R) -> R {
        let r = edit(&mut self.net);
        self.ospf.grow(&self.net);
        self.state.ifaces.resize(self.net.interfaces.len(), IfState::default());
        // Devices the change created (a pod's network namespace) power on now.
        for i in self.state.devices.len()..self.net.devices.len() {
            let dev = DeviceId(i as u32);
            self.state.devices.push(DevState {
                device: Some(dev),
                ..DevState::default()
            });
            self.schedule(self.now, Event::Boot(dev));
        }
        self.refresh_all();
        r
    }

    /// Power `devices` off and on again now (a reboot): they lose every adjacency, session and
    /// learned route and boot with their saved configuration.
    pub fn power_cycle(&mut self, devices: &[DeviceId]) {
        self.power_off(devices, PowerLoss::Orderly);
        self.power_on(devices);
    }

    /// Power `devices` off now; they stay off until [`Engine::power_on`].
    pub fn power_off(&mut self, devices: &[DeviceId], how: PowerLoss) {
        if how == PowerLoss::Orderly {
            let mut out = Vec::new();
            for d in devices {
                self.bgp.shut_down(*d, self.now, &mut out);
            }
            for (at, e) in out {
                self.schedule(at, Event::Bgp(e));
            }
        }
        for d in devices {
            if let Some(s) = self.state.devices.get_mut(d.idx()) {
                s.powered = false;
            }
        }
        self.refresh_all();
    }

    /// Power `devices` on: they boot now with their saved configuration.
    pub fn power_on(&mut self, devices: &[DeviceId]) {
        for d in devices {
            self.schedule(self.now, Event::Boot(*d));
        }
    }

    pub fn is_powered(&self, dev: DeviceId) -> bool {
        self.state.devices.get(dev.idx()).is_some_and(|s| s.powered)
    }

    /// Break (`true`) or mend (`false`) the medium of `ports`: a broken port has no carrier,
    /// nor has a far end that only it reached. Admin state is untouched.
    pub fn set_severed(&mut self, ports: &[IfId], broken: bool) {
        for p in ports {
            if broken {
                self.severed.insert(*p);
            } else {
                self.severed.remove(p);
            }
        }
        self.refresh_all();
    }

    pub fn is_severed(&self, port: IfId) -> bool {
        self.severed.contains(&port)
    }

    /// Run until nothing has changed for a dead interval and no one-shot timer is pending.
    pub fn run_until_quiet(&mut self) -> Convergence {
        self.begin_run();
        self.run_until_quiet_or(u64::MAX)
            .expect("without a stop time the run ends quiet, oscillating or at its deadline")
    }

    /// Start a convergence run: forget the previous run's flaps and findings and set its
    /// deadline (`MAX_RUN_MS` of virtual time from now).
    pub fn begin_run(&mut self) {
        self.deadline = self.now.saturating_add(MAX_RUN_MS);
        self.events_run = 0;
        self.flips.clear();
        self.flapping.clear();
        self.oscillating.clear();
        self.findings.clear();
        self.bgp.findings.clear();
    }

    /// Continue the run begun by [`Engine::begin_run`] until it ends (quiet, oscillating, or
    /// at its deadline: `Some`) or virtual time reaches `stop_at` first (`None`, with the
    /// clock at `stop_at`). Lets a caller act at given times (a controller's next action, a
    /// ping's next probe) while the network converges, without changing what it converges to.
    pub fn run_until_quiet_or(&mut self, stop_at: u64) -> Option<Convergence> {
        let ended = self.run_until_quiet_or_at(stop_at);
        // The clock moved on without a step: what was due by now has passed.
        self.pass_unheard(Some(self.now));
        self.publish_tables();
        ended
    }

    fn run_until_quiet_or_at(&mut self, stop_at: u64) -> Option<Convergence> {
        loop {
            if let Some((prefix, f)) = self.oscillation() {
                // A caller that keeps time running (a rollout still going) meets the same
                // oscillation again: report it once per run.
                if self.oscillating.insert(prefix) {
                    self.findings.push(f);
                }
                return Some(self.convergence(false));
            }
            let quiet_at = self.last_change + QUIET_MS;
            let Some((t, ev)) = self.queue.peek() else {
                if quiet_at <= stop_at {
                    self.now = self.now.max(quiet_at);
                    return Some(self.convergence(true));
                }
                self.now = self.now.max(stop_at);
                return None;
            };
            if self.one_shot_pending == 0 && ev.is_periodic() && t > quiet_at && quiet_at <= stop_at {
                self.now = self.now.max(quiet_at);
                self.refresh_timers_view();
                return Some(self.convergence(true));
            }
            if t > self.deadline && self.deadline <= stop_at {
                self.now = self.deadline;
                return Some(self.convergence(false));
            }
            if t > stop_at {
                self.now = self.now.max(stop_at);
                self.refresh_timers_view();
                return None;
            }
            self.step();
            if let Some(finding) = self.over_budget() {
                // Reported once per run; a caller that keeps time running meets the bound
                // again at once and gets the same unquiet convergence.
                if !self.findings.contains(&finding) {
                    self.findings.push(finding);
                }
                return Some(self.convergence(false));
            }
        }
    }

    /// The event budget or the memory guard, once the run has gone past it.
    fn over_budget(&mut self) -> Option<String> {
        self.events_run += 1;
        let at = || format!("{:.1} s", self.now as f64 / 1000.0);
        if self.events_run > self.event_budget {
            return Some(format!(
                "event budget: the run used its {} protocol events without settling; it stops at \
                 {} of virtual time (a loop between protocols, or a network too large for the \
                 budget)",
                self.event_budget,
                at()
            ));
        }
        let every = MEMORY_CHECK_EVERY.max(self.state.devices.len() as u64);
        if self.events_run % every != 0 {
            return None;
        }
        let held = self.entry_count();
        (held.bytes() > self.memory_bytes).then(|| {
            format!(
                "memory limit: the routing tables hold {} forwarding routes, {} next hops apart \
                 from them and {} BGP paths, about {:.1} MiB at {FIB_ROUTE_BYTES}, {FIB_HOP_BYTES} \
                 and {BGP_PATH_BYTES} bytes each, more than the {:.1} MiB --max-memory allows; the \
                 run stops at {} of virtual time instead of exhausting the machine",
                held.routes,
                held.hops,
                held.paths,
                mib(held.bytes()),
                mib(self.memory_bytes),
                at()
            )
        })
    }

    /// [`Engine::advance`] for a run that ended unquiet (an oscillation, which may yet settle,
    /// or a bound): the events keep running, each counted against the run's event budget;
    /// once the budget is spent its finding is recorded and the clock moves on without the
    /// rest (they run late, at the next run), so time passing over a flapping network costs
    /// at most the budget. Returns the budget's finding when it was spent.
    pub fn advance_bounded(&mut self, ms: u64) -> Option<String> {
        self.advance_to(self.now + ms, true)
    }

    /// Advance virtual time by `ms`, processing every event due until then.
    pub fn advance(&mut self, ms: u64) {
        self.advance_to(self.now + ms, false);
    }

    /// Process the events due until `until` (with `budgeted`, each counted against the run's
    /// event budget, stopping at the first bound it meets, whose finding is returned), then
    /// set the clock to `until`.
    fn advance_to(&mut self, until: u64, budgeted: bool) -> Option<String> {
        if !budgeted && until.saturating_sub(self.now) >= STEADY_MIN_MS {
            self.pass_steady(until);
        }
        let mut spent = None;
        while let Some((t, _)) = self.queue.peek() {
            if t > until {
                break;
            }
            self.step();
            if !budgeted {
                continue;
            }
            if let Some(finding) = self.over_budget() {
                if !self.findings.contains(&finding) {
                    self.findings.push(finding.clone());
                }
                spent = Some(finding);
                break;
            }
        }
        self.now = self.now.max(until);
        self.pass_unheard(Some(self.now));
        self.refresh_timers_view();
        spent
    }

    /// Let time pass towards `until` with OSPF's periodic timers held by an `ospf::Steady`
    /// (see there), while nothing else is due but BGP keepalives, which are handled as ever in
    /// between. Stops at `until` or before the first event the `Steady` cannot take, which
    /// `advance_to`'s loop handles, with the rest, once the timers are back in the queue.
    fn pass_steady(&mut self, until: u64) {
        let queued = self.queue.take_map(|ev| match ev {
            Event::Ospf(e) => Ok(e),
            other => Err(other),
        });
        let mut steady = match self.ospf.steady(&self.net, queued) {
            Ok(steady) => steady,
            Err(back) => {
                // Back as they were: taking them out did not count them off `one_shot_pending`.
                for (at, seq, e) in back {
                    self.queue.push(at, seq, Event::Ospf(e));
                }
                return;
            }
        };
        // The queue's next event: firing a timer does not change it.
        let mut other = self.queue.peek_key().filter(|&(at, _)| at <= until);
        loop {
            let timer = steady.next().filter(|&(at, _)| at <= until);
            match (timer, other) {
                (Some(t), other) if other.is_none_or(|o| t < o) => {
                    if !steady.fire(&mut self.seq) {
                        break;
                    }
                }
                (_, Some(_)) if matches!(self.queue.peek(), Some((_, Event::Bgp(bgp::Event::Keepalive { .. })))) => {
                    self.step();
                    other = self.queue.peek_key().filter(|&(at, _)| at <= until);
                }
                _ => break,
            }
        }
        let mut out = ospf::Out::new(self.seq, std::mem::take(&mut self.ospf_out));
        steady.finish(&mut self.ospf, &mut out);
        self.queue_ospf(out);
    }

    /// A prefix whose AS-external LSAs keep changing: what one router redistributes changes
    /// what another installs and so redistributes, with no state where all of them hold (e.g. a
    /// BGP next hop that resolves only through another router's E2 for the same prefix, which
    /// that router withdraws once this one's E2 beats its BGP route: tests/data/oscillation.yaml).
    fn oscillation(&self) -> Option<(ipnet::Ipv4Net, String)> {
        let prefix = self.flapping.first()?;
        let n = self.flips[prefix];
        let routers: Vec<String> = self
            .ospf
            .asbrs_ever(*prefix)
            .iter()
            .map(|d| self.net.device(*d).name.clone())
            .collect();
        Some((
            *prefix,
            format!(
                "oscillation: the OSPF external route for {prefix} changed {n} times without settling; \
             routers redistributing it in turn: {} (what each one redistributes changes what \
             the others install, and no state lets all of them keep theirs)",
                routers.join(", ")
            ),
        ))
    }

    fn convergence(&self, quiet: bool) -> Convergence {
        Convergence {
            routes_changed_ms: self.routes_changed,
            quiet,
            findings: self.bgp.findings.iter().chain(&self.findings).cloned().collect(),
        }
    }

    pub(crate) fn schedule(&mut self, at: u64, ev: Event) {
        self.seq += 1;
        self.queue_at(at, self.seq, ev);
    }

    /// Queue what an OSPF handler made, under the numbers it took (`ospf::Out`).
    fn queue_ospf(&mut self, out: ospf::Out) {
        let (seq, mut items) = out.finish();
        self.seq = seq;
        for (at, seq, e) in items.drain(..) {
            self.queue_at(at, seq, Event::Ospf(e));
        }
        self.ospf_out = items;
    }

    fn queue_at(&mut self, at: u64, seq: u64, ev: Event) {
        if !ev.is_periodic() {
            self.one_shot_pending += 1;
        }
        self.queue.push(at, seq, ev);
    }

    /// Let the OSPF hellos no one hears pass (`ospf`'s `unheard`) that are due before the
    /// queue's next event, or by `until` when nothing in the queue is due by then: they take
    /// their sequence numbers exactly where they would have from the queue.
    fn pass_unheard(&mut self, until: Option<u64>) {
        let next = self.queue.peek_key();
        let before = match (next, until) {
            (Some(key), None) => key,
            (Some(key), Some(t)) => key.min((t, u64::MAX)),
            (None, Some(t)) => (t, u64::MAX),
            (None, None) => return,
        };
        if self.ospf.next_unheard().is_none_or(|key| key >= before) {
            return;
        }
        let mut out = ospf::Out::new(self.seq, std::mem::take(&mut self.ospf_out));
        self.ospf.pass_unheard(&self.net, before, &mut out);
        self.queue_ospf(out);
    }

    fn step(&mut self) {
        self.pass_unheard(None);
        // A burst of UPDATEs is handled one prefix per step; the rest keeps its place.
        let mut split = false;
        let Some((t, _, ev)) = self.queue.pop_split(|ev| match ev {
            Event::Bgp(b) => b.take_first().map(|head| {
                split = true;
                Event::Bgp(head)
            }),
            _ => None,
        }) else {
            return;
        };
        // The rest of a split burst is still pending, and so still counts.
        if !split && !ev.is_periodic() {
            self.one_shot_pending -= 1;
        }
        self.now = self.now.max(t);
        match ev {
            Event::Boot(dev) => {
                self.state.devices[dev.idx()].powered = true;
                self.refresh(Some(dev));
            }
            Event::TimedConfig(i) => {
                self.net.apply_timed(i);
                self.refresh_all();
            }
            Event::Ospf(oev) => {
                let mut out = ospf::Out::new(self.seq, std::mem::take(&mut self.ospf_out));
                let changed = self.ospf.handle(&self.net, &self.state, self.now, oev, &mut out);
                self.queue_ospf(out);
                if changed {
                    self.mark_changed();
                }
            }
            Event::Bgp(bev) => {
                let mut out = std::mem::take(&mut self.bgp_out);
                let changed = self.bgp.handle(&self.net, &self.state, self.now, bev, &mut out);
                for (at, e) in out.drain(..) {
                    self.schedule(at, Event::Bgp(e));
                }
                self.bgp_out = out;
                if changed {
                    self.mark_changed();
                }
            }
            Event::Recompute => {
                self.recompute_pending = false;
                self.recompute();
            }
        }
        self.walk_wire();
    }

    /// Rebuild every forwarding table: connected/static/DHCP, OSPF over the current LSDB, then
    /// BGP (whose next hops resolve through the tables without BGP), installed by distance or
    /// metric. Then originate AS-externals from what got installed (seen by the other routers
    /// after the LSA delay) and send BGP updates for what changed.
    fn recompute(&mut self) {
        let locals = rib::local_tables(&self.net, &self.state);
        let ospf_routes = self.ospf.routes(&self.net, &self.state, self.now);
        // BGP resolves its next hops through the tables without BGP, so those are made first
        // (again only where their candidates moved); what they were is kept aside for BGP's
        // export and to tell whether anything changed.
        self.made.resize_with(self.net.devices.len(), Default::default);
        let mut before = Vec::with_capacity(locals.len());
        for (i, local) in locals.into_iter().enumerate() {
            let ospf = ospf_routes.get(&DeviceId(i as u32));
            let fib = &mut self.state.devices[i].fib;
            let speaker = self.bgp.has_speaker(DeviceId(i as u32));
            before.push(self.made[i].remake(&self.net.devices[i], fib, local, ospf, speaker));
        }
        // OSPF edits its tables in place next time when no one else holds them.
        drop(ospf_routes);
        // Each speaker's routes are installed as soon as it has decided: its decision reads only
        // its own device's tables, and holding every device's routes until all had decided cost
        // the eBGP 8x64x16 fabric 6% of its peak memory.
        for dev in self.bgp.speaker_devices() {
            let i = dev.idx();
            let rs = self
                .bgp
                .decide(&self.net, &self.state, self.now, dev, self.made[i].bgp_in_place());
            // Installing BGP's routes over the installed winners picks what installing every
            // candidate at once would (`rib::add` keeps the earlier of equals).
            let fib = &mut self.state.devices[i].fib;
            self.made[i].add_bgp(&self.net.devices[i], fib, rs, &mut before[i]);
        }
        let mut out = Vec::new();
        self.bgp.export(&self.net, &self.state, &before, self.now, &mut out);
        for (at, e) in out {
            self.schedule(at, Event::Bgp(e));
        }
        let jitter = &mut self.bgp.jitter;
        let originated = self.ospf.originate(&self.net, &self.state, &mut |n| jitter.pick(n));
        if !originated.changed.is_empty() {
            self.last_change = self.now;
            for p in originated.changed {
                let n = self.flips.entry(p).or_default();
                *n += 1;
                if *n >= FLAP_LIMIT {
                    self.flapping.insert(p);
                }
            }
            let at = if originated.held_back {
                self.now
            } else {
                self.now + LSA_DELAY_MS
            };
            self.schedule(at, Event::Recompute);
        }
        self.refresh_views(false);
        if before.iter().zip(&self.state.devices).any(|(b, d)| b.differs(&d.fib)) {
            self.last_change = self.now;
            self.routes_changed = self.now;
            self.bgp.forwarding_epoch += 1;
        }
    }

    /// Something routing-relevant changed: remember when, and recompute routes (once).
    fn mark_changed(&mut self) {
        self.last_change = self.now;
        if !self.recompute_pending {
            self.recompute_pending = true;
            self.schedule(self.now, Event::Recompute);
        }
    }

    /// Re-derive interface status (power, shutdown, carrier, DHCP) and let OSPF and BGP react
    /// everywhere (a configuration, power or medium change may touch any device).
    fn refresh_all(&mut self) {
        self.refresh(None);
    }

    /// Re-derive interface status and let OSPF and BGP react: on every device, or — after
    /// `booted` powered on, which changes nothing but its own power and the interfaces that see
    /// it — on that device and the devices whose interfaces changed. The others would find
    /// nothing to do, so the events come out the same, in the same order, as syncing them all:
    /// a fabric that boots N devices costs O(N) per boot in interface state only, not in the
    /// protocols' per-device checks.
    fn refresh(&mut self, booted: Option<DeviceId>) {
        // What was sent before this change left through the network as it was.
        self.walk_wire();
        let devices: Vec<DeviceId> = match booted {
            None => {
                self.state.ifaces = rib::interface_states(&self.net, &self.state, &self.severed);
                (0..self.net.devices.len() as u32).map(DeviceId).collect()
            }
            Some(dev) => {
                let own = &self.net.device(dev).ifaces;
                let mut seen: Vec<IfId> = own
                    .iter()
                    .flat_map(|&i| self.net.l2_peers(i))
                    .chain(own.iter().copied())
                    .collect();
                seen.sort_unstable();
                seen.dedup();
                let mut touched = vec![dev];
                for i in seen {
                    let now = rib::interface_state(&self.net, &self.state, &self.severed, i);
                    if self.state.ifaces[i.idx()] != now {
                        self.state.ifaces[i.idx()] = now;
                        touched.push(self.net.iface(i).device);
                    }
                }
                touched.sort_unstable();
                touched.dedup();
                touched
            }
        };
        self.bgp.forwarding_epoch += 1;
        let mut out = ospf::Out::new(self.seq, std::mem::take(&mut self.ospf_out));
        self.ospf
            .sync(&self.net, &self.state, self.now, devices.iter().copied(), &mut out);
        self.queue_ospf(out);
        let mut out = Vec::new();
        self.bgp.sync(&self.net, &self.state, self.now, &devices, &mut out);
        for (at, e) in out {
            self.schedule(at, Event::Bgp(e));
        }
        // Always recompute: a config edit may change routes without touching interfaces or
        // OSPF (a static route); the recompute itself tells whether the tables changed.
        self.mark_changed();
        self.walk_wire();
    }

    /// Copy the OSPF runtime's neighbour tables and BGP's sessions and tables into the State
    /// (dead timers move with time).
    fn refresh_timers_view(&mut self) {
        self.refresh_views(true);
    }

    /// [`Engine::refresh_timers_view`]; without `tables`, each BGP view keeps the table it
    /// had, for [`Engine::publish_tables`] to bring up to date when the run hands the State
    /// out. A table a view shares is copied, in part, when the speaker next changes it: a
    /// snapshot at every recompute of a converging eBGP fabric was such a copy of every
    /// table between any two recomputes, and no one reads them meanwhile.
    fn refresh_views(&mut self, tables: bool) {
        for (i, d) in self.state.devices.iter_mut().enumerate() {
            let dev = DeviceId(i as u32);
            d.ospf = self.ospf.view(&self.net, dev, self.now);
            let kept = if tables { None } else { d.bgp.take().map(|v| v.table) };
            d.bgp = self.bgp.view(dev, kept);
        }
        self.state.time_ms = self.now;
    }

    /// Each BGP view's table as the speaker's table is now. After a run that ended quiet that
    /// is the table as the last recompute left it: every change to a table asks for a
    /// recompute, and a run is not quiet while one is pending.
    fn publish_tables(&mut self) {
        for (i, d) in self.state.devices.iter_mut().enumerate() {
            if let (Some(v), Some(table)) = (d.bgp.as_mut(), self.bgp.table_view(DeviceId(i as u32))) {
                v.table = table;
            }
        }
    }
}

/// Build the network's state at the converged start: power everything on and run to quiet.
pub fn converge(net: Network) -> (Engine, Convergence) {
    let mut e = Engine::new(net);
    let c = e.run_until_quiet();
    (e, c)
}

/// The network just after every device powered on, before any protocol ran: interface
/// addresses and local (connected, static, DHCP) routes only. What kubelet and calico-node see
/// when a topology's declared cluster comes up (`input::topology`'s `cluster:`), without
/// converging the fabric once more for it.
pub fn booted_state(net: &Network) -> State {
    let mut st = State {
        devices: (0..net.devices.len())
            .map(|i| DevState {
                device: Some(DeviceId(i as u32)),
                powered: true,
                ..DevState::default()
            })
            .collect(),
        ifaces: vec![IfState::default(); net.interfaces.len()],
        ..State::default()
    };
    st.ifaces = rib::interface_states(net, &st, &BTreeSet::new());
    for (i, table) in rib::local_tables(net, &st).into_iter().enumerate() {
        st.devices[i].fib = rib::install(&net.devices[i], table);
    }
    st
}

/// The interface of `dev` that holds `addr`, if any (for "is this packet for me?").
pub fn local_iface(net: &Network, st: &State, dev: DeviceId, addr: std::net::Ipv4Addr) -> Option<IfId> {
    net.device(dev)
        .ifaces
        .iter()
        .copied()
        .find(|i| st.ifaces[i.idx()].addr.map(|a| a.addr()) == Some(addr) && st.ifaces[i.idx()].up)
}

#[cfg(test)]
mod tests;
