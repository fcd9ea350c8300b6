//! kube-proxy's configuration: the `kube-system/kube-proxy` ConfigMap kubeadm writes, whose
//! `config.conf` (a KubeProxyConfiguration) has `clusterCIDR` = the pod subnet. kube-proxy reads
//! it when its pod starts (`Cluster::start` records it per node), so a changed ConfigMap
//! (`kubectl apply -f FILE`) takes effect at `kubectl -n kube-system rollout restart daemonset
//! kube-proxy` or when its pods are deleted. With a stale value, pods addressed from a new range
//! are outside it: kube-proxy marks their Service traffic for masquerade (`model::KubeProxy::
//! masquerades`) and the backend sees the node's address (k8s-cidr-migrations.md §2.6 P1-5 and
//! its k8s docs refinement).

use ipnet::Ipv4Net;

use super::cluster::PodPhase;
use super::command::CommandOutcome;
use crate::model::Network;

/// `kubectl apply -f` of a ConfigMap: None when the document is not one. fabsim applies the
/// `kube-system/kube-proxy` ConfigMap (its `clusterCIDR`) and Flannel's (`flannel::apply_config`);
/// another ConfigMap is an error.
pub(super) fn apply(net: &mut Network, text: &str, namespace: &str) -> Option<Result<CommandOutcome, String>> {
    let doc: serde_json::Value = serde_saphyr::from_str(text).ok()?;
    if doc.get("kind").and_then(|k| k.as_str()) != Some("ConfigMap") {
        return None;
    }
    let str_at = |p: &str| doc.pointer(p).and_then(|v| v.as_str());
    let name = str_at("/metadata/name").unwrap_or_default();
    let ns = str_at("/metadata/namespace").unwrap_or(namespace);
    if (ns, name) == (super::flannel::NAMESPACE, super::flannel::CONFIGMAP) {
        return Some(super::flannel::apply_config(net, &doc));
    }
    if (ns, name) != ("kube-system", "kube-proxy") {
        return Some(Err(format!(
            "kubectl apply of ConfigMap {ns}/{name}: fabsim applies the kube-system/kube-proxy and \
             kube-flannel/kube-flannel-cfg ConfigMaps only"
        )));
    }
    let Some(conf) = str_at("/data/config.conf") else {
        return Some(Err(
            "ConfigMap kube-system/kube-proxy: data.config.conf is missing".into()
        ));
    };
    let cidr = match cluster_cidr(conf) {
        Ok(c) => c,
        Err(e) => return Some(Err(format!("ConfigMap kube-system/kube-proxy: config.conf: {e}"))),
    };
    let cluster = net.cluster.as_deref_mut()?;
    let changed = cluster.kube_proxy_config_cidr != cidr;
    cluster.kube_proxy_config_cidr = cidr;
    let verb = if changed { "configured" } else { "unchanged" };
    Some(Ok(CommandOutcome::ok(format!("configmap/kube-proxy {verb}\n"))))
}

/// The KubeProxyConfiguration's `clusterCIDR` (empty or absent: none). kube-proxy takes a
/// comma-separated list (dual-stack); fabsim's data plane is IPv4, so the first IPv4 CIDR.
fn cluster_cidr(conf: &str) -> Result<Option<Ipv4Net>, String> {
    let doc: serde_json::Value = serde_saphyr::from_str(conf).map_err(|e| e.to_string())?;
    let v = doc.get("clusterCIDR").and_then(|v| v.as_str()).unwrap_or_default();
    let Some(first) = v.split(',').map(str::trim).find(|s| !s.is_empty()) else {
        return Ok(None);
    };
    first
        .parse::<Ipv4Net>()
        .map(|n| Some(n.trunc()))
        .map_err(|_| format!("clusterCIDR `{first}` is not an IPv4 CIDR"))
}

/// Findings (P1-5, C4): on each node, the running pods whose address is outside the
/// clusterCIDR its kube-proxy runs with — their connections to any ClusterIP reach the backend
/// from the node's address.
pub fn wrong_source_findings(net: &Network) -> Vec<String> {
    let Some(cluster) = net.cluster.as_deref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for node in &cluster.nodes {
        let Some(cidr) = net
            .devices
            .get(node.device.idx())
            .and_then(|d| d.kube_proxy.as_ref())
            .and_then(|k| k.cluster_cidr)
        else {
            continue;
        };
        let outside: Vec<String> = cluster
            .pods
            .iter()
            .filter(|p| {
                p.phase == PodPhase::Running && !p.host_network && p.node.as_deref() == Some(node.name.as_str())
            })
            .filter_map(|p| {
                let ip = p.ip.filter(|ip| !cidr.contains(ip))?;
                Some(format!("{}/{} {ip}", p.namespace, p.name))
            })
            .collect();
        if outside.is_empty() {
            continue;
        }
        out.push(format!(
            "wrong source IP: pods on {} outside clusterCIDR {cidr} ({}) reach Services as the node's address: \
             kube-proxy there still runs with clusterCIDR {cidr}, so it masquerades their connections to ClusterIPs \
             and the backends see the node, not the pod (k8s-cidr-migrations.md §2.6 P1-5: set clusterCIDR in the \
             kube-system/kube-proxy ConfigMap, then restart kube-proxy; egress to external networks is the CNI's \
             NAT, not kube-proxy's)",
            node.name,
            outside.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_cidr_is_the_first_of_the_list() {
        let conf = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.70.0.0/16,fd00::/48\n";
        assert_eq!(cluster_cidr(conf), Ok(Some("10.70.0.0/16".parse().unwrap())));
        assert_eq!(cluster_cidr("clusterCIDR: \"\"\n"), Ok(None));
        assert!(cluster_cidr("clusterCIDR: 10.70.0.0/33\n").is_err());
    }
}
