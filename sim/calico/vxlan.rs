//! What felix's VXLAN manager programs on a node (`felix/dataplane/linux/vxlan_mgr.go`, fed by
//! `felix/calc/vxlan_resolver.go` and `felix/calc/l3_route_resolver.go`, Calico v3.25):
//!
//! - a VTEP per node that has a VXLAN tunnel address and an IPv4 address: the tunnel address,
//!   the device MAC (`Calico::vtep_mac`) and the node address the outer packets go to;
//! - per IPAM block with an affinity, inside a pool with VXLAN (disabled pools too: the route
//!   resolver keys on the pool's type, not its state): a blackhole for the node's own blocks
//!   (`blackholeRoutes`), and for another node's block either `via <its tunnel address> dev
//!   vxlan.calico onlink`, or, when the pool is CrossSubnet and that node's address is inside
//!   this node's subnet (`nodeInOurSubnet`: this node's `ipv4Address` prefix), `via <its node
//!   address>` on the parent device (the no-encap table). Remote routes need both VTEPs: without
//!   the local one felix has no device and no parent, without the remote one no gateway.
//!
//! Borrowed addresses (a /32 from another node's block) get no route here; fabsim's IPAM only
//! borrows when a node runs out of blocks.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net};

use super::datastore::EncapMode;
use super::install::Calico;

/// Calico's defaults for the VXLAN device (`felix/config/config_params.go`: `VXLANVNI` 4096,
/// `VXLANPort` 4789).
pub const VNI: u32 = 4096;
pub const PORT: u16 = 4789;
/// The device felix creates (`int_dataplane.go`).
pub const DEVICE: &str = "vxlan.calico";

/// One node's VXLAN tunnel endpoint (`proto.VXLANTunnelEndpointUpdate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vtep {
    pub node: String,
    pub tunnel_addr: Ipv4Addr,
    pub mac: [u8; 6],
    /// The node's address with its prefix (`ParentDeviceIp`, and the subnet CrossSubnet uses).
    pub node_addr: Ipv4Net,
}

/// One route felix's VXLAN manager programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FelixRoute {
    /// A block of this node (`blackhole BLOCK proto 80`).
    Blackhole(Ipv4Net),
    /// Another node's block through the tunnel: `BLOCK via TUNNEL-ADDR dev vxlan.calico onlink`.
    Vxlan { block: Ipv4Net, gw: Ipv4Addr },
    /// Another node's block in this node's subnet under CrossSubnet: `BLOCK via NODE-ADDR dev
    /// PARENT proto 80 onlink`.
    NoEncap { block: Ipv4Net, gw: Ipv4Addr },
}

impl Calico {
    /// The VTEP of `node`, if it has one.
    pub fn vtep(&self, node: &str) -> Option<Vtep> {
        let n = self.datastore.nodes.get(node)?;
        Some(Vtep {
            node: node.to_string(),
            tunnel_addr: n.ipv4_vxlan_tunnel_addr?,
            mac: self.vtep_mac(node),
            node_addr: n.ipv4_address?,
        })
    }

    /// Every node's VTEP except `node`'s, in node name order.
    pub fn remote_vteps(&self, node: &str) -> Vec<Vtep> {
        self.datastore
            .nodes
            .keys()
            .filter(|n| n.as_str() != node)
            .filter_map(|n| self.vtep(n))
            .collect()
    }

    /// The routes felix's VXLAN manager programs on `node`, in block (address) order.
    pub fn vxlan_routes(&self, node: &str) -> Vec<FelixRoute> {
        let Some(ipam) = &self.ipam else { return Vec::new() };
        let local = self.vtep(node);
        let mut out = Vec::new();
        for b in ipam.blocks() {
            let (Some(owner), IpNet::V4(block)) = (b.affinity(), b.cidr()) else {
                continue;
            };
            let Some(pool) = self
                .datastore
                .ip_pools
                .values()
                .find(|p| p.cidr.contains(&IpAddr::V4(block.network())))
                .filter(|p| p.vxlan_mode != EncapMode::Never)
            else {
                continue;
            };
            if owner == node {
                out.push(FelixRoute::Blackhole(block));
                continue;
            }
            let (Some(local), Some(remote)) = (&local, self.vtep(owner)) else {
                continue;
            };
            let same_subnet = local.node_addr.contains(&remote.node_addr.addr());
            // `poolAllowsCrossSubnet`: either encapsulation's CrossSubnet marks the pool.
            let cross_subnet = pool.vxlan_mode == EncapMode::CrossSubnet || pool.ipip_mode == EncapMode::CrossSubnet;
            out.push(if cross_subnet && same_subnet {
                FelixRoute::NoEncap {
                    block,
                    gw: remote.node_addr.addr(),
                }
            } else {
                FelixRoute::Vxlan {
                    block,
                    gw: remote.tunnel_addr,
                }
            });
        }
        out
    }
}
