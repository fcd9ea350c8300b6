//! The workloads of issue #8, shared by the timing benchmarks (`converge.rs`, criterion) and
//! the peak-memory harness (`peak_memory.rs`), so both measure the same thing.

use fabsim::engine::{converge, Convergence, Engine};
use fabsim::gen::{LeafSpine, Underlay};
use fabsim::input::topology::parse_topology;
use fabsim::scenario::ReachMatrix;

/// The CLI's allocator (`sim/main.rs`), so that the workloads measure what `fabsim` does.
#[global_allocator]
static ALLOCATOR: fabsim::alloc::MiMalloc = fabsim::alloc::MiMalloc;

/// The generated fabrics benchmarked (spines, leaves, nodes per leaf), OSPF and eBGP; 16x256x16
/// is [`LARGE`].
pub const FABRICS: [(u32, u32, u32); 2] = [(2, 4, 2), (4, 32, 16)];

/// The large fabric (4,096 nodes, 16.7 M ordered pairs), benchmarked with the OSPF
/// underlay only: the eBGP one does not fit the 4 GiB target (BENCHMARKS.md, `ebgpmem2`).
pub const LARGE: (u32, u32, u32) = (16, 256, 16);

/// A generated fabric's name in benchmark ids: `4x32x16`, `ebgp-4x32x16`.
pub fn fabric_id(s: u32, l: u32, n: u32, underlay: Underlay) -> String {
    match underlay {
        Underlay::Ospf => format!("{s}x{l}x{n}"),
        Underlay::Ebgp => format!("ebgp-{s}x{l}x{n}"),
    }
}

/// `fabsim gen leaf-spine` text for these sizes: Calico peering with the ToR, per-node ASNs,
/// one pod per node (the 16x256x16 fabric has 4,096 pod blocks; the matrix then
/// checks node-to-node, pod-to-pod and node-pod pairs).
pub fn fabric(s: u32, l: u32, n: u32, underlay: Underlay) -> String {
    LeafSpine {
        underlay,
        pods_per_node: 1,
        ..LeafSpine::new(s, l, n)
    }
    .generate()
}

/// From topology text to converged FIBs on every device (the load builds and realizes the
/// declared cluster).
pub fn load_and_converge(text: &str) -> Engine {
    let loaded = parse_topology(text, "generated.yaml").expect("generated topology loads");
    let (engine, conv) = converge(loaded.net);
    assert!(conv.quiet, "converged");
    engine
}

/// Every host and pod to every other one, after convergence.
pub fn reach_all_pairs(engine: &Engine) -> ReachMatrix {
    ReachMatrix::compute(engine.network(), engine.state())
}

/// Cut the cable between spine-1 and leaf-1 and run until quiet again.
pub fn fail_spine_leaf_link(engine: &mut Engine) -> Convergence {
    let net = engine.network();
    let spine = net.device_by_name("spine-1").expect("spine-1");
    let port = net.iface_by_name(spine, "Ethernet1").expect("spine-1 Ethernet1");
    engine.set_severed(&[port], true);
    engine.run_until_quiet()
}
