//! The run's random timing, deterministic for a seed (`fabsim run --seed`, `--seeds`): each
//! speaker's documented timer randomisation, and how long its UPDATEs take to reach the peer.
//! These are the only random draws in a run, so what converges differently between seeds does
//! so through timing alone (which session comes up first, which UPDATE arrives first), never
//! through a random choice of outcome.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::model::BgpFlavor;

/// An UPDATE's delay from the sender's decision to the receiver processing it, in ms,
/// inclusive: the sender's output queue, the wire and the receiver's input queue. No reference
/// measures it for any of the three speakers. The default is the fixed 10 ms fabsim used
/// before, a setting (`Engine::set_message_delays`; FIDELITY.md "BGP message delay").
pub const DEFAULT_MESSAGE_DELAY_MS: (u64, u64) = (10, 10);

/// Per-flavour message-delay ranges, in ms (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageDelays {
    pub eos: (u64, u64),
    pub bird: (u64, u64),
    pub frr: (u64, u64),
}

impl Default for MessageDelays {
    fn default() -> Self {
        MessageDelays {
            eos: DEFAULT_MESSAGE_DELAY_MS,
            bird: DEFAULT_MESSAGE_DELAY_MS,
            frr: DEFAULT_MESSAGE_DELAY_MS,
        }
    }
}

impl MessageDelays {
    fn of(&self, flavor: BgpFlavor) -> (u64, u64) {
        match flavor {
            BgpFlavor::Eos => self.eos,
            BgpFlavor::Bird => self.bird,
            BgpFlavor::Frr => self.frr,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Jitter {
    rng: ChaCha8Rng,
    delays: MessageDelays,
}

impl Jitter {
    pub(crate) fn new(seed: u64) -> Self {
        Jitter {
            rng: ChaCha8Rng::seed_from_u64(seed),
            delays: MessageDelays::default(),
        }
    }

    /// Start the draws again from `seed` (the message delays stay).
    pub(crate) fn reseed(&mut self, seed: u64) {
        self.rng = ChaCha8Rng::seed_from_u64(seed);
    }

    pub(crate) fn set_message_delays(&mut self, delays: MessageDelays) {
        self.delays = delays;
    }

    /// A uniform draw in `lo..=hi`.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        lo + self.rng.next_u64() % (hi - lo + 1)
    }

    /// When a session timer of `secs` seconds that `flavor` starts fires, in ms. BIRD 1.6
    /// starts its BGP timers with `bgp_start_timer` (proto/bgp/bgp.c): V whole seconds fire
    /// after `V - V/4 + random() % (V/4 + 1)` s (RFC 1771 §9.2.3.3 jitter; bgp-profiles.md §7),
    /// so Calico's connect retry 5 fires after 4 or 5 s and its connect delay 2 after 2 s.
    /// bgp-profiles.md documents no randomisation for EOS or FRR: their timers are exact.
    pub(crate) fn timer_ms(&mut self, flavor: BgpFlavor, secs: u64) -> u64 {
        let fired = match flavor {
            BgpFlavor::Bird if secs >= 4 => {
                let spread = secs / 4;
                self.between(secs - spread, secs)
            }
            _ => secs,
        };
        fired * 1000
    }

    /// Which of `n` events of one millisecond happened first (an index below `n`).
    pub(crate) fn pick(&mut self, n: usize) -> usize {
        self.between(0, n as u64 - 1) as usize
    }

    /// How long the UPDATEs `flavor` sends on one session at one instant take to arrive, ms.
    pub(crate) fn message_ms(&mut self, flavor: BgpFlavor) -> u64 {
        let (lo, hi) = self.delays.of(flavor);
        self.between(lo, hi)
    }
}
