//! Rolling a contract out on every production front, read one way for the proxy, `serve` and
//! the Python binding, so a rollout behaves the same whichever front runs it.
//!
//! `--shadow`: which version each tool enforces and which it decides beside it, never enforced.
//! A value is `vN` (every tool that has that version) or `TOOL=vN` (that tool's). A tool given a
//! shadow enforces its newest version *other than* the shadow: a repository that already holds
//! the bump runs it in shadow, and dropping `--shadow` enforces it. Every value must be used:
//! a `TOOL=vN` whose tool or version does not exist, or a `vN` no tool has, is a configuration
//! error, not a rollout that silently compares nothing.
//!
//! `--enforce TOOL=vN` (or `vN`) pins the version a tool enforces: a rollback to an older one
//! though a newer one is published, beside a shadow or alone. Its values are checked the same way.

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

/// `--shadow`'s and `--enforce`'s values resolved against a repository, by tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShadowPlan {
    pairs: BTreeMap<String, ShadowPair>,
    /// The versions `--enforce` pins, by tool (a rollback: an older version enforced though a
    /// newer one is published).
    pinned: BTreeMap<String, VersionDir>,
}

/// One flag's values, each `vN` (every tool that has it) or `TOOL=vN`, checked to be versions.
fn parsed_specs<'a>(
    flag: &str,
    specs: &'a [String],
) -> Result<Vec<(Option<&'a str>, &'a str)>, UsageError> {
    specs
        .iter()
        .map(|spec| {
            let (tool, version) = match spec.split_once('=') {
                Some((tool, version)) => (Some(tool.trim()), version.trim()),
                None => (None, spec.trim()),
            };
            match toolgate_repo::parse_version(version) {
                Some(_) => Ok((tool, version)),
                None => Err(UsageError::new(format!(
                    "{flag} {spec}: {version:?} is not a version; write vN or TOOL=vN (e.g. v2, job_status=v2)"
                ))),
            }
        })
        .collect()
}

/// The first of `parsed` that names a version of `tool` it has, with its index.
fn first_for(
    parsed: &[(Option<&str>, &str)],
    tool: &str,
    versions: &[VersionDir],
) -> Option<(usize, VersionDir)> {
    parsed
        .iter()
        .enumerate()
        .find_map(|(index, (only, version))| {
            if only.is_some_and(|only| only != tool) {
                return None;
            }
            let found = versions.iter().find(|dir| dir.name() == *version)?;
            Some((index, found.clone()))
        })
}

/// Why `flag`'s value `specs[index]` named nothing, where `taken` says a tool already has one.
fn unused(
    flag: &str,
    spec: &str,
    (only, version): (Option<&str>, &str),
    tools: &[String],
    taken: impl Fn(&str) -> bool,
) -> UsageError {
    UsageError::new(match only {
        Some(only) if !tools.iter().any(|tool| tool == only) => {
            format!("{flag} {spec}: no tool {only} has a contract here")
        }
        Some(only) if taken(only) => {
            format!("{flag} {spec}: {only} is given another version already; a tool has one")
        }
        Some(only) => format!("{flag} {spec}: the tool {only} has no version {version}"),
        None => format!("{flag} {spec}: no tool has a version {version}"),
    })
}

impl ShadowPlan {
    /// Resolves `shadows` (`--shadow`) and `enforced` (`--enforce`) against `repository`; a
    /// value that names nothing is an error, and so is a tool told to enforce the version it
    /// shadows.
    pub fn resolve(
        repository: &Repository,
        shadows: &[String],
        enforced: &[String],
    ) -> Result<ShadowPlan, UsageError> {
        let mut plan = ShadowPlan::default();
        if shadows.is_empty() && enforced.is_empty() {
            return Ok(plan);
        }
        let parsed = parsed_specs("--shadow", shadows)?;
        let pins = parsed_specs("--enforce", enforced)?;
        let tools = repository.tools()?;
        let mut used = vec![false; shadows.len()];
        let mut pins_used = vec![false; enforced.len()];
        for tool in &tools {
            let versions = repository.versions(tool)?;
            let pinned = first_for(&pins, tool, &versions);
            if let Some((index, version)) = &pinned {
                pins_used[*index] = true;
                plan.pinned.insert(tool.clone(), version.clone());
            }
            let Some((index, candidate)) = first_for(&parsed, tool, &versions) else {
                continue;
            };
            let enforced = match &pinned {
                Some((pin, version)) if version.number == candidate.number => {
                    return Err(UsageError::new(format!(
                        "--enforce {} and --shadow {}: {tool} cannot enforce the version it shadows",
                        enforced[*pin], shadows[index]
                    )));
                }
                Some((_, version)) => version.clone(),
                None => match versions
                    .iter()
                    .rev()
                    .find(|dir| dir.number != candidate.number)
                {
                    Some(version) => version.clone(),
                    None => {
                        return Err(UsageError::new(format!(
                            "--shadow {}: {tool} has no other version to enforce beside {}",
                            shadows[index],
                            candidate.name()
                        )));
                    }
                },
            };
            used[index] = true;
            plan.pairs.insert(
                tool.clone(),
                ShadowPair {
                    enforced,
                    candidate,
                },
            );
        }
        let taken_shadow = |tool: &str| plan.pairs.contains_key(tool);
        if let Some(index) = used.iter().position(|used| !used) {
            return Err(unused(
                "--shadow",
                &shadows[index],
                parsed[index],
                &tools,
                taken_shadow,
            ));
        }
        let taken_pin = |tool: &str| plan.pinned.contains_key(tool);
        if let Some(index) = pins_used.iter().position(|used| !used) {
            return Err(unused(
                "--enforce",
                &enforced[index],
                pins[index],
                &tools,
                taken_pin,
            ));
        }
        Ok(plan)
    }

    /// What `tool` does under the plan; `None` when it is given no shadow.
    pub fn of(&self, tool: &str) -> Option<&ShadowPair> {
        self.pairs.get(tool)
    }

    /// The version `tool` enforces when the plan says (a shadow's pair, or `--enforce`); `None`
    /// leaves it to the repository (its newest).
    pub fn enforced(&self, tool: &str) -> Option<&VersionDir> {
        self.pairs
            .get(tool)
            .map(|pair| &pair.enforced)
            .or_else(|| self.pinned.get(tool))
    }

    /// Each pair as `TOOL vN (enforcing vM)`, and each pin without a shadow as `TOOL vM
    /// enforced`, comma-separated.
    pub fn describe(&self) -> String {
        let pairs = self.pairs.iter().map(|(tool, pair)| {
            format!(
                "{tool} {} (enforcing {})",
                pair.candidate.name(),
                pair.enforced.name()
            )
        });
        let pins = self
            .pinned
            .iter()
            .filter(|(tool, _)| !self.pairs.contains_key(*tool))
            .map(|(tool, version)| format!("{tool} {} enforced", version.name()));
        pairs.chain(pins).collect::<Vec<_>>().join(", ")
    }

    /// Whether no tool is given a shadow or a pinned version.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.pinned.is_empty()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The MCP tests' weather contract as v1, and again as v2.
    fn weather_twice() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().unwrap();
        let from =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/contracts/weather/v1");
        for version in [1, 2] {
            let to = dir.path().join(format!("contracts/weather/v{version}"));
            std::fs::create_dir_all(&to).unwrap();
            for entry in std::fs::read_dir(&from).unwrap() {
                let entry = entry.unwrap();
                let text = std::fs::read_to_string(entry.path()).unwrap();
                let text = text.replace("version: 1", &format!("version: {version}"));
                std::fs::write(to.join(entry.file_name()), text).unwrap();
            }
        }
        let repository = Repository::open(dir.path()).unwrap();
        (dir, repository)
    }

    fn specs(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| (*value).to_owned()).collect()
    }

    #[test]
    fn enforce_pins_a_version_alone_or_beside_a_shadow() {
        let (_dir, repository) = weather_twice();
        let plan = ShadowPlan::resolve(&repository, &[], &specs(&["weather=v1"])).unwrap();
        assert_eq!(plan.enforced("weather").unwrap().name(), "v1");
        assert!(plan.of("weather").is_none());
        assert_eq!(plan.describe(), "weather v1 enforced");
        let plan = ShadowPlan::resolve(&repository, &specs(&["v2"]), &specs(&["v1"])).unwrap();
        let pair = plan.of("weather").unwrap();
        assert_eq!(
            (pair.enforced.name(), pair.candidate.name()),
            ("v1".into(), "v2".into())
        );
        assert_eq!(plan.describe(), "weather v2 (enforcing v1)");
        // Without --enforce the newest is enforced, as before.
        let plan = ShadowPlan::resolve(&repository, &[], &[]).unwrap();
        assert!(plan.enforced("weather").is_none() && plan.is_empty());
    }

    #[test]
    fn an_enforce_that_names_nothing_or_contradicts_the_shadow_is_refused() {
        let (_dir, repository) = weather_twice();
        for (shadow, enforce, said) in [
            (
                &[][..],
                &["weather=v3"][..],
                "--enforce weather=v3: the tool weather has no version v3",
            ),
            (
                &[],
                &["nosuch=v1"],
                "--enforce nosuch=v1: no tool nosuch has a contract here",
            ),
            (&[], &["v9"], "--enforce v9: no tool has a version v9"),
            (&[], &["2"], "--enforce 2: \"2\" is not a version"),
            (
                &["weather=v2"],
                &["weather=v2"],
                "--enforce weather=v2 and --shadow weather=v2: weather cannot enforce the version it shadows",
            ),
            (
                &[],
                &["weather=v1", "weather=v2"],
                "--enforce weather=v2: weather is given another version already",
            ),
        ] {
            let error = ShadowPlan::resolve(&repository, &specs(shadow), &specs(enforce))
                .unwrap_err()
                .to_string();
            assert!(error.contains(said), "{said}: {error}");
        }
    }
}
