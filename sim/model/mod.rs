//! The vendor-independent model: devices, interfaces, L2 domains, and each device's routing
//! configuration (static, OSPF, ACL, NAT). Parsers (`input`) build it; the engine reads it.
//! Nothing here computes routing. Vendor differences live in `profile::VendorProfile`.

pub mod bgp;
pub mod kube_proxy;
pub mod normal;
pub mod policy;
pub mod profile;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::diag::Span;
pub use bgp::{BgpConfig, BgpFlavor, BgpNeighbor, BirdDaemon};
pub use kube_proxy::{KubeProxy, ServiceRule, L4};
pub use profile::VendorProfile;

macro_rules! dense_id {
    ($name:ident) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        pub struct $name(pub u32);
        impl $name {
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}
dense_id!(DeviceId);
dense_id!(IfId);
dense_id!(L2Id);

/// What kind of box a device is; decides which parser reads its config and which views exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// Arista EOS switch (configured in EOS syntax).
    Eos,
    /// Linux host (netplan-style configuration).
    Linux,
    /// An external network: a gateway with DHCP on one segment, and destinations beyond it.
    External,
}

/// The whole fabric.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Network {
    pub devices: Vec<Device>,
    pub interfaces: Vec<Interface>,
    pub l2: Vec<L2Domain>,
    /// Configurations entered some time after power-on (see `Network::defer_config`).
    pub timed: Vec<TimedConfig>,
    /// The Kubernetes cluster on the hosts, once `kubeadm init` has run: its nodes, pods and
    /// CNI. `k8s::realize` keeps the devices, interfaces and routes above in line with it.
    #[serde(skip)]
    pub cluster: Option<Box<crate::k8s::Cluster>>,
    /// Per device, the highest ifindex of its interfaces that left its list (deleted veths and
    /// flannel devices, interfaces a timed configuration does not list): the kernel does not
    /// reuse an index (`next_ifindex`).
    #[serde(skip)]
    retired_ifindex: BTreeMap<DeviceId, u32>,
}

/// A device's configuration as it is once an engineer has entered it at `at_ms`; until then
/// the device runs with factory defaults (EOS: every Ethernet port a switchport, no routing).
/// This is how a topology says "the leaves were configured before the spine", which decides
/// the OSPF DR (seed-lab.md s0) without forcing it.
#[derive(Clone, Debug, Serialize)]
pub struct TimedConfig {
    pub at_ms: u64,
    pub device: DeviceId,
    pub config: Device,
    pub ifaces: Vec<(IfId, Interface)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Device {
    pub name: String,
    pub kind: DeviceKind,
    /// Shell/CLI hostname shown in prompts (cosmetic).
    pub hostname: Option<String>,
    pub ifaces: Vec<IfId>,
    /// Virtual time (ms) at which the device powers on. Lets a topology say which devices came
    /// up first (e.g. the seed lab's leaves before the spine, which decides the OSPF DR).
    pub boot_ms: u64,
    pub profile: VendorProfile,
    pub statics: Vec<StaticRoute>,
    pub ospf: Option<OspfConfig>,
    /// The device's BGP speaker (EOS `router bgp`, or BIRD's `protocol bgp`s on a host).
    pub bgp: Option<BgpConfig>,
    /// BIRD running on a Linux host (the table's kernel/direct/static protocols and filters).
    pub bird: Option<BirdDaemon>,
    pub acls: BTreeMap<String, Acl>,
    /// Linux `net.ipv4.ip_forward`; EOS always forwards.
    pub ip_forward: bool,
    /// Linux: a MASQUERADE rule in the nat table's POSTROUTING (felix's natOutgoing).
    pub masquerade: Option<Masquerade>,
    /// Linux: kube-proxy's Service rules (a Kubernetes node running kube-proxy).
    pub kube_proxy: Option<KubeProxy>,
    /// External networks only.
    pub external: Option<ExternalConfig>,
    /// A container of this image (`catalogue/images.yaml`): its tools and servers.
    pub image: Option<String>,
    /// A Kubernetes node host (topology `kind: k8s-node`): kubeadm and kubelet installed.
    pub kubelet: Option<Kubelet>,
    /// Where the device was declared.
    pub span: Span,
}

/// kubeadm/kubelet on a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Kubelet {
    /// The version installed (`v1.28.15`): what `kubeadm init` deploys and `join` registers.
    pub version: String,
    /// The InternalIP kubelet registers (its hostname's `/etc/hosts` address, or `--node-ip`);
    /// None: the address of the interface with the default route.
    pub node_ip: Option<Ipv4Addr>,
    /// `maxPods` in the KubeletConfiguration kubeadm writes on this host (none: the kubelet's
    /// default, 110).
    pub max_pods: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddrConfig {
    None,
    Static(Ipv4Net),
    /// Address (and, on Linux, default route) leased from the DHCP server on the segment.
    Dhcp,
}

#[derive(Clone, Debug, Serialize)]
pub struct Interface {
    pub device: DeviceId,
    pub name: String,
    pub l2: Option<L2Id>,
    /// EOS `no switchport`; always true on Linux.
    pub routed: bool,
    /// `shutdown` clears it.
    pub admin_up: bool,
    pub addr: AddrConfig,
    pub mtu: u32,
    pub ospf: IfOspf,
    /// `ip nat source dynamic access-list ACL overload` on this interface.
    pub nat_overload_acl: Option<String>,
    /// Linux `net.ipv4.conf.IF.proxy_arp = 1`: answer ARP for any address (Calico sets it on
    /// the host side of every pod's veth so the pod's gateway 169.254.1.1 resolves).
    pub proxy_arp: bool,
    /// Kernel interface index (Linux; `ip addr` numbering). Loopback is 1.
    pub ifindex: u32,
    /// A tunnel device (`tunl0`, `vxlan.calico`): packets routed out of it are encapsulated
    /// towards the tunnel's remote end for the route's gateway instead of being sent on a wire.
    pub tunnel: Option<Tunnel>,
    pub span: Span,
}

/// Encapsulation of a tunnel interface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tunnel {
    /// IP-in-IP (protocol 4), Linux `ipip` mode: `tunl0`, MTU 20 below the wire's.
    Ipip,
    /// A Linux `vxlan` device (Calico's `vxlan.calico`): Ethernet in UDP, MTU 50 below the
    /// wire's.
    Vxlan(Vxlan),
}

/// A Linux `vxlan` device as felix creates it (`ip link add … type vxlan id VNI local ADDR
/// dev PARENT dstport PORT nolearning`) with the static neighbour and FDB entries felix
/// programs for each remote VTEP: no learning, so only those remotes are reachable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Vxlan {
    pub vni: u32,
    /// UDP destination port of the outer header (and the port the device listens on).
    pub port: u16,
    /// `local`: the outer header's source address.
    pub local: Ipv4Addr,
    /// The device the outer packets are meant to leave by (`dev`; shown by `ip -d link`).
    pub parent: Option<String>,
    pub mac: [u8; 6],
    /// Remote VTEPs: a route's gateway (the remote tunnel address) resolves to its MAC (ARP
    /// entry), which the FDB maps to the remote node's address (the outer destination).
    pub remotes: Vec<VxlanRemote>,
}

/// One remote VTEP felix knows (`proto.VXLANTunnelEndpointUpdate`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VxlanRemote {
    pub tunnel_addr: Ipv4Addr,
    pub mac: [u8; 6],
    pub node_addr: Ipv4Addr,
}

impl Vxlan {
    /// The outer destination for a packet routed to `gw` through this device: the node
    /// behind the FDB entry of `gw`'s MAC. None without entries (no learning, no flooding).
    pub fn remote_for(&self, gw: Ipv4Addr) -> Option<Ipv4Addr> {
        self.remotes.iter().find(|r| r.tunnel_addr == gw).map(|r| r.node_addr)
    }
}

impl Interface {
    /// Back to what the box ships with: EOS Ethernet ports are switchports; everything is
    /// enabled and unaddressed.
    pub fn factory_reset(&mut self, kind: DeviceKind) {
        self.routed = !(kind == DeviceKind::Eos && self.name.starts_with("Ethernet"));
        self.admin_up = true;
        self.addr = AddrConfig::None;
        self.ospf = IfOspf::default();
        self.nat_overload_acl = None;
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IfOspf {
    pub cost: Option<u32>,
    pub priority: Option<u8>,
    pub point_to_point: bool,
    pub passive: bool,
}

/// A point-to-point link (two members) or a multi-access segment (several).
#[derive(Clone, Debug, Serialize)]
pub struct L2Domain {
    pub name: String,
    pub members: Vec<IfId>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteOrigin {
    /// EOS `ip route`, Linux `ip route add` (proto boot).
    Manual,
    /// Linux netplan/networkd routes (`proto static`).
    Netplan,
    /// FRR zebra's static routes (`ip route` in frr.conf): `proto static`, metric 20.
    Zebra,
    /// Calico felix's routes with its `DeviceRouteProtocol` (default 3, boot: `ip route`
    /// shows no `proto`): workload /32s on `cali…` devices, VXLAN routes on `vxlan.calico`.
    Felix,
    /// felix's VXLAN manager's blackholes for local blocks and its no-encap (CrossSubnet, same
    /// subnet) routes: protocol 80 (`defaultVXLANProto`), which iproute2 prints as a number.
    FelixVxlan,
}

impl RouteOrigin {
    /// The `proto` word `ip route` prints (None: boot, not printed).
    pub fn linux_proto(self) -> Option<crate::engine::LinuxProto> {
        use crate::engine::LinuxProto;
        match self {
            RouteOrigin::Manual | RouteOrigin::Felix => None,
            RouteOrigin::Netplan | RouteOrigin::Zebra => Some(LinuxProto::Static),
            RouteOrigin::FelixVxlan => Some(LinuxProto::FelixVxlan),
        }
    }

    /// Routes felix owns: it replaces all of them whenever it syncs.
    pub fn is_felix(self) -> bool {
        matches!(self, RouteOrigin::Felix | RouteOrigin::FelixVxlan)
    }
}

/// The kernel metric FRR's zebra installs every route with (`NL_DEFAULT_ROUTE_METRIC`,
/// zebra/rt_netlink.h at frr-8.4): `ip route` shows `proto bgp metric 20`.
pub const ZEBRA_ROUTE_METRIC: u32 = 20;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StaticRoute {
    pub prefix: Ipv4Net,
    pub via: Option<Ipv4Addr>,
    pub dev: Option<String>,
    /// EOS administrative distance (default from the profile).
    pub distance: Option<u8>,
    /// Linux route metric.
    pub metric: u32,
    pub blackhole: bool,
    /// `onlink` (netplan `on-link: true`, felix's VXLAN and no-encap routes): the gateway is
    /// taken to be reachable on `dev` whatever covers it, and the kernel keeps the flag
    /// (`ip route` prints it).
    pub onlink: bool,
    pub origin: RouteOrigin,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedistSource {
    Connected,
    Static,
    Bgp,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Redistribute {
    pub source: RedistSource,
    pub metric: Option<u32>,
    /// 1 or 2 (E1/E2); `None` = the profile default.
    pub metric_type: Option<u8>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OspfNetwork {
    pub prefix: Ipv4Net,
    pub area: u32,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OspfConfig {
    pub process_id: u32,
    pub router_id: Option<Ipv4Addr>,
    pub networks: Vec<OspfNetwork>,
    pub redistribute: Vec<Redistribute>,
    pub passive_default: bool,
    /// Interface names listed by `passive-interface X` (or `no passive-interface X` when
    /// `passive_default`).
    pub passive_exceptions: Vec<String>,
    pub max_paths: Option<u32>,
    pub shutdown: bool,
    pub span: Span,
}

impl OspfConfig {
    /// A process as its `router ospf` line starts it: nothing configured under it yet.
    pub fn new(process_id: u32, span: Span) -> Self {
        OspfConfig {
            process_id,
            router_id: None,
            networks: Vec::new(),
            redistribute: Vec::new(),
            passive_default: false,
            passive_exceptions: Vec::new(),
            max_paths: None,
            shutdown: false,
            span,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AclAction {
    Permit,
    Deny,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AclEntry {
    pub seq: u32,
    pub action: AclAction,
    /// IP protocol number; `None` = `ip` (any).
    pub protocol: Option<u8>,
    pub src: Ipv4Net,
    pub dst: Ipv4Net,
    pub span: Span,
}

/// A Linux `iptables -t nat -A POSTROUTING` MASQUERADE rule that matches a source set and the
/// complement of a destination set: felix's `cali-nat-outgoing` rule `-m set --match-set
/// cali40masq-ipam-pools src -m set ! --match-set cali40all-ipam-pools dst -j MASQUERADE`
/// (Calico v3.25 `felix/rules/nat.go` `makeNATOutgoingRuleIPTables`). Matching packets leave
/// with the egress interface's address as their source; conntrack un-NATs the answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Masquerade {
    pub src: Vec<Ipv4Net>,
    pub not_dst: Vec<Ipv4Net>,
}

impl Masquerade {
    pub fn matches(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        self.src.iter().any(|n| n.contains(&src)) && !self.not_dst.iter().any(|n| n.contains(&dst))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Acl {
    pub name: String,
    pub entries: Vec<AclEntry>,
}

/// One destination beyond an external network's gateway that answers pings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Responder {
    pub address: Ipv4Addr,
    /// TTL of the reply as it leaves the gateway onto the segment (the lab's 8.8.8.8 shows
    /// ttl=99 on the spine, one hop away).
    pub reply_ttl: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DhcpLease {
    pub device: String,
    pub interface: String,
    pub address: Ipv4Net,
    pub span: Span,
}

/// An external network (the lab's PNETLAB NAT cloud): the gateway on one segment, a DHCP
/// server handing out the listed leases, and responders beyond. It has no route back to any
/// address outside its own segment: replies to un-NATed private sources are dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExternalConfig {
    pub gateway: Ipv4Net,
    pub leases: Vec<DhcpLease>,
    pub responders: Vec<Responder>,
}

impl Network {
    pub fn device(&self, id: DeviceId) -> &Device {
        &self.devices[id.idx()]
    }
    pub fn iface(&self, id: IfId) -> &Interface {
        &self.interfaces[id.idx()]
    }
    /// The devices that are pods' network namespaces (what the cluster creates, as opposed to
    /// the topology's hosts and switches).
    pub fn pod_devices(&self) -> std::collections::BTreeSet<DeviceId> {
        self.cluster
            .iter()
            .flat_map(|c| c.netns.values().map(|n| n.device))
            .collect()
    }

    /// A device by its name; a pod also by `NAMESPACE/NAME` (its network namespace).
    pub fn device_by_name(&self, name: &str) -> Option<DeviceId> {
        let by_name = self
            .devices
            .iter()
            .position(|d| d.name == name)
            .map(|i| DeviceId(i as u32));
        by_name.or_else(|| {
            let (ns, pod) = name.split_once('/')?;
            let cluster = self.cluster.as_deref()?;
            cluster.pod(ns, pod)?;
            cluster.netns.get(&(ns.to_string(), pod.to_string())).map(|n| n.device)
        })
    }
    /// Case-insensitive interface lookup on one device (EOS accepts `ethernet4`, `Et4`, …
    /// through `input::eos::canonical_interface`; this only matches full names).
    pub fn iface_by_name(&self, dev: DeviceId, name: &str) -> Option<IfId> {
        self.device(dev)
            .ifaces
            .iter()
            .copied()
            .find(|i| self.iface(*i).name.eq_ignore_ascii_case(name))
    }

    /// `dev`'s interface names, comma-separated: the hint when a name is not one of them.
    pub fn iface_names(&self, dev: DeviceId) -> String {
        let names: Vec<&str> = self
            .device(dev)
            .ifaces
            .iter()
            .map(|i| self.iface(*i).name.as_str())
            .collect();
        names.join(", ")
    }
    /// The ifindex the kernel gives `dev`'s next interface: one past the highest any of its
    /// interfaces had, deleted ones included. Kept per device rather than found by scanning
    /// every interface of the network, which realizing a cluster did for each interface of
    /// each pod.
    pub fn next_ifindex(&self, dev: DeviceId) -> u32 {
        let listed = self.device(dev).ifaces.iter().map(|i| self.iface(*i).ifindex);
        let retired = self.retired_ifindex.get(&dev).copied();
        listed.chain(retired).max().unwrap_or(0) + 1
    }

    /// Take `id` off its device's list, as the kernel deletes a device; its index stays used.
    pub fn detach_interface(&mut self, id: IfId) {
        let dev = self.iface(id).device;
        self.devices[dev.idx()].ifaces.retain(|i| *i != id);
        self.retire_ifindex(dev, self.iface(id).ifindex);
    }

    fn retire_ifindex(&mut self, dev: DeviceId, ifindex: u32) {
        let high = self.retired_ifindex.entry(dev).or_default();
        *high = (*high).max(ifindex);
    }

    /// Add an interface to `dev` with the defaults every kind shares (enabled, unaddressed,
    /// MTU 1500, not cabled); callers set what differs.
    pub fn add_interface(&mut self, dev: DeviceId, name: impl Into<String>, routed: bool, span: Span) -> IfId {
        let id = IfId(self.interfaces.len() as u32);
        self.interfaces.push(Interface {
            device: dev,
            name: name.into(),
            l2: None,
            routed,
            admin_up: true,
            addr: AddrConfig::None,
            mtu: 1500,
            ospf: IfOspf::default(),
            nat_overload_acl: None,
            proxy_arp: false,
            ifindex: 0,
            tunnel: None,
            span,
        });
        self.devices[dev.idx()].ifaces.push(id);
        id
    }

    /// Move `dev`'s current configuration to a `TimedConfig` applied at `at_ms`, leaving the
    /// device at factory defaults until then. Interfaces keep their identity and links.
    pub fn defer_config(&mut self, dev: DeviceId, at_ms: u64) {
        let config = self.devices[dev.idx()].clone();
        let ifaces: Vec<(IfId, Interface)> = config
            .ifaces
            .iter()
            .map(|i| (*i, self.interfaces[i.idx()].clone()))
            .collect();
        let d = &mut self.devices[dev.idx()];
        d.hostname = None;
        d.statics.clear();
        d.ospf = None;
        d.bgp = None;
        d.bird = None;
        d.acls.clear();
        for (id, _) in &ifaces {
            self.interfaces[id.idx()].factory_reset(config.kind);
        }
        self.timed.push(TimedConfig {
            at_ms,
            device: dev,
            config,
            ifaces,
        });
    }

    /// Apply `timed[i]`: the device's configuration as entered at its time.
    pub fn apply_timed(&mut self, i: usize) {
        let Some(t) = self.timed.get(i).cloned() else { return };
        // Interfaces added since the configuration was taken leave the device's list.
        let dropped: Vec<IfId> = self.devices[t.device.idx()]
            .ifaces
            .iter()
            .filter(|i| !t.config.ifaces.contains(i))
            .copied()
            .collect();
        for id in dropped {
            self.retire_ifindex(t.device, self.iface(id).ifindex);
        }
        for (id, ifc) in t.ifaces {
            self.interfaces[id.idx()] = ifc;
        }
        self.devices[t.device.idx()] = t.config;
    }

    /// The other members of an interface's L2 domain.
    pub fn l2_peers(&self, ifid: IfId) -> impl Iterator<Item = IfId> + '_ {
        let l2 = self.iface(ifid).l2;
        l2.into_iter()
            .flat_map(move |l| self.l2[l.idx()].members.iter().copied())
            .filter(move |m| *m != ifid)
    }
}
