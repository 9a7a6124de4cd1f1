//! The contract suite: every fixture against every contract version it names, each as a case that
//! goes through the gate's public API exactly as production does, plus the suite-wide checks
//! (structure, coverage, stale snapshots, the contract lock).
//!
//! `toolgate test` and `cargo test` (tests/fixtures.rs) both run this, one case at a time, so a
//! failure in one never stops the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_gate::{Contract, Decision, Layer, Outcome, Response};

use crate::error::UsageError;
use crate::fixture::{
    self, Coverage, ExpectedOutcome, Fixture, FixtureClass, Sidecar, StructureProblem,
};
use crate::invariants;
use crate::lock;
use crate::repo::{Repository, VersionDir};
use crate::request::{RequestSpec, parse_time, read_request_file};
use crate::snapshot::{self, Snapshot, SnapshotCheck, SnapshotMode};
use crate::verdict::{Problem, ProblemKind, Verdict};

/// How a run treats snapshots and colour.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The repository root.
    pub root: PathBuf,
    /// Check, write pending, or accept.
    pub mode: SnapshotMode,
    /// Colour diffs.
    pub color: bool,
}

/// One tool's contract versions, each compiled once.
#[derive(Debug)]
struct ToolContracts {
    tool: String,
    versions: Vec<(VersionDir, Result<Arc<Contract>, String>)>,
    /// Why the tool's contract folder could not even be listed, if it could not.
    layout_error: Option<String>,
}

impl ToolContracts {
    /// Lists a tool's version folders and compiles each contract once.
    fn compile(repository: &Repository, tool: &str) -> ToolContracts {
        match repository.versions(tool) {
            Ok(versions) => ToolContracts {
                tool: tool.to_owned(),
                versions: versions
                    .into_iter()
                    .map(|version| {
                        let compiled = repository
                            .compile(tool, &version)
                            .map(Arc::new)
                            .map_err(|error| error.to_string());
                        (version, compiled)
                    })
                    .collect(),
                layout_error: None,
            },
            Err(error) => ToolContracts {
                tool: tool.to_owned(),
                versions: Vec::new(),
                layout_error: Some(error.to_string()),
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
    root: PathBuf,
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
    contract: Result<Arc<Contract>, String>,
    twin: Option<Result<Arc<Fixture>, String>>,
    requests: Arc<RequestFiles>,
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
}

/// A named suite-wide check.
#[derive(Debug, Clone)]
pub struct SuiteCheck {
    /// `suite::structure`, `<tool>::contracts`, `<tool>::coverage`, ...
    pub name: String,
    /// The tool, for per-tool checks.
    pub tool: Option<String>,
    /// What it checks.
    pub kind: CheckKind,
}

impl Suite {
    /// Discovers every contract and fixture under `root`. Fails only when there is no repository
    /// at all (no `contracts/`); every other problem becomes a failing case or check.
    pub fn discover(root: impl Into<PathBuf>) -> Result<Suite, UsageError> {
        Suite::discover_scoped(root, Scope::Everything)
    }

    /// Discovers the part of the repository `scope` names.
    pub fn discover_scoped(root: impl Into<PathBuf>, scope: Scope) -> Result<Suite, UsageError> {
        let root = root.into();
        let repository = Repository::open(&root)?;
        let all_tools = repository.tools()?;
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
        let root_discovery = match scope {
            Scope::Tool(_) => fixture::RootDiscovery::default(),
            Scope::Everything | Scope::Repository => fixture::discover_root(&root, &all_tools),
        };
        let mut fixtures = Vec::new();
        let mut tool_problems = BTreeMap::new();
        for tool in &in_scope {
            let discovery = fixture::discover_tool(&root, tool);
            fixtures.extend(discovery.fixtures.into_iter().map(Arc::new));
            tool_problems.insert(tool.clone(), discovery.problems);
        }
        let fixture_count = if scope == Scope::Repository {
            root_discovery.fixture_count
        } else {
            fixtures.len()
        };
        let requests = Arc::new(RequestFiles::load(&root, &fixtures));
        let mut suite = Suite {
            root,
            scope,
            all_tools,
            tools,
            fixtures,
            fixture_count,
            root_problems: root_discovery.problems,
            tool_problems,
            requests,
            cases: Vec::new(),
        };
        suite.cases = suite.build_cases();
        Ok(suite)
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every tool with a contract folder, sorted.
    pub fn tool_names(&self) -> Vec<&str> {
        self.all_tools.iter().map(String::as_str).collect()
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
                    contract: Err(String::new()),
                    twin: None,
                    requests: Arc::clone(&self.requests),
                });
                continue;
            };
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
                    Some((_, compiled)) => compiled.clone(),
                    None => Err(format!(
                        "{}: `versions` names {version}, which is not a published version of {} ({})",
                        fixture.sidecar.display(),
                        fixture.tool,
                        if published.is_empty() {
                            "none".to_owned()
                        } else {
                            published.join(", ")
                        }
                    )),
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
            ] {
                checks.push(named(
                    format!("{}::{suffix}", tool.tool),
                    Some(&tool.tool),
                    kind,
                ));
            }
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
    pub fn run_check(&self, check: &SuiteCheck, context: &RunContext) -> Verdict {
        let mut verdict = Verdict::named(&check.name);
        verdict.tool = check.tool.clone();
        let tool = check.tool.as_deref().unwrap_or_default();
        verdict.problems = match check.kind {
            CheckKind::Structure => self.structure_problems(),
            CheckKind::ToolStructure => self
                .tool_problems
                .get(tool)
                .into_iter()
                .flatten()
                .map(|problem| Problem::new(ProblemKind::Structure, problem.to_string()))
                .collect(),
            CheckKind::Contracts => self.contract_problems(tool),
            CheckKind::Coverage => self.coverage_problems(tool),
            CheckKind::ToolSnapshots => self.stale_problems(context, Some(tool)),
            CheckKind::StaleSnapshots => self.stale_problems(context, None),
            CheckKind::ContractLock => {
                let repository = Repository::open(&self.root);
                let versions: Vec<(String, VersionDir)> = self
                    .all_tools
                    .iter()
                    .flat_map(|tool| {
                        // A tool whose folder cannot be listed is reported by `<tool>::contracts`.
                        let versions = repository
                            .as_ref()
                            .ok()
                            .and_then(|repository| repository.versions(tool).ok());
                        versions
                            .into_iter()
                            .flatten()
                            .map(|version| (tool.clone(), version))
                    })
                    .collect();
                lock::check(&self.root, &versions, context.mode == SnapshotMode::Accept)
            }
        };
        verdict
    }

    fn structure_problems(&self) -> Vec<Problem> {
        let mut problems: Vec<Problem> = self
            .root_problems
            .iter()
            .map(|problem| Problem::new(ProblemKind::Structure, problem.to_string()))
            .collect();
        if self.fixture_count == 0 {
            problems.push(Problem::new(
                ProblemKind::Structure,
                "found no fixtures at all: a suite that checks nothing must not pass; add fixtures/<tool>/<class>/<case>.json and <case>.expect.yaml",
            ));
        }
        problems
    }

    fn contract_problems(&self, tool: &str) -> Vec<Problem> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        let mut problems: Vec<Problem> = contracts
            .layout_error
            .iter()
            .map(|error| Problem::new(ProblemKind::Contract, error.clone()))
            .collect();
        for (_, compiled) in &contracts.versions {
            if let Err(error) = compiled {
                problems.extend(
                    error
                        .lines()
                        .map(|line| Problem::new(ProblemKind::Contract, line)),
                );
            }
        }
        problems
    }

    fn coverage_problems(&self, tool: &str) -> Vec<Problem> {
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
            .flat_map(|contract| contract.shape_names().skip(1).map(str::to_owned))
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
        if newest.is_text() {
            return problems;
        }
        for (class, required) in [
            (FixtureClass::NearMiss, &Coverage::NEAR_MISS[..]),
            (FixtureClass::DuplicateKey, &Coverage::DUPLICATE_KEY[..]),
        ] {
            let mut covered = BTreeSet::new();
            for fixture in fixtures.iter().filter(|fixture| fixture.class == class) {
                let Ok(spec) = &fixture.spec else { continue };
                for claim in &spec.covers {
                    match self.verify_claim(fixture, spec, *claim, newest) {
                        Ok(()) => {
                            covered.insert(*claim);
                        }
                        Err(reason) => problems.push(Problem::new(
                            ProblemKind::Coverage,
                            format!(
                                "{}: claims `{}`, but {reason}",
                                fixture.sidecar.display(),
                                claim.as_str()
                            ),
                        )),
                    }
                }
            }
            let missing: Vec<&str> = required
                .iter()
                .filter(|case| !covered.contains(case))
                .map(|case| case.as_str())
                .collect();
            if !missing.is_empty() {
                problems.push(Problem::new(
                    ProblemKind::Coverage,
                    format!(
                        "tool `{tool}`: no {class} fixture covers {}; add one and say so with `covers: [{}]` in its sidecar",
                        missing.join(", "),
                        missing.join(", ")
                    ),
                ));
            }
        }
        problems
    }

    /// Checks a coverage claim against the fixture's class and expectation and, for duplicate
    /// keys, against what the gate actually finds in the raw bytes.
    fn verify_claim(
        &self,
        fixture: &Fixture,
        spec: &Sidecar,
        claim: Coverage,
        contract: &Contract,
    ) -> Result<(), String> {
        let expect = &spec.expect;
        let is_duplicate_claim = Coverage::DUPLICATE_KEY.contains(&claim);
        let right_class = if is_duplicate_claim {
            FixtureClass::DuplicateKey
        } else {
            FixtureClass::NearMiss
        };
        if fixture.class != right_class {
            return Err(format!(
                "it is a {} fixture, and the claim belongs to {right_class}",
                fixture.class
            ));
        }
        let layers: &[Layer] = match claim {
            Coverage::OversizedString => &[Layer::Transport, Layer::Schema],
            _ if is_duplicate_claim => &[Layer::Parse],
            _ => &[Layer::Schema],
        };
        if expect.outcome != ExpectedOutcome::Rejected
            || !expect.layer().is_some_and(|layer| layers.contains(&layer))
        {
            let names: Vec<&str> = layers.iter().map(|layer| layer.as_str()).collect();
            return Err(format!(
                "it does not expect a rejection at {}",
                names.join(" or ")
            ));
        }
        if !is_duplicate_claim {
            return Ok(());
        }
        let admitted = admit_fixture(&self.root, &self.requests, fixture, spec, contract)
            .map_err(|problem| problem.message)?;
        let record = admitted.decision.operator_record();
        let Some(record) = record.filter(|record| record.rule() == "duplicate_member") else {
            return Err("the gate does not reject it as a duplicate member".to_owned());
        };
        let depth = record
            .instance_path()
            .unwrap_or_default()
            .matches('/')
            .count();
        match claim {
            Coverage::DuplicateTopLevel if depth != 1 => Err(format!(
                "its duplicate is at {}, not in the top-level object",
                record.instance_path().unwrap_or_default()
            )),
            Coverage::DuplicateNested if depth < 2 => {
                Err("its duplicate is in the top-level object, not a nested one".to_owned())
            }
            Coverage::DuplicateEscaped if !has_escaped_member_name(&admitted.raw) => {
                Err("no member name in it is spelled with an escape (\\u....)".to_owned())
            }
            _ => Ok(()),
        }
    }

    /// Snapshot files no case produces: under `snapshots/<tool>/` for a tool, or elsewhere under
    /// `snapshots/` (outside every tool's folder) for the repository.
    fn stale_problems(&self, context: &RunContext, tool: Option<&str>) -> Vec<Problem> {
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
            Some(tool) => snapshot::stale(
                &self.root,
                &Path::new(snapshot::SNAPSHOTS_DIR).join(tool),
                &[],
                &expected,
                &owned,
            ),
            None => snapshot::stale(
                &self.root,
                Path::new(snapshot::SNAPSHOTS_DIR),
                &self.all_tools,
                &expected,
                &owned,
            ),
        };
        if context.mode == SnapshotMode::Accept {
            return stale
                .into_iter()
                .filter_map(|path| {
                    std::fs::remove_file(self.root.join(&path))
                        .err()
                        .map(|error| {
                            Problem::new(
                                ProblemKind::Stale,
                                format!("{}: cannot remove: {error}", path.display()),
                            )
                        })
                })
                .collect();
        }
        stale
            .into_iter()
            .map(|path| {
                Problem::new(
                    ProblemKind::Stale,
                    format!("{}: no fixture produces this snapshot; delete it, or run `toolgate test --accept` to remove stale snapshots", path.display()),
                )
            })
            .collect()
    }
}

/// The request files fixtures name, each read and checked once per run.
#[derive(Debug, Default)]
pub struct RequestFiles(BTreeMap<PathBuf, Result<RequestSpec, String>>);

impl RequestFiles {
    fn load(root: &Path, fixtures: &[Arc<Fixture>]) -> RequestFiles {
        let mut files = BTreeMap::new();
        for fixture in fixtures {
            let path = fixture.request_file();
            files.entry(path.clone()).or_insert_with(|| {
                let full = root.join(&path);
                // Name the file as the user knows it, relative to the repository.
                read_request_file(&full).map_err(|error| {
                    error
                        .to_string()
                        .replace(&full.display().to_string(), &path.display().to_string())
                })
            });
        }
        RequestFiles(files)
    }

    /// A copy of the request in `path` (relative to the root), for one fixture to adjust.
    fn get(&self, path: &Path) -> Result<RequestSpec, String> {
        match self.0.get(path) {
            Some(loaded) => loaded.clone(),
            None => Err(format!("{}: not loaded", path.display())),
        }
    }
}

/// A fixture's raw bytes, request and the gate's decision on them.
struct Admitted {
    raw: Vec<u8>,
    request: RequestSpec,
    decision: Decision,
}

/// Loads a fixture's request and raw bytes and runs them through the gate's public API.
fn admit_fixture(
    root: &Path,
    requests: &RequestFiles,
    fixture: &Fixture,
    spec: &Sidecar,
    contract: &Contract,
) -> Result<Admitted, Problem> {
    let load = |message: String| Problem::new(ProblemKind::Load, message);
    let mut request = requests.get(&fixture.request_file()).map_err(load)?;
    request.override_with(
        spec.request_id.as_deref(),
        spec.now.as_deref(),
        spec.upstream_status,
    );
    if request.request_id.is_empty() {
        return Err(load(format!(
            "{}: no request_id (in the request file or the sidecar)",
            fixture.sidecar.display()
        )));
    }
    let now = match &request.now {
        Some(text) => parse_time(text)
            .map_err(|error| load(format!("{}: `now`: {error}", fixture.sidecar.display())))?,
        None => {
            return Err(load(format!(
                "{}: no `now`: a fixture must pin its decision time, in its request file or sidecar",
                fixture.sidecar.display()
            )));
        }
    };
    let raw = std::fs::read(root.join(&fixture.raw))
        .map_err(|error| load(format!("{}: cannot read: {error}", fixture.raw.display())))?;
    let mut response = Response::body(&raw);
    if let Some(status) = request.upstream_status {
        response = response.with_status(status);
    }
    let decision = contract.admit_response(response, &request.to_request(), now);
    Ok(Admitted {
        raw,
        request,
        decision,
    })
}

fn has_escaped_member_name(raw: &[u8]) -> bool {
    // A `"...\u....": ` token: a member name written with a \u escape.
    let text = String::from_utf8_lossy(raw);
    let mut rest = text.as_ref();
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (offset, ch) in after.char_indices() {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(offset);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { return false };
        let literal = &after[..end];
        let following = after[end + 1..].trim_start();
        if literal.contains("\\u") && following.starts_with(':') {
            return true;
        }
        rest = &after[end + 1..];
    }
    false
}

impl Case {
    /// Runs the case: the gate's decision against the expectation, the envelope and leakage
    /// checks, the legacy twin, and the snapshot.
    pub fn run(&self, context: &RunContext) -> Verdict {
        let fixture = &self.fixture;
        let mut verdict = Verdict::named(&self.name);
        verdict.tool = Some(fixture.tool.clone());
        verdict.class = Some(fixture.class);
        verdict.version = self.version.clone();
        let spec = match &fixture.spec {
            Ok(spec) => spec,
            Err(message) => {
                verdict
                    .problems
                    .push(Problem::new(ProblemKind::Load, message.clone()));
                return verdict;
            }
        };
        if let Err(message) = class_consistency(fixture.class, spec) {
            verdict.problems.push(Problem::new(
                ProblemKind::Load,
                format!("{}: {message}", fixture.sidecar.display()),
            ));
        }
        let contract = match &self.contract {
            Ok(contract) => contract,
            Err(message) => {
                verdict.problems.push(Problem::new(
                    ProblemKind::Contract,
                    message.lines().next().unwrap_or_default(),
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
            .extend(expectation_problems(&spec.expect, decision));
        verdict
            .problems
            .extend(class_problems(fixture.class, decision));
        verdict.problems.extend(invariants::agent_view_problems(
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
        let expected = Snapshot {
            fixture: fixture.raw.to_string_lossy().replace('\\', "/"),
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
            verdict.problems.push(problem);
        }
        verdict
    }
}

fn class_consistency(class: FixtureClass, spec: &Sidecar) -> Result<(), String> {
    let expect = &spec.expect;
    match class {
        FixtureClass::Accepted if expect.outcome == ExpectedOutcome::Rejected => {
            Err("an accepted fixture must expect `admitted` or `admitted_failure`; a response that must be rejected belongs in near-miss/".to_owned())
        }
        FixtureClass::NearMiss if expect.outcome != ExpectedOutcome::Rejected => {
            Err("a near-miss fixture must expect `rejected`; a response that must be admitted belongs in accepted/".to_owned())
        }
        FixtureClass::Legacy if expect.outcome != ExpectedOutcome::Admitted => {
            Err("a legacy fixture must expect `admitted`: it is an older shape the contract still supports".to_owned())
        }
        FixtureClass::DuplicateKey if expect.outcome != ExpectedOutcome::Rejected || expect.layer() != Some(Layer::Parse) => {
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

fn retry_words(retryable: bool) -> &'static str {
    if retryable {
        "retryable"
    } else {
        "not retryable"
    }
}

fn reproduce(fixture: &Fixture, spec: &Sidecar, version: &str) -> String {
    let mut command = format!(
        "toolgate check {} {} --request {} --contract-version {version}",
        fixture.tool,
        fixture.raw.display(),
        fixture.request_file().display()
    );
    if let Some(id) = &spec.request_id {
        command.push_str(&format!(" --request-id {id}"));
    }
    if let Some(now) = &spec.now {
        command.push_str(&format!(" --now {now}"));
    }
    if let Some(status) = spec.upstream_status {
        command.push_str(&format!(" --upstream-status {status}"));
    }
    command.push_str(" --explain");
    command
}

fn expectation_problems(expect: &fixture::Expectation, decision: &Decision) -> Vec<Problem> {
    let wanted = match expect.outcome {
        ExpectedOutcome::Admitted => "admitted".to_owned(),
        ExpectedOutcome::AdmittedFailure => format!(
            "admitted failure {}, {}",
            expect.code.as_deref().unwrap_or_default(),
            retry_words(expect.retryable.unwrap_or_default())
        ),
        ExpectedOutcome::Rejected => format!(
            "rejected at {}{}: {}, {}",
            expect.layer.as_deref().unwrap_or_default(),
            expect
                .rule
                .as_deref()
                .map(|rule| format!(", rule {rule}"))
                .unwrap_or_default(),
            expect.code.as_deref().unwrap_or_default(),
            retry_words(expect.retryable.unwrap_or_default())
        ),
    };
    let matches = match (expect.outcome, decision.outcome()) {
        (ExpectedOutcome::Admitted, Outcome::Admitted) => true,
        (ExpectedOutcome::AdmittedFailure, Outcome::AdmittedFailure { code, retryable }) => {
            expect.code() == Some(*code) && expect.retryable == Some(*retryable)
        }
        (ExpectedOutcome::Rejected, Outcome::Rejected(rejection)) => {
            expect.layer() == Some(rejection.layer())
                && expect.code() == Some(rejection.code())
                && expect.retryable == Some(rejection.retryable())
                && expect
                    .rule
                    .as_deref()
                    .is_none_or(|rule| Some(rule) == decision.rule())
        }
        _ => false,
    };
    if matches {
        return Vec::new();
    }
    vec![Problem::new(
        ProblemKind::Expectation,
        format!("{wanted}, but the gate decided: {}", describe(decision)),
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
    root: &Path,
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
            .with_detail(crate::diff::unified(
                &String::from_utf8_lossy(twin_admitted.decision.agent_bytes()),
                &String::from_utf8_lossy(decision.agent_bytes()),
                false,
            )),
        ],
        Err(problem) => vec![problem],
    }
}

fn snapshot_problem(context: &RunContext, path: &Path, expected: &Snapshot) -> Option<Problem> {
    let accept = "accept it with `toolgate test --accept` (or `cargo insta review`)";
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_member_names_are_recognized() {
        assert!(has_escaped_member_name(br#"{"a":1,"\u0061":2}"#));
        assert!(has_escaped_member_name(br#"{"x":{"st\u0061te": "a"}}"#));
        assert!(
            !has_escaped_member_name(br#"{"a":"\u0061"}"#),
            "an escaped value is not an escaped name"
        );
        assert!(!has_escaped_member_name(br#"{"a":1,"a":2}"#));
    }
}
