//! Unions compared: branches aligned across versions where they can be (by a discriminator, by
//! inclusion), each aligned pair compared, a branch only one version has shown by a value of it.

use super::*;

impl Walk<'_> {
    /// A union change decided on the whole nodes (what each admits), not branch by branch.
    pub(super) fn union_compared_whole(&mut self, path: &str, from: &Node, to: &Node, words: &str) {
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

    pub(super) fn unions(&mut self, path: &str, from: &Node, to: &Node, a: &Facts, b: &Facts) {
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
    pub(super) fn aligned_branches(
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
pub(super) fn disjoint_pair(a: &Node, b: &Node) -> bool {
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
pub(super) fn branch_effect(path: &str, node: &Node, branch: &Node, other: &Node) -> Effect {
    let admitted = intersect(&difference::without_union(node), branch);
    match value_effect(path, &admitted, other) {
        Effect::Unknown(_) => branch_probe(path, branch),
        decided => decided,
    }
}

pub(super) fn branch_probe(path: &str, branch: &Node) -> Effect {
    Effect::Yes(Probe {
        path: path.to_owned(),
        edit: Edit::Conform(Box::new(branch.clone())),
        adapt_context: true,
        shape: None,
    })
}
