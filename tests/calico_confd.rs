//! confd golden tests: for every Calico v3.25.0 fixture case (tests/data/calico-confd-golden),
//! the datastore built from `kdd-nodes.yaml` + `kdd-ipam.yaml` + the case's `input.yaml`,
//! rendered for kube-master, must give
//! - byte for byte the text the real v3.25.0 templates produce (`template-v3.25.0/`, rendered by
//!   Go's text/template, see the data README);
//! - the upstream golden files, compared as Calico's own test does (`diff --ignore-blank-lines`,
//!   confd/tests/test_suite_common.sh `compare_templates`), and byte for byte where the upstream
//!   file is current (see `UPSTREAM_BYTE_EXACT`).
//!
//! Plus: the seed lab's k-w3 bird.cfg at s1, and every rendering parses with `apply_bird`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use fabsim::calico::confd::{render, render_with, ConfdEnv, RenderedBird};
use fabsim::calico::datastore::Datastore;
use fabsim::diag::TextOrigin;
use fabsim::input::bird::apply_bird;
use fabsim::input::topology::parse_topology;

const ROOT: &str = "tests/data/calico-confd-golden";
const FILES: [&str; 3] = ["bird.cfg", "bird_aggr.cfg", "bird_ipam.cfg"];

/// Upstream golden files that equal the v3.25.0 templates' output byte for byte. The others
/// were recorded by older templates and differ only in blank lines (Calico never noticed: its
/// test ignores blank lines). `upstream_staleness_is_only_blank_lines` keeps this list honest.
const UPSTREAM_BYTE_EXACT: [(&str, &str); 2] = [
    ("explicit_peering__global", "bird.cfg"),
    ("mesh__bgp-export", "bird.cfg"),
];

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn case_dir(case: &str) -> PathBuf {
    Path::new(ROOT).join(case)
}

fn datastore(case: &str) -> Datastore {
    let nodes = read(&Path::new(ROOT).join("kdd-nodes.yaml"));
    let ipam = read(&Path::new(ROOT).join("kdd-ipam.yaml"));
    let input = read(&case_dir(case).join("input.yaml"));
    let input_name = format!("{case}/input.yaml");
    let files = [
        ("kdd-nodes.yaml", nodes.as_str()),
        ("kdd-ipam.yaml", ipam.as_str()),
        (input_name.as_str(), input.as_str()),
    ];
    match Datastore::from_yaml(&files) {
        Ok((ds, _warnings)) => ds,
        Err(e) => panic!("{case}: datastore rejected:\n{e}"),
    }
}

fn rendered(r: &RenderedBird, file: &str) -> String {
    match file {
        "bird.cfg" => r.bird_cfg.clone(),
        "bird_aggr.cfg" => r.bird_aggr_cfg.clone(),
        _ => r.bird_ipam_cfg.clone(),
    }
}

/// A line diff (expected vs actual) for failure messages.
fn diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.split('\n').collect();
    let a: Vec<&str> = actual.split('\n').collect();
    // Longest common subsequence table (files are small).
    let mut lcs = vec![vec![0usize; a.len() + 1]; e.len() + 1];
    for i in (0..e.len()).rev() {
        for j in (0..a.len()).rev() {
            lcs[i][j] = if e[i] == a[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::from("--- expected\n+++ actual\n"));
    while i < e.len() || j < a.len() {
        if i < e.len() && j < a.len() && e[i] == a[j] {
            i += 1;
            j += 1;
        } else if j < a.len() && (i == e.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{:4}: {:?}\n", j + 1, a[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{:4}: {:?}\n", i + 1, e[i]));
            i += 1;
        }
    }
    out
}

fn non_blank(s: &str) -> Vec<&str> {
    s.lines().filter(|l| !l.trim().is_empty()).collect()
}

fn check_case(case: &str) {
    let ds = datastore(case);
    let r = render(&ds, "kube-master").unwrap_or_else(|e| panic!("{case}: {e}"));
    let mut failures = Vec::new();
    for file in FILES {
        let actual = rendered(&r, file);
        let template = read(&case_dir(case).join("template-v3.25.0").join(file));
        if actual != template {
            failures.push(format!(
                "{case}/{file} vs the v3.25.0 template output:\n{}",
                diff(&template, &actual)
            ));
        }
        let upstream = read(&case_dir(case).join(file));
        if UPSTREAM_BYTE_EXACT.contains(&(case, file)) {
            if actual != upstream {
                failures.push(format!(
                    "{case}/{file} vs upstream (byte for byte):\n{}",
                    diff(&upstream, &actual)
                ));
            }
        } else if non_blank(&actual) != non_blank(&upstream) {
            let (u, a) = (non_blank(&upstream).join("\n"), non_blank(&actual).join("\n"));
            failures.push(format!(
                "{case}/{file} vs upstream (ignoring blank lines):\n{}",
                diff(&u, &a)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    parses_with_apply_bird(case, &r);
}

/// The rendered files load into a host with `apply_bird` without errors.
fn parses_with_apply_bird(what: &str, r: &RenderedBird) {
    let mut net = parse_topology("devices:\n  node:\n    kind: linux\n", "t.yaml")
        .expect("one host")
        .net;
    let dev = net.device_by_name("node").expect("node");
    let origin = |f: &str| TextOrigin {
        file: f.to_string(),
        line: 1,
        col: 1,
    };
    let includes: BTreeMap<String, (String, TextOrigin)> = r
        .includes()
        .iter()
        .map(|(n, t)| (n.to_string(), (t.to_string(), origin(n))))
        .collect();
    if let Err(e) = apply_bird(&mut net, dev, &r.bird_cfg, &origin("bird.cfg"), &includes) {
        panic!("{what}: rendered config does not parse:\n{e}");
    }
}

#[test]
fn golden_mesh_ipip_always() {
    check_case("mesh__ipip-always");
}

#[test]
fn golden_mesh_ipip_cross_subnet() {
    check_case("mesh__ipip-cross-subnet");
}

#[test]
fn golden_mesh_ipip_off() {
    check_case("mesh__ipip-off");
}

#[test]
fn golden_mesh_bgp_export() {
    check_case("mesh__bgp-export");
}

#[test]
fn golden_explicit_peering_global() {
    check_case("explicit_peering__global");
}

#[test]
fn golden_explicit_peering_specific_node() {
    check_case("explicit_peering__specific_node");
}

#[test]
fn golden_explicit_peering_route_reflector() {
    check_case("explicit_peering__route_reflector");
}

#[test]
fn golden_explicit_peering_keepnexthop() {
    check_case("explicit_peering__keepnexthop");
}

/// Every fixture directory is covered by a test above, and the upstream files outside
/// `UPSTREAM_BYTE_EXACT` really do differ from the template output (in blank lines only).
#[test]
fn upstream_staleness_is_only_blank_lines() {
    let mut cases: Vec<String> = fs::read_dir(ROOT)
        .expect("golden dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("input.yaml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 8, "{cases:?}");
    for case in &cases {
        for file in FILES {
            let template = read(&case_dir(case).join("template-v3.25.0").join(file));
            let upstream = read(&case_dir(case).join(file));
            let exact = UPSTREAM_BYTE_EXACT.contains(&(case.as_str(), file));
            assert_eq!(template == upstream, exact, "{case}/{file}: update UPSTREAM_BYTE_EXACT");
            assert_eq!(non_blank(&template), non_blank(&upstream), "{case}/{file}");
        }
    }
}

// --- the seed lab at s1 ------------------------------------------------------------------------

/// The lab at s1 as the datastore holds it in KDD mode: four Kubernetes nodes with Calico's
/// annotations, no BGPConfiguration (defaults: AS 64512, mesh on), the pool calico-node creates
/// from the manifest, and each node's first block.
const SEED_S1: &str = "\
apiVersion: v1
kind: Node
metadata:
  name: k-master
  labels: {kubernetes.io/hostname: k-master, node-role.kubernetes.io/control-plane: ''}
  annotations:
    projectcalico.org/IPv4Address: 10.0.137.12/24
    projectcalico.org/IPv4IPIPTunnelAddr: 10.66.73.128
spec: {podCIDR: 10.66.0.0/24}
---
apiVersion: v1
kind: Node
metadata:
  name: k-w1
  labels: {kubernetes.io/hostname: k-w1}
  annotations: {projectcalico.org/IPv4Address: 10.0.137.15/24}
---
apiVersion: v1
kind: Node
metadata:
  name: k-w2
  labels: {kubernetes.io/hostname: k-w2}
  annotations: {projectcalico.org/IPv4Address: 10.0.137.112/24}
---
apiVersion: v1
kind: Node
metadata:
  name: k-w3
  labels: {kubernetes.io/hostname: k-w3}
  annotations: {projectcalico.org/IPv4Address: 10.0.137.142/24}
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: {name: default-ipv4-ippool}
spec: {cidr: 10.66.0.0/16, blockSize: 26, ipipMode: Always, vxlanMode: Never, natOutgoing: true, nodeSelector: all()}
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: k-w3-10-66-122-192-26}
spec: {node: k-w3, cidr: 10.66.122.192/26, state: confirmed, deleted: 'false'}
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: {name: k-w1-10-66-207-64-26}
spec: {node: k-w1, cidr: 10.66.207.64/26, state: confirmed, deleted: 'false'}
";

/// Whitespace-insensitive lines: the seed transcription lost indentation and collapsed runs of
/// spaces and blank lines.
fn normalised(s: &str) -> Vec<String> {
    s.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn seed_k_w3_bird_cfg_at_s1() {
    let (ds, warnings) = Datastore::from_yaml(&[("seed-s1.yaml", SEED_S1)]).expect("seed datastore");
    assert!(warnings.is_empty(), "{warnings:?}");
    let r = render(&ds, "k-w3").expect("k-w3 renders");
    let seed = read(Path::new("tests/data/k-w3/bird.cfg"));
    let (want, got) = (normalised(&seed), normalised(&r.bird_cfg));
    assert_eq!(want, got, "{}", diff(&want.join("\n"), &got.join("\n")));

    // The content, asserted directly (issue 4): names in node-name order, one passive session.
    let protocols: Vec<&str> = r.bird_cfg.lines().filter(|l| l.starts_with("protocol bgp")).collect();
    assert_eq!(
        protocols,
        [
            "protocol bgp Mesh_10_0_137_12 from bgp_template {",
            "protocol bgp Mesh_10_0_137_15 from bgp_template {",
            "protocol bgp Mesh_10_0_137_112 from bgp_template {",
        ]
    );
    assert_eq!(r.bird_cfg.matches("passive on;").count(), 1);
    let w1 = r
        .bird_cfg
        .split("protocol bgp Mesh_10_0_137_15")
        .nth(1)
        .expect("k-w1 session");
    assert!(w1.split('}').next().is_some_and(|body| body.contains("passive on;")));
    assert!(r.bird_cfg.contains("# Skipping ourselves (10.0.137.142)"));
    assert!(r.bird_cfg.contains("router id 10.0.137.142;"));
    assert!(r.bird_aggr_cfg.contains("   route 10.66.122.192/26 blackhole;"));
    assert!(!r.bird_aggr_cfg.contains("10.66.207.64"), "k-w1's block is not k-w3's");
    assert!(r.bird_ipam_cfg.contains("krt_tunnel = \"tunl0\";"));
    parses_with_apply_bird("seed k-w3", &r);

    // On k-w1 the comparison goes the other way: "10.0.137.142" < "10.0.137.15", so k-w1 opens
    // the session to k-w3 and is passive only toward nothing greater than "10.0.137.15".
    let w1 = render(&ds, "k-w1").expect("k-w1 renders");
    let k_w3 = w1
        .bird_cfg
        .split("protocol bgp Mesh_10_0_137_142")
        .nth(1)
        .expect("session to k-w3");
    assert!(!k_w3.split('}').next().unwrap_or("").contains("passive on;"));
}

#[test]
fn router_id_override_and_unknown_node() {
    let (ds, _) = Datastore::from_yaml(&[("seed-s1.yaml", SEED_S1)]).expect("seed datastore");
    let env = ConfdEnv {
        router_id: Some("10.255.0.3".into()),
    };
    let r = render_with(&ds, "k-w3", &env).expect("renders");
    assert!(r.bird_cfg.contains("router id 10.255.0.3;"));
    assert!(render(&ds, "nope").is_err());
}

#[test]
fn invalid_resources_name_file_line_col() {
    let both = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: p\nspec:\n  cidr: 10.66.0.0/16\n  ipipMode: CrossSubnet\n  vxlanMode: Always\n";
    let e = Datastore::from_yaml(&[("pools.yaml", both)]).expect_err("rejected");
    let msg = e.to_string();
    assert!(msg.starts_with("pools.yaml:8:14: error:"), "{msg}");
    assert!(
        msg.contains("Cannot enable both VXLAN and IPIP on the same IPPool"),
        "{msg}"
    );
    let small = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.66.0.0/27}\n";
    let e = Datastore::from_yaml(&[("pools.yaml", small)]).expect_err("too small");
    assert!(e.to_string().contains("IP pool size is too small"), "{e}");
}
