//! Vendor profiles: every number or rule in which vendors differ (administrative distances,
//! OSPF defaults, ping defaults). The engine reads these instead of testing the vendor.
//! Each value's evidence is recorded in FIDELITY.md.

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VendorProfile {
    pub name: &'static str,
    pub distance_connected: u8,
    pub distance_static: u8,
    pub distance_ospf: u8,
    pub distance_ebgp: u8,
    pub distance_ibgp: u8,
    pub ospf_cost: u32,
    pub ospf_hello_ms: u64,
    pub ospf_dead_ms: u64,
    /// Time from 2-Way to Full for an adjacency (DBD exchange + LSA loading). Unverified.
    pub ospf_exchange_ms: u64,
    /// Metric of a redistributed default route (EOS: 1).
    pub ospf_redist_default_metric: u32,
    /// Metric of other redistributed prefixes (EOS `default-metric`, 10, unverified).
    pub ospf_redist_metric: u32,
    /// 1 = E1, 2 = E2.
    pub ospf_redist_metric_type: u8,
    pub ospf_max_ecmp: usize,
    /// TTL of locally originated packets (echo replies, ICMP errors).
    pub ttl: u8,
    /// Source of ICMP errors: the address of the interface the offending packet came in on
    /// (EOS, as the lab's `From 10.1.11.0` shows) or of the interface the error leaves by
    /// (Linux default, `net.ipv4.icmp_errors_use_inbound_ifaddr = 0`).
    pub icmp_error_src_inbound: bool,
    /// Data bytes a bare `ping` sends (EOS 72, iputils 56).
    pub ping_size: u32,
    /// Probes a bare `ping` sends (EOS 5; Linux runs until ^C, fabsim sends 5).
    pub ping_count: u32,
}

impl VendorProfile {
    /// Arista EOS 4.2x (the seed lab's era).
    pub fn eos() -> Self {
        VendorProfile {
            name: "eos",
            distance_connected: 0,
            distance_static: 1,
            distance_ospf: 110,
            distance_ebgp: 200,
            distance_ibgp: 200,
            ospf_cost: 10,
            ospf_hello_ms: 10_000,
            ospf_dead_ms: 40_000,
            ospf_exchange_ms: 100,
            ospf_redist_default_metric: 1,
            ospf_redist_metric: 10,
            ospf_redist_metric_type: 2,
            ospf_max_ecmp: 128,
            ttl: 64,
            icmp_error_src_inbound: true,
            ping_size: 72,
            ping_count: 5,
        }
    }

    /// Linux (Ubuntu 22.04, iproute2/iputils).
    pub fn linux() -> Self {
        VendorProfile {
            name: "linux",
            distance_connected: 0,
            distance_static: 1,
            distance_ospf: 110,
            distance_ebgp: 20,
            distance_ibgp: 200,
            ospf_cost: 10,
            ospf_hello_ms: 10_000,
            ospf_dead_ms: 40_000,
            ospf_exchange_ms: 100,
            ospf_redist_default_metric: 1,
            ospf_redist_metric: 20,
            ospf_redist_metric_type: 2,
            ospf_max_ecmp: 64,
            ttl: 64,
            icmp_error_src_inbound: false,
            ping_size: 56,
            ping_count: 5,
        }
    }
}
