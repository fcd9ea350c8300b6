//! `kubectl drain NODE… [--ignore-daemonsets] [--delete-emptydir-data] [--force]
//! [--disable-eviction] [--timeout=DURATION]`, as kubectl v1.28 runs it (kubernetes/kubectl
//! at tag v0.28.15: `pkg/cmd/drain/drain.go` `RunDrain`/`deleteOrEvictPodsSimple`,
//! `pkg/drain/drain.go` `evictPods`/`deletePods`/`waitForDelete`, `pkg/drain/filters.go`).
//!
//! Cordon, then per node: the pods bound to it through drain's filters in their order
//! (DaemonSet, mirror, local storage, unreplicated — a pod's status is the last filter's, so
//! the local-storage warning never survives the unreplicated filter), then each pod evicted
//! through the Eviction API (`disruption`): a 429 from a PodDisruptionBudget is printed and
//! retried every 5 s; an evicted pod is waited for until it is gone (`termination`: a
//! finalizer or a stopped kubelet keeps it Terminating). `--disable-eviction` deletes instead,
//! bypassing the budgets.
//!
//! The retries run in virtual time, as a timeline of 5 s rounds: the disruption controller
//! syncs between rounds (a Deployment's replacement is Running at once in fabsim, so a budget
//! that allowed one disruption allows the next one round later). Nothing else changes while
//! the command runs, so a round that evicts nothing is repeated identically forever: with
//! `--timeout` the retries run to it and kubectl's timeout error ends the node; without one
//! kubectl would wait forever, and fabsim stops there instead (`DrainNote`, the finding).
//!
//! kubectl evicts pods concurrently and lists errors and warnings from Go maps, so their
//! order varies between runs; fabsim prints them in the API's list order (namespace, name)
//! and the filters' order.

use std::collections::BTreeMap;

use super::cluster::{Cluster, Owner};
use super::command::CommandOutcome;
use super::disruption::{Verdict, TOO_MANY_REQUESTS};
use super::node_ops::{cluster_mut, existing_nodes, parse, set_unschedulable};
use crate::model::Network;

/// Why drain will not evict a pod (`pkg/drain/filters.go`), in filter order.
const DAEMONSET_FATAL: &str = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
const DAEMONSET_WARNING: &str = "ignoring DaemonSet-managed Pods";
const LOCAL_STORAGE_FATAL: &str = "Pods with local storage (use --delete-emptydir-data to override)";
const UNMANAGED_FATAL: &str = "Pods declare no controller (use --force to override)";
const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";

/// kubectl's pause after a 429 (`evictPods`: "will retry after 5s").
const RETRY_MS: u64 = 5_000;
/// `waitForDelete`'s poll interval.
const POLL_MS: u64 = 1_000;
/// How far fabsim runs a drain's retries in virtual time before it stops waiting with a
/// finding (the same hour `kubectl rollout status` is followed for).
const MAX_DRAIN_MS: u64 = 3_600_000;

/// A node's last drain that did not finish (fabsim stopped the endless retries) or used
/// `--force`: what the C19 findings report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainNote {
    /// Why the drain would never finish.
    pub blocked: Option<String>,
    /// `--force` was given: the pods without a controller it deleted for good.
    pub forced: Option<Vec<String>>,
}

/// What happened to one pod the drain evicts or deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fate {
    /// Not evicted yet: the next attempt is due.
    Evicting,
    /// Evicted (or deleted) at this offset; waiting for it to be gone.
    Waiting(u64),
    Gone,
    /// kubectl's error for it.
    Failed(String),
}

struct Target {
    namespace: String,
    name: String,
    fate: Fate,
    /// The budget that last refused it: (name, its ALLOWED DISRUPTIONS).
    refused_by: Option<(String, i64)>,
}

/// `kubectl drain …`. `busy_ms` of the outcome is how long the retries took in virtual time.
pub(super) fn drain(net: &mut Network, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let p = parse(
        "drain",
        args,
        &[
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--force",
            "--disable-eviction",
            "--timeout=",
        ],
    )?;
    let names: Vec<String> = p.words.iter().map(|w| w.to_string()).collect();
    if names.is_empty() {
        return Ok(CommandOutcome::failed(
            "error: USAGE: drain NODE [flags]\nSee 'kubectl drain -h' for help and examples\n",
        ));
    }
    let timeout = match p.value("--timeout").map(go_duration) {
        None => None,
        Some(Ok(0)) => None,
        Some(Ok(ms)) => Some(ms),
        // Go's other forms (`1.5m`, `300us`, a sign): valid for kubectl, not read by fabsim.
        Some(Err(bad)) if bad.chars().all(|c| c.is_ascii_digit() || "+-.hmsunµ".contains(c)) => {
            return Err(format!(
                "`kubectl drain --timeout={bad}`: fabsim reads whole h, m, s and ms terms (like 90s, 1h30m)"
            ))
        }
        Some(Err(bad)) => {
            return Ok(CommandOutcome::failed(format!(
                "error: invalid argument \"{bad}\" for \"--timeout\" flag: time: invalid duration \"{bad}\"\n\
                 See 'kubectl drain -h' for help and examples\n"
            )))
        }
    };
    let opts = Options {
        ignore_ds: p.has("--ignore-daemonsets"),
        delete_emptydir: p.has("--delete-emptydir-data"),
        force: p.has("--force"),
        evict: !p.has("--disable-eviction"),
        timeout,
    };
    let cluster = cluster_mut(net)?;
    if let Err(outcome) = existing_nodes(cluster, &names) {
        return Ok(outcome);
    }
    let mut out = set_unschedulable(cluster, &names, true);
    let mut fatal: Vec<Vec<String>> = Vec::new();
    let mut pending = Vec::new();
    let mut busy_ms = 0;
    for node in &names {
        let (errors, warnings, targets) = filter(cluster, node, &opts);
        if !errors.is_empty() {
            let errs: Vec<String> = errors
                .values()
                .map(|(msg, pods)| format!("cannot delete {msg}: {}", pods.join(", ")))
                .collect();
            out += &format!(
                "error: unable to drain node \"{node}\" due to error:{}, continuing command...\n",
                aggregate(&errs)
            );
            fatal.push(errs);
            pending.push(node.clone());
            continue;
        }
        if !warnings.is_empty() {
            let w: Vec<String> = warnings
                .values()
                .map(|(msg, pods)| format!("{msg}: {}", pods.join(", ")))
                .collect();
            out += &format!("Warning: {}\n", w.join("; "));
        }
        let forced: Vec<String> = if opts.force {
            warnings.get(&2).map(|(_, pods)| pods.clone()).unwrap_or_default()
        } else {
            Vec::new()
        };
        let start = now + busy_ms;
        let (targets, text, elapsed) = run_timeline(cluster, targets, &opts, start);
        out += &text;
        busy_ms += elapsed;
        let note = DrainNote {
            blocked: None,
            forced: opts.force.then_some(forced),
        };
        if let Some(blocked) = blocked(cluster, node, &targets, &opts) {
            out += &format!(
                "(fabsim: nothing else changes while the drain waits, so kubectl would wait forever; stopped \
                 after {}s of virtual time, see the findings)\n",
                elapsed / 1000
            );
            cluster.drains.insert(
                node.clone(),
                DrainNote {
                    blocked: Some(blocked),
                    ..note
                },
            );
            return Ok(CommandOutcome {
                busy_ms,
                ..CommandOutcome::failed(out)
            });
        }
        match note.forced {
            Some(_) => cluster.drains.insert(node.clone(), note),
            None => cluster.drains.remove(node),
        };
        let errs: Vec<String> = targets
            .iter()
            .filter_map(|t| match &t.fate {
                Fate::Failed(e) => Some(e.clone()),
                _ => None,
            })
            .collect();
        if errs.is_empty() {
            out += &format!("node/{node} drained\n");
            continue;
        }
        // deleteOrEvictPodsSimple lists the node's pods again: those still there that the
        // filters would evict.
        let (_, _, left) = filter(cluster, node, &opts);
        let joined = aggregate(&errs);
        if !left.is_empty() {
            out += &format!("There are pending pods in node \"{node}\" when an error occurred: {joined}\n");
            for t in &left {
                out += &format!("pod/{}\n", t.name);
            }
        }
        out += &format!("error: unable to drain node \"{node}\" due to error:{joined}, continuing command...\n");
        fatal.push(errs);
        pending.push(node.clone());
    }
    if pending.is_empty() {
        return Ok(CommandOutcome {
            busy_ms,
            ..CommandOutcome::ok(out)
        });
    }
    out += "There are pending nodes to be drained:\n";
    for node in &pending {
        out += &format!(" {node}\n");
    }
    // `cmdutil.CheckErr` of the aggregate: one node's errors one per line, without a prefix;
    // several nodes' as one line each, aggregated again.
    match fatal.as_slice() {
        [one] => one.iter().for_each(|e| out += &format!("{e}\n")),
        many => many.iter().for_each(|errs| out += &format!("{}\n", aggregate(errs))),
    }
    Ok(CommandOutcome {
        busy_ms,
        ..CommandOutcome::failed(out)
    })
}

struct Options {
    ignore_ds: bool,
    delete_emptydir: bool,
    force: bool,
    /// Through the Eviction API (else `--disable-eviction`: plain deletes).
    evict: bool,
    /// `--timeout` (None: 0, wait forever).
    timeout: Option<u64>,
}

/// Each filter's message with the pods it stopped (errors) or let pass with a warning, by
/// filter position, and the pods to evict.
type Filtered = (
    BTreeMap<usize, (&'static str, Vec<String>)>,
    BTreeMap<usize, (&'static str, Vec<String>)>,
    Vec<Target>,
);

/// `GetPodsForDeletion`: the pods bound to `node` through drain's filters, in list order.
fn filter(cluster: &Cluster, node: &str, opts: &Options) -> Filtered {
    let mut pods: Vec<_> = cluster
        .pods
        .iter()
        .filter(|p| p.node.as_deref() == Some(node))
        .collect();
    pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let (mut errors, mut warnings) = (BTreeMap::new(), BTreeMap::new());
    let mut evict = Vec::new();
    for p in pods {
        let id = format!("{}/{}", p.namespace, p.name);
        let mut error = |at: usize, msg: &'static str| errors.entry(at).or_insert((msg, vec![])).1.push(id.clone());
        match p.owner {
            Owner::DaemonSet(_) if opts.ignore_ds => {
                warnings.entry(0).or_insert((DAEMONSET_WARNING, vec![])).1.push(id);
                continue;
            }
            Owner::DaemonSet(_) => {
                error(0, DAEMONSET_FATAL);
                continue;
            }
            // A static pod's API object is a mirror pod, which drain skips.
            Owner::Static => continue,
            _ => {}
        }
        if p.declared.empty_dir && !opts.delete_emptydir {
            error(1, LOCAL_STORAGE_FATAL);
            continue;
        }
        // With --delete-emptydir-data the local-storage filter warns, but the unreplicated
        // filter that follows sets the pod's status again: that warning is never printed.
        if p.owner == Owner::Bare {
            if !opts.force {
                error(2, UNMANAGED_FATAL);
                continue;
            }
            warnings.entry(2).or_insert((UNMANAGED_WARNING, vec![])).1.push(id);
        }
        evict.push(Target {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            fate: Fate::Evicting,
            refused_by: None,
        });
    }
    (errors, warnings, evict)
}

/// `utilerrors.Aggregate.Error()`: one message as is, several as `[a, b]`.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The evictions (or deletes) of one node's pods over virtual time from `start`: the pods'
/// fates, what kubectl printed, and how long it took.
fn run_timeline(
    cluster: &mut Cluster,
    mut targets: Vec<Target>,
    opts: &Options,
    start: u64,
) -> (Vec<Target>, String, u64) {
    let mut out = String::new();
    let timeout = opts.timeout.filter(|t| *t <= MAX_DRAIN_MS);
    if !opts.evict {
        // deletePods: every delete first, then one wait for all of them.
        for t in &mut targets {
            cluster.delete_pod(&t.namespace, &t.name, start);
            t.fate = Fate::Waiting(0);
        }
        let end = wait_for_delete(cluster, &mut targets, "deleted", timeout, &mut out);
        return (targets, out, end);
    }
    let mut at = 0;
    loop {
        // The controller has synced since the last round: budgets start from their status.
        let mut granted: BTreeMap<String, i64> = BTreeMap::new();
        let mut progress = false;
        for t in targets.iter_mut().filter(|t| t.fate == Fate::Evicting) {
            out += &format!("evicting pod {}/{}\n", t.namespace, t.name);
            if timeout.is_some_and(|d| at >= d) {
                t.fate = Fate::Failed(format!(
                    "error when evicting pods/\"{}\" -n \"{}\": global timeout reached: {}",
                    t.name,
                    t.namespace,
                    go_duration_string(opts.timeout.unwrap_or_default())
                ));
                continue;
            }
            let Some(pod) = cluster.pod(&t.namespace, &t.name).cloned() else {
                // NotFound: nothing to wait for, and nothing printed.
                t.fate = Fate::Gone;
                continue;
            };
            match cluster.eviction_verdict(&pod, &granted) {
                Verdict::Evict => {
                    if let Some(pdb) = cluster.pdb_for(&pod).map(|b| b.name.clone()) {
                        *granted.entry(pdb).or_default() += 1;
                    }
                    cluster.delete_pod(&t.namespace, &t.name, start + at);
                    t.fate = Fate::Waiting(at);
                    progress = true;
                }
                Verdict::TooManyRequests { pdb, allowed } => {
                    out += &format!(
                        "error when evicting pods/\"{}\" -n \"{}\" (will retry after 5s): {TOO_MANY_REQUESTS}\n",
                        t.name, t.namespace
                    );
                    t.refused_by = Some((pdb, allowed));
                }
                Verdict::Refused(why) => {
                    t.fate = Fate::Failed(format!(
                        "error when evicting pods/\"{}\" -n \"{}\": {why}",
                        t.name, t.namespace
                    ));
                }
            }
        }
        let gone_before = targets.iter().filter(|t| t.fate == Fate::Gone).count();
        let end = wait_for_delete(cluster, &mut targets, "evicted", timeout, &mut out);
        progress |= targets.iter().filter(|t| t.fate == Fate::Gone).count() > gone_before;
        let evicting = targets.iter().any(|t| t.fate == Fate::Evicting);
        if !evicting {
            return (targets, out, end.max(at));
        }
        // A round without progress repeats forever: run it to the timeout, or stop.
        if !progress && timeout.is_none() {
            return (targets, out, at);
        }
        at += RETRY_MS;
    }
}

/// `waitForDelete` of the pods evicted or deleted so far: the ones gone print `pod/NAME
/// VERB`; one still there will not go while the command runs (nothing else changes), so
/// with a timeout it fails at the first poll past it. Returns when the last wait ended.
fn wait_for_delete(
    cluster: &Cluster,
    targets: &mut [Target],
    verb: &str,
    timeout: Option<u64>,
    out: &mut String,
) -> u64 {
    let mut end = 0;
    for t in targets.iter_mut() {
        let Fate::Waiting(since) = t.fate else { continue };
        if cluster.pod(&t.namespace, &t.name).is_none() {
            *out += &format!("pod/{} {verb}\n", t.name);
            t.fate = Fate::Gone;
            end = end.max(since);
        } else if let Some(d) = timeout {
            let polls = d.saturating_sub(since).div_ceil(POLL_MS);
            let at = since + polls * POLL_MS;
            let why = if verb == "deleted" {
                // deletePods polls with the timeout itself: wait's own error.
                "timed out waiting for the condition".to_string()
            } else {
                format!(
                    "error when waiting for pod \"{}\" in namespace \"{}\" to terminate: global timeout reached: {}",
                    t.name,
                    t.namespace,
                    go_duration_string(d)
                )
            };
            t.fate = Fate::Failed(why);
            end = end.max(at);
        }
    }
    end
}

/// The finding for a drain fabsim stopped: the first pod that can never be evicted or never
/// goes, and why. None when the drain ended (drained, or failed by its timeout).
fn blocked(cluster: &Cluster, node: &str, targets: &[Target], opts: &Options) -> Option<String> {
    if opts.timeout.is_some_and(|t| t <= MAX_DRAIN_MS) {
        return None;
    }
    let tail = "(k8s-cidr-migrations.md §2.5 stuck drains, §5 C19)";
    if let Some(t) = targets.iter().find(|t| t.fate == Fate::Evicting) {
        let (pdb, allowed) = t.refused_by.clone().unwrap_or_default();
        return Some(format!(
            "drain of {node} blocked: evicting {}/{} would violate PodDisruptionBudget {}/{pdb} (ALLOWED DISRUPTIONS \
             {allowed}): kubectl drain would retry forever {tail}",
            t.namespace, t.name, t.namespace
        ));
    }
    let t = targets.iter().find(|t| matches!(t.fate, Fate::Waiting(_)))?;
    let pod = cluster.pod(&t.namespace, &t.name)?;
    let mut why = Vec::new();
    if !pod.declared.finalizers.is_empty() {
        why.push(format!("finalizers [{}]", pod.declared.finalizers.join(" ")));
    }
    if let Some(n) = pod.node.as_deref().filter(|n| !cluster.kubelet_running(n)) {
        why.push(format!("kubelet on {n} stopped"));
    }
    Some(format!(
        "drain of {node} blocked: pod {}/{} stays Terminating ({}): kubectl drain waits for it forever {tail}",
        t.namespace,
        t.name,
        why.join("; ")
    ))
}

impl Cluster {
    /// C19 after every step: the drains fabsim stopped and the ones that used `--force`.
    pub fn drain_findings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (node, note) in &self.drains {
            out.extend(note.blocked.clone());
            if let Some(forced) = &note.forced {
                let what = if forced.is_empty() {
                    "no pod needed it".to_string()
                } else {
                    format!(
                        "pods that declare no controller deleted for good: {}",
                        forced.join(", ")
                    )
                };
                out.push(format!(
                    "kubectl drain {node} used --force ({what}): k8s-cidr-migrations.md §2.6 P1-9, §5 C19 say do not \
                     start with --force"
                ));
            }
        }
        out
    }
}

/// Go's `time.ParseDuration` for what a runbook writes (`90s`, `5m`, `1h30m`, `500ms`, `0`):
/// milliseconds, or the text back when it is not a duration.
fn go_duration(text: &str) -> Result<u64, String> {
    crate::input::parse_go_duration(text).ok_or_else(|| text.to_string())
}

/// Go's `time.Duration.String()` of whole milliseconds: `1m0s`, `1h30m0s`, `5s`, `1.5s`,
/// `500ms`.
pub(super) fn go_duration_string(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (h, m) = (ms / 3_600_000, ms / 60_000 % 60);
    let (s, frac) = (ms / 1000 % 60, ms % 1000);
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        format!("{s}.{}s", format!("{frac:03}").trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_print_as_go_does() {
        assert_eq!(go_duration("90s"), Ok(90_000));
        assert_eq!(go_duration("1h30m"), Ok(5_400_000));
        assert_eq!(go_duration("5x"), Err("5x".to_string()));
        assert_eq!(go_duration_string(60_000), "1m0s");
        assert_eq!(go_duration_string(5_400_000), "1h30m0s");
        assert_eq!(go_duration_string(1_500), "1.5s");
        assert_eq!(go_duration_string(45_000), "45s");
    }
}
