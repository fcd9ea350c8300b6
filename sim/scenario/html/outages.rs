//! The pings a step watched, on the step's time axis: one row per flow, the watched span grey,
//! each outage a red bar from its first lost probe to the first answer after it.

use std::fmt::Write;

use super::esc;
use crate::scenario::{fmt_ms, FlowReport};

const LABEL_W: f64 = 260.0;
const AXIS_W: f64 = 640.0;
const ROW_H: f64 = 22.0;

/// `start_ms..end_ms` is the step's span of virtual time.
pub fn svg(flows: &[FlowReport], start_ms: u64, end_ms: u64) -> String {
    let end_ms = flows
        .iter()
        .flat_map(|f| {
            f.outages
                .iter()
                .map(|o| o.until_ms.unwrap_or(o.from_ms + f.interval_ms))
        })
        .fold(end_ms.max(start_ms + 1), u64::max);
    let span = (end_ms - start_ms) as f64;
    let x = |ms: u64| LABEL_W + AXIS_W * (ms.saturating_sub(start_ms)) as f64 / span;
    let h = ROW_H * flows.len() as f64 + 30.0;
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="outages" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="11">"#,
        w = LABEL_W + AXIS_W + 20.0
    );
    for (i, f) in flows.iter().enumerate() {
        let y = ROW_H * i as f64;
        let _ = write!(
            s,
            r##"<g class="flow"><text x="{lx}" y="{ty:.1}" text-anchor="end">{from} → {to}</text><rect x="{LABEL_W}" y="{ry:.1}" width="{AXIS_W}" height="10" fill="#c8e6c9"/>"##,
            lx = LABEL_W - 6.0,
            ty = y + 14.0,
            ry = y + 5.0,
            from = esc(&f.from),
            to = esc(&f.to)
        );
        for o in &f.outages {
            let until = o.until_ms.unwrap_or(end_ms);
            let _ = write!(
                s,
                r##"<rect class="outage" data-from-ms="{from}" data-until-ms="{until}" x="{x0:.1}" y="{ry:.1}" width="{w:.1}" height="10" fill="#c62828"><title>{what}</title></rect>"##,
                from = o.from_ms,
                x0 = x(o.from_ms),
                ry = y + 5.0,
                w = (x(until) - x(o.from_ms)).max(2.0),
                what = esc(&crate::scenario::describe_outage(o, f.interval_ms))
            );
        }
        s.push_str("</g>");
    }
    // The axis: the step's start and end, in virtual time since power-on.
    let ay = ROW_H * flows.len() as f64 + 4.0;
    let _ = write!(
        s,
        r##"<line x1="{LABEL_W}" y1="{ay}" x2="{x2}" y2="{ay}" stroke="#455a64"/><text x="{LABEL_W}" y="{ty}">t={a}</text><text x="{x2}" y="{ty}" text-anchor="end">t={b}</text></svg>"##,
        x2 = LABEL_W + AXIS_W,
        ty = ay + 16.0,
        a = fmt_ms(start_ms),
        b = fmt_ms(end_ms)
    );
    s
}
