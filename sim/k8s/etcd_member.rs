//! etcd's membership as `etcdctl` shows it for the single stacked member fabsim models
//! (k8s-cidr-migrations.md §1.5, §5 C20): `member list` and `endpoint health [--cluster]` in
//! etcd v3.5's simple and table formats (`etcdctl/ctlv3/command/member_command.go`,
//! `ep_command.go`, `printer.go`, `printer_simple.go`, `printer_table.go`).
//!
//! The member's ID is etcd's: a bootstrapping member's is `computeMemberId(peerURLs,
//! clusterToken, nil)` (`server/etcdserver/api/membership/member.go`, called with no time by
//! `NewClusterFromURLsMap` for both a new cluster and `snapshot restore`): the first 8 bytes,
//! big-endian, of the SHA-1 of the sorted peer URLs joined, then the token. Its name and client
//! URLs are what the running etcd publishes at every start (its `--name` and
//! `--advertise-client-urls`); its peer URLs those its data directory was bootstrapped with.

use sha1::{Digest, Sha1};

use super::cluster::Cluster;
use super::command::CommandOutcome;
use super::control_plane::ControlPlane;
use super::etcd_restore::Member;

/// etcd's default `--initial-cluster-token` (kubeadm sets none).
pub(super) const DEFAULT_TOKEN: &str = "etcd-cluster";

/// What `endpoint health` shows as the time a healthy proposal took: fabsim's fixed virtual
/// value (real etcd prints the wall-clock duration of its `Get`).
const HEALTHY_TOOK_MS: u64 = 10;

/// The time an unanswered check takes: etcdctl's default `--command-timeout` (5s), after which
/// the `Get` fails with `context deadline exceeded`.
const TIMEOUT_MS: u64 = 5_000;

/// The error a request to an etcd that does not answer ends with.
const DEADLINE: &str = "context deadline exceeded";

/// etcdctl's `-w`: the two printers fabsim models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Simple,
    Table,
}

/// `computeMemberId(peerURLs, token, nil)`.
pub(super) fn member_id(m: &Member) -> u64 {
    let mut urls = m.peer_urls.clone();
    urls.sort();
    let mut h = Sha1::new();
    h.update(urls.concat().as_bytes());
    h.update(m.token.as_bytes());
    // SHA-1's 20 bytes always have a first 8.
    let first = h.finalize().as_slice().first_chunk::<8>().copied().unwrap_or_default();
    u64::from_be_bytes(first)
}

/// The member etcd runs as: its data directory's (a restore's), else kubeadm's bootstrap from
/// the manifest's `--initial-advertise-peer-urls` and `--initial-cluster-token`.
fn running_member(cluster: &Cluster, cp: &ControlPlane) -> Member {
    if let Some(m) = cluster.etcd_data.restored_member() {
        return m.clone();
    }
    Member {
        peer_urls: split(cp.etcd_flag("initial-advertise-peer-urls").unwrap_or_default()),
        token: cp
            .etcd_flag("initial-cluster-token")
            .unwrap_or(DEFAULT_TOKEN)
            .to_string(),
    }
}

fn split(list: &str) -> Vec<String> {
    list.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// etcdctl's `ExitWithError(ExitError, err)`.
fn error(text: &str) -> CommandOutcome {
    CommandOutcome::failed(format!("Error: {text}\n"))
}

/// The members' rows of `makeMemberListTable`: ID, status, name, peer and client URLs,
/// learner. None when etcd does not answer.
fn rows(cluster: &Cluster, cp: &ControlPlane, now: u64) -> Option<Vec<[String; 6]>> {
    if cp.etcd_down(now) {
        return None;
    }
    let m = running_member(cluster, cp);
    Some(vec![[
        format!("{:x}", member_id(&m)),
        "started".into(),
        cp.etcd_flag("name").unwrap_or_default().to_string(),
        m.peer_urls.join(","),
        cp.etcd_flag("advertise-client-urls").unwrap_or_default().to_string(),
        "false".into(),
    ]])
}

/// `etcdctl member list [-w table]`.
pub(super) fn member_list(cluster: &Cluster, cp: &ControlPlane, format: Format, now: u64) -> CommandOutcome {
    let Some(rows) = rows(cluster, cp, now) else {
        return error(DEADLINE);
    };
    let out = match format {
        Format::Simple => rows.iter().map(|r| r.join(", ") + "\n").collect(),
        Format::Table => crate::views::tables::tablewriter_right(
            &["ID", "STATUS", "NAME", "PEER ADDRS", "CLIENT ADDRS", "IS LEARNER"],
            &rows,
        ),
    };
    CommandOutcome::ok(out)
}

/// Whether etcd serves clients at `endpoint` (`[scheme://]host:port`): one of its
/// `--listen-client-urls`.
fn serves(cp: &ControlPlane, endpoint: &str) -> bool {
    let host_port = |u: &str| {
        u.split_once("://")
            .map_or(u, |(_, rest)| rest)
            .trim_end_matches('/')
            .to_string()
    };
    let listen = split(cp.etcd_flag("listen-client-urls").unwrap_or_default());
    listen.iter().any(|l| host_port(l) == host_port(endpoint))
}

/// `etcdctl endpoint health [--cluster] [-w table]` against `endpoints` (`--endpoints`, in the
/// order given: real etcdctl prints them in the order its concurrent checks finish).
pub(super) fn endpoint_health(
    cluster: &Cluster,
    cp: &ControlPlane,
    endpoints: &[String],
    all_members: bool,
    format: Format,
    now: u64,
) -> CommandOutcome {
    let endpoints: Vec<String> = if all_members {
        // `endpointsFromCluster`: the members' client URLs, from a member list.
        match rows(cluster, cp, now) {
            Some(rows) => rows.iter().flat_map(|r| split(&r[4])).collect(),
            None => {
                return error(&format!(
                    "failed to fetch endpoints from etcd cluster member list: {DEADLINE}"
                ))
            }
        }
    } else {
        endpoints.to_vec()
    };
    let took = |ms| super::drain::go_duration_string(ms);
    // (endpoint, health, took, error) as `epHealth` holds them.
    let checks: Vec<[String; 4]> = endpoints
        .iter()
        .map(|ep| {
            if !cp.etcd_down(now) && serves(cp, ep) {
                [ep.clone(), "true".into(), took(HEALTHY_TOOK_MS), String::new()]
            } else {
                [ep.clone(), "false".into(), took(TIMEOUT_MS), DEADLINE.into()]
            }
        })
        .collect();
    let mut out = match format {
        Format::Simple => checks
            .iter()
            .map(|[ep, _, took, err]| match err.as_str() {
                "" => format!("{ep} is healthy: successfully committed proposal: took = {took}\n"),
                // On stderr.
                err => format!("{ep} is unhealthy: failed to commit proposal: {err}\n"),
            })
            .collect(),
        Format::Table => crate::views::tables::tablewriter_right(&["ENDPOINT", "HEALTH", "TOOK", "ERROR"], &checks),
    };
    if checks.iter().any(|c| !c[3].is_empty()) {
        out += "Error: unhealthy cluster\n";
        return CommandOutcome::failed(out);
    }
    CommandOutcome::ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_member_id_is_the_sha1_of_the_peer_urls_and_the_token() {
        // etcd v3.5's Procfile cluster (infra1, infra2 with token etcd-cluster-1) and the IDs
        // its etcdctl/README.md `member list` example shows.
        let id = |url: &str| {
            let m = Member {
                peer_urls: vec![url.into()],
                token: "etcd-cluster-1".into(),
            };
            format!("{:x}", member_id(&m))
        };
        assert_eq!(id("http://127.0.0.1:12380"), "8211f1d0f64f3269");
        assert_eq!(id("http://127.0.0.1:22380"), "91bc3c398fb3c146");
    }
}
