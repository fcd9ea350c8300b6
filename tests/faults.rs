//! Fault steps (`fail:` / `restore:`) and the host commands `ip link set` / `ip route`, through
//! the scenario runner: what carrier loss, power loss and the kernel's route checks do.

use std::net::Ipv4Addr;
use std::path::Path;

use fabsim::engine::{BgpSessionView, BgpState};
use fabsim::scenario::{self, has_line, Run};
use fabsim::views;

fn run(file: &str, until: Option<&str>) -> Run {
    let opened = scenario::open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, until).unwrap_or_else(|e| panic!("{e}"))
}

fn session(run: &Run, device: &str, peer: &str) -> BgpSessionView {
    let net = run.engine.network();
    let d = net.device_by_name(device).expect("device");
    let peer: Ipv4Addr = peer.parse().expect("address");
    let bgp = run.engine.state().devices[d.idx()].bgp.as_ref().expect("speaker");
    bgp.sessions
        .iter()
        .find(|s| s.neighbor == peer)
        .expect("session")
        .clone()
}

fn on(run: &Run, device: &str, command: &str) -> String {
    let net = run.engine.network();
    let dev = net.device_by_name(device).expect("device");
    views::run_command(net, run.engine.state(), dev, command).unwrap_or_else(|e| panic!("{}", e.message))
}

#[test]
fn a_cut_uplink_reroutes_and_a_leaf_off_for_30s_is_a_70s_outage() {
    let run = run("tests/data/faults/leaf-spine.yaml", None);
    for s in &run.steps {
        assert_eq!(s.failed(), 0, "{}: {:#?}", s.id, s.checks);
    }
    assert_eq!(run.steps[0].change, "Leaf-1 Ethernet1 — Spine-1 Ethernet1: link down");
    // Leaf-2 off 30 s, then OSPF's wait timer on its links: 70 probes lost at 1 s.
    let flow = &run.steps[2].flows[0];
    assert_eq!(flow.outages.len(), 1);
    assert_eq!(flow.outages[0].lost(), 70, "{}", flow.transcript);
}

#[test]
fn power_loss_takes_a_multihop_session_down_at_hold_expiry_and_a_cut_cable_at_once() {
    let run = run("tests/data/faults/bgp.yaml", Some("r2-off"));
    let off = run.steps[0].start_ms;
    let s = session(&run, "R1", "10.9.0.3");
    assert_eq!(s.state, BgpState::Active);
    // (Its last error is now the reconnect's: R2 is still off.)
    assert_eq!(s.last_error.as_deref(), Some("Socket: Network unreachable"));
    // No NOTIFICATION: the session dies 180 s after the last keepalive R1 heard (every 60 s).
    let hold = 180_000;
    assert!(
        s.since_ms > off + hold - 60_000 && s.since_ms <= off + hold,
        "down at {} ms, power lost at {off} ms",
        s.since_ms
    );
    // The directly connected session never noticed.
    assert_eq!(session(&run, "R1", "10.9.0.1").state, BgpState::Established);

    let run = self::run("tests/data/faults/bgp.yaml", Some("cut"));
    let cut = run.steps[2].start_ms;
    for (dev, peer) in [("R1", "10.9.0.1"), ("R3", "10.9.0.0")] {
        let s = session(&run, dev, peer);
        assert_eq!(s.state, BgpState::Active);
        assert_eq!(s.since_ms, cut, "{dev}: fast-external-failover acts at once");
    }
    assert!(has_line(
        &on(&run, "R1", "show ip interface brief"),
        "Ethernet1 10.9.0.0/31 down down 1500"
    ));
}

/// BIRD starts every BGP timer randomised into its last quarter (`bgp_start_timer`): keepalives
/// go every 60–80 s of the 240 s hold time's third, and the hold timer, restarted at each
/// message heard, fires 180–240 s after the last one. So when a multihop peer loses power the
/// session ends 100–240 s later (exact timers: 160–240 s), at a time that depends on the seed.
#[test]
fn bird_notices_a_silent_peer_at_its_randomised_hold_timer() {
    let opened = scenario::open(Path::new("tests/data/faults/bird-multihop.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let mut delays = std::collections::BTreeSet::new();
    for seed in 1..=8 {
        let run = scenario::run_seeded(&opened, None, seed).unwrap_or_else(|e| panic!("{e}"));
        let off = run.steps[1].start_ms;
        let s = session(&run, "h1", "10.8.0.3");
        assert_eq!(s.state, BgpState::Active, "seed {seed}");
        // (Its last error is the reconnect's by now: h2 is still off.)
        let delay = s.since_ms - off;
        assert!(
            (100_000..=240_000).contains(&delay),
            "seed {seed}: down {delay} ms after the power loss"
        );
        delays.insert(delay);
    }
    assert!(delays.len() >= 4, "the detection time follows the seed: {delays:?}");
    assert!(
        delays.iter().any(|&d| d < 160_000),
        "a hold timer started short: {delays:?}"
    );
}

#[test]
fn a_reboot_with_for_comes_back() {
    let run = run("tests/data/faults/bgp.yaml", None);
    let step = run.steps.last().expect("step");
    assert_eq!(step.change, "R2: power lost for 120s, then boots");
    assert_eq!(step.failed(), 0, "{:#?}", step.checks);
    assert!(session(&run, "R1", "10.9.0.3").since_ms > step.start_ms + 120_000);
}

#[test]
fn ip_route_and_ip_link_answer_as_the_kernel_does() {
    let run = run("tests/data/faults/ip-commands.yaml", None);
    let out = |step: usize, i: usize| {
        let c = &run.steps[step].commands[i];
        (c.output.as_str(), c.status)
    };
    assert_eq!(out(0, 0), ("", 0));
    assert_eq!(out(0, 1), ("RTNETLINK answers: File exists\n", 2));
    assert_eq!(out(0, 2), ("", 0), "another metric is another route");
    assert_eq!(out(0, 3), ("Error: Nexthop has invalid gateway.\n", 2));
    assert_eq!(out(0, 4), ("RTNETLINK answers: No such device\n", 2));
    assert!(has_line(out(0, 5).0, "10.99.0.0/16 via 10.255.0.0 dev eth1"));
    assert!(has_line(out(0, 5).0, "10.99.0.0/16 via 10.255.0.0 dev eth1 metric 50"));
    assert_eq!(out(1, 0), ("", 0));
    assert_eq!(out(1, 1), ("RTNETLINK answers: No such process\n", 2));
    let table = out(2, 2).0;
    assert!(has_line(table, "10.99.0.0/16 dev eth1 scope link"), "{table}");
    assert!(!has_line(table, "10.99.0.0/16 via 10.255.0.0"), "{table}");
    assert!(has_line(table, "10.95.0.0/16 via 10.255.0.0 dev eth1"), "{table}");
    // Down: the device refuses routes, shows no flags but its own, and routes through it go.
    assert_eq!(out(3, 1), ("Error: Device for nexthop is not up.\n", 2));
    assert!(
        out(3, 2).0.starts_with("2: eth1: <BROADCAST,MULTICAST> mtu 1500"),
        "{}",
        out(3, 2).0
    );
    assert!(out(3, 2).0.contains("state DOWN"));
    assert_eq!(out(3, 3), ("", 0));
    // Up again: connected and netplan routes return, the typed ones do not.
    assert_eq!(out(4, 1), ("RTNETLINK answers: No such process\n", 2));
    assert!(has_line(out(4, 2).0, "default via 10.255.0.0 dev eth1 proto static"));
    assert!(!out(4, 2).0.contains("10.95.0.0/16"));
    for s in &run.steps {
        assert_eq!(s.failed(), 0, "{}: {:#?}", s.id, s.checks);
    }
}
