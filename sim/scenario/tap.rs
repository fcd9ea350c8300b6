//! The run's own data-plane packets on tapped interfaces, for `run --pcap`: the ping each
//! `reach`/`unreachable` check sends, the ping of each `capture:` check, the pings and
//! traceroutes of runbook commands (a `run:` step's lines and `output:` checks, kept from the
//! very probes their printed output came from), and every probe of a watched ping
//! (`expect: during:`) with its reply, ICMP error or nothing. Each is rendered as
//! `fabsim ping --pcap` renders a ping (`Sent::frames`), at the virtual time it was sent and
//! through the network as it was then. Kept per tapped interface; with no taps nothing is
//! rendered (and a check's or watch's capture is not even built).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{IfId, Network};
use crate::views::tcpdump::{PingCapture, Sent};
use crate::wire::Frame;

#[derive(Clone, Debug, Default)]
pub struct Tap {
    taps: BTreeSet<IfId>,
    frames: BTreeMap<IfId, Vec<Frame>>,
}

impl Tap {
    pub fn new(taps: BTreeSet<IfId>) -> Self {
        Tap {
            taps,
            frames: BTreeMap::new(),
        }
    }

    /// The same taps with nothing kept yet: a step's watched pings fill one while time passes,
    /// then it is [`Tap::append`]ed to the run's.
    pub fn empty_like(&self) -> Tap {
        Tap::new(self.taps.clone())
    }

    /// Keep what a ping puts on the tapped interfaces; `ping` is only run when there are any.
    pub fn ping(&mut self, net: &Network, ping: impl FnOnce() -> PingCapture) {
        if !self.taps.is_empty() {
            self.keep(net, &Sent::Ping(ping()));
        }
    }

    /// Keep what a runbook command sent (`views::run_command_sent`).
    pub fn sent(&mut self, net: &Network, sent: &[Sent]) {
        for s in sent {
            self.keep(net, s);
        }
    }

    /// Keep the frames `other` kept, after this tap's own.
    pub fn append(&mut self, other: Tap) {
        for (i, frames) in other.frames {
            self.frames.entry(i).or_default().extend(frames);
        }
    }

    fn keep(&mut self, net: &Network, sent: &Sent) {
        for &i in &self.taps {
            self.frames.entry(i).or_default().extend(sent.frames(net, i));
        }
    }

    /// The frames kept for `iface`, in the order they were kept (`pcap::write` puts them in
    /// time order).
    pub fn frames(&self, iface: IfId) -> &[Frame] {
        self.frames.get(&iface).map_or(&[], Vec::as_slice)
    }
}
