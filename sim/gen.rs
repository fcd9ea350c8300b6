//! `fabsim gen leaf-spine`: a leaf-spine fabric with a Kubernetes/Calico cluster on its nodes,
//! written as ordinary topology YAML (the format people write by hand, `input::topology`).
//!
//! The addressing plan is fixed so that anyone can tell an address's place from the address
//! alone (issue #8; `PLAN` below is what `--help` and README.md show). The text is written into
//! one `String` buffer: 16 spines × 512 leaves × 48 nodes (~25,000 devices) takes well under a
//! second.

use std::fmt::Write;
use std::net::Ipv4Addr;

use clap::ValueEnum;

/// The plan as `fabsim gen leaf-spine --help` prints it.
pub const PLAN: &str = "\
Addressing plan (fixed; s, l, n are 1-based):
  names            spine-S, leaf-L, node-L-N
  spine-leaf /31   from 10.254.0.0/16, k = (s-1)*L + (l-1): spine 10.254.0.0+2k, leaf +2k+1;
                   spine-s Ethernet<l>, leaf-l Ethernet<s>
  leaf-node /31    from 10.255.0.0/16, k = (l-1)*N + (n-1): leaf 10.255.0.0+2k (Ethernet<S+n>),
                   node +2k+1 (eth0), nodes route `default via` their leaf
  pods             pool 10.128.0.0/10, /26 blocks (--block-size); services 10.96.0.0/12
  leaf ASN         64512+l in both underlays
  --underlay ospf  spines and leaves in area 0 (`network 0.0.0.0/0 area 0`), node-facing leaf
                   ports `passive-interface EthernetN`, leaves `redistribute bgp`
  --underlay ebgp  RFC 7938: no OSPF, spines AS 65534, one eBGP session per spine-leaf link,
                   leaves `redistribute connected`, `maximum-paths S` on spines and leaves
  --node-asn       per-node 4200000000+k (k of the node's leaf link), per-rack 4200000000+l,
                   shared 64512
  --calico tor     a node-specific BGPPeer from each node to its leaf; node-to-node mesh off
  --calico mesh    Calico's node-to-node mesh; leaves do not peer with nodes (pod traffic
                   between racks needs an --encap: the fabric has no pod routes)
  --calico rr      each leaf is the route reflector of its rack's nodes over iBGP (nodes take
                   the leaf's AS; --node-asn does not apply); with --underlay ebgp the leaf
                   sends them its routes with `next-hop-self`
  cluster          kubeadm init on node-1-1, every other node joins; Calico from the catalogue
                   manifest; --pods-per-node bare pods NODE-pod-I (image alpine) per node";

/// The first /16 of spine–leaf links and of leaf–node links.
const SPINE_LEAF_BASE: Ipv4Addr = Ipv4Addr::new(10, 254, 0, 0);
const LEAF_NODE_BASE: Ipv4Addr = Ipv4Addr::new(10, 255, 0, 0);
/// The Calico pod pool and the Kubernetes service range of the plan.
pub const POD_POOL: &str = "10.128.0.0/10";
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
/// Leaf l is AS `LEAF_ASN_BASE + l`; `--node-asn shared` nodes are AS `LEAF_ASN_BASE`
/// (Calico's default AS).
const LEAF_ASN_BASE: u32 = 64512;
const SPINE_ASN: u32 = 65534;
/// Per-node and per-rack node ASNs count up from here (the 4-byte private range).
const NODE_ASN_BASE: u32 = 4_200_000_000;
/// kubeadm/kubelet on the generated nodes (the version the bundled seed lab runs).
const KUBELET_VERSION: &str = "v1.28.15";
/// The catalogue image of the generated workload pods (it has `ping`).
const POD_IMAGE: &str = "alpine";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Underlay {
    Ospf,
    Ebgp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum NodeAsn {
    PerNode,
    PerRack,
    Shared,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CalicoMode {
    Tor,
    Mesh,
    Rr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Encap {
    None,
    Ipip,
    IpipCrosssubnet,
    Vxlan,
}

/// What `fabsim gen leaf-spine` generates: its command-line options, whose defaults are those of
/// clarifications.md "Defaults for fabsim gen".
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "leaf-spine")]
// Flattened into `fabsim gen`'s `LeafSpine` variant, whose own argument group has this name.
#[group(skip)]
pub struct LeafSpine {
    /// Spine switches (S).
    #[arg(long)]
    pub spines: u32,
    /// Leaf switches (L), one rack each.
    #[arg(long)]
    pub leaves: u32,
    /// Kubernetes nodes behind each leaf (N).
    #[arg(long)]
    pub nodes_per_leaf: u32,
    /// Workload pods on each node.
    #[arg(long, default_value_t = 0)]
    pub pods_per_node: u32,
    #[arg(long, value_enum, default_value_t = Underlay::Ospf)]
    pub underlay: Underlay,
    #[arg(long, value_enum, default_value_t = NodeAsn::PerNode)]
    pub node_asn: NodeAsn,
    #[arg(long, value_enum, default_value_t = CalicoMode::Tor)]
    pub calico: CalicoMode,
    /// The pod pool's encapsulation (ipipMode / vxlanMode).
    #[arg(long, value_enum, default_value_t = Encap::None)]
    pub encap: Encap,
    /// The pod pool's blockSize.
    #[arg(long, default_value_t = 26)]
    pub block_size: u8,
    /// Advertise the service CIDR over BGP (BGPConfiguration serviceClusterIPs).
    #[arg(long)]
    pub advertise_services: bool,
}

impl LeafSpine {
    /// The plan for these sizes with every other option at its command-line default.
    pub fn new(spines: u32, leaves: u32, nodes_per_leaf: u32) -> LeafSpine {
        use clap::Parser;
        let sizes = [spines, leaves, nodes_per_leaf].map(|n| n.to_string());
        LeafSpine::parse_from([
            "leaf-spine",
            "--spines",
            &sizes[0],
            "--leaves",
            &sizes[1],
            "--nodes-per-leaf",
            &sizes[2],
        ])
    }

    /// Spine `s`'s and leaf `l`'s addresses on their link.
    pub fn spine_leaf_addrs(&self, s: u32, l: u32) -> (Ipv4Addr, Ipv4Addr) {
        pair(SPINE_LEAF_BASE, (s - 1) * self.leaves + (l - 1))
    }

    /// Leaf `l`'s and its node `n`'s addresses on their link.
    pub fn leaf_node_addrs(&self, l: u32, n: u32) -> (Ipv4Addr, Ipv4Addr) {
        pair(LEAF_NODE_BASE, self.node_index(l, n))
    }

    fn node_index(&self, l: u32, n: u32) -> u32 {
        (l - 1) * self.nodes_per_leaf + (n - 1)
    }

    pub fn leaf_asn(&self, l: u32) -> u32 {
        LEAF_ASN_BASE + l
    }

    /// Node `n` of leaf `l`'s AS number.
    pub fn node_asn(&self, l: u32, n: u32) -> u32 {
        match (self.calico, self.node_asn) {
            (CalicoMode::Rr, _) => self.leaf_asn(l),
            (_, NodeAsn::PerNode) => NODE_ASN_BASE + self.node_index(l, n),
            (_, NodeAsn::PerRack) => NODE_ASN_BASE + l,
            (_, NodeAsn::Shared) => LEAF_ASN_BASE,
        }
    }

    /// Why these sizes do not fit the plan, if they do not.
    pub fn check(&self) -> Result<(), String> {
        let (s, l, n) = (
            u64::from(self.spines),
            u64::from(self.leaves),
            u64::from(self.nodes_per_leaf),
        );
        if s == 0 || l == 0 || n == 0 {
            return Err("--spines, --leaves and --nodes-per-leaf must be at least 1".into());
        }
        // Each plan range is a /16 of /31s: 32,768 links.
        if s * l > 32_768 {
            return Err(format!(
                "{s} spines x {l} leaves is {} spine-leaf links; 10.254.0.0/16 holds 32768",
                s * l
            ));
        }
        if l * n > 32_768 {
            return Err(format!(
                "{l} leaves x {n} nodes is {} leaf-node links; 10.255.0.0/16 holds 32768",
                l * n
            ));
        }
        if u64::from(LEAF_ASN_BASE) + l >= u64::from(SPINE_ASN) {
            return Err(format!(
                "{l} leaves: leaf ASNs 64512+l must stay below the spines' {SPINE_ASN}"
            ));
        }
        // Calico's IPPool validation, not the pool's size, is the bound: a /10 pool could hold
        // /10 to /32 blocks, but calico-node refuses a blockSize under 20 (calico/datastore.rs).
        if !(20..=32).contains(&self.block_size) {
            return Err(format!(
                "--block-size {}: Calico refuses it (IPv4 block size must be between 20 and 32)",
                self.block_size
            ));
        }
        Ok(())
    }

    /// The topology YAML.
    pub fn generate(&self) -> String {
        let mut out = String::with_capacity(self.estimated_len());
        self.header(&mut out);
        out.push_str("devices:\n");
        for s in 1..=self.spines {
            self.spine(&mut out, s);
        }
        for l in 1..=self.leaves {
            self.leaf(&mut out, l);
        }
        for l in 1..=self.leaves {
            for n in 1..=self.nodes_per_leaf {
                self.node(&mut out, l, n);
            }
        }
        out.push_str("\nlinks:\n");
        for s in 1..=self.spines {
            for l in 1..=self.leaves {
                let _ = writeln!(out, "  - [spine-{s}:Ethernet{l}, leaf-{l}:Ethernet{s}]");
            }
        }
        for l in 1..=self.leaves {
            for n in 1..=self.nodes_per_leaf {
                let port = self.spines + n;
                let _ = writeln!(out, "  - [leaf-{l}:Ethernet{port}, node-{l}-{n}:eth0]");
            }
        }
        self.cluster(&mut out);
        out
    }

    /// Enough for the text, so the buffer grows at most once or twice.
    fn estimated_len(&self) -> usize {
        let (s, l, n) = (self.spines as usize, self.leaves as usize, self.nodes_per_leaf as usize);
        4096 + s * l * 240 + l * 1024 + l * n * 1200
    }

    fn header(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# Generated by `fabsim gen leaf-spine --spines {} --leaves {} --nodes-per-leaf {} \
             --pods-per-node {} --underlay {} --node-asn {} --calico {} --encap {} --block-size {}{}`.\n\
             # The addressing plan is in `fabsim gen leaf-spine --help` and README.md.\n\
             name: leaf-spine-{}x{}x{}\n",
            self.spines,
            self.leaves,
            self.nodes_per_leaf,
            self.pods_per_node,
            value_name(self.underlay),
            value_name(self.node_asn),
            value_name(self.calico),
            value_name(self.encap),
            self.block_size,
            if self.advertise_services {
                " --advertise-services"
            } else {
                ""
            },
            self.spines,
            self.leaves,
            self.nodes_per_leaf,
        );
    }

    fn spine(&self, out: &mut String, s: u32) {
        let _ = write!(out, "  spine-{s}:\n    kind: eos\n    config: |\n");
        for l in 1..=self.leaves {
            routed_port(out, l, self.spine_leaf_addrs(s, l).0);
        }
        match self.underlay {
            Underlay::Ospf => ospf(out, &[], false),
            Underlay::Ebgp => {
                let _ = write!(
                    out,
                    "      router bgp {SPINE_ASN}\n         maximum-paths {}\n",
                    self.spines
                );
                for l in 1..=self.leaves {
                    let leaf = self.spine_leaf_addrs(s, l).1;
                    let _ = writeln!(out, "         neighbor {leaf} remote-as {}", self.leaf_asn(l));
                }
            }
        }
    }

    fn leaf(&self, out: &mut String, l: u32) {
        let _ = write!(out, "  leaf-{l}:\n    kind: eos\n    config: |\n");
        for s in 1..=self.spines {
            routed_port(out, s, self.spine_leaf_addrs(s, l).1);
        }
        for n in 1..=self.nodes_per_leaf {
            routed_port(out, self.spines + n, self.leaf_node_addrs(l, n).0);
        }
        let _ = writeln!(out, "      router bgp {}", self.leaf_asn(l));
        if self.underlay == Underlay::Ebgp {
            let _ = writeln!(out, "         maximum-paths {}", self.spines);
            for s in 1..=self.spines {
                let spine = self.spine_leaf_addrs(s, l).0;
                let _ = writeln!(out, "         neighbor {spine} remote-as {SPINE_ASN}");
            }
        }
        if self.calico != CalicoMode::Mesh {
            for n in 1..=self.nodes_per_leaf {
                let node = self.leaf_node_addrs(l, n).1;
                let _ = writeln!(out, "         neighbor {node} remote-as {}", self.node_asn(l, n));
                if self.calico == CalicoMode::Rr {
                    let _ = writeln!(out, "         neighbor {node} route-reflector-client");
                    if self.underlay == Underlay::Ebgp {
                        // iBGP keeps the spine's next hop, which the node reaches only through
                        // a BGP route itself: BIRD 1.6 installs such routes unreachable.
                        let _ = writeln!(out, "         neighbor {node} next-hop-self");
                    }
                }
            }
        }
        if self.underlay == Underlay::Ebgp {
            out.push_str("         redistribute connected\n");
        } else {
            // Node ports are advertised as stub links, without adjacencies towards hosts.
            let passive: Vec<u32> = (1..=self.nodes_per_leaf).map(|n| self.spines + n).collect();
            ospf(out, &passive, true);
        }
    }

    fn node(&self, out: &mut String, l: u32, n: u32) {
        let (leaf, node) = self.leaf_node_addrs(l, n);
        let _ = write!(
            out,
            "  node-{l}-{n}:\n    kind: k8s-node\n    kubelet: {{version: {KUBELET_VERSION}, node_ip: {node}}}\n    \
             interfaces: [eth0]\n    sysctl: {{net.ipv4.ip_forward: 1}}\n    netplan: |\n      \
             network:\n        version: 2\n        ethernets:\n          eth0:\n            \
             addresses: [{node}/31]\n            routes:\n              - to: default\n                \
             via: {leaf}\n"
        );
    }

    fn cluster(&self, out: &mut String) {
        let cni = crate::catalogue::manifest_urls()
            .into_iter()
            .find(|u| crate::catalogue::manifest(u).is_some_and(|m| m.calico.is_some()))
            .unwrap_or_default();
        // The node's InternalIP is its only address: calico-node's BGP address and tunnel
        // endpoint is then the leaf-facing one whatever other NICs a user adds later.
        let _ = write!(
            out,
            "\ncluster:\n  control_plane: node-1-1\n  pod_network_cidr: {POD_POOL}\n  service_cidr: {SERVICE_CIDR}\n  \
             cni: {cni}\n  calico_env:\n    IP_AUTODETECTION_METHOD: kubernetes-internal-ip\n"
        );
        if self.pods_per_node > 0 {
            let _ = writeln!(out, "  pods: {{per_node: {}, image: {POD_IMAGE}}}", self.pods_per_node);
        }
        let (ipip, vxlan) = match self.encap {
            Encap::None => ("Never", "Never"),
            Encap::Ipip => ("Always", "Never"),
            Encap::IpipCrosssubnet => ("CrossSubnet", "Never"),
            Encap::Vxlan => ("Never", "Always"),
        };
        let _ = write!(
            out,
            "  calico_resources: |\n    apiVersion: projectcalico.org/v3\n    kind: IPPool\n    metadata:\n      \
             name: default-ipv4-ippool\n    spec:\n      cidr: {POD_POOL}\n      blockSize: {}\n      \
             ipipMode: {ipip}\n      vxlanMode: {vxlan}\n      natOutgoing: true\n      nodeSelector: all()\n",
            self.block_size
        );
        let _ = write!(
            out,
            "    ---\n    apiVersion: projectcalico.org/v3\n    kind: BGPConfiguration\n    metadata:\n      \
             name: default\n    spec:\n      nodeToNodeMeshEnabled: {}\n      asNumber: {LEAF_ASN_BASE}\n",
            self.calico == CalicoMode::Mesh
        );
        if self.advertise_services {
            let _ = writeln!(out, "      serviceClusterIPs:\n        - cidr: {SERVICE_CIDR}");
        }
        for l in 1..=self.leaves {
            for n in 1..=self.nodes_per_leaf {
                let (leaf, node) = self.leaf_node_addrs(l, n);
                // The global asNumber covers `shared` nodes outside rr mode.
                let asn = self.node_asn(l, n);
                if asn != LEAF_ASN_BASE {
                    let _ = write!(
                        out,
                        "    ---\n    apiVersion: projectcalico.org/v3\n    kind: Node\n    metadata:\n      \
                         name: node-{l}-{n}\n    spec:\n      bgp:\n        ipv4Address: {node}/31\n        \
                         asNumber: {asn}\n"
                    );
                }
                if self.calico != CalicoMode::Mesh {
                    let _ = write!(
                        out,
                        "    ---\n    apiVersion: projectcalico.org/v3\n    kind: BGPPeer\n    metadata:\n      \
                         name: node-{l}-{n}-leaf\n    spec:\n      node: node-{l}-{n}\n      peerIP: {leaf}\n      \
                         asNumber: {}\n",
                        self.leaf_asn(l)
                    );
                }
            }
        }
    }
}

/// The two ends of the `k`th /31 from `base`: the even address and the odd one.
fn pair(base: Ipv4Addr, k: u32) -> (Ipv4Addr, Ipv4Addr) {
    let even = u32::from(base) + 2 * k;
    (Ipv4Addr::from(even), Ipv4Addr::from(even + 1))
}

fn routed_port(out: &mut String, port: u32, addr: Ipv4Addr) {
    let _ = write!(
        out,
        "      interface Ethernet{port}\n         no switchport\n         ip address {addr}/31\n      !\n"
    );
}

fn ospf(out: &mut String, passive: &[u32], redistribute_bgp: bool) {
    out.push_str("      router ospf 1\n");
    for port in passive {
        let _ = writeln!(out, "         passive-interface Ethernet{port}");
    }
    if redistribute_bgp {
        out.push_str("         redistribute bgp\n");
    }
    out.push_str("         network 0.0.0.0/0 area 0.0.0.0\n");
}

/// An option's value as typed on the command line.
fn value_name<T: ValueEnum>(v: T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}
