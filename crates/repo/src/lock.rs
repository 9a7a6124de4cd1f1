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

/// The lock file as read: its text and its entries, `(tool, version) -> hex digest`.
struct Lock {
    text: Option<String>,
    entries: BTreeMap<(String, String), String>,
}

impl Lock {
    /// Reads `contracts/contracts.lock` (absent: no entries); a line that is not an entry is a
    /// problem at its line, the rest still count.
    fn read(root: &RepoRoot, problems: &mut Vec<Problem>) -> Option<Lock> {
        let lock_path = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
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
        let mut entries = BTreeMap::new();
        for (number, line) in text.iter().flat_map(|text| text.lines()).enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                [tool, version, digest] if digest.starts_with("sha256:") => {
                    entries.insert(
                        (tool.to_string(), version.to_string()),
                        digest["sha256:".len()..].to_owned(),
                    );
                }
                _ => problems.push(Problem::new(
                    ProblemKind::Lock,
                    format!(
                        "{}:{}: not a lock line; expected `<tool> v<N> sha256:<hex>`",
                        root.shown(&lock_path).display(),
                        number + 1
                    ),
                )),
            }
        }
        Some(Lock { text, entries })
    }

    /// Appends `added` lines (`<tool> v<N> sha256:<hex>`), creating the file with its header.
    fn append(self, root: &RepoRoot, added: &[String], problems: &mut Vec<Problem>) {
        if added.is_empty() {
            return;
        }
        let mut text = self.text.unwrap_or_else(|| HEADER.to_owned());
        for line in added {
            text.push_str(line);
            text.push('\n');
        }
        let lock_path = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
        if let Err(error) = root.write(&lock_path, text.as_bytes()) {
            problems.push(Problem::new(ProblemKind::Lock, error));
        }
    }
}

/// Checks every version folder against the lock; with `record_new`, adds unlocked versions (a
/// locked entry is never rewritten).
/// With `record_new` (`--accept`), new versions are locked, but never one of a tool `withheld`
/// names (its suite failed in the run, or rests only on responses built from the schema): that
/// one stays unlocked, a problem with the reason.
pub fn check(
    root: &RepoRoot,
    versions: &[(String, VersionDir)],
    record_new: bool,
    withheld: &BTreeMap<String, String>,
) -> Vec<Problem> {
    let shown = root.shown(&Path::new(CONTRACTS_DIR).join(LOCK_FILE));
    let mut problems = Vec::new();
    let Some(lock) = Lock::read(root, &mut problems) else {
        return problems;
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
            Some(expected) if *expected == actual => {}
            Some(_) => problems.push(Problem::new(
                ProblemKind::Lock,
                format!(
                    "{} changed after it was published (its digest differs from {}): published versions are immutable; revert the change, or publish it as a new version folder",
                    folder.display(),
                    shown.display()
                ),
            )),
            None if record_new && !withheld.contains_key(tool) => {
                added.push(format!("{} {} sha256:{actual}", key.0, key.1));
            }
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
                problems.push(Problem::new(
                    ProblemKind::Lock,
                    format!(
                        "{tool} {} is not locked ({} has no entry for it): {review}, and commit {}",
                        version.name(),
                        shown.display(),
                        shown.display()
                    ),
                ));
            }
        }
    }
    for (tool, version) in lock.entries.keys() {
        if !present.contains(&(tool.clone(), version.clone())) {
            problems.push(Problem::new(
                ProblemKind::Lock,
                format!("{} locks {tool} {version}, whose folder is gone: a published version is never deleted", shown.display()),
            ));
        }
    }
    lock.append(root, &added, &mut problems);
    problems
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
    let mut locked = Vec::new();
    for (tool, version) in versions {
        if lock.entries.contains_key(&(tool.clone(), version.name())) {
            continue;
        }
        match digest(root, &version.path) {
            Ok(digest) => {
                added.push(format!(
                    "{tool} {} sha256:{}",
                    version.name(),
                    digest.to_hex()
                ));
                locked.push(format!("{tool} {}", version.name()));
            }
            Err(message) => problems.push(Problem::new(ProblemKind::Lock, message)),
        }
    }
    let before = problems.len();
    lock.append(root, &added, &mut problems);
    if problems.len() > before {
        // The lock could not be written: nothing was locked.
        locked.clear();
    }
    (locked, problems)
}
