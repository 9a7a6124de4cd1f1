//! SARIF 2.1.0 (`toolgate diff --format sarif`), for GitHub code scanning: each verdict that
//! holds, or is undecided, at every change that makes it so (the line its JSON pointer is
//! written on, in the newer version where the place still exists, else in the older), with the
//! witness that shows it; traffic shifts under `--replay` at the newer contract.
//!
//! A verdict a `--fail-on` names is an error, as it fails the run; one that holds otherwise is a
//! warning, an undecided one a note.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_repo::sarif::{Finding, Level, Log, Place, Rule};
use toolgate_repo::{CONTRACTS_DIR, Repository};

use super::{
    cause_words, decision_words, live_call_words, meaning, meaning_between, shifts, words,
};
use crate::answer::Report;
use crate::change::{BumpVerdict, Effect};
use crate::compare::{FailOn, TrafficShift};

/// The rule id of a live call whose result the contract refuses.
const LIVE_CALL_REFUSED: &str = "live_call_refused";

/// The rule id of each traffic shift, in the order [`shifts`] lists them.
const SHIFT_RULES: [(&str, TrafficShift); 3] = [
    ("traffic_newly_refused", TrafficShift::NewlyRefused),
    ("traffic_newly_admitted", TrafficShift::NewlyAdmitted),
    ("traffic_output_changed", TrafficShift::OutputChanged),
];

/// The report as a SARIF log; `root` as given on the command line, `fail_on` what fails the run.
pub(crate) fn sarif(report: &Report, root: &Path, fail_on: &[FailOn]) -> Log {
    let repository = Repository::open(root).map(Repository::naming_relative).ok();
    let folder = |version: &str| {
        PathBuf::from(CONTRACTS_DIR)
            .join(&report.tool)
            .join(version)
    };
    let mut texts: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut text_of = |file: &Path| -> String {
        texts
            .entry(file.to_path_buf())
            .or_insert_with(|| {
                repository
                    .as_ref()
                    .and_then(|repository| repository.root().read_text(file).ok())
                    .unwrap_or_default()
            })
            .clone()
    };
    // Against a server (`--upstream`), TO is the contract with the server's declaration in
    // it, no folder of the repository: every place is in FROM.
    let to = match report.server {
        Some(_) => &report.from,
        None => &report.to,
    };
    let contract = Place::file(folder(to).join("contract.yaml"));
    // A change's place: in TO where its pointer still is, else in FROM (a removed keyword);
    // a file neither has (the server's declaration) is the contract's.
    let mut place_of = |file: &str, pointer: &str| -> Place {
        let newer = folder(to).join(file);
        let older = folder(&report.from).join(file);
        for candidate in [&newer, &older] {
            let place = Place::pointer(candidate, &text_of(candidate), pointer);
            if place.line.is_some() {
                return place;
            }
        }
        for candidate in [newer, older] {
            if !text_of(&candidate).is_empty() {
                return Place::pointer(candidate, "", pointer);
            }
        }
        contract.clone()
    };
    let fails = |verdict: BumpVerdict| fail_on.contains(&FailOn::Verdict(verdict));
    let heading = format!("{} {} → {}", report.tool, report.from, report.to);

    let mut findings = Vec::new();
    for answer in &report.answers {
        let verdict = answer.verdict;
        let level = match (answer.value, fails(verdict)) {
            (Some(false), _) => continue,
            (_, true) => Level::Error,
            (Some(true), false) => Level::Warning,
            (None, false) => Level::Note,
        };
        let said = match answer.value {
            Some(true) => format!("{}: {}", words(verdict), meaning(verdict, report)),
            _ => format!(
                "{} is undecided: whether {} cannot be proven either way; review it by hand",
                words(verdict),
                meaning(verdict, report)
            ),
        };
        let shown = answer.witness.as_ref().map(|witness| {
            let mut text = format!(
                "shown by {} ({}): {} says {}, {} says {}",
                witness.fixture.display(),
                witness.edit,
                report.from,
                decision_words(&witness.from),
                report.to,
                decision_words(&witness.to)
            );
            for change in &witness.request_changes {
                text.push_str(&format!("; request: {change}"));
            }
            (witness.change, text)
        });
        let mut placed = false;
        for (index, change) in report.changes.iter().enumerate() {
            let why = match (change.effect(verdict), answer.value) {
                (Effect::Yes(_), Some(true)) => None,
                (Effect::Unknown(reason), None) => Some(reason.as_str()),
                _ => continue,
            };
            let witness = match &shown {
                Some((Some(credited), text)) if *credited == index => Some(text),
                _ => None,
            };
            findings.push(verdict_finding(
                verdict,
                level,
                format!(
                    "{heading}: {said}.\n{}: {}",
                    change.kind, change.description
                ),
                why.into_iter(),
                witness,
                place_of(&change.file, &change.pointer),
                format!("{}\u{0}{}", change.kind, change.description),
            ));
            placed = true;
        }
        if !placed {
            // Found by the proof search with no change claiming it, or undecided for a reason
            // no one change carries: the whole bump, at the newer contract.
            findings.push(verdict_finding(
                verdict,
                level,
                format!("{heading}: {said}."),
                answer.reasons.iter().map(String::as_str),
                shown.as_ref().map(|(_, text)| text),
                contract.clone(),
                String::new(),
            ));
        }
    }
    if let Some(radius) = &report.traffic {
        for ((what, shift), (rule, kind)) in shifts(radius, &report.to).iter().zip(SHIFT_RULES) {
            if shift.count == 0 {
                continue;
            }
            let failing = fail_on.iter().any(|fail_on| {
                matches!(fail_on, FailOn::Traffic { shift, .. } if *shift == kind)
                    && fail_on.fails(report) == Some(true)
            });
            let causes: Vec<String> = shift
                .by_cause
                .iter()
                .map(|(cause, count)| format!("{count} {}", cause_words(cause)))
                .collect();
            findings.push(Finding {
                rule,
                level: if failing { Level::Error } else { Level::Note },
                message: format!(
                    "{heading}: {} of the responses {} holds would be {what}: {}",
                    super::shift_share(shift, radius),
                    radius.store,
                    causes.join(", ")
                ),
                place: Some(contract.clone()),
                accepted: None,
                identity: String::new(),
            });
        }
    }

    if let Some(facts) = &report.server {
        for call in facts.refused() {
            findings.push(Finding {
                rule: LIVE_CALL_REFUSED,
                level: Level::Error,
                message: format!(
                    "{heading}: a live call's result the contract refuses: {}",
                    live_call_words(call)
                ),
                place: Some(contract.clone()),
                accepted: None,
                identity: call.arguments_from.clone(),
            });
        }
    }

    let mut rules: Vec<Rule> = BumpVerdict::ALL
        .iter()
        .map(|verdict| Rule {
            id: verdict.key(),
            summary: format!("The bump is {}.", words(*verdict)),
            help: format!(
                "{}: {}. Fails `toolgate diff` under `--fail-on {}`, true or undecided.",
                words(*verdict),
                meaning_between(*verdict, "FROM", "TO"),
                verdict.short()
            ),
            level: Level::Warning,
        })
        .collect();
    rules.extend(SHIFT_RULES.iter().map(|(id, shift)| Rule {
        id,
        summary: format!("Production's kept responses shift ({}).", shift.name()),
        help: format!(
            "Responses kept with --retain decided under both versions (`--replay`); fails under `--fail-on {}[>N|>N%]`.",
            shift.name()
        ),
        level: Level::Note,
    }));
    rules.push(Rule {
        id: LIVE_CALL_REFUSED,
        summary: "A live call's result is refused by the contract (`--upstream --call`).".to_owned(),
        help: "The server answered a call with a result the contract's gate refuses (or did not answer): its consumers would refuse this release. `toolgate check` the result to see why.".to_owned(),
        level: Level::Error,
    });
    Log {
        category: format!("toolgate/diff/{}", report.tool),
        root: root.to_path_buf(),
        rules,
        findings,
        errors: Vec::new(),
        fallback: contract,
    }
}

/// One verdict's result at `place`: `said`, then each reason it is undecided, then the witness
/// that shows it.
fn verdict_finding<'a>(
    verdict: BumpVerdict,
    level: Level,
    said: String,
    reasons: impl Iterator<Item = &'a str>,
    witness: Option<&String>,
    place: Place,
    identity: String,
) -> Finding {
    let mut message = said;
    for reason in reasons {
        message.push_str(&format!("\nundecided because: {reason}"));
    }
    if let Some(text) = witness {
        message.push('\n');
        message.push_str(text);
    }
    Finding {
        rule: verdict.key(),
        level,
        message,
        place: Some(place),
        accepted: None,
        identity,
    }
}
