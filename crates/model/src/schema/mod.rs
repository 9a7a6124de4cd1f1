//! A contract version's JSON Schemas, normalized for comparison: `$ref` and `allOf` merged into
//! one node of facts per place (types, values, string, number, object and array constraints, and
//! at most one `oneOf`/`anyOf`), each node remembering where it was written.
//!
//! On this model the differ can decide, exactly, whether a value admitted by one node is admitted
//! by another, and build a value in the difference. A keyword the model does not understand
//! (`$dynamicRef` across resources, …) makes its node `Unknown`: two equal unknown nodes are
//! no change, and a changed one is reported as undecidable, never guessed.

mod algebra;
mod evaluation;
mod examples;
mod normalize;
mod references;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::Undecided;
use crate::strings::Strings;

pub use algebra::{
    admits, alternatives, disjoint_formats, format_min_length, intersect, no_type_in_common,
    of_type, same_value, without_impossible_objects,
};
pub use examples::{
    example, example_avoiding, format_examples, number_candidates, string_examples,
};
pub use normalize::{NODE_BUDGET, Schemas};

/// Where a node was written: a schema file and a JSON pointer into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
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
    Facts(Arc<Facts>),
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
    /// Every type.
    pub const ALL: [JsonType; 7] = [
        JsonType::Null,
        JsonType::Boolean,
        JsonType::Integer,
        JsonType::Number,
        JsonType::String,
        JsonType::Array,
        JsonType::Object,
    ];

    /// Every type with integers counted as numbers: what a value can be, one category each.
    pub const CATEGORIES: [JsonType; 6] = [
        JsonType::Null,
        JsonType::Boolean,
        JsonType::Number,
        JsonType::String,
        JsonType::Array,
        JsonType::Object,
    ];

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

/// The values of an `enum` (or a `const`, as one value): the list as written, and each value's
/// canonical form, so that whether a value is listed is one lookup however long the list is (a
/// 60,000-value enum is compared in milliseconds, not pairwise in minutes).
#[derive(Clone)]
pub struct Values(Arc<ValueList>);

/// The list alone: the canonical set is a `HashSet`, whose order differs between two equal
/// lists, and a node's `Debug` text is its fingerprint.
impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.0.list).finish()
    }
}

/// A digest of what a node says and where each part was written (its `Debug` text, which is
/// deterministic: maps are ordered, value sets print as listed).
pub(crate) fn fingerprint(node: &Node) -> String {
    toolgate_gate::Sha256Digest::of(format!("{:?}", node.kind).as_bytes()).to_hex()
}

struct ValueList {
    list: Vec<Value>,
    canonical: HashSet<String>,
}

impl Values {
    /// The values of `list`, in its order.
    pub fn new(list: Vec<Value>) -> Values {
        let canonical = list.iter().map(canonical).collect();
        Values(Arc::new(ValueList { list, canonical }))
    }

    /// Whether `value` is listed, by JSON Schema equality (`1` is `1.0`).
    pub fn contains(&self, value: &Value) -> bool {
        self.0.canonical.contains(&canonical(value))
    }

    /// The values as listed.
    pub fn as_slice(&self) -> &[Value] {
        &self.0.list
    }
}

impl std::ops::Deref for Values {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.0.list
    }
}

impl<'a> IntoIterator for &'a Values {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.list.iter()
    }
}

impl PartialEq for Values {
    fn eq(&self, other: &Values) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.list == other.0.list
    }
}

/// A value written so that two values are JSON Schema equal ([`same_value`]) exactly when their
/// canonical forms are equal: numbers by their `f64` value (as `same_value` compares them), member
/// names in order, strings JSON-escaped (so no two forms run together).
pub fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Null => out.push('z'),
            Value::Bool(true) => out.push('t'),
            Value::Bool(false) => out.push('f'),
            Value::Number(number) => {
                let float = number.as_f64().unwrap_or(f64::NAN);
                // -0 and 0 are the same number.
                let float = if float == 0.0 { 0.0 } else { float };
                out.push('n');
                out.push_str(&float.to_bits().to_string());
            }
            Value::String(text) => out.push_str(&Value::from(text.as_str()).to_string()),
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    write(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(members) => {
                // serde_json's map keeps names sorted (no `preserve_order`).
                out.push('{');
                for (name, member) in members {
                    out.push_str(&Value::from(name.as_str()).to_string());
                    out.push(':');
                    write(member, out);
                    out.push(',');
                }
                out.push('}');
            }
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
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
    pub values: Option<Values>,
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
    /// `patternProperties`: what a member whose name a pattern matches (searched, as
    /// `pattern` is) must be, declared in `properties` or not.
    pub pattern_properties: BTreeMap<String, Node>,
    /// What members not in `properties` and matched by no pattern must be
    /// (`additionalProperties`, or `unevaluatedProperties` where it means the same).
    pub additional: Box<Node>,
    /// `propertyNames`: what every member name must be (any string when not stated). With
    /// `additionalProperties` a schema and `maxProperties`, it bounds a map.
    pub property_names: Box<Node>,
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
    /// Keywords the model does not decide but keeps, as written, by name: each a constraint on
    /// this value alone (see [`CONJUNCTS`]). The model's view of the node is then wider than the
    /// node: what it admits is checked by the gate, never by [`admits`], and two nodes compare
    /// by inclusion only where every conjunct of the including one is one of the other's.
    pub conjuncts: BTreeMap<String, Conjunct>,
}

// The raw form of a recursion closing (a `$ref` cut at the model's depth), written by
// `normalize` and read by `algebra` and the walks here.

/// The member of a cut-off `$ref`'s raw form that says the recursion closes there (see
/// [`Node::recursion_closed`]).
pub(super) const CLOSES_RECURSION: &str = "closes_recursion";

/// The member of a recursion closing's raw form that digests the facts it was intersected with
/// (a `$ref` beside other keywords): two closings compare co-inductively only where it is equal.
pub(super) const BESIDE: &str = "beside";

/// The member of a recursion closing's raw form that lists the JSON types its target can take
/// (`"number"` standing for integers too), when that is not every type.
pub(super) const CLOSING_TYPES: &str = "types";

/// Keywords that say nothing about which instances are valid.
pub(super) const ANNOTATIONS: [&str; 17] = [
    "$schema",
    "$id",
    // A name for a place: what refers to it is modelled where the reference is (a `$ref` to an
    // anchor is followed, a `$dynamicRef` where the dynamic scope cannot change its target).
    "$anchor",
    "$dynamicAnchor",
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
    // In 2020-12, which the gate compiles every schema as, the content vocabulary only
    // annotates: jsonschema decodes and checks nothing, so these never decide a response.
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
];

/// The keywords the model keeps as [`Facts::conjuncts`] rather than giving up on their node: each
/// constrains the value it sits on and nothing else (no sibling reads what it evaluates, unless
/// `unevaluated*` sits beside it, which the model then does not take), so an identical one on
/// both sides of an inclusion cannot break it. Kept only when written without a reference
/// (`$ref`, `$dynamicRef`), so that as written means as meant. An `items` beside `prefixItems`
/// applies past the prefix alone: it is kept too (under `items`), and the two read together;
/// one that refers elsewhere is kept with its schema modelled ([`Conjunct::node`]).
pub const CONJUNCTS: [&str; 10] = [
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "not",
];

/// One kept keyword: its value as written, and where (not part of equality, like a node's).
#[derive(Debug, Clone)]
pub struct Conjunct {
    /// The keyword's value.
    pub value: Value,
    /// Where the keyword is written.
    pub at: Location,
    /// Its schema as modelled in the contract's files, where it refers elsewhere (an `items`
    /// beside `prefixItems`): part of equality, so that an edit behind the reference changes it.
    pub node: Option<Node>,
}

impl PartialEq for Conjunct {
    fn eq(&self, other: &Conjunct) -> bool {
        self.value == other.value && self.node == other.node
    }
}

impl Facts {
    /// The first conjunct of `self` that `other` does not have as well, by name: what keeps
    /// an inclusion of `other` in `self` from being decided. The counts of `contains` are read
    /// with it: a `minContains: 0` only `other` has widens `other`'s `contains` (no match
    /// needed), so where `self` keeps `contains`, `other` must count its matches alike.
    pub fn conjunct_missing_from(&self, other: &Facts) -> Option<(&str, &Conjunct)> {
        self.conjuncts
            .iter()
            .find(|(name, conjunct)| other.conjuncts.get(*name) != Some(*conjunct))
            .map(|(name, conjunct)| (name.as_str(), conjunct))
            .or_else(|| {
                let contains = self.conjuncts.get("contains")?;
                ["minContains", "maxContains"]
                    .into_iter()
                    .find(|count| self.conjuncts.get(*count) != other.conjuncts.get(*count))
                    .map(|_| ("contains", contains))
            })
    }
}

impl Facts {
    /// `dependentRequired` as written: each member's name and the members its presence
    /// requires (empty when not written); `None` when it is not that shape.
    pub fn dependent_required(&self) -> Option<BTreeMap<String, Vec<String>>> {
        let Some(kept) = self.conjuncts.get("dependentRequired") else {
            return Some(BTreeMap::new());
        };
        kept.value
            .as_object()?
            .iter()
            .map(|(name, needed)| {
                let needed = needed
                    .as_array()?
                    .iter()
                    .map(|name| name.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()?;
                Some((name.clone(), needed))
            })
            .collect()
    }

    /// Facts at `at` that constrain nothing (every value), to add constraints to.
    pub fn new(at: &Location) -> Facts {
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
            pattern_properties: BTreeMap::new(),
            additional: Box::new(Node::any(at)),
            property_names: Box::new(Node::any(at)),
            min_properties: 0,
            max_properties: None,
            items: Box::new(Node::any(at)),
            min_items: 0,
            max_items: None,
            unique_items: false,
            union: None,
            conjuncts: BTreeMap::new(),
        }
    }

    /// Whether `kind` of value is allowed at all.
    pub fn allows_type(&self, kind: JsonType) -> bool {
        self.types.as_ref().is_none_or(|types| {
            types.contains(&kind)
                || (kind == JsonType::Integer && types.contains(&JsonType::Number))
        })
    }

    /// What a member named `name` must be: its property schema, or the additional one, and
    /// the schema of every pattern its name matches (unknown where a match cannot be decided).
    pub fn member(&self, name: &str) -> Cow<'_, Node> {
        let declared = self.properties.get(name);
        if self.pattern_properties.is_empty() {
            return Cow::Borrowed(declared.unwrap_or(&self.additional));
        }
        let mut matched: Option<Cow<'_, Node>> = declared.map(Cow::Borrowed);
        for (pattern, node) in &self.pattern_properties {
            match name_matches(pattern, name) {
                Ok(false) => {}
                Ok(true) => {
                    matched = Some(match matched {
                        None => Cow::Borrowed(node),
                        Some(so_far) => Cow::Owned(intersect(&so_far, node)),
                    });
                }
                Err(why) => {
                    return Cow::Owned(Node::unknown(
                        &node.at,
                        why.to_string(),
                        &Value::from(pattern.as_str()),
                    ));
                }
            }
        }
        matched.unwrap_or(Cow::Borrowed(&self.additional))
    }
}

/// Most patterns two versions' `patternProperties` may hold at one object and still have every
/// combination of them searched for a name (2^n combinations).
const MOST_PATTERNS: usize = 4;

/// One member name per kind of undeclared member the objects `sides` tell apart: for every
/// combination of their `patternProperties` patterns, a name no side declares that matches
/// exactly those patterns, where there is one. Every undeclared name of a kind gets the same
/// schema on each side, so comparing one per kind compares them all. `None` when no side has
/// patterns (every undeclared name is then of one kind); `Err` when a kind cannot be decided.
pub fn undeclared_kinds(sides: &[&Facts]) -> Result<Option<Vec<String>>, Undecided> {
    let patterns: BTreeSet<&String> = sides
        .iter()
        .flat_map(|facts| facts.pattern_properties.keys())
        .collect();
    if patterns.is_empty() {
        return Ok(None);
    }
    let patterns: Vec<&String> = patterns.into_iter().collect();
    if patterns.len() > MOST_PATTERNS {
        return Err(Undecided::new(format!(
            "more than {MOST_PATTERNS} `patternProperties` patterns at one object"
        )));
    }
    let declared: BTreeSet<&String> = sides
        .iter()
        .flat_map(|facts| facts.properties.keys())
        .collect();
    let literal = |name: &str| -> String {
        name.chars()
            .flat_map(|c| {
                let syntax = "^$\\.*+?()[]{}|".contains(c);
                syntax.then_some('\\').into_iter().chain([c])
            })
            .collect()
    };
    let mut names = Vec::new();
    for combination in 0u32..(1 << patterns.len()) {
        let mut matched = Vec::new();
        let mut avoided = Vec::new();
        for (index, pattern) in patterns.iter().enumerate() {
            if combination & (1 << index) != 0 {
                matched.push((*pattern).clone());
            } else {
                avoided.push(format!("(?:{pattern})"));
            }
        }
        if !declared.is_empty() {
            let listed: Vec<String> = declared.iter().map(|name| literal(name)).collect();
            avoided.push(format!("^(?:{})$", listed.join("|")));
        }
        let wanted = Strings {
            min_length: 0,
            max_length: None,
            patterns: matched,
        };
        let found = if avoided.is_empty() {
            crate::strings::example(&wanted)?
        } else {
            let refused = Strings {
                min_length: 0,
                max_length: None,
                patterns: vec![avoided.join("|")],
            };
            crate::strings::difference(&wanted, &refused)?
        };
        names.extend(found);
    }
    Ok(Some(names))
}

/// Whether `pattern` (searched, as `patternProperties` searches) matches the member name `name`.
pub fn name_matches(pattern: &str, name: &str) -> Result<bool, Undecided> {
    crate::strings::admits(
        &Strings {
            min_length: 0,
            max_length: None,
            patterns: vec![pattern.to_owned()],
        },
        name,
    )
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

    /// For a `$ref` cut off at the model's depth whose target is being expanded above it (a
    /// recursion closing), that target (`file#pointer`), and a digest of the facts written
    /// beside the `$ref` (`None` when there are none). Two such nodes with the same target and
    /// the same facts beside are compared co-inductively: whatever their digests, the pair
    /// holds there if it holds where the target is expanded, which the comparison decides.
    pub fn recursion_closed(&self) -> Option<(&str, Option<&str>)> {
        match &self.kind {
            Kind::Unknown { raw, .. } if raw[CLOSES_RECURSION] == Value::Bool(true) => {
                Some((raw["$ref"].as_str()?, raw[BESIDE].as_str()))
            }
            _ => None,
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

#[cfg(test)]
mod tests;
