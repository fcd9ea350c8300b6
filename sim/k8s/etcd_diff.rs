//! What etcd coming up on other data changed, object by object, as the restore findings say
//! it (`etcd_restore`): the API objects before and after, in a fixed order — kubeadm-config and
//! kube-proxy's ConfigMap, Nodes, Pods, Services, PodDisruptionBudgets, Deployments' templates,
//! Calico IPPools —, each kind sorted by name.

use std::collections::BTreeSet;
use std::fmt::Display;

use super::cluster::{Cluster, Owner, Pod};

/// `A → B` of an optional value (empty when unset), if it changed.
fn changed<T: Display + PartialEq>(what: &str, before: Option<T>, after: Option<T>) -> Option<String> {
    let show = |v: &Option<T>| v.as_ref().map(ToString::to_string).unwrap_or_else(|| "\"\"".into());
    (before != after).then(|| format!("{what} {} → {}", show(&before), show(&after)))
}

/// The names on either side, sorted.
fn names<'a>(before: impl Iterator<Item = String> + 'a, after: impl Iterator<Item = String> + 'a) -> BTreeSet<String> {
    before.chain(after).collect()
}

/// One line per object the jump from `before` to `after` changed.
pub(super) fn changes(before: &Cluster, after: &Cluster) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(changed(
        "ConfigMap kube-system/kubeadm-config networking.podSubnet",
        before.pod_cidr,
        after.pod_cidr,
    ));
    out.extend(changed(
        "ConfigMap kube-system/kubeadm-config networking.serviceSubnet",
        Some(before.service_cidr),
        Some(after.service_cidr),
    ));
    out.extend(changed(
        "ConfigMap kube-system/kube-proxy clusterCIDR",
        before.kube_proxy_config_cidr,
        after.kube_proxy_config_cidr,
    ));
    let all = names(
        before.nodes.iter().map(|n| n.name.clone()),
        after.nodes.iter().map(|n| n.name.clone()),
    );
    for name in &all {
        match (before.node(name), after.node(name)) {
            (Some(_), None) => out.push(format!(
                "Node {name} is gone (it registered after the snapshot; its kubelet registers it again only when it \
                 restarts)"
            )),
            (None, Some(a)) => out.push(format!(
                "Node {name} is back with spec.podCIDR {}",
                a.pod_cidr.map(|c| c.to_string()).unwrap_or_default()
            )),
            (Some(b), Some(a)) => {
                out.extend(changed(&format!("Node {name} spec.podCIDR"), b.pod_cidr, a.pod_cidr));
                out.extend(changed(
                    &format!("Node {name} spec.unschedulable"),
                    Some(b.unschedulable),
                    Some(a.unschedulable),
                ));
                if b.labels != a.labels {
                    out.push(format!("Node {name} metadata.labels are the snapshot's"));
                }
                if b.taints != a.taints {
                    out.push(format!("Node {name} spec.taints are the snapshot's"));
                }
            }
            (None, None) => {}
        }
    }
    out.extend(pod_changes(before, after));
    let svc = |c: &Cluster| {
        c.services
            .iter()
            .map(|s| format!("{}/{}", s.namespace, s.name))
            .collect::<Vec<_>>()
    };
    for key in names(svc(before).into_iter(), svc(after).into_iter()) {
        let find = |c: &Cluster| {
            c.services
                .iter()
                .find(|s| format!("{}/{}", s.namespace, s.name) == key)
                .map(|s| s.cluster_ip)
        };
        match (find(before), find(after)) {
            (Some(_), None) => out.push(format!("Service {key} is gone")),
            (None, Some(ip)) => out.push(format!(
                "Service {key} is back with spec.clusterIP {}",
                ip.map_or("None".to_string(), |ip| ip.to_string())
            )),
            (Some(b), Some(a)) => out.extend(changed(&format!("Service {key} spec.clusterIP"), b, a)),
            (None, None) => {}
        }
    }
    let pdb = |c: &Cluster| {
        c.pdbs
            .iter()
            .map(|p| format!("{}/{}", p.namespace, p.name))
            .collect::<BTreeSet<_>>()
    };
    let (pb, pa) = (pdb(before), pdb(after));
    out.extend(pb.difference(&pa).map(|k| format!("PodDisruptionBudget {k} is gone")));
    out.extend(pa.difference(&pb).map(|k| format!("PodDisruptionBudget {k} is back")));
    for key in names(before.templates.keys().cloned(), after.templates.keys().cloned()) {
        let rev = |c: &Cluster| c.templates.get(&key).map(|t| t.revision);
        out.extend(changed(
            &format!("Deployment {key} template revision"),
            rev(before),
            rev(after),
        ));
    }
    let pools = |c: &Cluster| {
        c.calico
            .as_ref()
            .map(|c| c.datastore.ip_pools.clone())
            .unwrap_or_default()
    };
    let (before_pools, after_pools) = (pools(before), pools(after));
    for name in names(before_pools.keys().cloned(), after_pools.keys().cloned()) {
        let cidr = |p: &std::collections::BTreeMap<String, crate::calico::datastore::IpPool>| {
            p.get(&name).map(|p| p.cidr.to_string())
        };
        match (cidr(&before_pools), cidr(&after_pools)) {
            (Some(c), None) => out.push(format!("IPPool {name} ({c}) is gone")),
            (None, Some(c)) => out.push(format!("IPPool {name} ({c}) is back")),
            (b, a) => out.extend(changed(&format!("IPPool {name} spec.cidr"), b, a)),
        }
    }
    out
}

/// Pods the kubelets kill (gone from the API) and pods the API has again, which their kubelets
/// start anew. Mirror pods are the kubelet's own and never change here.
fn pod_changes(before: &Cluster, after: &Cluster) -> Vec<String> {
    let key = |p: &Pod| (p.namespace.clone(), p.name.clone(), p.created_ms);
    let objects = |c: &Cluster| {
        c.pods
            .iter()
            .filter(|p| p.owner != Owner::Static)
            .map(key)
            .collect::<BTreeSet<_>>()
    };
    let (b, a) = (objects(before), objects(after));
    let mut out: Vec<String> = b
        .difference(&a)
        .map(|(ns, name, _)| format!("Pod {ns}/{name} is gone (its kubelet kills it)"))
        .collect();
    for (ns, name, created) in a.difference(&b) {
        let node = after
            .pods
            .iter()
            .find(|p| key(p) == (ns.clone(), name.clone(), *created))
            .and_then(|p| p.node.clone());
        out.push(match node {
            Some(node) => format!("Pod {ns}/{name} is back, bound to {node} (its kubelet starts it in a new sandbox)"),
            None => format!("Pod {ns}/{name} is back, Pending (not scheduled)"),
        });
    }
    out
}
