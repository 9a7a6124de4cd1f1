//! The agent schema a contract without `agent_schema:` gets: derived from its promised fields, so
//! it says exactly what projection builds. Each field's schema is the shape schema's own, found
//! by walking the field's pointer through `properties`, `items`, `allOf` and `$ref`s within the
//! contract's files; a field whose schema cannot be pinned to one place (a union on the way) is
//! described as any value, which is still exactly true of what projection copies there.

use serde_json::{Map, Value, json};

use crate::schema::{DIALECT, SchemaFiles};
use crate::spec::{ContractFile, Direction, ShapeSpec};

/// The name the derived schema is compiled under, beside the contract's files.
pub const DERIVED_AGENT_SCHEMA: &str = "toolgate-derived-agent.schema.json";

/// The agent-visible output of `file`'s contract, as a schema over the contract's files.
pub(crate) fn derive(file: &ContractFile, files: &SchemaFiles) -> Value {
    let shapes: Vec<&ShapeSpec> = std::iter::once(&file.shape)
        .chain(&file.legacy_shapes)
        .collect();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for field in &file.shape.fields {
        let name = &field.name.value;
        // Every shape provides every field; the output holds any of them.
        let of = |from: &str| -> Value {
            let located: Vec<Value> = shapes
                .iter()
                .map(|shape| {
                    let from = shape
                        .fields
                        .iter()
                        .find(|candidate| candidate.name.value == *name)
                        .map(|field| format!("{}{from}", field.from.value));
                    from.and_then(|from| locate(files, &shape.schema.value, &from))
                        .map_or(Value::Bool(true), |(file, pointer)| {
                            json!({"$ref": format!("{file}#{}", escape_fragment(&pointer))})
                        })
                })
                .collect();
            any_of(located)
        };
        let schema = match &field.each {
            None => of(""),
            // A list field: an array of new objects, each member described where it is read.
            Some(each) => {
                let mut members = Map::new();
                let mut required = Vec::new();
                for item in each {
                    members.insert(
                        item.name.value.clone(),
                        of(&format!("/0{}", item.from.value)),
                    );
                    if !item.optional {
                        required.push(Value::from(item.name.value.as_str()));
                    }
                }
                json!({
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": required,
                        "properties": members,
                        "additionalProperties": false
                    }
                })
            }
        };
        properties.insert(name.clone(), schema);
        if !field.optional {
            required.push(Value::from(name.as_str()));
        }
    }
    let fields = json!({
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": false
    });
    let mut schema = match file.direction {
        Direction::Action => fields,
        Direction::Result => json!({
            "type": "object",
            "required": ["tool", "request_id", "outcome", "data"],
            "properties": {
                "tool": {"const": file.tool.value},
                "request_id": {"type": "string"},
                "outcome": {"const": "success"},
                "data": fields
            },
            "additionalProperties": false
        }),
    };
    schema["$schema"] = Value::from(DIALECT);
    schema["title"] = Value::from(format!(
        "{} v{}: the output the agent sees, derived from the promised fields",
        file.tool.value, file.version.value
    ));
    schema
}

/// One schema for values any of `schemas` describes: `true` when one of them is unknown.
fn any_of(located: Vec<Value>) -> Value {
    let mut schemas: Vec<Value> = Vec::new();
    for schema in located {
        if !schemas.contains(&schema) {
            schemas.push(schema);
        }
    }
    if schemas.contains(&Value::Bool(true)) {
        Value::Bool(true)
    } else if schemas.len() == 1 {
        schemas.remove(0)
    } else {
        json!({ "anyOf": schemas })
    }
}

/// Where, in the contract's files, the schema of the value at response pointer `pointer` is
/// written: `(file, JSON pointer into it)`, when one place says it.
fn locate(files: &SchemaFiles, file: &str, pointer: &str) -> Option<(String, String)> {
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut at = (file.to_owned(), String::new());
    // Bounded: each step follows at most this many `$ref`s and `allOf`s (a cycle gives up).
    for token in tokens.iter().map(Some).chain(std::iter::once(None)) {
        let mut hops = 0;
        loop {
            let schema = files.document(&at.0)?.pointer(&at.1)?;
            hops += 1;
            if hops > 32 {
                return None;
            }
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                if token.is_none() {
                    break; // the referring schema says the same as its target
                }
                at = resolve(&at.0, reference)?;
                continue;
            }
            let Some(token) = token else { break };
            if schema
                .get("properties")
                .and_then(|properties| properties.get(token))
                .is_some()
            {
                at.1 = format!("{}/properties/{}", at.1, escape(token));
                break;
            }
            if token.parse::<usize>().is_ok() && schema.get("items").is_some_and(Value::is_object) {
                at.1 = format!("{}/items", at.1);
                break;
            }
            // One `allOf` part that declares the member.
            let parts = schema.get("allOf").and_then(Value::as_array)?;
            let index = parts.iter().position(|part| {
                part.get("properties")
                    .and_then(|properties| properties.get(token))
                    .is_some()
                    || part.get("$ref").is_some()
            })?;
            at.1 = format!("{}/allOf/{index}", at.1);
        }
    }
    Some(at)
}

/// A `$ref` written in `file`: within it (`#/…`) or to another file of the contract.
fn resolve(file: &str, reference: &str) -> Option<(String, String)> {
    let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let target = if target.is_empty() { file } else { target };
    if target.contains("://") || target.contains('/') {
        return None; // an `$id` or a path: not followed here
    }
    let pointer = fragment.replace("%24", "$").replace("%25", "%");
    Some((target.to_owned(), pointer))
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A JSON pointer as a URI fragment: every byte outside RFC 3986's fragment characters
/// percent-encoded (a member name may hold spaces, `#`, anything).
fn escape_fragment(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len());
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
