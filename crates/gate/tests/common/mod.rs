//! Shared helpers for the gate's integration tests: the bundled contracts and their requests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::json;
use toolgate_gate::{Contract, ContractSource, Request};

/// The repository's `contracts/` folder.
pub(crate) fn contracts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../contracts")
}

/// Compiles a bundled contract (v1).
pub(crate) fn bundled(tool: &str) -> Contract {
    let source = ContractSource::read_dir(contracts_dir().join(tool).join("v1"))
        .expect("bundled contract reads");
    Contract::compile(&source)
        .unwrap_or_else(|errors| panic!("bundled contract {tool} compiles:\n{errors}"))
}

/// The decision time every test uses.
pub(crate) fn now() -> SystemTime {
    toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z").unwrap()
}

pub(crate) const REQUEST_ID: &str = "req.J7q94MkP";

pub(crate) fn request() -> Request {
    Request::new(REQUEST_ID)
}

pub(crate) fn job_request() -> Request {
    Request::new(REQUEST_ID)
        .with_context("project_id", "bluebird")
        .with_context("runs", json!(["run_8f3kQ2LmZx9T", "run_A1b2C3d4E5f6"]))
}

pub(crate) fn ticket_request() -> Request {
    Request::new(REQUEST_ID)
        .with_context("tenant", "demo-a")
        .with_context(
            "tickets",
            json!({
                "7": {"tenant": "demo-a", "status": "resolved"},
                "8": {"tenant": "demo-b", "status": "resolved"},
                "9": {"tenant": "demo-a", "status": "open"}
            }),
        )
}

/// The agent bytes as text.
pub(crate) fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("agent bytes are UTF-8")
}

/// The fixed failure envelope for `tool`.
pub(crate) fn failure(tool: &str, code: &str, retryable: bool) -> String {
    format!(
        r#"{{"tool":"{tool}","request_id":"{REQUEST_ID}","outcome":"failure","error":{{"code":"{code}","retryable":{retryable}}}}}"#
    )
}

pub(crate) fn job_success(project: &str, run: &str, observed_at: &str) -> String {
    format!(
        r#"{{"tool":"job_status","request_id":"{REQUEST_ID}","outcome":"success","data":{{"project_id":"{project}","run_id":"{run}","state":"failed","observed_at":"{observed_at}"}}}}"#
    )
}
