//! The admission path's shortcuts (the gate's own `Document`, the `oneOf` narrowed by the outcome
//! member, the positional pattern matcher) on contracts nobody tuned them for: each decides
//! exactly as the plain reference validator over serde_json's `Value`. The hand-written cases are
//! the shapes that once disagreed; `random_contracts` generates many more.

mod common;

use common::{REQUEST_ID, now};
use toolgate_gate::internals::stages;
use toolgate_gate::{Contract, ContractSource, Request};

/// A tree of results: the envelope's success data is a node of another file, and a node's child
/// is a whole envelope again (`node.schema.json` refers back to the root).
fn tree_of_results() -> Contract {
    let contract = "tool: tree
version: 1
direction: result
shape:
  schema: envelope.schema.json
  outcome: { pointer: /outcome, success: success, failure: failure }
  error_code: /error/code
  correlation: { tool: /tool, request_id: /request_id }
  fields:
    - { name: name, from: /data/name }
agent_schema: agent.schema.json
";
    let envelope = r#"{
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "tool": {"const": "tree"},
                    "request_id": {"type": "string"},
                    "outcome": {"const": "success"},
                    "data": {"$ref": "node.schema.json#/$defs/node"}
                }
            },
            {
                "type": "object",
                "properties": {
                    "tool": {"const": "tree"},
                    "request_id": {"type": "string"},
                    "outcome": {"const": "failure"},
                    "error": {
                        "type": "object",
                        "required": ["code", "retryable"],
                        "properties": {
                            "code": {"enum": ["NOT_FOUND", "UPSTREAM_UNAVAILABLE", "INVALID_RESPONSE"]},
                            "retryable": {"type": "boolean"}
                        }
                    }
                }
            }
        ]
    }"#;
    let node = r#"{
        "$defs": {
            "node": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "child": {"$ref": "envelope.schema.json"}
                }
            }
        }
    }"#;
    let source = ContractSource::new(contract)
        .with_schema("envelope.schema.json", envelope)
        .with_schema("node.schema.json", node)
        .with_schema("agent.schema.json", "{}");
    Contract::compile(&source).unwrap_or_else(|errors| panic!("{errors}"))
}

/// The gate's decision on `raw` (admitted or not), after checking that every shortcut agrees with
/// the reference on it.
fn admitted(contract: &Contract, raw: &str) -> bool {
    let document = stages::parse(contract, raw.as_bytes()).expect("valid JSON");
    assert!(
        stages::schema_agrees_with_reference(contract, &document),
        "the admission path and its reference disagree on {raw}"
    );
    contract
        .admit(raw.as_bytes(), &Request::new(REQUEST_ID), now())
        .is_admitted()
}

#[test]
fn a_file_that_refers_back_to_the_root_keeps_its_meaning_under_the_narrowed_one_of() {
    let contract = tree_of_results();
    let success = |data: &str| {
        format!(
            r#"{{"tool":"tree","request_id":"{REQUEST_ID}","outcome":"success","data":{data}}}"#
        )
    };
    // A nested `{}` matches both branches of the envelope (neither requires a member), so
    // `oneOf` fails there and the reference rejects the tree.
    assert!(!admitted(
        &contract,
        &success(r#"{"name":"root","child":{}}"#)
    ));
    // A nested success and a nested failure are envelopes: the tree is admitted.
    assert!(admitted(
        &contract,
        &success(r#"{"name":"root","child":{"outcome":"success","data":{"name":"leaf"}}}"#)
    ));
    assert!(admitted(
        &contract,
        &success(
            r#"{"name":"root","child":{"outcome":"failure","error":{"code":"NOT_FOUND","retryable":false}}}"#
        )
    ));
}
