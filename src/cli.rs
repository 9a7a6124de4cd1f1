//! The command line: verbs, flags and exit codes (0 ok, 1 a contract said no, 2 usage error).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use toolgate_gate::internals::escape_hidden;

use crate::bump::{self, DiffOptions};
use crate::check::{self, CheckOptions};
use crate::error::UsageError;
use crate::lint::command::{self as lint, LintOptions};
use crate::mutants::command::{self as mutate, MutateOptions};
use crate::scale;
use crate::schema_cmd::{self, SchemaOptions};
use crate::test_cmd::{self, TestOptions};

/// Exit code: everything passed / the gate admitted.
pub const EXIT_OK: u8 = 0;
/// Exit code: a contract said no (a rejection, a failing fixture).
pub const EXIT_REJECTED: u8 = 1;
/// Exit code: usage, I/O or configuration error.
pub const EXIT_USAGE: u8 = 2;

/// toolgate: nothing reaches an agent that a contract did not promise.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one raw response through a tool's contract and print exactly what the agent would see.
    ///
    /// stdout holds the agent-visible bytes, one line. Exit 0 admitted, 1 rejected, 2 usage or
    /// configuration error.
    Check(CheckOptions),
    /// Review a contract bump: every change between two versions, four verdicts each proven by a
    /// witness the gate confirms, and every fixture replayed through both.
    ///
    /// Exit 0 when the report ran; 1 when a verdict named by --fail-on is true or undecided;
    /// 2 on usage or configuration errors.
    Diff(DiffOptions),
    /// Check every contract version for what makes a contract looser than a gate should be:
    /// open objects, unbounded strings and arrays, promised fields that can carry a whole object.
    ///
    /// Exit 0 when every finding is accepted in contracts/<tool>/lint.yaml; 1 otherwise (or an
    /// accepted finding is no longer found); 2 on usage or configuration errors.
    Lint(LintOptions),
    /// Derive near-miss mutants from every admitted accepted and legacy fixture, for every
    /// contract version, and run them through the gate: survivors, misplaced rejections, leaks.
    ///
    /// Exit 0 when nothing leaks and every survivor is accepted in fixtures/<tool>/survivors.yaml;
    /// 1 otherwise (or an accepted survivor no longer survives); 2 on usage or configuration
    /// errors.
    Mutate(MutateOptions),
    /// Print the JSON Schema of a file toolgate reads or writes: report, contract, sidecar, request.
    Schema(SchemaOptions),
    /// Run every fixture of every tool through the gate: expectations, leakage, snapshots.
    ///
    /// Exit 0 all passed, 1 any failure, 2 a usage or configuration error (a fixture, sidecar or
    /// contract that cannot be loaded).
    Test(TestOptions),
    /// Write a synthetic repository of TOOLS tools x FIXTURES fixtures, with snapshots, for
    /// measuring the harness at scale (see BENCHMARKS.md).
    #[command(hide = true)]
    GenerateScaleSuite {
        /// The folder to create.
        dir: PathBuf,
        /// How many tools.
        #[arg(long, default_value_t = 200)]
        tools: usize,
        /// How many fixtures per tool.
        #[arg(long, default_value_t = 50)]
        fixtures: usize,
    },
}

/// Parses the command line and runs the verb; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = io::stdout();
    let stderr = io::stderr();
    let result = match cli.command {
        Command::Check(options) => check::run(
            &options,
            io::stdin().lock(),
            &mut stdout.lock(),
            &mut stderr.lock(),
        )
        .map(|admitted| if admitted { EXIT_OK } else { EXIT_REJECTED }),
        Command::GenerateScaleSuite {
            dir,
            tools,
            fixtures,
        } => scale::generate(&dir, tools, fixtures).map(|()| EXIT_OK),
        Command::Diff(mut options) => {
            options.color =
                anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never;
            bump::run(&options, &mut io::stdout())
        }
        Command::Lint(options) => lint::run(&options, &mut io::stdout()),
        Command::Schema(options) => schema_cmd::run(&options, &mut io::stdout()),
        Command::Mutate(options) => mutate::run(&options, &mut io::stdout()),
        Command::Test(mut options) => {
            options.color =
                anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never;
            // Unlocked handles: a worker (or a library it calls) may write to stderr while the
            // run is in progress, and must never wait on a lock this thread holds.
            test_cmd::run(&options, &mut io::stdout(), &mut io::stderr())
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => report(&error),
    }
}

fn report(error: &UsageError) -> ExitCode {
    let mut stderr = io::stderr().lock();
    for line in error.message().lines() {
        // Messages name files and values from a repository nobody vetted.
        let _ = writeln!(stderr, "toolgate: error: {}", escape_hidden(line));
    }
    ExitCode::from(EXIT_USAGE)
}
