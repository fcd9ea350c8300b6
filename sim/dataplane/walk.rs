//! Packet walk types and the walker.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::engine::state::{NextHop, Proto};
use crate::engine::{local_iface, State};
use crate::model::{AclAction, DeviceId, DeviceKind, IfId, Network, Responder, Tunnel, L4};

/// The ephemeral range Linux takes a VXLAN source port from when the device has no
/// `srcport` range (`srcport 0 0`: `inet_get_local_port_range`, net.ipv4.ip_local_port_range
/// default 32768 60999).
const EPHEMERAL_PORTS: (u32, u32) = (32768, 60999);

/// Why a packet went no further.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IcmpError {
    /// Type 3 code 0, `Destination Net Unreachable`.
    NetUnreachable,
    /// Type 3 code 1, `Destination Host Unreachable` (ARP failed).
    HostUnreachable,
    /// Type 11 code 0, `Time to live exceeded`.
    TtlExceeded,
    /// Type 3 code 3, `Destination Port Unreachable`: an iptables REJECT (kube-proxy's rule
    /// for a Service without endpoints).
    PortUnreachable,
}

/// One router or host a packet visited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    pub device: DeviceId,
    pub ingress: Option<IfId>,
    pub egress: Option<IfId>,
    /// TTL of the packet as it arrived.
    pub ttl_in: u8,
    /// The packet as it arrived on `ingress` and as it left on `egress` (what a capture on
    /// those interfaces shows; an encapsulated packet carries its inner addresses). `sent` is
    /// None when the packet never left: no next hop answered ARP.
    pub received: Option<Headers>,
    pub sent: Option<Headers>,
    /// Virtual time (µs after the probe left its source) at which the packet reached this
    /// device; it leaves at the same instant (forwarding takes no virtual time).
    pub at_us: u64,
    /// The FIB entry this device forwarded the packet by (before any encapsulation), kept so
    /// that `fabsim explain` and failed checks can show each decision without walking again.
    pub route: Option<Lookup>,
}

/// One forwarding decision: the route that matched and the next hop the flow hash chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Lookup {
    pub prefix: Ipv4Net,
    pub proto: Proto,
    /// The chosen next hop's gateway (`None`: on-link, or a blackhole route).
    pub via: Option<Ipv4Addr>,
    /// How many equal-cost next hops the route had.
    pub ecmp: usize,
    pub blackhole: bool,
}

/// A packet's headers as a capture prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Headers {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    /// The encapsulation and the encapsulated packet's source and destination.
    pub inner: Option<Inner>,
    pub payload: Payload,
    /// An ICMP error's quoted datagram (the packet that caused it).
    pub quoted: Option<Quoted>,
}

/// The datagram an ICMP error quotes, as the device that sent the error held it: the received
/// TTL for a TTL or routing failure (Linux checks both before `ip_forward` decrements it), the
/// decremented one for an ARP failure after forwarding (the neighbour code quotes the packet
/// as it was about to leave, NATed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Quoted {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub inner: Option<Inner>,
    pub kind: ProbeKind,
}

/// The packet inside an encapsulated one, as a capture shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Inner {
    pub encap: Encap,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
}

/// How a packet is encapsulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encap {
    /// IP protocol 4.
    Ipip,
    /// UDP to `dst_port` carrying a VXLAN header with `vni` and an Ethernet frame.
    Vxlan { src_port: u16, dst_port: u16, vni: u32 },
}

/// The fate of one probe (echo request, or traceroute/tracepath probe with a given TTL).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeOutcome {
    /// The source has no route: `connect: Network is unreachable`.
    LocalNoRoute,
    /// The destination answered (echo reply, or port unreachable for a traceroute probe).
    Reply { from: Ipv4Addr, ttl: u8 },
    /// An ICMP error came back.
    Error { from: Ipv4Addr, error: IcmpError, ttl: u8 },
    /// Nothing came back; `reason` says where and why the request or its answer died.
    Lost { reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Probe {
    pub outcome: ProbeOutcome,
    /// Round trip in microseconds (virtual link delays), when something came back.
    pub rtt_us: u64,
    /// Source address the request carried when it left the source.
    pub src: Option<Ipv4Addr>,
    /// The request's path, then the answer's path.
    pub forward: Vec<Hop>,
    pub back: Vec<Hop>,
    /// The devices of a forwarding loop the request or its answer entered (first device
    /// repeated at the end), if any. The packet still circles until its TTL runs out, as on a
    /// real network; this says why.
    pub forwarding_loop: Option<Vec<DeviceId>>,
    /// kube-proxy's DNAT of the request to a Service endpoint, if a node applied one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_nat: Option<ServiceNat>,
}

/// kube-proxy's DNAT of a ClusterIP:port to one of the Service's endpoints (`KUBE-SVC-…` →
/// `KUBE-SEP-…`), on the node where the packet first meets netfilter; conntrack restores the
/// ClusterIP as the answer's source there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceNat {
    pub device: DeviceId,
    /// The rule's `NAMESPACE/NAME:PORTNAME`.
    pub service: String,
    /// Where the request was sent: the ClusterIP, or for a node port the node's own address.
    pub cluster_ip: Ipv4Addr,
    pub port: u16,
    pub endpoint: Ipv4Addr,
    pub target_port: u16,
    /// The request left the node masqueraded (`KUBE-MARK-MASQ`: a source outside kube-proxy's
    /// clusterCIDR, a pod reaching itself, or any request to a node port).
    pub masquerade: bool,
}

/// What a probe is: an ICMP echo request (ping), a UDP datagram to a high port
/// (traceroute/tracepath), which the destination answers with ICMP port unreachable, or a TCP
/// SYN (curl, wget), which the destination host answers (whether anything listens on the port
/// is the workload's business, not the network's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ProbeKind {
    Echo,
    Udp { dst_port: u16 },
    Tcp { dst_port: u16 },
}

impl ProbeKind {
    /// A connection (TCP) or datagram (UDP) to `dst_port`, as a Service port names it.
    pub fn to_port(protocol: L4, dst_port: u16) -> ProbeKind {
        match protocol {
            L4::Tcp => ProbeKind::Tcp { dst_port },
            L4::Udp => ProbeKind::Udp { dst_port },
        }
    }
}

/// The source address Linux picks for a route without `src`: the egress interface's address,
/// or, when it has none (a pod's `caliX` veth), the first global address of the box in
/// interface order (`inet_select_addr`).
pub(super) fn source_for(net: &Network, st: &State, dev: DeviceId, egress: IfId) -> Option<Ipv4Addr> {
    st.ifaces[egress.idx()].addr.map(|a| a.addr()).or_else(|| {
        net.device(dev)
            .ifaces
            .iter()
            .filter(|i| net.iface(**i).name != "lo" && st.ifaces[i.idx()].up)
            .find_map(|i| st.ifaces[i.idx()].addr.map(|a| a.addr()))
    })
}

/// The interface on `egress`'s L2 domain that owns `gw` and is up (ARP).
pub(super) fn arp(net: &Network, st: &State, egress: IfId, gw: Ipv4Addr) -> Option<IfId> {
    if !st.ifaces[egress.idx()].usable() {
        return None;
    }
    let owner = net.l2_peers(egress).find(|p| {
        let s = &st.ifaces[p.idx()];
        s.usable() && s.addr.map(|a| a.addr()) == Some(gw)
    });
    // Without an owner, a proxy-ARP interface answers for the address (Linux answers when
    // it has a route to it through another interface; Calico's host side of a pod veth
    // answers for 169.254.1.1).
    owner.or_else(|| {
        net.l2_peers(egress).find(|p| {
            let peer_dev = net.iface(*p).device;
            net.iface(*p).proxy_arp
                && st.ifaces[p.idx()].usable()
                && st.devices[peer_dev.idx()]
                    .fib
                    .lookup(gw)
                    .is_some_and(|r| r.nexthops.iter().all(|nh| nh.iface != *p))
        })
    })
}

/// Virtual one-way delay of one link traversal (not from any reference: RTTs are incidental,
/// seed-lab.md §0; this only makes them deterministic and grow with the path).
const LINK_DELAY_US: u64 = 500;
/// Round trip of a packet a device sends to one of its own addresses.
const LOCAL_RTT_US: u64 = 20;
/// Safety bound on hops in one walk (TTL bounds real walks at 255).
const MAX_STEPS: usize = 300;

/// Send one probe from `from` to `dst` with the given initial TTL and follow it and its answer
/// through the FIBs of `st`. The probe's sequence number does not enter the ECMP flow hash: the
/// echo requests of one ping are one flow (one ICMP id), and a UDP/TCP probe's flow already
/// differs by its port.
pub fn probe(net: &Network, st: &State, from: DeviceId, dst: Ipv4Addr, ttl: u8, kind: ProbeKind, _seq: u32) -> Probe {
    probe_src(net, st, from, None, dst, ttl, kind)
}

/// The source address `dev` puts on a packet to `dst` (`ip route get DST`'s `src`): the
/// route's preferred source, else the egress interface's address. None without a route.
pub fn probe_source(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr) -> Option<Ipv4Addr> {
    if local_iface(net, st, dev, dst).is_some() {
        return Some(dst);
    }
    let route = st.devices.get(dev.idx())?.fib.lookup(dst)?;
    let nh = route.nexthops.first()?;
    route.src.or_else(|| source_for(net, st, dev, nh.iface))
}

/// Like `probe`, with the source address fixed (a BGP session's `update-source` / `source
/// address`) instead of chosen from the route.
pub fn probe_src(
    net: &Network,
    st: &State,
    from: DeviceId,
    src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    ttl: u8,
    kind: ProbeKind,
) -> Probe {
    let mut ctx = Walk {
        net,
        st,
        delay_us: 0,
        nat: None,
        service_nat: None,
        forwarding_loop: None,
    };
    let mut p = probe_with(&mut ctx, from, src, dst, ttl, kind);
    p.forwarding_loop = ctx.forwarding_loop;
    p.service_nat = ctx.service_nat;
    p
}

fn probe_with(
    ctx: &mut Walk<'_>,
    from: DeviceId,
    fixed_src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    ttl: u8,
    kind: ProbeKind,
) -> Probe {
    let (net, st) = (ctx.net, ctx.st);
    let mut p = Probe {
        outcome: ProbeOutcome::LocalNoRoute,
        rtt_us: 0,
        src: None,
        forward: Vec::new(),
        back: Vec::new(),
        forwarding_loop: None,
        service_nat: None,
    };
    if local_iface(net, st, from, dst).is_some() {
        p.src = Some(dst);
        p.rtt_us = LOCAL_RTT_US;
        p.outcome = ProbeOutcome::Reply {
            from: dst,
            ttl: net.device(from).profile.ttl,
        };
        return p;
    }
    let Some(route) = st.devices[from.idx()].fib.lookup(dst) else {
        return p;
    };
    if route.blackhole || route.nexthops.is_empty() {
        return p;
    }
    let Some(src) = fixed_src
        .or(route.src)
        .or_else(|| source_for(net, st, from, route.nexthops[0].iface))
    else {
        return p;
    };
    p.src = Some(src);
    let pkt = Packet {
        src,
        dst,
        ttl,
        kind: Payload::Request(kind),
        quoted: None,
    };
    let (end, fwd) = ctx.walk(from, pkt, true);
    p.forward = fwd;
    let answer = match end {
        End::Delivered { dev, pkt: arrived } => {
            let payload = match kind {
                ProbeKind::Echo | ProbeKind::Tcp { .. } => Payload::EchoReply,
                ProbeKind::Udp { .. } => Payload::PortUnreachable,
            };
            let ttl = net.device(dev).profile.ttl;
            Some((
                dev,
                Packet {
                    src: arrived.dst,
                    dst: arrived.src,
                    ttl,
                    kind: payload,
                    // A port unreachable quotes the datagram as it arrived.
                    quoted: (payload == Payload::PortUnreachable)
                        .then(|| arrived.quote(None, arrived.ttl))
                        .flatten(),
                },
            ))
        }
        End::Responded {
            dev,
            responder,
            pkt: arrived,
        } => match kind {
            ProbeKind::Echo => Some((
                dev,
                Packet {
                    src: responder.address,
                    dst: arrived.src,
                    ttl: responder.reply_ttl,
                    kind: Payload::EchoReply,
                    quoted: None,
                },
            )),
            ProbeKind::Udp { .. } | ProbeKind::Tcp { .. } => {
                p.outcome = ProbeOutcome::Lost {
                    reason: format!("{} answers ICMP echo only; the probe got no answer", responder.address),
                };
                return p;
            }
        },
        End::Error {
            dev,
            from: err_src,
            error,
            pkt: offending,
            quoted,
        } => {
            if dev == from {
                // The source itself could not resolve the next hop (ARP failed).
                p.outcome = ProbeOutcome::Error {
                    from: err_src,
                    error,
                    ttl: net.device(from).profile.ttl,
                };
                p.rtt_us = ctx.delay_us;
                return p;
            }
            let ttl = net.device(dev).profile.ttl;
            Some((
                dev,
                Packet {
                    src: err_src,
                    dst: offending.src,
                    ttl,
                    kind: Payload::Error(error),
                    quoted,
                },
            ))
        }
        End::Dropped { reason } => {
            p.outcome = ProbeOutcome::Lost { reason };
            return p;
        }
    };
    let Some((answerer, mut reply)) = answer else { return p };
    if answerer == from && local_iface(net, st, from, reply.dst).is_some() {
        // The request was DNATed back into its own host: the answer never leaves it, and
        // conntrack gives it the address the request was sent to.
        ctx.undo_service_nat(from, &mut reply);
        p.rtt_us = ctx.delay_us;
        p.outcome = ProbeOutcome::Reply {
            from: reply.src,
            ttl: reply.ttl,
        };
        return p;
    }
    let (end, back) = ctx.walk(answerer, reply, false);
    p.back = back;
    p.rtt_us = ctx.delay_us;
    p.outcome = match end {
        End::Delivered { dev, pkt } if dev == from => match pkt.kind {
            Payload::Error(error) => ProbeOutcome::Error {
                from: pkt.src,
                error,
                ttl: pkt.ttl,
            },
            _ => ProbeOutcome::Reply {
                from: pkt.src,
                ttl: pkt.ttl,
            },
        },
        End::Delivered { dev, .. } => ProbeOutcome::Lost {
            reason: format!("the answer was delivered to {} instead", net.device(dev).name),
        },
        End::Dropped { reason } => ProbeOutcome::Lost {
            reason: format!("the answer was lost: {reason}"),
        },
        End::Error { dev, error, .. } => ProbeOutcome::Lost {
            reason: format!(
                "the answer was lost: {} at {}",
                error_text(&error),
                net.device(dev).name
            ),
        },
        End::Responded { .. } => ProbeOutcome::Lost {
            reason: "the answer went to the internet".into(),
        },
    };
    p
}

/// The outer packet that carries `pkt` out of `dev`'s tunnel device `tunnel` towards the
/// route's gateway `gw`, and the next hop it leaves by (which must not be a tunnel again).
///
/// IPIP: the outer destination is the gateway and the source the one routing picks for it.
/// VXLAN: the gateway is the remote VTEP's tunnel address; its FDB entry names the remote node,
/// the outer destination; the source is the device's `local` address; the UDP source port is
/// Linux's `udp_flow_src_port` over the inner flow's hash (the kernel's hash has a per-boot
/// random seed, so fabsim uses the walk's own FNV flow hash: deterministic, still one port per
/// flow and direction).
fn encapsulate<'a>(
    net: &'a Network,
    st: &'a State,
    dev: DeviceId,
    tunnel: IfId,
    pkt: Packet,
    gw: Option<Ipv4Addr>,
) -> Result<(Packet, Encap, &'a NextHop), String> {
    let name = &net.device(dev).name;
    let tunl = net.iface(tunnel);
    let gw = gw.ok_or_else(|| {
        format!(
            "{name}: a route into the tunnel {} has no remote end (no gateway)",
            tunl.name
        )
    })?;
    let (remote, local, encap) = match &tunl.tunnel {
        Some(Tunnel::Vxlan(v)) => {
            let remote = v.remote_for(gw).ok_or_else(|| {
                format!(
                    "{name}: {} has no FDB entry for {gw} (no learning): the frame is dropped",
                    tunl.name
                )
            })?;
            let encap = Encap::Vxlan {
                src_port: vxlan_src_port(pkt.flow_hash(dev)),
                dst_port: v.port,
                vni: v.vni,
            };
            (remote, Some(v.local), encap)
        }
        _ => (gw, None, Encap::Ipip),
    };
    let route = st.devices[dev.idx()]
        .fib
        .lookup(remote)
        .filter(|r| !r.blackhole && !r.nexthops.is_empty())
        .ok_or_else(|| format!("{name} has no route to the tunnel's remote end {remote}"))?;
    let nh = &route.nexthops[0];
    if net.iface(nh.iface).tunnel.is_some() {
        return Err(format!(
            "{name} routes the tunnel's remote end {remote} into a tunnel again"
        ));
    }
    let src = local
        .or(route.src)
        .or_else(|| source_for(net, st, dev, nh.iface))
        .ok_or_else(|| format!("{name} has no address to send the encapsulated packet from"))?;
    let outer = Packet {
        src,
        dst: remote,
        ttl: net.device(dev).profile.ttl,
        kind: pkt.kind,
        quoted: pkt.quoted,
    };
    Ok((outer, encap, nh))
}

/// Linux `udp_flow_src_port` with the default range: fold the hash's low half into its high
/// half and scale it into the ephemeral ports.
fn vxlan_src_port(flow_hash: u64) -> u16 {
    let mut h = flow_hash as u32;
    h ^= h << 16;
    let (min, max) = EPHEMERAL_PORTS;
    let port = ((u64::from(h) * u64::from(max - min)) >> 32) as u32 + min;
    u16::try_from(port).unwrap_or(u16::MAX)
}

/// The headers a capture shows for `pkt` (carrying `inner`, if encapsulated).
fn headers(pkt: &Packet, inner: Option<&(Encap, Packet)>) -> Headers {
    Headers {
        src: pkt.src,
        dst: pkt.dst,
        ttl: pkt.ttl,
        inner: inner.map(|(encap, i)| Inner {
            encap: *encap,
            src: i.src,
            dst: i.dst,
            ttl: i.ttl,
        }),
        payload: inner.map_or(pkt.kind, |(_, i)| i.kind),
        quoted: inner.map_or(pkt.quoted, |(_, i)| i.quoted),
    }
}

/// The up tunnel device of `dev` that receives packets encapsulated as `encap`: the `ipip`
/// device for protocol 4, the `vxlan` device listening on the UDP port with that VNI.
fn tunnel_device(net: &Network, st: &State, dev: DeviceId, encap: Encap) -> Option<IfId> {
    net.device(dev).ifaces.iter().copied().find(|i| {
        st.ifaces[i.idx()].up
            && match (&net.iface(*i).tunnel, encap) {
                (Some(Tunnel::Ipip), Encap::Ipip) => true,
                (Some(Tunnel::Vxlan(v)), Encap::Vxlan { dst_port, vni, .. }) => v.port == dst_port && v.vni == vni,
                _ => false,
            }
    })
}

/// An ICMP error in words, for explanations and findings.
pub fn error_text(e: &IcmpError) -> &'static str {
    match e {
        IcmpError::NetUnreachable => "no route (net unreachable)",
        IcmpError::HostUnreachable => "next hop does not answer ARP (host unreachable)",
        IcmpError::TtlExceeded => "TTL expired",
        IcmpError::PortUnreachable => "rejected (port unreachable)",
    }
}

/// What a packet carries (the innermost payload of an encapsulated one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Payload {
    Request(ProbeKind),
    EchoReply,
    PortUnreachable,
    Error(IcmpError),
}

#[derive(Clone, Copy, Debug)]
struct Packet {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ttl: u8,
    kind: Payload,
    /// What an ICMP error quotes.
    quoted: Option<Quoted>,
}

impl Packet {
    /// This packet (carrying `inner`, if encapsulated) as an ICMP error about it quotes it,
    /// with its TTL as the erring device held it; None for what never triggers an error.
    fn quote(&self, inner: Option<&(Encap, Packet)>, ttl: u8) -> Option<Quoted> {
        let Payload::Request(kind) = self.kind else { return None };
        let h = headers(self, inner);
        Some(Quoted {
            src: self.src,
            dst: self.dst,
            ttl,
            inner: h.inner,
            kind,
        })
    }

    /// ICMP errors are never sent about ICMP errors or replies (RFC 1122 §3.2.2).
    fn may_trigger_error(&self) -> bool {
        matches!(self.kind, Payload::Request(_))
    }

    /// Flow identity for ECMP hashing: addresses, protocol and (UDP) port.
    fn flow_hash(&self, at: DeviceId) -> u64 {
        let proto_port: u32 = match self.kind {
            Payload::Request(ProbeKind::Udp { dst_port }) => 17 << 16 | u32::from(dst_port),
            Payload::Request(ProbeKind::Tcp { dst_port }) => 6 << 16 | u32::from(dst_port),
            Payload::PortUnreachable | Payload::Error(_) | Payload::EchoReply | Payload::Request(ProbeKind::Echo) => {
                1 << 16
            }
        };
        fnv(&[u32::from(self.src), u32::from(self.dst), proto_port, at.0])
    }

    /// The flow hash of an encapsulating packet: a VXLAN packet is UDP with both ports (its
    /// source port is the entropy routers spread it by); an IPIP one hashes as its payload.
    fn outer_flow_hash(&self, at: DeviceId, encap: Encap) -> u64 {
        match encap {
            Encap::Ipip => self.flow_hash(at),
            Encap::Vxlan { src_port, dst_port, .. } => {
                let ports = u32::from(src_port) << 16 | u32::from(dst_port);
                fnv(&[u32::from(self.src), u32::from(self.dst), 17 << 16, ports, at.0])
            }
        }
    }
}

/// 64-bit FNV-1a over the words' big-endian bytes.
fn fnv(words: &[u32]) -> u64 {
    crate::hash::fnv1a(words.iter().flat_map(|w| w.to_be_bytes()))
}

enum End {
    Delivered {
        dev: DeviceId,
        pkt: Packet,
    },
    /// A responder beyond an external network's gateway got the packet.
    Responded {
        dev: DeviceId,
        responder: Responder,
        pkt: Packet,
    },
    /// `dev` generated an ICMP error about `pkt`, sourced from `from`, quoting `quoted`.
    Error {
        dev: DeviceId,
        from: Ipv4Addr,
        error: IcmpError,
        pkt: Packet,
        quoted: Option<Quoted>,
    },
    Dropped {
        reason: String,
    },
}

/// Source NAT done on the way out, undone for the answer.
#[derive(Clone, Copy, Debug)]
struct NatEntry {
    iface: IfId,
    inside: Ipv4Addr,
    outside: Ipv4Addr,
}

struct Walk<'a> {
    net: &'a Network,
    st: &'a State,
    delay_us: u64,
    nat: Option<NatEntry>,
    /// kube-proxy's DNAT of the request (one per walk: the answer is un-DNATed by it).
    service_nat: Option<ServiceNat>,
    forwarding_loop: Option<Vec<DeviceId>>,
}

/// What kube-proxy's rules did with a packet.
enum ServiceVerdict {
    /// Not a Service's ClusterIP and port (or no kube-proxy here).
    Untouched,
    /// DNATed to an endpoint.
    Dnat,
    /// A Service without ready endpoints: the filter table's REJECT.
    Reject,
}

impl Walk<'_> {
    /// Walk `pkt` from `origin` (which sends it: no TTL decrement there) until it is delivered,
    /// answered by a responder, makes some router send an ICMP error, or is dropped.
    ///
    /// A route out of a tunnel device encapsulates: the packet travels inside an outer header
    /// (IPIP, or UDP/VXLAN) to the tunnel's remote end (`encapsulate`), routers on the way see
    /// and decrement only the outer header, and the remote end's tunnel device hands the inner
    /// packet back to routing there (inner TTL decremented by the two tunnel ends only).
    fn walk(&mut self, origin: DeviceId, mut pkt: Packet, forward: bool) -> (End, Vec<Hop>) {
        let (net, st) = (self.net, self.st);
        let mut hops = Vec::new();
        let mut cur = origin;
        let mut ingress: Option<IfId> = None;
        // While encapsulated, `pkt` is the outer packet and this is the one inside it.
        let mut inner: Option<(Encap, Packet)> = None;
        for _ in 0..MAX_STEPS {
            let dev = net.device(cur);
            let mut hop = Hop {
                device: cur,
                ingress,
                egress: None,
                ttl_in: pkt.ttl,
                received: ingress.map(|_| headers(&pkt, inner.as_ref())),
                sent: None,
                at_us: self.delay_us,
                route: None,
            };
            if let Some(mut inif) = ingress {
                if !forward && inner.is_none() {
                    self.undo_nat(inif, &mut pkt);
                }
                if let Some((encap, carried)) = inner.filter(|_| local_iface(net, st, cur, pkt.dst).is_some()) {
                    let Some(tunl) = tunnel_device(net, st, cur, encap) else {
                        hops.push(hop);
                        let what = match encap {
                            Encap::Ipip => "no IPIP tunnel device up: the IP-in-IP packet".to_string(),
                            Encap::Vxlan { dst_port, vni, .. } => {
                                format!("no VXLAN device up for VNI {vni} on UDP port {dst_port}: the VXLAN packet")
                            }
                        };
                        let reason = format!("{} has {what} is dropped", dev.name);
                        return (End::Dropped { reason }, hops);
                    };
                    inner = None;
                    pkt = carried;
                    inif = tunl;
                }
                if !forward && inner.is_none() {
                    // An answer that came through a tunnel meets conntrack once decapsulated.
                    self.undo_nat(inif, &mut pkt);
                    self.undo_service_nat(cur, &mut pkt);
                }
                // PREROUTING: kube-proxy's DNAT comes before the routing decision.
                if forward && inner.is_none() {
                    if let ServiceVerdict::Reject = self.service_dnat(cur, &mut pkt) {
                        hops.push(hop);
                        return self.reject(cur, Some(inif), pkt, hops);
                    }
                }
                if local_iface(net, st, cur, pkt.dst).is_some() {
                    hops.push(hop);
                    return (End::Delivered { dev: cur, pkt }, hops);
                }
                if let Some(ext) = &dev.external {
                    if let Some(r) = ext.responders.iter().find(|r| r.address == pkt.dst) {
                        hops.push(hop);
                        if pkt.ttl <= 1 && pkt.may_trigger_error() {
                            let from = st.ifaces[inif.idx()].addr.map_or(pkt.dst, |a| a.addr());
                            return (
                                End::Error {
                                    dev: cur,
                                    from,
                                    error: IcmpError::TtlExceeded,
                                    quoted: pkt.quote(inner.as_ref(), pkt.ttl),
                                    pkt,
                                },
                                hops,
                            );
                        }
                        return (
                            End::Responded {
                                dev: cur,
                                responder: r.clone(),
                                pkt,
                            },
                            hops,
                        );
                    }
                }
                if dev.kind == DeviceKind::Linux && !dev.ip_forward {
                    hops.push(hop);
                    let reason = format!(
                        "{} is not a router (net.ipv4.ip_forward = 0) and {} is not its address",
                        dev.name, pkt.dst
                    );
                    return (End::Dropped { reason }, hops);
                }
                if pkt.ttl <= 1 {
                    hops.push(hop);
                    let quoted = pkt.quote(inner.as_ref(), pkt.ttl);
                    return self.icmp_error(cur, inif, IcmpError::TtlExceeded, pkt, quoted, hops);
                }
                pkt.ttl -= 1;
            } else if forward {
                // OUTPUT: a node's own connection to a Service is DNATed before it is routed.
                if let ServiceVerdict::Reject = self.service_dnat(cur, &mut pkt) {
                    hops.push(hop);
                    return self.reject(cur, None, pkt, hops);
                }
                // DNATed to one of its own addresses (the apiserver behind `default/kubernetes`
                // on its own node): delivered over loopback, never routed.
                if local_iface(net, st, cur, pkt.dst).is_some() {
                    hops.push(hop);
                    return (End::Delivered { dev: cur, pkt }, hops);
                }
            }
            let Some(route) = st.devices[cur.idx()].fib.lookup(pkt.dst) else {
                hops.push(hop);
                let Some(inif) = ingress else {
                    return (
                        End::Dropped {
                            reason: format!("{} has no route to {}", dev.name, pkt.dst),
                        },
                        hops,
                    );
                };
                if dev.external.is_some() {
                    let reason = format!("{} has no route back to {} (no NAT applied)", dev.name, pkt.dst);
                    return (End::Dropped { reason }, hops);
                }
                // Linux looks the route up on input, before `ip_forward` decrements the TTL.
                let quoted = pkt.quote(inner.as_ref(), pkt.ttl.saturating_add(1));
                return self.icmp_error(cur, inif, IcmpError::NetUnreachable, pkt, quoted, hops);
            };
            let mut lookup = Lookup {
                prefix: route.prefix,
                proto: route.proto,
                via: None,
                ecmp: route.nexthops.len(),
                blackhole: route.blackhole,
            };
            if route.unreachable {
                // RTN_UNREACHABLE: the kernel drops it with ICMP host unreachable (`ip_error`,
                // EHOSTUNREACH); a packet of our own fails at the source instead.
                hop.route = Some(lookup);
                hops.push(hop);
                let Some(inif) = ingress else {
                    let reason = format!("{} has an unreachable route {}", dev.name, route.prefix);
                    return (End::Dropped { reason }, hops);
                };
                let quoted = pkt.quote(inner.as_ref(), pkt.ttl.saturating_add(1));
                return self.icmp_error(cur, inif, IcmpError::HostUnreachable, pkt, quoted, hops);
            }
            if route.blackhole || route.nexthops.is_empty() {
                hop.route = Some(lookup);
                hops.push(hop);
                let reason = format!("{} drops it: blackhole route {}", dev.name, route.prefix);
                return (End::Dropped { reason }, hops);
            }
            let hash = match &inner {
                Some((encap, _)) => pkt.outer_flow_hash(cur, *encap),
                None => pkt.flow_hash(cur),
            };
            let mut nh = &route.nexthops[(hash % route.nexthops.len() as u64) as usize];
            lookup.via = nh.via;
            hop.route = Some(lookup);
            if forward && inner.is_none() {
                self.kube_proxy_masquerade(cur, nh.iface, &mut pkt);
            }
            if net.iface(nh.iface).tunnel.is_some() && inner.is_none() {
                match encapsulate(net, st, cur, nh.iface, pkt, nh.via) {
                    Ok((outer, encap, wire_nh)) => {
                        inner = Some((encap, pkt));
                        pkt = outer;
                        nh = wire_nh;
                    }
                    Err(reason) => {
                        hops.push(hop);
                        return (End::Dropped { reason }, hops);
                    }
                }
            }
            hop.egress = Some(nh.iface);
            if forward && inner.is_none() {
                self.apply_nat(cur, nh.iface, &mut pkt);
            }
            let gw = nh.via.unwrap_or(pkt.dst);
            let Some(next_if) = arp(net, st, nh.iface, gw) else {
                hops.push(hop);
                let quoted = pkt.quote(inner.as_ref(), pkt.ttl);
                return match ingress {
                    None => {
                        let from = st.ifaces[nh.iface.idx()].addr.map_or(pkt.src, |a| a.addr());
                        (
                            End::Error {
                                dev: cur,
                                from,
                                error: IcmpError::HostUnreachable,
                                pkt,
                                quoted,
                            },
                            hops,
                        )
                    }
                    Some(inif) => self.icmp_error(cur, inif, IcmpError::HostUnreachable, pkt, quoted, hops),
                };
            };
            hop.sent = Some(headers(&pkt, inner.as_ref()));
            self.note_loop(&hops, cur);
            hops.push(hop);
            self.delay_us += LINK_DELAY_US;
            cur = net.iface(next_if).device;
            ingress = Some(next_if);
        }
        (
            End::Dropped {
                reason: "forwarding loop: the walk exceeded its hop limit".into(),
            },
            hops,
        )
    }

    /// A transit device forwarding a packet it already forwarded on this walk closes a loop.
    fn note_loop(&mut self, hops: &[Hop], cur: DeviceId) {
        if self.forwarding_loop.is_some() {
            return;
        }
        if let Some(first) = hops.iter().position(|h| h.device == cur && h.egress.is_some()) {
            let mut cycle: Vec<DeviceId> = hops[first..].iter().map(|h| h.device).collect();
            cycle.push(cur);
            self.forwarding_loop = Some(cycle);
        }
    }

    /// `dev` answers `pkt` with an ICMP error, unless `pkt` is itself an answer.
    fn icmp_error(
        &self,
        dev: DeviceId,
        inif: IfId,
        error: IcmpError,
        pkt: Packet,
        quoted: Option<Quoted>,
        hops: Vec<Hop>,
    ) -> (End, Vec<Hop>) {
        let (net, st) = (self.net, self.st);
        let name = &net.device(dev).name;
        if !pkt.may_trigger_error() {
            let reason = format!("{} dropped it: {}", name, error_text(&error));
            return (End::Dropped { reason }, hops);
        }
        let profile = &net.device(dev).profile;
        let from = if profile.icmp_error_src_inbound {
            st.ifaces[inif.idx()].addr.map(|a| a.addr())
        } else {
            st.devices[dev.idx()].fib.lookup(pkt.src).and_then(|r| {
                r.src.or_else(|| {
                    r.nexthops
                        .first()
                        .and_then(|nh| st.ifaces[nh.iface.idx()].addr.map(|a| a.addr()))
                })
            })
        };
        match from {
            Some(from) => (
                End::Error {
                    dev,
                    from,
                    error,
                    pkt,
                    quoted,
                },
                hops,
            ),
            None => (
                End::Dropped {
                    reason: format!("{} dropped it: {}", name, error_text(&error)),
                },
                hops,
            ),
        }
    }

    /// kube-proxy's nat-table rules on `dev` for a TCP/UDP request to a ClusterIP:port: DNAT
    /// to one ready endpoint, chosen by the flow hash (iptables picks with `-m statistic --mode
    /// random`; fabsim's choice is deterministic, one endpoint per flow), or REJECT without
    /// endpoints. ICMP matches no rule (a ClusterIP does not answer ping in iptables mode).
    fn service_dnat(&mut self, dev: DeviceId, pkt: &mut Packet) -> ServiceVerdict {
        let (protocol, port) = match pkt.kind {
            Payload::Request(ProbeKind::Tcp { dst_port }) => (L4::Tcp, dst_port),
            Payload::Request(ProbeKind::Udp { dst_port }) => (L4::Udp, dst_port),
            _ => return ServiceVerdict::Untouched,
        };
        let Some(proxy) = self.net.device(dev).kube_proxy.as_ref() else {
            return ServiceVerdict::Untouched;
        };
        // A node port answers on every address of the node (`--dst-type LOCAL`); with
        // `externalTrafficPolicy: Cluster` (the default, fabsim's only one) its `KUBE-EXT` chain
        // marks every such request for masquerade, so the backend sees the node.
        let (rule, node_port) = match proxy.rule(pkt.dst, port, protocol) {
            Some(r) => (r, false),
            None => match proxy
                .node_port_rule(port, protocol)
                .filter(|_| local_iface(self.net, self.st, dev, pkt.dst).is_some())
            {
                Some(r) => (r, true),
                None => return ServiceVerdict::Untouched,
            },
        };
        if rule.endpoints.is_empty() {
            return ServiceVerdict::Reject;
        }
        let pick = (pkt.flow_hash(dev) % rule.endpoints.len() as u64) as usize;
        let (endpoint, target_port) = rule.endpoints[pick];
        self.service_nat = Some(ServiceNat {
            device: dev,
            service: rule.name.clone(),
            cluster_ip: pkt.dst,
            port,
            endpoint,
            target_port,
            masquerade: node_port || proxy.masquerades(pkt.src, endpoint),
        });
        pkt.dst = endpoint;
        pkt.kind = Payload::Request(ProbeKind::to_port(protocol, target_port));
        ServiceVerdict::Dnat
    }

    /// conntrack's reverse translation of kube-proxy's DNAT: the answer leaves the node that
    /// DNATed the request with the ClusterIP as its source.
    fn undo_service_nat(&self, dev: DeviceId, pkt: &mut Packet) {
        if let Some(n) = self
            .service_nat
            .as_ref()
            .filter(|n| n.device == dev && pkt.src == n.endpoint)
        {
            pkt.src = n.cluster_ip;
        }
    }

    /// kube-proxy's REJECT (`--reject-with icmp-port-unreachable`) of a request to a Service
    /// without endpoints, sent by `dev` to the request's source from the address it would use
    /// towards it (for the node's own connection, the error is local).
    fn reject(&self, dev: DeviceId, inif: Option<IfId>, pkt: Packet, hops: Vec<Hop>) -> (End, Vec<Hop>) {
        let (net, st) = (self.net, self.st);
        let towards = st.devices[dev.idx()].fib.lookup(pkt.src).and_then(|r| {
            r.src
                .or_else(|| r.nexthops.first().and_then(|nh| source_for(net, st, dev, nh.iface)))
        });
        let from = match inif {
            None => pkt.dst,
            Some(i) => towards
                .or_else(|| st.ifaces[i.idx()].addr.map(|a| a.addr()))
                .unwrap_or(pkt.dst),
        };
        let quoted = pkt.quote(None, pkt.ttl);
        (
            End::Error {
                dev,
                from,
                error: IcmpError::PortUnreachable,
                pkt,
                quoted,
            },
            hops,
        )
    }

    /// Source NAT on the way out of `egress`, by either mechanism a device has: EOS `ip nat
    /// source dynamic access-list ACL overload` on the interface (the ACL permits the packet),
    /// or a Linux MASQUERADE rule (felix's natOutgoing). Both rewrite the source to the egress
    /// interface's address and keep the translation for the answer (`undo_nat`).
    fn apply_nat(&mut self, dev: DeviceId, egress: IfId, pkt: &mut Packet) {
        let net = self.net;
        let by_acl = net.iface(egress).nat_overload_acl.as_ref().is_some_and(|acl_name| {
            net.device(dev).acls.get(acl_name).is_some_and(|acl| {
                acl.entries
                    .iter()
                    .find(|e| e.src.contains(&pkt.src) && e.dst.contains(&pkt.dst))
                    .is_some_and(|e| e.action == AclAction::Permit)
            })
        });
        let by_masquerade = || {
            net.device(dev)
                .masquerade
                .as_ref()
                .is_some_and(|m| m.matches(pkt.src, pkt.dst))
        };
        if !(by_acl || by_masquerade()) {
            return;
        }
        self.masquerade(dev, egress, pkt);
    }

    /// kube-proxy's KUBE-POSTROUTING: what KUBE-MARK-MASQ marked on this node leaves with the
    /// address of the interface it leaves by — for a route into `tunl0`, the tunnel address,
    /// as POSTROUTING sees the packet before the tunnel encapsulates it.
    fn kube_proxy_masquerade(&mut self, dev: DeviceId, egress: IfId, pkt: &mut Packet) {
        let marked = self
            .service_nat
            .as_ref()
            .is_some_and(|n| n.device == dev && n.masquerade && pkt.dst == n.endpoint);
        if marked {
            self.masquerade(dev, egress, pkt);
        }
    }

    fn masquerade(&mut self, dev: DeviceId, egress: IfId, pkt: &mut Packet) {
        let (net, st) = (self.net, self.st);
        // MASQUERADE takes the address Linux would source from on that interface
        // (`inet_select_addr`); an EOS NAT interface always has its own.
        let Some(outside) = source_for(net, st, dev, egress) else {
            return;
        };
        if pkt.src != outside {
            self.nat = Some(NatEntry {
                iface: egress,
                inside: pkt.src,
                outside,
            });
            pkt.src = outside;
        }
    }

    fn undo_nat(&self, inif: IfId, pkt: &mut Packet) {
        if let Some(n) = self.nat {
            if n.iface == inif && pkt.dst == n.outside {
                pkt.dst = n.inside;
            }
        }
    }
}
