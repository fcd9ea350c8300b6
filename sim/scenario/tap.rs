//! The run's own data-plane packets on tapped interfaces, for `run --pcap`: the ping each
//! `reach`/`unreachable` check sends and the ping of each `capture:` check, rendered as
//! `fabsim ping --pcap` renders a ping (`PingCapture::frames`), at the virtual time the check
//! ran and through the network as it was then. Kept per tapped interface; with no taps
//! nothing is computed.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{IfId, Network};
use crate::views::tcpdump::PingCapture;
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

    /// Keep what a ping puts on the tapped interfaces; `ping` is only run when there are any.
    pub fn ping(&mut self, net: &Network, ping: impl FnOnce() -> PingCapture) {
        if self.taps.is_empty() {
            return;
        }
        let ping = ping();
        for &i in &self.taps {
            self.frames.entry(i).or_default().extend(ping.frames(net, i));
        }
    }

    /// The frames kept for `iface`, in the order the checks ran.
    pub fn frames(&self, iface: IfId) -> &[Frame] {
        self.frames.get(&iface).map_or(&[], Vec::as_slice)
    }
}
