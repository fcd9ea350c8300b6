//! BIRD 1.6 configuration text → tokens with their file positions, `include` expanded.
//!
//! Follows BIRD's own lexer (`conf/cf-lex.l`, read not copied): `#` comments to end of line,
//! `/* … */` comments that do not nest, dotted quads as addresses, decimal and `0x` numbers that
//! must fit 32 bits, `"…"` strings on one line, symbols `[A-Za-z_][A-Za-z0-9_]*` (or quoted with
//! `'…'`), the two-character operators `!= !~ <= >= && ||`, and single-character punctuation.
//! `include "F";` is a lexical construct there too: the included file's tokens replace it (depth
//! limit 8, BIRD's `MAX_INCLUDE_DEPTH`).

use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;

use crate::diag::{Diagnostic, Span, TextOrigin};

/// BIRD's `MAX_INCLUDE_DEPTH` (`conf/cf-lex.l`).
const MAX_INCLUDE_DEPTH: usize = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TokKind {
    /// A keyword or a symbol name (BIRD decides which by table lookup; so do the parsers).
    Word(String),
    Num(u32),
    Ip(Ipv4Addr),
    Str(String),
    /// Punctuation and operators: `; { } ( ) [ ] , = ~ ! / + - * % < > : . ? |` and the
    /// two-character ones.
    Punct(&'static str),
    /// End of the configuration (after every include has been spliced in).
    Eof,
}

impl fmt::Display for TokKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokKind::Word(w) => write!(f, "`{w}`"),
            TokKind::Num(n) => write!(f, "`{n}`"),
            TokKind::Ip(a) => write!(f, "`{a}`"),
            TokKind::Str(s) => write!(f, "\"{s}\""),
            TokKind::Punct(p) => write!(f, "`{p}`"),
            TokKind::Eof => f.write_str("end of file"),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Tok {
    pub(super) kind: TokKind,
    pub(super) span: Span,
}

impl Tok {
    pub(super) fn is_word(&self, w: &str) -> bool {
        matches!(&self.kind, TokKind::Word(x) if x == w)
    }
    pub(super) fn is_punct(&self, p: &str) -> bool {
        matches!(&self.kind, TokKind::Punct(x) if *x == p)
    }
}

/// Include fragments by name: (text, where it starts).
pub type Includes = BTreeMap<String, (String, TextOrigin)>;

/// Tokenizes `text` (starting at `origin`) and splices in every `include`. The result always
/// ends with one `Eof` token. `sources` collects the files read, in order.
pub(super) fn tokens(
    text: &str,
    origin: &TextOrigin,
    includes: &Includes,
    sources: &mut Vec<String>,
) -> Result<Vec<Tok>, Diagnostic> {
    let mut out = Vec::new();
    expand(text, origin, includes, sources, 0, &mut out)?;
    // End of file: just past the main text's last character.
    let last = text.lines().count().saturating_sub(1);
    let width = text.lines().last().map_or(0, |l| l.chars().count());
    let end = origin.span_at(last, width);
    out.push(Tok {
        kind: TokKind::Eof,
        span: end,
    });
    Ok(out)
}

fn expand(
    text: &str,
    origin: &TextOrigin,
    includes: &Includes,
    sources: &mut Vec<String>,
    depth: usize,
    out: &mut Vec<Tok>,
) -> Result<(), Diagnostic> {
    let mut toks = lex(text, origin)?.into_iter();
    while let Some(tok) = toks.next() {
        if !tok.is_word("include") {
            out.push(tok);
            continue;
        }
        let at = tok.span;
        let name = match toks.next().map(|t| t.kind) {
            Some(TokKind::Str(s)) if !s.is_empty() => s,
            Some(TokKind::Str(_)) => return Err(Diagnostic::error(at, "include with an empty file name")),
            _ => return Err(Diagnostic::error(at, "expected a file name in quotes after `include`")),
        };
        match toks.next() {
            Some(t) if t.is_punct(";") => {}
            t => {
                let span = t.map_or(at, |t| t.span);
                return Err(Diagnostic::error(span, "expected `;` after the include file name"));
            }
        }
        if depth + 1 > MAX_INCLUDE_DEPTH {
            let msg = format!("include `{name}` is nested deeper than {MAX_INCLUDE_DEPTH} levels");
            return Err(Diagnostic::error(at, msg));
        }
        let Some((inc_text, inc_origin)) = find_include(includes, &name) else {
            let known: Vec<&str> = includes.keys().map(String::as_str).collect();
            let msg = format!(
                "include file `{name}` was not given (bird_includes has: {})",
                if known.is_empty() {
                    "nothing".to_string()
                } else {
                    known.join(", ")
                }
            );
            return Err(Diagnostic::error(at, msg));
        };
        sources.push(name);
        expand(inc_text, inc_origin, includes, sources, depth + 1, out)?;
    }
    Ok(())
}

/// By exact name, else by the last path component (`/etc/bird/x.cfg` → `x.cfg`).
fn find_include<'a>(includes: &'a Includes, name: &str) -> Option<(&'a str, &'a TextOrigin)> {
    let base = name.rsplit('/').next().unwrap_or(name);
    includes
        .get(name)
        .or_else(|| includes.get(base))
        .map(|(t, o)| (t.as_str(), o))
}

const TWO_CHAR: [&str; 6] = ["!=", "!~", "<=", ">=", "&&", "||"];
const ONE_CHAR: [&str; 22] = [
    "=", "{", "}", ":", ";", ",", ".", "(", ")", "+", "*", "/", "%", "<", ">", "~", "[", "]", "?", "!", "|", "-",
];

/// Tokenizes one file's text without expanding includes.
fn lex(text: &str, origin: &TextOrigin) -> Result<Vec<Tok>, Diagnostic> {
    let mut toks = Vec::new();
    let mut in_block_comment: Option<Span> = None;
    for (idx, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let at = |col0: usize| origin.span_at(idx, col0);
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if in_block_comment.is_some() {
                if c == '*' && chars.get(i + 1) == Some(&'/') {
                    in_block_comment = None;
                    i += 2;
                } else if c == '/' && chars.get(i + 1) == Some(&'*') {
                    return Err(Diagnostic::error(at(i), "nested comments are not supported by BIRD"));
                } else {
                    i += 1;
                }
                continue;
            }
            let start = i;
            let kind = match c {
                ' ' | '\t' | '\r' => {
                    i += 1;
                    continue;
                }
                '#' => break,
                '/' if chars.get(i + 1) == Some(&'*') => {
                    in_block_comment = Some(at(i));
                    i += 2;
                    continue;
                }
                '"' => {
                    let Some(len) = chars[i + 1..].iter().position(|&c| c == '"') else {
                        return Err(Diagnostic::error(
                            at(i),
                            "unterminated string (strings end on their line)",
                        ));
                    };
                    i += len + 2;
                    TokKind::Str(chars[start + 1..start + 1 + len].iter().collect())
                }
                '\'' => {
                    let len = chars[i + 1..].iter().position(|&c| c == '\'');
                    let name: Option<String> = len.map(|l| chars[i + 1..i + 1 + l].iter().collect());
                    let ok = |s: &String| {
                        !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.:".contains(c))
                    };
                    match name.filter(ok) {
                        Some(name) => {
                            i += name.chars().count() + 2;
                            TokKind::Word(name)
                        }
                        None => return Err(Diagnostic::error(at(i), "expected a quoted symbol like 'my-name'")),
                    }
                }
                c if c.is_ascii_alphabetic() || c == '_' => {
                    while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                        i += 1;
                    }
                    TokKind::Word(chars[start..i].iter().collect())
                }
                c if c.is_ascii_digit() => {
                    let (kind, len) = number(&chars[i..]).map_err(|m| Diagnostic::error(at(i), m))?;
                    i += len;
                    kind
                }
                _ => {
                    let two = |p: &&&str| {
                        let mut pc = p.chars();
                        pc.next() == Some(c) && pc.next() == chars.get(i + 1).copied()
                    };
                    if let Some(p) = TWO_CHAR.iter().find(two) {
                        i += 2;
                        TokKind::Punct(p)
                    } else if let Some(p) = ONE_CHAR.iter().find(|p| p.starts_with(c)) {
                        i += 1;
                        TokKind::Punct(p)
                    } else {
                        return Err(Diagnostic::error(at(i), format!("unknown character `{c}`")));
                    }
                }
            };
            toks.push(Tok { kind, span: at(start) });
        }
    }
    if let Some(span) = in_block_comment {
        return Err(Diagnostic::error(span, "unterminated comment (`/*` without `*/`)"));
    }
    Ok(toks)
}

/// A number or a dotted-quad address at the start of `chars`; returns it and its length.
fn number(chars: &[char]) -> Result<(TokKind, usize), String> {
    if chars.len() > 1 && chars[0] == '0' && chars[1] == 'x' {
        let len = 2 + chars[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        let text: String = chars[2..len].iter().collect();
        let n = u32::from_str_radix(&text, 16).map_err(|_| format!("number out of range: 0x{text}"))?;
        return Ok((TokKind::Num(n), len));
    }
    let digits = |from: usize| chars[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    // A dotted quad is four digit runs joined by dots (BIRD's `{DIGIT}+\.{DIGIT}+\.…`).
    let mut len = digits(0);
    let mut parts = 1;
    while parts < 4 && chars.get(len) == Some(&'.') && digits(len + 1) > 0 {
        len += 1 + digits(len + 1);
        parts += 1;
    }
    let text: String = chars[..len].iter().collect();
    if parts == 4 {
        let addr = text.parse().map_err(|_| format!("invalid IPv4 address {text}"))?;
        return Ok((TokKind::Ip(addr), len));
    }
    // Not an address: only the first digit run is the number (`1.5` is `1` `.` `5`, and `2s`
    // is `2` `s`, as in BIRD's `expr_us`).
    let len = digits(0);
    let text: String = chars[..len].iter().collect();
    let n = text
        .parse::<u32>()
        .map_err(|_| format!("number out of range: {text}"))?;
    Ok((TokKind::Num(n), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> TextOrigin {
        TextOrigin {
            file: "t.cfg".into(),
            line: 1,
            col: 1,
        }
    }

    fn kinds(text: &str) -> Vec<TokKind> {
        let mut src = Vec::new();
        tokens(text, &origin(), &Includes::new(), &mut src)
            .expect("lexes")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn prefixes_comments_operators() {
        let k = kinds("net ~ 10.0.0.0/8; # c\n/* x\n y */ a != b && !c");
        assert_eq!(k[0], TokKind::Word("net".into()));
        assert_eq!(k[2], TokKind::Ip(Ipv4Addr::new(10, 0, 0, 0)));
        assert_eq!(k[3], TokKind::Punct("/"));
        assert_eq!(k[4], TokKind::Num(8));
        assert_eq!(k[7], TokKind::Punct("!="));
        assert_eq!(k[9], TokKind::Punct("&&"));
        assert_eq!(k[10], TokKind::Punct("!"));
        assert_eq!(*k.last().expect("eof"), TokKind::Eof);
    }

    #[test]
    fn errors_have_positions() {
        let mut src = Vec::new();
        let e = tokens("a;\n  \"open", &origin(), &Includes::new(), &mut src).expect_err("unterminated");
        assert_eq!(e.span, Span::new("t.cfg", 2, 3));
        let e = tokens("x = 1.2.3.999;", &origin(), &Includes::new(), &mut src).expect_err("bad ip");
        assert_eq!(e.span, Span::new("t.cfg", 1, 5));
        let e = tokens("/* a", &origin(), &Includes::new(), &mut src).expect_err("comment");
        assert!(e.message.contains("unterminated comment"));
    }

    #[test]
    fn include_splices_and_missing_names_the_line() {
        let mut inc = Includes::new();
        let o = TextOrigin {
            file: "inc.cfg".into(),
            line: 1,
            col: 1,
        };
        inc.insert("inc.cfg".into(), ("b;".into(), o));
        let mut src = Vec::new();
        let t = tokens("a;\ninclude \"inc.cfg\";\nc;", &origin(), &inc, &mut src).expect("ok");
        assert_eq!(t[2].kind, TokKind::Word("b".into()));
        assert_eq!(t[2].span.file, "inc.cfg");
        assert_eq!(src, vec!["inc.cfg".to_string()]);
        let e = tokens("\ninclude \"nope.cfg\";", &origin(), &inc, &mut src).expect_err("missing");
        assert_eq!(e.span, Span::new("t.cfg", 2, 1));
        // An include of itself stops at the depth limit instead of recursing forever.
        let o = TextOrigin {
            file: "self.cfg".into(),
            line: 1,
            col: 1,
        };
        inc.insert("self.cfg".into(), ("include \"self.cfg\";".into(), o));
        let e = tokens("include \"self.cfg\";", &origin(), &inc, &mut src).expect_err("loop");
        assert!(e.message.contains("nested deeper"));
    }
}
