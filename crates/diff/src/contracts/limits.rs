//! The transport's limits compared: `max_bytes` tightened or loosened, `max_depth` changed, and the
//! statuses read as the upstream being unavailable added or removed.

use super::*;

pub(super) fn compare_limits(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = (from.contract.max_bytes(), to.contract.max_bytes());
    if old != new {
        let why = "a different byte limit changes which long values can reach the agent; whether any promised value is long enough depends on the upstream".to_owned();
        let (kind, upstream, probe) = if new < old {
            (
                "max_bytes_tightened",
                BumpVerdict::UpstreamBreaking,
                Probe::padded(new + 1),
            )
        } else {
            (
                "max_bytes_loosened",
                BumpVerdict::UpstreamLoosened,
                Probe::padded(old + 1),
            )
        };
        let agent = if new < old {
            BumpVerdict::AgentNarrowed
        } else {
            BumpVerdict::AgentWidened
        };
        out.push(
            Change::new(
                kind,
                format!("limits.max_bytes {old} → {new}"),
                CONTRACT_FILE,
                "/limits/max_bytes",
            )
            .with(upstream, Effect::Yes(probe))
            .with(agent, Effect::Unknown(why)),
        );
    }
    let (old, new) = (from.contract.max_depth(), to.contract.max_depth());
    if old != new {
        let deepest = [from, to]
            .iter()
            .flat_map(|version| {
                version
                    .shapes()
                    .into_iter()
                    .map(|shape| depth(&version.schemas.root(&shape.schema)))
            })
            .try_fold(0usize, |deepest, depth| {
                depth.map(|depth| deepest.max(depth))
            });
        let mut change = Change::new(
            "max_depth_changed",
            format!("limits.max_depth {old} → {new}"),
            CONTRACT_FILE,
            "/limits/max_depth",
        );
        match deepest {
            Some(deepest) if deepest <= old.min(new) => {
                change.description.push_str(&format!(
                    " (no effect: no shape admits a document nested deeper than {deepest})"
                ));
            }
            _ => {
                let why =
                    "the schemas admit documents deeper than the smaller limit; review by hand"
                        .to_owned();
                let verdict = if new < old {
                    BumpVerdict::UpstreamBreaking
                } else {
                    BumpVerdict::UpstreamLoosened
                };
                change = change.with(verdict, Effect::Unknown(why));
            }
        }
        out.push(change);
    }
    let old: BTreeSet<u16> = toolgate_gate::internals::unavailable_statuses(&from.contract)
        .into_iter()
        .collect();
    let new: BTreeSet<u16> = toolgate_gate::internals::unavailable_statuses(&to.contract)
        .into_iter()
        .collect();
    for status in new.difference(&old) {
        out.push(
            Change::new(
                "unavailable_status_added",
                format!("upstream status {status} now rejects with UPSTREAM_UNAVAILABLE before the body is read"),
                CONTRACT_FILE,
                "/limits/unavailable_statuses",
            )
            .with(BumpVerdict::UpstreamBreaking, Effect::Yes(Probe::status(*status))),
        );
    }
    for status in old.difference(&new) {
        out.push(
            Change::new(
                "unavailable_status_removed",
                format!("upstream status {status} no longer rejects: the body decides"),
                CONTRACT_FILE,
                "/limits/unavailable_statuses",
            )
            .with(
                BumpVerdict::UpstreamLoosened,
                Effect::Yes(Probe::status(*status)),
            ),
        );
    }
}

/// How deep (in containers) a document a node admits can be; `None` when unbounded.
fn depth(node: &Node) -> Option<usize> {
    fn walk(node: &Node, budget: usize) -> Option<usize> {
        if budget == 0 {
            return None;
        }
        let facts = match &node.kind {
            Kind::Nothing => return Some(0),
            Kind::Any | Kind::Unknown { .. } => return None,
            Kind::Facts(facts) => facts,
        };
        let containers = facts.types.as_ref().is_none_or(|types| {
            types.iter().any(|kind| {
                matches!(
                    kind,
                    toolgate_model::JsonType::Object | toolgate_model::JsonType::Array
                )
            })
        });
        if !containers || facts.values.is_some() {
            return Some(0);
        }
        if facts.union.is_some() {
            // A document is one of the branches, each with this node's other facts.
            let mut deepest = 0;
            for alternative in toolgate_model::alternatives(node) {
                deepest = deepest.max(walk(&alternative, budget - 1)?);
            }
            return Some(deepest);
        }
        let mut deepest = 0;
        let allows = |kind| facts.allows_type(kind);
        if allows(toolgate_model::JsonType::Object) {
            for member in facts
                .properties
                .values()
                .chain(facts.pattern_properties.values())
                .chain(std::iter::once(&*facts.additional))
            {
                deepest = deepest.max(walk(member, budget - 1)?);
            }
        }
        if allows(toolgate_model::JsonType::Array) {
            deepest = deepest.max(walk(&facts.items, budget - 1)?);
        }
        Some(deepest + 1)
    }
    walk(node, 64)
}
