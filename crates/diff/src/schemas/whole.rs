//! Verdicts settled on whole nodes: where the whole of one version's node is inside the
//! other's, a direction no change below can make true is `no` for all of them.

use super::*;

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
pub(super) fn admits_something(root: &Node, path: &str) -> bool {
    let tokens: Vec<String> = path
        .split('/')
        .skip(1)
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    fillable(root, &tokens)
}

pub(super) fn fillable(node: &Node, tokens: &[String]) -> bool {
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
