//! Virtual time inside a step. While the network converges, two other things happen at their
//! own times: the cluster's controllers act (a DaemonSet rollout replaces one pod, kubelet
//! probes it ten seconds later, …), and the pings the step watches (`expect: during:`) send a
//! probe every interval, like an engineer's `ping` left running in another terminal. This
//! module interleaves the three without changing what the network converges to: the engine
//! runs to the next due time, the due work is done, and so on.

use std::net::Ipv4Addr;

use serde::Serialize;

use super::file::{FlowCheck, FlowExpectation};
use super::tap::Tap;
use crate::dataplane::{probe, Probe, ProbeKind, ProbeOutcome};
use crate::diag::{Diagnostic, InputError, Span};
use crate::engine::{Convergence, Engine};
use crate::k8s;
use crate::model::DeviceId;
use crate::views::linux::{ping_text, PingStyle};
use crate::views::tcpdump::PingCapture;

/// ICMP data bytes of a watched ping's requests: a plain `ping TO` on a Linux host.
const WATCH_DATA_BYTES: u32 = 56;

/// Virtual time a step may take before fabsim stops waiting for a controller (a rollout whose
/// new pod never becomes Ready would otherwise wait forever, as `kubectl rollout status` does).
const MAX_STEP_MS: u64 = 3_600_000;

/// The flows a step watches, each pinged once per interval.
pub(super) struct Watch {
    flows: Vec<Flow>,
    interval_ms: u64,
    next_ms: u64,
    limit_ms: u64,
    /// What went wrong with time itself (a rollout that never finished).
    pub findings: Vec<String>,
    /// Each probe as the run's tapped interfaces saw it, rendered when it was sent (through
    /// the network as it was then); empty without taps.
    pub tap: Tap,
}

struct Flow {
    from: String,
    to: String,
    src: DeviceId,
    dst: Ipv4Addr,
    /// Each probe with the virtual time it was sent.
    probes: Vec<(u64, Probe)>,
}

/// A watched flow over one step: its ping transcript and its outages.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    pub from: String,
    pub to: String,
    /// What `ping TO` on FROM printed over the step (icmp_seq 1 = the step's start).
    pub transcript: String,
    pub outages: Vec<Outage>,
    /// Between two probes.
    pub interval_ms: u64,
}

/// Consecutive lost probes.
#[derive(Clone, Debug, Serialize)]
pub struct Outage {
    /// When the first lost probe was sent, and the first one answered after it (None: the flow
    /// had not recovered when the step ended).
    pub from_ms: u64,
    pub until_ms: Option<u64>,
    /// icmp_seq of the first and last lost probes.
    pub first_seq: u32,
    pub last_seq: u32,
    /// How the first lost probe failed (`From 10.4.44.0 Destination Net Unreachable`).
    pub how: String,
}

impl Outage {
    /// The outage as an engineer counts it from ping: lost probes × interval.
    pub fn lost(&self) -> u32 {
        self.last_seq - self.first_seq + 1
    }
}

impl Watch {
    /// Watch the flows the step's `during:` expectations name (each pair once), from `now`,
    /// capturing the probes on `tap`'s interfaces.
    pub(super) fn new(
        engine: &Engine,
        during: &[FlowExpectation],
        interval_ms: u64,
        tap: Tap,
    ) -> Result<Watch, InputError> {
        let (net, st) = (engine.network(), engine.state());
        let mut flows: Vec<Flow> = Vec::new();
        for e in during {
            if flows.iter().any(|f| f.from == e.from && f.to == e.to) {
                continue;
            }
            let src = super::run::device_of(net, &e.from, &e.span)?;
            let dst = super::run::target_of(net, st, &e.to, &e.span)?;
            flows.push(Flow {
                from: e.from.clone(),
                to: e.to.clone(),
                src,
                dst,
                probes: Vec::new(),
            });
        }
        let now = engine.now_ms();
        Ok(Watch {
            flows,
            interval_ms: interval_ms.max(1),
            next_ms: now,
            limit_ms: now + MAX_STEP_MS,
            findings: Vec::new(),
            tap,
        })
    }

    fn next_sample(&self) -> Option<u64> {
        (!self.flows.is_empty()).then_some(self.next_ms)
    }

    /// Send one probe of every flow now, if one is due.
    pub(super) fn sample(&mut self, engine: &Engine) {
        let now = engine.now_ms();
        if self.flows.is_empty() || self.next_ms > now {
            return;
        }
        let (net, st) = (engine.network(), engine.state());
        for f in &mut self.flows {
            let seq = f.probes.len() as u32 + 1;
            let p = probe(
                net,
                st,
                f.src,
                f.dst,
                net.device(f.src).profile.ttl,
                ProbeKind::Echo,
                seq,
            );
            // One request of a long-running ping: its icmp_seq goes on from the previous one.
            let sent = || PingCapture::of(WATCH_DATA_BYTES, seq as u16, vec![p.clone()], vec![0], now);
            self.tap.ping(net, sent);
            f.probes.push((now, p));
        }
        self.next_ms = now + self.interval_ms;
    }

    pub(super) fn reports(&self) -> Vec<FlowReport> {
        self.flows
            .iter()
            .map(|f| {
                let probes: Vec<Probe> = f.probes.iter().map(|(_, p)| p.clone()).collect();
                FlowReport {
                    from: f.from.clone(),
                    to: f.to.clone(),
                    transcript: ping_text(f.dst, &PingStyle::linux(WATCH_DATA_BYTES), &probes),
                    outages: outages(&f.probes),
                    interval_ms: self.interval_ms,
                }
            })
            .collect()
    }
}

fn outages(probes: &[(u64, Probe)]) -> Vec<Outage> {
    let mut out: Vec<Outage> = Vec::new();
    let mut open: Option<Outage> = None;
    for (i, (at, p)) in probes.iter().enumerate() {
        let seq = i as u32 + 1;
        if matches!(p.outcome, ProbeOutcome::Reply { .. }) {
            if let Some(mut o) = open.take() {
                o.until_ms = Some(*at);
                out.push(o);
            }
            continue;
        }
        match open.as_mut() {
            Some(o) => o.last_seq = seq,
            None => {
                open = Some(Outage {
                    from_ms: *at,
                    until_ms: None,
                    first_seq: seq,
                    last_seq: seq,
                    how: super::run::describe_outcome(&p.outcome),
                })
            }
        }
    }
    out.extend(open);
    out
}

/// What time runs until.
pub(super) enum Until<'a> {
    /// The network is quiet and no controller has work left.
    Quiet,
    /// A given virtual time (`wait:`).
    Time(u64),
    /// `kubectl rollout status` returns: the DaemonSet's rollout is over.
    RolloutDone { namespace: &'a str, daemonset: &'a str },
}

/// Let virtual time run until `until`, doing the controllers' work and the watched pings'
/// probes when they are due. Returns the convergence when running until quiet, and otherwise
/// the run a bound stopped (its findings: an oscillation, the event budget), if one did.
pub(super) fn pass_time(
    engine: &mut Engine,
    watch: &mut Watch,
    until: Until<'_>,
    span: &Span,
) -> Result<Option<Convergence>, InputError> {
    let mut stopped: Option<Convergence> = None;
    loop {
        let now = engine.now_ms();
        watch.sample(engine);
        if k8s::next_due(engine.network()).is_some_and(|d| d <= now) {
            let st = engine.state().clone();
            engine.reconfigure(|net| -> Result<(), InputError> {
                k8s::run_due(net, &st, now).map_err(|e| Diagnostic::error(span.clone(), e))?;
                k8s::realize(net)?;
                Ok(())
            })?;
            // The network reacts at once (sessions closed, routes recomputed) before the next
            // action, which may look at it (a readiness probe).
            engine.run_until_quiet_or(now);
            continue;
        }
        let due = k8s::next_due(engine.network());
        if now >= watch.limit_ms && due.is_some() {
            if let Some(why) = k8s::rollout_stuck(engine.network(), engine.state()) {
                watch.findings.push(why);
            }
            return Ok(match until {
                Until::Quiet => engine.run_until_quiet_or(u64::MAX),
                _ => stopped,
            });
        }
        let deadline = match until {
            Until::Quiet => None,
            Until::Time(t) if now >= t => return Ok(stopped),
            Until::Time(t) => Some(t),
            Until::RolloutDone { namespace, daemonset } => {
                if !k8s::rollout_in_progress(engine.network(), namespace, daemonset) {
                    return Ok(stopped);
                }
                None
            }
        };
        let stop = [due, watch.next_sample(), deadline].into_iter().flatten().min();
        let Some(stop) = stop else {
            // Nothing is due and nothing is watched: converge (or, waiting for a rollout that
            // has nothing left to do, return).
            let c = engine.run_until_quiet_or(u64::MAX);
            return Ok(if matches!(until, Until::Quiet) { c } else { stopped });
        };
        if let Some(mut c) = engine.run_until_quiet_or(stop) {
            if matches!(until, Until::Quiet) && due.is_none() {
                return Ok(Some(c));
            }
            let now = engine.now_ms();
            if stop > now && c.quiet {
                // Quiet before `stop`: only timers (keepalives, hellos) run until then.
                engine.advance(stop - now);
            } else if stop > now {
                // The run ended unquiet (an oscillation, the event budget, memory, its
                // deadline) with a finding. The network goes on (a flap may yet settle), but
                // only within the run's event budget: waiting on a flapping network costs no
                // more than the bound.
                if let Some(spent) = engine.advance_bounded(stop - now).filter(|f| !c.findings.contains(f)) {
                    c.findings.push(spent);
                }
            }
            if !c.quiet {
                stopped = Some(c);
            }
        }
    }
}

/// Check a step's `during:` expectations against what its pings saw.
pub(super) fn evaluate_during(e: &FlowExpectation, flows: &[FlowReport]) -> super::CheckResult {
    let flow = flows.iter().find(|f| f.from == e.from && f.to == e.to);
    let interval_ms = flow.map_or(1000, |f| f.interval_ms);
    let outages = flow.map_or(&[][..], |f| f.outages.as_slice());
    let longest = outages.iter().max_by_key(|o| o.lost());
    let lost_ms = |o: &Outage| u64::from(o.lost()) * interval_ms;
    let seen = match longest {
        None => "no probe lost".to_string(),
        Some(o) => describe(o, interval_ms),
    };
    let (what, ok) = match &e.check {
        FlowCheck::Reach => (
            format!("{} reaches {} throughout the step", e.from, e.to),
            outages.is_empty(),
        ),
        FlowCheck::Outage { at_least, at_most } => {
            let lost = longest.map_or(0, lost_ms);
            let healed = longest.is_none_or(|o| o.until_ms.is_some());
            let ok = healed && at_least.is_none_or(|l| lost >= l) && at_most.is_none_or(|m| lost <= m);
            let bound = match (at_least, at_most) {
                (Some(l), Some(m)) => format!("between {} and {}", super::fmt_ms(*l), super::fmt_ms(*m)),
                (Some(l), None) => format!("at least {}", super::fmt_ms(*l)),
                (None, Some(m)) => format!("at most {}", super::fmt_ms(*m)),
                (None, None) => "some time".to_string(),
            };
            (format!("{} loses {} for {bound}, then recovers", e.from, e.to), ok)
        }
    };
    let detail = match flow {
        Some(f) => format!("{seen}\nping {}:\n{}", f.to, f.transcript),
        None => seen,
    };
    super::CheckResult {
        when: super::When::During,
        what,
        ok,
        detail,
        span: e.span.clone(),
    }
}

/// "unreachable for 5s (icmp_seq 3-7), From 10.4.44.0 Destination Net Unreachable".
pub fn describe(o: &Outage, interval_ms: u64) -> String {
    let span = if o.first_seq == o.last_seq {
        format!("icmp_seq {}", o.first_seq)
    } else {
        format!("icmp_seq {}-{}", o.first_seq, o.last_seq)
    };
    let end = if o.until_ms.is_some() {
        ""
    } else {
        ", not recovered when the step ended"
    };
    format!(
        "unreachable for {} ({span}){end}: {}",
        super::fmt_ms(u64::from(o.lost()) * interval_ms),
        o.how
    )
}
