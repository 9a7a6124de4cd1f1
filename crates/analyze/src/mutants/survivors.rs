//! `fixtures/<tool>/survivors.yaml`: mutants a tool's contract admits on purpose, each with the
//! reason. An accepted survivor that the contract now rejects fails the run, so the list follows
//! the contract.
//!
//! ```yaml
//! - mutation: canary_string
//!   pointer: /reason
//!   versions: [v1]          # optional: every version when absent
//!   reason: the reason is free text shown to a person; it is never executed
//! ```

use std::path::{Path, PathBuf};
use toolgate_repo::{FileError, load_acceptances};

use serde::Deserialize;

use super::Family;
use toolgate_repo::RepoRoot;
use toolgate_repo::{Acceptances, Checked, EntryFile, check_pointer};
use toolgate_repo::{FIXTURES_DIR, SURVIVORS_FILE};

/// The file's JSON Schema, published by `toolgate schema survivors`; tests hold it to [`load`].
pub const SCHEMA: &str = include_str!("../../schemas/survivors.schema.json");

/// One accepted survivor: a mutation at a place in the response, in any fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedSurvivor {
    /// The mutation family.
    pub family: Family,
    /// The JSON pointer in the raw response that the mutation changes.
    pub pointer: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SurvivorEntry {
    mutation: String,
    pointer: String,
    #[serde(default)]
    versions: Option<Vec<String>>,
    reason: String,
}

impl EntryFile for SurvivorEntry {
    type What = AcceptedSurvivor;

    fn split(self) -> Result<Checked<AcceptedSurvivor>, String> {
        let family = Family::from_name(&self.mutation).ok_or_else(|| {
            let known: Vec<&str> = Family::ALL.iter().map(|family| family.name()).collect();
            format!(
                "mutation: {:?} is not a mutation family ({})",
                self.mutation,
                known.join(", ")
            )
        })?;
        check_pointer(&self.pointer, "the whole response")?;
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
