//! What `toolgate test` hands the tools around it: JUnit valid against Jenkins' junit-10.xsd
//! (checked with xmllint where it is installed; `.ci/run` installs it and requires it), the JSON report valid against `toolgate schema report` (checked with
//! the gate's own validator), markdown for a pull request, GitHub annotations, several reports
//! from one run, and cargo-test-like selection.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;

use crate::common::{Run, repo_root, run, toolgate_test, tree};
use serde_json::Value;
use toolgate_gate::internals::standalone_validator;

/// A tree where one case fails (a changed snapshot), one cannot load (a broken sidecar) and the
/// rest pass.
pub(crate) fn failing_tree() -> tempfile::TempDir {
    let dir = tree();
    let snapshot = dir
        .path()
        .join("snapshots/review_status/accepted/approved@v1.snap");
    let text = fs::read_to_string(&snapshot).unwrap();
    fs::write(&snapshot, text.replace("maria.silva", "maria.silvia")).unwrap();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/near-miss/null_data.expect.yaml");
    fs::write(&sidecar, "expect: { outcome: rejected }\n").unwrap();
    dir
}

/// Set by `.ci/run`: there, a missing xmllint is a failure, never a skipped check.
const REQUIRE_XMLLINT: &str = "TOOLGATE_REQUIRE_XMLLINT";

/// What a machine with only Rust prints in place of the XSD check.
const XSD_NOT_RUN: &str =
    "xmllint is not installed, so the JUnit report was NOT validated against tests/junit-10.xsd";

/// Validates `xml` against Jenkins' junit-10.xsd with xmllint (libxml2). Where xmllint is not
/// installed, says so on stderr and returns without checking, unless `TOOLGATE_REQUIRE_XMLLINT`
/// asks for it (`.ci/run` sets it, and validates the report of the bundled suite itself).
fn validate_against_junit_xsd(xml: &Path) {
    let checked = match Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(repo_root().join("tests/junit-10.xsd"))
        .arg(xml)
        .output()
    {
        Ok(checked) => checked,
        Err(error)
            if error.kind() == std::io::ErrorKind::NotFound
                && std::env::var_os(REQUIRE_XMLLINT).is_none() =>
        {
            // Straight to the process's stderr, past libtest's capture: a passing test must still
            // tell whoever runs `cargo test` that this check did not happen.
            let _ = writeln!(
                std::io::stderr(),
                "note: {XSD_NOT_RUN} here; `.ci/run` validates it (install libxml2-utils to check it in `cargo test` too)"
            );
            return;
        }
        Err(error) => panic!("xmllint (libxml2-utils) cannot run: {error}"),
    };
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[test]
fn without_xmllint_the_junit_test_passes_and_says_the_xsd_check_did_not_run() {
    // This very test binary, on a PATH with no xmllint: the JUnit test passes on everything it can
    // check, and prints that the schema check was not run instead of pretending it was.
    let empty = tempfile::tempdir().unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "reports::junit_is_valid_against_jenkins_junit_10_xsd_with_errors_failures_times_and_files",
            "--nocapture",
        ])
        .env("PATH", empty.path())
        .env_remove(REQUIRE_XMLLINT);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(outcome.stdout.contains("1 passed"), "{}", outcome.stdout);
    assert!(
        outcome.stderr.contains(XSD_NOT_RUN),
        "the skipped check says so:\n{}",
        outcome.stderr
    );
}

#[test]
fn junit_is_valid_against_jenkins_junit_10_xsd_with_errors_failures_times_and_files() {
    for (dir, code) in [(tree(), 0), (failing_tree(), 2)] {
        let xml = dir.path().join("toolgate.xml");
        let outcome = toolgate_test(
            dir.path(),
            &["--report", &format!("junit={}", xml.display())],
            true,
        );
        assert_eq!(outcome.code, code, "{}", outcome.stdout);
        validate_against_junit_xsd(&xml);
        let text = fs::read_to_string(&xml).unwrap();
        assert!(
            !text[..text.find("<testsuite ").unwrap()].contains("skipped="),
            "not on <testsuites>"
        );
        assert!(text.contains(r#"file="fixtures/review_status/accepted/approved.json""#));
        assert!(text.contains(r#"<testcase name="review_status::accepted::approved@v1" classname="review_status.accepted" time=""#));
        if code == 2 {
            // The sidecar that cannot load is an error; the snapshot that changed is a failure.
            assert!(text.contains(r#"errors="1""#), "{text}");
            assert!(
                text.contains(
                    r#"<error message="fixtures/job_status/near-miss/null_data.expect.yaml"#
                ),
                "{text}"
            );
            assert!(text.contains(r#"type="load""#), "{text}");
            assert!(
                text.contains(r#"<failure message="what the agent sees changed from"#),
                "{text}"
            );
            assert!(text.contains(r#"type="snapshot""#), "{text}");
        }
    }
}

fn report_schema() -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(["schema", "report"]);
    serde_json::from_str(&run(command, b"").stdout).unwrap()
}

#[test]
fn the_json_report_is_valid_against_its_published_schema() {
    let validator = standalone_validator(&report_schema()).unwrap();
    for (dir, code) in [(tree(), 0), (failing_tree(), 2)] {
        let outcome = toolgate_test(dir.path(), &["--format", "json"], true);
        assert_eq!(outcome.code, code);
        let report: Value = serde_json::from_str(&outcome.stdout).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&report)
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}\n{report:#}");
        assert_eq!(report["format_version"], 4);
        if code == 2 {
            assert_eq!(
                report["failures"][0]["fixture"],
                "fixtures/job_status/near-miss/null_data.expect.yaml"
                    .replace(".expect.yaml", ".json")
            );
        }
    }
    // The schema is not a rubber stamp: a report with an unknown problem kind fails it.
    let mut forged: Value = serde_json::from_str(
        &toolgate_test(failing_tree().path(), &["--format", "json"], true).stdout,
    )
    .unwrap();
    forged["failures"][0]["problems"][0]["kind"] = Value::from("mystery");
    assert!(!validator.is_valid(&forged));
}

#[test]
fn markdown_github_and_several_reports_from_one_run() {
    let dir = failing_tree();
    let markdown = dir.path().join("report.md");
    let json = dir.path().join("report.json");
    let summary = dir.path().join("step-summary.md");
    let mut command = crate::common::toolgate_test_command(
        dir.path(),
        &[
            "--format",
            "github",
            "--report",
            &format!("markdown={}", markdown.display()),
            "--report",
            &format!("json={}", json.display()),
        ],
        true,
    );
    command.env("GITHUB_STEP_SUMMARY", &summary);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 2);
    // GitHub annotations: on the fixture, escaped so nothing in a message ends the command.
    let root = dir.path().display().to_string();
    let annotation = outcome
        .stdout
        .lines()
        .find(|line| line.contains("title=review_status%3A%3Aaccepted%3A%3Aapproved@v1"))
        .unwrap_or_else(|| panic!("{}", outcome.stdout));
    assert!(
        annotation.starts_with(&format!(
            "::error file={root}/fixtures/review_status/accepted/approved.json,"
        )),
        "{annotation}"
    );
    assert!(
        annotation.contains("%0A"),
        "multi-line messages stay on one line: {annotation}"
    );
    assert!(
        outcome.stdout.trim_end().ends_with(
            "toolgate test: FAILED. 163 of 165 cases passed; 237 of 237 suite checks passed."
        ),
        "{}",
        outcome.stdout
    );

    let text = fs::read_to_string(&markdown).unwrap();
    assert!(
        text.starts_with("**toolgate test**: ❌ **FAILED** · 163 of 165 cases"),
        "{text}"
    );
    assert!(
        text.contains("| `review_status` | **17/18** | 42/42 | - | 6/6 |"),
        "{text}"
    );
    assert!(
        text.contains("<details><summary>❌ <code>review_status::accepted::approved@v1</code>"),
        "{text}"
    );
    assert!(text.contains("```text\n"), "{text}");
    assert_eq!(
        fs::read_to_string(&summary).unwrap(),
        text,
        "the job summary is the markdown report"
    );
    let report: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["exit_code"], 2);
}

fn names(run: &Run) -> Vec<&str> {
    run.stdout
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .collect()
}

#[test]
fn selection_works_like_cargo_test() {
    let dir = tree();
    let listed = toolgate_test(dir.path(), &["--list"], true);
    assert_eq!(listed.code, 0);
    let all = names(&listed);
    assert_eq!(all.len(), 166 + 237);
    assert!(
        listed.stdout.trim_end().ends_with("403 tests"),
        "{}",
        listed.stdout
    );

    // Several filters: any of them; --skip leaves out; --exact matches whole names.
    let some = toolgate_test(
        dir.path(),
        &[
            "--list",
            "close_ticket::near-miss",
            "job_status::duplicate-key",
            "--skip",
            "escaped",
        ],
        true,
    );
    let some = names(&some);
    assert!(!some.is_empty());
    assert!(
        some.iter()
            .all(|name| (name.starts_with("close_ticket::near-miss")
                || name.starts_with("job_status::duplicate-key"))
                && !name.contains("escaped")),
        "{some:?}"
    );
    let exact = toolgate_test(
        dir.path(),
        &[
            "--list",
            "--exact",
            "job_status::coverage",
            "suite::contract_lock",
        ],
        true,
    );
    assert_eq!(
        names(&exact),
        ["job_status::coverage", "suite::contract_lock"]
    );

    // What --list names is what a run runs.
    let ran = toolgate_test(
        dir.path(),
        &[
            "--exact",
            "job_status::coverage",
            "suite::contract_lock",
            "--format",
            "json",
        ],
        true,
    );
    let report: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(report["totals"]["checks"], 2);
    assert_eq!(report["totals"]["cases"], 0);
}

#[test]
fn a_bad_report_argument_is_a_usage_error() {
    let dir = tree();
    for (argument, message) in [
        ("junit", "write FORMAT=FILE"),
        ("xml=out.xml", "is not a report format"),
        ("json=", "no file after"),
    ] {
        let outcome = toolgate_test(dir.path(), &["--report", argument], true);
        assert_eq!(outcome.code, 2, "{argument}");
        assert!(
            outcome.stderr.contains(message),
            "{argument}: {}",
            outcome.stderr
        );
    }
}

#[test]
fn the_markdown_report_shows_hostile_text_exactly_and_links_nothing() {
    use crate::render::{HOSTILE, mentions, render, visible};
    let dir = failing_tree();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/near-miss/null_data.expect.yaml");
    fs::write(
        &sidecar,
        format!("expect: {{ outcome: rejected, layer: '{HOSTILE}' }}\n"),
    )
    .unwrap();
    let outcome = toolgate_test(dir.path(), &["--format", "markdown"], true);
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    let rendered = render(&outcome.stdout);
    assert!(rendered.links.is_empty(), "{:?}", rendered.links);
    assert!(rendered.balanced(), "{:?}", rendered.tags);
    assert!(!mentions(&rendered.prose), "{}", rendered.prose);
    // The failure's summary names the case in a <code> element and quotes the value exactly.
    assert!(
        rendered
            .code
            .contains(&"job_status::near-miss::null_data".to_owned()),
        "{:?}",
        rendered.code
    );
    let shown = visible(&rendered.prose);
    assert!(
        shown.contains(&format!("expect.layer `{HOSTILE}` is not a layer")),
        "{shown}"
    );
    assert!(!shown.replace(HOSTILE, "").contains('\\'), "{shown}");
}

#[test]
fn every_configuration_error_is_annotated_on_its_file_and_said_once() {
    let dir = tree();
    let root = dir.path();
    fs::write(root.join("fixtures/job_status/request.json"), "{\n").unwrap();
    fs::write(root.join("fixtures/review_status/survivors.yaml"), "- [\n").unwrap();
    // And a published version changed: the lock line it contradicts.
    fs::write(root.join("contracts/close_ticket/v1/notes.txt"), "x").unwrap();
    let outcome = toolgate_test(root, &["--format", "github"], true);
    assert_eq!(outcome.code, 2, "{}", outcome.stdout);
    let shown = root.display().to_string();
    let unplaced: Vec<&str> = outcome
        .stdout
        .lines()
        .filter(|line| line.starts_with("::error ") && !line.starts_with("::error file="))
        .filter(|line| !line.contains("coverage"))
        .collect();
    assert!(unplaced.is_empty(), "{unplaced:#?}");
    let lock = fs::read_to_string(root.join("contracts/contracts.lock")).unwrap();
    let line = 1 + lock
        .lines()
        .position(|line| line.starts_with("close_ticket v1 "))
        .unwrap();
    for file in [
        "fixtures/job_status/request.json,title".to_owned(),
        "fixtures/review_status/survivors.yaml,line=1,".to_owned(),
        format!("contracts/contracts.lock,line={line},"),
    ] {
        let wanted = format!("::error file={shown}/{file}");
        assert!(
            outcome
                .stdout
                .lines()
                .any(|annotation| annotation.starts_with(&wanted)),
            "{wanted}\n{}",
            outcome.stdout
        );
    }
    let said = outcome
        .stderr
        .lines()
        .filter(|line| line.contains("request.json: not a request file"))
        .count();
    assert_eq!(said, 1, "{}", outcome.stderr);
}

#[test]
fn github_annotations_land_on_the_file_a_problem_is_about_at_its_line() {
    let dir = tree();
    let root = dir.path();
    // A sidecar whose second line is wrong, and a file where no file belongs.
    fs::write(
        root.join("fixtures/job_status/near-miss/null_data.expect.yaml"),
        "expect:\n  outcome: refused\n",
    )
    .unwrap();
    fs::write(root.join("fixtures/job_status/stray.txt"), "x").unwrap();
    let outcome = toolgate_test(root, &["--format", "github"], true);
    assert_eq!(outcome.code, 2, "{}", outcome.stdout);
    let shown = root.display().to_string();
    let annotations: Vec<&str> = outcome
        .stdout
        .lines()
        .filter(|line| line.starts_with("::error "))
        .collect();
    let sidecar = format!(
        "::error file={shown}/fixtures/job_status/near-miss/null_data.expect.yaml,line=2,title=job_status%3A%3Anear-miss%3A%3Anull_data"
    );
    assert!(
        annotations.iter().any(|line| line.starts_with(&sidecar)),
        "{annotations:#?}"
    );
    let stray = format!(
        "::error file={shown}/fixtures/job_status/stray.txt,title=job_status%3A%3Astructure::"
    );
    assert!(
        annotations.iter().any(|line| line.starts_with(&stray)),
        "{annotations:#?}"
    );
    // The JSON report places them too.
    let json = toolgate_test(root, &["--format", "json"], true);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    crate::common::assert_matches_schema("report", &report);
    let problems: Vec<&Value> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|failure| failure["problems"].as_array().unwrap())
        .collect();
    assert!(
        problems.iter().any(|problem| problem["file"]
            == "fixtures/job_status/near-miss/null_data.expect.yaml"
            && problem["line"] == 2),
        "{problems:#?}"
    );
}

#[test]
fn reports_carry_what_a_dashboard_tracks() {
    // JUnit: when and where it ran, which toolgate, which contract versions.
    let dir = tree();
    let xml = dir.path().join("toolgate.xml");
    let json = dir.path().join("toolgate.json");
    let outcome = toolgate_test(
        dir.path(),
        &[
            "--report",
            &format!("junit={}", xml.display()),
            "--report",
            &format!("json={}", json.display()),
        ],
        true,
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stdout);
    validate_against_junit_xsd(&xml);
    let text = fs::read_to_string(&xml).unwrap();
    let suite = text
        .lines()
        .find(|line| line.contains(r#"<testsuite name="review_status::accepted::approved""#))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        suite.contains(r#" timestamp=""#) && suite.contains(r#" hostname=""#),
        "{suite}"
    );
    assert!(
        text.contains(&format!(
            r#"<property name="toolgate" value="{}"/>"#,
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(
        text.contains(r#"<property name="contract_versions" value="v1, v2"/>"#),
        "{text}"
    );

    // JSON: every case and check with its status and time, and the run's mutant and lint counts.
    let report: Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(
        results.len() as u64,
        report["totals"]["cases"].as_u64().unwrap() + report["totals"]["checks"].as_u64().unwrap()
    );
    let approved = results
        .iter()
        .find(|result| result["name"] == "review_status::accepted::approved@v1")
        .unwrap();
    assert_eq!(approved["status"], "passed");
    assert_eq!(approved["kind"], "case");
    assert_eq!(approved["version"], "v1");
    assert!(approved["time_ms"].as_f64().unwrap() >= 0.0);
    let totals = &report["totals"];
    assert!(totals["mutants"].as_u64().unwrap() > 1000, "{totals}");
    assert_eq!(
        totals["survivors"], totals["survivors_accepted"],
        "{totals}"
    );
    assert_eq!(totals["lint_findings"], 1, "{totals}");
    assert_eq!(totals["lint_accepted"], 1, "{totals}");
}

#[test]
fn a_failing_mutant_trial_names_its_version_fixture_and_reproduce_command() {
    let dir = tree();
    // Forget why review_status's reviewer name admits any text: its survivor is unaccepted now.
    let survivors = dir.path().join("fixtures/review_status/survivors.yaml");
    let text = fs::read_to_string(&survivors).unwrap();
    let kept: String = text
        .split("\n- ")
        .filter(|entry| !entry.contains("canary_string"))
        .collect::<Vec<_>>()
        .join("\n- ");
    fs::write(&survivors, kept).unwrap();
    let outcome = toolgate_test(
        dir.path(),
        &["--format", "json", "review_status::mutants::canary_string"],
        true,
    );
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    let report: Value = serde_json::from_str(&outcome.stdout).unwrap();
    let failure = &report["failures"][0];
    assert_eq!(failure["name"], "review_status::mutants::canary_string@v1");
    assert_eq!(failure["version"], "v1");
    assert_eq!(failure["class"], "accepted");
    assert!(
        failure["fixture"]
            .as_str()
            .unwrap()
            .starts_with("fixtures/review_status/accepted/"),
        "{failure}"
    );
    assert!(
        failure["reproduce"]
            .as_str()
            .unwrap()
            .starts_with("toolgate mutate review_status --emit mutants && toolgate check review_status mutants/review_status/v1/accepted/"),
        "{failure}"
    );
}

/// A contract that does not compile is annotated at the line of `contract.yaml` at fault, as a
/// sidecar is, not on the run as a whole: the gate's compile errors keep their file and line
/// all the way to the report.
#[test]
fn a_contract_s_compile_error_is_annotated_at_its_file_and_line() {
    let dir = tree();
    let root = dir.path();
    let file = root.join("contracts/review_status/v2/contract.yaml");
    let text = fs::read_to_string(&file).unwrap();
    let line = text
        .lines()
        .position(|line| line.starts_with("direction:"))
        .unwrap()
        + 2;
    fs::write(
        &file,
        text.replacen(
            "direction: result\n",
            "direction: result\nsurprise_key: 1\n",
            1,
        ),
    )
    .unwrap();
    let outcome = toolgate_test(root, &["review_status", "--format", "github"], true);
    assert_eq!(outcome.code, 2, "{}", outcome.stdout);
    let expected = format!(
        "::error file={}/contracts/review_status/v2/contract.yaml,line={line},",
        root.display()
    );
    assert!(
        outcome
            .stdout
            .lines()
            .any(|annotation| annotation.starts_with(&expected)
                && annotation.contains("surprise_key")),
        "no annotation starting {expected}:\n{}",
        outcome.stdout
    );
}
