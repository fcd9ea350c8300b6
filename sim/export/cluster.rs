//! A snapshot's cluster dumps (`input::snapshot` reads them back through `k8s::observed`):
//!
//! - `k8s/cluster.yaml`: `kubectl get nodes,pods -o yaml` — a `v1` `List` of the Nodes (labels,
//!   Calico's KDD annotations, podCIDR, taints, InternalIP, kubelet version) and the Pods
//!   (owner, node, host network, image, node selector, control-plane toleration, phase, IP);
//! - `k8s/services.yaml`: `kubectl get services,endpoints -A -o yaml` — the Services, and the
//!   Endpoints of those without a selector (`default/kubernetes`: the apiserver's address);
//! - `k8s/kubeadm-config.yaml`: the `kube-system/kubeadm-config` ConfigMap — the pod network and
//!   service range `kubeadm init` was given;
//! - `calico/resources.yaml`: `calicoctl get ippools,bgpconfig,bgppeers -o yaml` — calicoctl's
//!   printer (`calicoctl/commands/common/printer.go`) marshals the slice of one `<Kind>List`
//!   per kind; Calico's per-node fields are already the Nodes' KDD annotations;
//! - `calico/ipam.yaml`: `kubectl get blockaffinities,ipamblocks -o yaml` — the IPAM state
//!   whose history fabsim could not replay (blocks, their allocations and free lists).
//!
//! Both tools print through JSON and yaml.v2 (`go_yaml`, the printer the views use). Pods are listed in
//! the cluster's creation order, not the API server's name order, so the re-read network
//! creates their namespaces in the same order.

use serde_json::{json, Map, Value};

use crate::calico::install::Calico;
use crate::k8s::{Cluster, Owner, PodPhase, Service, ServicePort, ServiceType};
use crate::model::L4;
use crate::views::api_doc::ApiDoc;

/// The dump files of `cluster`: (path, text).
pub(super) fn dumps(cluster: &Cluster) -> Vec<(String, String)> {
    let mut out = vec![
        ("k8s/cluster.yaml".to_string(), go_yaml(&kubectl_list(cluster))),
        ("k8s/services.yaml".to_string(), go_yaml(&services_list(cluster))),
        (
            "k8s/kubeadm-config.yaml".to_string(),
            go_yaml(&crate::k8s::kubeadm_config(cluster)),
        ),
    ];
    if let Some(calico) = &cluster.calico {
        out.push(("calico/resources.yaml".to_string(), go_yaml(&calicoctl_lists(calico))));
        out.push(("calico/ipam.yaml".to_string(), go_yaml(&ipam_list(calico))));
    }
    out
}

fn list(api: &str, kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": api, "items": items, "kind": kind, "metadata": {"resourceVersion": ""}})
}

fn kubectl_list(cluster: &Cluster) -> Value {
    let calico_nodes = cluster.calico.as_ref().map(|c| &c.datastore.nodes);
    let mut items: Vec<Value> = Vec::new();
    for n in &cluster.nodes {
        // KDD keeps Calico's per-node fields in these annotations (libcalico-go node.go).
        let mut annotations = Map::new();
        if let Some(c) = calico_nodes.and_then(|m| m.get(&n.name)) {
            let mut put = |k: &str, v: Option<String>| {
                if let Some(v) = v {
                    annotations.insert(format!("projectcalico.org/{k}"), v.into());
                }
            };
            put("IPv4Address", c.ipv4_address.map(|a| a.to_string()));
            put("ASNumber", c.as_number.map(|a| a.to_string()));
            put("IPv4IPIPTunnelAddr", c.ipv4_ipip_tunnel_addr.map(|a| a.to_string()));
            put("IPv4VXLANTunnelAddr", c.ipv4_vxlan_tunnel_addr.map(|a| a.to_string()));
            put("RouteReflectorClusterID", c.route_reflector_cluster_id.clone());
            put(
                "VXLANTunnelMACAddr",
                c.vxlan_tunnel_mac
                    .map(|m| m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")),
            );
        }
        let mut spec = Map::new();
        if let Some(c) = n.pod_cidr {
            spec.insert("podCIDR".into(), c.to_string().into());
            spec.insert("podCIDRs".into(), json!([c.to_string()]));
        }
        if !n.taints.is_empty() {
            let taints: Vec<Value> = n
                .taints
                .iter()
                .map(|t| {
                    let mut o = json!({"effect": t.effect.as_str(), "key": t.key});
                    if !t.value.is_empty() {
                        o["value"] = t.value.clone().into();
                    }
                    o
                })
                .collect();
            spec.insert("taints".into(), taints.into());
        }
        if n.unschedulable {
            spec.insert("unschedulable".into(), true.into());
        }
        items.push(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"annotations": annotations, "labels": n.labels, "name": n.name},
            "spec": spec,
            "status": {
                "addresses": [
                    {"address": n.internal_ip.to_string(), "type": "InternalIP"},
                    {"address": n.name, "type": "Hostname"},
                ],
                "nodeInfo": {"kubeletVersion": n.kubelet},
            },
        }));
    }
    for p in &cluster.pods {
        let mut meta = Map::new();
        let labels: Map<String, Value> = p.labels().into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
        meta.insert("labels".into(), labels.into());
        meta.insert("name".into(), p.name.clone().into());
        meta.insert("namespace".into(), p.namespace.clone().into());
        let owner = match &p.owner {
            Owner::DaemonSet(d) => Some(("apps/v1", "DaemonSet", d.clone())),
            // The pod's ReplicaSet: its name less the pod's own suffix.
            Owner::Deployment(_) => p
                .name
                .rsplit_once('-')
                .map(|(rs, _)| ("apps/v1", "ReplicaSet", rs.to_string())),
            Owner::Static => p.node.clone().map(|n| ("v1", "Node", n)),
            Owner::Bare => None,
        };
        if let Some((api, kind, name)) = owner {
            let r = json!([{"apiVersion": api, "controller": true, "kind": kind, "name": name}]);
            meta.insert("ownerReferences".into(), r);
        }
        let mut spec = Map::new();
        spec.insert("containers".into(), json!([{"image": p.image, "name": p.container()}]));
        if p.host_network {
            spec.insert("hostNetwork".into(), true.into());
        }
        if let Some(n) = &p.node {
            spec.insert("nodeName".into(), n.clone().into());
        }
        if !p.node_selector.is_empty() {
            spec.insert("nodeSelector".into(), json!(p.node_selector));
        }
        if p.tolerates_control_plane {
            let t =
                json!([{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]);
            spec.insert("tolerations".into(), t);
        }
        let mut status = Map::new();
        let phase = match p.phase {
            PodPhase::Running => "Running",
            PodPhase::Pending => "Pending",
            PodPhase::Failed => "Failed",
        };
        status.insert("phase".into(), phase.into());
        if let Some(r) = &p.rejected {
            status.insert("reason".into(), r.reason.clone().into());
            status.insert("message".into(), format!("Pod was rejected: {}", r.message).into());
        }
        if let Some(ip) = p.ip {
            status.insert("podIP".into(), ip.to_string().into());
            status.insert("podIPs".into(), json!([{"ip": ip.to_string()}]));
        }
        items.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}));
    }
    list("v1", "List", items)
}

/// `kubectl get services,endpoints -A -o yaml`, the Endpoints only of the Services without a
/// selector (the others' are the pods they select, which the pod dump has): each Service with
/// the fields the API server defaults for a single-stack IPv4 cluster.
fn services_list(cluster: &Cluster) -> Value {
    let meta = |s: &Service| {
        let mut m = Map::new();
        if !s.annotations.is_empty() {
            m.insert("annotations".into(), json!(s.annotations));
        }
        if !s.labels.is_empty() {
            m.insert("labels".into(), json!(s.labels));
        }
        m.insert("name".into(), s.name.clone().into());
        m.insert("namespace".into(), s.namespace.clone().into());
        m
    };
    let protocol = |p: &ServicePort| match p.protocol {
        L4::Tcp => "TCP",
        L4::Udp => "UDP",
    };
    let mut items = Vec::new();
    for s in &cluster.services {
        let mut spec = Map::new();
        let ports: Vec<Value> = s
            .ports
            .iter()
            .map(|p| {
                let mut o = json!({"port": p.port, "protocol": protocol(p), "targetPort": p.target_port});
                if let Some(n) = &p.name {
                    o["name"] = n.clone().into();
                }
                if let Some(n) = p.node_port {
                    o["nodePort"] = n.into();
                }
                o
            })
            .collect();
        if let ServiceType::ExternalName(target) = &s.kind {
            spec.insert("externalName".into(), target.clone().into());
        } else {
            let ip = s.cluster_ip.map_or_else(|| "None".to_string(), |ip| ip.to_string());
            spec.insert("clusterIP".into(), ip.clone().into());
            spec.insert("clusterIPs".into(), json!([ip]));
            spec.insert("internalTrafficPolicy".into(), "Cluster".into());
            spec.insert("ipFamilies".into(), json!(["IPv4"]));
            spec.insert("ipFamilyPolicy".into(), "SingleStack".into());
        }
        if !ports.is_empty() {
            spec.insert("ports".into(), ports.into());
        }
        if !s.selector.is_empty() {
            spec.insert("selector".into(), json!(s.selector));
        }
        spec.insert("sessionAffinity".into(), "None".into());
        spec.insert("type".into(), s.kind.name().into());
        items.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(s), "spec": spec, "status": {"loadBalancer": {}}}));
    }
    for s in cluster
        .services
        .iter()
        .filter(|s| s.selector.is_empty() && s.cluster_ip.is_some())
    {
        let addresses: Vec<Value> = s
            .fixed_endpoints
            .iter()
            .map(|ip| json!({"ip": ip.to_string()}))
            .collect();
        let ports: Vec<Value> = s
            .ports
            .iter()
            .map(|p| {
                let mut o = json!({"port": p.target_port, "protocol": protocol(p)});
                if let Some(n) = &p.name {
                    o["name"] = n.clone().into();
                }
                o
            })
            .collect();
        let mut item =
            json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": s.name, "namespace": s.namespace}});
        if !addresses.is_empty() {
            item["subsets"] = json!([{"addresses": addresses, "ports": ports}]);
        }
        items.push(item);
    }
    list("v1", "List", items)
}

fn calicoctl_lists(calico: &Calico) -> Value {
    const V3: &str = "projectcalico.org/v3";
    let ds = &calico.datastore;
    let pools = ds.ip_pools.keys().filter_map(|n| calico.pool_json(n, V3)).collect();
    let configs = ds
        .bgp_configurations
        .keys()
        .filter_map(|n| calico.bgpconfig_json(n))
        .collect();
    let peers = ds
        .bgp_peers
        .values()
        .map(|p| {
            let mut spec = Map::new();
            spec.insert("asNumber".into(), p.as_number.into());
            if p.keep_original_next_hop {
                spec.insert("keepOriginalNextHop".into(), true.into());
            }
            if let Some(t) = p.max_restart_time {
                spec.insert("maxRestartTime".into(), format!("{t}s").into());
            }
            let strings = [
                ("node", &p.node),
                ("nodeSelector", &p.node_selector),
                ("peerIP", &p.peer_ip),
                ("peerSelector", &p.peer_selector),
                ("reachableBy", &p.reachable_by),
            ];
            for (k, v) in strings {
                if let Some(v) = v {
                    spec.insert(k.into(), v.clone().into());
                }
            }
            if let Some(n) = p.num_allowed_local_as_numbers {
                spec.insert("numAllowedLocalASNumbers".into(), n.into());
            }
            if let Some(r) = &p.password {
                spec.insert(
                    "password".into(),
                    json!({"secretKeyRef": {"key": r.key, "name": r.name}}),
                );
            }
            spec.insert("sourceAddress".into(), p.source_address.clone().into());
            if let Some(t) = p.ttl_security {
                spec.insert("ttlSecurity".into(), t.into());
            }
            json!({"apiVersion": V3, "kind": "BGPPeer", "metadata": {"name": p.name}, "spec": spec})
        })
        .collect();
    json!([
        list(V3, "IPPoolList", pools),
        list(V3, "BGPConfigurationList", configs),
        list(V3, "BGPPeerList", peers),
    ])
}

/// BlockAffinities and IPAMBlocks as `kubectl get` prints the CRDs: IPAM's own blocks (each
/// allocation's handle, `unallocated` in list order) and the datastore's affinities.
fn ipam_list(calico: &Calico) -> Value {
    const CRD: &str = "crd.projectcalico.org/v1";
    let mut items: Vec<Value> = calico
        .datastore
        .block_affinities
        .values()
        .map(|a| {
            json!({"apiVersion": CRD, "kind": "BlockAffinity", "metadata": {"name": a.name}, "spec": {
                "cidr": a.cidr.to_string(), "deleted": a.deleted.to_string(), "node": a.node, "state": a.state,
            }})
        })
        .collect();
    for b in calico.ipam.iter().flat_map(|i| i.blocks()) {
        let base = b.cidr();
        let ordinal = |a: std::net::IpAddr| -> Option<usize> {
            let bits = |x: std::net::IpAddr| match x {
                std::net::IpAddr::V4(v) => u128::from(u32::from(v)),
                std::net::IpAddr::V6(v) => u128::from(v),
            };
            usize::try_from(bits(a).checked_sub(bits(base.network()))?).ok()
        };
        let size = usize::try_from(b.size()).unwrap_or(0);
        let mut allocations = vec![Value::Null; size];
        let mut attributes = Vec::new();
        for (addr, handle) in b.allocations() {
            if let Some(slot) = ordinal(addr).and_then(|o| allocations.get_mut(o)) {
                *slot = attributes.len().into();
                attributes.push(json!({"handle_id": handle, "secondary": null}));
            }
        }
        let unallocated: Vec<Value> = b.unallocated().filter_map(ordinal).map(Value::from).collect();
        let mut spec = json!({
            "allocations": allocations, "attributes": attributes, "cidr": base.to_string(),
            "deleted": false, "strictAffinity": false, "unallocated": unallocated,
        });
        if let Some(node) = b.affinity() {
            spec["affinity"] = format!("host:{node}").into();
        }
        let name = base.to_string().replace(['.', ':'], "-").replace('/', "-");
        items.push(json!({"apiVersion": CRD, "kind": "IPAMBlock", "metadata": {"name": name}, "spec": spec}));
    }
    list("v1", "List", items)
}

/// YAML as kubectl and calicoctl print an object they hold as JSON (`views::api_doc`: yaml.v2's
/// key order and quoting, literal blocks for strings with line breaks).
fn go_yaml(v: &Value) -> String {
    ApiDoc::from(v).yaml()
}
