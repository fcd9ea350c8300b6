//! Snapshot directories as input (`fabsim … DIR`, issue #12): vendor detected from content,
//! links from LLDP captures or inferred from /31 subnets (listed by `fabsim lint`), errors
//! with file, line and column and exit 2. Data: tests/data/snapshot/README.md.

use std::process::Command;

use serde_json::Value;

mod common;

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

/// Each device's kind and each interface's L2 peers, from the normalised dump.
fn peers(dir: &str) -> Vec<(String, String, String, Value)> {
    let (code, out, err) = fabsim(&["dump", dir]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("json");
    let mut rows = Vec::new();
    for d in doc["devices"].as_array().expect("devices") {
        for i in d["ifaces"].as_array().expect("ifaces") {
            rows.push((
                d["name"].as_str().unwrap_or_default().to_string(),
                d["kind"].as_str().unwrap_or_default().to_string(),
                i["name"].as_str().unwrap_or_default().to_string(),
                i["l2_peers"].clone(),
            ));
        }
    }
    rows
}

fn peers_of(rows: &[(String, String, String, Value)], dev: &str, ifname: &str) -> Value {
    rows.iter()
        .find(|r| r.0 == dev && r.2 == ifname)
        .map(|r| r.3.clone())
        .unwrap_or_else(|| panic!("{dev}:{ifname} not in the dump: {rows:?}"))
}

#[test]
fn vendors_come_from_content_and_links_from_lldp() {
    let dir = "tests/data/snapshot/lldp";
    let rows = peers(dir);
    let kind = |dev: &str| rows.iter().find(|r| r.0 == dev).map(|r| r.1.clone());
    // `frr version` makes spine1 an FRR (Linux) box, the running-config header leaf1 EOS.
    assert_eq!(kind("spine1").as_deref(), Some("linux"));
    assert_eq!(kind("leaf1").as_deref(), Some("eos"));
    // A /24 is never inferred: only the capture can have linked it (neighbour by FQDN, the
    // FRR box's port by its kernel name, the leaf's `Et1` as Ethernet1).
    assert_eq!(
        peers_of(&rows, "leaf1", "Ethernet1"),
        serde_json::json!(["spine1:eth1"])
    );
    assert_eq!(peers_of(&rows, "leaf1", "Ethernet2"), serde_json::json!(["host1:ens3"]));
    let (code, out, err) = fabsim(&["lint", dir]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("no warnings"), "{out}");
    // And it routes: OSPF between the FRR spine and the EOS leaf carries the host's /31.
    let (code, out, err) = fabsim(&["ping", dir, "host1", "10.0.0.1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("5 received, 0% packet loss"), "{out}");
}

#[test]
fn without_links_or_lldp_a_31_is_an_inferred_link_listed_by_lint() {
    let dir = "tests/data/snapshot/inferred";
    let rows = peers(dir);
    assert_eq!(peers_of(&rows, "a", "Ethernet1"), serde_json::json!(["b:Ethernet7"]));
    let (code, out, err) = fabsim(&["lint", dir, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("json");
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{out}");
    assert_eq!(warnings[0]["file"], "tests/data/snapshot/inferred/configs/a.cfg");
    assert_eq!(warnings[0]["line"], 2);
    let why = warnings[0]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("a:Ethernet1 -- b:Ethernet7 inferred from their common subnet 10.9.0.0/31"),
        "{why}"
    );
}

#[test]
fn a_config_of_no_recognisable_vendor_is_an_error_with_the_reason() {
    let (code, _, err) = fabsim(&["dump", "tests/data/snapshot/unknown-vendor"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("tests/data/snapshot/unknown-vendor/configs/x.cfg:1:1: error: cannot tell the vendor: no line only EOS writes"),
        "{err}"
    );
}

#[test]
fn a_typo_in_a_config_is_an_error_at_its_line_and_column() {
    for cmd in ["dump", "lint"] {
        let (code, _, err) = fabsim(&[cmd, "tests/data/snapshot/typo"]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(
            err.contains("tests/data/snapshot/typo/configs/leaf1.cfg:4:7: error: expected an interface ip command, found 'adress'"),
            "{cmd}: {err}"
        );
    }
}

#[test]
fn a_directory_without_configs_is_not_a_snapshot() {
    let (code, _, err) = fabsim(&["dump", "tests/data/snapshot"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs a configs/ directory"), "{err}");
}

#[test]
fn vendor_lines_that_disagree_are_an_error_naming_both() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("snapshot-mixed");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("configs")).expect("dir");
    std::fs::write(
        dir.join("configs/x.cfg"),
        "frr version 8.4\n!\ninterface Ethernet1\n   no switchport\n",
    )
    .expect("write");
    let (code, _, err) = fabsim(&["dump", dir.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("x.cfg:3:1: error: cannot tell the vendor: `interface Ethernet1` is EOS syntax but line 1 `frr version 8.4` is FRR"),
        "{err}"
    );
}

/// A snapshot with `kubectl get nodes,pods` and `calicoctl get …`/`kubectl get blockaffinities`
/// dumps (tests/data/snapshot/cluster): the nodes are its hosts, pods keep their observed
/// addresses, Calico's pools and BGP peers come from the dump, and the leaf learns each
/// node's block over the dumped peerings — node-a's observed block, not the one fabsim's
/// allocator would have claimed first.
#[test]
fn cluster_dumps_make_the_observed_cluster() {
    let dir = "tests/data/snapshot/cluster";
    let (code, out, err) = fabsim(&["lint", dir]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("no warnings"), "{out}");
    let show = |dev: &str, cmd: &str| {
        let (code, out, err) = fabsim(&["show", dir, dev, cmd]);
        assert_eq!(code, 0, "{cmd}: {err}");
        out
    };
    let nodes = show("node-a", "kubectl get nodes -o wide");
    assert!(nodes.contains("node-a   Ready    control-plane"), "{nodes}");
    assert!(nodes.contains("10.0.2.1"), "node-b's InternalIP: {nodes}");
    let pods = show("node-a", "kubectl get pods -A -o wide");
    for row in [
        "web-a               1/1     Running   0          ",
        "10.244.5.3    node-a",
    ] {
        assert!(pods.contains(row), "{row:?} in\n{pods}");
    }
    assert!(pods.contains("10.244.9.66   node-b"), "{pods}");
    let pools = show("node-a", "calicoctl get ippools -o wide");
    assert!(
        pools.contains("default-ipv4-ippool   10.244.0.0/16   true   Never"),
        "{pools}"
    );
    let status = show("node-a", "calicoctl node status");
    assert!(status.contains("| 10.0.1.0     | node specific | up    |"), "{status}");
    let routes = show("leaf1", "show ip route");
    assert!(
        routes.contains(" B E      10.244.5.0/26 [200/0] via 10.0.1.1, Ethernet1"),
        "{routes}"
    );
    assert!(
        routes.contains(" B E      10.244.9.64/26 [200/0] via 10.0.2.1, Ethernet2"),
        "{routes}"
    );
    let (code, out, err) = fabsim(&["ping", dir, "web-a", "10.244.9.66"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("0% packet loss"), "{out}");
    // The dumped Services keep their ClusterIPs; the kubernetes Service forwards to its dumped
    // Endpoints, web-a to the pod its selector selects.
    let svc = show("node-a", "kubectl get svc -A");
    for row in [
        "default       kubernetes   ClusterIP   10.96.0.1      <none>        443/TCP ",
        "default       web-a        ClusterIP   10.101.23.45   <none>        80/TCP ",
        "kube-system   kube-dns     ClusterIP   10.96.0.10     <none>        53/UDP,53/TCP,9153/TCP ",
    ] {
        assert!(svc.contains(row), "{row:?} in\n{svc}");
    }
    let eps = show("node-a", "kubectl get endpoints -A");
    assert!(eps.contains("default       kubernetes   10.0.1.1:6443 "), "{eps}");
    assert!(eps.contains("default       web-a        10.244.5.3:8080 "), "{eps}");
    // IPAM continues from the observed state: the next address of node-a's block is free.
    let ipam = show("node-a", "calicoctl ipam show --show-blocks");
    assert!(
        ipam.contains("| Block    | 10.244.5.0/26  |        64 | 1 (2%)     |"),
        "{ipam}"
    );
}

/// kubeadm's ClusterConfiguration is a YAML document inside a string: a field fabsim does not
/// know is warned at its line in the dump file, not in the string. Without a Service dump the
/// Services are kubeadm init's two, and lint says so, as it does of Endpoints of no Service.
#[test]
fn kubeadm_config_is_read_in_the_dump_files_lines_and_missing_services_are_said() {
    let dir = common::scratch("snapshot-kubeadm-config");
    let s = dir.join("s");
    let _ = std::fs::remove_dir_all(&s);
    copy_dir(std::path::Path::new("tests/data/snapshot/cluster"), &s);
    // Without the Services, only the kubernetes Endpoints remain: kubeadm init's Service of
    // that name takes them.
    let services = std::fs::read_to_string(s.join("k8s/services.yaml")).expect("services.yaml");
    let endpoints = &services[services
        .find("- apiVersion: v1\n  kind: Endpoints")
        .expect("the Endpoints")..];
    let endpoints = endpoints.replace("name: kubernetes", "name: web-b");
    std::fs::write(
        s.join("k8s/services.yaml"),
        format!("apiVersion: v1\nitems:\n{endpoints}"),
    )
    .expect("write");
    let config = std::fs::read_to_string(s.join("k8s/kubeadm-config.yaml")).expect("kubeadm-config");
    let config = config.replace("    dns: {}\n", "    dns: {}\n    dnsCache: on\n");
    std::fs::write(s.join("k8s/kubeadm-config.yaml"), &config).expect("write");
    let line = config.lines().position(|l| l.contains("dnsCache")).expect("the line") + 1;
    let (code, out, err) = fabsim(&["lint", s.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("k8s/kubeadm-config.yaml:{line} "))
            && out.contains("unknown field `dnsCache` in kubeadm's ClusterConfiguration; ignored"),
        "{out}"
    );
    assert!(
        out.contains("k8s/kubeadm-config.yaml:1 ")
            && out.contains("the k8s/ dumps hold no Service: assuming the two kubeadm init creates (default/kubernetes on 10.96.0.1 to 10.0.1.1:6443, kube-system/kube-dns on 10.96.0.10)"),
        "{out}"
    );
    assert!(
        out.contains("Endpoints default/web-b: the dumps hold no Service of that name; not used"),
        "{out}"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}
