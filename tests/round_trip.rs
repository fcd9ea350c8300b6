//! Round trips (issue #12): the seed lab exported to another input form and read back is the
//! same network — the same normalised `dump` — and replays the seed-lab scenario to the same
//! results.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::scratch;

fn fabsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args(args)
        .output()
        .expect("fabsim runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory under the target directory (kept for inspection after a failure).
/// `fabsim export topologies/seed-lab.yaml --to TO [OPTIONS…] --out DIR`.
fn export(to: &[&str], dir: &Path) {
    let d = dir.to_str().expect("utf-8 path");
    let args = [&["export", "topologies/seed-lab.yaml", "--to"], to, &["--out", d]].concat();
    let (code, _, err) = fabsim(&args);
    assert_eq!(code, 0, "export --to {}: {err}", to.join(" "));
}

/// The seed lab as a containerlab topology in its faithful form (cEOS switches, side file).
fn export_containerlab(dir: &Path) -> PathBuf {
    export(&["containerlab", "--switches", "ceos"], dir);
    dir.join("lab.clab.yml")
}

fn dump(input: &str) -> Value {
    let (code, out, err) = fabsim(&["dump", input]);
    assert_eq!(code, 0, "dump {input}: {err}");
    serde_json::from_str(&out).expect("dump is JSON")
}

/// The first place two JSON values differ, as a path and both values.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (va, vb) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                first_difference(va, vb, &format!("{path}.{k}"))
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(va, vb, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

fn assert_same(what: &str, a: &Value, b: &Value) {
    if let Some(d) = first_difference(a, b, "") {
        panic!("{what} differs at {d}");
    }
}

/// The seed-lab scenario with its `topology:` pointing at `topology` (written next to it).
fn scenario_on(topology: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string("scenarios/seed-lab.yaml").expect("scenario");
    let abs = std::fs::canonicalize(topology).expect("exported topology");
    let replaced = text.replacen(
        "topology: ../topologies/seed-lab.yaml",
        &format!("topology: {}", abs.display()),
        1,
    );
    assert_ne!(replaced, text, "the scenario names its topology as expected");
    let path = dir.join("seed-lab.yaml");
    std::fs::write(&path, replaced).expect("scenario copy");
    path
}

/// A run report without what names the files it was read from (places of checks and
/// warnings, the topology's name) — everything the network did stays.
fn run_report(scenario: &Path) -> Value {
    let s = scenario.to_str().expect("utf-8 path");
    let (code, out, err) = fabsim(&["run", s, "--format", "json"]);
    assert!(code == 0 || code == 1, "run {s}: {err}");
    let mut v: Value = serde_json::from_str(&out).expect("report is JSON");
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for k in ["span", "file", "topology", "scenario_file"] {
                m.remove(k);
            }
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

#[test]
fn seed_lab_round_trips_through_a_snapshot_directory() {
    let dir = scratch("round-trip-snapshot");
    let snap = dir.join("snap");
    export(&["snapshot"], &snap);
    let (code, _, err) = fabsim(&["lint", snap.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert_same(
        "dump (seed-lab.yaml vs its snapshot)",
        &dump("topologies/seed-lab.yaml"),
        &dump(snap.to_str().expect("utf-8")),
    );
}

#[test]
fn seed_lab_scenario_runs_the_same_on_its_snapshot() {
    let dir = scratch("round-trip-snapshot-run");
    let snap = dir.join("snap");
    export(&["snapshot"], &snap);
    let original = run_report(Path::new("scenarios/seed-lab.yaml"));
    let again = run_report(&scenario_on(&snap, &dir));
    assert_same("run report (seed-lab vs on its snapshot)", &original, &again);
}

#[test]
fn seed_lab_round_trips_through_containerlab() {
    let dir = scratch("round-trip-clab");
    let clab = export_containerlab(&dir);
    let c = clab.to_str().expect("utf-8");
    let (code, out, err) = fabsim(&["lint", c]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("no warnings"),
        "the export reads back without a warning:\n{out}"
    );
    assert_same(
        "dump (seed-lab.yaml vs its containerlab export)",
        &dump("topologies/seed-lab.yaml"),
        &dump(c),
    );
}

#[test]
fn seed_lab_scenario_runs_the_same_on_its_containerlab_export() {
    let dir = scratch("round-trip-clab-run");
    let clab = export_containerlab(&dir.join("lab"));
    let original = run_report(Path::new("scenarios/seed-lab.yaml"));
    let again = run_report(&scenario_on(&clab, &dir));
    assert_same("run report (seed-lab vs on its containerlab export)", &original, &again);
}

/// A declared cluster (tests/data/cluster-lab) exported as a snapshot travels as its
/// `k8s/cluster.yaml`, `k8s/services.yaml`, `k8s/kubeadm-config.yaml`, `calico/resources.yaml`
/// and `calico/ipam.yaml` dumps, not the side file: read back, the pods' namespaces, veths,
/// tunnel devices, felix's routes, each node's BIRD and kube-proxy's rules (from the Services,
/// the kubernetes Service's Endpoints and kubeadm's pod network) are the same.
#[test]
fn a_cluster_round_trips_through_its_snapshot_dumps() {
    let dir = scratch("round-trip-cluster");
    let snap = dir.join("snap");
    let s = snap.to_str().expect("utf-8");
    let (code, _, err) = fabsim(&[
        "export",
        "tests/data/cluster-lab/lab.yaml",
        "--to",
        "snapshot",
        "--out",
        s,
    ]);
    assert_eq!(code, 0, "{err}");
    let side = std::fs::read_to_string(snap.join("fabsim.yaml")).expect("side file");
    assert!(
        !side.contains("cluster:"),
        "the cluster is not in the side file:\n{side}"
    );
    assert!(!side.contains("node-a-pod-1"), "nor are its pods:\n{side}");
    let kubeadm = std::fs::read_to_string(snap.join("k8s/kubeadm-config.yaml")).expect("kubeadm-config");
    assert!(
        kubeadm.contains("  ClusterConfiguration: |\n")
            && kubeadm.contains("      podSubnet: 10.244.0.0/16\n      serviceSubnet: 10.96.0.0/12\n"),
        "kubeadm's ClusterConfiguration as kubectl prints it:\n{kubeadm}"
    );
    let (code, out, err) = fabsim(&["lint", s]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("no warnings"),
        "the dumps read back without a warning:\n{out}"
    );
    let original = dump("tests/data/cluster-lab/lab.yaml");
    assert!(
        original["devices"].as_array().is_some_and(|d| d.len() == 10),
        "a switch, two nodes, coredns ×2, calico-kube-controllers and four workload pods"
    );
    let node_a = original["devices"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == "node-a"))
        .expect("node-a");
    let rules = node_a["kube_proxy"]["services"].as_array().map_or(0, Vec::len);
    assert_eq!(
        (rules, node_a["kube_proxy"]["cluster_cidr"].as_str()),
        (4, Some("10.244.0.0/16")),
        "kube-proxy has a rule per Service port (kubernetes:https, kube-dns:dns, dns-tcp, metrics) and the pod network:\n{:#}",
        node_a["kube_proxy"]
    );
    assert_same("dump (cluster-lab vs its snapshot)", &original, &dump(s));
    let svc = |input: &str| {
        let (code, out, err) = fabsim(&["show", input, "node-a", "kubectl get endpoints -A"]);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(
        svc("tests/data/cluster-lab/lab.yaml"),
        svc(s),
        "kubectl get endpoints -A"
    );
}
