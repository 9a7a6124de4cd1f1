//! Comparing two versions of a whole contract: every shape's schema (through
//! [`schemas::compare`]), the limits, the rules, the promised fields and their order, the agent
//! schema, the retry policy, and the failure envelopes the agent can be shown.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;
use toolgate_gate::internals::parse_duration;
use toolgate_gate::{CONTRACT_FILE, ErrorCode};

use super::change::{BumpVerdict, Change, Edit, Effect, Probe};
use super::schemas::{self, ShapeContext};
use toolgate_model::{Kind, Node, RuleDoc, ShapeDoc, Version};

/// What the gate can admit of `shape` in `version`, as the model reads it: the shape's schema,
/// and what every decision checks after it: correlation and an outcome the contract names (on
/// every response), a failure code the agent can be shown (on a failure), the rules' fields and
/// the fields not marked optional (on a success) where `fields_held` says so. A value the schema admits and the gate always refuses (a response that is not an
/// object, a tool name the contract is not for, a failure code the agent has no word for) is
/// then not counted as admitted. Pointers through a member named
/// like an array index are left out, as the document there may be an array.
fn admitted_root(version: &Version, shape: &ShapeDoc, fields_held: bool) -> Node {
    let root = version.schemas.root(&shape.schema);
    // A recursion back to the file's root stands for the schema alone: the comparison assumes
    // that pair holds where the recursion closes, which is sound only where the schema alone is
    // also expanded below the root (a `$ref` to it followed) and compared there.
    let (closes, expanded) = root_recursion(&root, &shape.schema);
    if closes && !expanded {
        return root;
    }
    let tool = version.contract.tool();
    let strings = |values: &[&str]| values.iter().map(|value| Value::from(*value)).collect();
    let mut held = vec![
        (shape.tool.as_deref(), Some(strings(&[tool]))),
        (shape.request_id.as_deref(), None),
    ];
    // The outcome is one of the two values the contract names, on every response.
    if let (Some((pointer, success)), Some(failure)) = (&shape.outcome, &shape.failure) {
        held.push((Some(pointer), Some(vec![success.clone(), failure.clone()])));
    }
    let checked = held
        .into_iter()
        .filter_map(|(pointer, values)| Some((pointer?, values)))
        .fold(root, |root, (pointer, values)| {
            match held_at(&root.at, pointer, true, None, values) {
                Some(held) => everywhere(&root, &held),
                None => root,
            }
        });
    // A failure's code is one the agent can be shown.
    let coded = match (&shape.error_code, &shape.failure) {
        (Some(pointer), Some(failure)) => {
            let codes = ErrorCode::ALL.map(ErrorCode::as_str);
            match held_at(&checked.at, pointer, true, None, Some(strings(&codes))) {
                Some(code) => on_outcome(checked, shape, failure, |node| {
                    toolgate_model::intersect(node, &code)
                }),
                None => checked,
            }
        }
        _ => checked,
    };
    toolgate_model::without_impossible_objects(&kept_by_rules(version, shape, coded, fields_held))
}

/// `root` with `held` intersected in, and into each branch of its union too (an envelope's
/// success and failure), where the comparison reads them: on the values `held` lets through,
/// a branch matches exactly when it does with `held` beside it.
fn everywhere(root: &Node, held: &Node) -> Node {
    let mut admitted = toolgate_model::intersect(root, held);
    if let Kind::Facts(facts) = &mut admitted.kind
        && let Some(union) = &mut std::sync::Arc::make_mut(facts).union
    {
        for branch in &mut union.branches {
            *branch = toolgate_model::intersect(branch, held);
        }
    }
    admitted
}

/// `root` with `keep` applied to the responses whose outcome is `value`: the root where it
/// pins the outcome member to that value, else each union branch that does (the rest left as
/// they are; an outcome the model cannot find pinned leaves `root` unchanged).
fn on_outcome(root: Node, shape: &ShapeDoc, value: &Value, keep: impl Fn(&Node) -> Node) -> Node {
    let Some((pointer, _)) = &shape.outcome else {
        return root;
    };
    let Some(member) = pointer
        .strip_prefix('/')
        .filter(|member| !member.contains('/') && !member.contains('~'))
    else {
        return root;
    };
    let pins = |node: &Node| {
        node.facts().is_some_and(|facts| {
            facts.required.contains(member)
                && facts.properties.get(member).is_some_and(|outcome| {
                    outcome
                        .facts()
                        .and_then(|facts| facts.values.as_ref())
                        .is_some_and(|values| {
                            values.len() == 1 && toolgate_model::same_value(&values[0], value)
                        })
                })
        })
    };
    if pins(&root) {
        return keep(&root);
    }
    let mut root = root;
    if let Kind::Facts(facts) = &mut root.kind
        && let Some(union) = &mut std::sync::Arc::make_mut(facts).union
    {
        for branch in &mut union.branches {
            if pins(branch) {
                *branch = keep(branch);
            }
        }
    }
    root
}

/// `root` where a success must keep every rule on a field the shape declares: the field
/// present (a rule on an absent field cannot hold), and a string where the rule is freshness
/// (an RFC 3339 timestamp); and, where `fields_held`, hold every field not marked optional. A success is every response of a shape without an outcome, else a
/// union branch (or the root) that pins the outcome member to the success value.
fn kept_by_rules(version: &Version, shape: &ShapeDoc, root: Node, fields_held: bool) -> Node {
    let at = root.at.clone();
    // A freshness field holds an RFC 3339 timestamp, as `date-time` reads one (the gate parses
    // it so): written only where the schema's own format there admits no timestamp, so that
    // the two leave no string, and never where it would narrow what the gate admits.
    // A field not marked optional is held too: projection refuses a success without it.
    let kept = |node: &Node| -> Vec<Node> {
        let rules = version.rules();
        let ruled = rules.iter().filter_map(|rule| {
            let (pointer, _) = shape.fields.get(rule.field())?;
            let timestamp = rule.kind == "freshness";
            let format = format_at(node, pointer)
                .filter(|format| timestamp && toolgate_model::disjoint_formats("date-time", format))
                .map(|_| "date-time");
            held_at(&at, pointer, timestamp, format, None)
        });
        let projected = shape
            .fields
            .values()
            .filter(|(_, optional)| fields_held && !optional)
            .filter_map(|(pointer, _)| held_at(&at, pointer, false, None, None));
        ruled.chain(projected).collect()
    };
    let keep = |node: &Node| {
        kept(node).iter().fold(node.clone(), |node, rule| {
            toolgate_model::intersect(&node, rule)
        })
    };
    match &shape.outcome {
        Some((_, success)) => on_outcome(root, shape, success, keep),
        None => keep(&root),
    }
}

/// Whether a recursion in `root` closes at the root of `file`, and whether the root's schema is
/// expanded somewhere below it (a `$ref` to it followed: a node written at the root's place).
fn root_recursion(root: &Node, file: &str) -> (bool, bool) {
    let target = format!("{file}#");
    let (mut closes, mut expanded) = (false, false);
    let mut pending: Vec<&Node> = match root.facts() {
        Some(facts) => children(facts),
        None => Vec::new(),
    };
    while let Some(node) = pending.pop() {
        closes |= node
            .recursion_closed()
            .is_some_and(|(closing, _)| closing == target);
        if let Some(facts) = node.facts() {
            expanded |= node.at.file == file && node.at.pointer.is_empty();
            pending.extend(children(facts));
        }
    }
    (closes, expanded)
}

/// The nodes one node's facts hold.
fn children(facts: &toolgate_model::Facts) -> Vec<&Node> {
    let mut nodes: Vec<&Node> = facts.properties.values().collect();
    nodes.extend(facts.pattern_properties.values());
    nodes.extend([&*facts.additional, &*facts.property_names, &*facts.items]);
    if let Some(union) = &facts.union {
        nodes.extend(&union.branches);
    }
    nodes
}

/// The schema of a document holding a value at `pointer`: a string where `string` says so,
/// `value` itself when given.
fn held_at(
    at: &toolgate_model::Location,
    pointer: &str,
    string: bool,
    format: Option<&str>,
    values: Option<Vec<Value>>,
) -> Option<Node> {
    use std::sync::Arc;
    use toolgate_model::{Facts, JsonType, Values};
    let tokens: Vec<String> = pointer
        .strip_prefix('/')?
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    if tokens.iter().any(|token| {
        token == "-" || (!token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()))
    }) {
        return None;
    }
    let mut leaf = Facts::new(at);
    if string {
        leaf.types = Some(BTreeSet::from([JsonType::String]));
    }
    leaf.format = format.map(str::to_owned);
    leaf.values = values.map(Values::new);
    let mut node = Node {
        at: at.clone(),
        kind: Kind::Facts(Arc::new(leaf)),
    };
    for token in tokens.into_iter().rev() {
        let mut object = Facts::new(at);
        object.types = Some(BTreeSet::from([JsonType::Object]));
        object.required.insert(token.clone());
        object.properties.insert(token, node);
        node = Node {
            at: at.clone(),
            kind: Kind::Facts(Arc::new(object)),
        };
    }
    Some(node)
}

/// The `format` `node` declares at `pointer`, read through `properties` alone.
fn format_at(node: &Node, pointer: &str) -> Option<String> {
    let mut node = node;
    for token in pointer.strip_prefix('/')?.split('/') {
        let name = token.replace("~1", "/").replace("~0", "~");
        node = node.facts()?.properties.get(&name)?;
    }
    node.facts()?.format.clone()
}

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

fn compare_rules(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = (from.rules(), to.rules());
    for rule in &new {
        match old.iter().find(|other| other.name == rule.name) {
            None => out.push(rule_change(rule, to, true)),
            Some(other) if other.kind != rule.kind || other.field() != rule.field() => {
                out.push(rule_change(other, from, false));
                out.push(rule_change(rule, to, true));
            }
            Some(other) if other.settings != rule.settings => {
                out.extend(rule_settings_change(other, rule, to))
            }
            Some(_) => {}
        }
    }
    for rule in old
        .iter()
        .filter(|rule| !new.iter().any(|other| other.name == rule.name))
    {
        out.push(rule_change(rule, from, false));
    }
}

/// A rule one version has and the other does not (`added`: TO has it). A response that breaks
/// it is the witness.
fn rule_change(rule: &RuleDoc, version: &Version, added: bool) -> Change {
    let pointer = version
        .pointer(toolgate_gate::CURRENT_SHAPE, rule.field())
        .unwrap_or_default();
    let probe = Effect::Yes(Probe {
        path: pointer,
        edit: Edit::Violate(Box::new(rule.clone())),
        adapt_context: false,
        shape: Some(toolgate_gate::CURRENT_SHAPE.to_owned()),
    });
    let (kind, words, upstream, agent) = if added {
        (
            "rule_added",
            "added",
            BumpVerdict::UpstreamBreaking,
            BumpVerdict::AgentNarrowed,
        )
    } else {
        (
            "rule_removed",
            "removed",
            BumpVerdict::UpstreamLoosened,
            BumpVerdict::AgentWidened,
        )
    };
    Change::new(
        kind,
        format!(
            "{} rule `{}` on `{}` {words}",
            rule.kind,
            rule.name,
            rule.field()
        ),
        CONTRACT_FILE,
        "/rules",
    )
    .with(upstream, probe.clone())
    .with(agent, probe)
}

/// The same rule with other settings: a freshness window moved, or a context key changed.
fn rule_settings_change(old: &RuleDoc, new: &RuleDoc, to: &Version) -> Vec<Change> {
    let pointer = to
        .pointer(toolgate_gate::CURRENT_SHAPE, new.field())
        .unwrap_or_default();
    let mut out = Vec::new();
    if new.kind == "freshness" {
        for (key, past) in [("max_age", true), ("max_future", false)] {
            let read = |rule: &RuleDoc| {
                rule.settings[key]
                    .as_str()
                    .and_then(|text| parse_duration(text).ok())
                    .unwrap_or(Duration::ZERO)
            };
            let (was, is) = (read(old), read(new));
            if was == is {
                continue;
            }
            // A timestamp between the two windows' edges: inside one, outside the other.
            let seconds = i64::try_from((was.as_secs() + is.as_secs()) / 2).unwrap_or(i64::MAX);
            let offset = if past { -seconds } else { seconds };
            let probe = Effect::Yes(Probe {
                path: pointer.clone(),
                edit: Edit::Timestamp(offset),
                adapt_context: true,
                shape: Some(toolgate_gate::CURRENT_SHAPE.to_owned()),
            });
            let (kind, upstream, agent) = if is < was {
                (
                    "freshness_tightened",
                    BumpVerdict::UpstreamBreaking,
                    BumpVerdict::AgentNarrowed,
                )
            } else {
                (
                    "freshness_loosened",
                    BumpVerdict::UpstreamLoosened,
                    BumpVerdict::AgentWidened,
                )
            };
            let written = |rule: &RuleDoc| rule.settings[key].as_str().unwrap_or("none").to_owned();
            out.push(
                Change::new(
                    kind,
                    format!(
                        "rule `{}`: {key} {} → {}",
                        new.name,
                        written(old),
                        written(new)
                    ),
                    CONTRACT_FILE,
                    "/rules",
                )
                .with(upstream, probe.clone())
                .with(agent, probe),
            );
        }
        return out;
    }
    let why = format!(
        "rule `{}` now reads other trusted context; what it admits depends on what the adapter puts there",
        new.name
    );
    out.push(
        Change::new(
            "rule_changed",
            format!(
                "rule `{}` settings changed: {} → {}",
                new.name, old.settings, new.settings
            ),
            CONTRACT_FILE,
            "/rules",
        )
        .with(BumpVerdict::UpstreamBreaking, Effect::Unknown(why.clone()))
        .with(BumpVerdict::UpstreamLoosened, Effect::Unknown(why.clone()))
        .with(BumpVerdict::AgentWidened, Effect::Unknown(why.clone()))
        .with(BumpVerdict::AgentNarrowed, Effect::Unknown(why)),
    );
    out
}

fn compare_retry(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = (from.contract.retry_policy(), to.contract.retry_policy());
    if old.max_attempts() != new.max_attempts() || old.time_budget() != new.time_budget() {
        out.push(Change::new(
            "retry_changed",
            format!(
                "retry: {} attempts within {:?} → {} attempts within {:?} (what an adapter does; nothing the gate admits or the agent sees)",
                old.max_attempts(),
                old.time_budget(),
                new.max_attempts(),
                new.time_budget()
            ),
            CONTRACT_FILE,
            "/retry",
        ));
    }
    if old.retryable_codes() != new.retryable_codes() {
        let codes = |codes: &[ErrorCode]| {
            codes
                .iter()
                .map(|code| code.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push(Change::new(
            "retryable_codes_changed",
            format!(
                "retry.retryable_codes [{}] → [{}] (its effect on what the agent is told is under `failure_envelopes`)",
                codes(old.retryable_codes()),
                codes(new.retryable_codes())
            ),
            CONTRACT_FILE,
            "/retry/retryable_codes",
        ));
    }
}

/// Every failure envelope the agent can be shown: `(code, retryable)`.
fn envelopes(version: &Version) -> Result<BTreeSet<(ErrorCode, bool)>, String> {
    let policy = version.contract.retry_policy();
    let mut set = BTreeSet::new();
    // Anything malformed, and an unreachable upstream, are always possible.
    set.insert((
        ErrorCode::InvalidResponse,
        policy.is_retryable(ErrorCode::InvalidResponse),
    ));
    set.insert((
        ErrorCode::UpstreamUnavailable,
        policy.is_retryable(ErrorCode::UpstreamUnavailable),
    ));
    for rule in version.rules() {
        set.insert((ErrorCode::InvalidResponse, rule.retryable));
    }
    for shape in version.shapes() {
        let Some(pointer) = &shape.error_code else {
            continue;
        };
        let root = version.schemas.root(&shape.schema);
        for code in error_codes(&root, pointer)? {
            set.insert((code, policy.is_retryable(code)));
        }
    }
    Ok(set)
}

/// The codes an admitted failure can carry: the values the schema allows at the code's pointer.
fn error_codes(node: &Node, pointer: &str) -> Result<BTreeSet<ErrorCode>, String> {
    let tokens: Vec<&str> = pointer.split('/').skip(1).collect();
    let mut found = BTreeSet::new();
    fn walk(node: &Node, tokens: &[&str], found: &mut BTreeSet<ErrorCode>) -> Result<(), String> {
        let facts = match &node.kind {
            Kind::Nothing => return Ok(()),
            Kind::Facts(facts) => facts,
            _ => {
                return Err(format!(
                    "the failure code's schema at {} is not one the differ models",
                    node.at
                ));
            }
        };
        if facts.union.is_some() {
            for alternative in toolgate_model::alternatives(node) {
                walk(&alternative, tokens, found)?;
            }
            return Ok(());
        }
        match tokens.split_first() {
            Some((first, rest)) => walk(&facts.member(first), rest, found),
            None => {
                let values = facts.values.as_ref().ok_or_else(|| {
                    format!("the failure code at {} is not a closed set", node.at)
                })?;
                found.extend(
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .filter_map(ErrorCode::from_wire),
                );
                Ok(())
            }
        }
    }
    walk(node, &tokens, &mut found)?;
    Ok(found)
}

fn compare_envelopes(from: &Version, to: &Version, out: &mut Vec<Change>) {
    let (old, new) = match (envelopes(from), envelopes(to)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(reason), _) | (_, Err(reason)) => {
            out.push(
                Change::new(
                    "failure_envelopes_unknown",
                    format!("the failure envelopes cannot be listed: {reason}"),
                    CONTRACT_FILE,
                    "",
                )
                .with(BumpVerdict::AgentWidened, Effect::Unknown(reason.clone()))
                .with(BumpVerdict::AgentNarrowed, Effect::Unknown(reason)),
            );
            return;
        }
    };
    let envelope =
        |(code, retryable): &(ErrorCode, bool)| format!("{code} (retryable: {retryable})");
    for pair in new.difference(&old) {
        out.push(
            Change::new(
                "failure_envelope_added",
                format!("the agent can now be told {}", envelope(pair)),
                CONTRACT_FILE,
                "",
            )
            .with(
                BumpVerdict::AgentWidened,
                Effect::Yes(Probe::envelope(pair.0, pair.1)),
            ),
        );
    }
    for pair in old.difference(&new) {
        out.push(
            Change::new(
                "failure_envelope_removed",
                format!("the agent can no longer be told {}", envelope(pair)),
                CONTRACT_FILE,
                "",
            )
            .with(
                BumpVerdict::AgentNarrowed,
                Effect::Yes(Probe::envelope(pair.0, pair.1)),
            ),
        );
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
