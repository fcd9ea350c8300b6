//! Linux host views: iproute2 `ip route|addr|link` (Ubuntu 22.04, iproute2 5.15), iputils
//! `ping` and `tracepath`, and Debian `traceroute` 2.1. Formats follow the tools' source
//! (eos-linux-formats.md §4 cites the files); the ping/tracepath/traceroute text is produced by
//! pure functions of the probe results so it can be tested without a data plane.

use std::cmp::Reverse;
use std::net::{Ipv4Addr, Ipv6Addr};

use ipnet::Ipv4Net;

use super::pipe::shell_words;
use super::{ms3, CommandError};
use crate::dataplane::{self, IcmpError, Probe, ProbeKind, ProbeOutcome};
use crate::engine::state::{Fib, IfState, NextHop, Route};
use crate::engine::State;
use crate::model::{DeviceId, IfId, Network, VendorProfile};

/// The uid `ip route get` reports: fabsim's shell has no users, so it answers as root.
/// (The lab ran most host commands as `user`, uid 1000: seed-lab.md C24 shows `uid 1000`.)
const CALLER_UID: u32 = 0;

/// Hops tracepath and traceroute try before giving up (both tools' default).
const MAX_HOPS: u8 = 30;

/// Run one shell command (no pipes) on a Linux host.
pub(crate) fn run(net: &Network, st: &State, dev: DeviceId, line: &str) -> Result<String, CommandError> {
    let words = shell_words(line)?;
    let Some((cmd, args)) = words.split_first() else {
        return Ok(String::new());
    };
    match cmd.as_str() {
        "ip" => ip_cmd(net, st, dev, args),
        "ping" => ping(net, st, dev, args),
        "tracepath" => tracepath(net, st, dev, args),
        "traceroute" => traceroute(net, st, dev, args),
        _ => Err(CommandError::new(format!(
            "{cmd}: command not found (fabsim's Linux shell runs: ip route|addr|link, \
             ping, tracepath, traceroute)"
        ))),
    }
}

fn if_state(st: &State, id: IfId) -> IfState {
    st.ifaces.get(id.idx()).cloned().unwrap_or_default()
}

fn if_name(net: &Network, id: IfId) -> &str {
    net.interfaces.get(id.idx()).map_or("?", |i| i.name.as_str())
}

pub(crate) fn fib(st: &State, dev: DeviceId) -> Option<&Fib> {
    st.devices.get(dev.idx()).map(|d| &d.fib)
}

/// iproute2's `matches()`: a word selects the first keyword of the tool's own table that it is
/// a prefix of (so `ip a` is `address`, `ip r` is `route`, `ip l` is `link`).
fn iproute_match(word: &str, table: &[&'static str]) -> Option<&'static str> {
    table.iter().find(|k| !word.is_empty() && k.starts_with(word)).copied()
}

/// `ip`'s object table, in iproute2's `ip.c` order.
const IP_OBJECTS: &[&str] = &[
    "address",
    "addrlabel",
    "maddress",
    "route",
    "rule",
    "neighbor",
    "neighbour",
    "ntable",
    "ntbl",
    "link",
    "l2tp",
    "fou",
    "ila",
    "macsec",
    "tunnel",
    "tuntap",
    "tap",
    "token",
    "tcpmetrics",
    "tcp_metrics",
    "monitor",
    "xfrm",
    "mroute",
    "mrule",
    "netns",
    "netconf",
    "vrf",
    "sr",
    "nexthop",
    "mptcp",
    "ioam",
    "stats",
    "help",
];
const ROUTE_CMDS: &[&str] = &[
    "add", "change", "replace", "prepend", "append", "test", "delete", "list", "show", "lst", "get", "flush", "save",
    "restore", "showdump",
];
const ADDR_CMDS: &[&str] = &[
    "add", "change", "chg", "replace", "delete", "list", "show", "lst", "flush", "save", "showdump", "restore",
];
const LINK_CMDS: &[&str] = &[
    "add", "set", "change", "replace", "delete", "show", "lst", "list", "xstats", "afstats", "property", "help",
];

fn not_modelled(what: &str) -> CommandError {
    CommandError::new(format!("fabsim: `{what}` is not modelled"))
}

fn ip_cmd(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let mut brief = false;
    let mut rest = args;
    while let Some((opt, tail)) = rest.split_first().filter(|(a, _)| a.starts_with('-')) {
        match opt.as_str() {
            "-br" | "-brief" => brief = true,
            "-4" => {}
            _ => {
                return Err(CommandError::new(format!(
                    "Option \"{opt}\" is unknown, try \"ip -help\"."
                )))
            }
        }
        rest = tail;
    }
    let Some((obj, rest)) = rest.split_first() else {
        return Err(CommandError::new("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }"));
    };
    match iproute_match(obj, IP_OBJECTS) {
        Some("route") => ip_route(net, st, dev, rest),
        Some("address") => ip_links(net, st, dev, rest, brief, LinkView::Addr),
        Some("link") => ip_links(net, st, dev, rest, brief, LinkView::Link),
        Some(other) => Err(not_modelled(&format!("ip {other}"))),
        None => Err(CommandError::new(format!(
            "Object \"{obj}\" is unknown, try \"ip help\"."
        ))),
    }
}

fn ip_route(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let Some((cmd, rest)) = args.split_first() else {
        return Ok(route_table(net, st, dev));
    };
    match iproute_match(cmd, ROUTE_CMDS) {
        Some("list" | "show" | "lst") if rest.is_empty() => Ok(route_table(net, st, dev)),
        Some("get") => match rest {
            [addr] => {
                let a = addr.parse().map_err(|_| {
                    CommandError::new(format!("Error: any valid prefix is expected rather than \"{addr}\"."))
                })?;
                route_get(net, st, dev, a)
            }
            _ => Err(not_modelled(&format!("ip route {}", args.join(" ")))),
        },
        Some(_) => Err(not_modelled(&format!("ip route {}", args.join(" ")))),
        None => Err(CommandError::new(format!(
            "Command \"{cmd}\" is unknown, try \"ip route help\"."
        ))),
    }
}

/// `ip route`: the main table in the kernel's dump order (fib trie: by address, the longer
/// prefix first among equal addresses, then by metric).
fn route_table(net: &Network, st: &State, dev: DeviceId) -> String {
    let Some(fib) = fib(st, dev) else {
        return String::new();
    };
    let mut routes: Vec<&Route> = fib.iter().collect();
    routes.sort_by_key(|r| (r.prefix.network(), Reverse(r.prefix.prefix_len()), r.metric));
    routes.iter().map(|r| route_line(net, st, r)).collect()
}

/// iproute2 prints a host route's destination bare and the default route as `default`.
fn route_dst(p: Ipv4Net) -> String {
    match p.prefix_len() {
        0 => "default".into(),
        32 => p.addr().to_string(),
        _ => p.to_string(),
    }
}

/// A gateway outside every subnet of the egress interface can only have been installed with
/// `onlink` (the kernel refuses it otherwise), as Calico's IPIP routes are. The State carries
/// no flag for it, so it is inferred.
fn onlink(st: &State, nh: &NextHop) -> bool {
    nh.via
        .is_some_and(|gw| !if_state(st, nh.iface).addr.is_some_and(|a| a.contains(&gw)))
}

fn nexthop_fields(net: &Network, nh: &NextHop) -> String {
    let via = nh.via.map(|v| format!("via {v} ")).unwrap_or_default();
    format!("{via}dev {} ", if_name(net, nh.iface))
}

/// One route as iproute2's `print_route` prints it: every field followed by a space, so the
/// line ends in one (eos-linux-formats.md §4.5). Several next hops print iproute2's multipath
/// form, one `\tnexthop … weight 1 ` line each.
fn route_line(net: &Network, st: &State, r: &Route) -> String {
    let mut s = String::new();
    if r.blackhole {
        s.push_str("blackhole ");
    }
    s.push_str(&route_dst(r.prefix));
    s.push(' ');
    let single = match r.nexthops.as_slice() {
        [nh] if !r.blackhole => Some(nh),
        _ => None,
    };
    if let Some(nh) = single {
        s.push_str(&nexthop_fields(net, nh));
    }
    if let Some(p) = r.linux_proto {
        s.push_str(&format!("proto {p} "));
    }
    if r.scope_link {
        s.push_str("scope link ");
    }
    if let Some(src) = r.src {
        s.push_str(&format!("src {src} "));
    }
    if r.metric != 0 {
        s.push_str(&format!("metric {} ", r.metric));
    }
    let flag = |nh: &NextHop| if onlink(st, nh) { "onlink " } else { "" };
    match single {
        Some(nh) => s.push_str(flag(nh)),
        None if !r.blackhole => {
            for nh in &r.nexthops {
                s.push_str(&format!("\n\tnexthop {}weight 1 {}", nexthop_fields(net, nh), flag(nh)));
            }
        }
        None => {}
    }
    s.push('\n');
    s
}

/// `ip route get A`: the cloned route the kernel would use (§4.5): no proto or scope, then the
/// caller's uid and a `    cache ` line. The source is the route's `src`, else the primary
/// address of the egress interface. With ECMP the first next hop is shown.
fn route_get(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr) -> Result<String, CommandError> {
    let local = dst.is_loopback()
        || links(net, st, dev)
            .iter()
            .any(|l| l.addr.is_some_and(|a| a.addr() == dst));
    if local {
        return Ok(format!(
            "local {dst} dev lo table local src {dst} uid {CALLER_UID} \n    cache <local> \n"
        ));
    }
    let unreachable = || CommandError::new("RTNETLINK answers: Network is unreachable");
    let route = fib(st, dev).and_then(|f| f.lookup(dst)).ok_or_else(unreachable)?;
    if route.blackhole {
        return Err(CommandError::new("RTNETLINK answers: Invalid argument"));
    }
    let nh = route.nexthops.first().ok_or_else(unreachable)?;
    let src = route
        .src
        .or_else(|| if_state(st, nh.iface).addr.map(|a| a.addr()))
        .map(|s| format!("src {s} "))
        .unwrap_or_default();
    Ok(format!(
        "{dst} {}{src}uid {CALLER_UID} \n    cache \n",
        nexthop_fields(net, nh)
    ))
}

/// What `ip addr` / `ip link` knows of one interface.
struct Link {
    index: u32,
    name: String,
    mtu: u32,
    loopback: bool,
    mac: [u8; 6],
    /// Administratively up (IFF_UP).
    up: bool,
    /// Carrier (IFF_LOWER_UP).
    carrier: bool,
    addr: Option<Ipv4Net>,
    dhcp: bool,
}

/// A fake but stable MAC in the lab's PNETLAB style (`50:52:0b:00:6d:00`, k-w3 ens3 in
/// seed-lab.md s1): two bytes of device index, then the NIC's position (ens3 = 0).
fn mac(dev: DeviceId, ifindex: u32) -> [u8; 6] {
    let d = dev.0.to_be_bytes();
    [0x50, 0x52, 0x0b, d[2], d[3], ifindex.saturating_sub(2) as u8]
}

/// `lo` (ifindex 1, always present on Linux) followed by the model's interfaces by ifindex.
fn links(net: &Network, st: &State, dev: DeviceId) -> Vec<Link> {
    let ifaces: Vec<IfId> = net.devices.get(dev.idx()).map(|d| d.ifaces.clone()).unwrap_or_default();
    let mut out: Vec<Link> = ifaces
        .iter()
        .filter_map(|id| net.interfaces.get(id.idx()).map(|i| (id, i)))
        .map(|(id, i)| {
            let s = if_state(st, *id);
            Link {
                index: i.ifindex,
                name: i.name.clone(),
                mtu: i.mtu,
                loopback: i.name == "lo",
                mac: mac(dev, i.ifindex),
                up: s.up,
                carrier: s.line_up,
                addr: s.addr,
                dhcp: s.dhcp,
            }
        })
        .collect();
    if !out.iter().any(|l| l.loopback) {
        out.push(Link {
            index: 1,
            name: "lo".into(),
            mtu: 65536,
            loopback: true,
            mac: [0; 6],
            up: true,
            carrier: true,
            addr: "127.0.0.1/8".parse().ok(),
            dhcp: false,
        });
    }
    out.sort_by_key(|l| (l.index, l.name.clone()));
    out
}

fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

impl Link {
    fn flags(&self) -> &'static str {
        match (self.loopback, self.up, self.carrier) {
            (true, _, _) => "LOOPBACK,UP,LOWER_UP",
            (false, false, _) => "BROADCAST,MULTICAST",
            (false, true, false) => "NO-CARRIER,BROADCAST,MULTICAST,UP",
            (false, true, true) => "BROADCAST,MULTICAST,UP,LOWER_UP",
        }
    }
    fn operstate(&self) -> &'static str {
        match (self.loopback, self.up && self.carrier) {
            (true, _) => "UNKNOWN",
            (false, true) => "UP",
            (false, false) => "DOWN",
        }
    }
    /// A NIC that was never brought up still has the `noop` qdisc.
    fn qdisc(&self) -> &'static str {
        match (self.loopback, self.up) {
            (true, _) => "noqueue",
            (false, true) => "fq_codel",
            (false, false) => "noop",
        }
    }
    /// systemd's predictable alternative name of a QEMU NIC in PCI slot N (`ens3` → `enp0s3`).
    fn altname(&self) -> Option<String> {
        let slot = self.name.strip_prefix("ens")?;
        (!slot.is_empty() && slot.bytes().all(|b| b.is_ascii_digit())).then(|| format!("enp0s{slot}"))
    }
    /// The kernel's EUI-64 link-local address, assigned once the interface is up.
    fn inet6(&self) -> Option<(String, &'static str)> {
        if self.loopback {
            return Some(("::1/128".into(), "host"));
        }
        let m = self.mac;
        let g = |a: u8, b: u8| u16::from_be_bytes([a, b]);
        self.up.then(|| {
            let ll = Ipv6Addr::new(
                0xfe80,
                0,
                0,
                0,
                g(m[0] ^ 2, m[1]),
                g(m[2], 0xff),
                g(0xfe, m[3]),
                g(m[4], m[5]),
            );
            (format!("{ll}/64"), "link")
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LinkView {
    Addr,
    Link,
}

fn ip_links(
    net: &Network,
    st: &State,
    dev: DeviceId,
    args: &[String],
    brief: bool,
    view: LinkView,
) -> Result<String, CommandError> {
    let (table, object) = match view {
        LinkView::Addr => (ADDR_CMDS, "address"),
        LinkView::Link => (LINK_CMDS, "link"),
    };
    let unsupported = || not_modelled(&format!("ip {object} {}", args.join(" ")));
    let selector = match args {
        [] => None,
        [cmd, rest @ ..] => match iproute_match(cmd, table) {
            Some("show" | "list" | "lst") => match rest {
                [] => None,
                [name] => Some(name.as_str()),
                [dev, name] if dev == "dev" => Some(name.as_str()),
                _ => return Err(unsupported()),
            },
            Some(_) => return Err(unsupported()),
            None => {
                return Err(CommandError::new(format!(
                    "Command \"{cmd}\" is unknown, try \"ip {object} help\"."
                )))
            }
        },
    };
    let all = links(net, st, dev);
    let shown: Vec<&Link> = all.iter().filter(|l| selector.is_none_or(|n| l.name == n)).collect();
    if let (Some(name), true) = (selector, shown.is_empty()) {
        return Err(CommandError::new(format!("Device \"{name}\" does not exist.")));
    }
    Ok(shown
        .iter()
        .map(|l| match (brief, view) {
            (true, LinkView::Addr) => brief_addr(l),
            (true, LinkView::Link) => format!(
                "{:<16} {:<14} {} <{}> \n",
                l.name,
                l.operstate(),
                mac_text(&l.mac),
                l.flags()
            ),
            (false, _) => link_block(l, view),
        })
        .collect())
}

/// `ip -br addr`: name `%-16s `, operstate `%-14s `, then `ADDR/LEN ` per address (§4.6).
fn brief_addr(l: &Link) -> String {
    let mut s = format!("{:<16} {:<14} ", l.name, l.operstate());
    for a in l.addr.iter().map(|a| a.to_string()).chain(l.inet6().map(|x| x.0)) {
        s.push_str(&a);
        s.push(' ');
    }
    s.push('\n');
    s
}

/// One interface as `ip addr` / `ip link` prints it (iproute2 `print_linkinfo` and
/// `print_addrinfo`, eos-linux-formats.md §4.6).
fn link_block(l: &Link, view: LinkView) -> String {
    let mode = if view == LinkView::Link { "mode DEFAULT " } else { "" };
    let mut s = format!(
        "{}: {}: <{}> mtu {} qdisc {} state {} {mode}group default qlen 1000\n",
        l.index,
        l.name,
        l.flags(),
        l.mtu,
        l.qdisc(),
        l.operstate()
    );
    s.push_str(&match l.loopback {
        true => "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n".to_string(),
        false => format!("    link/ether {} brd ff:ff:ff:ff:ff:ff\n", mac_text(&l.mac)),
    });
    if let Some(alt) = l.altname() {
        s.push_str(&format!("    altname {alt}\n"));
    }
    if view == LinkView::Link {
        return s;
    }
    if let Some(a) = l.addr {
        s.push_str(&inet_line(l, a));
    }
    if let Some((a6, scope)) = l.inet6() {
        s.push_str(&format!(
            "    inet6 {a6} scope {scope} \n       valid_lft forever preferred_lft forever\n"
        ));
    }
    s
}

/// The `inet` line and its lifetimes. /31, /32 and `lo` have no broadcast. A DHCP lease shows
/// networkd's route metric 100 and `dynamic` with a lifetime; the lease countdown is not
/// modelled, so the lifetime is always the full 86400 s.
fn inet_line(l: &Link, a: Ipv4Net) -> String {
    let metric = if l.dhcp { "metric 100 " } else { "" };
    let brd = if a.prefix_len() < 31 && !l.loopback {
        format!("brd {} ", a.broadcast())
    } else {
        String::new()
    };
    let scope = if l.loopback { "host" } else { "global" };
    let (dynamic, lft) = if l.dhcp {
        ("dynamic ", "86400sec")
    } else {
        ("", "forever")
    };
    format!(
        "    inet {a} {metric}{brd}scope {scope} {dynamic}{}\n       valid_lft {lft} preferred_lft {lft}\n",
        l.name
    )
}

// ---------------------------------------------------------------------------------------------
// ping (iputils)

/// How one build of iputils ping behaves: Linux hosts run it with defaults; EOS runs it with
/// 72 data bytes and a 10 ms adaptive interval (see `eos::ping`).
#[derive(Clone, Debug)]
pub(crate) struct PingStyle {
    pub data_bytes: u32,
    /// Interval between probes before any reply (iputils `-i`).
    pub interval_us: u64,
    /// iputils `-A`: the interval follows the smoothed RTT, and the summary adds `ipg/ewma`.
    pub adaptive: bool,
    /// What `connect()` failing with ENETUNREACH prints (the only output then).
    pub no_route: &'static str,
}

impl PingStyle {
    /// Ubuntu 22.04's iputils 20211215: `ping: ` prefixes its errors (§4.1).
    pub fn linux(data_bytes: u32) -> Self {
        PingStyle {
            data_bytes,
            interval_us: 1_000_000,
            adaptive: false,
            no_route: "ping: connect: Network is unreachable",
        }
    }
}

/// Send `count` echo requests (icmp_seq 1..=count). A source without a route fails at
/// `connect()`, before the first probe: then only that first result is returned.
pub(crate) fn run_pings(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr, count: u32, ttl: u8) -> Vec<Probe> {
    let mut probes = Vec::new();
    for seq in 1..=count {
        let p = dataplane::probe(net, st, dev, dst, ttl, ProbeKind::Echo, seq);
        let stop = p.outcome == ProbeOutcome::LocalNoRoute;
        probes.push(p);
        if stop {
            break;
        }
    }
    probes
}

/// iputils' reply time: 3, 2, 1 or 0 decimals by magnitude, rounded (ping_common.c).
fn reply_time(us: u64) -> String {
    if us >= 100_000 - 50 {
        format!("{}", (us + 500) / 1000)
    } else if us >= 10_000 - 5 {
        format!("{}.{:01}", (us + 50) / 1000, ((us + 50) % 1000) / 100)
    } else if us >= 1000 {
        format!("{}.{:02}", (us + 5) / 1000, ((us + 5) % 1000) / 10)
    } else {
        ms3(us)
    }
}

fn icmp_text(e: &IcmpError) -> &'static str {
    match e {
        IcmpError::NetUnreachable => "Destination Net Unreachable",
        IcmpError::HostUnreachable => "Destination Host Unreachable",
        IcmpError::TtlExceeded => "Time to live exceeded",
    }
}

/// `%g` of the loss percentage as iputils prints it (`100`, `33.3333`).
fn percent_g(lost: u64, sent: u64) -> String {
    let v = (lost as f64 * 100.0 / sent as f64) as f32 as f64;
    if v == 0.0 {
        return "0".into();
    }
    let decimals = (5 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// When each request left (µs after the first) and the final smoothed RTT (iputils `rtt`, 8×µs;
/// 0 if nothing was received). Non-adaptive pings send every `interval_us`; adaptive ones
/// re-derive the interval from the smoothed RTT after each reply received in time
/// (ping_common.c `update_interval`, for root: no 200 ms floor).
fn timeline(style: &PingStyle, probes: &[Probe]) -> (Vec<u64>, i64) {
    let mut sends = Vec::with_capacity(probes.len());
    let mut ewma8: i64 = 0;
    let mut absorbed = vec![false; probes.len()];
    let mut interval = style.interval_us;
    let mut absorb = |upto: u64, sends: &[u64], ewma8: &mut i64, interval: &mut u64| {
        let mut due: Vec<(u64, usize)> = sends
            .iter()
            .enumerate()
            .filter(|(j, _)| !absorbed[*j] && matches!(probes[*j].outcome, ProbeOutcome::Reply { .. }))
            .map(|(j, s)| (s.saturating_add(probes[j].rtt_us), j))
            .filter(|(arrival, _)| *arrival <= upto)
            .collect();
        due.sort();
        for (_, j) in due {
            absorbed[j] = true;
            // Clamped so that a nonsensical RTT cannot overflow the arithmetic.
            let t = probes[j].rtt_us.min(1 << 40) as i64;
            *ewma8 = if *ewma8 == 0 { t * 8 } else { *ewma8 + t - *ewma8 / 8 };
            if style.adaptive {
                *interval = ((*ewma8 / 8 + 500) / 1000) as u64 * 1000;
            }
        }
    };
    for _ in probes {
        let s = sends.last().map_or(0, |prev| prev + interval);
        sends.push(s);
        absorb(s + interval, &sends, &mut ewma8, &mut interval);
    }
    absorb(u64::MAX, &sends, &mut ewma8, &mut interval);
    (sends, ewma8)
}

/// Most requests outstanding when an answer arrived (iputils `pipesize`, set in `acknowledge`).
fn pipe_size(sends: &[u64], probes: &[Probe]) -> usize {
    probes
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.outcome, ProbeOutcome::Reply { .. } | ProbeOutcome::Error { .. }))
        .map(|(j, p)| {
            let arrival = sends[j].saturating_add(p.rtt_us);
            sends.iter().filter(|s| **s <= arrival).count().saturating_sub(j)
        })
        .max()
        .unwrap_or(1)
        .max(1)
}

/// iputils' `rtt min/avg/max/mdev` in integer microseconds (ping_common.c `finish`).
fn rtt_summary(rtts: &[u64]) -> String {
    let n = rtts.len().max(1) as i128;
    let sum: i128 = rtts.iter().map(|t| i128::from(*t)).sum();
    let sum2: f64 = rtts.iter().map(|t| (*t as f64) * (*t as f64)).sum();
    let (min, max) = (rtts.iter().min(), rtts.iter().max());
    let avg = sum / n;
    let var = ((sum2 - ((sum * sum) / n) as f64) / n as f64) as i64;
    let mdev = (var.max(0) as f64).sqrt() as u64;
    format!(
        "rtt min/avg/max/mdev = {}/{}/{}/{} ms",
        ms3(min.copied().unwrap_or(0)),
        ms3(avg as u64),
        ms3(max.copied().unwrap_or(0)),
        ms3(mdev)
    )
}

/// The whole text of an iputils ping that got these results (icmp_seq = index + 1).
pub(crate) fn ping_text(dst: Ipv4Addr, style: &PingStyle, probes: &[Probe]) -> String {
    if probes.first().is_some_and(|p| p.outcome == ProbeOutcome::LocalNoRoute) {
        return format!("{}\n", style.no_route);
    }
    let size = style.data_bytes;
    let mut out = format!("PING {dst} ({dst}) {size}({}) bytes of data.\n", size + 28);
    let (sends, ewma8) = timeline(style, probes);
    // Lines appear as answers arrive; a slow answer (ARP timeout) can come after later ones.
    let mut events: Vec<(u64, usize)> = probes
        .iter()
        .enumerate()
        .map(|(i, p)| (sends[i].saturating_add(p.rtt_us), i))
        .collect();
    events.sort();
    for (_, i) in events {
        let seq = i + 1;
        match &probes[i].outcome {
            ProbeOutcome::Reply { from, ttl } => out.push_str(&format!(
                "{} bytes from {from}: icmp_seq={seq} ttl={ttl} time={} ms\n",
                size + 8,
                reply_time(probes[i].rtt_us)
            )),
            ProbeOutcome::Error { from, error, .. } => {
                out.push_str(&format!("From {from} icmp_seq={seq} {}\n", icmp_text(error)))
            }
            ProbeOutcome::Lost { .. } | ProbeOutcome::LocalNoRoute => {}
        }
    }
    let sent = probes.len() as u64;
    let rtts: Vec<u64> = probes
        .iter()
        .filter(|p| matches!(p.outcome, ProbeOutcome::Reply { .. }))
        .map(|p| p.rtt_us)
        .collect();
    let received = rtts.len() as u64;
    let errors = probes
        .iter()
        .filter(|p| matches!(p.outcome, ProbeOutcome::Error { .. }))
        .count();
    // `time` is the last transmission's offset from the first (ping_common.c `finish`).
    let last_send = sends.last().copied().unwrap_or(0);
    out.push_str(&format!("\n--- {dst} ping statistics ---\n"));
    out.push_str(&format!("{sent} packets transmitted, {received} received"));
    if errors > 0 {
        out.push_str(&format!(", +{errors} errors"));
    }
    out.push_str(&format!(
        ", {}% packet loss, time {}ms\n",
        percent_g(sent - received, sent.max(1)),
        (last_send + 500) / 1000
    ));
    // The last line is always printed, empty when nothing was received (iputils `finish`).
    let mut tail = Vec::new();
    if received > 0 {
        tail.push(rtt_summary(&rtts));
    }
    let pipe = pipe_size(&sends, probes);
    if pipe > 1 {
        tail.push(format!("pipe {pipe}"));
    }
    if received > 0 && style.adaptive && sent > 1 {
        let ipg = last_send / (sent - 1);
        tail.push(format!("ipg/ewma {}/{} ms", ms3(ipg), ms3((ewma8 / 8) as u64)));
    }
    out.push_str(&tail.join(", "));
    out.push('\n');
    out
}

/// A destination argument: fabsim has no resolver, so only dotted quads are hosts.
pub(crate) fn parse_host(tool: &str, arg: &str) -> Result<Ipv4Addr, CommandError> {
    arg.parse()
        .map_err(|_| CommandError::new(format!("{tool}: {arg}: Name or service not known")))
}

fn ping_usage() -> CommandError {
    CommandError::new(
        "ping: usage error: Destination address required\n\
         (fabsim's ping accepts: ping [-c COUNT] [-s SIZE] [-t TTL] [-n] ADDRESS)",
    )
}

/// Parse a numeric option value within `lo..=hi` the way iputils reports a bad one.
fn option_value(tool: &str, v: Option<&str>, lo: u64, hi: u64) -> Result<u64, CommandError> {
    let v = v.ok_or_else(|| CommandError::new(format!("{tool}: option requires an argument")))?;
    v.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n)).ok_or_else(|| {
        CommandError::new(format!(
            "{tool}: invalid argument: '{v}': out of range: {lo} <= value <= {hi}"
        ))
    })
}

/// Most probes fabsim sends for one ping (iputils has no limit; a run must end).
const MAX_PING_COUNT: u64 = 10_000;

/// `ping [-c N] [-s SIZE] [-t TTL] [-n] ADDR`, options before or after the address (getopt).
fn ping(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let profile = net
        .devices
        .get(dev.idx())
        .map_or_else(VendorProfile::linux, |d| d.profile.clone());
    let mut count = u64::from(profile.ping_count);
    let mut size = u64::from(profile.ping_size);
    let mut ttl = u64::from(profile.ttl);
    let mut dst = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(opt) = arg.strip_prefix('-').filter(|o| !o.is_empty()) else {
            dst = Some(parse_host("ping", arg)?);
            continue;
        };
        let mut chars = opt.chars();
        let flag = chars.next().unwrap_or('-');
        let attached = chars.as_str();
        let mut value = || {
            Some(attached)
                .filter(|a| !a.is_empty())
                .or_else(|| it.next().map(String::as_str))
        };
        match flag {
            'c' => count = option_value("ping", value(), 1, MAX_PING_COUNT)?,
            's' => size = option_value("ping", value(), 0, 65507)?,
            't' => ttl = option_value("ping", value(), 1, 255)?,
            'n' if attached.is_empty() => {}
            'I' => {
                return Err(CommandError::new(
                    "ping: -I is not modelled (the data plane picks the source address)",
                ))
            }
            _ => return Err(CommandError::new(format!("ping: invalid option -- '{flag}'"))),
        }
    }
    let dst = dst.ok_or_else(ping_usage)?;
    let probes = run_pings(net, st, dev, dst, count as u32, ttl as u8);
    Ok(ping_text(dst, &PingStyle::linux(size as u32), &probes))
}

// ---------------------------------------------------------------------------------------------
// tracepath (iputils) and traceroute (Debian traceroute 2.1)

/// Parse `[-n] ADDR` in any order; fabsim has no resolver, so `-n` changes nothing for
/// tracepath (without it, an unresolvable hop prints as its address anyway).
fn trace_args(tool: &str, args: &[String]) -> Result<(Ipv4Addr, bool), CommandError> {
    let mut numeric = false;
    let mut dst = None;
    for arg in args {
        match arg.as_str() {
            "-n" => numeric = true,
            a if a.starts_with('-') && a.len() > 1 => {
                return Err(CommandError::new(format!(
                    "{tool}: option {a} is not modelled (fabsim accepts: {tool} [-n] ADDRESS)"
                )))
            }
            a if dst.is_none() => dst = Some(parse_host(tool, a)?),
            a => {
                return Err(CommandError::new(format!(
                    "{tool}: extra argument '{a}' (fabsim accepts: {tool} [-n] ADDRESS)"
                )))
            }
        }
    }
    let dst = dst.ok_or_else(|| CommandError::new(format!("Usage: {tool} [-n] <destination>")))?;
    Ok((dst, numeric))
}

/// The MTU of the interface the route to `dst` leaves by (what tracepath's first, oversized
/// probe discovers locally); 1500 without a route.
fn path_mtu(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr) -> u32 {
    fib(st, dev)
        .and_then(|f| f.lookup(dst))
        .and_then(|r| r.nexthops.first())
        .and_then(|nh| net.interfaces.get(nh.iface.idx()))
        .map_or(1500, |i| i.mtu)
}

fn tracepath(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let (dst, _numeric) = trace_args("tracepath", args)?;
    let mut sent = 0;
    let send = |ttl: u8| {
        sent += 1;
        let kind = ProbeKind::Udp {
            dst_port: 44444 + u16::from(ttl),
        };
        dataplane::probe(net, st, dev, dst, ttl, kind, sent)
    };
    Ok(tracepath_text(path_mtu(net, st, dev, dst), send))
}

/// Hops back from a reply's TTL, assuming the sender started at 64, 128 or 255 (tracepath.c).
fn hops_back(ttl: u8) -> u8 {
    match ttl {
        0..=64 => 65 - ttl,
        65..=128 => 129 - ttl,
        _ => (256 - u16::from(ttl)) as u8,
    }
}

/// One tracepath hop line for an answered probe, and, if the answer ends the trace, what the
/// `Resume:` line adds (`hops H back B ` after `reached`; nothing after `!N`/`!H`).
fn tracepath_hop(ttl: u8, p: &Probe) -> Option<(String, Option<String>)> {
    let (from, suffix, end) = match &p.outcome {
        ProbeOutcome::Reply { from, ttl: back } => (
            from,
            "reached".to_string(),
            Some(format!("hops {ttl} back {} ", hops_back(*back))),
        ),
        ProbeOutcome::Error { from, error, ttl: back } => match error {
            IcmpError::TtlExceeded => {
                let b = hops_back(*back);
                let asym = if b != ttl {
                    format!("asymm {b:2} ")
                } else {
                    String::new()
                };
                (from, asym, None)
            }
            IcmpError::NetUnreachable => (from, "!N".into(), Some(String::new())),
            IcmpError::HostUnreachable => (from, "!H".into(), Some(String::new())),
        },
        ProbeOutcome::Lost { .. } | ProbeOutcome::LocalNoRoute => return None,
    };
    // Address padded to tracepath's 52-column host field (at least one space), then
    // `%3d.%03dms ` (§4.3).
    let addr = from.to_string();
    let pad = 52 - addr.len().min(51);
    let line = format!(
        "{ttl:2}:  {addr}{:pad$}{:3}.{:03}ms {suffix}\n",
        "",
        p.rtt_us / 1000,
        p.rtt_us % 1000
    );
    Some((line, end))
}

/// The whole text of `tracepath -n`, given a way to send one probe with a TTL (§4.3, iputils
/// tracepath.c). Per hop up to 3 probes until one is answered. Hop 1 is probed once more
/// first: that probe settles the PMTU and its answer is printed too, which is why the real tool
/// shows hop 1 twice. A source without a route cannot send at all.
pub(crate) fn tracepath_text(pmtu: u32, mut send: impl FnMut(u8) -> Probe) -> String {
    let settle = send(1);
    if settle.outcome == ProbeOutcome::LocalNoRoute {
        return " 1:  send failed\n     Resume: pmtu 65535 \n".into();
    }
    let mut out = format!("{:2}?: {:<32} pmtu {pmtu}\n", 1, "[LOCALHOST]");
    if let Some((line, _)) = tracepath_hop(1, &settle) {
        out.push_str(&line);
    }
    for ttl in 1..=MAX_HOPS {
        let answer = (0..3).find_map(|_| tracepath_hop(ttl, &send(ttl)));
        match answer {
            Some((line, end)) => {
                out.push_str(&line);
                if let Some(end) = end {
                    out.push_str(&format!("     Resume: pmtu {pmtu} {end}\n"));
                    return out;
                }
            }
            None => out.push_str(&format!("{ttl:2}:  no reply\n")),
        }
    }
    out.push_str(&format!("     Too many hops: pmtu {pmtu}\n     Resume: pmtu {pmtu} \n"));
    out
}

fn traceroute(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let (dst, numeric) = trace_args("traceroute", args)?;
    Ok(run_traceroute(net, st, dev, dst, numeric))
}

/// Run traceroute's UDP probes (port 33434 + probe number) through the data plane.
pub(crate) fn run_traceroute(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr, numeric: bool) -> String {
    let send = |ttl: u8, n: u32| {
        let kind = ProbeKind::Udp {
            dst_port: 33434u16.wrapping_add(n as u16),
        };
        dataplane::probe(net, st, dev, dst, ttl, kind, n)
    };
    traceroute_text(dst, numeric, send)
}

/// The whole text of traceroute 2.1 (§4.4, traceroute.c `print_probe`, `do_it`): 3 probes per
/// hop; an address is printed when it differs from the previous answered probe of the hop
/// (`ADDR (ADDR)` without `-n`, as an address with no reverse name prints); `  %.3f ms`; `!N`/
/// `!H` after unreachables; ` *` when nothing came back. The run ends after the hop where a
/// probe reached the destination or got an unreachable (`final`), or after 30 hops.
pub(crate) fn traceroute_text(dst: Ipv4Addr, numeric: bool, mut send: impl FnMut(u8, u32) -> Probe) -> String {
    let mut out = format!("traceroute to {dst} ({dst}), {MAX_HOPS} hops max, 60 byte packets\n");
    let mut n = 0;
    for ttl in 1..=MAX_HOPS {
        let mut line = format!("{ttl:2} ");
        let mut last_addr: Option<Ipv4Addr> = None;
        let mut done = false;
        for _ in 0..3 {
            let p = send(ttl, n);
            n += 1;
            let (from, mark, is_final) = match &p.outcome {
                ProbeOutcome::LocalNoRoute if ttl == 1 && n == 1 => {
                    // sendto() fails: traceroute prints a newline and perror("send").
                    out.push_str("send: Network is unreachable\n");
                    return out;
                }
                ProbeOutcome::Lost { .. } | ProbeOutcome::LocalNoRoute => {
                    line.push_str(" *");
                    continue;
                }
                ProbeOutcome::Reply { from, .. } => (*from, "", true),
                ProbeOutcome::Error { from, error, .. } => match error {
                    IcmpError::TtlExceeded => (*from, "", false),
                    IcmpError::NetUnreachable => (*from, " !N", true),
                    IcmpError::HostUnreachable => (*from, " !H", true),
                },
            };
            if last_addr != Some(from) {
                line.push_str(&match numeric {
                    true => format!(" {from}"),
                    false => format!(" {from} ({from})"),
                });
            }
            last_addr = Some(from);
            line.push_str(&format!("  {} ms{mark}", ms3(p.rtt_us)));
            done |= is_final;
        }
        out.push_str(&line);
        out.push('\n');
        if done {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testnet::*;
    use super::*;
    use crate::views::run_command;

    fn probe(outcome: ProbeOutcome, rtt_us: u64) -> Probe {
        Probe {
            outcome,
            rtt_us,
            src: None,
            forward: Vec::new(),
            back: Vec::new(),
            forwarding_loop: None,
        }
    }
    fn reply(from: &str, ttl: u8, rtt_us: u64) -> Probe {
        probe(ProbeOutcome::Reply { from: ip(from), ttl }, rtt_us)
    }
    fn error(from: &str, error: IcmpError, rtt_us: u64) -> Probe {
        probe(
            ProbeOutcome::Error {
                from: ip(from),
                error,
                ttl: 64,
            },
            rtt_us,
        )
    }
    /// A router `hop` routed hops away answers with TTL exceeded; its reply starts at TTL 64.
    fn expired(from: &str, hop: u8, rtt_us: u64) -> Probe {
        probe(
            ProbeOutcome::Error {
                from: ip(from),
                error: IcmpError::TtlExceeded,
                ttl: 65 - hop,
            },
            rtt_us,
        )
    }
    fn lost() -> Probe {
        probe(ProbeOutcome::Lost { reason: "test".into() }, 0)
    }

    #[test]
    fn ip_route_k_w1_s0c_exact() {
        let (lab, d) = kw1_s0c();
        let out = run_command(&lab.net, &lab.st, d, "ip r").unwrap();
        assert_eq!(
            out,
            "default via 10.0.137.1 dev ens5 proto dhcp src 10.0.137.132 metric 100 \n\
             10.0.0.0/8 via 10.1.11.0 dev ens3 proto static \n\
             10.0.137.0/24 dev ens5 proto kernel scope link src 10.0.137.132 metric 100 \n\
             10.0.137.1 dev ens5 proto dhcp scope link src 10.0.137.132 metric 100 \n\
             10.1.11.0/31 dev ens3 proto kernel scope link src 10.1.11.1 \n"
        );
        for cmd in ["ip route", "ip route show", "ip ro list", "ip -4 r s"] {
            assert_eq!(run_command(&lab.net, &lab.st, d, cmd).unwrap(), out, "{cmd}");
        }
    }

    #[test]
    fn ip_route_special_forms() {
        let (mut lab, d) = kw1_s0c();
        let ens3 = lab.net.iface_by_name(d, "ens3").unwrap();
        let ens5 = lab.net.iface_by_name(d, "ens5").unwrap();
        let mk = |prefix: &str, nhs: Vec<NextHop>, bh: bool| Route {
            blackhole: bh,
            linux_proto: Some("bird"),
            ..eos_route(prefix, crate::engine::state::Proto::Static, (0, 0), nhs)
        };
        lab.route(d, mk("10.66.52.0/24", vec![], true));
        lab.route(d, mk("10.66.207.64/26", vec![hop(Some("10.0.137.15"), ens3)], false));
        lab.route(
            d,
            mk(
                "10.66.0.0/16",
                vec![hop(Some("10.1.11.0"), ens3), hop(Some("10.0.137.1"), ens5)],
                false,
            ),
        );
        let out = run_command(&lab.net, &lab.st, d, "ip r | grep bird").unwrap();
        assert_eq!(
            out,
            "10.66.0.0/16 proto bird \n\
             blackhole 10.66.52.0/24 proto bird \n\
             10.66.207.64/26 via 10.0.137.15 dev ens3 proto bird onlink \n"
        );
        let all = run_command(&lab.net, &lab.st, d, "ip r").unwrap();
        assert!(all.contains(
            "10.66.0.0/16 proto bird \n\tnexthop via 10.1.11.0 dev ens3 weight 1 \n\tnexthop via 10.0.137.1 dev ens5 weight 1 \n"
        ));
        let err = run_command(&lab.net, &lab.st, d, "ip r get 10.66.52.1").unwrap_err();
        assert_eq!(err.message, "RTNETLINK answers: Invalid argument");
    }

    #[test]
    fn ip_route_get() {
        let (lab, d) = kw1_s0c();
        let run = |c: &str| run_command(&lab.net, &lab.st, d, c);
        assert_eq!(
            run("ip route get 10.0.11.1").unwrap(),
            "10.0.11.1 via 10.1.11.0 dev ens3 src 10.1.11.1 uid 0 \n    cache \n"
        );
        assert_eq!(
            run("ip r g 8.8.8.8").unwrap(),
            "8.8.8.8 via 10.0.137.1 dev ens5 src 10.0.137.132 uid 0 \n    cache \n"
        );
        assert_eq!(
            run("ip r get 10.1.11.0").unwrap(),
            "10.1.11.0 dev ens3 src 10.1.11.1 uid 0 \n    cache \n"
        );
        assert_eq!(
            run("ip r get 10.1.11.1").unwrap(),
            "local 10.1.11.1 dev lo table local src 10.1.11.1 uid 0 \n    cache <local> \n"
        );
        let (empty, e) = {
            let mut lab = Lab::default();
            let e = lab.device("h", crate::model::DeviceKind::Linux);
            (lab, e)
        };
        let err = run_command(&empty.net, &empty.st, e, "ip r get 8.8.8.8").unwrap_err();
        assert_eq!(err.message, "RTNETLINK answers: Network is unreachable");
        assert!(run("ip r get foo").is_err());
    }

    #[test]
    fn ip_addr_and_link() {
        let (lab, d) = kw1_s0c();
        let out = run_command(&lab.net, &lab.st, d, "ip a").unwrap();
        let expected = "\
1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
    inet6 ::1/128 scope host \n       valid_lft forever preferred_lft forever
2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000
    link/ether 50:52:0b:00:00:00 brd ff:ff:ff:ff:ff:ff
    altname enp0s3
    inet 10.1.11.1/31 scope global ens3
       valid_lft forever preferred_lft forever
    inet6 fe80::5252:bff:fe00:0/64 scope link \n       valid_lft forever preferred_lft forever
3: ens4: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN group default qlen 1000
    link/ether 50:52:0b:00:00:01 brd ff:ff:ff:ff:ff:ff
    altname enp0s4
4: ens5: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000
    link/ether 50:52:0b:00:00:02 brd ff:ff:ff:ff:ff:ff
    altname enp0s5
    inet 10.0.137.132/24 metric 100 brd 10.0.137.255 scope global dynamic ens5
       valid_lft 86400sec preferred_lft 86400sec
    inet6 fe80::5252:bff:fe00:2/64 scope link \n       valid_lft forever preferred_lft forever
";
        assert_eq!(out, expected);
        assert_eq!(
            run_command(&lab.net, &lab.st, d, "ip -br addr").unwrap(),
            "lo               UNKNOWN        127.0.0.1/8 ::1/128 \n\
             ens3             UP             10.1.11.1/31 fe80::5252:bff:fe00:0/64 \n\
             ens4             DOWN           \n\
             ens5             UP             10.0.137.132/24 fe80::5252:bff:fe00:2/64 \n"
        );
        let link = run_command(&lab.net, &lab.st, d, "ip link show ens3").unwrap();
        assert_eq!(
            link,
            "2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP mode DEFAULT group default qlen 1000\n    link/ether 50:52:0b:00:00:00 brd ff:ff:ff:ff:ff:ff\n    altname enp0s3\n"
        );
        assert_eq!(
            run_command(&lab.net, &lab.st, d, "ip a show dev ens9")
                .unwrap_err()
                .message,
            "Device \"ens9\" does not exist."
        );
        assert!(run_command(&lab.net, &lab.st, d, "ip -br link")
            .unwrap()
            .starts_with("lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP> \n"));
    }

    #[test]
    fn unknown_commands_name_themselves() {
        let (lab, d) = kw1_s0c();
        let err = run_command(&lab.net, &lab.st, d, "ifconfig -a").unwrap_err();
        assert!(err.message.starts_with("ifconfig: command not found"));
        assert!(err.message.contains("tracepath"));
        let err = run_command(&lab.net, &lab.st, d, "ip neigh").unwrap_err();
        assert_eq!(err.message, "fabsim: `ip neighbor` is not modelled");
        let err = run_command(&lab.net, &lab.st, d, "ip foo").unwrap_err();
        assert_eq!(err.message, "Object \"foo\" is unknown, try \"ip help\".");
    }

    #[test]
    fn ping_replies_seed_s1b() {
        // seed-lab.md s1b: client → 10.1.11.1, two replies; the lab's ^C is `-c 2` here.
        let probes = [reply("10.1.11.1", 61, 22_880), reply("10.1.11.1", 61, 18_951)];
        let out = ping_text(ip("10.1.11.1"), &PingStyle::linux(56), &probes);
        assert_eq!(
            out,
            "PING 10.1.11.1 (10.1.11.1) 56(84) bytes of data.\n\
             64 bytes from 10.1.11.1: icmp_seq=1 ttl=61 time=22.9 ms\n\
             64 bytes from 10.1.11.1: icmp_seq=2 ttl=61 time=19.0 ms\n\
             \n\
             --- 10.1.11.1 ping statistics ---\n\
             2 packets transmitted, 2 received, 0% packet loss, time 1000ms\n\
             rtt min/avg/max/mdev = 18.951/20.915/22.880/1.964 ms\n"
        );
    }

    #[test]
    fn ping_errors_seed_s0b() {
        // seed-lab.md s0b(before) and s1b: net unreachable from the leaf, 100% loss.
        let probes: Vec<Probe> = (0..3)
            .map(|_| error("10.1.11.0", IcmpError::NetUnreachable, 1_200))
            .collect();
        let out = ping_text(ip("8.8.8.8"), &PingStyle::linux(56), &probes);
        assert_eq!(
            out,
            "PING 8.8.8.8 (8.8.8.8) 56(84) bytes of data.\n\
             From 10.1.11.0 icmp_seq=1 Destination Net Unreachable\n\
             From 10.1.11.0 icmp_seq=2 Destination Net Unreachable\n\
             From 10.1.11.0 icmp_seq=3 Destination Net Unreachable\n\
             \n\
             --- 8.8.8.8 ping statistics ---\n\
             3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 2000ms\n\
             \n"
        );
    }

    #[test]
    fn ping_time_formats_loss_and_no_route() {
        assert_eq!(reply_time(45), "0.045");
        assert_eq!(reply_time(3_050), "3.05");
        assert_eq!(reply_time(32_300), "32.3");
        assert_eq!(reply_time(9_996), "10.0");
        assert_eq!(reply_time(185_253), "185");
        assert_eq!(percent_g(1, 3), "33.3333");
        assert_eq!(percent_g(2, 3), "66.6667");
        assert_eq!(percent_g(5, 5), "100");
        assert_eq!(percent_g(1, 8), "12.5");
        let probes = [reply("10.0.11.1", 63, 5_990), lost(), reply("10.0.11.1", 63, 24_900)];
        let out = ping_text(ip("10.0.11.1"), &PingStyle::linux(56), &probes);
        assert_lines(
            &out,
            "64 bytes from 10.0.11.1: icmp_seq=1 ttl=63 time=5.99 ms\n\
             64 bytes from 10.0.11.1: icmp_seq=3 ttl=63 time=24.9 ms\n\
             3 packets transmitted, 2 received, 33.3333% packet loss, time 2000ms",
        );
        let none = [probe(ProbeOutcome::LocalNoRoute, 0)];
        assert_eq!(
            ping_text(ip("8.8.8.8"), &PingStyle::linux(56), &none),
            "ping: connect: Network is unreachable\n"
        );
    }

    #[test]
    fn ping_arguments() {
        let mut lab = Lab::default();
        let d = lab.device("lonely", crate::model::DeviceKind::Linux);
        let run = |c: &str| run_command(&lab.net, &lab.st, d, c);
        assert!(run("ping")
            .unwrap_err()
            .message
            .contains("Destination address required"));
        assert!(run("ping -c 0 1.1.1.1").unwrap_err().message.contains("out of range"));
        assert!(run("ping -x 1.1.1.1")
            .unwrap_err()
            .message
            .contains("invalid option -- 'x'"));
        assert!(run("ping -I ens3 1.1.1.1").is_err());
        assert!(run("ping foo")
            .unwrap_err()
            .message
            .contains("Name or service not known"));
        // No interface, no route: the connect error is the whole output.
        assert_eq!(
            run("ping 10.0.11.1 -c2 -s 100 -t 3").unwrap(),
            "ping: connect: Network is unreachable\n"
        );
    }

    #[test]
    fn tracepath_seed_s0_exact() {
        // seed-lab.md s0: k-w3 → k-master, C07.
        let hops = [
            expired("10.3.33.0", 1, 3_027),
            expired("10.3.33.0", 1, 2_535),
            expired("10.33.99.0", 2, 6_473),
            expired("10.11.99.1", 3, 10_034),
            reply("10.0.11.1", 61, 11_929),
        ];
        let mut it = hops.into_iter();
        let out = tracepath_text(1500, |_| it.next().unwrap());
        assert_eq!(
            out,
            " 1?: [LOCALHOST]                      pmtu 1500\n 1:  10.3.33.0                                             3.027ms \n 1:  10.3.33.0                                             2.535ms \n 2:  10.33.99.0                                            6.473ms \n 3:  10.11.99.1                                           10.034ms \n 4:  10.0.11.1                                            11.929ms reached\n     Resume: pmtu 1500 hops 4 back 4 \n"
        );
        assert_lines(
            &out,
            "1?: [LOCALHOST] pmtu 1500\n1: 10.3.33.0 3.027ms\n1: 10.3.33.0 2.535ms\n\
             2: 10.33.99.0 6.473ms\n3: 10.11.99.1 10.034ms\n4: 10.0.11.1 11.929ms reached\n\
             Resume: pmtu 1500 hops 4 back 4",
        );
    }

    #[test]
    fn tracepath_seed_s0b_no_reply_and_limits() {
        // seed-lab.md s0b, C13: the NAT cloud drops the un-NATed probes at hop 3 and beyond.
        let mut n = 0usize;
        let out = tracepath_text(1500, |ttl| {
            n += 1;
            match ttl {
                1 => expired("10.1.11.0", 1, [4_290, 2_697][(n - 1).min(1)]),
                2 => expired("10.11.99.0", 2, 8_022),
                _ => lost(),
            }
        });
        assert_lines(
            &out,
            "1: 10.1.11.0 4.290ms\n1: 10.1.11.0 2.697ms\n2: 10.11.99.0 8.022ms\n3: no reply",
        );
        assert!(out.ends_with("30:  no reply\n     Too many hops: pmtu 1500\n     Resume: pmtu 1500 \n"));
        let out = tracepath_text(1500, |_| error("10.1.11.0", IcmpError::NetUnreachable, 500));
        assert_eq!(out.lines().filter(|l| l.ends_with("!N")).count(), 2);
        assert!(out.ends_with("     Resume: pmtu 1500 \n"));
        let asym = tracepath_text(1500, |_| expired("10.1.11.0", 1, 500));
        assert!(asym.contains(" 2:  10.1.11.0"), "{asym}");
        assert!(asym.contains("0.500ms asymm  1 \n"), "{asym}");
        let none = tracepath_text(1500, |_| probe(ProbeOutcome::LocalNoRoute, 0));
        assert_eq!(none, " 1:  send failed\n     Resume: pmtu 65535 \n");
    }

    #[test]
    fn traceroute_formats() {
        // seed-lab.md C63 path, client → 10.66.111.1, one silent hop to show ` *`.
        let path = ["10.4.44.0", "10.33.99.0", "10.11.99.1", "10.0.11.1"];
        let send = |ttl: u8, n: u32| match (ttl, n) {
            (2, 4) => lost(),
            (1..=4, _) => expired(path[ttl as usize - 1], ttl, 1_000 * u64::from(ttl) + u64::from(n)),
            _ => reply("10.66.111.1", 60, 5_000 + u64::from(n)),
        };
        let out = traceroute_text(ip("10.66.111.1"), true, send);
        assert_eq!(
            out,
            "traceroute to 10.66.111.1 (10.66.111.1), 30 hops max, 60 byte packets\n\
             \x201  10.4.44.0  1.000 ms  1.001 ms  1.002 ms\n\
             \x202  10.33.99.0  2.003 ms *  2.005 ms\n\
             \x203  10.11.99.1  3.006 ms  3.007 ms  3.008 ms\n\
             \x204  10.0.11.1  4.009 ms  4.010 ms  4.011 ms\n\
             \x205  10.66.111.1  5.012 ms  5.013 ms  5.014 ms\n"
        );
        let named = traceroute_text(ip("8.8.8.8"), false, |_, _| {
            error("10.1.11.0", IcmpError::NetUnreachable, 1_234)
        });
        assert_eq!(
            named.lines().nth(1).unwrap(),
            " 1  10.1.11.0 (10.1.11.0)  1.234 ms !N  1.234 ms !N  1.234 ms !N"
        );
        assert_eq!(named.lines().count(), 2);
        let silent = traceroute_text(ip("8.8.8.8"), true, |_, _| lost());
        assert!(silent.ends_with("30  * * *\n"));
    }

    #[test]
    fn addresses_and_macs_are_stable() {
        let (lab, d) = kw1_s0c();
        let a = run_command(&lab.net, &lab.st, d, "ip a").unwrap();
        assert_eq!(a, run_command(&lab.net, &lab.st, d, "ip addr show").unwrap());
        assert_eq!(mac_text(&mac(DeviceId(0x6d), 4)), "50:52:0b:00:6d:02");
    }
}
