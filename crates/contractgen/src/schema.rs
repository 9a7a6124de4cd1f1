//! The schema files of a generated contract: `envelope.schema.json` (the root: a `oneOf` result
//! envelope, or a plain object), whose success data is `#/$defs/data`, and `defs.schema.json`
//! with more definitions, which the data refers into and which may refer back to the root.
//!
//! References are of every kind the compiler resolves: by JSON pointer and by `$anchor`, within a
//! file and across the two, back to the root (a tree of results), and dynamic ones: a contract
//! may give the root and the definitions file each a `$dynamicAnchor` of one name, and a
//! `$dynamicRef` to it then reaches the outermost of them in the dynamic scope, the root.

use serde_json::{Map, Value, json};

use crate::entropy::Entropy;
use crate::pattern::pattern;
use crate::{REQUEST_ID, TOOL};

/// Member names: plain, with characters JSON pointers escape, Unicode, and near-duplicates.
const NAMES: [&str; 14] = [
    "id", "state", "note", "count", "at", "items", "child", "a/b", "t~ilde", "é", "日付", "Id",
    "x y", "",
];

/// Patterns a generated `patternProperties` uses, each with member names it matches (some of
/// them names a contract declares, so that a pattern and a property meet on one member).
pub(crate) const MEMBER_PATTERNS: [(&str, &[&str]); 3] = [
    ("^x_", &["x_a", "x_"]),
    ("_id$", &["run_id", "_id"]),
    ("^i", &["id", "items", "ix"]),
];

/// Formats the gate asserts.
const FORMATS: [&str; 9] = [
    "date-time",
    "date",
    "time",
    "email",
    "uuid",
    "ipv4",
    "ipv6",
    "hostname",
    "duration",
];

/// Schema files by name.
pub(crate) type Files = Vec<(String, Value)>;

/// An object's properties: each name, and whether it is required.
pub(crate) type Properties = Vec<(String, bool)>;

pub(crate) struct Builder<'e, E: Entropy> {
    entropy: &'e mut E,
    /// Definitions of `defs.schema.json`, by name.
    defs: Map<String, Value>,
    /// Definitions of the root, besides `data`.
    root_defs: Map<String, Value>,
    /// Whether the root is a `oneOf` envelope (else a plain object).
    pub(crate) envelope_is_one_of: bool,
    /// Whether the root and the definitions file carry the `$dynamicAnchor` [`DYNAMIC_ANCHOR`],
    /// so a `$dynamicRef` to it resolves to the root.
    dynamic: bool,
    /// Whether the root carries the `$anchor` [`ROOT_ANCHOR`] (a name another file may reach the
    /// whole root by).
    root_anchor: bool,
    /// Whether a `$dynamicRef` names the definitions file: jsonschema loads another file for a
    /// `$ref` it compiles only, so the root then refers to a definition there that admits
    /// anything as well.
    refers_dynamically: bool,
}

/// The `$dynamicAnchor` both files carry when the contract is dynamic.
pub(crate) const DYNAMIC_ANCHOR: &str = "node";

/// The `$anchor` of the root, when it has one.
const ROOT_ANCHOR: &str = "top";

impl<'e, E: Entropy> Builder<'e, E> {
    pub(crate) fn new(entropy: &'e mut E) -> Builder<'e, E> {
        Builder {
            entropy,
            defs: Map::new(),
            root_defs: Map::new(),
            envelope_is_one_of: true,
            dynamic: false,
            root_anchor: false,
            refers_dynamically: false,
        }
    }

    pub(crate) fn into_entropy(self) -> &'e mut E {
        self.entropy
    }

    /// The schema files, and the data object's properties (name, required).
    pub(crate) fn contract_files(&mut self) -> (Files, Properties) {
        self.envelope_is_one_of = !self.entropy.chance(15);
        self.dynamic = self.entropy.chance(20);
        let (data, properties) = self.object(3, true);
        let request_id = if self.entropy.chance(50) {
            json!({"type": "string", "pattern": "^req\\.[A-Za-z0-9]{8}$"})
        } else {
            json!({"type": "string", "minLength": 1, "maxLength": 64})
        };
        // Branches that require their members, or (as some upstreams write them) nothing: then a
        // nested `{}` matches both, and `oneOf` refuses it.
        let strict = self.entropy.chance(70);
        let required = |members: &[&str]| if strict { json!(members) } else { json!([]) };
        let success = json!({
            "type": "object",
            "required": required(&["tool", "request_id", "outcome", "data"]),
            "properties": {
                "tool": {"const": TOOL},
                "request_id": {"$ref": "#/$defs/requestId"},
                "outcome": {"const": "success"},
                "data": {"$ref": "#/$defs/data"}
            },
            "additionalProperties": false
        });
        let mut root_defs = std::mem::take(&mut self.root_defs);
        root_defs.insert("data".to_owned(), data);
        root_defs.insert("requestId".to_owned(), request_id);
        let root = if self.envelope_is_one_of {
            let mut failure = toolgate_gate::internals::failure_schema(
                TOOL,
                json!({"$ref": "#/$defs/requestId"}),
            );
            failure["required"] = required(&["tool", "request_id", "outcome", "error"]);
            let mut root = json!({"oneOf": [success, failure]});
            if self.entropy.chance(30) {
                root["$id"] = json!("https://example.invalid/gen/envelope.schema.json");
            }
            root
        } else {
            success
        };
        let mut root = root;
        root["$defs"] = Value::Object(root_defs);
        let mut defs = json!({"$defs": Value::Object(std::mem::take(&mut self.defs))});
        if self.dynamic {
            // The definitions file's own anchor is where a `$dynamicRef` to it lands first; the
            // root's, the outermost in the dynamic scope, is where it resolves.
            root["$dynamicAnchor"] = json!(DYNAMIC_ANCHOR);
            defs["$dynamicAnchor"] = json!(DYNAMIC_ANCHOR);
            if self.entropy.chance(50) {
                defs["type"] = json!("object");
            }
        }
        if self.root_anchor {
            root["$anchor"] = json!(ROOT_ANCHOR);
        }
        if self.refers_dynamically {
            defs["$defs"]["anything"] = json!(true);
            root["allOf"] = json!([{"$ref": "defs.schema.json#/$defs/anything"}]);
        }
        (
            vec![
                ("envelope.schema.json".to_owned(), root),
                ("defs.schema.json".to_owned(), defs),
            ],
            properties,
        )
    }

    /// An object schema, and its properties (name, required).
    fn object(&mut self, depth: usize, is_data: bool) -> (Value, Properties) {
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut listed = Vec::new();
        let count = if is_data {
            1 + self.entropy.below(5)
        } else {
            self.entropy.below(4)
        };
        for _ in 0..count {
            let name = (*self.entropy.pick(&NAMES)).to_owned();
            if properties.contains_key(&name) {
                continue;
            }
            let schema = self.value(depth.saturating_sub(1));
            let is_required = self.entropy.chance(60);
            if is_required {
                required.push(Value::from(name.as_str()));
            }
            listed.push((name.clone(), is_required));
            properties.insert(name, schema);
        }
        if is_data && self.dynamic && !properties.contains_key("child") && self.entropy.chance(70) {
            // A dynamic contract's data mostly holds a nested result through the dynamic
            // reference, which is what tells a root in the dynamic scope from its narrowed copy.
            let schema = self.dynamic_reference();
            listed.push(("child".to_owned(), false));
            properties.insert("child".to_owned(), schema);
        }
        let mut object = json!({"type": "object", "properties": properties});
        if !required.is_empty() {
            object["required"] = Value::Array(required);
        }
        match self.entropy.below(5) {
            0 | 1 => object["additionalProperties"] = json!(false),
            2 => {} // open: anything else passes
            3 => object["additionalProperties"] = self.value(0),
            _ => {
                // Closed by `unevaluatedProperties` over an `allOf` that adds a member.
                let extra = (*self.entropy.pick(&NAMES)).to_owned();
                let extra_schema = self.value(0);
                object["allOf"] = json!([{"properties": {extra: extra_schema}}]);
                object["unevaluatedProperties"] = json!(false);
            }
        }
        if self.entropy.chance(12) {
            let (pattern, _) = *self.entropy.pick(&MEMBER_PATTERNS);
            object["patternProperties"] = json!({pattern: self.value(0)});
        }
        if self.entropy.chance(15) {
            object["maxProperties"] = json!(1 + self.entropy.below(6));
        }
        if self.entropy.chance(10) {
            object["propertyNames"] = json!({"maxLength": 1 + self.entropy.below(8)});
        }
        (object, listed)
    }

    /// Any value's schema.
    fn value(&mut self, depth: usize) -> Value {
        let kinds = if depth == 0 { 7 } else { 17 };
        match self.entropy.below(kinds) {
            0 => self.string(),
            1 => self.number("integer"),
            2 => self.number("number"),
            3 => json!({"type": "boolean"}),
            4 => self.enumeration(),
            5 => json!({"const": self.scalar()}),
            6 => {
                let inner = self.string();
                json!({"type": ["string", "null"], "maxLength": inner.get("maxLength").cloned().unwrap_or(json!(40))})
            }
            7 => self.array(depth),
            8 => self.object(depth, false).0,
            9 => {
                let keyword = *self.entropy.pick(&["oneOf", "anyOf", "allOf"]);
                let branches: Vec<Value> = (0..2 + self.entropy.below(2))
                    .map(|_| self.value(depth - 1))
                    .collect();
                json!({keyword: branches})
            }
            10 => {
                // A definition in the other file.
                let name = format!("d{}", self.defs.len());
                let schema = self.value(depth - 1);
                self.defs.insert(name.clone(), schema);
                json!({"$ref": format!("defs.schema.json#/$defs/{name}")})
            }
            11 => {
                // A definition of the root's own, reached through the other file.
                let name = format!("r{}", self.root_defs.len());
                let schema = self.value(depth - 1);
                self.root_defs.insert(name.clone(), schema);
                json!({"$ref": format!("#/$defs/{name}")})
            }
            12 => {
                // Recursion: a tree of data, through the other file back to the root.
                let name = format!("tree{}", self.defs.len());
                self.defs.insert(
                    name.clone(),
                    json!({"anyOf": [{"type": "null"}, {"$ref": "envelope.schema.json#/$defs/data"}]}),
                );
                json!({"$ref": format!("defs.schema.json#/$defs/{name}")})
            }
            13 => {
                // A whole envelope nested in the data (a tree of results).
                let name = format!("envelope{}", self.defs.len());
                self.defs
                    .insert(name.clone(), json!({"$ref": "envelope.schema.json"}));
                json!({"$ref": format!("defs.schema.json#/$defs/{name}")})
            }
            14 => {
                // A definition named by an `$anchor`: in the other file, or in the root's own
                // (then reached from the root by its plain name, or through the other file).
                let mut schema = self.value(depth - 1);
                let in_root = self.entropy.chance(40);
                let name = format!("a{}", self.defs.len() + self.root_defs.len());
                if let Value::Object(members) = &mut schema {
                    members.insert("$anchor".to_owned(), json!(name));
                } else {
                    schema = json!({"$anchor": name, "allOf": [schema]});
                }
                if in_root {
                    self.root_defs.insert(name.clone(), schema);
                    if self.entropy.chance(50) {
                        json!({"$ref": format!("#{name}")})
                    } else {
                        let via = format!("via{}", self.defs.len());
                        self.defs.insert(
                            via.clone(),
                            json!({"$ref": format!("envelope.schema.json#{name}")}),
                        );
                        json!({"$ref": format!("defs.schema.json#/$defs/{via}")})
                    }
                } else {
                    self.defs.insert(name.clone(), schema);
                    json!({"$ref": format!("defs.schema.json#{name}")})
                }
            }
            15 => {
                // The whole root reached by its `$anchor`, from the other file.
                self.root_anchor = true;
                let name = format!("top{}", self.defs.len());
                self.defs.insert(
                    name.clone(),
                    json!({"anyOf": [{"type": "null"}, {"$ref": format!("envelope.schema.json#{ROOT_ANCHOR}")}]}),
                );
                json!({"$ref": format!("defs.schema.json#/$defs/{name}")})
            }
            _ if self.dynamic => self.dynamic_reference(),
            // Not a dynamic contract: a dynamic reference to an anchor that is not dynamic, which
            // resolves as a plain `$ref` (an anchor of the other file).
            _ => {
                let schema = self.value(depth - 1);
                let name = format!("s{}", self.defs.len());
                self.defs.insert(
                    name.clone(),
                    json!({"$anchor": name.clone(), "allOf": [schema]}),
                );
                self.refers_dynamically = true;
                json!({"$dynamicRef": format!("defs.schema.json#{name}")})
            }
        }
    }

    /// A dynamic reference: it lands on the other file's `$dynamicAnchor` and resolves to the
    /// outermost one in the dynamic scope, the root's. Written in the root, or in a definition
    /// of the other file.
    fn dynamic_reference(&mut self) -> Value {
        self.refers_dynamically = true;
        let reference = json!({"$dynamicRef": format!("defs.schema.json#{DYNAMIC_ANCHOR}")});
        if self.entropy.chance(50) {
            return reference;
        }
        let name = format!("dyn{}", self.defs.len());
        self.defs.insert(
            name.clone(),
            json!({"anyOf": [{"type": "null"}, {"$dynamicRef": format!("#{DYNAMIC_ANCHOR}")}]}),
        );
        json!({"$ref": format!("defs.schema.json#/$defs/{name}")})
    }

    fn string(&mut self) -> Value {
        let mut schema = json!({"type": "string"});
        if self.entropy.chance(40) {
            schema["minLength"] = json!(self.entropy.below(3));
        }
        if self.entropy.chance(60) {
            schema["maxLength"] = json!(1 + self.entropy.below(60));
        }
        match self.entropy.below(4) {
            0 => {
                let pattern = pattern(self.entropy);
                schema["pattern"] = json!(pattern.text);
                schema["examples"] = json!(pattern.samples);
            }
            1 => schema["format"] = json!(self.entropy.pick(&FORMATS)),
            _ => {}
        }
        schema
    }

    fn number(&mut self, kind: &str) -> Value {
        let mut schema = json!({"type": kind});
        let low = self.entropy.below(20) as i64 - 10;
        match self.entropy.below(4) {
            0 => schema["minimum"] = json!(low),
            1 => schema["exclusiveMinimum"] = json!(low),
            _ => {}
        }
        match self.entropy.below(4) {
            0 => schema["maximum"] = json!(low + self.entropy.below(1000) as i64),
            1 => schema["exclusiveMaximum"] = json!(low + 1 + self.entropy.below(1000) as i64),
            _ => {}
        }
        if self.entropy.chance(15) {
            schema["multipleOf"] = self
                .entropy
                .pick(&[json!(2), json!(3), json!(0.5), json!(0.1)])
                .clone();
        }
        schema
    }

    fn enumeration(&mut self) -> Value {
        let values: Vec<Value> = (0..1 + self.entropy.below(4))
            .map(|_| self.scalar())
            .collect();
        json!({"enum": values})
    }

    fn scalar(&mut self) -> Value {
        match self.entropy.below(6) {
            0 => json!(*self.entropy.pick(&["a", "B", "é", "", "日本", "ok"])),
            1 => json!(self.entropy.below(10) as i64 - 3),
            2 => json!(1.5),
            3 => json!(true),
            4 => Value::Null,
            _ => json!(REQUEST_ID),
        }
    }

    fn array(&mut self, depth: usize) -> Value {
        let mut schema = json!({"type": "array", "items": self.value(depth - 1)});
        if self.entropy.chance(50) {
            schema["maxItems"] = json!(1 + self.entropy.below(5));
        }
        if self.entropy.chance(20) {
            schema["minItems"] = json!(self.entropy.below(2));
        }
        if self.entropy.chance(15) {
            schema["uniqueItems"] = json!(true);
        }
        if self.entropy.chance(15) {
            let first = self.value(0);
            schema["prefixItems"] = json!([first]);
        }
        // How many items must match a schema of their own (`contains` of a type `items` may
        // refuse: then no array with a match is admitted).
        if self.entropy.chance(15) {
            let matched = self.value(0);
            let least = self.entropy.below(3);
            schema["contains"] = matched;
            schema["minContains"] = json!(least);
            if self.entropy.chance(50) {
                schema["maxContains"] = json!(least + self.entropy.below(3));
            }
        }
        schema
    }
}
