//! ADD-PATH through an eBGP full mesh (Calico nodes with per-node AS numbers, as in the seed
//! lab from s3b on): every loop-free AS path reaches every node. fabsim counts them without
//! blowing up and reports a path explosion when a prefix exceeds the configured limit.

use fabsim::engine::Engine;
use fabsim::input::topology::parse_topology;

/// `n` Linux hosts on one segment, each running BIRD in its own AS with an eBGP multihop
/// session to every other, ADD-PATH on, each originating its own /24 and 10.96.0.0/12.
fn mesh(n: usize) -> String {
    let mut y = String::from("devices:\n");
    for i in 1..=n {
        let mut bird = format!(
            "router id 10.9.0.{i};\nprotocol device {{ }}\nprotocol static {{\n  route 10.66.{i}.0/24 blackhole;\n  route 10.96.0.0/12 blackhole;\n}}\n"
        );
        for j in (1..=n).filter(|j| *j != i) {
            bird.push_str(&format!(
                "protocol bgp Mesh_10_9_0_{j} {{\n  local as {};\n  neighbor 10.9.0.{j} as {};\n  source address 10.9.0.{i};\n  multihop;\n  gateway recursive;\n  import all;\n  export all;\n  add paths on;\n{}}}\n",
                65000 + i,
                65000 + j,
                if j > i { "  passive on;\n" } else { "" }
            ));
        }
        let bird: String = bird.lines().map(|l| format!("      {l}\n")).collect();
        y.push_str(&format!(
            "  n{i}:\n    kind: linux\n    interfaces: [eth0]\n    netplan: |\n      network:\n        version: 2\n        ethernets:\n          eth0:\n            addresses: [10.9.0.{i}/24]\n    bird: |\n{bird}"
        ));
    }
    let members: Vec<String> = (1..=n).map(|i| format!("n{i}:eth0")).collect();
    y.push_str(&format!("segments:\n  lan: [{}]\n", members.join(", ")));
    y
}

fn paths_at(e: &Engine, dev: &str, prefix: &str) -> usize {
    let d = e.network().device_by_name(dev).expect("device");
    let view = e.state().devices[d.idx()].bgp.as_ref().expect("bgp");
    view.table
        .routes()
        .iter()
        .filter(|t| t.prefix.to_string() == prefix)
        .count()
}

#[test]
fn a_four_node_mesh_holds_every_simple_path() {
    let loaded = parse_topology(&mesh(4), "mesh.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut e = Engine::new(loaded.net);
    let c = e.run_until_quiet();
    assert!(c.quiet && c.findings.is_empty(), "{:?}", c.findings);
    // Paths from one origin to another node in K4: 1 direct + 2 via one + 2 via two = 5
    // (seed-lab.md s4); the shared /12: the local route + 3 origins × 5.
    assert_eq!(paths_at(&e, "n1", "10.66.2.0/24"), 5);
    assert_eq!(paths_at(&e, "n1", "10.96.0.0/12"), 16);
}

#[test]
fn a_six_node_mesh_reports_the_path_explosion() {
    let loaded = parse_topology(&mesh(6), "mesh.yaml").unwrap_or_else(|e| panic!("{e}"));
    let mut e = Engine::new(loaded.net);
    e.set_path_limit(100);
    let c = e.run_until_quiet();
    let f = c.findings.join("\n");
    assert!(f.contains("path explosion") && f.contains("10.96.0.0/12"), "{f}");
    // K6: 1 + 4 + 12 + 24 + 24 = 65 paths per origin; the guard caps the shared /12.
    assert_eq!(paths_at(&e, "n1", "10.66.2.0/24"), 65);
    assert!(paths_at(&e, "n1", "10.96.0.0/12") <= 100);
}

#[test]
fn the_run_report_shows_the_finding_with_a_scenario_limit() {
    let dir = std::env::temp_dir().join(format!("fabsim-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    std::fs::write(dir.join("mesh6.yaml"), mesh(6)).expect("write topology");
    std::fs::write(
        dir.join("run.yaml"),
        "topology: mesh6.yaml\nlimits: {paths_per_prefix: 100}\nsteps:\n  - id: converged\n",
    )
    .expect("write scenario");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args(["run", dir.join("run.yaml").to_str().expect("utf8")])
        .output()
        .expect("run fabsim");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FINDING path explosion: n1 would hold"), "{stdout}");
    assert!(stdout.contains("10.96.0.0/12 (limit 100)"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
