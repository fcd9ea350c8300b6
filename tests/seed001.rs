//! Seed 001 (k8s-cidr-migrations.md §2): `scenarios/seed001-pod-and-service-cidr.yaml` changes a
//! kubeadm+Calico cluster's service range (10.96.0.0/12 → 10.100.0.0/16) and pod range
//! (10.244.0.0/16 → a new Calico pool 10.240.0.0/16) in the reference's order. These tests
//! replay it and its variants and assert where DNS breaks and why, what the apiserver refuses,
//! which kubelet and kube-proxy settings follow when, and where each variant goes wrong.

mod common;

use std::net::Ipv4Addr;
use std::path::Path;

use common::{assert_has, out_in, printed, step};
use fabsim::dataplane::{probe, ProbeKind};
use fabsim::scenario::{self, Action, Opened, Run};

const SCENARIO: &str = "scenarios/seed001-pod-and-service-cidr.yaml";

fn opened() -> Opened {
    scenario::open(Path::new(SCENARIO)).unwrap_or_else(|e| panic!("{e}"))
}

fn run_until(opened: &Opened, step: Option<&str>) -> Run {
    scenario::run(opened, step).unwrap_or_else(|e| panic!("{e}"))
}

/// The findings a step reported that contain `needle`.
fn findings<'a>(run: &'a Run, id: &str, needle: &str) -> Vec<&'a String> {
    step(run, id).findings.iter().filter(|f| f.contains(needle)).collect()
}

fn cluster_ip(run: &Run, ns: &str, name: &str) -> Ipv4Addr {
    let c = run.engine.network().cluster.as_ref().expect("a cluster");
    c.service(ns, name).and_then(|s| s.cluster_ip).expect("a ClusterIP")
}

#[test]
fn the_main_scenario_meets_every_expectation() {
    common::meets_every_expectation(SCENARIO);
}

#[test]
fn busybox_nslookup_walks_the_search_path() {
    let run = run_until(&opened(), Some("services"));
    let web = cluster_ip(&run, "default", "web");
    assert_eq!(
        out_in(&run, "n1", "kubectl exec client-a -- nslookup web"),
        format!(
            "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n\
             Name:\tweb.default.svc.cluster.local\nAddress: {web}\n\n\
             ** server can't find web.svc.cluster.local: NXDOMAIN\n\n\
             ** server can't find web.cluster.local: NXDOMAIN\n\n\
             \n\
             ** server can't find web.svc.cluster.local: NXDOMAIN\n\n\
             ** server can't find web.cluster.local: NXDOMAIN\n\n"
        )
    );
    // A fully qualified name is sent once per type; a name with a dot is not searched.
    assert_eq!(
        out_in(
            &run,
            "n1",
            "kubectl exec client-a -- nslookup kube-dns.kube-system.svc.cluster.local"
        ),
        "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n\
         Name:\tkube-dns.kube-system.svc.cluster.local\nAddress: 10.96.0.10\n\n\n"
    );
    // No pod DNS on a host; a name outside the cluster domain (`web.default`: a name with a dot
    // is sent as it is) would go to CoreDNS's upstream, which fabsim does not model.
    let net = run.engine.network();
    let n1 = net.device_by_name("n1").expect("n1");
    assert!(fabsim::views::run_command(net, run.engine.state(), n1, "nslookup web").is_err());
    let client = net.device_by_name("client-a").expect("client-a");
    assert!(fabsim::views::run_command(net, run.engine.state(), client, "nslookup web.default").is_err());
}

#[test]
fn dns_breaks_when_kube_dns_moves_and_comes_back_pod_by_pod() {
    let run = run_until(&opened(), None);
    // The flag change breaks nothing: kube-proxy still forwards the out-of-range kube-dns.
    for id in [
        "kcm",
        "apiserver",
        "apiserver-restarted",
        "healthz",
        "new-pool",
        "recreate-web",
    ] {
        assert!(
            findings(&run, id, "DNS broken").is_empty(),
            "{id}: {:?}",
            step(&run, id).findings
        );
    }
    assert_has(
        &step(&run, "apiserver").findings.join("\n"),
        &["Service kube-system/kube-dns: Warning ClusterIPOutOfRange: Cluster IP 10.96.0.10 is not within the service CIDR 10.100.0.0/16; please recreate service"],
    );
    // kube-dns deleted: every ClusterFirst pod (the test pods, nginx, calico-kube-controllers).
    let deleted = findings(&run, "dns-deleted", "DNS broken");
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    for pod in [
        "default/client-a",
        "default/client-b",
        "default/web",
        "kube-system/calico-kube-controllers-",
    ] {
        assert!(deleted[0].contains(pod), "{pod}: {}", deleted[0]);
    }
    assert!(
        deleted[0].starts_with("DNS broken for 4 pods (")
            && deleted[0]
                .ends_with("): nameserver 10.96.0.10 is no Service's ClusterIP: kube-system/kube-dns does not exist"),
        "{}",
        deleted[0]
    );
    // Recreated at 10.100.0.10: still broken, now because the pods' resolv.conf is old.
    let recreated = findings(&run, "dns-recreated", "DNS broken");
    assert_eq!(recreated.len(), 1, "{recreated:?}");
    assert!(
        recreated[0]
            .contains("nameserver 10.96.0.10 is no Service's ClusterIP (kube-system/kube-dns is at 10.100.0.10;"),
        "{}",
        recreated[0]
    );
    // Every kubelet still runs with the old clusterDNS (C17).
    let c17 = findings(&run, "dns-recreated", "runs with clusterDNS [10.96.0.10]");
    assert_eq!(c17.len(), 3, "{c17:?}");
    // A pod created on a re-homed node gets the old nameserver from the kubelet-config ConfigMap.
    let late = findings(&run, "uncordon-n2", "DNS broken");
    assert!(late.iter().any(|f| f.contains("default/client-a")), "{late:?}");
    // At the end, every pod was created after its kubelet followed: DNS answers for all.
    let (net, st) = (run.engine.network(), run.engine.state());
    assert_eq!(fabsim::k8s::dns_findings(net, st), Vec::<String>::new());
}

#[test]
fn pods_keep_the_nameserver_they_were_created_with() {
    let opened = opened();
    let run = run_until(&opened, Some("cluster-dns-n3"));
    // client-b was created on n3 before its kubelet restarted with the new clusterDNS.
    assert_eq!(
        out_in(&run, "n1", "kubectl exec client-b -- cat /etc/resolv.conf"),
        "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
    );
    let run = run_until(&opened, Some("recreate-pods"));
    assert_eq!(
        out_in(&run, "n1", "kubectl exec client-b -- cat /etc/resolv.conf"),
        "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.100.0.10\noptions ndots:5\n"
    );
}

#[test]
fn kubelet_cluster_dns_follows_sed_and_restart() {
    let opened = opened();
    let run = run_until(&opened, Some("cluster-dns-n2"));
    let config = out_in(&run, "n2", "cat /var/lib/kubelet/config.yaml");
    assert!(
        config.starts_with("apiVersion: kubelet.config.k8s.io/v1beta1\n"),
        "{config}"
    );
    assert!(
        config.contains("\nclusterDNS:\n- 10.100.0.10\nclusterDomain: cluster.local\n"),
        "{config}"
    );
    let c = run.engine.network().cluster.as_ref().expect("a cluster");
    assert_eq!(c.kubelet_dns("n2").cluster_dns, [Ipv4Addr::new(10, 100, 0, 10)]);
    assert_eq!(c.kubelet_dns("n3").cluster_dns, [Ipv4Addr::new(10, 96, 0, 10)]);
    // The sed without the restart: the file says one thing, the kubelet runs with another.
    let mut edited = opened;
    let sc = edited.scenario.as_mut().expect("a scenario");
    for s in sc.steps.iter_mut().filter(|s| s.id == "cluster-dns-n2") {
        if let Action::Run { lines, .. } = &mut s.action {
            lines.retain(|(l, _)| !l.contains("systemctl"));
        }
    }
    let run = run_until(&edited, Some("cluster-dns-n2"));
    assert_has(
        &step(&run, "cluster-dns-n2").findings.join("\n"),
        &["/var/lib/kubelet/config.yaml on n2 says clusterDNS [10.100.0.10] but the kubelet still runs with [10.96.0.10]: ..."],
    );
    // A clusterDNS that is no address: the restarted kubelet exits, as after `systemctl stop`.
    let mut typo = scenario::open(Path::new(SCENARIO)).unwrap_or_else(|e| panic!("{e}"));
    let sc = typo.scenario.as_mut().expect("a scenario");
    for s in sc.steps.iter_mut().filter(|s| s.id == "cluster-dns-n2") {
        if let Action::Run { lines, .. } = &mut s.action {
            for (l, _) in lines.iter_mut() {
                *l = l.replace("- 10.100.0.10/", "- 10.100.0.300/");
            }
        }
    }
    let run = run_until(&typo, Some("cluster-dns-n2"));
    let c = run.engine.network().cluster.as_ref().expect("a cluster");
    assert!(!c.kubelet_running("n2"));
    assert!(c.kubelet_running("n3"));
}

#[test]
fn the_hard_coded_cluster_ip_must_get_a_new_range_address() {
    let run = run_until(&opened(), Some("metrics-new-ip"));
    assert_eq!(
        printed(&run, "metrics-refused", "kubectl create -f metrics.yaml"),
        (
            "The Service \"metrics\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.100.100\"}: \
             failed to allocate IP 10.96.100.100: provided IP is not in the valid range. \
             The range of valid IPs is 10.100.0.0/16\n"
                .into(),
            1
        )
    );
    assert_eq!(cluster_ip(&run, "default", "metrics"), Ipv4Addr::new(10, 100, 100, 100));
    // Recreated with an empty clusterIP, web gets a new-range address; legacy never left it.
    let range: ipnet::Ipv4Net = "10.100.0.0/16".parse().unwrap();
    assert!(range.contains(&cluster_ip(&run, "default", "web")));
    assert_eq!(cluster_ip(&run, "default", "legacy"), Ipv4Addr::new(10, 100, 50, 50));
    assert!(findings(&run, "healthz", "Service default/legacy").is_empty());
}

/// Connect from pod `from` to a Service and report (masqueraded?, the source the backend saw).
fn backend_sees(run: &Run, from: &str, svc: &str) -> (bool, Ipv4Addr) {
    let (net, st) = (run.engine.network(), run.engine.state());
    let dev = net.device_by_name(from).expect("a pod");
    let p = probe(
        net,
        st,
        dev,
        cluster_ip(run, "default", svc),
        64,
        ProbeKind::Tcp { dst_port: 80 },
        0,
    );
    let nat = p.service_nat.clone().expect("kube-proxy DNAT");
    let seen = p.forward.last().and_then(|h| h.received).expect("delivered").src;
    (nat.masquerade, seen)
}

#[test]
fn kube_proxy_cluster_cidr_decides_who_is_masqueraded() {
    let opened = opened();
    let run = run_until(&opened, Some("uncordon-n3"));
    let pod_ip = |run: &Run, name: &str| {
        let c = run.engine.network().cluster.as_ref().expect("a cluster");
        c.pod("default", name).and_then(|p| p.ip).expect("a pod address")
    };
    // Pods of the new pool (10.240.0.0/16) are outside kube-proxy's clusterCIDR (10.244.0.0/16).
    let a = pod_ip(&run, "client-a");
    assert!("10.240.0.0/16".parse::<ipnet::Ipv4Net>().unwrap().contains(&a), "{a}");
    let (masq, seen) = backend_sees(&run, "client-a", "web");
    assert!(masq && seen != a, "backend saw {seen}");
    // The finding appeared with the first new-range pods: the CoreDNS pods drain-n2 moved to n1.
    let first = findings(&run, "drain-n2", "wrong source IP");
    assert_eq!(first.len(), 1, "{:?}", step(&run, "drain-n2").findings);
    assert!(
        first[0].starts_with("wrong source IP: pods on n1 outside clusterCIDR 10.244.0.0/16 (kube-system/coredns-")
            && first[0].contains("still runs with clusterCIDR 10.244.0.0/16"),
        "{}",
        first[0]
    );
    let on_n2 = findings(&run, "uncordon-n2", "wrong source IP: pods on n2");
    assert!(
        on_n2.len() == 1 && on_n2[0].contains(&format!("(default/client-a {a})")),
        "{on_n2:?}"
    );
    // `fabsim explain --tcp` says what the backend saw.
    let o = common::fabsim(&[
        "explain",
        SCENARIO,
        "--step",
        "uncordon-n3",
        "--tcp",
        "80",
        "client-a",
        &cluster_ip(&run, "default", "web").to_string(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("; the backend saw source {seen}, masqueraded by kube-proxy")),
        "{text}"
    );
    let run = run_until(&opened, Some("kube-proxy"));
    assert_eq!(
        printed(&run, "kube-proxy", "kubectl apply -f kube-proxy.yaml"),
        ("configmap/kube-proxy configured\n".into(), 0)
    );
    let (masq, seen) = backend_sees(&run, "client-a", "web");
    assert!(!masq && seen == pod_ip(&run, "client-a"), "backend saw {seen}");
    assert!(fabsim::k8s::wrong_source_findings(run.engine.network()).is_empty());
}

// ---- variants ------------------------------------------------------------------------------

/// Variant (a): the runbook forgets kube-proxy's clusterCIDR. The wrong-source finding comes
/// where new-range pods first talk to Services and is still there at the end.
#[test]
fn variant_forgetting_kube_proxy_keeps_masquerading_new_range_pods() {
    let mut o = opened();
    o.scenario
        .as_mut()
        .expect("a scenario")
        .steps
        .retain(|s| s.id != "kube-proxy");
    let run = run_until(&o, None);
    let first = run
        .steps
        .iter()
        .find(|s| s.findings.iter().any(|f| f.starts_with("wrong source IP")))
        .map(|s| s.id.as_str());
    assert_eq!(first, Some("drain-n2"));
    let left = fabsim::k8s::wrong_source_findings(run.engine.network());
    assert_eq!(left.len(), 3, "one per node: {left:?}");
    assert!(left.iter().all(|f| f.contains("clusterCIDR 10.244.0.0/16")), "{left:?}");
    let (masq, _) = backend_sees(&run, "client-a", "web");
    assert!(masq);
}

/// After `uncordon-n2`, client-a on n2 has no address: its sandbox waits on the CNI's `error`,
/// the step reports it stuck, and `kubectl get pods` shows ContainerCreating.
fn client_a_is_stuck(run: &Run, error: &str) {
    let c = run.engine.network().cluster.as_ref().expect("a cluster");
    let pod = c.pod("default", "client-a").expect("client-a");
    assert_eq!(pod.ip, None);
    let waiting = format!("failed to setup network for sandbox: {error}");
    assert_eq!(pod.waiting.as_deref(), Some(waiting.as_str()));
    assert_has(
        &step(run, "uncordon-n2").findings.join("\n"),
        &[&format!(
            "pod default/client-a on n2 is stuck ContainerCreating: {waiting}"
        )],
    );
    assert_has(
        &out_in(run, "n1", "kubectl get pods -o wide"),
        &["client-a 0/1 ContainerCreating 0 ... <none> n2 ..."],
    );
}

/// Variant (b): the old pool is disabled but the new one never created (P1-6): calico-ipam
/// has no pool for any node, so pods started from then on are stuck ContainerCreating with the
/// CNI's error.
#[test]
fn variant_forgetting_the_calico_pool_leaves_pods_container_creating() {
    let mut o = opened();
    for s in o.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { lines, .. }) = (s.id == "new-pool", &mut s.action) {
            lines.retain(|(l, _)| !l.starts_with("calicoctl apply"));
        }
    }
    let run = run_until(&o, Some("uncordon-n2"));
    client_a_is_stuck(&run, "no configured Calico pools for node n2");
    // The first pods to start after the pool change are the CoreDNS pod drain-n2 moves: stuck
    // too, on a node that never left. Each is a finding when it gets stuck.
    let first = run
        .steps
        .iter()
        .find(|s| s.findings.iter().any(|f| f.contains("is stuck ContainerCreating")))
        .map(|s| s.id.as_str());
    assert_eq!(first, Some("drain-n2"));
}

/// Variant (c): stale IPAM blocks (P1-7). The new pool is one /26 block, and a decommissioned
/// node's record (`n4`, never cleaned from Calico IPAM) holds it with 62 allocations nobody
/// released. The two addresses left go to the CoreDNS pod drain-n2 moves and to n2's tunnel
/// address when calico-node starts there; n2 can claim no block and borrow no address for its
/// pods, which fail with Calico's "No IPs available".
#[test]
fn variant_with_stale_ipam_blocks_has_no_ips_available() {
    let text = std::fs::read_to_string(SCENARIO).expect("the scenario");
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/seed001-kubeadm.yaml");
    let stale: String = (0..62)
        .map(|i| format!("        - {{node: n4, handle: k8s-pod-network.stale{i:02}}}\n"))
        .collect();
    let marker = "  # §2.4 step 3: every Service deleted";
    assert!(text.contains(marker) && text.contains("cidr: 10.240.0.0/16"));
    let text = text
        .replace("../topologies/seed001-kubeadm.yaml", &topology.display().to_string())
        .replace("cidr: 10.240.0.0/16", "cidr: 10.240.0.0/26")
        .replace(
            marker,
            &format!("  - id: stale-blocks\n    inject:\n      ipam:\n{stale}{marker}"),
        );
    let dir = common::scratch("seed001-stale-ipam");
    let file = dir.join("stale-ipam.yaml");
    std::fs::write(&file, text).expect("write the variant");
    let o = scenario::open(&file).unwrap_or_else(|e| panic!("{e}"));
    let run = run_until(&o, Some("uncordon-n2"));
    client_a_is_stuck(&run, "No IPs available in pools: [10.240.0.0/26]");
}

/// §5 C18: `default/kubernetes` stays on 10.96.0.1 after the range moves (the apiserver's
/// controller never moves an existing Service); deleted, it comes back on 10.100.0.1 at the
/// controller's next 10-second tick, where the certificate kubeadm signed for 10.96.0.1 does not
/// cover it. kubeadm refuses to keep that certificate, and signs one for the new range only from
/// a configuration that says it — without one it signs for its default 10.96.0.0/12 again.
#[test]
fn default_kubernetes_moves_only_when_deleted_and_needs_a_new_certificate() {
    let o = opened();
    let run = run_until(&o, None);
    assert_eq!(
        findings(&run, "apiserver", "Service default/kubernetes is on 10.96.0.1").len(),
        1,
        "{:#?}",
        step(&run, "apiserver").findings
    );
    assert_eq!(cluster_ip(&run, "default", "kubernetes"), Ipv4Addr::new(10, 100, 0, 1));
    let tls = "in-cluster clients of default/kubernetes (10.100.0.1:443) fail TLS: \
               x509: certificate is valid for 10.96.0.1, 192.168.1.11, not 10.100.0.1";
    assert_eq!(findings(&run, "kubernetes-service", tls).len(), 1);
    let (signed, status) = printed(
        &run,
        "apiserver-cert",
        "sudo kubeadm init phase certs apiserver --config kubeadm.yaml",
    );
    assert_eq!(status, 0);
    assert_eq!(
        signed,
        "[certs] Generating \"apiserver\" certificate and key\n\
         [certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default \
         kubernetes.default.svc kubernetes.default.svc.cluster.local n1] and IPs [10.100.0.1 192.168.1.11]\n"
    );
    assert!(common::cluster(&run).kubernetes_service_findings().is_empty());

    // The controller's tick: the step that deletes the Service ends with it back, no sooner than
    // the next multiple of 10 s after the apiserver's last start.
    let c = common::cluster(&run);
    let svc = c.service("default", "kubernetes").expect("recreated");
    let deleted = step(&run, "kubernetes-service");
    assert!(
        svc.created_ms > deleted.start_ms && svc.created_ms <= deleted.start_ms + 10_000,
        "created at {} ms, the step started at {} ms",
        svc.created_ms,
        deleted.start_ms
    );

    // Signing without removing the old pair: kubeadm validates the existing one and refuses it.
    let mut kept = opened();
    for s in kept.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { lines, .. }) = (s.id == "apiserver-cert", &mut s.action) {
            lines.retain(|(l, _)| !l.contains("rm /etc"));
        }
    }
    let run = run_until(&kept, None);
    let (refused, status) = printed(
        &run,
        "apiserver-cert",
        "sudo kubeadm init phase certs apiserver --config kubeadm.yaml",
    );
    assert_eq!(status, 1);
    assert_eq!(
        refused,
        "error execution phase certs/apiserver: certificate apiserver is invalid: \
         x509: certificate is valid for 10.96.0.1, 192.168.1.11, not 10.100.0.1\n\
         To see the stack trace of this error execute with --v=5 or higher\n"
    );
    assert_eq!(run.failures().count(), 0);
    assert!(common::cluster(&run).kubernetes_service_findings()[0].starts_with(tls));

    // Signing from flags alone: kubeadm's default service range, not the cluster's.
    let mut bare = opened();
    for s in bare.scenario.as_mut().expect("a scenario").steps.iter_mut() {
        if let (true, Action::Run { lines, .. }) = (s.id == "apiserver-cert", &mut s.action) {
            for (l, _) in lines.iter_mut() {
                *l = l.replace(" --config kubeadm.yaml", "");
            }
        }
    }
    let run = run_until(&bare, None);
    let (signed, _) = printed(&run, "apiserver-cert", "sudo kubeadm init phase certs apiserver");
    assert!(signed.ends_with("and IPs [10.96.0.1 192.168.1.11]\n"), "{signed}");
    assert!(common::cluster(&run).kubernetes_service_findings()[0].starts_with(tls));
}
