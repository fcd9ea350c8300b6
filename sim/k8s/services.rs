//! Services as the apiserver and kube-proxy (iptables mode) handle them.
//!
//! - ClusterIP allocation from `--service-cluster-ip-range` (kubeadm's `serviceSubnet`):
//!   kubernetes `pkg/registry/core/service/ipallocator` — a bitmap over the range without its
//!   network and broadcast addresses (offset 0 is the range's first address + 1), split at
//!   `calculateRangeOffset` = min(max(16, size/16), 256): a requested (static) address may be
//!   anywhere, a dynamic one is drawn from the upper band first (`randomScanStrategyWithOffset`:
//!   a random start, then a scan upward with wrap-around; the lower band only when the upper
//!   one is full). The apiserver's draw is random; fabsim draws from an FNV-1a hash of the
//!   Service's namespace and name, so a run is deterministic and a Service keeps its address
//!   across runs (an explicit `spec.clusterIP` pins one where it matters).
//! - The bitmap is the one the apiserver's repair loop rebuilds: the ClusterIPs of the Services
//!   that exist and lie in the current range (so it is derived, never stored).
//! - Endpoints: the Running and Ready pods the selector selects (`kubernetes` has the
//!   apiserver's advertise address instead), addresses sorted as the Endpoints controller
//!   sorts them.
//! - Node ports: the apiserver's port allocator over 30000-32767 (the same banded bitmap and
//!   draw as ClusterIPs, `calculateRangeOffset` for ports).
//! - kube-proxy's rules on each node (`model::KubeProxy`), programmed by `program_kube_proxy`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cluster::{Cluster, Owner, Pod, PodPhase};
use crate::model::{KubeProxy, Network, ServiceRule, L4};

/// kubeadm's default `--service-cidr`.
pub const DEFAULT_SERVICE_CIDR: Ipv4Net = match Ipv4Net::new(Ipv4Addr::new(10, 96, 0, 0), 12) {
    Ok(n) => n,
    Err(_) => panic!("a valid prefix length"),
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceType {
    ClusterIP,
    /// A ClusterIP and a node port per port, which every node's kube-proxy forwards.
    NodePort,
    /// A ClusterIP and node ports; no load balancer exists in fabsim.
    LoadBalancer,
    /// A DNS CNAME only: no ClusterIP, no rules.
    ExternalName(String),
}

impl ServiceType {
    pub fn name(&self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
            ServiceType::ExternalName(_) => "ExternalName",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    pub name: Option<String>,
    pub port: u16,
    pub target_port: u16,
    pub protocol: L4,
    /// The port every node forwards to the Service (NodePort and LoadBalancer Services).
    pub node_port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub namespace: String,
    pub name: String,
    pub kind: ServiceType,
    /// `spec.clusterIP`; None for a headless (`clusterIP: None`) or ExternalName Service.
    pub cluster_ip: Option<Ipv4Addr>,
    pub ports: Vec<ServicePort>,
    /// `spec.selector` (empty: the Service's endpoints are not the controller's business).
    pub selector: BTreeMap<String, String>,
    /// `metadata.labels` and `metadata.annotations`.
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Endpoint addresses maintained by someone else: the apiserver for `kubernetes`.
    pub fixed_endpoints: Vec<Ipv4Addr>,
    pub created_ms: u64,
}

/// Why the apiserver refuses a requested ClusterIP (`ipallocator.ErrNotInRange`,
/// `ErrAllocated`) or cannot give one (`ErrFull`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    NotInRange,
    Allocated,
    Full,
}

/// The range's bitmap geometry: (max, offset) as `ipallocator.New` and `calculateRangeOffset`
/// compute them for an IPv4 CIDR.
fn geometry(cidr: Ipv4Net) -> (u64, u64) {
    let size = 1u64 << (32 - u32::from(cidr.prefix_len()));
    let max = size.saturating_sub(2);
    let offset = if size <= 16 { 0 } else { (size / 16).clamp(16, 256) };
    (max, offset)
}

/// The bitmap offset of `ip` in `cidr` (offset 0 = network address + 1), if usable.
fn offset_of(cidr: Ipv4Net, ip: Ipv4Addr) -> Option<u64> {
    let (max, _) = geometry(cidr);
    let base = u64::from(u32::from(cidr.network())) + 1;
    let at = u64::from(u32::from(ip)).checked_sub(base)?;
    (cidr.contains(&ip) && at < max).then_some(at)
}

fn addr_at(cidr: Ipv4Net, offset: u64) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(cidr.network()).wrapping_add(1).wrapping_add(offset as u32))
}

/// The apiserver's `--service-node-port-range` default, 30000-32767.
const NODE_PORTS_BASE: u16 = 30000;
const NODE_PORTS_SIZE: u16 = 2768;

/// `portallocator.calculateRangeOffset`: min(max(16, size/32), 128) — 86 for the default range.
fn node_port_range_offset() -> u64 {
    let size = u64::from(NODE_PORTS_SIZE);
    if size <= 16 {
        0
    } else {
        (size / 32).clamp(16, 128)
    }
}

fn node_port_offset(port: u16) -> Option<u64> {
    port.checked_sub(NODE_PORTS_BASE)
        .filter(|at| *at < NODE_PORTS_SIZE)
        .map(u64::from)
}

/// The node port range as the apiserver's errors print it.
pub fn node_port_range() -> String {
    format!("{NODE_PORTS_BASE}-{}", NODE_PORTS_BASE + NODE_PORTS_SIZE - 1)
}

/// `randomScanStrategyWithOffset` over a bitmap of `max` items whose first `offset` are the
/// static band: the upper band from a drawn start, scanning upward with wrap-around, then the
/// lower band the same way. The apiserver's draw is random; fabsim's is an FNV-1a hash of
/// `key`, so a run is deterministic.
fn draw(used: &BTreeSet<u64>, max: u64, offset: u64, key: &str) -> Option<u64> {
    let r = crate::hash::fnv1a(key.bytes());
    let scan = |lo: u64, len: u64| -> Option<u64> {
        if len == 0 {
            return None;
        }
        let start = r % len;
        (0..len).map(|i| lo + (start + i) % len).find(|at| !used.contains(at))
    };
    scan(offset, max.saturating_sub(offset)).or_else(|| scan(0, offset.min(max)))
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// `GetIndexedIP(cidr, n)`: the n-th address of the range (1: `kubernetes`, 10: kubeadm's DNS).
pub fn indexed_ip(cidr: Ipv4Net, n: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(cidr.network()).wrapping_add(n))
}

impl Cluster {
    pub fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        self.services
            .iter()
            .find(|s| s.namespace == namespace && s.name == name)
    }

    /// The allocator's bitmap: the offsets taken by existing Services in the current range.
    fn allocated(&self) -> BTreeSet<u64> {
        self.services
            .iter()
            .filter_map(|s| s.cluster_ip.and_then(|ip| offset_of(self.service_range(), ip)))
            .collect()
    }

    /// `Range.Allocate(ip)`: a requested ClusterIP.
    pub fn check_cluster_ip(&self, ip: Ipv4Addr) -> Result<(), AllocError> {
        let at = offset_of(self.service_range(), ip).ok_or(AllocError::NotInRange)?;
        if self.allocated().contains(&at) {
            return Err(AllocError::Allocated);
        }
        Ok(())
    }

    /// `Range.AllocateNext()` for Service `namespace/name`: the upper band from a drawn start,
    /// scanning upward with wrap-around, then the lower band the same way.
    pub fn next_cluster_ip(&self, namespace: &str, name: &str) -> Result<Ipv4Addr, AllocError> {
        let cidr = self.service_range();
        let (max, offset) = geometry(cidr);
        draw(&self.allocated(), max, offset, &format!("{namespace}/{name}"))
            .map(|at| addr_at(cidr, at))
            .ok_or(AllocError::Full)
    }

    /// The node ports existing Services hold, as offsets in the node port range.
    fn node_ports_allocated(&self) -> BTreeSet<u64> {
        self.services
            .iter()
            .flat_map(|s| s.ports.iter().filter_map(|p| p.node_port))
            .filter_map(node_port_offset)
            .collect()
    }

    /// `PortAllocator.Allocate(port)`: a requested node port.
    pub fn check_node_port(&self, port: u16) -> Result<(), AllocError> {
        let at = node_port_offset(port).ok_or(AllocError::NotInRange)?;
        if self.node_ports_allocated().contains(&at) {
            return Err(AllocError::Allocated);
        }
        Ok(())
    }

    /// `PortAllocator.AllocateNext()` for port `index` of Service `namespace/name`, the ports
    /// `taken` by the same request excluded: the upper band first, as for ClusterIPs.
    pub fn next_node_port(&self, namespace: &str, name: &str, index: usize, taken: &[u16]) -> Result<u16, AllocError> {
        let mut used = self.node_ports_allocated();
        used.extend(taken.iter().copied().filter_map(node_port_offset));
        let (size, offset) = (u64::from(NODE_PORTS_SIZE), node_port_range_offset());
        draw(&used, size, offset, &format!("{namespace}/{name}/{index}"))
            .map(|at| NODE_PORTS_BASE + at as u16)
            .ok_or(AllocError::Full)
    }

    /// The Service's ready endpoint addresses, sorted.
    pub fn endpoints(&self, svc: &Service) -> Vec<Ipv4Addr> {
        let mut eps = svc.fixed_endpoints.clone();
        if !svc.selector.is_empty() {
            eps.extend(
                self.pods
                    .iter()
                    .filter(|p| p.namespace == svc.namespace && selects(&svc.selector, p))
                    .filter_map(|p| self.ready_address(p)),
            );
        }
        eps.sort();
        eps
    }

    /// A pod's address while it is Running and Ready (a host-network pod's is its node's).
    fn ready_address(&self, p: &Pod) -> Option<Ipv4Addr> {
        if p.phase != PodPhase::Running || p.deleted_ms.is_some() {
            return None;
        }
        let ready = p.facts.as_ref().and_then(|f| f.ready.as_deref()).is_none_or(|r| {
            r.split_once('/')
                .is_some_and(|(a, b)| a == b && a.parse::<u32>().is_ok_and(|n| n > 0))
        });
        if !ready {
            return None;
        }
        if p.host_network {
            return p.node.as_deref().and_then(|n| self.node(n)).map(|n| n.internal_ip);
        }
        p.ip
    }

    /// The Services kubeadm's `init` leaves behind: `default/kubernetes` (the range's first
    /// address, 443 → the apiserver's advertise address :6443, created by the apiserver with
    /// its `component`/`provider` labels) and CoreDNS's `kube-system/kube-dns` on the range's
    /// 10th address (kubeadm `GetDNSIP`; labels and annotations from kubeadm's
    /// `CoreDNSService` manifest, `cmd/kubeadm/app/phases/addons/dns/manifests.go`).
    pub fn create_default_services(&mut self, advertise: Ipv4Addr, now: u64) {
        let port = |name: &str, port: u16, target_port: u16, protocol: L4| ServicePort {
            name: Some(name.to_string()),
            port,
            target_port,
            protocol,
            node_port: None,
        };
        let first = indexed_ip(self.service_range(), 1);
        self.services
            .push(super::kubernetes_service::kubernetes_service(first, advertise, now));
        self.services.push(Service {
            namespace: "kube-system".into(),
            name: "kube-dns".into(),
            kind: ServiceType::ClusterIP,
            cluster_ip: Some(self.cluster_dns),
            ports: vec![
                port("dns", 53, 53, L4::Udp),
                port("dns-tcp", 53, 53, L4::Tcp),
                port("metrics", 9153, 9153, L4::Tcp),
            ],
            selector: strings(&[("k8s-app", "kube-dns")]),
            labels: strings(&[
                ("k8s-app", "kube-dns"),
                ("kubernetes.io/cluster-service", "true"),
                ("kubernetes.io/name", "CoreDNS"),
            ]),
            annotations: strings(&[("prometheus.io/port", "9153"), ("prometheus.io/scrape", "true")]),
            fixed_endpoints: Vec::new(),
            created_ms: now,
        });
    }

    /// Services whose ClusterIP lies outside the apiserver's service range: the apiserver's repair
    /// loop's `ClusterIPOutOfRange` warnings (k8s-cidr-migrations.md §2.5), one per Service.
    pub fn out_of_range_services(&self) -> Vec<String> {
        let range = self.service_range();
        self.services
            .iter()
            .filter_map(|s| {
                let ip = s.cluster_ip?;
                (!range.contains(&ip)).then(|| {
                    format!(
                        "Service {}/{}: Warning ClusterIPOutOfRange: Cluster IP {ip} is not within the service CIDR {}; please recreate service",
                        s.namespace, s.name, range
                    )
                })
            })
            .collect()
    }
}

/// Whether a selector (`spec.selector`, all terms) selects the pod.
fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.labels();
    selector
        .iter()
        .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
}

/// kube-proxy's rules on every node whose kube-proxy pod runs: one per Service port with a
/// ClusterIP, DNAT to the ready endpoints' target port. Other hosts have none.
pub(super) fn program_kube_proxy(net: &mut Network, cluster: &Cluster) {
    let mut services = Vec::new();
    for svc in &cluster.services {
        let Some(ip) = svc.cluster_ip else { continue };
        let eps = cluster.endpoints(svc);
        for p in &svc.ports {
            services.push(ServiceRule {
                name: format!("{}/{}:{}", svc.namespace, svc.name, p.name.as_deref().unwrap_or("")),
                cluster_ip: ip,
                port: p.port,
                protocol: p.protocol,
                node_port: p.node_port,
                endpoints: eps.iter().map(|ip| (*ip, p.target_port)).collect(),
            });
        }
    }
    for node in &cluster.nodes {
        let runs = cluster.pods.iter().any(|p| {
            p.owner == Owner::DaemonSet("kube-proxy".into())
                && p.node.as_deref() == Some(node.name.as_str())
                && p.phase == PodPhase::Running
        });
        // Each kube-proxy runs with the clusterCIDR its pod read at start (`kube_proxy_config`).
        let rules = || KubeProxy {
            cluster_cidr: cluster
                .kube_proxy_cidrs
                .get(&node.name)
                .copied()
                .unwrap_or(cluster.kube_proxy_config_cidr),
            services: services.clone(),
        };
        net.devices[node.device.idx()].kube_proxy = runs.then(rules);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(cidr: &str) -> Cluster {
        Cluster::new("v1.28.15", None, cidr.parse().unwrap(), "10.0.0.1:6443".into(), 0)
    }

    #[test]
    fn geometry_follows_calculate_range_offset() {
        // /12: 2^20 addresses, offset capped at 256; /24: 256/16 = 16; /28: no lower band.
        assert_eq!(geometry("10.96.0.0/12".parse().unwrap()), ((1 << 20) - 2, 256));
        assert_eq!(geometry("10.96.0.0/24".parse().unwrap()), (254, 16));
        assert_eq!(geometry("10.96.0.0/28".parse().unwrap()), (14, 0));
    }

    #[test]
    fn dynamic_addresses_come_from_the_upper_band_then_the_lower() {
        let mut c = cluster("10.96.0.0/28");
        let mut got = Vec::new();
        for i in 0..14 {
            let ip = c.next_cluster_ip("default", &format!("s{i}")).unwrap();
            c.services.push(Service {
                namespace: "default".into(),
                name: format!("s{i}"),
                kind: ServiceType::ClusterIP,
                cluster_ip: Some(ip),
                ports: Vec::new(),
                selector: BTreeMap::new(),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                fixed_endpoints: Vec::new(),
                created_ms: 0,
            });
            got.push(ip);
        }
        // All 14 usable addresses (.1–.14), never the network or broadcast address, then full.
        let mut sorted = got.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 14);
        assert_eq!(sorted[0], Ipv4Addr::new(10, 96, 0, 1));
        assert_eq!(sorted[13], Ipv4Addr::new(10, 96, 0, 14));
        assert_eq!(c.next_cluster_ip("default", "more"), Err(AllocError::Full));
        let c = cluster("10.96.0.0/24");
        let ip = c.next_cluster_ip("default", "web").unwrap();
        assert!(
            u32::from(ip) >= u32::from(Ipv4Addr::new(10, 96, 0, 17)),
            "{ip} in the upper band"
        );
    }

    #[test]
    fn services_outside_a_changed_range_are_reported() {
        let mut c = cluster("10.96.0.0/12");
        c.create_default_services(Ipv4Addr::new(10, 0, 0, 1), 0);
        assert!(c.out_of_range_services().is_empty());
        // --service-cluster-ip-range moved to 10.100.0.0/16 (inside the old /12): the two
        // kubeadm Services are left outside it (k8s-cidr-migrations.md §2.1's warning).
        c.service_cidr = "10.100.0.0/16".parse().unwrap();
        assert_eq!(
            c.out_of_range_services(),
            [
                "Service default/kubernetes: Warning ClusterIPOutOfRange: Cluster IP 10.96.0.1 is not within the service CIDR 10.100.0.0/16; please recreate service",
                "Service kube-system/kube-dns: Warning ClusterIPOutOfRange: Cluster IP 10.96.0.10 is not within the service CIDR 10.100.0.0/16; please recreate service",
            ]
        );
        // The bitmap follows the range: 10.96.0.10 is free to request in no range now.
        assert_eq!(
            c.check_cluster_ip("10.96.0.10".parse().unwrap()),
            Err(AllocError::NotInRange)
        );
        assert!(c
            .next_cluster_ip("default", "web")
            .is_ok_and(|ip| c.service_cidr.contains(&ip)));
    }

    #[test]
    fn requested_addresses_are_checked_against_range_and_bitmap() {
        let mut c = cluster("10.96.0.0/12");
        c.create_default_services(Ipv4Addr::new(10, 0, 0, 1), 0);
        assert_eq!(
            c.check_cluster_ip("10.96.0.10".parse().unwrap()),
            Err(AllocError::Allocated)
        );
        assert_eq!(
            c.check_cluster_ip("10.96.0.0".parse().unwrap()),
            Err(AllocError::NotInRange)
        );
        assert_eq!(
            c.check_cluster_ip("10.111.255.255".parse().unwrap()),
            Err(AllocError::NotInRange)
        );
        assert_eq!(c.check_cluster_ip("10.100.0.1".parse().unwrap()), Ok(()));
    }
}
