//! The machine summary (`toolgate test --format json`): serialize-only types, kept apart from the
//! logic so the format changes only on purpose.
//!
//! Stable: keys are fixed, maps are sorted, and nothing varies between two runs of the same tree.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Summary;
use crate::snapshot::SnapshotMode;
use toolgate_repo::{Problem, json_report};

/// The report's JSON Schema, published by `toolgate schema report`; tests hold every report to it.
pub const SCHEMA: &str = include_str!("../../schemas/report.schema.json");

#[derive(Serialize)]
struct Report<'a> {
    format_version: u32,
    toolgate: &'static str,
    passed: bool,
    exit_code: u8,
    snapshots: &'static str,
    totals: Totals,
    tools: BTreeMap<&'a str, BTreeMap<&'static str, Class<'a>>>,
    results: Vec<Outcome<'a>>,
    failures: Vec<Failure<'a>>,
    unproven: &'a [String],
    notes: &'a [String],
}

/// What the checks count, every key always present (zero when the checks did not run).
const COUNTS: [&str; 9] = [
    "mutants",
    "mutants_rejected",
    "mutant_places_left_out",
    "survivors",
    "survivors_accepted",
    "misplaced",
    "leaks",
    "lint_findings",
    "lint_accepted",
];

#[derive(Serialize)]
struct Outcome<'a> {
    name: &'a str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    status: &'static str,
    time_ms: f64,
}

#[derive(Serialize)]
struct Totals {
    fixtures: usize,
    cases: usize,
    cases_passed: usize,
    cases_failed: usize,
    cases_skipped: usize,
    checks: usize,
    checks_failed: usize,
    checks_unproven: usize,
    #[serde(flatten)]
    counts: BTreeMap<&'static str, usize>,
}

#[derive(Serialize)]
struct Class<'a> {
    cases: usize,
    passed: usize,
    failed: usize,
    outcomes: &'a BTreeMap<&'static str, usize>,
}

#[derive(Serialize)]
struct Failure<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fixture: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reproduce: Option<&'a str>,
    problems: &'a [Problem],
}

/// The JSON report, pretty-printed, with a trailing newline.
pub(crate) fn render(summary: &Summary, fixtures: usize, mode: SnapshotMode) -> String {
    let tools = summary
        .tally
        .iter()
        .map(|(tool, classes)| {
            let classes = classes
                .iter()
                .map(|(class, tally)| {
                    let entry = Class {
                        cases: tally.cases,
                        passed: tally.passed,
                        failed: tally.cases - tally.passed,
                        outcomes: &tally.outcomes,
                    };
                    (class.as_str(), entry)
                })
                .collect();
            (tool.as_str(), classes)
        })
        .collect();
    json_report::render(&Report {
        format_version: json_report::FORMAT_VERSION,
        toolgate: env!("CARGO_PKG_VERSION"),
        passed: summary.passed(),
        exit_code: summary.status().code(),
        snapshots: super::mode_name(mode),
        totals: Totals {
            fixtures,
            cases: summary.cases.0,
            cases_passed: summary.cases.1,
            cases_failed: summary.cases.0 - summary.cases.1 - summary.cases_skipped,
            cases_skipped: summary.cases_skipped,
            checks: summary.checks.0,
            checks_failed: summary.checks.0 - summary.checks.1 - summary.unproven.len(),
            checks_unproven: summary.unproven.len(),
            counts: COUNTS
                .iter()
                .map(|name| (*name, summary.counts.get(name).copied().unwrap_or(0)))
                .collect(),
        },
        tools,
        results: summary
            .lines
            .iter()
            .map(|line| Outcome {
                name: &line.name,
                kind: if line.is_case { "case" } else { "check" },
                tool: line.tool.as_deref(),
                class: line.class.map(|class| class.as_str()),
                version: line.version.as_deref(),
                status: match (line.passed, &line.skipped) {
                    (true, _) => "passed",
                    (false, Some(_)) => "not_run",
                    (false, None) => "failed",
                },
                // Rounded to the microsecond, as the clock is read.
                time_ms: (line.duration.as_secs_f64() * 1e6).round() / 1e3,
            })
            .collect(),
        failures: summary
            .failures
            .iter()
            .map(|verdict| Failure {
                name: &verdict.name,
                tool: verdict.tool.as_deref(),
                class: verdict.class.map(|class| class.as_str()),
                version: verdict.version.as_deref(),
                fixture: verdict
                    .fixture
                    .as_ref()
                    .map(|fixture| fixture.to_string_lossy().replace('\\', "/")),
                observed: verdict.observed.as_deref(),
                reproduce: verdict.reproduce.as_deref(),
                problems: &verdict.problems,
            })
            .collect(),
        unproven: &summary.unproven,
        notes: &summary.notes,
    })
}
