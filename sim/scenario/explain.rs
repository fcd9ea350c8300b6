//! The decision chain of one probe, hop by hop, read from the walk's own record (each `Hop`
//! keeps the FIB entry it forwarded by): `fabsim explain` prints it, and failed `reach` /
//! `unreachable` expectations include it as their "why".

use std::net::Ipv4Addr;

use crate::dataplane::{Headers, Hop, IcmpError, Lookup, Probe, ProbeOutcome};
use crate::engine::{local_iface, State};
use crate::model::{DeviceId, IfId, Network};

use super::describe_probe;

/// A probe's fate in words.
pub struct Explanation {
    /// One line per hop of the request, numbered, ending with where it ended.
    pub hops: Vec<String>,
    /// What came back (`describe_probe`) and the devices the answer crossed.
    pub result: String,
}

/// Explain probe `p`, sent to `dst`.
pub fn explain_probe(net: &Network, st: &State, p: &Probe, dst: Ipv4Addr) -> Explanation {
    let mut lines = Vec::new();
    if p.forward.is_empty() {
        if let ProbeOutcome::LocalNoRoute = p.outcome {
            lines.push(format!("the source has no route to {dst}"));
        } else {
            lines.push(format!("{dst} is the source's own address"));
        }
    }
    let last = p.forward.len().saturating_sub(1);
    // A loop is shown once round, then the hop where the TTL ran out.
    let mut visited: Vec<(DeviceId, Option<IfId>)> = Vec::new();
    let mut circling = false;
    for (i, hop) in p.forward.iter().enumerate() {
        if i < last && !circling {
            circling = visited.contains(&(hop.device, hop.ingress));
            visited.push((hop.device, hop.ingress));
            if circling {
                lines.push(format!(
                    "{}–{}. the packet circles the same hops again until its TTL runs out",
                    i + 1,
                    last
                ));
            }
        }
        if circling && i < last {
            continue;
        }
        let mut line = format!("{}. {}", i + 1, where_(net, hop));
        if let Some(n) = p.service_nat.as_ref().filter(|n| n.device == hop.device) {
            line.push_str(&format!(
                ": kube-proxy DNAT {}:{} → {}:{} (Service {}{})",
                n.cluster_ip,
                n.port,
                n.endpoint,
                n.target_port,
                n.service.trim_end_matches(':'),
                if n.masquerade { ", masqueraded" } else { "" }
            ));
        }
        let routed = routed_dst(hop).unwrap_or(dst);
        match &hop.route {
            Some(l) => line.push_str(&format!(": {}", decision(net, hop, l, routed))),
            None if i < last => line.push_str(": forwarded"),
            None => {}
        }
        if i == last {
            let sep = if hop.route.is_some() { " → " } else { ": " };
            line.push_str(sep);
            line.push_str(&ending(net, st, hop, p, routed));
        }
        lines.push(line);
    }
    let back: Vec<&str> = p.back.iter().map(|h| net.device(h.device).name.as_str()).collect();
    let mut result = describe_probe(net, p);
    // Through a Service: the source the backend saw (a masqueraded request carries a node's).
    let delivered = matches!(p.outcome, ProbeOutcome::Reply { .. });
    let at_backend = p.forward.last().and_then(|h| h.received).filter(|_| delivered);
    if let (Some(n), Some(r)) = (p.service_nat.as_ref(), at_backend) {
        let masqueraded = if n.masquerade {
            ", masqueraded by kube-proxy"
        } else {
            ""
        };
        result.push_str(&format!(
            "; the backend saw source {}{masqueraded}",
            r.inner.map_or(r.src, |i| i.src)
        ));
    }
    if !back.is_empty() {
        result.push_str(&format!(" (answer back via {})", back.join(" → ")));
    }
    Explanation { hops: lines, result }
}

/// `DEVICE` or `DEVICE in INTERFACE`.
fn where_(net: &Network, hop: &Hop) -> String {
    let name = &net.device(hop.device).name;
    match hop.ingress {
        Some(i) => format!("{name} in {}", net.iface(i).name),
        None => name.clone(),
    }
}

/// The destination this hop routed on: the inner one where it encapsulates, the outer one
/// inside a tunnel, the inner one again where it decapsulates.
fn routed_dst(hop: &Hop) -> Option<Ipv4Addr> {
    match (&hop.received, &hop.sent) {
        (r, Some(s)) if encapsulates(r.as_ref(), s) => s.inner.map(|i| i.dst),
        (_, Some(s)) => Some(s.dst),
        (Some(r), None) => Some(r.inner.map_or(r.dst, |i| i.dst)),
        (None, None) => None,
    }
}

fn encapsulates(received: Option<&Headers>, sent: &Headers) -> bool {
    sent.inner.is_some() && received.is_none_or(|r| r.inner.is_none())
}

/// The FIB decision, then encapsulation and NAT as the headers show them.
fn decision(net: &Network, hop: &Hop, l: &Lookup, dst: Ipv4Addr) -> String {
    let proto = super::checks::serde_name(l.proto);
    if l.blackhole {
        return format!("{dst} matches blackhole route {} ({proto})", l.prefix);
    }
    let mut s = format!("{dst} matches {} ({proto})", l.prefix);
    match l.via {
        Some(gw) => s.push_str(&format!(" via {gw}")),
        None => s.push_str(" directly connected"),
    }
    if let Some(e) = hop.egress {
        s.push_str(&format!(", out {}", net.iface(e).name));
    }
    if l.ecmp > 1 {
        s.push_str(&format!(" (1 of {} equal-cost next hops, by flow hash)", l.ecmp));
    }
    if let Some(sent) = &hop.sent {
        if let Some(i) = sent.inner.filter(|_| encapsulates(hop.received.as_ref(), sent)) {
            s.push_str(&format!(
                "; {} encapsulated {} > {}",
                encap_name(i.encap),
                sent.src,
                sent.dst
            ));
        }
        if let Some(r) = &hop.received {
            if let Some(i) = r.inner.filter(|_| sent.inner.is_none()) {
                s.push_str(&format!(
                    "; {} decapsulated (outer {} > {})",
                    encap_name(i.encap),
                    r.src,
                    r.dst
                ));
            }
            if r.inner.is_none() && sent.inner.is_none() && r.src != sent.src {
                s.push_str(&format!("; source NAT {} → {}", r.src, sent.src));
            }
        }
    }
    s
}

fn encap_name(e: crate::dataplane::Encap) -> String {
    match e {
        crate::dataplane::Encap::Ipip => "IP-in-IP".to_string(),
        crate::dataplane::Encap::Vxlan { dst_port, vni, .. } => format!("VXLAN (UDP {dst_port}, VNI {vni})"),
    }
}

/// Where the request's walk ended, said from the last device's side.
fn ending(net: &Network, st: &State, hop: &Hop, p: &Probe, dst: Ipv4Addr) -> String {
    match &p.outcome {
        ProbeOutcome::Error { from, error, .. } => {
            let why = match error {
                IcmpError::NetUnreachable => format!("no route to {dst}"),
                IcmpError::HostUnreachable => {
                    let gw = hop.route.and_then(|l| l.via).unwrap_or(dst);
                    format!("next hop {gw} does not answer ARP")
                }
                IcmpError::TtlExceeded => "the TTL expired".to_string(),
                IcmpError::PortUnreachable => format!(
                    "{} rejects it (a Service without endpoints)",
                    net.device(hop.device).name
                ),
            };
            let icmp = match error {
                IcmpError::NetUnreachable => "net unreachable",
                IcmpError::HostUnreachable => "host unreachable",
                IcmpError::TtlExceeded => "time exceeded",
                IcmpError::PortUnreachable => "port unreachable",
            };
            format!("{why} → ICMP {icmp} from {from}")
        }
        ProbeOutcome::Reply { from, .. } => format!("delivered, {from} answers"),
        // Something was sent back: the answer if the request arrived, else the ICMP error of
        // the router where it stopped. The result line says how it fared.
        ProbeOutcome::Lost { .. } if !p.back.is_empty() => {
            if local_iface(net, st, hop.device, dst).is_some() {
                "delivered, answered".into()
            } else if let Some(gw) = hop.route.and_then(|l| l.via) {
                format!("next hop {gw} does not answer ARP → ICMP host unreachable, which is lost on its way back")
            } else {
                format!("no route to {dst} → ICMP net unreachable, which is lost on its way back")
            }
        }
        ProbeOutcome::Lost { reason } => format!("lost: {reason}"),
        ProbeOutcome::LocalNoRoute => "no route".into(),
    }
}
