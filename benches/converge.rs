//! Criterion benchmarks: convergence of the bundled seed lab, full scenario replays (underlay
//! and BGP stages), and a ping over a converged state. Results and the machine go in BENCHMARKS.md.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use fabsim::dataplane::{probe, ProbeKind};
use fabsim::engine::converge;
use fabsim::scenario;

fn seed_lab(c: &mut Criterion) {
    let topo = scenario::open(Path::new("topologies/seed-lab.yaml")).expect("topology");
    c.bench_function("converge seed-lab topology", |b| b.iter(|| converge(topo.net.clone())));

    let scn = scenario::open(Path::new("scenarios/seed-lab.yaml")).expect("scenario");
    c.bench_function("replay seed-lab scenario", |b| {
        b.iter(|| scenario::run(&scn, None).expect("run"))
    });

    let bgp = scenario::open(Path::new("scenarios/seed-lab-bgp.yaml")).expect("scenario");
    c.bench_function("replay seed-lab-bgp scenario (s2b-s6)", |b| {
        b.iter(|| scenario::run(&bgp, None).expect("run"))
    });

    let (engine, _) = converge(topo.net.clone());
    let net = engine.network();
    let from = net.device_by_name("k-w3").expect("k-w3");
    let dst = "10.0.11.1".parse().expect("addr");
    c.bench_function("ping k-w3 -> k-master (one probe)", |b| {
        b.iter(|| probe(net, engine.state(), from, dst, 64, ProbeKind::Echo, 1))
    });
}

criterion_group!(benches, seed_lab);
criterion_main!(benches);
