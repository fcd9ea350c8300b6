//! The bundled catalogue of container images (`catalogue/images.yaml`): which commands a
//! workload's shell has and which servers it runs. Data, not code: a lab's pods are described by
//! naming their image.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

const IMAGES: &str = include_str!("../catalogue/images.yaml");

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

#[cfg(test)]
mod tests {
    #[test]
    fn the_catalogue_parses_and_nginx_serves_its_615_byte_page() {
        let img = super::image("nginx:alpine").expect("nginx:alpine");
        assert_eq!(img.servers[0].http.body.len(), 615);
        assert!(!img.tools.iter().any(|t| t == "curl"));
        assert!(super::names().contains(&"alpine"));
    }
}
