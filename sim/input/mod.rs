//! Input: text → model. Topology YAML, EOS configuration, netplan, BIRD configuration, FRR configuration,
//! containerlab topologies and snapshot directories. Every error and warning
//! carries a span (file, line, column). Parsers never compute routing.

pub mod bird;
mod cluster;
pub mod containerlab;
pub mod eos;
pub mod frr;
pub mod netplan;
pub mod snapshot;
pub mod topology;
