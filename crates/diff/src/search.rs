//! The proof search behind every `false`: before a verdict is reported false (or left
//! undecided), responses are generated from the fixtures and from each version's own schema
//! (`synthesize.rs`), mutated place by place toward what the other version allows (members
//! removed and added, values at and past every bound the model knows, other types, other enum
//! values), repaired where the mutation broke something else the admitting version asks for
//! (`repair.rs`, the gate's own validator saying what), and run through both compiled contracts.
//!
//! An upstream verdict is shown by a response one version admits and the other refuses. An
//! agent verdict is about sets of outputs, and is shown by an output of one version that the
//! other version's derived agent schema refuses: that schema describes every output the version
//! can project (each promised field's own schema, read where projection reads it), so no
//! response at all makes that version show the agent those bytes. A response found makes the
//! verdict `true`, with it as the witness; under a model `false`, it says the model was wrong (the
//! soundness test fails on it). Bounded by a count and a time budget; `toolgate diff --no-search`
//! skips it.

use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_gate::internals::projection_validator;
use toolgate_gate::{Decision, Outcome};
use toolgate_model::{
    JsonType, Kind, Node, Version, edit, example, example_avoiding, number_candidates,
    string_examples,
};

use crate::change::{BumpVerdict, Side};
use crate::repair::{Budget, Repairer};
use crate::witness::{Base, Seen, Witness, node_at};

/// How many responses the search runs through both contracts, at most, per verdict.
pub(crate) const SEARCH_ATTEMPTS: usize = 2_000;
/// How long the search may take per verdict.
pub(crate) const SEARCH_TIME: Duration = Duration::from_millis(400);
/// How many places of one base the search mutates.
const PLACES_PER_BASE: usize = 64;
/// How many validations the repairs of one verdict's search may run.
const REPAIR_VALIDATIONS: usize = 4_000;

/// A response that shows `verdict`, found by mutating the bases; `None` when the budget ran out
/// without one.
pub(crate) fn counterexample(
    verdict: BumpVerdict,
    bases: &[Base],
    from: &Version,
    to: &Version,
) -> Option<Witness> {
    let side = verdict.admitting_side();
    let (admitting, other) = match side {
        Side::From => (from, to),
        Side::To => (to, from),
    };
    let agent = matches!(
        verdict,
        BumpVerdict::AgentWidened | BumpVerdict::AgentNarrowed
    );
    // An agent verdict is shown against the schema derived from the other version's fields
    // (not an agent schema it declares: that is the author's claim, not a description of
    // every output).
    let projection = if agent {
        Some(projection_validator(&other.contract)?)
    } else {
        None
    };
    let shows = |from_decision: &Decision, to_decision: &Decision| {
        let (admits, refuses) = match side {
            Side::From => (from_decision, to_decision),
            Side::To => (to_decision, from_decision),
        };
        if let Some(projection) = &projection {
            matches!(admits.outcome(), Outcome::Admitted)
                && serde_json::from_slice::<Value>(admits.agent_bytes())
                    .is_ok_and(|output| !projection.is_valid(&output))
        } else {
            admits.is_admitted() && !refuses.is_admitted()
        }
    };
    let started = Instant::now();
    let mut attempts = 0;
    let mut budget = Budget::new(REPAIR_VALIDATIONS);
    // A base that shows the verdict as it is comes first: its decisions are already made, and
    // mutating an earlier base could spend the whole budget before it is looked at.
    if let Some(base) = bases.iter().find(|base| shows(&base.from, &base.to)) {
        let decided = (
            base.prepared.admit(&from.contract, &base.prepared.raw),
            base.prepared.admit(&to.contract, &base.prepared.raw),
        );
        let raw = base.prepared.raw.clone();
        return Some(witness(verdict, base, "unchanged".to_owned(), raw, decided));
    }
    for base in bases {
        let Some(document) = &base.document else {
            continue;
        };
        // The admitting version's schema, for the shape the base is in (its first otherwise).
        let shape = base
            .decision(side)
            .shape()
            .map(str::to_owned)
            .or_else(|| admitting.shapes().first().map(|shape| shape.name.clone()));
        let repairer = shape
            .as_deref()
            .and_then(|shape| Repairer::of(admitting, shape));
        // Both versions' decisions on `document`, when they show the verdict.
        let showing = |document: &Value| {
            let raw = document.to_string().into_bytes();
            let decided = (
                base.prepared.admit(&from.contract, &raw),
                base.prepared.admit(&to.contract, &raw),
            );
            let admitted = match side {
                Side::From => decided.0.is_admitted(),
                Side::To => decided.1.is_admitted(),
            };
            (shows(&decided.0, &decided.1), admitted, raw, decided)
        };
        for (pointer, candidate) in mutations(document, admitting) {
            attempts += 1;
            if attempts > SEARCH_ATTEMPTS || started.elapsed() > SEARCH_TIME {
                return None;
            }
            let place = toolgate_repo::text::pointer(&pointer);
            let (shown, admitted, raw, decided) = showing(&candidate);
            if shown {
                let words = format!("{place}: changed by the proof search");
                return Some(witness(verdict, base, words, raw, decided));
            }
            // The mutation broke something else the admitting version asks for: repaired
            // around it (the mutated place kept as it is), it may still show the verdict.
            let Some(repairer) = &repairer else {
                continue;
            };
            if admitted || budget.is_spent() || repairer.admits(&candidate) {
                continue;
            }
            let kept = Some((pointer.as_str(), candidate.pointer(&pointer)));
            let Some(fixed) = repairer.repair(candidate.clone(), kept, &mut budget) else {
                continue;
            };
            let (shown, _, raw, decided) = showing(&fixed);
            if shown {
                let words = format!(
                    "{place}: changed by the proof search, the rest repaired to what {}'s schema admits",
                    admitting.name
                );
                return Some(witness(verdict, base, words, raw, decided));
            }
        }
    }
    None
}

/// The witness `raw` is, with both versions' decisions on it.
fn witness(
    verdict: BumpVerdict,
    base: &Base,
    edit: String,
    raw: Vec<u8>,
    (from, to): (Decision, Decision),
) -> Witness {
    Witness {
        verdict,
        change: None,
        fixture: base.origin.clone(),
        edit,
        focus: None,
        request_changes: Vec::new(),
        request: base.prepared.request.clone(),
        status: base.prepared.request.upstream_status,
        from: Seen::of(&from),
        to: Seen::of(&to),
        raw: String::from_utf8_lossy(&raw).into_owned(),
    }
}

/// Every place of `document` (up to [`PLACES_PER_BASE`]), each with the documents made by
/// changing it: removed, replaced by values the admitting version's node there suggests and by a
/// value of every other type, and, for an object, each declared member it lacks added.
fn mutations<'a>(
    document: &'a Value,
    admitting: &'a Version,
) -> impl Iterator<Item = (String, Value)> + 'a {
    let mut places = Vec::new();
    collect_places(document, String::new(), &mut places);
    places.truncate(PLACES_PER_BASE);
    places.into_iter().flat_map(move |pointer| {
        let current = document.pointer(&pointer).cloned().unwrap_or(Value::Null);
        let node = node_at(admitting, document, &pointer);
        let mut values = replacements(node.as_ref(), &current);
        let mut out: Vec<(String, Value)> = Vec::new();
        if !pointer.is_empty() {
            out.push((pointer.clone(), edit::without_pointer(document, &pointer)));
        }
        values.retain(|value| *value != current);
        for value in values {
            if let Some(changed) = edit::with_value(document, &pointer, value) {
                out.push((pointer.clone(), changed));
            }
        }
        if let (Value::Object(members), Some(node)) = (&current, &node)
            && let Some(facts) = node.facts()
        {
            for (name, member) in &facts.properties {
                if members.contains_key(name) {
                    continue;
                }
                // The member as its schema builds it, and each of the plain values.
                let mut values: Vec<Value> = example(member, None).into_iter().collect();
                values.extend(plain_values());
                let at = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                for value in values {
                    if let Some(changed) = edit::with_value_or_member(document, &at, value) {
                        out.push((at.clone(), changed));
                    }
                }
            }
            let fresh = format!("{pointer}/toolgate_undeclared");
            if let Some(changed) = edit::with_value_or_member(document, &fresh, Value::from("x")) {
                out.push((fresh, changed));
            }
        }
        if let Value::Array(items) = &current
            && let Some(first) = items.first()
        {
            let mut doubled = items.clone();
            doubled.push(first.clone());
            if let Some(changed) = edit::with_value(document, &pointer, Value::Array(doubled)) {
                out.push((pointer.clone(), changed));
            }
        }
        out
    })
}

/// Values worth putting where `current` is: what the node's own bounds, patterns and enum
/// suggest, a different value it admits, and one value of every JSON type.
fn replacements(node: Option<&Node>, current: &Value) -> Vec<Value> {
    let mut values = plain_values();
    let Some(node) = node else {
        return values;
    };
    if let Some(other) = example_avoiding(node, std::slice::from_ref(current)) {
        values.push(other);
    }
    if let Kind::Facts(facts) = &node.kind {
        if let Some(listed) = &facts.values {
            values.extend(listed.iter().take(16).cloned());
        }
        values.extend(string_examples(facts, None).into_iter().map(Value::from));
        values.extend(number_candidates(facts, JsonType::Integer));
        values.extend(number_candidates(facts, JsonType::Number));
        if let Some(text) = current.as_str() {
            // One character more and one less: a length bound moved by one is the common edit.
            values.push(Value::from(format!("{text}a")));
            // And one character more inside it, the first one doubled: a string a pattern
            // pins at its end (`^[a-z]+@x[.]org$`) still matches.
            if let Some(first) = text.chars().next() {
                values.push(Value::from(format!("{first}{text}")));
            }
            let mut shorter = text.to_owned();
            shorter.pop();
            values.push(Value::from(shorter));
        }
    }
    values
}

/// Values of every type that sit on the bounds contracts commonly write (small counts and
/// lengths, a multiple of two and of three, a line terminator ECMA-262's `.` refuses, a letter
/// outside ASCII, a digit outside ASCII): tried wherever the model has nothing better.
fn plain_values() -> Vec<Value> {
    let mut values = vec![
        Value::Null,
        Value::Bool(true),
        Value::Bool(false),
        Value::Array(Vec::new()),
        Value::Object(Default::default()),
        Value::from(0.5),
        Value::from(-1),
    ];
    values.extend([0, 1, 2, 3, 4, 5, 6, 10, 12, 100].map(Value::from));
    values.extend(
        [
            "", "x", "A", "abc", "abcd", "abcdef", "é", "a\rb", "0", "٣", "a b",
        ]
        .map(Value::from),
    );
    values
}

/// Every JSON pointer in `value`, the document itself first, parents before children.
fn collect_places(value: &Value, pointer: String, out: &mut Vec<String>) {
    if out.len() >= PLACES_PER_BASE {
        return;
    }
    out.push(pointer.clone());
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                let child = format!("{pointer}/{}", name.replace('~', "~0").replace('/', "~1"));
                collect_places(member, child, out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate().take(4) {
                collect_places(item, format!("{pointer}/{index}"), out);
            }
        }
        _ => {}
    }
}
