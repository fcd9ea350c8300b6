//! Frames to bytes, with `pnet_packet`'s mutable packet views and checksum functions: IPv4
//! header checksums, ICMP checksums over the whole message, UDP and TCP checksums over the
//! IPv4 pseudo-header.

use pnet_base::MacAddr;
use pnet_packet::ethernet::{EtherTypes, MutableEthernetPacket};
use pnet_packet::icmp::{self, IcmpCode, IcmpType, MutableIcmpPacket};
use pnet_packet::ip::IpNextHeaderProtocols;
use pnet_packet::ipv4::{self, MutableIpv4Packet};
use pnet_packet::tcp::{self, MutableTcpPacket, TcpOption};
use pnet_packet::udp::{self, MutableUdpPacket};

use super::{Frame, IcmpRepr, IpBody, Ipv4Repr, TcpRepr, UdpBody, UdpRepr};

/// An ICMP error quotes the offending datagram up to 576 bytes in all (Linux `icmp_send`:
/// 576 minus the IP and ICMP headers).
const MAX_QUOTE: usize = 576 - 20 - 8;

const ETHERNET_HEADER: usize = 14;
const IPV4_HEADER: usize = 20;
const UDP_HEADER: usize = 8;
const VXLAN_HEADER: usize = 8;
/// VXLAN flags: the I bit (a valid VNI), RFC 7348 §5.
const VXLAN_FLAG_I: u8 = 0x08;

/// The whole Ethernet frame (no FCS: captures on Linux do not include it).
pub fn frame_bytes(f: &Frame) -> Vec<u8> {
    ethernet(f.src_mac, f.dst_mac, &ipv4_bytes(&f.ip))
}

fn ethernet(src: [u8; 6], dst: [u8; 6], payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; ETHERNET_HEADER + payload.len()];
    if let Some(mut eth) = MutableEthernetPacket::new(&mut buf) {
        eth.set_destination(MacAddr::from(dst));
        eth.set_source(MacAddr::from(src));
        eth.set_ethertype(EtherTypes::Ipv4);
        eth.set_payload(payload);
    }
    buf
}

/// One IPv4 datagram with its payload, checksums filled in.
pub fn ipv4_bytes(ip: &Ipv4Repr) -> Vec<u8> {
    let (proto, payload) = match &ip.body {
        IpBody::Icmp(m) => (IpNextHeaderProtocols::Icmp, icmp_bytes(m)),
        IpBody::Ipip(inner) => (IpNextHeaderProtocols::Ipv4, ipv4_bytes(inner)),
        IpBody::Udp(u) => (IpNextHeaderProtocols::Udp, udp_bytes(ip, u)),
        IpBody::Tcp(t) => (IpNextHeaderProtocols::Tcp, tcp_bytes(ip, t)),
        IpBody::Ospf(o) => (IpNextHeaderProtocols::OspfigP, super::ospf::ospf_bytes(o)),
    };
    // Routing protocols mark their packets; the probes fabsim renders leave the ToS at 0.
    let tos = match &ip.body {
        IpBody::Ospf(_) => super::ospf::IP_TOS,
        _ => 0,
    };
    let total = IPV4_HEADER + payload.len();
    let mut buf = vec![0u8; total];
    if let Some(mut p) = MutableIpv4Packet::new(&mut buf) {
        p.set_version(4);
        p.set_header_length((IPV4_HEADER / 4) as u8);
        p.set_dscp(tos >> 2);
        p.set_ecn(tos & 0x03);
        p.set_total_length(u16::try_from(total).unwrap_or(u16::MAX));
        p.set_ttl(ip.ttl);
        p.set_next_level_protocol(proto);
        p.set_source(ip.src);
        p.set_destination(ip.dst);
        p.set_payload(&payload);
        let sum = ipv4::checksum(&p.to_immutable());
        p.set_checksum(sum);
    }
    buf
}

fn icmp_bytes(m: &IcmpRepr) -> Vec<u8> {
    // type, code, the 4 bytes after the checksum, the rest.
    let (ty, code, word, rest): (u8, u8, [u8; 4], Vec<u8>) = match m {
        IcmpRepr::EchoRequest { id, seq, data } | IcmpRepr::EchoReply { id, seq, data } => {
            let ty = if matches!(m, IcmpRepr::EchoRequest { .. }) {
                8
            } else {
                0
            };
            let [a, b] = id.to_be_bytes();
            let [c, d] = seq.to_be_bytes();
            (ty, 0, [a, b, c, d], echo_data(*data))
        }
        IcmpRepr::DestUnreachable { code, quoted } => (3, *code, [0; 4], quote(quoted)),
        IcmpRepr::TimeExceeded { quoted } => (11, 0, [0; 4], quote(quoted)),
    };
    let mut buf = vec![0u8; 8 + rest.len()];
    if let Some(mut p) = MutableIcmpPacket::new(&mut buf) {
        p.set_icmp_type(IcmpType(ty));
        p.set_icmp_code(IcmpCode(code));
        let mut body = word.to_vec();
        body.extend_from_slice(&rest);
        p.set_payload(&body);
        let sum = icmp::checksum(&p.to_immutable());
        p.set_checksum(sum);
    }
    buf
}

/// Echo data: iputils fills the data with the byte pattern 0, 1, 2, … (ping.c `fill` default
/// pattern). The timeval iputils writes over its first bytes is not modelled.
fn echo_data(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

fn quote(ip: &Ipv4Repr) -> Vec<u8> {
    let mut b = ipv4_bytes(ip);
    b.truncate(MAX_QUOTE);
    b
}

fn udp_bytes(ip: &Ipv4Repr, u: &UdpRepr) -> Vec<u8> {
    let payload = match &u.body {
        UdpBody::Data(len) => vec![0u8; *len],
        UdpBody::Vxlan {
            vni,
            src_mac,
            dst_mac,
            inner,
        } => {
            let mut v = vec![0u8; VXLAN_HEADER];
            v[0] = VXLAN_FLAG_I;
            v[4..7].copy_from_slice(&vni.to_be_bytes()[1..]);
            v.extend(ethernet(*src_mac, *dst_mac, &ipv4_bytes(inner)));
            v
        }
    };
    let len = UDP_HEADER + payload.len();
    let mut buf = vec![0u8; len];
    if let Some(mut p) = MutableUdpPacket::new(&mut buf) {
        p.set_source(u.src_port);
        p.set_destination(u.dst_port);
        p.set_length(u16::try_from(len).unwrap_or(u16::MAX));
        p.set_payload(&payload);
        let sum = udp::ipv4_checksum(&p.to_immutable(), &ip.src, &ip.dst);
        p.set_checksum(sum);
    }
    buf
}

fn tcp_bytes(ip: &Ipv4Repr, t: &TcpRepr) -> Vec<u8> {
    // MSS is 4 bytes, so the header stays a multiple of 32 bits without padding.
    let options: Vec<TcpOption> = t.mss.map(TcpOption::mss).into_iter().collect();
    let header = 20 + 4 * options.len();
    let mut buf = vec![0u8; header + t.payload.len()];
    if let Some(mut p) = MutableTcpPacket::new(&mut buf) {
        p.set_source(t.src_port);
        p.set_destination(t.dst_port);
        p.set_sequence(t.seq);
        p.set_acknowledgement(t.ack);
        p.set_data_offset((header / 4) as u8);
        p.set_flags(t.flags);
        p.set_window(t.window);
        p.set_options(&options);
        p.set_payload(&t.payload);
        let sum = tcp::ipv4_checksum(&p.to_immutable(), &ip.src, &ip.dst);
        p.set_checksum(sum);
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_packet::icmp::IcmpPacket;
    use pnet_packet::ipv4::Ipv4Packet;
    use pnet_packet::Packet;

    fn echo(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Ipv4Repr {
        Ipv4Repr {
            src: src.into(),
            dst: dst.into(),
            ttl,
            body: IpBody::Icmp(IcmpRepr::EchoRequest {
                id: 1,
                seq: 2,
                data: 56,
            }),
        }
    }

    #[test]
    fn checksums_verify_and_errors_quote_the_datagram() {
        let req = echo([10, 0, 11, 1], [10, 66, 207, 66], 1);
        let err = Ipv4Repr {
            src: [10, 1, 11, 0].into(),
            dst: [10, 0, 11, 1].into(),
            ttl: 64,
            body: IpBody::Icmp(IcmpRepr::TimeExceeded {
                quoted: Box::new(req.clone()),
            }),
        };
        let bytes = ipv4_bytes(&err);
        let ip = Ipv4Packet::new(&bytes).unwrap();
        assert_eq!(ip.get_checksum(), ipv4::checksum(&ip));
        let m = IcmpPacket::new(ip.payload()).unwrap();
        assert_eq!(m.get_checksum(), icmp::checksum(&m));
        // 4 unused bytes, then the whole 84-byte request (tcpdump's `length 92`).
        assert_eq!(m.payload().len(), 4 + 84);
        assert_eq!(&m.payload()[4..], &ipv4_bytes(&req)[..]);
    }

    #[test]
    fn quotes_stop_at_576_bytes() {
        let mut big = echo([10, 0, 0, 1], [10, 0, 0, 2], 5);
        big.body = IpBody::Icmp(IcmpRepr::EchoRequest {
            id: 1,
            seq: 1,
            data: 1400,
        });
        let err = Ipv4Repr {
            src: [10, 0, 0, 3].into(),
            dst: [10, 0, 0, 1].into(),
            ttl: 64,
            body: IpBody::Icmp(IcmpRepr::DestUnreachable {
                code: 0,
                quoted: Box::new(big),
            }),
        };
        assert_eq!(ipv4_bytes(&err).len(), 576);
    }
}
