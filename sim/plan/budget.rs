//! One node pool's address budget (`k8s-cidr-migrations.md` §4.2, §4.6): what the pool needs at
//! its maximum scale with the warm-pool buffer, the smallest subnet that holds it, how a given
//! subnet fares, and the usage status against the 70 % / 80 % / 85 % thresholds of [004].
//!
//! Integers only: percentages are compared as `used × 100 ≥ pct × usable` and utilisation is
//! carried in tenths of a percent, rounded half up, so a status never depends on float rounding.

use std::fmt;

use ipnet::Ipv4Net;
use serde::Serialize;

use super::node_cidr::{node_cidr, NodeCidrPlan};

/// [004]'s warm-pool / CNI buffer on top of the raw demand.
pub const DEFAULT_BUFFER_PCT: u32 = 30;
/// [004]'s cloud-reserved addresses per subnet (2 for an overlay node range: network and
/// broadcast; AWS reserves 5).
pub const DEFAULT_RESERVED: u32 = 4;
/// kubelet's `maxPods` when nothing sets it (Kubernetes documentation).
pub const KUBELET_DEFAULT_MAX_PODS: u32 = 110;
/// The widest subnet `plan` recommends: past a /8 the need is not a subnet-sizing question.
const WIDEST_PREFIX: u8 = 8;

/// A subnet to evaluate: a real CIDR, or only its size (`/24`) while the addresses are not chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubnetSpec {
    Cidr(Ipv4Net),
    Size(u8),
}

impl SubnetSpec {
    pub fn prefix_len(&self) -> u8 {
        match self {
            SubnetSpec::Cidr(n) => n.prefix_len(),
            SubnetSpec::Size(p) => *p,
        }
    }

    /// `10.20.0.0/21` or `/21`; the network address must be the subnet's first address.
    pub fn parse(text: &str) -> Result<SubnetSpec, String> {
        if let Some(len) = text.strip_prefix('/') {
            return match len.parse::<u8>() {
                Ok(p) if p <= 32 => Ok(SubnetSpec::Size(p)),
                _ => Err(format!("'{text}': expected a prefix length /0 to /32")),
            };
        }
        let net: Ipv4Net = text
            .parse()
            .map_err(|_| format!("'{text}': expected an IPv4 CIDR (10.20.0.0/21) or a size (/21)"))?;
        if net.network() != net.addr() {
            return Err(format!(
                "'{text}' has host bits set: the subnet is {}",
                Ipv4Net::new(net.network(), net.prefix_len()).unwrap_or(net)
            ));
        }
        Ok(SubnetSpec::Cidr(net))
    }
}

impl fmt::Display for SubnetSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubnetSpec::Cidr(n) => write!(f, "{n}"),
            SubnetSpec::Size(p) => write!(f, "/{p}"),
        }
    }
}

impl Serialize for SubnetSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One pool's inputs (the flags of `fabsim plan pods`, or one entry of a pools file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInput {
    pub name: String,
    /// kubelet `maxPods` per node.
    pub max_pods: Option<u32>,
    /// The pool's maximum node count.
    pub nodes: Option<u32>,
    pub buffer_pct: u32,
    pub reserved: u32,
    /// Secondary IPs one NIC can hold (VPC-CNI clouds), and NICs per node.
    pub nic_ip_limit: Option<u32>,
    pub nics: u32,
    /// IPs each node actually holds (its warm pool), for occupancy; defaults to the
    /// effective maxPods.
    pub warm_per_node: Option<u32>,
    pub subnet: Option<SubnetSpec>,
    /// Addresses allocated now, for the threshold status.
    pub in_use: Option<u64>,
    /// Share of the need the pool's own subnet carries; the rest borrows from a shared buffer.
    pub dedicated_pct: u32,
    /// Zonal subnets: each zone must carry the whole pool in a failover.
    pub zones: u32,
    /// Overlay node ranges: the cluster CIDR and `--node-cidr-mask-size`.
    pub overlay: Option<(Ipv4Net, u8)>,
}

impl PoolInput {
    pub fn new(name: impl Into<String>) -> Self {
        PoolInput {
            name: name.into(),
            max_pods: None,
            nodes: None,
            buffer_pct: DEFAULT_BUFFER_PCT,
            reserved: DEFAULT_RESERVED,
            nic_ip_limit: None,
            nics: 1,
            warm_per_node: None,
            subnet: None,
            in_use: None,
            dedicated_pct: 100,
            zones: 1,
            overlay: None,
        }
    }

    /// The first input that cannot be planned, as (the input's key, what is wrong, starting
    /// with the value). Keys are the pools file's (`pool` for the pool as a whole); the CLI
    /// names them as flags.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let positive = [
            ("max_pods", self.max_pods),
            ("nodes", self.nodes),
            ("nic_ip_limit", self.nic_ip_limit),
            ("nics", Some(self.nics)),
            ("zones", Some(self.zones)),
            ("warm_per_node", self.warm_per_node),
        ];
        for (key, v) in positive {
            if v == Some(0) {
                let what = match key {
                    "nodes" => "a pool needs at least one node",
                    "zones" => "a pool lives in at least one zone",
                    _ => "expected a number greater than 0",
                };
                return Err((key, format!("0: {what}")));
            }
        }
        if !(1..=100).contains(&self.dedicated_pct) {
            return Err((
                "dedicated_pct",
                format!("{}: expected a percentage from 1 to 100", self.dedicated_pct),
            ));
        }
        if self.buffer_pct > 1000 {
            return Err((
                "buffer_pct",
                format!("{}: expected a percentage from 0 to 1000", self.buffer_pct),
            ));
        }
        if let Some((cidr, mask)) = self.overlay {
            if mask < cidr.prefix_len() {
                return Err((
                    "node_mask",
                    format!(
                        "/{mask} is shorter than the cluster CIDR {cidr}: a node range must fit inside the cluster range"
                    ),
                ));
            }
            if mask > 32 {
                return Err(("node_mask", format!("/{mask}: expected a prefix length up to /32")));
            }
        }
        let demand = self.max_pods.is_some() && self.nodes.is_some();
        if !demand && self.subnet.is_none() && self.overlay.is_none() {
            return Err((
                "pool",
                "nothing to plan: give max_pods and nodes (a demand), a subnet, or cluster_cidr with node_mask".into(),
            ));
        }
        Ok(())
    }

    /// maxPods as the NIC cap lets it be: a node holds at most `limit × nics` pod IPs.
    fn effective_max_pods(&self) -> Option<u32> {
        let cap = self.nic_ip_limit.map(|l| l.saturating_mul(self.nics));
        match (self.max_pods, cap) {
            (Some(m), Some(c)) => Some(m.min(c)),
            (m, _) => m,
        }
    }
}

/// A subnet size and what is left of it after the reserved addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Block {
    pub prefix_len: u8,
    pub addresses: u64,
    pub usable: u64,
}

impl Block {
    pub fn new(prefix_len: u8, reserved: u32) -> Block {
        let addresses = 1u64 << (32 - u32::from(prefix_len.min(32)));
        Block {
            prefix_len,
            addresses,
            usable: addresses.saturating_sub(u64::from(reserved)),
        }
    }

    /// The smallest block (the longest prefix) whose usable addresses hold `need`; equality fits.
    pub fn smallest_for(need: u64, reserved: u32) -> Option<Block> {
        (WIDEST_PREFIX..=32)
            .rev()
            .map(|p| Block::new(p, reserved))
            .find(|b| b.usable >= need)
    }
}

/// [004]'s alert levels for a subnet's usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Level {
    /// Below 70 %.
    Ok,
    /// 70 % or more: watch, warn.
    Watch,
    /// 85 % or more: an incident; pause the pool's autoscaling.
    Emergency,
    /// More than 100 %: pods cannot get an address.
    Exhausted,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Ok => "OK",
            Level::Watch => "WATCH",
            Level::Emergency => "EMERGENCY",
            Level::Exhausted => "EXHAUSTED",
        })
    }
}

/// Usage of a subnet and its alert level. An exact tie with a threshold alerts ([004] says
/// "exceeds"; counting the tie is fabsim's conservative choice, k8s-cidr-migrations.md §4.6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Status {
    /// What `used` counts: `in use`, `warm IPs` (nodes × per-node IPs) or `raw demand`.
    pub basis: &'static str,
    pub used: u64,
    pub usable: u64,
    /// Utilisation in tenths of a percent, rounded half up.
    pub permille: u64,
    pub level: Level,
    /// 80 % or more: lower the pool's max nodes or hand the change to a human ([004]'s
    /// autoscaler guard, a separate level beside 70/85).
    pub autoscaler_guard: bool,
}

impl Status {
    pub fn new(basis: &'static str, used: u64, usable: u64) -> Status {
        let at = |pct: u64| u128::from(used) * 100 >= u128::from(pct) * u128::from(usable);
        let level = if used > usable {
            Level::Exhausted
        } else if at(85) {
            Level::Emergency
        } else if at(70) {
            Level::Watch
        } else {
            Level::Ok
        };
        Status {
            basis,
            used,
            usable,
            permille: permille(used, usable),
            level,
            autoscaler_guard: at(80),
        }
    }
}

/// `used / usable` in tenths of a percent, rounded half up (u64::MAX for an empty subnet).
pub fn permille(used: u64, usable: u64) -> u64 {
    if usable == 0 {
        return u64::MAX;
    }
    let p = (u128::from(used) * 1000 + u128::from(usable) / 2) / u128::from(usable);
    u64::try_from(p).unwrap_or(u64::MAX)
}

/// What the pool needs at its maximum scale (§4.6 steps 1–4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Demand {
    /// Effective maxPods × nodes.
    pub raw: u64,
    /// `raw` plus the buffer, rounded up.
    pub need: u64,
    /// The smallest subnet holding `need` (one per zone).
    pub recommended: Block,
    /// Usable addresses of the recommended subnet left over at `need`.
    pub headroom: u64,
    /// Utilisation of the recommended subnet at the raw demand, tenths of a percent.
    pub util_at_raw_permille: u64,
}

/// The pool's own subnet when it carries only part of the need ([004]'s 70 %-of-peak rule).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dedicated {
    pub pct: u32,
    pub need: u64,
    pub block: Block,
    /// What the pool borrows from the shared buffer at peak.
    pub shared_need: u64,
}

/// How a given subnet fares (§4.6 step 5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubnetEval {
    pub subnet: SubnetSpec,
    pub block: Block,
    /// `usable ≥ need`, when there is a demand.
    pub fits: Option<bool>,
    /// Nodes at full maxPods the subnet holds, without and with the buffer.
    pub max_nodes_raw: Option<u64>,
    pub max_nodes_buffered: Option<u64>,
}

/// What the nodes actually hold (§4.6 step 6), and the scale at which the thresholds fall.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    /// IPs each node holds (its warm pool, else maxPods).
    pub per_node: u64,
    pub consumption: Option<u64>,
    pub shortfall: Option<u64>,
    /// Nodes the subnet holds at `per_node` each.
    pub max_nodes: u64,
    /// The node count at which usage reaches 70 % and 85 %.
    pub nodes_at_70_pct: u64,
    pub nodes_at_85_pct: u64,
}

/// Everything `plan pods` says about one pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolPlan {
    pub name: String,
    pub max_pods: Option<u32>,
    pub effective_max_pods: Option<u32>,
    pub nodes: Option<u32>,
    pub buffer_pct: u32,
    pub reserved: u32,
    pub zones: u32,
    pub demand: Option<Demand>,
    pub dedicated: Option<Dedicated>,
    pub subnet: Option<SubnetEval>,
    pub occupancy: Option<Occupancy>,
    pub status: Option<Status>,
    pub overlay: Option<NodeCidrPlan>,
    pub warnings: Vec<String>,
}

impl PoolPlan {
    /// The subnet the pool's usage is measured against: the given one, else the recommended one.
    pub fn evaluated_block(&self) -> Option<Block> {
        evaluated(self.subnet.as_ref(), self.demand.as_ref())
    }
}

/// The given subnet, else the recommended one.
fn evaluated(subnet: Option<&SubnetEval>, demand: Option<&Demand>) -> Option<Block> {
    subnet.map(|s| s.block).or(demand.map(|d| d.recommended))
}

/// `ceil(n × (100 + pct) / 100)`.
fn buffered(n: u64, pct: u32) -> u64 {
    (n * (100 + u64::from(pct))).div_ceil(100)
}

/// Plans one pool. Errors are [`PoolInput::check`]'s, plus a need no subnet up to a /8 holds.
pub fn plan_pool(input: &PoolInput) -> Result<PoolPlan, (&'static str, String)> {
    input.check()?;
    let mut warnings = Vec::new();
    let eff = input.effective_max_pods();
    if let (Some(m), Some(l)) = (input.max_pods, input.nic_ip_limit) {
        let cap = l.saturating_mul(input.nics);
        if m > cap {
            warnings.push(format!(
                "maxPods {m} has no effect beyond {cap}: a node holds at most {l} secondary IPs × {} NIC{} \
                 (more NICs or a multi-IP ENI mode raise it)",
                input.nics,
                if input.nics == 1 { "" } else { "s" }
            ));
        }
    }
    let demand = match (eff, input.nodes) {
        (Some(m), Some(n)) => {
            let raw = u64::from(m) * u64::from(n);
            let need = buffered(raw, input.buffer_pct);
            let recommended = Block::smallest_for(need, input.reserved).ok_or_else(|| {
                (
                    "nodes",
                    format!("{n}: the pool needs {need} addresses, more than a /{WIDEST_PREFIX} holds"),
                )
            })?;
            Some(Demand {
                raw,
                need,
                recommended,
                headroom: recommended.usable - need,
                util_at_raw_permille: permille(raw, recommended.usable),
            })
        }
        _ => None,
    };
    let dedicated = match &demand {
        Some(d) if input.dedicated_pct < 100 => {
            let need = (d.need * u64::from(input.dedicated_pct)).div_ceil(100);
            let block = Block::smallest_for(need, input.reserved).unwrap_or(d.recommended);
            Some(Dedicated {
                pct: input.dedicated_pct,
                need,
                block,
                shared_need: d.need - need,
            })
        }
        _ => None,
    };
    let subnet = input.subnet.map(|spec| {
        let block = Block::new(spec.prefix_len(), input.reserved);
        SubnetEval {
            subnet: spec,
            block,
            fits: demand.as_ref().map(|d| block.usable >= d.need),
            max_nodes_raw: eff.map(|m| block.usable / u64::from(m)),
            max_nodes_buffered: eff.map(|m| block.usable / buffered(u64::from(m), input.buffer_pct)),
        }
    });
    let evaluated = evaluated(subnet.as_ref(), demand.as_ref());
    let per_node = input.warm_per_node.or(eff).map(u64::from);
    let occupancy = match (evaluated, per_node) {
        (Some(b), Some(w)) => {
            let consumption = input.nodes.map(|n| u64::from(n) * w);
            // The smallest n with n × w × 100 ≥ pct × usable.
            let at = |pct: u64| (pct * b.usable).div_ceil(100 * w);
            Some(Occupancy {
                per_node: w,
                consumption,
                shortfall: consumption.map(|c| c.saturating_sub(b.usable)),
                max_nodes: b.usable / w,
                nodes_at_70_pct: at(70),
                nodes_at_85_pct: at(85),
            })
        }
        _ => None,
    };
    let status = match (evaluated, input.in_use, &occupancy) {
        (Some(b), Some(used), _) => Some(Status::new("in use", used, b.usable)),
        (
            Some(b),
            None,
            Some(Occupancy {
                consumption: Some(c), ..
            }),
        ) => {
            let basis = if input.warm_per_node.is_some() {
                "warm IPs"
            } else {
                "raw demand"
            };
            Some(Status::new(basis, *c, b.usable))
        }
        _ => None,
    };
    let overlay = input.overlay.map(|(cidr, mask)| node_cidr(cidr, mask, input.max_pods));
    if let Some(o) = &overlay {
        warnings.extend(o.warnings.iter().cloned());
        if let Some(n) = input.nodes {
            if u64::from(n) > o.max_nodes {
                warnings.push(format!(
                    "{n} nodes exceed the {} node ranges of /{} in {}: the rest get no podCIDR \
                     (event CIDRNotAvailable)",
                    o.max_nodes, o.node_mask, o.cluster_cidr
                ));
            }
        }
    }
    Ok(PoolPlan {
        name: input.name.clone(),
        max_pods: input.max_pods,
        effective_max_pods: eff,
        nodes: input.nodes,
        buffer_pct: input.buffer_pct,
        reserved: input.reserved,
        zones: input.zones,
        demand,
        dedicated,
        subnet,
        occupancy,
        status,
        overlay,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_count_reserved_addresses() {
        assert_eq!(Block::new(24, 4).usable, 252);
        assert_eq!(Block::new(32, 4).usable, 0);
        assert_eq!(Block::smallest_for(252, 4).map(|b| b.prefix_len), Some(24));
        assert_eq!(Block::smallest_for(253, 4).map(|b| b.prefix_len), Some(23));
        assert_eq!(Block::smallest_for(1 << 24, 4), None);
    }

    #[test]
    fn utilisation_rounds_half_up_in_tenths() {
        assert_eq!(permille(2000, 4092), 489);
        assert_eq!(permille(200, 252), 794);
        assert_eq!(permille(240, 252), 952);
    }

    #[test]
    fn subnet_sizes_and_cidrs_parse() {
        assert_eq!(SubnetSpec::parse("/24"), Ok(SubnetSpec::Size(24)));
        assert!(SubnetSpec::parse("/33").is_err());
        assert!(SubnetSpec::parse("10.0.0.1/24").unwrap_err().contains("10.0.0.0/24"));
    }
}
