//! What running one case or suite check found: the problems, each with what to do about it.

use std::fmt::Write as _;

use serde::Serialize;
use toolgate_gate::internals::escape_hidden;

use crate::fixture::{FixtureClass, StructureProblem};

/// The kinds of problem a run can find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The fixture tree is malformed (unknown class folder, raw without sidecar, ...).
    Structure,
    /// A fixture, its sidecar or its request file could not be loaded.
    Load,
    /// A contract did not compile.
    Contract,
    /// The gate decided something other than the sidecar expects.
    Expectation,
    /// The agent bytes are neither the exact failure envelope nor a promised success.
    Envelope,
    /// A raw string the contract did not promise reached the agent.
    Leak,
    /// A canary string reached the agent.
    Canary,
    /// A legacy fixture's output differs from its current-shape twin's.
    Twin,
    /// The agent bytes differ from (or lack) their snapshot.
    Snapshot,
    /// A tool's fixtures miss a class or a case the seeds list.
    Coverage,
    /// Snapshot files no fixture produces.
    Stale,
    /// A published contract version changed, or is not locked.
    Lock,
    /// A mutant the contract admits that no `survivors.yaml` entry accepts.
    Survivor,
    /// A lint finding no `lint.yaml` entry accepts.
    Lint,
}

impl ProblemKind {
    /// Every kind, in the order reports list them.
    pub const ALL: &'static [ProblemKind] = &[
        ProblemKind::Structure,
        ProblemKind::Load,
        ProblemKind::Contract,
        ProblemKind::Expectation,
        ProblemKind::Envelope,
        ProblemKind::Leak,
        ProblemKind::Canary,
        ProblemKind::Twin,
        ProblemKind::Snapshot,
        ProblemKind::Coverage,
        ProblemKind::Stale,
        ProblemKind::Lock,
        ProblemKind::Survivor,
        ProblemKind::Lint,
    ];

    /// What a problem of this kind means and what to do, in a sentence or two (a SARIF rule's
    /// help).
    pub fn describe(self) -> &'static str {
        match self {
            ProblemKind::Structure => {
                "The fixture tree is malformed (an unknown class folder, a raw file without its sidecar). Move or name the file as the user guide's fixture layout says (doc/guide/src/ci.md)."
            }
            ProblemKind::Load => {
                "A fixture, its sidecar or its request file cannot be read. Fix the file at the line named."
            }
            ProblemKind::Contract => {
                "A contract version does not compile, so none of its cases ran. Fix the contract."
            }
            ProblemKind::Expectation => {
                "The gate decided something other than the sidecar expects. Fix the contract, or the sidecar if the expectation was wrong; `toolgate check` reproduces the decision."
            }
            ProblemKind::Envelope => {
                "The agent bytes are neither the fixed failure envelope nor a promised success."
            }
            ProblemKind::Leak => {
                "A raw string the contract does not promise reached the agent: projection let it through."
            }
            ProblemKind::Canary => "A canary string planted in a fixture reached the agent.",
            ProblemKind::Twin => {
                "A legacy fixture's agent bytes differ from those of its current-shape twin."
            }
            ProblemKind::Snapshot => {
                "The agent bytes differ from their snapshot (or it is missing). Review the change; accept it with `toolgate test --accept` if it is intended."
            }
            ProblemKind::Coverage => {
                "A tool's fixtures miss a class or a case the contract asks for. Add the fixture."
            }
            ProblemKind::Stale => "A snapshot file no fixture produces any more. Remove it.",
            ProblemKind::Lock => {
                "A published contract version changed, or is not locked. Publish a new version instead of editing one."
            }
            ProblemKind::Survivor => {
                "A near-miss mutant of an admitted fixture is admitted too, and no survivors.yaml entry accepts it. Tighten the contract, or accept the survivor with a reason."
            }
            ProblemKind::Lint => {
                "A lint finding that no lint.yaml entry accepts. Tighten the contract, or accept the finding with a reason."
            }
        }
    }

    /// The name reports use (`snapshot`, `leak`, …), as the JSON report spells it.
    pub fn name(self) -> &'static str {
        match self {
            ProblemKind::Structure => "structure",
            ProblemKind::Load => "load",
            ProblemKind::Contract => "contract",
            ProblemKind::Expectation => "expectation",
            ProblemKind::Envelope => "envelope",
            ProblemKind::Leak => "leak",
            ProblemKind::Canary => "canary",
            ProblemKind::Twin => "twin",
            ProblemKind::Snapshot => "snapshot",
            ProblemKind::Coverage => "coverage",
            ProblemKind::Stale => "stale",
            ProblemKind::Lock => "lock",
            ProblemKind::Survivor => "survivor",
            ProblemKind::Lint => "lint",
        }
    }

    /// Problems that mean the run could not check something at all: a configuration or usage
    /// error (exit code 2) rather than a contract saying no (exit code 1).
    pub fn is_configuration(self) -> bool {
        matches!(
            self,
            ProblemKind::Structure | ProblemKind::Load | ProblemKind::Contract
        )
    }
}

/// One problem: a one-line message and, for drift, a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// What kind.
    pub kind: ProblemKind,
    /// One line: what is wrong, and what to do.
    pub message: String,
    /// Supporting detail, e.g. a unified diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The file the problem is in, relative to the root, when it is about one (a sidecar that
    /// does not parse, a misplaced file): where a CI annotation goes.
    /// Written with `/` and lossily decoded, so a hostile name never fails a report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The line in that file, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

impl Problem {
    /// A problem without detail.
    /// A message that starts with a file of the repository (`fixtures/t/request.json:3:7: …`,
    /// as every loader writes them) is placed in that file, at its line: where a CI
    /// annotation goes.
    pub fn new(kind: ProblemKind, message: impl Into<String>) -> Problem {
        let message = message.into();
        let (file, line) = match named_file(&message) {
            Some((file, line)) => (Some(file.to_owned()), line),
            None => (None, None),
        };
        Problem {
            kind,
            message,
            detail: None,
            file,
            line,
        }
    }

    /// A structural problem of the fixture tree, placed in its file where it names one.
    pub fn structure(problem: &StructureProblem) -> Problem {
        let placed = Problem::new(ProblemKind::Structure, problem.to_string());
        if problem.path.as_os_str().is_empty() {
            placed
        } else {
            placed.at(&problem.path, None)
        }
    }

    /// Places the problem in `file` (relative to the root), at `line` when known.
    pub fn at(mut self, file: &std::path::Path, line: Option<u64>) -> Problem {
        self.file = Some(file.to_string_lossy().replace('\\', "/"));
        self.line = line;
        self
    }

    /// Attaches detail (a diff).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Problem {
        self.detail = Some(detail.into());
        self
    }
}

/// The repository file a message starts with (under `contracts/`, `fixtures/` or
/// `snapshots/`, up to the first `:` or space), and the line that follows it, if any.
fn named_file(message: &str) -> Option<(&str, Option<u64>)> {
    if !["contracts/", "fixtures/", "snapshots/"]
        .iter()
        .any(|top| message.starts_with(top))
    {
        return None;
    }
    let end = message.find([':', ' ']).unwrap_or(message.len());
    let file = message[..end].trim_end_matches('/');
    let rest = &message[end..];
    let line = rest
        .strip_prefix(':')
        .map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap_or("")
        })
        .and_then(|digits| digits.parse().ok());
    Some((file, line))
}

/// The result of one case (a fixture against one contract version) or one suite check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    /// `tool::class::case[@vN]`, or a check's name.
    pub name: String,
    /// The tool, for cases and per-tool checks.
    pub tool: Option<String>,
    /// The class, for cases.
    pub class: Option<FixtureClass>,
    /// The contract version, for cases.
    pub version: Option<String>,
    /// `admitted`, `admitted_failure` or `rejected`, when the gate ran.
    pub outcome: Option<&'static str>,
    /// What the gate decided, in words.
    pub observed: Option<String>,
    /// The `toolgate check` command that reproduces the decision.
    pub reproduce: Option<String>,
    /// Everything that is wrong; empty when the case passed.
    pub problems: Vec<Problem>,
    /// Why the case was not run at all (its contract does not compile; a check elsewhere fails
    /// for that, once). A skipped case never counts as passed.
    pub skipped: Option<String>,
    /// What the run did that is not a failure but someone should see (a snapshot written for
    /// review under `INSTA_FORCE_PASS`).
    pub notes: Vec<String>,
    /// Notes on how the run went rather than on something to act on (mutants sampled, not all
    /// run): in every report, but never a pull-request annotation.
    pub routine_notes: Vec<String>,
    /// The fixture's raw file, for cases (relative to the root); for a check, the fixture its
    /// first failure was derived from.
    pub fixture: Option<std::path::PathBuf>,
    /// What a check counted (`mutants`, `survivors`, `lint_findings`, …), summed into the run's
    /// totals.
    pub counts: std::collections::BTreeMap<&'static str, usize>,
    /// How long it took.
    pub duration: std::time::Duration,
}

impl CaseResult {
    /// A result with a name and nothing else yet.
    pub fn named(name: impl Into<String>) -> CaseResult {
        CaseResult {
            name: name.into(),
            tool: None,
            class: None,
            version: None,
            outcome: None,
            observed: None,
            reproduce: None,
            problems: Vec::new(),
            skipped: None,
            notes: Vec::new(),
            routine_notes: Vec::new(),
            fixture: None,
            counts: std::collections::BTreeMap::new(),
            duration: std::time::Duration::ZERO,
        }
    }

    /// Whether it ran and nothing is wrong.
    pub fn passed(&self) -> bool {
        self.problems.is_empty() && self.skipped.is_none()
    }

    /// Whether it ran and something is wrong.
    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
    }

    /// The first configuration problem, or else the first problem: what a report leads with.
    pub fn leading_problem(&self) -> Option<&Problem> {
        self.problems
            .iter()
            .find(|problem| problem.kind.is_configuration())
            .or_else(|| self.problems.first())
    }

    /// Whether something could not be checked at all (exit code 2).
    pub fn has_configuration_problem(&self) -> bool {
        self.problems
            .iter()
            .any(|problem| problem.kind.is_configuration())
    }

    /// The failure text, safe to print to a terminal: each problem, its detail, and how to
    /// reproduce. Everything in it that came from the repository (file names, sidecar values,
    /// decision details) has its control, format and bidi characters escaped; details are diffs,
    /// which escape their own lines.
    pub fn failure_text(&self) -> String {
        let mut text = String::new();
        if let Some(observed) = &self.observed {
            let _ = writeln!(text, "  observed:  {}", escape_hidden(observed));
        }
        for problem in &self.problems {
            let _ = writeln!(
                text,
                "  {}: {}",
                label(problem.kind),
                escape_hidden(&problem.message)
            );
            if let Some(detail) = &problem.detail {
                for line in detail.lines() {
                    let _ = writeln!(text, "    {line}");
                }
            }
        }
        if let Some(command) = &self.reproduce {
            let _ = writeln!(text, "  reproduce: {}", escape_hidden(command));
        }
        text
    }
}

fn label(kind: ProblemKind) -> &'static str {
    match kind {
        ProblemKind::Structure => "structure",
        ProblemKind::Load => "cannot load",
        ProblemKind::Contract => "contract",
        ProblemKind::Expectation => "expected",
        ProblemKind::Envelope => "envelope",
        ProblemKind::Leak => "LEAK",
        ProblemKind::Canary => "CANARY",
        ProblemKind::Twin => "twin",
        ProblemKind::Snapshot => "snapshot",
        ProblemKind::Coverage => "coverage",
        ProblemKind::Stale => "stale",
        ProblemKind::Lock => "lock",
        ProblemKind::Survivor => "SURVIVOR",
        ProblemKind::Lint => "lint",
    }
}

#[cfg(test)]
mod placed {
    use super::*;

    #[test]
    fn a_message_that_starts_with_a_repository_file_is_placed_there() {
        let at = |message: &str| {
            let problem = Problem::new(ProblemKind::Lock, message);
            (problem.file, problem.line)
        };
        assert_eq!(
            at("fixtures/t/request.json:3:7: not a request file"),
            (Some("fixtures/t/request.json".to_owned()), Some(3))
        );
        assert_eq!(
            at("fixtures/t/survivors.yaml: cannot load"),
            (Some("fixtures/t/survivors.yaml".to_owned()), None)
        );
        assert_eq!(
            at("contracts/t/v2 changed after it was published"),
            (Some("contracts/t/v2".to_owned()), None)
        );
        assert_eq!(at("tool `t`: no accepted fixture"), (None, None));
    }
}
