//! BGP messages from a real speaker's bytes (`wire::bgp_read`, what `fabsim peer` reads off
//! its TCP connection): framing, then each whole message decoded with and without ADD-PATH
//! path identifiers. A message or a NOTIFICATION error, never a panic; a decoded message
//! must encode again.
#![no_main]
use fabsim::wire::{bgp, bgp_read};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Ok(Some(len)) = bgp_read::message_len(rest) {
        let (msg, tail) = rest.split_at(len);
        for add_path in [false, true] {
            if let Ok(m) = bgp_read::decode(msg, add_path) {
                let _ = bgp::encode(&m);
            }
        }
        rest = tail;
    }
});
