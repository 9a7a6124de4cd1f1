//! The search for a value one node admits and another refuses: exact on the modelled keywords,
//! undecided (with the reason) on everything else.

use serde_json::Value;
use toolgate_model::strings::{self, Strings};
use toolgate_model::{
    Facts, JsonType, Kind, Node, Union, admits, example, format_examples, intersect,
    number_candidates, string_examples,
};

use super::align;

/// A value `a` admits and `b_check` refuses (`b_full` gives the other side's full node, for
/// the reason when it cannot be decided); `Ok(None)` when there is none.
pub(super) fn difference(a: &Node, b_check: &Node, b_full: &Node) -> Result<Option<Value>, String> {
    let refused = |value: &Value| -> Result<bool, String> {
        Ok(admits(a, value)? && !admits(b_check, value)?)
    };
    let a_facts = match &a.kind {
        Kind::Nothing => return Ok(None),
        Kind::Unknown { reason, .. } => return Err(format!("{} uses {reason}", a.at)),
        Kind::Any => {
            for candidate in [
                Value::Null,
                Value::from("x"),
                Value::from(0),
                Value::Bool(true),
                Value::Array(Vec::new()),
                Value::Object(Default::default()),
            ] {
                if refused(&candidate)? {
                    return Ok(Some(candidate));
                }
            }
            return match &b_check.kind {
                Kind::Any => Ok(None),
                _ => Err(format!("no value found that {} refuses", b_full.at)),
            };
        }
        Kind::Facts(facts) => facts,
    };
    let b_facts = match &b_check.kind {
        Kind::Any => return Ok(None),
        Kind::Nothing => return Ok(example(a, None)),
        Kind::Unknown { reason, .. } => return Err(format!("{} uses {reason}", b_check.at)),
        Kind::Facts(facts) => facts,
    };
    // `a` a union: its values are its branches' (each with `a`'s other facts), so its difference
    // is theirs (a value two `oneOf` branches take is not `a`'s, hence the check).
    if let Some(union) = &a_facts.union {
        let rest = without_union(a);
        for branch in &union.branches {
            let part = intersect(&rest, branch);
            if let Some(found) = difference(&part, b_check, b_full)?
                && refused(&found)?
            {
                return Ok(Some(found));
            }
        }
        return if union.exactly_one && union.branches.len() > 1 && !disjoint(union) {
            Err(format!("{} is a oneOf whose branches may overlap", a.at))
        } else {
            Ok(None)
        };
    }
    // `b` a union: a witness is any value of `a` outside it; inclusion holds when one branch
    // (with `b`'s other facts) takes all of `a` (and, for a oneOf, no other branch can).
    if let Some(union) = &b_facts.union {
        let rest = without_union(b_check);
        if let Some(found) = difference(a, &rest, b_full)? {
            return Ok(Some(found));
        }
        let mut covered = false;
        for branch in &union.branches {
            let part = intersect(&rest, branch);
            match difference(a, &part, b_full) {
                Ok(None) => covered = true,
                Ok(Some(found)) if refused(&found)? => return Ok(Some(found)),
                _ => {}
            }
        }
        return if covered && (!union.exactly_one || disjoint(union)) {
            Ok(None)
        } else {
            Err(format!(
                "cannot decide whether every value {} admits, the {} at {} admits",
                a.at,
                if union.exactly_one { "oneOf" } else { "anyOf" },
                b_full.at
            ))
        };
    }
    // A finite set of values: try them all.
    if let Some(values) = &a_facts.values {
        for value in values {
            if refused(value)? {
                return Ok(Some(value.clone()));
            }
        }
        return Ok(None);
    }
    let mut decided = true;
    // Types `a` allows that `b` does not.
    for kind in [
        JsonType::Null,
        JsonType::Boolean,
        JsonType::Integer,
        JsonType::Number,
        JsonType::String,
        JsonType::Array,
        JsonType::Object,
    ] {
        if !a_facts.allows_type(kind) {
            continue;
        }
        let b_allows = b_facts.allows_type(kind);
        if b_allows
            && kind != JsonType::String
            && kind != JsonType::Number
            && kind != JsonType::Integer
        {
            continue;
        }
        let candidates = typed_candidates(a, a_facts, b_facts, kind, b_allows)?;
        for candidate in &candidates {
            if refused(candidate)? {
                return Ok(Some(candidate.clone()));
            }
        }
        if !b_allows {
            // `a` allows the type and `b` does not, yet no value was found: only an empty
            // domain explains that, which the model cannot prove.
            decided = false;
            continue;
        }
        match kind {
            JsonType::String => decided &= strings_included(a_facts, b_facts)?,
            JsonType::Integer | JsonType::Number => {
                decided &= numbers_included(a_facts, b_facts, kind)
            }
            _ => {}
        }
    }
    if decided {
        Ok(None)
    } else {
        Err(format!(
            "cannot decide whether every value {} admits, {} admits too",
            a.at, b_full.at
        ))
    }
}

fn without_union(node: &Node) -> Node {
    let mut node = node.clone();
    if let Kind::Facts(facts) = &mut node.kind {
        std::sync::Arc::make_mut(facts).union = None;
    }
    node
}

/// Whether a union's branches cannot overlap: each pins one member to a different constant.
fn disjoint(union: &Union) -> bool {
    align(&union.branches, &union.branches).is_some_and(|pairs| {
        pairs
            .iter()
            .all(|(_, _, discriminator)| discriminator.is_some())
    })
}

/// Values of one type worth trying as a witness that `a` admits and `b` refuses.
fn typed_candidates(
    a: &Node,
    a_facts: &Facts,
    b_facts: &Facts,
    kind: JsonType,
    b_allows: bool,
) -> Result<Vec<Value>, String> {
    Ok(match kind {
        // `b` takes no string at all: any string `a` admits will do.
        JsonType::String if !b_allows => string_examples(a_facts, None)
            .into_iter()
            .map(Value::from)
            .collect(),
        JsonType::String => {
            let mut out: Vec<Value> = Vec::new();
            let b_side = with_enum_as_pattern(b_facts)?;
            match &a_facts.format {
                Some(format) => {
                    let mut lengths = a_facts.strings.clone();
                    // Stretch towards b's bounds too, so a tighter maxLength is found.
                    lengths.max_length = b_facts.strings.max_length.or(lengths.max_length);
                    out.extend(
                        format_examples(format, &lengths)
                            .into_iter()
                            .map(Value::from),
                    );
                    out.extend(
                        format_examples(format, &a_facts.strings)
                            .into_iter()
                            .map(Value::from),
                    );
                }
                None => {
                    if let Some(text) = strings::difference(&a_facts.strings, &b_side)? {
                        out.push(Value::from(text));
                    }
                    if b_facts.format.is_some()
                        && let Some(text) = strings::example(&a_facts.strings)?
                    {
                        out.push(Value::from(text));
                    }
                }
            }
            out
        }
        JsonType::Integer | JsonType::Number => {
            let mut out = number_candidates(a_facts, kind);
            out.extend(number_candidates(b_facts, kind));
            out
        }
        JsonType::Null => vec![Value::Null],
        JsonType::Boolean => vec![Value::Bool(true), Value::Bool(false)],
        JsonType::Array | JsonType::Object => example(a, None).into_iter().collect(),
    })
}

/// `b`'s string constraints, with an `enum` of strings written as an anchored alternation so
/// the string search can avoid its values.
fn with_enum_as_pattern(b: &Facts) -> Result<Strings, String> {
    let mut side = b.strings.clone();
    if let Some(values) = &b.values {
        let texts: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(regex_syntax::escape)
            .collect();
        if texts.is_empty() {
            side.patterns.push(r"[^\s\S]".to_owned());
        } else {
            side.patterns.push(format!("^(?:{})$", texts.join("|")));
        }
        if side.patterns.len() > 2 {
            return Err("an enum beside two patterns".to_owned());
        }
    }
    Ok(side)
}

/// Whether every string `a` admits, `b` admits (no witness was found for it).
fn strings_included(a: &Facts, b: &Facts) -> Result<bool, String> {
    if b.values.is_some() {
        return Ok(false);
    }
    let format_ok = match (&a.format, &b.format) {
        (_, None) => true,
        (Some(x), Some(y)) => x == y,
        (None, Some(_)) => false,
    };
    if !format_ok {
        return Ok(false);
    }
    if a.format.is_some() {
        // Examples of a format stand in for its language: inclusion of the other constraints is
        // decided on lengths and patterns alone only when `a` has no pattern of its own that
        // the examples might not reach.
        let lengths_ok = a.strings.min_length >= b.strings.min_length
            && b.strings
                .max_length
                .is_none_or(|max| a.strings.max_length.is_some_and(|own| own <= max));
        return Ok(lengths_ok
            && b.strings
                .patterns
                .iter()
                .all(|pattern| a.strings.patterns.contains(pattern)));
    }
    Ok(strings::difference(&a.strings, &b.strings)?.is_none())
}

/// Whether every number of `kind` `a` admits, `b` admits.
fn numbers_included(a: &Facts, b: &Facts, kind: JsonType) -> bool {
    let lower_ok = match (a.minimum, b.minimum) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(x), Some(y)) => {
            x.value > y.value || (x.value == y.value && (x.exclusive || !y.exclusive))
        }
    };
    let upper_ok = match (a.maximum, b.maximum) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(x), Some(y)) => {
            x.value < y.value || (x.value == y.value && (x.exclusive || !y.exclusive))
        }
    };
    let multiple_ok = b.multiple_of.is_none() || a.multiple_of == b.multiple_of;
    let integers_only = !b.allows_type(JsonType::Number) && b.allows_type(JsonType::Integer);
    lower_ok && upper_ok && multiple_ok && (!integers_only || kind == JsonType::Integer)
}
