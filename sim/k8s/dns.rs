//! Cluster DNS as pods see it:
//!
//! - a pod's `/etc/resolv.conf`, written once when its sandbox is created: for dnsPolicy
//!   ClusterFirst (every pod fabsim creates that is not host-network and not CoreDNS, whose
//!   kubeadm manifest says `dnsPolicy: Default`) the kubelet's `clusterDNS` as nameservers,
//!   `NS.svc.DOMAIN svc.DOMAIN DOMAIN` as search path and `ndots:5` (kubernetes
//!   `pkg/kubelet/network/dns/dns.go`: `GetPodDNS`, `generateSearchesForDNSClusterFirst`,
//!   `defaultDNSOptions`), in containerd's layout (`parseDNSOptions`: search, nameserver,
//!   options). fabsim's hosts have no search domains of their own to append.
//! - a query's fate: a UDP/53 probe from the pod's network namespace to the nameserver through
//!   the data plane — kube-proxy DNATs it to a kube-dns endpoint, or REJECTs it (no ready
//!   endpoint), or nothing matches and it goes wherever routing sends it;
//! - CoreDNS's answer (its `kubernetes` plugin, authoritative for the cluster domain): a
//!   Service's ClusterIP as the A record of `SVC.NS.svc.DOMAIN`, NXDOMAIN for names it does not
//!   have, no A record (NODATA) for a Service without a ClusterIP;
//! - the finding: which pods cannot resolve, and why.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use super::cluster::{Cluster, Owner, Pod, PodPhase};
use crate::dataplane::{error_text, probe, IcmpError, ProbeKind, ProbeOutcome};
use crate::engine::State;
use crate::model::{DeviceId, Network};

/// The DNS configuration the kubelet gave a pod's sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDns {
    pub nameservers: Vec<Ipv4Addr>,
    pub searches: Vec<String>,
    pub options: Vec<String>,
}

impl PodDns {
    /// `/etc/resolv.conf` as containerd writes it.
    pub fn resolv_conf(&self) -> String {
        let mut out = String::new();
        if !self.searches.is_empty() {
            out += &format!("search {}\n", self.searches.join(" "));
        }
        for ns in &self.nameservers {
            out += &format!("nameserver {ns}\n");
        }
        if !self.options.is_empty() {
            out += &format!("options {}\n", self.options.join(" "));
        }
        out
    }
}

/// Pods that resolve through the cluster DNS (dnsPolicy ClusterFirst and not host-network).
fn cluster_first(pod: &Pod) -> bool {
    !pod.host_network && pod.owner != Owner::Deployment("coredns".into())
}

/// What a DNS server answered for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A records (authoritative).
    Addresses(Vec<Ipv4Addr>),
    /// The name exists but has no A record.
    NoData,
    NxDomain,
}

/// What became of a query sent to a nameserver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reached {
    /// kube-proxy sent it to this CoreDNS pod, and its answer came back.
    CoreDns,
    /// kube-proxy REJECTed it: the Service has no ready endpoint (ICMP port unreachable).
    Refused { service: String },
    /// No answer: why.
    Lost(String),
}

impl Cluster {
    /// The pod's DNS configuration when the kubelet on `node` creates its sandbox now.
    pub(super) fn pod_dns(&self, pod: &Pod, node: &str) -> Option<PodDns> {
        if !cluster_first(pod) {
            return None;
        }
        let kubelet = self.kubelet_dns(node);
        let d = &kubelet.cluster_domain;
        Some(PodDns {
            nameservers: kubelet.cluster_dns.clone(),
            searches: vec![format!("{}.svc.{d}", pod.namespace), format!("svc.{d}"), d.clone()],
            options: vec!["ndots:5".into()],
        })
    }

    /// CoreDNS's `kubernetes` plugin on `name` (a fully qualified name, trailing dot or not).
    /// None: the name is outside the cluster domain (CoreDNS would forward it upstream, which
    /// fabsim does not model).
    pub fn coredns_answer(&self, name: &str) -> Option<Answer> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let domain = super::kubelet_config::CLUSTER_DOMAIN;
        let rest = name
            .strip_suffix(&format!(".{domain}"))
            .or((name == domain).then_some(""))?;
        let labels: Vec<&str> = rest.split('.').filter(|l| !l.is_empty()).collect();
        let answer = match labels.as_slice() {
            [svc, ns, "svc"] => match self.service(ns, svc) {
                Some(s) => match s.cluster_ip {
                    Some(ip) => Answer::Addresses(vec![ip]),
                    None => Answer::NoData,
                },
                None => Answer::NxDomain,
            },
            _ => Answer::NxDomain,
        };
        Some(answer)
    }

    /// The pod whose network namespace is the device `dev`.
    pub fn pod_on_device(&self, dev: DeviceId) -> Option<&Pod> {
        let ((ns, name), _) = self.netns.iter().find(|(_, n)| n.device == dev)?;
        self.pod(ns, name)
    }

    /// The CoreDNS pod (running) at `ip`, if one is.
    fn coredns_at(&self, ip: Ipv4Addr) -> bool {
        self.pods
            .iter()
            .any(|p| p.owner == Owner::Deployment("coredns".into()) && p.phase == PodPhase::Running && p.ip == Some(ip))
    }
}

/// A DNS query (UDP to port 53) from `dev` to `server`, through the data plane.
pub fn query(net: &Network, st: &State, dev: DeviceId, server: Ipv4Addr) -> Reached {
    let p = probe(net, st, dev, server, 64, ProbeKind::Udp { dst_port: 53 }, 0);
    let Some(cluster) = net.cluster.as_deref() else {
        return Reached::Lost("there is no cluster".into());
    };
    match (&p.outcome, &p.service_nat) {
        (ProbeOutcome::Reply { .. }, Some(nat)) if cluster.coredns_at(nat.endpoint) => Reached::CoreDns,
        (ProbeOutcome::Reply { .. }, Some(nat)) => Reached::Lost(format!(
            "{} sent it to {}:{}, which is no DNS server",
            nat.service, nat.endpoint, nat.target_port
        )),
        (
            ProbeOutcome::Error {
                error: IcmpError::PortUnreachable,
                ..
            },
            None,
        ) => match rule_for(net, dev, server) {
            Some(service) => Reached::Refused { service },
            None => Reached::Lost(format!("{server} answered port 53 with ICMP port unreachable")),
        },
        (ProbeOutcome::Reply { .. }, None) => Reached::Lost(format!("{server} runs no DNS server")),
        (ProbeOutcome::Lost { reason }, _) => Reached::Lost(reason.clone()),
        (ProbeOutcome::LocalNoRoute, _) => Reached::Lost(format!("no route to {server}")),
        (ProbeOutcome::Error { from, error, .. }, _) => Reached::Lost(format!("{from}: {}", error_text(error))),
    }
}

/// A name looked up by a pod's libc resolver (musl's, as in the busybox and alpine images): a
/// name with fewer dots than `ndots` is tried with each search domain, then as it is; one with
/// more, as it is only; each candidate is asked of the first nameserver that answers. `Ok(None)`:
/// no address (no server answers, or NXDOMAIN/NODATA for every candidate); `Err`: a candidate
/// outside the cluster domain had to be asked, which CoreDNS forwards upstream (not modelled).
pub fn resolve(net: &Network, st: &State, dev: DeviceId, name: &str) -> Result<Option<Ipv4Addr>, String> {
    let cluster = net.cluster.as_deref().ok_or("no cluster")?;
    let dns = cluster
        .pod_on_device(dev)
        .and_then(|p| p.dns.as_ref())
        .ok_or_else(|| format!("{name}: fabsim resolves names in pods that use the cluster DNS only"))?;
    let ndots = dns
        .options
        .iter()
        .find_map(|o| o.strip_prefix("ndots:")?.parse::<usize>().ok())
        .unwrap_or(1);
    let mut candidates: Vec<String> = Vec::new();
    if name.matches('.').count() < ndots && !name.ends_with('.') {
        candidates.extend(dns.searches.iter().map(|s| format!("{name}.{s}")));
    }
    candidates.push(name.to_string());
    let Some(_) = dns
        .nameservers
        .iter()
        .find(|ns| query(net, st, dev, **ns) == Reached::CoreDns)
    else {
        return Ok(None);
    };
    for c in candidates {
        match cluster.coredns_answer(&c) {
            Some(Answer::Addresses(ips)) => return Ok(ips.first().copied()),
            Some(Answer::NxDomain | Answer::NoData) => {}
            None => {
                return Err(format!(
                    "{c}: CoreDNS forwards names outside the cluster domain upstream, which fabsim does not model"
                ))
            }
        }
    }
    Ok(None)
}

/// The kube-proxy rule on the node of `dev`'s pod for `server`:53/UDP, by Service name.
fn rule_for(net: &Network, dev: DeviceId, server: Ipv4Addr) -> Option<String> {
    let cluster = net.cluster.as_deref()?;
    let pod = cluster.pod_on_device(dev)?;
    let node = cluster.node(pod.node.as_deref()?)?;
    let proxy = net.devices.get(node.device.idx())?.kube_proxy.as_ref()?;
    let rule = proxy.rule(server, 53, crate::model::L4::Udp)?;
    Some(
        rule.name
            .rsplit_once(':')
            .map_or(rule.name.clone(), |(s, _)| s.to_string()),
    )
}

/// Findings: the running ClusterFirst pods whose nameserver does not answer, grouped by the
/// nameserver and the reason (§5's "DNS broken for which pods and why"; C17).
pub fn dns_findings(net: &Network, st: &State) -> Vec<String> {
    let Some(cluster) = net.cluster.as_deref() else {
        return Vec::new();
    };
    let dns_svc = cluster.service("kube-system", "kube-dns");
    let mut broken: BTreeMap<(Ipv4Addr, String), Vec<String>> = BTreeMap::new();
    for pod in cluster.pods.iter().filter(|p| p.phase == PodPhase::Running) {
        let (Some(dns), Some(netns)) = (
            pod.dns.as_ref(),
            cluster.netns.get(&(pod.namespace.clone(), pod.name.clone())),
        ) else {
            continue;
        };
        let Some(&server) = dns.nameservers.first() else {
            continue;
        };
        let why = match query(net, st, netns.device, server) {
            Reached::CoreDns => continue,
            Reached::Refused { service } => format!("is Service {service}, which has no ready endpoints"),
            Reached::Lost(reason) => {
                let owner = cluster.services.iter().find(|s| s.cluster_ip == Some(server));
                match (owner, dns_svc.and_then(|s| s.cluster_ip)) {
                    (Some(s), _) => format!(
                        "is Service {}/{}, but queries get no answer: {reason}",
                        s.namespace, s.name
                    ),
                    (None, Some(now)) => format!(
                        "is no Service's ClusterIP (kube-system/kube-dns is at {now}; the kubelet wrote {server} into \
                         these pods' resolv.conf when it created them, so they must be recreated after their node's \
                         clusterDNS follows)"
                    ),
                    (None, None) => "is no Service's ClusterIP: kube-system/kube-dns does not exist".to_string(),
                }
            }
        };
        broken
            .entry((server, why))
            .or_default()
            .push(format!("{}/{}", pod.namespace, pod.name));
    }
    broken
        .into_iter()
        .map(|((server, why), pods)| {
            const SHOWN: usize = 5;
            let mut names = pods.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
            if pods.len() > SHOWN {
                names += &format!(" and {} more", pods.len() - SHOWN);
            }
            let n = pods.len();
            let s = if n == 1 { "" } else { "s" };
            format!("DNS broken for {n} pod{s} ({names}): nameserver {server} {why}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolv_conf_in_containerds_layout() {
        let dns = PodDns {
            nameservers: vec![Ipv4Addr::new(10, 96, 0, 10)],
            searches: vec![
                "default.svc.cluster.local".into(),
                "svc.cluster.local".into(),
                "cluster.local".into(),
            ],
            options: vec!["ndots:5".into()],
        };
        assert_eq!(
            dns.resolv_conf(),
            "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
        );
    }

    #[test]
    fn coredns_answers_services_in_the_cluster_domain_only() {
        let mut c = Cluster::new(
            "v1.28.15",
            None,
            "10.96.0.0/12".parse().unwrap(),
            "10.0.0.1:6443".into(),
            0,
        );
        c.create_default_services(Ipv4Addr::new(10, 0, 0, 1), 0);
        assert_eq!(
            c.coredns_answer("kube-dns.kube-system.svc.cluster.local."),
            Some(Answer::Addresses(vec![Ipv4Addr::new(10, 96, 0, 10)]))
        );
        assert_eq!(c.coredns_answer("kubernetes.svc.cluster.local"), Some(Answer::NxDomain));
        assert_eq!(c.coredns_answer("kubernetes.default"), None);
    }
}
