//! Packet walk types and the walker.

use std::net::Ipv4Addr;

use serde::Serialize;

use crate::model::{DeviceId, IfId};

/// Why a packet went no further.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IcmpError {
    /// Type 3 code 0, `Destination Net Unreachable`.
    NetUnreachable,
    /// Type 3 code 1, `Destination Host Unreachable` (ARP failed).
    HostUnreachable,
    /// Type 11 code 0, `Time to live exceeded`.
    TtlExceeded,
}

/// One router or host a packet visited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub device: DeviceId,
    pub ingress: Option<IfId>,
    pub egress: Option<IfId>,
    /// TTL of the packet as it arrived.
    pub ttl_in: u8,
}

/// The fate of one probe (echo request, or traceroute/tracepath probe with a given TTL).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeOutcome {
    /// The source has no route: `connect: Network is unreachable`.
    LocalNoRoute,
    /// The destination answered (echo reply, or port unreachable for a traceroute probe).
    Reply { from: Ipv4Addr, ttl: u8 },
    /// An ICMP error came back.
    Error { from: Ipv4Addr, error: IcmpError, ttl: u8 },
    /// Nothing came back; `reason` says where and why the request or its answer died.
    Lost { reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub outcome: ProbeOutcome,
    /// Round trip in microseconds (virtual link delays), when something came back.
    pub rtt_us: u64,
    /// Source address the request carried when it left the source.
    pub src: Option<Ipv4Addr>,
    /// The request's path, then the answer's path.
    pub forward: Vec<Hop>,
    pub back: Vec<Hop>,
}

/// What a probe is: an ICMP echo request (ping) or a UDP datagram to a high port
/// (traceroute/tracepath), which the destination answers with ICMP port unreachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProbeKind {
    Echo,
    Udp { dst_port: u16 },
}

/// Send one probe from `from` to `dst` with the given initial TTL and follow it and its answer
/// through the FIBs of `st`. `seq` takes part in the ECMP flow hash only for UDP probes (their
/// port changes per probe); echo requests of one ping are one flow.
pub fn probe(
    net: &crate::model::Network,
    st: &crate::engine::State,
    from: DeviceId,
    dst: Ipv4Addr,
    ttl: u8,
    kind: ProbeKind,
    seq: u32,
) -> Probe {
    let _ = (net, st, from, dst, ttl, kind, seq);
    Probe {
        outcome: ProbeOutcome::LocalNoRoute,
        rtt_us: 0,
        src: None,
        forward: Vec::new(),
        back: Vec::new(),
    }
}
