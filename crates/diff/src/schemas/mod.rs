//! Comparing two versions of one shape's schema, node by node along the response's structure:
//! every difference becomes a [`Change`] whose effect on each verdict is decided on the model
//! (exactly, or `Unknown` with the reason), with a probe that builds a witness for a `Yes`. The
//! walk is here; what one node says about the value itself is `leaf.rs`; the search for a value
//! one node admits and the other refuses is `difference.rs`.

mod difference;
mod leaf;
mod project;

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::Value;
use toolgate_model::{
    Conjunct, Facts, JsonType, Kind, Node, admits, example_avoiding, intersect, no_type_in_common,
    of_type, same_value,
};

use crate::change::{BumpVerdict, Change, Edit, Effect, Probe, Side};

use leaf::{count_effect, leaf_changes, leaf_effect, value_effect};

/// What a walk knows about the shape it compares.
#[derive(Debug, Clone)]
pub(crate) struct ShapeContext {
    /// The shape's name (`current`, or a legacy shape's).
    pub shape: String,
    /// The response pointers its promised fields are read from, in either version.
    pub promised: Vec<String>,
    /// Every pointer whose value shapes what the agent is told: the promised fields', and the
    /// outcome, failure code and correlation members the gate reads beside them.
    pub observed: Vec<String>,
    /// The pointers a success of FROM and of TO must hold (fields not marked optional, and
    /// fields a rule reads): a response without one is rejected at projection or by the rule,
    /// whatever the schema says about the member.
    pub projected: (Vec<String>, Vec<String>),
}

/// Compares `from` and `to` (one shape's schema in each version), adding a change per
/// difference.
pub(crate) fn compare(from: &Node, to: &Node, context: &ShapeContext, out: &mut Vec<Change>) {
    Walk {
        context,
        out,
        roots: (from, to),
    }
    .node("", from, to);
}

struct Walk<'c> {
    context: &'c ShapeContext,
    out: &'c mut Vec<Change>,
    /// Both versions' whole schemas, to ask whether a place still admits any value.
    roots: (&'c Node, &'c Node),
}

/// Settles `changes`, all at or below the place where `from` and `to` are compared: where the
/// whole nodes show a direction changes nothing, no change says otherwise in that direction, for
/// upstream or for the agent (a set of responses inside the other's projects to outputs inside
/// the other's). A part compared on its own may claim what the whole takes back.
pub(crate) fn settle(changes: &mut [Change], from: &Node, to: &Node) {
    let open = |changes: &[Change], verdicts: [BumpVerdict; 2]| {
        changes.iter().any(|change| {
            verdicts
                .iter()
                .any(|verdict| !matches!(change.effect(*verdict), Effect::No))
        })
    };
    let directions = [
        (
            [BumpVerdict::UpstreamBreaking, BumpVerdict::AgentNarrowed],
            from,
            to,
        ),
        (
            [BumpVerdict::UpstreamLoosened, BumpVerdict::AgentWidened],
            to,
            from,
        ),
    ];
    for (verdicts, admitting, other) in directions {
        if open(changes, verdicts) && difference::difference(admitting, other, other) == Ok(None) {
            for change in changes.iter_mut() {
                for verdict in verdicts {
                    change.set(verdict, Effect::No);
                }
            }
        }
    }
}

/// Whether every response shape `root` admits can still fill the place at `path` (`*` for any
/// item): by leaving it out (a member not required, an item of an array that may be empty), or
/// with a value the model builds and checks; through every branch of a union. `false` when that
/// cannot be shown (an unknown node, a value the model cannot build).
fn admits_something(root: &Node, path: &str) -> bool {
    let tokens: Vec<String> = path
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    fillable(root, &tokens)
}

fn fillable(node: &Node, tokens: &[String]) -> bool {
    let Some((token, rest)) = tokens.split_first() else {
        return toolgate_model::example(node, None).is_some();
    };
    let Some(facts) = node.facts() else {
        return node.kind == Kind::Any;
    };
    if facts.union.is_some() {
        return toolgate_model::alternatives(node)
            .iter()
            .all(|branch| fillable(branch, tokens));
    }
    let (may_be_absent, child) = if token == "*" {
        (
            facts.min_items == 0,
            std::borrow::Cow::Borrowed(&*facts.items),
        )
    } else {
        (!facts.required.contains(token), facts.member(token))
    };
    may_be_absent || fillable(&child, rest)
}

/// How a response pointer relates to the promised fields.
enum Relation {
    /// At or inside a promised value: what it admits is what the agent may see.
    Promised,
    /// Above a promised value: it decides whether the value is there at all.
    Above,
    /// Elsewhere: never projected.
    Unpromised,
}

/// A member name neither version declares and both versions' `propertyNames` admit, for the
/// probes of a change to `additionalProperties`: `toolgate_unpromised` where it fits, else one
/// the model draws from `propertyNames` (a map whose keys are bounded refused the fixed name,
/// and every verdict on a change to its values was left undecided).
fn fresh_member(a: &Facts, b: &Facts) -> String {
    const PREFERRED: &str = "toolgate_unpromised";
    let fits = |name: &Value| {
        name.as_str().is_some_and(|text| {
            !a.properties.contains_key(text) && !b.properties.contains_key(text)
        }) && admits(&a.property_names, name) == Ok(true)
            && admits(&b.property_names, name) == Ok(true)
    };
    let preferred = Value::from(PREFERRED);
    if fits(&preferred) {
        return PREFERRED.to_owned();
    }
    let declared: Vec<Value> = a
        .properties
        .keys()
        .chain(b.properties.keys())
        .map(|name| Value::from(name.as_str()))
        .collect();
    [&a.property_names, &b.property_names]
        .into_iter()
        .filter_map(|names| example_avoiding(names, &declared))
        .find(|name| fits(name))
        .and_then(|name| name.as_str().map(str::to_owned))
        .unwrap_or_else(|| PREFERRED.to_owned())
}

fn tokens(pointer: &str) -> Vec<&str> {
    pointer.split('/').skip(1).collect()
}

fn prefix_of(prefix: &[&str], of: &[&str]) -> bool {
    prefix.len() <= of.len()
        && prefix
            .iter()
            .zip(of)
            .all(|(p, q)| p == q || *p == "*" || *q == "*")
}

impl Walk<'_> {
    fn relation(&self, path: &str) -> Relation {
        let here = tokens(path);
        let mut above = false;
        for promised in &self.context.promised {
            let promised = tokens(promised);
            if prefix_of(&promised, &here) {
                return Relation::Promised;
            }
            above |= prefix_of(&here, &promised);
        }
        if above {
            Relation::Above
        } else {
            Relation::Unpromised
        }
    }

    /// Records a change at `path` whose upstream effects are `forward` (FROM admits what TO
    /// refuses: breaking) and `backward` (loosened); the agent effects follow from where `path`
    /// is relative to the promised fields.
    /// Records a change the model cannot decide in either direction, and why.
    fn record_undecided(&mut self, change: Change, path: &str, why: String) {
        self.record(
            change,
            path,
            Effect::Unknown(why.clone()),
            Effect::Unknown(why),
        );
    }

    fn record(&mut self, change: Change, path: &str, forward: Effect, backward: Effect) {
        let relation = self.relation(path);
        self.record_as(relation, change, path, forward, backward);
    }

    /// How the members `additionalProperties` governs at `path` (`a`'s and `b`'s object there)
    /// relate to the promised fields: as the fresh member `member` does, and, for a field that
    /// reads a member either version leaves undeclared, as that member does: the value the
    /// field reads is one this schema decides.
    fn additional_relation(&self, path: &str, member: &str, a: &Facts, b: &Facts) -> Relation {
        let mut relation = self.relation(member);
        if matches!(relation, Relation::Promised) {
            return relation;
        }
        let here = tokens(path);
        for promised in &self.context.promised {
            let promised = tokens(promised);
            let Some(next) = promised.get(here.len()) else {
                continue;
            };
            if !prefix_of(&here, &promised) {
                continue;
            }
            let name = next.replace("~1", "/").replace("~0", "~");
            let undeclared = *next == "*"
                || !a.properties.contains_key(&name)
                || !b.properties.contains_key(&name);
            if !undeclared {
                continue;
            }
            if promised.len() == here.len() + 1 {
                return Relation::Promised;
            }
            relation = Relation::Above;
        }
        relation
    }

    fn record_as(
        &mut self,
        relation: Relation,
        change: Change,
        path: &str,
        forward: Effect,
        backward: Effect,
    ) {
        let (widened, narrowed) = match relation {
            Relation::Promised => (backward.clone(), forward.clone()),
            // A place no field reads changes no output the agent can see, as long as it still
            // admits some value: a required place that admits nothing empties the whole set of
            // responses, and with it every output.
            Relation::Unpromised => {
                let unseen = |effect: &Effect, root: &Node| match effect {
                    Effect::No => Effect::No,
                    _ if admits_something(root, path) => Effect::No,
                    _ => Effect::Unknown(format!(
                        "{} may admit no value in one version, which would leave the agent no output at all",
                        shown(path)
                    )),
                };
                (
                    unseen(&backward, self.roots.0),
                    unseen(&forward, self.roots.1),
                )
            }
            Relation::Above => {
                let unknown = |effect: &Effect| match effect {
                    Effect::No => Effect::No,
                    _ => Effect::Unknown(format!(
                        "{} holds a promised field; whether the agent can see the difference depends on values the model cannot enumerate",
                        shown(path)
                    )),
                };
                (unknown(&backward), unknown(&forward))
            }
        };
        let mut change = change.at(path);
        change.shape = Some(self.context.shape.clone());
        self.out.push(
            change
                .with(BumpVerdict::UpstreamBreaking, forward)
                .with(BumpVerdict::UpstreamLoosened, backward)
                .with(BumpVerdict::AgentWidened, widened)
                .with(BumpVerdict::AgentNarrowed, narrowed),
        );
    }

    fn node(&mut self, path: &str, from: &Node, to: &Node) {
        if from == to || closes_same_recursion(from, to) {
            return;
        }
        let start = self.out.len();
        self.node_inner(path, from, to);
        self.settle_for_the_agent(path, from, to, start);
    }

    /// The agent verdicts the changes from `start` on (all at or below `path`) leave open,
    /// where `path` holds promised fields: settled where the two versions' values there, cut
    /// down to what the agent can tell apart ([`project::cut`]), include one another (TO's cut
    /// in FROM's: nothing below widens what the agent sees; FROM's in TO's: nothing narrows it).
    fn settle_for_the_agent(&mut self, path: &str, from: &Node, to: &Node, start: usize) {
        let open = |changes: &[Change], verdict: BumpVerdict| {
            changes
                .iter()
                .any(|change| matches!(change.effect(verdict), Effect::Unknown(_)))
        };
        let changes = &self.out[start..];
        let (widened, narrowed) = (
            open(changes, BumpVerdict::AgentWidened),
            open(changes, BumpVerdict::AgentNarrowed),
        );
        if !(widened || narrowed) || !matches!(self.relation(path), Relation::Above) {
            return;
        }
        let here = tokens(path);
        let rests: Vec<Vec<String>> = self
            .context
            .observed
            .iter()
            .map(|pointer| tokens(pointer))
            .filter(|pointer| prefix_of(&here, pointer))
            .map(|pointer| {
                pointer[here.len()..]
                    .iter()
                    .map(|token| token.replace("~1", "/").replace("~0", "~"))
                    .collect()
            })
            .collect();
        let Some((before, after)) = project::cut(from, &rests).zip(project::cut(to, &rests)) else {
            return;
        };
        let included = |a: &Node, b: &Node| difference::difference(a, b, b) == Ok(None);
        let settled = [
            (
                BumpVerdict::AgentWidened,
                widened && included(&after, &before),
            ),
            (
                BumpVerdict::AgentNarrowed,
                narrowed && included(&before, &after),
            ),
        ];
        for change in &mut self.out[start..] {
            for (verdict, shown) in settled {
                if shown && matches!(change.effect(verdict), Effect::Unknown(_)) {
                    change.set(verdict, Effect::No);
                }
            }
        }
    }

    fn node_inner(&mut self, path: &str, from: &Node, to: &Node) {
        match (&from.kind, &to.kind) {
            (Kind::Facts(a), Kind::Facts(b)) => {
                let start = self.out.len();
                self.facts(path, from, to, a, b);
                // Each part was compared on its own (the members beside the union, then the
                // branches), and a part's "yes" may be one the union takes back (a member the
                // node's own keywords admit that no branch declares, under
                // `unevaluatedProperties`).
                if a.union.is_some() || b.union.is_some() {
                    settle(&mut self.out[start..], from, to);
                }
            }
            (Kind::Unknown { reason, .. }, _) | (_, Kind::Unknown { reason, .. }) => {
                let (change, why) = unsupported(reason, &to.at);
                self.record_undecided(change, path, why);
            }
            _ => {
                let forward = value_effect(path, from, to);
                let backward = value_effect(path, to, from);
                let change = Change::new(
                    "schema_replaced",
                    format!(
                        "the schema changed from {} to {}",
                        describe(from),
                        describe(to)
                    ),
                    &to.at.file,
                    &to.at.pointer,
                );
                self.record(change, path, forward, backward);
            }
        }
    }

    fn facts(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
        // A kept keyword the model does not decide, changed: nothing about this value can be
        // shown false, so every verdict it touches stays open (the rest is still compared, and
        // the search may still show a verdict true).
        let kept: BTreeSet<&String> = a.conjuncts.keys().chain(b.conjuncts.keys()).collect();
        self.prefix(path, from, to, a, b);
        self.contains_counts(path, from, to, a, b);
        for name in kept {
            // Read together with the items, by `prefix` above; the counts, by
            // `contains_counts`.
            if matches!(
                name.as_str(),
                "prefixItems" | "items" | "minContains" | "maxContains"
            ) {
                continue;
            }
            let (before, after) = (a.conjuncts.get(name), b.conjuncts.get(name));
            let Some(written) = after.or(before).filter(|_| before != after) else {
                continue;
            };
            let reason = format!("`{name}`, which the differ does not model");
            let (change, why) = unsupported(&reason, &written.at);
            // The direction a monotone change can refuse in: shown by its own probe where it
            // has one, else left open.
            let shown = |node: &Node, narrower: Option<&Conjunct>, wider: Option<&Conjunct>| {
                let (narrower, wider) = (
                    narrower.map(|kept| &kept.value),
                    wider.map(|kept| &kept.value),
                );
                match name.as_str() {
                    "dependentRequired" => dependent_probe(path, node, narrower, wider),
                    "not" => narrower.map(|inner| not_probe(path, node, inner, wider)),
                    _ => None,
                }
                .unwrap_or_else(|| Effect::Unknown(why.clone()))
            };
            // `contains` is monotone in its schema only while no `maxContains` counts its
            // matches (a wider `contains` matches more items, which a maximum may refuse).
            let counted = name == "contains"
                && (a.conjuncts.contains_key("maxContains")
                    || b.conjuncts.contains_key("maxContains"));
            let order = match (name.as_str(), before, after) {
                ("not" | "contains", Some(before), Some(after)) if !counted => {
                    let order = admitted_order(&before.value, &after.value);
                    // A wider inner schema narrows `not` and widens `contains`.
                    if name == "not" {
                        order.map(Ordering::reverse)
                    } else {
                        order
                    }
                }
                // A `not` written in one version only, whose schema shares no value with the
                // node (another type, listed values the node refuses): it refuses nothing.
                ("not", None, Some(only)) | ("not", Some(only), None)
                    if difference::shared_with_not(
                        if before.is_some() { to } else { from },
                        &only.value,
                    ) == Some(None) =>
                {
                    Some(Ordering::Equal)
                }
                _ => narrowing(
                    name,
                    before.map(|kept| &kept.value),
                    after.map(|kept| &kept.value),
                ),
            };
            let (forward, backward) = match order {
                // Narrowed, TO admits nothing new by it; widened, TO refuses nothing FROM
                // admits by it; anything else, either.
                Some(Ordering::Less) => (shown(from, after, before), Effect::No),
                Some(Ordering::Greater) => (Effect::No, shown(to, before, after)),
                Some(Ordering::Equal) => (Effect::No, Effect::No),
                None => (Effect::Unknown(why.clone()), Effect::Unknown(why)),
            };
            self.record(change, path, forward, backward);
        }
        let leaf_kinds = leaf_changes(a, b);
        if !leaf_kinds.is_empty() {
            let forward = leaf_effect(path, from, to);
            let backward = leaf_effect(path, to, from);
            for (kind, description, keyword) in leaf_kinds {
                let pointer = format!("{}/{keyword}", to.at.pointer);
                let change = Change::new(kind, description, &to.at.file, &pointer);
                self.record(change, path, forward.clone(), backward.clone());
            }
        }
        // Members and items constrain objects and arrays only: where either version takes
        // none, they decide nothing (the type change that makes it so is a leaf change above).
        let both = |kind: JsonType| a.allows_type(kind) && b.allows_type(kind);
        if both(JsonType::Object) {
            self.members(path, to, a, b);
        }
        if both(JsonType::Array) {
            self.arrays(path, from, to, a, b);
        }
        self.unions(path, from, to, a, b);
    }

    /// `minContains`/`maxContains` changed: how many items must match `contains`. Where both
    /// versions keep the same `contains`, one version's counts within the other's admit no
    /// array it refuses by them, and an array with a count only one admits shows the rest.
    fn contains_counts(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
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
    fn prefix(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
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

    fn members(&mut self, path: &str, to: &Node, a: &Facts, b: &Facts) {
        // `required` may name members `properties` does not declare (they are then whatever
        // `additionalProperties` allows): every name either version mentions is compared.
        let names: BTreeSet<&String> = a
            .properties
            .keys()
            .chain(b.properties.keys())
            .chain(&a.required)
            .chain(&b.required)
            .collect();
        let mut removed = Vec::new();
        let mut added = Vec::new();
        for name in names {
            let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
            match (a.properties.get(name), b.properties.get(name)) {
                (Some(x), Some(y)) => {
                    self.node(&member, x, y);
                    self.presence(&member, name, to, a, b);
                }
                (Some(_), None) => removed.push(name.clone()),
                (None, Some(_)) => added.push(name.clone()),
                // Undeclared in both: its schema is the additional one (compared below), and
                // only whether it is required can differ here.
                (None, None) => self.presence(&member, name, to, a, b),
            }
        }
        // A property removed and another added with the same schema and requiredness is a
        // rename; report it as one change.
        let mut renamed = Vec::new();
        for old in &removed {
            let twin = added.iter().find(|new| {
                !renamed
                    .iter()
                    .any(|(_, taken): &(String, String)| taken == *new)
                    && a.properties[old] == b.properties[*new]
                    && a.required.contains(old) == b.required.contains(*new)
            });
            if let Some(new) = twin {
                renamed.push((old.clone(), new.clone()));
            }
        }
        for name in &removed {
            let partner = renamed
                .iter()
                .find(|(old, _)| old == name)
                .map(|(_, new)| new.clone());
            self.property(path, name, a, b, false, partner.as_deref());
        }
        for name in &added {
            if renamed.iter().any(|(_, new)| new == name) {
                continue;
            }
            self.property(path, name, a, b, true, None);
        }
        if a.additional != b.additional {
            let fresh = fresh_member(a, b);
            let member = format!("{path}/{fresh}");
            let forward = value_effect(&member, &a.additional, &b.additional);
            let backward = value_effect(&member, &b.additional, &a.additional);
            let (kind, words) = match (&a.additional.kind, &b.additional.kind) {
                (_, Kind::Nothing) => (
                    "object_closed",
                    "the object no longer admits members it does not declare",
                ),
                (Kind::Nothing, _) => (
                    "object_opened",
                    "the object now admits members it does not declare",
                ),
                _ => (
                    "additional_properties_changed",
                    "what undeclared members must be changed",
                ),
            };
            let change = Change::new(
                kind,
                format!("{}: {words}", shown(path)),
                &b.additional.at.file,
                &b.additional.at.pointer,
            );
            let relation = self.additional_relation(path, &member, a, b);
            self.record_as(relation, change, &member, forward, backward);
        }
        if a.pattern_properties != b.pattern_properties {
            self.patterns(path, to, a, b);
        }
        // Both constrain every member at once: a version whose allowed names (member counts)
        // lie within the other's refuses nothing the other admits by them. The direction that
        // can refuse is left to review (and the search): showing it needs a whole object.
        let one_way = |within: bool, why: &str| match within {
            true => Effect::No,
            false => Effect::Unknown(why.to_owned()),
        };
        if a.property_names != b.property_names {
            let why = "a change to propertyNames (what a map's keys may be); review it by hand";
            // A member name `x`'s objects may hold and `y` refuses, given a value `x` admits,
            // shows it: a closed object holds only the names it declares, so they are all.
            let names_effect = |x: &Facts, y: &Facts| {
                let with = |name: &str| match toolgate_model::example(&x.member(name), None) {
                    Some(value) => Effect::Yes(Probe::replace(
                        &format!("{path}/{}", name.replace('~', "~0").replace('/', "~1")),
                        value,
                    )),
                    None => Effect::Unknown(why.to_owned()),
                };
                if x.additional.kind == Kind::Nothing {
                    for name in x.properties.keys() {
                        let key = Value::from(name.as_str());
                        match (
                            admits(&x.property_names, &key),
                            admits(&y.property_names, &key),
                        ) {
                            (Ok(true), Ok(false)) => return with(name),
                            (Ok(_), Ok(_)) => {}
                            _ => return Effect::Unknown(why.to_owned()),
                        }
                    }
                    return Effect::No;
                }
                let names = of_type(&x.property_names, JsonType::String);
                match difference::difference(&names, &y.property_names, &y.property_names) {
                    Ok(None) => Effect::No,
                    Ok(Some(Value::String(name))) => with(&name),
                    _ => Effect::Unknown(why.to_owned()),
                }
            };
            let change = Change::new(
                "property_names_changed",
                format!("{}: what member names are allowed changed", shown(path)),
                &b.property_names.at.file,
                &b.property_names.at.pointer,
            );
            let (forward, backward) = (names_effect(a, b), names_effect(b, a));
            self.record(change, path, forward, backward);
        }
        if (a.min_properties, a.max_properties) != (b.min_properties, b.max_properties) {
            let why = "a change to minProperties/maxProperties; review it by hand";
            let counts_within = |x: &Facts, y: &Facts| {
                x.min_properties >= y.min_properties
                    && y.max_properties
                        .is_none_or(|most| x.max_properties.is_some_and(|max| max <= most))
            };
            let change = Change::new(
                "member_count_changed",
                format!("{}: the number of members allowed changed", shown(path)),
                &to.at.file,
                &to.at.pointer,
            );
            let (forward, backward) = (
                one_way(counts_within(a, b), why),
                one_way(counts_within(b, a), why),
            );
            self.record(change, path, forward, backward);
        }
    }

    /// `patternProperties` changed: every member whose schema it changes, one name per kind
    /// (each name both versions declare, and one undeclared name per combination of patterns
    /// it matches), compared whole, as the member is what its property, patterns and the
    /// additional schema say together.
    fn patterns(&mut self, path: &str, to: &Node, a: &Facts, b: &Facts) {
        let written = b
            .pattern_properties
            .values()
            .chain(a.pattern_properties.values())
            .next()
            .map_or(&to.at, |node| &node.at);
        let pointer = written
            .pointer
            .rsplit_once('/')
            .map_or(written.pointer.as_str(), |(parent, _)| parent);
        let change = Change::new(
            "pattern_properties_changed",
            format!(
                "{}: what members whose names match a pattern must be changed",
                shown(path)
            ),
            &written.file,
            pointer,
        );
        let undeclared = match toolgate_model::undeclared_kinds(&[a, b]) {
            Ok(names) => names.unwrap_or_default(),
            Err(why) => {
                self.record_undecided(change, path, why.to_string());
                return;
            }
        };
        let declared = a
            .properties
            .keys()
            .filter(|name| b.properties.contains_key(*name));
        let undeclared = undeclared.iter().map(|name| (name, true));
        for (name, fresh) in declared.map(|name| (name, false)).chain(undeclared) {
            let (x, y) = (a.member(name), b.member(name));
            if x == y {
                continue;
            }
            let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
            let forward = value_effect(&member, &x, &y);
            let backward = value_effect(&member, &y, &x);
            let relation = if fresh {
                self.additional_relation(path, &member, a, b)
            } else {
                self.relation(&member)
            };
            self.record_as(relation, change.clone(), &member, forward, backward);
        }
    }

    /// A property present in only one version's `properties` (`added`: only in TO's).
    fn property(
        &mut self,
        path: &str,
        name: &str,
        a: &Facts,
        b: &Facts,
        added: bool,
        renamed_to: Option<&str>,
    ) {
        let member = format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"));
        // What each version lets the member be: its property schema, or the additional one.
        let mut forward = value_effect(&member, &a.member(name), &b.member(name));
        let mut backward = value_effect(&member, &b.member(name), &a.member(name));
        let (from_required, to_required) = (a.required.contains(name), b.required.contains(name));
        if to_required && !from_required {
            forward = forward.or(self.absence(&member, Side::From));
        }
        if from_required && !to_required {
            backward = backward.or(self.absence(&member, Side::To));
        }
        let (kind, description, at) = match (added, renamed_to) {
            (_, Some(new)) => {
                let new_member = format!("{path}/{}", new.replace('~', "~0").replace('/', "~1"));
                // The new name: TO admits it where FROM may not, and FROM's old name is gone.
                forward = forward.or(value_effect(&member, &a.member(name), &b.member(name)));
                backward = backward.or(value_effect(&new_member, &b.member(new), &a.member(new)));
                if b.required.contains(new) && !a.required.contains(new) {
                    forward = forward.or(self.absence(&new_member, Side::From));
                }
                (
                    "property_renamed",
                    format!("{}: property `{name}` renamed to `{new}`", shown(path)),
                    &b.properties[new].at,
                )
            }
            (true, None) => (
                "property_added",
                format!(
                    "{}: property `{name}` added ({})",
                    shown(path),
                    if to_required { "required" } else { "optional" }
                ),
                &b.properties[name].at,
            ),
            (false, None) => (
                "property_removed",
                format!("{}: property `{name}` removed", shown(path)),
                &a.properties[name].at,
            ),
        };
        let change = Change::new(kind, description, &at.file, &at.pointer);
        self.record(change, &member, forward, backward);
    }

    /// `required` changed for a property both versions declare.
    fn presence(&mut self, member: &str, name: &str, to: &Node, a: &Facts, b: &Facts) {
        let (was, is) = (a.required.contains(name), b.required.contains(name));
        if was == is {
            return;
        }
        let parent = member.rsplit_once('/').map_or("", |(parent, _)| parent);
        let (kind, words, forward, backward) = if is {
            (
                "property_required",
                "is now required",
                self.absence(member, Side::From),
                Effect::No,
            )
        } else {
            (
                "property_optional",
                "is now optional",
                Effect::No,
                self.absence(member, Side::To),
            )
        };
        let change = Change::new(
            kind,
            format!("{}: property `{name}` {words}", shown(parent)),
            &to.at.file,
            &format!("{}/required", to.at.pointer),
        );
        self.record(change, member, forward, backward);
    }

    fn arrays(&mut self, path: &str, _from: &Node, to: &Node, a: &Facts, b: &Facts) {
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

    /// A union change decided on the whole nodes (what each admits), not branch by branch.
    fn union_compared_whole(&mut self, path: &str, from: &Node, to: &Node, words: &str) {
        let change = Change::new(
            "union_changed",
            format!("{}: {words}", shown(path)),
            &to.at.file,
            &to.at.pointer,
        );
        let forward = value_effect(path, from, to);
        let backward = value_effect(path, to, from);
        self.record(change, path, forward, backward);
    }

    fn unions(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
        let (x, y) = match (&a.union, &b.union) {
            (None, None) => return,
            (Some(x), Some(y)) if x.exactly_one == y.exactly_one => (x, y),
            _ => {
                return self.union_compared_whole(
                    path,
                    from,
                    to,
                    "a oneOf/anyOf was added, removed or changed kind",
                );
            }
        };
        let keyword = if x.exactly_one { "oneOf" } else { "anyOf" };
        // A oneOf admits a value exactly one branch takes: a branch changed, added or removed
        // changes what its siblings admit wherever they overlap. Branch by branch is only right
        // when no two branches can take one value (each pins a discriminating member), in both
        // versions; otherwise the whole union is compared at once.
        if x.exactly_one && !(disjoint_branches(&x.branches) && disjoint_branches(&y.branches)) {
            return self.union_compared_whole(
                path,
                from,
                to,
                "the oneOf branches changed, and they may overlap",
            );
        }
        // Branches that cannot be matched up (no discriminating const, a different number of
        // them) are compared as the whole union: each branch of one version within the other.
        let Some(pairs) = align(&x.branches, &y.branches) else {
            return self.union_compared_whole(
                path,
                from,
                to,
                &format!("the {keyword} branches changed, and they cannot be matched up"),
            );
        };
        let start = self.out.len();
        self.aligned_branches(path, from, to, keyword, pairs);
        // Overlapping `anyOf` branches: a value one branch no longer takes may still be taken by
        // another, so a branch's "yes" is no proof. Where the whole union shows that direction
        // changes nothing, it is compared whole instead.
        let may_overlap = !(disjoint_branches(&x.branches) && disjoint_branches(&y.branches));
        if !x.exactly_one && may_overlap {
            let claims = |verdict: BumpVerdict| {
                self.out[start..]
                    .iter()
                    .any(|change| matches!(change.effect(verdict), Effect::Yes(_)))
            };
            let overclaimed = (claims(BumpVerdict::UpstreamBreaking)
                && value_effect(path, from, to) == Effect::No)
                || (claims(BumpVerdict::UpstreamLoosened)
                    && value_effect(path, to, from) == Effect::No);
            if overclaimed {
                self.out.truncate(start);
                self.union_compared_whole(
                    path,
                    from,
                    to,
                    &format!("the {keyword} branches changed, and they may overlap"),
                );
            }
        }
    }

    /// The union branches `align` matched up, each pair compared, and each one without a
    /// counterpart added or removed.
    #[allow(clippy::type_complexity)]
    fn aligned_branches(
        &mut self,
        path: &str,
        from: &Node,
        to: &Node,
        keyword: &str,
        pairs: Vec<(Option<&Node>, Option<&Node>, Option<(String, Value)>)>,
    ) {
        for (from_branch, to_branch, discriminator) in pairs {
            match (from_branch, to_branch) {
                (Some(p), Some(q)) => self.node(path, p, q),
                (Some(p), None) => {
                    let probe = branch_effect(path, from, p, to);
                    let change = Change::new(
                        "branch_removed",
                        format!(
                            "{}: a {keyword} branch{} was removed",
                            shown(path),
                            discriminator_words(&discriminator)
                        ),
                        &from.at.file,
                        &p.at.pointer,
                    );
                    self.record(change, path, probe, Effect::No);
                }
                (None, Some(q)) => {
                    let probe = branch_effect(path, to, q, from);
                    let change = Change::new(
                        "branch_added",
                        format!(
                            "{}: a {keyword} branch{} was added",
                            shown(path),
                            discriminator_words(&discriminator)
                        ),
                        &to.at.file,
                        &q.at.pointer,
                    );
                    self.record(change, path, Effect::No, probe);
                }
                (None, None) => {}
            }
        }
    }
}

/// Whether both nodes are the same recursion closing (a `$ref` to the same target, cut off
/// where that target is being expanded above): compared co-inductively, the pair holds here if
/// it holds where the target is expanded, and what differs there is found there.
pub(super) fn closes_same_recursion(a: &Node, b: &Node) -> bool {
    a.recursion_closed()
        .is_some_and(|target| b.recursion_closed() == Some(target))
}

fn shown(path: &str) -> std::borrow::Cow<'_, str> {
    toolgate_repo::text::pointer(path)
}

/// A change at `at` the differ cannot decide because the schema there uses `reason`, and why.
fn unsupported(reason: &str, at: &toolgate_model::Location) -> (Change, String) {
    let why = format!("the schema at {at} uses {reason}; review this change by hand");
    let change = Change::new(
        "unsupported_change",
        format!("a change the differ cannot decide: {reason}"),
        &at.file,
        &at.pointer,
    );
    (change, why)
}

/// How a kept keyword's change moves what its value admits: `Less` when TO's `after` admits
/// no more than FROM's `before` (it narrows), `Greater` when no less, `Equal` when the same;
/// `None` when neither holds or the model cannot tell. `None` on a side means not written.
fn narrowing(name: &str, before: Option<&Value>, after: Option<&Value>) -> Option<Ordering> {
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
const KEPT_FILE: &str = "(kept keyword)";

/// A kept keyword's schema (`not`'s, `contains`') as the model reads it.
pub(super) fn kept_node(schema: &Value) -> Node {
    toolgate_model::Schemas::standalone(KEPT_FILE, schema)
}

/// The witness of a `not` whose schema admits more in one version (`narrower`, the `not`
/// that refuses more): a value of `node` (the other version) that schema admits, one the
/// other `not`'s schema refuses where the model finds one.
fn not_probe(path: &str, node: &Node, narrower: &Value, wider: Option<&Value>) -> Effect {
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
fn admitted_order(before: &Value, after: &Value) -> Option<Ordering> {
    node_order(&kept_node(before), &kept_node(after))
}

/// How two nodes relate by what they admit (as [`admitted_order`]).
fn node_order(before: &Node, after: &Node) -> Option<Ordering> {
    let within = |a: &Node, b: &Node| matches!(difference::difference(a, b, b), Ok(None));
    match (within(after, before), within(before, after)) {
        (true, true) => Some(Ordering::Equal),
        (true, false) => Some(Ordering::Less),
        (false, true) => Some(Ordering::Greater),
        (false, false) => None,
    }
}

/// One version's items: the schema of each position of its prefix, and what is past it.
type Positions = (Vec<Node>, Node);

/// The witness of a changed prefix: an array `node` admits (its items by `side`) with, at the
/// first position where one exists, a value `side` admits there and `other` refuses; the
/// positions before it, and any up to `minItems`, hold values of their own schemas (distinct
/// where `uniqueItems` asks). The gate decides it in both versions. `None` where the model
/// finds no such position or cannot build the rest.
fn prefix_probe(path: &str, node: &Node, side: &Positions, other: &Positions) -> Option<Effect> {
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

/// The values a further item of an array built so far (`items`) must differ from: all of
/// them where `uniqueItems` asks, else none.
fn avoided(facts: &Facts, items: &[Value]) -> Vec<Value> {
    if facts.unique_items {
        items.to_vec()
    } else {
        Vec::new()
    }
}

/// The probe that sets the value at `path` to `value` (a witness the model built), to be
/// decided by the gate in both versions.
fn pinned_probe(path: &str, node: &Node, value: Value) -> Effect {
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

/// One version's items as a prefix and what is past it: a kept `prefixItems` with its kept
/// `items` (anything when not written), or no prefix and the plain `items`.
fn positions(facts: &Facts) -> Option<Positions> {
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
fn prefix_order(before: Option<Positions>, after: Option<Positions>) -> Option<Ordering> {
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

/// A `dependentRequired` value as (member, member it requires) pairs.
fn dependent_pairs(value: &Value) -> Option<BTreeSet<(String, String)>> {
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
fn dependent_probe(
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

/// How many items of an array must match its `contains`, as written beside it: from
/// `minContains` (1 when not written) to `maxContains` (no bound when not written); `None`
/// where no `contains` is kept or a count is not a whole number.
fn contains_counts(facts: &Facts) -> Option<(u64, Option<u64>)> {
    facts.conjuncts.get("contains")?;
    let count = |name: &str| match facts.conjuncts.get(name) {
        None => Some(None),
        Some(kept) => kept.value.as_u64().map(Some),
    };
    Some((count("minContains")?.unwrap_or(1), count("maxContains")?))
}

/// Whether no array can hold the items `facts`' `contains` must match: at least one must, and
/// no item `items` admits is of a type `contains` admits (or fewer items are allowed than must
/// match).
fn no_array_counts(facts: &Facts) -> bool {
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
const COUNT_PROBE_ITEMS: u64 = 64;

/// The witness of a changed `minContains`/`maxContains`: an array `node` admits whose number
/// of items matching its `contains` is one `other`'s counts refuse, the fewest such. Its items
/// are built from `node`'s `items` (with the `contains` schema for those that match, and
/// values that schema refuses for the rest), each distinct where `uniqueItems` asks; the gate
/// decides it in both versions. `None` where the model cannot build one.
fn count_probe(path: &str, node: &Node, other: &Facts) -> Option<Effect> {
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

fn discriminator_words(discriminator: &Option<(String, Value)>) -> String {
    discriminator
        .as_ref()
        .map(|(name, value)| format!(" (`{name}` = {value})"))
        .unwrap_or_default()
}

fn describe(node: &Node) -> String {
    match &node.kind {
        Kind::Any => "anything".to_owned(),
        Kind::Nothing => "nothing".to_owned(),
        Kind::Facts(_) => format!("the schema at {}", node.at),
        Kind::Unknown { reason, .. } => format!("a schema using {reason}"),
    }
}

fn range((min, max): (u64, Option<u64>)) -> String {
    match max {
        Some(max) => format!("{min}..{max}"),
        None => format!("{min}.."),
    }
}

/// Branches matched up by a discriminating const member (the envelope's `outcome`), else by
/// position when both have as many; `None` when neither works.
#[allow(clippy::type_complexity)]
pub(super) fn align<'n>(
    from: &'n [Node],
    to: &'n [Node],
) -> Option<Vec<(Option<&'n Node>, Option<&'n Node>, Option<(String, Value)>)>> {
    let constant = |branch: &Node, name: &str| -> Option<Value> {
        let facts = branch.facts()?;
        let values = facts.properties.get(name)?.facts()?.values.as_ref()?;
        (values.len() == 1 && facts.required.contains(name)).then(|| values[0].clone())
    };
    let candidates: BTreeSet<&String> = from
        .iter()
        .chain(to)
        .filter_map(Node::facts)
        .flat_map(|facts| facts.properties.keys())
        .collect();
    let discriminator = candidates.into_iter().find(|name| {
        let distinct = |branches: &[Node]| {
            let values: Option<Vec<Value>> = branches
                .iter()
                .map(|branch| constant(branch, name))
                .collect();
            values.is_some_and(|values| {
                values
                    .iter()
                    .enumerate()
                    .all(|(index, value)| !values[..index].contains(value))
            })
        };
        distinct(from) && distinct(to)
    });
    if let Some(name) = discriminator {
        let mut pairs = Vec::new();
        for branch in from {
            let value = constant(branch, name)?;
            let twin = to
                .iter()
                .find(|other| constant(other, name) == Some(value.clone()));
            pairs.push((Some(branch), twin, Some((name.clone(), value))));
        }
        for branch in to {
            let value = constant(branch, name)?;
            if !from
                .iter()
                .any(|other| constant(other, name) == Some(value.clone()))
            {
                pairs.push((None, Some(branch), Some((name.clone(), value))));
            }
        }
        return Some(pairs);
    }
    // No discriminator: equal branches pair up; what is left pairs by position when both sides
    // have as many, or is added or removed when one side has none left.
    let mut pairs = Vec::new();
    let mut left_from = Vec::new();
    let mut taken = vec![false; to.len()];
    for branch in from {
        match (0..to.len()).find(|index| !taken[*index] && to[*index] == *branch) {
            Some(index) => {
                taken[index] = true;
                pairs.push((Some(branch), Some(&to[index]), None));
            }
            None => left_from.push(branch),
        }
    }
    let left_to: Vec<&Node> = (0..to.len())
        .filter(|index| !taken[*index])
        .map(|index| &to[index])
        .collect();
    match (left_from.len(), left_to.len()) {
        (0, _) => pairs.extend(left_to.into_iter().map(|branch| (None, Some(branch), None))),
        (_, 0) => pairs.extend(
            left_from
                .into_iter()
                .map(|branch| (Some(branch), None, None)),
        ),
        (x, y) if x == y => pairs.extend(
            left_from
                .into_iter()
                .zip(left_to)
                .map(|(p, q)| (Some(p), Some(q), None)),
        ),
        _ => return None,
    }
    Some(pairs)
}

/// Whether no value can match two of `branches`: every two of them take no JSON type in common
/// (an array and an object), or pin one required member to different constants (a single
/// branch is trivially so).
pub(super) fn disjoint_branches(branches: &[Node]) -> bool {
    branches.iter().enumerate().all(|(index, branch)| {
        branches[..index]
            .iter()
            .all(|other| disjoint_pair(branch, other))
    })
}

/// Whether no value can match both `a` and `b`.
fn disjoint_pair(a: &Node, b: &Node) -> bool {
    let pinned = |branch: &Node, name: &str| -> Option<Value> {
        let facts = branch.facts()?;
        let values = facts.properties.get(name)?.facts()?.values.as_ref()?;
        (values.len() == 1 && facts.required.contains(name)).then(|| values[0].clone())
    };
    no_type_in_common(a, b)
        || a.facts().is_some_and(|facts| {
            facts.properties.keys().any(|name| {
                matches!((pinned(a, name), pinned(b, name)),
                    (Some(x), Some(y)) if !same_value(&x, &y))
            })
        })
}

/// The witness for a branch only one version has: the base's value at `path` made to match
/// the branch (a response of that branch as it is, when the base already is one).
/// Whether `other` refuses a value of `branch`, one of `node`'s union branches that `other`
/// has no counterpart of (with `node`'s other facts beside it): decided where the model can
/// (another branch may still take all of it), else shown by a value of the branch.
fn branch_effect(path: &str, node: &Node, branch: &Node, other: &Node) -> Effect {
    let admitted = intersect(&difference::without_union(node), branch);
    match value_effect(path, &admitted, other) {
        Effect::Unknown(_) => branch_probe(path, branch),
        decided => decided,
    }
}

fn branch_probe(path: &str, branch: &Node) -> Effect {
    Effect::Yes(Probe {
        path: path.to_owned(),
        edit: Edit::Conform(Box::new(branch.clone())),
        adapt_context: true,
        shape: None,
    })
}

impl Walk<'_> {
    /// The witness for a member one version requires and the other (`side`, which must admit
    /// the witness) does not: a response without it. None when `side`'s projection requires
    /// the member anyway, so that a response without it is rejected there all the same.
    fn absence(&self, member: &str, side: Side) -> Effect {
        let projected = match side {
            Side::From => &self.context.projected.0,
            Side::To => &self.context.projected.1,
        };
        if projected.iter().any(|pointer| pointer == member) {
            return Effect::No;
        }
        Effect::Yes(Probe {
            path: member.to_owned(),
            edit: Edit::Remove,
            adapt_context: true,
            shape: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate_model::Schemas;

    fn root(schema: Value) -> Node {
        Schemas::new([("s.json".to_owned(), schema)].into_iter().collect()).root("s.json")
    }

    #[test]
    fn a_kept_keywords_change_narrows_or_widens_only_where_it_is_monotone() {
        use Ordering::{Equal, Greater, Less};
        let n = |value: u64| json!(value);
        let deps = |value: Value| value;
        for (name, before, after, expected) in [
            // `minContains` is 1 when not written: 0 widens, 2 narrows.
            ("minContains", None, Some(n(2)), Some(Less)),
            ("minContains", None, Some(n(0)), Some(Greater)),
            ("minContains", Some(n(0)), None, Some(Less)),
            ("minContains", None, Some(n(1)), Some(Equal)),
            ("minContains", Some(n(3)), Some(n(2)), Some(Greater)),
            ("minContains", Some(json!("x")), Some(n(2)), None),
            // `maxContains` is unbounded when not written.
            ("maxContains", None, Some(n(2)), Some(Less)),
            ("maxContains", Some(n(2)), None, Some(Greater)),
            ("maxContains", Some(n(2)), Some(n(3)), Some(Greater)),
            ("maxContains", Some(n(3)), Some(n(2)), Some(Less)),
            // A further condition: written, narrower; gone, wider; rewritten, unknown.
            ("contains", None, Some(json!({"const": 1})), Some(Less)),
            ("not", Some(json!({"const": 1})), None, Some(Greater)),
            (
                "not",
                Some(json!({"const": 1})),
                Some(json!({"const": 2})),
                None,
            ),
            (
                "dependentRequired",
                Some(deps(json!({"a": ["b"]}))),
                Some(deps(json!({"a": ["b", "c"]}))),
                Some(Less),
            ),
            (
                "dependentRequired",
                Some(deps(json!({"a": ["b"], "c": ["d"]}))),
                Some(deps(json!({"c": ["d"]}))),
                Some(Greater),
            ),
            (
                "dependentRequired",
                Some(deps(json!({"a": ["b"]}))),
                Some(deps(json!({"c": ["d"]}))),
                None,
            ),
        ] {
            assert_eq!(
                narrowing(name, before.as_ref(), after.as_ref()),
                expected,
                "{name}: {before:?} → {after:?}"
            );
        }
    }

    fn changes(from: Value, to: Value, promised: &[&str]) -> Vec<Change> {
        let context = ShapeContext {
            shape: "current".into(),
            promised: promised.iter().map(|p| (*p).to_owned()).collect(),
            observed: promised.iter().map(|p| (*p).to_owned()).collect(),
            projected: (Vec::new(), Vec::new()),
        };
        let mut out = Vec::new();
        compare(&root(from), &root(to), &context, &mut out);
        out
    }

    fn effects(change: &Change) -> [Value; 4] {
        BumpVerdict::ALL.map(|verdict| change.effect(verdict).as_json())
    }

    #[test]
    fn an_enum_narrowed_under_a_promised_field_breaks_and_narrows() {
        let from = json!({"type": "object", "properties": {"state": {"enum": ["a", "b"]}}});
        let to = json!({"type": "object", "properties": {"state": {"enum": ["a"]}}});
        let found = changes(from, to, &["/state"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, "enum_narrowed");
        assert_eq!(
            effects(&found[0]),
            [json!(true), json!(false), json!(false), json!(true)]
        );
        assert_eq!(
            found[0].effect(BumpVerdict::UpstreamBreaking),
            &Effect::Yes(Probe::replace("/state", json!("b")))
        );
    }

    #[test]
    fn opening_an_object_loosens_upstream_and_widens_nothing() {
        let from = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false});
        let to = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let found = changes(from, to, &["/a"]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, "object_opened");
        assert_eq!(
            effects(&found[0]),
            [json!(false), json!(true), json!(false), json!(false)]
        );
    }

    #[test]
    fn a_pattern_change_is_decided_by_language_inclusion() {
        let from = json!({"type": "string", "pattern": "^run_[a-z]{12}$"});
        let to = json!({"type": "string", "pattern": "^run_[a-z0-9]{12,48}$"});
        let found = changes(from.clone(), to.clone(), &[""]);
        assert_eq!(found[0].kind, "pattern_changed");
        assert_eq!(
            effects(&found[0]),
            [json!(false), json!(true), json!(true), json!(false)]
        );
        let found = changes(to, from, &[""]);
        assert_eq!(
            effects(&found[0]),
            [json!(true), json!(false), json!(false), json!(true)]
        );
    }
}
