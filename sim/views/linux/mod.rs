//! Linux host shell: dispatch of one command line to iproute2 `ip route|addr|link`, iputils
//! `ping`/`tracepath` and Debian `traceroute` (Ubuntu 22.04 tools; eos-linux-formats.md §4), BIRD's
//! `birdcl` and FRR's `vtysh` where those speakers run, and
//! the helpers they share (interface state, FIB, iproute2 keyword matching, host arguments).

mod addr;
mod bbping;
mod http;
mod nslookup;
mod ping;
mod route;
mod trace;

use std::net::Ipv4Addr;

pub(crate) use addr::{iface_mac, mac_text};
pub(crate) use ping::{ping_send_times, ping_text, run_pings, PingStyle};
pub(crate) use route::route_line;
pub(crate) use trace::run_traceroute;

use super::pipe::shell_words;
use super::tcpdump::Sent;
use super::CommandError;
use crate::engine::state::{Fib, IfState};
use crate::engine::State;
use crate::model::{DeviceId, IfId, Network};

/// The uid of the shell fabsim runs a command in. There is no user model: a host's shell is
/// the lab's login user (`user@k-w3:~$`, uid 1000, as `ip r get`'s `uid 1000` shows in
/// seed-lab.md s1), a container's is root (`/ #`); `sudo` runs as root.
const LOGIN_UID: u32 = 1000;
const ROOT_UID: u32 = 0;

/// Run one shell command (no pipes) on a Linux host, in its default shell; what its pings and
/// traceroutes send goes to `sent`.
pub(crate) fn run(
    net: &Network,
    st: &State,
    dev: DeviceId,
    line: &str,
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let container = net.devices.get(dev.idx()).is_some_and(|d| d.image.is_some());
    run_as(net, st, dev, line, if container { ROOT_UID } else { LOGIN_UID }, sent)
}

/// Run one shell command as `uid` (what `ip route get` reports).
fn run_as(
    net: &Network,
    st: &State,
    dev: DeviceId,
    line: &str,
    uid: u32,
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let words = shell_words(line)?;
    let Some((cmd, args)) = words.split_first() else {
        return Ok(String::new());
    };
    // A container has only its image's commands (busybox's `sh` says so).
    let image = net
        .devices
        .get(dev.idx())
        .and_then(|d| d.image.as_deref())
        .and_then(crate::catalogue::image);
    if image.is_some_and(|i| !i.tools.iter().any(|t| t == cmd) && cmd != "sudo") {
        return Ok(format!("sh: {cmd}: not found\n"));
    }
    match cmd.as_str() {
        "ip" => ip_cmd(net, st, dev, args, uid),
        "curl" => http::curl(net, st, dev, args),
        "wget" => http::wget(net, st, dev, args),
        "ping" if busybox(net, dev) => bbping::ping(net, st, dev, args, sent),
        "ping" => ping::ping(net, st, dev, args, sent),
        "tracepath" => trace::tracepath(net, st, dev, args),
        "traceroute" => trace::traceroute(net, st, dev, args, sent),
        "birdcl" | "birdc" => super::bird::birdcl(net, st, dev, cmd, args),
        "vtysh" => super::frr::vtysh(net, st, dev, args),
        // `sudo` changes only the uid (`ip route get` prints it).
        "sudo" => run_as(net, st, dev, &args.join(" "), ROOT_UID, sent),
        "calicoctl" => super::calicoctl::calicoctl(net, st, dev, args),
        "kubectl" => super::kubectl::kubectl(net, st, args, sent),
        "etcdctl" => {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            crate::k8s::etcdctl_read(net, dev, &args, st.time_ms).map_err(CommandError::new)
        }
        "cat" => cat(net, dev, args),
        "nslookup" => nslookup::nslookup(net, st, dev, args),
        "grep" | "egrep" => grep_file(net, dev, cmd, args),
        _ => Err(CommandError::new(format!(
            "{cmd}: command not found (fabsim's Linux shell runs: ip route|addr|link, \
             ping, tracepath, traceroute, birdcl where BIRD runs, vtysh where FRR runs)"
        ))),
    }
}

/// `cat FILE` for the files fabsim generates: the BIRD configuration confd renders into the
/// calico-node container (`/etc/calico/confd/config/`), readable from the node it runs on, the
/// static-pod manifests on the control-plane node (`/etc/kubernetes/manifests/`), a node's
/// kubelet configuration, flanneld's `/run/flannel/subnet.env` and a pod's `/etc/resolv.conf`.
fn cat(net: &Network, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    let mut out = String::new();
    let cluster = net.cluster.as_deref();
    for path in args {
        if path == "/etc/resolv.conf" {
            // A pod's, as its sandbox got it; a host's own is not modelled.
            let pod = cluster.and_then(|c| c.pod_on_device(dev));
            let Some(dns) = pod.and_then(|p| p.dns.as_ref()) else {
                return Err(CommandError::new(
                    "cat /etc/resolv.conf: fabsim models the resolv.conf of pods that use the cluster DNS only",
                ));
            };
            out.push_str(&dns.resolv_conf());
            continue;
        }
        if path == crate::k8s::FLANNEL_SUBNET_ENV {
            // flanneld's file on the host (it outlives the Node, so by the host's name).
            let host = &net.device(dev).name;
            match cluster.and_then(|c| c.flannel_subnet_env(host)) {
                Some(text) => out.push_str(&text),
                None => out.push_str(&format!("cat: {path}: No such file or directory\n")),
            }
            continue;
        }
        if path == crate::k8s::KUBELET_CONFIG_PATH {
            let node = cluster.and_then(|c| c.nodes.iter().find(|n| n.device == dev));
            match node.and_then(|n| cluster.and_then(|c| c.kubelet_config_text(&n.name))) {
                Some(text) => out.push_str(text),
                None => out.push_str(&format!("cat: {path}: No such file or directory\n")),
            }
            continue;
        }
        let manifest = net
            .cluster
            .as_deref()
            .and_then(|c| c.control_plane.as_ref())
            .and_then(|cp| cp.file(dev, path));
        if let Some(text) = manifest {
            out.push_str(text);
            continue;
        }
        let file = path.strip_prefix("/etc/calico/confd/config/");
        let node = net
            .cluster
            .as_deref()
            .and_then(|c| c.nodes.iter().find(|n| n.device == dev));
        let rendered = node
            .zip(net.cluster.as_deref().and_then(|c| c.calico.as_ref()))
            .and_then(|(n, calico)| calico.rendered.get(&n.name));
        let text = match (file, rendered) {
            (Some("bird.cfg"), Some(r)) => &r.bird_cfg,
            (Some("bird_aggr.cfg"), Some(r)) => &r.bird_aggr_cfg,
            (Some("bird_ipam.cfg"), Some(r)) => &r.bird_ipam_cfg,
            _ => {
                out.push_str(&format!("cat: {path}: No such file or directory\n"));
                continue;
            }
        };
        out.push_str(text);
    }
    Ok(out)
}

/// `grep [OPTION]... PATTERN FILE` over a file `cat` shows (the manifests, confd's output):
/// the pipe's grep on the file's text; a file fabsim does not have is grep's error.
fn grep_file(net: &Network, dev: DeviceId, cmd: &str, args: &[String]) -> Result<String, CommandError> {
    let Some((file, stage)) = args.split_last().filter(|(_, s)| !s.is_empty()) else {
        return super::pipe::apply_filters(super::pipe::Flavor::Linux, &[cmd.to_string()], String::new());
    };
    let text = cat(net, dev, std::slice::from_ref(file))?;
    if text.starts_with(&format!("cat: {file}: ")) {
        return Ok(format!("grep: {file}: No such file or directory\n"));
    }
    // The words go back through the pipe's shell-word splitting: quote each.
    let quoted: Vec<String> = stage
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    let stage = format!("{cmd} {}", quoted.join(" "));
    super::pipe::apply_filters(super::pipe::Flavor::Linux, &[stage], text)
}

fn if_state(st: &State, id: IfId) -> IfState {
    st.ifaces.get(id.idx()).cloned().unwrap_or_default()
}

pub(crate) fn if_name(net: &Network, id: IfId) -> &str {
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

fn not_modelled(what: &str) -> CommandError {
    CommandError::new(format!("fabsim: `{what}` is not modelled"))
}

fn ip_cmd(net: &Network, st: &State, dev: DeviceId, args: &[String], uid: u32) -> Result<String, CommandError> {
    let mut opts = addr::IpOpts::default();
    let mut rest = args;
    while let Some((opt, tail)) = rest.split_first().filter(|(a, _)| a.starts_with('-')) {
        match opt.as_str() {
            "-br" | "-brief" => opts.brief = true,
            "-d" | "-details" => opts.details = true,
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
    let flavor = if busybox(net, dev) {
        addr::IpFlavor::Busybox
    } else {
        addr::IpFlavor::Iproute2
    };
    match iproute_match(obj, IP_OBJECTS) {
        Some("route") => route::ip_route(net, st, dev, rest, uid),
        Some("address") => addr::ip_links(net, st, dev, rest, opts, addr::LinkView::Addr, flavor),
        Some("link") => addr::ip_links(net, st, dev, rest, opts, addr::LinkView::Link, flavor),
        Some(other) => Err(not_modelled(&format!("ip {other}"))),
        None => Err(CommandError::new(format!(
            "Object \"{obj}\" is unknown, try \"ip help\"."
        ))),
    }
}

/// A destination argument: fabsim has no resolver, so only dotted quads are hosts.
pub(crate) fn parse_host(tool: &str, arg: &str) -> Result<Ipv4Addr, CommandError> {
    arg.parse()
        .map_err(|_| CommandError::new(format!("{tool}: {arg}: Name or service not known")))
}

/// One command-line word as `getopt_long` sees it. Both libcs fabsim's tools run on (glibc for
/// iputils, musl for busybox) permute, so options may follow the operands.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Arg<'a> {
    Opt(char, Option<&'a str>),
    Operand(&'a str),
}

/// Why `getopt` rejected a word; each tool words the message as its libc does.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OptError {
    Unknown(char),
    MissingValue(char),
}

/// Short options: letters in `flags` stand alone (and may be grouped, `-qn`), letters in
/// `valued` take the rest of the word or the next word. `--` ends the options.
pub(super) fn getopt<'a>(args: &'a [String], flags: &str, valued: &str) -> Result<Vec<Arg<'a>>, OptError> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(word) = it.next() {
        if word == "--" {
            out.extend(it.by_ref().map(|w| Arg::Operand(w.as_str())));
            break;
        }
        let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) else {
            out.push(Arg::Operand(word));
            continue;
        };
        for (at, c) in letters.char_indices() {
            if flags.contains(c) {
                out.push(Arg::Opt(c, None));
            } else if valued.contains(c) {
                let rest = &letters[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    it.next().map(String::as_str)
                } else {
                    Some(rest)
                };
                out.push(Arg::Opt(c, Some(value.ok_or(OptError::MissingValue(c))?)));
                break;
            } else {
                return Err(OptError::Unknown(c));
            }
        }
    }
    Ok(out)
}

/// The device runs busybox's userland (an image flagged `busybox` in catalogue/images.yaml):
/// its `ping` and `ip` print busybox's formats.
fn busybox(net: &Network, dev: DeviceId) -> bool {
    net.devices
        .get(dev.idx())
        .and_then(|d| d.image.as_deref())
        .and_then(crate::catalogue::image)
        .is_some_and(|i| i.busybox)
}

#[cfg(test)]
mod tests {
    use crate::views::testnet::*;

    #[test]
    fn unknown_commands_name_themselves() {
        let (lab, d) = kw1_s0c();
        let err = lab.run(d, "ifconfig -a").unwrap_err();
        assert!(err.message.starts_with("ifconfig: command not found"));
        assert!(err.message.contains("tracepath"));
        let err = lab.run(d, "ip neigh").unwrap_err();
        assert_eq!(err.message, "fabsim: `ip neighbor` is not modelled");
        let err = lab.run(d, "ip foo").unwrap_err();
        assert_eq!(err.message, "Object \"foo\" is unknown, try \"ip help\".");
    }

    #[test]
    fn getopt_permutes_groups_and_takes_values() {
        use super::{getopt, Arg, OptError};
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let args = words("1.1.1.1 -qc3 -W 2 -- -x");
        assert_eq!(
            getopt(&args, "q", "cW"),
            Ok(vec![
                Arg::Operand("1.1.1.1"),
                Arg::Opt('q', None),
                Arg::Opt('c', Some("3")),
                Arg::Opt('W', Some("2")),
                Arg::Operand("-x"),
            ])
        );
        assert_eq!(getopt(&words("-x"), "q", "c"), Err(OptError::Unknown('x')));
        assert_eq!(getopt(&words("1.1.1.1 -c"), "q", "c"), Err(OptError::MissingValue('c')));
    }
}
