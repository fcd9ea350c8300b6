//! The pools file of `fabsim plan pods --pools FILE`: read, planned and rendered as text and
//! JSON exactly as the CLI does — an error with its line, or a plan, never a panic (the budget
//! arithmetic takes user-sized numbers: nodes × max_pods, zones × subnets, /0 to /32 prefixes).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(file) = fabsim::plan::read_pools(std::path::Path::new("pools.yaml"), text) else {
        return;
    };
    if let Ok(plan) = fabsim::plan::plan_cluster(&file.pools, file.supernet) {
        let _ = fabsim::plan::render::cluster_text(&plan);
        let _ = fabsim::plan::render::json(&plan);
    }
});
