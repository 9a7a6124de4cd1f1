//! `toolgate test`: every fixture of every tool through the gate, without cargo. The CI gate.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use toolgate_gate::internals::escape_hidden;

use crate::error::{UsageError, write_output};
use crate::report::{self, Summary};
use crate::snapshot::{self, SnapshotMode};
use crate::suite::{Case, RunContext, Scope, Suite};
use crate::verdict::{Problem, ProblemKind, Verdict};

/// How the run reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// A table per tool and class, then each failure with its diff and how to reproduce it.
    #[default]
    Human,
    /// A stable machine summary.
    Json,
    /// JUnit XML, for CI dashboards.
    Junit,
}

/// What `toolgate test` was asked to do: its command-line arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TestOptions {
    /// Run only cases and checks whose name contains this text, e.g. `review_status::near-miss`.
    pub filter: Option<String>,
    /// The repository root, holding contracts/, fixtures/ and snapshots/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,
    /// Write new and changed snapshots as accepted, remove stale ones, and lock new contract
    /// versions (a locked version is never rewritten).
    #[arg(long)]
    pub accept: bool,
    /// Colour the human report (decided from the terminal, not a flag).
    #[arg(skip)]
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
    let mode = if options.accept {
        SnapshotMode::ACCEPT
    } else {
        SnapshotMode::from_env().map_err(UsageError::new)?
    };
    let color = options.color && options.format == ReportFormat::Human;
    let selected = |name: &str| {
        options
            .filter
            .as_deref()
            .is_none_or(|filter| name.contains(filter))
    };
    let mut summary = Summary::new(options.format == ReportFormat::Junit);

    // The repository-wide checks list the tools; each tool is then discovered, run and checked
    // on its own, tools in parallel, so the run holds only the tools in flight and memory does not
    // grow with the number of fixtures.
    let repository = Suite::discover_scoped(&options.root, Scope::Repository)?;
    let context = RunContext {
        root: repository.root().clone(),
        mode,
        references: snapshot::references_file(),
        color,
    };
    let tools: Vec<String> = repository
        .tool_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let fixture_count = repository.fixture_count();
    let one_tool = tools.len() == 1;
    let run_tool = |tool: &String| -> Result<Vec<(bool, Verdict)>, UsageError> {
        let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.clone()))?;
        let cases: Vec<&Case> = suite
            .cases
            .iter()
            .filter(|case| selected(&case.name))
            .collect();
        let mut verdicts = Vec::with_capacity(cases.len() + 4);
        if one_tool {
            run_cases(&cases, &context, |verdict| verdicts.push((true, verdict)));
        } else {
            verdicts.extend(cases.iter().map(|case| (true, case.run(&context))));
        }
        let checks = suite.checks();
        verdicts.extend(
            checks
                .iter()
                .filter(|check| selected(&check.name))
                .map(|check| (false, suite.run_check(check, &context))),
        );
        Ok(verdicts)
    };
    let mut failed = None;
    let tool_panicked = |tool: &String, message: String| {
        let mut verdict = Verdict::named(format!("{tool}::run"));
        verdict.tool = Some(tool.clone());
        verdict.problems.push(panic_problem(&message));
        Ok(vec![(false, verdict)])
    };
    in_parallel(&tools, run_tool, tool_panicked, |result| match result {
        Ok(verdicts) => {
            for (is_case, verdict) in verdicts {
                if is_case {
                    summary.record_case(verdict)
                } else {
                    summary.record_check(verdict)
                }
            }
        }
        Err(error) => failed = failed.take().or(Some(error)),
    });
    if let Some(error) = failed {
        return Err(error);
    }
    for check in repository
        .checks()
        .iter()
        .filter(|check| selected(&check.name))
    {
        summary.record_check(repository.run_check(check, &context));
    }

    let text = match options.format {
        ReportFormat::Human => {
            let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
            report::human(&summary, fixture_count, &tools, mode, color)
        }
        ReportFormat::Json => report::json::render(&summary, fixture_count, mode),
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
        let _ = writeln!(err, "toolgate: error: {}", escape_hidden(&problem.message));
    }
    Ok(summary.exit_code())
}

/// Runs cases on every core and hands their verdicts to `sink` in case order. A case that panics
/// fails with the panic's message; it never stops or hangs the run.
fn run_cases(cases: &[&Case], context: &RunContext, sink: impl FnMut(Verdict)) {
    in_parallel(
        cases,
        |case| case.run(context),
        |case, message| {
            let mut verdict = Verdict::named(&case.name);
            verdict.tool = Some(case.fixture.tool.clone());
            verdict.class = Some(case.fixture.class);
            verdict.version = case.version.clone();
            verdict.problems.push(panic_problem(&message));
            verdict
        },
        sink,
    );
}

/// The problem a panic inside the harness becomes: a configuration-class failure naming the bug.
fn panic_problem(message: &str) -> Problem {
    Problem::new(
        ProblemKind::Load,
        format!(
            "toolgate panicked here ({message}); this is a bug in toolgate: please report it with the fixture that caused it"
        ),
    )
}

/// Applies `work` to every item on every core and hands the results to `sink` in item order,
/// holding only the results that finished ahead of their turn. A panic in `work` becomes
/// `on_panic`'s result for that item, so every item gets a result and no lock is ever held while
/// waiting for a worker.
fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    on_panic: impl Fn(&T, String) -> R + Sync,
    mut sink: impl FnMut(R),
) {
    let guarded = |item: &T| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)))
            .unwrap_or_else(|payload| on_panic(item, panic_message(payload.as_ref())))
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(items.len());
    if workers <= 1 {
        items.iter().for_each(|item| sink(guarded(item)));
        return;
    }
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (sender, next, guarded) = (sender.clone(), &next, &guarded);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { return };
                    if sender.send((index, guarded(item))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        let mut early = BTreeMap::new();
        let mut turn = 0;
        for (index, result) in receiver {
            early.insert(index, result);
            while let Some(result) = early.remove(&turn) {
                sink(result);
                turn += 1;
            }
        }
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_item_gets_its_own_result_and_the_rest_run_in_order() {
        let items: Vec<usize> = (0..40).collect();
        let mut seen = Vec::new();
        in_parallel(
            &items,
            |item| {
                assert!(item % 7 != 3, "item {item} breaks");
                format!("ok {item}")
            },
            |item, message| format!("panicked {item}: {message}"),
            |result| seen.push(result),
        );
        assert_eq!(seen.len(), 40);
        assert_eq!(seen[0], "ok 0");
        assert_eq!(seen[3], "panicked 3: item 3 breaks");
        assert_eq!(seen[39], "ok 39");
    }
}
