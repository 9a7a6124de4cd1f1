//! Real APIs, as nobody here designed them (tests/corpora/real-apis/SOURCES.md): Stripe's
//! PaymentIntent (a nullable object, a merchant's map) and GitHub's pull request (members GitHub
//! adds without notice, its own 404). The two contracts finished by hand pass `lint`, `mutate`
//! and `test` alike; `toolgate new` scaffolds GitHub's operations and Stripe's samples into
//! contracts whose suite passes with no hand edit.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{Run, copy, run, snapshot_env};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/real-apis")
}

fn toolgate(root: &Path, args: &[&str], ci: bool) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(args).arg("--root").arg(root);
    snapshot_env(&mut command, ci);
    run(command, b"")
}

fn assert_code(run: &Run, code: i32, what: &str) {
    assert_eq!(
        run.code, code,
        "{what}\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
}

#[test]
fn the_real_api_contracts_pass_lint_mutate_and_test_alike() {
    let dir = tempfile::tempdir().unwrap();
    copy(&corpus().join("repo"), dir.path());
    assert_code(&toolgate(dir.path(), &["lint"], true), 0, "lint");
    assert_code(&toolgate(dir.path(), &["test"], true), 0, "test");
    let mutate = toolgate(dir.path(), &["mutate", "--format", "json"], true);
    assert_code(&mutate, 0, "mutate");
    let report: Value = serde_json::from_str(&mutate.stdout).unwrap();
    crate::common::assert_matches_schema("mutate-report", &report);
    assert_eq!(report["summary"]["leaks"], 0);
    let survivors = report["survivors"].as_array().unwrap();
    let survived = |mutation: &str, pointer: &str| {
        survivors
            .iter()
            .any(|survivor| survivor["mutation"] == mutation && survivor["pointer"] == pointer)
    };
    // Declared, not near-misses: null where Stripe says null, a tolerated member where GitHub
    // adds them. A map value of the wrong type is a near-miss, and refused.
    assert!(!survived("null_for_object", "/last_payment_error"));
    assert!(!survived("extra_property", "/metadata"));
    assert!(!survived("extra_property", ""));
    assert!(!survived("extra_property", "/head"));
    // A map's key is data: `order_id` names no identifier there.
    assert!(!survived("empty_identifier", "/metadata/order_id"));
    // Every survivor the agent could see is accepted one by one; none is, here.
    assert!(
        survivors
            .iter()
            .all(|survivor| survivor["projected"] == false && survivor["accepted"] == true),
        "{report:#}"
    );
}

#[test]
fn a_github_404_reaches_the_agent_as_not_found_and_a_tolerated_addition_never_does() {
    let dir = tempfile::tempdir().unwrap();
    copy(&corpus().join("repo"), dir.path());
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args([
            "check",
            "pull_request",
            "--request",
            "fixtures/pull_request/request.json",
            "--upstream-status",
            "404",
        ])
        .current_dir(dir.path());
    snapshot_env(&mut command, true);
    let not_found = run(
        command,
        br#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#,
    );
    assert_code(
        &not_found,
        1,
        "a 404 is a rejection the agent reads as NOT_FOUND",
    );
    assert_eq!(
        not_found.stdout.trim(),
        r#"{"tool":"pull_request","request_id":"req.00000000","outcome":"failure","error":{"code":"NOT_FOUND","retryable":false}}"#
    );
    let added = fs::read_to_string(
        dir.path()
            .join("snapshots/pull_request/accepted/with_members_github_added@v1.snap"),
    )
    .unwrap();
    assert!(
        !added.contains("squash") && !added.contains("protected_hint"),
        "{added}"
    );
}

/// GitHub's `repos/get-all-topics`: a required list of strings is a field to promise, each item
/// bounded (it was refused as naming no member); the suite passes with no hand edit, and lint
/// finds nothing open.
#[test]
fn a_required_list_of_strings_is_scaffolded_as_a_bounded_list_field() {
    let dir = tempfile::tempdir().unwrap();
    let spec = corpus().join("github/topics.openapi.json");
    let new = toolgate(
        dir.path(),
        &[
            "new",
            "topics",
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            "repos/get-all-topics",
        ],
        true,
    );
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    let contract =
        fs::read_to_string(dir.path().join("contracts/topics/v1/contract.yaml")).unwrap();
    let contract: Value = toolgate_gate::internals::read_strict_yaml(&contract).unwrap();
    assert_eq!(
        contract["shape"]["fields"][0],
        serde_json::json!({"name": "names", "from": "/names", "each": [{"name": "value", "from": ""}]})
    );
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(dir.path().join("contracts/topics/v1/response.schema.json")).unwrap(),
    )
    .unwrap();
    let names = &schema["$defs"]["topic"]["properties"]["names"];
    assert!(
        names["maxItems"].is_u64() && names["items"]["maxLength"].is_u64(),
        "{schema:#}"
    );
    assert_code(
        &toolgate(dir.path(), &["test", "--accept", "topics"], false),
        0,
        "accept",
    );
    assert_code(&toolgate(dir.path(), &["test", "topics"], true), 0, "CI");
    assert_code(&toolgate(dir.path(), &["lint", "topics"], true), 0, "lint");
}

#[test]
fn toolgate_new_scaffolds_github_operations_whose_suite_passes_with_no_hand_edit() {
    let dir = tempfile::tempdir().unwrap();
    let spec = corpus().join("github/pulls.openapi.json");
    let spec = spec.to_str().unwrap();
    for (tool, operation) in [("pulls_get", "pulls/get"), ("pulls_list", "pulls/list")] {
        let new = toolgate(
            dir.path(),
            &[
                "new",
                tool,
                "--from-openapi",
                spec,
                "--operation",
                operation,
            ],
            true,
        );
        assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
        assert!(new.stdout.contains(&format!("toolgate new: wrote {tool}")));
        assert_code(
            &toolgate(dir.path(), &["test", "--accept", tool], false),
            0,
            "accept",
        );
        assert_code(&toolgate(dir.path(), &["test", tool], true), 0, "CI");
    }
    let contract =
        fs::read_to_string(dir.path().join("contracts/pulls_get/v1/contract.yaml")).unwrap();
    assert!(contract.starts_with(
        "# Scaffolded by `toolgate new` from pulls.openapi.json, operation pulls/get."
    ));
    assert!(
        contract.contains("#   /$defs/"),
        "every assumption is listed"
    );
    let contract: Value = toolgate_gate::internals::read_strict_yaml(&contract).unwrap();
    assert_eq!(
        contract["upstream_errors"][0],
        serde_json::json!({"name": "not_found", "status": [404], "code": "NOT_FOUND"})
    );
    let list =
        fs::read_to_string(dir.path().join("contracts/pulls_list/v1/contract.yaml")).unwrap();
    let listed: Value = toolgate_gate::internals::read_strict_yaml(&list).unwrap();
    let items = &listed["shape"]["fields"][0];
    assert!(
        items["name"] == "items" && items["from"] == "" && items["each"].is_array(),
        "{list}"
    );
    let request: Value = serde_json::from_str(
        &fs::read_to_string(dir.path().join("fixtures/pulls_get/request.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        request["context"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["owner", "pull_number", "repo"]
    );
    // Never over an existing contract.
    let again = toolgate(
        dir.path(),
        &[
            "new",
            "pulls_get",
            "--from-openapi",
            spec,
            "--operation",
            "pulls/get",
        ],
        true,
    );
    assert_code(&again, 2, "a second scaffold");
    assert!(
        again
            .stderr
            .contains("already exists; `toolgate new` never overwrites a contract")
    );
    // An unknown operation names the near ones.
    let unknown = toolgate(
        dir.path(),
        &[
            "new",
            "x",
            "--from-openapi",
            spec,
            "--operation",
            "pulls/gett",
        ],
        true,
    );
    assert_code(&unknown, 2, "an unknown operation");
    assert!(
        unknown
            .stderr
            .contains("did you mean pulls/list, pulls/get?")
            || unknown
                .stderr
                .contains("did you mean pulls/get, pulls/list?"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn toolgate_new_from_samples_infers_a_schema_every_sample_fits() {
    let dir = tempfile::tempdir().unwrap();
    let samples: Vec<String> = [
        "requires_payment_method.json",
        "succeeded_with_metadata.json",
        "card_declined.json",
    ]
    .iter()
    .map(|name| corpus().join("stripe").join(name).display().to_string())
    .collect();
    let mut args = vec!["new", "payment_intent", "--from-sample"];
    args.extend(samples.iter().map(String::as_str));
    let new = toolgate(dir.path(), &args, true);
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    assert_code(
        &toolgate(dir.path(), &["test", "--accept", "payment_intent"], false),
        0,
        "accept",
    );
    assert_code(
        &toolgate(dir.path(), &["test", "payment_intent"], true),
        0,
        "CI",
    );
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(
            dir.path()
                .join("contracts/payment_intent/v1/response.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        schema["properties"]["last_payment_error"]["type"],
        serde_json::json!(["null", "object"]),
        "null in one sample, an object in others"
    );
}

#[test]
fn a_description_toolgate_does_not_read_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let swagger = dir.path().join("swagger.json");
    fs::write(&swagger, r#"{"swagger": "2.0", "paths": {}}"#).unwrap();
    let refused = toolgate(
        dir.path(),
        &[
            "new",
            "x",
            "--from-openapi",
            swagger.to_str().unwrap(),
            "--operation",
            "a",
        ],
        true,
    );
    assert_code(&refused, 2, "swagger 2");
    assert!(
        refused
            .stderr
            .contains("Swagger 2.0 (OpenAPI 2) is not read"),
        "{}",
        refused.stderr
    );
    let neither = toolgate(dir.path(), &["new", "x"], true);
    assert_code(&neither, 2, "no source");
}

/// A response that is all free text (a public key and its id, as GitHub's Dependabot returns
/// it): nothing is pinned, so the text is promised, and exactly the near-misses the gate admits
/// there are accepted, each in survivors.yaml with the reason a person must confirm. The suite
/// then passes as CI runs it; a survivor `toolgate new` did not see is not accepted.
#[test]
fn toolgate_new_promises_free_text_when_nothing_is_pinned_and_accepts_what_the_gate_admits() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("samples");
    fs::create_dir_all(&samples).unwrap();
    for (name, key) in [
        ("a.json", "R2V0IHRoZSBrZXk="),
        ("b.json", "QW5vdGhlciBrZXk="),
    ] {
        fs::write(
            samples.join(name),
            serde_json::json!({"key_id": "012345678912345678", "key": key}).to_string(),
        )
        .unwrap();
    }
    let new = toolgate(
        dir.path(),
        &[
            "new",
            "public_key",
            "--from-sample",
            samples.join("a.json").to_str().unwrap(),
            samples.join("b.json").to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(
        new.code, 1,
        "a to-do is left: {}\n{}",
        new.stdout, new.stderr
    );
    assert!(new.stdout.contains("promised free text"), "{}", new.stdout);
    let survivors =
        fs::read_to_string(dir.path().join("fixtures/public_key/survivors.yaml")).unwrap();
    let entries: Value = toolgate_gate::internals::read_strict_yaml(&survivors).unwrap();
    assert!(
        entries
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["mutation"] == "canary_string"
                && entry["pointer"] == "/key"
                && entry["reason"].as_str().is_some_and(
                    |reason| reason.starts_with("Free text: the response has no member")
                )),
        "{survivors}"
    );
    assert_code(
        &toolgate(dir.path(), &["test", "--accept", "public_key"], false),
        0,
        "accept",
    );
    assert_code(
        &toolgate(dir.path(), &["test", "public_key"], true),
        0,
        "CI",
    );
}

/// A tool named as MCP names it (`get-structured-content`, server-everything's) goes through every
/// verb as any other: scaffolded, accepted (its snapshots and lock entry named after it), tested
/// as CI runs it, linted. A second folder that differs only in case is refused by every verb.
#[test]
fn a_tool_named_as_mcp_names_it_runs_through_every_verb_and_a_case_twin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.json");
    fs::write(
        &sample,
        r#"{"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65}"#,
    )
    .unwrap();
    let tool = "get-structured-content";
    let new = toolgate(
        dir.path(),
        &["new", tool, "--from-sample", sample.to_str().unwrap()],
        true,
    );
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    assert_code(
        &toolgate(dir.path(), &["test", "--accept", tool], false),
        0,
        "accept",
    );
    assert!(
        dir.path()
            .join(format!("snapshots/{tool}/accepted/sample@v1.snap"))
            .is_file()
    );
    assert!(
        fs::read_to_string(dir.path().join("contracts/contracts.lock"))
            .unwrap()
            .contains(tool)
    );
    assert_code(&toolgate(dir.path(), &["test", tool], true), 0, "CI");
    assert_code(&toolgate(dir.path(), &["lint", tool], true), 0, "lint");
    let twin = dir.path().join("contracts/Get-Structured-Content");
    fs::create_dir_all(&twin).unwrap();
    let refused = toolgate(dir.path(), &["test"], true);
    assert_code(&refused, 2, "case twin");
    assert!(
        refused.stderr.contains("differ only in case"),
        "{}",
        refused.stderr
    );
}
