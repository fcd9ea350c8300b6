//! Busybox 1.36.1 `nslookup NAME [SERVER]` in a pod (`networking/nslookup.c`, the
//! FEATURE_NSLOOKUP_BIG resolver busybox builds by default): the nameservers of the pod's
//! resolv.conf (or SERVER) tried in order; A then AAAA queries, each for every search domain
//! when NAME has no dot (busybox ignores `ndots` and never tries NAME itself then; a NAME with
//! a dot is sent as it is); each reply printed as `parse_reply` and `send_queries` print it.
//! The queries travel the data plane (`k8s::dns_query`); the answers are CoreDNS's
//! (`Cluster::coredns_answer`).

use std::net::Ipv4Addr;

use crate::engine::State;
use crate::k8s::{DnsAnswer, DnsReached};
use crate::model::{DeviceId, Network};
use crate::views::CommandError;

pub(crate) fn nslookup(net: &Network, st: &State, dev: DeviceId, args: &[String]) -> Result<String, CommandError> {
    if let Some(opt) = args.iter().find(|a| a.starts_with('-')) {
        return Err(CommandError::new(format!(
            "nslookup {opt}: fabsim models `nslookup NAME [SERVER]` only"
        )));
    }
    let (name, server) = match args {
        [name] => (name.as_str(), None),
        [name, server] => (name.as_str(), Some(server.as_str())),
        _ => {
            return Err(CommandError::new(
                "nslookup: fabsim models `nslookup NAME [SERVER]` only",
            ))
        }
    };
    let cluster = net
        .cluster
        .as_deref()
        .ok_or_else(|| CommandError::new("nslookup: fabsim resolves names in a cluster's pods only"))?;
    let dns = cluster.pod_on_device(dev).and_then(|p| p.dns.as_ref()).ok_or_else(|| {
        CommandError::new("nslookup: fabsim resolves names in pods that use the cluster DNS (dnsPolicy ClusterFirst)")
    })?;
    if name.parse::<Ipv4Addr>().is_ok() {
        return Err(CommandError::new(format!(
            "nslookup {name}: reverse (PTR) lookups are not modelled by fabsim"
        )));
    }
    let servers: Vec<Ipv4Addr> = match server {
        Some(s) => vec![s
            .parse()
            .map_err(|_| CommandError::new(format!("nslookup: bad address '{s}'")))?],
        None => dns.nameservers.clone(),
    };
    let names: Vec<String> = if name.contains('.') || dns.searches.is_empty() {
        vec![name.to_string()]
    } else {
        dns.searches.iter().map(|s| format!("{name}.{s}")).collect()
    };
    for server in servers {
        if dns_reached(net, st, dev, server) {
            return answers(cluster, server, &names);
        }
    }
    Ok(";; connection timed out; no servers could be reached\n\n".into())
}

fn dns_reached(net: &Network, st: &State, dev: DeviceId, server: Ipv4Addr) -> bool {
    // A REJECT (no endpoints) makes the connected socket's reads fail with ECONNREFUSED
    // (printed to stderr, as many times as errors race with the retries) until the timeout:
    // the same final line as a query that is lost.
    matches!(crate::k8s::dns_query(net, st, dev, server), DnsReached::CoreDns)
}

/// The server's replies: the header once, then each query's (A for every name, then AAAA).
fn answers(cluster: &crate::k8s::Cluster, server: Ipv4Addr, names: &[String]) -> Result<String, CommandError> {
    let mut out = format!("Server:\t\t{server}\nAddress:\t{server}:53\n\n");
    for aaaa in [false, true] {
        for q in names {
            let answer = cluster.coredns_answer(q).ok_or_else(|| {
                CommandError::new(format!(
                    "nslookup {q}: CoreDNS forwards names outside the cluster domain upstream, which fabsim does not model"
                ))
            })?;
            match answer {
                DnsAnswer::NxDomain => out += &format!("** server can't find {q}: NXDOMAIN\n"),
                // CoreDNS's answers are authoritative: no "Non-authoritative answer:" line. An
                // IPv4-only name has no AAAA record: an empty (NODATA) reply prints nothing.
                DnsAnswer::Addresses(ips) if !aaaa => {
                    for ip in ips {
                        out += &format!("Name:\t{q}\nAddress: {ip}\n");
                    }
                }
                DnsAnswer::Addresses(_) | DnsAnswer::NoData => {}
            }
            out.push('\n');
        }
    }
    Ok(out)
}
