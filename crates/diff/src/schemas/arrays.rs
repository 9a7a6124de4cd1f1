//! Arrays compared: items, a prefix position by position, item and `contains` counts.

use super::kept::{avoided, kept_node, node_order, pinned_probe};
use super::*;

impl Walk<'_> {
    /// `minContains`/`maxContains` changed: how many items must match `contains`. Where both
    /// versions keep the same `contains`, one version's counts within the other's admit no
    /// array it refuses by them, and an array with a count only one admits shows the rest.
    pub(super) fn contains_counts(
        &mut self,
        path: &str,
        from: &Node,
        to: &Node,
        a: &Facts,
        b: &Facts,
    ) {
        fn count_of(facts: &Facts) -> [Option<&Conjunct>; 2] {
            ["minContains", "maxContains"].map(|name| facts.conjuncts.get(name))
        }
        let (before, after) = (count_of(a), count_of(b));
        if before == after {
            return;
        }
        // Named at the first count that changed, as written in TO where it is.
        let Some(written) = before
            .into_iter()
            .zip(after)
            .find(|(before, after)| before != after)
            .and_then(|(before, after)| after.or(before))
        else {
            return;
        };
        let why = "a change to minContains/maxContains the model cannot order; review it by hand";
        let (counts_a, counts_b) = (contains_counts(a), contains_counts(b));
        let change = Change::new(
            "contains_count_changed",
            match (counts_a, counts_b) {
                (Some(x), Some(y)) => format!(
                    "{}: the number of items `contains` must match changed from {} to {}",
                    shown(path),
                    range(x),
                    range(y)
                ),
                _ => format!(
                    "{}: the number of items `contains` must match changed",
                    shown(path)
                ),
            },
            &written.at.file,
            &written.at.pointer,
        );
        let same_contains = a.conjuncts.get("contains") == b.conjuncts.get("contains");
        // Whether every array `x` admits has a count `y` admits: `y` counts nothing without a
        // `contains` (the counts alone constrain nothing), `x` may admit no array at all, or
        // with the same `contains`, `x`'s counts lie within `y`'s.
        let within = |x: &Facts, y: &Facts| match (contains_counts(x), contains_counts(y)) {
            (_, None) if !y.conjuncts.contains_key("contains") => true,
            _ if no_array_counts(x) => true,
            (Some((x_min, x_max)), Some((y_min, y_max))) => {
                same_contains
                    && x_min >= y_min
                    && y_max.is_none_or(|most| x_max.is_some_and(|max| max <= most))
            }
            _ => false,
        };
        // Refusing by the counts: shown by an array of a count only `node` admits.
        let effect = |within: bool, node: &Node, other: &Facts| match within {
            true => Effect::No,
            false => {
                count_probe(path, node, other).unwrap_or_else(|| Effect::Unknown(why.to_owned()))
            }
        };
        let forward = effect(within(a, b), from, b);
        let backward = effect(within(b, a), to, a);
        self.record(change, path, forward, backward);
    }

    /// A `prefixItems` kept in either version, with what is past it (its `items`, or the
    /// other version's plain `items`): ordered position by position by what each admits.
    pub(super) fn prefix(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
        let (before, after) = (
            a.conjuncts.get("prefixItems"),
            b.conjuncts.get("prefixItems"),
        );
        let Some(written) = after.or(before) else {
            return;
        };
        if before == after && a.conjuncts.get("items") == b.conjuncts.get("items") {
            return;
        }
        let (change, why) = unsupported(
            "`prefixItems` changed so that the model cannot order the two versions' items",
            &written.at,
        );
        let (before_positions, after_positions) = (positions(a), positions(b));
        // Refusing by the items: shown by an array with one position only `node` admits.
        let shown = |node: &Node, side: &Option<Positions>, other: &Option<Positions>| {
            side.as_ref()
                .zip(other.as_ref())
                .and_then(|(side, other)| prefix_probe(path, node, side, other))
                .unwrap_or_else(|| Effect::Unknown(why.clone()))
        };
        let forward = || shown(from, &before_positions, &after_positions);
        let backward = || shown(to, &after_positions, &before_positions);
        let (forward, backward) =
            match prefix_order(before_positions.clone(), after_positions.clone()) {
                Some(Ordering::Less) => (forward(), Effect::No),
                Some(Ordering::Greater) => (Effect::No, backward()),
                Some(Ordering::Equal) => (Effect::No, Effect::No),
                None => (forward(), backward()),
            };
        self.record(change, path, forward, backward);
    }

    pub(super) fn arrays(&mut self, path: &str, _from: &Node, to: &Node, a: &Facts, b: &Facts) {
        // Where either version keeps a `prefixItems`, its items are compared with it.
        if !(a.conjuncts.contains_key("prefixItems") || b.conjuncts.contains_key("prefixItems")) {
            self.node(&format!("{path}/*"), &a.items, &b.items);
        }
        if (a.min_items, a.max_items) != (b.min_items, b.max_items) {
            let count = |facts: &Facts| (facts.min_items, facts.max_items);
            let forward = count_effect(path, count(a), count(b));
            let backward = count_effect(path, count(b), count(a));
            let tighter = b.min_items >= a.min_items
                && b.max_items.unwrap_or(u64::MAX) <= a.max_items.unwrap_or(u64::MAX);
            let change = Change::new(
                if tighter {
                    "items_tightened"
                } else {
                    "items_loosened"
                },
                format!(
                    "{}: items allowed changed from {} to {}",
                    shown(path),
                    range(count(a)),
                    range(count(b))
                ),
                &to.at.file,
                &to.at.pointer,
            );
            self.record(change, path, forward, backward);
        }
        if a.unique_items != b.unique_items {
            // uniqueItems only ever removes arrays with a repeated item: the version without it
            // admits more, never less, and an array of the smallest length at least 2 both
            // allow, its items repeated, shows it (a repeated item needs two).
            let repeated = |facts: &Facts| {
                let length = facts.min_items.max(2);
                if facts.max_items.is_some_and(|max| max < length) {
                    return Effect::No;
                }
                Effect::Yes(Probe {
                    path: path.to_owned(),
                    edit: Edit::Repeat(
                        usize::try_from(length).unwrap_or(usize::MAX),
                        Box::new(facts.items.as_ref().clone()),
                    ),
                    adapt_context: true,
                    shape: None,
                })
            };
            let (forward, backward) = if b.unique_items {
                (repeated(a), Effect::No)
            } else {
                (Effect::No, repeated(b))
            };
            let change = Change::new(
                "unique_items_changed",
                format!(
                    "{}: uniqueItems {}",
                    shown(path),
                    if b.unique_items { "added" } else { "removed" }
                ),
                &to.at.file,
                &to.at.pointer,
            );
            self.record(change, path, forward, backward);
        }
    }
}

/// The witness of a changed prefix: an array `node` admits (its items by `side`) with, at the
/// first position where one exists, a value `side` admits there and `other` refuses; the
/// positions before it, and any up to `minItems`, hold values of their own schemas (distinct
/// where `uniqueItems` asks). The gate decides it in both versions. `None` where the model
/// finds no such position or cannot build the rest.
pub(super) fn prefix_probe(
    path: &str,
    node: &Node,
    side: &Positions,
    other: &Positions,
) -> Option<Effect> {
    let facts = node.facts()?;
    let at = |positions: &Positions, index: usize| -> Node {
        positions.0.get(index).unwrap_or(&positions.1).clone()
    };
    let longest = side.0.len().max(other.0.len());
    let (index, refused) = (0..=longest)
        .take_while(|index| facts.max_items.is_none_or(|max| (*index as u64) < max))
        .find_map(|index| {
            let (here, there) = (at(side, index), at(other, index));
            match difference::difference(&here, &there, &there) {
                Ok(Some(value)) => Some((index, value)),
                _ => None,
            }
        })?;
    // The items before it are built around the witness, which `uniqueItems` may forbid them.
    let mut items = vec![refused];
    for earlier in 0..index {
        let item = example_avoiding(&at(side, earlier), &avoided(facts, &items))?;
        items.insert(earlier, item);
    }
    while (items.len() as u64) < facts.min_items {
        items.push(example_avoiding(
            &at(side, items.len()),
            &avoided(facts, &items),
        )?);
    }
    Some(pinned_probe(path, node, Value::Array(items)))
}

/// One version's items as a prefix and what is past it: a kept `prefixItems` with its kept
/// `items` (anything when not written), or no prefix and the plain `items`.
pub(super) fn positions(facts: &Facts) -> Option<Positions> {
    let Some(prefix) = facts.conjuncts.get("prefixItems") else {
        return Some((Vec::new(), (*facts.items).clone()));
    };
    let rest = facts.conjuncts.get("items").map_or_else(
        || Node::any(&prefix.at),
        |rest| rest.node.clone().unwrap_or_else(|| kept_node(&rest.value)),
    );
    Some((
        prefix.value.as_array()?.iter().map(kept_node).collect(),
        rest,
    ))
}

/// How two versions' items relate by what they admit, position by position (see
/// [`positions`]); past a prefix's end, an item is what is past it. `Less` where every position
/// of `after` admits no more than `before`'s, `Greater` the other way.
pub(super) fn prefix_order(
    before: Option<Positions>,
    after: Option<Positions>,
) -> Option<Ordering> {
    let ((before, before_rest), (after, after_rest)) = (before?, after?);
    let mut order = Ordering::Equal;
    // Every position either prefix names, then the rest past both.
    for index in 0..=before.len().max(after.len()) {
        let here = node_order(
            before.get(index).unwrap_or(&before_rest),
            after.get(index).unwrap_or(&after_rest),
        )?;
        order = match (order, here) {
            (Ordering::Equal, here) => here,
            (order, Ordering::Equal) => order,
            (order, here) if order == here => order,
            _ => return None,
        };
    }
    Some(order)
}

/// Whether no array can hold the items `facts`' `contains` must match: at least one must, and
/// no item `items` admits is of a type `contains` admits (or fewer items are allowed than must
/// match).
pub(super) fn no_array_counts(facts: &Facts) -> bool {
    let Some((min, _)) = contains_counts(facts) else {
        return false;
    };
    let Some(contains) = facts.conjuncts.get("contains") else {
        return false;
    };
    min >= 1
        && !facts.conjuncts.contains_key("prefixItems")
        && (no_type_in_common(&facts.items, &kept_node(&contains.value))
            || facts.max_items.is_some_and(|max| max < min))
}

/// The most items a witness for a changed count builds: a count past it is left to review.
pub(super) const COUNT_PROBE_ITEMS: u64 = 64;

/// The witness of a changed `minContains`/`maxContains`: an array `node` admits whose number
/// of items matching its `contains` is one `other`'s counts refuse, the fewest such. Its items
/// are built from `node`'s `items` (with the `contains` schema for those that match, and
/// values that schema refuses for the rest), each distinct where `uniqueItems` asks; the gate
/// decides it in both versions. `None` where the model cannot build one.
pub(super) fn count_probe(path: &str, node: &Node, other: &Facts) -> Option<Effect> {
    let facts = node.facts()?;
    if facts.conjuncts.contains_key("prefixItems") {
        return None;
    }
    let (min, max) = contains_counts(facts)?;
    let (other_min, other_max) = contains_counts(other)?;
    let refused = |count: u64| count < other_min || other_max.is_some_and(|max| count > max);
    let last = max
        .unwrap_or(u64::MAX)
        .min(facts.max_items.unwrap_or(u64::MAX))
        .min(COUNT_PROBE_ITEMS);
    let count = (min..=last).find(|count| refused(*count))?;
    let contains = kept_node(&facts.conjuncts.get("contains")?.value);
    let matching = intersect(&facts.items, &contains);
    let mut items: Vec<Value> = Vec::new();
    for _ in 0..count {
        items.push(example_avoiding(&matching, &avoided(facts, &items))?);
    }
    // Past the count, items the `contains` schema refuses, up to `minItems`.
    while (items.len() as u64) < facts.min_items {
        let avoid = avoided(facts, &items);
        let filler = toolgate_model::alternatives(&facts.items)
            .iter()
            .filter_map(|shape| example_avoiding(shape, &avoid))
            .find(|value| admits(&contains, value) == Ok(false))?;
        items.push(filler);
    }
    Some(pinned_probe(path, node, Value::Array(items)))
}
