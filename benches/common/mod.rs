//! The workloads of issue #8, shared by the timing benchmarks (`converge.rs`, criterion) and
//! the peak-memory harness (`peak_memory.rs`), so both measure the same thing.

use fabsim::engine::{Convergence, Engine};
use fabsim::gen::{LeafSpine, Underlay};
use fabsim::input::topology::parse_topology;
use fabsim::scenario::ReachMatrix;

/// The CLI's allocator (`sim/main.rs`), so that the workloads measure what `fabsim` does.
#[global_allocator]
static ALLOCATOR: fabsim::alloc::MiMalloc = fabsim::alloc::MiMalloc;

/// The generated fabrics benchmarked (spines, leaves, nodes per leaf), OSPF and eBGP; 16x256x16
/// is [`LARGE`].
pub const FABRICS: [(u32, u32, u32); 2] = [(2, 4, 2), (4, 32, 16)];

/// The large fabric (4,096 nodes, 16.7 M ordered pairs): every workload with the OSPF
/// underlay, and `converge` with the eBGP one where the machine has the memory for it
/// ([`large_ebgp_fits`]: it peaks at 14.8 GiB and takes ~3 minutes, BENCHMARKS.md "(tenth)").
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
/// declared cluster). Without the engine's guards: the eBGP 16x256x16 fabric takes more
/// events than the default budget and more memory than the default limit (half the machine's)
/// by the guard's count; they are checked all the same, so every workload pays for them.
pub fn load_and_converge(text: &str) -> Engine {
    let loaded = parse_topology(text, "generated.yaml").expect("generated topology loads");
    let mut engine = Engine::new(loaded.net);
    engine.set_event_budget(u64::MAX);
    engine.set_memory_limit(u64::MAX);
    let conv = engine.run_until_quiet();
    assert!(conv.quiet, "converged");
    engine
}

/// The available memory the eBGP 16x256x16 fabric is run with: its peak was 14.8 GiB
/// (BENCHMARKS.md, "(tenth)"), and a machine without this much would swap or kill it.
const LARGE_EBGP_NEEDS_MIB: u64 = 17 * 1024;

/// Whether this machine has the memory to converge the eBGP 16x256x16 fabric; if not, why.
pub fn large_ebgp_fits() -> Result<(), String> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let available_mib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024);
    if available_mib >= LARGE_EBGP_NEEDS_MIB {
        Ok(())
    } else {
        Err(format!(
            "skipped: needs {LARGE_EBGP_NEEDS_MIB} MiB of available memory, this machine has {available_mib} MiB"
        ))
    }
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
