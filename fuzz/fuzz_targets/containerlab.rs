//! containerlab `*.clab.yml` topologies: a network or diagnostics, never a panic; a network of
//! ≤ 16 devices that loads also converges within the engine's run bound.
//!
//! The file is placed in `tests/bad/` so that the corpus's relative `startup-config:` and
//! `binds:` (rewritten by `seed-corpora.sh` to point at the bundled EOS and FRR files) resolve
//! and their configurations are parsed too. Reads are bounded by `input::read_text`, so a bind
//! the fuzzer points at `/dev/zero` is an error, not a hang.
#![no_main]
use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/bad/fuzz.clab.yml"));
    if let Ok(loaded) = fabsim::input::containerlab::load(path, text) {
        if loaded.net.devices.len() <= 16 {
            let _ = fabsim::engine::converge(loaded.net);
        }
    }
});
