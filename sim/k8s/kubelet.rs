//! The kubelet's life on a node, as a runbook drives it: `systemctl stop|start|restart
//! kubelet`, `kubeadm reset`, and the registration that follows (k8s-cidr-migrations.md §1.4
//! step 4, §2.4 step 4).
//!
//! A stopped kubelet leaves its containers running but starts nothing; the Node keeps the
//! Ready it last posted for the node-monitor grace period, then its status is Unknown. When the kubelet starts again and
//! its Node object is gone (`kubectl delete node`), it creates it anew and node IPAM gives it
//! a podCIDR from kube-controller-manager's current `--cluster-cidr`; a Node that still
//! exists keeps its podCIDR (immutable). Calico's state for the node (its block affinities)
//! lives in the datastore, not in the Node: unless it was cleared, the node's pods keep their
//! addresses from the old blocks (`Cluster::kept_cni_state`).

use super::cluster::{Cluster, KubeletDown, Owner};
use super::command::{
    create_mirror_pods, internal_ip, kubelet_of, node_name, start_calico_nodes, system_pod, CommandOutcome, Context,
};
use super::flannel;
use super::host_local;
use crate::engine::State;
use crate::model::{DeviceId, Network};

/// `systemctl stop|start|restart kubelet[.service]`. Only the kubelet is modelled: other units
/// (containerd, the network) are an error naming it.
pub(super) fn systemctl(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    args: &[&str],
    ctx: &Context<'_>,
) -> Result<CommandOutcome, String> {
    let (verb, units) = args.split_first().ok_or("systemctl: expected VERB UNIT")?;
    let units: Vec<&str> = units.iter().copied().filter(|a| !a.starts_with('-')).collect();
    if units.is_empty() {
        return Err(format!("systemctl {verb}: name the unit (fabsim models kubelet)"));
    }
    if let Some(other) = units.iter().find(|u| !matches!(**u, "kubelet" | "kubelet.service")) {
        return Err(format!(
            "systemctl {verb} {other}: fabsim models the kubelet unit only (stop, start, restart); \
             the container runtime and the host's network services are not modelled"
        ));
    }
    kubelet_of(net, dev)?;
    let node = node_name(net, dev);
    let Some(cluster) = net.cluster.as_deref_mut() else {
        // Not joined yet: the kubelet crash-loops without a configuration either way.
        return Ok(CommandOutcome::ok(""));
    };
    match *verb {
        "stop" => {
            stop(cluster, &node, ctx);
            Ok(CommandOutcome::ok(""))
        }
        "start" | "restart" => {
            // Without /etc/kubernetes/kubelet.conf (never joined, or reset) the kubelet exits
            // at start and systemd keeps restarting it; only `kubeadm join` configures it. A
            // configured kubelet registers: its Node again if it was deleted meanwhile (a
            // restart of a running one too), else nothing the cluster sees changes.
            if cluster.kubelet_confs.contains(&node) {
                // A (re)started kubelet reads /var/lib/kubelet/config.yaml; `start` of a
                // running unit does nothing. A file it cannot use makes it exit: systemd keeps
                // restarting it, the node is down as with `systemctl stop`.
                let reads = *verb == "restart" || !cluster.kubelet_running(&node);
                if reads && cluster.load_kubelet_config(&node).is_err() {
                    stop(cluster, &node, ctx);
                    return Ok(CommandOutcome::ok(""));
                }
                register(net, st, dev, ctx.now)?;
            }
            Ok(CommandOutcome::ok(""))
        }
        _ => Err(format!(
            "systemctl {verb} kubelet: fabsim runs systemctl stop|start|restart kubelet"
        )),
    }
}

/// The kubelet on `node` stops at `ctx.now` (stopping it again changes nothing).
fn stop(cluster: &mut Cluster, node: &str, ctx: &Context<'_>) {
    let was_ready = cluster.ready(node, ctx.now);
    cluster.kubelets_down.entry(node.to_string()).or_insert(KubeletDown {
        since_ms: ctx.now,
        stale_from_ms: ctx.now + ctx.node_monitor_grace_ms,
        was_ready,
    });
}

/// The kubelet on `dev` runs and registers its Node: creates it when it is missing (node
/// IPAM's next podCIDR, kube-proxy's and calico-node's DaemonSet pods), else reports to the
/// existing one. Then calico-node starts there if it is not running and pending pods start.
pub(super) fn register(net: &mut Network, st: &State, dev: DeviceId, now: u64) -> Result<(), String> {
    let kubelet = kubelet_of(net, dev)?;
    let node = node_name(net, dev);
    let ip = internal_ip(net, st, dev)?;
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    cluster.kubelets_down.remove(&node);
    cluster.kubelet_back(&node);
    cluster.ensure_kubelet_config(&node);
    cluster.declare_max_pods(&node, kubelet.max_pods);
    if cluster.node(&node).is_none() {
        // kubeadm's role label and taint are not set again (only `kubeadm init|join` marks a
        // control-plane node), but the kubelet of the control-plane host creates the static
        // pods' mirror pods for the new Node.
        cluster.add_node(&node, dev, ip, false, &kubelet.version, now);
        if cluster.control_plane.as_ref().is_some_and(|cp| cp.device == dev) {
            create_mirror_pods(cluster, &node, now);
        }
        let kept = cluster.affine_blocks(&node);
        if let Some(n) = cluster.nodes.iter_mut().find(|n| n.name == node) {
            n.kept_blocks = kept;
        }
        cluster.create_pod(
            system_pod(Owner::DaemonSet("kube-proxy".into()), None, Some(&node), true),
            now,
        );
        if cluster.calico.is_some() {
            cluster.create_pod(
                system_pod(Owner::DaemonSet("calico-node".into()), None, Some(&node), true),
                now,
            );
        }
        if cluster.flannel.is_some() {
            cluster.create_pod(super::command::flannel_pod(&node), now);
        }
        if cluster.cilium.is_some() {
            cluster.create_pod(super::cilium_cluster::cilium_pod(&node), now);
        }
    }
    start_calico_nodes(net, st, now)?;
    if let Some(c) = net.cluster.as_mut() {
        c.reconcile(now);
    }
    Ok(())
}

/// The host's CNI files a runbook clears: the plugin configuration (`/etc/cni/net.d`, which
/// Calico's install-cni writes when calico-node's pod starts), the plugins' state
/// (`/var/lib/cni`: for Calico only the cached results; its IPAM is in the datastore) and the
/// Cilium agent's state (`/var/run/cilium`, §2.4 step 4).
const CNI_DIRS: [&str; 3] = ["/etc/cni/net.d", "/var/lib/cni", super::cilium::STATE_DIR];

/// `rm -rf` of the CNI files (`/etc/cni/net.d[/*]`, `/var/lib/cni[/…]`) on a host whose kubelet
/// is stopped and whose calico-node will start afresh: its Node deleted (seed 000's order) or
/// the host reset (§2.4). Nothing that outlives it changes — calico-node's install-cni
/// rewrites the configuration when its pod starts again, and Calico's block affinities stay
/// (`kept_cni_state`). At any other time removing the configuration would take the node's CNI
/// away under a running calico-node, which fabsim does not model: that is an error saying so.
pub(super) fn rm_cni_files(net: &mut Network, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    let (flags, paths): (Vec<&str>, Vec<&str>) = args.iter().partition(|a| a.starts_with('-'));
    let recursive = flags.iter().any(|f| match f.strip_prefix("--") {
        Some(long) => long == "recursive",
        None => f.contains(['r', 'R']),
    });
    let under_cni = |p: &str| {
        let p = p.trim_end_matches('*').trim_end_matches('/');
        CNI_DIRS.iter().any(|d| p == *d || p.starts_with(&format!("{d}/")))
    };
    if paths.is_empty() || !recursive || !paths.iter().all(|p| under_cni(p)) {
        return Err(format!(
            "rm {}: fabsim models `rm -rf` of the CNI files ({}) only",
            args.join(" "),
            CNI_DIRS.join(", ")
        ));
    }
    let node = node_name(net, dev);
    let allowed = net
        .cluster
        .as_deref()
        .is_none_or(|c| !c.kubelet_running(&node) && (!c.kubelet_confs.contains(&node) || c.node(&node).is_none()));
    if !allowed {
        return Err(format!(
            "rm {}: fabsim clears the CNI files of a node whose kubelet is stopped and whose Node is deleted \
             or which kubeadm reset (k8s-cidr-migrations.md §1.4 step 4, §2.4 step 4); on {node} calico-node \
             would lose its configuration while running",
            args.join(" ")
        ));
    }
    // A directory's state goes with it, anything above it or anything in it.
    let clears = |dir: &str| {
        paths.iter().any(|p| {
            let p = p.trim_end_matches('*').trim_end_matches('/');
            dir == p || dir.starts_with(&format!("{p}/")) || p.starts_with(&format!("{dir}/"))
        })
    };
    if let Some(cluster) = net.cluster.as_deref_mut().filter(|_| clears(host_local::STATE_DIR)) {
        cluster.host_local.remove(&node);
    }
    let clears_cilium = clears(&format!("{}/state", super::cilium::STATE_DIR));
    if let Some(cilium) = net
        .cluster
        .as_deref_mut()
        .and_then(|c| c.cilium.as_mut())
        .filter(|_| clears_cilium)
    {
        cilium.clear_state(&node);
    }
    // Flannel's: host-local's `cbr0` directory, and the configuration install-cni wrote.
    let (clears_cbr0, clears_conf) = (clears(flannel::STATE_DIR), clears(CNI_DIRS[0]));
    if let Some(host) = net
        .cluster
        .as_deref_mut()
        .and_then(|c| c.flannel.as_mut())
        .and_then(|f| f.hosts.get_mut(&node))
    {
        if clears_cbr0 {
            host.host_local = Default::default();
        }
        if clears_conf {
            host.cni_conf = false;
        }
    }
    Ok(CommandOutcome::ok(""))
}

/// kubeadm v1.28's closing notes (cmd/kubeadm/app/cmd/reset.go): what reset leaves behind.
const RESET_NOTES: &str =
    "\nThe reset process does not clean CNI configuration. To do so, you must remove /etc/cni/net.d\n\
\n\
The reset process does not reset or clean up iptables rules or IPVS tables.\n\
If you wish to reset iptables, you must do so manually by using the \"iptables\" command.\n\
\n\
If your cluster was setup to utilize IPVS, run ipvsadm --clear (or similar)\n\
to reset your system's IPVS tables.\n\
\n\
The reset process does not clean your kubeconfig files and you must remove them manually.\n\
Please, check the contents of the $HOME/.kube/config file.\n";

/// `kubeadm reset [-f|--force]` on a worker: the kubelet stops, its configuration and the
/// node's containers go (kubeadm removes them through the CRI, so the pods' sandboxes get
/// their CNI DEL and calico-node stops). The Node object stays (nothing deletes it: §2.4's
/// gap) and so does the CNI state: `/etc/cni/net.d` and Calico's IPAM for the node. Without
/// `-f` kubeadm asks for confirmation; the answer is the step's `stdin:`.
pub(super) fn kubeadm_reset(
    net: &mut Network,
    dev: DeviceId,
    args: &[&str],
    ctx: &Context<'_>,
) -> Result<CommandOutcome, String> {
    if let Some(unknown) = args.iter().find(|a| !matches!(**a, "-f" | "--force")) {
        return Err(format!(
            "kubeadm reset {unknown}: fabsim models kubeadm reset [-f|--force]"
        ));
    }
    kubelet_of(net, dev)?;
    let node = node_name(net, dev);
    let mut out = String::new();
    if args.is_empty() {
        out += "[reset] WARNING: Changes made to this host by 'kubeadm init' or 'kubeadm join' will be reverted.\n\
                [reset] Are you sure you want to proceed? [y/N]: ";
        let answer = ctx.stdin.and_then(|s| s.lines().next()).unwrap_or("").trim();
        out += answer;
        out += "\n";
        if !matches!(answer, "y" | "Y") {
            return Ok(CommandOutcome::failed(
                out + "error execution phase preflight: won't proceed; the user didn't answer (Y|y) in order to continue\n\
                       To see the stack trace of this error execute with --v=5 or higher\n",
            ));
        }
    }
    if let Some(cluster) = net.cluster.as_deref_mut() {
        if cluster.node(&node).is_some_and(|n| n.control_plane) {
            return Err(format!(
                "kubeadm reset on {node}: fabsim resets worker nodes; resetting the control-plane node ends the cluster"
            ));
        }
        stop(cluster, &node, ctx);
        cluster.kubelet_confs.remove(&node);
        cluster.kubelet_configs.remove(&node);
        cluster.reboot_nodes(std::slice::from_ref(&node));
    }
    out += "[preflight] Running pre-flight checks\n\
            [reset] Stopping the kubelet service\n\
            [reset] Unmounting mounted directories in \"/var/lib/kubelet\"\n\
            [reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]\n\
            [reset] Deleting files: [/etc/kubernetes/admin.conf /etc/kubernetes/kubelet.conf \
            /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/controller-manager.conf /etc/kubernetes/scheduler.conf]\n";
    Ok(CommandOutcome::ok(out + RESET_NOTES))
}

impl Cluster {
    /// The Calico blocks affine to `node` (by name: a Node deleted and registered again is
    /// the same Calico node to IPAM).
    fn affine_blocks(&self, node: &str) -> Vec<ipnet::IpNet> {
        self.calico.as_ref().map_or_else(Vec::new, |c| {
            c.datastore
                .block_affinities
                .values()
                .filter(|a| a.node == node && !a.deleted)
                .map(|a| a.cidr)
                .collect()
        })
    }

    /// Findings for nodes registered again without their CNI state cleared: Calico still has
    /// their old block affinities, so calico-ipam gives their pods addresses from the old
    /// range whatever podCIDR node IPAM gave the new Node (issue #7: "a node that rejoins
    /// without clearing its CNI state keeps the old range").
    pub fn kept_cni_state(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let current = self.affine_blocks(&n.name);
                let kept: Vec<String> = n
                    .kept_blocks
                    .iter()
                    .filter(|b| current.contains(b))
                    .map(ToString::to_string)
                    .collect();
                if kept.is_empty() {
                    return None;
                }
                let pod_cidr = n.pod_cidr.map_or_else(|| "no podCIDR".to_string(), |c| format!("podCIDR {c}"));
                Some(format!(
                    "node {} registered again with {pod_cidr} but without its CNI state cleared: Calico still \
                     has its block affinities {} from before, so its pods get addresses from the old range \
                     (calico-ipam allocates from the node's affine blocks in Calico's IPPools, not from \
                     spec.podCIDR; removing /etc/cni/net.d or /var/lib/cni does not clear them): delete them \
                     (kubectl delete blockaffinities NAME) before the kubelet starts (k8s-cidr-migrations.md §1.4 step 4)",
                    n.name,
                    kept.join(", ")
                ))
            })
            .collect()
    }
}
