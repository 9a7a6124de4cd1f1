//! Inputs and contracts for the benchmarks, generated deterministically so every run (and the
//! Python comparison) measures the same bytes.

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::{Value, json};
use toolgate_gate::{Contract, ContractSource, Request};

pub mod paired;

/// The request id every input answers.
pub const REQUEST_ID: &str = "req.J7q94MkP";
/// The decision time every benchmark uses.
pub const NOW: &str = "2026-11-29T12:00:00Z";
/// The project every request is bound to.
pub const PROJECT: &str = "bluebird";

/// The decision time, parsed.
pub fn now() -> SystemTime {
    toolgate_gate::internals::parse_timestamp(NOW).expect("a valid timestamp")
}

/// The repository root.
pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The bundled `job_status` contract (envelope, binding, freshness and membership rules).
pub fn job_status() -> Contract {
    let source = ContractSource::read_dir(repository().join("contracts/job_status/v1"))
        .expect("the bundled contract reads");
    Contract::compile(&source).expect("the bundled contract compiles")
}

/// The `job_status` envelope schema, for the parse + `is_valid` baseline.
pub fn job_status_schema() -> Value {
    let text =
        std::fs::read_to_string(repository().join("contracts/job_status/v1/envelope.schema.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The runs of the project, as the request's trusted context lists them.
pub fn runs() -> Vec<String> {
    (0..16)
        .map(|index| format!("run_{index:04}A8f3kQ2LmZx9"))
        .collect()
}

/// The outstanding request for `job_status` and `run_history`.
pub fn request() -> Request {
    Request::new(REQUEST_ID)
        .with_context("project_id", PROJECT)
        .with_context("runs", json!(runs()))
}

/// What one small input is meant to exercise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A valid success (70 %).
    Success,
    /// A contract-valid upstream failure (10 %).
    Failure,
    /// An extra property (4 %).
    ExtraProperty,
    /// A member of the wrong type (4 %).
    WrongType,
    /// An identifier that breaks its pattern (4 %).
    BadPattern,
    /// An impossible date (4 %).
    BadDate,
    /// A duplicate member name (4 %).
    DuplicateKey,
}

impl Kind {
    /// The admission path, then every rejection path the small mix exercises.
    pub const PATHS: [Kind; 6] = [
        Kind::Success,
        Kind::ExtraProperty,
        Kind::WrongType,
        Kind::BadPattern,
        Kind::BadDate,
        Kind::DuplicateKey,
    ];

    /// Whether the gate must admit it.
    pub fn admitted(self) -> bool {
        matches!(self, Kind::Success | Kind::Failure)
    }

    /// A stable name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Success => "success",
            Kind::Failure => "failure",
            Kind::ExtraProperty => "extra_property",
            Kind::WrongType => "wrong_type",
            Kind::BadPattern => "bad_pattern",
            Kind::BadDate => "bad_date",
            Kind::DuplicateKey => "duplicate_key",
        }
    }
}

/// One small response (about 250 bytes) for `job_status`.
pub fn small(kind: Kind, variant: usize) -> Vec<u8> {
    let runs = runs();
    let run = &runs[variant % runs.len()];
    let states = ["failed", "running", "succeeded", "cancelled"];
    let state = states[variant % states.len()];
    let minute = 46 + variant % 14;
    let second = variant % 60;
    let observed = format!(
        "2026-11-29T11:{minute:02}:{second:02}.{:03}Z",
        variant % 1000
    );
    let data = match kind {
        Kind::Failure => {
            let code = if variant.is_multiple_of(2) {
                "NOT_FOUND"
            } else {
                "UPSTREAM_UNAVAILABLE"
            };
            return format!(
                r#"{{ "tool": "job_status", "request_id": "{REQUEST_ID}", "outcome": "failure", "error": {{ "code": "{code}", "retryable": {} }} }}"#,
                variant.is_multiple_of(3)
            )
            .into_bytes();
        }
        Kind::Success => format!(
            r#""project_id": "{PROJECT}", "run_id": "{run}", "state": "{state}", "observed_at": "{observed}""#
        ),
        Kind::ExtraProperty => format!(
            r#""project_id": "{PROJECT}", "run_id": "{run}", "state": "{state}", "observed_at": "{observed}", "diagnostic_url": "https://ci.example.invalid/debug""#
        ),
        Kind::WrongType => format!(
            r#""project_id": "{PROJECT}", "run_id": "{run}", "state": {variant}, "observed_at": "{observed}""#
        ),
        Kind::BadPattern => format!(
            r#""project_id": "{PROJECT}", "run_id": "run-{variant}!", "state": "{state}", "observed_at": "{observed}""#
        ),
        Kind::BadDate => format!(
            r#""project_id": "{PROJECT}", "run_id": "{run}", "state": "{state}", "observed_at": "2026-02-30T11:{minute:02}:00Z""#
        ),
        Kind::DuplicateKey => format!(
            r#""project_id": "{PROJECT}", "run_id": "{run}", "state": "{state}", "state": "succeeded", "observed_at": "{observed}""#
        ),
    };
    format!(r#"{{ "tool": "job_status", "request_id": "{REQUEST_ID}", "outcome": "success", "data": {{ {data}, "attempt": null }} }}"#)
        .replace(r#", "attempt": null"#, "")
        .into_bytes()
}

/// The small mix: 70 % valid successes, 10 % contract-valid failures, 20 % near-misses (extra
/// property, wrong type, bad pattern, bad date, duplicate key), interleaved.
pub fn small_mix(count: usize) -> Vec<(Kind, Vec<u8>)> {
    const PATTERN: [Kind; 50] = {
        let mut kinds = [Kind::Success; 50];
        let mut index = 35;
        while index < 40 {
            kinds[index] = Kind::Failure;
            index += 1;
        }
        let near = [
            Kind::ExtraProperty,
            Kind::WrongType,
            Kind::BadPattern,
            Kind::BadDate,
            Kind::DuplicateKey,
        ];
        let mut slot = 0;
        while slot < 10 {
            kinds[40 + slot] = near[slot % 5];
            slot += 1;
        }
        kinds
    };
    // Spread the kinds through the mix rather than in runs (a stride coprime with 50).
    (0..count)
        .map(|index| {
            let kind = PATTERN[(index * 17) % PATTERN.len()];
            (kind, small(kind, index))
        })
        .collect()
}

/// The `run_history` contract's `contract.yaml`.
pub const RUN_HISTORY_CONTRACT: &str = r#"
tool: run_history
version: 1
direction: result
limits: { max_bytes: 16777216, max_depth: 6 }
shape:
  schema: history.schema.json
  outcome: { pointer: /outcome, success: success, failure: failure }
  error_code: /error/code
  correlation: { tool: /tool, request_id: /request_id }
  fields:
    - { name: project_id, from: /data/project_id }
    - { name: observed_at, from: /data/observed_at }
    - { name: latest_run, from: /data/runs/0 }
agent_schema: agent.schema.json
rules:
  - name: project_binding
    binding: { field: project_id, context: project_id }
    retryable: false
  - name: observed_at_fresh
    freshness: { field: observed_at, max_age: 15m, max_future: 2m }
    retryable: true
"#;

/// A `run_history` contract: a large envelope (a project's whole run history) of which the agent
/// sees the project, the observation time and the latest run only.
pub fn run_history() -> Contract {
    let contract = RUN_HISTORY_CONTRACT;
    let schema = history_schema();
    let source = ContractSource::new(contract)
        .with_schema_value("history.schema.json", schema)
        .with_schema_value("agent.schema.json", json!({"type": "object"}));
    Contract::compile(&source).expect("the run_history contract compiles")
}

/// The `run_history` envelope schema.
pub fn history_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "oneOf": [
            {
                "type": "object",
                "required": ["tool", "request_id", "outcome", "data"],
                "properties": {
                    "tool": {"const": "run_history"},
                    "request_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.]{7,63}$"},
                    "outcome": {"const": "success"},
                    "data": {
                        "type": "object",
                        "required": ["project_id", "observed_at", "runs"],
                        "properties": {
                            "project_id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{2,62}$"},
                            "observed_at": {"type": "string", "format": "date-time", "maxLength": 35},
                            "runs": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/run"}}
                        },
                        "additionalProperties": false
                    }
                },
                "additionalProperties": false
            },
            toolgate_gate::internals::failure_schema("run_history", json!({"type": "string"}))
        ],
        "$defs": {
            "run": {
                "type": "object",
                "required": ["run_id", "state", "started_at", "duration_ms", "message"],
                "properties": {
                    "run_id": {"type": "string", "pattern": "^run_[A-Za-z0-9]{12,48}$"},
                    "state": {"enum": ["failed", "running", "succeeded", "cancelled"]},
                    "started_at": {"type": "string", "format": "date-time"},
                    "duration_ms": {"type": "integer", "minimum": 0},
                    "message": {"type": "string", "maxLength": 200}
                },
                "additionalProperties": false
            }
        }
    })
}

/// A `run_history` success of about `target` bytes.
pub fn history(target: usize) -> Vec<u8> {
    let mut text = format!(
        r#"{{"tool":"run_history","request_id":"{REQUEST_ID}","outcome":"success","data":{{"project_id":"{PROJECT}","observed_at":"2026-11-29T11:58:00Z","runs":["#
    );
    let states = ["failed", "running", "succeeded", "cancelled"];
    let mut index = 0usize;
    while text.len() < target {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#"{{"run_id":"run_{index:012}","state":"{}","started_at":"2026-11-{:02}T{:02}:{:02}:{:02}Z","duration_ms":{},"message":"step {} of the pipeline finished"}}"#,
            states[index % 4],
            1 + index % 28,
            index % 24,
            index % 60,
            (index * 7) % 60,
            (index * 7919) % 3_600_000,
            index % 97
        ));
        index += 1;
    }
    text.push_str("]}}");
    text.into_bytes()
}

/// A contract and a mix of raw responses to admit against it: the bundled small mix, or a
/// contract written from a public API's own description and samples (tests/corpora/real-apis),
/// which the gate was not tuned for.
pub struct Workload {
    /// A stable name: `small_mix`, `payment_intent` (Stripe) or `pull_request` (GitHub).
    pub name: &'static str,
    /// The compiled contract.
    pub contract: Contract,
    /// The outstanding request every input answers.
    pub request: Request,
    /// The decision time.
    pub now: SystemTime,
    /// The raw responses, interleaved by kind.
    pub inputs: Vec<Vec<u8>>,
}

impl Workload {
    /// Every workload's name, in the order reports list them.
    pub const NAMES: [&'static str; 3] = ["small_mix", "payment_intent", "pull_request"];

    /// The workload called `name`, with `count` inputs; `None` for an unknown name.
    pub fn named(name: &str, count: usize) -> Option<Workload> {
        match name {
            "small_mix" => Some(Workload {
                name: "small_mix",
                contract: job_status(),
                request: request(),
                now: now(),
                inputs: small_mix(count).into_iter().map(|(_, raw)| raw).collect(),
            }),
            // Not in NAMES (its ratio is printed on its own): one ~8 MB run history, for profiling.
            "large" => Some(Workload {
                name: "large",
                contract: run_history(),
                request: request(),
                now: now(),
                inputs: vec![history(8 * 1024 * 1024)],
            }),
            "payment_intent" => Some(Workload::real_api("payment_intent", count)),
            "pull_request" => Some(Workload::real_api("pull_request", count)),
            _ => None,
        }
    }

    /// A real API's contract and its fixtures, interleaved: 80 % accepted responses (cycling
    /// through every accepted fixture), 10 % near-misses, 10 % duplicate members.
    fn real_api(tool: &'static str, count: usize) -> Workload {
        let repo = repository().join("tests/corpora/real-apis/repo");
        let source = ContractSource::read_dir(repo.join("contracts").join(tool).join("v1"))
            .expect("the real-API contract reads");
        let contract = Contract::compile(&source).expect("the real-API contract compiles");
        let fixtures = |kind: &str| -> Vec<Vec<u8>> {
            let mut paths: Vec<PathBuf> =
                std::fs::read_dir(repo.join("fixtures").join(tool).join(kind))
                    .expect("the fixture folder reads")
                    .map(|entry| entry.expect("a fixture entry").path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                    .collect();
            paths.sort();
            paths
                .iter()
                .map(|path| std::fs::read(path).expect("a fixture reads"))
                .collect()
        };
        let (accepted, near_miss, duplicate) = (
            fixtures("accepted"),
            fixtures("near-miss"),
            fixtures("duplicate-key"),
        );
        let inputs = (0..count)
            .map(|index| {
                let pick = |set: &Vec<Vec<u8>>| set[index % set.len()].clone();
                match (index * 7) % 10 {
                    8 => pick(&near_miss),
                    9 => pick(&duplicate),
                    _ => pick(&accepted),
                }
            })
            .collect();
        Workload {
            name: tool,
            contract,
            request: Request::new("req.00000000"),
            now: toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z")
                .expect("a valid timestamp"),
            inputs,
        }
    }

    /// Admits every input once.
    pub fn admit_all(&self) {
        for raw in &self.inputs {
            std::hint::black_box(self.contract.admit(
                std::hint::black_box(raw),
                &self.request,
                self.now,
            ));
        }
    }

    /// Parses every input once with `serde_json` into a `Value`: the baseline.
    pub fn parse_all(&self) {
        for raw in &self.inputs {
            let _ =
                std::hint::black_box(serde_json::from_slice::<Value>(std::hint::black_box(raw)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each workload decides what its inputs were chosen to exercise, so a ratio measured on it
    /// times the admission and rejection paths it claims to.
    #[test]
    fn every_workload_admits_what_it_should() {
        for name in Workload::NAMES {
            let workload = Workload::named(name, 100).expect("a known workload");
            let admitted = workload
                .inputs
                .iter()
                .filter(|raw| {
                    workload
                        .contract
                        .admit(raw, &workload.request, workload.now)
                        .is_admitted()
                })
                .count();
            // small_mix: 70 % successes and 10 % contract-valid failures; the real APIs: 80 %
            // accepted responses.
            assert_eq!(admitted, 80, "{name}");
        }
        assert!(Workload::named("no_such_workload", 1).is_none());
    }
}
