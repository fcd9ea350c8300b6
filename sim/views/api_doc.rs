//! One printer for API objects as the Go tools marshal them (`calicoctl get -o yaml|json`,
//! `kubectl get -o yaml|json`): a view builds an `ApiDoc` with its keys in the Go struct's
//! field order and `omitempty` already applied, and this module writes it out.
//!
//! - JSON is `encoding/json`'s `MarshalIndent` (calicoctl: two spaces, kubectl's `JSONPrinter`:
//!   four): keys in the order given, `<`, `>`, `&`, U+2028/9 and control characters escaped
//!   as `\u00XX` (Go before 1.22; only `\n`, `\r`, `\t` get short escapes).
//! - YAML is what both tools print through `ghodss/yaml`-style wrappers (calicoctl's
//!   `go-yaml-wrapper`, kubectl's `sigs.k8s.io/yaml`): the JSON read back into untyped maps
//!   and written by `gopkg.in/yaml.v2`, so map keys come out in yaml.v2's key order
//!   (`sorter.go`), sequences under a key are not indented, and a string that would read back
//!   as another type is double-quoted (`encode.go` `stringv`), one plain YAML may not hold
//!   single-quoted (`emitterc.go` `yaml_emitter_analyze_scalar`).

use std::cmp::Ordering;
use std::fmt::Write as _;

/// A JSON value with ordered keys.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ApiDoc {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Seq(Vec<ApiDoc>),
    Map(Vec<(String, ApiDoc)>),
}

impl ApiDoc {
    pub fn str(s: impl Into<String>) -> ApiDoc {
        ApiDoc::Str(s.into())
    }

    /// A list of strings.
    pub fn strs<S: AsRef<str>>(items: &[S]) -> ApiDoc {
        ApiDoc::Seq(items.iter().map(|s| ApiDoc::str(s.as_ref())).collect())
    }

    /// `json.MarshalIndent(v, "", indent)` and the newline the printers add.
    pub fn json(&self, indent: &str) -> String {
        let mut out = String::new();
        self.write_json(&mut out, Some(indent), 0);
        out.push('\n');
        out
    }

    /// `json.Marshal(v)`: no whitespace at all.
    pub fn compact_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out, None, 0);
        out
    }

    /// The same document with every map's keys in byte order, as `encoding/json` writes a Go
    /// map (kubectl's objects are untyped maps).
    pub fn sorted(self) -> ApiDoc {
        match self {
            ApiDoc::Seq(items) => ApiDoc::Seq(items.into_iter().map(ApiDoc::sorted).collect()),
            ApiDoc::Map(fields) => {
                let mut fields: Vec<(String, ApiDoc)> = fields.into_iter().map(|(k, v)| (k, v.sorted())).collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                ApiDoc::Map(fields)
            }
            scalar => scalar,
        }
    }

    fn write_json(&self, out: &mut String, indent: Option<&str>, depth: usize) {
        let pad = |out: &mut String, d: usize| {
            if let Some(indent) = indent {
                out.push('\n');
                out.push_str(&indent.repeat(d));
            }
        };
        match self {
            ApiDoc::Null => out.push_str("null"),
            ApiDoc::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            ApiDoc::Int(n) => out.push_str(&n.to_string()),
            ApiDoc::Str(s) => json_string(out, s),
            ApiDoc::Seq(items) if items.is_empty() => out.push_str("[]"),
            ApiDoc::Map(fields) if fields.is_empty() => out.push_str("{}"),
            ApiDoc::Seq(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    item.write_json(out, indent, depth + 1);
                }
                pad(out, depth);
                out.push(']');
            }
            ApiDoc::Map(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    pad(out, depth + 1);
                    json_string(out, k);
                    out.push_str(if indent.is_some() { ": " } else { ":" });
                    v.write_json(out, indent, depth + 1);
                }
                pad(out, depth);
                out.push('}');
            }
        }
    }

    pub fn yaml(&self) -> String {
        let mut out = String::new();
        match self {
            ApiDoc::Map(f) if !f.is_empty() => write_yaml_map(&mut out, f, 0),
            ApiDoc::Seq(s) if !s.is_empty() => write_yaml_seq(&mut out, s, 0),
            scalar => {
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
        out
    }
}

/// An untyped JSON value (`serde_json`: keys in name order) as the Go tools hold an object they
/// read back from JSON.
impl From<&serde_json::Value> for ApiDoc {
    fn from(v: &serde_json::Value) -> ApiDoc {
        use serde_json::Value;
        match v {
            Value::Null => ApiDoc::Null,
            Value::Bool(b) => ApiDoc::Bool(*b),
            Value::Number(n) => n.as_i64().map_or_else(|| ApiDoc::Str(n.to_string()), ApiDoc::Int),
            Value::String(s) => ApiDoc::Str(s.clone()),
            Value::Array(items) => ApiDoc::Seq(items.iter().map(ApiDoc::from).collect()),
            Value::Object(m) => ApiDoc::Map(m.iter().map(|(k, v)| (k.clone(), ApiDoc::from(v))).collect()),
        }
    }
}

/// Builds a map in field order, applying `omitempty` the way `encoding/json` does.
#[derive(Default)]
pub(crate) struct Fields(Vec<(String, ApiDoc)>);

impl Fields {
    pub fn new() -> Fields {
        Fields::default()
    }

    /// A field without `omitempty` (or a struct, which `omitempty` never drops).
    pub fn put(mut self, key: &str, v: ApiDoc) -> Fields {
        self.0.push((key.to_string(), v));
        self
    }

    /// An `omitempty` string.
    pub fn string(self, key: &str, v: &str) -> Fields {
        if v.is_empty() {
            self
        } else {
            self.put(key, ApiDoc::str(v))
        }
    }

    /// An `omitempty` bool (false is left out).
    pub fn flag(self, key: &str, v: bool) -> Fields {
        if v {
            self.put(key, ApiDoc::Bool(true))
        } else {
            self
        }
    }

    /// An `omitempty` pointer, slice or map: left out when absent or empty.
    pub fn opt(self, key: &str, v: Option<ApiDoc>) -> Fields {
        match v {
            None => self,
            Some(ApiDoc::Seq(s)) if s.is_empty() => self,
            Some(ApiDoc::Map(m)) if m.is_empty() => self,
            Some(v) => self.put(key, v),
        }
    }

    pub fn done(self) -> ApiDoc {
        ApiDoc::Map(self.0)
    }
}

/// `encoding/json`'s string encoder with HTML escaping (Go ≤ 1.21).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_yaml_map(out: &mut String, fields: &[(String, ApiDoc)], indent: usize) {
    let mut sorted: Vec<&(String, ApiDoc)> = fields.iter().collect();
    sorted.sort_by(|a, b| yaml_key_order(&a.0, &b.0));
    for (k, v) in sorted {
        line_start(out, indent);
        out.push_str(&yaml_string(k));
        out.push(':');
        match v {
            ApiDoc::Map(f) if !f.is_empty() => {
                out.push('\n');
                write_yaml_map(out, f, indent + 2);
            }
            ApiDoc::Seq(s) if !s.is_empty() => {
                out.push('\n');
                write_yaml_seq(out, s, indent);
            }
            ApiDoc::Str(text) if is_literal_block(text) => write_literal_block(out, text, indent + 2),
            scalar => {
                out.push(' ');
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
    }
}

/// yaml.v2 writes a string with a line break in literal style (`encode.go` `stringv`: kubectl's
/// `last-applied-configuration`, kubeadm-config's `ClusterConfiguration`) — unless another
/// control character makes the emitter fall back to a double-quoted scalar.
fn is_literal_block(s: &str) -> bool {
    s.contains('\n') && !s.chars().any(|c| c.is_control() && c != '\n')
}

/// ` |` (` |-` without a final line break) after the key, then the lines at `indent`; an empty
/// line is written empty.
fn write_literal_block(out: &mut String, text: &str, indent: usize) {
    out.push_str(if text.ends_with('\n') { " |\n" } else { " |-\n" });
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
    }
}

fn write_yaml_seq(out: &mut String, items: &[ApiDoc], indent: usize) {
    for item in items {
        line_start(out, indent);
        out.push_str("- ");
        match item {
            ApiDoc::Map(f) if !f.is_empty() => write_yaml_map(out, f, indent + 2),
            ApiDoc::Seq(s) if !s.is_empty() => write_yaml_seq(out, s, indent + 2),
            scalar => {
                out.push_str(&yaml_scalar(scalar));
                out.push('\n');
            }
        }
    }
}

/// Indentation for a new line — except for the first entry of a sequence item, which sits on
/// the item's `- ` line (`- name: a`, `- - a`).
fn line_start(out: &mut String, indent: usize) {
    if !out.ends_with("- ") {
        out.push_str(&" ".repeat(indent));
    }
}

fn yaml_scalar(v: &ApiDoc) -> String {
    match v {
        ApiDoc::Null => "null".into(),
        ApiDoc::Bool(b) => b.to_string(),
        ApiDoc::Int(n) => n.to_string(),
        ApiDoc::Str(s) => yaml_string(s),
        ApiDoc::Seq(_) => "[]".into(),
        ApiDoc::Map(_) => "{}".into(),
    }
}

/// yaml.v2's `keyList.Less` for string keys: letters compare as runes, a non-letter sorts
/// before a letter, and runs of digits compare as numbers.
fn yaml_key_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        let (ac, bc) = (ar[i], br[i]);
        if ac == bc {
            continue;
        }
        let (al, bl) = (ac.is_alphabetic(), bc.is_alphabetic());
        if al && bl {
            return ac.cmp(&bc);
        }
        if al || bl {
            return if bl { Ordering::Less } else { Ordering::Greater };
        }
        let number = |r: &[char]| {
            let digits: String = r[i..].iter().take_while(|c| c.is_ascii_digit()).collect();
            (digits.parse::<u64>().unwrap_or(0), digits.len())
        };
        let ((mut an, alen), (mut bn, blen)) = (number(&ar), number(&br));
        // A run that continues a number with a non-zero digit before it compares digit by
        // digit ("a10" vs "a1" is decided by length below, not by value).
        if ac == '0' || bc == '0' {
            let nonzero_before = ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|c| *c != '0');
            if nonzero_before {
                (an, bn) = (1, 1);
            }
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if alen != blen {
            return alen.cmp(&blen);
        }
        return ac.cmp(&bc);
    }
    ar.len().cmp(&br.len())
}

/// A string as yaml.v2 writes it: plain when it reads back as the same string, double-quoted
/// when plain would read as another type (null, bool, number, timestamp), single-quoted when
/// the emitter does not allow it plain.
fn yaml_string(s: &str) -> String {
    if s.chars().any(|c| c.is_control()) {
        let mut out = String::new();
        json_string(&mut out, s);
        return out;
    }
    if resolves_to_non_string(s) {
        return format!("\"{s}\"");
    }
    if !plain_allowed(s) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    s.to_string()
}

/// yaml.v2 `resolve` (plus `isBase60Float`): would a plain `s` be read as something other
/// than a string?
fn resolves_to_non_string(s: &str) -> bool {
    const WORDS: [&str; 31] = [
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
        "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".inf", ".Inf", ".INF", ".nan",
    ];
    let unsigned = s.trim_start_matches(['+', '-']);
    WORDS.contains(&s)
        || [".inf", ".Inf", ".INF", ".NaN", ".NAN"].contains(&unsigned)
        || is_int(s)
        || is_float(s)
        || is_base60(s)
        || is_timestamp(s)
}

fn is_int(s: &str) -> bool {
    let plain = s.replace('_', "");
    let body = plain.strip_prefix(['+', '-']).unwrap_or(&plain);
    let radix = |digits: &str, r: u32| !digits.is_empty() && digits.chars().all(|c| c.is_digit(r));
    match body.get(..2) {
        Some("0x") => radix(&body[2..], 16),
        Some("0b") => radix(&body[2..], 2),
        Some("0o") => radix(&body[2..], 8),
        _ => radix(body, 10),
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$` (YAML 1.1 sexagesimal, `12:30`).
fn is_base60(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (body, frac) = match body.split_once('.') {
        Some((b, f)) => (b, Some(f)),
        None => (body, None),
    };
    let mut parts = body.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok =
        head.starts_with(|c: char| c.is_ascii_digit()) && head.chars().all(|c| c.is_ascii_digit() || c == '_');
    let rest: Vec<&str> = parts.collect();
    let sixty = |p: &&str| {
        let b = p.as_bytes();
        match b {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        }
    };
    head_ok
        && !rest.is_empty()
        && rest.iter().all(sixty)
        && frac.is_none_or(|f| f.chars().all(|c| c.is_ascii_digit() || c == '_'))
}

/// yaml.v2 reads `2006-1-2` and longer date-times (`2025-08-01T10:58:00Z`) as timestamps.
fn is_timestamp(s: &str) -> bool {
    let date = s.split(['T', 't', ' ']).next().unwrap_or("");
    let parts: Vec<&str> = date.split('-').collect();
    let digits = |t: &str, max: usize| !t.is_empty() && t.len() <= max && t.chars().all(|c| c.is_ascii_digit());
    matches!(parts.as_slice(), [y, m, d] if y.len() == 4 && digits(y, 4) && digits(m, 2) && digits(d, 2))
}

/// `yaml_emitter_analyze_scalar`'s verdict on a block-context plain scalar.
fn plain_allowed(s: &str) -> bool {
    let chars: Vec<char> = s.chars().collect();
    let (Some(first), Some(last)) = (chars.first(), chars.last()) else {
        return false;
    };
    if s.starts_with("---") || s.starts_with("...") || first.is_whitespace() || last.is_whitespace() {
        return false;
    }
    let followed_by_space = |i: usize| chars.get(i + 1).is_none_or(|c| c.is_whitespace());
    for (i, c) in chars.iter().enumerate() {
        let indicator = if i == 0 {
            matches!(
                c,
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`'
            ) || (matches!(c, '?' | ':' | '-') && followed_by_space(i))
        } else {
            (*c == ':' && followed_by_space(i)) || (*c == '#' && chars[i - 1].is_whitespace())
        };
        if indicator {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_quotes_what_would_read_back_as_another_type() {
        assert_eq!(yaml_string("260252"), "\"260252\"");
        assert_eq!(yaml_string(""), "\"\"");
        assert_eq!(yaml_string("false"), "\"false\"");
        assert_eq!(yaml_string("2025-08-01T10:58:00Z"), "\"2025-08-01T10:58:00Z\"");
        assert_eq!(yaml_string("12:30"), "\"12:30\"");
        assert_eq!(yaml_string("1e3"), "\"1e3\"");
        assert_eq!(yaml_string("10.66.0.0/16"), "10.66.0.0/16");
        assert_eq!(yaml_string("10.0.11.1"), "10.0.11.1");
        assert_eq!(yaml_string("all()"), "all()");
        assert_eq!(
            yaml_string("kubernetes.io/hostname == \"k-master\""),
            "kubernetes.io/hostname == \"k-master\""
        );
        assert_eq!(
            yaml_string("{\"uid\":\"7c7e\"}"),
            "'{\"uid\":\"7c7e\"}'",
            "a flow indicator first: single quotes"
        );
        assert_eq!(yaml_string("a: b"), "'a: b'");
    }

    #[test]
    fn yaml_v2_key_order_compares_numbers_by_value() {
        let mut keys = vec!["b", "a10", "a2", "A", "_x", "a"];
        keys.sort_by(|a, b| yaml_key_order(a, b));
        assert_eq!(
            keys,
            ["_x", "A", "a", "a2", "a10", "b"],
            "a non-letter before any letter"
        );
    }

    #[test]
    fn json_is_go_marshal_indent_with_html_escaping() {
        let doc = Fields::new()
            .put("kind", ApiDoc::str("X"))
            .put("items", ApiDoc::Seq(vec![]))
            .put("sel", ApiDoc::str("a && b"))
            .done();
        assert_eq!(
            doc.json("  "),
            "{\n  \"kind\": \"X\",\n  \"items\": [],\n  \"sel\": \"a \\u0026\\u0026 b\"\n}\n"
        );
    }

    #[test]
    fn yaml_writes_a_string_with_line_breaks_as_a_literal_block() {
        // As kubectl prints kubeadm-config's data.ClusterConfiguration.
        let doc = Fields::new()
            .put(
                "data",
                Fields::new()
                    .string(
                        "ClusterConfiguration",
                        "dns: {}\nnetworking:\n  podSubnet: 10.244.0.0/16\n",
                    )
                    .string("note", "a\n\nb")
                    .done(),
            )
            .done();
        assert_eq!(
            doc.yaml(),
            "data:\n  ClusterConfiguration: |\n    dns: {}\n    networking:\n      podSubnet: 10.244.0.0/16\n  note: |-\n    a\n\n    b\n"
        );
    }

    #[test]
    fn yaml_sequences_under_a_key_are_not_indented() {
        let doc = Fields::new()
            .put(
                "spec",
                Fields::new()
                    .put("allowedUses", ApiDoc::strs(&["Workload", "Tunnel"]))
                    .done(),
            )
            .put(
                "items",
                ApiDoc::Seq(vec![Fields::new()
                    .put("name", ApiDoc::str("a"))
                    .put("b", ApiDoc::Int(1))
                    .done()]),
            )
            .put("status", Fields::new().done())
            .done();
        assert_eq!(
            doc.yaml(),
            "items:\n- b: 1\n  name: a\nspec:\n  allowedUses:\n  - Workload\n  - Tunnel\nstatus: {}\n"
        );
    }
}
