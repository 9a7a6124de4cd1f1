//! Normalization: `$ref` resolved between a version's files, `allOf` merged, unions kept as one
//! `oneOf`/`anyOf` per node, `unevaluatedProperties` closed over the branch that matched.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::algebra::{close_unevaluated, intersect, tighter};
use super::{Bound, Facts, JsonType, Kind, Location, Node, Union};

/// Keywords that say nothing about which instances are valid.
const ANNOTATIONS: [&str; 14] = [
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// A contract version's schema files, for resolving `$ref` between them.
#[derive(Debug, Clone)]
pub struct Schemas {
    files: BTreeMap<String, Value>,
    /// Absolute `$id`s (without a fragment) to file names.
    ids: BTreeMap<String, String>,
}

/// How deep `$ref`s may nest before the model calls the schema recursive.
const MAX_REF_DEPTH: usize = 24;

impl Schemas {
    /// The files of one version, parsed.
    pub fn new(files: BTreeMap<String, Value>) -> Schemas {
        let ids = files
            .iter()
            .filter_map(|(file, document)| {
                let id = document.get("$id")?.as_str()?;
                Some((id.trim_end_matches('#').to_owned(), file.clone()))
            })
            .collect();
        Schemas { files, ids }
    }

    /// The schema files, by name.
    pub fn files(&self) -> &BTreeMap<String, Value> {
        &self.files
    }

    /// The normalized root of `file`.
    pub fn root(&self, file: &str) -> Node {
        let at = Location {
            file: file.to_owned(),
            pointer: String::new(),
        };
        match self.files.get(file) {
            Some(document) => self.normalize(&at, document, 0),
            None => Node::unknown(&at, format!("no schema file `{file}`"), &Value::Null),
        }
    }

    /// Resolves a `$ref` written in `file`: to the same file (`#/…`), another file of the
    /// contract (`other.json#/…`), or a document by its `$id`.
    fn resolve(&self, file: &str, reference: &str) -> Option<(Location, &Value)> {
        let (target, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target_file = if target.is_empty() {
            file.to_owned()
        } else if self.files.contains_key(target) {
            target.to_owned()
        } else if let Some(file) = self.ids.get(target) {
            file.clone()
        } else {
            let relative = target.rsplit('/').next().unwrap_or(target);
            self.files
                .contains_key(relative)
                .then(|| relative.to_owned())?
        };
        let pointer = fragment.replace("%24", "$").replace("%25", "%");
        let value = self.files.get(&target_file)?.pointer(&pointer)?;
        Some((
            Location {
                file: target_file,
                pointer,
            },
            value,
        ))
    }

    fn normalize(&self, at: &Location, schema: &Value, depth: usize) -> Node {
        if depth > MAX_REF_DEPTH {
            return Node::unknown(at, "a recursive `$ref`", schema);
        }
        let members = match schema {
            Value::Bool(true) => return Node::any(at),
            Value::Bool(false) => {
                return Node {
                    at: at.clone(),
                    kind: Kind::Nothing,
                };
            }
            Value::Object(members) => members,
            other => {
                return Node::unknown(at, "a schema that is not an object or a boolean", other);
            }
        };
        let child = |keyword: &str| Location {
            file: at.file.clone(),
            pointer: format!("{}/{}", at.pointer, escape(keyword)),
        };
        let mut facts = Facts::new(at);
        let mut merged: Vec<Node> = Vec::new();
        let mut unevaluated: Option<Node> = None;
        for (keyword, value) in members {
            let here = child(keyword);
            let bad = |what: &str| Node::unknown(&here, format!("`{keyword}` {what}"), value);
            match keyword.as_str() {
                keyword if ANNOTATIONS.contains(&keyword) => {}
                "$ref" => {
                    let Some(reference) = value.as_str() else {
                        return bad("is not a string");
                    };
                    match self.resolve(&at.file, reference) {
                        Some((target, resolved)) => {
                            merged.push(self.normalize(&target, resolved, depth + 1));
                        }
                        None => return bad("cannot be resolved within the contract's files"),
                    }
                }
                "allOf" => {
                    let Some(parts) = value.as_array() else {
                        return bad("is not an array");
                    };
                    for (index, part) in parts.iter().enumerate() {
                        let at = Location {
                            file: at.file.clone(),
                            pointer: format!("{}/{index}", here.pointer),
                        };
                        merged.push(self.normalize(&at, part, depth));
                    }
                }
                "oneOf" | "anyOf" => {
                    if facts.union.is_some() {
                        return bad("beside another oneOf/anyOf");
                    }
                    let Some(parts) = value.as_array() else {
                        return bad("is not an array");
                    };
                    let branches = parts
                        .iter()
                        .enumerate()
                        .map(|(index, part)| {
                            let at = Location {
                                file: at.file.clone(),
                                pointer: format!("{}/{index}", here.pointer),
                            };
                            self.normalize(&at, part, depth)
                        })
                        .collect();
                    facts.union = Some(Union {
                        exactly_one: keyword == "oneOf",
                        branches,
                    });
                }
                "type" => {
                    let names: Vec<&str> = match value {
                        Value::String(name) => vec![name.as_str()],
                        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                        _ => return bad("is not a name or a list of names"),
                    };
                    let mut types = BTreeSet::new();
                    for name in names {
                        match JsonType::from_name(name) {
                            Some(kind) => types.insert(kind),
                            None => return bad("names an unknown type"),
                        };
                    }
                    if types.contains(&JsonType::Number) {
                        types.remove(&JsonType::Integer);
                    }
                    facts.types = Some(types);
                }
                "enum" => match value.as_array() {
                    Some(values) => facts.values = Some(values.clone()),
                    None => return bad("is not an array"),
                },
                "const" => facts.values = Some(vec![value.clone()]),
                "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
                | "maxProperties" => {
                    let Some(count) = value.as_u64() else {
                        return bad("is not a count");
                    };
                    match keyword.as_str() {
                        "minLength" => facts.strings.min_length = count,
                        "maxLength" => facts.strings.max_length = Some(count),
                        "minItems" => facts.min_items = count,
                        "maxItems" => facts.max_items = Some(count),
                        "minProperties" => facts.min_properties = count,
                        _ => facts.max_properties = Some(count),
                    }
                }
                "pattern" => match value.as_str() {
                    Some(pattern) => facts.strings.patterns.push(pattern.to_owned()),
                    None => return bad("is not a string"),
                },
                "format" => match value.as_str() {
                    Some(format) => facts.format = Some(format.to_owned()),
                    None => return bad("is not a string"),
                },
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    let Some(number) = value.as_f64() else {
                        return bad("is not a number");
                    };
                    let exclusive = keyword.starts_with("exclusive");
                    let bound = Some(Bound {
                        value: number,
                        exclusive,
                    });
                    match keyword.as_str() {
                        "minimum" | "exclusiveMinimum" => {
                            facts.minimum = tighter(facts.minimum, bound, true);
                        }
                        "maximum" | "exclusiveMaximum" => {
                            facts.maximum = tighter(facts.maximum, bound, false);
                        }
                        _ => facts.multiple_of = Some(number),
                    }
                }
                "properties" => {
                    let Some(properties) = value.as_object() else {
                        return bad("is not an object");
                    };
                    for (name, property) in properties {
                        let at = Location {
                            file: at.file.clone(),
                            pointer: format!("{}/{}", here.pointer, escape(name)),
                        };
                        facts
                            .properties
                            .insert(name.clone(), self.normalize(&at, property, depth));
                    }
                }
                "required" => {
                    let Some(names) = value.as_array() else {
                        return bad("is not an array");
                    };
                    facts
                        .required
                        .extend(names.iter().filter_map(Value::as_str).map(str::to_owned));
                }
                "additionalProperties" => {
                    facts.additional = Box::new(self.normalize(&here, value, depth));
                }
                "unevaluatedProperties" => {
                    unevaluated = Some(self.normalize(&here, value, depth));
                }
                "items" => facts.items = Box::new(self.normalize(&here, value, depth)),
                "uniqueItems" => facts.unique_items = value.as_bool().unwrap_or(false),
                other => {
                    return Node::unknown(
                        &here,
                        format!("`{other}`, which the differ does not model"),
                        schema,
                    );
                }
            }
        }
        // A node that only refers elsewhere is the node it refers to, written there.
        if merged.len() == 1 && unevaluated.is_none() && facts == Facts::new(at) {
            return merged.remove(0);
        }
        let mut node = Node {
            at: at.clone(),
            kind: Kind::Facts(Box::new(facts)),
        };
        for part in merged {
            node = intersect(&node, &part);
        }
        match unevaluated {
            Some(closing) => close_unevaluated(node, closing),
            None => node,
        }
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
