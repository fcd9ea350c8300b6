//! Running a scenario: apply each step to the engine, converge, diff routing tables, check
//! expectations.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;

use ipnet::Ipv4Net;

use serde::Serialize;

use super::checks;
use super::clock::{evaluate_during, pass_time, FlowReport, Until, Watch};
use super::explain::explain_probe;
use super::fabric::{Fabric, FabricState};
use super::fault;
use super::file::{is_scenario, load_scenario, Action, Check, Expectation, Scenario, Step, Timing};
use super::hardcoded;
use super::impact::{peer_changes, PeerChange, ReachDelta, ReachGrid, ReachMatrix, DEFAULT_REACH_ENDPOINTS};
use super::tap::Tap;
use crate::dataplane::{probe, IcmpError, Probe, ProbeKind, ProbeOutcome};
use crate::diag::{Diagnostic, InputError, Span};
use crate::engine::{Engine, Fib, Route, State};
use crate::input::{bird, containerlab, eos, netplan, topology};
use crate::k8s::{self, Pin};
use crate::model::{DeviceId, DeviceKind, IfId, Network};
use crate::views;

/// What a file opened: a topology (no steps) or a scenario over one.
pub struct Opened {
    pub scenario: Option<Scenario>,
    pub topology_name: String,
    pub net: Network,
    pub warnings: Vec<Diagnostic>,
}

/// Open FILE, which is a topology or a scenario.
pub fn open(path: &Path) -> Result<Opened, InputError> {
    let file = path.display().to_string();
    if path.is_dir() {
        // A snapshot directory is a topology (`input::snapshot`).
        let loaded = topology::load_topology(path)?;
        return Ok(Opened {
            topology_name: loaded.name,
            net: loaded.net,
            warnings: loaded.warnings,
            scenario: None,
        });
    }
    let text = crate::input::read_text(path).map_err(|e| {
        Diagnostic::error(
            Span::new(&file, e.line, e.col),
            format!("cannot read file: {}", e.message),
        )
    })?;
    // A containerlab topology has a top-level `topology:` too (holding its nodes).
    if is_scenario(&text) && !containerlab::is_containerlab(path, &text) {
        let scn = load_scenario(path)?;
        let loaded = topology::load_topology(&scn.topology).map_err(|e| {
            let mut ds = e.0;
            if ds.iter().all(|d| d.span.file != scn.topology.display().to_string()) {
                ds.insert(
                    0,
                    Diagnostic::error(scn.topology_span.clone(), "cannot load the scenario's topology"),
                );
            }
            InputError(ds)
        })?;
        Ok(Opened {
            topology_name: loaded.name,
            net: loaded.net,
            warnings: loaded.warnings,
            scenario: Some(scn),
        })
    } else {
        let loaded = topology::load_topology(path)?;
        Ok(Opened {
            topology_name: loaded.name,
            net: loaded.net,
            warnings: loaded.warnings,
            scenario: None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum When {
    Before,
    /// Over the step, from the pings it watched.
    During,
    After,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub when: When,
    pub what: String,
    pub ok: bool,
    pub detail: String,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct StepReport {
    pub id: String,
    pub name: Option<String>,
    pub change: String,
    /// Virtual time the step started and when its last routing change happened.
    pub start_ms: u64,
    pub settled_ms: u64,
    pub quiet: bool,
    pub route_changes: Vec<String>,
    /// Problems the engine found while converging (oscillation, path explosion).
    pub findings: Vec<String>,
    pub warnings: Vec<Diagnostic>,
    pub checks: Vec<CheckResult>,
    /// What each runbook command of the step printed.
    pub commands: Vec<CommandRecord>,
    /// The pings the step watched while it ran (`expect: during:`).
    pub flows: Vec<FlowReport>,
    /// BGP sessions and OSPF adjacencies the step brought down or up.
    pub peers: Vec<PeerChange>,
    /// Reachability between every host and pod after the step, and what the step changed
    /// (None: not computed, see the findings).
    pub reach: Option<ReachDelta>,
    /// Cables down, devices off and every BGP session after the step (for the drawing).
    pub fabric: FabricState,
}

/// One runbook command as typed, its output and exit status.
#[derive(Clone, Debug, Serialize)]
pub struct CommandRecord {
    pub device: String,
    pub command: String,
    pub output: String,
    pub status: i32,
}

impl StepReport {
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| !c.ok).count()
    }
}

/// The engine after the topology's converged start, and after each step run so far.
pub struct Run {
    pub engine: Engine,
    /// The topology's devices and cables, as the drawings show them.
    pub fabric: Fabric,
    pub start: StepReport,
    pub steps: Vec<StepReport>,
    /// The run's own pings and traceroutes (checks, runbook commands, watched pings) on the
    /// interfaces [`run_captured`] tapped.
    pub tap: Tap,
}

impl Run {
    /// Every expectation that did not hold, with the step it belongs to.
    pub fn failures(&self) -> impl Iterator<Item = (&StepReport, &CheckResult)> {
        self.steps
            .iter()
            .flat_map(|s| s.checks.iter().filter(|c| !c.ok).map(move |c| (s, c)))
    }
}

/// Converge the topology, then run the scenario's steps up to and including `until` (all
/// steps if `None`).
pub fn run(opened: &Opened, until: Option<&str>) -> Result<Run, InputError> {
    run_seeded(opened, until, crate::engine::DEFAULT_SEED)
}

/// [`run`] with the seed of the run's random timing (BIRD's timer jitter, BGP message delays).
pub fn run_seeded(opened: &Opened, until: Option<&str>, seed: u64) -> Result<Run, InputError> {
    run_watched(opened, until, seed, &mut |_, _, _| {})
}

/// [`run_seeded`], showing `after_step` the engine and the step's reachability matrix (None
/// when not computed) once each step has run (`--seeds` reads each step's outcome there).
pub fn run_watched(
    opened: &Opened,
    until: Option<&str>,
    seed: u64,
    after_step: &mut dyn FnMut(&StepReport, &Engine, Option<&ReachMatrix>),
) -> Result<Run, InputError> {
    run_with(opened, until, seed, None, after_step)
}

/// [`run_seeded`], keeping every BGP message the run sends, with the network path of those
/// that cross `taps` (`Engine::record_bgp_wire`), the OSPF packets `taps` see
/// (`Engine::record_ospf_wire`) and the run's own pings and traceroutes on them
/// ([`Run::tap`]), for captures.
pub fn run_captured(opened: &Opened, until: Option<&str>, seed: u64, taps: BTreeSet<IfId>) -> Result<Run, InputError> {
    run_with(opened, until, seed, Some(taps), &mut |_, _, _| {})
}

fn run_with(
    opened: &Opened,
    until: Option<&str>,
    seed: u64,
    taps: Option<BTreeSet<IfId>>,
    after_step: &mut dyn FnMut(&StepReport, &Engine, Option<&ReachMatrix>),
) -> Result<Run, InputError> {
    let mut engine = Engine::new(opened.net.clone());
    engine.set_seed(seed);
    // Nothing tapped, nothing logged: `fabsim run` passes its `--pcap` points, usually none,
    // and a log without taps kept every BGP message and flooded every LSA change into
    // packets no capture reads — in a large fabric's converge, more than the SPF runs.
    let tap = match taps.filter(|t| !t.is_empty()) {
        Some(taps) => {
            engine.record_bgp_wire(taps.clone());
            engine.record_ospf_wire(taps.clone());
            Tap::new(taps)
        }
        None => Tap::default(),
    };
    if let Some(limit) = opened.scenario.as_ref().and_then(|s| s.path_limit) {
        engine.set_path_limit(limit);
    }
    if let Some(events) = opened.scenario.as_ref().and_then(|s| s.event_budget) {
        engine.set_event_budget(events);
    }
    let c = engine.run_until_quiet();
    let fabric = Fabric::of(engine.network());
    // A plain topology (a query, not a rehearsal) needs no matrix.
    let mut seen = Seen {
        matrix: None,
        findings: Vec::new(),
        limit: opened
            .scenario
            .as_ref()
            .map(|s| s.reach_limit.unwrap_or(DEFAULT_REACH_ENDPOINTS)),
        hardcoded: hardcoded::Watch::new(opened.scenario.as_ref().map_or(&[][..], |s| &s.hardcoded[..])),
    };
    let (reach, dataplane) = seen.observe(engine.network(), engine.state(), &fabric);
    // What each hard-coded address holds once the topology has converged is what it was
    // written for; nothing is stale yet.
    seen.hardcoded.check(engine.network(), engine.state());
    let start = StepReport {
        id: "start".into(),
        name: Some("topology boots and converges".into()),
        change: format!("power on {} devices", opened.net.devices.len()),
        start_ms: 0,
        settled_ms: c.routes_changed_ms,
        quiet: c.quiet,
        route_changes: Vec::new(),
        findings: c.findings.iter().cloned().chain(dataplane).collect(),
        warnings: opened.warnings.clone(),
        checks: Vec::new(),
        commands: Vec::new(),
        flows: Vec::new(),
        peers: Vec::new(),
        reach,
        fabric: FabricState::of(&fabric, engine.network(), engine.state()),
    };
    let mut run = Run {
        engine,
        fabric,
        start,
        steps: Vec::new(),
        tap,
    };
    let Some(scn) = &opened.scenario else {
        return match until {
            Some(id) => Err(Diagnostic::error(
                Span::new(opened.topology_name.clone(), 1, 1),
                format!("--step {id}: a topology has no steps (give a scenario file)"),
            )
            .into()),
            None => Ok(run),
        };
    };
    let last = match until {
        Some(id) => scn.step_index(id).ok_or_else(|| {
            let known: Vec<&str> = scn.steps.iter().map(|s| s.id.as_str()).collect();
            Diagnostic::error(Span::new(&scn.file, 1, 1), format!("no step '{id}' in this scenario"))
                .with_hint(format!("steps: {}", known.join(", ")))
        })?,
        None => scn.steps.len().saturating_sub(1),
    };
    for (i, step) in scn.steps.iter().take(last + 1).enumerate() {
        let mut report = run_step(&mut run.engine, step, scn, &mut seen, &run.fabric, &mut run.tap)?;
        if i == last {
            report.warnings.extend(seen.hardcoded.never_held());
        }
        after_step(&report, &run.engine, seen.matrix.as_ref());
        run.steps.push(report);
    }
    Ok(run)
}

/// The reachability matrix the run carries from step to step: the previous one, the
/// data-plane findings already reported (a loop that persists is reported once, when it
/// appears), and how many endpoints a matrix may have (None: no matrix at all); and the
/// hard-coded addresses with what they were written for.
struct Seen {
    matrix: Option<ReachMatrix>,
    findings: Vec<String>,
    limit: Option<usize>,
    hardcoded: hardcoded::Watch,
}

impl Seen {
    /// The state's matrix compared with the previous one (the first: a baseline), and the
    /// data-plane findings that are new.
    fn observe(&mut self, net: &Network, st: &State, fabric: &Fabric) -> (Option<ReachDelta>, Vec<String>) {
        let Some(limit) = self.limit else {
            return (None, Vec::new());
        };
        let matrix = match ReachMatrix::within(net, st, limit) {
            Ok(m) => m,
            Err(n) => {
                let note = format!(
                    "reachability matrix not computed: {n} hosts and pods is over `limits: reach_endpoints` ({limit})"
                );
                let found: Vec<String> = std::iter::once(note)
                    .chain(super::impact::cluster_findings(net, st))
                    .collect();
                let new = found.iter().filter(|f| !self.findings.contains(f)).cloned().collect();
                self.findings = found;
                self.matrix = None;
                return (None, new);
            }
        };
        let mut delta = match &self.matrix {
            Some(before) => ReachDelta::between(before, &matrix, net, st),
            None => ReachDelta::baseline(&matrix, net, st),
        };
        delta.grid = Some(ReachGrid::of(&matrix, &fabric.racks(net)));
        let found = matrix.findings.clone();
        let new = found.iter().filter(|f| !self.findings.contains(f)).cloned().collect();
        self.findings = found;
        self.matrix = Some(matrix);
        (Some(delta), new)
    }
}

fn run_step(
    engine: &mut Engine,
    step: &Step,
    scn: &Scenario,
    seen: &mut Seen,
    fabric: &Fabric,
    tap: &mut Tap,
) -> Result<StepReport, InputError> {
    let mut checks = Vec::new();
    for e in &step.before {
        checks.push(evaluate(engine, e, When::Before, tap)?);
    }
    let before = engine.state().clone();
    let start_ms = engine.now_ms();
    engine.begin_run();
    let mut watch = Watch::new(engine, &step.during, scn.timing.ping_interval_ms, tap.empty_like())?;
    // The watched pings were already running: their first probe sees the state before the change.
    watch.sample(engine);
    let (change, warnings, commands) = apply(engine, step, scn, &mut watch, tap)?;
    let until = match step.action {
        Action::Wait { ms } => Until::Time(start_ms + ms),
        _ => Until::Quiet,
    };
    let converged = pass_time(engine, &mut watch, until, &step.span)?;
    let (settled_ms, quiet, mut findings) = match converged {
        Some(c) => (c.routes_changed_ms.max(start_ms), c.quiet, c.findings),
        None => (engine.now_ms(), true, Vec::new()),
    };
    findings.append(&mut watch.findings);
    tap.append(std::mem::take(&mut watch.tap));
    for c in commands.iter().filter(|c| c.status != 0) {
        findings.push(format!(
            "`{}` on {} failed (exit status {})",
            c.command, c.device, c.status
        ));
    }
    let (net, st) = (engine.network(), engine.state());
    let route_changes = route_diff(net, &before, st);
    let peers = peer_changes(net, &before, st);
    let (reach, dataplane) = seen.observe(net, st, fabric);
    findings.extend(dataplane);
    findings.extend(seen.hardcoded.check(net, st));
    findings.extend(net.cluster.iter().flat_map(|c| c.unschedulable_since(start_ms)));
    let flows = watch.reports();
    for e in &step.during {
        checks.push(evaluate_during(e, &flows));
    }
    for e in &step.after {
        checks.push(evaluate(engine, e, When::After, tap)?);
    }
    Ok(StepReport {
        id: step.id.clone(),
        name: step.name.clone(),
        change,
        start_ms,
        settled_ms,
        quiet,
        route_changes,
        findings,
        warnings,
        checks,
        commands,
        flows,
        peers,
        reach,
        fabric: FabricState::of(fabric, net, st),
    })
}

/// A `run:` step: each line on `device`'s shell, in order. Lines that change the cluster or
/// the host go to `k8s::run_line` (then the network is brought in line with the cluster);
/// others are read-only commands a view answers.
/// What a `run:` step's commands share: the scenario's pins, the step's stdin, the scenario's
/// directory.
struct Session<'a> {
    pins: &'a [Pin],
    /// The scenario's `timing:` (pod start, static pod restart, node monitor grace), which the
    /// cluster's controllers read.
    timing: &'a Timing,
    stdin: Option<&'a str>,
    files: &'a std::collections::BTreeMap<String, String>,
    base: &'a Path,
}

fn run_commands(
    engine: &mut Engine,
    device: &str,
    lines: &[(String, Span)],
    session: &Session<'_>,
    step_span: &Span,
    watch: &mut Watch,
    tap: &mut Tap,
) -> Result<Applied, InputError> {
    let dev = device_of(engine.network(), device, step_span)?;
    if engine.network().device(dev).kind != DeviceKind::Linux {
        return Err(Diagnostic::error(
            step_span.clone(),
            format!("`run:` types commands on a Linux host's shell, but {device} is not one"),
        )
        .into());
    }
    let mut warnings = Vec::new();
    let mut records = Vec::new();
    let context = |now: u64| k8s::Context {
        now,
        pins: session.pins,
        stdin: session.stdin,
        files: session.files,
        base: session.base,
        pod_start_ms: session.timing.pod_start_ms,
        static_pod_restart_ms: session.timing.static_pod_restart_ms,
        node_monitor_grace_ms: session.timing.node_monitor_grace_ms,
    };
    // The step's files are on the host before its commands run: a static-pod manifest among
    // them is a new manifest for the kubelet.
    if session.files.keys().any(|f| k8s::is_manifest_path(f)) {
        let ctx = context(engine.now_ms());
        engine
            .reconfigure(|net| k8s::write_manifests(net, dev, session.files, &ctx))
            .map_err(|e| Diagnostic::error(step_span.clone(), e))?;
    }
    for (line, span) in lines {
        let (output, status) = if k8s::is_change(line) {
            let st = engine.state().clone();
            let ctx = context(engine.now_ms());
            let mut outcome = engine.reconfigure(|net| -> Result<k8s::CommandOutcome, InputError> {
                let had_cilium = net.cluster.as_ref().is_some_and(|c| c.cilium.is_some());
                let outcome =
                    k8s::run_line(net, &st, dev, line, &ctx).map_err(|e| Diagnostic::error(span.clone(), e))?;
                if !had_cilium && net.cluster.as_ref().is_some_and(|c| c.cilium.is_some()) {
                    warnings.push(Diagnostic::warning(span.clone(), k8s::CILIUM_DATAPATH_UNMODELLED));
                }
                warnings.extend(k8s::realize(net)?);
                Ok(outcome)
            })?;
            // The kernel and the daemons take the change in at once: a command typed next
            // (`ip route` after `ip route add`) sees it. No virtual time passes.
            let now = engine.now_ms();
            engine.run_until_quiet_or(now);
            if outcome.busy_ms > 0 {
                // `kubectl drain` returns when its retries and waits are over.
                pass_time(engine, watch, Until::Time(now + outcome.busy_ms), span)?;
            }
            if let Some(f) = outcome.follow.take() {
                // `kubectl rollout status` returns when the rollout does: time passes meanwhile.
                let until = Until::RolloutDone {
                    namespace: &f.namespace,
                    daemonset: &f.daemonset,
                };
                pass_time(engine, watch, until, span)?;
                let net = engine.network();
                outcome.output += &k8s::status_lines(net, &f.namespace, &f.daemonset, f.since);
                if k8s::rollout_in_progress(net, &f.namespace, &f.daemonset) {
                    outcome.output += "(fabsim: still waiting after an hour of virtual time; see the findings)\n";
                    outcome.status = 1;
                }
            }
            (outcome.output, outcome.status)
        } else {
            let (net, st) = (engine.network(), engine.state());
            let mut sent = Vec::new();
            let out = views::run_command_sent(net, st, dev, line, &mut sent)
                .map_err(|e| Diagnostic::error(span.clone(), format!("`{line}`: {}", e.message)))?;
            tap.sent(net, &sent);
            (out, 0)
        };
        records.push(CommandRecord {
            device: device.to_string(),
            command: line.clone(),
            output,
            status,
        });
    }
    let change = match lines.len() {
        1 => format!("{device}: 1 command"),
        n => format!("{device}: {n} commands"),
    };
    Ok((change, warnings, records))
}

pub(super) fn device_of(net: &Network, name: &str, span: &Span) -> Result<DeviceId, Diagnostic> {
    net.device_by_name(name).ok_or_else(|| {
        let known: Vec<&str> = net.devices.iter().map(|d| d.name.as_str()).collect();
        Diagnostic::error(span.clone(), format!("unknown device '{name}'"))
            .with_hint(format!("devices: {}", known.join(", ")))
    })
}

/// Apply a step's change to the engine's model. Returns a one-line description and warnings.
/// Apply a step's change: a one-line description, warnings, and the transcript of its
/// runbook commands (if it has any).
fn apply(
    engine: &mut Engine,
    step: &Step,
    scn: &Scenario,
    watch: &mut Watch,
    tap: &mut Tap,
) -> Result<Applied, InputError> {
    if let Action::Run {
        device,
        lines,
        stdin,
        files,
    } = &step.action
    {
        let session = Session {
            pins: &scn.pinned_pods,
            timing: &scn.timing,
            stdin: stdin.as_deref(),
            files,
            base: &scn.base,
        };
        return run_commands(engine, device, lines, &session, &step.span, watch, tap);
    }
    // Faults may let time pass (`for:`): the watched pings go on meanwhile.
    let (change, warnings) = match &step.action {
        Action::Fail {
            fault,
            duration_ms,
            span,
        } => fault::fail(engine, &step.id, fault, *duration_ms, span, watch)?,
        Action::Restore { fault, span } => fault::restore(engine, &step.id, fault, span)?,
        _ => apply_config(engine, step)?,
    };
    Ok((change, warnings, Vec::new()))
}

/// What applying a step gave: its description, warnings, and command transcripts.
type Applied = (String, Vec<Diagnostic>, Vec<CommandRecord>);

/// A change that is not a runbook command: configuration, files, time, power, scripted facts.
fn apply_config(engine: &mut Engine, step: &Step) -> Result<(String, Vec<Diagnostic>), InputError> {
    match &step.action {
        Action::Checkpoint => Ok(("no change (checkpoint)".into(), Vec::new())),
        // `apply` runs runbook commands and faults itself; nothing reaches here with one.
        Action::Run { .. } | Action::Fail { .. } | Action::Restore { .. } => Ok((String::new(), Vec::new())),
        Action::Inject { ipam, pods } => {
            let now = engine.now_ms();
            let mut described = Vec::new();
            let warnings = engine.reconfigure(|net| {
                let at_step = |e: String| Diagnostic::error(step.span.clone(), e);
                if !ipam.is_empty() {
                    k8s::hold_allocations(net, ipam, now).map_err(at_step)?;
                    let held: Vec<String> = ipam.iter().map(|(n, h)| format!("{h} on {n}")).collect();
                    described.push(format!("IPAM history: {}", held.join(", ")));
                }
                if !pods.is_empty() {
                    let cluster = net
                        .cluster
                        .as_deref_mut()
                        .ok_or_else(|| at_step("inject: pods: there is no Kubernetes cluster yet".into()))?;
                    let changed = k8s::inject_pod_facts(cluster, pods, now).map_err(at_step)?;
                    described.push(format!("pod facts: {}", changed.join(", ")));
                }
                k8s::realize(net)
            })?;
            Ok((format!("injected {}", described.join("; ")), warnings))
        }
        Action::Reboot { devices } => {
            let ids = if devices.is_empty() {
                (0..engine.network().devices.len())
                    .map(|i| DeviceId(i as u32))
                    .filter(|d| engine.network().device(*d).external.is_none())
                    .collect()
            } else {
                devices
                    .iter()
                    .map(|d| device_of(engine.network(), d, &step.span))
                    .collect::<Result<Vec<_>, _>>()?
            };
            engine.power_cycle(&ids);
            // The hosts are back (addresses, routes) before their kubelets and calico-nodes start.
            engine.run_until_quiet();
            let warnings = start_node_services(engine, &ids, &step.span)?;
            let what = if devices.is_empty() {
                "every device".to_string()
            } else {
                devices.join(", ")
            };
            Ok((format!("reboot {what}"), warnings))
        }
        Action::Lease {
            device,
            interface,
            address,
        } => {
            device_of(engine.network(), device, &step.span)?;
            let changed = engine.reconfigure(|net| {
                let leases = net
                    .devices
                    .iter_mut()
                    .filter_map(|d| d.external.as_mut())
                    .flat_map(|e| e.leases.iter_mut());
                let mut found = false;
                for l in leases.filter(|l| &l.device == device && l.interface.eq_ignore_ascii_case(interface)) {
                    l.address = *address;
                    found = true;
                }
                found
            });
            if !changed {
                return Err(Diagnostic::error(
                    step.span.clone(),
                    format!("no DHCP server leases an address to {device} {interface}"),
                )
                .with_hint("leases are listed under an external network's `leases:` in the topology")
                .into());
            }
            Ok((format!("{device} {interface}: DHCP lease {address}"), Vec::new()))
        }
        Action::Wait { ms } => Ok((format!("wait {}", fmt_ms(*ms)), Vec::new())),
        Action::EosConfig { device, text, origin } => {
            let dev = device_of(engine.network(), device, &step.span)?;
            if engine.network().device(dev).kind != DeviceKind::Eos {
                return Err(Diagnostic::error(
                    step.span.clone(),
                    format!("`config:` takes EOS lines, but {device} is not an EOS switch"),
                )
                .with_hint("use `netplan:` for a Linux host")
                .into());
            }
            let warnings = engine.reconfigure(|net| eos::apply_config(net, dev, text, origin))?;
            let n = text.lines().filter(|l| !l.trim().is_empty()).count();
            Ok((format!("{device}: {n} EOS config lines"), warnings))
        }
        Action::Bird {
            device,
            text,
            origin,
            includes,
        } => {
            let dev = device_of(engine.network(), device, &step.span)?;
            if engine.network().device(dev).kind != DeviceKind::Linux {
                return Err(Diagnostic::error(
                    step.span.clone(),
                    format!("`bird:` is for Linux hosts, but {device} is not one"),
                )
                .into());
            }
            let warnings = engine.reconfigure(|net| bird::apply_bird(net, dev, text, origin, includes))?;
            Ok((format!("{device}: new BIRD configuration, birdcl configure"), warnings))
        }
        Action::Netplan { device, text, origin } => {
            let dev = device_of(engine.network(), device, &step.span)?;
            if engine.network().device(dev).kind != DeviceKind::Linux {
                return Err(Diagnostic::error(
                    step.span.clone(),
                    format!("`netplan:` is for Linux hosts, but {device} is not one"),
                )
                .with_hint("use `config:` for an EOS switch")
                .into());
            }
            let warnings = engine.reconfigure(|net| netplan::apply_netplan(net, dev, text, origin))?;
            Ok((format!("{device}: new netplan file, netplan apply"), warnings))
        }
    }
}

/// Start what runs on freshly booted hosts: kubelet and calico-node on the cluster's nodes
/// (their pods are replaced or restarted), then bring the network in line with the cluster.
pub(super) fn start_node_services(
    engine: &mut Engine,
    ids: &[DeviceId],
    span: &Span,
) -> Result<Vec<Diagnostic>, InputError> {
    let st = engine.state().clone();
    let now = engine.now_ms();
    engine.reconfigure(|net| {
        k8s::restart_nodes(net, &st, ids, now).map_err(|e| Diagnostic::error(span.clone(), e))?;
        k8s::realize(net)
    })
}

pub fn fmt_ms(ms: u64) -> String {
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}.{:03}s", ms / 1000, ms % 1000)
    }
}

/// Per device, the routes that disappeared and appeared, each printed as the device's own
/// table prints it (EOS `show ip route`, Linux `ip route`), in table order.
///
/// Routes are compared as lines, because that is what the report shows: a route whose fields
/// changed but whose line did not is no change. A line names its prefix, so lines of different
/// prefixes never match: only the prefixes whose routes differ are formatted and compared.
pub fn route_diff(net: &Network, before: &State, after: &State) -> Vec<String> {
    // A device the step created has no table before it.
    let empty = Fib::default();
    let mut out = Vec::new();
    for (i, dev) in net.devices.iter().enumerate() {
        let (b, a) = (table(before, i, &empty), table(after, i, &empty));
        if b != a {
            push_fib_diff(net, DeviceId(i as u32), &dev.name, b, a, &mut out);
        }
    }
    out
}

fn table<'a>(st: &'a State, device: usize, empty: &'a Fib) -> &'a Fib {
    st.devices.get(device).map_or(empty, |d| &d.fib)
}

/// One device's `- gone` lines, then its `+ new` lines, each in table order.
fn push_fib_diff(net: &Network, id: DeviceId, name: &str, before: &Fib, after: &Fib, out: &mut Vec<String>) {
    let prefixes: BTreeSet<Ipv4Net> = before.keyed().chain(after.keyed()).map(|(k, _)| k.0).collect();
    let (mut gone, mut new) = (Vec::new(), Vec::new());
    for p in prefixes {
        let (b, a): (Vec<&Route>, Vec<&Route>) = (before.with_prefix(p).collect(), after.with_prefix(p).collect());
        if b == a {
            continue;
        }
        let lines =
            |rs: &[&Route]| -> Vec<String> { rs.iter().map(|r| normalize(&views::route_line(net, id, r))).collect() };
        let (b, a) = (lines(&b), lines(&a));
        gone.extend(b.iter().filter(|l| !a.contains(l)).map(|l| format!("{name}: - {l}")));
        new.extend(a.iter().filter(|l| !b.contains(l)).map(|l| format!("{name}: + {l}")));
    }
    out.append(&mut gone);
    out.append(&mut new);
}

/// A ping target: an address, or a device name (its first addressed interface).
pub fn resolve_target(net: &Network, st: &State, to: &str) -> Option<Ipv4Addr> {
    if let Ok(a) = to.parse() {
        return Some(a);
    }
    let dev = net.device_by_name(to)?;
    net.device(dev)
        .ifaces
        .iter()
        .filter(|i| net.iface(**i).name != "lo")
        .find_map(|i| st.ifaces[i.idx()].addr.map(|a| a.addr()))
}

/// A check's ping target, or an error at the check.
pub(super) fn target_of(net: &Network, st: &State, to: &str, span: &Span) -> Result<Ipv4Addr, Diagnostic> {
    resolve_target(net, st, to).ok_or_else(|| {
        Diagnostic::error(
            span.clone(),
            format!("'{to}' is neither an address nor an addressed device"),
        )
    })
}

fn evaluate(engine: &Engine, e: &Expectation, when: When, tap: &mut Tap) -> Result<CheckResult, InputError> {
    let (net, st) = (engine.network(), engine.state());
    let result = |what: String, ok: bool, detail: String| CheckResult {
        when,
        what,
        ok,
        detail,
        span: e.span.clone(),
    };
    match &e.check {
        Check::Reach { from, to } | Check::Unreachable { from, to, .. } => {
            let src = device_of(net, from, &e.span)?;
            let dst = target_of(net, st, to, &e.span)?;
            let p = probe(net, st, src, dst, net.device(src).profile.ttl, ProbeKind::Echo, 1);
            tap.ping(net, || views::tcpdump::PingCapture::new(net, st, src, dst, 1));
            // What happened, then why: the hop-by-hop decisions of the walk.
            let why = explain_probe(net, st, &p, dst);
            let seen = format!("got: {}\n{}", why.result, why.hops.join("\n"));
            Ok(match &e.check {
                Check::Reach { .. } => result(
                    format!("{from} reaches {to}"),
                    matches!(p.outcome, ProbeOutcome::Reply { .. }),
                    seen,
                ),
                Check::Unreachable { icmp_from, .. } => {
                    let ok = match (&p.outcome, icmp_from) {
                        (ProbeOutcome::Reply { .. }, _) => false,
                        (ProbeOutcome::Error { from, .. }, Some(want)) => from == want,
                        (_, Some(_)) => false,
                        (_, None) => true,
                    };
                    let what = match icmp_from {
                        Some(a) => format!("{from} cannot reach {to} (ICMP error from {a})"),
                        None => format!("{from} cannot reach {to}"),
                    };
                    result(what, ok, seen)
                }
                _ => unreachable!("matched above"),
            })
        }
        Check::Route {
            on,
            prefix,
            present,
            protocol,
            via,
        } => {
            let dev = device_of(net, on, &e.span)?;
            let (what, ok, detail) = checks::route(net, st, dev, *prefix, *present, *protocol, via.as_deref());
            Ok(result(what, ok, detail))
        }
        Check::Session { on, peer, state } => {
            let dev = device_of(net, on, &e.span)?;
            let (what, ok, detail) = checks::session_state(net, st, dev, *peer, *state);
            Ok(result(what, ok, detail))
        }
        Check::Prefixes {
            on,
            neighbor,
            received,
            accepted,
        } => {
            let dev = device_of(net, on, &e.span)?;
            let (what, ok, detail) = checks::prefix_counts(net, st, dev, *neighbor, *received, *accepted);
            Ok(result(what, ok, detail))
        }
        Check::Output {
            on,
            run,
            contains,
            absent,
            lines,
            matches,
        } => {
            let dev = device_of(net, on, &e.span)?;
            let mut sent = Vec::new();
            let out = views::run_command_sent(net, st, dev, run, &mut sent).map_err(|err| {
                Diagnostic::error(
                    e.span.clone(),
                    format!("command '{run}' on {on} failed: {}", err.message),
                )
            })?;
            tap.sent(net, &sent);
            let (ok, detail) = checks::match_output(&out, contains, absent, lines, matches);
            Ok(result(format!("{on}# {run}"), ok, detail))
        }
        Check::Capture {
            from,
            to,
            on,
            interface,
            count,
            contains,
            absent,
        } => {
            let src = device_of(net, from, &e.span)?;
            let dst = target_of(net, st, to, &e.span)?;
            let dev = device_of(net, on, &e.span)?;
            let iface = net
                .iface_by_name(dev, interface)
                .ok_or_else(|| Diagnostic::error(e.span.clone(), format!("{on} has no interface '{interface}'")))?;
            let ping = views::tcpdump::PingCapture::new(net, st, src, dst, *count);
            let out = ping
                .on(net, dev, iface)
                .map_err(|err| Diagnostic::error(e.span.clone(), err.message))?;
            tap.ping(net, || ping);
            let (ok, detail) = checks::match_output(&out, contains, absent, &[], &[]);
            Ok(result(
                format!("{on}# tcpdump -n -i {interface} during ping {from} -> {to}"),
                ok,
                detail,
            ))
        }
    }
}

/// Does some line of `output` contain `pattern`, comparing whitespace-insensitively? `...` in
/// the pattern stands for any text (as in seed-lab.md's checks table).
pub fn has_line(output: &str, pattern: &str) -> bool {
    let parts: Vec<String> = pattern.split("...").map(normalize).collect();
    output.lines().map(normalize).any(|line| {
        let mut rest = line.as_str();
        parts.iter().all(|p| match rest.find(p.as_str()) {
            Some(i) => {
                rest = &rest[i + p.len()..];
                true
            }
            None => false,
        })
    })
}

/// Collapse runs of whitespace: the seed's pastes lost their column padding.
pub fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One line saying what happened to a probe, naming a forwarding loop if there was one.
pub fn describe_probe(net: &Network, p: &Probe) -> String {
    let mut s = describe_outcome(&p.outcome);
    if let Some(cycle) = &p.forwarding_loop {
        let names: Vec<&str> = cycle.iter().map(|d| net.device(*d).name.as_str()).collect();
        s.push_str(&format!(" (forwarding loop: {})", names.join(" -> ")));
    }
    s
}

pub fn describe_outcome(o: &ProbeOutcome) -> String {
    match o {
        ProbeOutcome::LocalNoRoute => "connect: Network is unreachable".into(),
        ProbeOutcome::Reply { from, ttl } => format!("reply from {from} ttl={ttl}"),
        ProbeOutcome::Error { from, error, .. } => format!(
            "From {from} {}",
            match error {
                IcmpError::NetUnreachable => "Destination Net Unreachable",
                IcmpError::HostUnreachable => "Destination Host Unreachable",
                IcmpError::TtlExceeded => "Time to live exceeded",
                IcmpError::PortUnreachable => "Destination Port Unreachable",
            }
        ),
        ProbeOutcome::Lost { reason } => format!("no reply: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Proto;
    use crate::views::testnet::*;

    /// Leaf-3 at s1b with one OSPF route moved to another port, one route changed in a field
    /// `show ip route` does not print, and one new prefix.
    #[test]
    fn route_diff_names_changed_lines_only_gone_before_new_in_table_order() {
        let (mut lab, d) = leaf3_s1b();
        let before = lab.st.clone();
        let et2 = lab.net.iface_by_name(d, "Ethernet2").expect("Ethernet2");
        let moved = eos_route(
            "10.0.11.0/31",
            Proto::OspfIntra,
            (110, 30),
            vec![hop(Some("10.3.33.1"), et2)],
        );
        lab.route(d, moved);
        let et1 = lab.net.iface_by_name(d, "Ethernet1").expect("Ethernet1");
        let unprinted = Route {
            src: Some(ip("10.33.99.1")),
            ..eos_route(
                "10.1.11.0/31",
                Proto::OspfIntra,
                (110, 30),
                vec![hop(Some("10.33.99.0"), et1)],
            )
        };
        lab.route(d, unprinted);
        lab.route(
            d,
            eos_route(
                "10.9.0.0/24",
                Proto::OspfE2,
                (110, 1),
                vec![hop(Some("10.33.99.0"), et1)],
            ),
        );
        assert_eq!(
            route_diff(&lab.net, &before, &lab.st),
            [
                "Leaf-3: - O 10.0.11.0/31 [110/30] via 10.33.99.0, Ethernet1",
                "Leaf-3: + O 10.0.11.0/31 [110/30] via 10.3.33.1, Ethernet2",
                "Leaf-3: + O E2 10.9.0.0/24 [110/1] via 10.33.99.0, Ethernet1",
            ]
        );
        assert!(
            route_diff(&lab.net, &lab.st, &lab.st).is_empty(),
            "a table against itself"
        );
    }
}
