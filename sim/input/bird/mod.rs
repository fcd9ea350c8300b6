//! BIRD 1.6 configuration text (as Calico's confd renders it) → the device's `BirdDaemon` and
//! `BgpConfig`, plus `run_filter`, the evaluator the engine uses for BIRD filters.
//!
//! Modules: `lexer` (tokens, comments, `include`), `cursor` (typed takes and errors),
//! `parser` (top level and protocols), `filter` (function and filter bodies), `eval`
//! (running a filter on a route). Valid BIRD that fabsim does not model is a warning with its
//! position; invalid text is an error at the offending token saying what was expected. Like
//! BIRD itself, parsing stops at the first error.

mod cursor;
mod filter;
mod lexer;
mod parser;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, InputError, TextOrigin};
use crate::model::bgp::{BgpConfig, BgpFlavor};
use crate::model::{DeviceId, Network};

/// Parse a BIRD 1.6 config for device `dev` and store it: `net.devices[dev].bird` gets the
/// daemon, `net.devices[dev].bgp` a `BgpConfig` (flavour BIRD) with one neighbour per
/// `protocol bgp`. BIRD has no global AS: the speaker's `asn` is the first protocol's `local
/// as` (each neighbour keeps its own); a warning names protocols that differ. With no `protocol
/// bgp` the first template's AS is used, and with neither the device has no BGP speaker.
///
/// `include "file";` fragments are looked up in `includes` (name → (text, where it starts)); a
/// missing one is an error at the include line. Returns warnings.
pub fn apply_bird(
    net: &mut Network,
    dev: DeviceId,
    text: &str,
    origin: &TextOrigin,
    includes: &BTreeMap<String, (String, TextOrigin)>,
) -> Result<Vec<Diagnostic>, InputError> {
    super::check_device(net, dev, origin)?;
    let mut sources = vec![origin.file.clone()];
    let toks = lexer::tokens(text, origin, includes, &mut sources)?;
    let parser = parser::Parser::new(cursor::Cursor::new(toks), sources);
    let (parsed, mut warnings) = parser.parse()?;

    let first = parsed
        .neighbors
        .first()
        .and_then(|n| Some((n.local_as?, n.span.clone())));
    let bgp = first.or(parsed.template_as).map(|(asn, span)| {
        for n in &parsed.neighbors {
            if let Some(other) = n.local_as.filter(|a| *a != asn) {
                let name = n.name.as_deref().unwrap_or("?");
                let msg = format!(
                    "protocol {name} has local as {other}, the speaker's AS is {asn} (from the first protocol); \
                     each session keeps its own"
                );
                warnings.push(Diagnostic::warning(n.span.clone(), msg));
            }
        }
        let mut cfg = BgpConfig::new(BgpFlavor::Bird, asn, span);
        cfg.router_id = parsed.daemon.router_id;
        cfg.neighbors = parsed.neighbors;
        cfg
    });
    let mut daemon = parsed.daemon;
    daemon.files = std::iter::once(("bird.cfg".to_string(), text.to_string()))
        .chain(includes.iter().map(|(name, (inc, _))| (name.clone(), inc.clone())))
        .collect();
    let device = &mut net.devices[dev.idx()];
    device.bird = Some(daemon);
    device.bgp = bgp;
    Ok(warnings)
}
