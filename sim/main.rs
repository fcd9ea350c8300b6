/// fabsim allocates through mimalloc: a large fabric's convergence makes and drops millions of
/// small route and path vectors, and glibc's allocator spent a sixth of an eBGP convergence in
/// `malloc`/`free` (BENCHMARKS.md, 2026-12-03). The benchmarks use the same allocator
/// (`benches/common`), so that they measure what the CLI does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(fabsim::cli::main());
}
