//! Computed state after the engine has run: interface status, each device's routing table
//! and OSPF neighbours. Plain data read by `dataplane` and `views`; only the engine writes it.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::model::{DeviceId, IfId};

#[derive(Clone, Debug, Default, Serialize)]
pub struct State {
    /// Virtual time, milliseconds since the simulation started.
    pub time_ms: u64,
    pub ifaces: Vec<IfState>,
    pub devices: Vec<DevState>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IfState {
    /// The device is powered and the interface is routed and not shut down.
    pub up: bool,
    /// Carrier: some other member of its L2 domain is up.
    pub line_up: bool,
    /// The address in use (static or leased).
    pub addr: Option<Ipv4Net>,
    /// The address came from DHCP.
    pub dhcp: bool,
}

impl IfState {
    /// Up and with carrier: usable for forwarding.
    pub fn usable(&self) -> bool {
        self.up && self.line_up
    }
}

/// Which protocol produced a route. EOS codes and Linux `proto` words both derive from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proto {
    Connected,
    Static,
    OspfIntra,
    OspfInter,
    OspfE1,
    OspfE2,
    /// Linux: installed by the DHCP client.
    Dhcp,
    /// BGP learned from an eBGP / iBGP peer (EOS `B E` / `B I`).
    BgpExternal,
    BgpInternal,
    /// Linux: installed by BIRD's kernel protocol (`proto bird`).
    Bird,
}

impl Proto {
    /// Installed from a BGP speaker's decision (EOS and FRR `B`, BIRD's kernel protocol).
    pub fn is_bgp(self) -> bool {
        matches!(self, Proto::BgpExternal | Proto::BgpInternal | Proto::Bird)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct NextHop {
    /// Gateway; `None` for an on-link (connected) route.
    pub via: Option<Ipv4Addr>,
    pub iface: IfId,
}

/// A route's next hops. Almost every route has one, held inline: as a `Vec` it was a heap
/// allocation per route, and a node of an eBGP fabric holds a route for every prefix.
pub type NextHops = smallvec::SmallVec<[NextHop; 1]>;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    pub prefix: Ipv4Net,
    pub proto: Proto,
    /// Administrative distance (EOS `[d/m]`), 0 for Linux.
    pub distance: u8,
    /// Protocol metric (EOS) or route metric (Linux).
    pub metric: u32,
    pub nexthops: NextHops,
    /// Linux preferred source (`src`).
    pub src: Option<Ipv4Addr>,
    pub blackhole: bool,
    /// Linux `unreachable` route type (RTN_UNREACHABLE): BIRD's kernel protocol installs a
    /// route whose next hop it could not resolve this way (sysdep `krt_capable`); the kernel
    /// refuses to send with `No route to host` and a router answers ICMP host unreachable.
    pub unreachable: bool,
    /// Linux `proto` word (`kernel`, `static`, `dhcp`); `None` = `boot` (hidden by `ip route`).
    pub linux_proto: Option<LinuxProto>,
    /// Linux `scope link`.
    pub scope_link: bool,
    /// Installed with `onlink` (RTNH_F_ONLINK): `ip route` prints it.
    pub onlink: bool,
}

/// The protocol a Linux route was installed by, as `ip route` names it (`proto WORD`; the
/// `rtm_protocol` numbers of iproute2's `rt_protocols`). A byte, not the word: a node of an
/// eBGP fabric holds a route for every prefix, and as a `&'static str` it was a quarter of one.
/// Serialized as its word (`word`), as the string was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinuxProto {
    /// The kernel's own connected routes (RTPROT_KERNEL).
    Kernel,
    /// Routes given by netplan, `ip route add` or FRR's zebra statics (RTPROT_STATIC).
    Static,
    Dhcp,
    Ospf,
    /// BIRD's kernel protocol (RTPROT_BIRD).
    Bird,
    /// FRR's zebra for bgpd's routes.
    Bgp,
    /// felix's VXLAN routes, protocol 80, which iproute2 has no name for.
    FelixVxlan,
}

impl LinuxProto {
    /// The word `ip route` prints.
    pub fn word(self) -> &'static str {
        match self {
            LinuxProto::Kernel => "kernel",
            LinuxProto::Static => "static",
            LinuxProto::Dhcp => "dhcp",
            LinuxProto::Ospf => "ospf",
            LinuxProto::Bird => "bird",
            LinuxProto::Bgp => "bgp",
            LinuxProto::FelixVxlan => "80",
        }
    }
}

impl Serialize for LinuxProto {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

impl std::fmt::Display for LinuxProto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

// A node of an eBGP fabric holds a route per prefix of the fabric: keep a route at this size.
const _: () = assert!(std::mem::size_of::<Route>() == 48);

/// A prefix that orders as `Ipv4Net` does (address, then length) but compares as one integer.
/// `Ipv4Net` compares its address as four bytes, which the standard library does with a
/// `memcmp` call: every step of every search of a speaker's table or a forwarding table was one, and
/// so was every comparison of an export's sort of its changed prefixes and of a table's
/// rebuild (`Fib::replace_bgp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NetOrd(pub Ipv4Net);

impl NetOrd {
    fn key(&self) -> u64 {
        (u64::from(u32::from(self.0.addr())) << 8) | u64::from(self.0.prefix_len())
    }
}

impl Ord for NetOrd {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for NetOrd {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Fewer routes than this go into a table one by one ([`Fib::insert_new`]).
const BULK_MIN: usize = 64;

/// A device's forwarding table. Keyed by (prefix, metric) so a Linux table can hold the same
/// prefix at several metrics, as the kernel does; on EOS there is one route per prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fib {
    routes: BTreeMap<Key, Route>,
    /// How many routes have a prefix of each length: a lookup probes only the lengths present
    /// (a fabric's tables use a handful of the 33).
    lens: [u32; 33],
    /// Next hops held apart from their routes: every next hop of a route with more than one
    /// (spilled to the heap together), for the engine's memory guard — a leaf's route over 16
    /// spines takes several times a node's route over one gateway.
    spilled_hops: u64,
}

/// The next hops `r` holds apart from itself ([`Fib::spilled_hops`]).
fn spilled(r: &Route) -> u64 {
    if r.nexthops.spilled() {
        r.nexthops.len() as u64
    } else {
        0
    }
}

impl Serialize for Fib {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.routes.values())
    }
}

/// A route's place in a table: (prefix, metric), the prefix compared as one integer.
type Key = (NetOrd, u32);

fn key(prefix: Ipv4Net, metric: u32) -> Key {
    (NetOrd(prefix), metric)
}

/// The keys of `prefix`'s routes, every metric.
fn all_metrics(prefix: Ipv4Net) -> std::ops::RangeInclusive<Key> {
    key(prefix, 0)..=key(prefix, u32::MAX)
}

impl Default for Fib {
    fn default() -> Self {
        Fib {
            routes: BTreeMap::new(),
            lens: [0; 33],
            spilled_hops: 0,
        }
    }
}

impl Fib {
    /// Routes held (for the engine's memory guard).
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Next hops the routes hold on the heap: those of every route with more than one (for the
    /// engine's memory guard).
    pub fn spilled_hops(&self) -> u64 {
        self.spilled_hops
    }

    /// Longest-prefix match; among equal prefixes the lowest metric wins (Linux semantics;
    /// EOS tables have one route per prefix).
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<&Route> {
        self.longest_match(dst, |_| true)
    }

    /// `lookup` in the table without BGP's routes, as BGP's next-hop resolution and its
    /// speaker's local routes read it. A Linux table whose BGP routes stay in place between
    /// recomputes (`fib_update`) holds them only under keys no other route holds, so leaving
    /// them out is the table made without them; elsewhere they are not in the table then.
    pub(crate) fn lookup_without_bgp(&self, dst: Ipv4Addr) -> Option<&Route> {
        self.longest_match(dst, |r| !r.proto.is_bgp())
    }

    /// The longest-prefix match among the routes `usable` accepts, the lowest metric first.
    fn longest_match(&self, dst: Ipv4Addr, usable: impl Fn(&Route) -> bool) -> Option<&Route> {
        for len in (0..=32u8).rev().filter(|l| self.lens[*l as usize] != 0) {
            let Ok(net) = Ipv4Net::new(dst, len) else { continue };
            let net = net.trunc();
            // The keys from (net, lowest metric) on: one descent of the tree, where a bounded
            // range (`all_metrics`) makes two.
            let found = self
                .routes
                .range(key(net, 0)..)
                .take_while(|((p, _), _)| p.0 == net)
                .map(|(_, r)| r)
                .find(|r| usable(r));
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Put BGP's routes for the prefixes of `decided` (ascending; a speaker hands over one
    /// route per prefix at most, in `routes`, in the same order) in place of those BGP
    /// installed for them before, as a Linux table takes routes (`rib::kernel_table`): under a
    /// key no other route holds. Whether the table changed. One pass over the table and the
    /// tree built again from the sorted whole, as `insert_new` does: a search per prefix costs
    /// more once a node's table changes in a good part.
    pub(crate) fn replace_bgp(&mut self, decided: &[Ipv4Net], routes: Vec<Route>) -> bool {
        let mut old = std::mem::take(&mut self.routes).into_iter().peekable();
        let mut new = routes.into_iter().peekable();
        let mut merged = Vec::with_capacity(old.len() + new.len());
        let mut changed = false;
        for &p in decided {
            let p = NetOrd(p);
            while let Some(e) = old.next_if(|((q, _), _)| *q < p) {
                merged.push(e);
            }
            let mut was = None;
            let start = merged.len();
            while let Some(e) = old.next_if(|((q, _), _)| *q == p) {
                if e.1.proto.is_bgp() {
                    was = Some(e);
                } else {
                    merged.push(e);
                }
            }
            let now = new.next_if(|r| r.prefix == p.0).map(|r| (key(r.prefix, r.metric), r));
            let now = now.filter(|(key, _)| merged[start..].iter().all(|(k, _)| k != key));
            changed |= was != now;
            let len = p.0.prefix_len() as usize;
            self.lens[len] -= u32::from(was.is_some());
            self.spilled_hops -= was.as_ref().map_or(0, |(_, r)| spilled(r));
            if let Some(e) = now {
                self.lens[len] += 1;
                self.spilled_hops += spilled(&e.1);
                let at = start + merged[start..].partition_point(|(k, _)| *k < e.0);
                merged.insert(at, e);
            }
        }
        merged.extend(old);
        self.routes = merged.into_iter().collect();
        changed
    }

    /// `lookup` of each address of `sorted` (ascending), in one pass over the table: `each`
    /// gets the address's position and its route. A lookup per address descends the tree
    /// once per prefix length present; the reachability matrix asks every device about
    /// thousands of addresses.
    pub fn lookup_sorted<'s>(&'s self, sorted: &[Ipv4Addr], mut each: impl FnMut(usize, Option<&'s Route>)) {
        // The routes holding the current address, each inside the one below it, as (last
        // address, route). The table's order (network, then length, then metric) visits a
        // prefix before the prefixes inside it, so pushing a route after popping those that
        // end before it keeps the stack nested, and its top is the longest match.
        let mut stack: Vec<(u32, &Route)> = Vec::new();
        let mut routes = self.routes.iter().peekable();
        let mut last_prefix = None;
        for (i, addr) in sorted.iter().map(|a| u32::from(*a)).enumerate() {
            while let Some(((NetOrd(prefix), _), route)) =
                routes.next_if(|((p, _), _)| u32::from(p.0.network()) <= addr)
            {
                // Later entries of one prefix have higher metrics: `lookup` takes the first.
                if last_prefix == Some(*prefix) {
                    continue;
                }
                last_prefix = Some(*prefix);
                let first = u32::from(prefix.network());
                while stack.last().is_some_and(|(last, _)| *last < first) {
                    stack.pop();
                }
                stack.push((u32::from(prefix.broadcast()), route));
            }
            while stack.last().is_some_and(|(last, _)| *last < addr) {
                stack.pop();
            }
            each(i, stack.last().map(|(_, r)| *r));
        }
    }

    /// Routes in table order (by prefix, then metric).
    pub fn iter(&self) -> impl Iterator<Item = &Route> {
        self.routes.values()
    }

    /// The routes for exactly `prefix`, lowest metric first.
    pub fn with_prefix(&self, prefix: Ipv4Net) -> impl Iterator<Item = &Route> {
        self.keyed_at(prefix).map(|(_, r)| r)
    }

    /// The route at (`prefix`, `metric`).
    pub fn get(&self, prefix: Ipv4Net, metric: u32) -> Option<&Route> {
        self.routes.get(&key(prefix, metric))
    }

    /// Routes with their keys, (prefix, metric), in table order. A router's table keys every
    /// route at metric 0, whatever the route's own metric.
    pub fn keyed(&self) -> impl Iterator<Item = ((Ipv4Net, u32), &Route)> {
        self.routes.iter().map(|((p, m), r)| ((p.0, *m), r))
    }

    /// `keyed`, for exactly `prefix`.
    pub fn keyed_at(&self, prefix: Ipv4Net) -> impl Iterator<Item = ((Ipv4Net, u32), &Route)> {
        self.routes.range(all_metrics(prefix)).map(|((p, m), r)| ((p.0, *m), r))
    }

    pub fn insert(&mut self, r: Route) {
        self.insert_at((r.prefix, r.metric), r);
    }

    /// Keeps only the routes `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Route) -> bool) {
        let (lens, hops) = (&mut self.lens, &mut self.spilled_hops);
        self.routes.retain(|(p, _), r| {
            let kept = keep(r);
            if !kept {
                lens[p.0.prefix_len() as usize] -= 1;
                *hops -= spilled(r);
            }
            kept
        });
    }

    /// `r` under `key`, replacing what was there (a router's table keys every route at metric 0).
    pub(crate) fn insert_at(&mut self, (prefix, metric): (Ipv4Net, u32), r: Route) {
        self.spilled_hops += spilled(&r);
        match self.routes.insert(key(prefix, metric), r) {
            Some(old) => self.spilled_hops -= spilled(&old),
            None => self.lens[prefix.prefix_len() as usize] += 1,
        }
    }

    /// Insert each of `routes` unless the table already holds a route at its prefix and metric
    /// (the kernel refuses such a route: `EEXIST`); of equal keys among `routes` the first goes
    /// in.
    ///
    /// Many routes at once (a node of an eBGP fabric gets every prefix from BIRD into a table
    /// of a few connected routes) are merged with the table and the tree built again from the
    /// sorted whole: a B-tree grown one ascending key at a time leaves its nodes about half
    /// full, and the nodes' kernel tables were the largest part of such a fabric's heap.
    pub(crate) fn insert_new(&mut self, mut routes: Vec<Route>) {
        if routes.len() < BULK_MIN || routes.len() < self.routes.len() {
            for r in routes {
                let len = r.prefix.prefix_len() as usize;
                if let std::collections::btree_map::Entry::Vacant(v) = self.routes.entry(key(r.prefix, r.metric)) {
                    self.lens[len] += 1;
                    self.spilled_hops += spilled(&r);
                    v.insert(r);
                }
            }
            return;
        }
        // Stable: of equal keys the first stays in front, and `dedup_by_key` keeps it.
        routes.sort_by_key(|r| key(r.prefix, r.metric));
        routes.dedup_by_key(|r| key(r.prefix, r.metric));
        let mut held = std::mem::take(&mut self.routes).into_iter().peekable();
        let mut merged = Vec::with_capacity(held.len() + routes.len());
        for r in routes {
            let k = key(r.prefix, r.metric);
            while let Some(h) = held.next_if(|(h, _)| *h < k) {
                merged.push(h);
            }
            if held.peek().is_none_or(|(h, _)| *h != k) {
                self.lens[r.prefix.prefix_len() as usize] += 1;
                self.spilled_hops += spilled(&r);
                merged.push((k, r));
            }
        }
        merged.extend(held);
        // From sorted, distinct keys the tree is built bottom-up with full nodes.
        self.routes = merged.into_iter().collect();
    }

    /// Take out every route for exactly `prefix` (with its key), lowest metric first.
    pub(crate) fn take_prefix(&mut self, prefix: Ipv4Net) -> Vec<((Ipv4Net, u32), Route)> {
        let keys: Vec<Key> = self.routes.range(all_metrics(prefix)).map(|(k, _)| *k).collect();
        self.lens[prefix.prefix_len() as usize] -= keys.len() as u32;
        let taken: Vec<_> = keys
            .into_iter()
            .filter_map(|k| self.routes.remove(&k).map(|r| ((k.0 .0, k.1), r)))
            .collect();
        self.spilled_hops -= taken.iter().map(|(_, r)| spilled(r)).sum::<u64>();
        taken
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum NbrState {
    Down,
    Init,
    TwoWay,
    ExStart,
    Full,
}

/// The neighbour's role on the segment, as `show ip ospf neighbor` prints after the slash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NbrRole {
    Dr,
    Bdr,
    DrOther,
    /// Point-to-point network: no role.
    None,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OspfNeighbor {
    pub router_id: Ipv4Addr,
    pub address: Ipv4Addr,
    pub iface: IfId,
    pub priority: u8,
    pub state: NbrState,
    pub role: NbrRole,
    /// Milliseconds left on the inactivity (dead) timer.
    pub dead_ms_left: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OspfView {
    pub process_id: u32,
    pub router_id: Option<Ipv4Addr>,
    pub neighbors: Vec<OspfNeighbor>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DevState {
    pub device: Option<DeviceId>,
    pub powered: bool,
    pub fib: Fib,
    pub ospf: Option<OspfView>,
    pub bgp: Option<super::BgpView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linux_proto_serializes_as_the_word_ip_route_prints() {
        let words = serde_json::to_string(&[LinuxProto::Bird, LinuxProto::FelixVxlan]).unwrap();
        assert_eq!(words, r#"["bird","80"]"#);
    }

    fn route(prefix: &str, metric: u32) -> Route {
        Route {
            prefix: prefix.parse().expect("prefix"),
            proto: Proto::Static,
            distance: 0,
            metric,
            nexthops: NextHops::new(),
            src: None,
            blackhole: false,
            unreachable: false,
            linux_proto: None,
            scope_link: false,
            onlink: false,
        }
    }

    fn hit(fib: &Fib, dst: &str) -> Option<(String, u32)> {
        fib.lookup(dst.parse().expect("address"))
            .map(|r| (r.prefix.to_string(), r.metric))
    }

    /// A route over `hops` gateways (BGP's, so that `replace_bgp` takes it).
    fn over(prefix: &str, hops: u8) -> Route {
        let mut r = route(prefix, 0);
        r.proto = Proto::BgpExternal;
        r.nexthops = (0..hops)
            .map(|h| NextHop {
                via: Some(Ipv4Addr::new(10, 255, 0, h)),
                iface: IfId(u32::from(h)),
            })
            .collect();
        r
    }

    #[test]
    fn the_spilled_hop_count_follows_every_change_of_the_table() {
        let recount = |fib: &Fib| fib.iter().map(spilled).sum::<u64>();
        let mut fib = Fib::default();
        fib.insert(over("10.0.0.0/24", 4));
        fib.insert(over("10.0.1.0/24", 1));
        assert_eq!(fib.spilled_hops(), 4);
        // Replaced in place, by one hop and by three.
        fib.insert_at((net("10.0.0.0/24"), 0), over("10.0.0.0/24", 1));
        fib.insert_at((net("10.0.1.0/24"), 0), over("10.0.1.0/24", 3));
        assert_eq!(fib.spilled_hops(), 3);
        let batch: Vec<Route> = (0..BULK_MIN as u32)
            .map(|i| over(&format!("10.1.{i}.0/24"), 2))
            .collect();
        fib.insert_new(batch);
        assert_eq!(fib.spilled_hops(), recount(&fib));
        fib.insert_new(vec![over("10.2.0.0/24", 5), over("10.0.1.0/24", 7)]);
        assert_eq!(fib.spilled_hops(), recount(&fib));
        fib.replace_bgp(&[net("10.0.1.0/24"), net("10.2.0.0/24")], vec![over("10.2.0.0/24", 6)]);
        assert_eq!(fib.spilled_hops(), recount(&fib));
        fib.take_prefix(net("10.2.0.0/24"));
        fib.retain(|r| r.prefix != net("10.1.0.0/24"));
        assert_eq!(fib.spilled_hops(), recount(&fib));
        fib.retain(|_| false);
        assert_eq!(fib.spilled_hops(), 0);
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().expect("prefix")
    }

    #[test]
    fn many_routes_at_once_go_in_as_one_at_a_time_would() {
        // A table holding some keys, then a batch (large enough to be merged) that repeats one
        // of them and holds equal keys of its own: the table's route stays, and of the batch's
        // equals the first goes in.
        let held = |fib: &mut Fib| {
            fib.insert_new(vec![route("10.0.0.0/31", 0), route("0.0.0.0/0", 0)]);
        };
        let mut batch: Vec<Route> = (0..2 * BULK_MIN as u32)
            .rev()
            .map(|i| route(&format!("10.{}.{}.0/24", i / 256, i % 256), i % 2))
            .collect();
        let mut repeated = route("10.0.0.0/31", 0);
        repeated.proto = Proto::Bird;
        let mut second = route("10.0.5.0/24", 1);
        second.proto = Proto::Bird;
        batch.extend([repeated, second]);
        let (mut merged, mut one_by_one) = (Fib::default(), Fib::default());
        held(&mut merged);
        held(&mut one_by_one);
        merged.insert_new(batch.clone());
        for r in batch {
            one_by_one.insert_new(vec![r]);
        }
        assert_eq!(merged, one_by_one);
        assert_eq!(merged.len(), 2 + 2 * BULK_MIN);
        let proto = |fib: &Fib, p: &str| fib.with_prefix(p.parse().expect("prefix")).next().map(|r| r.proto);
        assert_eq!(proto(&merged, "10.0.0.0/31"), Some(Proto::Static));
        assert_eq!(proto(&merged, "10.0.5.0/24"), Some(Proto::Static));
        assert_eq!(hit(&merged, "10.0.100.9"), Some(("10.0.100.0/24".into(), 0)));
    }

    #[test]
    fn lookup_takes_the_longest_prefix_present_then_the_lowest_metric() {
        let mut fib = Fib::default();
        assert_eq!(hit(&fib, "10.1.0.5"), None, "an empty table");
        for (p, m) in [
            ("10.1.0.0/26", 100),
            ("0.0.0.0/0", 0),
            ("10.0.0.0/8", 0),
            ("10.1.0.5/32", 0),
            ("10.1.0.0/26", 20),
        ] {
            fib.insert(route(p, m));
        }
        assert_eq!(hit(&fib, "10.1.0.5"), Some(("10.1.0.5/32".into(), 0)));
        assert_eq!(hit(&fib, "10.1.0.6"), Some(("10.1.0.0/26".into(), 20)));
        assert_eq!(hit(&fib, "10.1.0.64"), Some(("10.0.0.0/8".into(), 0)));
        assert_eq!(hit(&fib, "192.0.2.1"), Some(("0.0.0.0/0".into(), 0)));
    }

    /// One pass over sorted addresses finds what a lookup of each finds: nested prefixes,
    /// one prefix at two metrics, addresses before, between and after every route.
    #[test]
    fn lookup_sorted_is_lookup_of_each() {
        let mut fib = Fib::default();
        for (p, m) in [
            ("10.0.0.0/8", 0),
            ("10.0.0.0/24", 10),
            ("10.0.0.0/24", 5),
            ("10.0.0.5/32", 0),
            ("10.0.1.0/24", 0),
            ("10.0.0.128/25", 0),
            ("192.0.2.0/24", 0),
        ] {
            fib.insert(route(p, m));
        }
        let mut sorted: Vec<Ipv4Addr> = (0..=255u8)
            .flat_map(|b| {
                [
                    [9, 255, 255, b],
                    [10, 0, 0, b],
                    [10, 0, 1, b],
                    [10, 0, 2, b],
                    [192, 0, 2, b],
                    [255, 255, 255, b],
                ]
            })
            .map(Ipv4Addr::from)
            .collect();
        sorted.sort_unstable();
        let mut seen = 0;
        fib.lookup_sorted(&sorted, |i, r| {
            assert_eq!(
                r.map(|r| (r.prefix, r.metric)),
                fib.lookup(sorted[i]).map(|r| (r.prefix, r.metric)),
                "{}",
                sorted[i]
            );
            seen += 1;
        });
        assert_eq!(seen, sorted.len());
        for _ in 0..2 {
            fib.insert(route("0.0.0.0/0", 0));
            let mut routed = 0;
            fib.lookup_sorted(&sorted, |_, r| routed += usize::from(r.is_some()));
            assert_eq!(routed, sorted.len());
        }
    }
}
