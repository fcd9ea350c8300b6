//! History matters (issue #3): two leaves redistribute BGP into OSPF and both learn the same
//! prefix from their own BGP neighbour. Whichever learns it first keeps its BGP route active
//! and originates the E2; the other's BGP route loses to that E2 (distance 110 < 200) and is
//! neither active nor redistributed. Reversing the order reverses the forwarding; learning it
//! in the same millisecond leaves the order to the seed (sub-millisecond timing). A network
//! with no stable state at all is reported as an oscillation.

use fabsim::diag::TextOrigin;
use fabsim::engine::{converge, Engine, Proto};
use fabsim::input::eos::apply_config;
use fabsim::input::topology::parse_topology;

fn switch(name: &str, config: &str) -> String {
    let body: String = config.lines().map(|l| format!("      {l}\n")).collect();
    format!("  {name}:\n    kind: eos\n    config: |\n{body}")
}

fn routed(ifaces: &[(&str, &str)]) -> String {
    ifaces
        .iter()
        .map(|(i, a)| format!("interface {i}\n   no switchport\n   ip address {a}\n"))
        .collect()
}

/// Spine — Leaf-A, Leaf-B (OSPF, `redistribute bgp`); R-A behind Leaf-A and R-B behind Leaf-B
/// both originate 10.50.0.0/24 over eBGP. `b_shut`: Leaf-B's session starts shut down.
fn topology(b_shut: bool) -> String {
    let ospf = "router ospf 1\n   network 10.0.0.0/16 area 0\n   redistribute bgp\n";
    let leaf = |name: &str, asn: u32, up: &str, down: &str, peer: &str, peer_as: u32, shut: bool| {
        let shut = if shut {
            format!("   neighbor {peer} shutdown\n")
        } else {
            String::new()
        };
        switch(
            name,
            &format!(
                "{}{ospf}router bgp {asn}\n   neighbor {peer} remote-as {peer_as}\n{shut}",
                routed(&[("Ethernet1", up), ("Ethernet2", down)])
            ),
        )
    };
    let origin = |name: &str, asn: u32, addr: &str, peer: &str, peer_as: u32| {
        switch(
            name,
            &format!(
                "{}ip route 10.50.0.0/24 Null0\nrouter bgp {asn}\n   neighbor {peer} remote-as {peer_as}\n   network 10.50.0.0/24\n",
                routed(&[("Ethernet1", addr)])
            ),
        )
    };
    let spine = switch(
        "Spine",
        &format!(
            "{}router ospf 1\n   network 10.0.0.0/16 area 0\n",
            routed(&[("Ethernet1", "10.0.1.0/31"), ("Ethernet2", "10.0.2.0/31")])
        ),
    );
    format!(
        "devices:\n{spine}{}{}{}{}links:\n  - [Spine:Ethernet1, Leaf-A:Ethernet1]\n  - [Spine:Ethernet2, Leaf-B:Ethernet1]\n  - [Leaf-A:Ethernet2, R-A:Ethernet1]\n  - [Leaf-B:Ethernet2, R-B:Ethernet1]\n",
        leaf("Leaf-A", 65001, "10.0.1.1/31", "10.0.3.0/31", "10.0.3.1", 65101, false),
        leaf("Leaf-B", 65002, "10.0.2.1/31", "10.0.4.0/31", "10.0.4.1", 65102, b_shut),
        origin("R-A", 65101, "10.0.3.1/31", "10.0.3.0", 65001),
        origin("R-B", 65102, "10.0.4.1/31", "10.0.4.0", 65002),
    )
}

fn engine(yaml: &str) -> Engine {
    let loaded = parse_topology(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    converge(loaded.net).0
}

fn proto_at(e: &Engine, dev: &str) -> Option<Proto> {
    let d = e.network().device_by_name(dev).expect("device");
    e.state().devices[d.idx()]
        .fib
        .lookup("10.50.0.1".parse().expect("addr"))
        .map(|r| r.proto)
}

fn configure(e: &mut Engine, dev: &str, text: &str) {
    let d = e.network().device_by_name(dev).expect("device");
    let origin = TextOrigin {
        file: "step".into(),
        line: 1,
        col: 1,
    };
    e.reconfigure(|n| apply_config(n, d, text, &origin)).expect("config");
    let c = e.run_until_quiet();
    assert!(c.findings.is_empty(), "{:?}", c.findings);
}

#[test]
fn the_leaf_that_learned_first_keeps_the_prefix() {
    // Leaf-A first, then Leaf-B's session is enabled.
    let mut first_a = engine(&topology(true));
    configure(
        &mut first_a,
        "Leaf-B",
        "router bgp 65002\n   no neighbor 10.0.4.1 shutdown\n",
    );
    assert_eq!(proto_at(&first_a, "Leaf-A"), Some(Proto::BgpExternal));
    assert_eq!(proto_at(&first_a, "Leaf-B"), Some(Proto::OspfE2));

    // The same final configuration reached the other way round: Leaf-B first.
    let mut first_b = engine(&topology(true));
    configure(
        &mut first_b,
        "Leaf-A",
        "router bgp 65001\n   neighbor 10.0.3.1 shutdown\n",
    );
    configure(
        &mut first_b,
        "Leaf-B",
        "router bgp 65002\n   no neighbor 10.0.4.1 shutdown\n",
    );
    configure(
        &mut first_b,
        "Leaf-A",
        "router bgp 65001\n   no neighbor 10.0.3.1 shutdown\n",
    );
    assert_eq!(proto_at(&first_b, "Leaf-A"), Some(Proto::OspfE2));
    assert_eq!(proto_at(&first_b, "Leaf-B"), Some(Proto::BgpExternal));

    let spine_next_hop = |e: &Engine| {
        let d = e.network().device_by_name("Spine").expect("spine");
        e.state().devices[d.idx()]
            .fib
            .lookup("10.50.0.1".parse().expect("addr"))
            .map(|r| r.nexthops[0].via)
    };
    assert_ne!(
        spine_next_hop(&first_a),
        spine_next_hop(&first_b),
        "forwarding depends on history"
    );
}

#[test]
fn learning_it_at_the_same_moment_the_seed_decides_who_keeps_it() {
    let mut kept = Vec::new();
    for seed in 1..=8 {
        let loaded = parse_topology(&topology(false), "t.yaml").unwrap_or_else(|e| panic!("{e}"));
        let mut e = Engine::new(loaded.net);
        e.set_seed(seed);
        let c = e.run_until_quiet();
        assert!(c.quiet && c.findings.is_empty(), "seed {seed}: {:?}", c.findings);
        let (a, b) = (proto_at(&e, "Leaf-A"), proto_at(&e, "Leaf-B"));
        // One keeps its BGP route and redistributes it; the other takes that E2.
        match (a, b) {
            (Some(Proto::BgpExternal), Some(Proto::OspfE2)) => kept.push("Leaf-A"),
            (Some(Proto::OspfE2), Some(Proto::BgpExternal)) => kept.push("Leaf-B"),
            other => panic!("seed {seed}: {other:?}"),
        }
    }
    kept.sort_unstable();
    kept.dedup();
    assert_eq!(kept, ["Leaf-A", "Leaf-B"], "each leaf wins under some seed");
}

/// A network with no stable state (a next hop that resolves only through the E2 its own
/// redistribution makes another router withdraw) is reported as an oscillation.
#[test]
fn a_network_that_never_settles_is_reported_as_an_oscillation() {
    let loaded = fabsim::input::topology::load_topology(std::path::Path::new("tests/data/oscillation.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, c) = converge(loaded.net);
    assert!(!c.quiet);
    let f = c.findings.join("\n");
    assert!(
        f.contains("oscillation: the OSPF external route for 10.50.0.0/24 changed 20 times without settling"),
        "{f}"
    );
    assert!(f.contains("routers redistributing it in turn: Leaf-A, Leaf-B"), "{f}");
}
