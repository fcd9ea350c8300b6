//! iputils `ping`: the probe schedule, reply lines and statistics of ping_common.c, shared by
//! Linux hosts (`ping -c N …`) and EOS (`ping … repeat N`, the same tool with other defaults).

use std::net::Ipv4Addr;

use super::{getopt, parse_host, Arg, OptError};
use crate::dataplane::{self, IcmpError, Probe, ProbeKind, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, Network, VendorProfile};
use crate::views::tcpdump::{PingCapture, Sent};
use crate::views::{ms3, CommandError};

/// How one build of iputils ping behaves: Linux hosts run it with defaults ([`PingStyle::linux`]),
/// EOS with its own ([`PingStyle::eos`]).
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

    /// EOS runs an older iputils: 72 data bytes by default, `connect: …` without the `ping: `
    /// prefix, and (as captures show `time 40ms` for 5 lost probes and `ipg/ewma` in every
    /// multi-probe summary) a 10 ms adaptive interval.
    pub fn eos(data_bytes: u32) -> Self {
        PingStyle {
            data_bytes,
            interval_us: 10_000,
            adaptive: true,
            no_route: "connect: Network is unreachable",
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
        IcmpError::PortUnreachable => "Destination Port Unreachable",
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
/// 0 if nothing was received). Between two sends ping takes in the replies that arrive, in
/// arrival order; one that arrives at the instant a send is due is taken first. Non-adaptive
/// pings send every `interval_us`. Adaptive ones re-derive the interval from the smoothed RTT
/// after each reply (ping_common.c `update_interval`, for root: no 200 ms floor); when the new
/// interval is already over, `pinger` sends at once, so no request leaves before the reply
/// that set its schedule.
fn timeline(style: &PingStyle, probes: &[Probe]) -> (Vec<u64>, i64) {
    let mut sends: Vec<u64> = Vec::with_capacity(probes.len());
    let mut taken = vec![false; probes.len()];
    let mut ewma8: i64 = 0;
    let mut interval = style.interval_us;
    // The earliest reply not yet taken in, among the requests sent so far: (arrival, index).
    let next_reply = |sends: &[u64], taken: &[bool]| {
        (0..sends.len())
            .filter(|j| !taken[*j] && matches!(probes[*j].outcome, ProbeOutcome::Reply { .. }))
            .map(|j| (sends[j].saturating_add(probes[j].rtt_us), j))
            .min()
    };
    let take = |j: usize, ewma8: &mut i64, interval: &mut u64| {
        // Clamped so that a nonsensical RTT cannot overflow the arithmetic.
        let t = probes[j].rtt_us.min(1 << 40) as i64;
        *ewma8 = if *ewma8 == 0 { t * 8 } else { *ewma8 + t - *ewma8 / 8 };
        if style.adaptive {
            *interval = ((*ewma8 / 8 + 500) / 1000) as u64 * 1000;
        }
    };
    for _ in probes {
        let send = match sends.last() {
            None => 0,
            Some(&prev) => loop {
                let due = prev.saturating_add(interval);
                match next_reply(&sends, &taken) {
                    Some((arrival, j)) if arrival <= due => {
                        taken[j] = true;
                        take(j, &mut ewma8, &mut interval);
                        if prev.saturating_add(interval) <= arrival {
                            break arrival;
                        }
                    }
                    _ => break due,
                }
            },
        };
        sends.push(send);
    }
    while let Some((_, j)) = next_reply(&sends, &taken) {
        taken[j] = true;
        take(j, &mut ewma8, &mut interval);
    }
    (sends, ewma8)
}

/// When each request left, µs after the first (the schedule [`ping_text`] prints from).
pub(crate) fn ping_send_times(style: &PingStyle, probes: &[Probe]) -> Vec<u64> {
    timeline(style, probes).0
}

/// Most requests outstanding at once: iputils `pipesize`, raised in `acknowledge` (ping.h) to
/// `ntransmitted - seq + 1` when an answer is processed — the answered request plus every later
/// one already sent. A request sent at the very instant an answer arrives was sent after it
/// (the order [`timeline`] uses), so with one request in flight at a time the pipe is 1.
fn pipe_size(sends: &[u64], probes: &[Probe]) -> usize {
    probes
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.outcome, ProbeOutcome::Reply { .. } | ProbeOutcome::Error { .. }))
        .map(|(j, p)| {
            let arrival = sends[j].saturating_add(p.rtt_us);
            1 + sends[j + 1..].iter().filter(|s| **s < arrival).count()
        })
        .max()
        .unwrap_or(1)
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

/// Every probe's answer time (send + round trip) and index, in the order answers arrive: the
/// order both pings print their lines in (a slow answer, such as an ARP timeout, can come
/// after later ones).
pub(super) fn arrivals(sends: &[u64], probes: &[Probe]) -> Vec<(u64, usize)> {
    let mut events: Vec<(u64, usize)> = probes
        .iter()
        .zip(sends)
        .enumerate()
        .map(|(i, (p, s))| (s.saturating_add(p.rtt_us), i))
        .collect();
    events.sort();
    events
}

/// The whole text of an iputils ping that got these results (icmp_seq = index + 1).
pub(crate) fn ping_text(dst: Ipv4Addr, style: &PingStyle, probes: &[Probe]) -> String {
    if probes.first().is_some_and(|p| p.outcome == ProbeOutcome::LocalNoRoute) {
        return format!("{}\n", style.no_route);
    }
    let size = style.data_bytes;
    let mut out = format!("PING {dst} ({dst}) {size}({}) bytes of data.\n", size + 28);
    let (sends, ewma8) = timeline(style, probes);
    for (_, i) in arrivals(&sends, probes) {
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

fn ping_usage() -> CommandError {
    CommandError::new(
        "ping: usage error: Destination address required\n\
         (fabsim's ping accepts: ping [-c COUNT] [-s SIZE] [-t TTL] [-n] ADDRESS)",
    )
}

/// Parse a numeric option value within `lo..=hi` the way iputils reports a bad one.
fn option_value(tool: &str, v: &str, lo: u64, hi: u64) -> Result<u64, CommandError> {
    v.parse::<u64>().ok().filter(|n| (lo..=hi).contains(n)).ok_or_else(|| {
        CommandError::new(format!(
            "{tool}: invalid argument: '{v}': out of range: {lo} <= value <= {hi}"
        ))
    })
}

/// Most probes fabsim sends for one ping (iputils has no limit; a run must end).
pub(super) const MAX_PING_COUNT: u64 = 10_000;

/// `ping [-c N] [-s SIZE] [-t TTL] [-n] ADDR`, options before or after the address (getopt).
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
    let mut count = u64::from(profile.ping_count);
    let mut size = u64::from(profile.ping_size);
    let mut ttl = u64::from(profile.ttl);
    let mut dst = None;
    // glibc's getopt messages.
    let words = getopt(args, "n", "cstI").map_err(|e| match e {
        OptError::Unknown(c) => CommandError::new(format!("ping: invalid option -- '{c}'")),
        OptError::MissingValue(c) => CommandError::new(format!("ping: option requires an argument -- '{c}'")),
    })?;
    for word in words {
        match word {
            Arg::Operand(a) => dst = Some(parse_host("ping", a)?),
            Arg::Opt('c', Some(v)) => count = option_value("ping", v, 1, MAX_PING_COUNT)?,
            Arg::Opt('s', Some(v)) => size = option_value("ping", v, 0, 65507)?,
            Arg::Opt('t', Some(v)) => ttl = option_value("ping", v, 1, 255)?,
            Arg::Opt('I', _) => {
                return Err(CommandError::new(
                    "ping: -I is not modelled (the data plane picks the source address)",
                ))
            }
            Arg::Opt(..) => {}
        }
    }
    let dst = dst.ok_or_else(ping_usage)?;
    let probes = run_pings(net, st, dev, dst, count as u32, ttl as u8);
    let style = PingStyle::linux(size as u32);
    let text = ping_text(dst, &style, &probes);
    sent.push(Sent::Ping(PingCapture::iputils(&style, probes, st.time_ms)));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::testnet::*;

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
    fn pipe_only_when_probes_overlap() {
        // Spine-1 → 8.8.8.8 at s0b: every reply (1 ms) is in before the next request, which
        // the adaptive interval (1 ms once the first reply is in) sends at that same instant.
        let out = ping_text(ip("8.8.8.8"), &PingStyle::eos(72), &replies("8.8.8.8", 99, &[1_000; 5]));
        assert!(
            out.ends_with("time 4ms\nrtt min/avg/max/mdev = 1.000/1.000/1.000/0.000 ms, ipg/ewma 1.000/1.000 ms\n"),
            "{out}"
        );
        // A reply slower than the 1 s interval: the second request left before it came back.
        let slow = [reply("10.0.11.1", 63, 1_500_000), reply("10.0.11.1", 63, 20_000)];
        let out = ping_text(ip("10.0.11.1"), &PingStyle::linux(56), &slow);
        assert!(out.ends_with(", pipe 2\n"), "{out}");
        // Adaptive: a request never leaves before the reply whose RTT set its interval (1.4 ms
        // rounds to 1 ms, already over when that reply arrives, so the next leaves at 1.4 ms).
        let (sends, _) = timeline(&PingStyle::eos(72), &replies("10.0.0.2", 64, &[1_400; 2]));
        assert_eq!(sends, [0, 1_400]);
        let (sends, _) = timeline(&PingStyle::linux(56), &slow);
        assert_eq!(sends, [0, 1_000_000]);
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
        let run = |c: &str| lab.run(d, c);
        assert!(lab.err(d, "ping").contains("Destination address required"));
        assert!(lab.err(d, "ping -c 0 1.1.1.1").contains("out of range"));
        assert!(lab.err(d, "ping -x 1.1.1.1").contains("invalid option -- 'x'"));
        assert!(run("ping -I ens3 1.1.1.1").is_err());
        assert!(lab.err(d, "ping foo").contains("Name or service not known"));
        // No interface, no route: the connect error is the whole output.
        assert_eq!(
            run("ping 10.0.11.1 -c2 -s 100 -t 3").unwrap(),
            "ping: connect: Network is unreachable\n"
        );
    }
}
