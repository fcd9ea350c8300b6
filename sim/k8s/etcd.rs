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

use std::collections::BTreeMap;

use ipnet::Ipv4Net;
use regex::{NoExpand, Regex};

use super::cluster::Cluster;
use super::command::CommandOutcome;
use super::control_plane::ControlPlane;
use super::etcd_member::{self, Format};
use super::etcd_restore::{self, EtcdSnapshot};
use crate::model::{DeviceId, Network};

/// Where kubeadm's etcd serves clients.
const ENDPOINT: &str = "https://127.0.0.1:2379";

/// Whether `dev` is the control plane's node (where etcd listens on 127.0.0.1): the error
/// saying fabsim models etcd nowhere else, if not.
fn check_control_plane(net: &Network, dev: DeviceId, tool: &str) -> Result<(), String> {
    let Some(cp) = net.cluster.as_deref().and_then(|c| c.control_plane.as_ref()) else {
        return Err(format!(
            "{tool} on {}: no etcd runs yet (`kubeadm init` starts the stacked etcd at {ENDPOINT})",
            net.device(dev).name
        ));
    };
    if cp.device == dev {
        return Ok(());
    }
    Err(format!(
        "{tool} on {}: fabsim models etcd on the control-plane node only (stacked etcd at {ENDPOINT})",
        net.device(dev).name
    ))
}

/// The control plane's cluster, if `dev` is its node.
fn on_control_plane<'a>(net: &'a mut Network, dev: DeviceId, tool: &str) -> Result<&'a mut Cluster, String> {
    check_control_plane(net, dev, tool)?;
    net.cluster.as_deref_mut().ok_or_else(|| format!("{tool}: no cluster"))
}

/// The flags of etcdctl and etcdutl that fabsim reads: (name, takes a value). `-w` is
/// `--write-out`'s shorthand.
const FLAGS: [(&str, bool); 13] = [
    ("endpoints", true),
    ("cacert", true),
    ("cert", true),
    ("key", true),
    ("write-out", true),
    ("cluster", false),
    ("data-dir", true),
    ("wal-dir", true),
    ("name", true),
    ("initial-cluster", true),
    ("initial-cluster-token", true),
    ("initial-advertise-peer-urls", true),
    ("skip-hash-check", false),
];

/// The restore flags (`snapshot restore` only).
const RESTORE_FLAGS: [&str; 7] = [
    "data-dir",
    "wal-dir",
    "name",
    "initial-cluster",
    "initial-cluster-token",
    "initial-advertise-peer-urls",
    "skip-hash-check",
];

/// A command line as pflag reads it: flags anywhere (`--name value`, `--name=value`, `-w
/// value`, `-wvalue`), the other words in order.
struct Parsed<'a> {
    words: Vec<&'a str>,
    /// The flags given, by name (the last one of a name wins), booleans as "true".
    flags: BTreeMap<&'static str, &'a str>,
}

impl Parsed<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.flags.get(name).copied()
    }
}

fn parse<'a>(tool: &str, args: &[&'a str]) -> Result<Parsed<'a>, String> {
    let mut p = Parsed {
        words: Vec::new(),
        flags: BTreeMap::new(),
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let (name, inline) = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            }
        } else if let Some(short) = a.strip_prefix("-w") {
            (
                "write-out",
                Some(short.strip_prefix('=').unwrap_or(short)).filter(|v| !v.is_empty()),
            )
        } else if a.starts_with('-') && a.len() > 1 {
            return Err(format!("{tool} {a}: fabsim models no short flag but -w"));
        } else {
            p.words.push(a);
            continue;
        };
        let Some(&(known, takes_value)) = FLAGS.iter().find(|(n, _)| *n == name) else {
            return Err(format!(
                "{tool} --{name}: fabsim models {}",
                FLAGS
                    .iter()
                    .map(|(n, _)| format!("--{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        let value = match (inline, takes_value) {
            (Some(v), _) => v,
            (None, false) => "true",
            (None, true) => {
                i += 1;
                args.get(i - 1)
                    .copied()
                    .ok_or_else(|| format!("{tool}: flag needs an argument: --{name}"))?
            }
        };
        p.flags.insert(known, value);
    }
    Ok(p)
}

/// `-w`: the simple and table printers.
fn write_out(p: &Parsed<'_>, tool: &str) -> Result<Format, String> {
    match p.get("write-out").unwrap_or("simple") {
        "simple" => Ok(Format::Simple),
        "table" => Ok(Format::Table),
        other => Err(format!("{tool} -w {other}: fabsim models the simple and table formats")),
    }
}

/// `etcdctl …` (after any `ETCDCTL_API=3`): `snapshot save FILE`, `snapshot restore FILE
/// [restore flags]` (deprecated in v3.5 in favour of etcdutl's), `member list`, `endpoint
/// health [--cluster]`, with the connection flags and `-w simple|table`.
pub(super) fn etcdctl(net: &mut Network, dev: DeviceId, args: &[&str], now: u64) -> Result<CommandOutcome, String> {
    let p = parse("etcdctl", args)?;
    let sub = p.words.get(..2).unwrap_or(&p.words).join(" ");
    let restoring = sub == "snapshot restore";
    if let Some(f) = RESTORE_FLAGS.iter().find(|f| !restoring && p.get(f).is_some()) {
        return Err(format!(
            "etcdctl {sub} --{f}: fabsim models --{f} on `snapshot restore` only"
        ));
    }
    if p.get("cluster").is_some() && sub != "endpoint health" {
        return Err(format!(
            "etcdctl {sub} --cluster: fabsim models --cluster on `endpoint health` only"
        ));
    }
    let format = write_out(&p, "etcdctl")?;
    match p.words.as_slice() {
        ["snapshot", "save", file] => {
            let cluster = on_control_plane(net, dev, "etcdctl")?;
            let snapshot = EtcdSnapshot::take(cluster, file, now);
            cluster.etcd_snapshots.push(snapshot);
            Ok(CommandOutcome::ok(format!("Snapshot saved at {file}\n")))
        }
        ["snapshot", "save", ..] => Ok(bad_args("Error: snapshot save expects one argument\n")),
        ["snapshot", "restore", files @ ..] => {
            let cluster = on_control_plane(net, dev, "etcdctl")?;
            let mut out = restore(cluster, &p, files, "etcdctl")?;
            // snapshotRestoreCommandFunc warns first, whatever follows.
            out.output
                .insert_str(0, "Deprecated: Use `etcdutl snapshot restore` instead.\n\n");
            Ok(out)
        }
        ["member", "list"] | ["endpoint", "health"] => read(net, dev, &p, format, now),
        _ => Err(format!(
            "etcdctl {}: fabsim models `etcdctl snapshot save|restore`, `member list` and `endpoint health`",
            p.words.join(" ")
        )),
    }
}

/// `etcdctl member list|endpoint health …`, which only read: for a scenario's `output:`
/// expectation as for a runbook line (its text; the exit status is in the text's `Error:`).
pub fn etcdctl_read(net: &Network, dev: DeviceId, args: &[&str], now: u64) -> Result<String, String> {
    let p = parse("etcdctl", args)?;
    let format = write_out(&p, "etcdctl")?;
    match p.words.as_slice() {
        ["member", "list"] | ["endpoint", "health"] => read(net, dev, &p, format, now).map(|o| o.output),
        _ => Err(format!(
            "etcdctl {}: fabsim reads `etcdctl member list` and `endpoint health` outside a step's `run:`",
            p.words.join(" ")
        )),
    }
}

/// `member list` or `endpoint health` (the parsed words say which).
fn read(net: &Network, dev: DeviceId, p: &Parsed<'_>, format: Format, now: u64) -> Result<CommandOutcome, String> {
    check_control_plane(net, dev, "etcdctl")?;
    let cluster = net.cluster.as_deref().ok_or("etcdctl: no cluster")?;
    let cp = control_plane_of(cluster)?;
    if p.words.first() == Some(&"member") {
        return Ok(etcd_member::member_list(cluster, cp, format, now));
    }
    // etcdctl's default --endpoints.
    let endpoints: Vec<String> = p
        .get("endpoints")
        .unwrap_or("127.0.0.1:2379")
        .split(',')
        .map(str::to_string)
        .collect();
    let all = p.get("cluster") == Some("true");
    Ok(etcd_member::endpoint_health(cluster, cp, &endpoints, all, format, now))
}

/// `etcdutl snapshot restore FILE --data-dir DIR [restore flags]` (etcd v3.5's
/// `etcdutl/etcdutl/snapshot_command.go`).
pub(super) fn etcdutl(net: &mut Network, dev: DeviceId, args: &[&str]) -> Result<CommandOutcome, String> {
    let p = parse("etcdutl", args)?;
    if let Some(f) = ["endpoints", "cacert", "cert", "key", "cluster"]
        .iter()
        .find(|f| p.get(f).is_some())
    {
        return Err(format!("etcdutl --{f}: etcdutl works on files and has no --{f}"));
    }
    write_out(&p, "etcdutl")?;
    match p.words.as_slice() {
        ["snapshot", "restore", files @ ..] => {
            if p.get("data-dir").is_none() {
                // cobra's required-flag error comes with the command's usage text, which fabsim
                // does not reproduce.
                return Err(
                    "etcdutl snapshot restore: --data-dir is required (fabsim does not print cobra's usage)".into(),
                );
            }
            let cluster = on_control_plane(net, dev, "etcdutl")?;
            restore(cluster, &p, files, "etcdutl")
        }
        _ => Err(format!(
            "etcdutl {}: fabsim models `etcdutl snapshot restore`",
            p.words.join(" ")
        )),
    }
}

/// `cobrautl.ExitWithError(cobrautl.ExitBadArgs, …)`: exit status 128.
fn bad_args(text: &str) -> CommandOutcome {
    CommandOutcome {
        status: 128,
        ..CommandOutcome::failed(text)
    }
}

fn control_plane_of(cluster: &Cluster) -> Result<&ControlPlane, String> {
    cluster
        .control_plane
        .as_ref()
        .ok_or_else(|| "etcdctl: fabsim knows no etcd manifest for a cluster read from a snapshot".to_string())
}

/// `SnapshotRestoreCommandFunc` and `v3Manager.Restore`'s checks, in their order: one file,
/// the URLs, the local member in the initial cluster, the data directory, the file. Success
/// prints nothing on stdout (its zap log lines on stderr are not kept).
fn restore(cluster: &mut Cluster, p: &Parsed<'_>, files: &[&str], tool: &str) -> Result<CommandOutcome, String> {
    let [file] = files else {
        return Ok(bad_args("Error: snapshot restore requires exactly one argument\n"));
    };
    if p.get("wal-dir").is_some() {
        return Err(format!(
            "{tool} snapshot restore --wal-dir: fabsim models the WAL inside --data-dir"
        ));
    }
    let name = p.get("name").unwrap_or("default");
    // The flag defaults of snapshot_command.go (initialClusterFromName(defaultName): the
    // default names "default", whatever --name says).
    let peer_urls: Vec<&str> = p
        .get("initial-advertise-peer-urls")
        .unwrap_or("http://localhost:2380")
        .split(',')
        .collect();
    let initial_cluster = p.get("initial-cluster").unwrap_or("default=http://localhost:2380");
    let token = p.get("initial-cluster-token").unwrap_or(etcd_member::DEFAULT_TOKEN);
    let fail = |e: String| Ok(CommandOutcome::failed(format!("Error: {e}\n")));
    if let Err(e) = urls(&peer_urls) {
        return fail(e);
    }
    // types.NewURLsMap: `name=url` pairs, comma-separated.
    let mut members: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for pair in initial_cluster.split(',') {
        if let Some((n, u)) = pair.split_once('=') {
            members.entry(n).or_default().push(u);
        }
    }
    for u in members.values() {
        if let Err(e) = urls(u) {
            return fail(e);
        }
    }
    let Some(own) = members.get(name) else {
        return fail(format!(
            "couldn't find local name {name:?} in the initial cluster configuration"
        ));
    };
    let (mut own, mut advertised) = (own.clone(), peer_urls.clone());
    own.sort();
    advertised.sort();
    if own != advertised {
        return Err(format!(
            "{tool} snapshot restore: --initial-advertise-peer-urls {} differ from --initial-cluster's URLs for {name} \
             ({}); fabsim does not model etcd's URL resolution and its error text",
            advertised.join(","),
            own.join(",")
        ));
    }
    if members.len() > 1 {
        return Err(format!(
            "{tool} snapshot restore: fabsim models single-member etcd (one member in --initial-cluster)"
        ));
    }
    // The default data directory is `<name>.etcd` in the working directory.
    let default_dir = format!("{name}.etcd");
    let request = etcd_restore::Restore {
        file,
        data_dir: p.get("data-dir").unwrap_or(&default_dir),
        member: etcd_restore::Member {
            peer_urls: own.iter().map(|u| u.to_string()).collect(),
            token: token.to_string(),
        },
    };
    match cluster.restore_snapshot(request) {
        Ok(()) => Ok(CommandOutcome::ok("")),
        Err(e) => fail(e),
    }
}

/// `types.NewURLs`' checks of each URL, with its error texts.
fn urls(list: &[&str]) -> Result<(), String> {
    if list.is_empty() {
        return Err("no valid URLs given".into());
    }
    for raw in list {
        let u = raw.trim();
        let (scheme, rest) = u.split_once("://").unwrap_or(("", u));
        if !matches!(scheme, "http" | "https" | "unix" | "unixs") {
            return Err(format!("URL scheme must be http, https, unix, or unixs: {u}"));
        }
        let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
        let port_ok = host
            .rsplit_once(':')
            .is_some_and(|(h, _)| !h.contains(':') || (h.starts_with('[') && h.ends_with(']')));
        if !port_ok {
            return Err(format!("URL address does not have the form \"host:port\": {u}"));
        }
        if !path.is_empty() || rest.contains('/') {
            return Err(format!("URL must not contain a path: {u}"));
        }
    }
    Ok(())
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
    pub(super) fn node_pod_cidrs_rewritten(&mut self, now: u64) {
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
            .filter(|(_, at)| !self.etcd_snapshots.iter().any(|s| s.at_ms <= *at))
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
