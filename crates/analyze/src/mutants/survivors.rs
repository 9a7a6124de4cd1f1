//! `fixtures/<tool>/survivors.yaml`: mutants a tool's contract admits on purpose, each with the
//! reason. An accepted survivor that the contract now rejects fails the run, so the list follows
//! the contract.
//!
//! ```yaml
//! - mutation: canary_string
//!   pointer: /reason
//!   versions: [v1]          # optional: every version when absent
//!   reason: the reason is free text shown to a person; it is never executed
//! - pointer: /head/**       # a subtree: every survivor below /head the agent cannot see
//!   reason: the agent is never shown head; GitHub may change it as it likes
//! - mutation: canary_string
//!   pointer: /accounts/*/nickname   # `*`: every item of the list
//!   reason: nicknames are the account holder's free text
//! ```

use std::path::{Path, PathBuf};
use toolgate_repo::{FileError, load_acceptances};

use serde::Deserialize;

use super::Family;
use toolgate_repo::RepoRoot;
use toolgate_repo::{Acceptances, Checked, EntryFile, check_pointer};
use toolgate_repo::{FIXTURES_DIR, SURVIVORS_FILE};

/// A list member's place, whichever item: what a `*` entry names.
pub use toolgate_repo::text::every_item;

/// The file's JSON Schema, published by `toolgate schema survivors`; tests hold it to [`load`].
pub const SCHEMA: &str = include_str!("../../schemas/survivors.schema.json");

/// One accepted survivor: a mutation at a place in the response, in any fixture; or every
/// survivor the agent cannot see in a subtree (`/head/**`), upstream drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedSurvivor {
    /// The mutation family; `None`: every family (subtrees only).
    pub family: Option<Family>,
    /// The JSON pointer in the raw response that the mutation changes, or a subtree
    /// (`/head/**`, `/**` for the whole response).
    pub pointer: String,
}

impl AcceptedSurvivor {
    /// The subtree's root (`""` for the whole response), when the entry names a subtree.
    pub fn subtree(&self) -> Option<&str> {
        self.pointer.strip_suffix("/**")
    }

    /// Whether it accepts a survivor of `family` at `pointer`; a subtree accepts only what the
    /// agent cannot see (`projected` false).
    pub fn accepts(&self, family: Family, pointer: &str, projected: bool) -> bool {
        self.family.is_none_or(|accepted| accepted == family) && self.reaches(pointer, projected)
    }

    /// Whether `pointer` is its place (or, for a subtree, within it and unprojected). A `*`
    /// token stands for any index of a list (`/accounts/*/balance`), so one entry covers every
    /// item, however long a fixture's list.
    pub fn reaches(&self, pointer: &str, projected: bool) -> bool {
        match self.subtree() {
            Some(root) => !projected && place_prefix(root, pointer),
            None => {
                place_prefix(&self.pointer, pointer)
                    && pointer.split('/').count() == self.pointer.split('/').count()
            }
        }
    }
}

/// Whether `pattern`'s tokens begin `pointer`'s, where a `*` token matches any array index.
fn place_prefix(pattern: &str, pointer: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    let mut tokens = pointer.split('/');
    pattern.split('/').all(|wanted| {
        tokens.next().is_some_and(|token| {
            token == wanted
                || (wanted == "*" && !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SurvivorEntry {
    #[serde(default)]
    mutation: Option<String>,
    pointer: String,
    #[serde(default)]
    versions: Option<Vec<String>>,
    reason: String,
}

impl EntryFile for SurvivorEntry {
    type What = AcceptedSurvivor;

    fn split(self) -> Result<Checked<AcceptedSurvivor>, String> {
        let family = match &self.mutation {
            Some(name) => Some(Family::from_name(name).ok_or_else(|| {
                let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
                format!(
                    "mutation: {name:?} is not a mutation family ({})",
                    known.join(", ")
                )
            })?),
            None => None,
        };
        match self.pointer.strip_suffix("/**") {
            Some("") => {}
            Some(root) => check_pointer(root, "the whole response")?,
            None if family.is_none() => {
                return Err(format!(
                    "mutation: missing; an entry for one place names its mutation (only a subtree, `{}/**`, accepts every mutation the agent cannot see)",
                    self.pointer
                ));
            }
            None => check_pointer(&self.pointer, "the whole response")?,
        }
        Ok(Checked {
            what: AcceptedSurvivor {
                family,
                pointer: self.pointer,
            },
            versions: self.versions,
            reason: self.reason,
        })
    }
}

/// The file for `tool`, relative to the root.
pub fn path(tool: &str) -> PathBuf {
    Path::new(FIXTURES_DIR).join(tool).join(SURVIVORS_FILE)
}

/// The accepted survivors of `tool` (none when it has no file).
pub fn load(root: &RepoRoot, tool: &str) -> Result<Acceptances<AcceptedSurvivor>, FileError> {
    load_acceptances::<SurvivorEntry>(root, &path(tool))
}
