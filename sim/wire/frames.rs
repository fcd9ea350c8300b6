//! The frames a capture on one interface sees, from the data-plane walk's hops: each hop that
//! sent a packet out of the interface or received one on it, with the headers the walk
//! recorded there (NAT already applied, outer and inner TTLs, the quoted datagram of an ICMP
//! error). MAC addresses are the interfaces' own (`ip link`'s, `views::linux::iface_mac`):
//! the sender's port and the port of the next hop that answered ARP (a proxy-ARP answer
//! included).

use std::net::Ipv4Addr;

use super::{Frame, IcmpRepr, IpBody, Ipv4Repr, UdpBody, UdpRepr};
use crate::dataplane::{Encap, Headers, Hop, IcmpError, Inner, Payload, ProbeKind, Quoted};
use crate::model::{IfId, Network, Tunnel};
use crate::views::linux::iface_mac;

/// What the probe carries beyond the walk's headers: the echo's identifier, sequence number
/// and data length, or a UDP probe's source port and data length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeData {
    pub id: u16,
    pub seq: u16,
    pub data: usize,
    pub src_port: u16,
}

/// The frames of one walk direction (`hops`, started at `start_us`) seen on `iface`.
pub fn frames_on(net: &Network, hops: &[Hop], start_us: u64, iface: IfId, probe: &ProbeData) -> Vec<Frame> {
    seen_on(net, hops, start_us, iface, |h| datagram(net, h, probe))
}

/// The frames of one walk direction on `iface`, each hop's headers made into a datagram by
/// `datagram` (None: not rendered).
pub(super) fn seen_on(
    net: &Network,
    hops: &[Hop],
    start_us: u64,
    iface: IfId,
    datagram: impl Fn(&Headers) -> Option<Ipv4Repr>,
) -> Vec<Frame> {
    let mut out = Vec::new();
    for (i, hop) in hops.iter().enumerate() {
        let at_us = start_us + hop.at_us;
        let next_rx = hops.get(i + 1).and_then(|n| n.ingress);
        if let (Some(h), Some(rx)) = (hop.sent.filter(|_| hop.egress == Some(iface)), next_rx) {
            if let Some(ip) = datagram(&h) {
                out.push(Frame {
                    at_us,
                    src_mac: iface_mac(net, iface),
                    dst_mac: iface_mac(net, rx),
                    ip,
                });
            }
        }
        let prev_tx = i.checked_sub(1).and_then(|p| hops[p].egress);
        if let (Some(h), Some(tx)) = (hop.received.filter(|_| hop.ingress == Some(iface)), prev_tx) {
            if let Some(ip) = datagram(&h) {
                out.push(Frame {
                    at_us,
                    src_mac: iface_mac(net, tx),
                    dst_mac: iface_mac(net, iface),
                    ip,
                });
            }
        }
    }
    out
}

/// The datagram behind a hop's headers; None for a TCP probe (curl/wget's SYN), which no
/// capture renders yet.
fn datagram(net: &Network, h: &Headers, probe: &ProbeData) -> Option<Ipv4Repr> {
    let body = match h.payload {
        Payload::Request(kind) => request(kind, probe)?,
        Payload::EchoReply => IpBody::Icmp(IcmpRepr::EchoReply {
            id: probe.id,
            seq: probe.seq,
            data: probe.data,
        }),
        Payload::PortUnreachable => IpBody::Icmp(IcmpRepr::DestUnreachable {
            code: 3,
            quoted: Box::new(quoted(net, h.quoted?, probe)?),
        }),
        Payload::Error(e) => {
            let quoted = Box::new(quoted(net, h.quoted?, probe)?);
            IpBody::Icmp(match e {
                IcmpError::NetUnreachable => IcmpRepr::DestUnreachable { code: 0, quoted },
                IcmpError::HostUnreachable => IcmpRepr::DestUnreachable { code: 1, quoted },
                IcmpError::TtlExceeded => IcmpRepr::TimeExceeded { quoted },
                IcmpError::PortUnreachable => IcmpRepr::DestUnreachable { code: 3, quoted },
            })
        }
    };
    Some(wrap(net, h.src, h.dst, h.ttl, h.inner, body))
}

fn request(kind: ProbeKind, probe: &ProbeData) -> Option<IpBody> {
    match kind {
        ProbeKind::Echo => Some(IpBody::Icmp(IcmpRepr::EchoRequest {
            id: probe.id,
            seq: probe.seq,
            data: probe.data,
        })),
        ProbeKind::Udp { dst_port } => Some(IpBody::Udp(UdpRepr {
            src_port: probe.src_port,
            dst_port,
            body: UdpBody::Data(probe.data),
        })),
        ProbeKind::Tcp { .. } => None,
    }
}

fn quoted(net: &Network, q: Quoted, probe: &ProbeData) -> Option<Ipv4Repr> {
    Some(wrap(net, q.src, q.dst, q.ttl, q.inner, request(q.kind, probe)?))
}

/// `body` in a datagram from `src` to `dst`, inside the encapsulation `inner` describes when
/// there is one (then `src`/`dst`/`ttl` are the outer header's).
pub(super) fn wrap(
    net: &Network,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    inner: Option<Inner>,
    body: IpBody,
) -> Ipv4Repr {
    let Some(inner) = inner else {
        return Ipv4Repr { src, dst, ttl, body };
    };
    let carried = Box::new(Ipv4Repr {
        src: inner.src,
        dst: inner.dst,
        ttl: inner.ttl,
        body,
    });
    let body = match inner.encap {
        Encap::Ipip => IpBody::Ipip(carried),
        Encap::Vxlan {
            src_port,
            dst_port,
            vni,
        } => {
            let (src_mac, dst_mac) = vtep_macs(net, src, dst);
            IpBody::Udp(UdpRepr {
                src_port,
                dst_port,
                body: UdpBody::Vxlan {
                    vni,
                    src_mac,
                    dst_mac,
                    inner: carried,
                },
            })
        }
    };
    Ipv4Repr { src, dst, ttl, body }
}

/// The inner frame's MACs: the sending VXLAN device's own (the device whose `local` is the
/// outer source) and the MAC of the remote VTEP behind the outer destination in its FDB.
fn vtep_macs(net: &Network, outer_src: Ipv4Addr, outer_dst: Ipv4Addr) -> ([u8; 6], [u8; 6]) {
    net.interfaces
        .iter()
        .find_map(|i| match &i.tunnel {
            Some(Tunnel::Vxlan(v)) if v.local == outer_src => {
                let remote = v.remotes.iter().find(|r| r.node_addr == outer_dst).map(|r| r.mac);
                Some((v.mac, remote.unwrap_or([0; 6])))
            }
            _ => None,
        })
        .unwrap_or(([0; 6], [0; 6]))
}
