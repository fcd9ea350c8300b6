//! What the BGP engine exposes to views and tests: sessions with their counters, and each
//! speaker's table (every path, or for BIRD every route of every protocol) with the best-path
//! markers and the tie-breaker that decided. Plain data; only the engine writes it.

use std::net::Ipv4Addr;
use std::sync::Arc;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};

use super::state::NextHop;

/// RFC 4271 §8 session states. Deserialized by name for scenario `session:` expectations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BgpState {
    Idle,
    Connect,
    Active,
    OpenSent,
    OpenConfirm,
    Established,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BgpSessionView {
    /// BIRD protocol name (`Mesh_10_0_11_1`); `None` on EOS/FRR.
    pub name: Option<String>,
    pub neighbor: Ipv4Addr,
    pub remote_as: Option<u32>,
    pub local_as: u32,
    pub state: BgpState,
    /// Virtual time of the last state change (Up/Down, BIRD `since`).
    pub since_ms: u64,
    pub msgs_rcvd: u64,
    pub msgs_sent: u64,
    /// Paths received and kept (after AS-loop drops), before import policy (EOS PfxRcd).
    pub pfx_rcvd: u32,
    /// Paths accepted by import policy (EOS PfxAcc, BIRD "imported").
    pub pfx_acc: u32,
    /// BIRD `Routes: N imported, N exported, N preferred`.
    pub exported: u32,
    pub preferred: u32,
    /// Why the session is not up, as the speaker says it (`Socket: No route to host`,
    /// `Received: Bad peer AS`, `Hold timer expired`, `Neighbor not configured`).
    pub last_error: Option<String>,
    pub peer_router_id: Option<Ipv4Addr>,
    pub internal: bool,
    pub multihop: bool,
    pub passive: bool,
    /// ADD-PATH as negotiated (both sides' capabilities).
    pub add_path_rx: bool,
    pub add_path_tx: bool,
    /// The speaker's own address on the session (BIRD `Source address:`): the configured
    /// `source address`, else the TCP connection's local address.
    pub source: Option<Ipv4Addr>,
    pub hold_s: u32,
    pub keepalive_s: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum BgpOrigin {
    Igp,
    Egp,
    Incomplete,
}

/// The LOCAL_PREF of a path that has none: a path received over eBGP (the attribute is not
/// carried there, RFC 4271 §5.1.5) or originated. EOS, FRR and BIRD all use 100.
pub const DEFAULT_LOCAL_PREF: u32 = 100;

/// BGP path attributes but the NEXT_HOP, shared (`Arc`, interned: `engine::bgp::attrs`) between
/// every table and message that carries them. The NEXT_HOP is kept beside the set, not in it
/// (`Advertised`, a table entry's own): on eBGP every session sends its own address as next
/// hop, so with it in the set a leaf's sessions to its nodes each made, interned and held
/// their own copy of every path — one per (prefix, node) —, where without it they share one,
/// as an update group formats an UPDATE once and writes each peer's next hop into it (FRR
/// `bpacket_reformat_for_peer`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PathAttrs {
    pub as_path: Vec<u32>,
    pub origin: BgpOrigin,
    pub local_pref: Option<u32>,
    pub med: Option<u32>,
}

/// One path as a session advertises it: its ADD-PATH identifier (0 without ADD-PATH), its
/// NEXT_HOP and its other attributes. Sixteen bytes, as the (identifier, attributes) pair it
/// replaces: an Adj-RIB-Out slot or an UPDATE holds one per (session, prefix).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Advertised {
    pub id: u32,
    pub next_hop: Ipv4Addr,
    pub attrs: Arc<PathAttrs>,
}

/// Where a table route goes once resolved.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum TableDest {
    /// Through a gateway on an interface (a BGP next hop resolved recursively shows the
    /// resolved gateway).
    Via(NextHop),
    /// On-link on an interface (direct routes).
    Device(NextHop),
    /// Behind a thin pointer: a route over one gateway is the common case, and as a `Vec`
    /// (or a boxed slice's two words) this made every path of every speaker's table 8 bytes
    /// larger.
    Multipath(Box<Box<[NextHop]>>),
    Blackhole,
    /// The next hop does not resolve (BIRD keeps such routes, ranked last).
    Unreachable,
}

/// The IGP metric to a BGP next hop, as BIRD shows it after the preference: `(100/0)`,
/// `(100/20)`, `(100/?)`, `(100/-)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum NhMetric {
    Known(u32),
    /// Resolved through a gateway route that carries no IGP metric (kernel/static).
    Unknown,
    Unresolvable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum EcmpRole {
    None,
    /// EOS `E`: head of an ECMP group; `Member` is `e`.
    Head,
    Member,
}

/// One route in a speaker's table: a BGP path (received or originated), or on BIRD any
/// protocol's route (static, direct, kernel-learned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TableRoute {
    pub prefix: Ipv4Net,
    /// BIRD protocol name (`static1`, `kernel1`, `direct1`, `Mesh_…`); EOS: `bgp`.
    pub protocol: String,
    /// The peer it came from (BGP), `None` when originated here.
    pub from: Option<Ipv4Addr>,
    pub path_id: u32,
    pub attrs: Option<Arc<PathAttrs>>,
    /// BGP NEXT_HOP (None: a route originated here, or not BGP's).
    pub next_hop: Option<Ipv4Addr>,
    pub dest: TableDest,
    pub nh_metric: Option<NhMetric>,
    /// BIRD preference (direct 240, static 200, BGP 100, kernel 10).
    pub preference: u32,
    pub ebgp: bool,
    /// Next hop resolvable and not filtered.
    pub valid: bool,
    /// Import policy accepted it. BIRD keeps a route its import filter rejects only under
    /// `import keep filtered` (not modelled), so BIRD's views leave such a route out; EOS
    /// counts it as received.
    pub accepted: bool,
    pub best: bool,
    pub ecmp: EcmpRole,
    /// Last time this route was (re)announced with new attributes.
    pub since_ms: u64,
    /// For the best route: the tie-breaker that put it ahead of the runner-up.
    pub decided_by: Option<&'static str>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BgpView {
    pub asn: u32,
    pub router_id: Option<Ipv4Addr>,
    pub sessions: Vec<BgpSessionView>,
    pub table: BgpTable,
}

/// A speaker's table as the views read it: sorted by prefix; within a prefix the best route
/// first, then by arrival. The engine's views share the speaker's table as it was when the
/// view was taken (the engine copies a prefix's paths before it changes them) and turn it into
/// `TableRoute`s only when read: a copy per path, rebuilt after every recompute, was a third
/// of an eBGP fabric's memory. Built from routes too (tests, views' fixtures).
#[derive(Clone, Debug, Default)]
pub struct BgpTable(TableRepr);

#[derive(Clone, Debug)]
enum TableRepr {
    Routes(Vec<TableRoute>),
    Speaker(super::bgp::TableSnapshot),
}

impl Default for TableRepr {
    fn default() -> Self {
        TableRepr::Routes(Vec::new())
    }
}

impl BgpTable {
    pub(crate) fn of_speaker(snapshot: super::bgp::TableSnapshot) -> Self {
        BgpTable(TableRepr::Speaker(snapshot))
    }

    /// Every route, in table order.
    pub fn routes(&self) -> std::borrow::Cow<'_, [TableRoute]> {
        match &self.0 {
            TableRepr::Routes(v) => std::borrow::Cow::Borrowed(v),
            TableRepr::Speaker(s) => std::borrow::Cow::Owned(s.routes()),
        }
    }

    /// The routes for exactly `prefix`, in table order.
    pub fn for_prefix(&self, prefix: Ipv4Net) -> Vec<TableRoute> {
        match &self.0 {
            TableRepr::Routes(v) => v.iter().filter(|r| r.prefix == prefix).cloned().collect(),
            TableRepr::Speaker(s) => s.for_prefix(prefix),
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            TableRepr::Routes(v) => v.len(),
            TableRepr::Speaker(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The routes, to edit (views' test fixtures).
    #[cfg(test)]
    pub(crate) fn routes_mut(&mut self) -> &mut Vec<TableRoute> {
        if let TableRepr::Speaker(s) = &self.0 {
            self.0 = TableRepr::Routes(s.routes());
        }
        match &mut self.0 {
            TableRepr::Routes(v) => v,
            TableRepr::Speaker(_) => unreachable!("replaced above"),
        }
    }
}

impl From<Vec<TableRoute>> for BgpTable {
    fn from(routes: Vec<TableRoute>) -> Self {
        BgpTable(TableRepr::Routes(routes))
    }
}

impl PartialEq for BgpTable {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (TableRepr::Speaker(a), TableRepr::Speaker(b)) if a.same(b) => true,
            _ => self.routes() == other.routes(),
        }
    }
}

impl Eq for BgpTable {}

impl Serialize for BgpTable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.routes().iter())
    }
}

/// A BGP message as a speaker sent it (what captures encode, `wire::bgp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BgpMessage {
    /// The sender's AS, proposed hold time, router id and the ADD-PATH directions it offers
    /// for IPv4 unicast.
    Open {
        asn: u32,
        hold_s: u32,
        router_id: Ipv4Addr,
        add_path_rx: bool,
        add_path_tx: bool,
    },
    Keepalive,
    /// Withdrawn (prefix, path id) and announced paths; `add_path` when the sender sends path
    /// identifiers on this session (it negotiated ADD-PATH send).
    Update {
        add_path: bool,
        withdrawn: Vec<(Ipv4Net, u32)>,
        announced: Vec<(Ipv4Net, Advertised)>,
    },
    Notification {
        code: u8,
        subcode: u8,
    },
}

/// What one event put on a BGP session's TCP connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BgpWire {
    /// The connection opens (the active side connects) and the session comes up: both OPENs,
    /// then a KEEPALIVE each way (RFC 4271 §8.2.2).
    Establish {
        active_open: BgpMessage,
        passive_open: BgpMessage,
    },
    /// A message from `from` to `to`.
    Send(BgpMessage),
    /// A NOTIFICATION from `from`, after which the connection closes.
    Notify(BgpMessage),
}

/// One entry of the engine's BGP wire log (`Engine::record_bgp_wire`).
#[derive(Clone, Debug)]
pub struct BgpWireRecord {
    pub at_ms: u64,
    /// The TCP connection: one per establishment of a session.
    pub conn: u64,
    /// The sending and receiving devices and their addresses.
    pub device: crate::model::DeviceId,
    pub peer: crate::model::DeviceId,
    pub from: Ipv4Addr,
    pub to: Ipv4Addr,
    /// The sender opened the connection (its port is the ephemeral one).
    pub from_active: bool,
    /// The IP TTL each side sends with (1 for single-hop eBGP, the multihop value, 64 for
    /// iBGP).
    pub ttl: u8,
    pub peer_ttl: u8,
    pub wire: BgpWire,
    /// Where the segments went at the instant they were sent; kept only when they cross a
    /// tapped interface.
    pub path: Option<WirePath>,
}

/// The data-plane walks of a segment each way between a session's two addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WirePath {
    /// From the sender to the receiver, and from the receiver back.
    pub there: Vec<crate::dataplane::Hop>,
    pub back: Vec<crate::dataplane::Hop>,
    /// When a segment reaches the receiver, µs after it left.
    pub one_way_us: u64,
}
