//! A BGP session's TCP connection as frames on one interface, from the engine's wire log: the
//! three-way handshake when the session comes up, its OPENs and KEEPALIVEs, every message as
//! data segments (at most one MSS each) with consistent sequence and acknowledgement numbers,
//! the receiver's ACK, and after a NOTIFICATION the FIN exchange.
//!
//! Not from the simulation, so derived deterministically and documented in FIDELITY.md: the
//! active side's ephemeral port and both initial sequence numbers (a hash of the connection
//! number: real stacks randomise both, RFC 6528), the window (64240, Linux's initial window for
//! a 1460-byte MSS, constant: no window scaling) and the MSS (1460, the 1500-byte MTU of every
//! fabric link). Each exchange round after the first starts one round trip later.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::frames::{seen_on, wrap};
use super::{bgp, tcp_flags, Frame, IpBody, TcpRepr};
use crate::engine::{BgpMessage, BgpWire, BgpWireRecord};
use crate::model::{IfId, Network};

const BGP_PORT: u16 = 179;
const MSS: usize = 1460;
const WINDOW: u16 = 64240;
/// Linux's ephemeral port range (net.ipv4.ip_local_port_range default).
const EPHEMERAL: (u32, u32) = (32768, 60999);

/// The frames of every logged BGP message seen on `iface`.
pub fn bgp_frames(net: &Network, records: &[BgpWireRecord], iface: IfId) -> Vec<Frame> {
    let mut conns: BTreeMap<u64, Connection> = BTreeMap::new();
    let mut out = Vec::new();
    for r in records {
        let (active, passive) = if r.from_active { (r.from, r.to) } else { (r.to, r.from) };
        let c = conns
            .entry(r.conn)
            .or_insert_with(|| Connection::new(r.conn, active, passive));
        // Segments every record sends, in order: (round, from the sender?, segment).
        let segments = c.segments(r.from_active, &r.wire);
        let rtt = r
            .path
            .as_ref()
            .map_or(0, |p| p.one_way_us + p.back.last().map_or(0, |h| h.at_us));
        // The engine sends an UPDATE in the instant a session comes up; on the wire it follows
        // the OPEN/KEEPALIVE exchange: a connection's segments never overtake each other.
        let base = (r.at_ms * 1000).max(c.ready_us);
        let rounds = segments.iter().map(|s| u64::from(s.0) + 1).max().unwrap_or(0);
        c.ready_us = base + rounds * rtt;
        let Some(path) = &r.path else { continue };
        for (round, forward, seg) in segments {
            let start = base + u64::from(round) * rtt;
            let (hops, start) = match forward {
                true => (&path.there, start),
                false => (&path.back, start + path.one_way_us),
            };
            // The walk's headers carry the addresses and TTL the segment had there.
            out.extend(seen_on(net, hops, start, iface, |h| {
                Some(wrap(net, h.src, h.dst, h.ttl, h.inner, IpBody::Tcp(seg.clone())))
            }));
        }
    }
    out
}

/// One TCP connection between a session's active and passive ends.
struct Connection {
    active_port: u16,
    /// When the last exchange on the connection ended (µs).
    ready_us: u64,
    /// Next sequence number each side sends: [active, passive].
    next: [u32; 2],
}

impl Connection {
    fn new(conn: u64, active: Ipv4Addr, passive: Ipv4Addr) -> Self {
        let mut key = conn.to_be_bytes().to_vec();
        key.extend_from_slice(&active.octets());
        key.extend_from_slice(&passive.octets());
        let h = crate::hash::fnv1a(key.iter().copied());
        let (lo, hi) = EPHEMERAL;
        let port = lo + (h % u64::from(hi - lo + 1)) as u32;
        Connection {
            active_port: u16::try_from(port).unwrap_or(u16::MAX),
            ready_us: 0,
            next: [(h >> 32) as u32, h as u32],
        }
    }

    /// A segment from one side (`active` or not) with the given flags and data; consumes
    /// sequence space (SYN and FIN count one).
    fn segment(&mut self, active: bool, flags: u8, payload: Vec<u8>) -> TcpRepr {
        let (me, other) = if active { (0, 1) } else { (1, 0) };
        let (src_port, dst_port) = if active {
            (self.active_port, BGP_PORT)
        } else {
            (BGP_PORT, self.active_port)
        };
        let seq = self.next[me];
        let used = payload.len() as u32 + u32::from(flags & (tcp_flags::SYN | tcp_flags::FIN) != 0);
        self.next[me] = seq.wrapping_add(used);
        let ack = if flags & tcp_flags::ACK != 0 {
            self.next[other]
        } else {
            0
        };
        TcpRepr {
            src_port,
            dst_port,
            seq,
            ack,
            flags,
            window: WINDOW,
            mss: (flags & tcp_flags::SYN != 0).then_some(MSS as u16),
            payload,
        }
    }

    /// `bytes` from one side as segments of at most one MSS (PSH on the last), then the other
    /// side's ACK; all in `round`, the ACK on the way back.
    fn data(&mut self, round: u8, from_active: bool, bytes: &[u8], out: &mut Vec<(u8, bool, TcpRepr)>) {
        let chunks: Vec<&[u8]> = bytes.chunks(MSS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let push = if i + 1 == chunks.len() { tcp_flags::PSH } else { 0 };
            let seg = self.segment(from_active, tcp_flags::ACK | push, chunk.to_vec());
            out.push((round, true, seg));
        }
        let ack = self.segment(!from_active, tcp_flags::ACK, Vec::new());
        out.push((round, false, ack));
    }

    /// The segments of one logged event, as (round, sent by the record's sender, segment).
    fn segments(&mut self, from_active: bool, wire: &BgpWire) -> Vec<(u8, bool, TcpRepr)> {
        let mut out = Vec::new();
        match wire {
            BgpWire::Establish {
                active_open,
                passive_open,
            } => {
                use tcp_flags::{ACK, SYN};
                // Logged by the active side: "forward" is active → passive.
                let syn = self.segment(true, SYN, Vec::new());
                let syn_ack = self.segment(false, SYN | ACK, Vec::new());
                out.push((0, true, syn));
                out.push((0, false, syn_ack));
                let keepalive = bgp::encode(&BgpMessage::Keepalive);
                let mut round = Vec::new();
                self.data(1, true, &bgp::encode(active_open), &mut round);
                // The passive side's OPEN crosses the active one's; its ACK is the one above.
                round.pop();
                let open_b = self.segment(false, ACK | tcp_flags::PSH, bgp::encode(passive_open));
                round.push((1, false, open_b));
                self.data(2, true, &keepalive, &mut round);
                round.pop();
                let ka_b = self.segment(false, ACK | tcp_flags::PSH, keepalive);
                round.push((2, false, ka_b));
                let last_ack = self.segment(true, ACK, Vec::new());
                round.push((3, true, last_ack));
                out.extend(round);
            }
            BgpWire::Send(msg) => self.data(0, from_active, &bgp::encode(msg), &mut out),
            BgpWire::Notify(msg) => {
                use tcp_flags::{ACK, FIN, PSH};
                let note = self.segment(from_active, ACK | PSH, bgp::encode(msg));
                let fin = self.segment(from_active, ACK | FIN, Vec::new());
                let fin_b = self.segment(!from_active, ACK | FIN, Vec::new());
                let last = self.segment(from_active, ACK, Vec::new());
                out.extend([(0, true, note), (0, true, fin), (0, false, fin_b), (1, true, last)]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_and_acknowledgement_numbers_follow_the_bytes() {
        let mut c = Connection::new(7, Ipv4Addr::new(10, 0, 11, 1), Ipv4Addr::new(10, 0, 11, 0));
        let open = BgpMessage::Open {
            asn: 65000,
            hold_s: 240,
            router_id: Ipv4Addr::new(10, 0, 11, 1),
            add_path_rx: true,
            add_path_tx: true,
        };
        let segs = c.segments(
            true,
            &BgpWire::Establish {
                active_open: open.clone(),
                passive_open: open,
            },
        );
        let syn = &segs[0].2;
        let syn_ack = &segs[1].2;
        assert_eq!(syn.flags, tcp_flags::SYN);
        assert_eq!(syn_ack.ack, syn.seq.wrapping_add(1));
        // Every segment from a side starts where that side's previous one ended, and every
        // ACK acknowledges all the other side sent before it.
        let mut next = [syn.seq, syn_ack.seq];
        for (_, forward, s) in &segs {
            let me = usize::from(!*forward);
            assert_eq!(s.seq, next[me]);
            let used = s.payload.len() as u32 + u32::from(s.flags & (tcp_flags::SYN | tcp_flags::FIN) != 0);
            next[me] = next[me].wrapping_add(used);
            if s.flags & tcp_flags::ACK != 0 {
                assert_eq!(s.ack, next[1 - me]);
            }
        }
        assert_eq!(syn.mss, Some(1460));
        assert_eq!(segs.last().map(|s| s.2.flags), Some(tcp_flags::ACK));
    }
}
