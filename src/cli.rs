//! The command line: verbs, flags and exit codes (0 ok, 1 a contract said no, 2 usage error).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::check::{self, CheckOptions};
use crate::error::UsageError;
use crate::scale;
use crate::test_cmd::{self, ReportFormat, TestOptions};

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
    Check(CheckArgs),
    /// Run every fixture of every tool through the gate: expectations, leakage, snapshots.
    ///
    /// Exit 0 all passed, 1 any failure, 2 a usage or configuration error (a fixture, sidecar or
    /// contract that cannot be loaded).
    Test(TestArgs),
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

#[derive(Debug, Args)]
struct TestArgs {
    /// Run only cases and checks whose name contains this text, e.g. `review_status::near-miss`.
    filter: Option<String>,
    /// The repository root, holding contracts/, fixtures/ and snapshots/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Write new and changed snapshots as accepted, remove stale ones, and lock new contract
    /// versions (a locked version is never rewritten).
    #[arg(long)]
    accept: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A table per tool and class, then each failure with its diff and how to reproduce it.
    Human,
    /// A stable machine summary.
    Json,
    /// JUnit XML, for CI dashboards.
    Junit,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The tool whose contract decides (a folder under contracts/).
    tool: String,
    /// The raw response file, byte for byte as received; standard input when absent or `-`.
    raw: Option<PathBuf>,
    /// The outstanding request: JSON {"request_id", "now" (RFC 3339), "context": {...}}.
    #[arg(long, value_name = "FILE")]
    request: Option<PathBuf>,
    /// The outstanding request's id (overrides the request file's).
    #[arg(long, value_name = "ID")]
    request_id: Option<String>,
    /// The decision time, RFC 3339 (overrides the request file's; default: the current time).
    #[arg(long, value_name = "RFC3339")]
    now: Option<String>,
    /// The upstream status the adapter saw (e.g. 503).
    #[arg(long, value_name = "STATUS")]
    upstream_status: Option<u16>,
    /// The contract version folder to use (default: the newest).
    #[arg(long, value_name = "vN")]
    contract_version: Option<String>,
    /// The repository root, holding contracts/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Explain the decision on stderr: layer, rule, where, the validator's message, how to fix it.
    #[arg(long)]
    explain: bool,
    /// Append the decision's audit event (one JSON line) to this file.
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Keep the raw bytes in this folder, named by their SHA-256.
    #[arg(long, value_name = "DIR")]
    retain: Option<PathBuf>,
}

/// Parses the command line and runs the verb; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = io::stdout();
    let stderr = io::stderr();
    let result = match cli.command {
        Command::Check(args) => check::run(
            &args.into(),
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
        Command::Test(args) => {
            let color = anstream::AutoStream::choice(&io::stdout()) != anstream::ColorChoice::Never;
            let options = TestOptions {
                root: args.root,
                filter: args.filter,
                format: match args.format {
                    Format::Human => ReportFormat::Human,
                    Format::Json => ReportFormat::Json,
                    Format::Junit => ReportFormat::Junit,
                },
                accept: args.accept,
                color,
            };
            test_cmd::run(&options, &mut stdout.lock(), &mut stderr.lock())
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
        let _ = writeln!(stderr, "toolgate: error: {line}");
    }
    ExitCode::from(EXIT_USAGE)
}

impl From<CheckArgs> for CheckOptions {
    fn from(args: CheckArgs) -> CheckOptions {
        CheckOptions {
            tool: args.tool,
            raw: args.raw,
            request: args.request,
            request_id: args.request_id,
            now: args.now,
            upstream_status: args.upstream_status,
            contract_version: args.contract_version,
            root: args.root,
            explain: args.explain,
            audit: args.audit,
            retain: args.retain,
        }
    }
}
