//! Topology loading: every bad-input file gives exactly its expected diagnostic, and the
//! bundled seed lab loads with the addresses and attachments of seed-lab.md §1.2 at stage s0.

use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use fabsim::input::topology::{load_topology, parse_topology, Loaded};
use fabsim::model::{AddrConfig, DeviceKind, IfId, Network, RouteOrigin};
use ipnet::Ipv4Net;

/// Bad files whose diagnostic comes from `input::eos`; checked by `bad_eos_file` alone.
const NEEDS_EOS_PARSER: &[&str] = &["eos-bad-address"];

fn bad_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir("tests/bad")
        .expect("tests/bad exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// The error text `load_topology` gives for `path`, or a description of its success.
fn actual(path: &Path) -> String {
    match load_topology(path) {
        Ok(_) => "loaded without errors".to_string(),
        Err(e) => e.to_string(),
    }
}

fn expected(path: &Path) -> String {
    let text = fs::read_to_string(path.with_extension("expected")).expect("NAME.expected next to NAME.yaml");
    text.strip_suffix('\n').unwrap_or(&text).to_string()
}

#[test]
fn bad_files_give_their_expected_diagnostic() {
    let files = bad_files();
    assert!(
        files.len() >= 12,
        "expected at least 12 bad files, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for path in files {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if NEEDS_EOS_PARSER.contains(&stem) {
            continue;
        }
        let (want, got) = (expected(&path), actual(&path));
        if want != got {
            failures.push(format!("{}:\n  expected: {want}\n  actual:   {got}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The EOS parser reports the bad prefix at its position in the topology file (line 9, the
/// column of `10.0.0.1/33`). The message text is the EOS parser's; confirm it on merge.
#[test]
fn bad_eos_file() {
    for stem in NEEDS_EOS_PARSER {
        let path = PathBuf::from(format!("tests/bad/{stem}.yaml"));
        assert_eq!(actual(&path), expected(&path));
    }
}

// --- the seed lab ----------------------------------------------------------------------------

fn seed_lab() -> Loaded {
    match load_topology(Path::new("topologies/seed-lab.yaml")) {
        Ok(l) => l,
        Err(e) => panic!("seed-lab.yaml does not load:\n{e}"),
    }
}

fn iface(net: &Network, dev: &str, name: &str) -> IfId {
    let d = net.device_by_name(dev).unwrap_or_else(|| panic!("no device {dev}"));
    net.iface_by_name(d, name)
        .unwrap_or_else(|| panic!("no interface {dev}:{name}"))
}

fn addr(net: &Network, dev: &str, name: &str) -> AddrConfig {
    net.iface(iface(net, dev, name)).addr.clone()
}

fn static_addr(text: &str) -> AddrConfig {
    AddrConfig::Static(text.parse().expect("valid prefix"))
}

/// "dev:if" labels of an L2 domain's members.
fn members(net: &Network, l2: usize) -> Vec<String> {
    let label = |i: &IfId| format!("{}:{}", net.device(net.iface(*i).device).name, net.iface(*i).name);
    net.l2[l2].members.iter().map(label).collect()
}

#[test]
fn seed_lab_devices_in_file_order() {
    let lab = seed_lab();
    assert_eq!(lab.name, "seed-lab");
    assert!(lab.warnings.is_empty(), "{:?}", lab.warnings);
    let names: Vec<&str> = lab.net.devices.iter().map(|d| d.name.as_str()).collect();
    let want = [
        "Spine-1",
        "Leaf-1",
        "Leaf-2",
        "Leaf-3",
        "k-master",
        "k-w1",
        "k-w2",
        "k-w3",
        "client",
        "nat-cloud",
    ];
    assert_eq!(names, want);
    let net = &lab.net;
    let kind = |n: &str| net.devices.iter().find(|d| d.name == n).map(|d| d.kind);
    assert_eq!(kind("Leaf-2"), Some(DeviceKind::Eos));
    assert_eq!(kind("client"), Some(DeviceKind::Linux));
    assert_eq!(kind("nat-cloud"), Some(DeviceKind::External));
    assert!(net.devices.iter().all(|d| d.boot_ms == 0));
    assert_eq!(net.timed.len(), 1, "only the spine's configuration is entered later");
    assert_eq!(
        (net.timed[0].device.0, net.timed[0].at_ms),
        (0, 60_000),
        "the spine is configured after the leaves' OSPF wait timer"
    );
    assert_eq!(net.devices[4].hostname.as_deref(), Some("K-Master"));
    assert_eq!(net.devices[5].hostname.as_deref(), Some("k-w1"));
}

#[test]
fn seed_lab_addresses_at_s0() {
    let mut net = seed_lab().net;
    net.apply_timed(0); // the spine's configuration, entered at 60 s
    assert_eq!(addr(&net, "Spine-1", "Ethernet1"), static_addr("10.11.99.0/31"));
    assert_eq!(addr(&net, "Spine-1", "Ethernet3"), static_addr("10.33.99.0/31"));
    assert_eq!(addr(&net, "Leaf-1", "Ethernet3"), static_addr("10.1.11.0/31"));
    assert_eq!(addr(&net, "Leaf-3", "Ethernet1"), static_addr("10.33.99.1/31"));
    assert_eq!(addr(&net, "Leaf-3", "Ethernet2"), static_addr("10.3.33.0/31"));
    assert_eq!(addr(&net, "k-master", "ens3"), static_addr("10.0.11.1/31"));
    assert_eq!(addr(&net, "k-w3", "ens3"), static_addr("10.3.33.1/31"));
    assert_eq!(addr(&net, "client", "ens3"), static_addr("10.4.44.1/31"));
    assert_eq!(addr(&net, "nat-cloud", "eth0"), static_addr("10.0.137.1/24"));
    // Not configured yet at s0: the hosts' ens5 (s0c), Spine-1 Et4 (s0b), Leaf-3 Et3 (s1b).
    assert_eq!(addr(&net, "k-w1", "ens5"), AddrConfig::None);
    for (dev, port) in [("Spine-1", "Ethernet4"), ("Leaf-3", "Ethernet3")] {
        let i = net.iface(iface(&net, dev, port));
        assert_eq!((i.addr.clone(), i.routed), (AddrConfig::None, false), "{dev}:{port}");
    }
}

#[test]
fn seed_lab_host_interfaces_and_routes() {
    let net = seed_lab().net;
    let kw3 = net.device_by_name("k-w3").expect("k-w3");
    let order: Vec<(&str, u32)> = net
        .device(kw3)
        .ifaces
        .iter()
        .map(|i| (net.iface(*i).name.as_str(), net.iface(*i).ifindex))
        .collect();
    assert_eq!(order, [("lo", 1), ("ens3", 2), ("ens4", 3), ("ens5", 4)]);
    assert_eq!(addr(&net, "k-w3", "lo"), static_addr("127.0.0.1/8"));
    let routes = &net.device(kw3).statics;
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].prefix, Ipv4Net::default());
    assert_eq!(routes[0].via, Some(Ipv4Addr::new(10, 3, 33, 0)));
    assert_eq!(routes[0].dev.as_deref(), Some("ens3"));
    assert_eq!((routes[0].origin, routes[0].metric), (RouteOrigin::Netplan, 0));
}

#[test]
fn seed_lab_links_segment_and_cloud() {
    let net = seed_lab().net;
    assert_eq!(net.l2.len(), 9, "8 links and the NAT-cloud segment");
    assert_eq!(members(&net, 2), ["Spine-1:Ethernet3", "Leaf-3:Ethernet1"]);
    assert_eq!(members(&net, 7), ["Leaf-3:Ethernet3", "client:ens3"]);
    let cloud = &net.l2[8];
    assert_eq!(cloud.name, "nat-cloud");
    assert_eq!(cloud.members.len(), 6);
    assert_eq!(members(&net, 8)[1], "Spine-1:Ethernet4");
    let ext = net
        .devices
        .last()
        .and_then(|d| d.external.as_ref())
        .expect("nat-cloud is external");
    assert_eq!(ext.gateway, "10.0.137.1/24".parse::<Ipv4Net>().expect("prefix"));
    let leases: Vec<String> = ext
        .leases
        .iter()
        .map(|l| format!("{}:{} {}", l.device, l.interface, l.address))
        .collect();
    assert_eq!(
        leases,
        [
            "Spine-1:Ethernet4 10.0.137.189/24",
            "k-master:ens5 10.0.137.12/24",
            "k-w1:ens5 10.0.137.132/24",
            "k-w2:ens5 10.0.137.112/24",
            "k-w3:ens5 10.0.137.142/24",
        ]
    );
    assert_eq!(
        (ext.responders[0].address, ext.responders[0].reply_ttl),
        (Ipv4Addr::new(8, 8, 8, 8), 99)
    );
}

// --- where embedded blocks point --------------------------------------------------------------

/// The netplan error inside a block scalar lands on the right line and column of the file,
/// whatever the block's indentation, leading blank lines or indentation indicator.
#[test]
fn netplan_block_diagnostics_point_into_the_file() {
    let cases = [
        // (topology text, expected "line:col" of the unknown key `bogus`)
        (
            "netplan: |\n      network:\n        bogus: 1\n        version: 2\n",
            "7:9",
        ),
        (
            "netplan: |\n\n\n      network:\n        bogus: 1\n        version: 2\n",
            "9:9",
        ),
        (
            "netplan: |2  # explicit indentation\n\n       network:\n         bogus: 1\n         version: 2\n",
            "8:10",
        ),
        (
            "netplan: |-\n        network:\n          version: 2\n          bogus: 1\n",
            "8:11",
        ),
        ("netplan: \"network: {bogus: 1, version: 2}\"\n", "5:25"),
    ];
    for (block, want) in cases {
        let text = format!("name: t\ndevices:\n  h1:\n    kind: linux\n    {block}");
        let err = parse_topology(&text, "t.yaml").expect_err("bogus is not a netplan key");
        let got = err.to_string();
        assert!(
            got.starts_with(&format!("t.yaml:{want}: error: unknown netplan key `bogus`")),
            "{block:?}: {got}"
        );
    }
}

#[test]
fn netplan_warnings_and_deprecated_gateway() {
    let text = "name: t\ndevices:\n  h1:\n    kind: linux\n    netplan: |\n      network:\n        version: 2\n        ethernets:\n          ens3:\n            nameservers: {addresses: [8.8.8.8]}\n            addresses: [10.0.0.1/24, 'fd00::1/64']\n            gateway4: 10.0.0.254\n";
    let lab = parse_topology(text, "t.yaml").expect("loads with warnings");
    let warnings: Vec<String> = lab.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "t.yaml:10:13: warning: `nameservers` is not modelled by fabsim; ignored",
            "t.yaml:11:38: warning: IPv6 is not modelled; `fd00::1/64` ignored",
            "t.yaml:12:23: warning: `gateway4` is deprecated; netplan prefers `routes: [{to: default, via: 10.0.0.254}]`",
        ]
    );
    let h1 = &lab.net.devices[0];
    assert_eq!(h1.statics[0].via, Some(Ipv4Addr::new(10, 0, 0, 254)));
    // Without an `interfaces:` list the host's NICs come from its netplan.
    assert_eq!(lab.net.iface(h1.ifaces[1]).name, "ens3");
}

#[test]
fn netplan_apply_replaces_netplan_state_and_keeps_manual_routes() {
    use fabsim::diag::TextOrigin;
    use fabsim::input::netplan::apply_netplan;
    let mut lab = seed_lab();
    let kw1 = lab.net.device_by_name("k-w1").expect("k-w1");
    let manual = {
        let mut r = lab.net.device(kw1).statics[0].clone();
        r.origin = RouteOrigin::Manual;
        r.prefix = "192.0.2.0/24".parse().expect("prefix");
        r
    };
    lab.net.devices[kw1.idx()].statics.push(manual.clone());
    // The derived s0c file (seed-lab.md §1.4).
    let s0c = "network:\n  version: 2\n  ethernets:\n    ens3:\n      addresses: [10.1.11.1/31]\n      routes:\n        - to: 10.0.0.0/8\n          via: 10.1.11.0\n    ens5:\n      dhcp4: true\n";
    let origin = TextOrigin {
        file: "01-KubeBase.yaml".into(),
        line: 1,
        col: 1,
    };
    let warnings = apply_netplan(&mut lab.net, kw1, s0c, &origin).expect("valid netplan");
    assert!(warnings.is_empty());
    let net = &lab.net;
    assert_eq!(addr(net, "k-w1", "ens5"), AddrConfig::Dhcp);
    let prefixes: Vec<String> = net
        .device(kw1)
        .statics
        .iter()
        .map(|r| format!("{} {:?}", r.prefix, r.origin))
        .collect();
    assert_eq!(prefixes, ["192.0.2.0/24 Manual", "10.0.0.0/8 Netplan"]);
    // An interface the host does not have is an error, and nothing changes.
    let bad = "network:\n  version: 2\n  ethernets:\n    ens9:\n      dhcp4: true\n";
    let err = apply_netplan(&mut lab.net, kw1, bad, &origin).expect_err("no ens9");
    assert_eq!(
        err.to_string(),
        "01-KubeBase.yaml:4:5: error: unknown interface `ens9` on k-w1 (it has lo, ens3, ens4, ens5)"
    );
    assert_eq!(lab.net.device(kw1).statics.len(), 2);
}
