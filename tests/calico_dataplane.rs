//! Calico's data plane end to end on a three-node cluster (tests/data/calico-encap.yaml): n1
//! and n2 share a subnet, n3 is behind the router. natOutgoing (felix's MASQUERADE), IPIP
//! Always and CrossSubnet; and natOutgoing on the seed lab's test pod towards the internet.

mod common;

use common::{assert_has, capture, capture_in, out, out_in, run_file};

const SCENARIO: &str = "tests/data/calico-encap.yaml";

/// seed-lab s1: the test pod on k-w3 pings 8.8.8.8. k-w3 forwards it out of ens5 with its own
/// address (the pool has natOutgoing), so the NAT cloud, which answers only addresses on its
/// segment, replies, and k-w3 un-NATs the answer back to the pod.
#[test]
fn nat_outgoing_masquerades_a_pod_towards_the_internet() {
    assert_has(
        &out("s1", "test-pod", "ping -c 1 8.8.8.8"),
        &[
            "64 bytes from 8.8.8.8: seq=0 ttl=98 ...",
            "1 packets transmitted, 1 packets received, 0% packet loss",
        ],
    );
    assert_has(
        &capture("s1", "test-pod", "8.8.8.8", "k-w3", "ens5"),
        &[
            "... IP 10.0.137.142 > 8.8.8.8: ICMP echo request, id 1, seq 1, length 64",
            "... IP 8.8.8.8 > 10.0.137.142: ICMP echo reply, id 1, seq 1, length 64",
        ],
    );
}

/// Pod to pod is never masqueraded (the destination is in a pool); pod to the router is, and
/// stops working once the pool's natOutgoing is off (the router has no route to the pods).
#[test]
fn nat_outgoing_only_outside_the_pools() {
    let run = run_file(SCENARIO, "cross-subnet");
    assert_has(
        &capture_in(&run, "p1", "p2", "n1", "ens3"),
        &["... IP 10.66.40.130 > 10.66.217.2: ICMP echo request, id 1, seq 1, length 64"],
    );
    assert_has(
        &capture_in(&run, "p1", "192.168.1.1", "n1", "ens3"),
        &["... IP 192.168.1.11 > 192.168.1.1: ICMP echo request, id 1, seq 1, length 64"],
    );
    assert_has(
        &out_in(&run, "p1", "ping -c 1 192.168.1.1"),
        &["64 bytes from 192.168.1.1: seq=0 ttl=63 ..."],
    );
    let run = run_file(SCENARIO, "no-nat");
    assert_has(
        &out_in(&run, "p1", "ping -c 1 192.168.1.1"),
        &["1 packets transmitted, 0 packets received, 100% packet loss"],
    );
}

/// IPIP Always: every remote block goes through tunl0 to the node's address, also across the
/// router (Calico's BIRD uses the BGP next hop, not the recursively resolved gateway).
#[test]
fn ipip_always_tunnels_to_the_bgp_next_hop() {
    let run = run_file(SCENARIO, "calico");
    assert_has(
        &out_in(&run, "n1", "ip r"),
        &[
            "10.66.98.0/26 via 192.168.2.13 dev tunl0 proto bird onlink",
            "10.66.217.0/26 via 192.168.1.12 dev tunl0 proto bird onlink",
        ],
    );
    assert_has(
        &capture_in(&run, "p1", "p3", "n1", "ens3"),
        &["... IP 192.168.1.11 > 192.168.2.13: IP 10.66.40.130 > 10.66.98.2: ICMP echo request, id 1, seq 1, length 64"],
    );
    assert_has(
        &out_in(&run, "p1", "ping -c 1 10.66.98.2"),
        &["64 bytes from 10.66.98.2: seq=0 ttl=62 ..."],
    );
}

/// CrossSubnet: confd's `bgp_next_hop ~ <own subnet>` test leaves n1<->n2 native and keeps
/// the tunnel to and from n3.
#[test]
fn ipip_cross_subnet_tunnels_only_across_subnets() {
    let run = run_file(SCENARIO, "cross-subnet");
    assert_has(
        &out_in(&run, "n1", "ip r"),
        &[
            "10.66.98.0/26 via 192.168.2.13 dev tunl0 proto bird onlink",
            "10.66.217.0/26 via 192.168.1.12 dev ens3 proto bird",
        ],
    );
    assert_has(
        &out_in(&run, "n3", "ip r"),
        &[
            "10.66.40.128/26 via 192.168.1.11 dev tunl0 proto bird onlink",
            "10.66.217.0/26 via 192.168.1.12 dev tunl0 proto bird onlink",
        ],
    );
    assert_has(
        &capture_in(&run, "p1", "p2", "n1", "ens3"),
        &["... IP 10.66.40.130 > 10.66.217.2: ICMP echo request, id 1, seq 1, length 64"],
    );
    assert_has(
        &capture_in(&run, "p1", "p3", "n1", "ens3"),
        &["... IP 192.168.1.11 > 192.168.2.13: IP 10.66.40.130 > 10.66.98.2: ICMP echo request, id 1, seq 1, length 64"],
    );
    for (from, to) in [("p1", "10.66.217.2"), ("p2", "10.66.98.2"), ("p3", "10.66.40.130")] {
        assert_has(
            &out_in(&run, from, &format!("ping -c 1 {to}")),
            &["1 packets transmitted, 1 packets received, 0% packet loss"],
        );
    }
}
