//! Tests of EOS configuration parsing, through `apply_config` and `canonical_interface`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::diag::{Diagnostic, InputError, Severity, Span, TextOrigin};
use crate::model::{
    AclAction, AddrConfig, Device, DeviceId, DeviceKind, IfOspf, Interface, Network, RedistSource, RouteOrigin,
    VendorProfile,
};

use super::keywords::{ACL_WORDS, BGP_BGP_WORDS, GLOBAL_WORDS, IF_WORDS, OSPF_WORDS, STATIC_ROUTE_OPTIONS};
use super::{apply_config, canonical_interface, KeywordContext, IGNORED_BY_DESIGN};

pub(super) fn origin() -> TextOrigin {
    TextOrigin {
        file: "lab.yaml".into(),
        line: 10,
        col: 5,
    }
}

pub(super) fn switch(name: &str) -> (Network, DeviceId) {
    let mut net = Network::default();
    net.devices.push(Device {
        name: name.into(),
        kind: DeviceKind::Eos,
        hostname: None,
        ifaces: Vec::new(),
        boot_ms: 0,
        profile: VendorProfile::eos(),
        statics: Vec::new(),
        ospf: None,
        bgp: None,
        bird: None,
        acls: BTreeMap::new(),
        ip_forward: true,
        masquerade: None,
        kube_proxy: None,
        external: None,
        image: None,
        kubelet: None,
        span: Span::default(),
    });
    (net, DeviceId(0))
}

pub(super) fn apply(text: &str) -> (Network, Vec<Diagnostic>) {
    let (mut net, dev) = switch("Spine-1");
    let warnings = apply_config(&mut net, dev, text, &origin()).unwrap_or_else(|e| panic!("unexpected errors:\n{e}"));
    (net, warnings)
}

pub(super) fn errors(text: &str) -> Vec<Diagnostic> {
    let (mut net, dev) = switch("Spine-1");
    match apply_config(&mut net, dev, text, &origin()) {
        Ok(w) => panic!("expected errors, got warnings {w:?}"),
        Err(InputError(e)) => e,
    }
}

pub(super) fn iface<'n>(net: &'n Network, name: &str) -> &'n Interface {
    let id = net
        .iface_by_name(DeviceId(0), name)
        .unwrap_or_else(|| panic!("no {name}"));
    net.iface(id)
}

pub(super) fn net(s: &str) -> Ipv4Net {
    s.parse().unwrap()
}

pub(super) fn at(d: &Diagnostic) -> (u32, u32) {
    (d.span.line, d.span.col)
}

const LEAF1_S0: &str = "interface Ethernet1
no switchport
ip address 10.11.99.1/31
!
interface Ethernet2
no switchport
ip address 10.0.11.0/31
!
interface Ethernet3
no switchport
ip address 10.1.11.0/31
";

const SPINE1_S0: &str = "interface Ethernet1
no switchport
ip address 10.11.99.0/31
!
interface Ethernet2
no switchport
ip address 10.22.99.0/31
!
interface Ethernet3
no switchport
ip address 10.33.99.0/31
router ospf 1
network 0.0.0.0/0 area 0.0.0.0
";

/// seed-lab s0b and s0b-nat as typed (prompts removed).
const SPINE1_S0B_NAT: &str = "conf t
int ethernet 4
no switchport
ip address dhcp
ip route 0.0.0.0 0.0.0.0 10.0.137.1
router ospf 1
redistribute static
ip access-list ACL_NAT
 permit ip 10.0.0.0/8 any log
int et4
ip nat source dynamic access-list ACL_NAT overload
";

#[test]
fn seed_leaf1_s0() {
    let (n, w) = apply(LEAF1_S0);
    assert!(w.is_empty(), "{w:?}");
    for (name, addr) in [
        ("Ethernet1", "10.11.99.1/31"),
        ("Ethernet2", "10.0.11.0/31"),
        ("Ethernet3", "10.1.11.0/31"),
    ] {
        let i = iface(&n, name);
        assert!(i.routed && i.admin_up);
        assert_eq!(i.addr, AddrConfig::Static(net(addr)));
        assert_eq!(i.mtu, 1500);
    }
    assert_eq!(n.device(DeviceId(0)).ifaces.len(), 3);
    assert_eq!(iface(&n, "Ethernet2").span, Span::new("lab.yaml", 14, 15));
}

#[test]
fn seed_spine1_s0_s0b_nat() {
    let (mut n, dev) = switch("Spine-1");
    let w = apply_config(&mut n, dev, SPINE1_S0, &origin()).unwrap();
    assert!(w.is_empty(), "{w:?}");
    let w = apply_config(&mut n, dev, SPINE1_S0B_NAT, &origin()).unwrap();
    assert!(w.is_empty(), "{w:?}");
    let d = n.device(dev);
    let ospf = d.ospf.as_ref().unwrap();
    assert_eq!(ospf.process_id, 1);
    assert_eq!(ospf.networks.len(), 1);
    assert_eq!((ospf.networks[0].prefix, ospf.networks[0].area), (net("0.0.0.0/0"), 0));
    assert_eq!(ospf.redistribute.len(), 1);
    assert_eq!(ospf.redistribute[0].source, RedistSource::Static);
    assert_eq!(
        (ospf.redistribute[0].metric, ospf.redistribute[0].metric_type),
        (None, None)
    );
    assert_eq!(d.statics.len(), 1);
    let r = &d.statics[0];
    assert_eq!(
        (r.prefix, r.via, r.distance),
        (net("0.0.0.0/0"), Some("10.0.137.1".parse().unwrap()), None)
    );
    assert_eq!(r.origin, RouteOrigin::Manual);
    let acl = &d.acls["ACL_NAT"];
    assert_eq!(acl.entries.len(), 1);
    let e = &acl.entries[0];
    assert_eq!((e.seq, e.action, e.protocol), (10, AclAction::Permit, None));
    assert_eq!((e.src, e.dst), (net("10.0.0.0/8"), net("0.0.0.0/0")));
    let et4 = iface(&n, "Ethernet4");
    assert!(et4.routed);
    assert_eq!(et4.addr, AddrConfig::Dhcp);
    assert_eq!(et4.nat_overload_acl.as_deref(), Some("ACL_NAT"));
    assert_eq!(d.ifaces.len(), 4);
}

#[test]
fn abbreviations() {
    let text = "int et4\nno sw\nip add 1.2.3.4/24\nint ethernet 5\nno switchp\nip addr 10.0.0.1 255.255.255.254\nrouter ospf 1\nredist stat\nredist conn metric 5 metric-type 1\npass def\nno passive-interface et4\nmaxi 4\nrouter-id 1.1.1.1\nnet 10.0.0.0 0.0.0.255 area 1.2.3.4\n";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(iface(&n, "Ethernet4").addr, AddrConfig::Static(net("1.2.3.4/24")));
    assert_eq!(iface(&n, "Ethernet5").addr, AddrConfig::Static(net("10.0.0.1/31")));
    let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
    assert_eq!(o.redistribute.len(), 2);
    assert_eq!(
        (o.redistribute[1].metric, o.redistribute[1].metric_type),
        (Some(5), Some(1))
    );
    assert!(o.passive_default);
    assert_eq!(o.passive_exceptions, vec!["Ethernet4".to_string()]);
    assert_eq!(o.max_paths, Some(4));
    assert_eq!(o.router_id, Some("1.1.1.1".parse().unwrap()));
    assert_eq!(o.networks[0].prefix, net("10.0.0.0/24"));
    assert_eq!(o.networks[0].area, u32::from(Ipv4Addr::new(1, 2, 3, 4)));
    // EOS also has max-lsa and ospfv3: these prefixes are ambiguous there too.
    let e = errors("router ospf 1\nmax 4\nrouter os 2\n");
    assert!(e.iter().all(|d| d.message.starts_with("% Ambiguous")), "{e:?}");
    assert_eq!(e.iter().map(at).collect::<Vec<_>>(), vec![(11, 5), (12, 12)]);
}

#[test]
fn canonical_names() {
    let cases = [
        ("et4", Some("Ethernet4")),
        ("Et4", Some("Ethernet4")),
        ("ethernet 4", Some("Ethernet4")),
        ("Ethernet4", Some("Ethernet4")),
        ("eth4", Some("Ethernet4")),
        ("Ethernet1/1", Some("Ethernet1/1")),
        ("et04", Some("Ethernet4")),
        ("lo0", Some("Loopback0")),
        ("loopback 0", Some("Loopback0")),
        ("ma1", Some("Management1")),
        ("vlan10", Some("Vlan10")),
        ("po10", Some("Port-Channel10")),
        ("Ethernet4.100", Some("Ethernet4.100")),
        ("v10", None),
        ("ens3", None),
        ("Ethernet", None),
        ("4", None),
        ("et4x", None),
        ("", None),
        ("ét4", None),
    ];
    for (input, want) in cases {
        assert_eq!(canonical_interface(input).as_deref(), want, "{input}");
    }
}

#[test]
fn no_and_default_forms() {
    let text = "interface Ethernet1
no switchport
ip address 10.0.0.0/31
mtu 9000
shutdown
ip ospf cost 50
ip ospf priority 0
ip ospf network point-to-point
ip nat source dynamic access-list A overload
no ip address
default mtu
no shutdown
no ip ospf cost 50
no ip ospf priority
no ip ospf network point-to-point
no ip nat source dynamic access-list A overload
default switchport
ip route 10.0.0.0/8 Null0
ip route 10.1.0.0/16 10.0.0.1 200 tag 7 name x
ip route 10.1.0.0/16 Ethernet1 10.0.0.3
no ip route 10.0.0.0/8 Null0
no ip route 10.1.0.0/16 10.0.0.1
hostname S1
";
    let (n, w) = apply(text);
    assert!(w.is_empty(), "{w:?}");
    let i = iface(&n, "Ethernet1");
    assert!(!i.routed && i.admin_up);
    assert_eq!((i.addr.clone(), i.mtu), (AddrConfig::None, 1500));
    assert_eq!(i.ospf, IfOspf::default());
    assert_eq!(i.nat_overload_acl, None);
    let d = n.device(DeviceId(0));
    assert_eq!(d.statics.len(), 1);
    assert_eq!(d.statics[0].dev.as_deref(), Some("Ethernet1"));
    assert_eq!(d.hostname.as_deref(), Some("S1"));
    let (n, _) = apply("ip route 10.0.0.0/8 null0 250\nhostname X\nno hostname");
    let r = &n.device(DeviceId(0)).statics[0];
    assert!(r.blackhole && r.distance == Some(250) && r.via.is_none());
    assert_eq!(n.device(DeviceId(0)).hostname, None);
}

#[test]
fn ospf_process_and_networks() {
    let text = "router ospf 1\nnetwork 10.0.0.0/8 area 0\nnetwork 10.0.0.0/8 area 1\nnetwork 192.168.0.0/16 area 0\nno network 192.168.0.0/16 area 0\nshutdown\n";
    let (n, w) = apply(text);
    assert!(w.is_empty());
    let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
    assert_eq!(o.networks.len(), 1);
    assert_eq!(o.networks[0].area, 1);
    assert!(o.shutdown);
    let (n, w) = apply("router ospf 1\nrouter ospf 2\nnetwork 1.0.0.0/8 area 0\nno router ospf 1\n");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("second OSPF process"));
    assert!(n.device(DeviceId(0)).ospf.is_none());
}

#[test]
fn no_router_ospf_in_ospf_mode_is_global() {
    let (n, w) = apply("router ospf 1\nrouter-id 1.1.1.1\nno router ospf 1\n");
    assert!(w.is_empty(), "{w:?}");
    assert!(n.device(DeviceId(0)).ospf.is_none());
}

#[test]
fn passive_interface_exceptions() {
    let (n, _) =
        apply("router ospf 1\npassive-interface Et1\npassive-interface et2\nno passive-interface ethernet 1\n");
    let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
    assert!(!o.passive_default);
    assert_eq!(o.passive_exceptions, vec!["Ethernet2".to_string()]);
}

#[test]
fn acl_sequences_and_removal() {
    let text = "ip access-list A
permit ip any host 1.2.3.4
15 deny ip 10.0.0.0 0.255.255.255 any
permit tcp any any eq 80
remark hello
statistics per-entry
no 15
no permit ip any host 1.2.3.4
permit 17 any any
";
    let (n, w) = apply(text);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("eq 80"));
    assert_eq!(at(&w[0]), (13, 5 + 19));
    let acl = &n.device(DeviceId(0)).acls["A"];
    let seqs: Vec<(u32, Option<u8>)> = acl.entries.iter().map(|e| (e.seq, e.protocol)).collect();
    assert_eq!(seqs, vec![(25, Some(6)), (35, Some(17))]);
    let e = errors("ip access-list A\n10 permit ip any any\n10 deny ip any any\n");
    assert_eq!(at(&e[0]), (12, 5));
    assert!(e[0].message.contains("duplicate sequence"));
}

#[test]
fn warnings_point_at_statements() {
    let text = "spanning-tree mode mstp
username admin privilege 15 role network-admin secret sha512 x
interface Ethernet1
   description to Leaf-1
   speed forced 10000full
   ip ospf hello-interval 5
   ip address 10.0.0.0/31
router ospf 1
   max-lsa 12000
   log-adjacency-changes
   auto-cost reference-bandwidth 100000
   redistribute connected route-map RM
no ip routing
management api http-commands
   no shutdown
!
ntp server 1.2.3.4
";
    let (_, w) = apply(text);
    let got: Vec<(u32, u32)> = w.iter().map(at).collect();
    // col: origin.col (5) + byte offset.
    assert_eq!(
        got,
        vec![
            (10, 5),
            (11, 5),
            (14, 8),
            (15, 8),
            (16, 8),
            (20, 8),
            (21, 41),
            (22, 5),
            (23, 5),
            (26, 5)
        ],
        "{w:#?}"
    );
    assert!(w.iter().all(|d| d.severity == Severity::Warning));
    assert!(w[0].message.contains("not modelled by fabsim; ignored"));
    assert!(w[4].message.contains("not a routed port"));
    assert!(w[6].message.contains("route-map 'RM'"));
    assert!(w[8].message.contains("lines 23-25"), "{}", w[8].message);
}

#[test]
fn switchport_address_warning_only_if_still_l2() {
    let (_, w) = apply("interface Ethernet1\nip address 10.0.0.0/31\nno switchport\n");
    assert!(w.is_empty(), "{w:?}");
    let (_, w) = apply("interface Ethernet1\nno switchport\nip address 10.0.0.0/31\nswitchport\n");
    assert_eq!(w.len(), 1);
    assert_eq!(at(&w[0]), (13, 5));
}

#[test]
fn loopback_defaults() {
    let (n, _) = apply("interface Loopback0\nip address 10.255.0.1/32\n");
    let i = iface(&n, "Loopback0");
    assert!(i.routed);
    assert_eq!(i.mtu, 65535);
    let e = errors("interface lo0\nno switchport\n");
    assert_eq!(at(&e[0]), (11, 8));
}

#[test]
fn errors_with_positions() {
    let text = "interface Ethernet1
ip address 10.0.0.300/24
ip address 10.0.0.1 255.0.255.0
router ospf 1
network 10.0.0.0/33 area 0
network 10.0.0.0/8 area
frobnicate
i
ip route 10.0.0.0/8
ip ospf cost 0
";
    let e = errors(text);
    let got: Vec<(u32, u32, &str)> = e
        .iter()
        .map(|d| (d.span.line, d.span.col, d.message.as_str()))
        .collect();
    assert_eq!(got.len(), 8, "{got:#?}");
    assert_eq!((got[0].0, got[0].1), (11, 16));
    assert!(got[0].2.contains("found '10.0.0.300/24'"));
    assert_eq!((got[1].0, got[1].1), (12, 25));
    assert!(got[1].2.contains("contiguous netmask"));
    assert_eq!((got[2].0, got[2].1), (14, 13));
    assert!(got[2].2.contains("found '10.0.0.0/33'"), "{}", got[2].2);
    assert_eq!((got[3].0, got[3].1), (15, 28));
    assert!(got[3].2.contains("found end of line"));
    assert_eq!((got[4].0, got[4].1), (16, 5));
    assert!(got[4].2.starts_with("expected"));
    assert_eq!((got[5].0, got[5].1), (17, 5));
    assert!(got[5].2.starts_with("% Ambiguous command"), "{}", got[5].2);
    assert_eq!((got[6].0, got[6].1), (18, 24));
    // `ip ospf cost 0` in OSPF mode is not an OSPF command; global mode rejects `ospf`.
    assert_eq!((got[7].0, got[7].1), (19, 8));
    assert!(e.iter().all(|d| d.severity == Severity::Error));
    assert_eq!(errors("ip ospf cost 0\n").len(), 1);
}

#[test]
fn warnings_and_errors_on_later_block_lines_use_block_col() {
    let o = TextOrigin {
        file: "t.yaml".into(),
        line: 3,
        col: 9,
    };
    let (mut n, dev) = switch("S");
    let e = apply_config(&mut n, dev, "hostname a\nip route x", &o).unwrap_err();
    assert_eq!(e.0[0].span, Span::new("t.yaml", 4, 9 + 9));
}

#[test]
fn ignored_table_words_are_reachable_keywords() {
    for e in IGNORED_BY_DESIGN {
        let words: &[&str] = match e.context {
            KeywordContext::Global => GLOBAL_WORDS,
            KeywordContext::Interface => IF_WORDS,
            KeywordContext::Ospf => OSPF_WORDS,
            KeywordContext::BgpOption => BGP_BGP_WORDS,
            KeywordContext::Acl => ACL_WORDS,
            KeywordContext::StaticRouteOption => STATIC_ROUTE_OPTIONS,
            KeywordContext::AclRuleOption | KeywordContext::AnyMode => continue,
        };
        assert!(words.contains(&e.keyword), "{} not a keyword", e.keyword);
    }
}

#[test]
fn bad_device_id_is_an_error_not_a_panic() {
    let (mut n, _) = switch("S");
    assert!(apply_config(&mut n, DeviceId(7), "hostname x", &origin()).is_err());
}

/// Deterministic pseudo-random garbage built from real keywords and odd tokens: applying
/// it must never panic, whatever mode it lands in.
#[test]
fn garbage_never_panics() {
    const WORDS: &[&str] = &[
        "interface",
        "int",
        "et4",
        "ethernet",
        "4",
        "lo0",
        "router",
        "ospf",
        "1",
        "no",
        "default",
        "ip",
        "address",
        "route",
        "access-list",
        "permit",
        "deny",
        "any",
        "host",
        "10.0.0.0/8",
        "0.0.0.0",
        "255.255.255.0",
        "0.0.0.255",
        "area",
        "network",
        "redistribute",
        "static",
        "metric",
        "metric-type",
        "passive-interface",
        "!",
        "exit",
        "end",
        "switchport",
        "shutdown",
        "mtu",
        "99999999999999999999",
        "/",
        "1.2.3.4/40",
        "é",
        "\t",
        "nat",
        "source",
        "dynamic",
        "overload",
        "Null0",
        "tag",
        "eq",
        "range",
        "bgp",
        "vlan",
        "-",
        ",",
        "1-4",
        "4294967296",
        "tcp",
        "log",
        "seq",
        "",
        "ßß/3",
        "neighbor",
        "nei",
        "remote-as",
        "65000",
        "1.10",
        "65536.1",
        "address-family",
        "ipv4",
        "ipv6",
        "activate",
        "exit-address-family",
        "additional-paths",
        "send",
        "receive",
        "peer",
        "group",
        "peer-group",
        "vrf",
        "ebgp-multihop",
        "update-source",
        "timers",
        "maximum-paths",
        "ecmp",
        "distance",
        "description",
        "mask",
        "route-map",
        "10.0.11.1",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..1000 {
        let mut text = String::new();
        for _ in 0..(next() % 12) {
            if next() % 3 == 0 {
                text.push_str("   ");
            }
            for _ in 0..(next() % 7) {
                text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
                text.push(' ');
            }
            text.push('\n');
        }
        let (mut n, dev) = switch("S");
        let _ = apply_config(&mut n, dev, &text, &origin());
    }
}
