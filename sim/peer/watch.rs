//! What changed in the live simulation, as lines: every BGP session's state, the watched
//! device's BGP paths, and reachability between every host and pod (recomputed only when a
//! forwarding table changed). Snapshots are ordered maps: lines come out in a stable order.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use crate::engine::{BgpMessage, Engine};
use crate::model::DeviceId;
use crate::scenario::ReachMatrix;

pub struct Watch {
    dev: DeviceId,
    sessions: BTreeMap<(String, Ipv4Addr), String>,
    paths: BTreeMap<(Ipv4Net, Ipv4Addr, u32), String>,
    reach: BTreeMap<(String, String), bool>,
    routes_changed: Option<u64>,
}

fn as_path(asns: &[u32]) -> String {
    let p: Vec<String> = asns.iter().map(u32::to_string).collect();
    if p.is_empty() {
        "(empty)".into()
    } else {
        p.join(" ")
    }
}

impl Watch {
    /// The first `changes` reports the state at the start of the live run as changes.
    pub fn new(dev: DeviceId) -> Self {
        Watch {
            dev,
            sessions: BTreeMap::new(),
            paths: BTreeMap::new(),
            reach: BTreeMap::new(),
            routes_changed: None,
        }
    }

    pub fn changes(&mut self, engine: &Engine) -> Vec<String> {
        let (net, st) = (engine.network(), engine.state());
        let at = format!("[{:>9.1}s]", engine.now_ms() as f64 / 1000.0);
        let mut lines = Vec::new();
        let mut sessions = BTreeMap::new();
        for (i, d) in st.devices.iter().enumerate() {
            let name = &net.devices[i].name;
            for s in d.bgp.iter().flat_map(|b| &b.sessions) {
                let why = s.last_error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
                sessions.insert((name.clone(), s.neighbor), format!("{:?}{why}", s.state));
            }
        }
        for (k, v) in &sessions {
            if self.sessions.get(k) != Some(v) {
                lines.push(format!("{at} session {} -> {}: {v}", k.0, k.1));
            }
        }
        for k in self.sessions.keys().filter(|k| !sessions.contains_key(*k)) {
            lines.push(format!("{at} session {} -> {}: removed", k.0, k.1));
        }
        self.sessions = sessions;

        let dev_name = &net.device(self.dev).name;
        let mut paths = BTreeMap::new();
        let table = st.devices[self.dev.idx()]
            .bgp
            .as_ref()
            .map(|b| b.table.routes())
            .unwrap_or_default();
        for r in table.iter() {
            let (Some(from), Some(a)) = (r.from, &r.attrs) else {
                continue;
            };
            let nh = r.next_hop.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
            paths.insert(
                (r.prefix, from, r.path_id),
                format!("next hop {nh}, AS path {}", as_path(&a.as_path)),
            );
        }
        for ((prefix, from, id), v) in &paths {
            if self.paths.get(&(*prefix, *from, *id)) != Some(v) {
                lines.push(format!(
                    "{at} {dev_name} learned {prefix} from {from} (path id {id}): {v}"
                ));
            }
        }
        for (prefix, from, id) in self.paths.keys().filter(|k| !paths.contains_key(*k)) {
            lines.push(format!("{at} {dev_name} withdrawn {prefix} from {from} (path id {id})"));
        }
        self.paths = paths;

        if self.routes_changed != Some(engine.routes_changed_ms()) {
            self.routes_changed = Some(engine.routes_changed_ms());
            let m = ReachMatrix::compute(net, st);
            let mut reach = BTreeMap::new();
            for (i, a) in m.endpoints.iter().enumerate() {
                for (j, b) in m.endpoints.iter().enumerate().filter(|(j, _)| *j != i) {
                    reach.insert((a.name.clone(), b.name.clone()), m.reached(i, j));
                }
            }
            let first = self.reach.is_empty();
            for (k, ok) in &reach {
                if !first && self.reach.get(k) != Some(ok) {
                    let what = if *ok { "restored" } else { "lost" };
                    lines.push(format!("{at} reach {} -> {}: {what}", k.0, k.1));
                }
            }
            if first || reach != self.reach {
                let ok = reach.values().filter(|r| **r).count();
                lines.push(format!("{at} reach: {ok} of {} host/pod pairs answer", reach.len()));
            }
            self.reach = reach;
        }
        lines
    }
}

/// An UPDATE the device sends the real speaker, one line per path.
pub fn describe_update(m: &BgpMessage) -> Vec<String> {
    let BgpMessage::Update {
        withdrawn, announced, ..
    } = m
    else {
        return Vec::new();
    };
    let mut lines: Vec<String> = withdrawn
        .iter()
        .map(|(p, id)| format!("sent withdraw {p} (path id {id})"))
        .collect();
    for (p, a) in announced {
        lines.push(format!(
            "sent announce {p} (path id {}): next hop {}, AS path {}",
            a.id,
            a.next_hop,
            as_path(&a.attrs.as_path)
        ));
    }
    lines
}
