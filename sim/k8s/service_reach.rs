//! Service reachability after every step (k8s-cidr-migrations.md §5; issue #7's "pod-to-Service
//! and NodePort reachability through kube-proxy's rules"): each Service port's ClusterIP probed
//! from every node whose kube-proxy runs, and each node port on every such node from another
//! node, through kube-proxy's DNAT and the data plane as modelled. A pod's request meets the
//! same `KUBE-SERVICES` rules on its node, so the node's own connection stands for its pods
//! (a pod's address differs only in kube-proxy's masquerade decision, which the wrong-source
//! finding covers).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::cluster::Cluster;
use super::services::{Service, ServicePort, ServiceType};
use crate::dataplane::{error_text, probe, IcmpError, Probe, ProbeKind, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, Network};

/// What became of one request to a Service.
fn verdict(p: &Probe, dst: Ipv4Addr) -> Option<String> {
    match (&p.outcome, &p.service_nat) {
        (ProbeOutcome::Reply { .. }, Some(_)) => None,
        (
            ProbeOutcome::Error {
                error: IcmpError::PortUnreachable,
                ..
            },
            None,
        ) => Some("no ready endpoint: kube-proxy rejects the connection (connection refused)".into()),
        (ProbeOutcome::Reply { .. }, None) => Some(format!("{dst} answered without kube-proxy's DNAT (no rule)")),
        (ProbeOutcome::Lost { reason }, _) => Some(reason.clone()),
        (ProbeOutcome::LocalNoRoute, _) => Some(format!("no route to {dst}")),
        (ProbeOutcome::Error { from, error, .. }, _) => Some(format!("{from}: {}", error_text(error))),
    }
}

/// The nodes whose kube-proxy runs (their hosts have its rules), in join order.
fn proxied_nodes<'a>(net: &'a Network, cluster: &'a Cluster) -> Vec<(&'a str, DeviceId, Ipv4Addr)> {
    cluster
        .nodes
        .iter()
        .filter(|n| net.device(n.device).kube_proxy.is_some())
        .map(|n| (n.name.as_str(), n.device, n.internal_ip))
        .collect()
}

/// A reason and the nodes it holds for.
type Reason<'a> = (String, Vec<&'a str>);

/// How many nodes a finding names before it counts the rest.
const NAMED: usize = 5;

/// Failures by (Service, what was asked, the port, why) → the nodes asked from.
type Failures<'a> = BTreeMap<(String, String, String, String), Vec<&'a str>>;

/// One line per Service, address and reason: its ports that do not answer from which nodes (or
/// on which node, for a node port), and why.
pub fn service_findings(net: &Network, st: &State) -> Vec<String> {
    // Cilium's datapath (eBPF, cilium_host, its routes) is not modelled: its pods have
    // addresses but no network to probe, so Service reachability is not checked there
    // (FIDELITY.md, Cilium).
    let Some(cluster) = net.cluster.as_deref().filter(|c| c.cilium.is_none()) else {
        return Vec::new();
    };
    let nodes = proxied_nodes(net, cluster);
    let mut failed: Failures = BTreeMap::new();
    let services = cluster
        .services
        .iter()
        .filter(|s| !matches!(s.kind, ServiceType::ExternalName(_)));
    for svc in services {
        let Some(ip) = svc.cluster_ip else { continue };
        let name = format!("{}/{}", svc.namespace, svc.name);
        for port in &svc.ports {
            for (node, dev, _) in &nodes {
                if let Some(why) = verdict(
                    &probe(net, st, *dev, ip, 64, ProbeKind::to_port(port.protocol, port.port), 0),
                    ip,
                ) {
                    let label = format!("{}/{}", port.port, port.protocol.as_str());
                    failed
                        .entry((name.clone(), ip.to_string(), label, why))
                        .or_default()
                        .push(node);
                }
            }
            node_port_failures(net, st, svc, port, &nodes, &mut failed);
        }
    }
    // The ports that fail the same way from the same nodes make one line.
    let mut lines: BTreeMap<(String, String, String, Vec<&str>), Vec<String>> = BTreeMap::new();
    for ((svc, asked, port, why), on) in failed {
        lines.entry((svc, asked, why, on)).or_default().push(port);
    }
    // A failure whose reason names each node's own neighbour (its gateway's ICMP error) is one
    // line per node: past a few, the Service's lines become one that counts them.
    let mut per_target: BTreeMap<(String, String, Vec<String>), Vec<Reason>> = BTreeMap::new();
    for ((svc, asked, why, on), ports) in lines {
        per_target.entry((svc, asked, ports)).or_default().push((why, on));
    }
    let mut out = Vec::new();
    for ((svc, asked, ports), reasons) in per_target {
        let verb = if ports.len() == 1 { "does" } else { "do" };
        let head = format!("Service {svc}: {asked} ({}) {verb} not answer from", ports.join(", "));
        if reasons.len() > NAMED {
            let count: usize = reasons.iter().map(|(_, on)| on.len()).sum();
            let named: Vec<String> = reasons
                .iter()
                .take(NAMED)
                .map(|(why, on)| format!("{} ({why})", on.join(", ")))
                .collect();
            out.push(format!(
                "{head} {count} nodes, for {} reasons: {} and {} more reasons",
                reasons.len(),
                named.join("; "),
                reasons.len() - NAMED
            ));
            continue;
        }
        for (why, on) in reasons {
            // Not counted: the same failure on a cluster that grew is not a new finding.
            let from = if on.len() == nodes.len() && nodes.len() > 1 {
                "every node".to_string()
            } else if on.len() > NAMED {
                format!(
                    "{} nodes ({} and {} more)",
                    on.len(),
                    on[..NAMED].join(", "),
                    on.len() - NAMED
                )
            } else {
                on.join(", ")
            };
            out.push(format!("{head} {from}: {why}"));
        }
    }
    out
}

/// A node port asked on each node from the node before it in join order (the last from the
/// first), as a client outside would reach it through the fabric.
fn node_port_failures<'a>(
    net: &Network,
    st: &State,
    svc: &Service,
    port: &ServicePort,
    nodes: &[(&'a str, DeviceId, Ipv4Addr)],
    failed: &mut Failures<'a>,
) {
    let Some(node_port) = port.node_port else { return };
    if nodes.len() < 2 {
        return;
    }
    let kind = ProbeKind::to_port(port.protocol, node_port);
    let previous = nodes.iter().cycle().skip(nodes.len() - 1);
    for ((node, _, addr), (source, from, _)) in nodes.iter().zip(previous) {
        if let Some(why) = verdict(&probe(net, st, *from, *addr, 64, kind, 0), *addr) {
            let asked = format!("node port on {node} {addr}");
            let label = format!("{node_port}/{}", port.protocol.as_str());
            failed
                .entry((format!("{}/{}", svc.namespace, svc.name), asked, label, why))
                .or_default()
                .push(source);
        }
    }
}
