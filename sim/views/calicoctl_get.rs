//! `calicoctl get KIND [NAME…] [-o ps|wide|yaml|json]` (v3.25) for the kinds fabsim's Calico
//! datastore holds that calicoctl gets: IPPool, BGPConfiguration, BGPPeer, Node.
//!
//! What calicoctl does (`calicoctl/commands/get.go`, `commands/common/resources.go`
//! `ExecuteConfigCommand`, `commands/common/printer.go`, `resourcemgr/*.go`): without a NAME it
//! lists, and the printer gets one object, the `…List`; with NAMEs it gets each, prints a
//! single object alone and several as a sequence (none: `null`), and writes every "does not
//! exist" error afterwards (on stderr, joined by newlines). Tables print one table per object
//! printed. Objects are the v3 API structs (`projectcalico/api` `pkg/apis/projectcalico/v3`,
//! `libcalico-go/lib/apis/v3/node.go`) with their field order and `omitempty`, written by
//! `api_doc`; IPPools carry the defaults clientv3 fills on read (`convertIpPoolFromStorage`),
//! which the datastore already holds.

use std::collections::BTreeMap;

use super::api_doc::{ApiDoc, Fields};
use super::kubectl::rfc3339;
use super::linux::mac_text;
use super::tables::tabwriter;
use super::CommandError;
use crate::calico::datastore::{BgpConfiguration, BgpPeer, IpPool, Node, SecretKeyRef};
use crate::calico::install::Calico;
use crate::k8s::Cluster;

const API_VERSION: &str = "projectcalico.org/v3";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    IpPool,
    BgpConfiguration,
    BgpPeer,
    Node,
}

impl Kind {
    /// The names `calicoctl get` accepts (`registerResource` in `resourcemgr/*.go`).
    fn parse(word: &str) -> Option<Kind> {
        let w = word.to_ascii_lowercase();
        let is = |names: &[&str]| names.contains(&w.as_str());
        if is(&["ippool", "ippools", "ipp", "ipps", "pool", "pools"]) {
            Some(Kind::IpPool)
        } else if is(&["bgpconfiguration", "bgpconfigurations", "bgpconfig", "bgpconfigs"]) {
            Some(Kind::BgpConfiguration)
        } else if is(&["bgppeer", "bgppeers", "bgpp", "bgpps", "bp", "bps"]) {
            Some(Kind::BgpPeer)
        } else if is(&["node", "nodes", "no", "nos"]) {
            Some(Kind::Node)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::IpPool => "IPPool",
            Kind::BgpConfiguration => "BGPConfiguration",
            Kind::BgpPeer => "BGPPeer",
            Kind::Node => "Node",
        }
    }

    /// The Kubernetes resource behind it in the Kubernetes datastore, as the API server names
    /// it in a NotFound error (a Calico Node is the Kubernetes Node).
    fn k8s_resource(self) -> &'static str {
        match self {
            Kind::IpPool => "ippools.crd.projectcalico.org",
            Kind::BgpConfiguration => "bgpconfigurations.crd.projectcalico.org",
            Kind::BgpPeer => "bgppeers.crd.projectcalico.org",
            Kind::Node => "nodes",
        }
    }

    fn headings(self, wide: bool) -> &'static [&'static str] {
        match (self, wide) {
            (Kind::IpPool, false) => &["NAME", "CIDR", "SELECTOR"],
            (Kind::IpPool, true) => &[
                "NAME",
                "CIDR",
                "NAT",
                "IPIPMODE",
                "VXLANMODE",
                "DISABLED",
                "DISABLEBGPEXPORT",
                "SELECTOR",
            ],
            (Kind::BgpConfiguration, _) => &["NAME", "LOGSEVERITY", "MESHENABLED", "ASNUMBER"],
            (Kind::BgpPeer, _) => &["NAME", "PEERIP", "NODE", "ASN"],
            (Kind::Node, false) => &["NAME"],
            (Kind::Node, true) => &["NAME", "ASN", "IPV4", "IPV6"],
        }
    }
}

/// The names of the kinds `calicoctl get` has that fabsim's datastore does not model
/// (`resourcemgr/*.go`): asking for them is a fabsim limit, not calicoctl's "not supported".
const UNMODELLED: [&str; 45] = [
    "clusterinformation",
    "clusterinformations",
    "clusterinfo",
    "clusterinfos",
    "felixconfiguration",
    "felixconfigurations",
    "felixconfig",
    "felixconfigs",
    "globalnetworkpolicy",
    "globalnetworkpolicies",
    "gnp",
    "gnps",
    "globalnetworkset",
    "globalnetworksets",
    "gnetsets",
    "hostendpoint",
    "hostendpoints",
    "hep",
    "heps",
    "ipreservation",
    "ipreservations",
    "reservation",
    "reservations",
    "kubecontrollersconfiguration",
    "kubecontrollersconfigurations",
    "kubecontrollersconfig",
    "kubecontrollersconfigs",
    "networkpolicy",
    "networkpolicies",
    "policy",
    "np",
    "policies",
    "pol",
    "pols",
    "networkset",
    "networksets",
    "netsets",
    "profile",
    "profiles",
    "pro",
    "pros",
    "workloadendpoint",
    "workloadendpoints",
    "wep",
    "weps",
];

enum Output {
    Table { wide: bool },
    Yaml,
    Json,
}

/// `calicoctl get` after the word `get`.
pub(super) fn get(cluster: &Cluster, calico: &Calico, args: &[&str]) -> Result<String, CommandError> {
    let mut output = "ps".to_string();
    let mut namespaced = false;
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--output=").or_else(|| a.strip_prefix("-o=")) {
            output = v.to_string();
        } else if *a == "-o" || *a == "--output" {
            output = it.next().map_or_else(String::new, |v| v.to_string());
        } else if let Some(v) = a.strip_prefix("-o") {
            output = v.to_string();
        } else if *a == "-n" || *a == "--namespace" {
            namespaced |= it.next().is_some();
        } else if a.starts_with("--namespace=") || *a == "-A" || *a == "-a" || *a == "--all-namespaces" {
            namespaced = true;
        } else if !a.starts_with('-') {
            words.push(*a);
        }
    }
    let Some((kind_word, names)) = words.split_first() else {
        return Err(CommandError::new(
            "Invalid option: 'calicoctl get'. Use flag '--help' to read about a specific subcommand.",
        ));
    };
    let output = match output.as_str() {
        "ps" => Output::Table { wide: false },
        "wide" => Output::Table { wide: true },
        "yaml" | "yml" => Output::Yaml,
        "json" => Output::Json,
        o if ["go-template", "go-template-file", "custom-columns"].contains(&o.split('=').next().unwrap_or("")) => {
            return Err(CommandError::new(format!(
                "calicoctl get -o {o}: fabsim's calicoctl prints ps, wide, yaml and json"
            )));
        }
        o => return Ok(format!("unrecognized output format '{o}'\n")),
    };
    let Some(kind) = Kind::parse(kind_word) else {
        if UNMODELLED.contains(&kind_word.to_ascii_lowercase().as_str()) {
            return Err(CommandError::new(format!(
                "calicoctl get {kind_word}: fabsim's Calico datastore holds ippools, bgpconfigurations, bgppeers and nodes"
            )));
        }
        return Ok(format!(
            "Failed to get resources: resource type '{kind_word}' is not supported\n"
        ));
    };
    let store = Store { cluster, calico };
    let mut objects: Vec<ApiDoc> = Vec::new();
    let mut rows: Vec<Vec<Vec<String>>> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let wide = matches!(output, Output::Table { wide: true });
    if namespaced {
        // `handleNamespace` fails each resource (the list is one) before any is read.
        errors = vec![format!("{} is not namespaced", kind.name()); names.len().max(1)];
    } else if names.is_empty() {
        let all = store.names(kind);
        objects.push(
            Fields::new()
                .put("kind", ApiDoc::str(format!("{}List", kind.name())))
                .put("apiVersion", ApiDoc::str(API_VERSION))
                .put("metadata", Fields::new().done())
                .put(
                    "items",
                    ApiDoc::Seq(all.iter().filter_map(|n| store.object(kind, n)).collect()),
                )
                .done(),
        );
        rows.push(all.iter().filter_map(|n| store.row(kind, n, wide)).collect());
    } else {
        for name in names {
            match store.object(kind, name) {
                Some(o) => {
                    objects.push(o);
                    rows.extend(store.row(kind, name, wide).map(|r| vec![r]));
                }
                None => errors.push(format!(
                    "resource does not exist: {}({name}) with error: {} \"{name}\" not found",
                    kind.name(),
                    kind.k8s_resource()
                )),
            }
        }
    }
    let printed = match objects.len() {
        0 => ApiDoc::Null,
        1 => objects.swap_remove(0),
        _ => ApiDoc::Seq(objects),
    };
    let mut out = match output {
        Output::Yaml => printed.yaml(),
        Output::Json => printed.json("  "),
        Output::Table { wide } => rows
            .iter()
            .map(|table| {
                // Every cell, the last included, ends in a tab (so every column is padded),
                // and each table is followed by a blank line (calico-reference.md §6.2).
                let lines: Vec<Vec<String>> =
                    std::iter::once(kind.headings(wide).iter().map(|h| h.to_string()).collect())
                        .chain(table.iter().cloned())
                        .map(|r: Vec<String>| r.into_iter().chain([String::new()]).collect())
                        .collect();
                tabwriter(&lines) + "\n"
            })
            .collect(),
    };
    for e in errors {
        out.push_str(&e);
        out.push('\n');
    }
    Ok(out)
}

/// When a Calico resource was created (`Kind/name`): the datastore's record, else the
/// cluster's creation (resources the install made).
pub(super) fn created_ms(cluster: &Cluster, calico: &Calico, kind: &str, name: &str) -> u64 {
    calico
        .created
        .get(&format!("{kind}/{name}"))
        .copied()
        .unwrap_or(cluster.created_ms)
}

struct Store<'a> {
    cluster: &'a Cluster,
    calico: &'a Calico,
}

impl Store<'_> {
    /// Every object of `kind`, in datastore (name) order.
    fn names(&self, kind: Kind) -> Vec<String> {
        let ds = &self.calico.datastore;
        match kind {
            Kind::IpPool => ds.ip_pools.keys().cloned().collect(),
            Kind::BgpConfiguration => ds.bgp_configurations.keys().cloned().collect(),
            Kind::BgpPeer => ds.bgp_peers.keys().cloned().collect(),
            Kind::Node => ds.nodes.keys().cloned().collect(),
        }
    }

    fn object(&self, kind: Kind, name: &str) -> Option<ApiDoc> {
        let ds = &self.calico.datastore;
        let created = || created_ms(self.cluster, self.calico, kind.name(), name);
        let (meta, spec, status) = match kind {
            Kind::IpPool => (
                meta(name, created(), None),
                ippool_spec(ds.ip_pools.get(name)?, &[]),
                None,
            ),
            Kind::BgpConfiguration => (
                meta(name, created(), None),
                bgpconfig_spec(ds.bgp_configurations.get(name)?),
                None,
            ),
            Kind::BgpPeer => (meta(name, created(), None), bgppeer_spec(ds.bgp_peers.get(name)?), None),
            Kind::Node => {
                let n = ds.nodes.get(name)?;
                let (node_meta, spec, status) = self.node(n);
                (node_meta, spec, Some(status))
            }
        };
        let doc = Fields::new()
            .put("kind", ApiDoc::str(kind.name()))
            .put("apiVersion", ApiDoc::str(API_VERSION))
            .put("metadata", meta)
            .put("spec", spec);
        Some(
            match status {
                Some(s) => doc.put("status", s),
                None => doc,
            }
            .done(),
        )
    }

    /// A Calico Node in the Kubernetes datastore (`libcalico-go/lib/backend/k8s/resources/
    /// node.go` `K8sNodeToCalico`): the Kubernetes Node's creation time, labels merged with
    /// Calico's and stashed in the `projectcalico.org/kube-labels` annotation; the addresses
    /// (Calico's, then the Node's InternalIP), the BGP spec only when a BGP field is set, the
    /// VXLAN tunnel address and MAC (felix's derived one is never written back), the
    /// orchestrator reference; the podCIDRs as status.
    fn node(&self, n: &Node) -> (ApiDoc, ApiDoc, ApiDoc) {
        let k8s = self.cluster.node(&n.name);
        let created = k8s.map_or(self.cluster.created_ms, |k| k.joined_ms);
        let annotations = k8s.map(|k| {
            let labels: Vec<(String, ApiDoc)> = k.labels.iter().map(|(k, v)| (k.clone(), ApiDoc::str(v))).collect();
            ApiDoc::Map(vec![(
                "projectcalico.org/kube-labels".into(),
                ApiDoc::str(ApiDoc::Map(labels).compact_json()),
            )])
        });
        let meta = meta_fields(&n.name, created, Some(&n.labels))
            .opt("annotations", annotations)
            .done();
        let bgp = Fields::new()
            .opt("asNumber", n.as_number.map(|a| ApiDoc::Int(a.into())))
            .opt("ipv4Address", n.ipv4_address.map(|a| ApiDoc::str(a.to_string())))
            .string("ipv6Address", n.ipv6_address.as_deref().unwrap_or(""))
            .opt(
                "ipv4IPIPTunnelAddr",
                n.ipv4_ipip_tunnel_addr.map(|a| ApiDoc::str(a.to_string())),
            )
            .string(
                "routeReflectorClusterID",
                n.route_reflector_cluster_id.as_deref().unwrap_or(""),
            )
            .done();
        let mut addresses = Vec::new();
        if let Some(a) = n.ipv4_address {
            addresses.push(address(&a.to_string(), "CalicoNodeIP"));
        }
        if let Some(k) = k8s {
            addresses.push(address(&k.internal_ip.to_string(), "InternalIP"));
        }
        let orch_ref = Fields::new()
            .put("nodeName", ApiDoc::str(&n.name))
            .put("orchestrator", ApiDoc::str("k8s"))
            .done();
        let spec = Fields::new()
            .opt("bgp", Some(bgp))
            .opt(
                "ipv4VXLANTunnelAddr",
                n.ipv4_vxlan_tunnel_addr.map(|a| ApiDoc::str(a.to_string())),
            )
            .opt(
                "vxlanTunnelMACAddr",
                n.vxlan_tunnel_mac.map(|m| ApiDoc::str(mac_text(&m))),
            )
            .put("orchRefs", ApiDoc::Seq(vec![orch_ref]))
            .opt("addresses", Some(ApiDoc::Seq(addresses)))
            .done();
        let pod_cidrs: Vec<String> = k8s
            .and_then(|k| k.pod_cidr)
            .map(|c| c.to_string())
            .into_iter()
            .collect();
        let status = Fields::new().opt("podCIDRs", Some(ApiDoc::strs(&pod_cidrs))).done();
        (meta, spec, status)
    }

    /// One table row (`resourcemgr/*.go` templates), or none when the object is gone.
    fn row(&self, kind: Kind, name: &str, wide: bool) -> Option<Vec<String>> {
        let ds = &self.calico.datastore;
        Some(match kind {
            Kind::IpPool => {
                let p = ds.ip_pools.get(name)?;
                let mut row = vec![p.name.clone(), p.cidr.to_string()];
                if wide {
                    row.extend([
                        p.nat_outgoing.to_string(),
                        p.ipip_mode.as_str().into(),
                        p.vxlan_mode.as_str().into(),
                        p.disabled.to_string(),
                        p.disable_bgp_export.to_string(),
                    ]);
                }
                row.push(p.node_selector.clone());
                row
            }
            Kind::BgpConfiguration => {
                let c = ds.bgp_configurations.get(name)?;
                vec![
                    c.name.clone(),
                    c.log_severity_screen.clone().unwrap_or_default(),
                    c.node_to_node_mesh_enabled.map_or("-".into(), |b| b.to_string()),
                    c.as_number.map_or("-".into(), |a| a.to_string()),
                ]
            }
            Kind::BgpPeer => {
                // NODE is spec.node, else the node selector, else `(global)`.
                let p = ds.bgp_peers.get(name)?;
                let node = p
                    .node
                    .clone()
                    .or_else(|| p.node_selector.clone())
                    .unwrap_or_else(|| "(global)".into());
                vec![
                    p.name.clone(),
                    p.peer_ip.clone().unwrap_or_default(),
                    node,
                    p.as_number.to_string(),
                ]
            }
            Kind::Node => {
                let n = ds.nodes.get(name)?;
                if !wide {
                    return Some(vec![n.name.clone()]);
                }
                // ASN: the node's, else `({{config "asnumber"}})` — the default
                // BGPConfiguration's or 64512; all three BGP columns empty without a BGP spec.
                let has_bgp = n.as_number.is_some()
                    || n.ipv4_address.is_some()
                    || n.ipv6_address.is_some()
                    || n.ipv4_ipip_tunnel_addr.is_some()
                    || n.route_reflector_cluster_id.is_some();
                let global_as = ds
                    .bgp_configurations
                    .get("default")
                    .and_then(|c| c.as_number)
                    .unwrap_or(64512);
                let asn = match (has_bgp, n.as_number) {
                    (false, _) => String::new(),
                    (true, Some(a)) => a.to_string(),
                    (true, None) => format!("({global_as})"),
                };
                vec![
                    n.name.clone(),
                    asn,
                    n.ipv4_address.map(|a| a.to_string()).unwrap_or_default(),
                    n.ipv6_address.clone().unwrap_or_default(),
                ]
            }
        })
    }
}

/// `metav1.ObjectMeta` with what fabsim models: name, creationTimestamp, labels. (uid and
/// resourceVersion are the API server's and not modelled; `omitempty` leaves them out.)
fn meta_fields(name: &str, created_ms: u64, labels: Option<&BTreeMap<String, String>>) -> Fields {
    let labels = labels.map(|l| ApiDoc::Map(l.iter().map(|(k, v)| (k.clone(), ApiDoc::str(v))).collect()));
    Fields::new()
        .put("name", ApiDoc::str(name))
        .put("creationTimestamp", ApiDoc::str(rfc3339(created_ms)))
        .opt("labels", labels)
}

fn meta(name: &str, created_ms: u64, labels: Option<&BTreeMap<String, String>>) -> ApiDoc {
    meta_fields(name, created_ms, labels).done()
}

fn address(addr: &str, kind: &str) -> ApiDoc {
    Fields::new()
        .put("address", ApiDoc::str(addr))
        .string("type", kind)
        .done()
}

/// `IPPoolSpec` (the Kubernetes datastore stores it as the CRD's spec too). `stored_false`: the
/// booleans the stored object holds as an explicit false (kubectl shows a custom resource as
/// written, `IpPool::written_false`; the v3 API's omitempty drops them, so calicoctl passes none).
pub(super) fn ippool_spec(p: &IpPool, stored_false: &[&str]) -> ApiDoc {
    let flag = |f: Fields, key: &str, v: bool| {
        if !v && stored_false.contains(&key) {
            f.put(key, ApiDoc::Bool(false))
        } else {
            f.flag(key, v)
        }
    };
    let f = Fields::new()
        .put("cidr", ApiDoc::str(p.cidr.to_string()))
        .string("vxlanMode", p.vxlan_mode.as_str())
        .string("ipipMode", p.ipip_mode.as_str());
    let f = flag(f, "natOutgoing", p.nat_outgoing);
    let f = flag(f, "disabled", p.disabled);
    flag(f, "disableBGPExport", p.disable_bgp_export)
        .put("blockSize", ApiDoc::Int(p.block_size.into()))
        .string("nodeSelector", &p.node_selector)
        .opt("allowedUses", Some(ApiDoc::strs(&p.allowed_uses)))
        .done()
}

/// A list of `{cidr: …}` blocks (serviceClusterIPs and its siblings).
fn cidr_blocks(cidrs: &[String]) -> Option<ApiDoc> {
    Some(ApiDoc::Seq(
        cidrs.iter().map(|c| Fields::new().string("cidr", c).done()).collect(),
    ))
}

/// `BGPPassword`: `secretKeyRef` is a `SecretKeySelector` (name, then key).
fn password(r: &SecretKeyRef) -> ApiDoc {
    let selector = Fields::new()
        .string("name", &r.name)
        .put("key", ApiDoc::str(&r.key))
        .done();
    Fields::new().put("secretKeyRef", selector).done()
}

/// Go's `time.Duration.String()` of whole seconds (`2m0s`, `1h0m0s`).
fn go_duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

/// `BGPConfigurationSpec` (communities and prefixAdvertisements are not modelled).
fn bgpconfig_spec(c: &BgpConfiguration) -> ApiDoc {
    Fields::new()
        .string("logSeverityScreen", c.log_severity_screen.as_deref().unwrap_or(""))
        .opt("nodeToNodeMeshEnabled", c.node_to_node_mesh_enabled.map(ApiDoc::Bool))
        .opt("asNumber", c.as_number.map(|a| ApiDoc::Int(a.into())))
        .opt("serviceLoadBalancerIPs", cidr_blocks(&c.service_load_balancer_ips))
        .opt("serviceExternalIPs", cidr_blocks(&c.service_external_ips))
        .opt("serviceClusterIPs", cidr_blocks(&c.service_cluster_ips))
        .opt("listenPort", c.listen_port.map(|p| ApiDoc::Int(p.into())))
        .opt("nodeMeshPassword", c.node_mesh_password.as_ref().map(password))
        .opt(
            "nodeMeshMaxRestartTime",
            c.node_mesh_max_restart_time.map(|t| ApiDoc::str(go_duration(t))),
        )
        .opt("bindMode", c.bind_mode.as_deref().map(ApiDoc::str))
        .opt("ignoredInterfaces", c.ignored_interfaces.as_deref().map(ApiDoc::strs))
        .done()
}

/// `BGPPeerSpec`.
fn bgppeer_spec(p: &BgpPeer) -> ApiDoc {
    Fields::new()
        .string("node", p.node.as_deref().unwrap_or(""))
        .string("nodeSelector", p.node_selector.as_deref().unwrap_or(""))
        .string("peerIP", p.peer_ip.as_deref().unwrap_or(""))
        .opt("asNumber", (p.as_number != 0).then(|| ApiDoc::Int(p.as_number.into())))
        .string("peerSelector", p.peer_selector.as_deref().unwrap_or(""))
        .flag("keepOriginalNextHop", p.keep_original_next_hop)
        .opt("password", p.password.as_ref().map(password))
        .string("sourceAddress", &p.source_address)
        .opt(
            "maxRestartTime",
            p.max_restart_time.map(|t| ApiDoc::str(go_duration(t))),
        )
        .opt(
            "numAllowedLocalASNumbers",
            p.num_allowed_local_as_numbers.map(|n| ApiDoc::Int(n.into())),
        )
        .opt("ttlSecurity", p.ttl_security.map(|n| ApiDoc::Int(n.into())))
        .string("reachableBy", p.reachable_by.as_deref().unwrap_or(""))
        .done()
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_print_as_go_does() {
        assert_eq!(super::go_duration(120), "2m0s");
        assert_eq!(super::go_duration(3600), "1h0m0s");
        assert_eq!(super::go_duration(45), "45s");
    }
}
