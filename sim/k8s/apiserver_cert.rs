//! kube-apiserver's serving certificate, `/etc/kubernetes/pki/apiserver.crt`, as kubeadm signs
//! it: the names in-cluster clients may reach the apiserver by. Its IP SANs hold the service
//! range's first address — where `default/kubernetes` lives — as it was at signing time, so a
//! move of `--service-cluster-ip-range` leaves clients of the Service's new address with a TLS
//! error until the certificate is signed again (k8s-cidr-migrations.md §5 C18).
//!
//! - Names: kubeadm's `GetAPIServerAltNames` (`cmd/kubeadm/app/util/pkiutil/pki_helpers.go`):
//!   DNS names the node name, `kubernetes`, `kubernetes.default`, `kubernetes.default.svc`,
//!   `kubernetes.default.svc.<dnsDomain>`, the control-plane endpoint's host when it is a name;
//!   IPs the service range's first address, the advertise address, the endpoint's host when it
//!   is an address; then `certSANs` / `--apiserver-cert-extra-sans`. `RemoveDuplicateAltNames`
//!   sorts the DNS names and drops repeated IPs (keeping their order).
//! - `kubeadm init phase certs apiserver` (`writeCertificateFilesIfNotExist`,
//!   `cmd/kubeadm/app/phases/certs/certs.go`): an existing certificate is kept when it already
//!   covers every wanted name ("Using the existing … certificate and key"), refused when it does
//!   not (`validateCertificateWithConfig`: "certificate apiserver is invalid: x509: …"); a missing
//!   one is signed and its names printed. So the old file must be removed first.
//! - kube-apiserver serves the file through `dynamiccertificates.NewDynamicServingContentFromFiles`
//!   (`k8s.io/apiserver/pkg/server/options/serving.go`): a new file is served without a restart.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde_json::Value;

use super::command::{flag, internal_ip, node_name, CommandOutcome, Context};
use super::services::{indexed_ip, DEFAULT_SERVICE_CIDR};
use crate::engine::State;
use crate::model::{DeviceId, Network};

pub const CERT_PATH: &str = "/etc/kubernetes/pki/apiserver.crt";
const KEY_PATH: &str = "/etc/kubernetes/pki/apiserver.key";

/// The Subject Alternative Names of the apiserver's certificate, as the x509 package holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiserverCert {
    pub dns_names: Vec<String>,
    pub ips: Vec<Ipv4Addr>,
}

/// What kubeadm signs the certificate for: its configuration's values.
pub struct CertConfig {
    pub node: String,
    pub service_subnet: Ipv4Net,
    pub advertise: Ipv4Addr,
    /// `controlPlaneEndpoint` (`host[:port]`), if set.
    pub endpoint: Option<String>,
    /// `apiServer.certSANs` / `--apiserver-cert-extra-sans`.
    pub extra_sans: Vec<String>,
}

impl ApiserverCert {
    pub fn signed_for(cfg: &CertConfig) -> ApiserverCert {
        let mut dns_names: Vec<String> = vec![
            cfg.node.clone(),
            "kubernetes".into(),
            "kubernetes.default".into(),
            "kubernetes.default.svc".into(),
            "kubernetes.default.svc.cluster.local".into(),
        ];
        let mut ips = vec![indexed_ip(cfg.service_subnet, 1), cfg.advertise];
        let endpoint_host = cfg
            .endpoint
            .as_deref()
            .map(|e| e.rsplit_once(':').map_or(e, |(host, _)| host));
        for san in endpoint_host
            .into_iter()
            .chain(cfg.extra_sans.iter().map(String::as_str))
        {
            match san.parse::<Ipv4Addr>() {
                Ok(ip) => ips.push(ip),
                Err(_) => dns_names.push(san.to_string()),
            }
        }
        dns_names.sort();
        dns_names.dedup();
        let mut seen = Vec::new();
        ips.retain(|ip| {
            let first = !seen.contains(ip);
            seen.push(*ip);
            first
        });
        ApiserverCert { dns_names, ips }
    }

    pub fn covers(&self, ip: Ipv4Addr) -> bool {
        self.ips.contains(&ip)
    }

    /// What Go's TLS client says when the certificate does not cover `ip` (`x509.HostnameError`).
    pub fn hostname_error(&self, ip: Ipv4Addr) -> String {
        let valid: Vec<String> = self.ips.iter().map(Ipv4Addr::to_string).collect();
        format!("x509: certificate is valid for {}, not {ip}", valid.join(", "))
    }

    /// kubeadm's line after signing (Go's `%v` of the two slices).
    fn signed_line(&self) -> String {
        let ips: Vec<String> = self.ips.iter().map(Ipv4Addr::to_string).collect();
        format!(
            "[certs] apiserver serving cert is signed for DNS names [{}] and IPs [{}]\n",
            self.dns_names.join(" "),
            ips.join(" ")
        )
    }
}

/// `rm [-f] /etc/kubernetes/pki/apiserver.crt /etc/kubernetes/pki/apiserver.key` on the
/// control-plane node: `None` when the paths are not (only) those files.
pub(super) fn rm(net: &mut Network, dev: DeviceId, args: &[&str]) -> Option<Result<CommandOutcome, String>> {
    let paths: Vec<&str> = args.iter().copied().filter(|a| !a.starts_with('-')).collect();
    if paths.is_empty() || !paths.iter().all(|p| [CERT_PATH, KEY_PATH].contains(p)) {
        return None;
    }
    let Some(cluster) = net
        .cluster
        .as_deref_mut()
        .filter(|c| c.control_plane.as_ref().is_some_and(|cp| cp.device == dev))
    else {
        return Some(Err(format!(
            "rm {}: fabsim keeps the apiserver's certificate on the control-plane node only",
            args.join(" ")
        )));
    };
    // The pair goes together or not at all: kubeadm regenerates both.
    if paths.contains(&CERT_PATH) {
        cluster.apiserver_cert_file = None;
    }
    Some(Ok(CommandOutcome::ok("")))
}

/// `kubeadm init phase certs apiserver [--config FILE | --service-cidr … --apiserver-advertise-address …
/// --control-plane-endpoint … --apiserver-cert-extra-sans …]` on the control-plane node.
///
/// Without `--config`, kubeadm's defaults fill what the flags do not say — the service range
/// 10.96.0.0/12, the address of the default route's interface, no control-plane endpoint — not
/// the cluster's kubeadm-config: a bare run signs for the default range.
pub(super) fn kubeadm_phase(
    net: &mut Network,
    st: &State,
    dev: DeviceId,
    args: &[&str],
    ctx: &Context<'_>,
) -> Result<CommandOutcome, String> {
    const FLAGS: [&str; 4] = [
        "--service-cidr",
        "--apiserver-advertise-address",
        "--control-plane-endpoint",
        "--apiserver-cert-extra-sans",
    ];
    if let Some(unknown) = args.iter().filter(|a| a.starts_with("--")).find(|a| {
        !FLAGS
            .iter()
            .chain(&["--config"])
            .any(|f| a.split('=').next() == Some(*f))
    }) {
        return Ok(CommandOutcome::failed(format!(
            "unknown flag: {}\n",
            unknown.split('=').next().unwrap_or(unknown)
        )));
    }
    let mixed: Vec<&str> = FLAGS
        .iter()
        .filter(|f| flag(args, f).is_some())
        .map(|f| f.trim_start_matches('-'))
        .collect();
    let cfg = match flag(args, "--config") {
        Some(_) if !mixed.is_empty() => {
            return Ok(CommandOutcome::failed(format!(
                "can not mix '--config' with arguments [{}]\nTo see the stack trace of this error execute with --v=5 or higher\n",
                mixed.join(" ")
            )));
        }
        Some(file) => {
            let (text, _) = ctx.read(file)?;
            from_config(&text, file, node_name(net, dev), internal_ip(net, st, dev)?)?
        }
        None => {
            let advertise = match flag(args, "--apiserver-advertise-address") {
                Some(a) => a
                    .parse()
                    .map_err(|_| format!("--apiserver-advertise-address: expected an IPv4 address, found `{a}`"))?,
                None => internal_ip(net, st, dev)?,
            };
            let service_subnet = match flag(args, "--service-cidr") {
                Some(c) => c
                    .parse::<Ipv4Net>()
                    .map(|n| n.trunc())
                    .map_err(|_| format!("--service-cidr: expected an IPv4 CIDR, found `{c}`"))?,
                None => DEFAULT_SERVICE_CIDR,
            };
            CertConfig {
                node: node_name(net, dev),
                service_subnet,
                advertise,
                endpoint: flag(args, "--control-plane-endpoint").map(str::to_string),
                extra_sans: flag(args, "--apiserver-cert-extra-sans")
                    .map(|s| s.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect())
                    .unwrap_or_default(),
            }
        }
    };
    let cluster = net
        .cluster
        .as_deref_mut()
        .filter(|c| c.control_plane.as_ref().is_some_and(|cp| cp.device == dev))
        .ok_or("kubeadm init phase certs apiserver: fabsim signs the apiserver's certificate on the control-plane node of a cluster it initialised")?;
    let wanted = ApiserverCert::signed_for(&cfg);
    if let Some(existing) = &cluster.apiserver_cert_file {
        let missing = wanted.ips.iter().find(|ip| !existing.covers(**ip));
        let missing_name = wanted.dns_names.iter().find(|n| !existing.dns_names.contains(n));
        return Ok(match (missing_name, missing) {
            (Some(name), _) => CommandOutcome::failed(format!(
                "error execution phase certs/apiserver: certificate apiserver is invalid: x509: certificate is valid for {}, not {name}\n\
                 To see the stack trace of this error execute with --v=5 or higher\n",
                existing.dns_names.join(", ")
            )),
            (None, Some(ip)) => CommandOutcome::failed(format!(
                "error execution phase certs/apiserver: certificate apiserver is invalid: {}\n\
                 To see the stack trace of this error execute with --v=5 or higher\n",
                existing.hostname_error(*ip)
            )),
            (None, None) => CommandOutcome::ok("[certs] Using the existing \"apiserver\" certificate and key\n"),
        });
    }
    let out = format!(
        "[certs] Generating \"apiserver\" certificate and key\n{}",
        wanted.signed_line()
    );
    cluster.apiserver_cert_file = Some(wanted);
    Ok(CommandOutcome::ok(out))
}

/// The values of a kubeadm configuration file (`--config`): ClusterConfiguration's
/// `networking.serviceSubnet`, `controlPlaneEndpoint` and `apiServer.certSANs`,
/// InitConfiguration's `localAPIEndpoint.advertiseAddress` and `nodeRegistration.name`, each
/// with kubeadm's default when absent.
fn from_config(text: &str, file: &str, node: String, advertise: Ipv4Addr) -> Result<CertConfig, String> {
    let mut cfg = CertConfig {
        node,
        service_subnet: DEFAULT_SERVICE_CIDR,
        advertise,
        endpoint: None,
        extra_sans: Vec::new(),
    };
    for doc in text.split("\n---").filter(|d| !d.trim().is_empty()) {
        let doc: Value =
            serde_saphyr::from_str(doc).map_err(|e| format!("{file}: not a kubeadm configuration: {e}"))?;
        let s = |p: &str| doc.pointer(p).and_then(Value::as_str);
        match s("/kind") {
            Some("ClusterConfiguration") => {
                if let Some(subnet) = s("/networking/serviceSubnet") {
                    cfg.service_subnet = subnet.parse::<Ipv4Net>().map(|n| n.trunc()).map_err(|_| {
                        format!("{file}: networking.serviceSubnet: expected an IPv4 CIDR, found `{subnet}`")
                    })?;
                }
                cfg.endpoint = s("/controlPlaneEndpoint").map(str::to_string);
                if let Some(sans) = doc.pointer("/apiServer/certSANs").and_then(Value::as_array) {
                    cfg.extra_sans = sans.iter().filter_map(Value::as_str).map(str::to_string).collect();
                }
            }
            Some("InitConfiguration") => {
                if let Some(a) = s("/localAPIEndpoint/advertiseAddress") {
                    cfg.advertise = a.parse().map_err(|_| {
                        format!("{file}: localAPIEndpoint.advertiseAddress: expected an IPv4 address, found `{a}`")
                    })?;
                }
                if let Some(n) = s("/nodeRegistration/name") {
                    cfg.node = n.to_string();
                }
            }
            Some(other) => {
                return Err(format!(
                    "{file}: kind {other}: fabsim reads ClusterConfiguration and InitConfiguration"
                ))
            }
            None => return Err(format!("{file}: a document without `kind`")),
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeadm_init_cert(endpoint: Option<&str>) -> ApiserverCert {
        ApiserverCert::signed_for(&CertConfig {
            node: "n1".into(),
            service_subnet: DEFAULT_SERVICE_CIDR,
            advertise: Ipv4Addr::new(192, 168, 1, 11),
            endpoint: endpoint.map(str::to_string),
            extra_sans: Vec::new(),
        })
    }

    #[test]
    fn kubeadm_signs_the_service_ranges_first_address_and_drops_repeats() {
        // The endpoint is the advertise address: one IP SAN, not two (RemoveDuplicateAltNames).
        let cert = kubeadm_init_cert(Some("192.168.1.11:6443"));
        assert_eq!(
            cert.signed_line(),
            "[certs] apiserver serving cert is signed for DNS names [kubernetes kubernetes.default \
             kubernetes.default.svc kubernetes.default.svc.cluster.local n1] and IPs [10.96.0.1 192.168.1.11]\n"
        );
        assert!(cert.covers(Ipv4Addr::new(10, 96, 0, 1)));
        assert_eq!(
            cert.hostname_error(Ipv4Addr::new(10, 100, 0, 1)),
            "x509: certificate is valid for 10.96.0.1, 192.168.1.11, not 10.100.0.1"
        );
    }

    #[test]
    fn a_named_endpoint_and_extra_sans_are_added_in_kubeadms_order() {
        let cert = ApiserverCert::signed_for(&CertConfig {
            node: "node-0".into(),
            service_subnet: DEFAULT_SERVICE_CIDR,
            advertise: Ipv4Addr::new(10, 10, 1, 5),
            endpoint: Some("api.example:6443".into()),
            extra_sans: vec!["10.233.0.1".into(), "localhost".into()],
        });
        assert_eq!(
            cert.dns_names,
            [
                "api.example",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                "localhost",
                "node-0"
            ]
        );
        assert_eq!(
            cert.ips,
            [
                Ipv4Addr::new(10, 96, 0, 1),
                Ipv4Addr::new(10, 10, 1, 5),
                Ipv4Addr::new(10, 233, 0, 1)
            ]
        );
    }

    #[test]
    fn a_config_file_gives_the_new_service_subnet() {
        let cfg = from_config(
            "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: 10.100.0.0/16\ncontrolPlaneEndpoint: 192.168.1.11:6443\n",
            "kubeadm.yaml",
            "n1".into(),
            Ipv4Addr::new(192, 168, 1, 11),
        )
        .unwrap();
        assert_eq!(
            ApiserverCert::signed_for(&cfg).ips,
            [Ipv4Addr::new(10, 100, 0, 1), Ipv4Addr::new(192, 168, 1, 11)]
        );
        assert!(from_config(
            "kind: KubeletConfiguration\n",
            "k.yaml",
            "n1".into(),
            Ipv4Addr::LOCALHOST
        )
        .is_err());
    }
}
