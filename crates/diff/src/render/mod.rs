//! The renderings of a [`Report`]: human (a terminal), markdown (a pull-request comment),
//! SARIF (code scanning) and JSON (serialize-only types, kept apart from the logic so the format changes on purpose),
//! one file each, and the words they share.
//!
//! Every string that came from the repository (descriptions quoting schema values, file names,
//! response bytes) is escaped for where it goes: control and bidi characters for terminals,
//! markdown and HTML syntax for comments.

mod human;
mod json;
mod markdown;
mod sarif;

pub use json::SCHEMA;

use crate::DiffFormat;
use crate::answer::{LiveCall, Report, ServerFacts};
use crate::change::{BumpVerdict, Change, Effect};
use crate::traffic::{BlastRadius, Example, Shift};
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
    /// The report in `format`; `color` for a terminal that takes it. SARIF names files relative
    /// to the current folder and marks no verdict as failing: [`Report::sarif`] says otherwise.
    pub fn render(&self, format: DiffFormat, color: bool) -> String {
        match format {
            DiffFormat::Human => human::human(self, color),
            DiffFormat::Markdown => markdown::markdown(self),
            DiffFormat::Json => json::json(self),
            DiffFormat::Sarif => self.sarif(std::path::Path::new("."), &[]),
        }
    }

    /// The report as a SARIF log, its files under `root` (as given on the command line), each
    /// verdict `fail_on` names an error.
    pub fn sarif(&self, root: &std::path::Path, fail_on: &[crate::FailOn]) -> String {
        self.sarif_log(root, fail_on).render()
    }

    /// The SARIF log of [`Report::sarif`], before it is written (to join several as runs).
    pub fn sarif_log(
        &self,
        root: &std::path::Path,
        fail_on: &[crate::FailOn],
    ) -> toolgate_repo::sarif::Log {
        sarif::sarif(self, root, fail_on)
    }
}

/// The traffic's three shifts, each with its words for `to`.
pub(super) fn shifts<'r>(radius: &'r BlastRadius, to: &str) -> [(String, &'r Shift); 3] {
    [
        (format!("newly refused by {to}"), &radius.newly_refused),
        (format!("newly admitted by {to}"), &radius.newly_admitted),
        (
            format!("shown differently by {to} (same outcome, other agent bytes)"),
            &radius.output_changed,
        ),
    ]
}

/// What the server showed of the tool, in one line: `the server `node server.js` lists `weather`
/// and declares an outputSchema`.
pub(super) fn server_heading(report: &Report, facts: &ServerFacts) -> String {
    let declared = match (facts.listed, facts.declares_output_schema) {
        (false, _) => "does not list it",
        (true, false) => "lists it without an outputSchema",
        (true, true) => {
            "lists it with an outputSchema, compared as TO (`server`) with the contract as FROM"
        }
    };
    format!(
        "`{}` checked against the server `{}`, which {declared}",
        report.tool, facts.server
    )
}

/// A live call as the reports name it: where its arguments came from, and what the contract
/// decided of its result.
pub(super) fn live_call_words(call: &LiveCall) -> String {
    match &call.decided {
        Ok(seen) => format!("{}: {}", call.arguments_from, decision_words(seen)),
        Err(why) => format!("{}: no result to decide ({why})", call.arguments_from),
    }
}

/// A shift as the reports name it: its records, and the share of traffic they stand for (each
/// weighted by how it was sampled): `4 of 16 records, an estimated 25.0 % of calls (± 12.3)`.
pub(super) fn shift_share(shift: &Shift, radius: &BlastRadius) -> String {
    if radius.decided == 0 {
        return shift.count.to_string();
    }
    let mut words = format!(
        "{} of {} records, an estimated {:.1} % of calls",
        shift.count,
        radius.decided,
        100.0 * shift.estimate.share
    );
    if shift.estimate.margin > 0.0 {
        words.push_str(&format!(" (± {:.1})", 100.0 * shift.estimate.margin));
    }
    words
}

/// `count` as a share of the responses replayed: `12 (3.0 %)`.
pub(super) fn share(count: usize, radius: &BlastRadius) -> String {
    let considered = radius.decided + radius.undecided;
    if considered == 0 {
        return count.to_string();
    }
    format!(
        "{count} ({:.1} %)",
        100.0 * count as f64 / considered as f64
    )
}

/// A cause as the reports name it: `schema INVALID_RESPONSE`.
pub(super) fn cause_words((layer, code): &(String, String)) -> String {
    match (layer.is_empty(), code.is_empty()) {
        (true, true) => "no refusal (the projection differs)".to_owned(),
        (false, true) => layer.clone(),
        (true, false) => code.clone(),
        (false, false) => format!("{layer} {code}"),
    }
}

/// One shifted response as the reports name it: never a value, only digests and a pointer.
pub(super) fn example_words(example: &Example) -> String {
    let mut words = format!("sha256 {}", example.raw_sha256);
    if let (Some(layer), Some(rule)) = (&example.layer, &example.rule) {
        words.push_str(&format!(", refused at {layer} ({rule})"));
    }
    if let Some(pointer) = &example.pointer {
        words.push_str(&format!(" at {}", toolgate_repo::text::pointer(pointer)));
    }
    words.push_str(&format!(
        "; kept by {} at {}",
        example.kept_by, example.time
    ));
    words
}

/// The heading line of the traffic section.
pub(super) fn traffic_heading(radius: &BlastRadius) -> String {
    let read = radius.decided + radius.undecided;
    let mut heading = format!(
        "{read} of the {} responses {} holds of the tool replayed",
        radius.held, radius.store
    );
    let skipped = radius.held - read;
    if skipped > 0 {
        heading.push_str(&format!(" (the newest; {skipped} older not read)"));
    }
    heading.push_str(&format!(", {} decided under both versions", radius.decided));
    if radius.decided > 0 {
        heading.push_str(&format!(
            ", standing for {:.0} calls (each record weighted by the inverse of the rate it was kept at)",
            radius.traffic
        ));
    }
    if radius.unrated > 0 {
        heading.push_str(&format!(
            "; {} say no rate (written before records did) and are weighted as kept at 1",
            radius.unrated
        ));
    }
    heading
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
    meaning_between(verdict, &report.from, &report.to)
}

/// What `verdict` means for the bump from `from` to `to`.
pub(super) fn meaning_between(verdict: BumpVerdict, from: &str, to: &str) -> String {
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

/// The other places an edit governs, as the reports list them, each written by `quote`:
/// `and 1 more place: /data/b`, or the first three of many, `and 23 more places: /a, /b, /c, …`;
/// `None` when it governs one.
pub(super) fn more_places(change: &Change, quote: impl Fn(&str) -> String) -> Option<String> {
    const SHOWN: usize = 3;
    let count = change.more_places.len();
    if count == 0 {
        return None;
    }
    let mut listed: Vec<String> = change
        .more_places
        .iter()
        .take(SHOWN)
        .map(|place| quote(place))
        .collect();
    if count > SHOWN {
        listed.push("…".to_owned());
    }
    Some(format!(
        "and {count} more {}: {}",
        if count == 1 { "place" } else { "places" },
        listed.join(", ")
    ))
}

pub(super) fn location(change: &Change) -> String {
    if change.pointer.is_empty() {
        change.file.clone()
    } else {
        format!("{}#{}", change.file, change.pointer)
    }
}
