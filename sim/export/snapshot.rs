//! `--to snapshot`: the network as a snapshot directory (`input::snapshot` reads it back):
//! `configs/NAME.cfg` (EOS running-config, `export::eos`), `hosts/NAME.yaml` (netplan),
//! `links.yaml` (every link and segment), `fabsim.yaml` (a topology file holding what no
//! device file carries: device order and kinds, kubelet, hostnames, NIC lists, boot and
//! `config_at` times, external networks) and the cluster's `k8s/` and `calico/` dumps
//! (`export::cluster`). What the cluster makes — pods' network namespaces and veths, felix's
//! routes and NAT, each node's BIRD from confd — is not written: reading the dumps back makes
//! it again (`k8s::observed`). What the model holds that none of these can say yet (host
//! FRR/BIRD daemons, manual routes) is a limit of the export.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{cluster, eos, l2_domains, Lab};
use crate::model::{AddrConfig, Device, DeviceId, DeviceKind, Network, RouteOrigin};

pub(super) fn write(net: &Network, lab: &mut Lab) {
    let made = cluster_made(net);
    for (i, dev) in net.devices.iter().enumerate() {
        let id = DeviceId(i as u32);
        if made.pods.contains(&id) {
            continue;
        }
        match dev.kind {
            DeviceKind::Eos => {
                let (text, limits) = eos::running_config(net, id);
                lab.add(format!("configs/{}.cfg", dev.name), text);
                lab.limits.extend(limits);
            }
            DeviceKind::Linux => {
                if !made.nodes.contains(&id) {
                    host_limits(dev, &mut lab.limits);
                }
                if let Some(np) = netplan(net, dev) {
                    lab.add(format!("hosts/{}.yaml", dev.name), np);
                }
            }
            DeviceKind::External => {}
        }
    }
    if let Some(c) = net.cluster.as_deref() {
        for (path, text) in cluster::dumps(c) {
            lab.add(path, text);
        }
        lab.limits.push(
            "the cluster's Services, Deployment templates, pins, scripted pod facts, kubeadm's pod and service \
             CIDRs and calico-node's environment have no place in kubectl/calicoctl dumps; left out"
                .to_string(),
        );
    }
    lab.add("fabsim.yaml", side_file_without(net, &made.pods));
    lab.add("links.yaml", links(net, &made.pods));
}

/// What the cluster made: its pods' network-namespace devices, and its nodes' hosts.
struct ClusterMade {
    pods: BTreeSet<DeviceId>,
    nodes: BTreeSet<DeviceId>,
}

fn cluster_made(net: &Network) -> ClusterMade {
    let cluster = net.cluster.as_deref();
    ClusterMade {
        pods: net.pod_devices(),
        nodes: cluster.iter().flat_map(|c| c.nodes.iter().map(|n| n.device)).collect(),
    }
}

/// The side file (`fabsim.yaml` of a snapshot, `lab.fabsim.yaml` of a containerlab export): a
/// topology file declaring every device in model order with what no device file carries.
pub(super) fn side_file(net: &Network) -> String {
    side_file_without(net, &BTreeSet::new())
}

/// The side file without the devices in `skip` (what reading the dumps back makes again).
fn side_file_without(net: &Network, skip: &BTreeSet<DeviceId>) -> String {
    let mut side = String::from(
        "# fabsim export: what no device configuration file carries.\n\
         # Device order, kinds, kubelet, hostnames, NIC lists, boot/config_at, external networks.\n",
    );
    let _ = writeln!(side, "devices:");
    for (i, dev) in net.devices.iter().enumerate() {
        if !skip.contains(&DeviceId(i as u32)) {
            sidecar_device(net, DeviceId(i as u32), dev, &mut side);
        }
    }
    side
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The device's entry in `fabsim.yaml`: its kind and the keys of that kind no config file has.
fn sidecar_device(net: &Network, id: DeviceId, dev: &Device, o: &mut String) {
    let kind = match (dev.kind, dev.kubelet.is_some()) {
        (DeviceKind::Eos, _) => "eos",
        (DeviceKind::Linux, true) => "k8s-node",
        (DeviceKind::Linux, false) => "linux",
        (DeviceKind::External, _) => "external",
    };
    let _ = writeln!(o, "  {}:\n    kind: {kind}", quote(&dev.name));
    if dev.boot_ms != 0 {
        let _ = writeln!(o, "    boot: {}ms", dev.boot_ms);
    }
    if let Some(t) = net.timed.iter().find(|t| t.device == id) {
        let _ = writeln!(o, "    config_at: {}ms", t.at_ms);
    }
    match dev.kind {
        DeviceKind::Linux => {
            if let Some(h) = dev.hostname.as_ref().filter(|h| **h != dev.name) {
                let _ = writeln!(o, "    hostname: {}", quote(h));
            }
            // Listed in kernel order, so a re-read host numbers its NICs (`ip addr`) the same.
            let nics: Vec<String> = dev
                .ifaces
                .iter()
                .map(|i| net.iface(*i))
                .filter(|i| i.name != "lo")
                .map(|i| quote(&i.name))
                .collect();
            let _ = writeln!(o, "    interfaces: [{}]", nics.join(", "));
            if dev.ip_forward {
                o.push_str("    ip_forward: true\n");
            }
            let proxy: Vec<&str> = dev
                .ifaces
                .iter()
                .map(|i| net.iface(*i))
                .filter(|i| i.proxy_arp)
                .map(|i| i.name.as_str())
                .collect();
            if !proxy.is_empty() {
                o.push_str("    sysctl:\n");
                for name in proxy {
                    let _ = writeln!(o, "      net.ipv4.conf.{name}.proxy_arp: 1");
                }
            }
            if let Some(image) = &dev.image {
                let _ = writeln!(o, "    image: {}", quote(image));
            }
            if let Some(k) = &dev.kubelet {
                let _ = write!(o, "    kubelet: {{version: {}", quote(&k.version));
                if let Some(ip) = k.node_ip {
                    let _ = write!(o, ", node_ip: {ip}");
                }
                o.push_str("}\n");
            }
        }
        DeviceKind::External => {
            if let Some(ifc) = dev.ifaces.first().map(|i| net.iface(*i)) {
                let _ = writeln!(o, "    interface: {}", quote(&ifc.name));
            }
            if let Some(ext) = &dev.external {
                let _ = writeln!(o, "    gateway: {}", ext.gateway);
                if !ext.leases.is_empty() {
                    o.push_str("    leases:\n");
                    for l in &ext.leases {
                        let _ = writeln!(
                            o,
                            "      - {{device: {}, interface: {}, address: {}}}",
                            quote(&l.device),
                            quote(&l.interface),
                            l.address
                        );
                    }
                }
                if !ext.responders.is_empty() {
                    o.push_str("    responders:\n");
                    for r in &ext.responders {
                        let _ = writeln!(o, "      - {{address: {}, reply_ttl: {}}}", r.address, r.reply_ttl);
                    }
                }
            }
        }
        DeviceKind::Eos => {}
    }
}

/// What a host has that neither netplan nor `fabsim.yaml` says.
fn host_limits(dev: &Device, limits: &mut Vec<String>) {
    let name = &dev.name;
    if dev.bgp.is_some() || dev.ospf.is_some() || dev.bird.is_some() {
        limits.push(format!(
            "{name}: its FRR/BIRD configuration is not written into the snapshot yet"
        ));
    }
    if dev.statics.iter().any(|s| s.origin != RouteOrigin::Netplan) {
        limits.push(format!(
            "{name}: routes added by `ip route`, FRR's zebra or felix have no netplan form; left out"
        ));
    }
    if dev.masquerade.is_some() {
        limits.push(format!("{name}: its MASQUERADE rule has no snapshot form; left out"));
    }
}

/// The host's netplan: addresses, DHCP, MTUs and its netplan routes, per interface in kernel
/// order. None when there is nothing to say.
pub(super) fn netplan(net: &Network, dev: &Device) -> Option<String> {
    let mut o = String::from("network:\n  version: 2\n  ethernets:\n");
    let mut any = false;
    for ifc in dev.ifaces.iter().map(|i| net.iface(*i)).filter(|i| i.name != "lo") {
        let routes: Vec<_> = dev
            .statics
            .iter()
            .filter(|s| s.origin == RouteOrigin::Netplan && s.dev.as_deref() == Some(ifc.name.as_str()))
            .collect();
        if ifc.addr == AddrConfig::None && routes.is_empty() && ifc.mtu == 1500 {
            continue;
        }
        any = true;
        let _ = writeln!(o, "    {}:", quote(&ifc.name));
        match ifc.addr {
            AddrConfig::Static(a) => {
                let _ = writeln!(o, "      addresses: [{a}]\n      dhcp4: false");
            }
            AddrConfig::Dhcp => o.push_str("      dhcp4: true\n"),
            AddrConfig::None => {}
        }
        if ifc.mtu != 1500 {
            let _ = writeln!(o, "      mtu: {}", ifc.mtu);
        }
        if !routes.is_empty() {
            o.push_str("      routes:\n");
        }
        for r in routes {
            let to = if r.prefix.prefix_len() == 0 {
                "default".to_string()
            } else {
                r.prefix.to_string()
            };
            let _ = writeln!(o, "        - to: {to}");
            if let Some(via) = r.via {
                let _ = writeln!(o, "          via: {via}");
            }
            if r.metric != 0 {
                let _ = writeln!(o, "          metric: {}", r.metric);
            }
            if r.onlink {
                o.push_str("          on-link: true\n");
            }
            if r.blackhole {
                o.push_str("          type: blackhole\n");
            }
        }
    }
    any.then_some(o)
}

/// `links.yaml`: two-member L2 domains as links, the others as segments under their names;
/// none with a member on a device in `skip`.
fn links(net: &Network, skip: &BTreeSet<DeviceId>) -> String {
    let kept = |l: &&crate::model::L2Domain| l.members.iter().all(|m| !skip.contains(&net.iface(*m).device));
    let end = |i: &crate::model::IfId| {
        let ifc = net.iface(*i);
        quote(&format!("{}:{}", net.device(ifc.device).name, ifc.name))
    };
    let links: Vec<_> = net.l2.iter().filter(|l| l.members.len() == 2).filter(kept).collect();
    // A fabric of segments only (one rack switch and its hosts) still says `links:`, as a list.
    let mut o = String::from(if links.is_empty() { "links: []\n" } else { "links:\n" });
    for l2 in links {
        let _ = writeln!(o, "  - [{}, {}]", end(&l2.members[0]), end(&l2.members[1]));
    }
    let segments: Vec<_> = l2_domains(net)
        .map(|(_, l)| l)
        .filter(|l| l.members.len() != 2)
        .filter(kept)
        .collect();
    if !segments.is_empty() {
        o.push_str("segments:\n");
        for s in segments {
            let ends: Vec<String> = s.members.iter().map(end).collect();
            let _ = writeln!(o, "  {}: [{}]", quote(&s.name), ends.join(", "));
        }
    }
    o
}
