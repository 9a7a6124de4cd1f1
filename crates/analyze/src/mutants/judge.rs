//! What the gate did with a mutant, judged by its own decision: as the family expects, rejected at
//! another layer, or admitted; and whether anything unpromised reached the agent.

use serde_json::Value;
use toolgate_gate::internals::failure_envelope;
use toolgate_gate::{Contract, Decision, Direction, Layer, Outcome};

use super::{Expect, Family, Mutant};
use toolgate_gate::internals::applied_keywords;
use toolgate_repo::Prepared;
use toolgate_repo::agent_view_problems;

/// What happened to a mutant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Rejected at a layer its family expects (or, for a value inside every bound, past the
    /// schema).
    AsExpected,
    /// Rejected at another layer than its family expects: the layer meant to refuse it is open
    /// (or, for a value inside every bound, the schema refused what its bounds admit).
    Misplaced {
        /// Where it was rejected.
        layer: Layer,
        /// The rule or keyword that rejected it.
        rule: String,
    },
    /// Admitted when its family expects a rejection: the contract is looser than it looks.
    Survived,
}

impl Fate {
    /// How the gate's decision turned out for a mutant the family expects `expect` of.
    pub fn of(expect: Expect, decision: &Decision) -> Fate {
        let rejected_at = match decision.outcome() {
            Outcome::Rejected(rejection) => Some(rejection.layer()),
            Outcome::Admitted | Outcome::AdmittedFailure { .. } => None,
        };
        let misplaced = |layer: Layer| Fate::Misplaced {
            layer,
            rule: decision.rule().unwrap_or_default().to_owned(),
        };
        match (expect, rejected_at) {
            (Expect::Rejected(layers), Some(layer)) if layers.contains(&layer) => Fate::AsExpected,
            (Expect::Rejected(_), Some(layer)) => misplaced(layer),
            (Expect::Rejected(_), None) => Fate::Survived,
            (Expect::PassesSchema, Some(layer)) if layer <= Layer::Schema => misplaced(layer),
            (Expect::PassesSchema, _) => Fate::AsExpected,
            (Expect::Admitted, Some(layer)) => misplaced(layer),
            (Expect::Admitted, None) => Fate::AsExpected,
        }
    }
}

/// Whether the schema that admitted `mutant` (a value of another type where an object was, a
/// fraction where a whole number was)
/// declares that type at its place: `null` where `"type": ["object", "null"]` or a `oneOf` branch
/// `{"type": "null"}` says so is the contract's own word, not a near-miss. Read from the
/// keywords the gate applied to the mutant, so the decision is the gate's.
fn declared_type(contract: &Contract, mutant: &Mutant) -> bool {
    let type_name = match mutant.family {
        Family::NullForObject => "null",
        Family::ArrayForObject => "array",
        Family::StringForObject => "string",
        // `"type": "number"` declares fractions; only `integer` refuses 7.5.
        Family::Fraction => "number",
        _ => return false,
    };
    let Ok(document) = serde_json::from_slice::<Value>(&mutant.bytes) else {
        return false;
    };
    let Some(value) = document.pointer(&mutant.pointer) else {
        return false;
    };
    let Some((_, applied)) = applied_keywords(contract, &document) else {
        return false;
    };
    applied
        .iter()
        .filter(|applied| applied.instance == mutant.pointer)
        .any(|applied| match applied.keyword.as_str() {
            "type" => match &applied.value {
                Value::String(name) => name == type_name,
                Value::Array(names) => names.iter().any(|name| name == type_name),
                _ => false,
            },
            "const" => &applied.value == value,
            "enum" => applied
                .value
                .as_array()
                .is_some_and(|values| values.contains(value)),
            _ => false,
        })
}

/// A mutant and what the gate made of it.
#[derive(Debug, Clone)]
pub struct JudgedMutant {
    /// The mutant.
    pub mutant: Mutant,
    /// How the decision compares with what its family expects.
    pub fate: Fate,
    /// Whether the gate rejected it.
    pub rejected: bool,
    /// The agent-visible bytes.
    pub agent_bytes: Vec<u8>,
    /// Everything unpromised that reached the agent, one line each; empty when nothing did.
    pub leaks: Vec<String>,
}

/// Runs `mutant` through `contract` under the seed fixture's request, and judges the decision.
pub fn judge(contract: &Contract, prepared: &Prepared, mutant: Mutant) -> JudgedMutant {
    let decision = prepared.admit(contract, &mutant.bytes);
    let mut fate = Fate::of(mutant.expect(), &decision);
    if fate == Fate::Survived && declared_type(contract, &mutant) {
        fate = Fate::AsExpected;
    }
    let agent_bytes = decision.agent_bytes().to_vec();
    let request_id = &prepared.request.request_id;
    // A rejection whose bytes are exactly the fixed envelope holds nothing from the response
    // (the envelope is built from the contract, the request and the code alone): most mutants
    // end here, and the full leak scan is kept for what can leak.
    let fixed_envelope = decision.rejection().is_some_and(|rejection| {
        agent_bytes
            == failure_envelope(
                contract.tool(),
                request_id,
                rejection.code(),
                rejection.retryable(),
            )
    });
    let mut leaks: Vec<String> = Vec::new();
    if !fixed_envelope {
        leaks.extend(
            agent_view_problems(contract, &mutant.bytes, request_id, &decision)
                .into_iter()
                .map(|problem| problem.message),
        );
        leaks.extend(marker_leaks(contract, &mutant.markers, &agent_bytes));
    }
    JudgedMutant {
        fate,
        rejected: matches!(decision.outcome(), Outcome::Rejected(_)),
        agent_bytes,
        leaks,
        mutant,
    }
}

/// Injected text that reached the agent anywhere but as the whole value of a promised field. As
/// the whole value it is free text the contract admits there (a survivor, not a leak); anywhere
/// else (inside a promised object, as a member name) the contract forwarded what it never
/// declared.
fn marker_leaks(contract: &Contract, markers: &[String], agent_bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(agent_bytes);
    let markers: Vec<&String> = markers
        .iter()
        .filter(|marker| text.contains(marker.as_str()))
        .collect();
    if markers.is_empty() {
        return Vec::new();
    }
    let agent: Value = serde_json::from_slice(agent_bytes).unwrap_or_default();
    let fields = match contract.direction() {
        Direction::Result => agent.get("data").cloned().unwrap_or_default(),
        Direction::Action => agent,
    };
    // The whole value of a promised field, or of a member of a list field's item.
    let promised_value = |marker: &str| {
        toolgate_gate::internals::fields(contract)
            .iter()
            .any(|field| match fields.get(field) {
                Some(Value::String(text)) => text == marker,
                Some(Value::Array(items)) => items.iter().any(|item| {
                    item.as_object().is_some_and(|members| {
                        members.values().any(|value| value.as_str() == Some(marker))
                    })
                }),
                _ => false,
            })
    };
    markers
        .into_iter()
        .filter(|marker| !promised_value(marker))
        .map(|marker| {
            format!(
                "{marker:?}, which the mutant injected, reached the agent outside any promised field's value"
            )
        })
        .collect()
}
