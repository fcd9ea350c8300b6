//! A topology's `cluster:` section: a kubeadm cluster with Calico declared as data instead of
//! typed as runbook commands. Loading runs the same steps the runbook commands do
//! (`k8s::init_cluster`, `k8s::join_cluster`, `k8s::install_calico`, `k8s::start_calico_nodes`,
//! `k8s::bare_pod`) once, against the freshly booted fabric, then realizes the network once:
//! replaying one `kubeadm join` per node would realize the whole network per node.
//!
//! ```yaml
//! cluster:
//!   control_plane: node-1-1          # kubeadm init here; every other k8s-node joins, in file order
//!   pod_network_cidr: 10.128.0.0/10  # kubeadm init --pod-network-cidr
//!   service_cidr: 10.96.0.0/12       # kubeadm init --service-cidr (this default)
//!   cni: https://docs.projectcalico.org/manifests/calico.yaml   # a catalogue manifest
//!   calico_env: {IP_AUTODETECTION_METHOD: kubernetes-internal-ip}  # calico-node env edits
//!   cni_ipam: host-local             # the CNI config's ipam: calico-ipam (the manifest's) or
//!                                    # {"type": "host-local", "subnet": "usePodCidr"}
//!   calico_resources: |              # in the datastore before calico-node first starts
//!     apiVersion: projectcalico.org/v3
//!     kind: IPPool
//!     ...
//!   pods: {per_node: 2, image: alpine}   # bare pods NODE-pod-I pinned to each node
//! ```

use ipnet::Ipv4Net;
use serde::Deserialize;
use serde_saphyr::Spanned;

use super::topology::yaml::{self, OrderedMap};
use crate::calico::install::CniIpam;
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::k8s::{self, CommandOutcome, InitOptions, DEFAULT_SERVICE_CIDR};
use crate::model::{DeviceId, Network};

/// The file name Calico's parser reports `calico_resources` diagnostics under, before they are
/// moved to the block's place in the topology file.
const RESOURCES_FILE: &str = "calico_resources";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    /// The k8s-node `kubeadm init` runs on; every other k8s-node joins, in device order.
    control_plane: Spanned<String>,
    /// `kubeadm init --pod-network-cidr` (the CIDR of the pool calico-node creates when
    /// `calico_resources` declares none).
    pod_network_cidr: Option<Spanned<String>>,
    /// `kubeadm init --service-cidr`; default 10.96.0.0/12.
    service_cidr: Option<Spanned<String>>,
    /// The manifest `kubectl apply -f URL` installs (catalogue/manifests.yaml); none: no CNI.
    cni: Option<Spanned<String>>,
    /// calico-node's environment as edited into the manifest before applying it
    /// (`IP_AUTODETECTION_METHOD`, `CALICO_IPV4POOL_*`, …); overrides the manifest's values.
    calico_env: Option<Spanned<OrderedMap<Spanned<String>>>>,
    /// The `ipam` section of the CNI network config in the manifest's `calico-config`:
    /// `calico-ipam` (the manifest's) or `host-local`, meaning `{"type": "host-local",
    /// "subnet": "usePodCidr"}` — pod addresses from the Node's podCIDR (pair it with
    /// `calico_env: {USE_POD_CIDR: "true"}` so BIRD advertises the podCIDRs).
    cni_ipam: Option<Spanned<String>>,
    /// Calico resources (IPPool, BGPConfiguration, BGPPeer, Node), in the datastore before
    /// calico-node first starts, so a pool declared here is the one nodes use (calico-node
    /// creates its default pool only when there is none).
    calico_resources: Option<Spanned<String>>,
    pods: Option<Spanned<RawPods>>,
}

/// Workload pods: bare pods (no controller) named `NODE-pod-I` (I from 1), in namespace
/// `default`, pinned to each node by `spec.nodeName`, created in node join order.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPods {
    per_node: Spanned<u32>,
    /// A catalogue image (catalogue/images.yaml).
    image: Spanned<String>,
}

/// Builds the declared cluster on the loaded network and realizes it. Returns BIRD's warnings
/// on the rendered configurations.
pub(super) fn declare(
    net: &mut Network,
    raw: &Spanned<RawCluster>,
    origin: &TextOrigin,
    source: &str,
) -> Result<Vec<Diagnostic>, InputError> {
    let span = |loc: &serde_saphyr::Location| yaml::span(origin, loc);
    let c = &raw.value;
    let cp_span = span(&c.control_plane.referenced);
    let cp = net
        .device_by_name(&c.control_plane.value)
        .filter(|d| net.device(*d).kubelet.is_some())
        .ok_or_else(|| {
            Diagnostic::error(
                cp_span.clone(),
                format!(
                    "expected a k8s-node device for `control_plane`, found `{}`",
                    c.control_plane.value
                ),
            )
        })?;
    let cidr = |v: &Spanned<String>| {
        v.value.trim().parse::<Ipv4Net>().map(|n| n.trunc()).map_err(|_| {
            Diagnostic::error(
                span(&v.referenced),
                format!("expected an IPv4 CIDR like 10.128.0.0/10, found `{}`", v.value),
            )
        })
    };
    let opts = InitOptions {
        pod_cidr: c.pod_network_cidr.as_ref().map(cidr).transpose()?,
        service_cidr: c
            .service_cidr
            .as_ref()
            .map(cidr)
            .transpose()?
            .unwrap_or(DEFAULT_SERVICE_CIDR),
        endpoint: None,
    };
    let unknown = |v: &Spanned<String>, what: &str, known: Vec<&str>| {
        let msg = format!("unknown {what} `{}` (the catalogue has: {})", v.value, known.join(", "));
        Diagnostic::error(span(&v.referenced), msg)
    };
    if let Some(cni) = c
        .cni
        .as_ref()
        .filter(|v| crate::catalogue::manifest(&v.value).is_none())
    {
        return Err(unknown(cni, "manifest", crate::catalogue::manifest_urls()).into());
    }
    let image = c.pods.as_ref().map(|p| &p.value.image);
    if let Some(image) = image.filter(|v| crate::catalogue::image(&v.value).is_none()) {
        return Err(unknown(image, "image", crate::catalogue::names()).into());
    }
    if c.cni.is_none() {
        let calico_keys = [
            c.calico_env.as_ref().map(|e| &e.referenced),
            c.calico_resources.as_ref().map(|r| &r.referenced),
            c.cni_ipam.as_ref().map(|r| &r.referenced),
        ];
        if let Some(at) = calico_keys.into_iter().flatten().next() {
            return Err(Diagnostic::error(span(at), "Calico settings need `cni:` (the Calico manifest)").into());
        }
    }

    let cni_ipam = match c.cni_ipam.as_ref() {
        None => None,
        Some(v) if v.value == "calico-ipam" => Some(CniIpam::CalicoIpam),
        Some(v) if v.value == "host-local" => Some(CniIpam::HostLocalPodCidr),
        Some(v) => {
            let msg = format!(
                "expected `calico-ipam` or `host-local` for `cni_ipam`, found `{}`",
                v.value
            );
            return Err(Diagnostic::error(span(&v.referenced), msg).into());
        }
    };

    // Every host has booted: kubelet and calico-node see addresses and local routes.
    let st = crate::engine::booted_state(net);
    outcome(k8s::init_cluster(net, &st, cp, &opts, 0, &[]), &cp_span)?;
    let workers: Vec<DeviceId> = (0..net.devices.len() as u32)
        .map(DeviceId)
        .filter(|d| *d != cp && net.device(*d).kubelet.is_some())
        .collect();
    for dev in workers {
        let at = net.device(dev).span.clone();
        outcome(k8s::join_cluster(net, &st, dev, 0), &at)?;
    }
    if let Some(cni) = &c.cni {
        let cni_span = span(&cni.referenced);
        k8s::install_calico(net, &cni.value, 0).map_err(|e| Diagnostic::error(cni_span.clone(), e))?;
        let calico = net
            .cluster
            .as_deref_mut()
            .and_then(|cl| cl.calico.as_mut())
            .ok_or_else(|| Diagnostic::error(cni_span.clone(), "the manifest installed no Calico"))?;
        if let Some(ipam) = cni_ipam {
            calico.cni_ipam = ipam;
        }
        for (key, value) in c.calico_env.iter().flat_map(|e| &e.value.0) {
            calico.env.insert(key.value.clone(), value.value.clone());
        }
        if let Some(res) = &c.calico_resources {
            let at = yaml::text_origin(res, source, origin);
            calico
                .apply_yaml(&res.value, RESOURCES_FILE, 0)
                .map_err(|e| InputError(e.0.into_iter().map(|d| relocate(d, &at)).collect()))?;
        }
        k8s::start_calico_nodes(net, &st, 0).map_err(|e| Diagnostic::error(cni_span, e))?;
    }
    if let Some(cluster) = net.cluster.as_deref_mut() {
        if let Some(pods) = &c.pods {
            let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
            for node in nodes {
                for i in 1..=pods.value.per_node.value {
                    let name = format!("{node}-pod-{i}");
                    let pod = k8s::bare_pod("default", &name, Some(node.clone()), &pods.value.image.value);
                    cluster.create_pod(pod, 0);
                }
            }
        }
        cluster.reconcile(0);
    }
    k8s::realize(net)
}

/// A step that printed a failure (a preflight error) fails the load, at `at`, with its output.
fn outcome(r: Result<CommandOutcome, String>, at: &Span) -> Result<(), Diagnostic> {
    match r {
        Ok(o) if o.status == 0 => Ok(()),
        Ok(o) => Err(Diagnostic::error(at.clone(), o.output.trim_end().replace('\n', "; "))),
        Err(e) => Err(Diagnostic::error(at.clone(), e)),
    }
}

/// A diagnostic about `calico_resources`' text, moved to where that text is in the file.
fn relocate(mut d: Diagnostic, at: &TextOrigin) -> Diagnostic {
    if d.span.file == RESOURCES_FILE {
        d.span = at.span_at(
            d.span.line.saturating_sub(1) as usize,
            d.span.col.saturating_sub(1) as usize,
        );
    }
    d
}
