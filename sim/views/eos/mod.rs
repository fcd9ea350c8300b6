//! Arista EOS 4.2x exec-mode CLI: dispatch of `show …`, `ping`, `traceroute`, EOS's
//! unique-prefix keyword matching (`sh ip ro`, `sh ip o nei`) and its error texts. Formats:
//! eos-linux-formats.md §1.7, §2, §3 and the captures in eos-output-samples/.

mod bgp;
mod interface;
mod ospf;
mod route;
mod tools;

pub(crate) use route::route_lines;

use super::tcpdump::Sent;
use super::CommandError;
use crate::engine::State;
use crate::model::{DeviceId, Network};

/// Resolve one typed word against the keywords allowed at that point, as the EOS parser does:
/// an exact match wins, else the word must be a prefix of exactly one keyword
/// (case-insensitive). The lists hold the real EOS siblings of the supported keywords, so that
/// `s` stays ambiguous (`show`, `ssh`) while `sh` is `show` (§3 last bullets; the error texts
/// are unverified).
pub(crate) fn keyword(word: &str, choices: &[&'static str]) -> Result<&'static str, CommandError> {
    let w = word.to_ascii_lowercase();
    if let Some(exact) = choices.iter().find(|c| **c == w) {
        return Ok(exact);
    }
    let mut hits = choices.iter().filter(|c| !w.is_empty() && c.starts_with(&w));
    match (hits.next(), hits.next()) {
        (Some(one), None) => Ok(one),
        (Some(_), Some(_)) => Err(CommandError::new("% Ambiguous command")),
        _ => Err(CommandError::new("% Invalid input")),
    }
}

const EXEC: &[&str] = &[
    "bash",
    "clear",
    "configure",
    "copy",
    "dir",
    "disable",
    "enable",
    "exit",
    "ping",
    "reload",
    "show",
    "ssh",
    "telnet",
    "terminal",
    "traceroute",
    "write",
];
const SHOW: &[&str] = &[
    "clock",
    "hostname",
    "interfaces",
    "ip",
    "ipv6",
    "lldp",
    "logging",
    "running-config",
    "version",
    "vlan",
];
const SHOW_IP: &[&str] = &[
    "access-lists",
    "arp",
    "bgp",
    "igmp",
    "interface",
    "mroute",
    "nat",
    "ospf",
    "pim",
    "prefix-list",
    "route",
];

fn unsupported(words: &[&str]) -> CommandError {
    CommandError::new(format!(
        "% Unsupported command: '{}' is not modelled by fabsim",
        words.join(" ")
    ))
}

fn incomplete() -> CommandError {
    CommandError::new("% Incomplete command")
}

fn invalid() -> CommandError {
    CommandError::new("% Invalid input")
}

/// Run one EOS exec-mode command (no pipes); what its `ping` or `traceroute` sends goes to `sent`.
pub(crate) fn run(
    net: &Network,
    st: &State,
    dev: DeviceId,
    line: &str,
    sent: &mut Vec<Sent>,
) -> Result<String, CommandError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((first, rest)) = words.split_first() else {
        return Ok(String::new());
    };
    match keyword(first, EXEC)? {
        "show" => show(net, st, dev, rest),
        "ping" => tools::ping(net, st, dev, rest, sent),
        "traceroute" => tools::traceroute(net, st, dev, rest, sent),
        other => Err(unsupported(&[other])),
    }
}

fn show(net: &Network, st: &State, dev: DeviceId, w: &[&str]) -> Result<String, CommandError> {
    let what = keyword(w.first().ok_or_else(incomplete)?, SHOW)?;
    if what != "ip" {
        return Err(unsupported(&["show", what]));
    }
    let sub = keyword(w.get(1).ok_or_else(incomplete)?, SHOW_IP)?;
    let rest = &w[2..];
    match sub {
        "route" => route::show_ip_route(net, st, dev, rest),
        "interface" => interface::show_ip_interface(net, st, dev, rest),
        "ospf" => ospf::show_ip_ospf(net, st, dev, rest),
        "bgp" => bgp::show_ip_bgp(net, st, dev, rest),
        other => Err(unsupported(&["show ip", other])),
    }
}

#[cfg(test)]
mod tests {
    use crate::views::testnet::*;

    #[test]
    fn invalid_ambiguous_incomplete() {
        let (lab, d) = leaf3_s1b();
        assert_eq!(lab.err(d, "s ip route"), "% Ambiguous command");
        assert_eq!(lab.err(d, "shw ip route"), "% Invalid input");
        assert_eq!(lab.err(d, "show"), "% Incomplete command");
        assert_eq!(lab.err(d, "show ip"), "% Incomplete command");
        assert!(lab.err(d, "show version").contains("not modelled"));
        assert_eq!(lab.run(d, "").unwrap(), "");
    }
}
