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
//!   see), an EOS NAT ACL on the egress interface, a MASQUERADE rule that matches the request
//!   (`Walk::apply_nat`; either would change the reply's destination), a next hop that does
//!   not answer ARP (the same `arp` the walk uses);
//! - branches delivering to different devices (anycast), a branch coming back to a device
//!   whose fate is being computed (a loop), more forwarding decisions than the TTL allows.
//!
//! kube-proxy's rules never touch an echo (`Walk::service_dnat` handles TCP and UDP only), and
//! without NAT the reply's addresses are the request's swapped, so conntrack has nothing to
//! undo. TTL: a packet arriving with TTL t at a device that forwards it `f` more times
//! (counting that device) is delivered iff t > f, since each forwarding device needs TTL > 1
//! and decrements it, and the sender does not decrement.
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
use crate::model::{DeviceId, DeviceKind, Masquerade, Network};

/// Forwarding decisions beyond which nothing is proven: a TTL is at most 255, and the analysis'
/// recursion stays this deep at most.
const MAX_FORWARDS: u8 = u8::MAX - 1;

/// MASQUERADE rules a flow can tell apart (one bit each); a device with a later rule is never
/// proven to leave a request alone.
const MAX_RULES: usize = 64;

/// What every branch does with a packet of one flow, from one device on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Every branch delivers it to `dev` after at most `forwards` forwarding decisions.
    Delivered { dev: DeviceId, forwards: u8 },
    /// Some branch ends otherwise, or does what the analysis does not follow: only the walk
    /// with the pair's own hash can tell.
    Unproven,
    /// Being computed: a branch that comes back here is a loop.
    Open,
    /// Not computed yet.
    Unknown,
}

/// What a transit hop's decision depends on besides the device: the destination address, and
/// for MASQUERADE (`Walk::apply_nat`, requests only) which rules' source sets hold the source
/// address — together the flow's kind. The rest of the source address only enters the hash.
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
    /// Flow kinds seen: (bit i: the source is in `rules[i]`'s source networks, a request).
    kinds: Vec<(u64, bool)>,
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
        let request = self.flow(src, dst, true);
        let Some(answerer) = self.sent(from, request) else {
            return false;
        };
        if answerer == from {
            return false;
        }
        // The reply: from the destination's address back to the request's source.
        let reply = self.flow(dst, src, false);
        self.sent(answerer, reply) == Some(from)
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

    fn flow(&mut self, src: Ipv4Addr, dst: Ipv4Addr, request: bool) -> Flow {
        // A reply is never NATed on its way (only requests are, `Walk::apply_nat`), so its
        // source's rules do not matter: all replies to one address share their fates.
        let masq_src = if request {
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
            .position(|k| *k == (masq_src, request))
            .unwrap_or_else(|| {
                self.kinds.push((masq_src, request));
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
        let (masq_src, request) = self.kinds[flow.kind];
        match self.rule_of[dev.idx()] {
            _ if !request => false,
            None => false,
            Some(i) if i >= MAX_RULES => true,
            Some(i) => masq_src & 1 << i != 0 && !self.rules[i].not_dst.iter().any(|n| n.contains(&flow.dst)),
        }
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends with its own TTL
    /// (the sender does not decrement it).
    fn sent(&mut self, origin: DeviceId, flow: Flow) -> Option<DeviceId> {
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
            Fate::Delivered { dev, forwards } if net.device(origin).profile.ttl > forwards => Some(dev),
            _ => None,
        }
    }

    /// The devices the next hops lead to must all deliver to one device: which, and the most
    /// forwarding decisions from them on.
    fn all_deliver(&mut self, next: &[DeviceId], flow: Flow, depth: u8) -> Fate {
        let mut all: Option<(DeviceId, u8)> = None;
        for &hop in next {
            let Fate::Delivered { dev: to, forwards } = self.arrive(hop, flow, depth) else {
                return Fate::Unproven;
            };
            all = match all {
                Some((d, _)) if d != to => return Fate::Unproven,
                Some((d, f)) => Some((d, f.max(forwards))),
                None => Some((to, forwards)),
            };
        }
        all.map_or(Fate::Unproven, |(dev, forwards)| Fate::Delivered { dev, forwards })
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
            return Fate::Delivered { dev, forwards: 0 };
        }
        let d = net.device(dev);
        if d.external.is_some()
            || (d.kind == DeviceKind::Linux && !d.ip_forward)
            || depth >= MAX_FORWARDS
            || self.masquerades(dev, flow)
        {
            return Fate::Unproven;
        }
        let Some(route) = st.devices[dev.idx()].fib.lookup(flow.dst) else {
            return Fate::Unproven;
        };
        let mut next = Vec::with_capacity(route.nexthops.len());
        if !next_devices(net, st, route, flow.dst, &mut next) {
            return Fate::Unproven;
        }
        match self.all_deliver(&next, flow, depth + 1) {
            Fate::Delivered { dev: to, forwards } if forwards < MAX_FORWARDS => Fate::Delivered {
                dev: to,
                forwards: forwards + 1,
            },
            _ => Fate::Unproven,
        }
    }
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
