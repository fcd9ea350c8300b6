//! `--to netns`: `up.sh` builds the lab in Linux network namespaces on this machine, `down.sh`
//! removes it. One namespace per device (`PREFIX-DEVICE`), a veth pair per link named as the
//! model names the ports, a namespace with a bridge per multi-access segment, the addresses
//! and host routes of the exported moment, the sysctls (ip_forward, rp_filter off, proxy ARP on
//! Calico's `cali…` veths so a pod's 169.254.1.1 gateway answers), FRR (zebra, staticd, ospfd,
//! bgpd with `-N NS`: their own pid files and vty sockets under /var/run/frr/NS) on switches,
//! BIRD (`-s SOCK -P PID`) on hosts, and felix's natOutgoing MASQUERADE on Calico nodes as an
//! nftables table (`nat_outgoing`; the lab's machines have no iptables).
//!
//! Safety: `up.sh` records everything it creates (namespaces, directories, daemon PIDs with
//! their command names) in `/run/fabsim/PREFIX/created` as it goes; `down.sh` removes exactly
//! those, kills only recorded PIDs that still run the recorded command, and never touches the
//! root namespace's interfaces or routes (veths are created inside the namespaces).

use std::fmt::Write;

use super::{
    bird, cabled_ifaces, devices, file_name, frr, host_routes, kernel_ifname, l2_domains, netns_name, runs_bird, Lab,
    Options,
};
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, Masquerade, Network};
use ipnet::Ipv4Net;

/// Where the running lab keeps its record, sockets and logs.
pub fn run_dir(prefix: &str) -> String {
    format!("/run/fabsim/{prefix}")
}

/// The BIRD control socket of a device's namespace (`birdc -s`).
pub fn bird_socket(prefix: &str, net: &Network, dev: DeviceId) -> String {
    format!("{}/{}.ctl", run_dir(prefix), file_name(&net.device(dev).name))
}

const FUNCTIONS: &str = r#"
record() { echo "$*" >> "$RUN/created"; }
netns() { ip netns add "$1"; record netns "$1"; ip -n "$1" link set lo up
  ip netns exec "$1" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.lo.rp_filter=0; }
# wait_pid FILE NAME: the daemon's pid once it has written it; recorded with its command name.
wait_pid() { i=0; while [ ! -s "$1" ]; do i=$((i+1)); [ $i -gt 100 ] && { echo "no pid file $1" >&2; exit 1; }; sleep 0.1; done
  record pid "$(cat "$1")" "$2"; }
# frr NS DIR DAEMON...: FRR in namespace NS, each daemon on DIR/DAEMON.conf (its blocks of
# DIR/frr.conf), sockets and pid files under /var/run/frr/NS (-N).
frr() { ns=$1; dir=$2; shift 2; d=/var/run/frr/$ns
  mkdir -p "$d"; record dir "$d"; chown frr:frr "$d"
  for daemon in "$@"; do
    ip netns exec "$ns" /usr/lib/frr/$daemon -d -N "$ns" -f "$dir/$daemon.conf" -i "$d/$daemon.pid" -P 0 --log file:"$d/$daemon.log" 2>>"$d/start.log"
    wait_pid "$d/$daemon.pid" "$daemon"
  done; }
# bird NS DIR NAME: BIRD 1.6 in namespace NS on DIR/bird.cfg (includes relative to DIR).
bird_ns() { ( cd "$2" && ip netns exec "$1" bird -c bird.cfg -s "$RUN/$3.ctl" -P "$RUN/$3.pid" )
  wait_pid "$RUN/$3.pid" bird; }
"#;

/// The variables every script of the lab starts with (`LAB`: the directory the script is in).
fn variables(p: &str) -> String {
    format!(
        "set -eu\nPREFIX={p}\nLAB=$(cd \"$(dirname \"$0\")\" && pwd)\nRUN={}\n",
        run_dir(p)
    )
}

/// A script that runs `body` — lines as `up.sh` writes them — on the running lab `prefix`,
/// with up.sh's variables and functions, so that what it creates is recorded for `down.sh`
/// too. `tests/differential.rs` moves a running lab from one step's export to the next's
/// with it. Written into the lab's directory (`$LAB` is the script's own).
pub fn change_script(prefix: &str, body: &str) -> String {
    format!(
        "#!/bin/sh\n# Changes the running lab {prefix} (its up.sh's lines).\n{}{FUNCTIONS}\n{body}",
        variables(prefix)
    )
}

pub(super) fn write(net: &Network, st: &State, opts: &Options, lab: &mut Lab) {
    let p = &opts.prefix;
    let mut up = String::new();
    up.push_str("#!/bin/sh\n# Builds the lab fabsim exported in network namespaces (fabsim export --to netns).\n");
    up.push_str("# Needs root, iproute2, nftables, FRR 8.4 (/usr/lib/frr) and BIRD 1.6. Remove it with down.sh.\n");
    for l in &lab.limits {
        let _ = writeln!(up, "# LIMIT: {l}");
    }
    up.push_str(&variables(p));
    up.push_str(
        "if [ -e \"$RUN/created\" ]; then echo \"lab $PREFIX is already up (run down.sh)\" >&2; exit 1; fi\n\
         mkdir -p \"$RUN\"\n: > \"$RUN/created\"\n",
    );
    up.push_str(FUNCTIONS);
    for l in &lab.limits {
        let _ = writeln!(up, "echo \"fabsim lab $PREFIX: {}\" >&2", l.replace('"', "'"));
    }
    up.push_str("\n# Namespaces\n");
    for (id, _) in devices(net) {
        let _ = writeln!(up, "netns {}", netns_name(p, net, id));
    }
    cabling(net, p, &mut up);
    up.push_str("\n# Addresses, interfaces, sysctls\n");
    for (id, _) in devices(net) {
        addressing(net, st, p, id, &mut up);
    }
    up.push_str("\n# Host routes (FRR and BIRD install their own)\n");
    for (id, dev) in devices(net) {
        if dev.kind == DeviceKind::Linux && st.devices[id.idx()].powered {
            let ns = netns_name(p, net, id);
            for route in host_routes(net, st, id) {
                let _ = writeln!(up, "ip -n {ns} route add {route}");
            }
        }
    }
    up.push_str("\n# felix's natOutgoing (nftables; the namespace takes it with it)\n");
    for (id, dev) in devices(net) {
        let Some(masq) = dev.masquerade.as_ref().filter(|_| st.devices[id.idx()].powered) else {
            continue;
        };
        let dir = file_name(&dev.name);
        let _ = writeln!(
            up,
            "ip netns exec {} nft -f \"$LAB/{dir}/nat-outgoing.nft\"",
            netns_name(p, net, id)
        );
        lab.add(format!("{dir}/nat-outgoing.nft"), nat_outgoing(masq));
    }
    up.push_str("\n# Routing daemons\n");
    for (id, dev) in devices(net) {
        if !st.devices[id.idx()].powered {
            continue;
        }
        let ns = netns_name(p, net, id);
        let dir = file_name(&dev.name);
        if dev.kind == DeviceKind::Eos {
            let daemons = frr::daemons(dev);
            let _ = writeln!(up, "frr {ns} \"$LAB/{dir}\" {}", daemons.join(" "));
            let conf = frr::frr_conf(net, st, id, opts);
            for daemon in daemons {
                lab.add(format!("{dir}/{daemon}.conf"), frr::daemon_conf(&conf, daemon));
            }
            lab.add(format!("{dir}/frr.conf"), conf);
        } else if runs_bird(net, st, id) {
            let _ = writeln!(up, "bird_ns {ns} \"$LAB/{dir}\" {dir}");
            for (name, text) in bird::stock_files(net, id) {
                lab.add(format!("{dir}/{name}"), text);
            }
        }
    }
    up.push_str("echo \"fabsim lab $PREFIX is up\"\n");
    lab.add_script("up.sh", up);
    lab.add_script("down.sh", down(p));
}

/// felix's natOutgoing as nftables: felix (iptables mode, `felix/rules/nat.go`
/// `makeNATOutgoingRuleIPTables`, `static.go` `StaticNATPostroutingChains`) hooks
/// `cali-POSTROUTING` into the nat table's POSTROUTING, jumps to `cali-nat-outgoing` and there
/// masquerades `-m set --match-set cali40masq-ipam-pools src -m set ! --match-set
/// cali40all-ipam-pools dst`. Here the same chain and sets in a table of their own, at the
/// priority of iptables' nat POSTROUTING (srcnat, 100); the sets are the model's
/// (`model::Masquerade`, from `Calico::nat_outgoing`).
fn nat_outgoing(m: &Masquerade) -> String {
    let set = |name: &str, nets: &[Ipv4Net]| {
        let elements: Vec<String> = nets.iter().map(|n| n.trunc().to_string()).collect();
        let elements = if elements.is_empty() {
            String::new()
        } else {
            format!("\t\telements = {{ {} }}\n", elements.join(", "))
        };
        // auto-merge: overlapping pools are one interval, as hash:net would match them.
        format!("\tset {name} {{\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\tauto-merge\n{elements}\t}}\n")
    };
    format!(
        "# felix's natOutgoing (fabsim export --to netns; nft -f in the node's namespace)\n\
         table ip calico {{\n{}{}\tchain cali-nat-outgoing {{\n\
         \t\tip saddr @cali40masq-ipam-pools ip daddr != @cali40all-ipam-pools masquerade\n\t}}\n\
         \tchain cali-POSTROUTING {{\n\
         \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
         \t\tjump cali-nat-outgoing\n\t}}\n}}\n",
        set("cali40masq-ipam-pools", &m.src),
        set("cali40all-ipam-pools", &m.not_dst),
    )
}

/// Links become veth pairs created inside the two namespaces; segments a bridge in a
/// namespace of their own.
fn cabling(net: &Network, p: &str, up: &mut String) {
    up.push_str("\n# Links (veth pairs) and segments (a bridge namespace each)\n");
    for (i, l2) in l2_domains(net) {
        let members: Vec<_> = l2.members.iter().filter(|m| net.iface(**m).tunnel.is_none()).collect();
        if let [a, b] = members.as_slice() {
            let (na, nb) = (
                netns_name(p, net, net.iface(**a).device),
                netns_name(p, net, net.iface(**b).device),
            );
            let _ = writeln!(
                up,
                "ip -n {na} link add {} type veth peer name {} netns {nb}",
                kernel_ifname(net, **a),
                kernel_ifname(net, **b)
            );
        } else {
            let seg = format!("{p}-seg{i}");
            let _ = writeln!(
                up,
                "# segment {}\nnetns {seg}\nip -n {seg} link add br0 type bridge\nip -n {seg} link set br0 up",
                l2.name
            );
            for (k, m) in members.iter().enumerate() {
                let ns = netns_name(p, net, net.iface(**m).device);
                let _ = writeln!(
                    up,
                    "ip -n {seg} link add p{k} type veth peer name {} netns {ns}\nip -n {seg} link set p{k} master br0 up",
                    kernel_ifname(net, **m)
                );
            }
        }
    }
}

fn addressing(net: &Network, st: &State, p: &str, id: DeviceId, up: &mut String) {
    let dev = net.device(id);
    let ns = netns_name(p, net, id);
    let forward = dev.kind == DeviceKind::Eos || dev.ip_forward;
    let _ = writeln!(
        up,
        "ip netns exec {ns} sysctl -qw net.ipv4.ip_forward={}",
        u8::from(forward)
    );
    // EOS loopbacks are dummies (always up, no carrier to lose).
    let loopbacks = dev
        .ifaces
        .iter()
        .copied()
        .filter(|i| dev.kind == DeviceKind::Eos && net.iface(*i).l2.is_none() && net.iface(*i).routed);
    for ifid in cabled_ifaces(net, id).chain(loopbacks) {
        let ifc = net.iface(ifid);
        let name = kernel_ifname(net, ifid);
        if ifc.l2.is_none() {
            let _ = writeln!(up, "ip -n {ns} link add {name} type dummy");
        }
        let ist = &st.ifaces[ifid.idx()];
        if let Some(addr) = ist.addr {
            // networkd gives a DHCP address's prefix route metric 100 (FIDELITY.md, Linux hosts).
            let metric = if ist.dhcp && dev.kind == DeviceKind::Linux {
                " metric 100"
            } else {
                ""
            };
            let _ = writeln!(up, "ip -n {ns} addr add {addr} dev {name}{metric}");
        }
        if ifc.proxy_arp {
            let _ = writeln!(up, "ip netns exec {ns} sysctl -qw net.ipv4.conf.{name}.proxy_arp=1");
        }
        if ist.up && st.devices[id.idx()].powered {
            let _ = writeln!(up, "ip -n {ns} link set {name} up");
        }
    }
}

fn down(p: &str) -> String {
    format!(
        r#"#!/bin/sh
# Removes the lab up.sh built: only what it recorded in {run}/created. Daemons are killed
# only if their PID still runs the recorded command; namespaces and directories it created
# are deleted (the veths go with their namespaces).
set -u
RUN={run}
[ -e "$RUN/created" ] || {{ echo "lab {p} is not up"; exit 0; }}
while read -r kind a b; do
  if [ "$kind" = pid ] && [ "$(cat /proc/$a/comm 2>/dev/null)" = "$b" ]; then kill "$a"; fi
done < "$RUN/created"
i=0
while read -r kind a b; do
  while [ "$kind" = pid ] && [ "$(cat /proc/$a/comm 2>/dev/null)" = "$b" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
done < "$RUN/created"
while read -r kind a b; do
  if [ "$kind" = pid ] && [ "$(cat /proc/$a/comm 2>/dev/null)" = "$b" ]; then kill -9 "$a"; fi
done < "$RUN/created"
tac "$RUN/created" | while read -r kind a b; do
  case "$kind" in
    netns) ip netns del "$a" 2>/dev/null ;;
    dir) rm -rf "$a" ;;
  esac
done
rm -rf "$RUN"
echo "fabsim lab {p} is down"
"#,
        run = run_dir(p)
    )
}
