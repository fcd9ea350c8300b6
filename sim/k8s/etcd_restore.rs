//! etcd's data as a rollback sees it (k8s-cidr-migrations.md §2.5: "restore the etcd
//! snapshot"): what a snapshot holds, the data directories `etcdctl|etcdutl snapshot restore`
//! writes on the control-plane host, and what happens when etcd comes up on one of them.
//!
//! The one split of `Cluster` into etcd's contents (the API objects) and host state is
//! [`restore_api_objects`]: a snapshot is a clone of the cluster at `snapshot save`, and a
//! restore that takes effect copies exactly those fields back. The restore itself (etcd v3.5's
//! `v3Manager.Restore`, `etcdutl/snapshot/v3_snapshot.go`) only writes a directory; etcd runs on
//! it once its static pod's `--data-dir` and the `etcd-data` hostPath name it (an edit of
//! `/etc/kubernetes/manifests/etcd.yaml`, after which the kubelet restarts etcd). The API
//! objects then jump back; the controllers react as they do to any change they watch: each
//! kubelet kills the pods the API no longer has and starts the ones it has again (new
//! sandboxes), kube-controller-manager's node IPAM releases the podCIDRs of Nodes that are
//! gone and occupies the restored ones. What changed is a finding per object.

use std::collections::BTreeMap;

use super::cluster::{Cluster, Owner, Pod, PodPhase};
use crate::model::{DeviceId, Network};

/// kubeadm's etcd data directory (ClusterConfiguration `etcd.local.dataDir`), where etcd runs
/// until a runbook points it elsewhere.
const KUBEADM_DATA_DIR: &str = "/var/lib/etcd";

/// One `etcdctl snapshot save FILE`: when, and what etcd held then.
#[derive(Clone, Debug)]
pub struct EtcdSnapshot {
    pub file: String,
    pub at_ms: u64,
    /// The cluster at that instant; only its API objects are ever read back
    /// ([`restore_api_objects`]). Its own snapshot and data-directory records are emptied: a
    /// snapshot does not hold the files of other snapshots.
    contents: Box<Cluster>,
}

impl EtcdSnapshot {
    pub(super) fn take(cluster: &Cluster, file: &str, now: u64) -> EtcdSnapshot {
        EtcdSnapshot {
            file: file.to_string(),
            at_ms: now,
            contents: contents_of(cluster),
        }
    }
}

/// What a data directory holds of `cluster`: all of it but the records of snapshot files and
/// data directories, which are files beside it, not in it (and would nest copies).
fn contents_of(cluster: &Cluster) -> Box<Cluster> {
    let mut contents = Box::new(cluster.clone());
    contents.etcd_snapshots.clear();
    contents.etcd_data = EtcdData::default();
    contents
}

/// The etcd member a data directory was bootstrapped with (`NewClusterFromURLsMap`): its
/// peer URLs and the cluster token are what its ID is hashed from (`etcd_member`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pub peer_urls: Vec<String>,
    pub token: String,
}

/// A data directory etcd does not run on now.
#[derive(Clone, Debug)]
struct DataDir {
    contents: Box<Cluster>,
    /// The member its restore wrote (None: kubeadm's own, the member of the manifest's flags).
    member: Option<Member>,
    /// The snapshot file it was restored from (None: a directory etcd ran on before).
    source: Option<String>,
    /// etcd has run on it.
    used: bool,
}

/// etcd coming up on another data directory, and what that changed.
#[derive(Clone, Debug)]
struct Switch {
    dir: String,
    source: Option<String>,
    changes: Vec<String>,
}

/// etcd's data directories on the control-plane host.
#[derive(Clone, Debug, Default)]
pub struct EtcdData {
    /// The host directory etcd runs on (None: kubeadm's [`KUBEADM_DATA_DIR`]).
    in_use: Option<String>,
    /// The member of that directory when a restore wrote it (None: kubeadm's).
    member: Option<Member>,
    /// The directories it does not run on, by host path.
    dirs: BTreeMap<String, DataDir>,
    switches: Vec<Switch>,
    /// The data directory the manifest names when fabsim holds no data for it.
    unknown: Option<Unknown>,
}

/// A data directory etcd would start empty in.
#[derive(Clone, Debug)]
enum Unknown {
    /// A host directory no restore wrote.
    Host(String),
    /// A `--data-dir` no hostPath holds: the container's own filesystem.
    InContainer(String),
}

impl EtcdData {
    /// The host directory etcd runs on.
    pub fn in_use(&self) -> &str {
        self.in_use.as_deref().unwrap_or(KUBEADM_DATA_DIR)
    }

    /// The member etcd runs as when a restore bootstrapped its directory.
    pub(super) fn restored_member(&self) -> Option<&Member> {
        self.member.as_ref()
    }

    /// Whether `dir` exists and holds something (a `snapshot restore` there is refused).
    fn holds(&self, dir: &str) -> bool {
        dir == self.in_use() || self.dirs.contains_key(dir)
    }
}

/// Directory paths as etcd's `filepath.Join` would leave them: no trailing `/`.
pub(super) fn clean_dir(dir: &str) -> &str {
    match dir.trim_end_matches('/') {
        "" => "/",
        d => d,
    }
}

/// `mv …`: moving etcd's manifest out of `/etc/kubernetes/manifests` (the kubelet stops the
/// static pod) or a restored directory over `/var/lib/etcd` is the other way to run etcd on a
/// restore, which fabsim does not model; it says which it does.
pub(super) fn mv_refused(args: &[&str]) -> String {
    format!(
        "mv {}: fabsim moves no files; it runs etcd on a restored data directory when \
         /etc/kubernetes/manifests/etcd.yaml's --data-dir and etcd-data hostPath name it (`sed -i` of the manifest)",
        args.join(" ")
    )
}

/// What a `snapshot restore` asks for.
pub(super) struct Restore<'a> {
    pub file: &'a str,
    pub data_dir: &'a str,
    pub member: Member,
}

impl Cluster {
    /// `v3Manager.Restore`'s checks of the directory and the file, in its order: Ok with the
    /// directory written, or etcd's error text.
    pub(super) fn restore_snapshot(&mut self, r: Restore<'_>) -> Result<(), String> {
        let dir = clean_dir(r.data_dir).to_string();
        if self.etcd_data.holds(&dir) {
            return Err(format!("data-dir {dir:?} not empty or could not be read"));
        }
        // The newest save of that file is what it holds.
        let Some(snap) = self.etcd_snapshots.iter().rev().find(|s| s.file == r.file) else {
            return Err(format!("open {}: no such file or directory", r.file));
        };
        let data = DataDir {
            contents: snap.contents.clone(),
            member: Some(r.member),
            source: Some(snap.file.clone()),
            used: false,
        };
        self.etcd_data.dirs.insert(dir, data);
        Ok(())
    }
}

/// etcd's manifest was written: if its data directory (on the host) is another one now, etcd
/// comes up on that directory's data. Called after every manifest write.
pub(super) fn etcd_manifest_written(net: &mut Network, now: u64, pod_start_ms: u64) {
    let Some(cluster) = net.cluster.as_deref_mut() else {
        return;
    };
    let Some(found) = cluster.control_plane.as_ref().and_then(|cp| cp.etcd_host_data_dir()) else {
        // etcd does not run at all (its manifest is broken): nothing reads any directory.
        return;
    };
    let dir = match found {
        Ok(dir) => dir,
        Err(inside) => {
            cluster.etcd_data.unknown = Some(Unknown::InContainer(inside));
            return;
        }
    };
    if dir == cluster.etcd_data.in_use() {
        cluster.etcd_data.unknown = None;
        return;
    }
    let Some(next) = cluster.etcd_data.dirs.remove(&dir) else {
        cluster.etcd_data.unknown = Some(Unknown::Host(dir));
        return;
    };
    cluster.etcd_data.unknown = None;
    let left = DataDir {
        contents: contents_of(cluster),
        member: cluster.etcd_data.member.take(),
        source: None,
        used: true,
    };
    let old_dir = cluster.etcd_data.in_use().to_string();
    cluster.etcd_data.dirs.insert(old_dir, left);
    cluster.etcd_data.in_use = Some(dir.clone());
    cluster.etcd_data.member = next.member.clone();
    let before = cluster.clone();
    restore_api_objects(cluster, &next.contents);
    let gone = reconcile_restored(cluster, &before, now, pod_start_ms);
    let changes = super::etcd_diff::changes(&before, cluster);
    cluster.etcd_data.switches.push(Switch {
        dir,
        source: next.source,
        changes,
    });
    for dev in gone {
        super::realize::forget_node(net, dev);
    }
}

/// Puts etcd's contents from `data` into `live`: the API objects. This is the one place that
/// says which `Cluster` field is what; the destructuring names every field, so a field added
/// to `Cluster` does not compile until it is placed here.
///
/// Host state, which a restore does not touch, is marked `_`.
fn restore_api_objects(live: &mut Cluster, data: &Cluster) {
    let Cluster {
        // The installed kubeadm/kubelet binaries and when `kubeadm init` ran.
        version: _,
        created_ms: _,
        // kubeadm-config (ClusterConfiguration: podSubnet, serviceSubnet, controlPlaneEndpoint).
        pod_cidr,
        service_cidr,
        endpoint,
        // Node objects.
        nodes,
        // Pod objects: merged with what the kubelets run (`merge_pods`).
        pods,
        // The scenario's pinned facts and which of them were used: not cluster state.
        pins: _,
        used_pins: _,
        // Calico's resources: with the Kubernetes datastore (calico.yaml's `DATASTORE_TYPE`)
        // they are CRDs in etcd — IPPools, BGP configuration, Calico Nodes, IPAM blocks and
        // affinities —; which calico-node runs where and what confd rendered are host state.
        calico,
        // Pod network namespaces, the container runtime's sandbox counter: host state.
        netns: _,
        sandboxes: _,
        // Deployments' pod templates.
        templates,
        // fabsim's stand-in for the random suffixes controllers draw: kept, so a name is never
        // handed out twice.
        created: _,
        // kube-controller-manager's memory: rebuilt from the Nodes it watches
        // (`reconcile_restored`).
        node_ipam: _,
        // A DaemonSet's rolling update: its updated template is in etcd.
        rollout,
        // What `kubectl rollout status` printed so far, when replaced calico-node containers
        // start: history and containers, not objects.
        rollout_log: _,
        calico_starts: _,
        // Services.
        services,
        // kubelet's clusterDNS (its config file), the static-pod manifests, kubelets running or
        // stopped, kubelet.conf and config.yaml files: host files and processes.
        cluster_dns: _,
        control_plane: _,
        kubelets_down: _,
        kubelet_confs: _,
        kubelet_configs: _,
        // The kube-proxy ConfigMap's clusterCIDR.
        kube_proxy_config_cidr,
        // What each running kube-proxy read, host-local IPAM directories: host state.
        kube_proxy_cidrs: _,
        host_local: _,
        // Snapshot files and the runbook's history of writes: on disk, not in etcd.
        etcd_snapshots: _,
        etcd_writes: _,
        // The apiserver's certificate file and its Service controller's next tick.
        apiserver_cert_file: _,
        kubernetes_service_due: _,
        // PodDisruptionBudgets.
        pdbs,
        // kubectl drain's record (client side) and etcd's own directories.
        drains: _,
        etcd_data: _,
        // Flannel: the kube-flannel-cfg ConfigMap's Network and the leases other nodes read
        // from the Nodes' annotations are in etcd; flanneld and each host's files and
        // interfaces are not.
        flannel,
        // Cilium: cilium-config and the CiliumNodes' podCIDRs are in etcd; the agents and each
        // host's /var/run/cilium are not.
        cilium,
    } = data;
    live.pod_cidr = *pod_cidr;
    live.service_cidr = *service_cidr;
    live.endpoint = endpoint.clone();
    live.nodes = nodes.clone();
    live.templates = templates.clone();
    live.rollout = rollout.clone();
    live.services = services.clone();
    live.kube_proxy_config_cidr = *kube_proxy_config_cidr;
    live.pdbs = pdbs.clone();
    if let (Some(live_calico), Some(restored)) = (live.calico.as_mut(), calico) {
        live_calico.datastore = restored.datastore.clone();
        live_calico.ipam = restored.ipam.clone();
        live_calico.created = restored.created.clone();
    }
    if let (Some(live_flannel), Some(restored)) = (live.flannel.as_mut(), flannel) {
        live_flannel.network = restored.network;
        live_flannel.leases = restored.leases.clone();
    }
    if let (Some(live_cilium), Some(restored)) = (live.cilium.as_mut(), cilium) {
        live_cilium.config = restored.config.clone();
        live_cilium.operator.pod_cidrs = restored.operator.pod_cidrs.clone();
        // Its allocator follows the restored CiliumNodes (as a restarted operator's would); a
        // pool list it cannot build was refused when the ConfigMap was applied.
        let _ = live_cilium.restart_operator();
    }
    merge_pods(live, pods);
}

/// The restored Pod objects against what the kubelets run: a pod that is the same object
/// (namespace, name and creationTimestamp — fabsim's stand-in for the UID) keeps its running
/// state, which its kubelet reports; a restored pod that no longer runs has no sandbox (its
/// kubelet starts it anew); a running pod the API no longer has is killed by its kubelet (the
/// CNI DEL releases its address). Mirror pods stay the kubelet's: it recreates them from its
/// static pods.
fn merge_pods(live: &mut Cluster, restored: &[Pod]) {
    let same = |a: &Pod, b: &Pod| a.namespace == b.namespace && a.name == b.name && a.created_ms == b.created_ms;
    let mut pods: Vec<Pod> = Vec::new();
    for r in restored.iter().filter(|p| p.owner != Owner::Static) {
        match live.pods.iter().find(|l| same(l, r)) {
            Some(l) => pods.push(l.clone()),
            None => pods.push(Pod {
                ip: None,
                container_id: None,
                phase: PodPhase::Pending,
                started_ms: None,
                waiting: None,
                dns: None,
                facts: None,
                ..r.clone()
            }),
        }
    }
    let killed: Vec<Pod> = live
        .pods
        .iter()
        .filter(|l| l.owner != Owner::Static && !restored.iter().any(|r| same(l, r)))
        .cloned()
        .collect();
    for pod in &killed {
        live.release(pod);
    }
    let mirrors = live.pods.iter().filter(|p| p.owner == Owner::Static).cloned();
    live.pods = mirrors.chain(pods).collect();
}

/// The controllers after the jump: node IPAM (kube-controller-manager's informer sees Nodes
/// deleted and added), calico-node on restored Nodes whose hosts had none running, the kubelets
/// starting what is bound to them. Returns the hosts of Nodes that are gone, whose Calico
/// dataplane goes with them.
fn reconcile_restored(cluster: &mut Cluster, before: &Cluster, now: u64, pod_start_ms: u64) -> Vec<DeviceId> {
    let gone: Vec<_> = before
        .nodes
        .iter()
        .filter(|b| cluster.node(&b.name).is_none())
        .cloned()
        .collect();
    for node in &gone {
        cluster.release_pod_cidr(node);
        if let Some(calico) = cluster.calico.as_mut() {
            calico.stop_node(&node.name);
        }
    }
    cluster.node_pod_cidrs_rewritten(now);
    let unstarted = cluster
        .calico
        .as_ref()
        .is_some_and(|c| cluster.nodes.iter().any(|n| !c.is_started(&n.name)));
    if unstarted {
        // Their calico-node pods come back Pending: the containers start like any replaced
        // calico-node's.
        cluster.calico_starts.push(now + pod_start_ms);
    }
    cluster.reconcile(now);
    gone.iter().map(|n| n.device).collect()
}

impl Cluster {
    /// The etcd restore findings: a restored directory etcd does not run on (the restore
    /// changed nothing), a directory the manifest names that fabsim has no data for, and each
    /// object a restore that took effect changed.
    pub fn restore_findings(&self) -> Vec<String> {
        let d = &self.etcd_data;
        let mut out = Vec::new();
        for (dir, data) in d.dirs.iter().filter(|(_, data)| !data.used) {
            let Some(file) = &data.source else { continue };
            out.push(format!(
                "etcd snapshot restore wrote {dir} from {file}, but etcd does not run on it (the --data-dir and \
                 etcd-data hostPath of /etc/kubernetes/manifests/etcd.yaml name {}): the restore changed nothing",
                d.in_use()
            ));
        }
        if let Some(unknown) = &d.unknown {
            let dir = match unknown {
                Unknown::Host(dir) => format!("the data directory {dir}, which no snapshot restore wrote"),
                Unknown::InContainer(dir) => {
                    format!("--data-dir={dir}, which no hostPath volume holds (a directory inside etcd's container)")
                }
            };
            out.push(format!(
                "etcd's manifest names {dir}: real etcd would start a new, empty cluster there; fabsim models etcd on \
                 {KUBEADM_DATA_DIR} and on restored directories and keeps the data of {}",
                d.in_use()
            ));
        }
        for s in &d.switches {
            let from = match &s.source {
                Some(file) => format!("restored from {file}"),
                None => "where it ran before".to_string(),
            };
            out.push(format!(
                "etcd came up on {} ({from}): the API objects are etcd's there, host state (static-pod manifests, \
                 kubelet configuration, CNI state, certificates) stays; {} object change(s)",
                s.dir,
                s.changes.len()
            ));
            out.extend(s.changes.iter().map(|c| format!("etcd restore onto {}: {c}", s.dir)));
        }
        out
    }
}
