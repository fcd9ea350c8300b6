//! `fabsim explain FILE [--step ID] FROM TO`: one echo request's decision chain, from the same
//! walk `ping` and `traceroute` use.

use super::{device, target, Failure};
use crate::dataplane::{probe, ProbeKind, ProbeOutcome};
use crate::scenario::{explain_probe, Run};

pub(super) fn explain(
    run: &Run,
    from: &str,
    to: &str,
    kind: ProbeKind,
    step: Option<&str>,
    out: &mut String,
) -> Result<i32, Failure> {
    let (net, st) = (run.engine.network(), run.engine.state());
    let src = device(net, from)?;
    let dst = target(run, to)?;
    let p = probe(net, st, src, dst, net.device(src).profile.ttl, kind, 1);
    let source = p.src.map_or(String::new(), |a| format!(" from {a}"));
    let when = step.map_or(String::new(), |s| format!(", after step {s}"));
    let what = match kind {
        ProbeKind::Echo => "ICMP echo request".to_string(),
        ProbeKind::Tcp { dst_port } => format!("TCP SYN to port {dst_port}"),
        ProbeKind::Udp { dst_port } => format!("UDP to port {dst_port}"),
    };
    out.push_str(&format!("{from} → {to} ({dst}): {what}{source}{when}\n"));
    let why = explain_probe(net, st, &p, dst);
    for line in &why.hops {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!("  result: {}\n", why.result));
    Ok(match p.outcome {
        ProbeOutcome::Reply { .. } => 0,
        _ => 1,
    })
}
