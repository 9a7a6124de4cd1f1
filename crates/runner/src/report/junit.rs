//! JUnit XML (`toolgate test --format junit`) for CI dashboards, through quick-junit, valid
//! against the Jenkins `junit-10.xsd` most consumers follow (`tests/junit-10.xsd`).
//!
//! As surefire lays it out: one `<testsuite>` per fixture file (its `file` attribute names it),
//! holding a `<testcase>` per contract version; one per tool for its checks; one for the
//! repository-wide checks. A fixture, sidecar or contract that cannot be loaded is an `<error>`;
//! a contract that said no is a `<failure>`; the `type` of either is the problem's kind.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::Summary;
use toolgate_repo::CaseResult;

/// The JUnit report.
pub(crate) fn render(summary: &Summary) -> Result<String, String> {
    // When the run started, on every suite (junit-10.xsd allows it there, not on the root), and
    // the machine it ran on.
    let started = summary
        .started_at
        .map(|at| chrono::DateTime::<chrono::Utc>::from(at).fixed_offset());
    let hostname = gethostname::gethostname().to_string_lossy().into_owned();
    let failures: BTreeMap<&str, &CaseResult> = summary
        .failures
        .iter()
        .map(|verdict| (verdict.name.as_str(), verdict))
        .collect();
    let mut suites: Vec<(TestSuite, Duration, BTreeSet<String>)> = Vec::new();
    for line in &summary.lines {
        let tool = line.tool.clone().unwrap_or_else(|| "suite".to_owned());
        // A case's suite is its fixture; a check's is its tool.
        let (suite_name, file) = match (&line.fixture, line.class) {
            (Some(fixture), Some(_)) => {
                let case = line.name.split('@').next().unwrap_or(&line.name);
                (
                    case.to_owned(),
                    Some(fixture.to_string_lossy().replace('\\', "/")),
                )
            }
            _ => (tool.clone(), None),
        };
        let position = match suites
            .iter()
            .position(|(suite, _, _)| suite.name.as_str() == suite_name)
        {
            Some(position) => position,
            None => {
                let mut suite = TestSuite::new(suite_name.clone());
                if let Some(file) = &file {
                    suite.extra.insert("file".into(), file.clone().into());
                }
                if let Some(started) = started {
                    suite.set_timestamp(started);
                }
                suite
                    .extra
                    .insert("hostname".into(), hostname.as_str().into());
                suites.push((suite, Duration::ZERO, BTreeSet::new()));
                suites.len() - 1
            }
        };
        let status = if line.passed {
            TestCaseStatus::success()
        } else if let Some(reason) = &line.skipped {
            let mut status = TestCaseStatus::skipped();
            status.set_message(reason.clone());
            status
        } else {
            let failure = failures.get(line.name.as_str());
            let configuration = failure.is_some_and(|verdict| verdict.has_configuration_problem());
            let kind = if configuration {
                NonSuccessKind::Error
            } else {
                NonSuccessKind::Failure
            };
            let mut status = TestCaseStatus::non_success(kind);
            if let Some(failure) = failure {
                if let Some(problem) = failure.leading_problem() {
                    status.set_message(problem.message.clone());
                    status.set_type(problem.kind.name());
                }
                status.set_description(
                    anstream::adapter::strip_str(&failure.failure_text()).to_string(),
                );
            }
            status
        };
        let mut case = TestCase::new(line.name.clone(), status);
        case.set_classname(match line.class {
            Some(class) => format!("{tool}.{class}"),
            None => tool.clone(),
        });
        case.set_time(line.duration);
        let (suite, time, versions) = &mut suites[position];
        *time += line.duration;
        versions.extend(line.version.iter().cloned());
        suite.add_test_case(case);
    }
    let mut report = Report::new("toolgate");
    report.set_time(summary.elapsed);
    report.add_test_suites(suites.into_iter().map(|(mut suite, time, versions)| {
        suite.set_time(time);
        // What a dashboard groups runs by: the toolgate that ran them and the contract
        // versions the suite's cases and checks ran against.
        suite.add_property(Property::new("toolgate", env!("CARGO_PKG_VERSION")));
        if !versions.is_empty() {
            let versions: Vec<String> = versions.into_iter().collect();
            suite.add_property(Property::new("contract_versions", versions.join(", ")));
        }
        suite
    }));
    let xml = report
        .to_string()
        .map_err(|error| format!("cannot write JUnit XML: {error}"))?;
    Ok(without_ci_commands(&without_root_skipped(&xml)))
}

/// The report with no line a GitHub Actions runner would read as a command when it is printed to
/// a log: `#` and `:` as character references where they would begin `##[command]` (anywhere) or
/// `::command::` (at a line's start). An XML reader sees the same characters.
fn without_ci_commands(xml: &str) -> String {
    let xml = xml.replace("##[", "&#35;#[");
    xml.split('\n')
        .map(|line| {
            let blanks = line.len() - line.trim_start().len();
            if line[blanks..].starts_with("::") {
                format!("{}&#58;{}", &line[..blanks], &line[blanks + 1..])
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// quick-junit writes a `skipped` count on `<testsuites>`, which junit-10.xsd does not allow
/// there (it is allowed, and kept, on each `<testsuite>`).
fn without_root_skipped(xml: &str) -> String {
    let Some(start) = xml.find("<testsuites") else {
        return xml.to_owned();
    };
    let end = xml[start..].find('>').map_or(xml.len(), |end| start + end);
    let tag = &xml[start..end];
    let Some(attribute) = tag.find(" skipped=\"") else {
        return xml.to_owned();
    };
    let value_end = tag[attribute + 10..]
        .find('"')
        .map_or(tag.len(), |quote| attribute + 10 + quote + 1);
    format!(
        "{}{}{}",
        &xml[..start + attribute],
        &xml[start + value_end..end],
        &xml[end..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_root_loses_its_skipped_count() {
        let xml = "<?xml version=\"1.0\"?>\n<testsuites name=\"toolgate\" tests=\"2\" skipped=\"1\" failures=\"0\">\n<testsuite name=\"a\" skipped=\"1\"/>\n</testsuites>";
        assert_eq!(
            without_root_skipped(xml),
            "<?xml version=\"1.0\"?>\n<testsuites name=\"toolgate\" tests=\"2\" failures=\"0\">\n<testsuite name=\"a\" skipped=\"1\"/>\n</testsuites>"
        );
        assert_eq!(without_root_skipped("<a/>"), "<a/>");
    }

    #[test]
    fn no_line_reads_as_a_ci_command() {
        assert_eq!(
            without_ci_commands("<a m=\"##[x]\">\n  ::error::y\n</a>"),
            "<a m=\"&#35;#[x]\">\n  &#58;:error::y\n</a>"
        );
    }
}
