//! The scenario file: a topology and a list of runbook steps, each with an id, one change,
//! and expectations checked before, during (watched pings) and after it.

pub use crate::input::parse_duration;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use ipnet::Ipv4Net;
use regex::Regex;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::checks::RouteProtocol;
use super::fault::Fault;
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::engine::BgpState;
use crate::input::topology::yaml::{self, OrderedMap};
use crate::k8s::{FactsFor, PodEvent, PodFacts, PodTarget};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    topology: Spanned<String>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    pinned: RawPinned,
    #[serde(default)]
    timing: RawTiming,
    /// Addresses written into workload configuration (`scenario::hardcoded`).
    #[serde(default)]
    hardcoded: Vec<Spanned<RawHardcoded>>,
    #[serde(default)]
    steps: Vec<RawStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHardcoded {
    address: Spanned<String>,
    /// The config that holds it (free text: a file, a ConfigMap, an application).
    #[serde(rename = "in")]
    written_in: String,
}

/// `timing: static_pod_restart`'s default: no reference gives the time from a manifest edit to
/// the component serving again (the kubelet notices the file, stops the old container, starts
/// the new one, which then initialises); FIDELITY.md lists it as unverified.
const STATIC_POD_RESTART_MS: u64 = 20_000;

/// `timing: node_monitor_grace`'s default: kube-controller-manager's `--node-monitor-grace-period`
/// default in v1.28 (its flag reference; later releases raised it to 50s).
const NODE_MONITOR_GRACE_MS: u64 = 40_000;

/// Durations the references do not fix, set per scenario (FIDELITY.md lists the defaults).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTiming {
    /// A replaced DaemonSet pod's creation to its containers running (default 0s).
    pod_start: Option<Spanned<String>>,
    /// Between two probes of a watched ping (`expect: during:`; default 1s, ping's own).
    ping_interval: Option<Spanned<String>>,
    /// From a static-pod manifest's change to its component serving again (default 20s).
    static_pod_restart: Option<Spanned<String>>,
    /// kube-controller-manager's `--node-monitor-grace-period`: a stopped kubelet's Node goes
    /// NotReady that long after its last status (default 40s).
    node_monitor_grace: Option<Spanned<String>>,
}

/// Facts the references show but fabsim cannot derive (clarifications.md "Scripted facts").
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinned {
    /// Pods the cluster's controllers create: their names, their node, and (by list order) the
    /// order their CNI calls ran when several started at once.
    #[serde(default)]
    pods: Vec<Spanned<RawPinnedPod>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinnedPod {
    /// `NAMESPACE/NAME`.
    pod: String,
    node: Option<String>,
}

/// Guards on the simulation itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    /// Most paths one BGP speaker keeps for one prefix before a path-explosion finding.
    paths_per_prefix: Option<usize>,
    /// Most hosts and pods the per-step reachability matrix pings between (n² echoes a step).
    reach_endpoints: Option<usize>,
    /// Most protocol events one convergence run processes before the event-budget finding
    /// (a CI job bounds its wall time with it).
    events: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    id: Spanned<String>,
    name: Option<String>,
    /// Free text: why the step exists, with the reference it reproduces.
    note: Option<String>,
    on: Option<Spanned<String>>,
    config: Option<Spanned<String>>,
    netplan: Option<Spanned<String>>,
    /// A new BIRD configuration for a host (what confd renders), with its include files.
    bird: Option<Spanned<String>>,
    #[serde(default)]
    bird_includes: OrderedMap<Spanned<String>>,
    wait: Option<Spanned<String>>,
    /// Runbook commands typed on `on:`, one per line (`#` starts a comment line).
    run: Option<Spanned<String>>,
    /// What a `-f -` in `run:` reads (a heredoc or a pipe in the real runbook).
    stdin: Option<Spanned<String>>,
    /// Files the runbook wrote on `on:` before its commands (`cat << EOF > NAME`), by name; one
    /// under `/etc/kubernetes/manifests/` replaces that static pod's manifest.
    #[serde(default)]
    files: OrderedMap<Spanned<String>>,
    /// Devices powered off and on again (`[all]`: every device of the topology).
    reboot: Option<Spanned<Vec<String>>>,
    /// State the references show but fabsim cannot derive, put in place directly.
    inject: Option<Spanned<RawInject>>,
    /// The DHCP server now leases this address to `on:`'s interface (the host renews).
    lease: Option<Spanned<RawStepLease>>,
    /// A link, a port or a device breaks (cut cable, dead optic, power loss).
    fail: Option<Spanned<RawFault>>,
    /// What a `fail:` broke works again.
    restore: Option<Spanned<RawFault>>,
    #[serde(default)]
    expect: RawExpect,
}

/// Scripted facts (clarifications.md "Scripted facts are data too").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInject {
    /// IPAM allocations held from earlier, unshown history: each takes the node's next address
    /// for the handle (a tunnel handle also sets the Node's tunnel address, as allocateip does).
    #[serde(default)]
    ipam: Vec<RawHeldAllocation>,
    /// What pods' containers show that fabsim does not derive: readiness, status, restarts,
    /// logs, events. They hold until the pod is replaced or its node reboots.
    #[serde(default)]
    pods: Vec<Spanned<RawPodFacts>>,
}

/// Facts about one pod (`pod: NAMESPACE/NAME`) or the pods a label selector picks in a
/// namespace (`namespace:` + `selector:`, as `kubectl -n NS -l SELECTOR`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPodFacts {
    pod: Option<String>,
    namespace: Option<String>,
    selector: Option<String>,
    /// The READY column, `READY/TOTAL` containers (`0/1`).
    ready: Option<Spanned<String>>,
    /// The STATUS column (`CrashLoopBackOff`, `Running`).
    status: Option<String>,
    /// The container's restart count.
    restarts: Option<u32>,
    /// How long ago it last restarted (RESTARTS shows `325 (53s ago)`).
    last_restart: Option<Spanned<String>>,
    /// `kubectl logs POD`.
    log: Option<String>,
    /// `kubectl logs -p POD` (the previous container's log).
    previous_log: Option<String>,
    #[serde(default)]
    events: Vec<Spanned<RawPodEvent>>,
}

/// An event about the pod, as `kubectl describe pod` lists it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPodEvent {
    #[serde(rename = "type")]
    kind: Spanned<String>,
    reason: String,
    /// `source.component` (default kubelet).
    from: Option<String>,
    message: String,
    /// How many times it happened (default 1).
    count: Option<Spanned<u32>>,
    /// How long before the injection it first and last happened (default 0s; `first_seen`
    /// defaults to `last_seen`).
    first_seen: Option<Spanned<String>>,
    last_seen: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeldAllocation {
    node: String,
    handle: String,
}

/// `fail:` / `restore:` (see `fault`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    link: Option<Vec<String>>,
    interface: Option<String>,
    device: Option<String>,
    /// `fail: {device: D, for: 2m}`: off that long, then it boots.
    #[serde(rename = "for")]
    duration: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStepLease {
    interface: String,
    address: Ipv4Net,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    before: Vec<Spanned<RawCheck>>,
    #[serde(default)]
    after: Vec<Spanned<RawCheck>>,
    /// Pings left running while the step runs, and what they must see.
    #[serde(default)]
    during: Vec<Spanned<RawFlowCheck>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
enum RawFlowCheck {
    /// No probe is lost while the step runs.
    Reach { from: String, to: String },
    /// The longest run of lost probes (lost probes × interval) is within bounds, and the flow
    /// recovers before the step ends.
    Outage {
        from: String,
        to: String,
        at_least: Option<Spanned<String>>,
        at_most: Option<Spanned<String>>,
    },
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
enum RawCheck {
    /// A ping from a device gets an echo reply.
    Reach { from: String, to: String },
    /// A ping gets no reply; optionally, the ICMP error and who sent it.
    Unreachable {
        from: String,
        to: String,
        #[serde(default)]
        icmp_from: Option<Ipv4Addr>,
    },
    /// A route is (or is not) in a device's forwarding table, optionally from a protocol and
    /// through exactly these next hops.
    Route {
        on: String,
        prefix: Ipv4Net,
        #[serde(default = "yes")]
        present: bool,
        #[serde(default)]
        protocol: Option<RouteProtocol>,
        #[serde(default)]
        via: Option<Vec<Ipv4Addr>>,
    },
    /// A command's output contains these lines (whitespace-normalised) and not those; has
    /// these exact lines in this order; matches these regular expressions.
    Output {
        on: String,
        run: String,
        #[serde(default)]
        contains: Vec<String>,
        #[serde(default)]
        absent: Vec<String>,
        #[serde(default)]
        lines: Vec<String>,
        #[serde(default)]
        matches: Vec<Spanned<String>>,
    },
    /// A BGP session is in this state, as the speaker holds it.
    Session {
        on: String,
        peer: Ipv4Addr,
        state: BgpState,
    },
    /// A BGP session's prefix counts (`show ip bgp summary` PfxRcd / PfxAcc).
    Prefixes {
        on: String,
        neighbor: Ipv4Addr,
        #[serde(default)]
        received: Option<u32>,
        #[serde(default)]
        accepted: Option<u32>,
    },
    /// During a ping FROM → TO, `tcpdump -n -i INTERFACE` on ON shows these lines and not those.
    Capture {
        from: String,
        to: String,
        on: String,
        interface: String,
        #[serde(default = "one")]
        count: u32,
        #[serde(default)]
        contains: Vec<String>,
        #[serde(default)]
        absent: Vec<String>,
    },
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// What a step changes.
#[derive(Clone, Debug)]
pub enum Action {
    /// No change: a checkpoint on the state reached so far.
    Checkpoint,
    /// EOS configuration-mode lines on a switch.
    EosConfig {
        device: String,
        text: String,
        origin: TextOrigin,
    },
    /// A new BIRD configuration on a host (confd re-rendered it; BIRD reconfigures: protocols
    /// whose configuration changed restart, the others keep running).
    Bird {
        device: String,
        text: String,
        origin: TextOrigin,
        includes: BTreeMap<String, (String, TextOrigin)>,
    },
    /// A new netplan file on a Linux host, then `netplan apply`.
    Netplan {
        device: String,
        text: String,
        origin: TextOrigin,
    },
    /// Let virtual time pass.
    Wait { ms: u64 },
    /// Commands typed on a host's shell, in order (each with where it is written), and what
    /// `-f -` reads.
    Run {
        device: String,
        lines: Vec<(String, Span)>,
        stdin: Option<String>,
        files: BTreeMap<String, String>,
    },
    /// Devices power-cycled (none listed: all of them).
    Reboot { devices: Vec<String> },
    /// Scripted facts: IPAM allocations (node, handle) held from unshown history, and what
    /// pods' containers show.
    Inject {
        ipam: Vec<(String, String)>,
        pods: Vec<FactsFor>,
    },
    /// A link, port or device breaks (power back after `duration_ms`, if given); `span` is
    /// where the step names it.
    Fail {
        fault: Fault,
        duration_ms: Option<u64>,
        span: Span,
    },
    /// What a `fail:` broke works again.
    Restore { fault: Fault, span: Span },
    /// A new DHCP lease for a host's interface.
    Lease {
        device: String,
        interface: String,
        address: Ipv4Net,
    },
}

#[derive(Clone, Debug)]
pub enum Check {
    Reach {
        from: String,
        to: String,
    },
    Unreachable {
        from: String,
        to: String,
        icmp_from: Option<Ipv4Addr>,
    },
    Route {
        on: String,
        prefix: Ipv4Net,
        present: bool,
        protocol: Option<RouteProtocol>,
        via: Option<Vec<Ipv4Addr>>,
    },
    Output {
        on: String,
        run: String,
        contains: Vec<String>,
        absent: Vec<String>,
        lines: Vec<String>,
        matches: Vec<Regex>,
    },
    Session {
        on: String,
        peer: Ipv4Addr,
        state: BgpState,
    },
    Prefixes {
        on: String,
        neighbor: Ipv4Addr,
        received: Option<u32>,
        accepted: Option<u32>,
    },
    Capture {
        from: String,
        to: String,
        on: String,
        interface: String,
        count: u32,
        contains: Vec<String>,
        absent: Vec<String>,
    },
}

/// A ping FROM → TO left running during a step, and what it must see.
#[derive(Clone, Debug)]
pub struct FlowExpectation {
    pub from: String,
    pub to: String,
    pub check: FlowCheck,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum FlowCheck {
    Reach,
    /// Bounds on the longest outage, in ms.
    Outage {
        at_least: Option<u64>,
        at_most: Option<u64>,
    },
}

/// Scenario-wide durations (see `RawTiming`).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub pod_start_ms: u64,
    pub ping_interval_ms: u64,
    pub static_pod_restart_ms: u64,
    pub node_monitor_grace_ms: u64,
}

#[derive(Clone, Debug)]
pub struct Expectation {
    pub check: Check,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub id: String,
    pub name: Option<String>,
    pub note: Option<String>,
    pub action: Action,
    pub before: Vec<Expectation>,
    pub after: Vec<Expectation>,
    pub during: Vec<FlowExpectation>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub file: String,
    pub topology: PathBuf,
    pub topology_span: Span,
    /// `limits.paths_per_prefix` (the engine's default when absent).
    pub path_limit: Option<usize>,
    /// `limits.reach_endpoints` (`impact::DEFAULT_REACH_ENDPOINTS` when absent).
    pub reach_limit: Option<usize>,
    /// `limits.events` (`engine::DEFAULT_EVENT_BUDGET` when absent).
    pub event_budget: Option<u64>,
    /// The directory the scenario's relative file names (`kubectl apply -f FILE`) start from.
    pub base: PathBuf,
    pub pinned_pods: Vec<crate::k8s::Pin>,
    pub timing: Timing,
    pub hardcoded: Vec<super::hardcoded::Hardcoded>,
    pub steps: Vec<Step>,
}

impl Scenario {
    pub fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }
}

/// A YAML file is a scenario when it names a topology at its top level.
pub fn is_scenario(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("topology:"))
}

fn span_of<T>(file: &str, s: &Spanned<T>) -> Span {
    yaml::span(&root(file), &s.referenced)
}

fn root(file: &str) -> TextOrigin {
    TextOrigin {
        file: file.into(),
        line: 1,
        col: 1,
    }
}

pub fn load_scenario(path: &Path) -> Result<Scenario, InputError> {
    let file = path.display().to_string();
    let text = crate::input::read_text(path).map_err(|e| {
        Diagnostic::error(
            Span::new(&file, e.line, e.col),
            format!("cannot read scenario: {}", e.message),
        )
    })?;
    parse_scenario(&text, &file, path.parent().unwrap_or(Path::new(".")))
}

pub fn parse_scenario(text: &str, file: &str, base: &Path) -> Result<Scenario, InputError> {
    let raw: RawScenario = yaml::from_str(text, &root(file))?;
    let mut errors = Vec::new();
    let mut steps = Vec::new();
    for rs in raw.steps {
        match convert_step(rs, file, text) {
            Ok(s) => steps.push(s),
            Err(d) => errors.push(d),
        }
    }
    for (i, s) in steps.iter().enumerate() {
        if steps[..i].iter().any(|p| p.id == s.id) {
            errors.push(Diagnostic::error(
                s.span.clone(),
                format!("duplicate step id '{}'", s.id),
            ));
        }
    }
    let mut pinned_pods = Vec::new();
    for p in raw.pinned.pods {
        match p.value.pod.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() => pinned_pods.push(crate::k8s::Pin {
                namespace: ns.to_string(),
                name: name.to_string(),
                node: p.value.node.clone(),
            }),
            _ => errors.push(Diagnostic::error(
                span_of(file, &p),
                format!("expected `pod: NAMESPACE/NAME`, found `{}`", p.value.pod),
            )),
        }
    }
    let mut hardcoded = Vec::new();
    for h in &raw.hardcoded {
        match h.value.address.value.parse::<Ipv4Addr>() {
            Ok(address) => hardcoded.push(super::hardcoded::Hardcoded {
                address,
                written_in: h.value.written_in.clone(),
                span: span_of(file, h),
            }),
            Err(_) => errors.push(Diagnostic::error(
                span_of(file, &h.value.address),
                format!("expected an IPv4 address, found `{}`", h.value.address.value),
            )),
        }
    }
    let mut duration = |d: &Option<Spanned<String>>, default: u64| match d {
        None => default,
        Some(d) => duration_of(file, d).unwrap_or_else(|e| {
            errors.push(e);
            default
        }),
    };
    let timing = Timing {
        pod_start_ms: duration(&raw.timing.pod_start, 0),
        ping_interval_ms: duration(&raw.timing.ping_interval, 1000),
        static_pod_restart_ms: duration(&raw.timing.static_pod_restart, STATIC_POD_RESTART_MS),
        node_monitor_grace_ms: duration(&raw.timing.node_monitor_grace, NODE_MONITOR_GRACE_MS),
    };
    if timing.ping_interval_ms == 0 {
        if let Some(i) = &raw.timing.ping_interval {
            errors.push(Diagnostic::error(
                span_of(file, i),
                "ping_interval must be longer than 0s",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(InputError(errors));
    }
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| file.to_string()),
        description: raw.description,
        file: file.to_string(),
        topology: base.join(&raw.topology.value),
        topology_span: span_of(file, &raw.topology),
        path_limit: raw.limits.paths_per_prefix,
        reach_limit: raw.limits.reach_endpoints,
        event_budget: raw.limits.events,
        base: base.to_path_buf(),
        pinned_pods,
        timing,
        hardcoded,
        steps,
    })
}

fn duration_of(file: &str, d: &Spanned<String>) -> Result<u64, Diagnostic> {
    parse_duration(&d.value).ok_or_else(|| {
        Diagnostic::error(
            span_of(file, d),
            format!("expected a duration like 40s, 500ms or 2m, found '{}'", d.value),
        )
    })
}

fn convert_step(rs: RawStep, file: &str, text: &str) -> Result<Step, Diagnostic> {
    let span = span_of(file, &rs.id);
    let device = |what: &str| {
        rs.on.as_ref().map(|o| o.value.clone()).ok_or_else(|| {
            Diagnostic::error(
                span.clone(),
                format!("step '{}' has `{what}:` but no `on: DEVICE`", rs.id.value),
            )
        })
    };
    let kinds = [
        rs.config.is_some(),
        rs.netplan.is_some(),
        rs.bird.is_some(),
        rs.wait.is_some(),
        rs.run.is_some(),
        rs.lease.is_some(),
        rs.reboot.is_some(),
        rs.inject.is_some(),
        rs.fail.is_some(),
        rs.restore.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        return Err(Diagnostic::error(
            span,
            "a step does one thing: use only one of `config:`, `netplan:`, `bird:`, `wait:`, `run:`, `lease:`, `reboot:`, `inject:`",
        )
        .with_hint("split it into several steps with their own ids"));
    }
    let action = if let Some(c) = &rs.config {
        Action::EosConfig {
            device: device("config")?,
            text: c.value.clone(),
            origin: yaml::text_origin(c, text, &root(file)),
        }
    } else if let Some(n) = &rs.netplan {
        Action::Netplan {
            device: device("netplan")?,
            text: n.value.clone(),
            origin: yaml::text_origin(n, text, &root(file)),
        }
    } else if let Some(b) = &rs.bird {
        let includes = rs
            .bird_includes
            .0
            .iter()
            .map(|(name, t)| {
                (
                    name.value.clone(),
                    (t.value.clone(), yaml::text_origin(t, text, &root(file))),
                )
            })
            .collect();
        Action::Bird {
            device: device("bird")?,
            text: b.value.clone(),
            origin: yaml::text_origin(b, text, &root(file)),
            includes,
        }
    } else if let Some(w) = &rs.wait {
        Action::Wait {
            ms: duration_of(file, w)?,
        }
    } else if let Some(i) = &rs.inject {
        Action::Inject {
            ipam: i
                .value
                .ipam
                .iter()
                .map(|a| (a.node.clone(), a.handle.clone()))
                .collect(),
            pods: i
                .value
                .pods
                .iter()
                .map(|p| pod_facts_of(file, p))
                .collect::<Result<_, _>>()?,
        }
    } else if let Some(r) = &rs.reboot {
        let devices = if r.value.iter().any(|d| d == "all") {
            Vec::new()
        } else {
            r.value.clone()
        };
        Action::Reboot { devices }
    } else if let Some(f) = &rs.fail {
        let span = span_of(file, f);
        let fault = fault_of(&f.value, &span)?;
        let duration_ms = match (&fault, &f.value.duration) {
            (_, None) => None,
            (Fault::Device(_), Some(d)) => Some(duration_of(file, d)?),
            (_, Some(d)) => {
                return Err(Diagnostic::error(
                    span_of(file, d),
                    "`for:` is for a device (off for a while, then it boots); restore a link or interface with a later `restore:` step",
                ))
            }
        };
        Action::Fail {
            fault,
            duration_ms,
            span,
        }
    } else if let Some(r) = &rs.restore {
        let span = span_of(file, r);
        if let Some(d) = &r.value.duration {
            return Err(Diagnostic::error(
                span_of(file, d),
                "`for:` belongs to `fail:`, not `restore:`",
            ));
        }
        Action::Restore {
            fault: fault_of(&r.value, &span)?,
            span,
        }
    } else if let Some(l) = &rs.lease {
        Action::Lease {
            device: device("lease")?,
            interface: l.value.interface.clone(),
            address: l.value.address,
        }
    } else if let Some(r) = &rs.run {
        let origin = yaml::text_origin(r, text, &root(file));
        let lines = r
            .value
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| (l.trim().to_string(), origin.span_at(i, l.len() - l.trim_start().len())))
            .collect();
        Action::Run {
            device: device("run")?,
            lines,
            stdin: rs.stdin.as_ref().map(|t| t.value.clone()),
            files: rs
                .files
                .0
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect(),
        }
    } else {
        if let Some(o) = &rs.on {
            return Err(Diagnostic::error(
                span_of(file, o),
                "`on:` needs a change: `config:` (EOS), `netplan:`, `bird:` or `run:` (Linux)",
            ));
        }
        Action::Checkpoint
    };
    let conv = |v: Vec<Spanned<RawCheck>>| -> Result<Vec<Expectation>, Diagnostic> {
        v.into_iter()
            .map(|c| {
                let span = span_of(file, &c);
                Ok(Expectation {
                    check: convert_check(c.value, file, &span)?,
                    span,
                })
            })
            .collect()
    };
    let mut during = Vec::new();
    for c in rs.expect.during {
        let span = span_of(file, &c);
        let (from, to, check) = match c.value {
            RawFlowCheck::Reach { from, to } => (from, to, FlowCheck::Reach),
            RawFlowCheck::Outage {
                from,
                to,
                at_least,
                at_most,
            } => {
                let bound = |b: &Option<Spanned<String>>| b.as_ref().map(|b| duration_of(file, b)).transpose();
                let check = FlowCheck::Outage {
                    at_least: bound(&at_least)?,
                    at_most: bound(&at_most)?,
                };
                (from, to, check)
            }
        };
        during.push(FlowExpectation { from, to, check, span });
    }
    Ok(Step {
        id: rs.id.value,
        name: rs.name,
        note: rs.note,
        action,
        before: conv(rs.expect.before)?,
        after: conv(rs.expect.after)?,
        during,
        span,
    })
}

/// `inject: pods:` entry → the facts and the pods they are for.
fn pod_facts_of(file: &str, p: &Spanned<RawPodFacts>) -> Result<FactsFor, Diagnostic> {
    let span = span_of(file, p);
    let raw = &p.value;
    let target = match (&raw.pod, &raw.namespace, &raw.selector) {
        (Some(pod), None, None) => match pod.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() => PodTarget::Name {
                namespace: ns.into(),
                name: name.into(),
            },
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!("expected `pod: NAMESPACE/NAME`, found `{pod}`"),
                ))
            }
        },
        (None, Some(ns), Some(sel)) => PodTarget::Selector {
            namespace: ns.clone(),
            selector: sel.clone(),
        },
        _ => {
            return Err(Diagnostic::error(
                span,
                "name the pods with `pod: NAMESPACE/NAME`, or with `namespace:` and `selector: KEY=VALUE`",
            ))
        }
    };
    if let Some(r) = &raw.ready {
        let counts = r.value.split_once('/');
        if !counts.is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok()) {
            return Err(Diagnostic::error(
                span_of(file, r),
                format!("expected `ready: READY/TOTAL` (like 0/1), found `{}`", r.value),
            ));
        }
    }
    let ago = |d: &Option<Spanned<String>>| d.as_ref().map(|d| duration_of(file, d)).transpose();
    let mut events = Vec::new();
    for e in &raw.events {
        let kind = &e.value.kind;
        if kind.value != "Normal" && kind.value != "Warning" {
            return Err(Diagnostic::error(
                span_of(file, kind),
                format!(
                    "expected an event `type: Normal` or `type: Warning`, found `{}`",
                    kind.value
                ),
            ));
        }
        let count = match &e.value.count {
            Some(c) if c.value == 0 => {
                return Err(Diagnostic::error(span_of(file, c), "an event's `count` is at least 1"));
            }
            Some(c) => c.value,
            None => 1,
        };
        let last = ago(&e.value.last_seen)?.unwrap_or(0);
        events.push(PodEvent {
            kind: kind.value.clone(),
            reason: e.value.reason.clone(),
            from: e.value.from.clone().unwrap_or_else(|| "kubelet".into()),
            message: e.value.message.clone(),
            count,
            first_seen_ago_ms: ago(&e.value.first_seen)?.unwrap_or(last),
            last_seen_ago_ms: last,
        });
    }
    Ok(FactsFor {
        target,
        facts: PodFacts {
            injected_ms: 0,
            ready: raw.ready.as_ref().map(|r| r.value.clone()),
            status: raw.status.clone(),
            restarts: raw.restarts,
            last_restart_ago_ms: ago(&raw.last_restart)?,
            log: raw.log.clone(),
            previous_log: raw.previous_log.clone(),
            // Injected facts say what the seed showed; only a derived crash backs off.
            crash_loop_since_ms: None,
            events,
        },
    })
}

fn fault_of(f: &RawFault, span: &Span) -> Result<Fault, Diagnostic> {
    Fault::parse(f.link.as_deref(), f.interface.as_deref(), f.device.as_deref())
        .map_err(|e| Diagnostic::error(span.clone(), e))
}

fn convert_check(c: RawCheck, file: &str, span: &Span) -> Result<Check, Diagnostic> {
    Ok(match c {
        RawCheck::Reach { from, to } => Check::Reach { from, to },
        RawCheck::Unreachable { from, to, icmp_from } => Check::Unreachable { from, to, icmp_from },
        RawCheck::Route {
            on,
            prefix,
            present,
            protocol,
            via,
        } => Check::Route {
            on,
            prefix,
            present,
            protocol,
            via,
        },
        RawCheck::Output {
            on,
            run,
            contains,
            absent,
            lines,
            matches,
        } => Check::Output {
            on,
            run,
            contains,
            absent,
            lines,
            matches: matches
                .iter()
                .map(|m| super::checks::compile_pattern(&m.value).map_err(|e| Diagnostic::error(span_of(file, m), e)))
                .collect::<Result<_, _>>()?,
        },
        RawCheck::Session { on, peer, state } => Check::Session { on, peer, state },
        RawCheck::Prefixes {
            on,
            neighbor,
            received,
            accepted,
        } => {
            if received.is_none() && accepted.is_none() {
                return Err(Diagnostic::error(
                    span.clone(),
                    format!("`prefixes` on {on} for {neighbor} needs `received: N`, `accepted: N` or both"),
                ));
            }
            Check::Prefixes {
                on,
                neighbor,
                received,
                accepted,
            }
        }
        RawCheck::Capture {
            from,
            to,
            on,
            interface,
            count,
            contains,
            absent,
        } => Check::Capture {
            from,
            to,
            on,
            interface,
            count,
            contains,
            absent,
        },
    })
}
