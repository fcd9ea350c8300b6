//! How a pod ends: graceful deletion and the `Terminating` state (k8s-cidr-migrations.md §2.6
//! P1-9, §5 C19).
//!
//! A deleted or evicted pod gets a `deletionTimestamp` and shows `Terminating`. Its kubelet
//! stops its containers, tears the sandbox down — the CNI DEL, which gives its address back
//! to Calico IPAM or host-local — and then asks the apiserver to remove the object (kubelet
//! `pkg/kubelet/status/status_manager.go`: `canBeDeleted` once `PodResourcesAreReclaimed`, then
//! a delete with grace period 0), which it does once `metadata.finalizers` is empty (the
//! apiserver's generic store keeps an object with finalizers, deletionTimestamp set: recalled,
//! not re-read). So a pod stays Terminating:
//!
//! - while a finalizer is left on it, until `kubectl patch pod … finalizers: null` (its
//!   sandbox is gone meanwhile: no address, no veth);
//! - while its node's kubelet is stopped: nothing stops the containers (they keep serving,
//!   address and all) until the kubelet starts again or the Node is deleted (pod garbage
//!   collection then deletes it with no grace, finalizers still holding the object).
//!
//! fabsim's kubelet stops the containers at once: how long an application takes to exit on
//! SIGTERM (at most its grace period) is not modelled.

use std::collections::BTreeMap;

use super::cluster::{Cluster, Owner};
use super::command::{flag, patch_json, CommandOutcome};
use crate::model::Network;

/// `terminationGracePeriodSeconds` when a Pod's manifest gives none (the API's default).
const DEFAULT_GRACE_PERIOD_S: u64 = 30;

/// What a Pod manifest declares beyond scheduling: its own labels, whether it has an
/// emptyDir volume (drain's local-storage filter), its finalizers and its grace period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// `metadata.labels` (None: the labels fabsim derives from the owner, `Pod::labels`).
    pub labels: Option<BTreeMap<String, String>>,
    /// A volume of `spec.volumes` is an `emptyDir`.
    pub empty_dir: bool,
    pub finalizers: Vec<String>,
    pub grace_period_s: u64,
}

impl Default for Declared {
    fn default() -> Self {
        Declared {
            labels: None,
            empty_dir: false,
            finalizers: Vec::new(),
            grace_period_s: DEFAULT_GRACE_PERIOD_S,
        }
    }
}

/// The labels, volumes, finalizers and grace period of a Pod manifest (`doc`, named `name`).
pub(super) fn declared(doc: &serde_json::Value, name: &str) -> Result<Declared, String> {
    let labels = doc
        .pointer("/metadata/labels")
        .map(|_| super::command::string_map(doc, "/metadata/labels"));
    let mut empty_dir = false;
    for (i, v) in doc
        .pointer("/spec/volumes")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
        .enumerate()
    {
        if v.get("name").and_then(|n| n.as_str()).is_none() {
            return Err(format!("Pod {name}: spec.volumes[{i}].name is missing"));
        }
        empty_dir |= v.get("emptyDir").is_some();
    }
    let finalizers = match doc.pointer("/metadata/finalizers") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .map(|f| {
                f.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("Pod {name}: metadata.finalizers holds strings, not {f}"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("Pod {name}: metadata.finalizers is a list, not {other}")),
    };
    let grace_period_s = match doc.pointer("/spec/terminationGracePeriodSeconds") {
        None => DEFAULT_GRACE_PERIOD_S,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("Pod {name}: spec.terminationGracePeriodSeconds must be a whole number, not {v}"))?,
    };
    Ok(Declared {
        labels,
        empty_dir,
        finalizers,
        grace_period_s,
    })
}

impl Cluster {
    /// The kubelet's part of a deletion, as far as it can go now: a pod on a node whose
    /// kubelet runs (or on no node) has its sandbox torn down (CNI DEL) and, without
    /// finalizers, its object removed. Nothing happens to a pod not being deleted.
    pub(super) fn finish_deletion(&mut self, namespace: &str, name: &str) {
        let Some(pod) = self
            .pods
            .iter()
            .find(|p| p.namespace == namespace && p.name == name && p.deleted_ms.is_some())
        else {
            return;
        };
        let stopped_kubelet = pod
            .node
            .as_deref()
            .is_some_and(|n| self.node(n).is_some() && !self.kubelet_running(n));
        if !stopped_kubelet {
            self.tear_down(namespace, name);
        }
    }

    /// The pod's sandbox is gone (its address released) and, without finalizers, the object
    /// too.
    fn tear_down(&mut self, namespace: &str, name: &str) {
        let Some(pod) = self.pod(namespace, name).cloned() else {
            return;
        };
        self.release(&pod);
        if pod.declared.finalizers.is_empty() {
            self.pods.retain(|p| !(p.namespace == namespace && p.name == name));
            return;
        }
        if let Some(p) = self
            .pods
            .iter_mut()
            .find(|p| p.namespace == namespace && p.name == name)
        {
            p.ip = None;
            p.container_id = None;
            p.phase = super::cluster::PodPhase::Pending;
            p.dns = None;
        }
    }

    /// The kubelet on `node` runs again: it finishes the deletions that waited for it.
    pub(super) fn kubelet_back(&mut self, node: &str) {
        let waiting: Vec<(String, String)> = self
            .pods
            .iter()
            .filter(|p| p.deleted_ms.is_some() && p.node.as_deref() == Some(node))
            .map(|p| (p.namespace.clone(), p.name.clone()))
            .collect();
        for (ns, name) in waiting {
            self.finish_deletion(&ns, &name);
        }
    }

    /// Pod garbage collection of a pod bound to a deleted Node: deleted with no grace period
    /// (a Deployment replaces it elsewhere); its finalizers still hold the object.
    pub(super) fn collect_orphan(&mut self, namespace: &str, name: &str, now: u64) {
        let Some(pod) = self.pod(namespace, name).cloned() else {
            return;
        };
        if let Some(p) = self
            .pods
            .iter_mut()
            .find(|p| p.namespace == namespace && p.name == name)
        {
            p.deleted_ms.get_or_insert(now);
        }
        self.tear_down(namespace, name);
        if pod.deleted_ms.is_none() && matches!(pod.owner, Owner::Deployment(_)) {
            self.replace(pod, now);
        }
    }

    /// C19: each pod Terminating for longer than its grace period, and what holds it.
    pub fn terminating_findings(&self, now: u64) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.pods {
            let Some(since) = p.deleted_ms else { continue };
            let age_s = now.saturating_sub(since) / 1000;
            if age_s <= p.declared.grace_period_s {
                continue;
            }
            let mut why = Vec::new();
            if !p.declared.finalizers.is_empty() {
                why.push(format!("finalizers [{}]", p.declared.finalizers.join(" ")));
            }
            if let Some(node) = p.node.as_deref().filter(|n| !self.kubelet_running(n)) {
                why.push(format!("kubelet on {node} stopped"));
            }
            out.push(format!(
                "pod {}/{} Terminating for {age_s}s, longer than its grace period ({}s): {} \
                 (k8s-cidr-migrations.md §2.6 P1-9, §5 C19: a drain waits for it)",
                p.namespace,
                p.name,
                p.declared.grace_period_s,
                why.join("; ")
            ));
        }
        out
    }
}

/// `kubectl patch pod NAME [-n NS] [--type merge|json] -p PATCH` of `metadata.finalizers`:
/// a merge patch `{"metadata":{"finalizers":null}}` (or a list), or a JSON patch
/// `[{"op":"remove","path":"/metadata/finalizers"}]`. A Terminating pod whose last finalizer
/// goes is removed once its kubelet has stopped it. Other fields are not modelled and say so.
pub(super) fn patch_pod(net: &mut Network, namespace: &str, args: &[&str]) -> Result<CommandOutcome, String> {
    let words: Vec<&str> = positional(args);
    let name = match words.as_slice() {
        [kind, ..] if kind.contains('/') => kind.split_once('/').map(|(_, n)| n).unwrap_or_default(),
        [_, name, ..] => name,
        _ => return Err("kubectl patch pod: give the pod's name".into()),
    };
    let patch = match patch_json(args)? {
        Ok(p) => p,
        Err(out) => return Ok(out),
    };
    let finalizers = match flag(args, "--type") {
        Some("json") => json_patch_finalizers(&patch)?,
        None | Some("merge" | "strategic") => merge_patch_finalizers(&patch)?,
        Some(t) => {
            return Err(format!(
                "kubectl patch pod: --type {t}: expected merge, strategic or json"
            ))
        }
    };
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let Some(pod) = cluster
        .pods
        .iter_mut()
        .find(|p| p.namespace == namespace && p.name == name)
    else {
        return Ok(CommandOutcome::failed(format!(
            "Error from server (NotFound): pods \"{name}\" not found\n"
        )));
    };
    if pod.declared.finalizers == finalizers {
        return Ok(CommandOutcome::ok(format!("pod/{name} patched (no change)\n")));
    }
    pod.declared.finalizers = finalizers;
    cluster.finish_deletion(namespace, name);
    Ok(CommandOutcome::ok(format!("pod/{name} patched\n")))
}

/// The words of `patch pod …` that are not flags or their values.
fn positional<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if ["-p", "--patch", "--type", "-n", "--namespace"].contains(a) {
            it.next();
        } else if !a.starts_with('-') {
            out.push(*a);
        }
    }
    out
}

/// The finalizers a merge patch leaves: `null` clears them, a list replaces them.
fn merge_patch_finalizers(patch: &serde_json::Value) -> Result<Vec<String>, String> {
    let fields: Vec<String> = patch
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys().cloned())
        .filter(|k| k != "metadata")
        .chain(
            patch
                .pointer("/metadata")
                .and_then(|m| m.as_object())
                .into_iter()
                .flat_map(|m| m.keys().cloned())
                .filter(|k| k != "finalizers"),
        )
        .collect();
    if let Some(f) = fields.first() {
        return Err(format!(
            "kubectl patch pod: fabsim models metadata.finalizers only, not {f}"
        ));
    }
    match patch.pointer("/metadata/finalizers") {
        Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(list)) => list
            .iter()
            .map(|f| {
                f.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("kubectl patch pod: a finalizer is a string, not {f}"))
            })
            .collect(),
        _ => Err("kubectl patch pod: the patch sets no metadata.finalizers".into()),
    }
}

/// The finalizers a JSON patch of one `remove` (or `replace` with a list) of
/// `/metadata/finalizers` leaves.
fn json_patch_finalizers(patch: &serde_json::Value) -> Result<Vec<String>, String> {
    let ops = patch
        .as_array()
        .ok_or("kubectl patch pod --type json: the patch is a list of operations")?;
    match ops.as_slice() {
        [op] if op.get("path").and_then(|p| p.as_str()) == Some("/metadata/finalizers") => {
            match op.get("op").and_then(|o| o.as_str()) {
                Some("remove") => Ok(Vec::new()),
                Some("replace" | "add") => merge_patch_finalizers(&serde_json::json!({
                    "metadata": {"finalizers": op.get("value").cloned().unwrap_or_default()}
                })),
                other => Err(format!(
                    "kubectl patch pod --type json: fabsim models remove|replace|add, not {}",
                    other.unwrap_or("(no op)")
                )),
            }
        }
        _ => Err("kubectl patch pod --type json: fabsim models one operation on /metadata/finalizers".into()),
    }
}
