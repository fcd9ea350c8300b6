//! OSPFv2 packets (RFC 2328 appendix A) from the engine's OSPF wire log: hellos and LS Updates
//! as frames on one interface, and their bytes — the 24-byte header with the standard IP
//! checksum over the packet (auth type 0, D.4.1), and each LSA with its Fletcher checksum
//! (§12.1.7, the ISO 8473 algorithm of RFC 905 annex B). The engine decides what is sent
//! when; this module only encodes it.
//!
//! IP: to 224.0.0.5 (AllSPFRouters) or 224.0.0.6 (AllDRouters) with their multicast MACs
//! (RFC 1112 §6.4), TTL 1 (A.1), ToS 0xc0 — IP precedence "internetwork control", what
//! Quagga/FRR's ospfd writes into the header it builds (`ospf_write`:
//! `iph.ip_tos = IPTOS_PREC_INTERNETCONTROL`); EOS's value is unverified (FIDELITY.md).

use std::net::Ipv4Addr;

use pnet_packet::util::checksum;

use super::{Frame, IpBody, Ipv4Repr};
use crate::engine::{LsaBody, OspfDest, OspfLsa, OspfPacket, OspfWireRecord};
use crate::model::{IfId, Network};
use crate::views::linux::iface_mac;

/// The IP ToS byte of OSPF packets (IPTOS_PREC_INTERNETCONTROL).
pub const IP_TOS: u8 = 0xc0;
/// OSPF packets never leave their link (RFC 2328 A.1).
const TTL: u8 = 1;
const HEADER: usize = 24;
const LSA_HEADER: usize = 20;
/// What one LS Update may carry: a 1500-byte MTU less the IP and OSPF headers and the LSA
/// count (§13.3: LSAs that do not fit go in further packets).
const MAX_LSU_BODY: usize = 1500 - 20 - HEADER - 4;

/// An OSPF packet: the sender's router id, its area (always the backbone: fabsim treats
/// every `network … area` as one area) and the packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OspfRepr {
    pub router_id: Ipv4Addr,
    pub area: Ipv4Addr,
    pub packet: OspfPacket,
}

/// The frames of every logged OSPF packet that crossed `iface`.
pub fn ospf_frames(net: &Network, records: &[OspfWireRecord], iface: IfId) -> Vec<Frame> {
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.seen_on.contains(&iface)) {
        let group = match r.dst {
            OspfDest::AllSpfRouters => Ipv4Addr::new(224, 0, 0, 5),
            OspfDest::AllDRouters => Ipv4Addr::new(224, 0, 0, 6),
        };
        for packet in split(&r.packet) {
            let ospf = OspfRepr {
                router_id: r.router_id,
                area: Ipv4Addr::UNSPECIFIED,
                packet,
            };
            out.push(Frame {
                at_us: r.at_ms * 1000,
                src_mac: iface_mac(net, r.iface),
                dst_mac: multicast_mac(group),
                ip: Ipv4Repr {
                    src: r.src,
                    dst: group,
                    ttl: TTL,
                    body: IpBody::Ospf(Box::new(ospf)),
                },
            });
        }
    }
    out
}

/// An IPv4 multicast group's MAC: 01:00:5e and the group's low 23 bits (RFC 1112 §6.4).
fn multicast_mac(group: Ipv4Addr) -> [u8; 6] {
    let [_, b, c, d] = group.octets();
    [0x01, 0x00, 0x5e, b & 0x7f, c, d]
}

/// An LS Update too big for one packet as several, LSAs in order.
fn split(p: &OspfPacket) -> Vec<OspfPacket> {
    let OspfPacket::LsUpdate(lsas) = p else {
        return vec![p.clone()];
    };
    let mut out: Vec<Vec<OspfLsa>> = Vec::new();
    let mut size = 0;
    for l in lsas {
        let len = lsa_len(l);
        match out.last_mut() {
            Some(cur) if size + len <= MAX_LSU_BODY => cur.push(l.clone()),
            _ => {
                out.push(vec![l.clone()]);
                size = 0;
            }
        }
        size += len;
    }
    out.into_iter().map(OspfPacket::LsUpdate).collect()
}

fn lsa_len(l: &OspfLsa) -> usize {
    LSA_HEADER
        + match &l.body {
            LsaBody::Router { links, .. } => 4 + 12 * links.len(),
            LsaBody::Network { attached, .. } => 4 + 4 * attached.len(),
            LsaBody::External { .. } => 16,
        }
}

/// The OSPF packet's bytes, both checksums filled in.
pub fn ospf_bytes(o: &OspfRepr) -> Vec<u8> {
    let (ty, body) = match &o.packet {
        OspfPacket::Hello(h) => {
            let mut b = Vec::with_capacity(20 + 4 * h.neighbors.len());
            b.extend(h.mask.octets());
            b.extend(h.hello_interval_s.to_be_bytes());
            b.push(h.options);
            b.push(h.priority);
            b.extend(h.dead_interval_s.to_be_bytes());
            b.extend(h.dr.octets());
            b.extend(h.bdr.octets());
            for n in &h.neighbors {
                b.extend(n.octets());
            }
            (1u8, b)
        }
        OspfPacket::LsUpdate(lsas) => {
            let count = u32::try_from(lsas.len()).unwrap_or(u32::MAX);
            let mut b = count.to_be_bytes().to_vec();
            for l in lsas {
                b.extend(lsa_bytes(l));
            }
            (4u8, b)
        }
    };
    let len = u16::try_from(HEADER + body.len()).unwrap_or(u16::MAX);
    let mut p = vec![2u8, ty];
    p.extend(len.to_be_bytes());
    p.extend(o.router_id.octets());
    p.extend(o.area.octets());
    // Checksum (below), AuType 0 (null authentication), 8 bytes of zero authentication.
    p.extend([0u8; 12]);
    p.extend(body);
    // The checksum skips the authentication field (D.4.1); with null authentication those
    // bytes are zero and add nothing to the sum, so the whole packet is summed.
    let sum = checksum(&p, 6);
    p[12..14].copy_from_slice(&sum.to_be_bytes());
    p
}

/// One LSA with its header, length and Fletcher checksum.
pub fn lsa_bytes(l: &OspfLsa) -> Vec<u8> {
    let mut body = Vec::new();
    match &l.body {
        LsaBody::Router { asbr, links } => {
            body.push(if *asbr { 0x02 } else { 0 });
            body.push(0);
            body.extend(u16::try_from(links.len()).unwrap_or(u16::MAX).to_be_bytes());
            for k in links {
                body.extend(k.id.octets());
                body.extend(k.data.octets());
                // Type, no TOS metrics, the TOS 0 metric.
                body.extend([k.kind, 0]);
                body.extend(k.metric.to_be_bytes());
            }
        }
        LsaBody::Network { mask, attached } => {
            body.extend(mask.octets());
            for r in attached {
                body.extend(r.octets());
            }
        }
        LsaBody::External { mask, e2, metric } => {
            body.extend(mask.octets());
            body.push(if *e2 { 0x80 } else { 0 });
            body.extend(&(*metric).min(0x00ff_ffff).to_be_bytes()[1..]);
            // Forwarding address 0.0.0.0 (send to the ASBR), external route tag 0.
            body.extend([0u8; 8]);
        }
    }
    let len = u16::try_from(LSA_HEADER + body.len()).unwrap_or(u16::MAX);
    let mut b = Vec::with_capacity(usize::from(len));
    b.extend(l.age_s.to_be_bytes());
    b.push(l.options);
    b.push(l.body.ls_type());
    b.extend(l.ls_id.octets());
    b.extend(l.adv_router.octets());
    b.extend(l.seq.to_be_bytes());
    b.extend([0u8, 0]);
    b.extend(len.to_be_bytes());
    b.extend(body);
    // Over the LSA but its age, the checksum field at offset 16 of the LSA (§12.1.7).
    let sum = fletcher(&b[2..], 14);
    b[16..18].copy_from_slice(&sum);
    b
}

/// The ISO 8473 (RFC 905 annex B) checksum of `data` placed at `at`, whose two bytes are zero:
/// the two octets that make both running sums over `data` zero modulo 255.
fn fletcher(data: &[u8], at: usize) -> [u8; 2] {
    let (mut c0, mut c1) = (0i64, 0i64);
    for &b in data {
        c0 = (c0 + i64::from(b)) % 255;
        c1 = (c1 + c0) % 255;
    }
    let len = data.len() as i64;
    let mut x = ((len - at as i64 - 1) * c0 - c1) % 255;
    if x <= 0 {
        x += 255;
    }
    let mut y = 510 - c0 - x;
    if y > 255 {
        y -= 255;
    }
    [x as u8, y as u8]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{OspfHello, RouterLink, OPTIONS_E};

    /// The verification of §12.1.7: both Fletcher sums over the checksummed LSA are 0 mod 255.
    fn fletcher_verifies(lsa: &[u8]) -> bool {
        let (mut c0, mut c1) = (0u32, 0u32);
        for &b in &lsa[2..] {
            c0 = (c0 + u32::from(b)) % 255;
            c1 = (c1 + c0) % 255;
        }
        c0 == 0 && c1 == 0
    }

    fn lsa(age_s: u16, body: LsaBody) -> OspfLsa {
        OspfLsa {
            age_s,
            options: OPTIONS_E,
            ls_id: Ipv4Addr::new(10, 3, 33, 1),
            adv_router: Ipv4Addr::new(10, 3, 33, 1),
            seq: 0x8000_0001,
            body,
        }
    }

    #[test]
    fn lsa_checksums_verify_and_ignore_the_age() {
        let router = lsa(
            1,
            LsaBody::Router {
                asbr: true,
                links: vec![RouterLink {
                    kind: 2,
                    id: Ipv4Addr::new(10, 33, 99, 1),
                    data: Ipv4Addr::new(10, 33, 99, 0),
                    metric: 10,
                }],
            },
        );
        let b = lsa_bytes(&router);
        assert_eq!(b.len(), 20 + 4 + 12);
        assert_eq!(u16::from_be_bytes([b[18], b[19]]), 36, "length");
        assert!(fletcher_verifies(&b));
        let older = lsa_bytes(&OspfLsa { age_s: 3600, ..router });
        assert_eq!(b[16..18], older[16..18], "the age is outside the checksum");
        let ext = lsa_bytes(&lsa(
            2,
            LsaBody::External {
                mask: Ipv4Addr::new(255, 255, 255, 0),
                e2: true,
                metric: 10,
            },
        ));
        assert!(fletcher_verifies(&ext));
        assert_eq!(&ext[24..28], &[0x80, 0, 0, 10], "E bit and metric");
    }

    #[test]
    fn hello_layout_and_checksum() {
        let hello = OspfRepr {
            router_id: Ipv4Addr::new(10, 3, 33, 1),
            area: Ipv4Addr::UNSPECIFIED,
            packet: OspfPacket::Hello(OspfHello {
                mask: Ipv4Addr::new(255, 255, 255, 254),
                hello_interval_s: 10,
                options: OPTIONS_E,
                priority: 1,
                dead_interval_s: 40,
                dr: Ipv4Addr::new(10, 33, 99, 1),
                bdr: Ipv4Addr::UNSPECIFIED,
                neighbors: vec![Ipv4Addr::new(10, 99, 0, 1)],
            }),
        };
        let b = ospf_bytes(&hello);
        assert_eq!(b.len(), 24 + 20 + 4);
        assert_eq!(&b[..4], &[2, 1, 0, 48], "version, type, length");
        assert_eq!(checksum(&b, 6), u16::from_be_bytes([b[12], b[13]]));
        assert_eq!(&b[24 + 4..24 + 8], &[0, 10, OPTIONS_E, 1]);
    }

    #[test]
    fn multicast_macs() {
        assert_eq!(multicast_mac(Ipv4Addr::new(224, 0, 0, 5)), [1, 0, 0x5e, 0, 0, 5]);
        assert_eq!(multicast_mac(Ipv4Addr::new(224, 0, 0, 6)), [1, 0, 0x5e, 0, 0, 6]);
    }
}
