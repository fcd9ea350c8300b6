//! Cilium as the cluster's CNI (issue #7; k8s-cidr-migrations.md §1.3, §2.6 P0-1, §5 C11):
//! `scenarios/seed000-cilium.yaml` replays seed 000 on Cilium `ipam: kubernetes` with one node
//! re-registered without `rm -rf /var/run/cilium/`; `tests/data/cilium-cluster-pool.yaml` runs
//! the operator's cluster-pool out of blocks and widens it by appending a list entry. These tests
//! assert what the agent and the operator do, as Cilium's code does it (sim/k8s/cilium.rs).

mod common;

use std::path::Path;

use common::{assert_has, cluster, out_in, printed, step, steps_with};
use fabsim::k8s::CiliumAgent;
use fabsim::scenario::{self, Action, Opened, Run};

const SCENARIO: &str = "scenarios/seed000-cilium.yaml";
const CLUSTER_POOL: &str = "tests/data/cilium-cluster-pool.yaml";

fn opened(file: &str) -> Opened {
    scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"))
}

fn run_until(file: &str, step: Option<&str>) -> Run {
    scenario::run(&opened(file), step).unwrap_or_else(|e| panic!("{e}"))
}

fn pod_ip(run: &Run, name: &str) -> Option<String> {
    cluster(run)
        .pod("default", name)
        .and_then(|p| p.ip)
        .map(|ip| ip.to_string())
}

/// The range the agent of `node` runs with.
fn agent_range(run: &Run, node: &str) -> Option<String> {
    let cilium = cluster(run).cilium.as_ref().expect("Cilium installed");
    match cilium.agents.get(node)? {
        CiliumAgent::Running { range, .. } => Some(range.to_string()),
        CiliumAgent::Failed(_) => None,
    }
}

#[test]
fn the_main_scenario_meets_every_expectation() {
    common::meets_every_expectation(SCENARIO);
}

#[test]
fn the_manifest_installs_an_agent_per_node_that_allocates_from_its_nodes_pod_cidr() {
    let run = run_until(SCENARIO, Some("cilium"));
    assert_eq!(
        printed(&run, "cilium", "kubectl apply -f cilium.yaml"),
        (
            "configmap/cilium-config created\ndaemonset.apps/cilium created\ndeployment.apps/cilium-operator created\n"
                .to_string(),
            0
        )
    );
    for (node, range) in [
        ("n1", "10.112.0.0/24"),
        ("n2", "10.112.1.0/24"),
        ("n3", "10.112.2.0/24"),
    ] {
        assert_eq!(agent_range(&run, node).as_deref(), Some(range), "{node}");
    }
    assert_has(
        &out_in(&run, "n1", "kubectl -n kube-system get pods -o wide"),
        &[
            "cilium-... 1/1 Running 0 ... 192.168.1.12 n2 ...",
            "cilium-... 1/1 Running 0 ... 192.168.2.13 n3 ...",
        ],
    );
    assert_eq!(pod_ip(&run, "vm-a").as_deref(), Some("10.112.1.4"));
    assert_has(
        &out_in(&run, "n1", "kubectl -n kube-system get cm cilium-config -o yaml"),
        &[
            "apiVersion: v1",
            "data:",
            "  auto-direct-node-routes: \"true\"",
            "  ipam: kubernetes",
            "  ipv4-native-routing-cidr: 10.112.0.0/16",
            "kind: ConfigMap",
            "  name: cilium-config",
        ],
    );
    // What fabsim does not model is said where Cilium comes in, once.
    let said: Vec<String> = run
        .steps
        .iter()
        .flat_map(|s| s.warnings.iter().map(move |w| format!("{}: {}", s.id, w.message)))
        .filter(|w| w.contains("Cilium's datapath"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("cilium: "), "{said:?}");
    // Listed beside kubeadm's, by name.
    let listed = out_in(&run, "n1", "kubectl -n kube-system get cm");
    assert_has(&listed, &["cilium-config 4 ...", "kubeadm-config 1 ..."]);
    assert!(listed.find("cilium-config") < listed.find("kubeadm-config"), "{listed}");
}

/// P0-1's failing path: n2 rejoins with its /var/run/cilium/ kept. The agent takes the new
/// podCIDR (Cilium's code reads the range from the Node), loses the restored router address, and
/// the report names n2 with its old and new range; n1 and n3, cleared, have no such finding.
#[test]
fn a_node_rejoining_without_clearing_its_state_is_reported_with_its_old_and_new_range() {
    let run = run_until(SCENARIO, None);
    assert_eq!(
        steps_with(&run, "/var/run/cilium/ was not cleared"),
        ["restart-kubelet-n2"]
    );
    let finding = step(&run, "restart-kubelet-n2")
        .findings
        .iter()
        .find(|f| f.starts_with("n2: /var/run/cilium/ was not cleared"))
        .expect("the finding");
    for part in [
        "restored router IP 10.112.1.1 of the old range 10.112.1.0/24",
        "the new range 10.212.4.0/22",
        "Router IP could not be re-allocated. Need to re-allocate. This will cause brief network disruption",
    ] {
        assert!(finding.contains(part), "{part}: {finding}");
    }
    assert_eq!(agent_range(&run, "n2").as_deref(), Some("10.212.4.0/22"));
    assert_eq!(pod_ip(&run, "vm-a").as_deref(), Some("10.212.4.3"));
    // The agent the kubelet started on n1 with a cleared directory: a router of the new range.
    let cilium = cluster(&run).cilium.as_ref().expect("Cilium");
    assert!(matches!(
        cilium.agents["n1"],
        CiliumAgent::Running { discarded: None, router, .. } if router.to_string() == "10.212.0.1"
    ));
}

/// The same runbook with n2's state cleared too: no finding about it anywhere.
#[test]
fn clearing_the_state_on_every_node_leaves_nothing_to_report() {
    let mut o = opened(SCENARIO);
    let steps = &mut o.scenario.as_mut().expect("a scenario").steps;
    let at = steps.iter().position(|s| s.id == "pause-n2").expect("pause-n2");
    let mut clear = steps
        .iter()
        .find(|s| s.id == "clear-cilium-n3")
        .expect("clear-cilium-n3")
        .clone();
    clear.id = "clear-cilium-n2".into();
    if let Action::Run { device, .. } = &mut clear.action {
        *device = "n2".into();
    }
    steps.insert(at, clear);
    let run = scenario::run(&o, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(steps_with(&run, "/var/run/cilium/").is_empty());
    assert_eq!(agent_range(&run, "n2").as_deref(), Some("10.212.4.0/22"));
}

#[test]
fn rm_of_the_state_is_refused_while_the_kubelet_runs() {
    let mut o = opened(SCENARIO);
    for s in o.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { lines, .. }) = (s.id == "drain-n1", &mut s.action) {
            lines[0].0 = "rm -rf /var/run/cilium/".into();
        }
    }
    let refused = scenario::run(&o, Some("drain-n1")).err().expect("refused").to_string();
    assert!(
        refused.contains("fabsim clears the CNI files of a node whose kubelet is stopped"),
        "{refused}"
    );
}

#[test]
fn cluster_pool_exhaustion_stops_the_third_agent_until_an_appended_entry_gives_it_a_block() {
    let run = run_until(CLUSTER_POOL, Some("cilium"));
    assert_eq!(agent_range(&run, "n1").as_deref(), Some("10.0.0.0/24"));
    assert_eq!(agent_range(&run, "n2").as_deref(), Some("10.0.1.0/24"));
    assert_eq!(agent_range(&run, "n3"), None);
    let findings = &step(&run, "cilium").findings;
    for f in [
        "cilium-agent on n3 exits (Unable to derive PodCIDR via Node or CiliumNode resource, giving up)",
        "CiliumNode n3: cilium-operator could not allocate a podCIDR (allocator full)",
    ] {
        assert!(findings.iter().any(|x| x.starts_with(f)), "{f}: {findings:#?}");
    }
    assert_has(
        &out_in(&run, "n1", "kubectl -n kube-system get pods -o wide"),
        &["cilium-... 0/1 CrashLoopBackOff ... 192.168.2.13 n3 ..."],
    );
    assert_eq!(pod_ip(&run, "web"), None, "n3 has no CNI: NotReady");

    // The entry appended: nothing changes until the operator restarts and reads it.
    let run = run_until(CLUSTER_POOL, Some("append-pool"));
    assert_eq!(agent_range(&run, "n3"), None);
    let run = run_until(CLUSTER_POOL, None);
    assert_eq!(
        printed(
            &run,
            "restart-operator",
            "kubectl -n kube-system rollout restart deployment cilium-operator"
        ),
        ("deployment.apps/cilium-operator restarted\n".to_string(), 0)
    );
    assert_eq!(agent_range(&run, "n3").as_deref(), Some("10.8.0.0/24"));
    assert_eq!(agent_range(&run, "n1").as_deref(), Some("10.0.0.0/24"), "kept");
    assert_eq!(agent_range(&run, "n2").as_deref(), Some("10.0.1.0/24"), "kept");
    assert_eq!(pod_ip(&run, "web").as_deref(), Some("10.8.0.3"));
    assert!(step(&run, "restart-operator")
        .findings
        .iter()
        .all(|f| !f.contains("cilium-agent") && !f.contains("CiliumNode")));
}

/// The cluster-pool file with its cilium.yaml's pool lines replaced by `data`, run to the
/// cilium step.
fn with_cilium_data(data: &str) -> Result<Run, String> {
    let mut o = opened(CLUSTER_POOL);
    let original = "  ipam: \"cluster-pool\"\n  cluster-pool-ipv4-cidr: \"10.0.0.0/23\"\n";
    for s in o.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { files, .. }) = (s.id == "cilium", &mut s.action) {
            let text = files.get_mut("cilium.yaml").expect("cilium.yaml");
            assert!(text.contains(original), "{text}");
            *text = text.replace(original, data);
        }
    }
    scenario::run(&o, Some("cilium")).map_err(|e| e.to_string())
}

#[test]
fn bad_cilium_config_is_refused_with_the_key_and_what_was_expected() {
    let eni = with_cilium_data("  ipam: \"eni\"\n").err().expect("refused");
    assert!(
        eni.contains("ipam `eni`: fabsim models Cilium's kubernetes and cluster-pool IPAM modes"),
        "{eni}"
    );
    let bad = with_cilium_data("  ipam: \"cluster-pool\"\n  cluster-pool-ipv4-cidr: \"10.0.0.0/33\"\n")
        .err()
        .expect("refused");
    assert!(
        bad.contains("cluster-pool-ipv4-cidr `10.0.0.0/33` is not an IPv4 CIDR"),
        "{bad}"
    );
}
