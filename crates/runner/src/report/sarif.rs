//! SARIF 2.1.0 (`toolgate test --format sarif`, `--report sarif=FILE`), for GitHub code
//! scanning: one result per problem of each failing case or check, at the file and line the
//! problem is about, else at the case's fixture, else at the contract version it ran against.

use std::path::{Path, PathBuf};

use toolgate_repo::sarif::{Finding, Level, Log, Place, Rule};
use toolgate_repo::{CONTRACTS_DIR, ProblemKind};

use super::Summary;

/// The log of a run whose root is `root`, as given on the command line.
pub(crate) fn render(summary: &Summary, root: &Path) -> String {
    let rules = ProblemKind::ALL
        .iter()
        .map(|kind| Rule {
            id: kind.name(),
            summary: kind
                .describe()
                .split_inclusive(". ")
                .next()
                .unwrap_or_default()
                .trim_end()
                .to_owned(),
            help: kind.describe().to_owned(),
            level: Level::Error,
        })
        .collect();
    let mut findings = Vec::new();
    for failure in &summary.failures {
        // Where the case is, when a problem names no file of its own.
        let case_place = match (&failure.fixture, &failure.tool, &failure.version) {
            (Some(fixture), _, _) => Some(Place::file(fixture)),
            (None, Some(tool), Some(version)) => Some(Place::file(
                PathBuf::from(CONTRACTS_DIR)
                    .join(tool)
                    .join(version)
                    .join("contract.yaml"),
            )),
            (None, Some(tool), None) => Some(Place::file(PathBuf::from(CONTRACTS_DIR).join(tool))),
            (None, None, _) => None,
        };
        for problem in &failure.problems {
            let place = match &problem.file {
                Some(file) => Some(Place {
                    file: PathBuf::from(file),
                    line: problem.line.and_then(|line| usize::try_from(line).ok()),
                    pointer: None,
                }),
                None => case_place.clone(),
            };
            let mut message = format!("{}: {}", failure.name, problem.message);
            if let Some(detail) = &problem.detail {
                message.push('\n');
                message.push_str(&anstream::adapter::strip_str(detail).to_string());
            }
            if let Some(command) = &failure.reproduce {
                message.push_str("\nreproduce: ");
                message.push_str(command);
            }
            findings.push(Finding {
                rule: problem.kind.name(),
                level: Level::Error,
                message,
                place,
                accepted: None,
                identity: failure.name.clone(),
            });
        }
    }
    Log {
        category: "toolgate/test".to_owned(),
        root: root.to_path_buf(),
        rules,
        findings,
        errors: Vec::new(),
        fallback: Place::file(CONTRACTS_DIR),
    }
    .render()
}
