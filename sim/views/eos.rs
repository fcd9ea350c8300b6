//! Arista EOS 4.2x views: `show ip route` (single-line format), `show ip ospf neighbor`,
//! `show ip interface [IF] brief`, `ping`, `traceroute`, with EOS's unique-prefix keyword
//! abbreviation (`sh ip ro`, `sh ip int br`, `sh ip o nei`). Formats: eos-linux-formats.md §1.7,
//! §2 and the captures in eos-output-samples/.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::linux::{fib, parse_host, ping_text, run_pings, run_traceroute, PingStyle};
use super::CommandError;
use crate::engine::state::{NbrRole, NbrState, OspfNeighbor, Proto, Route};
use crate::engine::State;
use crate::model::{DeviceId, Network};

/// Resolve one typed word against the keywords allowed at that point, as the EOS parser does:
/// an exact match wins, else the word must be a prefix of exactly one keyword
/// (case-insensitive). The lists hold the real EOS siblings of the supported keywords, so that
/// `s` stays ambiguous (`show`, `ssh`) while `sh` is `show` (§3 last bullets; the error texts
/// are unverified).
pub(crate) fn keyword(word: &str, choices: &[&'static str]) -> Result<&'static str, CommandError> {
    let w = word.to_ascii_lowercase();
    if let Some(exact) = choices.iter().find(|c| **c == w) {
        return Ok(exact);
    }
    let mut hits = choices.iter().filter(|c| !w.is_empty() && c.starts_with(&w));
    match (hits.next(), hits.next()) {
        (Some(one), None) => Ok(one),
        (Some(_), Some(_)) => Err(CommandError::new("% Ambiguous command")),
        _ => Err(CommandError::new("% Invalid input")),
    }
}

const EXEC: &[&str] = &[
    "bash",
    "clear",
    "configure",
    "copy",
    "dir",
    "disable",
    "enable",
    "exit",
    "ping",
    "reload",
    "show",
    "ssh",
    "telnet",
    "terminal",
    "traceroute",
    "write",
];
const SHOW: &[&str] = &[
    "clock",
    "hostname",
    "interfaces",
    "ip",
    "ipv6",
    "lldp",
    "logging",
    "running-config",
    "version",
    "vlan",
];
const SHOW_IP: &[&str] = &[
    "access-lists",
    "arp",
    "bgp",
    "igmp",
    "interface",
    "mroute",
    "nat",
    "ospf",
    "pim",
    "prefix-list",
    "route",
];
const SHOW_IP_OSPF: &[&str] = &[
    "border-routers",
    "database",
    "interface",
    "lsa-log",
    "neighbor",
    "request-list",
    "retransmission-list",
    "spf-log",
];
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
const PING_OPTS: &[&str] = &["interval", "repeat", "size", "source", "timeout", "vrf"];
/// EOS interface types, for `ethernet 4` / `et4` / `Ethernet4`.
const IF_TYPES: &[&str] = &["ethernet", "loopback", "management", "port-channel", "tunnel", "vlan"];

fn unsupported(words: &[&str]) -> CommandError {
    CommandError::new(format!(
        "% Unsupported command: '{}' is not modelled by fabsim",
        words.join(" ")
    ))
}

fn incomplete() -> CommandError {
    CommandError::new("% Incomplete command")
}

fn invalid() -> CommandError {
    CommandError::new("% Invalid input")
}

/// Run one EOS exec-mode command (no pipes).
pub(crate) fn run(net: &Network, st: &State, dev: DeviceId, line: &str) -> Result<String, CommandError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((first, rest)) = words.split_first() else {
        return Ok(String::new());
    };
    match keyword(first, EXEC)? {
        "show" => show(net, st, dev, rest),
        "ping" => ping(net, st, dev, rest),
        "traceroute" => traceroute(net, st, dev, rest),
        other => Err(unsupported(&[other])),
    }
}

fn show(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let what = keyword(w.first().ok_or_else(incomplete)?, SHOW)?;
    if what != "ip" {
        return Err(unsupported(&["show", what]));
    }
    let sub = keyword(w.get(1).ok_or_else(incomplete)?, SHOW_IP)?;
    let rest = &w[2..];
    match sub {
        "route" => show_ip_route(net, st, dev, rest),
        "interface" => show_ip_interface(net, st, dev, rest),
        "ospf" => match rest.split_first() {
            Some((word, tail)) => match keyword(word, SHOW_IP_OSPF)? {
                "neighbor" if tail.is_empty() => Ok(show_ip_ospf_neighbor(net, st, dev)),
                "neighbor" => Err(unsupported(&["show ip ospf neighbor", &tail.join(" ")])),
                other => Err(unsupported(&["show ip ospf", other])),
            },
            None => Err(unsupported(&["show ip ospf"])),
        },
        other => Err(unsupported(&["show ip", other])),
    }
}

// ---------------------------------------------------------------------------------------------
// show ip route

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

/// `show ip route <protocol>`: which route sources the word selects. BGP routes do not exist
/// in the State yet, so `bgp` selects nothing.
fn protocol_filter(word: &str) -> Option<&'static [Proto]> {
    match word {
        "connected" => Some(&[Proto::Connected]),
        "static" => Some(&[Proto::Static]),
        "ospf" => Some(&[Proto::OspfIntra, Proto::OspfInter, Proto::OspfE1, Proto::OspfE2]),
        "bgp" => Some(&[]),
        _ => None,
    }
}

fn show_ip_route(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
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
fn route_lines(net: &Network, r: &Route) -> String {
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

// ---------------------------------------------------------------------------------------------
// show ip ospf neighbor

fn nbr_state(n: &OspfNeighbor) -> String {
    let role = match n.role {
        NbrRole::Dr => "/DR",
        NbrRole::Bdr => "/BDR",
        NbrRole::DrOther => "/DROTHER",
        NbrRole::None => "",
    };
    match n.state {
        NbrState::Down => "DOWN".into(),
        NbrState::Init => "INIT".into(),
        NbrState::TwoWay => format!("2WAY{role}"),
        NbrState::ExStart => "EXSTART".into(),
        NbrState::Full => format!("FULL{role}"),
    }
}

fn hms(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// §1.7: left-justified columns of 16/9/9/4/23/12/16, Interface last and unpadded. Row order:
/// the captures disagree (ntc `..._neighbor.raw` lists 3.3.3.3 before 2.2.2.2, others list
/// router IDs ascending, one descending), so EOS's order looks like its internal table's;
/// fabsim sorts by router ID, then interface, which reproduces the lab's s0 output.
fn show_ip_ospf_neighbor(net: &Network, st: &State, dev: DeviceId) -> String {
    let Some(ospf) = st.devices.get(dev.idx()).and_then(|d| d.ospf.as_ref()) else {
        return String::new();
    };
    let row = |c: [&str; 8]| {
        format!(
            "{:<16}{:<9}{:<9}{:<4}{:<23}{:<12}{:<16}{}\n",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        )
    };
    let mut nbrs: Vec<&OspfNeighbor> = ospf.neighbors.iter().collect();
    let ifname = |n: &OspfNeighbor| {
        net.interfaces
            .get(n.iface.idx())
            .map_or(String::new(), |i| i.name.clone())
    };
    nbrs.sort_by_key(|n| (n.router_id, natural_key(&ifname(n))));
    let mut out = row([
        "Neighbor ID",
        "Instance",
        "VRF",
        "Pri",
        "State",
        "Dead Time",
        "Address",
        "Interface",
    ]);
    let pid = ospf.process_id.to_string();
    for n in nbrs {
        out.push_str(&row([
            &n.router_id.to_string(),
            &pid,
            "default",
            &n.priority.to_string(),
            &nbr_state(n),
            &hms(n.dead_ms_left),
            &n.address.to_string(),
            &ifname(n),
        ]));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// show ip interface [IF] brief

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Chunk {
    Text(String),
    Num(u64),
}

/// Order `Ethernet2` before `Ethernet10`, and `Ethernet…` before `Loopback…`.
fn natural_key(name: &str) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit();
        let end = rest.find(|x: char| x.is_ascii_digit() != digit).unwrap_or(rest.len());
        let (part, tail) = rest.split_at(end);
        out.push(match digit {
            true => Chunk::Num(part.parse().unwrap_or(u64::MAX)),
            false => Chunk::Text(part.to_string()),
        });
        rest = tail;
    }
    out
}

/// An interface argument: `Ethernet4`, `et4`, `ethernet 4`. Returns the canonical name and the
/// number of words used.
fn parse_interface(w: &[&str]) -> Result<(String, usize), CommandError> {
    let first = w.first().ok_or_else(incomplete)?;
    let split = first.find(|c: char| c.is_ascii_digit()).unwrap_or(first.len());
    let (kind, number) = first.split_at(split);
    let kind = keyword(kind, IF_TYPES).map_err(|_| invalid())?;
    // EOS capitalises each part of the type: `Ethernet`, `Port-Channel`.
    let kind: String = kind
        .split('-')
        .map(|part| part[..1].to_ascii_uppercase() + &part[1..])
        .collect::<Vec<_>>()
        .join("-");
    match (number.is_empty(), w.get(1)) {
        (false, _) => Ok((format!("{kind}{number}"), 1)),
        (true, Some(n)) if n.starts_with(|c: char| c.is_ascii_digit()) => Ok((format!("{kind}{n}"), 2)),
        _ => Err(incomplete()),
    }
}

fn show_ip_interface(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let is_brief = |x: &&str| keyword(x, &["brief"]).is_ok();
    let (only, rest) = match w.first() {
        None => return Err(unsupported(&["show ip interface"])),
        Some(x) if is_brief(x) => (None, &w[1..]),
        Some(_) => {
            let (name, used) = parse_interface(w)?;
            let id = net
                .iface_by_name(dev, &name)
                .ok_or_else(|| CommandError::new("% Interface does not exist"))?;
            match w.get(used) {
                Some(x) if is_brief(x) => (Some(id), &w[used + 1..]),
                Some(_) => return Err(invalid()),
                None => return Err(unsupported(&["show ip interface", &name])),
            }
        }
    };
    if !rest.is_empty() {
        return Err(invalid());
    }
    let mut ifaces: Vec<_> = net
        .devices
        .get(dev.idx())
        .map(|d| d.ifaces.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|i| only.is_none_or(|o| o == *i))
        .filter_map(|i| net.interfaces.get(i.idx()).map(|x| (i, x)))
        .filter(|(_, x)| x.routed)
        .collect();
    ifaces.sort_by_key(|(_, x)| natural_key(&x.name));
    let mut out = format!("{:72}Address\n", "");
    out.push_str(&brief_row(["Interface", "IP Address", "Status", "Protocol", "MTU"]));
    out.truncate(out.len() - 1);
    out.push_str("   Owner\n");
    out.push_str(&format!(
        "{} {} {} {} {} {}\n",
        "-".repeat(14),
        "-".repeat(20),
        "-".repeat(11),
        "-".repeat(13),
        "-".repeat(9),
        "-".repeat(7)
    ));
    for (id, iface) in ifaces {
        let s = st.ifaces.get(id.idx()).cloned().unwrap_or_default();
        let addr = s.addr.map_or("unassigned".to_string(), |a| a.to_string());
        let (status, protocol) = match (iface.admin_up, s.usable()) {
            (false, _) => ("adminDown", "down"),
            (true, true) => ("up", "up"),
            (true, false) => ("down", "down"),
        };
        out.push_str(&brief_row([
            &iface.name,
            &addr,
            status,
            protocol,
            &iface.mtu.to_string(),
        ]));
    }
    Ok(out)
}

/// A `show ip interface brief` row with the lab's column widths (14/20/11/13/9 dashes, §2.5).
/// The MTU ends two columns before its dashes end, as in every capture with the Owner column;
/// the empty Owner leaves no trailing blanks.
fn brief_row(c: [&str; 5]) -> String {
    let row = format!("{:<14} {:<20} {:<11} {:<13} {:>7}", c[0], c[1], c[2], c[3], c[4]);
    format!("{}\n", row.trim_end())
}

// ---------------------------------------------------------------------------------------------
// ping, traceroute (EOS runs the Linux tools, §3)

/// `ping [vrf default] ADDR [repeat N] [size N]`. EOS runs an older iputils: 72 data bytes,
/// `connect: …` without the `ping: ` prefix, and (as captures show `time 40ms` for 5 lost
/// probes and `ipg/ewma` in every multi-probe summary) a 10 ms adaptive interval.
fn ping(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let Some(profile) = net.devices.get(dev.idx()).map(|d| &d.profile) else {
        return Err(invalid());
    };
    let mut count = profile.ping_count;
    let mut size = profile.ping_size;
    let mut dst = None;
    let mut it = w.iter();
    while let Some(word) = it.next() {
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            dst = Some(parse_host("ping", word)?);
            continue;
        }
        let opt = keyword(word, PING_OPTS)?;
        let value = it.next().ok_or_else(incomplete)?;
        match opt {
            "repeat" => {
                count = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(invalid)?
            }
            "size" => {
                size = value
                    .parse()
                    .ok()
                    .filter(|n| (36..=18_024).contains(n))
                    .ok_or_else(invalid)?
            }
            "vrf" if *value == "default" => {}
            "vrf" => return Err(CommandError::new(format!("% VRF {value} does not exist"))),
            other => return Err(unsupported(&["ping", other])),
        }
    }
    let dst = dst.ok_or_else(incomplete)?;
    let style = PingStyle {
        data_bytes: size,
        interval_us: 10_000,
        adaptive: true,
        no_route: "connect: Network is unreachable",
    };
    let probes = run_pings(net, st, dev, dst, count, profile.ttl);
    Ok(ping_text(dst, &style, &probes))
}

/// `traceroute [vrf default] ADDR`: Linux traceroute without `-n`, so each hop shows as
/// `ADDR (ADDR)` (no reverse names).
fn traceroute(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let dst = match w {
        [addr] => parse_host("traceroute", addr)?,
        [vrf, name, addr] if keyword(vrf, &["vrf"]).is_ok() && *name == "default" => parse_host("traceroute", addr)?,
        [] => return Err(incomplete()),
        _ => return Err(invalid()),
    };
    Ok(run_traceroute(net, st, dev, dst, false))
}

#[cfg(test)]
mod tests {
    use super::super::testnet::*;
    use super::*;
    use crate::dataplane::{Probe, ProbeOutcome};
    use crate::engine::state::NextHop;
    use crate::model::DeviceKind;
    use crate::views::run_command;

    fn run(lab: &Lab, dev: DeviceId, cmd: &str) -> Result<String, CommandError> {
        run_command(&lab.net, &lab.st, dev, cmd)
    }

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
        let out = run(&lab, d, "show ip route").unwrap();
        assert_eq!(out, format!("{ROUTE_LEGEND}{LEAF3_S1B_ROUTES}"));
        for cmd in ["sh ip ro", "show ip ro", "SH IP ROUTE", "show ip route vrf default"] {
            assert_eq!(run(&lab, d, cmd).unwrap(), out, "{cmd}");
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
            run(&lab, d, "show ip ro 10.66.122.194").unwrap(),
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
            nexthops: vec![],
            ..eos_route("192.168.0.0/16", Proto::Static, (1, 0), vec![])
        };
        lab.route(d, s);
        // C12: the default route answers `show ip ro 0.0.0.0` as the Gateway block.
        assert_eq!(
            run(&lab, d, "show ip ro 0.0.0.0").unwrap(),
            format!("{ROUTE_LEGEND}Gateway of last resort:\n O E2     0.0.0.0/0 [110/1] via 10.33.99.0, Ethernet1\n\n")
        );
        assert_eq!(
            run(&lab, d, "show ip route 10.1.11.1").unwrap(),
            format!("{ROUTE_LEGEND} O        10.1.11.0/31 [110/30] via 10.33.99.0, Ethernet1\n")
        );
        let ecmp = run(&lab, d, "show ip route 172.16.0.4/32").unwrap();
        assert!(ecmp.ends_with(
            " O        172.16.0.4/32 [110/30] via 10.33.99.0, Ethernet1\n                                 via 10.3.33.1, Ethernet2\n"
        ), "{ecmp}");
        let full = run(&lab, d, "show ip route").unwrap();
        assert!(full.contains(" S        192.168.0.0/16 is directly connected, Null0\n"));
        assert!(full.contains(
            "Gateway of last resort:\n O E2     0.0.0.0/0 [110/1] via 10.33.99.0, Ethernet1\n\n O        10.0.11.0/31"
        ));
        // Protocol filters: legend + that protocol's routes, no Gateway block.
        let conn = run(&lab, d, "show ip route connected").unwrap();
        assert_eq!(conn.lines().filter(|l| l.starts_with(" C ")).count(), 3);
        assert!(!conn.contains("Gateway"));
        let ospf = run(&lab, d, "sh ip ro o").unwrap();
        assert_eq!(
            ospf.strip_prefix(ROUTE_LEGEND)
                .unwrap()
                .lines()
                .filter(|l| l.contains("via"))
                .count(),
            8
        );
        assert_eq!(run(&lab, d, "show ip route bgp").unwrap(), ROUTE_LEGEND);
        assert_eq!(
            run(&lab, d, "show ip route s").unwrap_err().message,
            "% Ambiguous command"
        );
        assert!(run(&lab, d, "show ip route summary")
            .unwrap_err()
            .message
            .contains("not modelled"));
        assert_eq!(
            run(&lab, d, "show ip route foo").unwrap_err().message,
            "% Invalid input"
        );
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
        let out = run(&lab, d, "show ip ro ospf").unwrap();
        let body = out.strip_prefix(ROUTE_LEGEND).unwrap();
        assert_eq!(body.lines().count(), 4);
        assert_lines(
            body,
            "O 10.0.11.0/31 [110/20] via 10.11.99.1, Ethernet1\n\
             O 10.3.33.0/31 [110/20] via 10.33.99.1, Ethernet3",
        );
    }

    #[test]
    fn show_ip_ospf_neighbor_spine_s0_exact() {
        let (lab, d) = spine1_s0();
        let out = run(&lab, d, "show ip ospf neighbor").unwrap();
        assert_eq!(
            out,
            "Neighbor ID     Instance VRF      Pri State                  Dead Time   Address         Interface\n\
             10.11.99.1      1        default  1   FULL/DR                00:00:29    10.11.99.1      Ethernet1\n\
             10.22.99.1      1        default  1   FULL/DR                00:00:30    10.22.99.1      Ethernet2\n\
             10.33.99.1      1        default  1   FULL/DR                00:00:35    10.33.99.1      Ethernet3\n"
        );
        assert_eq!(run(&lab, d, "sh ip ospf nei").unwrap(), out);
        assert_eq!(run(&lab, d, "sh ip o n").unwrap(), out);
        assert_eq!(
            run(&lab, d, "show ip ospf neighbor | inc Ethernet2")
                .unwrap()
                .lines()
                .count(),
            1
        );
        assert_eq!(hms(3_725_999), "01:02:05");
        let mut n = lab.st.devices[d.idx()].ospf.as_ref().unwrap().neighbors[0].clone();
        for (state, role, text) in [
            (NbrState::Init, NbrRole::DrOther, "INIT"),
            (NbrState::TwoWay, NbrRole::DrOther, "2WAY/DROTHER"),
            (NbrState::ExStart, NbrRole::Dr, "EXSTART"),
            (NbrState::Full, NbrRole::Bdr, "FULL/BDR"),
            (NbrState::Full, NbrRole::None, "FULL"),
        ] {
            n.state = state;
            n.role = role;
            assert_eq!(nbr_state(&n), text);
        }
    }

    #[test]
    fn show_ip_interface_brief_spine_s0b() {
        let (mut lab, d) = spine1_s0();
        let et4 = lab.iface(d, "Ethernet4", None);
        lab.st.ifaces[et4.idx()].addr = Some(net("10.0.137.189/24"));
        lab.st.ifaces[et4.idx()].dhcp = true;
        let et5 = lab.iface(d, "Ethernet5", None);
        lab.net.interfaces[et5.idx()].admin_up = false;
        lab.st.ifaces[et5.idx()].up = false;
        let et6 = lab.iface(d, "Ethernet6", None);
        lab.net.interfaces[et6.idx()].routed = false;
        let lo = lab.iface(d, "Loopback0", Some("10.255.0.1/32"));
        lab.net.interfaces[lo.idx()].mtu = 65535;
        let out = run(&lab, d, "show ip interface ethernet 4 brief").unwrap();
        assert_eq!(
            out,
            "                                                                        Address\n\
             Interface      IP Address           Status      Protocol          MTU   Owner\n\
             -------------- -------------------- ----------- ------------- --------- -------\n\
             Ethernet4      10.0.137.189/24      up          up               1500\n"
        );
        for cmd in ["sh ip int et4 br", "show ip int Ethernet4 brief", "sh ip int e 4 b"] {
            assert_eq!(run(&lab, d, cmd).unwrap(), out, "{cmd}");
        }
        assert_lines(
            &out,
            "Interface IP Address Status Protocol MTU Owner\nEthernet4 10.0.137.189/24 up up 1500",
        );
        let all = run(&lab, d, "sh ip int br").unwrap();
        let names: Vec<&str> = all.lines().skip(3).map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "Ethernet1",
                "Ethernet2",
                "Ethernet3",
                "Ethernet4",
                "Ethernet5",
                "Loopback0"
            ]
        );
        assert!(all.contains("Ethernet5      unassigned           adminDown   down             1500\n"));
        assert!(all.contains("Loopback0      10.255.0.1/32        up          up              65535\n"));
        assert_eq!(
            run(&lab, d, "sh ip int et9 br").unwrap_err().message,
            "% Interface does not exist"
        );
        assert_eq!(run(&lab, d, "sh ip i br").unwrap_err().message, "% Ambiguous command");
        assert_eq!(run(&lab, d, "sh ip int br x").unwrap_err().message, "% Invalid input");
    }

    #[test]
    fn invalid_ambiguous_incomplete() {
        let (lab, d) = leaf3_s1b();
        assert_eq!(run(&lab, d, "s ip route").unwrap_err().message, "% Ambiguous command");
        assert_eq!(run(&lab, d, "shw ip route").unwrap_err().message, "% Invalid input");
        assert_eq!(run(&lab, d, "show").unwrap_err().message, "% Incomplete command");
        assert_eq!(run(&lab, d, "show ip").unwrap_err().message, "% Incomplete command");
        assert!(run(&lab, d, "show version")
            .unwrap_err()
            .message
            .contains("not modelled"));
        assert_eq!(run(&lab, d, "").unwrap(), "");
        assert!(natural_key("Ethernet10") > natural_key("Ethernet9"));
    }

    fn probe(outcome: ProbeOutcome, rtt_us: u64) -> Probe {
        Probe {
            outcome,
            rtt_us,
            src: None,
            forward: Vec::new(),
            back: Vec::new(),
            forwarding_loop: None,
        }
    }

    #[test]
    fn eos_ping_format_seed_s0b() {
        // seed-lab.md s0b, C11: Spine-1 → 8.8.8.8, five replies with ttl 99.
        let style = PingStyle {
            data_bytes: 72,
            interval_us: 10_000,
            adaptive: true,
            no_route: "connect: Network is unreachable",
        };
        let rtts = [23_200, 20_600, 20_600, 21_200, 20_700];
        let probes: Vec<Probe> = rtts
            .iter()
            .map(|t| {
                probe(
                    ProbeOutcome::Reply {
                        from: ip("8.8.8.8"),
                        ttl: 99,
                    },
                    *t,
                )
            })
            .collect();
        let out = ping_text(ip("8.8.8.8"), &style, &probes);
        assert!(
            out.starts_with(
                "PING 8.8.8.8 (8.8.8.8) 72(100) bytes of data.\n\
             80 bytes from 8.8.8.8: icmp_seq=1 ttl=99 time=23.2 ms\n\
             80 bytes from 8.8.8.8: icmp_seq=2 ttl=99 time=20.6 ms\n"
            ),
            "{out}"
        );
        assert!(out.contains("5 packets transmitted, 5 received, 0% packet loss, time "));
        assert!(out.contains(", ipg/ewma "));
        // A capture's adaptive schedule (eos-linux-formats evidence: 27 ms for these RTTs).
        let capture = [7_650, 2_387, 2_870, 2_500, 2_440];
        let probes: Vec<Probe> = capture
            .iter()
            .map(|t| {
                probe(
                    ProbeOutcome::Reply {
                        from: ip("10.3.1.1"),
                        ttl: 64,
                    },
                    *t,
                )
            })
            .collect();
        let out = ping_text(ip("10.3.1.1"), &style, &probes);
        assert!(
            out.contains("time 27ms\nrtt min/avg/max/mdev = 2.387/3.569/7.650/2.047 ms, ipg/ewma 6.750/5.537 ms\n"),
            "{out}"
        );
        // Five lost probes: 10 ms apart, the blank last line.
        let lost: Vec<Probe> = (0..5)
            .map(|_| probe(ProbeOutcome::Lost { reason: "x".into() }, 0))
            .collect();
        assert!(ping_text(ip("10.0.0.2"), &style, &lost)
            .ends_with("5 packets transmitted, 0 received, 100% packet loss, time 40ms\n\n"));
        // C09: no route.
        let none = [probe(ProbeOutcome::LocalNoRoute, 0)];
        assert_eq!(
            ping_text(ip("8.8.8.8"), &style, &none),
            "connect: Network is unreachable\n"
        );
    }

    #[test]
    fn eos_ping_and_traceroute_arguments() {
        let mut lab = Lab::default();
        let d = lab.device("Spine-1", DeviceKind::Eos);
        // No interface, no route: EOS prints only the connect error (C09).
        assert_eq!(
            run(&lab, d, "ping 8.8.8.8").unwrap(),
            "connect: Network is unreachable\n"
        );
        assert_eq!(
            run(&lab, d, "ping 8.8.8.8 repeat 2 size 100").unwrap(),
            "connect: Network is unreachable\n"
        );
        assert_eq!(
            run(&lab, d, "ping vrf default 8.8.8.8").unwrap(),
            "connect: Network is unreachable\n"
        );
        assert_eq!(run(&lab, d, "ping").unwrap_err().message, "% Incomplete command");
        assert_eq!(
            run(&lab, d, "ping 8.8.8.8 repeat x").unwrap_err().message,
            "% Invalid input"
        );
        assert!(run(&lab, d, "traceroute 8.8.8.8")
            .unwrap()
            .ends_with("send: Network is unreachable\n"));
        assert_eq!(run(&lab, d, "traceroute").unwrap_err().message, "% Incomplete command");
    }
}
