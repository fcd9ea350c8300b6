//! Calico VXLAN end to end on the three-node cluster of tests/data/calico-vxlan.yaml (n1 and
//! n2 share rack-a, n3 is behind the router): felix's vxlan.calico device and routes, the
//! encapsulation in the packet walk and in tcpdump, CrossSubnet, and a pool with both
//! encapsulations refused.

mod common;

use common::{assert_has, capture_in, out_in, run_file};

const SCENARIO: &str = "tests/data/calico-vxlan.yaml";

/// The VXLAN lines of a capture: (outer line without its timestamp, the inner line after it).
fn vxlan_packets(capture: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = capture.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].contains(": VXLAN, "))
        .map(|w| {
            (
                w[0].split_once(' ').map_or("", |(_, l)| l).to_string(),
                w[1].to_string(),
            )
        })
        .collect()
}

/// `IP SRC.PORT > DST.4789: VXLAN, flags [I] (0x08), vni 4096` with PORT from Linux's
/// ephemeral range; returns PORT.
fn vxlan_src_port(outer: &str, src: &str, dst: &str) -> u16 {
    let rest = outer
        .strip_prefix(&format!("IP {src}."))
        .unwrap_or_else(|| panic!("not from {src}: {outer}"));
    let (port, tail) = rest.split_once(' ').unwrap_or_else(|| panic!("{outer}"));
    assert_eq!(tail, format!("> {dst}.4789: VXLAN, flags [I] (0x08), vni 4096"));
    let port: u16 = port.parse().unwrap_or_else(|_| panic!("port in {outer}"));
    assert!((32768..=60999).contains(&port), "{outer}");
    port
}

/// VXLAN Always: felix's routes (BIRD programs none: Calico's kernel filter rejects VXLAN
/// pools), the device, pod MTU 1450, and a pod ping across the router inside UDP 4789 with
/// the inner TTL decremented by the two nodes only.
#[test]
fn vxlan_always_encapsulates_every_remote_block() {
    let run = run_file(SCENARIO, "vxlan");
    let routes = out_in(&run, "n1", "ip r");
    assert_has(
        &routes,
        &[
            "blackhole 10.66.40.128/26 proto 80",
            "10.66.98.0/26 via 10.66.98.2 dev vxlan.calico onlink",
            "10.66.217.0/26 via 10.66.217.2 dev vxlan.calico onlink",
        ],
    );
    assert!(!routes.contains("proto bird"), "{routes}");
    assert_eq!(
        out_in(&run, "n1", "ip -d link show vxlan.calico"),
        "5: vxlan.calico: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UNKNOWN mode DEFAULT group default \n    \
         link/ether 66:40:b3:ea:b6:3f brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 65535 \n    \
         vxlan id 4096 local 192.168.1.11 dev ens3 srcport 0 0 dstport 4789 nolearning ttl auto ageing 300 udpcsum \
         noudp6zerocsumtx noudp6zerocsumrx addrgenmode eui64 numtxqueues 1 numrxqueues 1 gso_max_size 65536 gso_max_segs 65535 \n"
    );
    assert_has(
        &out_in(&run, "n1", "ip a show vxlan.calico"),
        &[
            "inet 10.66.40.130/32 scope global vxlan.calico",
            "inet6 fe80::6440:b3ff:feea:b63f/64 scope link",
        ],
    );
    assert_has(&out_in(&run, "p1", "ip a show eth0"), &["... mtu 1450 ..."]);
    assert_has(
        &out_in(&run, "p1", "ping -c 1 10.66.98.3"),
        &["64 bytes from 10.66.98.3: seq=0 ttl=62 ..."],
    );
    let packets = vxlan_packets(&capture_in(&run, "p1", "p3", "n1", "ens3"));
    let [(request, inner_request), (reply, inner_reply)] = packets.as_slice() else {
        panic!("one request and one reply: {packets:?}");
    };
    let out_port = vxlan_src_port(request, "192.168.1.11", "192.168.2.13");
    let back_port = vxlan_src_port(reply, "192.168.2.13", "192.168.1.11");
    assert_ne!(out_port, back_port, "each direction is its own flow");
    assert_eq!(
        inner_request,
        "IP 10.66.40.131 > 10.66.98.3: ICMP echo request, id 1, seq 1, length 64"
    );
    assert_eq!(
        inner_reply,
        "IP 10.66.98.3 > 10.66.40.131: ICMP echo reply, id 1, seq 1, length 64"
    );
}

/// calico-node's tunnel addresses: the VXLAN one next to the IPIP one the manifest's pool gave
/// (fabsim keeps IPIP addresses from calico-node's start), on the Node and in IPAM.
#[test]
fn vxlan_tunnel_address_on_the_node_and_in_ipam() {
    let run = run_file(SCENARIO, "vxlan");
    assert_has(
        &out_in(&run, "n1", "calicoctl get node n2 -o yaml"),
        &["  ipv4VXLANTunnelAddr: 10.66.217.2"],
    );
    assert_has(
        &out_in(&run, "n1", "calicoctl ipam check --show-all-ips"),
        &[
            "10.66.217.2 allocated; attrs Main:vxlan-tunnel-addr-n2 Extra:node=n2,type=vxlanTunnelAddress",
            "10.66.217.2 belongs to Node(n2)",
            "Found 6 node tunnel IPs.",
        ],
    );
    assert_has(
        &out_in(&run, "n1", "calicoctl ipam show --show-blocks"),
        &["| Block | 10.66.217.0/26 | 64 | 4 (6%) | 60 (94%) |"],
    );
}

/// CrossSubnet: felix's no-encap route (proto 80, onlink) to n2 in n1's subnet, VXLAN to and
/// from n3; every pod still reaches every other.
#[test]
fn vxlan_cross_subnet_is_native_within_the_subnet() {
    let run = run_file(SCENARIO, "cross-subnet");
    assert_has(
        &out_in(&run, "n1", "ip r"),
        &[
            "10.66.217.0/26 via 192.168.1.12 dev ens3 proto 80 onlink",
            "10.66.98.0/26 via 10.66.98.2 dev vxlan.calico onlink",
        ],
    );
    assert_has(
        &out_in(&run, "n3", "ip r"),
        &[
            "10.66.40.128/26 via 10.66.40.130 dev vxlan.calico onlink",
            "10.66.217.0/26 via 10.66.217.2 dev vxlan.calico onlink",
        ],
    );
    let native = capture_in(&run, "p1", "p2", "n1", "ens3");
    assert!(vxlan_packets(&native).is_empty(), "{native}");
    assert_has(
        &native,
        &["... IP 10.66.40.131 > 10.66.217.3: ICMP echo request, id 1, seq 1, length 64"],
    );
    assert_eq!(vxlan_packets(&capture_in(&run, "p2", "p3", "n2", "ens3")).len(), 2);
    for (from, to) in [("p1", "10.66.217.3"), ("p2", "10.66.98.3"), ("p3", "10.66.40.131")] {
        assert_has(
            &out_in(&run, from, &format!("ping -c 1 {to}")),
            &["64 bytes from ...: seq=0 ttl=62 ..."],
        );
    }
}

/// clientv3's validation: `Cannot enable both VXLAN and IPIP on the same IPPool`.
#[test]
fn a_pool_with_both_encapsulations_is_refused() {
    let run = run_file(SCENARIO, "both");
    let step = run.steps.last().expect("the step ran");
    let cmd = step.commands.first().expect("calicoctl ran");
    assert_eq!(cmd.status, 1);
    assert_has(
        &cmd.output,
        &["Failed to apply resources: ... error with field IPPool.Spec.VXLANMode = 'Always' (Cannot enable both VXLAN and IPIP on the same IPPool)"],
    );
    assert!(out_in(&run, "n1", "calicoctl get ippool -o wide")
        .lines()
        .all(|l| !l.starts_with("both")));
}
