//! `toolgate check`: one response through one contract, exactly as production would see it.
//!
//! stdout holds exactly the agent-visible bytes and a newline; everything for the person running
//! the command (the operator record with `--explain`) goes to stderr.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use toolgate_repo::{parse_target, save_fixture};

use toolgate_gate::{AuditSink, Decision, Outcome, Response, read_capped};

use toolgate_front::{CallRecord, FrontLog, Gated, Steps, open_audit};
use toolgate_repo::{FixtureTarget, Observed};
use toolgate_repo::{RequestSpec, parse_time, read_request_file};
use toolgate_repo::{UsageError, write_output};

/// What `toolgate check` was asked to do: its command-line arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct CheckOptions {
    /// The tool whose contract decides (a folder under contracts/).
    #[arg(add = crate::completion::tool_names())]
    pub tool: String,
    /// The raw response file, byte for byte as received; standard input when absent or `-`.
    pub raw: Option<PathBuf>,
    /// The outstanding request: JSON {"request_id", "now" (RFC 3339), "context": {...}}.
    #[arg(long, value_name = "FILE")]
    pub request: Option<PathBuf>,
    /// The outstanding request's id (overrides the request file's).
    #[arg(long, value_name = "ID")]
    pub request_id: Option<String>,
    /// The decision time, RFC 3339 (overrides the request file's; default: the current time).
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// The upstream status the adapter saw (e.g. 503).
    #[arg(long, value_name = "STATUS")]
    pub upstream_status: Option<u16>,
    /// The contract version folder to use (default: the newest).
    #[arg(long, value_name = "vN")]
    pub contract_version: Option<String>,
    /// The contracts: a repository root holding contracts/, or a bundle `toolgate bundle`
    /// wrote (read whole and checked against its manifest and lock before anything is served).
    #[arg(
        long,
        visible_alias = "contracts",
        value_name = "DIR|BUNDLE",
        default_value = "."
    )]
    pub root: PathBuf,
    /// Explain the decision on stderr: layer, rule, where, the validator's message, how to fix it.
    #[arg(long)]
    pub explain: bool,
    /// Append the decision's audit event (one JSON line, hash-chained) to this file; `-` is
    /// stdout, after the agent-visible line.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// Sign the audit line with this Ed25519 private key (PKCS#8 PEM), as the fronts do: a
    /// checkpoint after it.
    #[arg(long, value_name = "FILE", requires = "audit")]
    pub audit_key: Option<PathBuf>,
    /// Keep the decision in this folder as a production front does with --retain (the raw
    /// bytes and what decided them, under their SHA-256): `toolgate reproduce --store DIR`
    /// decides it again.
    #[arg(long, value_name = "DIR")]
    pub retain: Option<PathBuf>,
    /// Save the response as a regression fixture, fixtures/TOOL/CLASS/NAME, with a sidecar that
    /// expects what the gate just decided (under every version) and the request it decided under.
    /// Never overwrites; then run `toolgate test --accept`.
    #[arg(long, value_name = "CLASS/NAME", value_parser = parse_target)]
    pub save_fixture: Option<FixtureTarget>,
}

/// Runs the check. `Ok(true)` when the gate admitted the bytes, `Ok(false)` when it rejected them.
pub(crate) fn run(
    options: &CheckOptions,
    stdin: impl Read,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> Result<bool, UsageError> {
    let repository = toolgate_repo::bundle::open_contracts(&options.root)?;
    let contract = repository.load(&options.tool, options.contract_version.as_deref())?;

    let spec = request_spec(options)?;
    let now = match spec.now.as_deref() {
        Some(text) => {
            parse_time(text).map_err(|error| UsageError::new(format!("--now: {error}")))?
        }
        None => SystemTime::now(),
    };
    let missing = spec.missing_context(&contract);
    if !missing.is_empty() {
        return Err(UsageError::new(format!(
            "{}: the request has no trusted context `{}`, which the rules of {} {} read; put it under \"context\" in the --request file",
            options.request.as_deref().map_or_else(
                || "--request-id".to_owned(),
                |path| path.display().to_string()
            ),
            missing.join("`, `"),
            contract.tool(),
            contract.version()
        )));
    }
    let audit = options
        .audit
        .as_deref()
        .map(|path| open_audit(path, options.audit_key.as_deref(), None))
        .transpose()?;

    let raw = read_raw(options.raw.as_deref(), stdin, contract.max_bytes())?;
    let mut response = Response::body(&raw);
    if let Some(status) = spec.upstream_status {
        response = response.with_status(status);
    }
    let request = spec.to_request();
    let audit_path = options.audit.as_deref().unwrap_or(Path::new(""));
    // A file gets the line as the decision is made, before anything is printed; stdout (`-`)
    // after the agent's line.
    let audit_to_stdout = audit_path == Path::new("-");
    let failures = Failures::default();
    let steps = Steps {
        audit: audit
            .as_ref()
            .filter(|_| !audit_to_stdout)
            .map(|sink| sink as &dyn AuditSink),
        log: Some(&failures),
        ..Steps::default()
    };
    let decision = steps.decide(
        Gated::by(&contract),
        response,
        &request,
        now,
        &CallRecord::default(),
    );
    failures.into_result(audit_path)?;

    let retained = options
        .retain
        .as_deref()
        .map(|folder| retain(folder, &response, &request, &decision))
        .transpose()?;
    if let Some(target) = &options.save_fixture {
        let observed = Observed {
            tool: contract.tool(),
            raw: &raw,
            raw_path: options
                .raw
                .as_deref()
                .filter(|path| *path != Path::new("-")),
            spec: &spec,
            request_file: options.request.as_deref(),
            save_request: false,
            command: "toolgate check",
            overridden: (
                options.request_id.is_some(),
                options.now.is_some(),
                options.upstream_status.is_some(),
            ),
            now,
            version: contract.version(),
            decision: &decision,
        };
        let message = save_fixture(&repository.clone().naming_relative(), target, &observed)?;
        for line in message.lines() {
            let _ = writeln!(stderr, "{}", toolgate_gate::internals::escape_hidden(line));
        }
    }
    let mut line = decision.agent_bytes().to_vec();
    line.push(b'\n');
    write_output(stdout, &line)?;
    if let Some(sink) = audit.as_ref().filter(|_| audit_to_stdout) {
        sink.record_decision(&decision)
            .map_err(|error| UsageError::io(audit_path, "append to the audit log", &error))?;
    }
    if options.explain {
        // stderr is for the person at the terminal; if it is gone there is no one to tell.
        let _ = writeln!(
            stderr,
            "{}",
            explain(
                &decision,
                contract.tool(),
                contract.version(),
                retained.as_deref()
            )
        );
    }
    Ok(decision.is_admitted())
}

fn request_spec(options: &CheckOptions) -> Result<RequestSpec, UsageError> {
    let mut spec = match &options.request {
        Some(path) => read_request_file(path)?,
        None => RequestSpec::default(),
    };
    spec.override_with(
        options.request_id.as_deref(),
        options.now.as_deref(),
        options.upstream_status,
    );
    if spec.request_id.is_empty() {
        return Err(UsageError::new(
            "no outstanding request: pass --request FILE ({\"request_id\", \"now\", \"context\"}) or --request-id ID",
        ));
    }
    Ok(spec)
}

/// Reads the raw response, at most one byte past the contract's limit: an oversized body is
/// rejected by the gate without ever being held whole.
fn read_raw(
    path: Option<&Path>,
    stdin: impl Read,
    max_bytes: usize,
) -> Result<Vec<u8>, UsageError> {
    match path {
        None => read_capped(stdin, max_bytes)
            .map_err(|error| UsageError::io(Path::new("<stdin>"), "read", &error)),
        Some(path) if path == Path::new("-") => read_capped(stdin, max_bytes)
            .map_err(|error| UsageError::io(Path::new("<stdin>"), "read", &error)),
        Some(path) => {
            if path.is_dir() {
                return Err(UsageError::new(format!(
                    "{}: is a directory; pass the raw response file",
                    path.display()
                )));
            }
            let file = fs::File::open(path)
                .map_err(|error| UsageError::io(path, "open the raw response", &error))?;
            read_capped(file, max_bytes)
                .map_err(|error| UsageError::io(path, "read the raw response", &error))
        }
    }
}

/// What the front's steps would log, kept: in `check` a step that fails (an audit line not
/// written) is an error naming the file, not a line on stderr.
#[derive(Default)]
struct Failures(std::sync::Mutex<Vec<String>>);

impl FrontLog for Failures {
    fn line(&self, message: &str) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(message.to_owned());
    }
}

impl Failures {
    fn into_result(self, audit_path: &Path) -> Result<(), UsageError> {
        let failures = self
            .0
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match failures.first() {
            None => Ok(()),
            Some(first) => Err(UsageError::new(format!(
                "{}: {first}",
                audit_path.display()
            ))),
        }
    }
}

/// Keeps the decision as a production front does (`--retain`): a record `toolgate reproduce
/// --store FOLDER` decides again, in a private folder, written atomically. Its path.
fn retain(
    folder: &Path,
    response: &Response<'_>,
    request: &toolgate_gate::Request,
    decision: &Decision,
) -> Result<PathBuf, UsageError> {
    let store = toolgate_store::FolderStore::open(folder)
        .map_err(|error| UsageError::new(format!("--retain {}: {error}", folder.display())))?;
    // Every decision `check --retain` makes is kept: a rate of 1.
    let record = toolgate_gate::Captured::of(decision, response, request)
        .sampled_at(1.0)
        .into_retained(&toolgate_gate::SecretContext::none());
    let name = record.name();
    toolgate_store::Store::put(&store, &name, &record.to_bytes())
        .map(|_| ())
        .map_err(|error| {
            UsageError::new(format!(
                "--retain {}: cannot keep {name}: {error}",
                folder.display()
            ))
        })?;
    Ok(folder.join(name))
}

fn explain(decision: &Decision, tool: &str, version: &str, retained: Option<&Path>) -> String {
    let digest = decision.audit_event().agent_sha256().to_hex();
    let mut text = match (decision.outcome(), decision.operator_record()) {
        (Outcome::Rejected(_), Some(record)) => record.to_string(),
        (Outcome::AdmittedFailure { code, retryable }, _) => format!(
            "admitted by {tool} {version} (shape `{}`): a contract-valid upstream failure, {code} ({}); the agent sees the failure envelope, {} bytes, sha256 {digest}",
            decision.shape().unwrap_or_default(),
            if *retryable {
                "retryable"
            } else {
                "not retryable"
            },
            decision.agent_bytes().len()
        ),
        _ => format!(
            "admitted by {tool} {version} (shape `{}`): the agent sees {} bytes, sha256 {digest}",
            decision.shape().unwrap_or_default(),
            decision.agent_bytes().len()
        ),
    };
    if let Some(path) = retained {
        text.push_str(&format!("\n  retained: {}", path.display()));
    }
    text
}
