//! etcd as a runbook touches it on the control-plane node (stacked etcd, kubeadm's, serving
//! clients on https://127.0.0.1:2379):
//!
//! - `[ETCDCTL_API=3] etcdctl snapshot save FILE [--endpoints=… --cacert=… --cert=… --key=…]`:
//!   etcd v3.5's etcdctl prints `Snapshot saved at FILE` on stdout (`snapshotSaveCommandFunc`,
//!   `etcdctl/ctlv3/command/snapshot_command.go`); its zap log lines on stderr are not kept;
//! - `./etcdhelper [-cacert F] [-cert F] [-key F] [-endpoint URL] change-pod-cidr CIDR`
//!   (seed 000, k8s-cidr-migrations.md §1.4 step 3): as etcdhelper's `changePodCIDR` does it,
//!   every key under `/registry/minions` is listed (its `listKeys` prints each key), then each
//!   Node's `spec.podCIDR` is rewritten *textually* — the first two octets replaced by the
//!   argument's, the mask kept, only `podCIDRs[0]` — with a line `<key> <old> > <new>`. It
//!   writes etcd directly: no API validation, so the immutable podCIDR changes; the apiserver's
//!   watch shows the new value, and a running kube-controller-manager's node IPAM occupies it
//!   (`AllocateOrOccupyCIDR` on the Node update), a crash-looping one picks it up at its next
//!   restart.
//!
//! Each direct write and each control-plane edit is recorded, so the run can say when one
//! happened without a snapshot taken before it (§5 C1: no rollback path; [000] names
//! "restore etcd from a snapshot" as its rollback but never takes one, §6 item 12).

use ipnet::Ipv4Net;
use regex::{NoExpand, Regex};

use super::cluster::Cluster;
use super::command::CommandOutcome;
use crate::model::{DeviceId, Network};

/// Where kubeadm's etcd serves clients.
const ENDPOINT: &str = "https://127.0.0.1:2379";

/// The control plane's cluster, if `dev` is its node (where etcd listens on 127.0.0.1).
fn on_control_plane<'a>(net: &'a mut Network, dev: DeviceId, tool: &str) -> Result<&'a mut Cluster, String> {
    let name = net.device(dev).name.clone();
    net.cluster
        .as_deref_mut()
        .filter(|c| c.control_plane.as_ref().is_some_and(|cp| cp.device == dev))
        .ok_or_else(|| {
            format!("{tool} on {name}: fabsim models etcd on the control-plane node only (stacked etcd at {ENDPOINT})")
        })
}

/// `etcdctl …` (after any `ETCDCTL_API=3`): `snapshot save FILE` with its connection flags.
pub(super) fn etcdctl(net: &mut Network, dev: DeviceId, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let known = ["--endpoints", "--cacert", "--cert", "--key"];
    let mut positional = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if let Some(name) = known
            .iter()
            .find(|k| a.strip_prefix(**k).is_some_and(|r| r.is_empty() || r.starts_with('=')))
        {
            // `--flag value` takes the next word.
            i += if *a == *name { 2 } else { 1 };
            continue;
        }
        if a.starts_with('-') {
            return Err(format!(
                "etcdctl {a}: fabsim models etcdctl's --endpoints, --cacert, --cert and --key"
            ));
        }
        positional.push(*a);
        i += 1;
    }
    match positional.as_slice() {
        ["snapshot", "save", file] => {
            let cluster = on_control_plane(net, dev, "etcdctl")?;
            cluster.etcd_snapshots.push((file.to_string(), now));
            Ok(CommandOutcome::ok(format!("Snapshot saved at {file}\n")))
        }
        // etcdctl's own error (cobrautl.ExitBadArgs).
        ["snapshot", "save", ..] => Ok(CommandOutcome::failed("Error: snapshot save expects one argument\n")),
        _ => Err(format!(
            "etcdctl {}: fabsim models `etcdctl snapshot save FILE`",
            positional.join(" ")
        )),
    }
}

/// etcdhelper's argument check for change-pod-cidr (its regular expression, verbatim).
const CIDR_ARG: &str = r"^(([0-9]{1,3}.){3}([0-9])(/[0-9]{1,2})?)$";

/// `etcdhelper [flags] ACTION ARGS`: the change-pod-cidr action.
pub(super) fn etcdhelper(net: &mut Network, dev: DeviceId, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    // Go's flag package: -name value, --name value, -name=value; parsing stops at the first
    // word that is not a flag.
    let mut i = 0;
    while let Some(a) = args.get(i).filter(|a| a.starts_with('-')) {
        let name = a.trim_start_matches('-');
        let (name, inline) = match name.split_once('=') {
            Some((n, _)) => (n, true),
            None => (name, false),
        };
        if !matches!(name, "cacert" | "cert" | "key" | "endpoint") {
            return Err(format!("etcdhelper: flag provided but not defined: -{name}"));
        }
        i += if inline { 1 } else { 2 };
    }
    let rest = args.get(i..).unwrap_or_default();
    let fail = |text: &str| Ok(CommandOutcome::failed(text));
    let (action, cidr) = match rest {
        [] => return fail("ERROR: you need to specify action: dump or ls [<key>] or get <key>\n"),
        [action, cidr, ..] => (*action, *cidr),
        [action] => (*action, ""),
    };
    if action != "change-pod-cidr" {
        return Err(format!(
            "etcdhelper {action}: fabsim models etcdhelper's change-pod-cidr"
        ));
    }
    let valid = Regex::new(CIDR_ARG).map_err(|e| e.to_string())?;
    if cidr.is_empty() {
        return fail("ERROR: you need to specify Pod CIDR\n");
    }
    if !valid.is_match(cidr) {
        return fail("ERROR: you need to specify correct Pod CIDR\nExample: 10.0.0.0 or 10.0.0.0/16\n");
    }
    let cluster = on_control_plane(net, dev, "etcdhelper")?;
    change_pod_cidr(cluster, cidr, now)
}

/// etcdhelper's `changePodCIDR` on the Nodes in etcd's key order.
fn change_pod_cidr(cluster: &mut Cluster, cidr: &str, now: u64) -> Result<CommandOutcome, String> {
    // The two expressions of changePodCIDR: the argument's first two octets (what is left when
    // its last two octets and mask are cut off), put in place of each podCIDR's.
    let head = Regex::new(r"^([0-9]*.[0-9]*)").map_err(|e| e.to_string())?;
    let tail = Regex::new(r"(.[0-9].[0-9/]*$)").map_err(|e| e.to_string())?;
    let prefix = tail.replace_all(cidr, "").into_owned();
    let mut names: Vec<String> = cluster.nodes.iter().map(|n| n.name.clone()).collect();
    names.sort();
    let key = |n: &str| format!("/registry/minions/{n}");
    let mut out: String = names.iter().map(|n| key(n) + "\n").collect();
    cluster
        .etcd_writes
        .push((format!("etcdhelper change-pod-cidr {cidr}"), now));
    for name in &names {
        let Some(node) = cluster.nodes.iter_mut().find(|n| n.name == *name) else {
            continue;
        };
        let old = node.pod_cidr.map(|c| c.to_string()).unwrap_or_default();
        let new = head.replace_all(&old, NoExpand(&prefix)).into_owned();
        out += &format!("{} {old} > {new}\n", key(name));
        if old.is_empty() {
            // `node.Spec.PodCIDRs[0] = …` on a Node without podCIDRs: Go panics there.
            out += "panic: runtime error: index out of range [0] with length 0\n";
            cluster.node_pod_cidrs_rewritten(now);
            return Ok(CommandOutcome {
                status: 2,
                ..CommandOutcome::failed(out)
            });
        }
        let parsed = new.parse::<Ipv4Net>().map_err(|_| {
            format!("etcdhelper wrote podCIDR {new:?} for {name}, which fabsim cannot hold as an IPv4 CIDR")
        })?;
        node.pod_cidr = Some(parsed);
    }
    cluster.node_pod_cidrs_rewritten(now);
    Ok(CommandOutcome::ok(out))
}

impl Cluster {
    /// The Nodes' podCIDRs changed behind the apiserver's back: kube-controller-manager's
    /// informer sees the updates. Running, its node IPAM occupies the new values (one outside
    /// its range is only logged); crash-looping because a podCIDR was outside its range, its
    /// next restart rebuilds node IPAM from them.
    fn node_pod_cidrs_rewritten(&mut self, now: u64) {
        if self.node_ipam_failed() {
            self.restart_controller_manager(now);
            return;
        }
        let cidrs: Vec<Ipv4Net> = self.nodes.iter().filter_map(|n| n.pod_cidr).collect();
        for c in cidrs {
            self.occupy_pod_cidr(c);
        }
    }

    /// The control-plane edits and direct etcd writes made with no `etcdctl snapshot save`
    /// before them (§5 C1).
    pub fn rollback_findings(&self) -> Vec<String> {
        self.etcd_writes
            .iter()
            .filter(|(_, at)| !self.etcd_snapshots.iter().any(|(_, s)| s <= at))
            .map(|(what, _)| {
                format!(
                    "{what}: no etcd snapshot was taken before it (etcdctl snapshot save), so there is no rollback \
                     path; a direct etcd write has no validation and no history (k8s-cidr-migrations.md §1.4 step 1, \
                     §5 C1)"
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rewrite_replaces_the_first_two_octets_and_keeps_the_mask() {
        let head = Regex::new(r"^([0-9]*.[0-9]*)").unwrap();
        let tail = Regex::new(r"(.[0-9].[0-9/]*$)").unwrap();
        let prefix = tail.replace_all("10.212.0.0/16", "").into_owned();
        assert_eq!(prefix, "10.212");
        assert_eq!(head.replace_all("10.112.3.0/24", NoExpand(&prefix)), "10.212.3.0/24");
        // Only /16-aligned moves are expressible: the third octet stays.
        assert_eq!(head.replace_all("10.112.3.0/24", NoExpand("10.5")), "10.5.3.0/24");
        let valid = Regex::new(CIDR_ARG).unwrap();
        assert!(valid.is_match("10.212.0.0/16"));
        assert!(!valid.is_match("10.212.0.10/16"));
    }
}
