//! Services on the three-node cluster of tests/data/services.yaml: kubeadm's default Services
//! (`kubernetes` on the range's first address, `kube-dns` on its 10th), dynamic ClusterIPs from
//! the upper band of the range and the same on every run, the apiserver's refusals of a
//! requested ClusterIP, `kubectl get svc|endpoints`, Endpoints following rescheduled pods, and
//! kube-proxy's DNAT in the packet walk (curl/wget to a ClusterIP, `fabsim explain --tcp`, no
//! endpoints → connection refused, kube-proxy's masquerade decision by clusterCIDR).

mod common;

use std::net::Ipv4Addr;

use common::{assert_has, fabsim, out_in, run_file};
use fabsim::dataplane::{probe, ProbeKind};
use fabsim::scenario::Run;

const SCENARIO: &str = "tests/data/services.yaml";

fn cluster_ip(run: &Run, ns: &str, name: &str) -> Ipv4Addr {
    let cluster = run.engine.network().cluster.as_ref().expect("a cluster");
    cluster
        .service(ns, name)
        .and_then(|s| s.cluster_ip)
        .unwrap_or_else(|| panic!("no Service {ns}/{name} with a ClusterIP"))
}

fn pod_ip(run: &Run, ns: &str, name: &str) -> Ipv4Addr {
    let cluster = run.engine.network().cluster.as_ref().expect("a cluster");
    cluster.pod(ns, name).and_then(|p| p.ip).expect("a running pod")
}

/// What the runbook line `command` printed (its last run) in the last step of `run`, and its
/// exit status.
fn printed(run: &Run, command: &str) -> (String, i32) {
    let step = run.steps.last().expect("a step");
    let c = step
        .commands
        .iter()
        .rev()
        .find(|c| c.command == command)
        .unwrap_or_else(|| panic!("step {} ran no `{command}`", step.id));
    (c.output.clone(), c.status)
}

#[test]
fn kubeadm_services_and_dynamic_cluster_ips() {
    let run = run_file(SCENARIO, "services");
    assert_eq!(cluster_ip(&run, "default", "kubernetes"), Ipv4Addr::new(10, 96, 0, 1));
    assert_eq!(
        cluster_ip(&run, "kube-system", "kube-dns"),
        Ipv4Addr::new(10, 96, 0, 10)
    );
    let cluster = run.engine.network().cluster.as_ref().expect("a cluster");
    assert_eq!(cluster.cluster_dns, Ipv4Addr::new(10, 96, 0, 10));
    assert_eq!(cluster_ip(&run, "default", "pinned"), Ipv4Addr::new(10, 96, 0, 100));
    // Dynamic addresses come from the upper band: above the first 256 of the /12.
    let web = cluster_ip(&run, "default", "web");
    let range: ipnet::Ipv4Net = "10.96.0.0/12".parse().unwrap();
    assert!(range.contains(&web) && web > Ipv4Addr::new(10, 96, 1, 0), "{web}");
    assert_ne!(web, cluster_ip(&run, "default", "nobody"));
    // Deterministic: the same address on another run.
    assert_eq!(cluster_ip(&run_file(SCENARIO, "services"), "default", "web"), web);
    assert_eq!(
        printed(&run, "kubectl apply -f web.yaml"),
        ("service/web unchanged\n".into(), 0)
    );
    assert_eq!(
        printed(&run, "kubectl create -f nobody.yaml"),
        ("service/nobody created\n".into(), 0)
    );
}

#[test]
fn kubectl_get_services_and_endpoints() {
    let run = run_file(SCENARIO, "services");
    let web = cluster_ip(&run, "default", "web");
    assert_has(
        &out_in(&run, "n1", "kubectl get svc -A"),
        &[
            "NAMESPACE NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
            "default kubernetes ClusterIP 10.96.0.1 <none> 443/TCP ...",
            "default pinned ClusterIP 10.96.0.100 <none> 8080/TCP ...",
            &format!("default web ClusterIP {web} <none> 80/TCP ..."),
            "kube-system kube-dns ClusterIP 10.96.0.10 <none> 53/UDP,53/TCP,9153/TCP ...",
        ],
    );
    assert_has(
        &out_in(&run, "n1", "kubectl get services -n kube-system -o wide"),
        &[
            "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE SELECTOR",
            "kube-dns ClusterIP 10.96.0.10 <none> 53/UDP,53/TCP,9153/TCP ... k8s-app=kube-dns",
        ],
    );
    let web_pod = pod_ip(&run, "default", "web");
    assert_has(
        &out_in(&run, "n1", "kubectl get endpoints"),
        &[
            "NAME ENDPOINTS AGE",
            "kubernetes 192.168.1.11:6443 ...",
            &format!("web {web_pod}:80 ..."),
            &format!("pinned {web_pod}:80 ..."),
            "nobody <none> ...",
        ],
    );
}

#[test]
fn requested_cluster_ips_outside_the_range_or_taken_are_refused() {
    let run = run_file(SCENARIO, "refused");
    assert_eq!(
        printed(&run, "kubectl apply -f outside.yaml"),
        (
            "The Service \"outside\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.200.0.5\"}: \
             failed to allocate IP 10.200.0.5: provided IP is not in the valid range. \
             The range of valid IPs is 10.96.0.0/12\n"
                .into(),
            1
        )
    );
    assert_eq!(
        printed(&run, "kubectl apply -f taken.yaml"),
        (
            "The Service \"taken\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: \
             failed to allocate IP 10.96.0.10: provided IP is already allocated\n"
                .into(),
            1
        )
    );
    assert_eq!(
        printed(&run, "kubectl create -f web.yaml"),
        (
            "Error from server (AlreadyExists): error when creating \"web.yaml\": services \"web\" already exists\n"
                .into(),
            1
        )
    );
    let cluster = run.engine.network().cluster.as_ref().expect("a cluster");
    assert!(cluster.service("default", "outside").is_none() && cluster.service("default", "taken").is_none());
}

#[test]
fn curl_to_a_cluster_ip_reaches_the_backend_through_kube_proxy() {
    let run = run_file(SCENARIO, "services");
    let web = cluster_ip(&run, "default", "web");
    // From a node (Ubuntu, curl) and from a pod (busybox wget), both on n3, the backend on n2.
    assert_has(
        &out_in(&run, "n3", &format!("curl -s http://{web}/")),
        &["<title>Welcome to nginx!</title>"],
    );
    assert_has(
        &out_in(&run, "client", &format!("wget -O - http://{web}/")),
        &[&format!("Connecting to {web} ({web}:80)"), "'index.html' saved"],
    );
    // The Service's port maps to the pod's target port (8080 → 80).
    assert_has(
        &out_in(&run, "n3", "curl -s http://10.96.0.100:8080/"),
        &["<title>Welcome to nginx!</title>"],
    );
    // `fabsim explain --tcp` shows the DNAT on the client's node.
    let web_pod = pod_ip(&run, "default", "web");
    let o = fabsim(&[
        "explain",
        SCENARIO,
        "--step",
        "services",
        "--tcp",
        "80",
        "client",
        &web.to_string(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_has(
        &text,
        &[
            &format!("client → {web} ({web}): TCP SYN to port 80 ..."),
            &format!("2. n3 in ...: kube-proxy DNAT {web}:80 → {web_pod}:80 (Service default/web) ..."),
        ],
    );
}

#[test]
fn kube_proxy_masquerades_sources_outside_the_cluster_cidr() {
    let run = run_file(SCENARIO, "services");
    let (net, st) = (run.engine.network(), run.engine.state());
    let web = cluster_ip(&run, "default", "web");
    let web_pod = pod_ip(&run, "default", "web");
    let client = pod_ip(&run, "default", "client");
    let dev = |n: &str| net.device_by_name(n).expect("device");
    let tcp = ProbeKind::Tcp { dst_port: 80 };
    let from_pod = probe(net, st, dev("client"), web, 64, tcp, 0);
    let nat = from_pod.service_nat.clone().expect("DNAT");
    assert_eq!((nat.endpoint, nat.masquerade), (web_pod, false));
    let at_backend = from_pod.forward.last().and_then(|h| h.received).expect("delivered");
    assert_eq!((at_backend.src, at_backend.dst), (client, web_pod));
    // The node's own address is outside clusterCIDR (10.66.0.0/16): masqueraded.
    let from_node = probe(net, st, dev("n3"), web, 64, tcp, 0);
    assert!(from_node.service_nat.expect("DNAT").masquerade);
    let at_backend = from_node.forward.last().and_then(|h| h.received).expect("delivered");
    // It left n3 with the address n3 sources towards the pod from (its tunnel address), not
    // the one it picked for the ClusterIP (its default route's).
    let towards_pod = fabsim::dataplane::probe_source(net, st, dev("n3"), web_pod).expect("a route");
    assert_ne!(from_node.src, Some(towards_pod));
    assert_eq!(at_backend.src, towards_pod);
    // The answer comes back from the ClusterIP (conntrack's reverse DNAT).
    assert_eq!(
        from_pod.outcome,
        fabsim::dataplane::ProbeOutcome::Reply { from: web, ttl: 62 }
    );
}

#[test]
fn without_endpoints_the_connection_is_refused_and_a_cluster_ip_does_not_answer_ping() {
    let run = run_file(SCENARIO, "services");
    let nobody = cluster_ip(&run, "default", "nobody");
    assert_eq!(
        out_in(&run, "n3", &format!("curl http://{nobody}/")),
        format!("curl: (7) Failed to connect to {nobody} port 80 after 0 ms: Connection refused\n")
    );
    assert_has(
        &out_in(&run, "client", &format!("wget http://{nobody}/")),
        &[&format!(
            "wget: can't connect to remote host ({nobody}): Connection refused"
        )],
    );
    let web = cluster_ip(&run, "default", "web");
    let ping = out_in(&run, "n3", &format!("ping -c 1 {web}"));
    assert!(!ping.contains(" 0% packet loss"), "{ping}");
}

#[test]
fn endpoints_follow_rescheduled_and_deleted_pods() {
    let before = run_file(SCENARIO, "refused");
    let after = run_file(SCENARIO, "reschedule");
    let dns_endpoints = |run: &Run| {
        let c = run.engine.network().cluster.as_ref().expect("a cluster");
        let svc = c.service("kube-system", "kube-dns").expect("kube-dns");
        c.endpoints(svc)
    };
    let coredns_ips = |run: &Run| {
        let c = run.engine.network().cluster.as_ref().expect("a cluster");
        let mut ips: Vec<Ipv4Addr> = c
            .pods
            .iter()
            .filter(|p| p.name.starts_with("coredns-"))
            .filter_map(|p| p.ip)
            .collect();
        ips.sort();
        ips
    };
    assert_eq!(dns_endpoints(&before).len(), 2);
    assert_eq!(dns_endpoints(&before), coredns_ips(&before));
    assert_eq!(dns_endpoints(&after), coredns_ips(&after));
    assert_ne!(dns_endpoints(&before), dns_endpoints(&after));
    assert_eq!(
        printed(&after, "kubectl delete svc nobody"),
        ("service \"nobody\" deleted\n".into(), 0)
    );
    // The backend gone, its Service has no endpoints: kube-proxy rejects.
    let gone = run_file(SCENARIO, "web-gone");
    let web = cluster_ip(&gone, "default", "web");
    assert_has(&out_in(&gone, "n1", "kubectl get ep web"), &["web <none> ..."]);
    assert_has(
        &out_in(&gone, "n3", &format!("curl -sS http://{web}/")),
        &["curl: (7) ... Connection refused"],
    );
}

/// `kubectl describe svc` (kubectl v1.28 `describeService`): the fields in kubectl's order,
/// aligned by describe's tabwriter (a `Port:` line pads its name by itself), the apiserver's
/// single-stack defaults, each port's endpoints, and kubeadm's labels on `kubernetes`.
#[test]
fn kubectl_describe_service() {
    let run = run_file(SCENARIO, "services");
    assert_eq!(
        out_in(&run, "n1", "kubectl describe svc pinned"),
        "Name:              pinned
Namespace:         default
Labels:            <none>
Annotations:       <none>
Selector:          run=web
Type:              ClusterIP
IP Family Policy:  SingleStack
IP Families:       IPv4
IP:                10.96.0.100
IPs:               10.96.0.100
Port:              http  8080/TCP
TargetPort:        80/TCP
Endpoints:         10.66.217.2:80
Session Affinity:  None
Events:            <none>
"
    );
    let kubernetes = out_in(&run, "n1", "kubectl describe service kubernetes");
    assert!(
        kubernetes.starts_with("Name:              kubernetes\nNamespace:         default\nLabels:            component=apiserver\n                   provider=kubernetes\n"),
        "{kubernetes}"
    );
    assert!(
        kubernetes.contains("\nPort:              https  443/TCP\nTargetPort:        6443/TCP\n"),
        "{kubernetes}"
    );
    let dns = out_in(&run, "n1", "kubectl describe svc kube-dns -n kube-system");
    assert!(
        dns.contains("Annotations:       prometheus.io/port: 9153\n                   prometheus.io/scrape: true\n"),
        "{dns}"
    );
    let nobody = out_in(&run, "n1", "kubectl describe svc nobody");
    assert!(
        nobody.contains("\nPort:              <unset>  80/TCP\nTargetPort:        80/TCP\nEndpoints:         <none>\n"),
        "{nobody}"
    );
    assert_eq!(
        out_in(&run, "n1", "kubectl describe svc ghost"),
        "Error from server (NotFound): services \"ghost\" not found\n"
    );
}

/// NodePort Services: the apiserver's node port allocator (30000-32767; a dynamic port from the
/// upper band above the static one, kept on re-apply; a requested one checked), PORT(S) as
/// `port:nodePort/PROTOCOL`, and kube-proxy's `KUBE-NODEPORTS` on every node: a request to any
/// node's address on the node port reaches a backend on another node, masqueraded to the node
/// (externalTrafficPolicy Cluster), and the answer comes back from the address it was sent to.
#[test]
fn node_ports_are_allocated_and_forwarded_by_every_node() {
    let run = run_file(SCENARIO, "node-ports");
    let c = common::cluster(&run);
    let np = |name: &str| {
        c.service("default", name).expect("created").ports[0]
            .node_port
            .expect("a node port")
    };
    let dynamic = np("web-np");
    // The upper band: above 30000 + calculateRangeOffset's 86 for the 2768 ports of the range.
    assert!((30086..=32767).contains(&dynamic), "{dynamic}");
    assert_eq!(np("fixed-np"), 30080);
    assert_eq!(
        printed(&run, "kubectl apply -f low-np.yaml"),
        (
            "The Service \"low-np\" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in \
             the valid range. The range of valid ports is 30000-32767\n"
                .to_string(),
            1
        )
    );
    assert_eq!(
        printed(&run, "kubectl apply -f taken-np.yaml"),
        (
            "The Service \"taken-np\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is \
             already allocated\n"
                .to_string(),
            1
        )
    );
    assert_eq!(
        printed(&run, "kubectl apply -f web-np.yaml").0,
        "service/web-np unchanged\n"
    );
    assert_has(
        &printed(&run, "kubectl get svc web-np").0,
        &[&format!("web-np ... NodePort ... 80:{dynamic}/TCP ...")],
    );
    assert_has(
        &printed(&run, "kubectl get svc fixed-np").0,
        &["fixed-np ... NodePort ... 8080:30080/TCP ..."],
    );
    assert_has(
        &out_in(&run, "n1", "kubectl describe svc fixed-np"),
        &["NodePort: ... http ... 30080/TCP"],
    );

    // From the router, outside the cluster, to n3's address: n3 forwards to the pod on n2.
    let (net, st) = (run.engine.network(), run.engine.state());
    let dev = |n: &str| net.device_by_name(n).expect("device");
    let n3 = c.node("n3").expect("n3").internal_ip;
    let web_pod = pod_ip(&run, "default", "web");
    let p = probe(net, st, dev("router"), n3, 64, ProbeKind::Tcp { dst_port: 30080 }, 0);
    let nat = p.service_nat.clone().expect("DNAT on n3");
    assert_eq!((nat.device, nat.endpoint, nat.target_port), (dev("n3"), web_pod, 80));
    assert!(nat.masquerade);
    let at_backend = p.forward.last().and_then(|h| h.received).expect("delivered");
    let n3_towards_pod = fabsim::dataplane::probe_source(net, st, dev("n3"), web_pod).expect("a route");
    assert_eq!((at_backend.src, at_backend.dst), (n3_towards_pod, web_pod));
    assert!(
        matches!(p.outcome, fabsim::dataplane::ProbeOutcome::Reply { from, .. } if from == n3),
        "{:?}",
        p.outcome
    );
    // Any node's address works; a port no Service holds is refused by the node itself.
    assert_has(
        &out_in(&run, "n1", &format!("curl -s http://192.168.1.12:{dynamic}/")),
        &["<title>Welcome to nginx!</title>"],
    );
    let closed = probe(net, st, dev("router"), n3, 64, ProbeKind::Tcp { dst_port: 30081 }, 0);
    assert!(closed.service_nat.is_none());
}

/// After every step each Service is probed from every node whose kube-proxy runs, and each node
/// port on every node: a Service whose pods are gone is a finding with kube-proxy's reason, and
/// the NodePort Services of the last step answer everywhere.
#[test]
fn services_that_do_not_answer_are_findings_after_every_step() {
    let run = run_file(SCENARIO, "node-ports");
    let web = cluster_ip(&run, "default", "web");
    let gone = &common::step(&run, "web-gone").findings;
    assert!(
        gone.contains(&format!(
            "Service default/web: {web} (80/TCP) does not answer from every node: no ready endpoint: kube-proxy \
             rejects the connection (connection refused)"
        )),
        "{gone:#?}"
    );
    // kubernetes → the apiserver on n1's own address answers from n1 too (DNAT into its host).
    let all: Vec<&String> = run.steps.iter().flat_map(|s| &s.findings).collect();
    assert!(
        !all.iter().any(|f| f.starts_with("Service default/kubernetes")),
        "{all:#?}"
    );
    let last = &common::step(&run, "node-ports").findings;
    assert!(!last.iter().any(|f| f.contains("-np:")), "{last:#?}");
    assert!(fabsim::k8s::service_findings(run.engine.network(), run.engine.state())
        .iter()
        .all(|f| !f.contains("default/web") && !f.contains("-np")));
}
