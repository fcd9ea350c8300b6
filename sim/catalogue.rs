//! The bundled catalogue: container images (`catalogue/images.yaml`: which commands a
//! workload's shell has and which servers it runs) and the manifests `kubectl apply -f URL`
//! knows (`catalogue/manifests.yaml`: what each installs). Data, not code: a lab's pods are
//! described by naming their image, its CNI by naming its manifest.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

const IMAGES: &str = include_str!("../catalogue/images.yaml");
const MANIFESTS: &str = include_str!("../catalogue/manifests.yaml");

/// What one known manifest installs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub calico: Option<CalicoManifest>,
    pub flannel: Option<FlannelManifest>,
}

/// kube-flannel.yml: the `kube-flannel-ds` DaemonSet (flanneld `--ip-masq --kube-subnet-mgr`)
/// and the `kube-flannel-cfg` ConfigMap.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlannelManifest {
    pub version: String,
    /// `Network` of the ConfigMap's `net-conf.json` (the VXLAN backend).
    pub network: ipnet::Ipv4Net,
}

/// The Calico manifest (`calico.yaml`): calico-node as a DaemonSet, calico-kube-controllers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalicoManifest {
    pub version: String,
    /// calico-node's container environment.
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    /// Commands the image's shell has.
    pub tools: Vec<String>,
    /// The common tools are busybox's (output formats differ from GNU/iputils).
    #[serde(default)]
    pub busybox: bool,
    #[serde(default)]
    pub servers: Vec<Server>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub port: u16,
    pub http: HttpServer,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpServer {
    /// `Server:` header.
    pub server: String,
    /// The file `/` serves (its name is what `wget` saves to).
    pub path: String,
    pub content_type: String,
    /// RFC 3339 UTC time of the file (`Last-Modified:`, and with the size the `ETag`).
    pub last_modified: String,
    pub body: String,
}

/// The catalogue, parsed once. It is part of the binary, so a parse failure is a build defect
/// that the catalogue's own test catches; here it degrades to an empty catalogue.
fn images() -> &'static BTreeMap<String, Image> {
    static CELL: OnceLock<BTreeMap<String, Image>> = OnceLock::new();
    CELL.get_or_init(|| serde_saphyr::from_str(IMAGES).unwrap_or_default())
}

pub fn image(name: &str) -> Option<&'static Image> {
    images().get(name)
}

pub fn names() -> Vec<&'static str> {
    images().keys().map(String::as_str).collect()
}

fn manifests() -> &'static BTreeMap<String, Manifest> {
    static CELL: OnceLock<BTreeMap<String, Manifest>> = OnceLock::new();
    CELL.get_or_init(|| serde_saphyr::from_str(MANIFESTS).unwrap_or_default())
}

/// A manifest by the URL `kubectl apply -f` was given.
pub fn manifest(url: &str) -> Option<&'static Manifest> {
    manifests().get(url)
}

pub fn manifest_urls() -> Vec<&'static str> {
    manifests().keys().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_catalogue_parses_and_nginx_serves_its_615_byte_page() {
        let img = super::image("nginx:alpine").expect("nginx:alpine");
        assert_eq!(img.servers[0].http.body.len(), 615);
        assert!(!img.tools.iter().any(|t| t == "curl"));
        assert!(super::names().contains(&"alpine"));
    }

    #[test]
    fn the_calico_manifest_is_v3_25_with_ipip_always() {
        let m = super::manifest("https://docs.projectcalico.org/manifests/calico.yaml").expect("calico.yaml");
        let calico = m.calico.as_ref().expect("installs calico");
        assert_eq!(calico.version, "v3.25.0");
        assert_eq!(calico.env["CALICO_IPV4POOL_IPIP"], "Always");
    }
}
