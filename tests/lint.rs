//! `fabsim lint`: the bundled files have no warnings; a file with unmodelled lines lists each
//! with its line, as text and JSON; errors exit 2.

use std::process::Command;

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

#[test]
fn bundled_topologies_and_scenarios_have_no_warnings() {
    for dir in ["topologies", "scenarios"] {
        let (code, out, err) = fabsim(&["lint", dir, "--format", "json"]);
        assert_eq!(code, 0, "{dir}: {err}");
        let doc: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(doc["warnings"], serde_json::json!([]), "{dir}");
    }
}

#[test]
fn unmodelled_lines_are_listed_with_their_line_and_why() {
    let (code, out, err) = fabsim(&["lint", "tests/data/lint/unmodelled.yaml"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("FILE:LINE") && lines[0].ends_with("WHY NOT MODELLED"),
        "{out}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("tests/data/lint/unmodelled.yaml:8 ")
            && l.contains("ipv6 address 2001:db8::1/64")
            && l.contains("is not modelled by fabsim")),
        "{out}"
    );
    assert_eq!(lines.last(), Some(&"2 warning(s)"), "{out}");
    let (_, json, _) = fabsim(&[
        "lint",
        "tests/data/lint/unmodelled.yaml",
        "--format",
        "json",
        "--verbose",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(doc["warnings"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["warnings"][0]["line"], 8);
    let ignored = doc["ignored_by_design"].as_array().expect("listed with --verbose");
    assert!(ignored
        .iter()
        .any(|i| i["format"] == "containerlab" && i["keyword"] == "mgmt-ipv4"));
    assert!(ignored.iter().any(|i| i["format"] == "frr" && i["keyword"] == "log"));
}

#[test]
fn a_file_with_errors_exits_2() {
    let (code, _, err) = fabsim(&["lint", "tests/bad/rfc7938-typo.clab.yml"]);
    assert_eq!(code, 2);
    assert!(err.contains("rfc7938-typo.clab.yml:60:"), "{err}");
}
