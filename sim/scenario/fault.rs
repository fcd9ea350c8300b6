//! Fault steps: `fail:` and `restore:` a link (the cable is cut), one port (a dead optic or a
//! pulled cable at one end), or a device (power loss, optionally for a while, then it boots).
//!
//! Faults are physical: admin state and configuration stay as they were. What the network
//! does about them (carrier drops, OSPF adjacencies over the port go down at once, BGP
//! sessions go down by fast-external-failover or at hold-timer expiry) is the engine's work;
//! this module only names the broken parts, checks the step makes sense, and lets virtual time
//! pass for a `for:` so the step's watched pings see the outage.

use super::clock::{pass_time, Until, Watch};
use super::fmt_ms;
use super::run::{device_of, start_node_services};
use crate::diag::{Diagnostic, InputError, Span};
use crate::engine::{Engine, PowerLoss};
use crate::model::{DeviceId, IfId, Network};

/// One end of a link, as written: `DEVICE:INTERFACE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    pub device: String,
    pub interface: String,
}

impl Port {
    fn parse(s: &str) -> Result<Port, String> {
        match s.split_once(':') {
            Some((d, i)) if !d.trim().is_empty() && !i.trim().is_empty() => Ok(Port {
                device: d.trim().to_string(),
                interface: i.trim().to_string(),
            }),
            _ => Err(format!("expected DEVICE:INTERFACE, found '{s}'")),
        }
    }
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.device, self.interface)
    }
}

/// What fails or is restored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The cable between two ports is cut.
    Link(Port, Port),
    /// One port stops sending and hearing (its far end loses carrier too).
    Interface(Port),
    /// The device loses power.
    Device(String),
}

impl Fault {
    /// From a step's `link:` / `interface:` / `device:` (exactly one of them).
    pub fn parse(link: Option<&[String]>, interface: Option<&str>, device: Option<&str>) -> Result<Fault, String> {
        match (link, interface, device) {
            (Some([a, b]), None, None) => Ok(Fault::Link(Port::parse(a)?, Port::parse(b)?)),
            (Some(l), None, None) => Err(format!(
                "`link:` names the two ends of one cable, [DEVICE:IF, DEVICE:IF]; found {} entries",
                l.len()
            )),
            (None, Some(i), None) => Ok(Fault::Interface(Port::parse(i)?)),
            (None, None, Some(d)) => Ok(Fault::Device(d.to_string())),
            _ => {
                Err("name exactly one of `link: [DEVICE:IF, DEVICE:IF]`, `interface: DEVICE:IF`, `device: NAME`".into())
            }
        }
    }
}

/// Break `fault` (for `duration_ms`, then restore it, if given). Returns the report line.
pub(super) fn fail(
    engine: &mut Engine,
    step: &str,
    fault: &Fault,
    duration_ms: Option<u64>,
    span: &Span,
    watch: &mut Watch,
) -> Result<(String, Vec<Diagnostic>), InputError> {
    let mut warnings = Vec::new();
    let line = match fault {
        Fault::Device(name) => {
            let dev = device_of(engine.network(), name, span)?;
            if !engine.is_powered(dev) {
                return Err(Diagnostic::error(span.clone(), format!("step '{step}': {name} is already off")).into());
            }
            engine.power_off(&[dev], PowerLoss::Abrupt);
            match duration_ms {
                None => format!("{name}: power lost"),
                Some(ms) => {
                    // The watched pings keep going while the device is off.
                    let back = engine.now_ms() + ms;
                    pass_time(engine, watch, Until::Time(back), span)?;
                    warnings = boot(engine, dev, span)?;
                    format!("{name}: power lost for {}, then boots", fmt_ms(ms))
                }
            }
        }
        _ => {
            let ports = ports(engine.network(), fault, span)?;
            if let Some(p) = ports.iter().find(|p| engine.is_severed(**p)) {
                return Err(Diagnostic::error(
                    span.clone(),
                    format!("step '{step}': {} has already failed", label(engine.network(), *p)),
                )
                .into());
            }
            engine.set_severed(&ports, true);
            describe(engine.network(), fault, &ports, "down")
        }
    };
    Ok((line, warnings))
}

/// Make `fault` work again. Restoring what has not failed is an error.
pub(super) fn restore(
    engine: &mut Engine,
    step: &str,
    fault: &Fault,
    span: &Span,
) -> Result<(String, Vec<Diagnostic>), InputError> {
    match fault {
        Fault::Device(name) => {
            let dev = device_of(engine.network(), name, span)?;
            if engine.is_powered(dev) {
                return Err(Diagnostic::error(
                    span.clone(),
                    format!("step '{step}': cannot restore {name}: it has not failed (it is powered on)"),
                )
                .into());
            }
            let warnings = boot(engine, dev, span)?;
            Ok((format!("{name}: power restored, boots"), warnings))
        }
        _ => {
            let ports = ports(engine.network(), fault, span)?;
            if let Some(p) = ports.iter().find(|p| !engine.is_severed(**p)) {
                return Err(Diagnostic::error(
                    span.clone(),
                    format!(
                        "step '{step}': cannot restore {}: it has not failed",
                        label(engine.network(), *p)
                    ),
                )
                .into());
            }
            engine.set_severed(&ports, false);
            Ok((describe(engine.network(), fault, &ports, "up"), Vec::new()))
        }
    }
}

/// Power on and, once the host is up (addresses, local routes), start what runs on it
/// (kubelet, calico-node), as after a `reboot:`.
fn boot(engine: &mut Engine, dev: DeviceId, span: &Span) -> Result<Vec<Diagnostic>, InputError> {
    engine.power_on(&[dev]);
    let now = engine.now_ms();
    engine.run_until_quiet_or(now);
    start_node_services(engine, &[dev], span)
}

/// The ports a link or interface fault names, checked against the topology.
fn ports(net: &Network, fault: &Fault, span: &Span) -> Result<Vec<IfId>, Diagnostic> {
    match fault {
        Fault::Link(a, b) => {
            let (ia, ib) = (port(net, a, span)?, port(net, b, span)?);
            if net.iface(ia).l2.is_none() || net.iface(ia).l2 != net.iface(ib).l2 || ia == ib {
                let cabled: Vec<String> = net.l2_peers(ia).map(|p| label(net, p)).collect();
                let to = if cabled.is_empty() {
                    "nothing".to_string()
                } else {
                    cabled.join(", ")
                };
                return Err(
                    Diagnostic::error(span.clone(), format!("{a} and {b} are not the two ends of one link"))
                        .with_hint(format!("{a} is cabled to {to}")),
                );
            }
            Ok(vec![ia, ib])
        }
        Fault::Interface(p) => Ok(vec![port(net, p, span)?]),
        Fault::Device(_) => Ok(Vec::new()),
    }
}

fn port(net: &Network, p: &Port, span: &Span) -> Result<IfId, Diagnostic> {
    let dev = device_of(net, &p.device, span)?;
    net.iface_by_name(dev, &p.interface).ok_or_else(|| {
        Diagnostic::error(span.clone(), format!("{} has no interface '{}'", p.device, p.interface))
            .with_hint(format!("interfaces: {}", net.iface_names(dev)))
    })
}

fn label(net: &Network, i: IfId) -> String {
    format!("{} {}", net.device(net.iface(i).device).name, net.iface(i).name)
}

/// "Leaf-1 Ethernet1 — Spine-1 Ethernet1: link down"; for one port, which far ends lose carrier.
fn describe(net: &Network, fault: &Fault, ports: &[IfId], how: &str) -> String {
    match fault {
        Fault::Link(..) => format!("{} — {}: link {how}", label(net, ports[0]), label(net, ports[1])),
        _ => {
            let far: Vec<String> = ports
                .iter()
                .flat_map(|p| net.l2_peers(*p))
                .filter(|p| net.l2_peers(*p).count() == 1)
                .map(|p| label(net, p))
                .collect();
            let carrier = if how == "down" { "no carrier" } else { "carrier back" };
            match far.as_slice() {
                [] => format!("{}: {carrier}", label(net, ports[0])),
                _ => format!(
                    "{}: {carrier} (and at the far end, {})",
                    label(net, ports[0]),
                    far.join(", ")
                ),
            }
        }
    }
}
