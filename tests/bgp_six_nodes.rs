//! Issue #3: "running s4 with the nodes in a 6-node eBGP mesh reports the path-explosion
//! finding". The seed lab at s4 (leaves with `router bgp`, per-node AS numbers, mesh over ens3,
//! k-master peering with Leaf-1) with two more nodes, k-w4 behind Leaf-2 and k-w5 behind
//! Leaf-3; every node's BIRD configuration is rendered by fabsim's confd from the Calico
//! resources. ADD-PATH through the 6-node eBGP mesh gives every node 1 + 5 × 65 paths for the
//! shared service range; with a limit of 100 paths per prefix that is reported.

use std::path::Path;

use fabsim::calico::confd::render;
use fabsim::calico::datastore::Datastore;
use fabsim::engine::Engine;
use fabsim::input::topology::parse_topology;
use serde_json::{json, Value};

/// name, ens3 address, leaf end, block, AS, leaf AS.
const NODES: [(&str, &str, &str, &str, u32, u32); 6] = [
    ("k-master", "10.0.11.1", "10.0.11.0", "10.66.111.0/24", 65000, 65011),
    ("k-w1", "10.1.11.1", "10.1.11.0", "10.66.95.0/24", 65001, 65011),
    ("k-w2", "10.2.22.1", "10.2.22.0", "10.66.217.0/24", 65002, 65012),
    ("k-w3", "10.3.33.1", "10.3.33.0", "10.66.52.0/24", 65003, 65013),
    ("k-w4", "10.5.55.1", "10.5.55.0", "10.66.40.0/24", 65004, 65012),
    ("k-w5", "10.6.66.1", "10.6.66.0", "10.66.41.0/24", 65005, 65013),
];

/// The Calico resources at s4, with six nodes.
fn calico_s4() -> String {
    let mut y = String::new();
    for (name, addr, _, block, asn, _) in NODES {
        y.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{kubernetes.io/hostname: {name}}}\n  annotations: {{projectcalico.org/IPv4Address: {addr}/31, projectcalico.org/ASNumber: '{asn}'}}\n---\n"
        ));
        let aff = format!("{name}-{}", block.replace(['.', '/'], "-"));
        y.push_str(&format!(
            "apiVersion: crd.projectcalico.org/v1\nkind: BlockAffinity\nmetadata: {{name: {aff}}}\nspec: {{node: {name}, cidr: {block}, state: confirmed, deleted: 'false'}}\n---\n"
        ));
    }
    y.push_str("apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: new-wonderful-pool}\nspec: {cidr: 10.66.0.0/16, blockSize: 24, ipipMode: Never, vxlanMode: Never, natOutgoing: true, nodeSelector: all()}\n---\n");
    y.push_str("apiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {logSeverityScreen: Info, nodeToNodeMeshEnabled: true, asNumber: 65000, serviceClusterIPs: [{cidr: 10.96.0.0/12}]}\n---\n");
    y.push_str("apiVersion: crd.projectcalico.org/v1\nkind: BGPPeer\nmetadata: {name: k-master-to-switch}\nspec: {peerIP: 10.0.11.0, asNumber: 65011, nodeSelector: 'kubernetes.io/hostname == \"k-master\"'}\n");
    y
}

fn append_config(devices: &mut Value, dev: &str, lines: &str) {
    if let Some(Value::String(c)) = devices.get_mut(dev).and_then(|d| d.get_mut("config")) {
        c.push_str(lines);
    }
}

/// The seed lab's BGP topology, grown to six nodes and moved to s4.
fn topology() -> String {
    let text = std::fs::read_to_string(Path::new("topologies/seed-lab-bgp.yaml")).expect("topology");
    let mut topo: Value = serde_saphyr::from_str(&text).expect("yaml");
    let (ds, _) = Datastore::from_yaml(&[("s4.yaml", calico_s4().as_str())]).unwrap_or_else(|e| panic!("{e}"));
    let devices = &mut topo["devices"];
    // The leaves' s3a configuration, plus the new nodes' ports.
    append_config(
        devices,
        "Leaf-1",
        "router bgp 65011\n   neighbor 10.0.11.1 remote-as 65000\nrouter ospf 1\n   redistribute bgp\n",
    );
    append_config(devices, "Leaf-2", "interface Ethernet3\n   no switchport\n   ip address 10.5.55.0/31\nrouter bgp 65012\nrouter ospf 1\n   redistribute bgp\n");
    append_config(devices, "Leaf-3", "interface Ethernet4\n   no switchport\n   ip address 10.6.66.0/31\nrouter bgp 65013\nrouter ospf 1\n   redistribute bgp\n");
    for (name, addr, leaf, ..) in NODES {
        let r = render(&ds, name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let includes = json!({"bird_aggr.cfg": r.bird_aggr_cfg, "bird_ipam.cfg": r.bird_ipam_cfg});
        if devices.get(name).is_none() {
            devices[name] = json!({
                "kind": "linux",
                "interfaces": ["ens3"],
                "sysctl": {"net.ipv4.ip_forward": 1},
                "netplan": format!(
                    "network:\n  version: 2\n  ethernets:\n    ens3:\n      addresses: [{addr}/31]\n      routes:\n        - {{to: 10.0.0.0/8, via: {leaf}}}\n"
                ),
            });
        }
        devices[name]["bird"] = Value::String(r.bird_cfg);
        devices[name]["bird_includes"] = includes;
    }
    if let Some(Value::Array(links)) = topo.get_mut("links") {
        links.push(json!(["Leaf-2:Ethernet3", "k-w4:ens3"]));
        links.push(json!(["Leaf-3:Ethernet4", "k-w5:ens3"]));
    }
    serde_saphyr::to_string(&topo).expect("yaml out")
}

#[test]
fn s4_with_a_six_node_mesh_reports_the_path_explosion() {
    let yaml = topology();
    let loaded = parse_topology(&yaml, "seed-lab-bgp-6.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut e = Engine::new(loaded.net);
    e.set_path_limit(100);
    let c = e.run_until_quiet();
    let f = c.findings.join("\n");
    assert!(
        f.contains("path explosion") && f.contains("10.96.0.0/12 (limit 100)"),
        "{f}"
    );
    // Leaf-1 still learns k-master's block from its BGP session.
    let leaf1 = e.network().device_by_name("Leaf-1").expect("Leaf-1");
    let r = e.state().devices[leaf1.idx()]
        .fib
        .lookup("10.66.111.1".parse().expect("addr"));
    assert!(
        r.is_some_and(|r| r.proto == fabsim::engine::Proto::BgpExternal),
        "{r:?}"
    );
}
