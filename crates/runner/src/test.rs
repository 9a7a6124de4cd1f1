//! `toolgate test`: every fixture of every tool through the gate, without cargo. The CI gate.
//!
//! Tools run on parallel workers, one tool's cases at a time in memory, and their results are
//! streamed in order into a [`Summary`], so memory does not grow with the fixture count.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use toolgate_gate::internals::escape_hidden;

use crate::parallel::in_parallel;
use crate::progress::{Progress, ProgressMode};
use crate::report::{self, Summary};
use crate::snapshot::{self, SnapshotMode};
use crate::suite::{Case, CheckKind, RunContext, Scope, Suite};
use toolgate_repo::Status;
use toolgate_repo::{CaseResult, Problem, ProblemKind};
use toolgate_repo::{Choice, OutputMode, open_output_file};
use toolgate_repo::{UsageError, write_output};

toolgate_repo::choices! {
    /// How the run reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum ReportFormat {
        /// A table per tool and class, then each failure with its diff and how to reproduce it.
        #[default]
        Human = "human",
        /// A stable machine summary (`toolgate schema report` is its JSON Schema).
        Json = "json",
        /// JUnit XML, for CI dashboards (valid against Jenkins' junit-10.xsd).
        Junit = "junit",
        /// A pull-request comment: a summary line, the table, each failure folded with its diff.
        Markdown = "markdown",
        /// GitHub Actions workflow commands: each failure annotates its fixture in the pull request.
        Github = "github",
        /// SARIF 2.1.0, for GitHub code scanning: each failure's problems at their files and lines.
        Sarif = "sarif",
    }
}

/// One `--report FORMAT=FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFile {
    /// The format.
    pub format: ReportFormat,
    /// Where to write it.
    pub path: PathBuf,
}

impl FromStr for ReportFile {
    type Err = String;

    /// `FORMAT=FILE`, e.g. `junit=toolgate.xml`.
    fn from_str(text: &str) -> Result<ReportFile, String> {
        let (format, path) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: write FORMAT=FILE, e.g. junit=toolgate.xml"))?;
        let format = ReportFormat::from_name_ignoring_case(format).ok_or_else(|| {
            format!(
                "{format:?} is not a report format ({})",
                ReportFormat::names()
            )
        })?;
        if path.is_empty() {
            return Err(format!("{text:?}: no file after `=`"));
        }
        Ok(ReportFile {
            format,
            path: PathBuf::from(path),
        })
    }
}

/// What `toolgate test` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct TestConfig {
    /// Run only cases and checks whose name contains one of these, e.g. `review_status::near-miss`
    /// (with `exact`: whose name is one of these).
    pub filters: Vec<String>,
    /// Leave out cases and checks whose name contains one of these (with `exact`: is one).
    pub skip: Vec<String>,
    /// Filters and `skip` match whole names.
    pub exact: bool,
    /// List the names of the cases and checks that would run, one per line, and run nothing.
    pub list: bool,
    /// The repository root, holding contracts/, fixtures/ and snapshots/.
    pub root: PathBuf,
    /// The report format on standard output.
    pub format: ReportFormat,
    /// Reports also written to files.
    pub reports: Vec<ReportFile>,
    /// Write new and changed snapshots as accepted, remove stale ones, and lock new contract
    /// versions (a locked version is never rewritten).
    pub accept: bool,
    /// Colour the human report.
    pub color: bool,
    /// How the run shows on stderr that it is going: a bar on a terminal, a line every ten
    /// seconds in a CI log.
    pub progress: ProgressMode,
}

impl TestConfig {
    /// Whether a case or check called `name` runs, as cargo test's filters, `--skip` and
    /// `--exact` decide.
    pub fn selects(&self, name: &str) -> bool {
        (self.filters.is_empty()
            || self
                .filters
                .iter()
                .any(|pattern| self.matches(pattern, name)))
            && !self.skips(name)
    }

    /// Whether a `--skip` pattern names `name` (left out on purpose, not by a filter).
    pub fn skips(&self, name: &str) -> bool {
        self.skip.iter().any(|pattern| self.matches(pattern, name))
    }

    fn matches(&self, pattern: &str, name: &str) -> bool {
        if self.exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    }
}

/// Runs the suite and writes the report to `out`; configuration problems (a fixture, sidecar or
/// contract that could not be loaded) are also written to `err`, one `toolgate: error:` line each.
/// Returns whether everything passed, something failed, or a configuration problem stopped a case.
pub fn run(
    options: &TestConfig,
    out: &mut impl Write,
    err: &mut impl Write,
) -> Result<Status, UsageError> {
    let started = Instant::now();
    let mode = if options.accept {
        SnapshotMode::ACCEPT
    } else {
        SnapshotMode::from_env().map_err(UsageError::new)?
    };
    // Diffs are coloured once, when the case runs: only when nothing but the terminal reads them.
    let color =
        options.color && options.format == ReportFormat::Human && options.reports.is_empty();
    let formats: Vec<ReportFormat> = std::iter::once(options.format)
        .chain(options.reports.iter().map(|report| report.format))
        .collect();
    let mut summary = Summary::new(
        formats.contains(&ReportFormat::Junit) || formats.contains(&ReportFormat::Json),
    );
    summary.started_at = Some(std::time::SystemTime::now());

    // The repository-wide checks list the tools; each tool is then discovered, run and checked
    // on its own, tools in parallel, so the run holds only the tools in flight and memory does not
    // grow with the number of fixtures.
    let repository = Suite::discover_scoped(&options.root, Scope::Repository)?;
    if options.list {
        return list(options, &repository, out);
    }
    let context = RunContext {
        root: repository.root().clone(),
        mode,
        references: snapshot::references_file(),
        color,
        withheld: Default::default(),
    };
    let tools: Vec<String> = repository
        .tool_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let fixture_count = repository.fixture_count();
    let one_tool = tools.len() == 1;
    // A tool's verdicts (each flagged as a case or a check), whether a check the filters left
    // out found it unproven, and how long the tool took.
    type ToolRun = (Vec<(bool, CaseResult)>, Option<String>, Duration);
    let mut progress = Progress::new(options.progress, tools.len() as u64);
    let run_tool = |tool: &String| -> Result<ToolRun, UsageError> {
        let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.clone()))?;
        let cases: Vec<&Case> = suite
            .cases
            .iter()
            .filter(|case| options.selects(&case.name))
            .collect();
        let started = Instant::now();
        let mut verdicts = Vec::with_capacity(cases.len() + 4);
        if one_tool {
            progress.cases_total(cases.len() as u64);
            run_cases(&cases, &context, |verdict| {
                progress.case_done();
                verdicts.push((true, verdict))
            });
        } else {
            verdicts.extend(cases.iter().map(|case| {
                let verdict = timed(|| case.run(&context));
                progress.case_done();
                (true, verdict)
            }));
        }
        let checks = suite.checks();
        verdicts.extend(
            checks
                .iter()
                .filter(|check| options.selects(&check.name))
                .map(|check| (false, timed(|| suite.run_check(check, &context)))),
        );
        // `--accept` with a filter that leaves out `<tool>::proven` locks nothing unproven all
        // the same: the check runs, and only what `--accept` may lock hears of it.
        let unproven = checks
            .iter()
            .filter(|check| {
                options.accept && check.kind == CheckKind::Proven && !options.selects(&check.name)
            })
            .find_map(|check| suite.run_check(check, &context).skipped)
            .map(|_| tool.clone());
        Ok((verdicts, unproven, started.elapsed()))
    };
    let mut failed = None;
    let tool_panicked = |tool: &String, message: String| {
        let mut verdict = CaseResult::named(format!("{tool}::run"));
        verdict.tool = Some(tool.clone());
        verdict.problems.push(panic_problem(&message));
        Ok((vec![(false, verdict)], None, Duration::ZERO))
    };
    // The tools at least one selected case of ran for: what `--accept <filter>` accepted.
    let mut accepted_tools: Vec<String> = Vec::new();
    // Tools unproven by a check the filters left out: `--accept` must not lock them either.
    let mut unproven_unselected: Vec<String> = Vec::new();
    in_parallel(&tools, run_tool, tool_panicked, |result| match result {
        Ok((verdicts, unproven, took)) => {
            unproven_unselected.extend(unproven);
            if let Some(tool) = verdicts
                .iter()
                .find_map(|(is_case, verdict)| verdict.tool.clone().filter(|_| *is_case))
            {
                summary.tool_durations.push((tool, took));
            }
            for (is_case, verdict) in verdicts {
                if is_case {
                    if let Some(tool) = &verdict.tool
                        && !accepted_tools.contains(tool)
                    {
                        accepted_tools.push(tool.clone());
                    }
                    summary.record_case(verdict)
                } else {
                    summary.record_check(verdict)
                }
            }
            progress.tool_done(|| {
                format!(
                    "{} cases, {} checks, {} failed so far",
                    summary.cases.0,
                    summary.checks.0,
                    summary.failures.len()
                )
            });
        }
        Err(error) => failed = failed.take().or(Some(error)),
    });
    if let Some(error) = failed {
        return Err(error);
    }
    // What the tools showed decides what `--accept` may lock.
    let context = RunContext {
        withheld: withheld(&summary, &unproven_unselected),
        ..context
    };
    for check in repository
        .checks()
        .iter()
        .filter(|check| options.selects(&check.name))
    {
        summary.record_check(timed(|| repository.run_check(check, &context)));
    }
    progress.finish();
    if options.accept && !options.selects(LOCK_CHECK) {
        lock_accepted_tools(
            &repository,
            &accepted_tools,
            &context.withheld,
            &mut summary,
        );
    } else if !options.selects(LOCK_CHECK) && !options.skips(LOCK_CHECK) {
        // A filtered run still refuses an unlocked or changed version of a tool it tested:
        // `CI=true toolgate test <tool>` must not pass what the whole suite would fail.
        let problems = repository.lock_problems_of(&accepted_tools);
        if !problems.is_empty() {
            let mut result = CaseResult::named(LOCK_CHECK);
            result.problems = problems;
            summary.record_check(result);
        }
    }
    summary.elapsed = started.elapsed();
    summary.long_run = options.progress.long_run();

    // A filtered run reports the tools it selected a case of, not every tool of the repository.
    let filtered = !options.filters.is_empty() || !options.skip.is_empty();
    let tools: Vec<&str> = tools
        .iter()
        .map(String::as_str)
        .filter(|tool| !filtered || summary.tally.contains_key(*tool))
        .collect();
    let rendering = Rendering {
        summary: &summary,
        fixture_count,
        tools: &tools,
        mode,
        root: &options.root,
    };
    write_report_files(options, &rendering, &formats)?;
    write_output(out, rendering.render(options.format, color)?.as_bytes())?;
    // Each configuration problem once, however many cases it stopped.
    let mut configuration: Vec<&Problem> = Vec::new();
    for problem in summary
        .failures
        .iter()
        .flat_map(|verdict| &verdict.problems)
        .filter(|problem| problem.kind.is_configuration())
    {
        if !configuration
            .iter()
            .any(|seen| seen.message == problem.message)
        {
            configuration.push(problem);
        }
    }
    for problem in configuration {
        // stderr is for the person or the CI log; if it is gone there is no one left to tell.
        let _ = writeln!(err, "toolgate: error: {}", escape_hidden(&problem.message));
    }
    Ok(summary.status())
}

/// The repository-wide check that reads and writes the contract lock.
const LOCK_CHECK: &str = "suite::contract_lock";

/// `--accept` with a filter that leaves out the lock check: the new versions of the tools it
/// accepted are locked all the same (never another tool's), and the report says which, and that
/// the rest of the lock was not checked.
fn lock_accepted_tools(
    repository: &Suite,
    accepted: &[String],
    withheld: &BTreeMap<String, String>,
    summary: &mut Summary,
) {
    let (lockable, refused): (Vec<String>, Vec<String>) = accepted
        .iter()
        .cloned()
        .partition(|tool| !withheld.contains_key(tool));
    let (locked, mut problems) = repository.lock_new_versions(&lockable);
    for tool in refused {
        problems.push(Problem::new(
            ProblemKind::Lock,
            format!(
                "{tool}'s new versions are not locked: {}; `--accept` locks only a version whose suite passes on a real response",
                withheld[&tool]
            ),
        ));
    }
    if !problems.is_empty() {
        let mut result = CaseResult::named(LOCK_CHECK);
        result.problems = problems;
        summary.record_check(result);
    }
    let lock = "contracts/contracts.lock";
    let note = if locked.is_empty() {
        format!(
            "--accept with a filter: no new version of the tools accepted ({}) to lock; {lock} was not checked: `toolgate test --accept` with no filter checks it and locks every new version",
            if accepted.is_empty() {
                "none".to_owned()
            } else {
                accepted.join(", ")
            }
        )
    } else {
        format!(
            "--accept with a filter: locked {} in {lock}; the rest of the lock was not checked: `toolgate test --accept` with no filter checks it and locks every new version",
            locked.join(", ")
        )
    };
    summary.notices.push(note.clone());
    summary.notes.push(note);
}

/// The tools whose new versions `--accept` must not lock, each with the reason: a tool with a
/// failing case or check in this run, or an unproven one (only responses built from the schema).
fn withheld(summary: &Summary, unproven_unselected: &[String]) -> BTreeMap<String, String> {
    let mut withheld = BTreeMap::new();
    for failure in &summary.failures {
        if let Some(tool) = &failure.tool {
            withheld
                .entry(tool.clone())
                .or_insert_with(|| format!("its suite fails in this run (`{}`)", failure.name));
        }
    }
    for tool in summary.unproven_tools.iter().chain(unproven_unselected) {
        withheld.entry(tool.clone()).or_insert_with(|| {
            "it is unproven: every accepted fixture is a response built from the schema, not one the upstream sent".to_owned()
        });
    }
    withheld
}

/// What every report of one run is rendered from.
struct Rendering<'a> {
    summary: &'a Summary,
    fixture_count: usize,
    tools: &'a [&'a str],
    mode: SnapshotMode,
    root: &'a Path,
}

impl Rendering<'_> {
    fn render(&self, format: ReportFormat, color: bool) -> Result<String, UsageError> {
        let Rendering {
            summary,
            fixture_count,
            tools,
            mode,
            root,
        } = *self;
        Ok(match format {
            ReportFormat::Human => report::human(summary, fixture_count, tools, mode, color),
            ReportFormat::Json => report::json::render(summary, fixture_count, mode),
            ReportFormat::Junit => report::junit::render(summary).map_err(UsageError::new)?,
            ReportFormat::Markdown => report::markdown::render(summary, fixture_count, tools, mode),
            ReportFormat::Github => report::github::render(summary, root),
            ReportFormat::Sarif => report::sarif::render(summary, root),
        })
    }
}

/// Writes every `--report FORMAT=FILE`, and in GitHub Actions appends the markdown report to the
/// job summary: the annotations mark the files, the summary gives the whole picture.
fn write_report_files(
    options: &TestConfig,
    rendering: &Rendering<'_>,
    formats: &[ReportFormat],
) -> Result<(), UsageError> {
    let write = |path: &Path, mode: OutputMode, what: &str, text: &str| {
        open_output_file(path, mode, what)?
            .write_all(text.as_bytes())
            .map_err(|error| UsageError::io(path, &format!("write {what}"), &error))
    };
    for report in &options.reports {
        let text = rendering.render(report.format, false)?;
        let what = format!("the {} report", report.format.name());
        write(&report.path, OutputMode::Replace, &what, &text)?;
    }
    if formats.contains(&ReportFormat::Github)
        && let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|path| !path.is_empty())
    {
        let markdown = rendering.render(ReportFormat::Markdown, false)?;
        write(
            Path::new(&path),
            OutputMode::Append,
            "the job summary (GITHUB_STEP_SUMMARY)",
            &markdown,
        )?;
    }
    Ok(())
}

/// `--list`: the names that would run, in run order, as `cargo test -- --list` prints them.
fn list(
    options: &TestConfig,
    repository: &Suite,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let mut text = String::new();
    let mut count = 0;
    let mut add = |name: &str| {
        if options.selects(name) {
            text.push_str(&escape_hidden(name));
            text.push_str(": test\n");
            count += 1;
        }
    };
    for tool in repository.tool_names() {
        let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.to_owned()))?;
        suite.cases.iter().for_each(|case| add(&case.name));
        suite.checks().iter().for_each(|check| add(&check.name));
    }
    repository
        .checks()
        .iter()
        .for_each(|check| add(&check.name));
    text.push_str(&format!("\n{}\n", toolgate_repo::plural(count, "test")));
    write_output(out, text.as_bytes())?;
    Ok(Status::Passed)
}

/// Runs `work`, recording how long it took in its verdict.
fn timed(work: impl FnOnce() -> CaseResult) -> CaseResult {
    let started = Instant::now();
    let mut verdict = work();
    verdict.duration = started.elapsed();
    verdict
}

/// Runs cases on every core and hands their verdicts to `sink` in case order. A case that panics
/// fails with the panic's message; it never stops or hangs the run.
fn run_cases(cases: &[&Case], context: &RunContext, sink: impl FnMut(CaseResult)) {
    in_parallel(
        cases,
        |case| timed(|| case.run(context)),
        |case, message| {
            let mut verdict = CaseResult::named(&case.name);
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
