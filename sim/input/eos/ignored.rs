//! What fabsim accepts but does not model: the table of keywords ignored by design (no effect on
//! forwarding, no warning), the not-modelled warnings, and the skipped blocks of unmodelled modes.

use crate::diag::Diagnostic;

use super::cursor::{Cur, Neg, Tok};
use super::global::{parse_global, starts_modelled_global};
use super::keywords::{keyword, Match, GLOBAL_WORDS};
use super::{Apply, Ctx, Mode};

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
        context: KeywordContext::BgpOption,
        keyword: "log-neighbor-changes",
        why: "`bgp log-neighbor-changes`: syslog messages on session changes only",
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
    /// After `bgp` in router-bgp mode (`bgp log-neighbor-changes`).
    BgpOption,
    Acl,
    /// A trailing option of an ACL rule (`permit ip any any log`).
    AclRuleOption,
    /// A trailing option of `ip route` (`… tag 5 name uplink`).
    StaticRouteOption,
}

pub(super) fn ignored_by_design(context: KeywordContext, word: &str) -> bool {
    IGNORED_BY_DESIGN
        .iter()
        .any(|e| e.context == context && e.keyword == word)
}

/// A block of configuration fabsim skips (e.g. `router isis 1` and its sub-commands).
pub(super) struct SkippedBlock {
    header: String,
    pub(super) indent: usize,
    first: usize,
    pub(super) last: usize,
    col0: usize,
}

impl Ctx<'_> {
    pub(super) fn not_modelled(&mut self, col0: usize, statement: &str) {
        self.warn(col0, format!("'{statement}' is not modelled by fabsim; ignored"));
    }

    /// Whether a line belongs to the skipped block: indented under its header, or (when the
    /// paste lost its indentation) not a global command. `exit`/`end` close the block, and so
    /// does any line starting with a modelled global command, so its errors are reported.
    pub(super) fn absorb(&mut self, indent: usize, first: Tok, toks: &[Tok], len: usize) -> bool {
        let closes = matches!(keyword(first.text, GLOBAL_WORDS), Match::One("exit" | "end"));
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

    pub(super) fn close_block(&mut self) {
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
        let msg = format!("'{}' is not modelled by fabsim; ignored{lines}", block.header);
        self.warnings.push(Diagnostic::warning(span, msg));
    }

    pub(super) fn enter_block(&mut self, header: String, col0: usize) {
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
}

/// A statement fabsim accepts but does not model: the rest of the line is consumed, and applying
/// it is a warning, nothing else.
pub(super) fn skip_unmodelled(c: &mut Cur, start: usize) -> Apply {
    let text = statement(c);
    c.skip_rest();
    Box::new(move |ctx: &mut Ctx| ctx.not_modelled(start, &text))
}

/// A command fabsim does not model that opens a sub-mode: the rest of the line is consumed, and
/// applying it skips the block that follows (see [`enter_or_warn`]).
pub(super) fn skip_block(c: &mut Cur, neg: Neg, start: usize) -> Apply {
    let text = statement(c);
    c.skip_rest();
    Box::new(move |ctx: &mut Ctx| enter_or_warn(ctx, neg, text, start))
}

/// An unmodelled command that opens a sub-mode skips its block; its `no`/`default` form is a
/// single-line statement, warned about.
pub(super) fn enter_or_warn(ctx: &mut Ctx, neg: Neg, text: String, start: usize) {
    if neg == Neg::Set {
        ctx.enter_block(text, start);
    } else {
        ctx.not_modelled(start, &text);
    }
}

pub(super) fn nothing() -> Apply {
    Box::new(|_: &mut Ctx| {})
}

/// The statement text from the start of the line, for warnings.
pub(super) fn statement(c: &Cur) -> String {
    let words: Vec<&str> = c.toks.iter().map(|t| t.text).collect();
    words.join(" ")
}
