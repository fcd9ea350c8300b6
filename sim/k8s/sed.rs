//! GNU sed's `s` command, the way runbooks edit configuration files in place
//! (`sed -i 's#--service-cluster-ip-range=10.96.0.0/12#--service-cluster-ip-range=10.100.0.0/16#' FILE`,
//! k8s-cidr-migrations.md §2.4): any delimiter, `g` and `I` flags, several `-e` expressions or
//! `;`-separated commands, basic (default) or extended (`-E`/`-r`) regular expressions, `&` and
//! `\1`…`\9` in the replacement; and the `d` command (`sed -i '/--feature-gates/d' FILE`). A
//! command may take an address — a line number, `$`, `/REGEX/` (or `\cREGEXc`, `I` for any
//! case), or a range `ADDR1,ADDR2` — and `!` to apply where it does not match. sed works line
//! by line: each command whose address selects the line applies to it, and `d` drops the line
//! and ends its commands.
//!
//! Other sed commands (`p`, `a`, `i`, `c`, `{…}`, …) are not modelled: a script using them is an
//! error naming them, never a silent no-op.

use regex::{Captures, Regex, RegexBuilder};

/// A `sed -i [-E] [-e SCRIPT]… [SCRIPT] FILE…` command line: its commands and the files it
/// edits in place.
#[derive(Debug)]
pub struct InPlace<'a> {
    pub commands: Vec<Command>,
    pub files: Vec<&'a str>,
}

/// One command of a script: which lines it applies to, and what it does to them.
#[derive(Debug)]
pub struct Command {
    address: Option<Address>,
    /// `!`: the lines the address does not select.
    negated: bool,
    op: Op,
}

#[derive(Debug)]
enum Op {
    Subst(Subst),
    /// `d`: the line is not printed and the next commands do not see it.
    Delete,
}

#[derive(Debug)]
enum Address {
    One(Addr),
    /// `ADDR1,ADDR2`: from a line ADDR1 selects to the next line ADDR2 selects (a line number
    /// at or before the start: that one line), or the end.
    Range(Addr, Addr),
}

#[derive(Debug)]
enum Addr {
    Line(usize),
    Last,
    Regex(Regex),
}

/// Reads sed's arguments (after `sed`). Only in-place editing is modelled: without `-i` sed
/// prints the edited text, which no runbook step needs; a backup suffix (`-i.bak`) would leave a
/// second file in the manifest directory, which the kubelet runs as a pod of its own.
pub fn in_place<'a>(args: &[&'a str]) -> Result<InPlace<'a>, String> {
    let (mut in_place, mut extended) = (false, false);
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut words = args.iter().copied();
    while let Some(a) = words.next() {
        if let Some(script) = a.strip_prefix("--expression=") {
            scripts.push(script);
            continue;
        }
        match a {
            "-i" | "--in-place" => in_place = true,
            "-E" | "-r" | "--regexp-extended" => extended = true,
            "-e" | "--expression" => scripts.push(words.next().ok_or("sed: option requires an argument -- 'e'")?),
            _ if a.starts_with("-i") || a.starts_with("--in-place=") => {
                return Err(format!("sed {a}: a backup suffix is not modelled by fabsim"))
            }
            _ if a.starts_with('-') && a.len() > 1 => return Err(format!("sed {a}: option not modelled by fabsim")),
            _ => operands.push(a),
        }
    }
    if !in_place {
        return Err("sed without -i prints the edited text: fabsim runs `sed -i` only".into());
    }
    let mut operands = operands.into_iter();
    if scripts.is_empty() {
        scripts.push(
            operands
                .next()
                .ok_or("sed: no script given (usage: sed -i 's/OLD/NEW/' FILE)")?,
        );
    }
    let mut commands = Vec::new();
    for (n, script) in scripts.iter().enumerate() {
        commands.extend(parse(script, n + 1, extended)?);
    }
    let files: Vec<&str> = operands.collect();
    if files.is_empty() {
        return Err("sed: no input files".into());
    }
    Ok(InPlace { commands, files })
}

/// One `s/REGEX/REPLACEMENT/FLAGS` command.
#[derive(Debug)]
pub struct Subst {
    re: Regex,
    replacement: Vec<Piece>,
    global: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// `&` (0) or `\N`.
    Group(usize),
}

/// GNU sed's message for a malformed expression (`-e expression #N, char C: …`).
fn malformed(expr_no: usize, char_no: usize, what: &str) -> String {
    format!("sed: -e expression #{expr_no}, char {char_no}: {what}")
}

/// The commands of one script (`-e` argument number `expr_no`, counted from 1).
pub fn parse(script: &str, expr_no: usize, extended: bool) -> Result<Vec<Command>, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    let mut out = Vec::new();
    let skip_blanks = |at: &mut usize| {
        while chars.get(*at).is_some_and(|c| *c == ' ' || *c == '\t') {
            *at += 1;
        }
    };
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace() || *c == ';') {
            at += 1;
        }
        if at >= chars.len() {
            break;
        }
        let address = match addr(&chars, &mut at, expr_no, extended)? {
            None => None,
            Some(first) if chars.get(at) == Some(&',') => {
                at += 1;
                skip_blanks(&mut at);
                let second = addr(&chars, &mut at, expr_no, extended)?
                    .ok_or_else(|| malformed(expr_no, at + 1, "unexpected `,'"))?;
                Some(Address::Range(first, second))
            }
            Some(one) => Some(Address::One(one)),
        };
        skip_blanks(&mut at);
        let negated = chars.get(at) == Some(&'!');
        if negated {
            at += 1;
            skip_blanks(&mut at);
        }
        let Some(&cmd) = chars.get(at) else {
            return Err(malformed(expr_no, at, "missing command"));
        };
        if cmd == 'd' {
            at += 1;
            skip_blanks(&mut at);
            if chars.get(at).is_some_and(|c| *c != ';' && *c != '\n') {
                return Err(malformed(expr_no, at + 1, "extra characters after command"));
            }
            out.push(Command {
                address,
                negated,
                op: Op::Delete,
            });
            continue;
        }
        if cmd != 's' {
            return Err(if "pPaicyqQnNgGhHxlw={}rRwWbtTezFv:".contains(cmd) {
                format!("sed: the `{cmd}` command is not modelled by fabsim (only `s` and `d`): `{script}`")
            } else {
                malformed(expr_no, at + 1, &format!("unknown command: `{cmd}'"))
            });
        }
        let unterminated = || malformed(expr_no, chars.len(), "unterminated `s' command");
        let delim = *chars.get(at + 1).ok_or_else(unterminated)?;
        if delim == '\n' || delim == '\\' {
            return Err(unterminated());
        }
        at += 2;
        let pattern = part(&chars, &mut at, delim).ok_or_else(unterminated)?;
        let replacement = part(&chars, &mut at, delim).ok_or_else(unterminated)?;
        let (mut global, mut icase) = (false, false);
        while let Some(&f) = chars.get(at) {
            match f {
                'g' => global = true,
                'I' | 'i' => icase = true,
                ';' | '\n' => break,
                ' ' | '\t' => {}
                _ => return Err(malformed(expr_no, at + 1, "unknown option to `s'")),
            }
            at += 1;
        }
        let re = regex(&pattern, extended, icase, expr_no)?;
        let replacement = pieces(&replacement);
        if let Some(n) = replacement.iter().find_map(|p| match p {
            Piece::Group(n) if *n > re.captures_len() - 1 => Some(*n),
            _ => None,
        }) {
            return Err(malformed(
                expr_no,
                at,
                &format!("invalid reference \\{n} on `s' command's RHS"),
            ));
        }
        out.push(Command {
            address,
            negated,
            op: Op::Subst(Subst {
                re,
                replacement,
                global,
            }),
        });
    }
    Ok(out)
}

/// An address at `at`, if one starts there: a line number, `$`, `/REGEX/` or `\cREGEXc`, each
/// regex optionally followed by `I`.
fn addr(chars: &[char], at: &mut usize, expr_no: usize, extended: bool) -> Result<Option<Addr>, String> {
    let Some(&c) = chars.get(*at) else {
        return Ok(None);
    };
    if c.is_ascii_digit() {
        let mut digits = String::new();
        while let Some(&d) = chars.get(*at).filter(|d| d.is_ascii_digit()) {
            digits.push(d);
            *at += 1;
        }
        let n: usize = digits.parse().unwrap_or(usize::MAX);
        if n == 0 && chars.get(*at) == Some(&',') {
            return Err("sed: the address `0,/RE/` is not modelled by fabsim".into());
        }
        if n == 0 {
            return Err(malformed(expr_no, *at, "invalid usage of line address 0"));
        }
        return Ok(Some(Addr::Line(n)));
    }
    if c == '$' {
        *at += 1;
        return Ok(Some(Addr::Last));
    }
    let delim = match c {
        '/' => '/',
        '\\' => match chars.get(*at + 1) {
            Some(&d) if d != '\n' && d != '\\' => {
                *at += 1;
                d
            }
            _ => return Err(malformed(expr_no, *at + 1, "unexpected `,'")),
        },
        _ => return Ok(None),
    };
    *at += 1;
    let pattern =
        part(chars, at, delim).ok_or_else(|| malformed(expr_no, chars.len(), "unterminated address regex"))?;
    let icase = chars.get(*at) == Some(&'I');
    if icase {
        *at += 1;
    }
    Ok(Some(Addr::Regex(regex(&pattern, extended, icase, expr_no)?)))
}

/// A script's regular expression (an `s` command's or an address's): ERE as written with `-E`,
/// else a BRE translated.
fn regex(pattern: &str, extended: bool, icase: bool, expr_no: usize) -> Result<Regex, String> {
    let source = if extended {
        pattern.to_string()
    } else {
        bre_to_regex(pattern)
    };
    RegexBuilder::new(&source)
        .case_insensitive(icase)
        .build()
        .map_err(|e| format!("sed: -e expression #{expr_no}: invalid regular expression `{pattern}`: {e}"))
}

/// The text up to the next unescaped `delim` (consumed), with `\delim` turned into the
/// delimiter itself and other escapes kept for the regex or replacement reader.
fn part(chars: &[char], at: &mut usize, delim: char) -> Option<String> {
    let mut s = String::new();
    while let Some(&c) = chars.get(*at) {
        *at += 1;
        if c == delim {
            return Some(s);
        }
        if c == '\\' {
            let next = *chars.get(*at)?;
            *at += 1;
            if next != delim {
                s.push('\\');
            }
            s.push(next);
        } else {
            s.push(c);
        }
    }
    None
}

/// A POSIX basic regular expression as the `regex` crate writes it: `\( \) \{ \} \| \+ \?`
/// are the operators, their bare characters literals.
fn bre_to_regex(bre: &str) -> String {
    let mut out = String::new();
    let mut chars = bre.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(op @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => out.push(op),
                Some('n') => out.push_str("\\n"),
                Some('t') => out.push_str("\\t"),
                Some(x) if x.is_ascii_alphanumeric() => {
                    out.push('\\');
                    out.push(x);
                }
                Some(x) => out.push_str(&regex::escape(&x.to_string())),
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => out.push_str(&regex::escape(&c.to_string())),
            _ => out.push(c),
        }
    }
    out
}

/// The replacement: `&` the match, `\N` group N, `\n` a newline, `\X` the character X.
fn pieces(rhs: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = rhs.chars();
    let flush = |text: &mut String, out: &mut Vec<Piece>| {
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(text)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '&' => {
                flush(&mut text, &mut out);
                out.push(Piece::Group(0));
            }
            '\\' => match chars.next() {
                Some(d @ '1'..='9') => {
                    flush(&mut text, &mut out);
                    out.push(Piece::Group(d as usize - '0' as usize));
                }
                Some('n') => text.push('\n'),
                Some('t') => text.push('\t'),
                Some(x) => text.push(x),
                None => {}
            },
            _ => text.push(c),
        }
    }
    flush(&mut text, &mut out);
    out
}

impl Subst {
    fn expand(&self, caps: &Captures<'_>) -> String {
        self.replacement
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.as_str(),
                Piece::Group(n) => caps.get(*n).map_or("", |m| m.as_str()),
            })
            .collect()
    }
}

impl Addr {
    fn selects(&self, line_no: usize, last: bool, line: &str) -> bool {
        match self {
            Addr::Line(n) => *n == line_no,
            Addr::Last => last,
            Addr::Regex(re) => re.is_match(line),
        }
    }
}

/// The text after the commands ran on each of its lines, in order.
pub fn apply(text: &str, commands: &[Command]) -> String {
    let mut out = String::with_capacity(text.len());
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // Each range command's state: inside its range since a line ADDR1 selected.
    let mut in_range = vec![false; commands.len()];
    'lines: for (i, line) in lines.iter().enumerate() {
        let (line_no, last) = (i + 1, i + 1 == lines.len());
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (*line, ""),
        };
        let mut body = body.to_string();
        for (c, inside) in commands.iter().zip(in_range.iter_mut()) {
            let selected = match &c.address {
                None => true,
                Some(Address::One(a)) => a.selects(line_no, last, &body),
                Some(Address::Range(from, to)) => {
                    if *inside {
                        // The range ends on the line ADDR2 selects (a line number already
                        // passed ends it at once).
                        *inside = !match to {
                            Addr::Line(n) => line_no >= *n,
                            other => other.selects(line_no, last, &body),
                        };
                        true
                    } else if from.selects(line_no, last, &body) {
                        // ADDR2 as a line number at or before this one: this line only; as a
                        // regex it is first tried on the next line.
                        *inside = !matches!(to, Addr::Line(n) if *n <= line_no) && !last;
                        true
                    } else {
                        false
                    }
                }
            };
            if selected == c.negated {
                continue;
            }
            match &c.op {
                Op::Delete => continue 'lines,
                Op::Subst(sub) => {
                    let limit = if sub.global { 0 } else { 1 };
                    body = sub
                        .re
                        .replacen(&body, limit, |caps: &Captures<'_>| sub.expand(caps))
                        .into_owned();
                }
            }
        }
        out.push_str(&body);
        out.push_str(newline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sed(script: &str, text: &str) -> Result<String, String> {
        Ok(apply(text, &parse(script, 1, false)?))
    }

    #[test]
    fn any_delimiter_and_dots_match_themselves() {
        let text = "    - --service-cluster-ip-range=10.96.0.0/12\n";
        assert_eq!(
            sed(
                "s#--service-cluster-ip-range=10.96.0.0/12#--service-cluster-ip-range=10.100.0.0/16#",
                text
            )
            .unwrap(),
            "    - --service-cluster-ip-range=10.100.0.0/16\n"
        );
        assert_eq!(
            sed(r"s/10.96.0.0\/12/10.100.0.0\/16/", text).unwrap(),
            "    - --service-cluster-ip-range=10.100.0.0/16\n"
        );
    }

    #[test]
    fn first_match_per_line_unless_g_and_groups_in_the_replacement() {
        assert_eq!(sed("s/a/b/", "aa\naa\n").unwrap(), "ba\nba\n");
        assert_eq!(sed("s/a/b/g", "aa\naa").unwrap(), "bb\nbb");
        assert_eq!(sed(r"s/\(x\)\(y\)/\2\1-&/", "xy\n").unwrap(), "yx-xy\n");
        // BRE: a bare `+` is a literal.
        assert_eq!(sed("s/a+/b/", "a+a\n").unwrap(), "ba\n");
        assert_eq!(sed("s/x/1/;s/y/2/", "xy\n").unwrap(), "12\n");
    }

    #[test]
    fn command_lines_take_several_expressions_or_the_first_operand_as_the_script() {
        let two = in_place(&["-i", "-e", "s/a/b/", "--expression=s/b/c/", "F"]).unwrap();
        assert_eq!((two.commands.len(), two.files), (2, vec!["F"]));
        let one = in_place(&["-i", "s#x#y#g", "F", "G"]).unwrap();
        assert_eq!((one.commands.len(), one.files), (1, vec!["F", "G"]));
        assert_eq!(apply("xx\n", &one.commands), "yy\n");
        assert!(in_place(&["s/a/b/", "F"])
            .unwrap_err()
            .contains("fabsim runs `sed -i` only"));
        assert!(in_place(&["-i.bak", "s/a/b/", "F"])
            .unwrap_err()
            .contains("backup suffix"));
        assert_eq!(in_place(&["-i", "s/a/b/"]).unwrap_err(), "sed: no input files");
    }

    #[test]
    fn malformed_scripts_say_what_gnu_sed_says() {
        assert_eq!(
            sed("s#a#b", "").unwrap_err(),
            "sed: -e expression #1, char 5: unterminated `s' command"
        );
        assert_eq!(
            sed("s/a/b/q", "").unwrap_err(),
            "sed: -e expression #1, char 7: unknown option to `s'"
        );
        assert_eq!(
            sed("k", "").unwrap_err(),
            "sed: -e expression #1, char 1: unknown command: `k'"
        );
        assert!(sed("/x/p", "").unwrap_err().contains("`p` command is not modelled"));
        assert_eq!(
            sed("/x", "").unwrap_err(),
            "sed: -e expression #1, char 2: unterminated address regex"
        );
        assert_eq!(
            sed("0d", "").unwrap_err(),
            "sed: -e expression #1, char 1: invalid usage of line address 0"
        );
        assert!(sed("0,/x/d", "").unwrap_err().contains("`0,/RE/` is not modelled"));
    }

    #[test]
    fn d_drops_the_lines_its_address_selects() {
        let text = "a\n    - --feature-gates=X=true\nb\nc\n";
        assert_eq!(sed("/--feature-gates/d", text).unwrap(), "a\nb\nc\n");
        assert_eq!(sed("\\#feature#d", text).unwrap(), "a\nb\nc\n");
        assert_eq!(sed("2d;$d", text).unwrap(), "a\nb\n");
        assert_eq!(sed("/^A$/Id", text).unwrap(), "    - --feature-gates=X=true\nb\nc\n");
        assert_eq!(sed("/b/!d", text).unwrap(), "b\n");
        // A deleted line is not seen by the next commands.
        assert_eq!(sed("1d;s/a/z/", "a\na\n").unwrap(), "z\n");
        assert_eq!(sed("d", text).unwrap(), "");
    }

    #[test]
    fn ranges_run_from_the_first_address_to_the_second() {
        let text = "1\nstart\n2\nend\n3\nstart\n4\n";
        assert_eq!(sed("/start/,/end/d", text).unwrap(), "1\n3\n");
        assert_eq!(sed("2,3d", text).unwrap(), "1\nend\n3\nstart\n4\n");
        // ADDR2 a line already passed: the one line.
        assert_eq!(sed("4,2d", text).unwrap(), "1\nstart\n2\n3\nstart\n4\n");
        // ADDR2 is first tried on the line after ADDR1's, and to the end when never found.
        assert_eq!(sed("/start/,/start/d", text).unwrap(), "1\n4\n");
        assert_eq!(sed("5,$s/^/#/", text).unwrap(), "1\nstart\n2\nend\n#3\n#start\n#4\n");
    }
}
