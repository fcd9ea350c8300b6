//! The expectation kinds that read routing state directly (`session`, `prefixes`, `route` with
//! protocol and next hops) and the text matching behind `output`/`capture`. Each returns
//! whether the expectation held and a detail saying what was found and why it differs.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::engine::{BgpSessionView, BgpState, LinuxProto, Proto, Route, State};
use crate::model::{DeviceId, Network};
use crate::views;

/// A `route` expectation's `protocol:`. The model's own protocol names (`ospf-e2`,
/// `bgp-external`…), the families `ospf` and `bgp`, and the Linux `proto` words (`kernel`,
/// `static`, `dhcp`, `bird`) that `ip route` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteProtocol {
    Connected,
    Static,
    Ospf,
    OspfIntra,
    OspfInter,
    OspfE1,
    OspfE2,
    Dhcp,
    Bgp,
    BgpExternal,
    BgpInternal,
    Bird,
    Kernel,
}

impl RouteProtocol {
    fn matches(self, r: &Route) -> bool {
        use RouteProtocol as P;
        let by_model = match self {
            P::Connected => r.proto == Proto::Connected,
            P::Static => r.proto == Proto::Static,
            P::Ospf => matches!(
                r.proto,
                Proto::OspfIntra | Proto::OspfInter | Proto::OspfE1 | Proto::OspfE2
            ),
            P::OspfIntra => r.proto == Proto::OspfIntra,
            P::OspfInter => r.proto == Proto::OspfInter,
            P::OspfE1 => r.proto == Proto::OspfE1,
            P::OspfE2 => r.proto == Proto::OspfE2,
            P::Dhcp => r.proto == Proto::Dhcp,
            P::Bgp => matches!(r.proto, Proto::BgpExternal | Proto::BgpInternal),
            P::BgpExternal => r.proto == Proto::BgpExternal,
            P::BgpInternal => r.proto == Proto::BgpInternal,
            P::Bird => r.proto == Proto::Bird,
            P::Kernel => false,
        };
        // On a Linux host the word `ip route` prints counts too (`proto kernel` is a connected
        // route, `proto static` a netplan one).
        let linux_word = match self {
            P::Kernel => Some(LinuxProto::Kernel),
            P::Static => Some(LinuxProto::Static),
            P::Dhcp => Some(LinuxProto::Dhcp),
            P::Bird => Some(LinuxProto::Bird),
            _ => None,
        };
        by_model || (linux_word.is_some() && r.linux_proto == linux_word)
    }
}

/// A unit variant's name as the file and the JSON report spell it (`ospf-e2`), from its serde
/// name so that the two cannot drift apart.
pub fn serde_name<T: Serialize>(v: T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Compile an `output` expectation's `matches:` pattern; `^` and `$` anchor at line ends, as
/// a reader of command output expects.
pub fn compile_pattern(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .multi_line(true)
        .build()
        .map_err(|e| format!("`matches:` pattern is not a valid regular expression: {e}"))
}

/// An expectation in words, whether it held, and what was found.
type Verdict = (String, bool, String);

/// `route`: the routes for `prefix` on `dev` that also come from `protocol` and go through
/// exactly the `via` gateways (in any order); the expectation holds when some exist and
/// `present`, or none exist and not `present`. The detail prints the device's routes for the
/// prefix as its own table shows them.
pub fn route(
    net: &Network,
    st: &State,
    dev: DeviceId,
    prefix: Ipv4Net,
    present: bool,
    protocol: Option<RouteProtocol>,
    via: Option<&[Ipv4Addr]>,
) -> Verdict {
    let mut what = format!(
        "{} has {} route for {prefix}",
        net.device(dev).name,
        if present { "a" } else { "no" }
    );
    if let Some(p) = protocol {
        what.push_str(&format!(" from {}", serde_name(p)));
    }
    if let Some(v) = via {
        let v: Vec<String> = v.iter().map(|a| a.to_string()).collect();
        what.push_str(&format!(" via {}", v.join(", ")));
    }
    let for_prefix: Vec<&Route> = st.devices[dev.idx()]
        .fib
        .iter()
        .filter(|r| r.prefix == prefix)
        .collect();
    let same_gateways = |r: &Route| {
        via.is_none_or(|want| {
            let mut got: Vec<Option<Ipv4Addr>> = r.nexthops.iter().map(|h| h.via).collect();
            let mut want: Vec<Option<Ipv4Addr>> = want.iter().copied().map(Some).collect();
            got.sort();
            want.sort();
            got == want
        })
    };
    let found = for_prefix
        .iter()
        .any(|r| protocol.is_none_or(|p| p.matches(r)) && same_gateways(r));
    let detail = if for_prefix.is_empty() {
        format!("found: no route for {prefix}")
    } else {
        let lines: Vec<String> = for_prefix.iter().map(|r| views::route_line(net, dev, r)).collect();
        format!("found: {}", lines.join("\nfound: "))
    };
    (what, found == present, detail)
}

/// The session `dev` holds with `peer`, or why there is none.
fn session<'a>(net: &Network, st: &'a State, dev: DeviceId, peer: Ipv4Addr) -> Result<&'a BgpSessionView, String> {
    let name = &net.device(dev).name;
    let view = st.devices[dev.idx()]
        .bgp
        .as_ref()
        .ok_or_else(|| format!("{name} runs no BGP"))?;
    view.sessions.iter().find(|s| s.neighbor == peer).ok_or_else(|| {
        let peers: Vec<String> = view.sessions.iter().map(|s| s.neighbor.to_string()).collect();
        format!(
            "{name} has no BGP session with {peer} (its sessions: {})",
            if peers.is_empty() {
                "none".into()
            } else {
                peers.join(", ")
            }
        )
    })
}

/// What a session's state is and, when it is not up, the reason the speaker gives.
fn state_detail(s: &BgpSessionView) -> String {
    let mut d = format!("state {}", views::bgp_state_name(s.state));
    if let Some(e) = s.last_error.as_deref().filter(|_| s.state != BgpState::Established) {
        d.push_str(&format!(" (last error: {e})"));
    }
    d
}

/// `session`: the BGP state the engine holds for `dev`'s session with `peer`.
pub fn session_state(net: &Network, st: &State, dev: DeviceId, peer: Ipv4Addr, want: BgpState) -> Verdict {
    let what = format!(
        "{}'s BGP session with {peer} is {}",
        net.device(dev).name,
        views::bgp_state_name(want)
    );
    let (ok, detail) = match session(net, st, dev, peer) {
        Ok(s) => (s.state == want, format!("found: {}", state_detail(s))),
        Err(why) => (false, why),
    };
    (what, ok, detail)
}

/// `prefixes`: the session's received/accepted counts, the numbers `show ip bgp summary`
/// prints as PfxRcd/PfxAcc (the same `BgpSessionView` fields).
pub fn prefix_counts(
    net: &Network,
    st: &State,
    dev: DeviceId,
    peer: Ipv4Addr,
    received: Option<u32>,
    accepted: Option<u32>,
) -> Verdict {
    let counts: Vec<String> = [("received", received), ("accepted", accepted)]
        .iter()
        .filter_map(|(k, v)| v.map(|n| format!("{k} {n}")))
        .collect();
    let what = format!(
        "{} has {} prefixes from {peer}",
        net.device(dev).name,
        counts.join(", ")
    );
    let s = match session(net, st, dev, peer) {
        Ok(s) => s,
        Err(why) => return (what, false, why),
    };
    let ok = received.is_none_or(|n| n == s.pfx_rcvd) && accepted.is_none_or(|n| n == s.pfx_acc);
    let detail = format!(
        "found: received {}, accepted {}; {}",
        s.pfx_rcvd,
        s.pfx_acc,
        state_detail(s)
    );
    (what, ok, detail)
}

/// Whether `out` has every `contains` line and none of the `absent` ones ([`super::has_line`]),
/// the exact `lines` in order (not necessarily adjacent; trailing blanks ignored) and a match
/// for every `matches` pattern. The failure detail lists what did not hold, then the output.
pub fn match_output(
    out: &str,
    contains: &[String],
    absent: &[String],
    lines: &[String],
    matches: &[Regex],
) -> (bool, String) {
    let mut problems = Vec::new();
    for m in contains.iter().filter(|c| !super::has_line(out, c)) {
        problems.push(format!("missing line: {m}"));
    }
    for p in absent.iter().filter(|c| super::has_line(out, c)) {
        problems.push(format!("unexpected line: {p}"));
    }
    let mut rest = out.lines().map(str::trim_end);
    for (i, want) in lines.iter().enumerate() {
        if !rest.any(|l| l == want.trim_end()) {
            let after = match i {
                0 => String::new(),
                _ => format!(" after `{}`", lines[i - 1]),
            };
            problems.push(format!("missing exact line{after}: {want}"));
            break;
        }
    }
    for re in matches.iter().filter(|re| !re.is_match(out)) {
        problems.push(format!("no line matches /{}/", re.as_str()));
    }
    let ok = problems.is_empty();
    let mut detail = String::new();
    for p in problems {
        detail.push_str(&p);
        detail.push('\n');
    }
    if !ok {
        detail.push_str("output was:\n");
        detail.push_str(out);
    }
    (ok, detail)
}
