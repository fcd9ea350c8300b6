//! SPF over the area (RFC 2328 §16.1) and each router's intra-area routes from its tree —
//! derived afresh, or again only where a change of the LSDB reached them.
//!
//! The area's graph is numbered once per LSDB change ([`Area`]): vertices in [`Vertex`]
//! order, the edges that pass the two-way check, and every prefix with the vertices that
//! offer it. Each router's Dijkstra run is then cheap (a fabric's area has a few hundred
//! vertices); turning its tree into routes to every stub of the area (thousands per router on
//! a large fabric) is what costs. After a change most of those routes come out as they were:
//! a cut spine–leaf link changes every router's tree (each reaches the leaf over one spine
//! less) but only the routes to the prefixes behind the vertices whose distance or next hops
//! moved — a few dozen of a router's ~12,800 on a 16x256 fabric. So when the router's own LSA
//! is as before, only those prefixes (vertices are matched between the two areas by what they
//! are, since their numbers shift when a network LSA comes or goes), new vertices' prefixes, and
//! the prefixes whose offers changed are derived again ([`again`]): the partial recomputation
//! RFC 2328 §16.5 describes for summary LSAs, applied to stub networks.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::table::Inputs;
use super::{mk_route, Link, Lsdb, Reached};
use crate::engine::state::{NextHop, Proto, Route};
use crate::model::IfId;

/// SPF vertices. Networks order before routers so that, among candidates at equal distance,
/// transit networks are added to the tree first (RFC 2328 §16.1 step 3): a router behind two
/// equal-cost networks then collects the next hops of both (network→router edges cost 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Vertex {
    Network(Ipv4Addr),
    Router(Ipv4Addr),
}

/// A vertex's number in its [`Area`].
type V = u32;

/// An edge of the area's graph that passed the two-way check.
#[derive(Clone, Debug, PartialEq)]
struct Edge {
    to: V,
    cost: u32,
    /// Out of a router: the next hop this edge is when it leaves the SPF root. Out of a
    /// network: the far router's address on it, the next hop when the root sits on it.
    hop: Option<NextHop>,
    addr: Option<Ipv4Addr>,
}

/// What SPF needs of a router's own LSA when it is the root.
#[derive(Clone, Debug, Default, PartialEq)]
struct Own {
    /// The networks it is attached to, with its interface on each (the first link to name it).
    transit: Vec<(V, IfId)>,
    /// Its stub prefixes (numbers into [`Area::prefixes`]): connected, never OSPF routes.
    stubs: Vec<u32>,
}

/// The area as every router's SPF sees it, made once per change of the router and network
/// LSAs. The same for every root: the two-way check scans the far end's LSA (a spine's lists
/// every leaf), so doing it in each router's run would repeat it hundreds of times.
#[derive(Clone, Debug, Default)]
pub(super) struct Area {
    /// In [`Vertex`] order, so that vertex numbers order as the vertices do.
    vertices: Vec<Vertex>,
    edges: Vec<Vec<Edge>>,
    /// Per vertex; a network's is empty.
    own: Vec<Own>,
    /// Every prefix a vertex offers (a router's stub link, a network's own subnet), in order.
    prefixes: Vec<Ipv4Net>,
    /// Per prefix: each offer's vertex and cost from that vertex.
    offers: Vec<Vec<(V, u32)>>,
    /// Per vertex: the prefixes it offers.
    offered: Vec<Vec<u32>>,
}

impl Area {
    pub(super) fn new(db: &Lsdb) -> Self {
        let networks = db.networks.keys().map(|n| Vertex::Network(*n));
        let vertices: Vec<Vertex> = networks.chain(db.routers.keys().map(|r| Vertex::Router(*r))).collect();
        let number = |v: Vertex| vertices.binary_search(&v).ok().map(|i| i as V);
        let mut offers: BTreeMap<Ipv4Net, Vec<(V, u32)>> = BTreeMap::new();
        let mut own = vec![Own::default(); vertices.len()];
        let mut edges = Vec::with_capacity(vertices.len());
        for (i, v) in vertices.iter().enumerate() {
            let mut out = Vec::new();
            match *v {
                Vertex::Network(dr) => {
                    let n = &db.networks[&dr];
                    offers.entry(n.net).or_default().push((i as V, 0));
                    for rid in &n.attached {
                        let Some(lsa) = db.routers.get(rid) else { continue };
                        let addr = lsa.links.iter().find_map(|l| match l {
                            Link::Transit { dr: d, my_addr, .. } if *d == dr => Some(*my_addr),
                            _ => None,
                        });
                        if let (Some(addr), Some(to)) = (addr, number(Vertex::Router(*rid))) {
                            out.push(Edge {
                                to,
                                cost: 0,
                                hop: None,
                                addr: Some(addr),
                            });
                        }
                    }
                }
                Vertex::Router(rid) => {
                    for l in &db.routers[&rid].links {
                        match l {
                            Link::Transit { dr, iface, cost, .. } => {
                                let Some(to) = number(Vertex::Network(*dr)) else {
                                    continue;
                                };
                                if !own[i].transit.iter().any(|(n, _)| *n == to) {
                                    own[i].transit.push((to, *iface));
                                }
                                if db.networks[dr].attached.contains(&rid) {
                                    out.push(Edge {
                                        to,
                                        cost: *cost,
                                        hop: Some(NextHop {
                                            via: None,
                                            iface: *iface,
                                        }),
                                        addr: None,
                                    });
                                }
                            }
                            Link::P2p { nbr, iface, cost, .. } => {
                                let back = db.routers.get(nbr).and_then(|n| {
                                    let mut theirs = n.links.iter().filter_map(|x| match x {
                                        Link::P2p { nbr: b, my_addr, .. } if *b == rid => Some(*my_addr),
                                        _ => None,
                                    });
                                    theirs.next()
                                });
                                if let (Some(via), Some(to)) = (back, number(Vertex::Router(*nbr))) {
                                    out.push(Edge {
                                        to,
                                        cost: *cost,
                                        hop: Some(NextHop {
                                            via: Some(via),
                                            iface: *iface,
                                        }),
                                        addr: None,
                                    });
                                }
                            }
                            Link::Stub { net, cost } => offers.entry(*net).or_default().push((i as V, *cost)),
                        }
                    }
                }
            }
            edges.push(out);
        }
        let prefixes: Vec<Ipv4Net> = offers.keys().copied().collect();
        let offers: Vec<Vec<(V, u32)>> = offers.into_values().collect();
        let mut offered = vec![Vec::new(); vertices.len()];
        for (p, list) in offers.iter().enumerate() {
            for &(v, _) in list {
                offered[v as usize].push(p as u32);
                // A router offers its stubs; a network, its own subnet.
                if let Vertex::Router(_) = vertices[v as usize] {
                    own[v as usize].stubs.push(p as u32);
                }
            }
        }
        for o in &mut own {
            o.stubs.dedup();
        }
        for list in &mut offered {
            list.dedup();
        }
        Area {
            vertices,
            edges,
            own,
            prefixes,
            offers,
            offered,
        }
    }

    fn router(&self, rid: Ipv4Addr) -> Option<V> {
        self.vertices.binary_search(&Vertex::Router(rid)).ok().map(|i| i as V)
    }

    /// What changed since `old`: which of its vertices each vertex is, and the prefixes whose
    /// offers differ (added, gone, or offered by other vertices or at other costs).
    pub(super) fn change_since(&self, old: &Area) -> Change {
        let old_of_new = self
            .vertices
            .iter()
            .map(|v| old.vertices.binary_search(v).ok().map(|i| i as V))
            .collect();
        let named = |area: &Area, p: usize| -> Vec<(Vertex, u32)> {
            let offers = area.offers[p].iter();
            offers.map(|&(v, cost)| (area.vertices[v as usize], cost)).collect()
        };
        let mut prefixes = Vec::new();
        let (mut a, mut b) = (0, 0);
        loop {
            match (old.prefixes.get(a), self.prefixes.get(b)) {
                (Some(x), Some(y)) if x == y => {
                    if named(old, a) != named(self, b) {
                        prefixes.push(*y);
                    }
                    a += 1;
                    b += 1;
                }
                (Some(x), y) if y.is_none_or(|y| x < y) => {
                    prefixes.push(*x);
                    a += 1;
                }
                (_, Some(y)) => {
                    prefixes.push(*y);
                    b += 1;
                }
                _ => break,
            }
        }
        Change { old_of_new, prefixes }
    }
}

/// How an area differs from the one before it ([`Area::change_since`]).
pub(super) struct Change {
    /// Each vertex's number in the old area (None: new).
    old_of_new: Vec<Option<V>>,
    /// The prefixes whose offers changed, in order.
    prefixes: Vec<Ipv4Net>,
}

/// One router's shortest-path tree: distance (`u32::MAX`: not reached) and next hops to every
/// vertex of the area it was made over. Most vertices inherit their parent's next hops, so
/// the sets are held once each and the vertices name theirs.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Tree {
    dist: Vec<u32>,
    /// Per vertex, its next-hop set (an index into `sets`).
    hops: Vec<u32>,
    /// Next-hop sets, each in order without repeats; the first is empty.
    sets: Vec<Vec<NextHop>>,
}

impl Tree {
    fn hops(&self, v: usize) -> &[NextHop] {
        &self.sets[self.hops[v] as usize]
    }
}

/// What a new tree changed in a router's intra-area routes.
#[derive(Clone, Debug)]
pub(super) enum Intra {
    /// All of them (prefix order).
    Whole(Vec<Route>),
    /// The routes of these prefixes (None: no route), in prefix order; the others are as they
    /// were. Some may be unchanged.
    Again(Vec<(Ipv4Net, Option<Route>)>),
}

/// What SPF makes of the router and network LSAs for one router: its tree, the routers it
/// reaches (the ASBRs among them), its intra-area routes. AS-externals are added by
/// [`super::table::Table`].
#[derive(Clone, Debug)]
pub(super) struct SpfTree {
    pub(super) tree: Tree,
    pub(super) routers: Reached,
    pub(super) intra: Intra,
}

/// A router's tree and all its intra-area routes.
pub(super) fn afresh(area: &Area, root: &Inputs) -> SpfTree {
    let tree = dijkstra(area, root.root);
    let intra = match area.router(root.root) {
        Some(r) => (0..area.prefixes.len() as u32)
            .filter_map(|p| intra_route(area, root, r, &tree, p))
            .collect(),
        None => Vec::new(),
    };
    SpfTree {
        routers: reached(area, &tree, root.root),
        tree,
        intra: Intra::Whole(intra),
    }
}

/// A router's tree after an LSDB change that kept the router's own LSA as it was when `old`
/// was made; `change` is the area's [`Area::change_since`] the area `old` was made over. Only
/// the prefixes offered by a vertex that is new or whose distance or next hops moved, and the
/// prefixes whose offers changed, are derived again.
pub(super) fn again(area: &Area, root: &Inputs, old: &Tree, change: &Change) -> SpfTree {
    let tree = dijkstra(area, root.root);
    let mut dirty: Vec<Ipv4Net> = change.prefixes.clone();
    for (v, was) in change.old_of_new.iter().enumerate() {
        let moved = match *was {
            Some(o) => old.dist[o as usize] != tree.dist[v] || old.hops(o as usize) != tree.hops(v),
            None => true,
        };
        if moved {
            dirty.extend(area.offered[v].iter().map(|&p| area.prefixes[p as usize]));
        }
    }
    dirty.sort_unstable();
    dirty.dedup();
    let r = area.router(root.root);
    let edits = dirty
        .into_iter()
        .map(|prefix| {
            let p = area.prefixes.binary_search(&prefix).ok();
            let route = r.zip(p).and_then(|(r, p)| intra_route(area, root, r, &tree, p as u32));
            (prefix, route)
        })
        .collect();
    SpfTree {
        routers: reached(area, &tree, root.root),
        tree,
        intra: Intra::Again(edits),
    }
}

/// Dijkstra from the router `rid` over the area. Candidates leave the queue by (distance,
/// vertex), so among equals networks come first ([`Vertex`]); equal-cost paths merge their
/// next hops.
fn dijkstra(area: &Area, rid: Ipv4Addr) -> Tree {
    let n = area.vertices.len();
    let mut tree = Tree {
        dist: vec![u32::MAX; n],
        hops: vec![0; n],
        sets: vec![Vec::new()],
    };
    let Some(root) = area.router(rid) else { return tree };
    let own = &area.own[root as usize];
    let mut done = vec![false; n];
    // The vertex each set was made for by merging: until that vertex leaves the queue no other
    // vertex holds the set, so further equal-cost paths merge into it in place.
    let mut merged_for: Vec<u32> = vec![u32::MAX];
    let mut queue = BinaryHeap::new();
    tree.dist[root as usize] = 0;
    queue.push(Reverse((0u32, root)));
    while let Some(Reverse((d, v))) = queue.pop() {
        if std::mem::replace(&mut done[v as usize], true) {
            continue;
        }
        // The root's own network: the next hop is the far router's address on it.
        let on_network = own.transit.iter().find(|(t, _)| *t == v).map(|(_, i)| *i);
        for edge in &area.edges[v as usize] {
            let w = edge.to as usize;
            if done[w] {
                continue;
            }
            let nd = d + edge.cost;
            if nd > tree.dist[w] {
                continue;
            }
            // Next hops: the root's own interface on the first hop out of it, the neighbour's
            // address on a network the root sits on, else the parent's.
            let own_hop = if v == root {
                Some(edge.hop.clone())
            } else {
                on_network.map(|iface| edge.addr.map(|via| NextHop { via: Some(via), iface }))
            };
            let set = match own_hop {
                Some(hop) => {
                    tree.sets.push(hop.into_iter().collect());
                    merged_for.push(u32::MAX);
                    (tree.sets.len() - 1) as u32
                }
                None => tree.hops[v as usize],
            };
            if nd < tree.dist[w] {
                tree.dist[w] = nd;
                tree.hops[w] = set;
                queue.push(Reverse((nd, edge.to)));
            } else if tree.hops[w] != set {
                let held = tree.hops[w] as usize;
                if merged_for[held] != w as u32 {
                    tree.sets.push(tree.sets[held].clone());
                    merged_for.push(w as u32);
                    tree.hops[w] = (tree.sets.len() - 1) as u32;
                }
                let (into, from) = (tree.hops[w] as usize, set as usize);
                let from = std::mem::take(&mut tree.sets[from]);
                merge(&mut tree.sets[into], &from);
                tree.sets[set as usize] = from;
            }
        }
    }
    tree
}

/// Add `from`'s next hops to `into`'s, keeping them in order without repeats.
fn merge(into: &mut Vec<NextHop>, from: &[NextHop]) {
    for h in from {
        if let Err(at) = into.binary_search(h) {
            into.insert(at, h.clone());
        }
    }
}

/// Distance and next hops to every router the tree reaches (the root itself at 0).
fn reached(area: &Area, tree: &Tree, rid: Ipv4Addr) -> Reached {
    let mut out: Reached = area
        .vertices
        .iter()
        .zip(tree.dist.iter().zip(&tree.hops))
        .filter_map(|(v, (d, set))| match v {
            Vertex::Router(r) if *d != u32::MAX => Some((*r, (*d, tree.sets[*set as usize].iter().cloned().collect()))),
            _ => None,
        })
        .collect();
    out.entry(rid).or_default();
    out
}

/// The root's route to prefix `p`: the cheapest offers of the vertices it reaches, their next
/// hops together. None for the root's own networks (connected routes; OSPF does not install
/// them) and for prefixes it reaches over no next hop.
fn intra_route(area: &Area, root: &Inputs, r: V, tree: &Tree, p: u32) -> Option<Route> {
    let own = &area.own[r as usize];
    if own.stubs.binary_search(&p).is_ok() {
        return None;
    }
    let mut best = u32::MAX;
    let mut winners: Vec<V> = Vec::new();
    for &(v, cost) in &area.offers[p as usize] {
        let d = tree.dist[v as usize];
        let attached = || own.transit.iter().any(|(t, _)| *t == v);
        if v == r || d == u32::MAX || attached() {
            continue;
        }
        let c = d + cost;
        if c < best {
            best = c;
            winners.clear();
        }
        if c == best {
            winners.push(v);
        }
    }
    let hops: Vec<NextHop> = match winners[..] {
        [] => return None,
        [one] => tree.hops(one as usize).to_vec(),
        _ => {
            let mut all = Vec::new();
            for v in winners {
                merge(&mut all, tree.hops(v as usize));
            }
            all
        }
    };
    (!hops.is_empty()).then(|| {
        mk_route(
            area.prefixes[p as usize],
            Proto::OspfIntra,
            root.distance,
            best,
            hops,
            root.max_paths,
        )
    })
}
