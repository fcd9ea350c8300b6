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

use super::walk::{arp, source_for};
use crate::engine::state::Route;
use crate::engine::{local_iface, State};
use crate::model::{DeviceId, DeviceKind, Masquerade, Network};

/// Forwarding decisions beyond which nothing is proven: a TTL is at most 255, and the analysis'
/// recursion stays this deep at most.
const MAX_FORWARDS: u8 = u8::MAX - 1;

/// What every branch does with a packet to one address, from one device on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// Every branch delivers it to `dev` after at most `forwards` forwarding decisions.
    Delivered { dev: DeviceId, forwards: u8 },
    /// Some branch ends otherwise, or does what the analysis does not follow: only the walk
    /// with the pair's own hash can tell.
    Unproven,
    /// Being computed: a branch that comes back here is a loop.
    Open,
}

/// What a transit hop's decision depends on besides the device: the destination address, and
/// for MASQUERADE (`Walk::apply_nat`, requests only) which rules' source sets hold the source
/// address. The rest of the source address only enters the flow hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Flow {
    dst: Ipv4Addr,
    /// Bit i: the source is in `Fates::rules[i]`'s source networks.
    masq_src: u64,
    /// A request (NAT applies on the way out) rather than a reply.
    request: bool,
}

/// The fates of packets arriving at devices, per (device, flow), for one state.
pub struct Fates<'a> {
    net: &'a Network,
    st: &'a State,
    /// The distinct MASQUERADE rules (felix writes the same one on every node) and each
    /// device's, by index; rules past the 64 a `Flow` can tell apart are `None` in
    /// `rule_of` while the device still has one (`unknown_rule`).
    rules: Vec<&'a Masquerade>,
    rule_of: Vec<Option<usize>>,
    arrived: FnvHashMap<(DeviceId, Flow), Fate>,
}

impl<'a> Fates<'a> {
    pub fn new(net: &'a Network, st: &'a State) -> Fates<'a> {
        let mut rules: Vec<&'a Masquerade> = Vec::new();
        let rule_of = net
            .devices
            .iter()
            .map(|d| {
                let m = d.masquerade.as_ref()?;
                match rules.iter().position(|r| *r == m) {
                    Some(i) => Some(i),
                    None => {
                        rules.push(m);
                        Some(rules.len() - 1)
                    }
                }
            })
            .collect();
        Fates {
            net,
            st,
            rules,
            rule_of,
            arrived: FnvHashMap::default(),
        }
    }

    /// Whether `probe(net, st, from, dst, from's TTL, ProbeKind::Echo, _)` surely gets its echo
    /// reply from `dst`, whichever next hops the flow hash picks. False means not proven: the
    /// walk decides.
    pub fn echo_answered(&mut self, from: DeviceId, dst: Ipv4Addr) -> bool {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        if local_iface(net, st, from, dst).is_some() {
            return false;
        }
        let Some(route) = st.devices[from.idx()].fib.lookup(dst) else {
            return false;
        };
        // The source address the walk puts on the request (`probe_with`).
        let Some(src) = route
            .nexthops
            .first()
            .and_then(|nh| route.src.or_else(|| source_for(net, st, from, nh.iface)))
        else {
            return false;
        };
        let request = self.flow(src, dst, true);
        let Some(answerer) = self.sent(from, route, request) else {
            return false;
        };
        if answerer == from {
            return false;
        }
        // The reply: from the destination's address back to the request's source.
        let Some(back) = st.devices[answerer.idx()].fib.lookup(src) else {
            return false;
        };
        let reply = self.flow(dst, src, false);
        self.sent(answerer, back, reply) == Some(from)
    }

    fn flow(&self, src: Ipv4Addr, dst: Ipv4Addr, request: bool) -> Flow {
        let masq_src = self
            .rules
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, r)| r.src.iter().any(|n| n.contains(&src)))
            .fold(0, |bits, (i, _)| bits | 1 << i);
        Flow { dst, masq_src, request }
    }

    /// Whether `dev`'s MASQUERADE rule may rewrite a packet of `flow` (`Masquerade::matches`,
    /// with the source known only by the rules it matches).
    fn masquerades(&self, dev: DeviceId, flow: Flow) -> bool {
        if !flow.request {
            return false;
        }
        match self.rule_of[dev.idx()] {
            None => false,
            Some(i) if i >= 64 => true,
            Some(i) => flow.masq_src & 1 << i != 0 && !self.rules[i].not_dst.iter().any(|n| n.contains(&flow.dst)),
        }
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends by `route` with its
    /// own TTL (the sender does not decrement it).
    fn sent(&mut self, origin: DeviceId, route: &Route, flow: Flow) -> Option<DeviceId> {
        match self.branches(origin, route, flow, 0) {
            Fate::Delivered { dev, forwards } if self.net.device(origin).profile.ttl > forwards => Some(dev),
            _ => None,
        }
    }

    /// Every next hop of `route` at `dev`: the device they all deliver to and the most
    /// forwarding decisions after `dev`'s own.
    fn branches(&mut self, dev: DeviceId, route: &Route, flow: Flow, depth: u8) -> Fate {
        let (net, st): (&'a Network, &'a State) = (self.net, self.st);
        if route.unreachable || route.blackhole || route.nexthops.is_empty() || self.masquerades(dev, flow) {
            return Fate::Unproven;
        }
        let mut all: Option<(DeviceId, u8)> = None;
        for nh in &route.nexthops {
            let out = net.iface(nh.iface);
            if out.tunnel.is_some() || (flow.request && out.nat_overload_acl.is_some()) {
                return Fate::Unproven;
            }
            let Some(next) = arp(net, st, nh.iface, nh.via.unwrap_or(flow.dst)) else {
                return Fate::Unproven;
            };
            let Fate::Delivered { dev: to, forwards } = self.arrive(net.iface(next).device, flow, depth) else {
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

    /// The fate of a packet of `flow` that a neighbour forwarded to `dev`, computed once.
    fn arrive(&mut self, dev: DeviceId, flow: Flow, depth: u8) -> Fate {
        match self.arrived.get(&(dev, flow)) {
            Some(Fate::Open) => return Fate::Unproven,
            Some(known) => return *known,
            None => {}
        }
        self.arrived.insert((dev, flow), Fate::Open);
        let fate = self.transit(dev, flow, depth);
        self.arrived.insert((dev, flow), fate);
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
        if d.external.is_some() || (d.kind == DeviceKind::Linux && !d.ip_forward) || depth >= MAX_FORWARDS {
            return Fate::Unproven;
        }
        let Some(route) = st.devices[dev.idx()].fib.lookup(flow.dst) else {
            return Fate::Unproven;
        };
        match self.branches(dev, route, flow, depth + 1) {
            Fate::Delivered { dev: to, forwards } if forwards < MAX_FORWARDS => Fate::Delivered {
                dev: to,
                forwards: forwards + 1,
            },
            _ => Fate::Unproven,
        }
    }
}
