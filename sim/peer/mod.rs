//! `fabsim peer`: one simulated device's BGP session exposed to a real BGP speaker over TCP.
//! The simulation runs live: virtual time advances with wall-clock time, the real speaker's
//! UPDATEs enter it as the neighbour's (`Engine::live_routes`), what the device advertises
//! on the session goes out as real messages, and every change (sessions, the device's routes,
//! reachability) is printed as a line.
//!
//! Module map: `fsm` (the session's state machine, no I/O), `watch` (what changed, as lines);
//! this file is the tokio driver (listener, socket, timers, pacing). The bytes are
//! `wire::bgp` / `wire::bgp_read`; the decisions stay in the engine.

mod fsm;
mod watch;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use crate::engine::{BgpMessage, Engine, LiveSession};
use crate::model::{DeviceId, Network};
use crate::wire::{bgp, bgp_read};
use fsm::{Action, Fsm};
use watch::Watch;

/// How often virtual time catches up with the wall clock (and timers are checked).
const TICK: Duration = Duration::from_millis(100);
/// The hold timer while waiting for the peer's OPEN (RFC 4271 §8.2.2's "large value").
const OPEN_HOLD_S: u32 = 240;

/// The neighbour of `dev` the real speaker replaces: the one with remote AS `asn`, or
/// `neighbor` when given. Errors list the candidates.
pub fn choose_neighbor(net: &Network, dev: DeviceId, asn: u32, neighbor: Option<Ipv4Addr>) -> Result<Ipv4Addr, String> {
    let d = net.device(dev);
    let all: Vec<_> = d.bgp.iter().flat_map(|b| &b.neighbors).filter(|n| n.activate).collect();
    let list = |ns: &[&crate::model::BgpNeighbor]| {
        let items: Vec<String> = ns
            .iter()
            .map(|n| match n.remote_as {
                Some(a) => format!("{} (AS {a})", n.address),
                None => format!("{} (remote-as external)", n.address),
            })
            .collect();
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    let matching: Vec<_> = all
        .iter()
        .copied()
        .filter(|n| n.remote_as == Some(asn) || (n.remote_as.is_none() && n.remote_as_external))
        .filter(|n| neighbor.is_none_or(|a| n.address == a))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one.address),
        [] => Err(format!(
            "{} has no BGP neighbour with remote AS {asn}{} (neighbours: {})",
            d.name,
            neighbor.map(|a| format!(" at {a}")).unwrap_or_default(),
            list(&all)
        )),
        many => Err(format!(
            "{} has several BGP neighbours with remote AS {asn}: {}; choose one with --neighbor",
            d.name,
            list(many)
        )),
    }
}

/// Run the live session until `duration` passes, or SIGINT/SIGTERM. Lines go to stdout;
/// `last_view` (the device's routes, as its CLI shows them) is printed before the session is
/// closed, so it shows what the real speaker advertised.
pub fn run(
    engine: &mut Engine,
    dev: DeviceId,
    neighbor: Ipv4Addr,
    listen: SocketAddr,
    duration: Option<Duration>,
    last_view: &dyn Fn(&Engine) -> String,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(live(engine, dev, neighbor, listen, duration, last_view))
}

/// One accepted connection and its session.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    fsm: Fsm,
    buf: Vec<u8>,
    last_heard: Instant,
    last_sent: Instant,
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (the reader went away) must not stop the session.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn live(
    engine: &mut Engine,
    dev: DeviceId,
    neighbor: Ipv4Addr,
    listen: SocketAddr,
    duration: Option<Duration>,
    last_view: &dyn Fn(&Engine) -> String,
) -> Result<(), String> {
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let session = engine.live_attach(dev, neighbor)?;
    let mut watch = Watch::new(dev);
    let name = engine.network().device(dev).name.clone();
    let expect = session
        .remote_as
        .map_or("any other AS".to_string(), |a| format!("AS {a}"));
    say(&format!(
        "listening on {listen}: {name}'s session with {neighbor} ({expect}), local AS {}, router id {}",
        session.local_as, session.router_id
    ));
    if let Some(d) = session.stood_down {
        say(&format!(
            "{}'s simulated speaker stops speaking to {name}",
            engine.network().device(d).name
        ));
    }
    for line in watch.changes(engine) {
        say(&line);
    }
    let start = Instant::now();
    let v0 = engine.now_ms();
    let end = duration.map(|d| start + d);
    let mut ticks = tokio::time::interval(TICK);
    // A slow recompute delays the next tick rather than bursting the missed ones.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
    let mut conn: Option<Conn> = None;
    let mut chunk = vec![0u8; 4096];
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                let target = v0 + start.elapsed().as_millis() as u64;
                engine.advance(target.saturating_sub(engine.now_ms()));
                if let Some(c) = conn.as_mut() {
                    let acts = timers(c);
                    if !apply(engine, &session, &mut conn, acts).await {
                        conn = None;
                    }
                }
                flush_updates(engine, &mut conn).await;
                for line in watch.changes(engine) {
                    say(&line);
                }
                if end.is_some_and(|e| Instant::now() >= e) {
                    break;
                }
            }
            accepted = listener.accept() => {
                let (stream, peer) = accepted.map_err(|e| format!("accept: {e}"))?;
                if conn.is_some() {
                    say(&format!("refused a second connection from {peer}: one session at a time"));
                    continue;
                }
                say(&format!("connection from {peer}"));
                let (fsm, acts) = Fsm::accept(&session);
                let now = Instant::now();
                conn = Some(Conn { stream, peer, fsm, buf: Vec::new(), last_heard: now, last_sent: now });
                if !apply(engine, &session, &mut conn, acts).await {
                    conn = None;
                }
            }
            read = read_some(&mut conn, &mut chunk) => {
                let acts = match read {
                    Ok(0) => vec![Action::Down("Connection closed by the peer".into())],
                    Ok(n) => received(&mut conn, &chunk[..n]),
                    Err(e) => vec![Action::Down(format!("Socket: {e}"))],
                };
                if !apply(engine, &session, &mut conn, acts).await {
                    conn = None;
                }
                flush_updates(engine, &mut conn).await;
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    say(last_view(engine).trim_end());
    if let Some(c) = conn.as_mut() {
        let acts = c.fsm.shut_down();
        apply(engine, &session, &mut conn, acts).await;
    }
    for line in watch.changes(engine) {
        say(&line);
    }
    say("stopped");
    Ok(())
}

/// Read from the connection; pending forever without one (so `select!` waits on the others).
async fn read_some(conn: &mut Option<Conn>, chunk: &mut [u8]) -> std::io::Result<usize> {
    match conn.as_mut() {
        Some(c) => c.stream.read(chunk).await,
        None => std::future::pending().await,
    }
}

/// Bytes arrived: the whole messages among them, through the session.
fn received(conn: &mut Option<Conn>, bytes: &[u8]) -> Vec<Action> {
    let Some(c) = conn.as_mut() else { return Vec::new() };
    c.buf.extend_from_slice(bytes);
    c.last_heard = Instant::now();
    let mut acts = Vec::new();
    loop {
        let len = match bgp_read::message_len(&c.buf) {
            Ok(Some(len)) => len,
            Ok(None) => break,
            Err(e) => {
                acts.extend(c.fsm.malformed(&e));
                break;
            }
        };
        let msg: Vec<u8> = c.buf.drain(..len).collect();
        match bgp_read::decode(&msg, c.fsm.receives_path_ids()) {
            Ok(m) => acts.extend(c.fsm.receive(m)),
            Err(e) => acts.extend(c.fsm.malformed(&e)),
        }
        if c.fsm.state == fsm::State::Closed {
            break;
        }
    }
    acts
}

/// The hold timer and our keepalives (RFC 4271 §4.4, §10).
fn timers(c: &mut Conn) -> Vec<Action> {
    let now = Instant::now();
    // Before the OPENs crossed, the large hold timer of RFC 4271 §8.2.2 (4 minutes suggested).
    let hold = c.fsm.hold_s().unwrap_or(OPEN_HOLD_S);
    if hold > 0 && now.duration_since(c.last_heard) >= Duration::from_secs(u64::from(hold)) {
        return c.fsm.hold_expired();
    }
    match c.fsm.keepalive_s() {
        Some(ka)
            if c.fsm.state == fsm::State::Established
                && now.duration_since(c.last_sent) >= Duration::from_secs(u64::from(ka)) =>
        {
            vec![Action::Send(BgpMessage::Keepalive)]
        }
        _ => Vec::new(),
    }
}

/// Carry out the session's actions; false when the connection is to be dropped.
async fn apply(engine: &mut Engine, session: &LiveSession, conn: &mut Option<Conn>, acts: Vec<Action>) -> bool {
    let Some(c) = conn.as_mut() else { return false };
    let mut keep = true;
    for a in acts {
        match a {
            Action::Send(m) => {
                if let Err(e) = send(c, &m).await {
                    engine.live_down(session, format!("Socket: {e}"));
                    say(&format!("connection from {} lost: {e}", c.peer));
                    return false;
                }
            }
            Action::Up(open) => {
                say(&format!(
                    "session with {} Established: router id {}, hold time {} s, ADD-PATH peer rx {} tx {}",
                    c.peer, open.router_id, open.hold_s, open.peer_rx, open.peer_tx
                ));
                engine.live_up(session, open);
            }
            Action::Routes(prefix, paths) => engine.live_routes(session, prefix, paths),
            Action::Down(why) => {
                say(&format!("session with {} down: {why}", c.peer));
                engine.live_down(session, why);
                keep = false;
            }
        }
    }
    keep
}

async fn send(c: &mut Conn, m: &BgpMessage) -> std::io::Result<()> {
    c.stream.write_all(&bgp::encode(m)).await?;
    c.last_sent = Instant::now();
    Ok(())
}

/// What the device advertised on the session since the last call goes out (and is printed).
async fn flush_updates(engine: &mut Engine, conn: &mut Option<Conn>) {
    let updates = engine.take_live_updates();
    let Some(c) = conn.as_mut().filter(|c| c.fsm.state == fsm::State::Established) else {
        return;
    };
    for m in updates {
        for line in watch::describe_update(&m) {
            say(&line);
        }
        if let Err(e) = send(c, &m).await {
            say(&format!("connection from {} lost: {e}", c.peer));
            return;
        }
    }
}
