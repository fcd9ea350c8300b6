//! iputils `tracepath` and Debian `traceroute` 2.1, shared by Linux hosts and EOS (whose
//! `traceroute` is the Linux tool without `-n`); text from pure functions of the probe results.

use std::net::Ipv4Addr;

use super::{fib, parse_host};
use crate::dataplane::{self, IcmpError, Probe, ProbeKind, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, Network};
use crate::views::tcpdump::{Sent, TraceCapture};
use crate::views::{ms3, CommandError};

/// Hops tracepath and traceroute try before giving up (both tools' default).
const MAX_HOPS: u8 = 30;

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

pub(super) fn tracepath(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
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
            // A REJECT (kube-proxy's, a Service without endpoints) answers like the destination.
            IcmpError::PortUnreachable => (
                from,
                "reached".to_string(),
                Some(format!("hops {ttl} back {} ", hops_back(*back))),
            ),
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

pub(super) fn traceroute(
    net: &Network,
    st: &State,
    dev: DeviceId,
    args: &[String],
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let (dst, numeric) = trace_args("traceroute", args)?;
    Ok(run_traceroute(net, st, dev, dst, numeric, sent))
}

/// Run traceroute's UDP probes through the data plane; what they put on the wire goes to `sent`.
pub(crate) fn run_traceroute(
    net: &Network,
    st: &State,
    dev: DeviceId,
    dst: Ipv4Addr,
    numeric: bool,
    sent: &mut Vec<Sent>,
) -> String {
    let mut trace = TraceCapture::starting(st.time_ms);
    let text = traceroute_text(dst, numeric, |ttl, n| {
        trace.send(traceroute_probe(net, st, dev, dst, ttl, n), n)
    });
    sent.push(Sent::Trace(trace));
    text
}

/// Traceroute's probe number `n` (from 0) with TTL `ttl`: UDP to port 33434 + n.
fn traceroute_probe(net: &Network, st: &State, dev: DeviceId, dst: Ipv4Addr, ttl: u8, n: u32) -> Probe {
    let kind = ProbeKind::Udp {
        dst_port: 33434u16.wrapping_add(n as u16),
    };
    dataplane::probe(net, st, dev, dst, ttl, kind, n)
}

/// The whole text of traceroute 2.1 (§4.4, traceroute.c `print_probe`, `do_it`): 3 probes per
/// hop; an address is printed when it differs from the previous answered probe of the hop
/// (`ADDR (ADDR)` without `-n`, as an address with no reverse name prints); `  %.3f ms`; `!N`/
/// `!H` after unreachables; ` *` when nothing came back. The run ends after the hop where a
/// probe reached the destination or got an unreachable (`final`), or after 30 hops.
fn traceroute_text(dst: Ipv4Addr, numeric: bool, mut send: impl FnMut(u8, u32) -> Probe) -> String {
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
                    IcmpError::PortUnreachable => (*from, "", true),
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
    use super::*;
    use crate::views::testnet::*;

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
}
