//! The three renderings of a [`Report`]: human (a terminal), markdown (a pull-request comment)
//! and JSON (serialize-only types, kept apart from the logic so the format changes on purpose),
//! one file each, and the words they share.
//!
//! Every string that came from the repository (descriptions quoting schema values, file names,
//! response bytes) is escaped for where it goes: control and bidi characters for terminals,
//! markdown and HTML syntax for comments.

mod human;
mod json;
mod markdown;

pub use json::SCHEMA;

use crate::DiffFormat;
use crate::answer::Report;
use crate::change::{BumpVerdict, Change, Effect};
use crate::witness::{Seen, Witness};

/// What a witness shows: the kind of change that claimed it, or that the proof search found it
/// where the model said no change could (the model was wrong: a bug to report).
pub(super) fn claimed_by<'r>(witness: &Witness, report: &'r Report) -> &'r str {
    match witness.change.and_then(|index| report.changes.get(index)) {
        Some(change) => change.kind,
        None => {
            "found by the proof search; the model said no change could, which is a bug in toolgate diff"
        }
    }
}

impl Report {
    /// The report in `format`; `color` for a terminal that takes it.
    pub fn render(&self, format: DiffFormat, color: bool) -> String {
        match format {
            DiffFormat::Human => human::human(self, color),
            DiffFormat::Markdown => markdown::markdown(self),
            DiffFormat::Json => json::json(self),
        }
    }
}

pub(super) fn words(verdict: BumpVerdict) -> &'static str {
    match verdict {
        BumpVerdict::UpstreamBreaking => "upstream breaking",
        BumpVerdict::UpstreamLoosened => "upstream loosened",
        BumpVerdict::AgentWidened => "agent widened",
        BumpVerdict::AgentNarrowed => "agent narrowed",
    }
}

pub(super) fn meaning(verdict: BumpVerdict, report: &Report) -> String {
    let (from, to) = (&report.from, &report.to);
    match verdict {
        BumpVerdict::UpstreamBreaking => format!("a response {from} admits, {to} rejects"),
        BumpVerdict::UpstreamLoosened => format!("a response {to} admits, {from} rejects"),
        BumpVerdict::AgentWidened => format!("the agent can see what {from} never showed it"),
        BumpVerdict::AgentNarrowed => format!("the agent can no longer see what {from} showed it"),
    }
}

pub(super) fn yes_no(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "undecided",
    }
}

pub(super) fn effect_word(effect: &Effect) -> &'static str {
    match effect {
        Effect::No => "no",
        Effect::Yes(_) => "yes",
        Effect::Unknown(_) => "?",
    }
}

pub(super) fn decision_words(seen: &Seen) -> String {
    match &seen.rejected_at {
        Some((layer, rule)) => format!("rejected at {layer} ({rule})"),
        None => seen.outcome.replace('_', " "),
    }
}

pub(super) fn location(change: &Change) -> String {
    if change.pointer.is_empty() {
        change.file.clone()
    } else {
        format!("{}#{}", change.file, change.pointer)
    }
}
