//! `show ip route [vrf default] [PROTOCOL] [ADDR[/LEN]]` in EOS 4.2x's single-line format:
//! legend, Gateway block, one line per route with ECMP continuation lines (§2.1–§2.3).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::{incomplete, keyword, unsupported};
use crate::engine::state::{Proto, Route};
use crate::engine::State;
use crate::model::{DeviceId, Network};
use crate::views::linux::fib;
use crate::views::CommandError;

const ROUTE_OPTS: &[&str] = &[
    "aggregate",
    "bgp",
    "connected",
    "detail",
    "host",
    "isis",
    "kernel",
    "ospf",
    "rip",
    "static",
    "summary",
    "vrf",
];

/// The 4.2x legend of ntc `arista_eos_show_ip_route4.raw` (§2.1), with the blank line after it.
const ROUTE_LEGEND: &str = "\
VRF: default
Codes: C - connected, S - static, K - kernel,
       O - OSPF, IA - OSPF inter area, E1 - OSPF external type 1,
       E2 - OSPF external type 2, N1 - OSPF NSSA external type 1,
       N2 - OSPF NSSA external type2, B - BGP, B I - iBGP, B E - eBGP,
       R - RIP, I L1 - IS-IS level 1, I L2 - IS-IS level 2,
       O3 - OSPFv3, A B - BGP Aggregate, A O - OSPF Summary,
       NG - Nexthop Group Static Route, V - VXLAN Control Service,
       DH - DHCP client installed default route, M - Martian,
       DP - Dynamic Policy Route, L - VRF Leaked

";

fn route_code(p: Proto) -> &'static str {
    match p {
        Proto::Connected => "C",
        Proto::Static => "S",
        Proto::OspfIntra => "O",
        Proto::OspfInter => "O IA",
        Proto::OspfE1 => "O E1",
        Proto::OspfE2 => "O E2",
        Proto::Dhcp => "DH",
        Proto::BgpExternal => "B E",
        Proto::BgpInternal => "B I",
        // Linux-only; an EOS table never holds it.
        Proto::Bird => "K",
    }
}

/// `show ip route <protocol>`: which route sources the word selects.
fn protocol_filter(word: &str) -> Option<&'static [Proto]> {
    match word {
        "connected" => Some(&[Proto::Connected]),
        "static" => Some(&[Proto::Static]),
        "ospf" => Some(&[Proto::OspfIntra, Proto::OspfInter, Proto::OspfE1, Proto::OspfE2]),
        "bgp" => Some(&[Proto::BgpExternal, Proto::BgpInternal]),
        _ => None,
    }
}

pub(super) fn show_ip_route(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let mut filter: Option<&[Proto]> = None;
    let mut target: Option<Ipv4Net> = None;
    let mut i = 0;
    while let Some(word) = w.get(i) {
        i += 1;
        if let Some(t) = parse_target(word) {
            target = Some(t);
            continue;
        }
        let opt = keyword(word, ROUTE_OPTS)?;
        if opt == "vrf" {
            let vrf = w.get(i).ok_or_else(incomplete)?;
            i += 1;
            if *vrf != "default" {
                return Err(CommandError::new(format!("% VRF {vrf} does not exist")));
            }
            continue;
        }
        filter = Some(protocol_filter(opt).ok_or_else(|| unsupported(&["show ip route", opt]))?);
    }
    let routes: Vec<&Route> = fib(st, dev).map(|f| f.iter().collect()).unwrap_or_default();
    let routes: Vec<&Route> = routes
        .into_iter()
        .filter(|r| filter.is_none_or(|f| f.contains(&r.proto)))
        .collect();
    Ok(format!(
        "{ROUTE_LEGEND}{}",
        route_body(net, &routes, filter.is_some(), target)
    ))
}

/// `A.B.C.D` (as a /32) or `A.B.C.D/L`.
fn parse_target(word: &str) -> Option<Ipv4Net> {
    word.parse::<Ipv4Net>()
        .ok()
        .map(|n| n.trunc())
        .or_else(|| word.parse::<Ipv4Addr>().ok().map(Ipv4Net::from))
}

/// What follows the legend (§2.2, §2.3). Unfiltered: the Gateway block, then every other route
/// by prefix. Filtered by protocol: only those routes, no Gateway block (the manual's
/// `show ip route bgp`). For an address: its best match if that is not the default route, else
/// the Gateway block alone (a filtered lookup that falls to the default prints nothing).
fn route_body(net: &Network, routes: &[&Route], filtered: bool, target: Option<Ipv4Net>) -> String {
    let is_default = |r: &&&Route| r.prefix.prefix_len() == 0;
    let gateway = || {
        let defaults: String = routes.iter().filter(is_default).map(|r| route_lines(net, r)).collect();
        match defaults.is_empty() {
            true => "Gateway of last resort is not set\n\n".to_string(),
            false => format!("Gateway of last resort:\n{defaults}\n"),
        }
    };
    match target {
        Some(t) => {
            let best = routes
                .iter()
                .filter(|r| r.prefix.contains(&t))
                .max_by_key(|r| r.prefix.prefix_len());
            match best {
                Some(r) if r.prefix.prefix_len() > 0 => route_lines(net, r),
                _ if filtered => String::new(),
                _ => gateway(),
            }
        }
        None if filtered => routes.iter().map(|r| route_lines(net, r)).collect(),
        None => {
            let others: String = routes
                .iter()
                .filter(|r| !is_default(r))
                .map(|r| route_lines(net, r))
                .collect();
            gateway() + &others
        }
    }
}

/// One route in the single-line format: ` ` + code in 8 columns + ` ` + prefix, then
/// `is directly connected, IF` or `[d/m] via A, IF`, each further next hop on its own line with
/// `via` under the first `via` (§2.2; ntc route2/route4).
pub(crate) fn route_lines(net: &Network, r: &Route) -> String {
    let head = format!(" {:<8} {}", route_code(r.proto), r.prefix);
    let ifname = |i: crate::model::IfId| net.interfaces.get(i.idx()).map_or("?".to_string(), |x| x.name.clone());
    if r.blackhole {
        return format!("{head} is directly connected, Null0\n");
    }
    let all_direct = r.nexthops.iter().all(|nh| nh.via.is_none());
    if r.proto == Proto::Connected || all_direct {
        let names: Vec<String> = r.nexthops.iter().map(|nh| ifname(nh.iface)).collect();
        return format!("{head} is directly connected, {}\n", names.join(", "));
    }
    let lead = format!("{head} [{}/{}] ", r.distance, r.metric);
    let mut out = String::new();
    for (k, nh) in r.nexthops.iter().enumerate() {
        let gw = match nh.via {
            Some(v) => format!("via {v}, {}", ifname(nh.iface)),
            None => format!("directly connected, {}", ifname(nh.iface)),
        };
        match k {
            0 => out.push_str(&format!("{lead}{gw}\n")),
            _ => out.push_str(&format!("{:w$}{gw}\n", "", w = lead.len())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::NextHop;
    use crate::model::DeviceKind;
    use crate::views::testnet::*;

    const LEAF3_S1B_ROUTES: &str = "\
Gateway of last resort is not set

 O        10.0.11.0/31 [110/30] via 10.33.99.0, Ethernet1
 O        10.1.11.0/31 [110/30] via 10.33.99.0, Ethernet1
 O        10.2.22.0/31 [110/30] via 10.33.99.0, Ethernet1
 C        10.3.33.0/31 is directly connected, Ethernet2
 C        10.4.44.0/31 is directly connected, Ethernet3
 O        10.11.99.0/31 [110/20] via 10.33.99.0, Ethernet1
 O        10.22.99.0/31 [110/20] via 10.33.99.0, Ethernet1
 C        10.33.99.0/31 is directly connected, Ethernet1
";

    #[test]
    fn show_ip_route_leaf3_s1b_exact() {
        let (lab, d) = leaf3_s1b();
        let out = lab.run(d, "show ip route").unwrap();
        assert_eq!(out, format!("{ROUTE_LEGEND}{LEAF3_S1B_ROUTES}"));
        for cmd in ["sh ip ro", "show ip ro", "SH IP ROUTE", "show ip route vrf default"] {
            assert_eq!(lab.run(d, cmd).unwrap(), out, "{cmd}");
        }
        // C37, C16, C22 whitespace-normalised.
        assert_lines(
            &out,
            "Gateway of last resort is not set\n\
             C 10.4.44.0/31 is directly connected, Ethernet3\n\
             O 10.0.11.0/31 [110/30] via 10.33.99.0, Ethernet1\n\
             O 10.11.99.0/31 [110/20] via 10.33.99.0, Ethernet1",
        );
        // The seed's s1b lookups: no match, no default → the Gateway line only (I14).
        assert_eq!(
            lab.run(d, "show ip ro 10.66.122.194").unwrap(),
            format!("{ROUTE_LEGEND}Gateway of last resort is not set\n\n")
        );
    }

    #[test]
    fn show_ip_route_lookup_and_filters() {
        let (mut lab, d) = leaf3_s1b();
        let et1 = lab.net.iface_by_name(d, "Ethernet1").unwrap();
        let et2 = lab.net.iface_by_name(d, "Ethernet2").unwrap();
        let nh = |a: &str, i| NextHop {
            via: Some(ip(a)),
            iface: i,
        };
        lab.route(
            d,
            eos_route("0.0.0.0/0", Proto::OspfE2, (110, 1), vec![nh("10.33.99.0", et1)]),
        );
        lab.route(
            d,
            eos_route(
                "172.16.0.4/32",
                Proto::OspfIntra,
                (110, 30),
                vec![nh("10.33.99.0", et1), nh("10.3.33.1", et2)],
            ),
        );
        let s = Route {
            blackhole: true,
            unreachable: false,
            nexthops: Default::default(),
            ..eos_route("192.168.0.0/16", Proto::Static, (1, 0), vec![])
        };
        lab.route(d, s);
        // C12: the default route answers `show ip ro 0.0.0.0` as the Gateway block.
        assert_eq!(
            lab.run(d, "show ip ro 0.0.0.0").unwrap(),
            format!("{ROUTE_LEGEND}Gateway of last resort:\n O E2     0.0.0.0/0 [110/1] via 10.33.99.0, Ethernet1\n\n")
        );
        assert_eq!(
            lab.run(d, "show ip route 10.1.11.1").unwrap(),
            format!("{ROUTE_LEGEND} O        10.1.11.0/31 [110/30] via 10.33.99.0, Ethernet1\n")
        );
        let ecmp = lab.run(d, "show ip route 172.16.0.4/32").unwrap();
        assert!(ecmp.ends_with(
            " O        172.16.0.4/32 [110/30] via 10.33.99.0, Ethernet1\n                                 via 10.3.33.1, Ethernet2\n"
        ), "{ecmp}");
        let full = lab.run(d, "show ip route").unwrap();
        assert!(full.contains(" S        192.168.0.0/16 is directly connected, Null0\n"));
        assert!(full.contains(
            "Gateway of last resort:\n O E2     0.0.0.0/0 [110/1] via 10.33.99.0, Ethernet1\n\n O        10.0.11.0/31"
        ));
        // Protocol filters: legend + that protocol's routes, no Gateway block.
        let conn = lab.run(d, "show ip route connected").unwrap();
        assert_eq!(conn.lines().filter(|l| l.starts_with(" C ")).count(), 3);
        assert!(!conn.contains("Gateway"));
        let ospf = lab.run(d, "sh ip ro o").unwrap();
        assert_eq!(
            ospf.strip_prefix(ROUTE_LEGEND)
                .unwrap()
                .lines()
                .filter(|l| l.contains("via"))
                .count(),
            8
        );
        assert_eq!(lab.run(d, "show ip route bgp").unwrap(), ROUTE_LEGEND);
        assert_eq!(lab.err(d, "show ip route s"), "% Ambiguous command");
        assert!(lab.err(d, "show ip route summary").contains("not modelled"));
        assert_eq!(lab.err(d, "show ip route foo"), "% Invalid input");
    }

    #[test]
    fn bgp_routes_c61_c75() {
        let mut lab = Lab::default();
        let d = lab.device("Leaf-1", DeviceKind::Eos);
        let et1 = lab.iface(d, "Ethernet1", Some("10.11.99.1/31"));
        let et2 = lab.iface(d, "Ethernet2", Some("10.0.11.0/31"));
        let et3 = lab.iface(d, "Ethernet3", Some("10.1.11.0/31"));
        lab.route(
            d,
            eos_route("10.0.11.0/31", Proto::Connected, (0, 0), vec![hop(None, et2)]),
        );
        let bgp = |p: &str, gw: &str, i| eos_route(p, Proto::BgpExternal, (200, 0), vec![hop(Some(gw), i)]);
        lab.route(d, bgp("10.66.111.0/24", "10.0.11.1", et2));
        lab.route(d, bgp("10.66.95.0/24", "10.1.11.1", et3));
        lab.route(d, bgp("10.96.0.0/12", "10.0.11.1", et2));
        let ibgp = eos_route(
            "10.9.0.0/16",
            Proto::BgpInternal,
            (200, 0),
            vec![hop(Some("10.11.99.0"), et1)],
        );
        lab.route(d, ibgp);
        // C61: the lookup prints the one route.
        assert_eq!(
            lab.run(d, "show ip ro 10.66.111.0").unwrap(),
            format!("{ROUTE_LEGEND} B E      10.66.111.0/24 [200/0] via 10.0.11.1, Ethernet2\n")
        );
        // C75: `show ip ro bgp | inc /24`.
        let out = lab.run(d, "show ip ro bgp | inc /24").unwrap();
        assert_eq!(
            out,
            " B E      10.66.95.0/24 [200/0] via 10.1.11.1, Ethernet3\n B E      10.66.111.0/24 [200/0] via 10.0.11.1, Ethernet2\n"
        );
        let all = lab.run(d, "show ip route bgp").unwrap();
        let body = all.strip_prefix(ROUTE_LEGEND).unwrap();
        assert_eq!(body.lines().count(), 4);
        assert!(body.contains(" B I      10.9.0.0/16 [200/0] via 10.11.99.0, Ethernet1\n"));
        assert!(!body.contains(" C "));
    }

    #[test]
    fn spine_s0_ospf_routes_c05() {
        let (mut lab, d) = spine1_s0();
        let ifs: Vec<_> = lab.net.device(d).ifaces.clone();
        for (p, peer, i) in [
            ("10.0.11.0/31", "10.11.99.1", ifs[0]),
            ("10.1.11.0/31", "10.11.99.1", ifs[0]),
            ("10.2.22.0/31", "10.22.99.1", ifs[1]),
            ("10.3.33.0/31", "10.33.99.1", ifs[2]),
        ] {
            lab.route(d, eos_route(p, Proto::OspfIntra, (110, 20), vec![hop(Some(peer), i)]));
        }
        let out = lab.run(d, "show ip ro ospf").unwrap();
        let body = out.strip_prefix(ROUTE_LEGEND).unwrap();
        assert_eq!(body.lines().count(), 4);
        assert_lines(
            body,
            "O 10.0.11.0/31 [110/20] via 10.11.99.1, Ethernet1\n\
             O 10.3.33.0/31 [110/20] via 10.33.99.1, Ethernet3",
        );
    }
}
