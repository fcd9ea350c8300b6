//! The Kubernetes objects a `kubectl get nodes,pods -o yaml` dump holds beyond Calico's view of
//! them: a Node's `status.addresses` InternalIP (KDD `K8sNodeToCalico` copies it into the
//! Calico Node's `spec.addresses`), its kubelet version, `spec.taints` and `unschedulable`; a
//! Pod's placement, host networking, image, scheduling constraints and observed address (in
//! the Kubernetes datastore a pod *is* Calico's WorkloadEndpoint, `PodToWorkloadEndpoints`).
//! `k8s::observed` turns them into the cluster's nodes and pods.
//!
//! Fields are read one by one through `Obj`, so any key not read here nor listed in one of the
//! allow-lists below is an "unknown field" warning at its line: a dump never loses something
//! silently unless it is known to be status or defaulting noise.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::{Ctx, Obj};
use crate::diag::Span;

/// What kubelet reports about the machine and its health (resources, images, conditions): it
/// does not change the network, and fabsim derives readiness from calico-node.
const NODE_STATUS_NOISE: &[&str] = &[
    "allocatable",
    "capacity",
    "conditions",
    "config",
    "daemonEndpoints",
    "images",
    "phase",
    "volumesAttached",
    "volumesInUse",
];
/// `status.nodeInfo` but the kubelet version: the machine's identity and software versions.
const NODE_INFO_NOISE: &[&str] = &[
    "architecture",
    "bootID",
    "containerRuntimeVersion",
    "kernelVersion",
    "kubeProxyVersion",
    "machineID",
    "operatingSystem",
    "osImage",
    "systemUUID",
];
/// A pod's status but its phase and address: container states, conditions and timestamps,
/// which kubelet reports and fabsim does not replay (scripted pod facts say them instead).
const POD_STATUS_NOISE: &[&str] = &[
    "conditions",
    "containerStatuses",
    "ephemeralContainerStatuses",
    "hostIP",
    "hostIPs",
    "initContainerStatuses",
    "message",
    "nominatedNodeName",
    "qosClass",
    "reason",
    "startTime",
];
/// Pod spec fields the API server's defaulting writes into every pod (`SetDefaults_PodSpec`,
/// the Priority and ServiceAccount admission plugins' defaults): present in every dump whatever
/// the user wrote, and none changes the network.
const POD_SPEC_DEFAULTS: &[&str] = &[
    "dnsPolicy",
    "enableServiceLinks",
    "preemptionPolicy",
    "priority",
    "restartPolicy",
    "schedulerName",
    "securityContext",
    "serviceAccount",
    "serviceAccountName",
    "terminationGracePeriodSeconds",
];
/// Container fields the API server defaults (`SetDefaults_Container`) and its name (fabsim
/// names a pod's one container after its workload).
const CONTAINER_DEFAULTS: &[&str] = &[
    "imagePullPolicy",
    "name",
    "resources",
    "terminationMessagePath",
    "terminationMessagePolicy",
];

/// A Kubernetes Node's own fields (`Node::kube`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KubeNode {
    /// `status.addresses[type=InternalIP]`.
    pub internal_ip: Option<Ipv4Addr>,
    /// `status.nodeInfo.kubeletVersion`.
    pub kubelet_version: Option<String>,
    /// `spec.taints`.
    pub taints: Vec<KubeTaint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Where the object's `kind` is (diagnostics about the node as a whole).
    pub span: Span,
}

/// One entry of `spec.taints`, as written (the effect is checked by `k8s::observed`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KubeTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
    pub span: Span,
}

/// A pod as `kubectl get pods -o yaml` shows it, in the fields fabsim models.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KubePod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// The controlling owner (`metadata.ownerReferences[controller=true]`): kind and name.
    pub owner: Option<(String, String)>,
    /// `spec.nodeName`.
    pub node: Option<String>,
    pub host_network: bool,
    /// The first container's image.
    pub image: String,
    pub node_selector: BTreeMap<String, String>,
    /// `spec.tolerations` as (key, operator) (`k8s::observed` decides what they tolerate).
    pub tolerations: Vec<(String, String)>,
    /// `status.phase`.
    pub phase: Option<String>,
    /// `status.podIP` (else the first of `status.podIPs`).
    pub ip: Option<Ipv4Addr>,
    /// Where `spec.nodeName` is, else the pod's `spec`.
    pub node_span: Span,
    pub span: Span,
}

/// `metadata.ownerReferences`: the reference marked `controller: true`.
pub(super) fn controller(meta: &mut Obj, ctx: &mut Ctx) -> Option<(String, String)> {
    let mut found = None;
    for r in meta.list("ownerReferences", ctx).unwrap_or_default() {
        let Some(mut o) = Obj::new(r, "an ownerReference", ctx) else {
            continue;
        };
        let kind = o.string("kind", ctx).map(|(s, _)| s).unwrap_or_default();
        let name = o.string("name", ctx).map(|(s, _)| s).unwrap_or_default();
        let is_controller = o.bool("controller", ctx).unwrap_or(false);
        o.skip(&["apiVersion", "uid", "blockOwnerDeletion"]);
        o.finish(ctx);
        if is_controller && found.is_none() {
            found = Some((kind, name));
        }
    }
    found
}

/// `spec.taints` of a Node.
pub(super) fn taints(spec: &mut Obj, ctx: &mut Ctx) -> Vec<KubeTaint> {
    let mut out = Vec::new();
    for t in spec.list("taints", ctx).unwrap_or_default() {
        let span = ctx.span(t);
        let Some(mut o) = Obj::new(t, "a taint", ctx) else {
            continue;
        };
        out.push(KubeTaint {
            key: o.string("key", ctx).map(|(s, _)| s).unwrap_or_default(),
            value: o.string("value", ctx).map(|(s, _)| s).unwrap_or_default(),
            effect: o.string("effect", ctx).map(|(s, _)| s).unwrap_or_default(),
            span,
        });
        // Set by the node lifecycle controller when it added the taint.
        o.skip(&["timeAdded"]);
        o.finish(ctx);
    }
    out
}

/// A Node's `status`: its InternalIP and kubelet version; the rest is `NODE_STATUS_NOISE`.
pub(super) fn node_status(kube: &mut KubeNode, top: &mut Obj, ctx: &mut Ctx) {
    let Some(mut status) = top.obj("status", ctx) else {
        return;
    };
    for a in status.list("addresses", ctx).unwrap_or_default() {
        let Some(mut o) = Obj::new(a, "an address", ctx) else {
            continue;
        };
        let kind = o.string("type", ctx);
        let addr = o.string("address", ctx);
        o.finish(ctx);
        match (kind, addr) {
            (Some((k, _)), Some((a, at))) if k == "InternalIP" => match a.parse::<Ipv4Addr>() {
                Ok(ip) if kube.internal_ip.is_none() => kube.internal_ip = Some(ip),
                // A second InternalIP is the node's IPv6 one (dual stack): fabsim is IPv4-only.
                Ok(_) => {}
                Err(_) if a.contains(':') => {}
                Err(_) => ctx.error(at, format!("InternalIP {a:?} is not an IPv4 address")),
            },
            // The node's name, which the node is matched by anyway.
            (Some((k, _)), _) if k == "Hostname" => {}
            (Some((k, at)), _) => ctx.warn(at, format!("node address type {k} is not modelled by fabsim; ignored")),
            (None, _) => {}
        }
    }
    if let Some(mut info) = status.obj("nodeInfo", ctx) {
        kube.kubelet_version = info.opt_string("kubeletVersion", ctx).map(|(v, _)| v);
        info.skip(NODE_INFO_NOISE);
        info.finish(ctx);
    }
    status.skip(NODE_STATUS_NOISE);
    status.finish(ctx);
}

/// A Pod: `spec` (placement, host network, image, node selector, tolerations) and `status`
/// (phase, address). None (with an error) when it has no spec.
pub(super) fn pod(
    key: (String, String),
    labels: BTreeMap<String, String>,
    owner: Option<(String, String)>,
    spec: Option<Obj>,
    top: &mut Obj,
    spec_at: Span,
    ctx: &mut Ctx,
) -> Option<KubePod> {
    let Some(mut s) = spec else {
        ctx.error(spec_at, format!("Pod {:?} has no spec", key.1));
        return None;
    };
    let (namespace, name) = key;
    let mut p = KubePod {
        namespace,
        name,
        labels,
        owner,
        node_span: s.at.clone(),
        span: spec_at,
        ..KubePod::default()
    };
    if let Some((n, at)) = s.opt_string("nodeName", ctx) {
        p.node = Some(n);
        p.node_span = at;
    }
    p.host_network = s.bool("hostNetwork", ctx).unwrap_or(false);
    p.node_selector = s.string_map("nodeSelector", ctx);
    for t in s.list("tolerations", ctx).unwrap_or_default() {
        let Some(mut o) = Obj::new(t, "a toleration", ctx) else {
            continue;
        };
        let key = o.string("key", ctx).map(|(k, _)| k).unwrap_or_default();
        let operator = o.string("operator", ctx).map(|(k, _)| k).unwrap_or_default();
        o.skip(&["effect", "value", "tolerationSeconds"]);
        o.finish(ctx);
        p.tolerations.push((key, operator));
    }
    for (i, c) in s.list("containers", ctx).unwrap_or_default().iter().enumerate() {
        let Some(mut o) = Obj::new(c, "a container", ctx) else {
            continue;
        };
        if i == 0 {
            p.image = o.string("image", ctx).map(|(v, _)| v).unwrap_or_default();
            o.skip(CONTAINER_DEFAULTS);
            o.finish(ctx);
        } else {
            let at = ctx.span(c);
            o.consume_all();
            ctx.warn(at, "fabsim models a pod's first container only; this one is ignored");
        }
    }
    s.skip(POD_SPEC_DEFAULTS);
    s.finish(ctx);
    if let Some(mut st) = top.obj("status", ctx) {
        p.phase = st.opt_string("phase", ctx).map(|(v, _)| v);
        let mut ips: Vec<(String, Span)> = st.opt_string("podIP", ctx).into_iter().collect();
        for item in st.list("podIPs", ctx).unwrap_or_default() {
            if let Some(mut o) = Obj::new(item, "a pod IP", ctx) {
                ips.extend(o.string("ip", ctx));
                o.finish(ctx);
            }
        }
        for (ip, at) in ips {
            match ip.parse::<Ipv4Addr>() {
                Ok(a) if p.ip.is_none() => p.ip = Some(a),
                Ok(_) => {}
                // The IPv6 address of a dual-stack pod: fabsim's pods are IPv4-only.
                Err(_) if ip.contains(':') => {}
                Err(_) => ctx.error(at, format!("pod IP {ip:?} is not an IPv4 address")),
            }
        }
        st.skip(POD_STATUS_NOISE);
        st.finish(ctx);
    }
    Some(p)
}
