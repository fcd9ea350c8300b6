//! `--pcap DEVICE:IF=FILE`: the files decode back (pcap-file, pnet_packet, bgp-rs) to what the
//! seed lab shows — s1's IPIP pod-to-pod ping on k-w3 ens5 (seed-lab.md s1 "IPIP on the wire",
//! C27), s4's BGP session Leaf-1 ↔ k-master with its 32 ADD-PATH paths (seed-lab.md s4, C-checks
//! on `show ip bgp`), a runbook's pings and traceroute as printed, s6's watched ping through
//! its outage (C71) — and tshark reads them with no malformed packet.

mod common;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use bgp_rs::{Capabilities, Message, NLRIEncoding, PathAttribute, Reader};
use common::fabsim;
use pcap_file::pcap::PcapReader;
use pnet_packet::ethernet::{EtherTypes, EthernetPacket};
use pnet_packet::icmp::{self, IcmpPacket};
use pnet_packet::ip::IpNextHeaderProtocols;
use pnet_packet::ipv4::{self, Ipv4Packet};
use pnet_packet::tcp::{self, TcpFlags, TcpPacket};
use pnet_packet::udp::UdpPacket;
use pnet_packet::Packet;

/// A frame of a capture: its time (µs since the epoch) and bytes.
struct Captured {
    at_us: u128,
    data: Vec<u8>,
}

fn read_pcap(path: &Path) -> Vec<Captured> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = PcapReader::new(file).expect("a pcap header");
    assert_eq!(reader.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("a well-formed record");
        assert_eq!(p.orig_len as usize, p.data.len(), "nothing truncated");
        out.push(Captured {
            at_us: p.timestamp.as_micros(),
            data: p.data.into_owned(),
        });
    }
    out
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The IPv4 datagram in an Ethernet frame, its header checksum checked.
fn ipv4_of(frame: &[u8]) -> Ipv4Packet<'_> {
    let eth = EthernetPacket::new(frame).expect("Ethernet");
    assert_eq!(eth.get_ethertype(), EtherTypes::Ipv4);
    let ip = Ipv4Packet::new(&frame[14..]).expect("IPv4");
    assert_eq!(ip.get_checksum(), ipv4::checksum(&ip), "IPv4 header checksum");
    ip
}

/// One IPIP echo as the test reads it: outer and inner (src, dst, ttl), ICMP type and seq.
#[derive(Debug, PartialEq, Eq)]
struct Echo {
    outer: (Ipv4Addr, Ipv4Addr, u8),
    inner: (Ipv4Addr, Ipv4Addr, u8),
    icmp_type: u8,
    seq: u16,
}

fn ipip_echo(frame: &[u8]) -> Echo {
    let outer = ipv4_of(frame);
    assert_eq!(outer.get_next_level_protocol(), IpNextHeaderProtocols::Ipv4, "IP-in-IP");
    let inner = Ipv4Packet::new(outer.payload()).expect("inner IPv4");
    assert_eq!(inner.get_checksum(), ipv4::checksum(&inner));
    assert_eq!(inner.get_next_level_protocol(), IpNextHeaderProtocols::Icmp);
    let m = IcmpPacket::new(inner.payload()).expect("ICMP");
    assert_eq!(m.get_checksum(), icmp::checksum(&m), "ICMP checksum");
    Echo {
        outer: (outer.get_source(), outer.get_destination(), outer.get_ttl()),
        inner: (inner.get_source(), inner.get_destination(), inner.get_ttl()),
        icmp_type: m.get_icmp_type().0,
        seq: u16::from_be_bytes([m.payload()[2], m.payload()[3]]),
    }
}

const S1_PING: [&str; 9] = [
    "ping",
    "scenarios/seed-lab.yaml",
    "--step",
    "s1",
    "test-pod",
    "10.66.207.66",
    "-c",
    "3",
    "--capture",
];

/// s1: test-pod (k-w3) pings the controller on k-w1 over the IPIP mesh; k-w3 ens5 carries it.
fn s1_capture(name: &str) -> (PathBuf, String) {
    let file = tmp(name);
    let pcap = format!("k-w3:ens5={}", file.display());
    let mut args = S1_PING.to_vec();
    args.extend(["k-w3:ens5", "--pcap", &pcap]);
    let out = fabsim(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (file, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn s1_ipip_ping_on_k_w3_ens5() {
    let (file, text) = s1_capture("s1-ipip.pcap");
    let frames = read_pcap(&file);
    let echoes: Vec<Echo> = frames.iter().map(|f| ipip_echo(&f.data)).collect();
    let (node_w3, node_w1) = ("10.0.137.142".parse().unwrap(), "10.0.137.15".parse().unwrap());
    let (pod, controller) = ("10.66.122.194".parse().unwrap(), "10.66.207.66".parse().unwrap());
    let mut want = Vec::new();
    // The test pod runs busybox, which numbers its requests from 0, as its `seq=` lines show.
    assert!(text.contains("64 bytes from 10.66.207.66: seq=0 ttl=62"), "{text}");
    for seq in 0..=2 {
        // Outer ens5 to ens5 with the node's TTL 64; inner TTL 63: the sending node forwarded
        // it once (the pod receives the reply with 62 after k-w3 forwards it: seed s1b).
        want.push(Echo {
            outer: (node_w3, node_w1, 64),
            inner: (pod, controller, 63),
            icmp_type: 8,
            seq,
        });
        want.push(Echo {
            outer: (node_w1, node_w3, 64),
            inner: (controller, pod, 63),
            icmp_type: 0,
            seq,
        });
    }
    assert_eq!(echoes, want);
    // The text view renders the same records: one line per frame, with the same times.
    let lines: Vec<&str> = text
        .split("tcpdump -n -i ens5\n")
        .nth(1)
        .expect("the tcpdump view")
        .lines()
        .skip(2)
        .collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    for (line, f) in lines.iter().zip(&frames) {
        let secs = (f.at_us / 1_000_000) % 86_400;
        let stamp = format!(
            "{:02}:{:02}:{:02}.{:06}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            f.at_us % 1_000_000
        );
        assert!(line.starts_with(&stamp), "{line} at {stamp}");
    }
    // Same input, same bytes.
    let (again, _) = s1_capture("s1-ipip-again.pcap");
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());
}

#[test]
fn traceroute_errors_quote_the_probe_as_received() {
    // k-w3 → k-master at s0 (seed-lab.md s0, C07's path): the first probe (TTL 1) dies at
    // Leaf-3, whose time-exceeded quotes the UDP probe with the TTL it arrived with.
    let file = tmp("s0-traceroute.pcap");
    let pcap = format!("k-w3:ens3={}", file.display());
    let out = fabsim(&[
        "traceroute",
        "scenarios/seed-lab.yaml",
        "--step",
        "s0",
        "k-w3",
        "k-master",
        "--pcap",
        &pcap,
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let frames = read_pcap(&file);
    let probe = ipv4_of(&frames[0].data);
    assert_eq!(probe.get_next_level_protocol(), IpNextHeaderProtocols::Udp);
    assert_eq!(probe.get_ttl(), 1);
    let udp = UdpPacket::new(probe.payload()).unwrap();
    assert_eq!(udp.get_destination(), 33434);
    let answer = ipv4_of(&frames[1].data);
    assert_eq!(answer.get_source(), "10.3.33.0".parse::<Ipv4Addr>().unwrap());
    let m = IcmpPacket::new(answer.payload()).unwrap();
    assert_eq!((m.get_icmp_type().0, m.get_icmp_code().0), (11, 0));
    assert_eq!(m.get_checksum(), icmp::checksum(&m));
    let quoted = Ipv4Packet::new(&m.payload()[4..]).unwrap();
    assert_eq!(quoted.get_ttl(), 1);
    assert_eq!(quoted.get_destination(), probe.get_destination());
    assert_eq!(&m.payload()[4..], probe.packet(), "the whole probe is quoted");
    // The last probe reached k-master: port unreachable quoting its UDP header.
    let last = ipv4_of(&frames.last().unwrap().data);
    let m = IcmpPacket::new(last.payload()).unwrap();
    assert_eq!((m.get_icmp_type().0, m.get_icmp_code().0), (3, 3));
}

/// One TCP segment of a capture.
struct Segment {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: Vec<u8>,
}

fn tcp_segments(frames: &[Captured]) -> Vec<Segment> {
    frames
        .iter()
        .filter_map(|f| {
            let ip = ipv4_of(&f.data);
            (ip.get_next_level_protocol() == IpNextHeaderProtocols::Tcp).then(|| {
                let t = TcpPacket::new(ip.payload()).unwrap();
                let sum = tcp::ipv4_checksum(&t, &ip.get_source(), &ip.get_destination());
                assert_eq!(t.get_checksum(), sum, "TCP checksum");
                Segment {
                    src: ip.get_source(),
                    dst: ip.get_destination(),
                    ttl: ip.get_ttl(),
                    seq: t.get_sequence(),
                    ack: t.get_acknowledgement(),
                    flags: t.get_flags(),
                    payload: t.payload().to_vec(),
                }
            })
        })
        .collect()
}

/// The byte stream one side sent, checking that its segments follow each other.
fn stream(segs: &[&Segment]) -> Vec<u8> {
    let mut next = None;
    let mut bytes = Vec::new();
    for s in segs {
        if s.flags & TcpFlags::SYN != 0 {
            next = Some(s.seq.wrapping_add(1));
            continue;
        }
        assert_eq!(Some(s.seq), next, "contiguous sequence numbers");
        bytes.extend_from_slice(&s.payload);
        let fin = u32::from(s.flags & TcpFlags::FIN != 0);
        next = Some(s.seq.wrapping_add(s.payload.len() as u32 + fin));
    }
    bytes
}

/// The s4 run captured on Leaf-1 Ethernet2 (k-master's link).
fn s4_capture() -> PathBuf {
    let file = tmp("s4-bgp.pcap");
    let pcap = format!("Leaf-1:Ethernet2={}", file.display());
    let out = fabsim(&["run", "scenarios/seed-lab.yaml", "--until", "s4", "--pcap", &pcap]);
    assert!(out.status.code() == Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    file
}

#[test]
fn s4_leaf1_k_master_session_carries_the_32_add_path_paths() {
    let file = s4_capture();
    let segs = tcp_segments(&read_pcap(&file));
    let (master, leaf): (Ipv4Addr, Ipv4Addr) = ("10.0.11.1".parse().unwrap(), "10.0.11.0".parse().unwrap());
    let up: Vec<&Segment> = segs.iter().filter(|s| s.src == master && s.dst == leaf).collect();
    let down: Vec<&Segment> = segs.iter().filter(|s| s.src == leaf && s.dst == master).collect();
    // Here k-master opened the connection. Leaf-1's single-hop eBGP sends with TTL 1;
    // Calico's template gives the node's peer `multihop;`, which BIRD sends with TTL 64.
    assert_eq!(up[0].flags, TcpFlags::SYN);
    assert_eq!(down[0].flags, TcpFlags::SYN | TcpFlags::ACK);
    assert_eq!(down[0].ack, up[0].seq.wrapping_add(1));
    assert!(down.iter().all(|s| s.ttl == 1));
    assert!(up.iter().all(|s| s.ttl == 64));
    let (up_bytes, down_bytes) = (stream(&up), stream(&down));

    let leaf_msgs = bgp_messages(&down_bytes, &Capabilities::default());
    let Message::Open(leaf_open) = &leaf_msgs[0] else {
        panic!("Leaf-1 opens with OPEN: {:?}", leaf_msgs[0])
    };
    assert_eq!(leaf_open.peer_asn, 65011);
    let master_msgs = bgp_messages(&up_bytes, &Capabilities::default());
    let Message::Open(open) = &master_msgs[0] else {
        panic!("k-master opens with OPEN: {:?}", master_msgs[0])
    };
    assert_eq!(open.peer_asn, 65000);
    let caps = Capabilities::from_parameters(open.parameters.clone());
    assert!(caps.FOUR_OCTET_ASN_SUPPORT);
    assert!(caps.EXTENDED_PATH_NLRI_SUPPORT, "ADD-PATH offered");
    assert!(matches!(master_msgs[1], Message::KeepAlive));

    // Decode k-master's UPDATEs as the session negotiated them (path ids, 4-octet AS paths)
    // and replay them: what Leaf-1 holds from k-master at the end of s4.
    let mut held: BTreeMap<(String, u32), Vec<u32>> = BTreeMap::new();
    for m in bgp_messages(&up_bytes, &caps) {
        let Message::Update(u) = m else { continue };
        for w in &u.withdrawn_routes {
            held.remove(&nlri_key(w));
        }
        let mut path = Vec::new();
        for a in &u.attributes {
            match a {
                PathAttribute::AS_PATH(p) => path = p.sequence().expect("AS_SEQUENCE only"),
                PathAttribute::NEXT_HOP(nh) => assert_eq!(nh.to_string(), "10.0.11.1"),
                PathAttribute::LOCAL_PREF(_) => panic!("no LOCAL_PREF on eBGP"),
                _ => {}
            }
        }
        for n in &u.announced_routes {
            held.insert(nlri_key(n), path.clone());
        }
    }
    assert_eq!(held.len(), 32, "PfxRcd 32 (seed-lab.md s4): {held:?}");
    let per_prefix = |p: &str| held.keys().filter(|(q, _)| q == p).count();
    assert_eq!(per_prefix("10.66.52.0/24"), 5);
    assert_eq!(per_prefix("10.66.95.0/24"), 5);
    assert_eq!(per_prefix("10.66.111.0/24"), 1);
    assert_eq!(per_prefix("10.66.217.0/24"), 5);
    assert_eq!(per_prefix("10.96.0.0/12"), 16);
    let paths_of = |p: &str| -> Vec<&Vec<u32>> { held.iter().filter(|((q, _), _)| q == p).map(|(_, v)| v).collect() };
    assert!(paths_of("10.66.111.0/24").contains(&&vec![65000]));
    assert!(paths_of("10.96.0.0/12").contains(&&vec![65000, 65003, 65002, 65001]));
    assert!(paths_of("10.66.52.0/24").contains(&&vec![65000, 65002, 65001, 65003]));
}

fn nlri_key(n: &NLRIEncoding) -> (String, u32) {
    match n {
        NLRIEncoding::IP_WITH_PATH_ID((p, id)) => (format!("{p}"), *id),
        other => panic!("an ADD-PATH NLRI, not {other:?}"),
    }
}

fn bgp_messages(bytes: &[u8], caps: &Capabilities) -> Vec<Message> {
    let mut reader = Reader {
        stream: std::io::Cursor::new(bytes),
        capabilities: caps,
    };
    let mut out = Vec::new();
    while (reader.stream.position() as usize) < bytes.len() {
        let (_, m) = reader.read().expect("a well-formed BGP message");
        out.push(m);
    }
    out
}

/// tshark's fields of a capture, one line per packet.
fn tshark(file: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output();
    match out {
        Ok(o) => {
            assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
            Some(String::from_utf8_lossy(&o.stdout).into_owned())
        }
        Err(e) => {
            let required = std::env::var("FABSIM_TSHARK").is_ok_and(|v| v == "required");
            assert!(!required, "FABSIM_TSHARK=required but tshark cannot run: {e}");
            eprintln!("skipped: tshark is not installed ({e}); .ci/run installs it");
            None
        }
    }
}

/// tshark's expert info has no malformed packet and no error.
fn assert_clean(file: &Path) {
    let Some(expert) = tshark(file, &["-q", "-z", "expert"]) else {
        return;
    };
    assert!(!expert.contains("Malformed"), "{expert}");
    assert!(!expert.contains("Errors ("), "{expert}");
}

#[test]
fn tshark_reads_the_same_fields_and_no_malformed_packet() {
    let (s1, _) = s1_capture("s1-tshark.pcap");
    let Some(fields) = tshark(
        &s1,
        &[
            "-T",
            "fields",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ip.ttl",
            "-e",
            "icmp.type",
        ],
    ) else {
        return;
    };
    assert_clean(&s1);
    let rows: Vec<&str> = fields.lines().collect();
    assert_eq!(rows.len(), 6, "{fields}");
    assert_eq!(
        rows[0],
        "10.0.137.142,10.66.122.194\t10.0.137.15,10.66.207.66\t64,63\t8"
    );
    assert_eq!(
        rows[1],
        "10.0.137.15,10.66.207.66\t10.0.137.142,10.66.122.194\t64,63\t0"
    );

    let s4 = s4_capture();
    assert_clean(&s4);
    let filter = "bgp.type == 2 && ip.src == 10.0.11.1 && ip.dst == 10.0.11.0";
    let Some(ids) = tshark(
        &s4,
        &[
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "bgp.nlri_path_id",
            "-e",
            "bgp.update.path_attribute.as_path_segment.as4",
        ],
    ) else {
        return;
    };
    let announced: usize = ids
        .lines()
        .map(|l| {
            l.split('\t')
                .next()
                .unwrap_or("")
                .split(',')
                .filter(|s| !s.is_empty())
                .count()
        })
        .sum();
    // No path was withdrawn on this session during s4: the 32 announced are the 32 held.
    assert_eq!(announced, 32, "{ids}");
    assert!(ids.contains("65000,65003,65002,65001"), "{ids}");
}

/// One OSPF packet of a capture, its IP, MAC and OSPF header checked: to AllSPFRouters or
/// AllDRouters with the group's MAC, TTL 1, ToS 0xc0, version 2, the length, the checksum
/// (RFC 2328 D.4), null authentication.
struct Ospf {
    at_us: u128,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    kind: u8,
    router_id: Ipv4Addr,
    body: Vec<u8>,
}

fn ospf_packets(frames: &[Captured]) -> Vec<Ospf> {
    let mut out = Vec::new();
    for f in frames {
        let ip = ipv4_of(&f.data);
        if ip.get_next_level_protocol() != IpNextHeaderProtocols::OspfigP {
            continue;
        }
        let dst = ip.get_destination();
        assert!(dst == Ipv4Addr::new(224, 0, 0, 5) || dst == Ipv4Addr::new(224, 0, 0, 6));
        assert_eq!(&f.data[..6], &[1, 0, 0x5e, 0, 0, dst.octets()[3]], "multicast MAC");
        assert_eq!(ip.get_ttl(), 1);
        assert_eq!((ip.get_dscp() << 2) | ip.get_ecn(), 0xc0, "ToS internetwork control");
        let o = ip.payload();
        assert_eq!(o[0], 2, "OSPFv2");
        assert_eq!(usize::from(u16::from_be_bytes([o[2], o[3]])), o.len());
        assert_eq!(
            pnet_packet::util::checksum(o, 6),
            u16::from_be_bytes([o[12], o[13]]),
            "OSPF checksum"
        );
        assert_eq!(&o[14..24], &[0; 10], "null authentication");
        out.push(Ospf {
            at_us: f.at_us,
            src: ip.get_source(),
            dst,
            kind: o[1],
            router_id: Ipv4Addr::new(o[4], o[5], o[6], o[7]),
            body: o[24..].to_vec(),
        });
    }
    out
}

fn addr_at(b: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3])
}

/// A hello's fields (RFC 2328 A.3.2).
#[derive(Debug)]
struct Hello {
    mask: Ipv4Addr,
    hello_s: u16,
    options: u8,
    priority: u8,
    dead_s: u32,
    dr: Ipv4Addr,
    neighbors: Vec<Ipv4Addr>,
}

fn hello(p: &Ospf) -> Hello {
    let b = &p.body;
    Hello {
        mask: addr_at(b, 0),
        hello_s: u16::from_be_bytes([b[4], b[5]]),
        options: b[6],
        priority: b[7],
        dead_s: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        dr: addr_at(b, 12),
        neighbors: (20..b.len()).step_by(4).map(|at| addr_at(b, at)).collect(),
    }
}

/// The LSAs of an LS Update as (type, LS ID, advertising router, sequence number, age), each
/// LSA's Fletcher checksum verified (RFC 2328 §12.1.7: both sums over the LSA but its age are
/// zero modulo 255).
fn lsas(p: &Ospf) -> Vec<(u8, Ipv4Addr, Ipv4Addr, u32, u16)> {
    let b = &p.body;
    let count = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..count {
        let len = usize::from(u16::from_be_bytes([b[at + 18], b[at + 19]]));
        let lsa = &b[at..at + len];
        let (mut c0, mut c1) = (0u32, 0u32);
        for &x in &lsa[2..] {
            c0 = (c0 + u32::from(x)) % 255;
            c1 = (c1 + c0) % 255;
        }
        assert_eq!((c0, c1), (0, 0), "LSA Fletcher checksum");
        assert_eq!(lsa[2], 0x02, "options: E");
        let seq = u32::from_be_bytes([lsa[12], lsa[13], lsa[14], lsa[15]]);
        out.push((
            lsa[3],
            addr_at(lsa, 4),
            addr_at(lsa, 8),
            seq,
            u16::from_be_bytes([lsa[0], lsa[1]]),
        ));
        at += len;
    }
    assert_eq!(at, b.len(), "the LSAs fill the packet");
    out
}

/// The s1 run captured on Spine-1 Ethernet3 (Leaf-3's uplink) and on k-w3 ens5.
fn s1_run_capture() -> (PathBuf, PathBuf) {
    let (uplink, ens5) = (tmp("s1-run-uplink.pcap"), tmp("s1-run-ens5.pcap"));
    let a = format!("Spine-1:Ethernet3={}", uplink.display());
    let b = format!("k-w3:ens5={}", ens5.display());
    let out = fabsim(&[
        "run",
        "scenarios/seed-lab.yaml",
        "--until",
        "s1",
        "--pcap",
        &a,
        "--pcap",
        &b,
    ]);
    assert!(out.status.code() == Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    (uplink, ens5)
}

#[test]
fn run_pcap_has_ospf_hellos_ls_updates_and_the_checks_pings() {
    let (uplink, ens5) = s1_run_capture();
    let frames = read_pcap(&uplink);
    assert!(frames.windows(2).all(|w| w[0].at_us <= w[1].at_us), "time order");
    let ospf = ospf_packets(&frames);
    let (spine, leaf3) = (Ipv4Addr::new(10, 33, 99, 0), Ipv4Addr::new(10, 33, 99, 1));
    // Hellos both ways every 10 s: seed-lab.md s0's FULL/DR, Leaf-3 (router id 10.33.99.1) the
    // DR; each lists the other once it has heard it.
    let hellos = |from: Ipv4Addr| -> Vec<(u128, Hello, Ipv4Addr)> {
        ospf.iter()
            .filter(|p| p.kind == 1 && p.src == from)
            .map(|p| {
                assert_eq!(p.dst, Ipv4Addr::new(224, 0, 0, 5), "hellos go to AllSPFRouters");
                (p.at_us, hello(p), p.router_id)
            })
            .collect()
    };
    let (from_leaf, from_spine) = (hellos(leaf3), hellos(spine));
    assert!(from_leaf.len() > 100 && from_spine.len() > 100);
    assert!(
        from_leaf.windows(2).all(|w| w[1].0 - w[0].0 == 10_000_000),
        "HelloInterval"
    );
    let (_, last, rid) = from_leaf.last().unwrap();
    assert_eq!(*rid, leaf3);
    assert_eq!(
        (last.mask, last.hello_s, last.options, last.priority, last.dead_s),
        (Ipv4Addr::new(255, 255, 255, 254), 10, 0x02, 1, 40)
    );
    assert_eq!(last.dr, leaf3, "Leaf-3 is the DR");
    let spine_rid = from_spine.last().unwrap().2;
    assert_eq!(last.neighbors, [spine_rid]);
    assert_eq!(from_spine.last().unwrap().1.neighbors, [leaf3]);
    assert!(from_leaf[0].1.neighbors.is_empty(), "the first hello has heard no one");

    // The flooding: router- and network-LSAs cross the link, each instance once per direction
    // at most, sequence numbers from 0x80000001 up, one per new instance.
    let updates: Vec<&Ospf> = ospf.iter().filter(|p| p.kind == 4).collect();
    assert!(!updates.is_empty(), "LS Updates");
    assert!(
        ospf.iter().all(|p| p.kind == 1 || p.kind == 4),
        "hellos and LS Updates only"
    );
    let mut seen: BTreeMap<(u8, Ipv4Addr, Ipv4Addr), Vec<u32>> = BTreeMap::new();
    for u in &updates {
        for (ty, id, adv, seq, age) in lsas(u) {
            assert!((1..=3600).contains(&age), "{age}");
            seen.entry((ty, id, adv)).or_default().push(seq);
        }
    }
    assert!(seen.contains_key(&(1, leaf3, leaf3)), "Leaf-3's router-LSA: {seen:?}");
    assert!(
        seen.contains_key(&(2, leaf3, leaf3)),
        "the link's network-LSA from its DR"
    );
    for seqs in seen.values() {
        // Signed numbers from InitialSequenceNumber 0x80000001 (RFC 2328 §12.1.6).
        let signed: Vec<i32> = seqs.iter().map(|s| *s as i32).collect();
        assert!(signed.iter().all(|s| *s > i32::MIN), "{seqs:x?}");
        assert!(signed.windows(2).all(|w| w[0] <= w[1]), "{seqs:x?}");
        assert!(signed[0] < i32::MIN + 100, "a young LSA: {seqs:x?}");
    }

    // k-w3's ens5 (the NAT cloud segment): Spine-1's hellos on its DHCP-addressed Ethernet4
    // (eos-linux-formats.md §1: OSPF runs on it, no neighbour), and s1's C27 ping from the
    // test pod, IPIP between the nodes, when the check ran.
    let frames = read_pcap(&ens5);
    let on_ens5 = ospf_packets(&frames);
    let cloud: Vec<Hello> = on_ens5.iter().filter(|p| p.kind == 1).map(hello).collect();
    assert!(!cloud.is_empty());
    // No OSPF router hears them; the tap does, every HelloInterval.
    let sent: Vec<u128> = on_ens5.iter().filter(|p| p.kind == 1).map(|p| p.at_us).collect();
    assert!(sent.windows(2).all(|w| w[1] - w[0] == 10_000_000), "HelloInterval");
    assert!(cloud
        .iter()
        .all(|h| h.mask == Ipv4Addr::new(255, 255, 255, 0) && h.neighbors.is_empty()));
    let echoes: Vec<Echo> = frames
        .iter()
        .filter(|f| ipv4_of(&f.data).get_next_level_protocol() == IpNextHeaderProtocols::Ipv4)
        .map(|f| ipip_echo(&f.data))
        .collect();
    let (node_w3, node_w1) = (Ipv4Addr::new(10, 0, 137, 142), Ipv4Addr::new(10, 0, 137, 15));
    let (pod, controller) = (Ipv4Addr::new(10, 66, 122, 194), Ipv4Addr::new(10, 66, 207, 66));
    assert!(
        echoes.contains(&Echo {
            outer: (node_w3, node_w1, 64),
            inner: (pod, controller, 63),
            icmp_type: 8,
            seq: 1,
        }),
        "{echoes:?}"
    );
    assert!(echoes.iter().any(|e| e.icmp_type == 0 && e.inner.0 == controller));
    // C34's `ping -c 1` typed on the test pod: busybox's request, numbered 0 as it printed `seq=0`.
    assert!(
        echoes.contains(&Echo {
            outer: (node_w3, node_w1, 64),
            inner: (pod, controller, 63),
            icmp_type: 8,
            seq: 0,
        }),
        "{echoes:?}"
    );

    // tshark decodes the same hellos and LSAs, with no malformed packet.
    let Some(fields) = tshark(
        &uplink,
        &[
            "-Y",
            "ospf.msg.hello && ip.src == 10.33.99.1",
            "-T",
            "fields",
            "-e",
            "ip.dsfield",
            "-e",
            "ospf.hello.network_mask",
            "-e",
            "ospf.hello.hello_interval",
            "-e",
            "ospf.hello.router_dead_interval",
            "-e",
            "ospf.hello.designated_router",
            "-e",
            "ospf.hello.active_neighbor",
        ],
    ) else {
        return;
    };
    assert_clean(&uplink);
    assert_clean(&ens5);
    let last_row = fields.lines().last().unwrap_or_default();
    assert_eq!(
        last_row,
        format!("0xc0\t255.255.255.254\t10\t40\t10.33.99.1\t{spine_rid}")
    );
    // Wireshark 4.0 has no OSPF checksum preference: its detail view checks the header
    // checksum of every packet and says `[correct]` or `[incorrect, should be …]`.
    let detail = tshark(&uplink, &["-Y", "ospf", "-V"]).unwrap_or_default();
    let packets = detail.matches("Open Shortest Path First").count();
    let correct = detail
        .lines()
        .filter(|l| l.trim_start().starts_with("Checksum: 0x") && l.ends_with("[correct]"))
        .count();
    assert_eq!(
        (correct, packets),
        (ospf.len(), ospf.len()),
        "every OSPF checksum [correct]"
    );
    assert!(!detail.contains("incorrect"));
    let types = tshark(&uplink, &["-Y", "ospf.msg.lsupdate", "-T", "fields", "-e", "ospf.lsa"]).unwrap_or_default();
    assert!(types.contains('1') && types.contains('2'), "{types}");
}

/// The pcap timestamp (µs since the Unix epoch) of virtual time `ms`: fabsim's virtual time 0
/// is 2025-08-01 00:00:00 UTC (`views::clock::EPOCH_DATE`).
fn wall_us(ms: u64) -> u128 {
    (1_754_006_400_000 + u128::from(ms)) * 1000
}

/// One ICMP message of a capture, not tunnelled: when, IP (src, dst, ttl), ICMP type and code,
/// and the echo's (id, seq) — for an error, those of the echo request it quotes, or the
/// quoted UDP probe's (source, destination) ports.
#[derive(Debug, PartialEq, Eq)]
struct Icmp {
    at_us: u128,
    ip: (Ipv4Addr, Ipv4Addr, u8),
    kind: (u8, u8),
    about: (u16, u16),
}

/// The ICMP messages of `frames` (checksums checked), other frames left out.
fn icmp_messages(frames: &[Captured]) -> Vec<Icmp> {
    let mut out = Vec::new();
    for f in frames {
        let ip = ipv4_of(&f.data);
        if ip.get_next_level_protocol() != IpNextHeaderProtocols::Icmp {
            continue;
        }
        let m = IcmpPacket::new(ip.payload()).expect("ICMP");
        assert_eq!(m.get_checksum(), icmp::checksum(&m), "ICMP checksum");
        let kind = (m.get_icmp_type().0, m.get_icmp_code().0);
        let words = |b: &[u8]| (u16::from_be_bytes([b[0], b[1]]), u16::from_be_bytes([b[2], b[3]]));
        let about = match kind.0 {
            0 | 8 => words(m.payload()),
            // The unused word, then the quoted datagram: its header and first 8 bytes at least.
            _ => {
                let quoted = Ipv4Packet::new(&m.payload()[4..]).expect("quoted IPv4");
                match quoted.get_next_level_protocol() {
                    IpNextHeaderProtocols::Icmp => words(&quoted.payload()[4..]),
                    IpNextHeaderProtocols::Udp => words(quoted.payload()),
                    other => panic!("quotes {other}"),
                }
            }
        };
        out.push(Icmp {
            at_us: f.at_us,
            ip: (ip.get_source(), ip.get_destination(), ip.get_ttl()),
            kind,
            about,
        });
    }
    out
}

/// `fabsim run FILE --until STEP --pcap DEVICE:IF=…`: the capture and the JSON report.
fn run_capture(file: &str, until: &str, point: &str, name: &str) -> (PathBuf, serde_json::Value) {
    let pcap = tmp(name);
    let tap = format!("{point}={}", pcap.display());
    let out = fabsim(&["run", file, "--until", until, "--format", "json", "--pcap", &tap]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = serde_json::from_slice(&out.stdout).expect("a JSON report");
    (pcap, report)
}

/// The report's step `id`.
fn step<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    let steps = report["steps"].as_array().expect("steps");
    steps
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

#[test]
fn run_pcap_has_the_runbook_commands_pings_and_traceroute() {
    // tests/data/pcap/runbook.yaml: on k-master, `ping -c 3 10.3.33.1` and `traceroute -n
    // 10.3.33.1` as runbook lines, then an `output:` check's `ping -c 2 10.2.22.1`, all at the
    // step's start (commands take no virtual time), on k-master's ens3.
    let (file, report) = run_capture(
        "tests/data/pcap/runbook.yaml",
        "commands",
        "k-master:ens3",
        "runbook-k-master.pcap",
    );
    let commands = step(&report, "commands");
    let t0 = wall_us(commands["start_ms"].as_u64().expect("start_ms"));
    let frames = read_pcap(&file);
    assert!(frames.windows(2).all(|w| w[0].at_us <= w[1].at_us), "time order");
    let icmp = icmp_messages(&frames);
    let echoes_with = |peer: Ipv4Addr| -> Vec<&Icmp> {
        icmp.iter()
            .filter(|m| matches!(m.kind.0, 0 | 8) && (m.ip.0 == peer || m.ip.1 == peer))
            .collect()
    };
    let k_master = Ipv4Addr::new(10, 0, 11, 1);
    // What the ping printed (`icmp_seq=N ttl=61 time=4.00 ms`) is what crossed ens3: a request
    // a second with the host's TTL 64, each reply 4 ms later with the TTL it was printed with.
    let printed = commands["commands"][0]["output"].as_str().expect("the ping's output");
    let mut want = Vec::new();
    for seq in 1..=3u16 {
        assert!(
            printed.contains(&format!("64 bytes from 10.3.33.1: icmp_seq={seq} ttl=61 time=4.00 ms")),
            "{printed}"
        );
        let sent = t0 + u128::from(seq - 1) * 1_000_000;
        let k_w3 = Ipv4Addr::new(10, 3, 33, 1);
        want.push(Icmp {
            at_us: sent,
            ip: (k_master, k_w3, 64),
            kind: (8, 0),
            about: (1, seq),
        });
        want.push(Icmp {
            at_us: sent + 4000,
            ip: (k_w3, k_master, 61),
            kind: (0, 0),
            about: (1, seq),
        });
    }
    let got: Vec<&Icmp> = echoes_with(Ipv4Addr::new(10, 3, 33, 1));
    assert_eq!(got, want.iter().collect::<Vec<_>>());
    // The `output:` check's ping, at the same instant, to k-w2 (`icmp_seq=2 ttl=61` checked).
    let check: Vec<(u8, u16, u8)> = echoes_with(Ipv4Addr::new(10, 2, 22, 1))
        .iter()
        .map(|m| (m.kind.0, m.about.1, m.ip.2))
        .collect();
    assert_eq!(check, [(8, 1, 64), (0, 1, 61), (8, 2, 64), (0, 2, 61)]);
    assert_eq!(echoes_with(Ipv4Addr::new(10, 2, 22, 1))[0].at_us, t0);

    // The traceroute: 3 UDP probes per TTL to ports 33434 up, each sent when the previous was
    // answered; the hops that answered are the hops it printed.
    let printed = commands["commands"][1]["output"]
        .as_str()
        .expect("the traceroute's output");
    let probes: Vec<(u128, u8, u16)> = frames
        .iter()
        .filter_map(|f| {
            let ip = ipv4_of(&f.data);
            let udp = (ip.get_next_level_protocol() == IpNextHeaderProtocols::Udp)
                .then(|| UdpPacket::new(ip.payload()))??;
            Some((f.at_us, ip.get_ttl(), udp.get_destination()))
        })
        .collect();
    let ttls: Vec<u8> = probes.iter().map(|p| p.1).collect();
    assert_eq!(ttls, [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    assert!(probes.iter().enumerate().all(|(n, p)| p.2 == 33434 + n as u16));
    assert_eq!(probes[0].0, t0);
    let answers: Vec<&Icmp> = icmp.iter().filter(|m| matches!(m.kind.0, 3 | 11)).collect();
    assert_eq!(answers.len(), 12, "every probe answered");
    let mut hops: Vec<String> = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        // Each answer quotes its probe and comes back before the next probe leaves.
        assert_eq!(a.about.1, probes[i].2, "{a:?}");
        assert!(probes[i].0 < a.at_us && probes.get(i + 1).is_none_or(|p| a.at_us <= p.0));
        let last_hop = i >= 9;
        assert_eq!(a.kind, if last_hop { (3, 3) } else { (11, 0) }, "{a:?}");
        if i % 3 == 0 {
            hops.push(format!("{:2}  {}", i / 3 + 1, a.ip.0));
        }
    }
    for hop in &hops {
        assert!(printed.contains(hop.as_str()), "{hop} in\n{printed}");
    }
    assert_clean(&file);
}

#[test]
fn run_pcap_shows_a_watched_pings_outage_as_unanswered_requests() {
    // seed-lab s6-rollout (C71): the client pings 10.66.111.1 while calico-node restarts node by
    // node; while k-master's BIRD is down Leaf-3 answers Net Unreachable. On the client's ens3:
    // a request per `ping_interval` (1 s) from the step's start, icmp_seq 1, 2, …; replies
    // before and after, Leaf-3's errors (quoting the request) and no reply during the outage.
    let (file, report) = run_capture(
        "scenarios/seed-lab.yaml",
        "s6-rollout",
        "client:ens3",
        "s6-rollout-client.pcap",
    );
    let rollout = step(&report, "s6-rollout");
    let start_ms = rollout["start_ms"].as_u64().expect("start_ms");
    let outage = &rollout["flows"][0]["outages"][0];
    let (first, last) = (
        outage["first_seq"].as_u64().unwrap(),
        outage["last_seq"].as_u64().unwrap(),
    );
    assert!(last - first + 1 >= 4, "C71: at least 4 s lost ({outage})");
    let (client, web, leaf3) = (
        Ipv4Addr::new(10, 4, 44, 1),
        Ipv4Addr::new(10, 66, 111, 1),
        Ipv4Addr::new(10, 4, 44, 0),
    );
    let frames = read_pcap(&file);
    assert!(frames.windows(2).all(|w| w[0].at_us <= w[1].at_us), "time order");
    let watched: Vec<Icmp> = icmp_messages(&frames)
        .into_iter()
        .filter(|m| m.at_us >= wall_us(start_ms))
        .collect();
    let requests: Vec<&Icmp> = watched.iter().filter(|m| m.kind == (8, 0)).collect();
    assert!(requests.len() as u64 > last + 2, "probes after the outage");
    for (i, r) in requests.iter().enumerate() {
        let seq = i as u16 + 1;
        assert_eq!(r.ip, (client, web, 64));
        assert_eq!(r.about, (1, seq));
        assert_eq!(r.at_us, wall_us(start_ms + 1000 * u64::from(seq - 1)), "one a second");
        let answers: Vec<&Icmp> = watched
            .iter()
            .filter(|m| m.kind.0 != 8 && m.about == (1, seq))
            .collect();
        let lost = (first..=last).contains(&u64::from(seq));
        if lost {
            // The outage: no echo reply, only Leaf-3's Net Unreachable for this request.
            let [error] = answers.as_slice() else {
                panic!("seq {seq}: one error, got {answers:?}");
            };
            assert_eq!((error.ip.0, error.ip.1, error.kind), (leaf3, client, (3, 0)));
            assert!(error.at_us > r.at_us);
        } else {
            let [reply] = answers.as_slice() else {
                panic!("seq {seq}: one reply, got {answers:?}");
            };
            assert_eq!((reply.ip, reply.kind), ((web, client, 60), (0, 0)), "C71's ttl=60");
            assert!(reply.at_us > r.at_us);
        }
    }
    assert_eq!(
        outage["from_ms"].as_u64(),
        Some(start_ms + 1000 * (first - 1)),
        "the report's outage is the capture's"
    );
    // Same input, same bytes.
    let (again, _) = run_capture(
        "scenarios/seed-lab.yaml",
        "s6-rollout",
        "client:ens3",
        "s6-rollout-client-again.pcap",
    );
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(&again).unwrap());
    assert_clean(&file);
    // Wireshark pairs requests with their replies (two passes): the outage's requests are the
    // ones it finds no response for.
    let filter = "icmp.resp_not_found && ip.dst == 10.66.111.1";
    if let Some(lost) = tshark(&file, &["-2", "-Y", filter, "-T", "fields", "-e", "icmp.seq"]) {
        let seqs: Vec<u64> = lost.lines().map(|l| l.parse().expect("a seq")).collect();
        assert_eq!(seqs, (first..=last).collect::<Vec<_>>());
    }
}
