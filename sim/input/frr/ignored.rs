//! What fabsim reads in an frr.conf and deliberately ignores (no routing or forwarding effect:
//! no warning, listed by `fabsim lint --verbose`), and the FRR commands it knows but does not
//! model (a warning each).

/// Where an ignored keyword is understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Context {
    Global,
    Interface,
    RouterOspf,
    RouterBgp,
    Neighbor,
}

/// One keyword understood and ignored by design, with why it does not matter.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Ignored {
    pub context: Context,
    pub keyword: &'static str,
    pub why: &'static str,
}

pub const IGNORED_BY_DESIGN: &[Ignored] = &[
    Ignored {
        context: Context::Global,
        keyword: "frr",
        why: "`frr version X` records which release wrote the file (`frr defaults` is read)",
    },
    Ignored {
        context: Context::Global,
        keyword: "log",
        why: "logging destinations and levels",
    },
    Ignored {
        context: Context::Global,
        keyword: "service",
        why: "`service integrated-vtysh-config` and friends: how vtysh saves files",
    },
    Ignored {
        context: Context::Global,
        keyword: "line",
        why: "`line vty`: terminal settings of vtysh",
    },
    Ignored {
        context: Context::Global,
        keyword: "debug",
        why: "debug logging",
    },
    Ignored {
        context: Context::Global,
        keyword: "password",
        why: "vty login password",
    },
    Ignored {
        context: Context::Interface,
        keyword: "description",
        why: "free text for humans",
    },
    Ignored {
        context: Context::RouterOspf,
        keyword: "log-adjacency-changes",
        why: "syslog messages on adjacency changes",
    },
    Ignored {
        context: Context::RouterBgp,
        keyword: "bgp log-neighbor-changes",
        why: "syslog messages on session changes",
    },
    Ignored {
        context: Context::Neighbor,
        keyword: "description",
        why: "free text for humans (not shown by fabsim's FRR views yet)",
    },
    Ignored {
        context: Context::Neighbor,
        keyword: "soft-reconfiguration",
        why: "`soft-reconfiguration inbound` keeps a copy of Adj-RIB-In for policy changes; routing is the same",
    },
];

/// Is `keyword` ignored by design in `context`? (`frr version …` is; `frr defaults …` is read.)
pub(super) fn by_design(context: Context, keyword: &str) -> bool {
    IGNORED_BY_DESIGN
        .iter()
        .any(|i| i.context == context && i.keyword == keyword)
}

/// Global blocks of daemons or features fabsim does not model: warned once, their lines skipped.
pub(super) const UNMODELLED_BLOCKS: &[&str] = &[
    "vrf",
    "bfd",
    "segment-routing",
    "key",
    "mpls",
    "pbr-map",
    "nexthop-group",
];

/// Global one-line commands fabsim does not model.
pub(super) const UNMODELLED_GLOBAL: &[&str] = &[
    "ipv6",
    "access-list",
    "bgp",
    "agentx",
    "enable",
    "allow-external-route-update",
    "zebra",
];

/// Interface commands fabsim does not model.
pub(super) const UNMODELLED_INTERFACE: &[&str] = &[
    "ipv6",
    "bandwidth",
    "link-detect",
    "mpls",
    "evpn",
    "multicast",
    "bfd",
    "mtu",
    "pbr-policy",
];
