//! The cluster's address ranges against the external networks the topology declares
//! (k8s-cidr-migrations.md §2.1: ranges "conflicting with other systems" are a reason to
//! migrate; issue #7 item 3): the service range, kube-controller-manager's cluster CIDR and every
//! Calico IPPool, each against every external network's segment and the destinations beyond it.

use ipnet::{IpNet, Ipv4Net};

use super::Cluster;
use crate::model::{DeviceKind, Network};

impl Cluster {
    /// One finding per (cluster range, external network) that share addresses.
    pub fn external_overlaps(&self, net: &Network) -> Vec<String> {
        let mut ranges: Vec<(String, Ipv4Net)> = vec![(
            "the service range (kube-apiserver --service-cluster-ip-range)".to_string(),
            self.service_range(),
        )];
        if let Some((cidr, _)) = self.node_ipam_settings() {
            ranges.push((
                "the cluster CIDR (kube-controller-manager --cluster-cidr)".to_string(),
                cidr,
            ));
        }
        for pool in self.calico.iter().flat_map(|c| c.datastore.ip_pools.values()) {
            if let (IpNet::V4(cidr), false) = (pool.cidr, pool.disabled) {
                ranges.push((format!("IPPool {}", pool.name), cidr));
            }
        }
        let mut out = Vec::new();
        for ext in net.devices.iter().filter(|d| d.kind == DeviceKind::External) {
            let Some(cfg) = &ext.external else { continue };
            let segment = cfg.gateway.trunc();
            for (what, range) in &ranges {
                let mut shared: Vec<String> = Vec::new();
                if range.contains(&segment.network()) || segment.contains(&range.network()) {
                    shared.push(format!("its segment {segment}"));
                }
                shared.extend(
                    cfg.responders
                        .iter()
                        .filter(|r| range.contains(&r.address))
                        .map(|r| format!("its destination {}", r.address)),
                );
                if !shared.is_empty() {
                    out.push(format!(
                        "{what} {range} overlaps external network {} ({}): an address in both is ambiguous \
                         (k8s-cidr-migrations.md §2.1: ranges conflicting with other systems)",
                        ext.name,
                        shared.join(", ")
                    ));
                }
            }
        }
        out
    }
}
