//! Arista EOS configuration text → the vendor-independent model; it records configuration and
//! never computes routing. Owns `apply_config`: the line loop, the modes, and the rule that a line
//! that is not a command of the current sub-mode is retried in global mode, as on EOS.
//!
//! Lines are read as typed after `configure terminal`, or as in a startup-config, with EOS CLI
//! semantics: unique-prefix keyword abbreviation, `no`/`default` forms, sub-modes that fall back to
//! global mode. Valid EOS that fabsim does not model is a warning; anything EOS would reject is an
//! error.

mod acl;
mod bgp;
mod cursor;
mod global;
mod ignored;
mod interface;
mod keywords;
mod ospf;
mod routes;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bgp;

use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::model::{Device, DeviceId, IfId, Network};

use cursor::{Cur, Reject};
use global::parse_global;
use ignored::{ignored_by_design, SkippedBlock};

pub use ignored::{IgnoredKeyword, KeywordContext, IGNORED_BY_DESIGN};
pub use interface::canonical_interface;
// The tokenizer is shared with `input::frr` (the same word-and-column split).
pub(crate) use cursor::{tokenize, Tok};

/// Apply EOS configuration-mode lines (as typed after `configure terminal`, or as in a
/// startup-config) to device `dev`. Returns warnings; Err(InputError) with all errors for
/// malformed lines.
pub fn apply_config(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
) -> Result<Vec<Diagnostic>, InputError> {
    super::check_device(net, dev, origin)?;
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
    Bgp,
    /// `address-family ipv4 [unicast]` inside router bgp.
    BgpAf,
    /// An unmodelled sub-mode of router bgp (another address family, `vrf`, `vlan`).
    BgpOther(bgp::OtherKind),
    Skipped(SkippedBlock),
}

/// The modes a line falls back to when it is not a command of the current one, innermost first.
#[derive(Clone, Copy)]
enum Parent {
    RouterBgp,
    Global,
}

/// An edit of one of the device's configurations (`get` finds it), applied only if it still
/// exists when the line is applied.
fn edit_apply<T: 'static>(
    get: fn(&mut Device) -> Option<&mut T>,
    f: impl FnOnce(&mut T, Span) + 'static,
    start: usize,
) -> Apply {
    Box::new(move |ctx: &mut Ctx| {
        let span = ctx.span(start);
        if let Some(t) = ctx.net.devices.get_mut(ctx.dev.idx()).and_then(get) {
            f(t, span)
        }
    })
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

    /// `!` is a comment: it leaves no mode. EOS's own running-config puts `!` between a block's
    /// nested sub-modes (`router bgp` … `   !` … `   address-family ipv4`), and the seed's pasted
    /// s3a text (indentation lost) relies on `address-family ipv4` after `!` still being in
    /// router-bgp mode. In a skipped block it extends the block.
    fn comment(&mut self) {
        if let Mode::Skipped(block) = &mut self.mode {
            block.last = self.idx;
        }
    }

    /// Parse in the current sub-mode; a line that is not a command there is tried in each
    /// enclosing mode up to global, as EOS does. If all fail, the error of the parse that got
    /// furthest is reported.
    fn mode_command(&self, c: &mut Cur) -> Result<Apply, Reject> {
        let (sub, parents): (Result<Apply, Reject>, &[Parent]) = match &self.mode {
            Mode::Global | Mode::Skipped(_) => return parse_global(c),
            Mode::Interface(id) => (
                interface::parse_interface(c, *id, self.iface_name(*id)),
                &[Parent::Global],
            ),
            Mode::Ospf => (ospf::parse_ospf(c), &[Parent::Global]),
            Mode::Acl(name) => (acl::parse_acl(c, name.clone()), &[Parent::Global]),
            Mode::Bgp => (bgp::parse_bgp(c, bgp::Level::Router), &[Parent::Global]),
            Mode::BgpAf => (bgp::parse_bgp(c, bgp::Level::Af), &[Parent::RouterBgp, Parent::Global]),
            Mode::BgpOther(kind) => (bgp::parse_other(c, *kind), &[Parent::RouterBgp, Parent::Global]),
        };
        let mut err = match sub {
            Ok(apply) => return Ok(apply),
            Err(e) => e,
        };
        for parent in parents {
            c.pos = 0;
            let (parsed, mode) = match parent {
                Parent::RouterBgp => (bgp::parse_bgp(c, bgp::Level::Router), Mode::Bgp),
                Parent::Global => (parse_global(c), Mode::Global),
            };
            match parsed {
                Ok(apply) => {
                    return Ok(Box::new(move |ctx: &mut Ctx| {
                        ctx.mode = mode;
                        apply(ctx)
                    }))
                }
                Err(e) => err = further(err, e),
            }
        }
        Err(err)
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

/// Of an inner mode's error and an enclosing mode's, the one that got further; at the same
/// place an ambiguity is the more useful message (`rou` after `interface …` is ambiguous
/// globally: router, route-map).
fn further(inner: Reject, outer: Reject) -> Reject {
    let ambiguous = outer.col0 == inner.col0 && outer.msg.starts_with("% Ambiguous");
    if outer.col0 > inner.col0 || ambiguous {
        outer
    } else {
        inner
    }
}
