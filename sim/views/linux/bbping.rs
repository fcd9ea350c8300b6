//! busybox `ping` (FEATURE_FANCY_PING, networking/ping.c), as alpine containers run it: the
//! same probes as iputils ([`run_pings`]), printed busybox's way — seq from 0, `N packets
//! received`, an integer loss and `round-trip min/avg/max` (eos-linux-formats.md §4.2).

use std::net::Ipv4Addr;

use super::ping::{arrivals, run_pings, MAX_PING_COUNT};
use super::{getopt, parse_host, Arg, OptError};
use crate::dataplane::{Probe, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, Network, VendorProfile};
use crate::views::tcpdump::{PingCapture, Sent};
use crate::views::{ms3, CommandError};

/// busybox sends one request a second (`-i` defaults to 1).
const INTERVAL_US: u64 = 1_000_000;
/// `MAXWAIT`: seconds `-W` waits after the last request when nothing came back.
const MAXWAIT_S: u64 = 10;
/// The largest `-s` a raw ICMP socket can send (65535 − 20 IP − 8 ICMP); busybox accepts up
/// to 65535 and `sendto` fails beyond this.
const MAX_DATALEN: u64 = 65507;

/// What one busybox ping run was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct BbPing {
    pub data_bytes: u64,
    /// Requests sent before the run ends (from `-c`, `-w` or fabsim's bound).
    pub count: u64,
    /// When the run prints its statistics, µs after the first request: `None` = at the
    /// `-c` count's end (busybox then waits `-W` seconds, or about two of the slowest round
    /// trips once something came back); `Some(t)` = the `-w` deadline.
    pub deadline_us: Option<u64>,
    /// `-W`, seconds (0: no alarm, wait for every answer).
    pub wait_s: u64,
    pub quiet: bool,
}

/// busybox's `xatoi_positive` / `xatou16` errors (libbb/xatonum_template.c).
fn number(v: &str, max: u64) -> Result<u64, CommandError> {
    if !v.bytes().all(|b| b.is_ascii_digit()) || v.is_empty() {
        return Err(CommandError::new(format!("ping: invalid number '{v}'")));
    }
    v.parse::<u64>()
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| CommandError::new(format!("ping: number {v} is not in 0..{max} range")))
}

fn usage() -> CommandError {
    CommandError::new(
        "Usage: ping [OPTIONS] HOST\n\
         (fabsim's busybox ping accepts: -c CNT -s SIZE -t TTL -W SEC -w SEC -q -n -p HEXBYTE -4)",
    )
}

/// `ping [-c CNT] [-s SIZE] [-t TTL] [-W SEC] [-w SEC] [-q] HOST` (getopt32 `"qvAc:+s:t:+w:+W:+I:np:i:4"`
/// with exactly one operand).
/// The requests and what came back go to `sent`.
pub(super) fn ping(
    net: &Network,
    st: &State,
    dev: DeviceId,
    args: &[String],
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let profile = net
        .devices
        .get(dev.idx())
        .map_or_else(VendorProfile::linux, |d| d.profile.clone());
    // musl's getopt messages; busybox then shows its usage.
    let words = getopt(args, "qvAn4", "cstwWIpi").map_err(|e| match e {
        OptError::Unknown(c) => CommandError::new(format!("ping: unrecognized option: {c}\n{}", usage())),
        OptError::MissingValue(c) => CommandError::new(format!("ping: option requires an argument: {c}\n{}", usage())),
    })?;
    const INT_MAX: u64 = i32::MAX as u64;
    let (mut count, mut size, mut ttl, mut deadline_s, mut wait_s, mut quiet) = (0, 56, 0, 0, MAXWAIT_S, false);
    let mut hosts = Vec::new();
    for word in words {
        match word {
            Arg::Operand(h) => hosts.push(h),
            Arg::Opt('c', Some(v)) => count = number(v, INT_MAX)?,
            Arg::Opt('s', Some(v)) => size = number(v, 65535)?,
            Arg::Opt('t', Some(v)) => ttl = number(v, INT_MAX)?,
            Arg::Opt('w', Some(v)) => deadline_s = number(v, INT_MAX)?,
            Arg::Opt('W', Some(v)) => wait_s = number(v, INT_MAX)?,
            Arg::Opt('q', _) => quiet = true,
            Arg::Opt(c @ ('I' | 'i' | 'A'), _) => {
                return Err(CommandError::new(format!("ping: -{c} is not modelled")));
            }
            // -v, -n and -4 change nothing for an IPv4 address; -p only fills the payload.
            Arg::Opt(..) => {}
        }
    }
    let [host] = hosts.as_slice() else {
        return Err(usage());
    };
    let dst = parse_host("ping", host)?;
    let run = BbPing {
        data_bytes: size,
        ..schedule(count, deadline_s, wait_s, u64::from(profile.ping_count), quiet)
    };
    // busybox sets IP_TTL only for a non-zero -t; the kernel refuses values above 255.
    let ttl = u8::try_from(ttl).ok().filter(|t| *t > 0).unwrap_or(profile.ttl);
    if run.data_bytes > MAX_DATALEN {
        return Ok(format!("{}ping: sendto: Message too long\n", header(dst, size)));
    }
    let probes = run_pings(net, st, dev, dst, run.count as u32, ttl);
    let text = bbping_text(dst, &run, &probes);
    // busybox numbers its requests from 0 (`icmp_seq = ntransmitted`, then `ntransmitted++`).
    let sends = send_times(probes.len());
    sent.push(Sent::Ping(PingCapture::of(
        run.data_bytes as u32,
        0,
        probes,
        sends,
        st.time_ms,
    )));
    Ok(text)
}

/// When each of `n` requests leaves, µs after the first: one a second, replies or not.
fn send_times(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| i * INTERVAL_US).collect()
}

/// How many requests go out and when the run ends. `-c 0` (or none) means "until ^C" in
/// busybox; `-w` then ends it at the deadline (the check runs before each send, so `-w N`
/// sends N requests). Without either, fabsim ends it after the profile's bare-ping count as
/// if ^C came then, exactly like `-c COUNT` — the same bound the iputils view uses.
fn schedule(count: u64, deadline_s: u64, wait_s: u64, bare: u64, quiet: bool) -> BbPing {
    let by_deadline = deadline_s.min(MAX_PING_COUNT);
    let (count, deadline_us) = match (count, by_deadline) {
        (0, 0) => (bare, None),
        (c, 0) => (c.min(MAX_PING_COUNT), None),
        (c, w) if c == 0 || c > w => (w, Some(w * INTERVAL_US)),
        (c, _) => (c, None),
    };
    BbPing {
        data_bytes: 56,
        count,
        deadline_us,
        wait_s,
        quiet,
    }
}

fn header(dst: Ipv4Addr, size: u64) -> String {
    format!("PING {dst} ({dst}): {size} data bytes\n")
}

/// When the statistics are printed: at the deadline, or after the last request (busybox
/// `sendping_tail`) `-W` seconds if nothing had come back by then, else `tmax / (512*1024)`
/// seconds (about two of the slowest round trips so far, at least one).
fn end_of_run(run: &BbPing, sends: &[u64], probes: &[Probe]) -> u64 {
    if let Some(d) = run.deadline_us {
        return d;
    }
    let last = sends.last().copied().unwrap_or(0);
    let tmax = arrivals(sends, probes)
        .into_iter()
        .filter(|(at, i)| *at < last && matches!(probes[*i].outcome, ProbeOutcome::Reply { .. }))
        .map(|(_, i)| probes[i].rtt_us)
        .max();
    let expire_s = match tmax {
        None if run.wait_s == 0 => return u64::MAX,
        None => run.wait_s,
        Some(t) => (t / (512 * 1024)).max(1),
    };
    last.saturating_add(expire_s * 1_000_000)
}

/// The whole text of a busybox ping that got these results (seq = index). ICMP errors print
/// nothing: `unpack4` first compares the ICMP header's id field with its own, and in a
/// Destination Unreachable or Time Exceeded that field is the unused (zero) word, so the
/// error is dropped as "not our ping" — it only counts as a lost request.
pub(super) fn bbping_text(dst: Ipv4Addr, run: &BbPing, probes: &[Probe]) -> String {
    let mut out = header(dst, run.data_bytes);
    if probes.first().is_some_and(|p| p.outcome == ProbeOutcome::LocalNoRoute) {
        out.push_str("ping: sendto: Network is unreachable\n");
        return out;
    }
    let sends = send_times(probes.len());
    let end = end_of_run(run, &sends, probes);
    // Round trips are known only when the send time fits in the data (4 bytes or more).
    let timed = run.data_bytes >= 4;
    let (mut received, mut rtts) = (0u64, Vec::new());
    for (at, i) in arrivals(&sends, probes) {
        let ProbeOutcome::Reply { from, ttl } = probes[i].outcome else {
            continue;
        };
        if at >= end {
            break;
        }
        let rtt = probes[i].rtt_us;
        received += 1;
        if timed {
            rtts.push(rtt);
        }
        if run.quiet {
            continue;
        }
        out.push_str(&format!("{} bytes from {from}: seq={i} ttl={ttl}", run.data_bytes + 8));
        if timed {
            out.push_str(&format!(" time={} ms", ms3(rtt)));
        }
        out.push('\n');
    }
    let sent = probes.len() as u64;
    out.push_str(&format!(
        "\n--- {dst} ping statistics ---\n{sent} packets transmitted, {received} packets received, {}% packet loss\n",
        (sent - received) * 100 / sent.max(1)
    ));
    if let (Some(min), Some(max)) = (rtts.iter().min(), rtts.iter().max()) {
        let avg = rtts.iter().sum::<u64>() / rtts.len() as u64;
        out.push_str(&format!(
            "round-trip min/avg/max = {}/{}/{} ms\n",
            ms3(*min),
            ms3(avg),
            ms3(*max)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::IcmpError;
    use crate::views::testnet::*;

    fn c(count: u64) -> BbPing {
        schedule(count, 0, MAXWAIT_S, 5, false)
    }

    #[test]
    fn replies_seed_s1b() {
        // seed-lab.md s1b, test pod → controller; the lab's ^C after two replies is `-c 2`.
        let probes = replies("10.66.207.66", 62, &[822, 808]);
        assert_eq!(
            bbping_text(ip("10.66.207.66"), &c(2), &probes),
            "PING 10.66.207.66 (10.66.207.66): 56 data bytes\n\
             64 bytes from 10.66.207.66: seq=0 ttl=62 time=0.822 ms\n\
             64 bytes from 10.66.207.66: seq=1 ttl=62 time=0.808 ms\n\
             \n\
             --- 10.66.207.66 ping statistics ---\n\
             2 packets transmitted, 2 packets received, 0% packet loss\n\
             round-trip min/avg/max = 0.808/0.815/0.822 ms\n"
        );
    }

    #[test]
    fn errors_and_losses_are_silent() {
        let probes = [
            reply("10.66.52.3", 62, 1_224),
            error("10.0.137.1", IcmpError::NetUnreachable, 500),
            lost(),
        ];
        assert_eq!(
            bbping_text(ip("10.66.52.3"), &c(3), &probes),
            "PING 10.66.52.3 (10.66.52.3): 56 data bytes\n\
             64 bytes from 10.66.52.3: seq=0 ttl=62 time=1.224 ms\n\
             \n\
             --- 10.66.52.3 ping statistics ---\n\
             3 packets transmitted, 1 packets received, 66% packet loss\n\
             round-trip min/avg/max = 1.224/1.224/1.224 ms\n"
        );
        let none = [probe(ProbeOutcome::LocalNoRoute, 0)];
        assert_eq!(
            bbping_text(ip("8.8.8.8"), &c(1), &none),
            "PING 8.8.8.8 (8.8.8.8): 56 data bytes\nping: sendto: Network is unreachable\n"
        );
    }

    #[test]
    fn the_run_ends_when_busybox_stops_listening() {
        // -c 1: the only reply took 3 s; nothing had come back at the send, so -W (10 s) waits.
        let slow = [reply("10.0.0.1", 64, 3_000_000)];
        assert!(bbping_text(ip("10.0.0.1"), &c(1), &slow).contains("seq=0 ttl=64 time=3000.000 ms"));
        let w2 = schedule(1, 0, 2, 5, false);
        assert!(bbping_text(ip("10.0.0.1"), &w2, &slow).contains("1 packets transmitted, 0 packets received, 100%"));
        // After a 1 ms reply, the last request is waited for only one second.
        let late = [reply("10.0.0.1", 64, 1_000), reply("10.0.0.1", 64, 1_500_000)];
        assert!(bbping_text(ip("10.0.0.1"), &c(2), &late).contains("2 packets transmitted, 1 packets received, 50%"));
        // -w 3 without -c: three requests, statistics at 3 s.
        assert_eq!(schedule(0, 3, 10, 5, false).count, 3);
        assert_eq!(schedule(0, 3, 10, 5, false).deadline_us, Some(3_000_000));
        assert_eq!(schedule(2, 3, 10, 5, false), c(2));
        assert_eq!(c(0).count, 5);
    }

    #[test]
    fn options_as_busybox_parses_them() {
        let mut lab = Lab::default();
        let d = lab.device("pod", crate::model::DeviceKind::Linux);
        lab.net.devices[d.idx()].image = Some("alpine".into());
        assert!(lab.err(d, "ping").starts_with("Usage: ping [OPTIONS] HOST"));
        assert!(lab.err(d, "ping 1.1.1.1 2.2.2.2").starts_with("Usage:"));
        assert!(lab
            .err(d, "ping -x 1.1.1.1")
            .starts_with("ping: unrecognized option: x\nUsage:"));
        assert!(lab
            .err(d, "ping 1.1.1.1 -c")
            .starts_with("ping: option requires an argument: c"));
        assert_eq!(lab.err(d, "ping -c x 1.1.1.1"), "ping: invalid number 'x'");
        assert_eq!(
            lab.err(d, "ping -s 70000 1.1.1.1"),
            "ping: number 70000 is not in 0..65535 range"
        );
        // No route: the header, then sendto's error.
        assert_eq!(
            lab.run(d, "ping 10.0.0.1 -c 2 -q -s 100").unwrap(),
            "PING 10.0.0.1 (10.0.0.1): 100 data bytes\nping: sendto: Network is unreachable\n"
        );
        assert_eq!(
            lab.run(d, "ping -s 65508 10.0.0.1").unwrap(),
            "PING 10.0.0.1 (10.0.0.1): 65508 data bytes\nping: sendto: Message too long\n"
        );
    }

    #[test]
    fn quiet_and_tiny_payloads() {
        let q = BbPing { quiet: true, ..c(1) };
        let out = bbping_text(ip("10.0.0.1"), &q, &[reply("10.0.0.1", 64, 45)]);
        assert!(!out.contains("bytes from"), "{out}");
        let tiny = BbPing { data_bytes: 3, ..c(1) };
        let out = bbping_text(ip("10.0.0.1"), &tiny, &[reply("10.0.0.1", 64, 45)]);
        assert!(out.contains("11 bytes from 10.0.0.1: seq=0 ttl=64\n"), "{out}");
        assert!(out.ends_with("1 packets received, 0% packet loss\n"), "{out}");
    }
}
