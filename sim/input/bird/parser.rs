//! The top level of a BIRD 1.6 configuration and its protocols: `router id`, `protocol
//! kernel|device|direct|static|bgp`, `template bgp … from`, and the statements that are valid
//! BIRD but not modelled (warnings) or ignored by design (`log`, `debug`).
//!
//! Grammar read from BIRD 1.6.8: `conf/confbase.Y` (bool, prefix), `nest/config.Y` (protocol
//! header, `proto_item`, `imexport`, interface patterns, direct), `sysdep/unix/krt.Y` (kernel,
//! device), `proto/static/config.Y`, `proto/bgp/config.Y` (options and their initial values in
//! `bgp_proto_start`) and `proto/bgp/bgp.c` `bgp_check_config` (defaults that depend on other
//! options, and the consistency errors). Like BIRD, parsing stops at the first error.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::cursor::{Cursor, PResult};
use super::lexer::TokKind;
use crate::diag::{Diagnostic, Span};
use crate::model::bgp::{
    BgpNeighbor, BgpTimers, BirdDaemon, BirdKernel, BirdStatic, BirdStaticDest, Filter, IfacePattern, NextHopSelf,
    Policy, Stmt,
};

/// What the parser collected, before it is stored on the device.
pub(super) struct Parsed {
    pub(super) daemon: BirdDaemon,
    /// `protocol bgp` instances in file order, with their `local as`.
    pub(super) neighbors: Vec<BgpNeighbor>,
    /// `local as` of the templates (used for the speaker's AS when there is no protocol).
    pub(super) template_as: Option<(u32, Span)>,
}

/// The options of a `template bgp` or `protocol bgp`: `None` = not written. A protocol starts
/// from a copy of its template's options (BIRD `proto_copy_config`) and overrides them.
#[derive(Clone, Debug, Default)]
struct BgpOpts {
    local_as: Option<u32>,
    neighbor: Option<(Ipv4Addr, Span)>,
    remote_as: Option<u32>,
    source_address: Option<Ipv4Addr>,
    /// `multihop [N]` → Some(N or 64); `direct` → Some(0).
    multihop: Option<u8>,
    passive: Option<bool>,
    gateway_recursive: Option<bool>,
    import: Option<Policy>,
    export: Option<Policy>,
    add_path: Option<(bool, bool)>,
    /// (self, keep): BIRD clears the other flag when one is set.
    next_hop: Option<(bool, bool)>,
    graceful_restart: Option<bool>,
    hold: Option<u32>,
    keepalive: Option<u32>,
    connect_retry: Option<u32>,
    connect_delay: Option<u32>,
    error_wait: Option<(u32, u32)>,
    description: Option<String>,
    rr_client: Option<bool>,
    rr_cluster_id: Option<Ipv4Addr>,
    disabled: Option<bool>,
}

/// BIRD 1.6 BGP options that fabsim accepts and ignores (with a warning): the first keyword
/// of each `bgp_proto` alternative in `proto/bgp/config.Y` that has no place in the model.
const BGP_UNMODELLED: &[&str] = &[
    "password",
    "startup",
    "missing",
    "path",
    "med",
    "igp",
    "prefer",
    "deterministic",
    "default",
    "disable",
    "enable",
    "capabilities",
    "advertise",
    "setkey",
    "route",
    "interpret",
    "secondary",
    "allow",
    "long",
    "check",
    "bfd",
    "interface",
    "rs",
];

/// Deepest nesting of `{…}`, `(…)`, `!` and `if` in filter code.
const MAX_NESTING: usize = 64;

/// The symbol namespace is shared by protocols, templates, filters and functions, as in BIRD.
pub(super) struct Parser {
    pub(super) cur: Cursor,
    pub(super) warnings: Vec<Diagnostic>,
    pub(super) daemon: BirdDaemon,
    pub(super) symbols: BTreeMap<String, Span>,
    templates: BTreeMap<String, BgpOpts>,
    neighbors: Vec<BgpNeighbor>,
    template_as: Option<(u32, Span)>,
    /// Per-kind counters for unnamed protocols (`kernel1`, `static1`, `bgp1`, …).
    counters: BTreeMap<&'static str, u32>,
    /// Current nesting of blocks and parentheses in filter code (bounded, so that hostile
    /// input cannot overflow the stack).
    pub(super) nesting: usize,
}

impl Parser {
    pub(super) fn new(cur: Cursor, sources: Vec<String>) -> Self {
        Parser {
            cur,
            warnings: Vec::new(),
            daemon: BirdDaemon {
                sources,
                ..BirdDaemon::default()
            },
            symbols: BTreeMap::new(),
            templates: BTreeMap::new(),
            neighbors: Vec::new(),
            template_as: None,
            counters: BTreeMap::new(),
            nesting: 0,
        }
    }

    /// Enters one level of filter nesting; errors beyond `MAX_NESTING`.
    pub(super) fn enter(&mut self) -> PResult<()> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            let msg = format!("filter code nested deeper than {MAX_NESTING} levels is not supported by fabsim");
            return Err(Diagnostic::error(self.cur.span(), msg));
        }
        Ok(())
    }

    pub(super) fn warn(&mut self, span: Span, msg: impl Into<String>) {
        self.warnings.push(Diagnostic::warning(span, msg));
    }

    /// Skips a valid-but-unmodelled statement with a warning naming it.
    fn unmodelled(&mut self, what: &str, span: Span) -> PResult<()> {
        self.warn(
            span,
            format!("`{what}` is valid BIRD but not modelled by fabsim; ignored"),
        );
        self.cur.skip_statement()
    }

    /// Defines a symbol; BIRD rejects a name defined twice.
    pub(super) fn define(&mut self, name: &str, span: &Span) -> PResult<()> {
        if let Some(prev) = self.symbols.get(name) {
            let msg = format!("`{name}` is already defined at {prev}");
            return Err(Diagnostic::error(span.clone(), msg));
        }
        self.symbols.insert(name.to_string(), span.clone());
        Ok(())
    }

    pub(super) fn parse(mut self) -> PResult<(Parsed, Vec<Diagnostic>)> {
        while !self.cur.at_eof() {
            self.top_statement()?;
        }
        let parsed = Parsed {
            daemon: self.daemon,
            neighbors: self.neighbors,
            template_as: self.template_as,
        };
        Ok((parsed, self.warnings))
    }

    fn top_statement(&mut self) -> PResult<()> {
        if self.cur.eat_punct(";") {
            return Ok(());
        }
        let TokKind::Word(w) = self.cur.peek().kind.clone() else {
            return Err(self.cur.expected(TOP_EXPECTED));
        };
        let span = self.cur.span();
        match w.as_str() {
            "router" => {
                self.cur.bump();
                self.cur.keyword("id")?;
                let id = self.router_id()?;
                self.cur.semi("`router id`")?;
                self.daemon.router_id = Some(id);
                Ok(())
            }
            // Logging and debugging change nothing fabsim simulates (ignored by design).
            "log" | "debug" | "timeformat" | "mrtdump" => self.cur.skip_statement(),
            "listen" | "table" | "eval" | "graceful" => self.unmodelled(&w, span),
            "protocol" => self.protocol(false),
            "template" => self.protocol(true),
            "function" => self.function_def(),
            "filter" => self.filter_def(),
            "define" | "roa" | "attribute" => Err(Diagnostic::error(span, format!("`{w}` is not supported by fabsim"))),
            _ => Err(self.cur.expected(TOP_EXPECTED)),
        }
    }

    /// `idval`: an IPv4 address or a 32-bit number (`conf/confbase.Y`).
    fn router_id(&mut self) -> PResult<Ipv4Addr> {
        match self.cur.peek().kind {
            TokKind::Num(n) => {
                self.cur.bump();
                Ok(Ipv4Addr::from(n))
            }
            _ => self.cur.ip("a router id like 10.0.0.1"),
        }
    }

    // --- protocols ---------------------------------------------------------------------------

    /// `protocol|template KIND [NAME] [from TEMPLATE] { … }`.
    fn protocol(&mut self, template: bool) -> PResult<()> {
        let start = self.cur.bump().span;
        let (kind, kind_span) = self.cur.word("a protocol type (kernel, device, direct, static, bgp)")?;
        let kind: &'static str = match kind.as_str() {
            "kernel" => "kernel",
            "device" => "device",
            "direct" => "direct",
            "static" => "static",
            "bgp" => "bgp",
            "ospf" | "rip" | "pipe" | "bfd" | "radv" | "babel" => {
                let msg = format!("protocol {kind} is valid BIRD but not modelled by fabsim; ignored");
                self.warn(kind_span, msg);
                return self.skip_header_and_block();
            }
            other => {
                let msg = format!("expected a protocol type (kernel, device, direct, static, bgp), found `{other}`");
                return Err(Diagnostic::error(kind_span, msg));
            }
        };
        if template && kind != "bgp" {
            let msg = format!("`template {kind}` is not supported by fabsim (only `template bgp`)");
            return Err(Diagnostic::error(kind_span, msg));
        }
        let (name, name_span) = self.proto_name(kind, template, &start)?;
        let mut opts = BgpOpts::default();
        if self.cur.eat_word("from") {
            let (from, from_span) = self.cur.word("a template name after `from`")?;
            if kind != "bgp" {
                let msg = format!("`protocol {kind} … from` is not supported by fabsim (templates are bgp only)");
                return Err(Diagnostic::error(from_span, msg));
            }
            opts = self.templates.get(&from).cloned().ok_or_else(|| {
                Diagnostic::error(
                    from_span,
                    format!("no template named `{from}` (define it before its use)"),
                )
            })?;
        }
        self.define(&name, &name_span)?;
        self.cur.punct("{")?;
        match kind {
            "kernel" => self.kernel(&start)?,
            "device" => self.device()?,
            "direct" => self.direct()?,
            "static" => self.statics()?,
            _ => {
                while !self.cur.eat_punct("}") {
                    self.bgp_item(&name, &mut opts)?;
                }
                if template {
                    if self.template_as.is_none() {
                        self.template_as = opts.local_as.map(|a| (a, name_span));
                    }
                    self.templates.insert(name, opts);
                } else {
                    let n = self.bgp_finish(name, opts, name_span)?;
                    self.neighbors.push(n);
                }
            }
        }
        Ok(())
    }

    /// The protocol's name, or BIRD's generated one (`kernel1`, `bgp2`: `cf_default_name`).
    fn proto_name(&mut self, kind: &'static str, template: bool, start: &Span) -> PResult<(String, Span)> {
        if let TokKind::Word(w) = &self.cur.peek().kind {
            if w != "from" {
                let w = w.clone();
                return Ok((w, self.cur.bump().span));
            }
        }
        if template {
            return Err(self.cur.expected("a template name"));
        }
        let n = self.counters.entry(kind).or_insert(0);
        *n += 1;
        Ok((format!("{kind}{n}"), start.clone()))
    }

    fn skip_header_and_block(&mut self) -> PResult<()> {
        while !self.cur.peek().is_punct("{") {
            if self.cur.at_eof() {
                return Err(self.cur.expected("`{`"));
            }
            self.cur.bump();
        }
        self.cur.skip_block()
    }

    /// The items every protocol has (`nest/config.Y` `proto_item`). Returns `Some(policy)` for
    /// import/export (and the other items a protocol may store); `None` when the next word is
    /// not a generic item.
    fn proto_item(&mut self, owner: &str) -> PResult<Option<Imex>> {
        let TokKind::Word(w) = self.cur.peek().kind.clone() else {
            return Ok(None);
        };
        let span = self.cur.span();
        match w.as_str() {
            "debug" | "mrtdump" => {
                self.cur.skip_statement()?;
                Ok(Some(Imex::Consumed))
            }
            "import" | "export" => {
                self.cur.bump();
                if matches!(&self.cur.peek().kind, TokKind::Word(k) if k == "limit" || k == "keep") {
                    self.unmodelled(&format!("{w} {}", word_of(&self.cur.peek().kind)), span)?;
                    return Ok(Some(Imex::Consumed));
                }
                let policy = self.imexport(&format!("{owner}.{w}"))?;
                self.cur.semi(&format!("`{w}`"))?;
                Ok(Some(if w == "import" {
                    Imex::Import(policy)
                } else {
                    Imex::Export(policy)
                }))
            }
            "preference" | "receive" | "vrf" | "table" | "router" => {
                self.unmodelled(&w, span)?;
                Ok(Some(Imex::Consumed))
            }
            "disabled" => {
                self.cur.bump();
                let v = self.cur.opt_bool()?;
                self.cur.semi("`disabled`")?;
                Ok(Some(Imex::Disabled(v)))
            }
            "description" => {
                self.cur.bump();
                let d = self.cur.string("a description in quotes")?;
                self.cur.semi("`description`")?;
                Ok(Some(Imex::Description(d)))
            }
            _ => Ok(None),
        }
    }

    /// `imexport`: `all`, `none`, `filter NAME`, `filter { … }` or `where COND`. Inline filters
    /// are stored under `name` (which contains a `.`, so it cannot clash with a BIRD symbol).
    fn imexport(&mut self, name: &str) -> PResult<Policy> {
        let span = self.cur.span();
        if self.cur.eat_word("all") {
            return Ok(Policy::All);
        }
        if self.cur.eat_word("none") {
            return Ok(Policy::None);
        }
        if self.cur.eat_word("where") {
            let cond = self.cond()?;
            let body = vec![Stmt::If {
                cond,
                then: vec![Stmt::Accept],
                otherwise: vec![Stmt::Reject],
            }];
            return Ok(self.inline_filter(name, body, span));
        }
        if !self.cur.eat_word("filter") {
            return Err(self
                .cur
                .expected("`all`, `none`, `filter NAME`, `filter { … }` or `where …`"));
        }
        if self.cur.peek().is_punct("{") {
            let body = self.filter_body()?;
            return Ok(self.inline_filter(name, body, span));
        }
        let (f, f_span) = self.cur.word("a filter name")?;
        if !self.daemon.filters.contains_key(&f) {
            let msg = format!("no filter named `{f}` (BIRD needs filters defined before their use)");
            return Err(Diagnostic::error(f_span, msg));
        }
        Ok(Policy::Filter(f))
    }

    fn inline_filter(&mut self, name: &str, body: Vec<Stmt>, span: Span) -> Policy {
        let filter = Filter {
            name: name.to_string(),
            body,
            span,
        };
        self.daemon.filters.insert(name.to_string(), filter);
        Policy::Filter(name.to_string())
    }

    /// `protocol kernel` (`sysdep/unix/krt.Y`). Defaults: import all, export none (every
    /// protocol's, `nest/proto.c` `proto_config_new`), scan time 60 (`krt.c`).
    fn kernel(&mut self, start: &Span) -> PResult<()> {
        let mut k = BirdKernel {
            learn: false,
            persist: false,
            scan_time: None,
            import: Policy::All,
            export: Policy::None,
            graceful_restart: false,
            merge_paths: None,
        };
        while !self.cur.eat_punct("}") {
            match self.proto_item("kernel")? {
                Some(Imex::Import(p)) => k.import = p,
                Some(Imex::Export(p)) => k.export = p,
                Some(Imex::Disabled(_) | Imex::Description(_)) => {}
                Some(Imex::Consumed) => {}
                None => self.kernel_item(&mut k)?,
            }
        }
        if self.daemon.kernel.is_some() {
            self.warn(
                start.clone(),
                "a second `protocol kernel` is not modelled by fabsim; ignored",
            );
        } else {
            self.daemon.kernel = Some(k);
        }
        Ok(())
    }

    fn kernel_item(&mut self, k: &mut BirdKernel) -> PResult<()> {
        let (w, span) = self.cur.word(KERNEL_EXPECTED)?;
        match w.as_str() {
            "learn" => k.learn = self.cur.opt_bool()?,
            "persist" => k.persist = self.cur.opt_bool()?,
            "scan" => {
                self.cur.keyword("time")?;
                k.scan_time = Some(self.cur.num("a scan time in seconds")?);
            }
            "graceful" => {
                self.cur.keyword("restart")?;
                k.graceful_restart = self.cur.opt_bool()?;
            }
            "merge" => {
                self.cur.keyword("paths")?;
                let on = self.cur.opt_bool()?;
                // KRT_DEFAULT_ECMP_LIMIT (sysdep/unix/krt.h) when no `limit` is given.
                let mut limit = 16;
                if self.cur.eat_word("limit") {
                    let at = self.cur.span();
                    limit = self.cur.num("a path limit (1-255)")?;
                    if !(1..=255).contains(&limit) {
                        return Err(Diagnostic::error(at, "merge paths limit must be in range 1-255"));
                    }
                }
                k.merge_paths = on.then_some(limit);
            }
            "device" | "kernel" | "metric" => return self.unmodelled(&w, span),
            _ => {
                let msg = format!("unknown kernel protocol option `{w}` (expected {KERNEL_EXPECTED})");
                return Err(Diagnostic::error(span, msg));
            }
        }
        self.cur.semi(&format!("`{}`", option_name(&w)))
    }

    fn device(&mut self) -> PResult<()> {
        self.daemon.device = true;
        while !self.cur.eat_punct("}") {
            if self.proto_item("device")?.is_some() {
                continue;
            }
            let (w, span) = self.cur.word("`scan time N;`")?;
            match w.as_str() {
                "scan" => {
                    self.cur.keyword("time")?;
                    self.cur.num("a scan time in seconds")?;
                    self.cur.semi("`scan time`")?;
                }
                "primary" => self.unmodelled(&w, span)?,
                _ => {
                    let msg = format!("unknown device protocol option `{w}` (expected scan time, primary)");
                    return Err(Diagnostic::error(span, msg));
                }
            }
        }
        Ok(())
    }

    /// `protocol direct`: `interface PATTERN, …;` lines, appended in order.
    fn direct(&mut self) -> PResult<()> {
        let mut patterns = self.daemon.direct.take().unwrap_or_default();
        while !self.cur.eat_punct("}") {
            if self.proto_item("direct")?.is_some() {
                continue;
            }
            let (w, span) = self.cur.word("`interface \"PATTERN\", …;`")?;
            match w.as_str() {
                "interface" => loop {
                    let exclude = self.cur.eat_punct("-");
                    let at = self.cur.span();
                    let pattern = self.cur.string("an interface pattern in quotes like \"eth*\"")?;
                    if matches!(self.cur.peek().kind, TokKind::Ip(_)) {
                        let msg = "interface patterns with a prefix are not supported by fabsim";
                        return Err(Diagnostic::error(at, msg));
                    }
                    patterns.push(IfacePattern { exclude, pattern });
                    if !self.cur.eat_punct(",") {
                        self.cur.semi("the interface patterns")?;
                        break;
                    }
                },
                "check" => self.unmodelled(&w, span)?,
                _ => {
                    let msg = format!("unknown direct protocol option `{w}` (expected interface, check link)");
                    return Err(Diagnostic::error(span, msg));
                }
            }
        }
        self.daemon.direct = Some(patterns);
        Ok(())
    }

    /// `protocol static`: `route P blackhole|unreachable|prohibit|via A;`.
    fn statics(&mut self) -> PResult<()> {
        while !self.cur.eat_punct("}") {
            if self.proto_item("static")?.is_some() {
                continue;
            }
            let (w, span) = self.cur.word("`route PREFIX …;`")?;
            match w.as_str() {
                "route" => {
                    let prefix = self.cur.prefix()?;
                    let dest_span = self.cur.span();
                    let (dest, _) = self.cur.word("blackhole, unreachable, prohibit or via ADDRESS")?;
                    let dest = match dest.as_str() {
                        "blackhole" | "drop" => BirdStaticDest::Blackhole,
                        "unreachable" => BirdStaticDest::Unreachable,
                        "prohibit" => {
                            let msg = "`prohibit` is modelled as `unreachable` by fabsim";
                            self.warn(dest_span, msg);
                            BirdStaticDest::Unreachable
                        }
                        "via" if matches!(self.cur.peek().kind, TokKind::Ip(_)) => {
                            BirdStaticDest::Via(self.cur.ip("a gateway address")?)
                        }
                        "via" | "recursive" | "multipath" => {
                            let msg = format!("static routes `{dest} …` of this form are not supported by fabsim");
                            return Err(Diagnostic::error(dest_span, msg));
                        }
                        other => {
                            let msg =
                                format!("expected blackhole, unreachable, prohibit or via ADDRESS, found `{other}`");
                            return Err(Diagnostic::error(dest_span, msg));
                        }
                    };
                    self.cur.semi("the static route")?;
                    self.daemon.statics.push(BirdStatic { prefix, dest, span });
                }
                "check" | "igp" => self.unmodelled(&w, span)?,
                _ => {
                    let msg = format!("unknown static protocol option `{w}` (expected route, check link, igp table)");
                    return Err(Diagnostic::error(span, msg));
                }
            }
        }
        Ok(())
    }

    // --- BGP ---------------------------------------------------------------------------------

    /// One option inside `template bgp` / `protocol bgp` (`proto/bgp/config.Y` `bgp_proto`).
    fn bgp_item(&mut self, owner: &str, o: &mut BgpOpts) -> PResult<()> {
        match self.proto_item(owner)? {
            Some(Imex::Import(p)) => o.import = Some(p),
            Some(Imex::Export(p)) => o.export = Some(p),
            Some(Imex::Disabled(v)) => o.disabled = Some(v),
            Some(Imex::Description(d)) => o.description = Some(d),
            Some(Imex::Consumed) => {}
            None => return self.bgp_option(o),
        }
        Ok(())
    }

    fn bgp_option(&mut self, o: &mut BgpOpts) -> PResult<()> {
        let (w, span) = self.cur.word("a BGP option")?;
        match w.as_str() {
            "local" => {
                if let TokKind::Ip(a) = self.cur.peek().kind {
                    self.cur.bump();
                    o.source_address = Some(a);
                }
                self.cur.keyword("as")?;
                o.local_as = Some(self.cur.num("an AS number")?);
            }
            "neighbor" => self.bgp_neighbor(o)?,
            "source" => {
                self.cur.keyword("address")?;
                o.source_address = Some(self.cur.ip("a source address")?);
            }
            "multihop" => {
                o.multihop = Some(64);
                if let TokKind::Num(n) = self.cur.peek().kind {
                    let at = self.cur.span();
                    self.cur.bump();
                    let ttl = u8::try_from(n).ok().filter(|t| *t >= 1);
                    o.multihop = Some(ttl.ok_or_else(|| Diagnostic::error(at, "multihop must be in range 1-255"))?);
                }
            }
            "direct" => o.multihop = Some(0),
            "ttl" => {
                self.cur.keyword("security")?;
                if self.cur.opt_bool()? {
                    self.warn(span, "`ttl security on` (GTSM) is not modelled by fabsim; ignored");
                }
            }
            "passive" => o.passive = Some(self.cur.opt_bool()?),
            "gateway" => {
                let (g, g_span) = self.cur.word("`direct` or `recursive`")?;
                o.gateway_recursive = Some(match g.as_str() {
                    "recursive" => true,
                    "direct" => false,
                    other => {
                        let msg = format!("expected `direct` or `recursive`, found `{other}`");
                        return Err(Diagnostic::error(g_span, msg));
                    }
                });
            }
            "add" => {
                self.cur.keyword("paths")?;
                o.add_path = Some(if self.cur.eat_word("rx") {
                    (true, false)
                } else if self.cur.eat_word("tx") {
                    (false, true)
                } else {
                    let on = self.cur.opt_bool()?;
                    (on, on)
                });
            }
            "next" => {
                self.cur.keyword("hop")?;
                let (m, m_span) = self.cur.word("`self` or `keep`")?;
                o.next_hop = Some(match m.as_str() {
                    "self" => (true, false),
                    "keep" => (false, true),
                    other => {
                        let msg = format!("expected `self` or `keep`, found `{other}`");
                        return Err(Diagnostic::error(m_span, msg));
                    }
                });
            }
            "graceful" => {
                self.cur.keyword("restart")?;
                if self.cur.eat_word("time") {
                    self.cur.num("a restart time in seconds")?;
                    self.warn(span, "`graceful restart time` is not modelled by fabsim; ignored");
                } else if self.cur.eat_word("aware") {
                    // BIRD's default mode; the model's flag is "restart-capable".
                    o.graceful_restart = Some(false);
                } else {
                    o.graceful_restart = Some(self.cur.opt_bool()?);
                }
            }
            "hold" => {
                self.cur.keyword("time")?;
                o.hold = Some(self.cur.num("a hold time in seconds")?);
            }
            "keepalive" => {
                self.cur.keyword("time")?;
                o.keepalive = Some(self.cur.num("a keepalive time in seconds")?);
            }
            "connect" => {
                let (which, w_span) = self.cur.word("`delay` or `retry`")?;
                self.cur.keyword("time")?;
                let n = self.cur.num("a time in seconds")?;
                match which.as_str() {
                    "delay" => o.connect_delay = Some(n),
                    "retry" => o.connect_retry = Some(n),
                    other => {
                        let msg = format!("expected `delay` or `retry`, found `{other}`");
                        return Err(Diagnostic::error(w_span, msg));
                    }
                }
            }
            // BIRD's deprecated spelling of `connect delay time`.
            "start" => {
                self.cur.keyword("delay")?;
                self.cur.keyword("time")?;
                o.connect_delay = Some(self.cur.num("a time in seconds")?);
            }
            "error" if self.cur.peek().is_word("wait") => {
                self.cur.bump();
                self.cur.keyword("time")?;
                let min = self.cur.num("the minimum error wait time")?;
                self.cur.punct(",")?;
                let max = self.cur.num("the maximum error wait time")?;
                o.error_wait = Some((min, max));
            }
            "error" => return self.unmodelled("error forget time", span),
            "rr" => {
                if self.cur.eat_word("client") {
                    o.rr_client = Some(true);
                } else {
                    self.cur.keyword("cluster")?;
                    self.cur.keyword("id")?;
                    o.rr_cluster_id = Some(self.router_id()?);
                }
            }
            w if BGP_UNMODELLED.contains(&w) => return self.unmodelled(w, span),
            other => {
                let msg = format!("unknown BGP option `{other}` (expected {BGP_EXPECTED})");
                return Err(Diagnostic::error(span, msg));
            }
        }
        self.cur.semi(&format!("`{}`", option_name(&w)))
    }

    /// `neighbor A [port N] as N` (the options may come in either order, `bgp_nbr_opts`).
    fn bgp_neighbor(&mut self, o: &mut BgpOpts) -> PResult<()> {
        if let TokKind::Ip(a) = self.cur.peek().kind {
            let at = self.cur.bump().span;
            // BIRD allows one neighbour address per instance, a template's included.
            if let Some((_, prev)) = &o.neighbor {
                let msg = format!("only one neighbor per BGP protocol is allowed (the first is at {prev})");
                return Err(Diagnostic::error(at, msg));
            }
            o.neighbor = Some((a, at));
        }
        loop {
            if self.cur.eat_word("as") {
                o.remote_as = Some(self.cur.num("an AS number")?);
            } else if self.cur.eat_word("port") {
                let at = self.cur.span();
                let port = self.cur.num("a port number")?;
                if !(1..=65535).contains(&port) {
                    return Err(Diagnostic::error(at, "invalid port number (expected 1-65535)"));
                }
                if port != 179 {
                    let msg = format!("BGP port {port} is not modelled by fabsim (sessions use 179)");
                    self.warn(at, msg);
                }
            } else {
                return Ok(());
            }
        }
    }

    /// The protocol's options with BIRD's defaults filled in (`bgp_proto_start`,
    /// `bgp_check_config`, `proto_config_new`), checked as BIRD checks them.
    fn bgp_finish(&mut self, name: String, o: BgpOpts, span: Span) -> PResult<BgpNeighbor> {
        let err = |msg: &str| Diagnostic::error(span.clone(), format!("protocol {name}: {msg}"));
        let local_as = o
            .local_as
            .ok_or_else(|| err("local AS number must be set (`local as N;`)"))?;
        let (address, _) = o
            .neighbor
            .ok_or_else(|| err("neighbor must be configured (`neighbor A as N;`)"))?;
        let remote_as = o
            .remote_as
            .ok_or_else(|| err("remote AS number must be set (`neighbor A as N;`)"))?;
        let internal = local_as == remote_as;
        // bgp_check_config: eBGP is direct, iBGP multihop 64 unless configured.
        let multihop = o.multihop.unwrap_or(if internal { 64 } else { 0 });
        // bgp_check_config: gateway recursive when multihop, else direct, unless configured.
        let gateway_recursive = o.gateway_recursive.unwrap_or(multihop != 0);
        if multihop != 0 && !gateway_recursive {
            return Err(err("multihop BGP cannot use `gateway direct`"));
        }
        let rr_client = o.rr_client.unwrap_or(false);
        if rr_client && !internal {
            return Err(err("only an internal (same AS) neighbor can be an `rr client`"));
        }
        let (add_path_rx, add_path_tx) = o.add_path.unwrap_or((false, false));
        let (next_hop_self, next_hop_keep) = o.next_hop.unwrap_or((false, false));
        let mut n = BgpNeighbor::new(address, span);
        n.name = Some(name);
        n.remote_as = Some(remote_as);
        n.local_as = Some(local_as);
        n.source_address = o.source_address;
        n.multihop = (multihop != 0).then_some(multihop);
        n.next_hop_self = NextHopSelf::every_path_if(next_hop_self);
        n.next_hop_keep = next_hop_keep;
        n.route_reflector_client = rr_client;
        n.rr_cluster_id = o.rr_cluster_id;
        n.shutdown = o.disabled.unwrap_or(false);
        n.passive = o.passive.unwrap_or(false);
        n.add_path_rx = add_path_rx;
        n.add_path_tx = add_path_tx;
        n.gateway_recursive = gateway_recursive;
        // Every BIRD protocol imports all and exports none unless told otherwise:
        // nest/proto.c proto_config_new sets out_filter = FILTER_REJECT and leaves in_filter
        // NULL, which is FILTER_ACCEPT (filter/filter.h).
        n.import = o.import.unwrap_or(Policy::All);
        n.export = o.export.unwrap_or(Policy::None);
        // bgp_proto_start: hold 240, connect delay 5, connect retry 120, error wait 60..300.
        // Keepalive stays unset: BIRD derives it from the *negotiated* hold time (hold/3,
        // proto/bgp/packets.c bgp_rx_open), which only the session knows.
        n.timers = BgpTimers {
            hold: Some(o.hold.unwrap_or(240)),
            keepalive: o.keepalive,
            connect_retry: Some(o.connect_retry.unwrap_or(120)),
            connect_delay: Some(o.connect_delay.unwrap_or(5)),
            error_wait: Some(o.error_wait.unwrap_or((60, 300))),
        };
        // BIRD's default is `graceful restart aware` (helper only), modelled as false.
        n.graceful_restart = o.graceful_restart.unwrap_or(false);
        n.description = o.description;
        Ok(n)
    }
}

/// What a generic protocol item produced.
enum Imex {
    Import(Policy),
    Export(Policy),
    Disabled(bool),
    Description(String),
    Consumed,
}

/// An option's name as written, from its first word, for "expected `;` after …".
fn option_name(first: &str) -> &str {
    match first {
        "scan" => "scan time",
        "graceful" => "graceful restart",
        "merge" => "merge paths",
        "local" => "local as",
        "source" => "source address",
        "ttl" => "ttl security",
        "add" => "add paths",
        "next" => "next hop",
        "hold" => "hold time",
        "keepalive" => "keepalive time",
        "connect" => "connect … time",
        "start" => "start delay time",
        "error" => "error wait time",
        other => other,
    }
}

fn word_of(k: &TokKind) -> String {
    match k {
        TokKind::Word(w) => w.clone(),
        other => other.to_string(),
    }
}

const TOP_EXPECTED: &str =
    "`protocol`, `template`, `filter`, `function`, `router id`, `include`, `log`, `debug` or `listen`";
const KERNEL_EXPECTED: &str = "learn, persist, scan time, import, export, graceful restart, merge paths, device routes";
const BGP_EXPECTED: &str = "local as, neighbor, source address, multihop, passive, gateway, import, export, \
     add paths, next hop, graceful restart, hold time, keepalive time, connect delay time, connect retry time, \
     error wait time, rr client, rr cluster id, description, …";
