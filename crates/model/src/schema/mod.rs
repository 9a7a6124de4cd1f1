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
mod facts;
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
pub(crate) use facts::{ANNOTATIONS, BESIDE, CLOSES_RECURSION, CLOSING_TYPES};
pub use facts::{CONJUNCTS, Conjunct, Facts, name_matches, undeclared_kinds};
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
