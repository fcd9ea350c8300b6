//! A session's Adj-RIBs as the engine keeps them. Adj-RIB-In is only its counters: the paths
//! received live once, in the speaker's table (its entries from a session are exactly what
//! that session last said, after loop drops), so a per-prefix copy — or even a per-prefix
//! count, a B-tree slot per (session, prefix) — would hold nothing the table does not.
//! Adj-RIB-Out is what the session advertised per prefix, which the next UPDATE is the
//! difference from; almost every slot holds one path, so a slot keeps one inline instead of a
//! `Vec`'s separate allocation. Sessions that advertise the same paths but for the next hop,
//! each its own address, share one Adj-RIB-Out, as FRR's update groups do (bgpd keeps
//! `bgp_adj_out` per update subgroup and rewrites the next hop per peer,
//! `bpacket_reformat_for_peer`): a member keeps only where it differs, the prefixes whose
//! paths came from it. In an eBGP fabric that is a slot per (group, prefix) where it was one
//! per (session, prefix) — a leaf's spine sessions, a leaf's node sessions, a spine's leaf
//! sessions each hold the same advertisements.

use std::net::Ipv4Addr;

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
    /// ADD-PATH's several paths; none: a group member that advertises nothing where its
    /// group does. Behind a thin pointer, so that a slot is the 16 bytes of one path (the
    /// tag in the niche of its attributes' pointer): boxed as a slice it was 24, and an eBGP
    /// fabric holds a slot per (group, prefix).
    Many(Box<Box<[Advertised]>>),
}

// The size the `Many` variant's thin pointer keeps a slot at.
const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    fn of(paths: Paths) -> Slot {
        match paths.into_inner() {
            Ok([one]) => Slot::One(one),
            Err(paths) => Slot::Many(Box::new(paths.into_boxed_slice())),
        }
    }

    fn as_slice(&self) -> &[Advertised] {
        match self {
            Slot::One(p) => std::slice::from_ref(p),
            Slot::Many(v) => v,
        }
    }
}

/// Adj-RIB-Out: per prefix, what the session (or update group) advertises; the path count
/// kept (BIRD "exported"). Hashed, not ordered: every advertisement of an eBGP fabric sets a
/// slot here, and as a B-tree the inserts were a twentieth of its run; the callers that list
/// the prefixes sort them.
///
/// A session in an update group (`group`) keeps here only the prefixes where it differs from
/// the group's Adj-RIB-Out (`export::OutGroup`); elsewhere it advertises the group's paths
/// with its own address as next hop (`own_next_hop`). `paths` is what it advertises, all the
/// same.
#[derive(Clone, Debug)]
pub(crate) struct AdjOut {
    slots: FxHashMap<Ipv4Net, Slot>,
    paths: u32,
    /// The update group (an index into its device's groups), when in one.
    pub group: Option<usize>,
    /// The next hop a group member advertises: its address at its last export.
    pub own_next_hop: Ipv4Addr,
}

impl Default for AdjOut {
    fn default() -> Self {
        AdjOut {
            slots: FxHashMap::default(),
            paths: 0,
            group: None,
            own_next_hop: Ipv4Addr::UNSPECIFIED,
        }
    }
}

impl AdjOut {
    /// What was advertised for `prefix` (empty: nothing). In an update group: where the
    /// session differs from the group (`exception`), else nothing.
    pub(crate) fn get(&self, prefix: &Ipv4Net) -> &[Advertised] {
        self.exception(prefix).unwrap_or_default()
    }

    /// A group member's own paths for `prefix`, where they differ from the group's (an empty
    /// slice: it advertises nothing there); None: the group's.
    pub(crate) fn exception(&self, prefix: &Ipv4Net) -> Option<&[Advertised]> {
        self.slots.get(prefix).map(Slot::as_slice)
    }

    /// A group member advertises `paths` for `prefix`, `old` before: where the group holds
    /// the same (`same_as_group`) nothing is kept, else they are kept as its own.
    pub(crate) fn set_member(&mut self, prefix: Ipv4Net, paths: Paths, old: usize, same_as_group: bool) {
        self.paths = self.paths - old as u32 + paths.len() as u32;
        if same_as_group {
            self.slots.remove(&prefix);
        } else {
            self.slots.insert(prefix, Slot::of(paths));
        }
    }

    /// Leave the update group: what the session advertises, per prefix, is `advertised`
    /// (every prefix where it advertises something).
    pub(crate) fn leave_group(&mut self, advertised: Vec<(Ipv4Net, Paths)>) {
        self.slots.clear();
        self.group = None;
        for (prefix, paths) in advertised {
            if !paths.is_empty() {
                self.slots.insert(prefix, Slot::of(paths));
            }
        }
    }

    /// Join update group `group` as a session whose every advertisement was just set: from
    /// here on only the prefixes where it differs from the group are kept.
    pub(crate) fn join_group(&mut self, group: usize, own_next_hop: Ipv4Addr) {
        self.slots.clear();
        self.paths = 0;
        self.group = Some(group);
        self.own_next_hop = own_next_hop;
    }

    /// The prefixes something is advertised for, in no particular order.
    pub(crate) fn prefixes(&self) -> impl Iterator<Item = &Ipv4Net> {
        self.slots.keys()
    }

    /// `prefix` is now advertised with `paths` (none: withdrawn).
    pub(crate) fn set(&mut self, prefix: Ipv4Net, paths: Paths) {
        let new = paths.len();
        let old = match new {
            0 => self.slots.remove(&prefix),
            _ => self.slots.insert(prefix, Slot::of(paths)),
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

    /// Nothing advertised (the session went down), and out of its update group.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.paths = 0;
        self.group = None;
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
            next_hop: Ipv4Addr::new(10, 0, 0, 1),
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
