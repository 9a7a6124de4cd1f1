//! What must hold for every decision the gate makes, whatever the input: the agent bytes are
//! exactly the fixed failure envelope, or a success the contract's agent-visible schema accepts;
//! and no string of the raw input that the contract did not promise appears in them.
//!
//! The fixture runner checks this on every case; the property tests and the fuzz targets check it
//! on generated and mutated inputs, together with [`reference_disagreements`]: the admission
//! path's shortcuts against the references they must agree with.

use serde_json::Value;
use toolgate_gate::internals::{failure_envelope, stages};
use toolgate_gate::{Contract, Decision, Outcome};

use crate::case_result::{Problem, ProblemKind};
use crate::leak;

/// Every way `decision` breaks the invariants; empty when it keeps them.
pub fn agent_view_problems(
    contract: &Contract,
    raw: &[u8],
    request_id: &str,
    decision: &Decision,
) -> Vec<Problem> {
    let agent = decision.agent_bytes();
    let mut problems = Vec::new();
    let failure = match decision.outcome() {
        Outcome::Admitted => None,
        Outcome::AdmittedFailure { code, retryable } => Some((*code, *retryable)),
        Outcome::Rejected(rejection) => Some((rejection.code(), rejection.retryable())),
    };
    match failure {
        Some((code, retryable)) => {
            let envelope = failure_envelope(contract.tool(), request_id, code, retryable);
            if agent != envelope.as_slice() {
                problems.push(Problem::new(
                    ProblemKind::Envelope,
                    format!(
                        "a failure must be exactly the fixed envelope {}, but the agent got {}",
                        String::from_utf8_lossy(&envelope),
                        String::from_utf8_lossy(agent)
                    ),
                ));
            }
        }
        None if !toolgate_gate::internals::agent_view_accepts(contract, agent) => {
            problems.push(Problem::new(
                ProblemKind::Envelope,
                format!(
                    "the admitted output does not validate against the contract's agent_schema: {}",
                    String::from_utf8_lossy(agent)
                ),
            ))
        }
        None => {}
    }
    let allowed = match (decision.outcome(), decision.shape()) {
        (Outcome::Admitted, Some(shape)) => match serde_json::from_slice::<Value>(raw) {
            Ok(document) => leak::allowed_strings(contract, request_id, Some((&document, shape))),
            // A text tool's captures cannot be rebuilt from the raw bytes here; the values the
            // agent got are the captures, and the agent schema check above pins their shape.
            Err(_) => {
                let mut allowed = leak::allowed_strings(contract, request_id, None);
                if let Ok(output) = serde_json::from_slice::<Value>(agent)
                    && let Some(members) = output.get("data").and_then(Value::as_object)
                {
                    allowed.extend(
                        members
                            .values()
                            .filter_map(Value::as_str)
                            .map(str::to_owned),
                    );
                }
                allowed
            }
        },
        _ => leak::allowed_strings(contract, request_id, None),
    };
    for leaked in leak::leaks(raw, agent, &allowed) {
        problems.push(Problem::new(
            ProblemKind::Leak,
            format!("{leaked:?} from the raw input reached the agent, but the contract does not promise it"),
        ));
    }
    problems
}

/// Where the admission path and its references part on `raw`, one line each; empty when they
/// agree (and when the strict parser refuses `raw`, which leaves nothing to compare). The gate
/// reads its own document, narrows a `oneOf` by the outcome member and matches identifier
/// patterns by table; the references are serde_json's `Value` and the plain validator. Where the
/// strict parser accepts `raw`, serde_json must read the same value, and every shape's schema
/// must decide it as the reference does.
pub fn reference_disagreements(contract: &Contract, raw: &[u8]) -> Vec<String> {
    let Some(document) = stages::parse(contract, raw) else {
        return Vec::new();
    };
    let reference: Value = match serde_json::from_slice(raw) {
        Ok(value) => value,
        Err(error) => {
            return vec![format!(
                "the strict parser accepted what serde_json refuses ({error})"
            )];
        }
    };
    let mut problems = Vec::new();
    if !(document.root().equals(&reference) && document.root().to_value() == reference) {
        problems.push("the gate's document differs from serde_json's value".to_owned());
    }
    if !stages::schema_agrees_with_reference(contract, &document) {
        problems
            .push("a shape's schema decides differently from the reference validator".to_owned());
    }
    problems
}
