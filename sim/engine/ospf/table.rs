//! Each router's OSPF routing table (RFC 2328 §11), kept from one recompute to the next and
//! derived again only where a change reached it.
//!
//! SPF itself is cheap (a fabric's area has a few hundred routers); what a recompute spends
//! most on is turning every router's tree into routes to every AS-external prefix (thousands
//! per router on a large fabric). After an LSDB change most of those routes come out as they
//! were: a cut spine–leaf link moves the routes behind the two routers at its ends, not the
//! rest. So, as RFC 2328 §16.5/§16.6 do for summary and AS-external LSAs and as FRR's ospfd and
//! BIRD keep their tables between runs, a router's AS-external route to a prefix is derived
//! again only when something it is made of changed: the prefix's AS-external LSAs, the
//! distance or next hops to one of its ASBRs, or whether an intra-area route covers the prefix.
//! The intra-area routes come out of the SPF run itself and are taken whole.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;

use super::spf::{Intra, SpfTree, Tree};
use super::{mk_route, External, Reached};
use crate::engine::state::{NextHop, Proto, Route};

/// AS-external LSAs: (prefix, advertising ASBR) → metric and type.
pub(super) type Externals = BTreeMap<(Ipv4Net, Ipv4Addr), External>;

/// What a router's tree and routes depend on besides the LSDB: its router ID (the SPF root)
/// and the configuration the routes are made with. A change to any of them derives the
/// router's table afresh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Inputs {
    pub(super) root: Ipv4Addr,
    pub(super) max_paths: usize,
    pub(super) distance: u8,
}

/// One router's OSPF routing table and the SPF result it was made from.
#[derive(Clone, Debug)]
pub(super) struct Table {
    pub(super) inputs: Inputs,
    /// The router's SPF tree, for telling which vertices the next run moved.
    tree: Tree,
    /// Distance and next hops to every router the tree reaches (the ASBRs among them).
    reached: Reached,
    /// The intra-area routes, then the AS-external routes, each in prefix order. Shared with
    /// the engine, which only reads them while it builds the forwarding tables, so the next
    /// recompute gets them back unshared and edits them in place.
    routes: Arc<Vec<Route>>,
    /// Where the AS-external routes start in `routes`.
    intra_len: usize,
    /// The prefixes whose routes the last update may have changed, in order (None: any, the
    /// table was made afresh).
    moved: Option<Vec<Ipv4Net>>,
}

impl Table {
    /// A router's table from a fresh SPF tree, with nothing kept from before.
    pub(super) fn new(inputs: Inputs, spf: SpfTree, externals: &Externals) -> Self {
        let SpfTree { tree, routers, intra } = spf;
        let intra = match intra {
            Intra::Whole(routes) => routes,
            Intra::Again(edits) => edits.into_iter().filter_map(|(_, r)| r).collect(),
        };
        let every: BTreeSet<Ipv4Net> = externals.keys().map(|(p, _)| *p).collect();
        derive(inputs, tree, routers, intra, Vec::new(), &every, externals)
    }

    pub(super) fn routes(&self) -> &Arc<Vec<Route>> {
        &self.routes
    }

    pub(super) fn tree(&self) -> &Tree {
        &self.tree
    }

    pub(super) fn intra_len(&self) -> usize {
        self.intra_len
    }

    pub(super) fn moved(&self) -> Option<&[Ipv4Net]> {
        self.moved.as_deref()
    }

    /// This table after a recompute: `spf` is the router's new SPF result (`None`: the router
    /// and network LSAs did not change, so neither did the tree), `externals` the AS-external
    /// LSAs now, `moved` the prefixes whose AS-external LSAs changed since this table was made,
    /// `by_asbr` every ASBR's prefixes.
    pub(super) fn update(
        self,
        spf: Option<SpfTree>,
        externals: &Externals,
        moved: &BTreeSet<Ipv4Net>,
        by_asbr: &BTreeMap<Ipv4Addr, Vec<Ipv4Net>>,
    ) -> Self {
        let Some(SpfTree { tree, routers, intra }) = spf else {
            if moved.is_empty() {
                return Table {
                    moved: Some(Vec::new()),
                    ..self
                };
            }
            let Table {
                inputs,
                tree,
                reached,
                routes,
                intra_len,
                ..
            } = self;
            let mut intra = unshared(routes);
            let old_external = intra.split_off(intra_len);
            let mut table = derive(inputs, tree, reached, intra, old_external, moved, externals);
            table.moved = Some(moved.iter().copied().collect());
            return table;
        };
        let old_intra = &self.routes[..self.intra_len];
        let edits = intra_edits(old_intra, intra);
        let mut dirty = moved.clone();
        dirty.extend(
            moved_asbrs(&self.reached, &routers)
                .flat_map(|asbr| by_asbr.get(&asbr))
                .flatten(),
        );
        // An external is hidden by an intra-area route to the same prefix.
        dirty.extend(
            edits
                .iter()
                .filter(|(p, r)| r.is_some() != intra_route(old_intra, p).is_some())
                .map(|(p, _)| *p),
        );
        let Table {
            inputs,
            routes,
            intra_len,
            ..
        } = self;
        if edits.is_empty() && dirty.is_empty() {
            return Table {
                inputs,
                tree,
                reached: routers,
                routes,
                intra_len,
                moved: Some(Vec::new()),
            };
        }
        let mut intra = unshared(routes);
        let old_external = intra.split_off(intra_len);
        dirty.extend(edits.iter().map(|(p, _)| *p));
        apply(&mut intra, edits);
        let mut table = derive(inputs, tree, routers, intra, old_external, &dirty, externals);
        table.moved = Some(dirty.into_iter().collect());
        table
    }
}

/// The routes, copied only if the engine still holds them (a cloned engine shares them).
fn unshared(routes: Arc<Vec<Route>>) -> Vec<Route> {
    Arc::try_unwrap(routes).unwrap_or_else(|shared| (*shared).clone())
}

/// The route to `prefix` among prefix-ordered routes.
fn intra_route<'a>(routes: &'a [Route], prefix: &Ipv4Net) -> Option<&'a Route> {
    routes
        .binary_search_by_key(prefix, |r| r.prefix)
        .ok()
        .map(|i| &routes[i])
}

/// What the new intra-area routes change in `old`: per prefix, in prefix order, the route now
/// (None: gone), for the prefixes whose route is not as it was.
fn intra_edits(old: &[Route], new: Intra) -> Vec<(Ipv4Net, Option<Route>)> {
    match new {
        Intra::Again(edits) => edits
            .into_iter()
            .filter(|(p, r)| intra_route(old, p) != r.as_ref())
            .collect(),
        Intra::Whole(routes) => {
            let mut edits: Vec<(Ipv4Net, Option<Route>)> = old
                .iter()
                .filter(|r| intra_route(&routes, &r.prefix).is_none())
                .map(|r| (r.prefix, None))
                .collect();
            edits.extend(
                routes
                    .into_iter()
                    .filter(|r| intra_route(old, &r.prefix) != Some(r))
                    .map(|r| (r.prefix, Some(r))),
            );
            edits.sort_by_key(|(p, _)| *p);
            edits
        }
    }
}

/// Apply prefix-ordered edits to prefix-ordered routes: in place when every edit replaces a
/// route (a moved next hop, the usual case), else by merging.
fn apply(routes: &mut Vec<Route>, edits: Vec<(Ipv4Net, Option<Route>)>) {
    let slots: Option<Vec<usize>> = edits
        .iter()
        .map(|(p, r)| {
            let at = routes.binary_search_by_key(p, |x| x.prefix).ok()?;
            r.is_some().then_some(at)
        })
        .collect();
    if let Some(slots) = slots {
        // Every edit is a replacement (`slots` holds one only for those).
        for (at, r) in slots.into_iter().zip(edits.into_iter().filter_map(|(_, r)| r)) {
            routes[at] = r;
        }
        return;
    }
    let old = std::mem::take(routes);
    let mut edits = edits.into_iter().peekable();
    for r in old {
        while let Some((_, new)) = edits.next_if(|(p, _)| *p < r.prefix) {
            routes.extend(new);
        }
        match edits.next_if(|(p, _)| *p == r.prefix) {
            Some((_, new)) => routes.extend(new),
            None => routes.push(r),
        }
    }
    routes.extend(edits.filter_map(|(_, r)| r));
}

/// The prefixes whose AS-external LSAs differ between `old` and `new` (added, withdrawn, or
/// with another metric or type).
pub(super) fn moved_prefixes(old: &Externals, new: &Externals) -> BTreeSet<Ipv4Net> {
    let mut moved: BTreeSet<Ipv4Net> = new
        .iter()
        .filter(|(k, v)| old.get(k) != Some(v))
        .map(|(k, _)| k.0)
        .collect();
    moved.extend(old.keys().filter(|k| !new.contains_key(k)).map(|k| k.0));
    moved
}

/// Every ASBR's prefixes, for finding the routes a moved ASBR touches.
pub(super) fn prefixes_by_asbr(externals: &Externals) -> BTreeMap<Ipv4Addr, Vec<Ipv4Net>> {
    let mut by_asbr: BTreeMap<Ipv4Addr, Vec<Ipv4Net>> = BTreeMap::new();
    for (prefix, asbr) in externals.keys() {
        by_asbr.entry(*asbr).or_default().push(*prefix);
    }
    by_asbr
}

/// The routers whose distance or next hops differ between two trees (or that only one reaches).
fn moved_asbrs<'a>(old: &'a Reached, new: &'a Reached) -> impl Iterator<Item = Ipv4Addr> + 'a {
    let gone = old.keys().filter(|r| !new.contains_key(r));
    new.iter()
        .filter(|(r, x)| old.get(r) != Some(x))
        .map(|(r, _)| r)
        .chain(gone)
        .copied()
}

/// A router's table: the intra-area routes, then its AS-external routes — those of
/// `old_external` (prefix-ordered) for prefixes not in `dirty`, derived again for the rest.
fn derive(
    inputs: Inputs,
    tree: Tree,
    reached: Reached,
    intra: Vec<Route>,
    old_external: Vec<Route>,
    dirty: &BTreeSet<Ipv4Net>,
    externals: &Externals,
) -> Table {
    let intra_len = intra.len();
    let mut routes = intra;
    let mut old = old_external.into_iter().peekable();
    for &prefix in dirty {
        while let Some(kept) = old.next_if(|r| r.prefix < prefix) {
            routes.push(kept);
        }
        old.next_if(|r| r.prefix == prefix);
        if intra_route(&routes[..intra_len], &prefix).is_some() {
            continue;
        }
        let lsas = externals.range((prefix, Ipv4Addr::UNSPECIFIED)..=(prefix, Ipv4Addr::BROADCAST));
        if let Some(route) = external_route(&inputs, &reached, prefix, lsas) {
            routes.push(route);
        }
    }
    routes.extend(old);
    Table {
        inputs,
        tree,
        reached,
        routes: Arc::new(routes),
        intra_len,
        moved: None,
    }
}

/// How AS-external candidates compare: (is E2, metric, cost to the ASBR); lower is better.
type ExtRank = (bool, u32, u32);

/// The route to an AS-external prefix from its LSAs (RFC 2328 §16.4): E1 beats E2; E2 compares
/// the external metric, then the cost to the ASBR; equal candidates share their next hops.
/// None when the router reaches no ASBR of the prefix (its own LSA does not count).
fn external_route<'a>(
    inputs: &Inputs,
    reached: &Reached,
    prefix: Ipv4Net,
    lsas: impl Iterator<Item = (&'a (Ipv4Net, Ipv4Addr), &'a External)>,
) -> Option<Route> {
    let mut best: Option<(ExtRank, BTreeSet<NextHop>)> = None;
    for ((_, asbr), e) in lsas {
        if *asbr == inputs.root {
            continue;
        }
        let Some((d, hops)) = reached.get(asbr) else {
            continue;
        };
        let rank = if e.e1 {
            (false, d + e.metric, 0)
        } else {
            (true, e.metric, *d)
        };
        match &mut best {
            Some((r, _)) if rank > *r => {}
            Some((r, all)) if rank == *r => all.extend(hops.iter().cloned()),
            _ => best = Some((rank, hops.clone())),
        }
    }
    let ((e2, metric, _), hops) = best.filter(|(_, hops)| !hops.is_empty())?;
    let proto = if e2 { Proto::OspfE2 } else { Proto::OspfE1 };
    Some(mk_route(prefix, proto, inputs.distance, metric, hops, inputs.max_paths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::IfId;

    fn addr(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, 0, last)
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().expect("prefix")
    }

    fn hop(i: u32) -> NextHop {
        NextHop {
            via: Some(addr(100 + i as u8)),
            iface: IfId(i),
        }
    }

    fn inputs() -> Inputs {
        Inputs {
            root: addr(1),
            max_paths: 4,
            distance: 110,
        }
    }

    /// A tree reaching `routers` (router, distance, next-hop interfaces), with intra-area
    /// routes to `intra`.
    fn tree(routers: &[(u8, u32, &[u32])], intra: &[&str]) -> SpfTree {
        SpfTree {
            tree: Tree::default(),
            routers: routers
                .iter()
                .map(|(r, d, hops)| (addr(*r), (*d, hops.iter().map(|i| hop(*i)).collect())))
                .collect(),
            intra: Intra::Whole(
                intra
                    .iter()
                    .map(|p| mk_route(net(p), Proto::OspfIntra, 110, 10, [hop(1)], 4))
                    .collect(),
            ),
        }
    }

    /// The same tree as edits: every prefix of `touched` derived again (some unchanged).
    fn as_edits(t: &SpfTree, touched: &[&str]) -> SpfTree {
        let Intra::Whole(routes) = &t.intra else {
            unreachable!("trees are made whole")
        };
        let mut edits: Vec<(Ipv4Net, Option<Route>)> = touched
            .iter()
            .map(|p| (net(p), intra_route(routes, &net(p)).cloned()))
            .collect();
        edits.sort_by_key(|(p, _)| *p);
        SpfTree {
            intra: Intra::Again(edits),
            ..t.clone()
        }
    }

    fn externals(lsas: &[(&str, u8, u32, bool)]) -> Externals {
        lsas.iter()
            .map(|(p, asbr, metric, e1)| {
                (
                    (net(p), addr(*asbr)),
                    External {
                        metric: *metric,
                        e1: *e1,
                    },
                )
            })
            .collect()
    }

    /// Updating a kept table gives what deriving it afresh gives, whatever moved: an ASBR's
    /// next hops, an external withdrawn or added or retyped, a prefix that became intra-area;
    /// whether the new intra-area routes come whole or as edits.
    #[test]
    fn an_updated_table_is_a_fresh_one() {
        let before_tree = || {
            tree(
                &[(1, 0, &[]), (2, 10, &[1, 2]), (3, 10, &[2]), (4, 20, &[1, 2])],
                &["192.168.0.0/31", "192.168.1.0/24"],
            )
        };
        let before_ext = externals(&[
            ("172.16.0.0/24", 2, 20, false),
            ("172.16.0.0/24", 3, 20, false),
            ("172.16.1.0/24", 4, 5, true),
            ("172.16.2.0/24", 1, 20, false),
            ("172.16.3.0/24", 3, 20, false),
            ("192.168.2.0/24", 4, 20, false),
        ]);
        let after_trees = [
            // ASBR 2 lost a next hop, ASBR 4 is further away.
            tree(
                &[(1, 0, &[]), (2, 10, &[2]), (3, 10, &[2]), (4, 30, &[2])],
                &["192.168.0.0/31", "192.168.1.0/24"],
            ),
            // ASBR 3 is gone; 192.168.2.0/24 became intra-area and 192.168.0.0/31 went.
            tree(
                &[(1, 0, &[]), (2, 10, &[1, 2]), (4, 20, &[1, 2])],
                &["192.168.1.0/24", "192.168.2.0/24"],
            ),
            before_tree(),
        ];
        let after_ext = [
            before_ext.clone(),
            externals(&[
                ("172.16.0.0/24", 2, 20, false),
                ("172.16.1.0/24", 4, 5, false),
                ("172.16.3.0/24", 3, 20, false),
                ("172.16.4.0/24", 2, 1, true),
                ("192.168.2.0/24", 4, 20, false),
            ]),
        ];
        let touched = ["192.168.0.0/31", "192.168.1.0/24", "192.168.2.0/24", "192.168.9.0/24"];
        let after_trees: Vec<SpfTree> = after_trees
            .iter()
            .flat_map(|t| [t.clone(), as_edits(t, &touched)])
            .collect();
        for t in &after_trees {
            for e in &after_ext {
                let kept = Table::new(inputs(), before_tree(), &before_ext);
                let moved = moved_prefixes(&before_ext, e);
                let updated = kept.update(Some(t.clone()), e, &moved, &prefixes_by_asbr(e));
                let fresh = Table::new(inputs(), t.clone(), e);
                assert_eq!(updated.routes, fresh.routes, "{t:?} {e:?}");
                assert_eq!(updated.intra_len, fresh.intra_len);
            }
        }
        // The same LSDB (no new tree) with moved externals.
        let kept = Table::new(inputs(), before_tree(), &before_ext);
        let moved = moved_prefixes(&before_ext, &after_ext[1]);
        let updated = kept.update(None, &after_ext[1], &moved, &BTreeMap::new());
        assert_eq!(
            updated.routes,
            Table::new(inputs(), before_tree(), &after_ext[1]).routes
        );
    }
}
