//! The contract lock: each published version's digest, so a locked version can never change
//! silently. A breaking (or any) change to a published contract is a new version folder.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use toolgate_gate::Sha256Digest;

use crate::repo::{CONTRACTS_DIR, VersionDir};
use crate::verdict::{Problem, ProblemKind};

/// The lock file, under `contracts/`.
pub const LOCK_FILE: &str = "contracts.lock";

const HEADER: &str = "# toolgate contract lock: the digest of every published contract version.\n# A locked version never changes; publish the change as a new version folder instead.\n# New versions are added by `toolgate test --accept`.\n";

/// The digest of a version folder: every regular file directly in it, by name and content.
pub fn digest(folder: &Path) -> std::io::Result<Sha256Digest> {
    let mut entries: Vec<PathBuf> = fs::read_dir(folder)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file())
        .collect();
    entries.sort();
    let mut material = Vec::new();
    for path in entries {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let content = fs::read(&path)?;
        material.extend_from_slice(name.as_bytes());
        material.push(0);
        material.extend_from_slice(&(content.len() as u64).to_le_bytes());
        material.extend_from_slice(&content);
    }
    Ok(Sha256Digest::of(&material))
}

/// Checks every version folder against the lock; with `record_new`, adds unlocked versions (a
/// locked entry is never rewritten).
pub fn check(root: &Path, versions: &[(String, VersionDir)], record_new: bool) -> Vec<Problem> {
    let lock_path = root.join(CONTRACTS_DIR).join(LOCK_FILE);
    let shown = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
    let mut problems = Vec::new();
    let mut locked: BTreeMap<(String, String), String> = BTreeMap::new();
    if let Ok(text) = fs::read_to_string(&lock_path) {
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
        let folder = Path::new(CONTRACTS_DIR).join(tool).join(version.name());
        let actual = match digest(&version.path) {
            Ok(digest) => digest.to_hex(),
            Err(error) => {
                problems.push(Problem::new(
                    ProblemKind::Lock,
                    format!("{}: cannot read: {error}", folder.display()),
                ));
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
            None => problems.push(Problem::new(
                ProblemKind::Lock,
                format!("{} is not in {} yet: run `toolgate test --accept` to lock it, and commit the lock", folder.display(), shown.display()),
            )),
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
        let mut text = fs::read_to_string(&lock_path).unwrap_or_else(|_| HEADER.to_owned());
        for line in added {
            text.push_str(&line);
            text.push('\n');
        }
        if let Err(error) = fs::write(&lock_path, text) {
            problems.push(Problem::new(
                ProblemKind::Lock,
                format!("{}: cannot write: {error}", shown.display()),
            ));
        }
    }
    problems
}
