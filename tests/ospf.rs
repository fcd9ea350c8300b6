//! OSPF on segments and point-to-point links, through the public API: DR/BDR/DROTHER roles,
//! 2-Way between DROTHERs, the dead timer, BDR promotion, and point-to-point adjacencies.

use fabsim::diag::TextOrigin;
use fabsim::engine::{converge, Engine};
use fabsim::input::eos::apply_config;
use fabsim::input::topology::parse_topology;
use fabsim::views::run_command;

fn router(name: &str, addr: &str, extra: &str) -> String {
    format!(
        "  {name}:\n    kind: eos\n    config: |\n      interface Ethernet1\n         no switchport\n         ip address {addr}\n{extra}      router ospf 1\n         network 0.0.0.0/0 area 0\n"
    )
}

fn engine(yaml: &str) -> Engine {
    let loaded = parse_topology(yaml, "t.yaml").unwrap_or_else(|e| panic!("{e}"));
    converge(loaded.net).0
}

fn neighbors(e: &Engine, dev: &str) -> String {
    let d = e.network().device_by_name(dev).expect("device");
    run_command(e.network(), e.state(), d, "show ip ospf neighbor").expect("show")
}

fn state_of(table: &str, rid: &str) -> String {
    table
        .lines()
        .find(|l| l.starts_with(rid))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap_or("absent")
        .to_string()
}

/// Four routers on one broadcast segment, all starting together.
fn lan() -> String {
    let mut y = String::from("devices:\n");
    for (i, n) in ["R1", "R2", "R3", "R4"].iter().enumerate() {
        y.push_str(&router(n, &format!("10.0.0.{}/24", i + 1), ""));
    }
    y.push_str("segments:\n  lan: [R1:Ethernet1, R2:Ethernet1, R3:Ethernet1, R4:Ethernet1]\n");
    y
}

#[test]
fn a_segment_elects_dr_and_bdr_and_drothers_stay_two_way() {
    let e = engine(&lan());
    let r1 = neighbors(&e, "R1");
    assert_eq!(state_of(&r1, "10.0.0.4"), "FULL/DR", "{r1}");
    assert_eq!(state_of(&r1, "10.0.0.3"), "FULL/BDR", "{r1}");
    assert_eq!(state_of(&r1, "10.0.0.2"), "2WAY/DROTHER", "{r1}");
    let r4 = neighbors(&e, "R4");
    for rid in ["10.0.0.1", "10.0.0.2"] {
        assert_eq!(state_of(&r4, rid), "FULL/DROTHER", "{r4}");
    }
}

#[test]
fn when_the_dr_goes_silent_the_bdr_takes_over_after_the_dead_interval() {
    let mut e = engine(&lan());
    let r4 = e.network().device_by_name("R4").expect("R4");
    let origin = TextOrigin {
        file: "step".into(),
        line: 1,
        col: 1,
    };
    e.reconfigure(|n| apply_config(n, r4, "interface Ethernet1\n shutdown\n", &origin))
        .expect("cfg");
    e.advance(30_000);
    assert_eq!(
        state_of(&neighbors(&e, "R1"), "10.0.0.4"),
        "FULL/DR",
        "R4 is not yet declared dead"
    );
    e.run_until_quiet();
    let r1 = neighbors(&e, "R1");
    assert_eq!(state_of(&r1, "10.0.0.4"), "absent", "{r1}");
    assert_eq!(state_of(&r1, "10.0.0.3"), "FULL/DR", "{r1}");
    assert_eq!(state_of(&r1, "10.0.0.2"), "FULL/BDR", "{r1}");
}

#[test]
fn point_to_point_links_form_full_adjacencies_without_roles() {
    let p2p = "      interface Ethernet1\n         ip ospf network point-to-point\n";
    let y = format!(
        "devices:\n{}{}links:\n  - [A:Ethernet1, B:Ethernet1]\n",
        router("A", "10.0.0.0/31", p2p),
        router("B", "10.0.0.1/31", p2p)
    );
    let e = engine(&y);
    let a = neighbors(&e, "A");
    assert_eq!(state_of(&a, "10.0.0.1"), "FULL", "{a}");
}

#[test]
fn a_priority_zero_router_never_becomes_dr() {
    let mut y = String::from("devices:\n");
    y.push_str(&router("R1", "10.0.0.1/24", ""));
    y.push_str(&router(
        "R9",
        "10.0.0.9/24",
        "      interface Ethernet1\n         ip ospf priority 0\n",
    ));
    y.push_str("segments:\n  lan: [R1:Ethernet1, R9:Ethernet1]\n");
    let e = engine(&y);
    let r9 = neighbors(&e, "R9");
    assert_eq!(state_of(&r9, "10.0.0.1"), "FULL/DR", "{r9}");
    let r1 = neighbors(&e, "R1");
    assert!(
        r1.lines()
            .any(|l| l.starts_with("10.0.0.9") && l.split_whitespace().nth(3) == Some("0")),
        "{r1}"
    );
}
