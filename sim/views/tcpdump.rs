//! `tcpdump -n -i IF` on a Linux host while a ping runs: every packet of the ping that crossed
//! the interface, in either direction, in time order, as tcpdump prints it without `-v`.
//!
//! Formats from tcpdump's source: the two banner lines (tcpdump.c, printed before any
//! packet), `IP SRC > DST: ` for each IP header, nested for IP-in-IP (print-ip.c), VXLAN's
//! `SRC.PORT > DST.4789: VXLAN, flags [I] (0x08), vni N` line followed by the inner packet on
//! its own line (print-udp.c, print-vxlan.c, tcpdump 4.99), and the ICMP texts with
//! `, length N` = the ICMP message length (print-icmp.c `icmp_print`). IPIP checked against
//! the seed's capture on k-w3 ens5 (seed-lab.md s1, "IPIP on the wire").

use std::net::Ipv4Addr;

use super::clock::wall_clock;
use super::linux::{ping_send_times, run_pings, PingStyle};
use super::CommandError;
use crate::dataplane::{Probe, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, IfId, Network};
use crate::wire::frames::{frames_on, ProbeData};
use crate::wire::{ipv4_bytes, Frame, IcmpRepr, IpBody, Ipv4Repr, UdpBody};

/// The echo identifier. The real one is the ping socket's port (unprivileged iputils) or the
/// pid (raw socket, busybox as root): incidental, so fabsim fixes it.
const PING_ID: u16 = 1;

/// What one command put on the wire: the packets of a ping or a traceroute, kept from the
/// very probes whose results its text printed, so that a capture and the text never disagree.
/// A command that sends nothing (a `show`, a `ping` that fails before sending) keeps nothing.
pub enum Sent {
    Ping(PingCapture),
    Trace(TraceCapture),
}

impl Sent {
    /// Every frame the command put on `iface`, either way, in time order.
    pub fn frames(&self, net: &Network, iface: IfId) -> Vec<Frame> {
        match self {
            Sent::Ping(p) => p.frames(net, iface),
            Sent::Trace(t) => t.frames(net, iface),
        }
    }
}

/// One ping's echo requests and their fates, with the times the requests left.
pub struct PingCapture {
    /// ICMP data bytes per request (`ping -s`).
    data_bytes: u32,
    /// The first request's icmp_seq: 1 for iputils, 0 for busybox (`ntransmitted` before the
    /// first send); each later request's is one more.
    first_seq: u16,
    probes: Vec<Probe>,
    /// When each request left, µs after the first (iputils' schedule).
    sends: Vec<u64>,
    /// Virtual time (ms) at which the ping starts.
    start_ms: u64,
}

impl PingCapture {
    /// Ping `dst` from `from` with `count` requests, the way `fabsim ping` and the device's
    /// `ping` command do (same probes, same schedule).
    pub fn new(net: &Network, st: &State, from: DeviceId, dst: Ipv4Addr, count: u32) -> Self {
        let dev = net.device(from);
        let style = match dev.kind {
            DeviceKind::Eos => PingStyle::eos(dev.profile.ping_size),
            _ => PingStyle::linux(dev.profile.ping_size),
        };
        let probes = run_pings(net, st, from, dst, count, dev.profile.ttl);
        PingCapture::iputils(&style, probes, st.time_ms)
    }

    /// An iputils ping's `probes`, sent from `start_ms` on `style`'s schedule (the one its
    /// text is printed from).
    pub(crate) fn iputils(style: &PingStyle, probes: Vec<Probe>, start_ms: u64) -> Self {
        let sends = ping_send_times(style, &probes);
        PingCapture::of(style.data_bytes, 1, probes, sends, start_ms)
    }

    /// `probes` as sent: `data_bytes` of data each, icmp_seq from `first_seq`, leaving at
    /// `sends` (µs after `start_ms`, one per probe).
    pub(crate) fn of(data_bytes: u32, first_seq: u16, probes: Vec<Probe>, sends: Vec<u64>, start_ms: u64) -> Self {
        PingCapture {
            data_bytes,
            first_seq,
            probes,
            sends,
            start_ms,
        }
    }

    /// Every frame of the ping that crossed `iface`, either way, in time order. What both
    /// the text view and a pcap show.
    pub fn frames(&self, net: &Network, iface: IfId) -> Vec<Frame> {
        let sent = self.probes.iter().zip(&self.sends).enumerate().map(|(i, (p, at))| {
            let data = ProbeData {
                id: PING_ID,
                // icmp_seq as ping prints it; the 16-bit field wraps as the tools' counter does.
                seq: self.first_seq.wrapping_add(i as u16),
                data: self.data_bytes as usize,
                src_port: 0,
            };
            (data, p, self.start_ms * 1000 + at)
        });
        probe_frames(net, iface, sent)
    }

    /// What `tcpdump -n -i IFACE` on `dev` prints during the ping.
    pub fn on(&self, net: &Network, dev: DeviceId, iface: IfId) -> Result<String, CommandError> {
        tcpdump(net, dev, iface, &self.frames(net, iface))
    }
}

/// Every frame that what `sent` holds put on `iface`, in time order.
pub fn sent_frames(net: &Network, sent: &[Sent], iface: IfId) -> Vec<Frame> {
    let mut frames: Vec<Frame> = sent.iter().flat_map(|s| s.frames(net, iface)).collect();
    frames.sort_by_key(|f| f.at_us);
    frames
}

/// What `tcpdump -n -i IFACE` on `dev` prints while `frames` (in time order) cross it. Only
/// Linux hosts: a switch's tcpdump sees only the packets its CPU handles, which fabsim does
/// not model.
pub fn tcpdump(net: &Network, dev: DeviceId, iface: IfId, frames: &[Frame]) -> Result<String, CommandError> {
    capturable(net, dev, iface)?;
    let mut out = format!(
        "tcpdump: verbose output suppressed, use -v[v]... for full protocol decode\n\
         listening on {}, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n",
        net.iface(iface).name
    );
    for f in frames {
        if let Some(text) = packet_text(&f.ip) {
            let at = wall_clock(0) + chrono::Duration::microseconds(f.at_us as i64);
            out.push_str(&format!("{} {text}\n", at.format("%H:%M:%S%.6f")));
        }
    }
    Ok(out)
}

/// The frames of probes (what each carried, the probe, when it left, µs) on `iface`, in time
/// order (stable: frames of one instant keep their path order).
fn probe_frames<'a>(net: &Network, iface: IfId, sent: impl Iterator<Item = (ProbeData, &'a Probe, u64)>) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (data, p, start) in sent {
        frames.extend(frames_on(net, &p.forward, start, iface, &data));
        frames.extend(frames_on(net, &p.back, start, iface, &data));
    }
    frames.sort_by_key(|f| f.at_us);
    frames
}

/// Traceroute's UDP data: its default 60-byte packets less the IP and UDP headers.
const TRACEROUTE_DATA: usize = 60 - 20 - 8;
/// How long traceroute waits for a probe's answer (`-w`, default 5 s).
const TRACEROUTE_WAIT_US: u64 = 5_000_000;

/// The probes of one traceroute as its view sent them (`traceroute_text` asks for each in
/// turn), for captures. Traceroute 2.1 may keep up to 16 probes in flight; fabsim sends each
/// when the previous one was answered or timed out, so the order on the wire is the order of
/// the text. Each probe's UDP source port is 32768 + its number (the kernel's ephemeral port,
/// fixed here).
pub struct TraceCapture {
    probes: Vec<(ProbeData, Probe, u64)>,
    /// When the next probe leaves, µs of virtual time.
    next_us: u64,
}

impl TraceCapture {
    /// A traceroute starting at virtual time `start_ms`, nothing sent yet.
    pub(crate) fn starting(start_ms: u64) -> Self {
        TraceCapture {
            probes: Vec::new(),
            next_us: start_ms * 1000,
        }
    }

    /// Keep probe number `n` (from 0) as sent now; the next leaves once it is answered or
    /// traceroute gave up waiting. Returns the probe, for the text.
    pub(crate) fn send(&mut self, p: Probe, n: u32) -> Probe {
        let data = ProbeData {
            id: 0,
            seq: 0,
            data: TRACEROUTE_DATA,
            src_port: 32768u16.wrapping_add(n as u16),
        };
        let waited = match p.outcome {
            ProbeOutcome::Lost { .. } | ProbeOutcome::LocalNoRoute => TRACEROUTE_WAIT_US,
            _ => p.rtt_us,
        };
        self.probes.push((data, p.clone(), self.next_us));
        self.next_us += waited;
        p
    }

    pub fn frames(&self, net: &Network, iface: IfId) -> Vec<Frame> {
        probe_frames(net, iface, self.probes.iter().map(|(d, p, at)| (*d, p, *at)))
    }
}

/// Whether a capture on `iface` of `dev` is modelled: Linux hosts' interfaces that carry
/// frames (a tunnel device's packets are captured on the interface that carries the tunnel).
pub fn capturable(net: &Network, dev: DeviceId, iface: IfId) -> Result<(), CommandError> {
    let (device, ifc) = (net.device(dev), net.iface(iface));
    if device.kind != DeviceKind::Linux {
        return Err(CommandError::new(format!(
            "{}: tcpdump is modelled on Linux hosts only (a switch captures only the packets its CPU handles)",
            device.name
        )));
    }
    if ifc.tunnel.is_some() {
        return Err(CommandError::new(format!(
            "{}: a capture on the tunnel device {} is not modelled (capture on the interface that carries the tunnel)",
            device.name, ifc.name
        )));
    }
    Ok(())
}

/// One datagram's line after the timestamp; None for what this view does not render (TCP).
fn packet_text(ip: &Ipv4Repr) -> Option<String> {
    let (src, dst) = (ip.src, ip.dst);
    Some(match &ip.body {
        IpBody::Icmp(m) => {
            // The ICMP message length: the datagram less its 20-byte header.
            let len = ipv4_bytes(ip).len() - 20;
            format!("IP {src} > {dst}: ICMP {}, length {len}", icmp_text(m))
        }
        IpBody::Ipip(inner) => format!("IP {src} > {dst}: {}", packet_text(inner)?),
        // print-udp.c `udpipaddr_print` (`-n`: numeric ports), then print-vxlan.c, whose
        // `vni %u\n` ends the line: the inner frame (Ethernet, printed from its IP header
        // without `-e`) starts the next one, without a timestamp.
        IpBody::Udp(u) => match &u.body {
            UdpBody::Vxlan { vni, inner, .. } => format!(
                "IP {src}.{} > {dst}.{}: VXLAN, flags [I] (0x08), vni {vni}\n{}",
                u.src_port,
                u.dst_port,
                packet_text(inner)?
            ),
            UdpBody::Data(len) => format!("IP {src}.{} > {dst}.{}: UDP, length {len}", u.src_port, u.dst_port),
        },
        IpBody::Tcp(_) | IpBody::Ospf(_) => return None,
    })
}

/// print-icmp.c `icmp_print` texts: unreachables name the quoted datagram's destination
/// (and a port unreachable the quoted UDP header's port).
fn icmp_text(m: &IcmpRepr) -> String {
    match m {
        IcmpRepr::EchoRequest { id, seq, .. } => format!("echo request, id {id}, seq {seq}"),
        IcmpRepr::EchoReply { id, seq, .. } => format!("echo reply, id {id}, seq {seq}"),
        IcmpRepr::DestUnreachable { code: 0, quoted } => format!("net {} unreachable", quoted.dst),
        IcmpRepr::DestUnreachable { code: 1, quoted } => format!("host {} unreachable", quoted.dst),
        IcmpRepr::DestUnreachable { quoted, .. } => {
            let port = match &quoted.body {
                IpBody::Udp(u) => u.dst_port,
                _ => 0,
            };
            format!("{} udp port {port} unreachable", quoted.dst)
        }
        IcmpRepr::TimeExceeded { .. } => "time exceeded in-transit".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::{Encap, Headers, Hop, IcmpError, Inner, Payload, ProbeKind, ProbeOutcome, Quoted};
    use crate::model::Tunnel;
    use crate::views::testnet::*;

    const BANNER: &str = "tcpdump: verbose output suppressed, use -v[v]... for full protocol decode\n";

    fn headers(src: &str, dst: &str, inner: Option<(&str, &str)>, payload: Payload) -> Option<Headers> {
        Some(Headers {
            src: ip(src),
            dst: ip(dst),
            ttl: 64,
            inner: inner.map(|(s, d)| Inner {
                encap: Encap::Ipip,
                src: ip(s),
                dst: ip(d),
                ttl: 63,
            }),
            payload,
            quoted: None,
        })
    }

    fn hop(device: DeviceId, ingress: Option<IfId>, egress: Option<IfId>, at_us: u64) -> Hop {
        Hop {
            device,
            ingress,
            egress,
            ttl_in: 64,
            received: None,
            sent: None,
            at_us,
            route: None,
        }
    }

    /// A capture of these probes (data 56 bytes, one request a second from 17:59:59.484554).
    fn capture(probes: Vec<Probe>) -> PingCapture {
        let sends = (0..probes.len() as u64).map(|i| i * 1_000_000).collect();
        PingCapture {
            data_bytes: 56,
            first_seq: 1,
            probes,
            sends,
            start_ms: (17 * 3600 + 59 * 60 + 59) * 1000 + 484,
        }
    }

    /// k-w3 with its ens5 and the probes of a pod ping that leave and come back through it
    /// (seed-lab.md s1, "IPIP on the wire").
    fn ipip_ping(count: usize) -> (Lab, DeviceId, IfId, PingCapture) {
        let mut lab = Lab::default();
        let kw3 = lab.device("k-w3", DeviceKind::Linux);
        let cali = lab.iface(kw3, "cali7fba7a35b74", None);
        let ens5 = lab.iface(kw3, "ens5", Some("10.0.137.142/24"));
        let kw1 = lab.device("k-w1", DeviceKind::Linux);
        let kw1_ens5 = lab.iface(kw1, "ens5", Some("10.0.137.15/24"));
        let outer_req = ("10.0.137.142", "10.0.137.15");
        let inner_req = Some(("10.66.122.194", "10.66.207.66"));
        let outer_rep = ("10.0.137.15", "10.0.137.142");
        let inner_rep = Some(("10.66.207.66", "10.66.122.194"));
        let probe = || {
            let mut p = probe(
                ProbeOutcome::Reply {
                    from: ip("10.66.207.66"),
                    ttl: 62,
                },
                1000,
            );
            let mut out = hop(kw3, Some(cali), Some(ens5), 0);
            out.sent = headers(outer_req.0, outer_req.1, inner_req, Payload::Request(ProbeKind::Echo));
            let arrive = hop(kw1, Some(kw1_ens5), None, 0);
            let mut answer = hop(kw1, None, Some(kw1_ens5), 455);
            answer.sent = headers(outer_rep.0, outer_rep.1, inner_rep, Payload::EchoReply);
            let mut back = hop(kw3, Some(ens5), Some(cali), 455);
            back.received = answer.sent;
            p.forward = vec![out, arrive];
            p.back = vec![answer, back];
            p
        };
        let cap = capture((0..count).map(|_| probe()).collect());
        (lab, kw3, ens5, cap)
    }

    #[test]
    fn ipip_echo_seed_s1() {
        // seed-lab.md s1 (L961-968), with fabsim's echo id 1 and seq from 1.
        let (lab, kw3, ens5, cap) = ipip_ping(2);
        let out = cap.on(&lab.net, kw3, ens5).unwrap();
        let want = format!(
            "{BANNER}listening on ens5, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n\
             17:59:59.484000 IP 10.0.137.142 > 10.0.137.15: IP 10.66.122.194 > 10.66.207.66: ICMP echo request, id 1, seq 1, length 64\n\
             17:59:59.484455 IP 10.0.137.15 > 10.0.137.142: IP 10.66.207.66 > 10.66.122.194: ICMP echo reply, id 1, seq 1, length 64\n\
             18:00:00.484000 IP 10.0.137.142 > 10.0.137.15: IP 10.66.122.194 > 10.66.207.66: ICMP echo request, id 1, seq 2, length 64\n\
             18:00:00.484455 IP 10.0.137.15 > 10.0.137.142: IP 10.66.207.66 > 10.66.122.194: ICMP echo reply, id 1, seq 2, length 64\n"
        );
        assert_eq!(out, want);
    }

    #[test]
    fn vxlan_echo_two_lines_per_packet() {
        let (lab, kw3, ens5, mut cap) = ipip_ping(1);
        let probe = &mut cap.probes[0];
        for hop in probe.forward.iter_mut().chain(probe.back.iter_mut()) {
            for h in [&mut hop.sent, &mut hop.received].into_iter().flatten() {
                if let Some(i) = &mut h.inner {
                    i.encap = Encap::Vxlan {
                        src_port: 41234,
                        dst_port: 4789,
                        vni: 4096,
                    };
                }
            }
        }
        let out = cap.on(&lab.net, kw3, ens5).unwrap();
        assert!(
            out.ends_with(
                "17:59:59.484000 IP 10.0.137.142.41234 > 10.0.137.15.4789: VXLAN, flags [I] (0x08), vni 4096\n\
                 IP 10.66.122.194 > 10.66.207.66: ICMP echo request, id 1, seq 1, length 64\n\
                 17:59:59.484455 IP 10.0.137.15.41234 > 10.0.137.142.4789: VXLAN, flags [I] (0x08), vni 4096\n\
                 IP 10.66.207.66 > 10.66.122.194: ICMP echo reply, id 1, seq 1, length 64\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn other_interfaces_see_nothing_and_switches_tunnels_refuse() {
        let (mut lab, kw3, _, cap) = ipip_ping(1);
        let ens3 = lab.iface(kw3, "ens3", Some("10.3.33.1/31"));
        let out = cap.on(&lab.net, kw3, ens3).unwrap();
        assert_eq!(out.lines().count(), 2, "only the banner: {out}");
        let tunl0 = lab.iface(kw3, "tunl0", Some("10.66.122.192/32"));
        lab.net.interfaces[tunl0.idx()].tunnel = Some(Tunnel::Ipip);
        assert!(cap
            .on(&lab.net, kw3, tunl0)
            .unwrap_err()
            .message
            .contains("tunnel device tunl0"));
        let sw = lab.device("Leaf-3", DeviceKind::Eos);
        let et1 = lab.iface(sw, "Ethernet1", Some("10.33.99.1/31"));
        assert!(cap
            .on(&lab.net, sw, et1)
            .unwrap_err()
            .message
            .contains("Linux hosts only"));
    }

    #[test]
    fn icmp_error_formats() {
        // print-icmp.c: `net %s unreachable` / `host %s unreachable` name the quoted packet's
        // destination; the length is 8 + the quoted echo request (20 + 64 bytes).
        let mut lab = Lab::default();
        let host = lab.device("k-w1", DeviceKind::Linux);
        let ens3 = lab.iface(host, "ens3", Some("10.0.11.1/31"));
        let leaf = lab.device("Leaf-1", DeviceKind::Eos);
        let et2 = lab.iface(leaf, "Ethernet2", Some("10.0.11.0/31"));
        let cases = [
            (
                IcmpError::NetUnreachable,
                "ICMP net 10.66.207.66 unreachable, length 92",
            ),
            (
                IcmpError::HostUnreachable,
                "ICMP host 10.66.207.66 unreachable, length 92",
            ),
            (IcmpError::TtlExceeded, "ICMP time exceeded in-transit, length 92"),
        ];
        for (error, text) in cases {
            let mut p = probe(
                ProbeOutcome::Error {
                    from: ip("10.1.11.0"),
                    error,
                    ttl: 64,
                },
                1000,
            );
            let mut req = hop(host, None, Some(ens3), 0);
            req.sent = headers("10.0.11.1", "10.66.207.66", None, Payload::Request(ProbeKind::Echo));
            let mut err = hop(host, Some(ens3), None, 1000);
            err.received = headers("10.1.11.0", "10.0.11.1", None, Payload::Error(error)).map(|h| Headers {
                quoted: Some(Quoted {
                    src: ip("10.0.11.1"),
                    dst: ip("10.66.207.66"),
                    ttl: 1,
                    inner: None,
                    kind: ProbeKind::Echo,
                }),
                ..h
            });
            let mut sender = hop(leaf, None, Some(et2), 1000);
            sender.sent = err.received;
            p.forward = vec![req, hop(leaf, Some(et2), None, 500)];
            p.back = vec![sender, err];
            let out = capture(vec![p]).on(&lab.net, host, ens3).unwrap();
            assert!(
                out.ends_with(&format!(
                    "17:59:59.484000 IP 10.0.11.1 > 10.66.207.66: ICMP echo request, id 1, seq 1, length 64\n\
                     17:59:59.485000 IP 10.1.11.0 > 10.0.11.1: {text}\n"
                )),
                "{out}"
            );
        }
    }

    #[test]
    fn packets_in_time_order_across_probes() {
        // A reply that comes back after the next request left is printed after it.
        let (lab, kw3, ens5, mut cap) = ipip_ping(2);
        cap.sends = vec![0, 300];
        let out = cap.on(&lab.net, kw3, ens5).unwrap();
        let kinds: Vec<&str> = out
            .lines()
            .skip(2)
            .map(|l| l.split("ICMP ").nth(1).unwrap_or(""))
            .collect();
        assert_eq!(
            kinds,
            [
                "echo request, id 1, seq 1, length 64",
                "echo request, id 1, seq 2, length 64",
                "echo reply, id 1, seq 1, length 64",
                "echo reply, id 1, seq 2, length 64",
            ]
        );
    }
}
