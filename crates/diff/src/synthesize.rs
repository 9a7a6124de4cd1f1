//! Responses built from the schemas themselves, for a verdict no fixture can be edited into a
//! witness of (a tool with no fixtures yet, or none of the shape a change is in). Each shape of
//! each version gives up to three and one per branch of its union: the model's example
//! (automata for patterns, bounds, consts; of the whole and of each branch), the same with
//! every declared member present (so a change to an optional member has a response
//! holding it), and the least the schema asks for (every optional member absent). Each is
//! repaired with the gate's own validator until that shape's schema admits it (`repair.rs`), so a
//! keyword the model leaves undecided does not leave a tool without a response; a request is made
//! to fit it (the request id it carries, the context values its rules read, a decision time
//! inside every freshness window). The gate still decides: a synthesized base is only a starting
//! point, and a witness built from it counts only when both compiled contracts confirm it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use toolgate_gate::internals::format_timestamp;
use toolgate_model::{Kind, Node, Version, edit, example, intersect};
use toolgate_repo::{FixtureClass, Prepared, RequestSpec};

use crate::repair::{Budget, Repairer};
use crate::witness::Base;

/// How many validations the repairs of one comparison's synthesized bases may run.
const SYNTHESIS_VALIDATIONS: usize = 6_000;
/// How deep [`full`] fills in optional members.
const FULL_DEPTH: usize = 8;

/// The decision time of every synthesized response: fixed, so a report is the same on every run.
fn decision_time() -> SystemTime {
    // 2026-01-01T00:00:00Z.
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600)
}

/// Bases built from each version's shape schemas (see the module's words), each admitted by
/// that shape's schema, none twice.
pub(crate) fn bases(from: &Version, to: &Version) -> Vec<Base> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut budget = Budget::new(SYNTHESIS_VALIDATIONS);
    for version in [from, to] {
        for shape in version.shapes() {
            let Some(repairer) = Repairer::of(version, &shape.name) else {
                continue;
            };
            let root = repairer.root();
            // The root's example, one per branch of its union (an envelope's success as well
            // as its failure: the example of the whole may take the simpler one only), every
            // member present, and the least.
            let branches = match root.facts().and_then(|facts| facts.union.as_ref()) {
                Some(_) => toolgate_model::alternatives(root),
                None => Vec::new(),
            };
            let starts = example(root, None)
                .into_iter()
                .chain(branches.iter().filter_map(|branch| example(branch, None)))
                .chain(full(root, FULL_DEPTH))
                .chain([Value::Object(Map::new())]);
            let repaired: Vec<Value> = starts
                .filter_map(|start| repairer.repair(start, None, &mut budget))
                .collect();
            // A response the schema admits without a promised field is still refused at
            // projection: each also with those fields as another start holds them.
            let required: Vec<&String> = shape
                .fields
                .values()
                .filter(|(_, optional)| !optional)
                .map(|(pointer, _)| pointer)
                .collect();
            let mut documents = repaired.clone();
            for document in &repaired {
                let mut filled = document.clone();
                for pointer in &required {
                    if filled.pointer(pointer).is_none()
                        && let Some(value) =
                            repaired.iter().find_map(|other| other.pointer(pointer))
                        && let Some(edited) =
                            edit::with_value_or_member(&filled, pointer, value.clone())
                    {
                        filled = edited;
                    }
                }
                if filled != *document
                    && let Some(filled) = repairer.repair(filled, None, &mut budget)
                {
                    documents.push(filled);
                }
            }
            for document in documents {
                if !seen.insert(document.to_string()) {
                    continue;
                }
                if let Some(base) = fitted(version, &shape.name, &shape.schema, document, from, to)
                {
                    out.push(base);
                }
            }
        }
    }
    out
}

/// Values of `node` with every member it declares present (one per branch of a union), as far
/// down as `depth`: starting points the repair makes admitted (so a member the model cannot
/// build is left to it).
fn full(node: &Node, depth: usize) -> Vec<Value> {
    let Kind::Facts(facts) = &node.kind else {
        return example(node, None).into_iter().collect();
    };
    if depth == 0 || facts.values.is_some() {
        return example(node, None).into_iter().collect();
    }
    if let Some(union) = &facts.union {
        let mut rest = node.clone();
        if let Kind::Facts(facts) = &mut rest.kind {
            Arc::make_mut(facts).union = None;
        }
        return union
            .branches
            .iter()
            .take(8)
            .flat_map(|branch| {
                full(&intersect(&rest, branch), depth - 1)
                    .into_iter()
                    .take(1)
            })
            .collect();
    }
    if facts.properties.is_empty() {
        return example(node, None).into_iter().collect();
    }
    let mut members = match example(node, None) {
        Some(Value::Object(members)) => members,
        _ => Map::new(),
    };
    for (name, member) in &facts.properties {
        if let Some(value) = full(member, depth - 1).into_iter().next() {
            members.insert(name.clone(), value);
        }
    }
    vec![Value::Object(members)]
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
            // A minute old: inside any window the contract can state. Only where the document
            // has the field (a failure envelope has no data for a rule to read); an optional
            // field the schema gave no string is left out instead, which the rule then skips.
            let when = format_timestamp(now.checked_sub(Duration::from_secs(60))?)?;
            let optional = current
                .fields
                .get(rule.field())
                .is_some_and(|field| field.1);
            match document.pointer(pointer) {
                Some(value) if optional && !value.is_string() => {
                    document = edit::without_pointer(&document, pointer);
                }
                Some(_) => document = edit::with_value(&document, pointer, Value::from(when))?,
                None => {}
            }
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
        shape: Some(shape.to_owned()),
        from: prepared.admit(&from.contract, &prepared.raw),
        to: prepared.admit(&to.contract, &prepared.raw),
        document: Some(document),
        prepared,
    })
}
