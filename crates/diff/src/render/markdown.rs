//! `toolgate diff --format markdown`: a pull-request comment.

use std::fmt::Write as _;

use toolgate_repo::text::markdown::{code, code_in_table, fenced, html, text};

use super::human::excerpt;
use super::{
    cause_words, decision_words, effect_word, live_call_words, location, meaning, more_places,
    server_heading, share, shift_share, shifts, traffic_heading, words, yes_no,
};
use crate::answer::{Answer, Report};
use crate::change::BumpVerdict;
use crate::traffic::{BlastRadius, Example};

/// Ready to paste as a pull-request comment.
pub(crate) fn markdown(report: &Report) -> String {
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
        "**toolgate diff** {} {} → {}: {}",
        code(&report.tool),
        report.from,
        report.to,
        verdicts.join(" · ")
    );
    // One line that says what the four verdicts mean, for a reviewer new to them. The versions
    // are folder names toolgate checked (`v<N>`), so they need no escaping.
    let legend: Vec<String> = BumpVerdict::ALL
        .iter()
        .map(|verdict| format!("*{}*: {}", words(*verdict), meaning(*verdict, report)))
        .collect();
    let _ = writeln!(out);
    let _ = writeln!(out, "{}.", legend.join("; "));
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
                None => BumpVerdict::ALL
                    .iter()
                    .map(|verdict| effect_word(change.effect(*verdict)))
                    .collect(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                code_in_table(change.kind),
                code_in_table(&location(change)),
                change
                    .instance
                    .as_deref()
                    .map(|instance| match more_places(change, code_in_table) {
                        Some(more) => format!("{} {more}", code_in_table(instance)),
                        None => code_in_table(instance),
                    })
                    .unwrap_or_default(),
                text(&change.description),
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
            match witness.change {
                Some(_) => code(super::claimed_by(witness, report)),
                None => text(super::claimed_by(witness, report)),
            },
            code(&witness.fixture.display().to_string()),
            text(&witness.edit)
        );
        let _ = writeln!(out);
        let mut block = String::new();
        for change in &witness.request_changes {
            let _ = writeln!(block, "request: {change}");
        }
        if let Some(status) = witness.status {
            let _ = writeln!(block, "upstream status: {status}");
        }
        let _ = writeln!(
            block,
            "response: {}",
            excerpt(&witness.raw, witness.focus.as_deref(), 400)
        );
        let _ = writeln!(
            block,
            "{}: {} → {}",
            report.from,
            decision_words(&witness.from),
            excerpt(&witness.from.agent, witness.focus.as_deref(), 400)
        );
        let _ = writeln!(
            block,
            "{}: {} → {}",
            report.to,
            decision_words(&witness.to),
            excerpt(&witness.to.agent, witness.focus.as_deref(), 400)
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
                let _ = writeln!(out, "- {}: {}", words(answer.verdict), text(reason));
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
                code_in_table(&row.fixture.display().to_string()),
                row.class,
                text(&decision_words(&row.from)),
                text(&decision_words(&row.to))
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
                "<details><summary><code>{}</code>: what the agent sees</summary>\n",
                html(&row.fixture.display().to_string())
            );
            let labels = (report.from.as_str(), report.to.as_str());
            out.push_str(&fenced(
                "diff",
                &toolgate_repo::text::diff::labelled(&row.from.agent, &row.to.agent, labels, false),
            ));
            let _ = writeln!(out, "\n</details>");
        }
    }
    if let Some(radius) = &report.traffic {
        traffic(&mut out, radius, report);
    }
    if let Some(facts) = &report.server {
        let _ = writeln!(
            out,
            "\n### Server\n\n{}",
            text(&server_heading(report, facts))
        );
        if !facts.calls.is_empty() {
            let _ = writeln!(out);
            for call in &facts.calls {
                let _ = writeln!(out, "- {}", text(&live_call_words(call)));
            }
        }
    }
    out
}

/// The blast radius on production's traffic (`--replay`): counts, causes, and the first few
/// responses by digest and pointer, never by value (the comment is public to the repository).
fn traffic(out: &mut String, radius: &BlastRadius, report: &Report) {
    let _ = writeln!(out);
    let _ = writeln!(out, "### Production traffic");
    let _ = writeln!(out);
    let _ = writeln!(out, "{}.", text(&traffic_heading(radius)));
    let _ = writeln!(out);
    let _ = writeln!(out, "| shift | responses | by layer and code |");
    let _ = writeln!(out, "| --- | --- | --- |");
    for (label, shift) in shifts(radius, &report.to) {
        let causes: Vec<String> = shift
            .by_cause
            .iter()
            .map(|(cause, count)| format!("{}: {count}", cause_words(cause)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            text(&label),
            shift_share(shift, radius),
            text(&causes.join(", "))
        );
    }
    if radius.undecided > 0 {
        let _ = writeln!(
            out,
            "| could not be decided (counted as shifted by `--fail-on`) | {} | |",
            share(radius.undecided, radius)
        );
    }
    let examples: Vec<(String, &Example)> = shifts(radius, &report.to)
        .into_iter()
        .flat_map(|(label, shift)| {
            shift
                .examples
                .iter()
                .map(move |example| (label.clone(), example))
        })
        .collect();
    if !examples.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "| shift | raw sha256 | refused at | where | kept by |");
        let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
        for (label, example) in examples {
            let refused_at = match (&example.layer, &example.rule) {
                (Some(layer), Some(rule)) => format!("{layer} ({rule})"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                text(&label),
                code_in_table(&example.raw_sha256),
                text(&refused_at),
                example
                    .pointer
                    .as_deref()
                    .map(|pointer| code_in_table(&toolgate_repo::text::pointer(pointer)))
                    .unwrap_or_default(),
                text(&format!("{} at {}", example.kept_by, example.time))
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "`toolgate reproduce --digest SHA256 --store STORE` decides one again and shows it to whoever holds the store."
        );
    }
    if !radius.undecided_reasons.is_empty() {
        let _ = writeln!(out);
        for reason in &radius.undecided_reasons {
            let _ = writeln!(out, "- {}", text(reason));
        }
    }
}
