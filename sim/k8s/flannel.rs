//! Flannel as `kube-flannel.yml` installs it (flannel v0.28: flanneld `--ip-masq
//! --kube-subnet-mgr`, the VXLAN backend, the `flannel` CNI plugin delegating to `bridge` and
//! `host-local`), and the host state it leaves behind — the part of a CIDR migration that goes
//! wrong on Flannel clusters (k8s-cidr-migrations.md §2.4 step 5, §2.6 P1-8, §5 C4 and C11).
//!
//! Sources (read in the upstream repositories, not guessed):
//! - flanneld's kube subnet manager (`pkg/subnet/kube/kube.go` `AcquireLease`): the node's lease
//!   is its `spec.podCIDR`; none → `node "N" pod cidr not assigned`; one outside the ConfigMap's
//!   `Network` → `subnet "NET" specified in the flannel net config doesn't contain "CIDR"
//!   PodCIDR of the "N" node`. The VXLAN backend wraps either as `failed to acquire lease: …`
//!   (`pkg/backend/vxlan/vxlan.go`) and `main.go` logs `Error registering network: …` and exits:
//!   the pod crash-loops. flanneld reads `net-conf.json` only when it starts.
//! - on success it gives `flannel.1` (VNI 1, the kernel's default port 8472, MTU host − 50) the
//!   lease's network address as a /32, replacing any other address (`EnsureV4AddressOnLink`),
//!   routes every other node's lease `via <its network address> dev flannel.1 onlink` with
//!   ARP and FDB entries for its VTEP (`vxlan_network.go`), installs the masquerade rules and
//!   writes `/run/flannel/subnet.env` (`subnet.WriteSubnetFile`: `FLANNEL_SUBNET` is the lease's
//!   first address). The routes, rules and files stay when flanneld stops.
//! - the CNI plugin (`flannel-io/cni-plugin` `flannel_linux.go`) reads subnet.env at every ADD
//!   (missing: `failed to load flannel 'subnet.env' file: …`) and delegates to `bridge` with
//!   `isGateway`, `isDefaultGateway` and host-local ranges `[FLANNEL_SUBNET]`, routes
//!   `[FLANNEL_NETWORK]`; host-local keeps its reservations in `/var/lib/cni/networks/cbr0`
//!   (the network's name in `cni-conf.json`).
//! - the bridge plugin (`containernetworking/plugins` `plugins/main/bridge/bridge.go`) creates
//!   `cni0` at the first ADD and gives it the gateway (`ensureAddr`); when cni0 already holds
//!   another IPv4 address and `forceAddress` is off (flannel never sets it) the ADD fails with
//!   `failed to set bridge addr: "cni0" already has an IP address different from GW/LEN`,
//!   after host-local's reservation is released again. Nothing but `ip link delete cni0` (or a
//!   reboot) removes the old address: this is what a node re-homed to a new podCIDR runs into.
//!
//! The reference (§2.6 P1-8) says stale interfaces give "new IPs but no connectivity"; the code
//! above gives that only when flanneld cannot take the new lease (the ConfigMap's `Network`
//! not updated) and the CNI keeps reading the old subnet.env. A stale `cni0` alone makes the
//! ADD fail: pods stay ContainerCreating with the bridge plugin's error (FIDELITY.md).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use sha1::{Digest, Sha1};

use super::command::CommandOutcome;
use super::host_local::HostLocalStore;
use crate::calico::install::tunnel_mtu;
use crate::calico::ipam::TunnelKind;
use crate::model::{Masquerade, Network};

/// The namespace, DaemonSet and ConfigMap of kube-flannel.yml.
pub const NAMESPACE: &str = "kube-flannel";
pub const DAEMONSET: &str = "kube-flannel-ds";
pub const CONFIGMAP: &str = "kube-flannel-cfg";
/// flanneld's `--subnet-file` default.
pub const SUBNET_ENV: &str = "/run/flannel/subnet.env";
/// The bridge the `bridge` plugin creates (its default name).
pub const BRIDGE: &str = "cni0";
/// The VXLAN backend's device for VNI 1.
pub const VXLAN_DEVICE: &str = "flannel.1";
pub const VNI: u32 = 1;
/// flannel's `Port` 0 leaves the kernel's default VXLAN port.
pub const VXLAN_PORT: u16 = 8472;
/// host-local's reservations for the `cbr0` network.
pub const STATE_DIR: &str = "/var/lib/cni/networks/cbr0";

/// `/run/flannel/subnet.env` as flanneld writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubnetEnv {
    pub network: Ipv4Net,
    /// `FLANNEL_SUBNET`: the lease's first address with its prefix (the bridge's gateway).
    pub subnet: Ipv4Net,
    pub mtu: u32,
    pub ipmasq: bool,
}

impl SubnetEnv {
    /// The file's text (`WriteSubnetFile`).
    pub fn text(&self) -> String {
        format!(
            "FLANNEL_NETWORK={}\nFLANNEL_SUBNET={}\nFLANNEL_MTU={}\nFLANNEL_IPMASQ={}\n",
            self.network, self.subnet, self.mtu, self.ipmasq
        )
    }
}

/// What flanneld on a node did when it last started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flanneld {
    /// It holds the node's podCIDR as its lease and runs.
    Registered { lease: Ipv4Net },
    /// It exited with this log line (the pod is in CrashLoopBackOff).
    Failed(String),
}

/// One host's Flannel state: files and interfaces, which outlive the Node and flanneld.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// `/etc/cni/net.d/10-flannel.conflist`, written by the pod's install-cni init container.
    pub cni_conf: bool,
    pub subnet_env: Option<SubnetEnv>,
    /// `cni0`'s address (the gateway and prefix the bridge plugin gave it), once created.
    pub bridge: Option<Ipv4Net>,
    /// `flannel.1`'s /32, once flanneld configured it.
    pub vtep: Option<Ipv4Addr>,
    /// Routes flanneld programmed through flannel.1 (other nodes' leases), as it left them.
    pub routes: Vec<Ipv4Net>,
    /// The masquerade rules' network, once flanneld installed them.
    pub masq: Option<Ipv4Net>,
    pub host_local: HostLocalStore,
}

#[derive(Clone, Debug)]
pub struct Flannel {
    pub version: String,
    /// `Network` in the ConfigMap's `net-conf.json`.
    pub network: Ipv4Net,
    /// flanneld of each node's current pod, by node name.
    pub daemons: BTreeMap<String, Flanneld>,
    /// The leases other nodes see: a Node whose flanneld registered carries its public IP and
    /// VTEP in annotations, and its podCIDR is the lease, until the Node is deleted.
    pub leases: BTreeMap<String, Ipv4Net>,
    pub hosts: BTreeMap<String, Host>,
}

impl Flannel {
    pub fn new(version: &str, network: Ipv4Net) -> Flannel {
        Flannel {
            version: version.to_string(),
            network,
            daemons: BTreeMap::new(),
            leases: BTreeMap::new(),
            hosts: BTreeMap::new(),
        }
    }

    /// The node's flannel pod starts: install-cni writes the CNI configuration, then flanneld
    /// takes its lease (the Node's podCIDR) and, if it may, configures the host.
    pub fn start(&mut self, node: &str, pod_cidr: Option<Ipv4Net>, host_mtu: u32) {
        let network = self.network;
        let host = self.hosts.entry(node.to_string()).or_default();
        host.cni_conf = true;
        let lease = match pod_cidr {
            None => Err(format!("node \"{node}\" pod cidr not assigned")),
            Some(c) if !network.contains(&c) => Err(format!(
                "subnet \"{network}\" specified in the flannel net config doesn't contain \"{c}\" PodCIDR of the \"{node}\" node"
            )),
            Some(c) => Ok(c.trunc()),
        };
        let state = match lease {
            Ok(lease) => {
                host.vtep = Some(lease.network());
                host.masq = Some(network);
                host.subnet_env = Some(SubnetEnv {
                    network,
                    subnet: Ipv4Net::new(Ipv4Addr::from(u32::from(lease.network()) + 1), lease.prefix_len())
                        .unwrap_or(lease),
                    mtu: tunnel_mtu(TunnelKind::Vxlan, host_mtu),
                    ipmasq: true,
                });
                self.leases.insert(node.to_string(), lease);
                Flanneld::Registered { lease }
            }
            Err(e) => Flanneld::Failed(format!("Error registering network: failed to acquire lease: {e}")),
        };
        self.daemons.insert(node.to_string(), state);
    }

    /// The node's flannel pod is gone (deleted, the node reset or deleted): flanneld stops;
    /// what it configured stays.
    pub fn stop(&mut self, node: &str) {
        self.daemons.remove(node);
    }

    /// The Node is deleted: its flannel pod and its lease go (the other flannelds remove
    /// their routes to it).
    pub fn node_deleted(&mut self, node: &str) {
        self.stop(node);
        self.leases.remove(node);
    }

    pub fn is_started(&self, node: &str) -> bool {
        self.daemons.contains_key(node)
    }

    /// The host rebooted: `/run` is a tmpfs and interfaces are not persistent; host-local's
    /// directory and the CNI configuration are on disk.
    pub fn reboot(&mut self, node: &str) {
        self.stop(node);
        if let Some(h) = self.hosts.get_mut(node) {
            h.subnet_env = None;
            h.bridge = None;
            h.vtep = None;
            h.routes.clear();
            h.masq = None;
        }
    }

    /// The kubelet's network readiness: a CNI configuration in `/etc/cni/net.d`.
    pub fn cni_ready(&self, node: &str) -> bool {
        self.hosts.get(node).is_some_and(|h| h.cni_conf)
    }

    /// The CNI ADD of sandbox `container_id` on `node`: the address, or the plugin chain's
    /// error as the runtime reports it after `plugin type="flannel" failed (add): `.
    pub fn add(&mut self, node: &str, container_id: &str) -> Result<Ipv4Addr, String> {
        let host = self.hosts.entry(node.to_string()).or_default();
        let Some(env) = host.subnet_env else {
            return Err(format!(
                "failed to load flannel 'subnet.env' file: open {SUBNET_ENV}: no such file or directory. \
                 Check the flannel pod log for this node."
            ));
        };
        let ip = host
            .host_local
            .allocate(env.subnet.trunc(), container_id)
            .map_err(|e| format!("failed to delegate add: failed to allocate for range 0: {e}"))?;
        match host.bridge {
            Some(addr) if addr != env.subnet => {
                // bridge's deferred `ipam.ExecDel` on failure.
                host.host_local.release(ip);
                Err(format!(
                    "failed to delegate add: failed to set bridge addr: \"{BRIDGE}\" already has an IP address different from {}",
                    env.subnet
                ))
            }
            _ => {
                host.bridge = Some(env.subnet);
                Ok(ip)
            }
        }
    }

    /// The CNI DEL of a pod's address on `node`.
    pub fn release(&mut self, node: &str, ip: Ipv4Addr) {
        if let Some(h) = self.hosts.get_mut(node) {
            h.host_local.release(ip);
        }
    }

    /// The prefix a pod's `eth0` address carries (host-local's range) and its gateway.
    pub fn pod_subnet(&self, node: &str) -> Option<Ipv4Net> {
        self.hosts.get(node).and_then(|h| h.bridge)
    }

    /// flanneld's masquerade rules on a host (`--ip-masq`): pod traffic leaving the flannel
    /// network, multicast aside. (flannel also masquerades traffic from outside the network
    /// to other nodes' pods; fabsim's MASQUERADE model has one source set, so that rule is not
    /// modelled: FIDELITY.md.)
    pub fn masquerade(&self, node: &str) -> Option<Masquerade> {
        let network = self.hosts.get(node)?.masq?;
        Some(Masquerade {
            src: vec![network],
            not_dst: vec![
                network,
                Ipv4Net::new(Ipv4Addr::new(224, 0, 0, 0), 4).unwrap_or_default(),
            ],
        })
    }

    /// The VTEP MAC of `node`'s flannel.1. flannel draws a random locally administered unicast
    /// MAC (`pkg/mac`) and keeps it in the Node's annotations; fabsim derives it from the node
    /// name (SHA-1) with the same two bits, so runs are reproducible.
    pub fn vtep_mac(node: &str) -> [u8; 6] {
        let sha = Sha1::digest(node.as_bytes());
        [(sha[0] & 0xfe) | 0x02, sha[1], sha[2], sha[3], sha[4], sha[5]]
    }

    /// Findings about the nodes' Flannel state (§5 C4, C11): a flanneld that exits, a CNI that
    /// hands out addresses from a subnet.env older than the Node's podCIDR, a `cni0` holding
    /// another range than the one the CNI now allocates from.
    pub fn findings(&self, pod_cidrs: &BTreeMap<String, Option<Ipv4Net>>) -> Vec<String> {
        let mut out = Vec::new();
        for (node, pod_cidr) in pod_cidrs {
            if let Some(Flanneld::Failed(log)) = self.daemons.get(node) {
                out.push(format!(
                    "flanneld on {node} exits ({log}): the {DAEMONSET} pod is in CrashLoopBackOff; the node's \
                     routes to and from other nodes' pods are not programmed for its podCIDR (set Network in \
                     ConfigMap {NAMESPACE}/{CONFIGMAP} to cover the pod range and restart the flannel pods, \
                     k8s-cidr-migrations.md §2.4 step 5)"
                ));
            }
            let Some(host) = self.hosts.get(node) else { continue };
            if let (Some(env), Some(cidr)) = (host.subnet_env, pod_cidr) {
                if env.subnet.trunc() != *cidr {
                    out.push(format!(
                        "{node}: {SUBNET_ENV} still says FLANNEL_SUBNET={} while the Node's podCIDR is {cidr}: new pods \
                         there get addresses from the old subnet, which no other node routes to this node",
                        env.subnet
                    ));
                }
            }
            if let (Some(env), Some(bridge)) = (host.subnet_env, host.bridge) {
                if env.subnet != bridge {
                    out.push(format!(
                        "{node}: {BRIDGE} still holds {bridge} while flannel's subnet is {}: every new pod's CNI ADD \
                         fails (\"{BRIDGE}\" already has an IP address different from {}); delete it (ip link \
                         delete {BRIDGE}) before pods start there (k8s-cidr-migrations.md §2.6 P1-8, §5 C11)",
                        env.subnet, env.subnet
                    ));
                }
            }
        }
        out
    }
}

/// `kubectl apply -f` of ConfigMap kube-flannel/kube-flannel-cfg: its `net-conf.json` gives
/// the `Network` flanneld reads at its next start (the running ones keep theirs: restart the
/// DaemonSet's pods, §2.4 step 5).
pub(super) fn apply_config(net: &mut Network, doc: &serde_json::Value) -> Result<CommandOutcome, String> {
    let what = format!("ConfigMap {NAMESPACE}/{CONFIGMAP}");
    let text = doc
        .pointer("/data/net-conf.json")
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("{what}: data.net-conf.json is missing"))?;
    let conf: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{what}: net-conf.json is not JSON: {e}"))?;
    let network = conf
        .get("Network")
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("{what}: net-conf.json has no Network"))?;
    let network: Ipv4Net = network
        .parse()
        .map_err(|_| format!("{what}: net-conf.json Network `{network}` is not an IPv4 CIDR"))?;
    let backend = conf.pointer("/Backend/Type").and_then(|v| v.as_str()).unwrap_or("udp");
    if backend != "vxlan" {
        return Err(format!(
            "{what}: backend `{backend}`: fabsim models flannel's vxlan backend"
        ));
    }
    let flannel = net
        .cluster
        .as_deref_mut()
        .and_then(|c| c.flannel.as_mut())
        .ok_or_else(|| {
            format!("kubectl apply of {what}: Flannel is not installed (kubectl apply -f kube-flannel.yml first)")
        })?;
    let verb = if flannel.network == network.trunc() {
        "unchanged"
    } else {
        "configured"
    };
    flannel.network = network.trunc();
    Ok(CommandOutcome::ok(format!("configmap/{CONFIGMAP} {verb}\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().expect("prefix")
    }

    #[test]
    fn the_lease_is_the_pod_cidr_inside_network_or_flanneld_exits() {
        let mut f = Flannel::new("v0.28.9", net("10.244.0.0/16"));
        f.start("n1", Some(net("10.244.1.0/24")), 1500);
        assert_eq!(
            f.daemons["n1"],
            Flanneld::Registered {
                lease: net("10.244.1.0/24")
            }
        );
        let env = f.hosts["n1"].subnet_env.expect("written");
        assert_eq!(
            env.text(),
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
        );
        assert_eq!(f.hosts["n1"].vtep, Some(Ipv4Addr::new(10, 244, 1, 0)));
        f.start("n2", Some(net("10.245.3.0/24")), 1500);
        assert_eq!(
            f.daemons["n2"],
            Flanneld::Failed(
                "Error registering network: failed to acquire lease: subnet \"10.244.0.0/16\" specified in the flannel \
                 net config doesn't contain \"10.245.3.0/24\" PodCIDR of the \"n2\" node"
                    .into()
            )
        );
        f.start("n3", None, 1500);
        assert!(matches!(&f.daemons["n3"], Flanneld::Failed(l) if l.ends_with("node \"n3\" pod cidr not assigned")));
        assert!(f.cni_ready("n3"), "install-cni ran before flanneld");
    }

    #[test]
    fn a_stale_cni0_fails_the_add_and_gives_the_address_back() {
        let mut f = Flannel::new("v0.28.9", net("10.244.0.0/8"));
        f.start("n2", Some(net("10.244.1.0/24")), 1500);
        assert_eq!(f.add("n2", "a"), Ok(Ipv4Addr::new(10, 244, 1, 2)));
        // Re-homed: a new podCIDR, cni0 still has the old gateway.
        f.stop("n2");
        f.start("n2", Some(net("10.245.3.0/24")), 1500);
        let err = f.add("n2", "b").expect_err("cni0 is stale");
        assert_eq!(
            err,
            "failed to delegate add: failed to set bridge addr: \"cni0\" already has an IP address different from 10.245.3.1/24"
        );
        assert_eq!(
            f.hosts["n2"].host_local.reserved().count(),
            1,
            "only the old pod's file"
        );
        f.hosts.get_mut("n2").expect("host").bridge = None;
        assert_eq!(
            f.add("n2", "c"),
            Ok(Ipv4Addr::new(10, 245, 3, 3)),
            "host-local's cursor moved past .2"
        );
    }

    #[test]
    fn without_subnet_env_the_cni_cannot_add() {
        let mut f = Flannel::new("v0.28.9", net("10.244.0.0/16"));
        f.start("n1", Some(net("10.244.1.0/24")), 1500);
        f.reboot("n1");
        assert!(f
            .add("n1", "a")
            .expect_err("no subnet.env")
            .starts_with("failed to load flannel 'subnet.env' file"));
    }

    #[test]
    fn the_vtep_mac_is_local_and_unicast() {
        let mac = Flannel::vtep_mac("n1");
        assert_eq!(mac[0] & 0x03, 0x02);
        assert_ne!(mac, Flannel::vtep_mac("n2"));
    }
}
