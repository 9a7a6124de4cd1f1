//! A contract version's JSON Schemas, normalized for comparison: `$ref` and `allOf` merged into
//! one node of facts per place (types, values, string, number, object and array constraints, and
//! at most one `oneOf`/`anyOf`), each node remembering where it was written.
//!
//! On this model the differ can decide, exactly, whether a value admitted by one node is admitted
//! by another, and build a value in the difference. A keyword the model does not understand
//! (`not`, `if`, `patternProperties`, …) makes its node `Unknown`: two equal unknown nodes are
//! no change, and a changed one is reported as undecidable, never guessed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};
use toolgate_gate::internals::format_accepts;

use super::strings::{self, Strings};

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

/// Where a node was written: a schema file and a JSON pointer into it.
#[derive(Debug, Clone, Default)]
pub struct Location {
    /// The schema file.
    pub file: String,
    /// The JSON pointer in it.
    pub pointer: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.file, self.pointer)
    }
}

/// One normalized schema node.
#[derive(Debug, Clone)]
pub struct Node {
    /// Where it was written (not part of equality: the same node at another place is the same).
    pub at: Location,
    /// What it says.
    pub kind: Kind,
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.kind == other.kind
    }
}

/// What a node says.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `true` or `{}`: every instance.
    Any,
    /// `false`: no instance.
    Nothing,
    /// A conjunction of facts.
    Facts(Box<Facts>),
    /// Something the model does not understand, kept whole so equal ones compare equal.
    Unknown {
        /// Why it is not understood.
        reason: String,
        /// The schema as written.
        raw: Value,
    },
}

/// JSON's types, with `integer` apart from `number` as JSON Schema has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JsonType {
    /// `null`.
    Null,
    /// `true` or `false`.
    Boolean,
    /// A number with no fraction.
    Integer,
    /// Any number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl JsonType {
    fn from_name(name: &str) -> Option<JsonType> {
        Some(match name {
            "null" => JsonType::Null,
            "boolean" => JsonType::Boolean,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "string" => JsonType::String,
            "array" => JsonType::Array,
            "object" => JsonType::Object,
            _ => return None,
        })
    }

    /// The JSON Schema spelling.
    pub fn name(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }

    /// The types a value has (an integer is also a number).
    pub fn of(value: &Value) -> &'static [JsonType] {
        match value {
            Value::Null => &[JsonType::Null],
            Value::Bool(_) => &[JsonType::Boolean],
            Value::Number(number) if is_integer(number) => &[JsonType::Integer, JsonType::Number],
            Value::Number(_) => &[JsonType::Number],
            Value::String(_) => &[JsonType::String],
            Value::Array(_) => &[JsonType::Array],
            Value::Object(_) => &[JsonType::Object],
        }
    }
}

fn is_integer(number: &serde_json::Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|value| value.fract() == 0.0)
}

/// A numeric bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// The limit.
    pub value: f64,
    /// Whether the limit itself is excluded.
    pub exclusive: bool,
}

/// `oneOf` (exactly one branch) or `anyOf` (at least one).
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// `oneOf`.
    pub exactly_one: bool,
    /// The branches.
    pub branches: Vec<Node>,
}

/// Everything one node says, each keyword in its own field.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// `type`; `None` when any type is allowed.
    pub types: Option<BTreeSet<JsonType>>,
    /// `enum`, or `const` as a one-value enum.
    pub values: Option<Vec<Value>>,
    /// `minLength`, `maxLength`, `pattern`.
    pub strings: Strings,
    /// `format`.
    pub format: Option<String>,
    /// `minimum` / `exclusiveMinimum`.
    pub minimum: Option<Bound>,
    /// `maximum` / `exclusiveMaximum`.
    pub maximum: Option<Bound>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `required`.
    pub required: BTreeSet<String>,
    /// What members not in `properties` must be (`additionalProperties`, or
    /// `unevaluatedProperties` where it means the same).
    pub additional: Box<Node>,
    /// `minProperties`, `maxProperties`.
    pub min_properties: u64,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `items`.
    pub items: Box<Node>,
    /// `minItems`.
    pub min_items: u64,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `oneOf` or `anyOf`.
    pub union: Option<Union>,
}

impl Facts {
    fn new(at: &Location) -> Facts {
        Facts {
            types: None,
            values: None,
            strings: Strings::default(),
            format: None,
            minimum: None,
            maximum: None,
            multiple_of: None,
            properties: BTreeMap::new(),
            required: BTreeSet::new(),
            additional: Box::new(Node::any(at)),
            min_properties: 0,
            max_properties: None,
            items: Box::new(Node::any(at)),
            min_items: 0,
            max_items: None,
            unique_items: false,
            union: None,
        }
    }

    /// Whether `kind` of value is allowed at all.
    pub fn allows_type(&self, kind: JsonType) -> bool {
        self.types.as_ref().is_none_or(|types| {
            types.contains(&kind)
                || (kind == JsonType::Integer && types.contains(&JsonType::Number))
        })
    }

    /// What a member named `name` must be: its property schema, or the additional one.
    pub fn member(&self, name: &str) -> &Node {
        self.properties.get(name).unwrap_or(&self.additional)
    }
}

impl Node {
    /// Every instance.
    pub fn any(at: &Location) -> Node {
        Node {
            at: at.clone(),
            kind: Kind::Any,
        }
    }

    fn unknown(at: &Location, reason: impl Into<String>, raw: &Value) -> Node {
        Node {
            at: at.clone(),
            kind: Kind::Unknown {
                reason: reason.into(),
                raw: raw.clone(),
            },
        }
    }

    /// The facts, when the node is a conjunction of them.
    pub fn facts(&self) -> Option<&Facts> {
        match &self.kind {
            Kind::Facts(facts) => Some(facts),
            _ => None,
        }
    }
}

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

/// The tighter of two bounds (`lower`: the larger minimum; else the smaller maximum).
fn tighter(a: Option<Bound>, b: Option<Bound>, lower: bool) -> Option<Bound> {
    match (a, b) {
        (None, bound) | (bound, None) => bound,
        (Some(a), Some(b)) => {
            let a_first = if lower {
                a.value > b.value || (a.value == b.value && a.exclusive)
            } else {
                a.value < b.value || (a.value == b.value && a.exclusive)
            };
            Some(if a_first { a } else { b })
        }
    }
}

/// `unevaluatedProperties`: members no property (of this node or of the union branch that
/// matched) evaluated must satisfy `closing`.
fn close_unevaluated(node: Node, closing: Node) -> Node {
    let Kind::Facts(mut facts) = node.kind else {
        return node;
    };
    let own: Vec<String> = facts.properties.keys().cloned().collect();
    let close = |facts: &mut Facts, names: &[String], closing: &Node| {
        for name in names {
            facts
                .properties
                .entry(name.clone())
                .or_insert_with(|| Node::any(&closing.at));
        }
        *facts.additional = intersect(&facts.additional, closing);
    };
    match &mut facts.union {
        Some(union) => {
            for branch in &mut union.branches {
                if let Kind::Facts(branch_facts) = &mut branch.kind {
                    close(branch_facts, &own, &closing);
                } else if branch.kind == Kind::Any {
                    let mut branch_facts = Facts::new(&branch.at);
                    close(&mut branch_facts, &own, &closing);
                    branch.kind = Kind::Facts(Box::new(branch_facts));
                }
            }
        }
        None => close(&mut facts, &own, &closing),
    }
    Node {
        at: node.at,
        kind: Kind::Facts(facts),
    }
}

/// The shapes a value of `node` can take: each `oneOf`/`anyOf` branch with the node's other facts
/// merged in, or the node itself when it has no union.
pub fn alternatives(node: &Node) -> Vec<Node> {
    let Kind::Facts(facts) = &node.kind else {
        return vec![node.clone()];
    };
    let Some(union) = &facts.union else {
        return vec![node.clone()];
    };
    let mut rest = node.clone();
    if let Kind::Facts(facts) = &mut rest.kind {
        facts.union = None;
    }
    union
        .branches
        .iter()
        .map(|branch| intersect(&rest, branch))
        .collect()
}

/// The conjunction of two nodes (`allOf`, `$ref` beside other keywords).
pub fn intersect(a: &Node, b: &Node) -> Node {
    let at = a.at.clone();
    match (&a.kind, &b.kind) {
        (Kind::Any, _) => b.clone(),
        (_, Kind::Any) => a.clone(),
        (Kind::Nothing, _) | (_, Kind::Nothing) => Node {
            at,
            kind: Kind::Nothing,
        },
        (Kind::Unknown { .. }, _) => a.clone(),
        (_, Kind::Unknown { .. }) => b.clone(),
        (Kind::Facts(x), Kind::Facts(y)) => {
            let mut merged = (**x).clone();
            merged.types = match (&x.types, &y.types) {
                (None, types) | (types, None) => types.clone(),
                (Some(x_types), Some(y_types)) => {
                    let mut both = BTreeSet::new();
                    for kind in x_types {
                        if y_types.contains(kind)
                            || (*kind == JsonType::Integer && y_types.contains(&JsonType::Number))
                        {
                            both.insert(*kind);
                        } else if *kind == JsonType::Number && y_types.contains(&JsonType::Integer)
                        {
                            both.insert(JsonType::Integer);
                        }
                    }
                    Some(both)
                }
            };
            merged.values = match (&x.values, &y.values) {
                (None, values) | (values, None) => values.clone(),
                (Some(x_values), Some(y_values)) => Some(
                    x_values
                        .iter()
                        .filter(|value| y_values.contains(value))
                        .cloned()
                        .collect(),
                ),
            };
            merged.strings.min_length = x.strings.min_length.max(y.strings.min_length);
            merged.strings.max_length = match (x.strings.max_length, y.strings.max_length) {
                (Some(p), Some(q)) => Some(p.min(q)),
                (p, q) => p.or(q),
            };
            for pattern in &y.strings.patterns {
                if !merged.strings.patterns.contains(pattern) {
                    merged.strings.patterns.push(pattern.clone());
                }
            }
            merged.format = match (&x.format, &y.format) {
                (Some(p), Some(q)) if p != q => {
                    return Node::unknown(&at, "two different formats", &Value::Null);
                }
                (p, q) => p.clone().or_else(|| q.clone()),
            };
            merged.minimum = tighter(x.minimum, y.minimum, true);
            merged.maximum = tighter(x.maximum, y.maximum, false);
            merged.multiple_of = match (x.multiple_of, y.multiple_of) {
                (Some(p), Some(q)) if p != q => {
                    return Node::unknown(&at, "two different multipleOf", &Value::Null);
                }
                (p, q) => p.or(q),
            };
            let names: BTreeSet<&String> = x.properties.keys().chain(y.properties.keys()).collect();
            merged.properties = names
                .into_iter()
                .map(|name| (name.clone(), intersect(x.member(name), y.member(name))))
                .collect();
            merged.required = x.required.union(&y.required).cloned().collect();
            merged.additional = Box::new(intersect(&x.additional, &y.additional));
            merged.min_properties = x.min_properties.max(y.min_properties);
            merged.max_properties = match (x.max_properties, y.max_properties) {
                (Some(p), Some(q)) => Some(p.min(q)),
                (p, q) => p.or(q),
            };
            merged.items = Box::new(intersect(&x.items, &y.items));
            merged.min_items = x.min_items.max(y.min_items);
            merged.max_items = match (x.max_items, y.max_items) {
                (Some(p), Some(q)) => Some(p.min(q)),
                (p, q) => p.or(q),
            };
            merged.unique_items = x.unique_items || y.unique_items;
            merged.union = match (&x.union, &y.union) {
                (Some(_), Some(_)) => {
                    return Node::unknown(&at, "two oneOf/anyOf on one value", &Value::Null);
                }
                (union, None) | (None, union) => union.clone(),
            };
            Node {
                at,
                kind: Kind::Facts(Box::new(merged)),
            }
        }
    }
}

/// Whether `node` admits `value`; `Err` with the reason when the model cannot tell.
pub fn admits(node: &Node, value: &Value) -> Result<bool, String> {
    let facts = match &node.kind {
        Kind::Any => return Ok(true),
        Kind::Nothing => return Ok(false),
        Kind::Unknown { reason, .. } => return Err(format!("{} uses {reason}", node.at)),
        Kind::Facts(facts) => facts,
    };
    if !JsonType::of(value)
        .iter()
        .any(|kind| facts.allows_type(*kind))
    {
        return Ok(false);
    }
    if let Some(values) = &facts.values
        && !values.iter().any(|allowed| same_value(allowed, value))
    {
        return Ok(false);
    }
    match value {
        Value::String(text) => {
            if !strings::admits(&facts.strings, text)? {
                return Ok(false);
            }
            if let Some(format) = &facts.format {
                match format_accepts(format, text) {
                    Some(true) => {}
                    Some(false) => return Ok(false),
                    None => return Err(format!("{} uses the unknown format {format:?}", node.at)),
                }
            }
        }
        Value::Number(number) => {
            let Some(number) = number.as_f64() else {
                return Ok(false);
            };
            if !within(number, facts.minimum, true) || !within(number, facts.maximum, false) {
                return Ok(false);
            }
            if let Some(step) = facts.multiple_of
                && (number / step).fract() != 0.0
            {
                return Ok(false);
            }
        }
        Value::Object(members) => {
            if !facts.required.iter().all(|name| members.contains_key(name)) {
                return Ok(false);
            }
            let count = members.len() as u64;
            if count < facts.min_properties || facts.max_properties.is_some_and(|max| count > max) {
                return Ok(false);
            }
            for (name, member) in members {
                if !admits(facts.member(name), member)? {
                    return Ok(false);
                }
            }
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if count < facts.min_items || facts.max_items.is_some_and(|max| count > max) {
                return Ok(false);
            }
            for item in items {
                if !admits(&facts.items, item)? {
                    return Ok(false);
                }
            }
            if facts.unique_items {
                for (index, item) in items.iter().enumerate() {
                    if items[..index]
                        .iter()
                        .any(|earlier| same_value(earlier, item))
                    {
                        return Ok(false);
                    }
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    if let Some(union) = &facts.union {
        let mut matched = 0;
        for branch in &union.branches {
            matched += usize::from(admits(branch, value)?);
        }
        let ok = if union.exactly_one {
            matched == 1
        } else {
            matched >= 1
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// JSON Schema equality: numbers by mathematical value, the rest structurally.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(name, p)| y.get(name).is_some_and(|q| same_value(p, q)))
        }
        _ => a == b,
    }
}

fn within(number: f64, bound: Option<Bound>, lower: bool) -> bool {
    match bound {
        None => true,
        Some(Bound { value, exclusive }) => match (lower, exclusive) {
            (true, false) => number >= value,
            (true, true) => number > value,
            (false, false) => number <= value,
            (false, true) => number < value,
        },
    }
}

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
        return values.clone();
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
            if admits(facts.member(name), value) == Ok(true) {
                members.insert(name.clone(), value.clone());
            }
        }
    }
    for name in &facts.required {
        if !members.contains_key(name) {
            members.insert(name.clone(), example(facts.member(name), None)?);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemas(files: &[(&str, Value)]) -> Schemas {
        Schemas::new(
            files
                .iter()
                .map(|(name, value)| ((*name).to_owned(), value.clone()))
                .collect(),
        )
    }

    #[test]
    fn refs_across_files_and_ids_are_merged_into_one_node() {
        let set = schemas(&[
            (
                "envelope.json",
                json!({"$id": "https://example.invalid/e.json", "properties": {"data": {"$ref": "#/$defs/run", "required": ["state"]}}, "$defs": {"run": {"type": "object", "properties": {"state": {"$ref": "common.json#/$defs/state"}}, "additionalProperties": false}}}),
            ),
            (
                "common.json",
                json!({"$defs": {"state": {"enum": ["a", "b"]}}}),
            ),
        ]);
        let root = set.root("envelope.json");
        let data = root.facts().unwrap().member("data").facts().unwrap();
        assert!(data.required.contains("state"));
        assert_eq!(data.additional.kind, Kind::Nothing);
        let state = data.member("state").facts().unwrap();
        assert_eq!(state.values, Some(vec![json!("a"), json!("b")]));
        assert_eq!(
            data.member("state").at.to_string(),
            "common.json#/$defs/state"
        );
    }

    #[test]
    fn unevaluated_properties_closes_over_the_branch_that_matched() {
        let set = schemas(&[(
            "s.json",
            json!({"properties": {"tool": {"const": "t"}}, "oneOf": [{"properties": {"data": {}}}, {"properties": {"error": {}}}], "unevaluatedProperties": false}),
        )]);
        let root = set.root("s.json");
        assert_eq!(admits(&root, &json!({"tool": "t", "data": 1})), Ok(true));
        assert_eq!(
            admits(&root, &json!({"tool": "t", "data": 1, "x": 1})),
            Ok(false)
        );
        assert_eq!(
            admits(&root, &json!({"tool": "t", "error": 1, "data": 1})),
            Ok(false)
        );
    }

    #[test]
    fn unmodelled_keywords_make_an_unknown_node_that_still_compares_equal() {
        let set = schemas(&[("s.json", json!({"not": {"type": "string"}}))]);
        let root = set.root("s.json");
        assert!(matches!(root.kind, Kind::Unknown { .. }));
        assert_eq!(root, set.root("s.json"));
        assert!(admits(&root, &json!(1)).is_err());
    }

    #[test]
    fn examples_respect_every_fact() {
        let set = schemas(&[(
            "s.json",
            json!({"type": "object", "required": ["id", "at", "n"], "properties": {"id": {"type": "string", "pattern": "^run_[a-z]{3}$"}, "at": {"type": "string", "format": "date-time", "maxLength": 30}, "n": {"type": "integer", "minimum": 5}}, "additionalProperties": false}),
        )]);
        let root = set.root("s.json");
        let value = example(&root, None).unwrap();
        assert_eq!(admits(&root, &value), Ok(true), "{value}");
        assert_eq!(value["id"], json!("run_aaa"));
    }
}
