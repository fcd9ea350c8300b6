//! The attribute table: every distinct set of path attributes the BGP engine holds, stored once
//! and shared (`Arc`) by every table entry, Adj-RIB-Out slot and UPDATE that carries it, as
//! BIRD (`rta_lookup`, nest/rt-attr.c) and holo intern theirs. In a leaf-spine fabric a spine
//! sends the same AS path for every prefix behind one leaf, so without sharing every (session,
//! prefix) held its own copy — most of the eBGP underlay's memory. The NEXT_HOP is not in a set
//! (`PathAttrs`): a leaf sends each of its nodes its own address, and with it the sets were
//! one per (prefix, node) again.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;

use crate::engine::bgp_state::PathAttrs;

/// Sets no longer held anywhere else are dropped when the table has doubled since the last
/// sweep (never below this size), so sweeping stays amortised O(1) per lookup.
const MIN_SWEEP: usize = 1024;

/// Only lookups by value use the hash map; nothing iterates it into output, so its order
/// cannot reach a result. FNV, not SipHash: no adversary picks the sets, and hashing was a
/// few percent of an eBGP fabric's run. The sets are filed under their hash, computed once:
/// a hash set of the sets hashed each again whenever it grew, reading every set back from
/// wherever it lay — a cache miss per set, 6% of `converge/ebgp-4x32x16`'s time.
#[derive(Clone, Debug, Default)]
pub(crate) struct AttrTable {
    sets: FxHashMap<u64, SmallVec<[Arc<PathAttrs>; 1]>>,
    len: usize,
    sweep_at: usize,
}

fn hash_of(attrs: &PathAttrs) -> u64 {
    let mut h = FxHasher::default();
    attrs.hash(&mut h);
    h.finish()
}

impl AttrTable {
    /// The shared copy of `attrs`.
    pub(crate) fn intern(&mut self, attrs: PathAttrs) -> Arc<PathAttrs> {
        let hash = hash_of(&attrs);
        match self.get(hash, &attrs) {
            Some(a) => a,
            None => self.insert(hash, Arc::new(attrs)),
        }
    }

    /// The shared copy of an already allocated set (the one given, if it is new).
    pub(crate) fn share(&mut self, attrs: Arc<PathAttrs>) -> Arc<PathAttrs> {
        let hash = hash_of(&attrs);
        match self.get(hash, &attrs) {
            Some(a) => a,
            None => self.insert(hash, attrs),
        }
    }

    fn get(&self, hash: u64, attrs: &PathAttrs) -> Option<Arc<PathAttrs>> {
        self.sets.get(&hash)?.iter().find(|a| ***a == *attrs).cloned()
    }

    fn insert(&mut self, hash: u64, a: Arc<PathAttrs>) -> Arc<PathAttrs> {
        if self.len >= self.sweep_at.max(MIN_SWEEP) {
            self.sets.retain(|_, same_hash| {
                same_hash.retain(|a| Arc::strong_count(a) > 1);
                !same_hash.is_empty()
            });
            self.len = self.sets.values().map(SmallVec::len).sum();
            self.sweep_at = 2 * self.len;
        }
        self.sets.entry(hash).or_default().push(a.clone());
        self.len += 1;
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

    /// Sets filed under one hash stay apart: a lookup finds the equal one.
    #[test]
    fn sets_under_one_hash_are_told_apart() {
        let mut t = AttrTable::default();
        let (a, b) = (t.insert(7, Arc::new(attrs(1))), t.insert(7, Arc::new(attrs(2))));
        assert!(Arc::ptr_eq(&t.get(7, &attrs(1)).unwrap(), &a));
        assert!(Arc::ptr_eq(&t.get(7, &attrs(2)).unwrap(), &b));
        assert!(t.get(7, &attrs(3)).is_none() && t.get(8, &attrs(1)).is_none());
    }

    #[test]
    fn sets_nobody_holds_are_swept() {
        let mut t = AttrTable::default();
        let kept = t.intern(attrs(0));
        for asn in 1..=(MIN_SWEEP as u32 + 10) {
            t.intern(attrs(asn));
        }
        // The sweep at MIN_SWEEP entries kept only what was still held elsewhere.
        assert!(t.len < 20);
        assert!(Arc::ptr_eq(&kept, &t.intern(attrs(0))));
    }
}
