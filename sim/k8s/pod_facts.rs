//! Scripted pod facts: what the references show about a pod but nothing in fabsim derives — a
//! container's readiness and status reason (`0/1 CrashLoopBackOff`), its restart count, its
//! logs, the events kubelet recorded about it (clarifications.md "Scripted facts are data too").
//!
//! The facts live on the pod itself, so they last exactly as long as the pod they describe: a
//! pod its controller replaces (a `kubectl delete pod`, a rollout, a drain) is a new object that
//! starts clean, and a node that reboots restarts its pods' containers, which clears them too.

use super::cluster::{Cluster, Pod};

/// The facts a scenario injects into one pod. Durations (`*_ago_ms`) count back from the
/// moment of injection; the views add the virtual time that has passed since.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFacts {
    /// When the facts were injected (virtual time).
    pub injected_ms: u64,
    /// The READY column (`ready/total` containers), e.g. `0/1`.
    pub ready: Option<String>,
    /// The STATUS column: the container's waiting/terminated reason (`CrashLoopBackOff`,
    /// `Error`) or the pod phase (`Running`).
    pub status: Option<String>,
    /// `status.containerStatuses[].restartCount`.
    pub restarts: Option<u32>,
    /// How long before the injection the container last restarted (`325 (53s ago)`).
    pub last_restart_ago_ms: Option<u64>,
    /// What `kubectl logs POD` prints (the running container).
    pub log: Option<String>,
    /// What `kubectl logs -p POD` prints (the previous, terminated container).
    pub previous_log: Option<String>,
    /// Events about the pod, oldest first.
    pub events: Vec<PodEvent>,
}

/// One `v1.Event` whose involvedObject is the pod.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodEvent {
    /// `Normal` or `Warning`.
    pub kind: String,
    pub reason: String,
    /// `source.component` (kubelet, default-scheduler).
    pub from: String,
    pub message: String,
    /// How many times it happened (1: once).
    pub count: u32,
    /// `firstTimestamp` and `lastTimestamp`, as time before the injection.
    pub first_seen_ago_ms: u64,
    pub last_seen_ago_ms: u64,
}

/// Which pods a set of facts is for: one pod by name, or every pod of a namespace whose
/// labels match a selector (`-n NS -l KEY=VALUE`, as kubectl selects them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodTarget {
    Name { namespace: String, name: String },
    Selector { namespace: String, selector: String },
}

impl std::fmt::Display for PodTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodTarget::Name { namespace, name } => write!(f, "{namespace}/{name}"),
            PodTarget::Selector { namespace, selector } => write!(f, "-n {namespace} -l {selector}"),
        }
    }
}

/// Facts for the pods a target selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactsFor {
    pub target: PodTarget,
    pub facts: PodFacts,
}

impl PodFacts {
    /// The time since the moment `ago_ms` before the injection, at `now`.
    pub fn since(&self, ago_ms: u64, now: u64) -> u64 {
        now.saturating_sub(self.injected_ms) + ago_ms
    }
}

/// Put each set of facts on the pods its target selects (replacing facts injected earlier).
/// Returns the pods changed, in order; an error names a target that selects no pod.
pub fn inject(cluster: &mut Cluster, facts: &[FactsFor], now: u64) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for f in facts {
        let chosen: Vec<usize> = (0..cluster.pods.len())
            .filter(|&i| selects(&f.target, &cluster.pods[i]))
            .collect();
        if chosen.is_empty() {
            return Err(format!("inject: no pod matches {}", f.target));
        }
        for i in chosen {
            let pod = &mut cluster.pods[i];
            pod.facts = Some(PodFacts {
                injected_ms: now,
                ..f.facts.clone()
            });
            changed.push(format!("{}/{}", pod.namespace, pod.name));
        }
    }
    Ok(changed)
}

fn selects(target: &PodTarget, pod: &Pod) -> bool {
    match target {
        PodTarget::Name { namespace, name } => pod.namespace == *namespace && pod.name == *name,
        PodTarget::Selector { namespace, selector } => pod.namespace == *namespace && pod.matches(selector),
    }
}
