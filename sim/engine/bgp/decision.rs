//! Best-path selection: one ordered table of tie-breakers per flavour (bgp-profiles.md §1),
//! and a comparison that says which step decided. Arrival order enters only where the
//! flavour's own rule uses it: BIRD keeps the incumbent on a full tie, FRR keeps the selected
//! path between two eBGP paths (step 12) and otherwise lets the oldest of fully tied paths win,
//! EOS keeps the first-received path at the head of an ECMP group (`ecmp-fast`).

use std::cmp::Ordering;
use std::net::Ipv4Addr;

use crate::engine::bgp_state::{BgpOrigin, PathAttrs, DEFAULT_LOCAL_PREF};
use crate::model::BgpFlavor;

/// A tie-breaker: the step of the decision process that separated two paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Next hop resolvable (BIRD keeps unresolvable routes but ranks them last).
    Reachable,
    /// BIRD protocol preference (direct 240, static 200, BGP 100, kernel 10).
    Preference,
    Weight,
    LocalPref,
    LocallyOriginated,
    AsPathLength,
    Origin,
    Med,
    EbgpOverIbgp,
    IgpMetric,
    /// FRR step 12: between two eBGP paths the one already selected stays.
    AlreadySelected,
    RouterId,
    PeerAddress,
    /// Fully tied: the older path (or, on BIRD, the incumbent) stays.
    Arrival,
}

impl Step {
    /// The words an engineer would use for why a path won.
    pub fn describe(self) -> &'static str {
        match self {
            Step::Reachable => "next hop reachable",
            Step::Preference => "protocol preference",
            Step::Weight => "weight",
            Step::LocalPref => "local preference",
            Step::LocallyOriginated => "locally originated",
            Step::AsPathLength => "shorter AS path",
            Step::Origin => "origin",
            Step::Med => "lower MED",
            Step::EbgpOverIbgp => "eBGP over iBGP",
            Step::IgpMetric => "lower IGP metric to next hop",
            Step::AlreadySelected => "already selected (older eBGP path)",
            Step::RouterId => "lower router ID",
            Step::PeerAddress => "lower peer address",
            Step::Arrival => "older path",
        }
    }
}

/// What the decision process needs to know about one candidate.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    pub attrs: Option<&'a PathAttrs>,
    /// BIRD protocol preference; BGP routes 100.
    pub preference: u32,
    /// EOS/FRR weight: 0 for received paths; FRR gives local routes 32768.
    pub weight: u32,
    pub local: bool,
    pub ebgp: bool,
    pub reachable: bool,
    /// IGP cost to the next hop (0 when directly connected or unknown).
    pub igp_metric: u32,
    /// The peer's BGP identifier (0.0.0.0 for local routes).
    pub router_id: Ipv4Addr,
    pub peer_addr: Ipv4Addr,
    /// The AS of the neighbour the path came from (for MED comparability of empty paths).
    pub peer_as: u32,
    /// Logical arrival clock: lower is older.
    pub arrival: u64,
    /// Currently the best path for its prefix.
    pub selected: bool,
}

fn path_len(c: &Candidate) -> usize {
    c.attrs.map_or(0, |a| a.as_path.len())
}

fn origin_rank(c: &Candidate) -> u8 {
    match c.attrs.map(|a| a.origin) {
        Some(BgpOrigin::Igp) | None => 0,
        Some(BgpOrigin::Egp) => 1,
        Some(BgpOrigin::Incomplete) => 2,
    }
}

fn local_pref(c: &Candidate) -> u32 {
    c.attrs.and_then(|a| a.local_pref).unwrap_or(DEFAULT_LOCAL_PREF)
}

/// The AS MED comparisons are scoped to: the first AS of the path, or the peer's for an empty one.
fn neighbor_as(c: &Candidate) -> u32 {
    c.attrs.and_then(|a| a.as_path.first().copied()).unwrap_or(c.peer_as)
}

fn med(c: &Candidate) -> u32 {
    c.attrs.and_then(|a| a.med).unwrap_or(0)
}

/// One tie-breaker: `Less` when `a` is better.
type Rule = fn(&Candidate, &Candidate) -> Ordering;

fn by_reachable(a: &Candidate, b: &Candidate) -> Ordering {
    b.reachable.cmp(&a.reachable)
}
fn by_preference(a: &Candidate, b: &Candidate) -> Ordering {
    b.preference.cmp(&a.preference)
}
fn by_weight(a: &Candidate, b: &Candidate) -> Ordering {
    b.weight.cmp(&a.weight)
}
fn by_local_pref(a: &Candidate, b: &Candidate) -> Ordering {
    local_pref(b).cmp(&local_pref(a))
}
fn by_local(a: &Candidate, b: &Candidate) -> Ordering {
    b.local.cmp(&a.local)
}
fn by_as_path(a: &Candidate, b: &Candidate) -> Ordering {
    path_len(a).cmp(&path_len(b))
}
fn by_origin(a: &Candidate, b: &Candidate) -> Ordering {
    origin_rank(a).cmp(&origin_rank(b))
}
fn by_med(a: &Candidate, b: &Candidate) -> Ordering {
    if neighbor_as(a) == neighbor_as(b) {
        med(a).cmp(&med(b))
    } else {
        Ordering::Equal
    }
}
fn by_ebgp(a: &Candidate, b: &Candidate) -> Ordering {
    b.ebgp.cmp(&a.ebgp)
}
fn by_igp(a: &Candidate, b: &Candidate) -> Ordering {
    a.igp_metric.cmp(&b.igp_metric)
}
fn by_selected_ebgp(a: &Candidate, b: &Candidate) -> Ordering {
    if a.ebgp && b.ebgp {
        b.selected.cmp(&a.selected)
    } else {
        Ordering::Equal
    }
}
fn by_router_id(a: &Candidate, b: &Candidate) -> Ordering {
    a.router_id.cmp(&b.router_id)
}
fn by_peer_addr(a: &Candidate, b: &Candidate) -> Ordering {
    a.peer_addr.cmp(&b.peer_addr)
}

/// The decision process of each flavour, in order (bgp-profiles.md §1.1–1.3).
fn rules(flavor: BgpFlavor) -> &'static [(Step, Rule)] {
    match flavor {
        // §1.1; steps 11–13 decide when `maximum-paths` is 1 (ECMP heads are handled by the
        // caller, which keeps the first-received path of a group: `ecmp-fast`).
        BgpFlavor::Eos => &[
            (Step::Reachable, by_reachable),
            (Step::Weight, by_weight),
            (Step::LocalPref, by_local_pref),
            (Step::LocallyOriginated, by_local),
            (Step::AsPathLength, by_as_path),
            (Step::Origin, by_origin),
            (Step::Med, by_med),
            (Step::EbgpOverIbgp, by_ebgp),
            (Step::IgpMetric, by_igp),
            (Step::RouterId, by_router_id),
            (Step::PeerAddress, by_peer_addr),
        ],
        // §1.2 (`rte_better`, `bgp_rte_better`): preference first, no weight, no local step.
        BgpFlavor::Bird => &[
            (Step::Preference, by_preference),
            (Step::Reachable, by_reachable),
            (Step::LocalPref, by_local_pref),
            (Step::AsPathLength, by_as_path),
            (Step::Origin, by_origin),
            (Step::Med, by_med),
            (Step::EbgpOverIbgp, by_ebgp),
            (Step::IgpMetric, by_igp),
            (Step::RouterId, by_router_id),
            (Step::PeerAddress, by_peer_addr),
        ],
        // §1.3 (`bgp_path_info_cmp`).
        BgpFlavor::Frr => &[
            (Step::Reachable, by_reachable),
            (Step::Weight, by_weight),
            (Step::LocalPref, by_local_pref),
            (Step::LocallyOriginated, by_local),
            (Step::AsPathLength, by_as_path),
            (Step::Origin, by_origin),
            (Step::Med, by_med),
            (Step::EbgpOverIbgp, by_ebgp),
            (Step::IgpMetric, by_igp),
            (Step::AlreadySelected, by_selected_ebgp),
            (Step::RouterId, by_router_id),
            (Step::PeerAddress, by_peer_addr),
        ],
    }
}

/// Compare two candidates: `Less` if `a` is better, and the step that decided. A full tie
/// is broken by arrival: on BIRD the incumbent (selected) path stays, elsewhere the older.
pub fn compare(flavor: BgpFlavor, a: &Candidate, b: &Candidate) -> (Ordering, Step) {
    for (step, rule) in rules(flavor) {
        let o = rule(a, b);
        if o != Ordering::Equal {
            return (o, *step);
        }
    }
    let by_age = if flavor == BgpFlavor::Bird {
        b.selected.cmp(&a.selected).then(a.arrival.cmp(&b.arrival))
    } else {
        a.arrival.cmp(&b.arrival)
    };
    (by_age, Step::Arrival)
}

/// May `b` share forwarding with the best path `a` (ECMP)? EOS: equal through the IGP metric,
/// eBGP and iBGP not mixed, AS paths of equal length (multipath-relax) or identical. BIRD's
/// `bgp_rte_mergable` is the same shape with the AS-path length rule.
pub fn multipath_equal(flavor: BgpFlavor, relax: bool, a: &Candidate, b: &Candidate) -> bool {
    let upto_igp = rules(flavor).iter().take_while(|(s, _)| *s <= Step::IgpMetric);
    for (_, rule) in upto_igp {
        if rule(a, b) != Ordering::Equal {
            return false;
        }
    }
    if a.ebgp != b.ebgp || !b.reachable {
        return false;
    }
    relax || a.attrs.map(|x| &x.as_path) == b.attrs.map(|x| &x.as_path)
}

/// Index of the best candidate and the step that put it ahead of the runner-up.
pub fn select(flavor: BgpFlavor, cands: &[Candidate]) -> Option<(usize, Option<Step>)> {
    let mut best = 0;
    for i in 1..cands.len() {
        if compare(flavor, &cands[i], &cands[best]).0 == Ordering::Less {
            best = i;
        }
    }
    if cands.is_empty() {
        return None;
    }
    let decided = (0..cands.len())
        .filter(|i| *i != best)
        .map(|i| compare(flavor, &cands[best], &cands[i]).1)
        .max();
    Some((best, decided))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(path: &[u32], origin: BgpOrigin, lp: Option<u32>, med: Option<u32>) -> PathAttrs {
        PathAttrs {
            as_path: path.to_vec(),
            origin,
            local_pref: lp,
            med,
        }
    }

    fn cand(a: &PathAttrs) -> Candidate<'_> {
        Candidate {
            attrs: Some(a),
            preference: 100,
            weight: 0,
            local: false,
            ebgp: true,
            reachable: true,
            igp_metric: 0,
            router_id: Ipv4Addr::new(10, 0, 0, 9),
            peer_addr: Ipv4Addr::new(10, 9, 0, 9),
            peer_as: 65001,
            arrival: 5,
            selected: false,
        }
    }

    const ALL: [BgpFlavor; 3] = [BgpFlavor::Eos, BgpFlavor::Bird, BgpFlavor::Frr];

    /// `b` is made better than `a` in one respect; every flavour in `flavors` must say so at `step`.
    fn decides(flavors: &[BgpFlavor], step: Step, tweak: impl Fn(&mut Candidate)) {
        let base = attrs(&[65001, 65002], BgpOrigin::Igp, None, None);
        let a = cand(&base);
        let mut b = cand(&base);
        tweak(&mut b);
        for f in flavors {
            assert_eq!(compare(*f, &b, &a), (Ordering::Less, step), "{f:?} {step:?}");
            assert_eq!(compare(*f, &a, &b), (Ordering::Greater, step), "{f:?} {step:?}");
        }
    }

    #[test]
    fn reachable_next_hop() {
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let mut a = cand(&base);
        a.reachable = false;
        let b = cand(&base);
        for f in [BgpFlavor::Eos, BgpFlavor::Frr] {
            assert_eq!(compare(f, &b, &a), (Ordering::Less, Step::Reachable));
        }
        // BIRD compares preference first, then reachability.
        assert_eq!(compare(BgpFlavor::Bird, &b, &a), (Ordering::Less, Step::Reachable));
    }

    #[test]
    fn bird_preference_beats_everything() {
        decides(&[BgpFlavor::Bird], Step::Preference, |b| b.preference = 200);
    }

    #[test]
    fn weight_on_eos_and_frr_not_bird() {
        decides(&[BgpFlavor::Eos, BgpFlavor::Frr], Step::Weight, |b| b.weight = 32768);
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let a = cand(&base);
        let mut b = cand(&base);
        b.weight = 32768;
        assert_ne!(compare(BgpFlavor::Bird, &b, &a).1, Step::Weight);
    }

    #[test]
    fn local_pref() {
        let base = attrs(&[65001, 65002], BgpOrigin::Igp, Some(100), None);
        let better = attrs(&[65001, 65002], BgpOrigin::Igp, Some(200), None);
        let a = cand(&base);
        let b = cand(&better);
        for f in ALL {
            assert_eq!(compare(f, &b, &a), (Ordering::Less, Step::LocalPref), "{f:?}");
        }
    }

    #[test]
    fn locally_originated_on_eos_and_frr() {
        decides(&[BgpFlavor::Eos, BgpFlavor::Frr], Step::LocallyOriginated, |b| {
            b.local = true
        });
    }

    #[test]
    fn shorter_as_path() {
        let long = attrs(&[65000, 65001, 65003], BgpOrigin::Igp, None, None);
        let short = attrs(&[65000, 65003], BgpOrigin::Igp, None, None);
        for f in ALL {
            assert_eq!(
                compare(f, &cand(&short), &cand(&long)),
                (Ordering::Less, Step::AsPathLength),
                "{f:?}"
            );
        }
    }

    #[test]
    fn origin_igp_before_incomplete() {
        let inc = attrs(&[65001], BgpOrigin::Incomplete, None, None);
        let igp = attrs(&[65001], BgpOrigin::Igp, None, None);
        for f in ALL {
            assert_eq!(
                compare(f, &cand(&igp), &cand(&inc)),
                (Ordering::Less, Step::Origin),
                "{f:?}"
            );
        }
    }

    #[test]
    fn med_only_between_paths_from_the_same_as() {
        let high = attrs(&[65001], BgpOrigin::Igp, None, Some(50));
        let low = attrs(&[65001], BgpOrigin::Igp, None, Some(10));
        let other_as = attrs(&[65002], BgpOrigin::Igp, None, Some(10));
        for f in ALL {
            assert_eq!(
                compare(f, &cand(&low), &cand(&high)),
                (Ordering::Less, Step::Med),
                "{f:?}"
            );
            assert_ne!(compare(f, &cand(&other_as), &cand(&high)).1, Step::Med, "{f:?}");
        }
    }

    #[test]
    fn ebgp_over_ibgp() {
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let mut a = cand(&base);
        a.ebgp = false;
        let b = cand(&base);
        for f in ALL {
            assert_eq!(compare(f, &b, &a), (Ordering::Less, Step::EbgpOverIbgp), "{f:?}");
        }
    }

    #[test]
    fn igp_metric() {
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let mut a = cand(&base);
        a.igp_metric = 20;
        let b = cand(&base);
        for f in ALL {
            assert_eq!(compare(f, &b, &a), (Ordering::Less, Step::IgpMetric), "{f:?}");
        }
    }

    #[test]
    fn frr_keeps_the_selected_ebgp_path() {
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let mut old = cand(&base);
        old.selected = true;
        old.router_id = Ipv4Addr::new(10, 0, 0, 200);
        let new = cand(&base);
        assert_eq!(
            compare(BgpFlavor::Frr, &old, &new),
            (Ordering::Less, Step::AlreadySelected)
        );
        // EOS and BIRD go on to the router ID.
        assert_eq!(compare(BgpFlavor::Eos, &new, &old), (Ordering::Less, Step::RouterId));
        assert_eq!(compare(BgpFlavor::Bird, &new, &old), (Ordering::Less, Step::RouterId));
    }

    #[test]
    fn router_id_then_peer_address() {
        decides(&ALL, Step::RouterId, |b| b.router_id = Ipv4Addr::new(10, 0, 0, 1));
        decides(&ALL, Step::PeerAddress, |b| b.peer_addr = Ipv4Addr::new(10, 0, 0, 1));
    }

    #[test]
    fn full_tie_bird_incumbent_others_oldest() {
        let base = attrs(&[65001], BgpOrigin::Igp, None, None);
        let mut incumbent = cand(&base);
        incumbent.selected = true;
        incumbent.arrival = 9;
        let mut older = cand(&base);
        older.arrival = 1;
        assert_eq!(
            compare(BgpFlavor::Bird, &incumbent, &older),
            (Ordering::Less, Step::Arrival)
        );
        assert_eq!(
            compare(BgpFlavor::Eos, &older, &incumbent),
            (Ordering::Less, Step::Arrival)
        );
    }

    #[test]
    fn select_reports_the_deciding_step() {
        let short = attrs(&[65000], BgpOrigin::Igp, None, None);
        let long = attrs(&[65000, 65001], BgpOrigin::Igp, None, None);
        let cands = [cand(&long), cand(&short)];
        assert_eq!(select(BgpFlavor::Eos, &cands), Some((1, Some(Step::AsPathLength))));
    }

    #[test]
    fn multipath_needs_equal_length_and_same_kind() {
        let a1 = attrs(&[65001, 65003], BgpOrigin::Igp, None, None);
        let a2 = attrs(&[65002, 65003], BgpOrigin::Igp, None, None);
        let (x, y) = (cand(&a1), cand(&a2));
        assert!(multipath_equal(BgpFlavor::Eos, true, &x, &y));
        assert!(!multipath_equal(BgpFlavor::Eos, false, &x, &y));
        let mut z = cand(&a2);
        z.ebgp = false;
        assert!(!multipath_equal(BgpFlavor::Eos, true, &x, &z));
    }
}
