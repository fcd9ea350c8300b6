//! Route-maps and prefix-lists (FRR's `lib/routemap.c` `route_map_apply_ext`, `lib/plist.c`
//! `prefix_list_apply_ext`, bgpd `route_match_address_prefix_list`, at tag frr-8.4), applied to
//! one prefix. Entries run in sequence order: the first `permit` entry whose match clauses all
//! match applies its sets and permits, a matching `deny` entry denies, and a route no entry
//! matches is denied. A route-map that does not exist (or has no entries) denies every route
//! (bgpd `bgp_input_modifier`: `rmap == NULL` → `RMAP_DENY`). A prefix-list that does not exist
//! does not match (`RMAP_NOMATCH`); an empty one permits; otherwise its lowest-sequence matching
//! entry decides and no matching entry denies.

use ipnet::Ipv4Net;

use crate::engine::bgp_state::PathAttrs;
use crate::model::policy::{Action, PrefixListEntry, RouteMapEntry, RoutePolicies};

/// What a permitting route-map entry changes on the route.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sets {
    pub local_pref: Option<u32>,
    pub med: Option<u32>,
    pub prepend: Vec<u32>,
}

impl Sets {
    /// Apply to `attrs`; the prepended ASes go in front of the path, after the first `keep`
    /// entries (on eBGP export the speaker's own AS is put in front of them afterwards, as
    /// bgpd does when it encodes the UPDATE, so the caller passes 1 there).
    pub(crate) fn apply(&self, attrs: &mut PathAttrs, keep: usize) {
        if let Some(lp) = self.local_pref {
            attrs.local_pref = Some(lp);
        }
        if let Some(m) = self.med {
            attrs.med = Some(m);
        }
        let at = keep.min(attrs.as_path.len());
        attrs.as_path.splice(at..at, self.prepend.iter().copied());
    }
}

/// Runs route-map `name` on `prefix`: the sets of the permitting entry, or None when denied.
pub(crate) fn evaluate(policies: &RoutePolicies, name: &str, prefix: Ipv4Net) -> Option<Sets> {
    let entries = policies.route_maps.get(name).filter(|e| !e.is_empty())?;
    let hit = entries.iter().find(|e| matches(policies, e, prefix))?;
    match hit.action {
        Action::Deny => None,
        Action::Permit => Some(Sets {
            local_pref: hit.set_local_pref,
            med: hit.set_metric,
            prepend: hit.set_prepend.clone(),
        }),
    }
}

fn matches(policies: &RoutePolicies, entry: &RouteMapEntry, prefix: Ipv4Net) -> bool {
    match &entry.match_prefix_list {
        None => true,
        Some(list) => policies
            .prefix_lists
            .get(list)
            .is_some_and(|l| prefix_list_permits(l, prefix)),
    }
}

fn prefix_list_permits(list: &[PrefixListEntry], prefix: Ipv4Net) -> bool {
    if list.is_empty() {
        return true;
    }
    list.iter()
        .find(|e| entry_matches(e, prefix))
        .is_some_and(|e| e.action == Action::Permit)
}

/// `prefix_list_entry_match`: inside the entry's prefix; without `ge`/`le` the same length,
/// otherwise a length within them.
fn entry_matches(e: &PrefixListEntry, prefix: Ipv4Net) -> bool {
    let inside = e.prefix.prefix_len() <= prefix.prefix_len() && e.prefix.trunc().contains(&prefix.network());
    let len = prefix.prefix_len();
    inside
        && match (e.ge, e.le) {
            (None, None) => len == e.prefix.prefix_len(),
            (ge, le) => ge.is_none_or(|g| len >= g) && le.is_none_or(|l| len <= l),
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;

    fn pl(seq: u32, action: Action, p: &str, ge: Option<u8>, le: Option<u8>) -> PrefixListEntry {
        PrefixListEntry {
            seq,
            action,
            prefix: p.parse().unwrap(),
            ge,
            le,
            span: Span::default(),
        }
    }

    fn rm(seq: u32, action: Action, list: Option<&str>, prepend: &[u32]) -> RouteMapEntry {
        RouteMapEntry {
            seq,
            action,
            match_prefix_list: list.map(str::to_string),
            set_local_pref: None,
            set_metric: Some(seq),
            set_prepend: prepend.to_vec(),
            span: Span::default(),
        }
    }

    fn net(p: &str) -> Ipv4Net {
        p.parse().unwrap()
    }

    #[test]
    fn prefix_list_lengths_as_frr_matches_them() {
        let exact = [pl(5, Action::Permit, "10.0.0.0/8", None, None)];
        assert!(prefix_list_permits(&exact, net("10.0.0.0/8")));
        assert!(!prefix_list_permits(&exact, net("10.1.0.0/16")));
        let le = [pl(5, Action::Permit, "10.0.0.0/8", None, Some(24))];
        assert!(prefix_list_permits(&le, net("10.1.0.0/16")));
        assert!(!prefix_list_permits(&le, net("10.1.1.0/25")));
        assert!(!prefix_list_permits(&le, net("11.0.0.0/16")));
        let ge = [
            pl(5, Action::Deny, "10.9.0.0/16", Some(24), None),
            pl(10, Action::Permit, "0.0.0.0/0", None, Some(32)),
        ];
        assert!(!prefix_list_permits(&ge, net("10.9.1.0/24")));
        assert!(prefix_list_permits(&ge, net("10.9.0.0/16")));
        assert!(prefix_list_permits(&[], net("10.9.0.0/16")), "an empty list permits");
    }

    #[test]
    fn first_matching_entry_decides_and_nothing_matching_denies() {
        let mut p = RoutePolicies::default();
        p.prefix_lists.insert(
            "LOOPS".into(),
            vec![pl(5, Action::Permit, "10.0.0.0/8", Some(32), None)],
        );
        p.route_maps.insert(
            "OUT".into(),
            vec![
                rm(10, Action::Permit, Some("LOOPS"), &[65001, 65001]),
                rm(20, Action::Deny, None, &[]),
            ],
        );
        p.route_maps
            .insert("MISSING-LIST".into(), vec![rm(10, Action::Permit, Some("NOPE"), &[])]);
        let s = evaluate(&p, "OUT", net("10.0.0.1/32")).expect("permitted by 10");
        assert_eq!((s.med, s.prepend.clone()), (Some(10), vec![65001, 65001]));
        assert_eq!(evaluate(&p, "OUT", net("10.0.0.0/24")), None, "denied by 20");
        assert_eq!(evaluate(&p, "NOT-THERE", net("10.0.0.1/32")), None);
        assert_eq!(evaluate(&p, "MISSING-LIST", net("10.0.0.1/32")), None);
        let mut a = PathAttrs {
            as_path: vec![65100, 65200],
            origin: crate::engine::bgp_state::BgpOrigin::Igp,
            local_pref: None,
            med: None,
        };
        s.apply(&mut a, 1);
        assert_eq!(a.as_path, vec![65100, 65001, 65001, 65200]);
    }
}
