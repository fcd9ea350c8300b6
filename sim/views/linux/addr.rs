//! iproute2 `ip [-br] addr` and `ip [-br] link` (`print_linkinfo`, `print_addrinfo`;
//! eos-linux-formats.md §4.6), including the implicit `lo` and the kernel's IPv6 link-local.

use std::net::Ipv6Addr;

use ipnet::Ipv4Net;

use super::{if_state, iproute_match, not_modelled};
use crate::engine::State;
use crate::model::{DeviceId, IfId, Network, Tunnel, Vxlan};
use crate::views::CommandError;

const ADDR_CMDS: &[&str] = &[
    "add", "change", "chg", "replace", "delete", "list", "show", "lst", "flush", "save", "showdump", "restore",
];
const LINK_CMDS: &[&str] = &[
    "add", "set", "change", "replace", "delete", "show", "lst", "list", "xstats", "afstats", "property", "help",
];

/// The device type behind an interface (the kernel's `ARPHRD_*` and driver).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Loopback,
    Ether,
    /// One end of a veth pair (a pod's eth0 or its host-side `cali…`): no queue.
    Veth,
    /// `tunl0`: `link/ipip`, NOARP, always has carrier when up.
    Ipip,
    /// A `vxlan` device (`vxlan.calico`, `flannel.1`): Ethernet, no operstate reported
    /// (UNKNOWN).
    Vxlan,
    /// A bridge with veths enslaved (`cni0`): no queue of its own, txqueuelen 1000.
    Bridge,
}

/// `IFLA_LINK` of an interface: the device it is stacked on or paired with.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Parent {
    /// A tunnel bound to no device (`@NONE`).
    None,
    /// A veth's peer: its ifindex, in another namespace; `netns` is that namespace's name
    /// (`link-netns`) when it has one (the pod's `cni-…`), else it is unnamed (the host's).
    Peer { index: u32, netns: Option<String> },
}

/// What `ip addr` / `ip link` knows of one interface.
pub(super) struct Link {
    index: u32,
    name: String,
    mtu: u32,
    kind: Kind,
    parent: Option<Parent>,
    mac: [u8; 6],
    /// Administratively up (IFF_UP).
    up: bool,
    /// Carrier (IFF_LOWER_UP).
    carrier: bool,
    pub(super) addr: Option<Ipv4Net>,
    dhcp: bool,
    /// A VXLAN device's configuration (for `ip -d`).
    vxlan: Option<Vxlan>,
}

/// A fake but stable MAC in the lab's PNETLAB style (`50:52:0b:00:6d:00`, k-w3 ens3 in
/// seed-lab.md s1): two bytes of device index, then the NIC's position (ens3 = 0).
fn mac(dev: DeviceId, ifindex: u32) -> [u8; 6] {
    let d = dev.0.to_be_bytes();
    [0x50, 0x52, 0x0b, d[2], d[3], ifindex.saturating_sub(2) as u8]
}

/// The kernel gives a veth a random locally administered unicast MAC (the lab's pod had
/// `02:0a:bb:9f:e4:55`); fabsim derives it from the pod device's name so it is stable.
fn random_mac(seed: &str) -> [u8; 6] {
    let h = crate::hash::fnv1a(seed.bytes()).to_be_bytes();
    [(h[0] & 0xfe) | 0x02, h[1], h[2], h[3], h[4], h[5]]
}

/// Calico gives the host side of every pod's veth this fixed MAC (felix/CNI `ee:ee:…`).
const CALICO_HOST_MAC: [u8; 6] = [0xee; 6];

/// The MAC address of an interface, as `ip link` shows it and as captures put it in frames:
/// none for `lo` and `tunl0`, the VXLAN device's own, Calico's fixed host-side veth MAC, a pod's
/// stable random one, else the lab-style scheme of [`mac`] (also for switch ports, which fabsim
/// gives no MAC of their own).
pub(crate) fn iface_mac(net: &Network, id: IfId) -> [u8; 6] {
    let i = net.iface(id);
    match (veth_peer(net, id), &i.tunnel) {
        _ if i.name == "lo" => [0; 6],
        (_, Some(Tunnel::Ipip)) => [0; 6],
        (_, Some(Tunnel::Vxlan(v))) => v.mac,
        (Some((_, Some(_))), None) => CALICO_HOST_MAC,
        (Some((_, None)), None) => random_mac(net.devices.get(i.device.idx()).map_or("", |d| d.name.as_str())),
        (None, None) => mac(i.device, i.ifindex),
    }
}

/// The other end of a pod's veth pair, if `id` is one end: (peer, and the peer's namespace
/// name when the peer is the pod's side, which is named; the host's namespace is not).
fn veth_peer(net: &Network, id: IfId) -> Option<(IfId, Option<String>)> {
    let cluster = net.cluster.as_deref()?;
    cluster.netns.iter().find_map(|((ns, pod), n)| {
        if n.eth0 == id {
            n.host.map(|h| (h, None))
        } else if n.host == Some(id) {
            Some((n.eth0, Some(crate::k8s::netns_name(ns, pod))))
        } else {
            None
        }
    })
}

/// A host interface on the same segment as the host ends of veths: the bridge they are
/// enslaved to (fabsim models a bridge and its ports as one L2 segment).
fn enslaves_veths(net: &Network, id: IfId) -> bool {
    let i = net.iface(id);
    i.l2.is_some_and(|l2| {
        net.l2[l2.idx()]
            .members
            .iter()
            .any(|m| *m != id && net.iface(*m).device == i.device && veth_peer(net, *m).is_some())
    })
}

/// `lo` (ifindex 1, always present on Linux) followed by the model's interfaces by ifindex.
pub(super) fn links(net: &Network, st: &State, dev: DeviceId) -> Vec<Link> {
    let ifaces: Vec<IfId> = net.devices.get(dev.idx()).map(|d| d.ifaces.clone()).unwrap_or_default();
    let mut out: Vec<Link> = ifaces
        .iter()
        .filter_map(|id| net.interfaces.get(id.idx()).map(|i| (*id, i)))
        .map(|(id, i)| {
            let s = if_state(st, id);
            let veth = veth_peer(net, id);
            let (kind, parent) = match (&veth, &i.tunnel) {
                _ if i.name == "lo" => (Kind::Loopback, None),
                (_, Some(Tunnel::Ipip)) => (Kind::Ipip, Some(Parent::None)),
                (_, Some(Tunnel::Vxlan(_))) => (Kind::Vxlan, None),
                (Some((peer, netns)), None) => {
                    let index = net.interfaces.get(peer.idx()).map_or(0, |p| p.ifindex);
                    let netns = netns.clone();
                    (Kind::Veth, Some(Parent::Peer { index, netns }))
                }
                (None, None) if enslaves_veths(net, id) => (Kind::Bridge, None),
                (None, None) => (Kind::Ether, None),
            };
            let mac = iface_mac(net, id);
            let loopback = kind == Kind::Loopback;
            Link {
                index: i.ifindex,
                name: i.name.clone(),
                mtu: i.mtu,
                kind,
                parent,
                mac,
                up: s.up || loopback,
                carrier: s.line_up || loopback,
                addr: s.addr,
                dhcp: s.dhcp,
                vxlan: match &i.tunnel {
                    Some(Tunnel::Vxlan(v)) => Some(v.clone()),
                    _ => None,
                },
            }
        })
        .collect();
    if !out.iter().any(|l| l.kind == Kind::Loopback) {
        out.push(Link {
            index: 1,
            name: "lo".into(),
            mtu: 65536,
            kind: Kind::Loopback,
            parent: None,
            mac: [0; 6],
            up: true,
            carrier: true,
            addr: "127.0.0.1/8".parse().ok(),
            dhcp: false,
            vxlan: None,
        });
    }
    out.sort_by_key(|l| (l.index, l.name.clone()));
    out
}

/// `aa:bb:cc:dd:ee:ff`, as iproute2 and Calico print a MAC.
pub(crate) fn mac_text(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

impl Link {
    /// In `print_link_flags` order: NO-CARRIER first, then LOOPBACK, BROADCAST, MULTICAST,
    /// NOARP, UP, LOWER_UP.
    fn flags(&self) -> String {
        let mut f = Vec::new();
        if self.up && !self.carrier {
            f.push("NO-CARRIER");
        }
        match self.kind {
            Kind::Loopback => f.push("LOOPBACK"),
            Kind::Ipip => f.push("NOARP"),
            Kind::Ether | Kind::Veth | Kind::Vxlan | Kind::Bridge => f.extend(["BROADCAST", "MULTICAST"]),
        }
        if self.up {
            f.push("UP");
        }
        if self.up && self.carrier {
            f.push("LOWER_UP");
        }
        f.join(",")
    }
    /// RFC 2863 operstate: drivers that do not report it (loopback, ip tunnels, vxlan) stay
    /// UNKNOWN.
    fn operstate(&self) -> &'static str {
        match (self.kind, self.up && self.carrier) {
            (Kind::Loopback, _) | (Kind::Ipip | Kind::Vxlan, true) => "UNKNOWN",
            (_, true) => "UP",
            (_, false) => "DOWN",
        }
    }
    /// A device that was never brought up still has the `noop` qdisc; virtual devices
    /// (loopback, veth, tunnels) are IFF_NO_QUEUE and get `noqueue`.
    fn qdisc(&self) -> &'static str {
        match (self.kind, self.up) {
            (Kind::Loopback, _) => "noqueue",
            (_, false) => "noop",
            (Kind::Ether, true) => "fq_codel",
            (_, true) => "noqueue",
        }
    }
    /// `tx_queue_len`: 0 for a veth and for felix's VXLAN device (created through
    /// vishvananda/netlink with a zero `TxQLen`, which it sends as IFLA_TXQLEN), so no `qlen`;
    /// 1000 otherwise.
    fn qlen(&self) -> Option<u32> {
        (!matches!(self.kind, Kind::Veth | Kind::Vxlan)).then_some(1000)
    }
    /// systemd's predictable alternative name of a QEMU NIC in PCI slot N (`ens3` → `enp0s3`).
    fn altname(&self) -> Option<String> {
        let slot = self.name.strip_prefix("ens")?;
        (!slot.is_empty() && slot.bytes().all(|b| b.is_ascii_digit())).then(|| format!("enp0s{slot}"))
    }
    /// The kernel's EUI-64 link-local address. addrconf assigns it when the interface is up
    /// *and* has carrier (`NETDEV_UP` without carrier logs "link is not ready" and waits for
    /// `NETDEV_CHANGE`), so an up interface without carrier has none. An ipip tunnel gets none
    /// (addrconf skips ARPHRD_TUNNEL).
    fn inet6(&self) -> Option<(String, &'static str)> {
        match self.kind {
            Kind::Loopback => return Some(("::1/128".into(), "host")),
            Kind::Ipip => return None,
            Kind::Ether | Kind::Veth | Kind::Vxlan | Kind::Bridge => {}
        }
        let m = self.mac;
        let g = |a: u8, b: u8| u16::from_be_bytes([a, b]);
        (self.up && self.carrier).then(|| {
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
    /// The `    link/TYPE ADDR brd BRD` line's fields.
    fn link_layer(&self) -> String {
        match self.kind {
            Kind::Loopback => "link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00".into(),
            Kind::Ipip => "link/ipip 0.0.0.0 brd 0.0.0.0".into(),
            Kind::Ether | Kind::Veth | Kind::Vxlan | Kind::Bridge => {
                format!("link/ether {} brd ff:ff:ff:ff:ff:ff", mac_text(&self.mac))
            }
        }
    }

    /// What `ip -d` adds after the link layer (iproute2 5.15 `print_linkinfo`, `vxlan_print_opt`
    /// in ip/iplink_vxlan.c) for a VXLAN device as felix creates it: kernel 5.15's MTU bounds
    /// (ETH_MIN_MTU, ETH_MAX_MTU), the attributes vxlan_fill_info reports (learning off,
    /// TTL 0 = `auto`, default ageing 300, IPv4 UDP checksums on), then `addrgenmode` (only
    /// `ip link`), one queue each way and the parent's GSO limits (virtio: 65536, 65535).
    /// None for other kinds (not modelled).
    fn details(&self, view: LinkView) -> Option<String> {
        let v = self.vxlan.as_ref()?;
        let dev = v.parent.as_ref().map(|p| format!("dev {p} ")).unwrap_or_default();
        let addrgen = if view == LinkView::Link {
            "addrgenmode eui64 "
        } else {
            ""
        };
        Some(format!(
            " promiscuity 0 minmtu 68 maxmtu 65535 \n    vxlan id {} local {} {dev}srcport 0 0 dstport {} nolearning \
             ttl auto ageing 300 udpcsum noudp6zerocsumtx noudp6zerocsumrx {addrgen}numtxqueues 1 numrxqueues 1 \
             gso_max_size 65536 gso_max_segs 65535 ",
            v.vni, v.local, v.port
        ))
    }
}

/// Which `ip` prints: iproute2 on hosts, busybox's applet in busybox images (no `group`,
/// `mode`, `altname` or `link-netns`; `@peer` looked up in its own namespace, with `M-DOWN`
/// when that finds no up device — networking/libiproute/ipaddress.c `print_linkinfo`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum IpFlavor {
    Iproute2,
    Busybox,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkView {
    Addr,
    Link,
}

/// `ip` options that change how links print: `-br`, `-d`.
#[derive(Clone, Copy, Default)]
pub(super) struct IpOpts {
    pub(super) brief: bool,
    pub(super) details: bool,
}

pub(super) fn ip_links(
    net: &Network,
    st: &State,
    dev: DeviceId,
    args: &[String],
    opts: IpOpts,
    view: LinkView,
    flavor: IpFlavor,
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
    let details = opts.details && !opts.brief;
    if let Some(l) = shown.iter().find(|l| details && l.details(view).is_none()) {
        return Err(not_modelled(&format!(
            "ip -d {object} on {} (details are modelled for VXLAN devices)",
            l.name
        )));
    }
    Ok(shown
        .iter()
        .map(|l| match (opts.brief, view) {
            (true, LinkView::Addr) => brief_addr(l),
            (true, LinkView::Link) => format!(
                "{:<16} {:<14} {} <{}> \n",
                l.name,
                l.operstate(),
                mac_text(&l.mac),
                l.flags()
            ),
            (false, _) => link_block(l, view, flavor, &all, details),
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

/// `NAME@PARENT` and whether the parent is down (`M-DOWN`). iproute2 names a peer in another
/// namespace `ifN` and does not look it up; busybox always looks the index up in its own
/// namespace, where a pod does not find its host-side peer.
fn name_and_link(l: &Link, flavor: IpFlavor, all: &[Link]) -> (String, bool) {
    match (&l.parent, flavor) {
        (None, _) => (l.name.clone(), false),
        (Some(Parent::None), _) => (format!("{}@NONE", l.name), false),
        (Some(Parent::Peer { index, .. }), IpFlavor::Iproute2) => (format!("{}@if{index}", l.name), false),
        (Some(Parent::Peer { index, .. }), IpFlavor::Busybox) => match all.iter().find(|o| o.index == *index) {
            Some(o) => (format!("{}@{}", l.name, o.name), !o.up),
            None => (format!("{}@if{index}", l.name), true),
        },
    }
}

/// One interface as `ip addr` / `ip link` prints it (iproute2 `print_linkinfo` and
/// `print_addrinfo`, eos-linux-formats.md §4.6; busybox's of the same names). Both print every
/// field as `"%s "` except `qlen N`, so a line without a queue length ends in a space.
fn link_block(l: &Link, view: LinkView, flavor: IpFlavor, all: &[Link], details: bool) -> String {
    let (name, m_down) = name_and_link(l, flavor, all);
    let m_down = if m_down { ",M-DOWN" } else { "" };
    let mut s = format!(
        "{}: {name}: <{}{m_down}> mtu {} qdisc {} state {} ",
        l.index,
        l.flags(),
        l.mtu,
        l.qdisc(),
        l.operstate()
    );
    if flavor == IpFlavor::Iproute2 {
        if view == LinkView::Link {
            s.push_str("mode DEFAULT ");
        }
        s.push_str("group default ");
    }
    if let Some(q) = l.qlen() {
        s.push_str(&format!("qlen {q}"));
    }
    s.push_str(&format!("\n    {}", l.link_layer()));
    if let (IpFlavor::Iproute2, Some(Parent::Peer { netns, .. })) = (flavor, &l.parent) {
        match netns {
            Some(n) => s.push_str(&format!(" link-netns {n}")),
            None => s.push_str(" link-netnsid 0"),
        }
    }
    if let Some(d) = l.details(view).filter(|_| details) {
        s.push_str(&d);
    }
    s.push('\n');
    if let (IpFlavor::Iproute2, Some(alt)) = (flavor, l.altname()) {
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
    let loopback = l.kind == Kind::Loopback;
    let brd = if a.prefix_len() < 31 && !loopback {
        format!("brd {} ", a.broadcast())
    } else {
        String::new()
    };
    let scope = if loopback { "host" } else { "global" };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testnet::*;

    #[test]
    fn ip_addr_and_link() {
        let (lab, d) = kw1_s0c();
        let out = lab.run(d, "ip a").unwrap();
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
            lab.run(d, "ip -br addr").unwrap(),
            "lo               UNKNOWN        127.0.0.1/8 ::1/128 \n\
             ens3             UP             10.1.11.1/31 fe80::5252:bff:fe00:0/64 \n\
             ens4             DOWN           \n\
             ens5             UP             10.0.137.132/24 fe80::5252:bff:fe00:2/64 \n"
        );
        let link = lab.run(d, "ip link show ens3").unwrap();
        assert_eq!(
            link,
            "2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP mode DEFAULT group default qlen 1000\n    link/ether 50:52:0b:00:00:00 brd ff:ff:ff:ff:ff:ff\n    altname enp0s3\n"
        );
        assert_eq!(lab.err(d, "ip a show dev ens9"), "Device \"ens9\" does not exist.");
        assert!(lab
            .run(d, "ip -br link")
            .unwrap()
            .starts_with("lo               UNKNOWN        00:00:00:00:00:00 <LOOPBACK,UP,LOWER_UP> \n"));
    }

    #[test]
    fn no_carrier_no_link_local() {
        let (mut lab, d) = kw1_s0c();
        let ens3 = lab.net.iface_by_name(d, "ens3").unwrap();
        lab.st.ifaces[ens3.idx()].line_up = false;
        let out = lab.run(d, "ip a show ens3").unwrap();
        assert_eq!(
            out,
            "2: ens3: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc fq_codel state DOWN group default qlen 1000
    link/ether 50:52:0b:00:00:00 brd ff:ff:ff:ff:ff:ff
    altname enp0s3
    inet 10.1.11.1/31 scope global ens3
       valid_lft forever preferred_lft forever
"
        );
        assert_eq!(
            lab.run(d, "ip -br a show ens3").unwrap(),
            "ens3             DOWN           10.1.11.1/31 \n"
        );
        // The up interfaces with carrier keep theirs.
        assert!(lab
            .run(d, "ip a")
            .unwrap()
            .contains("inet6 fe80::5252:bff:fe00:2/64 scope link \n"));
    }

    /// k-w3 and the test pod at s1 (seed-lab.md L900-940): host ens3 and tunl0, the pod's
    /// lo, down tunl0 and eth0, paired with the host's `cali…` through the cluster's netns.
    fn pod_and_host() -> (Lab, DeviceId, DeviceId) {
        let mut lab = Lab::default();
        let host = lab.device("k-w3", crate::model::DeviceKind::Linux);
        lab.iface(host, "ens3", Some("10.3.33.1/31"));
        let tunl = lab.iface(host, "tunl0", Some("10.66.122.192/32"));
        lab.st.ifaces[tunl.idx()].line_up = true; // a tunnel has carrier when up (rib.rs)
        let cali = lab.iface(host, "cali7fba7a35b74", None);
        let pod = lab.device("test-pod", crate::model::DeviceKind::Linux);
        lab.net.devices[pod.idx()].image = Some("alpine".into());
        let lo = lab.iface(pod, "lo", Some("127.0.0.1/8"));
        let ptunl = lab.iface(pod, "tunl0", None);
        lab.st.ifaces[ptunl.idx()] = Default::default();
        let eth0 = lab.iface(pod, "eth0", Some("10.66.122.194/32"));
        for (i, index, mtu) in [
            (tunl, 5, 1480),
            (cali, 9, 1480),
            (lo, 1, 65536),
            (ptunl, 2, 1480),
            (eth0, 4, 1480),
        ] {
            lab.net.interfaces[i.idx()].ifindex = index;
            lab.net.interfaces[i.idx()].mtu = mtu;
        }
        for t in [tunl, ptunl] {
            lab.net.interfaces[t.idx()].tunnel = Some(Tunnel::Ipip);
        }
        let mut cluster = crate::k8s::Cluster::new("v1.28.15", None, net("10.96.0.0/12"), String::new(), 0);
        let netns = crate::k8s::Netns {
            device: pod,
            eth0,
            host: Some(cali),
        };
        cluster.netns.insert(("default".into(), "test-pod".into()), netns);
        lab.net.cluster = Some(Box::new(cluster));
        (lab, host, pod)
    }

    #[test]
    fn busybox_ip_a_in_a_pod_seed_s1() {
        let (lab, _, pod) = pod_and_host();
        let out = lab.run(pod, "ip a").unwrap();
        let mac = mac_text(&random_mac("test-pod"));
        assert_eq!(
            out,
            format!(
                "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN qlen 1000
    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00
    inet 127.0.0.1/8 scope host lo
       valid_lft forever preferred_lft forever
    inet6 ::1/128 scope host \n       valid_lft forever preferred_lft forever
2: tunl0@NONE: <NOARP> mtu 1480 qdisc noop state DOWN qlen 1000
    link/ipip 0.0.0.0 brd 0.0.0.0
4: eth0@if9: <BROADCAST,MULTICAST,UP,LOWER_UP,M-DOWN> mtu 1480 qdisc noqueue state UP \n    link/ether {mac} brd ff:ff:ff:ff:ff:ff
    inet 10.66.122.194/32 scope global eth0
       valid_lft forever preferred_lft forever
    inet6 {} scope link \n       valid_lft forever preferred_lft forever
",
                Link {
                    kind: Kind::Veth,
                    ..links(&lab.net, &lab.st, pod).remove(2)
                }
                .inet6()
                .unwrap()
                .0
            )
        );
        assert_eq!(random_mac("test-pod")[0] & 3, 2, "locally administered unicast");
    }

    #[test]
    fn iproute2_ip_link_on_the_node_seed_s1() {
        let (lab, host, _) = pod_and_host();
        let out = lab.run(host, "ip link show").unwrap();
        let netns = crate::k8s::netns_name("default", "test-pod");
        assert!(out.contains(
            "5: tunl0@NONE: <NOARP,UP,LOWER_UP> mtu 1480 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000
    link/ipip 0.0.0.0 brd 0.0.0.0
"
        ), "{out}");
        assert!(out.ends_with(&format!(
            "9: cali7fba7a35b74@if4: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1480 qdisc noqueue state UP mode DEFAULT group default \n    link/ether ee:ee:ee:ee:ee:ee brd ff:ff:ff:ff:ff:ff link-netns {netns}\n"
        )), "{out}");
        let a = lab.run(host, "ip a show tunl0").unwrap();
        assert!(a.contains("    inet 10.66.122.192/32 scope global tunl0\n"), "{a}");
        assert!(!a.contains("inet6"), "an ipip tunnel has no link-local: {a}");
    }

    #[test]
    fn addresses_and_macs_are_stable() {
        let (lab, d) = kw1_s0c();
        let a = lab.run(d, "ip a").unwrap();
        assert_eq!(a, lab.run(d, "ip addr show").unwrap());
        assert_eq!(mac_text(&mac(DeviceId(0x6d), 4)), "50:52:0b:00:6d:02");
    }
}
