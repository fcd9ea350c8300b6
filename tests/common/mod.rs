//! Helpers shared by the integration tests: replay the bundled seed-lab scenario to a step and
//! run a command on a device there.

#![allow(dead_code)]

use std::path::Path;

use fabsim::scenario::{self, has_line, Run};
use fabsim::views;

pub const SEED_SCENARIO: &str = "scenarios/seed-lab.yaml";

/// The seed-lab scenario replayed up to and including `step`.
pub fn run_to(step: &str) -> Run {
    let opened = scenario::open(Path::new(SEED_SCENARIO)).unwrap_or_else(|e| panic!("{e}"));
    scenario::run(&opened, Some(step)).unwrap_or_else(|e| panic!("{e}"))
}

/// The output of `command` on `device` after `step`.
pub fn out(step: &str, device: &str, command: &str) -> String {
    let run = run_to(step);
    let net = run.engine.network();
    let dev = net
        .device_by_name(device)
        .unwrap_or_else(|| panic!("no device {device}"));
    views::run_command(net, run.engine.state(), dev, command)
        .unwrap_or_else(|e| panic!("{device}# {command}: {}", e.message))
}

/// Every pattern matches some line of `text` (whitespace-insensitive, `...` = any text).
pub fn assert_has(text: &str, patterns: &[&str]) {
    for p in patterns {
        assert!(has_line(text, p), "expected a line matching `{p}` in:\n{text}");
    }
}
