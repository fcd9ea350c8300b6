//! A map by prefix, in prefix order, that copies little when it is shared. A speaker's table is
//! shared with the snapshot every view takes when a run hands the State out (`TableSnapshot`),
//! so its next change copies it; as one B-tree that copy was every prefix's slot (a tenth of an
//! eBGP fabric's peak heap). Here the prefixes sit in chunks of consecutive prefixes, each
//! shared (`Arc`) on its own: a change copies the chunk index and the one chunk it touches.
//!
//! A chunk holds at most `MAX_CHUNK` prefixes, and is split in two when an insertion would pass
//! that. Chunks of a fixed address range (one /24 each) held a single prefix for each of a
//! fabric's pod blocks, which Calico spreads over its pool: 512 chunks, each two allocations,
//! for the 512 blocks of every node's table, and most of the inserts' time.

use std::sync::Arc;

use ipnet::Ipv4Net;

pub(crate) use crate::engine::state::NetOrd;

/// Most prefixes in one chunk: a change after a snapshot copies this many slots at most, and
/// a search is a binary search over them.
const MAX_CHUNK: usize = 64;

/// Chunks, in order, each under a key no greater than any of its prefixes and greater than
/// every prefix of the chunk before; the first under the least key of all, so every prefix
/// has a chunk at or below it (`chunk_of`). A sorted vector, binary-searched: a table has a
/// few dozen chunks, and a `BTreeMap` range search for the last key at or below a prefix
/// descended the tree twice.
#[derive(Clone, Debug)]
pub(crate) struct PrefixMap<V> {
    chunks: Vec<(NetOrd, Arc<Chunk<V>>)>,
}

/// 0.0.0.0/0: no prefix orders before it.
const LEAST: NetOrd = NetOrd(Ipv4Net::new_assert(std::net::Ipv4Addr::UNSPECIFIED, 0));

impl<V> Default for PrefixMap<V> {
    fn default() -> Self {
        PrefixMap { chunks: Vec::new() }
    }
}

/// One chunk's prefixes, sorted: a binary search over adjacent slots, where a B-tree per chunk
/// spent a node search and an insertion's shifting per level.
type Chunk<V> = Vec<(NetOrd, V)>;

/// A prefix's place in a map: its chunk, and its index there (`Err`: where it would go).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Place {
    chunk: usize,
    at: Result<usize, usize>,
}

fn find<V>(c: &Chunk<V>, prefix: &Ipv4Net) -> Result<usize, usize> {
    c.binary_search_by(|(k, _)| k.cmp(&NetOrd(*prefix)))
}

impl<V: Clone> PrefixMap<V> {
    /// The index of the chunk `prefix` belongs in (None: the map is empty).
    fn chunk_of(&self, prefix: &Ipv4Net) -> Option<usize> {
        self.chunks
            .partition_point(|(k, _)| *k <= NetOrd(*prefix))
            .checked_sub(1)
    }

    pub(crate) fn get(&self, prefix: &Ipv4Net) -> Option<&V> {
        let c = &self.chunks[self.chunk_of(prefix)?].1;
        find(c, prefix).ok().map(|i| &c[i].1)
    }

    /// In prefix order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Ipv4Net, &V)> {
        self.iter_placed().map(|(_, k, v)| (k, v))
    }

    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Ipv4Net> {
        self.iter().map(|(k, _)| k)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    /// Where `prefix` is or would go (None: the map is empty), for a change that follows a
    /// read without searching again (`insert_at`): valid until the map changes.
    pub(crate) fn place(&self, prefix: &Ipv4Net) -> Option<Place> {
        let chunk = self.chunk_of(prefix)?;
        Some(Place {
            chunk,
            at: find(&self.chunks[chunk].1, prefix),
        })
    }

    /// The value at `place`.
    pub(crate) fn get_at(&self, place: Place) -> Option<&V> {
        let i = place.at.ok()?;
        Some(&self.chunks[place.chunk].1[i].1)
    }

    #[cfg(test)]
    fn insert(&mut self, prefix: Ipv4Net, value: V) {
        let place = self.place(&prefix);
        self.insert_at(place, prefix, value);
    }

    /// `insert` at `place`, `prefix`'s place in the map as it is.
    pub(crate) fn insert_at(&mut self, place: Option<Place>, prefix: Ipv4Net, value: V) {
        let (at, found) = match place {
            Some(p) => (p.chunk, p.at),
            None => {
                self.chunks.push((LEAST, Arc::default()));
                (0, Err(0))
            }
        };
        let slot = &mut self.chunks[at].1;
        // A shared chunk is copied with room for one more: `make_mut`'s copy is exactly full,
        // and a new prefix then copied it a second time to grow it.
        if Arc::get_mut(slot).is_none() {
            let mut copy = Vec::with_capacity(slot.len() + 1);
            copy.extend_from_slice(slot);
            *slot = Arc::new(copy);
        }
        let c = Arc::make_mut(slot);
        match found {
            Ok(i) => c[i].1 = value,
            Err(i) => {
                c.insert(i, (NetOrd(prefix), value));
                if c.len() > MAX_CHUNK {
                    // Both halves exactly full: the lower one keeps the room it doubled to
                    // otherwise, four times what it holds.
                    let upper = c.split_off(c.len() / 2);
                    c.shrink_to_fit();
                    self.chunks.insert(at + 1, (upper[0].0, Arc::new(upper)));
                }
            }
        }
    }

    pub(crate) fn remove(&mut self, prefix: &Ipv4Net) {
        let Some(at) = self.chunk_of(prefix) else { return };
        let c = &mut self.chunks[at].1;
        let Ok(i) = find(c, prefix) else { return };
        Arc::make_mut(c).remove(i);
        if c.is_empty() {
            self.chunks.remove(at);
            // The first chunk stays under the least key.
            if let Some(first) = self.chunks.first_mut() {
                first.0 = LEAST;
            }
        }
    }

    /// The value to change (its chunk copied if shared).
    #[cfg(test)]
    fn get_mut(&mut self, prefix: &Ipv4Net) -> Option<&mut V> {
        let place = self.place(prefix)?;
        self.get_mut_at(place)
    }

    /// The value at `place` to change (its chunk copied if shared).
    pub(crate) fn get_mut_at(&mut self, place: Place) -> Option<&mut V> {
        let i = place.at.ok()?;
        let c = &mut self.chunks.get_mut(place.chunk)?.1;
        Some(&mut Arc::make_mut(c).get_mut(i)?.1)
    }

    /// `iter`, each prefix with its place.
    pub(crate) fn iter_placed(&self) -> impl Iterator<Item = (Place, &Ipv4Net, &V)> {
        self.chunks.iter().enumerate().flat_map(|(chunk, (_, c))| {
            c.iter()
                .enumerate()
                .map(move |(i, (k, v))| (Place { chunk, at: Ok(i) }, &k.0, v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn prefix_order_and_shared_chunks_copied_on_change() {
        let mut m = PrefixMap::default();
        for (k, v) in [
            ("10.0.1.0/31", 1),
            ("10.0.0.0/24", 2),
            ("10.0.0.0/31", 3),
            ("9.0.0.0/8", 4),
        ] {
            m.insert(p(k), v);
        }
        let keys: Vec<String> = m.keys().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["9.0.0.0/8", "10.0.0.0/24", "10.0.0.0/31", "10.0.1.0/31"]);
        let snapshot = m.clone();
        *m.get_mut(&p("10.0.0.0/31")).unwrap() = 30;
        m.remove(&p("10.0.1.0/31"));
        m.remove(&p("10.0.1.0/31"));
        assert_eq!(
            (m.get(&p("10.0.0.0/31")), snapshot.get(&p("10.0.0.0/31"))),
            (Some(&30), Some(&3))
        );
        assert!(m.get(&p("10.0.1.0/31")).is_none() && snapshot.get(&p("10.0.1.0/31")).is_some());
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [4, 2, 30]);
    }

    /// Many prefixes in any order: chunks split, stay in order and bounded, an untouched one
    /// stays shared with a snapshot; emptied chunks go, and the first stays under the least key.
    #[test]
    fn chunks_split_stay_ordered_and_bounded() {
        let mut m = PrefixMap::default();
        let mut all: Vec<Ipv4Net> = (0..1000u32)
            .map(|i| Ipv4Net::new((i.wrapping_mul(2_654_435_761) & 0xffff_ffc0).into(), 26).unwrap())
            .collect();
        for (i, prefix) in all.iter().enumerate() {
            m.insert(*prefix, i);
        }
        all.sort_by_key(|p| NetOrd(*p));
        all.dedup();
        assert!(m.keys().copied().eq(all.iter().copied()));
        assert!(m.chunks.iter().all(|(_, c)| !c.is_empty() && c.len() <= MAX_CHUNK));
        assert_eq!(m.chunks[0].0, LEAST);
        for (k, c) in m.chunks.iter().skip(1) {
            assert_eq!(*k, c[0].0);
        }
        let snapshot = m.clone();
        let last = *all.last().unwrap();
        *m.get_mut(&last).unwrap() = usize::MAX;
        let shared = m
            .chunks
            .iter()
            .zip(&snapshot.chunks)
            .filter(|(a, b)| Arc::ptr_eq(&a.1, &b.1));
        assert_eq!(shared.count(), m.chunks.len() - 1);
        for prefix in &all[..all.len() - 1] {
            m.remove(prefix);
        }
        assert_eq!(m.keys().collect::<Vec<_>>(), [&last]);
        assert_eq!((m.chunks.len(), m.chunks[0].0), (1, LEAST));
        assert_eq!(snapshot.keys().count(), all.len());
    }
}
