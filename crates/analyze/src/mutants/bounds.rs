//! Schema-guided mutations: for every bound the schema states on a value of the seed, a value
//! exactly at it (the schema must let it through) and one step past it (the schema must refuse
//! it). `maxLength`'s step past is `oversized_string`'s, so it is not repeated here.

use serde_json::{Number, Value};

use toolgate_gate::internals::{AppliedKeyword, format_accepts};

use super::{Family, Out, Seed, resized};
use toolgate_model::strings::{self, Strings};

/// The keywords whose bounds are mutated.
const BOUNDS: [&str; 8] = [
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

pub(super) fn derive(seed: &Seed<'_>, out: &mut Out<'_>) {
    let inside = out.family == Family::BoundInside;
    let bounded = seed
        .keywords
        .iter()
        .filter(|applied| BOUNDS.contains(&applied.keyword.as_str()))
        .collect();
    for applied in out.sample(bounded, |applied: &&AppliedKeyword| {
        applied.instance.clone()
    }) {
        let pointer = applied.instance.as_str();
        let Some(current) = seed.document.pointer(pointer) else {
            continue;
        };
        let Some((what, mut value)) = mutant(seed, applied, current, inside) else {
            continue;
        };
        // A string exactly at a length bound must still be what its format and patterns say,
        // or the schema refuses it for that and the bound is never tested.
        if inside && let (Value::String(text), Value::String(resized)) = (current, &value) {
            match conforming(seed, pointer, text, resized.chars().count()) {
                Some(text) => value = Value::from(text),
                None => continue,
            }
        }
        if &value == current {
            continue; // the seed already sits there: nothing new to learn
        }
        out.push(pointer, what, seed.layout.with_value(pointer, &value));
    }
}

/// A string of `length` characters close to `original` that the format and patterns at
/// `pointer` accept: the original stretched by its last character, a timestamp stretched by
/// fraction digits, or the shortest such string the patterns admit.
fn conforming(seed: &Seed<'_>, pointer: &str, original: &str, length: usize) -> Option<String> {
    let patterns = seed.patterns(pointer);
    let format = seed.keyword(pointer, "format").and_then(Value::as_str);
    let side = Strings {
        min_length: length as u64,
        max_length: Some(length as u64),
        patterns,
    };
    let accepted = |text: &String| {
        strings::admits(&side, text) == Ok(true)
            && format.is_none_or(|format| format_accepts(format, text) != Some(false))
    };
    // Cheapest first: the automaton search runs only when nothing simpler conforms.
    let candidates: [&dyn Fn() -> Option<String>; 3] = [
        &|| Some(resized(original, length, None)),
        &|| stretched_timestamp(original, length),
        &|| strings::example(&side).ok().flatten(),
    ];
    candidates
        .into_iter()
        .filter_map(|candidate| candidate())
        .find(accepted)
}

/// An RFC 3339 timestamp made `length` characters by fraction digits, the same instant.
fn stretched_timestamp(original: &str, length: usize) -> Option<String> {
    let offset_at = original.rfind(['Z', 'z', '+', '-']).filter(|at| *at > 10)?;
    let (time, offset) = original.split_at(offset_at);
    let missing = length.checked_sub(original.len())?;
    let stretched = if time.contains('.') {
        format!("{time}{}{offset}", "0".repeat(missing))
    } else if missing >= 2 {
        format!("{time}.{}{offset}", "0".repeat(missing - 1))
    } else {
        return None;
    };
    Some(stretched)
}

/// The value at (`inside`) or just past a bound, and what it is in words; `None` where the byte
/// limit would refuse the value before the schema could see it (a bound larger than the limit
/// allows cannot be reached, so there is nothing to learn at it).
fn mutant(
    seed: &Seed<'_>,
    applied: &AppliedKeyword,
    current: &Value,
    inside: bool,
) -> Option<(String, Value)> {
    let (keyword, bound) = (applied.keyword.as_str(), &applied.value);
    match (keyword, current) {
        ("minLength" | "maxLength", Value::String(text)) => {
            let limit = usize::try_from(bound.as_u64()?).ok()?;
            let length = match (keyword, inside) {
                (_, true) => limit,
                ("minLength", false) => limit.checked_sub(1)?,
                _ => return None, // oversized_string
            };
            if length > seed.room(&applied.instance)? {
                return None;
            }
            Some((
                format!(
                    "{length} characters, {} its {keyword} of {limit}",
                    at_or_past(inside)
                ),
                Value::from(resized(text, length, None)),
            ))
        }
        ("minItems" | "maxItems", Value::Array(items)) => {
            let limit = usize::try_from(bound.as_u64()?).ok()?;
            let length = match (keyword, inside) {
                (_, true) => limit,
                ("minItems", false) => limit.checked_sub(1)?,
                _ => limit.checked_add(1)?,
            };
            let last = items.last()?;
            let item_bytes = last.to_string().len() + 1;
            if length.checked_mul(item_bytes)? > seed.max_bytes {
                return None;
            }
            let mut resized: Vec<Value> = items.iter().take(length).cloned().collect();
            resized.resize(length, last.clone());
            // The whole document as the mutant is written, not the items alone: past the byte
            // limit, the limit decides first and the schema's bound is never reached.
            let resized = Value::Array(resized);
            if seed.layout.with_value(&applied.instance, &resized)?.len() > seed.max_bytes {
                return None;
            }
            Some((
                format!(
                    "{length} items, {} its {keyword} of {limit}",
                    at_or_past(inside)
                ),
                resized,
            ))
        }
        (
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum",
            Value::Number(number),
        ) => {
            let limit = bound.as_f64()?;
            let whole = (number.is_i64() || number.is_u64()) && limit.fract() == 0.0;
            let step = if whole { 1.0 } else { 0.5 };
            let upper = keyword.contains("aximum");
            let exclusive = keyword.starts_with("exclusive");
            // Inside: the bound itself, or one step in for an exclusive bound. Outside: one step
            // out, or the bound itself for an exclusive one.
            let toward_outside = if upper { step } else { -step };
            let value = match (inside, exclusive) {
                (true, false) | (false, true) => limit,
                (true, true) => limit - toward_outside,
                (false, false) => limit + toward_outside,
            };
            let value = if whole && value.abs() < 9.0e15 {
                Value::from(value as i64)
            } else {
                Value::Number(Number::from_f64(value)?)
            };
            Some((
                format!("{value}, {} its {keyword} of {bound}", at_or_past(inside)),
                value,
            ))
        }
        _ => None,
    }
}

fn at_or_past(inside: bool) -> &'static str {
    if inside {
        "exactly at"
    } else {
        "one step past"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::mutants::AppliedKeywords;

    #[test]
    fn a_timestamp_is_stretched_by_fraction_digits() {
        assert_eq!(
            stretched_timestamp("2026-11-29T11:40:00Z", 25).as_deref(),
            Some("2026-11-29T11:40:00.0000Z")
        );
        assert_eq!(
            stretched_timestamp("2026-11-29T09:05:12.5-03:00", 28).as_deref(),
            Some("2026-11-29T09:05:12.50-03:00")
        );
        assert_eq!(stretched_timestamp("2026-11-29T11:40:00Z", 21), None);
        assert_eq!(stretched_timestamp("not a time", 30), None);
    }

    #[test]
    fn numbers_step_by_one_when_whole_and_respect_exclusive_bounds() {
        let value = |keyword: &str, bound: Value, current: Value, inside| {
            let document = json!({ "v": current });
            let raw = document.to_string().into_bytes();
            let seed = Seed {
                raw: &raw,
                document: &document,
                layout: &toolgate_model::layout::Layout::new(&document),
                keywords: &AppliedKeywords::default(),
                max_bytes: 4096,
                max_depth: 8,
                tool_pointer: None,
                request_id_pointer: None,
                other_tool: "other",
                now: std::time::SystemTime::UNIX_EPOCH,
                pinned: &[],
                tolerated: &[],
                fresh: &[],
            };
            let applied = AppliedKeyword {
                instance: "/v".into(),
                keyword: keyword.into(),
                value: bound,
            };
            mutant(&seed, &applied, &document["v"], inside).map(|(_, value)| value)
        };
        assert_eq!(value("maximum", json!(10), json!(3), true), Some(json!(10)));
        assert_eq!(
            value("maximum", json!(10), json!(3), false),
            Some(json!(11))
        );
        assert_eq!(value("minimum", json!(1), json!(3), false), Some(json!(0)));
        assert_eq!(
            value("exclusiveMinimum", json!(0), json!(3), true),
            Some(json!(1))
        );
        assert_eq!(
            value("exclusiveMinimum", json!(0), json!(3), false),
            Some(json!(0))
        );
        assert_eq!(
            value("maximum", json!(1), json!(0.25), false),
            Some(json!(1.5))
        );
        assert_eq!(
            value("minLength", json!(2), json!("abc"), false),
            Some(json!("a"))
        );
        assert_eq!(value("minLength", json!(0), json!("abc"), false), None);
        assert_eq!(
            value("maxLength", json!(5), json!("abc"), true),
            Some(json!("abccc"))
        );
        assert_eq!(value("maxLength", json!(5), json!("abc"), false), None);
        assert_eq!(
            value("maxItems", json!(2), json!([1]), false),
            Some(json!([1, 1, 1]))
        );
        assert_eq!(
            value("minItems", json!(1), json!([]), true),
            None,
            "nothing to repeat"
        );
        // Bounds past what the byte limit allows are never built, however large.
        assert_eq!(
            value("maxLength", json!(1_000_000_000u64), json!("abc"), true),
            None
        );
        assert_eq!(
            value("maxItems", json!(1_000_000_000u64), json!([1]), true),
            None
        );
        // The items fit, the document around them does not: never built.
        assert_eq!(value("maxItems", json!(2_047), json!([1]), true), None);
        assert_eq!(
            value("maxItems", json!(2_040), json!([1]), true).map(|v| v.as_array().unwrap().len()),
            Some(2_040)
        );
        assert_eq!(
            value("maxLength", json!(4_000), json!("abc"), true).map(|v| v.as_str().unwrap().len()),
            Some(4_000)
        );
    }
}
