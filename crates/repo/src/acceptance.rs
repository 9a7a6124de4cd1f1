//! Lists of findings a team has accepted on purpose, each with its reason:
//! `fixtures/<tool>/survivors.yaml` (mutants a contract admits by design) and
//! `contracts/<tool>/lint.yaml` (lint findings). Like an xfail list, an entry that no longer
//! matches anything is itself a failure, so the list cannot go stale.
//!
//! Both are read as strictly as sidecars (unknown keys, duplicate keys and `yes`/`no` are errors)
//! and every entry remembers the line it was written on, so a stale or broken one is reported
//! where it is.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_saphyr::Spanned;
use toolgate_gate::internals::read_strict_yaml;

use crate::confine::{EntryKind, RepoRoot};
use crate::error::FileError;
use crate::sidecar::check_versions;

/// One accepted finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acceptance<T> {
    /// The line the entry starts on.
    pub line: u64,
    /// The contract versions it applies to; every version when `None`.
    pub versions: Option<Vec<String>>,
    /// Why the finding is accepted.
    pub reason: String,
    /// What is accepted.
    pub what: T,
}

impl<T> Acceptance<T> {
    /// Whether the entry applies to contract version `version`.
    pub fn applies_to(&self, version: &str) -> bool {
        self.versions
            .as_ref()
            .is_none_or(|versions| versions.iter().any(|listed| listed == version))
    }
}

/// A file of accepted findings (empty when the file does not exist).
#[derive(Debug, Clone)]
pub struct Acceptances<T> {
    /// The file, as the user knows it.
    pub file: PathBuf,
    /// Its entries, in file order.
    pub entries: Vec<Acceptance<T>>,
}

impl<T> Acceptances<T> {
    /// The entry accepting a finding of `version` that `matches` says yes to, with its index.
    pub fn find(
        &self,
        version: &str,
        matches: impl Fn(&T) -> bool,
    ) -> Option<(usize, &Acceptance<T>)> {
        self.entries
            .iter()
            .enumerate()
            .find(|(_, entry)| entry.applies_to(version) && matches(&entry.what))
    }
}

/// One entry as written: what it accepts, and the two keys every entry has.
pub trait EntryFile: DeserializeOwned {
    /// What the entry accepts, checked.
    type What;
    /// Checks the entry.
    fn split(self) -> Result<Checked<Self::What>, String>;
}

/// Checks an entry's `pointer:`: a JSON pointer into `whole` (it starts with `/`, or is empty for
/// all of it). `/` alone is refused: it names a member called "", and it is what a reader copies
/// by mistake for the whole document, which would leave the finding unaccepted and the entry stale.
pub fn check_pointer(pointer: &str, whole: &str) -> Result<(), String> {
    if pointer == "/" {
        Err(format!(
            "pointer: \"/\" names a member called \"\", not {whole}; for {whole} write pointer: \"\""
        ))
    } else if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(format!(
            "pointer: {pointer:?} is not a JSON pointer (it starts with `/`, or is empty for {whole})"
        ))
    }
}

/// An entry, checked: what it accepts, its `versions:` and its `reason:`.
#[derive(Debug)]
pub struct Checked<T> {
    /// What it accepts.
    pub what: T,
    /// The versions it names, if it names any.
    pub versions: Option<Vec<String>>,
    /// Why.
    pub reason: String,
}

/// Reads an acceptance file. A missing file accepts nothing; a broken one is an error naming the
/// file and line, and what to do.
pub fn load<E: EntryFile>(
    root: &RepoRoot,
    relative: &Path,
) -> Result<Acceptances<E::What>, FileError> {
    let file = root.shown(relative);
    let mut accepted = Acceptances {
        file: file.clone(),
        entries: Vec::new(),
    };
    match root.kind(relative)? {
        EntryKind::Missing => return Ok(accepted),
        EntryKind::File => {}
        _ => return Err(FileError::invalid(&file, None, "not a regular file")),
    }
    let text = root.read_text(relative)?;
    if text.trim().is_empty() {
        return Ok(accepted);
    }
    let at = |line: Option<(u64, u64)>, message: &str| FileError::invalid(&file, line, message);
    let entries: Vec<Spanned<E>> = read_strict_yaml(&text).map_err(|error| {
        at(
            error.line,
            &format!(
                "{}; the file is a list of entries, each with a `reason:`",
                error.message
            ),
        )
    })?;
    for entry in entries {
        let location = (entry.referenced.line(), entry.referenced.column());
        let Checked {
            what,
            versions,
            reason,
        } = entry
            .value
            .split()
            .map_err(|message| at(Some(location), &message))?;
        if let Some(versions) = &versions {
            check_versions(versions).map_err(|message| at(Some(location), &message))?;
        }
        if reason.trim().is_empty() {
            return Err(at(
                Some(location),
                "an empty `reason:`: say why this is accepted, for whoever reads the list next",
            ));
        }
        accepted.entries.push(Acceptance {
            line: location.0,
            versions,
            reason: reason.trim().to_owned(),
            what,
        });
    }
    Ok(accepted)
}
