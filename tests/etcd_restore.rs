//! etcd's snapshot restore and membership (issue #7; k8s-cidr-migrations.md §1.5, §2.5, §5 C1,
//! C20) on tests/data/etcd-restore.yaml: a snapshot, etcdhelper's direct write and a Node
//! registered after it, the snapshot restored into a new data directory and etcd's manifest
//! pointed at it; the restore's refusals (a data directory that holds data, a file no `snapshot
//! save` wrote), a restore nothing runs on, and etcdctl's `member list` / `endpoint health`.

mod common;

use common::{cluster, out_in, pod_cidr, run_file, run_lines, step, steps_with};
use fabsim::k8s;
use fabsim::model::Network;
use fabsim::scenario::Run;

const SCENARIO: &str = "tests/data/etcd-restore.yaml";

/// The restore line of the scenario, with its member flags.
const RESTORE: &str = "ETCDCTL_API=3 etcdctl snapshot restore /var/lib/etcd-backup/snap.db --data-dir \
                       /var/lib/etcd-restore --name n1 --initial-cluster n1=https://192.168.1.11:2380 \
                       --initial-advertise-peer-urls https://192.168.1.11:2380";

/// etcdctl v3.5's warning before every `snapshot restore` (`snapshotRestoreCommandFunc`).
const DEPRECATED: &str = "Deprecated: Use `etcdutl snapshot restore` instead.\n\n";

/// kubeadm's member on n1: SHA-1 of its peer URL and the default token "etcd-cluster".
const MEMBER: &str = "aa869cb0f2e7ed31, started, n1, https://192.168.1.11:2380, https://192.168.1.11:2379, false\n";

/// What `lines`, run one after the other on a copy of a run's network, gave: each outcome (or
/// fabsim's refusal) and the network after them.
struct After {
    outs: Vec<Result<(String, i32), String>>,
    net: Network,
}

impl After {
    /// The cluster's restore and rollback findings.
    fn findings(&self) -> Vec<String> {
        let c = self.net.cluster.as_deref().expect("a cluster");
        c.restore_findings().into_iter().chain(c.rollback_findings()).collect()
    }

    /// The outcomes, each expected to be etcd's (not a refusal).
    fn ran(&self) -> Vec<(String, i32)> {
        self.outs
            .iter()
            .map(|o| o.clone().expect("etcd's own output"))
            .collect()
    }
}

/// `lines` on `device` at the end of `run`, `later_ms` after its end.
fn lines_at(run: &Run, device: &str, lines: &[&str], later_ms: u64) -> After {
    let mut net = run.engine.network().clone();
    let outs = run_lines(run, &mut net, device, lines, run.engine.now_ms() + later_ms);
    After { outs, net }
}

#[test]
fn a_restore_etcd_runs_on_brings_the_snapshots_nodes_back_and_says_what_changed() {
    let run = run_file(SCENARIO, "members");
    // etcdhelper moved the Nodes to 10.77 after the snapshot; n3 registered after it.
    let changes = [
        "etcd restore onto /var/lib/etcd-restore: Node n1 spec.podCIDR 10.77.0.0/24 → 10.66.0.0/24",
        "etcd restore onto /var/lib/etcd-restore: Node n2 spec.podCIDR 10.77.1.0/24 → 10.66.1.0/24",
        "etcd restore onto /var/lib/etcd-restore: Node n3 is gone (it registered after the snapshot; its kubelet \
         registers it again only when it restarts)",
    ];
    for change in changes {
        assert_eq!(steps_with(&run, change), ["activate"], "{change}");
    }
    assert_eq!(
        steps_with(
            &run,
            "etcd came up on /var/lib/etcd-restore (restored from /var/lib/etcd-backup/snap.db)"
        ),
        ["activate"]
    );
    assert_eq!(pod_cidr(&run, "n1"), "10.66.0.0/24");
    assert_eq!(pod_cidr(&run, "n2"), "10.66.1.0/24");
    let c = cluster(&run);
    assert!(c.node("n3").is_none());
    // n3's kube-proxy is gone with its Node; n3's kubelet itself still runs (host state).
    assert!(c.pods.iter().all(|p| p.node.as_deref() != Some("n3")));
    assert!(c.kubelet_running("n3"));
    assert_eq!(c.etcd_data.in_use(), "/var/lib/etcd-restore");
    // Node IPAM released n3's 10.66.2.0/24 with its Node and kept the restored ranges; its
    // cursor moved on, so n3's kubelet registering again gets the block after the one it had.
    let again = lines_at(&run, "n3", &["systemctl restart kubelet"], 0);
    assert_eq!(again.ran()[0].1, 0);
    let n3 = again
        .net
        .cluster
        .as_deref()
        .and_then(|c| c.node("n3").and_then(|n| n.pod_cidr));
    assert_eq!(n3.map(|c| c.to_string()).as_deref(), Some("10.66.3.0/24"));
    // The snapshot came before etcdhelper and before the manifest edit: no C1 finding.
    assert!(steps_with(&run, "no etcd snapshot was taken before it").is_empty());
    // While the kubelet restarted etcd, health failed with etcdctl's texts; after, it is healthy.
    let activate = &step(&run, "activate").commands[1];
    assert_eq!(
        (activate.output.as_str(), activate.status),
        (
            "127.0.0.1:2379 is unhealthy: failed to commit proposal: context deadline exceeded\nError: unhealthy \
             cluster\n",
            1
        )
    );
    let members = &step(&run, "members").commands;
    assert_eq!(members[0].output, MEMBER);
    assert_eq!(
        members[1].output,
        "+------------------+---------+------+---------------------------+---------------------------+------------+\n\
         |        ID        | STATUS  | NAME |        PEER ADDRS         |       CLIENT ADDRS        | IS LEARNER |\n\
         +------------------+---------+------+---------------------------+---------------------------+------------+\n\
         | aa869cb0f2e7ed31 | started |   n1 | https://192.168.1.11:2380 | https://192.168.1.11:2379 |      false |\n\
         +------------------+---------+------+---------------------------+---------------------------+------------+\n"
    );
    assert_eq!(
        members[2].output,
        "+---------------------------+--------+------+-------+\n\
         |         ENDPOINT          | HEALTH | TOOK | ERROR |\n\
         +---------------------------+--------+------+-------+\n\
         | https://192.168.1.11:2379 |   true | 10ms |       |\n\
         +---------------------------+--------+------+-------+\n"
    );
    assert!(!members[3].output.contains("n3 "), "{}", members[3].output);
    // p1, deleted after the snapshot, is back in a new sandbox with a new address; p3, created
    // after it, is gone. Calico's IPAM (the Kubernetes datastore, in etcd) is the snapshot's
    // too: it still holds p1's old address, which no workload uses.
    let pods = &members[4].output;
    assert!(
        fabsim::scenario::has_line(pods, "p1 1/1 Running 0 ... 10.66.40.132 n1 ..."),
        "{pods}"
    );
    assert!(!pods.contains("p3 "), "{pods}");
    for change in [
        "etcd restore onto /var/lib/etcd-restore: Pod default/p1 is back, bound to n1 (its kubelet starts it in a new \
         sandbox)",
        "etcd restore onto /var/lib/etcd-restore: Pod default/p3 is gone (its kubelet kills it)",
    ] {
        assert_eq!(steps_with(&run, change), ["activate"], "{change}");
    }
    assert!(members[5]
        .output
        .contains("Found 1 IPs that are allocated in IPAM but not actually in use.\n"));
}

#[test]
fn a_restore_nothing_runs_on_changes_nothing_and_says_so() {
    let run = run_file(SCENARIO, "restore");
    assert_eq!(step(&run, "restore").commands[0].output, DEPRECATED);
    assert_eq!(step(&run, "restore").commands[0].status, 0);
    assert_eq!(
        steps_with(&run, "etcd snapshot restore wrote /var/lib/etcd-restore from /var/lib/etcd-backup/snap.db, but etcd does not run on it (the --data-dir and etcd-data hostPath of /etc/kubernetes/manifests/etcd.yaml name /var/lib/etcd): the restore changed nothing"),
        ["restore"]
    );
    // The Nodes keep etcdhelper's ranges and n3 its Node.
    assert_eq!(pod_cidr(&run, "n1"), "10.77.0.0/24");
    assert!(cluster(&run).node("n3").is_some());
    assert!(steps_with(&run, "etcd came up on").is_empty());
}

#[test]
fn restore_refuses_a_data_dir_that_holds_data_and_a_file_no_save_wrote() {
    let run = run_file(SCENARIO, "restore");
    let after = lines_at(
        &run,
        "n1",
        &[
            // etcd's own directory, and the one the scenario's restore wrote.
            "etcdutl snapshot restore /var/lib/etcd-backup/snap.db --data-dir /var/lib/etcd/",
            RESTORE,
            "etcdutl snapshot restore /var/lib/etcd-backup/other.db --data-dir /var/lib/etcd-2",
            "etcdctl snapshot restore /var/lib/etcd-backup/snap.db /tmp/second.db",
            "etcdctl snapshot restore /var/lib/etcd-backup/snap.db --name n1",
            "etcdutl snapshot restore /var/lib/etcd-backup/snap.db --data-dir /x --initial-advertise-peer-urls \
             localhost:2380",
        ],
        0,
    );
    assert_eq!(
        after.ran(),
        [
            (
                "Error: data-dir \"/var/lib/etcd\" not empty or could not be read\n".to_string(),
                1
            ),
            (
                format!("{DEPRECATED}Error: data-dir \"/var/lib/etcd-restore\" not empty or could not be read\n"),
                1
            ),
            (
                "Error: open /var/lib/etcd-backup/other.db: no such file or directory\n".to_string(),
                1
            ),
            (
                format!("{DEPRECATED}Error: snapshot restore requires exactly one argument\n"),
                128
            ),
            // --initial-cluster's default names the member "default", whatever --name says.
            (
                format!("{DEPRECATED}Error: couldn't find local name \"n1\" in the initial cluster configuration\n"),
                1
            ),
            (
                "Error: URL scheme must be http, https, unix, or unixs: localhost:2380\n".to_string(),
                1
            ),
        ]
    );
}

#[test]
fn a_write_before_a_restore_is_covered_and_a_write_with_no_snapshot_is_not() {
    // The scenario's etcdhelper came after its snapshot: restored or not, no C1 finding.
    let run = run_file(SCENARIO, "activate");
    assert!(steps_with(&run, "no etcd snapshot").is_empty());
    // After the restore, a write with the snapshot still before it is covered too.
    let after = lines_at(&run, "n1", &["./etcdhelper change-pod-cidr 10.88.0.0/16"], 30_000);
    assert_eq!(after.ran()[0].1, 0);
    assert!(
        after.findings().iter().all(|f| !f.contains("no etcd snapshot")),
        "{:?}",
        after.findings()
    );
    // A stand where nothing was saved has nothing to restore and its write is the finding.
    let fresh = run_file(SCENARIO, "join-n2");
    let after = lines_at(
        &fresh,
        "n1",
        &[
            "./etcdhelper change-pod-cidr 10.88.0.0/16",
            "etcdutl snapshot restore /var/lib/etcd-backup/snap.db --data-dir /var/lib/etcd-restore",
        ],
        0,
    );
    assert_eq!(
        after.ran()[1],
        (
            "Error: open /var/lib/etcd-backup/snap.db: no such file or directory\n".into(),
            1
        )
    );
    assert!(after.findings()[0]
        .starts_with("etcdhelper change-pod-cidr 10.88.0.0/16: no etcd snapshot was taken before it"));
}

#[test]
fn member_list_and_endpoint_health_in_etcds_formats() {
    let run = run_file(SCENARIO, "join-n2");
    let outs = lines_at(
        &run,
        "n1",
        &[
            "etcdctl member list",
            "ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 endpoint health",
            "etcdctl endpoint health --cluster",
            "etcdctl --endpoints=127.0.0.1:2379,10.9.9.9:2379 endpoint health -w table",
        ],
        0,
    )
    .ran();
    assert_eq!(outs[0], (MEMBER.to_string(), 0));
    assert_eq!(
        outs[1],
        (
            "https://127.0.0.1:2379 is healthy: successfully committed proposal: took = 10ms\n".to_string(),
            0
        )
    );
    assert_eq!(
        outs[2].0,
        "https://192.168.1.11:2379 is healthy: successfully committed proposal: took = 10ms\n"
    );
    // An endpoint etcd does not listen on times out after etcdctl's 5s command timeout.
    assert_eq!(
        outs[3],
        (
            "+----------------+--------+------+---------------------------+\n\
             |    ENDPOINT    | HEALTH | TOOK |           ERROR           |\n\
             +----------------+--------+------+---------------------------+\n\
             | 127.0.0.1:2379 |   true | 10ms |                           |\n\
             |  10.9.9.9:2379 |  false |   5s | context deadline exceeded |\n\
             +----------------+--------+------+---------------------------+\n\
             Error: unhealthy cluster\n"
                .to_string(),
            1
        )
    );
    // A scenario's expectation reads the same text.
    assert_eq!(out_in(&run, "n1", "etcdctl member list"), MEMBER);
    // Broken manifest: etcd does not run, and etcdctl says so as v3.5 does.
    let outs = lines_at(
        &run,
        "n1",
        &[
            "sed -i 's#^    - etcd$#    - etcd: broken: [#' /etc/kubernetes/manifests/etcd.yaml",
            "etcdctl member list",
            "etcdctl endpoint health --cluster",
        ],
        0,
    )
    .ran();
    assert_eq!(outs[1], ("Error: context deadline exceeded\n".to_string(), 1));
    assert_eq!(
        outs[2],
        (
            "Error: failed to fetch endpoints from etcd cluster member list: context deadline exceeded\n".to_string(),
            1
        )
    );
}

#[test]
fn a_restore_without_kubeadms_member_flags_changes_the_member() {
    // etcdutl's defaults: member "default" on http://localhost:2380. Once etcd runs on it, the
    // member list shows that member's ID and peer URL; its name and client URLs are what the
    // running etcd publishes, its manifest's.
    let run = run_file(SCENARIO, "restore");
    let after = lines_at(
        &run,
        "n1",
        &[
            "etcdutl snapshot restore /var/lib/etcd-backup/snap.db --data-dir /var/lib/etcd-defaults",
            "sed -i 's#/var/lib/etcd$#/var/lib/etcd-defaults#' /etc/kubernetes/manifests/etcd.yaml",
        ],
        0,
    );
    assert_eq!(after.ran(), [(String::new(), 0), (String::new(), 0)]);
    let findings = after.findings();
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("etcd came up on /var/lib/etcd-defaults")),
        "{findings:?}"
    );
    let dev = after.net.device_by_name("n1").expect("n1");
    let restarted = run.engine.now_ms() + 30_000;
    assert_eq!(
        k8s::etcdctl_read(&after.net, dev, &["member", "list"], restarted),
        Ok("8e9e05c52164694d, started, n1, http://localhost:2380, https://192.168.1.11:2379, false\n".into())
    );
}

#[test]
fn a_data_dir_no_restore_wrote_is_named_and_keeps_the_data() {
    let run = run_file(SCENARIO, "restore");
    let flag_only = lines_at(
        &run,
        "n1",
        &["sed -i 's#--data-dir=/var/lib/etcd#--data-dir=/data#' /etc/kubernetes/manifests/etcd.yaml"],
        0,
    );
    assert!(flag_only.findings().contains(
        &"etcd's manifest names --data-dir=/data, which no hostPath volume holds (a directory inside etcd's \
          container): real etcd would start a new, empty cluster there; fabsim models etcd on /var/lib/etcd and on \
          restored directories and keeps the data of /var/lib/etcd"
            .to_string()
    ));
    let elsewhere = lines_at(
        &run,
        "n1",
        &["sed -i 's#/var/lib/etcd$#/var/lib/etcd2#' /etc/kubernetes/manifests/etcd.yaml"],
        0,
    );
    let findings = elsewhere.findings();
    assert!(
        findings.iter().any(|f| f.starts_with(
            "etcd's manifest names the data directory /var/lib/etcd2, which no snapshot restore wrote: real etcd \
             would start a new, empty cluster there"
        )),
        "{findings:?}"
    );
    // The Nodes keep etcdhelper's ranges: nothing was restored.
    let c = elsewhere.net.cluster.as_deref().expect("a cluster");
    assert_eq!(
        c.node("n1").and_then(|n| n.pod_cidr).map(|c| c.to_string()).as_deref(),
        Some("10.77.0.0/24")
    );
}
