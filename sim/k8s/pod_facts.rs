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
    /// fabsim derived the crash (not injected): the container exits as soon as it starts, first
    /// at this moment, and the kubelet restarts it on its back-off ([`crash_loop_restarts`]).
    pub crash_loop_since_ms: Option<u64>,
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

/// The kubelet's restart back-off (pkg/kubelet/kubelet.go: `backOffPeriod` 10 s,
/// `MaxContainerBackOff` 300 s): a container that exited is started again at once the first
/// time, then after 10 s, 20 s, 40 s … 300 s (kuberuntime's `doBackOff` restarts unless the key
/// is in back-off since the last exit, and `flowcontrol.Backoff.Next` doubles the period up to
/// the cap). For a container that exits as soon as it starts, first at `since`: the restart
/// count at `now` and when the last restart was, or None before the first start. The kubelet's
/// 1 s relist is not modelled (real restarts land up to a second later).
pub fn crash_loop_restarts(since: u64, now: u64) -> Option<(u32, u64)> {
    const FIRST_BACKOFF_MS: u64 = 10_000;
    const MAX_BACKOFF_MS: u64 = 300_000;
    if now < since {
        return None;
    }
    // The first exit: restarted at once.
    let (mut count, mut last, mut backoff) = (1u32, since, FIRST_BACKOFF_MS);
    while last + backoff <= now {
        last += backoff;
        count += 1;
        backoff = (backoff * 2).min(MAX_BACKOFF_MS);
    }
    Some((count, last))
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

#[cfg(test)]
mod tests {
    use super::crash_loop_restarts;

    #[test]
    fn the_kubelet_restarts_at_once_then_backs_off_doubling_up_to_five_minutes() {
        assert_eq!(crash_loop_restarts(5_000, 4_999), None);
        assert_eq!(crash_loop_restarts(0, 0), Some((1, 0)));
        assert_eq!(crash_loop_restarts(0, 9_999), Some((1, 0)));
        assert_eq!(crash_loop_restarts(0, 10_000), Some((2, 10_000)));
        let starts: Vec<u64> = [30, 70, 150, 310, 610, 910, 1210].map(|s| s * 1000).to_vec();
        for (i, t) in starts.iter().enumerate() {
            assert_eq!(crash_loop_restarts(0, *t), Some((i as u32 + 3, *t)), "at {t} ms");
        }
    }
}
