//! `kubectl` read commands (kubectl v1.28): `get nodes|pods|events|pdb|ippools|blockaffinities`,
//! `describe node|pod`, `logs [-p]` (a pod being deleted shows `Terminating`); what they say about containers beyond fabsim's model
//! (readiness, restarts, logs, events) comes from the scenario's `inject: pods:` facts. Tables are text/tabwriter; `-o yaml|json` print the fields fabsim models
//! in the API's key order (alphabetical within an object, as the API server serialises them).

use std::fmt::Write as _;

use super::api_doc::{ApiDoc, Fields};
use super::calicoctl_get::{created_ms, ippool_spec};
use super::clock::wall_clock;
use super::tables::{tabwriter, tabwriter_with};
use super::tcpdump::Sent;
use super::CommandError;
use crate::engine::State;
use crate::k8s::{Cluster, KNode, Owner, Pod, PodPhase};
use crate::model::Network;

/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration`, the AGE column.
pub(crate) fn human_duration(ms: u64) -> String {
    let secs = ms / 1000;
    let (mins, hours) = (secs / 60, secs / 3600);
    if secs < 120 {
        format!("{secs}s")
    } else if mins < 10 {
        match secs % 60 {
            0 => format!("{mins}m"),
            s => format!("{mins}m{s}s"),
        }
    } else if mins < 180 {
        format!("{mins}m")
    } else if hours < 8 {
        match mins % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        }
    } else {
        format!("{}d", hours / 24)
    }
}

/// kubectl's time format in `describe` (`Mon, 02 Jan 2006 15:04:05 -0700`).
fn describe_time(ms: u64) -> String {
    wall_clock(ms).format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// RFC 3339 seconds, as object timestamps print.
pub(super) fn rfc3339(ms: u64) -> String {
    wall_clock(ms).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub(crate) fn kubectl(
    net: &Network,
    st: &State,
    args: &[String],
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let Some(cluster) = net.cluster.as_deref() else {
        return Ok(
            "The connection to the server localhost:8080 was refused - did you specify the right host or port?\n"
                .into(),
        );
    };
    if let Some(refused) = cluster.apiserver_refused(st.time_ms) {
        return Ok(refused);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // kubectl's own flags end at `--` (what follows is `kubectl exec`'s command).
    let own = &args[..args.iter().position(|a| *a == "--").unwrap_or(args.len())];
    let opt = |names: &[&str]| {
        own.iter().enumerate().find_map(|(i, a)| {
            names.iter().find_map(|n| {
                a.strip_prefix(n).and_then(|r| match r.strip_prefix('=') {
                    Some(v) => Some(v),
                    None if r.is_empty() => own.get(i + 1).copied(),
                    None => None,
                })
            })
        })
    };
    let output = opt(&["-o", "--output"]).unwrap_or("");
    let all_ns = own.iter().any(|a| *a == "-A" || *a == "--all-namespaces");
    let ns = opt(&["-n", "--namespace"]).unwrap_or("default");
    let selector = opt(&["-l", "--selector"]);
    if let (Some(&"get"), Some(path)) = (args.first(), opt(&["--raw"])) {
        return raw(path);
    }
    if args.first() == Some(&"exec") {
        return exec(net, st, cluster, &args[1..], ns, sent);
    }
    let positional: Vec<&str> = positional(&args);
    let now = st.time_ms;
    match positional.as_slice() {
        // The views below show one named object or all of them: a second name is refused,
        // not dropped.
        ["get", kind, _, extra, ..] => Err(CommandError::new(format!(
            "kubectl get {kind}: fabsim shows one named object (or all) per command; run it again for {extra}"
        ))),
        ["get", "nodes" | "node" | "no", rest @ ..] => match output.strip_prefix("jsonpath=") {
            Some(template) => node_jsonpath(cluster, rest.first().copied(), template),
            None => Ok(get_nodes(cluster, now, rest.first().copied(), output == "wide")),
        },
        ["get", "pods" | "pod" | "po", rest @ ..] => {
            let scope = if all_ns { None } else { Some(ns) };
            Ok(get_pods(
                cluster,
                now,
                scope,
                rest.first().copied(),
                selector,
                output == "wide",
            ))
        }
        ["describe", "node" | "nodes" | "no", name] => describe_node(cluster, now, name),
        ["describe", "pod" | "pods" | "po", rest @ ..] => Ok(describe_pods(cluster, now, ns, rest, selector)),
        ["logs", pod] => logs(cluster, ns, pod, args.iter().any(|a| *a == "-p" || *a == "--previous")),
        ["get", "services" | "service" | "svc", rest @ ..] => Ok(super::kubectl_services::get_services(
            cluster,
            now,
            (!all_ns).then_some(ns),
            rest.first().copied(),
            output == "wide",
        )),
        ["describe", "services" | "service" | "svc", name] => {
            Ok(super::kubectl_services::describe_service(cluster, ns, name))
        }
        ["get", "endpoints" | "endpoint" | "ep", rest @ ..] => Ok(super::kubectl_services::get_endpoints(
            cluster,
            now,
            (!all_ns).then_some(ns),
            rest.first().copied(),
        )),
        ["get", "configmaps" | "configmap" | "cm", rest @ ..] => {
            config_maps(cluster, now, (!all_ns).then_some(ns), rest.first().copied(), output)
        }
        ["get", "events" | "event" | "ev"] => Ok(get_events(cluster, now, (!all_ns).then_some(ns))),
        ["get", "poddisruptionbudgets" | "poddisruptionbudget" | "pdb", rest @ ..] => Ok(get_pdbs(
            cluster,
            now,
            (!all_ns).then_some(ns),
            rest.first().copied(),
        )),
        ["get", kind, ..] if is_calico_kind(kind, "ippools") => calico_list(cluster, now, "ippools", output),
        ["get", kind, ..] if is_calico_kind(kind, "blockaffinities") => {
            calico_list(cluster, now, "blockaffinities", output)
        }
        _ => Err(CommandError::new(
            "fabsim's kubectl reads get nodes|pods|services|endpoints|configmaps|events|pdb|ippools|blockaffinities, describe node|pod|service, logs [-p] and exec, \
             and changes the cluster with apply|create|run|patch|delete, rollout restart|status and set env",
        )),
    }
}

/// `kubectl get configmaps [NAME]`: the ConfigMaps fabsim models in kube-system —
/// `kubeadm-config` (`k8s::kubeadm_config`, created at `kubeadm init`) and, on a Cilium cluster,
/// `cilium-config` (`Cilium::config_map`, created with its manifest) — sorted by name as the
/// apiserver lists them; another name is the API server's NotFound, another namespace has none.
fn config_maps(
    cluster: &Cluster,
    now: u64,
    ns: Option<&str>,
    name: Option<&str>,
    output: &str,
) -> Result<String, CommandError> {
    let here = ns.is_none_or(|n| n == "kube-system");
    let mut kubeadm = crate::k8s::kubeadm_config(cluster);
    kubeadm["metadata"]["creationTimestamp"] = rfc3339(cluster.created_ms).into();
    let mut maps = vec![("kubeadm-config", kubeadm, cluster.created_ms)];
    if let Some(c) = cluster.cilium.as_ref() {
        let mut doc = c.config_map();
        doc["metadata"]["creationTimestamp"] = rfc3339(c.created_ms).into();
        maps.push((crate::k8s::CILIUM_CONFIGMAP, doc, c.created_ms));
    }
    maps.sort_by(|a, b| a.0.cmp(b.0));
    maps.retain(|m| name.is_none_or(|n| n == m.0));
    match name {
        Some(n) if !here || maps.is_empty() => {
            return Err(CommandError::new(format!(
                "Error from server (NotFound): configmaps \"{n}\" not found"
            )))
        }
        None if !here => return Ok(format!("No resources found in {} namespace.\n", ns.unwrap_or_default())),
        _ => {}
    }
    let objects: Vec<ApiDoc> = maps.iter().map(|(_, doc, _)| ApiDoc::from(doc)).collect();
    let printed = match (name, objects.first()) {
        (Some(_), Some(object)) => object.clone(),
        _ => Fields::new()
            .put("apiVersion", ApiDoc::str("v1"))
            .put("items", ApiDoc::Seq(objects))
            .put("kind", ApiDoc::str("List"))
            .put("metadata", Fields::new().put("resourceVersion", ApiDoc::str("")).done())
            .done(),
    };
    match output {
        "yaml" => Ok(printed.yaml()),
        "json" => Ok(printed.sorted().json("    ")),
        "" | "wide" => {
            let mut header = vec!["NAME", "DATA", "AGE"];
            if ns.is_none() {
                header.insert(0, "NAMESPACE");
            }
            let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
            for (map_name, doc, created) in &maps {
                let data = doc.get("data").and_then(|d| d.as_object()).map_or(0, |d| d.len());
                let mut row = vec![map_name.to_string(), data.to_string(), human_duration(now.saturating_sub(*created))];
                if ns.is_none() {
                    row.insert(0, "kube-system".into());
                }
                rows.push(row);
            }
            Ok(tabwriter(&rows))
        }
        other => Err(CommandError::new(format!(
            "error: unable to match a printer suitable for the output format \"{other}\", allowed formats are: json,wide,yaml"
        ))),
    }
}

/// `kubectl get --raw PATH`: the apiserver's health endpoints answer `ok` while it runs
/// (k8s-cidr-migrations.md §2.4's check after the restart). kubectl prints the body as it
/// comes, without a newline; fabsim ends the line, as every view does.
fn raw(path: &str) -> Result<String, CommandError> {
    match path.split('?').next().unwrap_or(path) {
        "/healthz" | "/livez" | "/readyz" => Ok("ok\n".into()),
        _ => Err(CommandError::new(format!(
            "kubectl get --raw {path}: fabsim answers /healthz, /livez and /readyz"
        ))),
    }
}

/// `kubectl exec [-it] POD [-n NS] [-c CONTAINER] -- COMMAND…`: the command runs in the pod —
/// in its network namespace, or for a host-network pod (calico-node) on its node. What it
/// sends (a busybox ping from the pod) goes to `sent`.
fn exec(
    net: &Network,
    st: &State,
    cluster: &Cluster,
    args: &[&str],
    ns: &str,
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let split = args.iter().position(|a| *a == "--");
    let (opts, command) = match split {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => return Err(CommandError::new("kubectl exec: give the command after `--`")),
    };
    let Some(pod_name) = positional(opts).into_iter().next() else {
        return Err(CommandError::new(
            "error: expected 'exec POD_NAME COMMAND [ARG1] [ARG2] ... [ARGN]'.",
        ));
    };
    let Some(pod) = cluster.pod(ns, pod_name) else {
        return Ok(format!("Error from server (NotFound): pods \"{pod_name}\" not found\n"));
    };
    let target = if pod.host_network {
        pod.node.as_deref().and_then(|n| cluster.node(n)).map(|n| n.device)
    } else {
        cluster
            .netns
            .get(&(pod.namespace.clone(), pod.name.clone()))
            .map(|n| n.device)
    };
    let Some(target) = target.filter(|_| pod.phase == PodPhase::Running) else {
        return Ok(format!(
            "error: unable to upgrade connection: container not found (\"{pod_name}\")\n"
        ));
    };
    let line = command.join(" ");
    super::linux::run(net, st, target, &line, sent)
}

/// kubectl's STATUS without injected facts (`printPod`: the phase, unless a container is
/// waiting with a reason): a pod bound to a node whose kubelet runs but that is not running
/// yet has its containers waiting as `ContainerCreating` (the kubelet's default waiting reason
/// while the sandbox is not up, e.g. when the CNI ADD fails); unbound, or on a node whose
/// kubelet is stopped, it is `Pending`.
fn pod_status<'a>(cluster: &Cluster, p: &'a Pod) -> &'a str {
    match (p.phase, p.node.as_deref()) {
        (PodPhase::Running, _) => "Running",
        (PodPhase::Failed, _) => p.rejected.as_ref().map_or("Failed", |r| r.reason.as_str()),
        (PodPhase::Pending, Some(node)) if cluster.kubelet_running(node) && cluster.node(node).is_some() => {
            "ContainerCreating"
        }
        (PodPhase::Pending, _) => "Pending",
    }
}

fn is_calico_kind(word: &str, plural: &str) -> bool {
    let singular = plural.trim_end_matches('s').trim_end_matches("ie").to_string();
    let full = format!("{plural}.crd.projectcalico.org");
    [plural, singular.as_str(), full.as_str()].contains(&word)
        || (plural == "blockaffinities" && word == "blockaffinity")
}

/// The words that are not flags or flag values.
fn positional<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let with_value = [
        "-o",
        "--output",
        "-n",
        "--namespace",
        "-l",
        "--selector",
        "-c",
        "--container",
    ];
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        if with_value.contains(a) {
            skip = true;
        } else if !a.starts_with('-') {
            out.push(*a);
        }
    }
    out
}

fn role(node: &KNode) -> &'static str {
    if node.control_plane {
        "control-plane"
    } else {
        "<none>"
    }
}

/// `kubectl get node NAME -o jsonpath=TEMPLATE` for the fields a pod CIDR runbook reads
/// (`{.metadata.name}`, `{.spec.podCIDR}`, `{.spec.podCIDRs}`): kubectl prints the value
/// with no newline after it; an unset podCIDR prints nothing.
fn node_jsonpath(cluster: &Cluster, name: Option<&str>, template: &str) -> Result<String, CommandError> {
    let Some(name) = name else {
        return Err(CommandError::new(
            "fabsim's kubectl -o jsonpath reads one node: kubectl get node NAME -o jsonpath='{.spec.podCIDR}'",
        ));
    };
    let Some(node) = cluster.node(name) else {
        return Ok(format!("Error from server (NotFound): nodes \"{name}\" not found\n"));
    };
    let cidr = node.pod_cidr.map(|c| c.to_string());
    match template {
        "{.metadata.name}" => Ok(node.name.clone()),
        "{.spec.podCIDR}" => Ok(cidr.unwrap_or_default()),
        "{.spec.podCIDRs}" => Ok(cidr.map(|c| format!("[\"{c}\"]")).unwrap_or_default()),
        other => Err(CommandError::new(format!(
            "kubectl -o jsonpath={other}: fabsim prints {{.metadata.name}}, {{.spec.podCIDR}} and {{.spec.podCIDRs}}"
        ))),
    }
}

fn get_nodes(cluster: &Cluster, now: u64, only: Option<&str>, wide: bool) -> String {
    let mut rows = vec![["NAME", "STATUS", "ROLES", "AGE", "VERSION"].map(String::from).to_vec()];
    if wide {
        rows[0].extend(["INTERNAL-IP", "EXTERNAL-IP"].map(String::from));
    }
    let mut nodes: Vec<&KNode> = cluster
        .nodes
        .iter()
        .filter(|n| only.is_none_or(|o| o == n.name))
        .collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    if nodes.is_empty() {
        return match only {
            Some(o) => format!("Error from server (NotFound): nodes \"{o}\" not found\n"),
            None => "No resources found\n".into(),
        };
    }
    for n in nodes {
        // printNode: the Ready condition, then `SchedulingDisabled` for a cordoned node.
        let mut status = if cluster.ready(&n.name, now) {
            "Ready"
        } else {
            "NotReady"
        }
        .to_string();
        if n.unschedulable {
            status += ",SchedulingDisabled";
        }
        let mut row = vec![
            n.name.clone(),
            status,
            role(n).into(),
            human_duration(now.saturating_sub(n.joined_ms)),
            n.kubelet.clone(),
        ];
        if wide {
            row.extend([n.internal_ip.to_string(), "<none>".into()]);
        }
        rows.push(row);
    }
    tabwriter(&rows)
}

fn selected(pod: &Pod, selector: Option<&str>) -> bool {
    selector.is_none_or(|sel| pod.matches(sel))
}

fn get_pods(
    cluster: &Cluster,
    now: u64,
    ns: Option<&str>,
    only: Option<&str>,
    selector: Option<&str>,
    wide: bool,
) -> String {
    let mut header = vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"];
    if ns.is_none() {
        header.insert(0, "NAMESPACE");
    }
    if wide {
        header.extend(["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]);
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    let mut pods: Vec<&Pod> = cluster
        .pods
        .iter()
        .filter(|p| ns.is_none_or(|n| n == p.namespace))
        .filter(|p| only.is_none_or(|o| o == p.name))
        .filter(|p| selected(p, selector))
        .collect();
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    if pods.is_empty() {
        return match (only, ns) {
            (Some(o), _) => format!("Error from server (NotFound): pods \"{o}\" not found\n"),
            (None, Some(n)) => format!("No resources found in {n} namespace.\n"),
            (None, None) => "No resources found\n".into(),
        };
    }
    for p in pods {
        let running = p.phase == PodPhase::Running;
        let ip = if p.host_network {
            p.node
                .as_deref()
                .and_then(|n| cluster.node(n))
                .filter(|_| running)
                .map(|n| n.internal_ip.to_string())
        } else {
            p.ip.map(|i| i.to_string())
        };
        let mut row = Vec::new();
        if ns.is_none() {
            row.push(p.namespace.clone());
        }
        // Injected facts (`inject: pods:`) say what fabsim cannot derive about the containers.
        let facts = p.facts.as_ref();
        let ready = facts.and_then(|f| f.ready.clone());
        // printPod: a pod with a deletionTimestamp is `Terminating`, whatever its containers say.
        let status = match p.deleted_ms {
            Some(_) => Some("Terminating".to_string()),
            None => facts.and_then(|f| f.status.clone()),
        };
        row.extend([
            p.name.clone(),
            ready.unwrap_or_else(|| if running { "1/1" } else { "0/1" }.into()),
            status.unwrap_or_else(|| pod_status(cluster, p).into()),
            restarts(p, now),
            human_duration(now.saturating_sub(p.created_ms)),
        ]);
        if wide {
            row.extend([
                ip.unwrap_or_else(|| "<none>".into()),
                p.node.clone().unwrap_or_else(|| "<none>".into()),
                "<none>".into(),
                "<none>".into(),
            ]);
        }
        rows.push(row);
    }
    tabwriter(&rows)
}

/// `kubectl get pdb [NAME]` as kubectl v1.28 prints it (`printPodDisruptionBudget` in
/// kubernetes `pkg/printers/internalversion/printers.go`: MIN AVAILABLE and MAX UNAVAILABLE
/// as set or `N/A`, the status's disruptionsAllowed), sorted as the API lists them.
fn get_pdbs(cluster: &Cluster, now: u64, ns: Option<&str>, only: Option<&str>) -> String {
    let mut list: Vec<&crate::k8s::Pdb> = cluster
        .pdbs
        .iter()
        .filter(|b| ns.is_none_or(|n| n == b.namespace))
        .filter(|b| only.is_none_or(|o| o == b.name))
        .collect();
    list.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    if list.is_empty() {
        return match (only, ns) {
            (Some(o), _) => format!("Error from server (NotFound): poddisruptionbudgets.policy \"{o}\" not found\n"),
            (None, Some(n)) => format!("No resources found in {n} namespace.\n"),
            (None, None) => "No resources found\n".into(),
        };
    }
    let mut header = vec!["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"];
    if ns.is_none() {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    let shown = |v: &Option<crate::k8s::IntOrPercent>| v.as_ref().map_or("N/A".to_string(), |v| v.shown());
    for b in list {
        let mut row = Vec::new();
        if ns.is_none() {
            row.push(b.namespace.clone());
        }
        row.extend([
            b.name.clone(),
            shown(&b.min_available),
            shown(&b.max_unavailable),
            cluster.pdb_status(b).disruptions_allowed.to_string(),
            human_duration(now.saturating_sub(b.created_ms)),
        ]);
        rows.push(row);
    }
    tabwriter(&rows)
}

/// The RESTARTS column: the restart count, with the last restart's age when kubectl knows it
/// (`325 (53s ago)`, kubectl ≥ 1.22).
fn restarts(pod: &Pod, now: u64) -> String {
    let Some(f) = &pod.facts else { return "0".into() };
    if let Some((n, last)) = f
        .crash_loop_since_ms
        .and_then(|t| crate::k8s::crash_loop_restarts(t, now))
    {
        return format!("{n} ({} ago)", human_duration(now - last));
    }
    let n = f.restarts.unwrap_or(0);
    match f.last_restart_ago_ms {
        Some(ago) => format!("{n} ({} ago)", human_duration(f.since(ago, now))),
        None => n.to_string(),
    }
}

/// `kubectl logs [-p] POD [-n NS]`: the container's log as the scenario injected it. A pod
/// whose container never restarted has no previous log (kubelet's BadRequest).
fn logs(cluster: &Cluster, ns: &str, name: &str, previous: bool) -> Result<String, CommandError> {
    let Some(pod) = cluster.pod(ns, name) else {
        return Ok(format!("Error from server (NotFound): pods \"{name}\" not found\n"));
    };
    let facts = pod.facts.as_ref();
    let restarted = facts.and_then(|f| f.restarts).is_some_and(|n| n > 0);
    let text = if previous {
        // A derived crash loop's containers all exit the same way: the previous one's log is
        // the last one's.
        facts.and_then(|f| f.previous_log.as_ref().or(f.crash_loop_since_ms.and(f.log.as_ref())))
    } else {
        facts.and_then(|f| f.log.as_ref())
    };
    match text {
        Some(t) => Ok(t.clone()),
        None if previous && !restarted => Ok(format!(
            "Error from server (BadRequest): previous terminated container \"{}\" in pod \"{name}\" not found\n",
            pod.container()
        )),
        None => Err(CommandError::new(format!(
            "fabsim does not model what {}'s container logs; a scenario can inject it (`inject: pods:` with `{}:`)",
            name,
            if previous { "previous_log" } else { "log" }
        ))),
    }
}

/// The Age column of an event (`describe.go DescribeEvents`, `get events`' LAST SEEN):
/// `4m6s (x18714 over 46h)` for a repeated event, else the time since it was first seen.
fn event_age(f: &crate::k8s::PodFacts, e: &crate::k8s::PodEvent, now: u64) -> String {
    let first = human_duration(f.since(e.first_seen_ago_ms, now));
    if e.count > 1 {
        format!(
            "{} (x{} over {first})",
            human_duration(f.since(e.last_seen_ago_ms, now)),
            e.count
        )
    } else {
        first
    }
}

/// `kubectl describe pod NAME` or `kubectl describe pods -l SELECTOR` in a namespace: the
/// fields fabsim models, in kubectl's order, then the Events table. Several pods are separated
/// by a blank line, as kubectl separates them.
fn describe_pods(cluster: &Cluster, now: u64, ns: &str, names: &[&str], selector: Option<&str>) -> String {
    let mut pods: Vec<&Pod> = cluster
        .pods
        .iter()
        .filter(|p| p.namespace == ns && (names.is_empty() || names.contains(&p.name.as_str())))
        .filter(|p| selected(p, selector))
        .collect();
    pods.sort_by(|a, b| a.name.cmp(&b.name));
    if pods.is_empty() {
        return match names.first() {
            Some(n) => format!("Error from server (NotFound): pods \"{n}\" not found\n"),
            None => format!("No resources found in {ns} namespace.\n"),
        };
    }
    let texts: Vec<String> = pods.iter().map(|p| describe_pod(cluster, now, p)).collect();
    texts.join("\n\n")
}

fn describe_pod(cluster: &Cluster, now: u64, p: &Pod) -> String {
    let node = p.node.as_deref().and_then(|n| cluster.node(n));
    let ip = if p.host_network {
        node.map(|n| n.internal_ip.to_string())
    } else {
        p.ip.map(|i| i.to_string())
    };
    let labels: Vec<String> = p.labels().iter().map(|(k, v)| format!("{k}={v}")).collect();
    let phase = match p.phase {
        PodPhase::Running => "Running",
        PodPhase::Pending => "Pending",
        PodPhase::Failed => "Failed",
    };
    let mut fields = vec![
        ("Name:", p.name.clone()),
        ("Namespace:", p.namespace.clone()),
        (
            "Node:",
            node.map_or("<none>".into(), |n| format!("{}/{}", n.name, n.internal_ip)),
        ),
    ];
    if let Some(t) = p.started_ms {
        fields.push(("Start Time:", describe_time(t)));
    }
    fields.push(("Labels:", labels.join("\n")));
    fields.push(("Status:", phase.into()));
    if let Some(r) = &p.rejected {
        fields.push(("Reason:", r.reason.clone()));
        fields.push(("Message:", format!("Pod was rejected: {}", r.message)));
    }
    fields.push(("IP:", ip.unwrap_or_default()));
    match &p.owner {
        Owner::Deployment(_) => fields.push(("Controlled By:", "ReplicaSet/".to_string() + replica_set(&p.name))),
        Owner::DaemonSet(d) => fields.push(("Controlled By:", format!("DaemonSet/{d}"))),
        Owner::Static => fields.push(("Controlled By:", format!("Node/{}", p.node.as_deref().unwrap_or("")))),
        Owner::Bare => {}
    }
    // describe's tabwriter: minwidth 0, padding 2; a multi-line value continues under its column.
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (k, v) in &fields {
        let mut lines = v.lines();
        let _ = writeln!(out, "{k:<width$}{}", lines.next().unwrap_or(""));
        for more in lines {
            let _ = writeln!(out, "{:width$}{more}", "");
        }
    }
    let events = pod_events(p, now);
    if events.is_empty() {
        out.push_str("Events:                      <none>\n");
        return out;
    }
    out.push_str("Events:\n");
    let mut rows = vec![
        ["  Type", "Reason", "Age", "From", "Message"]
            .map(String::from)
            .to_vec(),
        ["  ----", "------", "----", "----", "-------"]
            .map(String::from)
            .to_vec(),
    ];
    for e in events {
        rows.push(vec![format!("  {}", e.kind), e.reason, e.age, e.from, e.message]);
    }
    out.push_str(&tabwriter_with(&rows, 0, 2));
    out
}

/// One event about a pod as kubectl prints it.
struct EventRow {
    /// When it was last seen (virtual time), the order `describe` sorts by.
    last_ms: u64,
    kind: String,
    reason: String,
    age: String,
    from: String,
    message: String,
}

/// A pod's events: default-scheduler's FailedScheduling ones (each seen once) and the ones the
/// scenario injected, oldest last-seen first (`describe.go` sorts `SortableEvents` by
/// lastTimestamp).
fn pod_events(p: &Pod, now: u64) -> Vec<EventRow> {
    let mut rows: Vec<EventRow> = p
        .failed_scheduling
        .iter()
        .map(|e| EventRow {
            last_ms: e.at_ms,
            kind: "Warning".into(),
            reason: "FailedScheduling".into(),
            age: human_duration(now.saturating_sub(e.at_ms)),
            from: "default-scheduler".into(),
            message: e.message.clone(),
        })
        .collect();
    if let Some(r) = &p.rejected {
        rows.push(EventRow {
            last_ms: r.at_ms,
            kind: "Warning".into(),
            reason: r.reason.clone(),
            age: human_duration(now.saturating_sub(r.at_ms)),
            from: "kubelet".into(),
            message: r.message.clone(),
        });
    }
    if let Some(f) = &p.facts {
        rows.extend(f.events.iter().map(|e| EventRow {
            last_ms: f.injected_ms.saturating_sub(e.last_seen_ago_ms),
            kind: e.kind.clone(),
            reason: e.reason.clone(),
            age: event_age(f, e, now),
            from: e.from.clone(),
            message: e.message.trim().to_string(),
        }));
    }
    rows.sort_by_key(|e| e.last_ms);
    rows
}

/// A Deployment pod's ReplicaSet: its name without the pod's random suffix.
fn replica_set(pod: &str) -> &str {
    pod.rsplit_once('-').map_or(pod, |(rs, _)| rs)
}

/// `kubectl get events [-n NS | -A]`: the pods' events (`pod_events`), per pod in name order.
fn get_events(cluster: &Cluster, now: u64, ns: Option<&str>) -> String {
    let mut header = vec!["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"];
    if ns.is_none() {
        header.insert(0, "NAMESPACE");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    let mut pods: Vec<&Pod> = cluster
        .pods
        .iter()
        .filter(|p| ns.is_none_or(|n| n == p.namespace))
        .collect();
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    for p in pods {
        for e in pod_events(p, now) {
            let mut row = Vec::new();
            if ns.is_none() {
                row.push(p.namespace.clone());
            }
            row.extend([e.age, e.kind, e.reason, format!("pod/{}", p.name), e.message]);
            rows.push(row);
        }
    }
    if rows.len() == 1 {
        return match ns {
            Some(n) => format!("No resources found in {n} namespace.\n"),
            None => "No resources found\n".into(),
        };
    }
    tabwriter(&rows)
}

fn describe_node(cluster: &Cluster, now: u64, name: &str) -> Result<String, CommandError> {
    let Some(n) = cluster.node(name) else {
        return Ok(format!("Error from server (NotFound): nodes \"{name}\" not found\n"));
    };
    let ready = cluster.ready(name, now);
    let ready_since = cluster
        .calico
        .as_ref()
        .and_then(|c| c.started_at(name))
        .unwrap_or(n.joined_ms);
    let mut out = String::new();
    let _ = writeln!(out, "Name:               {name}");
    let _ = writeln!(out, "Roles:              {}", role(n));
    let _ = writeln!(out, "CreationTimestamp:  {}", describe_time(n.joined_ms));
    let taints = cluster.taints(n, now);
    match taints.split_first() {
        None => out.push_str("Taints:             <none>\n"),
        Some((first, rest)) => {
            let _ = writeln!(out, "Taints:             {first}");
            for t in rest {
                let _ = writeln!(out, "                    {t}");
            }
        }
    }
    let _ = writeln!(out, "Unschedulable:      {}", n.unschedulable);
    out.push_str("Conditions:\n");
    let hb = describe_time(now);
    let since = describe_time(n.joined_ms);
    let mut rows = vec![
        [
            "Type",
            "Status",
            "LastHeartbeatTime",
            "LastTransitionTime",
            "Reason",
            "Message",
        ]
        .map(String::from)
        .to_vec(),
        [
            "----",
            "------",
            "-----------------",
            "------------------",
            "------",
            "-------",
        ]
        .map(String::from)
        .to_vec(),
    ];
    // A stopped kubelet's Node, past the grace period: every condition Unknown.
    if let Some(stale) = cluster.status_unknown_since(name, now) {
        let last = cluster.kubelets_down.get(name).map_or(stale, |d| d.since_ms);
        for t in ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"] {
            rows.push(
                [
                    t,
                    "Unknown",
                    &describe_time(last),
                    &describe_time(stale),
                    "NodeStatusUnknown",
                    "Kubelet stopped posting node status.",
                ]
                .map(String::from)
                .to_vec(),
            );
        }
    } else {
        condition_rows(&mut rows, ready, hb, since, describe_time(ready_since));
    }
    for line in tabwriter(&rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
    out.push_str("Addresses:\n");
    let _ = writeln!(out, "  InternalIP:  {}", n.internal_ip);
    let _ = writeln!(out, "  Hostname:    {name}");
    if let Some(c) = n.pod_cidr {
        let _ = writeln!(out, "PodCIDR:                      {c}");
        let _ = writeln!(out, "PodCIDRs:                     {c}");
    }
    Ok(out)
}

/// A posting kubelet's conditions: no pressure, and Ready or the CNI's NotReady.
fn condition_rows(rows: &mut Vec<Vec<String>>, ready: bool, hb: String, since: String, ready_since: String) {
    for (t, reason, msg) in [
        (
            "MemoryPressure",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        (
            "DiskPressure",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        (
            "PIDPressure",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
    ] {
        rows.push(vec![
            t.into(),
            "False".into(),
            hb.clone(),
            since.clone(),
            reason.into(),
            msg.into(),
        ]);
    }
    if ready {
        rows.push(vec![
            "Ready".into(),
            "True".into(),
            hb.clone(),
            ready_since,
            "KubeletReady".into(),
            "kubelet is posting ready status".into(),
        ]);
    } else {
        rows.push(vec![
            "Ready".into(),
            "False".into(),
            hb,
            since,
            "KubeletNotReady".into(),
            "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized".into(),
        ]);
    }
}

/// `kubectl get ippools|blockaffinities` of the crd.projectcalico.org/v1 objects: the CRD's
/// spec is the v3 spec as Calico stored it (BlockAffinity's `deleted` a string in v1).
fn calico_list(cluster: &Cluster, now: u64, kind: &str, output: &str) -> Result<String, CommandError> {
    let Some(calico) = &cluster.calico else {
        return Ok(format!("error: the server doesn't have a resource type \"{kind}\"\n"));
    };
    let ds = &calico.datastore;
    let items: Vec<(&str, &str, ApiDoc)> = match kind {
        "ippools" => ds
            .ip_pools
            .values()
            .map(|p| ("IPPool", p.name.as_str(), ippool_spec(p, &p.written_false)))
            .collect(),
        _ => ds
            .block_affinities
            .values()
            .map(|a| {
                let spec = Fields::new()
                    .put("cidr", ApiDoc::str(a.cidr.to_string()))
                    .put("deleted", ApiDoc::str(a.deleted.to_string()))
                    .put("node", ApiDoc::str(&a.node))
                    .put("state", ApiDoc::str(&a.state))
                    .done();
                ("BlockAffinity", a.name.as_str(), spec)
            })
            .collect(),
    };
    let created = |k: &str, name: &str| created_ms(cluster, calico, k, name);
    let list = || {
        let objects = items.iter().map(|(k, name, spec)| {
            let meta = Fields::new()
                .put("creationTimestamp", ApiDoc::str(rfc3339(created(k, name))))
                .put("generation", ApiDoc::Int(1))
                .put("name", ApiDoc::str(*name))
                .done();
            Fields::new()
                .put("apiVersion", ApiDoc::str("crd.projectcalico.org/v1"))
                .put("kind", ApiDoc::str(*k))
                .put("metadata", meta)
                .put("spec", spec.clone())
                .done()
        });
        Fields::new()
            .put("apiVersion", ApiDoc::str("v1"))
            .put("items", ApiDoc::Seq(objects.collect()))
            .put("kind", ApiDoc::str("List"))
            .put("metadata", Fields::new().put("resourceVersion", ApiDoc::str("")).done())
            .done()
    };
    match output {
        "yaml" => Ok(list().yaml()),
        // kubectl's JSONPrinter: `json.MarshalIndent(obj, "", "    ")` of untyped maps.
        "json" => Ok(list().sorted().json("    ")),
        "" | "wide" => {
            // The CRDs define no printer columns: kubectl shows NAME and AGE.
            let mut rows = vec![vec!["NAME".to_string(), "AGE".to_string()]];
            rows.extend(
                items
                    .iter()
                    .map(|(k, name, _)| vec![name.to_string(), human_duration(now.saturating_sub(created(k, name)))]),
            );
            Ok(tabwriter(&rows))
        }
        other => Err(CommandError::new(format!(
            "error: unable to match a printer suitable for the output format \"{other}\", allowed formats are: json,wide,yaml"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_print_like_kubectl() {
        let s = 1000;
        assert_eq!(super::human_duration(14 * s), "14s");
        assert_eq!(super::human_duration(211 * s), "3m31s");
        assert_eq!(super::human_duration(82 * 60 * s), "82m");
        assert_eq!(super::human_duration((7 * 60 + 48) * 60 * s), "7h48m");
        assert_eq!(super::human_duration(53 * 3600 * s), "2d5h");
    }
}
