//! The runbook's cluster commands, as an engineer types them on a host: `kubeadm init|join`,
//! `kubectl apply -f URL|run|delete pod`, the host preparation kubeadm's preflight checks
//! (`sysctl -w`, `modprobe`), and the kubelet's life (`kubeadm reset`, `systemctl`, `rm -rf` of
//! the CNI files: `kubelet`). Each changes the cluster (and, through `realize`, the network);
//! the text it prints is what the real tool prints for the parts fabsim models.
//!
//! A command fabsim does not model is an error naming it, never silently skipped.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

use ipnet::Ipv4Net;

use super::apiserver_cert::{ApiserverCert, CertConfig};
use super::calico_datastore;
use super::cluster::{Cluster, Owner, Pin, PodSpec, Template};
use super::control_plane::ControlPlane;
use super::deployment_cmd;
use super::disruption;
use super::flannel::{self, Flannel};
use super::manifests::KubeadmValues;
use super::node_ops;
use super::rollout;
use super::service_cmd;
use crate::calico::autodetect::{HostFacts, HostIface};
use crate::calico::install::Calico;
use crate::catalogue::FlannelManifest;
use crate::dataplane::probe_source;
use crate::engine::State;
use crate::model::{DeviceId, Network};
use crate::views::pipe::shell_words;

/// What a command printed and its exit status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    pub output: String,
    pub status: i32,
    /// The command keeps running while virtual time passes (`kubectl rollout status`):
    /// the caller lets time run until the rollout ends, then appends its status updates.
    pub follow: Option<Follow>,
    /// How long the command ran in virtual time (`kubectl drain`'s retries and waits, already
    /// applied to the cluster at their times): the caller lets that much time pass.
    pub busy_ms: u64,
}

/// A `kubectl rollout status` still watching a DaemonSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Follow {
    pub namespace: String,
    pub daemonset: String,
    /// The first status update (index into the cluster's log) it has not printed yet.
    pub since: usize,
}

impl CommandOutcome {
    pub(super) fn ok(output: impl Into<String>) -> Self {
        CommandOutcome {
            output: output.into(),
            status: 0,
            follow: None,
            busy_ms: 0,
        }
    }
    pub(super) fn failed(output: impl Into<String>) -> Self {
        CommandOutcome {
            output: output.into(),
            status: 1,
            follow: None,
            busy_ms: 0,
        }
    }
}

/// The largest file `-f FILE` reads (a manifest is kilobytes; this is a guard, not a format rule).
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// `kubeadm init`'s default `--service-cidr`.
const DEFAULT_SERVICE_CIDR: &str = "10.96.0.0/12";

/// Does fabsim model `line` as a change to the cluster or host (as opposed to a read-only
/// command a view answers)?
/// `NAME=value` before a command (a shell variable assignment).
fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

pub fn is_change(line: &str) -> bool {
    let Ok(words) = shell_words(line) else { return false };
    let mut w: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| *w == "sudo" || is_assignment(w))
        .collect();
    if let ["kubectl", rest @ ..] = w.as_slice() {
        w = std::iter::once("kubectl").chain(verb_first(rest)).collect();
    }
    if let ["ip", rest @ ..] = w.as_slice() {
        return super::ip_cmd::is_change(rest);
    }
    if let ["sed", rest @ ..] = w.as_slice() {
        return rest.iter().any(|a| a.starts_with("-i") || a.starts_with("--in-place"));
    }
    matches!(
        w.as_slice(),
        ["kubeadm", ..]
            | ["sysctl", "-w", ..]
            | ["modprobe", ..]
            | ["systemctl", ..]
            | ["rm", ..]
            | ["mv", ..]
            | ["kubectl", "apply" | "create" | "run" | "delete" | "patch", ..]
            | ["kubectl", "cordon" | "uncordon" | "drain" | "label" | "taint", ..]
            | ["kubectl", "rollout", "restart" | "status", ..]
            | ["kubectl", "set", "env", ..]
            | ["calicoctl", "apply" | "create" | "replace" | "delete" | "patch", ..]
            | ["etcdctl", ..]
            | ["etcdutl", ..]
            | ["etcdhelper" | "./etcdhelper", ..]
    )
}

/// What a command sees besides the network: the time, the scenario's pinned facts, its
/// standard input (`-f -`) and the directory relative file names are read from.
pub struct Context<'a> {
    pub now: u64,
    pub pins: &'a [Pin],
    pub stdin: Option<&'a str>,
    /// Files the step's runbook wrote (`cat << EOF > NAME`), looked up before the disk.
    pub files: &'a BTreeMap<String, String>,
    pub base: &'a Path,
    /// How long a replaced DaemonSet pod takes from creation to its containers running (image
    /// present, init containers done): the scenario's `timing: pod_start`.
    pub pod_start_ms: u64,
    /// How long the kubelet takes to restart a static pod whose manifest changed, during which
    /// the component is down: the scenario's `timing: static_pod_restart`.
    pub static_pod_restart_ms: u64,
    /// kube-controller-manager's `--node-monitor-grace-period`: how long a stopped kubelet's
    /// Node keeps its last Ready: the scenario's `timing: node_monitor_grace`.
    pub node_monitor_grace_ms: u64,
}

impl Context<'_> {
    /// The text of `-f NAME` and the name kubectl reports it by: standard input for `-`, else
    /// a file next to the scenario.
    pub(super) fn read(&self, name: &str) -> Result<(String, String), String> {
        if name == "-" {
            return self
                .stdin
                .map(|t| (t.to_string(), "STDIN".to_string()))
                .ok_or_else(|| "-f -: the step has no `stdin:`".to_string());
        }
        if let Some(text) = self.files.get(name) {
            return Ok((text.clone(), name.to_string()));
        }
        let path = self.base.join(name);
        // Only regular files of a sane size: `-f /dev/zero` must not hang the rehearsal.
        let meta = std::fs::metadata(&path)
            .map_err(|e| format!("error: the path \"{name}\" cannot be read ({}: {e})", path.display()))?;
        if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
            return Err(format!(
                "error: the path \"{name}\" is not a regular file of at most {} MiB",
                MAX_MANIFEST_BYTES >> 20
            ));
        }
        std::fs::read_to_string(&path)
            .map(|t| (t, name.to_string()))
            .map_err(|e| format!("error: the path \"{name}\" cannot be read ({}: {e})", path.display()))
    }
}

/// Run one changing command on `dev`. `Err` is a line fabsim cannot run (not modelled, or
/// malformed), with the reason.
pub fn run_line(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    line: &str,
    ctx: &Context<'_>,
) -> Result<CommandOutcome, String> {
    let (now, pins) = (ctx.now, ctx.pins);
    let words = shell_words(line).map_err(|e| e.message)?;
    // `sudo`, and environment assignments such as `ETCDCTL_API=3` (etcdctl v3.5 speaks v3
    // whatever it says).
    let words: Vec<String> = words
        .into_iter()
        .skip_while(|w| w == "sudo" || is_assignment(w))
        .collect();
    let Some((cmd, args)) = words.split_first() else {
        return Ok(CommandOutcome::ok(""));
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match cmd.as_str() {
        "sysctl" => sysctl(net, dev, &args),
        // Loading br_netfilter creates /proc/sys/net/bridge, which kubeadm's preflight wants;
        // nothing fabsim forwards depends on it.
        "modprobe" => Ok(CommandOutcome::ok("")),
        "kubeadm" => match args.first() {
            Some(&"init") => match &args[1..] {
                ["phase", "certs", "apiserver", rest @ ..] => {
                    super::apiserver_cert::kubeadm_phase(net, st, dev, rest, ctx)
                }
                ["phase", ..] => Err(format!(
                    "`kubeadm {}`: fabsim runs the init phase `certs apiserver` only",
                    args.join(" ")
                )),
                rest => kubeadm_init(net, st, dev, rest, now, pins),
            },
            Some(&"join") => kubeadm_join(net, st, dev, &args[1..], now),
            Some(&"reset") => super::kubelet::kubeadm_reset(net, dev, &args[1..], ctx),
            _ => Err(format!(
                "`kubeadm {}`: fabsim runs kubeadm init, join and reset",
                args.join(" ")
            )),
        },
        "systemctl" => super::kubelet::systemctl(net, st, dev, &args, ctx),
        "rm" => {
            super::apiserver_cert::rm(net, dev, &args).unwrap_or_else(|| super::kubelet::rm_cni_files(net, dev, &args))
        }
        "kubectl" => kubectl(net, st, &args, ctx),
        "calicoctl" => calico_datastore::calicoctl(net, &args, ctx),
        "ip" => {
            let out = super::ip_cmd::ip(net, st, dev, &args)?;
            // The kubelet retries failed sandboxes (a CNI ADD that failed on a stale cni0).
            if let Some(c) = net.cluster.as_deref_mut() {
                c.reconcile(now);
            }
            Ok(out)
        }
        "sed" => super::control_plane::sed(net, dev, &args, ctx),
        "etcdctl" => super::etcd::etcdctl(net, dev, &args, now),
        "etcdutl" => super::etcd::etcdutl(net, dev, &args),
        "mv" => Err(super::etcd_restore::mv_refused(&args)),
        "etcdhelper" | "./etcdhelper" => super::etcd::etcdhelper(net, dev, &args, now),
        other => Err(format!("`{other}` is not a command fabsim runs as a change")),
    }
}

/// The mirror pods of the control plane's static pods, which the kubelet creates when its
/// Node is registered (at `kubeadm init`, and again after the Node was deleted).
pub(super) fn create_mirror_pods(cluster: &mut Cluster, node: &str, now: u64) {
    for component in ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] {
        cluster.create_pod(system_pod(Owner::Static, Some(component), Some(node), true), now);
    }
}

fn sysctl(net: &mut Network, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    let [_, setting] = args else {
        return Err("expected `sysctl -w KEY=VALUE`".into());
    };
    let (key, value) = setting.split_once('=').ok_or("expected `sysctl -w KEY=VALUE`")?;
    match key {
        "net.ipv4.ip_forward" => {
            net.devices[dev.idx()].ip_forward = value.trim() != "0";
            Ok(CommandOutcome::ok(format!("{key} = {value}\n")))
        }
        _ => Err(format!("sysctl {key}: fabsim models net.ipv4.ip_forward only")),
    }
}

/// `kubectl patch`'s `-p/--patch JSON`: the patch, or kubectl's parse error as the outcome.
pub(super) fn patch_json(rest: &[&str]) -> Result<Result<serde_json::Value, CommandOutcome>, String> {
    let patch = flag(rest, "-p")
        .or_else(|| flag(rest, "--patch"))
        .ok_or("kubectl patch: give the patch with -p JSON")?;
    Ok(serde_json::from_str(patch)
        .map_err(|e| CommandOutcome::failed(format!("error: unable to parse \"{patch}\": {e}\n"))))
}

/// The documents of a manifest text when they are objects of `kind`: None when none is; an
/// error when they are mixed with other kinds (fabsim applies one kind per file, named by
/// `plural` in the error).
pub(super) fn documents_of_kind(
    text: &str,
    kind: &str,
    plural: &str,
) -> Option<Result<Vec<serde_json::Value>, String>> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_str_multiple(text).ok()?;
    let docs: Vec<serde_json::Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    let is_kind = |d: &serde_json::Value| d.get("kind").and_then(|k| k.as_str()) == Some(kind);
    if !docs.iter().any(is_kind) {
        return None;
    }
    if !docs.iter().all(is_kind) {
        return Some(Err(format!(
            "fabsim applies a file of {plural} on its own: put the other objects in another file"
        )));
    }
    Some(Ok(docs))
}

/// Flags of the form `--name=value` or `--name value`.
pub(super) fn flag<'a>(args: &[&'a str], name: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix(name).and_then(|rest| match rest.strip_prefix('=') {
            Some(v) => Some(v),
            None if rest.is_empty() => args.get(i + 1).copied(),
            None => None,
        })
    })
}

/// kubeadm's preflight checks fabsim can see. The text is kubeadm v1.28's (seed-lab.md s1).
fn preflight(net: &Network, dev: DeviceId) -> Option<CommandOutcome> {
    if net.device(dev).ip_forward {
        return None;
    }
    Some(CommandOutcome::failed(
        "[preflight] Running pre-flight checks\n\
         error execution phase preflight: [preflight] Some fatal errors occurred:\n\
         \t[ERROR FileContent--proc-sys-net-ipv4-ip_forward]: /proc/sys/net/ipv4/ip_forward contents are not set to 1\n\
         [preflight] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=...`\n\
         To see the stack trace of this error execute with --v=5 or higher\n",
    ))
}

/// The kubeadm/kubelet a host has, or why `kubeadm` cannot run there.
pub(super) fn kubelet_of(net: &Network, dev: DeviceId) -> Result<crate::model::Kubelet, String> {
    let d = net.device(dev);
    d.kubelet.clone().ok_or_else(|| {
        format!(
            "{} has no kubeadm (declare it `kind: k8s-node` with `kubelet:`)",
            d.name
        )
    })
}

/// The node name kubelet registers: the hostname, lower-cased.
pub(super) fn node_name(net: &Network, dev: DeviceId) -> String {
    let d = net.device(dev);
    d.hostname.as_deref().unwrap_or(&d.name).to_ascii_lowercase()
}

/// kubelet's InternalIP: the configured one, else the address of the default route's interface.
pub(super) fn internal_ip(net: &Network, st: &State, dev: DeviceId) -> Result<Ipv4Addr, String> {
    let configured = net.device(dev).kubelet.as_ref().and_then(|k| k.node_ip);
    configured
        .or_else(|| probe_source(net, st, dev, Ipv4Addr::new(8, 8, 8, 8)))
        .ok_or_else(|| format!("{} has no address for kubelet to register", net.device(dev).name))
}

fn kubeadm_init(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    args: &[&str],
    now: u64,
    pins: &[Pin],
) -> Result<CommandOutcome, String> {
    let cidr = |flag_name: &str, default: Option<&str>| -> Result<Option<Ipv4Net>, String> {
        match flag(args, flag_name).or(default) {
            None => Ok(None),
            Some(v) => v
                .parse::<Ipv4Net>()
                .map(|n| Some(n.trunc()))
                .map_err(|_| format!("{flag_name}: expected an IPv4 CIDR, found `{v}`")),
        }
    };
    let opts = InitOptions {
        pod_cidr: cidr("--pod-network-cidr", None)?,
        service_cidr: cidr("--service-cidr", Some(DEFAULT_SERVICE_CIDR))?.unwrap_or_default(),
        endpoint: flag(args, "--control-plane-endpoint").map(str::to_string),
    };
    if let Some(unknown) = args.iter().filter(|a| a.starts_with("--")).find(|a| {
        !["--pod-network-cidr", "--service-cidr", "--control-plane-endpoint"]
            .iter()
            .any(|f| a.starts_with(f))
    }) {
        return Ok(CommandOutcome::failed(format!(
            "unknown flag: {}\n",
            unknown.split('=').next().unwrap_or(unknown)
        )));
    }
    init_cluster(net, st, dev, &opts, now, pins)
}

/// What `kubeadm init` is told: its flags on a runbook line, or a topology's `cluster:`.
pub struct InitOptions {
    pub pod_cidr: Option<Ipv4Net>,
    pub service_cidr: Ipv4Net,
    /// `--control-plane-endpoint` (default: the node's InternalIP, port 6443).
    pub endpoint: Option<String>,
}

/// `kubeadm init` on `dev`: the control plane, kube-proxy and CoreDNS (pending until a CNI).
pub fn init_cluster(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    opts: &InitOptions,
    now: u64,
    pins: &[Pin],
) -> Result<CommandOutcome, String> {
    let kubelet = kubelet_of(net, dev)?;
    if net.cluster.is_some() {
        return Ok(CommandOutcome::failed(
            "[preflight] Running pre-flight checks\n\
             error execution phase preflight: [preflight] Some fatal errors occurred:\n\
             \t[ERROR Port-6443]: Port 6443 is in use\n",
        ));
    }
    if let Some(failed) = preflight(net, dev) {
        return Ok(failed);
    }
    let ip = internal_ip(net, st, dev)?;
    let endpoint = match opts.endpoint.as_deref() {
        Some(e) if e.contains(':') => e.to_string(),
        Some(e) => format!("{e}:6443"),
        None => format!("{ip}:6443"),
    };
    let mut cluster = Cluster::new(
        &kubelet.version,
        opts.pod_cidr,
        opts.service_cidr,
        endpoint.clone(),
        now,
    );
    cluster.pins = pins.to_vec();
    let node = node_name(net, dev);
    let kubeadm_values = KubeadmValues {
        version: &kubelet.version,
        node: &node,
        advertise: ip,
        pod_subnet: opts.pod_cidr,
        service_subnet: opts.service_cidr,
    };
    cluster.control_plane = Some(ControlPlane::kubeadm(dev, &node, &kubeadm_values));
    // kube-controller-manager starts with the manifest's flags.
    cluster.start_node_ipam();
    cluster.add_node(&node, dev, ip, true, &kubelet.version, now);
    cluster.declare_max_pods(&node, kubelet.max_pods);
    create_mirror_pods(&mut cluster, &node, now);
    cluster.create_pod(
        system_pod(Owner::DaemonSet("kube-proxy".into()), None, Some(&node), true),
        now,
    );
    for _ in 0..2 {
        cluster.create_pod(system_pod(Owner::Deployment("coredns".into()), None, None, false), now);
    }
    cluster.create_default_services(ip, now);
    cluster.apiserver_cert_file = Some(ApiserverCert::signed_for(&CertConfig {
        node: node.clone(),
        service_subnet: opts.service_cidr,
        advertise: ip,
        endpoint: opts.endpoint.clone(),
        extra_sans: Vec::new(),
    }));
    cluster.reconcile(now);
    net.cluster = Some(Box::new(cluster));
    Ok(CommandOutcome::ok(format!(
        "[init] Using Kubernetes version: {}\n\
         [preflight] Running pre-flight checks\n\
         Your Kubernetes control-plane has initialized successfully!\n\
         Then you can join any number of worker nodes by running the following on each as root:\n\
         kubeadm join {endpoint} --token <token> --discovery-token-ca-cert-hash sha256:<hash>\n",
        kubelet.version
    )))
}

/// A kube-system pod of the control plane or an add-on. Everything kubeadm and the Calico
/// manifest deploy tolerates the control-plane taint.
pub(super) fn system_pod(owner: Owner, component: Option<&str>, node: Option<&str>, host_network: bool) -> PodSpec {
    PodSpec {
        namespace: "kube-system".into(),
        owner,
        name: component.map(str::to_string),
        node: node.map(str::to_string),
        host_network,
        image: String::new(),
        tolerates_control_plane: true,
        node_selector: Default::default(),
        declared: Default::default(),
    }
}

fn kubeadm_join(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    args: &[&str],
    now: u64,
) -> Result<CommandOutcome, String> {
    kubelet_of(net, dev)?;
    let target = args.first().copied().unwrap_or("");
    let Some(cluster) = net.cluster.as_deref() else {
        return Ok(CommandOutcome::failed(format!(
            "[preflight] Running pre-flight checks\n\
             error execution phase preflight: couldn't validate the identity of the API Server: \
             Get \"https://{target}/api/v1/namespaces/kube-public/configmaps/cluster-info?timeout=10s\": \
             dial tcp {target}: connect: connection refused\n"
        )));
    };
    if target != cluster.endpoint {
        return Err(format!(
            "kubeadm join {target}: the cluster's control-plane endpoint is {}",
            cluster.endpoint
        ));
    }
    join_cluster(net, st, dev, now)
}

/// `dev` joins the cluster (kube-proxy, and calico-node once Calico is installed, start there).
/// Refused while the host has a kubelet.conf (joined and not reset, even if its Node was
/// deleted). After `kubeadm reset` the host joins again; its Node, if nobody deleted it, is the
/// one the kubelet registers with (podCIDR kept).
pub fn join_cluster(net: &mut Network, st: &State, dev: DeviceId, now: u64) -> Result<CommandOutcome, String> {
    kubelet_of(net, dev)?;
    let node = node_name(net, dev);
    let cluster = net.cluster.as_deref().ok_or("no cluster")?;
    if cluster.kubelet_confs.contains(&node) {
        return Ok(CommandOutcome::failed(format!(
            "[preflight] Running pre-flight checks\n\
             error execution phase preflight: [preflight] Some fatal errors occurred:\n\
             \t[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists ({node})\n"
        )));
    }
    if cluster.node(&node).is_some() && cluster.ready(&node, now) {
        // kubeadm's kubelet-start phase (phases/join/kubelet.go) refuses a name whose Node
        // still reports Ready: the reset kubelet's last status is younger than the grace period.
        return Ok(CommandOutcome::failed(format!(
            "[preflight] Running pre-flight checks\n\
             [preflight] Reading configuration from the cluster...\n\
             error execution phase kubelet-start: a Node with name \"{node}\" and status \"Ready\" already exists \
             in the cluster. You must delete the existing Node or change the name of this new joining Node\n\
             To see the stack trace of this error execute with --v=5 or higher\n"
        )));
    }
    if let Some(failed) = preflight(net, dev) {
        return Ok(failed);
    }
    super::kubelet::register(net, st, dev, now)?;
    Ok(CommandOutcome::ok(
        "[preflight] Running pre-flight checks\n\
         [preflight] Reading configuration from the cluster...\n\
         [kubelet-start] Starting the kubelet\n\
         This node has joined the cluster:\n\
         * Certificate signing request was sent to apiserver and a response was received.\n\
         * The Kubelet was informed of the new secure connection details.\n\
         Run 'kubectl get nodes' on the control-plane to see this node join the cluster.\n",
    ))
}

/// kubectl's words with a leading namespace flag (`kubectl -n kube-system rollout restart …`,
/// as runbooks write it) moved after the verb, where the command matchers look for it.
fn verb_first<'a>(args: &[&'a str]) -> Vec<&'a str> {
    match args {
        [flag @ ("-n" | "--namespace"), ns, rest @ ..] => rest.iter().copied().chain([*flag, *ns]).collect(),
        [flag, rest @ ..] if flag.starts_with("--namespace=") => {
            rest.iter().copied().chain(std::iter::once(*flag)).collect()
        }
        _ => args.to_vec(),
    }
}

fn kubectl(net: &mut Network, st: &State, args: &[&str], ctx: &Context<'_>) -> Result<CommandOutcome, String> {
    let args = &verb_first(args)[..];
    let now = ctx.now;
    let Some(cluster) = net.cluster.as_deref() else {
        return Ok(CommandOutcome::failed(
            "The connection to the server localhost:8080 was refused - did you specify the right host or port?\n",
        ));
    };
    if let Some(refused) = cluster.apiserver_refused(now) {
        return Ok(CommandOutcome::failed(refused));
    }
    let namespace = flag(args, "-n")
        .or_else(|| flag(args, "--namespace"))
        .unwrap_or("default");
    if let Some(outcome) = node_ops::run(net, args, namespace, now, ctx.pod_start_ms) {
        return outcome;
    }
    match args {
        ["apply" | "create", "-f", url, ..] if crate::catalogue::manifest(url).is_some() => {
            apply_manifest(net, st, url, now)
        }
        [verb @ ("apply" | "create"), "-f", file, ..] => {
            let (text, source) = ctx.read(file)?;
            if let Some(applied) = super::cilium_cluster::apply(net, &text, now) {
                return applied;
            }
            if let Some(services) = service_cmd::manifests(&text) {
                return service_cmd::apply(net, verb, services?, &source, namespace, now);
            }
            if let Some(budgets) = disruption::manifests(&text) {
                return disruption::apply(net, verb, budgets?, namespace, now);
            }
            if let Some(applied) = super::kube_proxy_config::apply(net, &text, namespace) {
                return applied;
            }
            if let Some(deployments) = deployment_cmd::manifests(&text) {
                return deployment_cmd::apply(net, verb, deployments?, namespace, now);
            }
            match pod_manifest(&text) {
                Some(pod) => create_pod_from_manifest(net, pod, now),
                None => calico_datastore::kubectl_apply(net, file, ctx),
            }
        }
        ["patch", "deployment" | "deployments" | "deploy", name, rest @ ..] => {
            patch_deployment(net, namespace, name, rest, now)
        }
        ["patch", kind, name, rest @ ..] => calico_datastore::kubectl_patch(net, kind, name, rest),
        ["delete", "-f", file, ..] => {
            let (text, source) = ctx.read(file)?;
            if let Some(budgets) = disruption::manifests(&text) {
                return disruption::delete(net, &budgets?, &source, namespace);
            }
            match service_cmd::manifests(&text) {
                Some(services) => service_cmd::delete_specs(net, &services?, namespace, now),
                None => Err(format!(
                    "kubectl delete -f {file}: fabsim deletes Services and PodDisruptionBudgets from a file"
                )),
            }
        }
        ["delete", kind, rest @ ..] if service_cmd::is_service_kind(kind) => {
            let mut names = vec![*kind];
            names.extend_from_slice(rest);
            service_cmd::delete_named(net, &names, namespace, now)
        }
        ["delete", kind, rest @ ..] if calico_datastore::is_calico_kind(kind) => {
            calico_datastore::kubectl_delete(net, kind, rest)
        }
        ["run", name, rest @ ..] => kubectl_run(net, name, namespace, rest, now),
        ["rollout", "restart", rest @ ..] => {
            if let Some(restarted) = super::cilium_cluster::restart_operator(net, namespace, rest, now) {
                return restarted;
            }
            let ds = daemonset_arg(rest)?;
            if rollout::start(net, st, namespace, ds, now, ctx.pod_start_ms)? {
                Ok(CommandOutcome::ok(format!("daemonset.apps/{ds} restarted\n")))
            } else {
                Ok(daemonset_not_found(ds))
            }
        }
        ["rollout", "status", rest @ ..] => {
            let ds = daemonset_arg(rest)?;
            let cluster = net.cluster.as_deref().ok_or("no cluster")?;
            if rollout::daemonset_nodes(cluster, namespace, ds).is_empty() {
                return Ok(daemonset_not_found(ds));
            }
            Ok(CommandOutcome {
                follow: Some(Follow {
                    namespace: namespace.to_string(),
                    daemonset: ds.to_string(),
                    since: cluster.rollout_log.len(),
                }),
                ..CommandOutcome::ok(rollout::current_status(cluster, namespace, ds))
            })
        }
        ["set", "env", rest @ ..] => set_env(net, st, namespace, rest, ctx),
        _ => Err(format!(
            "`kubectl {}`: fabsim changes the cluster with kubectl apply|create|delete -f, run, patch ippool|pod, \
             delete pod|node|service|ippool|blockaffinities, rollout restart|status, set env, \
             cordon|uncordon|drain NODE, label|taint node",
            args.join(" ")
        )),
    }
}

/// The DaemonSet a `rollout`/`set env` names: `daemonset/NAME` (or `ds/NAME`), or the two
/// words `daemonset NAME`.
fn daemonset_arg<'a>(rest: &[&'a str]) -> Result<&'a str, String> {
    let words: Vec<&str> = rest.iter().copied().filter(|w| !w.starts_with('-')).collect();
    let kinds = ["daemonset", "daemonsets", "ds", "daemonset.apps"];
    let name = match words.as_slice() {
        [target, ..] if target.contains('/') => {
            let (kind, name) = target.split_once('/').unwrap_or_default();
            kinds.contains(&kind).then_some(name)
        }
        [kind, name, ..] if kinds.contains(kind) => Some(*name),
        _ => None,
    };
    name.filter(|n| !n.is_empty())
        .ok_or_else(|| format!("`{}`: fabsim rolls out DaemonSets: give daemonset/NAME", rest.join(" ")))
}

fn daemonset_not_found(name: &str) -> CommandOutcome {
    CommandOutcome::failed(format!(
        "Error from server (NotFound): daemonsets.apps \"{name}\" not found\n"
    ))
}

/// `kubectl set env daemonset/NAME KEY=VALUE… [KEY-…]`: the pod template's environment
/// changes, so the DaemonSet rolls its pods. calico-node's environment is what its next
/// start reads (`IP`, `IP_AUTODETECTION_METHOD`, …).
fn set_env(
    net: &mut Network,
    st: &State,
    namespace: &str,
    rest: &[&str],
    ctx: &Context<'_>,
) -> Result<CommandOutcome, String> {
    let ds = daemonset_arg(rest)?;
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    if rollout::daemonset_nodes(cluster, namespace, ds).is_empty() {
        return Ok(daemonset_not_found(ds));
    }
    let mut changes = Vec::new();
    for w in rest.iter().filter(|w| !w.starts_with('-') && !w.contains('/')) {
        if let Some((k, v)) = w.split_once('=') {
            changes.push((k.to_string(), Some(v.to_string())));
        } else if let Some(k) = w.strip_suffix('-') {
            changes.push((k.to_string(), None));
        }
    }
    if changes.is_empty() {
        return Err("kubectl set env: at least one environment variable must be provided".into());
    }
    let mut changed = false;
    if let Some(calico) = cluster
        .calico
        .as_mut()
        .filter(|_| ds == "calico-node" && namespace == "kube-system")
    {
        for (k, v) in changes {
            changed |= match v {
                Some(v) => calico.env.insert(k, v.clone()).as_ref() != Some(&v),
                None => calico.env.remove(&k).is_some(),
            };
        }
    } else {
        // fabsim does not keep other DaemonSets' environments: any change rolls the pods.
        changed = true;
    }
    if changed {
        rollout::start(net, st, namespace, ds, ctx.now, ctx.pod_start_ms)?;
    }
    Ok(CommandOutcome::ok(format!("daemonset.apps/{ds} env updated\n")))
}

/// `kubectl patch deployment NAME -p JSON`: the pod template's `nodeSelector` (merged key by
/// key, `null` deletes) and `tolerations` (replaced, as a strategic merge replaces a list
/// without a merge key) — what fabsim schedules by.
fn patch_deployment(
    net: &mut Network,
    namespace: &str,
    name: &str,
    rest: &[&str],
    now: u64,
) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let patch = match patch_json(rest)? {
        Ok(p) => p,
        Err(out) => return Ok(out),
    };
    let Some(current) = cluster
        .pods
        .iter()
        .find(|p| p.namespace == namespace && p.owner == Owner::Deployment(name.to_string()))
        .map(|p| (p.node_selector.clone(), p.tolerates_control_plane))
    else {
        return Ok(CommandOutcome::failed(format!(
            "Error from server (NotFound): deployments.apps \"{name}\" not found\n"
        )));
    };
    let spec = patch.pointer("/spec/template/spec");
    let mut node_selector = current.0;
    if let Some(sel) = spec.and_then(|s| s.get("nodeSelector")).and_then(|v| v.as_object()) {
        for (k, v) in sel {
            match v.as_str() {
                Some(v) => node_selector.insert(k.clone(), v.to_string()),
                None => node_selector.remove(k),
            };
        }
    }
    let tolerates_control_plane = match spec.and_then(|s| s.get("tolerations")).and_then(|v| v.as_array()) {
        Some(list) => list.iter().any(|t| {
            let key = t.get("key").and_then(|k| k.as_str()).unwrap_or("");
            let exists = t.get("operator").and_then(|o| o.as_str()) == Some("Exists");
            let effect = t.get("effect").and_then(|e| e.as_str()).unwrap_or("");
            (key == "node-role.kubernetes.io/control-plane" || (key.is_empty() && exists))
                && (effect.is_empty() || effect == "NoSchedule")
        }),
        None => current.1,
    };
    let template = Template {
        revision: 0,
        node_selector,
        tolerates_control_plane,
    };
    cluster.update_template(namespace, name, template, now);
    Ok(CommandOutcome::ok(format!("deployment.apps/{name} patched\n")))
}

/// A `v1` Pod manifest: what fabsim reads of it (`pod_spec`). None when the text is not a Pod.
fn pod_manifest(text: &str) -> Option<Result<PodSpec, String>> {
    let doc: serde_json::Value = serde_saphyr::from_str(text).ok()?;
    if doc.get("kind").and_then(|k| k.as_str()) != Some("Pod") {
        return None;
    }
    let Some(name) = doc.pointer("/metadata/name").and_then(|v| v.as_str()) else {
        return Some(Err("Pod manifest: metadata.name is missing".into()));
    };
    Some(pod_spec(&doc, &format!("Pod {name}"), name).map(|spec| PodSpec {
        name: Some(name.to_string()),
        ..spec
    }))
}

/// What fabsim reads of a pod object — a Pod, or a controller's `spec.template` — named `what`
/// in errors: image, nodeName, nodeSelector, hostNetwork, the control-plane toleration, and
/// labels, emptyDir volumes, finalizers and the grace period (`termination::declared`, which
/// names `name`). A bare pod in its namespace (`default` when the object has none).
pub(super) fn pod_spec(obj: &serde_json::Value, what: &str, name: &str) -> Result<PodSpec, String> {
    let str_at = |path: &str| obj.pointer(path).and_then(|v| v.as_str()).map(str::to_string);
    let image =
        str_at("/spec/containers/0/image").ok_or_else(|| format!("{what}: spec.containers[0].image is missing"))?;
    if crate::catalogue::image(&image).is_none() {
        return Err(format!(
            "{what}: image {image} is not one fabsim knows (catalogue/images.yaml has: {})",
            crate::catalogue::names().join(", ")
        ));
    }
    let tolerates_control_plane = obj
        .pointer("/spec/tolerations")
        .and_then(|v| v.as_array())
        .is_some_and(|l| {
            l.iter()
                .any(|t| t.get("key").and_then(|k| k.as_str()) == Some("node-role.kubernetes.io/control-plane"))
        });
    Ok(PodSpec {
        namespace: str_at("/metadata/namespace").unwrap_or_else(|| "default".into()),
        owner: Owner::Bare,
        name: None,
        node: str_at("/spec/nodeName"),
        host_network: obj
            .pointer("/spec/hostNetwork")
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        image,
        tolerates_control_plane,
        node_selector: string_map(obj, "/spec/nodeSelector"),
        declared: super::termination::declared(obj, name)?,
    })
}

fn create_pod_from_manifest(
    net: &mut Network,
    spec: Result<PodSpec, String>,
    now: u64,
) -> Result<CommandOutcome, String> {
    let spec = spec?;
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let name = spec.name.clone().unwrap_or_default();
    if cluster.pod(&spec.namespace, &name).is_some() {
        return Ok(CommandOutcome::ok(format!("pod/{name} unchanged\n")));
    }
    cluster.create_pod(spec, now);
    cluster.reconcile(now);
    Ok(CommandOutcome::ok(format!("pod/{name} created\n")))
}

fn apply_manifest(net: &mut Network, st: &State, url: &str, now: u64) -> Result<CommandOutcome, String> {
    if let Some(f) = crate::catalogue::manifest(url).and_then(|m| m.flannel.as_ref()) {
        return install_flannel(net, f, now);
    }
    if !install_calico(net, url, now)? {
        return Ok(CommandOutcome::ok(
            "daemonset.apps/calico-node unchanged\ndeployment.apps/calico-kube-controllers unchanged\n",
        ));
    }
    start_calico_nodes(net, st, now)?;
    if let Some(c) = net.cluster.as_mut() {
        c.reconcile(now);
    }
    // fabsim lists the objects it models; the real manifest also creates CRDs, RBAC and a
    // ConfigMap.
    Ok(CommandOutcome::ok(
        "daemonset.apps/calico-node created\ndeployment.apps/calico-kube-controllers created\n",
    ))
}

/// kube-flannel.yml: the ConfigMap's Network, and a flannel pod on every node, whose
/// flanneld starts with it (`Cluster::reconcile`). kubectl lists the manifest's objects in
/// its order.
fn install_flannel(net: &mut Network, manifest: &FlannelManifest, now: u64) -> Result<CommandOutcome, String> {
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    let verb = if cluster.flannel.is_some() {
        "unchanged"
    } else {
        if cluster.calico.is_some() {
            return Err(
                "kubectl apply of kube-flannel.yml: Calico is installed already; fabsim models one CNI per cluster"
                    .into(),
            );
        }
        cluster.flannel = Some(Flannel::new(&manifest.version, manifest.network));
        let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
        for node in &nodes {
            cluster.create_pod(flannel_pod(node), now);
        }
        cluster.reconcile(now);
        "created"
    };
    Ok(CommandOutcome::ok(format!(
        "namespace/kube-flannel {verb}\n\
         clusterrole.rbac.authorization.k8s.io/flannel {verb}\n\
         clusterrolebinding.rbac.authorization.k8s.io/flannel {verb}\n\
         serviceaccount/flannel {verb}\n\
         configmap/kube-flannel-cfg {verb}\n\
         daemonset.apps/kube-flannel-ds {verb}\n"
    )))
}

/// The kube-flannel-ds pod of `node` (host network, tolerates every NoSchedule taint).
pub(super) fn flannel_pod(node: &str) -> PodSpec {
    PodSpec {
        namespace: flannel::NAMESPACE.into(),
        ..system_pod(Owner::DaemonSet(flannel::DAEMONSET.into()), None, Some(node), true)
    }
}

/// The catalogue manifest `url` installs Calico: the datastore and calico-node's environment,
/// the calico-node DaemonSet's pods and calico-kube-controllers. No calico-node has started
/// yet (`start_calico_nodes`). False when Calico was installed already.
pub fn install_calico(net: &mut Network, url: &str, now: u64) -> Result<bool, String> {
    let manifest =
        crate::catalogue::manifest(url).ok_or_else(|| format!("kubectl apply -f {url}: unknown manifest"))?;
    let Some(calico) = &manifest.calico else {
        return Err(format!(
            "kubectl apply -f {url}: the manifest installs nothing fabsim models"
        ));
    };
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    if cluster.calico.is_some() {
        return Ok(false);
    }
    cluster.calico = Some(Calico::new(&calico.version, calico.env.clone()));
    let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
    for node in &nodes {
        cluster.create_pod(
            system_pod(Owner::DaemonSet("calico-node".into()), None, Some(node), true),
            now,
        );
    }
    cluster.create_pod(
        system_pod(Owner::Deployment("calico-kube-controllers".into()), None, None, false),
        now,
    );
    Ok(true)
}

/// The hosts `devices` rebooted (and are up again): calico-node starts again on the nodes
/// among them (autodetection, tunnel address, confd) and their pods get new sandboxes and
/// addresses, in the cluster's start order.
pub fn restart_nodes(net: &mut Network, st: &State, devices: &[DeviceId], now: u64) -> Result<(), String> {
    let Some(cluster) = net.cluster.as_deref_mut() else {
        return Ok(());
    };
    let nodes: Vec<String> = cluster
        .nodes
        .iter()
        .filter(|n| devices.contains(&n.device))
        .map(|n| n.name.clone())
        .collect();
    cluster.reboot_nodes(&nodes);
    if let Some(flannel) = cluster.flannel.as_mut() {
        for n in &nodes {
            flannel.reboot(n);
        }
    }
    start_calico_nodes(net, st, now)?;
    if let Some(c) = net.cluster.as_mut() {
        c.reconcile(now);
    }
    Ok(())
}

/// Scripted IPAM history: each (node, handle) takes the node's next address, as an
/// allocation made and kept before the scenario's view began. A tunnel handle also sets the
/// Node's tunnel address, as calico-node's allocateip does.
pub fn hold_allocations(net: &mut Network, held: &[(String, String)], now: u64) -> Result<(), String> {
    let calico = net
        .cluster
        .as_deref_mut()
        .and_then(|c| c.calico.as_mut())
        .ok_or("inject ipam: Calico is not installed")?;
    for (node, handle) in held {
        let addr = calico
            .assign(node, handle, now)
            .map_err(|e| format!("inject ipam {handle} on {node}: {e}"))?;
        if let Some(kind) = crate::calico::ipam::TunnelKind::of_handle(handle, node) {
            if let Some(n) = calico.datastore.nodes.get_mut(node) {
                *kind.addr_mut(n) = Some(addr);
            }
        }
    }
    Ok(())
}

/// calico-node starts on every node that has none running yet, in join order.
pub fn start_calico_nodes(net: &mut Network, st: &State, now: u64) -> Result<(), String> {
    let Some(mut cluster) = net.cluster.take() else {
        return Ok(());
    };
    let pod_subnet = cluster.pod_cidr;
    let mut result = Ok(());
    // Only the nodes it starts on are copied (with their labels): every kubelet registration
    // calls this, so copying every node each time would be quadratic in the nodes.
    let nodes: Vec<(String, DeviceId, Ipv4Addr, BTreeMap<String, String>)> = match cluster.calico.as_ref() {
        None => Vec::new(),
        Some(calico) => cluster
            .nodes
            .iter()
            .filter(|n| !calico.is_started(&n.name))
            .map(|n| (n.name.clone(), n.device, n.internal_ip, cluster.node_labels(n)))
            .collect(),
    };
    if let Some(calico) = cluster.calico.as_mut() {
        for (node, dev, internal_ip, labels) in nodes {
            let ifaces: Vec<HostIface> = net
                .device(dev)
                .ifaces
                .iter()
                .map(|i| HostIface {
                    name: net.iface(*i).name.clone(),
                    ifindex: net.iface(*i).ifindex,
                    addr: st.ifaces.get(i.idx()).and_then(|s| s.addr),
                })
                .collect();
            let towards = |d: Ipv4Addr| probe_source(net, st, dev, d);
            let facts = HostFacts {
                ifaces: &ifaces,
                internal_ip: Some(internal_ip),
                source_towards: &towards,
            };
            if let Err(e) = calico.start_node(&node, labels, &facts, pod_subnet, now) {
                result = Err(format!("calico-node on {node}: {e}"));
                break;
            }
        }
    }
    net.cluster = Some(cluster);
    result
}

fn kubectl_run(
    net: &mut Network,
    name: &str,
    namespace: &str,
    rest: &[&str],
    now: u64,
) -> Result<CommandOutcome, String> {
    let image = flag(rest, "--image").ok_or("kubectl run: required flag(s) \"image\" not set")?;
    if crate::catalogue::image(image).is_none() {
        return Err(format!(
            "kubectl run --image={image}: not an image fabsim knows (catalogue/images.yaml has: {})",
            crate::catalogue::names().join(", ")
        ));
    }
    let node = match flag(rest, "--overrides") {
        None => None,
        Some(json) => {
            let v: serde_json::Value =
                serde_json::from_str(json).map_err(|e| format!("kubectl run --overrides: invalid JSON: {e}"))?;
            v.pointer("/spec/nodeName").and_then(|n| n.as_str()).map(str::to_string)
        }
    };
    let cluster = net.cluster.as_deref_mut().ok_or("no cluster")?;
    if cluster.pod(namespace, name).is_some() {
        return Ok(CommandOutcome::failed(format!(
            "Error from server (AlreadyExists): pods \"{name}\" already exists\n"
        )));
    }
    if let Some(n) = &node {
        if cluster.node(n).is_none() {
            return Err(format!("kubectl run --overrides: no node {n} in the cluster"));
        }
    }
    cluster.create_pod(bare_pod(namespace, name, node, image), now);
    cluster.reconcile(now);
    Ok(CommandOutcome::ok(format!("pod/{name} created\n")))
}

/// A pod with no controller (`kubectl run`), optionally pinned to a node (`spec.nodeName`).
pub fn bare_pod(namespace: &str, name: &str, node: Option<String>, image: &str) -> PodSpec {
    PodSpec {
        namespace: namespace.to_string(),
        owner: Owner::Bare,
        name: Some(name.to_string()),
        node,
        host_network: false,
        image: image.to_string(),
        tolerates_control_plane: false,
        node_selector: Default::default(),
        declared: Default::default(),
    }
}

/// A manifest's map of strings at `pointer` (`spec.nodeSelector`, a Service's `spec.selector`);
/// empty when absent.
pub(super) fn string_map(doc: &serde_json::Value, pointer: &str) -> BTreeMap<String, String> {
    doc.pointer(pointer)
        .and_then(|v| v.as_object())
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}
