//! Seed 000 (k8s-cidr-migrations.md §1): the pod CIDR widened from 10.112.0.0/16 (/24 per node)
//! to 10.212.0.0/16 (/22 per node) through etcdhelper on the four-node stand, with Calico taking
//! pod addresses from the Nodes' podCIDRs (scenarios/seed000-expand-pod-cidr.yaml), and the
//! variant that changes only the mask (scenarios/seed000-mask-only.yaml), and the change rolled
//! back with an etcd snapshot restore (scenarios/seed000-rollback.yaml).

mod common;

use common::{cluster, pod_cidr, run_file, run_lines, step, steps_with};
use fabsim::k8s::Cluster;
use fabsim::scenario::Run;

const SCENARIO: &str = "scenarios/seed000-expand-pod-cidr.yaml";
const MASK_ONLY: &str = "scenarios/seed000-mask-only.yaml";
const ROLLBACK: &str = "scenarios/seed000-rollback.yaml";
const NODES: [&str; 4] = [
    "etcdhelper-node-0",
    "etcdhelper-node-1",
    "etcdhelper-node-2",
    "etcdhelper-node-3",
];

#[test]
fn pods_take_their_addresses_from_the_node_pod_cidr() {
    let run = run_file(SCENARIO, "snapshot");
    let c = cluster(&run);
    for (i, node) in NODES.iter().enumerate() {
        assert_eq!(pod_cidr(&run, node), format!("10.112.{i}.0/24"));
        // host-local: from .2 on (the gateway .1 is skipped), in creation order.
        let ips: Vec<String> = (1..=250)
            .map(|p| {
                let pod = c.pod("default", &format!("{node}-pod-{p}")).expect("pod");
                pod.ip.map(|ip| ip.to_string()).unwrap_or_default()
            })
            .collect();
        // Consecutive addresses from .2 on, after the system pods (CoreDNS, calico-kube-
        // controllers) that started there first.
        let system = c
            .pods
            .iter()
            .filter(|p| p.node.as_deref() == Some(*node) && p.namespace != "default" && p.ip.is_some())
            .filter(|p| !p.host_network)
            .count();
        let first = 2 + system;
        assert_eq!(ips[0], format!("10.112.{i}.{first}"));
        assert_eq!(ips[249], format!("10.112.{i}.{}", first + 249));
    }
    // confd advertises each node's podCIDR: node-0's BIRD config aggregates 10.112.0.0/24.
    let net = run.engine.network();
    let dev = net.device_by_name("etcdhelper-node-0").expect("device");
    let aggr = fabsim::views::run_command(
        net,
        run.engine.state(),
        dev,
        "cat /etc/calico/confd/config/bird_aggr.cfg",
    )
    .expect("cat");
    assert!(aggr.contains("# Block 10.112.0.0/24 is confirmed"), "{aggr}");
    assert!(step(&run, "snapshot").checks.iter().all(|c| c.ok));
}

#[test]
fn the_runbook_reaches_the_sources_expected_ranges() {
    let run = run_file(SCENARIO, "final");
    // Every expectation of the scenario holds (`fabsim run` ends with 0 failed).
    let failed: Vec<String> = run
        .steps
        .iter()
        .flat_map(|s| {
            s.checks
                .iter()
                .filter(|c| !c.ok)
                .map(move |c| format!("{}: {:?}", s.id, c))
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(
        step(&run, "snapshot").commands[0].output,
        "Snapshot saved at /var/lib/etcd-backup/before-pod-cidr.db\n"
    );
    // etcdhelper: the keys, then one line per Node (first two octets replaced, mask kept).
    let helper = &step(&run, "etcdhelper").commands[0];
    assert_eq!(helper.status, 0);
    let mut want: Vec<String> = NODES.iter().map(|n| format!("/registry/minions/{n}")).collect();
    want.extend(
        NODES
            .iter()
            .enumerate()
            .map(|(i, n)| format!("/registry/minions/{n} 10.112.{i}.0/24 > 10.212.{i}.0/24")),
    );
    assert_eq!(helper.output.lines().collect::<Vec<_>>(), want);
    // §1.7's replay: .0, .4, .8, .12 /22s, 1022 addresses each.
    for (i, node) in NODES.iter().enumerate() {
        let cidr: ipnet::Ipv4Net = pod_cidr(&run, node).parse().expect("a podCIDR");
        assert_eq!(cidr.to_string(), format!("10.212.{}.0/22", 4 * i));
        assert_eq!((1u32 << (32 - cidr.prefix_len())) - 2, 1022);
    }
    // No pod keeps a 10.112 address.
    assert!(cluster(&run)
        .pods
        .iter()
        .filter_map(|p| p.ip)
        .all(|ip| !ip.to_string().starts_with("10.112.")));
}

#[test]
fn the_crash_loop_window_lasts_from_the_flag_edit_to_etcdhelper() {
    let run = run_file(SCENARIO, "etcdhelper");
    let crash = "kube-controller-manager-etcdhelper-node-0: CrashLoopBackOff: error starting controllers: failed to \
                 mark cidr[10.112.0.0/24] at idx [0] as occupied for node: etcdhelper-node-0: cidr 10.112.0.0/24 is \
                 out the range of cluster cidr 10.212.0.0/16";
    assert_eq!(steps_with(&run, crash), ["kcm-flags"]);
    // After etcdhelper kube-controller-manager runs: no crash among the findings any more, and
    // the pods on node-0 kept their 10.112 addresses outside its rewritten podCIDR (C14).
    let c14 = steps_with(&run, "have addresses outside its podCIDR 10.212.0.0/24");
    assert_eq!(c14, ["etcdhelper"], "{:?}", step(&run, "etcdhelper").findings);
}

/// C5 while kube-controller-manager runs: the restore brings back the Nodes' 10.112 podCIDRs
/// behind the back of a controller started with --cluster-cidr=10.212.0.0/16. It keeps running,
/// but would crash-loop at its next restart; the runbook's next step reverts its flags, which
/// restarts it with the old range, and the finding goes.
#[test]
fn a_restore_under_the_new_cluster_cidr_is_a_latent_crash_loop_until_the_flags_revert() {
    let run = run_file(ROLLBACK, "settled");
    let latent = "Node etcdhelper-node-0's podCIDR 10.112.0.0/24 lies outside kube-controller-manager's \
                  --cluster-cidr 10.212.0.0/16: the running controller goes on, but at its next restart node IPAM \
                  cannot start";
    assert_eq!(steps_with(&run, latent), ["etcd-on-backup"]);
    let left = cluster(&run).address_plan_findings();
    assert!(
        left.iter().all(|f| !f.contains("lies outside kube-controller-manager")),
        "{left:?}"
    );
}

#[test]
fn the_rolling_phase_reports_overlaps_with_drained_nodes_and_the_freed_block() {
    let run = run_file(SCENARIO, "final");
    // node-0's new /22 holds node-1..3's interim /24s; they are drained, so the note is soft.
    // (node-0's new Node comes after the others in join order.)
    let soft = "podCIDRs of etcdhelper-node-1 (10.212.1.0/24) and etcdhelper-node-0 (10.212.0.0/22) overlap; harmless";
    assert_eq!(steps_with(&run, soft), ["restart-kubelet-0"]);
    assert!(steps_with(&run, "both nodes run pods").is_empty());
    // node-1's release of 10.212.1.0/24 cleared block 0 while node-0 owns it (§1.7, C8).
    let c8 = "node IPAM marks 10.212.0.0/22 free while node etcdhelper-node-0 owns 10.212.0.0/22";
    assert_eq!(steps_with(&run, c8), ["delete-node-1"]);
    // Deleting node-0 itself already freed the block under node-1..3's interim /24s.
    let first = "node IPAM marks 10.212.0.0/22 free while node etcdhelper-node-1 owns 10.212.1.0/24";
    assert_eq!(steps_with(&run, first), ["delete-node-0"]);
    // The snapshot came first: no rollback finding.
    assert!(steps_with(&run, "no etcd snapshot was taken before it").is_empty());
}

#[test]
fn changing_only_the_mask_collides_where_the_reference_says() {
    let run = run_file(MASK_ONLY, "vm-on-node-0");
    assert_eq!(
        steps_with(&run, "the Nodes' /24 podCIDRs came from: only the mask changed"),
        ["kcm-mask"]
    );
    assert_eq!(pod_cidr(&run, "etcdhelper-node-0"), "10.112.0.0/22");
    let overlap = "podCIDRs of etcdhelper-node-1 (10.112.1.0/24) and etcdhelper-node-0 (10.112.0.0/22) overlap";
    assert_eq!(steps_with(&run, &format!("{overlap}; harmless")), ["restart-kubelet-0"]);
    assert_eq!(
        steps_with(&run, &format!("{overlap} and both nodes run pods")),
        ["vm-on-node-0"]
    );
}

/// `line` run on `device` at the end of `run`, on a copy of its network (with no snapshot taken
/// when `forget_snapshots`): the outcome or fabsim's refusal, and the rollback findings after.
fn line_at(
    run: &Run,
    device: &str,
    line: &str,
    forget_snapshots: bool,
) -> (Result<(String, i32), String>, Vec<String>) {
    let mut net = run.engine.network().clone();
    if let Some(c) = net.cluster.as_deref_mut().filter(|_| forget_snapshots) {
        c.etcd_snapshots.clear();
    }
    let out = run_lines(run, &mut net, device, &[line], run.engine.now_ms()).remove(0);
    let rollback = net
        .cluster
        .as_deref()
        .map(Cluster::rollback_findings)
        .unwrap_or_default();
    (out, rollback)
}

#[test]
fn etcd_writes_need_a_snapshot_first_and_run_on_the_control_plane() {
    let run = run_file(MASK_ONLY, "kcm-mask");
    // The runbook took its snapshot first.
    assert!(steps_with(&run, "no etcd snapshot").is_empty());
    let (refused, _) = line_at(
        &run,
        "etcdhelper-node-1",
        "ETCDCTL_API=3 etcdctl snapshot save x.db",
        false,
    );
    assert_eq!(
        refused.unwrap_err(),
        "etcdctl on etcdhelper-node-1: fabsim models etcd on the control-plane node only (stacked etcd at \
         https://127.0.0.1:2379)"
    );
    // Before any kubeadm init there is no etcd to talk to at all.
    let mut bare = run.engine.network().clone();
    bare.cluster = None;
    let before = run_lines(
        &run,
        &mut bare,
        "etcdhelper-node-0",
        &["etcdctl snapshot save x.db"],
        run.engine.now_ms(),
    )
    .remove(0);
    assert_eq!(
        before.unwrap_err(),
        "etcdctl on etcdhelper-node-0: no etcd runs yet (`kubeadm init` starts the stacked etcd at https://127.0.0.1:2379)"
    );
    // A stand where nothing was saved: etcdhelper's write is the C1 finding.
    let fresh = run_file(MASK_ONLY, "snapshot");
    let (out, rollback) = line_at(
        &fresh,
        "etcdhelper-node-0",
        "./etcdhelper change-pod-cidr 10.5.0.0/16",
        true,
    );
    assert_eq!(out.expect("runs").1, 0);
    assert_eq!(
        rollback,
        [
            "etcdhelper change-pod-cidr 10.5.0.0/16: no etcd snapshot was taken before it (etcdctl snapshot save), so \
          there is no rollback path; a direct etcd write has no validation and no history (k8s-cidr-migrations.md \
          §1.4 step 1, §5 C1)"
        ]
    );
    // The etcd static pod the certificates and endpoint of the runbook come from.
    let net = run.engine.network();
    let dev = net.device_by_name("etcdhelper-node-0").expect("device");
    let etcd = fabsim::views::run_command(net, run.engine.state(), dev, "cat /etc/kubernetes/manifests/etcd.yaml")
        .expect("cat");
    for line in [
        "    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://192.168.10.10:2379",
        "    - etcd",
        "    - --cert-file=/etc/kubernetes/pki/etcd/server.crt",
        "    - --data-dir=/var/lib/etcd",
        "    - --initial-cluster=etcdhelper-node-0=https://192.168.10.10:2380",
        "    - --key-file=/etc/kubernetes/pki/etcd/server.key",
        "    - --listen-client-urls=https://127.0.0.1:2379,https://192.168.10.10:2379",
        "    - --trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt",
        "        path: /health?exclude=NOSPACE&serializable=true",
    ] {
        assert!(etcd.lines().any(|l| l == line), "{line} in\n{etcd}");
    }
    // etcdhelper's own argument check.
    let (bad, _) = line_at(
        &fresh,
        "etcdhelper-node-0",
        "./etcdhelper -endpoint https://127.0.0.1:2379 change-pod-cidr 10.5.0.10/16",
        false,
    );
    assert_eq!(
        bad.expect("runs"),
        (
            "ERROR: you need to specify correct Pod CIDR\nExample: 10.0.0.0 or 10.0.0.0/16\n".to_string(),
            1
        )
    );
}

/// §6 item 12 / §5 C24: the stand's kubelets run with maxPods 300 (written into their
/// /var/lib/kubelet/config.yaml); each node that comes back with a /22 (1022 addresses) is a
/// finding at the step it registers again — the wider range gives no pods beyond 300.
#[test]
fn the_wider_ranges_give_no_pods_beyond_max_pods() {
    let run = run_file(SCENARIO, "final");
    let c = cluster(&run);
    assert_eq!(c.max_pods("etcdhelper-node-0"), 300);
    let config = c.kubelet_config_text("etcdhelper-node-0").expect("a kubelet config");
    assert!(config.contains("\nmaxPods: 300\nmemorySwap: {}\n"), "{config}");
    assert_eq!(
        steps_with(
            &run,
            "kubelet on etcdhelper-node-3 runs with maxPods 300 while its podCIDR 10.212.12.0/22 has 1022 addresses"
        ),
        ["restart-kubelet-3"]
    );
    assert_eq!(steps_with(&run, "C24").len(), 4);
}

/// §2.5's rollback: `fabsim run` of the scenario holds every expectation, and the report says
/// what the restore changed — each Node's podCIDR back from etcdhelper's — at the step etcd came
/// up on the restored directory, with the crash loop and C14 findings of the broken range gone.
#[test]
fn the_rollback_restores_the_snapshots_pod_cidrs() {
    let out = common::fabsim(&["run", ROLLBACK]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.ends_with("12 passed, 0 failed\n"), "{text}");
    let run = run_file(ROLLBACK, "etcd-health");
    for (i, node) in NODES.iter().enumerate() {
        let change = format!(
            "etcd restore onto /var/lib/etcd-from-backup: Node {node} spec.podCIDR 10.212.{i}.0/24 → 10.112.{i}.0/24"
        );
        assert_eq!(steps_with(&run, &change), ["etcd-on-backup"], "{change}");
        assert_eq!(pod_cidr(&run, node), format!("10.112.{i}.0/24"));
    }
    assert_eq!(
        steps_with(&run, "etcd snapshot restore wrote /var/lib/etcd-from-backup"),
        ["restore"]
    );
    // The restored Nodes' ranges hold their pods again (C14 was the broken range's symptom).
    let c14 = "have addresses outside its podCIDR";
    assert_eq!(steps_with(&run, c14), ["etcdhelper"]);
    let last = &run.steps[run.steps.len() - 1];
    assert!(!last
        .findings
        .iter()
        .any(|f| f.contains(c14) || f.contains("CrashLoopBackOff")));
    assert!(!cluster(&run)
        .control_plane_findings()
        .iter()
        .any(|f| f.contains("CrashLoopBackOff")));
    // The snapshot was the first step: no C1 finding for etcdhelper or the manifest edits.
    assert!(steps_with(&run, "no etcd snapshot was taken before it").is_empty());
}
