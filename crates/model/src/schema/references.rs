//! Reading references in a schema document: `$ref`s and `$dynamicRef`s, anchors resolved to
//! JSON pointers, nested `$id`s (which the model does not follow).

use super::*;

/// Whether `document` holds a nested resource (an `$id` below its root).
pub(super) fn nested_id(document: &Value) -> bool {
    let mut pending: Vec<&Value> = match document {
        Value::Object(members) => members.values().collect(),
        Value::Array(items) => items.iter().collect(),
        _ => Vec::new(),
    };
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(members) => {
                if members.get("$id").is_some_and(Value::is_string) {
                    return true;
                }
                pending.extend(members.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    false
}

/// How many schemas in `value` declare `$dynamicAnchor` `name`, in any resource.
pub(super) fn dynamic_anchors(value: &Value, name: &str) -> usize {
    match value {
        Value::Object(members) => {
            usize::from(members.get("$dynamicAnchor").and_then(Value::as_str) == Some(name))
                + members
                    .values()
                    .map(|member| dynamic_anchors(member, name))
                    .sum::<usize>()
        }
        Value::Array(items) => items.iter().map(|item| dynamic_anchors(item, name)).sum(),
        _ => 0,
    }
}

/// A reference a schema makes.
pub(super) enum Reference<'a> {
    /// `$ref`: to the place it names.
    Static(&'a str),
    /// `$dynamicRef` or `$recursiveRef`: to whatever the dynamic scope holds.
    Dynamic,
}

/// Every reference written anywhere in `value`.
pub(super) fn references(value: &Value) -> Vec<Reference<'_>> {
    let mut found = Vec::new();
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(members) => {
                if let Some(Value::String(reference)) = members.get("$ref") {
                    found.push(Reference::Static(reference.as_str()));
                }
                if members.contains_key("$dynamicRef") || members.contains_key("$recursiveRef") {
                    found.push(Reference::Dynamic);
                }
                pending.extend(members.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    found
}

/// The JSON pointer to the schema in `value` (at `pointer`) whose `keyword` (`$anchor` or
/// `$dynamicAnchor`) is `name`; `top` for the file's own root, where an `$id` does not start a
/// nested resource.
pub(super) fn anchor_pointer(
    value: &Value,
    keyword: &str,
    name: &str,
    pointer: String,
    top: bool,
) -> Option<String> {
    match value {
        Value::Object(members) => {
            if !top && members.contains_key("$id") {
                return None;
            }
            if members.get(keyword).and_then(Value::as_str) == Some(name) {
                return Some(pointer);
            }
            members.iter().find_map(|(key, member)| {
                let here = format!("{pointer}/{}", escape(key));
                anchor_pointer(member, keyword, name, here, false)
            })
        }
        Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
            anchor_pointer(item, keyword, name, format!("{pointer}/{index}"), false)
        }),
        _ => None,
    }
}

pub(super) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
