//! The grouped reachability matrix (pairs proven answered on every ECMP branch are not walked,
//! `dataplane::fate`) against the per-pair reference (`ReachMatrix::per_pair`, every ordered
//! pair walked with its own flow hash): on generated fabrics with random faults — cut
//! spine-leaf cables, blackholes on one spine (ECMP branches disagree), static forwarding
//! loops, NAT on a leaf, a node powered off, IPIP pods, pods whose node masquerades their
//! requests — both give the same verdict for every pair and the same findings, and the grouped
//! one walks only the pairs it cannot prove.

use fabsim::diag::TextOrigin;
use fabsim::engine::{converge, Engine, PowerLoss};
use fabsim::gen::{Encap, LeafSpine, Underlay};
use fabsim::input::eos::apply_config;
use fabsim::input::topology::parse_topology;
use fabsim::scenario::ReachMatrix;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn converged(fabric: &LeafSpine) -> Engine {
    let loaded = parse_topology(&fabric.generate(), "generated.yaml").unwrap_or_else(|e| panic!("{e}"));
    let (engine, conv) = converge(loaded.net);
    assert!(conv.quiet);
    engine
}

/// EOS configuration lines on `device`, as a scenario's `config:` step applies them.
fn configure(engine: &mut Engine, device: &str, text: &str) {
    let dev = engine.network().device_by_name(device).expect("device");
    let origin = TextOrigin {
        file: "test".into(),
        line: 1,
        col: 1,
    };
    engine
        .reconfigure(|net| apply_config(net, dev, text, &origin))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// node-L-N's address in the generator's plan (10.255.0.0 + 2k + 1, k = (L-1)·N + (N-1)).
fn node_addr(fabric: &LeafSpine, leaf: u32, node: u32) -> String {
    let k = (leaf - 1) * fabric.nodes_per_leaf + (node - 1);
    std::net::Ipv4Addr::from(u32::from(std::net::Ipv4Addr::new(10, 255, 0, 0)) + 2 * k + 1).to_string()
}

/// Both matrices of the engine's state; they must agree pair by pair and on the findings. The
/// grouped one proven on two threads is the grouped one, walks included.
fn compare(engine: &Engine, what: &str) -> (ReachMatrix, ReachMatrix) {
    let (net, st) = (engine.network(), engine.state());
    let grouped = ReachMatrix::compute(net, st);
    let exact = ReachMatrix::per_pair(net, st);
    same(&grouped, &exact, what);
    let n = exact.endpoints.len();
    assert_eq!(exact.walked, n * n.saturating_sub(1), "the reference walks every pair");
    let threaded = ReachMatrix::on_workers(net, st, 2);
    same(&threaded, &grouped, &format!("{what}, two workers"));
    assert_eq!(threaded.walked, grouped.walked, "{what}, two workers");
    (grouped, exact)
}

fn same(m: &ReachMatrix, reference: &ReachMatrix, what: &str) {
    assert_eq!(m.endpoints, reference.endpoints, "{what}");
    let n = reference.endpoints.len();
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                m.reached(i, j),
                reference.reached(i, j),
                "{what}: {} -> {}",
                reference.endpoints[i].name,
                reference.endpoints[j].name
            );
        }
    }
    assert_eq!(m.findings, reference.findings, "{what}");
}

/// Random faults on random generated fabrics (a fixed seed, so failures reproduce).
#[test]
fn grouped_matrix_equals_per_pair_walks_under_random_faults() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let mut pick = |n: u32| rng.next_u32() % n + 1;
    for case in 0..24 {
        let fabric = LeafSpine {
            underlay: if case % 2 == 0 { Underlay::Ospf } else { Underlay::Ebgp },
            // Pods in two cases of three: their nodes masquerade what they send out of the pool.
            pods_per_node: u32::from(case % 3 != 0) * (1 + case % 2),
            encap: if case % 4 == 3 { Encap::Ipip } else { Encap::None },
            ..LeafSpine::new(1 + pick(3), 2 + pick(3), pick(2))
        };
        let mut engine = converged(&fabric);
        compare(&engine, &format!("case {case}, converged"));
        let (s, l, n) = (fabric.spines, fabric.leaves, fabric.nodes_per_leaf);
        let mut faults = Vec::new();
        for _ in 0..1 + pick(3) {
            let (spine, leaf) = (pick(s), pick(l));
            let victim = node_addr(&fabric, pick(l), pick(n));
            match pick(5) {
                1 => {
                    let net = engine.network();
                    let dev = net.device_by_name(&format!("spine-{spine}")).expect("spine");
                    let port = net.iface_by_name(dev, &format!("Ethernet{leaf}")).expect("port");
                    engine.set_severed(&[port], true);
                    faults.push(format!("cut spine-{spine} Ethernet{leaf}"));
                }
                2 => {
                    configure(
                        &mut engine,
                        &format!("spine-{spine}"),
                        &format!("ip route {victim}/32 Null0"),
                    );
                    faults.push(format!("blackhole {victim} on spine-{spine}"));
                }
                3 => {
                    // leaf-L's uplink to spine-S is /31 k = (S-1)·L + (L-1): spine even, leaf odd.
                    let k = (spine - 1) * l + (leaf - 1);
                    let base = u32::from(std::net::Ipv4Addr::new(10, 254, 0, 0)) + 2 * k;
                    let (spine_ip, leaf_ip) = (std::net::Ipv4Addr::from(base), std::net::Ipv4Addr::from(base + 1));
                    configure(
                        &mut engine,
                        &format!("leaf-{leaf}"),
                        &format!("ip route {victim}/32 {spine_ip}"),
                    );
                    configure(
                        &mut engine,
                        &format!("spine-{spine}"),
                        &format!("ip route {victim}/32 {leaf_ip}"),
                    );
                    faults.push(format!("loop leaf-{leaf} <-> spine-{spine} for {victim}"));
                }
                4 => {
                    // One list per fault: a leaf may get two.
                    let acl = format!("NAT{}", faults.len());
                    let nat = format!(
                        "ip access-list {acl}\n   10 permit ip any any\n!\ninterface Ethernet{spine}\n   ip nat source dynamic access-list {acl} overload"
                    );
                    configure(&mut engine, &format!("leaf-{leaf}"), &nat);
                    faults.push(format!("NAT on leaf-{leaf} Ethernet{spine}"));
                }
                _ => {
                    let node = format!("node-{}-{}", pick(l), pick(n));
                    let dev = engine.network().device_by_name(&node).expect("node");
                    engine.power_off(&[dev], PowerLoss::Abrupt);
                    faults.push(format!("{node} off"));
                }
            }
        }
        engine.run_until_quiet();
        compare(&engine, &format!("case {case} ({fabric:?}): {}", faults.join(", ")));
    }
}

/// A healthy fabric is proven without a single walk; a blackhole on one of two spines makes
/// the branches towards its victim disagree, so exactly the pairs whose walks may cross it are
/// walked, and their verdicts (some answer, some do not, by their hash) are the reference's.
#[test]
fn disagreeing_branches_are_walked_and_the_rest_is_proven() {
    let fabric = LeafSpine::new(2, 4, 2);
    let mut engine = converged(&fabric);
    let (grouped, _) = compare(&engine, "healthy");
    // The cluster's coredns pods too: their node masquerades their echoes to hosts.
    assert_eq!(grouped.walked, 0, "{} walked", grouped.walked);
    let victim = node_addr(&fabric, 2, 1);
    configure(&mut engine, "spine-2", &format!("ip route {victim}/32 Null0"));
    engine.run_until_quiet();
    let (grouped, exact) = compare(&engine, "blackhole on spine-2");
    assert!(
        grouped.walked > 0 && grouped.walked < exact.walked,
        "{}",
        grouped.walked
    );
    let to = grouped
        .endpoints
        .iter()
        .position(|e| e.name == "node-2-1")
        .expect("victim");
    let answering = (0..grouped.endpoints.len())
        .filter(|i| *i != to)
        .filter(|i| grouped.reached(*i, to))
        .count();
    assert!(answering > 0 && answering < grouped.endpoints.len() - 1, "{answering}");
    assert!(
        grouped.findings.iter().any(|f| f.starts_with("blackhole: spine-2")),
        "{:?}",
        grouped.findings
    );
}

/// A pod's echo to a host leaves its node masqueraded (felix's natOutgoing) and its reply is
/// un-NATed there: proven without a walk, in both underlays, as are host-to-pod and pod-to-pod
/// pairs (no translation). Powering a node off breaks exactly its pairs, still without walks
/// for the pairs that answer.
#[test]
fn masqueraded_pod_requests_are_proven() {
    for underlay in [Underlay::Ospf, Underlay::Ebgp] {
        let fabric = LeafSpine {
            underlay,
            pods_per_node: 2,
            ..LeafSpine::new(2, 3, 2)
        };
        let mut engine = converged(&fabric);
        let (grouped, _) = compare(&engine, &format!("{underlay:?}, healthy"));
        let pods = grouped.endpoints.iter().filter(|e| e.name.contains('/')).count();
        assert!(
            pods >= 12,
            "two per node, and the cluster's own: {:?}",
            grouped.endpoints
        );
        let (ok, pairs) = grouped.count();
        assert_eq!(
            (ok, grouped.walked),
            (pairs, 0),
            "{underlay:?}: every pair answers, none walked"
        );
        let dev = engine.network().device_by_name("node-2-1").expect("node");
        engine.power_off(&[dev], PowerLoss::Abrupt);
        engine.run_until_quiet();
        let (grouped, _) = compare(&engine, &format!("{underlay:?}, node-2-1 off"));
        let (ok, pairs) = grouped.count();
        assert!(ok < pairs, "{underlay:?}: pairs towards node-2-1 and its pods break");
    }
}

/// Sources are proven 64 at a time, the tiles dealt to the workers in turn: with 146
/// endpoints (three tiles) and a blackhole on one spine, one, two and three workers give the
/// per-pair walks' matrix, the same findings and the same walks.
#[test]
fn workers_share_the_tiles_and_agree() {
    let fabric = LeafSpine {
        pods_per_node: 1,
        ..LeafSpine::new(2, 6, 12)
    };
    let mut engine = converged(&fabric);
    let victim = node_addr(&fabric, 3, 5);
    configure(&mut engine, "spine-1", &format!("ip route {victim}/32 Null0"));
    engine.run_until_quiet();
    let (net, st) = (engine.network(), engine.state());
    let exact = ReachMatrix::per_pair(net, st);
    assert!(exact.endpoints.len() > 128, "{} endpoints", exact.endpoints.len());
    let alone = ReachMatrix::on_workers(net, st, 1);
    same(&alone, &exact, "one worker");
    assert!(alone.walked > 0 && alone.walked < exact.walked, "{}", alone.walked);
    for workers in [2, 3] {
        let m = ReachMatrix::on_workers(net, st, workers);
        same(&m, &exact, &format!("{workers} workers"));
        assert_eq!(m.walked, alone.walked, "{workers} workers");
    }
}
