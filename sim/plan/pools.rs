//! Several node pools at once (`fabsim plan pods --pools FILE`): the pools file, the check that
//! their subnets do not overlap ([004]'s rollout rule: new subnets must not overlap existing
//! ones), carving their subnets out of a supernet, and the cluster-wide verdict.
//!
//! The file is fabsim's own format, so an unknown key is an error (a typo'd `max_pod:` must not
//! silently plan a pool without a demand):
//!
//! ```yaml
//! supernet: 10.20.0.0/16     # optional: carve every pool's subnet(s) from it
//! buffer_pct: 30             # optional defaults for every pool
//! reserved: 4
//! pools:
//!   - {name: core-online, max_pods: 40, nodes: 30}
//!   - {name: data, max_pods: 20, nodes: 10, subnet: 10.20.8.0/24}
//! ```

use std::path::Path;

use ipnet::Ipv4Net;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::budget::{plan_pool, Level, PoolInput, PoolPlan, SubnetSpec};
use crate::diag::{Diagnostic, InputError, Span, TextOrigin};
use crate::input::topology::yaml;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    supernet: Option<Spanned<String>>,
    buffer_pct: Option<Spanned<u32>>,
    reserved: Option<Spanned<u32>>,
    pools: Spanned<Vec<Spanned<RawPool>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    name: Spanned<String>,
    max_pods: Option<Spanned<u32>>,
    nodes: Option<Spanned<u32>>,
    buffer_pct: Option<Spanned<u32>>,
    reserved: Option<Spanned<u32>>,
    nic_ip_limit: Option<Spanned<u32>>,
    nics: Option<Spanned<u32>>,
    warm_per_node: Option<Spanned<u32>>,
    subnet: Option<Spanned<String>>,
    in_use: Option<Spanned<u64>>,
    dedicated_pct: Option<Spanned<u32>>,
    zones: Option<Spanned<u32>>,
    cluster_cidr: Option<Spanned<String>>,
    node_mask: Option<Spanned<u8>>,
}

/// The pools to plan and the supernet to carve, as read.
pub struct PoolsFile {
    pub supernet: Option<Ipv4Net>,
    pub pools: Vec<PoolInput>,
    /// Where each pool's name is written, for what planning finds wrong later.
    pub spans: Vec<Span>,
}

/// Reads a pools file. Every error names the file, line and column.
pub fn read_pools(path: &Path, text: &str) -> Result<PoolsFile, InputError> {
    let origin = TextOrigin {
        file: path.display().to_string(),
        line: 1,
        col: 1,
    };
    let raw: RawFile = yaml::from_str(text, &origin)?;
    let at = |loc: &serde_saphyr::Location| yaml::span(&origin, loc);
    let supernet = match &raw.supernet {
        Some(s) => Some(cidr(&s.value).map_err(|m| Diagnostic::error(at(&s.referenced), format!("supernet {m}")))?),
        None => None,
    };
    if raw.pools.value.is_empty() {
        return Err(Diagnostic::error(at(&raw.pools.referenced), "pools: expected at least one pool").into());
    }
    let mut pools: Vec<PoolInput> = Vec::new();
    let mut names: Vec<(&str, Span)> = Vec::new();
    for p in &raw.pools.value {
        let rp = &p.value;
        let name = rp.name.value.trim();
        if name.is_empty() {
            return Err(Diagnostic::error(at(&rp.name.referenced), "name: expected a pool name").into());
        }
        if let Some((_, first)) = names.iter().find(|(n, _)| *n == name) {
            return Err(Diagnostic::error(
                at(&rp.name.referenced),
                format!("pool '{name}' is already defined at line {}", first.line),
            )
            .into());
        }
        names.push((name, at(&rp.name.referenced)));
        let mut pool = PoolInput::new(name);
        let value = |v: &Option<Spanned<u32>>| v.as_ref().map(|s| s.value);
        pool.max_pods = value(&rp.max_pods);
        pool.nodes = value(&rp.nodes);
        pool.nic_ip_limit = value(&rp.nic_ip_limit);
        pool.warm_per_node = value(&rp.warm_per_node);
        pool.in_use = rp.in_use.as_ref().map(|s| s.value);
        if let Some(v) = value(&rp.buffer_pct).or(value(&raw.buffer_pct)) {
            pool.buffer_pct = v;
        }
        if let Some(v) = value(&rp.reserved).or(value(&raw.reserved)) {
            pool.reserved = v;
        }
        if let Some(v) = value(&rp.nics) {
            pool.nics = v;
        }
        if let Some(v) = value(&rp.dedicated_pct) {
            pool.dedicated_pct = v;
        }
        if let Some(v) = value(&rp.zones) {
            pool.zones = v;
        }
        if let Some(s) = &rp.subnet {
            let spec =
                SubnetSpec::parse(&s.value).map_err(|m| Diagnostic::error(at(&s.referenced), format!("subnet {m}")))?;
            pool.subnet = Some(spec);
        }
        match (&rp.cluster_cidr, &rp.node_mask) {
            (Some(c), Some(m)) => {
                let net =
                    cidr(&c.value).map_err(|e| Diagnostic::error(at(&c.referenced), format!("cluster_cidr {e}")))?;
                pool.overlay = Some((net, m.value));
            }
            (Some(c), None) => {
                return Err(Diagnostic::error(at(&c.referenced), "cluster_cidr needs node_mask beside it").into())
            }
            (None, Some(m)) => {
                return Err(Diagnostic::error(at(&m.referenced), "node_mask needs cluster_cidr beside it").into())
            }
            (None, None) => {}
        }
        if let Err((key, msg)) = pool.check() {
            let span = key_span(rp, key).map_or_else(|| at(&p.referenced), &at);
            let what = if key == "pool" { msg } else { format!("{key} {msg}") };
            return Err(Diagnostic::error(span, format!("pool '{name}': {what}")).into());
        }
        pools.push(pool);
    }
    // [004]: new subnets must not overlap existing ones.
    let given: Vec<(usize, Ipv4Net)> = pools
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p.subnet {
            Some(SubnetSpec::Cidr(n)) => Some((i, n)),
            _ => None,
        })
        .collect();
    for (k, (i, a)) in given.iter().enumerate() {
        let line_of = |idx: usize| {
            raw.pools.value[idx]
                .value
                .subnet
                .as_ref()
                .map(|s| at(&s.referenced))
                .unwrap_or_else(|| at(&raw.pools.value[idx].referenced))
        };
        if let Some(sup) = supernet {
            if !sup.contains(a) {
                return Err(Diagnostic::error(
                    line_of(*i),
                    format!("pool '{}': subnet {a} is outside the supernet {sup}", pools[*i].name),
                )
                .into());
            }
        }
        if let Some((j, b)) = given[..k].iter().find(|(_, b)| b.contains(a) || a.contains(b)) {
            return Err(Diagnostic::error(
                line_of(*i),
                format!(
                    "pool '{}': subnet {a} overlaps pool '{}''s subnet {b} (line {})",
                    pools[*i].name,
                    pools[*j].name,
                    line_of(*j).line
                ),
            )
            .into());
        }
    }
    Ok(PoolsFile {
        supernet,
        pools,
        spans: names.into_iter().map(|(_, s)| s).collect(),
    })
}

/// Where a pool's input `key` (as [`PoolInput::check`] names it) is written.
fn key_span<'a>(rp: &'a RawPool, key: &str) -> Option<&'a serde_saphyr::Location> {
    let num = |v: &'a Option<Spanned<u32>>| v.as_ref().map(|s| &s.referenced);
    match key {
        "max_pods" => num(&rp.max_pods),
        "nodes" => num(&rp.nodes),
        "nic_ip_limit" => num(&rp.nic_ip_limit),
        "nics" => num(&rp.nics),
        "zones" => num(&rp.zones),
        "warm_per_node" => num(&rp.warm_per_node),
        "dedicated_pct" => num(&rp.dedicated_pct),
        "buffer_pct" => num(&rp.buffer_pct),
        "node_mask" => rp.node_mask.as_ref().map(|s| &s.referenced),
        _ => None,
    }
}

/// An IPv4 CIDR whose address is its network address.
pub fn cidr(text: &str) -> Result<Ipv4Net, String> {
    match SubnetSpec::parse(text)? {
        SubnetSpec::Cidr(n) => Ok(n),
        SubnetSpec::Size(_) => Err(format!("'{text}': expected an IPv4 CIDR such as 10.20.0.0/16")),
    }
}

/// The subnets carved for one pool: one per zone, of its dedicated size if it has one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Carved {
    pub pool: String,
    pub subnets: Vec<Ipv4Net>,
    /// Zones that got no subnet because the supernet is full.
    pub missing: u32,
}

/// The supernet after carving.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Carving {
    pub supernet: Ipv4Net,
    pub pools: Vec<Carved>,
    /// Addresses of the supernet in carved or given subnets.
    pub used: u64,
    pub addresses: u64,
}

/// The cluster-wide conclusion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Every pool's need fits its subnet and the supernet held every carve.
    pub fits: bool,
    /// The worst pool status, with the pool it belongs to.
    pub worst: Option<(Level, String)>,
    pub total_need: u64,
    /// A line per pool that does not fit or is at 70 % or more, in pool order (the pools'
    /// warnings stay with the pools).
    pub findings: Vec<String>,
}

/// `plan pods` over every pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterPlan {
    pub pools: Vec<PoolPlan>,
    pub carving: Option<Carving>,
    pub verdict: Verdict,
}

/// Plans every pool, carves the supernet, and concludes. `Err` is the first pool that cannot be
/// planned, as (its index, the input key, what is wrong).
pub fn plan_cluster(
    pools: &[PoolInput],
    supernet: Option<Ipv4Net>,
) -> Result<ClusterPlan, (usize, &'static str, String)> {
    let plans = pools
        .iter()
        .enumerate()
        .map(|(i, p)| plan_pool(p).map_err(|(k, m)| (i, k, m)))
        .collect::<Result<Vec<_>, _>>()?;
    let carving = supernet.map(|s| carve(s, &plans));
    let verdict = verdict(&plans, carving.as_ref());
    Ok(ClusterPlan {
        pools: plans,
        carving,
        verdict,
    })
}

/// Carves each pool's subnets (zones × its dedicated or recommended size, or the size it gave
/// as `/N`) out of `supernet`, largest first, each at the lowest free aligned address, around
/// the subnets pools gave as CIDRs. Largest-first keeps the supernet unfragmented.
fn carve(supernet: Ipv4Net, plans: &[PoolPlan]) -> Carving {
    let mut taken: Vec<Ipv4Net> = plans
        .iter()
        .filter_map(|p| match p.subnet.as_ref().map(|s| s.subnet) {
            Some(SubnetSpec::Cidr(n)) => Some(n),
            _ => None,
        })
        .collect();
    // (prefix length, pool index): what each pool still needs carved.
    let mut wanted: Vec<(u8, usize)> = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        let len = match p.subnet.as_ref().map(|s| s.subnet) {
            Some(SubnetSpec::Cidr(_)) => continue,
            Some(SubnetSpec::Size(len)) => Some(len),
            None => p
                .dedicated
                .as_ref()
                .map(|d| d.block.prefix_len)
                .or(p.demand.as_ref().map(|d| d.recommended.prefix_len)),
        };
        if let Some(len) = len {
            wanted.extend(std::iter::repeat_n((len, i), p.zones as usize));
        }
    }
    wanted.sort();
    let mut carved: Vec<Carved> = plans
        .iter()
        .map(|p| Carved {
            pool: p.name.clone(),
            subnets: Vec::new(),
            missing: 0,
        })
        .collect();
    for (len, i) in wanted {
        match lowest_free(supernet, len, &taken) {
            Some(n) => {
                taken.push(n);
                carved[i].subnets.push(n);
            }
            None => carved[i].missing += 1,
        }
    }
    for c in &mut carved {
        c.subnets.sort();
    }
    let used = taken
        .iter()
        .filter(|n| supernet.contains(*n))
        .map(|n| 1u64 << (32 - u32::from(n.prefix_len())))
        .sum();
    Carving {
        supernet,
        pools: carved
            .into_iter()
            .filter(|c| !c.subnets.is_empty() || c.missing > 0)
            .collect(),
        used,
        addresses: 1u64 << (32 - u32::from(supernet.prefix_len())),
    }
}

/// The lowest `/len` of `supernet` that overlaps nothing in `taken`. The lowest free aligned
/// block starts at the supernet's start or right after a taken block (aligned up), so only
/// those candidates are tried.
fn lowest_free(supernet: Ipv4Net, len: u8, taken: &[Ipv4Net]) -> Option<Ipv4Net> {
    if len < supernet.prefix_len() || len > 32 {
        return None;
    }
    let size = 1u64 << (32 - u32::from(len));
    let start = u64::from(u32::from(supernet.network()));
    let end = start + (1u64 << (32 - u32::from(supernet.prefix_len())));
    let mut candidates: Vec<u64> = std::iter::once(start)
        .chain(taken.iter().map(|t| {
            let t_end = u64::from(u32::from(t.network())) + (1u64 << (32 - u32::from(t.prefix_len())));
            t_end.div_ceil(size) * size
        }))
        .filter(|c| *c >= start && c + size <= end)
        .collect();
    candidates.sort_unstable();
    candidates.into_iter().find_map(|c| {
        let net = Ipv4Net::new(std::net::Ipv4Addr::from(u32::try_from(c).ok()?), len).ok()?;
        let free = !taken.iter().any(|t| t.contains(&net) || net.contains(t));
        free.then_some(net)
    })
}

fn verdict(plans: &[PoolPlan], carving: Option<&Carving>) -> Verdict {
    let mut findings = Vec::new();
    let mut fits = true;
    for p in plans {
        if let (Some(s), Some(d)) = (&p.subnet, &p.demand) {
            if s.fits == Some(false) {
                fits = false;
                findings.push(format!(
                    "{}: needs {} addresses at {} nodes, {} holds {} (room for {} nodes with the buffer)",
                    p.name,
                    d.need,
                    p.nodes.unwrap_or(0),
                    s.subnet,
                    s.block.usable,
                    s.max_nodes_buffered.unwrap_or(0)
                ));
            }
        }
        if let Some(st) = &p.status {
            if st.level >= Level::Watch || st.autoscaler_guard {
                findings.push(format!(
                    "{}: {} {}.{}% of {} usable ({})",
                    p.name,
                    st.level,
                    st.permille / 10,
                    st.permille % 10,
                    st.usable,
                    st.basis
                ));
            }
            if st.level == Level::Exhausted {
                fits = false;
            }
        }
    }
    if let Some(c) = carving {
        for cp in c.pools.iter().filter(|cp| cp.missing > 0) {
            fits = false;
            findings.push(format!(
                "{}: {} of its subnets do not fit in what is left of {}",
                cp.pool, cp.missing, c.supernet
            ));
        }
    }
    let worst = plans
        .iter()
        .filter_map(|p| p.status.as_ref().map(|s| (s.level, p.name.clone())))
        .fold(None, |acc: Option<(Level, String)>, (l, n)| match acc {
            Some((al, an)) if al >= l => Some((al, an)),
            _ => Some((l, n)),
        });
    Verdict {
        fits,
        worst,
        total_need: plans
            .iter()
            .filter_map(|p| p.demand.as_ref().map(|d| d.need * u64::from(p.zones)))
            .sum(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Ipv4Net {
        s.parse().unwrap()
    }

    #[test]
    fn carving_takes_the_lowest_free_aligned_block() {
        let sup = net("10.20.0.0/16");
        assert_eq!(lowest_free(sup, 21, &[]), Some(net("10.20.0.0/21")));
        assert_eq!(lowest_free(sup, 21, &[net("10.20.0.0/24")]), Some(net("10.20.8.0/21")));
        assert_eq!(
            lowest_free(sup, 24, &[net("10.20.0.0/21"), net("10.20.8.0/24")]),
            Some(net("10.20.9.0/24"))
        );
        assert_eq!(lowest_free(net("10.20.0.0/24"), 23, &[]), None);
        assert_eq!(lowest_free(net("10.20.0.0/24"), 24, &[net("10.20.0.0/25")]), None);
    }
}
