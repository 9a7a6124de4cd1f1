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
pub(crate) mod mutant_trials;

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

/// A version's load error as problems: one per compile error, at its file and line; a file or
/// folder mismatch at the contract file; anything else as its lines.
fn placed(error: &LoadError) -> Vec<Problem> {
    match error {
        LoadError::Compile(errors) => errors
            .errors()
            .iter()
            .map(|error| {
                Problem::new(ProblemKind::Contract, error.to_string())
                    .at(Path::new(error.file()), error.line().map(|(line, _)| line))
            })
            .collect(),
        LoadError::Mismatch { file, .. } => {
            vec![Problem::new(ProblemKind::Contract, error.to_string()).at(file, Some(1))]
        }
        LoadError::NotAVersionFolder(path) => {
            vec![Problem::new(ProblemKind::Contract, error.to_string()).at(path, None)]
        }
        _ => error
            .to_string()
            .lines()
            .map(|line| Problem::new(ProblemKind::Contract, line))
            .collect(),
    }
}

/// A tool's accepted survivors, read once (or why they cannot be).
type SurvivorsCell = OnceLock<Result<Arc<Acceptances<AcceptedSurvivor>>, String>>;

/// One tool's contract versions, each compiled once.
#[derive(Debug)]
struct ToolContracts {
    tool: String,
    versions: Vec<(VersionDir, Result<Arc<Contract>, String>)>,
    /// Why the tool's contract folder could not even be listed, if it could not.
    layout_error: Option<String>,
    /// Each version's compile errors as problems, placed at their file and line where the gate
    /// knows them (so `--format github` annotates the line of `contract.yaml` at fault).
    compile_problems: Vec<Problem>,
}

impl ToolContracts {
    /// Lists a tool's version folders and compiles each contract once.
    fn compile(repository: &Repository, tool: &str) -> ToolContracts {
        match repository.versions(tool) {
            Ok(versions) => {
                let mut compile_problems = Vec::new();
                let versions = versions
                    .into_iter()
                    .map(|version| {
                        let compiled = repository.compile(tool, &version).map(Arc::new);
                        let compiled = compiled.map_err(|error| {
                            compile_problems.extend(placed(&error));
                            error.to_string()
                        });
                        (version, compiled)
                    })
                    .collect();
                ToolContracts {
                    tool: tool.to_owned(),
                    versions,
                    layout_error: None,
                    compile_problems,
                }
            }
            Err(error) => ToolContracts {
                tool: tool.to_owned(),
                versions: Vec::new(),
                layout_error: Some(error.to_string()),
                compile_problems: Vec::new(),
            },
        }
    }
}

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
    /// Discovers the part of the repository `scope` names. Fails only when there is no
    /// repository at all (no `contracts/`); every other problem becomes a failing case or check.
    pub fn discover_scoped(root: impl AsRef<Path>, scope: Scope) -> Result<Suite, UsageError> {
        let repository = Repository::open(root)?.naming_relative();
        let root = repository.root().clone();
        let (all_tools, contracts_problems) = repository.scan_tools()?;
        let in_scope: Vec<String> = match &scope {
            Scope::Everything => all_tools.clone(),
            Scope::Tool(tool) => all_tools
                .iter()
                .filter(|candidate| *candidate == tool)
                .cloned()
                .collect(),
            Scope::Repository => Vec::new(),
        };
        let tools: Vec<ToolContracts> = in_scope
            .iter()
            .map(|tool| ToolContracts::compile(&repository, tool))
            .collect();
        let mut root_discovery = match scope {
            Scope::Tool(_) => RootDiscovery::default(),
            Scope::Everything | Scope::Repository => discover_root(&root, &all_tools),
        };
        if !matches!(scope, Scope::Tool(_)) {
            root_discovery
                .problems
                .extend(contracts_problems.into_iter().map(StructureProblem::whole));
        }
        let mut fixtures = Vec::new();
        let mut tool_problems = BTreeMap::new();
        for tool in &in_scope {
            let discovery = discover_tool(&root, tool);
            fixtures.extend(discovery.fixtures.into_iter().map(Arc::new));
            tool_problems.insert(tool.clone(), discovery.problems);
        }
        let fixture_count = if scope == Scope::Repository {
            root_discovery.fixture_count
        } else {
            fixtures.len()
        };
        let requests = Arc::new(RequestFiles::load(&root, &fixtures));
        let mutant_seeds: BTreeMap<(String, String), OnceLock<Arc<Vec<SeedFixture>>>> = tools
            .iter()
            .flat_map(|tool| {
                tool.versions
                    .iter()
                    .map(|(version, _)| ((tool.tool.clone(), version.name()), OnceLock::new()))
            })
            .collect();
        let family_outcomes = mutant_seeds
            .keys()
            .flat_map(|(tool, version): &(String, String)| {
                Family::ALL
                    .iter()
                    .map(|family| ((tool.clone(), version.clone(), *family), OnceLock::new()))
            })
            .collect();
        let survivors = in_scope
            .iter()
            .map(|tool| (tool.clone(), OnceLock::new()))
            .collect();
        let mut suite = Suite {
            repository,
            scope,
            all_tools,
            tools,
            fixtures,
            fixture_count,
            root_problems: root_discovery.problems,
            tool_problems,
            requests,
            mutant_seeds,
            family_outcomes,
            survivors,
            cases: Vec::new(),
        };
        suite.cases = suite.build_cases();
        Ok(suite)
    }

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

    fn build_cases(&self) -> Vec<Case> {
        let mut cases = Vec::new();
        for fixture in &self.fixtures {
            let Some(tool) = self.tools.iter().find(|tool| tool.tool == fixture.tool) else {
                continue;
            };
            let Ok(spec) = &fixture.spec else {
                cases.push(Case {
                    name: fixture.name(),
                    fixture: Arc::clone(fixture),
                    version: None,
                    contract: CaseContract::Unknown(None),
                    twin: None,
                    requests: Arc::clone(&self.requests),
                });
                continue;
            };
            if tool.versions.is_empty() {
                // The tool's contract folder cannot be read: the fixture is not run, and says so.
                cases.push(Case {
                    name: fixture.name(),
                    fixture: Arc::clone(fixture),
                    version: None,
                    contract: CaseContract::Broken,
                    twin: None,
                    requests: Arc::clone(&self.requests),
                });
                continue;
            }
            let published: Vec<String> = tool
                .versions
                .iter()
                .map(|(version, _)| version.name())
                .collect();
            let wanted = spec.versions.clone().unwrap_or_else(|| published.clone());
            let twin = spec.twin.as_ref().map(|twin| self.twin_of(fixture, twin));
            for version in &wanted {
                let name = if wanted.len() > 1 {
                    format!("{}@{version}", fixture.name())
                } else {
                    fixture.name()
                };
                let contract = match tool
                    .versions
                    .iter()
                    .find(|(candidate, _)| candidate.name() == *version)
                {
                    Some((_, Ok(compiled))) => CaseContract::Ready(Arc::clone(compiled)),
                    Some((_, Err(_))) => CaseContract::Broken,
                    None => CaseContract::Unknown(Some(format!(
                        "{}: `versions` names {version}, which is not a published version of {} ({})",
                        fixture.sidecar.display(),
                        fixture.tool,
                        published.join(", ")
                    ))),
                };
                cases.push(Case {
                    name,
                    fixture: Arc::clone(fixture),
                    version: Some(version.clone()),
                    contract,
                    twin: twin.clone(),
                    requests: Arc::clone(&self.requests),
                });
            }
        }
        cases
    }

    fn twin_of(&self, fixture: &Fixture, twin: &str) -> Result<Arc<Fixture>, String> {
        self.fixtures
            .iter()
            .find(|candidate| {
                candidate.tool == fixture.tool
                    && candidate.class == FixtureClass::Accepted
                    && candidate.case == twin
            })
            .cloned()
            .ok_or_else(|| {
                format!(
                    "{}: `twin: {twin}` names no fixture in fixtures/{}/accepted/",
                    fixture.sidecar.display(),
                    fixture.tool
                )
            })
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
