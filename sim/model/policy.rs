//! Route policy as FRR (and Cisco-style CLIs) write it: `ip prefix-list` and `route-map`, by
//! name, for the BGP speaker's `neighbor … route-map NAME in|out`. Plain configuration; the
//! engine's `engine::bgp::route_map` evaluates it.

use std::collections::BTreeMap;

use ipnet::Ipv4Net;
use serde::Serialize;

use crate::diag::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Permit,
    Deny,
}

/// `ip prefix-list NAME seq N permit|deny P [ge G] [le L]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PrefixListEntry {
    pub seq: u32,
    pub action: Action,
    pub prefix: Ipv4Net,
    pub ge: Option<u8>,
    pub le: Option<u8>,
    pub span: Span,
}

/// `route-map NAME permit|deny N` with its match and set clauses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouteMapEntry {
    pub seq: u32,
    pub action: Action,
    /// `match ip address prefix-list NAME`; an entry without match clauses matches every route.
    pub match_prefix_list: Option<String>,
    /// `set local-preference N`.
    pub set_local_pref: Option<u32>,
    /// `set metric N` (the MED).
    pub set_metric: Option<u32>,
    /// `set as-path prepend AS…`, in the order written.
    pub set_prepend: Vec<u32>,
    pub span: Span,
}

/// A device's named prefix-lists and route-maps, entries kept in sequence order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RoutePolicies {
    pub prefix_lists: BTreeMap<String, Vec<PrefixListEntry>>,
    pub route_maps: BTreeMap<String, Vec<RouteMapEntry>>,
}
