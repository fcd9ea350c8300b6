//! A DaemonSet's rolling update over virtual time (`kubectl rollout restart daemonset/NAME`,
//! or a pod-template change such as `kubectl set env`), and what `kubectl rollout status`
//! prints while it runs.
//!
//! The DaemonSet controller's `RollingUpdate` with `maxUnavailable: 1`, `maxSurge: 0` (the
//! calico-node and kube-proxy manifests): it deletes one node's old pod, creates the new one,
//! and moves to the next node when the new pod is Ready (`minReadySeconds: 0`). calico-node
//! has `terminationGracePeriodSeconds: 0` ("minimize downtime during a rolling upgrade"): the
//! old container — felix, confd and BIRD — is killed at once, and BIRD's sessions close with a
//! Cease. Its readiness probe, `calico-node -felix-ready -bird-ready` every 10 s, passes once
//! every BGP peer of the node's BIRD is Established (`node/pkg/health`).
//!
//! The controller picks the next node by walking a Go map (random order); fabsim takes join
//! order, which a scenario can see in `kubectl get pods` and the report.

use super::cluster::{is_flannel_pod, Cluster, Owner};
use crate::engine::{BgpState, State};
use crate::model::Network;

/// calico-node's `readinessProbe.periodSeconds` (calico.yaml v3.25).
const READINESS_PERIOD_MS: u64 = 10_000;

/// A rolling update in progress.
#[derive(Clone, Debug)]
pub struct Rollout {
    pub namespace: String,
    pub daemonset: String,
    /// Nodes running a pod of the DaemonSet, in update order.
    order: Vec<String>,
    /// The node being updated (index into `order`).
    current: usize,
    stage: Stage,
    due_ms: u64,
    /// A replaced pod's creation to its containers running (`Context::pod_start_ms`).
    pod_start_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Delete the node's old pod and create its replacement.
    Replace,
    /// The new pod's containers start.
    Start,
    /// kubelet runs the readiness probe.
    Probe,
}

/// What one DaemonSet status update said, as `kubectl rollout status` prints it, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusUpdate {
    pub namespace: String,
    pub daemonset: String,
    pub text: String,
}

impl Rollout {
    /// `kubectl rollout status`'s message for the DaemonSet's current status
    /// (`DaemonSetStatusViewer`): updated pods first, then available ones.
    fn status(&self) -> String {
        let desired = self.order.len();
        let updated = self.current + usize::from(self.stage != Stage::Replace);
        let available = desired - usize::from(self.stage != Stage::Replace);
        status_text(&self.daemonset, desired, updated, available)
    }
}

fn status_text(name: &str, desired: usize, updated: usize, available: usize) -> String {
    if updated < desired {
        format!(
            "Waiting for daemon set \"{name}\" rollout to finish: {updated} out of {desired} new pods have been updated...\n"
        )
    } else if available < desired {
        format!("Waiting for daemon set \"{name}\" rollout to finish: {available} of {desired} updated pods are available...\n")
    } else {
        format!("daemon set \"{name}\" successfully rolled out\n")
    }
}

/// The nodes running a pod of the DaemonSet, in join order (fabsim knows DaemonSets by their
/// pods: none means there is no such DaemonSet).
pub(super) fn daemonset_nodes(cluster: &Cluster, namespace: &str, daemonset: &str) -> Vec<String> {
    let owner = Owner::DaemonSet(daemonset.to_string());
    cluster
        .nodes
        .iter()
        .filter(|n| {
            cluster
                .pods
                .iter()
                .any(|p| p.namespace == namespace && p.owner == owner && p.node.as_deref() == Some(&n.name))
        })
        .map(|n| n.name.clone())
        .collect()
}

/// The DaemonSet's pods must be replaced: the controller starts on the first node now.
/// Returns false if the DaemonSet has no pods.
pub(super) fn start(
    net: &mut Network,
    st: &State,
    namespace: &str,
    daemonset: &str,
    now: u64,
    pod_start_ms: u64,
) -> Result<bool, String> {
    let Some(cluster) = net.cluster.as_deref_mut() else {
        return Ok(false);
    };
    let order = daemonset_nodes(cluster, namespace, daemonset);
    if order.is_empty() {
        return Ok(false);
    }
    // A change during a rollout starts it again from the first node: every pod must now run
    // the newest template.
    cluster.rollout = Some(Rollout {
        namespace: namespace.to_string(),
        daemonset: daemonset.to_string(),
        order,
        current: 0,
        stage: Stage::Replace,
        due_ms: now,
        pod_start_ms,
    });
    run_due(net, st, now)?;
    Ok(true)
}

fn is_calico_node(namespace: &str, daemonset: &str) -> bool {
    namespace == "kube-system" && daemonset == "calico-node"
}

/// A pod deleted (`kubectl delete pod`, or the controller's rolling update): its controller
/// creates the replacement at once. A calico-node pod's old container — felix, confd and BIRD
/// — is killed with it (`terminationGracePeriodSeconds: 0`): BIRD stops and its sessions close
/// with a Cease (realize takes its configuration away). Returns the node whose calico-node
/// stopped, if it was one.
fn kill_and_replace(cluster: &mut Cluster, namespace: &str, name: &str, now: u64) -> Option<String> {
    let pod = cluster.pod(namespace, name)?;
    let stopped = match (&pod.owner, &pod.node) {
        (Owner::DaemonSet(d), Some(node)) if is_calico_node(namespace, d) => Some(node.clone()),
        _ => None,
    };
    // flanneld dies with its pod; its replacement starts it again (`Cluster::reconcile`).
    // So does the cilium agent.
    let flanneld = pod.node.clone().filter(|_| is_flannel_pod(pod));
    let agent = pod.node.clone().filter(|_| super::cilium_cluster::is_cilium_pod(pod));
    if let (Some(node), Some(f)) = (flanneld, cluster.flannel.as_mut()) {
        f.stop(&node);
    }
    if let (Some(node), Some(c)) = (agent, cluster.cilium.as_mut()) {
        c.stop(&node);
    }
    cluster.delete_pod(namespace, name, now);
    if let (Some(node), Some(c)) = (&stopped, cluster.calico.as_mut()) {
        c.stop_node(node);
    }
    stopped
}

/// `kubectl delete pod`: the pod goes and its controller replaces it ([`kill_and_replace`]);
/// a calico-node replacement's containers start `pod_start_ms` later, as in a rollout, with
/// autodetection and confd run again. Returns false if there is no such pod.
pub(super) fn replace_pod(cluster: &mut Cluster, namespace: &str, name: &str, now: u64, pod_start_ms: u64) -> bool {
    if cluster.pod(namespace, name).is_none() {
        return false;
    }
    if kill_and_replace(cluster, namespace, name, now).is_some() {
        cluster.calico_starts.push(now + pod_start_ms);
    }
    true
}

/// When the controller (or kubelet, for the rollout's pod or a replaced calico-node) acts next.
pub fn next_due(net: &Network) -> Option<u64> {
    let cluster = net.cluster.as_deref()?;
    let rollout = cluster.rollout.as_ref().map(|r| r.due_ms);
    cluster
        .calico_starts
        .iter()
        .copied()
        .chain(rollout)
        .chain(cluster.kubernetes_service_due)
        .min()
}

/// Whether a rollout of `namespace/daemonset` is still running.
pub fn in_progress(net: &Network, namespace: &str, daemonset: &str) -> bool {
    net.cluster
        .as_deref()
        .and_then(|c| c.rollout.as_ref())
        .is_some_and(|r| r.namespace == namespace && r.daemonset == daemonset)
}

/// The next action, if it is due at `now`: a pod replaced, containers started, or a probe
/// run. One at a time: the caller realizes the network and lets it react before the next
/// (BIRD's sessions close before the new pod starts it again; a probe sees the network as it
/// is then). `st` is the network's state at `now`.
pub fn run_due(net: &mut Network, st: &State, now: u64) -> Result<(), String> {
    if let Some(cluster) = net.cluster.as_deref_mut() {
        let before = cluster.calico_starts.len();
        cluster.calico_starts.retain(|due| *due > now);
        if cluster.calico_starts.len() < before {
            // The replaced calico-node pods' containers start (every stopped node's at once);
            // a node that was NotReady meanwhile is Ready, and its kubelet starts what waited.
            super::command::start_calico_nodes(net, st, now)?;
            if let Some(cluster) = net.cluster.as_deref_mut() {
                cluster.reconcile(now);
            }
            return Ok(());
        }
        if cluster.kubernetes_service_due.is_some_and(|due| due <= now) {
            cluster.sync_kubernetes_service(now);
            return Ok(());
        }
    }
    let Some(r) = net
        .cluster
        .as_deref()
        .and_then(|c| c.rollout.clone())
        .filter(|r| r.due_ms <= now)
    else {
        return Ok(());
    };
    let node = r.order[r.current].clone();
    let calico_node = is_calico_node(&r.namespace, &r.daemonset);
    if r.stage == Stage::Start && calico_node {
        super::command::start_calico_nodes(net, st, now)?;
    }
    let ready = r.stage == Stage::Probe && (!calico_node || bird_ready(net, st, &node));
    let Some(cluster) = net.cluster.as_deref_mut() else {
        return Ok(());
    };
    match r.stage {
        Stage::Replace => {
            let owner = Owner::DaemonSet(r.daemonset.clone());
            let old = cluster
                .pods
                .iter()
                .find(|p| p.namespace == r.namespace && p.owner == owner && p.node.as_deref() == Some(&node))
                .map(|p| p.name.clone());
            if let Some(old) = old {
                kill_and_replace(cluster, &r.namespace, &old, now);
            }
            advance(cluster, Stage::Start, now + r.pod_start_ms);
        }
        // The first probe runs as the container starts (no initialDelaySeconds).
        Stage::Start => advance(cluster, Stage::Probe, now),
        Stage::Probe if !ready => {
            if let Some(rr) = cluster.rollout.as_mut() {
                rr.due_ms = now + READINESS_PERIOD_MS;
            }
        }
        Stage::Probe => {
            let desired = r.order.len();
            if r.current + 1 == desired {
                log(cluster, &r, status_text(&r.daemonset, desired, desired, desired));
                cluster.rollout = None;
            } else {
                // The pod became available: a status update before the next node's.
                log(cluster, &r, status_text(&r.daemonset, desired, r.current + 1, desired));
                if let Some(rr) = cluster.rollout.as_mut() {
                    rr.current += 1;
                    rr.stage = Stage::Replace;
                    rr.due_ms = now;
                }
            }
        }
    }
    Ok(())
}

/// Move the rollout to `stage` at `due`; a replacement is a status update (one more pod
/// updated, one fewer available).
fn advance(cluster: &mut Cluster, stage: Stage, due: u64) {
    let Some(r) = cluster.rollout.as_mut() else { return };
    let replaced = r.stage == Stage::Replace;
    r.stage = stage;
    r.due_ms = due;
    if replaced {
        let r = r.clone();
        log(cluster, &r, r.status());
    }
}

fn log(cluster: &mut Cluster, r: &Rollout, text: String) {
    cluster.rollout_log.push(StatusUpdate {
        namespace: r.namespace.clone(),
        daemonset: r.daemonset.clone(),
        text,
    });
}

/// `calico-node -bird-ready`: BIRD runs and every one of its BGP peers is Established.
fn bird_ready(net: &Network, st: &State, node: &str) -> bool {
    let Some(dev) = net.cluster.as_deref().and_then(|c| c.node(node)).map(|n| n.device) else {
        return false;
    };
    if net.device(dev).bird.is_none() {
        return false;
    }
    st.devices
        .get(dev.idx())
        .and_then(|d| d.bgp.as_ref())
        .is_some_and(|b| b.sessions.iter().all(|s| s.state == BgpState::Established))
}

/// The status updates of `namespace/daemonset` from `since` (an index into the cluster's
/// status log) on, as `kubectl rollout status` prints them while it waits.
pub fn status_lines(net: &Network, namespace: &str, daemonset: &str, since: usize) -> String {
    let Some(cluster) = net.cluster.as_deref() else {
        return String::new();
    };
    let mut out = String::new();
    for u in cluster.rollout_log.iter().skip(since) {
        if u.namespace == namespace && u.daemonset == daemonset {
            out.push_str(&u.text);
        }
    }
    out
}

/// The status `kubectl rollout status` prints first: the rollout's, or done when none runs.
pub(super) fn current_status(cluster: &Cluster, namespace: &str, daemonset: &str) -> String {
    match cluster.rollout.as_ref() {
        Some(r) if r.namespace == namespace && r.daemonset == daemonset => r.status(),
        _ => format!("daemon set \"{daemonset}\" successfully rolled out\n"),
    }
}

/// Why a rollout is still running (for a step that gave up waiting on it).
pub fn stuck(net: &Network, st: &State) -> Option<String> {
    let r = net.cluster.as_deref()?.rollout.as_ref()?;
    let node = &r.order[r.current];
    let why = match r.stage {
        Stage::Probe => {
            let waiting: Vec<String> = net
                .cluster
                .as_deref()
                .and_then(|c| c.node(node))
                .and_then(|n| st.devices.get(n.device.idx()))
                .and_then(|d| d.bgp.as_ref())
                .map(|b| {
                    b.sessions
                        .iter()
                        .filter(|s| s.state != BgpState::Established)
                        .map(|s| s.neighbor.to_string())
                        .collect()
                })
                .unwrap_or_default();
            if waiting.is_empty() {
                "its new pod is not Ready (calico-node -bird-ready: BIRD is not running)".to_string()
            } else {
                format!(
                    "its new pod is not Ready (calico-node -bird-ready: BGP not established with {})",
                    waiting.join(", ")
                )
            }
        }
        Stage::Replace | Stage::Start => "its new pod has not started".to_string(),
    };
    Some(format!(
        "the rollout of daemonset/{} is stuck on {node}: {why}; `kubectl rollout status` would wait forever",
        r.daemonset
    ))
}
