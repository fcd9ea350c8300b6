//! containerlab topologies (`*.clab.yml`) → `model::Network`: `arista_ceos`/`ceos` nodes with
//! their `startup-config` (EOS), `linux` nodes with `binds:` of an FRR `frr.conf` (and its
//! `daemons`), a BIRD 1.6 `bird.conf` or a netplan `/etc/netplan/*.yaml` and with `exec:` lines
//! (`ip addr add`, `ip route`, `ip link set`, `sysctl`), `bridge` nodes (a Linux bridge on the
//! lab's host: every link to it joins one multi-access segment), `links:` `endpoints:
//! ["a:eth1", "b:eth1"]` (cEOS `ethN` is `EthernetN`), `topology.defaults`/`kinds`
//! inheritance, files relative to the topology file.
//!
//! What containerlab does, from its source (srl-labs/containerlab `types/topology.go`): a node's
//! kind and startup-config are the node's, else its kind's, else the defaults'; binds are
//! merged from defaults, kind and node, a more specific bind replacing one with the same
//! destination; exec lines run after the links exist. Keys understood but irrelevant to routing
//! are `IGNORED_BY_DESIGN`; any other key is a warning with its line.
//!
//! What a containerlab file cannot say (device kinds beyond its node kinds, kubelet, hostnames,
//! NICs no link uses, `config_at`, an external network's leases and responders) comes from the
//! side file `LAB.fabsim.yaml` next to `LAB.clab.yml`, the same topology-file form a snapshot's
//! `fabsim.yaml` is, read through the same builder (`topology::build`): its devices come first,
//! in its order, and a node it declares must be of a matching kind (a `linux` node stands in
//! for an `external` network in a real lab: only its links and exec lines are read).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::topology::yaml::{self, OrderedMap};
use super::topology::{self, add_linux_iface, apply_sysctl, find_iface, Builder, Loaded, RawTopology};
use super::{bird, eos, frr, netplan};
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::model::{AddrConfig, DeviceId, DeviceKind, IfId};

/// A key containerlab understands that has no effect on routing or forwarding: read, not
/// warned about, listed by `fabsim lint --verbose`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct IgnoredKey {
    /// Where the key is: `top`, `node` (also under defaults/kinds), `link`, or `exec` (the
    /// command an exec line runs).
    pub level: &'static str,
    pub key: &'static str,
    pub why: &'static str,
}

pub const IGNORED_BY_DESIGN: &[IgnoredKey] = &[
    IgnoredKey {
        level: "top",
        key: "prefix",
        why: "prefix of the container names; fabsim uses the node names",
    },
    IgnoredKey {
        level: "node",
        key: "image",
        why: "the container image: fabsim models the kind's behaviour, not a release",
    },
    IgnoredKey {
        level: "node",
        key: "mgmt-ipv4",
        why: "address on the management network, which fabsim does not model (no data-plane path)",
    },
    IgnoredKey {
        level: "node",
        key: "mgmt-ipv6",
        why: "address on the management network, which fabsim does not model",
    },
    IgnoredKey {
        level: "node",
        key: "labels",
        why: "container labels for tooling (graph positions, groups)",
    },
    IgnoredKey {
        level: "node",
        key: "group",
        why: "the node's group for `containerlab graph` and deploy ordering",
    },
    IgnoredKey {
        level: "node",
        key: "license",
        why: "licence file of a commercial image",
    },
    IgnoredKey {
        level: "link",
        key: "labels",
        why: "link labels for tooling",
    },
    IgnoredKey {
        level: "link",
        key: "vars",
        why: "link variables for templating tools",
    },
    IgnoredKey {
        level: "exec",
        key: "apt-get",
        why: "installs software in the container; what runs is read from the bound configuration files",
    },
    IgnoredKey {
        level: "exec",
        key: "apk",
        why: "installs software in the container; what runs is read from the bound configuration files",
    },
];

/// The keys modelled at each level (besides the ignored ones).
const TOP_KEYS: &[&str] = &["name", "topology"];
const TOPOLOGY_KEYS: &[&str] = &["defaults", "kinds", "nodes", "links"];
const NODE_KEYS: &[&str] = &["kind", "startup-config", "binds", "exec"];
const LINK_KEYS: &[&str] = &["endpoints"];

/// Is this file a containerlab topology? By name (`*.clab.yml`, `*.clab.yaml`), else by
/// content: a top-level `topology:` holding `nodes:` (a scenario's `topology:` is a path).
pub fn is_containerlab(path: &Path, text: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if name.ends_with(".clab.yml") || name.ends_with(".clab.yaml") {
        return true;
    }
    let mut in_topology = false;
    for line in text.lines() {
        if line.starts_with("topology:") {
            in_topology = line.trim_end() == "topology:";
        } else if !line.starts_with([' ', '#']) && !line.is_empty() {
            in_topology = false;
        } else if in_topology && line.trim_start().starts_with("nodes:") {
            return true;
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// The file as written.

#[derive(serde::Deserialize)]
struct RawClab {
    name: Option<Spanned<String>>,
    topology: Spanned<ClabTopology>,
}

#[derive(serde::Deserialize)]
struct ClabTopology {
    defaults: Option<RawNode>,
    #[serde(default)]
    kinds: OrderedMap<RawNode>,
    nodes: OrderedMap<Option<RawNode>>,
    #[serde(default)]
    links: Vec<Spanned<RawLink>>,
}

#[derive(serde::Deserialize, Default)]
struct RawNode {
    kind: Option<Spanned<String>>,
    #[serde(rename = "startup-config")]
    startup_config: Option<Spanned<String>>,
    binds: Option<Vec<Spanned<String>>>,
    exec: Option<Vec<Spanned<String>>>,
}

#[derive(serde::Deserialize)]
struct RawLink {
    endpoints: Option<Vec<Spanned<String>>>,
}

/// Every mapping key of the file with its place, for the unknown-key warnings.
enum KeyTree {
    Map(Vec<(Spanned<String>, KeyTree)>),
    Seq(Vec<KeyTree>),
    Scalar,
}

impl<'de> Deserialize<'de> for KeyTree {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyTree;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyTree, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(KeyTree::Map(entries))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyTree, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(KeyTree::Seq(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_i64<E>(self, _: i64) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_u64<E>(self, _: u64) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_f64<E>(self, _: f64) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_str<E>(self, _: &str) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_unit<E>(self) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
            fn visit_none<E>(self) -> Result<KeyTree, E> {
                Ok(KeyTree::Scalar)
            }
        }
        d.deserialize_any(V)
    }
}

impl KeyTree {
    fn get(&self, key: &str) -> Option<&KeyTree> {
        match self {
            KeyTree::Map(m) => m.iter().find(|(k, _)| k.value == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn entries(&self) -> &[(Spanned<String>, KeyTree)] {
        match self {
            KeyTree::Map(m) => m,
            _ => &[],
        }
    }
}

/// Loads `path` (already read as `text`) as a containerlab topology, with its side file.
pub fn load(path: &Path, text: &str) -> Result<Loaded, InputError> {
    let file = path.display().to_string();
    let origin = TextOrigin {
        file: file.clone(),
        line: 1,
        col: 1,
    };
    let raw: RawClab = yaml::from_str(text, &origin)?;
    let keys: KeyTree = yaml::from_str(text, &origin)?;
    let (side_text, side_origin) = topology::read_side_file(&side_file(path))?;
    let side: RawTopology = yaml::from_str(&side_text, &side_origin)?;
    let name = raw.name.as_ref().map_or_else(
        || path.file_stem().and_then(|s| s.to_str()).unwrap_or(&file).to_string(),
        |n| n.value.clone(),
    );
    topology::build(&side, side_origin.clone(), &side_text, name, |b| {
        let mut l = Lab {
            origin,
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            source: text,
            b,
            kinds: BTreeMap::new(),
            left_out: BTreeSet::new(),
            bridges: Vec::new(),
        };
        l.read(&raw.topology.value, &keys);
    })
}

/// `LAB.clab.yml` → `LAB.fabsim.yaml` in the same directory.
pub fn side_file(path: &Path) -> PathBuf {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let stem = [".clab.yml", ".clab.yaml"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .or_else(|| path.file_stem().and_then(|s| s.to_str()))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}.fabsim.yaml"))
}

struct Lab<'t, 'b, 'a> {
    origin: TextOrigin,
    source: &'t str,
    dir: PathBuf,
    /// The side file's builder: the network so far, its diagnostics, its declared hosts.
    b: &'b mut Builder<'a>,
    /// The containerlab kind of each modelled node.
    kinds: BTreeMap<DeviceId, NodeKind>,
    /// Nodes of kinds fabsim does not model, or in error (their links are left out with them).
    left_out: BTreeSet<String>,
    /// `bridge` nodes in file order, with the interfaces linked to each.
    bridges: Vec<Bridge>,
}

/// A `bridge` node: a Linux bridge on the lab's host, so one multi-access segment.
struct Bridge {
    name: String,
    span: Span,
    ends: Vec<(IfId, Span)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Ceos,
    Linux,
    /// A `linux` node the side file declares `external`: the real lab's stand-in for the
    /// network (its gateway address); the model's external network is the side file's.
    External,
}

impl Lab<'_, '_, '_> {
    /// The nodes, the cEOS startup-configs (cEOS boots with it: the interfaces it names exist
    /// in its order, other linked ports are created as switchports), the links and bridges,
    /// then the linux nodes' binds and every node's exec lines (run once the links exist).
    fn read(&mut self, topo: &ClabTopology, keys: &KeyTree) {
        self.check_keys(keys);
        let default = RawNode::default();
        let defaults = topo.defaults.as_ref().unwrap_or(&default);
        let mut nodes = Vec::new();
        for (name, node) in &topo.nodes.0 {
            let node = node.as_ref().unwrap_or(&default);
            let kind_name = node.kind.as_ref().or(defaults.kind.as_ref());
            let kind_def = kind_name
                .and_then(|k| topo.kinds.0.iter().find(|(n, _)| n.value == k.value))
                .map_or(&default, |(_, d)| d);
            if let Some(id) = self.add_node(name, kind_name) {
                nodes.push((id, [defaults, kind_def, node]));
            } else if self.bridges.last().is_some_and(|b| b.name == name.value) {
                self.bridge_keys(node);
            }
        }
        for (id, levels) in &nodes {
            if self.kinds.get(id) == Some(&NodeKind::Ceos) {
                self.configure_ceos(*id, levels);
            }
        }
        for link in &topo.links {
            self.add_link(link);
        }
        for br in std::mem::take(&mut self.bridges)
            .into_iter()
            .filter(|b| !b.ends.is_empty())
        {
            self.b.join_l2(br.name, br.span, br.ends);
        }
        for (id, levels) in &nodes {
            self.configure(*id, levels);
        }
    }

    fn span<T>(&self, v: &Spanned<T>) -> Span {
        yaml::span(&self.origin, &v.referenced)
    }

    fn warn(&mut self, span: Span, msg: impl Into<String>) {
        self.b.diags.push(Diagnostic::warning(span, msg));
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) {
        self.b.diags.push(Diagnostic::error(span, msg));
    }

    /// Warns about every key fabsim neither models nor ignores by design.
    fn check_keys(&mut self, keys: &KeyTree) {
        self.check_level(keys, TOP_KEYS, "top");
        let Some(topo) = keys.get("topology") else { return };
        self.check_level(topo, TOPOLOGY_KEYS, "topology");
        if let Some(d) = topo.get("defaults") {
            self.check_level(d, NODE_KEYS, "node");
        }
        for part in ["kinds", "nodes"] {
            for (_, node) in topo.get(part).map_or(&[][..], KeyTree::entries) {
                self.check_level(node, NODE_KEYS, "node");
            }
        }
        if let Some(KeyTree::Seq(links)) = topo.get("links") {
            for link in links {
                self.check_level(link, LINK_KEYS, "link");
            }
        }
    }

    fn check_level(&mut self, tree: &KeyTree, modelled: &[&str], level: &str) {
        for (key, _) in tree.entries() {
            let k = key.value.as_str();
            let ignored = IGNORED_BY_DESIGN.iter().any(|i| i.level == level && i.key == k);
            if !modelled.contains(&k) && !ignored {
                let msg = format!("containerlab `{k}` is not modelled by fabsim; ignored");
                self.warn(self.span(key), msg);
            }
        }
    }

    fn add_node(&mut self, name: &Spanned<String>, kind: Option<&Spanned<String>>) -> Option<DeviceId> {
        let span = self.span(name);
        let Some(kind) = kind else {
            self.error(span, "missing `kind` (on the node, or under topology.defaults)");
            return None;
        };
        let declared = self.b.net.device_by_name(&name.value);
        let (dk, nk) = match kind.value.as_str() {
            "ceos" | "arista_ceos" => (DeviceKind::Eos, NodeKind::Ceos),
            "linux" => match declared.map(|d| self.b.net.device(d).kind) {
                Some(DeviceKind::External) => (DeviceKind::External, NodeKind::External),
                _ => (DeviceKind::Linux, NodeKind::Linux),
            },
            "bridge" if declared.is_none() => {
                self.bridges.push(Bridge {
                    name: name.value.clone(),
                    span,
                    ends: Vec::new(),
                });
                return None;
            }
            other => {
                let msg = format!(
                    "node kind `{other}` is not modelled by fabsim (ceos, arista_ceos, linux and bridge are); node {} and its links are left out",
                    name.value
                );
                self.warn(self.span(kind), msg);
                self.left_out.insert(name.value.clone());
                return None;
            }
        };
        let id = match declared {
            Some(id) if self.b.net.device(id).kind != dk => {
                let msg = format!(
                    "node {} is of kind `{}`, but {} declares it a device of another kind",
                    name.value,
                    kind.value,
                    self.b.source_file()
                );
                self.error(span, msg);
                // Its links are not reported again.
                self.left_out.insert(name.value.clone());
                return None;
            }
            Some(id) => id,
            None => self.b.add_bare_device(&name.value, dk, span),
        };
        self.kinds.insert(id, nk);
        Some(id)
    }

    /// A bridge is the host's, not a container: what would configure a container is warned.
    fn bridge_keys(&mut self, node: &RawNode) {
        let spans: Vec<Span> = [&node.startup_config]
            .into_iter()
            .flatten()
            .chain(node.binds.iter().flatten())
            .chain(node.exec.iter().flatten())
            .map(|v| self.span(v))
            .collect();
        for at in spans {
            self.warn(
                at,
                "a bridge node is a Linux bridge on the lab's host, not a container; ignored",
            );
        }
    }

    /// A link between two nodes, or a node's port on a bridge (kept for the bridge's segment).
    fn add_link(&mut self, link: &Spanned<RawLink>) {
        let span = self.span(link);
        let Some(eps) = &link.value.endpoints else {
            self.error(span, "a link needs `endpoints: [\"node:ifname\", \"node:ifname\"]`");
            return;
        };
        if eps.len() != 2 {
            let msg = format!(
                "expected two endpoints like [\"spine1:eth1\", \"leaf1:eth1\"], found {}",
                eps.len()
            );
            self.error(span, msg);
            return;
        }
        let bridge_of: Vec<Option<usize>> = eps
            .iter()
            .map(|ep| {
                let node = ep.value.split(':').next().unwrap_or_default();
                self.bridges.iter().position(|b| b.name == node)
            })
            .collect();
        let on_bridge: Vec<usize> = bridge_of.iter().flatten().copied().collect();
        let mut ends = Vec::new();
        for (ep, _) in eps.iter().zip(&bridge_of).filter(|(_, b)| b.is_none()) {
            match self.endpoint(ep) {
                Ok(Some(i)) => ends.push((i, self.span(ep))),
                Ok(None) => return, // a node left out (warned at the node)
                Err(msg) => {
                    let at = self.span(ep);
                    self.error(at, msg);
                    return;
                }
            }
        }
        match (&on_bridge[..], ends.pop()) {
            ([], Some(b)) => {
                let a = ends.pop();
                let name = format!("{}--{}", eps[0].value, eps[1].value);
                self.b.join_link(name, span, a.into_iter().chain([b]).collect());
            }
            ([br], Some(end)) => self.bridges[*br].ends.push(end),
            _ => self.warn(
                span,
                "a link between two bridges is not modelled by fabsim (the bridges would be one segment); ignored",
            ),
        }
    }

    /// `node:ifname` → the interface: an existing one (the startup-config's, the side file's
    /// NICs and external interface), else created now (containerlab creates the veth ends).
    fn endpoint(&mut self, ep: &Spanned<String>) -> Result<Option<IfId>, String> {
        let Some((node, ifname)) = ep.value.split_once(':').filter(|(n, i)| !n.is_empty() && !i.is_empty()) else {
            return Err(format!(
                "expected an endpoint like \"leaf1:eth1\", found `{}`",
                ep.value
            ));
        };
        let found = self
            .b
            .net
            .device_by_name(node)
            .and_then(|d| Some((d, *self.kinds.get(&d)?)));
        let Some((dev, kind)) = found else {
            return if self.left_out.contains(node) {
                Ok(None)
            } else {
                Err(format!("unknown node `{node}` (not under topology.nodes)"))
            };
        };
        let name = match kind {
            NodeKind::Ceos => ceos_interface(ifname)?,
            _ => ifname.to_string(),
        };
        if let Some(i) = find_iface(&self.b.net, dev, &name) {
            return Ok(Some(i));
        }
        let span = self.span(ep);
        match kind {
            NodeKind::Ceos => {
                let id = self.b.net.add_interface(dev, name, true, span);
                // An unconfigured cEOS port is a switchport, as on any EOS box.
                self.b.net.interfaces[id.idx()].routed = false;
                Ok(Some(id))
            }
            NodeKind::Linux if !self.b.declared.contains(&dev) => {
                Ok(Some(add_linux_iface(&mut self.b.net, dev, &name, span)))
            }
            _ => Err(format!(
                "{node} has no interface `{ifname}` ({} lists its interfaces: {})",
                self.b.source_file(),
                self.b.net.iface_names(dev)
            )),
        }
    }

    /// A cEOS node's startup-config (binds are not how cEOS is configured).
    fn configure_ceos(&mut self, id: DeviceId, levels: &[&RawNode; 3]) {
        if let Some(cfg) = levels.iter().rev().find_map(|n| n.startup_config.as_ref()) {
            self.startup_config(id, cfg);
        }
        for b in merged_binds(levels).values() {
            self.warn(
                self.span(b),
                "binds on a cEOS node are not modelled (use startup-config); ignored",
            );
        }
    }

    /// A linux node's binds, then every node's exec lines.
    fn configure(&mut self, id: DeviceId, levels: &[&RawNode; 3]) {
        let kind = self.kinds.get(&id).copied();
        if kind != Some(NodeKind::Ceos) {
            let startup = levels.iter().rev().find_map(|n| n.startup_config.as_ref());
            if let Some(cfg) = startup {
                self.warn(
                    self.span(cfg),
                    "startup-config on a linux node is not read (use binds of frr.conf, bird.conf or netplan)",
                );
            }
            let binds = merged_binds(levels);
            if kind == Some(NodeKind::External) {
                for b in binds.values() {
                    let msg = "binds on the stand-in of an external network are not modelled (the side file describes it); ignored";
                    self.warn(self.span(b), msg);
                }
            } else {
                self.linux_binds(id, &binds);
            }
        }
        let execs = levels.iter().flat_map(|n| n.exec.iter().flatten());
        for line in execs.collect::<Vec<_>>() {
            self.exec(id, line);
        }
    }

    /// Reads a file a bind or startup-config names, relative to the topology file.
    fn read_file(&mut self, at: &Spanned<String>, rel: &str) -> Option<(String, TextOrigin)> {
        let path = self.dir.join(rel);
        match super::read_text(&path) {
            Ok(text) => Some((
                text,
                TextOrigin {
                    file: path.display().to_string(),
                    line: 1,
                    col: 1,
                },
            )),
            Err(e) => {
                // A UTF-8 error names its place in the bound file, not in the topology.
                let pos = if (e.line, e.col) == (1, 1) {
                    String::new()
                } else {
                    format!(":{}:{}", e.line, e.col)
                };
                let msg = format!("cannot read `{}{pos}`: {}", path.display(), e.message);
                self.error(self.span(at), msg);
                None
            }
        }
    }

    fn startup_config(&mut self, id: DeviceId, cfg: &Spanned<String>) {
        // containerlab also takes the configuration itself inline (a block scalar).
        let (text, origin) = if cfg.value.contains('\n') {
            (cfg.value.clone(), yaml::text_origin(cfg, self.source, &self.origin))
        } else {
            match self.read_file(cfg, &cfg.value) {
                Some(x) => x,
                None => return,
            }
        };
        match eos::apply_config(&mut self.b.net, id, &text, &origin) {
            Ok(w) => self.b.diags.extend(w),
            Err(e) => self.b.diags.extend(e.0),
        }
    }

    /// `frr.conf` (with `daemons`), `bird.conf` or a netplan file bound into a linux node.
    fn linux_binds(&mut self, id: DeviceId, binds: &BTreeMap<String, &Spanned<String>>) {
        let mut daemons = None;
        let mut netplan_at: Option<String> = None;
        for (dst, bind) in binds {
            let src = bind.value.split(':').next().unwrap_or_default().to_string();
            let file = dst.rsplit('/').next().unwrap_or_default();
            let is_netplan = dst.starts_with("/etc/netplan/") && (file.ends_with(".yaml") || file.ends_with(".yml"));
            match (dst.starts_with("/etc/frr/"), file) {
                (true, "frr.conf") => {
                    let Some((text, origin)) = self.read_file(bind, &src) else {
                        continue;
                    };
                    match frr::apply_frr(&mut self.b.net, id, &text, &origin) {
                        Ok(w) => self.b.diags.extend(w),
                        Err(e) => self.b.diags.extend(e.0),
                    }
                }
                (true, "daemons") => daemons = self.read_file(bind, &src),
                (_, "bird.conf") if dst.starts_with("/etc/bird") => {
                    let Some((text, origin)) = self.read_file(bind, &src) else {
                        continue;
                    };
                    match bird::apply_bird(&mut self.b.net, id, &text, &origin, &BTreeMap::new()) {
                        Ok(w) => self.b.diags.extend(w),
                        Err(e) => self.b.diags.extend(e.0),
                    }
                }
                _ if is_netplan => {
                    if let Some(first) = &netplan_at {
                        let msg = format!(
                            "a second netplan file is not modelled (netplan merges them; fabsim reads one per node, here {first}); ignored"
                        );
                        self.warn(self.span(bind), msg);
                        continue;
                    }
                    netplan_at = Some(dst.clone());
                    let Some((text, origin)) = self.read_file(bind, &src) else {
                        continue;
                    };
                    let create = !self.b.declared.contains(&id);
                    match netplan::apply(&mut self.b.net, id, &text, &origin, create) {
                        Ok(applied) => {
                            self.b.diags.extend(applied.warnings);
                            self.b.addr_spans.extend(applied.addr_spans);
                        }
                        Err(e) => self.b.diags.extend(e.0),
                    }
                }
                _ => {
                    let msg = format!(
                        "bind to `{dst}` is not modelled by fabsim (frr.conf, daemons, bird.conf and /etc/netplan/*.yaml are); ignored"
                    );
                    self.warn(self.span(bind), msg);
                }
            }
        }
        if let Some((text, _)) = daemons {
            self.frr_daemons(id, &text);
        }
    }

    /// FRR's `daemons` file: a daemon set to `no` does not run, so its configuration is void.
    fn frr_daemons(&mut self, id: DeviceId, text: &str) {
        let off = |name: &str| {
            text.lines()
                .filter_map(|l| l.trim().split_once('='))
                .any(|(k, v)| k.trim() == name && v.trim() == "no")
        };
        let d = &mut self.b.net.devices[id.idx()];
        if off("bgpd") {
            d.bgp = None;
        }
        if off("ospfd") {
            d.ospf = None;
        }
    }

    /// One `exec:` line, run in the container once the links exist.
    fn exec(&mut self, id: DeviceId, line: &Spanned<String>) {
        let span = self.span(line);
        let words: Vec<&str> = line.value.split_whitespace().collect();
        let installs = |w: &str| IGNORED_BY_DESIGN.iter().any(|i| i.level == "exec" && i.key == w);
        match words.as_slice() {
            [cmd, ..] if installs(cmd) => {}
            ["ip", obj, "add", rest @ ..] if "address".starts_with(obj) && !obj.is_empty() => {
                self.ip_addr_add(id, rest, span)
            }
            // A container runs no networkd: a lab applies its bound netplan with `ip` commands.
            ["ip", args @ ..] if crate::k8s::ip_cmd::repeats_netplan(&self.b.net, id, args) => {}
            ["ip", args @ ..] if crate::k8s::ip_cmd::is_change(args) => {
                let st = crate::engine::booted_state(&self.b.net);
                match crate::k8s::ip_cmd::ip(&mut self.b.net, &st, id, args) {
                    Ok(out) if out.status == 0 => {}
                    Ok(out) => self.error(span, out.output.trim_end().to_string()),
                    Err(msg) => self.warn(span, format!("not modelled: {msg}; ignored")),
                }
            }
            ["sysctl", rest @ ..] => {
                let kv = rest.iter().find(|w| w.contains('='));
                match kv.and_then(|kv| kv.split_once('=')) {
                    Some((k, v)) => {
                        if let Some(d) = apply_sysctl(&mut self.b.net, id, k, v.trim() != "0", span) {
                            self.b.diags.push(d);
                        }
                    }
                    None => self.warn(
                        span,
                        "`sysctl` without KEY=VALUE changes nothing fabsim models; ignored",
                    ),
                }
            }
            _ => {
                let msg = format!(
                    "exec `{}` is not modelled by fabsim (ip addr add, ip route, ip link set and sysctl are); ignored",
                    line.value
                );
                self.warn(span, msg);
            }
        }
    }

    /// `ip addr add A/L dev IF`: iproute2 needs `dev`; the device must exist. The address the
    /// interface already has (from its bound netplan, or the side file's external gateway) is
    /// how a lab's container, running no networkd, gets it: nothing more to do.
    fn ip_addr_add(&mut self, id: DeviceId, args: &[&str], span: Span) {
        let addr = args
            .iter()
            .find(|w| w.contains('/'))
            .and_then(|w| w.parse::<ipnet::Ipv4Net>().ok());
        let dev = args.iter().position(|w| *w == "dev").and_then(|i| args.get(i + 1));
        let (Some(addr), Some(dev)) = (addr, dev) else {
            self.error(span, "expected `ip addr add A.B.C.D/LEN dev IF`");
            return;
        };
        let Some(iface) = find_iface(&self.b.net, id, dev) else {
            self.error(
                span,
                format!("Cannot find device \"{dev}\" (no link of this node names it)"),
            );
            return;
        };
        let i = &mut self.b.net.interfaces[iface.idx()];
        if i.addr == AddrConfig::Static(addr) {
            return;
        }
        if i.addr != AddrConfig::None {
            self.warn(span, "a second address on an interface is not modelled; ignored");
            return;
        }
        i.addr = AddrConfig::Static(addr);
        i.span = span;
    }
}

/// Binds merged from defaults, kind and node, keyed by their destination (`src:dst[:ro]`).
fn merged_binds<'a>(levels: &[&'a RawNode; 3]) -> BTreeMap<String, &'a Spanned<String>> {
    let mut out = BTreeMap::new();
    for b in levels.iter().flat_map(|n| n.binds.iter().flatten()) {
        if let Some(dst) = b.value.split(':').nth(1) {
            out.insert(dst.to_string(), b);
        }
    }
    out
}

/// cEOS's names for a link endpoint: `ethN` (containerlab's form) is `EthernetN`, and EOS's own
/// names (`Ethernet1`, `Et1`) are taken as they are; `eth0` is the management port.
fn ceos_interface(ifname: &str) -> Result<String, String> {
    if let Some(n) = ifname
        .strip_prefix("eth")
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        if n == "0" {
            return Err("eth0 is the management interface of a cEOS node (Management0), not a link port".into());
        }
        return Ok(format!("Ethernet{n}"));
    }
    eos::canonical_interface(ifname)
        .filter(|c| c.starts_with("Ethernet"))
        .ok_or_else(|| format!("expected a cEOS interface like eth1 (Ethernet1), found `{ifname}`"))
}
