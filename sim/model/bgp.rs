//! BGP configuration, vendor-independent: one speaker per device with its neighbours, what it
//! originates, and its policies. EOS `router bgp` and BIRD `protocol bgp` both become this;
//! the BIRD routing table's other protocols (kernel, device, direct, static) and its filters
//! live in `BirdDaemon`. Which defaults apply (distances, add-path, next hop rules, best-path
//! order) is the speaker's `BgpFlavor`, read through `VendorProfile`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::diag::Span;
use crate::model::policy::RoutePolicies;

/// Whose BGP this is: decides the best-path tie-breakers, next-hop and advertisement rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BgpFlavor {
    Eos,
    Bird,
    Frr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BgpRedistSource {
    Connected,
    Static,
    Ospf,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BgpRedistribute {
    pub source: BgpRedistSource,
    pub span: Span,
}

/// An import or export policy: everything, nothing, a named BIRD filter, or a named route-map
/// of the speaker's `policies` (FRR `neighbor A route-map NAME in|out`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    #[default]
    All,
    None,
    Filter(String),
    RouteMap(String),
}

/// Session timers in seconds. `None` = the flavour's default (bgp-profiles.md §7).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BgpTimers {
    pub hold: Option<u32>,
    pub keepalive: Option<u32>,
    pub connect_retry: Option<u32>,
    pub connect_delay: Option<u32>,
    /// BIRD `error wait time MIN,MAX`.
    pub error_wait: Option<(u32, u32)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BgpNeighbor {
    /// BIRD protocol name (`Mesh_10_0_137_12`); EOS neighbours have none.
    pub name: Option<String>,
    pub address: Ipv4Addr,
    pub remote_as: Option<u32>,
    /// FRR `remote-as external`: any AS but the speaker's own (`remote_as` stays None).
    pub remote_as_external: bool,
    /// BIRD `local as` of this protocol; `None` = the speaker's AS.
    pub local_as: Option<u32>,
    /// EOS `update-source IF`.
    pub update_source: Option<String>,
    /// BIRD `source address A`.
    pub source_address: Option<Ipv4Addr>,
    /// `ebgp-multihop [N]` / BIRD `multihop [N]`: `Some(ttl)`; `None` = directly connected.
    pub multihop: Option<u8>,
    pub next_hop_self: NextHopSelf,
    /// BIRD `next hop keep`.
    pub next_hop_keep: bool,
    pub route_reflector_client: bool,
    /// BIRD `rr cluster id A` (the reflector's CLUSTER_ID for this client; BIRD's default is the
    /// router id). Needed for the cluster-list loop check.
    pub rr_cluster_id: Option<Ipv4Addr>,
    pub shutdown: bool,
    /// EOS `address-family ipv4` / `neighbor A activate` (IPv4 is active by default on EOS).
    pub activate: bool,
    /// BIRD `passive on`: never opens the connection.
    pub passive: bool,
    /// ADD-PATH (RFC 7911) capabilities this side advertises.
    pub add_path_rx: bool,
    pub add_path_tx: bool,
    /// BIRD `gateway recursive` (true) or `direct`.
    pub gateway_recursive: bool,
    pub import: Policy,
    pub export: Policy,
    pub timers: BgpTimers,
    pub graceful_restart: bool,
    pub description: Option<String>,
    /// Which speaker-wide settings this neighbour overrides (EOS); the effective values are above.
    pub overrides: NeighborOverrides,
    pub span: Span,
}

/// Which paths a session sends with the speaker's own address as NEXT_HOP, beyond the ones it
/// originates (which always leave with it). The daemons differ on reflected paths, those learned
/// over iBGP and sent over iBGP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum NextHopSelf {
    /// iBGP keeps the path's next hop, eBGP sets its own (RFC 4271 §5.1.3).
    #[default]
    Off,
    /// FRR `next-hop-self`: every path but reflected ones (bgpd `subgroup_announce_check`
    /// resets the next hop only `if (!reflect || force)`).
    NotReflected,
    /// Every path: BIRD `next hop self` (`bgp_update_attrs` tests only the option), EOS
    /// `next-hop-self` (a route reflector rewrites reflected paths too; FIDELITY.md) and FRR
    /// `next-hop-self force`.
    All,
}

impl NextHopSelf {
    /// BIRD's and EOS's switch, which has no per-path form: on covers every path.
    pub fn every_path_if(on: bool) -> NextHopSelf {
        if on {
            NextHopSelf::All
        } else {
            NextHopSelf::Off
        }
    }
}

/// EOS per-neighbour settings that override a speaker-wide one: `neighbor A activate` over
/// `[no] bgp default ipv4-unicast`, `neighbor A additional-paths receive|send any` over
/// `bgp additional-paths …`. `None` = inherited (a `default neighbor A …` form restores that).
/// The EOS parser keeps `activate`, `add_path_rx` and `add_path_tx` equal to the effective value.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NeighborOverrides {
    pub activate: Option<bool>,
    pub add_path_rx: Option<bool>,
    pub add_path_tx: Option<bool>,
}

impl BgpNeighbor {
    /// A neighbour with the neutral defaults; parsers then apply their flavour's defaults.
    pub fn new(address: Ipv4Addr, span: Span) -> Self {
        BgpNeighbor {
            name: None,
            address,
            remote_as: None,
            remote_as_external: false,
            local_as: None,
            update_source: None,
            source_address: None,
            multihop: None,
            next_hop_self: NextHopSelf::Off,
            next_hop_keep: false,
            route_reflector_client: false,
            rr_cluster_id: None,
            shutdown: false,
            activate: true,
            passive: false,
            add_path_rx: false,
            add_path_tx: false,
            gateway_recursive: false,
            import: Policy::All,
            export: Policy::All,
            timers: BgpTimers::default(),
            graceful_restart: false,
            description: None,
            overrides: NeighborOverrides::default(),
            span,
        }
    }
}

/// One BGP speaker.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BgpConfig {
    pub flavor: BgpFlavor,
    pub asn: u32,
    pub router_id: Option<Ipv4Addr>,
    pub neighbors: Vec<BgpNeighbor>,
    /// EOS `network P`.
    pub networks: Vec<Ipv4Net>,
    pub redistribute: Vec<BgpRedistribute>,
    /// `maximum-paths N [ecmp M]`; EOS default 1.
    pub max_paths: Option<u32>,
    pub max_ecmp: Option<u32>,
    /// `distance bgp EXTERNAL INTERNAL LOCAL`.
    pub distance: Option<(u8, u8, u8)>,
    /// EOS `bgp additional-paths receive` (default on) / `send any` (default off).
    pub addpath_receive: bool,
    pub addpath_send: bool,
    /// EOS `bgp advertise-inactive`.
    pub advertise_inactive: bool,
    /// EOS `bgp bestpath as-path multipath-relax` (EOS default on, unverified).
    pub multipath_relax: bool,
    /// EOS `[no] bgp default ipv4-unicast`: whether neighbours are activated for IPv4 unicast
    /// unless they say otherwise (EOS default on).
    pub default_ipv4_unicast: bool,
    /// EOS `timers bgp KEEPALIVE HOLD`: the speaker-wide timers; a neighbour's own win.
    pub timers: BgpTimers,
    /// EOS `graceful-restart` for every neighbour (a neighbour's own `graceful_restart` also counts).
    pub graceful_restart: bool,
    pub shutdown: bool,
    /// FRR `bgp ebgp-requires-policy` (RFC 8212; on by default since FRR 7.4 outside the
    /// `datacenter` profile): an eBGP neighbour without an inbound policy accepts nothing and
    /// one without an outbound policy is sent nothing.
    pub ebgp_requires_policy: bool,
    /// The device's prefix-lists and route-maps that `Policy::RouteMap` names.
    pub policies: RoutePolicies,
    pub span: Span,
}

impl BgpConfig {
    pub fn new(flavor: BgpFlavor, asn: u32, span: Span) -> Self {
        BgpConfig {
            flavor,
            asn,
            router_id: None,
            neighbors: Vec::new(),
            networks: Vec::new(),
            redistribute: Vec::new(),
            max_paths: None,
            max_ecmp: None,
            distance: None,
            addpath_receive: flavor != BgpFlavor::Bird,
            addpath_send: false,
            advertise_inactive: false,
            multipath_relax: flavor == BgpFlavor::Eos,
            default_ipv4_unicast: true,
            timers: BgpTimers::default(),
            graceful_restart: false,
            shutdown: false,
            ebgp_requires_policy: flavor == BgpFlavor::Frr,
            policies: RoutePolicies::default(),
            span,
        }
    }

    pub fn neighbor(&self, addr: Ipv4Addr) -> Option<&BgpNeighbor> {
        self.neighbors.iter().find(|n| n.address == addr)
    }
}

// ---------------------------------------------------------------------------------------------
// BIRD 1.6: the daemon around the BGP protocols (the `master` table's other protocols, filters).

/// BIRD's routing daemon on a host (Calico runs it in calico-node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BirdDaemon {
    pub router_id: Option<Ipv4Addr>,
    pub kernel: Option<BirdKernel>,
    pub device: bool,
    /// `protocol direct`: interface patterns in order (`-"cali*"` excludes, `"*"` includes).
    pub direct: Option<Vec<IfacePattern>>,
    /// `protocol static` routes (Calico: a blackhole per IPAM block).
    pub statics: Vec<BirdStatic>,
    pub filters: BTreeMap<String, Filter>,
    pub functions: BTreeMap<String, Vec<Stmt>>,
    /// The files the configuration was read from (`include`), for messages.
    pub sources: Vec<String>,
    /// The configuration as written: the main file as `bird.cfg`, then each `include`d file
    /// under the name it is included by. `fabsim export` hands these to a real BIRD.
    #[serde(skip)]
    pub files: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IfacePattern {
    pub exclude: bool,
    /// Shell-style pattern: `*` matches any run of characters.
    pub pattern: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BirdKernel {
    /// `learn`: import alien kernel routes (shown as `kernel1`, preference 10).
    pub learn: bool,
    pub persist: bool,
    pub scan_time: Option<u32>,
    pub import: Policy,
    pub export: Policy,
    pub graceful_restart: bool,
    /// `merge paths on [limit N]`: export ECMP routes.
    pub merge_paths: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum BirdStaticDest {
    Blackhole,
    Unreachable,
    Via(Ipv4Addr),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BirdStatic {
    pub prefix: Ipv4Net,
    pub dest: BirdStaticDest,
    pub span: Span,
}

/// A BIRD filter: its statements, run until `accept` or `reject`; falling off the end rejects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Filter {
    pub name: String,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// The subset of BIRD's filter language Calico's confd writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Stmt {
    Accept,
    Reject,
    If {
        cond: Cond,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// Call of a `function NAME ()`.
    Call(String),
    /// `ATTR = VALUE;` (`krt_tunnel = "tunl0"`, `bgp_local_pref = 200`, …).
    Set {
        attr: String,
        value: Value,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Value {
    Str(String),
    Int(u32),
    Ip(Ipv4Addr),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Cond {
    /// `net = P`
    NetEq(Ipv4Net),
    /// `net ~ P`: the route's prefix lies inside P (P itself included).
    NetIn(Ipv4Net),
    /// `bgp_next_hop ~ P` / `from ~ P`-style address-in-prefix tests.
    AddrIn {
        attr: String,
        prefix: Ipv4Net,
    },
    /// `ATTR = VALUE` for other attributes (`proto = "static1"`, `source = RTS_STATIC`).
    AttrEq {
        attr: String,
        value: Value,
    },
    /// `defined(ATTR)`: the route carries the attribute (`defined(bgp_next_hop)`).
    Defined {
        attr: String,
    },
    Not(Box<Cond>),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}
