//! JUnit XML (`toolgate test --format junit`) for CI dashboards, through quick-junit.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::Summary;

/// The JUnit report: one test suite per tool (its cases and checks) and one for suite-wide checks.
pub fn render(summary: &Summary) -> Result<String, String> {
    let mut report = Report::new("toolgate");
    let mut suites: Vec<TestSuite> = Vec::new();
    for line in &summary.lines {
        let suite_name = line.tool.clone().unwrap_or_else(|| "suite".to_owned());
        let position = match suites
            .iter()
            .position(|suite| suite.name.as_str() == suite_name)
        {
            Some(position) => position,
            None => {
                suites.push(TestSuite::new(suite_name.clone()));
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
            let failure = summary
                .failures
                .iter()
                .find(|verdict| verdict.name == line.name);
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            if let Some(failure) = failure {
                if let Some(first) = failure.problems.first() {
                    status.set_message(first.message.clone());
                }
                status.set_description(failure.failure_text());
            }
            status
        };
        let mut case = TestCase::new(line.name.clone(), status);
        let classname = match line.class {
            Some(class) => format!("{suite_name}.{class}"),
            None => suite_name.clone(),
        };
        case.set_classname(classname);
        suites[position].add_test_case(case);
    }
    report.add_test_suites(suites);
    report
        .to_string()
        .map_err(|error| format!("cannot write JUnit XML: {error}"))
}
