//! Comparing two versions of a whole contract: every shape's schema (through
//! [`schemas::compare`]), the limits, the rules, the promised fields and their order, the agent
//! schema, the retry policy, and the failure envelopes the agent can be shown.

mod admitted;
mod envelopes;
mod fields;
mod limits;
mod rules;
use admitted::admitted_root;
use envelopes::compare_envelopes;
use fields::compare_fields;
use limits::compare_limits;
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
