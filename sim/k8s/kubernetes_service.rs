//! `default/kubernetes`, the Service in-cluster clients reach the apiserver by, as the
//! apiserver's own controller keeps it (`pkg/controlplane/controller/kubernetesservice`):
//!
//! - every `EndpointInterval` (10 s, `DefaultEndpointReconcilerInterval`) from the apiserver's
//!   start (`wait.NonSlidingUntil`, first run at once), `CreateOrUpdateMasterServiceIfNeeded`
//!   creates the Service on the first address of the apiserver's service range when it does not
//!   exist. An existing one is left as it is — "Service definition is not reconciled after first
//!   run" —, so after a move of `--service-cluster-ip-range` it keeps its old address (the repair
//!   loop's `ClusterIPOutOfRange`) until someone deletes it; the next tick creates it on the new
//!   range's first address. A create refused because that address is taken is retried next tick.
//! - The findings of k8s-cidr-migrations.md §5 C18: the Service missing, its address not the
//!   range's first, and the apiserver's certificate (`apiserver_cert`) not covering it.

use std::net::Ipv4Addr;

use super::apiserver_cert::CERT_PATH;
use super::cluster::Cluster;
use super::services::{indexed_ip, Service, ServicePort, ServiceType};
use crate::model::L4;

/// The Service as the controller creates it: 443 → the apiserver's advertise address :6443,
/// its `component`/`provider` labels, no selector (its endpoint reconciler keeps the Endpoints).
pub(super) fn kubernetes_service(ip: Ipv4Addr, advertise: Ipv4Addr, now: u64) -> Service {
    Service {
        namespace: "default".into(),
        name: "kubernetes".into(),
        kind: ServiceType::ClusterIP,
        cluster_ip: Some(ip),
        ports: vec![ServicePort {
            name: Some("https".into()),
            port: 443,
            target_port: 6443,
            protocol: L4::Tcp,
            node_port: None,
        }],
        selector: Default::default(),
        labels: [("component", "apiserver"), ("provider", "kubernetes")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: Default::default(),
        fixed_endpoints: vec![advertise],
        created_ms: now,
    }
}

/// `DefaultEndpointReconcilerInterval`.
const SYNC_MS: u64 = 10_000;

impl Cluster {
    /// The apiserver's controller loop ticks at its start and every 10 s after it.
    fn next_sync_after(&self, now: u64) -> u64 {
        let start = self.apiserver_started_ms();
        if now < start {
            return start;
        }
        start + ((now - start) / SYNC_MS + 1) * SYNC_MS
    }

    /// A Service was deleted at `now`: when `default/kubernetes` is missing, the controller
    /// creates it at its next tick.
    pub(super) fn schedule_kubernetes_service(&mut self, now: u64) {
        if self.control_plane.is_some() && self.service("default", "kubernetes").is_none() {
            self.kubernetes_service_due = Some(self.next_sync_after(now));
        }
    }

    /// The controller's tick at `now`: `default/kubernetes` on the range's first address, with
    /// the apiserver's advertise address as its endpoint. A taken address leaves it missing
    /// until the next tick after a Service is deleted.
    pub(super) fn sync_kubernetes_service(&mut self, now: u64) {
        self.kubernetes_service_due = None;
        if self.apiserver_refused(now).is_some() {
            self.kubernetes_service_due = Some(self.next_sync_after(now));
            return;
        }
        let first = indexed_ip(self.service_range(), 1);
        if self.service("default", "kubernetes").is_some() || self.check_cluster_ip(first).is_err() {
            return;
        }
        let Some(advertise) = self.nodes.iter().find(|n| n.control_plane).map(|n| n.internal_ip) else {
            return;
        };
        self.services.push(kubernetes_service(first, advertise, now));
    }

    /// C18: where in-cluster clients cannot reach the apiserver through `default/kubernetes`.
    pub fn kubernetes_service_findings(&self) -> Vec<String> {
        if self.control_plane.is_none() {
            return Vec::new();
        }
        let first = indexed_ip(self.service_range(), 1);
        let Some(svc) = self.service("default", "kubernetes") else {
            let why = match self.services.iter().find(|s| s.cluster_ip == Some(first)) {
                Some(s) => format!(
                    "the apiserver cannot recreate it: {first} is allocated to Service {}/{} (provided IP is already allocated)",
                    s.namespace, s.name
                ),
                None => format!("the apiserver recreates it on {first} at its next sync (every 10 s)"),
            };
            return vec![format!(
                "Service default/kubernetes does not exist: pods started now get no KUBERNETES_SERVICE_HOST; {why} (k8s-cidr-migrations.md §5 C18)"
            )];
        };
        let mut out = Vec::new();
        let Some(ip) = svc.cluster_ip else { return out };
        if ip != first && !self.service_range().contains(&ip) {
            out.push(format!(
                "Service default/kubernetes is on {ip}, not the service range's first address {first}: delete it and the \
                 apiserver recreates it there (its controller never moves an existing one; k8s-cidr-migrations.md §5 C18)"
            ));
        }
        if let Some(cert) = self.apiserver_cert_file.as_ref().filter(|c| !c.covers(ip)) {
            out.push(format!(
                "in-cluster clients of default/kubernetes ({ip}:443) fail TLS: {} — {CERT_PATH} was signed for another \
                 service range; remove it and its key, then `kubeadm init phase certs apiserver` with the new serviceSubnet \
                 (k8s-cidr-migrations.md §5 C18)",
                cert.hostname_error(ip)
            ));
        }
        // A cluster fabsim initialised has the file unless the runbook removed it.
        if self.apiserver_cert_file.is_none() {
            out.push(format!(
                "{CERT_PATH} is missing: kube-apiserver serves the certificate it loaded, but cannot start again until \
                 `kubeadm init phase certs apiserver` writes a new one"
            ));
        }
        out
    }
}
