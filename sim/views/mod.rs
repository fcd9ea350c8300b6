//! Views render State the way the real tools do (EOS `show`, Linux `ip`, iputils `ping`,
//! `tracepath`, `traceroute`, `tcpdump`, BIRD `birdcl`, FRR `vtysh`). Views format; they never compute routing.
//!
//! Entry point: [`run_command`], which runs one command line (pipes included) on a device as
//! its CLI or shell would. Every output line ends in `'\n'`; trailing spaces that the real tool
//! prints (iproute2, tracepath) are kept.

pub(crate) mod api_doc;
pub mod bird;
mod calicoctl;
mod calicoctl_get;
pub(crate) mod clock;
pub mod eos;
pub mod frr;
mod kubectl;
mod kubectl_services;
pub mod linux;
pub mod pipe;
pub(crate) mod tables;
pub mod tcpdump;

use std::fmt;

use crate::engine::state::Route;
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, Network};

/// What the CLI or shell prints instead of output when a command fails (`% Invalid input`,
/// `RTNETLINK answers: Network is unreachable`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    pub message: String,
}

impl CommandError {
    pub fn new(message: impl Into<String>) -> Self {
        CommandError {
            message: message.into(),
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CommandError {}

/// Run one command line on a device as its CLI/shell would, including pipes. Dispatches on the
/// device kind. Never panics, whatever the line.
pub fn run_command(net: &Network, st: &State, dev: DeviceId, line: &str) -> Result<String, CommandError> {
    run_command_sent(net, st, dev, line, &mut Vec::new())
}

/// [`run_command`], keeping in `sent` what the line put on the wire (its pings' and
/// traceroutes' probes, the very ones its output was printed from), for captures.
pub fn run_command_sent(
    net: &Network,
    st: &State,
    dev: DeviceId,
    line: &str,
    sent: &mut Vec<tcpdump::Sent>,
) -> Result<String, CommandError> {
    let device = net
        .devices
        .get(dev.idx())
        .ok_or_else(|| CommandError::new(format!("no device with id {}", dev.0)))?;
    let flavor = match device.kind {
        DeviceKind::Eos => pipe::Flavor::Eos,
        DeviceKind::Linux => pipe::Flavor::Linux,
        DeviceKind::External => {
            return Err(CommandError::new(format!(
                "{} is an external network: it has no CLI or shell",
                device.name
            )))
        }
    };
    let stages = pipe::split_pipeline(line)?;
    let Some((command, filters)) = stages.split_first() else {
        return Ok(String::new());
    };
    let output = match flavor {
        pipe::Flavor::Eos => eos::run(net, st, dev, command, sent)?,
        pipe::Flavor::Linux => linux::run(net, st, dev, command, sent)?,
    };
    pipe::apply_filters(flavor, filters, output)
}

/// One route as the device's own table shows it, without a trailing newline: on EOS the
/// `show ip route` line (ECMP next hops on continuation lines joined by `\n`), on a Linux host
/// the `ip route` line with iproute2's trailing blanks trimmed (multipath `\tnexthop` lines
/// likewise). External networks have no table of their own; they get the Linux form.
pub fn route_line(net: &Network, dev: DeviceId, r: &Route) -> String {
    let kind = net.devices.get(dev.idx()).map(|d| d.kind);
    let text = match kind {
        Some(DeviceKind::Eos) => eos::route_lines(net, r),
        _ => linux::route_line(net, r),
    };
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

/// The BGP ORIGIN code as both EOS and BIRD print it after the AS path (`i`, `e`, `?`).
fn origin_char(o: crate::engine::BgpOrigin) -> char {
    match o {
        crate::engine::BgpOrigin::Igp => 'i',
        crate::engine::BgpOrigin::Egp => 'e',
        crate::engine::BgpOrigin::Incomplete => '?',
    }
}

/// The RFC 4271 state name, as BIRD (`bgp_state_dsc`) and FRR (`bgp_status_msg`) print it.
pub fn bgp_state_name(s: crate::engine::BgpState) -> &'static str {
    use crate::engine::BgpState;
    match s {
        BgpState::Idle => "Idle",
        BgpState::Connect => "Connect",
        BgpState::Active => "Active",
        BgpState::OpenSent => "OpenSent",
        BgpState::OpenConfirm => "OpenConfirm",
        BgpState::Established => "Established",
    }
}

/// `hh:mm:ss` of a second count (no day wrap), the clock form EOS, FRR and BIRD share.
fn hms(s: u64) -> String {
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Text of a probe's round trip in the form most tools print: whole milliseconds and the
/// microsecond remainder, `%d.%03d`.
fn ms3(us: u64) -> String {
    format!("{}.{:03}", us / 1000, us % 1000)
}

#[cfg(test)]
pub(crate) mod testnet {
    //! Small hand-built networks for the view tests: the seed lab's Leaf-3 at s1b, Spine-1 at
    //! s0 (OSPF neighbours) and s0b (Et4 on DHCP), k-w1 at s0c.

    use std::net::Ipv4Addr;

    use ipnet::Ipv4Net;

    use crate::dataplane::{IcmpError, Probe, ProbeOutcome};
    use crate::diag::Span;
    use crate::engine::state::*;
    use crate::engine::{BgpOrigin, BgpSessionView, BgpState, EcmpRole, NhMetric, PathAttrs, TableDest, TableRoute};
    use crate::model::*;

    pub fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }
    pub fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    /// A network under construction plus the matching State.
    #[derive(Default)]
    pub struct Lab {
        pub net: Network,
        pub st: State,
    }

    impl Lab {
        pub fn device(&mut self, name: &str, kind: DeviceKind) -> DeviceId {
            let id = DeviceId(self.net.devices.len() as u32);
            let profile = match kind {
                DeviceKind::Eos => VendorProfile::eos(),
                _ => VendorProfile::linux(),
            };
            self.net.devices.push(Device {
                name: name.into(),
                kind,
                hostname: None,
                ifaces: Vec::new(),
                boot_ms: 0,
                profile,
                statics: Vec::new(),
                ospf: None,
                bgp: None,
                bird: None,
                acls: Default::default(),
                ip_forward: kind == DeviceKind::Eos,
                masquerade: None,
                kube_proxy: None,
                external: None,
                image: None,
                kubelet: None,
                span: Span::default(),
            });
            self.st.devices.push(DevState {
                device: Some(id),
                powered: true,
                ..Default::default()
            });
            id
        }

        /// An up, routed interface with carrier and the given address (`None` = unassigned).
        pub fn iface(&mut self, dev: DeviceId, name: &str, addr: Option<&str>) -> IfId {
            let ifindex = self.net.device(dev).ifaces.len() as u32 + 2;
            let a = addr.map(net);
            let id = self.net.add_interface(dev, name, true, Span::default());
            let ifc = &mut self.net.interfaces[id.idx()];
            ifc.addr = a.map_or(AddrConfig::None, AddrConfig::Static);
            ifc.ifindex = ifindex;
            self.st.ifaces.push(IfState {
                up: true,
                line_up: true,
                addr: a,
                dhcp: false,
            });
            id
        }

        pub fn route(&mut self, dev: DeviceId, r: Route) {
            self.st.devices[dev.idx()].fib.insert(r);
        }

        /// Run one command line on `dev`, pipes included, as [`crate::views::run_command`].
        pub fn run(&self, dev: DeviceId, line: &str) -> Result<String, crate::views::CommandError> {
            crate::views::run_command(&self.net, &self.st, dev, line)
        }

        /// The error message of a command line that must fail.
        pub fn err(&self, dev: DeviceId, line: &str) -> String {
            match self.run(dev, line) {
                Ok(out) => panic!("{line:?} succeeded:\n{out}"),
                Err(e) => e.message,
            }
        }
    }

    pub fn hop(via: Option<&str>, iface: IfId) -> NextHop {
        NextHop {
            via: via.map(ip),
            iface,
        }
    }

    /// An EOS route: `proto` with distance/metric through the given next hops.
    pub fn eos_route(prefix: &str, proto: Proto, dm: (u8, u32), nhs: Vec<NextHop>) -> Route {
        Route {
            prefix: net(prefix),
            proto,
            distance: dm.0,
            metric: dm.1,
            nexthops: nhs.into(),
            src: None,
            blackhole: false,
            unreachable: false,
            linux_proto: None,
            scope_link: false,
            onlink: false,
        }
    }

    /// Leaf-3 at s1b (seed-lab.md s1b): 3 connected /31s and 5 OSPF routes via the spine.
    pub fn leaf3_s1b() -> (Lab, DeviceId) {
        let mut lab = Lab::default();
        let d = lab.device("Leaf-3", DeviceKind::Eos);
        let et1 = lab.iface(d, "Ethernet1", Some("10.33.99.1/31"));
        let et2 = lab.iface(d, "Ethernet2", Some("10.3.33.0/31"));
        let et3 = lab.iface(d, "Ethernet3", Some("10.4.44.0/31"));
        for (p, i) in [("10.33.99.0/31", et1), ("10.3.33.0/31", et2), ("10.4.44.0/31", et3)] {
            lab.route(d, eos_route(p, Proto::Connected, (0, 0), vec![hop(None, i)]));
        }
        for (p, m) in [
            ("10.0.11.0/31", 30),
            ("10.1.11.0/31", 30),
            ("10.2.22.0/31", 30),
            ("10.11.99.0/31", 20),
            ("10.22.99.0/31", 20),
        ] {
            let nh = vec![hop(Some("10.33.99.0"), et1)];
            lab.route(d, eos_route(p, Proto::OspfIntra, (110, m), nh));
        }
        (lab, d)
    }

    /// Spine-1 at s0: three leaves as `FULL/DR` neighbours (seed-lab.md s0, C04).
    pub fn spine1_s0() -> (Lab, DeviceId) {
        let mut lab = Lab::default();
        let d = lab.device("Spine-1", DeviceKind::Eos);
        let links = [
            ("Ethernet1", "10.11.99.0/31", "10.11.99.1", 29_400),
            ("Ethernet2", "10.22.99.0/31", "10.22.99.1", 30_999),
            ("Ethernet3", "10.33.99.0/31", "10.33.99.1", 35_000),
        ];
        let mut neighbors = Vec::new();
        for (name, a, peer, dead) in links {
            let i = lab.iface(d, name, Some(a));
            lab.route(d, eos_route(a, Proto::Connected, (0, 0), vec![hop(None, i)]));
            neighbors.push(OspfNeighbor {
                router_id: ip(peer),
                address: ip(peer),
                iface: i,
                priority: 1,
                state: NbrState::Full,
                role: NbrRole::Dr,
                dead_ms_left: dead,
            });
        }
        lab.st.devices[d.idx()].ospf = Some(OspfView {
            process_id: 1,
            router_id: Some(ip("10.33.99.0")),
            neighbors,
        });
        (lab, d)
    }

    /// k-w1 at s0c (seed-lab.md s0c, C15): ens3 on the fabric, ens5 on the NAT cloud by DHCP.
    pub fn kw1_s0c() -> (Lab, DeviceId) {
        let mut lab = Lab::default();
        let d = lab.device("k-w1", DeviceKind::Linux);
        let ens3 = lab.iface(d, "ens3", Some("10.1.11.1/31"));
        let ens4 = lab.iface(d, "ens4", None);
        let ens5 = lab.iface(d, "ens5", None);
        lab.net.interfaces[ens4.idx()].admin_up = false;
        lab.st.ifaces[ens4.idx()] = IfState::default();
        lab.net.interfaces[ens5.idx()].addr = AddrConfig::Dhcp;
        lab.st.ifaces[ens5.idx()].addr = Some(net("10.0.137.132/24"));
        lab.st.ifaces[ens5.idx()].dhcp = true;
        let src5 = Some(ip("10.0.137.132"));
        let linux = |prefix: &str, nh: NextHop, proto: LinuxProto, metric: u32| Route {
            prefix: net(prefix),
            proto: Proto::Static,
            distance: 0,
            metric,
            nexthops: [nh].into(),
            src: None,
            blackhole: false,
            unreachable: false,
            linux_proto: Some(proto),
            scope_link: false,
            onlink: false,
        };
        let routes = [
            Route {
                src: src5,
                proto: Proto::Dhcp,
                ..linux("0.0.0.0/0", hop(Some("10.0.137.1"), ens5), LinuxProto::Dhcp, 100)
            },
            linux("10.0.0.0/8", hop(Some("10.1.11.0"), ens3), LinuxProto::Static, 0),
            Route {
                src: src5,
                scope_link: true,
                proto: Proto::Connected,
                ..linux("10.0.137.0/24", hop(None, ens5), LinuxProto::Kernel, 100)
            },
            Route {
                src: src5,
                scope_link: true,
                proto: Proto::Dhcp,
                ..linux("10.0.137.1/32", hop(None, ens5), LinuxProto::Dhcp, 100)
            },
            Route {
                src: Some(ip("10.1.11.1")),
                scope_link: true,
                proto: Proto::Connected,
                ..linux("10.1.11.0/31", hop(None, ens3), LinuxProto::Kernel, 0)
            },
        ];
        for r in routes {
            lab.route(d, r);
        }
        (lab, d)
    }

    /// An established-or-not BGP session with zero counters and EOS's default timers.
    pub fn bgp_session(nbr: &str, remote_as: u32, local_as: u32, state: BgpState) -> BgpSessionView {
        BgpSessionView {
            name: None,
            neighbor: ip(nbr),
            remote_as: Some(remote_as),
            local_as,
            state,
            since_ms: 0,
            msgs_rcvd: 0,
            msgs_sent: 0,
            pfx_rcvd: 0,
            pfx_acc: 0,
            exported: 0,
            preferred: 0,
            last_error: None,
            peer_router_id: None,
            internal: remote_as == local_as,
            multihop: false,
            passive: false,
            add_path_rx: false,
            add_path_tx: false,
            source: None,
            hold_s: 180,
            keepalive_s: 60,
        }
    }

    /// A best BGP path from peer `nh` (also its NEXT_HOP), resolved to `gw` on `iface`, ORIGIN
    /// IGP, LOCAL_PREF 100, IGP metric 0, preference 100, since time 0.
    pub fn bgp_path(prefix: &str, protocol: &str, nh: &str, gw: &str, iface: IfId, as_path: &[u32]) -> TableRoute {
        TableRoute {
            prefix: net(prefix),
            protocol: protocol.into(),
            from: Some(ip(nh)),
            path_id: 0,
            attrs: Some(std::sync::Arc::new(PathAttrs {
                as_path: as_path.to_vec(),
                origin: BgpOrigin::Igp,
                local_pref: Some(100),
                med: None,
            })),
            next_hop: Some(ip(nh)),
            dest: TableDest::Via(hop(Some(gw), iface)),
            nh_metric: Some(NhMetric::Known(0)),
            preference: 100,
            ebgp: !as_path.is_empty(),
            valid: true,
            accepted: true,
            best: true,
            ecmp: EcmpRole::None,
            since_ms: 0,
            decided_by: None,
        }
    }

    /// A probe result with no recorded path.
    pub fn probe(outcome: ProbeOutcome, rtt_us: u64) -> Probe {
        Probe {
            outcome,
            rtt_us,
            src: None,
            forward: Vec::new(),
            back: Vec::new(),
            forwarding_loop: None,
            service_nat: None,
        }
    }
    pub fn reply(from: &str, ttl: u8, rtt_us: u64) -> Probe {
        probe(ProbeOutcome::Reply { from: ip(from), ttl }, rtt_us)
    }
    /// Echo replies from one address with the given round trips.
    pub fn replies(from: &str, ttl: u8, rtts: &[u64]) -> Vec<Probe> {
        rtts.iter().map(|t| reply(from, ttl, *t)).collect()
    }
    pub fn error(from: &str, error: IcmpError, rtt_us: u64) -> Probe {
        probe(
            ProbeOutcome::Error {
                from: ip(from),
                error,
                ttl: 64,
            },
            rtt_us,
        )
    }
    /// A router `hop` routed hops away answers with TTL exceeded; its reply starts at TTL 64.
    pub fn expired(from: &str, hop: u8, rtt_us: u64) -> Probe {
        probe(
            ProbeOutcome::Error {
                from: ip(from),
                error: IcmpError::TtlExceeded,
                ttl: 65 - hop,
            },
            rtt_us,
        )
    }
    pub fn lost() -> Probe {
        probe(ProbeOutcome::Lost { reason: "test".into() }, 0)
    }

    /// Collapse runs of whitespace, as the seed's transcription did (seed-lab.md §0).
    pub fn squash(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// Every expected line appears, whitespace-normalised, among the output's lines.
    pub fn assert_lines(out: &str, expected: &str) {
        let got: Vec<String> = out.lines().map(squash).collect();
        for want in expected.lines().map(squash).filter(|l| !l.is_empty()) {
            assert!(got.contains(&want), "missing line {want:?} in:\n{out}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testnet::*;
    use super::*;
    use crate::engine::state::{LinuxProto, Proto, Route};
    use crate::engine::{BgpState, BgpView, EcmpRole, TableDest, TableRoute};
    use crate::model::{BgpConfig, BgpFlavor};

    #[test]
    fn never_panics_on_garbage() {
        let (mut lab, leaf) = leaf3_s1b();
        let kw1 = lab.device("k-w1", DeviceKind::Linux);
        let ens3 = lab.iface(kw1, "ens3", Some("10.1.11.1/31"));
        lab.route(
            kw1,
            eos_route("0.0.0.0/0", Proto::Static, (0, 0), vec![hop(Some("10.1.11.0"), ens3)]),
        );
        // BGP on the leaf and BIRD on the host, so the bgp/birdcl views see data.
        let et1 = lab.net.iface_by_name(leaf, "Ethernet1").unwrap();
        let path = |p: &str, proto: &str, asp: &[u32]| TableRoute {
            since_ms: u64::MAX,
            ecmp: EcmpRole::Member,
            ..bgp_path(p, proto, "10.33.99.0", "10.33.99.0", et1, asp)
        };
        let mut table = vec![
            path("10.66.111.0/24", "bgp", &[]),
            path("10.66.111.0/24", "Mesh_1", &[65000, 65001]),
            path("0.0.0.0/0", "kernel1", &[]),
        ];
        (table[1].best, table[1].valid) = (false, false);
        table[1].dest = TableDest::Multipath(Box::new([hop(None, et1), hop(Some("10.33.99.0"), et1)].into()));
        (table[2].dest, table[2].attrs, table[2].from) = (TableDest::Unreachable, None, None);
        let mut session = bgp_session("10.33.99.0", 1, 1, BgpState::OpenSent);
        session.since_ms = u64::MAX;
        session.name = Some("Mesh_1".into());
        let bgp = BgpView {
            asn: 1,
            router_id: None,
            sessions: vec![session],
            table: table.into(),
        };
        lab.st.devices[leaf.idx()].bgp = Some(bgp.clone());
        lab.st.devices[kw1.idx()].bgp = Some(bgp.clone());
        lab.net.devices[kw1.idx()].bird = Some(Default::default());
        // And an FRR speaker for vtysh.
        let frr = lab.device("frr", DeviceKind::Linux);
        lab.st.devices[frr.idx()].bgp = Some(bgp);
        lab.net.devices[frr.idx()].bgp = Some(BgpConfig::new(BgpFlavor::Frr, 1, Default::default()));
        let ext = lab.device("cloud", DeviceKind::External);
        let words = [
            "show",
            "sh",
            "ip",
            "ro",
            "route",
            "ospf",
            "nei",
            "int",
            "br",
            "brief",
            "ethernet",
            "4",
            "et99",
            "0.0.0.0",
            "10.1.11.1",
            "999.1.1.1",
            "10.0.0.0/33",
            "ping",
            "-c",
            "-s",
            "-t",
            "-I",
            "traceroute",
            "tracepath",
            "-n",
            "a",
            "r",
            "get",
            "addr",
            "link",
            "-br",
            "dev",
            "ens3",
            "|",
            "| inc",
            "| grep",
            "-E",
            "'(",
            "\"",
            "[",
            "\\",
            "",
            " ",
            "repeat",
            "size",
            "0",
            "-1",
            "65536",
            "bgp",
            "static",
            "connected",
            "vrf",
            "x",
            "birdcl",
            "birdc",
            "protocols",
            "status",
            "all",
            "for",
            "protocol",
            "Mesh_1",
            "'\"Mesh*\"'",
            "primary",
            "count",
            "summary",
            "su",
            "10.66.111.0/24",
            "10.66.111.1",
            "| inc a|b",
            "vtysh",
            "-c",
            "'show ip bgp'",
            "\"show bgp ipv4 unicast summary\"",
            "'sh ip bgp 10.66.111.1'",
            "-cshow",
            "ipv4",
            "ipv6",
            "unicast",
            "view",
            "default",
        ];
        // A deterministic pseudo-random walk over the words (no RNG dependency).
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..6000 {
            let mut line = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 7) as usize;
            for k in 0..n {
                let w = words[((seed >> (8 * k)) as usize) % words.len()];
                line.push_str(w);
                line.push(' ');
            }
            for dev in [leaf, kw1, frr, ext, DeviceId(99)] {
                let _ = run_command(&lab.net, &lab.st, dev, &line);
            }
        }
    }

    #[test]
    fn same_input_same_bytes() {
        let (lab, leaf) = leaf3_s1b();
        let a = run_command(&lab.net, &lab.st, leaf, "show ip route");
        let b = run_command(&lab.net, &lab.st, leaf, "show ip route");
        assert_eq!(a, b);
    }

    #[test]
    fn pipes_apply_after_the_command() {
        let (lab, leaf) = leaf3_s1b();
        let out = run_command(&lab.net, &lab.st, leaf, "sh ip ro | inc /31 | exc 110/30").unwrap();
        assert_eq!(out.lines().count(), 5);
        let (lab, kw1) = kw1_s0c();
        let out = run_command(&lab.net, &lab.st, kw1, "ip r | grep -v 'proto kernel'").unwrap();
        assert_eq!(out.lines().count(), 3);
    }

    #[test]
    fn route_line_as_each_table_shows_it() {
        let (mut lab, leaf) = leaf3_s1b();
        let et1 = lab.net.iface_by_name(leaf, "Ethernet1").unwrap();
        let et2 = lab.net.iface_by_name(leaf, "Ethernet2").unwrap();
        let e2 = eos_route("0.0.0.0/0", Proto::OspfE2, (110, 1), vec![hop(Some("10.11.99.0"), et1)]);
        assert_eq!(
            route_line(&lab.net, leaf, &e2),
            " O E2     0.0.0.0/0 [110/1] via 10.11.99.0, Ethernet1"
        );
        let conn = eos_route("10.3.33.0/31", Proto::Connected, (0, 0), vec![hop(None, et2)]);
        assert_eq!(
            route_line(&lab.net, leaf, &conn),
            " C        10.3.33.0/31 is directly connected, Ethernet2"
        );
        let ecmp = eos_route(
            "172.16.0.4/32",
            Proto::OspfIntra,
            (110, 30),
            vec![hop(Some("10.33.99.0"), et1), hop(Some("10.3.33.1"), et2)],
        );
        let text = route_line(&lab.net, leaf, &ecmp);
        assert_eq!(
            text,
            " O        172.16.0.4/32 [110/30] via 10.33.99.0, Ethernet1\n                                 via 10.3.33.1, Ethernet2"
        );
        // The same lines as `show ip route` prints for it.
        lab.route(leaf, ecmp);
        let table = run_command(&lab.net, &lab.st, leaf, "show ip route 172.16.0.4/32").unwrap();
        assert!(table.ends_with(&format!("{text}\n")), "{table}");

        let (mut lab, kw1) = kw1_s0c();
        let fib: Vec<Route> = lab.st.devices[kw1.idx()].fib.iter().cloned().collect();
        let lines: Vec<String> = fib.iter().map(|r| route_line(&lab.net, kw1, r)).collect();
        assert!(lines.contains(&"default via 10.0.137.1 dev ens5 proto dhcp src 10.0.137.132 metric 100".to_string()));
        assert!(lines.contains(&"10.1.11.0/31 dev ens3 proto kernel scope link src 10.1.11.1".to_string()));
        let ip_r = run_command(&lab.net, &lab.st, kw1, "ip r").unwrap();
        for l in &lines {
            assert!(ip_r.contains(&format!("{l} \n")), "{l:?} not in\n{ip_r}");
        }
        let ens3 = lab.net.iface_by_name(kw1, "ens3").unwrap();
        let ens5 = lab.net.iface_by_name(kw1, "ens5").unwrap();
        let multi = Route {
            linux_proto: Some(LinuxProto::Bird),
            ..eos_route(
                "10.66.0.0/16",
                Proto::Static,
                (0, 0),
                vec![hop(Some("10.1.11.0"), ens3), hop(Some("10.0.137.1"), ens5)],
            )
        };
        assert_eq!(
            route_line(&lab.net, kw1, &multi),
            "10.66.0.0/16 proto bird\n\tnexthop via 10.1.11.0 dev ens3 weight 1\n\tnexthop via 10.0.137.1 dev ens5 weight 1"
        );
        // An unknown device id does not panic; it gets the Linux form.
        let ext = lab.device("cloud", DeviceKind::External);
        assert_eq!(route_line(&lab.net, ext, &fib[0]), lines[0]);
        assert_eq!(route_line(&lab.net, DeviceId(99), &fib[0]), lines[0]);
    }

    #[test]
    fn external_devices_have_no_cli() {
        let mut lab = Lab::default();
        let ext = lab.device("cloud", DeviceKind::External);
        let err = run_command(&lab.net, &lab.st, ext, "show ip route").unwrap_err();
        assert!(err.message.contains("external network"));
    }
}
