//! A described schema (OpenAPI 3.0 or 3.1, or JSON Schema as an MCP server writes it) turned
//! into a contract schema: JSON Schema 2020-12, self-contained (`$ref`s to the description's
//! components become `$defs`), **closed** (every object at a place a value sits gets
//! `unevaluatedProperties: false`, which also closes what `allOf` composes) and **bounded**
//! (strings, arrays, maps, identifiers), with every choice the description did not make listed
//! as an assumption, so a reviewer sees what was decided for them.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value, json};

/// The dialect a described schema is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAPI 3.0's schema object: `nullable`, boolean `exclusiveMinimum`, `example`.
    OpenApi30,
    /// OpenAPI 3.1 and JSON Schema (2020-12, or earlier drafts' common keywords).
    JsonSchema,
}

/// One choice the description left open, made here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assumption {
    /// Where, in the generated schema file (a JSON pointer).
    pub pointer: String,
    /// What was assumed.
    pub what: String,
}

/// The longest string a description leaves unbounded may be.
pub const STRING_BOUND: u64 = 4096;
/// The most items an array a description leaves unbounded may hold.
pub const ARRAY_BOUND: u64 = 1000;
/// The most members a map may hold, and the longest name.
pub const MAP_BOUND: u64 = 1000;
/// The longest member name of a map.
pub const MAP_NAME_BOUND: u64 = 256;

/// Keywords that say nothing the gate checks and that 2020-12 does not define.
const DROPPED: [&str; 6] = [
    "discriminator",
    "xml",
    "externalDocs",
    "example",
    "nullable",
    "definitions",
];

/// The extensions descriptions mark a sensitive value with (`x-sensitive: true`), read as
/// `writeOnly: true`.
const SENSITIVE_HINTS: [&str; 3] = ["x-sensitive", "x-secret", "x-sensitive-data"];

/// Every keyword of JSON Schema 2020-12 (core, applicator, unevaluated, validation, format,
/// content, meta-data): the only members a converted schema copies. A description's member that
/// is none of these, nor an `x-` extension or an OpenAPI keyword dropped above, is not part of
/// a schema and is never copied (a credentials file a `$ref` names is not a schema).
const SCHEMA_KEYWORDS: [&str; 58] = [
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$ref",
    "$dynamicRef",
    "$defs",
    "$comment",
    "$vocabulary",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "dependencies",
];

/// Whether `value` can be a schema: a boolean, or an object every member of which is a schema
/// keyword, an extension (`x-`), or an OpenAPI keyword the conversion drops.
fn is_schema(value: &Value) -> bool {
    match value {
        Value::Bool(_) => true,
        Value::Object(members) => members.keys().all(|key| {
            key.starts_with("x-")
                || SCHEMA_KEYWORDS.contains(&key.as_str())
                || DROPPED.contains(&key.as_str())
        }),
        _ => false,
    }
}

/// What [`Converter::implied_types`] found of each schema it visited (by address, and whether
/// converted).
type TypesSeen = HashMap<(*const Map<String, Value>, bool), Option<BTreeSet<String>>>;

/// Where a schema sits, which decides whether it is closed there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// A value: the root, a property, an item, a map's values. Closed here.
    Value,
    /// A part of a composition (`allOf`, `anyOf`, `oneOf`) or a schema applied to the same
    /// value when a condition holds (`dependentSchemas`, `then`, `else`): the composing schema
    /// closes it.
    Part,
    /// A condition (`if`, `not`) or anything beneath one: copied as the description means it,
    /// with no bound, closing or type written in, since a bound inside `not` admits what it
    /// seems to refuse (`not: {type: string}` with a `maxLength` admits every longer string),
    /// and one inside `if` moves which of `then`/`else` applies.
    Condition,
}

impl Position {
    /// Where a value below this place sits (a property's, an item's, a map's): a value of its
    /// own, unless beneath a condition.
    fn of_value(self) -> Position {
        match self {
            Position::Condition => Position::Condition,
            _ => Position::Value,
        }
    }
}

/// Converts schemas of one description into one self-contained document.
pub struct Converter<'a> {
    /// The whole description, for resolving its `$ref`s.
    source: &'a Value,
    dialect: Dialect,
    /// Converted definitions, by name.
    defs: BTreeMap<String, Value>,
    /// Definitions referred to and not yet converted: `(name, source pointer)`.
    pending: Vec<(String, String)>,
    /// The `$defs` name given to each source pointer referred to, and back: two pointers
    /// ending in one name (`#/components/schemas/Item`, `#/paths/…/items`) get two names.
    names: BTreeMap<String, String>,
    pointers: BTreeMap<String, String>,
    assumptions: Vec<Assumption>,
    /// Why each reference the bundle did not follow was not ([`crate::bundle`]).
    unfollowed: BTreeMap<String, String>,
}

impl<'a> Converter<'a> {
    /// A converter for schemas of `source` written in `dialect`.
    pub fn new(source: &'a Value, dialect: Dialect) -> Converter<'a> {
        Converter {
            source,
            dialect,
            defs: BTreeMap::new(),
            pending: Vec::new(),
            names: BTreeMap::new(),
            pointers: BTreeMap::new(),
            assumptions: Vec::new(),
            unfollowed: BTreeMap::new(),
        }
    }

    /// The references the bundle left as written, each `(reference, why)`, so a value one names
    /// says why it is refused.
    pub fn with_unfollowed(
        mut self,
        unfollowed: impl IntoIterator<Item = (String, String)>,
    ) -> Converter<'a> {
        for (reference, why) in unfollowed {
            self.unfollowed.entry(reference).or_insert(why);
        }
        self
    }

    /// The contract schema for `schema` (a value of the description), with every definition it
    /// reaches, and the assumptions made.
    pub fn document(mut self, schema: &Value) -> (Value, Vec<Assumption>) {
        let mut root = self.convert(schema, "", Position::Value, None);
        while let Some((name, pointer)) = self.pending.pop() {
            let definition = self
                .source
                .pointer(&pointer)
                .cloned()
                .unwrap_or(Value::Bool(true));
            let at = format!("/$defs/{}", escape(&name));
            let converted = if is_schema(&definition) {
                self.convert(&definition, &at, Position::Part, None)
            } else {
                // Whatever a reference names is copied only if it is a schema: a file of
                // credentials, or any other value, is refused, never written into the contract.
                self.assume(
                    &at,
                    format!(
                        "refused: #{pointer} is not a schema (a value with members that are not JSON Schema keywords); describe the value here"
                    ),
                );
                Value::Bool(false)
            };
            self.defs.insert(name, converted);
        }
        if let Value::Object(members) = &mut root {
            if !self.defs.is_empty() {
                let defs: Map<String, Value> = std::mem::take(&mut self.defs).into_iter().collect();
                members.insert("$defs".to_owned(), Value::Object(defs));
            }
            members.insert(
                "$schema".to_owned(),
                Value::from("https://json-schema.org/draft/2020-12/schema"),
            );
        } else {
            root = json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "allOf": [root]
            });
        }
        self.assumptions.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        (root, self.assumptions)
    }

    fn assume(&mut self, pointer: &str, what: impl Into<String>) {
        self.assumptions.push(Assumption {
            pointer: pointer.to_owned(),
            what: what.into(),
        });
    }

    /// Converts one schema written at `at` (a pointer in the output), sitting at `position`;
    /// `member` is the property name it describes, when it describes one.
    fn convert(
        &mut self,
        schema: &Value,
        at: &str,
        position: Position,
        member: Option<&str>,
    ) -> Value {
        let Value::Object(members) = schema else {
            return schema.clone(); // `true`, `false`
        };
        let hinted = self.hinted(members, at);
        let members = hinted.as_ref().unwrap_or(members);
        let mut out = Map::new();
        for (keyword, value) in members {
            if SENSITIVE_HINTS.contains(&keyword.as_str()) && value == &Value::Bool(true) {
                // The one 2020-12 annotation that says a value is not for reading back
                // (nothing validates it): the scaffold then never offers the member as a field,
                // and the contract redacts it from what a store keeps.
                out.insert("writeOnly".to_owned(), Value::Bool(true));
            }
            if keyword.starts_with("x-") || DROPPED.contains(&keyword.as_str()) {
                continue;
            }
            let here = format!("{at}/{}", escape(keyword));
            let converted = match keyword.as_str() {
                "$ref" => match value
                    .as_str()
                    .and_then(|reference| self.reference(reference))
                {
                    Some(reference) => Value::from(reference),
                    None => {
                        // Nothing says what the value holds: refused, never left open.
                        let why = value
                            .as_str()
                            .and_then(|reference| self.unfollowed.get(reference))
                            .cloned()
                            .unwrap_or_else(|| "it names no place in the description".to_owned());
                        self.assume(at, format!("refused: the reference {value} is not followed ({why}); describe the value here"));
                        return Value::Bool(false);
                    }
                },
                "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                    let Value::Object(named) = value else {
                        continue;
                    };
                    // A dependent schema applies to this same value, whose name it keeps.
                    let (kind, names_member) = match keyword.as_str() {
                        _ if position == Position::Condition => (Position::Condition, false),
                        "$defs" => (Position::Part, true),
                        "dependentSchemas" => (Position::Part, false),
                        _ => (Position::Value, true),
                    };
                    Value::Object(
                        named
                            .iter()
                            .map(|(name, schema)| {
                                let inner = format!("{here}/{}", escape(name));
                                let described = if names_member {
                                    Some(name.as_str())
                                } else {
                                    member
                                };
                                (name.clone(), self.convert(schema, &inner, kind, described))
                            })
                            .collect(),
                    )
                }
                "items" => match value {
                    // Draft 7's tuple form.
                    Value::Array(schemas) => {
                        out.insert(
                            "prefixItems".to_owned(),
                            Value::Array(
                                schemas
                                    .iter()
                                    .enumerate()
                                    .map(|(index, schema)| {
                                        let inner = format!("{at}/prefixItems/{index}");
                                        self.convert(schema, &inner, position.of_value(), None)
                                    })
                                    .collect(),
                            ),
                        );
                        continue;
                    }
                    schema => self.convert(schema, &here, position.of_value(), None),
                },
                "prefixItems" => Value::Array(
                    value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(index, schema)| {
                            let inner = format!("{here}/{index}");
                            self.convert(schema, &inner, position.of_value(), None)
                        })
                        .collect(),
                ),
                "additionalProperties" | "unevaluatedProperties" | "propertyNames" | "contains" => {
                    self.convert(value, &here, position.of_value(), None)
                }
                "not" | "if" => self.convert(value, &here, Position::Condition, member),
                "then" | "else" => {
                    let kind = match position {
                        Position::Condition => Position::Condition,
                        _ => Position::Part,
                    };
                    self.convert(value, &here, kind, member)
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let parts = value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(index, schema)| {
                            let inner = format!("{here}/{index}");
                            let kind = match position {
                                Position::Condition => Position::Condition,
                                _ => Position::Part,
                            };
                            self.convert(schema, &inner, kind, member)
                        })
                        .collect();
                    if keyword == "oneOf" && position != Position::Condition {
                        // Descriptions rarely make branches exclusive, and a document two
                        // branches take would be refused by `oneOf`.
                        self.assume(
                            at,
                            "oneOf read as anyOf: a response that fits two branches is admitted",
                        );
                        out.insert("anyOf".to_owned(), Value::Array(parts));
                        continue;
                    }
                    Value::Array(parts)
                }
                "format" => match value.as_str() {
                    Some(format)
                        if toolgate_gate::internals::JSON_SCHEMA_FORMATS.contains(&format) =>
                    {
                        value.clone()
                    }
                    Some("int32") => {
                        if !out.contains_key("minimum") && !members.contains_key("minimum") {
                            out.insert("minimum".to_owned(), json!(i32::MIN));
                            self.assume(at, "minimum -2^31: format int32");
                        }
                        if !out.contains_key("maximum") && !members.contains_key("maximum") {
                            out.insert("maximum".to_owned(), json!(i32::MAX));
                            self.assume(at, "maximum 2^31-1: format int32");
                        }
                        continue;
                    }
                    Some(format) => {
                        self.assume(at, format!("format {format:?} dropped: the gate asserts formats, and not this one"));
                        continue;
                    }
                    None => continue,
                },
                "exclusiveMinimum" | "exclusiveMaximum" if value.is_boolean() => {
                    // OpenAPI 3.0: a flag on `minimum`/`maximum`.
                    let bound = if keyword == "exclusiveMinimum" {
                        "minimum"
                    } else {
                        "maximum"
                    };
                    if value == &Value::Bool(true)
                        && let Some(limit) = members.get(bound)
                    {
                        out.insert(keyword.clone(), limit.clone());
                        out.insert(format!("{bound}-moved"), Value::Null);
                    }
                    continue;
                }
                // Annotations are copied only where 2020-12's meta-schema admits them (YAML's
                // `title:` with nothing after it is `null`, and would not compile).
                "description" | "title" | "$comment" if !value.is_string() => continue,
                "deprecated" | "readOnly" | "writeOnly" if !value.is_boolean() => continue,
                "examples" if !value.is_array() => continue,
                "examples" | "default" | "const" | "enum" | "description" | "title"
                | "$comment" | "deprecated" | "readOnly" | "writeOnly" => value.clone(),
                _ if SCHEMA_KEYWORDS.contains(&keyword.as_str()) => value.clone(),
                _ => {
                    self.assume(
                        at,
                        format!("{keyword:?} dropped: not a JSON Schema keyword"),
                    );
                    continue;
                }
            };
            out.insert(keyword.clone(), converted);
        }
        // A boolean exclusive bound replaces the inclusive one it qualified.
        for bound in ["minimum", "maximum"] {
            if out.remove(&format!("{bound}-moved")).is_some() {
                out.remove(bound);
            }
        }
        // Descriptions often leave out the type a schema's own keywords imply (`properties`
        // without `type: object`): a value of another type, `null` among them, would then pass
        // the schema and fail only at projection. Written in, and listed.
        let assumes = position != Position::Condition;
        if assumes
            && !out.contains_key("type")
            && !["$ref", "allOf", "anyOf", "oneOf", "enum", "const"]
                .iter()
                .any(|keyword| out.contains_key(*keyword))
        {
            let implied = if out.contains_key("properties") {
                Some("object")
            } else if out.contains_key("items") || out.contains_key("prefixItems") {
                Some("array")
            } else {
                None
            };
            if let Some(kind) = implied {
                out.insert("type".to_owned(), Value::from(kind));
                self.assume(at, format!("type {kind}: its own keywords describe one"));
            }
        }
        // A composition whose every branch has a type has one too (the branches of an `anyOf`
        // of objects are objects): written in, so no value is untyped where every way to be
        // admitted is typed. Not beside OpenAPI 3.0's `nullable`, which admits `null` besides.
        if assumes
            && !out.contains_key("type")
            && !out.contains_key("enum")
            && !out.contains_key("const")
            && members.get("nullable") != Some(&Value::Bool(true))
            && ["allOf", "anyOf"]
                .iter()
                .any(|keyword| out.contains_key(*keyword))
            && let Some(types) = self.implied_types(&out, true, 0, &mut HashMap::new())
            && !types.is_empty()
        {
            let names: Vec<&str> = types.iter().map(String::as_str).collect();
            out.insert(
                "type".to_owned(),
                match names.as_slice() {
                    [one] => Value::from(*one),
                    _ => json!(names),
                },
            );
            self.assume(
                at,
                format!(
                    "type {}: every schema it composes is one",
                    names.join(" or ")
                ),
            );
        }
        // `nullable` is OpenAPI 3.0's; descriptions of other dialects write it too, and it
        // means the same there (GitHub's and Spotify's 3.1 documents, Swagger's `x-nullable`,
        // read into `nullable` by `hinted`).
        if members.get("nullable") == Some(&Value::Bool(true)) {
            if self.dialect != Dialect::OpenApi30 {
                self.assume(at, "null admitted: the description says `nullable: true`");
            }
            out = nullable(out);
        }
        if let Some(example) = members.get("example")
            && !out.contains_key("examples")
        {
            out.insert("examples".to_owned(), json!([example]));
        }
        if assumes {
            self.bound(&mut out, members, at, position, member);
        }
        Value::Object(out)
    }

    /// A reference of the description, as one into the output's `$defs` (queued for conversion).
    /// Any pointer into the description is followed (a schema under `#/paths/…` as much as one
    /// under `#/components/…`); its definition is named by the pointer's last token, made unique.
    fn reference(&mut self, reference: &str) -> Option<String> {
        let pointer = reference.strip_prefix('#')?;
        self.source.pointer(pointer)?;
        if let Some(name) = self.names.get(pointer) {
            return Some(format!("#/$defs/{}", escape(name)));
        }
        let base = definition_name(pointer);
        let mut name = base.clone();
        let mut counter = 1;
        while self.pointers.contains_key(&name) {
            counter += 1;
            name = format!("{base}_{counter}");
        }
        self.names.insert(pointer.to_owned(), name.clone());
        self.pointers.insert(name.clone(), pointer.to_owned());
        self.pending.push((name.clone(), pointer.to_owned()));
        Some(format!("#/$defs/{}", escape(&name)))
    }

    /// Whether `schema` (converted) describes objects: by its type, its properties, or what it
    /// refers to or composes.
    fn is_object(&self, schema: &Map<String, Value>, depth: usize) -> bool {
        self.describes_object(schema, depth, true)
    }

    /// [`Converter::is_object`] on a schema that is converted (its `$ref`s point into the
    /// output's `$defs`) or still the description's (`converted` false: they point into it).
    fn describes_object(&self, schema: &Map<String, Value>, depth: usize, converted: bool) -> bool {
        self.reaches_object(schema, depth, converted, &mut HashSet::new())
    }

    /// [`Converter::describes_object`], visiting each schema once: a description is input, and
    /// compositions that refer to each other fan out (eight `allOf` parts sixteen deep would be
    /// 8^16 walks). A schema seen before adds nothing to an "any", so it answers no.
    fn reaches_object(
        &self,
        schema: &Map<String, Value>,
        depth: usize,
        converted: bool,
        seen: &mut HashSet<(*const Map<String, Value>, bool)>,
    ) -> bool {
        if depth > 16 || !seen.insert((schema, converted)) {
            return false;
        }
        if let Some(types) = schema.get("type") {
            return types == "object"
                || types
                    .as_array()
                    .is_some_and(|types| types.contains(&json!("object")));
        }
        if schema.contains_key("properties") || schema.contains_key("additionalProperties") {
            return true;
        }
        let reference = schema.get("$ref").and_then(Value::as_str);
        let target = if converted {
            reference
                .and_then(|reference| reference.strip_prefix("#/$defs/"))
                .and_then(|name| self.source_definition(name))
        } else {
            reference
                .and_then(|reference| reference.strip_prefix('#'))
                .and_then(|pointer| self.source.pointer(pointer))
        };
        // What a reference points to is the description's, never converted yet.
        if let Some(target) = target.and_then(Value::as_object)
            && self.reaches_object(target, depth + 1, false, seen)
        {
            return true;
        }
        ["allOf", "anyOf", "oneOf"].iter().any(|keyword| {
            schema
                .get(*keyword)
                .and_then(Value::as_array)
                .is_some_and(|parts| {
                    parts.iter().any(|part| {
                        part.as_object().is_some_and(|part| {
                            self.reaches_object(part, depth + 1, converted, seen)
                        })
                    })
                })
        })
    }

    /// What the converted definition `name` (a `$defs` name this converter gave) was made from.
    /// The types every value `schema` admits can have, where its keywords say (its `type`,
    /// what its `$ref` points to, the union of its `anyOf` branches, the intersection of its typed
    /// `allOf` parts); `None` where something in it admits any type. `converted` as for
    /// [`Converter::describes_object`]; a description's cycles end at a depth.
    fn implied_types(
        &self,
        schema: &Map<String, Value>,
        converted: bool,
        depth: usize,
        known: &mut TypesSeen,
    ) -> Option<BTreeSet<String>> {
        // Each schema once (compositions fan out), and a cycle answers "any type".
        let key = (schema as *const Map<String, Value>, converted);
        if depth > 16 {
            return None;
        }
        if let Some(answer) = known.get(&key) {
            return answer.clone();
        }
        known.insert(key, None);
        let answer = self.implied_types_once(schema, converted, depth, known);
        known.insert(key, answer.clone());
        answer
    }

    fn implied_types_once(
        &self,
        schema: &Map<String, Value>,
        converted: bool,
        depth: usize,
        seen: &mut TypesSeen,
    ) -> Option<BTreeSet<String>> {
        match schema.get("type") {
            Some(Value::String(name)) => return Some(BTreeSet::from([name.clone()])),
            Some(Value::Array(names)) => {
                return Some(
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                );
            }
            _ => {}
        }
        let mut known: Option<BTreeSet<String>> = None;
        let mut meet = |types: BTreeSet<String>| {
            known = Some(match known.take() {
                None => types,
                Some(before) => before.intersection(&types).cloned().collect(),
            });
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = if converted {
                reference
                    .strip_prefix("#/$defs/")
                    .and_then(|name| self.source_definition(name))
            } else {
                reference
                    .strip_prefix('#')
                    .and_then(|pointer| self.source.pointer(pointer))
            };
            meet(self.implied_types(target?.as_object()?, false, depth + 1, seen)?);
        }
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(types) = part
                .as_object()
                .and_then(|part| self.implied_types(part, converted, depth + 1, seen))
            {
                meet(types);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
                let mut union = BTreeSet::new();
                for branch in branches {
                    union.extend(self.implied_types(
                        branch.as_object()?,
                        converted,
                        depth + 1,
                        seen,
                    )?);
                }
                meet(union);
            }
        }
        if known.is_none() && schema.contains_key("properties") {
            known = Some(BTreeSet::from(["object".to_owned()]));
        }
        known
    }

    /// A string named like a timestamp is an RFC 3339 date-time (the lint asks for the format;
    /// an example that disagrees takes it back), unless the description says otherwise: then it
    /// has no format, and the header says why.
    fn timestamp(
        &mut self,
        out: &mut Map<String, Value>,
        source: &Map<String, Value>,
        at: &str,
        member: Option<&str>,
    ) {
        let Some(name) = member.filter(|name| {
            ["_at", "_time", "_date"]
                .iter()
                .any(|suffix| name.ends_with(suffix))
                || ["date", "time", "timestamp"].contains(name)
        }) else {
            return;
        };
        if ["format", "enum", "pattern"]
            .iter()
            .any(|keyword| out.contains_key(*keyword))
        {
            return;
        }
        match timestamp_contradicted(source, out) {
            Some(why) => self.assume(
                at,
                format!("no format, though `{name}` is named like a timestamp: {why}"),
            ),
            None => {
                out.insert("format".to_owned(), json!("date-time"));
                self.assume(
                    at,
                    format!("format date-time: `{name}` is named like a timestamp"),
                );
            }
        }
    }

    /// The schema as its description means it where it is known to say so in its own way,
    /// each reading listed: Swagger's and Kubernetes' `x-nullable: true`, and a description
    /// that says the value can be null, are `nullable`;
    /// Kubernetes' `x-kubernetes-int-or-string: true` (and its `IntOrString` type) is an
    /// integer or a string; Kubernetes' `Time` and `MicroTime` types are written `null` by its
    /// API server for a time not set. `None` when nothing is read differently.
    fn hinted(&mut self, members: &Map<String, Value>, at: &str) -> Option<Map<String, Value>> {
        let type_name = at
            .strip_prefix("/$defs/")
            .filter(|name| !name.contains('/'))
            .map(|name| name.replace("~1", "/").replace("~0", "~"))
            .and_then(|name| self.pointers.get(&name).cloned())
            .and_then(|pointer| pointer.rsplit('/').next().map(str::to_owned))
            .unwrap_or_default();
        let kubernetes = type_name.starts_with("io.k8s.");
        let mut hinted = members.clone();
        let mut changed = false;
        if members.get("x-nullable") == Some(&Value::Bool(true))
            && !members.contains_key("nullable")
        {
            hinted.insert("nullable".to_owned(), Value::Bool(true));
            changed = true;
        }
        // Spotify's `preview_url`: "Can be `null`", in words only.
        let words = members
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
            .replace('`', "");
        if !members.contains_key("nullable")
            && !hinted.contains_key("nullable")
            && [
                "can be null",
                "may be null",
                "will be null",
                "is null",
                "or null",
                "null if",
                "null when",
            ]
            .iter()
            .any(|said| words.contains(said))
        {
            hinted.insert("nullable".to_owned(), Value::Bool(true));
            self.assume(at, "null admitted: its description says it can be null");
            changed = true;
        }
        if members.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            || (kubernetes && type_name.ends_with(".IntOrString"))
        {
            hinted.insert("type".to_owned(), json!(["integer", "string"]));
            hinted.remove("format");
            self.assume(
                at,
                "type integer or string: Kubernetes' int-or-string (`x-kubernetes-int-or-string`, `IntOrString`)",
            );
            changed = true;
        }
        if kubernetes
            && (type_name.ends_with(".Time") || type_name.ends_with(".MicroTime"))
            && !members.contains_key("nullable")
        {
            hinted.insert("nullable".to_owned(), Value::Bool(true));
            self.assume(
                at,
                "null admitted: Kubernetes' API server writes a time not set as null",
            );
            changed = true;
        }
        changed.then_some(hinted)
    }

    /// Whether the description's schema bounds its strings where it composes others (`allOf`
    /// of a `$ref` to an enum): the part bounds the value, and a `maxLength` beside it is
    /// a bound no response can reach (a mutant that survives).
    fn composes_bounded_string(&self, schema: &Map<String, Value>) -> bool {
        // Each schema visited once: compositions that refer to each other fan out.
        let mut seen: HashSet<*const Map<String, Value>> = HashSet::new();
        let mut queue = vec![schema];
        while let Some(schema) = queue.pop() {
            if !seen.insert(schema) || seen.len() > 4096 {
                continue;
            }
            if ["enum", "const", "maxLength"]
                .iter()
                .any(|keyword| schema.contains_key(*keyword))
            {
                return true;
            }
            let parts = schema.get("allOf").and_then(Value::as_array);
            let referred = schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|reference| reference.strip_prefix('#'))
                .and_then(|pointer| self.source.pointer(pointer));
            for part in parts.into_iter().flatten().chain(referred) {
                let part = match part.get("$ref").and_then(Value::as_str) {
                    Some(reference) => reference
                        .strip_prefix('#')
                        .and_then(|pointer| self.source.pointer(pointer)),
                    None => Some(part),
                };
                queue.extend(part.and_then(Value::as_object));
            }
        }
        false
    }

    fn source_definition(&self, name: &str) -> Option<&Value> {
        let name = name.replace("~1", "/").replace("~0", "~");
        self.source.pointer(self.pointers.get(&name)?)
    }

    /// Closes and bounds what the description left open at a value's place.
    fn bound(
        &mut self,
        out: &mut Map<String, Value>,
        source: &Map<String, Value>,
        at: &str,
        position: Position,
        member: Option<&str>,
    ) {
        let types: Vec<String> = match out.get("type") {
            Some(Value::String(name)) => vec![name.clone()],
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let has = |name: &str| types.iter().any(|kind| kind == name);
        // A pattern bounds a string only where it has a longest match (`^B[A-Z0-9]{8,}$` has
        // none), decided on its DFA as the lint decides it.
        let pattern_bounds = out
            .get("pattern")
            .and_then(Value::as_str)
            .is_some_and(|pattern| {
                toolgate_model::strings::patterns_bound(
                    &[pattern.to_owned()],
                    toolgate_model::strings::LONGEST_BOUNDED_PATTERN,
                )
            });
        if has("string")
            && !pattern_bounds
            && !["maxLength", "enum", "const"]
                .iter()
                .any(|keyword| out.contains_key(*keyword))
            && !self.composes_bounded_string(source)
        {
            out.insert("maxLength".to_owned(), json!(STRING_BOUND));
            let why = if out.contains_key("pattern") {
                "its pattern has no longest match, and the description bounds this string nowhere else"
            } else {
                "the description bounds this string nowhere"
            };
            self.assume(at, format!("maxLength {STRING_BOUND}: {why}"));
        }
        if has("array") && !out.contains_key("maxItems") {
            out.insert("maxItems".to_owned(), json!(ARRAY_BOUND));
            self.assume(
                at,
                format!("maxItems {ARRAY_BOUND}: the description bounds this array nowhere"),
            );
        }
        if has("string") {
            self.timestamp(out, source, at, member);
        }
        let identifier = member.is_some_and(|name| {
            ["id", "number", "count", "size", "total"].contains(&name)
                || ["_id", "_count", "_number"]
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
        });
        if identifier
            && (has("integer") || has("number"))
            && !out.contains_key("minimum")
            && !out.contains_key("exclusiveMinimum")
        {
            out.insert("minimum".to_owned(), json!(0));
            self.assume(
                at,
                format!(
                    "minimum 0: `{}` counts or identifies, so it is not negative",
                    member.unwrap_or_default()
                ),
            );
        }
        if identifier
            && (has("integer") || has("number"))
            && !out.contains_key("maximum")
            && !out.contains_key("exclusiveMaximum")
        {
            out.insert("maximum".to_owned(), json!(9_007_199_254_740_991_u64));
            self.assume(
                at,
                "maximum 2^53-1: the largest integer every JSON reader keeps exactly",
            );
        }
        let map = out
            .get("additionalProperties")
            .is_some_and(Value::is_object);
        if map {
            if !out.contains_key("maxProperties") {
                out.insert("maxProperties".to_owned(), json!(MAP_BOUND));
                self.assume(
                    at,
                    format!("maxProperties {MAP_BOUND}: a map the description bounds nowhere"),
                );
            }
            if !out.contains_key("propertyNames") {
                out.insert(
                    "propertyNames".to_owned(),
                    json!({"maxLength": MAP_NAME_BOUND}),
                );
                self.assume(at, format!("propertyNames maxLength {MAP_NAME_BOUND}: a map's keys the description bounds nowhere"));
            }
            return;
        }
        // `additionalProperties: true` says "anything": closed like a silent description, so
        // that what the upstream adds is declared (the examples say where) rather than assumed.
        let opened = out.get("additionalProperties") == Some(&Value::Bool(true));
        if opened {
            out.remove("additionalProperties");
        }
        let closes = position == Position::Value
            && !out.contains_key("additionalProperties")
            && !out.contains_key("unevaluatedProperties")
            && self.is_object(out, 0);
        // An object the description declares no member of says nothing of its members (Stripe's
        // `subresource_uris`, Kubernetes' `fieldsV1`): anything, as it says, not nothing.
        let silent = closes
            && !opened
            && ![
                "properties",
                "patternProperties",
                "$ref",
                "allOf",
                "anyOf",
                "oneOf",
                "if",
                "dependentSchemas",
            ]
            .iter()
            .any(|keyword| out.contains_key(*keyword));
        if silent {
            self.assume(
                at,
                "open: the description declares no member of this object, so any member is admitted, unchecked, and never promised",
            );
            return;
        }
        // Each assumption says what the written schema holds, never more.
        match (opened, closes) {
            (true, true) => self.assume(
                at,
                "additionalProperties true dropped: closed, and opened where an example shows members",
            ),
            (true, false) => self.assume(
                at,
                "additionalProperties true dropped, but nothing here says the value is an object, so nothing is closed and any value is admitted: give it a type",
            ),
            (false, true) => self.assume(
                at,
                "closed: a member the description does not declare is refused here",
            ),
            (false, false) => {}
        }
        if closes {
            out.insert("unevaluatedProperties".to_owned(), Value::Bool(false));
        }
    }
}

/// The `$defs` name for the schema at `pointer` in a description: its last token that names
/// something (`Pet` of `/components/schemas/Pet`, `links` of `/paths/…/properties/links`), past
/// indexes and the words of the document's structure; for a response's own schema, its path and
/// method (`v2_apps_get`); an external file's key without its extension (`pet`).
fn definition_name(pointer: &str) -> String {
    const STRUCTURE: [&str; 16] = [
        "schema",
        "schemas",
        "items",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "properties",
        "additionalProperties",
        "content",
        "responses",
        "components",
        "$defs",
        "definitions",
        "paths",
        "x-toolgate-external",
    ];
    const METHODS: [&str; 8] = [
        "get", "put", "post", "delete", "options", "head", "patch", "trace",
    ];
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    let sanitized = |text: &str| -> String {
        let name: String = text
            .chars()
            .map(|ch| {
                if ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' {
                    ch
                } else {
                    '_'
                }
            })
            .collect();
        name.trim_matches('_').to_owned()
    };
    for (index, token) in tokens.iter().enumerate().rev() {
        let generic = token.is_empty()
            || token.chars().all(|ch| ch.is_ascii_digit())
            || STRUCTURE.contains(&token.as_str())
            // A media type (`application/json`), not a file (`pet.json`).
            || (token.contains("json") && !token.ends_with(".json"))
            || token.ends_with("XX")
            || token == "default";
        if generic {
            continue;
        }
        if METHODS.contains(&token.as_str()) && index > 0 {
            let name = sanitized(&format!("{}_{token}", tokens[index - 1]));
            if !name.is_empty() {
                return name;
            }
        }
        let stem = token
            .rsplit('/')
            .next()
            .unwrap_or(token)
            .trim_end_matches(".yaml")
            .trim_end_matches(".yml")
            .trim_end_matches(".json");
        let name = sanitized(stem);
        if !name.is_empty() {
            return name;
        }
    }
    "schema".to_owned()
}

/// Why a string named like a timestamp is not an RFC 3339 date-time, where its description or
/// its examples say so: a format of its own (`date-time-rfc-2822`, `unix-time`), words for a
/// duration or a count of units (`the wait time in milliseconds`), or an example that is not one
/// (`"1981-12"`).
fn timestamp_contradicted(source: &Map<String, Value>, out: &Map<String, Value>) -> Option<String> {
    if let Some(format) = source.get("format").and_then(Value::as_str) {
        return Some(format!("the description gives it the format {format:?}"));
    }
    let description = source
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    const NOT_A_TIMESTAMP: [&str; 12] = [
        "millisecond",
        "seconds",
        "minutes",
        "hours",
        "duration",
        "epoch",
        "unix",
        "elapsed",
        "rfc 2822",
        "rfc2822",
        "rfc 1123",
        "year",
    ];
    if let Some(word) = NOT_A_TIMESTAMP
        .iter()
        .find(|word| description.contains(**word))
    {
        return Some(format!("its description speaks of {word:?}"));
    }
    let examples = out.get("examples").and_then(Value::as_array);
    if let Some(example) = examples.into_iter().flatten().find(|example| {
        // An example quoted twice (GitHub's `"\"2020-07-09T00:17:55Z\""`) is read unquoted.
        example.as_str().is_some_and(|text| {
            let text = text
                .strip_prefix('"')
                .and_then(|text| text.strip_suffix('"'))
                .unwrap_or(text);
            toolgate_gate::internals::format_accepts("date-time", text) == Some(false)
        })
    }) {
        return Some(format!(
            "its example {} is not an RFC 3339 date-time",
            crate::merge::shown(example)
        ));
    }
    None
}

/// An OpenAPI 3.0 `nullable: true` schema, as 2020-12 says it: `null` added to its type (and
/// to its `enum`), or, where it has no type, an `anyOf` with `{"type": "null"}`.
fn nullable(mut schema: Map<String, Value>) -> Map<String, Value> {
    if let Some(values) = schema.get_mut("enum").and_then(Value::as_array_mut)
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match schema.get_mut("type") {
        Some(Value::String(name)) => {
            let name = name.clone();
            schema.insert("type".to_owned(), json!([name, "null"]));
            schema
        }
        Some(Value::Array(names)) => {
            if !names.contains(&json!("null")) {
                names.push(json!("null"));
            }
            schema
        }
        _ => {
            let mut wrapper = Map::new();
            for keyword in ["title", "description", "examples"] {
                if let Some(value) = schema.remove(keyword) {
                    wrapper.insert(keyword.to_owned(), value);
                }
            }
            wrapper.insert(
                "anyOf".to_owned(),
                json!([Value::Object(schema), {"type": "null"}]),
            );
            wrapper
        }
    }
}

/// A member name as a JSON pointer token.
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests;
