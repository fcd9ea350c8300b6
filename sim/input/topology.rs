//! Topology YAML → `model::Network`: devices in file order, their embedded EOS, netplan and
//! BIRD blocks (through `input::eos` / `input::netplan` / `input::bird`), links, segments and the external network,
//! then the checks that need the whole fabric (addresses, subnets). Never computes routing.
//!
//! Format (one mapping; later issues add top-level keys such as BGP or Kubernetes):
//! `name`, `devices` (name → `kind: eos|linux|external` plus that kind's keys), `links`
//! (point-to-point `[DEV:IF, DEV:IF]`), `segments` (name → `[DEV:IF, …]`, multi-access) and
//! `cluster` (a Kubernetes cluster with Calico on the k8s-nodes, `input::cluster`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::Path;

use ipnet::Ipv4Net;
use serde::Deserialize;
use serde_saphyr::Spanned;

use self::yaml::OrderedMap;
use super::cluster::{self, RawCluster};
use super::{bird, eos, netplan};
use crate::diag::{Diagnostic, InputError, Severity, Span, TextOrigin};
use crate::model::{
    AddrConfig, Device, DeviceId, DeviceKind, DhcpLease, ExternalConfig, IfId, Kubelet, L2Domain, L2Id, Network,
    Responder, VendorProfile,
};

/// A loaded topology: the model plus the warnings found while building it.
#[derive(Debug)]
pub struct Loaded {
    pub net: Network,
    pub warnings: Vec<Diagnostic>,
    pub name: String,
}

/// Reads and loads a topology file — fabsim's own format or a containerlab `*.clab.yml`
/// (`input::containerlab`) — or a snapshot directory (`input::snapshot`); diagnostics name the
/// path as given.
pub fn load_topology(path: &Path) -> Result<Loaded, InputError> {
    let file = path.display().to_string();
    if super::snapshot::is_snapshot(path) {
        return super::snapshot::load(path);
    }
    if path.is_dir() {
        let msg = "a directory is read as a snapshot, which needs a configs/ directory (configs/NAME.cfg)";
        return Err(Diagnostic::error(Span::new(&file, 1, 1), msg).into());
    }
    let text = super::read_text(path).map_err(|e| {
        Diagnostic::error(
            Span::new(&file, e.line, e.col),
            format!("cannot read the topology file: {}", e.message),
        )
    })?;
    if super::containerlab::is_containerlab(path, &text) {
        return super::containerlab::load(path, &text);
    }
    parse_topology(&text, &file)
}

/// A side file: a topology file next to the device files (a snapshot's `fabsim.yaml`, a
/// containerlab topology's `LAB.fabsim.yaml`) holding what none of them says — device order
/// and kinds, kubelet, hostnames, NIC lists, boot and `config_at` times, external networks.
/// Absent, it is an empty topology. Its text is returned for the builder to borrow.
pub(crate) fn read_side_file(path: &Path) -> Result<(String, TextOrigin), InputError> {
    let file = path.display().to_string();
    let origin = TextOrigin {
        file: file.clone(),
        line: 1,
        col: 1,
    };
    if !path.is_file() {
        return Ok(("{}".to_string(), origin));
    }
    let text = super::read_text(path).map_err(|e| {
        Diagnostic::error(
            Span::new(&file, e.line, e.col),
            format!("cannot read file: {}", e.message),
        )
    })?;
    Ok((text, origin))
}

/// Loads a topology from its text; `file` is the name diagnostics use.
pub fn parse_topology(text: &str, file: &str) -> Result<Loaded, InputError> {
    let origin = TextOrigin {
        file: file.to_string(),
        line: 1,
        col: 1,
    };
    let raw: RawTopology = yaml::from_str(text, &origin)?;
    if raw.devices.is_none() {
        // An empty document deserialises to all defaults; a topology file must list devices.
        let blank = text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
        let msg = if blank {
            "unexpected end of file"
        } else {
            "missing field `devices`"
        };
        return Err(Diagnostic::error(origin.span_at(0, 0), msg).into());
    }
    let name = raw.name.clone().unwrap_or_else(|| {
        let stem = std::path::Path::new(file).file_stem().and_then(|s| s.to_str());
        stem.unwrap_or(file).to_string()
    });
    build(&raw, origin, text, name, |_| {})
}

/// Builds the network of `raw` (whose text is `text`): its devices, then whatever `more` adds
/// (a snapshot directory's configuration files and links, `input::snapshot`), then its links,
/// segments and leases, the fabric-wide checks and its cluster.
pub(crate) fn build<'a>(
    raw: &'a RawTopology,
    origin: TextOrigin,
    text: &'a str,
    name: String,
    more: impl FnOnce(&mut Builder<'a>),
) -> Result<Loaded, InputError> {
    let mut b = Builder::new(origin.clone(), text);
    let devices = raw.devices.as_ref().map_or(&[][..], |d| &d.0[..]);
    for (key, dev) in devices {
        b.add_device(key, dev);
    }
    more(&mut b);
    b.set_source(origin.clone(), text);
    for link in &raw.links {
        b.add_link(link);
    }
    for (key, members) in &raw.segments.0 {
        b.add_segment(key, members);
    }
    for (key, dev) in devices {
        b.add_leases(key, dev);
    }
    b.check_links();
    b.check_addresses();
    let mut loaded = b.finish(name)?;
    if let Some(c) = &raw.cluster {
        let warnings = cluster::declare(&mut loaded.net, c, &origin, text)?;
        loaded.warnings.extend(warnings);
    }
    Ok(loaded)
}

// ---------------------------------------------------------------------------------------------
// The file as written. Every value that a diagnostic may point at is `Spanned`.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTopology {
    /// Defaults to the file's name without its extension.
    pub name: Option<String>,
    /// Required in a topology file; a snapshot's `fabsim.yaml` may leave it out (its devices
    /// come from `configs/` and `hosts/`).
    devices: Option<OrderedMap<RawDevice>>,
    #[serde(default)]
    links: Vec<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    segments: OrderedMap<Vec<Spanned<String>>>,
    /// A kubeadm cluster with Calico on the k8s-nodes, built when the topology loads
    /// (`input::cluster`).
    cluster: Option<Spanned<RawCluster>>,
}

/// One device. The keys of all kinds are accepted here; `Builder::check_keys` then rejects
/// those that do not belong to the device's kind, with a message naming the kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    kind: Option<Spanned<String>>,
    boot: Option<Spanned<String>>,
    /// When the device's configuration was entered (it runs with factory defaults until then).
    config_at: Option<Spanned<String>>,
    // eos
    config: Option<Spanned<String>>,
    // linux
    hostname: Option<Spanned<String>>,
    interfaces: Option<Spanned<Vec<Spanned<String>>>>,
    ip_forward: Option<Spanned<bool>>,
    /// A container image from the bundled catalogue (pods).
    image: Option<Spanned<String>>,
    /// `sysctl -w` settings: `net.ipv4.ip_forward`, `net.ipv4.conf.IF.proxy_arp`.
    sysctl: Option<Spanned<OrderedMap<Spanned<u64>>>>,
    netplan: Option<Spanned<String>>,
    /// BIRD 1.6 configuration (`bird.cfg` as confd renders it).
    bird: Option<Spanned<String>>,
    /// Fragments `bird:` includes, by file name (`bird_aggr.cfg`, `bird_ipam.cfg`).
    bird_includes: Option<Spanned<OrderedMap<Spanned<String>>>>,
    // k8s-node
    /// kubeadm/kubelet on the host.
    kubelet: Option<Spanned<RawKubelet>>,
    // external
    interface: Option<Spanned<String>>,
    gateway: Option<Spanned<String>>,
    leases: Option<Spanned<Vec<RawLease>>>,
    responders: Option<Spanned<Vec<RawResponder>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKubelet {
    /// The kubeadm/kubelet version installed (`v1.28.15`).
    version: Spanned<String>,
    /// The address kubelet registers as the node's InternalIP: what its hostname resolves to
    /// (`/etc/hosts`) or its `--node-ip`.
    node_ip: Option<Spanned<String>>,
    /// `maxPods` of the host's kubelet configuration (the kubelet-config it joins with).
    max_pods: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLease {
    device: Spanned<String>,
    interface: Spanned<String>,
    address: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponder {
    address: Spanned<String>,
    /// Default 64, the TTL Linux and EOS originate packets with.
    reply_ttl: Option<u8>,
}

impl RawDevice {
    /// The keys that only some kinds have, with the location of their values when present.
    fn kind_keys(&self) -> [(&'static str, Option<&serde_saphyr::Location>); 14] {
        fn at<T>(v: &Option<Spanned<T>>) -> Option<&serde_saphyr::Location> {
            v.as_ref().map(|s| &s.referenced)
        }
        [
            ("config", at(&self.config)),
            ("hostname", at(&self.hostname)),
            ("interfaces", at(&self.interfaces)),
            ("ip_forward", at(&self.ip_forward)),
            ("sysctl", at(&self.sysctl)),
            ("image", at(&self.image)),
            ("netplan", at(&self.netplan)),
            ("bird", at(&self.bird)),
            ("bird_includes", at(&self.bird_includes)),
            ("kubelet", at(&self.kubelet)),
            ("interface", at(&self.interface)),
            ("gateway", at(&self.gateway)),
            ("leases", at(&self.leases)),
            ("responders", at(&self.responders)),
        ]
    }
}

/// The keys each kind accepts besides `kind`, `boot` and `config_at`.
fn keys_of(kind: DeviceKind) -> &'static [&'static str] {
    match kind {
        DeviceKind::Eos => &["config"],
        DeviceKind::Linux => &[
            "hostname",
            "interfaces",
            "ip_forward",
            "sysctl",
            "image",
            "netplan",
            "bird",
            "bird_includes",
        ],
        DeviceKind::External => &["interface", "gateway", "leases", "responders"],
    }
}

fn kind_name(kind: DeviceKind) -> &'static str {
    match kind {
        DeviceKind::Eos => "eos",
        DeviceKind::Linux => "linux",
        DeviceKind::External => "external",
    }
}

// ---------------------------------------------------------------------------------------------
// Building the model.

/// An IPv4 address bound to an interface (statically, or by a DHCP lease), for the
/// fabric-wide address checks.
struct Claim {
    iface: IfId,
    net: Ipv4Net,
    span: Span,
}

pub(crate) struct Builder<'a> {
    origin: TextOrigin,
    source: &'a str,
    pub net: Network,
    pub diags: Vec<Diagnostic>,
    /// Devices that failed to load (bad kind); references to them are not reported again.
    broken: BTreeSet<String>,
    /// Linux hosts with an explicit `interfaces:` list: other names are errors there.
    pub declared: BTreeSet<DeviceId>,
    /// Where each static address was written, when that is more precise than the interface's
    /// own span (netplan `addresses` entries, the external gateway).
    pub addr_spans: BTreeMap<IfId, Span>,
    /// Where each interface joined its link or segment.
    attached: BTreeMap<IfId, Span>,
    links: Vec<L2Id>,
    lease_claims: Vec<Claim>,
    /// `config_at:` per device, applied once the whole topology is built and checked.
    deferred: Vec<(DeviceId, u64)>,
}

impl<'a> Builder<'a> {
    fn new(origin: TextOrigin, source: &'a str) -> Self {
        Builder {
            origin,
            source,
            net: Network::default(),
            diags: Vec::new(),
            broken: BTreeSet::new(),
            declared: BTreeSet::new(),
            addr_spans: BTreeMap::new(),
            attached: BTreeMap::new(),
            links: Vec::new(),
            lease_claims: Vec::new(),
            deferred: Vec::new(),
        }
    }

    fn span<T>(&self, v: &Spanned<T>) -> Span {
        yaml::span(&self.origin, &v.referenced)
    }

    /// The file whose `Spanned` values the next calls read (a snapshot's `links.yaml`).
    pub(crate) fn set_source(&mut self, origin: TextOrigin, source: &'a str) {
        self.origin = origin;
        self.source = source;
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::error(span, msg));
    }

    /// The file being read (a reader's messages name the side file that declared something).
    pub(crate) fn source_file(&self) -> &str {
        &self.origin.file
    }

    fn finish(mut self, name: String) -> Result<Loaded, InputError> {
        self.diags
            .sort_by(|a, b| (a.severity, &a.span).cmp(&(b.severity, &b.span)));
        if self.diags.iter().any(|d| d.severity == Severity::Error) {
            self.diags.retain(|d| d.severity == Severity::Error);
            return Err(InputError(self.diags));
        }
        for (dev, at_ms) in std::mem::take(&mut self.deferred) {
            self.net.defer_config(dev, at_ms);
        }
        Ok(Loaded {
            net: self.net,
            warnings: self.diags,
            name,
        })
    }

    // --- devices ------------------------------------------------------------------------------

    fn add_device(&mut self, key: &Spanned<String>, raw: &RawDevice) {
        let span = self.span(key);
        let name = key.value.clone();
        if name.is_empty() || name.contains(|c: char| c == ':' || c.is_whitespace()) {
            self.error(
                span,
                format!("expected a device name without `:` or spaces, found `{name}`"),
            );
            self.broken.insert(name);
            return;
        }
        let Some((kind, k8s_node)) = self.kind(&span, raw) else {
            self.broken.insert(name);
            return;
        };
        self.check_keys(kind, k8s_node, raw);
        let boot_ms = raw.boot.as_ref().map_or(0, |b| self.duration(b));
        let id = self.push_device(name, kind, boot_ms, span.clone());
        if let Some(at) = &raw.config_at {
            let at_ms = self.duration(at);
            self.deferred.push((id, at_ms));
        }
        if k8s_node {
            match &raw.kubelet {
                Some(k) => {
                    let node_ip = match &k.value.node_ip {
                        None => None,
                        Some(ip) => match ip.value.parse() {
                            Ok(a) => Some(a),
                            Err(_) => {
                                let msg = format!("expected an IPv4 address, found `{}`", ip.value);
                                self.error(self.span(ip), msg);
                                None
                            }
                        },
                    };
                    let max_pods = k.value.max_pods.as_ref().and_then(|m| {
                        if m.value == 0 {
                            self.error(self.span(m), "expected maxPods of at least 1");
                            return None;
                        }
                        Some(m.value)
                    });
                    self.net.devices[id.idx()].kubelet = Some(Kubelet {
                        version: k.value.version.value.clone(),
                        node_ip,
                        max_pods,
                    });
                }
                None => self.error(
                    span,
                    "a k8s-node needs `kubelet: {version: VERSION}` (the kubeadm/kubelet installed, e.g. v1.28.15)",
                ),
            }
        }
        match kind {
            DeviceKind::Eos => self.eos_device(id, raw),
            DeviceKind::Linux => self.linux_device(id, raw),
            DeviceKind::External => self.external_device(id, raw),
        }
    }

    fn push_device(&mut self, name: String, kind: DeviceKind, boot_ms: u64, span: Span) -> DeviceId {
        let id = DeviceId(self.net.devices.len() as u32);
        self.net.devices.push(Device {
            name,
            kind,
            hostname: None,
            ifaces: Vec::new(),
            boot_ms,
            profile: match kind {
                DeviceKind::Eos => VendorProfile::eos(),
                // The external network's gateway is a Linux/NAT box as far as defaults go.
                DeviceKind::Linux | DeviceKind::External => VendorProfile::linux(),
            },
            statics: Vec::new(),
            ospf: None,
            bgp: None,
            bird: None,
            acls: BTreeMap::new(),
            // EOS always routes; hosts only when the topology says so.
            ip_forward: kind == DeviceKind::Eos,
            masquerade: None,
            kube_proxy: None,
            external: None,
            image: None,
            kubelet: None,
            span,
        });
        id
    }

    /// A device that only a configuration file declares (a snapshot's `configs/NAME.cfg` or
    /// `hosts/NAME.yaml`): an EOS switch, or a Linux host as a topology entry with nothing but
    /// its kind would be.
    pub(crate) fn add_bare_device(&mut self, name: &str, kind: DeviceKind, span: Span) -> DeviceId {
        let id = self.push_device(name.to_string(), kind, 0, span);
        if kind == DeviceKind::Linux {
            self.linux_basics(id, None, false);
        }
        id
    }

    /// The device kind, and whether it is a Kubernetes node host (a Linux host with kubelet).
    fn kind(&mut self, dev_span: &Span, raw: &RawDevice) -> Option<(DeviceKind, bool)> {
        let Some(kind) = &raw.kind else {
            let msg = "missing `kind` (expected eos, linux, k8s-node or external)";
            self.error(dev_span.clone(), msg);
            return None;
        };
        match kind.value.as_str() {
            "eos" => Some((DeviceKind::Eos, false)),
            "linux" => Some((DeviceKind::Linux, false)),
            "k8s-node" => Some((DeviceKind::Linux, true)),
            "external" => Some((DeviceKind::External, false)),
            other => {
                let msg = format!("unknown kind `{other}` (expected eos, linux, k8s-node or external)");
                self.error(self.span(kind), msg);
                None
            }
        }
    }

    fn check_keys(&mut self, kind: DeviceKind, k8s_node: bool, raw: &RawDevice) {
        let mut allowed = keys_of(kind).to_vec();
        if k8s_node {
            allowed.push("kubelet");
        }
        for (key, at) in raw.kind_keys() {
            if let Some(at) = at.filter(|_| !allowed.contains(&key)) {
                let msg = format!(
                    "`{key}` is not a key of kind {} (expected kind, boot, config_at, {})",
                    if k8s_node { "k8s-node" } else { kind_name(kind) },
                    allowed.join(", ")
                );
                self.error(yaml::span(&self.origin, at), msg);
            }
        }
    }

    fn duration(&mut self, v: &Spanned<String>) -> u64 {
        super::parse_go_duration(&v.value).unwrap_or_else(|| {
            let msg = format!("expected a duration like 60s, 500ms or 2m, found `{}`", v.value);
            self.error(self.span(v), msg);
            0
        })
    }

    fn eos_device(&mut self, id: DeviceId, raw: &RawDevice) {
        let Some(config) = &raw.config else { return };
        let origin = yaml::text_origin(config, self.source, &self.origin);
        match eos::apply_config(&mut self.net, id, &config.value, &origin) {
            Ok(warnings) => self.diags.extend(warnings),
            Err(e) => self.diags.extend(e.0),
        }
    }

    fn linux_device(&mut self, id: DeviceId, raw: &RawDevice) {
        let hostname = raw.hostname.as_ref().map(|h| h.value.clone());
        self.linux_basics(id, hostname, raw.ip_forward.as_ref().is_some_and(|f| f.value));
        if let Some(list) = &raw.interfaces {
            self.declared.insert(id);
            for name in &list.value {
                self.declare_linux_iface(id, name);
            }
        }
        if let Some(np) = &raw.netplan {
            self.apply_netplan(id, np);
        }
        match (&raw.bird, &raw.bird_includes) {
            (Some(cfg), incs) => self.apply_bird(id, cfg, incs.as_ref()),
            (None, Some(incs)) => {
                let span = self.span(incs);
                self.diags
                    .push(Diagnostic::warning(span, "`bird_includes` without `bird` is not used"));
            }
            (None, None) => {}
        }
        if let Some(sysctl) = &raw.sysctl {
            self.sysctl(id, &sysctl.value);
        }
        if let Some(image) = &raw.image {
            if crate::catalogue::image(&image.value).is_some() {
                self.net.devices[id.idx()].image = Some(image.value.clone());
            } else {
                let msg = format!(
                    "unknown image `{}` (fabsim's catalogue has: {})",
                    image.value,
                    crate::catalogue::names().join(", ")
                );
                self.error(self.span(image), msg);
            }
        }
    }

    /// What every Linux host has: a hostname (its name unless given) and `lo`.
    fn linux_basics(&mut self, id: DeviceId, hostname: Option<String>, ip_forward: bool) {
        let dev_span = self.net.device(id).span.clone();
        let dev = &mut self.net.devices[id.idx()];
        dev.hostname = Some(hostname.unwrap_or_else(|| dev.name.clone()));
        dev.ip_forward = ip_forward;
        let lo = add_linux_iface(&mut self.net, id, "lo", dev_span);
        let lo = &mut self.net.interfaces[lo.idx()];
        lo.addr = AddrConfig::Static(Ipv4Net::new(Ipv4Addr::LOCALHOST, 8).unwrap_or_default());
        lo.mtu = 65536; // the kernel's loopback MTU, as `ip link` shows it
    }

    /// The kernel settings fabsim models; any other key is valid Linux it does not, so a warning.
    fn sysctl(&mut self, id: DeviceId, map: &OrderedMap<Spanned<u64>>) {
        for (key, value) in &map.0 {
            let span = self.span(key);
            if let Some(d) = apply_sysctl(&mut self.net, id, &key.value, value.value != 0, span) {
                self.diags.push(d);
            }
        }
    }

    /// `bird:` with its `bird_includes:`, each block located in the file like `netplan:`.
    fn apply_bird(&mut self, id: DeviceId, cfg: &Spanned<String>, incs: Option<&Spanned<OrderedMap<Spanned<String>>>>) {
        let origin = yaml::text_origin(cfg, self.source, &self.origin);
        let includes: BTreeMap<String, (String, TextOrigin)> = incs
            .map(|m| &m.value.0[..])
            .unwrap_or_default()
            .iter()
            .map(|(name, text)| {
                let at = yaml::text_origin(text, self.source, &self.origin);
                (name.value.clone(), (text.value.clone(), at))
            })
            .collect();
        match bird::apply_bird(&mut self.net, id, &cfg.value, &origin, &includes) {
            Ok(warnings) => self.diags.extend(warnings),
            Err(e) => self.diags.extend(e.0),
        }
    }

    fn declare_linux_iface(&mut self, id: DeviceId, name: &Spanned<String>) {
        let span = self.span(name);
        if name.value == "lo" {
            self.error(
                span,
                "`lo` is always present (ifindex 1); list only the other interfaces",
            );
        } else if find_iface(&self.net, id, &name.value).is_some() {
            self.error(span, format!("interface `{}` is listed twice", name.value));
        } else if name.value.is_empty() || name.value.contains(|c: char| c.is_whitespace()) {
            self.error(
                span,
                format!("expected an interface name like ens3, found `{}`", name.value),
            );
        } else {
            add_linux_iface(&mut self.net, id, &name.value, span);
        }
    }

    fn apply_netplan(&mut self, id: DeviceId, np: &Spanned<String>) {
        let origin = yaml::text_origin(np, self.source, &self.origin);
        let create = !self.declared.contains(&id);
        match netplan::apply(&mut self.net, id, &np.value, &origin, create) {
            Ok(applied) => {
                self.diags.extend(applied.warnings);
                self.addr_spans.extend(applied.addr_spans);
            }
            Err(e) => self.diags.extend(e.0),
        }
    }

    fn external_device(&mut self, id: DeviceId, raw: &RawDevice) {
        let ifname = raw.interface.as_ref().map_or("eth0", |i| i.value.as_str());
        let if_span = raw
            .interface
            .as_ref()
            .map_or(self.net.device(id).span.clone(), |i| self.span(i));
        let iface = add_linux_iface(&mut self.net, id, ifname, if_span);
        let Some(gw) = &raw.gateway else {
            let msg = "missing `gateway` (the external network's address, e.g. 10.0.137.1/24)";
            self.error(self.net.device(id).span.clone(), msg);
            return;
        };
        let Some(gateway) = self.prefix(gw) else {
            return;
        };
        self.net.interfaces[iface.idx()].addr = AddrConfig::Static(gateway);
        self.addr_spans.insert(iface, self.span(gw));
        let responders = raw.responders.iter().flat_map(|r| &r.value);
        let responders = responders.filter_map(|r| self.responder(r)).collect();
        let external = ExternalConfig {
            gateway,
            leases: Vec::new(),
            responders,
        };
        self.net.devices[id.idx()].external = Some(external);
    }

    fn responder(&mut self, raw: &RawResponder) -> Option<Responder> {
        let address = self.address(&raw.address)?;
        Some(Responder {
            address,
            reply_ttl: raw.reply_ttl.unwrap_or(64),
        })
    }

    fn prefix(&mut self, v: &Spanned<String>) -> Option<Ipv4Net> {
        parse_prefix(&v.value).map_err(|msg| self.error(self.span(v), msg)).ok()
    }

    fn address(&mut self, v: &Spanned<String>) -> Option<Ipv4Addr> {
        v.value.trim().parse().ok().or_else(|| {
            let msg = format!("expected an IPv4 address like 8.8.8.8, found `{}`", v.value);
            self.error(self.span(v), msg);
            None
        })
    }

    // --- links and segments -------------------------------------------------------------------

    pub(crate) fn add_link(&mut self, link: &Spanned<Vec<Spanned<String>>>) {
        let span = self.span(link);
        if link.value.len() != 2 {
            let msg = format!(
                "expected a link with two endpoints like [Spine-1:Ethernet1, Leaf-1:Ethernet1], \
                 found {} (use `segments:` for more)",
                link.value.len()
            );
            self.error(span, msg);
            return;
        }
        let ends: Vec<(String, Span)> = link.value.iter().map(|e| (e.value.clone(), self.span(e))).collect();
        self.add_link_at(span, &ends);
    }

    /// A point-to-point link between `DEVICE:INTERFACE` ends written at the given places
    /// (a snapshot's LLDP captures and inferred links have no YAML behind them).
    pub(crate) fn add_link_at(&mut self, span: Span, ends: &[(String, Span)]) {
        let name = ends.iter().map(|(e, _)| e.as_str()).collect::<Vec<_>>().join("--");
        let l2 = self.add_l2(name, span, ends);
        self.links.push(l2);
    }

    pub(crate) fn add_segment(&mut self, key: &Spanned<String>, members: &[Spanned<String>]) {
        let ends: Vec<(String, Span)> = members.iter().map(|e| (e.value.clone(), self.span(e))).collect();
        self.add_l2(key.value.clone(), self.span(key), &ends);
    }

    /// Creates the L2 domain even when some endpoints are bad, so later checks still run.
    fn add_l2(&mut self, name: String, span: Span, eps: &[(String, Span)]) -> L2Id {
        let ends: Vec<(IfId, Span)> = eps
            .iter()
            .filter_map(|(ep, at)| self.endpoint(ep, at.clone()).map(|i| (i, at.clone())))
            .collect();
        self.join_l2(name, span, ends)
    }

    /// A point-to-point link between interfaces a reader resolved itself (containerlab's
    /// endpoints name cEOS ports `ethN`), checked like the others.
    pub(crate) fn join_link(&mut self, name: String, span: Span, ends: Vec<(IfId, Span)>) {
        let l2 = self.join_l2(name, span, ends);
        self.links.push(l2);
    }

    /// The L2 domain of interfaces already resolved; one already attached elsewhere is an error.
    pub(crate) fn join_l2(&mut self, name: String, span: Span, ends: Vec<(IfId, Span)>) -> L2Id {
        let id = L2Id(self.net.l2.len() as u32);
        let mut members = Vec::new();
        for (iface, at) in ends {
            if let Some(prev) = self.attached.get(&iface) {
                let msg = format!(
                    "{} is already attached at {prev} (an interface joins one link or segment)",
                    self.label(iface)
                );
                self.error(at, msg);
                continue;
            }
            self.attached.insert(iface, at);
            self.net.interfaces[iface.idx()].l2 = Some(id);
            members.push(iface);
        }
        self.net.l2.push(L2Domain { name, members, span });
        id
    }

    /// Resolves `DEVICE:INTERFACE`, creating the interface where the device allows it.
    fn endpoint(&mut self, ep: &str, span: Span) -> Option<IfId> {
        let parts = ep.split_once(':').filter(|(d, i)| !d.is_empty() && !i.is_empty());
        let Some((dev, ifname)) = parts else {
            let msg = format!("expected an endpoint like Leaf-1:Ethernet1, found `{ep}`");
            self.error(span, msg);
            return None;
        };
        let dev = self.device(dev, &span)?;
        self.iface(dev, ifname, span, true)
    }

    fn device(&mut self, name: &str, span: &Span) -> Option<DeviceId> {
        let found = self.net.device_by_name(name);
        if found.is_none() && !self.broken.contains(name) {
            self.error(span.clone(), format!("unknown device `{name}` (not under `devices:`)"));
        }
        found
    }

    /// Finds `ifname` on `dev` (EOS names in any accepted spelling). EOS ports and, on hosts
    /// without an `interfaces:` list, Linux NICs are created on first use when `create`.
    fn iface(&mut self, dev: DeviceId, ifname: &str, span: Span, create: bool) -> Option<IfId> {
        let device = self.net.device(dev);
        let (kind, devname) = (device.kind, device.name.clone());
        if kind == DeviceKind::Eos {
            let Some(canon) = eos::canonical_interface(ifname) else {
                let msg = format!("expected an EOS interface name like Ethernet1, found `{ifname}`");
                self.error(span, msg);
                return None;
            };
            if let Some(found) = self.net.iface_by_name(dev, &canon) {
                return Some(found);
            }
            if create {
                return Some(self.add_switchport(dev, canon, span));
            }
        } else if let Some(found) = find_iface(&self.net, dev, ifname) {
            return Some(found);
        } else if create && kind == DeviceKind::Linux && !self.declared.contains(&dev) {
            return Some(add_linux_iface(&mut self.net, dev, ifname, span));
        }
        let names: Vec<&str> = self
            .net
            .device(dev)
            .ifaces
            .iter()
            .map(|i| self.net.iface(*i).name.as_str())
            .collect();
        let msg = format!(
            "unknown interface `{ifname}` on {devname} (it has {})",
            names.join(", ")
        );
        self.error(span, msg);
        None
    }

    /// An EOS port that the configuration does not mention: a plain (layer-2) switchport.
    fn add_switchport(&mut self, dev: DeviceId, name: String, span: Span) -> IfId {
        let id = self.net.add_interface(dev, name, true, span);
        self.net.interfaces[id.idx()].routed = false;
        id
    }

    fn label(&self, iface: IfId) -> String {
        let i = self.net.iface(iface);
        format!("{}:{}", self.net.device(i.device).name, i.name)
    }

    // --- DHCP leases --------------------------------------------------------------------------

    fn add_leases(&mut self, key: &Spanned<String>, raw: &RawDevice) {
        let Some(ext) = self.net.device_by_name(&key.value) else {
            return;
        };
        let Some(leases) = &raw.leases else { return };
        let Some(gateway) = self.net.device(ext).external.as_ref().map(|e| e.gateway) else {
            return;
        };
        for lease in &leases.value {
            if let Some(lease) = self.lease(ext, gateway, lease) {
                if let Some(e) = self.net.devices[ext.idx()].external.as_mut() {
                    e.leases.push(lease);
                }
            }
        }
    }

    fn lease(&mut self, ext: DeviceId, gateway: Ipv4Net, raw: &RawLease) -> Option<DhcpLease> {
        let dev = self.device(&raw.device.value, &self.span(&raw.device))?;
        let iface = self.iface(dev, &raw.interface.value, self.span(&raw.interface), false)?;
        let address = self.prefix(&raw.address)?;
        let span = self.span(&raw.address);
        let ext_if = self.net.device(ext).ifaces.first().copied();
        let segment = ext_if.and_then(|i| self.net.iface(i).l2);
        if segment.is_none() || self.net.iface(iface).l2 != segment {
            let ext_name = &self.net.device(ext).name;
            let msg = format!("{} is not on {ext_name}'s segment", self.label(iface));
            self.error(self.span(&raw.interface), msg);
            return None;
        }
        if address.prefix_len() != gateway.prefix_len() || !gateway.contains(&address.addr()) {
            let ext_name = &self.net.device(ext).name;
            let msg = format!(
                "expected an address in {ext_name}'s subnet {}, found {address}",
                gateway.trunc()
            );
            self.error(span, msg);
            return None;
        }
        self.lease_claims.push(Claim {
            iface,
            net: address,
            span: span.clone(),
        });
        let interface = self.net.iface(iface).name.clone();
        Some(DhcpLease {
            device: raw.device.value.clone(),
            interface,
            address,
            span,
        })
    }

    // --- fabric-wide checks -------------------------------------------------------------------

    /// Both ends of a point-to-point link must be addressed in the same subnet.
    fn check_links(&mut self) {
        let errors: Vec<Diagnostic> = self.links.iter().filter_map(|l2| self.link_mismatch(*l2)).collect();
        self.diags.extend(errors);
    }

    fn link_mismatch(&self, l2: L2Id) -> Option<Diagnostic> {
        let dom = &self.net.l2[l2.idx()];
        let [a, b] = dom.members[..] else { return None };
        let (AddrConfig::Static(na), AddrConfig::Static(nb)) = (&self.net.iface(a).addr, &self.net.iface(b).addr)
        else {
            return None;
        };
        let (la, lb) = (self.label(a), self.label(b));
        let msg = if na.prefix_len() != nb.prefix_len() {
            format!("link ends have different prefix lengths: {la} is {na}, {lb} is {nb}")
        } else if na.trunc() != nb.trunc() {
            let (sa, sb) = (na.trunc(), nb.trunc());
            format!("link ends are in different subnets: {la} is {na} (in {sa}), {lb} is {nb} (in {sb})")
        } else {
            return None;
        };
        Some(Diagnostic::error(dom.span.clone(), msg))
    }

    fn claims(&mut self) -> Vec<Claim> {
        let mut claims: Vec<Claim> = (0..self.net.interfaces.len())
            .filter_map(|i| {
                let iface = IfId(i as u32);
                let AddrConfig::Static(net) = self.net.iface(iface).addr else {
                    return None;
                };
                let span = self.addr_spans.get(&iface).unwrap_or(&self.net.iface(iface).span);
                (!net.addr().is_loopback()).then(|| Claim {
                    iface,
                    net,
                    span: span.clone(),
                })
            })
            .collect();
        claims.append(&mut self.lease_claims);
        claims.sort_by(|a, b| a.span.cmp(&b.span));
        claims
    }

    /// No address twice in the fabric; no two interfaces of one device in overlapping subnets.
    fn check_addresses(&mut self) {
        let claims = self.claims();
        let mut first: BTreeMap<Ipv4Addr, &Claim> = BTreeMap::new();
        let mut errors = Vec::new();
        for c in &claims {
            match first.get(&c.net.addr()) {
                Some(prev) if prev.iface != c.iface => {
                    let msg = format!(
                        "duplicate address {}: also on {} at {}",
                        c.net.addr(),
                        self.label(prev.iface),
                        prev.span
                    );
                    errors.push(Diagnostic::error(c.span.clone(), msg));
                }
                Some(_) => {}
                None => {
                    first.insert(c.net.addr(), c);
                }
            }
        }
        // Only one device's interfaces can overlap: each claim is checked against the claims
        // before it on its device (against every claim before it, this was quadratic in the
        // fabric: 4% of converging a 16x256x16 one).
        let mut on_device: Vec<Vec<&Claim>> = vec![Vec::new(); self.net.devices.len()];
        for c in &claims {
            let earlier = &mut on_device[self.net.iface(c.iface).device.idx()];
            if let Some(prev) = earlier.iter().find(|p| self.overlaps(p, c)) {
                let msg = format!(
                    "subnet {} of {} overlaps subnet {} of {} at {} (same device)",
                    c.net.trunc(),
                    self.label(c.iface),
                    prev.net.trunc(),
                    self.label(prev.iface),
                    prev.span
                );
                errors.push(Diagnostic::error(c.span.clone(), msg));
            }
            earlier.push(c);
        }
        self.diags.extend(errors);
    }

    /// Two interfaces of one device (the caller pairs only claims of one device) in overlapping
    /// subnets (duplicates are reported apart). A Linux host may hold a /32 inside another
    /// interface's subnet — the kernel makes no subnet route for a /32 (flannel's `flannel.1`
    /// holds the network address of the `cni0` subnet).
    fn overlaps(&self, a: &Claim, b: &Claim) -> bool {
        let device = self.net.iface(a.iface).device;
        let linux_host_route =
            self.net.device(device).kind != DeviceKind::Eos && (a.net.prefix_len() == 32 || b.net.prefix_len() == 32);
        a.iface != b.iface
            && a.net.addr() != b.net.addr()
            && !linux_host_route
            && (a.net.contains(&b.net.network()) || b.net.contains(&a.net.network()))
    }
}

/// One kernel setting on a Linux host (`sysctl -w KEY=VALUE`): `net.ipv4.ip_forward` and
/// `net.ipv4.conf.IF.proxy_arp` are modelled; an unknown interface is an error and any other
/// key a warning (valid Linux fabsim does not model).
pub(crate) fn apply_sysctl(net: &mut Network, id: DeviceId, key: &str, on: bool, span: Span) -> Option<Diagnostic> {
    if key == "net.ipv4.ip_forward" {
        net.devices[id.idx()].ip_forward = on;
        None
    } else if let Some(ifname) = key
        .strip_prefix("net.ipv4.conf.")
        .and_then(|r| r.strip_suffix(".proxy_arp"))
    {
        match find_iface(net, id, ifname) {
            Some(i) => {
                net.interfaces[i.idx()].proxy_arp = on;
                None
            }
            None => Some(Diagnostic::error(
                span,
                format!("unknown interface `{ifname}` in `{key}`"),
            )),
        }
    } else {
        Some(Diagnostic::warning(
            span,
            format!("sysctl `{key}` is not modelled by fabsim; ignored"),
        ))
    }
}

/// Linux (and external) interfaces are matched exactly: `ens3` and `ENS3` are different NICs.
pub(crate) fn find_iface(net: &Network, dev: DeviceId, name: &str) -> Option<IfId> {
    net.device(dev)
        .ifaces
        .iter()
        .copied()
        .find(|i| net.iface(*i).name == name)
}

/// A routed interface with the next kernel index (lo is 1, then 2, 3, … in creation order).
pub(crate) fn add_linux_iface(net: &mut Network, dev: DeviceId, name: &str, span: Span) -> IfId {
    let ifindex = net.device(dev).ifaces.len() as u32 + 1;
    let id = net.add_interface(dev, name, true, span);
    net.interfaces[id.idx()].ifindex = ifindex;
    id
}

/// `10.0.0.1/31` (an interface address: host bits are the address).
pub(crate) fn parse_prefix(text: &str) -> Result<Ipv4Net, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("expected an IPv4 prefix like 10.0.0.1/31, found `{text}`"))
}

/// YAML plumbing shared with `input::netplan`: parsing with diagnostics, order-preserving
/// maps, and mapping locations of embedded text blocks back into the user's file.
pub(crate) mod yaml {
    use std::fmt;
    use std::marker::PhantomData;

    use serde::de::{Deserialize, DeserializeOwned, Deserializer, MapAccess, Visitor};
    use serde_saphyr::{Location, MessageFormatter, Spanned, UserMessageFormatter};

    use crate::diag::{Diagnostic, Span, TextOrigin};

    /// A YAML mapping in file order (device order must be the file's, never a hash order).
    #[derive(Debug)]
    pub(crate) struct OrderedMap<V>(pub Vec<(Spanned<String>, V)>);

    impl<V> Default for OrderedMap<V> {
        fn default() -> Self {
            OrderedMap(Vec::new())
        }
    }

    impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit<V>(PhantomData<V>);
            impl<'de, V: Deserialize<'de>> Visitor<'de> for Visit<V> {
                type Value = OrderedMap<V>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a mapping")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                    let mut entries = Vec::new();
                    while let Some(entry) = map.next_entry()? {
                        entries.push(entry);
                    }
                    Ok(OrderedMap(entries))
                }
            }
            d.deserialize_map(Visit(PhantomData))
        }
    }

    /// Parses `text`, which starts at `origin` in the user's file.
    pub(crate) fn from_str<T: DeserializeOwned>(text: &str, origin: &TextOrigin) -> Result<T, Diagnostic> {
        serde_saphyr::from_str(text).map_err(|e| {
            let message: String = UserMessageFormatter
                .format_message(&e)
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let span = e.location().map_or_else(|| origin.span_at(0, 0), |l| span(origin, &l));
            Diagnostic::error(span, message)
        })
    }

    /// The file position of a location inside text that starts at `origin`.
    pub(crate) fn span(origin: &TextOrigin, loc: &Location) -> Span {
        let line = (loc.line() as usize).saturating_sub(1);
        origin.span_at(line, (loc.column() as usize).saturating_sub(1))
    }

    /// Where a string value's text starts in the file, so that diagnostics about its lines
    /// point into the file. serde-saphyr reports a block scalar (`config: |`) at its first
    /// non-blank line, at the block's indentation column, while the value starts with one `\n`
    /// per blank line before that; a quoted scalar is reported at its opening quote.
    pub(crate) fn text_origin(v: &Spanned<String>, source: &str, parent: &TextOrigin) -> TextOrigin {
        let at = span(parent, &v.referenced);
        // The parser knows the value's byte offset in a string source, so the character there
        // costs nothing; finding its line by scanning is O(file) per embedded block, which made
        // loading a fabric of thousands of devices quadratic.
        let by_line = || {
            let src_line = source.lines().nth((v.referenced.line() as usize).saturating_sub(1));
            src_line.and_then(|l| l.chars().nth((v.referenced.column() as usize).saturating_sub(1)))
        };
        let first = match v.referenced.span().byte_offset() {
            Some(off) => source.get(off as usize..).and_then(|s| s.chars().next()),
            None => by_line(),
        };
        let (line, col) = match first {
            Some('"' | '\'') => (at.line, at.col + 1),
            _ => {
                let blank = v.value.chars().take_while(|c| *c == '\n').count() as u32;
                (at.line.saturating_sub(blank).max(1), at.col)
            }
        };
        TextOrigin {
            file: parent.file.clone(),
            line,
            col,
        }
    }
}
