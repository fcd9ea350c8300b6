//! Peak memory of the benchmark workloads (`cargo bench --bench peak_memory [-- FILTER]`).
//! Each workload runs once in a child process of this harness, which reports the child's own
//! high-water mark (`VmHWM` in /proc/self/status): one process per workload, so no workload's
//! peak hides another's.

mod common;

use std::path::Path;
use std::process::Command;

use common::{
    fabric, fabric_id, fail_spine_leaf_link, large_ebgp_fits, load_and_converge, reach_all_pairs, FABRICS, LARGE,
};
use fabsim::gen::Underlay;
use fabsim::scenario;

/// Benchmark ids, as `converge.rs` names them.
fn workloads() -> Vec<String> {
    let mut ids = vec!["seed_lab_replay".to_string()];
    for underlay in [Underlay::Ospf, Underlay::Ebgp] {
        for (s, l, n) in FABRICS {
            ids.push(format!("converge/{}", fabric_id(s, l, n, underlay)));
        }
    }
    let (s, l, n) = FABRICS[1];
    let big = fabric_id(s, l, n, Underlay::Ospf);
    ids.push(format!("reach_all_pairs/{big}"));
    ids.push(format!("step_delta/{big}"));
    let (s, l, n) = LARGE;
    let large = fabric_id(s, l, n, Underlay::Ospf);
    for kind in ["converge", "reach_all_pairs", "step_delta"] {
        ids.push(format!("{kind}/{large}"));
    }
    ids.push(format!("converge/{}", fabric_id(s, l, n, Underlay::Ebgp)));
    ids
}

fn run(id: &str) {
    if id == "seed_lab_replay" {
        let scn = scenario::open(Path::new("scenarios/seed-lab.yaml")).expect("scenario");
        scenario::run(&scn, None).expect("run");
        return;
    }
    let (kind, fabric_name) = id.split_once('/').expect("kind/fabric");
    let (underlay, sizes) = match fabric_name.strip_prefix("ebgp-") {
        Some(sizes) => (Underlay::Ebgp, sizes),
        None => (Underlay::Ospf, fabric_name),
    };
    let n: Vec<u32> = sizes.split('x').map(|x| x.parse().expect("size")).collect();
    let mut engine = load_and_converge(&fabric(n[0], n[1], n[2], underlay));
    match kind {
        "converge" => {}
        "reach_all_pairs" => {
            reach_all_pairs(&engine);
        }
        "step_delta" => {
            fail_spine_leaf_link(&mut engine);
        }
        other => panic!("unknown workload kind {other}"),
    }
}

fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, id] = args.as_slice() {
        if flag == "--workload" {
            run(id);
            println!("{}", peak_kib().expect("VmHWM in /proc/self/status"));
            return;
        }
    }
    // `cargo bench` passes `--bench`; anything else is a filter on the ids, as with criterion.
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let exe = std::env::current_exe().expect("own path");
    let (s, l, n) = LARGE;
    let large_ebgp = format!("converge/{}", fabric_id(s, l, n, Underlay::Ebgp));
    for id in workloads() {
        if !filters.is_empty() && !filters.iter().any(|f| id.contains(f.as_str())) {
            continue;
        }
        if id == large_ebgp {
            if let Err(why) = large_ebgp_fits() {
                println!("{id:<32} {why}");
                continue;
            }
        }
        let out = Command::new(&exe)
            .args(["--workload", &id])
            .output()
            .expect("run workload");
        let kib: Option<u64> = String::from_utf8_lossy(&out.stdout).trim().parse().ok();
        match kib {
            Some(kib) if out.status.success() => println!("{id:<32} peak RSS {:>8.1} MiB", kib as f64 / 1024.0),
            _ => println!("{id:<32} failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
        }
    }
}
