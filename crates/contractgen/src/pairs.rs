//! Pairs of contract versions, for testing `toolgate diff`'s verdicts: a generated contract, the
//! same contract with one to three random edits to its schemas, and documents drawn from both.
//!
//! The edits are the ones a contract bump makes (a bound moved, a value added to or removed
//! from an enum, a member required or dropped, a pattern rewritten, a union branch added or
//! removed, an object opened or closed, a type widened, a `contains` count moved, a
//! `patternProperties` pattern added, removed or changed, a property renamed, often to a name
//! the new version forbids where the old one let it be anything), plus
//! keywords the differ does not model (`not`, `dependentRequired`, two `multipleOf` under one
//! `allOf`), which it must answer "undecided", never "no".

use serde_json::{Map, Value, json};

use crate::entropy::Entropy;
use crate::schema::MEMBER_PATTERNS;
use crate::{Generated, generate, instance};

/// Two versions of one contract and what was edited.
#[derive(Debug, Clone)]
pub struct Pair {
    /// Version 1.
    pub from: Generated,
    /// Version 2: version 1's contract with its schemas edited, and documents drawn from them.
    pub to: Generated,
    /// Each edit, in words (`envelope.schema.json#/$defs/data/properties/a: maxLength 5 → 4`).
    pub edits: Vec<String>,
}

/// Patterns an edit may write: pairs that look alike and are not (`.` is not `[^\n]`, `\d` is not
/// `[٠-٩]`), so that reading them as anything but ECMA-262 shows.
const PATTERNS: [&str; 10] = [
    "^.{1,6}$",
    "^[^\\n]{1,6}$",
    "^\\d+$",
    "^[0-9]+$",
    "^\\w+$",
    "^[a-zé]+$",
    "^[٠-٩]+$",
    "^[a-z]{1,3}$",
    "a",
    "^\\s*$",
];

/// A pair drawn from `entropy`, with `documents` documents drawn from each version.
pub fn pair(entropy: &mut impl Entropy, documents: usize) -> Pair {
    let from = generate(entropy, documents);
    let mut schemas = from.schemas.clone();
    let mut edits = Vec::new();
    for _ in 0..1 + entropy.below(3) {
        if let Some(words) = edit(entropy, &mut schemas) {
            edits.push(words);
        }
    }
    let envelope_is_one_of = from.contract.contains("outcome:");
    let mut from = from;
    let mut to = from.clone();
    to.contract = from.contract.replacen("version: 1", "version: 2", 1);
    to.documents = instance::documents(entropy, &schemas, envelope_is_one_of, documents);
    to.schemas = schemas;
    // Drawn last, so that every pair drawn before this class existed is drawn the same, this
    // class added to some.
    if entropy.chance(15)
        && let Some(words) = forbidden_name_renamed(entropy, &mut from, &mut to)
    {
        edits.push(words);
    }
    Pair { from, to, edits }
}

/// The name a forbidden member is renamed to in version 2: one the documents' near-misses add
/// as an undeclared member (`instance.rs`), so that version 2 forbidding it while version 1 left
/// it open is shown by a document.
const RENAMED: &str = "zz_extra";

/// A member version 1 forbids (`false`, or a string no length fits), forbidden under another
/// name in version 2: a rename the differ detects (the same schema), whose new name version 1
/// let be anything (issue 63: the differ answered "no" to upstream breaking). It is made at the
/// response's root (its own properties, or a root union branch's), opened in both versions (the
/// node's and the root's `additionalProperties`/`unevaluatedProperties` dropped) so that version
/// 1 lets the new name be anything; and version 1's documents are drawn again with the new name
/// added, holding a string: what version 2 now refuses, and a document shows.
fn forbidden_name_renamed(
    entropy: &mut impl Entropy,
    from: &mut Generated,
    to: &mut Generated,
) -> Option<String> {
    let file = from
        .schemas
        .iter()
        .position(|(name, _)| name == "envelope.schema.json")?;
    let root = &from.schemas[file].1;
    let mut places: Vec<String> = Vec::new();
    if root.get("properties").is_some_and(Value::is_object) {
        places.push(String::new());
    }
    for keyword in ["oneOf", "anyOf"] {
        for (index, branch) in root
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if branch.get("properties").is_some_and(Value::is_object) {
                places.push(format!("/{keyword}/{index}"));
            }
        }
    }
    places.retain(|pointer| {
        [&from.schemas[file].1, &to.schemas[file].1]
            .iter()
            .all(|schema| {
                schema
                    .pointer(&format!("{pointer}/properties"))
                    .and_then(Value::as_object)
                    .is_some_and(|properties| {
                        !properties.contains_key(RENAMED) && !properties.contains_key("zz_gone")
                    })
            })
    });
    if places.is_empty() {
        return None;
    }
    let pointer = places[entropy.below(places.len())].clone();
    let forbidden = entropy
        .pick(&[
            json!(false),
            json!({"type": "string", "minLength": 5, "maxLength": 2}),
        ])
        .clone();
    for (generated, name) in [(&mut *from, "zz_gone"), (&mut *to, RENAMED)] {
        let schema = &mut generated.schemas[file].1;
        for place in [String::new(), pointer.clone()] {
            if let Some(node) = schema.pointer_mut(&place).and_then(Value::as_object_mut) {
                node.remove("additionalProperties");
                node.remove("unevaluatedProperties");
            }
        }
        schema
            .pointer_mut(&format!("{pointer}/properties"))?
            .as_object_mut()?
            .insert(name.to_owned(), forbidden.clone());
    }
    let renamed: Vec<Vec<u8>> = from
        .documents
        .iter()
        .filter_map(|raw| {
            let mut document: Value = serde_json::from_slice(raw).ok()?;
            document
                .as_object_mut()?
                .insert(RENAMED.to_owned(), json!("unpromised"));
            serde_json::to_vec(&document).ok()
        })
        .collect();
    from.documents.extend(renamed);
    Some(format!(
        "{}#{pointer}: forbidden property `zz_gone` renamed to `{RENAMED}`: {forbidden}",
        from.schemas[file].0
    ))
}

/// Every schema node of `value` (a pointer per node), where JSON Schema 2020-12 puts subschemas.
fn nodes(value: &Value, pointer: String, out: &mut Vec<String>) {
    let Value::Object(members) = value else {
        return;
    };
    out.push(pointer.clone());
    for (keyword, child) in members {
        let here = format!(
            "{pointer}/{}",
            keyword.replace('~', "~0").replace('/', "~1")
        );
        match keyword.as_str() {
            "properties" | "$defs" | "patternProperties" => {
                if let Value::Object(named) = child {
                    for (name, schema) in named {
                        let name = name.replace('~', "~0").replace('/', "~1");
                        nodes(schema, format!("{here}/{name}"), out);
                    }
                }
            }
            "oneOf" | "anyOf" | "allOf" => {
                if let Value::Array(branches) = child {
                    for (index, schema) in branches.iter().enumerate() {
                        nodes(schema, format!("{here}/{index}"), out);
                    }
                }
            }
            "items" | "additionalProperties" | "unevaluatedProperties" | "propertyNames" => {
                nodes(child, here, out);
            }
            _ => {}
        }
    }
}

/// One random edit to one schema node of one file (not the agent schema); its words, or `None`
/// when the node drawn had nothing to edit.
fn edit(entropy: &mut impl Entropy, schemas: &mut [(String, Value)]) -> Option<String> {
    let mut places = Vec::new();
    for (index, (name, schema)) in schemas.iter().enumerate() {
        if name == "agent.schema.json" {
            continue;
        }
        let mut found = Vec::new();
        nodes(schema, String::new(), &mut found);
        places.extend(found.into_iter().map(|pointer| (index, pointer)));
    }
    if places.is_empty() {
        return None;
    }
    let (file, pointer) = places[entropy.below(places.len())].clone();
    let name = schemas[file].0.clone();
    let node = schemas[file].1.pointer_mut(&pointer)?.as_object_mut()?;
    let words = edit_node(entropy, node)?;
    Some(format!("{name}#{pointer}: {words}"))
}

fn edit_node(entropy: &mut impl Entropy, node: &mut Map<String, Value>) -> Option<String> {
    const COUNTS: [&str; 8] = [
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minContains",
        "maxContains",
    ];
    const BOUNDS: [&str; 4] = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
    let present: Vec<String> = node.keys().cloned().collect();
    match entropy.below(15) {
        // Move a bound or a count that is there by one or two, either way, or drop it.
        0 => {
            let keyword = present
                .iter()
                .find(|keyword| {
                    COUNTS.contains(&keyword.as_str()) || BOUNDS.contains(&keyword.as_str())
                })?
                .clone();
            let old = node[&keyword].as_f64()?;
            if entropy.chance(15) {
                node.remove(&keyword);
                return Some(format!("{keyword} {old} removed"));
            }
            let step = [-2.0, -1.0, 1.0, 2.0][entropy.below(4)];
            let mut new = old + step;
            if COUNTS.contains(&keyword.as_str()) {
                new = new.max(0.0);
            }
            node.insert(keyword.clone(), number(new));
            Some(format!("{keyword} {old} → {new}"))
        }
        // Add a bound.
        1 => {
            let (keyword, value) = *entropy.pick(&[
                ("maxLength", 3.0),
                ("minLength", 2.0),
                ("minimum", 1.0),
                ("maximum", 4.0),
                ("exclusiveMaximum", 0.0),
                ("maxItems", 1.0),
                ("minItems", 1.0),
                ("maxProperties", 2.0),
            ]);
            node.insert(keyword.to_owned(), number(value));
            Some(format!("{keyword} {value} added"))
        }
        // An enum: a value removed or added.
        2 => {
            let values = node.get_mut("enum")?.as_array_mut()?;
            if values.len() > 1 && entropy.chance(50) {
                let gone = values.remove(entropy.below(values.len()));
                Some(format!("enum value {gone} removed"))
            } else {
                let added = entropy
                    .pick(&[json!("zz"), json!(7), Value::Null, json!("a")])
                    .clone();
                values.push(added.clone());
                Some(format!("enum value {added} added"))
            }
        }
        3 => {
            let old = node.get("const")?.clone();
            let new = entropy
                .pick(&[json!("zz"), json!(7), Value::Null, json!(true)])
                .clone();
            node.insert("const".to_owned(), new.clone());
            Some(format!("const {old} → {new}"))
        }
        // A pattern rewritten, or added.
        4 => {
            let new = *entropy.pick(&PATTERNS);
            let old = node.insert("pattern".to_owned(), Value::from(new));
            Some(format!("pattern {old:?} → {new:?}"))
        }
        // `required`: a name added (declared or not) or removed.
        5 => {
            let declared: Vec<String> = node
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| properties.keys().cloned().collect())
                .unwrap_or_default();
            let required = node
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()?;
            if !required.is_empty() && entropy.chance(40) {
                let gone = required.remove(entropy.below(required.len()));
                return Some(format!("{gone} no longer required"));
            }
            let name = if declared.is_empty() || entropy.chance(30) {
                "g".to_owned()
            } else {
                declared[entropy.below(declared.len())].clone()
            };
            if required.iter().any(|listed| listed == name.as_str()) {
                return None;
            }
            required.push(Value::from(name.as_str()));
            Some(format!("`{name}` required"))
        }
        // A property removed, or one added.
        6 => {
            let properties = node.get_mut("properties")?.as_object_mut()?;
            if !properties.is_empty() && entropy.chance(50) {
                let names: Vec<String> = properties.keys().cloned().collect();
                let gone = &names[entropy.below(names.len())];
                properties.remove(gone);
                Some(format!("property `{gone}` removed"))
            } else {
                let schema = member_schema(entropy);
                properties.insert("p_new".to_owned(), schema.clone());
                Some(format!("property `p_new` added: {schema}"))
            }
        }
        // An object opened, closed, or its other members typed.
        7 => {
            node.get("properties")?;
            let new = entropy
                .pick(&[json!(false), json!(true), json!({"type": "integer"})])
                .clone();
            let old = node.insert("additionalProperties".to_owned(), new.clone());
            Some(format!("additionalProperties {old:?} → {new}"))
        }
        // A type added or removed.
        8 => {
            let types = match node.get("type")? {
                Value::String(name) => vec![Value::from(name.as_str())],
                Value::Array(names) => names.clone(),
                _ => return None,
            };
            let mut types = types;
            if types.len() > 1 && entropy.chance(50) {
                let gone = types.remove(entropy.below(types.len()));
                node.insert("type".to_owned(), Value::Array(types));
                Some(format!("type {gone} removed"))
            } else {
                let added = *entropy.pick(&["null", "integer", "string", "number"]);
                if types.iter().any(|name| name == added) {
                    return None;
                }
                types.push(Value::from(added));
                node.insert("type".to_owned(), Value::Array(types));
                Some(format!("type {added} added"))
            }
        }
        // A union: a branch removed or added, or oneOf and anyOf swapped.
        9 => {
            let keyword = ["oneOf", "anyOf"]
                .into_iter()
                .find(|keyword| node.contains_key(*keyword))?;
            match entropy.below(3) {
                0 => {
                    let branches = node.get_mut(keyword)?.as_array_mut()?;
                    if branches.len() < 2 {
                        return None;
                    }
                    branches.remove(entropy.below(branches.len()));
                    Some(format!("a {keyword} branch removed"))
                }
                1 => {
                    let branch = entropy
                        .pick(&[
                            json!({"type": "integer", "maximum": 5}),
                            json!({"type": "string"}),
                            json!({"const": "zz"}),
                            json!({"type": "null"}),
                        ])
                        .clone();
                    node.get_mut(keyword)?.as_array_mut()?.push(branch.clone());
                    Some(format!("{keyword} branch {branch} added"))
                }
                _ => {
                    let other = if keyword == "oneOf" { "anyOf" } else { "oneOf" };
                    if node.contains_key(other) {
                        return None;
                    }
                    let branches = node.remove(keyword)?;
                    node.insert(other.to_owned(), branches);
                    Some(format!("{keyword} → {other}"))
                }
            }
        }
        // Keywords the differ does not model: it must say "undecided".
        10 => {
            let (keyword, value) = entropy
                .pick(&[
                    ("not", json!({"const": "zz"})),
                    ("dependentRequired", json!({"a": ["b"]})),
                    ("allOf", json!([{"multipleOf": 2}, {"multipleOf": 3}])),
                    ("dependentSchemas", Value::Null),
                ])
                .clone();
            // A dependent schema on a member the node declares, holding one it may not.
            let value = match keyword {
                "dependentSchemas" => {
                    let on = node
                        .get("properties")
                        .and_then(Value::as_object)
                        .and_then(|properties| properties.keys().next().cloned())
                        .unwrap_or_else(|| "a".to_owned());
                    json!({on: {"properties": {"b": {"type": "string"}}, "required": ["b"]}})
                }
                _ => value,
            };
            if node.contains_key(keyword) {
                return None;
            }
            node.insert(keyword.to_owned(), value.clone());
            Some(format!("{keyword} {value} added"))
        }
        11 => {
            let new = *entropy.pick(&[2.0, 3.0, 5.0, 0.5]);
            let old = node.insert("multipleOf".to_owned(), number(new));
            Some(format!("multipleOf {old:?} → {new}"))
        }
        12 => {
            if node.remove("format").is_some() {
                return Some("format removed".to_owned());
            }
            let format = *entropy.pick(&["email", "date-time", "uuid"]);
            node.insert("format".to_owned(), Value::from(format));
            Some(format!("format {format:?} added"))
        }
        // Members a pattern governs: a pattern added, removed, or its schema changed.
        14 => {
            node.get("properties")?;
            let schema = member_schema(entropy);
            let patterns = node
                .entry("patternProperties")
                .or_insert_with(|| json!({}))
                .as_object_mut()?;
            let (pattern, _) = *entropy.pick(&MEMBER_PATTERNS);
            if patterns.contains_key(pattern) && entropy.chance(50) {
                patterns.remove(pattern);
                if patterns.is_empty() {
                    node.remove("patternProperties");
                }
                Some(format!("patternProperties {pattern:?} removed"))
            } else {
                let old = patterns.insert(pattern.to_owned(), schema.clone());
                Some(format!("patternProperties {pattern:?}: {old:?} → {schema}"))
            }
        }
        _ => {
            let old = node
                .get("uniqueItems")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            node.insert("uniqueItems".to_owned(), Value::Bool(!old));
            Some(format!("uniqueItems {old} → {}", !old))
        }
    }
}

/// A bound as JSON writes it: an integer where it has no fraction.
fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// The schema a member added by an edit gets (a property or a pattern's members).
fn member_schema(entropy: &mut impl Entropy) -> Value {
    entropy
        .pick(&[
            json!({"type": "string"}),
            json!({"type": "integer", "maximum": 3}),
            json!(false),
        ])
        .clone()
}
