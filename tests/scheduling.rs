//! kube-scheduler's FailedScheduling (v1.28 `FitError.Error()`): the message in `kubectl
//! describe pod`'s Events and `kubectl get events`, and a finding for a pod a step leaves
//! Pending. On the three-node cluster of tests/data/node-ops.yaml (n1 the control plane).

mod common;

use std::path::Path;

use common::{out_in, run_file};
use fabsim::scenario;

const SCENARIO: &str = "tests/data/node-ops.yaml";

/// At `label`, n2 is still cordoned by the drain before it and n3 lacks `rack=c`: each node
/// fails a different filter, and the reasons are counted and sorted as strings.
const PICKY: &str = "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
                     1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, \
                     1 node(s) were unschedulable. \
                     preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..";

#[test]
fn before_the_cni_coredns_is_pending_on_the_not_ready_taint() {
    let run = run_file(SCENARIO, "cluster");
    let step = run.steps.last().expect("cluster");
    let coredns: Vec<&String> = step.findings.iter().filter(|f| f.contains("/coredns-")).collect();
    assert_eq!(coredns.len(), 2, "{:?}", step.findings);
    // coredns tolerates the control-plane taint, so the not-ready one is the reason.
    assert!(
        coredns[0].ends_with(
            "is Pending: FailedScheduling: 0/1 nodes are available: 1 node(s) had untolerated taint \
             {node.kubernetes.io/not-ready: }. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.."
        ),
        "{}",
        coredns[0]
    );
}

#[test]
fn the_message_shows_in_describe_pod_and_get_events() {
    let run = run_file(SCENARIO, "label");
    let describe = out_in(&run, "n1", "kubectl describe pod picky");
    let events = describe
        .split_once("Events:\n")
        .map(|(_, e)| e)
        .expect("an Events table");
    let lines: Vec<&str> = events.lines().collect();
    assert!(
        lines[0].starts_with("  Type     Reason            Age   From               Message"),
        "{events}"
    );
    assert!(
        lines[2].starts_with("  Warning  FailedScheduling  ")
            && lines[2].ends_with(&format!("  default-scheduler  {PICKY}")),
        "{events}"
    );
    let all = out_in(&run, "n1", "kubectl get events");
    assert!(
        all.lines()
            .any(|l| l.contains("Warning   FailedScheduling   pod/picky   ") && l.ends_with(PICKY)),
        "{all}"
    );
    // The labels that follow let it run: no finding for a pod that was placed in the end.
    let step = run.steps.last().expect("label");
    assert!(
        !step.findings.iter().any(|f| f.contains("picky")),
        "{:?}",
        step.findings
    );
}

#[test]
fn a_pod_left_pending_is_a_finding_with_the_schedulers_message() {
    let mut opened = scenario::open(Path::new(SCENARIO)).unwrap_or_else(|e| panic!("{e}"));
    let steps = &mut opened.scenario.as_mut().expect("a scenario").steps;
    let label = steps.iter_mut().find(|s| s.id == "label").expect("label");
    if let scenario::Action::Run { lines, .. } = &mut label.action {
        lines.truncate(1);
    }
    let run = scenario::run(&opened, Some("label")).unwrap_or_else(|e| panic!("{e}"));
    let step = run.steps.last().expect("label");
    let expected = format!("pod default/picky is Pending: FailedScheduling: {PICKY}");
    assert!(step.findings.contains(&expected), "{:?}", step.findings);
}

/// kube-scheduler's NodeResourcesFit counts the pods bound to a node against its allocatable
/// pods, the kubelet's maxPods: with maxPods 2 every node is full once kube-proxy and
/// calico-node run there, and CoreDNS cannot be placed.
#[test]
fn a_node_at_its_max_pods_takes_no_more() {
    let dir = common::scratch("max-pods");
    let topology = std::fs::read_to_string("tests/data/calico-encap-topology.yaml")
        .expect("topology")
        .replace(
            "kubelet: {version: v1.28.15}",
            "kubelet: {version: v1.28.15, max_pods: 2}",
        );
    std::fs::write(dir.join("calico-encap-topology.yaml"), topology).expect("write");
    let scenario = std::fs::read_to_string("tests/data/services.yaml").expect("scenario");
    std::fs::write(dir.join("services.yaml"), scenario).expect("write");
    let run = common::run_file(dir.join("services.yaml").to_str().expect("utf-8"), "calico");
    let findings: Vec<&String> = run.steps.iter().flat_map(|s| &s.findings).collect();
    assert!(
        findings
            .iter()
            .any(|f| f.contains("FailedScheduling: 0/3 nodes are available: 3 Too many pods.")),
        "{findings:#?}"
    );
    let c = common::cluster(&run);
    assert!(c
        .kubelet_config_text("n2")
        .is_some_and(|t| t.contains("\nmaxPods: 2\n")));
    // `web` bypasses the scheduler (spec.nodeName): n2's kubelet rejects it at admission, as
    // `Kubelet::rejectPod` does — Failed, OutOfpods, and it stays so.
    let web = c.pod("default", "web").expect("web");
    assert_eq!(web.phase, fabsim::k8s::PodPhase::Failed);
    assert_eq!(web.ip, None);
    common::assert_has(
        &common::out_in(&run, "n1", "kubectl get pod web"),
        &["web 0/1 OutOfpods 0 ..."],
    );
    common::assert_has(
        &common::out_in(&run, "n1", "kubectl describe pod web"),
        &[
            "Status: Failed",
            "Reason: OutOfpods",
            "Message: Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
            "Warning OutOfpods ... kubelet Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
        ],
    );
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("pod default/web was rejected by the kubelet on n2: OutOfpods")),
        "{findings:#?}"
    );
}
