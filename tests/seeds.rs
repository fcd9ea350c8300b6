//! `fabsim run --seeds`: a run is byte-identical for its seed; the seeds report groups identical
//! outcomes and names what differs; the bundled cold-start scenarios (issue #5 item 8).

use std::path::Path;

use fabsim::scenario::report::RunReport;
use fabsim::scenario::seeds::{run_seeds, seed_range};
use fabsim::scenario::{open, run_seeded};

const COLD_S5: &str = "tests/data/seeds/seed-lab-cold-s5.yaml";
const COLD_S6: &str = "tests/data/seeds/seed-lab-cold-s6.yaml";

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

#[test]
fn cold_stage_6_has_no_race() {
    let opened = open(Path::new(COLD_S6)).unwrap_or_else(|e| panic!("{e}"));
    let report = run_seeds(&opened, COLD_S6, None, &seed_range(1, 8), 2).unwrap_or_else(|e| panic!("{e}"));
    let raced: Vec<&str> = report.races.iter().map(|r| r.id.as_str()).collect();
    assert!(raced.is_empty(), "steps that raced: {raced:?}\n{}", report.text());
    assert!(report.text().contains("no race: every one of the"), "{}", report.text());
}

#[test]
#[ignore = "fabsim finds no race on cold s5: after the reboot every leaf-node session comes up \
            in the same millisecond, so the three leaves learn 10.96.0.0/12 at once and redistribute \
            it before OSPF is up; with one global LSDB and instantaneous flooding they then see each \
            other's E2 in one recompute and take turns forever under every seed (the mesh sessions' \
            No route to host is a consequence: the finding ends the step ~40 s in, before their \
            retries). Per-router LSA timing needs a flooding-delay spread that the warm seed lab's \
            C68/C69/C71 bound below one UPDATE delay (FIDELITY.md run --seeds)"]
fn cold_stage_5_races() {
    let opened = open(Path::new(COLD_S5)).unwrap_or_else(|e| panic!("{e}"));
    let report = run_seeds(&opened, COLD_S5, None, &seed_range(1, 20), 2).unwrap_or_else(|e| panic!("{e}"));
    let race = report.races.iter().find(|r| r.id == "cold-s5").expect("cold-s5 races");
    assert!(race.outcomes.len() > 1);
    assert!(
        race.unsettled_seeds.is_empty(),
        "converged outcomes, not oscillation snapshots"
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
            "scenario seed-lab-cold-s6 (tests/data/seeds/seed-lab-cold-s6.yaml) on topology seed-lab, 2 seeds (1-2)"
        ),
        "{text}"
    );
    if report.failed_seeds.is_empty() {
        assert!(text.contains("every expectation held under all 2 seeds"), "{text}");
    } else {
        assert!(text.contains("expectations failed under"), "{text}");
    }
}
