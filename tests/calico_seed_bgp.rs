//! The BIRD configurations written out in `scenarios/seed-lab-bgp.yaml` (and its topology) are
//! what Calico's confd renders from the lab's resources at each stage: for every `bird:` step,
//! rendering the stage's datastore for that node gives the same configuration (compared line by
//! line, whitespace-insensitively, without comments). And the folded runbook in
//! `scenarios/seed-lab.yaml`, where fabsim renders those configurations itself from the
//! resources the runbook applies, gives the same routing as the hand-written ones.
//!
//! The datastore per stage follows seed-lab.md: s2b the /24 pool without IPIP (I1) and the
//! default BGP settings; s3a `BGPConfiguration` AS 65000 + serviceClusterIPs and k-master's Node
//! on 10.0.11.1/31; s3b every Node with its AS and ens3 address; s4/s5 the BGPPeers; s6 the mesh
//! off. The lab's old disabled /26 pool (same CIDR) is left out: its key collides with the new
//! pool's in confd's store (both `10.66.0.0-16`), and the lab's routes show the new pool's
//! native routing (I1).

use std::path::Path;

use fabsim::calico::confd::render;
use fabsim::calico::datastore::Datastore;

struct NodeFacts {
    name: &'static str,
    ens3: &'static str,
    ens5: &'static str,
    block: &'static str,
    asn: u32,
    leaf: &'static str,
    leaf_as: u32,
}

const NODES: [NodeFacts; 4] = [
    NodeFacts {
        name: "k-master",
        ens3: "10.0.11.1/31",
        ens5: "10.0.137.12/24",
        block: "10.66.111.0/24",
        asn: 65000,
        leaf: "10.0.11.0",
        leaf_as: 65011,
    },
    NodeFacts {
        name: "k-w1",
        ens3: "10.1.11.1/31",
        ens5: "10.0.137.15/24",
        block: "10.66.95.0/24",
        asn: 65001,
        leaf: "10.1.11.0",
        leaf_as: 65011,
    },
    NodeFacts {
        name: "k-w2",
        ens3: "10.2.22.1/31",
        ens5: "10.0.137.112/24",
        block: "10.66.217.0/24",
        asn: 65002,
        leaf: "10.2.22.0",
        leaf_as: 65012,
    },
    NodeFacts {
        name: "k-w3",
        ens3: "10.3.33.1/31",
        ens5: "10.0.137.142/24",
        block: "10.66.52.0/24",
        asn: 65003,
        leaf: "10.3.33.0",
        leaf_as: 65013,
    },
];

const STAGES: [&str; 6] = ["s2b", "s3a", "s3b", "s4", "s5", "s6"];

fn at_least(stage: &str, from: &str) -> bool {
    let i = |s: &str| STAGES.iter().position(|x| *x == s).unwrap_or(usize::MAX);
    i(stage) >= i(from)
}

/// The lab's Calico resources at `stage`.
fn datastore_yaml(stage: &str) -> String {
    let mut y = String::new();
    for n in &NODES {
        let (addr, asn) = if at_least(stage, "s3b") || (n.name == "k-master" && stage == "s3a") {
            (n.ens3, Some(n.asn))
        } else {
            (n.ens5, None)
        };
        let as_line = asn
            .map(|a| format!(", projectcalico.org/ASNumber: '{a}'"))
            .unwrap_or_default();
        y.push_str(&format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n  labels: {{kubernetes.io/hostname: {}}}\n  annotations: {{projectcalico.org/IPv4Address: {addr}{as_line}}}\n---\n",
            n.name, n.name
        ));
        let block_name = format!("{}-{}", n.name, n.block.replace(['.', '/'], "-"));
        y.push_str(&format!(
            "apiVersion: crd.projectcalico.org/v1\nkind: BlockAffinity\nmetadata: {{name: {block_name}}}\nspec: {{node: {}, cidr: {}, state: confirmed, deleted: 'false'}}\n---\n",
            n.name, n.block
        ));
    }
    y.push_str("apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: new-wonderful-pool}\nspec: {cidr: 10.66.0.0/16, blockSize: 24, ipipMode: Never, vxlanMode: Never, natOutgoing: true, nodeSelector: all()}\n");
    if at_least(stage, "s3a") {
        let mesh = !at_least(stage, "s6");
        y.push_str(&format!(
            "---\napiVersion: crd.projectcalico.org/v1\nkind: BGPConfiguration\nmetadata: {{name: default}}\nspec:\n  logSeverityScreen: Info\n  nodeToNodeMeshEnabled: {mesh}\n  asNumber: 65000\n  serviceClusterIPs:\n    - cidr: 10.96.0.0/12\n"
        ));
    }
    for n in &NODES {
        let peered = at_least(stage, "s5") || (stage == "s4" && n.name == "k-master");
        if peered {
            y.push_str(&format!(
                "---\napiVersion: crd.projectcalico.org/v1\nkind: BGPPeer\nmetadata: {{name: {}-to-switch}}\nspec:\n  peerIP: {}\n  asNumber: {}\n  nodeSelector: kubernetes.io/hostname == \"{}\"\n",
                n.name, n.leaf, n.leaf_as, n.name
            ));
        }
    }
    y
}

/// Lines without comments and with whitespace collapsed: the configurations in the scenario
/// keep confd's statements but not all of its explanatory comments.
fn normalised(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| {
            l.split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// (stage, node, bird.cfg, bird_aggr.cfg, bird_ipam.cfg) for every BIRD configuration in the
/// scenario and its topology, read from the YAML.
fn written_configs() -> Vec<(String, String, String, String, String)> {
    #[derive(serde::Deserialize)]
    struct Step {
        id: String,
        on: Option<String>,
        bird: Option<String>,
        #[serde(default)]
        bird_includes: std::collections::BTreeMap<String, String>,
    }
    #[derive(serde::Deserialize)]
    struct Scenario {
        steps: Vec<Step>,
    }
    #[derive(serde::Deserialize)]
    struct Dev {
        bird: Option<String>,
        #[serde(default)]
        bird_includes: std::collections::BTreeMap<String, String>,
    }
    #[derive(serde::Deserialize)]
    struct Topology {
        devices: std::collections::BTreeMap<String, serde_json::Value>,
    }
    let mut out = Vec::new();
    let topo: Topology =
        serde_saphyr::from_str(&std::fs::read_to_string(Path::new("topologies/seed-lab-bgp.yaml")).expect("topology"))
            .expect("topology yaml");
    for (name, v) in topo.devices {
        let Ok(d) = serde_json::from_value::<Dev>(v) else {
            continue;
        };
        if let Some(b) = d.bird {
            let inc = |k: &str| d.bird_includes.get(k).cloned().unwrap_or_default();
            out.push(("s2b".into(), name, b, inc("bird_aggr.cfg"), inc("bird_ipam.cfg")));
        }
    }
    let scn: Scenario =
        serde_saphyr::from_str(&std::fs::read_to_string(Path::new("scenarios/seed-lab-bgp.yaml")).expect("scenario"))
            .expect("scenario yaml");
    for s in scn.steps {
        if let (Some(on), Some(b)) = (s.on, s.bird) {
            let stage = s.id.split('-').next().unwrap_or_default().to_string();
            let inc = |k: &str| s.bird_includes.get(k).cloned().unwrap_or_default();
            out.push((stage, on, b, inc("bird_aggr.cfg"), inc("bird_ipam.cfg")));
        }
    }
    out
}

#[test]
fn every_written_bird_configuration_is_what_confd_renders() {
    let configs = written_configs();
    assert_eq!(
        configs.len(),
        4 + 4 + 4 + 1 + 3 + 4,
        "s2b ×4, s3a ×4, s3b ×4, s4, s5 ×3, s6 ×4"
    );
    let mut failures = Vec::new();
    for (stage, node, bird, aggr, ipam) in &configs {
        let yaml = datastore_yaml(stage);
        let (ds, warnings) = Datastore::from_yaml(&[("lab.yaml", yaml.as_str())]).unwrap_or_else(|e| panic!("{e}"));
        assert!(warnings.is_empty(), "{warnings:?}");
        let r = render(&ds, node).unwrap_or_else(|e| panic!("{stage} {node}: {e:?}"));
        for (what, written, rendered) in [
            ("bird.cfg", bird, &r.bird_cfg),
            ("bird_aggr.cfg", aggr, &r.bird_aggr_cfg),
            ("bird_ipam.cfg", ipam, &r.bird_ipam_cfg),
        ] {
            let (w, g) = (normalised(written), normalised(rendered));
            if w != g {
                let first = w
                    .iter()
                    .zip(&g)
                    .position(|(a, b)| a != b)
                    .unwrap_or(w.len().min(g.len()));
                failures.push(format!(
                    "{stage} {node} {what}: first difference at line {first}:\n  written:  {:?}\n  rendered: {:?}",
                    w.get(first),
                    g.get(first)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The folded runbook (`scenarios/seed-lab.yaml`, where confd renders every node's BIRD from
/// the Calico resources the runbook applies) gives the same network as the hand-written BIRD
/// configurations (`scenarios/seed-lab-bgp.yaml`) at every BGP stage: the switches' routing
/// tables and BGP neighbour counts, and the nodes' BIRD-installed routes, line for line.
#[test]
fn generated_configurations_give_the_hand_written_results() {
    use fabsim::scenario;
    use fabsim::views;
    let open = |f: &str| scenario::open(Path::new(f)).unwrap_or_else(|e| panic!("{e}"));
    let (folded, hand) = (open("scenarios/seed-lab.yaml"), open("scenarios/seed-lab-bgp.yaml"));
    let probes: [(&str, &str); 10] = [
        ("Spine-1", "show ip route"),
        ("Leaf-1", "show ip route"),
        ("Leaf-2", "show ip route"),
        ("Leaf-3", "show ip route"),
        ("Leaf-1", "show ip bgp summary"),
        ("Leaf-2", "show ip bgp summary"),
        ("Leaf-3", "show ip bgp summary"),
        ("k-master", "ip route | grep bird"),
        ("k-w2", "ip route | grep bird"),
        ("k-w3", "ip route | grep bird"),
    ];
    // Up/Down times and message counters differ with the history of the two runs (when each
    // session came up); the routes and prefix counts must not.
    let stable = |line: &str| -> String {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            [nbr, "4", asn, rest @ ..] if nbr.parse::<std::net::Ipv4Addr>().is_ok() => {
                // Keep what follows the Up/Down time: the state and the prefix counts.
                let after: Vec<&str> = rest.iter().skip_while(|t| !t.contains(':')).skip(1).copied().collect();
                format!("{nbr} {asn} {}", after.join(" "))
            }
            _ => w.join(" "),
        }
    };
    for step in ["s2b", "s3a", "s3b", "s4", "s5", "s6"] {
        let a = scenario::run(&folded, Some(step)).unwrap_or_else(|e| panic!("{e}"));
        let b = scenario::run(&hand, Some(step)).unwrap_or_else(|e| panic!("{e}"));
        for (device, command) in probes {
            let show = |run: &scenario::Run| -> Vec<String> {
                let net = run.engine.network();
                let dev = net.device_by_name(device).expect("device");
                // Before s3a the leaves have no `router bgp`: the error text is compared then.
                let text = views::run_command(net, run.engine.state(), dev, command).unwrap_or_else(|e| e.message);
                text.lines().map(stable).filter(|l| !l.is_empty()).collect()
            };
            assert_eq!(show(&a), show(&b), "{step}: {device}# {command}");
        }
    }
}
