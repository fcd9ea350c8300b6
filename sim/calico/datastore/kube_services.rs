//! What a snapshot's `k8s/` dumps say about the cluster's service network, beyond its nodes and
//! pods: the Services (`kubectl get services -A -o yaml`), the Endpoints of Services without a
//! selector (`kubectl get endpoints`, e.g. `default/kubernetes`: the apiserver's address, which
//! no pod provides), and kubeadm's `ClusterConfiguration` (`kubectl -n kube-system get cm
//! kubeadm-config -o yaml`: `networking.podSubnet` and `serviceSubnet`, the ranges node IPAM
//! and the ClusterIP allocator work in). `k8s::observed` makes them the cluster's Services,
//! pod network and service range, so kube-proxy's rules on the snapshot are the real ones.
//!
//! Read field by field like every dump (`Obj`): a key neither read nor listed below as known
//! defaulting or status is an "unknown field" warning at its line.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde_saphyr::Spanned;

use super::tree::Yv;
use super::{Ctx, Obj};
use crate::diag::Span;
use crate::k8s::{Service, ServicePort, ServiceType};
use crate::model::L4;

/// Service spec fields the API server fills in (`SetDefaults_Service`, the dual-stack fields)
/// whose values do not change which endpoint kube-proxy sends a ClusterIP's traffic to in
/// fabsim's model; `clusterIPs` repeats `clusterIP` (and an IPv6 one, fabsim being IPv4-only).
const SERVICE_SPEC_DEFAULTS: &[&str] = &[
    "clusterIPs",
    "internalTrafficPolicy",
    "ipFamilies",
    "ipFamilyPolicy",
    "sessionAffinity",
    "externalTrafficPolicy",
    "allocateLoadBalancerNodePorts",
];

/// kubeadm `ClusterConfiguration` (v1beta3) fields that configure the control plane's
/// components, certificates and images, not the pod or service network fabsim models.
const CLUSTER_CONFIGURATION_NOISE: &[&str] = &[
    "apiServer",
    "apiVersion",
    "certificatesDir",
    "clusterName",
    "controlPlaneEndpoint",
    "controllerManager",
    "dns",
    "etcd",
    "featureGates",
    "imageRepository",
    "kind",
    "kubernetesVersion",
    "scheduler",
];

/// kubeadm's `ClusterConfiguration.networking`: the ranges `kubeadm init` was given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KubeadmNetworking {
    /// `podSubnet` (`--pod-network-cidr`); absent when kubeadm init had none.
    pub pod_subnet: Option<Ipv4Net>,
    /// `serviceSubnet` (`--service-cidr`).
    pub service_subnet: Option<Ipv4Net>,
    /// Where the ConfigMap's `kind` is.
    pub span: Span,
}

/// A `v1 Service` (`spec`; `status` is the load balancer's, which fabsim has none of).
pub(super) fn service(
    key: (String, String),
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    spec: Option<Obj>,
    spec_at: Span,
    ctx: &mut Ctx,
) -> Option<Service> {
    let (namespace, name) = key;
    let Some(mut s) = spec else {
        ctx.error(spec_at, format!("Service {name:?} has no spec"));
        return None;
    };
    let kind = match s.string("type", ctx) {
        None => ServiceType::ClusterIP,
        Some((t, at)) => match t.as_str() {
            "ClusterIP" => ServiceType::ClusterIP,
            "NodePort" => ServiceType::NodePort,
            "LoadBalancer" => ServiceType::LoadBalancer,
            "ExternalName" => {
                let target = s.string("externalName", ctx).map(|(n, _)| n).unwrap_or_default();
                ServiceType::ExternalName(target)
            }
            other => {
                let msg = format!(
                    "Service {name:?}: spec.type {other:?} is not a Service type (ClusterIP, NodePort, LoadBalancer, ExternalName)"
                );
                ctx.error(at, msg);
                return None;
            }
        },
    };
    let cluster_ip = match s.string("clusterIP", ctx) {
        None => None,
        Some((ip, _)) if ip.is_empty() || ip == "None" => None,
        Some((ip, at)) => match ip.parse::<Ipv4Addr>() {
            Ok(a) => Some(a),
            Err(_) => {
                ctx.error(
                    at,
                    format!("Service {name:?}: spec.clusterIP {ip:?} is not an IPv4 address"),
                );
                return None;
            }
        },
    };
    let mut ports = Vec::new();
    for p in s.list("ports", ctx).unwrap_or_default() {
        let Some(mut o) = Obj::new(p, "a Service port", ctx) else {
            continue;
        };
        let port_name = o.opt_string("name", ctx).map(|(n, _)| n);
        let port = o.number("port", 65535, ctx).map(|(n, _)| n as u16);
        let target_port = target_port(&mut o, ctx);
        let protocol = match o.string("protocol", ctx) {
            None => Some(L4::Tcp),
            Some((p, _)) if p == "TCP" => Some(L4::Tcp),
            Some((p, _)) if p == "UDP" => Some(L4::Udp),
            Some((p, at)) => {
                ctx.error(at, format!("Service {name:?}: protocol {p}: fabsim models TCP and UDP"));
                None
            }
        };
        let node_port = o
            .number("nodePort", 65535, ctx)
            .map(|(n, _)| n as u16)
            .filter(|n| *n != 0);
        o.finish(ctx);
        if let (Some(port), Some(protocol)) = (port, protocol) {
            ports.push(ServicePort {
                name: port_name,
                port,
                target_port: target_port.unwrap_or(port),
                protocol,
                node_port,
            });
        }
    }
    let selector = s.string_map("selector", ctx);
    s.skip(SERVICE_SPEC_DEFAULTS);
    s.finish(ctx);
    Some(Service {
        namespace,
        name,
        kind,
        cluster_ip,
        ports,
        selector,
        labels,
        annotations,
        fixed_endpoints: Vec::new(),
        created_ms: 0,
    })
}

/// A port's `targetPort`: a number (or its text). A named port would need the pods' container
/// ports, which the pod dump does not keep: an error, as `kubectl apply` of one is in fabsim.
fn target_port(o: &mut Obj, ctx: &mut Ctx) -> Option<u16> {
    let v = o.take("targetPort")?;
    let text = v.value.scalar().unwrap_or_default();
    match text.parse::<u16>() {
        Ok(n) if n > 0 => Some(n),
        _ => {
            let msg = format!("targetPort {text:?}: fabsim resolves numeric target ports only");
            ctx.error(ctx.span(v), msg);
            None
        }
    }
}

/// The ready addresses of an Endpoints object (`subsets[].addresses[].ip`). Not-ready
/// addresses get no kube-proxy rule; the subsets' ports repeat the Service's target ports.
pub(super) fn endpoint_addresses(top: &mut Obj, name: &str, ctx: &mut Ctx) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    for subset in top.list("subsets", ctx).unwrap_or_default() {
        let Some(mut o) = Obj::new(subset, "an Endpoints subset", ctx) else {
            continue;
        };
        for a in o.list("addresses", ctx).unwrap_or_default() {
            let Some(mut addr) = Obj::new(a, "an endpoint address", ctx) else {
                continue;
            };
            match addr.string("ip", ctx) {
                Some((ip, at)) => match ip.parse::<Ipv4Addr>() {
                    Ok(ip) => out.push(ip),
                    Err(_) if ip.contains(':') => {}
                    Err(_) => ctx.error(at, format!("Endpoints {name:?}: {ip:?} is not an IPv4 address")),
                },
                None => ctx.error(ctx.span(a), format!("Endpoints {name:?}: an address without `ip`")),
            }
            // Which pod or node the address is: fabsim knows it from the address itself.
            addr.skip(&["nodeName", "targetRef", "hostname"]);
            addr.finish(ctx);
        }
        o.skip(&["notReadyAddresses", "ports"]);
        o.finish(ctx);
    }
    out.sort();
    out
}

/// The `kube-system/kubeadm-config` ConfigMap's `data.ClusterConfiguration`: a YAML document
/// inside a string. Its positions are reported in the dump file's own lines when the string
/// is a literal block (`ClusterConfiguration: |`, as kubectl prints it).
pub(super) fn kubeadm_networking(top: &mut Obj, kind_at: Span, ctx: &mut Ctx) -> Option<KubeadmNetworking> {
    let mut data = top.obj("data", ctx)?;
    let Some(v) = data.take("ClusterConfiguration") else {
        data.consume_all();
        ctx.error(kind_at, "kubeadm-config has no data.ClusterConfiguration");
        return None;
    };
    // ClusterStatus (kubeadm before v1.22) lists the control-plane endpoints.
    data.skip(&["ClusterStatus"]);
    data.finish(ctx);
    let Yv::Str(text) = &v.value else {
        ctx.error(
            ctx.span(v),
            "data.ClusterConfiguration must be a string (a YAML document)",
        );
        return None;
    };
    let at = ctx.span(v);
    let shift = ctx.block_scalar_shift(&at);
    let doc: Spanned<Yv> = match serde_saphyr::from_str(text) {
        Ok(d) => d,
        Err(e) => {
            let msg: String = e
                .to_string()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            ctx.error(at, format!("data.ClusterConfiguration is not valid YAML: {msg}"));
            return None;
        }
    };
    let outer = ctx.shift;
    ctx.shift = shift;
    let found = networking(&doc, kind_at, ctx);
    ctx.shift = outer;
    found
}

fn networking(doc: &Spanned<Yv>, kind_at: Span, ctx: &mut Ctx) -> Option<KubeadmNetworking> {
    let mut c = Obj::new(doc, "kubeadm's ClusterConfiguration", ctx)?;
    let mut found = KubeadmNetworking {
        span: kind_at,
        ..KubeadmNetworking::default()
    };
    if let Some(mut n) = c.obj("networking", ctx) {
        let mut cidr = |key: &str, ctx: &mut Ctx| {
            let (text, at) = n.opt_string(key, ctx)?;
            match text.parse::<Ipv4Net>() {
                Ok(net) => Some(net),
                Err(_) => {
                    // A dual-stack cluster lists "v4,v6": fabsim takes the IPv4 range.
                    let v4 = text.split(',').find_map(|t| t.trim().parse::<Ipv4Net>().ok());
                    if v4.is_none() {
                        ctx.error(at, format!("networking.{key} {text:?} is not an IPv4 CIDR"));
                    }
                    v4
                }
            }
        };
        found.pod_subnet = cidr("podSubnet", ctx);
        found.service_subnet = cidr("serviceSubnet", ctx);
        // Only cluster.local is modelled (pods resolve through kube-dns's ClusterIP).
        n.skip(&["dnsDomain"]);
        n.finish(ctx);
    }
    c.skip(CLUSTER_CONFIGURATION_NOISE);
    c.finish(ctx);
    Some(found)
}
