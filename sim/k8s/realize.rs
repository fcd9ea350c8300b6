//! The cluster made into network: what the CNI, felix and confd put on each node (Flannel's
//! part: `flannel_realize`).
//!
//! - a started pod is a network namespace (a device named like the pod) with `eth0` holding
//!   its /32, `169.254.1.1 dev eth0 scope link` and `default via 169.254.1.1 dev eth0`; the
//!   host side is a `cali…` veth with proxy ARP and felix's `<pod ip> dev cali… scope link`
//!   (calico-reference.md §5); when the pod is deleted or runs on another node, the CNI's DEL
//!   deletes the veth (`delete_veth`);
//! - a node with an IPIP pool gets `tunl0` (MTU 1480 on a 1500 host) holding its tunnel
//!   address as a /32;
//! - a node with a VXLAN pool and a VTEP gets `vxlan.calico` (MTU 1450) holding its VXLAN
//!   tunnel address as a /32, with the other nodes' VTEPs as its FDB, and felix's VXLAN routes
//!   (`calico::vxlan`): blackholes for its blocks, other nodes' blocks through the tunnel or,
//!   CrossSubnet within the subnet, natively;
//! - felix's natOutgoing MASQUERADE rule (`Calico::nat_outgoing`) on every node;
//! - each node runs the BIRD configuration confd renders from the datastore (`bird.cfg`,
//!   `bird_aggr.cfg`, `bird_ipam.cfg`), through the same parser and BGP engine as a
//!   hand-written one; BIRD reconfigures only when the rendered text changes, and runs only
//!   while calico-node does.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cluster::{Cluster, PodPhase};
use super::names::veth_name;
use crate::calico::install::{tunnel_mtu, Calico};
use crate::calico::ipam::TunnelKind;
use crate::calico::vxlan::{self, FelixRoute, Vtep};
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::input::bird::apply_bird;
use crate::model::{
    AddrConfig, Device, DeviceId, DeviceKind, IfId, L2Domain, L2Id, Network, RouteOrigin, StaticRoute, Tunnel,
    VendorProfile, Vxlan, VxlanRemote,
};

/// The MTU of the hosts' NICs (felix derives the pod MTU from it).
pub(super) const HOST_MTU: u32 = 1500;
/// The pod's gateway: never configured anywhere, answered by the host's proxy ARP.
const POD_GATEWAY: Ipv4Addr = Ipv4Addr::new(169, 254, 1, 1);

/// Bring the network in line with `net.cluster`. Returns BIRD's warnings on the rendered
/// configurations (none expected: they are confd's own output).
pub fn realize(net: &mut Network) -> Result<Vec<Diagnostic>, InputError> {
    let Some(mut cluster) = net.cluster.take() else {
        return Ok(Vec::new());
    };
    super::services::program_kube_proxy(net, &cluster);
    super::flannel_realize::realize(net, &mut cluster);
    let result = realize_cluster(net, &mut cluster);
    net.cluster = Some(cluster);
    result
}

fn realize_cluster(net: &mut Network, cluster: &mut Cluster) -> Result<Vec<Diagnostic>, InputError> {
    let Some(calico) = cluster.calico.as_ref() else {
        return Ok(Vec::new());
    };
    let pod_mtu = calico.pod_mtu(HOST_MTU);
    let ipip = calico.encap_enabled(TunnelKind::Ipip);
    let vxlan = calico.encap_enabled(TunnelKind::Vxlan);
    let nodes: Vec<(String, DeviceId)> = cluster
        .nodes
        .iter()
        .filter(|n| calico.is_started(&n.name))
        .map(|n| (n.name.clone(), n.device))
        .collect();
    // Where calico-node is not running, neither is its BIRD (felix's routes and the tunnel
    // device stay in the kernel).
    for n in cluster.nodes.iter().filter(|n| !calico.is_started(&n.name)) {
        let d = &mut net.devices[n.device.idx()];
        d.bird = None;
        d.bgp = None;
    }
    for (node, dev) in &nodes {
        let tunnel_addr = calico.datastore.nodes.get(node).and_then(|n| n.ipv4_ipip_tunnel_addr);
        if ipip {
            let tunl0 = ensure_iface(net, *dev, "tunl0");
            let t = &mut net.interfaces[tunl0.idx()];
            t.tunnel = Some(Tunnel::Ipip);
            t.mtu = tunnel_mtu(TunnelKind::Ipip, HOST_MTU);
            t.admin_up = true;
            t.addr = tunnel_addr.map_or(AddrConfig::None, |a| AddrConfig::Static(Ipv4Net::from(a)));
        } else {
            // No IPIP pool: felix's IPIP manager does not run, and nothing configures tunl0.
            unconfigure(net, *dev, "tunl0");
        }
        net.devices[dev.idx()].masquerade = calico.nat_outgoing();
        // felix owns every route through a cali* device (RemoveExternalRoutes) and every route
        // it programmed; it reprograms them below.
        net.devices[dev.idx()]
            .statics
            .retain(|s| !s.origin.is_felix() && !s.dev.as_deref().is_some_and(|d| d.starts_with("cali")));
        let parent = match calico.vtep(node).filter(|_| vxlan) {
            Some(local) => vxlan_device(net, calico, *dev, &local),
            // felix's VXLAN manager needs the pool and the node's VTEP (`configureVXLANDevice`);
            // without a pool it deletes the device (fabsim leaves it down and unaddressed).
            None => {
                unconfigure(net, *dev, vxlan::DEVICE);
                None
            }
        };
        if vxlan {
            felix_vxlan_routes(net, calico, *dev, node, parent);
        }
    }
    let running: Vec<(String, String, String, Ipv4Addr, String)> = cluster
        .pods
        .iter()
        .filter(|p| p.phase == PodPhase::Running && !p.host_network)
        .filter_map(|p| {
            Some((
                p.namespace.clone(),
                p.name.clone(),
                p.node.clone()?,
                p.ip?,
                p.image.clone(),
            ))
        })
        .collect();
    let k_nodes = &cluster.nodes;
    release_gone_pods(net, &mut cluster.netns, |key| {
        running
            .iter()
            .find(|(ns, name, ..)| (ns, name) == (&key.0, &key.1))
            .and_then(|(_, _, node, ..)| k_nodes.iter().find(|n| &n.name == node))
            .map(|n| n.device)
    });
    for (ns, name, node, ip, image) in running {
        let Some(host_dev) = cluster.node(&node).map(|n| n.device) else {
            continue;
        };
        let key = (ns.clone(), name.clone());
        let netns = match cluster.netns.get(&key) {
            Some(n) => *n,
            None => {
                let n = new_netns(net, &ns, &name, &image, ipip);
                cluster.netns.insert(key.clone(), n);
                n
            }
        };
        let veth = veth_name(&ns, &name);
        let host_if = ensure_iface(net, host_dev, &veth);
        {
            let h = &mut net.interfaces[host_if.idx()];
            h.admin_up = true;
            h.proxy_arp = true;
            h.mtu = pod_mtu;
        }
        let e = &mut net.interfaces[netns.eth0.idx()];
        e.admin_up = true;
        e.mtu = pod_mtu;
        e.addr = AddrConfig::Static(Ipv4Net::from(ip));
        connect(net, netns.eth0, host_if, &format!("{veth}<->{ns}/{name}"));
        if let Some(n) = cluster.netns.get_mut(&key) {
            n.host = Some(host_if);
        }
        net.devices[host_dev.idx()]
            .statics
            .push(felix_route(Ipv4Net::from(ip), None, Some(veth)));
    }
    let mut warnings = Vec::new();
    let Some(calico) = cluster.calico.as_mut() else {
        return Ok(warnings);
    };
    // One confd view for every node: the datastore does not change while they render. Under
    // USE_POD_CIDR it takes the Nodes' podCIDRs for blocks.
    let pod_cidrs: BTreeMap<String, Vec<Ipv4Net>> = cluster
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.pod_cidr.into_iter().collect()))
        .collect();
    let confd = if calico.use_pod_cidr() {
        crate::calico::confd::Renderer::with_pod_cidrs(&calico.datastore, &pod_cidrs)
    } else {
        crate::calico::confd::Renderer::new(&calico.datastore)
    };
    for (node, dev) in nodes {
        let Ok(rendered) = confd.render(&node) else { continue };
        if calico.rendered.get(&node) == Some(&rendered) {
            continue;
        }
        let origin = |file: &str| TextOrigin {
            file: format!("{node}:/etc/calico/confd/config/{file}"),
            line: 1,
            col: 1,
        };
        let includes: BTreeMap<String, (String, TextOrigin)> = rendered
            .includes()
            .iter()
            .map(|(name, text)| (name.to_string(), (text.to_string(), origin(name))))
            .collect();
        warnings.extend(apply_bird(
            net,
            dev,
            &rendered.bird_cfg,
            &origin("bird.cfg"),
            &includes,
        )?);
        calico.rendered.insert(node, rendered);
    }
    Ok(warnings)
}

/// A host whose Node was deleted: calico-node's pod is gone, so its BIRD and felix's routes go,
/// and nothing configures `tunl0` or `vxlan.calico` any more. (`realize` only visits the
/// cluster's nodes, so it would not clean up after one that left.)
pub(super) fn forget_node(net: &mut Network, dev: DeviceId) {
    let d = &mut net.devices[dev.idx()];
    d.bird = None;
    d.bgp = None;
    d.masquerade = None;
    d.kube_proxy = None;
    d.statics
        .retain(|s| !s.origin.is_felix() && !s.dev.as_deref().is_some_and(|d| d.starts_with("cali")));
    unconfigure(net, dev, "tunl0");
    unconfigure(net, dev, vxlan::DEVICE);
}

/// Pods that are gone, or now run on another node (`live_on`: the host a pod runs on now):
/// the CNI's DEL deleted their veth, and a gone pod's `eth0` is down without its address.
pub(super) fn release_gone_pods(
    net: &mut Network,
    netns: &mut BTreeMap<(String, String), Netns>,
    live_on: impl Fn(&(String, String)) -> Option<DeviceId>,
) {
    for (key, n) in netns.iter_mut() {
        let live_on = live_on(key);
        if let Some(host) = n.host.filter(|h| Some(net.iface(*h).device) != live_on) {
            delete_veth(net, n.eth0, host);
            n.host = None;
        }
        if live_on.is_none() {
            net.interfaces[n.eth0.idx()].admin_up = false;
            net.interfaces[n.eth0.idx()].addr = AddrConfig::None;
        }
    }
}

/// A pod's network namespace: its device and its `eth0`, and the host side of its veth.
#[derive(Clone, Copy, Debug)]
pub struct Netns {
    pub device: DeviceId,
    pub eth0: IfId,
    pub host: Option<IfId>,
}

pub(super) fn new_netns(net: &mut Network, ns: &str, name: &str, image: &str, ipip: bool) -> Netns {
    let span = Span::new(format!("pod {ns}/{name}"), 1, 1);
    // A pod is named like itself unless a device already has that name.
    let dev_name = if net.device_by_name(name).is_some() {
        format!("{ns}/{name}")
    } else {
        name.to_string()
    };
    let device = DeviceId(net.devices.len() as u32);
    net.devices.push(Device {
        name: dev_name,
        kind: DeviceKind::Linux,
        hostname: Some(name.to_string()),
        ifaces: Vec::new(),
        boot_ms: 0,
        profile: VendorProfile::linux(),
        statics: Vec::new(),
        ospf: None,
        bgp: None,
        bird: None,
        acls: BTreeMap::new(),
        ip_forward: false,
        masquerade: None,
        kube_proxy: None,
        external: None,
        image: (!image.is_empty()).then(|| image.to_string()),
        kubelet: None,
        span: span.clone(),
    });
    let lo = ensure_iface(net, device, "lo");
    net.interfaces[lo.idx()].addr = AddrConfig::Static(Ipv4Net::new(Ipv4Addr::LOCALHOST, 8).unwrap_or_default());
    net.interfaces[lo.idx()].mtu = 65536;
    if ipip {
        // The host has the ipip module loaded, so every namespace gets a (down) tunl0.
        let t = ensure_iface(net, device, "tunl0");
        net.interfaces[t.idx()].admin_up = false;
        net.interfaces[t.idx()].tunnel = Some(Tunnel::Ipip);
        net.interfaces[t.idx()].mtu = tunnel_mtu(TunnelKind::Ipip, HOST_MTU);
    }
    let eth0 = ensure_iface(net, device, "eth0");
    net.devices[device.idx()].statics = vec![
        pod_route(Ipv4Net::from(POD_GATEWAY), None, &span),
        pod_route(Ipv4Net::default(), Some(POD_GATEWAY), &span),
    ];
    Netns {
        device,
        eth0,
        host: None,
    }
}

/// A route in a pod's namespace through its `eth0` (the CNI's, proto boot).
pub(super) fn pod_route(prefix: Ipv4Net, via: Option<Ipv4Addr>, span: &Span) -> StaticRoute {
    StaticRoute {
        prefix,
        via,
        dev: Some("eth0".into()),
        distance: None,
        metric: 0,
        blackhole: false,
        onlink: false,
        origin: RouteOrigin::Manual,
        span: span.clone(),
    }
}

/// `dev`'s interface `name`, if it exists, down and without an address.
pub(super) fn unconfigure(net: &mut Network, dev: DeviceId, name: &str) {
    if let Some(i) = net.iface_by_name(dev, name) {
        net.interfaces[i.idx()].admin_up = false;
        net.interfaces[i.idx()].addr = AddrConfig::None;
    }
}

/// felix's `vxlan.calico` on `dev` for the node's VTEP `local`: VNI, port, `local` address and
/// parent device (the interface holding the node address), the VTEP MAC, MTU host - 50, the
/// tunnel address as a /32, up, and the ARP/FDB entries of every other VTEP (`SetL2Routes`).
/// Returns the parent's name, if fabsim knows it.
fn vxlan_device(net: &mut Network, calico: &Calico, dev: DeviceId, local: &Vtep) -> Option<String> {
    let parent = vxlan_parent(net, dev, local.node_addr.addr());
    let remotes = calico
        .remote_vteps(&local.node)
        .into_iter()
        .map(|r| VxlanRemote {
            tunnel_addr: r.tunnel_addr,
            mac: r.mac,
            node_addr: r.node_addr.addr(),
        })
        .collect();
    let id = ensure_iface(net, dev, vxlan::DEVICE);
    let ifc = &mut net.interfaces[id.idx()];
    ifc.tunnel = Some(Tunnel::Vxlan(Vxlan {
        vni: vxlan::VNI,
        port: vxlan::PORT,
        local: local.node_addr.addr(),
        parent: parent.clone(),
        mac: local.mac,
        remotes,
    }));
    ifc.mtu = tunnel_mtu(TunnelKind::Vxlan, HOST_MTU);
    ifc.admin_up = true;
    ifc.addr = AddrConfig::Static(Ipv4Net::from(local.tunnel_addr));
    parent
}

/// A VXLAN device's parent on `dev`: the interface holding the node address `local`, if fabsim
/// knows it (a DHCP lease is not an interface's configured address).
pub(super) fn vxlan_parent(net: &Network, dev: DeviceId, local: Ipv4Addr) -> Option<String> {
    net.device(dev)
        .ifaces
        .iter()
        .map(|i| net.iface(*i))
        .find(|i| matches!(i.addr, AddrConfig::Static(a) if a.addr() == local))
        .map(|i| i.name.clone())
}

/// The routes of felix's VXLAN manager on `dev` (`Calico::vxlan_routes`). The no-encap ones go
/// out of the VXLAN device's `parent`; without one known (a node address fabsim sees only as a
/// DHCP lease) they are left to resolve through the connected subnet.
fn felix_vxlan_routes(net: &mut Network, calico: &Calico, dev: DeviceId, node: &str, parent: Option<String>) {
    for r in calico.vxlan_routes(node) {
        let route = match r {
            FelixRoute::Blackhole(block) => StaticRoute {
                blackhole: true,
                origin: RouteOrigin::FelixVxlan,
                ..felix_route(block, None, None)
            },
            FelixRoute::Vxlan { block, gw } => StaticRoute {
                onlink: true,
                ..felix_route(block, Some(gw), Some(vxlan::DEVICE.to_string()))
            },
            FelixRoute::NoEncap { block, gw } => StaticRoute {
                onlink: parent.is_some(),
                origin: RouteOrigin::FelixVxlan,
                ..felix_route(block, Some(gw), parent.clone())
            },
        };
        net.devices[dev.idx()].statics.push(route);
    }
}

/// A route felix programs with its default protocol (boot).
fn felix_route(prefix: Ipv4Net, via: Option<Ipv4Addr>, dev: Option<String>) -> StaticRoute {
    StaticRoute {
        prefix,
        via,
        dev,
        distance: None,
        metric: 0,
        blackhole: false,
        onlink: false,
        origin: RouteOrigin::Felix,
        span: Span::new("felix", 1, 1),
    }
}

/// `dev`'s interface `name`, created (next kernel index) if it does not exist.
pub(super) fn ensure_iface(net: &mut Network, dev: DeviceId, name: &str) -> IfId {
    if let Some(i) = net.iface_by_name(dev, name) {
        return i;
    }
    let ifindex = net.next_ifindex(dev);
    let span = net.device(dev).span.clone();
    let id = net.add_interface(dev, name, true, span);
    net.interfaces[id.idx()].ifindex = ifindex;
    id
}

/// Delete the veth pair `eth0`–`host` as the CNI's DEL does (`ip link del` of the host side
/// takes the peer with it): the host side leaves its node (`ip link` no longer lists it; a
/// later pod gets a new one with the next ifindex, as test-pod1's `eth0@if15` then `@if16`
/// on k-w1 show, seed-lab.md s3b) and the link is uncabled. Ids are dense, so the interface
/// stays in `net.interfaces`, owned by no device's list, and its L2 domain stays, empty.
fn delete_veth(net: &mut Network, eth0: IfId, host: IfId) {
    net.detach_interface(host);
    for end in [eth0, host] {
        leave_segment(net, end);
        let ifc = &mut net.interfaces[end.idx()];
        ifc.admin_up = false;
        ifc.addr = AddrConfig::None;
    }
}

/// `port` off its L2 segment, if it is on one.
pub(super) fn leave_segment(net: &mut Network, port: IfId) {
    if let Some(l2) = net.interfaces[port.idx()].l2.take() {
        net.l2[l2.idx()].members.retain(|m| *m != port);
    }
}

/// Cable `a` to `b` (a veth pair), unless they already are.
fn connect(net: &mut Network, a: IfId, b: IfId, name: &str) {
    if net.iface(a).l2.is_some() && net.iface(a).l2 == net.iface(b).l2 {
        return;
    }
    let l2 = L2Id(net.l2.len() as u32);
    net.l2.push(L2Domain {
        name: name.to_string(),
        members: vec![a, b],
        span: Span::new("cni", 1, 1),
    });
    net.interfaces[a.idx()].l2 = Some(l2);
    net.interfaces[b.idx()].l2 = Some(l2);
}
