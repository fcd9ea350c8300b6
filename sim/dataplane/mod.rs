//! The data plane: packets walk the FIBs of a `State`. Longest-prefix match, deterministic
//! ECMP, TTL, ICMP errors from the router that drops, NAT overload, external responders.
//! Replies are routed independently of requests. Reads the State; never changes it.

pub mod walk;

pub use walk::*;
