//! A Flannel cluster made into network: what flanneld and the bridge plugin leave on each host
//! (`flannel` says why each piece exists and where upstream does it).
//!
//! - `flannel.1`: a VXLAN device (VNI 1, port 8472, MTU 1450 on a 1500 host) holding the lease's
//!   network address as a /32, with the ARP and FDB entries of every other registered node's
//!   VTEP, and a route `LEASE via LEASE-NETWORK dev flannel.1 onlink` per other node. flanneld
//!   programs them while it runs; when it stops they stay in the kernel as it left them.
//! - `cni0`: the bridge, holding the gateway the bridge plugin gave it (`FLANNEL_SUBNET`); each
//!   pod's veth is enslaved to it (fabsim models the bridge, its `veth…` ports and the pods'
//!   `eth0`s as one L2 segment), with `default via GW` and `NETWORK via GW` in the pod;
//! - flanneld's MASQUERADE rules.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cluster::{Cluster, PodPhase};
use super::command::CommandOutcome;
use super::flannel::{Flannel, Flanneld, BRIDGE, VNI, VXLAN_DEVICE, VXLAN_PORT};
use super::names::bridge_veth_name;
use super::realize::{
    ensure_iface, leave_segment, new_netns, pod_route, release_gone_pods, unconfigure, vxlan_parent, HOST_MTU,
};
use crate::calico::install::tunnel_mtu;
use crate::calico::ipam::TunnelKind;
use crate::diag::Span;
use crate::model::{
    AddrConfig, DeviceId, IfId, L2Domain, L2Id, Network, RouteOrigin, StaticRoute, Tunnel, Vxlan, VxlanRemote,
};

/// The MTU of flannel.1, cni0 and the pods' links: VXLAN's on the hosts' NICs.
fn mtu() -> u32 {
    tunnel_mtu(TunnelKind::Vxlan, HOST_MTU)
}

/// A node with a lease, as the others see it (the Node's annotations and podCIDR).
struct Registered {
    node: String,
    lease: Ipv4Net,
    public_ip: Ipv4Addr,
}

pub(super) fn realize(net: &mut Network, cluster: &mut Cluster) {
    let Some(flannel) = cluster.flannel.as_mut() else {
        return;
    };
    let registered: Vec<Registered> = cluster
        .nodes
        .iter()
        .filter_map(|n| {
            Some(Registered {
                node: n.name.clone(),
                lease: *flannel.leases.get(&n.name)?,
                public_ip: n.internal_ip,
            })
        })
        .collect();
    let nodes: Vec<(String, DeviceId, Ipv4Addr)> = cluster
        .nodes
        .iter()
        .map(|n| (n.name.clone(), n.device, n.internal_ip))
        .collect();
    for (node, dev, public_ip) in &nodes {
        let running = matches!(flannel.daemons.get(node), Some(Flanneld::Registered { .. }));
        let Some(host) = flannel.hosts.get_mut(node) else {
            continue;
        };
        if running {
            host.routes = registered.iter().filter(|r| &r.node != node).map(|r| r.lease).collect();
        }
        match host.vtep {
            Some(vtep) => {
                let remotes = running.then(|| {
                    registered
                        .iter()
                        .filter(|r| &r.node != node)
                        .map(|r| VxlanRemote {
                            tunnel_addr: r.lease.network(),
                            mac: Flannel::vtep_mac(&r.node),
                            node_addr: r.public_ip,
                        })
                        .collect()
                });
                vxlan_device(net, *dev, node, vtep, *public_ip, remotes);
            }
            None => unconfigure(net, *dev, VXLAN_DEVICE),
        }
        let statics = &mut net.devices[dev.idx()].statics;
        statics.retain(|s| s.dev.as_deref() != Some(VXLAN_DEVICE));
        // The kernel drops a deleted device's routes.
        let routes = if host.vtep.is_some() {
            host.routes.as_slice()
        } else {
            &[]
        };
        statics.extend(routes.iter().map(|lease| StaticRoute {
            prefix: *lease,
            via: Some(lease.network()),
            dev: Some(VXLAN_DEVICE.into()),
            distance: None,
            metric: 0,
            blackhole: false,
            onlink: true,
            origin: RouteOrigin::Manual,
            span: Span::new("flanneld", 1, 1),
        }));
        match host.bridge {
            Some(gw) => {
                let cni0 = ensure_iface(net, *dev, BRIDGE);
                let b = &mut net.interfaces[cni0.idx()];
                b.admin_up = true;
                b.mtu = mtu();
                b.addr = AddrConfig::Static(gw);
            }
            None => unconfigure(net, *dev, BRIDGE),
        }
        net.devices[dev.idx()].masquerade = flannel.masquerade(node);
    }
    attach_pods(net, cluster);
}

/// flannel.1 on `dev`: `remotes` replaces its neighbours when flanneld runs (None: as it left
/// them).
fn vxlan_device(
    net: &mut Network,
    dev: DeviceId,
    node: &str,
    vtep: Ipv4Addr,
    public_ip: Ipv4Addr,
    remotes: Option<Vec<VxlanRemote>>,
) {
    let parent = vxlan_parent(net, dev, public_ip);
    let id = ensure_iface(net, dev, VXLAN_DEVICE);
    let ifc = &mut net.interfaces[id.idx()];
    let kept = match &ifc.tunnel {
        Some(Tunnel::Vxlan(v)) => v.remotes.clone(),
        _ => Vec::new(),
    };
    ifc.tunnel = Some(Tunnel::Vxlan(Vxlan {
        vni: VNI,
        port: VXLAN_PORT,
        local: public_ip,
        parent,
        mac: Flannel::vtep_mac(node),
        remotes: remotes.unwrap_or(kept),
    }));
    ifc.mtu = mtu();
    ifc.admin_up = true;
    ifc.addr = AddrConfig::Static(Ipv4Net::from(vtep));
}

/// Each running pod's `eth0` on its node's cni0 segment; a pod that is gone or moved leaves it.
fn attach_pods(net: &mut Network, cluster: &mut Cluster) {
    let Some(flannel) = cluster.flannel.as_ref() else {
        return;
    };
    let mut live = Vec::new();
    for p in cluster
        .pods
        .iter()
        .filter(|p| p.phase == PodPhase::Running && !p.host_network)
    {
        let (Some(node), Some(ip)) = (p.node.as_deref(), p.ip) else {
            continue;
        };
        let Some(dev) = cluster.nodes.iter().find(|n| n.name == node).map(|n| n.device) else {
            continue;
        };
        let Some(gw) = flannel.pod_subnet(node) else { continue };
        live.push(((p.namespace.clone(), p.name.clone()), dev, ip, gw, p.image.clone()));
    }
    let network = flannel.network;
    release_gone_pods(net, &mut cluster.netns, |key| {
        live.iter().find(|(k, ..)| k == key).map(|(_, dev, ..)| *dev)
    });
    for (key, dev, ip, gw, image) in live {
        let netns = match cluster.netns.get(&key) {
            Some(n) => *n,
            None => {
                let n = new_netns(net, &key.0, &key.1, &image, false);
                cluster.netns.insert(key.clone(), n);
                n
            }
        };
        let span = Span::new(format!("pod {}/{}", key.0, key.1), 1, 1);
        net.devices[netns.device.idx()].statics = vec![
            pod_route(Ipv4Net::default(), Some(gw.addr()), &span),
            pod_route(network, Some(gw.addr()), &span),
        ];
        let e = &mut net.interfaces[netns.eth0.idx()];
        e.admin_up = true;
        e.mtu = mtu();
        e.addr = AddrConfig::Static(Ipv4Net::new(ip, gw.prefix_len()).unwrap_or(Ipv4Net::from(ip)));
        let Some(cni0) = net.iface_by_name(dev, BRIDGE) else {
            continue;
        };
        let veth = ensure_iface(net, dev, &bridge_veth_name(&key.0, &key.1));
        let h = &mut net.interfaces[veth.idx()];
        h.admin_up = true;
        h.mtu = mtu();
        join_segment(net, cni0, veth);
        join_segment(net, cni0, netns.eth0);
        if let Some(n) = cluster.netns.get_mut(&key) {
            n.host = Some(veth);
        }
    }
}

/// Put `port` on the L2 segment of `bridge` (created with the bridge).
fn join_segment(net: &mut Network, bridge: IfId, port: IfId) {
    let l2 = match net.iface(bridge).l2 {
        Some(l2) => l2,
        None => {
            let l2 = L2Id(net.l2.len() as u32);
            let dev = net.iface(bridge).device;
            net.l2.push(L2Domain {
                name: format!("{}:{BRIDGE}", net.device(dev).name),
                members: vec![bridge],
                span: Span::new("cni", 1, 1),
            });
            net.interfaces[bridge.idx()].l2 = Some(l2);
            l2
        }
    };
    if net.iface(port).l2 == Some(l2) {
        return;
    }
    leave_segment(net, port);
    net.l2[l2.idx()].members.push(port);
    net.interfaces[port.idx()].l2 = Some(l2);
}

/// `ip link delete [dev] IF` of Flannel's `cni0` or `flannel.1`, as a runbook clears a re-homed
/// node (§2.4 step 5, P1-8): the device and its routes go; the bridge plugin creates cni0 again
/// at the next ADD, flanneld creates flannel.1 when it starts. A cni0 with pods on it is not
/// modelled (their veths would stay, unbridged).
pub(super) fn link_delete(net: &mut Network, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    let name = match args {
        ["dev", name] | [name] => *name,
        _ => {
            return Err(format!(
                "`ip link delete {}`: fabsim models `ip link delete [dev] IF`",
                args.join(" ")
            ))
        }
    };
    let Some(id) = net.iface_by_name(dev, name) else {
        return Ok(CommandOutcome {
            status: 1,
            ..CommandOutcome::ok(format!("Cannot find device \"{name}\"\n"))
        });
    };
    let host_name = net.device(dev).name.clone();
    let node = net
        .cluster
        .as_deref()
        .and_then(|c| c.nodes.iter().find(|n| n.device == dev).map(|n| n.name.clone()))
        .unwrap_or(host_name);
    // The bridge's ports: the pods' host-side veths (their eth0s are on the segment too).
    let ports = net.iface(id).l2.map_or(0, |l2| {
        net.l2[l2.idx()]
            .members
            .iter()
            .filter(|m| **m != id && net.iface(**m).device == dev)
            .count()
    });
    let flannel = net.cluster.as_deref_mut().and_then(|c| c.flannel.as_mut());
    let Some(host) = flannel
        .and_then(|f| f.hosts.get_mut(&node))
        .filter(|_| [BRIDGE, VXLAN_DEVICE].contains(&name))
    else {
        return Err(format!(
            "`ip link delete {name}`: fabsim deletes Flannel's {BRIDGE} and {VXLAN_DEVICE} on a Flannel node only"
        ));
    };
    if name == BRIDGE {
        if ports > 0 {
            return Err(format!(
                "`ip link delete {BRIDGE}` on {node}: {ports} pod(s) are on it; fabsim deletes the bridge of a node \
                 with no pods (after kubeadm reset or a drain)"
            ));
        }
        host.bridge = None;
    } else {
        host.vtep = None;
        host.routes.clear();
    }
    // The device leaves the host; the kernel does not reuse its index.
    net.detach_interface(id);
    leave_segment(net, id);
    let ifc = &mut net.interfaces[id.idx()];
    ifc.admin_up = false;
    ifc.addr = AddrConfig::None;
    ifc.tunnel = None;
    net.devices[dev.idx()]
        .statics
        .retain(|s| s.dev.as_deref() != Some(name));
    Ok(CommandOutcome::ok(""))
}
