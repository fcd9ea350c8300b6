//! EOS keyword matching: an exact keyword wins, otherwise a unique prefix (`int`, `redist stat`),
//! and the tables of keywords each position accepts, so abbreviations are ambiguous where EOS's are.

pub(super) enum Match {
    One(&'static str),
    Ambiguous(Vec<&'static str>),
    None,
}

impl Match {
    pub(super) fn is_one(&self) -> bool {
        matches!(self, Match::One(_))
    }
}

/// EOS keyword matching: an exact keyword wins, otherwise the word must be a unique prefix.
pub(super) fn keyword(word: &str, words: &[&'static str]) -> Match {
    let word = word.to_ascii_lowercase();
    if let Some(exact) = words.iter().find(|w| **w == word) {
        return Match::One(exact);
    }
    let hits: Vec<&'static str> = words.iter().copied().filter(|w| w.starts_with(&word)).collect();
    match hits.as_slice() {
        [] => Match::None,
        [one] => Match::One(one),
        _ => Match::Ambiguous(hits),
    }
}

// ---------------------------------------------------------------------------------------------
// Keyword tables. Each list holds every keyword EOS accepts at that point that fabsim knows of
// (modelled, warned or ignored), so unique-prefix matching sees the same ambiguities EOS does.
// ---------------------------------------------------------------------------------------------

pub(super) const IF_TYPES: &[&str] = &[
    "ethernet",
    "loopback",
    "management",
    "port-channel",
    "tunnel",
    "vlan",
    "vxlan",
];

pub(super) const GLOBAL_WORDS: &[&str] = &[
    "aaa",
    "alias",
    "banner",
    "boot",
    "class-map",
    "clock",
    "configure",
    "cvx",
    "daemon",
    "default",
    "dns",
    "do",
    "enable",
    "end",
    "errdisable",
    "event-handler",
    "exit",
    "hardware",
    "hostname",
    "interface",
    "ip",
    "ipv6",
    "lldp",
    "logging",
    "mac",
    "management",
    "mlag",
    "monitor",
    "no",
    "ntp",
    "peer-filter",
    "platform",
    "policy-map",
    "queue-monitor",
    "radius-server",
    "route-map",
    "router",
    "service",
    "sflow",
    "snmp-server",
    "spanning-tree",
    "system",
    "tacacs-server",
    "tap",
    "transceiver",
    "username",
    "vlan",
    "vrf",
];

/// Global commands fabsim does not model that open a sub-mode: the lines of their block are
/// skipped with them. The others are single-line.
pub(super) const GLOBAL_BLOCK_WORDS: &[&str] = &[
    "banner",
    "class-map",
    "cvx",
    "daemon",
    "event-handler",
    "management",
    "mlag",
    "monitor",
    "peer-filter",
    "policy-map",
    "queue-monitor",
    "route-map",
    "router",
    "spanning-tree",
    "tap",
    "vlan",
    "vrf",
];

pub(super) const GLOBAL_IP_WORDS: &[&str] = &[
    "access-list",
    "as-path",
    "community-list",
    "dhcp",
    "domain",
    "domain-name",
    "extcommunity-list",
    "ftp",
    "hardware",
    "host",
    "http",
    "icmp",
    "igmp",
    "load-sharing",
    "multicast-routing",
    "name-server",
    "nat",
    "pim",
    "prefix-list",
    "route",
    "routing",
    "ssh",
    "tftp",
    "virtual-router",
];

pub(super) const ROUTER_WORDS: &[&str] = &[
    "bgp",
    "igmp",
    "isis",
    "msdp",
    "multicast",
    "ospf",
    "ospfv3",
    "pim",
    "rip",
];

pub(super) const IF_WORDS: &[&str] = &[
    "arp",
    "bfd",
    "channel-group",
    "default",
    "description",
    "dhcp",
    "encapsulation",
    "error-correction",
    "flowcontrol",
    "ip",
    "ipv6",
    "isis",
    "lldp",
    "load-interval",
    "logging",
    "mac-address",
    "mlag",
    "mpls",
    "mtu",
    "no",
    "pim",
    "priority-flow-control",
    "qos",
    "service-policy",
    "sflow",
    "shutdown",
    "snmp",
    "spanning-tree",
    "speed",
    "storm-control",
    "switchport",
    "traffic-policy",
    "tx-queue",
    "vrf",
    "vrrp",
];

pub(super) const IF_IP_WORDS: &[&str] = &[
    "access-group",
    "address",
    "arp",
    "attached-host",
    "dhcp",
    "helper-address",
    "igmp",
    "local-proxy-arp",
    "multicast",
    "nat",
    "ospf",
    "pim",
    "proxy-arp",
    "verify",
    "virtual-router",
];

pub(super) const IF_OSPF_WORDS: &[&str] = &[
    "area",
    "authentication",
    "authentication-key",
    "bfd",
    "cost",
    "dead-interval",
    "disabled",
    "hello-interval",
    "message-digest-key",
    "mtu-ignore",
    "network",
    "priority",
    "retransmit-interval",
    "shutdown",
    "transmit-delay",
];

pub(super) const OSPF_WORDS: &[&str] = &[
    "adjacency",
    "area",
    "auto-cost",
    "bfd",
    "compatible",
    "default",
    "default-information",
    "default-metric",
    "distance",
    "distribute-list",
    "graceful-restart",
    "graceful-restart-helper",
    "log-adjacency-changes",
    "max-lsa",
    "maximum-paths",
    "mpls",
    "network",
    "no",
    "passive-interface",
    "point-to-point",
    "redistribute",
    "router-id",
    "shutdown",
    "summary-address",
    "timers",
];

pub(super) const REDIST_SOURCES: &[&str] = &["attached-host", "bgp", "connected", "dhcp", "isis", "static"];

pub(super) const ACL_WORDS: &[&str] = &[
    "counters",
    "default",
    "deny",
    "no",
    "permit",
    "remark",
    "resequence",
    "statistics",
];

/// IP protocols by the names EOS accepts in ACL rules.
pub(super) const ACL_PROTOCOLS: &[(&str, u8)] = &[
    ("ahp", 51),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ip", 0),
    ("ospf", 89),
    ("pim", 103),
    ("tcp", 6),
    ("udp", 17),
    ("vrrp", 112),
];

/// Trailing options of `ip route` (`… tag 5 name uplink`).
pub(super) const STATIC_ROUTE_OPTIONS: &[&str] = &["metric", "name", "tag", "track"];

/// Router-bgp mode.
pub(super) const BGP_WORDS: &[&str] = &[
    "address-family",
    "aggregate-address",
    "bfd",
    "bgp",
    "default",
    "default-metric",
    "distance",
    "dynamic",
    "graceful-restart",
    "graceful-restart-helper",
    "ip",
    "ipv6",
    "maximum-paths",
    "monitoring",
    "neighbor",
    "network",
    "no",
    "redistribute",
    "route-target",
    "router-id",
    "shutdown",
    "timers",
    "ucmp",
    "update",
    "vlan",
    "vlan-aware-bundle",
    "vrf",
];

/// `address-family ipv4 [unicast]` mode inside router bgp.
pub(super) const BGP_AF_WORDS: &[&str] = &[
    "bgp",
    "default",
    "exit-address-family",
    "graceful-restart",
    "neighbor",
    "network",
    "no",
    "redistribute",
];

/// `bgp …` in router-bgp mode.
pub(super) const BGP_BGP_WORDS: &[&str] = &[
    "additional-paths",
    "advertise-inactive",
    "allowas-in",
    "always-compare-med",
    "asn",
    "auto-local-addr",
    "bestpath",
    "client-to-client",
    "cluster-id",
    "confederation",
    "control-plane-filter",
    "convergence",
    "default",
    "enforce-first-as",
    "host-routes",
    "labeled-unicast",
    "listen",
    "log-neighbor-changes",
    "missing-policy",
    "monitoring",
    "next-hop-unchanged",
    "redistribute-internal",
    "route",
    "route-reflector",
    "transport",
];

/// `bgp …` in the IPv4 address family.
pub(super) const BGP_AF_BGP_WORDS: &[&str] = &[
    "additional-paths",
    "next-hop",
    "next-hop-unchanged",
    "redistribute-internal",
    "route",
];

/// `neighbor A …` in router-bgp mode.
pub(super) const NEIGHBOR_WORDS: &[&str] = &[
    "activate",
    "additional-paths",
    "allowas-in",
    "auto-local-addr",
    "bfd",
    "default-originate",
    "description",
    "dont-capability-negotiate",
    "ebgp-multihop",
    "enforce-first-as",
    "export-localpref",
    "fall-over",
    "graceful-restart",
    "graceful-restart-helper",
    "idle-restart-timer",
    "import-localpref",
    "link-bandwidth",
    "local-as",
    "local-v4-addr",
    "local-v6-addr",
    "maximum-accepted-routes",
    "maximum-routes",
    "metric-out",
    "monitoring",
    "next-hop-peer",
    "next-hop-self",
    "next-hop-unchanged",
    "next-hop-v6-addr",
    "out-delay",
    "passive",
    "password",
    "peer",
    "peer-group",
    "prefix-list",
    "remote-as",
    "remove-private-as",
    "rib-in-pre-policy-retain",
    "route-map",
    "route-reflector-client",
    "route-to-peer",
    "send-community",
    "shutdown",
    "soft-reconfiguration",
    "timers",
    "transport",
    "ttl",
    "update-source",
    "weight",
];

/// `neighbor A …` in the IPv4 address family.
pub(super) const AF_NEIGHBOR_WORDS: &[&str] = &[
    "activate",
    "additional-paths",
    "default-originate",
    "graceful-restart",
    "next-hop",
    "next-hop-unchanged",
    "prefix-list",
    "rib-in-pre-policy-retain",
    "route-map",
    "weight",
];

/// `redistribute …` in router bgp.
pub(super) const BGP_REDIST_SOURCES: &[&str] = &[
    "aggregate",
    "attached-host",
    "connected",
    "dhcp",
    "dynamic",
    "isis",
    "ospf",
    "ospfv3",
    "rip",
    "static",
    "user",
];

/// `address-family …` in router bgp.
pub(super) const ADDRESS_FAMILIES: &[&str] = &[
    "evpn",
    "flow-spec",
    "ipv4",
    "ipv6",
    "link-state",
    "path-selection",
    "rt-membership",
    "vpn-ipv4",
    "vpn-ipv6",
];
