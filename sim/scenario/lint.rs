//! `fabsim lint FILE|DIR`: every warning the input parsers give for a topology or scenario
//! (or every one under a directory), with the line it is about, as the list of lines a user must
//! trust fabsim to understand; and the keywords each input format ignores by design.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diag::InputError;
use crate::input::{containerlab, eos, frr, snapshot};

/// One warning: where, the line as written, and why it is not modelled.
#[derive(Clone, Debug, Serialize)]
pub struct LintItem {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub text: String,
    pub why: String,
}

/// A keyword understood and deliberately ignored (no routing effect), by input format.
#[derive(Clone, Debug, Serialize)]
pub struct IgnoredItem {
    pub format: &'static str,
    pub context: String,
    pub keyword: &'static str,
    pub why: &'static str,
}

/// The warnings of `path` (a topology or scenario file, a snapshot directory, or every
/// `*.yaml`/`*.yml` and snapshot under a directory, in name order). Any file with errors makes the whole lint an error.
pub fn lint(path: &Path) -> Result<Vec<LintItem>, InputError> {
    let mut files = Vec::new();
    collect(path, &mut files);
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match super::open(&f) {
            Ok(opened) => items.extend(opened.warnings.iter().map(|w| LintItem {
                text: source_line(&w.span.file, w.span.line),
                file: w.span.file.clone(),
                line: w.span.line,
                col: w.span.col,
                why: w.message.clone(),
            })),
            Err(e) => errors.extend(e.0),
        }
    }
    if errors.is_empty() {
        Ok(items)
    } else {
        Err(InputError(errors))
    }
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    // A snapshot directory is one input, linted as a whole (its links need all its files).
    if !path.is_dir() || snapshot::is_snapshot(path) {
        out.push(path.to_path_buf());
        return;
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    for p in entries {
        let yaml = p.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if p.is_dir() || yaml {
            collect(&p, out);
        }
    }
}

/// Line `line` (1-based) of `file`, trimmed; empty when it cannot be read.
fn source_line(file: &str, line: u32) -> String {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| {
            t.lines()
                .nth(line.saturating_sub(1) as usize)
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_default()
}

/// Every keyword the input formats read and ignore by design (`fabsim lint --verbose`).
pub fn ignored_by_design() -> Vec<IgnoredItem> {
    let eos = eos::IGNORED_BY_DESIGN.iter().map(|i| IgnoredItem {
        format: "eos",
        context: format!("{:?}", i.context),
        keyword: i.keyword,
        why: i.why,
    });
    let frr = frr::IGNORED_BY_DESIGN.iter().map(|i| IgnoredItem {
        format: "frr",
        context: format!("{:?}", i.context),
        keyword: i.keyword,
        why: i.why,
    });
    let clab = containerlab::IGNORED_BY_DESIGN.iter().map(|i| IgnoredItem {
        format: "containerlab",
        context: i.level.to_string(),
        keyword: i.key,
        why: i.why,
    });
    eos.chain(frr).chain(clab).collect()
}
