//! The suite-wide checks: the fixture tree's structure, every contract version compiles,
//! coverage of the obvious cases, stale snapshots, the contract lock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_gate::Contract;

use super::{RunContext, Suite};
use crate::snapshot;
use toolgate_analyze::lint;
use toolgate_analyze::mutants::{
    DEFAULT_EMIT_DIR, Family, MUTANT_SHOWN, MutantVerdict, survivors_path,
};
use toolgate_repo::VersionDir;
use toolgate_repo::lock;
use toolgate_repo::{CONTRACTS_DIR, CaseResult, Problem, ProblemKind};
use toolgate_repo::{Fixture, FixtureClass};

impl Suite {
    pub(super) fn structure_problems(&self) -> Vec<Problem> {
        let mut problems: Vec<Problem> =
            self.root_problems.iter().map(Problem::structure).collect();
        if self.fixture_count == 0 {
            problems.push(Problem::new(
                ProblemKind::Structure,
                "found no fixtures at all: a suite that checks nothing must not pass; add fixtures/<tool>/<class>/<case>.json and <case>.expect.yaml",
            ));
        }
        problems
    }

    pub(super) fn contract_problems(&self, tool: &str) -> Vec<Problem> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        let mut problems: Vec<Problem> = contracts
            .layout_error
            .iter()
            .map(|error| Problem::new(ProblemKind::Contract, error.clone()))
            .collect();
        problems.extend(contracts.compile_problems.iter().cloned());
        problems
    }

    pub(super) fn coverage_problems(&self, tool: &str) -> Vec<Problem> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        let Some((_, Ok(newest))) = contracts.versions.last() else {
            return Vec::new(); // `<tool>::contracts` reports why
        };
        let fixtures: Vec<&Arc<Fixture>> = self
            .fixtures
            .iter()
            .filter(|fixture| fixture.tool == tool)
            .collect();
        let legacy_shapes: BTreeSet<String> = contracts
            .versions
            .iter()
            .filter_map(|(_, compiled)| compiled.as_ref().ok())
            .flat_map(|contract| {
                toolgate_gate::internals::shape_names(contract)
                    .skip(1)
                    .map(str::to_owned)
            })
            .collect();
        let mut applicable = vec![FixtureClass::Accepted, FixtureClass::NearMiss];
        if !newest.is_text() {
            applicable.push(FixtureClass::DuplicateKey);
        }
        if !legacy_shapes.is_empty() {
            applicable.push(FixtureClass::Legacy);
        }
        let mut problems = Vec::new();
        for class in &applicable {
            if !fixtures.iter().any(|fixture| fixture.class == *class) {
                let why = match class {
                    FixtureClass::Legacy => {
                        format!(
                            ", and its contract still admits legacy shapes ({})",
                            legacy_shapes.iter().cloned().collect::<Vec<_>>().join(", ")
                        )
                    }
                    _ => String::new(),
                };
                problems.push(Problem::new(
                    ProblemKind::Coverage,
                    format!("tool `{tool}` has no fixture in fixtures/{tool}/{class}/{why}"),
                ));
            }
        }
        for fixture in fixtures
            .iter()
            .filter(|fixture| !applicable.contains(&fixture.class))
        {
            problems.push(Problem::new(
                ProblemKind::Coverage,
                format!(
                    "{}: the `{}` class does not apply to tool `{tool}`",
                    fixture.raw.display(),
                    fixture.class
                ),
            ));
        }
        if !newest.is_text() {
            problems.extend(self.mutant_problems(tool, newest));
        }
        problems
    }

    /// The obvious near-misses, proven rather than claimed: every accepted fixture that runs
    /// against the newest version is mutated (an unknown member, null or an array for an
    /// object, an empty identifier, an oversized string, a success carrying an error, a
    /// duplicate at the top, nested and escaped) and each mutant is judged exactly as `toolgate
    /// mutate` judges it, with the same declarations and the same `survivors.yaml`: rejected at
    /// the layer that owns it, admitted where the contract declares it (a tolerated member, a
    /// declared null), or accepted with a reason; and nothing unpromised reaches the agent. One
    /// verdict: a contract `mutate` passes, this passes.
    fn mutant_problems(&self, tool: &str, newest: &Contract) -> Vec<Problem> {
        let version = newest.version();
        let seeds = self.seeds_of(tool, version, newest);
        let seed_count = seeds
            .iter()
            .filter(|seed| seed.fixture.class == FixtureClass::Accepted)
            .count();
        if seed_count == 0 {
            return vec![Problem::new(
                ProblemKind::Coverage,
                format!(
                    "tool `{tool}`: no accepted fixture runs against {version} and is admitted by it, so no near-miss can be derived for it; add one to fixtures/{tool}/accepted/"
                ),
            )];
        }
        let run = match self.mutant_run(
            tool,
            version,
            &Family::OBVIOUS,
            Path::new(DEFAULT_EMIT_DIR),
            false,
        ) {
            Ok(run) => run,
            Err(message) => return vec![Problem::new(ProblemKind::Load, message)],
        };
        let accepted_fixture = |raw: &Path| {
            seeds
                .iter()
                .any(|seed| seed.fixture.raw == raw && seed.fixture.class == FixtureClass::Accepted)
        };
        // One problem per (family, place, finding), however many fixtures show it.
        let mut findings: BTreeMap<(Family, String, String), CoverageGap> = BTreeMap::new();
        for finding in &run.findings {
            if !accepted_fixture(&finding.fixture) {
                continue;
            }
            let messages: Vec<String> = match &finding.verdict {
                MutantVerdict::Survivor(Some(_)) => continue,
                MutantVerdict::Survivor(None) if finding.projected => vec![
                    "admitted where the agent sees it: the contract does not reject this obvious near-miss; close the schema in a new contract version, or accept it in survivors.yaml with a reason".to_owned(),
                ],
                MutantVerdict::Survivor(None) => vec![format!(
                    "admitted where no promised field reads (upstream drift): close the schema there in a new contract version, declare the place with `tolerate:`, or accept the subtree in {} with a reason",
                    survivors_path(tool).display()
                )],
                MutantVerdict::Misplaced { layer, rule } => vec![format!(
                    "rejected at {layer}, expected {}: that layer should decide it on its own (rule {rule})",
                    finding.expected
                )],
                MutantVerdict::Leak(leaks) => {
                    leaks.iter().map(|leak| format!("LEAK: {leak}")).collect()
                }
            };
            for message in messages {
                let key = (finding.family, finding.pointer.clone(), message);
                findings
                    .entry(key)
                    .and_modify(|gap| gap.fixtures += 1)
                    .or_insert_with(|| CoverageGap {
                        fixtures: 1,
                        example: finding.fixture.clone(),
                        what: finding.what.clone(),
                        bytes: finding.bytes.clone(),
                    });
            }
        }
        findings
            .into_iter()
            .map(|((family, pointer, message), finding)| {
                let shown = String::from_utf8_lossy(&finding.bytes);
                let shown: String = shown.chars().take(MUTANT_SHOWN).collect();
                Problem::new(
                    ProblemKind::Coverage,
                    format!(
                        "{version}: mutant {family} at {} ({}), derived from {} of {seed_count} accepted fixtures (e.g. {}): {message}",
                        toolgate_repo::text::pointer(&pointer),
                        finding.what,
                        finding.fixtures,
                        finding.example.display(),
                    ),
                )
                .with_detail(format!("mutant: {shown}"))
            })
            .collect()
    }

    /// `toolgate lint` over every version of the tool: a finding `lint.yaml` does not accept, or
    /// an acceptance that matches nothing, fails.
    /// The lint check: its problems (each placed in the schema file or `lint.yaml` it is about)
    /// and what it counted, in `result`.
    pub(super) fn lint_check(&self, tool: &str, mut result: CaseResult) -> CaseResult {
        // A version that cannot be read is `<tool>::contracts`'s to report, once; it is not linted.
        let linted = lint::lint_tool(&self.repository, tool);
        let accepted = match &linted.accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                result.problems = vec![
                    Problem::new(ProblemKind::Load, error.to_string())
                        .at(error.file(), error.line()),
                ];
                return result;
            }
        };
        let findings = linted.findings();
        let (judged, stale) = lint::judge(&findings, accepted, &linted.read_versions());
        result.counts = [
            ("lint_findings", judged.len()),
            (
                "lint_accepted",
                judged
                    .iter()
                    .filter(|judged| judged.accepted.is_some())
                    .count(),
            ),
        ]
        .into_iter()
        .collect();
        for judged in judged.iter().filter(|judged| judged.accepted.is_none()) {
            let finding = judged.finding;
            let file = Path::new(CONTRACTS_DIR)
                .join(tool)
                .join(&finding.version)
                .join(&finding.file);
            result.problems.push(
                Problem::new(
                    ProblemKind::Lint,
                    format!(
                        "{} {}#{} [{}]: {}; {}",
                        finding.version,
                        finding.file,
                        finding.pointer,
                        finding.rule,
                        finding.message,
                        lint::fix_words(finding.rule.name(), tool)
                    ),
                )
                .at(&file, None),
            );
            result
                .version
                .get_or_insert_with(|| finding.version.clone());
        }
        for line in stale {
            result.problems.push(
                Problem::new(
                    ProblemKind::Stale,
                    format!(
                        "{}:{line}: this accepted lint finding is no longer found in the versions it names; remove the entry",
                        accepted.file.display()
                    ),
                )
                .at(&accepted.file, Some(line)),
            );
        }
        result
    }

    /// Snapshot files no case produces: under `snapshots/<tool>/` for a tool, or elsewhere under
    /// `snapshots/` (outside every tool's folder) for the repository. Accepting removes them.
    pub(super) fn stale_snapshot_problems(
        &self,
        context: &RunContext,
        tool: Option<&str>,
    ) -> Vec<Problem> {
        let mut expected = BTreeSet::new();
        let mut owned = BTreeSet::new();
        for case in self
            .cases
            .iter()
            .filter(|case| Some(case.fixture.tool.as_str()) == tool)
        {
            let fixture = &case.fixture;
            match &case.version {
                Some(version) => {
                    expected.insert(snapshot::snapshot_path(
                        &fixture.tool,
                        fixture.class.as_str(),
                        &fixture.case,
                        version,
                    ));
                }
                None => {
                    let prefix = snapshot::snapshot_path(
                        &fixture.tool,
                        fixture.class.as_str(),
                        &fixture.case,
                        "",
                    );
                    owned.insert(
                        prefix
                            .to_string_lossy()
                            .trim_end_matches(".snap")
                            .to_owned(),
                    );
                }
            }
        }
        let stale = match tool {
            Some(tool) => snapshot::find_stale(
                self.root(),
                &Path::new(snapshot::SNAPSHOTS_DIR).join(tool),
                &[],
                &expected,
                &owned,
            ),
            None => snapshot::find_stale(
                self.root(),
                Path::new(snapshot::SNAPSHOTS_DIR),
                &self.all_tools,
                &expected,
                &owned,
            ),
        };
        let mut problems: Vec<Problem> = stale
            .problems
            .into_iter()
            .map(|message| Problem::new(ProblemKind::Structure, message))
            .collect();
        match context.mode {
            // Accepting makes the tree match the fixtures: stale and pending files go.
            mode if mode.accept => {
                let removable: Vec<_> = stale.stale.into_iter().chain(stale.pending).collect();
                problems.extend(
                    snapshot::remove_stale(self.root(), &removable)
                        .into_iter()
                        .map(|message| Problem::new(ProblemKind::Stale, message)),
                );
            }
            mode => {
                problems.extend(stale.stale.into_iter().map(|path| {
                    Problem::new(
                        ProblemKind::Stale,
                        format!("{}: no fixture produces this snapshot; delete it, or run `toolgate test --accept` to remove stale snapshots", path.display()),
                    )
                }));
                // Locally a pending file is this run's own output; in CI it is a leftover that
                // was never reviewed, and nothing there may delete it.
                if !mode.writes() {
                    problems.extend(stale.pending.into_iter().map(|path| {
                        Problem::new(
                            ProblemKind::Stale,
                            format!("{}: a pending snapshot that was never reviewed; review it with {} and commit the result, or delete it", path.display(), snapshot::how_to_accept(&context.root)),
                        )
                    }));
                }
            }
        }
        problems
    }

    /// `<tool>::proven`: unproven (skipped, with what to do) when every accepted fixture of the
    /// tool is a response built from the schema (`synthesized: true`), so nothing shows the
    /// contract admits what the upstream really sends; passed with a note where each of them
    /// gives `accepted_unproven:` a reason. A tool with no accepted fixture at all is
    /// `<tool>::coverage`'s to report.
    pub(super) fn proven_check(&self, tool: &str, mut verdict: CaseResult) -> CaseResult {
        let accepted: Vec<(&Arc<Fixture>, &toolgate_repo::Sidecar)> = self
            .fixtures
            .iter()
            .filter(|fixture| fixture.tool == tool && fixture.class == FixtureClass::Accepted)
            .filter_map(|fixture| Some((fixture, fixture.spec.as_ref().ok()?)))
            .collect();
        if accepted.is_empty() || accepted.iter().any(|(_, spec)| !spec.synthesized) {
            return verdict;
        }
        let reasons: Vec<&str> = accepted
            .iter()
            .filter_map(|(_, spec)| spec.accepted_unproven.as_deref())
            .collect();
        if reasons.len() == accepted.len() {
            verdict.notes.push(format!(
                "accepted unproven (every accepted fixture is built from the schema): {}",
                reasons.join("; ")
            ));
            return verdict;
        }
        let files: Vec<String> = accepted
            .iter()
            .map(|(fixture, _)| fixture.raw.display().to_string())
            .collect();
        verdict.skipped = Some(format!(
            "unproven: every accepted fixture is a response built from the schema ({}), not one the upstream sent, so nothing shows the contract admits a real answer; `toolgate test --accept` does not lock it. Save a real response with `toolgate check {tool} RESPONSE.json --save-fixture accepted/CASE` (then delete the synthesized one), or, for a tool no example exists for anywhere, write `accepted_unproven: <why>` in its sidecar",
            files.join(", ")
        ));
        verdict
    }

    /// The version folders of `tools`; a tool whose folder cannot be listed is reported by
    /// `<tool>::contracts`.
    fn versions_of<'a>(
        &self,
        tools: impl IntoIterator<Item = &'a String>,
    ) -> Vec<(String, VersionDir)> {
        tools
            .into_iter()
            .flat_map(|tool| {
                let versions = self.repository.versions(tool).ok();
                versions
                    .into_iter()
                    .flatten()
                    .map(|version| (tool.clone(), version))
            })
            .collect()
    }

    /// Locks the unlocked versions of `tools` and nothing else (`--accept` with a filter that
    /// leaves the lock check out): each `<tool> v<N>` locked, and the problems met.
    pub fn lock_new_versions(&self, tools: &[String]) -> (Vec<String>, Vec<Problem>) {
        lock::lock_new(self.root(), &self.versions_of(tools))
    }

    /// The lock check on `tools` only (a filtered run that leaves the repository-wide check
    /// out): an unlocked or changed version of a tool the run tested still fails it.
    pub fn lock_problems_of(&self, tools: &[String]) -> Vec<Problem> {
        let versions = self.versions_of(tools);
        lock::check(self.root(), &versions, false, &BTreeMap::new(), false).1
    }

    /// Published contract versions are locked and unchanged; accepting locks new ones, and
    /// the verdict says which.
    pub(super) fn lock_check(&self, context: &RunContext, mut verdict: CaseResult) -> CaseResult {
        let versions = self.versions_of(&self.all_tools);
        let (locked, problems) = lock::check(
            self.root(),
            &versions,
            context.mode.accept,
            &context.withheld,
            true,
        );
        verdict.problems = problems;
        if !locked.is_empty() {
            verdict.notes.push(format!(
                "locked {} in contracts/contracts.lock: commit it with the folders",
                locked.join(", ")
            ));
        }
        verdict
    }
}

/// A mutant an obvious family expected refused that was not, and how many accepted fixtures it
/// showed in.
struct CoverageGap {
    fixtures: usize,
    example: PathBuf,
    what: String,
    bytes: Vec<u8>,
}
