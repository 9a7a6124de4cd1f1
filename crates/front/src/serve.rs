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
//! Every decision is made whole by the same [`Front`] as the proxy's (shadow,
//! observe, metrics, trace, audit, retain), so a response decided here and through the proxy
//! leaves the same audit line, metrics and retained record. With `--otlp-endpoint`, each
//! decision is a trace of its own (`transport: pipe`).
//!
//! Metrics, as the proxy keeps them: `{"id": 8, "op": "metrics"}` is answered with `{"id": 8,
//! "metrics": {"samples": [{"name", "labels", "value"}, …], "exposition": "…"}}` (every
//! sample, and the Prometheus text), for a host that publishes them with its own library;
//! `--metrics ADDR` serves them at `http://ADDR/metrics` for a scraper.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine;
use serde_json::{Map, Value, json};
use toolgate_gate::internals::parse_strict_json;
use toolgate_gate::{Contract, Outcome, Response};
use toolgate_repo::lines::{Line, read_line};
use toolgate_repo::{Repository, RequestSpec, Status, UsageError, VersionDir, parse_time};
use toolgate_telemetry::Metrics;

use crate::{CallSpan, Front, FrontConfig, Gated, Runner};

/// `toolgate serve`'s settings (the binary reads them from its command line).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The repository root, holding contracts/.
    pub root: PathBuf,
    /// The longest request line read; a longer one is answered with an error.
    pub max_line_bytes: usize,
    /// What every front shares: audit, retention, rollout, metrics, tracing (its `runner` is
    /// `serve`'s own: it keeps metrics always, since a request line may ask for them, and
    /// answers a refusal's operator record to the caller instead of logging it).
    pub front: FrontConfig,
}

/// What every decision of a run shares: the repository, the compiled contracts, the front.
struct Server {
    repository: Repository,
    contracts: HashMap<(String, Option<String>), Arc<Contract>>,
    front: Front,
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
        self.front.contract_loaded(&compiled);
        self.contracts.insert(key, Arc::clone(&compiled));
        Ok(compiled)
    }

    /// The version of `tool` to enforce when a line names none: `--enforce`'s, or under
    /// `--shadow` the newest other than its candidate; otherwise the newest.
    fn enforced_version(&self, tool: &str) -> Option<String> {
        self.front.shadows().enforced(tool).map(VersionDir::name)
    }

    /// The candidate `--shadow` names for `tool`, unless it is the version enforced.
    fn shadow_of(&mut self, tool: &str, enforced: &str) -> Option<Arc<Contract>> {
        let candidate = self.front.shadows().of(tool)?.candidate.name();
        if candidate == enforced {
            return None;
        }
        self.contract(tool, Some(&candidate)).ok()
    }

    /// A decision's trace, where the front traces: a `serve` span named after the tool, under
    /// no host's context (a line carries none).
    #[cfg(feature = "otlp")]
    fn span(&self, tool: &str, id: &Value) -> Option<CallSpan> {
        let tracing = self.front.tracing()?;
        let id = id.to_string();
        Some(tracing.call(&crate::CallAttributes {
            tool,
            request_id: &id,
            transport: "pipe",
            door: "serve",
            session: None,
            protocol_version: None,
            traceparent: None,
            caller: None,
        }))
    }

    #[cfg(not(feature = "otlp"))]
    fn span(&self, _tool: &str, _id: &Value) -> Option<CallSpan> {
        None
    }
}

/// The members a request line may have.
const MEMBERS: [&str; 6] = ["id", "op", "tool", "version", "raw_base64", "request"];

/// Serves until the input ends.
pub fn run(
    config: &ServeConfig,
    input: impl BufRead,
    output: &mut impl Write,
) -> Result<Status, UsageError> {
    let repository = toolgate_repo::bundle::open_contracts(&config.root)?;
    let front = Front::open(
        &FrontConfig {
            runner: Runner {
                name: "toolgate serve",
                stdout_taken: Some("carries the responses, one JSON object per line"),
                keeps_metrics: true,
                logs_refusals: false,
            },
            ..config.front.clone()
        },
        &repository,
    )?;
    front.log(&format!("configuration: {}", front.summary()));
    let metrics = front.metrics().cloned().unwrap_or_default();
    let mut server = Server {
        repository,
        contracts: HashMap::new(),
        front,
        metrics,
    };
    let status = serve_lines(&mut server, config.max_line_bytes, input, output);
    server.front.finish(std::time::Duration::from_secs(10));
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
    let shadow = server.shadow_of(tool, contract.version());
    let id = message.get("id").unwrap_or(&Value::Null);
    let steps = server.front.steps();
    let call = steps.begin(&contract, server.span(tool, id));
    let gated = Gated {
        contract: &contract,
        shadow: shadow.as_deref(),
    };
    let decision = steps.decide(gated, response, &request, now, &call);
    let observe = server.front.observe();
    // Observed, the caller passes the raw bytes on as they came.
    let agent_bytes: &[u8] = if observe {
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
        "enforced": !observe,
        "layer": decision.rejection().map(|rejection| rejection.layer().as_str()),
        "rule": decision.rule(),
        "code": decision.outcome().code().map(|code| code.as_str()),
        "retryable": decision.retryable(),
        "shape": decision.shape(),
        "agent_base64": base64::engine::general_purpose::STANDARD.encode(agent_bytes),
        "agent": agent,
        "shadow": decision.shadow().map(|shadow| serde_json::to_value(shadow).unwrap_or(Value::Null)),
        "operator_record": decision.operator_record().map(|record| {
            let record = if server.front.redact_values() { record.redacted() } else { record.clone() };
            serde_json::to_value(record).unwrap_or(Value::Null)
        }),
        "audit_line": audit_line,
    }))
}

fn error_answer(id: &Value, kind: &str, message: &str) -> Value {
    json!({"id": id, "error": {"kind": kind, "message": message}})
}
