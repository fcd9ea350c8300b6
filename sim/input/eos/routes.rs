//! Static routes: `ip route` and `no ip route`.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::model::{RouteOrigin, StaticRoute};

use super::cursor::{prefix, Cur, MaskForm, Neg, Reject};
use super::ignored::{ignored_by_design, skip_unmodelled, statement, KeywordContext};
use super::interface::interface_name;
use super::keywords::STATIC_ROUTE_OPTIONS;
use super::{Apply, Ctx};

/// What a static route points at.
enum NextHop {
    Via(Ipv4Addr),
    Dev(String, Option<Ipv4Addr>),
    Null0,
}

fn is_null0(text: &str) -> bool {
    text.eq_ignore_ascii_case("null0")
}

fn next_hop(c: &mut Cur) -> Result<NextHop, Reject> {
    const WHAT: &str = "a next hop (A.B.C.D, an interface or Null0)";
    let t = c.peek().ok_or_else(|| c.expected(WHAT))?;
    if let Ok(a) = t.text.parse::<Ipv4Addr>() {
        c.pos += 1;
        return Ok(NextHop::Via(a));
    }
    if is_null0(t.text) {
        c.pos += 1;
        return Ok(NextHop::Null0);
    }
    let dev = interface_name(c).map_err(|_| c.expected(WHAT))?;
    let via = c.peek().and_then(|t| t.text.parse::<Ipv4Addr>().ok());
    if via.is_some() {
        c.pos += 1;
    }
    Ok(NextHop::Dev(dev, via))
}

/// `ip route [vrf V] PREFIX NEXTHOP|INTERFACE [NEXTHOP]|Null0 [DISTANCE] [tag N] [name S]`
pub(super) fn ip_route(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["vrf"]).is_some() {
        c.word("a VRF name")?;
        return Ok(skip_unmodelled(c, start));
    }
    let prefix = prefix(c, MaskForm::Netmask)?.trunc();
    if neg != Neg::Set && c.at_end() {
        return Ok(Box::new(move |ctx: &mut Ctx| remove_statics(ctx, prefix, None)));
    }
    let hop = next_hop(c)?;
    let distance = match c.peek() {
        Some(t) if t.text.parse::<u64>().is_ok() => Some(c.number::<u8>("a distance (1-255)", 1, 255)?),
        _ => None,
    };
    while let Some(opt) = c.peek() {
        let word = c.keyword(STATIC_ROUTE_OPTIONS, "tag, name or end of line")?;
        if ignored_by_design(KeywordContext::StaticRouteOption, word) {
            c.word(&format!("a {word} value"))?;
        } else {
            // `metric`, `track`: valid EOS options that change route selection; not modelled.
            let text = statement(c);
            c.skip_rest();
            let col0 = opt.col0;
            let msg = format!("option '{word}' of '{text}' is not modelled by fabsim; ignored");
            return Ok(static_route_apply(prefix, hop, distance, neg, start, Some((col0, msg))));
        }
    }
    Ok(static_route_apply(prefix, hop, distance, neg, start, None))
}

fn static_route_apply(
    prefix: Ipv4Net,
    hop: NextHop,
    distance: Option<u8>,
    neg: Neg,
    start: usize,
    note: Option<(usize, String)>,
) -> Apply {
    let (via, dev, blackhole) = match hop {
        NextHop::Via(a) => (Some(a), None, false),
        NextHop::Dev(d, a) => (a, Some(d), false),
        NextHop::Null0 => (None, None, true),
    };
    Box::new(move |ctx: &mut Ctx| {
        if let Some((col0, msg)) = note {
            ctx.warn(col0, msg);
        }
        if neg != Neg::Set {
            remove_statics(ctx, prefix, Some((via, dev.as_deref(), blackhole)));
            return;
        }
        let route = StaticRoute {
            prefix,
            via,
            dev,
            distance,
            metric: 0,
            blackhole,
            onlink: false,
            origin: RouteOrigin::Manual,
            span: ctx.span(start),
        };
        let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
            return;
        };
        // Re-entering a route with the same next hop replaces it (e.g. a new distance).
        let same = |r: &StaticRoute| {
            r.prefix == route.prefix && r.via == route.via && r.dev == route.dev && r.blackhole == route.blackhole
        };
        match d.statics.iter_mut().find(|r| same(r)) {
            Some(existing) => *existing = route,
            None => d.statics.push(route),
        }
    })
}

type HopKey<'a> = (Option<Ipv4Addr>, Option<&'a str>, bool);

/// `no ip route P [NEXTHOP]`: without a next hop, every route to P goes.
fn remove_statics(ctx: &mut Ctx, prefix: Ipv4Net, hop: Option<HopKey>) {
    let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) else {
        return;
    };
    d.statics.retain(|r| {
        let same_hop = hop.is_none_or(|(via, dev, bh)| r.via == via && r.dev.as_deref() == dev && r.blackhole == bh);
        !(r.prefix == prefix && same_hop)
    });
}
