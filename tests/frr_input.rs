//! FRR 8.4 `frr.conf` input: the parser's model, its diagnostics, and the FRR profile's policy
//! rules in the engine (route-maps, prefix-lists, `ebgp-requires-policy`). The fabric is
//! tests/data/frr/prepend.clab.yml: leaf-b announces its rack to both spines and prepends its
//! AS twice towards spine2, so leaf-a's two paths differ. (Real FRR's verdict on the same files
//! comes from the export branch's differential harness.)

use std::path::Path;

use fabsim::diag::TextOrigin;
use fabsim::engine::{converge, EcmpRole, Engine};
use fabsim::input::frr::apply_frr;
use fabsim::input::topology::{load_topology, parse_topology};
use fabsim::model::bgp::{NextHopSelf, Policy};
use fabsim::model::{Network, StaticRoute};

const FABRIC: &str = "tests/data/frr/prepend.clab.yml";

fn fabric() -> Network {
    let loaded = load_topology(Path::new(FABRIC)).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    loaded.net
}

/// One path as the tests compare it: (next hop, AS path, best, ECMP role, deciding step).
type PathSummary = (String, Vec<u32>, bool, EcmpRole, Option<&'static str>);

/// leaf-a's paths for leaf-b's rack.
fn rack_paths(engine: &Engine, net: &Network) -> Vec<PathSummary> {
    let leaf_a = net.device_by_name("leaf-a").expect("leaf-a");
    let view = engine.state().devices[leaf_a.idx()]
        .bgp
        .as_ref()
        .expect("leaf-a speaks BGP");
    view.table
        .routes()
        .iter()
        .filter(|r| r.prefix.to_string() == "10.20.2.0/24")
        .map(|r| {
            let a = r.attrs.as_ref().expect("received paths have attributes");
            let nh = r.next_hop.map(|n| n.to_string()).unwrap_or_default();
            (nh, a.as_path.clone(), r.best, r.ecmp, r.decided_by)
        })
        .collect()
}

#[test]
fn a_prepend_on_one_leaf_moves_the_best_path_by_as_path_length() {
    let net = fabric();
    let (engine, _) = converge(net.clone());
    let paths = rack_paths(&engine, &net);
    assert_eq!(paths.len(), 2, "{paths:?}");
    let best: Vec<_> = paths.iter().filter(|p| p.2).collect();
    assert_eq!(best.len(), 1, "{paths:?}");
    assert_eq!(best[0].0, "10.2.1.0", "the path through spine1 wins: {paths:?}");
    assert_eq!(best[0].1, vec![65000, 65002]);
    assert_eq!(best[0].4, Some("shorter AS path"));
    let other = paths.iter().find(|p| !p.2).expect("the prepended path");
    assert_eq!(
        other.1,
        vec![65000, 65002, 65002, 65002],
        "prepended behind the spine's own AS"
    );
    assert_eq!(other.3, EcmpRole::None, "a longer path is not multipath");
}

#[test]
fn without_the_prepend_both_spines_share_the_rack_as_multipath() {
    let mut net = fabric();
    let leaf_b = net.device_by_name("leaf-b").expect("leaf-b");
    let bgp = net.devices[leaf_b.idx()].bgp.as_mut().expect("leaf-b bgp");
    for n in &mut bgp.neighbors {
        n.export = Policy::RouteMap("TO-SPINES".into());
    }
    let (engine, _) = converge(net.clone());
    let paths = rack_paths(&engine, &net);
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert!(paths.iter().all(|p| p.1 == vec![65000, 65002]), "{paths:?}");
    let roles: Vec<EcmpRole> = paths.iter().map(|p| p.3).collect();
    assert!(
        roles.contains(&EcmpRole::Head) && roles.contains(&EcmpRole::Member),
        "{paths:?}"
    );
}

/// The prepend taken out of leaf-b's route-map on a running fabric: the sessions that use the
/// route-map stay up (their neighbour settings did not change) and advertise what it says
/// now, and leaf-a ends as the fabric converged without the prepend does.
#[test]
fn a_route_map_edited_on_a_running_leaf_applies_to_its_established_sessions() {
    let net = fabric();
    let (mut engine, _) = converge(net.clone());
    let sessions = |e: &Engine| {
        let leaf_b = e.network().device_by_name("leaf-b").expect("leaf-b");
        let view = e.state().devices[leaf_b.idx()].bgp.clone().expect("leaf-b speaks BGP");
        view.sessions
            .iter()
            .map(|s| (s.neighbor, s.state, s.since_ms))
            .collect::<Vec<_>>()
    };
    let before = sessions(&engine);
    engine.reconfigure(|net| {
        let leaf_b = net.device_by_name("leaf-b").expect("leaf-b");
        let bgp = net.devices[leaf_b.idx()].bgp.as_mut().expect("leaf-b bgp");
        let map = bgp.policies.route_maps.get_mut("TO-SPINE2").expect("TO-SPINE2");
        map[0].set_prepend.clear();
    });
    engine.run_until_quiet();
    assert_eq!(sessions(&engine), before, "no session was reset");
    let paths = rack_paths(&engine, engine.network());
    assert!(paths.iter().all(|p| p.1 == vec![65000, 65002]), "{paths:?}");
    let roles: Vec<EcmpRole> = paths.iter().map(|p| p.3).collect();
    assert!(
        roles.contains(&EcmpRole::Head) && roles.contains(&EcmpRole::Member),
        "{paths:?}"
    );
}

#[test]
fn ebgp_requires_policy_refuses_what_a_neighbour_without_route_maps_sends() {
    let mut net = fabric();
    let spine1 = net.device_by_name("spine1").expect("spine1");
    let bgp = net.devices[spine1.idx()].bgp.as_mut().expect("spine1 bgp");
    assert!(bgp.ebgp_requires_policy, "FRR 8.4's default");
    let n = bgp
        .neighbors
        .iter_mut()
        .find(|n| n.address.to_string() == "10.2.1.3")
        .expect("leaf-b");
    n.import = Policy::All;
    let (engine, _) = converge(net.clone());
    let paths = rack_paths(&engine, &net);
    assert_eq!(
        paths.len(),
        1,
        "spine1 accepts nothing from leaf-b, so only spine2's path is left: {paths:?}"
    );
    assert_eq!(paths[0].0, "10.2.2.0");
    // leaf-a says `no bgp ebgp-requires-policy`: it accepts without route-maps.
    let leaf_a = net.device_by_name("leaf-a").expect("leaf-a");
    assert!(
        !net.devices[leaf_a.idx()]
            .bgp
            .as_ref()
            .expect("bgp")
            .ebgp_requires_policy
    );
}

fn one_host() -> (Network, fabsim::model::DeviceId) {
    let net = parse_topology("devices:\n  r1:\n    kind: linux\n", "t.yaml")
        .expect("a host")
        .net;
    let id = net.device_by_name("r1").expect("r1");
    (net, id)
}

fn origin() -> TextOrigin {
    TextOrigin {
        file: "frr.conf".into(),
        line: 1,
        col: 1,
    }
}

#[test]
fn the_model_of_a_config() {
    let (mut net, id) = one_host();
    let text = "\
frr defaults datacenter
hostname r1
interface eth1
 ip address 10.0.0.1/31
 ip ospf cost 7
 ip ospf area 0
exit
ip route 192.0.2.0/24 10.0.0.0
router ospf
 ospf router-id 10.0.0.1
 passive-interface eth2
 redistribute connected metric 30 metric-type 1
exit
router bgp 65001
 bgp router-id 10.0.0.1
 bgp bestpath as-path multipath-relax
 timers bgp 10 30
 neighbor 10.0.0.0 remote-as internal
 neighbor 10.0.0.0 update-source eth1
 neighbor 10.0.0.0 ebgp-multihop 2
 neighbor 10.0.0.0 shutdown
 neighbor 10.0.0.0 timers 1 3
 address-family ipv4 unicast
  network 10.9.0.0/16
  redistribute static
  maximum-paths 4
  distance bgp 30 190 210
  neighbor 10.0.0.0 next-hop-self
  neighbor 10.0.0.0 route-reflector-client
  neighbor 10.0.0.0 addpath-tx-all-paths
 exit-address-family
exit
";
    let warnings = apply_frr(&mut net, id, text, &origin()).unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "{warnings:?}");
    let d = &net.devices[id.idx()];
    let ospf = d.ospf.as_ref().expect("ospf");
    assert_eq!(ospf.router_id.map(|a| a.to_string()).as_deref(), Some("10.0.0.1"));
    assert_eq!(
        ospf.networks[0].prefix.to_string(),
        "10.0.0.1/32",
        "`ip ospf area` on eth1's address"
    );
    assert_eq!(ospf.passive_exceptions, vec!["eth2".to_string()]);
    assert_eq!(
        (ospf.redistribute[0].metric, ospf.redistribute[0].metric_type),
        (Some(30), Some(1))
    );
    let eth1 = net.iface_by_name(id, "eth1").expect("eth1 created");
    assert_eq!(net.iface(eth1).ospf.cost, Some(7));
    let s: &StaticRoute = &d.statics[0];
    assert_eq!((s.prefix.to_string(), s.metric), ("192.0.2.0/24".to_string(), 20));
    let b = d.bgp.as_ref().expect("bgp");
    assert!(!b.ebgp_requires_policy, "frr defaults datacenter");
    assert!(b.multipath_relax);
    assert_eq!((b.max_paths, b.distance), (Some(4), Some((30, 190, 210))));
    assert_eq!((b.timers.keepalive, b.timers.hold), (Some(10), Some(30)));
    let n = &b.neighbors[0];
    assert_eq!(n.remote_as, Some(65001), "internal = the speaker's AS");
    assert_eq!(n.update_source.as_deref(), Some("eth1"));
    assert_eq!(n.multihop, Some(2));
    assert_eq!(
        n.next_hop_self,
        NextHopSelf::NotReflected,
        "bgpd's plain form spares reflected paths"
    );
    assert!(n.shutdown && n.route_reflector_client && n.add_path_tx && n.add_path_rx);
    assert_eq!((n.timers.keepalive, n.timers.hold), (Some(1), Some(3)));
    assert_eq!(b.networks[0].to_string(), "10.9.0.0/16");
}

#[test]
fn unmodelled_lines_are_warnings_with_their_line() {
    let (mut net, id) = one_host();
    let text = "frr version 8.4\nlog syslog informational\ninterface eth1\n ipv6 address 2001:db8::1/64\n description uplink\nexit\nrouter bgp 65001\n neighbor 10.0.0.0 remote-as 65002\n neighbor 10.0.0.0 password secret\nexit\n";
    let warnings = apply_frr(&mut net, id, text, &origin()).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        lines,
        vec![
            "frr.conf:4:2: warning: `ipv6 address 2001:db8::1/64` is not modelled by fabsim: no interface setting fabsim models; ignored",
            "frr.conf:9:2: warning: `neighbor 10.0.0.0 password secret` is not modelled by fabsim: not a neighbour setting fabsim models; ignored",
        ]
    );
}

#[test]
fn bad_lines_are_errors_at_their_place() {
    let cases = [
        ("router bgp 65001\n neighbor 10.0.0.300 remote-as 1\n", "frr.conf:2:11: error: % Create the peer-group or interface first: `10.0.0.300` is not an IPv4 address or a peer-group defined above"),
        ("ip prefix-list L seq 5 permit 10.0.0.0/8 ge 4\n", "frr.conf:1:42: error: % Invalid prefix range: expected len <= ge-value <= le-value"),
        ("route-map RM allow 10\n", "frr.conf:1:14: error: expected `permit` or `deny`, found `allow`"),
        ("interfce eth1\n", "frr.conf:1:1: error: % Unknown command: interfce eth1 (not an FRR 8.4 configuration line)"),
    ];
    for (text, want) in cases {
        let (mut net, id) = one_host();
        let err = apply_frr(&mut net, id, text, &origin()).expect_err(text);
        assert_eq!(err.to_string(), want);
    }
}

/// A route reflector `r` on one LAN with its clients `a` and `b` and an eBGP neighbour `x`,
/// `r` set `next-hop-self` towards its clients as `nhs` says (empty: not at all). Returns the
/// next hop of `b`'s path to a's prefix (reflected) and to x's (learned over eBGP).
fn reflected_next_hops(nhs: &str) -> (String, String) {
    let hosts: String = ["r", "a", "b", "x"]
        .iter()
        .zip(1..)
        .map(|(name, i)| {
            format!(
                "  {name}:\n    kind: linux\n    interfaces: [eth0]\n    netplan: |\n      network:\n        version: 2\n        \
                 ethernets:\n          eth0:\n            addresses: [10.9.0.{i}/24]\n"
            )
        })
        .collect();
    let yaml = format!("devices:\n{hosts}segments:\n  lan: [r:eth0, a:eth0, b:eth0, x:eth0]\n");
    let mut net = parse_topology(&yaml, "rr.yaml").unwrap_or_else(|e| panic!("{e}")).net;
    let client = |asn: u32, peer_as: u32, route: &str| {
        let originate = if route.is_empty() {
            String::new()
        } else {
            " redistribute static\n".to_string()
        };
        format!(
            "{route}router bgp {asn}\n no bgp ebgp-requires-policy\n neighbor 10.9.0.1 remote-as {peer_as}\n \
             address-family ipv4 unicast\n{originate} exit-address-family\nexit\n"
        )
    };
    let nhs_lines = if nhs.is_empty() {
        String::new()
    } else {
        format!("  neighbor 10.9.0.2 {nhs}\n  neighbor 10.9.0.3 {nhs}\n")
    };
    let confs = [
        (
            "r",
            format!(
                "router bgp 65001\n no bgp ebgp-requires-policy\n neighbor 10.9.0.2 remote-as internal\n \
                 neighbor 10.9.0.3 remote-as internal\n neighbor 10.9.0.4 remote-as 65009\n \
                 address-family ipv4 unicast\n  neighbor 10.9.0.2 route-reflector-client\n  \
                 neighbor 10.9.0.3 route-reflector-client\n{nhs_lines} exit-address-family\nexit\n"
            ),
        ),
        ("a", client(65001, 65001, "ip route 10.20.1.0/24 blackhole\n")),
        ("b", client(65001, 65001, "")),
        ("x", client(65009, 65001, "ip route 10.30.0.0/24 blackhole\n")),
    ];
    for (name, text) in confs {
        let id = net.device_by_name(name).expect("device");
        let warnings = apply_frr(&mut net, id, &text, &origin()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
    }
    let (engine, c) = converge(net.clone());
    assert!(c.quiet, "{c:?}");
    let b = net.device_by_name("b").expect("b");
    let view = engine.state().devices[b.idx()].bgp.as_ref().expect("b speaks BGP");
    let routes = view.table.routes();
    let next_hop = |prefix: &str| {
        let r = routes.iter().find(|r| r.prefix.to_string() == prefix);
        r.and_then(|r| r.next_hop)
            .map(|n| n.to_string())
            .unwrap_or_else(|| panic!("b has no path to {prefix}"))
    };
    (next_hop("10.20.1.0/24"), next_hop("10.30.0.0/24"))
}

/// bgpd's plain `next-hop-self` leaves a reflected path's next hop alone (`if (!reflect ||
/// force)` in `subgroup_announce_check`); `force` sets it too.
#[test]
fn next_hop_self_spares_reflected_paths_unless_forced() {
    let (a, x) = ("10.9.0.2".to_string(), "10.9.0.4".to_string());
    let r = "10.9.0.1".to_string();
    assert_eq!(reflected_next_hops(""), (a.clone(), x), "iBGP keeps the next hop");
    assert_eq!(reflected_next_hops("next-hop-self"), (a, r.clone()));
    assert_eq!(reflected_next_hops("next-hop-self force"), (r.clone(), r));
}
