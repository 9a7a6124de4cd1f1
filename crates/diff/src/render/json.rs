//! `toolgate diff --format json`: serialize-only types (`toolgate schema diff-report`).

use serde::Serialize;
use serde_json::Value;
use toolgate_repo::json_report;

use crate::answer::Report;
use crate::change::BumpVerdict;
use crate::traffic::{BlastRadius, Shift};
use crate::witness::Seen;

/// The report's JSON Schema, published by `toolgate schema diff-report`; tests hold every report
/// to it.
pub const SCHEMA: &str = include_str!("../../schemas/diff-report.schema.json");

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
    #[serde(skip_serializing_if = "Option::is_none")]
    traffic: Option<JsonTraffic<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<JsonServer<'a>>,
}

#[derive(Serialize)]
struct JsonServer<'a> {
    server: &'a str,
    listed: bool,
    declares_output_schema: bool,
    calls: Vec<JsonCall<'a>>,
}

#[derive(Serialize)]
struct JsonCall<'a> {
    arguments_from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    decided: Option<JsonSeen<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonTraffic<'a> {
    store: &'a str,
    held: usize,
    decided: usize,
    undecided: usize,
    undecided_reasons: &'a [String],
    traffic: f64,
    unrated: usize,
    newly_refused: JsonShift<'a>,
    newly_admitted: JsonShift<'a>,
    output_changed: JsonShift<'a>,
}

#[derive(Serialize)]
struct JsonShift<'a> {
    count: usize,
    estimated_share: f64,
    margin: f64,
    by_cause: Vec<JsonCause<'a>>,
    examples: Vec<JsonExample<'a>>,
}

#[derive(Serialize)]
struct JsonCause<'a> {
    layer: Option<&'a str>,
    code: Option<&'a str>,
    count: usize,
}

#[derive(Serialize)]
struct JsonExample<'a> {
    raw_sha256: &'a str,
    time: &'a str,
    kept_by: &'a str,
    layer: Option<&'a str>,
    rule: Option<&'a str>,
    code: Option<&'a str>,
    pointer: Option<&'a str>,
}

fn json_shift(shift: &Shift) -> JsonShift<'_> {
    let present = |text: &str| !text.is_empty();
    JsonShift {
        count: shift.count,
        estimated_share: shift.estimate.share,
        margin: shift.estimate.margin,
        by_cause: shift
            .by_cause
            .iter()
            .map(|((layer, code), count)| JsonCause {
                layer: present(layer).then_some(layer.as_str()),
                code: present(code).then_some(code.as_str()),
                count: *count,
            })
            .collect(),
        examples: shift
            .examples
            .iter()
            .map(|example| JsonExample {
                raw_sha256: &example.raw_sha256,
                time: &example.time,
                kept_by: &example.kept_by,
                layer: example.layer.as_deref(),
                rule: example.rule.as_deref(),
                code: example.code.as_deref(),
                pointer: example.pointer.as_deref(),
            })
            .collect(),
    }
}

fn json_traffic(radius: &BlastRadius) -> JsonTraffic<'_> {
    JsonTraffic {
        store: &radius.store,
        held: radius.held,
        decided: radius.decided,
        undecided: radius.undecided,
        undecided_reasons: &radius.undecided_reasons,
        traffic: radius.traffic,
        unrated: radius.unrated,
        newly_refused: json_shift(&radius.newly_refused),
        newly_admitted: json_shift(&radius.newly_admitted),
        output_changed: json_shift(&radius.output_changed),
    }
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
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    more_places: &'a [String],
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
    change: Option<usize>,
    fixture: String,
    edit: &'a str,
    request_changes: &'a [String],
    request: &'a toolgate_repo::RequestSpec,
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

/// Stable and documented field by field (the user guide, doc/guide/src/bump.md, "The JSON report").
pub(crate) fn json(report: &Report) -> String {
    let value = |verdict: BumpVerdict| report.answer(verdict).value;
    json_report::render(&JsonReport {
        format_version: json_report::FORMAT_VERSION,
        tool: &report.tool,
        from: &report.from,
        to: &report.to,
        summary: JsonSummary {
            upstream_breaking: value(BumpVerdict::UpstreamBreaking),
            upstream_loosened: value(BumpVerdict::UpstreamLoosened),
            agent_widened: value(BumpVerdict::AgentWidened),
            agent_narrowed: value(BumpVerdict::AgentNarrowed),
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
                more_places: &change.more_places,
                shape: change.shape.as_deref(),
                effects: BumpVerdict::ALL
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
        traffic: report.traffic.as_ref().map(json_traffic),
        server: report.server.as_ref().map(|facts| JsonServer {
            server: &facts.server,
            listed: facts.listed,
            declares_output_schema: facts.declares_output_schema,
            calls: facts
                .calls
                .iter()
                .map(|call| JsonCall {
                    arguments_from: &call.arguments_from,
                    decided: call.decided.as_ref().ok().map(json_seen),
                    error: call.decided.as_ref().err().map(String::as_str),
                })
                .collect(),
        }),
    })
}
