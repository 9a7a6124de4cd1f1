//! The three renderings of a [`Report`]: human (a terminal), markdown (a pull-request comment)
//! and JSON (serialize-only types, kept apart from the logic so the format changes on purpose).
//!
//! Every string that came from the repository (descriptions quoting schema values, file names,
//! response bytes) is escaped for where it goes: control and bidi characters for terminals,
//! markdown and HTML syntax for comments.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde::Serialize;
use serde_json::Value;
use toolgate_gate::internals::escape_hidden;

use crate::markdown::{fenced, md};

use super::answer::{Answer, Report};
use super::change::{Change, Effect, Verdict};
use super::witness::{Seen, Witness};

/// The JSON report's format version; it changes only when a field changes meaning or goes away.
pub const FORMAT_VERSION: u32 = 1;

fn words(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::UpstreamBreaking => "upstream breaking",
        Verdict::UpstreamLoosened => "upstream loosened",
        Verdict::AgentWidened => "agent widened",
        Verdict::AgentNarrowed => "agent narrowed",
    }
}

fn meaning(verdict: Verdict, report: &Report) -> String {
    let (from, to) = (&report.from, &report.to);
    match verdict {
        Verdict::UpstreamBreaking => format!("a response {from} admits, {to} rejects"),
        Verdict::UpstreamLoosened => format!("a response {to} admits, {from} rejects"),
        Verdict::AgentWidened => format!("the agent can see what {from} never showed it"),
        Verdict::AgentNarrowed => format!("the agent can no longer see what {from} showed it"),
    }
}

fn yes_no(value: Option<bool>) -> &'static str {
    match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "undecided",
    }
}

fn effect_word(effect: &Effect) -> &'static str {
    match effect {
        Effect::No => "no",
        Effect::Yes(_) => "yes",
        Effect::Unknown(_) => "?",
    }
}

fn decision_words(seen: &Seen) -> String {
    match &seen.rejected_at {
        Some((layer, rule)) => format!("rejected at {layer} ({rule})"),
        None => seen.outcome.replace('_', " "),
    }
}

fn location(change: &Change) -> String {
    if change.pointer.is_empty() || change.pointer == "/" {
        change.file.clone()
    } else {
        format!("{}#{}", change.file, change.pointer)
    }
}

/// For a terminal.
pub fn human(report: &Report, color: bool) -> String {
    let paint = |style: Style, text: &str| {
        if color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    };
    let bold = Style::new().bold();
    let red = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    let yellow = Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold();
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
        let at = change
            .instance
            .as_deref()
            .map(|instance| format!("  at {}", if instance.is_empty() { "/" } else { instance }))
            .unwrap_or_default();
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
                let effects: Vec<String> = Verdict::ALL
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
            report.changes[witness.change].kind
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
        for line in crate::diff::labelled(&row.from.agent, &row.to.agent, labels, color).lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    out
}

fn witness_lines(witness: &Witness, report: &Report) -> Vec<String> {
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
    lines.push(format!("response: {}", shorten(&witness.raw, 400)));
    lines.push(format!(
        "{}: {} → {}",
        report.from,
        decision_words(&witness.from),
        shorten(&witness.from.agent, 400)
    ));
    lines.push(format!(
        "{}: {} → {}",
        report.to,
        decision_words(&witness.to),
        shorten(&witness.to.agent, 400)
    ));
    lines
}

fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let cut: String = text.chars().take(limit).collect();
    format!("{cut}… ({} characters)", text.chars().count())
}

/// Ready to paste as a pull-request comment.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let verdicts: Vec<String> = report
        .answers
        .iter()
        .map(|answer| {
            let value = yes_no(answer.value);
            match answer.value {
                Some(false) => format!("{}: {value}", words(answer.verdict)),
                _ => format!("{}: **{value}**", words(answer.verdict)),
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "**toolgate diff** `{}` {} → {}: {}",
        md(&report.tool),
        report.from,
        report.to,
        verdicts.join(" · ")
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "### Changes ({})", report.changes.len());
    let _ = writeln!(out);
    if report.changes.is_empty() {
        let _ = writeln!(out, "None: the two versions decide and show the same.");
    } else {
        let _ = writeln!(
            out,
            "| change | where | response | what | breaking | loosened | widened | narrowed |"
        );
        let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- | --- | --- |");
        for change in &report.changes {
            let effects: Vec<&str> = match change.declared {
                Some(_) => vec!["—"; 4],
                None => Verdict::ALL
                    .iter()
                    .map(|verdict| effect_word(change.effect(*verdict)))
                    .collect(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                md(change.kind),
                md(&location(change)),
                md(change
                    .instance
                    .as_deref()
                    .map(|path| if path.is_empty() { "/" } else { path })
                    .unwrap_or("")),
                md(&change.description),
                effects.join(" | ")
            );
        }
        if report
            .changes
            .iter()
            .any(|change| change.declared.is_some())
        {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "Agent schema changes are declarations (—): the agent sees what projection builds, and every fixture's output is checked against the declaration."
            );
        }
    }
    let witnesses: Vec<&Answer> = report
        .answers
        .iter()
        .filter(|answer| answer.witness.is_some())
        .collect();
    if !witnesses.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "### Witnesses");
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Each was run through both compiled contracts with the real gate."
        );
    }
    for answer in witnesses {
        let Some(witness) = &answer.witness else {
            continue;
        };
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "**{}** ({}): from {}, {}",
            words(answer.verdict),
            md(report.changes[witness.change].kind),
            md(&witness.fixture.display().to_string()),
            md(&witness.edit)
        );
        let _ = writeln!(out);
        let mut block = String::new();
        for change in &witness.request_changes {
            let _ = writeln!(block, "request: {change}");
        }
        if let Some(status) = witness.status {
            let _ = writeln!(block, "upstream status: {status}");
        }
        let _ = writeln!(block, "response: {}", shorten(&witness.raw, 400));
        let _ = writeln!(
            block,
            "{}: {} → {}",
            report.from,
            decision_words(&witness.from),
            shorten(&witness.from.agent, 400)
        );
        let _ = writeln!(
            block,
            "{}: {} → {}",
            report.to,
            decision_words(&witness.to),
            shorten(&witness.to.agent, 400)
        );
        out.push_str(&fenced("text", &block));
    }
    let undecided: Vec<&Answer> = report
        .answers
        .iter()
        .filter(|answer| answer.value.is_none())
        .collect();
    if !undecided.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "### Undecided: review by hand");
        let _ = writeln!(out);
        for answer in undecided {
            for reason in &answer.reasons {
                let _ = writeln!(out, "- {}: {}", words(answer.verdict), md(reason));
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "### Replay: {} of {} fixtures decide differently",
        report.replay.len(),
        report.replayed
    );
    if !report.replay.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "| fixture | class | {} | {} |", report.from, report.to);
        let _ = writeln!(out, "| --- | --- | --- | --- |");
        for row in &report.replay {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                md(&row.fixture.display().to_string()),
                row.class,
                md(&decision_words(&row.from)),
                md(&decision_words(&row.to))
            );
        }
        for row in report
            .replay
            .iter()
            .filter(|row| row.from.agent != row.to.agent)
        {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "<details><summary>{}: what the agent sees</summary>\n",
                md(&row.fixture.display().to_string())
            );
            let labels = (report.from.as_str(), report.to.as_str());
            out.push_str(&fenced(
                "diff",
                &crate::diff::labelled(&row.from.agent, &row.to.agent, labels, false),
            ));
            let _ = writeln!(out, "\n</details>");
        }
    }
    out
}

#[derive(Serialize)]
struct JsonReport<'a> {
    format_version: u32,
    tool: &'a str,
    from: &'a str,
    to: &'a str,
    summary: JsonSummary,
    undecided: Vec<JsonUndecided<'a>>,
    changes: Vec<JsonChange<'a>>,
    witnesses: Vec<JsonWitness<'a>>,
    replayed: usize,
    replay: Vec<JsonReplay<'a>>,
}

#[derive(Serialize)]
struct JsonSummary {
    upstream_breaking: Option<bool>,
    upstream_loosened: Option<bool>,
    agent_widened: Option<bool>,
    agent_narrowed: Option<bool>,
}

#[derive(Serialize)]
struct JsonUndecided<'a> {
    verdict: &'static str,
    reason: &'a str,
}

#[derive(Serialize)]
struct JsonChange<'a> {
    kind: &'static str,
    description: &'a str,
    file: &'a str,
    pointer: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shape: Option<&'a str>,
    effects: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    declared: Option<JsonDeclared>,
}

#[derive(Serialize)]
struct JsonDeclared {
    widened: bool,
    narrowed: bool,
}

#[derive(Serialize)]
struct JsonWitness<'a> {
    verdict: &'static str,
    change: usize,
    fixture: String,
    edit: &'a str,
    request_changes: &'a [String],
    request: &'a crate::request::RequestSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream_status: Option<u16>,
    response: &'a str,
    from: JsonSeen<'a>,
    to: JsonSeen<'a>,
}

#[derive(Serialize)]
struct JsonSeen<'a> {
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    agent_bytes: &'a str,
}

#[derive(Serialize)]
struct JsonReplay<'a> {
    fixture: String,
    class: &'static str,
    from: JsonSeen<'a>,
    to: JsonSeen<'a>,
}

fn json_seen(seen: &Seen) -> JsonSeen<'_> {
    JsonSeen {
        outcome: seen.outcome,
        layer: seen.rejected_at.as_ref().map(|(layer, _)| layer.as_str()),
        rule: seen.rejected_at.as_ref().map(|(_, rule)| rule.as_str()),
        agent_bytes: &seen.agent,
    }
}

/// Stable and documented field by field (README, "`toolgate diff`").
pub fn json(report: &Report) -> String {
    let value = |verdict: Verdict| report.answer(verdict).value;
    let document = JsonReport {
        format_version: FORMAT_VERSION,
        tool: &report.tool,
        from: &report.from,
        to: &report.to,
        summary: JsonSummary {
            upstream_breaking: value(Verdict::UpstreamBreaking),
            upstream_loosened: value(Verdict::UpstreamLoosened),
            agent_widened: value(Verdict::AgentWidened),
            agent_narrowed: value(Verdict::AgentNarrowed),
        },
        undecided: report
            .answers
            .iter()
            .flat_map(|answer| {
                answer.reasons.iter().map(|reason| JsonUndecided {
                    verdict: answer.verdict.key(),
                    reason,
                })
            })
            .collect(),
        changes: report
            .changes
            .iter()
            .map(|change| JsonChange {
                kind: change.kind,
                description: &change.description,
                file: &change.file,
                pointer: &change.pointer,
                instance: change.instance.as_deref(),
                shape: change.shape.as_deref(),
                effects: Verdict::ALL
                    .iter()
                    .map(|verdict| {
                        let effect = match change.declared {
                            Some(_) => Value::Bool(false),
                            None => change.effect(*verdict).as_json(),
                        };
                        (verdict.key().to_owned(), effect)
                    })
                    .collect(),
                declared: change
                    .declared
                    .map(|(widened, narrowed)| JsonDeclared { widened, narrowed }),
            })
            .collect(),
        witnesses: report
            .answers
            .iter()
            .filter_map(|answer| answer.witness.as_ref())
            .map(|witness| JsonWitness {
                verdict: witness.verdict.key(),
                change: witness.change,
                fixture: witness.fixture.display().to_string(),
                edit: &witness.edit,
                request_changes: &witness.request_changes,
                request: &witness.request,
                upstream_status: witness.status,
                response: &witness.raw,
                from: json_seen(&witness.from),
                to: json_seen(&witness.to),
            })
            .collect(),
        replayed: report.replayed,
        replay: report
            .replay
            .iter()
            .map(|row| JsonReplay {
                fixture: row.fixture.display().to_string(),
                class: row.class.as_str(),
                from: json_seen(&row.from),
                to: json_seen(&row.to),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&document).expect("the report always serializes");
    text.push('\n');
    text
}
