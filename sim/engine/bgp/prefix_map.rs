//! A map by prefix, in prefix order, that copies little when it is shared. A speaker's table is
//! shared with the snapshot every view takes after a recompute (`TableSnapshot`), so its next
//! change copies it; as one B-tree that copy was every prefix's slot (a tenth of an eBGP
//! fabric's peak heap). Here the prefixes sit in chunks of one /24 each (by their address's
//! first 24 bits), each chunk shared (`Arc`) on its own: a change copies the chunk index and
//! the one chunk it touches.

use std::collections::BTreeMap;
use std::sync::Arc;

use ipnet::Ipv4Net;

pub(crate) use crate::engine::state::NetOrd;

#[derive(Clone, Debug)]
pub(crate) struct PrefixMap<V> {
    chunks: BTreeMap<u32, Arc<Chunk<V>>>,
}

impl<V> Default for PrefixMap<V> {
    fn default() -> Self {
        PrefixMap {
            chunks: BTreeMap::new(),
        }
    }
}

/// Chunks follow prefix order: `Ipv4Net` orders by address first, and so do their first 24 bits.
fn chunk(prefix: &Ipv4Net) -> u32 {
    u32::from(prefix.addr()) >> 8
}

/// One chunk's prefixes, sorted: a binary search over adjacent slots, where a B-tree per chunk
/// spent a node search and an insertion's shifting per level (its inserts were 4% of an eBGP
/// fabric's run). A chunk holds at most the 511 prefixes of /24 and longer inside its /24,
/// and the 24 shorter ones whose address is the /24's first.
type Chunk<V> = Vec<(NetOrd, V)>;

fn find<V>(c: &Chunk<V>, prefix: &Ipv4Net) -> Result<usize, usize> {
    c.binary_search_by(|(k, _)| k.cmp(&NetOrd(*prefix)))
}

impl<V: Clone> PrefixMap<V> {
    pub(crate) fn get(&self, prefix: &Ipv4Net) -> Option<&V> {
        let c = self.chunks.get(&chunk(prefix))?;
        find(c, prefix).ok().map(|i| &c[i].1)
    }

    pub(crate) fn contains_key(&self, prefix: &Ipv4Net) -> bool {
        self.get(prefix).is_some()
    }

    /// In prefix order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Ipv4Net, &V)> {
        self.chunks.values().flat_map(|c| c.iter().map(|(k, v)| (&k.0, v)))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &Ipv4Net> {
        self.iter().map(|(k, _)| k)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }

    pub(crate) fn insert(&mut self, prefix: Ipv4Net, value: V) {
        let slot = self.chunks.entry(chunk(&prefix)).or_default();
        // A shared chunk is copied with room for one more: `make_mut`'s copy is exactly full,
        // and a new prefix then copied it a second time to grow it.
        if Arc::get_mut(slot).is_none() {
            let mut copy = Vec::with_capacity(slot.len() + 1);
            copy.extend_from_slice(slot);
            *slot = Arc::new(copy);
        }
        let c = Arc::make_mut(slot);
        match find(c, &prefix) {
            Ok(i) => c[i].1 = value,
            Err(i) => c.insert(i, (NetOrd(prefix), value)),
        }
    }

    pub(crate) fn remove(&mut self, prefix: &Ipv4Net) {
        let key = chunk(prefix);
        let Some(c) = self.chunks.get_mut(&key) else { return };
        let Ok(i) = find(c, prefix) else { return };
        Arc::make_mut(c).remove(i);
        if c.is_empty() {
            self.chunks.remove(&key);
        }
    }

    /// The value to change (its chunk copied if shared).
    pub(crate) fn get_mut(&mut self, prefix: &Ipv4Net) -> Option<&mut V> {
        let c = self.chunks.get_mut(&chunk(prefix))?;
        let i = find(c, prefix).ok()?;
        Some(&mut Arc::make_mut(c)[i].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_order_and_shared_chunks_copied_on_change() {
        let p = |s: &str| s.parse::<Ipv4Net>().unwrap();
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
        assert!(!m.contains_key(&p("10.0.1.0/31")) && snapshot.contains_key(&p("10.0.1.0/31")));
        // The untouched chunk is still shared.
        assert!(Arc::ptr_eq(
            &m.chunks[&chunk(&p("9.0.0.0/8"))],
            &snapshot.chunks[&chunk(&p("9.0.0.0/8"))]
        ));
        assert_eq!(m.values().copied().collect::<Vec<_>>(), [4, 2, 30]);
    }
}
