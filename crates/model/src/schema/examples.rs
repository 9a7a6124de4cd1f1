//! Values a node admits, built from its facts: the witnesses the differ confirms through the gate,
//! and the mutants' in-range values.

use serde_json::{Map, Value};

use super::algebra::{admits, same_value};
use super::{Facts, JsonType, Kind, Node};
use crate::strings::{self, Strings};

/// A value `node` admits, close to `hint` where possible (the hint itself when admitted).
pub fn example(node: &Node, hint: Option<&Value>) -> Option<Value> {
    if let Some(hint) = hint
        && admits(node, hint) == Ok(true)
    {
        return Some(hint.clone());
    }
    let candidates = candidates(node, hint);
    candidates
        .into_iter()
        .find(|candidate| admits(node, candidate) == Ok(true))
}

/// Every value worth trying that `node` admits, none equal to a value `avoid` names: a witness
/// that must differ from what the request already holds (a project it is not bound to).
pub fn example_avoiding(node: &Node, avoid: &[Value]) -> Option<Value> {
    let fresh = |value: &Value| !avoid.iter().any(|other| same_value(other, value));
    if let Some(found) = candidates(node, None)
        .into_iter()
        .find(|candidate| fresh(candidate) && admits(node, candidate) == Ok(true))
    {
        return Some(found);
    }
    // A string that is none of them: the string search, told to avoid exactly those.
    let facts = node.facts()?;
    let texts: Vec<String> = avoid
        .iter()
        .filter_map(Value::as_str)
        .map(regex_syntax::escape)
        .collect();
    let mut others = Strings::default();
    others.patterns.push(format!("^(?:{})$", texts.join("|")));
    let text = strings::difference(&facts.strings, &others).ok()??;
    let value = Value::from(text);
    (admits(node, &value) == Ok(true)).then_some(value)
}

/// Values worth trying for `node`: its enum, then one built for each allowed type.
fn candidates(node: &Node, hint: Option<&Value>) -> Vec<Value> {
    let facts = match &node.kind {
        Kind::Any => return vec![hint.cloned().unwrap_or(Value::Null)],
        Kind::Nothing | Kind::Unknown { .. } => return Vec::new(),
        Kind::Facts(facts) => facts,
    };
    if let Some(values) = &facts.values {
        return values.to_vec();
    }
    let mut out = Vec::new();
    let types: Vec<JsonType> = match &facts.types {
        Some(types) => types.iter().copied().collect(),
        None => hint
            .map(|hint| JsonType::of(hint).to_vec())
            .unwrap_or_default()
            .into_iter()
            .chain([
                JsonType::String,
                JsonType::Object,
                JsonType::Integer,
                JsonType::Null,
            ])
            .collect(),
    };
    for kind in types {
        match kind {
            JsonType::Null => out.push(Value::Null),
            JsonType::Boolean => out.extend([Value::Bool(true), Value::Bool(false)]),
            JsonType::Integer | JsonType::Number => out.extend(number_candidates(facts, kind)),
            JsonType::String => {
                out.extend(string_examples(facts, hint).into_iter().map(Value::from))
            }
            JsonType::Array => {
                let item = example(&facts.items, None);
                let count = usize::try_from(facts.min_items).unwrap_or(0);
                if let Some(item) = item {
                    out.push(Value::Array(vec![item; count]));
                } else if count == 0 {
                    out.push(Value::Array(Vec::new()));
                }
            }
            JsonType::Object => out.extend(object_example(facts, hint)),
        }
    }
    if let Some(union) = &facts.union {
        for branch in &union.branches {
            let hint_for_branch = hint.filter(|hint| admits(branch, hint) == Ok(true));
            out.extend(example(branch, hint_for_branch));
        }
    }
    out
}

fn object_example(facts: &Facts, hint: Option<&Value>) -> Option<Value> {
    let mut members = Map::new();
    if let Some(Value::Object(hinted)) = hint {
        for (name, value) in hinted {
            if admits(&facts.member(name), value) == Ok(true) {
                members.insert(name.clone(), value.clone());
            }
        }
    }
    for name in &facts.required {
        if !members.contains_key(name) {
            members.insert(name.clone(), example(&facts.member(name), None)?);
        }
    }
    Some(Value::Object(members))
}

/// Numbers worth trying: the bounds and their neighbours, and small values.
pub fn number_candidates(facts: &Facts, kind: JsonType) -> Vec<Value> {
    let mut points = vec![0.0, 1.0, -1.0];
    for bound in [facts.minimum, facts.maximum].into_iter().flatten() {
        points.extend([
            bound.value,
            bound.value + 1.0,
            bound.value - 1.0,
            bound.value + 0.5,
            bound.value - 0.5,
        ]);
    }
    if let Some(step) = facts.multiple_of {
        points.push(step);
    }
    let mut out = Vec::new();
    for point in points {
        if kind == JsonType::Integer || point.fract() == 0.0 {
            if point.fract() == 0.0 && point.abs() < 9.0e15 {
                out.push(Value::from(point as i64));
            }
        } else if let Some(number) = serde_json::Number::from_f64(point) {
            out.push(Value::Number(number));
        }
    }
    out
}

/// Strings worth trying for `facts`: the hint, the format's examples (stretched to the length
/// bounds where the format allows), and the shortest strings its patterns and lengths admit.
pub fn string_examples(facts: &Facts, hint: Option<&Value>) -> Vec<String> {
    let mut out: Vec<String> = hint
        .and_then(Value::as_str)
        .map(str::to_owned)
        .into_iter()
        .collect();
    if let Some(format) = &facts.format {
        out.extend(format_examples(format, &facts.strings));
        return out;
    }
    if let Ok(Some(shortest)) = strings::example(&facts.strings) {
        out.push(shortest);
    }
    out
}

/// Examples of a format, including ones stretched towards the length bounds (a date-time grows
/// by fraction digits), so a witness can be exactly one character past a `maxLength`.
pub fn format_examples(format: &str, lengths: &Strings) -> Vec<String> {
    let base: &[&str] = match format {
        "date-time" => &["2026-11-29T12:00:00Z", "2026-11-29T12:00:00.5+02:00"],
        "date" => &["2026-11-29"],
        "time" => &["12:00:00Z"],
        "email" | "idn-email" => &["a@example.com"],
        "hostname" | "idn-hostname" => &["example.com"],
        "ipv4" => &["192.0.2.1"],
        "ipv6" => &["2001:db8::1"],
        "uri" | "iri" => &["https://example.com/"],
        "uri-reference" | "iri-reference" => &["/a"],
        "uuid" => &["00000000-0000-4000-8000-000000000000"],
        "duration" => &["P1D"],
        "regex" => &["a"],
        "json-pointer" => &["/a"],
        _ => &[],
    };
    let mut out: Vec<String> = base.iter().map(|text| (*text).to_owned()).collect();
    if format == "date-time" {
        // `2026-11-29T12:00:00.` + digits + `Z` is any length from 22 on.
        for length in [
            lengths.min_length,
            lengths.max_length.unwrap_or(0),
            lengths.max_length.unwrap_or(0) + 1,
        ] {
            if let Some(digits) = length.checked_sub(21).filter(|digits| *digits >= 1) {
                let digits = usize::try_from(digits.min(10_000)).unwrap_or(1);
                out.push(format!("2026-11-29T12:00:00.{}Z", "0".repeat(digits)));
            }
        }
    }
    out
}
