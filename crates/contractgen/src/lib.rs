//! Random contracts and the documents to try them on, for testing the gate's fast paths against
//! their references on contracts nobody tuned them for.
//!
//! A contract is a result envelope (a `oneOf` of a success and a failure branch discriminated by
//! the outcome member, or a plain object) whose data schema is drawn from the 2020-12 keywords the
//! gate decides with: types and their unions, `oneOf`/`anyOf`/`allOf`, `$ref` within a file, across
//! files and back to the root (recursion), patterns from a grammar of ECMA-262 features (and the
//! anchored class sequences the positional matcher takes), formats, Unicode, `enum`/`const`,
//! bounds, closed and open objects, `unevaluatedProperties`, `prefixItems`, `contains` with its
//! counts. Documents are drawn from the schema, then mutated: members added and removed, values
//! of another type, strings at and past their bounds.
//!
//! Everything is drawn from an [`Entropy`]: a seeded generator for property tests (the same seed,
//! the same contract), or a fuzzer's bytes (its coverage then steers the choices). When the bytes
//! run out every choice is the first, which is always the simplest, so generation ends.

mod entropy;
mod instance;
mod pairs;
mod pattern;
mod rules;
mod schema;

pub use entropy::{Bytes, Entropy, Seeded};
pub use pairs::{Pair, pair};
pub use rules::{NOW, Rule};

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use toolgate_gate::internals::{failure_envelope, stages};
use toolgate_gate::{Contract, ContractSource, Layer, Outcome, Request};

/// The request id every generated document carries and every admission expects.
pub const REQUEST_ID: &str = "req.Gen12345";

/// The tool every generated contract is for.
pub const TOOL: &str = "gen";

/// One generated contract: its files, and documents to admit.
#[derive(Debug, Clone)]
pub struct Generated {
    /// `contract.yaml`.
    pub contract: String,
    /// Every schema file, by name (the agent schema included).
    pub schemas: Vec<(String, Value)>,
    /// Raw documents to run through the gate (most parse; a few carry a duplicate member).
    pub documents: Vec<Vec<u8>>,
    /// The promised fields: each agent-visible name, the pointer it is read from, and whether it
    /// is optional.
    pub fields: Vec<(String, String, bool)>,
    /// The semantic rules on promised fields.
    pub rules: Vec<Rule>,
    /// The trusted context the rules read.
    pub context: Map<String, Value>,
}

impl Generated {
    /// The outstanding request every document answers, with the trusted context.
    pub fn request(&self) -> Request {
        Request::new(REQUEST_ID).with_context_map(self.context.clone())
    }

    /// The contract as the gate compiles it.
    pub fn source(&self) -> ContractSource {
        let mut source = ContractSource::new(self.contract.clone());
        for (name, schema) in &self.schemas {
            source = source.with_schema(name.clone(), schema.to_string());
        }
        source
    }

    /// The agent bytes a success of `document` must be, written as serde_json writes each value:
    /// `{"tool","request_id","outcome":"success","data":{fields in contract order}}`, an absent
    /// optional field left out. `None` when a required field is absent (the gate must refuse).
    pub fn expected_success(&self, document: &Value) -> Option<Vec<u8>> {
        let mut data = Vec::new();
        for (name, from, optional) in &self.fields {
            match document.pointer(from) {
                Some(value) => data.push(format!(
                    "{}:{}",
                    Value::from(name.as_str()),
                    serde_json::to_string(value).ok()?
                )),
                None if *optional => {}
                None => return None,
            }
        }
        Some(
            format!(
                r#"{{"tool":{},"request_id":{},"outcome":"success","data":{{{}}}}}"#,
                Value::from(TOOL),
                Value::from(REQUEST_ID),
                data.join(",")
            )
            .into_bytes(),
        )
    }
}

impl Generated {
    /// Writes the contract into `dir` as a contract folder (`contract.yaml` and its schemas) with
    /// its documents in `documents.jsonl`, one raw document per line: a case for the corpus of
    /// contracts that once disagreed (`crates/gate/tests/corpora/fast-path/`).
    pub fn write_to(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("contract.yaml"), &self.contract)?;
        for (name, schema) in &self.schemas {
            let text = serde_json::to_string_pretty(schema).map_err(std::io::Error::other)?;
            std::fs::write(dir.join(name), text + "\n")?;
        }
        let mut lines = Vec::new();
        for document in &self.documents {
            // Raw documents are single-line JSON (the generator writes them compactly).
            lines.extend_from_slice(document);
            lines.push(b'\n');
        }
        std::fs::write(dir.join("documents.jsonl"), lines)
    }
}

/// A contract and `documents` documents for it.
pub fn generate(entropy: &mut impl Entropy, documents: usize) -> Generated {
    let mut builder = schema::Builder::new(entropy);
    let (files, data_properties) = builder.contract_files();
    let envelope_is_one_of = builder.envelope_is_one_of;
    let entropy = builder.into_entropy();

    // Promised fields: some of the data's own properties, in the order drawn.
    let mut fields = Vec::new();
    // A field's agent-visible name is an identifier; the member it is read from may be named
    // anything.
    for (name, required) in &data_properties {
        if fields.len() < 4 && entropy.chance(60) {
            let optional = !required && entropy.chance(70);
            let field = format!("f{}", fields.len());
            fields.push((field, format!("/data/{}", escape(name)), optional));
        }
    }
    if fields.is_empty()
        && let Some((name, required)) = data_properties.first()
    {
        fields.push((
            "f0".to_owned(),
            format!("/data/{}", escape(name)),
            !required,
        ));
    }

    let mut contract = format!(
        "tool: {TOOL}\nversion: 1\ndirection: result\nlimits: {{ max_bytes: 1000000, max_depth: 64 }}\nshape:\n  schema: envelope.schema.json\n"
    );
    if envelope_is_one_of {
        contract.push_str(
            "  outcome: { pointer: /outcome, success: success, failure: failure }\n  error_code: /error/code\n",
        );
    }
    contract.push_str("  correlation: { tool: /tool, request_id: /request_id }\n  fields:\n");
    for (name, from, optional) in &fields {
        let name = Value::from(name.as_str());
        let from = Value::from(from.as_str());
        if *optional {
            contract.push_str(&format!(
                "    - {{ name: {name}, from: {from}, optional: true }}\n"
            ));
        } else {
            contract.push_str(&format!("    - {{ name: {name}, from: {from} }}\n"));
        }
    }
    contract.push_str("agent_schema: agent.schema.json\n");

    let mut schemas = files;
    schemas.push((
        "agent.schema.json".to_owned(),
        Value::Object(Default::default()),
    ));
    let mut documents = instance::documents(entropy, &schemas, envelope_is_one_of, documents);
    let (rules, context) = draw_rules(entropy, &fields, &mut documents);
    if !rules.is_empty() {
        contract.push_str("rules:\n");
        for (index, rule) in rules.iter().enumerate() {
            contract.push_str(&rule.yaml(index));
        }
    }
    Generated {
        contract,
        schemas,
        documents,
        fields,
        rules,
        context,
    }
}

/// Up to two rules on promised fields, and the context they read: a binding to a value one of
/// the documents carries (so it holds for some), or a freshness window, with copies of a few
/// documents given timestamps around [`NOW`] at the field.
fn draw_rules(
    entropy: &mut impl Entropy,
    fields: &[(String, String, bool)],
    documents: &mut Vec<Vec<u8>>,
) -> (Vec<Rule>, Map<String, Value>) {
    let parsed = |documents: &[Vec<u8>]| -> Vec<Value> {
        documents
            .iter()
            .filter_map(|raw| serde_json::from_slice(raw).ok())
            .collect()
    };
    let (mut rules, mut context) = (Vec::new(), Map::new());
    for (name, from, _) in fields {
        if rules.len() == 2 {
            break;
        }
        if entropy.chance(20) {
            let key = format!("ctx_{name}");
            let carried: Vec<Value> = parsed(documents)
                .iter()
                .filter_map(|document| document.pointer(from).cloned())
                .collect();
            let value = if carried.is_empty() || entropy.chance(10) {
                Value::from("bound elsewhere")
            } else {
                entropy.pick(&carried).clone()
            };
            context.insert(key.clone(), value);
            rules.push(Rule::Binding {
                field: name.clone(),
                context: key,
            });
        } else if entropy.chance(20) {
            rules.push(Rule::Freshness {
                field: name.clone(),
            });
            for document in parsed(documents).iter().take(4) {
                let stamp = Value::from(rules::timestamp(entropy));
                if let Some(changed) = rules::with_value_at(document, from, stamp) {
                    documents.push(changed.to_string().into_bytes());
                }
            }
        }
    }
    (rules, context)
}

/// What goes wrong when `contract` (compiled from `generated`) decides its documents at `now`,
/// if anything: for every document the strict parser takes, the admission path's shortcuts (the
/// gate's own document, the narrowed `oneOf`, the positional patterns) must decide as the plain
/// reference validator over serde_json's `Value`; and the agent bytes must be exactly the
/// success serde_json writes for the promised values, or the fixed failure envelope.
pub fn disagreements(generated: &Generated, contract: &Contract, now: SystemTime) -> Vec<String> {
    let mut found = Vec::new();
    let request = generated.request();
    let now_nanos = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as i128);
    let rule_value = |document: &Value, rule: &Rule| {
        let (_, from, _) = generated
            .fields
            .iter()
            .find(|(name, _, _)| name == rule.field())?;
        document.pointer(from).cloned()
    };
    for raw in &generated.documents {
        let shown = String::from_utf8_lossy(raw);
        if let Some(document) = stages::parse(contract, raw)
            && !stages::schema_agrees_with_reference(contract, &document)
        {
            found.push(format!(
                "the fast path and the reference disagree on {shown}"
            ));
        }
        let decision = contract.admit(raw, &request, now);
        let expected = match decision.outcome() {
            Outcome::Admitted => {
                let Ok(value) = serde_json::from_slice::<Value>(raw) else {
                    found.push(format!("{shown}: admitted, yet serde_json cannot read it"));
                    continue;
                };
                for rule in &generated.rules {
                    if !rule.holds(
                        rule_value(&value, rule).as_ref(),
                        &generated.context,
                        now_nanos,
                    ) {
                        found.push(format!(
                            "{shown}: admitted, yet by the reference it breaks {rule:?}"
                        ));
                    }
                }
                match generated.expected_success(&value) {
                    Some(expected) => expected,
                    None => {
                        found.push(format!("{shown}: admitted without a promised field"));
                        continue;
                    }
                }
            }
            Outcome::AdmittedFailure { code, retryable } => {
                failure_envelope(TOOL, REQUEST_ID, *code, *retryable)
            }
            Outcome::Rejected(rejection) => {
                if rejection.layer() == Layer::Semantic
                    && let Ok(value) = serde_json::from_slice::<Value>(raw)
                    && generated.rules.iter().all(|rule| {
                        rule.holds(
                            rule_value(&value, rule).as_ref(),
                            &generated.context,
                            now_nanos,
                        )
                    })
                {
                    found.push(format!(
                        "{shown}: rejected by a rule, yet by the reference it keeps every rule"
                    ));
                }
                failure_envelope(TOOL, REQUEST_ID, rejection.code(), rejection.retryable())
            }
        };
        if expected != decision.agent_bytes() {
            found.push(format!(
                "{shown}: the agent bytes are {}, serde_json writes {}",
                String::from_utf8_lossy(decision.agent_bytes()),
                String::from_utf8_lossy(&expected)
            ));
        }
    }
    found
}

/// A member name as a JSON pointer token.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
