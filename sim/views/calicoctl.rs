//! `calicoctl` read commands (v3.25): `node status`, `ipam show [--show-blocks]`,
//! `ipam check [--show-all-ips]`; `get` is `calicoctl_get`. Formats from calico-reference.md §6
//! and the seed lab's outputs (seed-lab.md s1).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

use super::clock::wall_clock;
use super::tables::tablewriter;
use super::CommandError;
use crate::calico::install::Calico;
use crate::calico::ipam::TunnelKind;
use crate::engine::State;
use crate::k8s::Cluster;
use crate::model::{DeviceId, Network};

pub(crate) fn calicoctl(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    if args == ["node", "status"] {
        return super::bird::calico_node_status(net, st, dev);
    }
    let Some((cluster, calico)) = net.cluster.as_deref().and_then(|c| Some((c, c.calico.as_ref()?))) else {
        return Ok("Failed to create Calico API client: no datastore is reachable (Calico is not installed)\n".into());
    };
    let has = |f: &str| args.contains(&f);
    match args.as_slice() {
        ["ipam", "show", ..] => Ok(ipam_show(calico, has("--show-blocks"))),
        ["ipam", "check", ..] => Ok(ipam_check(cluster, calico, has("--show-all-ips"))),
        ["get", rest @ ..] => super::calicoctl_get::get(cluster, calico, rest),
        _ => Err(CommandError::new(format!(
            "calicoctl {}: fabsim's calicoctl reads node status, ipam show|check, get ippool|bgpconfig|bgppeer|node",
            args.join(" ")
        ))),
    }
}

/// Go's `%.5g` of a count, as `ipam show` prints totals (`65536`, `1.6777e+07`).
fn g5(n: f64) -> String {
    if n == 0.0 {
        return "0".into();
    }
    let exp = n.abs().log10().floor() as i32;
    if !(-4..5).contains(&exp) {
        let s = format!("{:.4e}", n);
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (4 - exp).max(0) as usize;
    let s = format!("{:.*}", decimals, n);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `N (P%)` with Go's `%.f` of the percentage.
fn with_pct(n: u128, total: u128) -> String {
    let pct = if total == 0 {
        0.0
    } else {
        n as f64 * 100.0 / total as f64
    };
    format!("{} ({:.0}%)", g5(n as f64), pct)
}

/// The IPAMBlock name of a block (`10-66-122-192-26`): Calico lists blocks in this order.
fn block_name(cidr: &ipnet::IpNet) -> String {
    cidr.to_string().replace(['.', ':', '/'], "-")
}

fn ipam_show(calico: &Calico, show_blocks: bool) -> String {
    let mut rows: Vec<[String; 5]> = Vec::new();
    let blocks: Vec<_> = calico.ipam.iter().flat_map(|a| a.blocks()).collect();
    for pool in calico.datastore.ip_pools.values() {
        let size = 1u128 << (32 - u32::from(pool.cidr.prefix_len()));
        let mut mine: Vec<_> = blocks.iter().filter(|b| pool.cidr.contains(&b.cidr())).collect();
        mine.sort_by_key(|b| block_name(&b.cidr()));
        let used: u128 = mine.iter().map(|b| b.size() - b.free()).sum();
        rows.push([
            "IP Pool".into(),
            pool.cidr.to_string(),
            g5(size as f64),
            with_pct(used, size),
            with_pct(size - used, size),
        ]);
        if show_blocks {
            for b in mine {
                let used = b.size() - b.free();
                rows.push([
                    "Block".into(),
                    b.cidr().to_string(),
                    g5(b.size() as f64),
                    with_pct(used, b.size()),
                    with_pct(b.free(), b.size()),
                ]);
            }
        }
    }
    tablewriter(&["GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE", "IPS FREE"], &rows)
}

/// The WorkloadEndpoint name Calico gives a pod's interface: node, `k8s`, pod, `eth0`, each
/// with its own dashes doubled (`k--w3-k8s-test--pod-eth0`).
fn wep_name(node: &str, pod: &str) -> String {
    format!("{}-k8s-{}-eth0", node.replace('-', "--"), pod.replace('-', "--"))
}

fn ipam_check(cluster: &Cluster, calico: &Calico, show_all: bool) -> String {
    let mut out = String::from("Checking IPAM for inconsistencies...\nLoading all IPAM blocks...\n");
    let mut blocks: Vec<_> = calico.ipam.iter().flat_map(|a| a.blocks()).collect();
    blocks.sort_by_key(|b| block_name(&b.cidr()));
    let _ = writeln!(out, "Found {} IPAM blocks.", blocks.len());
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    let mut allocations: usize = 0;
    for b in &blocks {
        let affinity = b.affinity().map_or(String::new(), |n| format!("host:{n}"));
        if show_all {
            let _ = writeln!(out, " IPAM block {} affinity={affinity}:", b.cidr());
        }
        for (addr, handle) in b.allocations() {
            allocations += 1;
            let node = b.affinity().unwrap_or("");
            *per_node.entry(node.to_string()).or_default() += 1;
            if !show_all {
                continue;
            }
            let extra = match handle.strip_prefix("k8s-pod-network.") {
                Some(cid) => cluster
                    .pods
                    .iter()
                    .find(|p| p.container_id.as_deref() == Some(cid))
                    .map(|p| {
                        let ts = wall_clock(p.created_ms).format("%Y-%m-%d %H:%M:%S%.9f +0000 UTC");
                        format!("namespace={},node={node},pod={},timestamp={ts}", p.namespace, p.name)
                    })
                    .unwrap_or_default(),
                None => TunnelKind::of_handle(handle, node)
                    .map(|k| format!("node={node},type={}", k.attr_type()))
                    .unwrap_or_default(),
            };
            let _ = writeln!(out, "  {addr} allocated; attrs Main:{handle} Extra:{extra}");
        }
    }
    let _ = writeln!(out, "IPAM blocks record {allocations} allocations.");
    out.push_str("Loading all IPAM pools...\n");
    let active: Vec<_> = calico.datastore.ip_pools.values().filter(|p| !p.disabled).collect();
    for p in &active {
        let _ = writeln!(out, "  {}", p.cidr);
    }
    let _ = writeln!(out, "Found {} active IP pools.", active.len());
    out.push_str("Loading all nodes.\n");
    let tunnels: Vec<_> = calico
        .datastore
        .nodes
        .values()
        .flat_map(|n| {
            TunnelKind::ALL
                .into_iter()
                .filter_map(|k| Some((n.name.as_str(), k.addr(n)?)))
        })
        .collect();
    if show_all {
        for (n, a) in &tunnels {
            let _ = writeln!(out, "  {a} belongs to Node({n})");
        }
    }
    let _ = writeln!(out, "Found {} node tunnel IPs.", tunnels.len());
    out.push_str("Loading all workload endpoints.\n");
    let mut weps: Vec<(String, String)> = cluster
        .pods
        .iter()
        .filter_map(|p| {
            let ip = p.ip?;
            let node = p.node.as_deref()?;
            Some((format!("{}/{}", p.namespace, wep_name(node, &p.name)), ip.to_string()))
        })
        .collect();
    weps.sort();
    if show_all {
        for (w, ip) in &weps {
            let _ = writeln!(out, "  {ip} belongs to Workload({w})");
        }
    }
    let _ = writeln!(out, "Found {} workload IPs.", weps.len());
    let in_use = tunnels.len() + weps.len();
    let _ = writeln!(out, "Workloads and nodes are using {in_use} IPs.");
    out.push_str("Loading all handles\nLooking for top (up to 20) nodes by allocations...\n");
    let mut top: Vec<(&String, &usize)> = per_node.iter().collect();
    // Most allocations first; Go's unstable sort orders ties arbitrarily, fabsim by name, reversed.
    top.sort_by(|a, b| b.1.cmp(a.1).then(b.0.cmp(a.0)));
    for (n, c) in top.iter().take(20) {
        let _ = writeln!(out, "  {n} has {c} allocations");
    }
    if let Some((_, most)) = top.first() {
        let median = top.get(top.len() / 2).map_or(0, |(_, c)| **c);
        let _ = writeln!(out, "Node with most allocations has {most}; median is {median}");
    }
    let in_pools = |ip: &str| {
        ip.parse::<IpAddr>()
            .is_ok_and(|a| active.iter().any(|p| p.cidr.contains(&a)))
    };
    let outside = weps.iter().filter(|(_, ip)| !in_pools(ip)).count();
    let leaked = allocations.saturating_sub(in_use);
    out.push_str("Scanning for IPs that are allocated but not actually in use...\n");
    let _ = writeln!(
        out,
        "Found {leaked} IPs that are allocated in IPAM but not actually in use."
    );
    out.push_str("Scanning for IPs that are in use by a workload or node but not allocated in IPAM...\n");
    let _ = writeln!(out, "Found {outside} in-use IPs that are not in active IP pools.");
    out.push_str("Found 0 in-use IPs that are in active IP pools but have no corresponding IPAM allocation.\n");
    out.push_str("Scanning for IPAM handles with no matching IPs...\n");
    let _ = writeln!(
        out,
        "Found 0 handles with no matching IPs (and {allocations} handles with matches)."
    );
    out.push_str("Scanning for IPs with missing handle...\n");
    out.push_str("Found 0 handles mentioned in blocks with no matching handle resource.\n");
    let _ = writeln!(out, "Check complete; found {} problems.", leaked + outside);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn go_g5() {
        assert_eq!(super::g5(65536.0), "65536");
        assert_eq!(super::g5(64.0), "64");
        assert_eq!(super::g5(16777216.0), "1.6777e+07");
        assert_eq!(super::with_pct(4, 64), "4 (6%)");
        assert_eq!(super::with_pct(65528, 65536), "65528 (100%)");
    }

    #[test]
    fn workload_endpoint_names_double_dashes() {
        assert_eq!(super::wep_name("k-w3", "test-pod"), "k--w3-k8s-test--pod-eth0");
    }
}
