//! EOS `ping` and `traceroute`: EOS argument syntax (`repeat`, `size`, `vrf default`) on top of
//! the Linux tools EOS runs (§3); the text comes from `linux::ping` and `linux::trace`.

use super::{incomplete, invalid, keyword, unsupported};
use crate::engine::State;
use crate::model::{DeviceId, Network};
use crate::views::linux::{parse_host, ping_text, run_pings, run_traceroute, PingStyle};
use crate::views::tcpdump::{PingCapture, Sent};
use crate::views::CommandError;

const PING_OPTS: &[&str] = &["interval", "repeat", "size", "source", "timeout", "vrf"];

/// `ping [vrf default] ADDR [repeat N] [size N]`: iputils with EOS's defaults
/// ([`PingStyle::eos`]). The requests and what came back go to `sent`.
pub(super) fn ping(
    net: &Network,
    st: &State,
    dev: DeviceId,
    w: &[&str],
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let Some(profile) = net.devices.get(dev.idx()).map(|d| &d.profile) else {
        return Err(invalid());
    };
    let mut count = profile.ping_count;
    let mut size = profile.ping_size;
    let mut dst = None;
    let mut it = w.iter();
    while let Some(word) = it.next() {
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            dst = Some(parse_host("ping", word)?);
            continue;
        }
        let opt = keyword(word, PING_OPTS)?;
        let value = it.next().ok_or_else(incomplete)?;
        let number =
            |range: std::ops::RangeInclusive<u32>| value.parse().ok().filter(|n| range.contains(n)).ok_or_else(invalid);
        match opt {
            "repeat" => count = number(1..=10_000)?,
            "size" => size = number(36..=18_024)?,
            "vrf" if *value == "default" => {}
            "vrf" => return Err(CommandError::new(format!("% VRF {value} does not exist"))),
            other => return Err(unsupported(&["ping", other])),
        }
    }
    let dst = dst.ok_or_else(incomplete)?;
    let probes = run_pings(net, st, dev, dst, count, profile.ttl);
    let style = PingStyle::eos(size);
    let text = ping_text(dst, &style, &probes);
    sent.push(Sent::Ping(PingCapture::iputils(&style, probes, st.time_ms)));
    Ok(text)
}

/// `traceroute [vrf default] ADDR`: Linux traceroute without `-n`, so each hop shows as
/// `ADDR (ADDR)` (no reverse names). Its probes go to `sent`.
pub(super) fn traceroute(
    net: &Network,
    st: &State,
    dev: DeviceId,
    w: &[&str],
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let dst = match w {
        [addr] => parse_host("traceroute", addr)?,
        [vrf, name, addr] if keyword(vrf, &["vrf"]).is_ok() && *name == "default" => parse_host("traceroute", addr)?,
        [] => return Err(incomplete()),
        _ => return Err(invalid()),
    };
    Ok(run_traceroute(net, st, dev, dst, false, sent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::ProbeOutcome;
    use crate::model::DeviceKind;
    use crate::views::testnet::*;

    #[test]
    fn eos_ping_format_seed_s0b() {
        // seed-lab.md s0b, C11: Spine-1 → 8.8.8.8, five replies with ttl 99.
        let style = PingStyle::eos(72);
        let probes = replies("8.8.8.8", 99, &[23_200, 20_600, 20_600, 21_200, 20_700]);
        let out = ping_text(ip("8.8.8.8"), &style, &probes);
        assert!(
            out.starts_with(
                "PING 8.8.8.8 (8.8.8.8) 72(100) bytes of data.\n\
             80 bytes from 8.8.8.8: icmp_seq=1 ttl=99 time=23.2 ms\n\
             80 bytes from 8.8.8.8: icmp_seq=2 ttl=99 time=20.6 ms\n"
            ),
            "{out}"
        );
        assert!(out.contains("5 packets transmitted, 5 received, 0% packet loss, time "));
        assert!(out.contains(", ipg/ewma "));
        // A capture's adaptive schedule (eos-linux-formats evidence: 27 ms for these RTTs).
        let probes = replies("10.3.1.1", 64, &[7_650, 2_387, 2_870, 2_500, 2_440]);
        let out = ping_text(ip("10.3.1.1"), &style, &probes);
        assert!(
            out.contains("time 27ms\nrtt min/avg/max/mdev = 2.387/3.569/7.650/2.047 ms, ipg/ewma 6.750/5.537 ms\n"),
            "{out}"
        );
        // Five lost probes: 10 ms apart, the blank last line.
        let silent: Vec<_> = (0..5).map(|_| lost()).collect();
        assert!(ping_text(ip("10.0.0.2"), &style, &silent)
            .ends_with("5 packets transmitted, 0 received, 100% packet loss, time 40ms\n\n"));
        // C09: no route.
        let none = [probe(ProbeOutcome::LocalNoRoute, 0)];
        assert_eq!(
            ping_text(ip("8.8.8.8"), &style, &none),
            "connect: Network is unreachable\n"
        );
    }

    #[test]
    fn eos_ping_and_traceroute_arguments() {
        let mut lab = Lab::default();
        let d = lab.device("Spine-1", DeviceKind::Eos);
        // No interface, no route: EOS prints only the connect error (C09).
        assert_eq!(lab.run(d, "ping 8.8.8.8").unwrap(), "connect: Network is unreachable\n");
        assert_eq!(
            lab.run(d, "ping 8.8.8.8 repeat 2 size 100").unwrap(),
            "connect: Network is unreachable\n"
        );
        assert_eq!(
            lab.run(d, "ping vrf default 8.8.8.8").unwrap(),
            "connect: Network is unreachable\n"
        );
        assert_eq!(lab.err(d, "ping"), "% Incomplete command");
        assert_eq!(lab.err(d, "ping 8.8.8.8 repeat x"), "% Invalid input");
        assert!(lab
            .run(d, "traceroute 8.8.8.8")
            .unwrap()
            .ends_with("send: Network is unreachable\n"));
        assert_eq!(lab.err(d, "traceroute"), "% Incomplete command");
    }
}
