//! `toolgate test`: every fixture of every tool through the gate, without cargo. The CI gate.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::error::{UsageError, write_output};
use crate::report::{self, Summary};
use crate::snapshot::SnapshotMode;
use crate::suite::{Case, RunContext, Suite};
use crate::verdict::Verdict;

/// How the run reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// A table per tool and class, then each failure with its reason, diff and reproduction.
    #[default]
    Human,
    /// A stable machine summary.
    Json,
    /// JUnit XML.
    Junit,
}

/// What `toolgate test` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct TestOptions {
    /// The repository root.
    pub root: PathBuf,
    /// Run only cases and checks whose name contains this.
    pub filter: Option<String>,
    /// The report format.
    pub format: ReportFormat,
    /// Write snapshots (and lock new contract versions) instead of checking them.
    pub accept: bool,
    /// Colour the human report.
    pub color: bool,
}

/// Runs the suite and writes the report to `out`; configuration problems (a fixture, sidecar or
/// contract that could not be loaded) are also written to `err`, one `toolgate: error:` line each.
/// Returns the exit code: 0 all passed, 1 a failure, 2 a configuration problem.
pub fn run(
    options: &TestOptions,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<u8, UsageError> {
    let suite = Suite::discover(&options.root)?;
    let mode = if options.accept {
        SnapshotMode::Accept
    } else {
        SnapshotMode::from_env()
    };
    let color = options.color && options.format == ReportFormat::Human;
    let context = RunContext {
        root: suite.root().to_path_buf(),
        mode,
        color,
    };
    let selected = |name: &str| {
        options
            .filter
            .as_deref()
            .is_none_or(|filter| name.contains(filter))
    };
    let cases: Vec<&Case> = suite
        .cases
        .iter()
        .filter(|case| selected(&case.name))
        .collect();
    let checks: Vec<_> = suite
        .checks()
        .into_iter()
        .filter(|check| selected(&check.name))
        .collect();

    let mut summary = Summary::new(options.format == ReportFormat::Junit);
    run_cases(&cases, &context, |verdict| summary.record_case(verdict));
    for check in &checks {
        summary.record_check(suite.run_check(check, &context));
    }

    let text = match options.format {
        ReportFormat::Human => report::human(
            &summary,
            suite.fixture_count(),
            &suite.tool_names(),
            mode,
            color,
        ),
        ReportFormat::Json => report::json::render(&summary, suite.fixture_count(), mode),
        ReportFormat::Junit => report::junit::render(&summary).map_err(UsageError::new)?,
    };
    write_output(out, text.as_bytes())?;
    let configuration = summary
        .failures
        .iter()
        .flat_map(|verdict| &verdict.problems)
        .filter(|problem| problem.kind.is_configuration());
    for problem in configuration {
        // stderr is for the person or the CI log; if it is gone there is no one left to tell.
        let _ = writeln!(err, "toolgate: error: {}", problem.message);
    }
    Ok(summary.exit_code())
}

/// Runs cases on every core and hands their verdicts to `sink` in case order, holding only the
/// verdicts that finished ahead of their turn.
fn run_cases(cases: &[&Case], context: &RunContext, mut sink: impl FnMut(Verdict)) {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(cases.len());
    if workers <= 1 {
        cases.iter().for_each(|case| sink(case.run(context)));
        return;
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (sender, next) = (sender.clone(), &next);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(index) else { return };
                    if sender.send((index, case.run(context))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut early = BTreeMap::new();
        let mut turn = 0;
        for (index, verdict) in receiver {
            early.insert(index, verdict);
            while let Some(verdict) = early.remove(&turn) {
                sink(verdict);
                turn += 1;
            }
        }
    });
}
