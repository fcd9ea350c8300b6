//! Interface status and routing tables: connected, static (EOS `ip route`, netplan, `ip route
//! add`), DHCP, and OSPF routes, merged by administrative distance (EOS) or kept side by side
//! by metric (Linux kernel table).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use smallvec::smallvec;

use super::state::*;
use crate::model::{AddrConfig, Device, DeviceId, DeviceKind, IfId, Network, StaticRoute};

/// Metric networkd gives to routes it installs from a DHCP lease (and to the lease's prefix).
const DHCP_ROUTE_METRIC: u32 = 100;

/// Interfaces without a wire that are up whenever they are enabled.
fn is_virtual(name: &str) -> bool {
    name == "lo" || name.starts_with("Loopback")
}

/// Router ID when none is configured (OSPF and BGP alike): the highest address on an up
/// loopback, else the highest address on any up interface (EOS, Cisco heritage;
/// eos-linux-formats.md §1.3).
pub(crate) fn highest_address(net: &Network, st: &State, d: DeviceId) -> Option<Ipv4Addr> {
    let addrs = |loopbacks: bool| {
        net.device(d)
            .ifaces
            .iter()
            .filter(|i| net.iface(**i).name.starts_with("Loopback") == loopbacks)
            .filter(|i| net.iface(**i).name != "lo")
            .filter(|i| st.ifaces[i.idx()].up)
            .filter_map(|i| st.ifaces[i.idx()].addr.map(|a| a.addr()))
            .max()
    };
    addrs(true).or_else(|| addrs(false))
}

/// Derive every interface's status from power, `shutdown`, switchport mode, carrier and DHCP.
/// `severed` ports have a broken medium (a cut cable, a dead optic): they send and hear
/// nothing, so neither they nor the ports that only they reached have carrier.
pub(super) fn interface_states(net: &Network, st: &State, severed: &BTreeSet<IfId>) -> Vec<IfState> {
    (0..net.interfaces.len() as u32)
        .map(|i| interface_state(net, st, severed, IfId(i)))
        .collect()
}

/// One interface's status (see [`interface_states`]). It depends on its own device's power and
/// configuration and on its L2 peers' power (carrier, the DHCP server): when a device powers on,
/// only its interfaces and their peers can change.
pub(super) fn interface_state(net: &Network, st: &State, severed: &BTreeSet<IfId>, id: IfId) -> IfState {
    let powered = |d: DeviceId| st.devices.get(d.idx()).is_some_and(|s| s.powered);
    let admin_up = |i: IfId| {
        let ifc = net.iface(i);
        powered(ifc.device) && ifc.admin_up
    };
    let physically_up = |i: IfId| admin_up(i) && !severed.contains(&i);
    let ifc = net.iface(id);
    let up = admin_up(id) && ifc.routed;
    // Loopbacks and tunnels have carrier whenever they are up (no wire to lose).
    let line_up = if is_virtual(&ifc.name) || ifc.tunnel.is_some() {
        up
    } else {
        physically_up(id) && net.l2_peers(id).any(physically_up)
    };
    let (addr, dhcp) = match &ifc.addr {
        AddrConfig::None => (None, false),
        AddrConfig::Static(a) => (Some(*a), false),
        AddrConfig::Dhcp if up && line_up => (dhcp_lease(net, st, id), true),
        AddrConfig::Dhcp => (None, true),
    };
    IfState {
        up,
        line_up,
        addr,
        dhcp,
    }
}

/// The lease the DHCP server on this interface's segment holds for it, if the server is up.
fn dhcp_lease(net: &Network, st: &State, ifid: IfId) -> Option<Ipv4Net> {
    let ifc = net.iface(ifid);
    let me = &net.device(ifc.device).name;
    net.l2_peers(ifid).find_map(|peer| {
        let server = net.device(net.iface(peer).device);
        let ext = server.external.as_ref()?;
        let server_up = st.devices.get(net.iface(peer).device.idx()).is_some_and(|s| s.powered);
        if !server_up {
            return None;
        }
        ext.leases
            .iter()
            .find(|l| &l.device == me && l.interface.eq_ignore_ascii_case(&ifc.name))
            .map(|l| l.address)
    })
}

/// Every device's connected, DHCP and static routes (nothing for powered-off devices).
pub(super) fn local_tables(net: &Network, st: &State) -> Vec<Vec<Route>> {
    net.devices
        .iter()
        .enumerate()
        .map(|(i, dev)| {
            if st.devices[i].powered {
                local_routes(net, st, DeviceId(i as u32), dev)
            } else {
                Vec::new()
            }
        })
        .collect()
}

/// A device's forwarding table from its candidate routes: a router keeps the best route per
/// prefix by administrative distance, the Linux kernel keeps every route by metric.
pub(super) fn install(dev: &crate::model::Device, candidates: Vec<Route>) -> Fib {
    let mut fib = Fib::default();
    add(dev, &mut fib, candidates);
    fib
}

/// How a device's table takes its candidates. Each decides prefix by prefix: what a table
/// holds for one prefix follows from that prefix's candidates, in their order, alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rules {
    /// A router: the best route per prefix by administrative distance.
    Router,
    /// The Linux kernel: every route, by (prefix, metric).
    Kernel,
    /// The Linux kernel under FRR's zebra: per prefix, zebra installs only its best distance.
    Zebra,
}

pub(super) fn rules(dev: &Device) -> Rules {
    let zebra = dev
        .bgp
        .as_ref()
        .is_some_and(|b| b.flavor == crate::model::BgpFlavor::Frr);
    match dev.kind {
        DeviceKind::Linux if zebra => Rules::Zebra,
        DeviceKind::Linux => Rules::Kernel,
        DeviceKind::Eos | DeviceKind::External => Rules::Router,
    }
}

/// More candidates for a table built by [`install`], as if they had come after its own.
pub(super) fn add(dev: &crate::model::Device, fib: &mut Fib, candidates: Vec<Route>) {
    match rules(dev) {
        Rules::Zebra => {
            let candidates = zebra_selected(fib, candidates);
            kernel_table(fib, candidates)
        }
        Rules::Kernel => kernel_table(fib, candidates),
        Rules::Router => best_by_distance(fib, candidates),
    }
}

/// Connected, DHCP and static routes of one device (before OSPF).
pub(super) fn local_routes(net: &Network, st: &State, id: DeviceId, dev: &Device) -> Vec<Route> {
    let mut out = Vec::new();
    for &i in &dev.ifaces {
        let s = &st.ifaces[i.idx()];
        let (Some(addr), true) = (s.addr, s.usable()) else {
            continue;
        };
        if is_virtual(&net.iface(i).name) && dev.kind == DeviceKind::Linux {
            continue; // `lo` routes live in the local table, not in `ip route`
        }
        if addr.prefix_len() == 32 && dev.kind == DeviceKind::Linux {
            // Linux adds no prefix route for a /32 (fib_add_ifaddr: `prefix != addr ||
            // prefixlen < 32`): a pod's eth0 and a node's tunl0 have only their local route.
            continue;
        }
        let metric = if s.dhcp && dev.kind == DeviceKind::Linux {
            DHCP_ROUTE_METRIC
        } else {
            0
        };
        out.push(Route {
            prefix: addr.trunc(),
            proto: Proto::Connected,
            distance: dev.profile.distance_connected,
            metric,
            nexthops: smallvec![NextHop { via: None, iface: i }],
            src: Some(addr.addr()),
            blackhole: false,
            unreachable: false,
            linux_proto: Some(LinuxProto::Kernel),
            scope_link: true,
            onlink: false,
        });
        if s.dhcp && dev.kind == DeviceKind::Linux {
            out.extend(dhcp_routes(net, st, i, addr));
        }
    }
    // A gateway resolves through a link-scope route: a connected prefix or, on Linux, a
    // device route installed before it (a pod's `default via 169.254.1.1` goes through
    // `169.254.1.1 dev eth0 scope link`; fib_check_nh).
    let mut on_link = out.clone();
    for sr in &dev.statics {
        if let Some(r) = resolve_static(net, st, id, dev, sr, &on_link) {
            if r.scope_link {
                on_link.push(r.clone());
            }
            out.push(r);
        }
    }
    out
}

/// What networkd installs from a lease: a default via the gateway and an on-link route to it.
fn dhcp_routes(net: &Network, st: &State, ifid: IfId, addr: Ipv4Net) -> Vec<Route> {
    let gw = net.l2_peers(ifid).find_map(|p| {
        let dev = net.device(net.iface(p).device);
        dev.external
            .as_ref()
            .filter(|_| st.ifaces[p.idx()].up)
            .map(|e| e.gateway.addr())
    });
    let Some(gw) = gw else { return Vec::new() };
    let mk = |prefix: Ipv4Net, via: Option<Ipv4Addr>, scope_link: bool| Route {
        prefix,
        proto: Proto::Dhcp,
        distance: 0,
        metric: DHCP_ROUTE_METRIC,
        nexthops: smallvec![NextHop { via, iface: ifid }],
        src: Some(addr.addr()),
        blackhole: false,
        unreachable: false,
        linux_proto: Some(LinuxProto::Dhcp),
        scope_link,
        onlink: false,
    };
    let default = Ipv4Net::new(Ipv4Addr::UNSPECIFIED, 0).unwrap_or_default();
    vec![mk(default, Some(gw), false), mk(Ipv4Net::from(gw), None, true)]
}

/// A static route is installed only while its next hop is on a link-scope route of an up
/// interface (the interface named by `dev`, if given), or is declared `onlink`.
fn resolve_static(
    net: &Network,
    st: &State,
    id: DeviceId,
    dev: &Device,
    sr: &StaticRoute,
    on_link: &[Route],
) -> Option<Route> {
    let linux = dev.kind == DeviceKind::Linux;
    let named_if = match &sr.dev {
        Some(name) => Some(net.iface_by_name(id, name)?),
        None => None,
    };
    let nexthop = if sr.blackhole {
        None
    } else {
        let usable = |i: IfId| st.ifaces[i.idx()].usable();
        match (sr.via, named_if) {
            // `onlink`: the kernel takes the gateway on the interface's word.
            (Some(gw), Some(iface)) if sr.onlink => usable(iface).then_some(NextHop { via: Some(gw), iface }),
            (Some(gw), _) => {
                let c = on_link
                    .iter()
                    .filter(|c| c.prefix.contains(&gw))
                    .find(|c| named_if.is_none_or(|n| c.nexthops[0].iface == n))?;
                Some(NextHop {
                    via: Some(gw),
                    iface: c.nexthops[0].iface,
                })
            }
            // Linux takes a device route (`ip route add P dev IF`) on any up interface, with or
            // without an address (Calico's `10.66.111.1 dev caliXXX scope link` to a pod);
            // EOS wants the interface to be a connected one.
            (None, Some(iface)) if linux => usable(iface).then_some(NextHop { via: None, iface }),
            (None, Some(iface)) => {
                on_link.iter().find(|c| c.nexthops[0].iface == iface)?;
                Some(NextHop { via: None, iface })
            }
            (None, None) => None,
        }
    };
    if nexthop.is_none() && !sr.blackhole {
        return None;
    }
    Some(Route {
        prefix: sr.prefix.trunc(),
        proto: Proto::Static,
        distance: if linux {
            0
        } else {
            sr.distance.unwrap_or(dev.profile.distance_static)
        },
        metric: if linux { sr.metric } else { 0 },
        nexthops: nexthop.into_iter().collect(),
        src: None,
        blackhole: sr.blackhole,
        unreachable: false,
        linux_proto: sr.origin.linux_proto(),
        scope_link: linux && sr.via.is_none() && !sr.blackhole,
        onlink: linux && sr.onlink && sr.via.is_some(),
    })
}

/// FRR's zebra between the routing daemons and the kernel: per prefix only the route with the
/// lowest administrative distance is installed, so a BGP route for a connected subnet stays out
/// of the kernel (FRR marks it `r`, RIB-failure). Routes zebra does not own (connected, the
/// kernel's own) are kept as they are. The table may already hold routes from an earlier
/// batch ([`add`]): they count for the choice, and a zebra route they now lose to goes.
fn zebra_selected(fib: &mut Fib, candidates: Vec<Route>) -> Vec<Route> {
    let zebra_owned = |r: &Route| {
        matches!(
            r.proto,
            Proto::BgpExternal
                | Proto::BgpInternal
                | Proto::OspfIntra
                | Proto::OspfInter
                | Proto::OspfE1
                | Proto::OspfE2
        )
    };
    let mut best: std::collections::BTreeMap<Ipv4Net, u8> = std::collections::BTreeMap::new();
    for r in fib.iter().chain(&candidates) {
        let d = best.entry(r.prefix).or_insert(r.distance);
        *d = (*d).min(r.distance);
    }
    let wins = |r: &Route| !zebra_owned(r) || best.get(&r.prefix).is_none_or(|d| r.distance <= *d);
    fib.retain(wins);
    candidates.into_iter().filter(|r| wins(r)).collect()
}

/// The Linux main table: every route is installed, keyed by (prefix, metric); of candidates
/// with the same key the first one stays.
fn kernel_table(fib: &mut Fib, candidates: Vec<Route>) {
    fib.insert_new(candidates);
}

/// A router's FIB: per prefix, the route with the lowest administrative distance; on a tie the
/// protocol order of `Proto` (connected before static before OSPF) decides. Router tables
/// hold one route per prefix, so the key's metric slot is always 0.
fn best_by_distance(fib: &mut Fib, candidates: Vec<Route>) {
    for r in candidates {
        match fib.get(r.prefix, 0) {
            Some(b) if (b.distance, b.proto) <= (r.distance, r.proto) => {}
            _ => fib.insert_at((r.prefix, 0), r),
        }
    }
}
