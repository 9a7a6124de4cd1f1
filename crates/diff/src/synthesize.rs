//! Responses built from the schemas themselves, for a verdict no fixture can be edited into a
//! witness of (a tool with no fixtures yet, or none of the shape a change is in): each version's
//! shape schemas give an example the model builds (automata for patterns, bounds, consts), and a
//! request is made to fit it (the request id it carries, the context values its rules read, a
//! decision time inside every freshness window). The gate still decides: a synthesized base is
//! only a starting point, and a witness built from it counts only when both compiled contracts
//! confirm it.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use toolgate_gate::internals::format_timestamp;
use toolgate_model::{Version, edit, example};
use toolgate_repo::{FixtureClass, Prepared, RequestSpec};

use crate::witness::Base;

/// The decision time of every synthesized response: fixed, so a report is the same on every run.
fn decision_time() -> SystemTime {
    // 2026-01-01T00:00:00Z.
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

/// One base per shape of each version whose schema the model can build an example of.
pub(crate) fn bases(from: &Version, to: &Version) -> Vec<Base> {
    let mut out = Vec::new();
    for version in [from, to] {
        for shape in version.shapes() {
            let Some(document) = example(&version.schemas.root(&shape.schema), None) else {
                continue;
            };
            let Some(base) = fitted(version, &shape.name, &shape.schema, document, from, to) else {
                continue;
            };
            out.push(base);
        }
    }
    out
}

/// A base of `document`, with a request that fits it under `version`.
fn fitted(
    version: &Version,
    shape: &str,
    schema: &str,
    mut document: Value,
    from: &Version,
    to: &Version,
) -> Option<Base> {
    let now = decision_time();
    let mut request = RequestSpec {
        request_id: "req_synthesized".to_owned(),
        now: format_timestamp(now),
        context: Map::new(),
        upstream: None,
        upstream_status: None,
    };
    let shapes = version.shapes();
    let current = shapes.iter().find(|candidate| candidate.name == shape)?;
    if let Some(pointer) = &current.request_id
        && let Some(id) = document.pointer(pointer).and_then(Value::as_str)
    {
        request.request_id = id.to_owned();
    }
    for rule in version.rules() {
        let Some((pointer, _)) = current.fields.get(rule.field()) else {
            continue;
        };
        let key = rule.settings["context"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if rule.kind == "freshness" {
            // A minute old: inside any window the contract can state.
            let when = format_timestamp(now.checked_sub(Duration::from_secs(60))?)?;
            document = edit::with_value(&document, pointer, Value::from(when))?;
            continue;
        }
        let Some(value) = document.pointer(pointer).cloned() else {
            continue;
        };
        match rule.kind.as_str() {
            "binding" => {
                request.context.insert(key, value);
            }
            "membership" => {
                request.context.insert(key, Value::Array(vec![value]));
            }
            _ => {}
        }
    }
    let raw = document.to_string().into_bytes();
    let prepared = Prepared {
        raw,
        gate_request: request.to_request(),
        request,
        now,
    };
    Some(Base {
        origin: PathBuf::from(format!(
            "(synthesized from {}'s {shape} schema {schema})",
            version.name
        )),
        class: FixtureClass::Accepted,
        from: prepared.admit(&from.contract, &prepared.raw),
        to: prepared.admit(&to.contract, &prepared.raw),
        document: Some(document),
        prepared,
    })
}
