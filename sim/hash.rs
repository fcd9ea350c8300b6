//! FNV-1a (64-bit, the `fnv` crate): fabsim's one deterministic stand-in wherever the real
//! system draws at random or hashes with a per-boot key — the ECMP flow hash, a veth's MAC, a
//! TCP initial sequence number, the apiserver's ClusterIP draw. The same input gives the same
//! value on every run and machine, which is what byte-identical output needs.

use std::hash::Hasher;

pub(crate) fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut h = fnv::FnvHasher::default();
    for b in bytes {
        h.write_u8(b);
    }
    h.finish()
}
