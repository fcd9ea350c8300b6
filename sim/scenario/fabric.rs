//! The fabric as a drawing needs it: which device is a spine, a leaf, a node, a host or an
//! external network, which rack (the leaf it is cabled to) each host stands in, the cables — and,
//! after each step, which cables are down and why, which devices are off, and every BGP session
//! end with its state and prefix counts. The run report carries both, so the HTML report and
//! `fabsim topo` draw from the same data the JSON shows.
//!
//! Roles come from the cabling, not from names: a switch cabled point-to-point to a Linux host
//! is a leaf, any other switch a spine. Pods are not drawn (they are counted in the
//! reachability matrix).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use serde::Serialize;

use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, IfId, Network};

/// What a device is in the drawing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// An external network (a gateway with DHCP and what lies beyond).
    External,
    /// A multi-access L2 segment without an external network on it.
    Segment,
    Spine,
    Leaf,
    /// A Kubernetes node (`kind: k8s-node`).
    Node,
    /// Any other Linux host (a client, a server).
    Host,
}

#[derive(Clone, Debug, Serialize)]
pub struct FabricDevice {
    pub name: String,
    pub role: Role,
    /// The leaf a host is cabled to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    #[serde(skip)]
    pub id: Option<DeviceId>,
}

/// One end of a cable: a device's port, or a segment (no port).
#[derive(Clone, Debug, Serialize)]
pub struct CableEnd {
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    #[serde(skip)]
    pub port: Option<IfId>,
}

/// A point-to-point link, or one member's attachment to a multi-access segment.
#[derive(Clone, Debug, Serialize)]
pub struct Cable {
    pub a: CableEnd,
    pub b: CableEnd,
}

impl Cable {
    pub fn label(&self) -> String {
        let end = |e: &CableEnd| match &e.interface {
            Some(i) => format!("{}:{i}", e.device),
            None => e.device.clone(),
        };
        format!("{} - {}", end(&self.a), end(&self.b))
    }
}

/// The devices and cables of the topology, pods left out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fabric {
    pub devices: Vec<FabricDevice>,
    pub cables: Vec<Cable>,
}

impl Fabric {
    /// The drawing's devices and cables. Devices created later (pods) are never part of it;
    /// the topology's own devices and ports keep their ids for the whole run.
    pub fn of(net: &Network) -> Fabric {
        let pods = net.pod_devices();
        let drawn = |d: DeviceId| !pods.contains(&d);
        let p2p: Vec<[IfId; 2]> = net
            .l2
            .iter()
            .filter_map(|l| match l.members.as_slice() {
                [a, b] => Some([*a, *b]),
                _ => None,
            })
            .filter(|[a, b]| drawn(net.iface(*a).device) && drawn(net.iface(*b).device))
            .collect();
        let kind = |i: IfId| net.device(net.iface(i).device).kind;
        // A leaf is a switch with a host on one of its point-to-point ports.
        let leaves: BTreeSet<DeviceId> = p2p
            .iter()
            .flat_map(|[a, b]| [(*a, *b), (*b, *a)])
            .filter(|(s, h)| kind(*s) == DeviceKind::Eos && kind(*h) == DeviceKind::Linux)
            .map(|(s, _)| net.iface(s).device)
            .collect();
        let rack_of = |host: DeviceId| -> Option<String> {
            p2p.iter()
                .flat_map(|[a, b]| [(*a, *b), (*b, *a)])
                .find(|(h, s)| net.iface(*h).device == host && leaves.contains(&net.iface(*s).device))
                .map(|(_, s)| net.device(net.iface(s).device).name.clone())
        };
        let mut devices: Vec<FabricDevice> = net
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| (DeviceId(i as u32), d))
            .filter(|(id, _)| drawn(*id))
            .map(|(id, d)| {
                let (role, rack) = match d.kind {
                    DeviceKind::External => (Role::External, None),
                    DeviceKind::Eos if leaves.contains(&id) => (Role::Leaf, None),
                    DeviceKind::Eos => (Role::Spine, None),
                    DeviceKind::Linux if d.kubelet.is_some() => (Role::Node, rack_of(id)),
                    DeviceKind::Linux => (Role::Host, rack_of(id)),
                };
                FabricDevice {
                    name: d.name.clone(),
                    role,
                    rack,
                    id: Some(id),
                }
            })
            .collect();
        let end = |i: IfId| CableEnd {
            device: net.device(net.iface(i).device).name.clone(),
            interface: Some(net.iface(i).name.clone()),
            port: Some(i),
        };
        let mut cables: Vec<Cable> = p2p.iter().map(|[a, b]| Cable { a: end(*a), b: end(*b) }).collect();
        // A segment hangs off its external network when it has one (the NAT cloud), else off a
        // point of its own named like the segment.
        for seg in net.l2.iter().filter(|l| l.members.len() > 2) {
            let members: Vec<IfId> = seg
                .members
                .iter()
                .copied()
                .filter(|i| drawn(net.iface(*i).device))
                .collect();
            let hub = members.iter().copied().find(|i| kind(*i) == DeviceKind::External);
            let hub_end = match hub {
                Some(i) => end(i),
                None => {
                    devices.push(FabricDevice {
                        name: seg.name.clone(),
                        role: Role::Segment,
                        rack: None,
                        id: None,
                    });
                    CableEnd {
                        device: seg.name.clone(),
                        interface: None,
                        port: None,
                    }
                }
            };
            for m in members.into_iter().filter(|m| Some(*m) != hub) {
                cables.push(Cable {
                    a: hub_end.clone(),
                    b: end(m),
                });
            }
        }
        Fabric { devices, cables }
    }

    /// The rack (leaf name) of every endpoint device the reachability matrix pings from: a
    /// host's own rack, a pod's node's rack.
    pub fn racks(&self, net: &Network) -> BTreeMap<DeviceId, String> {
        let mut out: BTreeMap<DeviceId, String> = self
            .devices
            .iter()
            .filter_map(|d| Some((d.id?, d.rack.clone()?)))
            .collect();
        if let Some(c) = net.cluster.as_deref() {
            for ns in c.netns.values() {
                let node = ns.host.map(|h| net.iface(h).device);
                if let Some(rack) = node.and_then(|n| out.get(&n)).cloned() {
                    out.insert(ns.device, rack);
                }
            }
        }
        out
    }
}

/// What is wrong with a cable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CableState {
    /// A device at one end has no power.
    Off,
    /// A port is shut down or not routed (an unconfigured switchport).
    Down,
    /// Both ports are up, but no carrier (a cut cable, a dead port at the far end).
    NoCarrier,
}

#[derive(Clone, Debug, Serialize)]
pub struct CableDown {
    /// Index into the report's `fabric.cables`.
    pub cable: usize,
    pub state: CableState,
    /// The device or port responsible (`Leaf-3:Ethernet3`).
    pub at: String,
}

/// One speaker's view of one BGP session.
#[derive(Clone, Debug, Serialize)]
pub struct SessionEnd {
    pub device: String,
    /// `BGP 10.0.11.1` / `BGP Mesh_10_0_11_1 (10.0.11.1)`, as in the step's `peers`.
    pub peer: String,
    /// The drawn device that owns the neighbour address (None: not a drawn device).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_device: Option<String>,
    pub state: String,
    pub received: u32,
    pub accepted: u32,
}

/// The fabric's condition after a step.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FabricState {
    /// Drawn devices without power.
    pub off: Vec<String>,
    pub cables_down: Vec<CableDown>,
    pub sessions: Vec<SessionEnd>,
}

impl FabricState {
    pub fn of(fabric: &Fabric, net: &Network, st: &State) -> FabricState {
        let powered = |d: DeviceId| st.devices.get(d.idx()).is_some_and(|s| s.powered);
        let off = fabric
            .devices
            .iter()
            .filter(|d| d.id.is_some_and(|id| !powered(id)))
            .map(|d| d.name.clone())
            .collect();
        let cables_down = fabric
            .cables
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let (state, at) = cable_state(net, st, c)?;
                Some(CableDown { cable: i, state, at })
            })
            .collect();
        let owner: BTreeMap<Ipv4Addr, &str> = st
            .ifaces
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((s.addr?.addr(), IfId(i as u32))))
            .filter_map(|(a, i)| {
                let dev = net.iface(i).device;
                let d = fabric.devices.iter().find(|d| d.id == Some(dev))?;
                Some((a, d.name.as_str()))
            })
            .collect();
        let mut sessions = Vec::new();
        for d in &fabric.devices {
            let Some(view) =
                d.id.and_then(|id| st.devices.get(id.idx()))
                    .and_then(|s| s.bgp.as_ref())
            else {
                continue;
            };
            for s in &view.sessions {
                sessions.push(SessionEnd {
                    device: d.name.clone(),
                    peer: super::impact::session_label(s.name.as_deref(), s.neighbor),
                    peer_device: owner.get(&s.neighbor).map(|n| n.to_string()),
                    state: format!("{:?}", s.state),
                    received: s.pfx_rcvd,
                    accepted: s.pfx_acc,
                });
            }
        }
        FabricState {
            off,
            cables_down,
            sessions,
        }
    }
}

/// A cable's trouble, if any, and where it is; the worst of its two ends.
fn cable_state(net: &Network, st: &State, c: &Cable) -> Option<(CableState, String)> {
    let ends = [&c.a, &c.b];
    let ports: Vec<(IfId, &CableEnd)> = ends.iter().filter_map(|e| Some((e.port?, *e))).collect();
    for (p, e) in &ports {
        let dev = net.iface(*p).device;
        if !st.devices.get(dev.idx()).is_some_and(|s| s.powered) {
            return Some((CableState::Off, e.device.clone()));
        }
    }
    let at = |e: &CableEnd| format!("{}:{}", e.device, e.interface.as_deref().unwrap_or(""));
    for (p, e) in &ports {
        if !st.ifaces[p.idx()].up {
            return Some((CableState::Down, at(e)));
        }
    }
    for (p, e) in &ports {
        if !st.ifaces[p.idx()].line_up {
            return Some((CableState::NoCarrier, at(e)));
        }
    }
    None
}
