//! iproute2 commands that change a Linux host: `ip link set [dev] IF up|down`, `ip link delete
//! [dev] IF` of Flannel's devices (`flannel_realize::link_delete`) and `ip route
//! add|del|replace PREFIX [via GW] [dev IF] [metric N] [proto boot] [onlink]`, with the
//! kernel's checks and iproute2's error texts.
//!
//! Sources: the kernel's `fib_check_nh` (net/ipv4/fib_semantics.c: a gateway must be on a
//! link-scope route, of the named device if any, looked up ignoring carrier; a device route
//! needs its device up), `fib_table_insert` (`-EEXIST` for the same prefix, TOS and metric
//! under `NLM_F_EXCL`, which `ip route add` sets) and `fib_table_delete` (`-ESRCH` when nothing
//! matches; unspecified fields match anything); iproute2's `rtnl_talk_error` (the kernel's
//! extended-ack message as `Error: MSG.`, else `RTNETLINK answers: strerror`) and `do_cmd`
//! (exit status 2). Routes added here are `RouteOrigin::Manual`: proto boot, which `ip route`
//! does not print.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::command::CommandOutcome;
use crate::engine::State;
use crate::model::{DeviceId, IfId, Network, RouteOrigin, StaticRoute};

/// Is `args` (after `ip`) a command that changes the host? (`ip route show`, `ip link show`
/// and the other read-only forms are views.)
pub(crate) fn is_change(args: &[&str]) -> bool {
    match args {
        [obj, cmd, ..] if is_object(obj, "link") => abbreviates(cmd, "set") || abbreviates(cmd, "delete"),
        [obj, cmd, ..] if is_object(obj, "route") => ROUTE_CHANGES.iter().any(|c| abbreviates(cmd, c)),
        _ => false,
    }
}

/// iproute2 takes any prefix of a keyword (`ip r a`, `ip ro del`).
fn abbreviates(word: &str, keyword: &str) -> bool {
    !word.is_empty() && keyword.starts_with(word)
}

/// `ip`'s object table lists `route` before `rule` and `link` before `l2tp`, so `r` and `l`
/// are route and link; `ru` is not a prefix of route.
fn is_object(word: &str, object: &str) -> bool {
    abbreviates(word, object)
}

const ROUTE_CHANGES: &[&str] = &["add", "delete", "replace", "change", "append", "prepend", "flush"];

/// An RTNETLINK error as iproute2 prints it, with its exit status.
fn rtnetlink(message: &str) -> CommandOutcome {
    CommandOutcome {
        status: 2,
        ..CommandOutcome::ok(format!("{message}\n"))
    }
}

pub(crate) fn ip(net: &mut Network, st: &State, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    match args {
        [obj, cmd, rest @ ..] if is_object(obj, "link") && abbreviates(cmd, "set") => link_set(net, st, dev, rest),
        [obj, cmd, rest @ ..] if is_object(obj, "link") && abbreviates(cmd, "delete") => {
            super::flannel_realize::link_delete(net, dev, rest)
        }
        [obj, cmd, rest @ ..] if is_object(obj, "route") => {
            let spec = RouteSpec::parse(net, dev, rest)?;
            if abbreviates(cmd, "add") {
                route_add(net, st, dev, spec, false)
            } else if abbreviates(cmd, "delete") {
                route_del(net, st, dev, spec)
            } else if abbreviates(cmd, "replace") {
                route_add(net, st, dev, spec, true)
            } else {
                Err(format!(
                    "`ip route {cmd}`: fabsim changes routes with ip route add, del and replace"
                ))
            }
        }
        _ => Err(
            "fabsim changes a host with `ip link set IF up|down`, `ip link delete cni0|flannel.1` and `ip route add|del|replace`"
                .into(),
        ),
    }
}

/// `ip link set [dev] IF up|down`: the admin state. Down, the kernel drops every route
/// through the interface (`fib_sync_down_dev`, then `fib_flush`); routes `ip route add` made
/// do not come back when it is up again, connected routes do (`fib_add_ifaddr` on NETDEV_UP).
fn link_set(net: &mut Network, st: &State, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    let args = match args.first() {
        Some(&"dev") => &args[1..],
        _ => args,
    };
    let [name, state] = args else {
        return Err("fabsim models `ip link set [dev] IF up|down` only".into());
    };
    let up = match *state {
        "up" => true,
        "down" => false,
        other => return Err(format!("`ip link set {name} {other}`: fabsim models up and down only")),
    };
    let iface = iface_of(net, dev, name)?;
    net.interfaces[iface.idx()].admin_up = up;
    if !up {
        let fib = &st.devices[dev.idx()].fib;
        let through = |r: &StaticRoute| {
            r.dev.as_deref().is_some_and(|d| d.eq_ignore_ascii_case(name))
                || fib
                    .get(r.prefix.trunc(), r.metric)
                    .is_some_and(|f| f.nexthops.iter().any(|n| n.iface == iface))
        };
        net.devices[dev.idx()]
            .statics
            .retain(|r| r.origin != RouteOrigin::Manual || !through(r));
    }
    Ok(CommandOutcome::ok(""))
}

/// The route an `ip route` command names.
struct RouteSpec {
    prefix: Ipv4Net,
    via: Option<Ipv4Addr>,
    dev: Option<(IfId, String)>,
    metric: Option<u32>,
    blackhole: bool,
    onlink: bool,
}

impl RouteSpec {
    fn parse(net: &Network, dev: DeviceId, args: &[&str]) -> Result<RouteSpec, String> {
        let mut spec = RouteSpec {
            prefix: Ipv4Net::default(),
            via: None,
            dev: None,
            metric: None,
            blackhole: false,
            onlink: false,
        };
        let mut prefix = None;
        let mut scope = None;
        let mut it = args.iter();
        while let Some(w) = it.next() {
            let mut value = |what: &str| {
                it.next()
                    .copied()
                    .ok_or_else(|| format!("`ip route`: `{w}` needs {what}"))
            };
            match *w {
                "via" => {
                    let gw = value("a gateway address")?;
                    spec.via = Some(gw.parse().map_err(|_| format!("`via {gw}`: not an IPv4 address"))?);
                }
                "dev" | "oif" => {
                    let name = value("an interface")?;
                    spec.dev = Some((iface_of(net, dev, name)?, name.to_string()));
                }
                "metric" | "priority" | "preference" => {
                    let n = value("a number")?;
                    spec.metric = Some(n.parse().map_err(|_| format!("`{w} {n}`: not a number"))?);
                }
                "proto" | "protocol" => match value("a protocol")? {
                    "boot" => {}
                    p => {
                        return Err(format!(
                            "`proto {p}`: fabsim records routes typed with `ip route` as proto boot, the default"
                        ))
                    }
                },
                "onlink" => spec.onlink = true,
                "scope" => scope = Some(value("a scope")?),
                "blackhole" if prefix.is_none() => spec.blackhole = true,
                "to" if prefix.is_none() => prefix = Some(value("a prefix")?),
                p if prefix.is_none() => prefix = Some(p),
                other => return Err(format!("`ip route … {other}`: fabsim does not model this argument")),
            }
        }
        let p = prefix.ok_or("`ip route`: which prefix? (`ip route add PREFIX via GW`)")?;
        spec.prefix = if p == "default" {
            Ipv4Net::default()
        } else if let Ok(n) = p.parse::<Ipv4Net>() {
            if n.trunc() != n {
                return Err(format!("`{p}`: the address has bits set beyond the prefix length"));
            }
            n
        } else {
            let a: Ipv4Addr = p
                .parse()
                .map_err(|_| format!("`{p}`: expected a prefix like 10.0.0.0/8, an address or `default`"))?;
            Ipv4Net::from(a)
        };
        if spec.blackhole && (spec.via.is_some() || spec.dev.is_some()) {
            return Err("`ip route … blackhole` takes no gateway or device".into());
        }
        // iproute2 gives a route without a gateway scope link and one with a gateway scope
        // global (`iproute_modify`, `!gw_ok`): saying so changes nothing. Other scopes are
        // routes fabsim has no form for.
        match (scope, spec.via) {
            (None | Some("link"), None) | (None | Some("global" | "universe"), Some(_)) => {}
            (Some(other), _) => {
                return Err(format!(
                    "`ip route … scope {other}`: fabsim does not model this scope here"
                ))
            }
        }
        Ok(spec)
    }
}

/// Whether `ip route add … proto static` (ARGS after `ip`) adds exactly a route the host's
/// netplan configures (`RouteOrigin::Netplan`, which the kernel shows as proto static): a lab's
/// container runs no networkd, so an exported lab applies its bound netplan this way
/// (`input::containerlab`).
pub(crate) fn repeats_netplan(net: &Network, dev: DeviceId, args: &[&str]) -> bool {
    let [obj, cmd, rest @ ..] = args else { return false };
    if !is_object(obj, "route") || !abbreviates(cmd, "add") {
        return false;
    }
    let Some(at) = rest.windows(2).position(|w| w == ["proto", "static"]) else {
        return false;
    };
    let mut spec_args = rest.to_vec();
    spec_args.drain(at..at + 2);
    let Ok(spec) = RouteSpec::parse(net, dev, &spec_args) else {
        return false;
    };
    net.device(dev).statics.iter().any(|r| {
        r.origin == RouteOrigin::Netplan
            && r.prefix == spec.prefix
            && r.via == spec.via
            && r.dev.as_deref() == spec.dev.as_ref().map(|(_, name)| name.as_str())
            && r.metric == spec.metric.unwrap_or(0)
            && r.onlink == spec.onlink
            && r.blackhole == spec.blackhole
    })
}

fn iface_of(net: &Network, dev: DeviceId, name: &str) -> Result<IfId, String> {
    net.iface_by_name(dev, name).ok_or_else(|| {
        format!(
            "{} has no interface '{name}' (interfaces: {})",
            net.device(dev).name,
            net.iface_names(dev)
        )
    })
}

/// The kernel's next-hop check (`fib_check_nh`), as iproute2 reports its failure.
fn check_nexthop(net: &Network, st: &State, dev: DeviceId, spec: &RouteSpec) -> Result<(), &'static str> {
    let up = |i: IfId| st.ifaces[i.idx()].up;
    match (spec.via, &spec.dev) {
        _ if spec.blackhole => Ok(()),
        (Some(gw), Some((i, _))) if spec.onlink => {
            if !up(*i) {
                return Err("Error: Nexthop device is not up.");
            }
            if is_local(net, st, dev, gw) {
                return Err("Error: Nexthop has invalid gateway.");
            }
            Ok(())
        }
        (Some(gw), named) => {
            // A link-scope route to the gateway (connected prefix or device route) on an up
            // interface, carrier or not (FIB_LOOKUP_IGNORE_LINKSTATE), of the named device.
            let connected = net.device(dev).ifaces.iter().any(|i| {
                up(*i)
                    && named.as_ref().is_none_or(|(n, _)| n == i)
                    && st.ifaces[i.idx()]
                        .addr
                        .is_some_and(|a| a.prefix_len() < 32 && a.trunc().contains(&gw))
            });
            let device_route = st.devices[dev.idx()].fib.iter().any(|r| {
                r.scope_link
                    && r.prefix.contains(&gw)
                    && r.nexthops
                        .iter()
                        .any(|n| named.as_ref().is_none_or(|(i, _)| *i == n.iface))
            });
            if connected || device_route {
                Ok(())
            } else {
                Err("Error: Nexthop has invalid gateway.")
            }
        }
        (None, Some((i, _))) if up(*i) => Ok(()),
        (None, Some(_)) => Err("Error: Device for nexthop is not up."),
        // No gateway, no device: `fib_check_nh` finds no in_device for ifindex 0 (-ENODEV,
        // without an extended-ack message).
        (None, None) => Err("RTNETLINK answers: No such device"),
    }
}

fn is_local(net: &Network, st: &State, dev: DeviceId, a: Ipv4Addr) -> bool {
    net.device(dev)
        .ifaces
        .iter()
        .any(|i| st.ifaces[i.idx()].addr.is_some_and(|x| x.addr() == a))
}

/// The kernel table's (prefix, metric) slots, installed or not: what the FIB holds plus the
/// static routes fabsim keeps out of it while their next hop is unusable (the kernel would
/// keep them, flagged `linkdown`).
fn occupied(net: &Network, st: &State, dev: DeviceId, prefix: Ipv4Net, metric: u32) -> bool {
    st.devices[dev.idx()].fib.get(prefix, metric).is_some()
        || net
            .device(dev)
            .statics
            .iter()
            .any(|r| r.prefix.trunc() == prefix && r.metric == metric)
}

fn route_add(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    spec: RouteSpec,
    replace: bool,
) -> Result<CommandOutcome, String> {
    if let Err(msg) = check_nexthop(net, st, dev, &spec) {
        return Ok(rtnetlink(msg));
    }
    let metric = spec.metric.unwrap_or(0);
    let statics = &mut net.devices[dev.idx()].statics;
    let mine = |r: &StaticRoute| {
        r.prefix.trunc() == spec.prefix
            && r.metric == metric
            && matches!(r.origin, RouteOrigin::Manual | RouteOrigin::Netplan)
    };
    if replace {
        let had_static = statics.iter().any(mine);
        statics.retain(|r| !mine(r));
        if !had_static && st.devices[dev.idx()].fib.get(spec.prefix, metric).is_some() {
            return Err(format!(
                "`ip route replace {}`: the route there now was not added by `ip route` or netplan; \
                 fabsim does not model replacing it",
                spec.prefix
            ));
        }
    } else if occupied(net, st, dev, spec.prefix, metric) {
        return Ok(rtnetlink("RTNETLINK answers: File exists"));
    }
    net.devices[dev.idx()].statics.push(StaticRoute {
        prefix: spec.prefix,
        via: spec.via,
        dev: spec.dev.map(|(_, name)| name),
        distance: None,
        metric,
        blackhole: spec.blackhole,
        onlink: spec.onlink,
        origin: RouteOrigin::Manual,
        span: Default::default(),
    });
    Ok(CommandOutcome::ok(""))
}

/// `ip route del`: the first route with the prefix (lowest metric first) that matches every
/// field given.
fn route_del(net: &mut Network, st: &State, dev: DeviceId, spec: RouteSpec) -> Result<CommandOutcome, String> {
    let fib = &st.devices[dev.idx()].fib;
    let matches = |metric: u32, via: Option<Ipv4Addr>, iface: Option<IfId>| {
        spec.metric.is_none_or(|m| m == metric)
            && spec.via.is_none_or(|g| via == Some(g))
            && spec.dev.as_ref().is_none_or(|(i, _)| iface == Some(*i))
    };
    let installed = fib.keyed().find(|((p, m), r)| {
        *p == spec.prefix && r.nexthops.iter().any(|n| matches(*m, n.via, Some(n.iface)))
            || *p == spec.prefix && r.nexthops.is_empty() && matches(*m, None, None)
    });
    let statics = &net.devices[dev.idx()].statics;
    let named_if = |r: &StaticRoute| r.dev.as_deref().and_then(|d| net.iface_by_name(dev, d));
    let stored = statics.iter().position(|r| {
        r.prefix.trunc() == spec.prefix
            && matches!(r.origin, RouteOrigin::Manual | RouteOrigin::Netplan)
            && matches(
                r.metric,
                r.via,
                named_if(r).or_else(|| spec.dev.as_ref().map(|(i, _)| *i)),
            )
            && installed.is_none_or(|((_, m), _)| m == r.metric)
    });
    match (installed, stored) {
        (_, Some(i)) => {
            net.devices[dev.idx()].statics.remove(i);
            Ok(CommandOutcome::ok(""))
        }
        (None, None) => Ok(rtnetlink("RTNETLINK answers: No such process")),
        (Some((_, r)), None) => Err(format!(
            "`ip route del {}`: the route is proto {}; fabsim deletes routes added by `ip route` or netplan only",
            spec.prefix,
            r.linux_proto.map_or("boot", |p| p.word())
        )),
    }
}
