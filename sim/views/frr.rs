//! FRR 8.4 through `vtysh -c 'CMD' [-c 'CMD'…]` on a Linux host whose BGP speaker is FRR:
//! `show [ip] bgp [vrf default] [ipv4 [unicast]] summary`, `show [ip] bgp [… ipv4 [unicast]]`
//! and `show [ip] bgp [… ipv4 [unicast]] A.B.C.D[/M]`. Layouts from FRR's source at tag
//! `frr-8.4` (`bgpd/bgp_vty.c` `bgp_show_summary`, `bgp_show_summary_afi_safi`,
//! `bgp_peer_description_stripped`, `bgpd/bgp_vty.h` `BGP_SHOW_SUMMARY_HEADER_ALL`,
//! `bgpd/bgpd.c` `peer_uptime`, `bgpd/bgp_route.c` `bgp_show_table`, `route_vty_out`,
//! `route_vty_out_route`, `route_vty_short_status_out`, `bgp_show_route_in_table`,
//! `bgpd/bgp_route.h` `BGP_SHOW_*_HEADER`, `lib/lib_vty.c` `mtype_memstr`, `lib/table.c`
//! `route_node_get`) and bgp-profiles.md §8.6/§8.7. Views format only: every count, state and
//! time comes from `DevState.bgp` (`BgpView`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::eos::keyword;
use super::{bgp_state_name, hms, origin_char, CommandError};
use crate::engine::State;
use crate::engine::{BgpOrigin, BgpSessionView, BgpState, BgpView, EcmpRole, TableRoute};
use crate::model::{BgpConfig, BgpFlavor, DeviceId, Network};

/// `sizeof(struct bgp_dest)` on x86_64 as FRR 8.4 reports it (`RIB entries N, using 184*N
/// bytes`): bgp-profiles.md §8.6 (9 entries, 1656 bytes) and an FRR 8.4 topotest log
/// (1 entry, 184 bytes). Not compiled from the headers.
const BGP_DEST_SIZE: u64 = 184;

/// `sizeof(struct peer)` in FRR 8.4 builds: about 723 KiB (bgp-profiles.md §8.6: 2 peers,
/// 1446 KiB; an FRR 8.4 topotest log: 3 peers, 2169 KiB). The exact byte count depends on the
/// build; 723 KiB exactly reproduces both observations.
const PEER_SIZE: u64 = 723 * 1024;

/// vtysh's top-level (enable node) words that begin like the modelled ones, so that
/// abbreviations are as ambiguous as in vtysh.
const TOP: &[&str] = &["show", "start-shell"];
const SHOW: &[&str] = &[
    "bgp",
    "bfd",
    "debugging",
    "interface",
    "ip",
    "ipv6",
    "memory",
    "route-map",
    "running-config",
    "version",
    "zebra",
];
const SHOW_IP: &[&str] = &["bgp", "route", "ospf", "prefix-list", "protocol", "nht", "fib"];
const SHOW_BGP: &[&str] = &[
    "all",
    "attribute-info",
    "cidr-only",
    "community",
    "community-list",
    "dampening",
    "detail",
    "filter-list",
    "ipv4",
    "ipv6",
    "json",
    "l2vpn",
    "large-community",
    "neighbors",
    "nexthop",
    "paths",
    "peer-group",
    "prefix-list",
    "regexp",
    "route-map",
    "statistics",
    "summary",
    "update-groups",
    "view",
    "vrf",
];
const SAFI: &[&str] = &["flowspec", "labeled-unicast", "multicast", "unicast", "vpn"];

const TABLE_LEGEND: &str = "\
Status codes:  s suppressed, d damped, h history, * valid, > best, = multipath,
               i internal, r RIB-failure, S Stale, R Removed
Nexthop codes: @NNN nexthop's vrf id, < announce-nh-self
Origin codes:  i - IGP, e - EGP, ? - incomplete
RPKI validation codes: V valid, I invalid, N Not found

   Network          Next Hop            Metric LocPrf Weight Path
";

/// `vtysh ARGS…` on a Linux host. Only FRR speakers have it; each `-c` command runs in turn and
/// the outputs are concatenated. A command vtysh rejects ends the run, as vtysh does; what the
/// earlier commands printed comes first in the message.
pub(crate) fn vtysh(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let cfg = net.devices.get(dev.idx()).and_then(|d| d.bgp.as_ref());
    let Some(cfg) = cfg.filter(|c| c.flavor == BgpFlavor::Frr) else {
        return Err(CommandError::new("vtysh: command not found"));
    };
    let mut cmds = Vec::new();
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "-c" | "--command" => {
                let cmd = rest
                    .next()
                    .ok_or_else(|| CommandError::new(format!("vtysh: option requires an argument -- '{}'", &a[1..])))?;
                cmds.push(cmd.as_str());
            }
            _ => match a.strip_prefix("-c").or_else(|| a.strip_prefix("--command=")) {
                Some(cmd) if !cmd.is_empty() => cmds.push(cmd),
                _ => {
                    return Err(CommandError::new(format!(
                        "vtysh: fabsim models only `-c COMMAND`, not {a:?}"
                    )))
                }
            },
        }
    }
    if cmds.is_empty() {
        return Err(CommandError::new(
            "fabsim: interactive vtysh is not modelled; give commands with -c (vtysh -c 'show ip bgp')",
        ));
    }
    let view = st.devices.get(dev.idx()).and_then(|d| d.bgp.as_ref());
    let mut out = String::new();
    for cmd in cmds {
        match command(cfg, view, st.time_ms, cmd) {
            Ok(text) => out.push_str(&text),
            Err(e) => return Err(CommandError::new(format!("{out}{}", e.message))),
        }
    }
    Ok(out)
}

const NO_NEIGHBORS: &str = "% No BGP neighbors found in VRF default\n";

#[derive(Clone, Copy)]
enum Afi {
    Any,
    V4,
    V6,
}

/// What `show [ip] bgp …` asks for.
enum Show {
    Summary,
    Table,
    Route(Ipv4Net, bool),
}

/// One vtysh command line. vtysh's own parse errors are `Err`; what bgpd answers (including
/// its warnings such as `% Network not in table`) is output.
fn command(cfg: &BgpConfig, view: Option<&BgpView>, now: u64, line: &str) -> Result<String, CommandError> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let unknown = || CommandError::new(format!("% Unknown command: {line}"));
    let ambiguous = || CommandError::new(format!("% Ambiguous command: {line}"));
    let incomplete = || CommandError::new(format!("% Command incomplete: {line}"));
    let not_modelled = |what: &[&str]| CommandError::new(format!("fabsim: `{}` is not modelled", what.join(" ")));
    // EOS and vtysh expand words alike; only the messages differ.
    let kw = |word: &str, table: &[&'static str]| {
        keyword(word, table).map_err(|e| match e.message.contains("Ambiguous") {
            true => ambiguous(),
            false => unknown(),
        })
    };
    let Some((first, rest)) = w.split_first() else {
        return Ok(String::new());
    };
    if kw(first, TOP)? != "show" {
        return Err(not_modelled(&["start-shell"]));
    }
    let mut i = 0;
    let next = |i: &mut usize| {
        *i += 1;
        rest.get(*i - 1).copied()
    };
    let mut afi = match kw(next(&mut i).ok_or_else(incomplete)?, SHOW)? {
        "ip" => match kw(next(&mut i).ok_or_else(incomplete)?, SHOW_IP)? {
            "bgp" => Afi::V4,
            other => return Err(not_modelled(&["show ip", other])),
        },
        "bgp" => Afi::Any,
        other => return Err(not_modelled(&["show", other])),
    };
    let mut afi_word = false;
    let mut safi_given = false;
    let mut vrf: Option<&str> = None;
    let mut what = Show::Table;
    while let Some(word) = next(&mut i) {
        if let Ok(p) = word.parse::<Ipv4Net>() {
            what = Show::Route(p, true);
            break;
        }
        if let Ok(a) = word.parse::<Ipv4Addr>() {
            what = Show::Route(Ipv4Net::from(a), false);
            break;
        }
        match kw(word, SHOW_BGP)? {
            "vrf" | "view" if vrf.is_none() && !afi_word => vrf = Some(next(&mut i).ok_or_else(incomplete)?),
            w @ ("ipv4" | "ipv6") if !afi_word => {
                afi_word = true;
                afi = if w == "ipv4" { Afi::V4 } else { Afi::V6 };
                if let Some(s) = rest.get(i).and_then(|s| keyword(s, SAFI).ok()) {
                    i += 1;
                    if s != "unicast" {
                        return Err(not_modelled(&["show bgp", w, s]));
                    }
                    safi_given = true;
                }
            }
            "summary" => {
                what = Show::Summary;
                break;
            }
            "vrf" | "view" | "ipv4" | "ipv6" => return Err(unknown()),
            other => return Err(not_modelled(&["show bgp", other])),
        }
    }
    if let Some(extra) = rest.get(i) {
        return match extra.parse::<Ipv4Addr>().is_ok() || extra.parse::<Ipv4Net>().is_ok() {
            true => Err(unknown()),
            false => Err(not_modelled(&[line])),
        };
    }
    if let Some(v) = vrf.filter(|v| *v != "default") {
        return Ok(match what {
            Show::Summary => "% BGP instance not found\n".into(),
            _ => format!("View/Vrf {v} is unknown\n"),
        });
    }
    let Some(view) = view else {
        return Ok(match what {
            Show::Summary => "% BGP instance not found\n".into(),
            _ => "Default BGP instance not found\n".into(),
        });
    };
    // `show ip bgp` is IPv4; `show bgp` without an AFI is IPv6 for tables (`show_ip_bgp_route`:
    // `afi = AFI_IP6`) and every AFI for summaries (`show_ip_bgp_summary`: `AFI_MAX`). Only
    // IPv4 unicast is modelled, so the other families are empty.
    Ok(match (what, afi) {
        (Show::Summary, Afi::V6) => NO_NEIGHBORS.into(),
        (Show::Summary, _) => summary_text(cfg, view, now, !safi_given),
        (Show::Table, Afi::V4) => table_text(view, None),
        (Show::Table, _) => "No BGP prefixes displayed, 0 exist\n".into(),
        (Show::Route(p, exact), Afi::V4) => route_text(view, p, exact),
        (Show::Route(..), _) => "% Cannot specify IPv4 address or prefix with IPv6 AFI\n".into(),
    })
}

/// `mtype_memstr`: bytes up to 10 KiB, then KiB up to 10 MiB (rounded on bit 9), then MiB.
fn memstr(bytes: u64) -> String {
    let (m, k) = (bytes >> 20, bytes >> 10);
    match bytes {
        0 => "0 bytes".into(),
        1 => "1 byte".into(),
        b if b > 0x7fff_ffff => "> 2GB".into(),
        b if m > 10 => format!("{} MiB", m + u64::from(b & (1 << 19) != 0)),
        b if k > 10 => format!("{} KiB", k + u64::from(b & (1 << 9) != 0)),
        b => format!("{b} bytes"),
    }
}

/// `bgp_table_count`: the nodes of FRR's prefix trie (`lib/table.c`), i.e. every prefix plus a
/// glue node wherever two prefixes branch and neither contains the other. In pre-order those
/// glue nodes are the common prefixes of neighbours.
fn rib_entries(view: &BgpView) -> usize {
    let prefixes: BTreeSet<(u32, u8)> = view
        .table
        .routes()
        .iter()
        .map(|r| (u32::from(r.prefix.network()), r.prefix.prefix_len()))
        .collect();
    let sorted: Vec<(u32, u8)> = prefixes.iter().copied().collect();
    let mut nodes = prefixes;
    for pair in sorted.windows(2) {
        let ((a, la), (b, lb)) = (pair[0], pair[1]);
        let len = la.min(lb).min((a ^ b).leading_zeros() as u8);
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        nodes.insert((a & mask, len));
    }
    nodes.len()
}

/// `peer_uptime`: `never` before the first Established; `hh:mm:ss` under a day, then
/// `1d02h03m`, `01w2d03h`, `01y02w3d`.
fn up_down(s: &BgpSessionView, now: u64) -> String {
    // The engine counts messages only on sessions that reached Established (OPEN/KEEPALIVE
    // each way), so none received = never established.
    if s.state != BgpState::Established && s.msgs_rcvd == 0 {
        return "never".into();
    }
    let t = now.saturating_sub(s.since_ms) / 1000;
    let (day, week, year) = (86_400, 7 * 86_400, 365 * 86_400);
    let (yday, hour, min) = (t % year / day, t / 3600 % 24, t / 60 % 60);
    match t {
        t if t < day => hms(t),
        t if t < week => format!("{yday}d{hour:02}h{min:02}m"),
        t if t < year => format!("{:02}w{}d{hour:02}h", yday / 7, yday % 7),
        t => format!("{:02}y{:02}w{}d", t / year, yday / 7, yday % 7),
    }
}

/// `bgp_peer_description_stripped(desc, 20)`: up to 20 characters, else cut at the last blank
/// before the 20th (a description without one prints empty, as FRR's does).
fn desc_stripped(desc: &str) -> &str {
    const SIZE: usize = 20;
    let b = desc.as_bytes();
    if b.len() < SIZE || !desc.is_char_boundary(SIZE) {
        return desc;
    }
    let mut last_space = 0;
    for (i, c) in b.iter().enumerate().take(SIZE).skip(1) {
        if *c == b' ' && last_space + 1 != i {
            last_space = i;
        }
    }
    &desc[..last_space]
}

/// §8.6. `with_afi_line` when the command named no SAFI (`show ip bgp summary`): FRR loops over
/// the address families and titles each. Rows in neighbour address order (`bgp->peer` is sorted
/// by `peer_cmp`). PfxRcd is FRR's `pcount`, the paths kept after inbound policy (`pfx_acc`);
/// PfxSnt the subgroup's advertised paths (`exported`); TblVer, InQ and OutQ are 0.
fn summary_text(cfg: &BgpConfig, view: &BgpView, now: u64, with_afi_line: bool) -> String {
    if view.sessions.is_empty() {
        return NO_NEIGHBORS.into();
    }
    let mut sessions: Vec<&BgpSessionView> = view.sessions.iter().collect();
    sessions.sort_by_key(|s| s.neighbor);
    let width = sessions
        .iter()
        .map(|s| s.neighbor.to_string().len() + 1)
        .max()
        .unwrap_or(0)
        .max(16);
    let mut out = String::new();
    if with_afi_line {
        out.push_str("\nIPv4 Unicast Summary (VRF default):\n");
    }
    let rid = view.router_id.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let entries = rib_entries(view) as u64;
    let peers = sessions.len() as u64;
    out.push_str(&format!(
        "BGP router identifier {rid}, local AS number {} vrf-id 0\n\
         BGP table version {}\n\
         RIB entries {entries}, using {} of memory\n\
         Peers {peers}, using {} of memory\n\n",
        view.asn,
        view.table.len(),
        memstr(entries * BGP_DEST_SIZE),
        memstr(peers * PEER_SIZE),
    ));
    out.push_str(&format!(
        "{:<width$}V         AS   MsgRcvd   MsgSent   TblVer  InQ OutQ  Up/Down State/PfxRcd   PfxSnt Desc\n",
        "Neighbor"
    ));
    for s in sessions {
        let nc = cfg.neighbor(s.neighbor);
        let admin_down = cfg.shutdown || nc.is_some_and(|n| n.shutdown);
        let state = match s.state {
            BgpState::Established => format!(" {:>12} {:>8}", s.pfx_acc, s.exported),
            _ if admin_down => format!(" Idle (Admin) {:>8}", 0),
            st => format!(" {:>12} {:>8}", bgp_state_name(st), 0),
        };
        let desc = nc.and_then(|n| n.description.as_deref()).map_or("N/A", desc_stripped);
        out.push_str(&format!(
            "{:<width$}4 {:>10} {:>9} {:>9} {:>8} {:>4} {:>4} {:>8}{state} {desc}\n",
            s.neighbor.to_string(),
            s.remote_as.unwrap_or(0),
            s.msgs_rcvd,
            s.msgs_sent,
            0,
            0,
            0,
            up_down(s, now),
        ));
    }
    out.push_str(&format!("\nTotal number of neighbors {peers}\n"));
    out
}

/// Paths by prefix in the trie's pre-order (address, then length); within a prefix the view's
/// order (best first, then by arrival).
fn sorted_paths(view: &BgpView) -> Vec<TableRoute> {
    let mut routes = view.table.routes().into_owned();
    routes.sort_by_key(|r| (r.prefix.network(), r.prefix.prefix_len()));
    routes
}

/// §8.7: `show ip bgp`. The header comes with the first path; an empty table says so instead.
fn table_text(view: &BgpView, only: Option<Ipv4Net>) -> String {
    let routes: Vec<TableRoute> = sorted_paths(view)
        .into_iter()
        .filter(|r| only.is_none_or(|p| p == r.prefix))
        .collect();
    if routes.is_empty() {
        return format!("No BGP prefixes displayed, {} exist\n", view.table.len());
    }
    let mut out = format!(
        "BGP table version is {}, local router ID is {}, vrf id 0\n\
         Default local pref 100, local AS {}\n{TABLE_LEGEND}",
        view.table.len(),
        view.router_id.unwrap_or(Ipv4Addr::UNSPECIFIED),
        view.asn
    );
    let mut prev: Option<Ipv4Net> = None;
    let mut prefixes = 0;
    for r in &routes {
        let first = prev != Some(r.prefix);
        prefixes += usize::from(first);
        out.push_str(&path_line(r, first));
        out.push('\n');
        prev = Some(r.prefix);
    }
    out.push_str(&format!(
        "\nDisplayed  {prefixes} routes and {} total paths\n",
        routes.len()
    ));
    out
}

/// `show ip bgp A.B.C.D[/M]`: `bgp_node_match` picks the longest prefix in the table that
/// contains the argument; with a length it must be that prefix. FRR prints the path detail
/// blocks here (`route_vty_out_detail`); fabsim prints the table lines of that prefix instead
/// (a documented simplification, as in the EOS view: the detail needs per-prefix Adj-RIB-Out
/// and wall-clock update times that the view does not carry).
fn route_text(view: &BgpView, target: Ipv4Net, exact: bool) -> String {
    let chosen = view
        .table
        .routes()
        .iter()
        .map(|r| r.prefix)
        .filter(|p| p.contains(&target))
        .max_by_key(|p| p.prefix_len())
        .filter(|p| !exact || p.prefix_len() == target.prefix_len());
    match chosen {
        Some(p) => table_text(view, Some(p)),
        None => "% Network not in table\n".into(),
    }
}

/// One `route_vty_out` line: status `*`/` ` + `>`/`=`/` ` + `i`/` `, the prefix padded to 17
/// (wrapped onto a new line indented 20 when longer; blank for the prefix's later paths), next
/// hop padded to 16, MED `%10u` (blank when absent), LOCAL_PREF `%7u` (blank when absent: FRR
/// ignores it on eBGP and sets none on local routes), weight `%7u ` (32768 local, else 0), the
/// AS path and a blank when not empty, the origin code. Local routes: next hop 0.0.0.0 and MED
/// 0 (`network`/`redistribute` set the MED from the route's metric, 0 for the routes fabsim
/// originates).
fn path_line(r: &TableRoute, first: bool) -> String {
    let attrs = r.attrs.as_deref();
    let local = r.from.is_none();
    let internal = !local && !r.ebgp;
    let status = format!(
        "{}{}{}",
        if r.valid { '*' } else { ' ' },
        match (r.best, r.ecmp) {
            (true, _) => '>',
            (false, EcmpRole::Head | EcmpRole::Member) => '=',
            (false, EcmpRole::None) => ' ',
        },
        if internal { 'i' } else { ' ' }
    );
    let prefix = match first {
        false => " ".repeat(17),
        true => {
            let p = r.prefix.to_string();
            match p.len() < 17 {
                true => format!("{p:<17}"),
                false => format!("{p}\n{:20}", ""),
            }
        }
    };
    let next_hop = match local {
        true => Ipv4Addr::UNSPECIFIED,
        false => r.next_hop.unwrap_or(Ipv4Addr::UNSPECIFIED),
    };
    let med = match (local, attrs.and_then(|a| a.med)) {
        (_, Some(m)) => format!("{m:>10}"),
        (true, None) => format!("{:>10}", 0),
        (false, None) => " ".repeat(10),
    };
    let locpref = match (internal, attrs.and_then(|a| a.local_pref)) {
        (true, Some(lp)) => format!("{lp:>7}"),
        _ => " ".repeat(7),
    };
    let weight = if local { 32768 } else { 0 };
    let mut path: Vec<String> = attrs.map_or(Vec::new(), |a| a.as_path.iter().map(u32::to_string).collect());
    path.push(origin_char(attrs.map_or(BgpOrigin::Igp, |a| a.origin)).to_string());
    format!(
        "{status}{prefix}{:<16}{med}{locpref}{weight:>7} {}",
        next_hop.to_string(),
        path.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::state::DevState;
    use crate::engine::{PathAttrs, TableDest};
    use crate::model::{BgpNeighbor, DeviceKind};
    use crate::views::testnet::*;

    /// An FRR 8.4 leaf (AS 65011) as a Linux host: three eBGP neighbours (Established with
    /// counts, Active and never up, Idle after an earlier session), one iBGP path, an ECMP pair,
    /// a local route and a prefix too long for its column.
    fn frr_leaf() -> (Lab, DeviceId) {
        let mut lab = Lab::default();
        let d = lab.device("leaf-frr", DeviceKind::Linux);
        let eth1 = lab.iface(d, "eth1", Some("10.0.11.0/31"));
        let mut cfg = BgpConfig::new(BgpFlavor::Frr, 65011, Default::default());
        let mut n = BgpNeighbor::new(ip("10.2.22.1"), Default::default());
        n.description = Some("to k-w2 node".into());
        cfg.neighbors.push(n);
        lab.net.devices[d.idx()].bgp = Some(cfg);
        let now = 10 * 86_400_000;
        lab.st.time_ms = now;
        let mut up = bgp_session("10.0.11.1", 65000, 65011, BgpState::Established);
        (up.msgs_rcvd, up.msgs_sent, up.pfx_rcvd, up.pfx_acc, up.exported) = (135, 550, 4, 3, 5);
        up.since_ms = now - (3600 + 41 * 60 + 53) * 1000;
        let mut active = bgp_session("10.1.11.1", 65001, 65011, BgpState::Active);
        active.since_ms = now - 5000;
        let mut idle = bgp_session("10.2.22.1", 65002, 65011, BgpState::Idle);
        (idle.msgs_rcvd, idle.msgs_sent) = (12, 10);
        idle.since_ms = now - (86_400 + 2 * 3600 + 3 * 60 + 4) * 1000;
        let path = |prefix: &str, nh: &str, as_path: &[u32], best: bool| TableRoute {
            best,
            ..bgp_path(prefix, "bgp", nh, nh, eth1, as_path)
        };
        let mut multi = path("10.66.52.0/24", "10.1.11.1", &[65001, 65003], false);
        multi.ecmp = EcmpRole::Member;
        let mut ibgp = path("10.66.111.0/24", "10.9.9.9", &[], true);
        ibgp.attrs = Some(Arc::new(PathAttrs {
            med: Some(10),
            local_pref: Some(200),
            ..(**ibgp.attrs.as_ref().unwrap()).clone()
        }));
        let mut local = path("10.96.0.0/12", "10.0.11.1", &[], true);
        (local.from, local.dest, local.next_hop) = (None, TableDest::Blackhole, None);
        local.attrs = Some(Arc::new(PathAttrs {
            as_path: Vec::new(),
            origin: BgpOrigin::Igp,
            local_pref: None,
            med: None,
        }));
        let mut invalid = path("192.168.100.128/25", "10.0.11.1", &[65000], false);
        invalid.valid = false;
        let table = vec![
            path("10.66.52.0/24", "10.0.11.1", &[65000, 65003], true),
            multi,
            path("10.66.52.0/24", "10.0.11.1", &[65000, 65002, 65003], false),
            invalid,
            local,
            ibgp,
        ];
        lab.st.devices[d.idx()] = DevState {
            bgp: Some(BgpView {
                asn: 65011,
                router_id: Some(ip("10.11.99.1")),
                sessions: vec![idle, up, active],
                table: table.into(),
            }),
            ..lab.st.devices[d.idx()].clone()
        };
        (lab, d)
    }

    const SUMMARY_BODY: &str = "\
BGP router identifier 10.11.99.1, local AS number 65011 vrf-id 0
BGP table version 6
RIB entries 7, using 1288 bytes of memory
Peers 3, using 2169 KiB of memory

Neighbor        V         AS   MsgRcvd   MsgSent   TblVer  InQ OutQ  Up/Down State/PfxRcd   PfxSnt Desc
10.0.11.1       4      65000       135       550        0    0    0 01:41:53            3        5 N/A
10.1.11.1       4      65001         0         0        0    0    0    never       Active        0 N/A
10.2.22.1       4      65002        12        10        0    0    0 1d02h03m         Idle        0 to k-w2 node

Total number of neighbors 3
";

    #[test]
    fn summary_exact() {
        let (lab, d) = frr_leaf();
        let out = lab.run(d, "vtysh -c 'show ip bgp summary'").unwrap();
        assert_eq!(out, format!("\nIPv4 Unicast Summary (VRF default):\n{SUMMARY_BODY}"));
        // A named SAFI drops the address-family title (`bgp_show_summary_afi_safi`).
        let out = lab.run(d, "vtysh -c 'show bgp ipv4 unicast summary'").unwrap();
        assert_eq!(out, SUMMARY_BODY);
        for cmd in [
            "vtysh -c 'sh ip bgp sum'",
            "vtysh -c \"show bgp summary\"",
            "vtysh -c 'show bgp vrf default ipv4 summary'",
        ] {
            assert_eq!(
                lab.run(d, cmd).unwrap(),
                lab.run(d, "vtysh -c 'show ip bgp summary'").unwrap(),
                "{cmd}"
            );
        }
        assert_eq!(
            lab.run(d, "vtysh -c 'show bgp ipv6 unicast summary'").unwrap(),
            "% No BGP neighbors found in VRF default\n"
        );
        let rows = lab.run(d, "vtysh -c 'show ip bgp summary' | grep Active").unwrap();
        assert_lines(&rows, "10.1.11.1 4 65001 0 0 0 0 0 never Active 0 N/A");
    }

    #[test]
    fn summary_states_widths_and_times() {
        let (mut lab, d) = frr_leaf();
        let cfg = lab.net.devices[d.idx()].bgp.as_mut().unwrap();
        cfg.neighbors[0].shutdown = true;
        cfg.neighbors[0].description = Some("a description longer than twenty".into());
        let v = lab.st.devices[d.idx()].bgp.as_mut().unwrap();
        v.sessions
            .push(bgp_session("192.168.100.100", 4_200_000_000, 65011, BgpState::Connect));
        let out = lab.run(d, "vtysh -c 'show bgp ipv4 unicast summary'").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[5],
            "Neighbor        V         AS   MsgRcvd   MsgSent   TblVer  InQ OutQ  Up/Down State/PfxRcd   PfxSnt Desc"
        );
        assert_eq!(
            lines[8],
            "10.2.22.1       4      65002        12        10        0    0    0 1d02h03m Idle (Admin)        0 a description"
        );
        assert_eq!(
            lines[9],
            "192.168.100.100 4 4200000000         0         0        0    0    0    never      Connect        0 N/A"
        );
        let s = bgp_session("10.0.0.1", 1, 2, BgpState::Established);
        let at = |secs: u64| up_down(&s, secs * 1000);
        assert_eq!(at(86_399), "23:59:59");
        assert_eq!(at(6 * 86_400 + 23 * 3600 + 59 * 60), "6d23h59m");
        assert_eq!(at(17 * 86_400 + 5 * 3600), "02w3d05h");
        assert_eq!(at(400 * 86_400), "01y05w0d");
        assert_eq!(memstr(10 * 1024), "10240 bytes");
        assert_eq!(memstr(11 * 1024 + 512), "12 KiB");
        assert_eq!(memstr(62 * 184), "11 KiB");
        assert_eq!(memstr(0), "0 bytes");
        assert_eq!(desc_stripped("nospacesinthisdescription"), "");
    }

    #[test]
    fn table_exact() {
        let (lab, d) = frr_leaf();
        let out = lab.run(d, "vtysh -c \"show ip bgp\"").unwrap();
        assert_eq!(
            out,
            "BGP table version is 6, local router ID is 10.11.99.1, vrf id 0\n\
             Default local pref 100, local AS 65011\n\
             Status codes:  s suppressed, d damped, h history, * valid, > best, = multipath,\n               \
             i internal, r RIB-failure, S Stale, R Removed\n\
             Nexthop codes: @NNN nexthop's vrf id, < announce-nh-self\n\
             Origin codes:  i - IGP, e - EGP, ? - incomplete\n\
             RPKI validation codes: V valid, I invalid, N Not found\n\
             \n   \
             Network          Next Hop            Metric LocPrf Weight Path\n\
             *> 10.66.52.0/24    10.0.11.1                              0 65000 65003 i\n\
             *=                  10.1.11.1                              0 65001 65003 i\n\
             *                   10.0.11.1                              0 65000 65002 65003 i\n\
             *>i10.66.111.0/24   10.9.9.9                10    200      0 i\n\
             *> 10.96.0.0/12     0.0.0.0                  0         32768 i\n   \
             192.168.100.128/25\n                    \
             10.0.11.1                              0 65000 i\n\
             \n\
             Displayed  4 routes and 6 total paths\n"
        );
        assert_eq!(lab.run(d, "vtysh -c 'show bgp ipv4 unicast'").unwrap(), out);
        // `show bgp` alone is IPv6 in FRR: nothing modelled there.
        assert_eq!(
            lab.run(d, "vtysh -c 'show bgp'").unwrap(),
            "No BGP prefixes displayed, 0 exist\n"
        );
        // Several -c: outputs concatenated in order.
        let both = lab.run(d, "vtysh -c 'show ip bgp' -c 'show ip bgp summary'").unwrap();
        let summary = lab.run(d, "vtysh -c 'show ip bgp summary'").unwrap();
        assert_eq!(both, format!("{out}{summary}"));
    }

    #[test]
    fn prefix_lookup() {
        let (lab, d) = frr_leaf();
        let out = lab.run(d, "vtysh -c 'show ip bgp 10.66.52.0/24'").unwrap();
        assert!(out.ends_with(
            "*> 10.66.52.0/24    10.0.11.1                              0 65000 65003 i\n\
             *=                  10.1.11.1                              0 65001 65003 i\n\
             *                   10.0.11.1                              0 65000 65002 65003 i\n\
             \nDisplayed  1 routes and 3 total paths\n"
        ));
        // An address: the longest prefix that holds it; a prefix must exist with its length.
        assert_eq!(lab.run(d, "vtysh -c 'show ip bgp 10.66.52.7'").unwrap(), out);
        let wide = lab.run(d, "vtysh -c 'show ip bgp 10.100.1.1'").unwrap();
        assert!(wide.contains("\n*> 10.96.0.0/12     0.0.0.0 "), "{wide}");
        assert_eq!(
            lab.run(d, "vtysh -c 'show ip bgp 10.66.0.0/16'").unwrap(),
            "% Network not in table\n"
        );
        assert_eq!(
            lab.run(d, "vtysh -c 'show bgp 10.66.52.0/24'").unwrap(),
            "% Cannot specify IPv4 address or prefix with IPv6 AFI\n"
        );
    }

    #[test]
    fn where_vtysh_is_missing_or_refuses() {
        let (mut lab, d) = frr_leaf();
        assert_eq!(
            lab.err(d, "vtysh -c 'show ip bgp x'"),
            "% Unknown command: show ip bgp x"
        );
        assert_eq!(
            lab.err(d, "vtysh -c 'show ip bgp nei'"),
            "fabsim: `show bgp neighbors` is not modelled"
        );
        assert_eq!(
            lab.err(d, "vtysh -c 'show ip bgp s'"),
            "% Ambiguous command: show ip bgp s"
        );
        assert_eq!(
            lab.err(d, "vtysh -c 'show ip bgp summary 1.2.3.4'"),
            "% Unknown command: show ip bgp summary 1.2.3.4"
        );
        assert_eq!(lab.err(d, "vtysh -c 'show'"), "% Command incomplete: show");
        // An error ends the run; what came before is kept.
        let e = lab.err(d, "vtysh -c 'show bgp' -c 'shw ip bgp'");
        assert_eq!(e, "No BGP prefixes displayed, 0 exist\n% Unknown command: shw ip bgp");
        assert!(lab.err(d, "vtysh").contains("interactive"));
        assert!(lab.err(d, "vtysh -c").contains("requires an argument"));
        assert_eq!(
            lab.run(d, "vtysh -c 'show ip bgp vrf RED summary'").unwrap(),
            "% BGP instance not found\n"
        );
        lab.st.devices[d.idx()].bgp.as_mut().unwrap().table.routes_mut().clear();
        assert_eq!(
            lab.run(d, "vtysh -c 'show ip bgp'").unwrap(),
            "No BGP prefixes displayed, 0 exist\n"
        );
        lab.st.devices[d.idx()].bgp = None;
        assert_eq!(
            lab.run(d, "vtysh -c 'show ip bgp summary'").unwrap(),
            "% BGP instance not found\n"
        );
        // Another flavour, or no BGP at all: no vtysh.
        lab.net.devices[d.idx()].bgp.as_mut().unwrap().flavor = BgpFlavor::Bird;
        assert_eq!(lab.err(d, "vtysh -c 'show ip bgp'"), "vtysh: command not found");
        let (lab, kw1) = kw1_s0c();
        assert_eq!(lab.err(kw1, "vtysh -c 'show ip bgp'"), "vtysh: command not found");
    }
}
