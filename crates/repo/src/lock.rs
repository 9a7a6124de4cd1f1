//! The contract lock: each published version's digest, so a locked version can never change
//! silently. A breaking (or any) change to a published contract is a new version folder.

use std::collections::BTreeMap;
use std::path::Path;

use toolgate_gate::Sha256Digest;

use crate::case_result::{Problem, ProblemKind};
use crate::confine::{EntryKind, MAX_FILE_BYTES, RepoRoot};
use crate::repository::{CONTRACTS_DIR, VersionDir};

/// The lock file, under `contracts/`.
pub const LOCK_FILE: &str = "contracts.lock";

const HEADER: &str = "# toolgate contract lock: the digest of every published contract version.\n# A locked version never changes; publish the change as a new version folder instead.\n# New versions are added by `toolgate test --accept`.\n";

/// The digest of a version folder: every regular file directly in it, by name and content.
/// Anything that is not a regular file inside the repository is an error, never followed.
pub fn digest(root: &RepoRoot, folder: &Path) -> Result<Sha256Digest, String> {
    let mut material = Vec::new();
    for entry in root.list(folder)? {
        match entry.kind? {
            EntryKind::File => {}
            EntryKind::Dir | EntryKind::Missing => continue,
            EntryKind::Other => {
                return Err(format!(
                    "{}: not a regular file (a FIFO, socket or device); a contract folder holds files only",
                    root.shown(&entry.path).display()
                ));
            }
        }
        let content = root.read_capped(&entry.path, MAX_FILE_BYTES)?;
        if content.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "{}: larger than {MAX_FILE_BYTES} bytes; no contract file is this large",
                root.shown(&entry.path).display()
            ));
        }
        material.extend_from_slice(entry.name.as_bytes());
        material.push(0);
        material.extend_from_slice(&(content.len() as u64).to_le_bytes());
        material.extend_from_slice(&content);
    }
    Ok(Sha256Digest::of(&material))
}

/// The attributes file beside the lock: git merges two branches' additions to the lock by
/// keeping both sides' lines (`merge=union`), so two bump pull requests never conflict in it.
const ATTRIBUTES_FILE: &str = ".gitattributes";
const ATTRIBUTES_LINE: &str = "contracts.lock merge=union";
const ATTRIBUTES: &str = "# The contract lock is a set of independent lines (kept sorted by `toolgate test --accept`):\n# merging two branches keeps both sides' entries; `toolgate test` refuses one version locked twice.\ncontracts.lock merge=union\n";

/// One `<tool> v<N> sha256:<hex>` entry and the line it was read from.
struct Entry {
    digest: String,
    line: usize,
    /// The comment lines written just above it, which stay above it when the lock is sorted.
    comments: String,
}

/// The lock file as read: the comment lines that head it and its entries,
/// `(tool, version) -> digest`.
struct Lock {
    header: String,
    /// Comment lines after the last entry.
    trailer: String,
    entries: BTreeMap<(String, String), Entry>,
}

impl Lock {
    fn path() -> std::path::PathBuf {
        Path::new(CONTRACTS_DIR).join(LOCK_FILE)
    }

    /// Reads `contracts/contracts.lock` (absent: no entries); a line that is not an entry, or a
    /// second entry for a version with another digest (what a union merge of two branches that
    /// both published it leaves), is a problem at its line; the rest still count.
    fn read(root: &RepoRoot, problems: &mut Vec<Problem>) -> Option<Lock> {
        let lock_path = Self::path();
        let shown = root.shown(&lock_path);
        let text = match root.kind(&lock_path) {
            Ok(EntryKind::Missing) => None,
            _ => match root.read_text(&lock_path) {
                Ok(text) => Some(text),
                Err(error) => {
                    problems.push(Problem::new(ProblemKind::Lock, error));
                    return None;
                }
            },
        };
        let mut header = String::new();
        let mut comments = String::new();
        let mut entries: BTreeMap<(String, String), Entry> = BTreeMap::new();
        for (index, line) in text.iter().flat_map(|text| text.lines()).enumerate() {
            let number = index + 1;
            let line = line.trim();
            if line.starts_with('#') {
                let into = if entries.is_empty() {
                    &mut header
                } else {
                    &mut comments
                };
                into.push_str(line);
                into.push('\n');
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parts: Vec<&str> = line.split_whitespace().collect();
            let [tool, version, digest] = parts.as_slice() else {
                problems.push(not_an_entry(&shown, number));
                continue;
            };
            let Some(digest) = digest.strip_prefix("sha256:") else {
                problems.push(not_an_entry(&shown, number));
                continue;
            };
            let key = (tool.to_string(), version.to_string());
            match entries.get(&key) {
                Some(first) if first.digest != digest => problems.push(Problem::new(
                    ProblemKind::Lock,
                    format!(
                        "{}:{number}: {tool} {version} is locked twice, with another digest than at line {} (two branches each published {version}): keep the line whose digest `toolgate test` does not report, delete the other, and publish the other branch's change as a new version",
                        shown.display(),
                        first.line
                    ),
                )
                .at(&lock_path, Some(number as u64))),
                Some(_) => {}
                None => {
                    entries.insert(
                        key,
                        Entry {
                            digest: digest.to_owned(),
                            line: number,
                            comments: std::mem::take(&mut comments),
                        },
                    );
                }
            }
        }
        if header.is_empty() {
            header = HEADER.to_owned();
        }
        Some(Lock {
            header,
            trailer: comments,
            entries,
        })
    }

    /// Adds `added` (`(tool, version) -> digest`) and writes the lock back with every entry
    /// sorted by tool and version number, so two branches' additions land in different places;
    /// writes `contracts/.gitattributes` (a union merge for the lock) if it is missing.
    fn add(
        mut self,
        root: &RepoRoot,
        added: Vec<((String, String), String)>,
        problems: &mut Vec<Problem>,
    ) -> bool {
        if added.is_empty() {
            return true;
        }
        for (key, digest) in added {
            self.entries.insert(
                key,
                Entry {
                    digest,
                    line: 0,
                    comments: String::new(),
                },
            );
        }
        let mut keys: Vec<&(String, String)> = self.entries.keys().collect();
        keys.sort_by_key(|(tool, version)| {
            let number = version
                .strip_prefix('v')
                .and_then(|n| n.parse::<u32>().ok());
            (tool.clone(), number.unwrap_or(u32::MAX), version.clone())
        });
        let mut text = self.header.clone();
        for key in keys {
            let entry = &self.entries[key];
            text.push_str(&entry.comments);
            text.push_str(&format!("{} {} sha256:{}\n", key.0, key.1, entry.digest));
        }
        text.push_str(&self.trailer);
        if let Err(error) = root.write(&Self::path(), text.as_bytes()) {
            problems.push(Problem::new(ProblemKind::Lock, error));
            return false;
        }
        let attributes = Path::new(CONTRACTS_DIR).join(ATTRIBUTES_FILE);
        let existing = match root.kind(&attributes) {
            Ok(EntryKind::Missing) => Some(String::new()),
            Ok(EntryKind::File) => root.read_text(&attributes).ok(),
            _ => None,
        };
        if let Some(existing) = existing
            && !existing.lines().any(|line| line.trim() == ATTRIBUTES_LINE)
        {
            let mut text = existing;
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(ATTRIBUTES);
            if let Err(error) = root.write(&attributes, text.as_bytes()) {
                problems.push(Problem::new(ProblemKind::Lock, error));
            }
        }
        true
    }
}

fn not_an_entry(shown: &Path, number: usize) -> Problem {
    Problem::new(
        ProblemKind::Lock,
        format!(
            "{}:{number}: not a lock line; expected `<tool> v<N> sha256:<hex>`",
            shown.display()
        ),
    )
}

/// Checks every version folder against the lock; with `record_new`, adds unlocked versions (a
/// locked entry is never rewritten).
/// With `record_new` (`--accept`), new versions are locked, but never one of a tool `withheld`
/// names (its suite failed in the run, or rests only on responses built from the schema): that
/// one stays unlocked, a problem with the reason.
/// With `whole`, `versions` are every tool's and an entry whose folder is gone is a problem;
/// without, only the entries of the tools `versions` names are looked at (a filtered run).
/// Returns `<tool> v<N>` of each version locked, and the problems.
pub fn check(
    root: &RepoRoot,
    versions: &[(String, VersionDir)],
    record_new: bool,
    withheld: &BTreeMap<String, String>,
    whole: bool,
) -> (Vec<String>, Vec<Problem>) {
    let shown = root.shown(&Lock::path());
    let mut problems = Vec::new();
    let Some(lock) = Lock::read(root, &mut problems) else {
        return (Vec::new(), problems);
    };
    let mut added = Vec::new();
    let mut present = Vec::new();
    for (tool, version) in versions {
        let key = (tool.clone(), version.name());
        present.push(key.clone());
        let folder = root.shown(&version.path);
        let actual = match digest(root, &version.path) {
            Ok(digest) => digest.to_hex(),
            Err(message) => {
                problems.push(Problem::new(ProblemKind::Lock, message));
                continue;
            }
        };
        match lock.entries.get(&key) {
            Some(entry) if entry.digest == actual => {}
            Some(entry) => problems.push(
                Problem::new(
                    ProblemKind::Lock,
                    format!(
                        "{} changed after it was published (its digest differs from {}): published versions are immutable; revert the change, or publish it as a new version folder",
                        folder.display(),
                        shown.display()
                    ),
                )
                .at(&Lock::path(), Some(entry.line as u64)),
            ),
            None if record_new && !withheld.contains_key(tool) => added.push((key, actual)),
            None if record_new => problems.push(Problem::new(
                ProblemKind::Lock,
                format!(
                    "{tool} {} is not locked: {}; `--accept` locks only a version whose suite passes on a real response",
                    version.name(),
                    withheld[tool]
                ),
            )),
            None => {
                let previous = versions
                    .iter()
                    .filter(|(other, older)| other == tool && older.number < version.number)
                    .map(|(_, older)| older.name())
                    .next_back();
                let review = match previous {
                    Some(previous) => format!(
                        "review `toolgate diff {tool} {previous} {}`, then lock it with `toolgate test --accept`",
                        version.name()
                    ),
                    None => "lock it with `toolgate test --accept`".to_owned(),
                };
                problems.push(
                    Problem::new(
                        ProblemKind::Lock,
                        format!(
                            "{tool} {} is not locked ({} has no entry for it): {review}, and commit {}",
                            version.name(),
                            shown.display(),
                            shown.display()
                        ),
                    )
                    .at(&version.path.join(toolgate_gate::CONTRACT_FILE), None),
                );
            }
        }
    }
    for ((tool, version), entry) in &lock.entries {
        let looked_at = whole || versions.iter().any(|(named, _)| named == tool);
        if looked_at && !present.contains(&(tool.clone(), version.clone())) {
            problems.push(
                Problem::new(
                    ProblemKind::Lock,
                    format!("{} locks {tool} {version}, whose folder is gone: a published version is never deleted", shown.display()),
                )
                .at(&Lock::path(), Some(entry.line as u64)),
            );
        }
    }
    let locked = locked_names(&added);
    if lock.add(root, added, &mut problems) {
        (locked, problems)
    } else {
        (Vec::new(), problems)
    }
}

fn locked_names(added: &[((String, String), String)]) -> Vec<String> {
    added
        .iter()
        .map(|((tool, version), _)| format!("{tool} {version}"))
        .collect()
}

/// Locks the versions of `versions` that the lock has no entry for, and nothing else: what
/// `toolgate test --accept <filter>` does for the tools it accepted, when the repository-wide
/// lock check is not among the selected checks. Returns `<tool> v<N>` of each version locked,
/// and the problems met (a locked version that changed is left to the lock check to report).
pub fn lock_new(root: &RepoRoot, versions: &[(String, VersionDir)]) -> (Vec<String>, Vec<Problem>) {
    let mut problems = Vec::new();
    let Some(lock) = Lock::read(root, &mut problems) else {
        return (Vec::new(), problems);
    };
    let mut added = Vec::new();
    for (tool, version) in versions {
        let key = (tool.clone(), version.name());
        if lock.entries.contains_key(&key) {
            continue;
        }
        match digest(root, &version.path) {
            Ok(digest) => added.push((key, digest.to_hex())),
            Err(message) => problems.push(Problem::new(ProblemKind::Lock, message)),
        }
    }
    let locked = locked_names(&added);
    if lock.add(root, added, &mut problems) {
        (locked, problems)
    } else {
        // The lock could not be written: nothing was locked.
        (Vec::new(), problems)
    }
}
