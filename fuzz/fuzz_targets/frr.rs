//! FRR 8.4 integrated configuration (`frr.conf`) on one Linux host: errors and warnings, never a
//! panic; a configuration that applies also converges within the engine's run bound (the host
//! alone: its own BGP/OSPF processes, statics and route-maps must settle without a peer).
#![no_main]
use libfuzzer_sys::fuzz_target;

const TOPOLOGY: &str = "devices:\n  h:\n    kind: linux\n    interfaces: [eth0, eth1]\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mut loaded) = fabsim::input::topology::parse_topology(TOPOLOGY, "t.yaml") else {
        return;
    };
    let origin = fabsim::diag::TextOrigin {
        file: "fuzz".into(),
        line: 1,
        col: 1,
    };
    let dev = fabsim::model::DeviceId(0);
    if fabsim::input::frr::apply_frr(&mut loaded.net, dev, text, &origin).is_ok() {
        let _ = fabsim::engine::converge(loaded.net);
    }
});
