//! What retention keeps of a decision: enough to decide it again exactly (the same agent bytes,
//! the same operator record, the same audit line), in a form whose raw bytes are the evidence
//! itself; a secret context key only as a digest; every refusal, and admissions sampled by their
//! bytes.

mod common;

use common::{bundled, job_request, now};
use serde_json::{Map, Value, json};
use toolgate_gate::{
    Contract, Decision, Request, Response, Retained, RetentionPolicy, SecretContext, Sha256Digest,
};

fn job(project: &str, observed_at: &str) -> Vec<u8> {
    format!(r#"{{"tool":"job_status","request_id":"req.J7q94MkP","outcome":"success","data":{{"project_id":"{project}","run_id":"run_8f3kQ2LmZx9T","state":"failed","observed_at":"{observed_at}"}}}}"#).into_bytes()
}

/// The operator's key for secret context digests in these tests.
const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

/// Decides `retained` again under `contract`, with `secrets` for its secret keys.
fn again(contract: &Contract, retained: &Retained, secrets: &Map<String, Value>) -> Decision {
    contract.admit_response(
        retained.response(),
        &retained.request(secrets, Some(KEY)).unwrap(),
        retained.time().unwrap(),
    )
}

#[test]
fn a_kept_decision_is_decided_again_exactly() {
    let contract = bundled("job_status");
    let time = now() + std::time::Duration::from_nanos(123_456_789);
    for (raw, status) in [
        (job("copperhead", "2026-11-29T11:55:00Z"), None),
        (job("bluebird", "2026-11-29T11:55:00Z"), Some(200)),
        (b"{\"oops\":".to_vec(), None),
        (b"<html>busy</html>".to_vec(), Some(503)),
    ] {
        let mut response = Response::body(&raw);
        if let Some(status) = status {
            response = response.with_status(status);
        }
        let request = job_request().with_upstream("GET https://ci.example.invalid/runs/latest");
        let decision = contract.admit_response(response, &request, time);
        let retained = Retained::of(&decision, &response, &request, &SecretContext::none());
        // Kept as a line of facts and the raw bytes themselves.
        let bytes = retained.to_bytes();
        assert!(bytes.ends_with(&raw));
        let read = Retained::from_bytes(&bytes).unwrap();
        assert_eq!(read, retained);
        assert_eq!(read.contract_digest, contract.digest().to_hex());
        let decided = again(&contract, &read, &Map::new());
        assert_eq!(decided.agent_bytes(), decision.agent_bytes());
        assert_eq!(decided.operator_record(), decision.operator_record());
        assert_eq!(
            decided.audit_event().to_json_line(),
            decision.audit_event().to_json_line()
        );
    }
    // A transport failure or an answer without a result is kept as what the adapter said.
    let request = job_request();
    for response in [
        Response::unreachable("connection refused"),
        Response::incomplete("input_required"),
    ] {
        let decision = contract.admit_response(response, &request, now());
        let read = Retained::from_bytes(
            &Retained::of(&decision, &response, &request, &SecretContext::none()).to_bytes(),
        )
        .unwrap();
        let decided = again(&contract, &read, &Map::new());
        assert_eq!(decided.operator_record(), decision.operator_record());
    }
}

#[test]
fn kept_bytes_that_do_not_match_their_facts_are_refused() {
    let contract = bundled("job_status");
    let raw = job("copperhead", "2026-11-29T11:55:00Z");
    let response = Response::body(&raw);
    let decision = contract.admit_response(response, &job_request(), now());
    let mut bytes =
        Retained::of(&decision, &response, &job_request(), &SecretContext::none()).to_bytes();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    assert!(
        Retained::from_bytes(&bytes)
            .unwrap_err()
            .contains("digest differs")
    );
    assert!(Retained::from_bytes(b"no facts").is_err());
    let mut facts = Retained::of(&decision, &response, &job_request(), &SecretContext::none());
    facts.format_version = 99;
    assert!(
        Retained::from_bytes(&facts.to_bytes())
            .unwrap_err()
            .contains("format 99")
    );
    // A later format's record, with a field this reader does not know: the format is what is
    // said, not the field.
    let later =
        String::from_utf8(facts.to_bytes())
            .unwrap()
            .replacen('{', r#"{"a_later_field":true,"#, 1);
    let said = Retained::from_bytes(later.as_bytes()).unwrap_err();
    assert!(
        said.contains("format 99 (this toolgate reads format 1)"),
        "{said}"
    );
}

#[test]
fn a_secret_context_key_is_kept_as_its_keyed_digest_and_must_be_supplied() {
    let contract = bundled("job_status");
    let raw = job("bluebird", "2026-11-29T11:55:00Z");
    let response = Response::body(&raw);
    let decision = contract.admit_response(response, &job_request(), now());
    let secret = SecretContext::new(vec!["runs".to_owned()], KEY).unwrap();
    let retained = Retained::of(&decision, &response, &job_request(), &secret);
    assert!(
        !retained
            .to_bytes()
            .windows(10)
            .any(|window| window == b"run_A1b2C3")
    );
    let right: Map<String, Value> = [(
        "runs".to_owned(),
        json!(["run_8f3kQ2LmZx9T", "run_A1b2C3d4E5f6"]),
    )]
    .into_iter()
    .collect();
    assert!(retained.context.get("runs").is_none());
    // Keyed: the value's plain SHA-256 (a dictionary's guess) is not what is kept.
    let kept = &retained.context_hmac_sha256["runs"];
    let guessed = Sha256Digest::of(&serde_json::to_vec(&right["runs"]).unwrap()).to_hex();
    assert_ne!(*kept, guessed);
    assert!(retained.context_sha256.is_empty());
    // A value is checked only with the key, and the right one.
    assert!(
        retained
            .request(&Map::new(), Some(KEY))
            .unwrap_err()
            .contains("`runs`")
    );
    assert!(
        retained
            .request(&right, None)
            .unwrap_err()
            .contains("--retain-secret-key")
    );
    assert!(
        retained
            .request(&right, Some(b"another key, of thirty-two bytes"))
            .unwrap_err()
            .contains("not the one that decided")
    );
    let wrong: Map<String, Value> = [("runs".to_owned(), json!(["run_other"]))]
        .into_iter()
        .collect();
    assert!(
        retained
            .request(&wrong, Some(KEY))
            .unwrap_err()
            .contains("not the one that decided")
    );
    assert_eq!(
        again(&contract, &retained, &right).agent_bytes(),
        decision.agent_bytes()
    );
    // A short key is refused.
    assert!(SecretContext::new(vec!["runs".to_owned()], b"short").is_err());
    // A record written before the key was required (its plain digest) is still checked.
    let mut older = retained.clone();
    older.context_hmac_sha256.clear();
    older.context_sha256.insert("runs".to_owned(), guessed);
    assert!(older.request(&right, None).is_ok());
    assert!(older.request(&wrong, None).is_err());
}

#[test]
fn every_refusal_is_kept_and_admissions_at_their_rate_chosen_by_their_bytes() {
    let contract = bundled("review_status");
    let decide = |raw: &[u8]| contract.admit(raw, &Request::new("req.J7q94MkP"), now());
    let refused = decide(b"{}");
    for rate in [0.0, 0.01, 1.0] {
        assert!(RetentionPolicy::new(rate).keeps(&refused));
    }
    let admitted: Vec<Decision> = (0..2000)
        .map(|index| {
            decide(format!(r#"{{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{{"change_id":"CR-{index}","decision":"approved","reviewed_by":"ana"}}}}"#).as_bytes())
        })
        .collect();
    assert!(admitted.iter().all(Decision::is_admitted));
    let kept = |rate: f64| {
        admitted
            .iter()
            .filter(|decision| RetentionPolicy::new(rate).keeps(decision))
            .count()
    };
    assert_eq!(kept(0.0), 0);
    assert_eq!(kept(1.0), 2000);
    // About a tenth (the digests are uniform), and the same ones every time.
    let tenth = kept(0.1);
    assert!((120..=280).contains(&tenth), "{tenth}");
    assert_eq!(kept(0.1), tenth);
    // A sample at a higher rate holds every one a lower rate keeps.
    assert!(
        admitted
            .iter()
            .all(|decision| !RetentionPolicy::new(0.1).keeps(decision)
                || RetentionPolicy::new(0.5).keeps(decision))
    );
}

#[test]
fn the_same_bytes_decided_twice_are_kept_under_two_names_one_digest() {
    let contract = bundled("job_status");
    let raw = job("copperhead", "2026-11-29T11:55:00Z");
    let response = Response::body(&raw);
    let names: Vec<String> = ["req.J7q94MkP", "req.Other0001"]
        .into_iter()
        .map(|id| {
            let request = job_request();
            let request = Request::new(id).with_context_map(request.context().clone());
            let decision = contract.admit_response(response, &request, now());
            Retained::of(&decision, &response, &request, &SecretContext::none()).name()
        })
        .collect();
    assert_ne!(names[0], names[1]);
    let digest = Sha256Digest::of(&raw).to_hex();
    for name in &names {
        assert!(name.starts_with(&format!("job_status/{digest}-")), "{name}");
    }
}

#[test]
fn a_call_a_shadow_version_decides_otherwise_is_kept_whatever_the_rate() {
    let enforced = bundled("review_status");
    // The candidate no longer admits `approved`.
    let folder = common::contracts_dir().join("review_status/v1");
    let read = |name: &str| std::fs::read_to_string(folder.join(name)).unwrap();
    let candidate = Contract::compile(
        &toolgate_gate::ContractSource::new(
            read("contract.yaml").replace("version: 1", "version: 2"),
        )
        .with_schema(
            "envelope.schema.json",
            read("envelope.schema.json").replace(
                r#"["approved", "rejected", "pending"]"#,
                r#"["rejected", "pending"]"#,
            ),
        )
        .with_schema("agent.schema.json", read("agent.schema.json")),
    )
    .unwrap();
    let raw = br#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{"change_id":"CR-1","decision":"approved","reviewed_by":"ana"}}"#;
    let request = Request::new("req.J7q94MkP");
    let decision = enforced.admit(raw, &request, now());
    assert!(decision.is_admitted());
    let never = RetentionPolicy::new(0.0);
    assert!(!never.keeps(&decision));
    // The same version beside it agrees: nothing to keep.
    let agreed = decision
        .clone()
        .with_shadow(&enforced.admit(raw, &request, now()));
    assert!(!agreed.shadow_disagrees() && !never.keeps(&agreed));
    let disagreed = decision.with_shadow(&candidate.admit(raw, &request, now()));
    assert!(disagreed.shadow_disagrees() && never.keeps(&disagreed));
    assert_eq!(disagreed.shadow().unwrap().outcome, "rejected");
}

/// A session endpoint that hands back a token: the contract promises the user, and its store
/// keeps no token.
fn session_contract(retention: &str) -> Contract {
    let yaml = format!(
        "tool: session\nversion: 1\ndirection: result\nshape:\n  schema: session.json\n  fields:\n    - {{ name: user, from: /user }}\n{retention}"
    );
    let schema = r#"{"type": "object", "required": ["user", "token"], "properties": {"user": {"type": "string", "maxLength": 20}, "token": {"type": "string", "maxLength": 64}, "keys": {"type": "array", "items": {"type": "object", "properties": {"secret": {"type": "string"}}}}}, "additionalProperties": false}"#;
    let source = toolgate_gate::ContractSource::new(yaml).with_schema("session.json", schema);
    Contract::compile(&source).unwrap_or_else(|errors| panic!("{errors}"))
}

#[test]
fn named_secrets_are_redacted_in_place_before_a_decision_is_kept() {
    let contract = session_contract("retention:\n  redact: [/token, \"/keys/*/secret\"]\n");
    let request = Request::new("req.J7q94MkP");
    // Admitted and refused alike: the refusal (a user too long) is what a store keeps.
    for (raw, admitted) in [
        (&br#"{"user": "ana", "token": "tok_live_9Qz", "keys": [{"secret": "k1"}, {"secret": "k2"}]}"#[..], true),
        (br#"{"user": "a-name-longer-than-twenty", "token": "tok_live_9Qz", "keys": []}"#, false),
    ] {
        let response = Response::body(raw);
        let decision = contract.admit_response(response, &request, now());
        assert_eq!(decision.is_admitted(), admitted);
        let retained = Retained::of(&decision, &response, &request, &SecretContext::none());
        let bytes = retained.to_bytes();
        let kept = String::from_utf8(retained.raw.clone()).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("tok_live"), "{kept}");
        assert!(!kept.contains("\"k1\"") && !kept.contains("\"k2\""), "{kept}");
        assert!(kept.contains(r#""token": "[redacted]""#), "{kept}");
        // The received bytes' digest still names it (the audit line's), and what was kept reads
        // back under its own.
        assert_eq!(retained.raw_sha256, Sha256Digest::of(raw).to_hex());
        assert_eq!(retained.raw_len, raw.len());
        let read = Retained::from_bytes(&bytes).unwrap();
        assert_eq!(read, retained);
        // Decided again on what was kept: the same agent bytes, since nothing promised was
        // redacted.
        let again = again(&contract, &read, &Map::new());
        assert_eq!(again.agent_bytes(), decision.agent_bytes());
    }
    let admitted = Retained::of(
        &contract.admit(
            br#"{"user":"ana","token":"t","keys":[{"secret":"a"},{"secret":"b"}]}"#,
            &request,
            now(),
        ),
        &Response::body(br#"{"user":"ana","token":"t","keys":[{"secret":"a"},{"secret":"b"}]}"#),
        &request,
        &SecretContext::none(),
    );
    assert_eq!(
        admitted.redacted,
        ["/token", "/keys/0/secret", "/keys/1/secret"]
    );
    // Bytes that are not JSON hide where a secret is: none are kept, only their digest.
    let raw = br#"{"user": "ana", "token": "tok_live_9Qz""#;
    let decision = contract.admit(raw, &request, now());
    let withheld = Retained::of(
        &decision,
        &Response::body(raw),
        &request,
        &SecretContext::none(),
    );
    assert!(withheld.raw.is_empty() && withheld.withheld.is_some());
    assert_eq!(
        Retained::from_bytes(&withheld.to_bytes()).unwrap(),
        withheld
    );
    // Altered kept bytes are refused as before.
    let mut forged = admitted.to_bytes();
    let last = forged.len() - 2;
    forged[last] = b'X';
    assert!(Retained::from_bytes(&forged).is_err());
    // Without `retention:`, every byte is kept as received.
    let plain = session_contract("");
    let raw = br#"{"user":"ana","token":"t"}"#;
    let kept = Retained::of(
        &plain.admit(raw, &request, now()),
        &Response::body(raw),
        &request,
        &SecretContext::none(),
    );
    assert_eq!(kept.raw, raw);
    assert!(kept.kept_sha256.is_none() && kept.redacted.is_empty());
}

#[test]
fn a_place_to_redact_must_be_a_json_pointer() {
    let yaml = "tool: session\nversion: 1\ndirection: result\nshape:\n  schema: session.json\n  fields:\n    - { name: user, from: /user }\nretention:\n  redact: [token]\n";
    let source = toolgate_gate::ContractSource::new(yaml).with_schema(
        "session.json",
        r#"{"type": "object", "properties": {"user": {"type": "string"}}}"#,
    );
    let errors = Contract::compile(&source).unwrap_err().to_string();
    assert!(errors.contains("contract.yaml:9"), "{errors}");
}
