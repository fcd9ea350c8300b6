//! Bounded work (issue #11): the engine's event budget and memory guard stop a run with a
//! finding instead of a hang or an OOM kill. Each test first shows the same network converging
//! quietly without the bound, so the finding is the bound's doing. (The other bounds have their
//! tests next to their protocols: oscillation in `bgp_history.rs`, path explosion in
//! `bgp_mesh.rs`/`bgp_six_nodes.rs`, forwarding loops in `dataplane.rs` and `impact.rs`.)

use std::process::Command;

use fabsim::engine::{converge, Engine};
use fabsim::input::topology::load_topology;
use fabsim::model::Network;

/// The 4×16×4 eBGP fabric `fabsim gen` writes (84 devices, 2,747 routes and BGP paths once
/// converged), generated into `dir` as `fabric.yaml`.
fn generate(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("scratch dir");
    let gen = Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args([
            "gen",
            "leaf-spine",
            "--spines",
            "4",
            "--leaves",
            "16",
            "--nodes-per-leaf",
            "4",
            "--underlay",
            "ebgp",
            "--out",
            "fabric.yaml",
        ])
        .current_dir(dir)
        .output()
        .expect("run fabsim gen");
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
}

/// `fabsim ARGS` run in `dir`.
fn fabsim_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run fabsim")
}

/// The generated fabric, loaded (each test generates its own copy: tests run in parallel).
fn fabric(name: &str) -> Network {
    let dir = std::env::temp_dir().join(format!("fabsim-guards-{name}-{}", std::process::id()));
    generate(&dir);
    let net = load_topology(&dir.join("fabric.yaml"))
        .expect("generated fabric loads")
        .net;
    let _ = std::fs::remove_dir_all(&dir);
    net
}

#[test]
fn the_event_budget_stops_a_run_with_a_finding() {
    let (_, free) = converge(fabric("events"));
    assert!(free.quiet, "the fabric settles without a bound");
    assert!(!free.findings.iter().any(|f| f.starts_with("event budget")));

    let mut e = Engine::new(fabric("events"));
    e.set_event_budget(500);
    let c = e.run_until_quiet();
    assert!(!c.quiet, "a run stopped by its budget is not quiet");
    let budget: Vec<&String> = c.findings.iter().filter(|f| f.starts_with("event budget")).collect();
    assert_eq!(budget.len(), 1, "{:?}", c.findings);
    assert!(
        budget[0].starts_with("event budget: the run used its 500 protocol events without settling; it stops at "),
        "{}",
        budget[0]
    );
    // The bound holds a caller that keeps time running too: the next run stops the same way.
    e.begin_run();
    assert!(!e.run_until_quiet().quiet);
}

#[test]
fn the_memory_guard_stops_a_run_with_a_finding() {
    let (free_engine, free) = converge(fabric("memory"));
    let entries = free_engine.entry_count();
    assert!(
        free.quiet && entries.total() > 100,
        "the fabric settles holding {entries:?}"
    );
    assert!(!free.findings.iter().any(|f| f.starts_with("memory limit")));

    let mut e = Engine::new(fabric("memory"));
    // Room for a quarter of what the converged lab holds.
    e.set_memory_limit(entries.bytes() / 4);
    let c = e.run_until_quiet();
    assert!(!c.quiet);
    let memory: Vec<&String> = c.findings.iter().filter(|f| f.starts_with("memory limit")).collect();
    assert_eq!(memory.len(), 1, "{:?}", c.findings);
    assert!(
        memory[0].contains(
            " BGP paths, about 1.1 MiB at 220, 40 and 120 bytes each, more than the 1.1 MiB --max-memory allows;"
        ),
        "{}",
        memory[0]
    );
    // Stopped within one check interval of the bound, not after the tables grew on.
    let held = e.entry_count();
    assert!(held.total() < entries.total(), "{held:?} of {entries:?}");
}

/// `--max-memory` on the command line: a generated 4×16×4 eBGP fabric's tables outgrow 1 MiB at
/// the guard's costs one second in, and the run says so and stops instead of growing on. A
/// scenario's `limits: events` bounds its runs the same way, with the event-budget finding.
#[test]
fn max_memory_on_the_command_line_is_a_finding() {
    let dir = std::env::temp_dir().join(format!("fabsim-guards-cli-{}", std::process::id()));
    generate(&dir);
    let fabsim = |args: &[&str]| fabsim_in(&dir, args);
    std::fs::write(
        dir.join("s.yaml"),
        "topology: fabric.yaml\nsteps:\n  - id: s\n    wait: 1s\n",
    )
    .expect("write");
    // The same scenario with its own event budget (`limits: events`).
    std::fs::write(
        dir.join("budget.yaml"),
        "topology: fabric.yaml\nlimits: {events: 500}\nsteps:\n  - id: s\n    wait: 1s\n",
    )
    .expect("write");
    let free = fabsim(&["run", "s.yaml"]);
    let limited = fabsim(&["run", "s.yaml", "--max-memory", "1"]);
    let budget = fabsim(&["run", "budget.yaml"]);
    // A one-shot command over a run its bound stopped shows that moment, and says so.
    let show = |file| fabsim(&["show", file, "leaf-1", "show ip bgp summary"]);
    let (show_free, show_budget) = (show("s.yaml"), show("budget.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(show_free.status.success() && show_budget.status.success());
    assert_eq!(String::from_utf8_lossy(&show_free.stderr), "");
    let show_budget = String::from_utf8_lossy(&show_budget.stderr).into_owned();
    assert!(
        show_budget.starts_with(
            "fabsim: warning: step 'start' ended before the network settled; what follows shows the state where it stopped\n  \
             FINDING event budget: the run used its 500 protocol events without settling"
        ),
        "{show_budget}"
    );
    let budget = String::from_utf8_lossy(&budget.stdout).into_owned();
    assert!(
        budget.contains("FINDING event budget: the run used its 500 protocol events without settling"),
        "{budget}"
    );
    assert!(!free.stdout.is_empty());
    assert!(!String::from_utf8_lossy(&free.stdout).contains("event budget"));
    let (free, limited) = (
        String::from_utf8_lossy(&free.stdout).into_owned(),
        String::from_utf8_lossy(&limited.stdout).into_owned(),
    );
    assert!(!free.contains("memory limit"), "{free}");
    assert!(
        limited.contains(
            "FINDING memory limit: the routing tables hold 1231 forwarding routes, 0 next hops apart from them and 6636 BGP paths, about 1.0 MiB at 220, 40 and 120 bytes each, more than the 1.0 MiB --max-memory allows"
        ),
        "{limited}"
    );
}

/// A `wait:` over a network that oscillates ends with the oscillation finding in that step, and
/// after the oscillation the network runs on only within the step's event budget (found
/// by the `lab` fuzz target: two 599 s waits on a fabric whose leaves take turns redistributing
/// the service range ran for minutes, each wait's flaps costing more than the last, unbounded by
/// the budget, and the steps reported no finding).
#[test]
fn a_wait_over_an_oscillating_fabric_is_bounded_and_says_why() {
    let dir = std::env::temp_dir().join(format!("fabsim-guards-wait-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let fabsim = |args: &[&str]| fabsim_in(&dir, args);
    let topology = std::fs::read_to_string("tests/data/oscillation.yaml").expect("tests/data/oscillation.yaml");
    std::fs::write(dir.join("fabric.yaml"), topology).expect("write");
    std::fs::write(
        dir.join("wait.yaml"),
        "topology: fabric.yaml\nlimits: {events: 20000}\nsteps:\n  - id: w1\n    wait: 10m\n  - id: w2\n    wait: 10m\n",
    )
    .expect("write");
    let run = fabsim(&["run", "wait.yaml"]);
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    for step in ["[w1]", "[w2]"] {
        let section = out.split(step).nth(1).expect("the step is reported");
        let section = section.split("\n[").next().unwrap_or_default();
        assert!(section.contains("NOT quiet"), "{step}: {section}");
        assert!(
            section.contains(
                "FINDING oscillation: the OSPF external route for 10.50.0.0/24 changed 20 times without settling; \
                 routers redistributing it in turn: Leaf-A, Leaf-B"
            ),
            "{step}: {section}"
        );
    }
}
