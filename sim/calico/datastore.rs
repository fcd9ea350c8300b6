//! The Calico datastore as fabsim holds it: typed resources read from real multi-document YAML
//! (`projectcalico.org/v3`, `crd.projectcalico.org/v1`, and Kubernetes `v1` Nodes and Secrets),
//! with Calico's defaults and the validation calicoctl/clientv3 applies.
//!
//! Sources of truth (projectcalico/calico v3.25.0): IPPool defaults and checks in
//! `libcalico-go/lib/clientv3/ippool.go` `validateAndSetDefaults` and the struct validator
//! `libcalico-go/lib/validator/v3/validator.go`; BGPConfiguration restrictions in
//! `libcalico-go/lib/clientv3/bgpconfig.go`; BGPPeer rules in `validateBGPPeerSpec`; KDD node
//! annotations in `libcalico-go/lib/backend/k8s/resources/node.go`.
//!
//! Two API groups behave differently (calico-reference.md §3.2): a `projectcalico.org/v3`
//! object goes through clientv3 (defaults, validation, CIDR normalisation), a
//! `crd.projectcalico.org/v1` object is stored by the API server as written — fabsim accepts it
//! and applies only the consumer-side defaults (blockSize 26, anything but Always/CrossSubnet
//! is no encapsulation), with a warning where Calico would silently differ from the intent.
//!
//! In KDD mode a Calico `Node` *is* the Kubernetes Node: a v3 Node and a v1 Node of the same
//! name are merged (labels united, Calico BGP fields from the v3 object, else from the
//! `projectcalico.org/*` annotations).

mod kube;
mod kube_services;
mod selector;
mod tree;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net};
use serde_saphyr::Spanned;

pub use self::kube::{KubeNode, KubePod};
pub use self::kube_services::KubeadmNetworking;
pub use self::selector::Selector;
use self::tree::{span, Yv};
use crate::diag::{Diagnostic, InputError, Span};

/// API group a resource was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiGroup {
    /// `projectcalico.org/v3` (calicoctl / clientv3: defaulted and validated).
    V3,
    /// `crd.projectcalico.org/v1` (kubectl: stored as written).
    CrdV1,
    /// Kubernetes core `v1`.
    K8sV1,
}

/// IPIP / VXLAN mode of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EncapMode {
    Never,
    Always,
    CrossSubnet,
}

impl EncapMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EncapMode::Never => "Never",
            EncapMode::Always => "Always",
            EncapMode::CrossSubnet => "CrossSubnet",
        }
    }
}

/// An IP pool (`IPPool`), defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct IpPool {
    pub name: String,
    /// Normalised (host bits cleared), as clientv3 stores it.
    pub cidr: IpNet,
    pub block_size: u8,
    pub ipip_mode: EncapMode,
    pub vxlan_mode: EncapMode,
    pub nat_outgoing: bool,
    pub disabled: bool,
    pub disable_bgp_export: bool,
    pub node_selector: String,
    pub allowed_uses: Vec<String>,
    pub api: ApiGroup,
    /// The spec's booleans a `crd.projectcalico.org/v1` write stored as an explicit `false`
    /// (`natOutgoing`, `disabled`, `disableBGPExport`): kubectl's apply or merge patch keeps a
    /// custom resource as it was given, so `kubectl get ippools -o yaml` shows them; the v3
    /// API's Go structs drop a false with `omitempty`.
    pub written_false: Vec<&'static str>,
    pub span: Span,
}

/// A reference to a key of a Kubernetes Secret (BGP passwords).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretKeyRef {
    pub name: String,
    pub key: String,
}

/// A `BGPConfiguration` as written (consumers default: see `confd`). Named `default` (global)
/// or `node.<nodename>` (per node).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BgpConfiguration {
    pub name: String,
    pub as_number: Option<u32>,
    pub node_to_node_mesh_enabled: Option<bool>,
    /// Debug | Info | Warning | Error | Fatal.
    pub log_severity_screen: Option<String>,
    pub listen_port: Option<u16>,
    /// None | NodeIP.
    pub bind_mode: Option<String>,
    pub service_cluster_ips: Vec<String>,
    pub service_external_ips: Vec<String>,
    pub service_load_balancer_ips: Vec<String>,
    /// Seconds (Go duration rounded as client.go does).
    pub node_mesh_max_restart_time: Option<u64>,
    pub node_mesh_password: Option<SecretKeyRef>,
    pub ignored_interfaces: Option<Vec<String>>,
    pub span: Span,
}

/// A `BGPPeer`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BgpPeer {
    pub name: String,
    pub node: Option<String>,
    pub node_selector: Option<String>,
    /// `ip`, `ip:port` or `[v6]:port`, as written.
    pub peer_ip: Option<String>,
    /// 0 when not written (rendered verbatim as `as 0`).
    pub as_number: u32,
    pub peer_selector: Option<String>,
    pub keep_original_next_hop: bool,
    pub password: Option<SecretKeyRef>,
    /// UseNodeIP | None as written; empty (not written) means UseNodeIP.
    pub source_address: String,
    /// Seconds.
    pub max_restart_time: Option<u64>,
    pub num_allowed_local_as_numbers: Option<i32>,
    pub ttl_security: Option<u8>,
    pub reachable_by: Option<String>,
    pub span: Span,
}

/// A node: the Kubernetes Node and Calico's view of it merged.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// BGP address with its prefix (`10.0.137.142/24`; a bare IP is stored as /32).
    pub ipv4_address: Option<Ipv4Net>,
    /// As written (only its presence matters to the IPv4 renderer).
    pub ipv6_address: Option<String>,
    pub as_number: Option<u32>,
    pub ipv4_ipip_tunnel_addr: Option<Ipv4Addr>,
    pub ipv4_vxlan_tunnel_addr: Option<Ipv4Addr>,
    /// `vxlanTunnelMACAddr`: set by hand (or by Calico for Windows); felix derives the MAC
    /// when it is absent (`Calico::vtep_mac`).
    pub vxlan_tunnel_mac: Option<[u8; 6]>,
    pub route_reflector_cluster_id: Option<String>,
    pub pod_cidrs: Vec<IpNet>,
    /// What a Kubernetes Node object (`kubectl get nodes -o yaml`) says beyond Calico's view,
    /// when one was read (a snapshot's `k8s/` dump, `k8s::observed`).
    pub kube: Option<KubeNode>,
    pub span: Span,
}

/// A block affinity (`BlockAffinity`, crd.projectcalico.org/v1).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockAffinity {
    pub name: String,
    pub node: String,
    pub cidr: IpNet,
    /// "" (implicitly confirmed), confirmed, pending, pendingDeletion.
    pub state: String,
    pub deleted: bool,
    pub span: Span,
}

/// One allocation's attributes in an IPAM block.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllocationAttribute {
    pub handle_id: Option<String>,
    pub secondary: BTreeMap<String, String>,
}

/// An IPAM block (`IPAMBlock`, crd.projectcalico.org/v1).
#[derive(Debug, Clone, PartialEq)]
pub struct IpamBlock {
    pub name: String,
    pub cidr: IpNet,
    /// `host:<node>` as Calico writes it.
    pub affinity: Option<String>,
    pub strict_affinity: bool,
    /// Per ordinal: index into `attributes`, or none (free).
    pub allocations: Vec<Option<u64>>,
    pub unallocated: Vec<u64>,
    pub attributes: Vec<AllocationAttribute>,
    pub sequence_number: u64,
    pub deleted: bool,
    pub span: Span,
}

/// Every Calico resource fabsim models, keyed by name.
#[derive(Debug, Clone, Default)]
pub struct Datastore {
    pub ip_pools: BTreeMap<String, IpPool>,
    pub bgp_configurations: BTreeMap<String, BgpConfiguration>,
    pub bgp_peers: BTreeMap<String, BgpPeer>,
    pub nodes: BTreeMap<String, Node>,
    pub block_affinities: BTreeMap<String, BlockAffinity>,
    pub ipam_blocks: BTreeMap<String, IpamBlock>,
    /// (namespace, name) → key → value (decoded).
    pub secrets: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// Pods read from `kubectl get pods -o yaml` dumps, by (namespace, name): in the Kubernetes
    /// datastore Calico's WorkloadEndpoints are the pods (libcalico-go
    /// `backend/k8s/conversion` `PodToWorkloadEndpoints`), so they are read here, beside the
    /// Nodes, and `k8s::observed` makes them the cluster's pods. In file order (the order
    /// their network namespaces are created in); a pod read again replaces itself in place.
    pub pods: Vec<KubePod>,
    /// Services read from `kubectl get services -o yaml` dumps, in file order; one read again
    /// replaces itself in place (`k8s::observed` makes them the cluster's).
    pub services: Vec<crate::k8s::Service>,
    /// The ready addresses of Endpoints objects, by (namespace, name): what a Service without
    /// a selector forwards to.
    pub endpoints: BTreeMap<(String, String), Vec<Ipv4Addr>>,
    /// kubeadm's pod and service ranges (`kube-system/kubeadm-config`).
    pub kubeadm: Option<KubeadmNetworking>,
}

impl Datastore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a datastore from several YAML files (name, text), in order. Returns the
    /// warnings, or every diagnostic if any resource is invalid.
    pub fn from_yaml(files: &[(&str, &str)]) -> Result<(Datastore, Vec<Diagnostic>), InputError> {
        let mut ds = Datastore::new();
        let mut warnings = Vec::new();
        for (file, text) in files {
            warnings.extend(ds.load_yaml(text, file)?);
        }
        Ok((ds, warnings))
    }

    /// The most documents (resources) one text may hold: a Node and a BGPPeer for each of the
    /// largest generated fabric's 24,576 hosts, with room to spare.
    const MAX_DOCUMENTS: usize = 1 << 17;

    /// Reads every document of `text` (file name `file`, for diagnostics) into the datastore,
    /// like `calicoctl apply -f` / `kubectl apply -f`: a resource replaces one of the same kind
    /// and name. Returns the warnings; on any error nothing is stored.
    pub fn load_yaml(&mut self, text: &str, file: &str) -> Result<Vec<Diagnostic>, InputError> {
        self.load_yaml_expecting(text, file, None)
    }

    /// `load_yaml` of a dump that may hold only the kinds `expected` (and their Lists): a
    /// snapshot's `calico/` and `k8s/` files are what one `calicoctl get`/`kubectl get` printed,
    /// so any other kind is an error at its line, not a resource to skip.
    pub fn load_yaml_expecting(
        &mut self,
        text: &str,
        file: &str,
        expected: Option<&[&str]>,
    ) -> Result<Vec<Diagnostic>, InputError> {
        // One document per resource: a generated fabric declares a Node and a BGPPeer per
        // host, thousands of documents, where the parser's default guard stops at 1,024.
        let options = serde_saphyr::options! {
            budget: serde_saphyr::budget! { max_documents: Self::MAX_DOCUMENTS },
        };
        let docs: Vec<Spanned<Yv>> = serde_saphyr::from_str_multiple_with_options(text, options).map_err(|e| {
            let at = e.location().map_or_else(|| Span::new(file, 1, 1), |l| span(file, &l));
            let msg: String = e
                .to_string()
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            Diagnostic::error(at, format!("invalid YAML: {msg}"))
        })?;
        let mut next = self.clone();
        let mut ctx = Ctx {
            file,
            text,
            diags: Vec::new(),
            expected,
            shift: (0, 0),
        };
        for doc in &docs {
            next.load_doc(doc, &mut ctx);
        }
        if ctx.diags.iter().any(|d| d.severity == crate::diag::Severity::Error) {
            return Err(InputError(ctx.diags));
        }
        *self = next;
        Ok(ctx.diags)
    }

    /// Names of the nodes `selector` selects, in name order.
    pub fn nodes_matching(&self, selector: &Selector) -> Vec<&str> {
        self.nodes
            .values()
            .filter(|n| selector.matches(&n.labels))
            .map(|n| n.name.as_str())
            .collect()
    }

    /// A Secret's value, if the datastore has it.
    pub fn secret(&self, namespace: &str, r: &SecretKeyRef) -> Option<&str> {
        let s = self.secrets.get(&(namespace.to_string(), r.name.clone()))?;
        s.get(&r.key).map(String::as_str)
    }

    fn load_doc(&mut self, doc: &Spanned<Yv>, ctx: &mut Ctx) {
        let at = ctx.span(doc);
        match &doc.value {
            Yv::Null => return,
            // `calicoctl get ippools,bgppeers -o yaml` prints the slice of its per-kind Lists
            // (calicoctl `commands/common/printer.go`: one resource alone, else the slice).
            Yv::Seq(items) => {
                for item in items {
                    self.load_doc(item, ctx);
                }
                return;
            }
            _ => {}
        }
        let Some(mut top) = Obj::new(doc, "resource", ctx) else {
            return;
        };
        let api = top.string("apiVersion", ctx).map(|(s, _)| s).unwrap_or_default();
        let Some((kind, kind_at)) = top.string("kind", ctx) else {
            ctx.error(at, "resource has no `kind`");
            return;
        };
        let group = match api.as_str() {
            "projectcalico.org/v3" => ApiGroup::V3,
            "crd.projectcalico.org/v1" => ApiGroup::CrdV1,
            "v1" => ApiGroup::K8sV1,
            other => {
                ctx.warn(
                    at,
                    format!("apiVersion {other:?} of {kind} is not one fabsim reads; ignored"),
                );
                return;
            }
        };
        // kubectl prints a `List`, calicoctl a `<Kind>List` (IPPoolList, NodeList, …).
        if kind.ends_with("List") {
            if let Some(items) = top.list("items", ctx) {
                for item in items {
                    self.load_doc(item, ctx);
                }
            }
            return;
        }
        if let Some(expected) = ctx.expected.filter(|e| !e.contains(&kind.as_str())) {
            let msg = format!(
                "unexpected kind `{kind}` in this dump: expected {} (or a List of them)",
                expected.join(", ")
            );
            ctx.error(kind_at, msg);
            return;
        }
        let meta = top.obj("metadata", ctx);
        let mut owner = None;
        let (name, labels, annotations) = match meta {
            Some(mut m) => {
                let name = m.string("name", ctx).map(|(s, _)| s).unwrap_or_default();
                let labels = m.string_map("labels", ctx);
                let annotations = m.string_map("annotations", ctx);
                let namespace = m.string("namespace", ctx).map(|(s, _)| s).unwrap_or_default();
                if kind == "Pod" {
                    owner = kube::controller(&mut m, ctx);
                }
                // Server-set metadata is valid and irrelevant.
                m.skip(&[
                    "resourceVersion",
                    "uid",
                    "creationTimestamp",
                    "generation",
                    "managedFields",
                    "ownerReferences",
                    "finalizers",
                    "selfLink",
                    "deletionTimestamp",
                    "generateName",
                ]);
                m.finish(ctx);
                (name, labels, (annotations, namespace))
            }
            None => Default::default(),
        };
        if name.is_empty() && kind != "List" {
            ctx.error(kind_at.clone(), format!("{kind} has no metadata.name"));
            return;
        }
        let what = format!("{kind} {name:?}");
        let spec_at = top.at.clone();
        let spec = top.obj("spec", ctx);
        match (kind.as_str(), group) {
            ("IPPool", ApiGroup::V3 | ApiGroup::CrdV1) => {
                if let Some(p) = ippool(&name, group, spec, spec_at, &self.ip_pools, ctx) {
                    self.ip_pools.insert(name, p);
                }
            }
            ("BGPConfiguration", ApiGroup::V3 | ApiGroup::CrdV1) => {
                if let Some(c) = bgp_configuration(&name, spec, spec_at, ctx) {
                    self.bgp_configurations.insert(name, c);
                }
            }
            ("BGPPeer", ApiGroup::V3 | ApiGroup::CrdV1) => {
                if let Some(p) = bgp_peer(&name, spec, spec_at, ctx) {
                    self.bgp_peers.insert(name, p);
                }
            }
            ("Node", ApiGroup::V3) => {
                let node = self.nodes.entry(name.clone()).or_insert_with(|| Node {
                    name: name.clone(),
                    span: spec_at.clone(),
                    ..Node::default()
                });
                node.labels.extend(labels);
                calico_node(node, spec, ctx);
            }
            ("Node", ApiGroup::K8sV1) => {
                let node = self.nodes.entry(name.clone()).or_insert_with(|| Node {
                    name: name.clone(),
                    span: spec_at.clone(),
                    ..Node::default()
                });
                // A fresh Kubernetes node already carries its hostname label.
                node.labels.extend(labels);
                let mut k = KubeNode {
                    span: kind_at.clone(),
                    ..KubeNode::default()
                };
                k8s_node(node, &annotations.0, spec, &mut k, ctx);
                kube::node_status(&mut k, &mut top, ctx);
                node.kube = Some(k);
            }
            ("Pod", ApiGroup::K8sV1) => {
                let key = (annotations.1.clone(), name.clone());
                if let Some(p) = kube::pod(key, labels, owner, spec, &mut top, spec_at, ctx) {
                    match self
                        .pods
                        .iter_mut()
                        .find(|q| (&q.namespace, &q.name) == (&p.namespace, &p.name))
                    {
                        Some(q) => *q = p,
                        None => self.pods.push(p),
                    }
                }
            }
            ("BlockAffinity", ApiGroup::CrdV1 | ApiGroup::V3) => {
                if let Some(a) = block_affinity(&name, spec, spec_at, ctx) {
                    self.block_affinities.insert(name, a);
                }
            }
            ("IPAMBlock", ApiGroup::CrdV1 | ApiGroup::V3) => {
                if let Some(b) = ipam_block(&name, spec, spec_at, ctx) {
                    self.ipam_blocks.insert(name, b);
                }
            }
            ("Service", ApiGroup::K8sV1) => {
                let key = (annotations.1.clone(), name.clone());
                if let Some(svc) = kube_services::service(key, labels, annotations.0, spec, spec_at, ctx) {
                    match self
                        .services
                        .iter_mut()
                        .find(|s| (&s.namespace, &s.name) == (&svc.namespace, &svc.name))
                    {
                        Some(s) => *s = svc,
                        None => self.services.push(svc),
                    }
                }
            }
            ("Endpoints", ApiGroup::K8sV1) => {
                let addresses = kube_services::endpoint_addresses(&mut top, &name, ctx);
                self.endpoints.insert((annotations.1, name), addresses);
            }
            ("ConfigMap", ApiGroup::K8sV1) if annotations.1 == "kube-system" && name == "kubeadm-config" => {
                if let Some(s) = spec {
                    s.consume_all();
                }
                self.kubeadm = kube_services::kubeadm_networking(&mut top, kind_at, ctx);
            }
            ("Secret", ApiGroup::K8sV1) => {
                let values = secret_values(&top, ctx);
                self.secrets.insert((annotations.1, name), values);
            }
            _ => {
                if let Some(s) = spec {
                    s.consume_all();
                }
                ctx.warn(
                    kind_at,
                    format!("{what} ({api}) is valid but not modelled by fabsim; ignored"),
                );
            }
        }
        top.skip(&["status", "data", "stringData", "type", "items"]);
        top.finish(ctx);
    }
}

/// Diagnostics being collected for one file.
struct Ctx<'f> {
    file: &'f str,
    /// The file's text: a YAML document nested in one of its strings is located through it.
    text: &'f str,
    diags: Vec<Diagnostic>,
    /// The kinds a dump may hold (`load_yaml_expecting`); None: any.
    expected: Option<&'f [&'f str]>,
    /// (lines, columns) added to positions while a nested document is read (`(0, 0)` for the
    /// file's own), so its diagnostics name the file's line and column.
    shift: (u32, u32),
}

impl Ctx<'_> {
    fn error(&mut self, at: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(at, msg));
    }
    fn warn(&mut self, at: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::warning(at, msg));
    }
    fn span(&self, v: &Spanned<Yv>) -> Span {
        self.at(&v.referenced)
    }

    fn at(&self, loc: &serde_saphyr::Location) -> Span {
        let mut s = span(self.file, loc);
        s.line += self.shift.0;
        s.col += self.shift.1;
        s
    }

    /// The shift that maps positions in the string at `at` to the file's, when that string is a
    /// literal block (`key: |` then lines indented alike): the parser places the string either
    /// at its `|` or at its first line. `(0, 0)` otherwise (positions are then the string's
    /// own, still better than none).
    fn block_scalar_shift(&self, at: &Span) -> (u32, u32) {
        let lines: Vec<&str> = self.text.lines().collect();
        let line = |n: u32| lines.get((n as usize).checked_sub(1)?).copied();
        let indent = |l: &str| (l.len() - l.trim_start().len()) as u32;
        let is_indicator = |l: &str| {
            let t = l.trim_end();
            t.ends_with('|') || t.ends_with("|-") || t.ends_with("|+")
        };
        match (line(at.line), at.line.checked_sub(1).and_then(line)) {
            // At the indicator: the string's first line is the next non-empty one.
            (Some(l), _) if is_indicator(l) => {
                let first = lines.iter().skip(at.line as usize).find(|l| !l.trim().is_empty());
                (at.line, first.map_or(0, |l| indent(l)))
            }
            // At the first line of the string, right under its indicator.
            (Some(l), Some(prev)) if is_indicator(prev) => (at.line - 1, indent(l)),
            _ => (0, 0),
        }
    }
}

/// A mapping being read field by field; keys never asked for become "unknown field" warnings.
struct Obj<'a> {
    what: &'static str,
    entries: &'a [(Spanned<String>, Spanned<Yv>)],
    used: Vec<bool>,
    at: Span,
}

impl<'a> Obj<'a> {
    fn new(v: &'a Spanned<Yv>, what: &'static str, ctx: &mut Ctx) -> Option<Obj<'a>> {
        let at = ctx.span(v);
        match v.value.entries() {
            Some(entries) => Some(Obj {
                what,
                entries,
                used: vec![false; entries.len()],
                at,
            }),
            None => {
                ctx.error(at, format!("{what} must be a mapping, found {}", v.value.kind()));
                None
            }
        }
    }

    fn take(&mut self, key: &str) -> Option<&'a Spanned<Yv>> {
        let i = self.entries.iter().position(|(k, _)| k.value == key)?;
        self.used[i] = true;
        Some(&self.entries[i].1)
    }

    fn skip(&mut self, keys: &[&str]) {
        for k in keys {
            self.take(k);
        }
    }

    fn consume_all(mut self) {
        self.used.iter_mut().for_each(|u| *u = true);
    }

    fn string(&mut self, key: &str, ctx: &mut Ctx) -> Option<(String, Span)> {
        let v = self.take(key)?;
        match v.value.scalar() {
            Some(s) => Some((s, ctx.span(v))),
            None => {
                ctx.error(
                    ctx.span(v),
                    format!("`{key}` must be a scalar, found {}", v.value.kind()),
                );
                None
            }
        }
    }

    /// A non-empty string field.
    fn opt_string(&mut self, key: &str, ctx: &mut Ctx) -> Option<(String, Span)> {
        self.string(key, ctx).filter(|(s, _)| !s.is_empty())
    }

    fn bool(&mut self, key: &str, ctx: &mut Ctx) -> Option<bool> {
        let v = self.take(key)?;
        match &v.value {
            Yv::Bool(b) => Some(*b),
            Yv::Str(s) if s == "true" || s == "false" => Some(s == "true"),
            Yv::Null => None,
            other => {
                ctx.error(
                    ctx.span(v),
                    format!("`{key}` must be true or false, found {}", other.kind()),
                );
                None
            }
        }
    }

    /// An unsigned number (Calico accepts numbers written as strings, e.g. AS numbers).
    fn number(&mut self, key: &str, max: u64, ctx: &mut Ctx) -> Option<(u64, Span)> {
        let v = self.take(key)?;
        let at = ctx.span(v);
        let n = match &v.value {
            Yv::Int(i) => u64::try_from(*i).ok(),
            Yv::Str(s) => s.trim().parse::<u64>().ok(),
            Yv::Null => return None,
            _ => None,
        };
        match n.filter(|n| *n <= max) {
            Some(n) => Some((n, at)),
            None => {
                let shown = v.value.scalar().unwrap_or_else(|| v.value.kind().to_string());
                ctx.error(
                    at,
                    format!("`{key}` must be a number between 0 and {max}, found {shown:?}"),
                );
                None
            }
        }
    }

    fn obj(&mut self, key: &str, ctx: &mut Ctx) -> Option<Obj<'a>> {
        let v = self.take(key)?;
        Obj::new(v, "a mapping", ctx)
    }

    fn list(&mut self, key: &str, ctx: &mut Ctx) -> Option<&'a [Spanned<Yv>]> {
        let v = self.take(key)?;
        match &v.value {
            Yv::Seq(items) => Some(items),
            Yv::Null => Some(&[]),
            other => {
                ctx.error(ctx.span(v), format!("`{key}` must be a list, found {}", other.kind()));
                None
            }
        }
    }

    fn string_list(&mut self, key: &str, ctx: &mut Ctx) -> Option<Vec<String>> {
        let items = self.list(key, ctx)?;
        let mut out = Vec::new();
        for it in items {
            match it.value.scalar() {
                Some(s) => out.push(s),
                None => ctx.error(ctx.span(it), format!("`{key}` entries must be strings")),
            }
        }
        Some(out)
    }

    /// A `{key: scalar}` mapping (labels, annotations); YAML booleans and numbers become their
    /// text, as Kubernetes clients do when they write them.
    fn string_map(&mut self, key: &str, ctx: &mut Ctx) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        if let Some(mut m) = self.obj(key, ctx) {
            for (i, (k, v)) in m.entries.iter().enumerate() {
                m.used[i] = true;
                match v.value.scalar() {
                    Some(s) => {
                        out.insert(k.value.clone(), s);
                    }
                    None => ctx.error(ctx.span(v), format!("`{key}.{}` must be a string", k.value)),
                }
            }
        }
        out
    }

    /// Warns about every key nobody asked for.
    fn finish(self, ctx: &mut Ctx) {
        for (i, (k, _)) in self.entries.iter().enumerate() {
            if !self.used[i] {
                let at = ctx.at(&k.referenced);
                ctx.warn(at, format!("unknown field `{}` in {}; ignored", k.value, self.what));
            }
        }
    }
}

/// calicoctl's error wording: `error with field <Field> = '<value>' (<reason>)`.
fn field_error(ctx: &mut Ctx, at: Span, what: &str, field: &str, value: &str, reason: &str) {
    ctx.error(at, format!("{what}: error with field {field} = '{value}' ({reason})"));
}

fn encap(
    raw: Option<(String, Span)>,
    group: ApiGroup,
    field: &str,
    what: &str,
    ctx: &mut Ctx,
) -> (EncapMode, Option<Span>) {
    let Some((s, at)) = raw else {
        return (EncapMode::Never, None);
    };
    let mode = match s.as_str() {
        "Always" => EncapMode::Always,
        "CrossSubnet" => EncapMode::CrossSubnet,
        "Never" | "" => EncapMode::Never,
        _ if group == ApiGroup::CrdV1 => {
            // ippoolprocessor maps anything but Always/CrossSubnet to no encapsulation.
            ctx.warn(
                at.clone(),
                format!("{what}: {field} {s:?} is stored as written by the API server; Calico treats it as Never"),
            );
            EncapMode::Never
        }
        _ => {
            let reason = format!("{field} must be Always, CrossSubnet or Never");
            field_error(ctx, at.clone(), what, &format!("IPPool.Spec.{field}"), &s, &reason);
            EncapMode::Never
        }
    };
    (mode, Some(at))
}

fn ippool(
    name: &str,
    group: ApiGroup,
    spec: Option<Obj>,
    spec_at: Span,
    existing: &BTreeMap<String, IpPool>,
    ctx: &mut Ctx,
) -> Option<IpPool> {
    let what = format!("IPPool {name:?}");
    let Some(mut s) = spec else {
        ctx.error(spec_at, format!("{what}: IPPool CIDR must be specified"));
        return None;
    };
    let at = s.at.clone();
    let cidr_raw = s.string("cidr", ctx);
    let block_size = s.number("blockSize", 255, ctx);
    let ipip = encap(s.opt_string("ipipMode", ctx), group, "IPIPMode", &what, ctx);
    let vxlan = encap(s.opt_string("vxlanMode", ctx), group, "VXLANMode", &what, ctx);
    let mut written_false = Vec::new();
    let mut flag = |key: &'static str, s: &mut Obj, ctx: &mut Ctx| {
        let v = s.bool(key, ctx);
        if v == Some(false) && group == ApiGroup::CrdV1 {
            written_false.push(key);
        }
        v.unwrap_or(false)
    };
    let nat_outgoing = flag("natOutgoing", &mut s, ctx);
    let disabled = flag("disabled", &mut s, ctx);
    let disable_bgp_export = flag("disableBGPExport", &mut s, ctx);
    let node_selector = s.opt_string("nodeSelector", ctx);
    let allowed_uses = s.string_list("allowedUses", ctx);
    for legacy in ["ipip", "nat-outgoing"] {
        if let Some(v) = s.take(legacy) {
            ctx.warn(
                ctx.span(v),
                format!("{what}: `{legacy}` is a deprecated v1 field; fabsim ignores it"),
            );
        }
    }
    s.finish(ctx);

    let Some((cidr_text, cidr_at)) = cidr_raw.filter(|(c, _)| !c.is_empty()) else {
        field_error(ctx, at, &what, "IPPool.Spec.CIDR", "", "IPPool CIDR must be specified");
        return None;
    };
    let Ok(written) = cidr_text.parse::<IpNet>() else {
        let reason = "IPPool CIDR must be a valid subnet";
        field_error(ctx, cidr_at, &what, "IPPool.Spec.CIDR", &cidr_text, reason);
        return None;
    };
    let cidr = written.trunc();
    if cidr != written {
        // clientv3 normalises (`cidr.String()`) before the validator sees it.
        ctx.warn(
            cidr_at.clone(),
            format!("{what}: CIDR {written} is not strictly masked; Calico stores it as {cidr}"),
        );
    }
    let v4 = matches!(cidr, IpNet::V4(_));
    let block_size = match block_size {
        Some((b, _)) => b as u8,
        None if v4 => 26,
        None => 122,
    };
    let mut pool = IpPool {
        name: name.to_string(),
        cidr,
        block_size,
        ipip_mode: ipip.0,
        vxlan_mode: vxlan.0,
        nat_outgoing,
        disabled,
        disable_bgp_export,
        node_selector: node_selector
            .as_ref()
            .map_or_else(|| "all()".to_string(), |(s, _)| s.clone()),
        allowed_uses: allowed_uses.unwrap_or_else(|| vec!["Workload".into(), "Tunnel".into()]),
        api: group,
        written_false,
        span: at.clone(),
    };
    if let Some((sel, sel_at)) = &node_selector {
        if let Err(e) = Selector::parse(sel) {
            field_error(ctx, sel_at.clone(), &what, "IPPool.Spec.NodeSelector", sel, &e);
        }
    }
    if group == ApiGroup::CrdV1 {
        // Nothing below runs for kubectl-created objects (calico-reference.md §3.2).
        return Some(pool);
    }
    let link_local: IpNet = if v4 {
        IpNet::V4(Ipv4Net::new(Ipv4Addr::new(169, 254, 0, 0), 16).unwrap_or_default())
    } else {
        "fe80::/10".parse().unwrap_or(cidr)
    };
    if link_local.contains(&cidr.network()) || cidr.contains(&link_local.network()) {
        let reason = if v4 {
            "IPPool CIDR overlaps with IPv4 Link Local range 169.254.0.0/16"
        } else {
            "IPPool CIDR overlaps with IPv6 Link Local range fe80::/10"
        };
        field_error(
            ctx,
            cidr_at.clone(),
            &what,
            "IPPool.Spec.CIDR",
            &cidr.to_string(),
            reason,
        );
    }
    let (lo, hi) = if v4 { (20, 32) } else { (116, 128) };
    if pool.block_size < lo || pool.block_size > hi {
        let reason = if v4 {
            "IPv4 block size must be between 20 and 32"
        } else {
            "IPv6 block size must be between 116 and 128"
        };
        field_error(
            ctx,
            at.clone(),
            &what,
            "IPPool.Spec.BlockSize",
            &pool.block_size.to_string(),
            reason,
        );
    } else if !pool.disabled && cidr.prefix_len() > pool.block_size {
        let reason =
            "IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size.";
        field_error(
            ctx,
            cidr_at.clone(),
            &what,
            "IPPool.Spec.CIDR",
            &cidr.to_string(),
            reason,
        );
    }
    if pool.ipip_mode != EncapMode::Never && pool.vxlan_mode != EncapMode::Never {
        let reason = "Cannot enable both VXLAN and IPIP on the same IPPool";
        let vat = vxlan.1.unwrap_or(at.clone());
        field_error(
            ctx,
            vat,
            &what,
            "IPPool.Spec.VXLANMode",
            pool.vxlan_mode.as_str(),
            reason,
        );
    }
    if !v4 && pool.ipip_mode != EncapMode::Never {
        let reason = "IPIP is not supported on an IPv6 IP pool";
        let iat = ipip.1.unwrap_or(at.clone());
        field_error(ctx, iat, &what, "IPPool.Spec.IPIPMode", pool.ipip_mode.as_str(), reason);
    }
    for u in &pool.allowed_uses {
        if u != "Workload" && u != "Tunnel" {
            let reason = "allowedUses entries must be Workload or Tunnel";
            field_error(ctx, at.clone(), &what, "IPPool.Spec.AllowedUses", u, reason);
        }
    }
    // Overlap is checked on create only (clientv3 `Create`); an update keeps its CIDR anyway.
    // A dump (`ctx.expected`) creates nothing: it shows pools that exist, and overlapping ones
    // do exist when one was created through the CRD (`kubectl apply`, seed-lab.md I1).
    let creating = ctx.expected.is_none();
    for other in existing
        .values()
        .filter(|o| creating && o.name != name && !existing.contains_key(name))
    {
        if other.cidr.contains(&cidr.network()) || cidr.contains(&other.cidr.network()) {
            let reason = format!(
                "IPPool({name}) CIDR overlaps with IPPool({}) CIDR {}",
                other.name, other.cidr
            );
            field_error(
                ctx,
                cidr_at.clone(),
                &what,
                "IPPool.Spec.CIDR",
                &cidr.to_string(),
                &reason,
            );
        }
    }
    pool.span = at;
    Some(pool)
}

/// A Go duration (`120s`, `2m30s`, `1h`, `500ms`) rounded to whole seconds, as client.go does
/// (`math.Round(d.Seconds())`).
fn go_duration_secs(s: &str) -> Option<u64> {
    let mut total_ms: f64 = 0.0;
    let mut rest = s.trim();
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let n_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..n_end].parse().ok()?;
        rest = &rest[n_end..];
        let u_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..u_end] {
            "h" => 3_600_000.0,
            "m" => 60_000.0,
            "s" => 1000.0,
            "ms" => 1.0,
            "us" | "µs" => 0.001,
            "ns" => 0.000_001,
            _ => return None,
        };
        total_ms += n * scale;
        rest = &rest[u_end..];
    }
    Some((total_ms / 1000.0).round() as u64)
}

fn secret_ref(v: Option<Obj>, ctx: &mut Ctx) -> Option<SecretKeyRef> {
    let mut o = v?;
    let mut r = o.obj("secretKeyRef", ctx)?;
    let name = r.string("name", ctx).map(|(s, _)| s).unwrap_or_default();
    let key = r.string("key", ctx).map(|(s, _)| s).unwrap_or_default();
    r.skip(&["optional"]);
    r.finish(ctx);
    o.finish(ctx);
    Some(SecretKeyRef { name, key })
}

fn duration(o: &mut Obj, key: &str, what: &str, ctx: &mut Ctx) -> Option<u64> {
    let (s, at) = o.opt_string(key, ctx)?;
    let d = go_duration_secs(&s);
    if d.is_none() {
        ctx.error(at, format!("{what}: `{key}` {s:?} is not a duration (e.g. 120s)"));
    }
    d
}

fn cidr_list(o: &mut Obj, key: &str, what: &str, ctx: &mut Ctx) -> Vec<String> {
    let mut out = Vec::new();
    for item in o.list(key, ctx).unwrap_or(&[]) {
        let Some(mut e) = Obj::new(item, "a service CIDR entry", ctx) else {
            continue;
        };
        if let Some((c, at)) = e.string("cidr", ctx) {
            if c.parse::<IpNet>().is_err() {
                ctx.error(at, format!("{what}: `{key}` entry {c:?} is not a CIDR"));
            } else {
                out.push(c);
            }
        }
        e.finish(ctx);
    }
    out
}

fn bgp_configuration(name: &str, spec: Option<Obj>, spec_at: Span, ctx: &mut Ctx) -> Option<BgpConfiguration> {
    let what = format!("BGPConfiguration {name:?}");
    let mut c = BgpConfiguration {
        name: name.to_string(),
        span: spec_at.clone(),
        ..Default::default()
    };
    let mut set = Vec::new();
    if let Some(mut s) = spec {
        c.span = s.at.clone();
        if let Some((n, _)) = s.number("asNumber", u32::MAX as u64, ctx) {
            c.as_number = Some(n as u32);
            set.push("ASNumber");
        }
        c.node_to_node_mesh_enabled = s.bool("nodeToNodeMeshEnabled", ctx);
        if c.node_to_node_mesh_enabled.is_some() {
            set.push("nodeToNodeMeshEnabled");
        }
        if let Some((l, at)) = s.opt_string("logSeverityScreen", ctx) {
            if !matches!(l.as_str(), "Debug" | "Info" | "Warning" | "Error" | "Fatal") {
                let reason = "must be one of Debug, Info, Warning, Error, Fatal";
                field_error(ctx, at, &what, "BGPConfiguration.Spec.LogSeverityScreen", &l, reason);
            }
            c.log_severity_screen = Some(l);
        }
        if let Some((p, at)) = s.number("listenPort", 65535, ctx) {
            if p == 0 {
                let reason = "listenPort must be between 1 and 65535";
                field_error(ctx, at, &what, "BGPConfiguration.Spec.ListenPort", "0", reason);
            }
            c.listen_port = Some(p as u16);
        }
        if let Some((b, at)) = s.opt_string("bindMode", ctx) {
            if b != "None" && b != "NodeIP" {
                field_error(
                    ctx,
                    at,
                    &what,
                    "BGPConfiguration.Spec.BindMode",
                    &b,
                    "must be None or NodeIP",
                );
            }
            c.bind_mode = Some(b);
        }
        c.service_cluster_ips = cidr_list(&mut s, "serviceClusterIPs", &what, ctx);
        c.service_external_ips = cidr_list(&mut s, "serviceExternalIPs", &what, ctx);
        c.service_load_balancer_ips = cidr_list(&mut s, "serviceLoadBalancerIPs", &what, ctx);
        for (v, field) in [
            (&c.service_cluster_ips, "ServiceClusterIPs"),
            (&c.service_external_ips, "ServiceExternalIPs"),
            (&c.service_load_balancer_ips, "ServiceLoadBalancerIPs"),
        ] {
            if !v.is_empty() {
                set.push(field);
            }
        }
        c.node_mesh_max_restart_time = duration(&mut s, "nodeMeshMaxRestartTime", &what, ctx);
        if c.node_mesh_max_restart_time.is_some() {
            set.push("nodeMeshMaxRestartTime");
        }
        let pw = s.obj("nodeMeshPassword", ctx);
        c.node_mesh_password = secret_ref(pw, ctx);
        if c.node_mesh_password.is_some() {
            set.push("nodeMeshPassword");
        }
        c.ignored_interfaces = s.string_list("ignoredInterfaces", ctx);
        for k in ["communities", "prefixAdvertisements"] {
            if let Some(v) = s.take(k) {
                ctx.warn(
                    ctx.span(v),
                    format!("{what}: `{k}` is valid but not modelled by fabsim; ignored"),
                );
            }
        }
        s.finish(ctx);
    }
    if name != "default" {
        // bgpconfig.go: these may only be set on the global object.
        for field in set {
            let reason = format!("Cannot set {field} on a non default BGP Configuration.");
            field_error(
                ctx,
                c.span.clone(),
                &what,
                &format!("BGPConfiguration.Spec.{field}"),
                "",
                &reason,
            );
        }
        if !name.starts_with("node.") {
            ctx.warn(
                c.span.clone(),
                format!("{what}: only `default` and `node.<nodename>` are read by confd; ignored"),
            );
        }
    }
    Some(c)
}

/// Splits `ip`, `ip:port`, `[v6]:port` like Go's `net.SplitHostPort` (client.go `parseIPPort`).
pub fn split_peer_ip(s: &str) -> (String, u16) {
    if let Some(rest) = s.strip_prefix('[') {
        if let Some((host, port)) = rest.split_once("]:") {
            if let Ok(p) = port.parse() {
                return (host.to_string(), p);
            }
        }
        return (s.to_string(), 0);
    }
    match s.split_once(':') {
        Some((host, port)) if !port.contains(':') => match port.parse() {
            Ok(p) => (host.to_string(), p),
            Err(_) => (s.to_string(), 0),
        },
        _ => (s.to_string(), 0),
    }
}

fn bgp_peer(name: &str, spec: Option<Obj>, spec_at: Span, ctx: &mut Ctx) -> Option<BgpPeer> {
    let what = format!("BGPPeer {name:?}");
    let mut p = BgpPeer {
        name: name.to_string(),
        source_address: String::new(),
        span: spec_at,
        ..Default::default()
    };
    let Some(mut s) = spec else {
        return Some(p);
    };
    p.span = s.at.clone();
    p.node = s.opt_string("node", ctx).map(|(v, _)| v);
    let node_selector = s.opt_string("nodeSelector", ctx);
    let peer_ip = s.opt_string("peerIP", ctx);
    let as_number = s.number("asNumber", u32::MAX as u64, ctx);
    let peer_selector = s.opt_string("peerSelector", ctx);
    p.keep_original_next_hop = s.bool("keepOriginalNextHop", ctx).unwrap_or(false);
    let pw = s.obj("password", ctx);
    p.password = secret_ref(pw, ctx);
    if let Some((sa, at)) = s.opt_string("sourceAddress", ctx) {
        if sa != "UseNodeIP" && sa != "None" {
            field_error(
                ctx,
                at,
                &what,
                "BGPPeer.Spec.SourceAddress",
                &sa,
                "must be UseNodeIP or None",
            );
        }
        p.source_address = sa;
    }
    p.max_restart_time = duration(&mut s, "maxRestartTime", &what, ctx);
    p.num_allowed_local_as_numbers = s.number("numAllowedLocalASNumbers", 10, ctx).map(|(n, _)| n as i32);
    p.ttl_security = s.number("ttlSecurity", 255, ctx).map(|(n, _)| n as u8);
    let reachable_by = s.opt_string("reachableBy", ctx);
    s.finish(ctx);

    for (sel, field) in [(&node_selector, "NodeSelector"), (&peer_selector, "PeerSelector")] {
        if let Some((text, at)) = sel {
            if let Err(e) = Selector::parse(text) {
                field_error(ctx, at.clone(), &what, &format!("BGPPeer.Spec.{field}"), text, &e);
            }
        }
    }
    if p.node.is_some() && node_selector.is_some() {
        let reason = "Node field must be empty when NodeSelector is specified";
        field_error(
            ctx,
            p.span.clone(),
            &what,
            "Node",
            p.node.as_deref().unwrap_or(""),
            reason,
        );
    }
    if let (Some((ip, at)), Some(_)) = (&peer_ip, &peer_selector) {
        let reason = "PeerIP field must be empty when PeerSelector is specified";
        field_error(ctx, at.clone(), &what, "PeerIP", ip, reason);
    }
    if let (Some((n, at)), Some(_)) = (&as_number, &peer_selector) {
        if *n != 0 {
            let reason = "ASNumber field must be empty when PeerSelector is specified";
            field_error(ctx, at.clone(), &what, "ASNumber", &n.to_string(), reason);
        }
    }
    let peer_addr = peer_ip.as_ref().map(|(ip, at)| {
        let (host, _) = split_peer_ip(ip);
        let parsed = host.parse::<IpAddr>();
        if parsed.is_err() {
            field_error(
                ctx,
                at.clone(),
                &what,
                "BGPPeer.Spec.PeerIP",
                ip,
                "PeerIP is invalid IP address",
            );
        }
        parsed.ok()
    });
    if let Some((rb, at)) = &reachable_by {
        let reason = match (rb.parse::<IpAddr>(), peer_addr.flatten()) {
            (_, None) if peer_ip.is_none() => Some("ReachablyBy field must be empty when PeerIP is empty"),
            (Err(_), _) => Some("ReachableBy is invalid address"),
            (Ok(a), Some(b)) if a.is_ipv4() != b.is_ipv4() => Some("ReachableBy and PeerIP address family mismatched"),
            _ => None,
        };
        if let Some(r) = reason {
            field_error(ctx, at.clone(), &what, "ReachableBy", rb, r);
        }
    }
    p.node_selector = node_selector.map(|(v, _)| v);
    p.peer_ip = peer_ip.map(|(v, _)| v);
    p.as_number = as_number.map_or(0, |(n, _)| n as u32);
    p.peer_selector = peer_selector.map(|(v, _)| v);
    p.reachable_by = reachable_by.map(|(v, _)| v);
    Some(p)
}

/// `ParseCIDROrIP`: `10.0.0.1/24` keeps its prefix, a bare address is a /32.
fn parse_cidr_or_ip(s: &str) -> Option<Ipv4Net> {
    if let Ok(n) = s.parse::<Ipv4Net>() {
        return Some(n);
    }
    s.parse::<Ipv4Addr>().ok().map(Ipv4Net::from)
}

fn set_ipv4(node: &mut Node, s: &str, at: Span, ctx: &mut Ctx) {
    match parse_cidr_or_ip(s) {
        Some(n) => node.ipv4_address = Some(n),
        None => ctx.error(
            at,
            format!("Node {:?}: ipv4Address {s:?} is not an IPv4 address or CIDR", node.name),
        ),
    }
}

fn set_as(node: &mut Node, s: &str, at: Span, ctx: &mut Ctx) {
    match s.parse::<u32>() {
        Ok(n) => node.as_number = Some(n),
        Err(_) => ctx.error(at, format!("Node {:?}: AS number {s:?} is not a number", node.name)),
    }
}

/// A 6-byte MAC in Go's `net.ParseMAC` colon or hyphen form (the validator's `mac` rule;
/// the 8- and 20-byte forms it also takes are no VXLAN MAC).
fn set_mac(node: &mut Node, s: &str, at: Span, ctx: &mut Ctx) {
    match parse_mac(s) {
        Some(m) => node.vxlan_tunnel_mac = Some(m),
        None => ctx.error(
            at,
            format!("Node {:?}: vxlanTunnelMACAddr {s:?} is not a MAC address", node.name),
        ),
    }
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = if s.contains('-') { '-' } else { ':' };
    let parts: Vec<&str> = s.split(sep).collect();
    let mut mac = [0u8; 6];
    if parts.len() != 6 {
        return None;
    }
    for (b, p) in mac.iter_mut().zip(&parts) {
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    Some(mac)
}

fn set_tunnel(slot: &mut Option<Ipv4Addr>, s: &str, at: Span, ctx: &mut Ctx) {
    match s.parse::<Ipv4Addr>() {
        Ok(a) => *slot = Some(a),
        Err(_) => ctx.error(at, format!("tunnel address {s:?} is not an IPv4 address")),
    }
}

/// A `projectcalico.org/v3` Node: its `spec.bgp` replaces the node's Calico BGP fields (what
/// `calicoctl apply` writes into the KDD annotations).
fn calico_node(node: &mut Node, spec: Option<Obj>, ctx: &mut Ctx) {
    // `calicoctl apply` replaces the whole spec: what the new one omits is gone (the lab's
    // k-master loses its ipv4IPIPTunnelAddr at s3a, seed-lab.md C51).
    node.ipv4_address = None;
    node.ipv6_address = None;
    node.as_number = None;
    node.route_reflector_cluster_id = None;
    node.ipv4_ipip_tunnel_addr = None;
    node.ipv4_vxlan_tunnel_addr = None;
    node.vxlan_tunnel_mac = None;
    let Some(mut s) = spec else {
        return;
    };
    node.span = s.at.clone();
    if let Some(mut b) = s.obj("bgp", ctx) {
        if let Some((v, at)) = b.opt_string("ipv4Address", ctx) {
            set_ipv4(node, &v, at, ctx);
        }
        node.ipv6_address = b.opt_string("ipv6Address", ctx).map(|(v, _)| v);
        if let Some((v, at)) = b.opt_string("asNumber", ctx) {
            set_as(node, &v, at, ctx);
        }
        if let Some((v, at)) = b.opt_string("ipv4IPIPTunnelAddr", ctx) {
            set_tunnel(&mut node.ipv4_ipip_tunnel_addr, &v, at, ctx);
        }
        node.route_reflector_cluster_id = b.opt_string("routeReflectorClusterID", ctx).map(|(v, _)| v);
        b.finish(ctx);
    }
    if let Some((v, at)) = s.opt_string("ipv4VXLANTunnelAddr", ctx) {
        set_tunnel(&mut node.ipv4_vxlan_tunnel_addr, &v, at, ctx);
    }
    if let Some((v, at)) = s.opt_string("vxlanTunnelMACAddr", ctx) {
        set_mac(node, &v, at, ctx);
    }
    s.skip(&["orchRefs", "addresses", "wireguard", "interfaceName"]);
    s.finish(ctx);
}

/// A Kubernetes Node: labels, pod CIDRs and Calico's annotations (KDD node.go).
fn k8s_node(
    node: &mut Node,
    annotations: &BTreeMap<String, String>,
    spec: Option<Obj>,
    kube: &mut KubeNode,
    ctx: &mut Ctx,
) {
    let at = node.span.clone();
    for (k, v) in annotations {
        let Some(field) = k.strip_prefix("projectcalico.org/") else {
            continue;
        };
        match field {
            "IPv4Address" => set_ipv4(node, v, at.clone(), ctx),
            "IPv6Address" => node.ipv6_address = Some(v.clone()),
            "ASNumber" => set_as(node, v, at.clone(), ctx),
            "RouteReflectorClusterID" => node.route_reflector_cluster_id = Some(v.clone()),
            "IPv4IPIPTunnelAddr" => set_tunnel(&mut node.ipv4_ipip_tunnel_addr, v, at.clone(), ctx),
            "IPv4VXLANTunnelAddr" => set_tunnel(&mut node.ipv4_vxlan_tunnel_addr, v, at.clone(), ctx),
            "VXLANTunnelMACAddr" => set_mac(node, v, at.clone(), ctx),
            _ => {}
        }
    }
    let Some(mut s) = spec else {
        return;
    };
    let mut cidrs = Vec::new();
    if let Some((c, at)) = s.opt_string("podCIDR", ctx) {
        cidrs.push((c, at));
    }
    let at = s.at.clone();
    for c in s.string_list("podCIDRs", ctx).unwrap_or_default() {
        cidrs.push((c, at.clone()));
    }
    for (c, at) in cidrs {
        match c.parse::<IpNet>() {
            Ok(n) if !node.pod_cidrs.contains(&n) => node.pod_cidrs.push(n),
            Ok(_) => {}
            Err(_) => ctx.error(at, format!("Node {:?}: podCIDR {c:?} is not a CIDR", node.name)),
        }
    }
    kube.taints = kube::taints(&mut s, ctx);
    kube.unschedulable = s.bool("unschedulable", ctx).unwrap_or(false);
    s.skip(&["externalID", "providerID", "configSource"]);
    s.finish(ctx);
}

fn block_affinity(name: &str, spec: Option<Obj>, spec_at: Span, ctx: &mut Ctx) -> Option<BlockAffinity> {
    let what = format!("BlockAffinity {name:?}");
    let Some(mut s) = spec else {
        ctx.error(spec_at, format!("{what} has no spec"));
        return None;
    };
    let at = s.at.clone();
    let node = s.string("node", ctx).map(|(v, _)| v).unwrap_or_default();
    let cidr = s.string("cidr", ctx);
    let state = s.string("state", ctx).map(|(v, _)| v).unwrap_or_default();
    let deleted = s.string("deleted", ctx).is_some_and(|(v, _)| v == "true");
    s.finish(ctx);
    let cidr = match cidr.as_ref().map(|(c, at)| (c.parse::<IpNet>(), at)) {
        Some((Ok(c), _)) => c,
        Some((Err(_), at)) => {
            ctx.error(at.clone(), format!("{what}: cidr is not a CIDR"));
            return None;
        }
        None => {
            ctx.error(at, format!("{what}: spec.cidr is required"));
            return None;
        }
    };
    if !matches!(state.as_str(), "" | "confirmed" | "pending" | "pendingDeletion") {
        ctx.warn(at.clone(), format!("{what}: unknown state {state:?}"));
    }
    Some(BlockAffinity {
        name: name.to_string(),
        node,
        cidr,
        state,
        deleted,
        span: at,
    })
}

fn ipam_block(name: &str, spec: Option<Obj>, spec_at: Span, ctx: &mut Ctx) -> Option<IpamBlock> {
    let what = format!("IPAMBlock {name:?}");
    let Some(mut s) = spec else {
        ctx.error(spec_at, format!("{what} has no spec"));
        return None;
    };
    let at = s.at.clone();
    let cidr = s.string("cidr", ctx);
    let affinity = s.opt_string("affinity", ctx).map(|(v, _)| v);
    let strict_affinity = s.bool("strictAffinity", ctx).unwrap_or(false);
    let mut allocations = Vec::new();
    for a in s.list("allocations", ctx).unwrap_or(&[]) {
        allocations.push(match &a.value {
            Yv::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        });
    }
    let mut unallocated = Vec::new();
    for a in s.list("unallocated", ctx).unwrap_or(&[]) {
        match &a.value {
            Yv::Int(i) if *i >= 0 => unallocated.push(*i as u64),
            _ => ctx.error(ctx.span(a), format!("{what}: unallocated entries must be ordinals")),
        }
    }
    let mut attributes = Vec::new();
    for a in s.list("attributes", ctx).unwrap_or(&[]) {
        let Some(mut o) = Obj::new(a, "an allocation attribute", ctx) else {
            continue;
        };
        let handle_id = o.opt_string("handle_id", ctx).map(|(v, _)| v);
        let secondary = o.string_map("secondary", ctx);
        o.finish(ctx);
        attributes.push(AllocationAttribute { handle_id, secondary });
    }
    let sequence_number = s.number("sequenceNumber", u64::MAX, ctx).map_or(0, |(n, _)| n);
    let deleted = s.bool("deleted", ctx).unwrap_or(false);
    s.skip(&["sequenceNumberForAllocation"]);
    s.finish(ctx);
    let cidr = match cidr.map(|(c, at)| (c.parse::<IpNet>(), at)) {
        Some((Ok(c), _)) => c,
        Some((Err(_), at)) => {
            ctx.error(at, format!("{what}: cidr is not a CIDR"));
            return None;
        }
        None => {
            ctx.error(at, format!("{what}: spec.cidr is required"));
            return None;
        }
    };
    Some(IpamBlock {
        name: name.to_string(),
        cidr,
        affinity,
        strict_affinity,
        allocations,
        unallocated,
        attributes,
        sequence_number,
        deleted,
        span: at,
    })
}

/// A Secret's `stringData` and (base64) `data`.
fn secret_values(top: &Obj, ctx: &mut Ctx) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (k, v) in top.entries {
        let decode = match k.value.as_str() {
            "data" => true,
            "stringData" => false,
            _ => continue,
        };
        for (key, val) in v.value.entries().unwrap_or(&[]) {
            let text = val.value.scalar().unwrap_or_default();
            let text = if decode {
                match base64_decode(&text) {
                    Some(t) => t,
                    None => {
                        ctx.error(ctx.span(val), format!("Secret data `{}` is not base64", key.value));
                        continue;
                    }
                }
            } else {
                text
            };
            out.insert(key.value.clone(), text);
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<String> {
    let mut bits: u32 = 0;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<(Datastore, Vec<Diagnostic>), InputError> {
        Datastore::from_yaml(&[("t.yaml", text)])
    }

    #[test]
    fn pool_defaults_and_errors() {
        let (ds, w) =
            load("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.66.0.0/16}\n")
                .expect("valid");
        let p = &ds.ip_pools["p"];
        assert_eq!(
            (p.block_size, p.ipip_mode, p.node_selector.as_str()),
            (26, EncapMode::Never, "all()")
        );
        assert!(w.is_empty(), "{w:?}");

        let both = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata:\n  name: p\nspec:\n  cidr: 10.66.0.0/16\n  ipipMode: Always\n  vxlanMode: Always\n";
        let e = load(both).expect_err("both encaps");
        assert!(
            e.to_string()
                .contains("Cannot enable both VXLAN and IPIP on the same IPPool"),
            "{e}"
        );
        assert!(e.to_string().starts_with("t.yaml:8:14"), "{e}");

        let small = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.66.0.0/28, blockSize: 33}\n";
        assert!(load(small)
            .expect_err("bs")
            .to_string()
            .contains("IPv4 block size must be between 20 and 32"));

        let unmasked = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.66.1.0/16, color: red}\n";
        let (ds, w) = load(unmasked).expect("normalised");
        assert_eq!(ds.ip_pools["p"].cidr.to_string(), "10.66.0.0/16");
        assert_eq!(w.len(), 2, "{w:?}");

        let crd = "apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.66.0.0/16, ipipMode: always, vxlanMode: Always}\n";
        let (ds, _) = load(crd).expect("crd objects are not validated");
        assert_eq!(ds.ip_pools["p"].ipip_mode, EncapMode::Never);
    }

    /// calicoctl refuses to create a pool overlapping another; a dump shows pools that exist,
    /// overlapping ones included (one created through the CRD), and reads as it is.
    #[test]
    fn overlapping_pools_are_refused_on_create_and_read_from_a_dump() {
        let two = "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: old}\nspec: {cidr: 10.66.0.0/16}\n---\n\
                   apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: new}\nspec: {cidr: 10.66.0.0/16, blockSize: 24}\n";
        let refused = load(two).expect_err("overlap").to_string();
        assert!(
            refused.contains("IPPool(new) CIDR overlaps with IPPool(old) CIDR 10.66.0.0/16"),
            "{refused}"
        );
        let mut ds = Datastore::default();
        ds.load_yaml_expecting(two, "resources.yaml", Some(&["IPPool"]))
            .expect("a dump creates nothing");
        assert_eq!(ds.ip_pools.keys().collect::<Vec<_>>(), ["new", "old"]);
    }

    #[test]
    fn peers_nodes_and_durations() {
        let y = "apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: x}\nspec: {peerIP: '10.0.0.1:180', peerSelector: all()}\n";
        assert!(load(y)
            .expect_err("exclusive")
            .to_string()
            .contains("PeerIP field must be empty"));
        assert_eq!(split_peer_ip("[ac13::57]:50"), ("ac13::57".to_string(), 50));
        assert_eq!(split_peer_ip("10.0.0.1"), ("10.0.0.1".to_string(), 0));
        assert_eq!(go_duration_secs("2m30s"), Some(150));
        let k8s = "apiVersion: v1\nkind: Node\nmetadata:\n  name: k-w3\n  labels: {a: true}\n  annotations:\n    projectcalico.org/IPv4Address: 10.0.137.142/24\n    projectcalico.org/ASNumber: '65001'\nspec: {podCIDR: 10.66.3.0/24}\n";
        let (ds, _) = load(k8s).expect("node");
        let n = &ds.nodes["k-w3"];
        assert_eq!(
            n.ipv4_address.map(|a| a.to_string()).as_deref(),
            Some("10.0.137.142/24")
        );
        assert_eq!((n.as_number, n.labels["a"].as_str()), (Some(65001), "true"));
        assert_eq!(base64_decode("c2VjcmV0").as_deref(), Some("secret"));
    }
}
