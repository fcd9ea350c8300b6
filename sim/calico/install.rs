//! Calico installed on a cluster: the datastore, IPAM, and what calico-node does when it
//! starts on a node (default pool, address autodetection, tunnel address) and what the CNI
//! plugin asks IPAM for each pod.
//!
//! calico-node startup order (`node/pkg/lifecycle/startup/startup.go`, calico-reference.md
//! §3.3, §3.6): autodetect the node's IPv4 address and write it to the Node; create
//! `default-ipv4-ippool` if no IPv4 pool exists; then `allocate-tunnel-addrs` gives the node an
//! IPIP tunnel address from an enabled IPIP pool that selects it (handle
//! `ipip-tunnel-addr-<node>`, the first address of the node's first block).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net};
use sha1::{Digest as _, Sha1};

use super::autodetect::{self, HostFacts};
use super::confd::RenderedBird;
use super::datastore::{ApiGroup, BlockAffinity, Datastore, EncapMode, IpPool, Node, Selector};
use super::ipam::{self, BlockAllocator, IpamError, Pool, TunnelKind};
use crate::diag::{Diagnostic, InputError, Span};
use crate::model::Masquerade;

/// One resource `apply` stored: kind, name and what happened (`created`, `configured`,
/// `unchanged`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub kind: &'static str,
    pub name: String,
    pub outcome: &'static str,
}

/// What `apply` did to each resource of one kind that is new or present after it.
fn diff_kind<T: PartialEq>(
    before: &BTreeMap<String, T>,
    after: &BTreeMap<String, T>,
    kind: &'static str,
    out: &mut Vec<Applied>,
) {
    for (name, v) in after {
        let outcome = match before.get(name) {
            None => "created",
            Some(old) if old == v => continue,
            Some(_) => "configured",
        };
        out.push(Applied {
            kind,
            name: name.clone(),
            outcome,
        });
    }
}

/// The name calico-node gives the pool it creates (`configureIPPools`).
pub const DEFAULT_POOL: &str = "default-ipv4-ippool";

/// Calico on one cluster.
#[derive(Clone, Debug)]
pub struct Calico {
    pub version: String,
    /// calico-node's container environment (from the manifest).
    pub env: BTreeMap<String, String>,
    pub datastore: Datastore,
    /// Blocks and addresses of the pools, in pool-name order; built when the first pool exists.
    pub ipam: Option<BlockAllocator>,
    /// Nodes whose calico-node has started, in start order, with the time it did.
    pub started: Vec<(String, u64)>,
    /// What confd last rendered per node (BIRD reconfigures only when it changes).
    pub rendered: BTreeMap<String, RenderedBird>,
    /// When each resource (`Kind/name`) was created, for AGE columns and timestamps.
    pub created: BTreeMap<String, u64>,
    /// The IPAM plugin the CNI network config (`cni_network_config` of the `calico-config`
    /// ConfigMap) names.
    pub cni_ipam: CniIpam,
}

/// The `ipam` section of Calico's CNI network config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CniIpam {
    /// `{"type": "calico-ipam"}` (the manifest's): addresses from blocks of the IPPools.
    #[default]
    CalicoIpam,
    /// `{"type": "host-local", "subnet": "usePodCidr"}`: addresses from the Node's podCIDR
    /// (`k8s::host_local`).
    HostLocalPodCidr,
}

impl Calico {
    pub fn new(version: &str, env: BTreeMap<String, String>) -> Calico {
        Calico {
            version: version.to_string(),
            env,
            datastore: Datastore::new(),
            ipam: None,
            started: Vec::new(),
            rendered: BTreeMap::new(),
            created: BTreeMap::new(),
            cni_ipam: CniIpam::default(),
        }
    }

    /// calico-node's `USE_POD_CIDR` (an envconfig bool: Go's `strconv.ParseBool`): confd and
    /// felix take the Nodes' podCIDRs as the IPAM blocks, and allocateip gives no tunnel address.
    pub fn use_pod_cidr(&self) -> bool {
        self.env
            .get("USE_POD_CIDR")
            .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
    }

    pub fn is_started(&self, node: &str) -> bool {
        self.started_at(node).is_some()
    }

    /// calico-node's container on `node` is killed: its BIRD stops, and what confd rendered
    /// is gone with it (the next start renders and starts BIRD afresh).
    pub fn stop_node(&mut self, node: &str) {
        self.started.retain(|(n, _)| n != node);
        self.rendered.remove(node);
    }

    /// When calico-node started on `node` (the node's CNI became ready).
    pub fn started_at(&self, node: &str) -> Option<u64> {
        self.started.iter().find(|(n, _)| n == node).map(|(_, t)| *t)
    }

    /// calico-node starts on `node` at `now`. `labels` are the Kubernetes Node's (in the
    /// Kubernetes datastore a Calico Node is that Node, labels included). `kubeadm_pod_subnet`
    /// is the `podSubnet` of the kubeadm-config ConfigMap (the default pool's CIDR when the
    /// manifest sets none).
    pub fn start_node(
        &mut self,
        node: &str,
        labels: BTreeMap<String, String>,
        host: &HostFacts<'_>,
        kubeadm_pod_subnet: Option<Ipv4Net>,
        now: u64,
    ) -> Result<(), String> {
        let method = self.env.get("IP_AUTODETECTION_METHOD").map_or("", String::as_str);
        let address = match self.env.get("IP").map(String::as_str) {
            None | Some("autodetect") | Some("") => autodetect::detect(method, host)?,
            Some(fixed) => fixed
                .parse::<Ipv4Net>()
                .or_else(|_| fixed.parse::<Ipv4Addr>().map(Ipv4Net::from))
                .map_err(|_| format!("Failed to parse IP {fixed:?}"))?,
        };
        // The address first: every node starting compares itself with every Node.
        if let Some(other) = self
            .datastore
            .nodes
            .values()
            .find(|n| n.ipv4_address.map(|a| a.addr()) == Some(address.addr()) && n.name != node)
        {
            return Err(format!(
                "Calico node '{}' is already using the IPv4 address {}",
                other.name,
                address.addr()
            ));
        }
        let entry = self.datastore.nodes.entry(node.to_string()).or_insert_with(|| Node {
            name: node.to_string(),
            span: Span::new("calico-node", 1, 1),
            ..Node::default()
        });
        entry.ipv4_address = Some(address);
        entry.labels.extend(labels);
        self.default_pool(kubeadm_pod_subnet, now)?;
        if !self.is_started(node) {
            self.started.push((node.to_string(), now));
        }
        // allocateip's `run` returns at once under USE_POD_CIDR (the tunnel address would be the
        // podCIDR's first address, which fabsim does not model: FIDELITY.md).
        if self.use_pod_cidr() {
            return Ok(());
        }
        for kind in TunnelKind::ALL {
            self.reconcile_tunnel_addr(node, kind, false, now)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// `configureIPPools`: create the default IPv4 pool from the environment when there is no
    /// IPv4 pool at all.
    fn default_pool(&mut self, kubeadm_pod_subnet: Option<Ipv4Net>, now: u64) -> Result<(), String> {
        if self.datastore.ip_pools.values().any(|p| matches!(p.cidr, IpNet::V4(_))) {
            return Ok(());
        }
        let env = |k: &str| self.env.get(k).map(String::as_str).unwrap_or("");
        let cidr = match env("CALICO_IPV4POOL_CIDR") {
            "" => kubeadm_pod_subnet
                .unwrap_or_else(|| Ipv4Net::new(Ipv4Addr::new(192, 168, 0, 0), 16).unwrap_or_default()),
            text => text
                .parse()
                .map_err(|_| format!("Failed to parse CALICO_IPV4POOL_CIDR {text:?}"))?,
        };
        let mode = |k: &str| -> Result<EncapMode, String> {
            match env(k).to_ascii_lowercase().as_str() {
                "" | "off" | "never" => Ok(EncapMode::Never),
                "crosssubnet" | "cross-subnet" => Ok(EncapMode::CrossSubnet),
                "always" => Ok(EncapMode::Always),
                other => Err(format!("Unrecognized {k} value: {other}")),
            }
        };
        let block_size = match env("CALICO_IPV4POOL_BLOCK_SIZE") {
            "" => 26,
            t => t
                .parse()
                .map_err(|_| format!("Failed to parse CALICO_IPV4POOL_BLOCK_SIZE {t:?}"))?,
        };
        let pool = IpPool {
            name: DEFAULT_POOL.to_string(),
            cidr: IpNet::V4(cidr.trunc()),
            block_size,
            ipip_mode: mode("CALICO_IPV4POOL_IPIP")?,
            vxlan_mode: mode("CALICO_IPV4POOL_VXLAN")?,
            nat_outgoing: !env("CALICO_IPV4POOL_NAT_OUTGOING").eq_ignore_ascii_case("false"),
            disabled: false,
            disable_bgp_export: env("CALICO_IPV4POOL_DISABLE_BGP_EXPORT").eq_ignore_ascii_case("true"),
            node_selector: match env("CALICO_IPV4POOL_NODE_SELECTOR") {
                "" => "all()".to_string(),
                s => s.to_string(),
            },
            allowed_uses: vec!["Workload".into(), "Tunnel".into()],
            api: ApiGroup::V3,
            written_false: Vec::new(),
            span: Span::new("calico-node", 1, 1),
        };
        self.created.insert(format!("IPPool/{}", pool.name), now);
        self.datastore.ip_pools.insert(pool.name.clone(), pool);
        self.rebuild_ipam().map_err(|e| e.to_string())
    }

    /// IPAM's pool list follows the datastore's enabled pools, in name order; blocks already
    /// claimed stay whatever happens to the pools (`disabled` stops new allocations only).
    fn rebuild_ipam(&mut self) -> Result<(), IpamError> {
        // The datastore validated v3 pools already; kubectl-applied ones get only what the
        // arithmetic needs (calico-reference.md §3.2).
        let pools = self
            .datastore
            .ip_pools
            .values()
            .filter(|p| !p.disabled)
            .map(|p| Pool::unvalidated(p.cidr, p.block_size))
            .collect::<Result<Vec<_>, _>>()?;
        match &mut self.ipam {
            Some(a) => a.set_pools(pools),
            None => self.ipam = Some(BlockAllocator::new(pools)),
        }
        Ok(())
    }

    /// `kubectl apply -f` / `calicoctl apply -f`: the resources of `text` go into the datastore
    /// (all or nothing) and take effect. Returns the warnings and, per resource, its kind, name
    /// and whether it was `created`, `configured` or `unchanged`.
    pub fn apply_yaml(
        &mut self,
        text: &str,
        file: &str,
        now: u64,
    ) -> Result<(Vec<Diagnostic>, Vec<Applied>), InputError> {
        let before = self.datastore.clone();
        let warnings = self.datastore.load_yaml(text, file)?;
        let mut applied = Vec::new();
        diff_kind(&before.ip_pools, &self.datastore.ip_pools, "IPPool", &mut applied);
        diff_kind(
            &before.bgp_configurations,
            &self.datastore.bgp_configurations,
            "BGPConfiguration",
            &mut applied,
        );
        diff_kind(&before.bgp_peers, &self.datastore.bgp_peers, "BGPPeer", &mut applied);
        diff_kind(&before.nodes, &self.datastore.nodes, "Node", &mut applied);
        diff_kind(
            &before.block_affinities,
            &self.datastore.block_affinities,
            "BlockAffinity",
            &mut applied,
        );
        if let Err(e) = self.rebuild_ipam() {
            self.datastore = before;
            return Err(Diagnostic::error(Span::new(file, 1, 1), e.to_string()).into());
        }
        for a in applied.iter().filter(|a| a.outcome == "created") {
            self.created.insert(format!("{}/{}", a.kind, a.name), now);
        }
        self.reconcile_vxlan_addrs(now);
        Ok((warnings, applied))
    }

    /// IPAM as a snapshot's dumps observed it (`k8s::observed`), not as fabsim would have
    /// allocated it: a real cluster's history cannot be replayed. Blocks are the dumped
    /// IPAMBlocks (allocations and free list as dumped), then one per dumped BlockAffinity
    /// without one; an address in use (`in_use`: node, address, handle) that no block holds
    /// gets its block of its pool, affine to its node (the block Calico must have claimed for
    /// it). Each address in use is then taken for its handle. An error names the index of the
    /// address in `in_use` it is about.
    pub fn adopt_observed(&mut self, in_use: &[(String, Ipv4Addr, String)]) -> Result<(), (usize, String)> {
        self.rebuild_ipam().map_err(|e| (0, e.to_string()))?;
        let ds = &self.datastore;
        let ipam = self.ipam.get_or_insert_with(|| BlockAllocator::new(Vec::new()));
        let claimed = ipam.claims().len();
        for b in ds.ipam_blocks.values().filter(|b| !b.deleted) {
            let node = b.affinity.as_deref().and_then(|a| a.strip_prefix("host:"));
            let allocations = b.allocations.iter().enumerate().filter_map(|(ordinal, attr)| {
                let handle = b.attributes.get(usize::try_from((*attr)?).ok()?)?.handle_id.clone();
                Some((ordinal as u128, handle.unwrap_or_default()))
            });
            let unallocated = b.unallocated.iter().map(|o| u128::from(*o));
            ipam.adopt(ipam::Block::observed(b.cidr, node, allocations, unallocated));
        }
        for a in ds.block_affinities.values().filter(|a| !a.deleted) {
            if ipam.block(a.cidr).is_none() {
                ipam.adopt(ipam::Block::new(a.cidr, Some(&a.node)));
            }
        }
        for (i, (node, addr, handle)) in in_use.iter().enumerate() {
            let ip = IpAddr::V4(*addr);
            let held = ipam.blocks().find(|b| b.cidr().contains(&ip)).map(ipam::Block::cidr);
            let cidr = match held {
                Some(c) => c,
                None => {
                    let pool = ds
                        .ip_pools
                        .values()
                        .find(|p| p.cidr.contains(&ip))
                        .ok_or_else(|| (i, format!("{addr} is in no IP pool of the calico/ dump")))?;
                    let cidr = IpNet::new(ip, pool.block_size).map_err(|e| (i, e.to_string()))?.trunc();
                    ipam.adopt(ipam::Block::new(cidr, Some(node)));
                    cidr
                }
            };
            if let Some(b) = ipam.block_mut(cidr) {
                b.take(ip, handle).map_err(|e| (i, e.to_string()))?;
            }
        }
        self.sync_affinities(claimed, 0);
        Ok(())
    }

    /// The JSON of a pool as the API group `api` returns it (for a merge patch: kubectl goes
    /// through the CRD, calicoctl through the v3 API).
    pub fn pool_json(&self, name: &str, api: &str) -> Option<serde_json::Value> {
        let p = self.datastore.ip_pools.get(name)?;
        let mut doc = serde_json::json!({
            "apiVersion": api,
            "kind": "IPPool",
            "metadata": {"name": p.name},
            "spec": {
                "allowedUses": p.allowed_uses,
                "blockSize": p.block_size,
                "cidr": p.cidr.to_string(),
                "ipipMode": p.ipip_mode.as_str(),
                "nodeSelector": p.node_selector,
                "vxlanMode": p.vxlan_mode.as_str(),
            }
        });
        // The booleans as stored: true, or a false written explicitly (`IpPool::written_false`);
        // a patch then adds only what it names.
        for (key, v) in [
            ("disabled", p.disabled),
            ("disableBGPExport", p.disable_bgp_export),
            ("natOutgoing", p.nat_outgoing),
        ] {
            if v || p.written_false.contains(&key) {
                doc["spec"][key] = v.into();
            }
        }
        Some(doc)
    }

    /// The JSON of a BGPConfiguration as the v3 API returns it (for `calicoctl patch`): the
    /// fields fabsim models.
    pub fn bgpconfig_json(&self, name: &str) -> Option<serde_json::Value> {
        let c = self.datastore.bgp_configurations.get(name)?;
        let mut spec = serde_json::Map::new();
        if let Some(a) = c.as_number {
            spec.insert("asNumber".into(), a.into());
        }
        if let Some(m) = c.node_to_node_mesh_enabled {
            spec.insert("nodeToNodeMeshEnabled".into(), m.into());
        }
        if let Some(l) = &c.log_severity_screen {
            spec.insert("logSeverityScreen".into(), l.clone().into());
        }
        if let Some(p) = c.listen_port {
            spec.insert("listenPort".into(), p.into());
        }
        for (key, list) in [
            ("serviceClusterIPs", &c.service_cluster_ips),
            ("serviceExternalIPs", &c.service_external_ips),
            ("serviceLoadBalancerIPs", &c.service_load_balancer_ips),
        ] {
            if !list.is_empty() {
                let cidrs: Vec<serde_json::Value> = list.iter().map(|c| serde_json::json!({ "cidr": c })).collect();
                spec.insert(key.into(), cidrs.into());
            }
        }
        Some(serde_json::json!({
            "apiVersion": "projectcalico.org/v3",
            "kind": "BGPConfiguration",
            "metadata": {"name": c.name},
            "spec": spec,
        }))
    }

    /// Delete a pool. Its blocks, affinities and addresses stay (calico-ipam.md: IPAM keeps
    /// blocks until they are empty and released); new allocations stop.
    pub fn delete_pool(&mut self, name: &str) -> bool {
        if self.datastore.ip_pools.remove(name).is_none() {
            return false;
        }
        self.created.remove(&format!("IPPool/{name}"));
        // The pool set only shrinks, which cannot make a pool invalid.
        let _ = self.rebuild_ipam();
        self.reconcile_vxlan_addrs(0);
        true
    }

    /// Delete BlockAffinities (`kubectl delete blockaffinities NAME|--all`): the blocks and
    /// their addresses stay, but the node no longer uses them for new addresses, and confd
    /// drops their blackhole and aggregation. Returns the names deleted, in name order.
    pub fn delete_affinities(&mut self, only: Option<&str>) -> Vec<String> {
        let names: Vec<String> = self
            .datastore
            .block_affinities
            .keys()
            .filter(|n| only.is_none_or(|o| o == n.as_str()))
            .cloned()
            .collect();
        for n in &names {
            self.created.remove(&format!("BlockAffinity/{n}"));
            if let Some(a) = self.datastore.block_affinities.remove(n) {
                if let Some(ipam) = &mut self.ipam {
                    ipam.delete_affinity(&a.node, a.cidr);
                }
            }
        }
        names
    }

    /// `allocate-tunnel-addrs` for one encapsulation: an address (handle
    /// `<kind>-tunnel-addr-<node>`) when an enabled IPv4 pool uses the encapsulation and the
    /// node has none; with `release`, also give the address back when no such pool remains
    /// (`removeHostTunnelAddr`).
    fn reconcile_tunnel_addr(
        &mut self,
        node: &str,
        kind: TunnelKind,
        release: bool,
        now: u64,
    ) -> Result<(), IpamError> {
        let wanted = self
            .datastore
            .ip_pools
            .values()
            .any(|p| !p.disabled && kind.mode(p) != EncapMode::Never && matches!(p.cidr, IpNet::V4(_)));
        let Some(has) = self.datastore.nodes.get(node).map(|n| kind.addr(n)) else {
            return Ok(());
        };
        let addr = match (wanted, has) {
            (true, None) => Some(self.assign(node, &kind.handle(node), now)?),
            (false, Some(old)) if release => {
                // An address IPAM no longer holds (released by hand) leaves only the Node field.
                let _ = self.release(old);
                None
            }
            _ => return Ok(()),
        };
        if let Some(n) = self.datastore.nodes.get_mut(node) {
            *kind.addr_mut(n) = addr;
        }
        Ok(())
    }

    /// allocateip also runs as a service and follows pool changes. fabsim reconciles VXLAN
    /// addresses only: the seed lab needs its IPIP addresses kept as they were when calico-node
    /// started (seed-lab.md, "Do not reconcile tunnel addresses until s3a"). A failure is
    /// allocateip's own (it logs and restarts); the change that caused it stands.
    fn reconcile_vxlan_addrs(&mut self, now: u64) {
        let nodes: Vec<String> = self.started.iter().map(|(n, _)| n.clone()).collect();
        for node in nodes {
            let _ = self.reconcile_tunnel_addr(&node, TunnelKind::Vxlan, true, now);
        }
    }

    /// The CNI plugin's `AutoAssign` of one IPv4 address for a pod (handle
    /// `k8s-pod-network.<container id>`); fabsim's pods are IPv4-only.
    pub fn assign(&mut self, node: &str, handle: &str, now: u64) -> Result<Ipv4Addr, IpamError> {
        match self.assign_any(node, handle, now)? {
            IpAddr::V4(a) => Ok(a),
            IpAddr::V6(_) => Err(IpamError::NoPools { node: node.into() }),
        }
    }

    /// `AutoAssign` from the enabled pools (IPv4 or IPv6) that select the node, BlockAffinities
    /// kept in step with the blocks IPAM claims.
    pub fn assign_any(&mut self, node: &str, handle: &str, now: u64) -> Result<IpAddr, IpamError> {
        let selecting = self.pools_selecting(node);
        let ipam = self
            .ipam
            .as_mut()
            .ok_or_else(|| IpamError::NoPools { node: node.into() })?;
        let claimed = ipam.claims().len();
        // IPAM serves a request from the pools `determinePools` picked for it; the allocator
        // keeps every enabled pool between requests.
        let enabled = ipam.pools().to_vec();
        ipam.set_pools(selecting);
        let addr = ipam.auto_assign(node, handle);
        ipam.set_pools(enabled);
        let addr = addr?;
        self.sync_affinities(claimed, now);
        Ok(addr)
    }

    /// `determinePools` (libcalico-go `lib/ipam/ipam.go`): the enabled pools whose
    /// `nodeSelector` selects the node's labels (in the Kubernetes datastore, the Kubernetes
    /// Node's), in IPAM's pool order. Affine blocks in a pool that no longer selects the node
    /// are not used (Calico also releases them when empty: not modelled).
    fn pools_selecting(&self, node: &str) -> Vec<Pool> {
        let no_labels = BTreeMap::new();
        let labels = self.datastore.nodes.get(node).map_or(&no_labels, |n| &n.labels);
        self.datastore
            .ip_pools
            .values()
            .filter(|p| !p.disabled)
            .filter(|p| Selector::parse(&p.node_selector).is_ok_and(|s| s.matches(labels)))
            .filter_map(|p| Pool::unvalidated(p.cidr, p.block_size).ok())
            .collect()
    }

    /// The CNI plugin's `ReleaseByHandle` when a pod goes.
    pub fn release(&mut self, addr: Ipv4Addr) -> Result<String, IpamError> {
        let ipam = self.ipam.as_mut().ok_or(IpamError::NotAllocated(IpAddr::V4(addr)))?;
        ipam.release(IpAddr::V4(addr))
    }

    /// A BlockAffinity for each block IPAM claimed since it had `from` claims, as IPAM writes
    /// them when it claims (`confirmed`). Claiming is the only way IPAM gains an affinity, so
    /// only new claims need syncing (all affinities on every assignment was quadratic).
    fn sync_affinities(&mut self, from: usize, now: u64) {
        let Some(ipam) = &self.ipam else { return };
        for (node, cidr) in ipam.claims().iter().skip(from) {
            let name = ipam::affinity_name(node, *cidr);
            self.created.entry(format!("BlockAffinity/{name}")).or_insert(now);
            self.datastore
                .block_affinities
                .entry(name.clone())
                .or_insert_with(|| BlockAffinity {
                    name,
                    node: node.clone(),
                    cidr: *cidr,
                    state: "confirmed".into(),
                    deleted: false,
                    span: Span::new("ipam", 1, 1),
                });
        }
    }

    /// The pool an address belongs to.
    pub fn pool_of(&self, addr: Ipv4Addr) -> Option<&IpPool> {
        self.datastore
            .ip_pools
            .values()
            .find(|p| p.cidr.contains(&IpAddr::V4(addr)))
    }

    /// Does any enabled pool use this encapsulation (felix then creates `tunl0` or
    /// `vxlan.calico`)?
    pub fn encap_enabled(&self, kind: TunnelKind) -> bool {
        self.datastore
            .ip_pools
            .values()
            .any(|p| !p.disabled && kind.mode(p) != EncapMode::Never)
    }

    /// The MAC of `node`'s VXLAN device, as felix's VXLAN resolver gives it to the node itself
    /// and to every other node's FDB (`felix/calc/vxlan_resolver.go` `vtepMACForHost`): the
    /// Node's `vxlanTunnelMACAddr` when set, else `0x66` (`'f'`) followed by the first five
    /// bytes of SHA-1(node name). Not random, and not written back to the Node.
    pub fn vtep_mac(&self, node: &str) -> [u8; 6] {
        if let Some(mac) = self.datastore.nodes.get(node).and_then(|n| n.vxlan_tunnel_mac) {
            return mac;
        }
        let sha = Sha1::digest(node.as_bytes());
        [b'f', sha[0], sha[1], sha[2], sha[3], sha[4]]
    }

    /// felix's natOutgoing rule (`felix/dataplane/linux/masq_mgr.go`): sources in any pool with
    /// natOutgoing (the `cali40masq-ipam-pools` ipset), destinations outside every pool,
    /// disabled ones included (`cali40all-ipam-pools`: the manager adds each pool's CIDR
    /// whatever its state). No natOutgoing pool: the chain is empty (`NATOutgoingChain`).
    pub fn nat_outgoing(&self) -> Option<Masquerade> {
        let v4 = |p: &IpPool| match p.cidr {
            IpNet::V4(n) => Some(n),
            IpNet::V6(_) => None,
        };
        let pools = self.datastore.ip_pools.values();
        let src: Vec<Ipv4Net> = pools.clone().filter(|p| p.nat_outgoing).filter_map(v4).collect();
        (!src.is_empty()).then(|| Masquerade {
            src,
            not_dst: pools.filter_map(v4).collect(),
        })
    }

    /// The MTU felix gives workloads: the host's less the largest enabled encapsulation
    /// overhead (calico-reference.md §5).
    pub fn pod_mtu(&self, host_mtu: u32) -> u32 {
        TunnelKind::ALL
            .into_iter()
            .filter(|k| self.encap_enabled(*k))
            .map(|k| tunnel_mtu(k, host_mtu))
            .min()
            .unwrap_or(host_mtu)
    }
}

/// The MTU felix gives a tunnel device on a host with `host_mtu` (`int_dataplane.go`
/// `ConfigureDefaultMTUs`: IPIP 20 bytes of overhead, VXLAN 50).
pub fn tunnel_mtu(kind: TunnelKind, host_mtu: u32) -> u32 {
    match kind {
        TunnelKind::Ipip => host_mtu.saturating_sub(20),
        TunnelKind::Vxlan => host_mtu.saturating_sub(50),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nat_outgoing_masquerades_its_pools_towards_outside_every_pool() {
        let mut c = Calico::new("v3.25.0", BTreeMap::new());
        assert_eq!(c.nat_outgoing(), None);
        let pools = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: a}\n\
                     spec: {cidr: 10.66.0.0/16, natOutgoing: true}\n---\n\
                     apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: b}\n\
                     spec: {cidr: 10.77.0.0/16, disabled: true}\n";
        c.apply_yaml(pools, "pools.yaml", 0).expect("valid pools");
        let m = c.nat_outgoing().expect("a natOutgoing pool exists");
        let ip = |s: &str| s.parse::<Ipv4Addr>().expect("address");
        assert!(m.matches(ip("10.66.1.1"), ip("8.8.8.8")));
        assert!(!m.matches(ip("10.66.1.1"), ip("10.66.2.1")), "pod to pod");
        assert!(
            !m.matches(ip("10.66.1.1"), ip("10.77.0.1")),
            "a disabled pool is still a pool"
        );
        assert!(!m.matches(ip("10.77.0.1"), ip("8.8.8.8")), "b has no natOutgoing");
    }

    #[test]
    fn vtep_mac_is_derived_from_the_node_name_unless_pinned() {
        let mut c = Calico::new("v3.25.0", BTreeMap::new());
        // 'f' then SHA-1("n1")[0..5] = 40 b3 ea b6 3f.
        assert_eq!(c.vtep_mac("n1"), [0x66, 0x40, 0xb3, 0xea, 0xb6, 0x3f]);
        let node = "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: n1}\n\
                    spec: {vxlanTunnelMACAddr: 'aa:bb:cc:dd:ee:0f'}\n";
        c.apply_yaml(node, "node.yaml", 0).expect("valid node");
        assert_eq!(c.vtep_mac("n1"), [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0x0f]);
        let bad = node.replace("aa:bb:cc:dd:ee:0f", "aa:bb");
        assert!(c.apply_yaml(&bad, "node.yaml", 0).is_err());
    }
}
