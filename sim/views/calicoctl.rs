//! `calicoctl` read commands (v3.25): `node status`, `ipam show [--show-blocks]`,
//! `ipam check [--show-all-ips]`, `get ippool|bgpconfig|node [-o wide]`. Formats from
//! calico-reference.md §6 and the seed lab's outputs (seed-lab.md s1).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

use super::clock::wall_clock;
use super::linux::mac_text;
use super::tables::{tablewriter, tabwriter};
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
    let wide = args.windows(2).any(|w| w == ["-o", "wide"]) || has("-owide") || has("--output=wide");
    match args.as_slice() {
        ["ipam", "show", ..] => Ok(ipam_show(calico, has("--show-blocks"))),
        ["ipam", "check", ..] => Ok(ipam_check(cluster, calico, has("--show-all-ips"))),
        ["get", kind, ..] if ["ippool", "ippools", "ipp", "ipps", "pool", "pools"].contains(kind) => {
            Ok(get_ippools(calico, wide))
        }
        ["get", kind, ..] if ["bgpconfig", "bgpconfigs", "bgpconfiguration", "bgpconfigurations"].contains(kind) => {
            Ok(get_bgpconfigs(calico))
        }
        ["get", kind, name, "-o", "yaml"] if ["node", "nodes"].contains(kind) => Ok(node_yaml(cluster, calico, name)),
        ["get", kind, ..] if ["node", "nodes"].contains(kind) => Ok(get_nodes(calico, wide)),
        ["get", kind, ..] if ["bgppeer", "bgppeers", "bgpp", "bgpps", "bp", "bps"].contains(kind) => {
            Ok(get_bgppeers(calico))
        }
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

fn get_ippools(calico: &Calico, wide: bool) -> String {
    let mut rows = vec![if wide {
        [
            "NAME",
            "CIDR",
            "NAT",
            "IPIPMODE",
            "VXLANMODE",
            "DISABLED",
            "DISABLEBGPEXPORT",
            "SELECTOR",
        ]
        .map(String::from)
        .to_vec()
    } else {
        ["NAME", "CIDR", "SELECTOR"].map(String::from).to_vec()
    }];
    for p in calico.datastore.ip_pools.values() {
        rows.push(if wide {
            vec![
                p.name.clone(),
                p.cidr.to_string(),
                p.nat_outgoing.to_string(),
                p.ipip_mode.as_str().into(),
                p.vxlan_mode.as_str().into(),
                p.disabled.to_string(),
                p.disable_bgp_export.to_string(),
                p.node_selector.clone(),
            ]
        } else {
            vec![p.name.clone(), p.cidr.to_string(), p.node_selector.clone()]
        });
    }
    calicoctl_table(&rows)
}

fn get_bgpconfigs(calico: &Calico) -> String {
    let mut rows = vec![["NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"]
        .map(String::from)
        .to_vec()];
    for c in calico.datastore.bgp_configurations.values() {
        rows.push(vec![
            c.name.clone(),
            c.log_severity_screen.clone().unwrap_or_default(),
            c.node_to_node_mesh_enabled.map_or("-".into(), |b| b.to_string()),
            c.as_number.map_or("-".into(), |a| a.to_string()),
        ]);
    }
    calicoctl_table(&rows)
}

/// `calicoctl get node NAME -o yaml`: the v3 Node as calicoctl shows it in the Kubernetes
/// datastore (seed-lab.md s3a): the addresses (Calico's, then the Node's InternalIP), the BGP
/// spec, the VXLAN tunnel address, the orchestrator reference, a pinned VXLAN MAC (felix's
/// derived one is never written back) and the podCIDRs.
fn node_yaml(cluster: &Cluster, calico: &Calico, name: &str) -> String {
    let Some(n) = calico.datastore.nodes.get(name) else {
        return format!(
            "Failed to get resources: resource does not exist: Node({name}) with error: nodes \"{name}\" not found\n"
        );
    };
    let k8s = cluster.node(name);
    let mut out =
        format!("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata:\n  name: {name}\nspec:\n  addresses:\n");
    if let Some(a) = n.ipv4_address {
        out.push_str(&format!("  - address: {a}\n    type: CalicoNodeIP\n"));
    }
    if let Some(k) = k8s {
        out.push_str(&format!("  - address: {}\n    type: InternalIP\n", k.internal_ip));
    }
    out.push_str("  bgp:\n");
    if let Some(asn) = n.as_number {
        out.push_str(&format!("    asNumber: {asn}\n"));
    }
    if let Some(a) = n.ipv4_address {
        out.push_str(&format!("    ipv4Address: {a}\n"));
    }
    if let Some(t) = n.ipv4_ipip_tunnel_addr {
        out.push_str(&format!("    ipv4IPIPTunnelAddr: {t}\n"));
    }
    // calicoctl prints the JSON through YAML, so the spec's keys come in name order.
    if let Some(t) = n.ipv4_vxlan_tunnel_addr {
        out.push_str(&format!("  ipv4VXLANTunnelAddr: {t}\n"));
    }
    out.push_str(&format!("  orchRefs:\n  - nodeName: {name}\n    orchestrator: k8s\n"));
    if let Some(m) = n.vxlan_tunnel_mac {
        out.push_str(&format!("  vxlanTunnelMACAddr: {}\n", mac_text(&m)));
    }
    match k8s.and_then(|k| k.pod_cidr) {
        Some(c) => out.push_str(&format!("status:\n  podCIDRs:\n  - {c}\n")),
        None => out.push_str("status: {}\n"),
    }
    out
}

/// `NAME PEERIP NODE ASN`: NODE is spec.node, else the node selector, else `(global)`
/// (calico-reference.md §6.2).
fn get_bgppeers(calico: &Calico) -> String {
    let mut rows = vec![["NAME", "PEERIP", "NODE", "ASN"].map(String::from).to_vec()];
    for p in calico.datastore.bgp_peers.values() {
        let node = p
            .node
            .clone()
            .or_else(|| p.node_selector.clone())
            .unwrap_or_else(|| "(global)".into());
        rows.push(vec![
            p.name.clone(),
            p.peer_ip.clone().unwrap_or_default(),
            node,
            p.as_number.to_string(),
        ]);
    }
    calicoctl_table(&rows)
}

fn get_nodes(calico: &Calico, wide: bool) -> String {
    let global_as = calico
        .datastore
        .bgp_configurations
        .get("default")
        .and_then(|c| c.as_number)
        .unwrap_or(64512);
    let mut rows = vec![if wide {
        ["NAME", "ASN", "IPV4", "IPV6"].map(String::from).to_vec()
    } else {
        vec!["NAME".to_string()]
    }];
    for n in calico.datastore.nodes.values() {
        rows.push(if wide {
            vec![
                n.name.clone(),
                n.as_number.map_or(format!("({global_as})"), |a| a.to_string()),
                n.ipv4_address.map(|a| a.to_string()).unwrap_or_default(),
                n.ipv6_address.clone().unwrap_or_default(),
            ]
        } else {
            vec![n.name.clone()]
        });
    }
    calicoctl_table(&rows)
}

/// calicoctl's `get` printer: tabwriter where every cell, the last included, ends in a tab
/// (so every column is padded), then a blank line (calico-reference.md §6.2).
fn calicoctl_table(rows: &[Vec<String>]) -> String {
    let padded: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().cloned().chain([String::new()]).collect())
        .collect();
    tabwriter(&padded) + "\n"
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
