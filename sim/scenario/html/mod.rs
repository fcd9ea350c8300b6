//! `fabsim run --html FILE`: the run report as one self-contained HTML page — inline CSS, SVG
//! and a small script, nothing fetched. It renders the same [`RunReport`] the JSON document
//! serialises; nothing is computed again here.
//!
//! The page: a step timeline with each step's impact, then one section per step with the fabric
//! drawing in the step's condition ([`drawing`]), the sessions, routes, findings and checks, the
//! watched pings on the step's time axis ([`outages`]), the reachability matrix as a heat map
//! ([`heatmap`]) and every broken pair with its hop-by-hop chain. Sizes stay bounded by racks:
//! the drawing and the heat map aggregate per rack in large fabrics, and lists are capped (the
//! JSON report has everything).
//!
//! Plain string building: the page is a few fixed fragments, and the drawing must also come out
//! as a standalone SVG and as DOT, which a template engine would not share.

pub mod drawing;
mod heatmap;
mod outages;

use std::fmt::Write;

use super::report::RunReport;
use super::run::{fmt_ms, StepReport};
use super::PairChange;

/// Broken (or, at the start, unanswered) pairs shown with their chain per step; the JSON report
/// lists them all.
const EXPLAINED_PAIRS: usize = 40;
/// Healed pairs listed per step.
const LISTED_HEALED: usize = 40;
/// Devices named in a step's route summary.
const ROUTE_DEVICES: usize = 20;

/// Text made safe for HTML/SVG content and attribute values.
pub fn esc(text: &str) -> std::borrow::Cow<'_, str> {
    quick_xml::escape::escape(text)
}

/// The whole page.
pub fn page(report: &RunReport) -> String {
    let mut s = String::new();
    let title = format!("fabsim: {} on {}", report.scenario, report.topology);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style><script>{ON_ERROR}</script></head><body>",
        t = esc(&title)
    );
    let sum = &report.summary;
    let verdict = if sum.failed > 0 { "failed" } else { "passed" };
    let until = report.until.map(|u| format!(", until step {u}")).unwrap_or_default();
    let _ = write!(
        s,
        r#"<header><h1>{t}</h1><p>{file} — seed {seed}{until}, {steps} steps, {vt} of virtual time</p><p class="summary {verdict}">{p} of {e} expectations held, {f} failed</p><ul id="js-errors" hidden></ul></header><nav id="stepnav"></nav>"#,
        t = esc(&title),
        file = esc(report.file),
        seed = report.seed,
        until = esc(&until),
        steps = report.steps.len(),
        vt = fmt_ms(report.virtual_ms()),
        p = sum.passed,
        e = sum.expectations,
        f = sum.failed
    );
    let steps: Vec<&StepReport> = report.all_steps().collect();
    timeline(&steps, &mut s);
    for (i, step) in steps.iter().enumerate() {
        let end_ms = steps
            .get(i + 1)
            .map_or(step.settled_ms.max(step.start_ms), |n| n.start_ms);
        step_section(report, step, end_ms, &mut s);
    }
    let _ = writeln!(s, "<script>{SCRIPT}</script></body></html>");
    s
}

/// One row per step: when, what changed, and what it did.
fn timeline(steps: &[&StepReport], s: &mut String) {
    s.push_str(r#"<section id="timeline"><h2>Timeline</h2><table><thead><tr><th>step</th><th>t</th><th>change</th><th>sessions</th><th>routes</th><th>pairs broke</th><th>healed</th><th>outages</th><th>findings</th><th>checks</th></tr></thead><tbody>"#);
    for st in steps {
        let (broke, healed) = st.reach.as_ref().map_or((0, 0), |r| (r.broke.len(), r.healed.len()));
        let outages: usize = st.flows.iter().map(|f| f.outages.len()).sum();
        let failed = st.failed();
        let class = if failed > 0 { " class=\"failed\"" } else { "" };
        let _ = write!(
            s,
            r##"<tr{class}><td><a href="#step-{id}">{id}</a></td><td>{t}</td><td>{change}</td><td>{peers}</td><td>{routes}</td><td class="{bc}">{broke}</td><td>{healed}</td><td class="{oc}">{outages}</td><td>{findings}</td><td>{ok}/{n}</td></tr>"##,
            id = esc(&st.id),
            t = fmt_ms(st.start_ms),
            change = esc(&st.change),
            peers = st.peers.len(),
            routes = st.route_changes.len(),
            bc = if broke > 0 { "bad" } else { "" },
            oc = if outages > 0 { "bad" } else { "" },
            findings = st.findings.len(),
            ok = st.checks.len() - failed,
            n = st.checks.len()
        );
    }
    s.push_str("</tbody></table></section>");
}

fn step_section(report: &RunReport, st: &StepReport, end_ms: u64, s: &mut String) {
    let failed = if st.failed() > 0 { " failed" } else { "" };
    let name = st.name.as_deref().map(|n| format!(" — {n}")).unwrap_or_default();
    let _ = write!(
        s,
        r#"<section class="step{failed}" id="step-{id}" data-step="{id}"><h2>[{id}]{name}</h2><p class="change">{change}</p><p>at t={t}, {settle}{quiet}</p>"#,
        id = esc(&st.id),
        name = esc(&name),
        change = esc(&st.change),
        t = fmt_ms(st.start_ms),
        settle = if st.route_changes.is_empty() {
            "no route changed".to_string()
        } else {
            format!(
                "routes settled after {}",
                fmt_ms(st.settled_ms.saturating_sub(st.start_ms))
            )
        },
        quiet = if st.quiet {
            ""
        } else {
            " (not quiet: still changing at the run limit)"
        }
    );
    let scene = drawing::Scene::of(report.fabric, &st.fabric);
    let _ = write!(
        s,
        r#"<div class="drawing">{}</div>"#,
        scene.svg(&drawing::title(&st.id))
    );
    list(
        s,
        "findings",
        "Findings",
        st.findings.iter().map(|f| esc(f).into_owned()),
    );
    list(
        s,
        "warnings",
        "Warnings",
        st.warnings.iter().map(|w| esc(&w.to_string()).into_owned()),
    );
    list(
        s,
        "peers",
        "Sessions and adjacencies that changed",
        st.peers.iter().map(|c| {
            let reason = c.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
            esc(&format!("{}: {} {} → {}{reason}", c.device, c.peer, c.before, c.after)).into_owned()
        }),
    );
    routes(&st.route_changes, s);
    if !st.flows.is_empty() {
        let _ = write!(
            s,
            r#"<div class="flows"><h3>Watched pings</h3>{}"#,
            outages::svg(&st.flows, st.start_ms, end_ms)
        );
        for f in &st.flows {
            let verdict = if f.outages.is_empty() {
                "no probe lost".to_string()
            } else {
                f.outages
                    .iter()
                    .map(|o| crate::scenario::describe_outage(o, f.interval_ms))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            let _ = write!(
                s,
                r#"<p class="flow-verdict">ping {} → {}: {}</p>"#,
                esc(&f.from),
                esc(&f.to),
                esc(&verdict)
            );
        }
        s.push_str("</div>");
    }
    reach(st, s);
    checks(st, s);
    if !st.commands.is_empty() {
        s.push_str("<details class=\"commands\"><summary>Runbook commands and their output</summary><pre>");
        for c in &st.commands {
            let _ = writeln!(s, "{}$ {}", esc(&c.device), esc(&c.command));
            s.push_str(&esc(&c.output));
        }
        s.push_str("</pre></details>");
    }
    s.push_str("</section>");
}

/// A titled list, left out when empty.
fn list(s: &mut String, class: &str, title: &str, items: impl Iterator<Item = String>) {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return;
    }
    let _ = write!(s, r#"<div class="{class}"><h3>{title}</h3><ul>"#);
    for i in items {
        let _ = write!(s, "<li>{i}</li>");
    }
    s.push_str("</ul></div>");
}

/// Per device, how many routes came and went.
fn routes(changes: &[String], s: &mut String) {
    let per_device = super::report::routes_per_device(changes);
    let _ = write!(s, r#"<div class="routes"><h3>Routes: {} changes</h3>"#, changes.len());
    if !per_device.is_empty() {
        s.push_str("<ul>");
        for (dev, gone, new) in per_device.iter().take(ROUTE_DEVICES) {
            let _ = write!(s, "<li>{}: {new} added, {gone} withdrawn</li>", esc(dev));
        }
        if per_device.len() > ROUTE_DEVICES {
            let _ = write!(s, "<li>… and {} more devices</li>", per_device.len() - ROUTE_DEVICES);
        }
        s.push_str("</ul>");
    }
    s.push_str("</div>");
}

fn reach(st: &StepReport, s: &mut String) {
    s.push_str(r#"<div class="reach"><h3>Reachability</h3>"#);
    let Some(r) = &st.reach else {
        s.push_str("<p>not computed for this step (see the findings)</p></div>");
        return;
    };
    let _ = write!(
        s,
        "<p>{} of {} host/pod pairs answer; {} broke, {} healed</p>",
        r.reachable,
        r.pairs,
        r.broke.len(),
        r.healed.len()
    );
    if let Some(g) = &r.grid {
        s.push_str(r#"<div class="heatmap-wrap">"#);
        s.push_str(&heatmap::svg(g));
        s.push_str("</div>");
    }
    explained(s, "unanswered", "Pairs that do not answer", &r.unreachable);
    explained(s, "broke", "Broken by this step", &r.broke);
    if !r.healed.is_empty() {
        s.push_str(r#"<h4>Healed by this step</h4><ul class="healed">"#);
        for p in r.healed.iter().take(LISTED_HEALED) {
            let _ = write!(s, "<li>{}</li>", pair_line(p));
        }
        if r.healed.len() > LISTED_HEALED {
            let _ = write!(s, "<li>… and {} more</li>", r.healed.len() - LISTED_HEALED);
        }
        s.push_str("</ul>");
    }
    for e in &r.appeared {
        let _ = write!(s, "<p class=\"endpoint\">new endpoint {}</p>", esc(e));
    }
    for e in &r.gone {
        let _ = write!(s, "<p class=\"endpoint\">endpoint gone {}</p>", esc(e));
    }
    s.push_str("</div>");
}

fn pair_line(p: &PairChange) -> String {
    esc(&format!("{} → {} ({}): {}", p.from, p.to, p.addr, p.result)).into_owned()
}

/// Pairs that do not answer, each with its hop-by-hop chain.
fn explained(s: &mut String, class: &str, title: &str, pairs: &[PairChange]) {
    if pairs.is_empty() {
        return;
    }
    let _ = write!(s, r#"<h4>{title}</h4><div class="{class}">"#);
    for p in pairs.iter().take(EXPLAINED_PAIRS) {
        let _ = write!(s, r#"<div class="pair"><p>{}</p><ol class="why">"#, pair_line(p));
        for hop in &p.why {
            // The chain's own numbering ("1. k-w2: …") is the list's.
            let text = hop
                .split_once(". ")
                .filter(|(n, _)| n.parse::<u32>().is_ok())
                .map_or(hop.as_str(), |(_, t)| t);
            let _ = write!(s, "<li>{}</li>", esc(text));
        }
        s.push_str("</ol></div>");
    }
    if pairs.len() > EXPLAINED_PAIRS {
        let _ = write!(
            s,
            "<p>… and {} more; `fabsim run --format json` lists every one with its chain</p>",
            pairs.len() - EXPLAINED_PAIRS
        );
    }
    s.push_str("</div>");
}

fn checks(st: &StepReport, s: &mut String) {
    if st.checks.is_empty() {
        return;
    }
    s.push_str(r#"<div class="checks"><h3>Expectations</h3><ul>"#);
    for c in &st.checks {
        let when = super::checks::serde_name(c.when);
        let (class, word) = if c.ok { ("ok", "ok") } else { ("fail", "FAIL") };
        let _ = write!(
            s,
            r#"<li class="{class}"><b>{word}</b> {when}: {what}"#,
            what = esc(&c.what)
        );
        if !c.ok {
            let _ = write!(s, "<pre>at {}\n{}</pre>", esc(&c.span.to_string()), esc(&c.detail));
        }
        s.push_str("</li>");
    }
    s.push_str("</ul></div>");
}

const CSS: &str = "body{font-family:sans-serif;margin:16px;color:#212121;background:#fff}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:8px 0}h3{font-size:15px;margin:10px 0 4px}h4{font-size:13px;margin:8px 0 4px}\
.summary.passed{color:#2e7d32;font-weight:bold}.summary.failed{color:#c62828;font-weight:bold}\
#js-errors{color:#c62828}\
nav#stepnav{position:sticky;top:0;background:#fafafa;padding:6px;border-bottom:1px solid #ccc;z-index:1}\
nav#stepnav button{margin:2px;padding:2px 6px;border:1px solid #90a4ae;background:#fff;border-radius:3px;cursor:pointer}\
nav#stepnav button.on{background:#1565c0;color:#fff}nav#stepnav button.failed{border-color:#c62828}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #cfd8dc;padding:2px 6px;text-align:left}\
tr.failed td{background:#ffebee}td.bad{background:#ffcdd2;font-weight:bold}\
section.step{border-top:2px solid #90a4ae;margin-top:18px;padding-top:6px}section.step.failed h2{color:#c62828}\
.drawing,.heatmap-wrap{overflow:auto;max-width:100%}\
.findings li{color:#e65100}.checks li.fail{color:#c62828}.checks li.ok b{color:#2e7d32}\
.pair p{margin:4px 0;font-weight:bold;color:#c62828}ol.why{margin:0 0 6px;font-family:monospace;font-size:12px}\
pre{background:#f5f5f5;padding:6px;font-size:12px;overflow:auto}";

/// Records script errors on the page itself, so a headless browser's DOM dump shows them.
const ON_ERROR: &str = "window.onerror=function(m,src,line,col){var u=document.getElementById('js-errors');\
if(!u){return false;}var li=document.createElement('li');li.textContent='script error: '+m+' at '+line+':'+col;\
u.appendChild(li);u.hidden=false;return false;};";

/// The step navigator: one button per step shows that step alone, `all steps` every one. When
/// it has run, it leaves a `fabsim-ready` marker.
const SCRIPT: &str = "(function(){var steps=Array.prototype.slice.call(document.querySelectorAll('section.step'));\
var nav=document.getElementById('stepnav');\
function add(id,label,failed){var b=document.createElement('button');b.textContent=label;b.setAttribute('data-step',id);\
if(failed){b.className='failed';}nav.appendChild(b);}\
function show(id){steps.forEach(function(s){s.hidden=id!=='all'&&s.getAttribute('data-step')!==id;});\
Array.prototype.forEach.call(nav.querySelectorAll('button'),function(b){b.classList.toggle('on',b.getAttribute('data-step')===id);});}\
add('all','all steps',false);steps.forEach(function(s){add(s.getAttribute('data-step'),s.getAttribute('data-step'),s.classList.contains('failed'));});\
nav.addEventListener('click',function(e){var id=e.target.getAttribute&&e.target.getAttribute('data-step');if(id){show(id);}});\
show('all');var ok=document.createElement('div');ok.id='fabsim-ready';ok.setAttribute('data-steps',String(steps.length));ok.hidden=true;\
document.body.appendChild(ok);})();";
