//! The `kube-system/kubeadm-config` ConfigMap `kubeadm init` stores (`[upload-config] Storing the
//! configuration used in ConfigMap "kubeadm-config"`, seed 003): its ClusterConfiguration, a
//! YAML document in `data`, holds the pod network and service range kubeadm was given
//! (`Cluster::pod_cidr`, `service_cidr`) — the values later `kubeadm upgrade` and control-plane
//! joins render manifests from, which a manifest edit does not change. Shown by `kubectl get cm
//! kubeadm-config -n kube-system -o yaml` and written into snapshots by `export`.

use serde_json::{json, Value};

use super::Cluster;

/// The ConfigMap as JSON, without the API server's metadata: kubeadm v1beta3's
/// ClusterConfiguration (kubeadm v1.22–v1.30) with the defaults kubeadm writes out, `podSubnet`
/// only when `--pod-network-cidr` was given; the document is printed as the Go tools print it
/// (yaml.v2's key order), which is how kubeadm marshals it too.
pub fn kubeadm_config(cluster: &Cluster) -> Value {
    let mut networking = json!({"dnsDomain": "cluster.local", "serviceSubnet": cluster.service_cidr.to_string()});
    if let Some(c) = cluster.pod_cidr {
        networking["podSubnet"] = c.to_string().into();
    }
    let config = json!({
        "apiServer": {"extraArgs": {"authorization-mode": "Node,RBAC"}, "timeoutForControlPlane": "4m0s"},
        "apiVersion": "kubeadm.k8s.io/v1beta3",
        "certificatesDir": "/etc/kubernetes/pki",
        "clusterName": "kubernetes",
        "controllerManager": {},
        "dns": {},
        "etcd": {"local": {"dataDir": "/var/lib/etcd"}},
        "imageRepository": "registry.k8s.io",
        "kind": "ClusterConfiguration",
        "kubernetesVersion": cluster.version,
        "networking": networking,
        "scheduler": {},
    });
    let document = crate::views::api_doc::ApiDoc::from(&config).yaml();
    json!({
        "apiVersion": "v1",
        "data": {"ClusterConfiguration": document},
        "kind": "ConfigMap",
        "metadata": {"name": "kubeadm-config", "namespace": "kube-system"},
    })
}
