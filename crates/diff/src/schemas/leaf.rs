//! What one node says about the value itself (type, values, string and number constraints), and
//! the effect of changing it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use toolgate_model::{Bound, Facts, JsonType, Kind, Node};

use crate::change::{Edit, Effect, Probe};

use super::difference::difference;

/// How many values of an enum a change names before it counts the rest.
const LISTED_VALUES: usize = 8;

/// Whether some value `a` admits, `b` refuses: `Yes` with a probe that puts it at `path`.
pub(super) fn value_effect(path: &str, a: &Node, b: &Node) -> Effect {
    match difference(a, b, b) {
        Ok(None) => Effect::No,
        Ok(Some(value)) => Effect::Yes(Probe::replace(path, value)),
        Err(reason) => Effect::Unknown(reason),
    }
}

/// Like [`value_effect`], for what a node says about the value itself (type, values, string
/// and number constraints), leaving members, items and branches to their own changes.
pub(super) fn leaf_effect(path: &str, a: &Node, b: &Node) -> Effect {
    match difference(a, &leaf(b), b) {
        Ok(None) => Effect::No,
        Ok(Some(value)) => Effect::Yes(Probe::replace(path, value)),
        Err(reason) => Effect::Unknown(reason),
    }
}

/// A node's constraints on the value itself, without its members, items and branches.
fn leaf(node: &Node) -> Node {
    match &node.kind {
        Kind::Facts(facts) => {
            let mut facts = (**facts).clone();
            facts.properties = BTreeMap::new();
            facts.pattern_properties = BTreeMap::new();
            facts.required = BTreeSet::new();
            facts.additional = Box::new(Node::any(&node.at));
            facts.min_properties = 0;
            facts.max_properties = None;
            facts.items = Box::new(Node::any(&node.at));
            facts.min_items = 0;
            facts.max_items = None;
            facts.unique_items = false;
            facts.union = None;
            Node {
                at: node.at.clone(),
                kind: Kind::Facts(std::sync::Arc::new(facts)),
            }
        }
        _ => node.clone(),
    }
}

/// The effect of item counts: an array length `a` allows and `b` does not.
pub(super) fn count_effect(path: &str, a: (u64, Option<u64>), b: (u64, Option<u64>)) -> Effect {
    let allows = |(min, max): (u64, Option<u64>), count: u64| {
        count >= min && max.is_none_or(|max| count <= max)
    };
    let mut candidates = vec![a.0, b.0.saturating_sub(1)];
    candidates.extend(a.1);
    candidates.extend(b.1.map(|max| max + 1));
    for count in candidates {
        if allows(a, count) && !allows(b, count) {
            return Effect::Yes(Probe {
                path: path.to_owned(),
                edit: Edit::Resize(usize::try_from(count).unwrap_or(usize::MAX)),
                adapt_context: true,
                shape: None,
            });
        }
    }
    Effect::No
}

/// The keywords that differ between two nodes' constraints on the value itself: `(kind,
/// description, keyword)`.
pub(super) fn leaf_changes(a: &Facts, b: &Facts) -> Vec<(&'static str, String, &'static str)> {
    let mut out = Vec::new();
    if a.types != b.types {
        let names = |types: &Option<BTreeSet<JsonType>>| match types {
            None => "any type".to_owned(),
            Some(types) => types
                .iter()
                .map(|kind| kind.name())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let all = [
            JsonType::Null,
            JsonType::Boolean,
            JsonType::Integer,
            JsonType::String,
            JsonType::Array,
            JsonType::Object,
        ];
        let wider = all
            .iter()
            .all(|kind| !a.allows_type(*kind) || b.allows_type(*kind));
        let narrower = all
            .iter()
            .all(|kind| !b.allows_type(*kind) || a.allows_type(*kind));
        let kind = match (wider, narrower) {
            (true, false) => "type_widened",
            (false, true) => "type_narrowed",
            _ => "type_changed",
        };
        out.push((
            kind,
            format!("type {} → {}", names(&a.types), names(&b.types)),
            "type",
        ));
    }
    if a.values != b.values {
        // A long enum is named by its first values and a count: the report is for reading.
        let listed = |values: &[Value]| {
            let mut shown: Vec<String> = values
                .iter()
                .take(LISTED_VALUES)
                .map(Value::to_string)
                .collect();
            if values.len() > LISTED_VALUES {
                shown.push(format!("… ({} more)", values.len() - LISTED_VALUES));
            }
            shown.join(", ")
        };
        let (kind, description, keyword) = match (&a.values, &b.values) {
            (Some(x), Some(y)) if x.len() == 1 && y.len() == 1 => (
                "const_changed",
                format!("const {} → {}", x[0], y[0]),
                "const",
            ),
            (Some(x), Some(y)) => {
                let gone: Vec<Value> = x
                    .iter()
                    .filter(|value| !y.contains(value))
                    .cloned()
                    .collect();
                let new: Vec<Value> = y
                    .iter()
                    .filter(|value| !x.contains(value))
                    .cloned()
                    .collect();
                let kind = match (gone.is_empty(), new.is_empty()) {
                    (true, false) => "enum_widened",
                    (false, true) => "enum_narrowed",
                    _ => "enum_changed",
                };
                let mut words = Vec::new();
                if !new.is_empty() {
                    words.push(format!("added {}", listed(&new)));
                }
                if !gone.is_empty() {
                    words.push(format!("removed {}", listed(&gone)));
                }
                (kind, format!("enum: {}", words.join("; ")), "enum")
            }
            (None, Some(y)) => (
                "enum_narrowed",
                format!("values limited to {}", listed(y)),
                "enum",
            ),
            (Some(x), None) => (
                "enum_widened",
                format!("values no longer limited to {}", listed(x)),
                "enum",
            ),
            (None, None) => unreachable!("the values differ"),
        };
        out.push((kind, description, keyword));
    }
    if a.strings.patterns != b.strings.patterns {
        let (kind, description) =
            match (a.strings.patterns.is_empty(), b.strings.patterns.is_empty()) {
                (true, false) => (
                    "pattern_added",
                    format!("pattern {:?} added", b.strings.patterns.join(" and ")),
                ),
                (false, true) => (
                    "pattern_removed",
                    format!("pattern {:?} removed", a.strings.patterns.join(" and ")),
                ),
                _ => (
                    "pattern_changed",
                    format!(
                        "pattern {:?} → {:?}",
                        a.strings.patterns.join(" and "),
                        b.strings.patterns.join(" and ")
                    ),
                ),
            };
        out.push((kind, description, "pattern"));
    }
    for (words, keyword, x, y, lower) in [
        (
            "minLength",
            "minLength",
            Some(a.strings.min_length),
            Some(b.strings.min_length),
            true,
        ),
        (
            "maxLength",
            "maxLength",
            a.strings.max_length,
            b.strings.max_length,
            false,
        ),
    ] {
        if x != y {
            let tighter = match (x, y) {
                (Some(x), Some(y)) => (y > x) == lower,
                (None, Some(_)) => true,
                _ => false,
            };
            let show =
                |bound: Option<u64>| bound.map_or("none".to_owned(), |bound| bound.to_string());
            out.push((
                if tighter {
                    "length_tightened"
                } else {
                    "length_loosened"
                },
                format!("{words} {} → {}", show(x), show(y)),
                keyword,
            ));
        }
    }
    if a.format != b.format {
        let (kind, description) = match (&a.format, &b.format) {
            (None, Some(new)) => ("format_added", format!("format {new:?} added")),
            (Some(old), None) => ("format_removed", format!("format {old:?} removed")),
            (old, new) => ("format_changed", format!("format {old:?} → {new:?}")),
        };
        out.push((kind, description, "format"));
    }
    let bound = |bound: Option<Bound>| match bound {
        None => "none".to_owned(),
        Some(bound) if bound.exclusive => format!("{} (exclusive)", bound.value),
        Some(bound) => bound.value.to_string(),
    };
    for (words, keyword, x, y, lower) in [
        ("minimum", "minimum", a.minimum, b.minimum, true),
        ("maximum", "maximum", a.maximum, b.maximum, false),
    ] {
        if x != y {
            let tighter = match (x, y) {
                (Some(x), Some(y)) => {
                    if lower {
                        y.value > x.value || (y.value == x.value && y.exclusive)
                    } else {
                        y.value < x.value || (y.value == x.value && y.exclusive)
                    }
                }
                (None, Some(_)) => true,
                _ => false,
            };
            out.push((
                if tighter {
                    "bounds_tightened"
                } else {
                    "bounds_loosened"
                },
                format!("{words} {} → {}", bound(x), bound(y)),
                keyword,
            ));
        }
    }
    if a.multiple_of != b.multiple_of {
        out.push((
            "multiple_of_changed",
            format!("multipleOf {:?} → {:?}", a.multiple_of, b.multiple_of),
            "multipleOf",
        ));
    }
    out
}
