//! `fabsim run`'s reports and expectation kinds, and `fabsim explain`, end to end through the
//! binary: each new expectation kind holding and failing (with what was found and why), exit
//! codes 0/1/2, the JSON document (keys, order, determinism), JUnit XML (well-formed, the
//! schema's required elements, escaping) and the hop-by-hop explanation of a flow.

mod common;

use std::process::Output;

use common::fabsim;
use quick_xml::events::Event;
use quick_xml::Reader;
use serde_json::Value;

const PASS: &str = "tests/data/report/checks-pass.yaml";
const FAIL: &str = "tests/data/report/checks-fail.yaml";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `fabsim run FILE --format json`, its exit code and the parsed document.
fn run_json(file: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["run", file, "--format", "json"];
    args.extend_from_slice(extra);
    let o = fabsim(&args);
    let doc = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), String::from_utf8_lossy(&o.stderr)));
    (o.status.code(), doc)
}

/// Every check of the run, in order.
fn checks(doc: &Value) -> Vec<&Value> {
    doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .flat_map(|s| s["checks"].as_array().expect("checks"))
        .collect()
}

/// The check whose description is `what` (the first, if several).
fn check<'a>(doc: &'a Value, what: &str) -> &'a Value {
    checks(doc)
        .into_iter()
        .find(|c| c["what"] == what)
        .unwrap_or_else(|| panic!("no check '{what}' in {doc:#}"))
}

fn detail(doc: &Value, what: &str) -> String {
    check(doc, what)["detail"].as_str().expect("detail").to_string()
}

#[test]
fn new_expectation_kinds_hold() {
    let (code, doc) = run_json(PASS, &[]);
    let all = checks(&doc);
    let failed: Vec<&&Value> = all.iter().filter(|c| c["ok"] != true).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(code, Some(0));
    for what in [
        "k-w1's BGP session with 10.0.137.12 is Established",
        "Leaf-1's BGP session with 10.1.11.1 is Active",
        "k-w1 has received 1, accepted 1 prefixes from 10.0.137.12",
        "Leaf-1 has received 0, accepted 0 prefixes from 10.1.11.1",
        "k-w1 has a route for 10.66.111.0/24 from bird via 10.0.137.12",
        "k-w1 has a route for 10.1.11.0/31 from kernel",
        "k-w1 has no route for 10.66.111.0/24 from ospf",
        "Leaf-1 has a route for 10.2.22.0/31 from ospf via 10.11.99.0",
        "k-w1# ip route",
    ] {
        assert_eq!(check(&doc, what)["ok"], true, "{what}");
    }
    assert_eq!(doc["summary"]["passed"], all.len());
}

/// The prefix counts are the ones `show ip bgp summary` prints as PfxRcd/PfxAcc.
#[test]
fn prefixes_agree_with_show_ip_bgp_summary() {
    let o = fabsim(&["show", "scenarios/seed-lab-bgp.yaml", "Leaf-2", "show ip bgp summary"]);
    let row = stdout(&o)
        .lines()
        .find(|l| l.trim_start().starts_with("10.2.22.1 "))
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .expect("a row for 10.2.22.1");
    let (rcvd, acc) = (&row[row.len() - 2], &row[row.len() - 1]);
    // The bundled scenario again, with a checkpoint at its end expecting those counts.
    let root = env!("CARGO_MANIFEST_DIR");
    let mut text = std::fs::read_to_string(format!("{root}/scenarios/seed-lab-bgp.yaml")).expect("read");
    text = text.replace("topology: ../", &format!("topology: {root}/"));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "  - id: counts\n    expect:\n      after:\n        - prefixes: {{on: Leaf-2, neighbor: 10.2.22.1, received: {rcvd}, accepted: {acc}}}\n"
    ));
    let file = format!("{}/prefixes-summary.yaml", env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(&file, text).expect("write scenario");
    let (code, doc) = run_json(&file, &[]);
    let what = format!("Leaf-2 has received {rcvd}, accepted {acc} prefixes from 10.2.22.1");
    assert_eq!(check(&doc, &what)["ok"], true, "{:#}", check(&doc, &what));
    assert_eq!(code, Some(0));
}

#[test]
fn new_expectation_kinds_fail_saying_what_and_why() {
    let (code, doc) = run_json(FAIL, &[]);
    assert_eq!(code, Some(1));
    let all = checks(&doc);
    let held: Vec<&&Value> = all.iter().filter(|c| c["ok"] == true).collect();
    assert!(held.is_empty(), "every check of {FAIL} should fail: {held:#?}");
    assert_eq!(doc["summary"]["failed"], all.len());
    let has = |what: &str, want: &[&str]| {
        let d = detail(&doc, what);
        for w in want {
            assert!(d.contains(w), "{what}: expected `{w}` in\n{d}");
        }
    };
    has(
        "k-w1's BGP session with 10.0.137.12 is Idle",
        &["found: state Established"],
    );
    has(
        "k-w1's BGP session with 10.9.9.9 is Established",
        &["k-w1 has no BGP session with 10.9.9.9", "10.0.137.12"],
    );
    has(
        "k-w1 has received 5 prefixes from 10.0.137.12",
        &["found: received 1, accepted 1"],
    );
    has(
        "k-w1 has a route for 10.66.111.0/24 from static",
        &["found: 10.66.111.0/24 via 10.0.137.12 dev ens5 proto bird"],
    );
    has(
        "k-w1 has a route for 10.66.111.0/24 via 10.0.137.112",
        &["found: 10.66.111.0/24 via 10.0.137.12"],
    );
    has(
        "k-w1 has no route for 10.66.111.0/24 from bird",
        &["found: 10.66.111.0/24"],
    );
    has(
        "k-w1 reaches 10.99.0.1",
        &[
            "got: From 10.1.11.0 Destination Net Unreachable",
            "1. k-w1: 10.99.0.1 matches 10.0.0.0/8 (static) via 10.1.11.0, out ens3",
            "2. Leaf-1 in Ethernet3: no route to 10.99.0.1 → ICMP net unreachable from 10.1.11.0",
        ],
    );
    has(
        "client cannot reach k-w1",
        &["got: reply from 10.1.11.1", "k-w1 in ens3: delivered"],
    );
    // The two `output` failures: exact lines out of order, a pattern that matches nothing.
    let outputs: Vec<String> = all
        .iter()
        .filter(|c| c["what"] == "k-w1# ip route")
        .map(|c| c["detail"].as_str().expect("detail").to_string())
        .collect();
    assert!(
        outputs[0].starts_with("missing exact line after `10.66.111.0/24"),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[1].starts_with("no line matches /^10\\.66\\.112\\.0/24/"),
        "{}",
        outputs[1]
    );
    assert!(outputs
        .iter()
        .all(|o| o.contains("output was:\ndefault via 10.0.137.1")));
    // The Leaf-1 session that is configured but not up says why, as the speaker does.
    let leaf = all
        .iter()
        .filter(|c| c["what"] == "Leaf-1's BGP session with 10.1.11.1 is Established")
        .map(|c| c["detail"].as_str().expect("detail"))
        .collect::<Vec<_>>();
    assert_eq!(leaf[0], "Leaf-1 runs no BGP");
    assert!(
        leaf[1].starts_with("found: state Active (last error: Socket:"),
        "{}",
        leaf[1]
    );
}

#[test]
fn exit_codes_0_1_2() {
    assert_eq!(fabsim(&["run", PASS]).status.code(), Some(0));
    assert_eq!(fabsim(&["run", FAIL]).status.code(), Some(1));
    for bad in [
        vec!["run", PASS, "--until", "nope"],
        vec!["run", "topologies/leaf-spine-2x2.yaml"],
        vec!["run", "tests/bad-scenarios/check-bad-regex.yaml"],
        vec!["run", PASS, "--format", "yaml"],
        vec!["run", PASS, "--junit", "/nonexistent-dir/x.xml"],
    ] {
        let o = fabsim(&bad);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!o.stderr.is_empty(), "{bad:?} says why");
    }
}

/// The document's top-level keys, in the order they are printed (pretty JSON, two spaces).
fn top_level_keys(json: &str) -> Vec<String> {
    json.lines()
        .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
        .filter_map(|l| l.trim_start().strip_prefix('"')?.split('"').next().map(str::to_string))
        .collect()
}

#[test]
fn json_report_has_stable_keys_and_is_byte_identical() {
    let a = fabsim(&["run", FAIL, "--format", "json"]);
    let b = fabsim(&["run", FAIL, "--format", "json"]);
    assert_eq!(a.stdout, b.stdout, "two runs differ");
    let text = stdout(&a);
    assert_eq!(
        top_level_keys(&text),
        ["schema", "scenario", "file", "topology", "seed", "until", "fabric", "start", "steps", "summary"]
    );
    let doc: Value = serde_json::from_str(&text).expect("one JSON document");
    assert_eq!(doc["seed"], 1, "the default seed is printed");
    assert_eq!(doc["summary"]["exit_code"], 1);
    let step = &doc["steps"][0];
    for key in [
        "id",
        "name",
        "change",
        "start_ms",
        "settled_ms",
        "quiet",
        "route_changes",
        "findings",
        "warnings",
        "checks",
        "commands",
    ] {
        assert!(step.get(key).is_some(), "step has `{key}`: {step:#}");
    }
    let c = &step["checks"][0];
    for key in ["when", "what", "ok", "detail", "span"] {
        assert!(c.get(key).is_some(), "check has `{key}`: {c:#}");
    }
    assert_eq!(c["when"], "after");
    assert_eq!(c["span"]["file"], FAIL);
    assert!(c["span"]["line"].as_u64().is_some_and(|l| l > 1));
}

#[test]
fn seed_until_and_step_alias() {
    let (_, doc) = run_json(PASS, &["--seed", "42", "--until", "mesh"]);
    assert_eq!(doc["seed"], 42);
    assert_eq!(doc["until"], "mesh");
    let ids: Vec<&str> = doc["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["mesh"]);
    let until = fabsim(&["run", PASS, "--until", "mesh"]);
    let step = fabsim(&["run", PASS, "--step", "mesh"]);
    assert_eq!(until.stdout, step.stdout);
    let text = stdout(&fabsim(&["run", PASS, "--seed", "42"]));
    assert!(text.lines().next().is_some_and(|l| l.ends_with(", seed 42")), "{text}");
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let piped = fabsim(&["run", FAIL]);
    let never = fabsim(&["run", FAIL, "--color", "never"]);
    let always = fabsim(&["run", FAIL, "--color", "always"]);
    assert!(
        !piped.stdout.contains(&0x1b),
        "no ANSI codes when stdout is not a terminal"
    );
    assert_eq!(piped.stdout, never.stdout);
    let coloured = stdout(&always);
    assert!(
        coloured.contains("\u{1b}[31m") || coloured.contains("\u{1b}[1m\u{1b}[31m"),
        "{coloured}"
    );
    // Stripped of its styles, the coloured report is the plain one.
    let plain = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .expect("regex")
        .replace_all(&coloured, "");
    assert_eq!(plain, stdout(&never));
}

/// A `<tag>`'s attributes, unescaped.
fn attrs(e: &quick_xml::events::BytesStart) -> Vec<(String, String)> {
    e.attributes()
        .map(|a| {
            let a = a.expect("well-formed attribute");
            (
                String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                a.unescape_value().expect("valid escapes").into_owned(),
            )
        })
        .collect()
}

fn attr<'a>(a: &'a [(String, String)], key: &str) -> &'a str {
    a.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("missing attribute {key} in {a:?}"))
}

#[test]
fn junit_xml_is_well_formed_with_the_required_elements() {
    let dir = env!("CARGO_TARGET_TMPDIR");
    let file = format!("{dir}/checks-fail.junit.xml");
    let o = fabsim(&["run", FAIL, "--junit", &file]);
    assert_eq!(o.status.code(), Some(1));
    let xml = std::fs::read_to_string(&file).expect("junit file written");
    let mut reader = Reader::from_str(&xml);
    let (mut path, mut suite, mut cases, mut failures) = (Vec::<String>::new(), None, Vec::new(), Vec::new());
    loop {
        let ev = reader
            .read_event()
            .unwrap_or_else(|e| panic!("not well-formed: {e}\n{xml}"));
        let (start, empty) = match &ev {
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            Event::End(_) => {
                path.pop();
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let e = start.expect("a start tag");
        let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let a = attrs(&e);
        match name.as_str() {
            "testsuite" => {
                assert_eq!(path, ["testsuites"]);
                suite = Some(a);
            }
            "testcase" => {
                assert_eq!(path, ["testsuites", "testsuite"]);
                cases.push(a);
            }
            "failure" => {
                assert_eq!(path.last().map(String::as_str), Some("testcase"));
                failures.push(a);
            }
            _ => {}
        }
        if !empty {
            path.push(name);
        }
    }
    assert!(path.is_empty(), "unclosed elements: {path:?}");
    let suite = suite.expect("a <testsuite>");
    assert_eq!(attr(&suite, "name"), "checks-fail");
    let (_, doc) = run_json(FAIL, &[]);
    let n = checks(&doc).len();
    assert_eq!(attr(&suite, "tests"), n.to_string());
    assert_eq!(attr(&suite, "failures"), n.to_string());
    assert_eq!(attr(&suite, "errors"), "0");
    assert!(attr(&suite, "time").parse::<f64>().is_ok());
    assert_eq!(cases.len(), n, "one testcase per expectation");
    assert_eq!(failures.len(), n);
    assert!(cases
        .iter()
        .all(|c| ["mesh", "leaf-bgp"].contains(&attr(c, "classname"))));
    assert_eq!(attr(&cases[0], "name"), "k-w1's BGP session with 10.0.137.12 is Idle");
    assert_eq!(attr(&failures[0], "message"), "found: state Established");
    // Markup in a detail survives the round trip through escaping.
    assert!(
        failures
            .iter()
            .any(|f| attr(f, "message") == "missing line: <none> & \"quoted\""),
        "{failures:?}"
    );
}

#[test]
fn explain_an_unreachable_flow() {
    let o = fabsim(&[
        "explain",
        "scenarios/seed-lab.yaml",
        "--step",
        "s3a",
        "k-w2",
        "10.66.111.1",
    ]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let want = [
        "k-w2 → 10.66.111.1 (10.66.111.1): ICMP echo request from 10.2.22.1, after step s3a",
        "  1. k-w2: 10.66.111.1 matches 10.66.111.0/24 (bird) via 10.2.22.0, out ens3",
        "  2. Leaf-2 in Ethernet2: no route to 10.66.111.1 → ICMP net unreachable from 10.2.22.0",
        "  result: From 10.2.22.0 Destination Net Unreachable (answer back via Leaf-2 → k-w2)",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), want, "{text}");
}

#[test]
fn explain_a_delivered_flow_from_a_pod_through_ipip() {
    let o = fabsim(&[
        "explain",
        "scenarios/seed-lab.yaml",
        "--step",
        "s1",
        "default/test-pod",
        "10.66.207.66",
    ]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("  1. test-pod: 10.66.207.66 matches 0.0.0.0/0 (static) via 169.254.1.1, out eth0"),
        "{text}"
    );
    assert!(lines[2].contains("k-w3 in cali"), "{text}");
    assert!(
        lines[2].ends_with("10.66.207.66 matches 10.66.207.64/26 (bird) via 10.0.137.15, out ens5; IP-in-IP encapsulated 10.0.137.142 > 10.0.137.15"),
        "{text}"
    );
    assert!(
        lines[3].starts_with("  3. k-w1 in ens5:") && lines[3].contains("IP-in-IP decapsulated"),
        "{text}"
    );
    assert!(lines[4].ends_with("delivered, 10.66.207.66 answers"), "{text}");
    assert!(lines[5].starts_with("  result: reply from 10.66.207.66"), "{text}");
}

#[test]
fn explain_bad_input_exits_2() {
    for args in [
        vec![
            "explain",
            "scenarios/seed-lab.yaml",
            "--step",
            "s1",
            "nosuch",
            "10.0.0.1",
        ],
        vec!["explain", "scenarios/seed-lab.yaml", "--step", "s1", "client", "nosuch"],
        vec!["explain", "scenarios/seed-lab.yaml", "--step", "nope", "client", "k-w1"],
    ] {
        assert_eq!(fabsim(&args).status.code(), Some(2), "{args:?}");
    }
}

/// The spine's NAT overload shows as a rewrite of the source on the hop that does it.
#[test]
fn explain_shows_source_nat() {
    let o = fabsim(&[
        "explain",
        "scenarios/seed-lab.yaml",
        "--step",
        "s0b-nat",
        "k-w1",
        "8.8.8.8",
    ]);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.lines().any(
            |l| l.starts_with("  3. Spine-1 in Ethernet1: 8.8.8.8 matches 0.0.0.0/0 (static)")
                && l.ends_with("; source NAT 10.1.11.1 → 10.0.137.189")
        ),
        "{text}"
    );
}

/// Every bundled scenario's JSON report is the same bytes on a second run.
#[test]
fn bundled_scenarios_give_byte_identical_json() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("scenarios/")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .map(|n| format!("scenarios/{n}"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in &files {
        let a = fabsim(&["run", f, "--format", "json"]);
        let b = fabsim(&["run", f, "--format", "json"]);
        assert_eq!(a.status.code(), Some(0), "{f}: {}", String::from_utf8_lossy(&a.stderr));
        assert_eq!(a.stdout, b.stdout, "{f}: JSON differs between runs");
        let doc: Value = serde_json::from_slice(&a.stdout).expect("one JSON document");
        assert_eq!(doc["summary"]["failed"], 0, "{f}");
    }
}
