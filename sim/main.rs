/// fabsim allocates through mimalloc: a large fabric's convergence makes and drops millions of
/// small route and path vectors, and glibc's allocator spent a sixth of an eBGP convergence in
/// `malloc`/`free` (BENCHMARKS.md, 2026-12-03); how it is asked for blocks is
/// `fabsim::alloc`'s. The benchmarks use the same allocator (`benches/common`), so that they
/// measure what the CLI does.
#[global_allocator]
static ALLOCATOR: fabsim::alloc::MiMalloc = fabsim::alloc::MiMalloc;

fn main() {
    std::process::exit(fabsim::cli::main());
}
