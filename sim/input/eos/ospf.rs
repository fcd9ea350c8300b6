//! OSPF: the global `router` command (`router ospf N` enters router-ospf mode; other protocols
//! are skipped blocks) and the router-ospf mode commands.

use std::net::Ipv4Addr;

use crate::diag::Span;
use crate::model::{OspfConfig, OspfNetwork, RedistSource, Redistribute};

use super::bgp::router_bgp;
use super::cursor::{negation, number_or_none, prefix, router_id, Cur, MaskForm, Neg, Reject};
use super::ignored::{
    enter_or_warn, ignored_by_design, nothing, skip_block, skip_unmodelled, statement, KeywordContext,
};
use super::interface::interface_name;
use super::keywords::{OSPF_WORDS, REDIST_SOURCES, ROUTER_WORDS};
use super::{edit_apply, Apply, Ctx, Mode};

pub(super) fn router(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    let kind = c.keyword(ROUTER_WORDS, "a routing protocol (e.g. ospf)")?;
    match kind {
        "ospf" => {}
        "bgp" => return router_bgp(c, neg, start),
        _ => return Ok(skip_block(c, neg, start)),
    }
    let pid = c.number::<u32>("an OSPF process id (1-65535)", 1, 65535)?;
    let vrf = match c.opt_keyword(&["vrf"]) {
        Some(_) => Some(c.word("a VRF name")?.text.to_string()),
        None => None,
    };
    c.end()?;
    let text = statement(c);
    Ok(Box::new(move |ctx: &mut Ctx| {
        if vrf.is_some_and(|v| v != "default") {
            return enter_or_warn(ctx, neg, text, start);
        }
        if neg != Neg::Set {
            return no_router_ospf(ctx, pid, &text, start);
        }
        router_ospf(ctx, pid, text, start)
    }))
}

fn router_ospf(ctx: &mut Ctx, pid: u32, text: String, start: usize) {
    let span = ctx.span(start);
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    let ospf = d.ospf.get_or_insert_with(|| OspfConfig::new(pid, span));
    if ospf.process_id == pid {
        ctx.mode = Mode::Ospf;
    } else {
        // fabsim models one OSPF instance per device.
        ctx.enter_block(format!("{text} (a second OSPF process)"), start);
    }
}

fn no_router_ospf(ctx: &mut Ctx, pid: u32, text: &str, start: usize) {
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    if d.ospf.as_ref().is_some_and(|o| o.process_id == pid) {
        d.ospf = None;
    } else {
        ctx.warn(start, format!("'{text}': no such OSPF process; ignored"));
    }
}

impl Ctx<'_> {
    fn ospf_mut(&mut self) -> Option<&mut OspfConfig> {
        self.net.devices.get_mut(self.dev.idx())?.ospf.as_mut()
    }
}

/// An edit of the device's OSPF process, applied only if it still exists.
fn ospf_apply(f: impl FnOnce(&mut OspfConfig, Span) + 'static, start: usize) -> Apply {
    edit_apply(|d| d.ospf.as_mut(), f, start)
}

pub(super) fn parse_ospf(c: &mut Cur) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, OSPF_WORDS, "a router ospf command")?;
    let set = neg == Neg::Set;
    match word {
        "router-id" => {
            let id = router_id(c, set)?;
            Ok(ospf_apply(move |o, _| o.router_id = id, start))
        }
        "network" => ospf_network(c, set, start),
        "redistribute" => redistribute(c, set, start),
        "passive-interface" => passive_interface(c, set, start),
        "maximum-paths" => {
            let n = number_or_none::<u32>(c, set, "a path count (1-128)", 1, 128)?;
            Ok(ospf_apply(move |o, _| o.max_paths = n, start))
        }
        "shutdown" => {
            c.end()?;
            Ok(ospf_apply(move |o, _| o.shutdown = set, start))
        }
        w if ignored_by_design(KeywordContext::Ospf, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        "auto-cost" | "distance" | "default-information" => {
            let text = statement(c);
            c.skip_rest();
            Ok(Box::new(move |ctx: &mut Ctx| {
                ctx.warn(start, format!("'{text}' parsed but not modelled by fabsim; ignored"))
            }))
        }
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn ospf_network(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let prefix = prefix(c, MaskForm::Wildcard)?.trunc();
    let area = if set || !c.at_end() {
        c.keyword(&["area"], "area")?;
        Some(area(c)?)
    } else {
        None
    };
    c.end()?;
    Ok(ospf_apply(
        move |o, span| {
            o.networks.retain(|n| n.prefix != prefix);
            if let (true, Some(area)) = (set, area) {
                o.networks.push(OspfNetwork { prefix, area, span });
            }
        },
        start,
    ))
}

fn redistribute(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    let source = match c.keyword(REDIST_SOURCES, "static, connected or bgp")? {
        "static" => RedistSource::Static,
        "connected" => RedistSource::Connected,
        "bgp" => RedistSource::Bgp,
        _ => {
            return Ok(skip_unmodelled(c, start));
        }
    };
    let (mut metric, mut metric_type, mut route_map) = (None, None, None);
    while !c.at_end() && set {
        match c.keyword(
            &["metric", "metric-type", "route-map"],
            "metric, metric-type or route-map",
        )? {
            "metric" => metric = Some(c.number::<u32>("a metric (0-16777214)", 0, 16_777_214)?),
            "metric-type" => metric_type = Some(c.number::<u8>("a metric type (1 or 2)", 1, 2)?),
            _ => route_map = Some((c.here(), c.word("a route-map name")?.text.to_string())),
        }
    }
    c.skip_rest();
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some((col0, name)) = route_map {
            let msg = format!("route-map '{name}' is not modelled by fabsim; redistributing without it");
            ctx.warn(col0, msg);
        }
        let span = ctx.span(start);
        let Some(o) = ctx.ospf_mut() else { return };
        o.redistribute.retain(|r| r.source != source);
        if set {
            o.redistribute.push(Redistribute {
                source,
                metric,
                metric_type,
                span,
            });
        }
    }))
}

/// `passive-interface X` / `no passive-interface X` are recorded relative to the default
/// (`passive_exceptions`), so their meaning flips with `passive-interface default`.
fn passive_interface(c: &mut Cur, set: bool, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["default"]).is_some() {
        c.end()?;
        return Ok(ospf_apply(
            move |o, _| {
                if o.passive_default != set {
                    o.passive_exceptions.clear();
                }
                o.passive_default = set;
            },
            start,
        ));
    }
    let name = interface_name(c)?;
    c.end()?;
    Ok(ospf_apply(
        move |o, _| {
            // An exception is "passive" when the default is active, and vice versa.
            let exception = set != o.passive_default;
            o.passive_exceptions.retain(|n| *n != name);
            if exception {
                o.passive_exceptions.push(name);
            }
        },
        start,
    ))
}

/// An OSPF area: decimal or dotted quad.
fn area(c: &mut Cur) -> Result<u32, Reject> {
    const WHAT: &str = "an area id (decimal or A.B.C.D)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    let id = match t.text.parse::<u32>() {
        Ok(n) => n,
        Err(_) => u32::from(t.text.parse::<Ipv4Addr>().map_err(|_| c.expected(WHAT))?),
    };
    c.pos += 1;
    Ok(id)
}
