//! The report of a whole run, in the three forms `fabsim run` prints: readable text (coloured
//! on a terminal), one JSON document (schema in docs/report-schema.md), JUnit XML
//! ([`super::junit`]). All three are built from the same `RunReport`, so they cannot disagree.

use anstyle::{AnsiColor, Style};
use serde::Serialize;

use super::checks::serde_name;
use super::fabric::Fabric;
use super::run::{fmt_ms, Run, StepReport};
use super::Scenario;

/// Version of the JSON document's layout; bumped when a field changes meaning or goes away
/// (new fields may appear without a bump).
pub const SCHEMA_VERSION: u32 = 1;

/// The seed `fabsim run` uses when none is given.
pub use crate::engine::DEFAULT_SEED;

/// A finished run: the JSON document's top level. Field order is the key order.
#[derive(Serialize)]
pub struct RunReport<'a> {
    pub schema: u32,
    pub scenario: &'a str,
    pub file: &'a str,
    pub topology: &'a str,
    pub seed: u64,
    /// `--until STEP`, when the run stopped early.
    pub until: Option<&'a str>,
    /// The devices and cables the drawings show (each step's `fabric` says their state).
    pub fabric: &'a Fabric,
    /// The topology's converged start (no expectations).
    pub start: &'a StepReport,
    pub steps: &'a [StepReport],
    pub summary: Summary,
}

#[derive(Serialize)]
pub struct Summary {
    pub expectations: usize,
    pub passed: usize,
    pub failed: usize,
    /// `fabsim run`'s exit status: 0 every expectation held, 1 some failed.
    pub exit_code: i32,
}

impl<'a> RunReport<'a> {
    pub fn new(scn: &'a Scenario, topology: &'a str, run: &'a Run, seed: u64, until: Option<&'a str>) -> Self {
        let expectations = run.steps.iter().map(|s| s.checks.len()).sum();
        let failed = run.steps.iter().map(StepReport::failed).sum();
        RunReport {
            schema: SCHEMA_VERSION,
            scenario: &scn.name,
            file: &scn.file,
            topology,
            seed,
            until,
            fabric: &run.fabric,
            start: &run.start,
            steps: &run.steps,
            summary: Summary {
                expectations,
                passed: expectations - failed,
                failed,
                exit_code: i32::from(failed > 0),
            },
        }
    }

    /// The start, then every step run.
    pub fn all_steps(&self) -> impl Iterator<Item = &StepReport> {
        std::iter::once(self.start).chain(self.steps.iter())
    }

    /// Virtual time from power-on to the last step's end.
    pub fn virtual_ms(&self) -> u64 {
        self.all_steps()
            .map(|s| s.settled_ms.max(s.start_ms))
            .max()
            .unwrap_or(0)
    }

    pub fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }

    /// The readable report; `color` adds ANSI styles (the caller decides: a terminal, or
    /// `--color always`).
    /// `verbose` lists every route change and every broken pair's decision chain; otherwise
    /// a step with many changes is summarised per device.
    pub fn text(&self, color: bool, verbose: bool) -> String {
        let p = Palette::new(color);
        let mut out = format!(
            "scenario {} ({}) on topology {}, seed {}\n",
            self.scenario, self.file, self.topology, self.seed
        );
        for s in self.all_steps() {
            step_text(s, &p, verbose, &mut out);
        }
        let sum = &self.summary;
        let failed = format!("{} failed", sum.failed);
        let failed = if sum.failed > 0 { p.fail.paint(&failed) } else { failed };
        out.push_str(&format!("\n{} passed, {failed}\n", sum.passed));
        out
    }
}

/// Styles of the text report; all plain when colour is off.
struct Palette {
    head: Style,
    ok: Style,
    fail: Style,
    finding: Style,
}

trait Paint {
    fn paint(&self, text: &str) -> String;
}

impl Paint for Style {
    fn paint(&self, text: &str) -> String {
        format!("{}{text}{}", self.render(), self.render_reset())
    }
}

impl Palette {
    fn new(color: bool) -> Self {
        if !color {
            let plain = Style::new();
            return Palette {
                head: plain,
                ok: plain,
                fail: plain,
                finding: plain,
            };
        }
        let fg = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
        Palette {
            head: Style::new().bold(),
            ok: fg(AnsiColor::Green),
            fail: fg(AnsiColor::Red).bold(),
            finding: fg(AnsiColor::Yellow),
        }
    }
}

/// Route changes listed one by one up to this many per step (without `--verbose`).
const ROUTE_LINES: usize = 12;
/// Broken pairs shown with their decision chain (without `--verbose`); the rest get one line.
const EXPLAINED_PAIRS: usize = 5;
/// Changed pairs listed at all (without `--verbose`).
const LISTED_PAIRS: usize = 20;

fn step_text(s: &StepReport, p: &Palette, verbose: bool, out: &mut String) {
    let name = s.name.as_deref().map(|n| format!(" — {n}")).unwrap_or_default();
    out.push_str(&format!("\n{}\n", p.head.paint(&format!("[{}]{name}", s.id))));
    out.push_str(&format!("  change: {}\n", s.change));
    // The runbook's own transcript: each command as typed and what it printed.
    for c in &s.commands {
        out.push_str(&format!("  {}$ {}\n", c.device, c.command));
        for l in c.output.lines() {
            out.push_str(&format!("    {l}\n"));
        }
    }
    let quiet = if s.quiet {
        ""
    } else {
        " (NOT quiet: still changing at the run limit)"
    };
    let settle = if s.settled_ms > s.start_ms || !s.route_changes.is_empty() {
        format!(
            "routes settled after {}",
            fmt_ms(s.settled_ms.saturating_sub(s.start_ms))
        )
    } else {
        "no route changed".to_string()
    };
    out.push_str(&format!("  at t={}, {settle}{quiet}\n", fmt_ms(s.start_ms)));
    for w in &s.warnings {
        out.push_str(&format!("  {w}\n"));
    }
    for f in &s.findings {
        out.push_str(&format!("  {} {f}\n", p.finding.paint("FINDING")));
    }
    // The pings the step watched: each outage as the engineer would count it.
    for f in &s.flows {
        let verdict = match f.outages.as_slice() {
            [] => "no probe lost".to_string(),
            os => os
                .iter()
                .map(|o| super::describe_outage(o, f.interval_ms))
                .collect::<Vec<_>>()
                .join("; "),
        };
        out.push_str(&format!("  ping {} -> {}: {verdict}\n", f.from, f.to));
    }
    routes_text(&s.route_changes, verbose, out);
    for c in &s.peers {
        let reason = c.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
        out.push_str(&format!(
            "  {}: {} {} -> {}{reason}\n",
            c.device, c.peer, c.before, c.after
        ));
    }
    if let Some(r) = &s.reach {
        reach_text(r, p, verbose, out);
    }
    for c in &s.checks {
        // The phase as the scenario file names it, so a new phase needs no change here.
        let when = serde_name(c.when);
        let verdict = if c.ok { p.ok.paint("ok  ") } else { p.fail.paint("FAIL") };
        out.push_str(&format!("  {verdict} {when:<6} {}\n", c.what));
        if !c.ok {
            out.push_str(&format!("       at {}\n", c.span));
            for l in c.detail.lines() {
                out.push_str(&format!("       {l}\n"));
            }
        }
    }
}

fn routes_text(changes: &[String], verbose: bool, out: &mut String) {
    if changes.is_empty() {
        out.push_str("  routes: no change\n");
        return;
    }
    out.push_str(&format!("  routes: {} changes\n", changes.len()));
    if verbose || changes.len() <= ROUTE_LINES {
        for c in changes {
            out.push_str(&format!("    {c}\n"));
        }
        return;
    }
    for (dev, gone, new) in routes_per_device(changes) {
        out.push_str(&format!("    {dev}: {new} added, {gone} withdrawn\n"));
    }
    out.push_str("    (--verbose lists each route)\n");
}

/// Per device, in the order the devices first appear: how many routes went and came.
pub(super) fn routes_per_device(changes: &[String]) -> Vec<(&str, usize, usize)> {
    let mut per_device: Vec<(&str, usize, usize)> = Vec::new();
    for c in changes {
        let (dev, rest) = c.split_once(": ").unwrap_or((c, ""));
        let i = match per_device.iter().position(|(d, _, _)| *d == dev) {
            Some(i) => i,
            None => {
                per_device.push((dev, 0, 0));
                per_device.len() - 1
            }
        };
        if rest.starts_with('-') {
            per_device[i].1 += 1;
        } else {
            per_device[i].2 += 1;
        }
    }
    per_device
}

fn reach_text(r: &super::ReachDelta, p: &Palette, verbose: bool, out: &mut String) {
    let mut line = format!("  reachability: {} of {} host/pod pairs answer", r.reachable, r.pairs);
    if r.broke.is_empty() && r.healed.is_empty() {
        line.push_str(", no pair changed");
    } else {
        line.push_str(&format!("; {} broke, {} healed", r.broke.len(), r.healed.len()));
    }
    out.push_str(&line);
    out.push('\n');
    let listed = if verbose { usize::MAX } else { LISTED_PAIRS };
    pair_lines("no answer", &r.unreachable, listed, verbose, out);
    pair_lines(&p.fail.paint("broke "), &r.broke, listed, verbose, out);
    let healed_room = listed.saturating_sub(r.broke.len());
    pair_lines(&p.ok.paint("healed"), &r.healed, healed_room, verbose, out);
    for e in &r.appeared {
        out.push_str(&format!("    new endpoint {e}\n"));
    }
    for e in &r.gone {
        out.push_str(&format!("    endpoint gone {e}\n"));
    }
}

/// Up to `listed` pairs, one line each, and how many more there are; pairs that do not answer
/// also get their decision chain (all of them with `verbose`, else the first few).
fn pair_lines(label: &str, pairs: &[super::PairChange], listed: usize, verbose: bool, out: &mut String) {
    for (i, c) in pairs.iter().enumerate().take(listed) {
        out.push_str(&format!(
            "    {label} {} -> {} ({}): {}\n",
            c.from, c.to, c.addr, c.result
        ));
        if verbose || i < EXPLAINED_PAIRS {
            for h in &c.why {
                out.push_str(&format!("             {h}\n"));
            }
        }
    }
    if pairs.len() > listed {
        let more = pairs.len() - listed;
        out.push_str(&format!("    {label} … and {more} more (--verbose lists them all)\n"));
    }
}
