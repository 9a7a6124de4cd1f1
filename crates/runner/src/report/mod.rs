//! Reports of a `toolgate test` run: a human summary, a stable JSON summary, JUnit XML, a
//! pull-request comment in markdown, GitHub Actions annotations, SARIF for code scanning.
//!
//! The runner streams verdicts into a [`Summary`], which keeps counts for every case but the full
//! verdict only for failures, so memory does not grow with the number of passing fixtures.

pub(crate) mod github;
mod human;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod sarif;

pub(crate) use human::render as human;

use std::collections::BTreeMap;

use crate::snapshot::SnapshotMode;
use toolgate_repo::CaseResult;
use toolgate_repo::FixtureClass;
use toolgate_repo::Status;

/// How the cases of one tool and class went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassTally {
    /// Cases run.
    pub cases: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases per observed outcome (`admitted`, `admitted_failure`, `rejected`, `not_run`).
    pub outcomes: BTreeMap<&'static str, usize>,
}

/// One line per case or check, for reports that list everything (JUnit, JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The case or check name.
    pub name: String,
    /// A case (a fixture against a version), not a suite check.
    pub is_case: bool,
    /// The contract version, for cases and per-version checks.
    pub version: Option<String>,
    /// The tool, if any.
    pub tool: Option<String>,
    /// The class, for cases.
    pub class: Option<FixtureClass>,
    /// Whether it passed.
    pub passed: bool,
    /// Why it was not run, if it was not.
    pub skipped: Option<String>,
    /// The fixture, for cases.
    pub fixture: Option<std::path::PathBuf>,
    /// How long it took.
    pub duration: std::time::Duration,
}

/// Everything a report needs from a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Tools, classes, outcomes.
    pub tally: BTreeMap<String, BTreeMap<FixtureClass, ClassTally>>,
    /// Cases run and passed.
    pub cases: (usize, usize),
    /// Cases not run because their contract does not compile (never counted as passed).
    pub cases_skipped: usize,
    /// Checks that neither passed nor failed, each `name: why` (a tool resting only on
    /// responses built from the schema is unproven): never counted as passed.
    pub unproven: Vec<String>,
    /// The tools of those checks.
    pub unproven_tools: Vec<String>,
    /// Suite checks run and passed.
    pub checks: (usize, usize),
    /// Every failing case or check, in run order.
    pub failures: Vec<CaseResult>,
    /// Every case and check, when the report lists them all.
    pub lines: Vec<Line>,
    /// Whether any failure is a configuration problem (exit code 2).
    pub configuration_error: bool,
    /// Notes of passing and failing verdicts alike, each `name: note`, routine ones included.
    pub notes: Vec<String>,
    /// The notes someone should act on (not the routine ones): what `--format github` makes
    /// annotations of.
    pub notices: Vec<String>,
    /// How long each tool that ran a case took, in the order they finished.
    pub tool_durations: Vec<(String, std::time::Duration)>,
    /// A run at least this long ends its human and CI reports with its slowest tools (a
    /// progress line's interval; never when zero).
    pub long_run: std::time::Duration,
    /// How long the whole run took.
    pub elapsed: std::time::Duration,
    /// When the run started.
    pub started_at: Option<std::time::SystemTime>,
    /// What the checks counted (`mutants`, `survivors`, `lint_findings`, …), summed.
    pub counts: BTreeMap<&'static str, usize>,
    keep_lines: bool,
}

impl Summary {
    /// A summary that keeps a line per case and check only when `keep_lines` (the JUnit and JSON
    /// reports list them; the others need not hold them).
    pub fn new(keep_lines: bool) -> Summary {
        Summary {
            keep_lines,
            ..Summary::default()
        }
    }

    /// Records a case's verdict.
    pub fn record_case(&mut self, verdict: CaseResult) {
        self.cases.0 += 1;
        if verdict.passed() {
            self.cases.1 += 1;
        }
        if verdict.skipped.is_some() {
            self.cases_skipped += 1;
        }
        if let (Some(tool), Some(class)) = (&verdict.tool, verdict.class) {
            let tally = self
                .tally
                .entry(tool.clone())
                .or_default()
                .entry(class)
                .or_default();
            tally.cases += 1;
            tally.passed += usize::from(verdict.passed());
            *tally
                .outcomes
                .entry(verdict.outcome.unwrap_or("not_run"))
                .or_default() += 1;
        }
        self.keep(verdict, true);
    }

    /// Records a suite check's verdict.
    pub fn record_check(&mut self, verdict: CaseResult) {
        self.checks.0 += 1;
        if verdict.passed() {
            self.checks.1 += 1;
        }
        for (name, count) in &verdict.counts {
            *self.counts.entry(name).or_default() += count;
        }
        if let Some(why) = &verdict.skipped {
            self.unproven.push(format!("{}: {why}", verdict.name));
            self.unproven_tools.extend(verdict.tool.clone());
        }
        self.keep(verdict, false);
    }

    fn keep(&mut self, verdict: CaseResult, is_case: bool) {
        let named = |note: &String| format!("{}: {note}", verdict.name);
        self.notices.extend(verdict.notes.iter().map(named));
        self.notes.extend(
            verdict
                .notes
                .iter()
                .chain(&verdict.routine_notes)
                .map(named),
        );
        if self.keep_lines {
            self.lines.push(Line {
                name: verdict.name.clone(),
                is_case,
                version: verdict.version.clone(),
                tool: verdict.tool.clone(),
                class: verdict.class,
                passed: verdict.passed(),
                skipped: verdict.skipped.clone(),
                fixture: verdict.fixture.clone(),
                duration: verdict.duration,
            });
        }
        if verdict.failed() {
            self.configuration_error |= verdict.has_configuration_problem();
            self.failures.push(verdict);
        }
    }

    /// Whether everything ran and passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
            && self.cases.0 > 0
            && self.cases_skipped == 0
            && self.unproven.is_empty()
    }

    /// Passed, a failure, or a configuration problem.
    pub fn status(&self) -> Status {
        if self.configuration_error {
            Status::Unusable
        } else {
            Status::passed_if(self.passed())
        }
    }
}

/// Words for the snapshot mode, for the report header.
pub(crate) fn mode_words(mode: SnapshotMode) -> &'static str {
    use crate::snapshot::Update;
    match (mode.accept, mode.update, mode.force_pass) {
        (true, _, _) => "accepted: written as the new truth",
        (false, Update::No, _) => "checked, never written (CI)",
        (false, Update::New, false) => "checked; changes written as .snap.new for review",
        (false, Update::New, true) => {
            "checked; changes written as .snap.new for review, and they do not fail (INSTA_FORCE_PASS)"
        }
        (false, Update::Always, _) => "written where they differ (INSTA_UPDATE=always)",
        (false, Update::Unseen, _) => {
            "new ones written, changed ones as .snap.new for review (INSTA_UPDATE=unseen)"
        }
        (false, Update::Force, _) => "all rewritten (INSTA_UPDATE=force)",
    }
}

/// The snapshot mode as the JSON report names it.
pub(crate) fn mode_name(mode: SnapshotMode) -> &'static str {
    use crate::snapshot::Update;
    match (mode.accept, mode.update) {
        (true, _) => "accept",
        (false, Update::No) => "check",
        (false, Update::New) => "write_pending",
        (false, Update::Always) => "always",
        (false, Update::Unseen) => "unseen",
        (false, Update::Force) => "force",
    }
}

/// `slowest tools: a 12.0 s, b 3.1 s, c 0.4 s`: the five slowest of a long run of several tools,
/// where a suite's time goes; nothing for a short run, where the line would be noise.
pub(crate) fn slowest_tools(summary: &Summary) -> Option<String> {
    if summary.elapsed < summary.long_run || summary.tool_durations.len() < 2 {
        return None;
    }
    let mut slowest: Vec<&(String, std::time::Duration)> = summary.tool_durations.iter().collect();
    slowest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let listed: Vec<String> = slowest
        .iter()
        .take(5)
        .map(|(tool, took)| {
            format!(
                "{} {:.1} s",
                toolgate_gate::internals::escape_hidden(tool),
                took.as_secs_f64()
            )
        })
        .collect();
    Some(format!("slowest tools: {}", listed.join(", ")))
}
