//! The pod address plan, checked after every step (k8s-cidr-migrations.md §5): what the Nodes'
//! podCIDRs, node IPAM's bitmap and the pods' addresses say about collisions and capacity
//! while a pod CIDR migration is under way.
//!
//! - C6: `--node-cidr-mask-size` changed while `--cluster-cidr` is the one the Nodes' podCIDRs
//!   came from, so re-registered nodes get blocks over the others' old ranges (§1.3, P0-2);
//! - C7: podCIDRs that overlap — a collision when both nodes run pods, a softer warning when
//!   the overlap involves only nodes with no pods (drained, §1.7's rolling phase) — and pods
//!   that hold the same address;
//! - C8: a block node IPAM marks free while a Node owns it (§1.7: a /24's release clears its
//!   whole /22), which the next allocations can hand out again;
//! - C9: fewer free blocks than nodes still to re-register;
//! - C14: pods whose address lies outside their node's podCIDR, when the CNI takes addresses
//!   from the podCIDR (host-local): they kept an address of a range the node no longer has.

use ipnet::Ipv4Net;

use super::cluster::{Cluster, KNode, PodPhase};
use crate::calico::install::CniIpam;

impl Cluster {
    /// The address plan's findings (C6-C9, C14), in that order.
    pub fn address_plan_findings(&self) -> Vec<String> {
        let mut out = self.mask_alone();
        out.extend(self.overlaps());
        out.extend(self.duplicate_pod_ips());
        out.extend(self.bitmap_and_capacity());
        out.extend(self.pods_outside_pod_cidr());
        out.extend(self.startable_node_ipam());
        out
    }

    /// C5 while kube-controller-manager runs: a Node's podCIDR outside its `--cluster-cidr` (set
    /// behind its back — an etcd write or restore — after it started) does not stop it, but its
    /// node IPAM fails to start at its next restart (`AllocateOrOccupyCIDR` at startup) and it
    /// crash-loops. (A crashed one is reported by `control_plane_findings`.)
    fn startable_node_ipam(&self) -> Vec<String> {
        let running = self.node_ipam.as_ref().is_some_and(|a| a.failure().is_none());
        let Some((cidr, _)) = self.node_ipam_settings().filter(|_| running) else {
            return Vec::new();
        };
        self.nodes
            .iter()
            .filter_map(|n| Some((n, n.pod_cidr.filter(|c| !cidr.contains(c))?)))
            .map(|(n, c)| {
                format!(
                    "Node {}'s podCIDR {c} lies outside kube-controller-manager's --cluster-cidr {cidr}: the running \
                     controller goes on, but at its next restart node IPAM cannot start (cidr {c} is out the range \
                     of cluster cidr {cidr}) and kube-controller-manager crash-loops (k8s-cidr-migrations.md §5 C5)",
                    n.name
                )
            })
            .collect()
    }

    fn pod_count(&self, node: &str) -> usize {
        self.pods
            .iter()
            .filter(|p| p.node.as_deref() == Some(node) && !p.host_network && p.ip.is_some())
            .count()
    }

    /// C6: the mask changed, the cluster CIDR the Nodes' ranges came from (kubeadm-config's
    /// podSubnet) did not.
    fn mask_alone(&self) -> Vec<String> {
        let (Some((cidr, mask)), Some(subnet)) = (self.node_ipam_settings(), self.pod_cidr) else {
            return Vec::new();
        };
        // The old sizes still held inside the range (the text stays the same while nodes move
        // over, so the finding is reported once).
        let old: std::collections::BTreeSet<String> = self
            .nodes
            .iter()
            .filter_map(|n| n.pod_cidr)
            .filter(|c| cidr.contains(c) && c.prefix_len() != mask)
            .map(|c| format!("/{}", c.prefix_len()))
            .collect();
        if cidr != subnet || old.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "kube-controller-manager allocates /{mask} blocks from --cluster-cidr={cidr}, the range the Nodes' {} \
             podCIDRs came from: only the mask changed, so nodes that register again get blocks over the old ranges of \
             the others — pod IP collisions; change --cluster-cidr to a disjoint range as well \
             (k8s-cidr-migrations.md §1.3, §5 C6)",
            old.into_iter().collect::<Vec<_>>().join(" and ")
        )]
    }

    /// C7: every pair of nodes whose podCIDRs overlap.
    fn overlaps(&self) -> Vec<String> {
        let with: Vec<(&KNode, Ipv4Net)> = self.nodes.iter().filter_map(|n| n.pod_cidr.map(|c| (n, c))).collect();
        let mut out = Vec::new();
        for (i, (a, ca)) in with.iter().enumerate() {
            for (b, cb) in with.iter().skip(i + 1) {
                if !(ca.contains(cb) || cb.contains(ca)) {
                    continue;
                }
                let (pa, pb) = (self.pod_count(&a.name), self.pod_count(&b.name));
                let pair = format!("{} ({ca}) and {} ({cb})", a.name, b.name);
                out.push(if pa > 0 && pb > 0 {
                    format!(
                        "podCIDRs of {pair} overlap and both nodes run pods ({pa} and {pb}): pods can get the same \
                         address on both, and traffic to it is blackholed on one (k8s-cidr-migrations.md §5 C7)"
                    )
                } else {
                    format!(
                        "podCIDRs of {pair} overlap; harmless while the node without pods stays drained — register it \
                         again before it runs pods (k8s-cidr-migrations.md §1.7, §5 C7)"
                    )
                });
            }
        }
        out
    }

    /// C7's symptom: two running pods with one address.
    fn duplicate_pod_ips(&self) -> Vec<String> {
        let mut by_ip: std::collections::BTreeMap<std::net::Ipv4Addr, Vec<String>> = Default::default();
        for p in self
            .pods
            .iter()
            .filter(|p| !p.host_network && p.phase == PodPhase::Running)
        {
            if let Some(ip) = p.ip {
                by_ip.entry(ip).or_default().push(format!("{}/{}", p.namespace, p.name));
            }
        }
        by_ip
            .into_iter()
            .filter(|(_, pods)| pods.len() > 1)
            .map(|(ip, pods)| {
                format!(
                    "duplicate pod IP {ip}: {} (overlapping podCIDRs, k8s-cidr-migrations.md §5 C7)",
                    pods.join(", ")
                )
            })
            .collect()
    }

    /// C8 and C9 over node IPAM as it runs.
    fn bitmap_and_capacity(&self) -> Vec<String> {
        let Some(ipam) = self.node_ipam.as_ref().filter(|a| a.failure().is_none()) else {
            return Vec::new();
        };
        let (cluster, mask) = ipam.settings();
        let mut out = Vec::new();
        for n in &self.nodes {
            let Some(c) = n.pod_cidr else { continue };
            let free = ipam.free_blocks_of(c);
            if !free.is_empty() {
                let blocks: Vec<String> = free.iter().map(ToString::to_string).collect();
                out.push(format!(
                    "node IPAM marks {} free while node {} owns {c}: a node that registers later can get it again; \
                     restart kube-controller-manager to rebuild its bitmap from the Nodes (k8s-cidr-migrations.md §1.7, \
                     §5 C8)",
                    blocks.join(", "),
                    n.name
                ));
            }
        }
        let to_go = self
            .nodes
            .iter()
            .filter(|n| {
                n.pod_cidr
                    .is_some_and(|c| c.prefix_len() != mask || !cluster.contains(&c))
            })
            .count();
        let free = ipam.free_count();
        if free < to_go {
            out.push(format!(
                "node IPAM has {free} free /{mask} blocks in {cluster} for {to_go} nodes still to register again: the \
                 last get no podCIDR (CIDRNotAvailable) (k8s-cidr-migrations.md §1.7, §5 C9)"
            ));
        }
        out
    }

    /// C14: with host-local, a pod's address comes from its node's podCIDR; one outside it is
    /// left from before the range changed.
    fn pods_outside_pod_cidr(&self) -> Vec<String> {
        if self
            .calico
            .as_ref()
            .is_none_or(|c| c.cni_ipam != CniIpam::HostLocalPodCidr)
        {
            return Vec::new();
        }
        let mut by_node: Vec<(String, Ipv4Net, usize, String)> = Vec::new();
        for n in &self.nodes {
            let Some(c) = n.pod_cidr else { continue };
            let outside: Vec<String> = self
                .pods
                .iter()
                .filter(|p| p.node.as_deref() == Some(n.name.as_str()) && !p.host_network)
                .filter_map(|p| {
                    p.ip.filter(|ip| !c.contains(ip))
                        .map(|ip| format!("{}/{} {ip}", p.namespace, p.name))
                })
                .collect();
            if let Some(first) = outside.first() {
                by_node.push((n.name.clone(), c, outside.len(), first.clone()));
            }
        }
        by_node
            .into_iter()
            .map(|(node, c, count, first)| {
                format!(
                    "{count} pods on {node} have addresses outside its podCIDR {c} (first: {first}): they keep them \
                     until recreated, and the routes for the old range are gone; drain the node before its range \
                     changes (k8s-cidr-migrations.md §5 C14)"
                )
            })
            .collect()
    }
}
