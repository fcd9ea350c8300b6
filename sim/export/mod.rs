//! `fabsim export`: the network at one moment (a converged topology, or a scenario replayed to
//! a step) written out as a lab of real daemons, so the rehearsal can be re-run on real
//! software and fabsim can be checked against it (`tests/differential.rs`).
//!
//! One module per target: `frr` (an `frr.conf` per EOS switch), `bird` (the BIRD 1.6
//! configuration each Linux host runs), `netns` (shell scripts that build the lab in Linux
//! network namespaces on one machine), `containerlab` (a `.clab.yml` and per-node files) and
//! `snapshot` (EOS running-configs, netplan files, links: what `fabsim DIR` reads back; with
//! `eos`, the model as EOS configuration text).
//! This module owns what the targets share: the kernel names of devices and interfaces, which
//! devices run which daemon, and the lab's limits (IPIP, VXLAN) said once.

pub mod bird;
mod cluster;
pub mod containerlab;
pub mod eos;
pub mod frr;
pub mod netns;
pub mod snapshot;

use std::path::{Path, PathBuf};

use std::fmt::Write;

use crate::engine::{Proto, Route, State};
use crate::model::{DeviceId, DeviceKind, IfId, L2Domain, Network, Tunnel};

/// Where an exported lab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Frr,
    Bird,
    Netns,
    Containerlab,
    /// A snapshot directory (`input::snapshot` reads it back).
    Snapshot,
}

/// How the lab is written.
#[derive(Clone, Debug)]
pub struct Options {
    /// Names every namespace, container and run directory the lab creates: `PREFIX-DEVICE`.
    pub prefix: String,
    /// OSPF hello 1 s / dead 4 s and BGP keepalive 1 s / hold 3 s / connect retry 1 s in the
    /// exported configurations only, so a test lab converges in seconds. fabsim's converged
    /// state does not depend on these timers, only how long real daemons take to get there.
    pub fast_timers: bool,
    /// What the containerlab target runs EOS switches on.
    pub switches: Switches,
}

/// The containerlab target's image for EOS switches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Switches {
    /// FRR containers on the exported `frr.conf`: a lab that runs without a cEOS image (the
    /// real-daemon stand-in, FIDELITY.md), read back as Linux hosts running FRR.
    #[default]
    Frr,
    /// `arista_ceos` nodes with their EOS startup-config, plus the side file: the faithful form,
    /// which `fabsim` reads back as the same network (`tests/round_trip.rs`).
    Ceos,
}

/// One file of an exported lab, relative to the output directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabFile {
    pub path: PathBuf,
    pub text: String,
    pub executable: bool,
}

/// An exported lab: its files and what it cannot reproduce (printed by the CLI, also written
/// into the files where an operator will read them).
#[derive(Clone, Debug, Default)]
pub struct Lab {
    pub files: Vec<LabFile>,
    pub limits: Vec<String>,
}

impl Lab {
    fn add(&mut self, path: impl Into<PathBuf>, text: String) {
        self.files.push(LabFile {
            path: path.into(),
            text,
            executable: false,
        });
    }

    fn add_script(&mut self, path: impl Into<PathBuf>, text: String) {
        self.files.push(LabFile {
            path: path.into(),
            text,
            executable: true,
        });
    }

    /// Write every file under `dir` (created if needed), each whole or not at all
    /// (`output`); files already there that the lab does not name are left alone.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        for f in &self.files {
            let path = dir.join(&f.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mode = if f.executable {
                crate::output::SCRIPT_MODE
            } else {
                crate::output::FILE_MODE
            };
            crate::output::write_with(&path, mode, |w| w.write_all(f.text.as_bytes()))?;
        }
        Ok(())
    }
}

/// Export `net` in state `st` for `target`.
pub fn export(net: &Network, st: &State, target: Target, opts: &Options) -> Lab {
    let mut lab = Lab {
        limits: limits(net, st),
        ..Lab::default()
    };
    match target {
        Target::Frr => frr::write_all(net, st, opts, &mut lab),
        Target::Bird => bird::write_all(net, &mut lab),
        Target::Netns => netns::write(net, st, opts, &mut lab),
        Target::Containerlab => containerlab::write(net, st, opts, &mut lab),
        Target::Snapshot => snapshot::write(net, &mut lab),
    }
    lab
}

/// What a lab of stock Linux and stock daemons cannot reproduce of this network, one sentence
/// each. Control-plane state (routes, sessions) is still comparable; packets through these are
/// not.
pub fn limits(net: &Network, st: &State) -> Vec<String> {
    let mut out = Vec::new();
    if uses_tunnel(net, st, |t| matches!(t, Tunnel::Ipip)) {
        out.push(
            "IPIP: routes leave through tunl0, but this lab has no tunl0 (the kernels it was written for \
             lack the ipip link type, and stock BIRD 1.6 has no krt_tunnel): pod traffic across nodes \
             cannot be compared, only the control plane"
                .to_string(),
        );
    }
    if uses_tunnel(net, st, |t| matches!(t, Tunnel::Vxlan(_))) {
        out.push(
            "VXLAN: felix's vxlan.calico device and its FDB are not built; routes through it are left out".to_string(),
        );
    }
    if net.devices.iter().any(|d| d.kind == DeviceKind::External) {
        out.push(
            "external networks: only the gateway address is built (no DHCP server, no responders, no NAT \
             beyond it); DHCP-leased addresses are configured statically"
                .to_string(),
        );
    }
    out
}

/// Whether some installed route sends packets into a tunnel of that kind.
fn uses_tunnel(net: &Network, st: &State, kind: impl Fn(&Tunnel) -> bool) -> bool {
    st.devices.iter().any(|d| {
        d.fib
            .iter()
            .flat_map(|r| r.nexthops.iter())
            .any(|h| net.iface(h.iface).tunnel.as_ref().is_some_and(&kind))
    })
}

/// Whether packets between hosts need IPIP, which the lab cannot build (see `limits`).
pub fn needs_ipip(net: &Network, st: &State) -> bool {
    uses_tunnel(net, st, |t| matches!(t, Tunnel::Ipip))
}

/// Linux allows interface names of at most 15 bytes (IFNAMSIZ - 1) without `/`, `:` or blanks.
const IFNAMSIZ: usize = 15;

/// The interface's name in the lab's kernel: the model's name where Linux accepts it
/// (`Ethernet1`, `ens3`, `cali1234567890a`), else `if` and its dense id.
pub fn kernel_ifname(net: &Network, ifid: IfId) -> String {
    let name = &net.iface(ifid).name;
    let valid = !name.is_empty()
        && name.len() <= IFNAMSIZ
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        name.clone()
    } else {
        format!("if{}", ifid.0)
    }
}

/// A device's name as a file, directory or namespace name: `/` (a pod's NAMESPACE/NAME) and
/// anything a shell would treat specially become `_`.
pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The network namespace (or container) a device runs in.
pub fn netns_name(prefix: &str, net: &Network, dev: DeviceId) -> String {
    format!("{prefix}-{}", file_name(&net.device(dev).name))
}

/// Devices in model order with their ids.
fn devices(net: &Network) -> impl Iterator<Item = (DeviceId, &crate::model::Device)> {
    net.devices.iter().enumerate().map(|(i, d)| (DeviceId(i as u32), d))
}

/// The L2 domains a lab cables, with their index: a deleted veth leaves its domain empty
/// (`k8s::realize`), and an empty domain is nothing to build.
fn l2_domains(net: &Network) -> impl Iterator<Item = (usize, &L2Domain)> {
    net.l2.iter().enumerate().filter(|(_, l)| !l.members.is_empty())
}

/// The interfaces a lab builds for `dev`: cabled (in an L2 domain) and not tunnels. EOS
/// loopbacks and other uncabled interfaces are built as dummies by the targets that need them.
fn cabled_ifaces(net: &Network, dev: DeviceId) -> impl Iterator<Item = IfId> + '_ {
    net.device(dev)
        .ifaces
        .iter()
        .copied()
        .filter(move |i| net.iface(*i).l2.is_some() && net.iface(*i).tunnel.is_none())
}

/// Whether `dev` runs a BIRD the lab should start: a configuration and power.
fn runs_bird(net: &Network, st: &State, dev: DeviceId) -> bool {
    st.devices[dev.idx()].powered && net.device(dev).bird.as_ref().is_some_and(|b| !b.files.is_empty())
}

/// A host's routes that neither the kernel (connected) nor BIRD installs — netplan, DHCP,
/// felix's and typed ones — as `ip route add` arguments, device routes first so that gateways
/// behind them resolve. Routes into a tunnel device are left out (`limits`).
fn host_routes(net: &Network, st: &State, id: DeviceId) -> Vec<String> {
    let mut routes: Vec<&Route> = st.devices[id.idx()]
        .fib
        .iter()
        .filter(|r| matches!(r.proto, Proto::Static | Proto::Dhcp))
        .filter(|r| r.nexthops.iter().all(|h| net.iface(h.iface).tunnel.is_none()))
        .collect();
    routes.sort_by_key(|r| r.nexthops.iter().any(|h| h.via.is_some()));
    routes.into_iter().map(|r| route_args(net, r)).collect()
}

fn route_args(net: &Network, r: &Route) -> String {
    let mut cmd = String::new();
    if r.blackhole {
        let _ = write!(cmd, "blackhole {}", r.prefix);
    } else {
        let _ = write!(cmd, "{}", r.prefix);
        for h in &r.nexthops {
            let hop = match h.via {
                Some(gw) => format!(" via {gw} dev {}", kernel_ifname(net, h.iface)),
                None => format!(" dev {}", kernel_ifname(net, h.iface)),
            };
            if r.nexthops.len() > 1 {
                let _ = write!(cmd, " nexthop{hop}");
            } else {
                cmd.push_str(&hop);
            }
        }
    }
    if r.metric != 0 {
        let _ = write!(cmd, " metric {}", r.metric);
    }
    if r.scope_link {
        cmd.push_str(" scope link");
    }
    if r.onlink {
        cmd.push_str(" onlink");
    }
    if let Some(proto) = r.linux_proto {
        let _ = write!(cmd, " proto {proto}");
    }
    cmd
}
