//! The kubelet's configuration file on each node, `/var/lib/kubelet/config.yaml`: the
//! KubeletConfiguration `kubeadm join` (and `init`) writes from the `kubelet-config` ConfigMap,
//! with the cluster DNS kubeadm derived from the service range (`clusterDNS`, its 10th address)
//! and `clusterDomain`. The file is text a runbook edits (`sed -i`); the kubelet reads it when
//! it starts (`systemctl restart kubelet`), and what it read is what the pods it creates
//! afterwards get as their nameserver (`dns`). `kubeadm reset` deletes it.

use std::net::Ipv4Addr;

use super::cluster::Cluster;

/// Where kubeadm writes the kubelet's configuration (the unit's `--config`).
pub const KUBELET_CONFIG_PATH: &str = "/var/lib/kubelet/config.yaml";

/// kubeadm's `networking.dnsDomain` default (fabsim's `kubeadm init` takes no other).
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// What the kubelet uses of its configuration for pods' DNS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeletDns {
    pub cluster_dns: Vec<Ipv4Addr>,
    pub cluster_domain: String,
}

/// The kubelet's `maxPods` default (`KubeletConfiguration` defaulting).
pub const DEFAULT_MAX_PODS: u32 = 110;

/// The file on one node and what its running kubelet read from it.
#[derive(Clone, Debug)]
pub struct KubeletConfig {
    text: String,
    /// What a kubelet starting now reads from `text` (`Err`: why it would not start), parsed
    /// when the file is written: every step's findings compare it with what the kubelet runs
    /// with, and parsing the YAML each time was an eighth of the seed lab's replay.
    on_disk: Result<(KubeletDns, u32), String>,
    pub running: KubeletDns,
    /// `maxPods` as the running kubelet read it: the Node's allocatable pods.
    pub running_max_pods: u32,
}

impl KubeletConfig {
    fn new(text: String, running: KubeletDns, running_max_pods: u32) -> Self {
        KubeletConfig {
            on_disk: read(&text),
            text,
            running,
            running_max_pods,
        }
    }

    fn write(&mut self, text: String) {
        self.on_disk = read(&text);
        self.text = text;
    }
}

/// The KubeletConfiguration kubeadm v1.28 writes on an Ubuntu host (systemd-resolved, hence
/// `resolvConf`): the `kubelet` key of the `kubelet-config` ConfigMap, fields in the
/// marshalled (alphabetical) order, zero durations as kubeadm leaves them.
fn kubeadm_text(dns: &KubeletDns) -> String {
    let servers: String = dns.cluster_dns.iter().map(|ip| format!("- {ip}\n")).collect();
    format!(
        "apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
{servers}clusterDomain: {}
containerRuntimeEndpoint: \"\"
cpuManagerReconcilePeriod: 0s
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: \"0\"
  verbosity: 0
memorySwap: {{}}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
resolvConf: /run/systemd/resolve/resolv.conf
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
",
        dns.cluster_domain
    )
}

/// What the kubelet reads from the file: `clusterDNS` (IPs), `clusterDomain` and `maxPods`, or
/// why it cannot start with it. kubeadm writes the same file on every node it joins, so the
/// last text read is remembered: parsing the YAML once per node was a seventh of a generated
/// 512-node fabric's load and convergence.
fn read(text: &str) -> Result<(KubeletDns, u32), String> {
    type Read = Result<(KubeletDns, u32), String>;
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, Read)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((t, r)) if t == text => r.clone(),
        _ => {
            let r = parse(text);
            *last = Some((text.to_string(), r.clone()));
            r
        }
    })
}

fn parse(text: &str) -> Result<(KubeletDns, u32), String> {
    let doc: serde_json::Value = serde_saphyr::from_str(text)
        .map_err(|e| format!("failed to load kubelet config file {KUBELET_CONFIG_PATH}: {e}"))?;
    let mut cluster_dns = Vec::new();
    for v in doc.get("clusterDNS").and_then(|v| v.as_array()).into_iter().flatten() {
        let s = v.as_str().unwrap_or_default();
        // The kubelet's own wording is not reproduced: fabsim says what it refuses.
        cluster_dns.push(
            s.parse::<Ipv4Addr>()
                .map_err(|_| format!("clusterDNS `{s}` in {KUBELET_CONFIG_PATH} is not an IPv4 address"))?,
        );
    }
    let cluster_domain = doc
        .get("clusterDomain")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    let max_pods = match doc.get("maxPods") {
        None => DEFAULT_MAX_PODS,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("maxPods `{v}` in {KUBELET_CONFIG_PATH} is not a number of pods"))?,
    };
    Ok((
        KubeletDns {
            cluster_dns,
            cluster_domain,
        },
        max_pods,
    ))
}

impl Cluster {
    /// The `kubelet-config` ConfigMap's DNS settings: what `kubeadm join` writes on a node.
    fn configmap_kubelet_dns(&self) -> KubeletDns {
        KubeletDns {
            cluster_dns: vec![self.cluster_dns],
            cluster_domain: CLUSTER_DOMAIN.to_string(),
        }
    }

    /// kubeadm wrote the node's file (init, join) unless it is there already.
    pub(super) fn ensure_kubelet_config(&mut self, node: &str) {
        let dns = self.configmap_kubelet_dns();
        self.kubelet_configs
            .entry(node.to_string())
            .or_insert_with(|| KubeletConfig::new(kubeadm_text(&dns), dns, DEFAULT_MAX_PODS));
    }

    /// The host's kubelet configuration sets `maxPods` (the topology's `kubelet: max_pods`):
    /// the line in the file kubeadm just wrote, in its alphabetical place, and what the kubelet
    /// runs with. A file that says `maxPods` already is left as it is.
    pub(super) fn declare_max_pods(&mut self, node: &str, max_pods: Option<u32>) {
        let (Some(n), Some(c)) = (max_pods, self.kubelet_configs.get_mut(node)) else {
            return;
        };
        if c.text.contains("\nmaxPods:") {
            return;
        }
        c.write(
            c.text
                .replacen("\nmemorySwap:", &format!("\nmaxPods: {n}\nmemorySwap:"), 1),
        );
        c.running_max_pods = n;
    }

    /// The pods the kubelet on `node` admits (its Node's allocatable `pods`).
    pub fn max_pods(&self, node: &str) -> u32 {
        self.kubelet_configs
            .get(node)
            .map_or(DEFAULT_MAX_PODS, |c| c.running_max_pods)
    }

    /// The DNS settings the kubelet on `node` runs with (a cluster read from a snapshot has no
    /// files: the ConfigMap's).
    pub fn kubelet_dns(&self, node: &str) -> KubeletDns {
        self.kubelet_configs
            .get(node)
            .map_or_else(|| self.configmap_kubelet_dns(), |c| c.running.clone())
    }

    /// The file's text on `node`, if kubeadm wrote one there.
    pub fn kubelet_config_text(&self, node: &str) -> Option<&str> {
        self.kubelet_configs.get(node).map(|c| c.text.as_str())
    }

    /// `sed -i` wrote the file (the running kubelet does not notice).
    pub(super) fn write_kubelet_config(&mut self, node: &str, text: String) {
        if let Some(c) = self.kubelet_configs.get_mut(node) {
            c.write(text);
        }
    }

    /// The kubelet starts: it reads its file. `Err`: it exits at start with that error.
    pub(super) fn load_kubelet_config(&mut self, node: &str) -> Result<(), String> {
        let Some(c) = self.kubelet_configs.get_mut(node) else {
            return Ok(());
        };
        (c.running, c.running_max_pods) = c.on_disk.clone()?;
        Ok(())
    }

    /// Finding C24 (k8s-cidr-migrations.md §5, §3 "effective pods per node", §6 item 12): a
    /// node whose podCIDR is wider than kubeadm's /24 — a range widened for more pods — while
    /// its kubelet's maxPods is below the range's addresses: the wider range gives no pods
    /// beyond maxPods.
    pub fn max_pods_findings(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|n| {
                let cidr = n.pod_cidr?;
                let addresses = (1u64 << (32 - u32::from(cidr.prefix_len()))).saturating_sub(2);
                let max_pods = self.max_pods(&n.name);
                (cidr.prefix_len() < 24 && u64::from(max_pods) < addresses).then(|| {
                    format!(
                        "kubelet on {} runs with maxPods {max_pods} while its podCIDR {cidr} has {addresses} addresses: \
                         the wider range gives no pods beyond {max_pods} (raise maxPods in {KUBELET_CONFIG_PATH} and \
                         restart the kubelet; k8s-cidr-migrations.md §5 C24)",
                        n.name
                    )
                })
            })
            .collect()
    }

    /// Findings (k8s-cidr-migrations.md §5 C17): kubelets whose `clusterDNS` is not
    /// kube-dns's ClusterIP — every pod they create from now on gets a nameserver no Service
    /// answers on — and files edited but not yet read by a restart.
    pub fn cluster_dns_findings(&self) -> Vec<String> {
        let Some(dns_ip) = self.service("kube-system", "kube-dns").and_then(|s| s.cluster_ip) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (node, c) in &self.kubelet_configs {
            if self.node(node).is_none() {
                continue;
            }
            let list = |v: &[Ipv4Addr]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            if c.running.cluster_dns != [dns_ip] {
                out.push(format!(
                    "kubelet on {node} runs with clusterDNS [{}] but kube-system/kube-dns is at {dns_ip}: pods created \
                     there from now on get a nameserver that is not kube-dns (set clusterDNS in {KUBELET_CONFIG_PATH} \
                     and restart the kubelet; k8s-cidr-migrations.md §2.4, C17)",
                    list(&c.running.cluster_dns)
                ));
            }
            if let Ok((on_disk, _)) = &c.on_disk {
                if *on_disk != c.running {
                    out.push(format!(
                        "{KUBELET_CONFIG_PATH} on {node} says clusterDNS [{}] but the kubelet still runs with [{}]: \
                         it reads the file when it starts (systemctl restart kubelet)",
                        list(&on_disk.cluster_dns),
                        list(&c.running.cluster_dns)
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeadm_file_reads_back_and_a_bad_address_stops_the_kubelet() {
        let dns = KubeletDns {
            cluster_dns: vec![Ipv4Addr::new(10, 96, 0, 10)],
            cluster_domain: CLUSTER_DOMAIN.into(),
        };
        let text = kubeadm_text(&dns);
        assert!(
            text.contains("clusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"),
            "{text}"
        );
        assert_eq!(read(&text), Ok((dns.clone(), DEFAULT_MAX_PODS)));
        let bad = text.replace("- 10.96.0.10", "- 10.100.0.300");
        assert!(read(&bad).unwrap_err().contains("clusterDNS `10.100.0.300`"));
        // The remembered text is the last one read, whichever it was.
        assert_eq!(read(&text), Ok((dns, DEFAULT_MAX_PODS)));
        assert!(read(&bad).is_err());
    }
}
