//! Addresses hard-coded in workload configuration (a scenario's `hardcoded:` list): a database
//! pod's IP in an application's config, a Service's ClusterIP in Prometheus' scrape targets
//! (k8s-cidr-migrations.md §2.6 P1-11, P1-12; check C21). What each address points at when the
//! runbook starts is what it was written for; a step after which it points at nothing, or at
//! something else, is a finding — the config still says the old address.

use std::net::Ipv4Addr;

use crate::diag::Span;
use crate::engine::State;
use crate::k8s::PodPhase;
use crate::model::{AddrConfig, DeviceId, IfId, Network};

/// One declared address and where it is written.
#[derive(Clone, Debug)]
pub struct Hardcoded {
    pub address: Ipv4Addr,
    /// The config that holds it, as the user names it (`prometheus.yml in monitoring/prometheus-config`).
    pub written_in: String,
    pub span: Span,
}

/// What answers for an address: a Service's ClusterIP, a pod's IP or a host's interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    Service { namespace: String, name: String },
    Pod { namespace: String, name: String },
    Host { device: String, iface: String },
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Service { namespace, name } => write!(f, "Service {namespace}/{name}"),
            Holder::Pod { namespace, name } => write!(f, "pod {namespace}/{name}"),
            Holder::Host { device, iface } => write!(f, "{device} ({iface})"),
        }
    }
}

/// Who holds `addr` now: a Service first (a ClusterIP is nobody's interface), then a pod that
/// has it (Running or starting: its CNI gave it the address), then a host's interface that is
/// configured with it or holds it now (a DHCP lease). A host that is down or off still holds
/// its configured address: the config is not stale, the host is down (the matrix says so).
/// Pods' own network namespaces are pods, not hosts.
pub fn holder(net: &Network, st: &State, addr: Ipv4Addr) -> Option<Holder> {
    let cluster = net.cluster.as_deref();
    if let Some(s) = cluster.and_then(|c| c.services.iter().find(|s| s.cluster_ip == Some(addr))) {
        return Some(Holder::Service {
            namespace: s.namespace.clone(),
            name: s.name.clone(),
        });
    }
    let pod = cluster.and_then(|c| {
        c.pods
            .iter()
            .find(|p| !p.host_network && p.ip == Some(addr) && matches!(p.phase, PodPhase::Running | PodPhase::Pending))
    });
    if let Some(p) = pod {
        return Some(Holder::Pod {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
        });
    }
    let pod_netns = net.pod_devices();
    net.devices.iter().enumerate().find_map(|(i, dev)| {
        if pod_netns.contains(&DeviceId(i as u32)) {
            return None;
        }
        let has = |f: &IfId| {
            let configured = matches!(net.iface(*f).addr, AddrConfig::Static(a) if a.addr() == addr);
            configured || st.ifaces[f.idx()].addr.is_some_and(|a| a.addr() == addr)
        };
        dev.ifaces.iter().find(|f| has(f)).map(|f| Holder::Host {
            device: dev.name.clone(),
            iface: net.iface(*f).name.clone(),
        })
    })
}

/// The run's watch over the declared addresses: what each was written for — the first thing
/// seen holding it, when the topology has converged or after a later step (a runbook that
/// builds the cluster creates the pod first) — and the findings already reported (a stale
/// address is reported when it goes stale, not after every step).
#[derive(Debug)]
pub struct Watch {
    meant: Vec<(Hardcoded, Option<Holder>)>,
    reported: Vec<String>,
}

impl Watch {
    pub fn new(declared: &[Hardcoded]) -> Watch {
        Watch {
            meant: declared.iter().map(|h| (h.clone(), None)).collect(),
            reported: Vec::new(),
        }
    }

    /// The addresses that no longer point at what they were written for, as findings not
    /// reported before (one that points back again can be reported again later).
    pub fn check(&mut self, net: &Network, st: &State) -> Vec<String> {
        let mut found = Vec::new();
        for (h, meant) in &mut self.meant {
            let now = holder(net, st, h.address);
            let Some(was) = meant.as_ref() else {
                *meant = now;
                continue;
            };
            let what = match &now {
                Some(other) if other == was => continue,
                Some(other) => format!("now points at {other}"),
                None => "points at nothing now: no Service, pod or host has it".to_string(),
            };
            found.push(format!(
                "hard-coded {} in {} {what}; it was written for {was} — update the config \
                 (k8s-cidr-migrations.md P1-11/P1-12: find hard-coded addresses before the window)",
                h.address, h.written_in
            ));
        }
        let new = found.iter().filter(|f| !self.reported.contains(f)).cloned().collect();
        self.reported = found;
        new
    }

    /// The declared addresses nothing has held so far: the scenario names something that is
    /// not there, a warning at its line.
    pub fn never_held(&self) -> Vec<crate::diag::Diagnostic> {
        self.meant
            .iter()
            .filter(|(_, meant)| meant.is_none())
            .map(|(h, _)| {
                crate::diag::Diagnostic::warning(
                    h.span.clone(),
                    format!(
                        "hard-coded {} ({}) never pointed at anything in this run: no Service, pod or host had it",
                        h.address, h.written_in
                    ),
                )
            })
            .collect()
    }
}
