//! `kubectl get services|endpoints` as kubectl v1.28 prints them (kubernetes
//! `pkg/printers/internalversion/printers.go`: `printService` — CLUSTER-IP the first ClusterIP
//! or `<none>`, EXTERNAL-IP `<none>` for ClusterIP/NodePort, `<pending>` for a LoadBalancer
//! without status, the name for ExternalName, PORT(S) `port/PROTOCOL` joined by commas,
//! SELECTOR with `-o wide`; `printEndpoints` — `formatEndpoints`: ports, then addresses, at
//! most three `ip:port`, then ` + N more...`).

use super::kubectl::human_duration;
use super::tables::tabwriter;
use crate::k8s::{Cluster, Service, ServiceType};

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
            .map(|p| format!("{}/{}", p.port, p.protocol.as_str()))
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
        let addresses = cluster.endpoints(s);
        let all: Vec<String> = s
            .ports
            .iter()
            .flat_map(|p| addresses.iter().map(move |a| format!("{a}:{}", p.target_port)))
            .collect();
        let shown = match all.len() {
            0 => "<none>".to_string(),
            n if n <= 3 => all.join(","),
            n => format!("{} + {} more...", all[..3].join(","), n - 3),
        };
        let mut row = Vec::new();
        if ns.is_none() {
            row.push(s.namespace.clone());
        }
        row.extend([s.name.clone(), shown, human_duration(now.saturating_sub(s.created_ms))]);
        rows.push(row);
    }
    tabwriter(&rows)
}
