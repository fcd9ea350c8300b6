//! fabsim — deterministic rehearsal of data-center fabric and Kubernetes/Calico changes.
//!
//! Pipeline: `input` (text → model) → `model` (vendor-independent config) → `engine`
//! (virtual-time protocols → `State`) → `dataplane` (packet walks over a State) →
//! `views` (real tools' output formats) → `scenario` (runbooks, expectations) → `cli`.

pub mod alloc;
pub mod calico;
pub mod catalogue;
pub mod cli;
pub mod dataplane;
pub mod diag;
pub mod engine;
pub mod export;
pub mod gen;
mod hash;
pub mod input;
pub mod k8s;
pub mod model;
pub mod output;
pub mod peer;
pub mod plan;
pub mod scenario;
pub mod views;
pub mod wire;
