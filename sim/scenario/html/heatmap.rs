//! The reachability matrix of one step as a heat map (SVG): rows send, columns answer. Only
//! cells where some pair fails get a shape of their own (on a green background), so a healthy
//! fabric of any size is a handful of elements.

use std::fmt::Write;

use super::esc;
use crate::scenario::{GridBy, ReachGrid};

const LABEL_W: f64 = 190.0;

pub fn svg(grid: &ReachGrid) -> String {
    let k = grid.labels.len();
    let cell = if k <= 24 { 18.0 } else { (600.0 / k as f64).max(3.0) };
    let side = cell * k as f64;
    let (w, h) = (LABEL_W + side + 10.0, LABEL_W + side + 10.0);
    let mut s = String::new();
    let what = match grid.by {
        GridBy::Endpoint => "endpoint",
        GridBy::Rack => "rack",
    };
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" data-by="{what}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="10"><rect class="all" x="{LABEL_W}" y="{LABEL_W}" width="{side}" height="{side}" fill="#66bb6a"><title>every pair answers unless marked</title></rect>"##
    );
    // Labels: every one in a small grid, every nth beyond so they stay legible.
    let every = (k / 48).max(1);
    for (i, l) in grid.labels.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let c = LABEL_W + cell * (i as f64 + 0.5);
        let _ = write!(
            s,
            r#"<text x="{x}" y="{c:.1}" text-anchor="end" dominant-baseline="middle">{l}</text><text transform="translate({c:.1} {y}) rotate(-60)" text-anchor="start">{l}</text>"#,
            x = LABEL_W - 4.0,
            y = LABEL_W - 4.0,
            l = esc(l)
        );
    }
    for i in 0..k {
        for j in 0..k {
            let (ok, n) = (grid.answered[i][j], grid.pairs[i][j]);
            let (fill, verdict) = if n == 0 {
                ("#e0e0e0", "no pair".to_string())
            } else if ok == n {
                continue;
            } else if ok == 0 {
                ("#c62828", format!("none of {n} pairs answer"))
            } else {
                ("#ffa726", format!("{ok} of {n} pairs answer"))
            };
            let _ = write!(
                s,
                r#"<rect class="cell" x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="{fill}"><title>{from} → {to}: {verdict}</title></rect>"#,
                x = LABEL_W + cell * j as f64,
                y = LABEL_W + cell * i as f64,
                from = esc(&grid.labels[i]),
                to = esc(&grid.labels[j])
            );
        }
    }
    s.push_str("</svg>");
    s
}
