//! The proof search behind every `false`: before an upstream verdict is reported false, responses
//! are generated from the fixtures and from each version's own schema, mutated place by place
//! toward what the other version allows (members removed and added, values at and past every
//! bound the model knows, other types, other enum values), and run through both compiled
//! contracts. One that shows the verdict makes it `true`, with that response as its witness, and
//! says the model was wrong (the soundness test fails on it). Bounded by a count and a time
//! budget; `toolgate diff --no-search` skips it.

use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_model::{
    JsonType, Kind, Node, Version, edit, example, example_avoiding, number_candidates,
    string_examples,
};

use crate::change::{BumpVerdict, Side};
use crate::witness::{Base, Seen, Witness, node_at};

/// How many responses the search runs through both contracts, at most, per verdict.
pub(crate) const SEARCH_ATTEMPTS: usize = 2_000;
/// How long the search may take per verdict.
pub(crate) const SEARCH_TIME: Duration = Duration::from_millis(400);
/// How many places of one base the search mutates.
const PLACES_PER_BASE: usize = 64;

/// A response that shows `verdict` (an upstream one), found by mutating the bases; `None` when
/// the budget ran out without one. Agent verdicts are about sets of outputs, which one response
/// cannot show; they are not searched.
pub(crate) fn counterexample(
    verdict: BumpVerdict,
    bases: &[Base],
    from: &Version,
    to: &Version,
) -> Option<Witness> {
    if !matches!(
        verdict,
        BumpVerdict::UpstreamBreaking | BumpVerdict::UpstreamLoosened
    ) {
        return None;
    }
    let side = verdict.admitting_side();
    let admitting = match side {
        Side::From => from,
        Side::To => to,
    };
    let started = Instant::now();
    let mut attempts = 0;
    for base in bases {
        let decided = match side {
            Side::From => (&base.from, &base.to),
            Side::To => (&base.to, &base.from),
        };
        if decided.0.is_admitted() && !decided.1.is_admitted() {
            return Some(witness(
                verdict,
                base,
                "unchanged".to_owned(),
                base.prepared.raw.clone(),
                from,
                to,
            ));
        }
        let Some(document) = &base.document else {
            continue;
        };
        for (pointer, candidate) in mutations(document, admitting) {
            attempts += 1;
            if attempts > SEARCH_ATTEMPTS || started.elapsed() > SEARCH_TIME {
                return None;
            }
            let raw = candidate.to_string().into_bytes();
            let (from_decision, to_decision) = (
                base.prepared.admit(&from.contract, &raw),
                base.prepared.admit(&to.contract, &raw),
            );
            let (admits, refuses) = match side {
                Side::From => (&from_decision, &to_decision),
                Side::To => (&to_decision, &from_decision),
            };
            if admits.is_admitted() && !refuses.is_admitted() {
                let words = format!(
                    "{}: changed by the proof search",
                    toolgate_repo::text::pointer(&pointer)
                );
                return Some(witness(verdict, base, words, raw, from, to));
            }
        }
    }
    None
}

fn witness(
    verdict: BumpVerdict,
    base: &Base,
    edit: String,
    raw: Vec<u8>,
    from: &Version,
    to: &Version,
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
        from: Seen::of(&base.prepared.admit(&from.contract, &raw)),
        to: Seen::of(&base.prepared.admit(&to.contract, &raw)),
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
