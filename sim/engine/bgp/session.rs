//! BGP sessions (RFC 4271 §8 states): who connects, whether the TCP connection can exist over
//! the simulated network (both directions, from the source address actually used, within the
//! TTL), the OPEN checks (peer AS), the hold timer, and tearing a session down.

use std::net::Ipv4Addr;

use super::adj::{AdjIn, AdjOut};
use super::table::Speaker;
use super::{Bgp, Event, Out};
use crate::dataplane::{probe_src, IcmpError, ProbeKind, ProbeOutcome};
use crate::engine::bgp_state::{BgpMessage, BgpSessionView, BgpState, BgpWire, BgpWireRecord};
use crate::engine::state::{Proto, State};
use crate::engine::{local_iface, rib};
use crate::model::{BgpFlavor, BgpNeighbor, DeviceId, Network};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SessionId(pub u32);

impl SessionId {
    pub(crate) fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Timers in seconds a flavour uses when the configuration says nothing (bgp-profiles.md §7).
struct Defaults {
    hold: u32,
    connect_retry: u32,
    connect_delay: u32,
    error_wait: u32,
    /// A single-hop eBGP session goes down at once when its interface loses carrier (EOS and
    /// FRR `bgp fast-external-failover`, on by default) rather than at hold-timer expiry.
    /// BIRD has no such rule: its `check link` is not modelled (off), so only the interface
    /// going down (the neighbour's address gone: "Neighbor lost") ends a direct session.
    fast_external_failover: bool,
}

fn defaults(flavor: BgpFlavor) -> Defaults {
    match flavor {
        // EOS connect-retry is not documented in the material found (bgp-profiles.md §9.3):
        // FRR's 120 s would be a guess too; 30 s is EOS's `timers bgp` era default. Unverified.
        BgpFlavor::Eos => Defaults {
            hold: 180,
            connect_retry: 30,
            connect_delay: 0,
            error_wait: 30,
            // Cisco IOS documents it on by default; EOS follows (unverified, FIDELITY.md).
            fast_external_failover: true,
        },
        BgpFlavor::Bird => Defaults {
            hold: 240,
            connect_retry: 120,
            connect_delay: 5,
            error_wait: 60,
            fast_external_failover: false,
        },
        BgpFlavor::Frr => Defaults {
            hold: 180,
            connect_retry: 120,
            connect_delay: 0,
            error_wait: 120,
            fast_external_failover: true,
        },
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Session {
    pub device: DeviceId,
    pub neighbor: Ipv4Addr,
    pub cfg: BgpNeighbor,
    pub flavor: BgpFlavor,
    pub local_as: u32,
    pub state: BgpState,
    pub since: u64,
    pub gen: u32,
    pub peer: Option<SessionId>,
    pub last_error: Option<String>,
    pub msgs_rcvd: u64,
    pub msgs_sent: u64,
    pub source: Option<Ipv4Addr>,
    pub internal: bool,
    pub add_path_rx: bool,
    pub add_path_tx: bool,
    pub hold_s: u32,
    pub last_ok: u64,
    /// When the hold timer of the current silence fires (a `HoldExpire` is pending for it).
    pub hold_expires: Option<u64>,
    pub peer_rid: Option<Ipv4Addr>,
    /// Adj-RIB-In's counters (`adj`; the paths are the speaker's table entries).
    pub adj_in: AdjIn,
    /// What this session has advertised.
    pub adj_out: AdjOut,
    /// The configuration removed this session.
    pub retired: bool,
    /// When the last UPDATE sent on this session arrives: later ones never overtake it (TCP
    /// delivers in order).
    pub last_arrival: u64,
    /// The last keepalive's transport check: (forwarding epoch, source address, got through).
    /// Keepalives of a quiet network re-use it instead of walking the data plane again.
    pub transport_seen: Option<(u64, Ipv4Addr, bool)>,
    /// The current TCP connection (wire log), and whether this side opened it.
    pub conn: u64,
    pub active: bool,
    /// Who speaks on this session: the simulation, or a real speaker (`fabsim peer`).
    pub live: Live,
    /// The session's facts at its last export (`export::ExportKey`); None: never exported.
    pub exported_as: Option<super::export::ExportKey>,
}

/// Whether a real BGP speaker (`fabsim peer`) has taken over one end of a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Live {
    #[default]
    Simulated,
    /// This end talks to a real speaker over TCP: its peer's messages come from outside, its
    /// UPDATEs go out (`Bgp::live_out`), and the real session's timers replace the simulated ones.
    Real,
    /// The simulated speaker the real one replaces: it stays silent on this session.
    StoodDown,
}

impl Session {
    /// The keepalive interval, seconds: configured, else a third of the negotiated hold time.
    fn keepalive_s(&self) -> u64 {
        u64::from(self.cfg.timers.keepalive.unwrap_or(self.hold_s / 3).max(1))
    }

    fn retry_s(&self) -> u64 {
        let d = defaults(self.flavor);
        u64::from(self.cfg.timers.connect_retry.unwrap_or(d.connect_retry))
    }

    fn error_wait_s(&self) -> u64 {
        let d = defaults(self.flavor);
        u64::from(self.cfg.timers.error_wait.map_or(d.error_wait, |(min, _)| min))
    }

    /// The address BIRD calls `p->source_addr`: the configured `source address` when there is
    /// one, else the established connection's local address. BIRD 1.6.8 sets it from the
    /// configuration when the protocol starts and fills it from the socket only when it is unset
    /// (`bgp_conn_enter_established_state`); a peer's incoming connection, which BIRD matches by
    /// remote address alone (`bgp_find_proto`), does not change it. It is the next hop the
    /// speaker advertises for itself (`bgp_update_attrs`), so a node whose `source address` is
    /// not the address its leaf connected to advertises an address the leaf may not reach
    /// (seed-lab.md I24). Only BIRD's `source address` sets `cfg.source_address`; EOS's and
    /// FRR's `update-source` choose the socket's address, so for them the two are the same.
    pub(crate) fn local_address(&self) -> Option<Ipv4Addr> {
        self.source.map(|tcp| self.cfg.source_address.unwrap_or(tcp))
    }

    pub(crate) fn view(&self) -> BgpSessionView {
        BgpSessionView {
            name: self.cfg.name.clone(),
            neighbor: self.neighbor,
            remote_as: self.cfg.remote_as,
            local_as: self.local_as,
            state: self.state,
            since_ms: self.since,
            msgs_rcvd: self.msgs_rcvd,
            msgs_sent: self.msgs_sent,
            pfx_rcvd: self.adj_in.received,
            pfx_acc: self.adj_in.accepted,
            exported: self.adj_out.paths(),
            preferred: 0,
            last_error: self.last_error.clone(),
            peer_router_id: self.peer_rid,
            internal: self.internal,
            multihop: self.cfg.multihop.is_some(),
            passive: self.cfg.passive,
            add_path_rx: self.add_path_rx,
            add_path_tx: self.add_path_tx,
            source: self.local_address(),
            hold_s: self.hold_s,
            keepalive_s: self.keepalive_s() as u32,
        }
    }
}

/// Speakers for every powered device with BGP configured; sessions for every activated
/// neighbour with a remote AS. A neighbour whose configuration changed restarts (BIRD's
/// `configure` restarts a protocol whose options changed; EOS resets on remote-as change).
/// Only `devices` (ascending) are looked at: one whose power, configuration and interfaces are
/// as at its last sync has nothing to do.
pub(super) fn sync(bgp: &mut Bgp, net: &Network, st: &State, now: u64, devices: &[DeviceId], out: &mut Out) -> bool {
    let mut changed = false;
    for &id in devices {
        let d = id.idx();
        let dev = net.device(id);
        let powered = st.devices.get(d).is_some_and(|s| s.powered);
        let cfg = dev.bgp.as_ref().filter(|c| powered && !c.shutdown);
        let Some(cfg) = cfg else {
            // Unpowered without an orderly shutdown first (`Engine::power_off`): the power was
            // cut and the peers hear nothing.
            changed |= stop_speaker(bgp, id, now, powered, out);
            continue;
        };
        let router_id = cfg
            .router_id
            .or_else(|| dev.bird.as_ref().and_then(|b| b.router_id))
            .or_else(|| rib::highest_address(net, st, id))
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        // A new router ID changes every OPEN: all sessions restart (in place). A new AS is a
        // per-session change (BIRD's `local as` lives in each protocol).
        let new_rid = bgp.speakers.get(&id).is_some_and(|sp| sp.router_id != router_id);
        if let Some(sp) = bgp.speakers.get_mut(&id) {
            sp.asn = cfg.asn;
            sp.router_id = router_id;
        }
        let sp = bgp
            .speakers
            .get_or_insert_with(id, || Speaker::new(id, cfg.flavor, cfg.asn, router_id));
        let existing = sp.sessions.clone();
        let wanted: Vec<&BgpNeighbor> = cfg
            .neighbors
            .iter()
            .filter(|n| n.activate && (n.remote_as.is_some() || n.remote_as_external))
            .collect();
        // BIRD keeps its protocol list in order: an unchanged protocol stays, a changed one
        // restarts in its place, a removed one goes, a new one is appended (seed s3a:
        // `Mesh_10_0_11_1` is listed after the restarted `Mesh_10_0_137_*`).
        let mut keep = Vec::new();
        for s in existing {
            let sess = &bgp.sessions[s.idx()];
            let want = wanted.iter().find(|n| n.address == sess.neighbor).copied();
            if !new_rid && want.is_some_and(|n| same_config(n, &sess.cfg)) {
                keep.push(s);
                continue;
            }
            drop_session(bgp, now, s, Notice::ConfigurationChange, out);
            bgp.sessions[s.idx()].retired = true;
            changed = true;
            if let Some(n) = want {
                keep.push(new_session(bgp, id, cfg, n, now, out));
            }
        }
        for n in wanted {
            if keep.iter().any(|s| bgp.sessions[s.idx()].neighbor == n.address) {
                continue;
            }
            keep.push(new_session(bgp, id, cfg, n, now, out));
            changed = true;
        }
        if let Some(sp) = bgp.speakers.get_mut(&id) {
            if sp.sessions != keep {
                sp.set_sessions(keep, &bgp.sessions);
            }
        }
    }
    changed | watch_links(bgp, net, st, now, devices, out)
}

/// Remove a device's speaker: with `notify`, each established peer gets a NOTIFICATION
/// (Cease, administrative shutdown), as when BIRD is stopped or `router bgp` is shut down;
/// without, the sessions just vanish (power cut) and the peers find out by themselves.
pub(super) fn stop_speaker(bgp: &mut Bgp, id: DeviceId, now: u64, notify: bool, out: &mut Out) -> bool {
    let Some(sp) = bgp.speakers.remove(&id) else {
        return false;
    };
    for s in sp.sessions {
        bgp.sessions[s.idx()].retired = true;
        if notify {
            drop_session(bgp, now, s, Notice::AdministrativeShutdown, out);
        } else {
            close(bgp, now, s, "Power lost".to_string(), out);
        }
    }
    true
}

/// Single-hop eBGP sessions whose interface failed go down at once, without a NOTIFICATION
/// (nothing can cross the link): when the interface is down or lost its address (BIRD's
/// `bgp_neigh_notify`: "Neighbor lost"), or lost carrier where the flavour has
/// fast-external-failover. Multihop and iBGP sessions wait for their hold timer.
fn watch_links(bgp: &mut Bgp, net: &Network, st: &State, now: u64, devices: &[DeviceId], out: &mut Out) -> bool {
    let mut changed = false;
    for sid in 0..bgp.sessions.len() {
        let s = &bgp.sessions[sid];
        if s.state != BgpState::Established || s.retired || ttl_of(s) != 1 {
            continue;
        }
        if devices.binary_search(&s.device).is_err() {
            continue;
        }
        let Some(src) = s.source else { continue };
        let port = net
            .device(s.device)
            .ifaces
            .iter()
            .find(|i| st.ifaces[i.idx()].addr.is_some_and(|a| a.addr() == src));
        let why = match port.map(|i| (&st.ifaces[i.idx()], net.iface(*i).name.as_str())) {
            None => "Neighbor lost".to_string(),
            Some((i, _)) if !i.up => "Neighbor lost".to_string(),
            Some((i, name)) if !i.line_up && defaults(s.flavor).fast_external_failover => {
                format!("Interface {name} down (fast-external-failover)")
            }
            Some(_) => continue,
        };
        close(bgp, now, SessionId(sid as u32), why, out);
        changed = true;
    }
    changed
}

fn new_session(
    bgp: &mut Bgp,
    id: DeviceId,
    cfg: &crate::model::BgpConfig,
    n: &BgpNeighbor,
    now: u64,
    out: &mut Out,
) -> SessionId {
    let sid = SessionId(bgp.sessions.len() as u32);
    let hold = n.timers.hold.or(cfg.timers.hold).unwrap_or(defaults(cfg.flavor).hold);
    let local_as = n.local_as.unwrap_or(cfg.asn);
    bgp.sessions.push(Session {
        device: id,
        neighbor: n.address,
        cfg: n.clone(),
        flavor: cfg.flavor,
        local_as,
        state: BgpState::Idle,
        since: now,
        gen: 0,
        peer: None,
        last_error: None,
        msgs_rcvd: 0,
        msgs_sent: 0,
        source: None,
        internal: n.remote_as == Some(local_as),
        add_path_rx: false,
        add_path_tx: false,
        hold_s: hold,
        last_ok: now,
        hold_expires: None,
        peer_rid: None,
        adj_in: AdjIn::default(),
        adj_out: AdjOut::default(),
        retired: false,
        last_arrival: now,
        transport_seen: None,
        conn: 0,
        active: false,
        live: Live::Simulated,
        exported_as: None,
    });
    start(bgp, now, sid, out);
    sid
}

/// Equal but for where they were written: a re-rendered file moves lines around, and BIRD's
/// `configure` restarts only protocols whose options changed (`proto_reconfigure`).
fn same_config(a: &BgpNeighbor, b: &BgpNeighbor) -> bool {
    let strip = |n: &BgpNeighbor| BgpNeighbor {
        span: Default::default(),
        ..n.clone()
    };
    // The common case, a configuration not touched since the last sync, needs no copies.
    a == b || strip(a) == strip(b)
}

/// Idle → Active: a passive or shut-down session waits; an active one connects after its
/// connect delay.
fn start(bgp: &mut Bgp, now: u64, sid: SessionId, out: &mut Out) {
    let s = &mut bgp.sessions[sid.idx()];
    s.gen += 1;
    s.since = now;
    if s.cfg.shutdown {
        s.state = BgpState::Idle;
        s.last_error = Some("Administratively shut down".into());
        return;
    }
    s.state = BgpState::Active;
    if !s.cfg.passive {
        // BIRD's `bgp_active`: MAX(1, connect delay time), started with `bgp_start_timer`.
        let secs = u64::from(s.cfg.timers.connect_delay.unwrap_or(defaults(s.flavor).connect_delay)).max(1);
        let (flavor, gen) = (s.flavor, s.gen);
        let delay = bgp.jitter.timer_ms(flavor, secs);
        out.push((now + delay, Event::Connect { session: sid, gen }));
    }
}

/// Why a TCP connection or OPEN fails, in the speaker's words, and when to try again.
struct Refused {
    ours: String,
    theirs: Option<(super::SessionId, String)>,
    /// The timer that runs before the next attempt (connect retry or error wait), seconds.
    retry_s: u64,
}

pub(super) fn connect(
    bgp: &mut Bgp,
    net: &Network,
    st: &State,
    now: u64,
    sid: SessionId,
    gen: u32,
    out: &mut Out,
) -> bool {
    let Some(s) = bgp.sessions.get(sid.idx()) else {
        return false;
    };
    // A session with a real speaker on either end is never connected inside the simulation.
    if s.gen != gen || s.retired || s.state == BgpState::Established || s.live != Live::Simulated {
        return false;
    }
    match try_open(bgp, net, st, sid) {
        Ok((peer, src)) => {
            establish(bgp, now, sid, peer, src, out);
            true
        }
        Err(r) => {
            // Exact: see `close` for why fabsim's retry is not BIRD's randomised timer.
            let retry = r.retry_s * 1000;
            let s = &mut bgp.sessions[sid.idx()];
            let changed = s.last_error.as_deref() != Some(r.ours.as_str()) || s.state != BgpState::Active;
            s.state = BgpState::Active;
            s.last_error = Some(r.ours);
            out.push((
                now + retry,
                Event::Connect {
                    session: sid,
                    gen: s.gen,
                },
            ));
            if let Some((p, msg)) = r.theirs {
                bgp.sessions[p.idx()].last_error = Some(msg);
            }
            changed
        }
    }
}

/// The address this session connects from: `source address` / `update-source`, else the
/// address of the interface the route to the neighbour leaves by.
pub(super) fn source_address(net: &Network, st: &State, s: &Session) -> Option<Ipv4Addr> {
    if let Some(a) = s.cfg.source_address {
        return Some(a);
    }
    if let Some(ifname) = &s.cfg.update_source {
        let i = net.iface_by_name(s.device, ifname)?;
        return st.ifaces[i.idx()].addr.map(|a| a.addr());
    }
    let r = st.devices[s.device.idx()].fib.lookup(s.neighbor)?;
    r.src.or_else(|| {
        r.nexthops
            .first()
            .and_then(|nh| st.ifaces[nh.iface.idx()].addr.map(|a| a.addr()))
    })
}

/// eBGP without multihop talks only to a neighbour on a directly connected network (TTL 1).
fn directly_connected(st: &State, dev: DeviceId, addr: Ipv4Addr) -> bool {
    st.devices[dev.idx()]
        .fib
        .lookup(addr)
        .is_some_and(|r| r.proto == Proto::Connected)
}

fn ttl_of(s: &Session) -> u8 {
    match (s.internal, s.cfg.multihop) {
        (_, Some(t)) => t,
        (false, None) => 1,
        (true, None) => 64,
    }
}

/// Can `s` reach its neighbour and back from `src` within its TTL?
fn transport(net: &Network, st: &State, s: &Session, src: Ipv4Addr) -> Result<(), String> {
    let p = probe_src(
        net,
        st,
        s.device,
        Some(src),
        s.neighbor,
        ttl_of(s).max(1),
        ProbeKind::Echo,
    );
    match p.outcome {
        ProbeOutcome::Reply { .. } => Ok(()),
        ProbeOutcome::LocalNoRoute => Err("Socket: Network unreachable".into()),
        ProbeOutcome::Error {
            error: IcmpError::TtlExceeded,
            ..
        } => Err("Socket: Connection timed out (TTL too small: the neighbour is more hops away)".into()),
        ProbeOutcome::Error { .. } => Err("Socket: No route to host".into()),
        ProbeOutcome::Lost { reason } => Err(format!("Socket: Connection timed out ({reason})")),
    }
}

fn try_open(bgp: &Bgp, net: &Network, st: &State, sid: SessionId) -> Result<(SessionId, Ipv4Addr), Refused> {
    let s = &bgp.sessions[sid.idx()];
    let retry = s.retry_s();
    let refuse = |ours: String| Refused {
        ours,
        theirs: None,
        retry_s: retry,
    };
    let src = source_address(net, st, s).ok_or_else(|| refuse("Socket: Network unreachable".into()))?;
    if local_iface(net, st, s.device, src).is_none() {
        return Err(refuse(format!("Socket: Cannot assign requested address {src}")));
    }
    if !s.internal && s.cfg.multihop.is_none() && !directly_connected(st, s.device, s.neighbor) {
        return Err(refuse("Neighbor not directly connected (eBGP without multihop)".into()));
    }
    transport(net, st, s, src).map_err(refuse)?;
    let owner = (0..net.devices.len())
        .map(|d| DeviceId(d as u32))
        .find(|d| local_iface(net, st, *d, s.neighbor).is_some())
        .ok_or_else(|| refuse("Socket: Connection timed out".into()))?;
    let peer_sp = bgp
        .speakers
        .get(&owner)
        .ok_or_else(|| refuse("Socket: Connection refused".into()))?;
    // The peer matches an incoming connection to a neighbour by remote address only
    // (BIRD `bgp_find_proto`; EOS and FRR likewise).
    let peer = peer_sp
        .sessions
        .iter()
        .copied()
        .find(|p| {
            let ps = &bgp.sessions[p.idx()];
            ps.neighbor == src && !ps.retired && ps.live == Live::Simulated
        })
        .ok_or_else(|| refuse("Socket: Connection refused (the neighbour has no session for this address)".into()))?;
    let ps = &bgp.sessions[peer.idx()];
    if ps.cfg.shutdown {
        return Err(refuse("Socket: Connection refused (the neighbour is shut down)".into()));
    }
    if !ps.internal && ps.cfg.multihop.is_none() && !directly_connected(st, owner, src) {
        return Err(refuse(
            "Socket: Connection refused (the neighbour expects a directly connected peer)".into(),
        ));
    }
    // OPEN: each side checks the other's AS against its configuration (RFC 4271 §6.2).
    // `remote-as external` (FRR) takes any AS but the checker's own.
    let bad = |from: u32, checker: &Session| match checker.cfg.remote_as {
        Some(w) => w != from,
        None => checker.cfg.remote_as_external && from == checker.local_as,
    };
    if bad(s.local_as, ps) || bad(ps.local_as, s) {
        let (ours, theirs) = if bad(s.local_as, ps) {
            (
                "Received: Bad peer AS".to_string(),
                "BGP Error: Bad peer AS".to_string(),
            )
        } else {
            (
                "BGP Error: Bad peer AS".to_string(),
                "Received: Bad peer AS".to_string(),
            )
        };
        return Err(Refused {
            ours,
            theirs: Some((peer, theirs)),
            retry_s: s.error_wait_s().max(retry),
        });
    }
    Ok((peer, src))
}

/// Both ends up: ADD-PATH is negotiated per direction (RFC 7911: we receive extra paths only
/// if we said rx and the peer said tx), the hold time is the smaller of the two.
fn establish(bgp: &mut Bgp, now: u64, a: SessionId, b: SessionId, src: Ipv4Addr, out: &mut Out) {
    let caps = |x: SessionId| {
        (
            bgp.sessions[x.idx()].cfg.add_path_rx,
            bgp.sessions[x.idx()].cfg.add_path_tx,
        )
    };
    let ((a_rx, a_tx), (b_rx, b_tx)) = (caps(a), caps(b));
    let rid = |d: DeviceId| bgp.speakers.get(&d).map(|sp| sp.router_id);
    let (a_dev, b_dev) = (bgp.sessions[a.idx()].device, bgp.sessions[b.idx()].device);
    let (a_rid, b_rid) = (rid(a_dev), rid(b_dev));
    let b_src = bgp.sessions[a.idx()].neighbor;
    // What each side's OPEN offers (before the hold times are negotiated below).
    let open = |x: SessionId, rid: Option<Ipv4Addr>| {
        let s = &bgp.sessions[x.idx()];
        BgpMessage::Open {
            asn: s.local_as,
            hold_s: s.hold_s,
            router_id: rid.unwrap_or(Ipv4Addr::UNSPECIFIED),
            add_path_rx: s.cfg.add_path_rx,
            add_path_tx: s.cfg.add_path_tx,
        }
    };
    let wire = BgpWire::Establish {
        active_open: open(a, a_rid),
        passive_open: open(b, b_rid),
    };
    let conn = bgp.wire.as_mut().map_or(0, |log| log.new_connection());
    let hold = bgp.sessions[a.idx()].hold_s.min(bgp.sessions[b.idx()].hold_s);
    for (me, other, my_src, rx, tx, peer_rid) in [
        (a, b, src, a_rx && b_tx, a_tx && b_rx, b_rid),
        (b, a, b_src, b_rx && a_tx, b_tx && a_rx, a_rid),
    ] {
        let s = &mut bgp.sessions[me.idx()];
        s.state = BgpState::Established;
        s.since = now;
        s.gen += 1;
        s.peer = Some(other);
        s.last_error = None;
        s.source = Some(my_src);
        s.add_path_rx = rx;
        s.add_path_tx = tx;
        s.hold_s = hold;
        s.last_ok = now;
        s.peer_rid = peer_rid;
        s.adj_in = AdjIn::default();
        s.adj_out.clear();
        s.conn = conn;
        s.active = me == a;
        // OPEN and KEEPALIVE each way.
        s.msgs_rcvd += 2;
        s.msgs_sent += 2;
        s.hold_expires = None;
        let (flavor, ka, gen) = (s.flavor, s.keepalive_s(), s.gen);
        out.push((
            now + bgp.jitter.timer_ms(flavor, ka),
            Event::Keepalive { session: me, gen },
        ));
    }
    log_wire(bgp, now, a, wire);
}

/// Keepalives flow while the connection can exist; without them the hold timer expires.
pub(super) fn keepalive(
    bgp: &mut Bgp,
    net: &Network,
    st: &State,
    now: u64,
    sid: SessionId,
    gen: u32,
    out: &mut Out,
) -> bool {
    let Some(s) = bgp.sessions.get(sid.idx()) else {
        return false;
    };
    if s.gen != gen || s.state != BgpState::Established {
        return false;
    }
    let epoch = bgp.forwarding_epoch;
    let up = s.source.is_some_and(|src| match s.transport_seen {
        Some((e, seen_src, ok)) if e == epoch && seen_src == src => ok,
        _ => transport(net, st, s, src).is_ok(),
    });
    if up {
        // Each side's own timer sends its KEEPALIVE; the peer's event logs the other one.
        log_wire(bgp, now, sid, BgpWire::Send(BgpMessage::Keepalive));
    }
    let s = &mut bgp.sessions[sid.idx()];
    s.transport_seen = s.source.map(|src| (epoch, src, up));
    let (flavor, gen, hold_s, ka) = (s.flavor, s.gen, u64::from(s.hold_s), s.keepalive_s());
    if up {
        s.last_ok = now;
        s.hold_expires = None;
        s.msgs_sent += 1;
        s.msgs_rcvd += 1;
    } else if s.hold_expires.is_none() {
        // The hold timer was last started when the peer's last message came; BIRD started it
        // randomised like its other timers, so the draw is made for that last start.
        let fires = s.last_ok + bgp.jitter.timer_ms(flavor, hold_s);
        bgp.sessions[sid.idx()].hold_expires = Some(fires);
        out.push((fires, Event::HoldExpire { session: sid, gen }));
    }
    out.push((
        now + bgp.jitter.timer_ms(flavor, ka),
        Event::Keepalive { session: sid, gen },
    ));
    false
}

/// No keepalive for a hold time: the session goes down (`Hold timer expired`).
pub(super) fn hold_expire(bgp: &mut Bgp, now: u64, sid: SessionId, gen: u32, out: &mut Out) -> bool {
    let Some(s) = bgp.sessions.get(sid.idx()) else {
        return false;
    };
    // A keepalive that got through since the timer was armed disarmed it (a later silence arms
    // it again, with its own event).
    let due = s.hold_expires.is_some_and(|fires| now >= fires);
    if s.gen != gen || s.state != BgpState::Established || !due {
        return false;
    }
    drop_session(bgp, now, sid, Notice::HoldTimerExpired, out);
    true
}

/// Why a speaker sends a NOTIFICATION: RFC 4271 §6.5 (hold timer, code 4) and RFC 4486's Cease
/// subcodes (code 6: 2 administrative shutdown, 6 other configuration change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Notice {
    ConfigurationChange,
    AdministrativeShutdown,
    HoldTimerExpired,
}

impl Notice {
    fn text(self) -> &'static str {
        match self {
            Notice::ConfigurationChange => "Cease: configuration change",
            Notice::AdministrativeShutdown => "Cease: administrative shutdown",
            Notice::HoldTimerExpired => "Hold timer expired",
        }
    }

    fn message(self) -> BgpMessage {
        let (code, subcode) = match self {
            Notice::ConfigurationChange => (6, 6),
            Notice::AdministrativeShutdown => (6, 2),
            Notice::HoldTimerExpired => (4, 0),
        };
        BgpMessage::Notification { code, subcode }
    }
}

/// Log what `sid` put on its connection, when the engine keeps a wire log.
pub(super) fn log_wire(bgp: &mut Bgp, now: u64, sid: SessionId, wire: BgpWire) {
    let s = &bgp.sessions[sid.idx()];
    let peer = s.peer.map(|p| &bgp.sessions[p.idx()]);
    let (Some(log), Some(from), Some(peer)) = (bgp.wire.as_mut(), s.source, peer) else {
        return;
    };
    log.push(BgpWireRecord {
        at_ms: now,
        conn: s.conn,
        device: s.device,
        peer: peer.device,
        from,
        to: s.neighbor,
        from_active: s.active,
        ttl: ttl_of(s),
        peer_ttl: ttl_of(peer),
        wire,
        path: None,
    });
}

/// Tear a session (and its other end) down: the speaker sends a NOTIFICATION, paths learned
/// over it are withdrawn, and the active sides try again after their connect-retry time.
pub(super) fn drop_session(bgp: &mut Bgp, now: u64, sid: SessionId, notice: Notice, out: &mut Out) {
    let peer = bgp.sessions.get(sid.idx()).and_then(|s| s.peer);
    if bgp.sessions[sid.idx()].state == BgpState::Established {
        log_wire(bgp, now, sid, BgpWire::Notify(notice.message()));
    }
    let reason = notice.text();
    close(bgp, now, sid, reason.to_string(), out);
    if let Some(p) = peer.filter(|p| bgp.sessions[p.idx()].state == BgpState::Established) {
        close(bgp, now, p, format!("Received: {reason}"), out);
    }
}

/// One end of a session goes down (the other end is not told): its paths are withdrawn and,
/// if it is active, it tries again after its connect-retry time.
pub(super) fn close(bgp: &mut Bgp, now: u64, x: SessionId, why: String, out: &mut Out) {
    let s = &mut bgp.sessions[x.idx()];
    s.state = BgpState::Active;
    s.since = now;
    s.gen += 1;
    s.peer = None;
    s.last_error = Some(why);
    s.adj_in = AdjIn::default();
    s.adj_out.clear();
    s.hold_expires = None;
    if !s.cfg.passive && !s.retired {
        // Exact, unlike BIRD's keepalive and hold timers. fabsim retries a closed or refused
        // session after the connect-retry time; BIRD 1.6 runs that timer only on a connection
        // attempt that hangs. After a close (`bgp_stop`: the core starts the protocol again)
        // or a refused attempt (`bgp_sock_err` → `bgp_decision`) it connects again after the
        // connect delay (Calico: 2 s), and it accepts an incoming connection in any state.
        // Jittering fabsim's timer here would draw a race between the mesh and the leaf
        // sessions of a restarted node that BIRD's own order decides differently
        // (FIDELITY.md "timer jitter").
        out.push((now + s.retry_s() * 1000, Event::Connect { session: x, gen: s.gen }));
    }
    let dev = s.device;
    if let Some(sp) = bgp.speakers.get_mut(&dev) {
        sp.flush_session(x);
    }
}
