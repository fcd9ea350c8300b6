//! `fabsim plan` output: a labelled block per pool, the carving and the verdict as text, or the
//! same plan as JSON (`schema` versions the JSON layout).

use std::fmt::Write;

use serde::Serialize;

use super::budget::{Block, PoolPlan, Status};
use super::node_cidr::NodeCidrPlan;
use super::pools::ClusterPlan;

/// Version of the `plan pods` / `plan node-cidr` JSON layout.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// Tenths of a percent as `48.9%`.
pub fn pct(permille: u64) -> String {
    if permille == u64::MAX {
        return "n/a (no usable addresses)".into();
    }
    format!("{}.{}%", permille / 10, permille % 10)
}

fn block(b: &Block, reserved: u32) -> String {
    format!("{} addresses, {} usable ({reserved} reserved)", b.addresses, b.usable)
}

fn status(s: &Status) -> String {
    let mut t = format!(
        "{}: {} of {} usable ({}, {})",
        s.level,
        s.used,
        s.usable,
        pct(s.permille),
        s.basis
    );
    if s.autoscaler_guard {
        t.push_str("; autoscaler guard (80%): lower the pool's max nodes or hand scaling to a human");
    }
    t
}

/// One labelled line; continuation lines align under the value.
fn line(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "  {label:<12}{value}");
}

fn pool_text(p: &PoolPlan, out: &mut String) {
    let _ = writeln!(out, "pool {}", p.name);
    if let (Some(d), Some(eff), Some(n)) = (&p.demand, p.effective_max_pods, p.nodes) {
        line(
            out,
            "demand",
            &format!(
                "maxPods {eff} × {n} nodes = {} pod IPs; +{}% buffer → need {}",
                d.raw, p.buffer_pct, d.need
            ),
        );
        let zones = if p.zones > 1 {
            format!(" — one per zone, {} subnets", p.zones)
        } else {
            String::new()
        };
        line(
            out,
            "recommended",
            &format!(
                "/{}: {}; headroom {}{zones}",
                d.recommended.prefix_len,
                block(&d.recommended, p.reserved),
                d.headroom
            ),
        );
        line(
            out,
            "utilisation",
            &format!("{} of the recommended subnet at max scale", pct(d.util_at_raw_permille)),
        );
    }
    if let Some(dd) = &p.dedicated {
        line(
            out,
            "dedicated",
            &format!(
                "{}% of the need = {} → /{} ({} usable); {} borrowed from the shared buffer at peak",
                dd.pct, dd.need, dd.block.prefix_len, dd.block.usable, dd.shared_need
            ),
        );
    }
    if let Some(s) = &p.subnet {
        let verdict = match (s.fits, &p.demand) {
            (Some(true), Some(d)) => format!(": fits the need of {}", d.need),
            (Some(false), Some(d)) => format!(": does NOT fit the need of {}", d.need),
            _ => String::new(),
        };
        line(
            out,
            "subnet",
            &format!("{}: {}{verdict}", s.subnet, block(&s.block, p.reserved)),
        );
        if let (Some(raw), Some(buf), Some(eff)) = (s.max_nodes_raw, s.max_nodes_buffered, p.effective_max_pods) {
            line(
                out,
                "",
                &format!(
                    "holds {raw} nodes at maxPods {eff}, {buf} with the {}% buffer",
                    p.buffer_pct
                ),
            );
        }
    }
    if let Some(o) = &p.occupancy {
        if let (Some(c), Some(n), Some(b)) = (o.consumption, p.nodes, p.evaluated_block()) {
            let short = match o.shortfall {
                Some(s) if s > 0 => format!("; short by {s}"),
                _ => String::new(),
            };
            line(
                out,
                "occupancy",
                &format!(
                    "{n} nodes × {} IPs = {c} of {} usable{short}; the subnet holds {} nodes at {} each",
                    o.per_node, b.usable, o.max_nodes, o.per_node
                ),
            );
        }
        line(
            out,
            "thresholds",
            &format!(
                "70% at {} nodes, 85% at {} nodes ({} IPs per node)",
                o.nodes_at_70_pct, o.nodes_at_85_pct, o.per_node
            ),
        );
    }
    if let Some(s) = &p.status {
        line(out, "status", &status(s));
    }
    if let Some(o) = &p.overlay {
        line(out, "node ranges", &node_ranges(o));
    }
    for w in &p.warnings {
        line(out, "warning", w);
    }
}

fn node_ranges(o: &NodeCidrPlan) -> String {
    let whose = if o.max_pods_is_default {
        "kubelet's default maxPods"
    } else {
        "kubelet maxPods"
    };
    format!(
        "{} cut in /{}: {} nodes, {} pod addresses each, {} pods per node ({whose} {})",
        o.cluster_cidr, o.node_mask, o.max_nodes, o.pod_ips_per_node, o.effective_pods_per_node, o.max_pods
    )
}

/// `plan pods` as text.
pub fn cluster_text(plan: &ClusterPlan) -> String {
    let mut out = String::new();
    for (i, p) in plan.pools.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        pool_text(p, &mut out);
    }
    if let Some(c) = &plan.carving {
        let _ = writeln!(out, "\ncarved from {} ({} addresses):", c.supernet, c.addresses);
        let w = c.pools.iter().map(|p| p.pool.len()).max().unwrap_or(0);
        for cp in &c.pools {
            let mut nets: Vec<String> = cp.subnets.iter().map(ToString::to_string).collect();
            if cp.missing > 0 {
                nets.push(format!("({} more do not fit)", cp.missing));
            }
            let _ = writeln!(out, "  {:<w$}  {}", cp.pool, nets.join(" "));
        }
        let _ = writeln!(
            out,
            "  used {} of {} addresses ({})",
            c.used,
            c.addresses,
            pct(super::budget::permille(c.used, c.addresses))
        );
    }
    let v = &plan.verdict;
    let head = if v.fits {
        "every pool fits"
    } else {
        "NOT every pool fits"
    };
    let worst = v
        .worst
        .as_ref()
        .map(|(l, n)| format!("; worst status {l} ({n})"))
        .unwrap_or_default();
    let need = if v.total_need > 0 {
        format!("; {} addresses needed in all", v.total_need)
    } else {
        String::new()
    };
    let _ = writeln!(out, "\nverdict: {head}{need}{worst}");
    for f in &v.findings {
        let _ = writeln!(out, "  {f}");
    }
    out
}

/// `plan node-cidr` as text.
pub fn node_cidr_text(o: &NodeCidrPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "cluster CIDR      {}", o.cluster_cidr);
    let _ = writeln!(out, "node mask         /{}", o.node_mask);
    let _ = writeln!(out, "max nodes         {}", o.max_nodes);
    let _ = writeln!(out, "pod IPs per node  {}", o.pod_ips_per_node);
    let default = if o.max_pods_is_default {
        " (kubelet default)"
    } else {
        ""
    };
    let _ = writeln!(out, "maxPods           {}{default}", o.max_pods);
    let _ = writeln!(out, "pods per node     {}", o.effective_pods_per_node);
    for w in &o.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

#[derive(Serialize)]
struct Versioned<'a, T: Serialize> {
    schema: u32,
    #[serde(flatten)]
    plan: &'a T,
}

/// Either plan as JSON, with the layout's schema version.
pub fn json<T: Serialize>(plan: &T) -> String {
    let v = Versioned {
        schema: PLAN_SCHEMA_VERSION,
        plan,
    };
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
