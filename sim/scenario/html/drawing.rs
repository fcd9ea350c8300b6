//! The fabric drawing: one layout (a [`Scene`] of boxes and lines) rendered as SVG (the HTML
//! report, `fabsim topo --format svg`) or Graphviz DOT with the same positions
//! (`fabsim topo --format dot`).
//!
//! Up to [`DETAIL_DEVICES`] drawn devices, every device and cable is drawn, spines above leaves
//! above the hosts of each rack, and each BGP session is a dashed curve with its state and the
//! prefixes each end received. Beyond that (a generated 16×256×16 fabric has 4,368 devices)
//! each rack — a leaf and its hosts — is one box with its counts, so the drawing grows with
//! racks, never with hosts or sessions.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::esc;
use crate::scenario::fabric::{CableState, Fabric, FabricDevice, FabricState, Role};

/// Drawn devices up to which every device and cable has its own shape.
pub const DETAIL_DEVICES: usize = 64;
/// Boxes per row in the rack view.
const PER_ROW: usize = 16;

const COL: f64 = 120.0;
const ROW: f64 = 110.0;
const MARGIN: f64 = 30.0;
const BOX_W: f64 = 104.0;
const BOX_H: f64 = 36.0;
const RACK_W: f64 = 150.0;
const RACK_H: f64 = 66.0;

const GREEN: &str = "#2e7d32";
const RED: &str = "#c62828";
const ORANGE: &str = "#e65100";
const GREY: &str = "#9e9e9e";
const BLUE: &str = "#1565c0";

/// A device or rack drawn as a box.
pub struct Shape {
    /// Unique in the scene; the SVG element's `data-name` and the DOT node id.
    pub name: String,
    pub class: &'static str,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub lines: Vec<String>,
    pub fill: &'static str,
    pub stroke: &'static str,
    pub tooltip: String,
}

/// A cable or a session between two shapes.
pub struct Edge {
    pub from: String,
    pub to: String,
    pub class: &'static str,
    pub color: &'static str,
    pub dashed: bool,
    /// Sessions bend away from the cable they would otherwise hide.
    pub bend: f64,
    pub label: Option<String>,
    pub tooltip: String,
}

/// Everything a drawing shows, positioned.
pub struct Scene {
    pub width: f64,
    pub height: f64,
    pub shapes: Vec<Shape>,
    pub edges: Vec<Edge>,
}

impl Scene {
    /// The fabric in the condition `state` describes.
    pub fn of(fabric: &Fabric, state: &FabricState) -> Scene {
        if fabric.devices.len() <= DETAIL_DEVICES {
            detailed(fabric, state)
        } else {
            by_rack(fabric, state)
        }
    }

    pub fn svg(&self, title: &str) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="fabric" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="sans-serif" font-size="11"><title>{t}</title>"#,
            w = self.width,
            h = self.height,
            t = esc(title)
        );
        let at: BTreeMap<&str, &Shape> = self.shapes.iter().map(|b| (b.name.as_str(), b)).collect();
        for e in &self.edges {
            let (Some(a), Some(b)) = (at.get(e.from.as_str()), at.get(e.to.as_str())) else {
                continue;
            };
            let (x1, y1, x2, y2) = (a.x, a.y, b.x, b.y);
            // Control point: the midpoint pushed sideways by `bend`.
            let (dx, dy) = (x2 - x1, y2 - y1);
            let len = (dx * dx + dy * dy).sqrt().max(1.0);
            let (cx, cy) = ((x1 + x2) / 2.0 - dy / len * e.bend, (y1 + y2) / 2.0 + dx / len * e.bend);
            let dash = if e.dashed { r#" stroke-dasharray="5 3""# } else { "" };
            let _ = write!(
                s,
                r#"<g class="{c}"><title>{t}</title><path d="M{x1:.1} {y1:.1} Q{cx:.1} {cy:.1} {x2:.1} {y2:.1}" fill="none" stroke="{col}" stroke-width="2"{dash}/>"#,
                c = e.class,
                t = esc(&e.tooltip),
                col = e.color
            );
            if let Some(l) = &e.label {
                // The curve's midpoint (t = 1/2 of the quadratic Bézier).
                let (mx, my) = ((x1 + 2.0 * cx + x2) / 4.0, (y1 + 2.0 * cy + y2) / 4.0);
                let _ = write!(
                    s,
                    r##"<text x="{mx:.1}" y="{my:.1}" text-anchor="middle" fill="{col}" stroke="#fff" stroke-width="3" paint-order="stroke">{l}</text>"##,
                    col = e.color,
                    l = esc(l)
                );
            }
            s.push_str("</g>");
        }
        for b in &self.shapes {
            let _ = write!(
                s,
                r#"<g class="{c}" data-name="{n}"><title>{t}</title><rect x="{x:.1}" y="{y:.1}" width="{w}" height="{h}" rx="4" fill="{f}" stroke="{st}" stroke-width="1.5"/>"#,
                c = b.class,
                n = esc(&b.name),
                t = esc(&b.tooltip),
                x = b.x - b.w / 2.0,
                y = b.y - b.h / 2.0,
                w = b.w,
                h = b.h,
                f = b.fill,
                st = b.stroke
            );
            let top = b.y - (b.lines.len() as f64 - 1.0) * 6.5 + 4.0;
            for (i, l) in b.lines.iter().enumerate() {
                let weight = if i == 0 { r#" font-weight="bold""# } else { "" };
                let _ = write!(
                    s,
                    r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle"{weight}>{l}</text>"#,
                    x = b.x,
                    y = top + i as f64 * 13.0,
                    l = esc(l)
                );
            }
            s.push_str("</g>");
        }
        s.push_str("</svg>");
        s
    }

    /// Graphviz, positions pinned (`neato -n` keeps them); colours and labels as in the SVG.
    pub fn dot(&self, title: &str) -> String {
        let q = |t: &str| format!("\"{}\"", t.replace('\\', "\\\\").replace('"', "\\\""));
        let mut s = format!(
            "graph {} {{\n  node [shape=box, style=\"rounded,filled\", fontname=\"sans-serif\"];\n",
            q(title)
        );
        for b in &self.shapes {
            // DOT's y axis points up; points are 1/72 inch, as SVG pixels are taken here.
            let _ = writeln!(
                s,
                "  {} [label={}, pos=\"{:.1},{:.1}!\", fillcolor=\"{}\", color=\"{}\", tooltip={}];",
                q(&b.name),
                q(&b.lines.join("\n")),
                b.x,
                self.height - b.y,
                b.fill,
                b.stroke,
                q(&b.tooltip)
            );
        }
        for e in &self.edges {
            let label = e
                .label
                .as_deref()
                .map(|l| format!(", label={}", q(l)))
                .unwrap_or_default();
            let style = if e.dashed { ", style=dashed" } else { "" };
            let _ = writeln!(
                s,
                "  {} -- {} [color=\"{}\"{style}{label}, tooltip={}];",
                q(&e.from),
                q(&e.to),
                e.color,
                q(&e.tooltip)
            );
        }
        s.push_str("}\n");
        s
    }
}

/// The drawing's title, the same in the report and from `fabsim topo`.
pub fn title(step: &str) -> String {
    format!("the fabric after step {step}")
}

fn fill(role: Role) -> &'static str {
    match role {
        Role::External | Role::Segment => "#eceff1",
        Role::Spine => "#e3f2fd",
        Role::Leaf => "#e8f5e9",
        Role::Node => "#fff8e1",
        Role::Host => "#f3e5f5",
    }
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::External => "external",
        Role::Segment => "segment",
        Role::Spine => "spine",
        Role::Leaf => "leaf",
        Role::Node => "node",
        Role::Host => "host",
    }
}

fn cable_look(state: Option<CableState>) -> (&'static str, bool, &'static str) {
    match state {
        None => (GREEN, false, "up"),
        Some(CableState::NoCarrier) => (RED, false, "no carrier"),
        Some(CableState::Down) => (GREY, true, "down"),
        Some(CableState::Off) => (GREY, true, "device off"),
    }
}

/// Every device and cable, and each BGP session between two drawn devices.
fn detailed(fabric: &Fabric, state: &FabricState) -> Scene {
    let in_role = |r: Role| fabric.devices.iter().filter(move |d| d.role == r);
    let leaves: Vec<&FabricDevice> = in_role(Role::Leaf).collect();
    // Hosts rack by rack, then the hosts no leaf is cabled to.
    let mut hosts: Vec<&FabricDevice> = Vec::new();
    let mut pos: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    let mut col = 0usize;
    let rows: Vec<Vec<Role>> = vec![
        vec![Role::External, Role::Segment],
        vec![Role::Spine],
        vec![Role::Leaf],
        vec![Role::Node, Role::Host],
    ];
    let occupied: Vec<bool> = rows
        .iter()
        .map(|r| fabric.devices.iter().any(|d| r.contains(&d.role)))
        .collect();
    let y_of = |row: usize| MARGIN + BOX_H / 2.0 + ROW * occupied[..row].iter().filter(|o| **o).count() as f64;
    let x_of = |c: f64| MARGIN + COL / 2.0 + COL * c;
    for leaf in &leaves {
        let rack: Vec<&FabricDevice> = fabric
            .devices
            .iter()
            .filter(|d| d.rack.as_deref() == Some(leaf.name.as_str()))
            .collect();
        let first = col;
        for h in &rack {
            pos.insert(&h.name, (x_of(col as f64), y_of(3)));
            col += 1;
        }
        let centre = if rack.is_empty() {
            col += 1;
            first as f64
        } else {
            (first + col - 1) as f64 / 2.0
        };
        pos.insert(&leaf.name, (x_of(centre), y_of(2)));
        hosts.extend(rack);
    }
    for h in fabric
        .devices
        .iter()
        .filter(|d| matches!(d.role, Role::Node | Role::Host) && d.rack.is_none())
    {
        pos.insert(&h.name, (x_of(col as f64), y_of(3)));
        col += 1;
    }
    // Spines, and above them the external networks, spread evenly over the racks' width.
    let cols = col.max(in_role(Role::Spine).count()).max(1);
    for (row, roles) in [(1, &[Role::Spine][..]), (0, &[Role::External, Role::Segment][..])] {
        let devs: Vec<&FabricDevice> = fabric.devices.iter().filter(|d| roles.contains(&d.role)).collect();
        let n = devs.len().max(1) as f64;
        for (i, d) in devs.into_iter().enumerate() {
            let c = (i as f64 + 0.5) * cols as f64 / n - 0.5;
            pos.insert(&d.name, (x_of(c), y_of(row)));
        }
    }
    let shapes = fabric
        .devices
        .iter()
        .map(|d| {
            let (x, y) = pos.get(d.name.as_str()).copied().unwrap_or((MARGIN, MARGIN));
            let off = state.off.contains(&d.name);
            let mut lines = vec![d.name.clone()];
            if off {
                lines.push("(off)".into());
            }
            Shape {
                name: d.name.clone(),
                class: "device",
                x,
                y,
                w: BOX_W,
                h: BOX_H,
                lines,
                fill: if off { "#bdbdbd" } else { fill(d.role) },
                stroke: "#455a64",
                tooltip: format!(
                    "{} ({}){}",
                    d.name,
                    role_name(d.role),
                    if off { ", powered off" } else { "" }
                ),
            }
        })
        .collect();
    let down: BTreeMap<usize, (CableState, &str)> = state
        .cables_down
        .iter()
        .map(|c| (c.cable, (c.state, c.at.as_str())))
        .collect();
    let mut edges: Vec<Edge> = fabric
        .cables
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let d = down.get(&i);
            let (color, dashed, word) = cable_look(d.map(|d| d.0));
            let at = d.map(|d| format!(" at {}", d.1)).unwrap_or_default();
            Edge {
                from: c.a.device.clone(),
                to: c.b.device.clone(),
                class: "cable",
                color,
                dashed,
                bend: 0.0,
                label: None,
                tooltip: format!("{}: {word}{at}", c.label()),
            }
        })
        .collect();
    edges.extend(session_edges(state));
    let width = 2.0 * MARGIN + COL * cols as f64;
    let height = 2.0 * MARGIN + BOX_H + ROW * (occupied.iter().filter(|o| **o).count().max(1) - 1) as f64;
    Scene {
        width,
        height,
        shapes,
        edges,
    }
}

/// One dashed curve per pair of drawn devices with BGP sessions between them: blue when every
/// session end is Established (labelled with the prefixes each end received), orange otherwise
/// (labelled with the state).
fn session_edges(state: &FabricState) -> Vec<Edge> {
    let mut pairs: BTreeMap<(&str, &str), Vec<&crate::scenario::fabric::SessionEnd>> = BTreeMap::new();
    for s in &state.sessions {
        let Some(peer) = s.peer_device.as_deref().filter(|p| *p != s.device) else {
            continue;
        };
        let key = if s.device.as_str() < peer {
            (s.device.as_str(), peer)
        } else {
            (peer, s.device.as_str())
        };
        pairs.entry(key).or_default().push(s);
    }
    pairs
        .into_iter()
        .map(|((a, b), ends)| {
            let up = ends.iter().all(|e| e.state == "Established");
            let label = if up {
                let got = |dev: &str| -> u32 { ends.iter().filter(|e| e.device == dev).map(|e| e.received).sum() };
                format!("BGP {}/{}", got(a), got(b))
            } else {
                let worst = ends
                    .iter()
                    .find(|e| e.state != "Established")
                    .map_or("", |e| e.state.as_str());
                format!("BGP {worst}")
            };
            let tooltip = ends
                .iter()
                .map(|e| {
                    format!(
                        "{} {}: {}, {} received, {} accepted",
                        e.device, e.peer, e.state, e.received, e.accepted
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            Edge {
                from: a.to_string(),
                to: b.to_string(),
                class: if up { "session up" } else { "session down" },
                color: if up { BLUE } else { ORANGE },
                dashed: true,
                bend: 28.0,
                label: Some(label),
                tooltip,
            }
        })
        .collect()
}

/// Counts over a group of devices: cables up, devices on, sessions established, prefixes.
#[derive(Default)]
struct Tally {
    devices: usize,
    off: usize,
    cables: usize,
    cables_up: usize,
    sessions: usize,
    established: usize,
    received: u64,
}

impl Tally {
    fn of(fabric: &Fabric, state: &FabricState, members: &[&str]) -> Tally {
        let mut t = Tally {
            devices: members.len(),
            off: members.iter().filter(|m| state.off.iter().any(|o| o == *m)).count(),
            ..Tally::default()
        };
        let down: std::collections::BTreeSet<usize> = state.cables_down.iter().map(|c| c.cable).collect();
        for (i, c) in fabric.cables.iter().enumerate() {
            if members.contains(&c.a.device.as_str()) || members.contains(&c.b.device.as_str()) {
                t.cables += 1;
                t.cables_up += usize::from(!down.contains(&i));
            }
        }
        for s in state.sessions.iter().filter(|s| members.contains(&s.device.as_str())) {
            t.sessions += 1;
            t.established += usize::from(s.state == "Established");
            t.received += u64::from(s.received);
        }
        t
    }

    fn healthy(&self) -> bool {
        self.off == 0 && self.cables_up == self.cables && self.established == self.sessions
    }

    fn dead(&self) -> bool {
        self.off == self.devices || (self.cables > 0 && self.cables_up == 0)
    }

    fn stroke(&self) -> &'static str {
        if self.healthy() {
            GREEN
        } else if self.dead() {
            RED
        } else {
            ORANGE
        }
    }

    fn lines(&self) -> Vec<String> {
        let mut l = vec![format!("cables {}/{} up", self.cables_up, self.cables)];
        if self.sessions > 0 {
            l.push(format!(
                "BGP {}/{} · {} pfx",
                self.established, self.sessions, self.received
            ));
        }
        l
    }
}

/// The rack view: spines, external networks and unracked hosts as boxes on top, then one box per
/// rack, PER_ROW to a row; every box carries its counts and is coloured by its worst trouble.
fn by_rack(fabric: &Fabric, state: &FabricState) -> Scene {
    let mut shapes = Vec::new();
    let singles: Vec<&FabricDevice> = fabric
        .devices
        .iter()
        .filter(|d| !matches!(d.role, Role::Leaf) && d.rack.is_none())
        .collect();
    let mut y = MARGIN + RACK_H / 2.0;
    let place = |i: usize, y: f64| {
        (
            MARGIN + RACK_W / 2.0 + (RACK_W + 10.0) * (i % PER_ROW) as f64,
            y + (RACK_H + 14.0) * (i / PER_ROW) as f64,
        )
    };
    for (i, d) in singles.iter().enumerate() {
        let t = Tally::of(fabric, state, &[d.name.as_str()]);
        let (x, yy) = place(i, y);
        let mut lines = vec![d.name.clone()];
        lines.extend(t.lines());
        shapes.push(Shape {
            name: d.name.clone(),
            class: "device",
            x,
            y: yy,
            w: RACK_W,
            h: RACK_H,
            lines,
            fill: if t.off > 0 { "#bdbdbd" } else { fill(d.role) },
            stroke: t.stroke(),
            tooltip: format!("{} ({})", d.name, role_name(d.role)),
        });
    }
    y += (RACK_H + 14.0) * singles.len().div_ceil(PER_ROW) as f64 + 20.0;
    let leaves: Vec<&FabricDevice> = fabric.devices.iter().filter(|d| d.role == Role::Leaf).collect();
    for (i, leaf) in leaves.iter().enumerate() {
        let mut members = vec![leaf.name.as_str()];
        members.extend(
            fabric
                .devices
                .iter()
                .filter(|d| d.rack.as_deref() == Some(leaf.name.as_str()))
                .map(|d| d.name.as_str()),
        );
        let t = Tally::of(fabric, state, &members);
        let (x, yy) = place(i, y);
        let hosts = members.len() - 1;
        let mut lines = vec![format!("rack {}", leaf.name)];
        lines.push(if t.off > 0 {
            format!("{hosts} hosts, {} off", t.off)
        } else {
            format!("{hosts} hosts")
        });
        lines.extend(t.lines());
        shapes.push(Shape {
            name: leaf.name.clone(),
            class: "rack",
            x,
            y: yy,
            w: RACK_W,
            h: RACK_H,
            lines,
            fill: fill(Role::Leaf),
            stroke: t.stroke(),
            tooltip: format!("rack {}: the leaf and the {hosts} hosts cabled to it", leaf.name),
        });
    }
    let rows = leaves.len().div_ceil(PER_ROW).max(1) as f64;
    let cols = PER_ROW.min(leaves.len().max(singles.len())).max(1) as f64;
    Scene {
        width: 2.0 * MARGIN + (RACK_W + 10.0) * cols,
        height: y + (RACK_H + 14.0) * rows + MARGIN,
        shapes,
        edges: Vec::new(),
    }
}
