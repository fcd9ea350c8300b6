//! `function NAME () { … }` and `filter NAME { … }` bodies: the subset of BIRD's filter
//! language that Calico's confd writes, parsed into `model::bgp::{Stmt, Cond, Value}`.
//!
//! From BIRD 1.6.8 `filter/config.Y` (read, not copied): `cmd` (if/then/else, assignments,
//! accept/reject with an optional print list, function calls, community methods), `term`
//! (comparisons, `~`, `!`, `defined()`), `fprefix` (prefix-set items `P`, `P+`, `P-`,
//! `P{a,b}`) and the operator table in `conf/confbase.Y`: `&&` and `||` have the SAME
//! precedence and associate left, so `a || b && c` is `(a || b) && c`; `!` binds tighter than
//! `=`/`~`, so `! net ~ P` would negate `net`, which fabsim rejects with a hint.

use super::cursor::PResult;
use super::lexer::TokKind;
use super::parser::Parser;
use crate::diag::Diagnostic;
use crate::model::bgp::{Cond, Filter, Stmt, Value};

/// Route attributes a filter may read (BIRD `static_attr` and `dynamic_attr`s of the
/// protocols fabsim knows, plus Calico's `krt_tunnel`), and whether it may assign them.
const ATTRS: &[(&str, bool)] = &[
    ("net", false),
    ("proto", false),
    ("source", false),
    ("cast", false),
    ("ifindex", false),
    ("from", true),
    ("gw", true),
    ("scope", true),
    ("dest", true),
    ("ifname", true),
    ("preference", true),
    ("bgp_origin", true),
    ("bgp_path", true),
    ("bgp_next_hop", true),
    ("bgp_med", true),
    ("bgp_local_pref", true),
    ("bgp_atomic_aggr", true),
    ("bgp_aggregator", true),
    ("bgp_community", true),
    ("bgp_ext_community", true),
    ("bgp_large_community", true),
    ("bgp_originator_id", true),
    ("bgp_cluster_list", true),
    ("krt_source", true),
    ("krt_metric", true),
    ("krt_prefsrc", true),
    ("krt_realm", true),
    ("krt_scope", true),
    ("krt_tunnel", true),
];

/// Enumeration constants usable as values (`source = RTS_STATIC`, `dest = RTD_BLACKHOLE`).
const ENUM_PREFIXES: &[&str] = &["RTS_", "RTD_", "RTC_", "SCOPE_", "ORIGIN_"];

impl Parser {
    /// `function NAME () { … }`; the name is defined before the body so it may call itself.
    pub(super) fn function_def(&mut self) -> PResult<()> {
        self.cur.bump();
        let (name, span) = self.cur.word("a function name")?;
        self.define(&name, &span)?;
        self.cur.punct("(")?;
        if !self.cur.eat_punct(")") {
            let msg = "functions with parameters are not supported by fabsim";
            return Err(Diagnostic::error(self.cur.span(), msg));
        }
        self.daemon.functions.insert(name.clone(), Vec::new());
        let body = self.filter_body()?;
        self.daemon.functions.insert(name, body);
        Ok(())
    }

    /// `filter NAME { … }`.
    pub(super) fn filter_def(&mut self) -> PResult<()> {
        self.cur.bump();
        let (name, span) = self.cur.word("a filter name")?;
        self.define(&name, &span)?;
        let body = self.filter_body()?;
        let filter = Filter {
            name: name.clone(),
            body,
            span,
        };
        self.daemon.filters.insert(name, filter);
        Ok(())
    }

    /// `{ cmds }` (local variable declarations before the brace are not supported).
    pub(super) fn filter_body(&mut self) -> PResult<Vec<Stmt>> {
        if matches!(self.cur.peek().kind, TokKind::Word(_)) {
            let msg = "local variables in filters and functions are not supported by fabsim";
            return Err(Diagnostic::error(self.cur.span(), msg));
        }
        self.cur.punct("{")?;
        self.stmts_until_close()
    }

    fn stmts_until_close(&mut self) -> PResult<Vec<Stmt>> {
        let mut body = Vec::new();
        while !self.cur.eat_punct("}") {
            if self.cur.at_eof() {
                return Err(self.cur.expected("`}`"));
            }
            if let Some(s) = self.stmt()? {
                body.push(s);
            }
        }
        Ok(body)
    }

    /// `block`: one statement or `{ cmds }`.
    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.enter()?;
        let body = if self.cur.eat_punct("{") {
            self.stmts_until_close()?
        } else {
            self.stmt()?.into_iter().collect()
        };
        self.nesting -= 1;
        Ok(body)
    }

    /// One `cmd`; `None` for statements that are parsed and dropped (`print`, community
    /// methods, with a warning where they would change a route).
    fn stmt(&mut self) -> PResult<Option<Stmt>> {
        let span = self.cur.span();
        let (w, _) = self.cur.word(STMT_EXPECTED)?;
        match w.as_str() {
            "accept" | "reject" => {
                // An optional print list before `;` only logs.
                self.cur.skip_statement()?;
                Ok(Some(if w == "accept" { Stmt::Accept } else { Stmt::Reject }))
            }
            "error" => {
                self.warn(span, "`error` in a filter is modelled as `reject`");
                self.cur.skip_statement()?;
                Ok(Some(Stmt::Reject))
            }
            "print" | "printn" => {
                self.cur.skip_statement()?;
                Ok(None)
            }
            "if" => {
                let cond = self.cond()?;
                self.cur.keyword("then")?;
                let then = self.block()?;
                let otherwise = if self.cur.eat_word("else") {
                    self.block()?
                } else {
                    Vec::new()
                };
                Ok(Some(Stmt::If { cond, then, otherwise }))
            }
            "unset" => {
                self.warn(span, "`unset(…)` is not modelled by fabsim; ignored");
                self.cur.skip_statement()?;
                Ok(None)
            }
            "case" | "return" | "quitbird" => {
                let msg = format!("`{w}` in a filter is not supported by fabsim");
                Err(Diagnostic::error(span, msg))
            }
            _ if self.cur.peek().is_punct("(") => {
                if !self.daemon.functions.contains_key(&w) {
                    let msg = format!("`{w}` is not a function defined before this call");
                    return Err(Diagnostic::error(span, msg));
                }
                self.cur.bump();
                if !self.cur.eat_punct(")") {
                    let msg = "calls with arguments are not supported by fabsim";
                    return Err(Diagnostic::error(self.cur.span(), msg));
                }
                self.cur.semi(&format!("the call of `{w}`"))?;
                Ok(Some(Stmt::Call(w)))
            }
            _ if self.cur.peek().is_punct(".") => {
                self.attr_check(&w, &span)?;
                let msg = format!("`{w}.…` (community and path methods) is not modelled by fabsim; ignored");
                self.warn(span, msg);
                self.cur.skip_statement()?;
                Ok(None)
            }
            _ if self.cur.peek().is_punct("=") => {
                if !self.attr_check(&w, &span)? {
                    let msg = format!("the route attribute `{w}` is read-only");
                    return Err(Diagnostic::error(span, msg));
                }
                self.cur.bump();
                let value = self.value()?;
                self.cur.semi(&format!("the assignment to `{w}`"))?;
                Ok(Some(Stmt::Set { attr: w, value }))
            }
            _ => Err(Diagnostic::error(
                span,
                format!("expected {STMT_EXPECTED}, found `{w}`"),
            )),
        }
    }

    /// Whether `name` is a route attribute fabsim knows (error if not); returns writability.
    fn attr_check(&self, name: &str, span: &crate::diag::Span) -> PResult<bool> {
        match ATTRS.iter().find(|(a, _)| *a == name) {
            Some((_, writable)) => Ok(*writable),
            None => {
                let msg =
                    format!("`{name}` is not a route attribute fabsim knows (such as net, bgp_next_hop, krt_tunnel)");
                Err(Diagnostic::error(span.clone(), msg))
            }
        }
    }

    /// A constant: string, number, address or enumeration name.
    fn value(&mut self) -> PResult<Value> {
        let v = match &self.cur.peek().kind {
            TokKind::Str(s) => Value::Str(s.clone()),
            TokKind::Num(n) => Value::Int(*n),
            TokKind::Ip(a) if !self.cur.peek_at(1).is_punct("/") => Value::Ip(*a),
            TokKind::Word(w) if ENUM_PREFIXES.iter().any(|p| w.starts_with(p)) => Value::Str(w.clone()),
            _ => {
                return Err(self.cur.expected(
                    "a constant (string, number, address or RTS_… name); expressions are not supported by fabsim",
                ))
            }
        };
        self.cur.bump();
        Ok(v)
    }

    // --- conditions --------------------------------------------------------------------------

    /// `term` restricted to conditions. `&&`/`||` share one precedence level, left to right
    /// (`conf/confbase.Y`: `%left AND OR`).
    pub(super) fn cond(&mut self) -> PResult<Cond> {
        let mut left = self.unary()?;
        loop {
            if self.cur.eat_punct("&&") {
                left = Cond::And(Box::new(left), Box::new(self.unary()?));
            } else if self.cur.eat_punct("||") {
                left = Cond::Or(Box::new(left), Box::new(self.unary()?));
            } else {
                return Ok(left);
            }
        }
    }

    fn unary(&mut self) -> PResult<Cond> {
        self.enter()?;
        let c = self.unary_inner()?;
        self.nesting -= 1;
        Ok(c)
    }

    fn unary_inner(&mut self) -> PResult<Cond> {
        if self.cur.peek().is_punct("!") {
            let span = self.cur.bump().span;
            if !(self.cur.peek().is_punct("(") || self.cur.peek().is_word("defined") || self.cur.peek().is_punct("!")) {
                let msg = "in BIRD `!` binds tighter than `=` and `~`: write `!(net ~ P)` or use `!~`";
                return Err(Diagnostic::error(span, msg));
            }
            return Ok(Cond::Not(Box::new(self.unary()?)));
        }
        if self.cur.eat_punct("(") {
            let c = self.cond()?;
            self.cur.punct(")")?;
            return Ok(c);
        }
        if self.cur.eat_word("defined") {
            self.cur.punct("(")?;
            let span = self.cur.span();
            let (attr, _) = self.cur.word("a route attribute")?;
            self.attr_check(&attr, &span)?;
            self.cur.punct(")")?;
            return Ok(Cond::Defined { attr });
        }
        self.comparison()
    }

    /// `ATTR op RHS` with op `=`, `!=`, `~`, `!~`.
    fn comparison(&mut self) -> PResult<Cond> {
        let span = self.cur.span();
        let (attr, _) = self.cur.word("a condition (such as `net ~ 10.0.0.0/8`)")?;
        self.attr_check(&attr, &span)?;
        let op_span = self.cur.span();
        let op = match &self.cur.peek().kind {
            TokKind::Punct(p @ ("=" | "!=" | "~" | "!~")) => *p,
            TokKind::Punct(p @ ("<" | ">" | "<=" | ">=")) => {
                let msg = format!("the comparison `{p}` is not supported by fabsim");
                return Err(Diagnostic::error(op_span, msg));
            }
            _ => return Err(self.cur.expected("`=`, `!=`, `~` or `!~`")),
        };
        self.cur.bump();
        let matching = op.ends_with('~');
        let negate = op.starts_with('!');
        let rhs_span = self.cur.span();
        let cond = if self.cur.peek().is_punct("[") {
            if attr != "net" || !matching {
                let msg = "sets are supported by fabsim only as `net ~ [ … ]`";
                return Err(Diagnostic::error(rhs_span, msg));
            }
            self.prefix_set()?
        } else if matches!(self.cur.peek().kind, TokKind::Ip(_)) && self.cur.peek_at(1).is_punct("/") {
            let p = self.cur.prefix()?;
            match (attr.as_str(), matching) {
                ("net", false) => Cond::NetEq(p),
                ("net", true) => Cond::NetIn(p),
                (_, true) => Cond::AddrIn { attr, prefix: p },
                (_, false) => {
                    let msg =
                        format!("`{attr} = PREFIX` is not supported by fabsim (use `~` for an address in a prefix)");
                    return Err(Diagnostic::error(op_span, msg));
                }
            }
        } else {
            if attr == "net" {
                return Err(self.cur.expected("a prefix like 10.0.0.0/8 after `net`"));
            }
            if matching {
                let msg = format!("`{attr} ~` is supported by fabsim only with a prefix");
                return Err(Diagnostic::error(op_span, msg));
            }
            Cond::AttrEq {
                attr,
                value: self.value()?,
            }
        };
        Ok(if negate { Cond::Not(Box::new(cond)) } else { cond })
    }

    /// `[ P, P+, P{a,b}, … ]` as a disjunction. A plain `P` in a set matches P exactly and
    /// `P+` matches P and everything inside it (BIRD `trie_match_fprefix`); `P-` and length
    /// ranges other than `{len,len}` and `{len,32}` are not supported by fabsim.
    fn prefix_set(&mut self) -> PResult<Cond> {
        self.cur.punct("[")?;
        let mut items: Vec<Cond> = Vec::new();
        loop {
            let item_span = self.cur.span();
            let p = self.cur.prefix()?;
            let len = u32::from(p.prefix_len());
            let (lo, hi) = if self.cur.eat_punct("+") {
                (len, 32)
            } else if self.cur.eat_punct("-") {
                let msg = format!("the prefix pattern {p}- is not supported by fabsim");
                return Err(Diagnostic::error(item_span, msg));
            } else if self.cur.eat_punct("{") {
                let lo = self.cur.num("the shortest length")?;
                self.cur.punct(",")?;
                let hi = self.cur.num("the longest length")?;
                self.cur.punct("}")?;
                if !(lo <= hi && hi <= 32) {
                    let msg = format!("invalid prefix pattern range {{{lo}, {hi}}}");
                    return Err(Diagnostic::error(item_span, msg));
                }
                (lo, hi)
            } else {
                (len, len)
            };
            items.push(match (lo == len, hi) {
                (true, 32) => Cond::NetIn(p),
                (true, h) if h == len => Cond::NetEq(p),
                _ => {
                    let msg = format!(
                        "the prefix pattern {p}{{{lo},{hi}}} is not supported by fabsim (only P, P+, P{{len,32}})"
                    );
                    return Err(Diagnostic::error(item_span, msg));
                }
            });
            if !self.cur.eat_punct(",") {
                break;
            }
        }
        self.cur.punct("]")?;
        let mut it = items.into_iter();
        let first = it.next().ok_or_else(|| self.cur.expected("a prefix"))?;
        Ok(it.fold(first, |acc, c| Cond::Or(Box::new(acc), Box::new(c))))
    }
}

const STMT_EXPECTED: &str = "a filter statement (accept, reject, if, NAME(), ATTR = VALUE)";
