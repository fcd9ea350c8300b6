//! `--to containerlab`: `lab.clab.yml` for `containerlab deploy` plus the per-node files. EOS
//! switches become `frrouting/frr` containers on their exported `frr.conf` (with a `daemons`
//! file enabling what it needs); Linux hosts and pods become Debian bookworm containers that
//! install BIRD 1.6.8 and iproute2 from Debian at start (bookworm ships bird 1.6.8), then
//! configure addresses and routes as the netns lab does; a multi-access segment is a Linux
//! bridge in an Alpine container. Links keep the model's interface names.

use std::fmt::Write;

use super::{bird, devices, file_name, frr, host_routes, kernel_ifname, l2_domains, runs_bird, Lab, Options};
use crate::engine::State;
use crate::model::{DeviceId, DeviceKind, Network};

/// FRR's own image at the release the FRR profile was read from (bgp-profiles.md).
const FRR_IMAGE: &str = "quay.io/frrouting/frr:8.4.4";
const HOST_IMAGE: &str = "debian:bookworm-slim";
const BRIDGE_IMAGE: &str = "alpine:3.19";

pub(super) fn write(net: &Network, st: &State, opts: &Options, lab: &mut Lab) {
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# fabsim export --to containerlab: deploy with `containerlab deploy -t lab.clab.yml`."
    );
    for l in &lab.limits {
        let _ = writeln!(y, "# LIMIT: {l}");
    }
    let _ = writeln!(y, "name: {}\ntopology:\n  nodes:", opts.prefix);
    for (id, dev) in devices(net) {
        let dir = file_name(&dev.name);
        let _ = writeln!(y, "    {dir}:\n      kind: linux");
        if dev.kind == DeviceKind::Eos {
            let _ = writeln!(
                y,
                "      image: {FRR_IMAGE}\n      binds:\n        - {dir}/frr.conf:/etc/frr/frr.conf\n        - {dir}/daemons:/etc/frr/daemons"
            );
            lab.add(format!("{dir}/frr.conf"), frr::frr_conf(net, st, id, opts));
            lab.add(format!("{dir}/daemons"), daemons_file(&frr::daemons(dev)));
            let exec = addresses(net, st, id);
            write_exec(&mut y, &exec);
        } else {
            let _ = writeln!(y, "      image: {HOST_IMAGE}");
            let mut exec = vec![
                "sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends bird iproute2 iputils-ping'"
                    .to_string(),
            ];
            let forward = u8::from(dev.ip_forward);
            exec.push(format!("sysctl -w net.ipv4.ip_forward={forward}"));
            exec.extend(addresses(net, st, id));
            exec.extend(
                host_routes(net, st, id)
                    .into_iter()
                    .map(|r| format!("ip route add {r}")),
            );
            if runs_bird(net, st, id) {
                let _ = writeln!(y, "      binds:\n        - {dir}:/etc/bird");
                for (name, text) in bird::stock_files(net, id) {
                    lab.add(format!("{dir}/{name}"), text);
                }
                exec.push("sh -c 'cd /etc/bird && bird -c bird.cfg'".to_string());
            }
            write_exec(&mut y, &exec);
        }
    }
    let segments: Vec<usize> = l2_domains(net)
        .filter(|(_, l)| l.members.len() != 2)
        .map(|(i, _)| i)
        .collect();
    for i in &segments {
        let _ = writeln!(
            y,
            "    seg{i}:\n      kind: linux\n      image: {BRIDGE_IMAGE}\n      exec:\n        - ip link add br0 type bridge\n        - ip link set br0 up"
        );
    }
    y.push_str("  links:\n");
    for (i, l2) in l2_domains(net) {
        let ends: Vec<String> = l2
            .members
            .iter()
            .map(|m| {
                format!(
                    "{}:{}",
                    file_name(&net.device(net.iface(*m).device).name),
                    kernel_ifname(net, *m)
                )
            })
            .collect();
        if ends.len() == 2 {
            let _ = writeln!(y, "    - endpoints: [\"{}\", \"{}\"]", ends[0], ends[1]);
        } else {
            for (k, end) in ends.iter().enumerate() {
                let _ = writeln!(y, "    - endpoints: [\"seg{i}:p{k}\", \"{end}\"]");
            }
        }
    }
    lab.add("lab.clab.yml", y);
}

fn write_exec(y: &mut String, exec: &[String]) {
    if exec.is_empty() {
        return;
    }
    y.push_str("      exec:\n");
    for e in exec {
        let _ = writeln!(y, "        - {}", yaml_quote(e));
    }
}

fn yaml_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// FRR's `/etc/frr/daemons`: the ones the configuration needs.
fn daemons_file(on: &[&str]) -> String {
    let mut o = String::from("# FRR daemons this switch's configuration needs (fabsim export)\n");
    for d in ["bgpd", "ospfd", "staticd"] {
        let _ = writeln!(o, "{d}={}", if on.contains(&d) { "yes" } else { "no" });
    }
    o.push_str("vtysh_enable=yes\nzebra_options=\"  -A 127.0.0.1 -s 90000000\"\n");
    o
}

fn addresses(net: &Network, st: &State, id: DeviceId) -> Vec<String> {
    net.device(id)
        .ifaces
        .iter()
        .filter(|i| net.iface(**i).l2.is_some())
        .filter_map(|i| {
            st.ifaces[i.idx()]
                .addr
                .map(|a| format!("ip addr add {a} dev {}", kernel_ifname(net, *i)))
        })
        .collect()
}
