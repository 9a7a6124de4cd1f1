//! The contract suite: every fixture against every contract version it names, each as a case that
//! goes through the gate's public API exactly as production does, plus the suite-wide checks
//! (structure, coverage, stale snapshots, the contract lock).
//!
//! `toolgate test` and `cargo test` (tests/fixtures.rs) both run this, one case at a time, so a
//! failure in one never stops the others.
//!
//! This module finds what there is to run: the cases (fixture × version) and the suite checks.
//! Running a case is `case.rs`; the suite-wide checks are `checks.rs`; both load a fixture's
//! request and raw bytes and hand them to the gate through `toolgate_repo::admission`.

mod case;
mod checks;
mod discover;
pub(crate) mod mutant_trials;

use discover::ToolContracts;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use toolgate_repo::{RootDiscovery, discover_root, discover_tool};

use toolgate_gate::Contract;

use crate::snapshot::SnapshotMode;
use toolgate_analyze::mutants::AcceptedSurvivor;
use toolgate_analyze::mutants::Family;
use toolgate_analyze::mutants::FamilyOutcome;
use toolgate_analyze::mutants::SeedFixture;
use toolgate_repo::Acceptances;
use toolgate_repo::RepoRoot;
use toolgate_repo::RequestFiles;
use toolgate_repo::UsageError;
use toolgate_repo::{CaseResult, LoadError, Problem, ProblemKind};
use toolgate_repo::{Fixture, FixtureClass, StructureProblem};
use toolgate_repo::{Repository, VersionDir};

/// How a run treats snapshots and colour.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The repository root: every read and write of the run stays inside it.
    pub root: RepoRoot,
    /// Check, write pending, or accept (insta's `INSTA_UPDATE` and `INSTA_FORCE_PASS`).
    pub mode: SnapshotMode,
    /// insta's `INSTA_SNAPSHOT_REFERENCES_FILE`: where to name every snapshot the run uses, so
    /// `cargo insta test --unreferenced` knows which ones are referenced.
    pub references: Option<std::path::PathBuf>,
    /// Colour diffs.
    pub color: bool,
    /// Tools whose new versions `--accept` must not lock, each with the reason (its suite
    /// failed in this run, or it is unproven): filled in once the tools have run.
    pub withheld: BTreeMap<String, String>,
}

/// A tool's accepted survivors, read once (or why they cannot be).
type SurvivorsCell = OnceLock<Result<Arc<Acceptances<AcceptedSurvivor>>, String>>;

/// Which part of a repository a suite covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every tool's cases and checks, and the repository-wide checks (what `cargo test` runs).
    Everything,
    /// One tool's cases and checks: `toolgate test` runs tool after tool, so its memory holds one
    /// tool's fixtures at a time, however many tools there are.
    Tool(String),
    /// Only the repository-wide checks: the top of `fixtures/`, snapshots outside any tool's
    /// folder, the contract lock.
    Repository,
}

/// Everything a run covers.
#[derive(Debug)]
pub struct Suite {
    repository: Repository,
    scope: Scope,
    /// Every tool with a contract folder.
    all_tools: Vec<String>,
    /// The tools in scope, their contracts compiled.
    tools: Vec<ToolContracts>,
    fixtures: Vec<Arc<Fixture>>,
    fixture_count: usize,
    root_problems: Vec<StructureProblem>,
    tool_problems: BTreeMap<String, Vec<StructureProblem>>,
    requests: Arc<RequestFiles>,
    /// Each tool version's mutation seeds, collected when a mutant trial first needs them.
    mutant_seeds: BTreeMap<(String, String), OnceLock<Arc<Vec<SeedFixture>>>>,
    /// Each tool version's judged mutants per family, shared by its trial and the coverage check.
    family_outcomes: BTreeMap<(String, String, Family), OnceLock<Arc<FamilyOutcome>>>,
    /// Each tool's accepted survivors, read when a mutant trial first needs them.
    survivors: BTreeMap<String, SurvivorsCell>,
    /// The cases, in tool, class, case, version order.
    pub cases: Vec<Case>,
}

/// One fixture against one contract version.
#[derive(Debug, Clone)]
pub struct Case {
    /// `tool::class::case`, with `@vN` when the fixture runs against several versions.
    pub name: String,
    /// The fixture.
    pub fixture: Arc<Fixture>,
    /// The version, unless the sidecar could not be read (then the case reports that).
    pub version: Option<String>,
    contract: CaseContract,
    twin: Option<Result<Arc<Fixture>, String>>,
    requests: Arc<RequestFiles>,
}

/// The contract a case runs against.
#[derive(Debug, Clone)]
enum CaseContract {
    /// Compiled and ready.
    Ready(Arc<Contract>),
    /// The version does not compile (or the tool's folder cannot be read): the case is not run,
    /// and `<tool>::contracts` reports why, once.
    Broken,
    /// The sidecar names a version that is not published, or could not be read: the case fails.
    Unknown(Option<String>),
}

impl Case {
    /// Why the case cannot run at all, when its contract does not compile. Such a case is
    /// reported as not run (its tool's `contracts` check fails instead, once), never as passing.
    pub fn blocked(&self) -> Option<String> {
        matches!(self.contract, CaseContract::Broken).then(|| {
            format!(
                "not run: contract {} of `{}` does not compile or cannot be read (see {}::contracts)",
                self.version.as_deref().unwrap_or("folder"),
                self.fixture.tool,
                self.fixture.tool
            )
        })
    }
}

/// A suite-wide check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// The top of the fixture tree, and that there is at least one fixture.
    Structure,
    /// A tool's fixture folder: class folders, raw files with their sidecars.
    ToolStructure,
    /// A tool's contract versions compile.
    Contracts,
    /// A tool's fixtures cover every class and listed case.
    Coverage,
    /// No snapshot file in a tool's folder without a fixture.
    ToolSnapshots,
    /// No snapshot file outside the tools' folders.
    StaleSnapshots,
    /// Published contract versions are locked and unchanged.
    ContractLock,
    /// One mutation family's mutants of a tool version's admitted fixtures: no leak, no
    /// unaccepted survivor, no stale acceptance.
    Mutants(Family),
    /// A tool's contract versions pass `toolgate lint`, or its findings are accepted.
    Lint,
    /// A tool's accepted fixtures hold at least one response the upstream sent, not only ones
    /// built from the schema; otherwise it is unproven (neither passed nor failed).
    Proven,
}

/// A named suite-wide check.
#[derive(Debug, Clone)]
pub struct SuiteCheck {
    /// `suite::structure`, `<tool>::contracts`, `<tool>::coverage`, ...
    pub name: String,
    /// The tool, for per-tool checks.
    pub tool: Option<String>,
    /// The contract version, for per-version checks.
    pub version: Option<String>,
    /// What it checks.
    pub kind: CheckKind,
}

impl Suite {
    /// The repository root, through which every file is read and written.
    pub fn root(&self) -> &RepoRoot {
        self.repository.root()
    }

    /// Every tool with a contract folder, sorted.
    pub fn tool_names(&self) -> Vec<&str> {
        self.all_tools.iter().map(String::as_str).collect()
    }

    /// Another tool's name, for mutants that answer as the wrong tool.
    pub fn other_tool(&self, tool: &str) -> &str {
        self.all_tools
            .iter()
            .find(|other| *other != tool)
            .map_or("toolgate_other_tool", String::as_str)
    }

    /// A tool's versions in scope: whether each compiled contract is a text tool, or why it does
    /// not compile.
    pub fn compiled_versions(&self, tool: &str) -> Vec<(String, Result<bool, String>)> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        if let Some(error) = &contracts.layout_error {
            return vec![("(all)".to_owned(), Err(error.clone()))];
        }
        contracts
            .versions
            .iter()
            .map(|(version, compiled)| {
                (
                    version.name(),
                    compiled
                        .as_ref()
                        .map(|contract| contract.is_text())
                        .map_err(Clone::clone),
                )
            })
            .collect()
    }

    /// The number of fixtures in scope (for the repository scope: below every tool's folder).
    pub fn fixture_count(&self) -> usize {
        self.fixture_count
    }

    /// The suite checks in scope, in the order they run.
    pub fn checks(&self) -> Vec<SuiteCheck> {
        let repository_wide = !matches!(self.scope, Scope::Tool(_));
        let named = |name: String, tool: Option<&str>, kind| SuiteCheck {
            name,
            tool: tool.map(str::to_owned),
            version: None,
            kind,
        };
        let mut checks = Vec::new();
        if repository_wide {
            checks.push(named(
                "suite::structure".to_owned(),
                None,
                CheckKind::Structure,
            ));
        }
        for tool in &self.tools {
            for (kind, suffix) in [
                (CheckKind::ToolStructure, "structure"),
                (CheckKind::Contracts, "contracts"),
                (CheckKind::Coverage, "coverage"),
                (CheckKind::ToolSnapshots, "snapshots"),
                (CheckKind::Lint, "lint"),
                (CheckKind::Proven, "proven"),
            ] {
                checks.push(named(
                    format!("{}::{suffix}", tool.tool),
                    Some(&tool.tool),
                    kind,
                ));
            }
            checks.extend(self.mutant_checks(tool));
        }
        if repository_wide {
            checks.push(named(
                "suite::stale_snapshots".to_owned(),
                None,
                CheckKind::StaleSnapshots,
            ));
            checks.push(named(
                "suite::contract_lock".to_owned(),
                None,
                CheckKind::ContractLock,
            ));
        }
        checks
    }

    /// Runs one suite check.
    pub fn run_check(&self, check: &SuiteCheck, context: &RunContext) -> CaseResult {
        let mut verdict = CaseResult::named(&check.name);
        verdict.tool = check.tool.clone();
        let tool = check.tool.as_deref().unwrap_or_default();
        verdict.problems = match check.kind {
            CheckKind::Structure => self.structure_problems(),
            CheckKind::ToolStructure => self
                .tool_problems
                .get(tool)
                .into_iter()
                .flatten()
                .map(Problem::structure)
                .collect(),
            CheckKind::Contracts => self.contract_problems(tool),
            CheckKind::Coverage => self.coverage_problems(tool),
            CheckKind::ToolSnapshots => self.stale_snapshot_problems(context, Some(tool)),
            CheckKind::StaleSnapshots => self.stale_snapshot_problems(context, None),
            CheckKind::ContractLock => return self.lock_check(context, verdict),
            CheckKind::Lint => return self.lint_check(tool, verdict),
            CheckKind::Proven => return self.proven_check(tool, verdict),
            CheckKind::Mutants(family) => {
                verdict.version = check.version.clone();
                return self.mutant_trial(tool, family, verdict);
            }
        };
        verdict
    }
}
