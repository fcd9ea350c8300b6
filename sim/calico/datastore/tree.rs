//! A YAML document as a spanned tree. Calico resources are loosely typed (numbers written as
//! strings, labels written as booleans, `spec:` left empty), so the datastore reads every
//! document into this generic tree first and converts by hand, keeping each value's position
//! for diagnostics and warning about keys it does not know.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use crate::diag::Span;

/// One YAML value. Scalars keep their YAML type; `scalar()` gives Calico's string view.
#[derive(Debug, Clone)]
pub(crate) enum Yv {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Yv>>),
    Map(Vec<(Spanned<String>, Spanned<Yv>)>),
}

impl Yv {
    /// The scalar as text (what a Go `string` field would hold after YAML→JSON): `None` for
    /// sequences and mappings, `""` for null.
    pub(crate) fn scalar(&self) -> Option<String> {
        match self {
            Yv::Null => Some(String::new()),
            Yv::Bool(b) => Some(b.to_string()),
            Yv::Int(i) => Some(i.to_string()),
            Yv::Float(f) => Some(f.to_string()),
            Yv::Str(s) => Some(s.clone()),
            Yv::Seq(_) | Yv::Map(_) => None,
        }
    }

    /// The entries of a mapping (a null value counts as an empty mapping: `spec:` with nothing).
    pub(crate) fn entries(&self) -> Option<&[(Spanned<String>, Spanned<Yv>)]> {
        match self {
            Yv::Map(m) => Some(m),
            Yv::Null => Some(&[]),
            _ => None,
        }
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Yv::Null => "null",
            Yv::Bool(_) => "a boolean",
            Yv::Int(_) | Yv::Float(_) => "a number",
            Yv::Str(_) => "a string",
            Yv::Seq(_) => "a list",
            Yv::Map(_) => "a mapping",
        }
    }
}

/// The position of a located value in `file`.
pub(crate) fn span(file: &str, loc: &Location) -> Span {
    Span::new(file, loc.line() as u32, loc.column() as u32)
}

impl<'de> Deserialize<'de> for Yv {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Yv;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_unit<E>(self) -> Result<Yv, E> {
                Ok(Yv::Null)
            }
            fn visit_none<E>(self) -> Result<Yv, E> {
                Ok(Yv::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Yv, E> {
                Ok(Yv::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Yv, E> {
                Ok(Yv::Int(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Yv, E> {
                Ok(Yv::Int(v.into()))
            }
            fn visit_i128<E>(self, v: i128) -> Result<Yv, E> {
                Ok(Yv::Int(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Yv, E> {
                Ok(Yv::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Yv, E> {
                Ok(Yv::Str(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Yv, E> {
                Ok(Yv::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yv, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Yv::Seq(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yv, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Yv::Map(out))
            }
        }
        d.deserialize_any(Visit)
    }
}
