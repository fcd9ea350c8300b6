//! The second bundled scenario (issue #5 item 7): the seed lab's migration planned so that no
//! pod-to-pod or client-to-pod pair ever breaks. It passes with every watched ping answered in
//! every step and every pair checked after every step of the migration; it replays
//! byte-identically; its start is the seed scenario's verbatim; and the two mechanisms its plan
//! rests on are shown by editing it: without the leaves' static routes the AS change loses
//! pings, and a node peered with its leaf before its re-address advertises its ens5 next hop.

mod common;

use std::path::Path;

use common::{assert_has, fabsim, out_in};
use fabsim::scenario::{self, has_line, When};

const PLAN: &str = "scenarios/seed-lab-no-outage.yaml";
const SEED: &str = "scenarios/seed-lab.yaml";
/// The first step of the migration proper; everything before it is the seed's s0-s2b.
const FIRST_OWN_STEP: &str = "pod-k-w3";

/// The plan, edited: `edit` changes its steps before the replay to `until` (all if None).
fn plan_variant(until: Option<&str>, edit: impl FnOnce(&mut Vec<scenario::Step>)) -> scenario::Run {
    let mut opened = scenario::open(Path::new(PLAN)).unwrap_or_else(|e| panic!("{e}"));
    edit(&mut opened.scenario.as_mut().expect("a scenario").steps);
    scenario::run(&opened, until).unwrap_or_else(|e| panic!("{e}"))
}

/// Every pod with an address, as `kubectl get pods -A -o wide` lists it: (name, IP).
fn pods(run: &scenario::Run) -> Vec<(String, String)> {
    out_in(run, "k-master", "kubectl get pods -A -o wide")
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 6 && f[6].starts_with("10.66.")).then(|| (f[1].to_string(), f[6].to_string()))
        })
        .collect()
}

#[test]
fn the_planned_migration_keeps_every_pair_reachable() {
    let run = plan_variant(None, |_| {});
    let failed: Vec<String> = run
        .failures()
        .map(|(s, c)| format!("{}: {}\n{}", s.id, c.what, c.detail))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));

    let first = run
        .steps
        .iter()
        .position(|s| s.id == FIRST_OWN_STEP)
        .expect("the migration's first step");
    let own = &run.steps[first..];
    assert!(own.len() > 10, "the migration has its steps");
    // Every pod the cluster runs at the end (one at least on each node's block), and the
    // client: each pair is checked after every step, reachable from the first step on where
    // the fabric routes the pod network.
    let pods = pods(&run);
    assert!(pods.len() >= 5, "{pods:?}");
    for step in own {
        let after: Vec<&str> = step
            .checks
            .iter()
            .filter(|c| c.when == When::After)
            .map(|c| c.what.as_str())
            .collect();
        for (name, ip) in &pods {
            for (other, _) in pods.iter().filter(|(o, _)| o != name) {
                let want = format!("{other} reaches {ip}");
                assert!(after.contains(&want.as_str()), "{}: no `{want}` after it", step.id);
            }
            let client = format!("client reaches {ip}");
            let blocked = format!("client cannot reach {ip} (ICMP error from 10.4.44.0)");
            assert!(
                after.contains(&client.as_str()) || after.contains(&blocked.as_str()),
                "{}: nothing checks client -> {ip}",
                step.id
            );
        }
    }
    // Once the fabric routes the pod network (the last leaf's static route), the client
    // reaches every pod after every step.
    let bridged = own.iter().position(|s| s.id == "bridge-leaf-3").expect("bridge-leaf-3");
    for step in &own[bridged..] {
        for (_, ip) in &pods {
            let want = format!("client reaches {ip}");
            assert!(
                step.checks.iter().any(|c| c.what == want && c.ok),
                "{}: {want}",
                step.id
            );
        }
    }

    // Every step of the migration watched pings while it ran, and none lost a probe.
    for step in own.iter().skip(1) {
        assert!(!step.flows.is_empty(), "{} watches no ping", step.id);
        for f in &step.flows {
            assert!(
                f.outages.is_empty(),
                "{}: {} -> {} lost probes:\n{}",
                step.id,
                f.from,
                f.to,
                f.transcript
            );
            assert!(
                f.transcript.contains("bytes from"),
                "{}: {} -> {} sent nothing",
                step.id,
                f.from,
                f.to
            );
        }
        for c in step.checks.iter().filter(|c| c.when == When::During) {
            assert!(c.what.ends_with("throughout the step"), "{}: {}", step.id, c.what);
        }
    }
    // The steps that restart BIRD sessions took time, and the pings ran through it.
    let as_change = own.iter().find(|s| s.id == "bgpconfig").expect("bgpconfig");
    assert!(
        as_change.settled_ms > as_change.start_ms,
        "the AS change restarts the mesh"
    );
    assert!(as_change
        .flows
        .iter()
        .all(|f| f.transcript.matches("bytes from").count() > 2));
}

/// (`scenario_report::bundled_scenarios_give_byte_identical_json` does the same for the seed.)
#[test]
fn the_plan_exits_0_and_replays_byte_identically() {
    let a = fabsim(&["run", PLAN, "--format", "json"]);
    let b = fabsim(&["run", PLAN, "--format", "json"]);
    assert_eq!(a.status.code(), Some(0), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout, "the JSON differs between two runs");
}

/// The plan starts where the seed lab's s2b left off, with the seed's own steps.
#[test]
fn the_start_is_the_seed_scenario_verbatim() {
    let seed = std::fs::read_to_string(SEED).expect("seed scenario");
    let plan = std::fs::read_to_string(PLAN).expect("plan");
    let from = seed.find("\ntiming:").expect("the seed's timing") + 1;
    let to = seed.find("\n  - id: s3a-leaf-1").expect("the seed's s3a");
    assert!(
        plan.contains(&seed[from..to]),
        "{PLAN} must copy {SEED} from `timing:` to s2b verbatim"
    );
    let opened = scenario::open(Path::new(PLAN)).unwrap_or_else(|e| panic!("{e}"));
    let steps = &opened.scenario.as_ref().expect("a scenario").steps;
    let own = steps
        .iter()
        .position(|s| s.id == FIRST_OWN_STEP)
        .expect("first own step");
    assert_eq!(steps[own - 1].id, "s2b");
}

/// Why the plan has the leaves' static routes: the BGPConfiguration's AS change restarts every
/// mesh session (BIRD cannot take a new `local as` without a restart, and a Cease keeps no
/// routes), so without another path every pod-to-pod ping is lost until the mesh is back.
#[test]
fn without_the_static_bridge_the_as_change_loses_pod_to_pod_pings() {
    let run = plan_variant(Some("bgpconfig"), |steps| {
        steps.retain(|s| !s.id.starts_with("bridge-") && !s.id.starts_with("unbridge-"));
        for s in steps.iter_mut() {
            s.after.clear();
        }
    });
    let step = run.steps.last().expect("bgpconfig");
    let pod_flows: Vec<_> = step.flows.iter().filter(|f| f.from != "client").collect();
    assert!(!pod_flows.is_empty());
    for f in pod_flows {
        let o = f
            .outages
            .first()
            .unwrap_or_else(|| panic!("{} -> {}: no outage\n{}", f.from, f.to, f.transcript));
        assert!(o.until_ms.is_some(), "the mesh comes back");
        assert!(
            (1..=4).contains(&o.lost()),
            "{} -> {}: {} probes lost",
            f.from,
            f.to,
            o.lost()
        );
        assert!(o.how.contains("has no route to 10.66."), "{}", o.how);
    }
}

/// seed-lab.md I24: a node's BIRD advertises its configured `source address` as next hop,
/// even when the session exists because the leaf connected to the node's ens3 address. Peered
/// before its re-address, k-master offers Leaf-1 next hop 10.0.137.12, which the fabric cannot
/// reach: the paths are received but none is valid.
#[test]
fn a_node_peered_before_its_re_address_advertises_its_ens5_next_hop() {
    let run = plan_variant(Some("peer-k-master"), |steps| {
        let node = steps
            .iter()
            .position(|s| s.id == "node-k-master")
            .expect("node-k-master");
        let peer = steps.remove(node + 1);
        assert_eq!(peer.id, "peer-k-master");
        steps.insert(node, peer);
        for s in steps.iter_mut() {
            s.after.clear();
        }
    });
    let proto = out_in(&run, "k-master", "birdcl show protocols all Node_10_0_11_0");
    assert_has(&proto, &["BGP state: Established", "Source address: 10.0.137.12"]);
    let paths = out_in(&run, "Leaf-1", "show ip bgp");
    assert_has(&paths, &["10.66.111.0/24 10.0.137.12 0 - 100 0 65000 i"]);
    assert!(!has_line(&paths, "* ... 10.66.111.0/24"), "no valid path:\n{paths}");
}
