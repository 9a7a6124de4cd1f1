//! A synthetic repository for measuring the harness at scale: N tools, each a copy of the bundled `job_status` contract under its own name, with M
//! fixtures across every class the coverage check asks for, and their snapshots and lock.
//! With `--stripe N`: one tool instead, the Stripe `payment_intent` contract of the real-API
//! corpus with N accepted fixtures of about 3.4 KB each (a payment intent whose `metadata` map
//! holds 25 to 45 keys), what a connector owner with real traffic adds.

use std::fs;
use std::path::Path;

use std::path::PathBuf;
use std::process::ExitCode;

use toolgate_repo::Status;
use toolgate_repo::UsageError;
use toolgate_runner::{ReportFormat, TestConfig};

const CONTRACT: &str = include_str!("../../../../contracts/job_status/v1/contract.yaml");
const ENVELOPE: &str = include_str!("../../../../contracts/job_status/v1/envelope.schema.json");
const AGENT: &str = include_str!("../../../../contracts/job_status/v1/agent.schema.json");
const REQUEST: &str = include_str!("../../../../fixtures/job_status/request.json");

/// `scale_suite DIR [--tools N] [--fixtures M] | [--stripe N]`: writes the repository, then
/// holds it to the runner (it must pass, snapshots accepted and versions locked).
fn main() -> ExitCode {
    let usage = "usage: scale_suite DIR [--tools N] [--fixtures M] | [--stripe N]";
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("{usage}");
        return ExitCode::from(Status::Unusable.code());
    };
    let (mut tools, mut fixtures, mut stripe) = (200, 50, None);
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|value| value.parse::<usize>().ok());
        match (flag.as_str(), value) {
            ("--tools", Some(value)) => tools = value,
            ("--fixtures", Some(value)) => fixtures = value,
            ("--stripe", Some(value)) => stripe = Some(value),
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(Status::Unusable.code());
            }
        }
    }
    let generated = match stripe {
        Some(count) => generate_stripe(&dir, count),
        None => generate(&dir, tools, fixtures),
    };
    match generated {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scale_suite: error: {error}");
            ExitCode::from(Status::Unusable.code())
        }
    }
}

/// The fixtures every tool gets: the cases the coverage check requires, then variations.
const REQUIRED: [(&str, &str, &str, &str); 9] = [
    (
        "near-miss",
        "extra_property",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"project_id":"bluebird","run_id":"run_8f3kQ2LmZx9T","state":"failed","observed_at":"2026-11-29T11:55:00Z","debug":"x"}}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "near-miss",
        "null_data",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":null}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "near-miss",
        "empty_run_id",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"project_id":"bluebird","run_id":"","state":"failed","observed_at":"2026-11-29T11:55:00Z"}}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "near-miss",
        "array_data",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":[]}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "near-miss",
        "oversized_time",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"project_id":"bluebird","run_id":"run_8f3kQ2LmZx9T","state":"failed","observed_at":"2026-11-29T11:55:00.000000000000000001Z"}}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "near-miss",
        "data_and_error",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"project_id":"bluebird","run_id":"run_8f3kQ2LmZx9T","state":"failed","observed_at":"2026-11-29T11:55:00Z"},"error":{"code":"NOT_FOUND","retryable":false}}"#,
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "duplicate-key",
        "top_level",
        r#"{"tool":"TOOL","tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success"}"#,
        "expect: { outcome: rejected, layer: parse, rule: duplicate_member, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "duplicate-key",
        "nested",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"state":"failed","state":"running"}}"#,
        "expect: { outcome: rejected, layer: parse, rule: duplicate_member, code: INVALID_RESPONSE, retryable: false }\n",
    ),
    (
        "duplicate-key",
        "escaped",
        r#"{"tool":"TOOL","request_id":"req.J7q94MkP","outcome":"success","data":{"state":"failed","st\u0061te":"running"}}"#,
        "expect: { outcome: rejected, layer: parse, rule: duplicate_member, code: INVALID_RESPONSE, retryable: false }\n",
    ),
];

/// Writes the repository into `dir` (which must not exist yet), then accepts its snapshots and
/// locks its contracts by running the suite once with `--accept`.
fn generate(dir: &Path, tools: usize, fixtures: usize) -> Result<(), UsageError> {
    if dir.exists() {
        return Err(UsageError::new(format!(
            "{}: already exists; give a new folder",
            dir.display()
        )));
    }
    if fixtures < REQUIRED.len() + 1 {
        return Err(UsageError::new(format!(
            "--fixtures must be at least {} (the cases coverage requires, and one accepted)",
            REQUIRED.len() + 1
        )));
    }
    let write = |path: &Path, text: &str| -> Result<(), UsageError> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|error| UsageError::io(parent, "create", &error))?;
        }
        fs::write(path, text).map_err(|error| UsageError::io(path, "write", &error))
    };
    let runs = ["run_8f3kQ2LmZx9T", "run_A1b2C3d4E5f6", "run_Q7w8E9r0T1y2U3"];
    let states = ["failed", "running", "succeeded", "cancelled"];
    for index in 0..tools {
        let tool = format!("tool_{index:04}");
        let contract = dir.join("contracts").join(&tool).join("v1");
        write(
            &contract.join("contract.yaml"),
            &CONTRACT.replace("job_status", &tool),
        )?;
        write(
            &contract.join("envelope.schema.json"),
            &ENVELOPE.replace("job_status", &tool),
        )?;
        write(
            &contract.join("agent.schema.json"),
            &AGENT.replace("job_status", &tool),
        )?;
        let fixtures_dir = dir.join("fixtures").join(&tool);
        write(&fixtures_dir.join("request.json"), REQUEST)?;
        for (class, case, raw, sidecar) in REQUIRED {
            write(
                &fixtures_dir.join(class).join(format!("{case}.json")),
                &raw.replace("TOOL", &tool),
            )?;
            write(
                &fixtures_dir.join(class).join(format!("{case}.expect.yaml")),
                sidecar,
            )?;
        }
        for variant in 0..fixtures - REQUIRED.len() {
            let (run, state) = (runs[variant % runs.len()], states[variant % states.len()]);
            let minute = 46 + variant % 14;
            let project = if variant % 5 == 4 {
                "copperhead"
            } else {
                "bluebird"
            };
            let raw = format!(
                r#"{{"tool":"{tool}","request_id":"req.J7q94MkP","outcome":"success","data":{{"project_id":"{project}","run_id":"{run}","state":"{state}","observed_at":"2026-11-29T11:{minute:02}:{:02}Z"}}}}"#,
                variant % 60
            );
            let (class, sidecar) = if project == "copperhead" {
                (
                    "near-miss",
                    "expect: { outcome: rejected, layer: semantic, rule: project_binding, code: INVALID_RESPONSE, retryable: false }\n",
                )
            } else {
                ("accepted", "expect: { outcome: admitted }\n")
            };
            write(
                &fixtures_dir
                    .join(class)
                    .join(format!("variant_{variant:04}.json")),
                &raw,
            )?;
            write(
                &fixtures_dir
                    .join(class)
                    .join(format!("variant_{variant:04}.expect.yaml")),
                sidecar,
            )?;
        }
    }
    accept(dir)
}

/// Runs the suite in `dir` once with `--accept`: it must pass.
fn accept(dir: &Path) -> Result<(), UsageError> {
    let options = TestConfig {
        root: dir.to_path_buf(),
        format: ReportFormat::Json,
        accept: true,
        ..TestConfig::default()
    };
    let status = toolgate_runner::test(&options, &mut std::io::sink(), &mut std::io::stderr())?;
    if status != Status::Passed {
        return Err(UsageError::new(format!(
            "{}: the generated suite does not pass (exit {}); this is a bug in the generator",
            dir.display(),
            status.code()
        )));
    }
    Ok(())
}

/// The real-API corpus's Stripe tool with `count` more accepted fixtures of about 3.4 KB.
fn generate_stripe(dir: &Path, count: usize) -> Result<(), UsageError> {
    if dir.exists() {
        return Err(UsageError::new(format!(
            "{}: already exists; give a new folder",
            dir.display()
        )));
    }
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpora/real-apis/repo");
    for part in ["contracts/payment_intent", "fixtures/payment_intent"] {
        copy_tree(&corpus.join(part), &dir.join(part))?;
    }
    let accepted = dir.join("fixtures/payment_intent/accepted");
    let seed = accepted.join("card_declined.json");
    let text = fs::read_to_string(&seed).map_err(|error| UsageError::io(&seed, "read", &error))?;
    let base: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| UsageError::new(format!("{}: {error}", seed.display())))?;
    // A fixed linear congruential sequence: the same suite on every run.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % below
    };
    for index in 0..count {
        let mut intent = base.clone();
        intent["amount"] = (50 + next(1_000_000)).into();
        intent["id"] = format!("pi_{:012x}{:012x}", next(1 << 48), next(1 << 48)).into();
        let keys = 25 + next(21);
        let metadata: serde_json::Map<String, serde_json::Value> = (0..keys)
            .map(|key| {
                let value: String = (0..40)
                    .map(|_| char::from(b"abcdefghij "[next(11) as usize]))
                    .collect();
                (format!("k{key:02}"), value.into())
            })
            .collect();
        intent["metadata"] = metadata.into();
        let pretty = serde_json::to_string_pretty(&intent).unwrap_or_default();
        let name = accepted.join(format!("generated_{index:04}.json"));
        fs::write(&name, pretty).map_err(|error| UsageError::io(&name, "write", &error))?;
        let sidecar = accepted.join(format!("generated_{index:04}.expect.yaml"));
        fs::write(&sidecar, "expect: { outcome: admitted }\n")
            .map_err(|error| UsageError::io(&sidecar, "write", &error))?;
    }
    accept(dir)
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), UsageError> {
    fs::create_dir_all(to).map_err(|error| UsageError::io(to, "create", &error))?;
    let entries = fs::read_dir(from).map_err(|error| UsageError::io(from, "read", &error))?;
    for entry in entries {
        let entry = entry.map_err(|error| UsageError::io(from, "read", &error))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            fs::copy(&source, &target).map_err(|error| UsageError::io(&source, "copy", &error))?;
        }
    }
    Ok(())
}
