//! Criterion benchmarks: convergence of the bundled seed lab, full scenario replays (the seed
//! lab's whole runbook, `seed_lab_replay`; the BGP stages), a ping over a converged state, and
//! Calico's IPAM and confd at a scale the lab does not reach; generated leaf-spine fabrics
//! (`fabsim gen leaf-spine`, OSPF or eBGP underlay, Calico peering with the ToR, one pod per
//! node) from topology
//! text to converged FIBs on every device (`converge/…`), the all-pairs reachability matrix
//! after convergence (`reach_all_pairs/…`) and a spine-leaf link failure re-converged
//! (`step_delta/…`), the same three on the 16x256x16 fabric, and its eBGP convergence where the
//! machine has the memory (`large`). Peak memory of the same
//! workloads: `peak_memory.rs`. Results and the machine go in BENCHMARKS.md.
//!
//! What a workload returns (a converged engine, a replayed run) is dropped outside the
//! measurement: freeing a large fabric's tables is not part of converging it (it was ~5% of
//! `converge/ebgp-4x32x16`).

mod common;

use std::cell::OnceCell;
use std::net::Ipv4Addr;
use std::path::Path;

use common::{
    fabric, fabric_id, fail_spine_leaf_link, large_ebgp_fits, load_and_converge, reach_all_pairs, FABRICS, LARGE,
};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, SamplingMode};
use fabsim::calico::confd;
use fabsim::calico::datastore::Node;
use fabsim::calico::install::Calico;
use fabsim::dataplane::{probe, ProbeKind};
use fabsim::engine::converge;
use fabsim::gen::Underlay;
use fabsim::scenario;

fn seed_lab(c: &mut Criterion) {
    let topo = scenario::open(Path::new("topologies/seed-lab.yaml")).expect("topology");
    c.bench_function("converge seed-lab topology", |b| {
        b.iter_with_large_drop(|| converge(topo.net.clone()))
    });

    let scn = scenario::open(Path::new("scenarios/seed-lab.yaml")).expect("scenario");
    // The whole runbook: 46 steps, each converged, with every check, route diff and matrix.
    c.bench_function("seed_lab_replay", |b| {
        b.iter_with_large_drop(|| scenario::run(&scn, None).expect("run"))
    });

    let bgp = scenario::open(Path::new("scenarios/seed-lab-bgp.yaml")).expect("scenario");
    c.bench_function("replay seed-lab-bgp scenario (s2b-s6)", |b| {
        b.iter_with_large_drop(|| scenario::run(&bgp, None).expect("run"))
    });

    let (engine, _) = converge(topo.net.clone());
    let net = engine.network();
    let from = net.device_by_name("k-w3").expect("k-w3");
    let dst = "10.0.11.1".parse().expect("addr");
    c.bench_function("ping k-w3 -> k-master (one probe)", |b| {
        b.iter(|| probe(net, engine.state(), from, dst, 64, ProbeKind::Echo, 1))
    });
}

const POOL: &str = "apiVersion: crd.projectcalico.org/v1\nkind: IPPool\nmetadata:\n  name: pods\nspec:\n  cidr: 10.64.0.0/10\n  blockSize: 26\n  ipipMode: Always\n";

/// Calico with the pool applied and `n` Nodes (each with a BGP address), as calico-node leaves
/// the datastore before any pod exists.
fn calico_with_nodes(n: u32) -> Calico {
    let mut calico = Calico::new("v3.25.0", Default::default());
    calico.apply_yaml(POOL, "pool.yaml", 0).expect("pool");
    for i in 0..n {
        let name = format!("node-{i}");
        let addr = Ipv4Addr::from(u32::from(Ipv4Addr::new(10, 0, 0, 0)) + i + 1);
        calico.datastore.nodes.insert(
            name.clone(),
            Node {
                name,
                ipv4_address: Some(ipnet::Ipv4Net::new(addr, 16).expect("net")),
                ..Node::default()
            },
        );
    }
    calico
}

fn calico(c: &mut Criterion) {
    // The CNI path alone: every AutoAssign claims or finds the node's block and keeps the
    // BlockAffinities in step (the engine, views and confd are not involved).
    let (nodes, pods) = (1000, 8);
    c.bench_function("calico assign 1000 nodes x 8 pods", |b| {
        b.iter_batched(
            || calico_with_nodes(0),
            |mut calico| {
                for n in 0..nodes {
                    let node = format!("node-{n}");
                    for p in 0..pods {
                        calico
                            .assign(&node, &format!("k8s-pod-network.{n}-{p}"), 0)
                            .expect("assign");
                    }
                }
                calico
            },
            BatchSize::LargeInput,
        )
    });

    // confd for one node of a 100-node full mesh, each node with its tunnel address's block.
    let mut mesh = calico_with_nodes(100);
    for n in 0..100 {
        let node = format!("node-{n}");
        let tunnel = mesh
            .assign(&node, &format!("ipip-tunnel-addr-{node}"), 0)
            .expect("tunnel");
        if let Some(entry) = mesh.datastore.nodes.get_mut(&node) {
            entry.ipv4_ipip_tunnel_addr = Some(tunnel);
        }
    }
    let peers = confd::render(&mesh.datastore, "node-0").expect("render").bird_cfg;
    assert_eq!(peers.matches("protocol bgp Mesh_").count(), 99, "a full mesh");
    c.bench_function("confd render node-0 of a 100-node mesh", |b| {
        b.iter(|| confd::render(&mesh.datastore, "node-0").expect("render"))
    });
}

/// `converge/SxLxN` and `converge/ebgp-SxLxN`: load the generated topology (which builds the
/// cluster) and converge it.
fn generated(c: &mut Criterion) {
    let mut group = c.benchmark_group("converge");
    // A 4x32x16 run takes seconds; criterion's minimum of 10 samples keeps the bench short.
    group.sample_size(10);
    for underlay in [Underlay::Ospf, Underlay::Ebgp] {
        for (s, l, n) in FABRICS {
            let text = fabric(s, l, n, underlay);
            group.bench_function(fabric_id(s, l, n, underlay), |b| {
                b.iter_with_large_drop(|| load_and_converge(&text))
            });
        }
    }
    group.finish();
}

/// `reach_all_pairs/SxLxN`: the host/pod matrix of a converged fabric; `step_delta/SxLxN`: a
/// spine-leaf link cut and the re-convergence after it ([`step_delta`]).
fn after_convergence(c: &mut Criterion) {
    let (s, l, n) = FABRICS[1];
    let id = fabric_id(s, l, n, Underlay::Ospf);
    let text = fabric(s, l, n, Underlay::Ospf);
    let engine = load_and_converge(&text);
    let mut group = c.benchmark_group("reach_all_pairs");
    group.sample_size(10);
    group.bench_function(&id, |b| b.iter(|| reach_all_pairs(&engine)));
    group.finish();
    let mut group = c.benchmark_group("step_delta");
    group.sample_size(10);
    group.bench_function(&id, |b| step_delta(b, &text));
    group.finish();
}

/// A link cut re-converged on an engine converged outside the measurement and dropped after
/// it, as a run has it: its own engine, not a clone (a clone shares the OSPF tables with the
/// original, so the cut would pay for copies no run makes), and the engine's teardown is not
/// part of the step.
fn step_delta(b: &mut criterion::Bencher, text: &str) {
    b.iter_batched(
        || load_and_converge(text),
        |mut e| {
            let c = fail_spine_leaf_link(&mut e);
            (e, c)
        },
        BatchSize::PerIteration,
    )
}

/// The large fabric (targets: converge ≤ 10 s, the matrix ≤ 10 s, a link cut ≤ 10% of
/// a converge): `converge/16x256x16` from topology text, `reach_all_pairs/16x256x16` on a
/// converged engine made when it runs (a filter that skips it does not pay its ~9 s), and
/// `step_delta/16x256x16` on an engine converged afresh for each sample, and
/// `converge/ebgp-16x256x16` where the machine has the memory for it. An iteration takes
/// seconds, so each of criterion's minimum 10 samples is one iteration (flat sampling; linear
/// sampling would run 55).
fn large(c: &mut Criterion) {
    let (s, l, n) = LARGE;
    let id = fabric_id(s, l, n, Underlay::Ospf);
    let text = fabric(s, l, n, Underlay::Ospf);
    let engine = OnceCell::new();
    let converged = || engine.get_or_init(|| load_and_converge(&text));
    flat(c, "converge").bench_function(&id, |b| b.iter_with_large_drop(|| load_and_converge(&text)));
    flat(c, "reach_all_pairs").bench_function(&id, |b| {
        let engine = converged();
        b.iter(|| reach_all_pairs(engine))
    });
    flat(c, "step_delta").bench_function(&id, |b| step_delta(b, &text));
    // The eBGP one: ~3 minutes an iteration, so over half an hour for criterion's 10 samples;
    // the OSPF fabric's converged engine (2 GiB) is freed first.
    drop(engine);
    let ebgp = fabric_id(s, l, n, Underlay::Ebgp);
    match large_ebgp_fits() {
        Ok(()) => {
            flat(c, "converge").bench_function(&ebgp, |b| {
                let text = fabric(s, l, n, Underlay::Ebgp);
                b.iter_with_large_drop(|| load_and_converge(&text))
            });
        }
        Err(why) => eprintln!("converge/{ebgp}: {why}"),
    }
}

/// A group of 10 samples of one iteration each (the group finishes when dropped).
fn flat<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group
}

criterion_group!(benches, seed_lab, calico, generated, after_convergence, large);
criterion_main!(benches);
