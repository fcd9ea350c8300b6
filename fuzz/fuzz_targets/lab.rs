//! End to end on random small labs (structure-aware): the input bytes choose a leaf-spine
//! fabric (`fabsim gen`'s plan: sizes, underlay, node ASNs, Calico mode, encapsulation, block
//! size) and a runbook over it (cut and mended cables, power loss, switch configuration,
//! `kubectl`/`calicoctl`/`ip` commands, waits, reboots) with expectations before, during and
//! after each step. The lab is parsed, converged and replayed like `fabsim run`, under an event
//! budget, and reported as text, JSON, JUnit and HTML. What must hold:
//! - the generated topology always loads (the generator writes ordinary, valid input);
//! - the runbook is replayed or refused with diagnostics — never a panic or a hang;
//! - the report has one entry per step;
//! - the same lab replayed again gives a byte-identical report (no order from hash maps).
//!
//! Everything is built from names the fabric really has, so most inputs get past the parsers
//! into the engine; a few bytes of free text per step keep the parsers' error paths reachable.
#![no_main]
use std::fmt::Write as _;
use std::path::Path;

use fabsim::gen::{CalicoMode, Encap, LeafSpine, NodeAsn, Underlay};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

/// Most protocol events per convergence: a 2×3×2 fabric settles in a few thousand; the bound
/// keeps one input to well under a second.
const EVENTS: u64 = 200_000;
const MAX_STEPS: usize = 6;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(lab) = Lab::arbitrary(&mut u) else { return };
    let Ok(steps) = runbook(&mut u, &lab) else { return };
    let topology = lab.plan.generate();
    let scenario = scenario_text(&steps);
    // Triage: `FABSIM_LAB_PRINT=1 …/lab ARTIFACT` shows the lab an input stands for.
    if std::env::var_os("FABSIM_LAB_PRINT").is_some() {
        eprintln!("{}\n---\n{scenario}", topology.lines().next().unwrap_or_default());
    }
    let first = replay(&topology, &scenario);
    if let Some(first) = first {
        let again = replay(&topology, &scenario).expect("the same lab replays again");
        assert!(first == again, "the same lab gave two different reports:\n{scenario}");
    }
});

/// The reports of one replay (text, JSON, JUnit, HTML); None when the runbook was refused.
fn replay(topology: &str, scenario: &str) -> Option<String> {
    let loaded = match fabsim::input::topology::parse_topology(topology, "lab.yaml") {
        Ok(l) => l,
        Err(e) => panic!("the generated topology does not load: {e:?}\n{topology}"),
    };
    let scn = fabsim::scenario::file::parse_scenario(scenario, "runbook.yaml", Path::new("/nonexistent")).ok()?;
    let steps = scn.steps.len();
    let opened = fabsim::scenario::Opened {
        scenario: Some(scn),
        topology_name: loaded.name,
        net: loaded.net,
        warnings: loaded.warnings,
    };
    let run = fabsim::scenario::run(&opened, None).ok()?;
    let scn = opened.scenario.as_ref()?;
    let report = fabsim::scenario::report::RunReport::new(scn, &opened.topology_name, &run, 0, None);
    assert_eq!(
        report.all_steps().count(),
        steps + 1,
        "one report entry per step, and the start"
    );
    let mut out = report.text(false, true);
    out.push_str(&report.json());
    out.push_str(&fabsim::scenario::junit::junit_xml(&report));
    out.push_str(&fabsim::scenario::html::page(&report));
    Some(out)
}

/// The fabric and what the runbook may name in it.
struct Lab {
    plan: LeafSpine,
}

impl Lab {
    fn arbitrary(u: &mut Unstructured) -> Result<Lab> {
        let mut plan = LeafSpine::new(u.int_in_range(1..=2)?, u.int_in_range(1..=3)?, u.int_in_range(1..=2)?);
        plan.pods_per_node = u.int_in_range(0..=2)?;
        plan.underlay = *u.choose(&[Underlay::Ospf, Underlay::Ebgp])?;
        plan.node_asn = *u.choose(&[NodeAsn::PerNode, NodeAsn::PerRack, NodeAsn::Shared])?;
        plan.calico = *u.choose(&[CalicoMode::Tor, CalicoMode::Mesh, CalicoMode::Rr])?;
        plan.encap = *u.choose(&[Encap::None, Encap::Ipip, Encap::IpipCrosssubnet, Encap::Vxlan])?;
        plan.block_size = u.int_in_range(10..=32)?;
        plan.check()
            .map_err(|_| libfuzzer_sys::arbitrary::Error::IncorrectFormat)?;
        plan.advertise_services = u.arbitrary()?;
        Ok(Lab { plan })
    }

    fn spine(&self, u: &mut Unstructured) -> Result<u32> {
        u.int_in_range(1..=self.plan.spines)
    }

    fn leaf(&self, u: &mut Unstructured) -> Result<u32> {
        u.int_in_range(1..=self.plan.leaves)
    }

    /// A node as (leaf, n).
    fn node(&self, u: &mut Unstructured) -> Result<(u32, u32)> {
        Ok((self.leaf(u)?, u.int_in_range(1..=self.plan.nodes_per_leaf)?))
    }

    /// A leaf's port towards node `n` (after its spine ports).
    fn node_port(&self, n: u32) -> u32 {
        self.plan.spines + n
    }

    /// Any device, by name.
    fn device(&self, u: &mut Unstructured) -> Result<String> {
        Ok(match u.int_in_range(0..=2)? {
            0 => format!("spine-{}", self.spine(u)?),
            1 => format!("leaf-{}", self.leaf(u)?),
            _ => {
                let (l, n) = self.node(u)?;
                format!("node-{l}-{n}")
            }
        })
    }

    /// Something to ping: a node, a pod (by name), a switch, an address of the plan, or one
    /// outside it.
    fn target(&self, u: &mut Unstructured) -> Result<String> {
        Ok(match u.int_in_range(0..=4)? {
            0 | 1 => {
                let (l, n) = self.node(u)?;
                format!("node-{l}-{n}")
            }
            2 if self.plan.pods_per_node > 0 => {
                let (l, n) = self.node(u)?;
                format!("node-{l}-{n}-pod-{}", u.int_in_range(1..=self.plan.pods_per_node)?)
            }
            3 => {
                let (l, n) = self.node(u)?;
                self.plan.leaf_node_addrs(l, n).0.to_string()
            }
            _ => u
                .choose(&["10.96.0.1", "10.128.0.1", "192.0.2.1", "leaf-1"])?
                .to_string(),
        })
    }

    /// A node or pod to ping from.
    fn source(&self, u: &mut Unstructured) -> Result<String> {
        let (l, n) = self.node(u)?;
        Ok(if self.plan.pods_per_node > 0 && u.arbitrary()? {
            format!("node-{l}-{n}-pod-{}", u.int_in_range(1..=self.plan.pods_per_node)?)
        } else {
            format!("node-{l}-{n}")
        })
    }

    /// A spine–leaf or leaf–node cable, as `[A:IF, B:IF]`.
    fn cable(&self, u: &mut Unstructured) -> Result<String> {
        Ok(if u.arbitrary()? {
            let (s, l) = (self.spine(u)?, self.leaf(u)?);
            format!("[spine-{s}:Ethernet{l}, leaf-{l}:Ethernet{s}]")
        } else {
            let (l, n) = self.node(u)?;
            format!("[leaf-{l}:Ethernet{}, node-{l}-{n}:eth0]", self.node_port(n))
        })
    }

    /// EOS configuration-mode lines for leaf `l` (or a spine), as an engineer would type them
    /// during a change: ports down and up, OSPF costs and passive ports, BGP neighbours shut,
    /// re-peered with a wrong AS, ECMP width, static routes, a line fabsim does not model.
    fn eos_lines(&self, u: &mut Unstructured, l: u32) -> Result<String> {
        let asn = self.plan.leaf_asn(l);
        let port = u.int_in_range(1..=self.plan.spines + self.plan.nodes_per_leaf)?;
        let (n_l, n_n) = (l, u.int_in_range(1..=self.plan.nodes_per_leaf)?);
        let node_ip = self.plan.leaf_node_addrs(n_l, n_n).1;
        let spine_ip = self.plan.spine_leaf_addrs(self.spine(u)?, l).0;
        let peer = if u.arbitrary()? { node_ip } else { spine_ip };
        Ok(match u.int_in_range(0..=10)? {
            0 => format!("interface Ethernet{port}\nshutdown"),
            1 => format!("interface Ethernet{port}\nno shutdown"),
            2 => format!(
                "interface Ethernet{port}\nip ospf cost {}",
                u.int_in_range(1..=65535u32)?
            ),
            3 => format!("router ospf 1\npassive-interface Ethernet{port}"),
            4 => format!("router ospf 1\nno passive-interface Ethernet{port}"),
            5 => format!("router bgp {asn}\nneighbor {peer} shutdown"),
            6 => format!("router bgp {asn}\nno neighbor {peer} shutdown"),
            7 => format!(
                "router bgp {asn}\nneighbor {peer} remote-as {}",
                u.int_in_range(1..=4_294_967_295u32)?
            ),
            8 => format!("router bgp {asn}\nmaximum-paths {}", u.int_in_range(1..=64u32)?),
            9 => format!(
                "ip route 10.{}.0.0/16 {}",
                u.int_in_range(0..=255u8)?,
                if u.arbitrary()? {
                    "Null0".to_string()
                } else {
                    node_ip.to_string()
                }
            ),
            _ => free_text(u)?,
        })
    }

    /// A command typed on a node: the cluster's `kubectl`/`calicoctl` on the control plane
    /// (node-1-1), host `ip` commands and checks on any node.
    fn command(&self, u: &mut Unstructured) -> Result<(String, String)> {
        let (l, n) = self.node(u)?;
        let node = format!("node-{l}-{n}");
        let on_cp = |cmd: String| ("node-1-1".to_string(), cmd);
        Ok(match u.int_in_range(0..=14)? {
            0 => on_cp(format!("kubectl cordon {node}")),
            1 => on_cp(format!("kubectl uncordon {node}")),
            2 => on_cp(format!(
                "kubectl drain {node} --ignore-daemonsets --delete-emptydir-data"
            )),
            3 => on_cp(format!("kubectl delete pod {node}-pod-1")),
            4 => on_cp(format!("kubectl run probe-{} --image=alpine", u.int_in_range(0..=9u8)?)),
            5 => on_cp("kubectl rollout restart daemonset/calico-node -n kube-system".into()),
            6 => on_cp(format!(
                "calicoctl patch bgpconfig default --patch '{{\"spec\":{{\"nodeToNodeMeshEnabled\":{}}}}}'",
                u.arbitrary::<bool>()?
            )),
            7 => on_cp(format!(
                "calicoctl patch ippool default-ipv4-ippool --patch '{{\"spec\":{{\"ipipMode\":\"{}\"}}}}'",
                u.choose(&["Always", "CrossSubnet", "Never"])?
            )),
            8 => on_cp(format!("kubectl label node {node} rack=r{l} --overwrite")),
            9 => (
                node,
                format!(
                    "ip route add 10.{}.0.0/24 via {}",
                    u.int_in_range(0..=255u8)?,
                    self.plan.leaf_node_addrs(l, n).0
                ),
            ),
            10 => (node, format!("ip link set eth0 {}", u.choose(&["up", "down"])?)),
            11 => (node, format!("ping -c 1 {}", self.target(u)?)),
            12 => (node, "birdcl show protocols".into()),
            13 => on_cp("calicoctl node status".into()),
            _ => (node, free_text(u)?),
        })
    }
}

/// A short line of the input's own text (quotes, colons and odd bytes included), so that the
/// parsers' refusals are reached from the end-to-end path too.
fn free_text(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(0..=40)?;
    let bytes = u.bytes(len)?;
    Ok(String::from_utf8_lossy(bytes).replace(['\n', '\r'], " "))
}

/// One step of the runbook, as scenario YAML lines under `- id: sN`.
fn step(u: &mut Unstructured, lab: &Lab) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    match u.int_in_range(0..=9)? {
        0 => lines.push(format!("fail: {{link: {}}}", lab.cable(u)?)),
        1 => lines.push(format!("restore: {{link: {}}}", lab.cable(u)?)),
        2 => {
            let dev = lab.device(u)?;
            if u.arbitrary()? {
                lines.push(format!(
                    "fail: {{device: {dev}, for: {}s}}",
                    u.int_in_range(1..=300u32)?
                ));
            } else {
                lines.push(format!("fail: {{device: {dev}}}"));
            }
        }
        3 => lines.push(format!("restore: {{device: {}}}", lab.device(u)?)),
        4 => lines.push(format!("wait: {}s", u.int_in_range(0..=900u32)?)),
        5 | 6 => {
            let (name, l) = if u.ratio(1, 4)? {
                (format!("spine-{}", lab.spine(u)?), 1)
            } else {
                let l = lab.leaf(u)?;
                (format!("leaf-{l}"), l)
            };
            lines.push(format!("on: {name}"));
            lines.push("config: |".into());
            for _ in 0..u.int_in_range(1..=3)? {
                for line in lab.eos_lines(u, l)?.lines() {
                    lines.push(format!("  {line}"));
                }
            }
        }
        7 | 8 => {
            let (on, cmd) = lab.command(u)?;
            lines.push(format!("on: {on}"));
            lines.push(format!("run: {}", yaml_string(&cmd)));
        }
        _ => lines.push(format!("reboot: [{}]", lab.device(u)?)),
    }
    let (mut before, mut after, mut during) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..u.int_in_range(0..=3)? {
        let list = match u.int_in_range(0..=2)? {
            0 => &mut before,
            1 => &mut after,
            _ => {
                let (from, to) = (lab.source(u)?, lab.target(u)?);
                during.push(if u.arbitrary()? {
                    format!("- reach: {{from: {from}, to: {to}}}")
                } else {
                    format!(
                        "- outage: {{from: {from}, to: {to}, at_most: {}s}}",
                        u.int_in_range(0..=120u32)?
                    )
                });
                continue;
            }
        };
        list.push(check(u, lab)?);
    }
    if !(before.is_empty() && after.is_empty() && during.is_empty()) {
        lines.push("expect:".into());
        for (key, list) in [("before", before), ("after", after), ("during", during)] {
            if !list.is_empty() {
                lines.push(format!("  {key}:"));
                lines.extend(list.into_iter().map(|c| format!("    {c}")));
            }
        }
    }
    Ok(lines)
}

/// One expectation after (or before) a step.
fn check(u: &mut Unstructured, lab: &Lab) -> Result<String> {
    let l = lab.leaf(u)?;
    let (from, to) = (lab.source(u)?, lab.target(u)?);
    let node_ip = lab.plan.leaf_node_addrs(l, 1).1;
    Ok(match u.int_in_range(0..=6)? {
        0 => format!("- reach: {{from: {from}, to: {to}}}"),
        1 => format!("- unreachable: {{from: {from}, to: {to}}}"),
        2 => format!(
            "- route: {{on: leaf-{l}, prefix: {}, present: {}}}",
            u.choose(&[
                "0.0.0.0/0",
                "10.128.0.0/10",
                "10.96.0.0/12",
                "10.255.0.0/31",
                "10.254.0.0/31"
            ])?,
            u.arbitrary::<bool>()?
        ),
        3 => format!(
            "- session: {{on: leaf-{l}, peer: {node_ip}, state: {}}}",
            u.choose(&["Established", "Active", "Idle", "Connect"])?
        ),
        4 => format!(
            "- prefixes: {{on: leaf-{l}, neighbor: {node_ip}, received: {}}}",
            u.int_in_range(0..=8u32)?
        ),
        5 => format!(
            "- output: {{on: leaf-{l}, run: {}, contains: [{}]}}",
            yaml_string(u.choose(&[
                "show ip route",
                "show ip bgp summary",
                "show ip ospf neighbor",
                "show ip bgp"
            ])?),
            yaml_string(&free_text(u)?)
        ),
        _ => format!("- capture: {{from: {from}, to: {to}, on: leaf-{l}, interface: Ethernet1}}"),
    })
}

fn runbook(u: &mut Unstructured, lab: &Lab) -> Result<Vec<Vec<String>>> {
    let n = u.int_in_range(1..=MAX_STEPS)?;
    (0..n).map(|_| step(u, lab)).collect()
}

/// The scenario file: the generated topology, the event budget, the steps.
fn scenario_text(steps: &[Vec<String>]) -> String {
    let mut out =
        format!("name: fuzz-lab\ntopology: lab.yaml\nlimits: {{events: {EVENTS}, reach_endpoints: 40}}\nsteps:\n");
    for (i, lines) in steps.iter().enumerate() {
        let _ = writeln!(out, "  - id: s{i}");
        for line in lines {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// A YAML double-quoted scalar.
fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}
