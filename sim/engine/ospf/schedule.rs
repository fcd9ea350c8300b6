//! What an OSPF handler asks the engine to queue, numbered as the engine numbers its events.
//!
//! The engine orders events of one instant by a sequence number taken when each is queued.
//! A neighbour's dead-interval timer is re-armed by every hello; queuing a fresh timer per
//! hello (and dropping the stale ones as they fire) was most of the queue's traffic in a long
//! replay. Instead a hello only takes the number its timer would have had (`reserve`), and the
//! one pending timer, when it fires early, is queued again for the last hello's deadline under
//! that number (`at_seq`): every event fires at the same (time, number) as before, so events
//! of one instant keep their order.

use super::Event;

/// Events in the order a handler made them, each with its (time, sequence number).
pub(crate) struct Out {
    /// The last number taken.
    seq: u64,
    items: Vec<(u64, u64, Event)>,
}

impl Out {
    /// Numbering continues after `last_seq`, the engine's last; `items` is an empty buffer
    /// to fill (the engine hands the same one back and forth, one allocation for the run).
    pub(crate) fn new(last_seq: u64, items: Vec<(u64, u64, Event)>) -> Self {
        debug_assert!(items.is_empty());
        Out { seq: last_seq, items }
    }

    /// Queue `ev` at `at` with the next number.
    pub(crate) fn push(&mut self, (at, ev): (u64, Event)) {
        let seq = self.reserve();
        self.items.push((at, seq, ev));
    }

    /// Take the next number without queuing anything: it is queued later with `at_seq`.
    pub(crate) fn reserve(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Queue `ev` at `at` with a number taken earlier by `reserve`.
    pub(crate) fn at_seq(&mut self, at: u64, seq: u64, ev: Event) {
        self.items.push((at, seq, ev));
    }

    /// The last number taken, and the events to queue.
    pub(crate) fn finish(self) -> (u64, Vec<(u64, u64, Event)>) {
        (self.seq, self.items)
    }
}
