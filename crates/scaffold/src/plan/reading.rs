//! Reading the scaffold's own schema document where fields are chosen: `$ref`s followed inside
//! the document, `allOf` merged, required names and promised places located by JSON pointer.

use super::names::{field_name, is_secret};
use super::*;

/// The object a schema describes: itself, or (for a `oneOf`/`anyOf` of objects, as descriptions
/// write a user that is either private or public) its first branch with properties, and whether it
/// was a branch.
pub(super) fn object_branch<'v>(document: &'v Value, schema: &'v Value) -> (&'v Value, bool) {
    if schema.get("properties").is_some() || schema.get("items").is_some() {
        return (schema, false);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            for branch in branches {
                let branch = resolve(document, branch);
                if branch.get("properties").is_some() {
                    return (branch, branches.len() > 1);
                }
            }
        }
    }
    (schema, false)
}

/// Whether every `oneOf`/`anyOf` branch of `schema` (the response's root, or a list's items)
/// declares member `name`: a field read from one branch only would be refused by the others'
/// closed objects, so only members all branches declare are promised.
pub(super) fn declared_in_every_branch(document: &Value, schema: &Value, name: &str) -> bool {
    ["oneOf", "anyOf"].iter().all(|keyword| {
        schema
            .get(*keyword)
            .and_then(Value::as_array)
            .is_none_or(|branches| {
                branches.iter().all(|branch| {
                    resolve(document, branch)
                        .pointer(&format!("/properties/{}", crate::convert::escape(name)))
                        .is_some()
                })
            })
    })
}

/// The string members of an object schema, as `(field name, pointer, optional)`: promised only
/// when nothing else is.
pub(super) fn free_text_members(document: &Value, object: &Value) -> Vec<(String, String, bool)> {
    let required = required_names(document, object);
    properties(document, object)
        .into_iter()
        .filter(|(name, schema)| {
            let schema = resolve(document, schema);
            is_type(document, schema, "string") && !is_secret(name, schema)
        })
        .take(MOST_FIELDS)
        .map(|(name, _)| {
            (
                field_name(&name),
                format!("/{}", crate::convert::escape(&name)),
                !required.contains(&name),
            )
        })
        .collect()
}

/// The members of an object schema whose values the schema pins, as `(field name, pointer,
/// optional)`; the others' pointers go to `left` (under `prefix`, as the to-do list shows them).
pub(super) fn pinned_members(
    document: &Value,
    object: &Value,
    left: &mut Vec<String>,
    prefix: &str,
) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    let required = required_names(document, object);
    for (name, schema) in properties(document, object) {
        let schema = resolve(document, schema);
        let pointer = format!("/{}", crate::convert::escape(&name));
        if is_secret(&name, schema) {
            continue; // never offered; `secret_places` lists it
        }
        if pinned(document, schema) {
            if found.len() < MOST_FIELDS {
                found.push((field_name(&name), pointer, !required.contains(&name)));
            }
        } else if is_type(document, schema, "string") {
            left.push(format!("{prefix}{pointer}"));
        }
    }
    // Field names must differ after sanitizing.
    let mut seen = BTreeSet::new();
    found.retain(|(name, _, _)| seen.insert(name.clone()));
    found
}

/// Whether a value's schema pins its form: a number, a boolean, an enum or const, a string with
/// a format or a pattern.
pub(super) fn pinned(document: &Value, schema: &Value) -> bool {
    let scalar = ["integer", "number", "boolean"]
        .iter()
        .any(|kind| is_type(document, schema, kind))
        && !is_type(document, schema, "string")
        && !is_type(document, schema, "object")
        && !is_type(document, schema, "array");
    let listed = schema.get("enum").is_some() || schema.get("const").is_some();
    let formed = is_type(document, schema, "string")
        && (schema.get("pattern").is_some()
            || schema
                .get("format")
                .and_then(Value::as_str)
                // A format the gate asserts, except those whose values are free text.
                .is_some_and(|format| {
                    JSON_SCHEMA_FORMATS.contains(&format)
                        && !matches!(format, "regex" | "relative-json-pointer")
                }));
    scalar || listed || formed
}

pub(super) fn is_type(_document: &Value, schema: &Value, kind: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(name)) => name == kind,
        Some(Value::Array(names)) => names.iter().any(|name| name == kind),
        _ => false,
    }
}

/// `schema`, or what its `$ref` into the document's `$defs` points to.
pub(super) fn resolve<'v>(document: &'v Value, schema: &'v Value) -> &'v Value {
    let mut current = schema;
    for _ in 0..16 {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| document.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current
}

/// An object schema's properties, its `allOf` parts' included.
pub(super) fn properties<'v>(document: &'v Value, object: &'v Value) -> Vec<(String, &'v Value)> {
    let mut found: Vec<(String, &Value)> = object
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| (name.clone(), schema))
        .collect();
    for part in object
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (name, schema) in properties(document, resolve(document, part)) {
            if !found.iter().any(|(known, _)| *known == name) {
                found.push((name, schema));
            }
        }
    }
    found
}

pub(super) fn property<'v>(
    document: &'v Value,
    object: &'v Value,
    name: &str,
) -> Option<&'v Value> {
    properties(document, object)
        .into_iter()
        .find(|(known, _)| known == name)
        .map(|(_, schema)| schema)
}

pub(super) fn required_names(document: &Value, object: &Value) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    for part in object
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        names.extend(required_names(document, resolve(document, part)));
    }
    names
}

/// Whether every object on the way to `pointer` requires the next member.
pub(super) fn required_at(schema: &Value, pointer: &str) -> bool {
    let mut current = resolve(schema, schema);
    for token in pointer.split('/').skip(1) {
        if token == "*" {
            // Each item of a list: an item is there whenever the list is.
            match current.get("items") {
                Some(items) => {
                    current = resolve(schema, items);
                    continue;
                }
                None => return false,
            }
        }
        let name = token.replace("~1", "/").replace("~0", "~");
        if !required_names(schema, current).contains(&name) {
            return false;
        }
        match property(schema, current, &name) {
            Some(next) => current = resolve(schema, next),
            None => return false,
        }
    }
    true
}

/// Where the schema at `pointer` in a response is written: the first of [`locate_all`].
pub(crate) fn locate(document: &Value, pointer: &str) -> Option<String> {
    locate_all(document, pointer).into_iter().next()
}

/// Every place the schema for `pointer` in a response is written, through `$ref`s, `items`,
/// `allOf` parts and each `oneOf`/`anyOf` branch that declares the member (a bound assumed for
/// what the agent sees must hold in every branch a response may take).
pub(super) fn locate_all(document: &Value, pointer: &str) -> Vec<String> {
    let step_ref = |at: &mut String| {
        for _ in 0..16 {
            let Some(reference) = document
                .pointer(at)
                .and_then(|schema| schema.get("$ref"))
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix('#'))
                .filter(|reference| document.pointer(reference).is_some())
            else {
                return;
            };
            *at = reference.to_owned();
        }
    };
    let mut current = vec![String::new()];
    for token in pointer.split('/').skip(1) {
        let name = token.replace("~1", "/").replace("~0", "~");
        let member = format!("/properties/{}", crate::convert::escape(&name));
        let mut next: Vec<String> = Vec::new();
        let mut pending: Vec<String> = current;
        let mut visited = 0;
        while let Some(mut at) = pending.pop() {
            visited += 1;
            if visited > 64 {
                break;
            }
            step_ref(&mut at);
            let Some(schema) = document.pointer(&at) else {
                continue;
            };
            if schema.pointer(&member).is_some() {
                next.push(format!("{at}{member}"));
            } else if (name == "*" || name.parse::<usize>().is_ok())
                && schema.get("items").is_some_and(Value::is_object)
            {
                next.push(format!("{at}/items"));
            }
            for keyword in ["allOf", "oneOf", "anyOf"] {
                if let Some(parts) = schema.get(keyword).and_then(Value::as_array) {
                    for index in 0..parts.len() {
                        pending.push(format!("{at}/{keyword}/{index}"));
                    }
                }
            }
        }
        next.dedup();
        current = next;
    }
    current
        .into_iter()
        .map(|mut at| {
            step_ref(&mut at);
            at
        })
        .collect()
}

/// The places of a response (array items as `*`) where the schema has an object it declares no
/// member of and leaves open: the description says nothing of its members, so the shape
/// tolerates them there (never promised), as it does what an example shows the upstream adds.
pub(super) fn open_places(document: &Value) -> Vec<String> {
    let mut places = Vec::new();
    open_places_below(document, document, String::new(), 0, &mut places);
    places
}

fn open_places_below(
    document: &Value,
    schema: &Value,
    at: String,
    depth: usize,
    places: &mut Vec<String>,
) {
    // Recursive types are walked to a depth a real response reaches, and no further.
    if depth > 12 || places.len() >= 256 {
        return;
    }
    let schema = resolve(document, schema);
    let (object, _) = object_branch(document, schema);
    let members = properties(document, object);
    let declares = members.is_empty()
        && ![
            "patternProperties",
            "additionalProperties",
            "unevaluatedProperties",
        ]
        .iter()
        .any(|keyword| object.get(*keyword).is_some())
        && !["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|keyword| object.get(*keyword).is_some());
    if is_type(document, object, "object") && declares {
        places.push(at.clone());
        return;
    }
    for (name, member) in members {
        let inner = format!("{at}/{}", crate::convert::escape(&name));
        open_places_below(document, member, inner, depth + 1, places);
    }
    if let Some(items) = object.get("items") {
        open_places_below(document, items, format!("{at}/*"), depth + 1, places);
    }
}

/// Every place in a response where a member named or marked as a secret sits (`*` for each item
/// of a list or value of a map), through `$ref`s, `allOf` parts and union branches, to a bounded
/// depth (a description's schemas may refer to themselves).
pub(super) fn secret_places(document: &Value) -> Vec<String> {
    let mut found = BTreeSet::new();
    visit_secrets(document, document, "", 0, &mut found);
    found.into_iter().collect()
}

fn visit_secrets(
    document: &Value,
    node: &Value,
    prefix: &str,
    depth: usize,
    found: &mut BTreeSet<String>,
) {
    if depth > 12 {
        return;
    }
    let node = resolve(document, node);
    for keyword in ["oneOf", "anyOf"] {
        for branch in node
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            visit_secrets(document, branch, prefix, depth + 1, found);
        }
    }
    for keyword in ["items", "additionalProperties"] {
        if let Some(inner) = node.get(keyword).filter(|inner| inner.is_object()) {
            visit_secrets(document, inner, &format!("{prefix}/*"), depth + 1, found);
        }
    }
    for (name, member) in properties(document, node) {
        let member = resolve(document, member);
        let at = format!("{prefix}/{}", crate::convert::escape(&name));
        if is_secret(&name, member) {
            found.insert(at);
        } else {
            visit_secrets(document, member, &at, depth + 1, found);
        }
    }
}
