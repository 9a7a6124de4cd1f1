//! The arguments of the verbs whose work is done by a library crate: clap types here, plain
//! configurations there. The help each flag shows is this file's doc comments; the names and help
//! of a choice (`--format`, `--fail-on`, `--allow`) come from the library's [`Choice`] type.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use toolgate_analyze::lint::LintConfig;
use toolgate_analyze::{Format, LintFormat};
use toolgate_diff::{DiffConfig, DiffFormat, FailOn};
use toolgate_mcp::{ListenLimits, ProxyConfig, Route, parse_timeout};
use toolgate_repo::{Choice, UsageError};
use toolgate_runner::MutateConfig;
use toolgate_runner::{ReportFile, ReportFormat, TestConfig};

/// A value parser offering exactly `T`'s names, each with its help (a one-sentence help without
/// its final period, as clap writes a doc comment).
fn choice<T: Choice>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::ALL.iter().map(|value| {
        let help = value.help();
        let help = help
            .strip_suffix('.')
            .filter(|text| !text.ends_with('.'))
            .unwrap_or(help);
        PossibleValue::new(value.name()).help(help)
    }))
    .try_map(|name| {
        T::from_name(&name).ok_or_else(|| format!("{name:?} is not one of {}", T::names()))
    })
}

/// What `toolgate test` was asked to do: its command-line arguments.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TestArgs {
    /// Run only cases and checks whose name contains one of these, e.g. `review_status::near-miss`
    /// (with --exact: whose name is one of these).
    #[arg(add = crate::completion::tool_names())]
    filters: Vec<String>,
    /// Leave out cases and checks whose name contains this (with --exact: is this); repeatable.
    #[arg(long, value_name = "TEXT")]
    skip: Vec<String>,
    /// Filters and --skip match whole names.
    #[arg(long)]
    exact: bool,
    /// List the names of the cases and checks that would run, one per line, and run nothing.
    #[arg(long)]
    list: bool,
    /// The repository root, holding contracts/, fixtures/ and snapshots/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The report format on standard output.
    #[arg(long, value_parser = choice::<ReportFormat>(), default_value = "human")]
    format: ReportFormat,
    /// Also write a report to a file, e.g. `--report junit=toolgate.xml`; repeatable.
    #[arg(long = "report", value_name = "FORMAT=FILE", value_parser = parse_report)]
    reports: Vec<ReportFile>,
    /// Write new and changed snapshots as accepted, remove stale ones, and lock new contract
    /// versions (a locked version is never rewritten).
    #[arg(long)]
    accept: bool,
    /// Also check a live MCP server's tools against their pins (contracts/TOOL/upstream.pin.json,
    /// written by `toolgate pin`): its command or URL after `--`. A pinned tool whose descriptor
    /// changed, or that the server no longer lists, fails the run.
    #[arg(long, requires = "server")]
    check_pins: bool,
    /// How long the server of --check-pins has to list its tools.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout, requires = "check_pins")]
    pins_timeout: Duration,
    /// The MCP server of --check-pins: its command and arguments, or its URL.
    #[arg(
        last = true,
        value_name = "SERVER COMMAND OR URL",
        requires = "check_pins"
    )]
    server: Vec<OsString>,
}

/// `toolgate pin`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PinArgs {
    /// The repository root, holding contracts/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Compare the server's tools with their pins instead of writing them: exit 1 when a
    /// pinned tool changed or is no longer listed.
    #[arg(long)]
    check: bool,
    /// How long the server has to list its tools (e.g. 30s).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    timeout: Duration,
    /// A header for a server reached over HTTP, as NAME=VARIABLE (the value from the
    /// environment variable); repeatable.
    #[arg(long, value_name = "NAME=VARIABLE")]
    upstream_header: Vec<String>,
    /// The MCP server's command and its arguments, or its Streamable HTTP URL, after `--`.
    #[arg(last = true, required = true, value_name = "SERVER COMMAND OR URL")]
    command: Vec<OsString>,
}

impl PinArgs {
    pub(crate) fn into_config(self) -> toolgate_mcp::PinConfig {
        toolgate_mcp::PinConfig {
            root: self.root,
            check: self.check,
            timeout: self.timeout,
            upstream_headers: self.upstream_header,
            command: self.command,
        }
    }
}

fn parse_report(text: &str) -> Result<ReportFile, String> {
    text.parse()
}

/// What the terminal toolgate runs in allows: colour on stdout, progress on stderr.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Terminal {
    /// stdout is a terminal that takes colour (and `NO_COLOR` is not set).
    pub(crate) color: bool,
    /// A bar where stderr is a terminal a person watches; in CI or piped, a line every ten
    /// seconds of a long run, so a CI log shows life.
    pub(crate) progress: toolgate_runner::ProgressMode,
}

impl Terminal {
    /// Decided from the process's own streams and environment.
    pub(crate) fn detect() -> Terminal {
        use std::io::IsTerminal;
        Terminal {
            color: anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never,
            progress: if std::io::stderr().is_terminal() && !toolgate_runner::running_in_ci() {
                toolgate_runner::ProgressMode::Bar
            } else {
                progress_lines()
            },
        }
    }
}

/// `--replay-limit`: a count of records (at least 1), or `all`.
fn parse_replay_limit(text: &str) -> Result<usize, String> {
    match text.trim() {
        "all" => Ok(usize::MAX),
        count => count
            .parse::<usize>()
            .ok()
            .filter(|count| *count > 0)
            .ok_or_else(|| format!("{text:?} is not a number of records (1 or more) or `all`")),
    }
}

/// `--audit-flush-interval`: a duration from 1ms to [`toolgate_front::MAX_FLUSH_INTERVAL`].
fn parse_flush_interval(text: &str) -> Result<Duration, String> {
    let interval = toolgate_gate::internals::parse_duration(text)?;
    if interval < Duration::from_millis(1) || interval > toolgate_front::MAX_FLUSH_INTERVAL {
        return Err(format!(
            "{text} is not between 1ms and 1s: the lock on the log is let go at each flush, so \
             another writer waits this long at most (say 25ms)"
        ));
    }
    Ok(interval)
}

/// A line every `TOOLGATE_PROGRESS_EVERY` seconds (ten unless set; 0: none).
fn progress_lines() -> toolgate_runner::ProgressMode {
    use toolgate_runner::ProgressMode;
    let Some(setting) = std::env::var_os("TOOLGATE_PROGRESS_EVERY") else {
        return ProgressMode::Lines {
            every: ProgressMode::LINE_EVERY,
        };
    };
    match setting.to_str().map(str::trim).map(str::parse::<f64>) {
        Some(Ok(0.0)) => ProgressMode::Off,
        Some(Ok(seconds)) if seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0 => {
            ProgressMode::Lines {
                every: Duration::from_secs_f64(seconds),
            }
        }
        _ => {
            eprintln!(
                "toolgate: warning: TOOLGATE_PROGRESS_EVERY must be a number of seconds (0 for no progress lines), not {}; using 10",
                toolgate_gate::internals::escape_hidden(&setting.to_string_lossy())
            );
            ProgressMode::Lines {
                every: ProgressMode::LINE_EVERY,
            }
        }
    }
}

impl TestArgs {
    /// The pin check `--check-pins` asks for, if it does.
    pub(crate) fn pin_check(&self) -> Option<toolgate_mcp::PinConfig> {
        self.check_pins.then(|| toolgate_mcp::PinConfig {
            root: self.root.clone(),
            check: true,
            timeout: self.pins_timeout,
            upstream_headers: Vec::new(),
            command: self.server.clone(),
        })
    }

    /// The runner's configuration, with colour and progress as the terminal allows.
    pub(crate) fn into_config(self, terminal: Terminal) -> TestConfig {
        TestConfig {
            filters: self.filters,
            skip: self.skip,
            exact: self.exact,
            list: self.list,
            root: self.root,
            format: self.format,
            reports: self.reports,
            accept: self.accept,
            color: terminal.color,
            progress: terminal.progress,
        }
    }
}

/// What `toolgate diff` was asked to do: its command-line arguments.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DiffArgs {
    /// The tool whose contract versions to compare (a folder under contracts/); also accepted
    /// after `--` (`toolgate diff -- TOOL`), for a name that starts with `-`. With --upstream it
    /// may be left out: every tool is checked.
    #[arg(value_name = "TOOL", add = crate::completion::tool_names())]
    tool: Option<String>,
    /// The older version, e.g. `v1` (default: the second newest).
    from: Option<String>,
    /// The newer version, e.g. `v2` (default: the newest).
    to: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The report format.
    #[arg(long, value_parser = choice::<DiffFormat>(), default_value = "human")]
    format: DiffFormat,
    /// Exit 1 when one of these verdicts is true, or undecided (unknown is not safe):
    /// breaking, loosened, widened, narrowed; or, with --replay, when more of production's
    /// responses than a threshold shift: newly-refused, newly-admitted, output-changed, alone
    /// (any one) or with a threshold ('newly-refused>25', 'newly-refused>0.5%'). Comma-separated.
    #[arg(long, value_parser = FailOn::parse, value_delimiter = ',', value_name = "LIST")]
    fail_on: Vec<FailOn>,
    /// Decide every response production kept of the tool (the folder or s3://BUCKET/PREFIX the
    /// fronts were given with --retain) under both versions: the blast radius, by layer and
    /// code, the first few by digest and JSON pointer, never a value.
    #[arg(long, value_name = "STORE")]
    replay: Option<String>,
    /// The endpoint of an S3-compatible server (default: AWS_ENDPOINT_URL, or Amazon's).
    #[arg(long, value_name = "URL", requires = "replay")]
    endpoint: Option<String>,
    /// The age identity file that opens a sealed store (--retain-recipient).
    #[arg(long, value_name = "FILE", requires = "replay")]
    identity: Option<PathBuf>,
    /// Decide at most this many of the newest responses kept, or `all` (decided in parallel,
    /// on every core).
    #[arg(long, value_name = "N|all", default_value_t = toolgate_diff::DEFAULT_LIMIT, requires = "replay", value_parser = parse_replay_limit)]
    replay_limit: usize,
    /// Skip the proof search that runs before an upstream verdict is reported false (responses
    /// mutated toward the other version, run through both contracts within a time budget).
    #[arg(long)]
    no_search: bool,
    /// Check a live MCP server against the contract (FROM, default the newest version) instead
    /// of comparing two versions: the server's declared outputSchema for TOOL, put in the
    /// contract's place, is TO (`server`). Fails when the server may send what the contract
    /// refuses (`--fail-on loosened`, unless --fail-on says otherwise), does not list TOOL, or,
    /// with --call, answers a call with a result the contract refuses. The server's command or
    /// URL after `--`. Without TOOL, every tool with a result contract (those mcp-proxy would
    /// offer) is checked against one listing, one report each.
    #[arg(long, requires = "server", conflicts_with_all = ["replay", "to"])]
    upstream: bool,
    /// With --upstream: also call TOOL live, with each accepted fixture of its argument
    /// contract (fixtures/TOOL.arguments/accepted/) and each --arguments, and decide each
    /// result as mcp-proxy decides it (under the context of fixtures/TOOL/request.json).
    #[arg(long, requires = "upstream")]
    call: bool,
    /// With --call: one more call's arguments, a JSON object; repeatable.
    #[arg(long, value_name = "JSON", requires = "call")]
    arguments: Vec<String>,
    /// With --upstream: how long the server has to list its tools, and to answer each call.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout, requires = "upstream")]
    timeout: Duration,
    /// With --upstream: a header for a server reached over HTTP, as NAME=VARIABLE (the value from
    /// the environment variable); repeatable.
    #[arg(long, value_name = "NAME=VARIABLE", requires = "upstream")]
    upstream_header: Vec<String>,
    /// The MCP server of --upstream: its command and arguments, or its Streamable HTTP URL.
    /// Without --upstream, what follows `--` is TOOL [FROM] [TO].
    #[arg(last = true, value_name = "SERVER COMMAND OR URL")]
    server: Vec<OsString>,
}

/// A server check (`toolgate diff TOOL --upstream -- SERVER`), as the command line asks it.
pub(crate) struct UpstreamCheck {
    pub(crate) config: DiffConfig,
    pub(crate) call: bool,
    pub(crate) arguments: Vec<String>,
    pub(crate) ask: toolgate_mcp::ServerAsk,
}

impl DiffArgs {
    /// The arguments with TOOL, FROM and TO in place: without --upstream, the words after `--`
    /// are they (`toolgate diff -- TOOL`, for a tool whose name starts with `-`).
    pub(crate) fn resolved(mut self) -> Result<DiffArgs, UsageError> {
        if !self.upstream && !self.server.is_empty() {
            if self.tool.is_some() || self.server.len() > 3 {
                return Err(UsageError::new(
                    "after `--` comes TOOL [FROM] [TO] (or, with --upstream, the server's command or URL): name the tool once",
                ));
            }
            let mut words = std::mem::take(&mut self.server).into_iter().map(|word| {
                word.into_string().map_err(|word| {
                    UsageError::new(format!("{word:?}: a tool or version name is UTF-8"))
                })
            });
            self.tool = words.next().transpose()?;
            self.from = words.next().transpose()?;
            self.to = words.next().transpose()?;
        }
        // With --upstream and no TOOL, every tool with a result contract is checked.
        if self.tool.is_none() && !self.upstream {
            return Err(UsageError::new(
                "name the tool: toolgate diff TOOL [FROM] [TO] (a folder under contracts/)",
            ));
        }
        Ok(self)
    }

    /// The server check this asks for, when it asks for one (`--upstream`).
    pub(crate) fn upstream_check(&self, terminal: Terminal) -> Option<UpstreamCheck> {
        self.upstream.then(|| UpstreamCheck {
            config: self.clone().into_config(terminal),
            call: self.call,
            arguments: self.arguments.clone(),
            ask: toolgate_mcp::ServerAsk {
                command: self.server.clone(),
                upstream_headers: self.upstream_header.clone(),
                timeout: self.timeout,
                calls: Vec::new(),
                who: "toolgate diff --upstream",
            },
        })
    }

    /// The differ's configuration, coloured as the terminal allows.
    pub(crate) fn into_config(self, terminal: Terminal) -> DiffConfig {
        DiffConfig {
            tool: self.tool.unwrap_or_default(),
            from: self.from,
            to: self.to,
            root: self.root,
            format: self.format,
            fail_on: self.fail_on,
            color: terminal.color,
            search: !self.no_search,
            replay: self.replay.map(|store| toolgate_diff::TrafficSource {
                store,
                endpoint: self.endpoint,
                identity: self.identity,
                limit: self.replay_limit,
            }),
        }
    }
}

/// `toolgate lint`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LintArgs {
    /// Only this tool (default: every tool with a contract).
    #[arg(add = crate::completion::tool_names())]
    tool: Option<String>,
    /// The repository root, holding contracts/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The report format.
    #[arg(long, value_parser = choice::<LintFormat>(), default_value = "human")]
    format: LintFormat,
}

impl LintArgs {
    /// The lint's configuration, coloured as the terminal allows.
    pub(crate) fn into_config(self, terminal: Terminal) -> LintConfig {
        LintConfig {
            tool: self.tool,
            root: self.root,
            format: self.format,
            color: terminal.color,
        }
    }
}

/// `toolgate mutate`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct MutateArgs {
    /// Only this tool (default: every tool with a contract).
    #[arg(add = crate::completion::tool_names())]
    tool: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The report format.
    #[arg(long, value_parser = choice::<Format>(), default_value = "human")]
    format: Format,
    /// Write every mutant as a file under DIR, as TOOL/VERSION/CLASS/CASE/MUTATION-N.json,
    /// so the `toolgate check` commands in the report run as printed.
    #[arg(long, value_name = "DIR")]
    emit: Option<PathBuf>,
}

impl MutateArgs {
    /// The mutants' configuration, with colour and progress as the terminal allows.
    pub(crate) fn into_config(self, terminal: Terminal) -> MutateConfig {
        MutateConfig {
            tool: self.tool,
            root: self.root,
            format: self.format,
            emit: self.emit,
            color: terminal.color,
            progress: terminal.progress,
        }
    }
}

/// Retention: where the responses a front decided are kept (`mcp-proxy`, `serve`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RetentionArgs {
    /// Keep the raw bytes of every refused response, with what decided it (contract digest,
    /// request, time, upstream status, context), in STORE: a folder (created private), or
    /// s3://BUCKET/PREFIX (credentials and region from the environment). `toolgate reproduce`
    /// decides one again.
    #[arg(long, value_name = "STORE")]
    retain: Option<String>,
    /// Keep this share of admitted responses too, chosen by their bytes (0.01 or 1%).
    #[arg(long, value_name = "RATE", default_value = "0", requires = "retain", value_parser = toolgate_store::parse_rate)]
    retain_admitted: f64,
    /// The most the store may use, counted as its files take disk (blocks and inodes, not
    /// lengths); the oldest go first past it (e.g. 512MiB, 10GiB).
    #[arg(long, value_name = "BYTES", default_value = "1GiB", requires = "retain", value_parser = toolgate_store::parse_bytes)]
    retain_budget: u64,
    /// The most records the store may hold; the oldest go first past it.
    #[arg(long, value_name = "N", default_value_t = toolgate_store::DEFAULT_MAX_RECORDS, requires = "retain", value_parser = clap::value_parser!(u64).range(1..).map(|n| n as usize))]
    retain_max_records: usize,
    /// The oldest a kept response may be (e.g. 7d, 30d).
    #[arg(long, value_name = "DURATION", default_value = "30d", requires = "retain", value_parser = toolgate_store::parse_age)]
    retain_max_age: Duration,
    /// A trusted-context key kept as its keyed digest only (a token, a customer's data);
    /// repeatable; needs --retain-secret-key. `toolgate reproduce` then needs its value, and
    /// checks it is the one that decided.
    #[arg(long, value_name = "KEY", requires = "retain")]
    retain_secret: Vec<String>,
    /// The key --retain-secret values are kept under (HMAC-SHA-256): a file of at least 32
    /// random bytes (`head -c 32 /dev/urandom > retain.key`), kept private; without it a
    /// tenant or an e-mail could be found again by hashing guesses.
    #[arg(long, value_name = "FILE", requires = "retain_secret")]
    retain_secret_key: Option<PathBuf>,
    /// Seal everything kept to this age public key (age1…), so the machine that keeps it cannot
    /// read it back; repeatable. `toolgate reproduce --identity FILE` opens it.
    #[arg(long, value_name = "AGE_RECIPIENT", requires = "retain")]
    retain_recipient: Vec<String>,
    /// The endpoint of an S3-compatible server (default: AWS_ENDPOINT_URL, or Amazon's).
    #[arg(long, value_name = "URL", requires = "retain")]
    retain_endpoint: Option<String>,
    /// Log refusals without what quotes the response (the validator's messages, free-text
    /// member names): on by default where --retain-recipient seals the records, since logs are
    /// read more widely than the sealed store; `--redact-values=false` to log them whole.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    redact_values: Option<bool>,
}

impl RetentionArgs {
    /// Whether refusals are logged redacted: as asked, else wherever records are sealed.
    pub(crate) fn redact_values(&self) -> bool {
        self.redact_values
            .unwrap_or(!self.retain_recipient.is_empty())
    }

    /// The configuration, or `None` without --retain; `Err` when the secret key file cannot be
    /// read.
    pub(crate) fn config(&self) -> Result<Option<toolgate_store::RetentionConfig>, UsageError> {
        let Some(store) = self.retain.clone() else {
            return Ok(None);
        };
        let secret_key = self
            .retain_secret_key
            .as_deref()
            .map(read_secret_key)
            .transpose()?;
        Ok(Some(toolgate_store::RetentionConfig {
            admitted_rate: self.retain_admitted,
            budget_bytes: self.retain_budget,
            max_records: self.retain_max_records,
            max_age: self.retain_max_age,
            secret_keys: self.retain_secret.clone(),
            secret_key,
            recipients: self.retain_recipient.clone(),
            endpoint: self.retain_endpoint.clone(),
            ..toolgate_store::RetentionConfig::new(store)
        }))
    }
}

/// Rolling a contract version out (`mcp-proxy`, `serve`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RolloutArgs {
    /// Decide every response with this version too (vN: each tool that has it; TOOL=vN: one
    /// tool's), never enforced: a tool given one enforces its newest other version. Both outcomes
    /// are in the audit line; a disagreement is always retained. Repeatable.
    #[arg(long, value_name = "[TOOL=]vN")]
    pub(crate) shadow: Vec<String>,
    /// Enforce this version in place of each tool's newest (vN: each tool that has it; TOOL=vN:
    /// one tool's): a rollback to an older version though a newer one is published, alone or
    /// beside a --shadow of the newer one. Repeatable.
    #[arg(long, value_name = "[TOOL=]vN")]
    pub(crate) enforce: Vec<String>,
    /// enforce (the default), or observe: decide and audit, and pass the upstream's responses on
    /// unchanged (report-only; refused in CI).
    #[arg(long, value_enum, default_value_t = Mode::Enforce)]
    pub(crate) mode: Mode,
}

impl RolloutArgs {
    /// Whether the front only observes.
    pub(crate) fn observe(&self) -> bool {
        self.mode == Mode::Observe
    }
}

/// `--caller-rate-unavailable`: what a shared rate limit does while its store is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum RateStoreFailure {
    /// Refuse (503, Retry-After): no caller passes a limit nobody can check.
    #[default]
    Closed,
    /// Each replica's own bucket meanwhile.
    Local,
}

/// How a front treats what the gate decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Mode {
    /// The agent sees what the contract admits, rebuilt, or the fixed failure.
    #[default]
    Enforce,
    /// Report-only: decided and audited, and the upstream's own result passed on unchanged,
    /// refused ones included. Said loudly at start, refused in CI, never a default.
    Observe,
}

/// What a front reports of itself: Prometheus metrics, and OpenTelemetry over OTLP.
#[derive(Debug, Clone, clap::Args)]
struct TelemetryArgs {
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464; port 0: any free
    /// port, printed). `mcp-proxy --listen` serves them at its own /metrics without this (with
    /// it, they move to ADDR); `serve` answers them to a `{"op": "metrics"}` line too.
    #[arg(long, value_name = "ADDR", value_parser = toolgate_mcp::parse_address)]
    metrics: Option<std::net::SocketAddr>,
    /// Trace every tool call and export it over OTLP/HTTP to this collector: its base URL (e.g. http://127.0.0.1:4318; /v1/traces and
    /// /v1/logs are added). Default: OTEL_EXPORTER_OTLP_ENDPOINT; off when neither is set.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// http/protobuf or http/json (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).
    #[arg(long, value_name = "PROTOCOL", value_parser = toolgate_telemetry::OtlpProtocol::parse)]
    otlp_protocol: Option<toolgate_telemetry::OtlpProtocol>,
    /// The share of calls traced (0.1 or 10%), whatever hosts send: calls without a trace
    /// context at random, calls a host sampled by their trace id; a host's unsampled
    /// `traceparent` is never traced.
    #[arg(long, value_name = "RATIO", default_value = "1", value_parser = toolgate_store::parse_rate)]
    trace_sample: f64,
    /// Export every audit event as an OTLP log record too, in its call's trace (about 1 µs a
    /// call more; the --audit file is the complete record either way).
    #[arg(long)]
    otlp_audit_logs: bool,
}

impl TelemetryArgs {
    /// Where traces go, if anywhere: the flag, else the OpenTelemetry environment variables.
    fn tracing(
        &self,
        service: &str,
    ) -> Result<Option<toolgate_telemetry::TracingConfig>, UsageError> {
        let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let Some(endpoint) = self
            .otlp_endpoint
            .clone()
            .or_else(|| variable("OTEL_EXPORTER_OTLP_ENDPOINT"))
        else {
            return Ok(None);
        };
        let protocol = match (self.otlp_protocol, variable("OTEL_EXPORTER_OTLP_PROTOCOL")) {
            (Some(protocol), _) => protocol,
            (None, Some(text)) => toolgate_telemetry::OtlpProtocol::parse(&text)
                .map_err(|why| UsageError::new(format!("OTEL_EXPORTER_OTLP_PROTOCOL: {why}")))?,
            (None, None) => toolgate_telemetry::OtlpProtocol::default(),
        };
        Ok(Some(toolgate_telemetry::TracingConfig {
            endpoint,
            protocol,
            sample_ratio: self.trace_sample,
            audit_logs: self.otlp_audit_logs,
            service_name: variable("OTEL_SERVICE_NAME").unwrap_or_else(|| service.to_owned()),
            timeout: Duration::from_secs(10),
        }))
    }
}

/// What every production front is opened with (`mcp-proxy`, `serve`): its audit log,
/// retention, rollout and telemetry, one flattened set of flags read into one
/// [`FrontConfig`](toolgate_front::FrontConfig).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FrontArgs {
    /// Append every decision's audit event (one JSON line each, hash-chained) to this file; `-`
    /// is stdout where the front leaves it free (`mcp-proxy --listen`: a container's log).
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Sign the audit log with this Ed25519 private key (PKCS#8 PEM, from `toolgate audit
    /// keygen`): a checkpoint line every 1,024 lines, within a second, and at stop, each signing
    /// the chain up to it; `toolgate audit verify --public-key` then proves no line was rewritten.
    #[arg(long, value_name = "FILE", requires = "audit")]
    audit_key: Option<PathBuf>,
    /// Hold audit lines back for at most this long (at most 1s) and write them together: one
    /// `write` for a burst of calls instead of one a call. Lines not yet written when the
    /// process is killed (SIGKILL, a crash) are lost; a stop (SIGTERM, end of input) writes
    /// them. Without it each line is in the file before its answer goes.
    #[arg(long, value_name = "DURATION", requires = "audit", value_parser = parse_flush_interval)]
    audit_flush_interval: Option<Duration>,
    #[command(flatten)]
    retention: RetentionArgs,
    #[command(flatten)]
    rollout: RolloutArgs,
    #[command(flatten)]
    telemetry: TelemetryArgs,
}

impl FrontArgs {
    /// The front's configuration; `service` names it in traces unless `OTEL_SERVICE_NAME` does.
    /// The runner (what the front says of itself) is the front's to set.
    pub(crate) fn config(&self, service: &str) -> Result<toolgate_front::FrontConfig, UsageError> {
        Ok(toolgate_front::FrontConfig {
            audit: self.audit.clone(),
            audit_key: self.audit_key.clone(),
            audit_flush_interval: self.audit_flush_interval,
            redact_values: self.retention.redact_values(),
            retention: self.retention.config()?,
            shadow: self.rollout.shadow.clone(),
            enforce: self.rollout.enforce.clone(),
            observe: self.rollout.observe(),
            metrics: self.telemetry.metrics,
            tracing: self.telemetry.tracing(service)?,
            runner: toolgate_front::Runner::default(),
        })
    }
}

/// `toolgate mcp-proxy`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct McpProxyArgs {
    /// The contracts: a repository root holding contracts/, or a bundle `toolgate bundle`
    /// wrote (read whole and checked against its manifest and lock before anything is served).
    #[arg(
        long,
        visible_alias = "contracts",
        value_name = "DIR|BUNDLE",
        default_value = "."
    )]
    root: PathBuf,
    /// How long a request may wait for the upstream before it is answered with the fixed failure
    /// (e.g. 30s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    timeout: Duration,
    /// The longest message read from either side (default: twice the largest contract's
    /// max_bytes and 64 KiB, at least 1 MiB).
    #[arg(long, value_name = "BYTES")]
    max_line_bytes: Option<usize>,
    /// Open a route for data that is closed by default; repeatable. Its messages then pass
    /// unchanged and ungated.
    #[arg(long, value_parser = choice::<Route>(), value_name = "ROUTE")]
    allow: Vec<Route>,
    /// The operator's trusted context: a JSON file `{"<tool>": {"<key>": <value>}}` holding every
    /// key a contract's rules read that a caller's arguments may not supply (a membership list,
    /// a lookup table). Re-read whenever it changes.
    #[arg(long, value_name = "FILE")]
    context: Option<PathBuf>,
    /// Serve hosts over Streamable HTTP on this address (`POST /mcp`, with `/healthz` and
    /// `/readyz`) instead of over stdio; e.g. 127.0.0.1:8080 (port 0: any free port, printed).
    #[arg(long, value_name = "ADDR", value_parser = toolgate_mcp::parse_address)]
    listen: Option<std::net::SocketAddr>,
    /// An `Origin` the HTTP listener accepts (a browser page's) beyond the loopback ones a
    /// loopback listener accepts; repeatable. Any other Origin is refused with 403 (DNS
    /// rebinding), as is, on a loopback listener, a Host that is not a loopback name.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    allow_origin: Vec<String>,
    /// Listen on an address other than loopback although the listener authenticates no host.
    /// Without it, such a --listen is refused: every call is forwarded with the upstream's
    /// credential, so whoever reaches the port calls the upstream's tools as you. Give it only
    /// where something else decides who reaches the port (a network policy, an authenticating
    /// proxy in front).
    #[arg(long, requires = "listen", conflicts_with = "auth")]
    insecure_no_auth: bool,
    /// Make the HTTP listener an OAuth 2.1 resource server: a YAML file naming the resource,
    /// the authorization server, its JWKS (a file or an https URL) and which scopes may call
    /// which tool (the user guide, doc/guide/src/mcp.md, "Who may call"). Every POST then needs a bearer token; the
    /// protected resource metadata is served at /.well-known/oauth-protected-resource.
    #[arg(long, value_name = "FILE", requires = "listen")]
    auth: Option<PathBuf>,
    /// Each caller's request rate (a token bucket: N/s, N/m or N/h, bursts of N): its token's
    /// subject with --auth, its address otherwise. Past it, 429 with Retry-After.
    #[arg(long, value_name = "RATE", requires = "listen", value_parser = toolgate_mcp::parse_caller_rate)]
    caller_rate: Option<toolgate_mcp::RateLimit>,
    /// Keep --caller-rate in Redis or Valkey (redis://[:PASSWORD@]HOST:PORT[/DB], rediss:// for
    /// TLS), shared by every replica: N replicas then hold a caller to the rate, not N times it.
    /// Connected at start (a store that cannot be reached is a configuration error).
    #[arg(long, value_name = "URL", requires = "caller_rate")]
    caller_rate_store: Option<String>,
    /// What a shared --caller-rate does while its store cannot be asked: closed (refuse with 503
    /// and Retry-After, the default: no caller passes a limit nobody can check) or local (each
    /// replica's own bucket meanwhile: N replicas, N times the rate).
    #[arg(long, value_enum, default_value_t = RateStoreFailure::Closed, requires = "caller_rate_store")]
    caller_rate_unavailable: RateStoreFailure,
    /// A file holding the bearer token a scraper must send for the listener's own /metrics
    /// (Prometheus' `bearer_token_file`). Under --auth, /metrics is served on the listener's
    /// port only with one (else on --metrics ADDR alone): it names tools, versions and counts.
    #[arg(long, value_name = "FILE", requires = "listen")]
    metrics_token_file: Option<PathBuf>,
    /// The most connections the HTTP listener holds at once; one more is answered 503 and
    /// closed.
    #[arg(long, value_name = "N", default_value_t = ListenLimits::default().max_connections, requires = "listen", value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_connections: usize,
    /// The most HTTP requests read or answered at once (each holds at most --max-line-bytes of
    /// body and of answer); the rest wait their turn up to --body-timeout, then get 503.
    #[arg(long, value_name = "N", default_value_t = ListenLimits::default().max_requests_in_flight, requires = "listen", value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
    max_requests_in_flight: usize,
    /// The threads the HTTP runtime runs on (the listener, and the client of an HTTP
    /// upstream); one per core by default. Where the proxy shares a few cores with its upstream
    /// and clients, 1 spends less CPU per call (no task handed between threads).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    http_threads: Option<usize>,
    /// How often the contracts (--contracts, the bundle or folder) are looked at for a change,
    /// to reload them without a restart (a mounted ConfigMap changes in place); `0s` reloads on
    /// SIGHUP only. A reload compiles the new set whole and swaps it in between calls, or keeps
    /// the old one and says why.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = toolgate_gate::internals::parse_duration)]
    reload_check: Duration,
    /// How long a request's head may take from its first byte before the connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout, requires = "listen")]
    header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request (longer than the idle
    /// timeout of a balancer in front, so the balancer closes first).
    #[arg(long, value_name = "DURATION", default_value = "75s", value_parser = parse_timeout, requires = "listen")]
    idle_timeout: Duration,
    /// How long a request's body may take to arrive (and a request may wait for its turn).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout, requires = "listen")]
    body_timeout: Duration,
    /// Start a stdio upstream that exits again, up to N times in a row (waiting 0.5s, then
    /// twice as long each time, at most 30s; the count starts over once it has stayed up a
    /// minute). Its exit is logged either way.
    #[arg(long, value_name = "N", default_value_t = 0)]
    upstream_restart: u32,
    /// Exit with status 3 once a stdio upstream is gone for good (after --upstream-restart), so
    /// a supervisor restarts the proxy with it; without it every call is then answered with the
    /// fixed failure and the listener's /healthz fails after --timeout.
    #[arg(long)]
    exit_with_upstream: bool,
    /// On SIGTERM, how long the HTTP listener still serves new connections (with /readyz
    /// answering 503 from the signal on), so the balancers in front notice it going before it
    /// stops accepting (e.g. 5s).
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = toolgate_gate::internals::parse_duration, requires = "listen")]
    drain_min: Duration,
    /// On SIGTERM, the most the drain may take: the calls in flight are waited for, then
    /// retention writes what it holds; a call still out at the deadline is answered with a
    /// failure that is not retryable. Default: TERMINATION_GRACE_PERIOD_SECONDS less 5s (less
    /// 1s for 10 or less), else 25s.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout, requires = "listen")]
    drain_timeout: Option<Duration>,
    /// A header for an upstream reached over HTTP, as NAME=VARIABLE: its value is read from the
    /// environment variable VARIABLE, so a credential never appears on a command line;
    /// repeatable (e.g. --upstream-header Authorization=MCP_TOKEN).
    #[arg(long, value_name = "NAME=VARIABLE")]
    upstream_header: Vec<String>,
    #[command(flatten)]
    front: FrontArgs,
    /// The MCP server as one argument: its Streamable HTTP URL, or its command line, split into
    /// words as a POSIX shell would (quotes and backslashes; nothing is expanded), e.g.
    /// --upstream 'python weather_server.py'. For launchers that drop `--` (the MCP Inspector's
    /// CLI); otherwise the command after `--` says the same.
    #[arg(long, value_name = "SERVER COMMAND OR URL", conflicts_with = "command")]
    upstream: Option<String>,
    /// The MCP server's command and its arguments, or its Streamable HTTP URL (http:// or
    /// https://), after `--`.
    #[arg(
        last = true,
        required_unless_present = "upstream",
        value_name = "SERVER COMMAND OR URL"
    )]
    command: Vec<OsString>,
}

/// `--upstream`'s command line as the words a shell would pass.
fn upstream_words(line: &str) -> Result<Vec<OsString>, UsageError> {
    let words = shlex::split(line).ok_or_else(|| {
        UsageError::new(format!(
            "--upstream {}: an unclosed quote or a trailing backslash; quote the command as a shell would",
            toolgate_gate::internals::escape_hidden(line)
        ))
    })?;
    if words.is_empty() {
        return Err(UsageError::new(
            "--upstream is empty: give the MCP server's command line or URL, e.g. --upstream 'python server.py'",
        ));
    }
    Ok(words.into_iter().map(OsString::from).collect())
}

impl TryFrom<McpProxyArgs> for ProxyConfig {
    type Error = UsageError;

    fn try_from(args: McpProxyArgs) -> Result<ProxyConfig, UsageError> {
        Ok(ProxyConfig {
            root: args.root,
            front: args.front.config("toolgate-mcp-proxy")?,
            timeout: args.timeout,
            max_line_bytes: args.max_line_bytes,
            allow: args.allow,
            context: args.context,
            reload_check: (!args.reload_check.is_zero()).then_some(args.reload_check),
            listen: args.listen,
            allow_origins: args.allow_origin,
            insecure_no_auth: args.insecure_no_auth,
            auth: args.auth,
            caller_rate: args.caller_rate,
            caller_rate_store: args.caller_rate_store,
            caller_rate_unavailable: match args.caller_rate_unavailable {
                RateStoreFailure::Closed => toolgate_mcp::RateStoreUnavailable::Closed,
                RateStoreFailure::Local => toolgate_mcp::RateStoreUnavailable::Local,
            },
            metrics_token_file: args.metrics_token_file,
            listen_limits: ListenLimits {
                max_connections: args.max_connections,
                max_requests_in_flight: args.max_requests_in_flight,
                header_timeout: args.header_timeout,
                idle_timeout: args.idle_timeout,
                body_timeout: args.body_timeout,
            },
            http_threads: args.http_threads,
            supervision: toolgate_mcp::Supervision {
                restarts: args.upstream_restart,
                exit: args.exit_with_upstream,
            },
            drain: toolgate_mcp::Drain {
                min: args.drain_min,
                timeout: match (args.drain_timeout, args.listen) {
                    (Some(timeout), _) => timeout,
                    (None, Some(_)) => toolgate_mcp::Drain::default_timeout()?,
                    (None, None) => toolgate_mcp::Drain::default().timeout,
                },
            },
            upstream_headers: args.upstream_header,
            command: match &args.upstream {
                Some(line) => upstream_words(line)?,
                None => args.command,
            },
        })
    }
}

/// What every door decides with: the contracts, and the operator's trusted context.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DoorContracts {
    /// The contracts: a repository root holding contracts/, or a bundle `toolgate bundle`
    /// wrote.
    #[arg(
        long,
        visible_alias = "contracts",
        value_name = "DIR|BUNDLE",
        default_value = "."
    )]
    root: PathBuf,
    /// The operator's trusted context: a JSON file `{"<tool>": {"<key>": <value>}}`, as
    /// `mcp-proxy --context`.
    #[arg(long, value_name = "FILE")]
    context: Option<PathBuf>,
}

/// `toolgate ext-proc`'s and `toolgate ext-mcp`'s options: a door into a gateway.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DoorArgs {
    /// The gRPC address to serve the gateway's hook on, e.g. 127.0.0.1:9191 (port 0: any free
    /// port, printed).
    #[arg(long, value_name = "ADDR", value_parser = toolgate_mcp::parse_address)]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    contracts: DoorContracts,
    /// The longest message read either way (default: twice the largest contract's max_bytes
    /// and 64 KiB, at least 1 MiB). Set the gateway's own buffer limit to it.
    #[arg(long, value_name = "BYTES")]
    max_message_bytes: Option<usize>,
    /// Open a route for data that is closed by default; repeatable (not `tasks`: a door
    /// refuses task-augmented calls). Its messages then pass unchanged and ungated.
    #[arg(long, value_parser = choice::<Route>(), value_name = "ROUTE")]
    allow: Vec<Route>,
    /// Where the caller the gateway authenticated is read: `header:NAME` (Envoy's jwt_authn
    /// `claim_to_headers`, an ext_authz header; agentgateway's forwarded headers) or
    /// `metadata:NAMESPACE:KEY.KEY` (Envoy's dynamic metadata the filter forwards, e.g.
    /// `metadata:envoy.filters.http.jwt_authn:payload.sub`; `metadata:KEY` for agentgateway's
    /// metadata_context). The caller goes into the audit and the contracts' rules.
    #[arg(long, value_name = "WHERE", value_parser = toolgate_doors::parse_caller_from)]
    caller_from: Option<toolgate_doors::CallerFrom>,
    /// On SIGTERM, how long the gateway's open streams are waited for before they are cut (a
    /// gateway keeps its streams open between requests, so this bounds every drain).
    #[arg(long, value_name = "DURATION", default_value = "25s", value_parser = parse_timeout)]
    drain_timeout: Duration,
    /// The threads the gRPC runtime runs on; one per core by default. Where the door shares a
    /// few cores with its gateway, 1 spends less CPU per call (no message handed between
    /// threads: a third less on ext-proc, BENCHMARKS.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    threads: Option<usize>,
    #[command(flatten)]
    front: FrontArgs,
}

impl DoorArgs {
    /// What the door `hook` serves with these options.
    pub(crate) fn into_serve(
        self,
        hook: toolgate_doors::Hook,
    ) -> Result<toolgate_doors::DoorServe, UsageError> {
        if self.allow.contains(&Route::Tasks) {
            return Err(UsageError::new(
                "--allow tasks: a door refuses task-augmented calls (a task's result would reach the host outside the exchange the door decides); run toolgate mcp-proxy for tasks",
            ));
        }
        let name = match hook {
            toolgate_doors::Hook::ExtProc => "toolgate ext-proc",
            toolgate_doors::Hook::ExtMcp => "toolgate ext-mcp",
        };
        Ok(toolgate_doors::DoorServe {
            hook,
            listen: self.listen,
            caller_from: self.caller_from,
            drain_timeout: self.drain_timeout,
            threads: self.threads,
            door: toolgate_mcp::DoorConfig {
                name,
                root: self.contracts.root,
                front: self.front.config(&format!("toolgate-{}", hook.name()))?,
                context: self.contracts.context,
                allow: self.allow,
                max_message_bytes: self.max_message_bytes,
                only_tool: None,
            },
        })
    }
}

/// `toolgate hook`'s agents: one event of a coding agent's tool hook, read on stdin and
/// answered on stdout.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum HookAgent {
    /// Claude Code's PreToolUse and PostToolUse hook on MCP tools: refused arguments are denied,
    /// rebuilt ones handed back as updatedInput, and a result replaced by the gate's
    /// (updatedMCPToolOutput).
    ClaudeCode(HookArgs),
    /// Codex's PreToolUse and PostToolUse hook on MCP tools: refused or rebuilt arguments are
    /// denied; Codex cannot replace a result, so every result is blocked with the gate's bytes as
    /// the reason.
    Codex(HookArgs),
}

/// `toolgate hook AGENT`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HookArgs {
    #[command(flatten)]
    contracts: DoorContracts,
    /// The longest tool result decided (default: twice the largest contract's max_bytes and
    /// 64 KiB, at least 1 MiB).
    #[arg(long, value_name = "BYTES")]
    max_message_bytes: Option<usize>,
    /// When the fixed failure is answered if no decision was made (an audit log or a store that
    /// hangs). Keep it under the hook's own timeout: an agent that times a hook out lets the
    /// tool's output through.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout)]
    deadline: Duration,
    #[command(flatten)]
    front: FrontArgs,
}

impl HookAgent {
    /// What the hook runs: its options turned into a door, or why they cannot be (answered
    /// with the fixed failure, never a refusal to start).
    pub(crate) fn into_run(self) -> toolgate_doors::agent::HookRun {
        let (agent, args) = match self {
            HookAgent::ClaudeCode(args) => (toolgate_doors::agent::Agent::ClaudeCode, args),
            HookAgent::Codex(args) => (toolgate_doors::agent::Agent::Codex, args),
        };
        let service = format!("toolgate-{}", agent.name().replace(' ', "-"));
        let door = args
            .front
            .config(&service)
            .and_then(|front| {
                if front.metrics.is_some() {
                    return Err(UsageError::new(
                        "--metrics: a hook lives for one event; read its decisions in --audit or export them with --otlp-endpoint",
                    ));
                }
                Ok(toolgate_mcp::DoorConfig {
                    name: agent.name(),
                    root: args.contracts.root,
                    front,
                    context: args.contracts.context,
                    allow: Vec::new(),
                    max_message_bytes: args.max_message_bytes,
                    // Set to the event's tool once the event is read.
                    only_tool: None,
                })
            });
        toolgate_doors::agent::HookRun {
            agent,
            door,
            deadline: args.deadline,
        }
    }
}

/// `toolgate new`'s options.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["from_openapi", "from_sample", "from_mcp"])))]
pub(crate) struct NewArgs {
    /// The tool's name (1 to 128 ASCII letters, digits, `_`, `-`, `.`); with --from-mcp, every
    /// tool is named as the server names it.
    tool: Option<String>,
    /// An OpenAPI description (3.0 or 3.1, JSON or YAML): the contract of one operation.
    #[arg(long, value_name = "SPEC", requires = "operation")]
    from_openapi: Option<PathBuf>,
    /// The operation: its operationId, or `GET /path`.
    #[arg(long, value_name = "OPERATION_ID", requires = "from_openapi")]
    operation: Option<String>,
    /// A JSON sample of the tool's output; repeatable. The schema is inferred from all of them.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    from_sample: Vec<PathBuf>,
    /// One contract per tool of an MCP server, whose command follows `--`.
    #[arg(long, requires = "command")]
    from_mcp: bool,
    /// With --from-openapi: a response the upstream really sent (JSON); repeatable. It outranks
    /// the description: where the description's schema refuses it (a type, a format, an enum, a
    /// required member, a bound), the schema is corrected to admit it, each correction listed,
    /// before anything is written; it becomes an accepted fixture.
    #[arg(long, value_name = "FILE", requires = "from_openapi")]
    sample: Vec<PathBuf>,
    /// A field to promise, NAME=POINTER (e.g. `state=/state`); repeatable. A list: `tags=/tags/*`
    /// (each item as `value`), or each item's members, one flag each, `accounts.id=/accounts/*/id
    /// accounts.balance=/accounts/*/balance/amount`. Without one, every top-level value whose
    /// form the schema pins is promised.
    #[arg(long, value_name = "NAME=POINTER", value_parser = parse_field)]
    field: Vec<(String, String)>,
    /// The repository root, holding contracts/ and fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Write the version after TOOL's newest (vN+1) from a newer description, newer samples or
    /// the server as it lists its tools now (each tool with a contract): the response schema is
    /// the newer one's with every edit the author made to vN's scaffold replayed where the newer
    /// one left the place alone, everything else decided in vN is kept, fixtures vN+1 decides
    /// differently say so in their sidecars, and what no longer applies is a to-do; then
    /// `toolgate diff TOOL vN vN+1` reviews the bump.
    #[arg(long)]
    next_version: bool,
    /// How long the MCP server has to list its tools, and to answer each call (e.g. 30s).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_timeout)]
    timeout: Duration,
    /// With --from-mcp: call TOOL once, with ARGUMENTS (a JSON object; default `{}`), and infer
    /// its contract from the answer where it declares no outputSchema (the answer becomes an
    /// accepted fixture either way); repeatable, e.g. `--call get-sum '{"a": 1, "b": 2}'`. Only
    /// the tools you name are called: a call may act.
    #[arg(long, value_names = ["TOOL", "ARGUMENTS"], num_args = 1..=2, action = clap::ArgAction::Append, requires = "from_mcp")]
    call: Vec<String>,
    /// The MCP server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "SERVER COMMAND")]
    command: Vec<OsString>,
}

fn parse_field(text: &str) -> Result<(String, String), String> {
    let (name, pointer) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=POINTER (e.g. state=/state)"))?;
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(format!(
            "{pointer:?} is not a JSON pointer: write /{pointer}"
        ));
    }
    Ok((name.to_owned(), pointer.to_owned()))
}

impl From<NewArgs> for crate::new::NewConfig {
    fn from(args: NewArgs) -> crate::new::NewConfig {
        // clap hands the values of every --call over as one list: a value that opens a JSON
        // document (`{`, `[`: no tool name does) is the arguments of the tool before it.
        let mut calls: Vec<(String, Option<String>)> = Vec::new();
        for value in args.call {
            match calls.last_mut() {
                Some((_, arguments @ None)) if value.trim_start().starts_with(['{', '[']) => {
                    *arguments = Some(value);
                }
                _ => calls.push((value, None)),
            }
        }
        let source = match (args.from_openapi, args.operation) {
            (Some(spec), Some(operation)) => crate::new::Source::OpenApi { spec, operation },
            _ if args.from_mcp => crate::new::Source::Mcp {
                command: args.command,
                timeout: args.timeout,
                calls,
            },
            _ => crate::new::Source::Samples(args.from_sample),
        };
        crate::new::NewConfig {
            tool: args.tool,
            source,
            fields: args.field,
            samples: args.sample,
            root: args.root,
            next_version: args.next_version,
        }
    }
}

/// The longest secret key file read.
const MAX_SECRET_KEY_BYTES: usize = 4096;

/// The operator's key for kept secret context digests (`--retain-secret-key`): the file's bytes,
/// at least 32 (what `head -c 32 /dev/urandom` writes), at most 4 KiB.
pub(crate) fn read_secret_key(path: &Path) -> Result<Vec<u8>, UsageError> {
    let doing = "read the secret key (--retain-secret-key)";
    let file = std::fs::File::open(path).map_err(|error| UsageError::io(path, doing, &error))?;
    let bytes = toolgate_gate::read_capped(file, MAX_SECRET_KEY_BYTES)
        .map_err(|error| UsageError::io(path, doing, &error))?;
    toolgate_gate::SecretContext::new(Vec::new(), &bytes)
        .map(|_| bytes)
        .map_err(|short| UsageError::new(format!("{}: {short}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_key_file_is_read_whole_and_at_least_32_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short.key");
        std::fs::write(&short, b"too short").unwrap();
        let error = read_secret_key(&short).unwrap_err().to_string();
        assert!(
            error.contains("short.key") && error.contains("at least 32"),
            "{error}"
        );
        assert!(read_secret_key(&dir.path().join("none")).is_err());
        let key = dir.path().join("retain.key");
        std::fs::write(&key, [7u8; 32]).unwrap();
        assert_eq!(read_secret_key(&key).unwrap(), [7u8; 32]);
    }
}
