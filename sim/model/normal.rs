//! The normalised model (`fabsim dump`): the network as a value that does not depend on which
//! input format built it, so two inputs can be compared for equality (the round trips of
//! `tests/round_trip.rs`).
//!
//! What is dropped or rewritten, and why:
//! - source places (`span`): they say where a file said something, not what it said;
//! - dense ids (`DeviceId`, `IfId`, `L2Id`): they follow the order a loader met names in; an
//!   interface is listed under its device, a device's L2 domain as the sorted `DEVICE:IF`
//!   names of its other members, a timed configuration under its device's name;
//! - L2 domain names: a topology names a link by its ends, containerlab by its endpoints, a
//!   snapshot by whatever file declared it; the members are the domain.
//!
//! Everything else is kept as it serialises, in the model's order (devices in declaration
//! order, interfaces in the device's order: both are visible in output, e.g. `ip addr`).

use serde_json::{json, Value};

use super::{Device, IfId, Interface, Network};

/// `net` normalised (see the module comment).
pub fn normalized(net: &Network) -> Value {
    let devices: Vec<Value> = net
        .devices
        .iter()
        .map(|d| device(net, d, &|i| net.iface(i).clone()))
        .collect();
    let timed: Vec<Value> = net
        .timed
        .iter()
        .map(|t| {
            let ifaces = t.ifaces.clone();
            let lookup = move |i: IfId| {
                ifaces
                    .iter()
                    .find(|(id, _)| *id == i)
                    .map_or_else(|| net.iface(i).clone(), |(_, ifc)| ifc.clone())
            };
            json!({
                "at_ms": t.at_ms,
                "device": net.device(t.device).name,
                "config": device(net, &t.config, &lookup),
            })
        })
        .collect();
    let mut out = json!({ "devices": devices, "timed": timed });
    strip_spans(&mut out);
    out
}

fn device(net: &Network, d: &Device, iface: &dyn Fn(IfId) -> Interface) -> Value {
    let mut v = serde_json::to_value(d).unwrap_or(Value::Null);
    let ifaces: Vec<Value> = d.ifaces.iter().map(|i| interface(net, *i, &iface(*i))).collect();
    if let Value::Object(m) = &mut v {
        m.insert("ifaces".into(), Value::Array(ifaces));
    }
    v
}

fn interface(net: &Network, id: IfId, ifc: &Interface) -> Value {
    let mut v = serde_json::to_value(ifc).unwrap_or(Value::Null);
    let peers: Option<Vec<String>> = ifc.l2.map(|l| {
        let mut p: Vec<String> = net.l2[l.idx()]
            .members
            .iter()
            .filter(|m| **m != id)
            .map(|m| {
                let i = net.iface(*m);
                format!("{}:{}", net.device(i.device).name, i.name)
            })
            .collect();
        p.sort();
        p
    });
    if let Value::Object(m) = &mut v {
        m.remove("device");
        m.remove("l2");
        m.insert("l2_peers".into(), json!(peers));
    }
    v
}

/// Removes every `span` key, at any depth.
fn strip_spans(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("span");
            m.values_mut().for_each(strip_spans);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_spans),
        _ => {}
    }
}
