use super::*;
use crate::wire::bgp::encode;

fn path(id: u32) -> Advertised {
    let attrs = Arc::new(PathAttrs {
        as_path: vec![65011, 4_200_000_001, 65000],
        origin: BgpOrigin::Incomplete,
        local_pref: None,
        med: Some(7),
    });
    Advertised {
        id,
        next_hop: Ipv4Addr::new(10, 0, 11, 0),
        attrs,
    }
}

fn net(s: &str) -> Ipv4Net {
    s.parse().unwrap()
}

#[test]
fn open_round_trips_with_4_octet_as_and_add_path() {
    for (rx, tx) in [(false, false), (true, false), (false, true), (true, true)] {
        let m = BgpMessage::Open {
            asn: 4_200_000_001,
            hold_s: 90,
            router_id: Ipv4Addr::new(10, 11, 99, 1),
            add_path_rx: rx,
            add_path_tx: tx,
        };
        assert_eq!(decode(&encode(&m), false), Ok(m));
    }
}

#[test]
fn update_keepalive_and_notification_round_trip() {
    for add_path in [false, true] {
        let m = BgpMessage::Update {
            add_path,
            withdrawn: vec![(net("10.66.52.0/24"), if add_path { 3 } else { 0 })],
            announced: vec![],
        };
        assert_eq!(decode(&encode(&m), add_path), Ok(m));
        let m = BgpMessage::Update {
            add_path,
            withdrawn: vec![],
            announced: vec![
                (net("10.66.111.0/24"), path(if add_path { 7 } else { 0 })),
                (net("10.96.0.0/12"), path(if add_path { 9 } else { 0 })),
                (net("0.0.0.0/0"), path(0)),
            ],
        };
        assert_eq!(decode(&encode(&m), add_path), Ok(m));
    }
    for m in [BgpMessage::Keepalive, BgpMessage::Notification { code: 6, subcode: 2 }] {
        assert_eq!(decode(&encode(&m), false), Ok(m));
    }
}

#[test]
fn message_len_waits_for_the_whole_message() {
    let bytes = encode(&BgpMessage::Keepalive);
    assert_eq!(message_len(&bytes[..10]), Ok(None));
    assert_eq!(message_len(&bytes), Ok(Some(19)));
    let mut two = bytes.clone();
    two.extend_from_slice(&bytes);
    assert_eq!(message_len(&two), Ok(Some(19)));
}

fn code(r: Result<impl std::fmt::Debug, Error>) -> (u8, u8) {
    let e = r.expect_err("malformed input must be refused");
    (e.code, e.subcode)
}

#[test]
fn malformed_headers_are_refused_with_rfc_4271_codes() {
    let mut m = encode(&BgpMessage::Keepalive);
    m[3] = 0;
    assert_eq!(code(message_len(&m)), (1, 1));
    let mut m = encode(&BgpMessage::Keepalive);
    m[17] = 18;
    assert_eq!(code(message_len(&m)), (1, 2));
    let mut m = encode(&BgpMessage::Keepalive);
    m[18] = 9;
    assert_eq!(code(decode(&m, false)), (1, 3));
    let mut m = encode(&BgpMessage::Keepalive);
    m.push(0);
    m[17] = 20;
    assert_eq!(code(decode(&m, false)), (1, 2));
}

fn open_bytes() -> Vec<u8> {
    encode(&BgpMessage::Open {
        asn: 65000,
        hold_s: 240,
        router_id: Ipv4Addr::new(127, 0, 0, 2),
        add_path_rx: true,
        add_path_tx: false,
    })
}

#[test]
fn malformed_opens_are_refused_with_rfc_4271_codes() {
    let mut m = open_bytes();
    m[19] = 3;
    assert_eq!(code(decode(&m, false)), (2, 1));
    let mut m = open_bytes();
    m[22..24].copy_from_slice(&2u16.to_be_bytes());
    assert_eq!(code(decode(&m, false)), (2, 6));
    let mut m = open_bytes();
    m[24..28].fill(0);
    assert_eq!(code(decode(&m, false)), (2, 3));
    // No optional parameters at all: no 4-octet AS capability.
    let mut m = open_bytes()[..29].to_vec();
    m[28] = 0;
    m[17] = 29;
    assert_eq!(code(decode(&m, false)), (2, 7));
}

fn update_with(attrs: &[u8]) -> Vec<u8> {
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(attrs);
    body.extend_from_slice(&[24, 10, 66, 111]);
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(2);
    m.extend(body);
    m
}

const ORIGIN: [u8; 4] = [0x40, 1, 1, 0];
const AS_PATH: [u8; 9] = [0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe8];
const NEXT_HOP: [u8; 7] = [0x40, 3, 4, 10, 0, 11, 1];

#[test]
fn malformed_updates_are_refused_with_rfc_4271_codes() {
    let ok = [&ORIGIN[..], &AS_PATH, &NEXT_HOP].concat();
    let got = decode(&update_with(&ok), false);
    assert!(
        matches!(&got, Ok(BgpMessage::Update { announced, .. }) if announced.len() == 1 && announced[0].1.attrs.as_path == [65000]),
        "{got:?}"
    );
    // Missing NEXT_HOP.
    assert_eq!(
        code(decode(&update_with(&[&ORIGIN[..], &AS_PATH].concat()), false)),
        (3, 3)
    );
    // ORIGIN 5.
    let bad = [&[0x40, 1, 1, 5][..], &AS_PATH, &NEXT_HOP].concat();
    assert_eq!(code(decode(&update_with(&bad), false)), (3, 6));
    // NEXT_HOP of 3 octets.
    let bad = [&ORIGIN[..], &AS_PATH, &[0x40, 3, 3, 10, 0, 11]].concat();
    assert_eq!(code(decode(&update_with(&bad), false)), (3, 5));
    // AS_PATH segment claiming two ASNs but holding one.
    let bad = [&ORIGIN[..], &[0x40, 2, 6, 2, 2, 0, 0, 0xfd, 0xe8], &NEXT_HOP].concat();
    assert_eq!(code(decode(&update_with(&bad), false)), (3, 11));
    // An attribute running past the list.
    let bad = [&ORIGIN[..], &AS_PATH, &[0x40, 3, 9, 10, 0, 11, 1]].concat();
    assert_eq!(code(decode(&update_with(&bad), false)), (3, 1));
    // Unknown well-known attribute.
    let bad = [&ok[..], &[0x40, 99, 0]].concat();
    assert_eq!(code(decode(&update_with(&bad), false)), (3, 2));
    // A prefix longer than 32 bits.
    let mut bad = update_with(&ok);
    let at = bad.len() - 4;
    bad[at] = 33;
    assert_eq!(code(decode(&bad, false)), (3, 10));
}

#[test]
fn every_truncation_and_byte_flip_is_an_error_or_a_message_never_a_panic() {
    let samples = [
        open_bytes(),
        update_with(&[&ORIGIN[..], &AS_PATH, &NEXT_HOP].concat()),
        encode(&BgpMessage::Notification { code: 6, subcode: 4 }),
    ];
    for m in samples {
        for cut in 0..m.len() {
            let mut t = m[..cut].to_vec();
            if t.len() >= 18 {
                t[16..18].copy_from_slice(&(cut as u16).to_be_bytes());
            }
            let _ = decode(&t, false);
            let _ = decode(&t, true);
        }
        for i in 0..m.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut t = m.clone();
                t[i] = v;
                let _ = decode(&t, false);
                let _ = decode(&t, true);
            }
        }
    }
}
