//! Scenario files: parsed into steps or diagnostics, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = fabsim::scenario::file::parse_scenario(text, "fuzz.yaml", std::path::Path::new("."));
});
