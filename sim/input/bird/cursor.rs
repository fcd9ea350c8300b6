//! A cursor over the token stream shared by the protocol and filter parsers: typed takes
//! (number, address, prefix, string), "expected X, found Y" errors at the offending token, and
//! skipping of valid-but-unmodelled statements and blocks.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::lexer::{Tok, TokKind};
use crate::diag::{Diagnostic, Span};

pub(super) type PResult<T> = Result<T, Diagnostic>;

pub(super) struct Cursor {
    toks: Vec<Tok>,
    pos: usize,
}

impl Cursor {
    /// `toks` must end with an `Eof` token (the lexer guarantees it).
    pub(super) fn new(toks: Vec<Tok>) -> Self {
        Cursor { toks, pos: 0 }
    }

    pub(super) fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    /// The token `n` ahead (the final `Eof` when past the end).
    pub(super) fn peek_at(&self, n: usize) -> &Tok {
        let last = self.toks.len().saturating_sub(1);
        &self.toks[(self.pos + n).min(last)]
    }

    pub(super) fn span(&self) -> Span {
        self.peek().span.clone()
    }

    pub(super) fn at_eof(&self) -> bool {
        self.peek().kind == TokKind::Eof
    }

    pub(super) fn bump(&mut self) -> Tok {
        let t = self.peek().clone();
        if t.kind != TokKind::Eof {
            self.pos += 1;
        }
        t
    }

    /// An error at the next token: "expected WHAT, found TOKEN".
    pub(super) fn expected(&self, what: &str) -> Diagnostic {
        Diagnostic::error(self.span(), format!("expected {what}, found {}", self.peek().kind))
    }

    pub(super) fn eat_word(&mut self, w: &str) -> bool {
        let hit = self.peek().is_word(w);
        if hit {
            self.pos += 1;
        }
        hit
    }

    pub(super) fn eat_punct(&mut self, p: &str) -> bool {
        let hit = self.peek().is_punct(p);
        if hit {
            self.pos += 1;
        }
        hit
    }

    pub(super) fn punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    pub(super) fn keyword(&mut self, w: &str) -> PResult<()> {
        if self.eat_word(w) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{w}`")))
        }
    }

    /// The `;` that ends a statement; the message names the statement.
    pub(super) fn semi(&mut self, after: &str) -> PResult<()> {
        if self.eat_punct(";") {
            Ok(())
        } else {
            Err(self.expected(&format!("`;` after {after}")))
        }
    }

    pub(super) fn word(&mut self, what: &str) -> PResult<(String, Span)> {
        match &self.peek().kind {
            TokKind::Word(w) => {
                let w = w.clone();
                Ok((w, self.bump().span))
            }
            _ => Err(self.expected(what)),
        }
    }

    pub(super) fn num(&mut self, what: &str) -> PResult<u32> {
        match self.peek().kind {
            TokKind::Num(n) => {
                self.bump();
                Ok(n)
            }
            _ => Err(self.expected(what)),
        }
    }

    pub(super) fn ip(&mut self, what: &str) -> PResult<Ipv4Addr> {
        match self.peek().kind {
            TokKind::Ip(a) => {
                self.bump();
                Ok(a)
            }
            _ => Err(self.expected(what)),
        }
    }

    pub(super) fn string(&mut self, what: &str) -> PResult<String> {
        match &self.peek().kind {
            TokKind::Str(s) => {
                let s = s.clone();
                self.bump();
                Ok(s)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// `A/N` with no host bits set: BIRD rejects `10.0.0.1/24` ("Invalid prefix",
    /// `conf/confbase.Y` `prefix`; "Invalid network prefix" in `filter/config.Y` `fprefix_s`).
    pub(super) fn prefix(&mut self) -> PResult<Ipv4Net> {
        let start = self.span();
        let addr = self.ip("a prefix like 10.0.0.0/24")?;
        self.punct("/")?;
        let len_span = self.span();
        let len = self.num("a prefix length (0-32)")?;
        let net = u8::try_from(len)
            .ok()
            .and_then(|l| Ipv4Net::new(addr, l).ok())
            .ok_or_else(|| Diagnostic::error(len_span, format!("invalid prefix length {len} (expected 0-32)")))?;
        if net.trunc().addr() != addr {
            let msg = format!(
                "invalid prefix {addr}/{len}: host bits are set (did you mean {}?)",
                net.trunc()
            );
            return Err(Diagnostic::error(start, msg));
        }
        Ok(net)
    }

    /// A BIRD `bool`: `on|off|yes|no|NUM`, or nothing ("silence means agreement",
    /// `conf/confbase.Y`).
    pub(super) fn opt_bool(&mut self) -> PResult<bool> {
        let v = match &self.peek().kind {
            TokKind::Word(w) if w == "on" || w == "yes" => true,
            TokKind::Word(w) if w == "off" || w == "no" => false,
            TokKind::Num(n) => *n != 0,
            _ => return Ok(true),
        };
        self.bump();
        Ok(v)
    }

    /// Skips to and past the `;` that ends the current statement, stepping over balanced
    /// `{…}`, `(…)` and `[…]` (as in `debug { states };`). Stops at an unbalanced `}`.
    pub(super) fn skip_statement(&mut self) -> PResult<()> {
        let mut depth = 0usize;
        loop {
            let t = self.peek();
            match &t.kind {
                TokKind::Eof => return Err(self.expected("`;`")),
                TokKind::Punct(";") if depth == 0 => {
                    self.bump();
                    return Ok(());
                }
                TokKind::Punct("{" | "(" | "[") => depth += 1,
                TokKind::Punct("}" | ")" | "]") => {
                    if depth == 0 {
                        return Err(self.expected("`;`"));
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips a `{ … }` block starting at the next token (which must be `{`), braces balanced.
    pub(super) fn skip_block(&mut self) -> PResult<()> {
        self.punct("{")?;
        let mut depth = 1usize;
        while depth > 0 {
            match self.bump().kind {
                TokKind::Eof => return Err(self.expected("`}`")),
                TokKind::Punct("{") => depth += 1,
                TokKind::Punct("}") => depth -= 1,
                _ => {}
            }
        }
        Ok(())
    }
}
