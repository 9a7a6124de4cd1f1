//! Every fixture as its own libtest trial (`tool::class::case`, `@vN` when several versions
//! apply), plus the suite checks, so `cargo test -- review_status::near-miss`, `--list`, `--exact`
//! and `cargo nextest run --partition hash:1/3` all work on fixtures.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use toolgate_repo::CaseResult;
use toolgate_runner::{RunContext, Scope, SnapshotMode, Suite, references_file};

fn main() -> ExitCode {
    let arguments = Arguments::from_args();
    let root = std::env::var_os("TOOLGATE_ROOT")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    // cargo-nextest runs each test in a process of its own (`--exact <name>`): discover only
    // the part of the repository that test lives in, not every tool's contracts and fixtures.
    let scope = match (&arguments.filter, arguments.exact, arguments.list) {
        (Some(name), true, false) => match name.split_once("::") {
            Some(("suite", _)) => Scope::Repository,
            Some((tool, _)) => Scope::Tool(tool.to_owned()),
            None => Scope::Everything,
        },
        _ => Scope::Everything,
    };
    let suite = match Suite::discover_scoped(&root, scope) {
        Ok(suite) => Arc::new(suite),
        Err(error) => {
            eprintln!("toolgate: error: {error}");
            return ExitCode::from(2);
        }
    };
    let color = anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never;
    let mode = match SnapshotMode::from_env() {
        Ok(mode) => mode,
        Err(error) => {
            eprintln!("toolgate: error: {error}");
            return ExitCode::from(2);
        }
    };
    let context = Arc::new(RunContext {
        root: suite.root().clone(),
        mode,
        references: references_file(),
        color,
        withheld: Default::default(),
    });
    let mut trials = Vec::new();
    for case in suite.cases.iter().cloned() {
        let context = Arc::clone(&context);
        // A case whose contract does not compile is not run (its `<tool>::contracts` trial
        // fails, once): it shows as ignored, never as passed.
        let blocked = case.blocked().is_some();
        trials.push(
            Trial::test(case.name.clone(), move || outcome(case.run(&context)))
                .with_ignored_flag(blocked),
        );
    }
    for check in suite.checks() {
        let (suite, context) = (Arc::clone(&suite), Arc::clone(&context));
        trials.push(Trial::test(check.name.clone(), move || {
            outcome(suite.run_check(&check, &context))
        }));
    }
    libtest_mimic::run(&arguments, trials).exit_code()
}

fn outcome(verdict: CaseResult) -> Result<(), Failed> {
    if verdict.passed() {
        Ok(())
    } else if let (true, Some(why)) = (verdict.problems.is_empty(), &verdict.skipped) {
        // Unproven: not a pass, and said as such.
        Err(why.clone().into())
    } else {
        Err(verdict.failure_text().into())
    }
}
