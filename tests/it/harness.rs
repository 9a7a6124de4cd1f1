//! The contract harness end to end, on temporary copies of the repository's fixture tree: both
//! `toolgate test` and the `cargo test` trial runner (tests/fixtures.rs) must catch drift, leakage,
//! a missing snapshot in CI, and every kind of broken structure.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::ci_example::git;
use crate::common::{Run, cargo_trials_command, copy, run, toolgate_test, tree};
use serde_json::Value;

use toolgate_gate::{Contract, ContractSource, Request};

/// `toolgate test --root <root> ...`.
fn cargo_trials(root: &Path, ci: bool) -> Run {
    run(cargo_trials_command(root, ci), b"")
}

fn assert_fails_with(run: &Run, code: i32, expected: &[&str]) {
    assert_eq!(
        run.code, code,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    for text in expected {
        assert!(
            run.stdout.contains(text),
            "missing {text:?} in:\n{}",
            run.stdout
        );
    }
}

#[test]
fn the_committed_tree_passes_both_runners_in_ci() {
    let dir = tree();
    let run = toolgate_test(dir.path(), &[], true);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("test result: ok."), "{}", run.stdout);
    let trials = cargo_trials(dir.path(), true);
    assert_eq!(trials.code, 0, "{}{}", trials.stdout, trials.stderr);
}

#[test]
fn one_changed_snapshot_byte_fails_both_with_a_diff() {
    let dir = tree();
    let snapshot = dir
        .path()
        .join("snapshots/job_status/accepted/failed_run@v1.snap");
    let text = fs::read_to_string(&snapshot).unwrap();
    fs::write(
        &snapshot,
        text.replacen("\"state\":\"failed\"", "\"state\":\"faileD\"", 1),
    )
    .unwrap();

    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED job_status::accepted::failed_run",
            "what the agent sees changed",
            "-    \"state\": \"faileD\"",
            "+    \"state\": \"failed\"",
            "toolgate test --accept",
        ],
    );
    let trials = cargo_trials(dir.path(), true);
    assert_ne!(trials.code, 0);
    assert!(
        trials.stdout.contains("job_status::accepted::failed_run")
            && trials.stdout.contains("+    \"state\": \"failed\""),
        "{}",
        trials.stdout
    );
    assert!(
        !snapshot.with_extension("snap.new").exists(),
        "CI never writes"
    );
}

#[test]
fn an_accepted_fixture_with_an_unpromised_field_fails_both() {
    let dir = tree();
    let accepted = dir.path().join("fixtures/review_status/accepted");
    fs::write(
        accepted.join("sneaky.json"),
        r#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{"change_id":"CR-1","decision":"approved","reviewed_by":"x","escalate_to":"root"}}"#,
    )
    .unwrap();
    fs::write(
        accepted.join("sneaky.expect.yaml"),
        "expect: { outcome: admitted }\n",
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED review_status::accepted::sneaky",
            "admitted, but the gate decided: rejected at schema, rule additionalProperties",
        ],
    );
    let trials = cargo_trials(dir.path(), true);
    assert_ne!(trials.code, 0);
    assert!(
        trials.stdout.contains("review_status::accepted::sneaky"),
        "{}",
        trials.stdout
    );
}

#[test]
fn a_deleted_snapshot_fails_in_ci_and_nothing_is_written() {
    let dir = tree();
    let snapshot = dir
        .path()
        .join("snapshots/close_ticket/near-miss/ticket_8_other_tenant@v1.snap");
    fs::remove_file(&snapshot).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "close_ticket::near-miss::ticket_8_other_tenant",
            "nothing is written in CI",
        ],
    );
    assert!(!snapshot.exists() && !snapshot.with_extension("snap.new").exists());
    assert_ne!(cargo_trials(dir.path(), true).code, 0);
    assert!(!snapshot.with_extension("snap.new").exists());
}

#[test]
fn locally_a_missing_snapshot_is_written_pending_and_accept_makes_it_the_truth() {
    let dir = tree();
    let snapshot = dir
        .path()
        .join("snapshots/close_ticket/near-miss/ticket_8_other_tenant@v1.snap");
    let committed = fs::read_to_string(&snapshot).unwrap();
    fs::remove_file(&snapshot).unwrap();
    let pending = snapshot.with_extension("snap.new");

    let run = toolgate_test(dir.path(), &[], false);
    assert_fails_with(
        &run,
        1,
        &["wrote snapshots/close_ticket/near-miss/ticket_8_other_tenant@v1.snap.new for review"],
    );
    assert_eq!(
        fs::read_to_string(&pending).unwrap(),
        committed,
        "the pending file is what would be committed"
    );
    assert!(
        insta::Snapshot::from_file(&pending).is_ok(),
        "cargo insta can read it"
    );

    let accepted = toolgate_test(dir.path(), &["--accept"], false);
    assert_eq!(accepted.code, 0, "{}", accepted.stdout);
    assert_eq!(fs::read_to_string(&snapshot).unwrap(), committed);
    assert!(!pending.exists(), "accepting clears the pending file");
    assert_eq!(toolgate_test(dir.path(), &[], true).code, 0);
}

#[test]
fn stale_snapshots_are_reported_and_accept_removes_them() {
    let dir = tree();
    let stale = dir
        .path()
        .join("snapshots/review_status/near-miss/removed_fixture@v1.snap");
    fs::copy(
        dir.path()
            .join("snapshots/review_status/near-miss/null_data@v1.snap"),
        &stale,
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED review_status::snapshots",
            "removed_fixture@v1.snap: no fixture produces this snapshot",
        ],
    );

    let loose = dir.path().join("snapshots/no_such_tool/accepted/x@v1.snap");
    fs::create_dir_all(loose.parent().unwrap()).unwrap();
    fs::write(&loose, "---\n---\n{}\n").unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED suite::stale_snapshots",
            "snapshots/no_such_tool/accepted/x@v1.snap: no fixture produces this snapshot",
        ],
    );

    assert_eq!(toolgate_test(dir.path(), &["--accept"], false).code, 0);
    assert!(!stale.exists() && !loose.exists());
}

#[test]
fn structure_problems_name_their_path_and_the_run_goes_on() {
    let dir = tree();
    let fixtures = dir.path().join("fixtures");
    fs::create_dir_all(fixtures.join("review_status/accepted-ish")).unwrap();
    fs::create_dir_all(fixtures.join("no_such_tool/accepted")).unwrap();
    fs::write(fixtures.join("job_status/near-miss/orphan.json"), "{}").unwrap();
    fs::write(fixtures.join("job_status/near-miss/broken.json"), "{}").unwrap();
    fs::write(
        fixtures.join("job_status/near-miss/broken.expect.yaml"),
        "expect: { outcome: rejected, layer: schema\n",
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        2,
        &[
            "fixtures/review_status/accepted-ish: unknown fixture class folder `accepted-ish`",
            "fixtures/no_such_tool: fixtures for tool `no_such_tool`, which has no contract",
            "fixtures/job_status/near-miss/orphan.json: a raw fixture without its sidecar orphan.expect.yaml",
            "FAILED job_status::near-miss::broken",
            "fixtures/job_status/near-miss/broken.expect.yaml:",
            "166 of 167 cases passed",
        ],
    );
}

#[test]
fn a_sidecar_with_an_incomplete_expectation_fails_its_own_case() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/near-miss/impossible_date.expect.yaml");
    fs::write(&sidecar, "expect: { outcome: rejected, layer: schema }\n").unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        2,
        &[
            "FAILED job_status::near-miss::impossible_date",
            "needs `layer`, `code` and `retryable`",
        ],
    );
}

#[test]
fn an_expectation_at_the_wrong_layer_fails() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/review_status/duplicate-key/decision_nested.expect.yaml");
    let text = fs::read_to_string(&sidecar).unwrap();
    fs::write(
        &sidecar,
        text.replace(
            "layer: parse, rule: duplicate_member",
            "layer: parse, rule: syntax",
        ),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "rejected at parse, rule syntax",
            "but the gate decided: rejected at parse, rule duplicate_member",
        ],
    );
}

#[test]
fn finding_zero_fixtures_fails() {
    let dir = tree();
    fs::remove_dir_all(dir.path().join("fixtures")).unwrap();
    fs::create_dir_all(dir.path().join("fixtures")).unwrap();
    fs::remove_dir_all(dir.path().join("snapshots")).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_ne!(run.code, 0);
    assert!(
        run.stdout.contains("found no fixtures at all"),
        "{}",
        run.stdout
    );
}

#[test]
fn coverage_names_a_missing_class_and_tool() {
    let dir = tree();
    fs::remove_dir_all(dir.path().join("fixtures/release_status/legacy")).unwrap();
    fs::remove_dir_all(dir.path().join("snapshots/release_status/legacy")).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED release_status::coverage",
            "tool `release_status` has no fixture in fixtures/release_status/legacy/, and its contract still admits legacy shapes (bare_release)",
        ],
    );
}

#[test]
fn the_obvious_near_misses_are_proven_by_mutants_of_the_newest_version() {
    let dir = tree();
    // v2 opens the run object and lets `state` be any string: v1 stays closed.
    let v2 = dir.path().join("contracts/job_status/v2");
    copy(&dir.path().join("contracts/job_status/v1"), &v2);
    let contract = fs::read_to_string(v2.join("contract.yaml")).unwrap();
    fs::write(
        v2.join("contract.yaml"),
        contract.replace("version: 1", "version: 2"),
    )
    .unwrap();
    let schema = fs::read_to_string(v2.join("envelope.schema.json")).unwrap();
    let opened = schema.replacen(
        "\"state\": { \"enum\": [\"failed\", \"running\", \"succeeded\", \"cancelled\"] },",
        "\"state\": { \"type\": \"string\" },",
        1,
    );
    let opened = opened.replacen(
        "      },\n      \"additionalProperties\": false\n    }\n  }\n}",
        "      }\n    }\n  }\n}",
        1,
    );
    assert_ne!(opened, schema, "the test must actually open the schema");
    fs::write(v2.join("envelope.schema.json"), opened).unwrap();
    let run = toolgate_test(dir.path(), &["job_status::coverage"], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED job_status::coverage",
            "v2: mutant extra_property at /data (added member `toolgate_unpromised_1` carrying a canary), derived from 5 of 6 accepted fixtures",
            // No promised field reads /data whole: the added member is upstream drift.
            "admitted where no promised field reads (upstream drift)",
            "declare the place with `tolerate:`",
            "v2: mutant oversized_string at /data/state",
            "no maxLength bounds it, only the byte limit",
            // `state` is promised: the agent sees it.
            "admitted where the agent sees it: the contract does not reject this obvious near-miss",
        ],
    );
    assert!(!run.stdout.contains("v1: mutant"), "{}", run.stdout);
}

#[test]
fn a_coverage_claim_in_a_sidecar_is_refused_not_believed() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/near-miss/null_data.expect.yaml");
    let text = fs::read_to_string(&sidecar).unwrap();
    fs::write(
        &sidecar,
        format!("{text}covers: [null_for_object, duplicate_escaped]\n"),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        2,
        &["null_data.expect.yaml:", "covers: is no longer read"],
    );
}

#[test]
fn changing_a_locked_contract_version_fails() {
    let dir = tree();
    let contract = dir.path().join("contracts/review_status/v1/contract.yaml");
    let text = fs::read_to_string(&contract).unwrap();
    fs::write(
        &contract,
        text.replace("max_attempts: 2", "max_attempts: 3"),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &["--accept"], false);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED suite::contract_lock",
            "contracts/review_status/v1 changed after it was published",
        ],
    );
}

#[test]
fn a_legacy_fixture_must_match_its_twin() {
    let dir = tree();
    let raw = dir
        .path()
        .join("fixtures/release_status/legacy/bare_degraded_production.json");
    let text = fs::read_to_string(&raw).unwrap();
    fs::write(&raw, text.replace("\"degraded\"", "\"healthy\"")).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &run,
        1,
        &[
            "the agent bytes differ from those of its current-shape twin release_status::accepted::degraded_production",
        ],
    );
}

#[test]
fn json_and_junit_reports_are_machine_readable() {
    let dir = tree();
    let run = toolgate_test(dir.path(), &["--format", "json"], true);
    assert_eq!(run.code, 0);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["totals"]["cases"], 166);
    assert_eq!(
        report["tools"]["release_status"]["legacy"]["outcomes"]["admitted"],
        2
    );
    assert_eq!(report["failures"], Value::Array(Vec::new()));

    fs::write(
        dir.path()
            .join("snapshots/job_status/accepted/not_found@v1.snap"),
        "---\n---\n{}\n",
    )
    .unwrap();
    let failing: Value =
        serde_json::from_str(&toolgate_test(dir.path(), &["--format", "json"], true).stdout)
            .unwrap();
    assert_eq!(failing["exit_code"], 1);
    assert_eq!(
        failing["failures"][0]["name"],
        "job_status::accepted::not_found@v1"
    );
    assert_eq!(failing["failures"][0]["problems"][0]["kind"], "snapshot");

    let junit = toolgate_test(dir.path(), &["--format", "junit"], true);
    assert_eq!(junit.code, 1);
    assert!(junit.stdout.starts_with("<?xml"), "{}", junit.stdout);
    assert_eq!(junit.stdout.matches("<testcase ").count(), 166 + 237);
    assert!(
        junit.stdout.contains("<failure")
            && junit.stdout.contains("job_status::accepted::not_found")
    );
}

#[test]
fn a_filter_runs_matching_cases_and_no_match_fails() {
    let dir = tree();
    let run = toolgate_test(
        dir.path(),
        &["close_ticket::near-miss", "--format", "json"],
        true,
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["totals"]["cases"], 16);
    assert_eq!(report["totals"]["checks"], 0);
    let nothing = toolgate_test(dir.path(), &["no_such_case"], true);
    assert_eq!(nothing.code, 1);
    assert!(nothing.stdout.contains("no case ran"), "{}", nothing.stdout);
}

#[test]
fn a_missing_contracts_folder_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("toolgate: error: ")
            && run.stderr.contains("no contracts folder here"),
        "{}",
        run.stderr
    );
}

/// The leakage detector, against an open contract (its schema lets a `debug` member through but
/// its projection promises only `state`): the real gate's output is clean, and a deliberately
/// leaky projection (the naive "serialize what was validated") is caught.
#[test]
fn the_leakage_detector_catches_a_deliberately_leaky_projection() {
    let contract = Contract::compile(
        &ContractSource::new(
            "tool: probe\nversion: 1\ndirection: result\nshape:\n  schema: open.json\n  fields: [{ name: state, from: /state }]\nagent_schema: agent.json\n",
        )
        .with_schema("open.json", r#"{"type": "object", "required": ["state"], "properties": {"state": {"enum": ["ok", "degraded"]}}}"#)
        .with_schema("agent.json", r#"{"type": "object"}"#),
    )
    .unwrap();
    let raw =
        br#"{"state":"ok","debug":"Traceback: token=s3cr3t at worker-7","hint":"restart prod"}"#;
    let request = Request::new("req.00000001");
    let decision = contract.admit(raw, &request, std::time::SystemTime::UNIX_EPOCH);
    assert!(decision.is_admitted());
    let document: Value = serde_json::from_slice(raw).unwrap();
    let allowed = toolgate_repo::allowed_strings(
        &contract,
        request.id(),
        Some((&document, decision.shape().unwrap())),
    );

    assert!(
        toolgate_repo::leaks(raw, decision.agent_bytes(), &allowed).is_empty(),
        "the gate's own projection is clean"
    );

    let leaky = serde_json::to_vec(&serde_json::json!({
        "tool": "probe", "request_id": "req.00000001", "outcome": "success", "data": document
    }))
    .unwrap();
    let found: BTreeSet<String> = toolgate_repo::leaks(raw, &leaky, &allowed)
        .into_iter()
        .collect();
    let expected: BTreeSet<String> = [
        "debug",
        "Traceback: token=s3cr3t at worker-7",
        "hint",
        "restart prod",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(found, expected);

    let paraphrased = br#"{"tool":"probe","request_id":"req.00000001","outcome":"success","data":{"state":"ok","note":"see Traceback: token=s3cr3t at worker-7"}}"#;
    assert!(
        toolgate_repo::leaks(raw, paraphrased, &allowed)
            .contains(&"Traceback: token=s3cr3t at worker-7".to_owned())
    );
}

#[test]
fn a_new_contract_version_runs_every_fixture_against_both_versions() {
    let dir = tree();
    let contracts = dir.path().join("contracts/close_ticket");
    copy(&contracts.join("v1"), &contracts.join("v2"));
    let contract = contracts.join("v2/contract.yaml");
    fs::write(
        &contract,
        fs::read_to_string(&contract)
            .unwrap()
            .replace("version: 1", "version: 2"),
    )
    .unwrap();

    let first = toolgate_test(dir.path(), &[], true);
    assert_fails_with(
        &first,
        1,
        &[
            "close_ticket v2 is not locked (contracts/contracts.lock has no entry for it): review `toolgate diff close_ticket v1 v2`, then lock it with `toolgate test --accept`",
            "close_ticket::accepted::ticket_7@v2",
            "FAILED close_ticket::lint",
            "v2 proposal.schema.json#/properties/ticket_id [identifier_unbounded]",
        ],
    );
    // The lint finding v1 accepts is v2's too, and an acceptance names its versions.
    let accepted = dir.path().join("contracts/close_ticket/lint.yaml");
    let text = fs::read_to_string(&accepted).unwrap();
    fs::write(
        &accepted,
        text.replace("versions: [v1]", "versions: [v1, v2]"),
    )
    .unwrap();
    assert_eq!(toolgate_test(dir.path(), &["--accept"], false).code, 0);
    assert!(
        dir.path()
            .join("snapshots/close_ticket/accepted/ticket_7@v2.snap")
            .exists()
    );
    assert!(
        fs::read_to_string(dir.path().join("contracts/contracts.lock"))
            .unwrap()
            .contains("close_ticket v2 sha256:")
    );

    let report: Value =
        serde_json::from_str(&toolgate_test(dir.path(), &["--format", "json"], true).stdout)
            .unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["totals"]["cases"], 166 + 24);
    let trials = cargo_trials(dir.path(), true);
    assert_eq!(trials.code, 0, "{}", trials.stdout);
    assert!(
        trials
            .stdout
            .contains("close_ticket::near-miss::array_proposal@v1")
            && trials
                .stdout
                .contains("close_ticket::near-miss::array_proposal@v2"),
        "{}",
        trials.stdout
    );
}

/// The bundled tree with review_status v3, a copy of v2 not yet locked.
fn tree_with_review_status_v3() -> tempfile::TempDir {
    let dir = tree();
    let root = dir.path();
    copy(
        &root.join("contracts/review_status/v2"),
        &root.join("contracts/review_status/v3"),
    );
    let contract = root.join("contracts/review_status/v3/contract.yaml");
    let text = fs::read_to_string(&contract).unwrap();
    fs::write(&contract, text.replace("version: 2", "version: 3")).unwrap();
    dir
}

#[test]
fn accept_with_a_filter_locks_the_new_versions_of_the_tools_it_accepted_and_says_so() {
    let dir = tree_with_review_status_v3();
    let root = dir.path();
    let lock = root.join("contracts/contracts.lock");

    // Another tool's filter: review_status v3 stays unlocked, and the note says the lock was not
    // checked and which command does it.
    let other = toolgate_test(root, &["--accept", "close_ticket"], false);
    assert!(
        !fs::read_to_string(&lock)
            .unwrap()
            .contains("review_status v3")
    );
    assert!(
        other.stdout.contains("--accept with a filter: no new version of the tools accepted (close_ticket) to lock; contracts/contracts.lock was not checked: `toolgate test --accept` with no filter checks it"),
        "{}",
        other.stdout
    );

    // A filter whose run fails for the tool (v3 makes a survivor acceptance stale) locks
    // nothing of it, and says why.
    let before = fs::read_to_string(&lock).unwrap();
    let failing = toolgate_test(root, &["--accept", "review_status"], false);
    assert_eq!(fs::read_to_string(&lock).unwrap(), before);
    assert!(
        failing.stdout.contains("review_status's new versions are not locked: its suite fails in this run (`review_status::mutants::"),
        "{}",
        failing.stdout
    );
    // The tool's accepted cases alone pass: that filter locks its new version, and only that.
    let accepted = toolgate_test(root, &["--accept", "review_status::accepted"], false);
    let after = fs::read_to_string(&lock).unwrap();
    let added: Vec<&str> = after
        .lines()
        .filter(|line| !before.lines().any(|old| old == *line))
        .collect();
    assert_eq!(
        after.lines().count(),
        before.lines().count() + 1,
        "entries are only added"
    );
    assert_eq!(added.len(), 1, "{added:?}");
    assert!(
        added[0].starts_with("review_status v3 sha256:"),
        "{added:?}"
    );
    assert!(
        accepted.stdout.contains(
            "--accept with a filter: locked review_status v3 in contracts/contracts.lock"
        ),
        "{}",
        accepted.stdout
    );
    // And the repository's lock check, run in CI, finds nothing to say.
    let ci = toolgate_test(root, &["--format", "json"], true);
    let report: Value = serde_json::from_str(&ci.stdout).unwrap();
    let failing: Vec<&str> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|failure| failure["name"].as_str().unwrap())
        .collect();
    assert!(!failing.contains(&"suite::contract_lock"), "{failing:?}");
}

#[test]
fn a_long_run_in_a_ci_log_shows_life_and_names_its_slowest_tools() {
    let dir = tree();
    // Ten seconds between lines by default; a twentieth of one here, so the bundled suite is a
    // long run.
    let mut command =
        crate::common::toolgate_test_command(dir.path(), &["--format", "github"], true);
    command.env("TOOLGATE_PROGRESS_EVERY", "0.05");
    let long = run(command, b"");
    assert_eq!(long.code, 0, "{}{}", long.stdout, long.stderr);
    let lines: Vec<&str> = long.stderr.lines().collect();
    assert!(
        !lines.is_empty(),
        "progress lines on stderr: {}",
        long.stderr
    );
    for line in &lines {
        // `toolgate: 120 cases, 2/4 tools, 300 cases/s, about 1 s left`
        assert!(
            line.starts_with("toolgate: ") && line.contains(" cases") && line.contains(" tools"),
            "{line}"
        );
    }
    let report: Vec<&str> = long.stdout.lines().collect();
    let slowest = report[report.len() - 2];
    assert!(slowest.starts_with("slowest tools: "), "{}", long.stdout);
    assert_eq!(
        slowest.matches(" s").count(),
        4,
        "every bundled tool: {slowest}"
    );
    assert!(report[report.len() - 1].starts_with("toolgate test: ok."));

    // 0: no lines, and a run this short names no slowest tools.
    let mut command = crate::common::toolgate_test_command(dir.path(), &[], true);
    command.env("TOOLGATE_PROGRESS_EVERY", "0");
    let quiet = run(command, b"");
    assert_eq!(quiet.code, 0);
    assert_eq!(quiet.stderr, "");
    assert!(!quiet.stdout.contains("slowest tools"), "{}", quiet.stdout);

    // Not a number: a warning naming the setting, and the run goes on.
    let mut command = crate::common::toolgate_test_command(dir.path(), &[], true);
    command.env("TOOLGATE_PROGRESS_EVERY", "soon");
    let warned = run(command, b"");
    assert_eq!(warned.code, 0);
    assert!(
        warned
            .stderr
            .starts_with("toolgate: warning: TOOLGATE_PROGRESS_EVERY must be a number of seconds"),
        "{}",
        warned.stderr
    );
}

#[test]
fn a_filtered_run_reports_only_the_tools_it_selected() {
    let dir = tree();
    let filtered = toolgate_test(dir.path(), &["job_status"], true);
    assert_eq!(filtered.code, 0, "{}", filtered.stdout);
    assert!(
        filtered.stdout.starts_with("toolgate test: 1 tool, "),
        "{}",
        filtered.stdout
    );
    assert!(
        filtered.stdout.contains("\n  job_status "),
        "{}",
        filtered.stdout
    );
    for other in ["review_status", "release_status", "close_ticket"] {
        assert!(
            !filtered.stdout.contains(other),
            "{other}: {}",
            filtered.stdout
        );
    }
    let whole = toolgate_test(dir.path(), &[], true);
    assert!(
        whole.stdout.starts_with("toolgate test: 4 tools, "),
        "{}",
        whole.stdout
    );
    assert!(
        whole.stdout.contains("\n  close_ticket "),
        "{}",
        whole.stdout
    );
}

/// A new version `v<N+1>` of `tool`, a copy of `v<N>`.
fn copy_version(root: &Path, tool: &str, from: u32) {
    let to = from + 1;
    copy(
        &root.join(format!("contracts/{tool}/v{from}")),
        &root.join(format!("contracts/{tool}/v{to}")),
    );
    let contract = root.join(format!("contracts/{tool}/v{to}/contract.yaml"));
    let text = fs::read_to_string(&contract).unwrap();
    fs::write(
        &contract,
        text.replace(&format!("version: {from}"), &format!("version: {to}")),
    )
    .unwrap();
}

#[test]
fn two_branches_that_each_lock_a_new_version_merge_without_a_conflict() {
    let dir = tree();
    let root = dir.path();
    // A repository of contracts with no attributes file yet: `--accept` writes it.
    fs::remove_file(root.join("contracts/.gitattributes")).unwrap();
    git(root, &["init", "--quiet"]);
    git(root, &["add", "--all"]);
    git(root, &["commit", "--quiet", "-m", "contracts"]);
    for (branch, tool, from) in [
        ("bump-review", "review_status", 2),
        ("bump-job", "job_status", 2),
    ] {
        git(root, &["checkout", "--quiet", "-b", branch, "main"]);
        copy_version(root, tool, from);
        let accepted = toolgate_test(root, &["--accept", &format!("{tool}::accepted")], false);
        assert!(
            accepted
                .stdout
                .contains(&format!("locked {tool} v3 in contracts/contracts.lock")),
            "{}",
            accepted.stdout
        );
        git(root, &["add", "--all"]);
        git(root, &["commit", "--quiet", "-m", branch]);
    }
    assert!(
        fs::read_to_string(root.join("contracts/.gitattributes"))
            .unwrap()
            .contains("contracts.lock merge=union")
    );
    git(root, &["checkout", "--quiet", "bump-review"]);
    git(root, &["merge", "--quiet", "--no-edit", "bump-job"]);
    let lock = fs::read_to_string(root.join("contracts/contracts.lock")).unwrap();
    for entry in ["review_status v3 sha256:", "job_status v3 sha256:"] {
        assert!(lock.contains(entry), "{lock}");
    }
    let ci = toolgate_test(root, &["--format", "json"], true);
    let report: Value = serde_json::from_str(&ci.stdout).unwrap();
    let lock_failures: Vec<&Value> = report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|failure| failure["name"] == "suite::contract_lock")
        .collect();
    assert!(lock_failures.is_empty(), "{lock_failures:?}");
}

#[test]
fn a_version_locked_twice_with_two_digests_names_both_lines() {
    let dir = tree();
    let lock = dir.path().join("contracts/contracts.lock");
    let text = fs::read_to_string(&lock).unwrap();
    // What a union merge leaves when two branches each published their own job_status v2.
    fs::write(
        &lock,
        format!("{text}job_status v2 sha256:{}\n", "0".repeat(64)),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    let line = text.lines().count() + 1;
    assert_fails_with(
        &run,
        1,
        &[&format!(
            "contracts/contracts.lock:{line}: job_status v2 is locked twice, with another digest than at line"
        )],
    );
}

#[test]
fn a_filtered_run_in_ci_still_refuses_an_unlocked_version_of_the_tool_it_tests() {
    let dir = tree();
    copy_version(dir.path(), "review_status", 2);
    let run = toolgate_test(dir.path(), &["review_status::accepted"], true);
    assert_fails_with(
        &run,
        1,
        &[
            "FAILED suite::contract_lock",
            "review_status v3 is not locked",
        ],
    );
    // Another tool's run does not hear of it.
    let other = toolgate_test(dir.path(), &["close_ticket"], true);
    assert_eq!(other.code, 0, "{}", other.stdout);
    // An unfiltered --accept says what it locked.
    let accepted = toolgate_test(
        dir.path(),
        &["--accept", "--skip", "review_status::mutants"],
        false,
    );
    assert!(
        accepted
            .stdout
            .contains("locked review_status v3 in contracts/contracts.lock"),
        "{}",
        accepted.stdout
    );
}

/// A comment a reviewer wrote in the lock stays where it was, above its entry, when
/// `--accept` rewrites the lock sorted; one after the last entry stays last.
#[test]
fn accept_keeps_the_comments_written_in_the_lock() {
    let dir = tree_with_review_status_v3();
    let root = dir.path();
    let lock = root.join("contracts/contracts.lock");
    let before = fs::read_to_string(&lock).unwrap();
    let release = before
        .lines()
        .find(|line| line.starts_with("release_status v1 "))
        .unwrap()
        .to_owned();
    let commented = before.replace(
        &release,
        &format!("# release_status v1: reviewed by ana (PR 41)\n{release}"),
    ) + "# end of the lock\n";
    fs::write(&lock, &commented).unwrap();
    toolgate_test(root, &["--accept", "review_status::accepted"], false);
    let after = fs::read_to_string(&lock).unwrap();
    assert!(after.contains("review_status v3 sha256:"), "{after}");
    assert!(
        after.contains(&format!(
            "# release_status v1: reviewed by ana (PR 41)\n{release}\n"
        )),
        "{after}"
    );
    assert!(after.ends_with("# end of the lock\n"), "{after}");
}
