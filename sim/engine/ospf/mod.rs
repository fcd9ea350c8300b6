//! OSPFv2 (RFC 2328), one area: interface and neighbour state machines in virtual time
//! (hello, wait timer, DR/BDR election without pre-emption, adjacency, dead timer), the link
//! state database and SPF with equal-cost next hops, and AS-external (E1/E2) routes from
//! redistribution.
//!
//! Simplifications (see FIDELITY.md): flooding is instantaneous and reliable, so every router
//! computes SPF over the same LSDB; the DBD/LSR exchange is a single delay
//! (`VendorProfile::ospf_exchange_ms`) that starts once both ends want the adjacency; all
//! `network … area` statements are treated as one area.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;

use super::state::{LinuxProto, NbrRole, NbrState, NextHop, OspfNeighbor, OspfView, Proto, Route, State};
use crate::model::{DeviceId, IfId, Network, RedistSource};

mod schedule;
mod spf;
mod steady;
mod table;
mod wire;
pub(crate) use schedule::Out;
pub(crate) use wire::WireLog;
pub use wire::{LsaBody, OspfDest, OspfHello, OspfLsa, OspfPacket, OspfWireRecord, RouterLink, OPTIONS_E};

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    /// Send a hello on this interface (periodic).
    Hello(IfId),
    /// The wait timer of an interface that came up expired.
    Wait { iface: IfId, gen: u32 },
    /// No hello from this neighbour for a dead interval. One is pending per neighbour: `armed`
    /// is the sequence number it was queued with; hellos since then moved the deadline
    /// (`Nbr::dead_at`), and it is queued again for that (`schedule`).
    Inactivity { iface: IfId, nbr: Ipv4Addr, armed: u64 },
    /// Database exchange with this neighbour finished.
    AdjFull { iface: IfId, nbr: Ipv4Addr, gen: u32 },
}

impl Event {
    pub(crate) fn is_periodic(&self) -> bool {
        matches!(self, Event::Hello(_) | Event::Inactivity { .. })
    }
}

/// RFC 2328 §9.1 interface states (Loopback folded into passive handling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IfSm {
    Down,
    Waiting,
    PointToPoint,
    DrOther,
    Backup,
    Dr,
}

#[derive(Clone, Debug)]
struct Nbr {
    addr: Ipv4Addr,
    /// The neighbour's interface (simulator bookkeeping: where its side of the adjacency lives).
    iface: IfId,
    prio: u8,
    state: NbrState,
    dr: Option<Ipv4Addr>,
    bdr: Option<Ipv4Addr>,
    last_hello: u64,
    /// The dead-interval deadline of the last hello, and the sequence number its timer takes.
    dead_at: u64,
    dead_seq: u64,
    /// The sequence number of this neighbour's pending inactivity timer.
    timer: Option<u64>,
    adj_gen: u32,
}

impl Nbr {
    /// Queue this neighbour's (only) inactivity timer for the last hello's deadline, under the
    /// sequence number that hello reserved (`schedule`). `iface` is where it is heard, `rid`
    /// its router id.
    fn arm_timer(&mut self, iface: IfId, rid: Ipv4Addr, out: &mut Out) {
        self.timer = Some(self.dead_seq);
        let ev = Event::Inactivity {
            iface,
            nbr: rid,
            armed: self.dead_seq,
        };
        out.at_seq(self.dead_at, self.dead_seq, ev);
    }
}

#[derive(Clone, Debug)]
struct OIf {
    active: bool,
    passive: bool,
    p2p: bool,
    addr: Option<Ipv4Net>,
    cost: u32,
    prio: u8,
    state: IfSm,
    dr: Option<Ipv4Addr>,
    bdr: Option<Ipv4Addr>,
    nbrs: BTreeMap<Ipv4Addr, Nbr>,
    gen: u32,
    /// When the interface's hello timer fires next; None: it is stopped. A timer event for
    /// another instant is one the interface stopped since (RFC 2328 §9.3: InterfaceDown
    /// disables the interface's timers; InterfaceUp starts the hello timer again): it ends,
    /// so an interface that goes down and up between two hellos keeps one timer.
    hello_due: Option<u64>,
    /// How many of this interface's hello timers wait in `Ospf::unheard` (one, or a stopped
    /// one that has not reached its instant yet).
    unheard: u16,
    /// Nothing hears a hello sent here (`Ospf::heard`), as of the last sync of this device or
    /// a neighbour on the segment.
    no_listener: bool,
}

impl OIf {
    /// Whether this interface takes the hellos `sender` sends (RFC 2328 §10.5: the receiving
    /// interface runs OSPF actively, is of the sender's network type and in its subnet);
    /// anything else drops them before the neighbour is looked at. `receive_hello` and the
    /// steady pass (`steady`) both ask.
    fn takes_hellos_from(&self, sender: &OIf) -> bool {
        let same_subnet = |s: Ipv4Net| {
            self.addr
                .is_some_and(|a| a.prefix_len() == s.prefix_len() && a.network() == s.network())
        };
        self.active && !self.passive && self.p2p == sender.p2p && sender.addr.is_some_and(same_subnet)
    }
}

impl Default for OIf {
    fn default() -> Self {
        OIf {
            active: false,
            passive: false,
            p2p: false,
            addr: None,
            cost: 10,
            prio: 1,
            state: IfSm::Down,
            dr: None,
            bdr: None,
            nbrs: BTreeMap::new(),
            gen: 0,
            hello_due: None,
            unheard: 0,
            no_listener: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Router {
    process_id: u32,
    rid: Ipv4Addr,
}

/// The OSPF runtime of every device.
#[derive(Clone, Debug)]
pub(crate) struct Ospf {
    routers: Vec<Option<Router>>,
    ifs: Vec<OIf>,
    /// AS-external LSAs as currently originated: (prefix, ASBR router id) → metric and type.
    /// Originated from each router's installed routes after a recompute, so redistribution
    /// follows the forwarding state with a delay, as on a real router (and can oscillate).
    externals: BTreeMap<(Ipv4Net, Ipv4Addr), External>,
    /// Every (prefix, ASBR) ever originated, to name the routers of an oscillation.
    ever: BTreeSet<(Ipv4Net, Ipv4Addr)>,
    /// The last recompute: the router and network LSAs and the AS-externals it ran on, and each
    /// router's table. Most recomputes follow a BGP change that left the LSDB as it was (at
    /// most the AS-externals moved), and one LSDB change moves few of each router's routes;
    /// deriving every route of every router is what converging a large fabric spends most on.
    last_spf: Option<SpfRun>,
    /// The packets tapped interfaces see, for captures (`Engine::record_ospf_wire`); None:
    /// not kept.
    pub(crate) wire: Option<WireLog>,
    /// The next hellos of interfaces no one hears (a leaf's port to a server: no OSPF router
    /// on the segment, no capture tap), as (time, sequence number, interface), kept out of the
    /// engine's queue: two fifths of a long replay's events were such hellos. The engine lets
    /// each pass when its turn comes (`pass_unheard`), taking the number its successor takes,
    /// so every event keeps the time and number it had; one that someone could hear goes back
    /// into the queue under its own (`hear_again`).
    unheard: BinaryHeap<Reverse<(u64, u64, IfId)>>,
}

#[derive(Clone, Debug)]
struct SpfRun {
    lsdb: Lsdb,
    /// The area's graph made from `lsdb`.
    area: Arc<spf::Area>,
    externals: table::Externals,
    tables: BTreeMap<DeviceId, table::Table>,
}

/// A router's OSPF routes, as a recompute hands them to the engine.
pub(crate) struct Routes {
    /// The intra-area routes, then the AS-external routes, each in prefix order. Shared with
    /// the router's kept table: let go before the next recompute, so that it edits in place.
    pub(crate) all: Arc<Vec<Route>>,
    intra_len: usize,
    /// The prefixes whose routes may have changed since the last recompute, in order (None:
    /// any; the table was made afresh).
    pub(crate) moved: Option<Vec<Ipv4Net>>,
}

impl Routes {
    /// The route to exactly `prefix`.
    pub(crate) fn get(&self, prefix: Ipv4Net) -> Option<&Route> {
        let (intra, external) = self.all.split_at(self.intra_len);
        [intra, external]
            .into_iter()
            .find_map(|part| part.binary_search_by_key(&prefix, |r| r.prefix).ok().map(|i| &part[i]))
    }
}

/// What one origination pass did ([`Ospf::originate`]).
pub(crate) struct Originated {
    /// The prefixes whose AS-external LSAs changed.
    pub(crate) changed: Vec<Ipv4Net>,
    /// Some router held back a redistribution another router of the same instant made first:
    /// recompute at once, so that it sees that E2.
    pub(crate) held_back: bool,
}

impl Ospf {
    pub(crate) fn new(net: &Network) -> Self {
        Ospf {
            routers: vec![None; net.devices.len()],
            ifs: vec![OIf::default(); net.interfaces.len()],
            externals: BTreeMap::new(),
            ever: BTreeSet::new(),
            last_spf: None,
            wire: None,
            unheard: BinaryHeap::new(),
        }
    }

    /// Make room for devices/interfaces a config change created.
    pub(crate) fn grow(&mut self, net: &Network) {
        self.routers.resize(net.devices.len(), None);
        self.ifs.resize(net.interfaces.len(), OIf::default());
    }

    fn dev_of(net: &Network, i: IfId) -> DeviceId {
        net.iface(i).device
    }

    fn hello_ms(net: &Network, i: IfId) -> u64 {
        net.device(Self::dev_of(net, i)).profile.ospf_hello_ms
    }

    /// Bring processes and interfaces in line with config and interface state on `devices`
    /// (ascending). A device whose power, configuration and interfaces did not change since its
    /// last sync has nothing to do, so callers may pass only the ones that did. Returns true if
    /// anything changed.
    pub(crate) fn sync(
        &mut self,
        net: &Network,
        st: &State,
        now: u64,
        devices: impl Iterator<Item = DeviceId>,
        out: &mut Out,
    ) -> bool {
        let mut changed = false;
        for id in devices {
            let d = id.idx();
            let dev = net.device(id);
            let powered = st.devices.get(d).is_some_and(|s| s.powered);
            let cfg = dev.ospf.as_ref().filter(|c| powered && !c.shutdown);
            match (cfg, self.routers[d].is_some()) {
                (Some(c), false) => {
                    if let Some(rid) = c.router_id.or_else(|| super::rib::highest_address(net, st, id)) {
                        self.routers[d] = Some(Router {
                            process_id: c.process_id,
                            rid,
                        });
                        changed = true;
                    }
                }
                (None, true) => {
                    self.routers[d] = None;
                    changed = true;
                }
                _ => {}
            }
            for &i in &dev.ifaces {
                changed |= self.sync_iface(net, st, now, i, out);
            }
            // A router that appeared on a segment (or a cable that joined two ports) hears
            // the hellos sent there; one that went away no longer does.
            for &i in &dev.ifaces {
                for p in std::iter::once(i).chain(net.l2_peers(i)) {
                    self.listen(net, p, out);
                }
            }
        }
        changed
    }

    /// Could anything hear a hello sent on `from`: an interface of an OSPF router on its
    /// segment that takes hellos, or a capture tap on the segment?
    fn heard(&self, net: &Network, from: IfId) -> bool {
        let tapped = |i: IfId| self.wire.as_ref().is_some_and(|w| w.taps(i));
        let listens = |i: IfId| {
            let o = &self.ifs[i.idx()];
            o.active && !o.passive && self.routers[Self::dev_of(net, i).idx()].is_some()
        };
        tapped(from) || net.l2_peers(from).any(|to| tapped(to) || listens(to))
    }

    /// Whether anything hears the hellos of `iface` now; if so, its unheard timers go back in
    /// the queue. Only an interface that sends hellos asks: another one's answer is read by
    /// no one, and its own device's next sync asks again when it starts sending.
    fn listen(&mut self, net: &Network, iface: IfId, out: &mut Out) {
        let o = &self.ifs[iface.idx()];
        if !o.active || o.passive {
            return;
        }
        let heard = self.heard(net, iface);
        let o = &mut self.ifs[iface.idx()];
        o.no_listener = !heard;
        if heard && o.unheard > 0 {
            self.hear_again(iface, out);
        }
    }

    /// Put the unheard hello timers of `iface` back in the engine's queue, each at the (time,
    /// number) it waits for.
    fn hear_again(&mut self, iface: IfId, out: &mut Out) {
        let mut waiting = std::mem::take(&mut self.unheard).into_vec();
        waiting.retain(|&Reverse((at, seq, i))| {
            if i != iface {
                return true;
            }
            self.ifs[i.idx()].unheard -= 1;
            out.at_seq(at, seq, Event::Hello(i));
            false
        });
        self.unheard = BinaryHeap::from(waiting);
    }

    /// A capture begins: what its taps see is heard.
    pub(crate) fn listen_all(&mut self, net: &Network, out: &mut Out) {
        for i in 0..self.ifs.len() {
            self.listen(net, IfId(i as u32), out);
        }
    }

    /// Every timer and deadline, in a fixed order: each interface's (its hello timer, its
    /// neighbours' deadlines and inactivity timers), then the unheard hellos.
    #[cfg(test)]
    pub(crate) fn timers(&self) -> String {
        let mut unheard: Vec<_> = self.unheard.iter().map(|t| t.0).collect();
        unheard.sort_unstable();
        format!("{:?}\n{unheard:?}", self.ifs)
    }

    /// The (time, number) of the next unheard hello.
    pub(crate) fn next_unheard(&self) -> Option<(u64, u64)> {
        self.unheard.peek().map(|&Reverse((at, seq, _))| (at, seq))
    }

    /// Send the unheard hellos due before `before` (time, number), in order, each as the engine
    /// would have handled it from its queue at its own time and number: it stops with its
    /// interface, waits again for the next interval (taking the number its successor takes),
    /// or, heard now, goes back into the queue.
    pub(crate) fn pass_unheard(&mut self, net: &Network, before: (u64, u64), out: &mut Out) {
        while let Some(&Reverse((at, seq, i))) = self.unheard.peek() {
            if (at, seq) >= before {
                return;
            }
            let o = &self.ifs[i.idx()];
            if !o.no_listener {
                // Heard since: handled from the queue, as it would have been.
                self.hear_again(i, out);
                return;
            }
            if self.hello_stops(net, i, at) {
                self.unheard.pop();
                self.ifs[i.idx()].unheard -= 1;
                continue;
            }
            // Sent to no one again; its successor takes the next number.
            let next = (at + Self::hello_ms(net, i), out.reserve(), i);
            self.ifs[i.idx()].hello_due = Some(next.0);
            if let Some(mut top) = self.unheard.peek_mut() {
                *top = Reverse(next);
            }
        }
    }

    fn sync_iface(&mut self, net: &Network, st: &State, now: u64, i: IfId, out: &mut Out) -> bool {
        let ifc = net.iface(i);
        let dev = net.device(ifc.device);
        let s = &st.ifaces[i.idx()];
        let running = self.routers[ifc.device.idx()].is_some();
        let desired = match (&dev.ospf, s.addr) {
            (Some(cfg), Some(addr)) if running && s.usable() => cfg
                .networks
                .iter()
                .filter(|n| n.prefix.contains(&addr.addr()))
                .max_by_key(|n| n.prefix.prefix_len())
                .map(|_| {
                    let listed = cfg.passive_exceptions.iter().any(|p| p.eq_ignore_ascii_case(&ifc.name));
                    let passive = ifc.ospf.passive || (cfg.passive_default != listed);
                    (addr, passive)
                }),
            _ => None,
        };
        let cost = ifc.ospf.cost.unwrap_or(dev.profile.ospf_cost);
        let prio = ifc.ospf.priority.unwrap_or(1);
        let o = &mut self.ifs[i.idx()];
        match desired {
            None if o.active => {
                *o = OIf {
                    gen: o.gen + 1,
                    unheard: o.unheard,
                    ..OIf::default()
                };
                true
            }
            None => false,
            Some((addr, passive)) => {
                let restart =
                    !o.active || o.addr != Some(addr) || o.passive != passive || o.p2p != ifc.ospf.point_to_point;
                let tuned = o.cost != cost || o.prio != prio;
                if restart {
                    let gen = o.gen + 1;
                    let state = if ifc.ospf.point_to_point {
                        IfSm::PointToPoint
                    } else if prio == 0 {
                        IfSm::DrOther
                    } else {
                        IfSm::Waiting
                    };
                    *o = OIf {
                        active: true,
                        passive,
                        p2p: ifc.ospf.point_to_point,
                        addr: Some(addr),
                        cost,
                        prio,
                        state,
                        gen,
                        hello_due: o.hello_due,
                        unheard: o.unheard,
                        ..OIf::default()
                    };
                    if !passive {
                        if o.hello_due.is_none() {
                            o.hello_due = Some(now);
                            out.push((now, Event::Hello(i)));
                        }
                        if state == IfSm::Waiting {
                            out.push((now + dev.profile.ospf_dead_ms, Event::Wait { iface: i, gen }));
                        }
                    }
                } else if tuned {
                    o.cost = cost;
                    o.prio = prio;
                }
                restart || tuned
            }
        }
    }

    /// Handle one OSPF event. Returns true if routing-relevant state changed.
    pub(crate) fn handle(&mut self, net: &Network, st: &State, now: u64, ev: Event, out: &mut Out) -> bool {
        match ev {
            Event::Hello(i) => self.send_hello(net, st, now, i, out),
            Event::Wait { iface, gen } => {
                let o = &self.ifs[iface.idx()];
                if o.gen != gen || o.state != IfSm::Waiting {
                    return false;
                }
                self.elect(net, now, iface, out);
                true
            }
            Event::Inactivity { iface, nbr, armed } => {
                let o = &mut self.ifs[iface.idx()];
                let Some(n) = o.nbrs.get_mut(&nbr).filter(|n| n.timer == Some(armed)) else {
                    // The timer of a neighbour since gone (and perhaps heard again).
                    return false;
                };
                if n.dead_seq != armed {
                    // Hellos came after it was armed: wait for the last one's deadline.
                    n.arm_timer(iface, nbr, out);
                    return false;
                }
                o.nbrs.remove(&nbr);
                self.neighbor_change(net, now, iface, out);
                true
            }
            Event::AdjFull { iface, nbr, gen } => match self.ifs[iface.idx()].nbrs.get_mut(&nbr) {
                Some(n) if n.adj_gen == gen && n.state == NbrState::ExStart => {
                    n.state = NbrState::Full;
                    true
                }
                _ => false,
            },
        }
    }

    fn send_hello(&mut self, net: &Network, st: &State, now: u64, from: IfId, out: &mut Out) -> bool {
        if self.hello_stops(net, from, now) {
            return false;
        }
        let Some(sender) = self.routers[Self::dev_of(net, from).idx()].clone() else {
            return false;
        };
        let hello_ms = Self::hello_ms(net, from);
        self.ifs[from.idx()].hello_due = Some(now + hello_ms);
        if self.ifs[from.idx()].no_listener {
            // Received by no one, logged nowhere: the timer waits outside the queue.
            let seq = out.reserve();
            self.unheard.push(Reverse((now + hello_ms, seq, from)));
            self.ifs[from.idx()].unheard += 1;
            return false;
        }
        out.push((now + hello_ms, Event::Hello(from)));
        self.log_hello(net, st, now, from, sender.rid);
        let mut changed = false;
        for to in net.l2_peers(from) {
            changed |= self.receive_hello(net, now, to, from, &sender, out);
        }
        changed
    }

    /// A hello timer that fires at `at` stops where it was stopped (the interface went down
    /// since, and perhaps came up again with a timer of its own: `hello_due`) or where no
    /// hello is sent any more (the interface down or passive, its router gone).
    fn hello_stops(&mut self, net: &Network, iface: IfId, at: u64) -> bool {
        let o = &self.ifs[iface.idx()];
        if o.hello_due != Some(at) {
            return true;
        }
        let sending = o.active && !o.passive && self.routers[Self::dev_of(net, iface).idx()].is_some();
        if !sending {
            self.ifs[iface.idx()].hello_due = None;
        }
        !sending
    }

    /// RFC 2328 §10.5 for the hello `from` sent, arriving on `to`.
    fn receive_hello(&mut self, net: &Network, now: u64, to: IfId, from: IfId, sender: &Router, out: &mut Out) -> bool {
        let (Some(my_rid), Some(s_addr)) = (
            self.routers[Self::dev_of(net, to).idx()].as_ref().map(|r| r.rid),
            self.ifs[from.idx()].addr,
        ) else {
            return false;
        };
        if !self.ifs[to.idx()].takes_hellos_from(&self.ifs[from.idx()]) {
            return false;
        }
        let (s_prio, s_dr, s_bdr, lists_me) = {
            let s = &self.ifs[from.idx()];
            (s.prio, s.dr, s.bdr, s.nbrs.contains_key(&my_rid))
        };
        let me = &mut self.ifs[to.idx()];
        let dead_ms = net.device(Self::dev_of(net, to)).profile.ospf_dead_ms;
        let addr = s_addr.addr();
        let entry = me.nbrs.entry(sender.rid);
        let is_new = matches!(entry, std::collections::btree_map::Entry::Vacant(_));
        let n = entry.or_insert(Nbr {
            addr,
            iface: from,
            prio: s_prio,
            state: NbrState::Init,
            dr: s_dr,
            bdr: s_bdr,
            last_hello: now,
            dead_at: 0,
            dead_seq: 0,
            timer: None,
            adj_gen: 0,
        });
        n.last_hello = now;
        n.dead_at = now + dead_ms;
        n.dead_seq = out.reserve();
        if n.timer.is_none() {
            n.arm_timer(to, sender.rid, out);
        }
        let declared = |dr: Option<Ipv4Addr>, bdr: Option<Ipv4Addr>| (dr == Some(addr), bdr == Some(addr));
        let nbr_change = n.prio != s_prio || declared(n.dr, n.bdr) != declared(s_dr, s_bdr);
        n.prio = s_prio;
        n.dr = s_dr;
        n.bdr = s_bdr;
        if !lists_me {
            // 1-WayReceived: the neighbour no longer sees us; processing stops here.
            if n.state >= NbrState::TwoWay {
                n.state = NbrState::Init;
                self.neighbor_change(net, now, to, out);
                return true;
            }
            return is_new;
        }
        let two_way = n.state == NbrState::Init;
        if two_way {
            n.state = NbrState::TwoWay;
        }
        let state = me.state;
        if state == IfSm::Waiting {
            let backup_seen = s_bdr == Some(addr) || (s_dr == Some(addr) && s_bdr.is_none());
            if backup_seen {
                self.elect(net, now, to, out);
                return true;
            }
        } else if state != IfSm::PointToPoint && (two_way || nbr_change) {
            self.elect(net, now, to, out);
            return true;
        }
        if two_way {
            self.check_adjacencies(net, now, to, out);
        }
        two_way || nbr_change || is_new
    }

    fn neighbor_change(&mut self, net: &Network, now: u64, i: IfId, out: &mut Out) {
        match self.ifs[i.idx()].state {
            IfSm::DrOther | IfSm::Backup | IfSm::Dr => self.elect(net, now, i, out),
            _ => self.check_adjacencies(net, now, i, out),
        }
    }

    /// RFC 2328 §9.4. Declarations already made win (no pre-emption): a router that declares
    /// itself DR stays DR while it lives.
    fn elect(&mut self, net: &Network, now: u64, i: IfId, out: &mut Out) {
        let Some(my_rid) = self.routers[Self::dev_of(net, i).idx()].as_ref().map(|r| r.rid) else {
            return;
        };
        let o = &self.ifs[i.idx()];
        let Some(my_addr) = o.addr.map(|a| a.addr()) else {
            return;
        };
        if o.p2p {
            return;
        }
        // (rid, prio, addr, declares DR, declares BDR)
        let others: Vec<(Ipv4Addr, u8, Ipv4Addr, bool, bool)> = o
            .nbrs
            .iter()
            .filter(|(_, n)| n.state >= NbrState::TwoWay && n.prio > 0)
            .map(|(rid, n)| (*rid, n.prio, n.addr, n.dr == Some(n.addr), n.bdr == Some(n.addr)))
            .collect();
        let mut my_dr = o.dr == Some(my_addr);
        let mut my_bdr = o.bdr == Some(my_addr);
        let my_prio = o.prio;
        let mut result = (None, None);
        for _round in 0..2 {
            let mut cands = others.clone();
            if my_prio > 0 {
                cands.push((my_rid, my_prio, my_addr, my_dr, my_bdr));
            }
            let rank = |c: &&(Ipv4Addr, u8, Ipv4Addr, bool, bool)| (c.1, c.0);
            let not_dr: Vec<_> = cands.iter().filter(|c| !c.3).collect();
            let bdr = not_dr
                .iter()
                .filter(|c| c.4)
                .max_by_key(|c| rank(c))
                .or_else(|| not_dr.iter().max_by_key(|c| rank(c)))
                .map(|c| c.2);
            let dr = cands.iter().filter(|c| c.3).max_by_key(rank).map(|c| c.2).or(bdr);
            result = (dr, bdr);
            let (now_dr, now_bdr) = (dr == Some(my_addr), bdr == Some(my_addr));
            if now_dr == my_dr && now_bdr == my_bdr {
                break;
            }
            my_dr = now_dr;
            my_bdr = now_bdr;
        }
        let o = &mut self.ifs[i.idx()];
        o.dr = result.0;
        o.bdr = result.1;
        o.state = if o.dr == Some(my_addr) {
            IfSm::Dr
        } else if o.bdr == Some(my_addr) {
            IfSm::Backup
        } else {
            IfSm::DrOther
        };
        self.check_adjacencies(net, now, i, out);
    }

    /// RFC 2328 §10.4: form adjacencies with the DR/BDR (or everyone, if we are DR/BDR, or on
    /// point-to-point links); tear down the ones no longer wanted.
    fn check_adjacencies(&mut self, net: &Network, now: u64, i: IfId, out: &mut Out) {
        let Some(my_rid) = self.routers[Self::dev_of(net, i).idx()].as_ref().map(|r| r.rid) else {
            return;
        };
        let exchange = net.device(Self::dev_of(net, i)).profile.ospf_exchange_ms;
        let o = &self.ifs[i.idx()];
        let me_designated = matches!(o.state, IfSm::Dr | IfSm::Backup);
        let decisions: Vec<(Ipv4Addr, bool)> = o
            .nbrs
            .iter()
            .filter(|(_, n)| n.state >= NbrState::TwoWay)
            .map(|(rid, n)| {
                let want = o.p2p || me_designated || o.dr == Some(n.addr) || o.bdr == Some(n.addr);
                (*rid, want)
            })
            .collect();
        for (rid, want) in decisions {
            let Some(n) = self.ifs[i.idx()].nbrs.get_mut(&rid) else {
                continue;
            };
            if want && n.state == NbrState::TwoWay {
                n.state = NbrState::ExStart;
                let peer_if = n.iface;
                // The exchange runs once both ends want it; then both go Full together.
                let peer_ready = self.ifs[peer_if.idx()]
                    .nbrs
                    .get(&my_rid)
                    .is_some_and(|p| p.state >= NbrState::ExStart);
                if peer_ready {
                    for (side, other) in [(i, rid), (peer_if, my_rid)] {
                        if let Some(x) = self.ifs[side.idx()].nbrs.get_mut(&other) {
                            x.state = NbrState::ExStart;
                            x.adj_gen += 1;
                            out.push((
                                now + exchange,
                                Event::AdjFull {
                                    iface: side,
                                    nbr: other,
                                    gen: x.adj_gen,
                                },
                            ));
                        }
                    }
                }
            } else if !want && n.state > NbrState::TwoWay {
                n.state = NbrState::TwoWay;
                n.adj_gen += 1;
            }
        }
    }

    /// What `show ip ospf neighbor` needs.
    pub(crate) fn view(&self, net: &Network, d: DeviceId, now: u64) -> Option<OspfView> {
        let r = self.routers.get(d.idx())?.as_ref()?;
        let dev = net.device(d);
        let mut neighbors = Vec::new();
        for &i in &dev.ifaces {
            let o = &self.ifs[i.idx()];
            for (rid, n) in &o.nbrs {
                let role = if o.p2p {
                    NbrRole::None
                } else if o.dr == Some(n.addr) {
                    NbrRole::Dr
                } else if o.bdr == Some(n.addr) {
                    NbrRole::Bdr
                } else {
                    NbrRole::DrOther
                };
                neighbors.push(OspfNeighbor {
                    router_id: *rid,
                    address: n.addr,
                    iface: i,
                    priority: n.prio,
                    state: n.state,
                    role,
                    dead_ms_left: (n.last_hello + dev.profile.ospf_dead_ms).saturating_sub(now),
                });
            }
        }
        let process_id = r.process_id;
        Some(OspfView {
            process_id,
            router_id: Some(r.rid),
            neighbors,
        })
    }

    /// Every OSPF router's routes from the shared LSDB (flooding what changed in it to the wire
    /// log, when one is kept). SPF runs on every router when the router or network LSAs
    /// changed; each router's table is then derived again only where the change reached it
    /// ([`spf`], [`table`]). The tables are shared, not copied: the caller reads them and lets
    /// go.
    pub(crate) fn routes(&mut self, net: &Network, st: &State, now: u64) -> BTreeMap<DeviceId, Routes> {
        let mut lsdb = self.build_lsdb(net);
        self.log_flooding(net, st, now, &lsdb);
        let externals = std::mem::take(&mut lsdb.externals);
        let last = self.last_spf.take();
        let same_lsdb = last.as_ref().is_some_and(|l| l.lsdb == lsdb);
        let moved = last
            .as_ref()
            .map(|l| table::moved_prefixes(&l.externals, &externals))
            .unwrap_or_default();
        let (area, by_asbr) = match &last {
            Some(l) if same_lsdb => (Arc::clone(&l.area), BTreeMap::new()),
            _ => (Arc::new(spf::Area::new(&lsdb)), table::prefixes_by_asbr(&externals)),
        };
        let change = match &last {
            Some(l) if !same_lsdb => Some(area.change_since(&l.area)),
            _ => None,
        };
        let (mut old, old_lsdb) = match last {
            Some(l) => (l.tables, Some(l.lsdb)),
            None => (BTreeMap::new(), None),
        };
        let mut tables = BTreeMap::new();
        for (d, r) in self.routers.iter().enumerate() {
            let Some(r) = r else { continue };
            let id = DeviceId(d as u32);
            let inputs = table::Inputs {
                root: r.rid,
                max_paths: max_paths(net, id),
                distance: net.device(id).profile.distance_ospf,
            };
            let own_lsa_kept = || {
                old_lsdb
                    .as_ref()
                    .is_some_and(|o| o.routers.get(&r.rid) == lsdb.routers.get(&r.rid))
            };
            let table = match old.remove(&id).filter(|t| t.inputs == inputs) {
                // The same LSDB makes the same tree: only moved externals are derived again.
                Some(t) if same_lsdb => t.update(None, &externals, &moved, &by_asbr),
                Some(t) => {
                    let tree = match &change {
                        Some(change) if own_lsa_kept() => spf::again(&area, &inputs, t.tree(), change),
                        _ => spf::afresh(&area, &inputs),
                    };
                    t.update(Some(tree), &externals, &moved, &by_asbr)
                }
                None => {
                    let tree = spf::afresh(&area, &inputs);
                    table::Table::new(inputs, tree, &externals)
                }
            };
            tables.insert(id, table);
        }
        let routes: BTreeMap<DeviceId, Routes> = tables
            .iter()
            .map(|(id, t)| {
                let routes = Routes {
                    all: Arc::clone(t.routes()),
                    intra_len: t.intra_len(),
                    moved: t.moved().map(<[Ipv4Net]>::to_vec),
                };
                (*id, routes)
            })
            .collect();
        // In unit tests every update of kept tables is checked against tables made afresh.
        #[cfg(test)]
        if old_lsdb.is_some() {
            let mut fresh = Ospf {
                last_spf: None,
                wire: None,
                ..self.clone()
            };
            let all = |r: &BTreeMap<DeviceId, Routes>| -> Vec<(DeviceId, Arc<Vec<Route>>)> {
                r.iter().map(|(d, t)| (*d, Arc::clone(&t.all))).collect()
            };
            assert_eq!(
                all(&fresh.routes(net, st, now)),
                all(&routes),
                "kept OSPF tables differ from fresh ones"
            );
        }
        self.last_spf = Some(SpfRun {
            lsdb,
            area,
            externals,
            tables,
        });
        routes
    }

    fn build_lsdb(&self, net: &Network) -> Lsdb {
        let mut db = Lsdb {
            externals: self.externals.clone(),
            ..Lsdb::default()
        };
        for (d, r) in self.routers.iter().enumerate() {
            let Some(r) = r else { continue };
            let dev = &net.devices[d];
            let mut links = Vec::new();
            for &i in &dev.ifaces {
                let o = &self.ifs[i.idx()];
                let (true, Some(addr)) = (o.active, o.addr) else {
                    continue;
                };
                let full: Vec<(&Ipv4Addr, &Nbr)> = o.nbrs.iter().filter(|(_, n)| n.state == NbrState::Full).collect();
                if o.p2p {
                    for (rid, _) in &full {
                        links.push(Link::P2p {
                            nbr: **rid,
                            my_addr: addr.addr(),
                            iface: i,
                            cost: o.cost,
                        });
                    }
                    links.push(Link::Stub {
                        net: addr.trunc(),
                        cost: o.cost,
                    });
                    continue;
                }
                let dr_full = o.dr.is_some_and(|dr| full.iter().any(|(_, n)| n.addr == dr));
                let i_am_dr_with_nbr = o.state == IfSm::Dr && !full.is_empty();
                if !o.passive && o.state != IfSm::Waiting && (i_am_dr_with_nbr || dr_full) {
                    if let Some(dr) = o.dr {
                        links.push(Link::Transit {
                            dr,
                            my_addr: addr.addr(),
                            iface: i,
                            cost: o.cost,
                        });
                    }
                } else {
                    links.push(Link::Stub {
                        net: addr.trunc(),
                        cost: o.cost,
                    });
                }
                if i_am_dr_with_nbr {
                    let mut attached: Vec<Ipv4Addr> = full.iter().map(|(rid, _)| **rid).collect();
                    attached.push(r.rid);
                    attached.sort();
                    db.networks.insert(
                        addr.addr(),
                        NetworkLsa {
                            net: addr.trunc(),
                            attached,
                            origin: r.rid,
                        },
                    );
                }
            }
            db.routers.insert(r.rid, RouterLsa { links });
        }
        db
    }

    /// Originate AS-external LSAs from what each router has installed (`redistribute` takes
    /// active routes only, bgp-profiles.md §6). Returns the prefixes whose LSAs changed.
    pub(crate) fn originate(&mut self, net: &Network, st: &State, first: &mut dyn FnMut(usize) -> usize) -> Originated {
        let mut ext = BTreeMap::new();
        // Routers that start redistributing a BGP route for a prefix in this recompute.
        let mut fresh_bgp: BTreeMap<Ipv4Net, Vec<Ipv4Addr>> = BTreeMap::new();
        for (d, r) in self.routers.iter().enumerate() {
            let (Some(r), Some(cfg)) = (r, &net.devices[d].ospf) else {
                continue;
            };
            let dev = &net.devices[d];
            for red in &cfg.redistribute {
                for rt in st.devices[d].fib.iter() {
                    let matches = match red.source {
                        RedistSource::Static => rt.proto == Proto::Static,
                        RedistSource::Connected => {
                            rt.proto == Proto::Connected
                                && rt.nexthops.iter().all(|nh| !self.ifs[nh.iface.idx()].active)
                        }
                        RedistSource::Bgp => matches!(rt.proto, Proto::BgpExternal | Proto::BgpInternal),
                    };
                    if !matches {
                        continue;
                    }
                    let metric = red.metric.unwrap_or(if rt.prefix.prefix_len() == 0 {
                        dev.profile.ospf_redist_default_metric
                    } else {
                        dev.profile.ospf_redist_metric
                    });
                    let e1 = red.metric_type.unwrap_or(dev.profile.ospf_redist_metric_type) == 1;
                    let key = (rt.prefix, r.rid);
                    if red.source == RedistSource::Bgp && !self.externals.contains_key(&key) && !ext.contains_key(&key)
                    {
                        fresh_bgp.entry(rt.prefix).or_default().push(r.rid);
                    }
                    ext.insert(key, External { metric, e1 });
                }
            }
        }
        // fabsim's clock counts milliseconds; two routers whose BGP routes for one prefix became
        // active in the same one are still never simultaneous to the microsecond. The first to
        // redistribute is drawn from the run's seed; the others hold theirs back, and the
        // recompute at once that follows shows them its E2 (which beats eBGP's distance 200, so
        // they keep it) — instead of all of them redistributing in one recompute, seeing each
        // other's E2, withdrawing, and doing it again in step forever.
        let mut held_back = false;
        for (p, rids) in fresh_bgp {
            if rids.len() < 2 {
                continue;
            }
            let keep = first(rids.len());
            for (i, rid) in rids.into_iter().enumerate() {
                if i != keep {
                    ext.remove(&(p, rid));
                    held_back = true;
                }
            }
        }
        let changed = table::moved_prefixes(&self.externals, &ext);
        self.ever.extend(ext.keys().copied());
        self.externals = ext;
        Originated {
            changed: changed.into_iter().collect(),
            held_back,
        }
    }

    /// The routers that originated an external LSA for `prefix` at some point of the current
    /// run (for oscillation reports).
    pub(crate) fn asbrs_ever(&self, prefix: Ipv4Net) -> Vec<DeviceId> {
        let rids: BTreeSet<Ipv4Addr> = self
            .ever
            .iter()
            .filter(|(p, _)| *p == prefix)
            .map(|(_, r)| *r)
            .collect();
        (0..self.routers.len())
            .filter(|d| self.routers[*d].as_ref().is_some_and(|r| rids.contains(&r.rid)))
            .map(|d| DeviceId(d as u32))
            .collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Link {
    P2p {
        nbr: Ipv4Addr,
        my_addr: Ipv4Addr,
        iface: IfId,
        cost: u32,
    },
    Transit {
        dr: Ipv4Addr,
        my_addr: Ipv4Addr,
        iface: IfId,
        cost: u32,
    },
    Stub {
        net: Ipv4Net,
        cost: u32,
    },
}

#[derive(Clone, Debug, PartialEq)]
struct RouterLsa {
    links: Vec<Link>,
}

#[derive(Clone, Debug, PartialEq)]
struct NetworkLsa {
    net: Ipv4Net,
    attached: Vec<Ipv4Addr>,
    /// The DR's router id (the advertising router).
    origin: Ipv4Addr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct External {
    metric: u32,
    e1: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Lsdb {
    routers: BTreeMap<Ipv4Addr, RouterLsa>,
    /// Keyed by the DR's interface address (the network LSA's link state ID).
    networks: BTreeMap<Ipv4Addr, NetworkLsa>,
    /// (prefix, advertising router) → metric and type.
    externals: BTreeMap<(Ipv4Net, Ipv4Addr), External>,
}

/// Distance and next hops to every router an SPF tree reaches (the ASBRs among them).
type Reached = BTreeMap<Ipv4Addr, (u32, BTreeSet<NextHop>)>;

fn max_paths(net: &Network, dev: DeviceId) -> usize {
    let d = net.device(dev);
    d.ospf
        .as_ref()
        .and_then(|c| c.max_paths)
        .map_or(d.profile.ospf_max_ecmp, |m| m as usize)
}

/// A route to `prefix` over the first `max_paths` of `hops` (in next-hop order).
fn mk_route(
    prefix: Ipv4Net,
    proto: Proto,
    distance: u8,
    metric: u32,
    hops: impl IntoIterator<Item = NextHop>,
    max_paths: usize,
) -> Route {
    Route {
        prefix,
        proto,
        distance,
        metric,
        nexthops: hops.into_iter().take(max_paths.max(1)).collect(),
        src: None,
        blackhole: false,
        unreachable: false,
        linux_proto: Some(LinuxProto::Ospf),
        scope_link: false,
        onlink: false,
    }
}
