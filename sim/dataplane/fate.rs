//! What *every* ECMP branch of an echo does, so the reachability matrix walks only the pairs
//! whose answer depends on the branch their flow hash picks.
//!
//! A walk (`walk.rs`) follows one next hop per route, chosen by the flow hash of the packet's
//! source and destination addresses. A packet to address `a` that reaches device X goes on by
//! X's route for `a` — the same route for every destination in `a`'s forwarding-equivalence
//! class at X —, and the hash only picks among that route's next hops. So if every next hop of
//! every route on the way delivers `a` to the same device, every source's packet to `a` that
//! reaches X is delivered there, whatever its hash: [`Fates`] computes that once per
//! (device, [`Flow`]) and shares it between every source whose walks pass X (the sources behind
//! one leaf all meet at it; every leaf's packets to `a` meet at the spines). The matrix then
//! needs, per pair, only the source's own first decision and the answerer's (the two ends,
//! where the source address is chosen), and walks with the pair's real hash only what is not
//! proven this way: branches that disagree, and every failure (whose hops the report explains).
//! The ends' decisions are grouped too: a device's forwarding-equivalence block around an
//! address (`Fib::lookup_block`) sends every address in it by the same route, so one lookup
//! serves all the destinations (or, for the answer, sources) in the block.
//!
//! # Why a proven pair's verdict is the per-pair walk's
//!
//! [`Fates::echo_answered`] returns true only if, for the echo request and then its reply,
//! every choice of next hops is delivered, within the TTL, to the device the exact walk must
//! reach. The exact walk makes one of those choices at each router (`hash % next hops`), so
//! it is delivered too, provided each hop of the analysis decides as the walk's hop does. It
//! follows the walk's order (`Walk::walk`) and gives up (unproven) wherever the walk would do
//! something that depends on more than the destination address and the route:
//!
//! - at the source: a destination it owns (the walk answers locally), no route, a blackhole,
//!   unreachable or empty route, no source address (`probe_with`);
//! - at a transit device: delivery when it owns the address (first, as in the walk); then an
//!   external network's responders, a Linux host without `ip_forward`, no route, an
//!   unreachable or blackhole route (the walk's failures, and ICMP errors whose reply would
//!   need the walk);
//! - on every next hop: a tunnel device (encapsulation changes the addresses the next routers
//!   see), an EOS NAT ACL on the egress interface, a next hop that does not answer ARP (the
//!   same `arp` the walk uses);
//! - a MASQUERADE rule that matches the request (`Walk::apply_nat`), unless it is the first
//!   translation on the way, the route's next hops all leave by one interface (so one outside
//!   address, `source_for`, for every branch) and the rule's sources do not hold that address
//!   (so the source is surely rewritten); and a second translation (the walk keeps one);
//! - branches delivering to different devices (anycast) or masqueraded at different points, a
//!   branch coming back to a device whose fate is being computed (a loop), more forwarding
//!   decisions than the TTL allows.
//!
//! kube-proxy's rules never touch an echo (`Walk::service_dnat` handles TCP and UDP only), and
//! without NAT the reply's addresses are the request's swapped, so conntrack has nothing to
//! undo. After MASQUERADE at device M out of interface E (felix's natOutgoing: a pod's echo to
//! a host), the answerer replies to M's outside address; the walk gives the reply the pod's
//! address back only where it enters M by E (`Walk::undo_nat`), and M then forwards it by
//! its route to the pod. So the analysis proves, for the reply: every branch to the outside
//! address is delivered to M; no neighbour that forwards would send a packet for that address
//! into M by another interface (any last hop into M is such a neighbour, or the answerer
//! itself, which must not be a neighbour doing so either: `entering_elsewhere`); and from M
//! every branch to the pod's address is delivered to the source, the two legs' forwarding
//! decisions together within the answerer's TTL. TTL: a packet arriving with TTL t at a device
//! that forwards it `f` more times (counting that device) is delivered iff t > f, since each
//! forwarding device needs TTL > 1 and decrements it, and the sender does not decrement.
//!
//! A proven pair adds nothing to the matrix's findings: a blackhole hop ends a walk undelivered,
//! and a walk that is delivered never forwards from one device twice — the second time it
//! would choose the same next hop (same route, same hash: the packet is unchanged without NAT
//! or tunnels) and circle until its TTL ran out.

use std::net::Ipv4Addr;

use fnv::FnvHashMap;
use ipnet::Ipv4Net;

use super::walk::{arp, source_for};
use crate::engine::state::Route;
use crate::engine::{local_iface, State};
use crate::model::{DeviceId, DeviceKind, IfId, Masquerade, Network};

/// Forwarding decisions beyond which nothing is proven: a TTL is at most 255, and the analysis'
/// recursion stays this deep at most.
const MAX_FORWARDS: u8 = u8::MAX - 1;

/// MASQUERADE rules a flow can tell apart (one bit each); a device with a later rule is never
/// proven to leave a request alone.
const MAX_RULES: usize = 64;

/// What every branch does with a packet of one flow, from one device on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Every branch delivers it to `dev` after at most `forwards` forwarding decisions, having
    /// been masqueraded on the way at NAT point `nat - 1` (0: not at all).
    Delivered { dev: DeviceId, forwards: u8, nat: u16 },
    /// Some branch ends otherwise, or does what the analysis does not follow: only the walk
    /// with the pair's own hash can tell.
    Unproven,
    /// Being computed: a branch that comes back here is a loop.
    Open,
    /// Not computed yet.
    Unknown,
}

/// Which leg of an echo a packet is on: MASQUERADE rewrites requests only (`Walk::apply_nat`),
/// and a request it rewrote is not rewritten again (the walk keeps one translation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Leg {
    Request,
    /// A request after MASQUERADE, its source the NAT device's address.
    Masqueraded,
    Reply,
}

/// A device that masquerades requests out of one interface (`Fates::nat_index` names it):
/// conntrack undoes the translation for an answer that comes back to `outside` through that
/// interface (`Walk::undo_nat`).
struct NatPoint {
    dev: DeviceId,
    outside: Ipv4Addr,
    /// Neighbours that do not forward (a pod behind its `cali…` veth, a host) whose own packets
    /// to `outside` enter `dev` by another interface: as answerers, their replies are not
    /// un-NATed (sorted). None: a router could bring the answer in elsewhere.
    enter_elsewhere: Option<Vec<DeviceId>>,
}

/// What a transit hop's decision depends on besides the device: the destination address, and
/// for MASQUERADE which rules' source sets hold the source address and the echo's leg —
/// together the flow's kind. The rest of the source address only enters the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Flow {
    dst: Ipv4Addr,
    /// The destination's index among the caller's targets, when it is one (dense memo rows).
    target: Option<u32>,
    /// Index into `Fates::kinds`.
    kind: usize,
}

/// How a device sends what it originates to one forwarding-equivalence block: the route, the
/// source address the walk would choose, and the devices the next hops lead to when that does
/// not depend on the destination (every next hop has a gateway to ARP for, none is a tunnel or
/// NATs by ACL); None: decided per destination.
struct Send<'a> {
    block: Ipv4Net,
    route: &'a Route,
    src: Option<Ipv4Addr>,
    next: Option<Vec<DeviceId>>,
}

/// The fates of packets arriving at devices, per (device, flow), for one state.
pub struct Fates<'a> {
    net: &'a Network,
    st: &'a State,
    /// The distinct MASQUERADE rules (felix writes the same one on every node) and each
    /// device's, by index.
    rules: Vec<&'a Masquerade>,
    rule_of: Vec<Option<usize>>,
    /// Flow kinds seen: (bit i: the source is in `rules[i]`'s source networks, the leg).
    kinds: Vec<(u64, Leg)>,
    /// Where requests were masqueraded on the way, by (device, egress) in `nat_index`.
    nats: Vec<NatPoint>,
    nat_index: FnvHashMap<(DeviceId, IfId), u16>,
    /// Dense indices of the addresses the caller will ask about (the matrix's endpoints).
    targets: FnvHashMap<Ipv4Addr, u32>,
    /// `rows[kind][device][target]`: fates of flows to targets, allocated per device reached.
    rows: Vec<Vec<Option<Box<[Fate]>>>>,
    /// Fates of flows to other addresses.
    others: FnvHashMap<(DeviceId, Flow), Fate>,
    /// Per device, the block its last originated packet went to.
    sends: Vec<Option<Send<'a>>>,
}

impl<'a> Fates<'a> {
    /// For questions mostly about `targets` (others are answered too, less cheaply).
    pub fn new(net: &'a Network, st: &'a State, targets: impl IntoIterator<Item = Ipv4Addr>) -> Fates<'a> {
        let mut rules: Vec<&'a Masquerade> = Vec::new();
        let rule_of = net
            .devices
            .iter()
            .map(|d| {
                let m = d.masquerade.as_ref()?;
                Some(rules.iter().position(|r| *r == m).unwrap_or_else(|| {
                    rules.push(m);
                    rules.len() - 1
                }))
            })
            .collect();
        let mut index = FnvHashMap::default();
        for a in targets {
            let next = index.len() as u32;
            index.entry(a).or_insert(next);
        }
        Fates {
            net,
            st,
            rules,
            rule_of,
            kinds: Vec::new(),
            nats: Vec::new(),
            nat_index: FnvHashMap::default(),
            targets: index,
            rows: Vec::new(),
            others: FnvHashMap::default(),
            sends: (0..net.devices.len()).map(|_| None).collect(),
        }
    }

    /// Whether `probe(net, st, from, dst, from's TTL, ProbeKind::Echo, _)` surely gets its echo
    /// reply from `dst`, whichever next hops the flow hash picks. False means not proven: the
    /// walk decides.
    pub fn echo_answered(&mut self, from: DeviceId, dst: Ipv4Addr) -> bool {
        if local_iface(self.net, self.st, from, dst).is_some() {
            return false;
        }
        // The source address the walk puts on the request (`probe_with`).
        let Some(src) = self.send_block(from, dst).and_then(|s| s.src) else {
            return false;
        };
        let request = self.flow(src, dst, Leg::Request);
        let Some((answerer, nat)) = self.sent(from, request) else {
            return false;
        };
        if answerer == from {
            return false;
        }
        match nat {
            // The reply: from the destination's address back to the request's source.
            None => {
                let reply = self.flow(dst, src, Leg::Reply);
                self.sent(answerer, reply) == Some((from, None))
            }
            Some(point) => self.answered_through_nat(from, src, dst, answerer, point),
        }
    }

    /// The reply to a request masqueraded at `point` goes to the outside address, must enter
    /// the NAT device by the interface the request left by (where conntrack gives it the
    /// request's source back: `Walk::undo_nat`), and is forwarded from there to `from`, all
    /// within the answerer's TTL.
    fn answered_through_nat(
        &mut self,
        from: DeviceId,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        answerer: DeviceId,
        point: usize,
    ) -> bool {
        let (nat_dev, outside) = (self.nats[point].dev, self.nats[point].outside);
        // `masquerade` hands out only points whose reply cannot enter elsewhere by a router.
        let enters_by_egress = self.nats[point]
            .enter_elsewhere
            .as_ref()
            .is_some_and(|answerers| answerers.binary_search(&answerer).is_err());
        if answerer == nat_dev || !enters_by_egress {
            return false;
        }
        let to_outside = self.flow(dst, outside, Leg::Reply);
        let Some((at, before, _)) = self.delivered(answerer, to_outside) else {
            return false;
        };
        if at != nat_dev {
            return false;
        }
        let to_inside = self.flow(dst, src, Leg::Reply);
        let Fate::Delivered { dev, forwards, .. } = self.arrive(nat_dev, to_inside, 0) else {
            return false;
        };
        dev == from && u16::from(self.net.device(answerer).profile.ttl) > u16::from(before) + u16::from(forwards)
    }

    /// `dev`'s sending to `dst`'s block, looked up again only outside the last block.
    fn send_block(&mut self, dev: DeviceId, dst: Ipv4Addr) -> Option<&Send<'a>> {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        let slot = &mut self.sends[dev.idx()];
        if !slot.as_ref().is_some_and(|s| s.block.contains(&dst)) {
            let (route, block) = st.devices[dev.idx()].fib.lookup_block(dst)?;
            let src = route
                .nexthops
                .first()
                .and_then(|nh| route.src.or_else(|| source_for(net, st, dev, nh.iface)));
            let mut next = Vec::with_capacity(route.nexthops.len());
            let fixed =
                route.nexthops.iter().all(|nh| nh.via.is_some()) && next_devices(net, st, route, dst, &mut next);
            *slot = Some(Send {
                block,
                route,
                src,
                next: fixed.then_some(next),
            });
        }
        slot.as_ref()
    }

    fn flow(&mut self, src: Ipv4Addr, dst: Ipv4Addr, leg: Leg) -> Flow {
        // A reply is never NATed on its way (only requests are, `Walk::apply_nat`), so its
        // source's rules do not matter: all replies to one address share their fates.
        let masq_src = if leg != Leg::Reply {
            self.rules
                .iter()
                .take(MAX_RULES)
                .enumerate()
                .filter(|(_, r)| r.src.iter().any(|n| n.contains(&src)))
                .fold(0, |bits, (i, _)| bits | 1 << i)
        } else {
            0
        };
        let kind = self
            .kinds
            .iter()
            .position(|k| *k == (masq_src, leg))
            .unwrap_or_else(|| {
                self.kinds.push((masq_src, leg));
                self.rows.push(vec![None; self.net.devices.len()]);
                self.kinds.len() - 1
            });
        Flow {
            dst,
            target: self.targets.get(&dst).copied(),
            kind,
        }
    }

    /// Whether `dev`'s MASQUERADE rule may rewrite a packet of `flow` (`Masquerade::matches`,
    /// with the source known only by the rules it matches).
    fn masquerades(&self, dev: DeviceId, flow: Flow) -> bool {
        let (masq_src, leg) = self.kinds[flow.kind];
        match self.rule_of[dev.idx()] {
            _ if leg == Leg::Reply => false,
            None => false,
            Some(i) if i >= MAX_RULES => true,
            Some(i) => masq_src & 1 << i != 0 && !self.rules[i].not_dst.iter().any(|n| n.contains(&flow.dst)),
        }
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends with its own TTL
    /// (the sender does not decrement it), and the NAT point it was masqueraded at, if any.
    fn sent(&mut self, origin: DeviceId, flow: Flow) -> Option<(DeviceId, Option<usize>)> {
        let (to, forwards, nat) = self.delivered(origin, flow)?;
        (self.net.device(origin).profile.ttl > forwards).then_some((to, nat))
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends, after how many
    /// forwarding decisions at most (the TTL it needs is more), and its NAT point.
    fn delivered(&mut self, origin: DeviceId, flow: Flow) -> Option<(DeviceId, u8, Option<usize>)> {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        if self.masquerades(origin, flow) {
            return None;
        }
        let route = self.send_block(origin, flow.dst)?.route;
        // Taken out of `self` while the branches are followed, then put back.
        let send = self.sends[origin.idx()].take();
        let fate = match send.as_ref().and_then(|s| s.next.as_deref()) {
            Some(next) => self.all_deliver(next, flow, 0),
            None => {
                let mut next = Vec::with_capacity(route.nexthops.len());
                if next_devices(net, st, route, flow.dst, &mut next) {
                    self.all_deliver(&next, flow, 0)
                } else {
                    Fate::Unproven
                }
            }
        };
        self.sends[origin.idx()] = send;
        match fate {
            Fate::Delivered { dev, forwards, nat } => Some((dev, forwards, nat.checked_sub(1).map(usize::from))),
            _ => None,
        }
    }

    /// The devices the next hops lead to must all deliver to one device, masqueraded at the
    /// same point: which, and the most forwarding decisions from them on.
    fn all_deliver(&mut self, next: &[DeviceId], flow: Flow, depth: u8) -> Fate {
        let mut all: Option<Fate> = None;
        for &hop in next {
            let fate @ Fate::Delivered { dev: to, forwards, nat } = self.arrive(hop, flow, depth) else {
                return Fate::Unproven;
            };
            all = match all {
                Some(Fate::Delivered {
                    dev,
                    forwards: most,
                    nat: at,
                }) if dev == to && at == nat => Some(Fate::Delivered {
                    dev,
                    forwards: most.max(forwards),
                    nat,
                }),
                Some(_) => return Fate::Unproven,
                None => Some(fate),
            };
        }
        all.unwrap_or(Fate::Unproven)
    }

    /// The memo slot of (`dev`, `flow`).
    fn slot(&mut self, dev: DeviceId, flow: Flow) -> &mut Fate {
        match flow.target {
            Some(t) => {
                let targets = self.targets.len();
                let row = self.rows[flow.kind][dev.idx()].get_or_insert_with(|| vec![Fate::Unknown; targets].into());
                &mut row[t as usize]
            }
            None => self.others.entry((dev, flow)).or_insert(Fate::Unknown),
        }
    }

    /// The fate of a packet of `flow` that a neighbour forwarded to `dev`, computed once.
    fn arrive(&mut self, dev: DeviceId, flow: Flow, depth: u8) -> Fate {
        match *self.slot(dev, flow) {
            Fate::Open => return Fate::Unproven,
            Fate::Unknown => {}
            known => return known,
        }
        *self.slot(dev, flow) = Fate::Open;
        let fate = self.transit(dev, flow, depth);
        *self.slot(dev, flow) = fate;
        fate
    }

    /// A transit hop, in `Walk::walk`'s order: delivered if `dev` owns the address, else
    /// forwarded by its route (one more decision).
    fn transit(&mut self, dev: DeviceId, flow: Flow, depth: u8) -> Fate {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        if local_iface(net, st, dev, flow.dst).is_some() {
            return Fate::Delivered {
                dev,
                forwards: 0,
                nat: 0,
            };
        }
        let d = net.device(dev);
        if d.external.is_some() || (d.kind == DeviceKind::Linux && !d.ip_forward) || depth >= MAX_FORWARDS {
            return Fate::Unproven;
        }
        let Some(route) = st.devices[dev.idx()].fib.lookup(flow.dst) else {
            return Fate::Unproven;
        };
        let mut next = Vec::with_capacity(route.nexthops.len());
        if !next_devices(net, st, route, flow.dst, &mut next) {
            return Fate::Unproven;
        }
        let (onward, here) = if self.masquerades(dev, flow) {
            match self.masquerade(dev, flow, route) {
                Some(masqueraded) => masqueraded,
                None => return Fate::Unproven,
            }
        } else {
            (flow, 0)
        };
        match self.all_deliver(&next, onward, depth + 1) {
            Fate::Delivered { dev: to, forwards, nat } if forwards < MAX_FORWARDS => Fate::Delivered {
                dev: to,
                forwards: forwards + 1,
                nat: nat.max(here),
            },
            _ => Fate::Unproven,
        }
    }

    /// `dev` masquerades a request of `flow` that leaves by `route` (`Walk::apply_nat`): the
    /// flow it goes on as, with the NAT device's address for source, and its NAT point (plus
    /// one). None where the translation depends on the branch or on the source address.
    fn masquerade(&mut self, dev: DeviceId, flow: Flow, route: &Route) -> Option<(Flow, u16)> {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        if self.kinds[flow.kind].1 == Leg::Masqueraded {
            return None;
        }
        // The outside address is the egress interface's: one for every branch.
        let egress = route.nexthops.first()?.iface;
        if route.nexthops.iter().any(|nh| nh.iface != egress) {
            return None;
        }
        let rule = self.rule_of[dev.idx()].filter(|i| *i < MAX_RULES)?;
        let outside = source_for(net, st, dev, egress)?;
        // A source that is the outside address itself is not translated; the flow's kind does
        // not tell the two apart unless the rule's sources exclude the outside address.
        if self.rules[rule].src.iter().any(|n| n.contains(&outside)) {
            return None;
        }
        let point = match self.nat_index.get(&(dev, egress)) {
            Some(p) => *p,
            None => {
                let p = u16::try_from(self.nats.len() + 1).ok().filter(|p| *p < u16::MAX)?;
                let enter_elsewhere = entering_elsewhere(net, st, dev, egress, outside);
                self.nats.push(NatPoint {
                    dev,
                    outside,
                    enter_elsewhere,
                });
                self.nat_index.insert((dev, egress), p);
                p
            }
        };
        self.nats[usize::from(point - 1)].enter_elsewhere.as_ref()?;
        let onward = self.flow(outside, flow.dst, Leg::Masqueraded);
        Some((onward, point))
    }
}

/// The neighbours of `dev` whose packets to `outside` enter it by an interface other than
/// `egress`, when none of them forwards: those could only be the answerer. None when a router
/// (or any forwarding device) would bring a packet to `outside` in by another interface.
fn entering_elsewhere(
    net: &Network,
    st: &State,
    dev: DeviceId,
    egress: IfId,
    outside: Ipv4Addr,
) -> Option<Vec<DeviceId>> {
    let mut answerers = Vec::new();
    for &other in net.device(dev).ifaces.iter().filter(|i| **i != egress) {
        for peer_if in net.l2_peers(other) {
            let peer = net.iface(peer_if).device;
            let enters_elsewhere = peer != dev
                && st.devices[peer.idx()].fib.lookup(outside).is_some_and(|r| {
                    r.nexthops.iter().any(|nh| {
                        arp(net, st, nh.iface, nh.via.unwrap_or(outside))
                            .is_some_and(|i| i != egress && net.iface(i).device == dev)
                    })
                });
            if !enters_elsewhere {
                continue;
            }
            // The analysis follows no packet through a device that does not forward (`transit`).
            let d = net.device(peer);
            if d.external.is_none() && (d.kind != DeviceKind::Linux || d.ip_forward) {
                return None;
            }
            answerers.push(peer);
        }
    }
    answerers.sort_unstable();
    answerers.dedup();
    Some(answerers)
}

/// The devices a packet to `dst` goes to by `route`, one per next hop, into `out`; false
/// where the walk would do what the analysis does not follow: an unreachable, blackhole or
/// empty route, a tunnel, an EOS NAT ACL on the way out, a next hop that does not answer ARP.
fn next_devices(net: &Network, st: &State, route: &Route, dst: Ipv4Addr, out: &mut Vec<DeviceId>) -> bool {
    if route.unreachable || route.blackhole || route.nexthops.is_empty() {
        return false;
    }
    for nh in &route.nexthops {
        let egress = net.iface(nh.iface);
        if egress.tunnel.is_some() || egress.nat_overload_acl.is_some() {
            return false;
        }
        let Some(next) = arp(net, st, nh.iface, nh.via.unwrap_or(dst)) else {
            return false;
        };
        out.push(net.iface(next).device);
    }
    true
}
