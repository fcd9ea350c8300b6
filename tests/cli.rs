//! The `fabsim` binary end to end: exit codes, byte-identical output on repeated runs for every
//! bundled file, and bad input rejected with exit code 2 and the intended message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fabsim::model::DeviceKind;

fn fabsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fabsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fabsim")
}

fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir))
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

fn rel(p: &Path) -> String {
    p.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(p)
        .display()
        .to_string()
}

/// Every query command, run twice on every bundled topology and scenario, prints the same bytes.
#[test]
fn every_bundled_file_gives_byte_identical_output() {
    let files: Vec<PathBuf> = yaml_files("topologies")
        .into_iter()
        .chain(yaml_files("scenarios"))
        .collect();
    assert!(!files.is_empty());
    for path in &files {
        let f = rel(path);
        let opened = fabsim::scenario::open(path).unwrap_or_else(|e| panic!("{e}"));
        let of_kind = |k: DeviceKind| -> Vec<String> {
            opened
                .net
                .devices
                .iter()
                .filter(|d| d.kind == k)
                .map(|d| d.name.clone())
                .collect()
        };
        let (switches, hosts) = (of_kind(DeviceKind::Eos), of_kind(DeviceKind::Linux));
        let (sw, h1, h2) = (&switches[0], &hosts[0], &hosts[hosts.len() - 1]);
        let mut commands: Vec<Vec<&str>> = vec![
            vec!["reach", &f],
            vec!["reach", &f, "--format", "json"],
            vec!["routes", &f],
            vec!["dump", &f],
            vec!["show", &f, sw, "show ip route"],
            vec!["show", &f, sw, "show ip ospf neighbor"],
            vec!["show", &f, sw, "show ip interface brief"],
            vec!["show", &f, h1, "ip route"],
            vec!["show", &f, h1, "ip addr"],
            vec!["traceroute", &f, h1, h2],
            vec!["ping", &f, h1, h2],
        ];
        if f.starts_with("scenarios") {
            commands.push(vec!["run", &f]);
        }
        for args in &commands {
            let a = fabsim(args);
            let b = fabsim(args);
            assert!(
                a.status.code().is_some_and(|c| c <= 1),
                "{args:?}: {}",
                String::from_utf8_lossy(&a.stderr)
            );
            assert!(!a.stdout.is_empty(), "{args:?} printed nothing");
            assert_eq!(a.stdout, b.stdout, "{args:?}: stdout differs between runs");
            assert_eq!(a.stderr, b.stderr, "{args:?}: stderr differs between runs");
        }
    }
}

/// The bundled seed-lab scenario passes all its expectations.
#[test]
fn seed_lab_scenario_runs_green() {
    let o = fabsim(&["run", "scenarios/seed-lab.yaml"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}

/// Every YAML file in `dir` makes `fabsim SUBCOMMAND FILE` exit 2 with the message in its
/// `.expected` next to it.
fn each_rejected_with_its_message(dir: &str, subcommand: &str, at_least: usize) {
    let bad = yaml_files(dir);
    assert!(bad.len() >= at_least, "at least {at_least} bad-input files in {dir}");
    for f in &bad {
        let f = rel(f);
        let expected = std::fs::read_to_string(Path::new(&f).with_extension("expected")).expect("expected file");
        let o = fabsim(&[subcommand, &f]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{f}: {stderr}");
        assert!(
            stderr.contains(expected.trim_end()),
            "{f}: expected\n{expected}\ngot\n{stderr}"
        );
    }
}

/// Each file in tests/bad/ is rejected with exit code 2 and the message in its `.expected`.
#[test]
fn bad_inputs_exit_2_with_their_message() {
    each_rejected_with_its_message("tests/bad", "routes", 10);
}

/// Each scenario in tests/bad-scenarios/ stops with exit code 2 and the message in its
/// `.expected`, naming the file, line and column of the runbook line at fault.
#[test]
fn bad_scenarios_exit_2_with_their_message() {
    each_rejected_with_its_message("tests/bad-scenarios", "run", 2);
}

#[test]
fn unknown_step_and_device_are_input_errors() {
    let o = fabsim(&[
        "show",
        "scenarios/seed-lab.yaml",
        "--step",
        "nope",
        "Leaf-1",
        "show ip route",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no step 'nope'"));
    let o = fabsim(&["show", "topologies/seed-lab.yaml", "Leaf-9", "show ip route"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown device 'Leaf-9'"));
    let o = fabsim(&["show", "no/such/file.yaml", "Leaf-1", "show ip route"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn ping_with_captures_prints_tcpdump_lines() {
    let o = fabsim(&[
        "ping",
        "scenarios/seed-lab.yaml",
        "--step",
        "s1",
        "test-pod",
        "10.66.207.66",
        "-c",
        "2",
        "--capture",
        "k-w3:ens5",
        "--capture",
        "test-pod:eth0",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let ping_end = stdout.find("packet loss").expect("ping statistics");
    let kw3 = stdout.find("# k-w3: tcpdump -n -i ens5\n").expect("k-w3 capture");
    let pod = stdout
        .find("# test-pod: tcpdump -n -i eth0\n")
        .expect("test-pod capture");
    assert!(ping_end < kw3 && kw3 < pod, "{stdout}");
    assert!(stdout.contains("listening on ens5, link-type EN10MB (Ethernet), snapshot length 262144 bytes"));
    // The captures show the requests the ping printed: busybox's, numbered from 0 (`seq=0`).
    assert!(stdout.contains("64 bytes from 10.66.207.66: seq=1 ttl=62"), "{stdout}");
    for line in [
        "IP 10.0.137.142 > 10.0.137.15: IP 10.66.122.194 > 10.66.207.66: ICMP echo request, id 1, seq 1, length 64",
        "IP 10.0.137.15 > 10.0.137.142: IP 10.66.207.66 > 10.66.122.194: ICMP echo reply, id 1, seq 1, length 64",
        "IP 10.66.122.194 > 10.66.207.66: ICMP echo request, id 1, seq 0, length 64",
    ] {
        assert!(
            stdout.lines().any(|l| l.ends_with(line)),
            "no line ending in {line}:\n{stdout}"
        );
    }
}

#[test]
fn bad_capture_arguments_exit_2() {
    for (arg, message) in [
        ("k-w3", "--capture 'k-w3': expected DEVICE:INTERFACE"),
        ("k-w9:ens5", "unknown device 'k-w9'"),
        (
            "k-w3:ens9",
            "--capture 'k-w3:ens9': k-w3 has no interface 'ens9' (interfaces: ",
        ),
        ("Leaf-1:Ethernet1", "Leaf-1: tcpdump is modelled on Linux hosts only"),
        (
            "k-w3:tunl0",
            "k-w3: a capture on the tunnel device tunl0 is not modelled",
        ),
    ] {
        let o = fabsim(&[
            "ping",
            "scenarios/seed-lab.yaml",
            "--step",
            "s1",
            "test-pod",
            "10.66.207.66",
            "--capture",
            arg,
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{arg}: {stderr}");
        assert!(stderr.contains(message), "{arg}: {stderr}");
        assert!(o.stdout.is_empty(), "{arg}: nothing printed before the error");
    }
}

#[test]
fn a_failed_expectation_exits_1() {
    let dir = std::env::temp_dir().join(format!("fabsim-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/seed-lab.yaml");
    let scn = dir.join("fail.yaml");
    std::fs::write(
        &scn,
        format!(
            "topology: {}\nsteps:\n  - id: x\n    expect:\n      after:\n        - reach: {{from: k-w1, to: 8.8.8.8}}\n",
            topo.display()
        ),
    )
    .expect("write");
    let o = fabsim(&["run", scn.to_str().expect("utf8")]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL after  k-w1 reaches 8.8.8.8"), "{stdout}");
    assert!(stdout.contains("Destination Net Unreachable"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
