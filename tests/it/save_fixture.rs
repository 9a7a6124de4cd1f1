//! From a production rejection to a regression fixture in one command: `toolgate check …
//! --save-fixture CLASS/NAME` writes the raw bytes and a sidecar expecting what every version
//! decides, refuses to overwrite, and the suite passes with the new case after `--accept`.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{Run, run, toolgate_test, tree};

const COPPERHEAD: &str = r#"{"tool":"job_status","request_id":"req.J7q94MkP","outcome":"success","data":{"project_id":"copperhead","run_id":"run_8f3kQ2LmZx9T","state":"failed","observed_at":"2026-11-29T11:55:00Z"}}"#;

fn check(root: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .arg("check")
        .args(args)
        .arg("--root")
        .arg(root)
        .current_dir(root);
    run(command, stdin)
}

/// `toolgate check job_status` with the tool's own request file, saving the bytes as `target`.
fn save_job_status(root: &Path, target: &str, stdin: &[u8]) -> Run {
    check(
        root,
        &[
            "job_status",
            "--request",
            "fixtures/job_status/request.json",
            "--save-fixture",
            target,
        ],
        stdin,
    )
}

fn suite_passes_after_accept(root: &Path, case: &str) {
    assert_eq!(toolgate_test(root, &["--accept"], false).code, 0);
    let ci = toolgate_test(root, &["--format", "json"], true);
    assert_eq!(ci.code, 0, "{}", ci.stdout);
    let listed = toolgate_test(root, &["--list", case], true);
    assert!(
        listed
            .stdout
            .lines()
            .any(|line| line.starts_with(case) && line.ends_with(": test")),
        "{}",
        listed.stdout
    );
}

#[test]
fn a_production_rejection_becomes_a_near_miss_that_passes_the_suite() {
    let dir = tree();
    let root = dir.path();
    let saved = save_job_status(root, "near-miss/captured_copperhead", COPPERHEAD.as_bytes());
    assert_eq!(
        saved.code, 1,
        "rejected, as in production: {}",
        saved.stderr
    );
    assert!(saved.stdout.contains(r#""outcome":"failure""#));
    assert!(
        saved
            .stderr
            .contains("saved fixtures/job_status/near-miss/captured_copperhead.json"),
        "{}",
        saved.stderr
    );
    assert!(
        saved.stderr.contains("next: `toolgate test --accept`"),
        "{}",
        saved.stderr
    );
    let folder = root.join("fixtures/job_status/near-miss");
    assert_eq!(
        fs::read(folder.join("captured_copperhead.json")).unwrap(),
        COPPERHEAD.as_bytes(),
        "the bytes, exactly"
    );
    let sidecar = fs::read_to_string(folder.join("captured_copperhead.expect.yaml")).unwrap();
    assert!(
        sidecar.contains("expect: { outcome: rejected, layer: semantic, code: INVALID_RESPONSE, retryable: false, rule: \"project_binding\" }"),
        "{sidecar}"
    );
    assert!(
        !sidecar.contains("request:"),
        "the tool's default request file: {sidecar}"
    );
    assert!(
        !sidecar.contains("versions:"),
        "both versions reject it the same way: {sidecar}"
    );
    suite_passes_after_accept(root, "job_status::near-miss::captured_copperhead");

    // Never overwritten: the same name again is refused, and nothing changes.
    let again = save_job_status(root, "near-miss/captured_copperhead", b"{}");
    assert_eq!(again.code, 2);
    assert!(
        again
            .stderr
            .contains("a fixture called `captured_copperhead` exists already"),
        "{}",
        again.stderr
    );
    assert_eq!(
        fs::read(folder.join("captured_copperhead.json")).unwrap(),
        COPPERHEAD.as_bytes()
    );
}

#[test]
fn overrides_and_an_outside_request_file_are_recorded() {
    let dir = tree();
    let root = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let request = outside.path().join("prod-request.json");
    fs::write(
        &request,
        r#"{"request_id": "req.Other0001", "context": {"project_id": "bluebird", "runs": ["run_8f3kQ2LmZx9T"]}}"#,
    )
    .unwrap();
    let raw = outside.path().join("response.txt");
    fs::write(
        &raw,
        COPPERHEAD
            .replace("copperhead", "bluebird")
            .replace("req.J7q94MkP", "req.Other0001"),
    )
    .unwrap();
    let saved = check(
        root,
        &[
            "job_status",
            raw.to_str().unwrap(),
            "--request",
            request.to_str().unwrap(),
            "--now",
            "2026-11-29T12:00:00Z",
            "--save-fixture",
            "accepted/prod_capture",
        ],
        b"",
    );
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    let folder = root.join("fixtures/job_status");
    assert!(
        folder.join("accepted/prod_capture.txt").exists(),
        "the raw file keeps its extension"
    );
    assert_eq!(
        fs::read(folder.join("prod_capture.request.json")).unwrap(),
        fs::read(&request).unwrap()
    );
    let sidecar = fs::read_to_string(folder.join("accepted/prod_capture.expect.yaml")).unwrap();
    assert!(
        sidecar.contains("request: \"prod_capture.request.json\""),
        "{sidecar}"
    );
    assert!(
        sidecar.contains("now: \"2026-11-29T12:00:00Z\""),
        "{sidecar}"
    );
    assert!(
        sidecar.contains("expect: { outcome: admitted }"),
        "{sidecar}"
    );
    suite_passes_after_accept(root, "job_status::accepted::prod_capture");
}

#[test]
fn versions_that_decide_differently_are_recorded_per_version() {
    let dir = tree();
    let root = dir.path();
    let cancelled = COPPERHEAD
        .replace("copperhead", "bluebird")
        .replace("\"failed\"", "\"cancelled\"");
    // Checked against v1, which admits `cancelled`; v2 rejects it: an accepted fixture says both.
    let saved = check(
        root,
        &[
            "job_status",
            "--request",
            "fixtures/job_status/request.json",
            "--contract-version",
            "v1",
            "--save-fixture",
            "accepted/cancelled_capture",
        ],
        cancelled.as_bytes(),
    );
    assert_eq!(saved.code, 0, "{}", saved.stderr);
    let sidecar =
        fs::read_to_string(root.join("fixtures/job_status/accepted/cancelled_capture.expect.yaml"))
            .unwrap();
    assert!(sidecar.contains("expect_by_version:\n  v1: { outcome: admitted }\n  v2: { outcome: rejected, layer: schema"), "{sidecar}");
    // Checked against v2 as a near-miss: v1 admits it, so the fixture runs against v2 only.
    let saved = save_job_status(root, "near-miss/cancelled_refused", cancelled.as_bytes());
    assert_eq!(saved.code, 1, "{}", saved.stderr);
    let sidecar = fs::read_to_string(
        root.join("fixtures/job_status/near-miss/cancelled_refused.expect.yaml"),
    )
    .unwrap();
    assert!(sidecar.contains("versions: [v2]"), "{sidecar}");
    suite_passes_after_accept(root, "job_status::accepted::cancelled_capture");
}

#[test]
fn a_decision_that_does_not_fit_the_class_or_a_bad_target_is_refused() {
    let dir = tree();
    let root = dir.path();
    let admitted = COPPERHEAD.replace("copperhead", "bluebird");
    for (target, message) in [
        (
            "near-miss/not_a_miss",
            "the gate admitted it, so it is no `near-miss` fixture",
        ),
        (
            "duplicate-key/no_duplicate",
            "must be rejected as `duplicate_member`",
        ),
        ("accepted", "write CLASS/NAME"),
        ("rejected/x", "is not a fixture class"),
        ("accepted/../../escape", "a case name is letters, digits"),
        // The rule `toolgate test` reads case names by: no extension, no dot, no leading `_`.
        (
            "near-miss/x.json",
            "name the case without an extension (`near-miss/x`)",
        ),
        ("near-miss/v1.2", "a case name is letters, digits"),
        ("near-miss/_x", "a case name is letters, digits"),
    ] {
        let outcome = save_job_status(root, target, admitted.as_bytes());
        assert_eq!(outcome.code, 2, "{target}");
        assert!(
            outcome.stderr.contains(message),
            "{target}: {}",
            outcome.stderr
        );
    }
    assert!(
        !root
            .join("fixtures/job_status/near-miss/not_a_miss.json")
            .exists()
    );
}
