//! A session's Adj-RIBs as the engine keeps them. Adj-RIB-In is only its counters: the paths
//! received live once, in the speaker's table (its entries from a session are exactly what
//! that session last said, after loop drops), so a per-prefix copy — or even a per-prefix
//! count, a B-tree slot per (session, prefix) — would hold nothing the table does not.
//! Adj-RIB-Out is what the session advertised per prefix, which the next UPDATE is the
//! difference from; almost every slot holds one path, so a slot keeps one inline instead of a
//! `Vec`'s separate allocation (in an eBGP fabric there is a slot per (session, prefix)).

use ipnet::Ipv4Net;
use rustc_hash::FxHashMap;

use crate::engine::bgp_state::Advertised;

/// The paths advertised for one prefix, by path id. Almost always one,
/// held inline: every (session, prefix) an UPDATE burst carries holds its own, and as a `Vec`
/// each was an allocation of its own (of four paths' room, from the vector it was built in) —
/// half an eBGP fabric's peak heap while its first bursts were in flight.
pub(crate) type Paths = smallvec::SmallVec<[Advertised; 1]>;

/// Adj-RIB-In's counters (EOS PfxRcd/PfxAcc, BIRD "imported"): paths received and kept, and
/// how many of them import policy accepted, over all prefixes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AdjIn {
    pub received: u32,
    pub accepted: u32,
}

impl AdjIn {
    /// One prefix's paths from this session went from `old` to `new` (received, accepted).
    pub(crate) fn replace(&mut self, old: (u32, u32), new: (u32, u32)) {
        self.received = self.received - old.0 + new.0;
        self.accepted = self.accepted - old.1 + new.1;
    }
}

#[derive(Clone, Debug)]
enum Slot {
    One(Advertised),
    /// ADD-PATH: several paths (never fewer than two). Behind a thin pointer, so that a slot
    /// is the 16 bytes of one path (the tag in the niche of its attributes' pointer): boxed
    /// as a slice it was 24, and an eBGP fabric holds a slot per (session, prefix).
    Many(Box<Box<[Advertised]>>),
}

// The size the `Many` variant's thin pointer keeps a slot at.
const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    fn as_slice(&self) -> &[Advertised] {
        match self {
            Slot::One(p) => std::slice::from_ref(p),
            Slot::Many(v) => v,
        }
    }
}

/// Adj-RIB-Out: per prefix, what the session advertises; the path count kept (BIRD
/// "exported"). Hashed, not ordered: every advertisement of an eBGP fabric sets a slot here,
/// and as a B-tree the inserts were a twentieth of its run; the one caller that lists the
/// prefixes sorts them.
#[derive(Clone, Debug, Default)]
pub(crate) struct AdjOut {
    slots: FxHashMap<Ipv4Net, Slot>,
    paths: u32,
}

impl AdjOut {
    /// What was advertised for `prefix` (empty: nothing).
    pub(crate) fn get(&self, prefix: &Ipv4Net) -> &[Advertised] {
        self.slots.get(prefix).map_or(&[], Slot::as_slice)
    }

    /// The prefixes something is advertised for, in no particular order.
    pub(crate) fn prefixes(&self) -> impl Iterator<Item = &Ipv4Net> {
        self.slots.keys()
    }

    /// `prefix` is now advertised with `paths` (none: withdrawn).
    pub(crate) fn set(&mut self, prefix: Ipv4Net, mut paths: Paths) {
        let new = paths.len();
        let old = match new {
            0 => self.slots.remove(&prefix),
            1 => paths.pop().and_then(|p| self.slots.insert(prefix, Slot::One(p))),
            _ => self
                .slots
                .insert(prefix, Slot::Many(Box::new(paths.into_boxed_slice()))),
        };
        let old = old.map_or(0, |s| s.as_slice().len());
        self.paths = self.paths - old as u32 + new as u32;
    }

    /// Room for `n` more prefixes: the first export of a session sets every prefix it
    /// advertises (grown one insert at a time, the rehashes were a hundredth of an eBGP
    /// fabric's run).
    pub(crate) fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.paths = 0;
    }

    /// Paths advertised, all prefixes.
    pub(crate) fn paths(&self) -> u32 {
        self.paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use crate::engine::bgp_state::{BgpOrigin, PathAttrs};

    fn path(id: u32) -> Advertised {
        let a = PathAttrs {
            as_path: vec![id],
            origin: BgpOrigin::Igp,
            local_pref: None,
            med: None,
        };
        Advertised {
            id,
            next_hop: std::net::Ipv4Addr::new(10, 0, 0, 1),
            attrs: Arc::new(a),
        }
    }

    #[test]
    fn slots_hold_what_was_set_and_the_count_follows() {
        let mut out = AdjOut::default();
        let (p, q): (Ipv4Net, Ipv4Net) = ("10.0.0.0/24".parse().unwrap(), "10.0.1.0/24".parse().unwrap());
        out.set(p, smallvec::smallvec![path(1)]);
        out.set(q, smallvec::smallvec![path(1), path(2)]);
        assert_eq!(out.paths(), 3);
        assert_eq!(out.get(&q).iter().map(|x| x.id).collect::<Vec<_>>(), [1, 2]);
        out.set(q, smallvec::smallvec![path(3)]);
        assert_eq!((out.paths(), out.get(&q)[0].id), (2, 3));
        out.set(p, Paths::new());
        assert_eq!((out.paths(), out.get(&p).len()), (1, 0));
        assert_eq!(out.prefixes().collect::<Vec<_>>(), [&q]);
        out.clear();
        assert_eq!(out.paths(), 0);
    }
}
