//! Time passing over a settled OSPF network, outside the engine's queue.
//!
//! Over a converged network OSPF is nothing but periodic timers: each hello re-arms its
//! interface's timer and moves its receivers' dead-interval deadlines, and each inactivity
//! timer finds a later hello and waits again (`schedule`). The seed lab's two long waits were
//! 153,000 such events, each taken through the engine's queue and dispatch and handled by
//! looking its interface, router and neighbours up again: about 830 instructions each.
//!
//! While only such timers are due (and BGP keepalives, which do not touch OSPF), a [`Steady`]
//! holds them, each hello's receivers found once, and fires them in the queue's (time, number)
//! order, taking the numbers the handlers would have taken. The hellos of one interval go
//! round in a fixed order (a [`Round`]): the one that fires next is due again an interval
//! later under the newest number, after every other pending hello of that interval, since
//! each of those is due within an interval of it (an equal time fires first: its number is
//! older). So they wait in a FIFO, and only the inactivity timers need a heap (a hello's sift
//! through one was two thirds of what it cost).
//!
//! When it hands them back ([`Steady::finish`]) every timer, deadline and number is what
//! handling the events one by one leaves, so the run goes on exactly as it would have. It takes
//! only what it can prove changes nothing else: a hello that a receiver would act on (a new or
//! one-way neighbour, a changed priority or DR/BDR, an interface still waiting), any other OSPF
//! event pending, or a capture tap makes [`Ospf::steady`] decline; a neighbour whose dead
//! interval runs out stops it ([`Steady::fire`]) before anything changes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::net::Ipv4Addr;
use std::ops::Range;

use super::{Event, IfSm, NbrState, Ospf, Out};
use crate::model::{IfId, Network};

/// The hello timers of one interval, in firing order: (time, number, sender). Every one is due
/// within `period` of the first, which keeps the order when the first goes to the back.
#[derive(Debug)]
struct Round {
    period: u64,
    timers: VecDeque<(u64, u64, u32)>,
}

/// An interface whose hellos change nothing but timers.
#[derive(Debug)]
struct Sender {
    iface: IfId,
    /// Someone hears it (its timer goes back to the engine's queue, else to `Ospf::unheard`).
    heard: bool,
    /// Its receivers' clocks, in the order `send_hello` reaches them (`Steady::receivers`).
    receivers: Range<usize>,
}

/// The timers of one neighbour (`Nbr`): where it is heard, and its router id.
#[derive(Debug)]
struct Clock {
    iface: IfId,
    rid: Ipv4Addr,
    dead_ms: u64,
    last_hello: u64,
    dead_at: u64,
    dead_seq: u64,
}

/// OSPF's periodic timers, taken out of the engine's queue while time passes.
#[derive(Debug)]
pub(crate) struct Steady {
    rounds: Vec<Round>,
    /// The timer that fires next (`find_head`).
    head: Option<((u64, u64), Next)>,
    /// The neighbours' inactivity timers by (time, number, clock); the numbers are unique, so
    /// the clock never decides.
    inactivity: BinaryHeap<Reverse<(u64, u64, u32)>>,
    senders: Vec<Sender>,
    receivers: Vec<usize>,
    clocks: Vec<Clock>,
}

impl Ospf {
    /// Take OSPF's timers out of the engine's hands for a steady run: `queued` is every OSPF
    /// event of the engine's queue, with its time and number, and the unheard hellos come out
    /// of `unheard`. Declined (`queued` handed back, nothing changed) unless every pending event
    /// is a periodic timer whose firing changes nothing but timers. Stale timers (a stopped
    /// hello, a gone neighbour's inactivity) are dropped: they would do nothing when they fire.
    pub(crate) fn steady(
        &mut self,
        net: &Network,
        queued: Vec<(u64, u64, Event)>,
    ) -> Result<Steady, Vec<(u64, u64, Event)>> {
        match self.plan_steady(net, &queued) {
            Some(steady) => {
                for Reverse((_, _, i)) in std::mem::take(&mut self.unheard) {
                    self.ifs[i.idx()].unheard -= 1;
                }
                Ok(steady)
            }
            None => Err(queued),
        }
    }

    fn plan_steady(&self, net: &Network, queued: &[(u64, u64, Event)]) -> Option<Steady> {
        if self.wire.is_some() {
            return None;
        }
        let mut s = Steady {
            rounds: Vec::new(),
            head: None,
            inactivity: BinaryHeap::new(),
            senders: Vec::new(),
            receivers: Vec::new(),
            clocks: Vec::new(),
        };
        let mut clock_of: BTreeMap<(IfId, Ipv4Addr), usize> = BTreeMap::new();
        // Each interface's live timer, the one due at its `hello_due`, in firing order: were
        // there two for that instant, the second would find the first had moved `hello_due`.
        let mut hellos: Vec<(u64, u64, IfId)> = queued
            .iter()
            .filter_map(|(at, seq, ev)| match ev {
                Event::Hello(i) => Some((*at, *seq, *i)),
                _ => None,
            })
            .chain(self.unheard.iter().map(|&Reverse(t)| t))
            .filter(|&(at, _, i)| self.ifs[i.idx()].hello_due == Some(at))
            .collect();
        hellos.sort_unstable();
        let mut sending = BTreeSet::new();
        hellos.retain(|&(_, _, i)| sending.insert(i));
        let mut by_period: BTreeMap<u64, Vec<(u64, u64, u32)>> = BTreeMap::new();
        for (at, seq, i) in hellos {
            let sender = self.steady_sender(net, i, &mut s, &mut clock_of)?;
            by_period
                .entry(Self::hello_ms(net, i))
                .or_default()
                .push((at, seq, sender as u32));
        }
        for (period, timers) in by_period {
            // Each interface's next hello is due within an interval of now, so within one of
            // the first: the round's order holds (checked all the same).
            let (Some(first), Some(last)) = (timers.first(), timers.last()) else {
                continue;
            };
            if last.0 > first.0 + period {
                return None;
            }
            s.rounds.push(Round {
                period,
                timers: timers.into(),
            });
        }
        for (at, armed, ev) in queued {
            match *ev {
                Event::Hello(_) => {}
                Event::Inactivity { iface, nbr, armed: a } if a == *armed => {
                    let live = self.ifs[iface.idx()].nbrs.get(&nbr).is_some_and(|n| n.timer == Some(a));
                    if live {
                        let c = self.clock(net, iface, nbr, &mut s, &mut clock_of)?;
                        s.inactivity.push(Reverse((*at, a, c as u32)));
                    }
                }
                _ => return None,
            }
        }
        s.find_head();
        Some(s)
    }

    /// The sender of `from`'s hellos, with the receivers whose timers they move; None if
    /// one would act on them (`receive_hello` would change more than timers) or the interface
    /// stops sending.
    fn steady_sender(
        &self,
        net: &Network,
        from: IfId,
        s: &mut Steady,
        clock_of: &mut BTreeMap<(IfId, Ipv4Addr), usize>,
    ) -> Option<usize> {
        let o = &self.ifs[from.idx()];
        let sender = self.routers[Self::dev_of(net, from).idx()].as_ref()?;
        if !o.active || o.passive {
            return None;
        }
        let start = s.receivers.len();
        let heard = !o.no_listener;
        if heard {
            for to in net.l2_peers(from) {
                let Some(me_router) = self.routers[Self::dev_of(net, to).idx()].as_ref() else {
                    continue;
                };
                let me = &self.ifs[to.idx()];
                if !me.takes_hellos_from(o) {
                    // `receive_hello` returns before taking a number.
                    continue;
                }
                let n = me.nbrs.get(&sender.rid)?;
                let settled = n.timer.is_some()
                    && n.state != NbrState::Init
                    && o.nbrs.contains_key(&me_router.rid)
                    && (n.prio, n.dr, n.bdr) == (o.prio, o.dr, o.bdr)
                    && me.state != IfSm::Waiting;
                if !settled {
                    return None;
                }
                let c = self.clock(net, to, sender.rid, s, clock_of)?;
                s.receivers.push(c);
            }
        }
        s.senders.push(Sender {
            iface: from,
            heard,
            receivers: start..s.receivers.len(),
        });
        Some(s.senders.len() - 1)
    }

    /// The clock of neighbour `rid` heard on `iface`.
    fn clock(
        &self,
        net: &Network,
        iface: IfId,
        rid: Ipv4Addr,
        s: &mut Steady,
        clock_of: &mut BTreeMap<(IfId, Ipv4Addr), usize>,
    ) -> Option<usize> {
        if let Some(&c) = clock_of.get(&(iface, rid)) {
            return Some(c);
        }
        let n = self.ifs[iface.idx()].nbrs.get(&rid)?;
        s.clocks.push(Clock {
            iface,
            rid,
            dead_ms: net.device(Self::dev_of(net, iface)).profile.ospf_dead_ms,
            last_hello: n.last_hello,
            dead_at: n.dead_at,
            dead_seq: n.dead_seq,
        });
        clock_of.insert((iface, rid), s.clocks.len() - 1);
        Some(s.clocks.len() - 1)
    }
}

/// Which timer fires next: a round's first hello, or the first inactivity timer.
#[derive(Clone, Copy, Debug)]
enum Next {
    Hello(usize),
    Inactivity,
}

impl Steady {
    /// The next timer and its (time, number), kept in `head`.
    fn find_head(&mut self) {
        let mut head = self
            .inactivity
            .peek()
            .map(|&Reverse((at, seq, _))| ((at, seq), Next::Inactivity));
        for (r, round) in self.rounds.iter().enumerate() {
            if let Some(&(at, seq, _)) = round.timers.front() {
                if head.is_none_or(|(key, _)| (at, seq) < key) {
                    head = Some(((at, seq), Next::Hello(r)));
                }
            }
        }
        self.head = head;
    }

    /// The (time, number) of the next timer.
    pub(crate) fn next(&self) -> Option<(u64, u64)> {
        self.head.map(|(key, _)| key)
    }

    /// Fire the next timer as its handler would, taking numbers after `seq` (the engine's
    /// last). False, with nothing changed, if it is a neighbour's inactivity timer with no
    /// hello since it was armed: the neighbour dies, which the engine's handler must do.
    pub(crate) fn fire(&mut self, seq: &mut u64) -> bool {
        let fired = self.fire_head(seq);
        if fired {
            self.find_head();
        }
        fired
    }

    fn fire_head(&mut self, seq: &mut u64) -> bool {
        match self.head {
            None => false,
            Some(((at, _), Next::Hello(r))) => {
                let round = &mut self.rounds[r];
                let Some((_, _, h)) = round.timers.pop_front() else {
                    return false;
                };
                let sender = &self.senders[h as usize];
                // `send_hello`: the next hello's number first, then each receiver's deadline.
                *seq += 1;
                round.timers.push_back((at + round.period, *seq, h));
                for &c in &self.receivers[sender.receivers.clone()] {
                    *seq += 1;
                    let c = &mut self.clocks[c];
                    c.last_hello = at;
                    c.dead_at = at + c.dead_ms;
                    c.dead_seq = *seq;
                }
                true
            }
            Some(((_, armed), Next::Inactivity)) => {
                let Some(mut top) = self.inactivity.peek_mut() else {
                    return false;
                };
                let c = top.0 .2;
                let clock = &self.clocks[c as usize];
                if clock.dead_seq == armed {
                    return false;
                }
                // Hellos came since it was armed: it waits for the last one's deadline.
                *top = Reverse((clock.dead_at, clock.dead_seq, c));
                true
            }
        }
    }

    /// Hand the timers back: the neighbours' deadlines and the interfaces' next hellos into
    /// `ospf`, the pending timers into `out` (heard hellos and inactivity timers, for the
    /// engine's queue) or `ospf`'s unheard hellos, each under its time and number.
    pub(crate) fn finish(self, ospf: &mut Ospf, out: &mut Out) {
        for c in &self.clocks {
            if let Some(n) = ospf.ifs[c.iface.idx()].nbrs.get_mut(&c.rid) {
                n.last_hello = c.last_hello;
                n.dead_at = c.dead_at;
                n.dead_seq = c.dead_seq;
            }
        }
        for (at, seq, h) in self.rounds.into_iter().flat_map(|r| r.timers) {
            let sender = &self.senders[h as usize];
            let o = &mut ospf.ifs[sender.iface.idx()];
            o.hello_due = Some(at);
            if sender.heard {
                out.at_seq(at, seq, Event::Hello(sender.iface));
            } else {
                o.unheard += 1;
                ospf.unheard.push(Reverse((at, seq, sender.iface)));
            }
        }
        for Reverse((at, seq, c)) in self.inactivity {
            let c = &self.clocks[c as usize];
            if let Some(n) = ospf.ifs[c.iface.idx()].nbrs.get_mut(&c.rid) {
                n.timer = Some(seq);
            }
            let ev = Event::Inactivity {
                iface: c.iface,
                nbr: c.rid,
                armed: seq,
            };
            out.at_seq(at, seq, ev);
        }
    }
}
