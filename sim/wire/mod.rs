//! Packets on the wire. Every capture fabsim shows — the tcpdump text view and the pcap files
//! — renders one record type, [`Frame`]: value representations of the headers (smoltcp-style
//! `Repr`s), built from what the simulation did (the data-plane walk's hops, the BGP engine's
//! messages, the OSPF engine's packets) and turned into bytes only by [`emit`]. Must not
//! decide anything about routing.
//!
//! Module map: `emit` (bytes, with `pnet_packet`), `frames` (the walk's hops on one interface
//! as frames; MAC addresses), `bgp` (BGP messages, RFC 4271/6793/7911), `bgp_read` (the
//! same messages from a real speaker's bytes, errors as NOTIFICATION codes), `tcp` (a BGP session's
//! TCP connection: handshake, sequence and acknowledgement numbers, segments), `ospf` (OSPFv2
//! hellos and LS Updates, RFC 2328: headers, LSAs, both checksums), `pcap` (the file, with
//! `pcap-file`).

pub mod bgp;
pub mod bgp_read;
mod emit;
pub mod frames;
pub mod ospf;
pub mod pcap;
pub mod tcp;

use std::net::Ipv4Addr;

pub use emit::{frame_bytes, ipv4_bytes};

/// One Ethernet frame as it crossed an interface, at a virtual time (µs since time 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub at_us: u64,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub ip: Ipv4Repr,
}

/// An IPv4 datagram. The identification field is 0 and DF is clear: fabsim does not model
/// the kernel's IP ID generator or path-MTU discovery (FIDELITY.md "Captures").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub body: IpBody,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpBody {
    Icmp(IcmpRepr),
    /// IP-in-IP (protocol 4).
    Ipip(Box<Ipv4Repr>),
    Udp(UdpRepr),
    Tcp(TcpRepr),
    /// OSPFv2 (protocol 89).
    Ospf(Box<ospf::OspfRepr>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub body: UdpBody,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UdpBody {
    /// `len` data bytes (traceroute's probes carry zeros: traceroute.c allocates them zeroed).
    Data(usize),
    /// A VXLAN header (flags I, `vni`) and the inner Ethernet frame.
    Vxlan {
        vni: u32,
        src_mac: [u8; 6],
        dst_mac: [u8; 6],
        inner: Box<Ipv4Repr>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IcmpRepr {
    EchoRequest {
        id: u16,
        seq: u16,
        data: usize,
    },
    EchoReply {
        id: u16,
        seq: u16,
        data: usize,
    },
    /// Type 3 with its code (0 net, 1 host, 3 port unreachable), quoting the datagram.
    DestUnreachable {
        code: u8,
        quoted: Box<Ipv4Repr>,
    },
    /// Type 11 code 0 (TTL exceeded in transit), quoting the datagram.
    TimeExceeded {
        quoted: Box<Ipv4Repr>,
    },
}

/// TCP flag bits (RFC 793 §3.1).
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// The MSS option (SYN segments only).
    pub mss: Option<u16>,
    pub payload: Vec<u8>,
}
