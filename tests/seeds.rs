//! `fabsim run --seeds`: a run is byte-identical for its seed; the seeds report groups identical
//! outcomes and names what differs; the bundled cold-start scenarios (issue #5 item 8): a cold
//! stage 5 races, a cold stage 6 races in forwarding only.

use std::path::Path;

use fabsim::scenario::report::RunReport;
use fabsim::scenario::seeds::{run_seeds, seed_range, RaceStep};
use fabsim::scenario::{open, run_seeded};

const COLD_S5: &str = "scenarios/seed-lab-cold-s5.yaml";
const COLD_S6: &str = "scenarios/seed-lab-cold-s6.yaml";

fn json_of(file: &str, seed: u64) -> String {
    let opened = open(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
    let run = run_seeded(&opened, None, seed).unwrap_or_else(|e| panic!("{e}"));
    let scn = opened.scenario.as_ref().expect("a scenario");
    RunReport::new(scn, &opened.topology_name, &run, seed, None).json()
}

#[test]
fn one_seed_gives_one_run_byte_for_byte() {
    for seed in [1, 7] {
        assert_eq!(json_of(COLD_S5, seed), json_of(COLD_S5, seed), "seed {seed}");
    }
}

#[test]
fn seeds_report_is_the_same_on_one_thread_and_two() {
    let opened = open(Path::new(COLD_S6)).unwrap_or_else(|e| panic!("{e}"));
    let seeds = seed_range(3, 3);
    assert_eq!(seeds, vec![3, 4, 5]);
    let one = run_seeds(&opened, COLD_S6, None, &seeds, 1).unwrap_or_else(|e| panic!("{e}"));
    let two = run_seeds(&opened, COLD_S6, None, &seeds, 2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(one.json(), two.json());
    assert_eq!(one.seeds, vec![3, 4, 5]);
    assert!(one.steps > 40, "every step of the scenario ran: {}", one.steps);
}

/// The leaves that hold 10.96.0.0/12 in BGP (`B E`) in some outcome, i.e. that won the
/// redistribution race under some seed (the others then hold the winner's O E2).
fn service_range_winners(race: &RaceStep) -> Vec<String> {
    let mut won: Vec<String> = race
        .differences
        .iter()
        .filter(|d| d.prefix == "10.96.0.0/12" && d.device.starts_with("Leaf-"))
        .filter(|d| d.variants.iter().any(|v| v.route.starts_with("B E")))
        .map(|d| d.device.clone())
        .collect();
    won.sort();
    won
}

#[test]
fn cold_stage_6_races_in_forwarding_only() {
    let opened = open(Path::new(COLD_S6)).unwrap_or_else(|e| panic!("{e}"));
    let report = run_seeds(&opened, COLD_S6, None, &seed_range(1, 8), 2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.exit_code, 0, "{}", report.text());
    let raced: Vec<&str> = report.races.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(raced, ["cold-s6"], "{}", report.text());
    let race = &report.races[0];
    assert!(!race.reachability_differs, "{}", report.text());
    assert!(race.unsettled_seeds.is_empty(), "{}", report.text());
    // Only the range every node advertises differs: its winner and the routes towards it.
    assert!(
        race.differences.iter().all(|d| d.prefix == "10.96.0.0/12"),
        "{}",
        report.text()
    );
    assert!(service_range_winners(race).len() > 1, "{}", report.text());
    assert!(
        report
            .text()
            .contains("forwarding only: every host/pod pair answers or not alike under every seed"),
        "{}",
        report.text()
    );
}

#[test]
fn cold_stage_5_races() {
    let opened = open(Path::new(COLD_S5)).unwrap_or_else(|e| panic!("{e}"));
    let report = run_seeds(&opened, COLD_S5, None, &seed_range(1, 20), 2).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        report.exit_code,
        0,
        "every expectation holds under every seed:\n{}",
        report.text()
    );
    let raced: Vec<&str> = report.races.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        raced,
        ["cold-s5"],
        "the warm steps before it do not race:\n{}",
        report.text()
    );
    let race = &report.races[0];
    assert!(race.outcomes.len() > 1);
    assert!(
        race.unsettled_seeds.is_empty(),
        "converged outcomes, not oscillation snapshots"
    );
    // Each of the three leaves wins the service range under some seed.
    assert_eq!(
        service_range_winners(race),
        ["Leaf-1", "Leaf-2", "Leaf-3"],
        "{}",
        report.text()
    );
}

#[test]
fn json_and_text_report_the_seeds_and_failures() {
    let opened = open(Path::new(COLD_S6)).unwrap_or_else(|e| panic!("{e}"));
    let report = run_seeds(&opened, COLD_S6, Some("s5"), &seed_range(1, 2), 2).unwrap_or_else(|e| panic!("{e}"));
    let v: serde_json::Value = serde_json::from_str(&report.json()).expect("valid JSON");
    let keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
    for k in [
        "schema",
        "scenario",
        "file",
        "topology",
        "seeds",
        "until",
        "steps",
        "races",
        "failed_seeds",
        "exit_code",
    ] {
        assert!(keys.contains(&k), "missing {k}: {keys:?}");
    }
    assert_eq!(v["seeds"], serde_json::json!([1, 2]));
    assert_eq!(v["until"], "s5");
    assert_eq!(v["exit_code"], i64::from(report.exit_code));
    let text = report.text();
    assert!(
        text.starts_with(
            "scenario seed-lab-cold-s6 (scenarios/seed-lab-cold-s6.yaml) on topology seed-lab, 2 seeds (1-2)"
        ),
        "{text}"
    );
    if report.failed_seeds.is_empty() {
        assert!(text.contains("every expectation held under all 2 seeds"), "{text}");
    } else {
        assert!(text.contains("expectations failed under"), "{text}");
    }
}
