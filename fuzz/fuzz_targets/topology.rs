//! Topology YAML (with EOS, netplan and BIRD blocks inside): any input is either a network or
//! diagnostics, never a panic; a network that loads also converges within the run bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(loaded) = fabsim::input::topology::parse_topology(text, "fuzz.yaml") {
        if loaded.net.devices.len() <= 16 {
            let _ = fabsim::engine::converge(loaded.net);
        }
    }
});
