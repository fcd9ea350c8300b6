//! Global configuration mode: which command a line is, `hostname` and `ip routing`; the modelled
//! commands' own modules parse the rest.

use super::acl::ip_access_list;
use super::cursor::{negation, Cur, Neg, Reject, Tok};
use super::ignored::{ignored_by_design, nothing, skip_block, skip_unmodelled, KeywordContext};
use super::interface::interface;
use super::keywords::{GLOBAL_BLOCK_WORDS, GLOBAL_IP_WORDS, GLOBAL_WORDS};
use super::ospf::router;
use super::routes::ip_route;
use super::{Apply, Ctx, Mode};

pub(super) fn parse_global(c: &mut Cur) -> Result<Apply, Reject> {
    let start = c.here();
    let (neg, word) = negation(c, GLOBAL_WORDS, "a configuration command")?;
    match word {
        "configure" => {
            c.opt_keyword(&["terminal"]);
            c.end()?;
            Ok(nothing())
        }
        "end" | "exit" => {
            c.end()?;
            Ok(Box::new(|ctx: &mut Ctx| {
                ctx.close_block();
                ctx.mode = Mode::Global;
            }))
        }
        "hostname" => hostname(c, neg),
        "interface" => interface(c, neg, start),
        "ip" => global_ip(c, neg, start),
        "router" => router(c, neg, start),
        w if ignored_by_design(KeywordContext::Global, w) => {
            c.skip_rest();
            Ok(nothing())
        }
        w if GLOBAL_BLOCK_WORDS.contains(&w) => Ok(skip_block(c, neg, start)),
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn hostname(c: &mut Cur, neg: Neg) -> Result<Apply, Reject> {
    let name = match neg {
        Neg::Set => Some(c.word("a hostname")?.text.to_string()),
        Neg::No | Neg::Default => {
            c.skip_if(|_| true);
            None
        }
    };
    c.end()?;
    Ok(Box::new(move |ctx: &mut Ctx| {
        if let Some(d) = ctx.net.devices.get_mut(ctx.dev.idx()) {
            d.hostname = name;
        }
    }))
}

fn global_ip(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    match c.keyword(GLOBAL_IP_WORDS, "an ip command")? {
        "routing" => ip_routing(c, neg, start),
        "route" => ip_route(c, neg, start),
        "access-list" => ip_access_list(c, neg, start),
        "prefix-list" => Ok(skip_block(c, neg, start)),
        _ => Ok(skip_unmodelled(c, start)),
    }
}

fn ip_routing(c: &mut Cur, neg: Neg, start: usize) -> Result<Apply, Reject> {
    if c.opt_keyword(&["vrf"]).is_some() {
        return Ok(skip_unmodelled(c, start));
    }
    c.end()?;
    if neg == Neg::Set {
        return Ok(nothing());
    }
    Ok(Box::new(move |ctx: &mut Ctx| {
        ctx.warn(
            start,
            "'no ip routing' is not modelled: fabsim always routes on EOS; ignored",
        )
    }))
}

/// Whether a line starts with a global command fabsim models (after `no`/`default`).
pub(super) fn starts_modelled_global(toks: &[Tok], len: usize) -> bool {
    let mut c = Cur::new(toks, len);
    let word = negation(&mut c, GLOBAL_WORDS, "").map(|(_, w)| w);
    matches!(word, Ok("hostname" | "interface" | "ip" | "router"))
}
