//! Mutations of one value of the parsed document: what the schema, correlation and the rules
//! must refuse.

use std::time::Duration;

use serde_json::{Number, Value};
use toolgate_gate::internals::{format_timestamp, parse_timestamp};

use super::{Family, Out, Seed, resized};
use toolgate_model::edit::object_pointers;
use toolgate_model::strings::{self, Strings};

/// How far a stale or future timestamp is from the decision time.
const A_YEAR: Duration = Duration::from_secs(365 * 86_400);

pub(super) fn derive(seed: &Seed<'_>, out: &mut Out<'_>) {
    let document = seed.document;
    let layout = seed.layout;
    let replace = |pointer: &str, value: Value| layout.with_value(pointer, &value);
    match out.family {
        Family::ExtraProperty => {
            for (index, pointer) in out
                .sample_pointers(object_pointers(document))
                .iter()
                .enumerate()
            {
                let canary = out.canary(index);
                if let Some(values) = seed.map_values(pointer) {
                    // A new key in a declared map is data, not a near-miss; a value the map's
                    // value schema refuses is.
                    let (key, value, kind) = map_breaker(seed, pointer, values, &canary);
                    out.push_marked(
                        pointer,
                        format!(
                            "gave map key `{key}` {kind}, which the map's value schema refuses"
                        ),
                        layout.with_member(pointer, &key, &value),
                        vec![canary],
                    );
                    continue;
                }
                let name = format!("toolgate_unpromised_{index}");
                out.push_declared(
                    pointer,
                    format!("added member `{name}` carrying a canary"),
                    layout.with_member(pointer, &name, &canary.clone().into()),
                    vec![name, canary],
                    seed.tolerated_at(pointer),
                );
            }
        }
        Family::NullForObject | Family::ArrayForObject | Family::StringForObject => {
            for pointer in out.sample_pointers(object_pointers(document)) {
                // The object's own compact text, as the layout wrote it: no copy of the object
                // is made or serialized again.
                let text = layout.text_at(&pointer).unwrap_or(b"{}");
                let (what, bytes) = match out.family {
                    Family::NullForObject => (
                        "replaced the object with null",
                        layout.with_raw_value(&pointer, b"null"),
                    ),
                    Family::ArrayForObject => (
                        "wrapped the object in an array",
                        layout.with_raw_value(&pointer, &[b"[", text, b"]"].concat()),
                    ),
                    _ => (
                        "replaced the object with its own JSON text, as a string",
                        replace(&pointer, Value::from(String::from_utf8_lossy(text))),
                    ),
                };
                out.push(&pointer, what, bytes);
            }
        }
        Family::EmptyIdentifier | Family::EmptyString => {
            let identifiers = out.family == Family::EmptyIdentifier;
            let strings = seed
                .pointers(|value| value.as_str().is_some_and(|text| !text.is_empty()))
                .into_iter()
                .filter(|pointer| seed.is_identifier(pointer) == identifiers)
                .collect();
            let what = if identifiers {
                "emptied the identifier"
            } else {
                "emptied the string"
            };
            for pointer in out.sample_pointers(strings) {
                out.push(&pointer, what, replace(&pointer, Value::from("")));
            }
        }
        Family::OversizedString => {
            for pointer in out.sample_pointers(seed.pointers(Value::is_string)) {
                if let Some((what, text)) = oversized(seed, &pointer) {
                    out.push(&pointer, what, replace(&pointer, Value::from(text)));
                }
            }
        }
        Family::LongString => {
            for pointer in out.sample_pointers(seed.pointers(Value::is_string)) {
                let original = seed.text(&pointer).unwrap_or_default();
                let Some(room) = seed.room(&pointer) else {
                    continue;
                };
                if room > original.chars().count() {
                    let text = resized(original, room, None);
                    out.push(
                        &pointer,
                        format!("repeated the string's last character to {room} characters, all the byte limit allows"),
                        replace(&pointer, Value::from(text)),
                    );
                }
            }
        }
        Family::PatternViolation => {
            let patterned = seed
                .pointers(Value::is_string)
                .into_iter()
                .filter(|pointer| seed.keyword(pointer, "pattern").is_some())
                .collect();
            for pointer in out.sample_pointers(patterned) {
                if let Some(text) = pattern_violation(seed, &pointer) {
                    out.push(
                        &pointer,
                        format!("a value its pattern refuses: {text:?}"),
                        replace(&pointer, Value::from(text)),
                    );
                }
            }
        }
        Family::CanaryString => {
            let strings = out.sample_pointers(seed.pointers(Value::is_string));
            for (index, pointer) in strings.iter().enumerate() {
                let canary = out.canary(index);
                out.push_marked(
                    pointer,
                    "replaced the string with a canary sentence",
                    replace(pointer, Value::from(canary.as_str())),
                    vec![canary],
                );
            }
        }
        Family::NumberAsString | Family::Fraction | Family::Negative => {
            for pointer in out.sample_pointers(seed.pointers(Value::is_number)) {
                let Some(Value::Number(number)) = document.pointer(&pointer) else {
                    continue;
                };
                let Some((what, value)) = number_mutant(out.family, number) else {
                    continue;
                };
                out.push(&pointer, what, replace(&pointer, value));
            }
        }
        Family::EnumOtherCasing | Family::EnumForeignValue => {
            let listed = seed
                .pointers(|_| true)
                .into_iter()
                .filter(|pointer| {
                    seed.keyword(pointer, "enum").is_some()
                        || seed.keyword(pointer, "const").is_some()
                })
                .collect();
            for pointer in out.sample_pointers(listed) {
                let listed = match (
                    seed.keyword(&pointer, "enum"),
                    seed.keyword(&pointer, "const"),
                ) {
                    (Some(Value::Array(values)), _) => values.clone(),
                    (_, Some(value)) => vec![value.clone()],
                    _ => continue,
                };
                let current = document.pointer(&pointer).cloned().unwrap_or_default();
                let mutated = if out.family == Family::EnumOtherCasing {
                    other_casing(&current)
                } else {
                    Some(foreign_value(&current, &listed))
                };
                let Some(mutated) = mutated.filter(|value| !listed.contains(value)) else {
                    continue;
                };
                let what = if out.family == Family::EnumOtherCasing {
                    format!("wrote {current} as {mutated}")
                } else {
                    format!("replaced {current} by {mutated}, which the list does not hold")
                };
                out.push(&pointer, what, replace(&pointer, mutated));
            }
        }
        Family::RequiredRemoved => {
            let required = seed
                .applied("required")
                .flat_map(|(object, names)| {
                    names
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(move |name| (object, name))
                })
                .collect();
            let required = out.sample(required, |(object, name): &(&str, &str)| {
                format!("{object}/{}", name.replace('~', "~0").replace('/', "~1"))
            });
            for (object, name) in required {
                let pointer = format!("{object}/{}", name.replace('~', "~0").replace('/', "~1"));
                out.push(
                    &pointer,
                    format!("removed the required member `{name}`"),
                    layout.without_member(object, name),
                );
            }
        }
        Family::SuccessWithError if document.is_object() && document.get("error").is_none() => {
            let error = serde_json::json!({"code": "INVALID_RESPONSE", "retryable": false});
            out.push(
                "",
                "added an `error` object beside the success",
                layout.with_member("", "error", &error),
            );
        }
        Family::ToolSwapped => {
            if let Some(pointer) = seed.tool_pointer
                && let Some(current) = seed.text(pointer)
            {
                let other = if seed.other_tool == current {
                    "toolgate_other_tool"
                } else {
                    seed.other_tool
                };
                out.push(
                    pointer,
                    format!("named tool `{other}` instead"),
                    replace(pointer, Value::from(other)),
                );
            }
        }
        Family::RequestIdChanged => {
            if let Some(pointer) = seed.request_id_pointer
                && let Some(current) = seed.text(pointer)
            {
                let other = another_id(current);
                out.push(
                    pointer,
                    format!("answered request {other:?} instead"),
                    replace(pointer, Value::from(other)),
                );
            }
        }
        Family::ImpossibleDate
        | Family::NoOffset
        | Family::StaleTimestamp
        | Family::FutureTimestamp => {
            // A date's age is a near-miss only where a freshness rule judges it: a year-old
            // `created_at` is normal. Its form is a near-miss everywhere.
            let by_age = matches!(out.family, Family::StaleTimestamp | Family::FutureTimestamp);
            let timestamps = seed
                .pointers(Value::is_string)
                .into_iter()
                .filter(|pointer| {
                    seed.keyword(pointer, "format") == Some(&Value::from("date-time"))
                        || parse_timestamp(seed.text(pointer).unwrap_or_default()).is_ok()
                })
                .filter(|pointer| !by_age || seed.fresh.contains(pointer))
                .collect();
            for pointer in out.sample_pointers(timestamps) {
                let text = seed.text(&pointer).unwrap_or_default();
                if let Some((what, mutated)) = timestamp_mutant(out.family, text, seed) {
                    out.push(&pointer, what, replace(&pointer, Value::from(mutated)));
                }
            }
        }
        _ => {}
    }
}

/// For a map at `pointer` whose values must match `values`: the key to write (an existing one,
/// so the key's own form is not what gets refused), a value of a type the value schema does not
/// allow (the types it names, else the types its present values were checked as), and that
/// value's kind in words.
fn map_breaker(
    seed: &Seed<'_>,
    pointer: &str,
    values: &Value,
    canary: &str,
) -> (String, Value, &'static str) {
    let present: Vec<String> = seed
        .document
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|members| members.keys().cloned().collect())
        .unwrap_or_default();
    let names = |types: &Value| -> Vec<String> {
        match types {
            Value::String(name) => vec![name.clone()],
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut allowed: Vec<String> = match values.get("type") {
        Some(types) => names(types),
        None => present
            .iter()
            .filter_map(|key| {
                let member = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                seed.keyword(&member, "type").map(names)
            })
            .flatten()
            .collect(),
    };
    if allowed.iter().any(|name| name == "number") {
        allowed.push("integer".to_owned());
    }
    let candidates: [(&str, Value, &'static str); 5] = [
        ("string", Value::from(canary), "a canary string"),
        (
            "object",
            serde_json::json!({ "note": canary }),
            "an object carrying a canary",
        ),
        (
            "array",
            serde_json::json!([canary]),
            "an array carrying a canary",
        ),
        ("integer", Value::from(7), "a number"),
        ("boolean", Value::Bool(true), "a boolean"),
    ];
    let (_, value, kind) = candidates
        .into_iter()
        .find(|(name, _, _)| !allowed.iter().any(|allowed| allowed == name))
        .unwrap_or(("null", Value::Null, "null"));
    let key = present
        .into_iter()
        .next()
        .unwrap_or_else(|| "toolgate".to_owned());
    (key, value, kind)
}

/// One character past `maxLength` where the schema states one (padded with `x`), else as long as
/// the byte limit allows; past both when the maxLength is more than the byte limit allows (the
/// string is never built larger than the limit, however large the bound).
fn oversized(seed: &Seed<'_>, pointer: &str) -> Option<(String, String)> {
    let original = seed.text(pointer)?;
    let room = seed.room(pointer)?;
    if let Some(limit) = seed
        .keyword(pointer, "maxLength")
        .and_then(Value::as_u64)
        .and_then(|limit| usize::try_from(limit).ok())
    {
        if limit >= room {
            return Some((
                format!(
                    "made the string {} characters, past the byte limit, which its maxLength of {limit} lies beyond",
                    room + 1
                ),
                resized(original, room + 1, Some('x')),
            ));
        }
        return Some((
            format!(
                "made the string {} characters, one past its maxLength of {limit}",
                limit + 1
            ),
            resized(original, limit + 1, Some('x')),
        ));
    }
    if room <= original.chars().count() {
        return None;
    }
    Some((
        format!("made the string {room} characters: no maxLength bounds it, only the byte limit"),
        resized(original, room, Some('x')),
    ))
}

/// The first of a few near values that one of the string's patterns refuses.
fn pattern_violation(seed: &Seed<'_>, pointer: &str) -> Option<String> {
    let patterns = seed.patterns(pointer);
    if patterns.is_empty() {
        return None;
    }
    let original = seed.text(pointer)?;
    let side = Strings {
        min_length: 0,
        max_length: None,
        patterns,
    };
    let foreign_first: String = std::iter::once('!')
        .chain(original.chars().skip(1))
        .collect();
    [
        format!("{original}\n"),
        format!(" {original}"),
        foreign_first,
        "!".to_owned(),
        String::new(),
    ]
    .into_iter()
    .find(|candidate| strings::admits(&side, candidate) == Ok(false))
}

fn number_mutant(family: Family, number: &Number) -> Option<(String, Value)> {
    let whole = number.is_i64() || number.is_u64();
    match family {
        Family::NumberAsString => Some((
            format!("wrote {number} as a string"),
            Value::from(number.to_string()),
        )),
        Family::Fraction if whole => {
            let value = number.as_f64()? + 0.5;
            Some((
                format!("gave {number} a fraction: {value}"),
                Value::Number(Number::from_f64(value)?),
            ))
        }
        // A number the admitted seed already holds below zero shows the contract admits
        // negatives there: another one has nothing to teach (Zuora's adjustment amounts).
        Family::Negative if number.as_f64()? < 0.0 => None,
        Family::Negative => {
            let value = match number.as_i64() {
                Some(value) => Value::from(value.checked_abs()?.checked_add(1)?.checked_neg()?),
                None => Value::Number(Number::from_f64(-(number.as_f64()?.abs() + 1.0))?),
            };
            Some((format!("made {number} negative: {value}"), value))
        }
        _ => None,
    }
}

fn other_casing(value: &Value) -> Option<Value> {
    let text = value.as_str()?;
    let changed = if text.chars().any(char::is_lowercase) {
        text.to_uppercase()
    } else {
        text.to_lowercase()
    };
    (changed != text).then(|| Value::from(changed))
}

/// A value of the same type that `listed` does not hold.
fn foreign_value(current: &Value, listed: &[Value]) -> Value {
    match current {
        Value::Bool(flag) => Value::Bool(!flag),
        Value::Number(_) => {
            let largest = listed
                .iter()
                .filter_map(Value::as_f64)
                .fold(f64::MIN, f64::max);
            match largest {
                largest if largest.fract() == 0.0 && largest.abs() < 9.0e15 => {
                    Value::from(largest as i64 + 1)
                }
                largest => Number::from_f64(largest + 1.0).map_or(Value::Null, Value::Number),
            }
        }
        _ => Value::from("toolgate_foreign_value"),
    }
}

/// The same id with its last letter or digit moved on by one, so it keeps its form.
fn another_id(id: &str) -> String {
    let mut chars: Vec<char> = id.chars().collect();
    let Some(last) = chars.iter().rposition(char::is_ascii_alphanumeric) else {
        return format!("{id}0");
    };
    let next = |ch: char, first: char, count: u8| {
        char::from(first as u8 + (ch as u8 - first as u8 + 1) % count)
    };
    chars[last] = match chars[last] {
        ch @ '0'..='9' => next(ch, '0', 10),
        ch @ 'a'..='z' => next(ch, 'a', 26),
        ch => next(ch, 'A', 26),
    };
    chars.into_iter().collect()
}

fn timestamp_mutant(family: Family, text: &str, seed: &Seed<'_>) -> Option<(String, String)> {
    match family {
        Family::ImpossibleDate => {
            let (year, rest) = (text.get(..4)?, text.get(10..)?);
            Some((
                "moved the timestamp to February 30".to_owned(),
                format!("{year}-02-30{rest}"),
            ))
        }
        Family::NoOffset => {
            let cut = if text.ends_with(['Z', 'z']) {
                text.len() - 1
            } else {
                let offset = text.len().checked_sub(6)?;
                let tail = text.get(offset..)?;
                if !(tail.starts_with(['+', '-']) && tail.as_bytes()[3] == b':') {
                    return None;
                }
                offset
            };
            Some((
                "removed the timestamp's UTC offset".to_owned(),
                text[..cut].to_owned(),
            ))
        }
        Family::StaleTimestamp => Some((
            "set the timestamp a year before the decision time".to_owned(),
            format_timestamp(seed.now.checked_sub(A_YEAR)?)?,
        )),
        Family::FutureTimestamp => Some((
            "set the timestamp a year after the decision time".to_owned(),
            format_timestamp(seed.now.checked_add(A_YEAR)?)?,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_id_keeps_the_form() {
        assert_eq!(another_id("req.J7q94MkP"), "req.J7q94MkQ");
        assert_eq!(another_id("run_9"), "run_0");
        assert_eq!(another_id("abz"), "aba");
        assert_eq!(another_id("..."), "...0");
    }

    #[test]
    fn a_negative_is_made_only_of_a_number_that_is_not_one() {
        let negative = |number: Value| {
            number_mutant(Family::Negative, number.as_number().unwrap()).map(|(_, value)| value)
        };
        assert_eq!(negative(Value::from(25)), Some(Value::from(-26)));
        assert_eq!(negative(Value::from(0)), Some(Value::from(-1)));
        assert_eq!(negative(Value::from(-25)), None);
        assert_eq!(negative(serde_json::json!(-0.5)), None);
    }

    #[test]
    fn foreign_values_keep_the_type() {
        assert_eq!(
            foreign_value(&Value::from(2), &[Value::from(1), Value::from(2)]),
            Value::from(3)
        );
        assert_eq!(
            foreign_value(&Value::Bool(true), &[Value::Bool(true)]),
            Value::Bool(false)
        );
        assert_eq!(
            foreign_value(&Value::from("a"), &[]),
            Value::from("toolgate_foreign_value")
        );
    }
}
