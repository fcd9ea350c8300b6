//! Each device's forwarding table kept from one recompute to the next and made again only
//! where its candidate routes changed.
//!
//! Building every table from all its candidates on every recompute is what a large fabric's
//! re-convergence spent most on after SPF: a cut spine–leaf cable moves a few dozen of each
//! router's ~12,800 OSPF routes on a 16x256 fabric, and every route of 272 routers was copied
//! into a new table. A table's rules ([`rib::Rules`]) decide prefix by prefix, so giving them
//! one prefix's candidates, in the order a full build gives them, yields that prefix's entries
//! as the full build would. A device whose connected/static routes, rules and OSPF presence
//! are as before therefore gets only the prefixes OSPF says moved ([`ospf::Routes::moved`])
//! made again. BGP's routes go over the table without BGP (its next hops resolve through
//! that), so the entries each BGP route replaced are kept and put back before the next
//! recompute.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

use super::ospf;
use super::rib::{self, Rules};
use super::state::{Fib, Proto, Route};
use crate::model::Device;

/// The entries of one prefix, with their keys.
type Entries = Vec<((Ipv4Net, u32), Route)>;

/// What a device's table was made of by the last recompute.
#[derive(Clone, Debug, Default)]
pub(super) struct Made {
    /// None: to be made whole next time (not made yet, or mostly BGP's).
    rules: Option<Rules>,
    local: Vec<Route>,
    ospf: bool,
    /// For each prefix BGP's routes went over, the entries it had before them.
    under_bgp: Vec<(Ipv4Net, Entries)>,
    /// The table holds BGP's routes of the last recompute, to stay while the rest of it does:
    /// a Linux table mostly BGP's (a node of an eBGP fabric learns every prefix from its
    /// leaf), where they take only keys no other route holds. The next recompute then
    /// changes only the routes of the prefixes its speaker decided again (`add_bgp`), where
    /// making the table again whole and installing every BGP route over it was a tenth of
    /// such a fabric's convergence.
    bgp_in_place: bool,
}

/// What a speaker's decision hands to forwarding (`Bgp::decide`).
pub(crate) struct BgpRoutes {
    pub(crate) routes: Vec<Route>,
    /// Some: the decision was made again only for these prefixes (ascending; some may have
    /// left the table), and `routes` holds only theirs; the table's BGP routes of the others
    /// stand. None: `routes` is every route.
    pub(crate) only: Option<Vec<Ipv4Net>>,
}

/// A device's table as the recompute found it: what BGP's export compares the new one with
/// (EOS advertises only routes that are active), and how the engine tells that anything moved.
pub(crate) enum Before {
    /// The whole table (it was made again from all its candidates).
    Whole(Fib),
    /// The routes of each prefix the recompute touched, as they were; the others are as they
    /// were too.
    Touched(BTreeMap<Ipv4Net, Vec<Route>>),
    /// A Linux table whose BGP routes stayed in place (`Made::bgp_in_place`) and whether BGP's
    /// changes moved any; the rest is as it was.
    InPlace { changed: bool },
}

impl Before {
    pub(super) fn differs(&self, now: &Fib) -> bool {
        match self {
            Before::Whole(old) => old != now,
            Before::Touched(touched) => touched.iter().any(|(p, old)| !now.with_prefix(*p).eq(old)),
            Before::InPlace { changed } => *changed,
        }
    }

    /// The prefixes whose forwarding entry is a BGP route in only one of the two tables.
    pub(crate) fn bgp_activity_changed(&self, now: &Fib) -> Vec<Ipv4Net> {
        let bgp = |r: Option<&Route>| r.is_some_and(|r| matches!(r.proto, Proto::BgpExternal | Proto::BgpInternal));
        match self {
            Before::Whole(old) => activity_changed(old, now),
            Before::Touched(touched) => touched
                .iter()
                .filter(|(p, old)| bgp(old.first()) != bgp(now.with_prefix(**p).next()))
                .map(|(p, _)| *p)
                .collect(),
            // Only Linux tables keep BGP's routes in place, and only EOS asks.
            Before::InPlace { .. } => Vec::new(),
        }
    }
}

/// The prefixes whose first route in the forwarding table went from BGP to not or back (EOS
/// advertises a received best path only while it is active): one walk over both tables.
fn activity_changed(old: &Fib, new: &Fib) -> Vec<Ipv4Net> {
    let firsts = |fib: &Fib| {
        let mut last = None;
        fib.iter()
            .filter(|r| last.replace(r.prefix) != Some(r.prefix))
            .map(|r| (r.prefix, matches!(r.proto, Proto::BgpExternal | Proto::BgpInternal)))
            .collect::<Vec<(Ipv4Net, bool)>>()
    };
    let (a, b) = (firsts(old), firsts(new));
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                if x.1 != y.1 {
                    out.push(x.0);
                }
                i += 1;
                j += 1;
            }
            (Some(x), y) if y.is_none_or(|y| x.0 < y.0) => {
                if x.1 {
                    out.push(x.0);
                }
                i += 1;
            }
            (_, Some(y)) => {
                if y.1 {
                    out.push(y.0);
                }
                j += 1;
            }
            (_, None) => break,
        }
    }
    out
}

impl Made {
    /// Make `fib` — the table as the last recompute left it — the table of `local` (connected,
    /// static, DHCP) and `ospf`, without BGP; return what it was.
    /// `speaker`: the device runs a BGP speaker, which will decide over the table (its BGP
    /// routes in place stay only then).
    pub(super) fn remake(
        &mut self,
        dev: &Device,
        fib: &mut Fib,
        local: Vec<Route>,
        ospf: Option<&ospf::Routes>,
        speaker: bool,
    ) -> Before {
        let rules = rib::rules(dev);
        let kept = self.rules == Some(rules) && self.ospf == ospf.is_some() && self.local == local;
        let moved = match ospf {
            Some(o) => o.moved.as_deref(),
            None => Some(&[][..]),
        };
        if self.bgp_in_place && speaker && kept && moved == Some(&[]) {
            #[cfg(test)]
            {
                let mut base = fib.clone();
                let bgp: Vec<Ipv4Net> = base.iter().filter(|r| r.proto.is_bgp()).map(|r| r.prefix).collect();
                base.replace_bgp(&bgp, Vec::new());
                let mut all = local.clone();
                all.extend(ospf.into_iter().flat_map(|o| o.all.iter().cloned()));
                assert_eq!(
                    base,
                    rib::install(dev, all),
                    "{}: the table under BGP's routes moved",
                    dev.name
                );
            }
            return Before::InPlace { changed: false };
        }
        // BGP's routes in place go with the table, made again whole.
        let Some(moved) = moved.filter(|_| kept && !self.bgp_in_place) else {
            let mut candidates = local.clone();
            candidates.extend(ospf.into_iter().flat_map(|o| o.all.iter().cloned()));
            *self = Made {
                rules: Some(rules),
                local,
                ospf: ospf.is_some(),
                under_bgp: Vec::new(),
                bgp_in_place: false,
            };
            return Before::Whole(std::mem::replace(fib, rib::install(dev, candidates)));
        };
        let mut touched = BTreeMap::new();
        let mut take = |fib: &mut Fib, p: Ipv4Net| {
            let was = fib.take_prefix(p);
            touched
                .entry(p)
                .or_insert_with(|| was.into_iter().map(|(_, r)| r).collect());
        };
        for (p, entries) in self.under_bgp.drain(..) {
            take(fib, p);
            for (key, r) in entries {
                fib.insert_at(key, r);
            }
        }
        let mut candidates = Vec::new();
        for &p in moved {
            take(fib, p);
            candidates.extend(local.iter().filter(|r| r.prefix == p).cloned());
            candidates.extend(ospf.and_then(|o| o.get(p)).cloned());
        }
        rib::add(dev, fib, candidates);
        #[cfg(test)]
        {
            let mut all = local.clone();
            all.extend(ospf.into_iter().flat_map(|o| o.all.iter().cloned()));
            assert_eq!(
                *fib,
                rib::install(dev, all),
                "{}: a table made again in part differs from one made whole",
                dev.name
            );
        }
        Before::Touched(touched)
    }

    /// Whether the table holds BGP's routes of the last recompute (its speaker then decides
    /// only what changed and hands over only those routes: `BgpRoutes::only`).
    pub(super) fn bgp_in_place(&self) -> bool {
        self.bgp_in_place
    }

    /// Install BGP's routes over the device's table. With BGP's routes of the last recompute
    /// in place, those of the prefixes decided again (every prefix, for a decision made
    /// whole) are replaced. Otherwise the table is without BGP, and BGP's routes go over it,
    /// keeping what they replace; when they outnumber the rest on a Linux table, they stay in
    /// place instead, and elsewhere the next recompute makes the table again whole.
    pub(super) fn add_bgp(&mut self, dev: &Device, fib: &mut Fib, bgp: BgpRoutes, before: &mut Before) {
        let BgpRoutes { routes, only } = bgp;
        // In place, `remake` left the table as it was (`InPlace`); one made whole holds no BGP
        // routes.
        if let (true, Before::InPlace { changed }) = (self.bgp_in_place, &mut *before) {
            // Every prefix whose route may have changed, in the order of `routes` (the
            // speaker's table order, which is `Ipv4Net`'s).
            let decided: Vec<Ipv4Net> = match only {
                Some(only) => only,
                None => {
                    let mut all: Vec<Ipv4Net> = fib.iter().filter(|r| r.proto.is_bgp()).map(|r| r.prefix).collect();
                    all.extend(routes.iter().map(|r| r.prefix));
                    all.sort_unstable();
                    all.dedup();
                    all
                }
            };
            *changed |= fib.replace_bgp(&decided, routes);
            return;
        }
        // Not in place: the decision was asked for every route (`only` is None).
        let mut prefixes: Vec<Ipv4Net> = routes.iter().map(|r| r.prefix).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        // Kept for the next recompute only while the table is not mostly BGP's; snapshotted
        // for this one only when it touched prefixes rather than made the table whole.
        let keep = prefixes.len() <= fib.len();
        if !keep {
            self.under_bgp.clear();
            if rib::rules(dev) == Rules::Kernel {
                self.bgp_in_place = true;
            } else {
                self.rules = None;
            }
        }
        // (`InPlace` comes only with BGP's routes in place, taken above.)
        let mut touched = match before {
            Before::Touched(t) => Some(t),
            Before::Whole(_) | Before::InPlace { .. } => None,
        };
        if keep || touched.is_some() {
            for p in prefixes {
                let entries: Entries = fib.keyed_at(p).map(|(k, r)| (k, r.clone())).collect();
                if let Some(t) = touched.as_deref_mut() {
                    t.entry(p)
                        .or_insert_with(|| entries.iter().map(|(_, r)| r.clone()).collect());
                }
                if keep {
                    self.under_bgp.push((p, entries));
                }
            }
        }
        rib::add(dev, fib, routes);
    }
}
