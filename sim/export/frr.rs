//! `--to frr`: one `frr.conf` per EOS switch (FRR 8.4, integrated configuration) that behaves
//! as fabsim's EOS model does wherever FRR can: every EOS default that differs from FRR's is
//! written out explicitly (OSPF cost 10, E2 metrics, `distance bgp 200 200 200`,
//! `maximum-paths 1`, no eBGP policy requirement, RIB-active advertisement), and what FRR can
//! only approximate is listed in a comment block at the top of each file
//! (`../shared/reference/bgp-profiles.md` is the source of each item).

use std::fmt::Write;
use std::net::Ipv4Addr;

use super::{devices, file_name, kernel_ifname, Lab, Options};
use crate::engine::State;
use crate::model::bgp::{BgpConfig, BgpNeighbor, BgpRedistSource, NextHopSelf};
use crate::model::{Device, DeviceId, DeviceKind, Network, OspfConfig, RedistSource};

/// The EOS behaviours FRR 8.4 can only approximate (bgp-profiles.md §1.4, §2, §3, §4, §6, §7).
const APPROXIMATIONS: &str = "\
! EOS behaviours FRR 8.4 only approximates (bgp-profiles.md):
!  - best path: EOS keeps the first-received path as head of an ECMP group (ecmp-fast); FRR keeps
!    the already-selected path only between eBGP paths, else router id and peer address decide.
!    The installed ECMP set is the same; the path marked best may differ.
!  - advertisement: EOS advertises only best paths active in the RIB (unless advertise-inactive);
!    FRR's `bgp suppress-fib-pending` holds routes back until zebra installed them, which is
!    close but also delays routes that later win the RIB.
!  - AS loops: FRR sends a path back to the eBGP neighbour it came from (dropped there as a loop);
!    EOS does not send it to the source session. Received-prefix counts are unaffected (neither
!    stores looped paths), message counts differ.
!  - ADD-PATH: both receive by default; EOS `additional-paths send any` is written as
!    `addpath-tx-all-paths`, but FRR never sends paths whose next hop it cannot resolve.
!  - ECMP: EOS relaxes the AS-path check to equal length by default (written as multipath-relax);
!    FRR needs different next hops for multipath members, EOS counts paths.
!  - OSPF: EOS costs every interface 10 whatever its speed and redistributes with E2 metric 1
!    (default route) or 10 (written below); SPF and LSA throttling differ (timing only).
!  - timers: EOS connect retry (30 s) is unverified; graceful-restart defaults differ (helper
!    mode on both; FRR also sets the N-bit).
";

pub(super) fn write_all(net: &Network, st: &State, opts: &Options, lab: &mut Lab) {
    for (id, dev) in devices(net) {
        if dev.kind == DeviceKind::Eos {
            lab.add(
                format!("{}/frr.conf", file_name(&dev.name)),
                frr_conf(net, st, id, opts),
            );
        }
    }
}

/// The FRR daemons a switch's configuration needs (zebra always; staticd for `ip route`).
pub fn daemons(dev: &Device) -> Vec<&'static str> {
    let mut out = vec!["zebra", "staticd"];
    if dev.ospf.is_some() {
        out.push("ospfd");
    }
    if dev.bgp.is_some() {
        out.push("bgpd");
    }
    out
}

/// The part of an integrated `frr.conf` that `daemon` reads, for a daemon started with its own
/// `-f` file. Given the whole file, a daemon takes lines of blocks it does not know as lines of
/// the block it is still in: ospfd read the BGP address family's `maximum-paths 1` as its own
/// and installed one OSPF next hop where the fabric has two (the first differential run).
pub fn daemon_conf(integrated: &str, daemon: &str) -> String {
    let mut out = String::new();
    let mut keep = true;
    for line in integrated.lines() {
        // A block is a top-level line with the indented lines under it; comments go with it,
        // and so does the `exit` that closes it (vtysh writes one after each block): a daemon
        // given the `exit` of a block it does not read leaves configuration mode there, and
        // bgpd ignored a hand-written frr.conf's `router bgp` after its interfaces' `exit`s.
        if !line.starts_with(' ') && !line.starts_with('!') && line.trim_end() != "exit" {
            keep = block_is_for(line, daemon);
        }
        if keep || line.starts_with('!') && !line.starts_with("! ") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Does `daemon` read the block that starts with `head`?
fn block_is_for(head: &str, daemon: &str) -> bool {
    let starts = |p: &str| head.starts_with(p);
    if starts("interface ") {
        // zebra holds the addresses, ospfd the interface's OSPF settings.
        matches!(daemon, "zebra" | "ospfd")
    } else if starts("ip route ") {
        daemon == "staticd"
    } else if starts("router ospf") {
        daemon == "ospfd"
    } else if starts("router bgp ") {
        daemon == "bgpd"
    } else if starts("ip prefix-list ") || starts("route-map ") {
        matches!(daemon, "ospfd" | "bgpd")
    } else {
        // frr version/defaults, hostname, service, end: every daemon.
        true
    }
}

/// `frr.conf` for EOS switch `id`.
pub fn frr_conf(net: &Network, st: &State, id: DeviceId, opts: &Options) -> String {
    let dev = net.device(id);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "! {}: fabsim's Arista EOS model as FRR 8.4 configuration (fabsim export)",
        dev.name
    );
    o.push_str(APPROXIMATIONS);
    if opts.fast_timers {
        o.push_str("! Timers shortened for a test lab (OSPF hello 1/dead 4, BGP keepalive 1/hold 3, connect 1).\n");
    }
    // No `exit` lines: an `exit` that closes a block a daemon does not know would leave
    // configuration mode for the rest of the file in that daemon (the netns lab gives each
    // daemon only its own blocks anyway, `daemon_conf`).
    o.push_str("!\nfrr version 8.4\nfrr defaults traditional\n");
    let _ = writeln!(o, "hostname {}", dev.hostname.as_deref().unwrap_or(&dev.name));
    o.push_str("service integrated-vtysh-config\n!\n");
    interfaces(net, id, opts, &mut o);
    statics(net, dev, &mut o);
    if let Some(ospf) = &dev.ospf {
        let rid = st.devices[id.idx()].ospf.as_ref().and_then(|v| v.router_id);
        router_ospf(dev, ospf, rid, opts, &mut o);
    }
    if let Some(bgp) = &dev.bgp {
        let rid = st.devices[id.idx()].bgp.as_ref().and_then(|v| v.router_id);
        router_bgp(net, dev, bgp, rid, opts, &mut o);
    }
    o.push_str("end\n");
    o
}

fn interfaces(net: &Network, id: DeviceId, opts: &Options, o: &mut String) {
    let dev = net.device(id);
    for &ifid in &dev.ifaces {
        let ifc = net.iface(ifid);
        if !ifc.routed {
            continue;
        }
        let _ = writeln!(o, "interface {}", kernel_ifname(net, ifid));
        if dev.ospf.is_some() {
            // EOS: 10 on every interface whatever its bandwidth (FRR derives it from the speed).
            let cost = ifc.ospf.cost.unwrap_or(dev.profile.ospf_cost);
            let _ = writeln!(o, " ip ospf cost {cost}");
            if let Some(p) = ifc.ospf.priority {
                let _ = writeln!(o, " ip ospf priority {p}");
            }
            if ifc.ospf.point_to_point {
                o.push_str(" ip ospf network point-to-point\n");
            }
            if dev.ospf.as_ref().is_some_and(|c| passive(c, &ifc.name)) {
                o.push_str(" ip ospf passive\n");
            }
            if opts.fast_timers {
                o.push_str(" ip ospf hello-interval 1\n ip ospf dead-interval 4\n");
            } else {
                let _ = writeln!(o, " ip ospf hello-interval {}", dev.profile.ospf_hello_ms / 1000);
                let _ = writeln!(o, " ip ospf dead-interval {}", dev.profile.ospf_dead_ms / 1000);
            }
        }
        if !ifc.admin_up {
            o.push_str(" shutdown\n");
        }
        o.push_str("!\n");
    }
}

fn statics(net: &Network, dev: &Device, o: &mut String) {
    for s in &dev.statics {
        let dest = match (s.blackhole, s.via, &s.dev) {
            (true, _, _) => "blackhole".to_string(),
            (false, Some(gw), Some(ifname)) => format!("{gw} {}", kernel_name_on(net, dev, ifname)),
            (false, Some(gw), None) => gw.to_string(),
            (false, None, Some(ifname)) => kernel_name_on(net, dev, ifname),
            (false, None, None) => continue,
        };
        let distance = s.distance.filter(|d| *d != dev.profile.distance_static);
        let _ = match distance {
            Some(d) => writeln!(o, "ip route {} {dest} {d}", s.prefix),
            None => writeln!(o, "ip route {} {dest}", s.prefix),
        };
    }
    if !dev.statics.is_empty() {
        o.push_str("!\n");
    }
}

/// An interface named in the configuration, by its kernel name in the lab.
fn kernel_name_on(net: &Network, dev: &Device, name: &str) -> String {
    dev.ifaces
        .iter()
        .find(|i| net.iface(**i).name.eq_ignore_ascii_case(name))
        .map(|i| kernel_ifname(net, *i))
        .unwrap_or_else(|| name.to_string())
}

/// EOS `passive-interface [default]` with its exceptions, for one interface.
fn passive(ospf: &OspfConfig, ifname: &str) -> bool {
    let listed = ospf.passive_exceptions.iter().any(|n| n.eq_ignore_ascii_case(ifname));
    ospf.passive_default != listed
}

/// The route-map that gives redistributed routes EOS's E2 metrics: 1 for the default route,
/// the profile's metric (10) for the rest (FRR would give 20 to both).
const REDIST_MAP: &str = "FABSIM-EOS-REDIST";

fn router_ospf(dev: &Device, ospf: &OspfConfig, rid: Option<Ipv4Addr>, opts: &Options, o: &mut String) {
    let profile = &dev.profile;
    let needs_map = ospf.redistribute.iter().any(|r| r.metric.is_none());
    if needs_map {
        let _ = writeln!(
            o,
            "ip prefix-list FABSIM-DEFAULT seq 5 permit 0.0.0.0/0\n!\n\
             route-map {REDIST_MAP} permit 10\n match ip address prefix-list FABSIM-DEFAULT\n set metric {}\n!\n\
             route-map {REDIST_MAP} permit 20\n set metric {}\n!",
            profile.ospf_redist_default_metric, profile.ospf_redist_metric
        );
    }
    o.push_str("router ospf\n");
    if let Some(rid) = rid {
        let _ = writeln!(o, " ospf router-id {rid}");
    }
    for n in &ospf.networks {
        let _ = writeln!(o, " network {} area {}", n.prefix, Ipv4Addr::from(n.area));
    }
    for r in &ospf.redistribute {
        let source = match r.source {
            RedistSource::Connected => "connected",
            RedistSource::Static => "static",
            RedistSource::Bgp => "bgp",
        };
        let metric_type = r.metric_type.unwrap_or(profile.ospf_redist_metric_type);
        let _ = match r.metric {
            Some(m) => writeln!(o, " redistribute {source} metric {m} metric-type {metric_type}"),
            None => writeln!(
                o,
                " redistribute {source} metric-type {metric_type} route-map {REDIST_MAP}"
            ),
        };
    }
    let paths = ospf.max_paths.unwrap_or(profile.ospf_max_ecmp as u32);
    let _ = writeln!(o, " maximum-paths {paths}");
    if opts.fast_timers {
        o.push_str(" timers throttle spf 0 50 200\n");
    }
    if ospf.shutdown {
        o.push_str(" ! EOS `shutdown`: FRR 8.4 has no such command; the process is configured but should not run\n");
    }
    o.push_str("!\n");
}

/// EOS keepalive/hold when the configuration says nothing (bgp-profiles.md §7).
const EOS_KEEPALIVE_HOLD: (u32, u32) = (60, 180);
/// EOS connect retry as fabsim's model has it (unverified, FIDELITY.md).
const EOS_CONNECT_RETRY: u32 = 30;

fn router_bgp(net: &Network, dev: &Device, bgp: &BgpConfig, rid: Option<Ipv4Addr>, opts: &Options, o: &mut String) {
    let _ = writeln!(o, "router bgp {}", bgp.asn);
    if let Some(rid) = rid {
        let _ = writeln!(o, " bgp router-id {rid}");
    }
    // EOS accepts and sends eBGP routes without policy; FRR's traditional default does not.
    o.push_str(" no bgp ebgp-requires-policy\n");
    if !bgp.default_ipv4_unicast {
        o.push_str(" no bgp default ipv4-unicast\n");
    }
    if bgp.multipath_relax {
        o.push_str(" bgp bestpath as-path multipath-relax\n");
    }
    if !bgp.advertise_inactive {
        o.push_str(" bgp suppress-fib-pending\n");
    }
    if bgp.shutdown {
        o.push_str(" bgp shutdown\n");
    }
    let (keepalive, hold) = if opts.fast_timers {
        (1, 3)
    } else {
        let hold = bgp.timers.hold.unwrap_or(EOS_KEEPALIVE_HOLD.1);
        (bgp.timers.keepalive.unwrap_or(hold / 3), hold)
    };
    let _ = writeln!(o, " timers bgp {keepalive} {hold}");
    for n in &bgp.neighbors {
        neighbor(net, dev, n, opts, o);
    }
    o.push_str(" !\n address-family ipv4 unicast\n");
    for p in &bgp.networks {
        let _ = writeln!(o, "  network {p}");
    }
    for r in &bgp.redistribute {
        let source = match r.source {
            BgpRedistSource::Connected => "connected",
            BgpRedistSource::Static => "static",
            BgpRedistSource::Ospf => "ospf",
        };
        let _ = writeln!(o, "  redistribute {source}");
    }
    for n in bgp.neighbors.iter().filter(|n| n.remote_as.is_some()) {
        let a = n.address;
        if n.activate != bgp.default_ipv4_unicast {
            let _ = writeln!(o, "  {}neighbor {a} activate", if n.activate { "" } else { "no " });
        }
        // bgpd's plain `next-hop-self` leaves reflected paths alone; BIRD's and EOS's do not.
        match n.next_hop_self {
            NextHopSelf::Off => {}
            NextHopSelf::NotReflected => {
                let _ = writeln!(o, "  neighbor {a} next-hop-self");
            }
            NextHopSelf::All => {
                let _ = writeln!(o, "  neighbor {a} next-hop-self force");
            }
        }
        if n.route_reflector_client {
            let _ = writeln!(o, "  neighbor {a} route-reflector-client");
        }
        if n.add_path_tx {
            let _ = writeln!(o, "  neighbor {a} addpath-tx-all-paths");
        }
        if !n.add_path_rx {
            let _ = writeln!(o, "  neighbor {a} disable-addpath-rx");
        }
    }
    // EOS `maximum-paths` covers eBGP and iBGP and defaults to 1; FRR's default is its build's
    // MULTIPATH_NUM, so both are written.
    let paths = bgp.max_paths.unwrap_or(1);
    let _ = writeln!(o, "  maximum-paths {paths}\n  maximum-paths ibgp {paths}");
    let (e, i, l) = bgp.distance.unwrap_or((
        dev.profile.distance_ebgp,
        dev.profile.distance_ibgp,
        dev.profile.distance_ibgp,
    ));
    let _ = writeln!(o, "  distance bgp {e} {i} {l}");
    o.push_str(" exit-address-family\n!\n");
}

fn neighbor(net: &Network, dev: &Device, n: &BgpNeighbor, opts: &Options, o: &mut String) {
    let a = n.address;
    let Some(remote_as) = n.remote_as else {
        let _ = writeln!(o, " ! neighbor {a}: no remote-as in the EOS configuration, not written");
        return;
    };
    let _ = writeln!(o, " neighbor {a} remote-as {remote_as}");
    if let Some(d) = &n.description {
        let _ = writeln!(o, " neighbor {a} description {d}");
    }
    if let Some(src) = &n.update_source {
        let _ = writeln!(o, " neighbor {a} update-source {}", kernel_name_on(net, dev, src));
    }
    if let Some(ttl) = n.multihop {
        let _ = writeln!(o, " neighbor {a} ebgp-multihop {ttl}");
    }
    if n.shutdown {
        let _ = writeln!(o, " neighbor {a} shutdown");
    }
    if opts.fast_timers {
        let _ = writeln!(o, " neighbor {a} timers connect 1");
    } else {
        if let Some(hold) = n.timers.hold {
            let _ = writeln!(
                o,
                " neighbor {a} timers {} {hold}",
                n.timers.keepalive.unwrap_or(hold / 3)
            );
        }
        let retry = n.timers.connect_retry.unwrap_or(EOS_CONNECT_RETRY);
        let _ = writeln!(o, " neighbor {a} timers connect {retry}");
    }
}
