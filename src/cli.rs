//! The command line: verbs, flags and exit codes (0 ok, 1 a contract said no, 2 usage error).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use toolgate_gate::internals::escape_hidden;

use toolgate_mcp::ProxyConfig;
use toolgate_repo::Status;
use toolgate_repo::UsageError;

use crate::args::{
    DiffArgs, DoorArgs, HookAgent, LintArgs, McpProxyArgs, MutateArgs, NewArgs, PinArgs, Terminal,
    TestArgs,
};
use crate::check::{self, CheckOptions};
use crate::schema::{self, SchemaOptions};

/// toolgate: nothing reaches an agent that a contract did not promise.
#[derive(Debug, Parser)]
#[command(name = "toolgate", version = env!("TOOLGATE_VERSION"), about, long_about = None, max_term_width = 100)]
pub(crate) struct Cli {
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
    /// The audit log as evidence: `verify FILE [--public-key KEY]` follows its hash chains (and
    /// signatures) and names the first line edited, deleted, reordered or cut; `keygen FILE`
    /// makes the signing key for --audit-key.
    ///
    /// Exit 0 intact (or the key written), 1 a broken line, 2 on usage or I/O errors.
    #[command(subcommand)]
    Audit(crate::audit::AuditCommand),
    /// Write the repository's contracts (every locked version, argument contracts, pins, the
    /// lock) as one file, toolgate-contracts-<digest>.tar.gz, for a ConfigMap, a Secret, an OCI
    /// artifact or an image layer; every front loads it with --contracts BUNDLE.
    ///
    /// Prints the path and the bundle's digest. `--verify BUNDLE` reads one as the fronts do.
    /// Exit 0 written (or intact), 1 a bundle --verify refuses, 2 on usage or configuration
    /// errors (a version the lock does not hold as it is, a bundle over 1 MiB).
    Bundle(crate::bundle::BundleOptions),
    /// Review a contract bump: every change between two versions, four verdicts each proven by a
    /// witness the gate confirms, and every fixture replayed through both.
    ///
    /// Exit 0 when the report ran; 1 when a verdict named by --fail-on is true or undecided;
    /// 2 on usage or configuration errors.
    Diff(DiffArgs),
    /// Check every contract version for what makes a contract looser than a gate should be:
    /// open objects, unbounded strings and arrays, promised fields that can carry a whole object.
    ///
    /// Exit 0 when every finding is accepted in contracts/<tool>/lint.yaml; 1 otherwise (or an
    /// accepted finding is no longer found); 2 on usage or configuration errors.
    Lint(LintArgs),
    /// Stand in front of an MCP server (stdio or Streamable HTTP, either protocol era): tool
    /// results pass only as their contracts admit, rebuilt by projection; every other route for
    /// data is closed unless allowed.
    ///
    /// An MCP host runs `toolgate mcp-proxy --root DIR -- <server command> [args...]` in place of
    /// the server's command, or reaches `toolgate mcp-proxy --listen ADDR …` over HTTP; the
    /// server may be a URL. Exit 0 when the host closes the connection (or the listener is
    /// stopped); 2 when the repository, the server command or the address cannot be used.
    McpProxy(Box<McpProxyArgs>),
    /// Serve Envoy's external processing filter (envoy.service.ext_proc.v3) over gRPC: each MCP
    /// exchange Envoy carries is decided as `mcp-proxy` decides it, the upstream's raw bytes
    /// replaced by the gate's result.
    ///
    /// Configure Envoy's ext_proc filter with BUFFERED request and response bodies and
    /// failure_mode_allow: false (the guide, "Inside Envoy"). Runs until SIGTERM or SIGINT;
    /// exit 2 when the contracts or the address cannot be used.
    ExtProc(Box<DoorArgs>),
    /// Serve agentgateway's ExtMcp service (CheckRequest, CheckResponse) over gRPC: argument
    /// contracts before a call is forwarded, the call's result decided and rebuilt.
    ///
    /// Map the tool's name (and where it can, the request id and arguments) into the hook's
    /// metadata_context (the guide, "Inside agentgateway"). Runs until SIGTERM or SIGINT; exit 2
    /// when the contracts or the address cannot be used.
    ExtMcp(Box<DoorArgs>),
    /// Decide one event of a coding agent's tool hook (Claude Code, Codex): the event's JSON on
    /// stdin, the answer on stdout, as the agent's hook protocol says.
    ///
    /// Configure it as a command hook for PreToolUse and PostToolUse on the MCP tools with
    /// contracts (the guide, "Where your agents already run"). Always exits 0 with an answer:
    /// what cannot be decided (a broken contract, an unreadable event, the --deadline passed) is
    /// answered with the fixed failure, the reason on stderr.
    #[command(subcommand)]
    Hook(HookAgent),
    /// Derive near-miss mutants from every admitted accepted and legacy fixture, for every
    /// contract version, and run them through the gate: survivors, misplaced rejections, leaks.
    ///
    /// Exit 0 when nothing leaks and every survivor is accepted in fixtures/<tool>/survivors.yaml;
    /// 1 otherwise (or an accepted survivor no longer survives); 2 on usage or configuration
    /// errors.
    Mutate(MutateArgs),
    /// Scaffold a contract in one command: from one operation of an OpenAPI description, from
    /// samples of a tool's output, or for every tool of an MCP server; closed and bounded, every
    /// assumption listed in its contract.yaml, then linted and mutated.
    ///
    /// `toolgate new TOOL --from-openapi SPEC --operation ID`, `toolgate new TOOL --from-sample
    /// FILE...`, or `toolgate new --from-mcp -- SERVER COMMAND`. Never overwrites a contract.
    /// Exit 0 when nothing is left to decide, 1 when the printed to-do list is not empty, 2 on
    /// usage or configuration errors.
    New(NewArgs),
    /// Pin an MCP server's tools as they were reviewed: each tool with a result contract gets
    /// contracts/TOOL/upstream.pin.json (its title, description, input and output schemas and
    /// annotations, and their SHA-256). `toolgate mcp-proxy` then withholds a pinned tool whose
    /// descriptor changed (a "rug pull") and fails every call to it.
    ///
    /// `toolgate pin -- SERVER COMMAND` (or URL) writes the pins; `--check` compares instead.
    /// Exit 0 written or unchanged, 1 a pinned tool changed or is gone (--check), 2 on usage or
    /// configuration errors.
    Pin(PinArgs),
    /// Decide again, exactly, a response a front kept (--retain): from its audit line (or the
    /// raw bytes' digest) and the store, under the same contract digest, request and time; print
    /// exactly what the agent saw, and say whether it is what the audit line names.
    ///
    /// `toolgate reproduce --audit audit.jsonl:42 --store DIR [--explain] [--save-fixture
    /// near-miss/NAME]`. Exit 0 admitted, 1 rejected, 2 usage or configuration error (a store
    /// that holds no such decision, a secret context value not supplied).
    Reproduce(crate::reproduce::ReproduceOptions),
    /// Print the JSON Schema of a file toolgate reads or writes: report, contract, sidecar, request.
    Schema(SchemaOptions),
    /// Serve the gate to another process, for languages without a binding: one JSON object per
    /// line in (a tool, its raw bytes base64-encoded, the request), one decision per line out.
    ///
    /// `toolgate serve --stdio --root DIR`. Contracts are compiled once, on first use. A line
    /// that cannot be decided is answered with an error object, and serving goes on. Exit 0
    /// when the input ends; 2 when the repository cannot be used.
    Serve(crate::serve::ServeOptions),
    /// Run every fixture of every tool through the gate: expectations, leakage, snapshots.
    ///
    /// Exit 0 all passed, 1 any failure, 2 a usage or configuration error (a fixture, sidecar or
    /// contract that cannot be loaded).
    #[command(after_long_help = TEST_ENVIRONMENT)]
    Test(TestArgs),
    /// Print the shell code that completes toolgate's verbs, options and tool names (from the
    /// contracts/ folder you are in) by asking the binary; source it at shell start, e.g. `source
    /// <(toolgate completions bash)` in ~/.bashrc, `source <(toolgate completions zsh)` in
    /// ~/.zshrc, `toolgate completions fish | source` in config.fish.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (toolgate.1 and one per verb) into DIR; the committed ones are in
    /// doc/man/.
    #[command(hide = true)]
    GenerateMan {
        /// The folder to write them into.
        dir: PathBuf,
    },
    /// Write the user guide's command-line reference (every verb's `--help`, as markdown) to
    /// FILE; the committed one is doc/guide/src/reference/cli.md.
    #[command(hide = true)]
    GenerateCliReference {
        /// The file to write.
        file: PathBuf,
    },
}

/// What `toolgate test --help` says about the environment and the files it writes.
const TEST_ENVIRONMENT: &str = "\
Snapshots (snapshots/<tool>/<class>/<case>@vN.snap) follow insta's rules:
  locally                   a missing or changed snapshot fails its case and a pending
                            <case>@vN.snap.new is written beside it: accept everything
                            with --accept (or, where cargo-insta is installed, review
                            them one by one with `cargo insta review`)
  CI=true (or TF_BUILD)     compare only: nothing is written or deleted, a leftover
                            .snap.new fails the run (CI=false or CI=0 is not CI)
  INSTA_UPDATE=VALUE        auto (the default, as above), new (always .snap.new), always
                            (write the .snap and pass), unseen (write new snapshots,
                            .snap.new for changed ones), force (rewrite even matching
                            ones), no (write nothing)
  INSTA_FORCE_PASS=1        a snapshot difference does not fail its case; it is written
                            for review and listed under notes (cargo insta test sets it)
  INSTA_SNAPSHOT_REFERENCES_FILE=PATH
                            every snapshot the run uses is named in PATH, so
                            `cargo insta test --unreferenced=delete|reject` spares them
--accept also removes stale and pending snapshot files and locks new contract versions in
contracts/contracts.lock; CI never does.

Progress: a bar on a terminal; in CI or piped, a line on stderr every ten seconds of a long run
(cases, tools, rate, about how long is left), TOOLGATE_PROGRESS_EVERY=SECONDS to change that (0:
none). A run that long ends its report with its slowest tools.

Exit codes: 0 all passed, 1 a case or check failed, 2 a fixture, sidecar, contract or
request file could not be loaded, or a usage error.";

/// The command line as the committed documents describe it (the man pages, the guide's
/// reference): named by the release, not the commit, so they stay current from one commit to the
/// next; no `help` verb, which `--help` already is.
fn documented_command() -> clap::Command {
    Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true)
}

/// Every man page: `toolgate.1`, then one per visible verb (`toolgate-test.1`, ...), as
/// clap_mangen renders them.
pub(crate) fn man_pages() -> Result<Vec<(String, Vec<u8>)>, io::Error> {
    let mut command = documented_command();
    command.build();
    let mut pages = Vec::new();
    let mut pending = vec![command];
    while let Some(command) = pending.pop() {
        pending.extend(
            command
                .get_subcommands()
                .filter(|subcommand| !subcommand.is_hide_set())
                .cloned(),
        );
        let synopsis = synopsis(&command);
        let man = clap_mangen::Man::new(command.override_usage(synopsis));
        let mut page = Vec::new();
        man.render(&mut page)?;
        pages.push((man.get_filename(), page));
    }
    pages.sort();
    Ok(pages)
}

/// A man page's synopsis: every visible option with its value's placeholder
/// (`[--root <DIR>]`, where clap_mangen writes `[--root]`), then the positional arguments.
fn synopsis(command: &clap::Command) -> String {
    let name = command
        .get_bin_name()
        .map_or_else(|| command.get_name().to_owned(), str::to_owned);
    let mut words = vec![name];
    let placeholder = |arg: &clap::Arg| -> String {
        match arg.get_value_names() {
            Some(names) => names
                .iter()
                .map(|name| format!("<{name}>"))
                .collect::<Vec<_>>()
                .join(" "),
            None => format!("<{}>", arg.get_id().as_str().to_uppercase()),
        }
    };
    for arg in command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !arg.is_positional())
    {
        let mut flag = match (arg.get_short(), arg.get_long()) {
            (Some(short), Some(long)) => format!("-{short}|--{long}"),
            (Some(short), None) => format!("-{short}"),
            (None, Some(long)) => format!("--{long}"),
            (None, None) => continue,
        };
        if arg.get_action().takes_values() {
            flag = format!("{flag} {}", placeholder(arg));
        }
        words.push(if arg.is_required_set() {
            flag
        } else {
            format!("[{flag}]")
        });
    }
    for arg in command.get_positionals().filter(|arg| !arg.is_hide_set()) {
        let many = matches!(arg.get_num_args(), Some(range) if range.max_values() > 1);
        let mut value = placeholder(arg);
        if many {
            value.push_str("...");
        }
        if arg.is_last_set() {
            value = format!("-- {value}");
        }
        words.push(if arg.is_required_set() {
            value
        } else {
            format!("[{value}]")
        });
    }
    if command.has_subcommands() {
        words.push("<COMMAND>".to_owned());
    }
    words.join(" ")
}

/// The guide's command-line reference: each visible verb's long help, as the terminal shows it,
/// one section per verb in the order `toolgate --help` lists them.
pub(crate) fn cli_reference() -> String {
    let mut command = documented_command().term_width(100);
    command.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the command line's own definition (`cargo run -- generate-cli-reference \
         doc/guide/src/reference/cli.md`; a test fails when it is out of date). The same text is \
         `toolgate VERB --help`, and the man pages are in `doc/man/`.\n",
    );
    let mut pending = vec![(String::from("toolgate"), command)];
    while let Some((name, mut command)) = pending.pop() {
        let help = command.render_long_help().to_string();
        out.push_str(&format!(
            "\n## `{name}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
        let subcommands: Vec<_> = command
            .get_subcommands()
            .filter(|subcommand| !subcommand.is_hide_set())
            .map(|subcommand| {
                (
                    format!("{name} {}", subcommand.get_name()),
                    subcommand.clone(),
                )
            })
            .collect();
        pending.extend(subcommands.into_iter().rev());
    }
    out
}

/// Parses the command line and runs the verb; returns the process exit code.
pub(crate) fn main() -> ExitCode {
    // A shell asking for completions (TOOLGATE_COMPLETE=SHELL, set by the script `toolgate
    // completions SHELL` prints) is answered here, and the process ends.
    clap_complete::CompleteEnv::with_factory(Cli::command)
        .var(crate::completion::VARIABLE)
        .complete();
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
        .map(Status::passed_if),
        Command::Reproduce(options) => {
            crate::reproduce::run(&options, &mut stdout.lock(), &mut stderr.lock())
                .map(Status::passed_if)
        }
        Command::Completions { shell } => crate::completion::registration(shell)
            .and_then(|script| toolgate_repo::write_output(&mut stdout.lock(), &script))
            .map(|()| Status::Passed),
        Command::GenerateMan { dir } => man_pages()
            .and_then(|pages| {
                std::fs::create_dir_all(&dir)?;
                for (name, page) in pages {
                    std::fs::write(dir.join(name), page)?;
                }
                Ok(())
            })
            .map(|()| Status::Passed)
            .map_err(|error| UsageError::io(&dir, "write the man pages", &error)),
        Command::GenerateCliReference { file } => std::fs::write(&file, cli_reference())
            .map(|()| Status::Passed)
            .map_err(|error| UsageError::io(&file, "write the command-line reference", &error)),
        Command::Audit(command) => crate::audit::run(&command, &mut io::stdout().lock()),
        Command::Diff(args) => {
            args.resolved()
                .and_then(|args| match args.upstream_check(Terminal::detect()) {
                    Some(check) => crate::upstream::run(check, &mut io::stdout()),
                    None => {
                        toolgate_diff::run(&args.into_config(Terminal::detect()), &mut io::stdout())
                    }
                })
        }
        Command::McpProxy(args) => {
            ProxyConfig::try_from(*args).and_then(|config| toolgate_mcp::run(&config))
        }
        Command::ExtProc(args) => args
            .into_serve(toolgate_doors::Hook::ExtProc)
            .and_then(toolgate_doors::run),
        Command::ExtMcp(args) => args
            .into_serve(toolgate_doors::Hook::ExtMcp)
            .and_then(toolgate_doors::run),
        Command::Hook(agent) => toolgate_doors::agent::run(&agent.into_run()),
        Command::Lint(args) => {
            toolgate_analyze::lint::run(&args.into_config(Terminal::detect()), &mut io::stdout())
        }
        Command::Schema(options) => schema::run(&options, &mut io::stdout()),
        Command::Bundle(options) => crate::bundle::run(&options, &mut io::stdout()),
        Command::Serve(options) => {
            crate::serve::run(&options, io::stdin().lock(), &mut io::stdout().lock())
        }
        Command::New(args) => crate::new::run(&args.into(), &mut io::stdout()),
        Command::Mutate(args) => {
            toolgate_runner::mutate(&args.into_config(Terminal::detect()), &mut io::stdout())
        }
        Command::Pin(args) => toolgate_mcp::pin(&args.into_config()).and_then(|report| {
            print_surface(&report)?;
            Ok(if report.drifted() {
                Status::Failed
            } else {
                Status::Passed
            })
        }),
        Command::Test(args) => {
            let pins = args.pin_check();
            // Unlocked handles: a worker (or a library it calls) may write to stderr while the
            // run is in progress, and must never wait on a lock this thread holds.
            let suite = toolgate_runner::test(
                &args.into_config(Terminal::detect()),
                &mut io::stdout(),
                &mut io::stderr(),
            );
            match (suite, pins) {
                (Ok(status), Some(pins)) => toolgate_mcp::pin(&pins).and_then(|report| {
                    print_surface(&report)?;
                    Ok(if report.drifted() {
                        Status::Failed
                    } else {
                        status
                    })
                }),
                (suite, _) => suite,
            }
        }
    };
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => report(&error),
    }
}

/// How a server's tools stand against their pins, one line per tool (names from a server
/// nobody vetted, escaped).
fn print_surface(report: &toolgate_mcp::SurfaceReport) -> Result<(), UsageError> {
    let mut text = String::new();
    for line in report.lines() {
        text.push_str(&escape_hidden(&line));
        text.push('\n');
    }
    toolgate_repo::write_output(&mut io::stdout().lock(), text.as_bytes())
}

fn report(error: &UsageError) -> ExitCode {
    let mut stderr = io::stderr().lock();
    for line in error.message().lines() {
        // Messages name files and values from a repository nobody vetted.
        let _ = writeln!(stderr, "toolgate: error: {}", escape_hidden(line));
    }
    ExitCode::from(Status::Unusable.code())
}
