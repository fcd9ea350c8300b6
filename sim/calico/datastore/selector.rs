//! Calico label selectors (`libcalico-go/lib/selector/parser`): `all()`, `global()`,
//! `has(k)`, `k == "v"`, `k != "v"`, `k in {"a", "b"}`, `k not in {…}`, `k contains "s"`,
//! `k starts with "s"`, `k ends with "s"`, `!`, `&&`, `||` and parentheses. An empty selector
//! selects everything (Calico parses "" as `all()`). `!=` and `not in` are true for a node
//! without the label, as in Calico.

use std::collections::BTreeMap;

/// A parsed selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    All,
    Has(String),
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Contains(String, String),
    StartsWith(String, String),
    EndsWith(String, String),
    Not(Box<Selector>),
    And(Box<Selector>, Box<Selector>),
    Or(Box<Selector>, Box<Selector>),
}

impl Selector {
    /// Parses `text`; the error says what was expected at which byte offset.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        p.ws();
        if p.i == p.s.len() {
            return Ok(Selector::All);
        }
        let sel = p.or()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected text at offset {}: {:?}", p.i, &text[p.i..]));
        }
        Ok(sel)
    }

    /// Whether a node with `labels` is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let get = |k: &String| labels.get(k);
        match self {
            Selector::All => true,
            Selector::Has(k) => labels.contains_key(k),
            Selector::Eq(k, v) => get(k) == Some(v),
            Selector::Ne(k, v) => get(k) != Some(v),
            Selector::In(k, vs) => get(k).is_some_and(|l| vs.contains(l)),
            Selector::NotIn(k, vs) => !get(k).is_some_and(|l| vs.contains(l)),
            Selector::Contains(k, v) => get(k).is_some_and(|l| l.contains(v.as_str())),
            Selector::StartsWith(k, v) => get(k).is_some_and(|l| l.starts_with(v.as_str())),
            Selector::EndsWith(k, v) => get(k).is_some_and(|l| l.ends_with(v.as_str())),
            Selector::Not(s) => !s.matches(labels),
            Selector::And(a, b) => a.matches(labels) && b.matches(labels),
            Selector::Or(a, b) => a.matches(labels) || b.matches(labels),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    /// Consumes `tok` (after whitespace) if it is next.
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(tok.as_bytes()) {
            self.i += tok.len();
            true
        } else {
            false
        }
    }

    /// Consumes a keyword followed by a non-label character.
    fn eat_word(&mut self, word: &str) -> bool {
        let save = self.i;
        if self.eat(word) && !self.s.get(self.i).is_some_and(|c| is_label_char(*c)) {
            return true;
        }
        self.i = save;
        false
    }

    fn expect(&mut self, tok: &str) -> Result<(), String> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(format!("expected `{tok}` at offset {}", self.i))
        }
    }

    fn or(&mut self) -> Result<Selector, String> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Selector::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Selector, String> {
        let mut left = self.unary()?;
        while self.eat("&&") {
            left = Selector::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Selector, String> {
        self.ws();
        if self.s.get(self.i) == Some(&b'!') && self.s.get(self.i + 1) != Some(&b'=') {
            self.i += 1;
            return Ok(Selector::Not(Box::new(self.unary()?)));
        }
        if self.eat("(") {
            let inner = self.or()?;
            self.expect(")")?;
            return Ok(inner);
        }
        if self.eat_word("all") {
            self.expect("(")?;
            self.expect(")")?;
            return Ok(Selector::All);
        }
        // `global()` selects non-namespaced resources: every node.
        if self.eat_word("global") {
            self.expect("(")?;
            self.expect(")")?;
            return Ok(Selector::All);
        }
        let save = self.i;
        if self.eat_word("has") && self.eat("(") {
            let k = self.label()?;
            self.expect(")")?;
            return Ok(Selector::Has(k));
        }
        self.i = save;
        let k = self.label()?;
        if self.eat("==") {
            return Ok(Selector::Eq(k, self.string()?));
        }
        if self.eat("!=") {
            return Ok(Selector::Ne(k, self.string()?));
        }
        if self.eat_word("in") {
            return Ok(Selector::In(k, self.set()?));
        }
        if self.eat_word("not") {
            self.ws();
            if self.eat_word("in") {
                return Ok(Selector::NotIn(k, self.set()?));
            }
            return Err(format!("expected `in` after `not` at offset {}", self.i));
        }
        if self.eat_word("contains") {
            return Ok(Selector::Contains(k, self.string()?));
        }
        if self.eat_word("starts") {
            self.ws();
            if self.eat_word("with") {
                return Ok(Selector::StartsWith(k, self.string()?));
            }
        }
        if self.eat_word("ends") {
            self.ws();
            if self.eat_word("with") {
                return Ok(Selector::EndsWith(k, self.string()?));
            }
        }
        Err(format!("expected an operator after label `{k}` at offset {}", self.i))
    }

    fn label(&mut self) -> Result<String, String> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && is_label_char(self.s[self.i]) {
            self.i += 1;
        }
        if start == self.i {
            return Err(format!("expected a label name at offset {start}"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn string(&mut self) -> Result<String, String> {
        self.ws();
        let q = match self.s.get(self.i) {
            Some(q @ (b'"' | b'\'')) => *q,
            _ => return Err(format!("expected a quoted string at offset {}", self.i)),
        };
        let start = self.i + 1;
        let len = self.s[start..]
            .iter()
            .position(|c| *c == q)
            .ok_or_else(|| format!("unterminated string at offset {}", self.i))?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn set(&mut self) -> Result<Vec<String>, String> {
        self.expect("{")?;
        let mut out = Vec::new();
        if self.eat("}") {
            return Ok(out);
        }
        loop {
            out.push(self.string()?);
            if self.eat("}") {
                return Ok(out);
            }
            self.expect(",")?;
        }
    }
}

fn is_label_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn evaluates_calico_forms() {
        let l = labels(&[("kubernetes.io/hostname", "k-master"), ("routeReflector", "true")]);
        let ok = |s: &str| Selector::parse(s).map(|sel| sel.matches(&l));
        assert_eq!(ok("kubernetes.io/hostname == \"k-master\""), Ok(true));
        assert_eq!(ok("all()"), Ok(true));
        assert_eq!(ok(""), Ok(true));
        assert_eq!(ok("has(routeReflector)"), Ok(true));
        assert_eq!(ok("!has(routeReflector)"), Ok(false));
        assert_eq!(ok("zone != 'a'"), Ok(true));
        assert_eq!(ok("kubernetes.io/hostname in {'k-w1', 'k-master'}"), Ok(true));
        assert_eq!(ok("kubernetes.io/hostname not in {'k-master'}"), Ok(false));
        assert_eq!(ok("has(x) || (routeReflector == 'true' && !has(y))"), Ok(true));
        assert_eq!(ok("kubernetes.io/hostname starts with 'k-'"), Ok(true));
        assert!(Selector::parse("has(").is_err());
        assert!(Selector::parse("a = 'b'").is_err());
    }
}
