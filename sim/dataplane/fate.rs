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
//! one leaf all meet at it; every leaf's packets to `a` meet at the spines), and likewise once
//! per set of several next devices (every leaf of a fabric sends `a` over the same spines, so
//! that their fates are combined once, not once per leaf). The matrix then
//! needs, per pair, only the source's own first decision and the answerer's (the two ends,
//! where the source address is chosen), and walks with the pair's real hash only what is not
//! proven this way: branches that disagree, and every failure (whose hops the report explains).
//! Every device decides for the caller's targets from a [`Table`] made in one pass of its FIB
//! over the targets in address order (`Fib::lookup_sorted`), not by a lookup per question; a
//! Linux host that hands the packet to one device (a node's default route to its leaf, its
//! route to a pod's veth), masqueraded or not, is not memoised but answers with that device's
//! fate one decision later (`Fates::arrive`): its memo row would serve only its own pods'
//! pairs. A host's or a pod's table is kept sparse ([`Entries`]: its default route and the
//! few targets that differ), and where a target takes that route to one device unchanged
//! ([`Plain`]) the device hands it on without deciding again (what `decide`, `next_hops` and
//! `onward` would find for that entry is found once per flow kind).
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
use std::sync::{Mutex, OnceLock};

use fnv::FnvHashMap;
use ipnet::Ipv4Net;
use smallvec::SmallVec;

use super::walk::{arp, source_for};
use crate::engine::state::Route;
use crate::engine::{local_iface, State};
use crate::model::{DeviceId, DeviceKind, IfId, Masquerade, Network};

/// Forwarding decisions beyond which nothing is proven: a TTL is at most 255, and the analysis'
/// recursion stays this deep at most.
const MAX_FORWARDS: u8 = u8::MAX - 1;

/// Forwarding decisions followed without the memo where each delegating device hands a packet
/// to one device (`Fates::arrive`); deeper, the memo's loop detection (`Fate::Open`)
/// takes over.
const DELEGATE_DEPTH: u8 = 8;

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

/// How a device sends a flow kind's packets to the targets of its common entry
/// (`Entries::common`): by a route whose next hops lead to one device, whatever the target, so
/// that a device handing packets on (a host to its leaf, a pod to its node) is passed in
/// one step (`Fates::plain_next`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plain {
    /// Not looked at yet.
    Unknown,
    /// Its common route does not lead to one device, or it has none.
    None,
    /// To `next`, unchanged when `unless` is 0 or the target is excluded (`Decisions::
    /// excluded`) from the one MASQUERADE rule `unless` names; otherwise the rule may rewrite
    /// it, and `onward` decides.
    Sends { entry: u16, next: DeviceId, unless: u64 },
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
    /// `outside`'s index among the targets, and the kind of the requests masqueraded here.
    outside_target: Option<u32>,
    masqueraded: usize,
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

/// How a device forwards or originates a packet by one route: the route, the source address
/// the walk puts on a packet the device originates by it (with the MASQUERADE rules that
/// address is in, and its index among the targets), and the next devices.
#[derive(Clone, Copy)]
struct Sending<'a> {
    route: &'a Route,
    src: Option<Ipv4Addr>,
    /// Bit i: `src` is in `Fates::rules[i]`'s source networks.
    src_rules: u64,
    src_target: Option<u32>,
    next: Next,
}

/// The devices a route's next hops lead to.
#[derive(Clone, Copy)]
enum Next {
    /// `Fates::hops[start..start + len]`, the same for every destination: every next hop has
    /// a gateway to ARP for, or the route is a host route. `set` names the devices (in
    /// `Decisions::hop_sets`) where there are several, else it is `ONE_HOP`.
    Fixed { start: u32, len: u32, set: u32 },
    /// The walk would not follow the route for any destination (`next_devices` fails).
    Fails,
    /// A connected next hop: the device ARPs for the destination itself.
    PerDestination,
}

impl<'a> Sending<'a> {
    /// With a `pool` to keep next devices that do not depend on the destination in; without,
    /// they are found per destination.
    fn new(
        net: &Network,
        st: &State,
        dev: DeviceId,
        route: &'a Route,
        rules: &[&Masquerade],
        targets: &FnvHashMap<Ipv4Addr, u32>,
        pool: Option<&mut Vec<DeviceId>>,
    ) -> Sending<'a> {
        let src = route
            .nexthops
            .first()
            .and_then(|nh| route.src.or_else(|| source_for(net, st, dev, nh.iface)));
        // A connected next hop ARPs for the destination itself, which a host route names.
        let host_route = route.prefix.prefix_len() == 32;
        let next = match pool {
            Some(pool) if host_route || route.nexthops.iter().all(|nh| nh.via.is_some()) => {
                let mut next = SmallVec::new();
                if next_devices(net, st, route, route.prefix.addr(), &mut next) {
                    let start = pool.len() as u32;
                    pool.extend_from_slice(&next);
                    Next::Fixed {
                        start,
                        len: next.len() as u32,
                        set: ONE_HOP,
                    }
                } else {
                    Next::Fails
                }
            }
            _ => Next::PerDestination,
        };
        Sending {
            route,
            src,
            src_rules: src.map_or(0, |a| rules_holding(rules, a)),
            src_target: src.and_then(|a| targets.get(&a).copied()),
            next,
        }
    }
}

/// Routes a target table can tell apart; a device with more decides by FIB lookups.
const TABLE_ROUTES: usize = 0x7FFF;
/// A target's entry in a [`Table`]: the index of its route, this when it has none ...
const NO_ROUTE: u16 = 0x7FFF;
/// ... and this bit when the device owns the address (an interface that is up has it).
const OWNED: u16 = 0x8000;

/// How one device decides for every target: made in one pass of its FIB over the targets in
/// address order (`Fib::lookup_sorted`), where a lookup per target and device took two thirds
/// of the matrix's time.
struct Table<'a> {
    /// Per target index: its route's index in `routes` or `NO_ROUTE`, with `OWNED`.
    entries: Entries,
    /// The routes some target takes.
    routes: Vec<Sending<'a>>,
    /// The routes' fixed next devices ([`Next::Fixed`]).
    hops: Vec<DeviceId>,
}

/// A table's entries by target index. A host or a pod sends almost every target by its
/// default route: its entries are kept as that one entry and the few targets that differ (its
/// own addresses, its pods'), so that the matrix, which asks every source about every target,
/// reads a few cache lines per host instead of a 2-byte entry per target (16 KiB a host on
/// 16x256x16, 134 MB in all, read at random by the pairs' answerers).
enum Entries {
    /// One entry per target.
    Dense(Box<[u16]>),
    /// `common` for every target but `targets` (ascending), which have `entries`; `filter`
    /// has bit `t % 256` of each of them, so that most targets are known common without a
    /// search (its dependent loads were half the lookups' time).
    Sparse {
        common: u16,
        filter: [u64; 4],
        targets: Box<[u32]>,
        entries: Box<[u16]>,
    },
    /// The FIB has more routes than an entry can name: the device decides by FIB lookups.
    Lookups,
}

/// A table is kept sparse when at most `SCANNED` or this fraction (1/n) of its targets differ
/// from its most common entry: a search of so few is cheaper than the dense entry's cache miss.
const SPARSE_SHARE: usize = 32;

/// Exceptions a sparse table scans rather than searches.
const SCANNED: usize = 8;

impl Entries {
    /// `entry` per target index, sparse where few targets differ from the most common one.
    /// `counts[e]`: how many targets have entry `e` (a route index without `OWNED`).
    fn new(dense: Box<[u16]>, counts: &[u32]) -> Entries {
        let Some(common) = (0..counts.len()).max_by_key(|e| counts[*e]) else {
            return Entries::Dense(dense);
        };
        let common = common as u16;
        let differ = dense.len() - counts[usize::from(common)] as usize;
        if differ > SCANNED && differ * SPARSE_SHARE > dense.len() {
            return Entries::Dense(dense);
        }
        let (targets, entries): (Vec<u32>, Vec<u16>) = dense
            .iter()
            .enumerate()
            .filter(|(_, e)| **e != common)
            .map(|(t, e)| (t as u32, *e))
            .unzip();
        let mut filter = [0; 4];
        for t in &targets {
            let bit = *t as usize % 256;
            filter[bit / 64] |= 1 << (bit % 64);
        }
        Entries::Sparse {
            common,
            filter,
            targets: targets.into(),
            entries: entries.into(),
        }
    }

    /// The entry of all but a few targets, when the entries are kept so.
    fn common(&self) -> Option<u16> {
        match self {
            Entries::Sparse { common, .. } => Some(*common),
            _ => None,
        }
    }

    /// Target `t`'s entry; None where the device decides by lookups.
    fn get(&self, t: u32) -> Option<u16> {
        match self {
            Entries::Dense(entries) => entries.get(t as usize).copied(),
            Entries::Sparse {
                common,
                filter,
                targets,
                entries,
            } => {
                let bit = t as usize % 256;
                if filter[bit / 64] & 1 << (bit % 64) == 0 {
                    return Some(*common);
                }
                // A host's few exceptions are scanned: cheaper than a search's branches.
                let at = if targets.len() <= SCANNED {
                    targets.iter().position(|x| *x == t)
                } else {
                    targets.binary_search(&t).ok()
                };
                Some(at.map_or(*common, |k| entries[k]))
            }
            Entries::Lookups => None,
        }
    }
}

impl<'a> Table<'a> {
    /// With no entries for a FIB with more routes than an entry can name.
    fn new(d: &Decisions<'a>, dev: DeviceId) -> Table<'a> {
        let (net, st, sorted, targets) = (d.net, d.st, &d.sorted, &d.targets);
        let fib = &st.devices[dev.idx()].fib;
        let mut hops = Vec::new();
        if fib.len() > TABLE_ROUTES {
            return Table {
                entries: Entries::Lookups,
                routes: Vec::new(),
                hops,
            };
        }
        // `local_iface`'s addresses.
        let mut owned: Vec<Ipv4Addr> = net
            .device(dev)
            .ifaces
            .iter()
            .map(|i| &st.ifaces[i.idx()])
            .filter(|i| i.up)
            .filter_map(|i| i.addr.map(|a| a.addr()))
            .collect();
        owned.sort_unstable();
        let mut by_target = vec![NO_ROUTE; targets.len()].into_boxed_slice();
        let mut routes = Vec::new();
        // Targets per entry, for `Entries::new` (an owned address's entry is never common).
        let mut counts: Vec<u32> = Vec::new();
        // Each route some target takes, by its place in the FIB, once.
        let mut index: FnvHashMap<*const Route, u16> = FnvHashMap::default();
        let mut last: Option<(*const Route, u16)> = None;
        // The owned addresses not below the current target (both ascend).
        let mut above = owned.iter().peekable();
        fib.lookup_sorted(&sorted.0, |i, route| {
            let mut entry = NO_ROUTE;
            if let Some(route) = route {
                let key: *const Route = route;
                entry = match last {
                    Some((k, e)) if k == key => e,
                    _ => *index.entry(key).or_insert_with(|| {
                        let mut sending = Sending::new(net, st, dev, route, &d.rules, targets, Some(&mut hops));
                        if let Next::Fixed { start, len, set } = &mut sending.next {
                            if *len > 1 {
                                *set = d.hop_set(&hops[*start as usize..(*start + *len) as usize]);
                            }
                        }
                        routes.push(sending);
                        counts.push(0);
                        (routes.len() - 1) as u16
                    }),
                };
                last = Some((key, entry));
            }
            let addr = sorted.0[i];
            while above.next_if(|a| **a < addr).is_some() {}
            if above.peek() == Some(&&addr) {
                entry |= OWNED;
            } else if let Some(n) = counts.get_mut(usize::from(entry)) {
                *n += 1;
            }
            by_target[sorted.1[i] as usize] = entry;
        });
        Table {
            entries: Entries::new(by_target, &counts),
            routes,
            hops,
        }
    }
}

/// How every device decides for the targets, for one state: what the fates rest on, shared by
/// the workers proving one matrix (each with its own [`Fates`]). A device's table is made at
/// its first question, by whichever worker asks first.
pub struct Decisions<'a> {
    net: &'a Network,
    st: &'a State,
    /// The distinct MASQUERADE rules (felix writes the same one on every node) and each
    /// device's, by index.
    rules: Vec<&'a Masquerade>,
    rule_of: Vec<Option<usize>>,
    /// Dense indices of the addresses the caller will ask about (the matrix's endpoints).
    targets: FnvHashMap<Ipv4Addr, u32>,
    /// The targets' addresses in ascending order, and their indices.
    sorted: (Vec<Ipv4Addr>, Vec<u32>),
    /// Per target index, bit i: `rules[i]` never rewrites a packet to it (its `not_dst`).
    excluded: Vec<u64>,
    /// Per device, once it decided for a target: its table.
    tables: Vec<OnceLock<Table<'a>>>,
    /// The sets of several next devices the tables' routes lead to, each numbered once: every
    /// leaf of a fabric sends a remote rack's targets to the same spines, and what they all
    /// do with a flow is proven once for the set (`Fates::all_deliver_set`), not per leaf.
    hop_sets: Mutex<FnvHashMap<Box<[DeviceId]>, u32>>,
    /// Per device, whether the walk forwards through it: not an external network's
    /// responders, not a Linux host without `ip_forward`.
    forwarding: Vec<bool>,
    /// Per device, whether its fate is its sole next device's where it has one (`arrive`):
    /// Linux hosts that forward, whose memo rows would each serve their own pods' pairs.
    delegating: Vec<bool>,
    /// Per device, the TTL of the packets it originates.
    ttl: Vec<u8>,
}

impl<'a> Decisions<'a> {
    /// For questions mostly about `targets` (others are answered too, less cheaply).
    pub fn new(net: &'a Network, st: &'a State, targets: impl IntoIterator<Item = Ipv4Addr>) -> Decisions<'a> {
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
        let mut by_address: Vec<(Ipv4Addr, u32)> = index.iter().map(|(a, t)| (*a, *t)).collect();
        by_address.sort_unstable();
        let mut excluded = vec![0; index.len()];
        for (a, t) in &by_address {
            excluded[*t as usize] = rules_whose(&rules, |r| &r.not_dst, *a);
        }
        let sorted = by_address.into_iter().unzip();
        let forwarding: Vec<bool> = net
            .devices
            .iter()
            .map(|d| d.external.is_none() && (d.kind != DeviceKind::Linux || d.ip_forward))
            .collect();
        let delegating = net
            .devices
            .iter()
            .zip(&forwarding)
            .map(|(d, forwards)| *forwards && d.kind == DeviceKind::Linux)
            .collect();
        Decisions {
            net,
            st,
            rules,
            rule_of,
            targets: index,
            sorted,
            excluded,
            tables: (0..net.devices.len()).map(|_| OnceLock::new()).collect(),
            hop_sets: Mutex::default(),
            forwarding,
            delegating,
            ttl: net.devices.iter().map(|d| d.profile.ttl).collect(),
        }
    }

    /// `dev`'s table, made at the first question.
    fn table(&self, dev: DeviceId) -> &Table<'a> {
        self.tables[dev.idx()].get_or_init(|| Table::new(self, dev))
    }

    /// The number of the set of next devices `hops`.
    fn hop_set(&self, hops: &[DeviceId]) -> u32 {
        // A worker that panicked while holding the lock left the map whole: an insertion is
        // the only change.
        let mut sets = self.hop_sets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let next = sets.len() as u32;
        *sets.entry(hops.into()).or_insert(next)
    }
}

/// `Next::Fixed`'s set of a route with one next device.
const ONE_HOP: u32 = u32::MAX;

/// The fates of packets arriving at devices, per (device, flow), for one state.
pub struct Fates<'a, 'd> {
    d: &'d Decisions<'a>,
    /// Flow kinds seen: (bit i: the source is in `rules[i]`'s source networks, the leg).
    kinds: Vec<(u64, Leg)>,
    /// Where requests were masqueraded on the way, by (device, egress) in `nat_index`.
    nats: Vec<NatPoint>,
    nat_index: FnvHashMap<(DeviceId, IfId), u16>,
    /// `rows[kind][device][target]`: fates of flows to targets, allocated per device reached.
    rows: Vec<Vec<Option<Box<[Fate]>>>>,
    /// `set_rows[kind][set][target]`: what every device of a set of next devices
    /// (`Next::Fixed`'s `set`) does with flows to targets, together (`all_deliver_set`).
    set_rows: Vec<Vec<Option<Box<[Fate]>>>>,
    /// `plain[kind][device]`, found at the device's first question (`Fates::plain_next`).
    plain: Vec<Vec<Plain>>,
    /// Fates of flows to other addresses.
    others: FnvHashMap<(DeviceId, Flow), Fate>,
    /// The kind of every reply (`Fates::kind`).
    reply_kind: usize,
    /// The last destination asked about and its target index: the matrix asks about one
    /// destination for a tile of sources in turn, and the index is a hash lookup.
    last_dst: Option<(Ipv4Addr, Option<u32>)>,
}

impl<'a, 'd> Fates<'a, 'd> {
    pub fn new(d: &'d Decisions<'a>) -> Fates<'a, 'd> {
        let mut fates = Fates {
            d,
            kinds: Vec::new(),
            nats: Vec::new(),
            nat_index: FnvHashMap::default(),
            rows: Vec::new(),
            set_rows: Vec::new(),
            plain: Vec::new(),
            others: FnvHashMap::default(),
            reply_kind: 0,
            last_dst: None,
        };
        fates.reply_kind = fates.kind(0, Leg::Reply);
        fates
    }

    /// Whether `probe(net, st, from, dst, from's TTL, ProbeKind::Echo, _)` surely gets its echo
    /// reply from `dst`, whichever next hops the flow hash picks. False means not proven: the
    /// walk decides.
    pub fn echo_answered(&mut self, from: DeviceId, dst: Ipv4Addr) -> bool {
        let target = match self.last_dst {
            Some((last, target)) if last == dst => target,
            _ => {
                let target = self.d.targets.get(&dst).copied();
                self.last_dst = Some((dst, target));
                target
            }
        };
        let entry = self.entry(from, target);
        let (owned, sending) = self.decide(from, dst, entry);
        // The source address the walk puts on the request (`probe_with`).
        let Some(
            sending @ Sending {
                src: Some(src),
                src_rules,
                src_target,
                ..
            },
        ) = sending
        else {
            return false;
        };
        if owned {
            return false;
        }
        let request = Flow {
            dst,
            target,
            kind: self.kind(src_rules, Leg::Request),
        };
        let Some((answerer, nat)) = self.sent_by(from, request, &sending, entry) else {
            return false;
        };
        if answerer == from {
            return false;
        }
        // The reply: from the destination's address back to the request's source.
        let reply = Flow {
            dst: src,
            target: src_target,
            kind: self.reply_kind,
        };
        match nat {
            None => self.sent(answerer, reply) == Some((from, None)),
            Some(point) => self.answered_through_nat(from, reply, answerer, point),
        }
    }

    /// The reply to a request masqueraded at `point` goes to the outside address, must enter
    /// the NAT device by the interface the request left by (where conntrack gives it the
    /// request's source back: `Walk::undo_nat`), and is forwarded from there to `from`, all
    /// within the answerer's TTL. `reply` is the unmasqueraded reply, to the request's source.
    fn answered_through_nat(&mut self, from: DeviceId, reply: Flow, answerer: DeviceId, point: usize) -> bool {
        let nat_dev = self.nats[point].dev;
        // `masquerade` hands out only points whose reply cannot enter elsewhere by a router.
        let enters_by_egress = self.nats[point]
            .enter_elsewhere
            .as_ref()
            .is_some_and(|answerers| answerers.binary_search(&answerer).is_err());
        if answerer == nat_dev || !enters_by_egress {
            return false;
        }
        let to_outside = Flow {
            dst: self.nats[point].outside,
            target: self.nats[point].outside_target,
            ..reply
        };
        let Some((at, before, _)) = self.delivered(answerer, to_outside) else {
            return false;
        };
        if at != nat_dev {
            return false;
        }
        let Fate::Delivered { dev, forwards, .. } = self.arrive(nat_dev, reply, 0) else {
            return false;
        };
        dev == from && u16::from(self.d.ttl[answerer.idx()]) > u16::from(before) + u16::from(forwards)
    }

    /// `dev`'s table entry for `target`; None where it is no target or the table has no
    /// entries (`Table::new`). Read once per device a packet meets: `plain_next` and `decide`
    /// both decide by it.
    fn entry(&self, dev: DeviceId, target: Option<u32>) -> Option<u16> {
        self.d.table(dev).entries.get(target?)
    }

    /// Whether `dev` owns `dst` (an interface that is up has it), and the route it sends a
    /// packet to `dst` by (`entry`: `dev`'s entry for `dst`, when it is a target).
    fn decide(&self, dev: DeviceId, dst: Ipv4Addr, entry: Option<u16>) -> (bool, Option<Sending<'a>>) {
        let (net, st): (&'a Network, &'a State) = (self.d.net, self.d.st);
        if let Some(entry) = entry {
            let table = self.d.table(dev);
            return (
                entry & OWNED != 0,
                table.routes.get(usize::from(entry & !OWNED)).copied(),
            );
        }
        let owned = local_iface(net, st, dev, dst).is_some();
        let route = st.devices[dev.idx()].fib.lookup(dst);
        (
            owned,
            route.map(|r| Sending::new(net, st, dev, r, &self.d.rules, &self.d.targets, None)),
        )
    }

    /// The devices `sending`'s next hops lead a packet to `dst` to; None where the walk
    /// would do what the analysis does not follow (`next_devices`).
    fn next_hops(&self, dev: DeviceId, sending: &Sending<'a>, dst: Ipv4Addr) -> Option<Hops<'d>> {
        let d: &'d Decisions<'a> = self.d;
        match sending.next {
            Next::Fixed { start, len, .. } => {
                Some(Hops::Table(&d.table(dev).hops[start as usize..(start + len) as usize]))
            }
            Next::Fails => None,
            Next::PerDestination => {
                let mut next = SmallVec::new();
                next_devices(self.d.net, self.d.st, sending.route, dst, &mut next).then_some(Hops::Own(next))
            }
        }
    }

    /// The flow kind of a source in the rules `src_rules` names, on `leg`.
    fn kind(&mut self, src_rules: u64, leg: Leg) -> usize {
        // A reply is never NATed on its way (only requests are, `Walk::apply_nat`), so its
        // source's rules do not matter: all replies to one address share their fates.
        let key = (if leg == Leg::Reply { 0 } else { src_rules }, leg);
        self.kinds.iter().position(|k| *k == key).unwrap_or_else(|| {
            self.kinds.push(key);
            self.rows.push(vec![None; self.d.net.devices.len()]);
            self.set_rows.push(Vec::new());
            self.plain.push(vec![Plain::Unknown; self.d.net.devices.len()]);
            self.kinds.len() - 1
        })
    }

    /// Whether `dev`'s MASQUERADE rule may rewrite a packet of `flow` (`Masquerade::matches`,
    /// with the source known only by the rules it matches).
    fn masquerades(&self, dev: DeviceId, flow: Flow) -> bool {
        match self.rewriting_rule(dev, flow.kind) {
            None => true,
            Some(0) => false,
            Some(bit) => {
                let rule = self.d.rules[bit.trailing_zeros() as usize];
                !rule.not_dst.iter().any(|n| n.contains(&flow.dst))
            }
        }
    }

    /// The bit of `dev`'s MASQUERADE rule when it may rewrite packets of `kind` unless their
    /// destination is in its `not_dst`; 0 when it never does; None when it may rewrite any
    /// (a rule past `MAX_RULES`, whose sources no kind tells).
    fn rewriting_rule(&self, dev: DeviceId, kind: usize) -> Option<u64> {
        let (masq_src, leg) = self.kinds[kind];
        match self.d.rule_of[dev.idx()] {
            _ if leg == Leg::Reply => Some(0),
            None => Some(0),
            Some(i) if i >= MAX_RULES => None,
            Some(i) => Some(masq_src & 1 << i),
        }
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends with its own TTL
    /// (the sender does not decrement it), and the NAT point it was masqueraded at, if any.
    fn sent(&mut self, origin: DeviceId, flow: Flow) -> Option<(DeviceId, Option<usize>)> {
        let delivered = self.delivered(origin, flow);
        self.within_ttl(origin, delivered)
    }

    /// `sent`, by `sending`: `origin`'s route to the flow's destination (its `entry`).
    fn sent_by(
        &mut self,
        origin: DeviceId,
        flow: Flow,
        sending: &Sending<'a>,
        entry: Option<u16>,
    ) -> Option<(DeviceId, Option<usize>)> {
        let delivered = self.delivered_by(origin, flow, sending, entry);
        self.within_ttl(origin, delivered)
    }

    /// Where a packet `origin` sends is `delivered`, when its TTL lasts the forwarding
    /// decisions on the way.
    fn within_ttl(
        &self,
        origin: DeviceId,
        delivered: Option<(DeviceId, u8, Option<usize>)>,
    ) -> Option<(DeviceId, Option<usize>)> {
        let (to, forwards, nat) = delivered?;
        (self.d.ttl[origin.idx()] > forwards).then_some((to, nat))
    }

    /// Where every branch delivers a packet of `flow` that `origin` sends, after how many
    /// forwarding decisions at most (the TTL it needs is more), and its NAT point.
    fn delivered(&mut self, origin: DeviceId, flow: Flow) -> Option<(DeviceId, u8, Option<usize>)> {
        let entry = self.entry(origin, flow.target);
        let sending = self.decide(origin, flow.dst, entry).1?;
        self.delivered_by(origin, flow, &sending, entry)
    }

    /// `delivered`, by `sending`: `origin`'s route to the flow's destination (its `entry`).
    fn delivered_by(
        &mut self,
        origin: DeviceId,
        flow: Flow,
        sending: &Sending<'a>,
        entry: Option<u16>,
    ) -> Option<(DeviceId, u8, Option<usize>)> {
        let fate = if let Some(next) = self.plain_next(origin, flow, entry) {
            self.arrive(next, flow, 0)
        } else {
            if self.masquerades(origin, flow) {
                return None;
            }
            match self.next_hops(origin, sending, flow.dst) {
                Some(next) => self.all_deliver_set(sending.next, &next, flow, 0),
                None => Fate::Unproven,
            }
        };
        match fate {
            Fate::Delivered { dev, forwards, nat } => Some((dev, forwards, nat.checked_sub(1).map(usize::from))),
            _ => None,
        }
    }

    /// The devices the next hops lead to must all deliver to one device, masqueraded at the
    /// same point: which, and the most forwarding decisions from them on.
    fn all_deliver(&mut self, next: &Hops<'_>, flow: Flow, depth: u8) -> Fate {
        let mut all: Option<Fate> = None;
        for &hop in next.devices() {
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

    /// `all_deliver` for the devices `next` leads to, computed once per set of several
    /// devices and target (`Next::Fixed`'s `set`): the 256 leaves of a 16x256x16 fabric reach
    /// a remote rack by the same 16 spines, and each asked the 16 spines' memo (a fifth of the
    /// matrix's time went to filling the leaves' rows so). A set being computed that a branch
    /// comes back to is a loop, as a device is (`arrive`); a set's fate does not depend on the
    /// device that sends to it, as a device's does not depend on its neighbour.
    fn all_deliver_set(&mut self, next: Next, hops: &Hops<'_>, flow: Flow, depth: u8) -> Fate {
        let (Next::Fixed { set, .. }, Some(t)) = (next, flow.target) else {
            return self.all_deliver(hops, flow, depth);
        };
        if set == ONE_HOP {
            return self.all_deliver(hops, flow, depth);
        }
        match *self.set_slot(set, flow.kind, t) {
            Fate::Open => return Fate::Unproven,
            Fate::Unknown => {}
            known => return known,
        }
        *self.set_slot(set, flow.kind, t) = Fate::Open;
        let fate = self.all_deliver(hops, flow, depth);
        *self.set_slot(set, flow.kind, t) = fate;
        fate
    }

    /// The memo slot of (set of next devices `set`, flows of `kind` to target `t`).
    fn set_slot(&mut self, set: u32, kind: usize, t: u32) -> &mut Fate {
        let targets = self.d.targets.len();
        let sets = &mut self.set_rows[kind];
        if sets.len() <= set as usize {
            sets.resize(set as usize + 1, None);
        }
        let row = sets[set as usize].get_or_insert_with(|| vec![Fate::Unknown; targets].into());
        &mut row[t as usize]
    }

    /// The memo slot of (`dev`, `flow`).
    fn slot(&mut self, dev: DeviceId, flow: Flow) -> &mut Fate {
        match flow.target {
            Some(t) => {
                let targets = self.d.targets.len();
                let row = self.rows[flow.kind][dev.idx()].get_or_insert_with(|| vec![Fate::Unknown; targets].into());
                &mut row[t as usize]
            }
            None => self.others.entry((dev, flow)).or_insert(Fate::Unknown),
        }
    }

    /// The fate of a packet of `flow` that a neighbour forwarded to `dev`, computed once.
    fn arrive(&mut self, dev: DeviceId, flow: Flow, depth: u8) -> Fate {
        // A device that does not forward needs no memo (a pod's row would hold one entry, for
        // its own address): `transit` decides by the table alone.
        if !self.d.forwarding[dev.idx()] {
            if let Some(entry) = self.entry(dev, flow.target) {
                return if entry & OWNED != 0 {
                    Fate::Delivered {
                        dev,
                        forwards: 0,
                        nat: 0,
                    }
                } else {
                    Fate::Unproven
                };
            }
        }
        if depth < DELEGATE_DEPTH && self.d.delegating[dev.idx()] {
            match self.sole_next(dev, flow) {
                Some(None) => {
                    return Fate::Delivered {
                        dev,
                        forwards: 0,
                        nat: 0,
                    }
                }
                Some(Some((next, onward, here))) => return forwarded(self.arrive(next, onward, depth + 1), here),
                None => {}
            }
        }
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

    /// What a forwarding `dev` does with a packet of `flow` when `transit` would decide it
    /// without following branches: Some(None) when `dev` owns the destination; when its route
    /// leads to one device, that device, the flow the packet goes on as and where it was
    /// masqueraded (`transit`'s NAT point plus one, 0: not here).
    fn sole_next(&mut self, dev: DeviceId, flow: Flow) -> Option<Option<(DeviceId, Flow, u16)>> {
        let entry = self.entry(dev, flow.target);
        if let Some(one) = self.plain_next(dev, flow, entry) {
            return Some(Some((one, flow, 0)));
        }
        let (owned, sending) = self.decide(dev, flow.dst, entry);
        if owned {
            return Some(None);
        }
        let sending = sending?;
        let &[one] = self.next_hops(dev, &sending, flow.dst)?.devices() else {
            return None;
        };
        let (onward, here) = self.onward(dev, flow, sending.route)?;
        Some(Some((one, onward, here)))
    }

    /// The one device `dev` sends a packet of `flow` to, unchanged, when the flow's target takes
    /// `dev`'s plain entry ([`Plain`]): what `decide`, `next_hops` and `onward` would find,
    /// without them. None otherwise: those decide. `entry`: `dev`'s for the flow's target.
    fn plain_next(&mut self, dev: DeviceId, flow: Flow, entry: Option<u16>) -> Option<DeviceId> {
        let (t, taken) = (flow.target?, entry?);
        let plain = match self.plain[flow.kind][dev.idx()] {
            Plain::Unknown => {
                let plain = self.find_plain(dev, flow.kind);
                self.plain[flow.kind][dev.idx()] = plain;
                plain
            }
            known => known,
        };
        let Plain::Sends { entry, next, unless } = plain else {
            return None;
        };
        let plain = taken == entry && (unless == 0 || self.d.excluded[t as usize] & unless != 0);
        plain.then_some(next)
    }

    /// `dev`'s [`Plain`] entry for flows of `kind`: its common entry (not owned: `Entries::new`
    /// counts no owned target), when that route's next hops lead to one device for every
    /// destination, and with the MASQUERADE rule (`rewriting_rule`) that may rewrite the flow.
    fn find_plain(&self, dev: DeviceId, kind: usize) -> Plain {
        let table = self.d.table(dev);
        let Some(entry) = table.entries.common() else {
            return Plain::None;
        };
        let Some(Next::Fixed { start, len: 1, .. }) = table.routes.get(usize::from(entry)).map(|s| s.next) else {
            return Plain::None;
        };
        let Some(unless) = self.rewriting_rule(dev, kind) else {
            return Plain::None;
        };
        Plain::Sends {
            entry,
            next: table.hops[start as usize],
            unless,
        }
    }

    /// A transit hop, in `Walk::walk`'s order: delivered if `dev` owns the address, else
    /// forwarded by its route (one more decision).
    fn transit(&mut self, dev: DeviceId, flow: Flow, depth: u8) -> Fate {
        let (owned, sending) = self.decide(dev, flow.dst, self.entry(dev, flow.target));
        if owned {
            return Fate::Delivered {
                dev,
                forwards: 0,
                nat: 0,
            };
        }
        if !self.d.forwarding[dev.idx()] || depth >= MAX_FORWARDS {
            return Fate::Unproven;
        }
        let Some(sending) = sending else {
            return Fate::Unproven;
        };
        let Some(next) = self.next_hops(dev, &sending, flow.dst) else {
            return Fate::Unproven;
        };
        let Some((onward, here)) = self.onward(dev, flow, sending.route) else {
            return Fate::Unproven;
        };
        forwarded(self.all_deliver_set(sending.next, &next, onward, depth + 1), here)
    }

    /// The flow a packet of `flow` leaves `dev` as by `route`, and where it was masqueraded
    /// (`masquerade`'s NAT point plus one; 0: not here). None where the translation is not
    /// followed.
    fn onward(&mut self, dev: DeviceId, flow: Flow, route: &Route) -> Option<(Flow, u16)> {
        if self.masquerades(dev, flow) {
            self.masquerade(dev, flow, route)
        } else {
            Some((flow, 0))
        }
    }

    /// `dev` masquerades a request of `flow` that leaves by `route` (`Walk::apply_nat`): the
    /// flow it goes on as, with the NAT device's address for source, and its NAT point (plus
    /// one). None where the translation depends on the branch or on the source address.
    fn masquerade(&mut self, dev: DeviceId, flow: Flow, route: &Route) -> Option<(Flow, u16)> {
        let (net, st): (&'a Network, &'a State) = (self.d.net, self.d.st);
        if self.kinds[flow.kind].1 == Leg::Masqueraded {
            return None;
        }
        // The outside address is the egress interface's: one for every branch.
        let egress = route.nexthops.first()?.iface;
        if route.nexthops.iter().any(|nh| nh.iface != egress) {
            return None;
        }
        let rule = self.d.rule_of[dev.idx()].filter(|i| *i < MAX_RULES)?;
        let outside = source_for(net, st, dev, egress)?;
        // A source that is the outside address itself is not translated; the flow's kind does
        // not tell the two apart unless the rule's sources exclude the outside address.
        if self.d.rules[rule].src.iter().any(|n| n.contains(&outside)) {
            return None;
        }
        let point = match self.nat_index.get(&(dev, egress)) {
            Some(p) => *p,
            None => {
                let p = u16::try_from(self.nats.len() + 1).ok().filter(|p| *p < u16::MAX)?;
                let enter_elsewhere = entering_elsewhere(net, st, dev, egress, outside);
                let masqueraded = self.kind(rules_holding(&self.d.rules, outside), Leg::Masqueraded);
                self.nats.push(NatPoint {
                    dev,
                    outside,
                    outside_target: self.d.targets.get(&outside).copied(),
                    masqueraded,
                    enter_elsewhere,
                });
                self.nat_index.insert((dev, egress), p);
                p
            }
        };
        let nat = &self.nats[usize::from(point - 1)];
        nat.enter_elsewhere.as_ref()?;
        let onward = Flow {
            kind: nat.masqueraded,
            ..flow
        };
        Some((onward, point))
    }
}

/// The fate at a device that forwards a packet (masqueraded at NAT point `here` plus one, 0:
/// not) to where `next` found it delivered: one decision more.
fn forwarded(next: Fate, here: u16) -> Fate {
    match next {
        Fate::Delivered { dev, forwards, nat } if forwards < MAX_FORWARDS => Fate::Delivered {
            dev,
            forwards: forwards + 1,
            nat: nat.max(here),
        },
        _ => Fate::Unproven,
    }
}

/// Bit i: `rules[i]`'s source networks hold `src` (the first `MAX_RULES` rules).
fn rules_holding(rules: &[&Masquerade], src: Ipv4Addr) -> u64 {
    rules_whose(rules, |r| &r.src, src)
}

/// Bit i: the networks `nets` picks from `rules[i]` hold `addr` (the first `MAX_RULES` rules).
fn rules_whose(rules: &[&Masquerade], nets: impl Fn(&Masquerade) -> &[Ipv4Net], addr: Ipv4Addr) -> u64 {
    rules
        .iter()
        .take(MAX_RULES)
        .enumerate()
        .filter(|(_, r)| nets(r).iter().any(|n| n.contains(&addr)))
        .fold(0, |bits, (i, _)| bits | 1 << i)
}

/// Next devices: a route's in its device's table ([`Next::Fixed`]), or found for one
/// destination.
enum Hops<'d> {
    Table(&'d [DeviceId]),
    Own(SmallVec<[DeviceId; 4]>),
}

impl Hops<'_> {
    fn devices(&self) -> &[DeviceId] {
        match self {
            Hops::Table(d) => d,
            Hops::Own(d) => d,
        }
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
fn next_devices(net: &Network, st: &State, route: &Route, dst: Ipv4Addr, out: &mut SmallVec<[DeviceId; 4]>) -> bool {
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
