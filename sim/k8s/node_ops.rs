//! Node maintenance from the runbook: `kubectl cordon|uncordon NODE`, `kubectl label|taint
//! node NODE …`, `kubectl patch node NODE -p` (its podCIDR), `kubectl delete node NODE…` and
//! `kubectl delete pod NAME…|--all`; `kubectl drain` (`drain`) and `kubectl patch pod`
//! (`termination`) are dispatched from here and share the flag parser.
//!
//! The texts are kubectl v1.28's (kubernetes/kubectl at tag v0.28.15): `pkg/cmd/drain/drain.go`
//! and `pkg/drain/cordon.go` for cordon, `pkg/cmd/label/label.go`,
//! `pkg/cmd/taint/{taint,utils}.go`, `pkg/cmd/delete/delete.go`; resource names print as
//! cli-runtime's name printer does (`node/NAME cordoned`), errors as `cmdutil.CheckErr` does.
//! Output is stdout and stderr as a terminal shows them, in the order kubectl writes them.
//!
//! What follows in the cluster: an evicted or deleted pod of a Deployment is replaced by its
//! controller and scheduled elsewhere (`Cluster::delete_pod`, `Cluster::reconcile`); a bare pod
//! is gone (once Terminating is over: `termination`); a NoExecute taint makes the taint manager delete the pods that do not tolerate it.

use std::collections::BTreeMap;

use super::cluster::{Cluster, Owner};
use super::command::{flag, patch_json, CommandOutcome};
use super::realize;
use super::rollout;
use super::taints::{self, Effect, TaintArg};
use crate::model::Network;

/// `kubectl ARGS` if it is a node operation fabsim models here; None for anything else.
pub(super) fn run(
    net: &mut Network,
    args: &[&str],
    namespace: &str,
    now: u64,
    pod_start_ms: u64,
) -> Option<Result<CommandOutcome, String>> {
    let (verb, rest) = args.split_first()?;
    let result = match (*verb, rest) {
        ("cordon", _) => cordon(net, rest, true, now),
        ("uncordon", _) => cordon(net, rest, false, now),
        ("drain", _) => super::drain::drain(net, rest, now),
        ("label", [kind, ..]) if node_kind(kind).is_some() => label(net, rest, now),
        ("taint", [kind, ..]) if node_kind(kind).is_some() => taint(net, rest, now),
        ("patch", [kind, ..]) if node_kind(kind).is_some() => patch_node(net, rest),
        ("delete", [kind, ..]) if node_kind(kind).is_some() => delete_nodes(net, rest, now),
        ("delete", [kind, ..]) if pod_kind(kind) => delete_pods(net, namespace, rest, now, pod_start_ms),
        ("patch", [kind, ..]) if pod_kind(kind) => super::termination::patch_pod(net, namespace, rest),
        _ => return None,
    };
    Some(result)
}

/// `node`, `nodes`, `no`, or `node/NAME`: Some(the name after the slash, if any).
fn node_kind(word: &str) -> Option<Option<&str>> {
    let (kind, name) = match word.split_once('/') {
        Some((k, n)) => (k, Some(n)),
        None => (word, None),
    };
    ["node", "nodes", "no"].contains(&kind).then_some(name)
}

fn pod_kind(word: &str) -> bool {
    let kind = word.split_once('/').map_or(word, |(k, _)| k);
    ["pod", "pods", "po"].contains(&kind)
}

/// A command line split into its words and its flags: the flags fabsim models for this
/// command (`--name` boolean, `--name=` taking a value, as `--name=V` or `--name V`), and
/// `-n/--namespace VALUE`, which every kubectl command takes. Any other flag is an error
/// naming it (fabsim does not silently drop what it does not model).
pub(super) struct Parsed<'a> {
    pub(super) words: Vec<&'a str>,
    flags: Vec<&'a str>,
    values: BTreeMap<&'a str, &'a str>,
}

pub(super) fn parse<'a>(command: &str, args: &[&'a str], known: &[&str]) -> Result<Parsed<'a>, String> {
    let mut parsed = Parsed {
        words: Vec::new(),
        flags: Vec::new(),
        values: BTreeMap::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == "-n" || *a == "--namespace" {
            it.next();
        } else if a.starts_with("--namespace=") || (a.starts_with("-n") && !a.starts_with("--")) {
            // `--namespace=NS` or `-nNS`: the namespace, read by the caller.
        } else if a.starts_with('-') && a.len() > 1 {
            let (name, value) = match a.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (*a, None),
            };
            if known.iter().any(|k| k.strip_suffix('=') == Some(name)) {
                if let Some(v) = value.or_else(|| it.next().copied()) {
                    parsed.values.insert(name, v);
                }
                continue;
            }
            if !known.contains(&name) {
                let modelled = if known.is_empty() {
                    "no flags".to_string()
                } else {
                    known
                        .iter()
                        .map(|k| k.trim_end_matches('='))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(format!(
                    "`kubectl {command}`: fabsim models {modelled} here, not {name}"
                ));
            }
            // `--force=false` is a flag set to false.
            if value != Some("false") {
                parsed.flags.push(name);
            }
        } else {
            parsed.words.push(a);
        }
    }
    Ok(parsed)
}

impl Parsed<'_> {
    pub(super) fn has(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// A flag's value (`--timeout=60s` or `--timeout 60s`).
    pub(super) fn value(&self, flag: &str) -> Option<&str> {
        self.values.get(flag).copied()
    }
}

pub(super) fn cluster_mut(net: &mut Network) -> Result<&mut Cluster, String> {
    net.cluster.as_deref_mut().ok_or_else(|| "no cluster".to_string())
}

fn node_not_found(name: &str) -> CommandOutcome {
    CommandOutcome::failed(format!("Error from server (NotFound): nodes \"{name}\" not found\n"))
}

/// The named nodes, or the outcome for the first that does not exist (kubectl's builder
/// fails before it changes anything).
pub(super) fn existing_nodes(cluster: &Cluster, names: &[String]) -> Result<(), CommandOutcome> {
    match names.iter().find(|n| cluster.node(n).is_none()) {
        Some(missing) => Err(node_not_found(missing)),
        None => Ok(()),
    }
}

/// `kubectl cordon|uncordon NODE…`: `spec.unschedulable`. Uncordoning lets pending pods
/// schedule there.
fn cordon(net: &mut Network, args: &[&str], desired: bool, now: u64) -> Result<CommandOutcome, String> {
    let verb = if desired { "cordon" } else { "uncordon" };
    let p = parse(verb, args, &[])?;
    let names: Vec<String> = p.words.iter().map(|w| w.to_string()).collect();
    if names.is_empty() {
        return Ok(CommandOutcome::failed(format!(
            "error: USAGE: {verb} NODE [flags]\nSee 'kubectl {verb} -h' for help and examples\n"
        )));
    }
    let cluster = cluster_mut(net)?;
    if let Err(outcome) = existing_nodes(cluster, &names) {
        return Ok(outcome);
    }
    let out = set_unschedulable(cluster, &names, desired);
    cluster.reconcile(now);
    Ok(CommandOutcome::ok(out))
}

/// `RunCordonOrUncordon`: each node changed (`node/N cordoned`) or already so.
pub(super) fn set_unschedulable(cluster: &mut Cluster, names: &[String], desired: bool) -> String {
    let verb = if desired { "cordoned" } else { "uncordoned" };
    let mut out = String::new();
    for name in names {
        let Some(node) = cluster.nodes.iter_mut().find(|n| &n.name == name) else {
            continue;
        };
        if node.unschedulable == desired {
            out += &format!("node/{name} already {verb}\n");
        } else {
            node.unschedulable = desired;
            out += &format!("node/{name} {verb}\n");
        }
    }
    out
}

/// The node names of `kind name…` or `node/name…` arguments, and the arguments after them.
fn node_names<'a>(words: &[&'a str]) -> (Vec<String>, Vec<&'a str>) {
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(w) = words.get(i) {
        match node_kind(w) {
            Some(Some(name)) => names.push(name.to_string()),
            Some(None) if i == 0 => {}
            _ if i > 0 && !w.contains('=') && !w.contains(':') && !w.ends_with('-') => names.push(w.to_string()),
            _ => break,
        }
        i += 1;
    }
    (names, words[i..].to_vec())
}

/// `kubectl label node NODE… KEY=VALUE… KEY-… [--overwrite]`. In the Kubernetes datastore a
/// Calico Node is the Kubernetes Node, labels included, so Calico's selectors (BGPPeer,
/// IPPool `nodeSelector`) see the change.
fn label(net: &mut Network, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let p = parse("label", args, &["--overwrite"])?;
    let overwrite = p.has("--overwrite");
    let (names, pairs) = node_names(&p.words);
    let mut set: BTreeMap<String, String> = BTreeMap::new();
    let mut remove: Vec<String> = Vec::new();
    for spec in &pairs {
        if let Some((k, v)) = spec.split_once('=') {
            if v.contains('=') {
                return Ok(CommandOutcome::failed(format!("error: invalid label spec: {spec}\n")));
            }
            if !valid_label_value(v) {
                return Err(format!(
                    "kubectl label {spec}: not a valid label value (kubectl refuses it; fabsim does not model the message)"
                ));
            }
            set.insert(k.to_string(), v.to_string());
        } else if let Some(k) = spec.strip_suffix('-') {
            remove.push(k.to_string());
        } else {
            return Ok(CommandOutcome::failed(format!("error: unknown label spec: {spec}\n")));
        }
    }
    if remove.iter().any(|k| set.contains_key(k)) {
        return Ok(CommandOutcome::failed(
            "error: can not both modify and remove a label in the same command\n",
        ));
    }
    if names.is_empty() {
        return Ok(CommandOutcome::failed(
            "error: one or more resources must be specified as <resource> <name> or <resource>/<name>\n",
        ));
    }
    if set.is_empty() && remove.is_empty() {
        return Ok(CommandOutcome::failed("error: at least one label update is required\n"));
    }
    let cluster = cluster_mut(net)?;
    if let Err(outcome) = existing_nodes(cluster, &names) {
        return Ok(outcome);
    }
    let mut out = String::new();
    let mut failed = Vec::new();
    for name in &names {
        let Some(node) = cluster.nodes.iter_mut().find(|n| &n.name == name) else {
            continue;
        };
        for k in &remove {
            if !node.labels.contains_key(k) {
                out += &format!("label \"{k}\" not found.\n");
            }
        }
        // validateNoOverwrites: each conflicting key is an error; nothing changes.
        let conflicts: Vec<String> = set
            .iter()
            .filter_map(|(k, v)| {
                let current = node.labels.get(k).filter(|c| *c != v)?;
                Some(format!(
                    "'{k}' already has a value ({current}), and --overwrite is false"
                ))
            })
            .collect();
        if !overwrite && !conflicts.is_empty() {
            failed.extend(conflicts);
            continue;
        }
        let before = node.labels.clone();
        node.labels.extend(set.clone());
        for k in &remove {
            node.labels.remove(k);
        }
        // updateDataChangeMsg compares the serialised objects: changed and shorter without
        // --overwrite is "unlabeled".
        let size = |l: &BTreeMap<String, String>| serde_json::to_string(l).map_or(0, |s| s.len());
        let msg = if node.labels == before {
            "not labeled"
        } else if !overwrite && size(&node.labels) < size(&before) {
            "unlabeled"
        } else {
            "labeled"
        };
        out += &format!("node/{name} {msg}\n");
        let labels = node.labels.clone();
        if let Some(cn) = cluster.calico.as_mut().and_then(|c| c.datastore.nodes.get_mut(name)) {
            for k in before.keys().filter(|k| !labels.contains_key(*k)) {
                cn.labels.remove(k);
            }
            cn.labels.extend(labels);
        }
    }
    cluster.reconcile(now);
    if failed.is_empty() {
        return Ok(CommandOutcome::ok(out));
    }
    // One error prints with kubectl's "error: " prefix; several as the aggregate's lines.
    match failed.as_slice() {
        [one] => out += &format!("error: {one}\n"),
        many => many.iter().for_each(|e| out += &format!("{e}\n")),
    }
    Ok(CommandOutcome::failed(out))
}

/// `validation.IsValidLabelValue`: at most 63 characters, alphanumerics and `-_.`, starting
/// and ending with an alphanumeric (or empty).
fn valid_label_value(v: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && alnum(v.chars().next())
            && alnum(v.chars().last()))
}

/// `kubectl taint node NODE… KEY[=VALUE]:EFFECT… KEY[:EFFECT]-… [--overwrite]`: the node's
/// `spec.taints` (new ones first, as `reorganizeTaints` builds the list). A NoExecute taint
/// makes the taint manager delete, at once, the pods on the node that do not tolerate it.
fn taint(net: &mut Network, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let p = parse("taint", args, &["--overwrite"])?;
    let overwrite = p.has("--overwrite");
    let (names, specs) = node_names(&p.words);
    let usage =
        |msg: String| CommandOutcome::failed(format!("error: {msg}\nSee 'kubectl taint -h' for help and examples\n"));
    if specs.is_empty() {
        return Ok(CommandOutcome::failed("error: at least one taint update is required\n"));
    }
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for spec in &specs {
        match taints::parse_arg(spec) {
            Ok(TaintArg::Add(t)) => {
                if add
                    .iter()
                    .any(|a: &taints::Taint| a.key == t.key && a.effect == t.effect)
                {
                    return Ok(usage(format!(
                        "duplicated taints with the same key and effect: {}",
                        go_taint(&t)
                    )));
                }
                add.push(t)
            }
            Ok(TaintArg::Remove(r)) => remove.push(r),
            Err(e) => return Ok(usage(e)),
        }
    }
    let conflicts: Vec<String> = remove
        .iter()
        .filter(|r| {
            add.iter()
                .any(|a| a.key == r.key && r.effect.is_none_or(|e| e == a.effect))
        })
        .map(|r| format!("{}={}", r.key, r.effect.map_or("", Effect::as_str)))
        .collect();
    if !conflicts.is_empty() {
        return Ok(CommandOutcome::failed(format!(
            "error: can not both modify and remove the following taint(s) in the same command: {}\n",
            conflicts.join(", ")
        )));
    }
    if names.is_empty() {
        return Ok(CommandOutcome::failed(
            "error: at least one resource name must be specified since 'all' parameter is not set\n",
        ));
    }
    let cluster = cluster_mut(net)?;
    if let Err(outcome) = existing_nodes(cluster, &names) {
        return Ok(outcome);
    }
    let mut out = String::new();
    let mut failed = Vec::new();
    for name in &names {
        let Some(node) = cluster.nodes.iter_mut().find(|n| &n.name == name) else {
            continue;
        };
        if !overwrite {
            let exists: Vec<&str> = add
                .iter()
                .filter(|a| node.taints.iter().any(|t| t.key == a.key && t.effect == a.effect))
                .map(|a| a.key.as_str())
                .collect();
            if !exists.is_empty() {
                failed.push(format!(
                    "node {name} already has {} taint(s) with same effect(s) and --overwrite is false",
                    exists.join(",")
                ));
                continue;
            }
        }
        // reorganizeTaints: the new taints, then the old ones they do not replace, minus the
        // removed ones; a removal that matches nothing fails the node unchanged.
        let mut next = add.clone();
        let old = node.taints.len();
        next.extend(
            node.taints
                .iter()
                .filter(|t| !add.iter().any(|a| a.key == t.key && a.effect == t.effect))
                .cloned(),
        );
        let added = next.len() != old;
        let mut missing = Vec::new();
        let mut deleted = false;
        for r in &remove {
            let before = next.len();
            next.retain(|t| !(t.key == r.key && r.effect.is_none_or(|e| e == t.effect)));
            deleted = next.len() != before;
            if !deleted {
                missing.push(format!("taint \"{r}\" not found"));
            }
        }
        if !missing.is_empty() {
            failed.extend(missing);
            continue;
        }
        let operation = if (added && deleted) || overwrite {
            "modified"
        } else if added {
            "tainted"
        } else {
            "untainted"
        };
        node.taints = next;
        out += &format!("node/{name} {operation}\n");
    }
    evict_intolerant(cluster, &names, now);
    cluster.reconcile(now);
    if failed.is_empty() {
        return Ok(CommandOutcome::ok(out));
    }
    failed.iter().for_each(|e| out += &format!("error: {e}\n"));
    Ok(CommandOutcome::failed(out))
}

/// A taint as Go's `%v` prints a `corev1.Taint` struct (`{key value effect <nil>}`).
fn go_taint(t: &taints::Taint) -> String {
    format!("{{{} {} {} <nil>}}", t.key, t.value, t.effect.as_str())
}

/// The taint manager: pods on `nodes` that do not tolerate one of their NoExecute taints are
/// deleted (no `tolerationSeconds` is modelled, so at once); their controllers replace them.
fn evict_intolerant(cluster: &mut Cluster, nodes: &[String], now: u64) {
    let doomed: Vec<(String, String)> = cluster
        .pods
        .iter()
        .filter(|p| {
            let Some(node) = p.node.as_deref().filter(|n| nodes.iter().any(|x| x == n)) else {
                return false;
            };
            cluster.node(node).is_some_and(|n| {
                n.taints
                    .iter()
                    .any(|t| t.effect == Effect::NoExecute && !taints::tolerates(p, t))
            })
        })
        .map(|p| (p.namespace.clone(), p.name.clone()))
        .collect();
    for (ns, name) in doomed {
        cluster.delete_pod(&ns, &name, now);
    }
}

/// `kubectl delete node NODE…`: the Node object goes, and with it (pod garbage collection)
/// every pod bound to it — Deployment pods are replaced elsewhere, DaemonSet, static and bare
/// pods are gone (one with a finalizer stays Terminating). In the Kubernetes datastore the
/// Calico Node goes too, so the other nodes' BIRD drop their session to it; calico-node on
/// that host stops with its pod (its BIRD and felix's routes go). The node's IPAM blocks and
/// BlockAffinities stay: releasing them is calico-kube-controllers' garbage collection, which
/// fabsim does not model.
///
/// A kubelet still running on the host registers the Node again only when it restarts
/// (`kubelet::register`: it registers once per start).
fn delete_nodes(net: &mut Network, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let p = parse("delete", args, &[])?;
    let (names, extra) = node_names(&p.words);
    if let Some(w) = extra.first() {
        return Err(format!("`kubectl delete node`: unexpected argument {w}"));
    }
    if names.is_empty() {
        return Ok(CommandOutcome::failed(
            "error: resource(s) were provided, but no name was specified\n",
        ));
    }
    let mut out = String::new();
    let mut missing = String::new();
    for name in &names {
        let cluster = cluster_mut(net)?;
        let Some(i) = cluster.nodes.iter().position(|n| &n.name == name) else {
            missing += &format!("Error from server (NotFound): nodes \"{name}\" not found\n");
            continue;
        };
        let node = cluster.nodes.remove(i);
        cluster.release_pod_cidr(&node);
        let bound: Vec<(String, String)> = cluster
            .pods
            .iter()
            .filter(|p| p.node.as_deref() == Some(name.as_str()))
            .map(|p| (p.namespace.clone(), p.name.clone()))
            .collect();
        for (ns, pod) in bound {
            cluster.collect_orphan(&ns, &pod, now);
        }
        cluster.drains.remove(name);
        if let Some(calico) = cluster.calico.as_mut() {
            calico.stop_node(name);
            calico.datastore.nodes.remove(name);
        }
        if let Some(flannel) = cluster.flannel.as_mut() {
            flannel.node_deleted(name);
        }
        if let Some(cilium) = cluster.cilium.as_mut() {
            cilium.node_deleted(name);
        }
        realize::forget_node(net, node.device);
        out += &format!("node \"{name}\" deleted\n");
    }
    let status = if missing.is_empty() { 0 } else { 1 };
    Ok(CommandOutcome {
        status,
        ..CommandOutcome::ok(out + &missing)
    })
}

/// `kubectl delete pod NAME… [-n NS]`, `kubectl delete pods --all [-n NS]` or `kubectl delete
/// pods -l SELECTOR [-n NS]`: each pod's address goes back to IPAM and its controller (if any)
/// replaces it; a bare pod is gone. A calico-node pod's containers die with it and its
/// replacement's start `pod_start_ms` later (`rollout::replace_pod`).
fn delete_pods(
    net: &mut Network,
    namespace: &str,
    args: &[&str],
    now: u64,
    pod_start_ms: u64,
) -> Result<CommandOutcome, String> {
    let (selector, args) = selector_of(args);
    let p = parse("delete", &args, &["--all"])?;
    let mut names: Vec<String> = Vec::new();
    for (i, w) in p.words.iter().enumerate() {
        match w.split_once('/') {
            Some((_, name)) => names.push(name.to_string()),
            None if i > 0 => names.push(w.to_string()),
            None => {}
        }
    }
    let cluster = cluster_mut(net)?;
    if p.has("--all") || selector.is_some() {
        if !names.is_empty() {
            return Ok(CommandOutcome::failed(
                "error: name cannot be provided when a selector is specified\n",
            ));
        }
        // The pods that exist now; replacements their controllers create are not deleted.
        let mut all: Vec<String> = cluster
            .pods
            .iter()
            .filter(|p| p.namespace == namespace && selector.is_none_or(|s| p.matches(s)))
            .map(|p| p.name.clone())
            .collect();
        all.sort();
        if all.is_empty() {
            return Ok(CommandOutcome::ok("No resources found\n"));
        }
        names = all;
    } else if names.is_empty() {
        return Ok(CommandOutcome::failed(
            "error: resource(s) were provided, but no name was specified\n",
        ));
    }
    let mut out = String::new();
    let mut missing = String::new();
    for name in &names {
        // The kubelet recreates a deleted mirror pod at once, under the same name: the static
        // pod itself never stopped, so fabsim keeps it.
        let mirror = cluster.pod(namespace, name).is_some_and(|p| p.owner == Owner::Static);
        if mirror || rollout::replace_pod(cluster, namespace, name, now, pod_start_ms) {
            out += &format!("pod \"{name}\" deleted\n");
        } else {
            missing += &format!("Error from server (NotFound): pods \"{name}\" not found\n");
        }
    }
    let status = if missing.is_empty() { 0 } else { 1 };
    Ok(CommandOutcome {
        status,
        ..CommandOutcome::ok(out + &missing)
    })
}

/// `-l SELECTOR`, `-lSELECTOR`, `--selector SELECTOR` or `--selector=SELECTOR`, and the other
/// arguments.
fn selector_of<'a>(args: &[&'a str]) -> (Option<&'a str>, Vec<&'a str>) {
    let mut selector = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == "-l" || *a == "--selector" {
            selector = it.next().copied();
        } else if let Some(v) = a.strip_prefix("--selector=").or_else(|| a.strip_prefix("-l")) {
            selector = Some(v);
        } else {
            rest.push(*a);
        }
    }
    (selector, rest)
}

/// `kubectl patch node NODE -p '{"spec":{"podCIDR":"…"}}'`: the API server lets a podCIDR be
/// set only while it is empty (`ValidateNodeUpdate`, k8s-cidr-migrations.md §1.3); node IPAM then
/// marks the new one used (the range allocator's node-update handler occupies a set podCIDR).
/// The patch's other fields are not modelled and say so.
fn patch_node(net: &mut Network, args: &[&str]) -> Result<CommandOutcome, String> {
    let (kind, rest) = args.split_first().ok_or("kubectl patch node: give a node name")?;
    let name = match node_kind(kind).flatten() {
        Some(n) => n,
        None => rest
            .first()
            .copied()
            .filter(|w| !w.starts_with('-'))
            .ok_or("kubectl patch node: give a node name")?,
    };
    match flag(args, "--type") {
        None | Some("merge" | "strategic") => {}
        Some("json") => {
            return Err(
                "kubectl patch node: fabsim models merge and strategic patches of spec.podCIDR(s), not JSON patches"
                    .into(),
            )
        }
        Some(t) => {
            return Err(format!(
                "kubectl patch node: --type {t}: expected merge, strategic or json"
            ))
        }
    }
    let patch = match patch_json(args)? {
        Ok(p) => p,
        Err(out) => return Ok(out),
    };
    let spec = patch.get("spec").and_then(|s| s.as_object());
    let fields: Vec<&String> = patch
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .filter(|k| *k != "spec")
        .chain(
            spec.into_iter()
                .flat_map(|s| s.keys())
                .filter(|k| *k != "podCIDR" && *k != "podCIDRs"),
        )
        .collect();
    if let Some(f) = fields.first() {
        return Err(format!(
            "kubectl patch node: fabsim models spec.podCIDR and spec.podCIDRs only, not {f}"
        ));
    }
    let wanted = spec
        .and_then(|s| s.get("podCIDR").and_then(|v| v.as_str()).map(str::to_string))
        .or_else(|| {
            spec.and_then(|s| s.get("podCIDRs"))
                .and_then(|v| v.get(0))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })
        .ok_or("kubectl patch node: the patch sets no spec.podCIDR")?;
    let cidr: ipnet::Ipv4Net = wanted
        .parse()
        .map_err(|_| format!("kubectl patch node: podCIDR '{wanted}': fabsim models IPv4 CIDRs"))?;
    let cluster = cluster_mut(net)?;
    let Some(i) = cluster.nodes.iter().position(|n| n.name == name) else {
        return Ok(node_not_found(name));
    };
    match cluster.nodes[i].pod_cidr {
        Some(old) if old == cidr => Ok(CommandOutcome::ok(format!("node/{name} patched (no change)\n"))),
        Some(_) => Ok(CommandOutcome::failed(format!(
            "The Node \"{name}\" is invalid: spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid\n"
        ))),
        None => {
            cluster.nodes[i].pod_cidr = Some(cidr);
            cluster.occupy_pod_cidr(cidr);
            Ok(CommandOutcome::ok(format!("node/{name} patched\n")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_arguments_take_both_forms() {
        let (names, rest) = node_names(&["node", "k-w1", "k-w2", "a=b", "c-"]);
        assert_eq!(
            (names, rest),
            (vec!["k-w1".to_string(), "k-w2".into()], vec!["a=b", "c-"])
        );
        let (names, rest) = node_names(&["node/k-w1", "dedicated=db:NoSchedule"]);
        assert_eq!(
            (names, rest),
            (vec!["k-w1".to_string()], vec!["dedicated=db:NoSchedule"])
        );
    }

    #[test]
    fn unmodelled_flags_are_refused_by_name() {
        let err = parse("drain", &["k-w1", "--grace-period=0"], &["--force"])
            .err()
            .unwrap_or_default();
        assert!(err.contains("--grace-period"), "{err}");
        let ok = parse("drain", &["k-w1", "-n", "kube-system", "--force"], &["--force"]);
        assert!(ok.is_ok_and(|p| p.words == ["k-w1"] && p.has("--force")));
    }

    #[test]
    fn label_values_follow_the_api_rule() {
        assert!(valid_label_value("") && valid_label_value("rack-a") && valid_label_value("a.b_c"));
        assert!(!valid_label_value("-a") && !valid_label_value("a b") && !valid_label_value(&"x".repeat(64)));
    }
}
