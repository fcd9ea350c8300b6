//! EOS configuration text applied to one switch: errors and warnings, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

const TOPOLOGY: &str = "devices:\n  sw:\n    kind: eos\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(mut loaded) = fabsim::input::topology::parse_topology(TOPOLOGY, "t.yaml") else { return };
    let origin = fabsim::diag::TextOrigin { file: "fuzz".into(), line: 1, col: 1 };
    let dev = fabsim::model::DeviceId(0);
    let _ = fabsim::input::eos::apply_config(&mut loaded.net, dev, text, &origin);
});
