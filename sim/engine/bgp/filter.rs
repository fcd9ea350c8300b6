//! Running a BIRD filter or function body on one route: `run_filter` for a protocol's
//! import/export policy and for the kernel protocol's export filter. (`input::bird` parses
//! the filters into the model; this evaluates them.)
//!
//! Semantics from BIRD 1.6.8 `filter/filter.c` (`interpret`, `f_run`): statements run in order;
//! `accept`/`reject` end the whole filter even inside a called function (they return a
//! `T_RETURN` value that `FI_CALL` passes up); falling off the end of a function returns to the
//! caller, falling off the end of a filter is an error and the route is rejected. A runtime
//! error (comparing an undefined attribute, `~` on incompatible types) also rejects the route.
//! `&&`/`||` short-circuit (`FI_AND`/`FI_OR`).

use std::borrow::Cow;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use smallvec::SmallVec;

use crate::model::bgp::{BirdDaemon, Cond, Filter, Policy, Stmt, Value};

/// Calls nested deeper than this (a function calling itself) reject the route. BIRD 1.6 has no
/// limit (it would overflow its stack); fabsim must never panic.
const MAX_CALL_DEPTH: usize = 64;

/// The route a filter sees and may change. It borrows its protocol's name and the names and
/// values the filter sets from the configuration: a filter runs for every route a node's
/// kernel protocol exports, at every decision, and copying them was most of each run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterRoute<'a> {
    pub net: Ipv4Net,
    pub bgp_next_hop: Option<Ipv4Addr>,
    /// Attributes set by the filter (`krt_tunnel = "tunl0"`), each once, in the order first
    /// set. A filter sets one or two, so a map's allocation would cost more than the scan.
    pub attrs: SmallVec<[(&'a str, &'a Value); 2]>,
    /// The protocol the route came from: `static1`, `Mesh_10_0_137_12`, `kernel1`, `direct1`.
    pub proto: &'a str,
}

impl<'a> FilterRoute<'a> {
    pub fn new(net: Ipv4Net, proto: &'a str) -> Self {
        FilterRoute {
            net,
            bgp_next_hop: None,
            attrs: SmallVec::new(),
            proto,
        }
    }

    /// An attribute the filter set.
    pub fn attr(&self, name: &str) -> Option<&'a Value> {
        self.attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Reject,
}

/// Runs `policy` on `route`. `All` accepts and `None` rejects without running anything; a
/// named filter that does not exist rejects (the parser never produces one).
pub fn run_filter<'a>(daemon: &'a BirdDaemon, policy: &Policy, route: &mut FilterRoute<'a>) -> Verdict {
    Prepared::new(daemon, policy).run(route)
}

/// A policy with its filter looked up by name: one that runs on many routes (a node's kernel
/// protocol exports each of its thousands of prefixes at every decision) is looked up once,
/// where the search of the daemon's filters by name was a third of each run.
#[derive(Clone, Copy, Debug)]
pub enum Prepared<'a> {
    /// No filter runs: `all`, `none`, or a name no filter has.
    Always(Verdict),
    Filter(&'a BirdDaemon, &'a Filter),
}

impl<'a> Prepared<'a> {
    pub fn new(daemon: &'a BirdDaemon, policy: &Policy) -> Self {
        match policy {
            Policy::All => Prepared::Always(Verdict::Accept),
            // A route-map is not a BIRD filter (the BIRD parser never produces one).
            Policy::None | Policy::RouteMap(_) => Prepared::Always(Verdict::Reject),
            Policy::Filter(name) => match daemon.filters.get(name) {
                Some(f) => Prepared::Filter(daemon, f),
                None => Prepared::Always(Verdict::Reject),
            },
        }
    }

    pub fn run(self, route: &mut FilterRoute<'a>) -> Verdict {
        match self {
            Prepared::Always(v) => v,
            Prepared::Filter(daemon, f) => match exec(daemon, &f.body, route, 0) {
                Flow::Accept => Verdict::Accept,
                // Falling off the end of a filter: "did not return accept nor reject" → rejected.
                Flow::Reject | Flow::Next => Verdict::Reject,
            },
        }
    }
}

enum Flow {
    Next,
    Accept,
    Reject,
}

/// A BIRD runtime error: the filter stops and the route is rejected.
struct RuntimeError;

fn exec<'a>(daemon: &'a BirdDaemon, body: &'a [Stmt], route: &mut FilterRoute<'a>, depth: usize) -> Flow {
    for stmt in body {
        let flow = match stmt {
            Stmt::Accept => Flow::Accept,
            Stmt::Reject => Flow::Reject,
            Stmt::If { cond, then, otherwise } => match eval(cond, route) {
                Ok(true) => exec(daemon, then, route, depth),
                Ok(false) => exec(daemon, otherwise, route, depth),
                Err(RuntimeError) => Flow::Reject,
            },
            Stmt::Call(name) => match daemon.functions.get(name) {
                Some(f) if depth < MAX_CALL_DEPTH => exec(daemon, f, route, depth + 1),
                _ => Flow::Reject,
            },
            Stmt::Set { attr, value } => {
                set(route, attr, value);
                Flow::Next
            }
        };
        if !matches!(flow, Flow::Next) {
            return flow;
        }
    }
    Flow::Next
}

fn set<'a>(route: &mut FilterRoute<'a>, attr: &'a str, value: &'a Value) {
    match (attr, value) {
        ("bgp_next_hop", Value::Ip(a)) => route.bgp_next_hop = Some(*a),
        _ => match route.attrs.iter_mut().find(|(n, _)| *n == attr) {
            Some(slot) => slot.1 = value,
            None => route.attrs.push((attr, value)),
        },
    }
}

fn eval(cond: &Cond, route: &FilterRoute) -> Result<bool, RuntimeError> {
    Ok(match cond {
        Cond::NetEq(p) => route.net.trunc() == *p,
        Cond::NetIn(p) => p.contains(&route.net.trunc()),
        Cond::AddrIn { attr, prefix } => match get(route, attr).as_deref() {
            Some(Value::Ip(a)) => prefix.contains(a),
            _ => return Err(RuntimeError),
        },
        Cond::AttrEq { attr, value } => match get(route, attr) {
            Some(v) if std::mem::discriminant(&*v) == std::mem::discriminant(value) => *v == *value,
            _ => return Err(RuntimeError),
        },
        Cond::Defined { attr } => attr == "net" || get(route, attr).is_some(),
        Cond::Not(c) => !eval(c, route)?,
        Cond::And(a, b) => eval(a, route)? && eval(b, route)?,
        Cond::Or(a, b) => eval(a, route)? || eval(b, route)?,
    })
}

/// An attribute's value, `None` when the route does not carry it.
fn get<'a>(route: &FilterRoute<'a>, attr: &str) -> Option<Cow<'a, Value>> {
    match attr {
        "proto" => Some(Cow::Owned(Value::Str(route.proto.to_string()))),
        "bgp_next_hop" => route.bgp_next_hop.map(|a| Cow::Owned(Value::Ip(a))),
        "source" => Some(
            route
                .attr(attr)
                .map_or_else(|| Cow::Owned(source_of(route.proto)), Cow::Borrowed),
        ),
        _ => route.attr(attr).map(Cow::Borrowed),
    }
}

/// BIRD's `source` (RTS_*) when the engine did not set it: from the protocol's default name
/// (`static1` → RTS_STATIC, `kernel1` → RTS_INHERIT, `direct1` → RTS_DEVICE), else BGP.
fn source_of(proto: &str) -> Value {
    let kinds = [
        ("static", "RTS_STATIC"),
        ("kernel", "RTS_INHERIT"),
        ("direct", "RTS_DEVICE"),
    ];
    let name = kinds
        .iter()
        .find(|(p, _)| {
            proto
                .strip_prefix(p)
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
        })
        .map_or("RTS_BGP", |(_, s)| s);
    Value::Str(name.to_string())
}
