//! Fixture discovery: `fixtures/<tool>/<class>/<case>.<ext>`, each raw file beside its sidecar
//! `<case>.expect.yaml` (see `sidecar.rs`), plus request files (`fixtures/<tool>/*.json`).
//!
//! Raw files are kept byte for byte as received and are never parsed here; the sidecar says what
//! the gate must decide. Wrong structure (an unknown class folder, fixtures for a tool without a
//! contract, a raw file without a sidecar) is reported with its path and never stops discovery.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::sidecar::Sidecar;

/// The folder under the root that holds one folder per tool.
pub const FIXTURES_DIR: &str = "fixtures";
/// What a sidecar's file name ends with.
pub const SIDECAR_SUFFIX: &str = ".expect.yaml";
/// The request file a sidecar uses unless it names another.
pub const DEFAULT_REQUEST_FILE: &str = "request.json";

/// The four kinds of fixture, one folder each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FixtureClass {
    /// Responses the contract must admit.
    Accepted,
    /// Responses that look right and must be rejected.
    NearMiss,
    /// Older upstream shapes still supported: admitted through a legacy shape, normalized.
    Legacy,
    /// Raw bytes with repeated member names: rejected by the parser.
    DuplicateKey,
}

impl FixtureClass {
    /// Every class, in report order.
    pub const ALL: [FixtureClass; 4] = [
        FixtureClass::Accepted,
        FixtureClass::NearMiss,
        FixtureClass::Legacy,
        FixtureClass::DuplicateKey,
    ];

    /// The folder name.
    pub fn as_str(self) -> &'static str {
        match self {
            FixtureClass::Accepted => "accepted",
            FixtureClass::NearMiss => "near-miss",
            FixtureClass::Legacy => "legacy",
            FixtureClass::DuplicateKey => "duplicate-key",
        }
    }

    /// Parses a folder name.
    pub fn from_dir_name(name: &str) -> Option<FixtureClass> {
        FixtureClass::ALL
            .into_iter()
            .find(|class| class.as_str() == name)
    }
}

impl fmt::Display for FixtureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One raw fixture and its sidecar.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The tool folder it lives in.
    pub tool: String,
    /// Its class folder.
    pub class: FixtureClass,
    /// Its name: the raw file's name without its extension.
    pub case: String,
    /// The raw file, relative to the root.
    pub raw: PathBuf,
    /// The sidecar, relative to the root.
    pub sidecar: PathBuf,
    /// The parsed sidecar, or why it could not be read (the message names the file and line).
    pub spec: Result<Sidecar, String>,
}

impl Fixture {
    /// `tool::class::case`.
    pub fn name(&self) -> String {
        format!("{}::{}::{}", self.tool, self.class, self.case)
    }

    /// The request file this fixture uses, relative to the root.
    pub fn request_file(&self) -> PathBuf {
        let name = self
            .spec
            .as_ref()
            .ok()
            .and_then(|spec| spec.request.as_deref())
            .unwrap_or(DEFAULT_REQUEST_FILE);
        Path::new(FIXTURES_DIR).join(&self.tool).join(name)
    }
}

/// A structural problem in the fixture tree, named by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureProblem {
    /// The path, relative to the root.
    pub path: PathBuf,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for StructureProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Everything found under `fixtures/` (or one tool's part of it).
#[derive(Debug, Default)]
pub struct Discovery {
    /// The fixtures, sorted by tool, class and case.
    pub fixtures: Vec<Fixture>,
    /// Structural problems, each naming its path.
    pub problems: Vec<StructureProblem>,
}

/// What `fixtures/` itself holds: problems at its top level, and how many fixtures lie below.
#[derive(Debug, Default)]
pub struct RootDiscovery {
    /// Folders for tools without a contract, loose files, a missing `fixtures/`.
    pub problems: Vec<StructureProblem>,
    /// The sidecars below the tools' folders, counted without being read.
    pub fixture_count: usize,
}

/// The top level of `<root>/fixtures`. `tools` are the tools that have a contract.
pub fn discover_root(root: &Path, tools: &[String]) -> RootDiscovery {
    let mut discovery = RootDiscovery::default();
    let base = root.join(FIXTURES_DIR);
    if !base.is_dir() {
        discovery.problems.push(StructureProblem {
            path: PathBuf::from(FIXTURES_DIR),
            message: "no fixtures folder: add fixtures/<tool>/<class>/<case>.json with a <case>.expect.yaml beside it".to_owned(),
        });
        return discovery;
    }
    for entry in WalkDir::new(&base)
        .min_depth(1)
        .max_depth(3)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                if error.depth() <= 1 {
                    let path = error
                        .path()
                        .map_or_else(|| PathBuf::from(FIXTURES_DIR), |path| relative(root, path));
                    discovery.problems.push(StructureProblem {
                        path,
                        message: format!("cannot read: {error}"),
                    });
                }
                continue;
            }
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = relative(root, entry.path());
        let tool = path
            .components()
            .nth(1)
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        match (entry.depth(), entry.file_type().is_dir()) {
            _ if name.starts_with('.') => {}
            (1, true) if tools.contains(&tool) => {}
            (1, true) => discovery.problems.push(StructureProblem {
                path,
                message: format!("fixtures for tool `{tool}`, which has no contract under contracts/ (known tools: {})", tools.join(", ")),
            }),
            (1, false) => discovery.problems.push(StructureProblem {
                path,
                message: "a file directly under fixtures/; fixtures live in fixtures/<tool>/<class>/".to_owned(),
            }),
            (3, false) if tools.contains(&tool) && name.ends_with(SIDECAR_SUFFIX) => discovery.fixture_count += 1,
            _ => {}
        }
    }
    discovery
}

/// The files found for one case name: its raw files (exactly one is right) and its sidecar.
type CaseFiles = (Vec<PathBuf>, Option<PathBuf>);

/// One tool's folder, `<root>/fixtures/<tool>`: its fixtures, and what is wrong in it.
pub fn discover_tool(root: &Path, tool: &str) -> Discovery {
    let mut discovery = Discovery::default();
    let base = root.join(FIXTURES_DIR).join(tool);
    if !base.is_dir() {
        return discovery;
    }
    let mut groups: BTreeMap<FixtureClass, BTreeMap<String, CaseFiles>> = BTreeMap::new();
    for entry in WalkDir::new(&base)
        .min_depth(1)
        .max_depth(2)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error
                    .path()
                    .map_or_else(|| relative(root, &base), |path| relative(root, path));
                discovery.problems.push(StructureProblem {
                    path,
                    message: format!("cannot read: {error}"),
                });
                continue;
            }
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = relative(root, entry.path());
        let class_name = path
            .components()
            .nth(2)
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        match (entry.depth(), entry.file_type().is_dir()) {
            (1, true) if FixtureClass::from_dir_name(&name).is_some() => {}
            (1, true) => discovery.problems.push(StructureProblem {
                path,
                message: format!("unknown fixture class folder `{name}`; a tool's fixtures live in accepted/, near-miss/, legacy/ or duplicate-key/"),
            }),
            (1, false) if name.ends_with(".json") => {} // a request file
            (1, false) => discovery.problems.push(StructureProblem {
                path,
                message: "only request files (*.json) and class folders belong in a tool's fixture folder".to_owned(),
            }),
            (_, true) => discovery.problems.push(StructureProblem {
                path,
                message: "a folder inside a class folder; fixtures are files: <case>.json and <case>.expect.yaml".to_owned(),
            }),
            (_, false) => {
                let Some(class) = FixtureClass::from_dir_name(&class_name) else {
                    continue; // its folder is already reported
                };
                let group = groups.entry(class).or_default();
                if let Some(case) = name.strip_suffix(SIDECAR_SUFFIX) {
                    group.entry(case.to_owned()).or_default().1 = Some(path);
                } else {
                    let case = name.rsplit_once('.').map_or(name.as_str(), |(stem, _)| stem);
                    group.entry(case.to_owned()).or_default().0.push(path);
                }
            }
        }
    }
    for (class, cases) in groups {
        for (case, (mut raws, sidecar)) in cases {
            let Some(sidecar) = sidecar else {
                for raw in raws {
                    discovery.problems.push(StructureProblem {
                        path: raw,
                        message: format!("a raw fixture without its sidecar {case}{SIDECAR_SUFFIX} (the request and the expected outcome)"),
                    });
                }
                continue;
            };
            if raws.len() != 1 {
                let message = if raws.is_empty() {
                    format!(
                        "a sidecar without its raw fixture: add the response bytes as {case}.json (or any extension) beside it"
                    )
                } else {
                    let names: Vec<String> =
                        raws.iter().map(|raw| raw.display().to_string()).collect();
                    format!(
                        "several raw files share the case name `{case}`: {}",
                        names.join(", ")
                    )
                };
                discovery.problems.push(StructureProblem {
                    path: sidecar,
                    message,
                });
                continue;
            }
            if !is_case_name(&case) {
                discovery.problems.push(StructureProblem {
                    path: sidecar,
                    message: format!("case name `{case}` must be letters, digits, `_` and `-` (it names a test and a snapshot)"),
                });
                continue;
            }
            let spec = match std::fs::read_to_string(root.join(&sidecar)) {
                Err(error) => Err(format!("{}: cannot read: {error}", sidecar.display())),
                Ok(text) => Sidecar::parse(&text).map_err(|error| match error.line {
                    Some((line, column)) => {
                        format!("{}:{line}:{column}: {}", sidecar.display(), error.message)
                    }
                    None => format!("{}: {}", sidecar.display(), error.message),
                }),
            };
            discovery.fixtures.push(Fixture {
                tool: tool.to_owned(),
                class,
                case,
                raw: raws.remove(0),
                sidecar,
                spec,
            });
        }
    }
    discovery
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

fn is_case_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric())
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names() {
        assert!(is_case_name("ticket_7-reordered"));
        assert!(!is_case_name("with space") && !is_case_name("_x") && !is_case_name("a.b"));
    }
}
