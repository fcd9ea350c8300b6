//! One line as tokens and a cursor over them: keyword, number and address arguments, the
//! `no`/`default` prefix, and `Reject` (where a line stops parsing and what was expected).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::keywords::{keyword, Match};

/// A whitespace-separated word and its byte offset in the line (for diagnostics' columns).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tok<'a> {
    pub(crate) text: &'a str,
    pub(crate) col0: usize,
}

pub(crate) fn tokenize(line: &str) -> Vec<Tok<'_>> {
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

/// Why a line does not parse in a mode: where (byte offset) and what was expected.
#[derive(Debug)]
pub(super) struct Reject {
    pub(super) col0: usize,
    pub(super) msg: String,
}

/// A cursor over one line's tokens.
pub(super) struct Cur<'a> {
    pub(super) toks: &'a [Tok<'a>],
    pub(super) pos: usize,
    pub(super) eol: usize,
}

impl<'a> Cur<'a> {
    pub(super) fn new(toks: &'a [Tok<'a>], line_len: usize) -> Self {
        Cur {
            toks,
            pos: 0,
            eol: line_len,
        }
    }

    pub(super) fn peek(&self) -> Option<Tok<'a>> {
        self.toks.get(self.pos).copied()
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// Byte offset of the next token (or of the end of the line).
    pub(super) fn here(&self) -> usize {
        self.peek().map_or(self.eol, |t| t.col0)
    }

    pub(super) fn expected(&self, what: &str) -> Reject {
        let found = match self.peek() {
            Some(t) => format!("'{}'", t.text),
            None => "end of line".to_string(),
        };
        Reject {
            col0: self.here(),
            msg: format!("expected {what}, found {found}"),
        }
    }

    pub(super) fn word(&mut self, what: &str) -> Result<Tok<'a>, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        self.pos += 1;
        Ok(t)
    }

    pub(super) fn keyword(&mut self, words: &[&'static str], what: &str) -> Result<&'static str, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        match keyword(t.text, words) {
            Match::One(k) => {
                self.pos += 1;
                Ok(k)
            }
            Match::Ambiguous(hits) => Err(Reject {
                col0: t.col0,
                msg: format!("% Ambiguous command: '{}' could be {}", t.text, hits.join(", ")),
            }),
            Match::None => Err(self.expected(what)),
        }
    }

    /// Like `keyword` but leaves the cursor alone when the next word is not one of `words`.
    pub(super) fn opt_keyword(&mut self, words: &[&'static str]) -> Option<&'static str> {
        let t = self.peek()?;
        match keyword(t.text, words) {
            Match::One(k) => {
                self.pos += 1;
                Some(k)
            }
            Match::Ambiguous(_) | Match::None => None,
        }
    }

    pub(super) fn number<T: TryFrom<u64>>(&mut self, what: &str, min: u64, max: u64) -> Result<T, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        let n = t.text.parse::<u64>().ok().filter(|n| (min..=max).contains(n));
        let n = n.and_then(|n| T::try_from(n).ok()).ok_or_else(|| self.expected(what))?;
        self.pos += 1;
        Ok(n)
    }

    pub(super) fn ipv4(&mut self, what: &str) -> Result<Ipv4Addr, Reject> {
        let t = self.peek().ok_or_else(|| self.expected(what))?;
        let a = t.text.parse::<Ipv4Addr>().map_err(|_| self.expected(what))?;
        self.pos += 1;
        Ok(a)
    }

    pub(super) fn end(&self) -> Result<(), Reject> {
        match self.peek() {
            None => Ok(()),
            Some(t) => Err(Reject {
                col0: t.col0,
                msg: format!("unexpected '{}'", t.text),
            }),
        }
    }

    /// Consume the next word if `pred` holds (the optional old value of a `no` form).
    pub(super) fn skip_if(&mut self, pred: impl Fn(&str) -> bool) {
        if self.peek().is_some_and(|t| pred(t.text)) {
            self.pos += 1;
        }
    }

    pub(super) fn skip_rest(&mut self) {
        self.pos = self.toks.len();
    }
}

/// How the second half of an address is written: a netmask (`ip address`, `ip route`) or a
/// wildcard (`network … area`, ACLs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum MaskForm {
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
pub(super) fn prefix(c: &mut Cur, form: MaskForm) -> Result<Ipv4Net, Reject> {
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
        msg: format!("expected {mask_what}, found '{}'", mask_tok.map_or("", |t| t.text)),
    })?;
    Ipv4Net::new(addr, len).map_err(|_| c.expected(what))
}

/// `no X` and `default X` differ for some commands (`default switchport` ≠ `no switchport`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Neg {
    Set,
    No,
    Default,
}

pub(super) fn negation(c: &mut Cur, words: &[&'static str], what: &str) -> Result<(Neg, &'static str), Reject> {
    let first = c.keyword(words, what)?;
    let neg = match first {
        "no" => Neg::No,
        "default" => Neg::Default,
        _ => return Ok((Neg::Set, first)),
    };
    Ok((neg, c.keyword(words, what)?))
}

/// `no X [VALUE]` may repeat the old value (not checked against the current one); then the
/// line must end. Anything else makes the line fall back to global mode, as on EOS
/// (`no router ospf 1` typed in router-ospf mode is not `no router-id`).
pub(super) fn negated_value(c: &mut Cur, set: bool, is_value: impl Fn(&str) -> bool) -> Result<(), Reject> {
    if !set {
        c.skip_if(is_value);
    }
    c.end()
}

/// `X NUMBER` / `no X [NUMBER]`: the number, or None for the `no`/`default` form; then the line
/// must end, as in [`negated_value`].
pub(super) fn number_or_none<T: TryFrom<u64>>(
    c: &mut Cur,
    set: bool,
    what: &str,
    min: u64,
    max: u64,
) -> Result<Option<T>, Reject> {
    let n = if set {
        Some(c.number::<T>(what, min, max)?)
    } else {
        None
    };
    negated_value(c, set, is_number)?;
    Ok(n)
}

/// `router-id A.B.C.D` / `no router-id [A.B.C.D]` (OSPF and BGP): the id, or None.
pub(super) fn router_id(c: &mut Cur, set: bool) -> Result<Option<Ipv4Addr>, Reject> {
    let id = if set {
        Some(c.ipv4("a router id (A.B.C.D)")?)
    } else {
        None
    };
    negated_value(c, set, is_ipv4)?;
    Ok(id)
}

pub(super) fn is_number(w: &str) -> bool {
    w.parse::<u64>().is_ok()
}

pub(super) fn is_ipv4(w: &str) -> bool {
    w.parse::<Ipv4Addr>().is_ok()
}
