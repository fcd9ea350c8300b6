//! Arista EOS configuration text → the vendor-independent model.
//!
//! Reads configuration-mode lines (as typed after `configure terminal`, or a startup-config)
//! with EOS CLI semantics: unique-prefix keyword abbreviation, `no`/`default` forms, sub-modes
//! that fall back to global mode. It only records configuration; it never computes routing.
//! Valid EOS that fabsim does not model is a warning; anything EOS would reject is an error.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::model::{
    Acl, AclAction, AclEntry, AddrConfig, DeviceId, IfId, IfOspf, Interface, Network, OspfConfig,
    OspfNetwork, RedistSource, Redistribute, RouteOrigin, StaticRoute,
};

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Apply EOS configuration-mode lines (as typed after `configure terminal`, or as in a
/// startup-config) to device `dev`. Returns warnings; Err(InputError) with all errors for
/// malformed lines.
pub fn apply_config(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
) -> Result<Vec<Diagnostic>, InputError> {
    if dev.idx() >= net.devices.len() {
        let msg = format!("internal: device id {} does not exist", dev.0);
        return Err(Diagnostic::error(origin.span_at(0, 0), msg).into());
    }
    let mut ctx = Ctx {
        net,
        dev,
        origin,
        idx: 0,
        mode: Mode::Global,
        warnings: Vec::new(),
        errors: Vec::new(),
        addressed: Vec::new(),
    };
    for (idx, line) in text.lines().enumerate() {
        ctx.idx = idx;
        ctx.line(line);
    }
    ctx.finish()
}

/// "et4", "Et4", "ethernet 4", "Ethernet4", "eth4" → Some("Ethernet4"); "lo0"/"loopback 0" →
/// "Loopback0"; "ma1" → "Management1"; "vlan10" → "Vlan10"; Ethernet with module "Ethernet1/1"
/// too. None if not an EOS interface name.
pub fn canonical_interface(name: &str) -> Option<String> {
    let name = name.trim();
    let digit = name.find(|c: char| c.is_ascii_digit())?;
    let (kind, number) = name.split_at(digit);
    let kind = kind.trim_end();
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let kind = match keyword(kind, IF_TYPES) {
        Match::One(k) => k,
        Match::Ambiguous(_) | Match::None => return None,
    };
    Some(format!(
        "{}{}",
        if_type_name(kind),
        canonical_if_number(number)?
    ))
}

/// Keywords fabsim understands and deliberately ignores without a warning, because they have
/// no effect on routing or forwarding. `fabsim lint --verbose` lists this table.
pub const IGNORED_BY_DESIGN: &[IgnoredKeyword] = &[
    IgnoredKeyword {
        context: KeywordContext::AnyMode,
        keyword: "!",
        why: "comment line",
    },
    IgnoredKeyword {
        context: KeywordContext::Interface,
        keyword: "description",
        why: "free text for humans; shown by `show interfaces` only",
    },
    IgnoredKeyword {
        context: KeywordContext::Interface,
        keyword: "load-interval",
        why: "averaging window of interface counters; no forwarding effect",
    },
    IgnoredKeyword {
        context: KeywordContext::Interface,
        keyword: "logging",
        why: "which link events reach syslog; no forwarding effect",
    },
    IgnoredKeyword {
        context: KeywordContext::Global,
        keyword: "logging",
        why: "syslog destinations and levels; no forwarding effect",
    },
    IgnoredKeyword {
        context: KeywordContext::Ospf,
        keyword: "max-lsa",
        why: "LSDB overload guard (EOS default 12000); simulated fabrics stay far below it",
    },
    IgnoredKeyword {
        context: KeywordContext::Ospf,
        keyword: "log-adjacency-changes",
        why: "syslog messages on adjacency changes only",
    },
    IgnoredKeyword {
        context: KeywordContext::Acl,
        keyword: "remark",
        why: "comment entry of an ACL; matches no packet",
    },
    IgnoredKeyword {
        context: KeywordContext::Acl,
        keyword: "statistics",
        why: "`statistics per-entry` turns on hit counters only",
    },
    IgnoredKeyword {
        context: KeywordContext::AclRuleOption,
        keyword: "log",
        why: "logs matches to syslog; the permit/deny decision is unchanged",
    },
    IgnoredKeyword {
        context: KeywordContext::StaticRouteOption,
        keyword: "name",
        why: "label shown by `show ip route` detail only",
    },
    IgnoredKeyword {
        context: KeywordContext::StaticRouteOption,
        keyword: "tag",
        why: "only route-maps read route tags, and any route-map use is warned about",
    },
];

/// One entry of [`IGNORED_BY_DESIGN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgnoredKeyword {
    pub context: KeywordContext,
    pub keyword: &'static str,
    pub why: &'static str,
}

/// Where an ignored-by-design keyword applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeywordContext {
    AnyMode,
    Global,
    Interface,
    Ospf,
    Acl,
    /// A trailing option of an ACL rule (`permit ip any any log`).
    AclRuleOption,
    /// A trailing option of `ip route` (`… tag 5 name uplink`).
    StaticRouteOption,
}

fn ignored_by_design(context: KeywordContext, word: &str) -> bool {
    IGNORED_BY_DESIGN
        .iter()
        .any(|e| e.context == context && e.keyword == word)
}

// ---------------------------------------------------------------------------------------------
// Keyword tables. Each list holds every keyword EOS accepts at that point that fabsim knows of
// (modelled, warned or ignored), so unique-prefix matching sees the same ambiguities EOS does.
// ---------------------------------------------------------------------------------------------

const IF_TYPES: &[&str] = &[
    "ethernet",
    "loopback",
    "management",
    "port-channel",
    "tunnel",
    "vlan",
    "vxlan",
];

const GLOBAL_WORDS: &[&str] = &[
    "aaa",
    "alias",
    "banner",
    "boot",
    "class-map",
    "clock",
    "configure",
    "cvx",
    "daemon",
    "default",
    "dns",
    "do",
    "enable",
    "end",
    "errdisable",
    "event-handler",
    "exit",
    "hardware",
    "hostname",
    "interface",
    "ip",
    "ipv6",
    "lldp",
    "logging",
    "mac",
    "management",
    "mlag",
    "monitor",
    "no",
    "ntp",
    "peer-filter",
    "platform",
    "policy-map",
    "queue-monitor",
    "radius-server",
    "route-map",
    "router",
    "service",
    "sflow",
    "snmp-server",
    "spanning-tree",
    "system",
    "tacacs-server",
    "tap",
    "transceiver",
    "username",
    "vlan",
    "vrf",
];

/// Global commands fabsim does not model that open a sub-mode: the lines of their block are
/// skipped with them. The others are single-line.
const GLOBAL_BLOCK_WORDS: &[&str] = &[
    "banner",
    "class-map",
    "cvx",
    "daemon",
    "event-handler",
    "management",
    "mlag",
    "monitor",
    "peer-filter",
    "policy-map",
    "queue-monitor",
    "route-map",
    "router",
    "spanning-tree",
    "tap",
    "vlan",
    "vrf",
];

const GLOBAL_IP_WORDS: &[&str] = &[
    "access-list",
    "as-path",
    "community-list",
    "dhcp",
    "domain",
    "domain-name",
    "extcommunity-list",
    "ftp",
    "hardware",
    "host",
    "http",
    "icmp",
    "igmp",
    "load-sharing",
    "multicast-routing",
    "name-server",
    "nat",
    "pim",
    "prefix-list",
    "route",
    "routing",
    "ssh",
    "tftp",
    "virtual-router",
];

const ROUTER_WORDS: &[&str] = &[
    "bgp",
    "igmp",
    "isis",
    "msdp",
    "multicast",
    "ospf",
    "ospfv3",
    "pim",
    "rip",
];

const IF_WORDS: &[&str] = &[
    "arp",
    "bfd",
    "channel-group",
    "default",
    "description",
    "dhcp",
    "encapsulation",
    "error-correction",
    "flowcontrol",
    "ip",
    "ipv6",
    "isis",
    "lldp",
    "load-interval",
    "logging",
    "mac-address",
    "mlag",
    "mpls",
    "mtu",
    "no",
    "pim",
    "priority-flow-control",
    "qos",
    "service-policy",
    "sflow",
    "shutdown",
    "snmp",
    "spanning-tree",
    "speed",
    "storm-control",
    "switchport",
    "traffic-policy",
    "tx-queue",
    "vrf",
    "vrrp",
];

const IF_IP_WORDS: &[&str] = &[
    "access-group",
    "address",
    "arp",
    "attached-host",
    "dhcp",
    "helper-address",
    "igmp",
    "local-proxy-arp",
    "multicast",
    "nat",
    "ospf",
    "pim",
    "proxy-arp",
    "verify",
    "virtual-router",
];

const IF_OSPF_WORDS: &[&str] = &[
    "area",
    "authentication",
    "authentication-key",
    "bfd",
    "cost",
    "dead-interval",
    "disabled",
    "hello-interval",
    "message-digest-key",
    "mtu-ignore",
    "network",
    "priority",
    "retransmit-interval",
    "shutdown",
    "transmit-delay",
];

const OSPF_WORDS: &[&str] = &[
    "adjacency",
    "area",
    "auto-cost",
    "bfd",
    "compatible",
    "default",
    "default-information",
    "default-metric",
    "distance",
    "distribute-list",
    "graceful-restart",
    "graceful-restart-helper",
    "log-adjacency-changes",
    "max-lsa",
    "maximum-paths",
    "mpls",
    "network",
    "no",
    "passive-interface",
    "point-to-point",
    "redistribute",
    "router-id",
    "shutdown",
    "summary-address",
    "timers",
];

const REDIST_SOURCES: &[&str] = &[
    "attached-host",
    "bgp",
    "connected",
    "dhcp",
    "isis",
    "static",
];

const ACL_WORDS: &[&str] = &[
    "counters",
    "default",
    "deny",
    "no",
    "permit",
    "remark",
    "resequence",
    "statistics",
];

/// IP protocols by the names EOS accepts in ACL rules.
const ACL_PROTOCOLS: &[(&str, u8)] = &[
    ("ahp", 51),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ip", 0),
    ("ospf", 89),
    ("pim", 103),
    ("tcp", 6),
    ("udp", 17),
    ("vrrp", 112),
];

// ---------------------------------------------------------------------------------------------
// Tokens, keyword matching, argument parsing
// ---------------------------------------------------------------------------------------------

/// A whitespace-separated word and its byte offset in the line (for diagnostics' columns).
#[derive(Clone, Copy, Debug)]
struct Tok<'a> {
    text: &'a str,
    col0: usize,
}

fn tokenize(line: &str) -> Vec<Tok<'_>> {
    let mut toks = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                toks.push(Tok {
                    text: &line[s..i],
                    col0: s,
                });
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        toks.push(Tok {
            text: &line[s..],
            col0: s,
        });
    }
    toks
}

enum Match {
    One(&'static str),
    Ambiguous(Vec<&'static str>),
    None,
}

impl Match {
    fn is_one(&self) -> bool {
        matches!(self, Match::One(_))
    }
}

/// EOS keyword matching: an exact keyword wins, otherwise the word must be a unique prefix.
fn keyword(word: &str, words: &[&'static str]) -> Match {
    let word = word.to_ascii_lowercase();
    if let Some(exact) = words.iter().find(|w| **w == word) {
        return Match::One(exact);
    }
    let hits: Vec<&'static str> = words
        .iter()
        .copied()
        .filter(|w| w.starts_with(&word))
        .collect();
    match hits.as_slice() {
        [] => Match::None,
        [one] => Match::One(one),
        _ => Match::Ambiguous(hits),
    }
}

/// Why a line does not parse in a mode: where (byte offset) and what was expected.
#[derive(Debug)]
struct Reject {
    col0: usize,
    msg: String,
}

/// A cursor over one line's tokens.
struct Cur<'a> {
    toks: &'a [Tok<'a>],
    pos: usize,
    eol: usize,
}

impl<'a> Cur<'a> {
    fn new(toks: &'a [Tok<'a>], line_len: usize) -> Self {
        Cur {
            toks,
            pos: 0,
            eol: line_len,
        }
    }

    fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// Byte offset of the next token (or of the end of the line).
    fn here(&self) -> usize {
        self.peek().map_or(self.eol, |t| t.col0)
    }

    fn expected(&self, what: &str) -> Reject {
        let found = match self.peek() {
            Some(t) => format!("'{}'", t.text),
            None => "end of line".to_string(),
        };
        Reject {
            col0: self.here(),
            msg: format!("expected {what}, found {found}"),
        }
    }

    fn word(&mut self, what: &str) -> Result<Tok<'a>, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        self.pos += 1;
        Ok(t)
    }

    fn keyword(&mut self, words: &[&'static str], what: &str) -> Result<&'static str, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        match keyword(t.text, words) {
            Match::One(k) => {
                self.pos += 1;
                Ok(k)
            }
            Match::Ambiguous(hits) => Err(Reject {
                col0: t.col0,
                msg: format!(
                    "% Ambiguous command: '{}' could be {}",
                    t.text,
                    hits.join(", ")
                ),
            }),
            Match::None => Err(self.expected(what)),
        }
    }

    /// Like `keyword` but leaves the cursor alone when the next word is not one of `words`.
    fn opt_keyword(&mut self, words: &[&'static str]) -> Option<&'static str> {
        let t = self.peek()?;
        match keyword(t.text, words) {
            Match::One(k) => {
                self.pos += 1;
                Some(k)
            }
            Match::Ambiguous(_) | Match::None => None,
        }
    }

    fn number<T: TryFrom<u64>>(&mut self, what: &str, min: u64, max: u64) -> Result<T, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        let n = t
            .text
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n));
        let n = n
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.expected(what))?;
        self.pos += 1;
        Ok(n)
    }

    fn ipv4(&mut self, what: &str) -> Result<Ipv4Addr, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        let a = t
            .text
            .parse::<Ipv4Addr>()
            .map_err(|_| self.expected(what))?;
        self.pos += 1;
        Ok(a)
    }

    fn end(&self) -> Result<(), Reject> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(Reject {
                col0: t.col0,
                msg: format!("unexpected '{}'", t.text),
            }),
        }
    }

    /// Consume the next word if `pred` holds (the optional old value of a `no` form).
    fn skip_if(&mut self, pred: impl Fn(&str) -> bool) {
        if self.peek().is_some_and(|t| pred(t.text)) {
            self.pos += 1;
        }
    }

    fn skip_rest(&mut self) {
        self.pos = self.toks.len();
    }
}

/// How the second half of an address is written: a netmask (`ip address`, `ip route`) or a
/// wildcard (`network … area`, ACLs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum MaskForm {
    Netmask,
    Wildcard,
}

/// Prefix length of a contiguous netmask (255.255.255.0 → 24).
fn mask_len(mask: Ipv4Addr) -> Option<u8> {
    let m = u32::from(mask);
    let len = m.leading_ones();
    (m.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

/// `A.B.C.D/L`, or `A.B.C.D MASK` / `A.B.C.D WILDCARD`. Host bits are kept.
fn prefix(c: &mut Cur, form: MaskForm) -> Result<Ipv4Net, Reject> {
    let what = match form {
        MaskForm::Netmask => "a prefix (A.B.C.D/L or A.B.C.D MASK)",
        MaskForm::Wildcard => "a prefix (A.B.C.D/L or A.B.C.D WILDCARD)",
    };
    let t = c.peek().ok_or_else(|| c.expected(what))?;
    if let Some((addr, len)) = t.text.split_once('/') {
        let net = addr
            .parse::<Ipv4Addr>()
            .ok()
            .zip(len.parse::<u8>().ok())
            .and_then(|(a, l)| Ipv4Net::new(a, l).ok())
            .ok_or_else(|| c.expected(what))?;
        c.pos += 1;
        return Ok(net);
    }
    let addr = c.ipv4(what)?;
    let mask_what = match form {
        MaskForm::Netmask => "a contiguous netmask (e.g. 255.255.255.0)",
        MaskForm::Wildcard => "a contiguous wildcard mask (e.g. 0.0.0.255)",
    };
    let mask_tok = c.peek();
    let mask = c.ipv4(mask_what)?;
    let mask = match form {
        MaskForm::Netmask => mask,
        MaskForm::Wildcard => Ipv4Addr::from(!u32::from(mask)),
    };
    let len = mask_len(mask).ok_or_else(|| Reject {
        col0: mask_tok.map_or(c.eol, |t| t.col0),
        msg: format!(
            "expected {mask_what}, found '{}'",
            mask_tok.map_or("", |t| t.text)
        ),
    })?;
    Ipv4Net::new(addr, len).map_err(|_| c.expected(what))
}

/// An OSPF area: decimal or dotted quad.
fn area(c: &mut Cur) -> Result<u32, Reject> {
    const WHAT: &str = "an area id (decimal or A.B.C.D)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    let id = match t.text.parse::<u32>() {
        Ok(n) => n,
        Err(_) => u32::from(t.text.parse::<Ipv4Addr>().map_err(|_| c.expected(WHAT))?),
    };
    c.pos += 1;
    Ok(id)
}

/// An interface name written as one word (`Et4`) or two (`ethernet 4`).
fn interface_name(c: &mut Cur) -> Result<String, Reject> {
    const WHAT: &str = "an interface name (e.g. Ethernet4)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if let Some(name) = canonical_interface(t.text) {
        c.pos += 1;
        return Ok(name);
    }
    let joined = c
        .toks
        .get(c.pos + 1)
        .map(|n| format!("{} {}", t.text, n.text));
    match joined.as_deref().and_then(canonical_interface) {
        Some(name) => {
            c.pos += 2;
            Ok(name)
        }
        None => Err(c.expected(WHAT)),
    }
}

fn if_type_name(kind: &str) -> &'static str {
    match kind {
        "ethernet" => "Ethernet",
        "loopback" => "Loopback",
        "management" => "Management",
        "port-channel" => "Port-Channel",
        "tunnel" => "Tunnel",
        "vlan" => "Vlan",
        _ => "Vxlan",
    }
}

/// `4`, `1/1`, `1/1/2`, `4.100` (sub-interface); leading zeros dropped as EOS does.
fn canonical_if_number(number: &str) -> Option<String> {
    let (main, sub) = match number.split_once('.') {
        Some((m, s)) => (m, Some(s)),
        None => (number, None),
    };
    let parts: Option<Vec<String>> = main
        .split('/')
        .map(|p| p.parse::<u32>().ok().map(|n| n.to_string()))
        .collect();
    let mut out = parts?.join("/");
    if let Some(sub) = sub {
        out = format!("{out}.{}", sub.parse::<u32>().ok()?);
    }
    Some(out)
}

/// Ethernet and Port-Channel ports are switchports until `no switchport`; the rest route.
fn routed_by_default(name: &str) -> bool {
    !(name.starts_with("Ethernet") || name.starts_with("Port-Channel"))
}

fn default_mtu(name: &str) -> u32 {
    if name.starts_with("Loopback") {
        65535
    } else {
        1500
    }
}

// ---------------------------------------------------------------------------------------------
// Modes and the line loop
// ---------------------------------------------------------------------------------------------

/// `no X` and `default X` differ for some commands (`default switchport` ≠ `no switchport`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Neg {
    Set,
    No,
    Default,
}

fn negation(
    c: &mut Cur,
    words: &[&'static str],
    what: &str,
) -> Result<(Neg, &'static str), Reject> {
    let first = c.keyword(words, what)?;
    let neg = match first {
        "no" => Neg::No,
        "default" => Neg::Default,
        _ => return Ok((Neg::Set, first)),
    };
    Ok((neg, c.keyword(words, what)?))
}

/// A block of configuration fabsim skips (e.g. `router bgp 65011` and its sub-commands).
struct SkippedBlock {
    header: String,
    indent: usize,
    first: usize,
    last: usize,
    col0: usize,
}

enum Mode {
    Global,
    Interface(IfId),
    Ospf,
    Acl(String),
    Skipped(SkippedBlock),
}

/// A parsed command, applied only once the whole line has parsed (so a line that fails in a
/// sub-mode and is then retried in global mode has changed nothing).
type Apply = Box<dyn FnOnce(&mut Ctx<'_>)>;

struct Ctx<'n> {
    net: &'n mut Network,
    dev: DeviceId,
    origin: &'n TextOrigin,
    /// Current line (0-based within the text).
    idx: usize,
    mode: Mode,
    warnings: Vec<Diagnostic>,
    errors: Vec<Diagnostic>,
    /// Interfaces given an address or `switchport` in this text, with the line that did it:
    /// checked at the end, because EOS accepts `ip address` before `no switchport`.
    addressed: Vec<(IfId, Span)>,
}

impl Ctx<'_> {
    fn span(&self, col0: usize) -> Span {
        self.origin.span_at(self.idx, col0)
    }

    fn warn(&mut self, col0: usize, msg: impl Into<String>) {
        let d = Diagnostic::warning(self.span(col0), msg);
        self.warnings.push(d);
    }

    fn not_modelled(&mut self, col0: usize, statement: &str) {
        self.warn(
            col0,
            format!("'{statement}' is not modelled by fabsim; ignored"),
        );
    }

    fn line(&mut self, line: &str) {
        let toks = tokenize(line);
        let Some(first) = toks.first().copied() else {
            return;
        };
        if first.text.starts_with('!') && ignored_by_design(KeywordContext::AnyMode, "!") {
            self.comment();
            return;
        }
        if let Mode::Skipped(block) = &self.mode {
            let indent = block.indent;
            if self.absorb(indent, first, &toks, line.len()) {
                return;
            }
        }
        let mut c = Cur::new(&toks, line.len());
        match self.mode_command(&mut c) {
            Ok(apply) => apply(self),
            Err(r) => {
                let d = Diagnostic::error(self.span(r.col0), r.msg);
                self.errors.push(d);
            }
        }
    }

    /// `!` leaves a modelled sub-mode. Inside a skipped block it does not: running-configs
    /// separate nested blocks with it (`router bgp` … `!` … `address-family ipv4`, seed s3a).
    fn comment(&mut self) {
        match &mut self.mode {
            Mode::Skipped(block) => block.last = self.idx,
            _ => self.mode = Mode::Global,
        }
    }

    /// Whether a line belongs to the skipped block: indented under its header, or (when the
    /// paste lost its indentation) not a global command. `exit`/`end` close the block, and so
    /// does any line starting with a modelled global command, so its errors are reported.
    fn absorb(&mut self, indent: usize, first: Tok, toks: &[Tok], len: usize) -> bool {
        let closes = matches!(
            keyword(first.text, GLOBAL_WORDS),
            Match::One("exit" | "end")
        );
        let belongs = if first.col0 > indent {
            true
        } else if closes || starts_modelled_global(toks, len) {
            false
        } else {
            parse_global(&mut Cur::new(toks, len)).is_err()
        };
        if belongs {
            if let Mode::Skipped(block) = &mut self.mode {
                block.last = self.idx;
            }
            return true;
        }
        self.close_block();
        if closes {
            self.mode = Mode::Global;
            return true;
        }
        false
    }

    fn close_block(&mut self) {
        let Mode::Skipped(block) = std::mem::replace(&mut self.mode, Mode::Global) else {
            return;
        };
        let span = self.origin.span_at(block.first, block.col0);
        let lines = if block.last > block.first {
            let last = self.origin.line + block.last as u32;
            format!(", with its block (lines {}-{last})", span.line)
        } else {
            String::new()
        };
        let msg = format!(
            "'{}' is not modelled by fabsim; ignored{lines}",
            block.header
        );
        self.warnings.push(Diagnostic::warning(span, msg));
    }

    /// Parse in the current sub-mode; a line that is not a command there is tried in global
    /// mode, as EOS does. If both fail, the error of the parse that got further is reported.
    fn mode_command(&self, c: &mut Cur) -> Result<Apply, Reject> {
        let sub = match &self.mode {
            Mode::Global | Mode::Skipped(_) => return parse_global(c),
            Mode::Interface(id) => parse_interface(c, *id, self.iface_name(*id)),
            Mode::Ospf => parse_ospf(c),
            Mode::Acl(name) => parse_acl(c, name.clone()),
        };
        let sub_err = match sub {
            Ok(apply) => return Ok(apply),
            Err(e) => e,
        };
        c.pos = 0;
        match parse_global(c) {
            Ok(apply) => Ok(Box::new(move |ctx: &mut Ctx| {
                ctx.mode = Mode::Global;
                apply(ctx)
            })),
            Err(g) if g.col0 > sub_err.col0 => Err(g),
            // Same place: an ambiguity is the more useful message (`rou` after `interface …`
            // is ambiguous globally: router, route-map).
            Err(g) if g.col0 == sub_err.col0 && g.msg.starts_with("% Ambiguous") => Err(g),
            Err(_) => Err(sub_err),
        }
    }

    fn iface_name(&self, id: IfId) -> String {
        self.net
            .interfaces
            .get(id.idx())
            .map_or_else(String::new, |i| i.name.clone())
    }

    fn iface_mut(&mut self, id: IfId) -> Option<&mut Interface> {
        self.net.interfaces.get_mut(id.idx())
    }

    fn ospf_mut(&mut self) -> Option<&mut OspfConfig> {
        self.net.devices.get_mut(self.dev.idx())?.ospf.as_mut()
    }

    fn enter_block(&mut self, header: String, col0: usize) {
        self.close_block();
        let block = SkippedBlock {
            header,
            indent: col0,
            first: self.idx,
            last: self.idx,
            col0,
        };
        self.mode = Mode::Skipped(block);
    }

    /// The interface, created if the topology did not declare it.
    fn ensure_iface(&mut self, name: &str, col0: usize) -> IfId {
        if let Some(id) = self.net.iface_by_name(self.dev, name) {
            return id;
        }
        let id = IfId(self.net.interfaces.len() as u32);
        self.net.interfaces.push(Interface {
            device: self.dev,
            name: name.to_string(),
            l2: None,
            routed: routed_by_default(name),
            admin_up: true,
            addr: AddrConfig::None,
            mtu: default_mtu(name),
            ospf: IfOspf::default(),
            nat_overload_acl: None,
            ifindex: 0,
            span: self.span(col0),
        });
        if let Some(d) = self.net.devices.get_mut(self.dev.idx()) {
            d.ifaces.push(id);
        }
        id
    }

    fn finish(mut self) -> Result<Vec<Diagnostic>, InputError> {
        self.close_block();
        self.check_switchport_addresses();
        if !self.errors.is_empty() {
            let mut all = self.errors;
            all.sort_by(|a, b| a.span.cmp(&b.span));
            return Err(InputError(all));
        }
        self.warnings.sort_by(|a, b| a.span.cmp(&b.span));
        Ok(self.warnings)
    }

    /// EOS keeps an address configured on a switchport but does not use it, and says so.
    fn check_switchport_addresses(&mut self) {
        let mut seen: Vec<IfId> = Vec::new();
        for (id, span) in self.addressed.iter().rev() {
            if seen.contains(id) {
                continue;
            }
            seen.push(*id);
            let Some(i) = self.net.interfaces.get(id.idx()) else {
                continue;
            };
            if !i.routed && i.addr != AddrConfig::None {
                let msg = format!(
                    "IP configuration will be ignored while interface {} is not a routed port",
                    i.name
                );
                let d = Diagnostic::warning(span.clone(), msg)
                    .with_hint("add `no switchport` under the interface");
                self.warnings.push(d);
            }
        }
    }
}

/// Whether a line starts with a global command fabsim models (after `no`/`default`).
fn starts_modelled_global(toks: &[Tok], len: usize) -> bool {
    let mut c = Cur::new(toks, len);
    let word = negation(&mut c, GLOBAL_WORDS, "").map(|(_, w)| w);
    matches!(word, Ok("hostname" | "interface" | "ip" | "router"))
}

/// A statement fabsim accepts but does not model: a warning, nothing else.
fn unmodelled(col0: usize, statement: String) -> Apply {
    Box::new(move |ctx: &mut Ctx| ctx.not_modelled(col0, &statement))
}

fn nothing() -> Apply {
    Box::new(|_: &mut Ctx| {})
}

/// The statement text from the start of the line, for warnings.
fn statement(c: &Cur) -> String {
    let words: Vec<&str> = c.toks.iter().map(|t| t.text).collect();
    words.join(" ")
}

// ---------------------------------------------------------------------------------------------
// Global mode
// ---------------------------------------------------------------------------------------------

fn parse_global(c: &mut Cur) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, GLOBAL_WORDS, "a configuration command")?;
    match word {
        "configure" => {
            c.opt_keyword(&["terminal"]);
            c.end()?;
            Ok(nothing())
        }
        "end" | "exit" => {
            c.end()?;
            Ok(Box::new(|ctx: &mut Ctx| {
                ctx.close_block();
                ctx.mode = Mode::Global;
            }))
        }
        "hostname" => hostname(c, neg),
        "interface" => interface(c, neg, start),
        "ip" => global_ip(c, neg, start),
        "router" => router(c, neg, start),
        w if ignored_by_design(KeywordContext::Global, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        w => {
            let text = statement(c);
            c.skip_rest();
            if GLOBAL_BLOCK_WORDS.contains(&w) && neg == Neg::Set {
                return Ok(Box::new(move |ctx: &mut Ctx| ctx.enter_block(text, start)));
            }
            Ok(unmodelled(start, text))
        }
    }
}

fn hostname(c: &mut Cur, neg: Neg) -> Result<Apply, Reject> {
    let name = match neg {
        Neg::Set => Some(c.word("a hostname")?.text.to_string()),
        Neg::No | Neg::Default => {
            c.skip_if(|_| true);
            None
        }
    };
    c.end()?;
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) {
            d.hostname = name;
        }
    }))
}

fn interface(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let name_at = c.here();
    let name = match interface_name(c) {
        Ok(name) => name,
        // `interface Ethernet1-4` / `interface Et1,Et3`: valid EOS ranges fabsim does not expand.
        Err(_) if c.peek().is_some_and(|t| is_interface_range(t.text)) => {
            let text = statement(c);
            c.skip_rest();
            return Ok(Box::new(move |ctx: &mut Ctx| ctx.enter_block(text, start)));
        }
        Err(e) => return Err(e),
    };
    c.end()?;
    match neg {
        Neg::Set => Ok(Box::new(move |ctx: &mut Ctx| {
            let id = ctx.ensure_iface(&name, name_at);
            ctx.mode = Mode::Interface(id);
        })),
        Neg::No if !routed_by_default(&name) || name.starts_with("Management") => Err(Reject {
            col0: start,
            msg: format!("% Removal of physical interfaces is not permitted ({name})"),
        }),
        Neg::No | Neg::Default => Ok(Box::new(move |ctx: &mut Ctx| {
            reset_interface(ctx, &name, neg, start)
        })),
    }
}

/// `Ethernet1-4`, `Et1,3`: a range or list after the interface number.
fn is_interface_range(text: &str) -> bool {
    text.find(|ch: char| ch.is_ascii_digit())
        .and_then(|d| text.get(d..))
        .is_some_and(|number| number.contains(['-', ',']))
}

/// `default interface X` restores defaults; `no interface X` deletes a virtual interface,
/// which fabsim (whose interface ids are fixed) models as a defaulted, shut-down one.
fn reset_interface(ctx: &mut Ctx, name: &str, neg: Neg, col0: usize) {
    let Some(id) = ctx.net.iface_by_name(ctx.dev, name) else {
        return;
    };
    if let Some(i) = ctx.iface_mut(id) {
        i.routed = routed_by_default(name);
        i.admin_up = neg == Neg::Default;
        i.addr = AddrConfig::None;
        i.mtu = default_mtu(name);
        i.ospf = IfOspf::default();
        i.nat_overload_acl = None;
    }
    if neg == Neg::No {
        let msg = format!("deleting {name} is modelled as unconfiguring and shutting it down");
        ctx.warn(col0, msg);
    }
}

fn global_ip(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    match c.keyword(GLOBAL_IP_WORDS, "an ip command")? {
        "routing" => ip_routing(c, neg, start),
        "route" => ip_route(c, neg, start),
        "access-list" => ip_access_list(c, neg, start),
        w => {
            let text = statement(c);
            c.skip_rest();
            if w == "prefix-list" && neg == Neg::Set {
                return Ok(Box::new(move |ctx: &mut Ctx| ctx.enter_block(text, start)));
            }
            Ok(unmodelled(start, text))
        }
    }
}

fn ip_routing(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["vrf"]).is_some() {
        let text = statement(c);
        c.skip_rest();
        return Ok(unmodelled(start, text));
    }
    c.end()?;
    if neg == Neg::Set {
        return Ok(nothing());
    }
    Ok(Box::new(move |ctx: &mut Ctx| {
        ctx.warn(
            start,
            "'no ip routing' is not modelled: fabsim always routes on EOS; ignored",
        )
    }))
}

/// What a static route points at.
enum NextHop {
    Via(Ipv4Addr),
    Dev(String, Option<Ipv4Addr>),
    Null0,
}

fn is_null0(text: &str) -> bool {
    text.eq_ignore_ascii_case("null0")
}

fn next_hop(c: &mut Cur) -> Result<NextHop, Reject> {
    const WHAT: &str = "a next hop (A.B.C.D, an interface or Null0)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if let Ok(a) = t.text.parse::<Ipv4Addr>() {
        c.pos += 1;
        return Ok(NextHop::Via(a));
    }
    if is_null0(t.text) {
        c.pos += 1;
        return Ok(NextHop::Null0);
    }
    let dev = interface_name(c).map_err(|_| c.expected(WHAT))?;
    let via = c.peek().and_then(|t| t.text.parse::<Ipv4Addr>().ok());
    if via.is_some() {
        c.pos += 1;
    }
    Ok(NextHop::Dev(dev, via))
}

/// `ip route [vrf V] PREFIX NEXTHOP|INTERFACE [NEXTHOP]|Null0 [DISTANCE] [tag N] [name S]`
fn ip_route(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["vrf"]).is_some() {
        c.word("a VRF name")?;
        let text = statement(c);
        c.skip_rest();
        return Ok(unmodelled(start, text));
    }
    let prefix = prefix(c, MaskForm::Netmask)?.trunc();
    if neg != Neg::Set && c.at_end() {
        return Ok(Box::new(move |ctx: &mut Ctx| {
            remove_statics(ctx, prefix, None)
        }));
    }
    let hop = next_hop(c)?;
    let distance = match c.peek() {
        Some(t) if t.text.parse::<u64>().is_ok() => {
            Some(c.number::<u8>("a distance (1-255)", 1, 255)?)
        }
        _ => None,
    };
    while let Some(opt) = c.peek() {
        let word = c.keyword(
            &["metric", "name", "tag", "track"],
            "tag, name or end of line",
        )?;
        if ignored_by_design(KeywordContext::StaticRouteOption, word) {
            c.word(&format!("a {word} value"))?;
        } else {
            // `metric`, `track`: valid EOS options that change route selection; not modelled.
            let text = statement(c);
            c.skip_rest();
            let col0 = opt.col0;
            let msg = format!("option '{word}' of '{text}' is not modelled by fabsim; ignored");
            return Ok(static_route_apply(
                prefix,
                hop,
                distance,
                neg,
                start,
                Some((col0, msg)),
            ));
        }
    }
    Ok(static_route_apply(prefix, hop, distance, neg, start, None))
}

fn static_route_apply(
    prefix: Ipv4Net,
    hop: NextHop,
    distance: Option<u8>,
    neg: Neg,
    start: usize,
    note: Option<(usize, String)>,
) -> Apply {
    let (via, dev, blackhole) = match hop {
        NextHop::Via(a) => (Some(a), None, false),
        NextHop::Dev(d, a) => (a, Some(d), false),
        NextHop::Null0 => (None, None, true),
    };
    Box::new(move |ctx: &mut Ctx| {
        if let Some((col0, msg)) = note {
            ctx.warn(col0, msg);
        }
        if neg != Neg::Set {
            remove_statics(ctx, prefix, Some((via, dev.as_deref(), blackhole)));
            return;
        }
        let route = StaticRoute {
            prefix,
            via,
            dev,
            distance,
            metric: 0,
            blackhole,
            origin: RouteOrigin::Manual,
            span: ctx.span(start),
        };
        let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
            return;
        };
        // Re-entering a route with the same next hop replaces it (e.g. a new distance).
        let same = |r: &StaticRoute| {
            r.prefix == route.prefix
                && r.via == route.via
                && r.dev == route.dev
                && r.blackhole == route.blackhole
        };
        match d.statics.iter_mut().find(|r| same(r)) {
            Some(existing) => *existing = route,
            None => d.statics.push(route),
        }
    })
}

type HopKey<'a> = (Option<Ipv4Addr>, Option<&'a str>, bool);

/// `no ip route P [NEXTHOP]`: without a next hop, every route to P goes.
fn remove_statics(ctx: &mut Ctx, prefix: Ipv4Net, hop: Option<HopKey>) {
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    d.statics.retain(|r| {
        let same_hop = hop.is_none_or(|(via, dev, bh)| {
            r.via == via && r.dev.as_deref() == dev && r.blackhole == bh
        });
        !(r.prefix == prefix && same_hop)
    });
}

fn ip_access_list(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    // `ip access-list standard NAME`: source-only ACLs, not modelled.
    if c.peek()
        .is_some_and(|t| t.text.eq_ignore_ascii_case("standard"))
    {
        c.word("standard")?;
        c.word("an ACL name")?;
        c.end()?;
        let text = statement(c);
        if neg != Neg::Set {
            return Ok(unmodelled(start, text));
        }
        return Ok(Box::new(move |ctx: &mut Ctx| ctx.enter_block(text, start)));
    }
    let name = c.word("an ACL name")?.text.to_string();
    c.end()?;
    Ok(Box::new(move |ctx: &mut Ctx| {
        let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
            return;
        };
        if neg != Neg::Set {
            d.acls.remove(&name);
            return;
        }
        d.acls.entry(name.clone()).or_insert_with(|| Acl {
            name: name.clone(),
            entries: Vec::new(),
        });
        ctx.mode = Mode::Acl(name);
    }))
}

fn router(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let kind = c.keyword(ROUTER_WORDS, "a routing protocol (e.g. ospf)")?;
    if kind != "ospf" {
        let text = statement(c);
        c.skip_rest();
        if neg != Neg::Set {
            return Ok(unmodelled(start, text));
        }
        return Ok(Box::new(move |ctx: &mut Ctx| ctx.enter_block(text, start)));
    }
    let pid = c.number::<u32>("an OSPF process id (1-65535)", 1, 65535)?;
    let vrf = match c.opt_keyword(&["vrf"]) {
        Some(_) => Some(c.word("a VRF name")?.text.to_string()),
        None => None,
    };
    c.end()?;
    let text = statement(c);
    Ok(Box::new(move |ctx: &mut Ctx| {
        if vrf.is_some_and(|v| v != "default") {
            return enter_or_warn(ctx, neg, text, start);
        }
        if neg != Neg::Set {
            return no_router_ospf(ctx, pid, &text, start);
        }
        router_ospf(ctx, pid, text, start)
    }))
}

fn enter_or_warn(ctx: &mut Ctx, neg: Neg, text: String, start: usize) {
    if neg == Neg::Set {
        ctx.enter_block(text, start);
    } else {
        ctx.not_modelled(start, &text);
    }
}

fn router_ospf(ctx: &mut Ctx, pid: u32, text: String, start: usize) {
    let span = ctx.span(start);
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    let ospf = d.ospf.get_or_insert_with(|| OspfConfig {
        process_id: pid,
        router_id: None,
        networks: Vec::new(),
        redistribute: Vec::new(),
        passive_default: false,
        passive_exceptions: Vec::new(),
        max_paths: None,
        shutdown: false,
        span,
    });
    if ospf.process_id == pid {
        ctx.mode = Mode::Ospf;
    } else {
        // fabsim models one OSPF instance per device.
        ctx.enter_block(format!("{text} (a second OSPF process)"), start);
    }
}

fn no_router_ospf(ctx: &mut Ctx, pid: u32, text: &str, start: usize) {
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    if d.ospf.as_ref().is_some_and(|o| o.process_id == pid) {
        d.ospf = None;
    } else {
        ctx.warn(start, format!("'{text}': no such OSPF process; ignored"));
    }
}

// ---------------------------------------------------------------------------------------------
// Interface mode
// ---------------------------------------------------------------------------------------------

fn parse_interface(c: &mut Cur, id: IfId, name: String) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, IF_WORDS, "an interface command")?;
    match word {
        "switchport" => switchport(c, id, neg, start, name),
        "shutdown" => {
            c.end()?;
            let up = neg != Neg::Set;
            Ok(if_apply(id, move |i| i.admin_up = up))
        }
        "mtu" => {
            let mtu = match neg {
                Neg::Set => c.number::<u32>("an MTU (68-65535)", 68, 65535)?,
                Neg::No | Neg::Default => {
                    c.skip_if(is_number);
                    default_mtu(&name)
                }
            };
            c.end()?;
            Ok(if_apply(id, move |i| i.mtu = mtu))
        }
        "ip" => if_ip(c, id, neg, start),
        w if ignored_by_design(KeywordContext::Interface, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

fn if_apply(id: IfId, f: impl FnOnce(&mut Interface) + 'static) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            f(i)
        }
    })
}

fn switchport(
    c: &mut Cur,
    id: IfId,
    neg: Neg,
    start: usize,
    name: String,
) -> Result<Apply, Reject> {
    if !c.at_end() {
        // `switchport mode trunk`, `switchport access vlan 10`: VLANs are not modelled.
        let text = statement(c);
        c.skip_rest();
        return Ok(unmodelled(start, text));
    }
    if routed_by_default(&name) {
        // EOS rejects `[no] switchport` on Loopback/Vlan/Management (netlab#1884).
        let keyword_at = c
            .toks
            .get(c.pos.saturating_sub(1))
            .map_or(start, |t| t.col0);
        return Err(Reject {
            col0: keyword_at,
            msg: format!("% Invalid input: {name} is always routed; it has no switchport mode"),
        });
    }
    let routed = neg == Neg::No;
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            i.routed = routed;
        }
        let span = ctx.span(start);
        ctx.addressed.push((id, span));
    }))
}

fn if_ip(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    match c.keyword(IF_IP_WORDS, "an interface ip command")? {
        "address" => ip_address(c, id, neg, start),
        "ospf" => if_ospf(c, id, neg, start),
        "nat" => if_nat(c, id, neg, start),
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

fn ip_address(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if neg != Neg::Set {
        c.skip_rest();
        return Ok(if_apply(id, |i| i.addr = AddrConfig::None));
    }
    if c.opt_keyword(&["dhcp"]).is_some() {
        c.end()?;
        return Ok(set_address(id, AddrConfig::Dhcp, start));
    }
    let at = c.here();
    let net = prefix(c, MaskForm::Netmask)?;
    if net.prefix_len() == 0 {
        return Err(Reject {
            col0: at,
            msg: "expected a prefix length 1-32, found '/0'".into(),
        });
    }
    if c.opt_keyword(&["secondary"]).is_some() {
        c.end()?;
        let text = statement(c);
        return Ok(unmodelled(start, text));
    }
    c.end()?;
    Ok(set_address(id, AddrConfig::Static(net), start))
}

fn set_address(id: IfId, addr: AddrConfig, start: usize) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        if let Some(i) = ctx.iface_mut(id) {
            i.addr = addr;
        }
        let span = ctx.span(start);
        ctx.addressed.push((id, span));
    })
}

fn if_ospf(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let set = neg == Neg::Set;
    match c.keyword(IF_OSPF_WORDS, "an interface OSPF command")? {
        "cost" => {
            let cost = if set {
                Some(c.number::<u32>("a cost (1-65535)", 1, 65535)?)
            } else {
                None
            };
            negated_value(c, set, is_number)?;
            Ok(if_apply(id, move |i| i.ospf.cost = cost))
        }
        "priority" => {
            let prio = if set {
                Some(c.number::<u8>("a priority (0-255)", 0, 255)?)
            } else {
                None
            };
            negated_value(c, set, is_number)?;
            Ok(if_apply(id, move |i| i.ospf.priority = prio))
        }
        "network" => {
            if set {
                c.keyword(&["point-to-point"], "point-to-point")?;
            }
            negated_value(c, set, |w| keyword(w, &["point-to-point"]).is_one())?;
            Ok(if_apply(id, move |i| i.ospf.point_to_point = set))
        }
        // `ip ospf area`, timers, authentication…: valid EOS that fabsim does not model.
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

/// `no X [VALUE]` may repeat the old value (not checked against the current one); then the
/// line must end. Anything else makes the line fall back to global mode, as on EOS
/// (`no router ospf 1` typed in router-ospf mode is not `no router-id`).
fn negated_value(c: &mut Cur, set: bool, is_value: impl Fn(&str) -> bool) -> Result<(), Reject> {
    if !set {
        c.skip_if(is_value);
    }
    c.end()
}

fn is_number(w: &str) -> bool {
    w.parse::<u64>().is_ok()
}

fn is_ipv4(w: &str) -> bool {
    w.parse::<Ipv4Addr>().is_ok()
}

/// `ip nat source dynamic access-list NAME overload`; other NAT forms warn.
fn if_nat(c: &mut Cur, id: IfId, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let pat = c.opt_keyword(&["destination", "source"]) == Some("source")
        && c.opt_keyword(&["dynamic", "static"]) == Some("dynamic")
        && c.opt_keyword(&["access-list"]).is_some();
    if !pat {
        let text = statement(c);
        c.skip_rest();
        return Ok(unmodelled(start, text));
    }
    let acl = c.word("an ACL name")?.text.to_string();
    if neg != Neg::Set {
        c.skip_rest();
        return Ok(if_apply(id, move |i| {
            if i.nat_overload_acl.as_deref() == Some(acl.as_str()) {
                i.nat_overload_acl = None;
            }
        }));
    }
    match c.keyword(&["overload", "pool"], "overload or pool")? {
        "overload" => {
            c.end()?;
            Ok(if_apply(id, move |i| i.nat_overload_acl = Some(acl)))
        }
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OSPF mode
// ---------------------------------------------------------------------------------------------

/// An edit of the device's OSPF process, applied only if it still exists.
fn ospf_apply(f: impl FnOnce(&mut OspfConfig, Span) + 'static, start: usize) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        let span = ctx.span(start);
        if let Some(o) = ctx.ospf_mut() {
            f(o, span)
        }
    })
}

fn parse_ospf(c: &mut Cur) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, OSPF_WORDS, "a router ospf command")?;
    let set = neg == Neg::Set;
    match word {
        "router-id" => {
            let id = if set {
                Some(c.ipv4("a router id (A.B.C.D)")?)
            } else {
                None
            };
            negated_value(c, set, is_ipv4)?;
            Ok(ospf_apply(move |o, _| o.router_id = id, start))
        }
        "network" => ospf_network(c, set, start),
        "redistribute" => redistribute(c, set, start),
        "passive-interface" => passive_interface(c, set, start),
        "maximum-paths" => {
            let n = if set {
                Some(c.number::<u32>("a path count (1-128)", 1, 128)?)
            } else {
                None
            };
            negated_value(c, set, is_number)?;
            Ok(ospf_apply(move |o, _| o.max_paths = n, start))
        }
        "shutdown" => {
            c.end()?;
            Ok(ospf_apply(move |o, _| o.shutdown = set, start))
        }
        w if ignored_by_design(KeywordContext::Ospf, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        "auto-cost" | "distance" | "default-information" => {
            let text = statement(c);
            c.skip_rest();
            Ok(Box::new(move |ctx: &mut Ctx| {
                ctx.warn(
                    start,
                    format!("'{text}' parsed but not modelled by fabsim; ignored"),
                )
            }))
        }
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

fn ospf_network(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let prefix = prefix(c, MaskForm::Wildcard)?.trunc();
    let area = if set || !c.at_end() {
        c.keyword(&["area"], "area")?;
        Some(area(c)?)
    } else {
        None
    };
    c.end()?;
    Ok(ospf_apply(
        move |o, span| {
            o.networks.retain(|n| n.prefix != prefix);
            if let (true, Some(area)) = (set, area) {
                o.networks.push(OspfNetwork { prefix, area, span });
            }
        },
        start,
    ))
}

fn redistribute(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let source = match c.keyword(REDIST_SOURCES, "static, connected or bgp")? {
        "static" => RedistSource::Static,
        "connected" => RedistSource::Connected,
        "bgp" => RedistSource::Bgp,
        _ => {
            let text = statement(c);
            c.skip_rest();
            return Ok(unmodelled(start, text));
        }
    };
    let (mut metric, mut metric_type, mut route_map) = (None, None, None);
    while !c.at_end() && set {
        match c.keyword(
            &["metric", "metric-type", "route-map"],
            "metric, metric-type or route-map",
        )? {
            "metric" => metric = Some(c.number::<u32>("a metric (0-16777214)", 0, 16_777_214)?),
            "metric-type" => metric_type = Some(c.number::<u8>("a metric type (1 or 2)", 1, 2)?),
            _ => route_map = Some((c.here(), c.word("a route-map name")?.text.to_string())),
        }
    }
    c.skip_rest();
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some((col0, name)) = route_map {
            let msg =
                format!("route-map '{name}' is not modelled by fabsim; redistributing without it");
            ctx.warn(col0, msg);
        }
        let span = ctx.span(start);
        let Some(o) = ctx.ospf_mut() else { return };
        o.redistribute.retain(|r| r.source != source);
        if set {
            o.redistribute.push(Redistribute {
                source,
                metric,
                metric_type,
                span,
            });
        }
    }))
}

/// `passive-interface X` / `no passive-interface X` are recorded relative to the default
/// (`passive_exceptions`), so their meaning flips with `passive-interface default`.
fn passive_interface(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["default"]).is_some() {
        c.end()?;
        return Ok(ospf_apply(
            move |o, _| {
                if o.passive_default != set {
                    o.passive_exceptions.clear();
                }
                o.passive_default = set;
            },
            start,
        ));
    }
    let name = interface_name(c)?;
    c.end()?;
    Ok(ospf_apply(
        move |o, _| {
            // An exception is "passive" when the default is active, and vice versa.
            let exception = set != o.passive_default;
            o.passive_exceptions.retain(|n| *n != name);
            if exception {
                o.passive_exceptions.push(name);
            }
        },
        start,
    ))
}

// ---------------------------------------------------------------------------------------------
// ACL mode
// ---------------------------------------------------------------------------------------------

struct AclRule {
    action: AclAction,
    protocol: Option<u8>,
    src: Ipv4Net,
    dst: Ipv4Net,
    /// Parts of the rule fabsim does not model (ports, flags, options), with their offsets.
    notes: Vec<(usize, String)>,
}

fn parse_acl(c: &mut Cur, acl: String) -> Result<Apply, Reject> {
    let start = c.here();
    let neg = match c.peek().map(|t| keyword(t.text, ACL_WORDS)) {
        Some(Match::One("no")) => Neg::No,
        Some(Match::One("default")) => Neg::Default,
        _ => Neg::Set,
    };
    if neg != Neg::Set {
        c.pos += 1;
    }
    let seq = seq_number(c)?;
    if let (Neg::No | Neg::Default, Some(seq)) = (neg, seq) {
        // `no 20`: remove by sequence number.
        c.end()?;
        return Ok(acl_edit(acl, move |a| a.entries.retain(|e| e.seq != seq)));
    }
    match c.keyword(ACL_WORDS, "permit, deny or a sequence number")? {
        word @ ("permit" | "deny") => {
            let action = if word == "permit" {
                AclAction::Permit
            } else {
                AclAction::Deny
            };
            let rule = acl_rule(c, action)?;
            if neg != Neg::Set {
                return Ok(remove_rule(acl, rule));
            }
            Ok(add_rule(acl, seq, rule, start))
        }
        "no" | "default" => Err(c.expected("permit or deny")),
        w if ignored_by_design(KeywordContext::Acl, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        _ => {
            let text = statement(c);
            c.skip_rest();
            Ok(unmodelled(start, text))
        }
    }
}

fn seq_number(c: &mut Cur) -> Result<Option<u32>, Reject> {
    match c.peek() {
        Some(t) if t.text.starts_with(|ch: char| ch.is_ascii_digit()) => {
            let what = "a sequence number (1-4294967295)";
            Ok(Some(c.number::<u32>(what, 1, u32::MAX as u64)?))
        }
        _ => Ok(None),
    }
}

/// An edit of the ACL this mode is in.
fn acl_edit(name: String, f: impl FnOnce(&mut Acl) + 'static) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        let acls = ctx.net.devices.get_mut(ctx.dev.idx()).map(|d| &mut d.acls);
        if let Some(acl) = acls.and_then(|acls| acls.get_mut(&name)) {
            f(acl)
        }
    })
}

fn add_rule(acl: String, seq: Option<u32>, rule: AclRule, start: usize) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        for (col0, msg) in &rule.notes {
            ctx.warn(*col0, msg.clone());
        }
        let span = ctx.span(start);
        let acls = ctx.net.devices.get_mut(ctx.dev.idx()).map(|d| &mut d.acls);
        let Some(a) = acls.and_then(|acls| acls.get_mut(&acl)) else {
            return;
        };
        // EOS appends after the highest sequence number, in steps of 10.
        let seq = seq.unwrap_or_else(|| {
            a.entries
                .iter()
                .map(|e| e.seq)
                .max()
                .unwrap_or(0)
                .saturating_add(10)
        });
        if a.entries.iter().any(|e| e.seq == seq) {
            let d = Diagnostic::error(span, format!("% Error: duplicate sequence number {seq}"));
            ctx.errors.push(d);
            return;
        }
        let entry = AclEntry {
            seq,
            action: rule.action,
            protocol: rule.protocol,
            src: rule.src,
            dst: rule.dst,
            span,
        };
        let at = a.entries.partition_point(|e| e.seq < seq);
        a.entries.insert(at, entry);
    })
}

fn remove_rule(acl: String, rule: AclRule) -> Apply {
    acl_edit(acl, move |a| {
        a.entries.retain(|e| {
            !(e.action == rule.action
                && e.protocol == rule.protocol
                && e.src == rule.src
                && e.dst == rule.dst)
        })
    })
}

/// `PROTOCOL SRC [PORTS] DST [PORTS] [OPTIONS]`.
fn acl_rule(c: &mut Cur, action: AclAction) -> Result<AclRule, Reject> {
    let protocol = acl_protocol(c)?;
    let mut notes = Vec::new();
    let src = acl_address(c)?;
    acl_ports(c, &mut notes);
    let dst = acl_address(c)?;
    acl_ports(c, &mut notes);
    while let Some(t) = c.peek() {
        c.pos += 1;
        if !ignored_by_design(KeywordContext::AclRuleOption, &t.text.to_ascii_lowercase()) {
            let msg = format!(
                "ACL rule option '{}' is not modelled by fabsim; ignored",
                t.text
            );
            notes.push((t.col0, msg));
        }
    }
    Ok(AclRule {
        action,
        protocol,
        src,
        dst,
        notes,
    })
}

fn acl_protocol(c: &mut Cur) -> Result<Option<u8>, Reject> {
    const WHAT: &str = "a protocol (ip, tcp, udp, icmp, … or 0-255)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if t.text.starts_with(|ch: char| ch.is_ascii_digit()) {
        return Ok(Some(c.number::<u8>(WHAT, 0, 255)?));
    }
    let names: Vec<&'static str> = ACL_PROTOCOLS.iter().map(|(n, _)| *n).collect();
    let name = c.keyword(&names, WHAT)?;
    let number = ACL_PROTOCOLS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, p)| *p);
    Ok((name != "ip").then_some(number))
}

fn acl_address(c: &mut Cur) -> Result<Ipv4Net, Reject> {
    match c.opt_keyword(&["any", "host"]) {
        Some("any") => Ok(Ipv4Net::default()),
        Some(_) => Ok(Ipv4Net::from(c.ipv4("a host address (A.B.C.D)")?)),
        None => Ok(prefix(c, MaskForm::Wildcard)?.trunc()),
    }
}

/// TCP/UDP port matches (`eq 80`, `range 1000 2000`): accepted, not modelled, so the rule
/// matches every port. Said in a warning because it widens the rule.
fn acl_ports(c: &mut Cur, notes: &mut Vec<(usize, String)>) {
    let Some(t) = c.peek() else { return };
    let Some(op) = c.opt_keyword(&["eq", "gt", "lt", "neq", "range"]) else {
        return;
    };
    let values = if op == "range" { 2 } else { 1 };
    let mut text = t.text.to_string();
    for _ in 0..values {
        if let Some(v) = c.peek() {
            text.push(' ');
            text.push_str(v.text);
            c.pos += 1;
        }
    }
    let msg = format!("port match '{text}' is not modelled by fabsim; the rule matches all ports");
    notes.push((t.col0, msg));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Severity;
    use crate::model::{Device, DeviceKind, VendorProfile};
    use std::collections::BTreeMap;

    fn origin() -> TextOrigin {
        TextOrigin {
            file: "lab.yaml".into(),
            line: 10,
            col: 5,
        }
    }

    fn switch(name: &str) -> (Network, DeviceId) {
        let mut net = Network::default();
        net.devices.push(Device {
            name: name.into(),
            kind: DeviceKind::Eos,
            hostname: None,
            ifaces: Vec::new(),
            boot_ms: 0,
            profile: VendorProfile::eos(),
            statics: Vec::new(),
            ospf: None,
            acls: BTreeMap::new(),
            ip_forward: true,
            external: None,
            span: Span::default(),
        });
        (net, DeviceId(0))
    }

    fn apply(text: &str) -> (Network, Vec<Diagnostic>) {
        let (mut net, dev) = switch("Spine-1");
        let warnings = apply_config(&mut net, dev, text, &origin())
            .unwrap_or_else(|e| panic!("unexpected errors:\n{e}"));
        (net, warnings)
    }

    fn errors(text: &str) -> Vec<Diagnostic> {
        let (mut net, dev) = switch("Spine-1");
        match apply_config(&mut net, dev, text, &origin()) {
            Ok(w) => panic!("expected errors, got warnings {w:?}"),
            Err(InputError(e)) => e,
        }
    }

    fn iface<'n>(net: &'n Network, name: &str) -> &'n Interface {
        let id = net
            .iface_by_name(DeviceId(0), name)
            .unwrap_or_else(|| panic!("no {name}"));
        net.iface(id)
    }

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    fn at(d: &Diagnostic) -> (u32, u32) {
        (d.span.line, d.span.col)
    }

    const LEAF1_S0: &str = "interface Ethernet1
no switchport
ip address 10.11.99.1/31
!
interface Ethernet2
no switchport
ip address 10.0.11.0/31
!
interface Ethernet3
no switchport
ip address 10.1.11.0/31
";

    const SPINE1_S0: &str = "interface Ethernet1
no switchport
ip address 10.11.99.0/31
!
interface Ethernet2
no switchport
ip address 10.22.99.0/31
!
interface Ethernet3
no switchport
ip address 10.33.99.0/31
router ospf 1
network 0.0.0.0/0 area 0.0.0.0
";

    /// seed-lab s0b and s0b-nat as typed (prompts removed).
    const SPINE1_S0B_NAT: &str = "conf t
int ethernet 4
no switchport
ip address dhcp
ip route 0.0.0.0 0.0.0.0 10.0.137.1
router ospf 1
redistribute static
ip access-list ACL_NAT
 permit ip 10.0.0.0/8 any log
int et4
ip nat source dynamic access-list ACL_NAT overload
";

    #[test]
    fn seed_leaf1_s0() {
        let (n, w) = apply(LEAF1_S0);
        assert!(w.is_empty(), "{w:?}");
        for (name, addr) in [
            ("Ethernet1", "10.11.99.1/31"),
            ("Ethernet2", "10.0.11.0/31"),
            ("Ethernet3", "10.1.11.0/31"),
        ] {
            let i = iface(&n, name);
            assert!(i.routed && i.admin_up);
            assert_eq!(i.addr, AddrConfig::Static(net(addr)));
            assert_eq!(i.mtu, 1500);
        }
        assert_eq!(n.device(DeviceId(0)).ifaces.len(), 3);
        assert_eq!(iface(&n, "Ethernet2").span, Span::new("lab.yaml", 14, 15));
    }

    #[test]
    fn seed_spine1_s0_s0b_nat() {
        let (mut n, dev) = switch("Spine-1");
        let w = apply_config(&mut n, dev, SPINE1_S0, &origin()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let w = apply_config(&mut n, dev, SPINE1_S0B_NAT, &origin()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        let d = n.device(dev);
        let ospf = d.ospf.as_ref().unwrap();
        assert_eq!(ospf.process_id, 1);
        assert_eq!(ospf.networks.len(), 1);
        assert_eq!(
            (ospf.networks[0].prefix, ospf.networks[0].area),
            (net("0.0.0.0/0"), 0)
        );
        assert_eq!(ospf.redistribute.len(), 1);
        assert_eq!(ospf.redistribute[0].source, RedistSource::Static);
        assert_eq!(
            (
                ospf.redistribute[0].metric,
                ospf.redistribute[0].metric_type
            ),
            (None, None)
        );
        assert_eq!(d.statics.len(), 1);
        let r = &d.statics[0];
        assert_eq!(
            (r.prefix, r.via, r.distance),
            (net("0.0.0.0/0"), Some("10.0.137.1".parse().unwrap()), None)
        );
        assert_eq!(r.origin, RouteOrigin::Manual);
        let acl = &d.acls["ACL_NAT"];
        assert_eq!(acl.entries.len(), 1);
        let e = &acl.entries[0];
        assert_eq!((e.seq, e.action, e.protocol), (10, AclAction::Permit, None));
        assert_eq!((e.src, e.dst), (net("10.0.0.0/8"), net("0.0.0.0/0")));
        let et4 = iface(&n, "Ethernet4");
        assert!(et4.routed);
        assert_eq!(et4.addr, AddrConfig::Dhcp);
        assert_eq!(et4.nat_overload_acl.as_deref(), Some("ACL_NAT"));
        assert_eq!(d.ifaces.len(), 4);
    }

    #[test]
    fn seed_s3a_router_bgp_is_one_warning() {
        let text = "router bgp 65011
neighbor 10.0.11.1 remote-as 65000
neighbor 10.1.11.1 remote-as 65001
!
address-family ipv4
neighbor 10.0.11.1 activate
neighbor 10.1.11.1 activate
router ospf 1
redistribute bgp
";
        let (n, w) = apply(text);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(at(&w[0]), (10, 5));
        assert!(
            w[0].message.contains("router bgp 65011"),
            "{}",
            w[0].message
        );
        assert!(w[0].message.contains("lines 10-16"), "{}", w[0].message);
        let ospf = n.device(DeviceId(0)).ospf.as_ref().unwrap();
        assert_eq!(ospf.redistribute[0].source, RedistSource::Bgp);
    }

    #[test]
    fn abbreviations() {
        let text = "int et4\nno sw\nip add 1.2.3.4/24\nint ethernet 5\nno switchp\nip addr 10.0.0.1 255.255.255.254\nrouter ospf 1\nredist stat\nredist conn metric 5 metric-type 1\npass def\nno passive-interface et4\nmaxi 4\nrouter-id 1.1.1.1\nnet 10.0.0.0 0.0.0.255 area 1.2.3.4\n";
        let (n, w) = apply(text);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            iface(&n, "Ethernet4").addr,
            AddrConfig::Static(net("1.2.3.4/24"))
        );
        assert_eq!(
            iface(&n, "Ethernet5").addr,
            AddrConfig::Static(net("10.0.0.1/31"))
        );
        let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
        assert_eq!(o.redistribute.len(), 2);
        assert_eq!(
            (o.redistribute[1].metric, o.redistribute[1].metric_type),
            (Some(5), Some(1))
        );
        assert!(o.passive_default);
        assert_eq!(o.passive_exceptions, vec!["Ethernet4".to_string()]);
        assert_eq!(o.max_paths, Some(4));
        assert_eq!(o.router_id, Some("1.1.1.1".parse().unwrap()));
        assert_eq!(o.networks[0].prefix, net("10.0.0.0/24"));
        assert_eq!(o.networks[0].area, u32::from(Ipv4Addr::new(1, 2, 3, 4)));
        // EOS also has max-lsa and ospfv3: these prefixes are ambiguous there too.
        let e = errors("router ospf 1\nmax 4\nrouter os 2\n");
        assert!(
            e.iter().all(|d| d.message.starts_with("% Ambiguous")),
            "{e:?}"
        );
        assert_eq!(
            e.iter().map(at).collect::<Vec<_>>(),
            vec![(11, 5), (12, 12)]
        );
    }

    #[test]
    fn canonical_names() {
        let cases = [
            ("et4", Some("Ethernet4")),
            ("Et4", Some("Ethernet4")),
            ("ethernet 4", Some("Ethernet4")),
            ("Ethernet4", Some("Ethernet4")),
            ("eth4", Some("Ethernet4")),
            ("Ethernet1/1", Some("Ethernet1/1")),
            ("et04", Some("Ethernet4")),
            ("lo0", Some("Loopback0")),
            ("loopback 0", Some("Loopback0")),
            ("ma1", Some("Management1")),
            ("vlan10", Some("Vlan10")),
            ("po10", Some("Port-Channel10")),
            ("Ethernet4.100", Some("Ethernet4.100")),
            ("v10", None),
            ("ens3", None),
            ("Ethernet", None),
            ("4", None),
            ("et4x", None),
            ("", None),
            ("ét4", None),
        ];
        for (input, want) in cases {
            assert_eq!(canonical_interface(input).as_deref(), want, "{input}");
        }
    }

    #[test]
    fn no_and_default_forms() {
        let text = "interface Ethernet1
no switchport
ip address 10.0.0.0/31
mtu 9000
shutdown
ip ospf cost 50
ip ospf priority 0
ip ospf network point-to-point
ip nat source dynamic access-list A overload
no ip address
default mtu
no shutdown
no ip ospf cost 50
no ip ospf priority
no ip ospf network point-to-point
no ip nat source dynamic access-list A overload
default switchport
ip route 10.0.0.0/8 Null0
ip route 10.1.0.0/16 10.0.0.1 200 tag 7 name x
ip route 10.1.0.0/16 Ethernet1 10.0.0.3
no ip route 10.0.0.0/8 Null0
no ip route 10.1.0.0/16 10.0.0.1
hostname S1
";
        let (n, w) = apply(text);
        assert!(w.is_empty(), "{w:?}");
        let i = iface(&n, "Ethernet1");
        assert!(!i.routed && i.admin_up);
        assert_eq!((i.addr.clone(), i.mtu), (AddrConfig::None, 1500));
        assert_eq!(i.ospf, IfOspf::default());
        assert_eq!(i.nat_overload_acl, None);
        let d = n.device(DeviceId(0));
        assert_eq!(d.statics.len(), 1);
        assert_eq!(d.statics[0].dev.as_deref(), Some("Ethernet1"));
        assert_eq!(d.hostname.as_deref(), Some("S1"));
        let (n, _) = apply("ip route 10.0.0.0/8 null0 250\nhostname X\nno hostname");
        let r = &n.device(DeviceId(0)).statics[0];
        assert!(r.blackhole && r.distance == Some(250) && r.via.is_none());
        assert_eq!(n.device(DeviceId(0)).hostname, None);
    }

    #[test]
    fn ospf_process_and_networks() {
        let text = "router ospf 1\nnetwork 10.0.0.0/8 area 0\nnetwork 10.0.0.0/8 area 1\nnetwork 192.168.0.0/16 area 0\nno network 192.168.0.0/16 area 0\nshutdown\n";
        let (n, w) = apply(text);
        assert!(w.is_empty());
        let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
        assert_eq!(o.networks.len(), 1);
        assert_eq!(o.networks[0].area, 1);
        assert!(o.shutdown);
        let (n, w) =
            apply("router ospf 1\nrouter ospf 2\nnetwork 1.0.0.0/8 area 0\nno router ospf 1\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.contains("second OSPF process"));
        assert!(n.device(DeviceId(0)).ospf.is_none());
    }

    #[test]
    fn no_router_ospf_in_ospf_mode_is_global() {
        let (n, w) = apply("router ospf 1\nrouter-id 1.1.1.1\nno router ospf 1\n");
        assert!(w.is_empty(), "{w:?}");
        assert!(n.device(DeviceId(0)).ospf.is_none());
    }

    #[test]
    fn passive_interface_exceptions() {
        let (n, _) = apply("router ospf 1\npassive-interface Et1\npassive-interface et2\nno passive-interface ethernet 1\n");
        let o = n.device(DeviceId(0)).ospf.as_ref().unwrap();
        assert!(!o.passive_default);
        assert_eq!(o.passive_exceptions, vec!["Ethernet2".to_string()]);
    }

    #[test]
    fn acl_sequences_and_removal() {
        let text = "ip access-list A
permit ip any host 1.2.3.4
15 deny ip 10.0.0.0 0.255.255.255 any
permit tcp any any eq 80
remark hello
statistics per-entry
no 15
no permit ip any host 1.2.3.4
permit 17 any any
";
        let (n, w) = apply(text);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].message.contains("eq 80"));
        assert_eq!(at(&w[0]), (13, 5 + 19));
        let acl = &n.device(DeviceId(0)).acls["A"];
        let seqs: Vec<(u32, Option<u8>)> =
            acl.entries.iter().map(|e| (e.seq, e.protocol)).collect();
        assert_eq!(seqs, vec![(25, Some(6)), (35, Some(17))]);
        let e = errors("ip access-list A\n10 permit ip any any\n10 deny ip any any\n");
        assert_eq!(at(&e[0]), (12, 5));
        assert!(e[0].message.contains("duplicate sequence"));
    }

    #[test]
    fn warnings_point_at_statements() {
        let text = "spanning-tree mode mstp
username admin privilege 15 role network-admin secret sha512 x
interface Ethernet1
   description to Leaf-1
   speed forced 10000full
   ip ospf hello-interval 5
   ip address 10.0.0.0/31
router ospf 1
   max-lsa 12000
   log-adjacency-changes
   auto-cost reference-bandwidth 100000
   redistribute connected route-map RM
no ip routing
management api http-commands
   no shutdown
!
ntp server 1.2.3.4
";
        let (_, w) = apply(text);
        let got: Vec<(u32, u32)> = w.iter().map(at).collect();
        // col: origin.col (5) + byte offset.
        assert_eq!(
            got,
            vec![
                (10, 5),
                (11, 5),
                (14, 8),
                (15, 8),
                (16, 8),
                (20, 8),
                (21, 41),
                (22, 5),
                (23, 5),
                (26, 5)
            ],
            "{w:#?}"
        );
        assert!(w.iter().all(|d| d.severity == Severity::Warning));
        assert!(w[0].message.contains("not modelled by fabsim; ignored"));
        assert!(w[4].message.contains("not a routed port"));
        assert!(w[6].message.contains("route-map 'RM'"));
        assert!(w[8].message.contains("lines 23-25"), "{}", w[8].message);
    }

    #[test]
    fn switchport_address_warning_only_if_still_l2() {
        let (_, w) = apply("interface Ethernet1\nip address 10.0.0.0/31\nno switchport\n");
        assert!(w.is_empty(), "{w:?}");
        let (_, w) =
            apply("interface Ethernet1\nno switchport\nip address 10.0.0.0/31\nswitchport\n");
        assert_eq!(w.len(), 1);
        assert_eq!(at(&w[0]), (13, 5));
    }

    #[test]
    fn loopback_defaults() {
        let (n, _) = apply("interface Loopback0\nip address 10.255.0.1/32\n");
        let i = iface(&n, "Loopback0");
        assert!(i.routed);
        assert_eq!(i.mtu, 65535);
        let e = errors("interface lo0\nno switchport\n");
        assert_eq!(at(&e[0]), (11, 8));
    }

    #[test]
    fn errors_with_positions() {
        let text = "interface Ethernet1
ip address 10.0.0.300/24
ip address 10.0.0.1 255.0.255.0
router ospf 1
network 10.0.0.0/33 area 0
network 10.0.0.0/8 area
frobnicate
i
ip route 10.0.0.0/8
ip ospf cost 0
";
        let e = errors(text);
        let got: Vec<(u32, u32, &str)> = e
            .iter()
            .map(|d| (d.span.line, d.span.col, d.message.as_str()))
            .collect();
        assert_eq!(got.len(), 8, "{got:#?}");
        assert_eq!((got[0].0, got[0].1), (11, 16));
        assert!(got[0].2.contains("found '10.0.0.300/24'"));
        assert_eq!((got[1].0, got[1].1), (12, 25));
        assert!(got[1].2.contains("contiguous netmask"));
        assert_eq!((got[2].0, got[2].1), (14, 13));
        assert!(got[2].2.contains("found '10.0.0.0/33'"), "{}", got[2].2);
        assert_eq!((got[3].0, got[3].1), (15, 28));
        assert!(got[3].2.contains("found end of line"));
        assert_eq!((got[4].0, got[4].1), (16, 5));
        assert!(got[4].2.starts_with("expected"));
        assert_eq!((got[5].0, got[5].1), (17, 5));
        assert!(got[5].2.starts_with("% Ambiguous command"), "{}", got[5].2);
        assert_eq!((got[6].0, got[6].1), (18, 24));
        // `ip ospf cost 0` in OSPF mode is not an OSPF command; global mode rejects `ospf`.
        assert_eq!((got[7].0, got[7].1), (19, 8));
        assert!(e.iter().all(|d| d.severity == Severity::Error));
        assert_eq!(errors("ip ospf cost 0\n").len(), 1);
    }

    #[test]
    fn warnings_and_errors_on_later_block_lines_use_block_col() {
        let o = TextOrigin {
            file: "t.yaml".into(),
            line: 3,
            col: 9,
        };
        let (mut n, dev) = switch("S");
        let e = apply_config(&mut n, dev, "hostname a\nip route x", &o).unwrap_err();
        assert_eq!(e.0[0].span, Span::new("t.yaml", 4, 9 + 9));
    }

    #[test]
    fn ignored_table_words_are_reachable_keywords() {
        for e in IGNORED_BY_DESIGN {
            let words: &[&str] = match e.context {
                KeywordContext::Global => GLOBAL_WORDS,
                KeywordContext::Interface => IF_WORDS,
                KeywordContext::Ospf => OSPF_WORDS,
                KeywordContext::Acl => ACL_WORDS,
                KeywordContext::StaticRouteOption => &["metric", "name", "tag", "track"],
                KeywordContext::AclRuleOption | KeywordContext::AnyMode => continue,
            };
            assert!(words.contains(&e.keyword), "{} not a keyword", e.keyword);
        }
    }

    #[test]
    fn bad_device_id_is_an_error_not_a_panic() {
        let (mut n, _) = switch("S");
        assert!(apply_config(&mut n, DeviceId(7), "hostname x", &origin()).is_err());
    }

    /// Deterministic pseudo-random garbage built from real keywords and odd tokens: applying
    /// it must never panic, whatever mode it lands in.
    #[test]
    fn garbage_never_panics() {
        const WORDS: &[&str] = &[
            "interface",
            "int",
            "et4",
            "ethernet",
            "4",
            "lo0",
            "router",
            "ospf",
            "1",
            "no",
            "default",
            "ip",
            "address",
            "route",
            "access-list",
            "permit",
            "deny",
            "any",
            "host",
            "10.0.0.0/8",
            "0.0.0.0",
            "255.255.255.0",
            "0.0.0.255",
            "area",
            "network",
            "redistribute",
            "static",
            "metric",
            "metric-type",
            "passive-interface",
            "!",
            "exit",
            "end",
            "switchport",
            "shutdown",
            "mtu",
            "99999999999999999999",
            "/",
            "1.2.3.4/40",
            "é",
            "\t",
            "nat",
            "source",
            "dynamic",
            "overload",
            "Null0",
            "tag",
            "eq",
            "range",
            "bgp",
            "vlan",
            "-",
            ",",
            "1-4",
            "4294967296",
            "tcp",
            "log",
            "seq",
            "",
            "ßß/3",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..1000 {
            let mut text = String::new();
            for _ in 0..(next() % 12) {
                if next() % 3 == 0 {
                    text.push_str("   ");
                }
                for _ in 0..(next() % 7) {
                    text.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
                    text.push(' ');
                }
                text.push('\n');
            }
            let (mut n, dev) = switch("S");
            let _ = apply_config(&mut n, dev, &text, &origin());
        }
    }
}
