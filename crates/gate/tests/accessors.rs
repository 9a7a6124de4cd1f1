//! What an adapter reads to log a decision, read back through every public accessor: each must
//! return what the record itself holds (its serialized form is the independent reference) and
//! what the call really was.

mod common;

use common::*;
use serde_json::Value;
use toolgate_gate::{Contract, Decision, GATE_VERSION, Layer, Response, Sha256Digest};

/// SHA-256 of `abc` (FIPS 180-2, appendix B.1).
const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

fn admit(contract: &Contract, response: Response<'_>) -> Decision {
    contract.admit_response(response, &job_request(), now())
}

/// A success with two faults: a state outside the enum, and a member the envelope does not allow.
fn unknown_state_and_extra_member() -> String {
    format!(
        r#"{{"tool":"job_status","request_id":"{REQUEST_ID}","outcome":"success","data":{{"project_id":"bluebird","run_id":"run_8f3kQ2LmZx9T","state":"exploded","observed_at":"2026-11-29T11:59:00Z"}},"extra":1}}"#
    )
}

fn serialized(record: &toolgate_gate::OperatorRecord) -> Value {
    serde_json::to_value(record).unwrap()
}

/// Every accessor of the record agrees with the record's own serialization, member by member.
fn assert_accessors_match_serialization(record: &toolgate_gate::OperatorRecord) {
    let json = serialized(record);
    let text = |name: &str| json[name].as_str().map(str::to_owned);
    assert_eq!(Some(record.layer().as_str().to_owned()), text("layer"));
    assert_eq!(Some(record.rule().to_owned()), text("rule"));
    assert_eq!(Some(record.code().as_str().to_owned()), text("code"));
    assert_eq!(Some(record.message().to_owned()), text("message"));
    assert_eq!(
        record.instance_path().map(str::to_owned),
        text("instance_path")
    );
    assert_eq!(
        record.keyword_location().map(str::to_owned),
        text("keyword_location")
    );
    assert_eq!(Some(record.hint().to_owned()), text("hint"));
    assert_eq!(
        record.upstream_status().map(u64::from),
        json["upstream_status"].as_u64()
    );
    assert_eq!(Some(record.raw_len() as u64), json["raw_len"].as_u64());
    assert_eq!(Some(record.raw_sha256().to_owned()), text("raw_sha256"));
    assert_eq!(Some(record.tool().to_owned()), text("tool"));
    assert_eq!(
        Some(record.contract_version().to_owned()),
        text("contract_version")
    );
    assert_eq!(Some(record.gate_version().to_owned()), text("gate_version"));
    assert_eq!(Some(record.request_id().to_owned()), text("request_id"));
    let findings = json["findings"].as_array().cloned().unwrap_or_default();
    assert_eq!(record.findings().len(), findings.len());
    for (finding, json) in record.findings().iter().zip(&findings) {
        assert_eq!(
            Some(finding.instance_path()),
            json["instance_path"].as_str()
        );
        assert_eq!(
            Some(finding.keyword_location()),
            json["keyword_location"].as_str()
        );
        assert_eq!(Some(finding.message()), json["message"].as_str());
    }
}

#[test]
fn a_schema_rejection_record_reads_back_exactly() {
    let contract = bundled("job_status");
    let raw = unknown_state_and_extra_member();
    let decision = admit(&contract, Response::body(raw.as_bytes()).with_status(200));
    let record = decision
        .operator_record()
        .expect("a rejection has a record");
    assert_accessors_match_serialization(record);

    assert_eq!(record.layer(), Layer::Schema);
    assert_eq!(record.rule(), "enum");
    assert_eq!(record.instance_path(), Some("/data/state"));
    assert_eq!(
        record.keyword_location(),
        Some("/$defs/run/properties/state/enum")
    );
    assert!(
        record.message().contains("exploded"),
        "{}",
        record.message()
    );
    assert!(record.hint().contains("closed set"), "{}", record.hint());
    assert_eq!(record.upstream_status(), Some(200));
    assert_eq!(record.raw_len(), raw.len());
    assert_eq!(
        record.raw_sha256(),
        Sha256Digest::of(raw.as_bytes()).to_hex()
    );
    assert_eq!(record.tool(), "job_status");
    assert_eq!(record.contract_version(), "v1");
    assert_eq!(record.gate_version(), GATE_VERSION);
    assert_eq!(record.gate_version(), env!("CARGO_PKG_VERSION"));
    assert_eq!(record.request_id(), REQUEST_ID);

    // The other branch's complaint, as a finding.
    let [finding] = record.findings() else {
        panic!("one finding: {:?}", record.findings());
    };
    assert_eq!(finding.instance_path(), "");
    assert_eq!(finding.keyword_location(), "/oneOf/0/additionalProperties");
    assert!(
        finding.message().contains("'extra' was unexpected"),
        "{}",
        finding.message()
    );
}

#[test]
fn a_parse_rejection_record_reads_back_exactly() {
    let contract = bundled("job_status");
    let decision = admit(&contract, Response::body(b"abc"));
    let record = decision
        .operator_record()
        .expect("a rejection has a record");
    assert_accessors_match_serialization(record);
    assert_eq!((record.layer(), record.rule()), (Layer::Parse, "syntax"));
    assert_eq!(record.raw_len(), 3);
    assert_eq!(record.raw_sha256(), ABC_SHA256);
    assert_eq!(Sha256Digest::of(b"abc").to_hex(), ABC_SHA256);
    assert_eq!(record.upstream_status(), None);
    assert!(record.findings().is_empty());
    assert!(
        record.message().contains("line 1 column 1"),
        "{}",
        record.message()
    );
}

#[test]
fn the_audit_event_names_the_call_and_digests_both_sides() {
    let contract = bundled("job_status");
    for raw in [
        &b"abc"[..],
        include_bytes!("../../../fixtures/job_status/accepted/running_with_offset.json"),
    ] {
        let decision = admit(&contract, Response::body(raw));
        let event = decision.audit_event();
        assert_eq!(event.request_id(), REQUEST_ID);
        assert_eq!(event.raw_sha256(), Sha256Digest::of(raw));
        assert_eq!(
            event.agent_sha256(),
            Sha256Digest::of(decision.agent_bytes())
        );
        let line: Value = serde_json::from_slice(&event.to_json_line()).unwrap();
        assert_eq!(line["outcome"].as_str(), Some(event.outcome()));
        let expected = if decision.is_admitted() {
            "admitted"
        } else {
            "rejected"
        };
        assert_eq!(event.outcome(), expected);
    }
}

#[test]
fn a_response_reads_back_what_the_adapter_gave() {
    let body = b"{\"a\":1}";
    let response = Response::body(body).with_status(503);
    assert_eq!(response.bytes(), body);
    assert_eq!(response.status(), Some(503));
    assert_eq!(Response::body(body).status(), None);
    let unreachable = Response::unreachable("connection refused");
    assert_eq!(unreachable.bytes(), b"");
    assert_eq!(unreachable.status(), None);
}

/// `toolgate check --explain` prints the record's `Display`: every part of the record, labelled.
#[test]
fn the_record_prints_every_part_labelled() {
    let contract = bundled("job_status");
    let raw = unknown_state_and_extra_member();
    let decision = admit(&contract, Response::body(raw.as_bytes()).with_status(200));
    let sha = Sha256Digest::of(raw.as_bytes()).to_hex();
    // The digest of the contract's own bytes, the one the contract lock holds for job_status v1.
    let digest = contract.digest().to_hex();
    assert_eq!(
        digest,
        "62b1d30d950b71ab18ebcbf6c954ffae3b9763100ad4d2beb15bc2395e30b7ac"
    );
    assert_eq!(
        decision.operator_record().unwrap().to_string(),
        format!(
            "rejected by job_status v1 at layer `schema`, rule `enum` (INVALID_RESPONSE, not retryable)
  what:     \"exploded\" is not one of \"failed\", \"running\" or 2 other candidates
  where:    /data/state
  schema:   /$defs/run/properties/state/enum
  also:     (root): Additional properties are not allowed ('extra' was unexpected) [/oneOf/0/additionalProperties]
  upstream: status 200
  raw:      196 bytes, sha256 {sha}
  request:  req.J7q94MkP (gate {GATE_VERSION})
  contract: sha256 {digest}
  fix:      a value is outside the closed set the contract allows: either the response is not this tool's answer (wrong tool, a stale or foreign state or code), or the upstream added a value the contract does not list yet; if the upstream's documentation or changelog lists it, publish a new contract version that admits it"
        )
    );
    let decision = admit(&contract, Response::body(b"abc"));
    assert_eq!(
        decision.operator_record().unwrap().contract_digest(),
        digest
    );
    assert_eq!(
        decision.operator_record().unwrap().to_string(),
        format!(
            "rejected by job_status v1 at layer `parse`, rule `syntax` (INVALID_RESPONSE, not retryable)
  what:     expected value at line 1 column 1
  where:    (the whole document)
  raw:      3 bytes, sha256 {ABC_SHA256}
  request:  req.J7q94MkP (gate {GATE_VERSION})
  contract: sha256 {digest}
  fix:      the bytes are not JSON as RFC 8259 defines it (NaN, Infinity, comments, single quotes and trailing commas are not JSON)"
        )
    );
}
