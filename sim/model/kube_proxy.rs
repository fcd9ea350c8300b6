//! kube-proxy's rules on a node, in iptables mode (kubeadm's default): what `KUBE-SERVICES`
//! does with a packet to a Service's ClusterIP and port. The k8s module programs them from
//! the cluster's Services and Endpoints (`k8s::services`); the packet walk applies them
//! (`dataplane::walk`).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

/// A Service port's transport protocol (fabsim models TCP and UDP; SCTP is refused at apply).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum L4 {
    Tcp,
    Udp,
}

impl L4 {
    /// The spelling of the API (`protocol: TCP`) and of `kubectl get svc`'s PORT(S).
    pub fn as_str(self) -> &'static str {
        match self {
            L4::Tcp => "TCP",
            L4::Udp => "UDP",
        }
    }
}

/// One Service port's rules: `KUBE-SVC-…` with its `KUBE-SEP-…` DNAT targets, or the
/// filter table's REJECT when the Service has no ready endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceRule {
    /// `NAMESPACE/NAME:PORTNAME` as kube-proxy names it in its rule comments.
    pub name: String,
    pub cluster_ip: Ipv4Addr,
    pub port: u16,
    pub protocol: L4,
    /// The Service's node port (`KUBE-NODEPORTS`: a packet to any of the node's own addresses
    /// on this port), for NodePort and LoadBalancer Services.
    pub node_port: Option<u16>,
    /// Ready endpoints (address, target port), in the Endpoints object's order.
    pub endpoints: Vec<(Ipv4Addr, u16)>,
}

/// kube-proxy on one node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KubeProxy {
    /// `clusterCIDR` of its configuration (kubeadm: the pod subnet). A packet to a ClusterIP
    /// from a source outside it is marked for masquerade (`KUBE-MARK-MASQ`) and leaves the
    /// node with the node's address as source. None: no such rule.
    pub cluster_cidr: Option<Ipv4Net>,
    pub services: Vec<ServiceRule>,
}

impl KubeProxy {
    /// The rule a packet to `dst:port` over `protocol` hits, if any.
    pub fn rule(&self, dst: Ipv4Addr, port: u16, protocol: L4) -> Option<&ServiceRule> {
        self.services
            .iter()
            .find(|r| r.cluster_ip == dst && r.port == port && r.protocol == protocol)
    }

    /// The rule a packet to one of the node's own addresses on `port` hits (`KUBE-NODEPORTS`,
    /// jumped to from `KUBE-SERVICES` for `--dst-type LOCAL`), if any.
    pub fn node_port_rule(&self, port: u16, protocol: L4) -> Option<&ServiceRule> {
        self.services
            .iter()
            .find(|r| r.node_port == Some(port) && r.protocol == protocol)
    }

    /// Whether a packet from `src` to a Service is masqueraded: its source is outside
    /// `clusterCIDR` (k8s-cidr-migrations.md §2.6), or it is a pod reaching itself through
    /// its own Service (the `KUBE-SEP` chain's `-s <endpoint> -j KUBE-MARK-MASQ`, hairpin).
    pub fn masquerades(&self, src: Ipv4Addr, endpoint: Ipv4Addr) -> bool {
        src == endpoint || self.cluster_cidr.is_some_and(|c| !c.contains(&src))
    }
}
