//! The scenario file: a topology and a list of runbook steps, each with an id, one change,
//! and expectations checked before and after it.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use ipnet::Ipv4Net;
use regex::Regex;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::checks::RouteProtocol;
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::engine::BgpState;
use crate::input::topology::yaml::{self, OrderedMap};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    topology: Spanned<String>,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    pinned: RawPinned,
    #[serde(default)]
    steps: Vec<RawStep>,
}

/// Facts the references show but fabsim cannot derive (clarifications.md "Scripted facts").
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinned {
    /// Pods the cluster's controllers create: their names, their node, and (by list order) the
    /// order their CNI calls ran when several started at once.
    #[serde(default)]
    pods: Vec<Spanned<RawPinnedPod>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinnedPod {
    /// `NAMESPACE/NAME`.
    pod: String,
    node: Option<String>,
}

/// Guards on the simulation itself.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    /// Most paths one BGP speaker keeps for one prefix before a path-explosion finding.
    paths_per_prefix: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    id: Spanned<String>,
    name: Option<String>,
    /// Free text: why the step exists, with the reference it reproduces.
    note: Option<String>,
    on: Option<Spanned<String>>,
    config: Option<Spanned<String>>,
    netplan: Option<Spanned<String>>,
    /// A new BIRD configuration for a host (what confd renders), with its include files.
    bird: Option<Spanned<String>>,
    #[serde(default)]
    bird_includes: OrderedMap<Spanned<String>>,
    wait: Option<Spanned<String>>,
    /// Runbook commands typed on `on:`, one per line (`#` starts a comment line).
    run: Option<Spanned<String>>,
    /// What a `-f -` in `run:` reads (a heredoc or a pipe in the real runbook).
    stdin: Option<Spanned<String>>,
    /// Files the runbook wrote on `on:` before its commands (`cat << EOF > NAME`), by name.
    #[serde(default)]
    files: OrderedMap<Spanned<String>>,
    /// Devices powered off and on again (`[all]`: every device of the topology).
    reboot: Option<Spanned<Vec<String>>>,
    /// State the references show but fabsim cannot derive, put in place directly.
    inject: Option<Spanned<RawInject>>,
    /// The DHCP server now leases this address to `on:`'s interface (the host renews).
    lease: Option<Spanned<RawStepLease>>,
    #[serde(default)]
    expect: RawExpect,
}

/// Scripted facts (clarifications.md "Scripted facts are data too").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInject {
    /// IPAM allocations held from earlier, unshown history: each takes the node's next address
    /// for the handle (a tunnel handle also sets the Node's tunnel address, as allocateip does).
    #[serde(default)]
    ipam: Vec<RawHeldAllocation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeldAllocation {
    node: String,
    handle: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStepLease {
    interface: String,
    address: Ipv4Net,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    before: Vec<Spanned<RawCheck>>,
    #[serde(default)]
    after: Vec<Spanned<RawCheck>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
enum RawCheck {
    /// A ping from a device gets an echo reply.
    Reach { from: String, to: String },
    /// A ping gets no reply; optionally, the ICMP error and who sent it.
    Unreachable {
        from: String,
        to: String,
        #[serde(default)]
        icmp_from: Option<Ipv4Addr>,
    },
    /// A route is (or is not) in a device's forwarding table, optionally from a protocol and
    /// through exactly these next hops.
    Route {
        on: String,
        prefix: Ipv4Net,
        #[serde(default = "yes")]
        present: bool,
        #[serde(default)]
        protocol: Option<RouteProtocol>,
        #[serde(default)]
        via: Option<Vec<Ipv4Addr>>,
    },
    /// A command's output contains these lines (whitespace-normalised) and not those; has
    /// these exact lines in this order; matches these regular expressions.
    Output {
        on: String,
        run: String,
        #[serde(default)]
        contains: Vec<String>,
        #[serde(default)]
        absent: Vec<String>,
        #[serde(default)]
        lines: Vec<String>,
        #[serde(default)]
        matches: Vec<Spanned<String>>,
    },
    /// A BGP session is in this state, as the speaker holds it.
    Session {
        on: String,
        peer: Ipv4Addr,
        state: BgpState,
    },
    /// A BGP session's prefix counts (`show ip bgp summary` PfxRcd / PfxAcc).
    Prefixes {
        on: String,
        neighbor: Ipv4Addr,
        #[serde(default)]
        received: Option<u32>,
        #[serde(default)]
        accepted: Option<u32>,
    },
    /// During a ping FROM → TO, `tcpdump -n -i INTERFACE` on ON shows these lines and not those.
    Capture {
        from: String,
        to: String,
        on: String,
        interface: String,
        #[serde(default = "one")]
        count: u32,
        #[serde(default)]
        contains: Vec<String>,
        #[serde(default)]
        absent: Vec<String>,
    },
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// What a step changes.
#[derive(Clone, Debug)]
pub enum Action {
    /// No change: a checkpoint on the state reached so far.
    Checkpoint,
    /// EOS configuration-mode lines on a switch.
    EosConfig {
        device: String,
        text: String,
        origin: TextOrigin,
    },
    /// A new BIRD configuration on a host (confd re-rendered it; BIRD reconfigures: protocols
    /// whose configuration changed restart, the others keep running).
    Bird {
        device: String,
        text: String,
        origin: TextOrigin,
        includes: BTreeMap<String, (String, TextOrigin)>,
    },
    /// A new netplan file on a Linux host, then `netplan apply`.
    Netplan {
        device: String,
        text: String,
        origin: TextOrigin,
    },
    /// Let virtual time pass.
    Wait { ms: u64 },
    /// Commands typed on a host's shell, in order (each with where it is written), and what
    /// `-f -` reads.
    Run {
        device: String,
        lines: Vec<(String, Span)>,
        stdin: Option<String>,
        files: BTreeMap<String, String>,
    },
    /// Devices power-cycled (none listed: all of them).
    Reboot { devices: Vec<String> },
    /// Scripted facts: IPAM allocations (node, handle) held from unshown history.
    Inject { ipam: Vec<(String, String)> },
    /// A new DHCP lease for a host's interface.
    Lease {
        device: String,
        interface: String,
        address: Ipv4Net,
    },
}

#[derive(Clone, Debug)]
pub enum Check {
    Reach {
        from: String,
        to: String,
    },
    Unreachable {
        from: String,
        to: String,
        icmp_from: Option<Ipv4Addr>,
    },
    Route {
        on: String,
        prefix: Ipv4Net,
        present: bool,
        protocol: Option<RouteProtocol>,
        via: Option<Vec<Ipv4Addr>>,
    },
    Output {
        on: String,
        run: String,
        contains: Vec<String>,
        absent: Vec<String>,
        lines: Vec<String>,
        matches: Vec<Regex>,
    },
    Session {
        on: String,
        peer: Ipv4Addr,
        state: BgpState,
    },
    Prefixes {
        on: String,
        neighbor: Ipv4Addr,
        received: Option<u32>,
        accepted: Option<u32>,
    },
    Capture {
        from: String,
        to: String,
        on: String,
        interface: String,
        count: u32,
        contains: Vec<String>,
        absent: Vec<String>,
    },
}

#[derive(Clone, Debug)]
pub struct Expectation {
    pub check: Check,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub id: String,
    pub name: Option<String>,
    pub note: Option<String>,
    pub action: Action,
    pub before: Vec<Expectation>,
    pub after: Vec<Expectation>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub file: String,
    pub topology: PathBuf,
    pub topology_span: Span,
    /// `limits.paths_per_prefix` (the engine's default when absent).
    pub path_limit: Option<usize>,
    /// The directory the scenario's relative file names (`kubectl apply -f FILE`) start from.
    pub base: PathBuf,
    pub pinned_pods: Vec<crate::k8s::Pin>,
    pub steps: Vec<Step>,
}

impl Scenario {
    pub fn step_index(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }
}

/// A YAML file is a scenario when it names a topology at its top level.
pub fn is_scenario(text: &str) -> bool {
    text.lines().any(|l| l.starts_with("topology:"))
}

fn span_of<T>(file: &str, s: &Spanned<T>) -> Span {
    yaml::span(&root(file), &s.referenced)
}

fn root(file: &str) -> TextOrigin {
    TextOrigin {
        file: file.into(),
        line: 1,
        col: 1,
    }
}

/// Parse a duration like `40s`, `500ms`, `2m`, `1h`.
pub fn parse_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

pub fn load_scenario(path: &Path) -> Result<Scenario, InputError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Diagnostic::error(Span::new(&file, 1, 1), format!("cannot read scenario: {e}")))?;
    parse_scenario(&text, &file, path.parent().unwrap_or(Path::new(".")))
}

pub fn parse_scenario(text: &str, file: &str, base: &Path) -> Result<Scenario, InputError> {
    let raw: RawScenario = yaml::from_str(text, &root(file))?;
    let mut errors = Vec::new();
    let mut steps = Vec::new();
    for rs in raw.steps {
        match convert_step(rs, file, text) {
            Ok(s) => steps.push(s),
            Err(d) => errors.push(d),
        }
    }
    for (i, s) in steps.iter().enumerate() {
        if steps[..i].iter().any(|p| p.id == s.id) {
            errors.push(Diagnostic::error(
                s.span.clone(),
                format!("duplicate step id '{}'", s.id),
            ));
        }
    }
    let mut pinned_pods = Vec::new();
    for p in raw.pinned.pods {
        match p.value.pod.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() => pinned_pods.push(crate::k8s::Pin {
                namespace: ns.to_string(),
                name: name.to_string(),
                node: p.value.node.clone(),
            }),
            _ => errors.push(Diagnostic::error(
                span_of(file, &p),
                format!("expected `pod: NAMESPACE/NAME`, found `{}`", p.value.pod),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(InputError(errors));
    }
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| file.to_string()),
        description: raw.description,
        file: file.to_string(),
        topology: base.join(&raw.topology.value),
        topology_span: span_of(file, &raw.topology),
        path_limit: raw.limits.paths_per_prefix,
        base: base.to_path_buf(),
        pinned_pods,
        steps,
    })
}

fn convert_step(rs: RawStep, file: &str, text: &str) -> Result<Step, Diagnostic> {
    let span = span_of(file, &rs.id);
    let device = |what: &str| {
        rs.on.as_ref().map(|o| o.value.clone()).ok_or_else(|| {
            Diagnostic::error(
                span.clone(),
                format!("step '{}' has `{what}:` but no `on: DEVICE`", rs.id.value),
            )
        })
    };
    let kinds = [
        rs.config.is_some(),
        rs.netplan.is_some(),
        rs.bird.is_some(),
        rs.wait.is_some(),
        rs.run.is_some(),
        rs.lease.is_some(),
        rs.reboot.is_some(),
        rs.inject.is_some(),
    ];
    if kinds.iter().filter(|k| **k).count() > 1 {
        return Err(Diagnostic::error(
            span,
            "a step does one thing: use only one of `config:`, `netplan:`, `bird:`, `wait:`, `run:`, `lease:`, `reboot:`, `inject:`",
        )
        .with_hint("split it into several steps with their own ids"));
    }
    let action = if let Some(c) = &rs.config {
        Action::EosConfig {
            device: device("config")?,
            text: c.value.clone(),
            origin: yaml::text_origin(c, text, &root(file)),
        }
    } else if let Some(n) = &rs.netplan {
        Action::Netplan {
            device: device("netplan")?,
            text: n.value.clone(),
            origin: yaml::text_origin(n, text, &root(file)),
        }
    } else if let Some(b) = &rs.bird {
        let includes = rs
            .bird_includes
            .0
            .iter()
            .map(|(name, t)| {
                (
                    name.value.clone(),
                    (t.value.clone(), yaml::text_origin(t, text, &root(file))),
                )
            })
            .collect();
        Action::Bird {
            device: device("bird")?,
            text: b.value.clone(),
            origin: yaml::text_origin(b, text, &root(file)),
            includes,
        }
    } else if let Some(w) = &rs.wait {
        let ms = parse_duration(&w.value).ok_or_else(|| {
            Diagnostic::error(
                span_of(file, w),
                format!("expected a duration like 40s, 500ms or 2m, found '{}'", w.value),
            )
        })?;
        Action::Wait { ms }
    } else if let Some(i) = &rs.inject {
        Action::Inject {
            ipam: i
                .value
                .ipam
                .iter()
                .map(|a| (a.node.clone(), a.handle.clone()))
                .collect(),
        }
    } else if let Some(r) = &rs.reboot {
        let devices = if r.value.iter().any(|d| d == "all") {
            Vec::new()
        } else {
            r.value.clone()
        };
        Action::Reboot { devices }
    } else if let Some(l) = &rs.lease {
        Action::Lease {
            device: device("lease")?,
            interface: l.value.interface.clone(),
            address: l.value.address,
        }
    } else if let Some(r) = &rs.run {
        let origin = yaml::text_origin(r, text, &root(file));
        let lines = r
            .value
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|(i, l)| (l.trim().to_string(), origin.span_at(i, l.len() - l.trim_start().len())))
            .collect();
        Action::Run {
            device: device("run")?,
            lines,
            stdin: rs.stdin.as_ref().map(|t| t.value.clone()),
            files: rs
                .files
                .0
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect(),
        }
    } else {
        if let Some(o) = &rs.on {
            return Err(Diagnostic::error(
                span_of(file, o),
                "`on:` needs a change: `config:` (EOS), `netplan:`, `bird:` or `run:` (Linux)",
            ));
        }
        Action::Checkpoint
    };
    let conv = |v: Vec<Spanned<RawCheck>>| -> Result<Vec<Expectation>, Diagnostic> {
        v.into_iter()
            .map(|c| {
                let span = span_of(file, &c);
                Ok(Expectation {
                    check: convert_check(c.value, file, &span)?,
                    span,
                })
            })
            .collect()
    };
    Ok(Step {
        id: rs.id.value,
        name: rs.name,
        note: rs.note,
        action,
        before: conv(rs.expect.before)?,
        after: conv(rs.expect.after)?,
        span,
    })
}

fn convert_check(c: RawCheck, file: &str, span: &Span) -> Result<Check, Diagnostic> {
    Ok(match c {
        RawCheck::Reach { from, to } => Check::Reach { from, to },
        RawCheck::Unreachable { from, to, icmp_from } => Check::Unreachable { from, to, icmp_from },
        RawCheck::Route {
            on,
            prefix,
            present,
            protocol,
            via,
        } => Check::Route {
            on,
            prefix,
            present,
            protocol,
            via,
        },
        RawCheck::Output {
            on,
            run,
            contains,
            absent,
            lines,
            matches,
        } => Check::Output {
            on,
            run,
            contains,
            absent,
            lines,
            matches: matches
                .iter()
                .map(|m| super::checks::compile_pattern(&m.value).map_err(|e| Diagnostic::error(span_of(file, m), e)))
                .collect::<Result<_, _>>()?,
        },
        RawCheck::Session { on, peer, state } => Check::Session { on, peer, state },
        RawCheck::Prefixes {
            on,
            neighbor,
            received,
            accepted,
        } => {
            if received.is_none() && accepted.is_none() {
                return Err(Diagnostic::error(
                    span.clone(),
                    format!("`prefixes` on {on} for {neighbor} needs `received: N`, `accepted: N` or both"),
                ));
            }
            Check::Prefixes {
                on,
                neighbor,
                received,
                accepted,
            }
        }
        RawCheck::Capture {
            from,
            to,
            on,
            interface,
            count,
            contains,
            absent,
        } => Check::Capture {
            from,
            to,
            on,
            interface,
            count,
            contains,
            absent,
        },
    })
}
