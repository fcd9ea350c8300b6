//! The packet walk on small fabrics: ECMP, forwarding loops, blackholes, TTL expiry, ARP
//! failure, and that a converged topology answers the same way every time.

use std::net::Ipv4Addr;
use std::path::Path;

use fabsim::dataplane::{probe, IcmpError, ProbeKind, ProbeOutcome};
use fabsim::engine::{converge, Engine};
use fabsim::input::topology::parse_topology;
use fabsim::scenario;
use fabsim::views::run_command;

fn engine(yaml: &str) -> Engine {
    let loaded = parse_topology(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    converge(loaded.net).0
}

fn show(e: &Engine, dev: &str, cmd: &str) -> String {
    let d = e.network().device_by_name(dev).expect("device");
    run_command(e.network(), e.state(), d, cmd).unwrap_or_else(|err| panic!("{}", err.message))
}

fn ping_once(e: &Engine, from: &str, to: &str) -> fabsim::dataplane::Probe {
    let d = e.network().device_by_name(from).expect("device");
    probe(
        e.network(),
        e.state(),
        d,
        to.parse().expect("addr"),
        64,
        ProbeKind::Echo,
        1,
    )
}

/// Two routers each pointing a static route at the other, and a host behind R1.
const LOOP: &str = r#"
devices:
  R1:
    kind: eos
    config: |
      interface Ethernet1
         no switchport
         ip address 10.0.0.0/31
      interface Ethernet2
         no switchport
         ip address 10.1.0.0/31
      interface Ethernet3
         no switchport
         ip address 10.2.0.1/24
      ip route 10.9.0.0/16 10.0.0.1
      ip route 10.8.0.0/16 Null0
  R2:
    kind: eos
    config: |
      interface Ethernet1
         no switchport
         ip address 10.0.0.1/31
      ip route 10.9.0.0/16 10.0.0.0
      ip route 10.1.0.0/31 10.0.0.0
  h:
    kind: linux
    interfaces: [eth0]
    netplan: |
      network:
        version: 2
        ethernets:
          eth0:
            addresses: [10.1.0.1/31]
            routes:
              - {to: default, via: 10.1.0.0}
  k:
    kind: linux
    interfaces: [eth0]
    netplan: |
      network:
        version: 2
        ethernets:
          eth0:
            addresses: [10.2.0.5/24]
            routes:
              - {to: default, via: 10.2.0.1}
links:
  - [R1:Ethernet1, R2:Ethernet1]
  - [R1:Ethernet2, h:eth0]
segments:
  lan: [R1:Ethernet3, k:eth0]
"#;

#[test]
fn a_forwarding_loop_expires_the_ttl_and_is_named() {
    let e = engine(LOOP);
    let p = ping_once(&e, "h", "10.9.1.1");
    match p.outcome {
        ProbeOutcome::Error {
            error: IcmpError::TtlExceeded,
            ..
        } => {}
        other => panic!("expected TTL exceeded, got {other:?}"),
    }
    let names: Vec<&str> = p
        .forwarding_loop
        .expect("loop reported")
        .iter()
        .map(|d| e.network().device(*d).name.as_str())
        .collect();
    assert_eq!(names, ["R1", "R2", "R1"]);
    let out = show(&e, "h", "ping -c 1 10.9.1.1");
    assert!(out.contains("Time to live exceeded"), "{out}");
}

#[test]
fn a_blackhole_drops_silently() {
    let e = engine(LOOP);
    let p = ping_once(&e, "h", "10.8.0.1");
    match &p.outcome {
        ProbeOutcome::Lost { reason } => assert!(reason.contains("blackhole"), "{reason}"),
        other => panic!("expected a silent drop, got {other:?}"),
    }
    let out = show(&e, "R1", "show ip route static");
    assert!(
        out.contains(" S        10.8.0.0/16 is directly connected, Null0"),
        "{out}"
    );
}

#[test]
fn no_route_at_a_transit_router_is_net_unreachable_from_its_ingress() {
    let e = engine(LOOP);
    let out = show(&e, "h", "ping -c 2 172.16.0.1");
    assert!(
        out.contains("From 10.1.0.0 icmp_seq=1 Destination Net Unreachable"),
        "{out}"
    );
    assert!(
        out.contains("2 packets transmitted, 0 received, +2 errors, 100% packet loss"),
        "{out}"
    );
}

#[test]
fn an_unanswered_arp_is_host_unreachable() {
    let e = engine(LOOP);
    // 10.2.0.9 is on R1's LAN, but nobody there owns it.
    let out = show(&e, "h", "ping -c 1 10.2.0.9");
    assert!(
        out.contains("From 10.1.0.0 icmp_seq=1 Destination Host Unreachable"),
        "{out}"
    );
    // The host that does own an address on that LAN answers, two hops away.
    let p = ping_once(&e, "h", "10.2.0.5");
    assert!(
        matches!(p.outcome, ProbeOutcome::Reply { ttl: 63, .. }),
        "{:?}",
        p.outcome
    );
}

#[test]
fn ecmp_over_two_spines_is_listed_and_hashed_deterministically() {
    let topo = scenario::open(Path::new("topologies/leaf-spine-2x2.yaml")).expect("topology");
    let (e, _) = converge(topo.net);
    let out = show(&e, "Leaf-1", "show ip route 10.255.0.3");
    assert!(
        out.contains(" O        10.255.0.2/31 [110/30] via 10.254.0.0, Ethernet1\n"),
        "{out}"
    );
    assert!(
        out.contains("\n                                 via 10.254.0.4, Ethernet2\n"),
        "{out}"
    );
    // Different UDP ports may take different spines; the same port always takes the same one.
    let h1 = e.network().device_by_name("host-1").expect("host-1");
    let dst = Ipv4Addr::new(10, 255, 0, 3);
    let spine_of = |port: u16| {
        let p = probe(
            e.network(),
            e.state(),
            h1,
            dst,
            64,
            ProbeKind::Udp { dst_port: port },
            0,
        );
        e.network().device(p.forward[2].device).name.clone()
    };
    let spines: std::collections::BTreeSet<String> = (33434..33444).map(spine_of).collect();
    assert_eq!(spines.len(), 2, "ten flows use both spines");
    assert_eq!(spine_of(33434), spine_of(33434));
}
