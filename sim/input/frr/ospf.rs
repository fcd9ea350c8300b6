//! ospfd: `router ospf` (`ospf router-id`, `network P area A`, `passive-interface IF|default`,
//! `redistribute connected|static|bgp [metric N] [metric-type 1|2]`, `maximum-paths`) and the
//! interfaces' `ip ospf area`, which becomes a network statement for the interface's address.

use ipnet::Ipv4Net;

use super::{Ctx, Handled, Line};
use crate::model::{AddrConfig, OspfConfig, OspfNetwork, RedistSource, Redistribute};

pub(super) fn start(ctx: &mut Ctx, l: &Line) {
    let span = ctx.span(l.col(0));
    let d = &mut ctx.net.devices[ctx.dev.idx()];
    d.ospf.get_or_insert_with(|| instance(span));
}

/// ospfd's one instance, as `router ospf` (or the first `ip ospf area`) starts it.
fn instance(span: crate::diag::Span) -> OspfConfig {
    OspfConfig::new(0, span)
}

fn ospf<'a>(ctx: &'a mut Ctx) -> &'a mut OspfConfig {
    let d = &mut ctx.net.devices[ctx.dev.idx()];
    d.ospf.as_mut().expect("router ospf mode has an OSPF configuration")
}

pub(super) fn line(ctx: &mut Ctx, l: &Line) -> Handled {
    let w = |i| l.word(i).unwrap_or_default();
    let r = match (w(0), w(1)) {
        ("ospf", "router-id") | ("router-id", _) => {
            let at = if w(0) == "ospf" { 2 } else { 1 };
            l.address(at).and_then(|a| {
                ospf(ctx).router_id = Some(a);
                l.end(at + 1)
            })
        }
        ("network", _) => network(ctx, l),
        ("passive-interface", "default") => {
            ospf(ctx).passive_default = true;
            l.end(2)
        }
        ("passive-interface", name) if !name.is_empty() => {
            ospf(ctx).passive_exceptions.push(name.to_string());
            l.end(2)
        }
        ("redistribute", _) => redistribute(ctx, l),
        ("maximum-paths", _) => l.number(1, "a number of paths 1-64").and_then(|n| {
            ospf(ctx).max_paths = Some(n);
            l.end(2)
        }),
        (word, _) if super::ignored::by_design(super::ignored::Context::RouterOspf, word) => Ok(()),
        (
            "area"
            | "auto-cost"
            | "timers"
            | "default-information"
            | "distance"
            | "ospf"
            | "capability"
            | "compatible"
            | "max-metric"
            | "refresh",
            _,
        ) => {
            ctx.not_modelled(l, "not an OSPF setting fabsim models");
            Ok(())
        }
        _ => return None,
    };
    Some(r)
}

fn network(ctx: &mut Ctx, l: &Line) -> Result<(), super::Bad> {
    let prefix: Ipv4Net = l.prefix(1)?;
    if l.word(2) != Some("area") {
        return Err(l.bad(2, "`area`"));
    }
    let area = l.area(3)?;
    l.end(4)?;
    let span = ctx.span(l.col(0));
    ospf(ctx).networks.push(OspfNetwork {
        prefix: prefix.trunc(),
        area,
        span,
    });
    Ok(())
}

fn redistribute(ctx: &mut Ctx, l: &Line) -> Result<(), super::Bad> {
    let source = match l.word(1) {
        Some("connected") => RedistSource::Connected,
        Some("static") => RedistSource::Static,
        Some("bgp") => RedistSource::Bgp,
        Some("kernel" | "ospf" | "rip" | "isis" | "table" | "babel" | "eigrp" | "openfabric") => {
            ctx.not_modelled(l, "only connected, static and bgp are redistributed by fabsim");
            return Ok(());
        }
        _ => return Err(l.bad(1, "a route source (connected, static, bgp, …)")),
    };
    let (mut metric, mut metric_type, mut i) = (None, None, 2);
    while let Some(word) = l.word(i) {
        match word {
            "metric" => metric = Some(l.number(i + 1, "a metric")?),
            "metric-type" => {
                metric_type = Some(match l.word(i + 1) {
                    Some("1") => 1,
                    Some("2") => 2,
                    _ => return Err(l.bad(i + 1, "metric type 1 or 2")),
                })
            }
            "route-map" => {
                ctx.not_modelled(l, "route-maps on redistribution are not modelled");
                return Ok(());
            }
            _ => return Err(l.bad(i, "`metric`, `metric-type` or `route-map`")),
        }
        i += 2;
    }
    let span = ctx.span(l.col(0));
    ospf(ctx).redistribute.push(Redistribute {
        source,
        metric,
        metric_type,
        span,
    });
    Ok(())
}

/// `ip ospf area A` on an interface: a `network ADDR/32 area A` for its address, in an OSPF
/// instance created if the file has no `router ospf` (FRR's ospfd starts one).
pub(super) fn finish(ctx: &mut Ctx) {
    for (iface, area, span) in std::mem::take(&mut ctx.ospf_areas) {
        let AddrConfig::Static(net) = ctx.net.iface(iface).addr else {
            let name = ctx.net.iface(iface).name.clone();
            let d = crate::diag::Diagnostic::warning(
                span,
                format!("`ip ospf area` on {name}, which has no address: OSPF does not run there"),
            );
            ctx.warnings.push(d);
            continue;
        };
        let d = &mut ctx.net.devices[ctx.dev.idx()];
        let ospf = d.ospf.get_or_insert_with(|| instance(span.clone()));
        let host = Ipv4Net::new(net.addr(), 32).unwrap_or(net);
        ospf.networks.push(OspfNetwork {
            prefix: host,
            area,
            span,
        });
    }
}
