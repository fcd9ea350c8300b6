//! Seed 001 on Flannel (k8s-cidr-migrations.md §2.4 step 5, §2.6 P1-8, §5 C4/C11):
//! `scenarios/seed001-flannel.yaml` moves a kubeadm cluster running kube-flannel.yml to a new pod
//! range and re-homes n2. These tests replay it and its variant and assert what flanneld, the
//! flannel CNI plugin and the bridge plugin do with the state a re-homed node keeps.

mod common;

use std::path::Path;

use common::{assert_has, cluster, out_in, printed, step};
use fabsim::scenario::{self, Action, Opened, Run};

const SCENARIO: &str = "scenarios/seed001-flannel.yaml";

fn opened() -> Opened {
    scenario::open(Path::new(SCENARIO)).unwrap_or_else(|e| panic!("{e}"))
}

fn run_until(opened: &Opened, step: Option<&str>) -> Run {
    scenario::run(opened, step).unwrap_or_else(|e| panic!("{e}"))
}

fn pod_ip(run: &Run, name: &str) -> Option<String> {
    cluster(run)
        .pod("default", name)
        .and_then(|p| p.ip)
        .map(|ip| ip.to_string())
}

#[test]
fn the_main_scenario_meets_every_expectation() {
    common::meets_every_expectation(SCENARIO);
}

#[test]
fn kube_flannel_yml_gives_every_node_its_lease_bridge_and_vxlan_routes() {
    let run = run_until(&opened(), Some("flannel"));
    let (applied, status) = printed(
        &run,
        "flannel",
        "kubectl apply -f https://github.com/flannel-io/flannel/releases/latest/download/kube-flannel.yml",
    );
    assert_eq!(status, 0);
    assert_eq!(
        applied,
        "namespace/kube-flannel created\nclusterrole.rbac.authorization.k8s.io/flannel created\n\
         clusterrolebinding.rbac.authorization.k8s.io/flannel created\nserviceaccount/flannel created\n\
         configmap/kube-flannel-cfg created\ndaemonset.apps/kube-flannel-ds created\n"
    );
    // CoreDNS's second pod, Pending until a node was Ready, took n2's first address.
    assert_eq!(pod_ip(&run, "client-a").as_deref(), Some("10.244.1.3"));
    assert_eq!(pod_ip(&run, "web").as_deref(), Some("10.244.2.2"));
    let addr = out_in(&run, "n3", "ip -d addr show flannel.1");
    assert_has(
        &addr,
        &[
            "... flannel.1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 ...",
            "vxlan id 1 ... dstport 8472 ...",
            "inet 10.244.2.0/32 ...",
        ],
    );
    assert_has(
        &out_in(&run, "n3", "ip addr show cni0"),
        &["inet 10.244.2.1/24 brd 10.244.2.255 scope global cni0"],
    );
    assert_has(
        &out_in(&run, "n1", "kubectl exec client-a -- ip route"),
        &[
            "default via 10.244.1.1 dev eth0",
            "10.244.0.0/16 via 10.244.1.1 dev eth0",
        ],
    );
    // Across racks through the VXLAN tunnel: the router's hop is inside it, so n3's flannel.1
    // is the first hop that answers.
    assert_has(
        &out_in(&run, "n2", "traceroute -n 10.244.2.2"),
        &[" 1 10.244.2.0 ...", " 2 10.244.2.2 ..."],
    );
}

/// C4: the ConfigMap's Network must cover kube-controller-manager's range. Between the
/// manifest edit and the ConfigMap change it does not, and the run says so; after, it does.
#[test]
fn the_network_must_cover_the_cluster_cidr() {
    let run = run_until(&opened(), Some("flannel-restarted"));
    let c4 = "kube-controller-manager allocates podCIDRs from 10.240.0.0/12, outside Network 10.244.0.0/16";
    assert!(step(&run, "kcm").findings.iter().any(|f| f.starts_with(c4)));
    assert!(!step(&run, "flannel-network").findings.iter().any(|f| f.starts_with(c4)));
    assert_eq!(
        printed(&run, "flannel-network", "kubectl apply -f kube-flannel-cfg.yaml").0,
        "configmap/kube-flannel-cfg configured\n"
    );
    // Restarted, flanneld writes the new Network; the node keeps its lease.
    assert_eq!(
        out_in(&run, "n2", "cat /run/flannel/subnet.env"),
        "FLANNEL_NETWORK=10.240.0.0/12\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
    );
}

/// P1-8 / C11: kubeadm reset and the Node's deletion leave cni0 with its old gateway; the
/// re-homed n2's new lease is fine, but the bridge plugin refuses to re-address cni0, so pods
/// stay ContainerCreating until `ip link delete cni0`.
#[test]
fn a_stale_cni0_blocks_pods_until_it_is_deleted() {
    let run = run_until(&opened(), None);
    let stuck = step(&run, "uncordon-n2").findings.join("\n");
    assert_has(
        &stuck,
        &[
            "pod default/client-a on n2 is stuck ContainerCreating: failed to setup network for sandbox \"...\": \
           plugin type=\"flannel\" failed (add): failed to delegate add: failed to set bridge addr: \"cni0\" \
           already has an IP address different from 10.240.0.1/24",
        ],
    );
    assert!(step(&run, "rejoin-n2")
        .findings
        .iter()
        .any(|f| f.starts_with("n2: cni0 still holds 10.244.1.1/24 while flannel's subnet is 10.240.0.1/24")));
    // Deleted, the next sandbox's ADD creates it with the new gateway. host-local's cursor
    // moved past .2 when the failed ADD reserved and released it.
    assert_eq!(pod_ip(&run, "client-a").as_deref(), Some("10.240.0.3"));
    assert_has(
        &out_in(&run, "n2", "ip addr show cni0"),
        &["inet 10.240.0.1/24 brd 10.240.0.255 scope global cni0"],
    );
    assert_has(
        &out_in(&run, "n3", "ip route"),
        &["10.240.0.0/24 via 10.240.0.0 dev flannel.1 onlink"],
    );
    assert!(
        !out_in(&run, "n3", "ip route").contains("10.244.1.0/24"),
        "n2's old lease is gone"
    );
    let (out, status) = printed(&run, "delete-cni0", "sudo ip link delete cni0");
    assert_eq!((out.as_str(), status), ("", 0));
}

/// Variant: the runbook forgets the ConfigMap (§2.4 step 5). flanneld on the re-homed n2
/// refuses its lease and crash-loops; the CNI keeps reading the subnet.env flanneld wrote
/// before, whose subnet matches the old cni0, so the pod starts — with an old-range address
/// nobody routes to n2 any more: it gets an IP but no connectivity (the reference's P1-8).
#[test]
fn variant_forgetting_the_network_gives_old_addresses_without_connectivity() {
    let mut o = opened();
    let steps = &mut o.scenario.as_mut().expect("a scenario").steps;
    steps.retain(|s| !matches!(s.id.as_str(), "flannel-network" | "flannel-restarted" | "delete-cni0"));
    let run = run_until(&o, None);
    let log = "Error registering network: failed to acquire lease: subnet \"10.244.0.0/16\" specified in the \
               flannel net config doesn't contain \"10.240.0.0/24\" PodCIDR of the \"n2\" node";
    assert!(step(&run, "rejoin-n2")
        .findings
        .iter()
        .any(|f| f.starts_with(&format!("flanneld on n2 exits ({log})"))));
    assert_has(
        &out_in(&run, "n1", "kubectl -n kube-flannel get pods -o wide"),
        &["kube-flannel-ds-... 0/1 CrashLoopBackOff ... 192.168.1.12 n2 ..."],
    );
    assert_eq!(pod_ip(&run, "client-a").as_deref(), Some("10.244.1.2"));
    assert_has(
        &out_in(&run, "n1", "kubectl exec client-a -- ping -c 1 10.244.2.2"),
        &["1 packets transmitted, 0 packets received, 100% packet loss"],
    );
    assert!(step(&run, "rejoin-n2").findings.iter().any(|f| f.starts_with(
        "n2: /run/flannel/subnet.env still says FLANNEL_SUBNET=10.244.1.1/24 while the Node's podCIDR is 10.240.0.0/24"
    )));
}

/// The delete-cni0 step with `command` instead, run to its end.
fn with_delete_step(command: &str) -> Result<Run, String> {
    let mut o = opened();
    for s in o.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { lines, .. }) = (s.id == "delete-cni0", &mut s.action) {
            lines[0].0 = command.to_string();
        }
    }
    scenario::run(&o, Some("delete-cni0")).map_err(|e| e.to_string())
}

#[test]
fn deleting_an_interface_flannel_does_not_own_is_refused_and_a_missing_one_is_iproute2s_error() {
    let run = with_delete_step("sudo ip link delete flannel.7").expect("runs");
    assert_eq!(
        printed(&run, "delete-cni0", "sudo ip link delete flannel.7"),
        ("Cannot find device \"flannel.7\"\n".to_string(), 1)
    );
    let refused = with_delete_step("sudo ip link delete ens3")
        .err()
        .expect("not Flannel's");
    assert!(
        refused.contains("fabsim deletes Flannel's cni0 and flannel.1"),
        "{refused}"
    );
    // flannel.1 may go (flanneld makes it again when it starts); its routes go with it.
    let run = with_delete_step("sudo ip link delete flannel.1").expect("runs");
    assert!(!out_in(&run, "n2", "ip route").contains("flannel.1"));
}
