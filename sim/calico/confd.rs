//! confd: renders one node's BIRD 1.6 configuration from the datastore exactly as Calico
//! v3.25.0 does — `bird.cfg`, `bird_aggr.cfg`, `bird_ipam.cfg`, byte for byte the text Go's
//! text/template produces from `confd/etc/calico/confd/templates/*.template`.
//!
//! Two stages, as in Calico:
//! - `keys`: the datastore → the key/value view confd's backend (`confd/pkg/backends/calico/
//!   client.go` and the syncer's update processors) builds: global defaults, per-host keys,
//!   v1 peerings with global precedence and reverse peerings, pools, block affinities, service
//!   routes. Every listing is in memkv's order (by key string).
//! - `bird_cfg`, `filters`: one function per template, writing exactly the text (blank lines
//!   included) the template emits for those keys. Comments there name the template lines.
//!
//! `kv_dump` exposes the key/value view with Calico's key paths and JSON values, for
//! inspection and for cross-checking against the real templates.

mod bird_cfg;
mod filters;
mod keys;

use std::collections::BTreeMap;

use crate::calico::datastore::Datastore;

/// The three files confd writes to `/etc/calico/confd/config/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedBird {
    pub bird_cfg: String,
    pub bird_aggr_cfg: String,
    pub bird_ipam_cfg: String,
}

impl RenderedBird {
    /// The two include files by the names `bird.cfg` includes them with.
    pub fn includes(&self) -> [(&'static str, &str); 2] {
        [
            ("bird_aggr.cfg", &self.bird_aggr_cfg),
            ("bird_ipam.cfg", &self.bird_ipam_cfg),
        ]
    }
}

/// Environment of the calico-node container that changes what confd renders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfdEnv {
    /// `CALICO_ROUTER_ID`: an IPv4 address, or `hash` (sha256 of the node name).
    pub router_id: Option<String>,
}

/// Why confd cannot render for a node.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfdError {
    #[error("node {0:?} is not in the datastore (no Node resource of that name)")]
    UnknownNode(String),
}

/// Renders `node`'s BIRD configuration with the default environment.
pub fn render(ds: &Datastore, node: &str) -> Result<RenderedBird, ConfdError> {
    render_with(ds, node, &ConfdEnv::default())
}

/// Renders `node`'s BIRD configuration with `env`.
pub fn render_with(ds: &Datastore, node: &str, env: &ConfdEnv) -> Result<RenderedBird, ConfdError> {
    Renderer::new(ds).render_with(node, env)
}

/// confd's key/value view of one datastore, built once and rendered for any number of nodes
/// (building it is the costly part: it walks every node's peerings).
pub struct Renderer<'a> {
    ds: &'a Datastore,
    kv: keys::Keys,
}

impl<'a> Renderer<'a> {
    pub fn new(ds: &'a Datastore) -> Self {
        Renderer {
            ds,
            kv: keys::Keys::build(ds, None),
        }
    }

    /// The view of a calico-node running with `USE_POD_CIDR=true`: the BGP syncer watches no
    /// BlockAffinities, and each Kubernetes Node's podCIDRs (`pod_cidrs`, by node name) stand
    /// in for them as confirmed affinities (libcalico-go `bgpNodeUpdateProcessor` with
    /// `usePodCIDR`; `bgpsyncer.New` adds the BlockAffinity watcher only without it). So BIRD
    /// aggregates and exports the podCIDR, as far as an IPPool holds it (the export filter
    /// still accepts only prefixes inside the pools).
    pub fn with_pod_cidrs(ds: &'a Datastore, pod_cidrs: &BTreeMap<String, Vec<ipnet::Ipv4Net>>) -> Self {
        Renderer {
            ds,
            kv: keys::Keys::build(ds, Some(pod_cidrs)),
        }
    }

    /// `node`'s BIRD configuration with the default environment.
    pub fn render(&self, node: &str) -> Result<RenderedBird, ConfdError> {
        self.render_with(node, &ConfdEnv::default())
    }

    pub fn render_with(&self, node: &str, env: &ConfdEnv) -> Result<RenderedBird, ConfdError> {
        if !self.ds.nodes.contains_key(node) {
            return Err(ConfdError::UnknownNode(node.to_string()));
        }
        Ok(RenderedBird {
            bird_cfg: bird_cfg::render(&self.kv, node, env),
            bird_aggr_cfg: filters::render_aggr(&self.kv, node),
            bird_ipam_cfg: filters::render_ipam(&self.kv, node),
        })
    }
}

/// The key/value store confd would hold for this datastore (keys under `/calico`, values as
/// client.go serialises them), sorted by key.
pub fn kv_dump(ds: &Datastore) -> BTreeMap<String, String> {
    keys::Keys::build(ds, None).dump()
}
