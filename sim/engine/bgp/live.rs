//! A real BGP speaker in place of one end of a simulated session (`fabsim peer`). The
//! simulated speaker it replaces stands down (a Cease to the device, then silence); the
//! device's end stays in the simulation and is driven from outside: up when the real OPENs
//! were exchanged, paths as the real speaker's UPDATEs announce them, down when the TCP
//! session ends. What the device advertises on it is collected in `Bgp::live_out`.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::session::{self, close, drop_session, Live, Notice, SessionId};
use super::{Bgp, Event, Out};
use crate::engine::bgp_state::BgpState;
use crate::engine::local_iface;
use crate::engine::state::State;
use crate::model::{DeviceId, Network};

/// What the device's end of the session was configured with: what its OPEN offers and what
/// it expects of the peer's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveSession {
    pub(crate) id: SessionId,
    pub local_as: u32,
    pub router_id: Ipv4Addr,
    pub hold_s: u32,
    /// The AS the peer must have (`None` with `remote-as external`: any AS but `local_as`).
    pub remote_as: Option<u32>,
    pub add_path_rx: bool,
    pub add_path_tx: bool,
    /// The simulated device that stood down, if the neighbour address is one of its own.
    pub stood_down: Option<DeviceId>,
}

/// The peer's side of a real OPEN exchange, as negotiated (RFC 4271 §4.2, RFC 7911).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveOpen {
    pub router_id: Ipv4Addr,
    /// The negotiated hold time: the smaller of the two OPENs'.
    pub hold_s: u32,
    /// The ADD-PATH directions the peer offered: it receives / it sends extra paths.
    pub peer_rx: bool,
    pub peer_tx: bool,
}

/// Hand device `dev`'s session with `neighbor` to a real speaker.
pub(crate) fn attach(
    bgp: &mut Bgp,
    net: &Network,
    st: &State,
    now: u64,
    dev: DeviceId,
    neighbor: Ipv4Addr,
    out: &mut Out,
) -> Result<LiveSession, String> {
    let sp = bgp.speakers.get(&dev).ok_or("the device runs no BGP speaker")?;
    let (router_id, sessions) = (sp.router_id, sp.sessions.clone());
    let id = sessions
        .iter()
        .copied()
        .find(|s| bgp.sessions[s.idx()].neighbor == neighbor && !bgp.sessions[s.idx()].retired)
        .ok_or_else(|| format!("no BGP session with {neighbor}"))?;
    // The simulated speaker at the neighbour address: its session towards this device.
    let owner = (0..net.devices.len())
        .map(|d| DeviceId(d as u32))
        .find(|d| local_iface(net, st, *d, neighbor).is_some());
    let counterpart = owner.and_then(|o| bgp.speakers.get(&o)).and_then(|osp| {
        osp.sessions.iter().copied().find(|p| {
            let ps = &bgp.sessions[p.idx()];
            !ps.retired && local_iface(net, st, dev, ps.neighbor).is_some()
        })
    });
    if let Some(p) = counterpart {
        if bgp.sessions[p.idx()].state == BgpState::Established {
            drop_session(bgp, now, p, Notice::AdministrativeShutdown, out);
        }
        bgp.sessions[p.idx()].live = Live::StoodDown;
    }
    if bgp.sessions[id.idx()].state == BgpState::Established {
        close(bgp, now, id, "Connection handed to a real speaker".into(), out);
    }
    let s = &mut bgp.sessions[id.idx()];
    s.live = Live::Real;
    Ok(LiveSession {
        id,
        local_as: s.local_as,
        router_id,
        hold_s: s.hold_s,
        remote_as: s.cfg.remote_as,
        add_path_rx: s.cfg.add_path_rx,
        add_path_tx: s.cfg.add_path_tx,
        stood_down: counterpart.map(|p| bgp.sessions[p.idx()].device),
    })
}

/// The real OPENs were exchanged: the session is Established, with what was negotiated.
pub(crate) fn up(bgp: &mut Bgp, net: &Network, st: &State, now: u64, id: SessionId, open: LiveOpen) {
    let source = session::source_address(net, st, &bgp.sessions[id.idx()]);
    let s = &mut bgp.sessions[id.idx()];
    s.state = BgpState::Established;
    s.since = now;
    s.gen += 1;
    s.peer = None;
    s.last_error = None;
    s.source = source;
    s.add_path_rx = s.cfg.add_path_rx && open.peer_tx;
    s.add_path_tx = s.cfg.add_path_tx && open.peer_rx;
    s.hold_s = open.hold_s;
    s.last_ok = now;
    s.peer_rid = Some(open.router_id);
    s.adj_in = super::adj::AdjIn::default();
    s.adj_out.clear();
    s.active = false;
    s.msgs_rcvd += 2;
    s.msgs_sent += 2;
}

/// The real speaker now advertises `paths` for `prefix` (all of them: an empty set withdraws).
pub(crate) fn routes(bgp: &mut Bgp, now: u64, id: SessionId, prefix: Ipv4Net, paths: super::adj::Paths, out: &mut Out) {
    let s = &mut bgp.sessions[id.idx()];
    s.last_ok = now;
    out.push((
        now,
        Event::UpdateOne {
            to: id,
            gen: s.gen,
            prefix,
            paths,
        },
    ));
}

/// The real session ended (`why` in the speaker's words): its paths are withdrawn.
pub(crate) fn down(bgp: &mut Bgp, now: u64, id: SessionId, why: String, out: &mut Out) {
    if bgp.sessions[id.idx()].state == BgpState::Established {
        close(bgp, now, id, why, out);
    } else {
        bgp.sessions[id.idx()].last_error = Some(why);
    }
}

#[cfg(test)]
impl LiveSession {
    /// A session as a device configured with AS `local_as` and ADD-PATH receive would hand
    /// over, for tests of what drives it.
    pub(crate) fn sample(local_as: u32, remote_as: Option<u32>, hold_s: u32) -> Self {
        LiveSession {
            id: SessionId(0),
            local_as,
            router_id: Ipv4Addr::new(10, 11, 99, 1),
            hold_s,
            remote_as,
            add_path_rx: true,
            add_path_tx: false,
            stood_down: None,
        }
    }
}
