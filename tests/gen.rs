//! `fabsim gen leaf-spine`: the addressing plan at sample indices, generated files load without
//! a diagnostic, generation is byte-for-byte deterministic, and a 2x4x2 fabric converges with
//! every node and workload pod reaching every other in each underlay and Calico mode.

use std::net::Ipv4Addr;

use fabsim::dataplane::{probe, ProbeKind, ProbeOutcome};
use fabsim::engine::{converge, Proto};
use fabsim::gen::{CalicoMode, Encap, LeafSpine, NodeAsn, Underlay};
use fabsim::input::topology::{parse_topology, Loaded};
use fabsim::model::{AddrConfig, Network};
use ipnet::Ipv4Net;

fn load(plan: &LeafSpine) -> Loaded {
    parse_topology(&plan.generate(), "generated.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// The static address of `dev:ifname`.
fn addr(net: &Network, dev: &str, ifname: &str) -> Ipv4Net {
    let d = net.device_by_name(dev).unwrap_or_else(|| panic!("no device {dev}"));
    let i = net
        .iface_by_name(d, ifname)
        .unwrap_or_else(|| panic!("{dev} has no {ifname}"));
    match net.iface(i).addr {
        AddrConfig::Static(a) => a,
        ref other => panic!("{dev}:{ifname} is {other:?}"),
    }
}

fn net31(a: &str) -> Ipv4Net {
    Ipv4Net::new(a.parse().expect("address"), 31).expect("/31")
}

/// Calico's BGP address and AS number for `node` (what calico-node wrote to its Node).
fn calico_node(net: &Network, node: &str) -> (Option<Ipv4Net>, Option<u32>) {
    let calico = net.cluster.as_ref().and_then(|c| c.calico.as_ref()).expect("Calico");
    let n = calico
        .datastore
        .nodes
        .get(node)
        .unwrap_or_else(|| panic!("no Calico node {node}"));
    (n.ipv4_address, n.as_number)
}

#[test]
fn addresses_and_asns_match_the_plan_2x4x2() {
    let plan = LeafSpine::new(2, 4, 2);
    let loaded = load(&plan);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let net = &loaded.net;
    // spine 2 / leaf 3: k = 1*4 + 2 = 6.
    assert_eq!(addr(net, "spine-2", "Ethernet3"), net31("10.254.0.12"));
    assert_eq!(addr(net, "leaf-3", "Ethernet2"), net31("10.254.0.13"));
    // leaf 3 / node 2: k = 2*2 + 1 = 5; the node port is Ethernet(S + n).
    assert_eq!(addr(net, "leaf-3", "Ethernet4"), net31("10.255.0.10"));
    assert_eq!(addr(net, "node-3-2", "eth0"), net31("10.255.0.11"));
    // The node's Calico BGP address is its leaf-facing one; per-node ASN 4200000000 + k.
    assert_eq!(
        calico_node(net, "node-3-2"),
        (Some(net31("10.255.0.11")), Some(4_200_000_005))
    );
    assert_eq!(plan.leaf_asn(3), 64515);
}

#[test]
fn addresses_and_asns_match_the_plan_4x32x16() {
    let plan = LeafSpine {
        node_asn: NodeAsn::PerRack,
        ..LeafSpine::new(4, 32, 16)
    };
    let loaded = load(&plan);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let net = &loaded.net;
    // spine 2 / leaf 3: k = 1*32 + 2 = 34; spine 4 / leaf 32: k = 3*32 + 31 = 127.
    assert_eq!(addr(net, "spine-2", "Ethernet3"), net31("10.254.0.68"));
    assert_eq!(addr(net, "leaf-3", "Ethernet2"), net31("10.254.0.69"));
    assert_eq!(addr(net, "spine-4", "Ethernet32"), net31("10.254.0.254"));
    assert_eq!(addr(net, "leaf-32", "Ethernet4"), net31("10.254.0.255"));
    // leaf 3 / node 4: k = 2*16 + 3 = 35; leaf 32 / node 16: k = 31*16 + 15 = 511.
    assert_eq!(addr(net, "leaf-3", "Ethernet8"), net31("10.255.0.70"));
    assert_eq!(addr(net, "node-3-4", "eth0"), net31("10.255.0.71"));
    assert_eq!(addr(net, "leaf-32", "Ethernet20"), net31("10.255.3.254"));
    assert_eq!(addr(net, "node-32-16", "eth0"), net31("10.255.3.255"));
    // per-rack: 4200000000 + l.
    assert_eq!(
        calico_node(net, "node-3-4"),
        (Some(net31("10.255.0.71")), Some(4_200_000_003))
    );
    let joined = net.cluster.as_ref().map_or(0, |c| c.nodes.len());
    assert_eq!(joined, 32 * 16, "every node joined the cluster");
}

#[test]
fn node_asns_by_mode() {
    let plan = |calico, node_asn| LeafSpine {
        calico,
        node_asn,
        ..LeafSpine::new(2, 4, 2)
    };
    assert_eq!(plan(CalicoMode::Tor, NodeAsn::PerNode).node_asn(4, 2), 4_200_000_007);
    assert_eq!(plan(CalicoMode::Mesh, NodeAsn::PerRack).node_asn(4, 2), 4_200_000_004);
    assert_eq!(plan(CalicoMode::Tor, NodeAsn::Shared).node_asn(4, 2), 64512);
    // rr: nodes take their leaf's AS whatever --node-asn says.
    assert_eq!(plan(CalicoMode::Rr, NodeAsn::PerNode).node_asn(4, 2), 64516);
}

#[test]
fn generation_is_deterministic() {
    let plan = LeafSpine {
        pods_per_node: 2,
        underlay: Underlay::Ebgp,
        ..LeafSpine::new(4, 32, 16)
    };
    assert_eq!(plan.generate(), plan.generate());
}

/// The largest size the issue names generates (the time is in BENCHMARKS.md, not checked here).
#[test]
fn the_largest_plan_fits() {
    let plan = LeafSpine::new(16, 512, 48);
    plan.check().expect("16x512x48 fits the plan");
    let text = plan.generate();
    assert!(text.contains("  node-512-48:\n"));
    assert!(text.contains("  - [spine-16:Ethernet512, leaf-512:Ethernet16]\n"));
    assert!(
        LeafSpine::new(16, 4096, 1).check().is_err(),
        "65,536 spine-leaf links do not fit a /16 of /31s"
    );
}

/// A block size Calico refuses is refused by the generator too, so that everything it writes
/// loads (found by the `lab` fuzz target: `--block-size 10` wrote a pool calico-node rejects).
#[test]
fn block_sizes_calico_refuses_are_refused() {
    for (size, ok) in [(19, false), (20, true), (32, true), (33, false), (10, false)] {
        let plan = LeafSpine {
            block_size: size,
            pods_per_node: 1,
            ..LeafSpine::new(1, 1, 1)
        };
        match plan.check() {
            Ok(()) => {
                assert!(ok, "--block-size {size} accepted");
                load(&plan);
            }
            Err(e) => {
                assert!(!ok, "--block-size {size}: {e}");
                assert_eq!(
                    e,
                    format!("--block-size {size}: Calico refuses it (IPv4 block size must be between 20 and 32)")
                );
            }
        }
    }
}

/// The committed example is the generator's output for its command line.
#[test]
fn committed_example_is_current() {
    let plan = LeafSpine {
        pods_per_node: 1,
        ..LeafSpine::new(2, 4, 2)
    };
    let committed = std::fs::read_to_string("topologies/gen-2x4x2.yaml").expect("topologies/gen-2x4x2.yaml");
    assert_eq!(
        committed,
        plan.generate(),
        "regenerate with the command in its first line"
    );
}

/// The command line writes the same text, and refuses sizes outside the plan with exit 2.
#[test]
fn the_command_line_generates_the_example() {
    let fabsim = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fabsim"))
            .args(args)
            .output()
            .expect("fabsim runs")
    };
    let o = fabsim(&[
        "gen",
        "leaf-spine",
        "--spines",
        "2",
        "--leaves",
        "4",
        "--nodes-per-leaf",
        "2",
        "--pods-per-node",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let committed = std::fs::read_to_string("topologies/gen-2x4x2.yaml").expect("topologies/gen-2x4x2.yaml");
    assert_eq!(String::from_utf8_lossy(&o.stdout), committed);
    let o = fabsim(&[
        "gen",
        "leaf-spine",
        "--spines",
        "64",
        "--leaves",
        "1024",
        "--nodes-per-leaf",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("10.254.0.0/16 holds 32768"));
}

/// The hosts that must reach each other: every node and every workload pod.
fn endpoints(net: &Network) -> Vec<(String, Ipv4Addr)> {
    net.devices
        .iter()
        .filter(|d| d.name.starts_with("node-"))
        .map(|d| {
            let eth = d
                .ifaces
                .iter()
                .map(|i| net.iface(*i))
                .find(|i| i.name.starts_with("eth"))
                .unwrap_or_else(|| panic!("{} has no eth interface", d.name));
            match eth.addr {
                AddrConfig::Static(a) => (d.name.clone(), a.addr()),
                ref other => panic!("{}:{} is {other:?}", d.name, eth.name),
            }
        })
        .collect()
}

fn assert_full_reachability(plan: &LeafSpine) {
    let loaded = load(plan);
    let (engine, c) = converge(loaded.net);
    assert!(c.quiet && c.findings.is_empty(), "{plan:?}: {c:?}");
    let (net, st) = (engine.network(), engine.state());
    let hosts = endpoints(net);
    let pods = hosts.iter().filter(|(n, _)| n.contains("-pod-")).count();
    assert_eq!(pods, (plan.leaves * plan.nodes_per_leaf * plan.pods_per_node) as usize);
    let mut failed = Vec::new();
    for (from, _) in &hosts {
        let src = net.device_by_name(from).expect("device");
        for (to, dst) in hosts.iter().filter(|(to, _)| to != from) {
            let p = probe(net, st, src, *dst, 64, ProbeKind::Echo, 1);
            if !matches!(p.outcome, ProbeOutcome::Reply { .. }) {
                failed.push(format!("{from} -> {to} ({dst}): {:?}", p.outcome));
            }
        }
    }
    assert!(failed.is_empty(), "{plan:?}:\n{}", failed.join("\n"));
}

/// tor and rr carry pod routes in the fabric, so they run unencapsulated. The mesh keeps pod
/// routes between nodes only, so pods in other racks need a tunnel: IPIP (VXLAN's data plane
/// is not modelled yet; its pool YAML is generated but not tested here).
fn mode(underlay: Underlay, calico: CalicoMode) {
    let encap = match calico {
        CalicoMode::Mesh => Encap::Ipip,
        CalicoMode::Tor | CalicoMode::Rr => Encap::None,
    };
    assert_full_reachability(&LeafSpine {
        pods_per_node: 1,
        underlay,
        calico,
        encap,
        ..LeafSpine::new(2, 4, 2)
    });
}

#[test]
fn ospf_tor_reaches_everything() {
    mode(Underlay::Ospf, CalicoMode::Tor);
}

#[test]
fn ospf_mesh_reaches_everything() {
    mode(Underlay::Ospf, CalicoMode::Mesh);
}

#[test]
fn ospf_rr_reaches_everything() {
    mode(Underlay::Ospf, CalicoMode::Rr);
}

#[test]
fn ebgp_tor_reaches_everything() {
    mode(Underlay::Ebgp, CalicoMode::Tor);
}

#[test]
fn ebgp_mesh_reaches_everything() {
    mode(Underlay::Ebgp, CalicoMode::Mesh);
}

#[test]
fn ebgp_rr_reaches_everything() {
    mode(Underlay::Ebgp, CalicoMode::Rr);
}

/// Why the ebgp-rr leaf has `next-hop-self` towards its nodes. Without it, iBGP keeps the
/// spine's next hop on what the leaf learned from the spines, and a node's BIRD can resolve
/// that address only through the BGP-learned leaf–spine /31, a route that is itself recursive:
/// BIRD 1.6 installs such routes `unreachable` (nest/rt-table.c `rt_update_hostentry`; real
/// BIRD 1.6.8 did so on this fabric in tests/differential.rs `gen_ebgp_rr` before the line was
/// generated). With it, the other racks are through the leaf.
#[test]
fn ebgp_rr_needs_next_hop_self_to_reach_other_racks() {
    let plan = LeafSpine {
        pods_per_node: 1,
        underlay: Underlay::Ebgp,
        calico: CalicoMode::Rr,
        encap: Encap::None,
        ..LeafSpine::new(2, 4, 2)
    };
    let generated = plan.generate();
    let without: String = generated
        .lines()
        .filter(|l| !l.ends_with(" next-hop-self"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        generated.lines().count() - without.lines().count(),
        8,
        "one line per node"
    );
    let other_rack: Ipv4Addr = "10.255.0.5".parse().expect("address");
    for (text, reaches) in [(generated, true), (without, false)] {
        let loaded = parse_topology(&text, "generated.yaml").unwrap_or_else(|e| panic!("{e}"));
        let (engine, c) = converge(loaded.net);
        assert!(c.quiet, "{c:?}");
        let (net, st) = (engine.network(), engine.state());
        let node = net.device_by_name("node-1-1").expect("node-1-1");
        let route = st.devices[node.idx()].fib.lookup(other_rack).expect("a route");
        assert_eq!(route.proto, Proto::Bird, "{route:?}");
        let p = probe(net, st, node, other_rack, 64, ProbeKind::Echo, 1);
        if reaches {
            let leaf: Ipv4Addr = "10.255.0.0".parse().expect("address");
            assert!(
                !route.unreachable && !route.nexthops.is_empty() && route.nexthops.iter().all(|h| h.via == Some(leaf)),
                "{route:?}"
            );
            assert!(matches!(p.outcome, ProbeOutcome::Reply { .. }), "{p:?}");
        } else {
            assert!(route.unreachable && route.nexthops.is_empty(), "{route:?}");
            assert_eq!(p.outcome, ProbeOutcome::LocalNoRoute);
        }
    }
}

/// The other node-ASN choices and IPIP CrossSubnet, two pods per node.
#[test]
fn other_asns_and_cross_subnet_reach_everything() {
    for (node_asn, calico, encap) in [
        (NodeAsn::PerRack, CalicoMode::Tor, Encap::None),
        (NodeAsn::Shared, CalicoMode::Tor, Encap::None),
        (NodeAsn::Shared, CalicoMode::Mesh, Encap::IpipCrosssubnet),
    ] {
        assert_full_reachability(&LeafSpine {
            pods_per_node: 2,
            underlay: Underlay::Ebgp,
            node_asn,
            calico,
            encap,
            ..LeafSpine::new(2, 4, 2)
        });
    }
}
