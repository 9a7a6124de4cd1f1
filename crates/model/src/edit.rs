//! Mutation primitives for near-miss inputs: inject a member, remove one, duplicate one, replace a
//! value, splice in bytes no JSON value can hold.
//! Used by the property tests and the structure-aware fuzz target to derive hostile variants
//! of valid fixtures.

use serde_json::Value;

/// JSON pointers to every object in `document` (the root included when it is one).
pub fn object_pointers(document: &Value) -> Vec<String> {
    let mut pointers = Vec::new();
    walk(document, String::new(), &mut |pointer, value| {
        if value.is_object() {
            pointers.push(pointer.to_owned());
        }
    });
    pointers
}

/// JSON pointers to every value in `document`, the root included.
pub fn value_pointers(document: &Value) -> Vec<String> {
    let mut pointers = Vec::new();
    walk(document, String::new(), &mut |pointer, _| {
        pointers.push(pointer.to_owned())
    });
    pointers
}

fn walk(value: &Value, at: String, visit: &mut impl FnMut(&str, &Value)) {
    visit(&at, value);
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                walk(member, child(&at, key), visit);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, format!("{at}/{index}"), visit);
            }
        }
        _ => {}
    }
}

/// Appends `/` and `name` as a JSON Pointer reference token (`~` as `~0`, `/` as `~1`).
pub(crate) fn push_token(pointer: &mut String, name: &str) {
    pointer.push('/');
    for character in name.chars() {
        match character {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            other => pointer.push(other),
        }
    }
}

/// `at` followed by `name` as a reference token.
pub(crate) fn child(at: &str, name: &str) -> String {
    let mut pointer = String::with_capacity(at.len() + name.len() + 1);
    pointer.push_str(at);
    push_token(&mut pointer, name);
    pointer
}

/// `document` with `member: value` added to the object at `pointer` (replacing a member of that
/// name). Returns `None` when `pointer` is not an object.
pub fn with_member(document: &Value, pointer: &str, member: &str, value: Value) -> Option<Value> {
    let mut mutated = document.clone();
    mutated
        .pointer_mut(pointer)?
        .as_object_mut()?
        .insert(member.to_owned(), value);
    Some(mutated)
}

/// `document` with the value at `pointer` replaced. Returns `None` when there is no such value.
pub fn with_value(document: &Value, pointer: &str, replacement: Value) -> Option<Value> {
    let mut mutated = document.clone();
    *mutated.pointer_mut(pointer)? = replacement;
    Some(mutated)
}

/// `document` with `value` at `pointer`: the value there replaced, or, when only its last step is
/// missing, added as a member of the object the rest of `pointer` names (the empty pointer replaces
/// the whole document). Returns `None` when neither is possible.
pub fn with_value_or_member(document: &Value, pointer: &str, value: Value) -> Option<Value> {
    if pointer.is_empty() || document.pointer(pointer).is_some() {
        return with_value(document, pointer, value);
    }
    let (parent, name) = last_step(pointer)?;
    with_member(document, parent, &name, value)
}

/// `document` without the member `pointer` names; unchanged when there is no such member.
pub fn without_pointer(document: &Value, pointer: &str) -> Value {
    last_step(pointer)
        .and_then(|(parent, name)| without_member(document, parent, &name))
        .unwrap_or_else(|| document.clone())
}

/// A pointer's parent and its last step, unescaped.
fn last_step(pointer: &str) -> Option<(&str, String)> {
    let (parent, last) = pointer.rsplit_once('/')?;
    Some((parent, last.replace("~1", "/").replace("~0", "~")))
}

/// `document` without member `name` of the object at `pointer`. Returns `None` when there is no
/// such member.
pub fn without_member(document: &Value, pointer: &str, name: &str) -> Option<Value> {
    let mut mutated = document.clone();
    mutated
        .pointer_mut(pointer)?
        .as_object_mut()?
        .remove(name)?;
    Some(mutated)
}

/// `document` as compact JSON bytes with the value at `pointer` written as `raw`, byte for byte:
/// for what no JSON value can hold (a `NaN` token, a string with an invalid UTF-8 byte). Returns
/// `None` when there is no such value.
pub fn bytes_with_raw_value(document: &Value, pointer: &str, raw: &[u8]) -> Option<Vec<u8>> {
    // A placeholder no document written by a person holds, replaced once in the serialized text.
    const PLACEHOLDER: &str = "\u{1}toolgate-splice\u{1}";
    let text = with_value(document, pointer, Value::from(PLACEHOLDER))?.to_string();
    let literal = Value::from(PLACEHOLDER).to_string();
    let at = text.find(&literal)?;
    let mut out = Vec::with_capacity(text.len() + raw.len());
    out.extend_from_slice(&text.as_bytes()[..at]);
    out.extend_from_slice(raw);
    out.extend_from_slice(&text.as_bytes()[at + literal.len()..]);
    Some(out)
}

/// `document` as compact JSON text in which the object at `pointer` carries member `name` once
/// more, with `value`: a duplicate member name, which no parsed value can represent.
pub fn text_with_duplicate(document: &Value, pointer: &str, name: &str, value: &Value) -> String {
    text_with_duplicate_spelled(document, pointer, &Value::from(name).to_string(), value)
}

/// Like [`text_with_duplicate`], with the duplicated name written exactly as `spelled_name` (a
/// JSON string literal, quotes included), e.g. with an escape: `"st\u0061te"`.
pub fn text_with_duplicate_spelled(
    document: &Value,
    pointer: &str,
    spelled_name: &str,
    value: &Value,
) -> String {
    let mut out = String::new();
    write_with_duplicate(document, "", (pointer, spelled_name, value), &mut out);
    out
}

/// `name` as a JSON string literal whose first character is written as a `\u` escape: the same
/// name after unescaping, spelled differently.
pub fn escaped_name(name: &str) -> String {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return "\"\"".to_owned();
    };
    let mut units = [0u16; 2];
    let escaped: String = first
        .encode_utf16(&mut units)
        .iter()
        .map(|unit| format!("\\u{unit:04x}"))
        .collect();
    let rest = Value::from(chars.as_str()).to_string();
    format!("\"{escaped}{}", &rest[1..])
}

fn write_with_duplicate(
    value: &Value,
    at: &str,
    duplicate: (&str, &str, &Value),
    out: &mut String,
) {
    match value {
        Value::Object(members) => {
            out.push('{');
            for (index, (key, member)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_with_duplicate(member, &child(at, key), duplicate, out);
            }
            if at == duplicate.0 {
                if !members.is_empty() {
                    out.push(',');
                }
                out.push_str(duplicate.1);
                out.push(':');
                out.push_str(&duplicate.2.to_string());
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_with_duplicate(item, &format!("{at}/{index}"), duplicate, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_reach_every_object_and_value() {
        let document = json!({"a": {"b/c": [1, {"d": 2}]}});
        assert_eq!(object_pointers(&document), vec!["", "/a", "/a/b~1c/1"]);
        assert_eq!(value_pointers(&document).len(), 6);
    }

    #[test]
    fn a_duplicate_is_written_into_the_chosen_object() {
        let document = json!({"data": {"state": "failed"}});
        assert_eq!(
            text_with_duplicate(&document, "/data", "state", &json!("succeeded")),
            r#"{"data":{"state":"failed","state":"succeeded"}}"#
        );
        assert_eq!(
            text_with_duplicate(&json!({}), "", "a", &json!(1)),
            r#"{"a":1}"#
        );
    }

    #[test]
    fn an_escaped_name_is_the_same_name_after_unescaping() {
        for name in ["state", "s", "é", "🚀x", "a\"b"] {
            let spelled = escaped_name(name);
            assert!(spelled.starts_with("\"\\u"), "{spelled}");
            assert_eq!(serde_json::from_str::<String>(&spelled).unwrap(), name);
        }
        assert_eq!(
            text_with_duplicate_spelled(&json!({"s": 1}), "", &escaped_name("s"), &json!(2)),
            r#"{"s":1,"\u0073":2}"#
        );
    }

    #[test]
    fn a_raw_value_is_spliced_in_byte_for_byte() {
        let document = json!({"a": {"n": 1, "s": "x"}});
        assert_eq!(
            bytes_with_raw_value(&document, "/a/n", b"NaN").unwrap(),
            br#"{"a":{"n":NaN,"s":"x"}}"#
        );
        assert_eq!(
            bytes_with_raw_value(&document, "/a/s", b"\"x\xff\"").unwrap(),
            b"{\"a\":{\"n\":1,\"s\":\"x\xff\"}}"
        );
        assert!(bytes_with_raw_value(&document, "/b", b"1").is_none());
        assert_eq!(
            without_member(&document, "/a", "n").unwrap(),
            json!({"a": {"s": "x"}})
        );
        assert!(without_member(&document, "/a", "zz").is_none());
    }

    #[test]
    fn members_and_values_are_replaced_where_pointed() {
        let document = json!({"data": {"state": "failed"}});
        assert_eq!(
            with_member(&document, "/data", "x", json!(true)).unwrap(),
            json!({"data": {"state": "failed", "x": true}})
        );
        assert_eq!(
            with_value(&document, "/data/state", json!(null)).unwrap(),
            json!({"data": {"state": null}})
        );
        assert!(with_member(&document, "/data/state", "x", json!(1)).is_none());
    }

    #[test]
    fn a_missing_last_step_is_added_and_a_named_member_removed() {
        let document = json!({"data": {"a~/b": 1, "list": [1]}});
        assert_eq!(
            with_value_or_member(&document, "/data/a~0~1b", json!(2)),
            Some(json!({"data": {"a~/b": 2, "list": [1]}}))
        );
        assert_eq!(
            with_value_or_member(&document, "/data/new", json!(true)),
            Some(json!({"data": {"a~/b": 1, "list": [1], "new": true}}))
        );
        assert_eq!(
            with_value_or_member(&document, "", json!(0)),
            Some(json!(0))
        );
        assert_eq!(
            with_value_or_member(&document, "/data/list/5", json!(0)),
            None
        );
        assert_eq!(
            with_value_or_member(&document, "/nowhere/x", json!(0)),
            None
        );
        assert_eq!(
            without_pointer(&document, "/data/a~0~1b"),
            json!({"data": {"list": [1]}})
        );
        assert_eq!(without_pointer(&document, "/data/absent"), document);
    }
}
