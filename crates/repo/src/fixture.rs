//! Fixture discovery: `fixtures/<tool>/<class>/<case>.<ext>`, each raw file beside its sidecar
//! `<case>.expect.yaml` (see `sidecar.rs`), plus request files (`fixtures/<tool>/*.json`).
//!
//! Raw files are kept byte for byte as received and are never parsed here; the sidecar says what
//! the gate must decide. Wrong structure (an unknown class folder, fixtures for a tool without a
//! contract, a raw file without a sidecar) is reported with its path and never stops discovery.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::confine::{EntryKind, RepoRoot};
use crate::error::FileError;
use crate::sidecar::Sidecar;

/// The folder under the root that holds one folder per tool.
pub const FIXTURES_DIR: &str = "fixtures";
/// What a sidecar's file name ends with.
pub const SIDECAR_SUFFIX: &str = ".expect.yaml";
/// The request file a sidecar uses unless it names another.
pub const DEFAULT_REQUEST_FILE: &str = "request.json";
/// `fixtures/<tool>/survivors.yaml`: mutants accepted as survivors, each with a reason.
pub const SURVIVORS_FILE: &str = "survivors.yaml";

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
    pub spec: Result<Sidecar, FileError>,
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

impl StructureProblem {
    /// A problem whose message already names its path.
    pub fn whole(message: String) -> StructureProblem {
        StructureProblem {
            path: PathBuf::new(),
            message,
        }
    }

    /// A problem whose message (from [`RepoRoot`]) already starts with the path it is about.
    fn at(root: &RepoRoot, path: &Path, message: impl Into<String>) -> StructureProblem {
        let message: String = message.into();
        let prefix = format!("{}: ", root.shown(path).display());
        StructureProblem {
            path: path.to_path_buf(),
            message: message
                .strip_prefix(&prefix)
                .map_or_else(|| message.clone(), str::to_owned),
        }
    }
}

impl fmt::Display for StructureProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.as_os_str().is_empty() {
            return f.write_str(&self.message);
        }
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
pub fn discover_root(root: &RepoRoot, tools: &[String]) -> RootDiscovery {
    let mut discovery = RootDiscovery::default();
    let base = Path::new(FIXTURES_DIR);
    let entries = match root.kind(base) {
        Ok(EntryKind::Dir) => match root.list(base) {
            Ok(entries) => entries,
            Err(message) => {
                discovery
                    .problems
                    .push(StructureProblem::at(root, base, message));
                return discovery;
            }
        },
        Ok(_) => {
            discovery.problems.push(StructureProblem {
                path: PathBuf::from(FIXTURES_DIR),
                message: "no fixtures folder: add fixtures/<tool>/<class>/<case>.json with a <case>.expect.yaml beside it".to_owned(),
            });
            return discovery;
        }
        Err(message) => {
            discovery
                .problems
                .push(StructureProblem::at(root, base, message));
            return discovery;
        }
    };
    for entry in entries {
        if entry.name.starts_with('.') {
            continue;
        }
        match entry.kind {
            Err(message) => {
                discovery
                    .problems
                    .push(StructureProblem::at(root, &entry.path, message))
            }
            Ok(EntryKind::Dir) if tools.contains(&entry.name) => {
                discovery.fixture_count += count_sidecars(root, &entry.path);
            }
            Ok(EntryKind::Dir) => discovery.problems.push(StructureProblem {
                path: entry.path,
                message: format!(
                    "fixtures for tool `{}`, which has no contract under contracts/ ({})",
                    entry.name,
                    crate::error::nearest_tools(&entry.name, tools)
                ),
            }),
            Ok(_) => discovery.problems.push(StructureProblem {
                path: entry.path,
                message:
                    "a file directly under fixtures/; fixtures live in fixtures/<tool>/<class>/"
                        .to_owned(),
            }),
        }
    }
    discovery
}

/// The sidecars in a tool's class folders, counted without being read.
fn count_sidecars(root: &RepoRoot, tool: &Path) -> usize {
    let classes = root.list(tool).unwrap_or_default();
    classes
        .iter()
        .filter(|class| class.kind == Ok(EntryKind::Dir))
        .flat_map(|class| root.list(&class.path).unwrap_or_default())
        .filter(|file| file.kind == Ok(EntryKind::File) && file.name.ends_with(SIDECAR_SUFFIX))
        .count()
}

/// The entries found for one case name: its raw files (exactly one is right; with whether each
/// is a folder) and its sidecar.
type CaseFiles = (Vec<(PathBuf, bool)>, Option<PathBuf>);

/// One tool's folder, `<root>/fixtures/<tool>`: its fixtures, and what is wrong in it.
pub fn discover_tool(root: &RepoRoot, tool: &str) -> Discovery {
    let mut discovery = Discovery::default();
    let base = Path::new(FIXTURES_DIR).join(tool);
    let entries = match root.kind(&base) {
        Ok(EntryKind::Dir) => root.list(&base),
        Ok(_) => return discovery,
        Err(message) => Err(message),
    };
    let entries = match entries {
        Ok(entries) => entries,
        Err(message) => {
            discovery
                .problems
                .push(StructureProblem::at(root, &base, message));
            return discovery;
        }
    };
    let mut groups: BTreeMap<FixtureClass, BTreeMap<String, CaseFiles>> = BTreeMap::new();
    for entry in entries {
        if entry.name.starts_with('.') {
            continue;
        }
        match entry.kind {
            Err(message) => discovery
                .problems
                .push(StructureProblem::at(root, &entry.path, message)),
            Ok(EntryKind::Dir) => match FixtureClass::from_dir_name(&entry.name) {
                Some(class) => {
                    let group = groups.entry(class).or_default();
                    discover_class(root, &entry.path, group, &mut discovery.problems);
                }
                None => discovery.problems.push(StructureProblem {
                    path: entry.path,
                    message: format!("unknown fixture class folder `{}`; a tool's fixtures live in accepted/, near-miss/, legacy/ or duplicate-key/", entry.name),
                }),
            },
            Ok(EntryKind::File) if entry.name.ends_with(".json") => {} // a request file
            // The mutants the tool's contract admits on purpose.
            Ok(EntryKind::File) if entry.name == SURVIVORS_FILE => {}
            Ok(_) => discovery.problems.push(StructureProblem {
                path: entry.path,
                message: "only request files (*.json), survivors.yaml and class folders belong in a tool's fixture folder".to_owned(),
            }),
        }
    }
    for (class, cases) in groups {
        for (case, (mut raws, sidecar)) in cases {
            let Some(sidecar) = sidecar else {
                for (raw, is_folder) in raws {
                    let message = if is_folder {
                        "a folder inside a class folder; fixtures are files: <case>.json and <case>.expect.yaml".to_owned()
                    } else {
                        format!(
                            "a raw fixture without its sidecar {case}{SIDECAR_SUFFIX} (the request and the expected outcome)"
                        )
                    };
                    discovery
                        .problems
                        .push(StructureProblem { path: raw, message });
                }
                continue;
            };
            if raws.len() != 1 {
                let message = if raws.is_empty() {
                    format!(
                        "a sidecar without its raw fixture: add the response bytes as {case}.json (or any extension) beside it"
                    )
                } else {
                    let names: Vec<String> = raws
                        .iter()
                        .map(|(raw, _)| raw.display().to_string())
                        .collect();
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
                    message: format!("case name `{case}` must be letters, digits, `_` and `-`, a letter or digit first, at most {MAX_CASE_NAME} characters (it names a test and a snapshot)"),
                });
                continue;
            }
            let spec = match root.read_text(&sidecar) {
                Err(error) => Err(FileError::from(error)),
                Ok(text) => Sidecar::parse(&text)
                    .map_err(|error| FileError::invalid(&sidecar, error.line, error.message)),
            };
            discovery.fixtures.push(Fixture {
                tool: tool.to_owned(),
                class,
                case,
                // A folder, FIFO or device here fails its own case when it is read.
                raw: raws.remove(0).0,
                sidecar,
                spec,
            });
        }
    }
    discovery
}

/// One class folder's files, grouped by case name.
fn discover_class(
    root: &RepoRoot,
    class_dir: &Path,
    group: &mut BTreeMap<String, CaseFiles>,
    problems: &mut Vec<StructureProblem>,
) {
    let files = match root.list(class_dir) {
        Ok(files) => files,
        Err(message) => {
            problems.push(StructureProblem::at(root, class_dir, message));
            return;
        }
    };
    for file in files {
        if file.name.starts_with('.') {
            continue;
        }
        match file.kind {
            Err(message) => problems.push(StructureProblem::at(root, &file.path, message)),
            Ok(_) if !file.name_is_utf8 => problems.push(StructureProblem {
                path: file.path,
                message:
                    "a file name that is not UTF-8; name fixtures with letters, digits, `_` and `-`"
                        .to_owned(),
            }),
            Ok(EntryKind::File) if file.name.ends_with(SIDECAR_SUFFIX) => {
                let case = &file.name[..file.name.len() - SIDECAR_SUFFIX.len()];
                group.entry(case.to_owned()).or_default().1 = Some(file.path);
            }
            Ok(kind) => {
                // A folder, FIFO or device is grouped like a raw file: beside a sidecar it fails
                // its own case when read, never hangs; alone it is a structure problem.
                let name = file.name.as_str();
                let case = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
                group
                    .entry(case.to_owned())
                    .or_default()
                    .0
                    .push((file.path, kind == EntryKind::Dir));
            }
        }
    }
}

/// The longest case name: it names a test, a snapshot file and two fixture files.
pub const MAX_CASE_NAME: usize = 100;

/// Whether `name` may name a case: letters, digits, `_` and `-`, a letter or digit first, at most
/// [`MAX_CASE_NAME`] characters. It names a test (`tool::class::case`) and files, so nothing in it
/// may be read as a path, an extension or a filter.
pub fn is_case_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_CASE_NAME
        && chars
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
