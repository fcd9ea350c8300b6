//! Kubernetes as fabsim models it: a kubeadm cluster on the topology's `k8s-node` hosts — its
//! nodes (join order, podCIDR, taints, readiness), its pods (owner, placement, address) and the
//! CNI that gives pods their network (Calico, `calico::install`).
//!
//! - `command` runs the runbook's lines (`kubeadm init|join`, `kubectl apply|run|delete`,
//!   `sysctl -w`) against the cluster;
//! - `realize` keeps the network model in line with it: each pod becomes a network namespace
//!   (a device) joined to its node by a `cali…` veth, each node gets `tunl0` and the BIRD
//!   configuration confd renders for it;
//! - `kubelet` runs the kubelet's life on a node (`systemctl stop|start|restart kubelet`,
//!   `kubeadm reset`) and the Node's registration when it starts;
//! - `node_ops` runs node maintenance (`kubectl cordon|uncordon|label|taint`, `kubectl delete
//!   node|pod`), `taints` holds taints and the tolerations fabsim knows;
//! - `drain` is `kubectl drain` (filters, evictions retried in virtual time), `disruption`
//!   PodDisruptionBudgets (manifests, the controller's status, the Eviction API's verdict),
//!   `termination` how a pod ends (Terminating, finalizers, `kubectl patch pod`, C19);
//! - `pod_facts` holds what a scenario injects about a pod's containers (readiness, restarts,
//!   logs, events) until the pod is replaced or restarted;
//! - `rollout` runs a DaemonSet's rolling update over virtual time;
//! - `names` generates the names controllers give pods;
//! - `services` holds Services: ClusterIP allocation (the apiserver's ipallocator), Endpoints
//!   and kube-proxy's rules on each node;
//! - `observed` builds a cluster from a snapshot's `kubectl`/`calicoctl` dumps;
//! - `node_ipam` is kube-controller-manager's range allocator (podCIDRs: bitmap and cursor);
//! - `manifests` writes the static-pod manifests of `kubeadm init`, `control_plane` runs the
//!   components with their flags (edits restart them: `sed -i`, `sed` its `s` command);
//! - `address_plan` checks the pod address plan after every step (overlapping podCIDRs, pods
//!   outside their podCIDR, node IPAM's bitmap and capacity);
//! - `host_local` is the host-local IPAM plugin on a node (Calico's CNI with `usePodCidr`: pod
//!   addresses from the Node's podCIDR);
//! - `etcd` is etcd as the runbook touches it: `etcdctl snapshot save|restore`, `etcdutl
//!   snapshot restore`, `etcdctl member list|endpoint health`, etcdhelper's direct rewrite of
//!   the Nodes' podCIDRs, and the rollback check; `etcd_restore` what a snapshot holds and
//!   what etcd coming up on a restored data directory changes (`etcd_diff` says it object by
//!   object), `etcd_member` the member and its health as etcdctl prints them;
//! - `kubeadm_config` is the kubeadm-config ConfigMap (the ranges `kubeadm init` was given);
//! - `kubelet_config` is each node's `/var/lib/kubelet/config.yaml` (clusterDNS), `dns` the
//!   pods' resolv.conf, CoreDNS's answers and the DNS findings, `kube_proxy_config` the
//!   `kube-proxy` ConfigMap's `clusterCIDR` and the wrong-source-IP finding;
//! - `apiserver_cert` is the apiserver's serving certificate (its SANs, `kubeadm init phase
//!   certs apiserver`), `kubernetes_service` the apiserver's controller of `default/kubernetes`
//!   and the findings of both (a Service moved to a range its certificate does not cover);
//! - `service_reach` probes every Service's ClusterIP from each node and its node ports on each
//!   node after every step (the Services that do not answer, where, and why).

mod address_plan;
mod apiserver_cert;
mod calico_datastore;
mod cilium;
mod cilium_cluster;
mod cluster;
mod command;
mod control_plane;
mod deployment_cmd;
mod disruption;
mod dns;
mod drain;
mod etcd;
mod etcd_diff;
mod etcd_member;
mod etcd_restore;
mod external_overlap;
mod flannel;
mod flannel_realize;
mod host_local;
pub(crate) mod ip_cmd;
mod kube_proxy_config;
mod kubeadm_config;
mod kubelet;
mod kubelet_config;
mod kubernetes_service;
mod manifests;
mod names;
mod node_ipam;
mod node_ops;
mod observed;
mod pod_facts;
mod realize;
mod rollout;
mod sed;
mod service_cmd;
mod service_reach;
mod services;
mod taints;
mod termination;

pub use cilium::{
    Agent as CiliumAgent, Cilium, Discarded as CiliumDiscarded, CONFIGMAP as CILIUM_CONFIGMAP,
    DATAPATH_UNMODELLED as CILIUM_DATAPATH_UNMODELLED,
};
pub use cluster::{Cluster, KNode, Owner, Pin, Pod, PodPhase, Rejection};
pub use command::{
    bare_pod, hold_allocations, init_cluster, install_calico, is_change, join_cluster, restart_nodes, run_line,
    start_calico_nodes, CommandOutcome, Context, Follow, InitOptions,
};
pub use control_plane::{is_manifest_path, write_manifests, ControlPlane};
pub use disruption::{IntOrPercent, Pdb, PdbStatus};
pub use dns::{
    dns_findings, query as dns_query, resolve as resolve_name, Answer as DnsAnswer, PodDns, Reached as DnsReached,
};
pub use drain::DrainNote;
pub use etcd::etcdctl_read;
pub use etcd_restore::{EtcdData, EtcdSnapshot};
pub use flannel::{Flannel, Flanneld, SUBNET_ENV as FLANNEL_SUBNET_ENV};
pub use kube_proxy_config::wrong_source_findings;
pub use kubeadm_config::kubeadm_config;
pub use kubelet_config::KUBELET_CONFIG_PATH;
pub use names::{netns_name, veth_name};
pub use observed::{adopt as adopt_observed, Dump, CALICO_KINDS, K8S_KINDS};
pub use pod_facts::{crash_loop_restarts, inject as inject_pod_facts, FactsFor, PodEvent, PodFacts, PodTarget};
pub use realize::{realize, Netns};
pub use rollout::{
    in_progress as rollout_in_progress, next_due, run_due, status_lines, stuck as rollout_stuck, StatusUpdate,
};
pub use service_reach::service_findings;
pub use services::{AllocError, Service, ServicePort, ServiceType, DEFAULT_SERVICE_CIDR};
pub use termination::Declared;
