//! Witnesses: for every verdict a change makes true, a concrete response (built from one of the
//! tool's own fixtures, changed exactly where the change is) run through both compiled
//! contracts with the real gate. A verdict is only reported true when the gate confirms it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use toolgate_model::edit;
use toolgate_model::{admits, example, example_avoiding, intersect};

use serde_json::{Map, Value};
use toolgate_gate::internals::{failure_envelope, format_timestamp};
use toolgate_gate::{Contract, Decision, Layer, Outcome, Response};

use super::change::{BumpVerdict, Change, Edit, Effect, Probe, Side};
use toolgate_model::{Kind, Node};
use toolgate_model::{RuleDoc, Version};
use toolgate_repo::FixtureClass;
use toolgate_repo::Prepared;
use toolgate_repo::RequestSpec;

/// A response, ready to be a witness's base: its bytes, its request, and both versions'
/// decisions. A fixture of the tool, or one synthesized from a schema (`synthesize.rs`).
pub(crate) struct Base {
    /// The fixture's raw file, or words saying which schema it was synthesized from.
    pub origin: PathBuf,
    /// The fixture's class (a synthesized response is an accepted one of the version it
    /// was built from).
    pub class: FixtureClass,
    /// The shape it was built for, when that is known without the gate (a synthesized base);
    /// a rejected decision names no shape.
    pub shape: Option<String>,
    /// Its raw bytes and request.
    pub prepared: Prepared,
    /// Its raw bytes as JSON, when they are.
    pub document: Option<Value>,
    /// What FROM decided.
    pub from: Decision,
    /// What TO decided.
    pub to: Decision,
}

impl Base {
    pub(crate) fn decision(&self, side: Side) -> &Decision {
        match side {
            Side::From => &self.from,
            Side::To => &self.to,
        }
    }
}

/// One version's decision on a witness, as reports show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `admitted`, `admitted_failure` or `rejected`.
    pub outcome: &'static str,
    /// The rejecting layer and rule, for a rejection.
    pub rejected_at: Option<(String, String)>,
    /// The agent-visible bytes.
    pub agent: String,
}

impl Seen {
    /// What a decision shows.
    pub fn of(decision: &Decision) -> Seen {
        Seen {
            outcome: decision.outcome().as_str(),
            rejected_at: decision.rejection().map(|rejection| {
                (
                    rejection.layer().as_str().to_owned(),
                    decision.rule().unwrap_or_default().to_owned(),
                )
            }),
            agent: String::from_utf8_lossy(decision.agent_bytes()).into_owned(),
        }
    }
}

/// A response that shows a verdict, and both versions' decisions on it.
#[derive(Debug, Clone)]
pub struct Witness {
    /// The verdict it shows.
    pub verdict: BumpVerdict,
    /// The change it demonstrates (an index into the report's changes); `None` when the proof
    /// search found it and no change claimed it, which means the model was wrong.
    pub change: Option<usize>,
    /// The fixture it was built from.
    pub fixture: PathBuf,
    /// How the fixture was changed.
    pub edit: String,
    /// The member the edit set, as it is written in `raw` (`"reviewed_at"`), so a report that
    /// cannot show the whole response shows the part around it.
    pub focus: Option<String>,
    /// How the request was adapted so the rest of the response still holds.
    pub request_changes: Vec<String>,
    /// The request it was decided under (the fixture's, adapted; its `now` is the decision time).
    pub request: RequestSpec,
    /// The witness's raw bytes.
    pub raw: String,
    /// The upstream status sent with it, if any.
    pub status: Option<u16>,
    /// FROM's decision.
    pub from: Seen,
    /// TO's decision.
    pub to: Seen,
}

/// What witness finding concluded for one verdict.
pub(crate) enum WitnessSearch {
    /// Confirmed by the gate.
    Confirmed(Box<Witness>),
    /// Some change says yes, but no response built from the fixtures confirms it.
    Unconfirmed(String),
    /// No change says yes.
    None,
}

/// Looks for a confirmed witness of `verdict` among the changes that claim it.
pub(crate) fn find(
    verdict: BumpVerdict,
    changes: &[Change],
    bases: &[Base],
    from: &Version,
    to: &Version,
) -> WitnessSearch {
    // Each kind that claims it, with how many places do (one edit can reach many).
    let mut claimed: Vec<(&str, usize)> = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        let Effect::Yes(probe) = change.effect(verdict) else {
            continue;
        };
        match claimed.iter_mut().find(|(kind, _)| *kind == change.kind) {
            Some((_, places)) => *places += 1,
            None => claimed.push((change.kind, 1)),
        }
        if let Some(witness) = try_probe(verdict, index, probe, bases, from, to) {
            return WitnessSearch::Confirmed(Box::new(witness));
        }
    }
    if claimed.is_empty() {
        WitnessSearch::None
    } else {
        let places: usize = claimed.iter().map(|(_, places)| places).sum();
        let kinds: Vec<String> = claimed
            .iter()
            .map(|(kind, places)| match places {
                1 => (*kind).to_owned(),
                many => format!("{kind} at {many} places"),
            })
            .collect();
        WitnessSearch::Unconfirmed(format!(
            "the change{} ({}) should make it so, but no response built from the tool's fixtures confirms it through the gate; review by hand",
            if places == 1 { "" } else { "s" },
            kinds.join(", ")
        ))
    }
}

fn try_probe(
    verdict: BumpVerdict,
    change: usize,
    probe: &Probe,
    bases: &[Base],
    from: &Version,
    to: &Version,
) -> Option<Witness> {
    let side = verdict.admitting_side();
    let admitting = match side {
        Side::From => from,
        Side::To => to,
    };
    // Bases the admitting version admits first; then the others (a member only the newer
    // version allows is best added to a response the older one admits).
    let other = match side {
        Side::From => Side::To,
        Side::To => Side::From,
    };
    let admitted_by = |side: Side| {
        bases
            .iter()
            .filter(move |base| base.decision(side).is_admitted())
    };
    // Last, bases both refuse only after their schema admitted them (a promised field or the
    // field a rule reads is missing): the edit may be what they lack.
    let past_the_schema = |base: &&Base| {
        [Side::From, Side::To].iter().all(|side| {
            base.decision(*side)
                .rejection()
                .is_some_and(|rejection| rejection.layer() > Layer::Schema)
        })
    };
    let envelopes = matches!(probe.edit, Edit::Envelope(..));
    let ordered: Vec<&Base> = if envelopes {
        bases.iter().collect()
    } else {
        admitted_by(side)
            .chain(admitted_by(other).filter(|base| !base.decision(side).is_admitted()))
            .chain(bases.iter().filter(past_the_schema))
            .collect()
    };
    for base in ordered {
        let decision = if base.decision(side).is_admitted() {
            base.decision(side)
        } else {
            base.decision(other)
        };
        if let Some(shape) = &probe.shape
            && decision.shape().or(base.shape.as_deref()) != Some(shape.as_str())
        {
            continue;
        }
        for attempt in attempts(probe, base, admitting, from, to) {
            let from_decision = attempt.run(&from.contract, base);
            let to_decision = attempt.run(&to.contract, base);
            if confirms(
                verdict,
                probe,
                &from_decision,
                &to_decision,
                admitting,
                &attempt,
            ) {
                return Some(Witness {
                    verdict,
                    change: Some(change),
                    fixture: base.origin.clone(),
                    edit: attempt.edit_words,
                    focus: attempt.focus,
                    request_changes: attempt.request_changes,
                    request: attempt.request,
                    raw: String::from_utf8_lossy(&attempt.raw).into_owned(),
                    status: attempt.status,
                    from: Seen::of(&from_decision),
                    to: Seen::of(&to_decision),
                });
            }
        }
    }
    None
}

/// One input to run through both versions.
struct Attempt {
    raw: Vec<u8>,
    status: Option<u16>,
    request: RequestSpec,
    edit_words: String,
    /// See [`Witness::focus`].
    focus: Option<String>,
    request_changes: Vec<String>,
}

impl Attempt {
    fn run(&self, contract: &Contract, base: &Base) -> Decision {
        let mut response = Response::body(&self.raw);
        if let Some(status) = self.status {
            response = response.with_status(status);
        }
        contract.admit_response(response, &self.request.to_request(), base.prepared.now)
    }
}

fn confirms(
    verdict: BumpVerdict,
    probe: &Probe,
    from: &Decision,
    to: &Decision,
    admitting: &Version,
    attempt: &Attempt,
) -> bool {
    let (admits, other) = match verdict.admitting_side() {
        Side::From => (from, to),
        Side::To => (to, from),
    };
    match verdict {
        BumpVerdict::UpstreamBreaking | BumpVerdict::UpstreamLoosened => {
            admits.is_admitted() && !other.is_admitted()
        }
        BumpVerdict::AgentWidened | BumpVerdict::AgentNarrowed => {
            let shown = match &probe.edit {
                Edit::Envelope(code, retryable) => {
                    admits.agent_bytes()
                        == failure_envelope(
                            admitting.contract.tool(),
                            &attempt.request.request_id,
                            *code,
                            *retryable,
                        )
                }
                _ => matches!(admits.outcome(), Outcome::Admitted),
            };
            shown && admits.agent_bytes() != other.agent_bytes()
        }
    }
}

/// The inputs a probe makes of one base (usually one; an envelope probe tries a few).
fn attempts(
    probe: &Probe,
    base: &Base,
    admitting: &Version,
    from: &Version,
    to: &Version,
) -> Vec<Attempt> {
    let plain = || Attempt {
        raw: base.prepared.raw.clone(),
        status: base.prepared.request.upstream_status,
        request: base.prepared.request.clone(),
        edit_words: "unchanged".to_owned(),
        focus: None,
        request_changes: Vec::new(),
    };
    match &probe.edit {
        Edit::Keep => vec![plain()],
        Edit::Pad(length) => {
            let mut attempt = plain();
            if attempt.raw.len() >= *length {
                return Vec::new();
            }
            attempt.raw.resize(*length, b' ');
            attempt.edit_words = probe.edit.to_string();
            vec![attempt]
        }
        Edit::Status(status) => {
            let mut attempt = plain();
            attempt.status = Some(*status);
            attempt.edit_words = probe.edit.to_string();
            vec![attempt]
        }
        Edit::Envelope(..) => {
            let mut out = vec![plain()];
            for status in toolgate_gate::internals::unavailable_statuses(&admitting.contract) {
                let mut attempt = plain();
                attempt.status = Some(status);
                attempt.edit_words = format!("sent with upstream status {status}");
                out.push(attempt);
            }
            let mut emptied = plain();
            emptied.raw = b"{}".to_vec();
            emptied.edit_words = "replaced by {}".to_owned();
            out.push(emptied);
            out
        }
        _ => edited(probe, base, admitting, from, to)
            .into_iter()
            .collect(),
    }
}

/// A base whose document is changed at the probe's path.
fn edited(
    probe: &Probe,
    base: &Base,
    admitting: &Version,
    from: &Version,
    to: &Version,
) -> Option<Attempt> {
    let original = base.document.as_ref()?;
    // A place the base does not reach (a member inside array items the base has none of) is
    // reached by building the steps to it from the admitting version's schema.
    let paved;
    let document = if concrete_path(original, &probe.path).is_some() {
        original
    } else {
        paved = pave(original, &probe.path, admitting)?;
        &paved
    };
    let concrete = concrete_path(document, &probe.path)?;
    let current = document.pointer(&concrete);
    let value = match &probe.edit {
        Edit::Replace(value) => Some(value.clone()),
        Edit::Remove => None,
        Edit::Conform(node) => Some(example(node, current)?),
        Edit::Timestamp(seconds) => {
            let when = shift(base.prepared.now, *seconds)?;
            Some(Value::from(format_timestamp(when)?))
        }
        Edit::Resize(count) => Some(Value::Array(resized(current?.as_array()?, *count)?)),
        Edit::Repeat(count, item) => {
            let mut items = match current.and_then(Value::as_array) {
                Some(items) if !items.is_empty() => resized(items, *count)?,
                _ => resized(&[example(item, None)?], *count)?,
            };
            if let [first, second, ..] = items.as_mut_slice() {
                *second = first.clone();
            }
            Some(Value::Array(items))
        }
        Edit::Violate(rule) => Some(violation(
            rule,
            &base.prepared.request,
            base.prepared.now,
            admitting,
            document,
            &concrete,
        )?),
        Edit::Keep | Edit::Pad(_) | Edit::Status(_) | Edit::Envelope(..) => return None,
    };
    let changed = match &value {
        Some(value) => edit::with_value_or_member(document, &concrete, value.clone())?,
        None => edit::without_pointer(document, &concrete),
    };
    let at = if concrete.is_empty() {
        "\"\" (the whole document)"
    } else {
        concrete.as_str()
    };
    let edit_words = match (&value, current) {
        (Some(value), Some(current)) if current == value => format!("{at}: already {value}"),
        (Some(value), _) => format!("{at}: {}", Edit::Replace(value.clone())),
        (None, Some(_)) => format!("{at}: removed"),
        (None, None) => format!("{at}: absent, as the fixture has it"),
    };
    // An unchanged document keeps the fixture's own bytes.
    let raw = if changed == *original {
        base.prepared.raw.clone()
    } else {
        changed.to_string().into_bytes()
    };
    // The member the edit set, spelled as serde_json writes its name.
    let focus = value
        .as_ref()
        .and(concrete.rsplit_once('/'))
        .map(|(_, name)| Value::from(name.replace("~1", "/").replace("~0", "~")).to_string());
    let mut attempt = Attempt {
        raw,
        status: base.prepared.request.upstream_status,
        request: base.prepared.request.clone(),
        edit_words,
        focus,
        request_changes: Vec::new(),
    };
    if probe.adapt_context
        && let Some(value) = &value
    {
        adapt(&mut attempt, &concrete, value, current, from, to);
    }
    Some(attempt)
}

fn shift(now: SystemTime, seconds: i64) -> Option<SystemTime> {
    let by = Duration::from_secs(seconds.unsigned_abs());
    if seconds < 0 {
        now.checked_sub(by)
    } else {
        now.checked_add(by)
    }
}

/// `document` with every step of `path` but the last present: each missing member (or one of
/// the wrong type: a nullable object that is `null`) built as the model's example of what
/// `version`'s schema asks there, of the type the next step needs, and an empty array given
/// one item, so that a probe of a member inside items a base has none of has a place to go.
fn pave(document: &Value, path: &str, version: &Version) -> Option<Value> {
    let root = version
        .shapes()
        .into_iter()
        .map(|shape| version.schemas.root(&shape.schema))
        .find(|root| admits(root, document) == Ok(true))?;
    let tokens: Vec<&str> = path.split('/').skip(1).collect();
    let mut paved = document.clone();
    let mut concrete = String::new();
    for (index, token) in tokens
        .iter()
        .enumerate()
        .take(tokens.len().saturating_sub(1))
    {
        // What the value reached must be to hold the step after it.
        let holds = if tokens.get(index + 1) == Some(&"*") {
            toolgate_model::JsonType::Array
        } else {
            toolgate_model::JsonType::Object
        };
        let fits = |value: Option<&Value>| match value {
            Some(Value::Array(items)) => {
                holds == toolgate_model::JsonType::Array && !items.is_empty()
            }
            Some(Value::Object(_)) => holds == toolgate_model::JsonType::Object,
            _ => false,
        };
        let node = node_along(root.clone(), &paved, &concrete)?;
        let facts = node.facts()?;
        let (next, schema) = if *token == "*" {
            (format!("{concrete}/0"), (*facts.items).clone())
        } else {
            let name = token.replace("~1", "/").replace("~0", "~");
            (
                format!("{concrete}/{token}"),
                facts.member(&name).into_owned(),
            )
        };
        if !fits(paved.pointer(&next)) {
            let typed = toolgate_model::of_type(&schema, holds);
            let mut value = example(&typed, None)?;
            if let Value::Array(items) = &mut value
                && items.is_empty()
            {
                items.push(example(&typed.facts()?.items, None)?);
            }
            paved = if *token == "*" {
                let mut items = paved.pointer(&concrete)?.as_array()?.clone();
                match items.first_mut() {
                    Some(first) => *first = value,
                    None => items.push(value),
                }
                edit::with_value(&paved, &concrete, Value::Array(items))?
            } else {
                edit::with_value_or_member(&paved, &next, value)?
            };
        }
        concrete = next;
    }
    Some(paved)
}

/// `path` with each `*` replaced by the first index the document has there.
fn concrete_path(document: &Value, path: &str) -> Option<String> {
    let mut concrete = String::new();
    let mut here = document;
    for token in path.split('/').skip(1) {
        let token = if token == "*" {
            if here.as_array()?.is_empty() {
                return None;
            }
            "0"
        } else {
            token
        };
        concrete.push('/');
        concrete.push_str(token);
        match here.pointer(&format!("/{token}")) {
            Some(next) => here = next,
            // Only the last step may be missing: it is then added.
            None => {
                return (concrete.len() == path.len() || !path[concrete.len()..].contains('/'))
                    .then_some(concrete);
            }
        }
    }
    Some(concrete)
}

/// The schema node a version applies at `pointer` in `document`, through the branch the
/// document takes.
pub(crate) fn node_at(version: &Version, document: &Value, pointer: &str) -> Option<Node> {
    let shape = version
        .shapes()
        .into_iter()
        .find(|shape| admits(&version.schemas.root(&shape.schema), document) == Ok(true))?;
    node_along(version.schemas.root(&shape.schema), document, pointer)
}

/// The schema node `root` applies at `pointer` in `document`, through the branch the document
/// takes at each step (whether or not `root` admits the document: a repair asks of one it does
/// not yet).
pub(crate) fn node_along(root: Node, document: &Value, pointer: &str) -> Option<Node> {
    let mut node = root;
    let mut here = document;
    for token in pointer.split('/').skip(1) {
        node = through_branch(node, here);
        let facts = node.facts()?.clone();
        let name = token.replace("~1", "/").replace("~0", "~");
        node = match here {
            Value::Array(_) => (*facts.items).clone(),
            _ => facts.member(&name).into_owned(),
        };
        here = here.pointer(&format!("/{token}"))?;
    }
    Some(through_branch(node, here))
}

fn through_branch(node: Node, value: &Value) -> Node {
    let Kind::Facts(facts) = &node.kind else {
        return node;
    };
    let Some(union) = &facts.union else {
        return node;
    };
    let Some(branch) = union
        .branches
        .iter()
        .find(|branch| admits(branch, value) == Ok(true))
    else {
        return node;
    };
    let mut without = node.clone();
    if let Kind::Facts(facts) = &mut without.kind {
        Arc::make_mut(facts).union = None;
    }
    intersect(&without, branch)
}

/// A value for the rule's field that breaks the rule under `request`, and that the schema still
/// admits (so it is the rule, not the schema, that refuses it).
fn violation(
    rule: &RuleDoc,
    request: &RequestSpec,
    now: SystemTime,
    version: &Version,
    document: &Value,
    pointer: &str,
) -> Option<Value> {
    let context = |key: &str| request.context.get(key).cloned().unwrap_or(Value::Null);
    let key = rule.settings["context"].as_str().unwrap_or_default();
    let node = node_at(version, document, pointer)?;
    match rule.kind.as_str() {
        "binding" => example_avoiding(&node, &[context(key)]),
        "membership" => {
            let listed = context(key).as_array().cloned().unwrap_or_default();
            example_avoiding(&node, &listed)
        }
        "lookup" => {
            let keys: Vec<Value> = context(key)
                .as_object()
                .map(|table| {
                    table
                        .keys()
                        .flat_map(|key| {
                            let number = key.parse::<i64>().ok().map(Value::from);
                            [Some(Value::from(key.as_str())), number]
                                .into_iter()
                                .flatten()
                        })
                        .collect()
                })
                .unwrap_or_default();
            example_avoiding(&node, &keys)
        }
        "freshness" => {
            // Older than the window by a minute.
            let age = rule.settings["max_age"]
                .as_str()
                .and_then(|text| toolgate_gate::internals::parse_duration(text).ok())?;
            let when = now.checked_sub(age + Duration::from_secs(60))?;
            Some(Value::from(format_timestamp(when)?))
        }
        _ => None,
    }
}

/// Adapts the request so an edited value still satisfies the rules on its field and the
/// correlation on the request id (in either version): the difference is then the one change.
fn adapt(
    attempt: &mut Attempt,
    pointer: &str,
    value: &Value,
    previous: Option<&Value>,
    from: &Version,
    to: &Version,
) {
    for version in [from, to] {
        let current = version.shapes().into_iter().next();
        let Some(current) = current else { continue };
        if version.document["shape"]["correlation"]["request_id"].as_str() == Some(pointer)
            && let Some(id) = value.as_str()
            && attempt.request.request_id != id
        {
            attempt.request.request_id = id.to_owned();
            attempt
                .request_changes
                .push(format!("request id set to {value}"));
        }
        for rule in version.rules() {
            let Some((field_pointer, _)) = current.fields.get(rule.field()) else {
                continue;
            };
            if field_pointer != pointer {
                continue;
            }
            let key = rule.settings["context"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let context = &mut attempt.request.context;
            match rule.kind.as_str() {
                "binding" if context.get(&key) != Some(value) => {
                    context.insert(key.clone(), value.clone());
                    attempt
                        .request_changes
                        .push(format!("context `{key}` set to {value}"));
                }
                "membership" => {
                    let list = context
                        .entry(key.clone())
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Some(items) = list.as_array_mut()
                        && !items.contains(value)
                    {
                        items.push(value.clone());
                        attempt
                            .request_changes
                            .push(format!("{value} added to context `{key}`"));
                    }
                }
                "lookup" => {
                    let record_key = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    let old_key = previous.map(|previous| match previous {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                    let table = context
                        .entry(key.clone())
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(table) = table.as_object_mut()
                        && !table.contains_key(&record_key)
                        && let Some(record) = old_key.and_then(|old| table.get(&old).cloned())
                    {
                        table.insert(record_key.clone(), record);
                        attempt
                            .request_changes
                            .push(format!("record {record_key} added to context `{key}`"));
                    }
                }
                _ => {}
            }
        }
    }
}

/// `items` resized to `count`: cut, or its last item repeated; `None` for an empty array that
/// must grow.
fn resized(items: &[Value], count: usize) -> Option<Vec<Value>> {
    let mut resized: Vec<Value> = items.iter().take(count).cloned().collect();
    while resized.len() < count {
        resized.push(items.last()?.clone());
    }
    Some(resized)
}
