//! An EOS switch of the model as EOS `show running-config` text, which `input::eos` reads
//! back into the same model (the snapshot round trip, `tests/round_trip.rs`): interfaces,
//! ACLs, static routes, `router ospf`. What the model holds that this does not write yet
//! (`router bgp`) is returned as a limit rather than written approximately.

use std::fmt::Write;

use crate::model::{AclAction, AddrConfig, Device, DeviceId, Network, RedistSource};

/// The running-config of EOS device `id`, and what it leaves out.
pub fn running_config(net: &Network, id: DeviceId) -> (String, Vec<String>) {
    let dev = net.device(id);
    let mut limits = Vec::new();
    let mut o = String::new();
    // The header `show running-config` prints; `input::snapshot` recognises EOS by it.
    o.push_str("! Command: show running-config\n");
    let _ = writeln!(o, "! device: {} (fabsim export)\n!", dev.name);
    if let Some(h) = &dev.hostname {
        let _ = writeln!(o, "hostname {h}\n!");
    }
    interfaces(net, dev, &mut o);
    acls(dev, &mut o);
    o.push_str("ip routing\n!\n");
    statics(dev, &mut o);
    if let Some(ospf) = &dev.ospf {
        let _ = writeln!(o, "router ospf {}", ospf.process_id);
        if let Some(rid) = ospf.router_id {
            let _ = writeln!(o, "   router-id {rid}");
        }
        if ospf.shutdown {
            o.push_str("   shutdown\n");
        }
        if ospf.passive_default {
            o.push_str("   passive-interface default\n");
        }
        let word = if ospf.passive_default {
            "no passive-interface"
        } else {
            "passive-interface"
        };
        for name in &ospf.passive_exceptions {
            let _ = writeln!(o, "   {word} {name}");
        }
        for n in &ospf.networks {
            let _ = writeln!(o, "   network {} area {}", n.prefix, std::net::Ipv4Addr::from(n.area));
        }
        for r in &ospf.redistribute {
            let src = match r.source {
                RedistSource::Connected => "connected",
                RedistSource::Static => "static",
                RedistSource::Bgp => "bgp",
            };
            let _ = write!(o, "   redistribute {src}");
            if let Some(m) = r.metric {
                let _ = write!(o, " metric {m}");
            }
            if let Some(t) = r.metric_type {
                let _ = write!(o, " metric-type {t}");
            }
            o.push('\n');
        }
        if let Some(n) = ospf.max_paths {
            let _ = writeln!(o, "   maximum-paths {n}");
        }
        o.push_str("!\n");
    }
    if dev.bgp.is_some() {
        limits.push(format!(
            "{}: `router bgp` is not written into EOS running-config form yet",
            dev.name
        ));
    }
    o.push_str("end\n");
    (o, limits)
}

fn interfaces(net: &Network, dev: &Device, o: &mut String) {
    for &i in &dev.ifaces {
        let ifc = net.iface(i);
        let _ = writeln!(o, "interface {}", ifc.name);
        let switchable = ifc.name.starts_with("Ethernet") || ifc.name.starts_with("Port-Channel");
        if switchable && ifc.routed {
            o.push_str("   no switchport\n");
        }
        let default_mtu = if ifc.name.starts_with("Loopback") { 65535 } else { 1500 };
        if ifc.mtu != default_mtu {
            let _ = writeln!(o, "   mtu {}", ifc.mtu);
        }
        if !ifc.admin_up {
            o.push_str("   shutdown\n");
        }
        match ifc.addr {
            AddrConfig::Static(a) => {
                let _ = writeln!(o, "   ip address {a}");
            }
            AddrConfig::Dhcp => o.push_str("   ip address dhcp\n"),
            AddrConfig::None => {}
        }
        if let Some(acl) = &ifc.nat_overload_acl {
            let _ = writeln!(o, "   ip nat source dynamic access-list {acl} overload");
        }
        if let Some(c) = ifc.ospf.cost {
            let _ = writeln!(o, "   ip ospf cost {c}");
        }
        if let Some(p) = ifc.ospf.priority {
            let _ = writeln!(o, "   ip ospf priority {p}");
        }
        if ifc.ospf.point_to_point {
            o.push_str("   ip ospf network point-to-point\n");
        }
        o.push_str("!\n");
    }
}

fn acls(dev: &Device, o: &mut String) {
    for acl in dev.acls.values() {
        let _ = writeln!(o, "ip access-list {}", acl.name);
        for e in &acl.entries {
            let action = match e.action {
                AclAction::Permit => "permit",
                AclAction::Deny => "deny",
            };
            let proto = e.protocol.map_or_else(|| "ip".to_string(), |p| p.to_string());
            let _ = writeln!(
                o,
                "   {} {action} {proto} {} {}",
                e.seq,
                acl_addr(e.src),
                acl_addr(e.dst)
            );
        }
        o.push_str("!\n");
    }
}

fn acl_addr(n: ipnet::Ipv4Net) -> String {
    match n.prefix_len() {
        0 => "any".to_string(),
        32 => format!("host {}", n.addr()),
        _ => n.to_string(),
    }
}

fn statics(dev: &Device, o: &mut String) {
    for s in &dev.statics {
        let mut line = format!("ip route {}", s.prefix);
        if s.blackhole {
            line.push_str(" Null0");
        }
        if let Some(ifname) = &s.dev {
            let _ = write!(line, " {ifname}");
        }
        if let Some(gw) = s.via {
            let _ = write!(line, " {gw}");
        }
        if let Some(d) = s.distance {
            let _ = write!(line, " {d}");
        }
        let _ = writeln!(o, "{line}");
    }
    if !dev.statics.is_empty() {
        o.push_str("!\n");
    }
}
