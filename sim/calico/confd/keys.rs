//! The key/value view confd renders from (Calico v3.25.0 `confd/pkg/backends/calico/client.go`
//! plus the syncer's `bgpnodeprocessor.go` / `ippoolprocessor.go`). Typed, but every map is keyed
//! by the last path segment of the real key so that iteration is memkv's order (`ls`, `lsdir`
//! and `gets` return entries sorted by key string).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use crate::calico::datastore::{split_peer_ip, BgpConfiguration, BgpPeer, Datastore, EncapMode, Selector};

/// BGP's well-known port: `combineIPAndPort` (libcalico-go model/bgppeer.go) leaves it out of
/// the key, though the peer's JSON still carries it.
const DEFAULT_BGP_PORT: u16 = 179;

/// One v1 peering (client.go `bgpPeer`, the JSON the templates read as `$data`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Peer {
    pub ip: String,
    /// Serialised with `json:"as_num,string"`: always text.
    pub as_num: String,
    pub rr_cluster_id: String,
    pub password: Option<String>,
    pub source_addr: String,
    pub port: u16,
    pub keep_next_hop: bool,
    pub restart_time: String,
    pub calico_node: bool,
    pub num_allow_local_as: i32,
    pub ttl_security: u8,
    pub reachable_by: String,
}

/// Per-host keys under `/calico/bgp/v1/host/<name>/`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Host {
    /// Whether a Node produced this host's keys (a per-node BGPConfiguration alone does not
    /// create `ip_addr_v4`).
    pub is_node: bool,
    /// Always present; "" when the node has no IPv4 (bgpnodeprocessor).
    pub ip_addr_v4: String,
    pub ip_addr_v6: String,
    /// Absent without an IPv4 address.
    pub network_v4: Option<String>,
    /// Absent unless the Node sets an AS.
    pub as_num: Option<String>,
    /// Always present; "" unless set.
    pub rr_cluster_id: String,
    /// From BGPConfiguration `node.<name>`.
    pub listen_port: Option<u16>,
    pub loglevel: Option<String>,
    /// `peer_v4/<ip>[-<port>]`.
    pub peers_v4: BTreeMap<String, Peer>,
}

/// A v1 IPv4 pool (`/calico/v1/ipam/v4/pool/<ip>-<len>`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Pool {
    pub cidr: String,
    /// "tunl0" iff ipipMode is Always or CrossSubnet.
    pub ipip: String,
    /// "always" / "cross-subnet" / "".
    pub ipip_mode: String,
    pub vxlan_mode: String,
    pub masquerade: bool,
    pub ipam: bool,
    pub disabled: bool,
    #[serde(rename = "disableBGPExport")]
    pub disable_bgp_export: bool,
}

/// Everything the three templates read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keys {
    /// `/global/as_num`, default "64512" (client.go `globalDefaults`).
    pub global_as: String,
    /// `/global/node_mesh`, default enabled.
    pub node_mesh_enabled: bool,
    /// `/global/loglevel`, default "info".
    pub loglevel: String,
    pub listen_port: Option<u16>,
    pub bind_mode: Option<String>,
    pub node_mesh_password: Option<String>,
    pub node_mesh_restart_time: Option<String>,
    pub ignored_interfaces: Option<String>,
    pub svc_cluster_ips: Option<String>,
    pub svc_external_ips: Option<String>,
    pub svc_loadbalancer_ips: Option<String>,
    /// `/global/peer_v4/<ip>[-<port>]`.
    pub global_peers_v4: BTreeMap<String, Peer>,
    pub hosts: BTreeMap<String, Host>,
    /// Host names by each of their addresses (`ip_addr_v4` and `ip_addr_v6`, "" included), in
    /// name order: a peering looks its node up here instead of scanning every host, which made
    /// a build O(nodes × peerings).
    hosts_by_ip: BTreeMap<String, BTreeSet<String>>,
    /// `/calico/ipam/v2/host/<node>/ipv4/block/<ip>-<len>` → affinity state.
    pub blocks: BTreeMap<String, BTreeMap<String, String>>,
    pub pools_v4: BTreeMap<String, Pool>,
    /// `/calico/staticroutes/<ip>-<len>` per node (service advertisement can exclude a node).
    pub static_routes: BTreeMap<String, BTreeSet<String>>,
    /// `/calico/rejectcidrs/<ip>-<len>`.
    pub reject_cidrs: BTreeSet<String>,
}

/// Key form of a CIDR: `strings.Replace(cidr, "/", "-", 1)`.
pub(crate) fn cidr_key(cidr: &str) -> String {
    cidr.replacen('/', "-", 1)
}

/// Back from key form: the templates do `join (split . "-") "/"`.
pub(crate) fn key_cidr(key: &str) -> String {
    key.replace('-', "/")
}

fn canonical_ip(s: &str) -> Option<String> {
    s.parse::<IpAddr>().ok().map(|a| a.to_string())
}

impl Keys {
    pub(crate) fn build(ds: &Datastore, pod_cidrs: Option<&BTreeMap<String, Vec<ipnet::Ipv4Net>>>) -> Keys {
        let global = ds.bgp_configurations.get("default");
        let mut k = Keys {
            global_as: global
                .and_then(|g| g.as_number)
                .map_or_else(|| "64512".to_string(), |a| a.to_string()),
            node_mesh_enabled: global.and_then(|g| g.node_to_node_mesh_enabled).unwrap_or(true),
            loglevel: global.and_then(loglevel).unwrap_or_else(|| "info".to_string()),
            listen_port: global.and_then(|g| g.listen_port).filter(|p| *p != 0),
            bind_mode: global.and_then(|g| g.bind_mode.clone()),
            node_mesh_restart_time: global.and_then(|g| g.node_mesh_max_restart_time).map(|s| s.to_string()),
            // The password is read through the secret watcher from calico-node's namespace.
            node_mesh_password: global
                .and_then(|g| g.node_mesh_password.as_ref())
                .and_then(|r| ds.secret("kube-system", r).or_else(|| ds.secret("calico-system", r)))
                .map(str::to_string),
            ignored_interfaces: global.and_then(|g| g.ignored_interfaces.as_ref()).map(|v| v.join(",")),
            svc_cluster_ips: global
                .map(|g| g.service_cluster_ips.join(","))
                .filter(|s| !s.is_empty()),
            svc_external_ips: global
                .map(|g| g.service_external_ips.join(","))
                .filter(|s| !s.is_empty()),
            svc_loadbalancer_ips: global
                .map(|g| g.service_load_balancer_ips.join(","))
                .filter(|s| !s.is_empty()),
            ..Keys::default()
        };
        k.hosts_from(ds);
        k.peers_from(ds);
        k.ipam_from(ds, pod_cidrs);
        k.routes_from(ds);
        k
    }

    /// bgpnodeprocessor: one set of keys per Node; per-node BGPConfiguration `node.<name>`
    /// adds listen_port and loglevel (client.go `updateBGPConfigCache`).
    fn hosts_from(&mut self, ds: &Datastore) {
        for n in ds.nodes.values() {
            let h = Host {
                is_node: true,
                ip_addr_v4: n.ipv4_address.map(|a| a.addr().to_string()).unwrap_or_default(),
                ip_addr_v6: n.ipv6_address.as_deref().and_then(v6_addr).unwrap_or_default(),
                network_v4: n.ipv4_address.map(|a| a.trunc().to_string()),
                as_num: n.as_number.map(|a| a.to_string()),
                rr_cluster_id: n.route_reflector_cluster_id.clone().unwrap_or_default(),
                ..Host::default()
            };
            self.hosts.insert(n.name.clone(), h);
        }
        for (name, cfg) in &ds.bgp_configurations {
            let Some(node) = name.strip_prefix("node.") else {
                continue;
            };
            let h = self.hosts.entry(node.to_string()).or_default();
            h.listen_port = cfg.listen_port.filter(|p| *p != 0);
            h.loglevel = loglevel(cfg);
        }
    }

    /// The v1 peerings (client.go `updatePeersV1`): global BGPPeers first, then node-specific
    /// ones (dropped where a global peering to the same ip:port exists), then reverse
    /// peerings; the first entry for a key wins. Calico walks its BGPPeers in Go map order;
    /// fabsim walks them by name, which only matters when two BGPPeers produce the same key.
    fn peers_from(&mut self, ds: &Datastore) {
        for (name, h) in &self.hosts {
            for ip in [&h.ip_addr_v4, &h.ip_addr_v6] {
                self.hosts_by_ip.entry(ip.clone()).or_default().insert(name.clone());
            }
        }
        let node_ips: BTreeSet<&str> = self
            .hosts
            .values()
            .flat_map(|h| [h.ip_addr_v4.as_str(), h.ip_addr_v6.as_str()])
            .filter(|s| !s.is_empty())
            .collect();
        let mut global: BTreeMap<String, Peer> = BTreeMap::new();
        let mut per_node: BTreeMap<(String, String), Peer> = BTreeMap::new();
        for global_pass in [true, false] {
            for p in ds.bgp_peers.values() {
                let is_global = p.node_selector.is_none() && p.node.is_none();
                if global_pass != is_global {
                    continue;
                }
                let locals: Vec<String> = if let Some(sel) = &p.node_selector {
                    self.matching(ds, sel)
                } else {
                    p.node.iter().cloned().collect()
                };
                let mut peers = Vec::new();
                if let Some(sel) = &p.peer_selector {
                    for n in self.matching(ds, sel) {
                        peers.extend(self.node_as_peers(&n, true, true, p));
                    }
                } else {
                    let (host, mut port) = split_peer_ip(p.peer_ip.as_deref().unwrap_or(""));
                    let Some(ip) = canonical_ip(&host) else {
                        continue;
                    };
                    if port == 0 {
                        // A peer without a port that is a Calico node is reached on that
                        // node's (or the global) listen port.
                        if let Some(n) = self.nodes_with_ip_port_as(&ip, p.as_number, 0).first() {
                            port = self.hosts[n].listen_port.or(self.listen_port).unwrap_or(0);
                        }
                    }
                    peers.push(Peer {
                        calico_node: node_ips.contains(ip.as_str()),
                        ip,
                        as_num: p.as_number.to_string(),
                        rr_cluster_id: String::new(),
                        password: None,
                        source_addr: String::new(),
                        port,
                        keep_next_hop: p.keep_original_next_hop,
                        restart_time: String::new(),
                        num_allow_local_as: p.num_allowed_local_as_numbers.unwrap_or(0),
                        ttl_security: p.ttl_security.unwrap_or(0),
                        reachable_by: p.reachable_by.clone().unwrap_or_default(),
                    });
                }
                for peer in &mut peers {
                    self.set_v3_fields(peer, p, ds);
                }
                for peer in peers {
                    let key = peer_key(&peer);
                    if global_pass {
                        global.entry(key).or_insert(peer);
                    } else {
                        for local in &locals {
                            if !global.contains_key(&key) {
                                per_node
                                    .entry((local.clone(), key.clone()))
                                    .or_insert_with(|| peer.clone());
                            }
                        }
                    }
                }
            }
        }
        // Reverse peerings: the nodes the BGPPeer points at peer back with the nodes it
        // selects, so that both ends of a Calico-to-Calico session are configured.
        for p in ds.bgp_peers.values() {
            let (locals, v4, v6) = if let Some(sel) = &p.peer_selector {
                (self.matching(ds, sel), true, true)
            } else {
                let (host, port) = split_peer_ip(p.peer_ip.as_deref().unwrap_or(""));
                let ip = canonical_ip(&host).unwrap_or(host);
                let v6 = ip.contains(':');
                (self.nodes_with_ip_port_as(&ip, p.as_number, port), !v6, v6)
            };
            if locals.is_empty() {
                continue;
            }
            let remotes = match (&p.node_selector, &p.node) {
                (Some(sel), _) => self.matching(ds, sel),
                (None, Some(n)) => vec![n.clone()],
                (None, None) => self.hosts.keys().cloned().collect(),
            };
            let mut peers = Vec::new();
            for r in &remotes {
                peers.extend(self.node_as_peers(r, v4, v6, p));
            }
            for peer in &mut peers {
                self.set_v3_fields(peer, p, ds);
            }
            for peer in peers {
                let key = peer_key(&peer);
                for local in &locals {
                    if !global.contains_key(&key) {
                        per_node
                            .entry((local.clone(), key.clone()))
                            .or_insert_with(|| peer.clone());
                    }
                }
            }
        }
        // Only IPv4 peerings reach the IPv4 templates (v6 ones live under peer_v6).
        let is_v4 = |p: &Peer| !p.ip.contains(':');
        self.global_peers_v4 = global.into_iter().filter(|(_, p)| is_v4(p)).collect();
        for ((node, key), peer) in per_node.into_iter().filter(|(_, p)| is_v4(p)) {
            self.hosts.entry(node).or_default().peers_v4.insert(key, peer);
        }
    }

    /// Names of the nodes a selector matches (Calico's nodeLabelManager).
    fn matching(&self, ds: &Datastore, sel: &str) -> Vec<String> {
        match Selector::parse(sel) {
            Ok(s) => ds.nodes_matching(&s).into_iter().map(str::to_string).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// client.go `nodesWithIPPortAndAS`, including its port check: with a node-specific port
    /// equal to the requested one, the global port is still compared (the `else if`).
    fn nodes_with_ip_port_as(&self, ip: &str, as_num: u32, port: u16) -> Vec<String> {
        let want = if as_num == 0 {
            self.global_as.clone()
        } else {
            as_num.to_string()
        };
        let mut out = Vec::new();
        let with_ip = self.hosts_by_ip.get(ip).into_iter().flatten();
        for (name, h) in with_ip.filter_map(|n| Some((n, self.hosts.get(n)?))) {
            if *h.as_num.as_ref().unwrap_or(&self.global_as) != want {
                continue;
            }
            let node_port_differs = h.listen_port.is_some_and(|p| p != port);
            if port != 0 && (node_port_differs || self.listen_port.is_some_and(|g| g != port)) {
                continue;
            }
            out.push(name.clone());
        }
        out
    }

    /// client.go `nodeAsBGPPeers`: a Calico node as a peer (its IPv4 and/or IPv6 address, its
    /// listen port, its AS or the global one, its RR cluster id).
    fn node_as_peers(&self, node: &str, v4: bool, v6: bool, p: &BgpPeer) -> Vec<Peer> {
        let Some(h) = self.hosts.get(node) else {
            return Vec::new();
        };
        let mut ips = Vec::new();
        if v4 {
            ips.push(&h.ip_addr_v4);
        }
        if v6 {
            ips.push(&h.ip_addr_v6);
        }
        ips.into_iter()
            .filter(|ip| !ip.is_empty())
            .map(|ip| Peer {
                ip: ip.clone(),
                as_num: h.as_num.clone().unwrap_or_else(|| self.global_as.clone()),
                rr_cluster_id: h.rr_cluster_id.clone(),
                password: None,
                source_addr: String::new(),
                port: h.listen_port.or(self.listen_port).unwrap_or(0),
                keep_next_hop: false,
                restart_time: String::new(),
                calico_node: false,
                num_allow_local_as: 0,
                ttl_security: p.ttl_security.unwrap_or(0),
                reachable_by: p.reachable_by.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// client.go `setPeerConfigFieldsFromV3Resource`.
    fn set_v3_fields(&self, peer: &mut Peer, p: &BgpPeer, ds: &Datastore) {
        peer.password = p
            .password
            .as_ref()
            .and_then(|r| ds.secret("kube-system", r).or_else(|| ds.secret("calico-system", r)))
            .map(str::to_string);
        peer.source_addr = if p.source_address.is_empty() {
            "UseNodeIP".to_string()
        } else {
            p.source_address.clone()
        };
        if let Some(t) = p.max_restart_time {
            peer.restart_time = t.to_string();
        }
    }

    /// Block affinities (`/calico/ipam/v2/host/<node>/ipv4/block/<ip>-<len>`) and pools.
    /// Pending affinities are treated as absent (client.go `updateCache`). With `pod_cidrs`
    /// (`USE_POD_CIDR`), the Nodes' podCIDRs are the affinities, all confirmed.
    fn ipam_from(&mut self, ds: &Datastore, pod_cidrs: Option<&BTreeMap<String, Vec<ipnet::Ipv4Net>>>) {
        for (node, cidrs) in pod_cidrs.into_iter().flatten() {
            for c in cidrs {
                let key = cidr_key(&c.to_string());
                self.blocks
                    .entry(node.clone())
                    .or_default()
                    .insert(key, "confirmed".to_string());
            }
        }
        let affinities = ds.block_affinities.values().filter(|_| pod_cidrs.is_none());
        for a in affinities {
            if a.state == "pending" || a.deleted || !matches!(a.cidr, IpNet::V4(_)) {
                continue;
            }
            let key = cidr_key(&a.cidr.to_string());
            self.blocks
                .entry(a.node.clone())
                .or_default()
                .insert(key, a.state.clone());
        }
        for p in ds.ip_pools.values() {
            let IpNet::V4(_) = p.cidr else {
                continue;
            };
            let mode = |m: EncapMode| match m {
                EncapMode::Always => "always",
                EncapMode::CrossSubnet => "cross-subnet",
                EncapMode::Never => "",
            };
            let pool = Pool {
                cidr: p.cidr.to_string(),
                ipip: if p.ipip_mode == EncapMode::Never { "" } else { "tunl0" }.to_string(),
                ipip_mode: mode(p.ipip_mode).to_string(),
                vxlan_mode: mode(p.vxlan_mode).to_string(),
                masquerade: p.nat_outgoing,
                ipam: !p.disabled,
                disabled: p.disabled,
                disable_bgp_export: p.disable_bgp_export,
            };
            self.pools_v4.insert(cidr_key(&pool.cidr), pool);
        }
    }

    /// Service advertisement (client.go `updateGlobalRoutes`): each service CIDR is a static
    /// (blackhole, exported) route and a reject CIDR; a node labelled
    /// `node.kubernetes.io/exclude-from-external-load-balancers=true` keeps only the rejects.
    fn routes_from(&mut self, ds: &Datastore) {
        let cidrs: Vec<&str> = [
            &self.svc_cluster_ips,
            &self.svc_external_ips,
            &self.svc_loadbalancer_ips,
        ]
        .into_iter()
        .flatten()
        .flat_map(|s| s.split(','))
        .filter(|c| !c.contains(':'))
        .collect();
        let keys: BTreeSet<String> = cidrs.iter().map(|c| cidr_key(c)).collect();
        self.reject_cidrs = keys.clone();
        for n in ds.nodes.values() {
            let excluded = n
                .labels
                .get("node.kubernetes.io/exclude-from-external-load-balancers")
                .is_some_and(|v| v == "true");
            let routes = if excluded { BTreeSet::new() } else { keys.clone() };
            self.static_routes.insert(n.name.clone(), routes);
        }
    }

    /// The keys with Calico's paths and values (JSON for peers, pools and affinities).
    pub(crate) fn dump(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let g = "/calico/bgp/v1/global";
        out.insert(format!("{g}/as_num"), self.global_as.clone());
        let mesh = if self.node_mesh_enabled {
            "{\"enabled\":true}"
        } else {
            "{\"enabled\":false}"
        };
        out.insert(format!("{g}/node_mesh"), mesh.to_string());
        out.insert(format!("{g}/loglevel"), self.loglevel.clone());
        let opt = [
            ("listen_port", self.listen_port.map(|p| p.to_string())),
            ("bind_mode", self.bind_mode.clone()),
            ("node_mesh_password", self.node_mesh_password.clone()),
            ("node_mesh_restart_time", self.node_mesh_restart_time.clone()),
            ("ignored_interfaces", self.ignored_interfaces.clone()),
            ("svc_cluster_ips", self.svc_cluster_ips.clone()),
            ("svc_external_ips", self.svc_external_ips.clone()),
            ("svc_loadbalancer_ips", self.svc_loadbalancer_ips.clone()),
        ];
        for (name, v) in opt {
            if let Some(v) = v {
                out.insert(format!("{g}/{name}"), v);
            }
        }
        for (k, p) in &self.global_peers_v4 {
            out.insert(format!("{g}/peer_v4/{k}"), serde_json::to_string(p).unwrap_or_default());
        }
        for (name, h) in &self.hosts {
            let hp = format!("/calico/bgp/v1/host/{name}");
            out.insert(format!("{hp}/ip_addr_v4"), h.ip_addr_v4.clone());
            out.insert(format!("{hp}/ip_addr_v6"), h.ip_addr_v6.clone());
            out.insert(format!("{hp}/rr_cluster_id"), h.rr_cluster_id.clone());
            let opt = [
                ("network_v4", h.network_v4.clone()),
                ("as_num", h.as_num.clone()),
                ("listen_port", h.listen_port.map(|p| p.to_string())),
                ("loglevel", h.loglevel.clone()),
            ];
            for (k, v) in opt {
                if let Some(v) = v {
                    out.insert(format!("{hp}/{k}"), v);
                }
            }
            for (k, p) in &h.peers_v4 {
                out.insert(
                    format!("{hp}/peer_v4/{k}"),
                    serde_json::to_string(p).unwrap_or_default(),
                );
            }
        }
        for (node, blocks) in &self.blocks {
            for (k, state) in blocks {
                let v = serde_json::json!({ "state": state, "deleted": false });
                out.insert(format!("/calico/ipam/v2/host/{node}/ipv4/block/{k}"), v.to_string());
            }
        }
        for (k, p) in &self.pools_v4 {
            out.insert(
                format!("/calico/v1/ipam/v4/pool/{k}"),
                serde_json::to_string(p).unwrap_or_default(),
            );
        }
        // Static routes are global keys in Calico; the dump shows the union.
        for routes in self.static_routes.values() {
            for k in routes {
                out.insert(format!("/calico/staticroutes/{k}"), key_cidr(k));
            }
        }
        for k in &self.reject_cidrs {
            out.insert(format!("/calico/rejectcidrs/{k}"), key_cidr(k));
        }
        out
    }
}

/// client.go `getLogSeverityKVPair`: Debug/Info kept (lower-cased), everything else "none".
fn loglevel(c: &BgpConfiguration) -> Option<String> {
    let l = c.log_severity_screen.as_ref()?.to_lowercase();
    Some(if l == "debug" || l == "info" {
        l
    } else {
        "none".to_string()
    })
}

/// The address part of a Node's ipv6Address (`ParseCIDROrIP`, printed canonically).
fn v6_addr(s: &str) -> Option<String> {
    let addr = s.split('/').next()?;
    canonical_ip(addr)
}

/// `combineIPAndPort`: the key suffix of a peering.
fn peer_key(p: &Peer) -> String {
    if p.port == 0 || p.port == DEFAULT_BGP_PORT {
        p.ip.clone()
    } else {
        format!("{}-{}", p.ip, p.port)
    }
}
