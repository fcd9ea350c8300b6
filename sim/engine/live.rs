//! The engine's side of `fabsim peer`: one session handed to a real speaker (`bgp::live`),
//! with virtual time advanced by the caller as wall-clock time passes.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::bgp::live;
pub use super::bgp::live::{LiveOpen, LiveSession};
use super::{Advertised, BgpMessage, Engine, Event};
use crate::model::DeviceId;

impl Engine {
    /// Hand `dev`'s session with `neighbor` to a real speaker: the simulated speaker at that
    /// address stops speaking on it, and the session waits for [`Engine::live_up`].
    pub fn live_attach(&mut self, dev: DeviceId, neighbor: Ipv4Addr) -> Result<LiveSession, String> {
        let mut out = Vec::new();
        let s = live::attach(&mut self.bgp, &self.net, &self.state, self.now, dev, neighbor, &mut out)?;
        self.after_live(out);
        Ok(s)
    }

    pub fn live_up(&mut self, s: &LiveSession, open: LiveOpen) {
        live::up(&mut self.bgp, &self.net, &self.state, self.now, s.id, open);
        self.after_live(Vec::new());
    }

    /// The real speaker's paths for `prefix` (all it now advertises for it).
    pub fn live_routes(&mut self, s: &LiveSession, prefix: Ipv4Net, paths: Vec<Advertised>) {
        let mut out = Vec::new();
        live::routes(&mut self.bgp, self.now, s.id, prefix, paths.into(), &mut out);
        self.after_live(out);
    }

    pub fn live_down(&mut self, s: &LiveSession, why: String) {
        let mut out = Vec::new();
        live::down(&mut self.bgp, self.now, s.id, why, &mut out);
        self.after_live(out);
    }

    /// The UPDATEs the device sent the real speaker since the last call, in order.
    pub fn take_live_updates(&mut self) -> Vec<BgpMessage> {
        std::mem::take(&mut self.bgp.live_out)
    }

    /// Virtual time of the last change to any forwarding table.
    pub fn routes_changed_ms(&self) -> u64 {
        self.routes_changed
    }

    fn after_live(&mut self, out: Vec<(u64, super::bgp::Event)>) {
        for (at, e) in out {
            self.schedule(at, Event::Bgp(e));
        }
        self.mark_changed();
        self.refresh_timers_view();
    }
}
