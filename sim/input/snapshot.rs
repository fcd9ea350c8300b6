//! Snapshot directories → `model::Network`: what engineers keep in git about a running fabric.
//!
//! ```text
//! DIR/configs/NAME.cfg   EOS `show running-config` or an FRR `frr.conf`, vendor from content
//! DIR/hosts/NAME.yaml    netplan v2 of Linux host NAME (optional)
//! DIR/links.yaml         `links: [[A:IF, B:IF], …]` and `segments: {NAME: [A:IF, …]}`
//! DIR/lldp/NAME.txt      else: EOS `show lldp neighbors` of switch NAME, one link per pair
//!                        else: links inferred from /31 and /30 subnets with exactly two ends
//! DIR/calico/*.yaml      optional: `calicoctl get ippools,bgpconfig,bgppeers,nodes -o yaml`,
//!                        `kubectl get blockaffinities,ipamblocks -o yaml` dumps
//! DIR/k8s/*.yaml         optional: `kubectl get nodes,pods -o yaml` dumps
//! DIR/fabsim.yaml        optional: a fabsim topology for what no device file says (device
//!                        order and kinds, k8s-node/kubelet, hostnames, NIC lists, boot and
//!                        config_at times, external networks); devices there need no config
//! ```
//!
//! The directory is loaded through the topology builder (`topology::build`), so every check of
//! a topology file applies and each diagnostic points into the file it is about. The dumps
//! then make the cluster on the built network (`k8s::adopt_observed`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ipnet::Ipv4Net;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::topology::yaml::{self, OrderedMap};
use super::topology::{self, Builder, Loaded, RawTopology};
use super::{eos, frr, netplan};
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::k8s;
use crate::model::{AddrConfig, DeviceKind, IfId};

/// A directory with a `configs/` directory is a snapshot.
pub fn is_snapshot(path: &Path) -> bool {
    path.is_dir() && path.join("configs").is_dir()
}

/// `links.yaml`: the same link and segment forms as a topology file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinks {
    #[serde(default)]
    links: Vec<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    segments: OrderedMap<Vec<Spanned<String>>>,
}

/// One file of the snapshot, read.
struct Source {
    /// The device it is about (the file name without its extension).
    device: String,
    text: String,
    origin: TextOrigin,
}

impl Source {
    fn read(path: &Path) -> Result<Source, Diagnostic> {
        let file = path.display().to_string();
        let text = super::read_text(path).map_err(|e| {
            Diagnostic::error(
                Span::new(&file, e.line, e.col),
                format!("cannot read file: {}", e.message),
            )
        })?;
        let device = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        Ok(Source {
            device,
            text,
            origin: TextOrigin { file, line: 1, col: 1 },
        })
    }

    fn span(&self, line: usize, col: usize) -> Span {
        Span::new(&self.origin.file, line as u32, col as u32)
    }
}

/// Every file of the snapshot, read before building (the builder borrows their text).
struct Files {
    configs: Vec<Source>,
    hosts: Vec<Source>,
    links: Option<Source>,
    lldp: Vec<Source>,
    calico: Vec<Source>,
    k8s: Vec<Source>,
}

/// The files of `dir/sub` whose names end in one of `exts`, in name order.
fn listed(dir: &Path, sub: &str, exts: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    out.retain(|p| {
        p.is_file()
            && p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
    });
    out.sort();
    out
}

fn read_all(paths: Vec<PathBuf>, diags: &mut Vec<Diagnostic>) -> Vec<Source> {
    paths
        .iter()
        .filter_map(|p| Source::read(p).map_err(|d| diags.push(d)).ok())
        .collect()
}

/// Loads snapshot directory `dir`.
pub fn load(dir: &Path) -> Result<Loaded, InputError> {
    let mut diags = Vec::new();
    let (side_text, side_origin) = topology::read_side_file(&dir.join("fabsim.yaml"))?;
    let links_path = dir.join("links.yaml");
    let files = Files {
        configs: read_all(listed(dir, "configs", &["cfg"]), &mut diags),
        hosts: read_all(listed(dir, "hosts", &["yaml", "yml"]), &mut diags),
        links: if links_path.is_file() {
            Some(Source::read(&links_path)?)
        } else {
            None
        },
        lldp: read_all(listed(dir, "lldp", &["txt"]), &mut diags),
        calico: read_all(listed(dir, "calico", &["yaml", "yml"]), &mut diags),
        k8s: read_all(listed(dir, "k8s", &["yaml", "yml"]), &mut diags),
    };
    if !diags.is_empty() {
        return Err(InputError(diags));
    }
    let raw: RawTopology = yaml::from_str(&side_text, &side_origin)?;
    let name = raw.name.clone().unwrap_or_else(|| {
        let dir_name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().to_string()));
        dir_name.unwrap_or_else(|| "snapshot".to_string())
    });
    let mut links: Option<RawLinks> = None;
    if let Some(src) = &files.links {
        links = Some(yaml::from_str(&src.text, &src.origin)?);
    }
    let mut loaded = topology::build(&raw, side_origin.clone(), &side_text, name, |b| {
        for src in &files.configs {
            config(b, src);
        }
        for src in &files.hosts {
            host(b, src);
        }
        match (&files.links, &links) {
            (Some(src), Some(raw)) => {
                b.set_source(src.origin.clone(), &src.text);
                for l in &raw.links {
                    b.add_link(l);
                }
                for (key, members) in &raw.segments.0 {
                    b.add_segment(key, members);
                }
            }
            _ if !files.lldp.is_empty() => {
                for l in lldp_links(&files.lldp, b) {
                    b.add_link_at(l.span, &l.ends);
                }
            }
            _ => infer_links(b),
        }
    })?;
    cluster(&mut loaded, &files.calico, &files.k8s)?;
    Ok(loaded)
}

/// The cluster of the `calico/` and `k8s/` dumps, on the built network. A cluster declared in
/// `fabsim.yaml` too would be two descriptions of one cluster: an error.
fn cluster(loaded: &mut Loaded, calico: &[Source], k8s: &[Source]) -> Result<(), InputError> {
    let Some(first) = calico.first().or(k8s.first()) else {
        return Ok(());
    };
    if loaded.net.cluster.is_some() {
        let msg =
            "fabsim.yaml declares a `cluster:` and the snapshot has calico/ or k8s/ dumps of one; keep one of them";
        return Err(Diagnostic::error(first.span(1, 1), msg).into());
    }
    let dumps = |files: &[Source]| -> Vec<k8s::Dump> {
        files
            .iter()
            .map(|s| k8s::Dump {
                file: s.origin.file.clone(),
                text: s.text.clone(),
            })
            .collect()
    };
    let warnings = k8s::adopt_observed(&mut loaded.net, &dumps(calico), &dumps(k8s))?;
    loaded.warnings.extend(warnings);
    Ok(())
}

/// `configs/NAME.cfg`: EOS or FRR, as its content says; the device is created when
/// `fabsim.yaml` does not declare it (EOS: a switch; FRR: a Linux host running FRR).
fn config(b: &mut Builder, src: &Source) {
    let vendor = match detect_vendor(&src.text) {
        Ok(v) => v,
        Err((line, msg)) => {
            b.diags.push(Diagnostic::error(src.span(line, 1), msg));
            return;
        }
    };
    let kind = match vendor {
        Vendor::Eos => DeviceKind::Eos,
        Vendor::Frr => DeviceKind::Linux,
    };
    let id = match b.net.device_by_name(&src.device) {
        Some(id) if b.net.device(id).kind == kind => id,
        Some(_) => {
            let msg = format!(
                "{} is a {} configuration, but fabsim.yaml declares {} with another kind",
                src.origin.file,
                vendor.name(),
                src.device
            );
            b.diags.push(Diagnostic::error(src.span(1, 1), msg));
            return;
        }
        None => b.add_bare_device(&src.device, kind, src.span(1, 1)),
    };
    let applied = match vendor {
        Vendor::Eos => eos::apply_config(&mut b.net, id, &src.text, &src.origin),
        Vendor::Frr => frr::apply_frr(&mut b.net, id, &src.text, &src.origin),
    };
    match applied {
        Ok(w) => b.diags.extend(w),
        Err(e) => b.diags.extend(e.0),
    }
}

/// `hosts/NAME.yaml`: the host's netplan (interfaces created in file order unless
/// `fabsim.yaml` lists them).
fn host(b: &mut Builder, src: &Source) {
    let id = match b.net.device_by_name(&src.device) {
        Some(id) => id,
        None => b.add_bare_device(&src.device, DeviceKind::Linux, src.span(1, 1)),
    };
    let create = !b.declared.contains(&id);
    match netplan::apply(&mut b.net, id, &src.text, &src.origin, create) {
        Ok(applied) => {
            b.diags.extend(applied.warnings);
            b.addr_spans.extend(applied.addr_spans);
        }
        Err(e) => b.diags.extend(e.0),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    Eos,
    Frr,
}

impl Vendor {
    fn name(self) -> &'static str {
        match self {
            Vendor::Eos => "EOS",
            Vendor::Frr => "FRR",
        }
    }
}

/// Which syntax a configuration file is in, from the first line that only one of them writes:
/// EOS's `show running-config` header and `device:` line, `ip routing`, `no switchport`,
/// `spanning-tree`/`transceiver`/`service routing` lines, EOS interface names; FRR's
/// `frr version`/`frr defaults` lines, `service integrated-vtysh-config`, Linux interface
/// names. Two lines that disagree, or none, is an error at the line (1-based) with the reason.
pub fn detect_vendor(text: &str) -> Result<Vendor, (usize, String)> {
    let mut first: Option<(Vendor, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let Some(v) = vendor_of_line(line) else { continue };
        match &first {
            None => first = Some((v, i + 1, line.trim().to_string())),
            Some((f, at, what)) if *f != v => {
                return Err((
                    i + 1,
                    format!(
                        "cannot tell the vendor: `{}` is {} syntax but line {at} `{what}` is {}",
                        line.trim(),
                        v.name(),
                        f.name()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    first.map(|(v, _, _)| v).ok_or_else(|| {
        (
            1,
            "cannot tell the vendor: no line only EOS writes (`! Command: show running-config`, `ip routing`, \
             `no switchport`, `interface EthernetN`) or only FRR writes (`frr version`, `frr defaults`, \
             `interface eth1`-style Linux names)"
                .to_string(),
        )
    })
}

fn vendor_of_line(line: &str) -> Option<Vendor> {
    let t = line.trim();
    const EOS: &[&str] = &[
        "! Command: show running-config",
        "! device:",
        "ip routing",
        "no switchport",
        "spanning-tree mode",
        "transceiver qsfp",
        "service routing protocols model",
    ];
    const FRR: &[&str] = &["frr version", "frr defaults", "service integrated-vtysh-config"];
    if EOS.iter().any(|p| t.starts_with(p)) {
        return Some(Vendor::Eos);
    }
    if FRR.iter().any(|p| t.starts_with(p)) {
        return Some(Vendor::Frr);
    }
    let ifname = t.strip_prefix("interface ")?.split_whitespace().next()?;
    let eos_names = ["Ethernet", "Loopback", "Management", "Port-Channel", "Vlan"];
    let linux_names = ["eth", "ens", "enp", "eno", "swp", "lo", "bond", "dummy"];
    if eos_names.iter().any(|p| ifname.starts_with(p)) {
        Some(Vendor::Eos)
    } else if linux_names.iter().any(|p| ifname.starts_with(p)) {
        Some(Vendor::Frr)
    } else {
        None
    }
}

/// A link read or inferred, with the place that says so.
struct FoundLink {
    span: Span,
    ends: Vec<(String, Span)>,
}

/// EOS `show lldp neighbors` captures: the rows under the `Port  Neighbor Device ID  Neighbor
/// Port ID  TTL` header. The device is the file's name; a neighbour is matched by its name, or
/// its name up to the first dot (LLDP sends the FQDN). Both ends usually report the link: it
/// is added once, at the first row naming it. A row whose neighbour is not in the snapshot is
/// a warning.
fn lldp_links(files: &[Source], b: &mut Builder) -> Vec<FoundLink> {
    let mut seen: BTreeMap<(String, String), ()> = BTreeMap::new();
    let mut out = Vec::new();
    for src in files {
        let mut in_table = false;
        for (i, line) in src.text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with("Port") && t.contains("Neighbor Device ID") {
                in_table = true;
                continue;
            }
            if !in_table || t.is_empty() || t.starts_with('-') {
                continue;
            }
            let cols: Vec<&str> = t.split_whitespace().collect();
            let span = src.span(i + 1, 1);
            let [port, neighbor, nport, ..] = cols[..] else {
                let msg = "expected an LLDP row `PORT NEIGHBOR-DEVICE NEIGHBOR-PORT TTL`";
                b.diags.push(Diagnostic::error(span, msg));
                continue;
            };
            let short = neighbor.split('.').next().unwrap_or(neighbor);
            let Some(peer) = [neighbor, short]
                .into_iter()
                .find(|n| b.net.device_by_name(n).is_some())
            else {
                let msg = format!("LLDP neighbour `{neighbor}` is not a device of the snapshot; link not added");
                b.diags.push(Diagnostic::warning(span, msg));
                continue;
            };
            let local = format!("{}:{}", src.device, canonical(b, &src.device, port));
            let remote = format!("{peer}:{}", canonical(b, peer, nport));
            let key = if local < remote {
                (local.clone(), remote.clone())
            } else {
                (remote.clone(), local.clone())
            };
            if seen.insert(key, ()).is_none() {
                out.push(FoundLink {
                    span: span.clone(),
                    ends: vec![(local, span.clone()), (remote, span)],
                });
            }
        }
    }
    out
}

/// An LLDP port as the device names it: EOS's full name (`Et1` → `Ethernet1`) on a switch,
/// the kernel's name (`eth1`) as it is on a Linux host.
fn canonical(b: &Builder, device: &str, port: &str) -> String {
    let eos = b
        .net
        .device_by_name(device)
        .is_some_and(|d| b.net.device(d).kind == DeviceKind::Eos);
    eos.then(|| eos::canonical_interface(port))
        .flatten()
        .unwrap_or_else(|| port.to_string())
}

/// With neither `links.yaml` nor LLDP captures: a link between the two interfaces of each /31
/// or /30 subnet that exactly two unlinked interfaces are addressed in. Each is a warning (a
/// guess the user must confirm, listed by `fabsim lint`); a subnet with more ends is one too.
fn infer_links(b: &mut Builder) {
    let mut by_subnet: BTreeMap<Ipv4Net, Vec<IfId>> = BTreeMap::new();
    for (i, ifc) in b.net.interfaces.iter().enumerate() {
        if let AddrConfig::Static(a) = ifc.addr {
            if ifc.l2.is_none() && ifc.routed && (a.prefix_len() == 31 || a.prefix_len() == 30) {
                by_subnet.entry(a.trunc()).or_default().push(IfId(i as u32));
            }
        }
    }
    for (subnet, ends) in by_subnet {
        let label = |id: IfId| {
            let ifc = b.net.iface(id);
            format!("{}:{}", b.net.device(ifc.device).name, ifc.name)
        };
        let span_of = |id: IfId| {
            b.addr_spans
                .get(&id)
                .cloned()
                .unwrap_or_else(|| b.net.iface(id).span.clone())
        };
        match ends[..] {
            [x, y] => {
                let (lx, ly) = (label(x), label(y));
                let (sx, sy) = (span_of(x), span_of(y));
                let msg =
                    format!("link {lx} -- {ly} inferred from their common subnet {subnet} (no links.yaml or lldp/)");
                b.diags.push(Diagnostic::warning(sx.clone(), msg));
                b.add_link_at(sx.clone(), &[(lx, sx), (ly, sy)]);
            }
            [_] => {}
            _ => {
                let names: Vec<String> = ends.iter().map(|e| label(*e)).collect();
                let msg = format!(
                    "no link inferred for {subnet}: {} interfaces are in it ({})",
                    ends.len(),
                    names.join(", ")
                );
                b.diags.push(Diagnostic::warning(span_of(ends[0]), msg));
            }
        }
    }
}
