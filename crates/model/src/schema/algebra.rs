//! The algebra of normalized nodes: conjunction, the alternatives of a union, and whether a node
//! admits a value.

use crate::Undecided;
use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;
use toolgate_gate::internals::format_accepts;

use super::{
    BESIDE, Bound, CLOSES_RECURSION, CLOSING_TYPES, Facts, JsonType, Kind, Node, Values,
    fingerprint,
};
use crate::strings;

/// The tighter of two bounds (`lower`: the larger minimum; else the smaller maximum).
pub(super) fn tighter(a: Option<Bound>, b: Option<Bound>, lower: bool) -> Option<Bound> {
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
pub(super) fn close_unevaluated(node: Node, closing: Node, open_branches: &[bool]) -> Node {
    let Kind::Facts(mut shared) = node.kind else {
        return node;
    };
    let facts = Arc::make_mut(&mut shared);
    let own: Vec<String> = facts.properties.keys().cloned().collect();
    let own_patterns: Vec<String> = facts.pattern_properties.keys().cloned().collect();
    // A member the node's own properties or patterns evaluate is, in a branch, what the branch
    // itself says of it (its property, patterns or additional schema), and never closed.
    let close = |facts: &mut Facts, closing: &Node| -> Result<(), ()> {
        for name in &own {
            if !facts.properties.contains_key(name) {
                let member = facts.member(name).into_owned();
                facts.properties.insert(name.clone(), member);
            }
        }
        for pattern in &own_patterns {
            if !facts.pattern_properties.contains_key(pattern) {
                // Exact only where no pattern of the branch's own meets it with a different
                // schema beside it: a name both match is theirs alone.
                if !facts.pattern_properties.is_empty() && facts.additional.kind != Kind::Any {
                    return Err(());
                }
                let member = (*facts.additional).clone();
                facts.pattern_properties.insert(pattern.clone(), member);
            }
        }
        *facts.additional = intersect(&facts.additional, closing);
        Ok(())
    };
    let closed = match &mut facts.union {
        Some(union) => union
            .branches
            .iter_mut()
            .enumerate()
            .try_for_each(|(index, branch)| {
                if open_branches.get(index) == Some(&true) {
                    // A branch that evaluates every member itself leaves nothing to close.
                    Ok(())
                } else if let Kind::Facts(branch_facts) = &mut branch.kind {
                    close(Arc::make_mut(branch_facts), &closing)
                } else if branch.kind == Kind::Any {
                    let mut branch_facts = Facts::new(&branch.at);
                    close(&mut branch_facts, &closing)?;
                    branch.kind = Kind::Facts(Arc::new(branch_facts));
                    Ok(())
                } else {
                    Ok(())
                }
            }),
        None => close(facts, &closing),
    };
    if closed.is_err() {
        return Node::unknown(
            &node.at,
            "`unevaluatedProperties` over `patternProperties` a union branch meets with patterns of its own",
            &Value::Null,
        );
    }
    Node {
        at: node.at,
        kind: Kind::Facts(shared),
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
        Arc::make_mut(facts).union = None;
    }
    union
        .branches
        .iter()
        .map(|branch| intersect(&rest, branch))
        .collect()
}

/// `node` restricted to values of one type (an integer is a number).
pub fn of_type(node: &Node, kind: JsonType) -> Node {
    let mut typed = Facts::new(&node.at);
    typed.types = Some(BTreeSet::from([kind]));
    intersect(
        node,
        &Node {
            at: node.at.clone(),
            kind: Kind::Facts(Arc::new(typed)),
        },
    )
}

/// The conjunction of two nodes (`allOf`, `$ref` beside other keywords).
pub fn intersect(a: &Node, b: &Node) -> Node {
    let at = a.at.clone();
    match (&a.kind, &b.kind) {
        // Both anything: the first is kept, so a change is placed where the node itself says it.
        (_, Kind::Any) => a.clone(),
        (Kind::Any, _) => b.clone(),
        (Kind::Nothing, _) | (_, Kind::Nothing) => Node {
            at,
            kind: Kind::Nothing,
        },
        // A recursion closing beside other keywords still closes it: the pair compares
        // co-inductively where both versions write the same beside it (a digest of what it
        // is intersected with is folded into `beside`).
        (Kind::Unknown { reason, raw }, _) | (_, Kind::Unknown { reason, raw })
            if raw[CLOSES_RECURSION] == Value::Bool(true) =>
        {
            let other = if a.recursion_closed().is_some() { b } else { a };
            // Keywords beside it that no value of the target's types can have say nothing
            // (a `multipleOf` beside a `$ref` to an object): the closing stays as it was.
            if let Some(types) = closing_types(raw) {
                let typed = Node {
                    at: at.clone(),
                    kind: Kind::Facts(Arc::new(Facts {
                        types: Some(types),
                        ..Facts::new(&at)
                    })),
                };
                if intersect(other, &typed) == typed {
                    return Node::unknown(&at, reason.clone(), raw);
                }
            }
            let mut raw = raw.clone();
            let beside = format!(
                "{}{}",
                raw[BESIDE].as_str().unwrap_or(""),
                fingerprint(other)
            );
            raw[BESIDE] = Value::from(toolgate_gate::Sha256Digest::of(beside.as_bytes()).to_hex());
            Node::unknown(&at, reason.clone(), &raw)
        }
        // Unknown beside anything stays unknown, but keeps what the other side says: two such
        // conjunctions compare equal only when both parts are the same.
        (Kind::Unknown { reason, .. }, _) | (_, Kind::Unknown { reason, .. }) => {
            Node::unknown(&at, reason.clone(), &both(a, b))
        }
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
                (Some(x_values), Some(y_values)) => Some(Values::new(
                    x_values
                        .iter()
                        .filter(|value| y_values.contains(value))
                        .cloned()
                        .collect(),
                )),
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
            // Two different formats or multipleOf on one value are beyond the model, unless
            // the value can be no string (no number): then they constrain nothing at all.
            let strings = takes_any(&merged, &[JsonType::String]);
            let numbers = takes_any(&merged, &[JsonType::Number, JsonType::Integer]);
            merged.format = match (&merged.format, &y.format) {
                _ if !strings => None,
                // No string is of both: the value is no string.
                (Some(p), Some(q)) if disjoint_formats(p, q) => {
                    merged.types = Some(
                        JsonType::ALL
                            .into_iter()
                            .filter(|kind| *kind != JsonType::String && merged.allows_type(*kind))
                            .collect(),
                    );
                    None
                }
                (Some(p), Some(q)) if p != q => {
                    return Node::unknown(&at, "two different formats", &both(a, b));
                }
                (p, q) => p.clone().or_else(|| q.clone()),
            };
            merged.minimum = tighter(merged.minimum, y.minimum, true);
            merged.maximum = tighter(merged.maximum, y.maximum, false);
            merged.multiple_of = match (merged.multiple_of, y.multiple_of) {
                _ if !numbers => None,
                // Two whole steps: a multiple of both is a multiple of their least common
                // multiple (exact while it stays a whole number a double holds).
                (Some(p), Some(q)) if p != q && common_whole_step(p, q).is_some() => {
                    common_whole_step(p, q)
                }
                (Some(p), Some(q)) if p != q => {
                    return Node::unknown(&at, "two different multipleOf", &both(a, b));
                }
                (p, q) => p.or(q),
            };
            let names: BTreeSet<&String> = x.properties.keys().chain(y.properties.keys()).collect();
            merged.properties = names
                .into_iter()
                .map(|name| (name.clone(), intersect(&x.member(name), &y.member(name))))
                .collect();
            merged.required = x.required.union(&y.required).cloned().collect();
            // A member no property declares is, on each side, the schema of every pattern its
            // name matches, else the additional one. Patterns on one side only merge exactly
            // where the other side's additional schema admits anything: a name such a pattern
            // matches is then the pattern's (and the other side's own patterns') there.
            let one_sided = |own: &Facts, other: &Facts| {
                own.pattern_properties
                    .keys()
                    .any(|pattern| !other.pattern_properties.contains_key(pattern))
                    && other.additional.kind != Kind::Any
            };
            if one_sided(x, y) || one_sided(y, x) {
                return Node::unknown(
                    &at,
                    "`patternProperties` on one side of a conjunction whose other side constrains undeclared members",
                    &both(a, b),
                );
            }
            let patterns: BTreeSet<&String> = x
                .pattern_properties
                .keys()
                .chain(y.pattern_properties.keys())
                .collect();
            merged.pattern_properties = patterns
                .into_iter()
                .filter_map(|pattern| {
                    let node = match (
                        x.pattern_properties.get(pattern),
                        y.pattern_properties.get(pattern),
                    ) {
                        (Some(p), Some(q)) => intersect(p, q),
                        (Some(p), None) | (None, Some(p)) => p.clone(),
                        (None, None) => return None,
                    };
                    Some((pattern.clone(), node))
                })
                .collect();
            merged.additional = Box::new(intersect(&x.additional, &y.additional));
            merged.property_names = Box::new(intersect(&x.property_names, &y.property_names));
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
                    return Node::unknown(&at, "two oneOf/anyOf on one value", &both(a, b));
                }
                (union, None) | (None, union) => union.clone(),
            };
            for (name, conjunct) in &y.conjuncts {
                match merged.conjuncts.get(name) {
                    Some(kept) if kept != conjunct => {
                        return Node::unknown(
                            &at,
                            format!("two different `{name}` on one value"),
                            &both(a, b),
                        );
                    }
                    Some(_) => {}
                    None => {
                        merged.conjuncts.insert(name.clone(), conjunct.clone());
                    }
                }
            }
            tidy(&mut merged);
            Node {
                at,
                kind: Kind::Facts(Arc::new(merged)),
            }
        }
    }
}

/// Whether a value `node` admits may be of `kind`'s category (integer and number count as one:
/// an integer is a number). `true` where the model cannot say (an unknown node), so two nodes
/// neither of which may take the other's categories admit no value in common.
fn may_take(node: &Node, kind: JsonType) -> bool {
    let kinds: &[JsonType] = match kind {
        JsonType::Integer | JsonType::Number => &[JsonType::Integer, JsonType::Number],
        _ => std::slice::from_ref(&kind),
    };
    takes_any_of(node, kinds)
}

/// The least common multiple of two whole `multipleOf` steps, while it is a whole number a
/// double holds exactly; `None` for a fractional step.
fn common_whole_step(p: f64, q: f64) -> Option<f64> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    let whole =
        |step: f64| (step.fract() == 0.0 && step > 0.0 && step < EXACT).then_some(step as u64);
    let (p, q) = (whole(p)?, whole(q)?);
    let gcd = {
        let (mut x, mut y) = (p, q);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    let lcm = (p / gcd).checked_mul(q)?;
    (lcm < 1 << 53).then_some(lcm as f64)
}

/// Formats no string satisfies two of, each by a character or a shape the others never have:
/// a timestamp's `-` and `:` (`date-time`), a date's ten characters with a `-` and no `:`, a
/// time's `:` at the third, a UUID's four `-` and no `:`, an IPv4 address's digits and dots
/// only, an IPv6 address's `:` and no `-`, an email's `@`, a duration's leading `P`.
const DISJOINT_FORMATS: [&str; 8] = [
    "date-time",
    "date",
    "time",
    "uuid",
    "ipv4",
    "ipv6",
    "email",
    "duration",
];

/// Whether no string satisfies both formats (both asserted by the gate).
pub fn disjoint_formats(p: &str, q: &str) -> bool {
    p != q && DISJOINT_FORMATS.contains(&p) && DISJOINT_FORMATS.contains(&q)
}

/// The fewest characters a string the gate holds to `format` can have, for the formats whose
/// grammar fixes one (RFC 3339, RFC 4122, RFC 5321's `local@domain`, ISO 8601's `P` and a
/// unit): a lower bound, never more, so a `maxLength` below it leaves no string of the format
/// (`"format": "time", "maxLength": 2`). Checked against the gate's own format validators in
/// the model's tests.
pub fn format_min_length(format: &str) -> u64 {
    match format {
        // `2026-01-01T00:00:00Z`.
        "date-time" => 20,
        // `2026-01-01`.
        "date" => 10,
        // `00:00:00Z`.
        "time" => 9,
        // `00000000-0000-4000-8000-000000000000`.
        "uuid" => 36,
        // `0.0.0.0`.
        "ipv4" => 7,
        // `::`.
        "ipv6" => 2,
        // `a@b`.
        "email" => 3,
        // `P1D`.
        "duration" => 3,
        _ => 0,
    }
}

/// `node` where an object whose required members cannot all be present is no object, read
/// through `properties` and union branches: a member that admits nothing, or whose name the
/// object's `propertyNames` refuses, cannot be present, nor more than `maxProperties`.
/// The differ reads what it admits this way after intersecting in what the gate demands beside
/// the schema (correlation, the rules' fields); `tidy` does not, as the lint reads a schema
/// that refuses every answer (`"properties": {"text": false}`) for the members it declares.
pub fn without_impossible_objects(node: &Node) -> Node {
    let Kind::Facts(facts) = &node.kind else {
        return node.clone();
    };
    let mut facts = facts.clone();
    let inner = Arc::make_mut(&mut facts);
    for member in inner
        .properties
        .values_mut()
        .chain(inner.pattern_properties.values_mut())
    {
        *member = without_impossible_objects(member);
    }
    if let Some(union) = &mut inner.union {
        for branch in &mut union.branches {
            *branch = without_impossible_objects(branch);
        }
    }
    // A required member that admits nothing, or whose name `propertyNames` refuses, or more
    // required members than `maxProperties` allows.
    let impossible = inner.allows_type(JsonType::Object)
        && (inner.required.iter().any(|name| {
            plainly_nothing(&inner.member(name))
                || admits(&inner.property_names, &Value::from(name.as_str())) == Ok(false)
        }) || inner
            .max_properties
            .is_some_and(|max| inner.required.len() as u64 > max));
    let node = Node {
        at: node.at.clone(),
        kind: Kind::Facts(facts),
    };
    if !impossible {
        return node;
    }
    let mut others = Facts::new(&node.at);
    others.types = Some(
        JsonType::ALL
            .into_iter()
            .filter(|kind| *kind != JsonType::Object)
            .collect(),
    );
    intersect(
        &node,
        &Node {
            at: node.at.clone(),
            kind: Kind::Facts(Arc::new(others)),
        },
    )
}

/// Whether `node` admits nothing on its face: `false`, no type left, no value left, a union
/// none of whose branches admits anything.
fn plainly_nothing(node: &Node) -> bool {
    match &node.kind {
        Kind::Nothing => true,
        Kind::Facts(facts) => {
            facts.types.as_ref().is_some_and(BTreeSet::is_empty)
                || facts
                    .values
                    .as_ref()
                    .is_some_and(|values| values.iter().next().is_none())
                || facts
                    .union
                    .as_ref()
                    .is_some_and(|union| union.branches.iter().all(plainly_nothing))
        }
        _ => false,
    }
}

/// Whether no value of `a` can be of a JSON type a value of `b` can be (integers counted as
/// numbers): then no value is admitted by both.
pub fn no_type_in_common(a: &Node, b: &Node) -> bool {
    JsonType::CATEGORIES
        .into_iter()
        .all(|kind| !(may_take(a, kind) && may_take(b, kind)))
}

/// Whether a value of `node` may be of one of `kinds`; `true` where the model cannot say, but a
/// recursion closing answers for the types its target can take.
fn takes_any_of(node: &Node, kinds: &[JsonType]) -> bool {
    match &node.kind {
        Kind::Nothing => false,
        Kind::Any => true,
        Kind::Unknown { raw, .. } => closing_types(raw).is_none_or(|types| {
            let typed = Facts {
                types: Some(types),
                ..Facts::new(&node.at)
            };
            takes_any(&typed, kinds)
        }),
        Kind::Facts(facts) => takes_any(facts, kinds),
    }
}

/// The types a recursion closing's target can take, as the normalizer read them from it.
fn closing_types(raw: &Value) -> Option<BTreeSet<JsonType>> {
    if raw[CLOSES_RECURSION] != Value::Bool(true) {
        return None;
    }
    raw[CLOSING_TYPES]
        .as_array()?
        .iter()
        .map(|name| name.as_str().and_then(JsonType::from_name))
        .collect()
}

/// Whether a value of `facts` can be of one of `kinds`: its `type` allows it, an `enum` or
/// `const` holds a value of it, and a `oneOf`/`anyOf` branch may take it.
fn takes_any(facts: &Facts, kinds: &[JsonType]) -> bool {
    kinds.iter().any(|kind| {
        facts.allows_type(*kind)
            && facts.values.as_ref().is_none_or(|values| {
                values
                    .iter()
                    .any(|value| JsonType::of(value).contains(kind))
            })
            && facts.union.as_ref().is_none_or(|union| {
                union
                    .branches
                    .iter()
                    .any(|branch| takes_any_of(branch, &[*kind]))
            })
    })
}

/// The canonical form of one node's facts: a keyword of a type no value of the node can have
/// constrains nothing, so it is dropped (a `uniqueItems` beside a `const` string, a `format`
/// on an object whose `oneOf` branches are all objects), and an `enum` value the node's
/// `type` refuses is no value of it. Two versions that differ only there are then equal, as
/// the gate finds them; the result admits exactly what `facts` admits.
pub(super) fn tidy(facts: &mut Facts) {
    // A union branch is read only on values of the node's own types: a branch that also takes
    // others is narrowed to them (which leaves how many branches a value matches as it was), so
    // an edit to what no value of the node can be is no change.
    let others: Vec<JsonType> = JsonType::ALL
        .into_iter()
        .filter(|kind| !facts.allows_type(*kind))
        .collect();
    if let (Some(types), Some(union)) = (facts.types.clone(), facts.union.as_mut())
        && union
            .branches
            .iter()
            .any(|branch| takes_any_of(branch, &others))
    {
        let at = union.branches[0].at.clone();
        let typed = Node {
            kind: Kind::Facts(Arc::new(Facts {
                types: Some(types),
                ..Facts::new(&at)
            })),
            at,
        };
        for branch in &mut union.branches {
            if takes_any_of(branch, &others) {
                *branch = intersect(branch, &typed);
            }
        }
    }
    // A value of a type no union branch takes is refused by the union, so it is no value of
    // the node either (an `enum: [null]` from a `patternProperties` beside a `$ref` to a union
    // of objects: random pair 105).
    let typed = |value: &Value| {
        JsonType::of(value).iter().any(|kind| {
            facts.allows_type(*kind)
                && facts.union.as_ref().is_none_or(|union| {
                    union
                        .branches
                        .iter()
                        .any(|branch| takes_any_of(branch, &[*kind]))
                })
        })
    };
    // Rebuilt only when a value goes: an enum can be large.
    if let Some(values) = &facts.values
        && !values.iter().all(typed)
    {
        let kept = values
            .iter()
            .filter(|value| typed(value))
            .cloned()
            .collect();
        facts.values = Some(Values::new(kept));
    }
    if !takes_any(facts, &[JsonType::String]) {
        facts.format = None;
        facts.strings = Default::default();
    }
    if !takes_any(facts, &[JsonType::Number, JsonType::Integer]) {
        facts.minimum = None;
        facts.maximum = None;
        facts.multiple_of = None;
    }
    if !takes_any(facts, &[JsonType::Array]) {
        *facts.items = Node::any(&facts.items.at);
        facts.min_items = 0;
        facts.max_items = None;
        facts.unique_items = false;
        for name in [
            "prefixItems",
            "items",
            "contains",
            "minContains",
            "maxContains",
        ] {
            facts.conjuncts.remove(name);
        }
    }
    if !takes_any(facts, &[JsonType::Object]) {
        facts.properties.clear();
        facts.pattern_properties.clear();
        facts.required.clear();
        *facts.additional = Node::any(&facts.additional.at);
        *facts.property_names = Node::any(&facts.property_names.at);
        facts.min_properties = 0;
        facts.max_properties = None;
        for name in ["dependentRequired", "dependentSchemas"] {
            facts.conjuncts.remove(name);
        }
    }
    settle_dependent_required(facts);
}

/// `dependentRequired` read against the members the object always or never has: a member that
/// is always present (required) makes its dependents required, and one that can never be
/// present (the object forbids it) requires nothing. What is left stays kept as written; a
/// keyword with nothing left goes, so that adding one about a forbidden member is no change.
fn settle_dependent_required(facts: &mut Facts) {
    let Some(entries) = facts
        .dependent_required()
        .filter(|entries| !entries.is_empty())
    else {
        return;
    };
    let mut required = facts.required.clone();
    loop {
        let before = required.len();
        for (name, needed) in &entries {
            if required.contains(name) {
                required.extend(needed.iter().cloned());
            }
        }
        if required.len() == before {
            break;
        }
    }
    let may_be_present = |name: &str| {
        facts.member(name).kind != Kind::Nothing
            && admits(&facts.property_names, &Value::from(name)) != Ok(false)
            && !facts.union.as_ref().is_some_and(|union| {
                union
                    .branches
                    .iter()
                    .all(|branch| never_holds_member(branch, name))
            })
    };
    let left: serde_json::Map<String, Value> = entries
        .iter()
        .filter(|(name, needed)| {
            !required.contains(name.as_str())
                && may_be_present(name)
                && !needed.iter().all(|other| required.contains(other))
        })
        .map(|(name, needed)| (name.clone(), Value::from(needed.clone())))
        .collect();
    facts.required = required;
    if left.is_empty() {
        facts.conjuncts.remove("dependentRequired");
    } else if left.len() < entries.len()
        && let Some(kept) = facts.conjuncts.get_mut("dependentRequired")
    {
        kept.value = Value::Object(left);
    }
}

/// Whether no value `node` admits is an object with the member `name`: it admits nothing, no
/// object, an object that forbids the member (by its schema or `propertyNames`), or only
/// union branches that each do. A `dependentRequired` beside a `$ref` to a union of closed
/// objects is read through the branches so (random pairs 1021, 1230: one about a member no
/// branch declares was a change nothing could show).
fn never_holds_member(node: &Node, name: &str) -> bool {
    let facts = match &node.kind {
        Kind::Nothing => return true,
        Kind::Facts(facts) => facts,
        Kind::Any | Kind::Unknown { .. } => return false,
    };
    !facts.allows_type(JsonType::Object)
        || facts.member(name).kind == Kind::Nothing
        || admits(&facts.property_names, &Value::from(name)) == Ok(false)
        || facts.union.as_ref().is_some_and(|union| {
            union
                .branches
                .iter()
                .all(|branch| never_holds_member(branch, name))
        })
}

/// What an unknown conjunction of `a` and `b` holds: both parts' fingerprints, so an edit to
/// either part changes it (the model cannot combine them, but it must not call them unchanged).
fn both(a: &Node, b: &Node) -> Value {
    Value::from(vec![
        Value::from(fingerprint(a)),
        Value::from(fingerprint(b)),
    ])
}

/// Whether `node` admits `value`; `Err` with the reason when the model cannot tell.
pub fn admits(node: &Node, value: &Value) -> Result<bool, Undecided> {
    let facts = match &node.kind {
        Kind::Any => return Ok(true),
        Kind::Nothing => return Ok(false),
        Kind::Unknown { reason, .. } => {
            return Err(Undecided::new(format!("{} uses {reason}", node.at)));
        }
        Kind::Facts(facts) => facts,
    };
    if !JsonType::of(value)
        .iter()
        .any(|kind| facts.allows_type(*kind))
    {
        return Ok(false);
    }
    if let Some(values) = &facts.values
        && !values.contains(value)
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
                    None => {
                        return Err(Undecided::new(format!(
                            "{} uses the unknown format {format:?}",
                            node.at
                        )));
                    }
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
                if !admits(&facts.property_names, &Value::from(name.as_str()))?
                    || !admits(&facts.member(name), member)?
                {
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
    // Everything the model reads admits it; a kept keyword may still refuse it.
    if let Some((name, conjunct)) = facts.conjuncts.iter().next() {
        return Err(Undecided::new(format!(
            "{} uses `{name}`, which the differ does not model",
            conjunct.at
        )));
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
