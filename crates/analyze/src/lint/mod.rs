//! `toolgate lint`: what a contract version admits and promises, read from its schemas
//! (normalized by `model::schema`, so `$ref`, `allOf`, `oneOf`/`anyOf` and
//! `unevaluatedProperties` are understood) rather than from its fixtures.
//!
//! Each rule names a way a contract is looser than a gate should be: an object that admits
//! members nobody declared, a string or array with no bound, an identifier number with no range,
//! a timestamp without a format, an unbounded request id, a promised field that is missing from a
//! shape or that can carry a whole open object to the agent. A finding names the file, the JSON
//! pointer in it, the rule and the fix; `contracts/<tool>/lint.yaml` accepts one with a reason.
mod accepted;
mod report;
mod rules;
mod walk;

pub use accepted::{
    AcceptedFinding, JudgedFinding, SCHEMA as LINT_ACCEPTANCES_SCHEMA, accepted, judge,
};
pub use report::{LintConfig, SCHEMA as LINT_REPORT_SCHEMA, fix_words, run};
pub use rules::{LintFinding, Rule};
pub use walk::lint;

use toolgate_repo::{Acceptances, FileError, Repository};

/// One tool's lint: each version's findings (or why it cannot be read), and its accepted
/// findings (or why `lint.yaml` cannot be read).
pub struct ToolLint {
    /// The tool.
    pub tool: String,
    /// Per version, in version order.
    pub versions: Vec<(String, Result<Vec<LintFinding>, String>)>,
    /// `contracts/<tool>/lint.yaml`.
    pub accepted: Result<Acceptances<AcceptedFinding>, FileError>,
}

/// Lints every version of `tool`.
pub fn lint_tool(repository: &Repository, tool: &str) -> ToolLint {
    let versions = match repository.versions(tool) {
        Ok(versions) => versions
            .iter()
            .map(|dir| {
                let findings = toolgate_model::load(repository, tool, dir)
                    .map(|version| lint(tool, &version))
                    .map_err(|error| error.to_string());
                (dir.name(), findings)
            })
            .collect(),
        Err(error) => vec![("(all)".to_owned(), Err(error.to_string()))],
    };
    ToolLint {
        tool: tool.to_owned(),
        versions,
        accepted: accepted(repository.root(), tool),
    }
}

impl ToolLint {
    /// Every finding of every version that could be read.
    pub fn findings(&self) -> Vec<LintFinding> {
        self.versions
            .iter()
            .filter_map(|(_, findings)| findings.as_ref().ok())
            .flatten()
            .cloned()
            .collect()
    }

    /// The versions that could be read.
    pub fn read_versions(&self) -> Vec<String> {
        self.versions
            .iter()
            .filter(|(_, findings)| findings.is_ok())
            .map(|(version, _)| version.clone())
            .collect()
    }

    /// Why a version or `lint.yaml` cannot be read, one line each.
    pub fn errors(&self) -> Vec<String> {
        let mut errors: Vec<String> = self
            .versions
            .iter()
            .filter_map(|(version, findings)| {
                findings
                    .as_ref()
                    .err()
                    .map(|error| format!("{} {version}: {error}", self.tool))
            })
            .collect();
        if let Err(error) = &self.accepted {
            errors.push(format!(
                "{error}; no finding is accepted until the file loads"
            ));
        }
        errors
    }
}
