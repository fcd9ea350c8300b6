//! iproute2 `ip route [show]` (the main table, one `print_route` line per route) and
//! `ip route get ADDR` (eos-linux-formats.md §4.5).

use std::cmp::Reverse;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::addr::links;
use super::{fib, if_name, iproute_match, not_modelled};
use crate::dataplane;
use crate::engine::state::{NextHop, Route};
use crate::engine::State;
use crate::model::{DeviceId, Network};
use crate::views::CommandError;

const ROUTE_CMDS: &[&str] = &[
    "add", "change", "replace", "prepend", "append", "test", "delete", "list", "show", "lst", "get", "flush", "save",
    "restore", "showdump",
];

/// `ip route …` run by `uid` (the caller `ip route get` reports).
pub(super) fn ip_route(
    net: &Network,
    st: &State,
    dev: DeviceId,
    args: &[String],
    uid: u32,
) -> Result<String, CommandError> {
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
                route_get(net, st, dev, a, uid)
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
    routes.iter().map(|r| route_line(net, r)).collect()
}

/// iproute2 prints a host route's destination bare and the default route as `default`.
fn route_dst(p: Ipv4Net) -> String {
    match p.prefix_len() {
        0 => "default".into(),
        32 => p.addr().to_string(),
        _ => p.to_string(),
    }
}

fn nexthop_fields(net: &Network, nh: &NextHop) -> String {
    let via = nh.via.map(|v| format!("via {v} ")).unwrap_or_default();
    format!("{via}dev {} ", if_name(net, nh.iface))
}

/// One route as iproute2's `print_route` prints it: every field followed by a space, so the
/// line ends in one (eos-linux-formats.md §4.5). Several next hops print iproute2's multipath
/// form, one `\tnexthop … weight 1 ` line each.
pub(crate) fn route_line(net: &Network, r: &Route) -> String {
    let mut s = String::new();
    if r.blackhole {
        s.push_str("blackhole ");
    } else if r.unreachable {
        s.push_str("unreachable ");
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
    // RTNH_F_ONLINK is a next hop's flag; fabsim's onlink routes have one next hop, so the
    // route's flag stands for each.
    let flag = if r.onlink { "onlink " } else { "" };
    match single {
        Some(_) => s.push_str(flag),
        None if !r.blackhole && !r.unreachable => {
            for nh in &r.nexthops {
                s.push_str(&format!("\n\tnexthop {}weight 1 {flag}", nexthop_fields(net, nh)));
            }
        }
        None => {}
    }
    s.push('\n');
    s
}

/// `ip route get A`: the cloned route the kernel would use (§4.5): no proto or scope, then the
/// caller's uid and a `    cache ` line. The source is the data plane's choice
/// ([`dataplane::probe_source`]: the route's `src`, else the egress interface's address).
/// With ECMP the first next hop is shown.
fn route_get(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr, uid: u32) -> Result<String, CommandError> {
    let local = dst.is_loopback()
        || links(net, st, dev)
            .iter()
            .any(|l| l.addr.is_some_and(|a| a.addr() == dst));
    if local {
        return Ok(format!(
            "local {dst} dev lo table local src {dst} uid {uid} \n    cache <local> \n"
        ));
    }
    let unreachable = || CommandError::new("RTNETLINK answers: Network is unreachable");
    let route = fib(st, dev).and_then(|f| f.lookup(dst)).ok_or_else(unreachable)?;
    if route.blackhole {
        return Err(CommandError::new("RTNETLINK answers: Invalid argument"));
    }
    if route.unreachable {
        return Err(CommandError::new("RTNETLINK answers: No route to host"));
    }
    let nh = route.nexthops.first().ok_or_else(unreachable)?;
    let src = dataplane::probe_source(net, st, dev, dst)
        .map(|s| format!("src {s} "))
        .unwrap_or_default();
    Ok(format!(
        "{dst} {}{src}uid {uid} \n    cache \n",
        nexthop_fields(net, nh)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::LinuxProto;
    use crate::views::testnet::*;

    #[test]
    fn ip_route_k_w1_s0c_exact() {
        let (lab, d) = kw1_s0c();
        let out = lab.run(d, "ip r").unwrap();
        assert_eq!(
            out,
            "default via 10.0.137.1 dev ens5 proto dhcp src 10.0.137.132 metric 100 \n\
             10.0.0.0/8 via 10.1.11.0 dev ens3 proto static \n\
             10.0.137.0/24 dev ens5 proto kernel scope link src 10.0.137.132 metric 100 \n\
             10.0.137.1 dev ens5 proto dhcp scope link src 10.0.137.132 metric 100 \n\
             10.1.11.0/31 dev ens3 proto kernel scope link src 10.1.11.1 \n"
        );
        for cmd in ["ip route", "ip route show", "ip ro list", "ip -4 r s"] {
            assert_eq!(lab.run(d, cmd).unwrap(), out, "{cmd}");
        }
    }

    #[test]
    fn ip_route_special_forms() {
        let (mut lab, d) = kw1_s0c();
        let ens3 = lab.net.iface_by_name(d, "ens3").unwrap();
        let ens5 = lab.net.iface_by_name(d, "ens5").unwrap();
        let mk = |prefix: &str, nhs: Vec<NextHop>, bh: bool| Route {
            blackhole: bh,
            unreachable: false,
            linux_proto: Some(LinuxProto::Bird),
            ..eos_route(prefix, crate::engine::state::Proto::Static, (0, 0), nhs)
        };
        lab.route(d, mk("10.66.52.0/24", vec![], true));
        lab.route(
            d,
            Route {
                onlink: true,
                ..mk("10.66.207.64/26", vec![hop(Some("10.0.137.15"), ens3)], false)
            },
        );
        lab.route(
            d,
            mk(
                "10.66.0.0/16",
                vec![hop(Some("10.1.11.0"), ens3), hop(Some("10.0.137.1"), ens5)],
                false,
            ),
        );
        let out = lab.run(d, "ip r | grep bird").unwrap();
        assert_eq!(
            out,
            "10.66.0.0/16 proto bird \n\
             blackhole 10.66.52.0/24 proto bird \n\
             10.66.207.64/26 via 10.0.137.15 dev ens3 proto bird onlink \n"
        );
        let all = lab.run(d, "ip r").unwrap();
        assert!(all.contains(
            "10.66.0.0/16 proto bird \n\tnexthop via 10.1.11.0 dev ens3 weight 1 \n\tnexthop via 10.0.137.1 dev ens5 weight 1 \n"
        ));
        let err = lab.run(d, "ip r get 10.66.52.1").unwrap_err();
        assert_eq!(err.message, "RTNETLINK answers: Invalid argument");
        // BIRD's kernel protocol installs an unresolvable best path as `unreachable`.
        lab.route(
            d,
            Route {
                unreachable: true,
                ..mk("10.66.9.0/26", vec![], false)
            },
        );
        let out = lab.run(d, "ip r | grep unreachable").unwrap();
        assert_eq!(out, "unreachable 10.66.9.0/26 proto bird \n");
        let err = lab.run(d, "ip r get 10.66.9.1").unwrap_err();
        assert_eq!(err.message, "RTNETLINK answers: No route to host");
    }

    #[test]
    fn onlink_is_the_route_flag() {
        // A pod (realize.rs): the gateway 169.254.1.1 is outside eth0's /32 but reachable by
        // `169.254.1.1 dev eth0 scope link`, as Calico's CNI installs it, so no `onlink`; felix's
        // no-encap route has the flag even though its gateway is on the subnet.
        let mut lab = Lab::default();
        let d = lab.device("test-pod", crate::model::DeviceKind::Linux);
        let eth0 = lab.iface(d, "eth0", Some("10.66.122.194/32"));
        let mk = |prefix: &str, via: Option<&str>, onlink: bool| Route {
            scope_link: via.is_none(),
            onlink,
            ..eos_route(
                prefix,
                crate::engine::state::Proto::Static,
                (0, 0),
                vec![hop(via, eth0)],
            )
        };
        lab.route(d, mk("0.0.0.0/0", Some("169.254.1.1"), false));
        lab.route(d, mk("169.254.1.1/32", None, false));
        assert_eq!(
            lab.run(d, "ip r").unwrap(),
            "default via 169.254.1.1 dev eth0 \n169.254.1.1 dev eth0 scope link \n"
        );
        lab.route(d, mk("10.66.217.0/26", Some("10.66.122.1"), true));
        assert!(lab
            .run(d, "ip r")
            .unwrap()
            .contains("10.66.217.0/26 via 10.66.122.1 dev eth0 onlink \n"));
    }

    #[test]
    fn ip_route_get() {
        let (lab, d) = kw1_s0c();
        let run = |c: &str| lab.run(d, c);
        for (cmd, want) in [
            (
                "ip route get 10.0.11.1",
                "10.0.11.1 via 10.1.11.0 dev ens3 src 10.1.11.1 uid 1000 \n    cache \n",
            ),
            (
                "ip r g 8.8.8.8",
                "8.8.8.8 via 10.0.137.1 dev ens5 src 10.0.137.132 uid 1000 \n    cache \n",
            ),
            (
                "ip r get 10.1.11.0",
                "10.1.11.0 dev ens3 src 10.1.11.1 uid 1000 \n    cache \n",
            ),
            (
                "ip r get 10.1.11.1",
                "local 10.1.11.1 dev lo table local src 10.1.11.1 uid 1000 \n    cache <local> \n",
            ),
            (
                "sudo ip r get 10.1.11.0",
                "10.1.11.0 dev ens3 src 10.1.11.1 uid 0 \n    cache \n",
            ),
        ] {
            assert_eq!(run(cmd).unwrap(), want, "{cmd}");
        }
        let (empty, e) = {
            let mut lab = Lab::default();
            let e = lab.device("h", crate::model::DeviceKind::Linux);
            (lab, e)
        };
        let err = empty.run(e, "ip r get 8.8.8.8").unwrap_err();
        assert_eq!(err.message, "RTNETLINK answers: Network is unreachable");
        assert!(run("ip r get foo").is_err());
    }
}
