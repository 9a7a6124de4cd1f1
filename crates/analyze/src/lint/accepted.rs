//! `contracts/<tool>/lint.yaml`: findings accepted with a reason, read strictly; each finding
//! judged against them, and each acceptance that matches nothing reported stale.

use serde::Deserialize;
use toolgate_repo::{
    Acceptances, CONTRACTS_DIR, Checked, EntryFile, FileError, LINT_FILE, RepoRoot, check_pointer,
    load_acceptances,
};

use super::rules::{LintFinding, Rule};

/// One accepted finding: a rule at a place in a version folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedFinding {
    /// The rule.
    pub rule: Rule,
    /// The file in the version folder.
    pub file: String,
    /// The JSON pointer in it.
    pub pointer: String,
    /// The promised field, for `field_missing` (one acceptance per field).
    pub field: Option<String>,
}

/// `lint.yaml`'s JSON Schema, published by `toolgate schema lint-acceptances`; tests hold it to
/// [`accepted`].
pub const SCHEMA: &str = include_str!("../../schemas/lint-acceptances.schema.json");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LintEntry {
    rule: String,
    file: String,
    pointer: String,
    #[serde(default)]
    field: Option<String>,
    #[serde(default)]
    versions: Option<Vec<String>>,
    reason: String,
}

impl EntryFile for LintEntry {
    type What = AcceptedFinding;

    fn split(self) -> Result<Checked<AcceptedFinding>, String> {
        let rule = Rule::from_name(&self.rule).ok_or_else(|| {
            let known: Vec<&str> = Rule::ALL.iter().map(|rule| rule.name()).collect();
            format!(
                "rule: {:?} is not a lint rule ({})",
                self.rule,
                known.join(", ")
            )
        })?;
        check_pointer(&self.pointer, "the whole file")?;
        if rule == Rule::ObjectOpen {
            // lint, mutate and test must agree about an open object, so it is declared once,
            // where all three read it.
            return Err("rule: an open object is not accepted here: declare it in the contract version's contract.yaml, under the shape's `tolerate:` (`- at: <the object's pointer in the response>` with a `reason:`), where lint, mutate and test all read it".to_owned());
        }
        match (rule, &self.field) {
            (Rule::FieldMissing, None) => {
                return Err("field: a field_missing acceptance names the promised field it accepts (`field: <name>`), so that accepting one missing field never silences another".to_owned());
            }
            (Rule::FieldMissing, Some(field)) if field.trim().is_empty() => {
                return Err("field: is empty; name the promised field".to_owned());
            }
            (Rule::FieldMissing, Some(_)) | (_, None) => {}
            (_, Some(_)) => {
                return Err(format!(
                    "field: only a field_missing acceptance names a field; remove it from this {rule} entry"
                ));
            }
        }
        Ok(Checked {
            what: AcceptedFinding {
                rule,
                file: self.file,
                pointer: self.pointer,
                field: self.field,
            },
            versions: self.versions,
            reason: self.reason,
        })
    }
}

/// The accepted findings of `tool` (none when it has no `lint.yaml`).
pub fn accepted(root: &RepoRoot, tool: &str) -> Result<Acceptances<AcceptedFinding>, FileError> {
    let path = std::path::Path::new(CONTRACTS_DIR)
        .join(tool)
        .join(LINT_FILE);
    load_acceptances::<LintEntry>(root, &path)
}

/// A finding and the entry accepting it, if any.
pub struct JudgedFinding<'f> {
    /// The finding.
    pub finding: &'f LintFinding,
    /// Why it is accepted, when it is.
    pub accepted: Option<String>,
}

/// Every finding with its acceptance, and the entries (by line) that accept nothing in
/// `versions`: stale.
pub fn judge<'f>(
    findings: &'f [LintFinding],
    accepted: &Acceptances<AcceptedFinding>,
    versions: &[String],
) -> (Vec<JudgedFinding<'f>>, Vec<u64>) {
    let mut used = vec![false; accepted.entries.len()];
    let judged = findings
        .iter()
        .map(|finding| {
            let entry = accepted.find(&finding.version, |what| {
                what.rule == finding.rule
                    && what.file == finding.file
                    && what.pointer == finding.pointer
                    && what.field == finding.field
            });
            if let Some((index, _)) = entry {
                used[index] = true;
            }
            JudgedFinding {
                finding,
                accepted: entry.map(|(_, entry)| entry.reason.clone()),
            }
        })
        .collect();
    let stale = accepted
        .entries
        .iter()
        .zip(used)
        .filter(|(entry, used)| !used && versions.iter().any(|version| entry.applies_to(version)))
        .map(|(entry, _)| entry.line)
        .collect();
    (judged, stale)
}
