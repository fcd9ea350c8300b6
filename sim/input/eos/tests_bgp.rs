//! Tests of EOS `router bgp` parsing, through `apply_config`.

use std::net::Ipv4Addr;

use crate::diag::{Diagnostic, Severity, Span};
use crate::model::bgp::{BgpRedistSource, BgpTimers, NextHopSelf};
use crate::model::{BgpConfig, BgpFlavor, BgpNeighbor, DeviceId, Network, RedistSource};

use super::apply_config;
use super::tests::{apply, at, errors, net, origin, switch};

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn bgp(n: &Network) -> &BgpConfig {
    n.device(DeviceId(0)).bgp.as_ref().expect("router bgp")
}

fn nbr<'n>(n: &'n Network, addr: &str) -> &'n BgpNeighbor {
    bgp(n)
        .neighbor(ip(addr))
        .unwrap_or_else(|| panic!("no neighbor {addr}"))
}

fn messages(w: &[Diagnostic]) -> Vec<(u32, u32, &str)> {
    w.iter()
        .map(|d| (d.span.line, d.span.col, d.message.as_str()))
        .collect()
}

/// seed-lab s3a, verbatim (the paste has no indentation).
const LEAF1_S3A: &str = "router bgp 65011
neighbor 10.0.11.1 remote-as 65000
neighbor 10.1.11.1 remote-as 65001
!
address-family ipv4
neighbor 10.0.11.1 activate
neighbor 10.1.11.1 activate
router ospf 1
redistribute bgp
";

const LEAF2_S3A: &str = "router bgp 65012
neighbor 10.2.22.1 remote-as 65002
!
address-family ipv4
neighbor 10.2.22.1 activate
router ospf 1
redistribute bgp
";

const LEAF3_S3A: &str = "router bgp 65013
neighbor 10.3.33.1 remote-as 65003
!
address-family ipv4
neighbor 10.3.33.1 activate
router ospf 1
redistribute bgp
";

/// A neighbour address and its remote AS.
type Peer = (&'static str, u32);

#[test]
fn seed_s3a_leaves_parse_without_warnings() {
    let cases: [(&str, u32, &[Peer]); 3] = [
        (LEAF1_S3A, 65011, &[("10.0.11.1", 65000), ("10.1.11.1", 65001)]),
        (LEAF2_S3A, 65012, &[("10.2.22.1", 65002)]),
        (LEAF3_S3A, 65013, &[("10.3.33.1", 65003)]),
    ];
    for (text, asn, peers) in cases {
        let (n, w) = apply(text);
        assert!(w.is_empty(), "{w:?}");
        let b = bgp(&n);
        assert_eq!((b.flavor, b.asn), (BgpFlavor::Eos, asn));
        assert_eq!(b.span, Span::new("lab.yaml", 10, 5));
        assert_eq!(b.neighbors.len(), peers.len());
        for (addr, remote) in peers {
            let p = nbr(&n, addr);
            assert_eq!(p.remote_as, Some(*remote));
            assert!(p.activate && p.gateway_recursive && p.add_path_rx && !p.add_path_tx);
            assert_eq!((p.multihop, p.update_source.as_deref()), (None, None));
            assert_eq!(p.timers, BgpTimers::default());
            assert_eq!(p.overrides.activate, Some(true));
            assert_eq!(
                p.span.line,
                11 + peers.iter().position(|x| x.0 == *addr).unwrap() as u32
            );
        }
        assert!(b.addpath_receive && !b.addpath_send && b.default_ipv4_unicast);
        let ospf = n.device(DeviceId(0)).ospf.as_ref().unwrap();
        assert_eq!(ospf.redistribute[0].source, RedistSource::Bgp);
    }
}

#[test]
fn comment_leaves_no_mode() {
    // `!` inside interface mode: the next line is still an interface command.
    let (n, w) = apply("interface Ethernet1\n!\nshutdown\n");
    assert!(w.is_empty(), "{w:?}");
    assert!(!super::tests::iface(&n, "Ethernet1").admin_up);
    // And inside the address family.
    let (n, w) = apply("router bgp 1\naddress-family ipv4\n!\nno neighbor 10.0.0.1 activate\n");
    assert!(w.is_empty(), "{w:?}");
    assert!(!nbr(&n, "10.0.0.1").activate);
}

#[test]
fn every_router_bgp_command() {
    let text = "router bgp 65011
router-id 10.255.0.1
bgp log-neighbor-changes
bgp advertise-inactive
no bgp bestpath as-path multipath-relax
bgp additional-paths send any
maximum-paths 4 ecmp 8
distance bgp 20 200 210
timers bgp 10 30
graceful-restart
neighbor 10.0.11.1 remote-as 65000
neighbor 10.0.11.1 update-source Loopback 0
neighbor 10.0.11.1 ebgp-multihop
neighbor 10.0.11.1 next-hop-self
neighbor 10.0.11.1 route-reflector-client
neighbor 10.0.11.1 shutdown
neighbor 10.0.11.1 description to k-master  (ens3)
neighbor 10.0.11.1 timers 5 15
neighbor 10.0.11.1 additional-paths receive
neighbor 10.0.11.1 graceful-restart
neighbor 10.0.11.1 passive
neighbor 10.1.11.1 ebgp-multihop 3
neighbor 10.1.11.1 update-source et2
neighbor 10.1.11.1 activate
neighbor 10.1.11.1 additional-paths send any
network 10.66.0.0/16
network 10.67.0.1 mask 255.255.0.0
redistribute connected
redistribute static
redistribute ospf
address-family ipv4 unicast
network 10.68.0.0/16
bgp additional-paths receive
neighbor 10.1.11.1 additional-paths receive
exit-address-family
shutdown
";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:#?}");
    let b = bgp(&n);
    assert_eq!(b.router_id, Some(ip("10.255.0.1")));
    assert!(b.advertise_inactive && !b.multipath_relax && b.addpath_send && b.addpath_receive);
    assert_eq!((b.max_paths, b.max_ecmp), (Some(4), Some(8)));
    assert_eq!(b.distance, Some((20, 200, 210)));
    assert_eq!((b.timers.keepalive, b.timers.hold), (Some(10), Some(30)));
    assert!(b.graceful_restart && b.shutdown);
    assert_eq!(
        b.networks,
        vec![net("10.66.0.0/16"), net("10.67.0.0/16"), net("10.68.0.0/16")]
    );
    let redist: Vec<BgpRedistSource> = b.redistribute.iter().map(|r| r.source).collect();
    assert_eq!(
        redist,
        vec![
            BgpRedistSource::Connected,
            BgpRedistSource::Static,
            BgpRedistSource::Ospf
        ]
    );
    assert_eq!(b.redistribute[2].span, Span::new("lab.yaml", 39, 5));
    let a = nbr(&n, "10.0.11.1");
    assert_eq!(a.remote_as, Some(65000));
    assert_eq!(a.update_source.as_deref(), Some("Loopback0"));
    assert_eq!(a.multihop, Some(255));
    assert_eq!(a.next_hop_self, NextHopSelf::All, "EOS's covers reflected paths");
    assert!(a.route_reflector_client && a.shutdown && a.graceful_restart && a.passive);
    assert_eq!(a.description.as_deref(), Some("to k-master (ens3)"));
    assert_eq!((a.timers.keepalive, a.timers.hold), (Some(5), Some(15)));
    // Global send any reaches every neighbour that does not say otherwise.
    assert!(a.activate && a.add_path_rx && a.add_path_tx);
    let c = nbr(&n, "10.1.11.1");
    assert_eq!((c.remote_as, c.multihop), (None, Some(3)));
    assert_eq!(c.update_source.as_deref(), Some("Ethernet2"));
    assert!(c.activate && c.add_path_rx && c.add_path_tx);
    assert_eq!(c.overrides.add_path_rx, Some(true));
}

#[test]
fn asdot_and_repeated_remote_as() {
    let (n, w) = apply(
        "router bgp 1.10\nneighbor 10.0.0.1 remote-as 65000\nneighbor 10.0.0.1 remote-as 1.2\nneighbor 10.0.0.2 shutdown\n",
    );
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(bgp(&n).asn, 65546);
    assert_eq!(nbr(&n, "10.0.0.1").remote_as, Some(65538));
    // Settings without remote-as are kept: the session cannot come up (the engine says why).
    let p = nbr(&n, "10.0.0.2");
    assert!(p.shutdown && p.remote_as.is_none());
    assert_eq!(bgp(&n).neighbors.len(), 2);
}

#[test]
fn no_and_default_forms() {
    let text = "router bgp 65011
router-id 1.1.1.1
bgp advertise-inactive
maximum-paths 4 ecmp 4
distance bgp 20 200 200
timers bgp 10 30
graceful-restart
network 10.66.0.0/16
redistribute connected
redistribute static route-map RM
neighbor 10.0.0.1 remote-as 65000
neighbor 10.0.0.1 ebgp-multihop 2
neighbor 10.0.0.1 next-hop-self
neighbor 10.0.0.1 update-source Loopback0
neighbor 10.0.0.1 description x
neighbor 10.0.0.1 timers 1 3
neighbor 10.0.0.1 shutdown
neighbor 10.0.0.1 additional-paths send any
neighbor 10.0.0.2 remote-as 65001
no router-id
no bgp advertise-inactive
no maximum-paths
no distance bgp
no timers bgp
no graceful-restart
no network 10.66.0.0/16
no redistribute connected
default redistribute static
no neighbor 10.0.0.1 remote-as 65000
no neighbor 10.0.0.1 ebgp-multihop
no neighbor 10.0.0.1 next-hop-self
no neighbor 10.0.0.1 update-source
no neighbor 10.0.0.1 description
no neighbor 10.0.0.1 timers
no neighbor 10.0.0.1 shutdown
default neighbor 10.0.0.1 additional-paths send any
no bgp additional-paths receive
no neighbor 10.0.0.2
";
    let (n, w) = apply(text);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("route-map 'RM'"));
    assert_eq!(at(&w[0]), (19, 5 + 30));
    let b = bgp(&n);
    assert_eq!(
        (b.router_id, b.max_paths, b.max_ecmp, b.distance),
        (None, None, None, None)
    );
    assert_eq!(b.timers, BgpTimers::default());
    assert!(!b.advertise_inactive && !b.graceful_restart && !b.addpath_receive);
    assert!(b.networks.is_empty() && b.redistribute.is_empty());
    assert_eq!(b.neighbors.len(), 1);
    let p = nbr(&n, "10.0.0.1");
    let fresh = {
        let mut f = BgpNeighbor::new(p.address, p.span.clone());
        f.gateway_recursive = true;
        f
    };
    assert_eq!(*p, fresh, "every setting back to its default");
    // `no router bgp` removes the speaker, in router-bgp mode too (it is a global command).
    let (n, w) = apply("router bgp 65011\nneighbor 10.0.0.1 remote-as 1\nno router bgp 65011\n");
    assert!(w.is_empty(), "{w:?}");
    assert!(n.device(DeviceId(0)).bgp.is_none());
    let (n, w) = apply("router bgp 65011\nno router bgp\n");
    assert!(w.is_empty() && n.device(DeviceId(0)).bgp.is_none());
    let (n, w) = apply("router bgp 65011\nno router bgp 65012\nno router ospf 1\n");
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].message.contains("running with AS number 65011"));
    assert!(n.device(DeviceId(0)).bgp.is_some());
}

#[test]
fn activation_and_add_path_inheritance() {
    // `no bgp default ipv4-unicast` after the neighbours still deactivates them, except the
    // ones activated in the address family; order does not matter.
    let text = "router bgp 65011
neighbor 10.0.0.1 remote-as 1
neighbor 10.0.0.2 remote-as 2
neighbor 10.0.0.3 remote-as 3
address-family ipv4
neighbor 10.0.0.1 activate
no neighbor 10.0.0.3 activate
neighbor 10.0.0.2 additional-paths send any
exit
no bgp default ipv4-unicast
no bgp additional-paths receive
neighbor 10.0.0.4 remote-as 4
";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:?}");
    let flags = |a: &str| {
        let p = nbr(&n, a);
        (p.activate, p.add_path_rx, p.add_path_tx)
    };
    assert_eq!(flags("10.0.0.1"), (true, false, false));
    assert_eq!(flags("10.0.0.2"), (false, false, true));
    assert_eq!(flags("10.0.0.3"), (false, false, false));
    assert_eq!(flags("10.0.0.4"), (false, false, false));
    // Back to the defaults: inherited again.
    let (n, _) = apply(&format!(
        "{text}bgp default ipv4-unicast\ndefault bgp additional-paths receive\naddress-family ipv4\ndefault neighbor 10.0.0.3 activate\n"
    ));
    assert!(nbr(&n, "10.0.0.3").activate && nbr(&n, "10.0.0.3").add_path_rx);
    assert!(nbr(&n, "10.0.0.4").activate);
    // `neighbor A activate` in router-bgp mode also activates.
    let (n, _) = apply("router bgp 1\nno bgp default ipv4-unicast\nneighbor 10.0.0.1 activate\n");
    assert!(nbr(&n, "10.0.0.1").activate);
}

#[test]
fn sub_modes_fall_back() {
    // In the address family, a router-bgp command returns to router-bgp mode; a global command
    // returns to global mode; `exit` from the address family stays in router bgp.
    let text = "router bgp 65011
address-family ipv4
neighbor 10.0.0.1 remote-as 1
neighbor 10.0.0.1 next-hop-self
address-family ipv4
exit
router-id 1.1.1.1
exit
hostname L1
";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(nbr(&n, "10.0.0.1").next_hop_self, NextHopSelf::All);
    assert_eq!(bgp(&n).router_id, Some(ip("1.1.1.1")));
    assert_eq!(n.device(DeviceId(0)).hostname.as_deref(), Some("L1"));
    // After `exit` to global mode, router-bgp commands are errors.
    let e = errors("router bgp 1\nexit\nrouter-id 1.1.1.1\n");
    assert_eq!(at(&e[0]), (12, 5));
}

#[test]
fn abbreviations() {
    let text = "router b 65011\nnei 10.0.11.1 remot 65000\nnei 10.0.11.1 next-hop-s\nnei 10.0.11.1 ebgp 4\nredist conn\nmax 2\naddr ipv4\nnei 10.0.11.1 act\nnet 10.0.0.0/8\nexit-a\nbgp additional-paths send an\n";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:?}");
    let p = nbr(&n, "10.0.11.1");
    assert_eq!((p.remote_as, p.multihop), (Some(65000), Some(4)));
    assert!(p.next_hop_self == NextHopSelf::All && p.add_path_tx);
    let b = bgp(&n);
    assert_eq!((b.max_paths, b.networks.clone()), (Some(2), vec![net("10.0.0.0/8")]));
    assert_eq!(b.redistribute[0].source, BgpRedistSource::Connected);
    // Ambiguous as on EOS: remote-as / remove-private-as; `a` in router-bgp mode.
    let e = errors("router bgp 1\nnei 10.0.11.1 rem 65000\na ipv4\n");
    assert_eq!(e.iter().map(at).collect::<Vec<_>>(), vec![(11, 19), (12, 5)]);
    assert!(e.iter().all(|d| d.message.starts_with("% Ambiguous")), "{e:?}");
    assert!(
        e[0].message.contains("remote-as, remove-private-as"),
        "{}",
        e[0].message
    );
}

#[test]
fn errors_with_positions() {
    let text = "router bgp 0
router bgp 65536.1
router bgp 65011
neighbor 10.0.0.300 remote-as 1
neighbor 10.0.0.1 remote-as
neighbor 10.0.0.1 timers 10 2
neighbor 10.0.0.1 ebgp-multihop 256
maximum-paths 0
distance bgp 20 200
network 10.0.0.0 mask 255.0.255.0
neighbor 10.0.0.1 frobnicate
router bgp 65012
neighbor 10.0.0.9 remote-as 9
bgp default ipv4-unicast extra
";
    let e = errors(text);
    let got = messages(&e);
    let want: Vec<(u32, u32)> = vec![
        (10, 16),
        (11, 16),
        (13, 14),
        (14, 32),
        (15, 33),
        (16, 37),
        (17, 19),
        (18, 24),
        (19, 27),
        (20, 23),
        (21, 16),
        (23, 30),
    ];
    assert_eq!(got.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(), want, "{got:#?}");
    assert!(got[0].2.contains("AS number"), "{}", got[0].2);
    assert!(got[4].2.contains("hold time"), "{}", got[4].2);
    assert_eq!(got[10].2, "% BGP is already running with AS number 65011");
    assert!(e.iter().all(|d| d.severity == Severity::Error));
    // Across two texts (a later scenario step) too; the rejected block's lines are swallowed.
    let (mut n, dev) = switch("Leaf-1");
    apply_config(&mut n, dev, LEAF1_S3A, &origin()).unwrap();
    let e = apply_config(
        &mut n,
        dev,
        "router bgp 65012\nneighbor 10.9.9.9 remote-as 1\n",
        &origin(),
    )
    .unwrap_err();
    assert_eq!(
        messages(&e.0),
        vec![(10, 16, "% BGP is already running with AS number 65011")]
    );
    assert!(bgp(&n).neighbor(ip("10.9.9.9")).is_none());
}

#[test]
fn warnings_for_unmodelled_lines() {
    let text = "router bgp 65011
neighbor 10.0.0.1 remote-as 1
neighbor 10.0.0.1 password 7 abc
neighbor 10.0.0.1 send-community
neighbor 10.0.0.1 maximum-routes 12000
neighbor SPINES peer group
neighbor SPINES remote-as 65000
neighbor 10.0.0.2 peer group SPINES
neighbor 10.0.0.3 peer-group SPINES
neighbor fd00::1 remote-as 1
bgp bestpath med always
graceful-restart restart-time 300
network 10.1.0.0/16 route-map RM
redistribute ospf match external
address-family ipv6
neighbor fd00::1 activate
network fd00::/64
!
address-family ipv4
neighbor 10.0.0.1 route-map IN in
vrf RED
neighbor 10.9.0.1 remote-as 9
address-family ipv4
neighbor 10.9.0.1 activate
exit
router-id 9.9.9.9
exit
neighbor 10.0.0.5 remote-as 5
";
    let (n, w) = apply(text);
    let got = messages(&w);
    let lines: Vec<u32> = got.iter().map(|g| g.0).collect();
    assert_eq!(
        lines,
        vec![12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 29, 30],
        "{got:#?}"
    );
    assert!(got.iter().all(|g| g.2.contains("not modelled")), "{got:#?}");
    assert!(got[5].2.contains("peer group 'SPINES'") && got[5].2.contains("10.0.0.2"));
    assert_eq!((got[10].0, got[10].1), (22, 5 + 30));
    assert!(got[10].2.contains("route-map 'RM'"));
    assert!(got[12].2.contains("address-family ipv6"));
    assert!(got[13].2.contains("route-map IN in"), "{}", got[13].2);
    assert!(got[14].2.contains("vrf RED"), "{}", got[14].2);
    let b = bgp(&n);
    // Members of a peer group are still neighbours; the vrf's are not the default vrf's.
    let addrs: Vec<Ipv4Addr> = b.neighbors.iter().map(|p| p.address).collect();
    assert_eq!(
        addrs,
        vec![ip("10.0.0.1"), ip("10.0.0.2"), ip("10.0.0.3"), ip("10.0.0.5")]
    );
    assert_eq!(b.router_id, None);
    assert!(b.graceful_restart);
    assert_eq!(b.networks, vec![net("10.1.0.0/16")]);
}

#[test]
fn vrf_and_vlan_blocks_end_where_their_grammar_ends() {
    let text = "router bgp 65011
vlan 10
rd 1:10
route-target both 1:10
redistribute learned
neighbor 10.0.0.1 remote-as 1
vrf RED
router-id 2.2.2.2
router ospf 1
";
    let (n, w) = apply(text);
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!((w[0].span.line, w[1].span.line), (11, 16));
    assert_eq!(nbr(&n, "10.0.0.1").remote_as, Some(1));
    assert_eq!(bgp(&n).router_id, None);
    assert!(n.device(DeviceId(0)).ospf.is_some());
}
