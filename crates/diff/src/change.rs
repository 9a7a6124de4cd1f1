//! What a contract bump changed, and what each change does to the four verdicts.

use std::fmt;

use serde_json::Value;

use toolgate_gate::ErrorCode;

use toolgate_model::Node;
use toolgate_model::RuleDoc;

/// The four questions a reviewer asks of a bump, each a set inclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BumpVerdict {
    /// Some response FROM admits, TO rejects.
    UpstreamBreaking,
    /// Some response TO admits, FROM rejects.
    UpstreamLoosened,
    /// Some agent-visible output possible under TO is impossible under FROM.
    AgentWidened,
    /// Some output possible under FROM is impossible under TO.
    AgentNarrowed,
}

impl BumpVerdict {
    /// All four, in report order.
    pub const ALL: [BumpVerdict; 4] = [
        BumpVerdict::UpstreamBreaking,
        BumpVerdict::UpstreamLoosened,
        BumpVerdict::AgentWidened,
        BumpVerdict::AgentNarrowed,
    ];

    /// The JSON report's key, e.g. `upstream_breaking`.
    pub fn key(self) -> &'static str {
        match self {
            BumpVerdict::UpstreamBreaking => "upstream_breaking",
            BumpVerdict::UpstreamLoosened => "upstream_loosened",
            BumpVerdict::AgentWidened => "agent_widened",
            BumpVerdict::AgentNarrowed => "agent_narrowed",
        }
    }

    /// The `--fail-on` word, e.g. `breaking`.
    pub fn short(self) -> &'static str {
        match self {
            BumpVerdict::UpstreamBreaking => "breaking",
            BumpVerdict::UpstreamLoosened => "loosened",
            BumpVerdict::AgentWidened => "widened",
            BumpVerdict::AgentNarrowed => "narrowed",
        }
    }

    /// Which version must admit the response a witness starts from.
    pub fn admitting_side(self) -> Side {
        match self {
            BumpVerdict::UpstreamBreaking | BumpVerdict::AgentNarrowed => Side::From,
            BumpVerdict::UpstreamLoosened | BumpVerdict::AgentWidened => Side::To,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for BumpVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// One of the two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The older version.
    From,
    /// The newer version.
    To,
}

/// What a change does to one verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Nothing.
    No,
    /// It makes the verdict true; the probe says how to build a response that shows it.
    Yes(Probe),
    /// It cannot be decided exactly; the reason asks for human review.
    Unknown(String),
}

impl Effect {
    /// `true`, `false` or `null` for the report.
    pub fn as_json(&self) -> Value {
        match self {
            Effect::No => Value::Bool(false),
            Effect::Yes(_) => Value::Bool(true),
            Effect::Unknown(_) => Value::Null,
        }
    }

    /// The stronger of two effects: yes over unknown over no.
    pub fn or(self, other: Effect) -> Effect {
        match (self, other) {
            (Effect::Yes(probe), _) | (_, Effect::Yes(probe)) => Effect::Yes(probe),
            (Effect::Unknown(reason), _) | (_, Effect::Unknown(reason)) => Effect::Unknown(reason),
            _ => Effect::No,
        }
    }
}

/// How to build a witness: take a response the admitting version admits (from the tool's
/// fixtures), change it, and run it through both versions.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Where in the response to change it (a JSON pointer; `*` stands for any array index).
    pub path: String,
    /// The change.
    pub edit: Edit,
    /// Whether to adapt the request's trusted context so the edited value still satisfies the
    /// rules on its field (off when the probe is about a rule itself).
    pub adapt_context: bool,
    /// Only responses admitted through this shape may serve as the base.
    pub shape: Option<String>,
}

impl Probe {
    /// A probe that replaces (or inserts) the value at `path`.
    pub fn replace(path: &str, value: Value) -> Probe {
        Probe {
            path: path.to_owned(),
            edit: Edit::Replace(value),
            adapt_context: true,
            shape: None,
        }
    }

    /// A probe that runs a base response unchanged.
    pub fn keep(shape: Option<&str>) -> Probe {
        Probe {
            path: String::new(),
            edit: Edit::Keep,
            adapt_context: false,
            shape: shape.map(str::to_owned),
        }
    }
}

/// A change to a base response.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Set the value at the path (adding the member if it is missing).
    Replace(Value),
    /// Remove the member at the path.
    Remove,
    /// The base as it is.
    Keep,
    /// Pad the raw bytes with trailing whitespace to this total length.
    Pad(usize),
    /// Report this upstream status with the base.
    Status(u16),
    /// Set the timestamp at the path to the base's decision time shifted by this many seconds
    /// (negative: in the past).
    Timestamp(i64),
    /// Resize the array at the path to this many items (repeating or dropping its items).
    Resize(usize),
    /// Resize the array at the path to this many items (at least 2), its first item repeated in
    /// the second place: an array `uniqueItems` refuses. An array that is empty or missing
    /// starts from an example of the items schema given.
    Repeat(usize, Box<Node>),
    /// Replace the value at the path with one this schema node admits, as close to the base's
    /// value as it allows (a branch only one version has).
    Conform(Box<Node>),
    /// Set the value at the path to one that breaks this rule under the base's request.
    Violate(Box<RuleDoc>),
    /// Any input (a base, sent with an unavailable status, or emptied) for which the admitting
    /// version tells the agent exactly this failure.
    Envelope(ErrorCode, bool),
}

impl fmt::Display for Edit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edit::Replace(value) => {
                let shown = value.to_string();
                if shown.chars().count() > 80 {
                    let cut: String = shown.chars().take(80).collect();
                    write!(f, "set to {cut}… ({} characters)", shown.chars().count())
                } else {
                    write!(f, "set to {shown}")
                }
            }
            Edit::Remove => f.write_str("removed"),
            Edit::Keep => f.write_str("unchanged"),
            Edit::Pad(length) => write!(f, "padded with whitespace to {length} bytes"),
            Edit::Status(status) => write!(f, "sent with upstream status {status}"),
            Edit::Timestamp(seconds) if *seconds < 0 => {
                write!(f, "set to the decision time minus {}s", -seconds)
            }
            Edit::Timestamp(seconds) => write!(f, "set to the decision time plus {seconds}s"),
            Edit::Resize(count) => write!(f, "resized to {count} items"),
            Edit::Repeat(count, _) => {
                write!(
                    f,
                    "resized to {count} items, the first repeated as the second"
                )
            }
            Edit::Conform(node) => write!(f, "made to match the schema at {}", node.at),
            Edit::Violate(rule) => write!(f, "set to a value that breaks rule `{}`", rule.name),
            Edit::Envelope(code, retryable) => {
                write!(
                    f,
                    "chosen to make the gate answer {code} (retryable: {retryable})"
                )
            }
        }
    }
}

/// One change between two contract versions.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// What kind of change, e.g. `enum_narrowed`.
    pub kind: &'static str,
    /// What changed, in words.
    pub description: String,
    /// The file it is in (`contract.yaml`, or a schema file).
    pub file: String,
    /// The JSON pointer in that file (for a schema: where the keyword is written).
    pub pointer: String,
    /// The JSON pointer in the response it concerns, when it concerns one.
    pub instance: Option<String>,
    /// The shape it concerns, when it concerns one.
    pub shape: Option<String>,
    effects: [Effect; 4],
    /// For the agent schema: what the declaration says, which projection then has to honour.
    pub declared: Option<(bool, bool)>,
    /// The other places in a response the same edit governs (a definition reached through
    /// several paths, or a recursive one at each depth), in the order found: the change is
    /// listed once, at `instance`, "and N more places".
    pub more_places: Vec<String>,
}

impl Change {
    /// A change with no effect yet.
    pub fn new(
        kind: &'static str,
        description: impl Into<String>,
        file: &str,
        pointer: &str,
    ) -> Change {
        Change {
            kind,
            description: description.into(),
            file: file.to_owned(),
            pointer: pointer.to_owned(),
            instance: None,
            shape: None,
            effects: [Effect::No, Effect::No, Effect::No, Effect::No],
            declared: None,
            more_places: Vec::new(),
        }
    }

    /// Sets one verdict's effect.
    pub fn with(mut self, verdict: BumpVerdict, effect: Effect) -> Change {
        self.effects[verdict.index()] = effect;
        self
    }

    /// Sets the response pointer it concerns.
    pub fn at(mut self, instance: &str) -> Change {
        self.instance = Some(instance.to_owned());
        self
    }

    /// The effect on one verdict.
    pub fn effect(&self, verdict: BumpVerdict) -> &Effect {
        &self.effects[verdict.index()]
    }

    /// Replaces the effect on one verdict.
    pub fn set(&mut self, verdict: BumpVerdict, effect: Effect) {
        self.effects[verdict.index()] = effect;
    }
}

/// One change per edit: changes of the same kind at the same schema location (`file#pointer`)
/// that say the same thing but for the place in a response they govern are one edit reached
/// through several paths. Each is merged into the first of its kind, its places added to
/// `more_places`, and each verdict's effect the strongest any place has (yes over undecided over
/// no: the edit makes a verdict true if it does so anywhere). Returns the merged changes and,
/// for each original index, its index among them, for what refers to a change by index.
pub(crate) fn one_per_edit(changes: Vec<Change>) -> (Vec<Change>, Vec<usize>) {
    let mut merged: Vec<Change> = Vec::new();
    let mut first_of: std::collections::HashMap<
        (&'static str, String, String, String, bool),
        usize,
    > = std::collections::HashMap::new();
    let mut index_of = Vec::with_capacity(changes.len());
    for change in changes {
        let key = (
            change.kind,
            change.file.clone(),
            change.pointer.clone(),
            without_place(&change).to_owned(),
            change.declared.is_some(),
        );
        match first_of.get(&key) {
            Some(&at) => {
                let first = &mut merged[at];
                // Listed at its shallowest place: the one a reader finds first in a response.
                let depth = |instance: &Option<String>| {
                    instance
                        .as_ref()
                        .map_or(0, |place| place.matches('/').count())
                };
                let mut change = change;
                if depth(&change.instance) < depth(&first.instance) {
                    std::mem::swap(&mut first.instance, &mut change.instance);
                    std::mem::swap(&mut first.description, &mut change.description);
                    std::mem::swap(&mut first.shape, &mut change.shape);
                }
                first.more_places.extend(change.instance.clone());
                for verdict in BumpVerdict::ALL {
                    let stronger = match (first.effect(verdict), change.effect(verdict)) {
                        (Effect::Yes(_), _) => false,
                        (_, Effect::Yes(_)) => true,
                        (Effect::No, Effect::Unknown(_)) => true,
                        _ => false,
                    };
                    if stronger {
                        first.set(verdict, change.effect(verdict).clone());
                    }
                }
                if let (Some(first), Some(other)) = (&mut first.declared, change.declared) {
                    *first = (first.0 || other.0, first.1 || other.1);
                }
                index_of.push(at);
            }
            None => {
                first_of.insert(key, merged.len());
                index_of.push(merged.len());
                merged.push(change);
            }
        }
    }
    for change in &mut merged {
        change
            .more_places
            .sort_by(|a, b| (a.matches('/').count(), a).cmp(&(b.matches('/').count(), b)));
        change.more_places.dedup();
    }
    (merged, index_of)
}

/// A change's description without the response place it starts with (`/data: property …` at
/// `/data/reviewed_at`): what two places of one edit say alike.
fn without_place(change: &Change) -> &str {
    let (Some(instance), Some((place, rest))) =
        (&change.instance, change.description.split_once(": "))
    else {
        return &change.description;
    };
    let whole = toolgate_repo::text::pointer("");
    if place == whole || (place.starts_with('/') && instance.starts_with(place)) {
        rest
    } else {
        &change.description
    }
}
