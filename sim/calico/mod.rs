//! Calico as fabsim models it: the datastore (IPPool, BGPConfiguration, BGPPeer, Node,
//! BlockAffinity, IPAMBlock read from real YAML), IPAM exactly as Calico allocates blocks and
//! addresses, and confd, which renders each node's BIRD configuration — text that
//! `input::bird` then parses into the same BGP model EOS uses (one BGP engine); and what
//! felix's VXLAN manager programs (`vxlan`).

pub mod autodetect;
pub mod confd;
pub mod datastore;
pub mod gorand;
pub mod install;
pub mod ipam;
pub mod vxlan;
