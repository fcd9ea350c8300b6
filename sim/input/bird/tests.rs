//! Unit tests: BIRD's defaults, template overriding, filter shapes, and the errors (position and
//! what was expected).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::apply_bird;
use crate::diag::{Diagnostic, Severity, TextOrigin};
use crate::engine::filter::{run_filter, FilterRoute, Verdict};
use crate::input::topology::parse_topology;
use crate::model::bgp::{BgpConfig, BirdDaemon, Cond, NextHopSelf, Policy, Stmt};

fn parse(text: &str) -> Result<(BirdDaemon, Option<BgpConfig>, Vec<Diagnostic>), Diagnostic> {
    let mut net = parse_topology("devices:\n  h:\n    kind: linux\n", "t.yaml")
        .expect("topology")
        .net;
    let dev = net.device_by_name("h").expect("h");
    let origin = TextOrigin {
        file: "b.cfg".into(),
        line: 1,
        col: 1,
    };
    let w = apply_bird(&mut net, dev, text, &origin, &BTreeMap::new()).map_err(|e| e.0[0].clone())?;
    let d = net.device(dev);
    Ok((d.bird.clone().expect("daemon"), d.bgp.clone(), w))
}

fn bgp(text: &str) -> BgpConfig {
    parse(text).unwrap_or_else(|e| panic!("{e}")).1.expect("a speaker")
}

/// The first error, as `line:col: message`.
fn err(text: &str) -> String {
    match parse(text) {
        Ok(_) => "parsed".into(),
        Err(d) => {
            assert_eq!(d.severity, Severity::Error);
            format!("{}:{}: {}", d.span.line, d.span.col, d.message)
        }
    }
}

#[test]
fn ebgp_and_ibgp_defaults_follow_bgp_check_config() {
    let b = bgp("protocol bgp e { local as 1; neighbor 10.0.0.2 as 2; }\n\
                 protocol bgp i { local as 1; neighbor 10.0.0.3 as 1; }");
    let (e, i) = (&b.neighbors[0], &b.neighbors[1]);
    assert_eq!((e.multihop, e.gateway_recursive), (None, false), "eBGP: direct");
    assert_eq!(
        (i.multihop, i.gateway_recursive),
        (Some(64), true),
        "iBGP: multihop 64, recursive"
    );
    for n in [e, i] {
        assert_eq!(n.import, Policy::All);
        assert_eq!(n.export, Policy::None, "proto_config_new: out_filter = FILTER_REJECT");
        assert_eq!(n.timers.hold, Some(240));
        assert_eq!(n.timers.connect_retry, Some(120));
        assert_eq!(n.timers.connect_delay, Some(5));
        assert_eq!(n.timers.error_wait, Some((60, 300)));
        assert!(!n.add_path_rx && !n.add_path_tx && !n.passive && !n.graceful_restart);
    }
    assert_eq!(b.asn, 1);
    assert_eq!(b.router_id, None);
}

#[test]
fn protocol_overrides_template_and_options_parse() {
    let b = bgp(
        "template bgp t { local as 65000; multihop 3; add paths rx; passive on; hold time 9; }\n\
                 protocol bgp p from t { neighbor 10.0.0.2 port 179 as 65001; passive off; add paths tx;\n\
                 next hop self; graceful restart aware; keepalive time 3; rr cluster id 1.2.3.4; disabled; }\n\
                 protocol bgp from t { neighbor 10.0.0.4 as 65000; gateway recursive; local 10.0.0.9 as 65000; }",
    );
    let p = &b.neighbors[0];
    assert_eq!(p.name.as_deref(), Some("p"));
    assert_eq!(p.multihop, Some(3));
    assert!(!p.passive && !p.add_path_rx && p.add_path_tx && p.shutdown);
    assert_eq!(p.next_hop_self, NextHopSelf::All, "BIRD's covers reflected paths");
    assert_eq!((p.timers.hold, p.timers.keepalive), (Some(9), Some(3)));
    assert_eq!(p.rr_cluster_id, Some(Ipv4Addr::new(1, 2, 3, 4)));
    let anon = &b.neighbors[1];
    assert_eq!(anon.name.as_deref(), Some("bgp1"), "BIRD's generated name");
    assert_eq!(anon.source_address, Some(Ipv4Addr::new(10, 0, 0, 9)));
}

#[test]
fn differing_local_as_warns() {
    let (_, b, w) = parse(
        "protocol bgp a { local as 1; neighbor 10.0.0.2 as 2; }\n\
                           protocol bgp b { local as 3; neighbor 10.0.0.3 as 2; }",
    )
    .expect("valid");
    assert_eq!(b.expect("speaker").asn, 1);
    assert_eq!(w.len(), 1);
    assert!(w[0].message.contains("protocol b has local as 3"), "{}", w[0]);
    assert_eq!(w[0].span.line, 2);
}

#[test]
fn no_bgp_protocol_means_no_speaker() {
    let (d, b, _) = parse("router id 1.2.3.4; protocol device { scan time 2; }").expect("valid");
    assert!(b.is_none());
    assert_eq!(d.router_id, Some(Ipv4Addr::new(1, 2, 3, 4)));
}

#[test]
fn and_or_share_one_precedence_left_to_right() {
    let (d, _, _) =
        parse("filter f { if net = 1.0.0.0/8 || net = 2.0.0.0/8 && net ~ 2.0.0.0/7 then accept; }").expect("valid");
    let Stmt::If { cond, .. } = &d.filters["f"].body[0] else {
        panic!("if")
    };
    assert!(
        matches!(cond, Cond::And(l, _) if matches!(**l, Cond::Or(..))),
        "{cond:?}"
    );
}

#[test]
fn prefix_sets_where_and_inline_filters() {
    let b = bgp("protocol bgp p { local as 1; neighbor 10.0.0.2 as 2;\n\
                 import where net ~ [ 10.0.0.0/8+, 192.168.0.0/16{16,16}, 172.16.0.0/12 ];\n\
                 export filter { if net != 10.1.0.0/16 then accept; reject; }; }");
    let p = &b.neighbors[0];
    assert_eq!(p.import, Policy::Filter("p.import".into()));
    assert_eq!(p.export, Policy::Filter("p.export".into()));
    let (d, _, _) = parse(
        "protocol bgp p { local as 1; neighbor 10.0.0.2 as 2;\n\
                           import where net ~ [ 10.0.0.0/8+, 172.16.0.0/12 ]; }",
    )
    .expect("valid");
    let imp = Policy::Filter("p.import".into());
    let v = |net: &str| run_filter(&d, &imp, &mut FilterRoute::new(net.parse().expect("net"), "p"));
    assert_eq!(v("10.1.0.0/16"), Verdict::Accept, "P+ takes more-specifics");
    assert_eq!(v("172.16.0.0/12"), Verdict::Accept, "P matches itself");
    assert_eq!(
        v("172.16.1.0/24"),
        Verdict::Reject,
        "P alone does not take more-specifics"
    );
}

#[test]
fn else_and_nested_blocks() {
    let (d, _, w) = parse(
        "function g () { bgp_community.add((65000,100)); print \"x\"; }\n\
         filter f { g(); if net ~ 10.0.0.0/8 then { if net = 10.0.0.0/8 then reject; else krt_tunnel = \"t\"; accept; }\n\
         else { bgp_local_pref = 200; } reject; }",
    )
    .expect("valid");
    assert_eq!(w.len(), 1, "community methods warn: {w:?}");
    let f = Policy::Filter("f".into());
    let mut r = FilterRoute::new("10.1.0.0/16".parse().expect("net"), "static1");
    assert_eq!(run_filter(&d, &f, &mut r), Verdict::Accept);
    let mut r = FilterRoute::new("10.0.0.0/8".parse().expect("net"), "static1");
    assert_eq!(run_filter(&d, &f, &mut r), Verdict::Reject);
}

#[test]
fn runtime_errors_and_source_reject_or_match() {
    let (d, _, _) = parse(
        "filter a { if bgp_next_hop ~ 10.0.0.0/8 then accept; accept; }\n\
         filter s { if source = RTS_STATIC && proto = \"static1\" then accept; reject; }",
    )
    .expect("valid");
    let net = "10.0.0.0/24".parse().expect("net");
    let mut r = FilterRoute::new(net, "static1");
    assert_eq!(
        run_filter(&d, &Policy::Filter("a".into()), &mut r),
        Verdict::Reject,
        "undefined attribute"
    );
    assert_eq!(run_filter(&d, &Policy::Filter("s".into()), &mut r), Verdict::Accept);
    let mut r = FilterRoute::new(net, "Mesh_1");
    assert_eq!(run_filter(&d, &Policy::Filter("s".into()), &mut r), Verdict::Reject);
    assert_eq!(run_filter(&d, &Policy::All, &mut r), Verdict::Accept);
    assert_eq!(run_filter(&d, &Policy::None, &mut r), Verdict::Reject);
}

#[test]
fn errors_name_the_token_and_what_was_expected() {
    let deep = format!("filter f {{ if {}net ~ 1.0.0.0/8 then accept; }}", "(".repeat(5000));
    let cases = [
        (
            "router id 1.2.3.4",
            "1:18: expected `;` after `router id`, found end of file",
        ),
        (
            "protocol bgp p {\n  neighbour 10.0.0.1 as 1;\n}",
            "2:3: unknown BGP option `neighbour`",
        ),
        (
            "protocol static {\n route 10.0.0.1/24 blackhole; }",
            "2:8: invalid prefix 10.0.0.1/24: host bits are set",
        ),
        (
            "protocol static { route 10.0.0.0/33 blackhole; }",
            "1:34: invalid prefix length 33",
        ),
        (
            "protocol bgp p { local as 1; neighbor 1.1.1.1 as 2; multihop; gateway direct; }",
            "1:14: protocol p: multihop BGP cannot use `gateway direct`",
        ),
        (
            "protocol bgp p { local as 1; neighbor 1.1.1.1 as 2; rr client; }",
            "1:14: protocol p: only an internal",
        ),
        (
            "protocol bgp p { neighbor 1.1.1.1 as 2; }",
            "1:14: protocol p: local AS number must be set",
        ),
        (
            "protocol kernel { export filter nope; }",
            "1:33: no filter named `nope`",
        ),
        (
            "filter f { g(); }",
            "1:12: `g` is not a function defined before this call",
        ),
        (
            "filter f { if ! net ~ 1.0.0.0/8 then accept; }",
            "1:15: in BIRD `!` binds tighter",
        ),
        (
            "filter f { if net ~ [ 1.0.0.0/8{9,16} ] then accept; }",
            "1:23: the prefix pattern 1.0.0.0/8{9,16} is not supported by fabsim",
        ),
        (
            "filter f { proto = \"x\"; }",
            "1:12: the route attribute `proto` is read-only",
        ),
        (
            "filter f { accept; }\nfilter f { reject; }",
            "2:8: `f` is already defined at b.cfg:1:8",
        ),
        ("protocol foo { }", "1:10: expected a protocol type"),
        ("bogus;", "1:1: expected `protocol`, `template`"),
        ("include \"x.cfg\";", "1:1: include file `x.cfg` was not given"),
        ("protocol bgp p from t { }", "1:21: no template named `t`"),
        (deep.as_str(), "1:79: filter code nested deeper than 64 levels"),
    ];
    for (text, want) in cases {
        let got = err(text);
        assert!(got.starts_with(want), "{text}\n  want: {want}\n  got:  {got}");
    }
}

#[test]
fn unmodelled_but_valid_bird_warns_with_its_line() {
    let (_, _, w) = parse(
        "log syslog all;\ndebug protocols all;\nlisten bgp port 1179;\nprotocol ospf o { area 0 { }; }\n\
         protocol bgp p { local as 1; neighbor 10.0.0.2 as 2; password \"x\"; ttl security on; }",
    )
    .expect("valid");
    let lines: Vec<u32> = w.iter().map(|d| d.span.line).collect();
    assert_eq!(lines, [3, 4, 5, 5], "{w:?}");
    assert!(w.iter().all(|d| d.severity == Severity::Warning));
}
