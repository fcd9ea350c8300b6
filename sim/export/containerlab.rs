//! `--to containerlab`: `lab.clab.yml` for `containerlab deploy` plus the per-node files.
//!
//! EOS switches are, by `Options::switches`, either `frrouting/frr` containers on their exported
//! `frr.conf` (with a `daemons` file enabling what it needs: a lab that runs without a cEOS
//! image, issue #6) or `arista_ceos` nodes with their EOS startup-config (`export::eos`) and
//! the side file `lab.fabsim.yaml` (`snapshot::side_file`: device kinds, kubelet, hostnames,
//! NIC lists, `config_at`, the external network) — the faithful form that `fabsim` reads back
//! as the same network (issue #12). Linux hosts and pods are Debian bookworm containers that
//! install BIRD 1.6.8 and iproute2 from Debian at start (bookworm ships bird 1.6.8); a host's
//! netplan is bound as `/etc/netplan/50-fabsim.yaml` (what the host persists, read back through
//! the netplan parser), and since a container runs no networkd its exec lines apply the same
//! addresses and routes with `ip`, as the netns lab does. An external network is a Linux
//! container holding its gateway address. A multi-access segment is a `kind: bridge` node:
//! a Linux bridge on the lab's host, which containerlab attaches to but does not create.
//! Links keep the model's interface names (cEOS `EthernetN` is containerlab's `ethN`).

use std::fmt::Write;

use super::{
    bird, devices, eos, file_name, frr, host_routes, kernel_ifname, l2_domains, runs_bird, snapshot, Lab, Options,
    Switches,
};
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, IfId, Network};

/// FRR's own image at the release the FRR profile was read from (bgp-profiles.md).
const FRR_IMAGE: &str = "quay.io/frrouting/frr:8.4.4";
/// cEOS is not on a public registry: the name its image gets when imported
/// (`docker import cEOS-lab-4.32.0F.tar.xz ceos:4.32.0F`), as in topologies/rfc7938.
const CEOS_IMAGE: &str = "ceos:4.32.0F";
const HOST_IMAGE: &str = "debian:bookworm-slim";
/// Where a host's netplan is bound (netplan reads every `/etc/netplan/*.yaml`).
const NETPLAN_PATH: &str = "/etc/netplan/50-fabsim.yaml";

pub(super) fn write(net: &Network, st: &State, opts: &Options, lab: &mut Lab) {
    let bridges = bridge_names(net);
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# fabsim export --to containerlab: deploy with `containerlab deploy -t lab.clab.yml`."
    );
    if opts.switches == Switches::Ceos {
        let _ = writeln!(
            y,
            "# lab.fabsim.yaml holds what containerlab cannot say; `fabsim lab.clab.yml` reads both."
        );
    }
    for (_, name) in &bridges {
        let _ = writeln!(
            y,
            "# Create the bridge first: ip link add {name} type bridge && ip link set {name} up"
        );
    }
    for l in &lab.limits {
        let _ = writeln!(y, "# LIMIT: {l}");
    }
    let _ = writeln!(y, "name: {}\ntopology:\n  nodes:", opts.prefix);
    for (id, dev) in devices(net) {
        let dir = file_name(&dev.name);
        match (dev.kind, opts.switches) {
            (DeviceKind::Eos, Switches::Frr) => {
                let _ = writeln!(
                    y,
                    "    {dir}:\n      kind: linux\n      image: {FRR_IMAGE}\n      binds:\n        - {dir}/frr.conf:/etc/frr/frr.conf\n        - {dir}/daemons:/etc/frr/daemons"
                );
                lab.add(format!("{dir}/frr.conf"), frr::frr_conf(net, st, id, opts));
                lab.add(format!("{dir}/daemons"), daemons_file(&frr::daemons(dev)));
                write_exec(&mut y, &addresses(net, st, id));
            }
            (DeviceKind::Eos, Switches::Ceos) => {
                let _ = writeln!(
                    y,
                    "    {dir}:\n      kind: arista_ceos\n      image: {CEOS_IMAGE}\n      startup-config: {dir}/startup-config.cfg"
                );
                let (text, limits) = eos::running_config(net, id);
                lab.add(format!("{dir}/startup-config.cfg"), text);
                lab.limits.extend(limits);
            }
            _ => host(net, st, id, &mut y, lab),
        }
    }
    for (_, name) in &bridges {
        let _ = writeln!(y, "    {name}:\n      kind: bridge");
    }
    y.push_str("  links:\n");
    let end = |i: IfId| {
        let dev = net.device(net.iface(i).device);
        let port = match (dev.kind, opts.switches) {
            (DeviceKind::Eos, Switches::Ceos) => ceos_port(&net.iface(i).name),
            _ => kernel_ifname(net, i),
        };
        format!("{}:{port}", file_name(&dev.name))
    };
    for (i, l2) in l2_domains(net) {
        match bridges.iter().find(|(b, _)| *b == i) {
            None => {
                let ends: Vec<String> = l2.members.iter().map(|m| end(*m)).collect();
                let _ = writeln!(y, "    - endpoints: [\"{}\"]", ends.join("\", \""));
            }
            Some((_, name)) => {
                for (k, m) in l2.members.iter().enumerate() {
                    let _ = writeln!(y, "    - endpoints: [\"{name}:{name}-{k}\", \"{}\"]", end(*m));
                }
            }
        }
    }
    lab.add("lab.clab.yml", y);
    if opts.switches == Switches::Ceos {
        lab.add("lab.fabsim.yaml", snapshot::side_file(net));
    }
}

/// A Linux host, a pod or an external network's stand-in: packages, forwarding, addresses and
/// routes by exec lines; a host's netplan bound (the same addresses and `proto static` routes);
/// its BIRD, started by an exec line.
fn host(net: &Network, st: &State, id: DeviceId, y: &mut String, lab: &mut Lab) {
    let dev = net.device(id);
    let dir = file_name(&dev.name);
    let _ = writeln!(y, "    {dir}:\n      kind: linux\n      image: {HOST_IMAGE}");
    let mut binds = Vec::new();
    if dev.kind == DeviceKind::Linux {
        if let Some(np) = snapshot::netplan(net, dev) {
            lab.add(format!("{dir}/netplan.yaml"), np);
            binds.push(format!("{dir}/netplan.yaml:{NETPLAN_PATH}:ro"));
        }
    }
    let mut exec = vec![
        "apt-get update -q".to_string(),
        "apt-get install -y -q --no-install-recommends bird iproute2 iputils-ping procps".to_string(),
    ];
    exec.push(format!("sysctl -w net.ipv4.ip_forward={}", u8::from(dev.ip_forward)));
    exec.extend(addresses(net, st, id));
    exec.extend(
        host_routes(net, st, id)
            .into_iter()
            .map(|r| format!("ip route add {r}")),
    );
    if runs_bird(net, st, id) {
        binds.push(format!("{dir}:/etc/bird"));
        for (name, text) in bird::stock_files(net, id) {
            lab.add(format!("{dir}/{name}"), text);
        }
        exec.push("sh -c 'cd /etc/bird && bird -c bird.cfg'".to_string());
    }
    if !binds.is_empty() {
        y.push_str("      binds:\n");
        for b in &binds {
            let _ = writeln!(y, "        - {b}");
        }
    }
    write_exec(y, &exec);
}

/// Each multi-access segment's bridge: `br-SEGMENT` when that and its ports (`br-SEGMENT-K`)
/// are valid Linux interface names (the bridge and its ports live on the lab's host), else
/// `brN` by the segment's index.
fn bridge_names(net: &Network) -> Vec<(usize, String)> {
    l2_domains(net)
        .filter(|(_, l2)| l2.members.len() != 2)
        .map(|(i, l2)| {
            let named = format!("br-{}", file_name(&l2.name));
            let longest_port = named.len() + 1 + l2.members.len().saturating_sub(1).to_string().len();
            let clash = net.device_by_name(&named).is_some();
            if longest_port <= 15 && !clash && !named.contains('.') {
                (i, named)
            } else {
                (i, format!("br{i}"))
            }
        })
        .collect()
}

/// A cEOS port as a containerlab endpoint: `EthernetN` is `ethN`; other names (`Ethernet1/1`)
/// as EOS spells them.
fn ceos_port(name: &str) -> String {
    match name.strip_prefix("Ethernet") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => format!("eth{n}"),
        _ => name.to_string(),
    }
}

fn write_exec(y: &mut String, exec: &[String]) {
    if exec.is_empty() {
        return;
    }
    y.push_str("      exec:\n");
    for e in exec {
        let _ = writeln!(y, "        - {}", yaml_quote(e));
    }
}

fn yaml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// FRR's `/etc/frr/daemons`: the ones the configuration needs.
fn daemons_file(on: &[&str]) -> String {
    let mut o = String::from("# FRR daemons this switch's configuration needs (fabsim export)\n");
    for d in ["bgpd", "ospfd", "staticd"] {
        let _ = writeln!(o, "{d}={}", if on.contains(&d) { "yes" } else { "no" });
    }
    o.push_str("vtysh_enable=yes\nzebra_options=\"  -A 127.0.0.1 -s 90000000\"\n");
    o
}

fn addresses(net: &Network, st: &State, id: DeviceId) -> Vec<String> {
    net.device(id)
        .ifaces
        .iter()
        .filter(|i| net.iface(**i).l2.is_some())
        .filter_map(|i| {
            st.ifaces[i.idx()]
                .addr
                .map(|a| format!("ip addr add {a} dev {}", kernel_ifname(net, *i)))
        })
        .collect()
}
