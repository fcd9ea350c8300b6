//! The engine owns virtual time: a discrete-event simulator (events ordered by time, then
//! sequence number) that boots devices, runs OSPF and DHCP, and computes RIBs and FIBs.
//! It reads the model and writes `State`; it never parses or formats text.

pub mod state;

pub use state::*;
