//! Rules and retry compared: a rule added, removed or changed, and what each does to the four
//! verdicts.

use super::*;

pub(super) fn compare_rules(from: &Version, to: &Version, out: &mut Vec<Change>) {
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
pub(super) fn rule_change(rule: &RuleDoc, version: &Version, added: bool) -> Change {
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
pub(super) fn rule_settings_change(old: &RuleDoc, new: &RuleDoc, to: &Version) -> Vec<Change> {
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

pub(super) fn compare_retry(from: &Version, to: &Version, out: &mut Vec<Change>) {
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
