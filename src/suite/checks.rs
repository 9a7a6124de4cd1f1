//! The suite-wide checks: the fixture tree's structure, every contract version compiles,
//! coverage of the obvious cases, stale snapshots, the contract lock.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use toolgate_gate::{Contract, Layer};

use super::admission::admit_fixture;
use super::{RunContext, Suite};
use crate::fixture::{Fixture, FixtureClass};
use crate::lock;
use crate::repo::VersionDir;
use crate::sidecar::{Coverage, Sidecar};
use crate::snapshot::{self, SnapshotMode};
use crate::verdict::{Problem, ProblemKind};

impl Suite {
    pub(super) fn structure_problems(&self) -> Vec<Problem> {
        let mut problems: Vec<Problem> = self
            .root_problems
            .iter()
            .map(|problem| Problem::new(ProblemKind::Structure, problem.to_string()))
            .collect();
        if self.fixture_count == 0 {
            problems.push(Problem::new(
                ProblemKind::Structure,
                "found no fixtures at all: a suite that checks nothing must not pass; add fixtures/<tool>/<class>/<case>.json and <case>.expect.yaml",
            ));
        }
        problems
    }

    pub(super) fn contract_problems(&self, tool: &str) -> Vec<Problem> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        let mut problems: Vec<Problem> = contracts
            .layout_error
            .iter()
            .map(|error| Problem::new(ProblemKind::Contract, error.clone()))
            .collect();
        for (_, compiled) in &contracts.versions {
            if let Err(error) = compiled {
                problems.extend(
                    error
                        .lines()
                        .map(|line| Problem::new(ProblemKind::Contract, line)),
                );
            }
        }
        problems
    }

    pub(super) fn coverage_problems(&self, tool: &str) -> Vec<Problem> {
        let Some(contracts) = self.tools.iter().find(|candidate| candidate.tool == tool) else {
            return Vec::new();
        };
        let Some((_, Ok(newest))) = contracts.versions.last() else {
            return Vec::new(); // `<tool>::contracts` reports why
        };
        let fixtures: Vec<&Arc<Fixture>> = self
            .fixtures
            .iter()
            .filter(|fixture| fixture.tool == tool)
            .collect();
        let legacy_shapes: BTreeSet<String> = contracts
            .versions
            .iter()
            .filter_map(|(_, compiled)| compiled.as_ref().ok())
            .flat_map(|contract| contract.shape_names().skip(1).map(str::to_owned))
            .collect();
        let mut applicable = vec![FixtureClass::Accepted, FixtureClass::NearMiss];
        if !newest.is_text() {
            applicable.push(FixtureClass::DuplicateKey);
        }
        if !legacy_shapes.is_empty() {
            applicable.push(FixtureClass::Legacy);
        }
        let mut problems = Vec::new();
        for class in &applicable {
            if !fixtures.iter().any(|fixture| fixture.class == *class) {
                let why = match class {
                    FixtureClass::Legacy => {
                        format!(
                            ", and its contract still admits legacy shapes ({})",
                            legacy_shapes.iter().cloned().collect::<Vec<_>>().join(", ")
                        )
                    }
                    _ => String::new(),
                };
                problems.push(Problem::new(
                    ProblemKind::Coverage,
                    format!("tool `{tool}` has no fixture in fixtures/{tool}/{class}/{why}"),
                ));
            }
        }
        for fixture in fixtures
            .iter()
            .filter(|fixture| !applicable.contains(&fixture.class))
        {
            problems.push(Problem::new(
                ProblemKind::Coverage,
                format!(
                    "{}: the `{}` class does not apply to tool `{tool}`",
                    fixture.raw.display(),
                    fixture.class
                ),
            ));
        }
        if newest.is_text() {
            return problems;
        }
        for (class, required) in [
            (FixtureClass::NearMiss, &Coverage::NEAR_MISS[..]),
            (FixtureClass::DuplicateKey, &Coverage::DUPLICATE_KEY[..]),
        ] {
            let mut covered = BTreeSet::new();
            for fixture in fixtures.iter().filter(|fixture| fixture.class == class) {
                let Ok(spec) = &fixture.spec else { continue };
                for claim in &spec.covers {
                    match self.verify_claim(fixture, spec, *claim, newest) {
                        Ok(()) => {
                            covered.insert(*claim);
                        }
                        Err(reason) => problems.push(Problem::new(
                            ProblemKind::Coverage,
                            format!(
                                "{}: claims `{}`, but {reason}",
                                fixture.sidecar.display(),
                                claim.as_str()
                            ),
                        )),
                    }
                }
            }
            let missing: Vec<&str> = required
                .iter()
                .filter(|case| !covered.contains(case))
                .map(|case| case.as_str())
                .collect();
            if !missing.is_empty() {
                problems.push(Problem::new(
                    ProblemKind::Coverage,
                    format!(
                        "tool `{tool}`: no {class} fixture covers {}; add one and say so with `covers: [{}]` in its sidecar",
                        missing.join(", "),
                        missing.join(", ")
                    ),
                ));
            }
        }
        problems
    }

    /// Checks a coverage claim against the fixture's class and expectation and, for duplicate
    /// keys, against what the gate actually finds in the raw bytes.
    fn verify_claim(
        &self,
        fixture: &Fixture,
        spec: &Sidecar,
        claim: Coverage,
        contract: &Contract,
    ) -> Result<(), String> {
        let expect = &spec.expect;
        let is_duplicate_claim = Coverage::DUPLICATE_KEY.contains(&claim);
        let right_class = if is_duplicate_claim {
            FixtureClass::DuplicateKey
        } else {
            FixtureClass::NearMiss
        };
        if fixture.class != right_class {
            return Err(format!(
                "it is a {} fixture, and the claim belongs to {right_class}",
                fixture.class
            ));
        }
        let layers: &[Layer] = match claim {
            Coverage::OversizedString => &[Layer::Transport, Layer::Schema],
            _ if is_duplicate_claim => &[Layer::Parse],
            _ => &[Layer::Schema],
        };
        if !expect.layer().is_some_and(|layer| layers.contains(&layer)) {
            let names: Vec<&str> = layers.iter().map(|layer| layer.as_str()).collect();
            return Err(format!(
                "it does not expect a rejection at {}",
                names.join(" or ")
            ));
        }
        if !is_duplicate_claim {
            return Ok(());
        }
        let admitted = admit_fixture(self.root(), &self.requests, fixture, spec, contract)
            .map_err(|problem| problem.message)?;
        let record = admitted.decision.operator_record();
        let Some(record) = record.filter(|record| record.rule() == "duplicate_member") else {
            return Err("the gate does not reject it as a duplicate member".to_owned());
        };
        let depth = record
            .instance_path()
            .unwrap_or_default()
            .matches('/')
            .count();
        match claim {
            Coverage::DuplicateTopLevel if depth != 1 => Err(format!(
                "its duplicate is at {}, not in the top-level object",
                record.instance_path().unwrap_or_default()
            )),
            Coverage::DuplicateNested if depth < 2 => {
                Err("its duplicate is in the top-level object, not a nested one".to_owned())
            }
            Coverage::DuplicateEscaped if !has_escaped_member_name(&admitted.raw) => {
                Err("no member name in it is spelled with an escape (\\u....)".to_owned())
            }
            _ => Ok(()),
        }
    }

    /// Snapshot files no case produces: under `snapshots/<tool>/` for a tool, or elsewhere under
    /// `snapshots/` (outside every tool's folder) for the repository. Accepting removes them.
    pub(super) fn stale_snapshot_problems(
        &self,
        context: &RunContext,
        tool: Option<&str>,
    ) -> Vec<Problem> {
        let mut expected = BTreeSet::new();
        let mut owned = BTreeSet::new();
        for case in self
            .cases
            .iter()
            .filter(|case| Some(case.fixture.tool.as_str()) == tool)
        {
            let fixture = &case.fixture;
            match &case.version {
                Some(version) => {
                    expected.insert(snapshot::snapshot_path(
                        &fixture.tool,
                        fixture.class.as_str(),
                        &fixture.case,
                        version,
                    ));
                }
                None => {
                    let prefix = snapshot::snapshot_path(
                        &fixture.tool,
                        fixture.class.as_str(),
                        &fixture.case,
                        "",
                    );
                    owned.insert(
                        prefix
                            .to_string_lossy()
                            .trim_end_matches(".snap")
                            .to_owned(),
                    );
                }
            }
        }
        let stale = match tool {
            Some(tool) => snapshot::find_stale(
                self.root(),
                &Path::new(snapshot::SNAPSHOTS_DIR).join(tool),
                &[],
                &expected,
                &owned,
            ),
            None => snapshot::find_stale(
                self.root(),
                Path::new(snapshot::SNAPSHOTS_DIR),
                &self.all_tools,
                &expected,
                &owned,
            ),
        };
        let mut problems: Vec<Problem> = stale
            .problems
            .into_iter()
            .map(|message| Problem::new(ProblemKind::Structure, message))
            .collect();
        match context.mode {
            // Accepting makes the tree match the fixtures: stale and pending files go.
            SnapshotMode::Accept => {
                let removable: Vec<_> = stale.stale.into_iter().chain(stale.pending).collect();
                problems.extend(
                    snapshot::remove_stale(self.root(), &removable)
                        .into_iter()
                        .map(|message| Problem::new(ProblemKind::Stale, message)),
                );
            }
            mode => {
                problems.extend(stale.stale.into_iter().map(|path| {
                    Problem::new(
                        ProblemKind::Stale,
                        format!("{}: no fixture produces this snapshot; delete it, or run `toolgate test --accept` to remove stale snapshots", path.display()),
                    )
                }));
                // Locally a pending file is this run's own output; in CI it is a leftover that
                // was never reviewed, and nothing there may delete it.
                if mode == SnapshotMode::Check {
                    problems.extend(stale.pending.into_iter().map(|path| {
                        Problem::new(
                            ProblemKind::Stale,
                            format!("{}: a pending snapshot that was never reviewed; review it with `cargo insta review` (or `toolgate test --accept`) and commit the result, or delete it", path.display()),
                        )
                    }));
                }
            }
        }
        problems
    }

    /// Published contract versions are locked and unchanged; accepting locks new ones.
    pub(super) fn lock_problems(&self, context: &RunContext) -> Vec<Problem> {
        let versions: Vec<(String, VersionDir)> = self
            .all_tools
            .iter()
            .flat_map(|tool| {
                // A tool whose folder cannot be listed is reported by `<tool>::contracts`.
                let versions = self.repository.versions(tool).ok();
                versions
                    .into_iter()
                    .flatten()
                    .map(|version| (tool.clone(), version))
            })
            .collect();
        lock::check(self.root(), &versions, context.mode == SnapshotMode::Accept)
    }
}

fn has_escaped_member_name(raw: &[u8]) -> bool {
    // A `"...\u....": ` token: a member name written with a \u escape.
    let text = String::from_utf8_lossy(raw);
    let mut rest = text.as_ref();
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let mut end = None;
        let mut escaped = false;
        for (offset, ch) in after.char_indices() {
            match (escaped, ch) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    end = Some(offset);
                    break;
                }
                _ => {}
            }
        }
        let Some(end) = end else { return false };
        let literal = &after[..end];
        let following = after[end + 1..].trim_start();
        if literal.contains("\\u") && following.starts_with(':') {
            return true;
        }
        rest = &after[end + 1..];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_member_names_are_recognized() {
        assert!(has_escaped_member_name(br#"{"a":1,"\u0061":2}"#));
        assert!(has_escaped_member_name(br#"{"x":{"st\u0061te": "a"}}"#));
        assert!(
            !has_escaped_member_name(br#"{"a":"\u0061"}"#),
            "an escaped value is not an escaped name"
        );
        assert!(!has_escaped_member_name(br#"{"a":1,"a":2}"#));
    }
}
