//! `kubectl apply|create|delete -f` of `v1 Service` manifests and `kubectl delete svc NAME…`,
//! with the apiserver's answers: a ClusterIP allocated (`services`), a requested one checked
//! (`ipallocator.ErrNotInRange` / `ErrAllocated`, wrapped as the Service REST storage does:
//! `failed to allocate IP <ip>: …`, k8s-cidr-migrations.md §2.5), an existing one immutable
//! (`ValidateServiceUpdate`: `may not change once set`). kubectl prints an Invalid status as
//! `The Service "NAME" is invalid: …` and exits 1.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::cluster::Cluster;
use super::command::CommandOutcome;
use super::services::{AllocError, Service, ServicePort, ServiceType};
use crate::model::{Network, L4};

/// What a Service manifest asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ServiceSpec {
    namespace: Option<String>,
    name: String,
    kind: ServiceType,
    cluster_ip: Requested,
    ports: Vec<ServicePort>,
    selector: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Requested {
    /// Empty or absent: the apiserver allocates one.
    Any,
    /// `clusterIP: None`: headless.
    Headless,
    Ip(Ipv4Addr),
}

/// The Services of a manifest text: None when it holds no `kind: Service`; an error when it
/// mixes them with other kinds or a field fabsim cannot read.
pub(super) fn manifests(text: &str) -> Option<Result<Vec<ServiceSpec>, String>> {
    let docs = super::command::documents_of_kind(text, "Service", "Services")?;
    Some(docs.and_then(|docs| docs.iter().map(parse).collect()))
}

fn parse(doc: &serde_json::Value) -> Result<ServiceSpec, String> {
    let str_at = |path: &str| doc.pointer(path).and_then(|v| v.as_str()).map(str::to_string);
    let name = str_at("/metadata/name").ok_or("Service manifest: metadata.name is missing")?;
    let kind = match str_at("/spec/type").as_deref().unwrap_or("ClusterIP") {
        "ClusterIP" => ServiceType::ClusterIP,
        "NodePort" => ServiceType::NodePort,
        "LoadBalancer" => ServiceType::LoadBalancer,
        "ExternalName" => ServiceType::ExternalName(str_at("/spec/externalName").unwrap_or_default()),
        other => return Err(format!("Service {name}: spec.type {other} is not a Service type")),
    };
    let cluster_ip = match str_at("/spec/clusterIP").as_deref() {
        None | Some("") => Requested::Any,
        Some("None") => Requested::Headless,
        Some(ip) => Requested::Ip(
            ip.parse()
                .map_err(|_| format!("Service {name}: spec.clusterIP `{ip}` is not an IPv4 address"))?,
        ),
    };
    let mut ports = Vec::new();
    for (i, p) in doc
        .pointer("/spec/ports")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .enumerate()
    {
        let number = |key: &str| p.get(key).and_then(|v| v.as_u64());
        let port = number("port")
            .filter(|n| (1..=65535).contains(n))
            .ok_or_else(|| format!("Service {name}: spec.ports[{i}].port must be between 1 and 65535"))?
            as u16;
        let target_port = match p.get("targetPort") {
            None => port,
            Some(v) => v
                .as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                .filter(|n| (1..=65535).contains(n))
                .map(|n| n as u16)
                .ok_or_else(|| {
                    format!("Service {name}: spec.ports[{i}].targetPort {v}: fabsim resolves numeric target ports only")
                })?,
        };
        let protocol = match p.get("protocol").and_then(|v| v.as_str()).unwrap_or("TCP") {
            "TCP" => L4::Tcp,
            "UDP" => L4::Udp,
            other => return Err(format!("Service {name}: protocol {other}: fabsim models TCP and UDP")),
        };
        let node_port = match number("nodePort") {
            None | Some(0) => None,
            Some(n) => Some(
                u16::try_from(n)
                    .map_err(|_| format!("Service {name}: spec.ports[{i}].nodePort must be between 1 and 65535"))?,
            ),
        };
        ports.push(ServicePort {
            name: p.get("name").and_then(|v| v.as_str()).map(str::to_string),
            port,
            target_port,
            protocol,
            node_port,
        });
    }
    let selector = super::command::string_map(doc, "/spec/selector");
    Ok(ServiceSpec {
        namespace: str_at("/metadata/namespace"),
        name,
        kind,
        cluster_ip,
        ports,
        selector,
        labels: super::command::string_map(doc, "/metadata/labels"),
        annotations: super::command::string_map(doc, "/metadata/annotations"),
    })
}

/// `kubectl apply|create -f` of Service manifests: each Service's line, in file order.
pub(super) fn apply(
    net: &mut Network,
    verb: &str,
    specs: Vec<ServiceSpec>,
    source: &str,
    namespace: &str,
    now: u64,
) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let (mut out, mut failed) = (String::new(), false);
    for spec in specs {
        match apply_one(cluster, verb, spec, source, namespace, now) {
            Ok(line) => out.push_str(&line),
            Err(line) => {
                failed = true;
                out.push_str(&line);
            }
        }
    }
    Ok(CommandOutcome {
        status: i32::from(failed),
        ..CommandOutcome::ok(out)
    })
}

fn invalid(name: &str, field: &str, ip: Ipv4Addr, why: &str) -> String {
    format!("The Service \"{name}\" is invalid: {field}: Invalid value: []string{{\"{ip}\"}}: {why}\n")
}

fn apply_one(
    cluster: &mut Cluster,
    verb: &str,
    spec: ServiceSpec,
    source: &str,
    namespace: &str,
    now: u64,
) -> Result<String, String> {
    let ns = spec.namespace.clone().unwrap_or_else(|| namespace.to_string());
    let name = spec.name.clone();
    if spec.ports.is_empty() && !matches!(spec.kind, ServiceType::ExternalName(_)) {
        return Err(format!(
            "The Service \"{name}\" is invalid: spec.ports: Required value\n"
        ));
    }
    let note = match spec.kind {
        ServiceType::LoadBalancer => {
            format!("fabsim: LoadBalancer Service {ns}/{name}: no load balancer exists (its ClusterIP and node ports work)\n")
        }
        _ => String::new(),
    };
    if let Some(existing) = cluster.service(&ns, &name).cloned() {
        if verb == "create" {
            return Err(format!(
                "Error from server (AlreadyExists): error when creating \"{source}\": services \"{name}\" already exists\n"
            ));
        }
        if let (Requested::Ip(ip), Some(have)) = (spec.cluster_ip, existing.cluster_ip) {
            if ip != have {
                return Err(invalid(&name, "spec.clusterIPs[0]", ip, "may not change once set"));
            }
        }
        // The apiserver keeps the node ports a port already has when the update does not say.
        let mut ports = spec.ports;
        for (p, old) in ports.iter_mut().zip(&existing.ports) {
            p.node_port = p.node_port.or(old.node_port);
        }
        let ports = node_ports(cluster, &ns, &name, &spec.kind, ports, Some(&existing))?;
        let updated = Service {
            kind: spec.kind,
            ports,
            selector: spec.selector,
            labels: spec.labels,
            annotations: spec.annotations,
            ..existing.clone()
        };
        let verdict = if updated == existing { "unchanged" } else { "configured" };
        if let Some(s) = cluster
            .services
            .iter_mut()
            .find(|s| s.namespace == ns && s.name == name)
        {
            *s = updated;
        }
        return Ok(format!("{note}service/{name} {verdict}\n"));
    }
    let cluster_ip = match (&spec.kind, spec.cluster_ip) {
        (ServiceType::ExternalName(_), _) | (_, Requested::Headless) => None,
        (_, Requested::Ip(ip)) => match cluster.check_cluster_ip(ip) {
            Ok(()) => Some(ip),
            Err(AllocError::NotInRange) => {
                let why = format!(
                    "failed to allocate IP {ip}: provided IP is not in the valid range. The range of valid IPs is {}",
                    cluster.service_range()
                );
                return Err(invalid(&name, "spec.clusterIPs", ip, &why));
            }
            Err(_) => {
                let why = format!("failed to allocate IP {ip}: provided IP is already allocated");
                return Err(invalid(&name, "spec.clusterIPs", ip, &why));
            }
        },
        (_, Requested::Any) => match cluster.next_cluster_ip(&ns, &name) {
            Ok(ip) => Some(ip),
            Err(_) => {
                return Err(format!(
                    "Error from server (InternalError): error when creating \"{source}\": Internal error occurred: \
                     failed to allocate a serviceIP: range is full\n"
                ))
            }
        },
    };
    let ports = node_ports(cluster, &ns, &name, &spec.kind, spec.ports, None)?;
    cluster.services.push(Service {
        namespace: ns,
        name: name.clone(),
        kind: spec.kind,
        cluster_ip,
        ports,
        selector: spec.selector,
        labels: spec.labels,
        annotations: spec.annotations,
        fixed_endpoints: Vec::new(),
        created_ms: now,
    });
    Ok(format!("{note}service/{name} created\n"))
}

/// The node ports of a NodePort or LoadBalancer Service (none for the other types): a
/// requested one checked against the range and the ports other Services hold, the others
/// allocated (`allocNodePorts`). `existing`: the Service being updated, whose ports are its own.
fn node_ports(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    kind: &ServiceType,
    mut ports: Vec<ServicePort>,
    existing: Option<&Service>,
) -> Result<Vec<ServicePort>, String> {
    if !matches!(kind, ServiceType::NodePort | ServiceType::LoadBalancer) {
        ports.iter_mut().for_each(|p| p.node_port = None);
        return Ok(ports);
    }
    let own: Vec<u16> = existing
        .into_iter()
        .flat_map(|s| s.ports.iter().filter_map(|p| p.node_port))
        .collect();
    let mut taken: Vec<u16> = Vec::new();
    for (i, p) in ports.iter_mut().enumerate() {
        let port = match p.node_port {
            Some(n) if own.contains(&n) && !taken.contains(&n) => n,
            Some(n) => match cluster.check_node_port(n) {
                Ok(()) if !taken.contains(&n) => n,
                Err(AllocError::NotInRange) => {
                    return Err(format!(
                        "The Service \"{name}\" is invalid: spec.ports[{i}].nodePort: Invalid value: {n}: provided port is \
                         not in the valid range. The range of valid ports is {}\n",
                        super::services::node_port_range()
                    ))
                }
                _ => {
                    return Err(format!(
                        "The Service \"{name}\" is invalid: spec.ports[{i}].nodePort: Invalid value: {n}: provided port is \
                         already allocated\n"
                    ))
                }
            },
            None => cluster.next_node_port(ns, name, i, &taken).map_err(|_| {
                format!(
                    "The Service \"{name}\" is invalid: spec.ports[{i}].nodePort: Internal error: failed to allocate a \
                     nodePort: range is full\n"
                )
            })?,
        };
        taken.push(port);
        p.node_port = Some(port);
    }
    Ok(ports)
}

/// `kubectl delete -f FILE` of Service manifests.
pub(super) fn delete_specs(
    net: &mut Network,
    specs: &[ServiceSpec],
    namespace: &str,
    now: u64,
) -> Result<CommandOutcome, String> {
    let names: Vec<(String, String)> = specs
        .iter()
        .map(|s| {
            (
                s.namespace.clone().unwrap_or_else(|| namespace.to_string()),
                s.name.clone(),
            )
        })
        .collect();
    delete(net, &names, now)
}

/// `kubectl delete svc|service|services NAME…` (or `service/NAME`).
pub(super) fn delete_named(
    net: &mut Network,
    rest: &[&str],
    namespace: &str,
    now: u64,
) -> Result<CommandOutcome, String> {
    // The namespace flag's value (`-n kube-system`) is not a name.
    let flag_values: Vec<usize> = rest
        .iter()
        .enumerate()
        .filter(|(_, w)| matches!(**w, "-n" | "--namespace"))
        .map(|(i, _)| i + 1)
        .collect();
    let names: Vec<(String, String)> = rest
        .iter()
        .enumerate()
        .filter(|(i, _)| !flag_values.contains(i))
        .map(|(_, w)| w)
        .filter(|w| !w.starts_with('-'))
        .filter(|w| !["svc", "service", "services"].contains(w))
        .map(|w| {
            let name = w.split_once('/').map_or(*w, |(_, n)| n);
            (namespace.to_string(), name.to_string())
        })
        .collect();
    if names.is_empty() {
        return Err("kubectl delete service: give the Services' names".into());
    }
    delete(net, &names, now)
}

fn delete(net: &mut Network, names: &[(String, String)], now: u64) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let (mut out, mut failed) = (String::new(), false);
    for (ns, name) in names {
        let before = cluster.services.len();
        cluster.services.retain(|s| !(&s.namespace == ns && &s.name == name));
        if cluster.services.len() < before {
            out.push_str(&format!("service \"{name}\" deleted\n"));
        } else {
            failed = true;
            out.push_str(&format!(
                "Error from server (NotFound): services \"{name}\" not found\n"
            ));
        }
    }
    // The apiserver recreates `default/kubernetes`, or can now that its address is free.
    cluster.schedule_kubernetes_service(now);
    Ok(CommandOutcome {
        status: i32::from(failed),
        ..CommandOutcome::ok(out)
    })
}

/// `svc`, `service`, `services`, or `service/NAME`.
pub(super) fn is_service_kind(word: &str) -> bool {
    let kind = word.split_once('/').map_or(word, |(k, _)| k);
    ["svc", "service", "services"].contains(&kind)
}
