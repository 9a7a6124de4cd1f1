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

/// Checks every version folder against the lock; with `record_new`, adds unlocked versions (a
/// locked entry is never rewritten).
pub fn check(root: &RepoRoot, versions: &[(String, VersionDir)], record_new: bool) -> Vec<Problem> {
    let lock_path = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
    let shown = root.shown(&lock_path);
    let mut problems = Vec::new();
    let mut locked: BTreeMap<(String, String), String> = BTreeMap::new();
    let existing = match root.kind(&lock_path) {
        Ok(EntryKind::Missing) => None,
        _ => match root.read_text(&lock_path) {
            Ok(text) => Some(text),
            Err(message) => {
                problems.push(Problem::new(ProblemKind::Lock, message));
                return problems;
            }
        },
    };
    if let Some(text) = &existing {
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parts: Vec<&str> = line.split_whitespace().collect();
            match parts.as_slice() {
                [tool, version, digest] if digest.starts_with("sha256:") => {
                    locked.insert(
                        (tool.to_string(), version.to_string()),
                        digest["sha256:".len()..].to_owned(),
                    );
                }
                _ => problems.push(Problem::new(
                    ProblemKind::Lock,
                    format!(
                        "{}:{}: not a lock line; expected `<tool> v<N> sha256:<hex>`",
                        shown.display(),
                        number + 1
                    ),
                )),
            }
        }
    }
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
        match locked.get(&key) {
            Some(expected) if *expected == actual => {}
            Some(_) => problems.push(Problem::new(
                ProblemKind::Lock,
                format!(
                    "{} changed after it was published (its digest differs from {}): published versions are immutable; revert the change, or publish it as a new version folder",
                    folder.display(),
                    shown.display()
                ),
            )),
            None if record_new => added.push(format!("{} {} sha256:{actual}", key.0, key.1)),
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
    for (tool, version) in locked.keys() {
        if !present.contains(&(tool.clone(), version.clone())) {
            problems.push(Problem::new(
                ProblemKind::Lock,
                format!("{} locks {tool} {version}, whose folder is gone: a published version is never deleted", shown.display()),
            ));
        }
    }
    if !added.is_empty() {
        let mut text = existing.unwrap_or_else(|| HEADER.to_owned());
        for line in added {
            text.push_str(&line);
            text.push('\n');
        }
        if let Err(message) = root.write(&lock_path, text.as_bytes()) {
            problems.push(Problem::new(ProblemKind::Lock, message));
        }
    }
    problems
}
