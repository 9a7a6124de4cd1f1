//! Reports of a `toolgate test` run: a human summary, a stable JSON summary, JUnit XML.
//!
//! The runner streams verdicts into a [`Summary`], which keeps counts for every case but the full
//! verdict only for failures, so memory does not grow with the number of passing fixtures.

pub mod json;
pub mod junit;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::fixture::FixtureClass;
use crate::snapshot::SnapshotMode;
use crate::verdict::Verdict;

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

/// One line per case or check, for reports that list everything (JUnit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The case or check name.
    pub name: String,
    /// The tool, if any.
    pub tool: Option<String>,
    /// The class, for cases.
    pub class: Option<FixtureClass>,
    /// Whether it passed.
    pub passed: bool,
}

/// Everything a report needs from a run.
#[derive(Debug, Default)]
pub struct Summary {
    /// Tools, classes, outcomes.
    pub tally: BTreeMap<String, BTreeMap<FixtureClass, ClassTally>>,
    /// Cases run and passed.
    pub cases: (usize, usize),
    /// Suite checks run and passed.
    pub checks: (usize, usize),
    /// Every failing case or check, in run order.
    pub failures: Vec<Verdict>,
    /// Every case and check, when the report lists them all.
    pub lines: Vec<Line>,
    /// Whether any failure is a configuration problem (exit code 2).
    pub configuration_error: bool,
    keep_lines: bool,
}

impl Summary {
    /// A summary that keeps a line per case only when `keep_lines` (JUnit needs them).
    pub fn new(keep_lines: bool) -> Summary {
        Summary {
            keep_lines,
            ..Summary::default()
        }
    }

    /// Records a case's verdict.
    pub fn record_case(&mut self, verdict: Verdict) {
        self.cases.0 += 1;
        if verdict.passed() {
            self.cases.1 += 1;
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
        self.keep(verdict);
    }

    /// Records a suite check's verdict.
    pub fn record_check(&mut self, verdict: Verdict) {
        self.checks.0 += 1;
        if verdict.passed() {
            self.checks.1 += 1;
        }
        self.keep(verdict);
    }

    fn keep(&mut self, verdict: Verdict) {
        if self.keep_lines {
            self.lines.push(Line {
                name: verdict.name.clone(),
                tool: verdict.tool.clone(),
                class: verdict.class,
                passed: verdict.passed(),
            });
        }
        if !verdict.passed() {
            self.configuration_error |= verdict.has_configuration_problem();
            self.failures.push(verdict);
        }
    }

    /// Whether everything passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.cases.0 > 0
    }

    /// 0 all passed, 1 a failure, 2 a configuration problem.
    pub fn exit_code(&self) -> u8 {
        if self.configuration_error {
            2
        } else if self.passed() {
            0
        } else {
            1
        }
    }
}

/// Words for the snapshot mode, for the report header.
pub fn mode_words(mode: SnapshotMode) -> &'static str {
    match mode {
        SnapshotMode::Check => "checked, never written (CI)",
        SnapshotMode::WritePending => "checked; changes written as .snap.new for review",
        SnapshotMode::Accept => "accepted: written as the new truth",
    }
}

/// The human report.
pub fn human(
    summary: &Summary,
    fixtures: usize,
    tools: &[&str],
    mode: SnapshotMode,
    color: bool,
) -> String {
    let paint = |style: Style, text: &str| {
        if color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let red = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    let green = Style::new().fg_color(Some(AnsiColor::Green.into())).bold();
    let bold = Style::new().bold();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} tools, {fixtures} fixtures, {} cases, {} suite checks (snapshots {})",
        paint(bold, "toolgate test:"),
        tools.len(),
        summary.cases.0,
        summary.checks.0,
        mode_words(mode)
    );
    let _ = writeln!(out);
    let width = tools
        .iter()
        .map(|tool| tool.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = write!(out, "  {:width$}", "tool");
    for class in FixtureClass::ALL {
        let _ = write!(out, "  {:>13}", class.as_str());
    }
    let _ = writeln!(out);
    for tool in tools {
        let _ = write!(out, "  {tool:width$}");
        for class in FixtureClass::ALL {
            let cell = match summary
                .tally
                .get(*tool)
                .and_then(|classes| classes.get(&class))
            {
                Some(tally) => {
                    let text = format!("{:>13}", format!("{}/{}", tally.passed, tally.cases));
                    if tally.passed == tally.cases {
                        text
                    } else {
                        paint(red, &text)
                    }
                }
                None => format!("{:>13}", "-"),
            };
            let _ = write!(out, "  {cell}");
        }
        let _ = writeln!(out);
    }
    for failure in &summary.failures {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{} {}",
            paint(red, "FAILED"),
            paint(bold, &failure.name)
        );
        out.push_str(&failure.failure_text());
    }
    let _ = writeln!(out);
    let verdict = if summary.passed() {
        paint(green, "ok")
    } else {
        paint(red, "FAILED")
    };
    let _ = writeln!(
        out,
        "test result: {verdict}. {} of {} cases passed; {} of {} suite checks passed.",
        summary.cases.1, summary.cases.0, summary.checks.1, summary.checks.0
    );
    if summary.cases.0 == 0 {
        let _ = writeln!(out, "no case ran: a run that checks nothing fails");
    }
    out
}
