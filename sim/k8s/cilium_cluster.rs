//! Cilium in the cluster (`cilium`'s model wired to the API objects and the runbook): its
//! manifest applied with `kubectl apply -f` (the objects of `helm template cilium cilium/cilium`
//! that fabsim reads: ConfigMap `cilium-config`, DaemonSet `cilium`, Deployment
//! `cilium-operator`), an agent pod per node whose agent starts with the pod, the operator's
//! restart and the findings.

use std::collections::BTreeMap;

use super::cilium::{self, Agent, Cilium, Config};
use super::cluster::{Cluster, Owner, Pod, PodPhase, PodSpec};
use super::command::{system_pod, CommandOutcome};
use crate::model::Network;

/// A pod of the `cilium` DaemonSet.
pub(super) fn is_cilium_pod(pod: &Pod) -> bool {
    pod.namespace == cilium::NAMESPACE && pod.owner == Owner::DaemonSet(cilium::DAEMONSET.into())
}

/// The cilium pod of `node` (host network, tolerates every taint).
pub(super) fn cilium_pod(node: &str) -> PodSpec {
    system_pod(Owner::DaemonSet(cilium::DAEMONSET.into()), None, Some(node), true)
}

/// One object of the applied file that fabsim reads.
enum Object {
    Config(BTreeMap<String, String>),
    DaemonSet { version: String },
    Operator,
}

/// `kubectl apply|create -f FILE` when the file holds ConfigMap kube-system/cilium-config: None
/// when it does not. With the `cilium` DaemonSet it installs Cilium (an agent pod on every
/// node); on its own it changes the configuration the agents and the operator read when they
/// next start.
pub(super) fn apply(net: &mut Network, text: &str, now: u64) -> Option<Result<CommandOutcome, String>> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(text).ok()?;
    let docs: Vec<serde_json::Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if !docs.iter().any(|d| object_id(d) == ("ConfigMap", cilium::CONFIGMAP)) {
        return None;
    }
    Some(apply_objects(net, &docs, now))
}

fn object_id(doc: &serde_json::Value) -> (&str, &str) {
    let at = |p: &str| doc.pointer(p).and_then(|v| v.as_str()).unwrap_or_default();
    (at("/kind"), at("/metadata/name"))
}

fn apply_objects(net: &mut Network, docs: &[serde_json::Value], now: u64) -> Result<CommandOutcome, String> {
    let objects = docs.iter().map(read_object).collect::<Result<Vec<_>, _>>()?;
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let mut out = String::new();
    let mut config = None;
    let mut version = None;
    for o in objects {
        match o {
            Object::Config(data) => config = Some(Config::from_data(data)?),
            Object::DaemonSet { version: v } => version = Some(v),
            Object::Operator => {}
        }
    }
    let Some(config) = config else {
        return Err(format!("no ConfigMap {}/{}", cilium::NAMESPACE, cilium::CONFIGMAP));
    };
    match (cluster.cilium.as_mut(), version) {
        (Some(c), _) => {
            if std::mem::discriminant(&c.config.ipam) != std::mem::discriminant(&config.ipam) {
                return Err(format!(
                    "ConfigMap {}/{}: fabsim does not model changing a running Cilium's ipam mode",
                    cilium::NAMESPACE,
                    cilium::CONFIGMAP
                ));
            }
            let verb = if c.config == config { "unchanged" } else { "configured" };
            c.config = config;
            for d in docs {
                out += &format!("{} {verb}\n", resource(d));
            }
        }
        (None, None) => {
            return Err(format!(
                "kubectl apply of ConfigMap {}/{}: Cilium is not installed (apply its manifest with the {} DaemonSet first)",
                cilium::NAMESPACE,
                cilium::CONFIGMAP,
                cilium::DAEMONSET
            ))
        }
        (None, Some(version)) => {
            if cluster.calico.is_some() || cluster.flannel.is_some() {
                return Err("kubectl apply of Cilium: another CNI is installed already; fabsim models one CNI per cluster".into());
            }
            cluster.cilium = Some(Cilium::new(&version, config, now)?);
            let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
            for node in &nodes {
                cluster.create_pod(cilium_pod(node), now);
            }
            cluster.reconcile(now);
            for d in docs {
                out += &format!("{} created\n", resource(d));
            }
        }
    }
    Ok(CommandOutcome::ok(out))
}

/// kubectl's `RESOURCE/NAME` for the objects fabsim reads.
fn resource(doc: &serde_json::Value) -> String {
    let (kind, name) = object_id(doc);
    let resource = match kind {
        "DaemonSet" => "daemonset.apps",
        "Deployment" => "deployment.apps",
        _ => "configmap",
    };
    format!("{resource}/{name}")
}

fn read_object(doc: &serde_json::Value) -> Result<Object, String> {
    let namespace = doc
        .pointer("/metadata/namespace")
        .and_then(|v| v.as_str())
        .unwrap_or(cilium::NAMESPACE);
    let (kind, name) = object_id(doc);
    if namespace != cilium::NAMESPACE {
        return Err(format!(
            "{kind} {namespace}/{name}: fabsim installs Cilium in namespace {}",
            cilium::NAMESPACE
        ));
    }
    match (kind, name) {
        ("ConfigMap", cilium::CONFIGMAP) => {
            let mut data = BTreeMap::new();
            let entries = doc.pointer("/data").and_then(|d| d.as_object());
            for (k, v) in entries.into_iter().flatten() {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("ConfigMap {namespace}/{name}: data.{k} must be a string"))?;
                data.insert(k.clone(), v.to_string());
            }
            Ok(Object::Config(data))
        }
        ("DaemonSet", cilium::DAEMONSET) => {
            let image = doc
                .pointer("/spec/template/spec/containers/0/image")
                .and_then(|v| v.as_str())
                .ok_or_else(|| {
                    format!("DaemonSet {namespace}/{name}: spec.template.spec.containers[0].image is missing")
                })?;
            // `quay.io/cilium/cilium:v1.14.5@sha256:…`: the tag is the version.
            let tag = image.split('@').next().and_then(|i| i.rsplit_once(':')).map(|(_, t)| t);
            let version = tag
                .filter(|t| !t.contains('/'))
                .ok_or_else(|| format!("DaemonSet {namespace}/{name}: image `{image}` has no tag"))?;
            Ok(Object::DaemonSet {
                version: version.to_string(),
            })
        }
        ("Deployment", cilium::OPERATOR) => Ok(Object::Operator),
        _ => Err(format!(
            "{kind} {namespace}/{name}: fabsim reads Cilium's manifest as ConfigMap {}, DaemonSet {} and Deployment {} \
             (put other objects in another file)",
            cilium::CONFIGMAP,
            cilium::DAEMONSET,
            cilium::OPERATOR
        )),
    }
}

/// `kubectl -n kube-system rollout restart deployment cilium-operator`: None for another
/// target. The operator reads the pool list again; agents crash-looping for want of a
/// podCIDR get one at their next restart (`Cluster::reconcile`).
pub(super) fn restart_operator(
    net: &mut Network,
    namespace: &str,
    rest: &[&str],
    now: u64,
) -> Option<Result<CommandOutcome, String>> {
    // `-n NAMESPACE` came after the target (kubectl's words, verb first): the target leads.
    let target = matches!(
        rest,
        [
            "deployment" | "deployments" | "deploy" | "deployment.apps",
            cilium::OPERATOR,
            ..
        ] | [
            "deployment/cilium-operator" | "deployments/cilium-operator" | "deploy/cilium-operator",
            ..
        ]
    );
    let cluster = net.cluster.as_deref_mut()?;
    if !target || namespace != cilium::NAMESPACE || cluster.cilium.is_none() {
        return None;
    }
    let restarted = cluster.cilium.as_mut()?.restart_operator();
    Some(restarted.map(|()| {
        cluster.reconcile(now);
        CommandOutcome::ok(format!("deployment.apps/{} restarted\n", cilium::OPERATOR))
    }))
}

impl Cluster {
    /// The agent in the cilium pod `i` starts (`Cilium::start`) with its Node's podCIDR; when
    /// it exits, the pod shows a crash-looping container.
    pub(super) fn start_cilium_agent(&mut self, i: usize) {
        let Some((cilium, node)) = self.cilium.as_mut().zip(self.pods[i].node.clone()) else {
            return;
        };
        let pod_cidr = self.nodes.iter().find(|n| n.name == node).and_then(|n| n.pod_cidr);
        cilium.start(&node, pod_cidr);
        let failed = match cilium.agents.get(&node) {
            Some(Agent::Failed(log)) => Some(log.clone()),
            _ => None,
        };
        self.show_crash_loop(i, failed);
    }

    /// The agents that crash-loop start again (the kubelet restarts their container): a
    /// podCIDR that arrived meanwhile lets them run.
    pub(super) fn restart_failed_cilium_agents(&mut self) {
        for i in 0..self.pods.len() {
            let failed = match (&self.cilium, self.pods[i].node.as_deref()) {
                (Some(c), Some(n)) => matches!(c.agents.get(n), Some(Agent::Failed(_))) || !c.is_started(n),
                _ => false,
            };
            let node_up = self.pods[i]
                .node
                .as_ref()
                .is_some_and(|n| !self.kubelets_down.contains_key(n));
            if failed && node_up && self.pods[i].phase == PodPhase::Running && is_cilium_pod(&self.pods[i]) {
                self.start_cilium_agent(i);
            }
        }
    }

    /// Cilium's findings (`Cilium::findings`) against kube-controller-manager's cluster CIDR.
    pub fn cilium_findings(&self) -> Vec<String> {
        let Some(cilium) = self.cilium.as_ref() else {
            return Vec::new();
        };
        cilium.findings(self.node_ipam_settings().map(|(cidr, _)| cidr))
    }
}
