//! Output filters after `|`: EOS `include`/`exclude`/`begin`/`section` (unique-prefix
//! abbreviations, e.g. `| inc`), Linux `| grep [-E] [-v] [-i] [-F] [-w] [-x] PATTERN`, chained.
//! Also the quote-aware line splitting both shells need.

use regex::{Regex, RegexBuilder};

use super::CommandError;

/// Whose CLI is reading the line: decides the filter language and the error texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Eos,
    Linux,
}

/// Split a command line at `|` outside quotes. Stages keep their quotes (the Linux side removes
/// them word by word, see [`shell_words`]). An empty line gives no stages.
pub fn split_pipeline(line: &str) -> Result<Vec<String>, CommandError> {
    let mut stages = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '|' && quote.is_none() {
            stages.push(String::new());
            continue;
        }
        let Some(cur) = stages.last_mut() else { break };
        cur.push(c);
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (q, '\\') if q != Some('\'') => cur.extend(chars.next()),
            _ => {}
        }
    }
    let stages: Vec<String> = stages.into_iter().map(|s| s.trim().to_string()).collect();
    if stages.len() == 1 && stages[0].is_empty() {
        return Ok(Vec::new());
    }
    if stages.iter().any(String::is_empty) {
        // Bash: `syntax error near unexpected token '|'`; EOS rejects it as invalid input.
        return Err(CommandError::new("% Invalid input"));
    }
    Ok(stages)
}

/// POSIX shell word splitting: blanks separate words; single quotes are literal; inside double
/// quotes a backslash escapes only `"`, `\`, `$` and `` ` ``; outside quotes it escapes anything.
pub fn shell_words(s: &str) -> Result<Vec<String>, CommandError> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(cur.take()),
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err(unterminated('\'')),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.extend(chars.next());
                        }
                        Some(x) => w.push(x),
                        None => return Err(unterminated('"')),
                    }
                }
            }
            '\\' => cur.get_or_insert_with(String::new).extend(chars.next()),
            _ => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    Ok(words)
}

fn unterminated(q: char) -> CommandError {
    CommandError::new(format!("bash: unexpected EOF while looking for matching `{q}'"))
}

/// Apply each filter stage, in order, to the command's output.
pub fn apply_filters(flavor: Flavor, filters: &[String], mut text: String) -> Result<String, CommandError> {
    let merged;
    let filters = match flavor {
        Flavor::Eos => {
            merged = eos_regex_bars(filters);
            &merged[..]
        }
        Flavor::Linux => filters,
    };
    for stage in filters {
        text = match flavor {
            Flavor::Eos => eos_filter(stage, &text)?,
            Flavor::Linux => grep(stage, &text)?,
        };
    }
    Ok(text)
}

fn join_lines<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    lines.map(|l| format!("{l}\n")).collect()
}

const EOS_MODIFIERS: &[&str] = &[
    "append", "begin", "exclude", "include", "json", "no-more", "nz", "redirect", "section", "tee",
];

/// On EOS a `|` inside a modifier's regex is alternation, not a new pipe: the seed's
/// `show ip bgp summary | inc 10.0.11.1|Nei` (seed-lab.md s4, C59) keeps both the `Nei`
/// header lines and the row. A stage that does not start with an output modifier is
/// therefore glued back onto the previous stage's pattern with its `|`.
fn eos_regex_bars(filters: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for stage in filters {
        let word = stage.split_whitespace().next().unwrap_or("");
        let is_modifier = super::eos::keyword(word, EOS_MODIFIERS).is_ok();
        match out.last_mut() {
            Some(prev) if !is_modifier => {
                prev.push('|');
                prev.push_str(stage);
            }
            _ => out.push(stage.clone()),
        }
    }
    out
}

/// EOS output modifiers. The pattern is the rest of the stage, as EOS takes it.
fn eos_filter(stage: &str, text: &str) -> Result<String, CommandError> {
    let (word, rest) = stage.split_once(' ').unwrap_or((stage, ""));
    let modifier = super::eos::keyword(word, EOS_MODIFIERS)?;
    if modifier == "no-more" {
        return Ok(text.to_string());
    }
    if !["begin", "exclude", "include", "section"].contains(&modifier) {
        return Err(CommandError::new(format!("% fabsim: '| {modifier}' is not modelled")));
    }
    let pattern = rest.trim();
    if pattern.is_empty() {
        return Err(CommandError::new("% Incomplete command"));
    }
    let re = Regex::new(pattern).map_err(|_| CommandError::new("% Invalid input"))?;
    let lines = text.lines();
    Ok(match modifier {
        "include" => join_lines(lines.filter(|l| re.is_match(l))),
        "exclude" => join_lines(lines.filter(|l| !re.is_match(l))),
        "begin" => join_lines(lines.skip_while(|l| !re.is_match(l))),
        _ => section(text, &re),
    })
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `| section RE`: every matching line with its parents (the less-indented lines above it)
/// and its children (the more-indented lines below it), in the original order.
fn section(text: &str, re: &Regex) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![false; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if !re.is_match(line) {
            continue;
        }
        let depth = indent(line);
        keep[i] = true;
        let mut parent_depth = depth;
        for j in (0..i).rev() {
            if !lines[j].trim().is_empty() && indent(lines[j]) < parent_depth {
                keep[j] = true;
                parent_depth = indent(lines[j]);
            }
        }
        for j in i + 1..lines.len() {
            if lines[j].trim().is_empty() || indent(lines[j]) <= depth {
                break;
            }
            keep[j] = true;
        }
    }
    join_lines(lines.iter().zip(keep).filter(|(_, k)| *k).map(|(l, _)| *l))
}

#[derive(Default)]
struct GrepOptions {
    extended: bool,
    fixed: bool,
    invert: bool,
    ignore_case: bool,
    word: bool,
    line: bool,
}

/// `grep` reading the pipe (GNU grep semantics for the supported options).
fn grep(stage: &str, text: &str) -> Result<String, CommandError> {
    let words = shell_words(stage)?;
    let (cmd, args) = words
        .split_first()
        .ok_or_else(|| CommandError::new("% Invalid input"))?;
    let mut opts = GrepOptions {
        extended: cmd == "egrep",
        ..Default::default()
    };
    if cmd != "grep" && cmd != "egrep" {
        return Err(CommandError::new(format!(
            "{cmd}: fabsim pipes support only grep [-E] [-v] [-i] [-F] [-w] [-x] PATTERN"
        )));
    }
    let mut pattern: Option<String> = None;
    let mut operands = Vec::new();
    let mut it = args.iter();
    let mut options_done = false;
    while let Some(arg) = it.next() {
        if options_done || !arg.starts_with('-') || arg == "-" {
            operands.push(arg.clone());
        } else if arg == "--" {
            options_done = true;
        } else if arg == "-e" {
            pattern = Some(it.next().cloned().ok_or_else(grep_usage)?);
        } else {
            for flag in arg.chars().skip(1) {
                match flag {
                    'E' => opts.extended = true,
                    'G' => opts.extended = false,
                    'F' => opts.fixed = true,
                    'v' => opts.invert = true,
                    'i' => opts.ignore_case = true,
                    'w' => opts.word = true,
                    'x' => opts.line = true,
                    _ => return Err(CommandError::new(format!("grep: invalid option -- '{flag}'"))),
                }
            }
        }
    }
    if pattern.is_none() && !operands.is_empty() {
        pattern = Some(operands.remove(0));
    }
    let pattern = pattern.ok_or_else(grep_usage)?;
    if let Some(file) = operands.first() {
        return Err(CommandError::new(format!(
            "grep: {file}: fabsim's grep reads only the pipe"
        )));
    }
    let re = grep_regex(&pattern, &opts)?;
    Ok(join_lines(text.lines().filter(|l| re.is_match(l) != opts.invert)))
}

fn grep_usage() -> CommandError {
    CommandError::new("Usage: grep [OPTION]... PATTERNS [FILE]...\nTry 'grep --help' for more information.")
}

fn grep_regex(pattern: &str, opts: &GrepOptions) -> Result<Regex, CommandError> {
    let body = if opts.fixed {
        regex::escape(pattern)
    } else {
        posix_to_regex(pattern, opts.extended)
    };
    let body = match (opts.line, opts.word) {
        (true, _) => format!("^(?:{body})$"),
        (false, true) => format!(r"\b(?:{body})\b"),
        _ => body,
    };
    RegexBuilder::new(&body)
        .case_insensitive(opts.ignore_case)
        .build()
        .map_err(|_| CommandError::new("grep: Unmatched ( or \\("))
}

/// Translate a POSIX basic (GNU flavour) or extended regular expression to the `regex` crate's
/// syntax. In a BRE `( ) { } | + ?` are literal and their backslashed forms are operators; in
/// both, a backslash inside a bracket expression is literal.
fn posix_to_regex(p: &str, extended: bool) -> String {
    const BRE_OPS: &str = "(){}|+?";
    let mut out = String::new();
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                out.push('[');
                let mut first = true;
                if chars.peek() == Some(&'^') {
                    out.extend(chars.next());
                }
                while let Some(b) = chars.next() {
                    match b {
                        ']' if !first => break,
                        '\\' | '[' if chars.peek() != Some(&':') => {
                            out.push('\\');
                            out.push(b);
                        }
                        _ => out.push(b),
                    }
                    first = false;
                }
                out.push(']');
            }
            '\\' => match chars.next() {
                Some(n) if !extended && BRE_OPS.contains(n) => out.push(n),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push_str(r"\\"),
            },
            _ if !extended && BRE_OPS.contains(c) => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "router ospf 1\n   network 0.0.0.0/0 area 0.0.0.0\n   max-lsa 12000\ninterface Ethernet1\n   no switchport\nC 10.4.44.0/31 is directly connected, Ethernet3\n";

    fn eos(filters: &[&str]) -> Result<String, CommandError> {
        let f: Vec<String> = filters.iter().map(|s| s.to_string()).collect();
        apply_filters(Flavor::Eos, &f, TEXT.to_string())
    }

    fn linux(filter: &str) -> Result<String, CommandError> {
        apply_filters(Flavor::Linux, &[filter.to_string()], TEXT.to_string())
    }

    #[test]
    fn eos_modifiers_and_abbreviations() {
        assert_eq!(eos(&["inc Ethernet"]).unwrap().lines().count(), 2);
        assert_eq!(eos(&[r"exc ^\s"]).unwrap().lines().count(), 3);
        assert!(eos(&["beg interface"]).unwrap().starts_with("interface Ethernet1\n"));
        assert_eq!(eos(&["sec max-lsa"]).unwrap(), "router ospf 1\n   max-lsa 12000\n");
        assert_eq!(
            eos(&["section ospf"]).unwrap(),
            "router ospf 1\n   network 0.0.0.0/0 area 0.0.0.0\n   max-lsa 12000\n"
        );
        assert_eq!(eos(&["inc Eth", "exc C"]).unwrap(), "interface Ethernet1\n");
        assert_eq!(eos(&["n"]).unwrap_err().message, "% Ambiguous command");
        assert_eq!(eos(&["zz x"]).unwrap_err().message, "% Invalid input");
        assert_eq!(eos(&["include"]).unwrap_err().message, "% Incomplete command");
    }

    #[test]
    fn grep_options_and_quotes() {
        assert_eq!(linux("grep Ethernet").unwrap().lines().count(), 2);
        assert_eq!(linux("grep -v '^ '").unwrap().lines().count(), 3);
        assert_eq!(linux("grep -i ETHERNET").unwrap().lines().count(), 2);
        assert_eq!(linux("grep -vi ethernet").unwrap().lines().count(), 4);
        assert_eq!(linux("grep -E \"ospf|switchport\"").unwrap().lines().count(), 2);
        // BRE: `|` is literal, `\|` is alternation (GNU).
        assert_eq!(linux("grep 'ospf|switchport'").unwrap(), "");
        assert_eq!(linux(r"grep 'ospf\|switchport'").unwrap().lines().count(), 2);
        assert_eq!(linux("grep -F 0.0.0.0/0").unwrap().lines().count(), 1);
        assert_eq!(linux("grep -w 1").unwrap(), "router ospf 1\n");
        assert_eq!(linux("grep '[[:digit:]]/31'").unwrap().lines().count(), 1);
        assert!(linux("grep").is_err());
        assert!(linux("grep -q x").is_err());
        assert!(linux("sort").is_err());
        assert!(linux("grep 'open").is_err());
    }

    #[test]
    fn splitting_respects_quotes() {
        assert_eq!(
            split_pipeline("ip r | grep -E 'a|b' | grep \"c|d\"").unwrap(),
            vec!["ip r", "grep -E 'a|b'", "grep \"c|d\""]
        );
        assert_eq!(split_pipeline("   ").unwrap(), Vec::<String>::new());
        assert!(split_pipeline("show ip route |").is_err());
        assert_eq!(
            shell_words(r#"a 'b c' "d \"e\"" f\ g"#).unwrap(),
            vec!["a", "b c", "d \"e\"", "f g"]
        );
        // EOS: a bar inside a modifier's regex is alternation (seed C59); Linux keeps stages.
        let text = "Neighbor x\n  10.0.11.1 row\n  10.1.11.1 row\n".to_string();
        let stages = split_pipeline("show ip bgp summary | inc 10.0.11.1|Nei").unwrap();
        let out = apply_filters(Flavor::Eos, &stages[1..], text.clone()).unwrap();
        assert_eq!(out, "Neighbor x\n  10.0.11.1 row\n");
        let stages = split_pipeline("x | inc row|Nei | exc 10.1").unwrap();
        assert_eq!(
            apply_filters(Flavor::Eos, &stages[1..], text).unwrap(),
            "Neighbor x\n  10.0.11.1 row\n"
        );
    }
}
