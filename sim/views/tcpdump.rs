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
use crate::dataplane::{Encap, Headers, IcmpError, Inner, Payload, Probe, ProbeKind};
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, IfId, Network};

/// The echo identifier. The real one is the ping socket's port (unprivileged iputils) or the
/// pid (raw socket, busybox as root): incidental, so fabsim fixes it.
const PING_ID: u16 = 1;

/// ICMP error messages quote the offending datagram up to 576 bytes in all (Linux
/// `icmp_send`: 576 minus the IP and ICMP headers).
const MAX_QUOTE: u32 = 576 - 20 - 8;

/// One ping's echo requests and their fates, with the times the requests left.
pub struct PingCapture {
    dst: Ipv4Addr,
    /// ICMP data bytes per request (`ping -s`).
    data_bytes: u32,
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
        let sends = ping_send_times(&style, &probes);
        PingCapture {
            dst,
            data_bytes: style.data_bytes,
            probes,
            sends,
            start_ms: st.time_ms,
        }
    }

    /// What `tcpdump -n -i IFACE` on `dev` prints during the ping. Only Linux hosts: a
    /// switch's tcpdump sees only the packets its CPU handles, which fabsim does not model.
    pub fn on(&self, net: &Network, dev: DeviceId, iface: IfId) -> Result<String, CommandError> {
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
        let mut packets: Vec<(u64, String)> = Vec::new();
        for (i, p) in self.probes.iter().enumerate() {
            // icmp_seq as ping prints it (`ping_text`: index + 1).
            let seq = u16::try_from(i + 1).unwrap_or(u16::MAX);
            for hop in p.forward.iter().chain(&p.back) {
                let seen = [(hop.ingress, hop.received), (hop.egress, hop.sent)];
                for h in seen.iter().filter(|(on, _)| *on == Some(iface)).filter_map(|(_, h)| *h) {
                    if let Some(text) = self.packet_text(&h, seq) {
                        packets.push((self.sends[i] + hop.at_us, text));
                    }
                }
            }
        }
        // Stable: packets at the same instant keep their path order.
        packets.sort_by_key(|(t, _)| *t);
        let mut out = format!(
            "tcpdump: verbose output suppressed, use -v[v]... for full protocol decode\n\
             listening on {}, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n",
            ifc.name
        );
        for (t_us, text) in packets {
            let at = wall_clock(self.start_ms) + chrono::Duration::microseconds(t_us as i64);
            out.push_str(&format!("{} {text}\n", at.format("%H:%M:%S%.6f")));
        }
        Ok(out)
    }

    /// One packet's line after the timestamp; None for what a ping never sends.
    fn packet_text(&self, h: &Headers, seq: u16) -> Option<String> {
        let echo_len = 8 + self.data_bytes;
        let payload = match h.payload {
            Payload::Request(ProbeKind::Echo) => format!("echo request, id {PING_ID}, seq {seq}, length {echo_len}"),
            Payload::EchoReply => format!("echo reply, id {PING_ID}, seq {seq}, length {echo_len}"),
            Payload::Error(e) => {
                // The quoted datagram is the echo request: IP header + ICMP message.
                let len = 8 + (20 + echo_len).min(MAX_QUOTE);
                let what = match e {
                    IcmpError::NetUnreachable => format!("net {} unreachable", self.dst),
                    IcmpError::HostUnreachable => format!("host {} unreachable", self.dst),
                    IcmpError::TtlExceeded => "time exceeded in-transit".to_string(),
                };
                format!("{what}, length {len}")
            }
            Payload::Request(ProbeKind::Udp { .. } | ProbeKind::Tcp { .. }) | Payload::PortUnreachable => return None,
        };
        let icmp = format!("ICMP {payload}");
        Some(match h.inner {
            None => format!("IP {} > {}: {icmp}", h.src, h.dst),
            Some(Inner {
                encap: Encap::Ipip,
                src,
                dst,
            }) => format!("IP {} > {}: IP {src} > {dst}: {icmp}", h.src, h.dst),
            // print-udp.c `udpipaddr_print` (`-n`: numeric ports), then print-vxlan.c, whose
            // `vni %u\n` ends the line: the inner frame (Ethernet, printed from its IP header
            // without `-e`) starts the next one, without a timestamp.
            Some(Inner {
                encap:
                    Encap::Vxlan {
                        src_port,
                        dst_port,
                        vni,
                    },
                src,
                dst,
            }) => format!(
                "IP {}.{src_port} > {}.{dst_port}: VXLAN, flags [I] (0x08), vni {vni}\nIP {src} > {dst}: {icmp}",
                h.src, h.dst
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::{Hop, ProbeOutcome};
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
            }),
            payload,
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
            dst: ip("10.66.207.66"),
            data_bytes: 56,
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
            let mut back = hop(kw3, Some(ens5), Some(cali), 455);
            back.received = headers(outer_rep.0, outer_rep.1, inner_rep, Payload::EchoReply);
            p.forward = vec![out];
            p.back = vec![back];
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
            err.received = headers("10.1.11.0", "10.0.11.1", None, Payload::Error(error));
            p.forward = vec![req];
            p.back = vec![err];
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
