//! Node maintenance from the runbook on the three-node cluster of tests/data/node-ops.yaml (n1
//! is the control plane, n2 and n3 workers): cordon, drain refused and done, labels, taints
//! (NoExecute evicts), node and pod deletion — each command's text as kubectl v1.28 prints it,
//! and what follows in the cluster and the network (pods rescheduled with new addresses,
//! felix's routes following them).

mod common;

use std::net::Ipv4Addr;

use common::{assert_has, out_in, run_file};
use fabsim::k8s::{Owner, Pod};
use fabsim::scenario::Run;

const SCENARIO: &str = "tests/data/node-ops.yaml";

/// What the runbook line `command` printed in the last step of `run`, and its exit status.
fn printed(run: &Run, command: &str) -> (String, i32) {
    let step = run.steps.last().expect("a step");
    let c = step
        .commands
        .iter()
        .find(|c| c.command == command)
        .unwrap_or_else(|| panic!("step {} ran no `{command}`", step.id));
    (c.output.clone(), c.status)
}

fn pods(run: &Run) -> Vec<Pod> {
    run.engine.network().cluster.as_ref().expect("a cluster").pods.clone()
}

/// `NS/NAME` of the pods on `node` that `pick` selects, in the API's list order.
fn ids_on(run: &Run, node: &str, pick: impl Fn(&Pod) -> bool) -> Vec<String> {
    let mut ids: Vec<String> = pods(run)
        .iter()
        .filter(|p| p.node.as_deref() == Some(node) && pick(p))
        .map(|p| format!("{}/{}", p.namespace, p.name))
        .collect();
    ids.sort();
    ids
}

fn daemon(p: &Pod) -> bool {
    matches!(p.owner, Owner::DaemonSet(_))
}

fn pod_named(run: &Run, name: &str) -> Option<Pod> {
    pods(run).into_iter().find(|p| p.name == name)
}

/// One ping from `from` to `to` is answered (busybox and iputils word their summary
/// differently).
fn assert_reaches(run: &Run, from: &str, to: Ipv4Addr) {
    assert_has(
        &out_in(run, from, &format!("ping -c 1 {to}")),
        &["1 packets transmitted, 1 ...received, 0% packet loss..."],
    );
}

#[test]
fn cordon_shows_in_get_nodes_and_keeps_new_pods_off() {
    let run = run_file(SCENARIO, "cordon");
    assert_eq!(printed(&run, "kubectl cordon n2"), ("node/n2 cordoned\n".into(), 0));
    let step = run.steps.last().expect("step");
    assert_eq!(step.commands[1].output, "node/n2 already cordoned\n");
    assert_has(
        &printed(&run, "kubectl get nodes").0,
        &[
            "n1 Ready control-plane ...",
            "n2 Ready,SchedulingDisabled <none> ...",
            "n3 Ready <none> ...",
        ],
    );
    let describe = out_in(&run, "n1", "kubectl describe node n2");
    assert_has(
        &describe,
        &[
            "Taints: node.kubernetes.io/unschedulable:NoSchedule",
            "Unschedulable: true",
        ],
    );
    // n2 and n3 run two pods each and n2 joined first: cordoned, it does not get `web`.
    assert_eq!(pod_named(&run, "web").and_then(|p| p.node).as_deref(), Some("n3"));

    let run = run_file(SCENARIO, "uncordon");
    let step = run.steps.last().expect("step");
    let texts: Vec<&str> = step.commands.iter().map(|c| c.output.as_str()).collect();
    assert_eq!(
        texts,
        [
            "node/n2 uncordoned\n",
            "node/n2 already uncordoned\n",
            "Error from server (NotFound): nodes \"ghost\" not found\n",
            "Error from server (NotFound): nodes \"ghost\" not found\n",
            "Error from server (NotFound): nodes \"ghost\" not found\n",
        ]
    );
    assert!(step.commands[2..].iter().all(|c| c.status == 1));
    assert_has(&out_in(&run, "n1", "kubectl get nodes"), &["n2 Ready <none> ..."]);
    assert!(out_in(&run, "n1", "kubectl describe node n2").contains("Unschedulable:      false"));
}

#[test]
fn drain_refuses_daemonset_and_bare_pods_as_kubectl_does() {
    let run = run_file(SCENARIO, "drain-daemonsets");
    let ds = ids_on(&run, "n2", daemon).join(", ");
    let bare = ids_on(&run, "n2", |p| p.owner == Owner::Bare).join(", ");
    assert_eq!(bare, "default/p2");
    let (out, status) = printed(&run, "kubectl drain n2");
    let ds_err = format!("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): {ds}");
    let bare_err = format!("cannot delete Pods declare no controller (use --force to override): {bare}");
    assert_eq!(
        out,
        format!(
            "node/n2 cordoned\n\
             error: unable to drain node \"n2\" due to error:[{ds_err}, {bare_err}], continuing command...\n\
             There are pending nodes to be drained:\n n2\n{ds_err}\n{bare_err}\n"
        )
    );
    assert_eq!(status, 1);
    // Nothing was evicted, but the node stays cordoned.
    assert!(pod_named(&run, "p2").is_some());
    assert_has(
        &out_in(&run, "n1", "kubectl get nodes"),
        &["n2 Ready,SchedulingDisabled ..."],
    );

    let run = run_file(SCENARIO, "drain-bare");
    let (out, status) = printed(&run, "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data");
    assert_eq!(
        out,
        format!(
            "node/n2 already cordoned\n\
             error: unable to drain node \"n2\" due to error:{bare_err}, continuing command...\n\
             There are pending nodes to be drained:\n n2\n{bare_err}\n"
        )
    );
    assert_eq!(status, 1);
}

#[test]
fn drain_evicts_and_the_deployment_pod_comes_back_elsewhere_with_a_new_address() {
    let before = run_file(SCENARIO, "drain-bare");
    let moved = ids_on(&before, "n2", |p| matches!(p.owner, Owner::Deployment(_)));
    assert_eq!(moved.len(), 1, "{moved:?}");
    let old = pod_named(&before, moved[0].split_once('/').map_or("", |(_, n)| n)).expect("pod");
    let old_ip = old.ip.expect("an address");
    let ds = ids_on(&before, "n2", daemon).join(", ");

    let run = run_file(SCENARIO, "drain");
    let (out, status) = printed(
        &run,
        "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data --force",
    );
    assert_eq!(status, 0);
    assert_eq!(
        out,
        format!(
            "node/n2 already cordoned\n\
             Warning: ignoring DaemonSet-managed Pods: {ds}; deleting Pods that declare no controller: default/p2\n\
             evicting pod default/p2\n\
             evicting pod {}\n\
             pod/p2 evicted\n\
             pod/{} evicted\n\
             node/n2 drained\n",
            moved[0], old.name
        )
    );
    // The bare pod is gone; DaemonSet pods stay; the Deployment's pod is replaced.
    assert!(pod_named(&run, "p2").is_none());
    assert!(pod_named(&run, &old.name).is_none());
    assert_eq!(ids_on(&run, "n2", |_| true).join(", "), ds);
    let replacement = pods(&run)
        .into_iter()
        .find(|p| p.owner == old.owner && p.node.as_deref() != Some("n2") && p.created_ms > old.created_ms)
        .expect("a replacement");
    let (node, ip) = (
        replacement.node.clone().expect("scheduled"),
        replacement.ip.expect("an address"),
    );
    assert_ne!(ip, old_ip);
    // Its address is in its new node's block (felix's /32 there), and n2 no longer routes the
    // old one to a veth.
    assert_has(&out_in(&run, &node, "ip r"), &[&format!("{ip} dev cali... scope link")]);
    assert!(!out_in(&run, "n2", "ip r").contains(&format!("{old_ip} dev cali")));
    let step = run.steps.last().expect("step");
    assert!(step
        .route_changes
        .iter()
        .any(|r| r.starts_with(&format!("n2: - {old_ip} dev cali"))));
    assert!(step
        .route_changes
        .iter()
        .any(|r| r.starts_with(&format!("{node}: + {ip} dev cali"))));
    // And the rest of the cluster reaches it.
    assert_reaches(&run, "p3", ip);
}

#[test]
fn labels_change_with_kubectls_texts_and_schedule_a_waiting_pod() {
    let run = run_file(SCENARIO, "label");
    let step = run.steps.last().expect("step");
    let texts: Vec<(&str, i32)> = step.commands[1..]
        .iter()
        .map(|c| (c.output.as_str(), c.status))
        .collect();
    assert_eq!(
        texts,
        [
            ("node/n3 labeled\n", 0),
            ("error: 'rack' already has a value (b), and --overwrite is false\n", 1),
            ("node/n3 labeled\n", 0),
            ("label \"color\" not found.\nnode/n3 unlabeled\n", 0),
            ("Error from server (NotFound): nodes \"ghost\" not found\n", 1),
        ]
    );
    // `picky` selects rack=c: pending until n3 had it, then scheduled there (nodeSelector is
    // not enforced once running, so removing the label does not move it).
    assert_eq!(pod_named(&run, "picky").and_then(|p| p.node).as_deref(), Some("n3"));
    let cluster = run.engine.network().cluster.as_ref().expect("cluster");
    let n3 = cluster.node("n3").expect("n3");
    assert!(!n3.labels.contains_key("rack"));
    // The Calico Node is the Kubernetes Node: its labels follow.
    let calico = cluster.calico.as_ref().expect("calico");
    assert_eq!(calico.datastore.nodes["n3"].labels.get("rack"), None);
}

#[test]
fn taints_change_with_kubectls_texts() {
    let run = run_file(SCENARIO, "taint");
    let step = run.steps.last().expect("step");
    let texts: Vec<(&str, i32)> = step.commands[1..]
        .iter()
        .map(|c| (c.output.as_str(), c.status))
        .collect();
    assert_eq!(
        texts,
        [
            ("node/n3 tainted\n", 0),
            (
                "error: node n3 already has dedicated taint(s) with same effect(s) and --overwrite is false\n",
                1
            ),
            ("node/n3 untainted\n", 0),
            ("error: taint \"dedicated:NoSchedule\" not found\n", 1),
            (
                "error: invalid taint effect: Sometimes, unsupported taint effect\nSee 'kubectl taint -h' for help and examples\n",
                1
            ),
        ]
    );
    assert!(out_in(&run, "n1", "kubectl describe node n3").contains("Taints:             <none>"));
}

#[test]
fn a_no_execute_taint_evicts_pods_that_do_not_tolerate_it() {
    let before = run_file(SCENARIO, "taint");
    let on_n3 = |run: &Run| ids_on(run, "n3", |_| true);
    let deployment = pods(&before)
        .into_iter()
        .find(|p| p.node.as_deref() == Some("n3") && matches!(p.owner, Owner::Deployment(_)))
        .expect("a Deployment pod on n3");
    assert!(pod_named(&before, "p3").is_some() && pod_named(&before, "picky").is_some());

    let run = run_file(SCENARIO, "no-execute");
    assert_eq!(
        printed(&run, "kubectl taint node n3 maint=now:NoExecute"),
        ("node/n3 tainted\n".into(), 0)
    );
    assert_has(
        &out_in(&run, "n1", "kubectl describe node n3"),
        &["Taints: maint=now:NoExecute"],
    );
    // Only the DaemonSet pods (which tolerate everything) stay; bare pods are gone.
    assert_eq!(on_n3(&run), ids_on(&before, "n3", daemon));
    assert!(pod_named(&run, "p3").is_none() && pod_named(&run, "picky").is_none());
    // The Deployment's pod is replaced on the one node left that it may use.
    let replacement = pods(&run)
        .into_iter()
        .find(|p| p.owner == deployment.owner)
        .expect("replacement");
    assert_ne!(replacement.name, deployment.name);
    assert_eq!(replacement.node.as_deref(), Some("n2"));
    let ip = replacement.ip.expect("address");
    assert_has(&out_in(&run, "n2", "ip r"), &[&format!("{ip} dev cali... scope link")]);
    assert!(!out_in(&run, "n3", "ip r").contains(" dev cali"));
}

#[test]
fn deleting_a_node_removes_it_its_pods_and_its_routes_but_not_its_affinities() {
    let before = run_file(SCENARIO, "no-execute");
    let n3_block = out_in(&before, "n3", "ip r")
        .lines()
        .find(|l| l.starts_with("blackhole "))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        .expect("n3's block");
    assert_has(
        &out_in(&before, "n1", "ip r"),
        &[&format!("{n3_block} via ... proto bird ...")],
    );

    let run = run_file(SCENARIO, "delete-node");
    let step = run.steps.last().expect("step");
    assert_eq!(
        (step.commands[0].output.as_str(), step.commands[0].status),
        ("node \"n3\" deleted\n", 0)
    );
    assert_eq!(
        (step.commands[1].output.as_str(), step.commands[1].status),
        ("Error from server (NotFound): nodes \"n3\" not found\n", 1)
    );
    let nodes = out_in(&run, "n1", "kubectl get nodes");
    assert!(!nodes.contains("n3"), "{nodes}");
    assert!(ids_on(&run, "n3", |_| true).is_empty());
    // n3's BIRD stopped with calico-node: the others lose its block, n3 everything BIRD had.
    assert!(!out_in(&run, "n1", "ip r").contains(&n3_block));
    assert!(!out_in(&run, "n3", "ip r").contains("proto bird"));
    // Its BlockAffinity stays until calico-kube-controllers cleans up (not modelled).
    let affinities = out_in(&run, "n1", "kubectl get blockaffinities");
    assert!(affinities.lines().any(|l| l.starts_with("n3-")), "{affinities}");
}

#[test]
fn deleting_pods_by_name_and_all() {
    let before = run_file(SCENARIO, "no-execute");
    let run = run_file(SCENARIO, "delete-pods");
    assert_eq!(
        printed(&run, "kubectl delete pods p4 ghost"),
        (
            "pod \"p4\" deleted\nError from server (NotFound): pods \"ghost\" not found\n".into(),
            1
        )
    );
    assert_eq!(
        printed(&run, "kubectl delete pods --all"),
        ("No resources found\n".into(), 0)
    );
    let (out, status) = printed(&run, "kubectl delete pods --all -n kube-system");
    assert_eq!(status, 0);
    // Every kube-system pod that existed is listed, in name order (n3's went with the node).
    let mut expected: Vec<String> = pods(&run_file(SCENARIO, "delete-node"))
        .iter()
        .filter(|p| p.namespace == "kube-system")
        .map(|p| format!("pod \"{}\" deleted\n", p.name))
        .collect();
    expected.sort();
    assert_eq!(out, expected.concat());
    // Static (mirror) pods come back under their names; coredns gets new pods.
    let after = pods(&run);
    assert!(after.iter().any(|p| p.name == "etcd-n1"));
    let coredns = |ps: &[Pod]| -> Vec<String> {
        ps.iter()
            .filter(|p| p.owner == Owner::Deployment("coredns".into()))
            .map(|p| p.name.clone())
            .collect()
    };
    let (old, new) = (coredns(&pods(&before)), coredns(&after));
    assert_eq!(new.len(), 2);
    assert!(new.iter().all(|n| !old.contains(n)), "{old:?} {new:?}");
}

#[test]
fn a_label_decides_which_pool_a_new_pods_address_comes_from() {
    let run = run_file(SCENARIO, "pool-by-label");
    let step = run.steps.last().expect("step");
    assert!(step.commands.iter().all(|c| c.status == 0), "{:?}", step.commands);
    // The default pool now selects nodes without `rack`, the new one rack == "b": n2's next
    // pod takes a block of 10.77.0.0/16 although n2 has free addresses in its old block.
    let ip = pod_named(&run, "p5").and_then(|p| p.ip).expect("p5 has an address");
    let pool: ipnet::Ipv4Net = "10.77.0.0/16".parse().expect("cidr");
    assert!(pool.contains(&ip), "{ip}");
    let block = out_in(&run, "n2", "ip r")
        .lines()
        .find(|l| l.starts_with("blackhole 10.77."))
        .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        .expect("n2's block of the new pool");
    assert_has(
        &out_in(&run, "n1", "ip r"),
        &[&format!("{block} via 192.168.1.12 dev tunl0 proto bird onlink")],
    );
    let on_n1 = pods(&run)
        .into_iter()
        .find(|p| p.node.as_deref() == Some("n1") && !p.host_network && p.ip.is_some())
        .expect("a pod on n1");
    assert_reaches(&run, &on_n1.name, ip);
}

#[test]
fn a_set_pod_cidr_cannot_change_through_the_api() {
    let run = run_file(SCENARIO, "pod-cidr");
    assert_eq!(
        printed(&run, r#"kubectl patch node n2 -p '{"spec":{"podCIDR":"10.66.9.0/24"}}'"#),
        (
            "The Node \"n2\" is invalid: spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid\n"
                .into(),
            1
        )
    );
    assert_eq!(
        printed(
            &run,
            r#"kubectl patch node n2 --type merge -p '{"spec":{"podCIDRs":["10.66.1.0/24"]}}'"#
        ),
        ("node/n2 patched (no change)\n".into(), 0)
    );
    assert_eq!(
        printed(
            &run,
            r#"kubectl patch node/ghost -p '{"spec":{"podCIDR":"10.66.9.0/24"}}'"#
        ),
        ("Error from server (NotFound): nodes \"ghost\" not found\n".into(), 1)
    );
    assert_has(
        &out_in(&run, "n1", "kubectl describe node n2"),
        &["PodCIDR:                      10.66.1.0/24"],
    );
}

#[test]
fn an_empty_pod_cidr_is_set_once() {
    let run = run_file("tests/data/node-pod-cidr.yaml", "set-pod-cidr");
    assert_eq!(
        printed(
            &run,
            r#"kubectl patch node n1 -p '{"spec":{"podCIDR":"10.244.7.0/24"}}'"#
        ),
        ("node/n1 patched\n".into(), 0)
    );
    assert_eq!(
        printed(
            &run,
            r#"kubectl patch node n1 -p '{"spec":{"podCIDR":"10.244.8.0/24"}}'"#
        )
        .1,
        1
    );
    assert_has(
        &out_in(&run, "n1", "kubectl describe node n1"),
        &[
            "PodCIDR:                      10.244.7.0/24",
            "PodCIDRs:                     10.244.7.0/24",
        ],
    );
}
