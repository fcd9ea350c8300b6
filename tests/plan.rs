//! `fabsim plan pods` and `fabsim plan node-cidr` (issue #7 item 5): the worked examples of
//! seed 004 and the test table of `k8s-cidr-migrations.md` §4.7 (T1–T18), pools files with
//! carving and overlap checks, and bad input (exit 2, with the flag or the file position).

mod common;

use std::path::PathBuf;

use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = common::fabsim(args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The JSON plan of one pool given by flags.
fn pool(args: &[&str]) -> Value {
    let mut all = vec!["plan", "pods", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{args:?}: {err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["schema"], 1);
    v["pools"][0].clone()
}

fn level(p: &Value) -> (String, bool) {
    (
        p["status"]["level"].as_str().unwrap_or("-").to_string(),
        p["status"]["autoscaler_guard"].as_bool().unwrap_or(false),
    )
}

#[test]
fn t1_forty_pods_fifty_nodes_need_a_20() {
    let p = pool(&["--max-pods", "40", "--nodes", "50"]);
    let d = &p["demand"];
    assert_eq!((d["raw"].as_u64(), d["need"].as_u64()), (Some(2000), Some(2600)));
    assert_eq!(d["recommended"]["prefix_len"], 20);
    assert_eq!(d["recommended"]["usable"], 4092);
    assert_eq!(d["headroom"], 1492);
    assert_eq!(d["util_at_raw_permille"], 489);
    assert_eq!(level(&p), ("OK".into(), false));
    let (_, text, _) = run(&["plan", "pods", "--max-pods", "40", "--nodes", "50"]);
    common::assert_has(
        &text,
        &[
            "maxPods 40 × 50 nodes = 2000 pod IPs; +30% buffer → need 2600",
            "/20: 4096 addresses, 4092 usable (4 reserved); headroom 1492",
            "48.9% of the recommended subnet at max scale",
            "70% at 72 nodes, 85% at 87 nodes (40 IPs per node)",
            "verdict: every pool fits",
        ],
    );
}

#[test]
fn t2_t3_t12_t17_recommended_prefixes() {
    for (args, need, prefix, usable) in [
        (&["--max-pods", "40", "--nodes", "30"][..], 1560, 21, 2044),
        (&["--max-pods", "20", "--nodes", "10"][..], 260, 23, 508),
        (&["--max-pods", "128", "--nodes", "10"][..], 1664, 21, 2044),
        (
            &["--max-pods", "40", "--nodes", "50", "--reserved", "2"][..],
            2600,
            20,
            4094,
        ),
    ] {
        let d = pool(args)["demand"].clone();
        assert_eq!(d["need"], need, "{args:?}");
        assert_eq!(d["recommended"]["prefix_len"], prefix, "{args:?}");
        assert_eq!(d["recommended"]["usable"], usable, "{args:?}");
    }
}

#[test]
fn t4_no_buffer_fits_a_24_at_watch() {
    let p = pool(&["--max-pods", "20", "--nodes", "10", "--buffer-pct", "0"]);
    assert_eq!(p["demand"]["need"], 200);
    assert_eq!(p["demand"]["recommended"]["prefix_len"], 24);
    assert_eq!(p["demand"]["recommended"]["usable"], 252);
    assert_eq!(p["status"]["permille"], 794);
    assert_eq!(level(&p), ("WATCH".into(), false));
}

#[test]
fn t5_t6_warm_pools_in_a_24() {
    let p = pool(&["--subnet", "/24", "--nodes", "4", "--warm-per-node", "60"]);
    assert_eq!(p["subnet"]["block"]["usable"], 252);
    assert_eq!(p["occupancy"]["consumption"], 240);
    assert_eq!(p["occupancy"]["shortfall"], 0);
    assert_eq!(p["status"]["permille"], 952);
    assert_eq!(level(&p), ("EMERGENCY".into(), true));

    let p = pool(&["--subnet", "/24", "--nodes", "6", "--warm-per-node", "60"]);
    assert_eq!(p["occupancy"]["consumption"], 360);
    assert_eq!(p["occupancy"]["shortfall"], 108);
    assert_eq!(p["occupancy"]["max_nodes"], 4);
    assert_eq!(level(&p).0, "EXHAUSTED");
}

#[test]
fn t7_a_23_cannot_hold_fifty_nodes() {
    let p = pool(&["--subnet", "/23", "--max-pods", "40", "--nodes", "50"]);
    let s = &p["subnet"];
    assert_eq!(s["block"]["usable"], 508);
    assert_eq!(s["fits"], false);
    assert_eq!(s["max_nodes_raw"], 12);
    assert_eq!(s["max_nodes_buffered"], 9);
    let (_, text, _) = run(&["plan", "pods", "--subnet", "/23", "--max-pods", "40", "--nodes", "50"]);
    common::assert_has(
        &text,
        &[
            "/23: 512 addresses, 508 usable (4 reserved): does NOT fit the need of 2600",
            "holds 12 nodes at maxPods 40, 9 with the 30% buffer",
            "verdict: NOT every pool fits",
        ],
    );
}

#[test]
fn t8_t9_t10_node_ranges() {
    for (cidr, mask, max_pods, nodes, ips, pods) in [
        ("10.244.0.0/16", "24", None, 256, 254, 110),
        ("10.244.0.0/16", "25", None, 512, 126, 110),
        ("10.212.0.0/16", "22", Some("110"), 64, 1022, 110),
    ] {
        let mut args = vec![
            "plan",
            "node-cidr",
            "--cluster-cidr",
            cidr,
            "--mask",
            mask,
            "--format",
            "json",
        ];
        if let Some(m) = max_pods {
            args.extend(["--max-pods", m]);
        }
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(v["max_nodes"], nodes, "{cidr} /{mask}");
        assert_eq!(v["pod_ips_per_node"], ips, "{cidr} /{mask}");
        assert_eq!(v["effective_pods_per_node"], pods, "{cidr} /{mask}");
        assert_eq!(v["max_pods_is_default"], max_pods.is_none());
    }
    let (_, text, _) = run(&[
        "plan",
        "node-cidr",
        "--cluster-cidr",
        "10.212.0.0/16",
        "--mask",
        "22",
        "--max-pods",
        "110",
    ]);
    common::assert_has(
        &text,
        &[
            "max nodes         64",
            "pod IPs per node  1022",
            "warning: kubelet maxPods 110 caps a node at 110 pods though its /22 has 1022 pod addresses",
        ],
    );
    // The same arithmetic inside a pool plan, with the nodes beyond the ranges named.
    let p = pool(&[
        "--cluster-cidr",
        "10.244.0.0/22",
        "--node-mask",
        "24",
        "--nodes",
        "5",
        "--max-pods",
        "110",
    ]);
    assert_eq!(p["overlay"]["max_nodes"], 4);
    let warnings = p["warnings"].to_string();
    assert!(
        warnings.contains("5 nodes exceed the 4 node ranges of /24 in 10.244.0.0/22"),
        "{warnings}"
    );
}

#[test]
fn t11_the_nic_cap_overrides_max_pods() {
    let p = pool(&["--max-pods", "64", "--nic-ip-limit", "40", "--nodes", "10"]);
    assert_eq!(p["effective_max_pods"], 40);
    assert_eq!(p["demand"]["raw"], 400);
    assert!(p["warnings"][0]
        .as_str()
        .unwrap_or("")
        .starts_with("maxPods 64 has no effect beyond 40"));
    // Two NICs lift the cap above maxPods: no warning.
    let p = pool(&[
        "--max-pods",
        "64",
        "--nic-ip-limit",
        "40",
        "--nics",
        "2",
        "--nodes",
        "10",
    ]);
    assert_eq!(p["effective_max_pods"], 64);
    assert_eq!(p["warnings"], serde_json::json!([]));
}

#[test]
fn t13_thresholds_count_the_tie() {
    for (in_use, want, guard) in [
        ("176", "OK", false),
        ("177", "WATCH", false),
        ("202", "WATCH", true),
        ("214", "WATCH", true),
        ("215", "EMERGENCY", true),
        ("252", "EMERGENCY", true),
        ("253", "EXHAUSTED", true),
    ] {
        let p = pool(&["--subnet", "/24", "--in-use", in_use]);
        assert_eq!(level(&p), (want.to_string(), guard), "in use {in_use}");
        assert_eq!(p["status"]["basis"], "in use");
    }
}

#[test]
fn t14_t15_t16_nodes_a_subnet_holds() {
    for (subnet, max_pods, raw, buffered) in [("/20", "60", 68, 52), ("/20", "80", 51, 39), ("/24", "110", 2, 1)] {
        let s = pool(&["--subnet", subnet, "--max-pods", max_pods])["subnet"].clone();
        assert_eq!(s["max_nodes_raw"], raw, "{subnet} {max_pods}");
        assert_eq!(s["max_nodes_buffered"], buffered, "{subnet} {max_pods}");
    }
}

#[test]
fn t18_a_dedicated_share_and_the_shared_buffer() {
    let p = pool(&["--max-pods", "40", "--nodes", "40", "--dedicated-pct", "70"]);
    assert_eq!(p["demand"]["need"], 2080);
    assert_eq!(p["demand"]["recommended"]["prefix_len"], 20);
    let d = &p["dedicated"];
    assert_eq!((d["need"].as_u64(), d["shared_need"].as_u64()), (Some(1456), Some(624)));
    assert_eq!(d["block"]["prefix_len"], 21);
    assert_eq!(d["block"]["usable"], 2044);
}

fn pools_file(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plan");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write pools file");
    path
}

/// Project X after tiering ([004] §4.4): four pools carved from one supernet.
const PROJECT_X: &str = "\
supernet: 10.20.0.0/16
pools:
  - {name: core-online, max_pods: 40, nodes: 30}
  - {name: data, max_pods: 20, nodes: 10, subnet: /24}
  - {name: async, max_pods: 60, subnet: /20}
  - {name: offline, max_pods: 80, subnet: /20, zones: 1}
";

#[test]
fn pools_are_carved_largest_first_and_judged() {
    let path = pools_file("project-x.yaml", PROJECT_X);
    let p = path.to_str().expect("utf-8 path");
    let (code, out, err) = run(&["plan", "pods", "--pools", p, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let carved: Vec<(String, Vec<String>)> = v["carving"]["pools"]
        .as_array()
        .expect("carving")
        .iter()
        .map(|c| {
            let nets = c["subnets"]
                .as_array()
                .expect("subnets")
                .iter()
                .map(|n| n.as_str().unwrap_or("").to_string());
            (c["pool"].as_str().unwrap_or("").to_string(), nets.collect())
        })
        .collect();
    let want = |n: &str, s: &str| (n.to_string(), vec![s.to_string()]);
    assert_eq!(
        carved,
        vec![
            want("core-online", "10.20.32.0/21"),
            want("data", "10.20.40.0/24"),
            want("async", "10.20.0.0/20"),
            want("offline", "10.20.16.0/20"),
        ]
    );
    assert_eq!(v["carving"]["used"], 4096 * 2 + 2048 + 256);
    // [004]'s "data" pool: 260 needed, a /24 holds 252 (k-8s-cidr-migrations.md §6 item 1).
    assert_eq!(v["verdict"]["fits"], false);
    let (_, text, _) = run(&["plan", "pods", "--pools", p]);
    common::assert_has(
        &text,
        &[
            "carved from 10.20.0.0/16 (65536 addresses):",
            "  core-online  10.20.32.0/21",
            "verdict: NOT every pool fits; 1820 addresses needed in all",
            "  data: needs 260 addresses at 10 nodes, /24 holds 252 (room for 9 nodes with the buffer)",
        ],
    );
}

#[test]
fn a_full_supernet_leaves_zones_without_a_subnet() {
    let path = pools_file(
        "full.yaml",
        "supernet: 10.30.0.0/22\npools:\n  - {name: big, max_pods: 40, nodes: 30, zones: 3}\n",
    );
    let (code, out, _) = run(&[
        "plan",
        "pods",
        "--pools",
        path.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["carving"]["pools"][0]["missing"], 3);
    assert_eq!(v["verdict"]["fits"], false);
}

#[test]
fn bad_pools_files_name_the_line() {
    for (name, text, want) in [
        (
            "overlap.yaml",
            "pools:\n  - {name: a, max_pods: 40, nodes: 30, subnet: 10.20.0.0/21}\n  - {name: b, max_pods: 20, nodes: 10, subnet: 10.20.4.0/24}\n",
            "overlap.yaml:3:48: error: pool 'b': subnet 10.20.4.0/24 overlaps pool 'a''s subnet 10.20.0.0/21 (line 2)",
        ),
        (
            "zero.yaml",
            "pools:\n  - name: a\n    max_pods: 40\n    nodes: 0\n",
            "zero.yaml:4:12: error: pool 'a': nodes 0: a pool needs at least one node",
        ),
        (
            "mask.yaml",
            "pools:\n  - {name: a, cluster_cidr: 10.244.0.0/16, node_mask: 8}\n",
            "mask.yaml:2:55: error: pool 'a': node_mask /8 is shorter than the cluster CIDR 10.244.0.0/16",
        ),
        (
            "dup.yaml",
            "pools:\n  - {name: a, max_pods: 1, nodes: 1}\n  - {name: a, max_pods: 1, nodes: 1}\n",
            "dup.yaml:3:12: error: pool 'a' is already defined at line 2",
        ),
        (
            "outside.yaml",
            "supernet: 10.20.0.0/16\npools:\n  - {name: a, subnet: 10.21.0.0/24}\n",
            "outside.yaml:3:23: error: pool 'a': subnet 10.21.0.0/24 is outside the supernet 10.20.0.0/16",
        ),
        (
            "hostbits.yaml",
            "pools:\n  - {name: a, subnet: 10.20.0.1/24}\n",
            "hostbits.yaml:2:23: error: subnet '10.20.0.1/24' has host bits set: the subnet is 10.20.0.0/24",
        ),
        (
            "nothing.yaml",
            "pools:\n  - {name: a, nodes: 3}\n",
            "nothing.yaml:2:5: error: pool 'a': nothing to plan: give max_pods and nodes",
        ),
        (
            "typo.yaml",
            "pools:\n  - {name: a, max_pod: 3, nodes: 3}\n",
            "typo.yaml:2:15: error: unknown field `max_pod`, expected one of name, max_pods,",
        ),
    ] {
        let path = pools_file(name, text);
        let (code, out, err) = run(&["plan", "pods", "--pools", path.to_str().expect("utf-8")]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(out.is_empty(), "{name}: nothing on stdout: {out}");
        let shown = err.replace(path.to_str().expect("utf-8"), name);
        assert!(shown.starts_with(want), "{name}:\n{shown}\nwanted: {want}");
    }
}

#[test]
fn bad_flags_exit_2_with_the_flag() {
    for (args, want) in [
        (
            &["--max-pods", "40", "--nodes", "0"][..],
            "fabsim: --nodes 0: a pool needs at least one node",
        ),
        (
            &["--nodes", "3"][..],
            "fabsim: nothing to plan: give --max-pods and --nodes",
        ),
        (
            &["--cluster-cidr", "10.244.0.0/16", "--node-mask", "12"][..],
            "fabsim: --node-mask /12 is shorter than the cluster CIDR 10.244.0.0/16",
        ),
        (
            &["--subnet", "/40"][..],
            "fabsim: --subnet '/40': expected a prefix length /0 to /32",
        ),
        (
            &["--max-pods", "110", "--nodes", "200000"][..],
            "fabsim: --nodes 200000: the pool needs 28600000 addresses, more than a /8 holds",
        ),
        (
            &["--max-pods", "1", "--nodes", "1", "--dedicated-pct", "0"][..],
            "fabsim: --dedicated-pct 0: expected a percentage from 1 to 100",
        ),
    ] {
        let mut all = vec!["plan", "pods"];
        all.extend_from_slice(args);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.starts_with(want), "{args:?}:\n{err}\nwanted: {want}");
    }
    let (code, _, err) = run(&["plan", "node-cidr", "--cluster-cidr", "10.244.0.0/16", "--mask", "8"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("fabsim: --mask /8: expected a node mask from /16 (the cluster prefix) to /32"),
        "{err}"
    );
}

#[test]
fn plans_are_deterministic() {
    let path = pools_file("again.yaml", PROJECT_X);
    let p = path.to_str().expect("utf-8");
    let a = run(&["plan", "pods", "--pools", p, "--format", "json"]);
    let b = run(&["plan", "pods", "--pools", p, "--format", "json"]);
    assert_eq!(a, b);
}
