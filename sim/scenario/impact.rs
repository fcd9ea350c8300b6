//! A step's impact beyond its routes: which BGP sessions and OSPF adjacencies went down or
//! came up (with the speaker's own reason), and the reachability matrix between every host and
//! pod — the pairs the step broke, each with the decision chain that drops it, and the pairs it
//! healed. Forwarding loops and blackholes met on the way are findings.
//!
//! The matrix's verdict for each ordered pair is what one ICMP echo through the data plane
//! walker (the same walk `ping` and `explain` use) gets, so it is what `ping` would print. A
//! pair is walked only when `dataplane::fate` cannot prove that every ECMP branch answers:
//! in a healthy fabric none is, and 16.7 M pairs cost little more than their count.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use serde::Serialize;

use super::explain::explain_probe;
use super::run::{describe_probe, resolve_target};
use crate::dataplane::{probe, Decisions, Fates, Probe, ProbeKind, ProbeOutcome};
use crate::engine::state::{DevState, NbrState};
use crate::engine::{BgpSessionView, BgpState, State};
use crate::model::{AddrConfig, DeviceId, DeviceKind, IfId, Network};

/// Something a ping can start from and be sent to: a host (by its first address) or a running
/// pod (by its /32).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Endpoint {
    /// The device name, or `NAMESPACE/NAME` for a pod.
    pub name: String,
    pub addr: Ipv4Addr,
    #[serde(skip)]
    pub device: DeviceId,
}

impl Endpoint {
    fn key(&self) -> (&str, Ipv4Addr) {
        (&self.name, self.addr)
    }
}

/// Every host and running pod of the network, hosts in topology order, then pods by
/// namespace and name.
pub fn endpoints(net: &Network, st: &State) -> Vec<Endpoint> {
    let cluster = net.cluster.as_deref();
    let pod_devices = net.pod_devices();
    let mut out: Vec<Endpoint> = net
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (DeviceId(i as u32), d))
        .filter(|(id, d)| d.kind == DeviceKind::Linux && !pod_devices.contains(id))
        .filter_map(|(id, d)| {
            // A host that is off keeps the address it is configured with: pairs towards it
            // break rather than vanish.
            let addr = resolve_target(net, st, &d.name).or_else(|| {
                d.ifaces
                    .iter()
                    .map(|i| net.iface(*i))
                    .filter(|i| i.name != "lo" && i.tunnel.is_none())
                    .find_map(|i| match i.addr {
                        AddrConfig::Static(a) => Some(a.addr()),
                        _ => None,
                    })
            })?;
            Some(Endpoint {
                name: d.name.clone(),
                addr,
                device: id,
            })
        })
        .collect();
    if let Some(c) = cluster {
        let mut pods: Vec<Endpoint> = c
            .pods
            .iter()
            .filter(|p| p.phase == crate::k8s::PodPhase::Running && !p.host_network)
            .filter_map(|p| {
                let ns = c.netns.get(&(p.namespace.clone(), p.name.clone()))?;
                Some(Endpoint {
                    name: format!("{}/{}", p.namespace, p.name),
                    addr: p.ip?,
                    device: ns.device,
                })
            })
            .collect();
        pods.sort();
        out.extend(pods);
    }
    out
}

/// Endpoints beyond which a step's matrix is not computed unless the scenario raises
/// `limits: reach_endpoints` (1,000 endpoints is a million echoes a step).
pub const DEFAULT_REACH_ENDPOINTS: usize = 1000;

/// Endpoints from which a matrix is proven on every core.
const PARALLEL_ENDPOINTS: usize = 512;

/// Who reaches whom: one echo per ordered pair of endpoints.
pub struct ReachMatrix {
    pub endpoints: Vec<Endpoint>,
    /// Row-major, `from * n + to`; the diagonal is true.
    reached: Vec<bool>,
    /// Forwarding loops and blackholes the echoes ran into, one line per distinct cause.
    pub findings: Vec<String>,
    /// The pairs walked one by one, with their own flow hash (the others were answered on
    /// every ECMP branch: `dataplane::fate`).
    pub walked: usize,
}

impl ReachMatrix {
    /// The matrix, or how many endpoints there are when they exceed `limit`.
    pub fn within(net: &Network, st: &State, limit: usize) -> Result<ReachMatrix, usize> {
        let endpoints = endpoints(net, st);
        if endpoints.len() > limit {
            return Err(endpoints.len());
        }
        Ok(ReachMatrix::of(net, st, endpoints))
    }

    pub fn compute(net: &Network, st: &State) -> ReachMatrix {
        ReachMatrix::of(net, st, endpoints(net, st))
    }

    /// The reference the grouped matrix must equal: every ordered pair walked with its own
    /// flow hash, nothing proven for groups (what `compute` did before `dataplane::fate`).
    pub fn per_pair(net: &Network, st: &State) -> ReachMatrix {
        ReachMatrix::walking(net, st, endpoints(net, st), 1, || |_: &Endpoint, _: &Endpoint| false)
    }

    /// Pairs answered on every ECMP branch (`Fates`) are not walked; a large matrix's are
    /// proven on every core, the workers sharing the devices' decisions (`Decisions`). A lab's
    /// steps have tens of endpoints: there, threads would cost more than they save.
    fn of(net: &Network, st: &State, endpoints: Vec<Endpoint>) -> ReachMatrix {
        let workers = if endpoints.len() < PARALLEL_ENDPOINTS {
            1
        } else {
            std::thread::available_parallelism().map_or(1, usize::from)
        };
        ReachMatrix::proven_on(net, st, endpoints, workers)
    }

    /// `compute` with `workers` threads proving pairs, whatever the size: the matrix does not
    /// depend on how many.
    pub fn on_workers(net: &Network, st: &State, workers: usize) -> ReachMatrix {
        ReachMatrix::proven_on(net, st, endpoints(net, st), workers)
    }

    fn proven_on(net: &Network, st: &State, endpoints: Vec<Endpoint>, workers: usize) -> ReachMatrix {
        let decisions = Decisions::new(net, st, endpoints.iter().map(|e| e.addr));
        let prover = || {
            let mut fates = Fates::new(&decisions);
            move |from: &Endpoint, to: &Endpoint| fates.echo_answered(from.device, to.addr)
        };
        ReachMatrix::walking(net, st, endpoints, workers, prover)
    }

    /// One echo walked for every ordered pair the prover (`answered_everywhere`, one per
    /// worker) does not prove. Proven pairs answer and meet no loop or blackhole
    /// (`dataplane::fate` says why), so skipping them leaves the findings as the walks make
    /// them: the unproven pairs are walked afterwards, on one thread, in pair order.
    ///
    /// Pairs are proven a tile of sources at a time, destination by destination: the answer's
    /// half of a pair is decided at the destination for each source's address, and a tile
    /// reads each destination's memo at neighbouring addresses together (row by row, every
    /// pair met a cache miss there). A tile is 32 sources: what each source reads for every
    /// destination (its table, its node's, their hand-offs) stays in the L1 cache; at 64 it
    /// did not, and `reach_all_pairs/16x256x16` took 14% longer. Tiles are dealt to the
    /// workers in turn, so that each gets
    /// hosts and pods alike (pods' pairs cost more: their node hands on or masquerades). Every
    /// worker's `Fates` is a pure function of the network and state, memoised, so a pair's
    /// verdict is the same whichever worker proves it.
    fn walking<F>(
        net: &Network,
        st: &State,
        endpoints: Vec<Endpoint>,
        workers: usize,
        prover: impl Fn() -> F + Sync,
    ) -> ReachMatrix
    where
        F: FnMut(&Endpoint, &Endpoint) -> bool,
    {
        const TILE: usize = 32;
        let n = endpoints.len();
        // Proven pairs first; then each walked pair's own verdict. The diagonal is true.
        let mut reached = vec![false; n * n];
        let workers = workers.max(1);
        let mut shares: Vec<Vec<(usize, &mut [bool])>> = (0..workers).map(|_| Vec::new()).collect();
        // No endpoints, no rows (a chunk size must not be 0).
        for (k, rows) in reached.chunks_mut(TILE * n.max(1)).enumerate() {
            shares[k % workers].push((k * TILE, rows));
        }
        let prove = |share: Vec<(usize, &mut [bool])>| {
            let mut answered_everywhere = prover();
            for (first, rows) in share {
                for (j, to) in endpoints.iter().enumerate() {
                    for (i, from) in endpoints[first..].iter().enumerate().take(rows.len() / n) {
                        rows[i * n + j] = first + i == j || answered_everywhere(from, to);
                    }
                }
            }
        };
        if workers == 1 {
            shares.into_iter().for_each(prove);
        } else {
            std::thread::scope(|s| {
                for share in shares {
                    s.spawn(|| prove(share));
                }
            });
        }
        let mut causes = Causes::default();
        let mut walked = 0;
        for (i, from) in endpoints.iter().enumerate() {
            for (j, to) in endpoints.iter().enumerate() {
                if reached[i * n + j] {
                    continue;
                }
                walked += 1;
                let p = echo(net, st, from, to);
                reached[i * n + j] = answered(&p, to.addr);
                causes.note(net, &p, from, to);
            }
        }
        let mut findings = causes.findings(net);
        findings.extend(cluster_findings(net, st));
        ReachMatrix {
            endpoints,
            reached,
            findings,
            walked,
        }
    }

    pub fn reached(&self, from: usize, to: usize) -> bool {
        self.reached[from * self.endpoints.len() + to]
    }

    /// Each endpoint's index by its name and address (how a step's endpoints are matched with
    /// the previous step's).
    fn by_key(&self) -> BTreeMap<(&str, Ipv4Addr), usize> {
        self.endpoints.iter().enumerate().map(|(i, e)| (e.key(), i)).collect()
    }

    /// Whether `from` reaches each endpoint, in endpoint order (itself included: true).
    fn row(&self, from: usize) -> &[bool] {
        let n = self.endpoints.len();
        &self.reached[from * n..(from + 1) * n]
    }

    /// Ordered pairs of distinct endpoints, and how many of them reach.
    pub fn count(&self) -> (usize, usize) {
        let n = self.endpoints.len();
        let pairs = n * n.saturating_sub(1);
        let ok = self.reached.iter().filter(|r| **r).count() - n;
        (ok, pairs)
    }
}

/// What the cluster's state means for the runbook, whether or not a matrix is computed: the
/// apiserver's repair loop warns about each Service left outside the service range; the
/// control plane's flags may disagree with each other and with kubeadm-config; a node
/// registered again may keep its old CNI state; pods may be stuck without an address from the
/// CNI; pods whose nameserver does not answer, kubelets whose clusterDNS is not kube-dns, pods
/// kube-proxy masquerades; the pod address plan (overlapping podCIDRs, pods outside their
/// node's podCIDR, node IPAM's bitmap and capacity), the etcd rollback path
/// (k8s-cidr-migrations.md §5 C1, C7-C9, C14), ranges over external networks, and drains that
/// do not finish: pods Terminating past their grace period, drains fabsim stopped, `--force`
/// (C19).
pub fn cluster_findings(net: &Network, st: &State) -> Vec<String> {
    let Some(cluster) = net.cluster.as_deref() else {
        return Vec::new();
    };
    let mut findings = cluster.out_of_range_services();
    findings.extend(cluster.control_plane_findings());
    findings.extend(cluster.kubernetes_service_findings());
    findings.extend(cluster.kept_cni_state());
    findings.extend(cluster.flannel_findings());
    findings.extend(cluster.cilium_findings());
    findings.extend(cluster.stuck_sandboxes());
    findings.extend(crate::k8s::dns_findings(net, st));
    findings.extend(crate::k8s::service_findings(net, st));
    findings.extend(cluster.cluster_dns_findings());
    findings.extend(cluster.max_pods_findings());
    findings.extend(cluster.rejected_findings());
    findings.extend(crate::k8s::wrong_source_findings(net));
    findings.extend(cluster.address_plan_findings());
    findings.extend(cluster.rollback_findings());
    findings.extend(cluster.restore_findings());
    findings.extend(cluster.external_overlaps(net));
    findings.extend(cluster.terminating_findings(st.time_ms));
    findings.extend(cluster.drain_findings());
    findings
}

fn echo(net: &Network, st: &State, from: &Endpoint, to: &Endpoint) -> Probe {
    probe(
        net,
        st,
        from.device,
        to.addr,
        net.device(from.device).profile.ttl,
        ProbeKind::Echo,
        1,
    )
}

fn answered(p: &Probe, addr: Ipv4Addr) -> bool {
    matches!(p.outcome, ProbeOutcome::Reply { from, .. } if from == addr)
}

/// One pair whose verdict the step changed.
#[derive(Clone, Debug, Serialize)]
pub struct PairChange {
    pub from: String,
    pub to: String,
    pub addr: Ipv4Addr,
    /// What `ping` sees now (`From 10.2.22.0 … Destination Net Unreachable` in words).
    pub result: String,
    /// For a broken pair: the request's path, one decision per hop, ending where it died.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

/// What the step did to reachability between hosts and pods.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReachDelta {
    /// Ordered pairs that reach after the step, out of all pairs.
    pub reachable: usize,
    pub pairs: usize,
    pub broke: Vec<PairChange>,
    pub healed: Vec<PairChange>,
    /// Endpoints that exist only after (a new pod, a new address) or only before the step.
    pub appeared: Vec<String>,
    pub gone: Vec<String>,
    /// The first matrix only: the pairs that do not answer, each explained.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<PairChange>,
    /// The whole matrix after the step, per endpoint or per rack (for the heat map).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<ReachGrid>,
}

/// Endpoints up to which the grid keeps one row per endpoint; beyond, one row per rack.
pub const GRID_ENDPOINTS: usize = 24;

/// Where endpoints without a rack (a host not cabled to a leaf) are counted.
const NO_RACK: &str = "(no rack)";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GridBy {
    Endpoint,
    Rack,
}

/// The reachability matrix in a size a page can show: per endpoint in a small fabric, per rack
/// (the leaf an endpoint's host is cabled to) beyond [`GRID_ENDPOINTS`].
#[derive(Clone, Debug, Serialize)]
pub struct ReachGrid {
    pub by: GridBy,
    pub labels: Vec<String>,
    /// `answered[i][j]` of the `pairs[i][j]` ordered pairs from group i to group j answer.
    pub answered: Vec<Vec<usize>>,
    pub pairs: Vec<Vec<usize>>,
}

impl ReachGrid {
    pub fn of(m: &ReachMatrix, racks: &BTreeMap<DeviceId, String>) -> ReachGrid {
        let by = if m.endpoints.len() <= GRID_ENDPOINTS {
            GridBy::Endpoint
        } else {
            GridBy::Rack
        };
        let group_of: Vec<String> = m
            .endpoints
            .iter()
            .map(|e| match by {
                GridBy::Endpoint => e.name.clone(),
                GridBy::Rack => racks.get(&e.device).cloned().unwrap_or_else(|| NO_RACK.to_string()),
            })
            .collect();
        // Groups in the order their first endpoint comes (hosts in topology order first).
        let mut labels: Vec<String> = Vec::new();
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut group = Vec::with_capacity(group_of.len());
        for g in &group_of {
            let next = labels.len();
            let i = *index.entry(g.as_str()).or_insert(next);
            if i == next {
                labels.push(g.clone());
            }
            group.push(i);
        }
        // Counted on flat k×k rows: one pass over the matrix, row by row. A pair count is
        // the product of the two groups' sizes (less the diagonal within a group), and the
        // diagonal's `reached` (always true) is taken back out of the answers.
        let k = labels.len();
        let mut size = vec![0; k];
        for g in &group {
            size[*g] += 1;
        }
        let mut answered = vec![0; k * k];
        for (i, gi) in group.iter().enumerate() {
            let counts = &mut answered[gi * k..(gi + 1) * k];
            for (gj, reached) in group.iter().zip(m.row(i)) {
                counts[*gj] += usize::from(*reached);
            }
            counts[*gi] -= 1;
        }
        let pairs = (0..k)
            .map(|a| {
                (0..k)
                    .map(|b| size[a] * size[b] - if a == b { size[a] } else { 0 })
                    .collect()
            })
            .collect();
        let answered = answered.chunks(k.max(1)).map(<[usize]>::to_vec).collect();
        ReachGrid {
            by,
            labels,
            answered,
            pairs,
        }
    }
}

impl ReachDelta {
    /// The first matrix: nothing to compare with; the pairs that do not answer, explained.
    pub fn baseline(m: &ReachMatrix, net: &Network, st: &State) -> ReachDelta {
        let mut d = ReachDelta::counts(m);
        let n = m.endpoints.len();
        for i in 0..n {
            for j in (0..n).filter(|j| *j != i && !m.reached(i, *j)) {
                d.unreachable
                    .push(pair_change(net, st, &m.endpoints[i], &m.endpoints[j], false));
            }
        }
        d
    }

    fn counts(m: &ReachMatrix) -> ReachDelta {
        let (reachable, pairs) = m.count();
        ReachDelta {
            reachable,
            pairs,
            ..ReachDelta::default()
        }
    }

    /// Pairs present before and after whose verdict changed. Broken pairs are probed again to
    /// explain them from the state after the step.
    pub fn between(before: &ReachMatrix, after: &ReachMatrix, net: &Network, st: &State) -> ReachDelta {
        // Endpoints are matched by name and address once per step, not once per pair (16.8 M
        // pairs on 16x256x16): `was[i]` is after's endpoint i's index before the step.
        let key = Endpoint::key;
        let (old, new) = (before.by_key(), after.by_key());
        let was: Vec<Option<usize>> = after.endpoints.iter().map(|e| old.get(&key(e)).copied()).collect();
        let label = |e: &Endpoint| format!("{} ({})", e.name, e.addr);
        let mut d = ReachDelta::counts(after);
        d.appeared = after
            .endpoints
            .iter()
            .zip(&was)
            .filter(|(_, w)| w.is_none())
            .map(|(e, _)| label(e))
            .collect();
        d.gone = before
            .endpoints
            .iter()
            .filter(|e| !new.contains_key(&key(e)))
            .map(label)
            .collect();
        for (i, from) in after.endpoints.iter().enumerate() {
            let Some(bi) = was[i] else { continue };
            let (row_before, row_after) = (before.row(bi), after.row(i));
            for (j, (bj, is)) in was.iter().zip(row_after).enumerate().filter(|(j, _)| *j != i) {
                let Some(bj) = *bj else { continue };
                if row_before[bj] == *is {
                    continue;
                }
                let change = pair_change(net, st, from, &after.endpoints[j], *is);
                if *is {
                    d.healed.push(change);
                } else {
                    d.broke.push(change);
                }
            }
        }
        d
    }
}

/// A pair as `ping` sees it now; a pair that does not answer comes with its decision chain.
fn pair_change(net: &Network, st: &State, from: &Endpoint, to: &Endpoint, answers: bool) -> PairChange {
    let p = echo(net, st, from, to);
    PairChange {
        from: from.name.clone(),
        to: to.name.clone(),
        addr: to.addr,
        result: describe_probe(net, &p),
        why: if answers {
            Vec::new()
        } else {
            explain_probe(net, st, &p, to.addr).hops
        },
    }
}

/// A BGP session or OSPF adjacency whose state the step changed.
#[derive(Clone, Debug, Serialize)]
pub struct PeerChange {
    pub device: String,
    /// `BGP 10.0.11.1` / `BGP Mesh_10_0_11_1 (10.0.11.1)` / `OSPF 10.0.0.1 on Ethernet1`.
    pub peer: String,
    pub before: String,
    pub after: String,
    /// The speaker's own reason (BIRD/EOS last error), when it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Sessions and adjacencies that went down, came up, or went down and came back (their
/// `since` moved although the state is the same). States are compared as values; only the
/// changes are put into words.
pub fn peer_changes(net: &Network, before: &State, after: &State) -> Vec<PeerChange> {
    let mut out = Vec::new();
    for (i, dev) in net.devices.iter().enumerate() {
        let (b, a) = (before.devices.get(i), after.devices.get(i));
        let (old, new) = (bgp_sessions(b), bgp_sessions(a));
        let keys: std::collections::BTreeSet<_> = old.keys().chain(new.keys()).copied().collect();
        for k in keys {
            let (o, n) = (old.get(&k).copied(), new.get(&k).copied());
            let flapped = matches!((o, n), (Some(o), Some(n)) if o.state == BgpState::Established
                && n.state == BgpState::Established && n.since_ms != o.since_ms);
            if o.map(|s| s.state) == n.map(|s| s.state) && !flapped {
                continue;
            }
            let state =
                |s: Option<&BgpSessionView>| s.map_or("not configured".to_string(), |s| format!("{:?}", s.state));
            let after = if flapped {
                let since = super::fmt_ms(n.map_or(0, |s| s.since_ms));
                format!("Established again (went down during the step; up since t={since})")
            } else {
                state(n)
            };
            out.push(PeerChange {
                device: dev.name.clone(),
                peer: session_label(k.0, k.1),
                before: state(o),
                after,
                reason: n
                    .filter(|s| s.state != BgpState::Established)
                    .and_then(|s| s.last_error.clone()),
            });
        }
        let (old, new) = (ospf_neighbors(b), ospf_neighbors(a));
        let keys: std::collections::BTreeSet<_> = old.keys().chain(new.keys()).copied().collect();
        for k in keys {
            // An adjacency that does not exist reads as Down, as `show ip ospf neighbor` has it.
            let state = |s: Option<&NbrState>| s.copied().unwrap_or(NbrState::Down);
            let (o, n) = (state(old.get(&k)), state(new.get(&k)));
            if o == n {
                continue;
            }
            out.push(PeerChange {
                device: dev.name.clone(),
                peer: format!("OSPF {} on {}", k.0, net.iface(k.1).name),
                before: format!("{o:?}"),
                after: format!("{n:?}"),
                reason: None,
            });
        }
    }
    out
}

/// A BGP session as the report names it: `BGP 10.0.11.1`, or with BIRD's protocol name.
pub fn session_label(name: Option<&str>, neighbor: Ipv4Addr) -> String {
    match name {
        Some(name) => format!("BGP {name} ({neighbor})"),
        None => format!("BGP {neighbor}"),
    }
}

type SessionKey<'a> = (Option<&'a str>, Ipv4Addr);

fn bgp_sessions(d: Option<&DevState>) -> BTreeMap<SessionKey<'_>, &BgpSessionView> {
    d.and_then(|d| d.bgp.as_ref())
        .map(|v| {
            v.sessions
                .iter()
                .map(|s| ((s.name.as_deref(), s.neighbor), s))
                .collect()
        })
        .unwrap_or_default()
}

fn ospf_neighbors(d: Option<&DevState>) -> BTreeMap<(Ipv4Addr, IfId), NbrState> {
    d.and_then(|d| d.ospf.as_ref())
        .map(|v| v.neighbors.iter().map(|n| ((n.router_id, n.iface), n.state)).collect())
        .unwrap_or_default()
}

/// Forwarding loops and blackholes met by the matrix's echoes (a blackhole names the sources
/// whose pings it eats).
#[derive(Default)]
struct Causes {
    loops: std::collections::BTreeSet<String>,
    blackholes: BTreeMap<(DeviceId, Ipv4Addr, String), Vec<String>>,
}

impl Causes {
    fn note(&mut self, net: &Network, p: &Probe, from: &Endpoint, to: &Endpoint) {
        if let Some(cycle) = &p.forwarding_loop {
            let names: Vec<&str> = cycle.iter().map(|d| net.device(*d).name.as_str()).collect();
            self.loops
                .insert(format!("forwarding loop {} (towards {})", names.join(" -> "), to.addr));
        }
        for hop in &p.forward {
            if let Some(l) = hop.route.filter(|l| l.blackhole) {
                let key = (hop.device, to.addr, l.prefix.to_string());
                self.blackholes.entry(key).or_default().push(from.name.clone());
            }
        }
    }

    fn findings(self, net: &Network) -> Vec<String> {
        let holes = self.blackholes.into_iter().map(|((dev, dst, prefix), from)| {
            format!(
                "blackhole: {} drops packets to {dst} by {prefix} (from {})",
                net.device(dev).name,
                from.join(", ")
            )
        });
        self.loops.into_iter().chain(holes).collect()
    }
}
