//! `fabsim run SCENARIO --seeds N`: the scenario replayed under several seeds, and every step
//! whose converged outcome differs between them. A seed only changes timing (BIRD's timer
//! jitter, BGP message delays: `engine::bgp::jitter`), so a step that ends differently is one
//! whose result depends on which session came up or which UPDATE arrived first: a race.
//!
//! The outcome of a step is every device's forwarding table after it (for each prefix, the
//! route as the device prints it: protocol, next hops) and which host/pod pairs answer a ping
//! (the reachability matrix of `impact`, listed under the pseudo-device `(reachability)`). Steps are compared by id; identical
//! outcomes are grouped, and each difference is named by device and prefix with the routes
//! seen and how many seeds saw each.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::impact::ReachMatrix;
use super::run::{normalize, run_watched, Opened, StepReport};
use crate::diag::InputError;
use crate::engine::Engine;
use crate::model::DeviceId;
use crate::views;

/// Version of the `--seeds` JSON layout (docs/report-schema.md "Races"); bumped when a field
/// changes meaning or goes away.
pub const SEEDS_SCHEMA_VERSION: u32 = 1;

/// The pseudo-device under which an outcome lists each host/pod pair's ping verdict.
const REACHABILITY: &str = "(reachability)";

/// What a prefix shows when a device has no route for it in one outcome.
const NO_ROUTE: &str = "(no route)";

/// A step's converged outcome: device → prefix → the route line(s) the device prints.
type Outcome = BTreeMap<String, BTreeMap<String, String>>;

/// One seed's replay: each step's outcome and whether it settled, and the failed expectations.
struct SeedRun {
    seed: u64,
    steps: Vec<(String, Option<String>, bool, Outcome)>,
    failed: Vec<String>,
}

/// The report of `fabsim run --seeds`. Field order is the JSON key order.
#[derive(Clone, Debug, Serialize)]
pub struct SeedsReport {
    pub schema: u32,
    pub scenario: String,
    pub file: String,
    pub topology: String,
    pub seeds: Vec<u64>,
    pub until: Option<String>,
    /// Steps run in every seed.
    pub steps: usize,
    /// The steps whose outcome differs between seeds, in scenario order.
    pub races: Vec<RaceStep>,
    /// Seeds in which some expectation failed, with what failed.
    pub failed_seeds: Vec<SeedFailure>,
    /// 0 when every seed's expectations held, 1 otherwise.
    pub exit_code: i32,
}

#[derive(Clone, Debug, Serialize)]
pub struct RaceStep {
    pub id: String,
    pub name: Option<String>,
    /// The distinct outcomes, most frequent first (ties: lowest seed first).
    pub outcomes: Vec<OutcomeGroup>,
    /// Every device and prefix whose route is not the same in all outcomes.
    pub differences: Vec<Difference>,
    /// Whether some host/pod pair answers under one seed and not under another; false when
    /// only forwarding differs (traffic takes other paths to the same ends).
    pub reachability_differs: bool,
    /// Seeds in which the step was still changing at the run limit (an oscillation): their
    /// outcome is wherever the network happened to be, not a converged state.
    pub unsettled_seeds: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OutcomeGroup {
    /// Seeds that ended the step in this outcome.
    pub seeds: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Difference {
    pub device: String,
    pub prefix: String,
    /// The routes seen for this prefix on this device (`(no route)` when absent), most
    /// frequent first.
    pub variants: Vec<Variant>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    pub route: String,
    pub seeds: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SeedFailure {
    pub seed: u64,
    /// `STEP: what was expected`, one per failed expectation.
    pub failed: Vec<String>,
}

/// The seeds `--seeds N` runs: `first..first+N` (`first` is 1 unless `--seed` says otherwise).
pub fn seed_range(first: u64, n: u64) -> Vec<u64> {
    (0..n).map(|i| first.saturating_add(i)).collect()
}

/// Replay the scenario once per seed (on up to `threads` threads; the report does not depend
/// on how many) and compare the steps' outcomes.
pub fn run_seeds(
    opened: &Opened,
    file: &str,
    until: Option<&str>,
    seeds: &[u64],
    threads: usize,
) -> Result<SeedsReport, InputError> {
    let runs = replay_all(opened, until, seeds, threads)?;
    let scn = opened.scenario.as_ref();
    let mut races = Vec::new();
    let steps = runs.first().map_or(0, |r| r.steps.len());
    for i in 0..steps {
        if let Some(race) = compare_step(&runs, i) {
            races.push(race);
        }
    }
    let failed_seeds: Vec<SeedFailure> = runs
        .iter()
        .filter(|r| !r.failed.is_empty())
        .map(|r| SeedFailure {
            seed: r.seed,
            failed: r.failed.clone(),
        })
        .collect();
    Ok(SeedsReport {
        schema: SEEDS_SCHEMA_VERSION,
        scenario: scn.map_or_else(|| opened.topology_name.clone(), |s| s.name.clone()),
        file: file.to_string(),
        topology: opened.topology_name.clone(),
        seeds: seeds.to_vec(),
        until: until.map(str::to_string),
        steps,
        races,
        exit_code: i32::from(!failed_seeds.is_empty()),
        failed_seeds,
    })
}

fn replay_all(opened: &Opened, until: Option<&str>, seeds: &[u64], threads: usize) -> Result<Vec<SeedRun>, InputError> {
    let threads = threads.clamp(1, seeds.len().max(1));
    let mut runs: Vec<Result<SeedRun, InputError>> = if threads == 1 {
        seeds.iter().map(|s| replay(opened, until, *s)).collect()
    } else {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let mine: Vec<u64> = seeds.iter().copied().skip(t).step_by(threads).collect();
                    scope.spawn(move || mine.into_iter().map(|s| replay(opened, until, s)).collect::<Vec<_>>())
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    // Back in the order the seeds were given, whatever thread ran them.
    runs.sort_by_key(|r| {
        r.as_ref()
            .map_or(0, |r| seeds.iter().position(|s| *s == r.seed).unwrap_or(0))
    });
    runs.into_iter().collect()
}

fn replay(opened: &Opened, until: Option<&str>, seed: u64) -> Result<SeedRun, InputError> {
    let mut steps = Vec::new();
    let mut after_step = |report: &StepReport, engine: &Engine, matrix: Option<&ReachMatrix>| {
        steps.push((
            report.id.clone(),
            report.name.clone(),
            report.quiet,
            outcome(engine, matrix),
        ));
    };
    let run = run_watched(opened, until, seed, &mut after_step)?;
    let failed = run.failures().map(|(s, c)| format!("{}: {}", s.id, c.what)).collect();
    Ok(SeedRun { seed, steps, failed })
}

/// Every device's forwarding table, prefix by prefix, as the device prints it, and every
/// host/pod pair's verdict from the step's own reachability matrix.
fn outcome(engine: &Engine, matrix: Option<&ReachMatrix>) -> Outcome {
    let (net, st) = (engine.network(), engine.state());
    let mut out = Outcome::new();
    for (i, dev) in net.devices.iter().enumerate() {
        let Some(d) = st.devices.get(i) else { continue };
        let mut table: BTreeMap<String, String> = BTreeMap::new();
        for r in d.fib.iter() {
            let line = normalize(&views::route_line(net, DeviceId(i as u32), r));
            table
                .entry(r.prefix.to_string())
                .and_modify(|l| {
                    l.push_str(" | ");
                    l.push_str(&line);
                })
                .or_insert(line);
        }
        out.insert(dev.name.clone(), table);
    }
    if let Some(m) = matrix {
        let n = m.endpoints.len();
        let mut pairs = BTreeMap::new();
        for i in 0..n {
            for j in (0..n).filter(|j| *j != i) {
                let (from, to) = (&m.endpoints[i], &m.endpoints[j]);
                let verdict = if m.reached(i, j) { "answers" } else { "no answer" };
                pairs.insert(
                    format!("{} -> {} ({})", from.name, to.name, to.addr),
                    verdict.to_string(),
                );
            }
        }
        out.insert(REACHABILITY.to_string(), pairs);
    }
    out
}

/// Step `i` across all seeds: None when every seed ended it the same way.
fn compare_step(runs: &[SeedRun], i: usize) -> Option<RaceStep> {
    let (id, name, _, _) = &runs.first()?.steps[i];
    let mut groups: BTreeMap<&Outcome, Vec<u64>> = BTreeMap::new();
    for r in runs {
        groups.entry(&r.steps[i].3).or_default().push(r.seed);
    }
    if groups.len() < 2 {
        return None;
    }
    let mut ordered: Vec<(&Outcome, Vec<u64>)> = groups.into_iter().collect();
    ordered.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.1.cmp(&b.1)));
    let unsettled_seeds = runs.iter().filter(|r| !r.steps[i].2).map(|r| r.seed).collect();
    let differences = differences(&ordered);
    Some(RaceStep {
        id: id.clone(),
        name: name.clone(),
        reachability_differs: differences.iter().any(|d| d.device == REACHABILITY),
        differences,
        outcomes: ordered.into_iter().map(|(_, seeds)| OutcomeGroup { seeds }).collect(),
        unsettled_seeds,
    })
}

/// Devices and prefixes whose route is not the same in every outcome.
fn differences(groups: &[(&Outcome, Vec<u64>)]) -> Vec<Difference> {
    let mut keys: BTreeSet<(&str, &str)> = BTreeSet::new();
    for (o, _) in groups {
        for (dev, table) in o.iter() {
            keys.extend(table.keys().map(|p| (dev.as_str(), p.as_str())));
        }
    }
    let mut out = Vec::new();
    for (dev, prefix) in keys {
        let mut variants: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for (o, seeds) in groups {
            let route = o.get(dev).and_then(|t| t.get(prefix)).map_or(NO_ROUTE, String::as_str);
            variants.entry(route).or_default().extend(seeds);
        }
        if variants.len() < 2 {
            continue;
        }
        let mut variants: Vec<Variant> = variants
            .into_iter()
            .map(|(route, mut seeds)| {
                seeds.sort_unstable();
                Variant {
                    route: route.to_string(),
                    seeds,
                }
            })
            .collect();
        variants.sort_by(|a, b| b.seeds.len().cmp(&a.seeds.len()).then(a.seeds.cmp(&b.seeds)));
        out.push(Difference {
            device: dev.to_string(),
            prefix: prefix.to_string(),
            variants,
        });
    }
    out
}

impl SeedsReport {
    pub fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }

    /// The readable report: one paragraph per step that raced, then the seeds that failed.
    pub fn text(&self) -> String {
        let n = self.seeds.len();
        let mut out = format!(
            "scenario {} ({}) on topology {}, {n} seeds ({})\n",
            self.scenario,
            self.file,
            self.topology,
            seed_list(&self.seeds)
        );
        if self.races.is_empty() {
            out.push_str(&format!(
                "\nno race: every one of the {} steps converged to the same forwarding tables under every seed\n",
                self.steps
            ));
        }
        for r in &self.races {
            let sizes: Vec<String> = r.outcomes.iter().map(|o| o.seeds.len().to_string()).collect();
            out.push_str(&format!(
                "\n{}: {} outcomes over {n} seeds (seeds per outcome: {})",
                r.id,
                r.outcomes.len(),
                sizes.join(", ")
            ));
            match &r.name {
                Some(name) => out.push_str(&format!(" — {name}\n")),
                None => out.push('\n'),
            }
            for (k, o) in r.outcomes.iter().enumerate() {
                out.push_str(&format!("  outcome {}: seeds {}\n", k + 1, seed_list(&o.seeds)));
            }
            if !r.unsettled_seeds.is_empty() {
                out.push_str(&format!(
                    "  NOT settled (still changing at the run limit) in seeds {}\n",
                    seed_list(&r.unsettled_seeds)
                ));
            }
            if !r.reachability_differs {
                out.push_str("  forwarding only: every host/pod pair answers or not alike under every seed\n");
            }
            for d in &r.differences {
                out.push_str(&format!("  {} {}:\n", d.device, d.prefix));
                for v in &d.variants {
                    out.push_str(&format!(
                        "    {} in {} of {n}: {}\n",
                        v.route,
                        v.seeds.len(),
                        seed_list(&v.seeds)
                    ));
                }
            }
        }
        if self.failed_seeds.is_empty() {
            out.push_str(&format!("\nevery expectation held under all {n} seeds\n"));
        } else {
            let which: Vec<u64> = self.failed_seeds.iter().map(|f| f.seed).collect();
            out.push_str(&format!(
                "\nexpectations failed under {} of {n} seeds: {}\n",
                which.len(),
                seed_list(&which)
            ));
            for f in &self.failed_seeds {
                for what in &f.failed {
                    out.push_str(&format!("  seed {}: FAIL {what}\n", f.seed));
                }
            }
        }
        out
    }
}

/// `1-5, 8, 10-11`: seeds as ranges.
fn seed_list(seeds: &[u64]) -> String {
    let mut sorted = seeds.to_vec();
    sorted.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_lists_as_ranges() {
        assert_eq!(seed_list(&[3, 1, 2, 5, 7, 8]), "1-3, 5, 7-8");
        assert_eq!(seed_list(&[4]), "4");
        assert_eq!(seed_range(5, 3), vec![5, 6, 7]);
    }

    fn fib(rows: &[(&str, &str, &str)]) -> Outcome {
        let mut o = Outcome::new();
        for (d, p, r) in rows {
            o.entry(d.to_string()).or_default().insert(p.to_string(), r.to_string());
        }
        o
    }

    fn seed_run(seed: u64, o: Outcome) -> SeedRun {
        SeedRun {
            seed,
            steps: vec![("s".into(), None, true, o)],
            failed: Vec::new(),
        }
    }

    #[test]
    fn identical_outcomes_group_and_differences_name_device_and_prefix() {
        let a = fib(&[
            ("Leaf-2", "10.66.217.0/24", "B E via 10.2.22.1"),
            ("Leaf-1", "10.0.0.0/8", "C"),
        ]);
        let b = fib(&[
            ("Leaf-2", "10.66.217.0/24", "O E2 via 10.22.99.0"),
            ("Leaf-1", "10.0.0.0/8", "C"),
        ]);
        let runs = vec![
            seed_run(1, a.clone()),
            seed_run(2, b.clone()),
            seed_run(3, a.clone()),
            seed_run(4, b),
            seed_run(5, a),
        ];
        let race = compare_step(&runs, 0).expect("two outcomes");
        let groups: Vec<Vec<u64>> = race.outcomes.iter().map(|o| o.seeds.clone()).collect();
        assert_eq!(groups, vec![vec![1, 3, 5], vec![2, 4]]);
        assert_eq!(race.differences.len(), 1, "{:?}", race.differences);
        let d = &race.differences[0];
        assert_eq!((d.device.as_str(), d.prefix.as_str()), ("Leaf-2", "10.66.217.0/24"));
        assert_eq!(d.variants[0].route, "B E via 10.2.22.1");
        assert_eq!(d.variants[0].seeds, vec![1, 3, 5]);
    }

    #[test]
    fn a_missing_route_is_a_difference_and_same_outcomes_are_no_race() {
        let a = fib(&[("k-w2", "10.66.111.0/24", "via 10.2.22.0")]);
        let b = fib(&[("k-w2", "10.0.0.0/8", "via 10.2.22.0")]);
        let race = compare_step(&[seed_run(1, a.clone()), seed_run(2, b)], 0).expect("race");
        let routes: Vec<&str> = race
            .differences
            .iter()
            .flat_map(|d| d.variants.iter().map(|v| v.route.as_str()))
            .collect();
        assert!(routes.contains(&NO_ROUTE), "{routes:?}");
        assert!(compare_step(&[seed_run(1, a.clone()), seed_run(2, a)], 0).is_none());
    }
}
