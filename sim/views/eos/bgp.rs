//! `show ip bgp summary` and `show ip bgp [PREFIX|ADDR]` in EOS 4.2x's layout
//! (bgp-profiles.md §8.1/§8.2, eos-linux-formats.md §2.6, eos-output-samples/*bgp*, and the
//! seed lab's s4–s6 outputs).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::{incomplete, keyword, unsupported};
use crate::engine::State;
use crate::engine::{
    BgpOrigin, BgpSessionView, BgpState, BgpView, EcmpRole, TableDest, TableRoute, DEFAULT_LOCAL_PREF,
};
use crate::model::{DeviceId, Network};
use crate::views::{hms, origin_char, CommandError};

/// The words EOS accepts after `show ip bgp` (the modelled ones and their real siblings, so
/// that abbreviations stay as ambiguous as on the switch: `s` is `statistics`/`summary`).
const SHOW_IP_BGP: &[&str] = &[
    "community",
    "detail",
    "neighbors",
    "paths",
    "peer-group",
    "regexp",
    "statistics",
    "summary",
    "vrf",
];

/// The 4.2x header of `show ip bgp` with the AIGP column, as §8.2 shows it (the seed's s4
/// lines carry the AIGP `-`); the legend lines are release-dependent.
const TABLE_HEADER: &str = "\
Route status codes: s - suppressed, * - valid, > - active, E - ECMP head, e - ECMP
                    S - Stale, c - Contributing to ECMP, b - backup, L - labeled-unicast
                    % - Pending BGP convergence
Origin codes: i - IGP, e - EGP, ? - incomplete
RPKI Origin Validation codes: V - valid, I - invalid, U - unknown
AS Path Attributes: Or-ID - Originator ID, C-LST - Cluster List, LL Nexthop - Link Local Nexthop

          Network                Next Hop              Metric  AIGP       LocPref Weight  Path
";

/// What EOS answers when no `router bgp` runs. Unverified (no capture); fabsim's wording.
fn bgp_inactive() -> CommandError {
    CommandError::new("% BGP inactive (no router bgp on this device)")
}

pub(super) fn show_ip_bgp(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let mut summary = false;
    let mut target: Option<Ipv4Net> = None;
    let mut exact = false;
    let mut i = 0;
    while let Some(word) = w.get(i) {
        i += 1;
        if let Ok(p) = word.parse::<Ipv4Net>() {
            if target.is_some() || summary {
                return Err(CommandError::new("% Invalid input"));
            }
            (target, exact) = (Some(p.trunc()), true);
            continue;
        }
        if let Ok(a) = word.parse::<Ipv4Addr>() {
            if target.is_some() || summary {
                return Err(CommandError::new("% Invalid input"));
            }
            target = Some(Ipv4Net::from(a));
            continue;
        }
        match keyword(word, SHOW_IP_BGP)? {
            "summary" if target.is_none() && !summary => summary = true,
            "vrf" => {
                let vrf = w.get(i).ok_or_else(incomplete)?;
                i += 1;
                if *vrf != "default" {
                    return Err(CommandError::new(format!("% VRF {vrf} does not exist")));
                }
            }
            "summary" => return Err(CommandError::new("% Invalid input")),
            other => return Err(unsupported(&["show ip bgp", other])),
        }
    }
    let view = st
        .devices
        .get(dev.idx())
        .and_then(|d| d.bgp.as_ref())
        .ok_or_else(bgp_inactive)?;
    if summary {
        return Ok(summary_text(net, dev, view, st.time_ms));
    }
    Ok(table_text(view, target, exact))
}

fn router_line(view: &BgpView) -> String {
    format!(
        "Router identifier {}, local AS number {}\n",
        view.router_id.unwrap_or(Ipv4Addr::UNSPECIFIED),
        view.asn
    )
}

/// EOS Up/Down: `hh:mm:ss` under a day, else days and hours (`79d05h`, `123d12h`; ntc
/// summary2/summary4).
fn up_down(ms: u64) -> String {
    let s = ms / 1000;
    match s < 86_400 {
        true => hms(s),
        false => format!("{}d{:02}h", s / 86_400, s / 3600 % 24),
    }
}

fn state_word(s: &BgpSessionView, admin_down: bool) -> &'static str {
    match s.state {
        BgpState::Established => "Estab",
        BgpState::Idle if admin_down => "Idle(Admin)",
        BgpState::Idle => "Idle",
        BgpState::Connect => "Connect",
        BgpState::Active => "Active",
        BgpState::OpenSent => "OpenSent",
        BgpState::OpenConfirm => "OpenConfirm",
    }
}

/// §2.6 layout (lab s6 / ntc summary3 / summary_vrf2 widths): 2-space indent, Neighbor 17,
/// V 3, AS 13, MsgRcvd right in 7, MsgSent right in 10, InQ/OutQ right in 5, Up/Down right in
/// 9, a blank, State 8, PfxRcd 7, PfxAcc. Rows that are not established have no counts and no
/// trailing blanks (summary_vrf2). A `Description` column (25) comes first when any neighbour
/// has a description (summary3). Rows are sorted by neighbour address.
fn summary_text(net: &Network, dev: DeviceId, view: &BgpView, now: u64) -> String {
    let cfg = net.devices.get(dev.idx()).and_then(|d| d.bgp.as_ref());
    let nbr_cfg = |a: Ipv4Addr| cfg.and_then(|c| c.neighbor(a));
    let with_desc = cfg.is_some_and(|c| c.neighbors.iter().any(|n| n.description.is_some()));
    let mut out = String::from("BGP summary information for VRF default\n");
    out.push_str(&router_line(view));
    out.push_str("Neighbor Status Codes: m - Under maintenance\n");
    let desc_col = |d: &str| match with_desc {
        true => format!("{d:<25}"),
        false => String::new(),
    };
    out.push_str(&format!(
        "  {}Neighbor         V  AS           MsgRcvd   MsgSent  InQ OutQ  Up/Down State   PfxRcd PfxAcc\n",
        desc_col("Description")
    ));
    let mut sessions: Vec<&BgpSessionView> = view.sessions.iter().collect();
    sessions.sort_by_key(|s| s.neighbor);
    for s in sessions {
        let nc = nbr_cfg(s.neighbor);
        let admin_down = cfg.is_some_and(|c| c.shutdown) || nc.is_some_and(|n| n.shutdown);
        let desc = nc.and_then(|n| n.description.as_deref()).unwrap_or("");
        let asn = s.remote_as.map_or(String::from("-"), |a| a.to_string());
        let state = state_word(s, admin_down);
        let counts = match s.state {
            BgpState::Established => format!("{:<7}{}", s.pfx_rcvd, s.pfx_acc),
            _ => String::new(),
        };
        let row = format!(
            "  {}{:<17}4  {:<13}{:>7}{:>10}{:>5}{:>5}{:>9} {:<8}{counts}",
            desc_col(desc),
            s.neighbor.to_string(),
            asn,
            s.msgs_rcvd,
            s.msgs_sent,
            0,
            0,
            up_down(now.saturating_sub(s.since_ms)),
            state,
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// `show ip bgp [P]`: the header, then one line per path. With an argument EOS prints a
/// detail block (`BGP routing table entry for P`, paths, attributes); no capture of it was
/// available, so fabsim prints the table restricted to the matching prefix instead — a
/// documented simplification. A prefix selects that exact prefix; an address selects the
/// longest prefix in the table that contains it.
fn table_text(view: &BgpView, target: Option<Ipv4Net>, exact: bool) -> String {
    let all = view.table.routes();
    let mut routes: Vec<&TableRoute> = all.iter().collect();
    // By prefix (address, then length), the best path first; otherwise the table's order.
    routes.sort_by_key(|r| (r.prefix.network(), r.prefix.prefix_len(), !r.best));
    if let Some(t) = target {
        let chosen = match exact {
            true => Some(t),
            false => routes
                .iter()
                .filter(|r| r.prefix.contains(&t.network()))
                .map(|r| r.prefix)
                .max_by_key(|p| p.prefix_len()),
        };
        routes.retain(|r| Some(r.prefix) == chosen);
    }
    let mut out = String::from("BGP routing table information for VRF default\n");
    out.push_str(&router_line(view));
    out.push_str(TABLE_HEADER);
    for r in routes {
        out.push_str(&path_line(r));
        out.push('\n');
    }
    out
}

/// One path (§8.2): status `* >Ec` in 9 after a blank, Network 23, Next Hop 22, Metric 8,
/// AIGP 11, LocPref 8, Weight 8, Path. Locally originated paths (no peer) show `-` for next
/// hop, metric and local preference.
pub(super) fn path_line(r: &TableRoute) -> String {
    let ecmp = match r.ecmp {
        EcmpRole::None => "",
        EcmpRole::Head => "Ec",
        EcmpRole::Member => "ec",
    };
    let status = format!(
        "{} {}{ecmp}",
        if r.valid { '*' } else { ' ' },
        if r.best { '>' } else { ' ' }
    );
    let attrs = r.attrs.as_deref();
    let local = r.from.is_none();
    let gateway = match &r.dest {
        TableDest::Via(nh) => nh.via,
        _ => None,
    };
    let next_hop = match (local, r.next_hop.or(gateway)) {
        (false, Some(a)) => a.to_string(),
        _ => "-".into(),
    };
    let (metric, locpref) = match local {
        true => ("-".to_string(), "-".to_string()),
        false => (
            attrs.and_then(|a| a.med).unwrap_or(0).to_string(),
            attrs
                .and_then(|a| a.local_pref)
                .unwrap_or(DEFAULT_LOCAL_PREF)
                .to_string(),
        ),
    };
    let mut path: Vec<String> = attrs.map_or(Vec::new(), |a| a.as_path.iter().map(u32::to_string).collect());
    path.push(origin_char(attrs.map_or(BgpOrigin::Igp, |a| a.origin)).to_string());
    format!(
        " {status:<9}{:<23}{next_hop:<22}{metric:<8}{:<11}{locpref:<8}{:<8}{}",
        r.prefix.to_string(),
        "-",
        0,
        path.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::{DevState, NextHop};
    use crate::model::{BgpConfig, BgpFlavor, BgpNeighbor, DeviceKind, IfId};
    use crate::views::testnet::*;

    /// A received path with the given AS path from `nh` (next hop attribute = gateway).
    fn path(prefix: &str, nh: &str, iface: IfId, as_path: &[u32], best: bool) -> TableRoute {
        TableRoute {
            best,
            ..bgp_path(prefix, "bgp", nh, nh, iface, as_path)
        }
    }

    /// Leaf-1 at s4: Et2 to k-master (10.0.11.0/31), the 32 paths of seed-lab.md s4 (L1939-1970).
    fn leaf1_s4() -> (Lab, DeviceId) {
        let mut lab = Lab::default();
        let d = lab.device("Leaf-1", DeviceKind::Eos);
        let _et1 = lab.iface(d, "Ethernet1", Some("10.11.99.1/31"));
        let et2 = lab.iface(d, "Ethernet2", Some("10.0.11.0/31"));
        let mut table = Vec::new();
        for line in S4_PATHS.lines() {
            let t: Vec<&str> = line.split_whitespace().collect();
            let best = t[1] == ">";
            let prefix = if best { t[2] } else { t[1] };
            let asns: Vec<u32> = line
                .split(" 0 - 100 0 ")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            table.push(path(prefix, "10.0.11.1", et2, &asns, best));
        }
        let mut s = bgp_session("10.0.11.1", 65000, 65011, BgpState::Established);
        (s.msgs_rcvd, s.msgs_sent, s.pfx_rcvd, s.pfx_acc) = (135, 550, 32, 32);
        s.since_ms = 0;
        lab.st.time_ms = (3600 + 41 * 60 + 53) * 1000;
        lab.st.devices[d.idx()] = DevState {
            bgp: Some(BgpView {
                asn: 65011,
                router_id: Some(ip("10.11.99.1")),
                sessions: vec![s],
                table: table.into(),
            }),
            ..lab.st.devices[d.idx()].clone()
        };
        (lab, d)
    }

    const S4_PATHS: &str = "\
* > 10.66.52.0/24 10.0.11.1 0 - 100 0 65000 65003 i
* 10.66.52.0/24 10.0.11.1 0 - 100 0 65000 65001 65003 i
* 10.66.52.0/24 10.0.11.1 0 - 100 0 65000 65002 65001 65003 i
* 10.66.52.0/24 10.0.11.1 0 - 100 0 65000 65001 65002 65003 i
* 10.66.52.0/24 10.0.11.1 0 - 100 0 65000 65002 65003 i
* > 10.66.95.0/24 10.0.11.1 0 - 100 0 65000 65001 i
* 10.66.95.0/24 10.0.11.1 0 - 100 0 65000 65003 65001 i
* 10.66.95.0/24 10.0.11.1 0 - 100 0 65000 65002 65001 i
* 10.66.95.0/24 10.0.11.1 0 - 100 0 65000 65003 65002 65001 i
* 10.66.95.0/24 10.0.11.1 0 - 100 0 65000 65002 65003 65001 i
* > 10.66.111.0/24 10.0.11.1 0 - 100 0 65000 i
* > 10.66.217.0/24 10.0.11.1 0 - 100 0 65000 65002 i
* 10.66.217.0/24 10.0.11.1 0 - 100 0 65000 65003 65002 i
* 10.66.217.0/24 10.0.11.1 0 - 100 0 65000 65001 65003 65002 i
* 10.66.217.0/24 10.0.11.1 0 - 100 0 65000 65003 65001 65002 i
* 10.66.217.0/24 10.0.11.1 0 - 100 0 65000 65001 65002 i
* > 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65003 65002 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65003 65001 65002 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65002 65001 65003 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65001 65003 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65001 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65002 65003 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65002 65003 65001 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65002 65001 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65001 65002 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65001 65003 65002 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65002 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65003 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65003 65002 65001 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65001 65002 65003 i
* 10.96.0.0/12 10.0.11.1 0 - 100 0 65000 65003 65001 i";

    #[test]
    fn summary_leaf1_s4_c59_exact() {
        let (lab, d) = leaf1_s4();
        let out = lab.run(d, "show ip bgp summary").unwrap();
        assert_eq!(
            out,
            "BGP summary information for VRF default\n\
             Router identifier 10.11.99.1, local AS number 65011\n\
             Neighbor Status Codes: m - Under maintenance\n  \
             Neighbor         V  AS           MsgRcvd   MsgSent  InQ OutQ  Up/Down State   PfxRcd PfxAcc\n  \
             10.0.11.1        4  65000            135       550    0    0 01:41:53 Estab   32     32\n"
        );
        for cmd in ["sh ip bgp su", "sh ip bg summ", "show ip bgp summary vrf default"] {
            assert_eq!(lab.run(d, cmd).unwrap(), out, "{cmd}");
        }
        // The seed's own command (C59): two header lines containing "Nei" plus the row.
        let inc = lab.run(d, "show ip bgp summary | inc 10.0.11.1|Nei").unwrap();
        assert_lines(
            &inc,
            "Neighbor Status Codes: m - Under maintenance\n\
             Neighbor V AS MsgRcvd MsgSent InQ OutQ Up/Down State PfxRcd PfxAcc\n\
             10.0.11.1 4 65000 135 550 0 0 01:41:53 Estab 32 32",
        );
        assert_eq!(inc.lines().count(), 3);
    }

    #[test]
    fn summary_states_times_and_descriptions() {
        let (mut lab, d) = leaf1_s4();
        let now = 100 * 86_400_000;
        lab.st.time_ms = now;
        let v = lab.st.devices[d.idx()].bgp.as_mut().unwrap();
        v.sessions[0].since_ms = now - (3600 + 41 * 60 + 53) * 1000;
        let mut a = bgp_session("10.1.11.1", 65001, 65011, BgpState::Active);
        a.since_ms = now - (79 * 86_400 + 5 * 3600 + 7) * 1000;
        let mut b = bgp_session("10.0.11.3", 65003, 65011, BgpState::Idle);
        b.since_ms = now - 5000;
        v.sessions.push(a);
        v.sessions.push(b);
        let mut cfg = BgpConfig::new(BgpFlavor::Eos, 65011, Default::default());
        let mut n = BgpNeighbor::new(ip("10.0.11.3"), Default::default());
        n.shutdown = true;
        cfg.neighbors.push(n);
        lab.net.devices[d.idx()].bgp = Some(cfg.clone());
        let out = lab.run(d, "show ip bgp summary").unwrap();
        let rows: Vec<&str> = out.lines().skip(4).collect();
        assert_eq!(
            rows,
            [
                "  10.0.11.1        4  65000            135       550    0    0 01:41:53 Estab   32     32",
                "  10.0.11.3        4  65003              0         0    0    0 00:00:05 Idle(Admin)",
                "  10.1.11.1        4  65001              0         0    0    0   79d05h Active",
            ]
        );
        cfg.neighbors[0].description = Some("RTR3".into());
        lab.net.devices[d.idx()].bgp = Some(cfg);
        let out = lab.run(d, "show ip bgp summary").unwrap();
        assert!(out.contains(
            "\n  Description              Neighbor         V  AS           MsgRcvd   MsgSent  InQ OutQ  Up/Down State   PfxRcd PfxAcc\n"
        ));
        assert!(out.contains("\n  RTR3                     10.0.11.3        4  65003 "));
        assert!(out.contains("\n                           10.0.11.1        4  65000 "));
        assert_eq!(up_down(86_399_999), "23:59:59");
        assert_eq!(up_down(123 * 86_400_000 + 12 * 3_600_000), "123d12h");
    }

    #[test]
    fn table_leaf1_s4_c60() {
        let (lab, d) = leaf1_s4();
        let out = lab.run(d, "show ip bgp").unwrap();
        assert!(out.starts_with(
            "BGP routing table information for VRF default\nRouter identifier 10.11.99.1, local AS number 65011\n"
        ));
        let body = out.split_once("Weight  Path\n").unwrap().1;
        // The multiset of the seed's 32 lines (whitespace-insensitive; I6).
        let mut got: Vec<String> = body.lines().map(squash).collect();
        let mut want: Vec<String> = S4_PATHS.lines().map(squash).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want);
        // Exact padding of a best and a non-best line, and best first within its prefix.
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(
            lines[0],
            " * >      10.66.52.0/24          10.0.11.1             0       -          100     0       65000 65003 i"
        );
        assert_eq!(
            lines[1],
            " *        10.66.52.0/24          10.0.11.1             0       -          100     0       65000 65001 65003 i"
        );
        assert!(lines[16].starts_with(" * >      10.96.0.0/12 "), "{}", lines[16]);
    }

    #[test]
    fn table_prefix_address_ecmp_local() {
        let (mut lab, d) = leaf1_s4();
        let et2 = lab.net.iface_by_name(d, "Ethernet2").unwrap();
        let v = lab.st.devices[d.idx()].bgp.as_mut().unwrap();
        let mut local = path("10.1.0.0/32", "10.0.11.1", et2, &[], true);
        local.from = None;
        local.dest = TableDest::Device(NextHop { via: None, iface: et2 });
        let mut head = path("10.1.0.3/32", "10.2.2.0", et2, &[65000, 65003], true);
        head.ecmp = EcmpRole::Head;
        let mut member = path("10.1.0.3/32", "10.2.1.0", et2, &[65000, 65003], false);
        member.ecmp = EcmpRole::Member;
        let mut invalid = path("10.1.0.3/32", "169.254.253.2", et2, &[65000, 65003], false);
        invalid.valid = false;
        v.table.routes_mut().extend([member, invalid, head, local]);
        let out = lab.run(d, "show ip bgp 10.1.0.3/32").unwrap();
        let body = out.split_once("Weight  Path\n").unwrap().1;
        assert_eq!(
            body,
            " * >Ec    10.1.0.3/32            10.2.2.0              0       -          100     0       65000 65003 i\n \
             *  ec    10.1.0.3/32            10.2.1.0              0       -          100     0       65000 65003 i\n          \
             10.1.0.3/32            169.254.253.2         0       -          100     0       65000 65003 i\n"
        );
        let out = lab.run(d, "show ip bgp 10.1.0.0/32").unwrap();
        assert!(out.ends_with(
            " * >      10.1.0.0/32            -                     -       -          -       0       i\n"
        ));
        // An address: its longest match. seed: `show ip bgp 10.66.111.1` → the /24's one path.
        let out = lab.run(d, "show ip bgp 10.66.111.1").unwrap();
        assert_eq!(out.split_once("Weight  Path\n").unwrap().1.lines().count(), 1);
        let out = lab.run(d, "show ip bgp 10.66.111.0/24 | inc 10.66").unwrap();
        assert_lines(&out, "* > 10.66.111.0/24 10.0.11.1 0 - 100 0 65000 i");
        // Nothing matches: the header alone.
        let out = lab.run(d, "show ip bgp 192.0.2.0/24").unwrap();
        assert!(out.ends_with("Weight  Path\n"));
    }

    #[test]
    fn errors() {
        let (lab, d) = leaf1_s4();
        assert_eq!(lab.err(d, "show ip bgp s"), "% Ambiguous command");
        assert!(lab.err(d, "show ip bgp neighbors").contains("not modelled"));
        assert_eq!(lab.err(d, "show ip bgp foo"), "% Invalid input");
        assert_eq!(lab.err(d, "show ip bgp summary 10.0.0.0/8"), "% Invalid input");
        assert!(lab.err(d, "show ip bgp vrf RED").contains("does not exist"));
        let (lab, leaf3) = leaf3_s1b();
        assert!(lab.err(leaf3, "show ip bgp summary").starts_with("% BGP inactive"));
    }
}
