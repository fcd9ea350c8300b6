//! The static-pod manifests `kubeadm init` (v1.28) writes into `/etc/kubernetes/manifests/` on
//! the control-plane node.
//!
//! The command lines are kubeadm's `getAPIServerCommand`, `getControllerManagerCommand` and
//! `getSchedulerCommand` (`cmd/kubeadm/app/phases/controlplane/manifests.go`): a map of default
//! arguments printed by `BuildArgumentListFromMap`, which sorts them by name. kube-controller-
//! manager gets `--allocate-node-cidrs=true --cluster-cidr=<podSubnet>` and
//! `--service-cluster-ip-range=<serviceSubnet>` only when a pod network CIDR was given;
//! kube-apiserver always gets `--service-cluster-ip-range`. kubeadm v1.28 writes no
//! `--node-cidr-mask-size`: kube-controller-manager's default (24 for IPv4) applies.
//!
//! etcd's is `GetEtcdPodSpec`/`getEtcdCommand` (`cmd/kubeadm/app/phases/etcd/local.go`) for a
//! single stacked member: client URLs on 127.0.0.1 and the advertise address, the certificates
//! under `/etc/kubernetes/pki/etcd/`, data in `/var/lib/etcd`, metrics and probes on
//! 127.0.0.1:2381, with v1.28's `experimental-` flag names.
//!
//! The rest of each file (probes, resources, volumes) is the form kubeadm's `staticpod`
//! helpers give it on an Ubuntu host; nothing in fabsim reads it back but the command.

use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

/// A control-plane component kubeadm runs as a static pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Etcd,
    ApiServer,
    ControllerManager,
    Scheduler,
}

impl Component {
    pub const ALL: [Component; 4] = [
        Component::Etcd,
        Component::ApiServer,
        Component::ControllerManager,
        Component::Scheduler,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::ApiServer => "kube-apiserver",
            Component::ControllerManager => "kube-controller-manager",
            Component::Scheduler => "kube-scheduler",
        }
    }

    /// The component whose manifest is `file` (`kube-apiserver.yaml`).
    pub fn of_file(file: &str) -> Option<Component> {
        Component::ALL
            .into_iter()
            .find(|c| file.strip_suffix(".yaml") == Some(c.name()))
    }
}

/// What kubeadm's ClusterConfiguration says that the manifests depend on.
pub struct KubeadmValues<'a> {
    pub version: &'a str,
    /// The node name (etcd's member name).
    pub node: &'a str,
    pub advertise: Ipv4Addr,
    pub pod_subnet: Option<Ipv4Net>,
    pub service_subnet: Ipv4Net,
}

const PKI: &str = "/etc/kubernetes/pki";

/// etcd's data directory (ClusterConfiguration `etcd.local.dataDir`).
const ETCD_DATA: &str = "/var/lib/etcd";

/// The etcd image kubeadm v1.28 deploys (`constants.SupportedEtcdVersion`; **unverified** for
/// the later v1.28 patch releases, FIDELITY.md).
const ETCD_IMAGE: &str = "registry.k8s.io/etcd:3.5.9-0";

/// The command kubeadm gives `component`, program name first.
pub fn command(component: Component, v: &KubeadmValues<'_>) -> Vec<String> {
    let mut args: Vec<(&str, String)> = match component {
        Component::Etcd => {
            let (ip, etcd) = (v.advertise, format!("{PKI}/etcd"));
            vec![
                ("advertise-client-urls", format!("https://{ip}:2379")),
                ("cert-file", format!("{etcd}/server.crt")),
                ("client-cert-auth", "true".into()),
                ("data-dir", ETCD_DATA.into()),
                ("experimental-initial-corrupt-check", "true".into()),
                ("experimental-watch-progress-notify-interval", "5s".into()),
                ("initial-advertise-peer-urls", format!("https://{ip}:2380")),
                ("initial-cluster", format!("{}=https://{ip}:2380", v.node)),
                ("key-file", format!("{etcd}/server.key")),
                (
                    "listen-client-urls",
                    format!("https://127.0.0.1:2379,https://{ip}:2379"),
                ),
                ("listen-metrics-urls", "http://127.0.0.1:2381".into()),
                ("listen-peer-urls", format!("https://{ip}:2380")),
                ("name", v.node.to_string()),
                ("peer-cert-file", format!("{etcd}/peer.crt")),
                ("peer-client-cert-auth", "true".into()),
                ("peer-key-file", format!("{etcd}/peer.key")),
                ("peer-trusted-ca-file", format!("{etcd}/ca.crt")),
                ("snapshot-count", "10000".into()),
                ("trusted-ca-file", format!("{etcd}/ca.crt")),
            ]
        }
        Component::ApiServer => vec![
            ("advertise-address", v.advertise.to_string()),
            ("allow-privileged", "true".into()),
            ("authorization-mode", "Node,RBAC".into()),
            ("client-ca-file", format!("{PKI}/ca.crt")),
            ("enable-admission-plugins", "NodeRestriction".into()),
            ("enable-bootstrap-token-auth", "true".into()),
            ("etcd-cafile", format!("{PKI}/etcd/ca.crt")),
            ("etcd-certfile", format!("{PKI}/apiserver-etcd-client.crt")),
            ("etcd-keyfile", format!("{PKI}/apiserver-etcd-client.key")),
            ("etcd-servers", "https://127.0.0.1:2379".into()),
            (
                "kubelet-client-certificate",
                format!("{PKI}/apiserver-kubelet-client.crt"),
            ),
            ("kubelet-client-key", format!("{PKI}/apiserver-kubelet-client.key")),
            (
                "kubelet-preferred-address-types",
                "InternalIP,ExternalIP,Hostname".into(),
            ),
            ("proxy-client-cert-file", format!("{PKI}/front-proxy-client.crt")),
            ("proxy-client-key-file", format!("{PKI}/front-proxy-client.key")),
            ("requestheader-allowed-names", "front-proxy-client".into()),
            ("requestheader-client-ca-file", format!("{PKI}/front-proxy-ca.crt")),
            ("requestheader-extra-headers-prefix", "X-Remote-Extra-".into()),
            ("requestheader-group-headers", "X-Remote-Group".into()),
            ("requestheader-username-headers", "X-Remote-User".into()),
            ("secure-port", "6443".into()),
            (
                "service-account-issuer",
                "https://kubernetes.default.svc.cluster.local".into(),
            ),
            ("service-account-key-file", format!("{PKI}/sa.pub")),
            ("service-account-signing-key-file", format!("{PKI}/sa.key")),
            ("service-cluster-ip-range", v.service_subnet.to_string()),
            ("tls-cert-file", format!("{PKI}/apiserver.crt")),
            ("tls-private-key-file", format!("{PKI}/apiserver.key")),
        ],
        Component::ControllerManager => {
            let kubeconfig = "/etc/kubernetes/controller-manager.conf".to_string();
            let mut a = vec![
                ("authentication-kubeconfig", kubeconfig.clone()),
                ("authorization-kubeconfig", kubeconfig.clone()),
                ("bind-address", "127.0.0.1".into()),
                ("client-ca-file", format!("{PKI}/ca.crt")),
                ("cluster-name", "kubernetes".into()),
                ("cluster-signing-cert-file", format!("{PKI}/ca.crt")),
                ("cluster-signing-key-file", format!("{PKI}/ca.key")),
                ("controllers", "*,bootstrapsigner,tokencleaner".into()),
                ("kubeconfig", kubeconfig),
                ("leader-elect", "true".into()),
                ("requestheader-client-ca-file", format!("{PKI}/front-proxy-ca.crt")),
                ("root-ca-file", format!("{PKI}/ca.crt")),
                ("service-account-private-key-file", format!("{PKI}/sa.key")),
                ("use-service-account-credentials", "true".into()),
            ];
            if let Some(pods) = v.pod_subnet {
                a.push(("allocate-node-cidrs", "true".into()));
                a.push(("cluster-cidr", pods.to_string()));
                a.push(("service-cluster-ip-range", v.service_subnet.to_string()));
            }
            a
        }
        Component::Scheduler => {
            let kubeconfig = "/etc/kubernetes/scheduler.conf".to_string();
            vec![
                ("authentication-kubeconfig", kubeconfig.clone()),
                ("authorization-kubeconfig", kubeconfig.clone()),
                ("bind-address", "127.0.0.1".into()),
                ("kubeconfig", kubeconfig),
                ("leader-elect", "true".into()),
            ]
        }
    };
    // BuildArgumentListFromMap: sorted by name.
    args.sort();
    std::iter::once(component.name().to_string())
        .chain(args.into_iter().map(|(k, v)| format!("--{k}={v}")))
        .collect()
}

/// A hostPath volume: (name, path, type, mounted read-only).
type Volume = (&'static str, &'static str, &'static str, bool);

const CA_VOLUMES: [Volume; 4] = [
    ("ca-certs", "/etc/ssl/certs", "DirectoryOrCreate", true),
    ("etc-ca-certificates", "/etc/ca-certificates", "DirectoryOrCreate", true),
    (
        "usr-local-share-ca-certificates",
        "/usr/local/share/ca-certificates",
        "DirectoryOrCreate",
        true,
    ),
    (
        "usr-share-ca-certificates",
        "/usr/share/ca-certificates",
        "DirectoryOrCreate",
        true,
    ),
];

fn volumes(component: Component) -> Vec<Volume> {
    if component == Component::Etcd {
        return vec![
            ("etcd-certs", "/etc/kubernetes/pki/etcd", "DirectoryOrCreate", false),
            ("etcd-data", ETCD_DATA, "DirectoryOrCreate", false),
        ];
    }
    let mut v = CA_VOLUMES.to_vec();
    v.push(("k8s-certs", PKI, "DirectoryOrCreate", true));
    match component {
        Component::Etcd | Component::ApiServer => {}
        Component::ControllerManager => {
            v.push((
                "flexvolume-dir",
                "/usr/libexec/kubernetes/kubelet-plugins/volume/exec",
                "DirectoryOrCreate",
                false,
            ));
            v.push((
                "kubeconfig",
                "/etc/kubernetes/controller-manager.conf",
                "FileOrCreate",
                true,
            ));
        }
        Component::Scheduler => {
            v = vec![("kubeconfig", "/etc/kubernetes/scheduler.conf", "FileOrCreate", true)];
        }
    }
    v.sort_by_key(|(name, ..)| *name);
    v
}

/// The manifest file kubeadm writes for `component`.
pub fn manifest(component: Component, v: &KubeadmValues<'_>) -> String {
    let name = component.name();
    let (probe_host, port, cpu) = match component {
        Component::Etcd => ("127.0.0.1".to_string(), 2381, "100m"),
        Component::ApiServer => (v.advertise.to_string(), 6443, "250m"),
        Component::ControllerManager => ("127.0.0.1".to_string(), 10257, "200m"),
        Component::Scheduler => ("127.0.0.1".to_string(), 10259, "100m"),
    };
    let scheme = if component == Component::Etcd { "HTTP" } else { "HTTPS" };
    let probe = |kind: &str, path: &str, failures: u32, delay: bool, period: u32| {
        let mut p = format!("    {kind}:\n      failureThreshold: {failures}\n      httpGet:\n        host: {probe_host}\n        path: {path}\n        port: {port}\n        scheme: {scheme}\n");
        if delay {
            p += "      initialDelaySeconds: 10\n";
        }
        p + &format!("      periodSeconds: {period}\n      timeoutSeconds: 15\n")
    };
    // etcd's liveness: /health?exclude=NOSPACE&serializable=true, startup: the same without
    // the exclusion (kubeadm v1.28's `GetEtcdProbeEndpoint` callers).
    let (health, startup) = match component {
        Component::Etcd => (
            "/health?exclude=NOSPACE&serializable=true",
            "/health?serializable=false",
        ),
        Component::ApiServer => ("/livez", "/livez"),
        _ => ("/healthz", "/healthz"),
    };
    let mut y = String::from("apiVersion: v1\nkind: Pod\nmetadata:\n");
    match component {
        Component::ApiServer => {
            y += &format!(
                "  annotations:\n    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: {}:6443\n",
                v.advertise
            );
        }
        Component::Etcd => {
            y += &format!(
                "  annotations:\n    kubeadm.kubernetes.io/etcd.advertise-client-urls: https://{}:2379\n",
                v.advertise
            );
        }
        _ => {}
    }
    y += &format!(
        "  creationTimestamp: null\n  labels:\n    component: {name}\n    tier: control-plane\n  name: {name}\n  namespace: kube-system\nspec:\n  containers:\n  - command:\n"
    );
    for arg in command(component, v) {
        y += &format!("    - {arg}\n");
    }
    let image = match component {
        Component::Etcd => ETCD_IMAGE.to_string(),
        _ => format!("registry.k8s.io/{name}:{}", v.version),
    };
    y += &format!("    image: {image}\n    imagePullPolicy: IfNotPresent\n");
    y += &probe("livenessProbe", health, 8, true, 10);
    y += &format!("    name: {name}\n");
    if component == Component::ApiServer {
        y += &probe("readinessProbe", "/readyz", 3, false, 1);
    }
    y += &format!("    resources:\n      requests:\n        cpu: {cpu}\n");
    if component == Component::Etcd {
        y += "        memory: 100Mi\n";
    }
    y += &probe("startupProbe", startup, 24, true, 10);
    y += "    volumeMounts:\n";
    for (vol, path, _, ro) in volumes(component) {
        y += &format!("    - mountPath: {path}\n      name: {vol}\n");
        if ro {
            y += "      readOnly: true\n";
        }
    }
    y += "  hostNetwork: true\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  securityContext:\n    seccompProfile:\n      type: RuntimeDefault\n  volumes:\n";
    for (vol, path, kind, _) in volumes(component) {
        y += &format!("  - hostPath:\n      path: {path}\n      type: {kind}\n    name: {vol}\n");
    }
    y + "status: {}\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pods: Option<&str>) -> KubeadmValues<'static> {
        KubeadmValues {
            version: "v1.28.15",
            node: "n1",
            advertise: Ipv4Addr::new(192, 168, 1, 11),
            pod_subnet: pods.map(|p| p.parse().unwrap()),
            service_subnet: "10.96.0.0/12".parse().unwrap(),
        }
    }

    #[test]
    fn the_controller_manager_allocates_node_cidrs_only_with_a_pod_network() {
        let with = command(Component::ControllerManager, &values(Some("10.66.0.0/16")));
        assert_eq!(with[0], "kube-controller-manager");
        assert_eq!(with[1], "--allocate-node-cidrs=true");
        assert!(with.contains(&"--cluster-cidr=10.66.0.0/16".to_string()));
        assert!(with.contains(&"--service-cluster-ip-range=10.96.0.0/12".to_string()));
        let without = command(Component::ControllerManager, &values(None));
        assert!(!without.iter().any(|a| a.contains("cidr") || a.contains("ip-range")));
        let api = command(Component::ApiServer, &values(None));
        assert!(api.contains(&"--service-cluster-ip-range=10.96.0.0/12".to_string()));
    }

    #[test]
    fn manifests_are_yaml_with_the_command() {
        for c in Component::ALL {
            let text = manifest(c, &values(Some("10.66.0.0/16")));
            let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
            assert_eq!(doc.pointer("/spec/containers/0/command/0").unwrap(), c.name());
            assert_eq!(Component::of_file(&format!("{}.yaml", c.name())), Some(c));
        }
    }
}
