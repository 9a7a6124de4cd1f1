//! `toolgate mutate` end to end: the bundled contracts run clean; a deliberately loosened contract
//! (an opened object, a string without `maxLength`, an identifier without its pattern) produces
//! survivors at exactly those pointers; a leaky projection produces leaks; `survivors.yaml`
//! accepts with a reason and cannot go stale; `--emit` writes mutants whose printed `toolgate
//! check` command reproduces the decision; the suite runs one trial per family.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{run, toolgate_test, tree};
use serde_json::Value;

fn mutate(root: &Path, args: &[&str]) -> (i32, Value, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .arg("mutate")
        .args(args)
        .args(["--format", "json", "--root"])
        .arg(root);
    let outcome = run(command, b"");
    let report = serde_json::from_str(&outcome.stdout).unwrap_or(Value::Null);
    if outcome.code != 2 || !report.is_null() {
        crate::common::assert_matches_schema("mutate-report", &report);
    }
    (outcome.code, report, outcome.stderr)
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = fs::read_to_string(path).unwrap();
    let edited = text.replacen(from, to, 1);
    assert_ne!(edited, text, "{}: {from:?} not found", path.display());
    fs::write(path, edited).unwrap();
}

/// review_status v2 with its review object opened, `reviewed_by` without its maxLength and
/// `change_id` without its pattern.
fn loosened() -> tempfile::TempDir {
    let dir = tree();
    let schema = dir
        .path()
        .join("contracts/review_status/v2/envelope.schema.json");
    edit(
        &schema,
        "\"change_id\": { \"type\": \"string\", \"pattern\": \"^CR-[0-9]{1,10}$\" },",
        "\"change_id\": { \"type\": \"string\" },",
    );
    edit(
        &schema,
        "\"reviewed_by\": { \"type\": \"string\", \"minLength\": 1, \"maxLength\": 128 },",
        "\"reviewed_by\": { \"type\": \"string\", \"minLength\": 1 },",
    );
    edit(
        &schema,
        "        \"reviewed_at\": { \"type\": \"string\", \"format\": \"date-time\", \"maxLength\": 35 }\n      },\n      \"additionalProperties\": false",
        "        \"reviewed_at\": { \"type\": \"string\", \"format\": \"date-time\", \"maxLength\": 35 }\n      }",
    );
    dir
}

fn survivors(report: &Value, accepted: bool) -> Vec<&Value> {
    report["survivors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|survivor| survivor["accepted"] == accepted)
        .collect()
}

#[test]
fn the_bundled_contracts_run_clean() {
    let dir = tree();
    let (code, report, stderr) = mutate(dir.path(), &[]);
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    let summary = &report["summary"];
    assert_eq!(summary["leaks"], 0);
    assert_eq!(summary["survivors"], summary["accepted_survivors"]);
    assert_eq!(summary["versions"], 6);
    assert!(summary["mutants"].as_u64().unwrap() > 2000, "{summary}");
    assert_eq!(report["format_version"], 4);
    // Every family derived something from the bundled fixtures, and every family that expects
    // a rejection got one for most of its mutants.
    for family in report["families"].as_array().unwrap() {
        assert!(family["mutants"].as_u64().unwrap() > 0, "{family}");
    }
    for survivor in survivors(&report, true) {
        assert!(!survivor["reason"].as_str().unwrap().is_empty());
    }
}

#[test]
fn a_loosened_contract_has_survivors_at_exactly_the_loosened_pointers() {
    let dir = loosened();
    let (code, report, stderr) = mutate(dir.path(), &["review_status"]);
    assert_eq!(code, 1, "{stderr}");
    let unaccepted = survivors(&report, false);
    for survivor in &unaccepted {
        assert_eq!(survivor["tool"], "review_status");
        assert_eq!(survivor["version"], "v2", "v1 is untouched: {survivor}");
        assert!(
            survivor["fixture"]
                .as_str()
                .unwrap()
                .starts_with("fixtures/review_status/")
        );
        assert!(
            survivor["reproduce"]
                .as_str()
                .unwrap()
                .starts_with("toolgate check review_status mutants/review_status/v2/")
        );
    }
    let pointers: BTreeSet<&str> = unaccepted
        .iter()
        .map(|survivor| survivor["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(
        pointers,
        BTreeSet::from(["/data", "/data/change_id", "/data/reviewed_by"]),
        "{report:#}"
    );
    let at = |pointer: &str| -> BTreeSet<&str> {
        unaccepted
            .iter()
            .filter(|survivor| survivor["pointer"] == pointer)
            .map(|survivor| survivor["mutation"].as_str().unwrap())
            .collect()
    };
    assert_eq!(at("/data"), BTreeSet::from(["extra_property"]));
    assert!(
        at("/data/reviewed_by").contains("oversized_string"),
        "{:?}",
        at("/data/reviewed_by")
    );
    assert!(
        at("/data/change_id").contains("empty_identifier"),
        "{:?}",
        at("/data/change_id")
    );
    assert_eq!(
        report["summary"]["leaks"], 0,
        "unknown members are never projected"
    );

    // The lint names each loosening where it is written (the agent schema reuses the review
    // object, so it opens too).
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["lint", "review_status", "--format", "json", "--root"])
        .arg(dir.path());
    let lint = run(command, b"");
    assert_eq!(lint.code, 1, "{}", lint.stderr);
    let lint: Value = serde_json::from_str(&lint.stdout).unwrap();
    let findings: BTreeSet<(&str, &str)> = lint["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["accepted"] == false)
        .map(|finding| {
            assert_eq!(finding["version"], "v2");
            assert_eq!(finding["file"], "envelope.schema.json");
            (
                finding["pointer"].as_str().unwrap(),
                finding["rule"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        findings,
        BTreeSet::from([
            ("/$defs/reviewStatus", "object_open"),
            ("/$defs/reviewStatus", "agent_schema_open"),
            (
                "/$defs/reviewStatus/properties/change_id",
                "string_unbounded"
            ),
            (
                "/$defs/reviewStatus/properties/reviewed_by",
                "string_unbounded"
            ),
        ])
    );

    // The suite fails the same families, one trial each, so a filter selects them.
    let suite = toolgate_test(
        dir.path(),
        &["review_status::mutants::extra_property"],
        true,
    );
    assert_eq!(suite.code, 1, "{}", suite.stdout);
    assert!(
        suite
            .stdout
            .contains("FAILED review_status::mutants::extra_property@v2"),
        "{}",
        suite.stdout
    );
    assert!(
        !suite
            .stdout
            .contains("FAILED review_status::mutants::extra_property@v1"),
        "{}",
        suite.stdout
    );
    assert!(
        suite.stdout.contains("SURVIVOR: v2: mutant extra_property at /data (added member `toolgate_unpromised_1` carrying a canary), derived from 2 of 4 admitted fixtures"),
        "{}",
        suite.stdout
    );
}

#[test]
fn a_leaky_projection_leaks_and_a_leak_is_never_accepted() {
    let dir = tree();
    let version = dir.path().join("contracts/review_status/v1");
    edit(
        &version.join("contract.yaml"),
        "    - { name: change_id, from: /data/change_id }\n    - { name: decision, from: /data/decision }\n    - { name: reviewed_by, from: /data/reviewed_by }",
        "    - { name: review, from: /data }",
    );
    edit(
        &version.join("agent.schema.json"),
        "\"data\": { \"$ref\": \"envelope.schema.json#/$defs/reviewStatus\" }",
        "\"data\": { \"type\": \"object\", \"properties\": { \"review\": { \"type\": \"object\" } } }",
    );
    edit(
        &version.join("envelope.schema.json"),
        "\"reviewed_by\": { \"type\": \"string\", \"minLength\": 1, \"maxLength\": 128 }\n      },\n      \"additionalProperties\": false",
        "\"reviewed_by\": { \"type\": \"string\", \"minLength\": 1, \"maxLength\": 128 }\n      }",
    );
    let (code, report, stderr) = mutate(dir.path(), &["review_status"]);
    assert_eq!(code, 1, "{stderr}");
    let leaks = report["leaks"].as_array().unwrap();
    assert!(!leaks.is_empty(), "{report:#}");
    let extra = leaks
        .iter()
        .find(|leak| leak["mutation"] == "extra_property" && leak["pointer"] == "/data")
        .expect("the invented member reaches the agent inside the promised object");
    assert_eq!(extra["version"], "v1");
    let messages = extra["leaks"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|message| message.as_str().unwrap().contains("toolgate-canary-")),
        "{messages:?}"
    );
    assert!(
        extra["agent_bytes"]
            .as_str()
            .unwrap()
            .contains("toolgate_unpromised_1")
    );
    // survivors.yaml accepts a canary in reviewed_by as free text; inside a promised object it
    // leaks, and a leak is reported as one whatever the file says.
    assert!(
        leaks
            .iter()
            .any(|leak| leak["mutation"] == "canary_string"
                && leak["pointer"] == "/data/reviewed_by"),
        "{report:#}"
    );
    // The lint sees the same hole without running anything.
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["lint", "review_status", "--format", "json", "--root"])
        .arg(dir.path());
    let lint: Value = serde_json::from_str(&run(command, b"").stdout).unwrap();
    assert!(
        lint["findings"].as_array().unwrap().iter().any(|finding| {
            finding["version"] == "v1"
                && finding["rule"] == "promised_field_open"
                && finding["pointer"] == "/$defs/reviewStatus"
        }),
        "{lint:#}"
    );
}

#[test]
fn an_accepted_survivor_that_no_longer_survives_fails_and_a_broken_file_is_a_configuration_error() {
    let dir = tree();
    let file = dir.path().join("fixtures/review_status/survivors.yaml");
    let text = fs::read_to_string(&file).unwrap();
    let lines = text.lines().count() + 1;
    fs::write(
        &file,
        format!("{text}- mutation: extra_property\n  pointer: /data\n  reason: the review object was open once\n"),
    )
    .unwrap();
    let (code, report, _) = mutate(dir.path(), &["review_status"]);
    assert_eq!(code, 1);
    let stale = report["stale_acceptances"].as_array().unwrap();
    assert_eq!(stale.len(), 2, "one per version it applies to: {stale:?}");
    assert_eq!(stale[0]["file"], "fixtures/review_status/survivors.yaml");
    assert_eq!(stale[0]["line"], lines);
    assert_eq!(stale[0]["mutation"], "extra_property");
    assert_eq!(stale[0]["cause"], "rejected");

    // An entry for a place no fixture of a version has is stale there for that reason, and says
    // so: removing it (as "the contract rejects it now" would suggest) would break the version
    // that needs it.
    fs::write(
        &file,
        format!("{text}- mutation: impossible_date\n  pointer: /data/reviewed_at\n  reason: r\n"),
    )
    .unwrap();
    let (code, report, _) = mutate(dir.path(), &["review_status"]);
    assert_eq!(code, 1);
    let stale = report["stale_acceptances"].as_array().unwrap();
    let v1 = stale.iter().find(|entry| entry["version"] == "v1").unwrap();
    assert_eq!(v1["cause"], "no_mutant", "{stale:?}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["mutate", "review_status", "--root"])
        .arg(dir.path());
    let human = run(command, b"").stdout;
    assert!(
        human.contains("matches nothing in v1: no admitted fixture of v1 has a value at /data/reviewed_at that impossible_date changes, so no such mutant was made; limit the entry's `versions:`"),
        "{human}"
    );

    for (broken, message) in [
        (
            "- mutation: extra_properties\n  pointer: /data\n  reason: r\n",
            "survivors.yaml:1:3: mutation: \"extra_properties\" is not a mutation family",
        ),
        (
            "- mutation: extra_property\n  pointer: /data\n",
            "survivors.yaml:2:3: missing field `reason`",
        ),
        (
            "- mutation: extra_property\n  pointer: data\n  reason: r\n",
            "pointer: \"data\" is not a JSON pointer",
        ),
        (
            "mutation: extra_property\n",
            "the file is a list of entries",
        ),
        (
            "- mutation: truncated\n  pointer: /\n  reason: r\n",
            "survivors.yaml:1:3: pointer: \"/\" names a member called \"\", not the whole response; for the whole response write pointer: \"\"",
        ),
    ] {
        fs::write(&file, broken).unwrap();
        let (code, report, stderr) = mutate(dir.path(), &["review_status"]);
        assert_eq!(code, 2, "{broken}: {report:#} {stderr}");
        let errors: Vec<&str> = report["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|error| error.as_str().unwrap())
            .collect();
        assert_eq!(errors.len(), 1, "once for the tool: {errors:?}");
        let errors = errors[0];
        assert!(errors.contains(message), "{broken}: {errors}");
        // The suite reports it where the mutants run, and accepts nothing meanwhile.
        let suite = toolgate_test(dir.path(), &["review_status::mutants::canary_string"], true);
        assert_eq!(suite.code, 2, "{}", suite.stdout);
        assert!(
            suite
                .stdout
                .contains("no survivor is accepted until the file loads"),
            "{}",
            suite.stdout
        );
    }
}

#[test]
fn emitted_mutants_reproduce_with_the_printed_command() {
    let dir = loosened();
    let emit = tempfile::tempdir().unwrap();
    let emit_dir = emit.path().join("out");
    let (code, report, stderr) = mutate(
        dir.path(),
        &["review_status", "--emit", emit_dir.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{stderr}");
    let mutants = report["summary"]["mutants"].as_u64().unwrap() as usize;
    let written = walk(&emit_dir);
    assert_eq!(written, mutants, "every mutant is written");
    let survivor = survivors(&report, false)
        .into_iter()
        .find(|survivor| survivor["mutation"] == "extra_property")
        .unwrap();
    let file = emit_dir.join(survivor["mutant_file"].as_str().unwrap());
    assert!(file.is_file(), "{}", file.display());
    let words = shlex::split(survivor["reproduce"].as_str().unwrap()).unwrap();
    assert_eq!(&words[..2], ["toolgate", "check"]);
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(&words[1..]).current_dir(dir.path());
    let check = run(command, b"");
    assert_eq!(
        check.code, 0,
        "the survivor is admitted, as reported: {}",
        check.stderr
    );
    assert_eq!(
        check.stdout.trim_end(),
        survivor["agent_bytes"].as_str().unwrap()
    );
}

fn walk(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            if path.is_dir() { walk(&path) } else { 1 }
        })
        .sum()
}

#[test]
fn usage_errors_exit_2_and_say_what_to_do() {
    let dir = tree();
    for verb in ["mutate", "lint"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.args([verb, "nope", "--root"]).arg(dir.path());
        let outcome = run(command, b"");
        assert_eq!(outcome.code, 2, "{verb}");
        assert!(
            outcome.stderr.contains("no contract for tool `nope` (known tools: close_ticket, job_status, review_status, release_status)"),
            "{verb}: {}",
            outcome.stderr
        );
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["mutate", "--root"])
        .arg(dir.path().join("fixtures"));
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("no contracts folder here"),
        "{}",
        outcome.stderr
    );
}
