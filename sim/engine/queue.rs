//! The engine's pending events, earliest first: ordered by virtual time, then by the sequence
//! number each took when it was queued (unique, so the order is total and never looks at the
//! event itself).
//!
//! The heap holds only the keys and a slot number; the events wait in a slab beside it. A
//! replay is mostly timers (the seed lab's: 260 k events, nine in ten OSPF hellos and dead
//! intervals), and sifting a small key is what each costs instead of moving the event through
//! every level of the heap. A burst of UPDATEs is handled one prefix per step while the rest
//! keeps its place: split in its slot (`pop_split`), its key not moved at all.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Time and sequence number as one integer (time in the high half), so that ordering two is one
/// comparison; `slot` is where the event waits and never decides (the numbers are unique). The
/// order is written out rather than derived from a `(u128, usize)` tuple: the tuple's compare
/// cost the seed-lab replay 4.6% more instructions (520.7 M against 497.6 M).
#[derive(Clone, Copy, Debug)]
struct Key {
    at_seq: u128,
    slot: usize,
}

impl Key {
    fn at(&self) -> u64 {
        (self.at_seq >> 64) as u64
    }

    fn seq(&self) -> u64 {
        self.at_seq as u64
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.at_seq == other.at_seq
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at_seq.cmp(&other.at_seq)
    }
}

#[derive(Clone, Debug)]
pub(crate) struct EventQueue<E> {
    keys: BinaryHeap<Reverse<Key>>,
    events: Vec<Option<E>>,
    /// Slots of `events` that are free.
    free: Vec<usize>,
    /// The top key's event was taken whole (`pop_split`) and the key left in place: most
    /// handlers queue an event at once (a hello its successor), which then takes the key's
    /// place with one sift down instead of a pop and a push; `settle` removes it otherwise.
    stale_top: bool,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            keys: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            stale_top: false,
        }
    }
}

impl<E> EventQueue<E> {
    pub(crate) fn push(&mut self, at: u64, seq: u64, ev: E) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.events[slot] = Some(ev);
                slot
            }
            None => {
                self.events.push(Some(ev));
                self.events.len() - 1
            }
        };
        let key = Reverse(Key {
            at_seq: (u128::from(at) << 64) | u128::from(seq),
            slot,
        });
        if std::mem::take(&mut self.stale_top) {
            if let Some(mut top) = self.keys.peek_mut() {
                *top = key;
                return;
            }
        }
        self.keys.push(key);
    }

    /// Drop the key of the event taken last, if nothing took its place.
    fn settle(&mut self) {
        if std::mem::take(&mut self.stale_top) {
            self.keys.pop();
        }
    }

    /// The earliest event and its time.
    pub(crate) fn peek(&mut self) -> Option<(u64, &E)> {
        self.settle();
        let Reverse(key) = self.keys.peek()?;
        self.events[key.slot].as_ref().map(|ev| (key.at(), ev))
    }

    /// The (time, number) of the earliest event.
    pub(crate) fn peek_key(&mut self) -> Option<(u64, u64)> {
        self.settle();
        self.keys.peek().map(|Reverse(key)| (key.at(), key.seq()))
    }

    /// Take out every event `pick` turns into a `T` (one it hands back stays), each with its
    /// time and number, in no particular order; the others keep theirs.
    pub(crate) fn take_map<T>(&mut self, mut pick: impl FnMut(E) -> Result<T, E>) -> Vec<(u64, u64, T)> {
        self.settle();
        let mut taken = Vec::new();
        let mut kept = std::mem::take(&mut self.keys).into_vec();
        kept.retain(|&Reverse(key)| {
            let slot = &mut self.events[key.slot];
            let Some(ev) = slot.take() else { return true };
            match pick(ev) {
                Ok(t) => {
                    self.free.push(key.slot);
                    taken.push((key.at(), key.seq(), t));
                    false
                }
                Err(ev) => {
                    *slot = Some(ev);
                    true
                }
            }
        });
        self.keys = BinaryHeap::from(kept);
        taken
    }

    /// The earliest event with its time and number. `split` may take part of it instead (a
    /// burst's first prefix): then the rest stays queued under the same time and number, as
    /// if it had been taken whole and queued again.
    pub(crate) fn pop_split(&mut self, split: impl FnOnce(&mut E) -> Option<E>) -> Option<(u64, u64, E)> {
        self.settle();
        let &Reverse(key) = self.keys.peek()?;
        let (at, seq, slot) = (key.at(), key.seq(), key.slot);
        let held = self.events[slot].as_mut()?;
        if let Some(part) = split(held) {
            return Some((at, seq, part));
        }
        self.stale_top = true;
        self.free.push(slot);
        self.events[slot].take().map(|ev| (at, seq, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;

    /// Time first, then number, whatever the order of queuing; a split leaves the rest first
    /// in line; freed slots are reused.
    #[test]
    fn earliest_first_and_split_in_place() {
        let mut q: EventQueue<Vec<&str>> = EventQueue::default();
        q.push(20, 1, vec!["late"]);
        q.push(10, 3, vec!["b1", "b2"]);
        q.push(10, 2, vec!["a"]);
        let take_one = |v: &mut Vec<&'static str>| (v.len() > 1).then(|| vec![v.remove(0)]);
        assert_eq!(q.peek(), Some((10, &vec!["a"])));
        assert_eq!(q.pop_split(take_one), Some((10, 2, vec!["a"])));
        assert_eq!(q.pop_split(take_one), Some((10, 3, vec!["b1"])));
        q.push(10, 4, vec!["c"]);
        assert_eq!(q.pop_split(take_one), Some((10, 3, vec!["b2"])));
        assert_eq!(q.pop_split(take_one), Some((10, 4, vec!["c"])));
        assert_eq!(q.pop_split(take_one), Some((20, 1, vec!["late"])));
        assert_eq!(q.pop_split(take_one), None);
        assert_eq!(q.events.len(), 3);
    }

    /// `take_map` hands over the chosen events under their keys, also right after a take
    /// left its key on top; the others keep their order, and the freed slots are used again.
    #[test]
    fn taken_events_keep_their_keys_and_the_rest_its_order() {
        let whole = |_: &mut &str| None;
        let mut q: EventQueue<&str> = EventQueue::default();
        for (at, seq, ev) in [
            (10, 1, "hello a"),
            (10, 2, "update"),
            (20, 3, "hello b"),
            (30, 4, "keepalive"),
        ] {
            q.push(at, seq, ev);
        }
        assert_eq!(q.pop_split(whole), Some((10, 1, "hello a")));
        let hello = |ev: &'static str| ev.strip_prefix("hello ").ok_or(ev);
        assert_eq!(q.take_map(hello), vec![(20, 3, "b")]);
        q.push(40, 5, "hello a");
        q.push(25, 6, "again");
        assert_eq!(q.events.len(), 4, "freed slots used again");
        let rest: Vec<_> = std::iter::from_fn(|| q.pop_split(whole)).collect();
        assert_eq!(
            rest,
            vec![
                (10, 2, "update"),
                (25, 6, "again"),
                (30, 4, "keepalive"),
                (40, 5, "hello a")
            ]
        );
    }

    /// An event queued after one was taken takes the taken one's key in place; the order is
    /// still by (time, number) whether it sorts first, last or between.
    #[test]
    fn a_push_after_a_take_replaces_its_key() {
        let whole = |_: &mut &str| None;
        let mut q: EventQueue<&str> = EventQueue::default();
        q.push(10, 1, "x");
        q.push(30, 2, "y");
        assert_eq!(q.pop_split(whole), Some((10, 1, "x")));
        q.push(40, 3, "after y");
        q.push(20, 4, "before y");
        assert_eq!(q.pop_split(whole), Some((20, 4, "before y")));
        q.push(5, 5, "first");
        assert_eq!(q.peek(), Some((5, &"first")));
        assert_eq!(q.pop_split(whole), Some((5, 5, "first")));
        assert_eq!(q.pop_split(whole), Some((30, 2, "y")));
        assert_eq!(q.pop_split(whole), Some((40, 3, "after y")));
        assert_eq!(q.peek(), None);
        assert_eq!(q.keys.len(), 0);
    }
}
