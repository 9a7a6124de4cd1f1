//! `toolgate serve --stdio`: the gate for every language without a binding. One JSON object per
//! line in (a tool, its raw bytes base64-encoded, the outstanding request), one JSON object per
//! line out (the decision, or why there is none), in order, until the input ends. Contracts are
//! compiled once, on first use, and kept.
//!
//! In: `{"id": 7, "tool": "job_status", "version": "v2", "raw_base64": "eyJ…",
//! "request": {"request_id": "…", "now": "2026-…Z", "context": {…}, "upstream_status": 503}}`
//! (`version`, `now`, `context`, `upstream_status` optional). Out: `{"id": 7, "decision":
//! {"outcome", "admitted", "layer", "rule", "code", "retryable", "shape", "agent_base64",
//! "agent", "operator_record", "audit_line"}}`, or `{"id": 7, "error": {"kind", "message"}}`
//! (`kind`: `request` for a line that cannot be read, `contract` for a tool whose contract cannot
//! be loaded).
//!
//! As the proxy does: `--retain STORE` keeps refused responses (and admitted ones at a sampled
//! rate) for `toolgate reproduce`; `--shadow [TOOL=]vN` decides each response with a candidate
//! version too, enforced never, both outcomes in the audit line and the answer's `shadow`;
//! `--mode observe` decides and audits, and answers with the raw bytes as the agent's
//! (`"enforced": false`).
//!
//! Metrics, as the proxy keeps them: `{"id": 8, "op": "metrics"}` is answered with `{"id": 8,
//! "metrics": {"samples": [{"name", "labels", "value"}, …], "exposition": "…"}}` (every
//! sample, and the Prometheus text), for a host that publishes them with its own library;
//! `--metrics ADDR` serves them at `http://ADDR/metrics` for a scraper.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use base64::Engine;
use serde_json::{Map, Value, json};
use toolgate_front::{ShadowPlan, open_audit};
use toolgate_gate::internals::parse_strict_json;
use toolgate_gate::{AuditSink, Contract, Outcome, Response};
use toolgate_repo::lines::{Line, read_line};
use toolgate_repo::{Repository, RequestSpec, Status, UsageError, parse_time};
use toolgate_telemetry::{Metrics, MetricsEndpoint};

/// `toolgate serve`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ServeOptions {
    /// Serve over stdin and stdout, one JSON object per line (the only transport so far).
    #[arg(long, required = true)]
    stdio: bool,
    /// The repository root, holding contracts/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Append every decision's audit event (one JSON line each, hash-chained) to this file (not
    /// `-`: stdout carries the responses).
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Sign every audit line with this Ed25519 private key (PKCS#8 PEM, from `toolgate audit
    /// keygen`); `toolgate audit verify --public-key` then proves no line was rewritten.
    #[arg(long, value_name = "FILE", requires = "audit")]
    audit_key: Option<PathBuf>,
    /// The longest request line read (default 16 MiB); a longer one is answered with an error.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_line_bytes: usize,
    #[command(flatten)]
    retention: crate::args::RetentionArgs,
    #[command(flatten)]
    rollout: crate::args::RolloutArgs,
    /// Serve Prometheus metrics at http://ADDR/metrics (e.g. 127.0.0.1:9464); a request line
    /// `{"id": N, "op": "metrics"}` answers them too.
    #[arg(long, value_name = "ADDR", value_parser = toolgate_mcp::parse_address)]
    metrics: Option<std::net::SocketAddr>,
}

/// What every decision of a run shares: the repository, the compiled contracts, the audit log,
/// the retainer, the shadows, the mode.
struct Server {
    repository: Repository,
    contracts: HashMap<(String, Option<String>), Arc<Contract>>,
    audit: Option<toolgate_front::ChainedAuditLog>,
    retainer: Option<toolgate_store::Retainer>,
    shadows: ShadowPlan,
    observe: bool,
    /// Operator records leave the process without what quotes the response.
    redact_values: bool,
    metrics: Arc<Metrics>,
}

impl Server {
    /// The contract of `tool` at `version` (the newest when `None`), compiled once.
    fn contract(&mut self, tool: &str, version: Option<&str>) -> Result<Arc<Contract>, String> {
        let key = (tool.to_owned(), version.map(str::to_owned));
        if let Some(contract) = self.contracts.get(&key) {
            return Ok(Arc::clone(contract));
        }
        let compiled = Arc::new(
            self.repository
                .load(tool, version)
                .map_err(|error| error.to_string())?,
        );
        self.metrics.contract_loaded(&compiled);
        self.contracts.insert(key, Arc::clone(&compiled));
        Ok(compiled)
    }

    /// The version of `tool` to enforce when a line names none: under `--shadow`, the newest
    /// other than its candidate; otherwise the newest.
    fn enforced_version(&self, tool: &str) -> Option<String> {
        self.shadows.of(tool).map(|pair| pair.enforced.name())
    }

    /// The candidate `--shadow` names for `tool`, unless it is the version enforced.
    fn shadow_of(&mut self, tool: &str, enforced: &str) -> Option<Arc<Contract>> {
        let candidate = self.shadows.of(tool)?.candidate.name();
        if candidate == enforced {
            return None;
        }
        self.contract(tool, Some(&candidate)).ok()
    }
}

/// The members a request line may have.
const MEMBERS: [&str; 6] = ["id", "op", "tool", "version", "raw_base64", "request"];

/// Serves until the input ends.
pub(crate) fn run(
    options: &ServeOptions,
    input: impl BufRead,
    output: &mut impl Write,
) -> Result<Status, UsageError> {
    let observe = options.rollout.observe();
    if observe {
        toolgate_front::refuse_observe_in_ci("toolgate serve")?;
    }
    let retainer = options
        .retention
        .config()?
        .map(|config| {
            config
                .start(Arc::new(|line: &str| eprintln!("toolgate serve: {line}")))
                .map_err(|why| UsageError::new(format!("--retain {}: {why}", config.store)))
        })
        .transpose()?;
    if observe {
        eprintln!(
            "toolgate serve: OBSERVE MODE (--mode observe): decisions are made and audited but NOT enforced; every answer carries the raw bytes as the agent's"
        );
    }
    let repository = Repository::open(&options.root)?;
    let shadows = ShadowPlan::resolve(&repository, &options.rollout.shadow)?;
    let metrics = Arc::new(Metrics::new());
    if let Some(retainer) = &retainer {
        metrics.watch_retainer(retainer);
    }
    if let Some(address) = options.metrics {
        let endpoint =
            MetricsEndpoint::start(address, Arc::clone(&metrics)).map_err(UsageError::new)?;
        eprintln!("toolgate serve: metrics on {}", endpoint.url());
    }
    let mut server = Server {
        repository,
        contracts: HashMap::new(),
        audit: options
            .audit
            .as_deref()
            .map(|path| {
                open_audit(
                    path,
                    options.audit_key.as_deref(),
                    Some("carries the responses, one JSON object per line"),
                )
            })
            .transpose()?,
        retainer,
        shadows,
        observe,
        redact_values: options.retention.redact_values(),
        metrics,
    };
    let status = serve_lines(&mut server, options.max_line_bytes, input, output);
    if let Some(retainer) = &server.retainer {
        eprintln!(
            "toolgate serve: {}",
            retainer.finish(std::time::Duration::from_secs(10))
        );
    }
    status
}

fn serve_lines(
    server: &mut Server,
    max_line_bytes: usize,
    input: impl BufRead,
    output: &mut impl Write,
) -> Result<Status, UsageError> {
    let mut input = input;
    while let Some(line) = read_line(&mut input, max_line_bytes)
        .map_err(|error| UsageError::new(format!("reading the input failed: {error}")))?
    {
        let answer = match line {
            Line::TooLong(_) => error_answer(
                &Value::Null,
                "request",
                &format!("a line longer than {max_line_bytes} bytes (--max-line-bytes); not read"),
            ),
            Line::Complete(line) if line.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Complete(line) => answer(server, &line),
        };
        let mut text = answer.to_string().into_bytes();
        text.push(b'\n');
        if output
            .write_all(&text)
            .and_then(|()| output.flush())
            .is_err()
        {
            // Whoever asked is gone; there is no one to answer.
            return Ok(Status::Passed);
        }
    }
    Ok(Status::Passed)
}

fn answer(server: &mut Server, line: &[u8]) -> Value {
    let message = match parse_strict_json(line, 64) {
        Ok(Value::Object(message)) => message,
        Ok(_) => return error_answer(&Value::Null, "request", "a line is one JSON object"),
        Err(why) => return error_answer(&Value::Null, "request", &format!("not JSON: {why}")),
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    match message.get("op") {
        None | Some(Value::Null) => {}
        Some(Value::String(op)) if op == "decide" => {}
        Some(Value::String(op)) if op == "metrics" => {
            if let Some(other) = message
                .keys()
                .find(|key| !["id", "op"].contains(&key.as_str()))
            {
                return error_answer(
                    &id,
                    "request",
                    &format!("no member {other:?} in a metrics request: it has id and op"),
                );
            }
            return json!({"id": id, "metrics": {
                "samples": server.metrics.samples(),
                "exposition": server.metrics.prometheus_text(),
            }});
        }
        Some(_) => {
            return error_answer(
                &id,
                "request",
                "`op` is \"decide\" (the default) or \"metrics\"",
            );
        }
    }
    match decide(server, &message) {
        Ok(decision) => json!({"id": id, "decision": decision}),
        Err((kind, why)) => error_answer(&id, kind, &why),
    }
}

type Refused = (&'static str, String);

fn decide(server: &mut Server, message: &Map<String, Value>) -> Result<Value, Refused> {
    let bad = |why: String| ("request", why);
    if let Some(unknown) = message.keys().find(|key| !MEMBERS.contains(&key.as_str())) {
        return Err(bad(format!(
            "no member {unknown:?}: a line has {}",
            MEMBERS.join(", ")
        )));
    }
    let text = |name: &str| -> Result<Option<&str>, Refused> {
        match message.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(bad(format!("`{name}` is a string"))),
        }
    };
    let tool = text("tool")?.ok_or_else(|| bad("`tool` is required".to_owned()))?;
    let version = text("version")?;
    let encoded = text("raw_base64")?.ok_or_else(|| {
        bad("`raw_base64` is required: the tool's bytes, base64-encoded".to_owned())
    })?;
    let spec: RequestSpec = serde_json::from_value(
        message
            .get("request")
            .cloned()
            .ok_or_else(|| bad("`request` is required: {\"request_id\": …}".to_owned()))?,
    )
    .map_err(|error| bad(format!("`request`: {error}")))?;
    let enforced = match version {
        Some(version) => Some(version.to_owned()),
        None => server.enforced_version(tool),
    };
    let contract = server
        .contract(tool, enforced.as_deref())
        .map_err(|why| ("contract", why))?;
    let missing = spec.missing_context(&contract);
    if !missing.is_empty() {
        return Err(bad(format!(
            "`request.context` lacks `{}`, which the rules of {} {} read",
            missing.join("`, `"),
            contract.tool(),
            contract.version()
        )));
    }
    let now = match spec.now.as_deref() {
        Some(text) => parse_time(text).map_err(|error| bad(format!("`request.now`: {error}")))?,
        None => SystemTime::now(),
    };
    let mut raw = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|error| bad(format!("`raw_base64` is not base64: {error}")))?;
    // As `toolgate check` reads a body: at most one byte past the limit.
    raw.truncate(contract.max_bytes().saturating_add(1));
    let mut response = Response::body(&raw);
    if let Some(status) = spec.upstream_status {
        response = response.with_status(status);
    }
    let request = spec.to_request();
    let started = Instant::now();
    let mut decision = contract.admit_response(response, &request, now);
    if let Some(shadow) = server.shadow_of(tool, contract.version()) {
        let shadowed = shadow.admit_response(response, &request, now);
        decision = decision.with_shadow(&shadowed);
    }
    if server.observe {
        decision = decision.observed();
    }
    server
        .metrics
        .decided(&contract, &decision, started.elapsed());
    // The event is built either way (the answer carries its line), so the sink is handed it.
    if let Some(sink) = &server.audit
        && let Err(error) = sink.record_decision(&decision)
    {
        eprintln!("toolgate serve: cannot write the audit event: {error}");
    }
    if let Some(retainer) = &server.retainer {
        retainer.offer(&decision, &response, &request);
    }
    // Observed, the caller passes the raw bytes on as they came.
    let agent_bytes: &[u8] = if server.observe {
        &raw
    } else {
        decision.agent_bytes()
    };
    let agent: Value = serde_json::from_slice(agent_bytes).unwrap_or(Value::Null);
    let audit_line = String::from_utf8_lossy(&decision.audit_event().to_json_line())
        .trim_end()
        .to_owned();
    Ok(json!({
        "outcome": decision.outcome().as_str(),
        "admitted": !matches!(decision.outcome(), Outcome::Rejected(_)),
        "enforced": !server.observe,
        "layer": decision.rejection().map(|rejection| rejection.layer().as_str()),
        "rule": decision.rule(),
        "code": decision.outcome().code().map(|code| code.as_str()),
        "retryable": decision.retryable(),
        "shape": decision.shape(),
        "agent_base64": base64::engine::general_purpose::STANDARD.encode(agent_bytes),
        "agent": agent,
        "shadow": decision.shadow().map(|shadow| serde_json::to_value(shadow).unwrap_or(Value::Null)),
        "operator_record": decision.operator_record().map(|record| {
            let record = if server.redact_values { record.redacted() } else { record.clone() };
            serde_json::to_value(record).unwrap_or(Value::Null)
        }),
        "audit_line": audit_line,
    }))
}

fn error_answer(id: &Value, kind: &str, message: &str) -> Value {
    json!({"id": id, "error": {"kind": kind, "message": message}})
}
