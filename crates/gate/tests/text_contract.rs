//! Text tools: an SSH command's stdout goes through the same gate as JSON.

use std::time::SystemTime;

use toolgate_gate::{Contract, ContractSource, Layer, Outcome, Request};

/// `systemctl is-active nginx` on a host, as a contract: exactly one state word and nothing else.
fn service_state() -> Contract {
    let source = ContractSource::new(
        r#"
tool: service_state
version: 1
direction: result
limits: { max_bytes: 256 }
shape:
  schema: captures.schema.json
  text_pattern: '(?P<state>active|inactive|failed|activating)\n?'
  fields:
    - { name: state, from: /state }
agent_schema: agent.schema.json
"#,
    )
    .with_schema(
        "captures.schema.json",
        r#"{"type": "object", "required": ["state"], "properties": {"state": {"enum": ["active", "inactive", "failed"]}}, "additionalProperties": false}"#,
    )
    .with_schema("agent.schema.json", r#"{"type": "object"}"#);
    Contract::compile(&source).unwrap()
}

fn admit(stdout: &[u8]) -> toolgate_gate::Decision {
    service_state().admit(
        stdout,
        &Request::new("req.00000001"),
        SystemTime::UNIX_EPOCH,
    )
}

#[test]
fn the_one_fact_is_extracted_and_projected() {
    let decision = admit(b"active\n");
    assert_eq!(decision.outcome(), &Outcome::Admitted);
    assert_eq!(
        std::str::from_utf8(decision.agent_bytes()).unwrap(),
        r#"{"tool":"service_state","request_id":"req.00000001","outcome":"success","data":{"state":"active"}}"#
    );
}

#[test]
fn any_extra_line_rejects() {
    for stdout in [
        &b"active\nWarning: The unit file changed on disk.\n"[..],
        b"Welcome to host-1!\nactive\n",
        b"active\n\n",
    ] {
        let decision = admit(stdout);
        let rejection = decision.rejection().expect("rejected");
        assert_eq!(
            (rejection.layer(), decision.rule().unwrap()),
            (Layer::Parse, "text_pattern")
        );
        assert!(
            !std::str::from_utf8(decision.agent_bytes())
                .unwrap()
                .contains("Warning")
        );
    }
}

#[test]
fn captures_still_go_through_the_schema() {
    // The pattern allows `activating`, the schema does not: the schema has the last word.
    let decision = admit(b"activating\n");
    assert_eq!(decision.rejection().unwrap().layer(), Layer::Schema);
}

#[test]
fn text_must_be_utf8() {
    assert_eq!(admit(b"activ\xffe\n").rule().unwrap(), "invalid_utf8");
}
