//! The attribute table: every distinct set of path attributes the BGP engine holds, stored once
//! and shared (`Arc`) by every table entry, Adj-RIB-Out slot and UPDATE that carries it, as
//! BIRD (`rta_lookup`, nest/rt-attr.c) and holo intern theirs. In a leaf-spine fabric a spine
//! sends the same AS path with the same next hop for every prefix behind one leaf, so without
//! sharing every (session, prefix) held its own copy — most of the eBGP underlay's memory.

use std::sync::Arc;

use fnv::FnvHashSet;

use crate::engine::bgp_state::PathAttrs;

/// Sets no longer held anywhere else are dropped when the table has doubled since the last
/// sweep (never below this size), so sweeping stays amortised O(1) per lookup.
const MIN_SWEEP: usize = 1024;

/// Only lookups by value use the hash set; nothing iterates it into output, so its order
/// cannot reach a result. FNV, not SipHash: the sets are small and no adversary picks them,
/// and hashing was a few percent of an eBGP fabric's run.
#[derive(Clone, Debug, Default)]
pub(crate) struct AttrTable {
    set: FnvHashSet<Arc<PathAttrs>>,
    sweep_at: usize,
}

impl AttrTable {
    /// The shared copy of `attrs`.
    pub(crate) fn intern(&mut self, attrs: PathAttrs) -> Arc<PathAttrs> {
        match self.set.get(&attrs) {
            Some(a) => a.clone(),
            None => self.insert(Arc::new(attrs)),
        }
    }

    /// The shared copy of an already allocated set (the one given, if it is new).
    pub(crate) fn share(&mut self, attrs: Arc<PathAttrs>) -> Arc<PathAttrs> {
        match self.set.get(&*attrs) {
            Some(a) => a.clone(),
            None => self.insert(attrs),
        }
    }

    fn insert(&mut self, a: Arc<PathAttrs>) -> Arc<PathAttrs> {
        if self.set.len() >= self.sweep_at.max(MIN_SWEEP) {
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.sweep_at = 2 * self.set.len();
        }
        self.set.insert(a.clone());
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bgp_state::BgpOrigin;

    fn attrs(asn: u32) -> PathAttrs {
        PathAttrs {
            as_path: vec![asn],
            next_hop: None,
            origin: BgpOrigin::Igp,
            local_pref: None,
            med: None,
        }
    }

    #[test]
    fn equal_sets_are_one_allocation() {
        let mut t = AttrTable::default();
        let a = t.intern(attrs(1));
        let b = t.intern(attrs(1));
        let c = t.share(Arc::new(attrs(1)));
        assert!(Arc::ptr_eq(&a, &b) && Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&a, &t.intern(attrs(2))));
    }

    #[test]
    fn sets_nobody_holds_are_swept() {
        let mut t = AttrTable::default();
        let kept = t.intern(attrs(0));
        for asn in 1..=(MIN_SWEEP as u32 + 10) {
            t.intern(attrs(asn));
        }
        // The sweep at MIN_SWEEP entries kept only what was still held elsewhere.
        assert!(t.set.len() < 20);
        assert!(Arc::ptr_eq(&kept, &t.intern(attrs(0))));
    }
}
