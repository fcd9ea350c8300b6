//! Input: text → model. Topology YAML, EOS configuration, netplan, BIRD configuration, FRR configuration. Every error and warning
//! carries a span (file, line, column). Parsers never compute routing.

pub mod bird;
mod cluster;
pub mod containerlab;
pub mod eos;
pub mod frr;
pub mod netplan;
pub mod topology;
