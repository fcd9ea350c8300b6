//! Cilium as the cluster's CNI, as far as a pod CIDR migration touches it (k8s-cidr-migrations.md
//! §1.3, §2.4 step 4, §2.6 P0-1, §5 C4/C11): the `cilium-config` ConfigMap's IPAM settings, the
//! operator's cluster-pool allocator, each node's agent with the range it allocates pod
//! addresses from, and the agent state in `/var/run/cilium/` that outlives the Node.
//!
//! Sources (cilium/cilium, read through the code index; the whole repository was too large to
//! mirror, so each file is one stored version, named in FIDELITY.md):
//! - `pkg/option/config.go`: with `ipam: kubernetes` or `cluster-pool` the agent forces
//!   `K8sRequireIPv4PodCIDR`; `pkg/k8s/init.go` `retrieveNodeInformation` then takes the range
//!   from the Node's `spec.podCIDR` (`kubernetes`) or the CiliumNode's `spec.ipam.podCIDRs`
//!   (`cluster-pool`), retries while there is none (`required IPv4 PodCIDR not available`) and
//!   gives up with `Unable to derive PodCIDR via Node or CiliumNode resource, giving up`.
//! - `pkg/ipam/allocator/podcidr/podcidr.go`: the operator keeps a CiliumNode's podCIDRs
//!   (`reuseIPNets`: occupied again, never moved), gives a CiliumNode without any the next block
//!   of the first list entry that is not full (`allocateFirstFreeCIDR`; one cidrset per entry,
//!   the same cidrset as kube-controller-manager's: `node_ipam::RangeAllocator`), reports
//!   `allocator full` in the CiliumNode's status when every entry is, `allocator not configured
//!   for the requested CIDR …` for a podCIDR no entry holds, and releases a deleted node's block.
//! - `daemon/cmd/ipam.go` `allocateDatapathIPs`: the router IP restored from the node's state
//!   is allocated again if the new range holds it; if not, `Router IP could not be re-allocated.
//!   Need to re-allocate. This will cause brief network disruption`: cilium_host is deleted and
//!   the router gets a fresh address from the new range. `allocateHealthIPs` then takes one for
//!   the health endpoint.
//!
//! What the state does NOT do: with `ipam: kubernetes` the agent takes its range from the Node,
//! never from `/var/run/cilium/`, so a node re-registered with a new podCIDR gives pods the new
//! range even when the directory was kept; the kept state costs the router address (and a brief
//! disruption). The reference's P0-1 ("came back with the old range") is therefore reported as
//! what the code does; FIDELITY.md says where the two differ.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::node_ipam::RangeAllocator;

/// What a run says once, at the command that installs Cilium: its datapath (eBPF programs,
/// `cilium_host`, the routes between nodes) is not modelled, so its pods have addresses but no
/// network, and the reachability matrix and the Service and DNS checks leave them out rather
/// than report every pod as broken.
pub const DATAPATH_UNMODELLED: &str = "Cilium's datapath (eBPF, cilium_host, routes between nodes) is not modelled: its pods get addresses, but they are left out of the reachability matrix and of the Service and DNS checks";

pub const NAMESPACE: &str = "kube-system";
pub const CONFIGMAP: &str = "cilium-config";
pub const DAEMONSET: &str = "cilium";
pub const OPERATOR: &str = "cilium-operator";
/// The agent's state directory (a hostPath; `/var/run` is a tmpfs, so a reboot clears it).
pub const STATE_DIR: &str = "/var/run/cilium";
/// The agent's fatal log line when no range arrives (`pkg/k8s/init.go`).
const NO_POD_CIDR: &str = "Unable to derive PodCIDR via Node or CiliumNode resource, giving up";
/// `allocateDatapathIPs`'s warning for a restored router IP the new range does not hold.
pub const ROUTER_NOT_REALLOCATED: &str =
    "Router IP could not be re-allocated. Need to re-allocate. This will cause brief network disruption";
/// `ErrAllocatorFull`'s text, the CiliumNode's `status.ipam.operator-status.error`.
const ALLOCATOR_FULL: &str = "allocator full";

/// Where the agent's per-node range comes from (`ipam` in cilium-config).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ipam {
    /// `kubernetes`: the Node's `spec.podCIDR` (kube-controller-manager's node IPAM).
    Kubernetes,
    /// `cluster-pool`: the operator carves `cluster-pool-ipv4-cidr` (a space-separated list,
    /// helm's `clusterPoolIPv4PodCIDRList`) into `cluster-pool-ipv4-mask-size` blocks.
    ClusterPool { pools: Vec<Ipv4Net>, mask: u8 },
}

/// The `cilium-config` keys fabsim reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub ipam: Ipam,
    /// `ipv4-native-routing-cidr` (older releases: `native-routing-cidr`): destinations Cilium
    /// does not masquerade pod traffic to.
    pub native_routing_cidr: Option<Ipv4Net>,
    /// The ConfigMap's `data` as applied (`kubectl get cm cilium-config`).
    pub data: BTreeMap<String, String>,
}

impl Config {
    /// The ConfigMap's `data`, checked: an unknown `ipam` mode, a CIDR that does not parse or a
    /// mask the pool cannot hold is an error naming the key.
    pub fn from_data(data: BTreeMap<String, String>) -> Result<Config, String> {
        let what = format!("ConfigMap {NAMESPACE}/{CONFIGMAP}");
        let cidr = |key: &str, v: &str| {
            v.parse::<Ipv4Net>()
                .map(|n| n.trunc())
                .map_err(|_| format!("{what}: {key} `{v}` is not an IPv4 CIDR"))
        };
        let ipam = match data.get("ipam").map(String::as_str).unwrap_or("cluster-pool") {
            "kubernetes" => Ipam::Kubernetes,
            "cluster-pool" => {
                let list = data
                    .get("cluster-pool-ipv4-cidr")
                    .map(String::as_str)
                    .unwrap_or_default();
                let pools = list
                    .split_whitespace()
                    .map(|v| cidr("cluster-pool-ipv4-cidr", v))
                    .collect::<Result<Vec<_>, _>>()?;
                if pools.is_empty() {
                    return Err(format!("{what}: ipam cluster-pool needs cluster-pool-ipv4-cidr"));
                }
                let mask_text = data
                    .get("cluster-pool-ipv4-mask-size")
                    .map(String::as_str)
                    .unwrap_or("24");
                let mask: u8 = mask_text
                    .parse()
                    .map_err(|_| format!("{what}: cluster-pool-ipv4-mask-size `{mask_text}` is not a prefix length"))?;
                for pool in &pools {
                    RangeAllocator::new(*pool, mask).map_err(|e| format!("{what}: {e}"))?;
                }
                Ipam::ClusterPool { pools, mask }
            }
            other => {
                return Err(format!(
                    "{what}: ipam `{other}`: fabsim models Cilium's kubernetes and cluster-pool IPAM modes"
                ))
            }
        };
        let routing = data
            .get("ipv4-native-routing-cidr")
            .or_else(|| data.get("native-routing-cidr"));
        let native_routing_cidr = match routing {
            Some(v) if !v.is_empty() => Some(cidr("ipv4-native-routing-cidr", v)?),
            _ => None,
        };
        Ok(Config {
            ipam,
            native_routing_cidr,
            data,
        })
    }
}

/// The operator's cluster-pool allocator and the CiliumNodes' `spec.ipam.podCIDRs`.
#[derive(Clone, Debug, Default)]
pub struct Operator {
    /// One cidrset per list entry, in the list's order.
    pools: Vec<RangeAllocator>,
    /// Each CiliumNode's podCIDR.
    pub pod_cidrs: BTreeMap<String, Ipv4Net>,
    /// Each CiliumNode's `status.ipam.operator-status.error`.
    pub errors: BTreeMap<String, String>,
}

impl Operator {
    /// The operator (re)starts with the pool list and mask it read from cilium-config: the
    /// CiliumNodes' podCIDRs are occupied again in the entry that holds them, or reported.
    pub fn start(&mut self, pools: &[Ipv4Net], mask: u8) -> Result<(), String> {
        self.pools = pools
            .iter()
            .map(|p| RangeAllocator::new(*p, mask))
            .collect::<Result<_, _>>()?;
        self.errors.clear();
        for (node, cidr) in &self.pod_cidrs {
            let pool = self.pools.iter_mut().find(|p| p.settings().0.contains(cidr));
            match pool {
                Some(p) => p.occupy(*cidr)?,
                None => {
                    self.errors.insert(
                        node.clone(),
                        format!("allocator not configured for the requested CIDR {cidr}"),
                    );
                }
            }
        }
        Ok(())
    }

    /// The CiliumNode's podCIDR: the one it has, or the next block of the first entry with a
    /// free one.
    pub fn allocate(&mut self, node: &str) -> Option<Ipv4Net> {
        if let Some(c) = self.pod_cidrs.get(node) {
            return Some(*c);
        }
        let next = self
            .pools
            .iter_mut()
            .find(|p| p.free_count() > 0)
            .and_then(|p| p.allocate_next().ok());
        match next {
            Some(c) => {
                self.pod_cidrs.insert(node.to_string(), c);
                self.errors.remove(node);
            }
            None => {
                self.errors.insert(node.to_string(), ALLOCATOR_FULL.into());
            }
        }
        next
    }

    /// The CiliumNode is gone (its Node's deletion): its block is free again.
    pub fn release(&mut self, node: &str) {
        self.errors.remove(node);
        if let Some(c) = self.pod_cidrs.remove(node) {
            if let Some(p) = self.pools.iter_mut().find(|p| p.settings().0.contains(&c)) {
                // The block was occupied in this entry; a release cannot fail for it.
                let _ = p.release(c);
            }
        }
    }
}

/// What the agent keeps in `/var/run/cilium/state`: the router (cilium_host) address of its
/// last run, the range it allocated from, and its endpoints' addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir {
    pub router: Ipv4Addr,
    pub range: Ipv4Net,
    /// Pod endpoints by address (the container ID they were allocated to).
    pub endpoints: BTreeMap<Ipv4Addr, String>,
}

/// A router address restored from a state directory of another range and discarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discarded {
    pub router: Ipv4Addr,
    pub old_range: Ipv4Net,
    pub new_range: Ipv4Net,
}

/// The agent of a node's cilium pod at its last start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agent {
    Running {
        range: Ipv4Net,
        router: Ipv4Addr,
        health: Ipv4Addr,
        /// The restored router address it could not keep, if any.
        discarded: Option<Discarded>,
    },
    /// It exited with this log line (the pod crash-loops).
    Failed(String),
}

#[derive(Clone, Debug)]
pub struct Cilium {
    pub version: String,
    /// When its manifest was applied (the ConfigMap's creationTimestamp).
    pub created_ms: u64,
    pub config: Config,
    /// The pool list and mask the running operator read at its start.
    pub operator: Operator,
    pub agents: BTreeMap<String, Agent>,
    /// Each host's `/var/run/cilium/state`, which outlives the Node and the agent.
    pub state: BTreeMap<String, StateDir>,
}

impl Cilium {
    pub fn new(version: &str, config: Config, now: u64) -> Result<Cilium, String> {
        let mut operator = Operator::default();
        if let Ipam::ClusterPool { pools, mask } = &config.ipam {
            operator.start(pools, *mask)?;
        }
        Ok(Cilium {
            version: version.to_string(),
            created_ms: now,
            config,
            operator,
            agents: BTreeMap::new(),
            state: BTreeMap::new(),
        })
    }

    /// ConfigMap kube-system/cilium-config as the apiserver holds it (`kubectl get cm`).
    pub fn config_map(&self) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1",
            "data": self.config.data,
            "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
        })
    }

    /// `kubectl rollout restart deployment cilium-operator`: the operator reads the ConfigMap's
    /// pool list and mask again (appended entries become allocatable; CiliumNodes keep theirs).
    pub fn restart_operator(&mut self) -> Result<(), String> {
        if let Ipam::ClusterPool { pools, mask } = &self.config.ipam {
            self.operator.start(pools, *mask)?;
        }
        Ok(())
    }

    /// The node's agent starts: its range (the Node's podCIDR, or the CiliumNode's from the
    /// operator), then the router address (restored from the state directory if the range
    /// holds it) and the health endpoint's.
    pub fn start(&mut self, node: &str, node_pod_cidr: Option<Ipv4Net>) {
        let range = match self.config.ipam {
            Ipam::Kubernetes => node_pod_cidr.map(|c| c.trunc()),
            Ipam::ClusterPool { .. } => self.operator.allocate(node),
        };
        let Some(range) = range else {
            self.agents.insert(node.to_string(), Agent::Failed(NO_POD_CIDR.into()));
            return;
        };
        let kept = self.state.remove(node);
        let (restored_router, endpoints, discarded) = match kept {
            Some(s) if range.contains(&s.router) => {
                // Endpoints whose address the range holds are restored; others cannot be.
                let eps = s.endpoints.into_iter().filter(|(ip, _)| range.contains(ip)).collect();
                (Some(s.router), eps, None)
            }
            Some(s) => (
                None,
                BTreeMap::new(),
                Some(Discarded {
                    router: s.router,
                    old_range: s.range,
                    new_range: range,
                }),
            ),
            None => (None, BTreeMap::new(), None),
        };
        let mut state = StateDir {
            router: restored_router.unwrap_or(Ipv4Addr::UNSPECIFIED),
            range,
            endpoints,
        };
        let agent = match restored_router.map(Ok).unwrap_or_else(|| next_free(&state, &[])) {
            Err(e) => Agent::Failed(format!("Unable to allocate router IP for family ipv4: {e}")),
            Ok(router) => {
                state.router = router;
                match next_free(&state, &[]) {
                    Err(e) => Agent::Failed(format!(
                        "unable to allocate health IPs: {e},see https://cilium.link/ipam-range-full"
                    )),
                    Ok(health) => Agent::Running {
                        range,
                        router,
                        health,
                        discarded,
                    },
                }
            }
        };
        self.state.insert(node.to_string(), state);
        self.agents.insert(node.to_string(), agent);
    }

    /// The node's cilium pod is gone: the agent stops; its state directory stays.
    pub fn stop(&mut self, node: &str) {
        self.agents.remove(node);
    }

    /// The Node is deleted: its agent stops and its CiliumNode (owned by the Node) goes, so
    /// the operator frees its block.
    pub fn node_deleted(&mut self, node: &str) {
        self.stop(node);
        self.operator.release(node);
    }

    /// `rm -rf /var/run/cilium[/state]` on a host.
    pub fn clear_state(&mut self, node: &str) {
        self.state.remove(node);
    }

    /// The host rebooted: `/var/run` is a tmpfs.
    pub fn reboot(&mut self, node: &str) {
        self.stop(node);
        self.clear_state(node);
    }

    pub fn is_started(&self, node: &str) -> bool {
        self.agents.contains_key(node)
    }

    /// The kubelet's network readiness: the agent writes its CNI configuration once it runs.
    pub fn cni_ready(&self, node: &str) -> bool {
        matches!(self.agents.get(node), Some(Agent::Running { .. }))
    }

    /// The CNI ADD of sandbox `container_id` on `node`: the next free address of the agent's
    /// range, or the error the runtime reports after `plugin type="cilium-cni" failed (add): `.
    pub fn add(&mut self, node: &str, container_id: &str) -> Result<Ipv4Addr, String> {
        // The kubelet adds pods only on a Ready node, which needs a running agent (`cni_ready`);
        // the text below is fabsim's, not cilium-cni's.
        let Some(Agent::Running { health, .. }) = self.agents.get(node) else {
            return Err(format!("the cilium agent on {node} is not running"));
        };
        let health = *health;
        let state = self.state.get_mut(node).ok_or("the agent's state is missing")?;
        let ip =
            next_free(state, &[health]).map_err(|e| format!("unable to allocate IP via local cilium agent: {e}"))?;
        state.endpoints.insert(ip, container_id.to_string());
        Ok(ip)
    }

    /// The CNI DEL of a pod's address on `node`.
    pub fn release(&mut self, node: &str, ip: Ipv4Addr) {
        if let Some(s) = self.state.get_mut(node) {
            s.endpoints.remove(&ip);
        }
    }

    /// The range the agent of `node` allocates from, while it runs.
    pub fn range(&self, node: &str) -> Option<Ipv4Net> {
        match self.agents.get(node)? {
            Agent::Running { range, .. } => Some(*range),
            Agent::Failed(_) => None,
        }
    }

    /// Findings about the agents and the operator (§2.6 P0-1, §5 C4, C11): an agent that
    /// exits, a state directory kept from another range, a CiliumNode the operator could not
    /// give a block, and kube-controller-manager's cluster CIDR outside the native-routing CIDR.
    pub fn findings(&self, cluster_cidr: Option<Ipv4Net>) -> Vec<String> {
        let mut out = Vec::new();
        for (node, agent) in &self.agents {
            match agent {
                Agent::Failed(log) => out.push(format!(
                    "cilium-agent on {node} exits ({log}): the {DAEMONSET} pod is in CrashLoopBackOff and the node \
                     stays NotReady (k8s-cidr-migrations.md §5 C4)"
                )),
                Agent::Running { discarded: Some(d), .. } => out.push(format!(
                    "{node}: {STATE_DIR}/ was not cleared before the node rejoined: the agent restored router IP {} \
                     of the old range {}, which the new range {} does not hold (\"{ROUTER_NOT_REALLOCATED}\"); it \
                     re-created cilium_host and gives pods addresses from {} — the old range is not kept with \
                     ipam: kubernetes or cluster-pool (k8s-cidr-migrations.md §2.6 P0-1, §5 C11; FIDELITY.md)",
                    d.router, d.old_range, d.new_range, d.new_range
                )),
                Agent::Running { .. } => {}
            }
        }
        for (node, error) in &self.operator.errors {
            out.push(format!(
                "CiliumNode {node}: cilium-operator could not allocate a podCIDR ({error}): append a CIDR to \
                 cluster-pool-ipv4-cidr in ConfigMap {NAMESPACE}/{CONFIGMAP} and restart the operator \
                 (k8s-cidr-migrations.md §1.3)"
            ));
        }
        if let (Ipam::Kubernetes, Some(routing), Some(cidr)) =
            (&self.config.ipam, self.config.native_routing_cidr, cluster_cidr)
        {
            if !routing.contains(&cidr) {
                out.push(format!(
                    "ConfigMap {NAMESPACE}/{CONFIGMAP}: ipv4-native-routing-cidr {routing} does not contain \
                     kube-controller-manager's --cluster-cidr {cidr}: Cilium treats pod addresses outside it as \
                     external (k8s-cidr-migrations.md §3 Cilium, §5 C4)"
                ));
            }
        }
        out
    }
}

/// The lowest address of the state's range that is neither its network nor broadcast address
/// nor taken (router, endpoints, `also`). Cilium's allocator picks a random free one
/// (`randomScanStrategy`); fabsim takes the lowest so runs are reproducible (FIDELITY.md).
fn next_free(state: &StateDir, also: &[Ipv4Addr]) -> Result<Ipv4Addr, String> {
    let range = state.range;
    let taken: BTreeSet<Ipv4Addr> = state
        .endpoints
        .keys()
        .copied()
        .chain([state.router])
        .chain(also.iter().copied())
        .collect();
    let first = u32::from(range.network()).saturating_add(1);
    let last = u32::from(range.broadcast()).saturating_sub(1);
    (first..=last)
        .map(Ipv4Addr::from)
        .find(|ip| !taken.contains(ip))
        .ok_or_else(|| "range is full".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().expect("prefix")
    }

    fn config(pairs: &[(&str, &str)]) -> Result<Config, String> {
        Config::from_data(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn the_configmap_is_read_and_bad_values_are_named() {
        let c = config(&[
            ("ipam", "cluster-pool"),
            ("cluster-pool-ipv4-cidr", "10.0.0.0/16 10.1.0.0/16"),
            ("cluster-pool-ipv4-mask-size", "24"),
        ])
        .expect("valid");
        assert_eq!(
            c.ipam,
            Ipam::ClusterPool {
                pools: vec![net("10.0.0.0/16"), net("10.1.0.0/16")],
                mask: 24
            }
        );
        let k = config(&[("ipam", "kubernetes"), ("native-routing-cidr", "10.112.0.0/16")]).expect("valid");
        assert_eq!(
            (k.ipam, k.native_routing_cidr),
            (Ipam::Kubernetes, Some(net("10.112.0.0/16")))
        );
        assert_eq!(
            config(&[("ipam", "eni")]).expect_err("not modelled"),
            "ConfigMap kube-system/cilium-config: ipam `eni`: fabsim models Cilium's kubernetes and cluster-pool IPAM modes"
        );
        assert_eq!(
            config(&[("cluster-pool-ipv4-cidr", "10.0.0.0/33")]).expect_err("bad CIDR"),
            "ConfigMap kube-system/cilium-config: cluster-pool-ipv4-cidr `10.0.0.0/33` is not an IPv4 CIDR"
        );
        assert!(config(&[
            ("cluster-pool-ipv4-cidr", "10.0.0.0/24"),
            ("cluster-pool-ipv4-mask-size", "16")
        ])
        .expect_err("mask shorter than the pool")
        .contains("the node CIDR size is too big"));
    }

    #[test]
    fn the_operator_fills_the_first_entry_then_the_appended_one_and_keeps_allocations() {
        let mut op = Operator::default();
        op.start(&[net("10.0.0.0/23")], 24).expect("valid");
        assert_eq!(op.allocate("n1"), Some(net("10.0.0.0/24")));
        assert_eq!(op.allocate("n2"), Some(net("10.0.1.0/24")));
        assert_eq!(op.allocate("n3"), None);
        assert_eq!(op.errors["n3"], "allocator full");
        // The list gets an entry appended and the operator restarts.
        op.start(&[net("10.0.0.0/23"), net("10.8.0.0/23")], 24).expect("valid");
        assert_eq!(op.allocate("n3"), Some(net("10.8.0.0/24")));
        assert_eq!(op.allocate("n1"), Some(net("10.0.0.0/24")), "kept");
        assert!(op.errors.is_empty());
        // An entry removed from the list: the CiliumNode holding a block of it is reported.
        op.start(&[net("10.8.0.0/23")], 24).expect("valid");
        assert_eq!(
            op.errors["n1"],
            "allocator not configured for the requested CIDR 10.0.0.0/24"
        );
    }

    #[test]
    fn a_rejoined_node_takes_the_new_pod_cidr_and_a_kept_state_costs_its_router_ip() {
        let k = config(&[("ipam", "kubernetes")]).expect("valid");
        let mut c = Cilium::new("v1.14.5", k, 0).expect("valid");
        c.start("n2", Some(net("10.112.1.0/24")));
        assert_eq!(
            c.agents["n2"],
            Agent::Running {
                range: net("10.112.1.0/24"),
                router: Ipv4Addr::new(10, 112, 1, 1),
                health: Ipv4Addr::new(10, 112, 1, 2),
                discarded: None
            }
        );
        assert_eq!(c.add("n2", "a"), Ok(Ipv4Addr::new(10, 112, 1, 3)));
        // The agent restarts in the same range: router and endpoints are restored.
        c.stop("n2");
        c.start("n2", Some(net("10.112.1.0/24")));
        assert_eq!(c.add("n2", "b"), Ok(Ipv4Addr::new(10, 112, 1, 4)));
        // Deleted, re-registered with a new podCIDR, state kept.
        c.node_deleted("n2");
        c.start("n2", Some(net("10.212.4.0/22")));
        let Agent::Running { range, discarded, .. } = &c.agents["n2"] else {
            panic!("runs")
        };
        assert_eq!(*range, net("10.212.4.0/22"));
        assert_eq!(
            *discarded,
            Some(Discarded {
                router: Ipv4Addr::new(10, 112, 1, 1),
                old_range: net("10.112.1.0/24"),
                new_range: net("10.212.4.0/22")
            })
        );
        assert_eq!(c.add("n2", "c"), Ok(Ipv4Addr::new(10, 212, 4, 3)));
        assert!(c.findings(None)[0].starts_with("n2: /var/run/cilium/ was not cleared"));
        // Cleared: a clean start, no finding.
        c.node_deleted("n2");
        c.clear_state("n2");
        c.start("n2", Some(net("10.212.8.0/22")));
        assert!(c.findings(None).is_empty());
        c.start("n3", None);
        assert_eq!(c.agents["n3"], Agent::Failed(NO_POD_CIDR.into()));
        assert!(!c.cni_ready("n3"));
    }

    #[test]
    fn a_full_node_range_fails_the_add() {
        let k = config(&[("ipam", "kubernetes")]).expect("valid");
        let mut c = Cilium::new("v1.14.5", k, 0).expect("valid");
        c.start("n1", Some(net("10.0.0.0/29")));
        for id in ["a", "b", "c", "d"] {
            assert!(
                c.add("n1", id).is_ok(),
                "8 addresses: network, broadcast, router, health, 4 pods"
            );
        }
        assert_eq!(
            c.add("n1", "e"),
            Err("unable to allocate IP via local cilium agent: range is full".into())
        );
    }
}
