//! Overlay node ranges: kube-controller-manager's `--cluster-cidr` cut into
//! `--node-cidr-mask-size` blocks, one per node (`k8s-cidr-migrations.md` §3: max nodes
//! `2^(mask − prefix)`, pod addresses per node `2^(32 − mask) − 2` as the sources count them,
//! and kubelet's `maxPods` capping what a node really runs).

use ipnet::Ipv4Net;
use serde::Serialize;

use super::budget::KUBELET_DEFAULT_MAX_PODS;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeCidrPlan {
    pub cluster_cidr: Ipv4Net,
    pub node_mask: u8,
    /// Node ranges in the cluster CIDR: the most nodes that get a podCIDR.
    pub max_nodes: u64,
    /// Addresses of one node range less network and broadcast ([000], [004]).
    pub pod_ips_per_node: u64,
    /// kubelet's maxPods: the given one, else kubelet's default.
    pub max_pods: u32,
    pub max_pods_is_default: bool,
    /// Pods a node really runs: the smaller of its range and maxPods.
    pub effective_pods_per_node: u64,
    pub warnings: Vec<String>,
}

/// The node-range arithmetic. `mask` must not be shorter than the cluster prefix nor longer
/// than /32 (the callers' input checks say so with the input's position).
pub fn node_cidr(cluster_cidr: Ipv4Net, mask: u8, max_pods: Option<u32>) -> NodeCidrPlan {
    let mask = mask.clamp(cluster_cidr.prefix_len(), 32);
    let max_nodes = 1u64 << (mask - cluster_cidr.prefix_len());
    let pod_ips_per_node = (1u64 << (32 - mask)).saturating_sub(2);
    let kubelet = max_pods.unwrap_or(KUBELET_DEFAULT_MAX_PODS);
    let effective = pod_ips_per_node.min(u64::from(kubelet));
    let mut warnings = Vec::new();
    if u64::from(kubelet) < pod_ips_per_node {
        let whose = if max_pods.is_some() {
            "kubelet maxPods"
        } else {
            "kubelet's default maxPods"
        };
        warnings.push(format!(
            "{whose} {kubelet} caps a node at {kubelet} pods though its /{mask} has {pod_ips_per_node} pod addresses: \
             raise maxPods to use the range"
        ));
    } else if u64::from(kubelet) > pod_ips_per_node {
        warnings.push(format!(
            "maxPods {kubelet} exceeds the {pod_ips_per_node} pod addresses of a /{mask}: pods beyond them stay \
             ContainerCreating"
        ));
    }
    NodeCidrPlan {
        cluster_cidr,
        node_mask: mask,
        max_nodes,
        pod_ips_per_node,
        max_pods: kubelet,
        max_pods_is_default: max_pods.is_none(),
        effective_pods_per_node: effective,
        warnings,
    }
}
