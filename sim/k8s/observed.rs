//! A cluster as a snapshot observed it: `kubectl get nodes,pods -o yaml`, `kubectl get
//! services,endpoints -A -o yaml` and `kubectl -n kube-system get cm kubeadm-config -o yaml`
//! dumps (`k8s/*.yaml`) and `calicoctl get … -o yaml` / `kubectl get blockaffinities,ipamblocks
//! -o yaml` dumps (`calico/*.yaml`) made into the cluster model, then realized like a declared
//! one.
//!
//! Everything is read by the Calico datastore's loader (`calico::datastore`, Nodes, Pods and
//! Services included), then: each Node is matched to a host of the snapshot by name, hostname
//! or InternalIP; it keeps its observed podCIDR, labels and taints; pods keep their observed
//! placement and address; IPAM takes the dumped blocks, affinities and addresses as they are
//! (`Calico::adopt_observed`), so what fabsim allocates next continues from the real state.
//! calico-node counts as started on every node whose Calico address is known (confd then
//! renders its BIRD configuration from the dumped resources). kubeadm's ClusterConfiguration
//! gives the pod network (node IPAM for nodes joining later, kube-proxy's cluster CIDR) and the
//! service range; the Services keep their ClusterIPs, and one without a selector forwards to
//! its dumped Endpoints (the others' endpoints are the pods they select, as the Endpoints
//! controller derives them, so their dumped Endpoints are not needed).
//!
//! Not in these dumps, so not observed: calico-node's environment (the catalogue manifest's for
//! the Calico version the calico-node pods run). Without a kubeadm-config dump the service
//! range is kubeadm's default and there is no node IPAM; without a Service dump, the Services
//! are kubeadm init's two (with a warning).

use std::net::Ipv4Addr;

use super::cluster::{Cluster, KNode, Owner, Pod, PodPhase};
use super::taints::{self, TaintArg};
use crate::calico::datastore::{Datastore, KubePod, Node};
use crate::calico::install::Calico;
use crate::calico::ipam::TunnelKind;
use crate::diag::{Diagnostic, InputError, Span};
use crate::model::{AddrConfig, DeviceId, DeviceKind, Kubelet, Network};

/// What a `calico/` dump may hold: `calicoctl get ippools,bgpconfig,bgppeers,nodes` and
/// `kubectl get blockaffinities,ipamblocks`.
pub const CALICO_KINDS: &[&str] = &[
    "IPPool",
    "BGPConfiguration",
    "BGPPeer",
    "Node",
    "BlockAffinity",
    "IPAMBlock",
];
/// What a `k8s/` dump may hold: `kubectl get nodes,pods`, `kubectl get services,endpoints`,
/// and the `kube-system/kubeadm-config` ConfigMap.
pub const K8S_KINDS: &[&str] = &["Node", "Pod", "Service", "Endpoints", "ConfigMap"];

/// One dump file: its name for diagnostics and its text.
pub struct Dump {
    pub file: String,
    pub text: String,
}

/// Builds the cluster the dumps describe on `net` and realizes it. Returns the warnings (fields
/// not modelled, BIRD's on the rendered configurations).
pub fn adopt(net: &mut Network, calico: &[Dump], k8s: &[Dump]) -> Result<Vec<Diagnostic>, InputError> {
    let mut ds = Datastore::new();
    let mut warnings = Vec::new();
    for (dumps, kinds) in [(calico, CALICO_KINDS), (k8s, K8S_KINDS)] {
        for d in dumps {
            warnings.extend(ds.load_yaml_expecting(&d.text, &d.file, Some(kinds))?);
        }
    }
    let first = calico.first().or(k8s.first()).map_or("", |d| d.file.as_str());
    let mut cluster = nodes(net, &ds, first)?;
    let first_k8s = k8s.first().map_or(first, |d| d.file.as_str());
    services(&mut cluster, &ds, first_k8s, &mut warnings);
    let mut in_use: Vec<(String, Ipv4Addr, String, Span)> = Vec::new();
    for p in &ds.pods {
        let pod = pod(&cluster, &ds, p, &mut warnings)?;
        if let (PodPhase::Running, false, Some(ip), Some(node), Some(cid)) =
            (pod.phase, pod.host_network, pod.ip, &pod.node, &pod.container_id)
        {
            in_use.push((node.clone(), ip, format!("k8s-pod-network.{cid}"), p.span.clone()));
        }
        cluster.pods.push(pod);
    }
    if !calico.is_empty() {
        for n in ds.nodes.values() {
            for kind in TunnelKind::ALL {
                if let Some(addr) = kind.addr(n) {
                    let handle = dumped_handle(&ds, addr).unwrap_or_else(|| kind.handle(&n.name));
                    in_use.push((n.name.clone(), addr, handle, n.span.clone()));
                }
            }
        }
        cluster.calico = Some(install(&cluster, ds, &in_use)?);
    }
    net.cluster = Some(Box::new(cluster));
    warnings.extend(super::realize(net)?);
    Ok(warnings)
}

/// The cluster with its nodes: control-plane nodes first (kubeadm init ran there), then in
/// the snapshot's device order.
fn nodes(net: &mut Network, ds: &Datastore, first_file: &str) -> Result<Cluster, InputError> {
    let mut found: Vec<(DeviceId, &Node, Ipv4Addr)> = Vec::new();
    for n in ds.nodes.values() {
        let at = n.kube.as_ref().map_or(&n.span, |k| &k.span);
        let ip = n
            .kube
            .as_ref()
            .and_then(|k| k.internal_ip)
            .or(n.ipv4_address.map(|a| a.addr()));
        let dev = host_of(net, &n.name, ip).ok_or_else(|| {
            let by_ip = ip.map(|ip| format!(" or InternalIP {ip}")).unwrap_or_default();
            Diagnostic::error(
                at.clone(),
                format!(
                    "node `{}` is not a host of the snapshot (no Linux device named{by_ip} like it)",
                    n.name
                ),
            )
        })?;
        let ip = ip
            .or(net.device(dev).kubelet.as_ref().and_then(|k| k.node_ip))
            .ok_or_else(|| {
                let msg = format!(
                    "node `{}` has no InternalIP (status.addresses) nor Calico address, and its host declares no kubelet node_ip",
                    n.name
                );
                Diagnostic::error(at.clone(), msg)
            })?;
        found.push((dev, n, ip));
    }
    found.sort_by_key(|(dev, n, _)| (!is_control_plane(n), *dev));
    // The kubelet version the node reports, else the one its host declares.
    let versions: Vec<Option<String>> = found
        .iter()
        .map(|(dev, n, _)| {
            let declared = net.device(*dev).kubelet.as_ref().map(|k| k.version.clone());
            n.kube.as_ref().and_then(|k| k.kubelet_version.clone()).or(declared)
        })
        .collect();
    let Some((_, cp, cp_ip)) = found.first() else {
        let msg = "the k8s/ and calico/ dumps hold no Node (expected what `kubectl get nodes -o yaml` prints)";
        return Err(Diagnostic::error(Span::new(first_file, 1, 1), msg).into());
    };
    let cluster_version = versions.first().cloned().flatten().ok_or_else(|| {
        let msg = format!(
            "node `{}`: no status.nodeInfo.kubeletVersion, and its host declares no kubelet",
            cp.name
        );
        Diagnostic::error(cp.span.clone(), msg)
    })?;
    let kubeadm = ds.kubeadm.as_ref();
    let service_cidr = kubeadm
        .and_then(|k| k.service_subnet)
        .unwrap_or(super::services::DEFAULT_SERVICE_CIDR);
    let pod_cidr = kubeadm.and_then(|k| k.pod_subnet);
    let mut cluster = Cluster::new(&cluster_version, pod_cidr, service_cidr, format!("{cp_ip}:6443"), 0);
    for ((dev, n, ip), version) in found.iter().zip(versions) {
        let kubelet = version.unwrap_or_else(|| cluster_version.clone());
        cluster.add_node(&n.name, *dev, *ip, is_control_plane(n), &kubelet, 0);
        let d = &mut net.devices[dev.idx()];
        // kubeadm's preflight refuses a host without IPv4 forwarding
        // (`FileContent--proc-sys-net-ipv4-ip_forward`): a node that joined has it on.
        d.ip_forward = true;
        if d.kubelet.is_none() {
            d.kubelet = Some(Kubelet {
                version: kubelet,
                node_ip: Some(*ip),
                max_pods: None,
            });
        }
        if let (Some(k), Some(knode)) = (&n.kube, cluster.nodes.last_mut()) {
            observed_node(knode, n, k)?;
        }
    }
    // Node IPAM continues from the podCIDRs the nodes hold, as kube-controller-manager does
    // when it starts.
    cluster.start_node_ipam();
    Ok(cluster)
}

/// The dumped Services, each without a selector forwarding to its dumped Endpoints. With no
/// Service dumped, the two `kubeadm init` leaves, said in a warning (the snapshot did not).
/// Endpoints of no Service are warned about, not silently dropped.
fn services(cluster: &mut Cluster, ds: &Datastore, first_file: &str, warnings: &mut Vec<Diagnostic>) {
    let Some(advertise) = cluster.nodes.first().map(|n| n.internal_ip) else {
        return;
    };
    if ds.services.is_empty() {
        cluster.create_default_services(advertise, 0);
        let msg = format!(
            "the k8s/ dumps hold no Service: assuming the two kubeadm init creates (default/kubernetes on {} to {advertise}:6443, kube-system/kube-dns on {}); dump `kubectl get services,endpoints -A -o yaml` into k8s/ for the real ones",
            super::services::indexed_ip(cluster.service_cidr, 1),
            cluster.cluster_dns
        );
        warnings.push(Diagnostic::warning(Span::new(first_file, 1, 1), msg));
    }
    for s in &ds.services {
        let mut s = s.clone();
        if s.selector.is_empty() && s.cluster_ip.is_some() {
            let key = (s.namespace.clone(), s.name.clone());
            match ds.endpoints.get(&key) {
                Some(eps) => s.fixed_endpoints = eps.clone(),
                None => {
                    let msg = format!(
                        "Service {}/{} has no selector and the dumps hold no Endpoints of it: kube-proxy has no endpoint to send its traffic to",
                        s.namespace, s.name
                    );
                    warnings.push(Diagnostic::warning(Span::new(first_file, 1, 1), msg));
                }
            }
        }
        cluster.services.push(s);
    }
    for (ns, name) in ds.endpoints.keys() {
        if cluster.service(ns, name).is_none() {
            let msg = format!("Endpoints {ns}/{name}: the dumps hold no Service of that name; not used");
            warnings.push(Diagnostic::warning(Span::new(first_file, 1, 1), msg));
        }
    }
}

/// What the dump says about a node replaces what `add_node` assumed.
fn observed_node(knode: &mut KNode, n: &Node, k: &crate::calico::datastore::KubeNode) -> Result<(), Diagnostic> {
    knode.labels = n.labels.clone();
    knode.pod_cidr = n.pod_cidrs.iter().find_map(|c| match c {
        ipnet::IpNet::V4(v4) => Some(*v4),
        ipnet::IpNet::V6(_) => None,
    });
    knode.unschedulable = k.unschedulable;
    knode.taints = Vec::new();
    for t in &k.taints {
        let spec = match t.value.as_str() {
            "" => format!("{}:{}", t.key, t.effect),
            v => format!("{}={v}:{}", t.key, t.effect),
        };
        match taints::parse_arg(&spec) {
            Ok(TaintArg::Add(taint)) => knode.taints.push(taint),
            Ok(TaintArg::Remove(_)) | Err(_) => {
                let msg = format!(
                    "taint `{spec}`: expected a key, an optional value and an effect NoSchedule, PreferNoSchedule or NoExecute"
                );
                return Err(Diagnostic::error(t.span.clone(), msg));
            }
        }
    }
    Ok(())
}

fn is_control_plane(n: &Node) -> bool {
    n.labels.contains_key(taints::CONTROL_PLANE_KEY)
}

/// The Linux host a Node is: the device of its name, of its hostname (the node name is the
/// hostname in lower case), else the one with its InternalIP on an interface.
fn host_of(net: &Network, name: &str, ip: Option<Ipv4Addr>) -> Option<DeviceId> {
    let linux = |d: &DeviceId| net.device(*d).kind == DeviceKind::Linux;
    let all = || (0..net.devices.len() as u32).map(DeviceId).filter(linux);
    net.device_by_name(name)
        .filter(linux)
        .or_else(|| {
            all().find(|d| {
                net.device(*d)
                    .hostname
                    .as_ref()
                    .is_some_and(|h| h.to_lowercase() == name)
            })
        })
        .or_else(|| {
            let ip = ip?;
            all().find(|d| {
                net.device(*d)
                    .ifaces
                    .iter()
                    .any(|i| matches!(net.iface(*i).addr, AddrConfig::Static(a) if a.addr() == ip))
            })
        })
}

/// A dumped pod as the cluster's: its controller from its owner reference, its observed node
/// and address; a running pod's sandbox id from the IPAM handle of its address when the
/// dump has one, else derived as the cluster derives it.
fn pod(cluster: &Cluster, ds: &Datastore, p: &KubePod, warnings: &mut Vec<Diagnostic>) -> Result<Pod, Diagnostic> {
    if let Some(node) = p.node.as_ref().filter(|n| cluster.node(n).is_none()) {
        let msg = format!(
            "pod {}/{} runs on node `{node}`, which is not a node of the dumps",
            p.namespace, p.name
        );
        return Err(Diagnostic::error(p.node_span.clone(), msg));
    }
    let owner = match p.owner.as_ref().map(|(k, n)| (k.as_str(), n.as_str())) {
        None => Owner::Bare,
        Some(("DaemonSet", n)) => Owner::DaemonSet(n.to_string()),
        // A Deployment's pods belong to its ReplicaSet `<deployment>-<pod-template-hash>`.
        Some(("ReplicaSet", rs)) => Owner::Deployment(rs.rsplit_once('-').map_or(rs, |(d, _)| d).to_string()),
        // A static pod's mirror is owned by its Node.
        Some(("Node", _)) => Owner::Static,
        Some((kind, _)) => {
            let msg = format!(
                "pod {}/{} is owned by a {kind}, which fabsim does not model; it is kept as a bare pod",
                p.namespace, p.name
            );
            warnings.push(Diagnostic::warning(p.span.clone(), msg));
            Owner::Bare
        }
    };
    let running = p.phase.as_deref() == Some("Running");
    let container_id = (running && !p.host_network).then(|| {
        p.ip.and_then(|ip| dumped_handle(ds, ip))
            .and_then(|h| h.strip_prefix("k8s-pod-network.").map(str::to_string))
            .unwrap_or_else(|| super::names::container_id(&p.namespace, &p.name, 0))
    });
    Ok(Pod {
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        owner,
        node: p.node.clone(),
        host_network: p.host_network,
        image: p.image.clone(),
        ip: p.ip,
        phase: if running { PodPhase::Running } else { PodPhase::Pending },
        created_ms: 0,
        started_ms: running.then_some(0),
        tolerates_control_plane: p
            .tolerations
            .iter()
            .any(|(key, op)| key == taints::CONTROL_PLANE_KEY || (key.is_empty() && op == "Exists")),
        container_id,
        waiting: None,
        pinned_node: None,
        node_selector: p.node_selector.clone(),
        facts: None,
        // A dump does not show the resolv.conf its sandbox got.
        dns: None,
        // The scheduler's history is not in a dump; a pending pod gets its events from the
        // next scheduling pass.
        failed_scheduling: Vec::new(),
        rejected: None,
        // fabsim's dump reader keeps no volumes, finalizers or deletion timestamps.
        declared: Default::default(),
        deleted_ms: None,
    })
}

/// The handle a dumped IPAMBlock gives `addr`.
fn dumped_handle(ds: &Datastore, addr: Ipv4Addr) -> Option<String> {
    let ip = std::net::IpAddr::V4(addr);
    let b = ds.ipam_blocks.values().find(|b| !b.deleted && b.cidr.contains(&ip))?;
    let bits = |a: std::net::IpAddr| match a {
        std::net::IpAddr::V4(v) => u128::from(u32::from(v)),
        std::net::IpAddr::V6(v) => u128::from(v),
    };
    let ordinal = usize::try_from(bits(ip) - bits(b.cidr.network())).ok()?;
    let attr = (*b.allocations.get(ordinal)?)?;
    b.attributes.get(usize::try_from(attr).ok()?)?.handle_id.clone()
}

/// Calico as observed: the catalogue's manifest of the version the calico-node pods run (the
/// first known one when no pod says), the dumped datastore, IPAM as observed, calico-node
/// started on every node with a Calico address.
fn install(
    cluster: &Cluster,
    ds: Datastore,
    in_use: &[(String, Ipv4Addr, String, Span)],
) -> Result<Calico, Diagnostic> {
    let tag = cluster
        .pods
        .iter()
        .find(|p| p.owner == Owner::DaemonSet("calico-node".into()))
        .and_then(|p| p.image.rsplit_once(':').map(|(_, t)| t.to_string()));
    let manifests = crate::catalogue::manifest_urls();
    let known = manifests
        .iter()
        .filter_map(|u| crate::catalogue::manifest(u).and_then(|m| m.calico.as_ref()));
    let manifest = known
        .clone()
        .find(|c| Some(&c.version) == tag.as_ref())
        .or(known.clone().next());
    let mut calico = match manifest {
        Some(m) => Calico::new(&m.version, m.env.clone()),
        None => Calico::new(tag.as_deref().unwrap_or_default(), Default::default()),
    };
    calico.datastore = ds;
    let addrs: Vec<(String, Ipv4Addr, String)> = in_use.iter().map(|(n, a, h, _)| (n.clone(), *a, h.clone())).collect();
    calico.adopt_observed(&addrs).map_err(|(i, e)| {
        let at = in_use.get(i).map_or_else(|| Span::new("calico", 1, 1), |u| u.3.clone());
        Diagnostic::error(at, e)
    })?;
    for n in &cluster.nodes {
        if calico
            .datastore
            .nodes
            .get(&n.name)
            .is_some_and(|c| c.ipv4_address.is_some())
        {
            calico.started.push((n.name.clone(), 0));
        }
    }
    Ok(calico)
}
