//! BIRD 1.6's recursive next-hop resolution (`gateway recursive`): nest/rt-table.c
//! `rt_update_hostentry` over `net_route`. A BGP next hop is looked up in BIRD's own table (the
//! `igp table`, `master` in every configuration fabsim reads), not in the kernel's: the longest
//! prefix that holds a route, then that prefix's best route decides —
//! - a route that is itself recursive (it has a hostentry: a BGP route from a `gateway
//!   recursive` session) resolves nothing: "Next hop address … resolvable through recursive
//!   route" — the shorter prefixes are not tried;
//! - a device route (`direct` protocol, a kernel-learned `dev` route) reaches the next hop
//!   itself on that interface, IGP metric 0;
//! - a gateway route (kernel-learned, static, BGP with `gateway direct`) lends its gateway and
//!   interface, IGP metric unknown (`rt_get_igp_metric`: no OSPF/RIP in BIRD here);
//! - blackhole/unreachable routes, no route, or a local address leave the route unreachable.
//!
//! BIRD recomputes hostentries whenever a route in a watched range changes (the hostcache
//! trie), so the result is the fixpoint: which route is best for a covering prefix depends only
//! on preference (direct 240 > static 200 > BGP 100 > kernel 10, `rte_better`) and, between BGP
//! routes, on the previous decision, which the engine's next recompute settles.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::table::{Entry, LocalDest, Origin, Resolutions, Table};
use crate::engine::bgp_state::{NhMetric, TableDest};
use crate::engine::state::NextHop;

/// What the best route of one prefix of BIRD's table lends to a next hop it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cover {
    /// A recursive route: nothing (rt-table.c: "should not depend on another recursive route").
    Recursive,
    /// A device route on this interface: the next hop itself is the gateway.
    Device(NextHop),
    /// A gateway route: its gateway(s) and interface(s).
    Gateway(TableDest),
    /// Blackhole or unreachable.
    Unusable,
}

/// What the best route of a prefix of BIRD's table lends (None: no route there — BIRD's table
/// keeps only routes its import filter accepted). `recursive(origin)` says whether a received
/// route came over a `gateway recursive` session.
pub(crate) fn cover(entries: &[Entry], res: &Resolutions, recursive: impl Fn(&Origin) -> bool) -> Option<Cover> {
    let best = best_by_preference(entries)?;
    Some(match &best.origin {
        Origin::Peer(..) if recursive(&best.origin) => Cover::Recursive,
        Origin::Peer(..) => match &res.get(best.resolved).dest {
            dest @ (TableDest::Via(_) | TableDest::Multipath(_)) => Cover::Gateway(dest.clone()),
            TableDest::Device(nh) => Cover::Device(nh.clone()),
            TableDest::Blackhole | TableDest::Unreachable => Cover::Unusable,
        },
        Origin::Local(l) => match &l.dest {
            LocalDest::Hop(nh) => Cover::Gateway(TableDest::Via(nh.clone())),
            LocalDest::Device(nh) => Cover::Device(nh.clone()),
            LocalDest::Blackhole | LocalDest::Unreachable | LocalDest::Rib => Cover::Unusable,
        },
    })
}

/// [`cover`] for each prefix of `table` that holds a route, looked up for one next hop at a
/// time: a node resolves one or two next hops, through a table of every prefix of the fabric.
pub(crate) fn covering<'a>(
    table: &'a Table,
    res: &'a Resolutions,
    recursive: impl Fn(&Origin) -> bool + 'a,
) -> impl Fn(&Ipv4Net) -> Option<Cover> + 'a {
    move |prefix| table.get(prefix).and_then(|entries| cover(entries, res, &recursive))
}

/// `rte_better` across protocols: the highest preference wins; between routes of equal
/// preference (BGP paths) the one the last decision chose, else the oldest entry.
fn best_by_preference(entries: &[Entry]) -> Option<&Entry> {
    let top = entries.iter().filter(|e| e.accepted).map(|e| e.preference).max()?;
    let mut tied = entries.iter().filter(|e| e.accepted && e.preference == top);
    let first = tied.clone().next();
    tied.find(|e| e.best).or(first)
}

/// `net_route` + `rt_update_hostentry` for next hop `nh` (not a local address: the caller
/// checks that, as `if_local_addr` does): the longest prefix with a route, by `covers`.
pub(crate) fn resolve(covers: impl Fn(&Ipv4Net) -> Option<Cover>, nh: Ipv4Addr) -> (TableDest, NhMetric) {
    let unresolvable = (TableDest::Unreachable, NhMetric::Unresolvable);
    let found = (0..=32u8)
        .rev()
        .filter_map(|len| Ipv4Net::new(nh, len).ok().map(|n| n.trunc()))
        .find_map(|net| covers(&net));
    match found {
        Some(Cover::Device(link)) => (
            TableDest::Via(NextHop {
                via: Some(nh),
                iface: link.iface,
            }),
            NhMetric::Known(0),
        ),
        Some(Cover::Gateway(dest)) => (dest, NhMetric::Unknown),
        Some(Cover::Recursive | Cover::Unusable) | None => unresolvable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IfId;
    use std::collections::BTreeMap;

    fn cover_map(rows: &[(&str, Cover)]) -> impl Fn(&Ipv4Net) -> Option<Cover> {
        let map: BTreeMap<Ipv4Net, Cover> = rows
            .iter()
            .map(|(p, c)| (p.parse().expect("prefix"), c.clone()))
            .collect();
        move |p| map.get(p).cloned()
    }

    fn hop(via: &str, iface: u32) -> NextHop {
        NextHop {
            via: Some(via.parse().expect("address")),
            iface: IfId(iface),
        }
    }

    #[test]
    fn a_recursive_covering_route_resolves_nothing_even_with_a_shorter_gateway_route() {
        let covers = cover_map(&[
            ("0.0.0.0/0", Cover::Gateway(TableDest::Via(hop("10.1.0.1", 1)))),
            ("10.254.0.0/31", Cover::Recursive),
        ]);
        let nh = "10.254.0.1".parse().expect("address");
        assert_eq!(resolve(&covers, nh), (TableDest::Unreachable, NhMetric::Unresolvable));
        // Outside the recursive route's range the default route lends its gateway.
        let other = "10.254.0.2".parse().expect("address");
        assert_eq!(
            resolve(&covers, other),
            (TableDest::Via(hop("10.1.0.1", 1)), NhMetric::Unknown)
        );
    }

    #[test]
    fn a_device_route_makes_the_next_hop_its_own_gateway_at_metric_zero() {
        let covers = cover_map(&[(
            "10.1.0.0/24",
            Cover::Device(NextHop {
                via: None,
                iface: IfId(3),
            }),
        )]);
        let nh = "10.1.0.7".parse().expect("address");
        assert_eq!(
            resolve(&covers, nh),
            (TableDest::Via(hop("10.1.0.7", 3)), NhMetric::Known(0))
        );
        assert_eq!(
            resolve(&covers, "10.2.0.7".parse().expect("address")).1,
            NhMetric::Unresolvable
        );
    }

    #[test]
    fn an_unusable_longest_match_does_not_fall_back() {
        let covers = cover_map(&[
            ("10.0.0.0/8", Cover::Gateway(TableDest::Via(hop("10.1.0.1", 1)))),
            ("10.65.0.0/26", Cover::Unusable),
        ]);
        assert_eq!(
            resolve(&covers, "10.65.0.5".parse().expect("address")).1,
            NhMetric::Unresolvable
        );
    }
}
