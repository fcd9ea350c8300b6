//! BGP messages as bytes, from RFC 4271 §4 (header, OPEN, UPDATE, NOTIFICATION, KEEPALIVE),
//! RFC 5492 (capabilities), RFC 6793 (4-octet AS: the capability, AS_TRANS in the OPEN and
//! 4-octet AS_PATH on a session where both sides sent it — always, since every speaker fabsim
//! models does), RFC 4760 (the IPv4 unicast multiprotocol capability) and RFC 7911 (ADD-PATH
//! capability, path identifiers before each NLRI and withdrawn prefix when negotiated).
//!
//! Written here rather than with `bgp-rs` 0.6: its AS_PATH encoder writes 2-octet ASNs
//! whenever every ASN of the path fits in 16 bits (`ASPath::encode`, `has_4_byte_asns`), which
//! is wrong on a session that negotiated 4-octet AS; the tests decode these bytes with
//! `bgp-rs`'s reader, which handles both capabilities.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::engine::{Advertised, BgpMessage, BgpOrigin, PathAttrs};

/// RFC 4271 §4.1: no message is longer.
const MAX_MESSAGE: usize = 4096;
const HEADER: usize = 19;
const OPEN: u8 = 1;
const UPDATE: u8 = 2;
const NOTIFICATION: u8 = 3;
const KEEPALIVE: u8 = 4;
/// RFC 6793 §9.
const AS_TRANS: u16 = 23456;
const AFI_IPV4: u16 = 1;
const SAFI_UNICAST: u8 = 1;

/// The bytes of `msg` as the sender puts them on the TCP stream: one BGP message, or for an
/// UPDATE as many as its withdrawals and path-attribute groups need (each at most 4096 bytes).
pub fn encode(msg: &BgpMessage) -> Vec<u8> {
    match msg {
        BgpMessage::Open {
            asn,
            hold_s,
            router_id,
            add_path_rx,
            add_path_tx,
        } => message(OPEN, &open(*asn, *hold_s, *router_id, *add_path_rx, *add_path_tx)),
        BgpMessage::Keepalive => message(KEEPALIVE, &[]),
        BgpMessage::Notification { code, subcode } => message(NOTIFICATION, &[*code, *subcode]),
        BgpMessage::Update {
            add_path,
            withdrawn,
            announced,
        } => update(*add_path, withdrawn, announced),
    }
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    let len = u16::try_from(HEADER + body.len()).unwrap_or(u16::MAX);
    m.extend_from_slice(&len.to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn open(asn: u32, hold_s: u32, router_id: Ipv4Addr, add_path_rx: bool, add_path_tx: bool) -> Vec<u8> {
    let my_as = u16::try_from(asn).unwrap_or(AS_TRANS);
    let mut caps = Vec::new();
    let mut cap = |code: u8, value: &[u8]| {
        caps.push(code);
        caps.push(value.len() as u8);
        caps.extend_from_slice(value);
    };
    let [a0, a1] = AFI_IPV4.to_be_bytes();
    cap(1, &[a0, a1, 0, SAFI_UNICAST]);
    cap(2, &[]);
    cap(65, &asn.to_be_bytes());
    // RFC 7911 §4: Send/Receive 1 = receive, 2 = send, 3 = both.
    let send_receive = u8::from(add_path_rx) | u8::from(add_path_tx) << 1;
    if send_receive != 0 {
        cap(69, &[a0, a1, SAFI_UNICAST, send_receive]);
    }
    let mut b = vec![4];
    b.extend_from_slice(&my_as.to_be_bytes());
    b.extend_from_slice(&u16::try_from(hold_s).unwrap_or(u16::MAX).to_be_bytes());
    b.extend_from_slice(&router_id.octets());
    // One optional parameter of type 2 (capabilities) holding them all.
    b.push((caps.len() + 2) as u8);
    b.push(2);
    b.push(caps.len() as u8);
    b.extend_from_slice(&caps);
    b
}

/// NLRI (or a withdrawn route): [path identifier,] length in bits, the prefix's significant
/// octets.
fn nlri(add_path: bool, prefix: Ipv4Net, path_id: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(9);
    if add_path {
        b.extend_from_slice(&path_id.to_be_bytes());
    }
    b.push(prefix.prefix_len());
    let octets = usize::from(prefix.prefix_len()).div_ceil(8);
    b.extend_from_slice(&prefix.network().octets()[..octets]);
    b
}

fn attribute(flags: u8, code: u8, value: &[u8]) -> Vec<u8> {
    const EXTENDED_LENGTH: u8 = 0x10;
    let mut b = Vec::with_capacity(value.len() + 4);
    match u8::try_from(value.len()) {
        Ok(len) => b.extend_from_slice(&[flags, code, len]),
        Err(_) => {
            b.extend_from_slice(&[flags | EXTENDED_LENGTH, code]);
            b.extend_from_slice(&(value.len() as u16).to_be_bytes());
        }
    }
    b.extend_from_slice(value);
    b
}

/// Path attributes in type-code order: ORIGIN, AS_PATH (4-octet AS_SEQUENCE segments of at
/// most 255 ASNs), NEXT_HOP, MULTI_EXIT_DISC, LOCAL_PREF (only set on iBGP sessions).
fn path_attributes(a: &PathAttrs, next_hop: Ipv4Addr) -> Vec<u8> {
    const WELL_KNOWN: u8 = 0x40;
    const OPTIONAL: u8 = 0x80;
    let origin = match a.origin {
        BgpOrigin::Igp => 0,
        BgpOrigin::Egp => 1,
        BgpOrigin::Incomplete => 2,
    };
    let mut b = attribute(WELL_KNOWN, 1, &[origin]);
    let mut path = Vec::new();
    for seg in a.as_path.chunks(255) {
        path.push(2);
        path.push(seg.len() as u8);
        for asn in seg {
            path.extend_from_slice(&asn.to_be_bytes());
        }
    }
    b.extend(attribute(WELL_KNOWN, 2, &path));
    b.extend(attribute(WELL_KNOWN, 3, &next_hop.octets()));
    if let Some(med) = a.med {
        b.extend(attribute(OPTIONAL, 4, &med.to_be_bytes()));
    }
    if let Some(lp) = a.local_pref {
        b.extend(attribute(WELL_KNOWN, 5, &lp.to_be_bytes()));
    }
    b
}

/// UPDATE messages: the withdrawals first, then one message per attribute set and next hop
/// with every NLRI that shares them (in the order given), split where a message would pass 4096 bytes.
fn update(add_path: bool, withdrawn: &[(Ipv4Net, u32)], announced: &[(Ipv4Net, Advertised)]) -> Vec<u8> {
    let mut out = Vec::new();
    let room = |fixed: usize| MAX_MESSAGE - HEADER - 4 - fixed;
    let mut chunk: Vec<u8> = Vec::new();
    for (prefix, id) in withdrawn {
        let w = nlri(add_path, *prefix, *id);
        if chunk.len() + w.len() > room(0) {
            out.extend(withdraw_message(&chunk));
            chunk.clear();
        }
        chunk.extend(w);
    }
    if !chunk.is_empty() {
        out.extend(withdraw_message(&chunk));
    }
    let mut groups: Vec<((&PathAttrs, Ipv4Addr), Vec<u8>)> = Vec::new();
    for (prefix, path) in announced {
        let n = nlri(add_path, *prefix, path.id);
        let set = (&*path.attrs, path.next_hop);
        match groups.iter_mut().find(|(a, _)| *a == set) {
            Some((_, nlris)) => nlris.extend(n),
            None => groups.push((set, n)),
        }
    }
    for ((attrs, next_hop), nlris) in groups {
        let pa = path_attributes(attrs, next_hop);
        let mut start = 0;
        while start < nlris.len() {
            // Split only between NLRIs: walk them by their encoded lengths.
            let mut end = start;
            while end < nlris.len() {
                let len = nlri_len(add_path, &nlris[end..]);
                if end - start + len > room(pa.len()) {
                    break;
                }
                end += len;
            }
            let mut body = vec![0, 0];
            body.extend_from_slice(&(pa.len() as u16).to_be_bytes());
            body.extend_from_slice(&pa);
            body.extend_from_slice(&nlris[start..end]);
            out.extend(message(UPDATE, &body));
            start = end.max(start + 1);
        }
    }
    out
}

/// The encoded length of the NLRI at the start of `b`.
fn nlri_len(add_path: bool, b: &[u8]) -> usize {
    let skip = if add_path { 4 } else { 0 };
    let bits = b.get(skip).copied().unwrap_or(0);
    skip + 1 + usize::from(bits).div_ceil(8)
}

fn withdraw_message(routes: &[u8]) -> Vec<u8> {
    let mut body = (routes.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(routes);
    body.extend_from_slice(&[0, 0]);
    message(UPDATE, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn keepalive_is_19_bytes_and_open_carries_as_trans_for_4_octet_asns() {
        assert_eq!(encode(&BgpMessage::Keepalive).len(), 19);
        let open = encode(&BgpMessage::Open {
            asn: 4_200_000_001,
            hold_s: 240,
            router_id: Ipv4Addr::new(10, 0, 137, 12),
            add_path_rx: true,
            add_path_tx: true,
        });
        assert_eq!(&open[20..22], &AS_TRANS.to_be_bytes());
        // The 4-octet AS capability carries the real ASN; ADD-PATH says send and receive.
        let caps = &open[19 + 10..];
        assert!(caps.windows(6).any(|w| w == [65, 4, 0xfa, 0x56, 0xea, 0x01]));
        assert!(caps.windows(6).any(|w| w == [69, 4, 0, 1, 1, 3]));
    }

    #[test]
    fn updates_group_by_attributes_and_split_at_4096_bytes() {
        let attrs = Arc::new(PathAttrs {
            as_path: vec![65000, 65001],
            origin: BgpOrigin::Igp,
            local_pref: None,
            med: None,
        });
        let announced: Vec<_> = (0..1000u32)
            .map(|i| {
                let p = Ipv4Net::new(Ipv4Addr::from(0x0a00_0000 + (i << 8)), 24).unwrap();
                let path = Advertised {
                    id: i + 1,
                    next_hop: Ipv4Addr::new(10, 0, 11, 1),
                    attrs: attrs.clone(),
                };
                (p, path)
            })
            .collect();
        let bytes = encode(&BgpMessage::Update {
            add_path: true,
            withdrawn: vec![],
            announced,
        });
        let mut lens = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let len = usize::from(u16::from_be_bytes([bytes[at + 16], bytes[at + 17]]));
            assert!(len <= MAX_MESSAGE);
            lens.push(len);
            at += len;
        }
        assert_eq!(at, bytes.len());
        // 1000 NLRIs of 8 bytes do not fit one message.
        assert!(lens.len() >= 2, "{lens:?}");
    }
}
