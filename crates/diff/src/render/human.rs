//! `toolgate diff` for a terminal.

use std::fmt::Write as _;

use toolgate_gate::internals::escape_hidden;
use toolgate_repo::text::{Tone, paint};

use super::{
    cause_words, decision_words, effect_word, example_words, live_call_words, location, meaning,
    more_places, server_heading, share, shift_share, shifts, traffic_heading, words, yes_no,
};
use crate::answer::{Answer, Report};
use crate::change::BumpVerdict;
use crate::traffic::BlastRadius;
use crate::witness::Witness;

/// For a terminal.
pub(crate) fn human(report: &Report, color: bool) -> String {
    let paint = |tone: Tone, text: &str| paint(color, tone, text);
    let (bold, red, yellow) = (Tone::Strong, Tone::Bad, Tone::Warn);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} {} → {}",
        paint(bold, "toolgate diff"),
        report.tool,
        report.from,
        report.to
    );
    let _ = writeln!(out);
    for answer in &report.answers {
        let value = yes_no(answer.value);
        let shown = match answer.value {
            Some(true) => paint(red, value),
            None => paint(yellow, value),
            Some(false) => value.to_owned(),
        };
        let _ = writeln!(
            out,
            "  {:<18} {shown:<9}  ({})",
            words(answer.verdict),
            meaning(answer.verdict, report)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{} ({})", paint(bold, "changes"), report.changes.len());
    if report.changes.is_empty() {
        let _ = writeln!(out, "  none: the two versions decide and show the same");
    }
    for change in &report.changes {
        let mut at = change
            .instance
            .as_deref()
            .map(|instance| format!("  at {}", toolgate_repo::text::pointer(instance)))
            .unwrap_or_default();
        if let Some(more) = more_places(change, |place| place.to_owned()) {
            at.push(' ');
            at.push_str(&more);
        }
        let _ = writeln!(
            out,
            "  {}  {}{}",
            change.kind,
            escape_hidden(&location(change)),
            escape_hidden(&at)
        );
        let _ = writeln!(out, "      {}", escape_hidden(&change.description));
        match change.declared {
            Some((widened, narrowed)) => {
                let _ = writeln!(
                    out,
                    "      declared only (the agent sees what projection builds): widens {}, narrows {}",
                    if widened { "yes" } else { "no" },
                    if narrowed { "yes" } else { "no" }
                );
            }
            None => {
                let effects: Vec<String> = BumpVerdict::ALL
                    .iter()
                    .map(|verdict| {
                        format!(
                            "{}: {}",
                            verdict.short(),
                            effect_word(change.effect(*verdict))
                        )
                    })
                    .collect();
                let _ = writeln!(out, "      {}", effects.join("  "));
            }
        }
    }
    let witnesses: Vec<&Answer> = report
        .answers
        .iter()
        .filter(|answer| answer.witness.is_some())
        .collect();
    if !witnesses.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            paint(bold, "witnesses (confirmed by both compiled contracts)")
        );
    }
    for answer in witnesses {
        let Some(witness) = &answer.witness else {
            continue;
        };
        let _ = writeln!(
            out,
            "  {} ({}):",
            words(answer.verdict),
            super::claimed_by(witness, report)
        );
        for line in witness_lines(witness, report) {
            let _ = writeln!(out, "      {}", escape_hidden(&line));
        }
    }
    let undecided: Vec<&Answer> = report
        .answers
        .iter()
        .filter(|answer| answer.value.is_none())
        .collect();
    if !undecided.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", paint(yellow, "undecided: review by hand"));
        for answer in undecided {
            for reason in &answer.reasons {
                let _ = writeln!(
                    out,
                    "  {}: {}",
                    words(answer.verdict),
                    escape_hidden(reason)
                );
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} {} of {} fixtures decide differently",
        paint(bold, "replay:"),
        report.replay.len(),
        report.replayed
    );
    for row in &report.replay {
        let _ = writeln!(
            out,
            "  {} ({})",
            escape_hidden(&row.fixture.display().to_string()),
            row.class
        );
        let _ = writeln!(
            out,
            "      {}: {}; {}: {}",
            report.from,
            decision_words(&row.from),
            report.to,
            decision_words(&row.to)
        );
        if row.from.agent == row.to.agent {
            let _ = writeln!(out, "      the agent sees the same bytes");
            continue;
        }
        let labels = (report.from.as_str(), report.to.as_str());
        for line in
            toolgate_repo::text::diff::labelled(&row.from.agent, &row.to.agent, labels, color)
                .lines()
        {
            let _ = writeln!(out, "      {line}");
        }
    }
    if let Some(radius) = &report.traffic {
        traffic(&mut out, radius, report, color);
    }
    if let Some(facts) = &report.server {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{} {}",
            paint(bold, "server:"),
            escape_hidden(&server_heading(report, facts))
        );
        if !facts.calls.is_empty() {
            let refused = facts.refused().count();
            let _ = writeln!(
                out,
                "live calls ({}, {refused} refused or unanswered)",
                facts.calls.len()
            );
            for call in &facts.calls {
                let _ = writeln!(out, "  {}", escape_hidden(&live_call_words(call)));
            }
        }
    }
    out
}

/// The blast radius on production's traffic (`--replay`).
fn traffic(out: &mut String, radius: &BlastRadius, report: &Report, color: bool) {
    let paint = |tone: Tone, text: &str| paint(color, tone, text);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} {}",
        paint(Tone::Strong, "traffic:"),
        escape_hidden(&traffic_heading(radius))
    );
    for (label, shift) in shifts(radius, &report.to) {
        let count = shift_share(shift, radius);
        let shown = if shift.count > 0 {
            paint(Tone::Bad, &count)
        } else {
            count
        };
        let _ = writeln!(out, "  {label}: {shown}");
        for (cause, count) in &shift.by_cause {
            let _ = writeln!(out, "      {}: {count}", cause_words(cause));
        }
        for example in &shift.examples {
            let _ = writeln!(out, "      {}", escape_hidden(&example_words(example)));
        }
    }
    if radius.undecided > 0 {
        let _ = writeln!(
            out,
            "  {}: {} (--fail-on counts them as shifted: unknown is not safe)",
            paint(Tone::Warn, "could not be decided"),
            share(radius.undecided, radius)
        );
        for reason in &radius.undecided_reasons {
            let _ = writeln!(out, "      {}", escape_hidden(reason));
        }
    }
}

pub(super) fn witness_lines(witness: &Witness, report: &Report) -> Vec<String> {
    let mut lines = vec![format!(
        "from {}: {}",
        witness.fixture.display(),
        witness.edit
    )];
    for change in &witness.request_changes {
        lines.push(format!("request: {change}"));
    }
    if let Some(status) = witness.status {
        lines.push(format!("upstream status: {status}"));
    }
    lines.push(format!(
        "response: {}",
        excerpt(&witness.raw, witness.focus.as_deref(), 400)
    ));
    lines.push(format!(
        "{}: {} → {}",
        report.from,
        decision_words(&witness.from),
        excerpt(&witness.from.agent, witness.focus.as_deref(), 400)
    ));
    lines.push(format!(
        "{}: {} → {}",
        report.to,
        decision_words(&witness.to),
        excerpt(&witness.to.agent, witness.focus.as_deref(), 400)
    ));
    lines
}

/// `text`, or at most `limit` characters of it around the first `focus` in it (the member a
/// witness changed), marked `…` where cut, so the change is always in view.
pub(super) fn excerpt(text: &str, focus: Option<&str>, limit: usize) -> String {
    let total = text.chars().count();
    let at = focus.and_then(|focus| text.find(focus));
    let Some(at) = at.filter(|_| total > limit) else {
        return shorten(text, limit);
    };
    // A third of the window before the member, the rest after it.
    let focus_char = text[..at].chars().count();
    let start = focus_char.saturating_sub(limit / 3).min(total - limit);
    let window: String = text.chars().skip(start).take(limit).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + limit < total {
        format!("… ({total} characters)")
    } else {
        String::new()
    };
    format!("{before}{window}{after}")
}

pub(super) fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let cut: String = text.chars().take(limit).collect();
    format!("{cut}… ({} characters)", text.chars().count())
}
