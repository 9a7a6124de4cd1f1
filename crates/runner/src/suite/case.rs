//! Running one case: the gate's decision on a fixture against its expectation, the fixed
//! envelope and leakage invariants, canaries, the legacy twin, and the snapshot.

use std::path::Path;
use std::sync::Arc;

use toolgate_gate::{Contract, Decision, Layer, Outcome};

use super::{Case, CaseContract, RunContext};
use crate::snapshot::{self, Snapshot, SnapshotCheck};
use toolgate_repo::RepoRoot;
use toolgate_repo::agent_view_problems;
use toolgate_repo::{CaseResult, Problem, ProblemKind};
use toolgate_repo::{Expectation, Sidecar, retry_words};
use toolgate_repo::{Fixture, FixtureClass};
use toolgate_repo::{RequestFiles, admit_fixture, reproduce_command};

impl Case {
    /// Runs the case: the gate's decision against the expectation, the envelope and leakage
    /// checks, the legacy twin, and the snapshot.
    pub fn run(&self, context: &RunContext) -> CaseResult {
        let fixture = &self.fixture;
        let mut verdict = CaseResult::named(&self.name);
        verdict.tool = Some(fixture.tool.clone());
        verdict.class = Some(fixture.class);
        verdict.version = self.version.clone();
        verdict.fixture = Some(fixture.raw.clone());
        let spec = match &fixture.spec {
            Ok(spec) => spec,
            Err(error) => {
                verdict.problems.push(
                    Problem::new(ProblemKind::Load, error.to_string())
                        .at(error.file(), error.line()),
                );
                return verdict;
            }
        };
        if let Err(message) = class_consistency(fixture.class, spec) {
            verdict.problems.push(
                Problem::new(
                    ProblemKind::Load,
                    format!("{}: {message}", fixture.sidecar.display()),
                )
                .at(&fixture.sidecar, None),
            );
        }
        // Named for `cargo insta test --unreferenced` whatever happens to the case, so a case
        // that fails for another reason never gets its snapshot deleted as unreferenced.
        if let (Some(references), Some(version)) = (&context.references, &self.version) {
            let path = snapshot::snapshot_path(
                &fixture.tool,
                fixture.class.as_str(),
                &fixture.case,
                version,
            );
            if let Err(message) = snapshot::record_reference(references, &context.root, &path) {
                verdict
                    .problems
                    .push(Problem::new(ProblemKind::Load, message));
            }
        }
        let contract = match &self.contract {
            CaseContract::Ready(contract) => contract,
            CaseContract::Broken => {
                verdict.skipped = self.blocked();
                return verdict;
            }
            CaseContract::Unknown(message) => {
                verdict.problems.push(Problem::new(
                    ProblemKind::Load,
                    message.clone().unwrap_or_default(),
                ));
                return verdict;
            }
        };
        let admitted = match admit_fixture(&context.root, &self.requests, fixture, spec, contract) {
            Ok(admitted) => admitted,
            Err(problem) => {
                verdict.problems.push(problem);
                return verdict;
            }
        };
        let decision = &admitted.decision;
        let version = contract.version();
        verdict.outcome = Some(decision.outcome().as_str());
        verdict.observed = Some(describe(decision));
        verdict.reproduce = Some(reproduce(fixture, spec, version));

        verdict
            .problems
            .extend(expectation_problems(spec, version, decision));
        verdict
            .problems
            .extend(class_problems(fixture.class, decision));
        verdict.problems.extend(agent_view_problems(
            contract,
            &admitted.raw,
            &admitted.request.request_id,
            decision,
        ));
        verdict
            .problems
            .extend(canary_problems(decision.agent_bytes(), &spec.canaries));
        if let Some(twin) = &self.twin {
            verdict.problems.extend(twin_problems(
                &context.root,
                &self.requests,
                contract,
                decision,
                twin,
            ));
        }
        let fixture_path = fixture.raw.to_string_lossy().replace('\\', "/");
        let expected = Snapshot {
            source: fixture_path.clone(),
            fixture: fixture_path,
            description: format!(
                "{} {version}, {}: {}",
                fixture.tool,
                fixture.class,
                describe_stable(decision)
            ),
            expression: verdict.reproduce.clone().unwrap_or_default(),
            body: String::from_utf8_lossy(decision.agent_bytes()).into_owned(),
        };
        let path = snapshot::snapshot_path(
            &fixture.tool,
            fixture.class.as_str(),
            &fixture.case,
            version,
        );
        if let Some(problem) = snapshot_problem(context, &path, &expected) {
            if context.mode.force_pass {
                // insta's INSTA_FORCE_PASS: the difference is written for review, not a failure.
                verdict.notes.push(problem.message);
            } else {
                verdict.problems.push(problem);
            }
        }
        verdict
    }
}

/// A fixture's class says what it is under the versions it runs against: accepted and legacy
/// fixtures are admitted under at least one, near-misses and duplicate keys rejected under all.
fn class_consistency(class: FixtureClass, spec: &Sidecar) -> Result<(), String> {
    let expectations = spec.expect.all();
    let any = |test: &dyn Fn(&Expectation) -> bool| expectations.iter().any(|expect| test(expect));
    let all = |test: &dyn Fn(&Expectation) -> bool| expectations.iter().all(|expect| test(expect));
    match class {
        FixtureClass::Accepted if !any(&|expect| !expect.is_rejection()) => {
            Err("an accepted fixture must expect `admitted` or `admitted_failure` (under at least one version); a response that must be rejected belongs in near-miss/".to_owned())
        }
        FixtureClass::NearMiss if !all(&Expectation::is_rejection) => {
            Err("a near-miss fixture must expect `rejected` under every version it runs against; a response that must be admitted belongs in accepted/".to_owned())
        }
        FixtureClass::Legacy if !any(&|expect| *expect == Expectation::Admitted) => {
            Err("a legacy fixture must expect `admitted`: it is an older shape the contract still supports".to_owned())
        }
        FixtureClass::DuplicateKey if !all(&|expect| expect.layer() == Some(Layer::Parse)) => {
            Err("a duplicate-key fixture must expect `rejected` at layer `parse`: duplicates are the parser's to catch".to_owned())
        }
        _ if spec.twin.is_some() && class != FixtureClass::Legacy => Err("only legacy fixtures name a `twin`".to_owned()),
        _ => Ok(()),
    }
}

/// What the gate decided, in words (for people).
fn describe(decision: &Decision) -> String {
    match decision.outcome() {
        Outcome::Admitted => format!("admitted (shape {})", decision.shape().unwrap_or_default()),
        Outcome::AdmittedFailure { code, retryable } => format!(
            "admitted failure {code}, {} (shape {})",
            retry_words(*retryable),
            decision.shape().unwrap_or_default()
        ),
        Outcome::Rejected(rejection) => format!(
            "rejected at {}, rule {}: {}, {}",
            rejection.layer(),
            decision.rule().unwrap_or_default(),
            rejection.code(),
            retry_words(rejection.retryable())
        ),
    }
}

/// The same, for the snapshot header: without the schema keyword, which depends on how the
/// validator orders its errors rather than on anything the agent sees.
fn describe_stable(decision: &Decision) -> String {
    match decision.outcome() {
        Outcome::Rejected(rejection) if rejection.layer() == Layer::Schema => {
            format!(
                "rejected at schema: {}, {}",
                rejection.code(),
                retry_words(rejection.retryable())
            )
        }
        _ => describe(decision),
    }
}

fn reproduce(fixture: &Fixture, spec: &Sidecar, version: &str) -> String {
    reproduce_command(fixture, spec, version, &fixture.raw)
}

fn expectation_problems(spec: &Sidecar, version: &str, decision: &Decision) -> Vec<Problem> {
    let Some(expect) = spec.expect.for_version(version) else {
        return vec![Problem::new(
            ProblemKind::Load,
            format!("the sidecar says nothing about {version}: add it to `expect_by_version:`"),
        )];
    };
    if expect.is_met_by(decision) {
        return Vec::new();
    }
    vec![Problem::new(
        ProblemKind::Expectation,
        format!("{expect}, but the gate decided: {}", describe(decision)),
    )]
}

fn class_problems(class: FixtureClass, decision: &Decision) -> Vec<Problem> {
    let problem = match class {
        FixtureClass::Legacy if decision.shape() == Some(toolgate_gate::CURRENT_SHAPE) => Some(
            "a legacy fixture was admitted by the current shape, so it tests no legacy shape; move it to accepted/".to_owned(),
        ),
        FixtureClass::DuplicateKey if decision.rejection().is_some() && decision.rule() != Some("duplicate_member") => {
            Some(format!("a duplicate-key fixture must be rejected as `duplicate_member`; the gate said {}", describe(decision)))
        }
        _ => None,
    };
    problem
        .map(|message| Problem::new(ProblemKind::Expectation, message))
        .into_iter()
        .collect()
}

fn canary_problems(agent: &[u8], canaries: &[String]) -> Vec<Problem> {
    let agent_text = String::from_utf8_lossy(agent);
    canaries
        .iter()
        .filter(|canary| {
            let encoded = serde_json::to_string(canary).unwrap_or_default();
            agent_text.contains(canary.as_str()) || agent_text.contains(encoded.trim_matches('"'))
        })
        .map(|canary| {
            Problem::new(
                ProblemKind::Canary,
                format!("canary {canary:?} reached the agent"),
            )
        })
        .collect()
}

/// A legacy fixture must give the agent exactly what its current-shape twin gives.
fn twin_problems(
    root: &RepoRoot,
    requests: &RequestFiles,
    contract: &Contract,
    decision: &Decision,
    twin: &Result<Arc<Fixture>, String>,
) -> Vec<Problem> {
    let twin = match twin {
        Ok(twin) => twin,
        Err(message) => return vec![Problem::new(ProblemKind::Load, message.clone())],
    };
    let Ok(twin_spec) = &twin.spec else {
        return vec![Problem::new(
            ProblemKind::Twin,
            format!("its twin {} does not load", twin.name()),
        )];
    };
    match admit_fixture(root, requests, twin, twin_spec, contract) {
        Ok(twin_admitted) if twin_admitted.decision.agent_bytes() == decision.agent_bytes() => {
            Vec::new()
        }
        Ok(twin_admitted) => vec![
            Problem::new(
                ProblemKind::Twin,
                format!(
                    "the agent bytes differ from those of its current-shape twin {}",
                    twin.name()
                ),
            )
            .with_detail(toolgate_repo::text::diff::unified(
                &String::from_utf8_lossy(twin_admitted.decision.agent_bytes()),
                &String::from_utf8_lossy(decision.agent_bytes()),
                false,
            )),
        ],
        Err(problem) => vec![problem],
    }
}

fn snapshot_problem(context: &RunContext, path: &Path, expected: &Snapshot) -> Option<Problem> {
    let accept = format!("accept it with {}", snapshot::how_to_accept(&context.root));
    match snapshot::check(&context.root, path, expected, context.mode, context.color) {
        SnapshotCheck::Matches | SnapshotCheck::Accepted => None,
        SnapshotCheck::Missing {
            pending: Some(pending),
        } => Some(Problem::new(
            ProblemKind::Snapshot,
            format!(
                "no snapshot at {} yet; wrote {} for review: {accept}",
                path.display(),
                pending.display()
            ),
        )),
        SnapshotCheck::Missing { pending: None } => Some(Problem::new(
            ProblemKind::Snapshot,
            format!(
                "no snapshot at {} (nothing is written in CI): run `toolgate test --accept` locally and commit the snapshot",
                path.display()
            ),
        )),
        SnapshotCheck::Drift { diff, pending } => {
            let written = pending
                .map(|pending| format!("; wrote {} for review", pending.display()))
                .unwrap_or_default();
            Some(
                Problem::new(
                    ProblemKind::Snapshot,
                    format!("what the agent sees changed from {}{written}: if the change is intended, {accept}", path.display()),
                )
                .with_detail(diff),
            )
        }
        SnapshotCheck::Unreadable(message) => Some(Problem::new(ProblemKind::Snapshot, message)),
    }
}
