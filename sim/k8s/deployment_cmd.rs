//! `kubectl apply|create -f` of `apps/v1 Deployment` manifests: the Deployment's pods, created
//! from its template as its ReplicaSet would (named `NAME-HASH-SUFFIX`, scheduled and started
//! like every pod). fabsim knows a Deployment by its pods (`Owner::Deployment`), so applying
//! the same Deployment again compares replica counts: the same is `unchanged`, another scales
//! it. A changed template would be a rollout through a new ReplicaSet, which `kubectl apply`
//! does not drive here (`kubectl patch deployment` does): that is an error, not a silent
//! no-op.

use super::cluster::{Cluster, Owner, Pod, PodSpec};
use super::command::{documents_of_kind, pod_spec, CommandOutcome};
use crate::model::Network;

/// What a Deployment manifest asks for.
#[derive(Clone, Debug)]
pub(super) struct DeploymentSpec {
    name: String,
    namespace: Option<String>,
    replicas: usize,
    /// One pod of its template (`name: None`: the ReplicaSet names each).
    template: PodSpec,
}

/// The Deployments of a manifest text: None when it holds no `kind: Deployment`; an error when
/// it mixes them with other kinds or a field fabsim cannot read.
pub(super) fn manifests(text: &str) -> Option<Result<Vec<DeploymentSpec>, String>> {
    let docs = documents_of_kind(text, "Deployment", "Deployments")?;
    Some(docs.and_then(|docs| docs.iter().map(parse).collect()))
}

fn parse(doc: &serde_json::Value) -> Result<DeploymentSpec, String> {
    let name = doc
        .pointer("/metadata/name")
        .and_then(|v| v.as_str())
        .ok_or("Deployment manifest: metadata.name is missing")?
        .to_string();
    if let Some(v) = doc
        .get("apiVersion")
        .and_then(|v| v.as_str())
        .filter(|v| *v != "apps/v1")
    {
        return Err(format!(
            "error: resource mapping not found for name: \"{name}\": no matches for kind \"Deployment\" in version \"{v}\""
        ));
    }
    let replicas = match doc.pointer("/spec/replicas") {
        None => 1,
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("Deployment {name}: spec.replicas must be a whole number"))?,
    };
    let template = doc
        .pointer("/spec/template")
        .ok_or_else(|| format!("Deployment {name}: spec.template is missing"))?;
    // The apiserver's validation: the selector must select the template's labels.
    let labels = super::command::string_map(template, "/metadata/labels");
    let selector = super::command::string_map(doc, "/spec/selector/matchLabels");
    if selector.is_empty() || selector.iter().any(|(k, v)| labels.get(k) != Some(v)) {
        return Err(format!(
            "The Deployment \"{name}\" is invalid: spec.template.metadata.labels: Invalid value: {}: `selector` does not match template `labels`",
            serde_json::to_string(&labels).unwrap_or_default()
        ));
    }
    let template = pod_spec(template, &format!("Deployment {name}"), &name)?;
    Ok(DeploymentSpec {
        namespace: doc
            .pointer("/metadata/namespace")
            .and_then(|v| v.as_str())
            .map(str::to_string),
        template: PodSpec {
            owner: Owner::Deployment(name.clone()),
            ..template
        },
        name,
        replicas,
    })
}

/// Apply (or create) each Deployment: `deployment.apps/NAME created|unchanged|configured`.
pub(super) fn apply(
    net: &mut Network,
    verb: &str,
    specs: Vec<DeploymentSpec>,
    namespace: &str,
    now: u64,
) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let mut out = String::new();
    for spec in specs {
        let ns = spec.namespace.clone().unwrap_or_else(|| namespace.to_string());
        let name = spec.name.clone();
        let mine: Vec<&Pod> = live_pods(cluster, &ns, &name);
        if !mine.is_empty() && verb == "create" {
            return Ok(CommandOutcome::failed(format!(
                "{out}Error from server (AlreadyExists): error when creating \"{name}\": deployments.apps \"{name}\" already exists\n"
            )));
        }
        if let Some(p) = mine.first() {
            if p.image != spec.template.image || p.declared.labels != spec.template.declared.labels {
                return Err(format!(
                    "kubectl {verb}: Deployment {name}'s pod template changed; fabsim does not roll a new \
                     ReplicaSet from kubectl apply (kubectl patch deployment does)"
                ));
            }
        }
        let have = mine.len();
        let outcome = match have {
            0 => "created",
            n if n == spec.replicas => "unchanged",
            _ => "configured",
        };
        scale(cluster, &ns, &spec, have, now);
        out.push_str(&format!("deployment.apps/{name} {outcome}\n"));
    }
    cluster.reconcile(now);
    Ok(CommandOutcome::ok(out))
}

/// The Deployment's pods that are not on their way out.
fn live_pods<'a>(cluster: &'a Cluster, namespace: &str, name: &str) -> Vec<&'a Pod> {
    cluster
        .pods
        .iter()
        .filter(|p| {
            p.namespace == namespace && p.owner == Owner::Deployment(name.to_string()) && p.deleted_ms.is_none()
        })
        .collect()
}

/// Create the missing replicas, or delete the newest surplus ones (the ReplicaSet controller
/// ranks pods for deletion by readiness, node spread and age; fabsim takes the youngest —
/// **unverified** against that ranking).
fn scale(cluster: &mut Cluster, namespace: &str, spec: &DeploymentSpec, have: usize, now: u64) {
    for _ in have..spec.replicas {
        cluster.create_pod(
            PodSpec {
                namespace: namespace.to_string(),
                ..spec.template.clone()
            },
            now,
        );
    }
    if have > spec.replicas {
        let mut surplus: Vec<String> = live_pods(cluster, namespace, &spec.name)
            .iter()
            .map(|p| p.name.clone())
            .collect();
        surplus.drain(..spec.replicas);
        for pod in surplus.iter().rev() {
            cluster.scale_down_pod(namespace, pod, now);
        }
    }
}
