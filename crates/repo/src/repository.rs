//! The repository layout users work in: `contracts/<tool>/v<N>/`, one folder per published version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_gate::{CONTRACT_FILE, Contract, ContractSource};

use crate::confine::{EntryKind, RepoRoot};
use crate::error::LoadError;

/// The folder under the root that holds one folder per tool.
pub const CONTRACTS_DIR: &str = "contracts";

/// `contracts/<tool>/lint.yaml`: lint findings accepted with a reason.
///
/// ```yaml
/// - rule: string_unbounded
///   file: envelope.schema.json
///   pointer: /$defs/review/properties/note
///   versions: [v1]            # optional: every version when absent
///   reason: free text the agent shows to a person, bounded by the byte limit
/// ```
pub const LINT_FILE: &str = "lint.yaml";

/// The file beside a tool's versions that pins the upstream's descriptor of the tool as it was
/// reviewed (`toolgate pin`; `toolgate mcp-proxy` withholds the tool when it changes).
pub const PIN_FILE: &str = "upstream.pin.json";

/// The suffix of the tool folder holding a tool's argument contract: `contracts/weather.arguments/`
/// gates the arguments of `weather`'s calls. An action contract is never offered as a tool of
/// its own, so the name cannot shadow an upstream tool that is offered.
pub const ARGUMENTS_SUFFIX: &str = ".arguments";

/// A repository root: the folder holding `contracts/` (and, for the harness, `fixtures/` and
/// `snapshots/`). Everything under it is read through [`RepoRoot`], inside the root only.
#[derive(Debug, Clone)]
pub struct Repository {
    root: RepoRoot,
}

/// One published version folder of a tool's contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionDir {
    /// The number after `v`.
    pub number: u32,
    /// The folder, relative to the root.
    pub path: PathBuf,
}

/// The text of one version folder's files.
#[derive(Debug, Clone)]
pub struct VersionFiles {
    /// The folder, as the user knows it.
    pub folder: PathBuf,
    /// `contract.yaml`.
    pub contract: String,
    /// Every `*.json` file beside it, by file name.
    pub schemas: BTreeMap<String, String>,
}

impl VersionDir {
    /// `v1`, `v2`, ...
    pub fn name(&self) -> String {
        format!("v{}", self.number)
    }
}

impl Repository {
    /// Opens a root, which must hold a `contracts/` folder (inside it, not a symlink out of it).
    /// A front, which also takes a bundle, opens its contracts with
    /// [`open_contracts`](crate::bundle::open_contracts).
    pub fn open(root: impl AsRef<Path>) -> Result<Repository, LoadError> {
        let root = root.as_ref();
        let no_contracts = || {
            LoadError::NoContracts(if root == Path::new(".") {
                PathBuf::from(CONTRACTS_DIR)
            } else {
                root.join(CONTRACTS_DIR)
            })
        };
        let root = RepoRoot::open(root).map_err(|_| no_contracts())?;
        match root.kind(Path::new(CONTRACTS_DIR))? {
            EntryKind::Dir => Ok(Repository { root }),
            _ => Err(no_contracts()),
        }
    }

    /// The repository whose files `root` holds (a bundle's, read into memory).
    pub(crate) fn from_root(root: RepoRoot) -> Repository {
        Repository { root }
    }

    /// The same repository, naming paths relative to its root in every message.
    pub fn naming_relative(self) -> Repository {
        Repository {
            root: self.root.naming_relative(),
        }
    }

    /// The root, through which every file is read and written.
    pub fn root(&self) -> &RepoRoot {
        &self.root
    }

    /// `contracts/`, as the user knows it.
    pub fn contracts_dir(&self) -> PathBuf {
        self.root.shown(Path::new(CONTRACTS_DIR))
    }

    /// The tools that have a contract folder, sorted, and what is wrong at the top of
    /// `contracts/` (a symlink out of the repository, a special file), one line each.
    pub fn scan_tools(&self) -> Result<(Vec<String>, Vec<String>), LoadError> {
        let mut tools = Vec::new();
        let mut problems = Vec::new();
        for entry in self.root.list(Path::new(CONTRACTS_DIR))? {
            match entry.kind {
                Ok(EntryKind::Dir) if entry.name_is_utf8 => tools.push(entry.name),
                Ok(EntryKind::Dir) => problems.push(format!(
                    "{}: a tool folder whose name is not UTF-8; name tools with lowercase letters, digits and _",
                    self.root.shown(&entry.path).display()
                )),
                Ok(EntryKind::File | EntryKind::Missing) => {}
                Ok(EntryKind::Other) => problems.push(format!(
                    "{}: not a regular file or folder (a FIFO, socket or device); remove it",
                    self.root.shown(&entry.path).display()
                )),
                Err(error) => problems.push(error.to_string()),
            }
        }
        self.refuse_case_twins(&tools)?;
        Ok((tools, problems))
    }

    /// The tools that have a contract folder, sorted. Two folders whose names differ only in
    /// case are an error: a case-insensitive file system (macOS, Windows) holds one of them, so
    /// the same checkout would mean two contracts on one machine and one on another.
    pub fn tools(&self) -> Result<Vec<String>, LoadError> {
        self.scan_tools().map(|(tools, _)| tools)
    }

    /// Refuses two tool folders whose names differ only in case (see [`Repository::tools`]).
    fn refuse_case_twins(&self, tools: &[String]) -> Result<(), LoadError> {
        for (index, tool) in tools.iter().enumerate() {
            if let Some(twin) = tools[..index]
                .iter()
                .find(|other| other.eq_ignore_ascii_case(tool))
            {
                return Err(LoadError::CaseTwins {
                    dir: self.contracts_dir(),
                    first: twin.clone(),
                    second: tool.clone(),
                });
            }
        }
        Ok(())
    }

    /// The tools a verb runs on: `only`, which must have a contract, or every tool.
    pub fn select_tools(&self, only: Option<&str>) -> Result<Vec<String>, LoadError> {
        let known = self.tools()?;
        match only {
            None => Ok(known),
            Some(tool) if known.iter().any(|candidate| candidate == tool) => {
                Ok(vec![tool.to_owned()])
            }
            Some(tool) => Err(LoadError::UnknownTool {
                tool: tool.to_owned(),
                known,
            }),
        }
    }

    /// The version folders of a tool, oldest first. Anything else in the tool's folder is an error.
    pub fn versions(&self, tool: &str) -> Result<Vec<VersionDir>, LoadError> {
        let relative = Path::new(CONTRACTS_DIR).join(tool);
        let dir = self.root.shown(&relative);
        if self.root.kind(&relative)? != EntryKind::Dir {
            return Err(LoadError::NoTool {
                dir,
                tool: tool.to_owned(),
                known: self.tools()?,
            });
        }
        let mut versions = Vec::new();
        for entry in self.root.list(&relative)? {
            let kind = entry.kind?;
            match parse_version(&entry.name) {
                Some(number) if kind == EntryKind::Dir => versions.push(VersionDir {
                    number,
                    path: entry.path,
                }),
                // Lint findings accepted with a reason: beside the versions, never inside one,
                // so accepting a finding does not change a published, locked version.
                None if entry.name == LINT_FILE && kind == EntryKind::File => {}
                // The upstream's tool as it was reviewed: beside the versions too, since a
                // server's change is not a contract's.
                None if entry.name == PIN_FILE && kind == EntryKind::File => {}
                _ => {
                    return Err(LoadError::NotAVersionFolder(self.root.shown(&entry.path)));
                }
            }
        }
        if versions.is_empty() {
            return Err(LoadError::NoVersion(dir));
        }
        versions.sort_by_key(|version| version.number);
        Ok(versions)
    }

    /// The requested version folder (`v2`), or the newest when `None`.
    pub fn version(&self, tool: &str, requested: Option<&str>) -> Result<VersionDir, LoadError> {
        let versions = self.versions(tool)?;
        match requested {
            None => Ok(versions
                .last()
                .cloned()
                .expect("versions() never returns an empty list")),
            Some(name) => {
                let wanted = parse_version(name)
                    .ok_or_else(|| LoadError::BadVersionName(name.to_owned()))?;
                versions
                    .iter()
                    .find(|version| version.number == wanted)
                    .cloned()
                    .ok_or_else(|| LoadError::NoSuchVersion {
                        dir: self.contracts_dir().join(tool),
                        tool: tool.to_owned(),
                        name: name.to_owned(),
                        published: versions.iter().map(VersionDir::name).collect(),
                    })
            }
        }
    }

    /// The text of a version folder's files: `contract.yaml` and every `*.json` beside it, each
    /// a regular file inside the repository, bounded in size.
    pub fn read_files(&self, version: &VersionDir) -> Result<VersionFiles, LoadError> {
        let contract = self.root.read_text(&version.path.join(CONTRACT_FILE))?;
        let mut schemas = BTreeMap::new();
        let mut problems = Vec::new();
        for entry in self.root.list(&version.path)? {
            if !entry.name.ends_with(".json") {
                continue;
            }
            match self.root.read_text(&entry.path) {
                Ok(text) => {
                    schemas.insert(entry.name, text);
                }
                Err(error) => problems.push(error),
            }
        }
        if !problems.is_empty() {
            return Err(LoadError::Unreadable(problems));
        }
        Ok(VersionFiles {
            folder: self.root.shown(&version.path),
            contract,
            schemas,
        })
    }

    /// A version folder's files as the gate's contract source.
    pub fn read_source(&self, version: &VersionDir) -> Result<ContractSource, LoadError> {
        let files = self.read_files(version)?;
        let mut source = ContractSource::new(files.contract).in_folder(files.folder);
        for (name, text) in files.schemas {
            source = source.with_schema(name, text);
        }
        Ok(source)
    }

    /// Compiles the contract in a version folder, checking that it names the folder's tool and
    /// version.
    pub fn compile(&self, tool: &str, version: &VersionDir) -> Result<Contract, LoadError> {
        let source = self.read_source(version)?;
        let contract = Contract::compile(&source)?;
        let file = self.root.shown(&version.path.join(CONTRACT_FILE));
        if contract.tool() != tool {
            return Err(LoadError::Mismatch {
                file,
                what: format!(
                    "says `tool: {}` but lives in the folder of tool `{tool}`",
                    contract.tool()
                ),
            });
        }
        if contract.version() != version.name() {
            return Err(LoadError::Mismatch {
                file,
                what: format!(
                    "says `version: {}` but lives in folder {}",
                    contract.version().trim_start_matches('v'),
                    version.name()
                ),
            });
        }
        Ok(contract)
    }

    /// Finds and compiles a tool's contract (newest version unless one is requested).
    pub fn load(&self, tool: &str, requested: Option<&str>) -> Result<Contract, LoadError> {
        let version = self.version(tool, requested)?;
        self.compile(tool, &version)
    }
}

/// `v3` → 3. No leading zeros, no `v0`.
pub fn parse_version(name: &str) -> Option<u32> {
    let digits = name.strip_prefix('v')?;
    if digits.starts_with('0')
        || digits.is_empty()
        || !digits.bytes().all(|byte| byte.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names() {
        assert_eq!(parse_version("v1"), Some(1));
        assert_eq!(parse_version("v12"), Some(12));
        for bad in ["1", "v0", "v01", "v", "v1a", "V1"] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
    }

    /// What went wrong is a variant a caller can match on, not only words: a report places a
    /// compile error at its line, and a verb can tell a missing tool from a broken contract.
    #[test]
    fn loading_says_what_is_wrong_by_kind() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("contracts/probe");
        std::fs::create_dir_all(folder.join("v1")).unwrap();
        std::fs::write(
            folder.join("v1/contract.yaml"),
            "tool: probe\nversion: 1\ndirection: result\nsurprise: 1\n",
        )
        .unwrap();
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            Repository::open(empty.path()),
            Err(LoadError::NoContracts(_))
        ));
        let repository = Repository::open(dir.path()).unwrap();
        match repository.select_tools(Some("absent")) {
            Err(LoadError::UnknownTool { known, .. }) => assert_eq!(known, ["probe"]),
            other => panic!("{other:?}"),
        }
        match repository.versions("absent") {
            Err(LoadError::NoTool { tool, known, .. }) => {
                assert_eq!(tool, "absent");
                assert_eq!(known, ["probe"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            repository.version("probe", Some("2")),
            Err(LoadError::BadVersionName(_))
        ));
        match repository.version("probe", Some("v3")) {
            Err(LoadError::NoSuchVersion { published, .. }) => assert_eq!(published, ["v1"]),
            other => panic!("{other:?}"),
        }
        match repository.load("probe", None) {
            Err(LoadError::Compile(errors)) => {
                let first = &errors.errors()[0];
                assert!(first.file().ends_with("contract.yaml"), "{first}");
                assert!(first.line().is_some(), "{first}");
            }
            other => panic!("{other:?}"),
        }
        // A case-insensitive file system cannot hold the twin at all.
        if std::fs::create_dir(dir.path().join("contracts/Probe")).is_ok() {
            assert!(matches!(
                repository.tools(),
                Err(LoadError::CaseTwins { .. })
            ));
            std::fs::remove_dir(dir.path().join("contracts/Probe")).unwrap();
        }
        std::fs::create_dir(folder.join("drafts")).unwrap();
        assert!(matches!(
            repository.versions("probe"),
            Err(LoadError::NotAVersionFolder(_))
        ));
    }
}
