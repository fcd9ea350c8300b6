//! The control plane as its static pods run it: the manifests in `/etc/kubernetes/manifests/` on
//! the control-plane node are what kube-apiserver and kube-controller-manager start with, and
//! their flags — not kubeadm's `kubeadm-config` ConfigMap (`Cluster::pod_cidr`/`service_cidr`)
//! — are what the components do:
//!
//! - kube-apiserver's `--service-cluster-ip-range`: the range ClusterIPs are allocated from and
//!   the repair loop checks (`ClusterIPOutOfRange`);
//! - kube-controller-manager's `--allocate-node-cidrs`, `--cluster-cidr` and
//!   `--node-cidr-mask-size`: node IPAM, rebuilt from the Nodes' podCIDRs each time it starts
//!   (k8s-cidr-migrations.md §1.7; a podCIDR outside the new cluster CIDR stops node IPAM);
//!   its `--service-cluster-ip-range` allocates nothing (§2.2 note), so a value that differs
//!   from the apiserver's is only reported.
//!
//! An edit to a manifest (`sed -i`, or a scenario step's `files:`) makes the kubelet restart that
//! static pod: the component is down for the scenario's `timing: static_pod_restart`, then runs
//! with the new flags — or crash-loops when a flag it needs is not a CIDR. kubeadm-config keeps
//! the values of `kubeadm init`; the difference is a finding (§2.4's gap).

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::cluster::{node_mask, Cluster};
use super::command::{CommandOutcome, Context};
use super::manifests::{self, Component, KubeadmValues};
use super::node_ipam::RangeAllocator;
use super::pod_facts::PodFacts;
use super::sed;
use crate::model::{DeviceId, Network};

/// Where kubeadm writes the manifests (kubelet's `staticPodPath`).
const MANIFEST_DIR: &str = "/etc/kubernetes/manifests/";

/// kube-apiserver's default `--service-cluster-ip-range` when the flag is absent
/// (`kubeoptions.DefaultServiceIPCIDR`).
const APISERVER_DEFAULT_RANGE: Ipv4Net = match Ipv4Net::new(Ipv4Addr::new(10, 0, 0, 0), 24) {
    Ok(n) => n,
    Err(_) => panic!("a valid prefix length"),
};

#[derive(Clone, Debug)]
pub struct ControlPlane {
    /// The control-plane node's host (the manifests are files there).
    pub device: DeviceId,
    pub node: String,
    pods: Vec<StaticPod>,
}

#[derive(Clone, Debug)]
struct StaticPod {
    component: Component,
    /// The file as it is on disk.
    text: String,
    /// The flags the running container started with, or why it cannot run.
    running: Result<Flags, String>,
    /// Until when (virtual time) the kubelet is restarting it after the file changed.
    restarting_until: u64,
}

/// A container command's `--name=value` flags, in order.
#[derive(Clone, Debug, Default)]
struct Flags(Vec<(String, String)>);

impl Flags {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The flag's (first, IPv4) CIDR, if it is set: `Err` with the text when it is not one.
    /// Like Go's `net.ParseCIDR`, host bits are allowed and dropped.
    fn parse_cidr(&self, name: &str) -> Option<Result<Ipv4Net, &str>> {
        let v = self.get(name)?;
        let first = v.split(',').next().unwrap_or(v);
        Some(first.parse::<Ipv4Net>().map(|n| n.trunc()).map_err(|_| first))
    }

    fn cidr(&self, name: &str) -> Option<Ipv4Net> {
        self.parse_cidr(name)?.ok()
    }
}

/// The flags of the manifest's first container, or why the kubelet cannot run it.
fn read_flags(text: &str) -> Result<Flags, String> {
    let doc: serde_json::Value =
        serde_saphyr::from_str(text).map_err(|e| format!("kubelet could not read the manifest: {e}"))?;
    let command = doc
        .pointer("/spec/containers/0/command")
        .and_then(|c| c.as_array())
        .ok_or("kubelet could not read the manifest: spec.containers[0].command is missing")?;
    Ok(Flags(
        command
            .iter()
            .filter_map(|a| a.as_str()?.strip_prefix("--"))
            .map(|a| match a.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (a.to_string(), "true".to_string()),
            })
            .collect(),
    ))
}

/// What the component does with its flags when it starts: the error it exits with, if any.
///
/// - kube-apiserver: `getServiceIPAndRanges` (`service-cluster-ip-range[0] is not a valid
///   cidr`; `controlplane.ServiceIPRange`: fewer than 8 addresses);
/// - kube-controller-manager: `--node-cidr-mask-size` is an int32 flag, so a non-number stops
///   flag parsing (pflag's text); with `--allocate-node-cidrs`, `startNodeIpamController`'s
///   `processCIDRs` → `netutils.ParseCIDRs` fails and `Run` exits (`error starting
///   controllers: …`). A `--service-cluster-ip-range` it cannot parse is only logged: node IPAM
///   then filters nothing.
fn check(component: Component, flags: &Flags) -> Result<(), String> {
    match component {
        Component::ApiServer => match flags.parse_cidr("service-cluster-ip-range") {
            Some(Err(_)) => Err("service-cluster-ip-range[0] is not a valid cidr".into()),
            Some(Ok(n)) if n.prefix_len() > 29 => Err("error determining service IP ranges for primary service cidr: \
                 the service cluster IP range must be at least 8 IP addresses"
                .into()),
            _ => Ok(()),
        },
        Component::ControllerManager => {
            if let Some(v) = flags.get("node-cidr-mask-size").filter(|v| v.parse::<i32>().is_err()) {
                return Err(format!(
                    "invalid argument \"{v}\" for \"--node-cidr-mask-size\" flag: strconv.ParseInt: parsing \"{v}\": invalid syntax"
                ));
            }
            match flags.parse_cidr("cluster-cidr") {
                Some(Err(v)) if flags.get("allocate-node-cidrs") == Some("true") => Err(format!(
                    "error starting controllers: failed to parse cidr value:\"{v}\" with error:invalid CIDR address: {v}"
                )),
                _ => Ok(()),
            }
        }
        Component::Etcd | Component::Scheduler => Ok(()),
    }
}

impl ControlPlane {
    /// The manifests `kubeadm init` writes on `node`, each component running with them.
    pub fn kubeadm(device: DeviceId, node: &str, v: &KubeadmValues<'_>) -> ControlPlane {
        let pods = Component::ALL
            .into_iter()
            .map(|component| {
                let text = manifests::manifest(component, v);
                StaticPod {
                    component,
                    running: read_flags(&text),
                    text,
                    restarting_until: 0,
                }
            })
            .collect();
        ControlPlane {
            device,
            node: node.to_string(),
            pods,
        }
    }

    /// The file at `path` on `dev`, if it is one of the manifests.
    pub fn file(&self, dev: DeviceId, path: &str) -> Option<&str> {
        let pod = self.pod(Component::of_file(path.strip_prefix(MANIFEST_DIR)?)?)?;
        (dev == self.device).then_some(pod.text.as_str())
    }

    fn pod(&self, c: Component) -> Option<&StaticPod> {
        self.pods.iter().find(|p| p.component == c)
    }

    /// The flags `c` runs with, when it runs.
    fn running(&self, c: Component) -> Option<&Flags> {
        self.pod(c)?.running.as_ref().ok()
    }

    /// etcd's flag `name` as it runs (None when it does not run or has no such flag).
    pub(super) fn etcd_flag(&self, name: &str) -> Option<&str> {
        self.running(Component::Etcd)?.get(name)
    }

    /// etcd answers no client at `now`: the kubelet is restarting it, or cannot run it.
    pub(super) fn etcd_down(&self, now: u64) -> bool {
        self.pod(Component::Etcd)
            .is_none_or(|p| p.restarting_until > now || p.running.is_err())
    }

    /// The host directory etcd keeps its data in: its `--data-dir` through the container's
    /// volumeMounts to their hostPath volumes (the longest mountPath that holds it). `Err` with
    /// the path when no hostPath holds it (a directory inside the container); None when etcd
    /// does not run.
    pub(super) fn etcd_host_data_dir(&self) -> Option<Result<String, String>> {
        let pod = self.pod(Component::Etcd)?;
        let data_dir = pod.running.as_ref().ok()?.get("data-dir")?;
        let data_dir = super::etcd_restore::clean_dir(data_dir);
        let doc: serde_json::Value = serde_saphyr::from_str(&pod.text).ok()?;
        let text = |v: &serde_json::Value, p: &str| v.pointer(p).and_then(|s| s.as_str()).map(str::to_string);
        let list = |p: &str| doc.pointer(p).and_then(|v| v.as_array()).cloned().unwrap_or_default();
        let volumes = list("/spec/volumes");
        let host_path = |name: &str| {
            volumes
                .iter()
                .find(|v| text(v, "/name").as_deref() == Some(name))
                .and_then(|v| text(v, "/hostPath/path"))
        };
        let found = list("/spec/containers/0/volumeMounts")
            .iter()
            .filter_map(|m| {
                let mount = text(m, "/mountPath")?;
                let mount = super::etcd_restore::clean_dir(&mount).to_string();
                // The part of --data-dir below the mount point (none when it is the mount).
                let rest = match data_dir.strip_prefix(mount.as_str())? {
                    "" => "",
                    r if mount == "/" => r,
                    r => r.strip_prefix('/')?,
                };
                let host = host_path(&text(m, "/name")?)?;
                let host = super::etcd_restore::clean_dir(&host);
                let joined = match (rest, host) {
                    ("", h) => h.to_string(),
                    (r, "/") => format!("/{r}"),
                    (r, h) => format!("{h}/{r}"),
                };
                Some((mount.len(), joined))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, host)| host);
        Some(found.ok_or_else(|| data_dir.to_string()))
    }
}

impl Cluster {
    /// kube-apiserver's `--service-cluster-ip-range`: kubeadm-config's `serviceSubnet` for a
    /// cluster fabsim did not see initialised (a snapshot's), where no manifest is known.
    pub fn service_range(&self) -> Ipv4Net {
        match self
            .control_plane
            .as_ref()
            .and_then(|cp| cp.running(Component::ApiServer))
        {
            Some(f) => f.cidr("service-cluster-ip-range").unwrap_or(APISERVER_DEFAULT_RANGE),
            None => self.service_cidr,
        }
    }

    /// kube-controller-manager's node IPAM settings (cluster CIDR, node mask), if it allocates
    /// node CIDRs; without manifests, kubeadm-config's `podSubnet` with kubeadm's mask.
    pub fn node_ipam_settings(&self) -> Option<(Ipv4Net, u8)> {
        let Some(cp) = self.control_plane.as_ref() else {
            return self.pod_cidr.map(|c| (c, node_mask(c)));
        };
        let f = cp.running(Component::ControllerManager)?;
        if f.get("allocate-node-cidrs") != Some("true") {
            return None;
        }
        let cidr = f.cidr("cluster-cidr")?;
        let mask = f
            .get("node-cidr-mask-size")
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| node_mask(cidr));
        Some((cidr, mask))
    }

    /// When kube-apiserver last started: the end of its last restart, else the cluster's
    /// creation.
    pub(super) fn apiserver_started_ms(&self) -> u64 {
        let restarted = self
            .control_plane
            .as_ref()
            .and_then(|cp| cp.pod(Component::ApiServer))
            .map_or(0, |p| p.restarting_until);
        restarted.max(self.created_ms)
    }

    /// Why kubectl cannot reach the apiserver at `now` (restarting, or not running at all).
    pub fn apiserver_refused(&self, now: u64) -> Option<String> {
        let pod = self.control_plane.as_ref()?.pod(Component::ApiServer)?;
        (pod.restarting_until > now || pod.running.is_err()).then(|| {
            format!(
                "The connection to the server {} was refused - did you specify the right host or port?\n",
                self.endpoint
            )
        })
    }

    /// What the control plane's configuration means for the runbook, as findings: components
    /// that do not run, flags that disagree with each other or with kubeadm-config, node IPAM
    /// that could not start.
    pub fn control_plane_findings(&self) -> Vec<String> {
        let Some(cp) = self.control_plane.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let ipam_failed = self.node_ipam.as_ref().and_then(RangeAllocator::failure).is_some();
        for c in Component::ALL {
            let Some(e) = self.crash(c) else { continue };
            let why = if c == Component::ControllerManager && ipam_failed {
                ": a Node's podCIDR lies outside --cluster-cidr, so no controller runs and nodes that join get no \
                 podCIDR until every such Node is gone or the flag covers it again (k8s-cidr-migrations.md §2.4)"
            } else {
                ""
            };
            out.push(format!("{}-{}: CrashLoopBackOff: {e}{why}", c.name(), cp.node));
        }
        let api_range = cp.running(Component::ApiServer).map(|_| self.service_range());
        let kcm = cp.running(Component::ControllerManager);
        let gap = "kubeadm upgrade and control-plane joins regenerate the manifests from kubeadm-config \
                   (k8s-cidr-migrations.md §2.4)";
        if let Some(range) = api_range.filter(|r| *r != self.service_cidr) {
            out.push(format!(
                "kubeadm-config (kube-system) still has networking.serviceSubnet {} while kube-apiserver runs with \
                 --service-cluster-ip-range={range}: {gap}",
                self.service_cidr
            ));
        }
        let kcm_cidr = kcm.and_then(|f| f.cidr("cluster-cidr"));
        if let (Some(pods), Some(kcm_cidr)) = (self.pod_cidr, kcm_cidr) {
            if pods != kcm_cidr {
                out.push(format!(
                    "kubeadm-config (kube-system) still has networking.podSubnet {pods} while kube-controller-manager \
                     runs with --cluster-cidr={kcm_cidr}: {gap}"
                ));
            }
        }
        let kcm_range = kcm.and_then(|f| f.cidr("service-cluster-ip-range"));
        if let (Some(api), Some(kcm_range)) = (api_range, kcm_range) {
            if api != kcm_range {
                out.push(format!(
                    "kube-controller-manager runs with --service-cluster-ip-range={kcm_range}, kube-apiserver with {api}: \
                     only the apiserver allocates ClusterIPs (new Services get them from {api}); kube-controller-manager \
                     uses its value only to keep node podCIDRs out of the service range — keep the two equal \
                     (k8s-cidr-migrations.md §2.2)"
                ));
            }
        }
        out
    }

    /// Why `c` exits at start, if it does: a flag it cannot parse, or for kube-controller-manager
    /// a Node's podCIDR outside its cluster CIDR (`NewCIDRRangeAllocator` returns the error —
    /// "This error will keep crashing controller-manager" —, `StartControllers` fails and `Run`
    /// exits with `error starting controllers: …`).
    fn crash(&self, c: Component) -> Option<String> {
        let pod = self.control_plane.as_ref()?.pod(c)?;
        if let Err(e) = &pod.running {
            return Some(e.clone());
        }
        let ipam_failed = self.node_ipam.as_ref().and_then(RangeAllocator::failure);
        (c == Component::ControllerManager)
            .then_some(ipam_failed)
            .flatten()
            .map(|f| format!("error starting controllers: {f}"))
    }

    /// kube-controller-manager (re)started: node IPAM rebuilt from the Nodes' podCIDRs with its
    /// flags, the cursor at the start, the blocks its service range overlaps kept out (none
    /// when it does not allocate node CIDRs).
    pub fn start_node_ipam(&mut self) {
        let held: Vec<(&str, Ipv4Net)> = self
            .nodes
            .iter()
            .filter_map(|n| n.pod_cidr.map(|c| (n.name.as_str(), c)))
            .collect();
        let mut ipam = self
            .node_ipam_settings()
            .and_then(|(cidr, mask)| RangeAllocator::started(cidr, mask, &held).ok());
        if let (Some(a), Some(range)) = (ipam.as_mut(), self.kcm_service_range()) {
            a.filter_out(range);
        }
        self.node_ipam = ipam;
    }

    /// kube-controller-manager's `--service-cluster-ip-range` (without manifests, kubeadm-config's).
    fn kcm_service_range(&self) -> Option<Ipv4Net> {
        match self.control_plane.as_ref() {
            None => Some(self.service_cidr),
            Some(cp) => cp
                .running(Component::ControllerManager)?
                .cidr("service-cluster-ip-range"),
        }
    }

    /// The kubelet saw `component`'s manifest change to `text`: it restarts the static pod,
    /// which is down until `now + restart_ms` and then runs with the new flags (or crash-loops).
    /// An unchanged file restarts nothing.
    fn write_manifest(&mut self, component: Component, text: String, now: u64, restart_ms: u64) {
        let Some(cp) = self.control_plane.as_mut() else { return };
        let node = cp.node.clone();
        let Some(pod) = cp.pods.iter_mut().find(|p| p.component == component) else {
            return;
        };
        if pod.text == text {
            return;
        }
        pod.running = read_flags(&text).and_then(|f| check(component, &f).map(|()| f));
        pod.text = text;
        pod.restarting_until = now + restart_ms;
        self.etcd_writes
            .push((format!("edit of {MANIFEST_DIR}{}.yaml", component.name()), now));
        if component == Component::ControllerManager {
            self.start_node_ipam();
        }
        self.mirror_pod_restarted(component, &node, now, restart_ms);
    }

    /// Is kube-controller-manager crash-looping because node IPAM could not start?
    pub(super) fn node_ipam_failed(&self) -> bool {
        self.node_ipam.as_ref().and_then(RangeAllocator::failure).is_some()
    }

    /// The kubelet's next restart of a crash-looping kube-controller-manager: node IPAM
    /// rebuilt from the Nodes as they are now.
    pub(super) fn restart_controller_manager(&mut self, now: u64) {
        let Some(node) = self.control_plane.as_ref().map(|cp| cp.node.clone()) else {
            return;
        };
        self.start_node_ipam();
        self.mirror_pod_restarted(Component::ControllerManager, &node, now, 0);
    }

    /// The static pod's mirror pod after the kubelet (re)started its container at `now`.
    fn mirror_pod_restarted(&mut self, component: Component, node: &str, now: u64, restart_ms: u64) {
        let crashed = self.crash(component);
        let name = format!("{}-{node}", component.name());
        if let Some(p) = self
            .pods
            .iter_mut()
            .find(|p| p.namespace == "kube-system" && p.name == name)
        {
            // A static pod's UID is the hash of its manifest: a changed file is a new pod (a new
            // mirror pod, a new AGE) under the same name. What was said about the old container
            // is history; a crash leaves the kubelet backing off (the log is the exit error).
            p.created_ms = now;
            p.started_ms = Some(now + restart_ms);
            p.facts = crashed.map(|e| PodFacts {
                injected_ms: now,
                ready: Some("0/1".into()),
                status: Some("CrashLoopBackOff".into()),
                log: Some(format!("{e}\n")),
                crash_loop_since_ms: Some(now + restart_ms),
                ..PodFacts::default()
            });
        }
    }
}

/// Is `path` a file fabsim keeps as a static-pod manifest?
pub fn is_manifest_path(path: &str) -> bool {
    path.starts_with(MANIFEST_DIR)
}

/// The step's `files:` written on `dev` before its commands: the manifests among them replace
/// the static pods' files (the others are only read by `-f NAME`).
pub fn write_manifests(
    net: &mut Network,
    dev: DeviceId,
    files: &std::collections::BTreeMap<String, String>,
    ctx: &Context<'_>,
) -> Result<(), String> {
    for (path, text) in files.iter().filter(|(p, _)| is_manifest_path(p)) {
        let component = manifest_on(net, dev, path)?.ok_or_else(|| {
            format!(
                "files: {path}: fabsim models the manifests kubeadm writes on the control-plane node ({})",
                manifest_names()
            )
        })?;
        if let Some(c) = net.cluster.as_deref_mut() {
            c.write_manifest(component, text.clone(), ctx.now, ctx.static_pod_restart_ms);
        }
    }
    super::etcd_restore::etcd_manifest_written(net, ctx.now, ctx.pod_start_ms);
    Ok(())
}

fn manifest_names() -> String {
    Component::ALL
        .iter()
        .map(|c| format!("{MANIFEST_DIR}{}.yaml", c.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The component whose manifest `path` is on `dev`; None when `dev` has no such file (not the
/// control-plane node, or a file kubeadm does not write). `Err` for a path fabsim has no
/// model of at all.
fn manifest_on(net: &Network, dev: DeviceId, path: &str) -> Result<Option<Component>, String> {
    let Some(file) = path.strip_prefix(MANIFEST_DIR) else {
        return Err(format!(
            "{path}: fabsim edits only the static-pod manifests ({}) and {}",
            manifest_names(),
            super::kubelet_config::KUBELET_CONFIG_PATH
        ));
    };
    let cp = net.cluster.as_deref().and_then(|c| c.control_plane.as_ref());
    Ok(Component::of_file(file).filter(|_| cp.is_some_and(|cp| cp.device == dev)))
}

/// `sed -i … FILE…` on `dev`: the manifests it edits are written back (and their static pods
/// restarted), the kubelet's configuration too (read at its next start); a path this host does
/// not have gets sed's own error and exit status 2.
pub fn sed(net: &mut Network, dev: DeviceId, args: &[&str], ctx: &Context<'_>) -> Result<CommandOutcome, String> {
    let sed::InPlace { commands, files } = sed::in_place(args)?;
    let mut out = CommandOutcome::ok("");
    for path in files {
        if path == super::kubelet_config::KUBELET_CONFIG_PATH {
            let node = super::command::node_name(net, dev);
            let cluster = net.cluster.as_deref_mut();
            match cluster.and_then(|c| c.kubelet_config_text(&node).map(str::to_string).map(|t| (c, t))) {
                Some((cluster, text)) => cluster.write_kubelet_config(&node, sed::apply(&text, &commands)),
                None => {
                    out.output += &format!("sed: can't read {path}: No such file or directory\n");
                    out.status = 2;
                }
            }
            continue;
        }
        let Some(component) = manifest_on(net, dev, path)? else {
            out.output += &format!("sed: can't read {path}: No such file or directory\n");
            out.status = 2;
            continue;
        };
        let Some(cluster) = net.cluster.as_deref_mut() else {
            continue;
        };
        let Some(text) = cluster
            .control_plane
            .as_ref()
            .and_then(|cp| cp.pod(component))
            .map(|p| p.text.clone())
        else {
            continue;
        };
        let edited = sed::apply(&text, &commands);
        cluster.write_manifest(component, edited, ctx.now, ctx.static_pod_restart_ms);
    }
    super::etcd_restore::etcd_manifest_written(net, ctx.now, ctx.pod_start_ms);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Cluster {
        let mut c = Cluster::new(
            "v1.28.15",
            Some("10.66.0.0/16".parse().unwrap()),
            "10.96.0.0/12".parse().unwrap(),
            "192.168.1.11:6443".into(),
            0,
        );
        let v = KubeadmValues {
            version: "v1.28.15",
            node: "n1",
            advertise: Ipv4Addr::new(192, 168, 1, 11),
            pod_subnet: c.pod_cidr,
            service_subnet: c.service_cidr,
        };
        c.control_plane = Some(ControlPlane::kubeadm(DeviceId(0), "n1", &v));
        c
    }

    fn edit(c: &mut Cluster, component: Component, script: &str, now: u64) {
        let text = c.control_plane.as_ref().unwrap().pod(component).unwrap().text.clone();
        let edited = sed::apply(&text, &sed::parse(script, 1, false).unwrap());
        c.write_manifest(component, edited, now, 20_000);
    }

    #[test]
    fn the_apiserver_is_down_while_restarting_then_serves_the_new_range() {
        let mut c = cluster();
        assert_eq!(c.service_range().to_string(), "10.96.0.0/12");
        edit(
            &mut c,
            Component::ApiServer,
            "s#--service-cluster-ip-range=10.96.0.0/12#--service-cluster-ip-range=10.100.0.0/16#",
            1000,
        );
        assert!(c
            .apiserver_refused(1000)
            .unwrap()
            .contains("192.168.1.11:6443 was refused"));
        assert_eq!(c.apiserver_refused(21_000), None);
        assert_eq!(c.service_range().to_string(), "10.100.0.0/16");
        // kubeadm-config keeps the old value.
        assert_eq!(c.service_cidr.to_string(), "10.96.0.0/12");
        let f = c.control_plane_findings();
        assert!(f.iter().any(|f| f.starts_with(
            "kubeadm-config (kube-system) still has networking.serviceSubnet 10.96.0.0/12 while kube-apiserver runs with --service-cluster-ip-range=10.100.0.0/16"
        )), "{f:?}");
        assert!(f.iter().any(|f| f.starts_with(
            "kube-controller-manager runs with --service-cluster-ip-range=10.96.0.0/12, kube-apiserver with 10.100.0.0/16"
        )), "{f:?}");
    }

    #[test]
    fn a_range_that_is_not_a_cidr_keeps_the_apiserver_down() {
        let mut c = cluster();
        edit(&mut c, Component::ApiServer, "s#10.96.0.0/12#10.100.0.0/33#", 0);
        assert!(c.apiserver_refused(1 << 40).is_some());
        assert_eq!(
            c.control_plane_findings()[0],
            "kube-apiserver-n1: CrashLoopBackOff: service-cluster-ip-range[0] is not a valid cidr"
        );
        edit(&mut c, Component::ApiServer, "s#10.100.0.0/33#10.100.0.0/30#", 0);
        assert_eq!(
            c.control_plane_findings()[0],
            "kube-apiserver-n1: CrashLoopBackOff: error determining service IP ranges for primary service cidr: \
             the service cluster IP range must be at least 8 IP addresses"
        );
        // Fixed: it runs again once the kubelet has restarted it.
        edit(&mut c, Component::ApiServer, "s#10.100.0.0/30#10.100.0.0/16#", 0);
        assert_eq!(c.apiserver_refused(20_000), None);
    }

    #[test]
    fn node_ipam_keeps_out_of_the_controller_managers_service_range() {
        let mut c = cluster();
        // A cluster CIDR that overlaps the service range (10.96.0.0/12 is its upper half):
        // the first node gets the first block after it, not 10.96.0.0/24.
        edit(&mut c, Component::ControllerManager, "s#10.66.0.0/16#10.96.0.0/11#", 0);
        c.add_node("n2", DeviceId(1), Ipv4Addr::new(192, 168, 1, 12), false, "v1.28.15", 0);
        assert_eq!(
            c.node("n2").and_then(|n| n.pod_cidr).unwrap().to_string(),
            "10.112.0.0/24"
        );
    }

    #[test]
    fn a_node_mask_flag_added_by_sed_sizes_the_next_podcidr() {
        let mut c = cluster();
        c.add_node("n1", DeviceId(0), Ipv4Addr::new(192, 168, 1, 11), true, "v1.28.15", 0);
        // kubeadm writes no --node-cidr-mask-size; a runbook adds one after --cluster-cidr.
        edit(
            &mut c,
            Component::ControllerManager,
            r"s#^\( *- \)--cluster-cidr=\(.*\)$#&\n\1--node-cidr-mask-size=26#",
            0,
        );
        let text = c
            .control_plane
            .as_ref()
            .unwrap()
            .file(DeviceId(0), &format!("{MANIFEST_DIR}kube-controller-manager.yaml"));
        assert!(text
            .unwrap()
            .contains("    - --cluster-cidr=10.66.0.0/16\n    - --node-cidr-mask-size=26\n"));
        // n1's /24 covers the first four /26 blocks; from the cursor, back at 0, n2 gets the fifth.
        c.add_node("n2", DeviceId(1), Ipv4Addr::new(192, 168, 1, 12), false, "v1.28.15", 0);
        assert_eq!(
            c.node("n2").and_then(|n| n.pod_cidr).unwrap().to_string(),
            "10.66.1.0/26"
        );
    }

    #[test]
    fn a_pod_cidr_outside_the_new_cluster_cidr_crash_loops_the_controller_manager() {
        let mut c = cluster();
        c.add_node("n1", DeviceId(0), Ipv4Addr::new(192, 168, 1, 11), true, "v1.28.15", 0);
        edit(&mut c, Component::ControllerManager, "s#10.66.0.0/16#10.70.0.0/16#", 0);
        assert_eq!(
            c.crash(Component::ControllerManager).unwrap(),
            "error starting controllers: failed to mark cidr[10.66.0.0/24] at idx [0] as occupied for node: n1: \
             cidr 10.66.0.0/24 is out the range of cluster cidr 10.70.0.0/16"
        );
        c.add_node("n2", DeviceId(1), Ipv4Addr::new(192, 168, 1, 12), false, "v1.28.15", 0);
        assert_eq!(c.node("n2").unwrap().pod_cidr, None);
    }

    #[test]
    fn etcds_data_is_where_the_hostpath_under_its_data_dir_points() {
        let mut c = cluster();
        let dir = |c: &Cluster| c.control_plane.as_ref().unwrap().etcd_host_data_dir().unwrap();
        assert_eq!(dir(&c), Ok("/var/lib/etcd".to_string()));
        // Only the flag moved, below the mount: a directory inside the host's /var/lib/etcd.
        edit(
            &mut c,
            Component::Etcd,
            "s#--data-dir=/var/lib/etcd#--data-dir=/var/lib/etcd/r#",
            0,
        );
        assert_eq!(dir(&c), Ok("/var/lib/etcd/r".to_string()));
        // Outside every mount: the container's own filesystem.
        edit(
            &mut c,
            Component::Etcd,
            "s#--data-dir=/var/lib/etcd/r#--data-dir=/data#",
            0,
        );
        assert_eq!(dir(&c), Err("/data".to_string()));
        // The hostPath alone moved: the same path in the container, another on the host.
        edit(
            &mut c,
            Component::Etcd,
            "s#--data-dir=/data#--data-dir=/var/lib/etcd#",
            0,
        );
        edit(&mut c, Component::Etcd, "s#path: /var/lib/etcd$#path: /srv/etcd#", 0);
        assert_eq!(dir(&c), Ok("/srv/etcd".to_string()));
    }

    #[test]
    fn an_unchanged_manifest_restarts_nothing() {
        let mut c = cluster();
        edit(&mut c, Component::ApiServer, "s#no-such-flag#x#", 0);
        assert_eq!(c.apiserver_refused(0), None);
    }
}
