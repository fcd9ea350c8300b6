//! The kubelet's life on a node (tests/data/node-lifecycle.yaml, three nodes of
//! calico-encap-topology.yaml, n1 the control plane): `systemctl stop|start kubelet` and the
//! node-monitor grace period, seed 000's re-registration giving a new podCIDR from a widened
//! `--cluster-cidr`, the finding for a node that keeps its Calico blocks, `kubeadm reset` and
//! joining again, and the lines fabsim refuses.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{assert_has, cluster, out_in, pod_cidr, printed, run_file, step};
use fabsim::k8s::{self, PodPhase};
use fabsim::scenario::Run;

const SCENARIO: &str = "tests/data/node-lifecycle.yaml";

fn pod_ip(run: &Run, name: &str) -> String {
    let pod = cluster(run).pod("default", name).expect("pod");
    assert_eq!(pod.phase, PodPhase::Running, "{name}");
    pod.ip.map(|ip| ip.to_string()).unwrap_or_default()
}

#[test]
fn a_stopped_kubelet_goes_not_ready_after_the_grace_period_and_its_pods_keep_running() {
    let before = run_file(SCENARIO, "calico");
    let p2 = pod_ip(&before, "p2");
    let run = run_file(SCENARIO, "not-ready");
    // At the stop the Node still shows its last Ready: for 40s (v1.28's default grace).
    let (nodes, _) = printed(&run, "stop-kubelet", "kubectl get nodes");
    assert_has(&nodes, &["n2 Ready <none> ..."]);
    let down = &cluster(&run).kubelets_down["n2"];
    assert_eq!((down.stale_from_ms, down.was_ready), (down.since_ms + 40_000, true));
    let (nodes, _) = printed(&run, "not-ready", "kubectl get nodes");
    assert_has(
        &nodes,
        &[
            "n1 Ready control-plane ...",
            "n2 NotReady <none> ...",
            "n3 Ready <none> ...",
        ],
    );
    // Its status is stale, not failing: conditions Unknown, the unreachable taint.
    assert_has(
        &out_in(&run, "n1", "kubectl describe node n2"),
        &[
            "Taints: node.kubernetes.io/unreachable:NoSchedule",
            "Ready Unknown ... NodeStatusUnknown Kubelet stopped posting node status.",
            "MemoryPressure Unknown ... NodeStatusUnknown Kubelet stopped posting node status.",
        ],
    );
    // Containers outlive the kubelet; a pod bound to the node does not start.
    assert_eq!(pod_ip(&run, "p2"), p2);
    let late = cluster(&run).pod("default", "late").expect("late");
    assert_eq!(
        (late.phase, late.node.as_deref(), late.ip),
        (PodPhase::Pending, Some("n2"), None)
    );

    // Started again with its Node in place: the same Node, podCIDR and all.
    let run = run_file(SCENARIO, "start-kubelet");
    assert!(cluster(&run).kubelets_down.is_empty());
    assert_has(&out_in(&run, "n1", "kubectl get nodes"), &["n2 Ready <none> ..."]);
    assert_eq!(pod_cidr(&run, "n2"), "10.66.1.0/24");
    assert_eq!(
        cluster(&run).pod("default", "late").map(|p| p.phase),
        Some(PodPhase::Running)
    );
}

#[test]
fn a_deleted_node_registers_again_with_a_pod_cidr_from_the_new_cluster_cidr() {
    let run = run_file(SCENARIO, "n2-back");
    assert_eq!(
        printed(&run, "delete-n2", "kubectl delete node n2"),
        ("node \"n2\" deleted\n".into(), 0)
    );
    // The CNI files go while the kubelet is stopped and the Node gone (seed 000's order).
    assert_eq!(
        printed(&run, "start-n2", "sudo rm -rf /var/lib/cni/"),
        (String::new(), 0)
    );
    assert_eq!(
        printed(&run, "start-n2", "sudo rm -rf /etc/cni/net.d/*"),
        (String::new(), 0)
    );
    // kube-controller-manager runs with --cluster-cidr=10.64.0.0/14: node IPAM rebuilt its
    // bitmap from n1's and n3's podCIDRs and starts from the range's first /24.
    assert_eq!(pod_cidr(&run, "n2"), "10.64.0.0/24");
    assert_eq!(pod_cidr(&run, "n3"), "10.66.2.0/24");
    let (nodes, _) = printed(&run, "n2-back", "kubectl get nodes");
    assert_has(&nodes, &["n2 Ready <none> 43s v1.28.15"]);
    // A fresh Node: kubectl cordon's unschedulable is gone with the old one.
    assert!(!cluster(&run).node("n2").expect("n2").unschedulable);
    assert_eq!(pod_ip(&run, "after"), "10.66.217.65");
    assert!(run
        .steps
        .iter()
        .all(|s| s.findings.iter().all(|f| !f.starts_with("node n2 registered"))));
}

#[test]
fn a_node_registered_again_without_clearing_its_cni_state_keeps_its_old_blocks() {
    let run = run_file(SCENARIO, "n3-pod");
    assert_eq!(pod_cidr(&run, "n3"), "10.64.1.0/24");
    let finding = "node n3 registered again with podCIDR 10.64.1.0/24 but without its CNI state cleared: Calico \
                   still has its block affinities 10.66.98.0/26 from before, so its pods get addresses from the \
                   old range (calico-ipam allocates from the node's affine blocks in Calico's IPPools, not from \
                   spec.podCIDR; removing /etc/cni/net.d or /var/lib/cni does not clear them): delete them \
                   (kubectl delete blockaffinities NAME) before the kubelet starts (k8s-cidr-migrations.md §1.4 step 4)";
    assert_eq!(step(&run, "start-n3").findings, [finding]);
    // Reported once, when it appears.
    assert!(step(&run, "n3-pod").findings.is_empty());
    // From the old block, whatever the new podCIDR.
    assert_eq!(pod_ip(&run, "again"), "10.66.98.4");
}

#[test]
fn kubeadm_reset_keeps_the_node_object_and_the_cni_state_and_join_works_again() {
    let run = run_file(SCENARIO, "rejoin-n3");
    let (reset, status) = printed(&run, "reset-n3", "sudo kubeadm reset -f");
    assert_eq!(status, 0);
    assert_eq!(
        reset,
        "[preflight] Running pre-flight checks\n\
         [reset] Stopping the kubelet service\n\
         [reset] Unmounting mounted directories in \"/var/lib/kubelet\"\n\
         [reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]\n\
         [reset] Deleting files: [/etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf \
         /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/controller-manager.conf /etc/kubernetes/scheduler.conf]\n\
         \n\
         The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d\n\
         \n\
         The reset process does not reset or clean up iptables rules or IPVS tables.\n\
         If you wish to reset iptables, you must do so manually by using the \"iptables\" command.\n\
         \n\
         If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)\n\
         to reset your system's IPVS tables.\n\
         \n\
         The reset process does not clean your kubeconfig files and you must remove them manually.\n\
         Please, check the contents of the $HOME/.kube/config file.\n"
    );
    // Without kubelet.conf the kubelet cannot start; the Node it left still shows Ready, so
    // kubeadm join refuses the name.
    assert_eq!(
        printed(&run, "reset-n3", "sudo systemctl start kubelet"),
        (String::new(), 0)
    );
    let join = "sudo kubeadm join 192.168.1.11:6443 --token abcdef.0123456789abcdef \
                --discovery-token-ca-cert-hash sha256:00";
    let (refused, status) = printed(&run, "reset-n3", join);
    assert_eq!(status, 1);
    assert_has(
        &refused,
        &[
            "error execution phase kubelet-start: a Node with name \"n3\" and status \"Ready\" already exists in \
           the cluster. You must delete the existing Node or change the name of this new joining Node",
        ],
    );
    // Once NotReady it joins; the Node was never deleted, so its podCIDR is the one it had.
    let (joined, status) = printed(&run, "rejoin-n3", join);
    assert_eq!(status, 0);
    assert_has(&joined, &["This node has joined the cluster:"]);
    assert_eq!(pod_cidr(&run, "n3"), "10.64.1.0/24");
    assert!(cluster(&run).kubelets_down.is_empty());
    assert_has(&out_in(&run, "n1", "kubectl get nodes"), &["n3 Ready <none> ..."]);
    // kubeadm reset's CNI DEL released its address; it starts again in the kept block.
    assert_eq!(pod_ip(&run, "again"), "10.66.98.5");

    let run = run_file(SCENARIO, "reset-unconfirmed");
    let (out, status) = printed(&run, "reset-unconfirmed", "kubeadm reset");
    assert_eq!(status, 1);
    assert_has(
        &out,
        &["error execution phase preflight: won't proceed; the user didn't answer (Y|y) in order to continue"],
    );
    assert!(cluster(&run).kubelets_down.is_empty(), "nothing was reset");
}

#[test]
fn seed_001_reset_delete_and_join_gives_a_new_pod_cidr() {
    let run = run_file(SCENARIO, "seed-001-uncordon");
    // The seed's drain has no --force: the bare pod `after` stops it (the node stays cordoned).
    let drain = "kubectl drain n2 --ignore-daemonsets --delete-emptydir-data";
    let (refused, status) = printed(&run, "seed-001-drain", drain);
    assert_eq!(status, 1);
    assert_has(&refused, &["error: unable to drain node \"n2\" due to error:cannot delete Pods declare no controller (use --force to override): default/after, continuing command..."]);
    let (reset, status) = printed(&run, "seed-001-reset", "sudo kubeadm reset");
    assert_eq!(status, 0);
    assert_has(
        &reset,
        &[
            "[reset] Are you sure you want to proceed? [y/N]: y",
            "The reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d",
        ],
    );
    // The reset left the Node (cordoned, NotReady by now); deleting it lets node IPAM hand out
    // the next block of the widened range, after n2's and n3's earlier ones.
    assert_eq!(printed(&run, "seed-001-delete", "kubectl delete node n2").1, 0);
    assert_eq!(pod_cidr(&run, "n2"), "10.64.2.0/24");
    // The new Node was never cordoned.
    let (uncordon, _) = printed(&run, "seed-001-uncordon", "kubectl uncordon n2");
    assert_eq!(uncordon, "node/n2 already uncordoned\n");
    assert_has(
        &printed(&run, "seed-001-uncordon", "kubectl get nodes").0,
        &["n2 Ready <none> ..."],
    );
}

/// The Context a runbook line gets at the end of `run` (the scenario's timings).
fn context<'a>(run: &Run, files: &'a BTreeMap<String, String>) -> k8s::Context<'a> {
    k8s::Context {
        now: run.engine.now_ms(),
        pins: &[],
        stdin: None,
        files,
        base: Path::new("."),
        pod_start_ms: 0,
        static_pod_restart_ms: 20_000,
        node_monitor_grace_ms: 40_000,
    }
}

#[test]
fn a_deleted_nodes_running_kubelet_registers_it_on_restart_and_join_wants_a_reset() {
    let run = run_file(SCENARIO, "rejoin-n3");
    let files = BTreeMap::new();
    let ctx = context(&run, &files);
    let mut net = run.engine.network().clone();
    let (n1, n2) = (
        net.device_by_name("n1").expect("n1"),
        net.device_by_name("n2").expect("n2"),
    );
    let mut line = |dev, text: &str| k8s::run_line(&mut net, run.engine.state(), dev, text, &ctx).expect(text);
    assert_eq!(line(n1, "kubectl delete node n2").status, 0);
    // kubelet.conf is still there: kubeadm's preflight refuses, whatever became of the Node.
    let join = line(
        n2,
        "kubeadm join 192.168.1.11:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:00",
    );
    assert_eq!(join.status, 1);
    assert_has(
        &join.output,
        &["\t[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists (n2)"],
    );
    // Restarting the running kubelet registers the Node again, from node IPAM's cursor.
    assert_eq!(line(n2, "sudo systemctl restart kubelet").status, 0);
    let cluster = net.cluster.as_deref().expect("cluster");
    assert_eq!(
        cluster
            .node("n2")
            .and_then(|n| n.pod_cidr)
            .map(|c| c.to_string())
            .as_deref(),
        Some("10.64.2.0/24")
    );
}

#[test]
fn lines_fabsim_does_not_model_are_refused_by_name() {
    let run = run_file(SCENARIO, "rejoin-n3");
    let files = BTreeMap::new();
    let ctx = context(&run, &files);
    let refused = |line: &str| {
        let mut net = run.engine.network().clone();
        let dev = net.device_by_name("n2").expect("n2");
        assert!(k8s::is_change(line), "{line}");
        k8s::run_line(&mut net, run.engine.state(), dev, line, &ctx).expect_err(line)
    };
    assert_eq!(
        refused("sudo systemctl stop containerd"),
        "systemctl stop containerd: fabsim models the kubelet unit only (stop, start, restart); the container \
         runtime and the host's network services are not modelled"
    );
    assert_eq!(
        refused("systemctl reload kubelet"),
        "systemctl reload kubelet: fabsim runs systemctl stop|start|restart kubelet"
    );
    assert!(refused("sudo rm -rf /etc/cni/net.d").contains("on n2 calico-node would lose its configuration"));
    assert_eq!(
        refused("rm -rf /etc/kubernetes"),
        "rm -rf /etc/kubernetes: fabsim models `rm -rf` of the CNI files (/etc/cni/net.d, /var/lib/cni, /var/run/cilium) only"
    );
    // Not recursive: rm refuses a directory; fabsim names what it models.
    assert!(refused("rm /var/lib/cni").starts_with("rm /var/lib/cni: fabsim models `rm -rf` of the CNI files"));
    assert_eq!(
        refused("kubeadm reset --dry-run"),
        "kubeadm reset --dry-run: fabsim models kubeadm reset [-f|--force]"
    );
}
