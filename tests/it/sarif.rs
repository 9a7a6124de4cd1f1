//! `--format sarif` of `toolgate test`, `lint` and `diff`, as GitHub code scanning reads it:
//! every log valid against the OASIS SARIF 2.1.0 schema (`tests/sarif-schema-2.1.0.json`,
//! checked with the gate's own validator, formats asserted), every result at a file and a start
//! line (code scanning refuses a result without one) under a rule the log declares, each finding
//! at the line it is about, and fingerprints that survive an edit that only moves lines.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::LazyLock;

use serde_json::Value;
use toolgate_gate::internals::{SchemaValidator, standalone_validator};

use crate::common::{repo_root, run, snapshot_env, tree};
use crate::reports::failing_tree;

/// The OASIS SARIF 2.1.0 schema, vendored unchanged from serde-sarif 0.8.0 (MIT), which took it
/// from oasis-tcs/sarif-spec, `Schemata/sarif-schema-2.1.0.json`.
static SARIF_SCHEMA: LazyLock<SchemaValidator> = LazyLock::new(|| {
    let text = fs::read_to_string(repo_root().join("tests/sarif-schema-2.1.0.json")).unwrap();
    standalone_validator(&serde_json::from_str(&text).unwrap()).unwrap()
});

/// `toolgate ARGS…` run in `dir` (no `--root`: files are named as in a checkout).
fn toolgate_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.current_dir(dir).args(args);
    snapshot_env(&mut command, true);
    let ran = run(command, b"");
    (ran.code, ran.stdout, ran.stderr)
}

/// The log, held to the schema and to what code scanning needs; its results.
fn valid_sarif(text: &str) -> Vec<Value> {
    let log: Value = serde_json::from_str(text).unwrap_or_else(|error| panic!("{error}: {text}"));
    let errors: Vec<String> = SARIF_SCHEMA
        .iter_errors(&log)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not SARIF 2.1.0: {errors:#?}\n{log:#}");
    assert_eq!(log["version"], "2.1.0");
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["tool"]["driver"]["name"], "toolgate");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["id"].as_str().unwrap())
        .collect();
    let results = run["results"].as_array().unwrap().clone();
    for result in &results {
        let rule = result["ruleId"].as_str().unwrap();
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index], rule, "{result:#}");
        let location = &result["locations"][0]["physicalLocation"];
        let uri = location["artifactLocation"]["uri"].as_str().unwrap();
        assert!(!uri.starts_with('/') && !uri.contains(".."), "{uri}");
        assert!(location["region"]["startLine"].as_u64().unwrap() >= 1);
        assert_eq!(
            result["partialFingerprints"]["toolgate/v1"]
                .as_str()
                .unwrap()
                .len(),
            64
        );
    }
    results
}

fn uri(result: &Value) -> &str {
    result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap()
}

fn line(result: &Value) -> usize {
    result["locations"][0]["physicalLocation"]["region"]["startLine"]
        .as_u64()
        .unwrap() as usize
}

/// The text of line `line` (1-based) of `file` under `dir`.
fn text_at(dir: &Path, file: &str, line: usize) -> String {
    fs::read_to_string(dir.join(file))
        .unwrap()
        .lines()
        .nth(line - 1)
        .unwrap()
        .to_owned()
}

#[test]
fn a_failing_test_run_puts_each_problem_at_its_file_and_line() {
    let dir = failing_tree();
    let (code, stdout, stderr) = toolgate_in(dir.path(), &["test", "--format", "sarif"]);
    assert_eq!(code, 2, "{stderr}");
    let results = valid_sarif(&stdout);
    let snapshot = results
        .iter()
        .find(|result| result["ruleId"] == "snapshot")
        .expect("the changed snapshot is a result");
    assert_eq!(
        uri(snapshot),
        "fixtures/review_status/accepted/approved.json"
    );
    let message = snapshot["message"]["text"].as_str().unwrap();
    assert!(message.contains("maria.silvia") && message.contains("reproduce: toolgate check"));
    assert!(
        results
            .iter()
            .any(|result| uri(result).starts_with("fixtures/job_status/near-miss/null_data")),
        "the broken sidecar is a result: {results:#?}"
    );
    assert!(results.iter().all(|result| result["level"] == "error"));

    // The same log as a file beside the human report; a passing run has no results.
    let (_, human, _) = toolgate_in(dir.path(), &["test", "--report", "sarif=toolgate.sarif"]);
    assert!(human.contains("FAILED"), "{human}");
    let written = fs::read_to_string(dir.path().join("toolgate.sarif")).unwrap();
    assert_eq!(valid_sarif(&written).len(), results.len());
    let clean = tree();
    let (code, stdout, _) = toolgate_in(clean.path(), &["test", "--format", "sarif"]);
    assert_eq!(code, 0);
    assert!(valid_sarif(&stdout).is_empty());
}

#[test]
fn lint_findings_sit_on_the_line_their_pointer_is_written_and_accepted_ones_are_suppressed() {
    let dir = tree();
    let (code, stdout, stderr) = toolgate_in(dir.path(), &["lint", "--format", "sarif"]);
    assert_eq!(code, 0, "{stderr}");
    let results = valid_sarif(&stdout);
    let accepted = results
        .iter()
        .find(|result| result["ruleId"] == "identifier_unbounded")
        .expect("close_ticket's accepted finding");
    assert_eq!(accepted["suppressions"][0]["kind"], "external");
    assert!(
        accepted["suppressions"][0]["justification"]
            .as_str()
            .unwrap()
            .contains("Ticket ids")
    );
    let file = uri(accepted);
    assert_eq!(file, "contracts/close_ticket/v1/proposal.schema.json");
    assert!(text_at(dir.path(), file, line(accepted)).contains("\"ticket_id\""));

    // Without its acceptance the finding fails the run, and is an error at the same place; the
    // acceptance list's absence leaves nothing stale.
    fs::remove_file(dir.path().join("contracts/close_ticket/lint.yaml")).unwrap();
    let (code, stdout, _) = toolgate_in(dir.path(), &["lint", "--format", "sarif"]);
    assert_eq!(code, 1);
    let results = valid_sarif(&stdout);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["level"], "error");
    assert!(results[0].get("suppressions").is_none());
    assert_eq!(line(&results[0]), line(accepted));
    assert_eq!(
        results[0]["partialFingerprints"],
        accepted["partialFingerprints"]
    );
}

#[test]
fn a_stale_acceptance_is_a_result_at_its_lint_yaml_line() {
    let dir = tree();
    let lint = dir.path().join("contracts/close_ticket/lint.yaml");
    let text = fs::read_to_string(&lint).unwrap();
    fs::write(
        &lint,
        text.replace("/properties/ticket_id", "/properties/nothing_here"),
    )
    .unwrap();
    let (code, stdout, _) = toolgate_in(dir.path(), &["lint", "--format", "sarif"]);
    assert_eq!(code, 1);
    let results = valid_sarif(&stdout);
    let stale = results
        .iter()
        .find(|result| result["ruleId"] == "stale_acceptance")
        .expect("the stale acceptance");
    assert_eq!(uri(stale), "contracts/close_ticket/lint.yaml");
    assert!(text_at(dir.path(), uri(stale), line(stale)).contains("rule:"));
}

#[test]
fn a_diff_verdict_sits_at_the_change_that_makes_it_and_fail_on_makes_it_an_error() {
    let dir = tree();
    let diff = |extra: &[&str]| {
        let mut args = vec!["diff", "job_status", "--format", "sarif"];
        args.extend(extra);
        toolgate_in(dir.path(), &args)
    };
    let (code, stdout, stderr) = diff(&["--fail-on", "breaking"]);
    assert_eq!(code, 1, "{stderr}");
    let results = valid_sarif(&stdout);
    let breaking = results
        .iter()
        .find(|result| result["ruleId"] == "upstream_breaking")
        .expect("the breaking verdict");
    assert_eq!(breaking["level"], "error");
    assert_eq!(
        uri(breaking),
        "contracts/job_status/v2/envelope.schema.json"
    );
    assert!(text_at(dir.path(), uri(breaking), line(breaking)).contains("\"state\""));
    let message = breaking["message"]["text"].as_str().unwrap();
    assert!(
        message.contains("enum_narrowed")
            && message.contains("v1 says admitted, v2 says rejected at schema (enum)"),
        "{message}"
    );
    let narrowed = results
        .iter()
        .find(|result| result["ruleId"] == "agent_narrowed")
        .expect("the narrowed verdict");
    assert_eq!(narrowed["level"], "warning");
    assert!(
        !results
            .iter()
            .any(|result| result["ruleId"] == "upstream_loosened"),
        "a verdict that does not hold is no result"
    );

    // Lines move; the alerts stay the same ones.
    let schema = dir
        .path()
        .join("contracts/job_status/v2/envelope.schema.json");
    let text = fs::read_to_string(&schema).unwrap();
    fs::write(&schema, format!("\n\n{text}")).unwrap();
    let (_, stdout, _) = diff(&[]);
    let moved = valid_sarif(&stdout);
    let moved_breaking = moved
        .iter()
        .find(|result| result["ruleId"] == "upstream_breaking")
        .unwrap();
    assert_eq!(moved_breaking["level"], "warning");
    assert_eq!(line(moved_breaking), line(breaking) + 2);
    assert_eq!(
        moved_breaking["partialFingerprints"],
        breaking["partialFingerprints"]
    );
}

#[test]
fn an_absolute_root_names_files_by_file_uri_and_a_relative_one_under_it() {
    let dir = failing_tree();
    let root = dir.path().to_str().unwrap().to_owned();
    let (_, stdout, _) = toolgate_in(
        Path::new("/"),
        &["test", "--root", &root, "--format", "sarif"],
    );
    let log: Value = serde_json::from_str(&stdout).unwrap();
    let first = uri(&log["runs"][0]["results"][0]).to_owned();
    assert!(first.starts_with("file:///"), "{first}");
    assert!(SARIF_SCHEMA.is_valid(&log));

    let parent = dir.path().parent().unwrap();
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    let (_, stdout, _) = toolgate_in(parent, &["lint", "--root", name, "--format", "sarif"]);
    let results = valid_sarif(&stdout);
    assert!(uri(&results[0]).starts_with(&format!("{name}/contracts/")));
}
