//! The data plane: packets walk the FIBs of a `State`. Longest-prefix match, deterministic
//! ECMP, TTL, ICMP errors from the router that drops, NAT overload, external responders.
//! Replies are routed independently of requests. Reads the State; never changes it.
//! `fate` answers for every ECMP branch at once what the walk answers for one.

pub mod fate;
pub mod walk;

pub use fate::{Decisions, Fates};
pub use walk::*;
