//! Comparing two versions of one shape's schema, node by node along the response's structure:
//! every difference becomes a [`Change`] whose effect on each verdict is decided on the model
//! (exactly, or `Unknown` with the reason), with a probe that builds a witness for a `Yes`. The
//! walk is here, and each kind of node it compares beside it (`members.rs`, `arrays.rs`,
//! `unions.rs`; `kept.rs` the keywords kept beside a node; `whole.rs` verdicts settled on whole
//! nodes); what one node says about the value itself is `leaf.rs`; the search for a value one
//! node admits and the other refuses is `difference.rs`.

use kept::{admitted_order, dependent_probe, narrowing, not_probe};
use whole::admits_something;
pub(crate) use whole::settle;
mod arrays;
mod difference;
mod kept;
mod leaf;
mod members;
mod project;
mod unions;
mod whole;

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

/// How a response pointer relates to the promised fields.
enum Relation {
    /// At or inside a promised value: what it admits is what the agent may see.
    Promised,
    /// Above a promised value: it decides whether the value is there at all.
    Above,
    /// Elsewhere: never projected.
    Unpromised,
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

/// One version's items: the schema of each position of its prefix, and what is past it.
type Positions = (Vec<Node>, Node);

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

#[cfg(test)]
mod tests;
