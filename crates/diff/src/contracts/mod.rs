//! Comparing two versions of a whole contract: every shape's schema (through
//! [`schemas::compare`]), the limits, the rules, the promised fields and their order, the agent
//! schema, the retry policy, and the failure envelopes the agent can be shown.

mod admitted;
mod envelopes;
mod rules;
use admitted::admitted_root;
use envelopes::compare_envelopes;
use rules::{compare_retry, compare_rules};
use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use toolgate_gate::internals::parse_duration;
use toolgate_gate::{CONTRACT_FILE, ErrorCode};

use super::change::{BumpVerdict, Change, Edit, Effect, Probe};
use super::schemas::{self, ShapeContext};
use toolgate_model::{Kind, Node, RuleDoc, ShapeDoc, Version};

/// Every change between `from` and `to`.
pub(crate) fn compare(from: &Version, to: &Version) -> Vec<Change> {
    let mut out = Vec::new();
    compare_shapes(from, to, &mut out);
    compare_fields(from, to, &mut out);
    compare_limits(from, to, &mut out);
    compare_rules(from, to, &mut out);
    compare_retry(from, to, &mut out);
    compare_envelopes(from, to, &mut out);
    compare_agent_schemas(from, to, &mut out);
    out
}

fn compare_shapes(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let from_shapes = from.shapes();
    let to_shapes = to.shapes();
    for shape in &from_shapes {
        match to_shapes.iter().find(|other| other.name == shape.name) {
            Some(other) => {
                let promised: BTreeSet<String> = shape
                    .fields
                    .values()
                    .chain(other.fields.values())
                    .map(|(pointer, _)| pointer.clone())
                    .collect();
                // What a success must hold: every field not marked optional (projection
                // requires it), and every field a rule reads (a rule on an absent field
                // cannot hold, so the gate refuses the response).
                let required = |shape: &ShapeDoc, version: &Version| {
                    let ruled: BTreeSet<String> = version
                        .rules()
                        .iter()
                        .map(|rule| rule.field().to_owned())
                        .collect();
                    shape
                        .fields
                        .iter()
                        .filter(|(name, (_, optional))| !optional || ruled.contains(*name))
                        .map(|(_, (pointer, _))| pointer.clone())
                        .collect()
                };
                // What else the gate reads to tell the agent something: whether it succeeded,
                // the failure's code, and what correlation checks.
                let envelope = |shape: &ShapeDoc| {
                    [
                        shape.outcome.as_ref().map(|(pointer, _)| pointer.clone()),
                        shape.error_code.clone(),
                        shape.tool.clone(),
                        shape.request_id.clone(),
                    ]
                };
                let observed = promised
                    .iter()
                    .cloned()
                    .chain(envelope(shape).into_iter().flatten())
                    .chain(envelope(other).into_iter().flatten())
                    .collect::<BTreeSet<String>>();
                let context = ShapeContext {
                    shape: shape.name.clone(),
                    promised: promised.into_iter().collect(),
                    observed: observed.into_iter().collect(),
                    projected: (required(shape, from), required(other, to)),
                };
                let start = out.len();
                schemas::compare(
                    &admitted_root(from, shape, false),
                    &admitted_root(to, other, false),
                    &context,
                    out,
                );
                // The changes are listed on the schemas as written (a member made optional
                // that a field still requires is a change, which decides nothing); the
                // verdicts are then settled on what the gate admits, fields held.
                schemas::settle(
                    &mut out[start..],
                    &admitted_root(from, shape, true),
                    &admitted_root(to, other, true),
                );
            }
            None => {
                let mut change = Change::new(
                    "shape_removed",
                    format!(
                        "legacy shape `{}` removed: responses of that shape are no longer admitted",
                        shape.name
                    ),
                    CONTRACT_FILE,
                    "/legacy_shapes",
                )
                .with(
                    BumpVerdict::UpstreamBreaking,
                    Effect::Yes(Probe::keep(Some(&shape.name))),
                )
                .with(
                    BumpVerdict::AgentNarrowed,
                    Effect::Unknown(format!(
                        "the outputs of legacy shape `{}` may also come from another shape",
                        shape.name
                    )),
                );
                change.shape = Some(shape.name.clone());
                out.push(change);
            }
        }
    }
    for shape in to_shapes
        .iter()
        .filter(|shape| !from_shapes.iter().any(|other| other.name == shape.name))
    {
        let mut change = Change::new(
            "shape_added",
            format!(
                "legacy shape `{}` added: responses of that shape are now admitted",
                shape.name
            ),
            CONTRACT_FILE,
            "/legacy_shapes",
        )
        .with(
            BumpVerdict::UpstreamLoosened,
            Effect::Yes(Probe::keep(Some(&shape.name))),
        )
        .with(
            BumpVerdict::AgentWidened,
            Effect::Unknown(format!(
                "the outputs of legacy shape `{}` may also come from another shape",
                shape.name
            )),
        );
        change.shape = Some(shape.name.clone());
        out.push(change);
    }
}

fn compare_fields(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = (from.field_order(), to.field_order());
    let current = toolgate_gate::CURRENT_SHAPE;
    let optional = |version: &Version, field: &str| {
        version.shapes()[0]
            .fields
            .get(field)
            .is_some_and(|(_, optional)| *optional)
    };
    // A kept accepted fixture shows each field effect; the witness search finds it.
    let keep = || Effect::Yes(Probe::keep(Some(current)));
    for field in new.iter().filter(|field| !old.contains(field)) {
        let narrowed = if optional(to, field) {
            Effect::Unknown(format!(
                "`{field}` is optional in {}: outputs without it may still be possible",
                to.name
            ))
        } else {
            keep()
        };
        out.push(
            Change::new(
                "field_added",
                if optional(to, field) {
                    format!("the agent is now promised `{field}` (optional)")
                } else {
                    format!(
                        "the agent is now promised `{field}`: every successful output now carries `{field}`"
                    )
                },
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentWidened, keep())
            .with(BumpVerdict::AgentNarrowed, narrowed),
        );
    }
    for field in old.iter().filter(|field| !new.contains(field)) {
        let widened = if optional(from, field) {
            Effect::Unknown(format!(
                "`{field}` was optional in {}: outputs without it were already possible",
                from.name
            ))
        } else {
            keep()
        };
        out.push(
            Change::new(
                "field_removed",
                format!(
                    "the agent is no longer promised `{field}`: no successful output carries `{field}` any more"
                ),
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentNarrowed, keep())
            .with(BumpVerdict::AgentWidened, widened),
        );
    }
    let common_old: Vec<&String> = old.iter().filter(|field| new.contains(field)).collect();
    let common_new: Vec<&String> = new.iter().filter(|field| old.contains(field)).collect();
    if common_old != common_new {
        out.push(
            Change::new(
                "fields_reordered",
                format!(
                    "the promised fields are written in another order: {} → {}",
                    common_old
                        .iter()
                        .map(|field| field.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    common_new
                        .iter()
                        .map(|field| field.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                CONTRACT_FILE,
                "/shape/fields",
            )
            .with(BumpVerdict::AgentWidened, keep())
            .with(BumpVerdict::AgentNarrowed, keep()),
        );
    }
    for shape in from.shapes() {
        let Some(other) = to
            .shapes()
            .into_iter()
            .find(|other| other.name == shape.name)
        else {
            continue;
        };
        for (field, (pointer, was_optional)) in &shape.fields {
            let Some((new_pointer, is_optional)) = other.fields.get(field) else {
                continue;
            };
            if new_pointer != pointer {
                let why = format!(
                    "`{field}` is now read from {new_pointer} instead of {pointer}; the values there may differ"
                );
                let mut change = Change::new(
                    "field_source_changed",
                    format!(
                        "shape `{}`: `{field}` is read from {new_pointer} instead of {pointer}",
                        shape.name
                    ),
                    CONTRACT_FILE,
                    "/shape/fields",
                )
                .with(BumpVerdict::AgentWidened, Effect::Unknown(why.clone()))
                .with(BumpVerdict::AgentNarrowed, Effect::Unknown(why));
                change.shape = Some(shape.name.clone());
                out.push(change);
            }
            if was_optional != is_optional {
                let mut change = Change::new(
                    if *is_optional {
                        "field_optional"
                    } else {
                        "field_required"
                    },
                    format!(
                        "shape `{}`: `{field}` is now {}",
                        shape.name,
                        if *is_optional {
                            "optional: outputs may lack it"
                        } else {
                            "always promised"
                        }
                    ),
                    CONTRACT_FILE,
                    "/shape/fields",
                );
                let absent = Effect::Yes(Probe {
                    path: new_pointer.clone(),
                    edit: Edit::Remove,
                    adapt_context: true,
                    shape: Some(shape.name.clone()),
                });
                change = if *is_optional {
                    change.with(BumpVerdict::AgentWidened, absent).with(
                        BumpVerdict::UpstreamLoosened,
                        Effect::Yes(Probe {
                            path: new_pointer.clone(),
                            edit: Edit::Remove,
                            adapt_context: true,
                            shape: Some(shape.name.clone()),
                        }),
                    )
                } else {
                    change
                        .with(BumpVerdict::AgentNarrowed, absent.clone())
                        .with(BumpVerdict::UpstreamBreaking, absent)
                };
                change.shape = Some(shape.name.clone());
                out.push(change);
            }
        }
    }
}

fn compare_limits(from: &Version, to: &Version, out: &mut Vec<Change>) {
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

/// The agent schema is a declaration: what the agent sees is what projection builds, and the
/// harness checks every output against the declaration. Its changes are listed with what they
/// declare, and weigh on no verdict.
fn compare_agent_schemas(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let file = |version: &Version| version.agent_schema_file().to_owned();
    let (old, new) = (from.schemas.root(&file(from)), to.schemas.root(&file(to)));
    let context = ShapeContext {
        shape: "agent".to_owned(),
        promised: vec![String::new()],
        observed: vec![String::new()],
        projected: (Vec::new(), Vec::new()),
    };
    let mut changes = Vec::new();
    schemas::compare(&old, &new, &context, &mut changes);
    for mut change in changes {
        let declared = (
            !matches!(change.effect(BumpVerdict::AgentWidened), Effect::No),
            !matches!(change.effect(BumpVerdict::AgentNarrowed), Effect::No),
        );
        let mut listed = Change::new(
            "agent_schema_changed",
            format!("agent schema: {}", change.description),
            &change.file,
            &change.pointer,
        );
        listed.instance = change.instance.take();
        listed.declared = Some(declared);
        out.push(listed);
    }
}

impl Probe {
    /// A base padded to `length` bytes with trailing whitespace.
    fn padded(length: usize) -> Probe {
        Probe {
            path: String::new(),
            edit: Edit::Pad(length),
            adapt_context: false,
            shape: None,
        }
    }

    /// A base sent with an upstream status.
    fn status(status: u16) -> Probe {
        Probe {
            path: String::new(),
            edit: Edit::Status(status),
            adapt_context: false,
            shape: None,
        }
    }

    /// Any input that makes the admitting version tell the agent `(code, retryable)`.
    fn envelope(code: ErrorCode, retryable: bool) -> Probe {
        Probe {
            path: String::new(),
            edit: Edit::Envelope(code, retryable),
            adapt_context: false,
            shape: None,
        }
    }
}
