//! Rolling a contract out on every production front, read one way for the proxy, `serve` and
//! the Python binding, so a rollout behaves the same whichever front runs it.
//!
//! `--shadow`: which version each tool enforces and which it decides beside it, never enforced.
//! A value is `vN` (every tool that has that version) or `TOOL=vN` (that tool's). A tool given a
//! shadow enforces its newest version *other than* the shadow: a repository that already holds
//! the bump runs it in shadow, and dropping `--shadow` enforces it. Every value must be used:
//! a `TOOL=vN` whose tool or version does not exist, or a `vN` no tool has, is a configuration
//! error, not a rollout that silently compares nothing.

use std::collections::BTreeMap;

use toolgate_repo::{Repository, UsageError, VersionDir, running_in_ci};

/// What one tool does under `--shadow`: the version it enforces and the candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowPair {
    /// Enforced: the tool's newest version other than the candidate.
    pub enforced: VersionDir,
    /// Decided beside it on every call, never enforced.
    pub candidate: VersionDir,
}

/// `--shadow`'s values resolved against a repository, by tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShadowPlan {
    pairs: BTreeMap<String, ShadowPair>,
}

impl ShadowPlan {
    /// Resolves `specs` against `repository`; a value that names nothing is an error.
    pub fn resolve(repository: &Repository, specs: &[String]) -> Result<ShadowPlan, UsageError> {
        let mut plan = ShadowPlan::default();
        if specs.is_empty() {
            return Ok(plan);
        }
        let parsed: Vec<(Option<&str>, &str)> = specs
            .iter()
            .map(|spec| match spec.split_once('=') {
                Some((tool, version)) => (Some(tool.trim()), version.trim()),
                None => (None, spec.trim()),
            })
            .collect();
        for ((_, version), spec) in parsed.iter().zip(specs) {
            if toolgate_repo::parse_version(version).is_none() {
                return Err(UsageError::new(format!(
                    "--shadow {spec}: {version:?} is not a version; write vN or TOOL=vN (e.g. v2, job_status=v2)"
                )));
            }
        }
        let tools = repository.tools()?;
        let mut used = vec![false; specs.len()];
        for tool in &tools {
            let versions = repository.versions(tool)?;
            // The first value naming a version this tool has.
            let Some((index, candidate)) =
                parsed
                    .iter()
                    .enumerate()
                    .find_map(|(index, (only, version))| {
                        if only.is_some_and(|only| only != tool) {
                            return None;
                        }
                        let candidate = versions.iter().find(|dir| dir.name() == *version)?;
                        Some((index, candidate.clone()))
                    })
            else {
                continue;
            };
            let Some(enforced) = versions
                .iter()
                .rev()
                .find(|dir| dir.number != candidate.number)
            else {
                return Err(UsageError::new(format!(
                    "--shadow {}: {tool} has no other version to enforce beside {}",
                    specs[index],
                    candidate.name()
                )));
            };
            used[index] = true;
            plan.pairs.insert(
                tool.clone(),
                ShadowPair {
                    enforced: enforced.clone(),
                    candidate,
                },
            );
        }
        for (index, (only, version)) in parsed.iter().enumerate() {
            if used[index] {
                continue;
            }
            let spec = &specs[index];
            return Err(UsageError::new(match only {
                Some(only) if !tools.iter().any(|tool| tool == only) => {
                    format!("--shadow {spec}: no tool {only} has a contract here")
                }
                Some(only) if plan.pairs.contains_key(*only) => format!(
                    "--shadow {spec}: {only} is given another shadow already; a tool has one"
                ),
                Some(only) => format!("--shadow {spec}: the tool {only} has no version {version}"),
                None => format!("--shadow {spec}: no tool has a version {version}"),
            }));
        }
        Ok(plan)
    }

    /// What `tool` does under the plan; `None` when it is given no shadow.
    pub fn of(&self, tool: &str) -> Option<&ShadowPair> {
        self.pairs.get(tool)
    }

    /// Each pair as `TOOL vN (enforcing vM)`, comma-separated.
    pub fn describe(&self) -> String {
        self.pairs
            .iter()
            .map(|(tool, pair)| {
                format!(
                    "{tool} {} (enforcing {})",
                    pair.candidate.name(),
                    pair.enforced.name()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether no tool is given a shadow.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Refuses report-only mode (`--mode observe`) in CI: a pipeline that observes passes responses
/// the contracts refuse, and nobody is watching it. `front` names the command in the error.
pub fn refuse_observe_in_ci(front: &str) -> Result<(), UsageError> {
    if running_in_ci() {
        return Err(UsageError::new(format!(
            "{front} --mode observe passes on results the contracts would refuse; it is refused in CI (CI is set): enforce in CI, and observe only in a deployment you watch"
        )));
    }
    Ok(())
}
