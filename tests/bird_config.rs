//! BIRD 1.6 configuration input: the seed lab's k-w3 `bird.cfg` (seed-lab.md s1), every Calico
//! confd golden file, the filters' verdicts, the topology `bird:` key, and no panic on garbage.

use std::collections::BTreeMap;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;

use fabsim::diag::{Diagnostic, InputError, TextOrigin};
use fabsim::engine::filter::{run_filter, FilterRoute, Verdict};
use fabsim::input::bird::apply_bird;
use fabsim::input::topology::parse_topology;
use fabsim::model::bgp::{BgpConfig, BirdDaemon, Policy, Value};
use fabsim::model::Network;
use ipnet::Ipv4Net;

fn origin(file: &str) -> TextOrigin {
    TextOrigin {
        file: file.to_string(),
        line: 1,
        col: 1,
    }
}

/// The includes of a directory: `bird_aggr.cfg` and `bird_ipam.cfg`.
fn includes(dir: &Path) -> BTreeMap<String, (String, TextOrigin)> {
    ["bird_aggr.cfg", "bird_ipam.cfg"]
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name.to_string(), (text, origin(&path.display().to_string())))
        })
        .collect()
}

fn host() -> Network {
    let topo = "devices:\n  node:\n    kind: linux\n";
    parse_topology(topo, "t.yaml").expect("a one-host topology").net
}

/// Parses `text` for a fresh host; the host's daemon and speaker plus the warnings.
fn parse_with(
    text: &str,
    incs: &BTreeMap<String, (String, TextOrigin)>,
) -> Result<(BirdDaemon, Option<BgpConfig>, Vec<Diagnostic>), InputError> {
    let mut net = host();
    let dev = net.device_by_name("node").expect("node");
    let warnings = apply_bird(&mut net, dev, text, &origin("bird.cfg"), incs)?;
    let d = net.device(dev);
    Ok((d.bird.clone().expect("bird stored"), d.bgp.clone(), warnings))
}

fn parse_dir(dir: &Path) -> (BirdDaemon, BgpConfig, Vec<Diagnostic>) {
    let text = fs::read_to_string(dir.join("bird.cfg")).expect("bird.cfg");
    match parse_with(&text, &includes(dir)) {
        Ok((d, Some(b), w)) => (d, b, w),
        Ok((_, None, _)) => panic!("{}: no BGP speaker", dir.display()),
        Err(e) => panic!("{}:\n{e}", dir.display()),
    }
}

fn px(s: &str) -> Ipv4Net {
    s.parse().expect("prefix")
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().expect("address")
}

fn route<'a>(net: &str, proto: &'a str) -> FilterRoute<'a> {
    FilterRoute::new(px(net), proto)
}

// --- the seed lab's k-w3 ---------------------------------------------------------------------

#[test]
fn seed_k_w3_bird_cfg() {
    let (daemon, bgp, warnings) = parse_dir(Path::new("tests/data/k-w3"));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(bgp.asn, 64512);
    assert_eq!(bgp.router_id, Some(ip("10.0.137.142")));
    let names: Vec<(&str, bool)> = bgp
        .neighbors
        .iter()
        .map(|n| (n.name.as_deref().unwrap_or(""), n.passive))
        .collect();
    assert_eq!(
        names,
        [
            ("Mesh_10_0_137_12", false),
            ("Mesh_10_0_137_15", true),
            ("Mesh_10_0_137_112", false)
        ]
    );
    for n in &bgp.neighbors {
        assert_eq!(n.local_as, Some(64512));
        assert_eq!(n.remote_as, Some(64512));
        assert_eq!(n.source_address, Some(ip("10.0.137.142")));
        assert_eq!(n.multihop, Some(64), "bare `multihop` is 64");
        assert!(n.add_path_rx && n.add_path_tx, "add paths on");
        assert!(n.gateway_recursive);
        assert!(n.graceful_restart);
        assert_eq!(n.import, Policy::All);
        assert_eq!(n.export, Policy::Filter("calico_export_to_bgp_peers".into()));
        assert_eq!(n.timers.connect_delay, Some(2));
        assert_eq!(n.timers.connect_retry, Some(5));
        assert_eq!(n.timers.error_wait, Some((5, 30)));
        assert_eq!(n.timers.hold, Some(240), "BIRD's default hold time");
        assert_eq!(n.timers.keepalive, None, "hold/3 of the negotiated hold time");
        assert_eq!(n.description.as_deref(), Some("Connection to BGP peer"));
    }
    assert_eq!(bgp.neighbors[0].address, ip("10.0.137.12"));
    let k = daemon.kernel.as_ref().expect("protocol kernel");
    assert!(k.learn && k.persist && k.graceful_restart);
    assert_eq!(k.scan_time, Some(2));
    assert_eq!(k.import, Policy::All);
    assert_eq!(k.export, Policy::Filter("calico_kernel_programming".into()));
    assert_eq!(k.merge_paths, Some(16), "KRT_DEFAULT_ECMP_LIMIT");
    assert!(daemon.device);
    let direct = daemon.direct.as_ref().expect("protocol direct");
    let pats: Vec<(bool, &str)> = direct.iter().map(|p| (p.exclude, p.pattern.as_str())).collect();
    assert_eq!(pats, [(true, "cali*"), (true, "kube-ipvs*"), (false, "*")]);
    assert_eq!(daemon.statics.len(), 1);
    assert_eq!(daemon.statics[0].prefix, px("10.66.122.192/26"));
    let funcs: Vec<&str> = daemon.functions.keys().map(String::as_str).collect();
    assert_eq!(funcs, ["apply_communities", "calico_aggr", "reject_disabled_pools"]);
    assert_eq!(daemon.sources, ["bird.cfg", "bird_aggr.cfg", "bird_ipam.cfg"]);
}

#[test]
fn k_w3_filters_export_blocks_and_program_tunnels() {
    let (daemon, bgp, _) = parse_dir(Path::new("tests/data/k-w3"));
    let export = &bgp.neighbors[0].export;
    let verdict = |net: &str, proto: &str| run_filter(&daemon, export, &mut route(net, proto));
    assert_eq!(verdict("10.66.122.192/26", "static1"), Verdict::Accept, "own block");
    assert_eq!(
        verdict("10.66.122.194/32", "kernel1"),
        Verdict::Reject,
        "a workload beneath the block"
    );
    assert_eq!(
        verdict("10.66.73.128/26", "Mesh_10_0_137_12"),
        Verdict::Accept,
        "inside the pool"
    );
    assert_eq!(
        verdict("10.0.137.0/24", "direct1"),
        Verdict::Reject,
        "outside every pool"
    );

    let kernel = &daemon.kernel.as_ref().expect("kernel").export;
    let mut r = route("10.66.73.128/26", "Mesh_10_0_137_12");
    r.bgp_next_hop = Some(ip("10.0.137.12"));
    assert_eq!(run_filter(&daemon, kernel, &mut r), Verdict::Accept);
    assert_eq!(r.attr("krt_tunnel"), Some(&Value::Str("tunl0".into())));
    let mut r = route("0.0.0.0/0", "kernel1");
    assert_eq!(run_filter(&daemon, kernel, &mut r), Verdict::Accept);
    assert!(r.attrs.is_empty(), "non-pool routes go to the kernel unchanged");
}

// --- Calico's golden files -------------------------------------------------------------------

fn fixture(case: &str) -> (BirdDaemon, BgpConfig, Vec<Diagnostic>) {
    parse_dir(&Path::new("tests/data/calico-confd").join(case))
}

#[test]
fn every_confd_fixture_parses() {
    let mut cases: Vec<String> = fs::read_dir("tests/data/calico-confd")
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 8, "{cases:?}");
    for case in &cases {
        let (daemon, bgp, _) = fixture(case);
        assert_eq!(bgp.router_id, Some(ip("10.192.0.2")), "{case}");
        assert!(!bgp.neighbors.is_empty(), "{case}");
        assert!(daemon.filters.contains_key("calico_export_to_bgp_peers"), "{case}");
        assert!(daemon.filters.contains_key("calico_kernel_programming"), "{case}");
        for n in &bgp.neighbors {
            assert_eq!(n.export, Policy::Filter("calico_export_to_bgp_peers".into()), "{case}");
            assert!(n.multihop.is_some() && n.gateway_recursive, "{case}");
        }
    }
}

#[test]
fn mesh_fixture_sessions() {
    let (_, bgp, warnings) = fixture("mesh__ipip-always");
    assert!(warnings.is_empty(), "{warnings:?}");
    let n: Vec<(&str, bool)> = bgp
        .neighbors
        .iter()
        .map(|n| (n.name.as_deref().unwrap_or(""), n.passive))
        .collect();
    assert_eq!(n, [("Mesh_10_192_0_3", true), ("Mesh_10_192_0_4", true)]);
}

#[test]
fn global_peers_warn_about_ports_and_listen() {
    let (_, bgp, warnings) = fixture("explicit_peering__global");
    assert_eq!(bgp.asn, 64567);
    assert_eq!(bgp.neighbors.len(), 3);
    let text: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert!(text.iter().any(|w| w.contains("`listen`")), "{text:?}");
    assert_eq!(
        text.iter().filter(|w| w.contains("BGP port 150")).count(),
        2,
        "{text:?}"
    );
    assert!(text.iter().any(|w| w.contains("BGP port 166")), "{text:?}");
    assert!(bgp.neighbors[2].passive);
}

#[test]
fn route_reflector_and_keep_next_hop() {
    let (_, bgp, _) = fixture("explicit_peering__keepnexthop");
    assert_eq!(bgp.asn, 64532);
    let by = |name: &str| {
        bgp.neighbors
            .iter()
            .find(|n| n.name.as_deref() == Some(name))
            .expect(name)
    };
    let client = by("Node_10_192_0_3");
    assert!(client.route_reflector_client);
    assert_eq!(client.rr_cluster_id, Some(ip("10.0.0.1")));
    let ext = by("Node_172_19_4_87");
    assert_eq!(ext.remote_as, Some(64533));
    assert!(ext.next_hop_keep && !ext.route_reflector_client);
    assert_eq!(ext.multihop, Some(64));
}

#[test]
fn cross_subnet_tunnels_only_off_subnet() {
    let (daemon, _, _) = fixture("mesh__ipip-cross-subnet");
    let kernel = &daemon.kernel.as_ref().expect("kernel").export;
    let tunnel = |next_hop: Option<&str>| {
        let mut r = route("192.168.10.0/26", "Mesh_10_192_0_3");
        r.bgp_next_hop = next_hop.map(ip);
        assert_eq!(run_filter(&daemon, kernel, &mut r), Verdict::Accept);
        r.attr("krt_tunnel").cloned()
    };
    assert_eq!(tunnel(Some("10.192.0.3")), Some(Value::Str(String::new())));
    assert_eq!(tunnel(Some("172.19.4.87")), Some(Value::Str("tunl0".into())));
    assert_eq!(tunnel(None), Some(Value::Str("tunl0".into())), "undefined next hop");
}

#[test]
fn disabled_export_pool_is_rejected() {
    let (daemon, bgp, _) = fixture("mesh__bgp-export");
    let export = &bgp.neighbors[0].export;
    let v = |net: &str| run_filter(&daemon, export, &mut route(net, "kernel1"));
    assert_eq!(v("192.168.1.5/32"), Verdict::Accept);
    assert_eq!(v("192.168.2.0/26"), Verdict::Reject, "disableBGPExport");
    assert_eq!(v("192.168.221.64/26"), Verdict::Accept, "own confirmed block");
    assert_eq!(v("192.168.221.70/32"), Verdict::Reject, "beneath an own block");
}

// --- the topology key ------------------------------------------------------------------------

fn indent(text: &str, by: usize) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{}{l}", " ".repeat(by))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn topology_bird_key_with_includes() {
    let dir = Path::new("tests/data/k-w3");
    let read = |f: &str| fs::read_to_string(dir.join(f)).expect("data");
    let yaml = format!(
        "devices:\n  k-w3:\n    kind: linux\n    bird: |\n{}\n    bird_includes:\n      bird_aggr.cfg: |\n{}\n      bird_ipam.cfg: |\n{}\n",
        indent(&read("bird.cfg"), 6),
        indent(&read("bird_aggr.cfg"), 8),
        indent(&read("bird_ipam.cfg"), 8)
    );
    let loaded = parse_topology(&yaml, "lab.yaml").unwrap_or_else(|e| panic!("{e}"));
    let dev = loaded.net.device_by_name("k-w3").expect("k-w3");
    let bgp = loaded.net.device(dev).bgp.as_ref().expect("bgp");
    assert_eq!(bgp.neighbors.len(), 3);

    // An error inside an include points at its line in the topology file.
    let bad = yaml.replace("route 10.66.122.192/26 blackhole;", "route 10.66.122.193/26 blackhole;");
    let err = parse_topology(&bad, "lab.yaml").expect_err("host bits");
    let line = bad.lines().position(|l| l.contains("10.66.122.193/26")).expect("line") + 1;
    assert!(
        err.to_string()
            .starts_with(&format!("lab.yaml:{line}:18: error: invalid prefix")),
        "{err}"
    );
}

#[test]
fn bird_is_not_a_key_of_eos() {
    let yaml = "devices:\n  s:\n    kind: eos\n    bird: |\n      router id 1.1.1.1;\n";
    let err = parse_topology(yaml, "t.yaml").expect_err("eos has no bird");
    assert!(err.to_string().contains("`bird` is not a key of kind eos"), "{err}");
}

// --- robustness ------------------------------------------------------------------------------

/// A small deterministic generator (no dependency, same sequence every run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn garbage_never_panics() {
    let dir = Path::new("tests/data/calico-confd/mesh__ipip-cross-subnet");
    let incs = includes(dir);
    let base: Vec<char> = fs::read_to_string(dir.join("bird.cfg")).expect("cfg").chars().collect();
    let pieces = [
        "{",
        "}",
        ";",
        "(",
        ")",
        "[",
        "]",
        "!",
        "&&",
        "||",
        "~",
        "=",
        "/",
        "+",
        "-",
        ",",
        "\"",
        "/*",
        "#",
        "if",
        "then",
        "else",
        "net",
        "accept",
        "reject",
        "filter",
        "function",
        "protocol",
        "bgp",
        "template",
        "from",
        "include \"bird_ipam.cfg\";",
        "10.0.0.0",
        "24",
        "99999999999",
        "1.2.3.4/33",
        "defined(",
        "'",
        "\n",
        "é",
    ];
    let mut rng = Lcg(7);
    for round in 0..1500 {
        let mut text = base.clone();
        for _ in 0..1 + rng.below(6) {
            let at = rng.below(text.len() + 1);
            match rng.below(3) {
                0 if at < text.len() => {
                    let len = rng.below(20).min(text.len() - at);
                    text.drain(at..at + len);
                }
                1 => text.truncate(at),
                _ => {
                    let p = pieces[rng.below(pieces.len())];
                    for (i, c) in p.chars().enumerate() {
                        text.insert((at + i).min(text.len()), c);
                    }
                }
            }
        }
        let text: String = text.into_iter().collect();
        // Either outcome is fine; the point is that it returns.
        let _ = parse_with(&text, &incs);
        if round % 3 == 0 {
            let soup: String = (0..rng.below(60))
                .map(|_| pieces[rng.below(pieces.len())])
                .collect::<Vec<_>>()
                .join(" ");
            let _ = parse_with(&soup, &incs);
        }
    }
}

#[test]
fn recursive_function_rejects_without_panicking() {
    let cfg = "function loop_forever () { loop_forever(); }\nfilter f { loop_forever(); accept; }\n";
    let (daemon, _, _) = parse_with(cfg, &BTreeMap::new()).expect("valid BIRD");
    let mut r = route("10.0.0.0/24", "static1");
    assert_eq!(
        run_filter(&daemon, &Policy::Filter("f".into()), &mut r),
        Verdict::Reject
    );
}

// --- `proto` in an import filter ------------------------------------------------------------

/// A Linux host on `addr`/31 behind the router at `gw`, running BIRD with an iBGP multihop
/// session to `peer` (named after it) and the `extra` lines.
fn bird_host(name: &str, addr: &str, gw: &str, peer: (&str, &str), session: &str, extra: &str) -> String {
    format!(
        r#"  {name}:
    kind: linux
    interfaces: [eth1]
    netplan: |
      network:
        version: 2
        ethernets:
          eth1:
            addresses: [{addr}/31]
            routes:
              - to: 10.8.0.0/24
                via: {gw}
    bird: |
      router id {addr};
      protocol device {{ scan time 2; }}
      {extra}
      protocol bgp {} {{
        local as 64512;
        neighbor {} as 64512;
        multihop;
        source address {addr};
        {session}
      }}
"#,
        peer.0, peer.1
    )
}

/// h2 advertises 10.99.0.0/24 to h1 over iBGP; h1's import filter accepts it only when
/// `proto` names the receiving protocol, as in BIRD, where `proto` is the name of the protocol
/// the route came through (`h2` here). Returns h1's `birdcl show protocols all h2` and
/// `birdcl show route`.
fn h1_routes_with_import(filter: &str) -> (String, String) {
    let router = "  R:\n    kind: eos\n    config: |\n      interface Ethernet1\n         no switchport\n         \
                  ip address 10.8.0.0/31\n      interface Ethernet2\n         no switchport\n         \
                  ip address 10.8.0.2/31\n";
    let h1 = bird_host(
        "h1",
        "10.8.0.1",
        "10.8.0.0",
        ("h2", "10.8.0.3"),
        &format!("import filter {{ {filter} }}; export none;"),
        "",
    );
    let h2 = bird_host(
        "h2",
        "10.8.0.3",
        "10.8.0.2",
        ("h1", "10.8.0.1"),
        "import none; export all;",
        "protocol static { route 10.99.0.0/24 blackhole; }",
    );
    let topo = format!("devices:\n{router}{h1}{h2}links:\n  - [R:Ethernet1, h1:eth1]\n  - [R:Ethernet2, h2:eth1]\n");
    let loaded = parse_topology(&topo, "proto.yaml").unwrap_or_else(|e| panic!("{e}"));
    let (engine, conv) = fabsim::engine::converge(loaded.net);
    assert!(conv.quiet, "converged");
    let net = engine.network();
    let h1 = net.device_by_name("h1").expect("h1");
    let run = |cmd: &str| {
        fabsim::views::run_command(net, engine.state(), h1, cmd).unwrap_or_else(|e| panic!("{}", e.message))
    };
    (run("birdcl show protocols all h2"), run("birdcl show route"))
}

#[test]
fn an_import_filter_sees_the_receiving_protocol_as_proto() {
    let (accepted, routes) = h1_routes_with_import(r#"if proto = "h2" then accept; reject;"#);
    assert!(
        accepted.contains("  Routes:         1 imported, 0 exported"),
        "{accepted}"
    );
    assert!(routes.contains("10.99.0.0/24"), "{routes}");
    let (refused, routes) = h1_routes_with_import(r#"if proto = "h3" then accept; reject;"#);
    assert!(
        refused.contains("  Routes:         0 imported, 0 exported"),
        "{refused}"
    );
    // BIRD drops what its import filter rejects: it is not in the table (no `import keep
    // filtered`), so `show route` does not list it.
    assert!(!routes.contains("10.99.0.0/24"), "{routes}");
}
