//! A DaemonSet rolling update over virtual time, and the pings a step watches while it runs
//! (`expect: during:`): the seed lab's s6 calico-node restart and its variants.

mod common;

use std::path::Path;

use common::{assert_has, out_in};
use fabsim::scenario::{self, has_line, FlowCheck, FlowExpectation, When};

/// The seed-lab scenario, edited: `edit` changes its steps before the replay to `until`.
fn seed_variant(until: &str, edit: impl FnOnce(&mut Vec<scenario::Step>)) -> scenario::Run {
    let mut opened = scenario::open(Path::new("scenarios/seed-lab.yaml")).unwrap_or_else(|e| panic!("{e}"));
    edit(&mut opened.scenario.as_mut().expect("a scenario").steps);
    scenario::run(&opened, Some(until)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_watched_ping_that_must_never_fail_reports_the_outage() {
    let run = seed_variant("s6-rollout", |steps| {
        let step = steps.iter_mut().find(|s| s.id == "s6-rollout").expect("s6-rollout");
        step.during = vec![FlowExpectation {
            from: "client".into(),
            to: "10.66.111.1".into(),
            check: FlowCheck::Reach,
            span: step.span.clone(),
        }];
    });
    let report = run.steps.last().expect("s6-rollout");
    let check = report
        .checks
        .iter()
        .find(|c| c.when == When::During)
        .expect("a during check");
    assert!(!check.ok, "{}", check.detail);
    assert_has(
        &check.detail,
        &["unreachable for ... (icmp_seq ...): From 10.4.44.0 Destination Net Unreachable"],
    );
    let outage = &report.flows[0].outages[0];
    assert!(outage.until_ms.is_some(), "the flow recovers before the step ends");
}

/// seed-lab.md I24: without an explicit autodetection method, calico-node's restart runs
/// first-found again and each node goes back to its ens5 address. BIRD then advertises that
/// address (its `source address`) as next hop to the leaf, which cannot resolve it: the leaf
/// keeps the paths but none is valid, and the client's pings to k-master's pod do not recover.
#[test]
fn without_the_autodetection_method_the_restart_reverts_to_ens5() {
    let run = seed_variant("s6-rollout", |steps| steps.retain(|s| s.id != "s6-autodetect"));
    let node = out_in(&run, "k-master", "calicoctl get node k-master -o yaml");
    assert_has(&node, &["ipv4Address: 10.0.137.12/24"]);
    let paths = out_in(&run, "Leaf-1", "show ip bgp");
    assert_has(&paths, &["10.66.111.0/24 10.0.137.12 0 - 100 0 65000 i"]);
    assert!(!has_line(&paths, "* ... 10.66.111.0/24"), "no valid path:\n{paths}");
    let report = run.steps.last().expect("s6-rollout");
    let last = report.flows[0].outages.last().expect("the client loses k-master's pod");
    assert!(
        last.until_ms.is_none(),
        "and does not get it back: {}",
        report.flows[0].transcript
    );
    let with_method = common::run_to("s6-rollout");
    let node = out_in(&with_method, "k-master", "calicoctl get node k-master -o yaml");
    assert_has(&node, &["ipv4Address: 10.0.11.1/31"]);
}

#[test]
fn rollout_status_on_a_daemonset_that_does_not_exist() {
    let run = seed_variant("s6-rollout", |steps| {
        let step = steps.iter_mut().find(|s| s.id == "s6-rollout").expect("s6-rollout");
        if let scenario::Action::Run { lines, .. } = &mut step.action {
            lines[1].0 = "kubectl rollout status daemonset/calico-nod -n kube-system".into();
        }
    });
    let report = run.steps.last().expect("s6-rollout");
    let status = &report.commands[1];
    assert_eq!(status.status, 1);
    assert_eq!(
        status.output,
        "Error from server (NotFound): daemonsets.apps \"calico-nod\" not found\n"
    );
}
