//! Arista EOS configuration text → the vendor-independent model; it records configuration and
//! never computes routing. Owns `apply_config`: the line loop, the modes, and the rule that a line
//! that is not a command of the current sub-mode is retried in global mode, as on EOS.
//!
//! Lines are read as typed after `configure terminal`, or as in a startup-config, with EOS CLI
//! semantics: unique-prefix keyword abbreviation, `no`/`default` forms, sub-modes that fall back to
//! global mode. Valid EOS that fabsim does not model is a warning; anything EOS would reject is an
//! error.

mod acl;
mod cursor;
mod global;
mod ignored;
mod interface;
mod keywords;
mod ospf;
mod routes;

#[cfg(test)]
mod tests;

use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::model::{DeviceId, IfId, Network};

use cursor::{tokenize, Cur, Reject};
use global::parse_global;
use ignored::{ignored_by_design, SkippedBlock};

pub use ignored::{IgnoredKeyword, KeywordContext, IGNORED_BY_DESIGN};
pub use interface::canonical_interface;

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

    /// Parse in the current sub-mode; a line that is not a command there is tried in global
    /// mode, as EOS does. If both fail, the error of the parse that got further is reported.
    fn mode_command(&self, c: &mut Cur) -> Result<Apply, Reject> {
        let sub = match &self.mode {
            Mode::Global | Mode::Skipped(_) => return parse_global(c),
            Mode::Interface(id) => interface::parse_interface(c, *id, self.iface_name(*id)),
            Mode::Ospf => ospf::parse_ospf(c),
            Mode::Acl(name) => acl::parse_acl(c, name.clone()),
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
}
