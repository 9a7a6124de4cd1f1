//! The search for a value one node admits and another refuses: exact on the modelled keywords,
//! undecided (with the reason) on everything else. One job, kept in one file past 900 lines: its
//! functions are one recursion over the node's type (objects, arrays, strings, numbers, unions),
//! each case reading the others', and split apart they would import each other in a circle.

use serde_json::Value;
use toolgate_model::strings::{self, Strings};
use toolgate_model::{
    Facts, JsonType, Kind, Node, Union, admits, example, format_examples, format_min_length,
    intersect, no_type_in_common, number_candidates, of_type, string_examples,
};

use super::closes_same_recursion;
use super::unions::disjoint_branches;

/// A value `a` admits and `b_check` refuses (`b_full` gives the other side's full node, for
/// the reason when it cannot be decided); `Ok(None)` when there is none.
pub(super) fn difference(a: &Node, b_check: &Node, b_full: &Node) -> Result<Option<Value>, String> {
    difference_outside(a, b_check, b_full, &[])
}

/// As [`difference`], for the values of `a` that none of `excluded` admits: `a` is one branch
/// of a `oneOf`, whose values take no other branch (`excluded`). `Ok(None)` then says every
/// such value `b_check` admits; a value returned may still be in an excluded node, and the
/// caller checks it.
fn difference_outside(
    a: &Node,
    b_check: &Node,
    b_full: &Node,
    excluded: &[Node],
) -> Result<Option<Value>, String> {
    if closes_same_recursion(a, b_check) {
        return Ok(None);
    }
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
        // Every value of `a` is a witness; where the model can build none, `a` may still hold
        // one (an overlapping `oneOf` it cannot build through), so only a plainly empty `a`
        // is included.
        Kind::Nothing => {
            return match example(a, None) {
                Some(value) => Ok(Some(value)),
                None if plainly_empty(a_facts) => Ok(None),
                None => Err(format!(
                    "{} admits nothing, and no value {} admits could be built to show it",
                    b_full.at, a.at
                )),
            };
        }
        Kind::Unknown { reason, .. } => return Err(format!("{} uses {reason}", b_check.at)),
        Kind::Facts(facts) => facts,
    };
    // A keyword `b` keeps undecided narrows `b` by an unknown amount, unless `a` is narrowed by
    // the very same one: only then can an inclusion the model decides hold.
    if let Some((name, kept)) = b_facts.conjunct_missing_from(a_facts) {
        // A `not` only `b` has refuses nothing of `a` where `a` and its schema share no value
        // (then `b` without it decides); a value `a` admits and its schema lists is a witness.
        if name == "not" {
            match shared_with_not(a, &kept.value) {
                Some(Some(value)) => return Ok(Some(value)),
                Some(None) => {
                    let mut without = b_check.clone();
                    if let Kind::Facts(facts) = &mut without.kind {
                        std::sync::Arc::make_mut(facts).conjuncts.remove("not");
                    }
                    return difference_outside(a, &without, b_full, excluded);
                }
                None => {}
            }
        }
        return Err(format!(
            "{} uses `{name}`, which the differ does not model",
            kept.at
        ));
    }
    // Numbers alone, however the unions overlap: decided exactly at the critical points.
    if let Some(decided) = numeric_difference(a, b_check)? {
        return Ok(decided);
    }
    // `a` a union: its values are its branches' (each with `a`'s other facts), so its difference
    // is theirs (a value two `oneOf` branches take is not `a`'s, hence the check).
    // A value of a `oneOf` takes no other branch than its own, which its branch's inclusion
    // may rely on (`excluded`). Where every branch is included, so is `a`, overlapping or not;
    // a value found in a branch that `a` does not admit (it takes two) settles nothing.
    if let Some(union) = &a_facts.union {
        let rest = without_union(a);
        let mut unsettled = false;
        for (index, branch) in union.branches.iter().enumerate() {
            let part = intersect(&rest, branch);
            let others: Vec<Node> = match union.exactly_one {
                true => union
                    .branches
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != index)
                    .map(|(_, other)| other.clone())
                    .collect(),
                false => Vec::new(),
            };
            if let Some(found) = difference_outside(&part, b_check, b_full, &others)? {
                if refused(&found)? {
                    return Ok(Some(found));
                }
                unsettled = true;
            }
        }
        return if unsettled && union.exactly_one && union.branches.len() > 1 && !disjoint(union) {
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
        let parts: Vec<Node> = union
            .branches
            .iter()
            .map(|branch| intersect(&rest, branch))
            .collect();
        let mut covering = None;
        let mut first_error = None;
        for (index, part) in parts.iter().enumerate() {
            match difference_outside(a, part, b_full, excluded) {
                Ok(None) => {
                    covering.get_or_insert(index);
                }
                Ok(Some(found)) if refused(&found)? => return Ok(Some(found)),
                Ok(Some(_)) => {}
                Err(why) => {
                    first_error.get_or_insert(why);
                }
            }
        }
        // A `oneOf` also needs no other branch to take the value: certain where the branches
        // cannot overlap, or where what each other branch takes of `a` lies in a node `a`'s
        // values are outside (`excluded`).
        let alone = |covering: usize| {
            parts.iter().enumerate().all(|(index, part)| {
                let shared = intersect(part, a);
                index == covering
                    || excluded
                        .iter()
                        .any(|outside| matches!(difference(&shared, outside, outside), Ok(None)))
            })
        };
        if covering.is_none()
            && let Some(decided) = split_on_presence(a, b_check, b_full, excluded, union)?
        {
            return Ok(decided);
        }
        return if covering
            .is_some_and(|covering| !union.exactly_one || disjoint(union) || alone(covering))
        {
            Ok(None)
        } else {
            // Why, where a branch said: the reason that would have to go for it to cover.
            // A nested union's own "a branch:" reason is its innermost one, kept alone.
            const BRANCH: &str = "; a branch: ";
            let why = match (covering, first_error) {
                (Some(_), _) => "; another branch may take the same values".to_owned(),
                (None, Some(why)) => {
                    let innermost = why
                        .rsplit_once(BRANCH)
                        .map_or(why.as_str(), |(_, last)| last);
                    format!("{BRANCH}{innermost}")
                }
                (None, None) => String::new(),
            };
            Err(format!(
                "cannot decide whether every value {} admits, the {} at {} admits{why}",
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
    let mut reason = None;
    // Types `a` allows that `b` does not.
    for kind in JsonType::ALL {
        if !a_facts.allows_type(kind) {
            continue;
        }
        let b_allows = b_facts.allows_type(kind);
        if b_allows && matches!(kind, JsonType::Array | JsonType::Object) {
            // Both take this structure: compared member by member, item by item.
            let outcome = if kind == JsonType::Object {
                object_difference(a, a_facts, b_facts, b_check, &refused)
            } else {
                array_difference(a, a_facts, b_facts, b_check, &refused)
            };
            match outcome {
                Ok(None) => {}
                Ok(Some(found)) => return Ok(Some(found)),
                Err(why) => {
                    decided = false;
                    reason.get_or_insert(why);
                }
            }
            continue;
        }
        if b_allows
            && matches!(kind, JsonType::Null | JsonType::Boolean)
            && b_facts.values.is_none()
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
        Err(reason.unwrap_or_else(|| {
            format!(
                "cannot decide whether every value {} admits, {} admits too",
                a.at, b_full.at
            )
        }))
    }
}

/// Where no branch of `b`'s union takes all of `a`, `a` split in two by a member some branch
/// requires or forbids (`dependentSchemas` is written so: the member absent, or present with
/// its schema): `a` without it and `a` with it, each compared with `b` whole. The two halves
/// are all of `a`, so `a` is included when both are; a value either has outside `b` is `a`'s.
/// `None` when no such member splits it into halves the model decides.
fn split_on_presence(
    a: &Node,
    b_check: &Node,
    b_full: &Node,
    excluded: &[Node],
    union: &Union,
) -> Result<Option<Option<Value>>, String> {
    let Some(a_facts) = a
        .facts()
        .filter(|facts| facts.allows_type(JsonType::Object))
    else {
        return Ok(None);
    };
    let mut names: Vec<&String> = Vec::new();
    for branch in &union.branches {
        if let Some(facts) = branch.facts() {
            let forbidden = facts
                .properties
                .iter()
                .filter(|(_, member)| member.kind == Kind::Nothing)
                .map(|(name, _)| name);
            for name in facts.required.iter().chain(forbidden) {
                // A member `a` already settles (required, or never present) splits nothing,
                // which also ends the recursion through the halves.
                let settled =
                    a_facts.required.contains(name) || a_facts.member(name).kind == Kind::Nothing;
                if !settled && !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
    // Each half may split again on another member: bounded, so a union over many members costs
    // at most (2 × MOST_SPLITS)^MOST_NESTED comparisons.
    const MOST_SPLITS: usize = 4;
    const MOST_NESTED: usize = 3;
    thread_local!(static NESTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
    if NESTED.get() >= MOST_NESTED {
        return Ok(None);
    }
    NESTED.set(NESTED.get() + 1);
    let decided = split_on_names(a, b_check, b_full, excluded, names, MOST_SPLITS);
    NESTED.set(NESTED.get() - 1);
    decided
}

/// [`split_on_presence`] on the first `most` of `names`.
fn split_on_names(
    a: &Node,
    b_check: &Node,
    b_full: &Node,
    excluded: &[Node],
    names: Vec<&String>,
    most: usize,
) -> Result<Option<Option<Value>>, String> {
    for name in names.into_iter().take(most) {
        let mut absent = Facts::new(&a.at);
        absent.properties.insert(
            name.clone(),
            Node {
                at: a.at.clone(),
                kind: Kind::Nothing,
            },
        );
        let mut present = Facts::new(&a.at);
        present.required.insert(name.clone());
        let mut decided = true;
        for half in [absent, present] {
            let half = intersect(
                a,
                &Node {
                    at: a.at.clone(),
                    kind: Kind::Facts(half.into()),
                },
            );
            // A half the model could not tell from `a` would split again, without end.
            if half == *a {
                decided = false;
                break;
            }
            match difference_outside(&half, b_check, b_full, excluded) {
                Ok(None) => {}
                Ok(Some(found)) if admits(a, &found)? && !admits(b_check, &found)? => {
                    return Ok(Some(Some(found)));
                }
                Ok(Some(_)) | Err(_) => decided = false,
            }
        }
        if decided {
            return Ok(Some(None));
        }
    }
    Ok(None)
}

/// A member name neither version declares, standing for every such name (they all get the
/// `additionalProperties` schema).
const UNDECLARED: &str = "toolgate_undeclared";

/// For objects both nodes take: an object `a` admits and `b` refuses, `Ok(None)` when every
/// object `a` admits `b` admits (each member's schema included in the other's, `b`'s required
/// names required by `a`, member counts and names within `b`'s), `Err` when neither is shown.
fn object_difference(
    a: &Node,
    a_facts: &Facts,
    b_facts: &Facts,
    b_check: &Node,
    refused: &dyn Fn(&Value) -> Result<bool, String>,
) -> Result<Option<Value>, String> {
    // An object `a` requires a member of no value cannot be: no object of `a`'s is a witness
    // (a string member whose pattern needs more characters than its `maxLength` allows).
    if a_facts
        .required
        .iter()
        .any(|name| admits_no_string(&a_facts.member(name)))
    {
        return Ok(None);
    }
    let base = example(&of_type(a, JsonType::Object), None);
    let base_members = base.as_ref().and_then(Value::as_object);
    let try_with =
        |edit: &dyn Fn(&mut serde_json::Map<String, Value>)| -> Result<Option<Value>, String> {
            let Some(members) = base_members else {
                return Ok(None);
            };
            let mut members = members.clone();
            edit(&mut members);
            let candidate = Value::Object(members);
            Ok(refused(&candidate)?.then_some(candidate))
        };
    let mut unproven: Option<String> = None;
    let undecided = |why: String, unproven: &mut Option<String>| {
        unproven.get_or_insert(why);
    };
    for name in b_facts.required.difference(&a_facts.required) {
        if let Some(found) = try_with(&|members| {
            members.remove(name);
        })? {
            return Ok(Some(found));
        }
        undecided(
            format!("{} requires `{name}` where {} does not", b_check.at, a.at),
            &mut unproven,
        );
    }
    // Every declared name, and one name per kind of undeclared member (with patterns, one per
    // combination of patterns its name matches).
    let undeclared = match toolgate_model::undeclared_kinds(&[a_facts, b_facts]) {
        Ok(None) => vec![UNDECLARED.to_owned()],
        Ok(Some(names)) => names,
        Err(why) => {
            undecided(why.to_string(), &mut unproven);
            Vec::new()
        }
    };
    let names: std::collections::BTreeSet<&str> = a_facts
        .properties
        .keys()
        .chain(b_facts.properties.keys())
        .chain(&undeclared)
        .map(String::as_str)
        .collect();
    for name in names {
        let (from, to) = (a_facts.member(name), b_facts.member(name));
        if from == to {
            continue;
        }
        let (from, to) = (&*from, &*to);
        match difference(from, to, to) {
            Ok(None) => {}
            Ok(Some(value)) => {
                if let Some(found) = try_with(&|members| {
                    members.insert(name.to_owned(), value.clone());
                })? {
                    return Ok(Some(found));
                }
                undecided(
                    format!(
                        "member `{name}`: a value {} admits and {} refuses does not fit the rest of an object {}",
                        from.at, to.at, a.at
                    ),
                    &mut unproven,
                );
            }
            Err(why) => undecided(why, &mut unproven),
        }
    }
    let counts_within = a_facts.min_properties >= b_facts.min_properties
        && b_facts
            .max_properties
            .is_none_or(|max| a_facts.max_properties.is_some_and(|own| own <= max));
    if !counts_within {
        undecided(
            format!("minProperties/maxProperties at {} and {}", a.at, b_check.at),
            &mut unproven,
        );
    }
    if a_facts.property_names != b_facts.property_names {
        match difference(
            &a_facts.property_names,
            &b_facts.property_names,
            &b_facts.property_names,
        ) {
            Ok(None) => {}
            Ok(Some(_)) | Err(_) => undecided(
                format!("propertyNames at {} and {}", a.at, b_check.at),
                &mut unproven,
            ),
        }
    }
    if b_facts.values.is_some() {
        if let Some(found) = try_with(&|_| {})? {
            return Ok(Some(found));
        }
        undecided(
            format!("an enum of objects at {}", b_check.at),
            &mut unproven,
        );
    }
    match unproven {
        None => Ok(None),
        Some(why) => Err(why),
    }
}

/// For arrays both nodes take: an array `a` admits and `b` refuses, `Ok(None)` when every array
/// `a` admits `b` admits, `Err` when neither is shown.
fn array_difference(
    a: &Node,
    a_facts: &Facts,
    b_facts: &Facts,
    b_check: &Node,
    refused: &dyn Fn(&Value) -> Result<bool, String>,
) -> Result<Option<Value>, String> {
    let base = example(&of_type(a, JsonType::Array), None);
    let item = base
        .as_ref()
        .and_then(Value::as_array)
        .and_then(|items| items.first().cloned())
        .or_else(|| example(&a_facts.items, None));
    let sized = |length: u64, fill: &Value| -> Vec<Value> {
        let length = usize::try_from(length.min(64)).unwrap_or(64);
        vec![fill.clone(); length]
    };
    let mut unproven: Option<String> = None;
    if a_facts.items != b_facts.items {
        match difference(&a_facts.items, &b_facts.items, &b_facts.items) {
            Ok(None) => {}
            Ok(Some(value)) => {
                let length = a_facts.min_items.max(1);
                let mut candidate = item
                    .as_ref()
                    .map_or_else(Vec::new, |item| sized(length, item));
                if candidate.is_empty() {
                    candidate.push(value.clone());
                } else {
                    candidate[0] = value;
                }
                let candidate = Value::Array(candidate);
                if refused(&candidate)? {
                    return Ok(Some(candidate));
                }
                unproven.get_or_insert(format!(
                    "an item {} admits and {} refuses does not fit an array {} admits",
                    a_facts.items.at, b_facts.items.at, a.at
                ));
            }
            Err(why) => {
                unproven.get_or_insert(why);
            }
        }
    }
    let counts_within = a_facts.min_items >= b_facts.min_items
        && b_facts
            .max_items
            .is_none_or(|max| a_facts.max_items.is_some_and(|own| own <= max));
    let unique_within = !b_facts.unique_items || a_facts.unique_items;
    if !counts_within || !unique_within {
        let mut lengths = vec![a_facts.min_items, b_facts.min_items.saturating_sub(1), 2];
        lengths.extend(a_facts.max_items);
        lengths.extend(b_facts.max_items.map(|max| max + 1));
        for length in lengths {
            let candidates = match &item {
                Some(item) => vec![Value::Array(sized(length, item))],
                None if length == 0 => vec![Value::Array(Vec::new())],
                None => Vec::new(),
            };
            for candidate in candidates {
                if refused(&candidate)? {
                    return Ok(Some(candidate));
                }
            }
        }
        unproven.get_or_insert(format!(
            "minItems/maxItems/uniqueItems at {} and {}",
            a.at, b_check.at
        ));
    }
    if b_facts.values.is_some() {
        if let Some(base) = base
            && refused(&base)?
        {
            return Ok(Some(base));
        }
        unproven.get_or_insert(format!("an enum of arrays at {}", b_check.at));
    }
    match unproven {
        None => Ok(None),
        Some(why) => Err(why),
    }
}

/// A value `a` admits that the schema of a `not` (written `schema`) also admits: `Some(None)`
/// where there is none (they take no JSON type in common, or the schema lists its values and
/// `a` refuses each); `None` where the model cannot tell.
pub(super) fn shared_with_not(a: &Node, schema: &Value) -> Option<Option<Value>> {
    let refused = super::kept::kept_node(schema);
    if no_type_in_common(a, &refused) {
        return Some(None);
    }
    let listed = refused.facts()?.values.as_ref()?;
    for value in listed.iter() {
        if admits(&refused, value).ok()? && admits(a, value).ok()? {
            return Some(Some(value.clone()));
        }
    }
    Some(None)
}

/// Whether `node` takes strings alone and its length bounds, patterns and format leave none,
/// which the string automata decide exactly (a format by the fewest characters its strings
/// have, `format_min_length`).
fn admits_no_string(node: &Node) -> bool {
    let Kind::Facts(facts) = &node.kind else {
        return node.kind == Kind::Nothing;
    };
    let mut strings = facts.strings.clone();
    if let Some(format) = &facts.format {
        strings.min_length = strings.min_length.max(format_min_length(format));
    }
    facts.union.is_none()
        && facts.conjuncts.is_empty()
        && facts.values.is_none()
        && facts
            .types
            .as_ref()
            .is_some_and(|types| types.iter().all(|kind| *kind == JsonType::String))
        && strings::example(&strings) == Ok(None)
}

/// Whether the facts admit nothing on their face: no type, or no value, is left.
fn plainly_empty(facts: &Facts) -> bool {
    facts.types.as_ref().is_some_and(|types| types.is_empty())
        || facts
            .values
            .as_ref()
            .is_some_and(|values| values.iter().next().is_none())
}

pub(super) fn without_union(node: &Node) -> Node {
    let mut node = node.clone();
    if let Kind::Facts(facts) = &mut node.kind {
        std::sync::Arc::make_mut(facts).union = None;
    }
    node
}

/// Whether a union's branches cannot overlap: each pins one member to a different constant.
fn disjoint(union: &Union) -> bool {
    disjoint_branches(&union.branches)
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
    // A multiple of a whole step is a multiple of every whole step it is a multiple of.
    let whole = |step: f64| step.fract() == 0.0 && step > 0.0 && step < 9e15;
    let multiple_ok = match (a.multiple_of, b.multiple_of) {
        (_, None) => true,
        (Some(x), Some(y)) => x == y || (whole(x) && whole(y) && x % y == 0.0),
        (None, Some(_)) => false,
    };
    // An enum of numbers on `b`'s side: inclusion would need every number of `a` listed.
    let values_ok = b.values.is_none();
    let integers_only = !b.allows_type(JsonType::Number) && b.allows_type(JsonType::Integer);
    lower_ok
        && upper_ok
        && multiple_ok
        && values_ok
        && (!integers_only || kind == JsonType::Integer)
}

/// Where both nodes admit numbers only, described by bounds, types and listed values (with
/// unions of such, `oneOf` overlapping or not): the number one admits and the other refuses,
/// or `Some(None)` when there is none; `None` when either node says more than that.
///
/// Each constraint is a bound, an equality or integrality, so whether a number is admitted can
/// change only at a bound or listed value (a critical point), and, between two, only between
/// integers and the numbers that are not: trying every critical point, each side of it, and an
/// integer and a fraction inside every gap between two decides inclusion exactly, `oneOf`'s
/// "exactly one branch" included (the count of matching branches is constant on the same
/// pieces).
fn numeric_difference(a: &Node, b: &Node) -> Result<Option<Option<Value>>, String> {
    let mut points = Vec::new();
    if !numeric_only(a, true, &mut points) || !numeric_only(b, true, &mut points) {
        return Ok(None);
    }
    points.retain(|point| point.is_finite());
    points.sort_by(f64::total_cmp);
    points.dedup();
    let mut candidates = vec![0.0, 0.5, -0.5];
    for point in &points {
        let point = *point;
        candidates.extend([
            point,
            point - 0.25,
            point + 0.25,
            point - 0.5,
            point + 0.5,
            point - 1.0,
            point + 1.0,
            point.floor() - 1.0,
            point.ceil() + 1.0,
        ]);
    }
    for pair in points.windows(2) {
        let (low, high) = (pair[0], pair[1]);
        let middle = low + (high - low) / 2.0;
        candidates.push(middle);
        candidates.push(middle + ((high - middle) / 2.0).min(0.25));
        let integer = low.floor() + 1.0;
        if integer < high {
            candidates.push(integer);
        }
    }
    for candidate in candidates {
        let value = if candidate.fract() == 0.0 && candidate.abs() < 9e15 {
            Value::from(candidate as i64)
        } else {
            match serde_json::Number::from_f64(candidate) {
                Some(number) => Value::Number(number),
                None => continue,
            }
        };
        if admits(a, &value)? && !admits(b, &value)? {
            return Ok(Some(Some(value)));
        }
    }
    Ok(Some(None))
}

/// Whether `node` admits numbers only (`top`: its own type must say so; a union branch may leave
/// the type to the node it sits in), through bounds, types, listed values and unions of such; its
/// bounds and listed values are added to `points`.
fn numeric_only(node: &Node, top: bool, points: &mut Vec<f64>) -> bool {
    // `top`: nothing above says the value is a number, so this node must.
    let facts = match &node.kind {
        Kind::Nothing => return true,
        Kind::Any | Kind::Unknown { .. } => return false,
        Kind::Facts(facts) => facts,
    };
    // Numbers only: by its own type, by the node it is a branch of, or (a union with no type of
    // its own) because every branch says so.
    let numeric_types = match &facts.types {
        Some(types) => {
            !types.is_empty()
                && types
                    .iter()
                    .all(|kind| matches!(kind, JsonType::Integer | JsonType::Number))
        }
        None => !top || facts.union.is_some(),
    };
    let inherited = facts.types.is_some() || !top;
    let plain = |other: &Node| other.kind == Kind::Any;
    let nothing_else = facts.strings == Strings::default()
        && facts.format.is_none()
        && facts.multiple_of.is_none()
        && facts.properties.is_empty()
        && facts.required.is_empty()
        && plain(&facts.additional)
        && plain(&facts.property_names)
        && facts.min_properties == 0
        && facts.max_properties.is_none()
        && plain(&facts.items)
        && facts.min_items == 0
        && facts.max_items.is_none()
        && !facts.unique_items;
    if !numeric_types || !nothing_else {
        return false;
    }
    if let Some(values) = &facts.values {
        for value in values {
            match value.as_f64() {
                Some(number) if value.is_number() => points.push(number),
                _ => return false,
            }
        }
    }
    points.extend(facts.minimum.map(|bound| bound.value));
    points.extend(facts.maximum.map(|bound| bound.value));
    match &facts.union {
        Some(union) => union
            .branches
            .iter()
            .all(|branch| numeric_only(branch, !inherited, points)),
        None => true,
    }
}
