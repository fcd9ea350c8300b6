//! iproute2 `ip [-br] addr` and `ip [-br] link` (`print_linkinfo`, `print_addrinfo`;
//! eos-linux-formats.md §4.6), including the implicit `lo` and the kernel's IPv6 link-local.

use std::net::Ipv6Addr;

use ipnet::Ipv4Net;

use super::{if_state, iproute_match, not_modelled};
use crate::engine::State;
use crate::model::{DeviceId, IfId, Network};
use crate::views::CommandError;

const ADDR_CMDS: &[&str] = &[
    "add", "change", "chg", "replace", "delete", "list", "show", "lst", "flush", "save", "showdump", "restore",
];
const LINK_CMDS: &[&str] = &[
    "add", "set", "change", "replace", "delete", "show", "lst", "list", "xstats", "afstats", "property", "help",
];

/// What `ip addr` / `ip link` knows of one interface.
pub(super) struct Link {
    index: u32,
    name: String,
    mtu: u32,
    loopback: bool,
    mac: [u8; 6],
    /// Administratively up (IFF_UP).
    up: bool,
    /// Carrier (IFF_LOWER_UP).
    carrier: bool,
    pub(super) addr: Option<Ipv4Net>,
    dhcp: bool,
}

/// A fake but stable MAC in the lab's PNETLAB style (`50:52:0b:00:6d:00`, k-w3 ens3 in
/// seed-lab.md s1): two bytes of device index, then the NIC's position (ens3 = 0).
fn mac(dev: DeviceId, ifindex: u32) -> [u8; 6] {
    let d = dev.0.to_be_bytes();
    [0x50, 0x52, 0x0b, d[2], d[3], ifindex.saturating_sub(2) as u8]
}

/// `lo` (ifindex 1, always present on Linux) followed by the model's interfaces by ifindex.
pub(super) fn links(net: &Network, st: &State, dev: DeviceId) -> Vec<Link> {
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
    /// The kernel's EUI-64 link-local address. addrconf assigns it when the interface is up
    /// *and* has carrier (`NETDEV_UP` without carrier logs "link is not ready" and waits for
    /// `NETDEV_CHANGE`), so an up interface without carrier has none.
    fn inet6(&self) -> Option<(String, &'static str)> {
        if self.loopback {
            return Some(("::1/128".into(), "host"));
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
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LinkView {
    Addr,
    Link,
}

pub(super) fn ip_links(
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

    #[test]
    fn addresses_and_macs_are_stable() {
        let (lab, d) = kw1_s0c();
        let a = lab.run(d, "ip a").unwrap();
        assert_eq!(a, lab.run(d, "ip addr show").unwrap());
        assert_eq!(mac_text(&mac(DeviceId(0x6d), 4)), "50:52:0b:00:6d:02");
    }
}
