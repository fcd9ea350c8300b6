//! containerlab topologies as input: the bundled RFC 7938 fabric (FRR spines, cEOS leaves,
//! Linux hosts) imports without a warning and every host reaches every other; a typo in a
//! link endpoint is an error at its line; unmodelled keys and kinds are warnings at theirs.

use std::fs;
use std::path::Path;

use fabsim::engine::converge;
use fabsim::input::topology::load_topology;
use fabsim::model::{DeviceKind, RouteOrigin};
use fabsim::scenario::ReachMatrix;

const RFC7938: &str = "topologies/rfc7938/rfc7938.clab.yml";

#[test]
fn rfc7938_imports_without_warnings_and_every_host_reaches_every_other() {
    let loaded = load_topology(Path::new(RFC7938)).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
    assert_eq!(loaded.name, "rfc7938");
    let names: Vec<&str> = loaded.net.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        ["spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4", "h1", "h2", "h3", "h4"]
    );
    let leaf1 = loaded.net.device_by_name("leaf1").expect("leaf1");
    assert!(
        loaded.net.iface_by_name(leaf1, "Ethernet2").is_some(),
        "cEOS eth2 is Ethernet2"
    );
    let (engine, conv) = converge(loaded.net);
    assert!(conv.quiet, "converges");
    let matrix = ReachMatrix::compute(engine.network(), engine.state());
    assert_eq!(matrix.endpoints.len(), 6, "4 hosts and the 2 FRR spines (Linux)");
    assert_eq!(matrix.count(), (30, 30), "every host pair answers");
    assert!(matrix.findings.is_empty(), "{:?}", matrix.findings);
}

#[test]
fn a_typo_in_a_link_endpoint_is_an_error_at_its_line() {
    let path = Path::new("tests/bad/rfc7938-typo.clab.yml");
    let err = load_topology(path).expect_err("leaf3:etj2 is no cEOS port");
    let want = fs::read_to_string("tests/bad/rfc7938-typo.expected").expect("the expected text");
    assert_eq!(err.to_string(), want.trim_end());
}

#[test]
fn unmodelled_keys_and_kinds_are_warnings_naming_their_line() {
    let dir = std::env::temp_dir().join(format!("fabsim-clab-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("lab.clab.yml");
    let text = "\
name: lab
mgmt:
  network: custom
topology:
  nodes:
    r1:
      kind: linux
      image: alpine
      ports: [\"8080:80\"]
      exec:
        - ip addr add 10.0.0.0/31 dev eth1
        - tc qdisc add dev eth1 root netem delay 10ms
    sw:
      kind: nokia_srlinux
    r2:
      kind: linux
      exec: [\"ip addr add 10.0.0.1/31 dev eth1\"]
  links:
    - endpoints: [\"r1:eth1\", \"r2:eth1\"]
    - endpoints: [\"sw:e1-1\", \"r2:eth2\"]
";
    fs::write(&path, text).expect("write");
    let loaded = load_topology(&path).unwrap_or_else(|e| panic!("{e}"));
    let f = path.display().to_string();
    let got: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    let want = [
        format!("{f}:2:1: warning: containerlab `mgmt` is not modelled by fabsim; ignored"),
        format!("{f}:9:7: warning: containerlab `ports` is not modelled by fabsim; ignored"),
        format!("{f}:12:11: warning: exec `tc qdisc add dev eth1 root netem delay 10ms` is not modelled by fabsim (ip addr add, ip route, ip link set and sysctl are); ignored"),
        format!("{f}:14:13: warning: node kind `nokia_srlinux` is not modelled by fabsim (ceos, arista_ceos, linux and bridge are); node sw and its links are left out"),
    ];
    assert_eq!(got, want);
    fs::remove_dir_all(&dir).ok();
}

/// A `bridge` node is one multi-access segment, not a device; a bound netplan gives a host its
/// `proto static` routes, and exec lines repeating it add nothing; the side file gives device
/// kinds and what containerlab cannot say; a node of another kind than the side file's is an
/// error at its line.
#[test]
fn bridges_netplan_binds_and_the_side_file() {
    let dir = std::env::temp_dir().join(format!("fabsim-clab-side-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("lab.clab.yml");
    let clab = "\
name: lab
topology:
  nodes:
    gw:
      kind: linux
      exec: [\"ip addr add 10.9.0.1/24 dev eth0\"]
    h1:
      kind: linux
      binds: [\"h1.yaml:/etc/netplan/50-fabsim.yaml:ro\"]
      exec:
        - apt-get update -q
        - ip addr add 10.9.0.11/24 dev eth1
        - ip route add 0.0.0.0/0 via 10.9.0.1 dev eth1 proto static
    h2:
      kind: linux
      exec: [\"ip addr add 10.9.0.12/24 dev eth1\"]
    br-lan:
      kind: bridge
  links:
    - endpoints: [\"br-lan:br-lan-0\", \"gw:eth0\"]
    - endpoints: [\"br-lan:br-lan-1\", \"h1:eth1\"]
    - endpoints: [\"br-lan:br-lan-2\", \"h2:eth1\"]
";
    let netplan = "\
network:
  version: 2
  ethernets:
    eth1:
      addresses: [10.9.0.11/24]
      routes:
        - to: default
          via: 10.9.0.1
";
    let side = "\
devices:
  gw: {kind: external, interface: eth0, gateway: 10.9.0.1/24}
  h1: {kind: linux, hostname: web, interfaces: [eth1, eth2]}
";
    fs::write(&path, clab).expect("write");
    fs::write(dir.join("h1.yaml"), netplan).expect("write");
    fs::write(dir.join("lab.fabsim.yaml"), side).expect("write");
    let loaded = load_topology(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
    let net = &loaded.net;
    let names: Vec<&str> = net.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        ["gw", "h1", "h2"],
        "side-file devices first, no device for the bridge"
    );
    let gw = net.device_by_name("gw").expect("gw");
    assert_eq!(net.device(gw).kind, DeviceKind::External);
    let h1 = net.device_by_name("h1").expect("h1");
    assert_eq!(net.device(h1).hostname.as_deref(), Some("web"));
    assert_eq!(net.iface_names(h1), "lo, eth1, eth2");
    let routes: Vec<_> = net.device(h1).statics.iter().map(|r| r.origin).collect();
    assert_eq!(
        routes,
        [RouteOrigin::Netplan],
        "the repeated route is the netplan's, once"
    );
    assert_eq!(net.l2.len(), 1);
    assert_eq!(net.l2[0].name, "br-lan");
    assert_eq!(net.l2[0].members.len(), 3);

    let mismatch = side
        .replace("h1: {kind: linux", "h1: {kind: eos")
        .replace(", hostname: web, interfaces: [eth1, eth2]", "");
    fs::write(dir.join("lab.fabsim.yaml"), mismatch).expect("write");
    let err = load_topology(&path).expect_err("h1 is linux in the topology, eos in the side file");
    let want = format!(
        "{}:7:5: error: node h1 is of kind `linux`, but {} declares it a device of another kind",
        path.display(),
        dir.join("lab.fabsim.yaml").display()
    );
    assert_eq!(err.to_string(), want);
    fs::remove_dir_all(&dir).ok();
}

/// `scope link` on a device route and `scope global` on a gateway route are iproute2's own
/// defaults, so they add the route; another scope is a warning at its line (fabsim has no such
/// route), and the lines after it still run.
#[test]
fn a_pods_link_scope_gateway_route_is_what_iproute2_makes() {
    let path = Path::new("tests/data/containerlab/pod-gateway.clab.yml");
    let loaded = load_topology(path).unwrap_or_else(|e| panic!("{e}"));
    let pod = loaded.net.device_by_name("pod").expect("pod");
    let routes: Vec<String> = loaded
        .net
        .device(pod)
        .statics
        .iter()
        .filter(|r| r.origin == RouteOrigin::Manual)
        .map(|r| format!("{} {:?} {:?}", r.prefix, r.via, r.dev))
        .collect();
    assert_eq!(
        routes,
        [
            "169.254.1.1/32 None Some(\"eth0\")",
            "0.0.0.0/0 Some(169.254.1.1) Some(\"eth0\")"
        ]
    );
    let warnings: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("pod-gateway.clab.yml:13:11")
            && warnings[0].contains("`ip route … scope host`: fabsim does not model this scope here"),
        "{warnings:#?}"
    );
}
