//! A suite discovered: every tool's contracts compiled, its fixtures found and paired with their
//! expectations, and the cases they make.

use super::*;

/// A version's load error as problems: one per compile error, at its file and line; a file or
/// folder mismatch at the contract file; anything else as its lines.
pub(super) fn placed(error: &LoadError) -> Vec<Problem> {
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

/// One tool's contract versions, each compiled once.
#[derive(Debug)]
pub(super) struct ToolContracts {
    pub(super) tool: String,
    pub(super) versions: Vec<(VersionDir, Result<Arc<Contract>, String>)>,
    /// Why the tool's contract folder could not even be listed, if it could not.
    pub(super) layout_error: Option<String>,
    /// Each version's compile errors as problems, placed at their file and line where the gate
    /// knows them (so `--format github` annotates the line of `contract.yaml` at fault).
    pub(super) compile_problems: Vec<Problem>,
}

impl ToolContracts {
    /// Lists a tool's version folders and compiles each contract once.
    pub(super) fn compile(repository: &Repository, tool: &str) -> ToolContracts {
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

    pub(super) fn build_cases(&self) -> Vec<Case> {
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

    pub(super) fn twin_of(&self, fixture: &Fixture, twin: &str) -> Result<Arc<Fixture>, String> {
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
}
