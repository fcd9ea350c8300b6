//! The cluster's objects and the controllers' decisions fabsim models: node podCIDRs in join
//! order (kube-controller-manager's node IPAM), pod names (Deployment / DaemonSet / static),
//! scheduling, and the CNI ADD that gives a started pod its address.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::Ipv4Addr;
use std::sync::LazyLock;

use ipnet::Ipv4Net;

use super::apiserver_cert::ApiserverCert;
use super::cilium::Cilium;
use super::cilium_cluster::is_cilium_pod;
use super::control_plane::ControlPlane;
use super::disruption::Pdb;
use super::dns::PodDns;
use super::drain::DrainNote;
use super::etcd_restore::{EtcdData, EtcdSnapshot};
use super::flannel::Flannel;
use super::host_local::HostLocalStore;
use super::kubelet_config::KubeletConfig;
use super::names;
use super::node_ipam::RangeAllocator;
use super::pod_facts::PodFacts;
use super::realize::Netns;
use super::rollout::{Rollout, StatusUpdate};
use super::services::Service;
use super::taints::{self, Effect, Taint};
use super::termination::Declared;
use crate::calico::install::{Calico, CniIpam};
use crate::model::DeviceId;

/// How the kubelet reports a pod whose CNI ADD failed (the sandbox's error follows).
const SANDBOX_FAILED: &str = "failed to setup network for sandbox";

/// kube-controller-manager's `--node-cidr-mask-size` for IPv4 (kubeadm's default).
const NODE_CIDR_MASK: u8 = 24;

/// The node mask node IPAM cuts `pod_cidr` into: kubeadm's default, or the whole range when
/// it is smaller than one node's.
pub(super) fn node_mask(pod_cidr: Ipv4Net) -> u8 {
    NODE_CIDR_MASK.max(pod_cidr.prefix_len())
}

/// A pod of kube-flannel.yml's DaemonSet.
pub(super) fn is_flannel_pod(pod: &Pod) -> bool {
    pod.namespace == super::flannel::NAMESPACE && pod.owner == Owner::DaemonSet(super::flannel::DAEMONSET.into())
}

#[derive(Clone, Debug)]
pub struct Cluster {
    /// Kubernetes version (`kubeadm init` uses the installed kubeadm's).
    pub version: String,
    /// `--pod-network-cidr` (kubeadm-config `podSubnet`; node IPAM allocates from it unless
    /// kube-controller-manager's manifest says otherwise, `node_ipam_settings`).
    pub pod_cidr: Option<Ipv4Net>,
    /// `--service-cidr` (kubeadm-config `serviceSubnet`, default 10.96.0.0/12; its first address
    /// is the `kubernetes` Service). The apiserver allocates from `service_range()`.
    pub service_cidr: Ipv4Net,
    /// `--control-plane-endpoint` (host:port).
    pub endpoint: String,
    pub created_ms: u64,
    /// Nodes in join order (the control-plane node first).
    pub nodes: Vec<KNode>,
    /// Pods in creation order.
    pub pods: Vec<Pod>,
    /// Facts the scenario pins because they cannot be derived (pod names, placement, the order
    /// of simultaneous CNI calls).
    pub pins: Vec<Pin>,
    pub calico: Option<Calico>,
    /// Each pod's network namespace once it has run (kept for a pod of the same name later).
    pub netns: BTreeMap<(String, String), Netns>,
    /// Each Deployment's pod template (`NAMESPACE/NAME`), once patched.
    pub templates: BTreeMap<String, Template>,
    /// Pins already given to a pod (each names one pod, once).
    pub(super) used_pins: Vec<usize>,
    /// Pods each controller has created so far (their name suffixes).
    pub(super) created: BTreeMap<String, u64>,
    /// kube-controller-manager's node IPAM over its `--cluster-cidr` (none when it allocates no
    /// node CIDRs: `start_node_ipam`).
    pub(super) node_ipam: Option<RangeAllocator>,
    pub(super) sandboxes: u64,
    /// The DaemonSet rolling update in progress, if any.
    pub rollout: Option<Rollout>,
    /// Every DaemonSet status update of the rollouts so far (`kubectl rollout status` reads it).
    pub rollout_log: Vec<StatusUpdate>,
    /// When the containers of deleted calico-node pods' replacements start (virtual time).
    pub calico_starts: Vec<u64>,
    /// Services in creation order (`services`).
    pub services: Vec<Service>,
    /// kubelet's `clusterDNS`, which kubeadm writes into the kubelet configuration at init: the
    /// service range's 10th address (where it puts the kube-dns Service).
    pub cluster_dns: Ipv4Addr,
    /// The static-pod manifests kubeadm wrote and the flags the components run with (none for
    /// a cluster read from a snapshot: its files were not dumped).
    pub control_plane: Option<ControlPlane>,
    /// Nodes whose kubelet is not running (`systemctl stop kubelet`, `kubeadm reset`), by node
    /// name: kept apart from `nodes` because a stopped kubelet outlives its Node object.
    pub kubelets_down: BTreeMap<String, KubeletDown>,
    /// Nodes whose host has `/etc/kubernetes/kubelet.conf` (written when it registered, removed
    /// by `kubeadm reset`): their kubelet can start, and `kubeadm join` refuses to run there.
    pub kubelet_confs: BTreeSet<String>,
    /// Each node's `/var/lib/kubelet/config.yaml` (`kubelet_config`), by node name.
    pub kubelet_configs: BTreeMap<String, KubeletConfig>,
    /// `clusterCIDR` in the `kube-proxy` ConfigMap (kubeadm: the pod subnet).
    pub kube_proxy_config_cidr: Option<Ipv4Net>,
    /// The `clusterCIDR` each node's kube-proxy read from the ConfigMap when its pod started.
    pub kube_proxy_cidrs: BTreeMap<String, Option<Ipv4Net>>,
    /// Each host's host-local IPAM directory (`host_local::STATE_DIR`), by node name, when the
    /// CNI uses host-local: it outlives the Node object until `rm -rf` clears it.
    pub host_local: BTreeMap<String, HostLocalStore>,
    /// `etcdctl snapshot save` files taken so far, with when and what they hold (`etcd_restore`).
    pub etcd_snapshots: Vec<EtcdSnapshot>,
    /// Direct etcd writes and control-plane edits so far, with when (`etcd`): the rollback
    /// check (k8s-cidr-migrations.md §5 C1) compares them with the snapshots.
    pub etcd_writes: Vec<(String, u64)>,
    /// `/etc/kubernetes/pki/apiserver.crt` on the control-plane node (`apiserver_cert`), until
    /// the runbook removes it.
    pub apiserver_cert_file: Option<ApiserverCert>,
    /// When the apiserver's controller next creates a missing `default/kubernetes`
    /// (`kubernetes_service`).
    pub kubernetes_service_due: Option<u64>,
    /// PodDisruptionBudgets in creation order (`disruption`).
    pub pdbs: Vec<Pdb>,
    /// Each node's last `kubectl drain` that did not finish or used `--force` (`drain`), for
    /// the C19 findings; a drain that finishes cleanly clears it.
    pub drains: BTreeMap<String, DrainNote>,
    /// Flannel, when its manifest was applied (`flannel`): the ConfigMap's Network, flanneld
    /// per node, and each host's files and interfaces.
    pub flannel: Option<Flannel>,
    /// Cilium, when its manifest was applied (`cilium`, `cilium_cluster`): cilium-config, the
    /// operator's CiliumNode podCIDRs, the agents, and each host's `/var/run/cilium/state`.
    pub cilium: Option<Cilium>,
    /// etcd's data directories on the control-plane host and which one it runs on, with what
    /// each restore onto them changed (`etcd_restore`).
    pub etcd_data: EtcdData,
}

/// A node whose kubelet stopped: containers keep running, nothing new starts there, and the
/// node lifecycle controller marks the Node NotReady once its status is older than
/// kube-controller-manager's `--node-monitor-grace-period`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletDown {
    pub since_ms: u64,
    /// When the lifecycle controller finds its status too old (`since_ms` + the grace period)
    /// and sets its conditions Unknown.
    pub stale_from_ms: u64,
    /// The Node was Ready when the kubelet stopped (it shows so until `stale_from_ms`).
    pub was_ready: bool,
}

#[derive(Clone, Debug)]
pub struct KNode {
    pub name: String,
    pub device: DeviceId,
    pub internal_ip: Ipv4Addr,
    /// `spec.podCIDR` (immutable once set).
    pub pod_cidr: Option<Ipv4Net>,
    pub control_plane: bool,
    pub joined_ms: u64,
    pub kubelet: String,
    /// `metadata.labels`: kubelet's and kubeadm's, then `kubectl label`'s.
    pub labels: BTreeMap<String, String>,
    /// `spec.taints` set by kubeadm and `kubectl taint` (the lifecycle controller's not-ready
    /// and unschedulable taints are derived, see `Cluster::taints`).
    pub taints: Vec<Taint>,
    /// `spec.unschedulable` (`kubectl cordon`).
    pub unschedulable: bool,
    /// Calico blocks still affine to the node's name when its kubelet registered the Node
    /// again: calico-ipam keeps handing out their addresses (`Cluster::kept_cni_state`).
    pub kept_blocks: Vec<ipnet::IpNet>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A static pod from `/etc/kubernetes/manifests` (named `<component>-<node>`).
    Static,
    DaemonSet(String),
    Deployment(String),
    /// `kubectl run`: a bare pod.
    Bare,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    /// Rejected by its kubelet at admission (`Pod::rejected`): terminal, never started.
    Failed,
}

#[derive(Clone, Debug)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub owner: Owner,
    pub node: Option<String>,
    pub host_network: bool,
    pub image: String,
    pub ip: Option<Ipv4Addr>,
    pub phase: PodPhase,
    pub created_ms: u64,
    pub started_ms: Option<u64>,
    /// Tolerates `node-role.kubernetes.io/control-plane:NoSchedule`.
    pub tolerates_control_plane: bool,
    /// The sandbox the CNI was called for (IPAM handle `k8s-pod-network.<id>`).
    pub container_id: Option<String>,
    /// Why the pod cannot start (an IPAM error, no node fits), as `kubectl describe` shows it.
    pub waiting: Option<String>,
    /// The scheduler's FailedScheduling events, oldest first (a new one when the message
    /// changes).
    pub failed_scheduling: Vec<SchedulerEvent>,
    /// Where the scenario says the scheduler put it (see `Pin`).
    pub pinned_node: Option<String>,
    /// Labels a node must carry to run the pod (`spec.nodeSelector`).
    pub node_selector: BTreeMap<String, String>,
    /// What the scenario injected about its containers (`inject: pods:`), until they restart.
    pub facts: Option<PodFacts>,
    /// The resolv.conf the kubelet gave its sandbox (None: not a ClusterFirst pod, or not
    /// started yet).
    pub dns: Option<PodDns>,
    /// What its manifest declared about its labels and its end (`termination::Declared`).
    pub declared: Declared,
    /// Its `deletionTimestamp`: deleted or evicted at this time, it is Terminating until its
    /// kubelet has stopped it and its finalizers are gone (`termination`).
    pub deleted_ms: Option<u64>,
    /// Why its kubelet refused to admit it (phase Failed).
    pub rejected: Option<Rejection>,
}

/// A pod the kubelet rejected at admission (`Kubelet::rejectPod`: phase Failed, the reason
/// and `Pod was rejected: MESSAGE`, a Warning event with the reason and message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub at_ms: u64,
    /// `OutOfpods`.
    pub reason: String,
    /// `Node didn't have enough resource: pods, requested: 1, used: N, capacity: N`.
    pub message: String,
}

impl Pod {
    /// The labels its manifest declared, else those its controller (or `kubectl run`) gives
    /// it: the ones `-l`, Service and PodDisruptionBudget selectors match.
    pub fn labels(&self) -> Vec<(String, String)> {
        if let Some(declared) = &self.declared.labels {
            return declared.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        }
        let pairs: Vec<(&str, String)> = match &self.owner {
            Owner::Deployment(d) if d == "coredns" => vec![("k8s-app", "kube-dns".into())],
            Owner::Deployment(d) | Owner::DaemonSet(d) => vec![("k8s-app", d.clone())],
            Owner::Bare => vec![("run", self.name.clone())],
            Owner::Static => vec![("component", self.component().into()), ("tier", "control-plane".into())],
        };
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// A static pod's component (`kube-apiserver` of `kube-apiserver-k-master`).
    fn component(&self) -> &str {
        self.name.rsplit_once('-').map_or(self.name.as_str(), |(c, _)| c)
    }

    /// The name of its (only) container: the workload's own name, as in its manifest.
    pub fn container(&self) -> &str {
        match &self.owner {
            Owner::Deployment(d) | Owner::DaemonSet(d) => d,
            Owner::Bare => &self.name,
            Owner::Static => self.component(),
        }
    }

    /// Whether a label selector (`KEY=VALUE` or `KEY` terms, comma-separated) selects it.
    pub fn matches(&self, selector: &str) -> bool {
        let labels = self.labels();
        selector.split(',').all(|term| match term.split_once('=') {
            Some((k, v)) => labels.iter().any(|(lk, lv)| lk == k.trim() && lv == v.trim()),
            None => labels.iter().any(|(lk, _)| lk == term.trim()),
        })
    }
}

/// A `FailedScheduling` event default-scheduler recorded about a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerEvent {
    pub at_ms: u64,
    pub message: String,
}

/// What kube-scheduler counts of the pods bound to a node.
#[derive(Clone, Copy, Debug, Default)]
struct NodeLoad {
    /// Held by the scheduler's cache, which drops terminated (Failed) pods: NodeResourcesFit's
    /// count against the node's maxPods.
    bound: usize,
    /// Not on the host's network: what `best_fit` spreads pods by.
    spread: usize,
}

/// What a Deployment's pods are made from: the template's revision (a new ReplicaSet, hence a
/// new pod-name hash, per change) and the scheduling constraints fabsim models.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template {
    pub revision: u32,
    pub node_selector: BTreeMap<String, String>,
    pub tolerates_control_plane: bool,
}

/// A pinned pod: its name, and the node it ran on when the reference does not say why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
}

/// What a new pod is: everything but its name, which the cluster gives it.
#[derive(Clone, Debug)]
pub struct PodSpec {
    pub namespace: String,
    pub owner: Owner,
    /// The bare pod's name (`kubectl run NAME`) or the static pod's component.
    pub name: Option<String>,
    pub node: Option<String>,
    pub host_network: bool,
    pub image: String,
    pub tolerates_control_plane: bool,
    pub node_selector: BTreeMap<String, String>,
    pub declared: Declared,
}

impl Cluster {
    pub fn new(version: &str, pod_cidr: Option<Ipv4Net>, service_cidr: Ipv4Net, endpoint: String, now: u64) -> Cluster {
        Cluster {
            version: version.to_string(),
            pod_cidr,
            service_cidr,
            endpoint,
            created_ms: now,
            nodes: Vec::new(),
            pods: Vec::new(),
            pins: Vec::new(),
            calico: None,
            netns: BTreeMap::new(),
            templates: BTreeMap::new(),
            used_pins: Vec::new(),
            created: BTreeMap::new(),
            node_ipam: pod_cidr.and_then(|c| RangeAllocator::new(c, node_mask(c)).ok()),
            sandboxes: 0,
            rollout: None,
            rollout_log: Vec::new(),
            calico_starts: Vec::new(),
            services: Vec::new(),
            cluster_dns: super::services::indexed_ip(service_cidr, 10),
            control_plane: None,
            kubelets_down: BTreeMap::new(),
            kubelet_confs: BTreeSet::new(),
            kubelet_configs: BTreeMap::new(),
            kube_proxy_config_cidr: pod_cidr,
            kube_proxy_cidrs: BTreeMap::new(),
            host_local: BTreeMap::new(),
            etcd_snapshots: Vec::new(),
            etcd_writes: Vec::new(),
            apiserver_cert_file: None,
            kubernetes_service_due: None,
            pdbs: Vec::new(),
            drains: BTreeMap::new(),
            flannel: None,
            cilium: None,
            etcd_data: EtcdData::default(),
        }
    }

    pub fn node(&self, name: &str) -> Option<&KNode> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// A node joins: node IPAM gives it the next free podCIDR of `--pod-network-cidr` from its
    /// cursor (`--allocate-node-cidrs` is on when kubeadm has a pod network CIDR); none when the
    /// range is used up (the node's `CIDRNotAvailable`). Its kubelet is configured.
    pub fn add_node(
        &mut self,
        name: &str,
        device: DeviceId,
        internal_ip: Ipv4Addr,
        control_plane: bool,
        kubelet: &str,
        now: u64,
    ) {
        let pod_cidr = self.node_ipam.as_mut().and_then(|a| a.allocate_next().ok());
        let mut labels = BTreeMap::from([
            ("kubernetes.io/arch".to_string(), "amd64".to_string()),
            ("kubernetes.io/hostname".to_string(), name.to_string()),
            ("kubernetes.io/os".to_string(), "linux".to_string()),
        ]);
        if control_plane {
            labels.insert("node-role.kubernetes.io/control-plane".into(), String::new());
            labels.insert(
                "node.kubernetes.io/exclude-from-external-load-balancers".into(),
                String::new(),
            );
        }
        self.kubelet_confs.insert(name.to_string());
        self.ensure_kubelet_config(name);
        self.nodes.push(KNode {
            name: name.to_string(),
            device,
            internal_ip,
            pod_cidr,
            control_plane,
            joined_ms: now,
            kubelet: kubelet.to_string(),
            labels,
            taints: if control_plane {
                vec![Taint::control_plane()]
            } else {
                Vec::new()
            },
            unschedulable: false,
            kept_blocks: Vec::new(),
        });
    }

    /// A node is Ready at `now` once its CNI is initialised (calico-node has started on it;
    /// Flannel's install-cni wrote its configuration), as long as its kubelet runs; a stopped
    /// kubelet's Node keeps its last Ready for the node-monitor grace period.
    pub fn ready(&self, node: &str, now: u64) -> bool {
        self.ready_condition(node, now) == ReadyCondition::True
    }

    /// The Node's Ready condition at `now` (`ready`; Unknown: `status_unknown_since`), from one
    /// look at the node's kubelet.
    fn ready_condition(&self, node: &str, now: u64) -> ReadyCondition {
        match self.kubelets_down.get(node) {
            Some(down) if now >= down.stale_from_ms => ReadyCondition::Unknown,
            Some(down) if down.was_ready => ReadyCondition::True,
            Some(_) => ReadyCondition::False,
            None if self.calico.as_ref().is_some_and(|c| c.is_started(node))
                || self.flannel.as_ref().is_some_and(|f| f.cni_ready(node))
                || self.cilium.as_ref().is_some_and(|c| c.cni_ready(node)) =>
            {
                ReadyCondition::True
            }
            None => ReadyCondition::False,
        }
    }

    /// The stopped kubelet's status is older than the grace period: the Node's conditions are
    /// Unknown (`NodeStatusUnknown`), since when.
    pub fn status_unknown_since(&self, node: &str, now: u64) -> Option<u64> {
        self.kubelets_down
            .get(node)
            .map(|d| d.stale_from_ms)
            .filter(|&t| now >= t)
    }

    /// Whether the node's kubelet runs (starts pods bound to it).
    pub fn kubelet_running(&self, node: &str) -> bool {
        !self.kubelets_down.contains_key(node)
    }

    /// The node's taints as `kubectl describe node` lists them: `spec.taints`, then the ones
    /// the node lifecycle controller adds for a cordoned, unreachable or not-Ready node.
    pub fn taints(&self, node: &KNode, now: u64) -> Vec<String> {
        self.node_taints(node, now).map(Taint::to_string).collect()
    }

    /// `spec.taints`, then the node lifecycle controller's, borrowed: the scheduler reads them
    /// for every node at every attempt.
    fn node_taints<'a>(&self, node: &'a KNode, now: u64) -> impl Iterator<Item = &'a Taint> {
        let [unschedulable, unreachable, not_ready] = &*LIFECYCLE_TAINTS;
        let condition = match self.ready_condition(&node.name, now) {
            ReadyCondition::Unknown => Some(unreachable),
            ReadyCondition::False => Some(not_ready),
            ReadyCondition::True => None,
        };
        node.taints
            .iter()
            .chain(node.unschedulable.then_some(unschedulable))
            .chain(condition)
    }

    pub fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.pods.iter().find(|p| p.namespace == namespace && p.name == name)
    }

    /// Create a pod: named by its controller (or a pin), pending until scheduled and started.
    /// A Deployment's pod follows the Deployment's current template.
    pub fn create_pod(&mut self, mut spec: PodSpec, now: u64) -> String {
        if let Owner::Deployment(d) = &spec.owner {
            if let Some(t) = self.templates.get(&format!("{}/{d}", spec.namespace)) {
                spec.node_selector = t.node_selector.clone();
                spec.tolerates_control_plane = t.tolerates_control_plane;
            }
        }
        let (name, pinned_node) = self.pod_name(&spec);
        self.pods.push(Pod {
            namespace: spec.namespace,
            name: name.clone(),
            owner: spec.owner,
            node: spec.node,
            host_network: spec.host_network,
            image: spec.image,
            ip: None,
            phase: PodPhase::Pending,
            created_ms: now,
            started_ms: None,
            tolerates_control_plane: spec.tolerates_control_plane,
            container_id: None,
            waiting: None,
            failed_scheduling: Vec::new(),
            rejected: None,
            pinned_node,
            node_selector: spec.node_selector,
            facts: None,
            dns: None,
            declared: spec.declared,
            deleted_ms: None,
        });
        name
    }

    /// The pod's name: the static pod's `<component>-<node>`, the bare pod's own, else the
    /// first unused pin its controller's pods match, else a generated one.
    fn pod_name(&mut self, spec: &PodSpec) -> (String, Option<String>) {
        let owner = match (&spec.owner, &spec.name) {
            (Owner::Static, Some(c)) => {
                let node = spec.node.as_deref().unwrap_or("");
                return (format!("{c}-{node}"), None);
            }
            (Owner::Bare, Some(n)) => return (n.clone(), None),
            (Owner::DaemonSet(o), _) | (Owner::Deployment(o), _) => o.clone(),
            (Owner::Bare | Owner::Static, None) => "pod".to_string(),
        };
        let is_ds = matches!(spec.owner, Owner::DaemonSet(_));
        let pin = self.pins.iter().enumerate().find(|(i, pin)| {
            let Some(rest) = pin.name.strip_prefix(&format!("{owner}-")) else {
                return false;
            };
            let shape = if is_ds {
                !rest.contains('-')
            } else {
                rest.matches('-').count() == 1
            };
            let node_ok = !is_ds || pin.node.is_none() || pin.node == spec.node;
            pin.namespace == spec.namespace && shape && node_ok && !self.used_pins.contains(i)
        });
        if let Some((i, pin)) = pin {
            let named = (pin.name.clone(), pin.node.clone());
            self.used_pins.push(i);
            return named;
        }
        let n = self.created.entry(format!("{}/{owner}", spec.namespace)).or_insert(0);
        *n += 1;
        let suffix = names::pod_suffix(&spec.namespace, &owner, *n);
        let name = if is_ds {
            format!("{owner}-{suffix}")
        } else {
            let revision = self
                .templates
                .get(&format!("{}/{owner}", spec.namespace))
                .map_or(1, |t| t.revision);
            format!(
                "{owner}-{}-{suffix}",
                names::template_hash(&spec.namespace, &owner, revision)
            )
        };
        (name, None)
    }

    /// Delete a pod (graceful, as `kubectl delete` and the Eviction API do): it is Terminating
    /// from now, its kubelet stops it and the CNI DEL gives its address back to IPAM
    /// (`termination`), and its Deployment or DaemonSet creates a replacement at once (a
    /// ReplicaSet does not count a pod that is being deleted). Returns false if there is no
    /// such pod.
    pub fn delete_pod(&mut self, namespace: &str, name: &str, now: u64) -> bool {
        self.remove_pod(namespace, name, true, now)
    }

    /// Delete a pod its controller no longer wants (a Deployment scaled down): as
    /// [`Cluster::delete_pod`], without a replacement.
    pub(super) fn scale_down_pod(&mut self, namespace: &str, name: &str, now: u64) -> bool {
        self.remove_pod(namespace, name, false, now)
    }

    fn remove_pod(&mut self, namespace: &str, name: &str, replace: bool, now: u64) -> bool {
        let Some(i) = self
            .pods
            .iter()
            .position(|p| p.namespace == namespace && p.name == name)
        else {
            return false;
        };
        let first = self.pods[i].deleted_ms.is_none();
        let pod = self.pods[i].clone();
        self.pods[i].deleted_ms = Some(pod.deleted_ms.unwrap_or(now));
        self.finish_deletion(namespace, name);
        let daemon = matches!(pod.owner, Owner::DaemonSet(_));
        if replace && first && (daemon || matches!(pod.owner, Owner::Deployment(_))) {
            self.replace(pod, now);
        }
        true
    }

    /// The controller's new pod for `pod`: a DaemonSet's on the same node, a Deployment's
    /// wherever the scheduler puts it.
    pub(super) fn replace(&mut self, pod: Pod, now: u64) {
        let daemon = matches!(pod.owner, Owner::DaemonSet(_));
        let spec = PodSpec {
            namespace: pod.namespace,
            owner: pod.owner,
            name: None,
            node: if daemon { pod.node } else { None },
            host_network: pod.host_network,
            image: pod.image,
            tolerates_control_plane: pod.tolerates_control_plane,
            node_selector: pod.node_selector,
            declared: pod.declared,
        };
        self.create_pod(spec, now);
        self.reconcile(now);
    }

    /// A Deployment's template changed (`kubectl patch deployment`): a new revision, and with
    /// the `Recreate` strategy the old pods go before the new ones are created. Returns false
    /// when the Deployment has no pods (fabsim knows Deployments by their pods).
    pub fn update_template(&mut self, namespace: &str, name: &str, template: Template, now: u64) -> bool {
        let mine = |p: &Pod| p.namespace == namespace && p.owner == Owner::Deployment(name.to_string());
        let old: Vec<Pod> = self.pods.iter().filter(|p| mine(p)).cloned().collect();
        let Some(first) = old.first().cloned() else {
            return false;
        };
        let key = format!("{namespace}/{name}");
        let current = self.templates.get(&key).cloned().unwrap_or(Template {
            revision: 1,
            node_selector: first.node_selector.clone(),
            tolerates_control_plane: first.tolerates_control_plane,
        });
        let next = Template {
            revision: current.revision + 1,
            ..template
        };
        let unchanged = Template {
            revision: current.revision,
            ..next.clone()
        } == current;
        if unchanged {
            return true;
        }
        self.templates.insert(key, next);
        for pod in &old {
            self.release(pod);
        }
        self.pods.retain(|p| !mine(p));
        for pod in old {
            let spec = PodSpec {
                namespace: pod.namespace,
                owner: pod.owner,
                name: None,
                node: None,
                host_network: pod.host_network,
                image: pod.image,
                tolerates_control_plane: false,
                node_selector: BTreeMap::new(),
                declared: pod.declared,
            };
            self.create_pod(spec, now);
        }
        self.reconcile(now);
        true
    }

    /// The node's labels (kubelet's and kubeadm's, then `kubectl label`'s).
    pub fn node_labels(&self, node: &KNode) -> BTreeMap<String, String> {
        node.labels.clone()
    }

    /// The CNI DEL of a pod's sandbox: its address goes back to IPAM.
    pub(super) fn release(&mut self, pod: &Pod) {
        if let (Some(flannel), Some(ip), Some(node)) = (self.flannel.as_mut(), pod.ip, pod.node.as_deref()) {
            flannel.release(node, ip);
            return;
        }
        if let (Some(cilium), Some(ip), Some(node)) = (self.cilium.as_mut(), pod.ip, pod.node.as_deref()) {
            cilium.release(node, ip);
            return;
        }
        let host_local = self
            .calico
            .as_ref()
            .is_some_and(|c| c.cni_ipam == CniIpam::HostLocalPodCidr);
        if host_local {
            if let (Some(ip), Some(store)) = (pod.ip, pod.node.as_ref().and_then(|n| self.host_local.get_mut(n))) {
                store.release(ip);
            }
            return;
        }
        if let (Some(ip), Some(calico)) = (pod.ip, self.calico.as_mut()) {
            // An address IPAM no longer knows (released already) needs no release.
            let _ = calico.release(ip);
        }
    }

    /// A deleted node's podCIDR goes back to node IPAM. (A podCIDR out of its range is only
    /// logged by kube-controller-manager; nothing to release then.)
    pub fn release_pod_cidr(&mut self, node: &KNode) {
        if let (Some(a), Some(cidr)) = (self.node_ipam.as_mut(), node.pod_cidr) {
            let _ = a.release(cidr);
        }
    }

    /// A podCIDR set on a node through the API: node IPAM marks its blocks used (one out of its
    /// range is only logged by kube-controller-manager).
    pub fn occupy_pod_cidr(&mut self, cidr: Ipv4Net) {
        if let Some(a) = self.node_ipam.as_mut() {
            let _ = a.occupy(cidr);
        }
    }

    /// The hosts of `nodes` rebooted: their calico-node must start again, and each of their
    /// pods gets a new sandbox (old address released, a new one assigned when it starts). A
    /// control-plane node's reboot restarts kube-controller-manager, whose node IPAM rebuilds
    /// its bitmap from the nodes' podCIDRs with the cursor back at the start.
    pub fn reboot_nodes(&mut self, nodes: &[String]) {
        if self.nodes.iter().any(|n| n.control_plane && nodes.contains(&n.name)) {
            self.start_node_ipam();
        }
        if let Some(calico) = self.calico.as_mut() {
            for n in nodes {
                calico.stop_node(n);
            }
        }
        if let Some(flannel) = self.flannel.as_mut() {
            for n in nodes {
                flannel.stop(n);
            }
        }
        if let Some(cilium) = self.cilium.as_mut() {
            for n in nodes {
                cilium.reboot(n);
            }
        }
        for i in 0..self.pods.len() {
            let on_node = self.pods[i].node.as_ref().is_some_and(|n| nodes.contains(n));
            if on_node {
                // Its containers start again: what the scenario said about them is history.
                self.pods[i].facts = None;
            }
            if !on_node || self.pods[i].host_network || self.pods[i].phase == PodPhase::Failed {
                continue;
            }
            let pod = self.pods[i].clone();
            self.release(&pod);
            let p = &mut self.pods[i];
            p.ip = None;
            p.container_id = None;
            p.phase = PodPhase::Pending;
        }
    }

    /// Schedule pending pods and start those whose node can run them: pinned pods first, in
    /// pin order (the order their CNI calls ran), then the rest in creation order. A flannel
    /// pod that starts in a pass gives its node a CNI, so the node's pods get a second pass.
    pub fn reconcile(&mut self, now: u64) {
        for i in 0..self.pods.len() {
            let node = self.pods[i].node.as_deref();
            let stopped = self
                .flannel
                .as_ref()
                .zip(node)
                .is_some_and(|(f, n)| !f.is_started(n) && !self.kubelets_down.contains_key(n));
            if stopped && self.pods[i].phase == PodPhase::Running && is_flannel_pod(&self.pods[i]) {
                self.start_flanneld(i);
            }
        }
        self.restart_failed_cilium_agents();
        let started = self.cni_daemons();
        self.reconcile_pass(now);
        if self.cni_daemons() != started {
            self.reconcile_pass(now);
        }
    }

    /// How many CNI daemons (flanneld, cilium-agent) run: one that started in a pass gives its
    /// node a CNI.
    fn cni_daemons(&self) -> usize {
        let flannel = self.flannel.as_ref().map_or(0, |f| f.daemons.len());
        let cilium = self
            .cilium
            .as_ref()
            .map_or(0, |c| c.agents.keys().filter(|n| c.cni_ready(n)).count());
        flannel + cilium
    }

    /// flanneld in the flannel pod `i` starts (`Flannel::start`); when it exits, the pod shows
    /// what the kubelet shows of a crash-looping container.
    fn start_flanneld(&mut self, i: usize) {
        let Some((flannel, node)) = self.flannel.as_mut().zip(self.pods[i].node.clone()) else {
            return;
        };
        let pod_cidr = self.nodes.iter().find(|n| n.name == node).and_then(|n| n.pod_cidr);
        flannel.start(&node, pod_cidr, super::realize::HOST_MTU);
        let failed = match flannel.daemons.get(&node) {
            Some(super::flannel::Flanneld::Failed(log)) => Some(log.clone()),
            _ => None,
        };
        self.show_crash_loop(i, failed);
    }

    /// The pod `i` of a CNI daemon shows what the kubelet shows of a crash-looping container
    /// when its daemon exited with `failed` (its log line), or nothing injected when it runs.
    pub(super) fn show_crash_loop(&mut self, i: usize, failed: Option<String>) {
        let pod = &mut self.pods[i];
        pod.facts = failed.map(|log| PodFacts {
            injected_ms: pod.started_ms.unwrap_or_default(),
            ready: Some("0/1".into()),
            status: Some("CrashLoopBackOff".into()),
            log: Some(format!("{log}\n")),
            crash_loop_since_ms: pod.started_ms,
            ..PodFacts::default()
        });
    }

    /// Flannel's findings (`Flannel::findings`) and C4's: kube-controller-manager's
    /// `--cluster-cidr` must lie inside the ConfigMap's `Network`, or flanneld exits on every
    /// node that gets a podCIDR outside it.
    pub fn flannel_findings(&self) -> Vec<String> {
        let Some(flannel) = self.flannel.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some((cidr, _)) = self.node_ipam_settings().filter(|(c, _)| !flannel.network.contains(c)) {
            out.push(format!(
                "kube-controller-manager allocates podCIDRs from {cidr}, outside Network {} in ConfigMap {}/{}: \
                 flanneld refuses the lease of every node given one outside it (k8s-cidr-migrations.md §5 C4)",
                flannel.network,
                super::flannel::NAMESPACE,
                super::flannel::CONFIGMAP
            ));
        }
        let pod_cidrs = self.nodes.iter().map(|n| (n.name.clone(), n.pod_cidr)).collect();
        out.extend(flannel.findings(&pod_cidrs));
        out
    }

    /// `/run/flannel/subnet.env` on the host of `node`, if flanneld wrote it.
    pub fn flannel_subnet_env(&self, node: &str) -> Option<String> {
        let host = self.flannel.as_ref()?.hosts.get(node)?;
        host.subnet_env.map(|e| e.text())
    }

    fn reconcile_pass(&mut self, now: u64) {
        let order = self.start_order();
        // The pods bound to each node, made at the pass's first admission that counts and kept
        // through it (the scheduler binds some): counting every pod of the cluster for each
        // pod the kubelet admits was quadratic in a cluster declared at once.
        let mut bound: Option<BTreeMap<String, Vec<usize>>> = None;
        for (turn, &i) in order.iter().enumerate() {
            // A Terminating pod is never started again; a rejected one is terminal.
            if self.pods[i].phase != PodPhase::Pending || self.pods[i].deleted_ms.is_some() {
                continue;
            }
            if self.pods[i].node.is_none() {
                match self.schedule(i, now) {
                    Ok(node) => {
                        if let Some(bound) = bound.as_mut() {
                            bound.entry(node.clone()).or_default().push(i);
                        }
                        self.pods[i].node = Some(node);
                    }
                    Err(message) => {
                        let pod = &mut self.pods[i];
                        if pod.failed_scheduling.last().is_none_or(|e| e.message != message) {
                            pod.failed_scheduling.push(SchedulerEvent {
                                at_ms: now,
                                message: message.clone(),
                            });
                        }
                        pod.waiting = Some(message);
                        continue;
                    }
                }
            }
            let Some(node) = self.pods[i].node.clone() else {
                continue;
            };
            if !self.kubelet_running(&node) {
                // Bound, but no kubelet runs there to start it: Pending with no reason shown.
                continue;
            }
            let on_node = match &mut bound {
                Some(b) => b.get(&node),
                None if !critical(&self.pods[i]) => bound.insert(self.bound_pods()).get(&node),
                None => None,
            };
            let on_node = on_node.map_or(&[][..], Vec::as_slice);
            if let Some(rejection) = self.admission(i, &node, on_node, &order[..turn], now) {
                let pod = &mut self.pods[i];
                pod.phase = PodPhase::Failed;
                pod.waiting = None;
                pod.rejected = Some(rejection);
                continue;
            }
            if self.pods[i].host_network {
                self.start(i, now);
                continue;
            }
            if !self.ready(&node, now) {
                self.pods[i].waiting = Some("container runtime network not ready: cni plugin not initialized".into());
                continue;
            }
            self.sandboxes += 1;
            let pod = &self.pods[i];
            let cid = names::container_id(&pod.namespace, &pod.name, self.sandboxes);
            let handle = format!("k8s-pod-network.{cid}");
            // Flannel's and Cilium's CNI: the plugin's address, or its error as the runtime
            // reports it.
            let plugin = match (self.flannel.as_mut(), self.cilium.as_mut()) {
                (Some(flannel), _) => Some(("flannel", flannel.add(&node, &cid))),
                (None, Some(cilium)) => Some(("cilium-cni", cilium.add(&node, &cid))),
                (None, None) => None,
            };
            if let Some((plugin, added)) = plugin {
                match added {
                    Ok(ip) => {
                        self.pods[i].ip = Some(ip);
                        self.pods[i].container_id = Some(cid);
                        self.start(i, now);
                    }
                    Err(e) => {
                        self.pods[i].waiting = Some(format!(
                            "{SANDBOX_FAILED} \"{cid}\": plugin type=\"{plugin}\" failed (add): {e}"
                        ))
                    }
                }
                continue;
            }
            let Some(calico) = self.calico.as_mut() else { continue };
            let assigned = match calico.cni_ipam {
                CniIpam::CalicoIpam => calico.assign(&node, &handle, now).map_err(|e| e.to_string()),
                CniIpam::HostLocalPodCidr => {
                    let pod_cidr = self.nodes.iter().find(|n| n.name == node).and_then(|n| n.pod_cidr);
                    match pod_cidr {
                        None => Err("usePodCidr found but there is no IPv4 CIDR configured".to_string()),
                        Some(cidr) => self.host_local.entry(node.clone()).or_default().allocate(cidr, &cid),
                    }
                }
            };
            match assigned {
                Ok(ip) => {
                    self.pods[i].ip = Some(ip);
                    self.pods[i].container_id = Some(cid);
                    self.start(i, now);
                }
                Err(e) => self.pods[i].waiting = Some(format!("{SANDBOX_FAILED}: {e}")),
            }
        }
    }

    fn start(&mut self, i: usize, now: u64) {
        let dns = self.pods[i]
            .node
            .as_deref()
            .and_then(|node| self.pod_dns(&self.pods[i], node));
        if self.pods[i].owner == Owner::DaemonSet("kube-proxy".into()) {
            if let Some(node) = self.pods[i].node.clone() {
                self.kube_proxy_cidrs.insert(node, self.kube_proxy_config_cidr);
            }
        }
        let pod = &mut self.pods[i];
        pod.dns = dns;
        pod.phase = PodPhase::Running;
        pod.started_ms = Some(now);
        pod.waiting = None;
        if is_flannel_pod(pod) {
            self.start_flanneld(i);
        }
        if is_cilium_pod(&self.pods[i]) {
            self.start_cilium_agent(i);
        }
    }

    fn start_order(&self) -> Vec<usize> {
        let pinned = |p: &Pod| {
            self.pins
                .iter()
                .position(|pin| pin.namespace == p.namespace && pin.name == p.name)
        };
        let mut order: Vec<usize> = (0..self.pods.len()).collect();
        order.sort_by_key(|&i| (pinned(&self.pods[i]).unwrap_or(usize::MAX), i));
        order
    }

    /// kube-scheduler's attempt for pod `i`: a pinned pod's node when it is Ready, else the
    /// best node that passes the filters, else the FitError message. Each node is filtered
    /// once for both the choice and the message: every kubelet registration reconciles, so
    /// the pending pods meet every node once per node that joins. The pods on each node are
    /// counted once per attempt, and only once a node passes the filters before the pod count
    /// (while no node is Ready none does): counting the cluster's pods for each node was
    /// quadratic once a cluster of thousands of nodes became Ready.
    fn schedule(&self, i: usize, now: u64) -> Result<String, String> {
        let pod = &self.pods[i];
        if let Some(pinned) = pod.pinned_node.as_ref().filter(|n| self.ready(n, now)) {
            return Ok(pinned.clone());
        }
        let loads = OnceCell::new();
        let load = |node: &KNode| {
            let loads = loads.get_or_init(|| self.node_loads());
            loads.get(node.name.as_str()).copied().unwrap_or_default()
        };
        let unfit: Vec<Option<Unfit>> = self
            .nodes
            .iter()
            .map(|n| self.unfit_reason(pod, n, || load(n).bound, now))
            .collect();
        match pod.pinned_node {
            None => self.best_fit(pod, &unfit, load).ok_or_else(|| fit_error(&unfit)),
            Some(_) => Err(fit_error(&unfit)),
        }
    }

    /// What the scheduler counts of each node's pods (`NodeLoad`), by node name.
    fn node_loads(&self) -> BTreeMap<&str, NodeLoad> {
        let mut loads: BTreeMap<&str, NodeLoad> = BTreeMap::new();
        for p in &self.pods {
            if let Some(node) = p.node.as_deref() {
                let load = loads.entry(node).or_default();
                load.bound += usize::from(p.phase != PodPhase::Failed);
                load.spread += usize::from(!p.host_network);
            }
        }
        loads
    }

    /// The scheduler's choice for an unpinned pod: among the nodes that pass its filters
    /// (`unfit`, per node: `unfit_reason`), the one with the fewest PreferNoSchedule taints it
    /// does not tolerate, then the fewest pods (`load`), ties by join order. (kube-scheduler's
    /// scores differ in detail and it breaks ties at random; a scenario pins placement where it
    /// matters.)
    fn best_fit(&self, pod: &Pod, unfit: &[Option<Unfit>], load: impl Fn(&KNode) -> NodeLoad) -> Option<String> {
        self.nodes
            .iter()
            .zip(unfit)
            .filter(|(_, why)| why.is_none())
            .map(|(n, _)| n)
            .min_by_key(|n| {
                let preferred_against = n
                    .taints
                    .iter()
                    .filter(|t| t.effect == Effect::PreferNoSchedule && !taints::tolerates(pod, t))
                    .count();
                (preferred_against, load(n).spread)
            })
            .map(|n| n.name.clone())
    }

    /// Why kube-scheduler (v1.28) rejects `node` for `pod`: its filters that fabsim models run
    /// in the default profile's order — NodeUnschedulable, TaintToleration, NodeAffinity (the
    /// nodeSelector) — and a node's status is the first failure's reason
    /// (`pkg/scheduler/framework/plugins/{nodeunschedulable,tainttoleration,nodeaffinity}`), then
    /// NodeResourcesFit's pod count ("Too many pods"; fabsim's pods request no CPU or memory)
    /// against `bound`, the pods already bound there. None when the pod fits. A not-Ready node
    /// fails by its not-ready taint.
    fn unfit_reason<'a>(
        &self,
        pod: &Pod,
        node: &'a KNode,
        bound: impl FnOnce() -> usize,
        now: u64,
    ) -> Option<Unfit<'a>> {
        if node.unschedulable && !taints::tolerates(pod, &LIFECYCLE_TAINTS[0]) {
            return Some(Unfit::Unschedulable);
        }
        let untolerated = self
            .node_taints(node, now)
            .find(|t| t.effect.blocks_scheduling() && !taints::tolerates(pod, t));
        if let Some(t) = untolerated {
            return Some(Unfit::Taint(t));
        }
        if !pod.node_selector.iter().all(|(k, v)| node.labels.get(k) == Some(v)) {
            return Some(Unfit::Selector);
        }
        // NodeResourcesFit: the pods already bound there against the Node's allocatable pods
        // (its kubelet's maxPods).
        if bound() >= self.max_pods(&node.name) as usize {
            return Some(Unfit::TooManyPods);
        }
        None
    }

    /// The pods bound to each node, by index (what `admission` counts).
    fn bound_pods(&self) -> BTreeMap<String, Vec<usize>> {
        let mut bound: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (j, p) in self.pods.iter().enumerate() {
            if let Some(node) = &p.node {
                bound.entry(node.clone()).or_default().push(j);
            }
        }
        bound
    }

    /// The kubelet's admission of pod `i` on `node` (`lifecycle/predicate.go`: the scheduler's
    /// resource fit run again against the pods it admitted before, `admitted_before` in start
    /// order): a pod that bypassed the scheduler with `spec.nodeName` onto a node already at its
    /// maxPods is rejected `OutOfpods`. DaemonSet and static pods are critical: the kubelet
    /// evicts others to admit them, which fabsim does not model, so they are admitted.
    /// `bound`: the pods bound to `node`, among others (`bound_pods`).
    fn admission(
        &self,
        i: usize,
        node: &str,
        bound: &[usize],
        admitted_before: &[usize],
        now: u64,
    ) -> Option<Rejection> {
        if critical(&self.pods[i]) {
            return None;
        }
        let on_node = |p: &Pod| p.node.as_deref() == Some(node) && p.phase != PodPhase::Failed;
        let used = bound
            .iter()
            .map(|&j| (j, &self.pods[j]))
            .filter(|(j, p)| *j != i && on_node(p) && (p.phase == PodPhase::Running || admitted_before.contains(j)))
            .count();
        let capacity = self.max_pods(node) as usize;
        (used >= capacity).then(|| Rejection {
            at_ms: now,
            reason: "OutOfpods".into(),
            message: format!(
                "Node didn't have enough resource: pods, requested: 1, used: {used}, capacity: {capacity}"
            ),
        })
    }

    /// Findings for the pods their kubelet rejected (C24: a node at its maxPods).
    pub fn rejected_findings(&self) -> Vec<String> {
        self.pods
            .iter()
            .filter_map(|p| {
                let r = p.rejected.as_ref()?;
                Some(format!(
                    "pod {}/{} was rejected by the kubelet on {}: {}: {} (spec.nodeName bypasses the scheduler's \
                     \"Too many pods\"; the pod stays Failed)",
                    p.namespace,
                    p.name,
                    p.node.as_deref().unwrap_or(""),
                    r.reason,
                    r.message
                ))
            })
            .collect()
    }

    /// Findings for the pods stuck ContainerCreating because the CNI could not give their
    /// sandbox an address (no Calico pool for the node, no address left: P1-6, P1-7, C11).
    pub fn stuck_sandboxes(&self) -> Vec<String> {
        self.pods
            .iter()
            .filter(|p| p.phase == PodPhase::Pending)
            .filter_map(|p| {
                let why = p.waiting.as_deref().filter(|w| w.starts_with(SANDBOX_FAILED))?;
                let node = p.node.as_deref()?;
                Some(format!(
                    "pod {}/{} on {node} is stuck ContainerCreating: {why}",
                    p.namespace, p.name
                ))
            })
            .collect()
    }

    /// Findings for the pods the scheduler first failed to place at or after `since_ms` and
    /// that are still Pending: each with its latest FailedScheduling message.
    pub fn unschedulable_since(&self, since_ms: u64) -> Vec<String> {
        self.pods
            .iter()
            .filter(|p| p.phase == PodPhase::Pending && p.node.is_none())
            .filter(|p| p.failed_scheduling.first().is_some_and(|e| e.at_ms >= since_ms))
            .filter_map(|p| {
                let last = p.failed_scheduling.last()?;
                Some(format!(
                    "pod {}/{} is Pending: FailedScheduling: {}",
                    p.namespace, p.name, last.message
                ))
            })
            .collect()
    }
}

/// The node lifecycle controller's taints: cordoned, unreachable, not ready.
static LIFECYCLE_TAINTS: LazyLock<[Taint; 3]> =
    LazyLock::new(|| [Taint::unschedulable(), Taint::unreachable(), Taint::not_ready()]);

/// A Node's Ready condition (`Cluster::ready_condition`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadyCondition {
    True,
    False,
    Unknown,
}

/// Why kube-scheduler's filters reject a node (`Cluster::unfit_reason`); its text is the
/// FitError message's.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Unfit<'a> {
    Unschedulable,
    Taint(&'a Taint),
    Selector,
    TooManyPods,
}

impl Unfit<'_> {
    /// Equal, telling a shared taint (the lifecycle ones) by its address before its text.
    fn is(&self, other: &Unfit) -> bool {
        match (self, other) {
            (Unfit::Taint(a), Unfit::Taint(b)) => std::ptr::eq(*a, *b) || a == b,
            _ => self == other,
        }
    }
}

impl fmt::Display for Unfit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::Unschedulable => f.write_str("node(s) were unschedulable"),
            Unfit::Taint(t) => write!(f, "node(s) had untolerated taint {{{}: {}}}", t.key, t.value),
            Unfit::Selector => f.write_str("node(s) didn't match Pod's node affinity/selector"),
            Unfit::TooManyPods => f.write_str("Too many pods"),
        }
    }
}

/// The scheduler's message for a pod no node fits, from each node's `unfit_reason`
/// (`FitError.Error()` in `pkg/scheduler/framework/types.go`, v1.28): the count of each node's
/// reason, the `"N reason"` strings sorted as strings and joined by `, `, each part ended by
/// `.`; then DefaultPreemption's PostFilter message — every rejection here is
/// UnschedulableAndUnresolvable, so preemption cannot help on any node. With no nodes at all
/// the scheduler gives up before filtering (`ErrNoNodesAvailable`).
fn fit_error(unfit: &[Option<Unfit>]) -> String {
    let n = unfit.len();
    if n == 0 {
        return "no nodes available to schedule pods".into();
    }
    // Counted per reason, then per reason's text (what the scheduler counts), each text
    // written once rather than once per node. Neighbouring nodes mostly fail alike (while the
    // CNI is not up, every node by the same not-ready taint): a run of one reason is counted
    // before the map sees it.
    let mut by_reason: BTreeMap<&Unfit, usize> = BTreeMap::new();
    let same = |a: &Option<Unfit>, b: &Option<Unfit>| match (a, b) {
        (Some(a), Some(b)) => a.is(b),
        _ => false,
    };
    for run in unfit.chunk_by(same) {
        if let Some(reason) = &run[0] {
            *by_reason.entry(reason).or_default() += run.len();
        }
    }
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    for (reason, count) in by_reason {
        *histogram.entry(reason.to_string()).or_default() += count;
    }
    let mut reasons: Vec<String> = histogram.iter().map(|(r, c)| format!("{c} {r}")).collect();
    reasons.sort();
    format!(
        "0/{n} nodes are available: {}. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling..",
        reasons.join(", ")
    )
}

/// DaemonSet and static pods: the kubelet admits them whatever its pod count (`admission`).
fn critical(pod: &Pod) -> bool {
    matches!(pod.owner, Owner::DaemonSet(_) | Owner::Static)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        let mut c = Cluster::new(
            "v1.28.15",
            Some("10.66.0.0/16".parse().unwrap()),
            "10.96.0.0/12".parse().unwrap(),
            "10.0.11.1:6443".into(),
            0,
        );
        c.add_node(
            "k-master",
            DeviceId(0),
            "10.0.11.1".parse().unwrap(),
            true,
            "v1.28.15",
            0,
        );
        c.add_node("k-w1", DeviceId(1), "10.1.11.1".parse().unwrap(), false, "v1.28.15", 10);
        c
    }

    fn deployment(name: &str) -> PodSpec {
        PodSpec {
            namespace: "kube-system".into(),
            owner: Owner::Deployment(name.into()),
            name: None,
            node: None,
            host_network: false,
            image: String::new(),
            tolerates_control_plane: false,
            node_selector: BTreeMap::new(),
            declared: Declared::default(),
        }
    }

    #[test]
    fn node_ipam_hands_out_pod_cidrs_in_join_order() {
        let c = cluster();
        let cidrs: Vec<String> = c.nodes.iter().map(|n| n.pod_cidr.unwrap().to_string()).collect();
        assert_eq!(cidrs, ["10.66.0.0/24", "10.66.1.0/24"]);
    }

    #[test]
    fn a_rejoined_node_gets_the_block_after_the_cursor_until_the_controller_restarts() {
        let mut c = cluster();
        c.add_node("k-w2", DeviceId(2), "10.2.22.1".parse().unwrap(), false, "v1.28.15", 20);
        let w1 = c.nodes.remove(1);
        c.release_pod_cidr(&w1);
        c.add_node("k-w1", DeviceId(1), "10.1.11.1".parse().unwrap(), false, "v1.28.15", 30);
        assert_eq!(c.node("k-w1").unwrap().pod_cidr.unwrap().to_string(), "10.66.3.0/24");
        // k-master's reboot restarts kube-controller-manager: the bitmap is rebuilt from the
        // nodes and the cursor starts over, so the gap k-w1 left is handed out next.
        c.reboot_nodes(&["k-master".to_string()]);
        c.add_node("k-w3", DeviceId(3), "10.3.33.1".parse().unwrap(), false, "v1.28.15", 40);
        assert_eq!(c.node("k-w3").unwrap().pod_cidr.unwrap().to_string(), "10.66.1.0/24");
    }

    #[test]
    fn pins_name_pods_once_and_deployments_replace_deleted_pods() {
        let mut c = cluster();
        c.pins = vec![
            Pin {
                namespace: "kube-system".into(),
                name: "coredns-5dd5756b68-mx2x2".into(),
                node: Some("k-w1".into()),
            },
            Pin {
                namespace: "kube-system".into(),
                name: "coredns-5dd5756b68-hjxxk".into(),
                node: None,
            },
        ];
        assert_eq!(c.create_pod(deployment("coredns"), 0), "coredns-5dd5756b68-mx2x2");
        assert!(c.delete_pod("kube-system", "coredns-5dd5756b68-mx2x2", 5));
        // The replacement takes the next pin, never the one already used.
        assert_eq!(c.pods.len(), 1);
        assert_eq!(c.pods[0].name, "coredns-5dd5756b68-hjxxk");
        c.delete_pod("kube-system", "coredns-5dd5756b68-hjxxk", 6);
        let generated = &c.pods[0].name;
        assert!(
            generated.starts_with("coredns-") && generated.len() == "coredns-".len() + 10 + 1 + 5,
            "{generated}"
        );
    }

    #[test]
    fn pending_until_a_node_is_ready_and_never_on_the_control_plane_untolerated() {
        let mut c = cluster();
        c.create_pod(deployment("web"), 0);
        c.reconcile(0);
        assert_eq!(c.pods[0].phase, PodPhase::Pending);
        let message =
            "0/2 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, \
                       1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. \
                       preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..";
        assert_eq!(c.pods[0].waiting.as_deref(), Some(message));
        assert_eq!(c.pods[0].failed_scheduling.len(), 1);
        c.reconcile(5);
        assert_eq!(c.pods[0].failed_scheduling.len(), 1, "the same message is one event");
        let not_ready = "node.kubernetes.io/not-ready:NoSchedule";
        assert_eq!(
            c.taints(&c.nodes[0], 5),
            ["node-role.kubernetes.io/control-plane:NoSchedule", not_ready]
        );
        assert_eq!(c.taints(&c.nodes[1], 5), [not_ready]);
    }

    /// Three Ready workers (calico-node runs on each) with the pods below bound to them, the
    /// `max_pods` their kubelets declare, and a new pending pod, the last.
    fn loaded(max_pods: &[(&str, u32)]) -> Cluster {
        let mut c = cluster();
        c.add_node("k-w2", DeviceId(2), "10.2.22.1".parse().unwrap(), false, "v1.28.15", 20);
        c.add_node("k-w3", DeviceId(3), "10.3.33.1".parse().unwrap(), false, "v1.28.15", 30);
        let mut calico = Calico::new("v3.25.0", BTreeMap::new());
        for n in ["k-w1", "k-w2", "k-w3"] {
            calico.started.push((n.into(), 0));
        }
        c.calico = Some(calico);
        // (node, phase, on the host's network)
        let bound = [
            ("k-w1", PodPhase::Running, false),
            ("k-w1", PodPhase::Failed, false),
            ("k-w2", PodPhase::Running, false),
            ("k-w2", PodPhase::Running, true),
            ("k-w2", PodPhase::Running, true),
            ("k-w3", PodPhase::Running, false),
        ];
        for (node, phase, host_network) in bound {
            let name = c.create_pod(deployment("web"), 0);
            let pod = c.pods.iter_mut().find(|p| p.name == name).unwrap();
            (pod.node, pod.phase, pod.host_network) = (Some(node.into()), phase, host_network);
        }
        for (node, n) in max_pods {
            c.ensure_kubelet_config(node);
            c.declare_max_pods(node, Some(*n));
        }
        c.create_pod(deployment("web"), 0);
        c
    }

    #[test]
    fn the_scheduler_counts_each_nodes_pods_as_its_filters_and_spreading_do() {
        let new = |c: &Cluster| c.schedule(c.pods.len() - 1, 0);
        // Spreading counts pods off the host network, Failed ones too: k-w2 (one) before k-w1
        // (two), and before k-w3 (one) by join order.
        assert_eq!(new(&loaded(&[])), Ok("k-w2".into()));
        // NodeResourcesFit counts host-network pods: k-w2 holds three.
        assert_eq!(new(&loaded(&[("k-w2", 3)])), Ok("k-w3".into()));
        // ... but not Failed ones: k-w1 holds one.
        assert_eq!(
            new(&loaded(&[("k-w2", 3), ("k-w3", 1), ("k-w1", 2)])),
            Ok("k-w1".into())
        );
        let full = loaded(&[("k-w2", 3), ("k-w3", 1), ("k-w1", 1)]);
        let message = "0/4 nodes are available: 1 node(s) had untolerated taint \
                       {node-role.kubernetes.io/control-plane: }, 3 Too many pods. \
                       preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling..";
        assert_eq!(new(&full), Err(message.into()));
    }
}
