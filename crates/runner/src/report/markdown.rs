//! The pull-request comment (`toolgate test --format markdown`): one summary line, the per-tool
//! table, then every failure folded in a `<details>` block with its reason and diff. Everything
//! from the repository is escaped (`toolgate_repo::text::markdown`), so a fixture name cannot inject markup.

use std::fmt::Write as _;

use super::{Summary, mode_words};
use crate::snapshot::SnapshotMode;
use toolgate_repo::FixtureClass;
use toolgate_repo::text::markdown::{code_in_table, fenced, html, text};

/// The markdown report.
pub(crate) fn render(
    summary: &Summary,
    fixtures: usize,
    tools: &[&str],
    mode: SnapshotMode,
) -> String {
    let mut out = String::new();
    let verdict = if summary.passed() {
        "✅ passed"
    } else if summary.failures.is_empty() && !summary.unproven.is_empty() {
        "⚠️ **UNPROVEN**"
    } else {
        "❌ **FAILED**"
    };
    let _ = writeln!(
        out,
        "**toolgate test**: {verdict} · {} of {} cases · {} of {} suite checks · {fixtures} fixtures (snapshots {})",
        summary.cases.1,
        summary.cases.0,
        summary.checks.1,
        summary.checks.0,
        text(mode_words(mode))
    );
    let _ = writeln!(out);
    let _ = write!(out, "| tool |");
    for class in FixtureClass::ALL {
        let _ = write!(out, " {} |", class.as_str());
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(FixtureClass::ALL.len()));
    for tool in tools {
        let _ = write!(out, "| {} |", code_in_table(tool));
        for class in FixtureClass::ALL {
            let cell = match summary
                .tally
                .get(*tool)
                .and_then(|classes| classes.get(&class))
            {
                Some(tally) if tally.passed == tally.cases => {
                    format!("{}/{}", tally.passed, tally.cases)
                }
                Some(tally) => format!("**{}/{}**", tally.passed, tally.cases),
                None => "-".to_owned(),
            };
            let _ = write!(out, " {cell} |");
        }
        let _ = writeln!(out);
    }
    if !summary.failures.is_empty() {
        let _ = writeln!(out, "\n### Failures ({})\n", summary.failures.len());
        for failure in &summary.failures {
            let lead = failure
                .leading_problem()
                .map(|problem| format!(" — {}", html(&problem.message)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "<details><summary>❌ <code>{}</code>{lead}</summary>\n",
                html(&failure.name)
            );
            let text = anstream::adapter::strip_str(&failure.failure_text()).to_string();
            out.push_str(&fenced("text", &text));
            let _ = writeln!(out, "\n</details>\n");
        }
    }
    if summary.cases_skipped > 0 {
        let _ = writeln!(
            out,
            "\n{} cases were not run because their contract does not compile.",
            summary.cases_skipped
        );
    }
    if !summary.unproven.is_empty() {
        let _ = writeln!(out, "\n### Unproven ({})\n", summary.unproven.len());
        for unproven in &summary.unproven {
            let _ = writeln!(out, "- ⚠️ {}", text(unproven));
        }
    }
    if !summary.notes.is_empty() {
        let _ = writeln!(
            out,
            "\n<details><summary>Notes ({})</summary>\n",
            summary.notes.len()
        );
        for note in &summary.notes {
            let _ = writeln!(out, "- {}", text(note));
        }
        let _ = writeln!(out, "\n</details>");
    }
    out
}
