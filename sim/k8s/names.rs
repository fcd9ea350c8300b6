//! Names Kubernetes and Calico derive: pod names from their controller, the pod template
//! hash, container ids, and the host side of a pod's veth.

use sha1::{Digest as _, Sha1};
use sha2::Sha256;

/// The characters `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString` and `rand.String` use
/// (no vowels, no 0/1/3 — nothing that spells words or looks alike).
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `n` name characters drawn deterministically from `seed` (the real ones are random; fabsim
/// derives them from the object's identity so that output is reproducible).
fn safe_chars(seed: &str, n: usize) -> String {
    let digest = Sha256::digest(seed.as_bytes());
    digest
        .iter()
        .cycle()
        .take(n)
        .map(|b| SAFE[usize::from(*b) % SAFE.len()] as char)
        .collect()
}

/// A Deployment's pod template hash (the ReplicaSet name suffix, 10 characters); each
/// revision of the template has its own.
pub fn template_hash(namespace: &str, deployment: &str, revision: u32) -> String {
    safe_chars(&format!("template/{namespace}/{deployment}/{revision}"), 10)
}

/// The 5-character suffix of the `n`th pod a controller creates.
pub fn pod_suffix(namespace: &str, owner: &str, n: u64) -> String {
    safe_chars(&format!("pod/{namespace}/{owner}/{n}"), 5)
}

/// Lower-case hex digits of `bytes` (Go's `hex.EncodeToString`), in one allocation: these
/// names are made for every pod at every realisation.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]])
        .map(char::from)
        .collect()
}

/// A 64-hex container id for a pod sandbox (the CNI's `ContainerID`).
pub fn container_id(namespace: &str, pod: &str, seq: u64) -> String {
    let digest = Sha256::digest(format!("sandbox/{namespace}/{pod}/{seq}").as_bytes());
    hex(&digest)
}

/// The host side of a pod's veth: `cali` + the first 11 hex digits of sha1("NAMESPACE.POD")
/// (Calico `VethNameForWorkload`, calico-reference.md §5; the lab's default/test-pod is
/// `cali7fba7a35b74`).
pub fn veth_name(namespace: &str, pod: &str) -> String {
    let digest = Sha1::digest(format!("{namespace}.{pod}").as_bytes());
    format!("cali{}", &hex(&digest[..6])[..11])
}

/// The host end of a pod's veth as the bridge plugin names it (`ip.RandomVethName`: `veth` +
/// 4 random bytes in hex); fabsim derives the bytes from the pod's identity.
pub fn bridge_veth_name(namespace: &str, pod: &str) -> String {
    let digest = Sha1::digest(format!("veth/{namespace}/{pod}").as_bytes());
    format!("veth{}", hex(&digest[..4]))
}

/// The network namespace containerd creates for a pod sandbox, `cni-` + 16 random bytes as
/// 8-4-4-4-12 hex (no UUID version bits: the lab's `cni-62e568eb-e285-550c-1c3a-5e86eb5dd440`);
/// fabsim derives the bytes from the pod's identity.
pub fn netns_name(namespace: &str, pod: &str) -> String {
    let d = Sha256::digest(format!("netns/{namespace}/{pod}").as_bytes());
    let part = |r: std::ops::Range<usize>| hex(&d[r]);
    format!(
        "cni-{}-{}-{}-{}-{}",
        part(0..4),
        part(4..6),
        part(6..8),
        part(8..10),
        part(10..16)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_lab_test_pods_veth() {
        assert_eq!(super::veth_name("default", "test-pod"), "cali7fba7a35b74");
    }

    #[test]
    fn netns_names_look_like_containerds() {
        let n = super::netns_name("default", "test-pod");
        assert_eq!(n.len(), "cni-62e568eb-e285-550c-1c3a-5e86eb5dd440".len());
        assert!(n.starts_with("cni-") && n.matches('-').count() == 5, "{n}");
    }

    #[test]
    fn generated_names_use_the_safe_alphabet() {
        let h = super::template_hash("kube-system", "coredns", 1);
        assert_ne!(h, super::template_hash("kube-system", "coredns", 2));
        assert_eq!(h.len(), 10);
        assert!(h.bytes().all(|c| super::SAFE.contains(&c)));
        assert_ne!(super::pod_suffix("a", "b", 1), super::pod_suffix("a", "b", 2));
    }
}
