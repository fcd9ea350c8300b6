//! The control plane's static-pod manifests (tests/data/control-plane.yaml): what kubeadm
//! writes, `sed -i` edits that restart a component, the flags as the model — kube-apiserver's
//! service range, kube-controller-manager's node IPAM — and kubeadm-config left behind.

use std::path::Path;

mod common;
use common::{pod_cidr, step};

use fabsim::scenario::{self, has_line, Run};
use fabsim::views;

fn run_to(step: &str) -> Run {
    let opened = scenario::open(Path::new("tests/data/control-plane.yaml")).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, Some(step)).unwrap_or_else(|e| panic!("{e}"))
}

fn on(run: &Run, device: &str, command: &str) -> String {
    let net = run.engine.network();
    let dev = net.device_by_name(device).expect("device");
    views::run_command(net, run.engine.state(), dev, command).unwrap_or_else(|e| panic!("{}", e.message))
}

const APISERVER: &str = "/etc/kubernetes/manifests/kube-apiserver.yaml";
const KCM: &str = "/etc/kubernetes/manifests/kube-controller-manager.yaml";

#[test]
fn kubeadm_writes_the_manifests_on_the_control_plane_node() {
    let run = run_to("join-n2");
    let api = on(&run, "n1", &format!("cat {APISERVER}"));
    for line in [
        "    - kube-apiserver",
        "    - --advertise-address=192.168.1.11",
        "    - --authorization-mode=Node,RBAC",
        "    - --etcd-servers=https://127.0.0.1:2379",
        "    - --secure-port=6443",
        "    - --service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "    - --service-cluster-ip-range=10.96.0.0/12",
        "    image: registry.k8s.io/kube-apiserver:v1.28.15",
    ] {
        assert!(api.lines().any(|l| l == line), "{line} in\n{api}");
    }
    let kcm = on(&run, "n1", &format!("cat {KCM}"));
    let flags: Vec<&str> = kcm.lines().filter(|l| l.starts_with("    - --")).collect();
    assert_eq!(
        flags,
        [
            "    - --allocate-node-cidrs=true",
            "    - --authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "    - --authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
            "    - --bind-address=127.0.0.1",
            "    - --client-ca-file=/etc/kubernetes/pki/ca.crt",
            "    - --cluster-cidr=10.66.0.0/16",
            "    - --cluster-name=kubernetes",
            "    - --cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
            "    - --cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
            "    - --controllers=*,bootstrapsigner,tokencleaner",
            "    - --kubeconfig=/etc/kubernetes/controller-manager.conf",
            "    - --leader-elect=true",
            "    - --requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
            "    - --root-ca-file=/etc/kubernetes/pki/ca.crt",
            "    - --service-account-private-key-file=/etc/kubernetes/pki/sa.key",
            "    - --service-cluster-ip-range=10.96.0.0/12",
            "    - --use-service-account-credentials=true",
        ]
    );
    assert!(on(&run, "n1", "cat /etc/kubernetes/manifests/kube-scheduler.yaml")
        .contains("    - --kubeconfig=/etc/kubernetes/scheduler.conf\n"));
    // A worker has no manifests.
    assert_eq!(
        on(&run, "n2", &format!("cat {APISERVER}")),
        format!("cat: {APISERVER}: No such file or directory\n")
    );
    assert_eq!(on(&run, "n1", "kubectl get --raw='/healthz'"), "ok\n");
    let run = run_to("worker-has-none");
    let sed = &step(&run, "worker-has-none").commands[0];
    assert_eq!(
        (sed.status, sed.output.as_str()),
        (
            2,
            "sed: can't read /etc/kubernetes/manifests/kube-apiserver.yaml: No such file or directory\n"
        )
    );
}

#[test]
fn the_controller_managers_cluster_cidr_edit_gives_the_next_node_its_podcidr() {
    let run = run_to("join-n3");
    // Before the edit: n1 and n2 got 10.66.0.0/24 and 10.66.1.0/24 from 10.66.0.0/16. After it,
    // node IPAM restarted over 10.64.0.0/14 with those two blocks used and the cursor at block
    // 0: n3 gets 10.64.0.0/24, not 10.66.2.0/24.
    assert_eq!(pod_cidr(&run, "n1"), "10.66.0.0/24");
    assert_eq!(pod_cidr(&run, "n2"), "10.66.1.0/24");
    assert_eq!(pod_cidr(&run, "n3"), "10.64.0.0/24");
    assert!(on(&run, "n1", &format!("cat {KCM}")).contains("    - --cluster-cidr=10.64.0.0/14\n"));
    let edit = step(&run, "kcm-cluster-cidr");
    assert_eq!(edit.commands[0].status, 0);
    assert_eq!(edit.commands[0].output, "");
    assert!(
        edit.findings.iter().any(|f| f.starts_with(
            "kubeadm-config (kube-system) still has networking.podSubnet 10.66.0.0/16 while kube-controller-manager runs with --cluster-cidr=10.64.0.0/14: kubeadm upgrade and control-plane joins regenerate the manifests from kubeadm-config"
        )),
        "{:?}",
        edit.findings
    );
}

#[test]
fn the_service_range_edit_restarts_the_apiserver_and_moves_allocation() {
    let run = run_to("kcm-replaced");
    let edit = step(&run, "service-range");
    // The apiserver restarts: kubectl typed right after the edit is refused.
    assert_eq!(
        edit.commands[1].output,
        "The connection to the server 192.168.1.11:6443 was refused - did you specify the right host or port?\n"
    );
    // The repair loop's warnings for kubeadm's two Services, both outside 10.100.0.0/16; the
    // kubeadm-config gap; the controller-manager's range left at the old value.
    for expected in [
        "Service default/kubernetes: Warning ClusterIPOutOfRange: Cluster IP 10.96.0.1 is not within the service CIDR 10.100.0.0/16; please recreate service",
        "Service kube-system/kube-dns: Warning ClusterIPOutOfRange: Cluster IP 10.96.0.10 is not within the service CIDR 10.100.0.0/16; please recreate service",
    ] {
        assert!(edit.findings.iter().any(|f| f == expected), "{expected} in {:?}", edit.findings);
    }
    assert!(edit.findings.iter().any(|f| f.starts_with(
        "kubeadm-config (kube-system) still has networking.serviceSubnet 10.96.0.0/12 while kube-apiserver runs with --service-cluster-ip-range=10.100.0.0/16"
    )));
    assert!(edit.findings.iter().any(|f| f.starts_with(
        "kube-controller-manager runs with --service-cluster-ip-range=10.96.0.0/12, kube-apiserver with 10.100.0.0/16: only the apiserver allocates ClusterIPs"
    )));
    // Once it runs again: healthy, and a new Service gets its ClusterIP from the new range.
    let created = step(&run, "new-service");
    assert_eq!(created.commands[0].output, "ok\n");
    assert_eq!(created.commands[1].output, "service/web created\n");
    // The upper band of 10.100.0.0/16 (above its first 256 addresses); the old Services stay
    // where they were.
    let services = &created.commands[2].output;
    for line in [
        "default web ClusterIP 10.100.233.18 <none> 80/TCP 0s",
        "default kubernetes ClusterIP 10.96.0.1 <none> 443/TCP ...",
        "kube-system kube-dns ClusterIP 10.96.0.10 <none> 53/UDP,53/TCP,9153/TCP ...",
    ] {
        assert!(has_line(services, line), "{line} in\n{services}");
    }
    let cluster = run.engine.network().cluster.as_deref().expect("cluster");
    assert_eq!(
        cluster.service_cidr.to_string(),
        "10.96.0.0/12",
        "kubeadm-config unchanged"
    );
    // What the engineer sees of the gap: kubeadm-config's ClusterConfiguration, printed as
    // kubectl prints it (a literal block), still has the old ranges.
    let config = on(&run, "n1", "kubectl -n kube-system get cm kubeadm-config -o yaml");
    assert!(
        config.starts_with("apiVersion: v1\ndata:\n  ClusterConfiguration: |\n    apiServer:\n      extraArgs:\n        authorization-mode: Node,RBAC\n"),
        "{config}"
    );
    assert!(
        config.contains("    networking:\n      dnsDomain: cluster.local\n      podSubnet: 10.66.0.0/16\n      serviceSubnet: 10.96.0.0/12\n    scheduler: {}\nkind: ConfigMap\nmetadata:\n"),
        "{config}"
    );
    assert!(
        has_line(&on(&run, "n1", "kubectl get cm -A"), "kube-system kubeadm-config 1 ..."),
        "the table"
    );
    let net = run.engine.network();
    let n1 = net.device_by_name("n1").expect("n1");
    let missing = views::run_command(net, run.engine.state(), n1, "kubectl get cm kube-proxy -n kube-system")
        .expect_err("not modelled, so not found");
    assert_eq!(
        missing.message,
        "Error from server (NotFound): configmaps \"kube-proxy\" not found"
    );
}

#[test]
fn a_flag_that_is_not_a_cidr_crash_loops_the_controller_manager() {
    let run = run_to("kcm-replaced");
    let typo = step(&run, "kcm-typo");
    assert!(
        has_line(
            &typo.commands[1].output,
            "kube-controller-manager-n1 0/1 CrashLoopBackOff 0 ..."
        ),
        "{}",
        typo.commands[1].output
    );
    assert!(typo.findings.iter().any(|f| f
        == "kube-controller-manager-n1: CrashLoopBackOff: error starting controllers: failed to parse cidr value:\"10.64.0.0/144\" with error:invalid CIDR address: 10.64.0.0/144"));
    // The whole file replaced: its flags parse, but 10.70.0.0/16 holds none of the nodes'
    // podCIDRs, so the range allocator fails and kube-controller-manager exits at start
    // (§2.4's gap; range_allocator.go: "This error will keep crashing controller-manager").
    let replaced = step(&run, "kcm-replaced");
    assert!(
        has_line(
            &replaced.commands[0].output,
            "kube-controller-manager-n1 0/1 CrashLoopBackOff 0 ..."
        ),
        "{}",
        replaced.commands[0].output
    );
    let error = "error starting controllers: failed to mark cidr[10.66.0.0/24] at idx [0] as occupied for node: n1: \
                 cidr 10.66.0.0/24 is out the range of cluster cidr 10.70.0.0/16";
    assert!(
        replaced.findings.iter().any(|f| f.starts_with(&format!(
            "kube-controller-manager-n1: CrashLoopBackOff: {error}: a Node's podCIDR lies outside --cluster-cidr"
        ))),
        "{:?}",
        replaced.findings
    );
    assert_eq!(
        on(&run, "n1", "kubectl logs kube-controller-manager-n1 -n kube-system"),
        format!("{error}\n")
    );
}

/// A derived crash loop counts restarts on the kubelet's back-off (at once, then 10 s, 20 s,
/// 40 s …) and `logs -p` shows the previous container's exit, which is the same every time.
#[test]
fn a_crash_looping_controller_manager_counts_its_restarts() {
    let run = run_to("kcm-seen");
    let seen = step(&run, "kcm-seen");
    let pods = &seen.commands[0].output;
    // kcm-backing-off's 75 s after the restart: starts at +0, +0, +10, +30, +70 s.
    assert!(
        has_line(pods, "kube-controller-manager-n1 0/1 CrashLoopBackOff 4 (... ago) ..."),
        "{pods}"
    );
    assert!(
        seen.commands[1]
            .output
            .starts_with("error starting controllers: failed to mark cidr[10.66.0.0/24]"),
        "{}",
        seen.commands[1].output
    );
}
