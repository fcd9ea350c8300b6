//! `kubectl get services|endpoints` as kubectl v1.28 prints them (kubernetes
//! `pkg/printers/internalversion/printers.go`: `printService` — CLUSTER-IP the first ClusterIP
//! or `<none>`, EXTERNAL-IP `<none>` for ClusterIP/NodePort, `<pending>` for a LoadBalancer
//! without status, the name for ExternalName, PORT(S) `port/PROTOCOL` (`port:nodePort/PROTOCOL`
//! with a node port) joined by commas,
//! SELECTOR with `-o wide`; `printEndpoints` — `formatEndpoints`: ports, then addresses, at
//! most three `ip:port`, then ` + N more...`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::kubectl::human_duration;
use super::tables::{tabwriter, tabwriter_with};
use crate::k8s::{Cluster, Service, ServicePort, ServiceType};

/// The Services in scope, sorted as the API lists them (namespace, name).
fn in_scope<'a>(cluster: &'a Cluster, ns: Option<&str>, only: Option<&str>) -> Vec<&'a Service> {
    let mut list: Vec<&Service> = cluster
        .services
        .iter()
        .filter(|s| ns.is_none_or(|n| n == s.namespace))
        .filter(|s| only.is_none_or(|o| o == s.name))
        .collect();
    list.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    list
}

fn none_found(kind: &str, ns: Option<&str>, only: Option<&str>) -> String {
    match (only, ns) {
        (Some(o), _) => format!("Error from server (NotFound): {kind} \"{o}\" not found\n"),
        (None, Some(n)) => format!("No resources found in {n} namespace.\n"),
        (None, None) => "No resources found\n".into(),
    }
}

pub(crate) fn get_services(cluster: &Cluster, now: u64, ns: Option<&str>, only: Option<&str>, wide: bool) -> String {
    let list = in_scope(cluster, ns, only);
    if list.is_empty() {
        return none_found("services", ns, only);
    }
    let mut header = vec!["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"];
    if ns.is_none() {
        header.insert(0, "NAMESPACE");
    }
    if wide {
        header.push("SELECTOR");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for s in list {
        let cluster_ip = match (&s.kind, s.cluster_ip) {
            (_, Some(ip)) => ip.to_string(),
            (ServiceType::ExternalName(_), None) => "<none>".into(),
            (_, None) => "None".into(),
        };
        let external = match &s.kind {
            ServiceType::ClusterIP | ServiceType::NodePort => "<none>".to_string(),
            ServiceType::LoadBalancer => "<pending>".to_string(),
            ServiceType::ExternalName(name) => name.clone(),
        };
        let ports: Vec<String> = s
            .ports
            .iter()
            .map(|p| match p.node_port {
                Some(n) => format!("{}:{n}/{}", p.port, p.protocol.as_str()),
                None => format!("{}/{}", p.port, p.protocol.as_str()),
            })
            .collect();
        let mut row = Vec::new();
        if ns.is_none() {
            row.push(s.namespace.clone());
        }
        row.extend([
            s.name.clone(),
            s.kind.name().to_string(),
            cluster_ip,
            external,
            if ports.is_empty() {
                "<none>".into()
            } else {
                ports.join(",")
            },
            human_duration(now.saturating_sub(s.created_ms)),
        ]);
        if wide {
            let sel: Vec<String> = s.selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
            row.push(if sel.is_empty() { "<none>".into() } else { sel.join(",") });
        }
        rows.push(row);
    }
    tabwriter(&rows)
}

/// The Endpoints objects: one per Service with a selector (the endpoints controller's) or
/// maintained by the apiserver (`kubernetes`).
pub(crate) fn get_endpoints(cluster: &Cluster, now: u64, ns: Option<&str>, only: Option<&str>) -> String {
    let list: Vec<&Service> = in_scope(cluster, ns, only)
        .into_iter()
        .filter(|s| !matches!(s.kind, ServiceType::ExternalName(_)))
        .filter(|s| !s.selector.is_empty() || !s.fixed_endpoints.is_empty())
        .collect();
    if list.is_empty() {
        return none_found("endpoints", ns, only);
    }
    let mut header = vec!["NAME", "ENDPOINTS", "AGE"];
    if ns.is_none() {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for s in list {
        let shown = format_endpoints(&cluster.endpoints(s), &s.ports);
        let mut row = Vec::new();
        if ns.is_none() {
            row.push(s.namespace.clone());
        }
        row.extend([s.name.clone(), shown, human_duration(now.saturating_sub(s.created_ms))]);
        rows.push(row);
    }
    tabwriter(&rows)
}

/// `formatEndpoints` (describe.go, also `printEndpoints`): for each port, every address as
/// `ip:targetPort`, at most three shown, then ` + N more...`; `<none>` without any.
fn format_endpoints(addresses: &[Ipv4Addr], ports: &[ServicePort]) -> String {
    let all: Vec<String> = ports
        .iter()
        .flat_map(|p| addresses.iter().map(move |a| format!("{a}:{}", p.target_port)))
        .collect();
    match all.len() {
        0 => "<none>".to_string(),
        n if n <= 3 => all.join(","),
        n => format!("{} + {} more...", all[..3].join(","), n - 3),
    }
}

/// `kubectl describe service NAME` (kubectl v1.28 `describe.go` `describeService`, through
/// `tabbedString`: tabwriter minwidth 0, padding 2). The apiserver's defaults fabsim does not
/// store are filled as it fills them for an IPv4 single-stack cluster: `SingleStack`/`IPv4`
/// (a headless Service without selector `RequireDualStack`, none for ExternalName), session
/// affinity `None`, external traffic policy `Cluster` for NodePort and LoadBalancer. A port
/// with a node port has its `NodePort:` line; Services have no events in fabsim.
pub(crate) fn describe_service(cluster: &Cluster, ns: &str, name: &str) -> String {
    let Some(s) = cluster.service(ns, name) else {
        return format!("Error from server (NotFound): services \"{name}\" not found\n");
    };
    let cell = |a: &str, b: String| vec![a.to_string(), b];
    let mut rows = vec![cell("Name:", s.name.clone()), cell("Namespace:", s.namespace.clone())];
    multiline(&mut rows, "Labels:", &s.labels, false);
    multiline(&mut rows, "Annotations:", &s.annotations, true);
    let selector: Vec<String> = s.selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    rows.push(cell(
        "Selector:",
        if selector.is_empty() {
            "<none>".into()
        } else {
            selector.join(",")
        },
    ));
    rows.push(cell("Type:", s.kind.name().into()));
    let external_name = match &s.kind {
        ServiceType::ExternalName(n) => Some(n),
        _ => None,
    };
    let policy = match (external_name, s.cluster_ip) {
        (Some(_), _) => None,
        (None, None) if s.selector.is_empty() => Some("RequireDualStack"),
        (None, _) => Some("SingleStack"),
    };
    if let Some(p) = policy {
        rows.push(cell("IP Family Policy:", p.into()));
    }
    rows.push(cell(
        "IP Families:",
        if policy.is_some() { "IPv4" } else { "<none>" }.into(),
    ));
    let ip = match (external_name, s.cluster_ip) {
        (Some(_), _) => String::new(),
        (None, Some(ip)) => ip.to_string(),
        (None, None) => "None".into(),
    };
    rows.push(cell("IPs:", if ip.is_empty() { "<none>".into() } else { ip.clone() }));
    rows.insert(rows.len() - 1, cell("IP:", ip));
    if let Some(n) = external_name {
        rows.push(cell("External Name:", n.clone()));
    }
    let addresses = cluster.endpoints(s);
    for p in &s.ports {
        let protocol = p.protocol.as_str();
        let name = p.name.clone().unwrap_or_else(|| "<unset>".into());
        rows.push(vec!["Port:".into(), name.clone(), format!("{}/{protocol}", p.port)]);
        rows.push(cell("TargetPort:", format!("{}/{protocol}", p.target_port)));
        if let Some(n) = p.node_port {
            rows.push(vec!["NodePort:".into(), name, format!("{n}/{protocol}")]);
        }
        rows.push(cell(
            "Endpoints:",
            format_endpoints(&addresses, std::slice::from_ref(p)),
        ));
    }
    rows.push(cell("Session Affinity:", "None".into()));
    if matches!(s.kind, ServiceType::NodePort | ServiceType::LoadBalancer) {
        rows.push(cell("External Traffic Policy:", "Cluster".into()));
    }
    rows.push(cell("Events:", "<none>".into()));
    tabwriter_with(&rows, 0, 2)
}

/// `printLabelsMultiline` / `printAnnotationsMultiline`: sorted keys, the first on the title's
/// line and the rest under it, `<none>` when empty. An annotation whose `key: value` would
/// pass 140 characters, or that has several lines, goes under its key, each line indented by
/// two and cut at 138 characters with `...` (`maxAnnotationLen`, `shorten`).
fn multiline(rows: &mut Vec<Vec<String>>, title: &str, map: &BTreeMap<String, String>, annotations: bool) {
    const MAX_ANNOTATION_LEN: usize = 140;
    if map.is_empty() {
        rows.push(vec![title.into(), "<none>".into()]);
    }
    for (i, (k, v)) in map.iter().enumerate() {
        let lead = if i == 0 { title.to_string() } else { String::new() };
        let v = v.strip_suffix('\n').unwrap_or(v);
        if !annotations {
            rows.push(vec![lead, format!("{k}={v}")]);
        } else if v.len() + k.len() + 2 > MAX_ANNOTATION_LEN || v.contains('\n') {
            rows.push(vec![lead, format!("{k}:")]);
            for line in v.split('\n') {
                let cut = MAX_ANNOTATION_LEN - 2;
                let shown = match line.get(..cut) {
                    Some(head) if line.len() > cut => format!("{head}..."),
                    _ => line.to_string(),
                };
                rows.push(vec![String::new(), format!("  {shown}")]);
            }
        } else {
            rows.push(vec![lead, format!("{k}: {v}")]);
        }
    }
}
