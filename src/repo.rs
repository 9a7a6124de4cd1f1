//! The repository layout users work in: `contracts/<tool>/v<N>/`, one folder per published version.

use std::fs;
use std::path::{Path, PathBuf};

use toolgate_gate::{Contract, ContractSource};

use crate::error::UsageError;

/// The folder under the root that holds one folder per tool.
pub const CONTRACTS_DIR: &str = "contracts";

/// A repository root: the folder holding `contracts/` (and, for the harness, `fixtures/` and
/// `snapshots/`).
#[derive(Debug, Clone)]
pub struct Repository {
    root: PathBuf,
}

/// One published version folder of a tool's contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionDir {
    /// The number after `v`.
    pub number: u32,
    /// The folder.
    pub path: PathBuf,
}

impl VersionDir {
    /// `v1`, `v2`, ...
    pub fn name(&self) -> String {
        format!("v{}", self.number)
    }
}

impl Repository {
    /// Opens a root, which must hold a `contracts/` folder.
    pub fn open(root: impl Into<PathBuf>) -> Result<Repository, UsageError> {
        let mut root = root.into();
        // Messages read better as `contracts/x` than `./contracts/x`.
        if root == Path::new(".") {
            root = PathBuf::new();
        }
        let contracts = root.join(CONTRACTS_DIR);
        if !contracts.is_dir() {
            return Err(UsageError::new(format!(
                "{}: no contracts folder here (expected {CONTRACTS_DIR}/<tool>/v<N>/contract.yaml); pass --root with the repository's folder",
                contracts.display()
            )));
        }
        Ok(Repository { root })
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/contracts`.
    pub fn contracts_dir(&self) -> PathBuf {
        self.root.join(CONTRACTS_DIR)
    }

    /// The tools that have a contract folder, sorted.
    pub fn tools(&self) -> Result<Vec<String>, UsageError> {
        let dir = self.contracts_dir();
        let mut tools = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|error| UsageError::io(&dir, "list", &error))? {
            let entry = entry.map_err(|error| UsageError::io(&dir, "list", &error))?;
            if entry.path().is_dir() {
                tools.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        tools.sort();
        Ok(tools)
    }

    /// The version folders of a tool, oldest first. Anything else in the tool's folder is an error.
    pub fn versions(&self, tool: &str) -> Result<Vec<VersionDir>, UsageError> {
        let dir = self.contracts_dir().join(tool);
        if !dir.is_dir() {
            let known = self.tools()?.join(", ");
            return Err(UsageError::new(format!(
                "{}: no contract for tool `{tool}` (known tools: {})",
                dir.display(),
                if known.is_empty() { "none" } else { &known }
            )));
        }
        let mut versions = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|error| UsageError::io(&dir, "list", &error))? {
            let entry = entry.map_err(|error| UsageError::io(&dir, "list", &error))?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            match parse_version(&name) {
                Some(number) if path.is_dir() => versions.push(VersionDir { number, path }),
                _ => {
                    return Err(UsageError::new(format!(
                        "{}: not a contract version folder; a tool's folder holds only v1, v2, ... (a breaking change is a new version folder)",
                        path.display()
                    )));
                }
            }
        }
        if versions.is_empty() {
            return Err(UsageError::new(format!(
                "{}: the tool has no version folder (v1, v2, ...)",
                dir.display()
            )));
        }
        versions.sort_by_key(|version| version.number);
        Ok(versions)
    }

    /// The requested version folder (`v2`), or the newest when `None`.
    pub fn version(&self, tool: &str, requested: Option<&str>) -> Result<VersionDir, UsageError> {
        let versions = self.versions(tool)?;
        match requested {
            None => Ok(versions
                .last()
                .cloned()
                .expect("versions() never returns an empty list")),
            Some(name) => {
                let wanted = parse_version(name).ok_or_else(|| {
                    UsageError::new(format!(
                        "--contract-version {name:?}: write a version folder name such as v1"
                    ))
                })?;
                versions
                    .iter()
                    .find(|version| version.number == wanted)
                    .cloned()
                    .ok_or_else(|| {
                        let known: Vec<String> = versions.iter().map(VersionDir::name).collect();
                        UsageError::new(format!(
                            "{}: tool `{tool}` has no contract version {name} (published: {})",
                            self.contracts_dir().join(tool).display(),
                            known.join(", ")
                        ))
                    })
            }
        }
    }

    /// Compiles the contract in a version folder, checking that it names the folder's tool and
    /// version.
    pub fn compile(&self, tool: &str, version: &VersionDir) -> Result<Contract, UsageError> {
        let source = ContractSource::read_dir(&version.path)?;
        let contract = Contract::compile(&source)?;
        let file = version.path.join(toolgate_gate::CONTRACT_FILE);
        if contract.tool() != tool {
            return Err(UsageError::new(format!(
                "{}: says `tool: {}` but lives in the folder of tool `{tool}`",
                file.display(),
                contract.tool()
            )));
        }
        if contract.version() != version.name() {
            return Err(UsageError::new(format!(
                "{}: says `version: {}` but lives in folder {}",
                file.display(),
                contract.version().trim_start_matches('v'),
                version.name()
            )));
        }
        Ok(contract)
    }

    /// Finds and compiles a tool's contract (newest version unless one is requested).
    pub fn load(&self, tool: &str, requested: Option<&str>) -> Result<Contract, UsageError> {
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
}
