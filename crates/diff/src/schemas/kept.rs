//! The keywords the model keeps beside a node (`not`, `dependentRequired`, an enum or const's
//! values, a pinned item list): how two versions' are ordered, and the values that show it.

use super::unions::branch_probe;
use super::*;

/// How a kept keyword's change moves what its value admits: `Less` when TO's `after` admits
/// no more than FROM's `before` (it narrows), `Greater` when no less, `Equal` when the same;
/// `None` when neither holds or the model cannot tell. `None` on a side means not written.
pub(super) fn narrowing(
    name: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<Ordering> {
    let count = |value: Option<&Value>, unwritten: Option<u64>| match value {
        None => Some(unwritten),
        Some(value) => value.as_u64().map(Some),
    };
    match name {
        // At least this many items match `contains` (1 when not written): more is narrower.
        "minContains" => {
            let (before, after) = (count(before, Some(1))??, count(after, Some(1))??);
            Some(before.cmp(&after))
        }
        // At most this many (no bound when not written): fewer is narrower.
        "maxContains" => {
            let (before, after) = (count(before, None)?, count(after, None)?);
            Some(match (before, after) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Less,
                (Some(_), None) => Ordering::Greater,
                (Some(before), Some(after)) => after.cmp(&before),
            })
        }
        // Each a further condition on the value (an `if` makes its `then`/`else` apply):
        // written where it was not, narrower; gone, wider.
        _ => match (before, after) {
            (None, None) => Some(Ordering::Equal),
            (None, Some(_)) => Some(Ordering::Less),
            (Some(_), None) => Some(Ordering::Greater),
            (Some(before), Some(after)) if name == "dependentRequired" => {
                let (before, after) = (dependent_pairs(before)?, dependent_pairs(after)?);
                match (after.is_superset(&before), after.is_subset(&before)) {
                    (true, true) => Some(Ordering::Equal),
                    (true, false) => Some(Ordering::Less),
                    (false, true) => Some(Ordering::Greater),
                    (false, false) => None,
                }
            }
            _ => None,
        },
    }
}

/// The file name a kept keyword's schema is modelled under, on its own: it is written without
/// a reference (see [`toolgate_model::CONJUNCTS`]), so it needs no other file.
pub(super) const KEPT_FILE: &str = "(kept keyword)";

/// A kept keyword's schema (`not`'s, `contains`') as the model reads it.
pub(super) fn kept_node(schema: &Value) -> Node {
    toolgate_model::Schemas::standalone(KEPT_FILE, schema)
}

/// The witness of a `not` whose schema admits more in one version (`narrower`, the `not`
/// that refuses more): a value of `node` (the other version) that schema admits, one the
/// other `not`'s schema refuses where the model finds one.
pub(super) fn not_probe(
    path: &str,
    node: &Node,
    narrower: &Value,
    wider: Option<&Value>,
) -> Effect {
    let refused = kept_node(narrower);
    // The kept keywords are left to the gate, which decides the witness in both versions
    // (the model builds no value of a node that keeps one).
    let mut unkept = node.clone();
    if let Kind::Facts(facts) = &mut unkept.kind {
        std::sync::Arc::make_mut(facts).conjuncts.clear();
    }
    let mut shape = intersect(&unkept, &refused);
    if let Some(wider) = wider {
        let admitted = kept_node(wider);
        if let Ok(Some(value)) = difference::difference(&refused, &admitted, &admitted) {
            let mut pinned = Facts::new(&node.at);
            pinned.values = Some(toolgate_model::Values::new(vec![value]));
            let pinned = Node {
                at: node.at.clone(),
                kind: Kind::Facts(std::sync::Arc::new(pinned)),
            };
            shape = intersect(&shape, &pinned);
        }
    }
    branch_probe(path, &shape)
}

/// How two kept keywords' schemas relate by what they admit: `Less` where `after` admits
/// less than `before`, `Greater` more, `Equal` the same; `None` where neither holds the
/// other, or the model cannot tell.
pub(super) fn admitted_order(before: &Value, after: &Value) -> Option<Ordering> {
    node_order(&kept_node(before), &kept_node(after))
}

/// How two nodes relate by what they admit (as [`admitted_order`]).
pub(super) fn node_order(before: &Node, after: &Node) -> Option<Ordering> {
    let within = |a: &Node, b: &Node| matches!(difference::difference(a, b, b), Ok(None));
    match (within(after, before), within(before, after)) {
        (true, true) => Some(Ordering::Equal),
        (true, false) => Some(Ordering::Less),
        (false, true) => Some(Ordering::Greater),
        (false, false) => None,
    }
}

/// The values a further item of an array built so far (`items`) must differ from: all of
/// them where `uniqueItems` asks, else none.
pub(super) fn avoided(facts: &Facts, items: &[Value]) -> Vec<Value> {
    if facts.unique_items {
        items.to_vec()
    } else {
        Vec::new()
    }
}

/// The probe that sets the value at `path` to `value` (a witness the model built), to be
/// decided by the gate in both versions.
pub(super) fn pinned_probe(path: &str, node: &Node, value: Value) -> Effect {
    let mut pinned = Facts::new(&node.at);
    pinned.values = Some(toolgate_model::Values::new(vec![value]));
    branch_probe(
        path,
        &Node {
            at: node.at.clone(),
            kind: Kind::Facts(std::sync::Arc::new(pinned)),
        },
    )
}

/// A `dependentRequired` value as (member, member it requires) pairs.
pub(super) fn dependent_pairs(value: &Value) -> Option<BTreeSet<(String, String)>> {
    let mut pairs = BTreeSet::new();
    for (member, needed) in value.as_object()? {
        for other in needed.as_array()? {
            pairs.insert((member.clone(), other.as_str()?.to_owned()));
        }
    }
    Some(pairs)
}

/// The witness of a `dependentRequired` pair `narrower` has and `wider` does not: a value of
/// `node` (the version without the pair) holding the member and not the one it requires.
pub(super) fn dependent_probe(
    path: &str,
    node: &Node,
    narrower: Option<&Value>,
    wider: Option<&Value>,
) -> Option<Effect> {
    let empty = Value::Object(Default::default());
    let narrower = dependent_pairs(narrower?)?;
    let wider = dependent_pairs(wider.unwrap_or(&empty))?;
    let (member, needed) = narrower.difference(&wider).next()?;
    let mut shape = Facts::new(&node.at);
    shape.types = Some(BTreeSet::from([JsonType::Object]));
    shape.required.insert(member.clone());
    shape.properties.insert(
        needed.clone(),
        Node {
            at: node.at.clone(),
            kind: Kind::Nothing,
        },
    );
    let shape = Node {
        at: node.at.clone(),
        kind: Kind::Facts(std::sync::Arc::new(shape)),
    };
    Some(branch_probe(path, &intersect(node, &shape)))
}
