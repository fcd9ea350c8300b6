//! Helpers shared by the integration tests: replay the bundled seed-lab scenario to a step and
//! run a command on a device there.

#![allow(dead_code)]

use std::path::Path;

use fabsim::scenario::{self, has_line, Opened, Run};
use fabsim::views;

/// The bundled seed-lab scenario: every stage, the BGP ones on BIRD configurations confd
/// renders from the Calico resources the runbook applies.
pub const SEED_SCENARIOS: [&str; 1] = ["scenarios/seed-lab.yaml"];

/// The seed-lab scenario that has `step`, replayed up to and including it.
pub fn run_to(step: &str) -> Run {
    scenario::run(&seed_scenario(step), Some(step)).unwrap_or_else(|e| panic!("{e}"))
}

/// The bundled seed-lab scenario that has `step`, opened.
pub fn seed_scenario(step: &str) -> Opened {
    SEED_SCENARIOS
        .iter()
        .map(|file| scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}")))
        .find(|o| o.scenario.as_ref().is_some_and(|s| s.step_index(step).is_some()))
        .unwrap_or_else(|| panic!("no bundled seed-lab scenario has a step {step}"))
}

/// The scenario `file` replayed up to and including `step`.
pub fn run_file(file: &str, step: &str) -> Run {
    let opened = scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, Some(step)).unwrap_or_else(|e| panic!("{e}"))
}

/// The scenario `file` replayed whole meets every expectation, and `fabsim run` says so with
/// its exit status.
pub fn meets_every_expectation(file: &str) {
    let opened = scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
    let run = scenario::run(&opened, None).unwrap_or_else(|e| panic!("{e}"));
    let failed: Vec<String> = run
        .failures()
        .map(|(s, c)| format!("{}: {} — {}", s.id, c.what, c.detail))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let o = fabsim(&["run", file]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}

/// The `fabsim` binary run with `args` from the crate's root.
pub fn fabsim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabsim")
}

/// The output of `command` on `device` after `step`.
pub fn out(step: &str, device: &str, command: &str) -> String {
    out_in(&run_to(step), device, command)
}

/// The output of `command` on `device` at the end of `run`.
pub fn out_in(run: &Run, device: &str, command: &str) -> String {
    let net = run.engine.network();
    let dev = net
        .device_by_name(device)
        .unwrap_or_else(|| panic!("no device {device}"));
    views::run_command(net, run.engine.state(), dev, command)
        .unwrap_or_else(|e| panic!("{device}# {command}: {}", e.message))
}

/// Every pattern matches some line of `text` (whitespace-insensitive, `...` = any text).
pub fn assert_has(text: &str, patterns: &[&str]) {
    for p in patterns {
        assert!(has_line(text, p), "expected a line matching `{p}` in:\n{text}");
    }
}

/// What the runbook command `command` of step `step` printed.
pub fn command_output(step: &str, command: &str) -> String {
    let run = run_to(step);
    let report = run.steps.last().unwrap_or_else(|| panic!("no step {step}"));
    report
        .commands
        .iter()
        .find(|c| c.command == command)
        .map(|c| c.output.clone())
        .unwrap_or_else(|| panic!("step {step} ran no `{command}`"))
}

/// What the ping from `from` to `to` that `step` watched (`expect: during:`) printed.
pub fn watched_ping(step: &str, from: &str, to: &str) -> String {
    let run = run_to(step);
    let report = run.steps.last().unwrap_or_else(|| panic!("no step {step}"));
    report
        .flows
        .iter()
        .find(|f| f.from == from && f.to == to)
        .map(|f| f.transcript.clone())
        .unwrap_or_else(|| panic!("step {step} watched no ping {from} -> {to}"))
}

/// What `tcpdump -n -i IFACE` on `device` shows after `step` while `from` pings `to` once.
pub fn capture(step: &str, from: &str, to: &str, device: &str, iface: &str) -> String {
    capture_in(&run_to(step), from, to, device, iface)
}

/// What `tcpdump -n -i IFACE` on `device` shows at the end of `run` while `from` pings `to` once.
pub fn capture_in(run: &Run, from: &str, to: &str, device: &str, iface: &str) -> String {
    let (net, st) = (run.engine.network(), run.engine.state());
    let named = |name: &str| net.device_by_name(name).unwrap_or_else(|| panic!("no device {name}"));
    let dst = scenario::resolve_target(net, st, to).unwrap_or_else(|| panic!("no target {to}"));
    let dev = named(device);
    let ifc = net
        .iface_by_name(dev, iface)
        .unwrap_or_else(|| panic!("{device} has no interface {iface}"));
    views::tcpdump::PingCapture::new(net, st, named(from), dst, 1)
        .on(net, dev, ifc)
        .unwrap_or_else(|e| panic!("{device}: tcpdump -n -i {iface}: {}", e.message))
}

/// An empty directory for one test's files under cargo's per-target temporary directory.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The cluster a run ended with.
pub fn cluster(run: &Run) -> &fabsim::k8s::Cluster {
    run.engine.network().cluster.as_deref().expect("a cluster")
}

/// The report of step `id`.
pub fn step<'a>(run: &'a Run, id: &str) -> &'a fabsim::scenario::StepReport {
    run.steps
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no step {id}"))
}

/// What `command` printed in step `id`, and its exit status.
pub fn printed(run: &Run, id: &str, command: &str) -> (String, i32) {
    let c = step(run, id)
        .commands
        .iter()
        .find(|c| c.command == command)
        .unwrap_or_else(|| panic!("step {id} ran no `{command}`"));
    (c.output.clone(), c.status)
}

/// A node's podCIDR as text (empty without one).
pub fn pod_cidr(run: &Run, node: &str) -> String {
    cluster(run)
        .node(node)
        .and_then(|n| n.pod_cidr)
        .map(|c| c.to_string())
        .unwrap_or_default()
}

/// The steps of `run` whose findings include one containing `text`.
pub fn steps_with(run: &Run, text: &str) -> Vec<String> {
    run.steps
        .iter()
        .filter(|s| s.findings.iter().any(|f| f.contains(text)))
        .map(|s| s.id.clone())
        .collect()
}

/// Runbook `lines` run one after the other on `device` of `net` (a copy of `run`'s network) at
/// virtual time `now`, as a step's `run:` would with no files or stdin and the seed scenarios'
/// timing: each outcome (output and exit status) or fabsim's refusal.
pub fn run_lines(
    run: &Run,
    net: &mut fabsim::model::Network,
    device: &str,
    lines: &[&str],
    now: u64,
) -> Vec<Result<(String, i32), String>> {
    let files = std::collections::BTreeMap::new();
    let ctx = fabsim::k8s::Context {
        now,
        pins: &[],
        stdin: None,
        files: &files,
        base: Path::new("."),
        pod_start_ms: 0,
        static_pod_restart_ms: 20_000,
        node_monitor_grace_ms: 40_000,
    };
    let dev = net.device_by_name(device).expect("device");
    lines
        .iter()
        .map(|line| {
            assert!(fabsim::k8s::is_change(line), "{line}");
            fabsim::k8s::run_line(net, run.engine.state(), dev, line, &ctx).map(|o| (o.output, o.status))
        })
        .collect()
}
