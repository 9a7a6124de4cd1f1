//! The human report: a table per tool and class, then every failure with its reason, diff and
//! the command that reproduces it, then one result line.

use std::fmt::Write as _;

use toolgate_gate::internals::escape_hidden;

use super::{Summary, mode_words, slowest_tools};
use crate::snapshot::SnapshotMode;
use toolgate_repo::FixtureClass;
use toolgate_repo::text::{Tone, paint};

/// The human report.
pub(crate) fn render(
    summary: &Summary,
    fixtures: usize,
    tools: &[&str],
    mode: SnapshotMode,
    color: bool,
) -> String {
    let paint = |tone: Tone, text: &str| paint(color, tone, text);
    let (red, green, bold) = (Tone::Bad, Tone::Good, Tone::Strong);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} {}, {fixtures} fixtures, {} cases, {} suite checks (snapshots {})",
        paint(bold, "toolgate test:"),
        tools.len(),
        if tools.len() == 1 { "tool" } else { "tools" },
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
        let _ = write!(out, "  {:width$}", escape_hidden(tool));
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
            paint(bold, &escape_hidden(&failure.name))
        );
        out.push_str(&failure.failure_text());
    }
    if !summary.notes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", paint(bold, "notes"));
        for note in &summary.notes {
            let _ = writeln!(out, "  {}", escape_hidden(note));
        }
    }
    let _ = writeln!(out);
    let verdict = if summary.passed() {
        paint(green, "ok")
    } else if summary.failures.is_empty() && !summary.unproven.is_empty() {
        paint(red, "UNPROVEN")
    } else {
        paint(red, "FAILED")
    };
    let _ = writeln!(
        out,
        "test result: {verdict}. {} of {} cases passed; {} of {} suite checks passed.",
        summary.cases.1, summary.cases.0, summary.checks.1, summary.checks.0
    );
    if summary.cases_skipped > 0 {
        let _ = writeln!(
            out,
            "{} cases were not run because their contract does not compile; fix it (see the failing `::contracts` check)",
            summary.cases_skipped
        );
    }
    for unproven in &summary.unproven {
        let _ = writeln!(out, "{}", escape_hidden(unproven));
    }
    if summary.cases.0 == 0 {
        let _ = writeln!(out, "no case ran: a run that checks nothing fails");
    }
    if let Some(slowest) = slowest_tools(summary) {
        let _ = writeln!(out, "{slowest}");
    }
    out
}
