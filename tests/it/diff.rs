//! `toolgate diff` on every kind of change: a before/after pair of a small contract, the change
//! kinds it must report, and the four verdicts it must reach. Every true verdict must carry a
//! witness, and each witness is run again here, through freshly compiled contracts, with the
//! real gate: a verdict the gate does not confirm is a bug in the differ.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

use crate::common::{failure_branch, repo_root, run, snapshot_env};
use serde_json::{Value, json};
use toolgate_diff::{BumpVerdict, DiffFormat, Report};
use toolgate_gate::{Contract, ContractSource, Response};

const CONTRACT: &str = "tool: probe
version: 1
direction: result
shape:
  schema: probe.schema.json
  outcome: { pointer: /outcome, success: success, failure: failure }
  error_code: /error/code
  correlation: { tool: /tool, request_id: /request_id }
  fields:
    - { name: id, from: /data/id }
    - { name: state, from: /data/state }
    - { name: note, from: /data/note }
agent_schema: agent.schema.json
";

fn schema() -> Value {
    json!({
        "oneOf": [
            {
                "type": "object",
                "required": ["tool", "request_id", "outcome", "data"],
                "properties": {
                    "tool": {"const": "probe"},
                    "request_id": {"type": "string", "pattern": "^req\\.[A-Za-z0-9]{8}$"},
                    "outcome": {"const": "success"},
                    "data": {"$ref": "#/$defs/data"}
                },
                "additionalProperties": false
            },
            failure_branch("probe", json!({"type": "string"}))
        ],
        "$defs": {
            "data": {
                "type": "object",
                "required": ["id", "state", "note", "count", "kind", "at"],
                "properties": {
                    "id": {"type": "string", "pattern": "^run_[a-z0-9]{4,8}$"},
                    "state": {"enum": ["a", "b", "c"]},
                    "note": {"type": "string", "maxLength": 20},
                    "count": {"type": ["integer", "null"], "minimum": 0, "maximum": 10},
                    "kind": {"const": "run"},
                    "at": {"type": "string", "format": "date-time"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}
                },
                "additionalProperties": false
            }
        }
    })
}

fn agent() -> Value {
    json!({
        "type": "object",
        "required": ["tool", "request_id", "outcome", "data"],
        "properties": {
            "tool": {"const": "probe"},
            "request_id": {"type": "string"},
            "outcome": {"const": "success"},
            "data": {
                "type": "object",
                "properties": {
                    "id": {"$ref": "probe.schema.json#/$defs/data/properties/id"},
                    "state": {"$ref": "probe.schema.json#/$defs/data/properties/state"},
                    "note": {"$ref": "probe.schema.json#/$defs/data/properties/note"}
                },
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

const REQUEST_ID: &str = "req.Abcd1234";

fn success(data: Value) -> Value {
    json!({"tool": "probe", "request_id": REQUEST_ID, "outcome": "success", "data": data})
}

/// One version: contract text and schema files.
#[derive(Clone)]
struct Files {
    contract: String,
    schema: Value,
    agent: Value,
    legacy: Option<Value>,
}

fn base() -> Files {
    Files {
        contract: CONTRACT.to_owned(),
        schema: schema(),
        agent: agent(),
        legacy: None,
    }
}

fn write_version(root: &Path, version: u32, files: &Files) {
    let folder = root.join(format!("contracts/probe/v{version}"));
    fs::create_dir_all(&folder).unwrap();
    fs::write(
        folder.join("contract.yaml"),
        files
            .contract
            .replace("version: 1", &format!("version: {version}")),
    )
    .unwrap();
    fs::write(folder.join("probe.schema.json"), files.schema.to_string()).unwrap();
    fs::write(folder.join("agent.schema.json"), files.agent.to_string()).unwrap();
    if let Some(legacy) = &files.legacy {
        fs::write(folder.join("bare.schema.json"), legacy.to_string()).unwrap();
    }
}

fn write_fixture(root: &Path, name: &str, raw: &Value) {
    let folder = root.join("fixtures/probe/accepted");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join(format!("{name}.json")), raw.to_string()).unwrap();
    fs::write(
        folder.join(format!("{name}.expect.yaml")),
        "expect: { outcome: admitted }\n",
    )
    .unwrap();
}

/// A repository holding `probe` v1 and v2 (the base with `older` and `newer` applied), with
/// fixtures.
fn repository(older: impl FnOnce(&mut Files), newer: impl FnOnce(&mut Files)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut v1 = base();
    older(&mut v1);
    let mut v2 = base();
    newer(&mut v2);
    write_version(root, 1, &v1);
    write_version(root, 2, &v2);
    fs::write(
        root.join("fixtures/probe/request.json")
            .parent()
            .map(|parent| {
                fs::create_dir_all(parent).unwrap();
                parent.join("request.json")
            })
            .unwrap(),
        json!({"request_id": REQUEST_ID, "now": "2026-11-29T12:00:00Z", "context": {"project": "alpha", "runs": ["run_ab12", "run_cd34"]}}).to_string(),
    )
    .unwrap();
    write_fixture(
        root,
        "a",
        &success(
            json!({"id": "run_ab12", "state": "a", "note": "fine", "count": 3, "kind": "run", "at": "2026-11-29T11:55:00Z", "tags": ["x"]}),
        ),
    );
    write_fixture(
        root,
        "b",
        &success(
            json!({"id": "run_cd34", "state": "b", "note": "also fine", "count": null, "kind": "run", "at": "2026-11-29T11:50:00Z"}),
        ),
    );
    write_fixture(
        root,
        "c",
        &success(
            json!({"id": "run_ab12", "state": "c", "note": "", "count": 10, "kind": "run", "at": "2026-11-29T11:58:00Z", "tags": ["a", "b", "c"]}),
        ),
    );
    write_fixture(
        root,
        "not_found",
        &json!({"tool": "probe", "request_id": REQUEST_ID, "outcome": "failure", "error": {"code": "NOT_FOUND", "retryable": false}}),
    );
    write_fixture(
        root,
        "bare",
        &json!({"id": "run_zz99", "state": "a", "note": "bare"}),
    );
    dir
}

fn data(files: &mut Files) -> &mut Value {
    &mut files.schema["$defs"]["data"]
}

fn property<'f>(files: &'f mut Files, name: &str) -> &'f mut Value {
    &mut files.schema["$defs"]["data"]["properties"][name]
}

fn required(files: &mut Files) -> &mut Vec<Value> {
    files.schema["$defs"]["data"]["required"]
        .as_array_mut()
        .unwrap()
}

/// Runs the differ on `probe` v1 → v2 (the base, and the base changed) and checks the kinds and
/// verdicts, and every witness.
fn check(
    case: &str,
    change: impl FnOnce(&mut Files),
    kinds: &[&str],
    expected: [Option<bool>; 4],
) -> Report {
    check_pair(case, |_| {}, change, kinds, expected)
}

/// Like [`check`], with both versions changed from the base.
fn check_pair(
    case: &str,
    older: impl FnOnce(&mut Files),
    newer: impl FnOnce(&mut Files),
    kinds: &[&str],
    expected: [Option<bool>; 4],
) -> Report {
    let dir = repository(older, newer);
    let report = toolgate_diff::compare(dir.path(), "probe", None, None)
        .unwrap_or_else(|error| panic!("{case}: {error}"));
    // Every report this file builds is held to the published schema of its JSON rendering.
    let json: Value = serde_json::from_str(&report.render(DiffFormat::Json, false)).unwrap();
    crate::common::assert_matches_schema("diff-report", &json);
    let found: Vec<&str> = report.changes.iter().map(|change| change.kind).collect();
    for kind in kinds {
        assert!(found.contains(kind), "{case}: no `{kind}` among {found:?}");
    }
    let verdicts: Vec<Option<bool>> = report.answers.iter().map(|answer| answer.value).collect();
    assert_eq!(
        verdicts,
        expected.to_vec(),
        "{case}: verdicts (breaking, loosened, widened, narrowed); changes {found:?}; answers {:#?}",
        report
            .answers
            .iter()
            .map(|answer| (answer.verdict, &answer.reasons))
            .collect::<Vec<_>>()
    );
    for answer in &report.answers {
        match (answer.value, &answer.witness) {
            (Some(true), Some(witness)) => {
                // A witness no change claimed was found by the proof search: the model had
                // said false, which is the bug the search is there to catch.
                let Some(index) = witness.change else {
                    panic!(
                        "{case}: {} was false by the model; the proof search found {}",
                        answer.verdict, witness.raw
                    )
                };
                confirm(
                    case,
                    dir.path(),
                    answer.verdict,
                    witness,
                    report.changes[index].kind,
                )
            }
            (Some(true), None) => panic!("{case}: {} is true without a witness", answer.verdict),
            (_, Some(_)) => panic!("{case}: {} has a witness but is not true", answer.verdict),
            _ => {}
        }
    }
    report
}

fn compile(root: &Path, version: u32) -> Contract {
    let source =
        ContractSource::read_dir(root.join(format!("contracts/probe/v{version}"))).unwrap();
    Contract::compile(&source).unwrap()
}

/// Runs the witness again, outside the differ, through both contracts compiled afresh. For the
/// agent verdicts the admitting version shows the agent something the other does not on this
/// input: a success, or (for a failure envelope only one version can give) that envelope.
fn confirm(
    case: &str,
    root: &Path,
    verdict: BumpVerdict,
    witness: &toolgate_diff::Witness,
    kind: &str,
) {
    let request = witness.request.to_request();
    let now: SystemTime =
        toolgate_gate::internals::parse_timestamp(witness.request.now.as_deref().unwrap()).unwrap();
    let decide = |contract: &Contract| {
        let mut response = Response::body(witness.raw.as_bytes());
        if let Some(status) = witness.status {
            response = response.with_status(status);
        }
        contract.admit_response(response, &request, now)
    };
    let (from, to) = (decide(&compile(root, 1)), decide(&compile(root, 2)));
    let confirmed = match verdict {
        BumpVerdict::UpstreamBreaking => from.is_admitted() && !to.is_admitted(),
        BumpVerdict::UpstreamLoosened => to.is_admitted() && !from.is_admitted(),
        BumpVerdict::AgentWidened => {
            (to.is_admitted() || kind.starts_with("failure_envelope"))
                && to.agent_bytes() != from.agent_bytes()
        }
        BumpVerdict::AgentNarrowed => {
            (from.is_admitted() || kind.starts_with("failure_envelope"))
                && to.agent_bytes() != from.agent_bytes()
        }
    };
    assert!(
        confirmed,
        "{case}: the gate does not confirm the {verdict} witness {:?} (v1: {:?}, v2: {:?})",
        witness.raw,
        from.outcome(),
        to.outcome()
    );
    assert_eq!(
        String::from_utf8_lossy(from.agent_bytes()),
        witness.from.agent,
        "{case}"
    );
    assert_eq!(
        String::from_utf8_lossy(to.agent_bytes()),
        witness.to.agent,
        "{case}"
    );
}

const Y: Option<bool> = Some(true);
const N: Option<bool> = Some(false);
const U: Option<bool> = None;

#[test]
fn no_change_no_verdict() {
    let report = check("identical", |_| {}, &[], [N, N, N, N]);
    assert!(report.changes.is_empty());
    assert!(report.replay.is_empty());
}

#[test]
fn properties_added_removed_renamed_and_their_requiredness() {
    check(
        "required property added to a closed object",
        |v2| {
            property(v2, "extra")["type"] = json!("string");
            required(v2).push(json!("extra"));
        },
        &["property_added"],
        [Y, Y, N, N],
    );
    check(
        "optional property added",
        |v2| property(v2, "extra")["type"] = json!("string"),
        &["property_added"],
        [N, Y, N, N],
    );
    check(
        "optional property removed from a closed object",
        |v2| {
            data(v2)["properties"]
                .as_object_mut()
                .unwrap()
                .remove("tags");
        },
        &["property_removed"],
        [Y, N, N, N],
    );
    check(
        "optional property renamed",
        |v2| {
            let tags = data(v2)["properties"]
                .as_object_mut()
                .unwrap()
                .remove("tags")
                .unwrap();
            data(v2)["properties"]["labels"] = tags;
        },
        &["property_renamed"],
        [Y, Y, N, N],
    );
    check(
        "required becomes optional",
        |v2| required(v2).retain(|name| name != "count"),
        &["property_optional"],
        [N, Y, N, N],
    );
    check(
        "optional becomes required",
        |v2| required(v2).push(json!("tags")),
        &["property_required"],
        [Y, N, N, N],
    );
    check(
        "a promised property becomes optional in the schema, and projection still requires it",
        |v2| required(v2).retain(|name| name != "note"),
        &["property_optional"],
        [N, N, N, N],
    );
    check(
        "a promised property becomes optional, and so does its field",
        |v2| {
            required(v2).retain(|name| name != "note");
            v2.contract = v2.contract.replace(
                "{ name: note, from: /data/note }",
                "{ name: note, from: /data/note, optional: true }",
            );
        },
        &["property_optional", "field_optional"],
        [N, Y, Y, N],
    );
}

#[test]
fn enums_and_consts() {
    check(
        "enum widened",
        |v2| property(v2, "state")["enum"] = json!(["a", "b", "c", "d"]),
        &["enum_widened"],
        [N, Y, Y, N],
    );
    check(
        "enum narrowed",
        |v2| property(v2, "state")["enum"] = json!(["a", "b"]),
        &["enum_narrowed"],
        [Y, N, N, Y],
    );
    check(
        "enum changed",
        |v2| property(v2, "state")["enum"] = json!(["a", "b", "d"]),
        &["enum_changed"],
        [Y, Y, Y, Y],
    );
    check(
        "const changed (not promised)",
        |v2| property(v2, "kind")["const"] = json!("job"),
        &["const_changed"],
        [Y, Y, N, N],
    );
}

#[test]
fn types() {
    check(
        "type widened",
        |v2| property(v2, "count")["type"] = json!(["integer", "null", "string"]),
        &["type_widened"],
        [N, Y, N, N],
    );
    check(
        "type narrowed",
        |v2| property(v2, "count")["type"] = json!("integer"),
        &["type_narrowed"],
        [Y, N, N, N],
    );
    check(
        "type changed",
        |v2| property(v2, "count")["type"] = json!(["string", "null"]),
        &["type_changed"],
        [Y, Y, N, N],
    );
}

#[test]
fn patterns_decided_by_language_inclusion() {
    check(
        "pattern added to a promised string",
        |v2| property(v2, "note")["pattern"] = json!("^[a-z ]*$"),
        &["pattern_added"],
        [Y, N, N, Y],
    );
    check(
        "pattern removed",
        |v2| {
            property(v2, "id")
                .as_object_mut()
                .unwrap()
                .remove("pattern");
        },
        &["pattern_removed"],
        [N, Y, Y, N],
    );
    check(
        "pattern narrowed",
        |v2| property(v2, "id")["pattern"] = json!("^run_[a-z]{4,8}$"),
        &["pattern_changed"],
        [Y, N, N, Y],
    );
    check(
        "pattern widened",
        |v2| property(v2, "id")["pattern"] = json!("^run_[a-z0-9]{2,12}$"),
        &["pattern_changed"],
        [N, Y, Y, N],
    );
    check(
        "pattern rewritten, same language",
        |v2| property(v2, "id")["pattern"] = json!("^run_[0-9a-z]{4,8}$"),
        &["pattern_changed"],
        [N, N, N, N],
    );
}

#[test]
fn lengths_items_and_numeric_bounds() {
    check(
        "maxLength tightened on a promised string",
        |v2| property(v2, "note")["maxLength"] = json!(10),
        &["length_tightened"],
        [Y, N, N, Y],
    );
    check(
        "maxLength loosened",
        |v2| property(v2, "note")["maxLength"] = json!(40),
        &["length_loosened"],
        [N, Y, Y, N],
    );
    check(
        "minLength tightened",
        |v2| property(v2, "note")["minLength"] = json!(1),
        &["length_tightened"],
        [Y, N, N, Y],
    );
    check(
        "maxItems tightened",
        |v2| property(v2, "tags")["maxItems"] = json!(1),
        &["items_tightened"],
        [Y, N, N, N],
    );
    check(
        "maxItems loosened",
        |v2| property(v2, "tags")["maxItems"] = json!(5),
        &["items_loosened"],
        [N, Y, N, N],
    );
    check(
        "maximum tightened",
        |v2| property(v2, "count")["maximum"] = json!(5),
        &["bounds_tightened"],
        [Y, N, N, N],
    );
    check(
        "minimum loosened",
        |v2| property(v2, "count")["minimum"] = json!(-5),
        &["bounds_loosened"],
        [N, Y, N, N],
    );
}

#[test]
fn formats() {
    check(
        "format added",
        |v2| property(v2, "note")["format"] = json!("date"),
        &["format_added"],
        [Y, N, N, Y],
    );
    check(
        "format removed",
        |v2| {
            property(v2, "at").as_object_mut().unwrap().remove("format");
        },
        &["format_removed"],
        [N, Y, N, N],
    );
    check(
        "format changed",
        |v2| property(v2, "at")["format"] = json!("date"),
        &["format_changed"],
        [Y, Y, N, N],
    );
}

#[test]
fn branches_added_and_removed() {
    let string = json!({"type": "string", "maxLength": 20});
    let note = |schema: Value| move |files: &mut Files| *property(files, "note") = schema;
    check(
        "an anyOf where there was none: decided on the whole value",
        note(json!({"anyOf": [string.clone(), {"type": "null"}]})),
        &["union_changed"],
        [N, Y, Y, N],
    );
    check_pair(
        "anyOf branch added",
        note(json!({"anyOf": [string.clone()]})),
        note(json!({"anyOf": [string.clone(), {"type": "null"}]})),
        &["branch_added"],
        [N, Y, Y, N],
    );
    check_pair(
        "anyOf branch removed, one no fixture takes",
        note(json!({"anyOf": [string.clone(), {"type": "integer"}]})),
        note(json!({"anyOf": [string]})),
        &["branch_removed"],
        [Y, N, N, Y],
    );
}

#[test]
fn objects_opened_and_closed() {
    check(
        "object opened",
        |v2| {
            data(v2)
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        },
        &["object_opened"],
        [N, Y, N, N],
    );
    let open = |files: &mut Files| {
        data(files)
            .as_object_mut()
            .unwrap()
            .remove("additionalProperties");
    };
    check_pair(
        "object closed through unevaluatedProperties",
        open,
        |v2| {
            open(v2);
            data(v2)["unevaluatedProperties"] = json!(false);
        },
        &["object_closed"],
        [Y, N, N, N],
    );
}

#[test]
fn limits() {
    check(
        "max_bytes tightened",
        |v2| v2.contract.push_str("limits: { max_bytes: 200 }\n"),
        &["max_bytes_tightened"],
        [Y, N, N, U],
    );
    check(
        "max_depth changed, no shape that deep",
        |v2| v2.contract.push_str("limits: { max_depth: 5 }\n"),
        &["max_depth_changed"],
        [N, N, N, N],
    );
    check(
        "an unavailable status added",
        |v2| {
            v2.contract
                .push_str("limits: { unavailable_statuses: [404, 408, 429, 500, 502, 503, 504] }\n")
        },
        &["unavailable_status_added"],
        [Y, N, N, N],
    );
}

#[test]
fn rules() {
    let membership = |context: &'static str| {
        move |files: &mut Files| {
            files.contract.push_str(&format!(
                "rules:\n  - {{ name: own_run, retryable: false, membership: {{ field: id, context: {context} }} }}\n"
            ));
        }
    };
    check(
        "membership rule added",
        membership("runs"),
        &["rule_added"],
        [Y, N, N, Y],
    );
    check_pair(
        "membership rule removed",
        membership("runs"),
        |_| {},
        &["rule_removed"],
        [N, Y, Y, N],
    );
    check_pair(
        "a rule reads other context: for review",
        membership("runs"),
        membership("projects"),
        &["rule_changed"],
        // Undecided by the model; under the fixtures' own request (which has no `projects`)
        // the proof search shows a response v1 admits and v2 refuses.
        [Y, U, U, U],
    );
    let freshness = |max_age: &'static str| {
        move |files: &mut Files| {
            files.contract.push_str(&format!(
                "rules:\n  - {{ name: fresh, retryable: true, freshness: {{ field: at, max_age: {max_age}, max_future: 1m }} }}\n"
            ));
            files.contract = files.contract.replace(
                "    - { name: note, from: /data/note }\n",
                "    - { name: note, from: /data/note }\n    - { name: at, from: /data/at }\n",
            );
        }
    };
    check_pair(
        "freshness window shortened",
        freshness("1h"),
        freshness("15m"),
        &["freshness_tightened"],
        [Y, N, N, Y],
    );
    check_pair(
        "freshness window widened",
        freshness("15m"),
        freshness("1h"),
        &["freshness_loosened"],
        [N, Y, Y, N],
    );
}

#[test]
fn projection_fields() {
    check(
        "a field promised",
        |v2| {
            v2.contract = v2.contract.replace(
                "    - { name: note, from: /data/note }\n",
                "    - { name: note, from: /data/note }\n    - { name: count, from: /data/count }\n",
            );
        },
        &["field_added"],
        [N, N, Y, Y],
    );
    check(
        "a field no longer promised",
        |v2| {
            v2.contract = v2
                .contract
                .replace("    - { name: note, from: /data/note }\n", "")
        },
        &["field_removed"],
        [N, N, Y, Y],
    );
    check(
        "fields reordered",
        |v2| {
            v2.contract = v2.contract.replace(
                "    - { name: id, from: /data/id }\n    - { name: state, from: /data/state }\n",
                "    - { name: state, from: /data/state }\n    - { name: id, from: /data/id }\n",
            );
        },
        &["fields_reordered"],
        [N, N, Y, Y],
    );
}

#[test]
fn the_agent_schema_and_the_retry_policy() {
    let report = check(
        "agent schema narrowed (a declaration)",
        |v2| v2.agent["properties"]["data"]["required"] = json!(["id"]),
        &["agent_schema_changed"],
        [N, N, N, N],
    );
    assert!(
        report
            .changes
            .iter()
            .all(|change| change.declared.is_some())
    );
    check(
        "retry attempts changed",
        |v2| v2.contract.push_str("retry: { max_attempts: 3 }\n"),
        &["retry_changed"],
        [N, N, N, N],
    );
    check(
        "INVALID_RESPONSE made retryable",
        |v2| {
            v2.contract
                .push_str("retry: { retryable_codes: [UPSTREAM_UNAVAILABLE, INVALID_RESPONSE] }\n")
        },
        &[
            "retryable_codes_changed",
            "failure_envelope_added",
            "failure_envelope_removed",
        ],
        [N, N, Y, Y],
    );
}

#[test]
fn legacy_shapes() {
    let legacy = json!({"type": "object", "required": ["id", "state", "note"], "properties": {"id": {"type": "string", "pattern": "^run_[a-z0-9]{4,8}$"}, "state": {"enum": ["a", "b", "c"]}, "note": {"type": "string", "maxLength": 20}}, "additionalProperties": false});
    check(
        "legacy shape added",
        |v2| {
            v2.legacy = Some(legacy);
            v2.contract.push_str("legacy_shapes:\n  - name: bare\n    schema: bare.schema.json\n    fields:\n      - { name: id, from: /id }\n      - { name: state, from: /state }\n      - { name: note, from: /note }\n");
        },
        &["shape_added"],
        [N, Y, U, N],
    );
}

#[test]
fn the_cli_reports_in_three_formats_and_fails_on_what_it_is_told() {
    let dir = repository(
        |_| {},
        |v2| property(v2, "state")["enum"] = json!(["a", "b"]),
    );
    let diff = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(["diff", "probe", "--root", dir.path().to_str().unwrap()])
            .args(extra);
        snapshot_env(&mut command, true);
        run(command, b"")
    };
    let human = diff(&[]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    assert!(
        human.stdout.contains("upstream breaking  yes"),
        "{}",
        human.stdout
    );
    let json: Value = serde_json::from_str(&diff(&["--format", "json"]).stdout).unwrap();
    assert_eq!(json["format_version"], 4);
    assert_eq!(
        json["summary"],
        json!({"upstream_breaking": true, "upstream_loosened": false, "agent_widened": false, "agent_narrowed": true})
    );
    assert_eq!(json["changes"][0]["kind"], "enum_narrowed");
    assert_eq!(json["changes"][0]["instance"], "/data/state");
    assert_eq!(json["witnesses"][0]["from"]["outcome"], "admitted");
    assert_eq!(json["witnesses"][0]["to"]["layer"], "schema");
    let markdown = diff(&["--format", "markdown"]).stdout;
    assert!(
        markdown.starts_with("**toolgate diff** `probe` v1 → v2: upstream breaking: **yes**"),
        "{markdown}"
    );
    assert_eq!(diff(&["--fail-on", "loosened,widened"]).code, 0);
    assert_eq!(diff(&["--fail-on", "breaking"]).code, 1);
    let usage = diff(&["v1", "v1"]);
    assert_eq!(usage.code, 2);
    assert!(
        usage.stderr.contains("FROM and TO are both v1"),
        "{}",
        usage.stderr
    );
    let unknown = diff(&["v1", "v7"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("no contract version \"v7\" (published: v1, v2)"),
        "{}",
        unknown.stderr
    );
}

/// One edit to a definition two members share is one change, at one place "and 1 more place",
/// in every format; its effects are the strongest either place has (only `state` is promised, so
/// only its place narrows what the agent sees).
#[test]
fn a_definition_two_members_share_is_one_change_listed_with_its_other_place() {
    let shared = |files: &mut Files, values: Value| {
        files.schema["$defs"]["state"] = json!({"enum": values});
        *property(files, "state") = json!({"$ref": "#/$defs/state"});
        *property(files, "was") = json!({"$ref": "#/$defs/state"});
        files.agent["properties"]["data"]["properties"]["state"] =
            json!({"$ref": "probe.schema.json#/$defs/state"});
    };
    let dir = repository(
        |v1| shared(v1, json!(["a", "b", "c"])),
        |v2| shared(v2, json!(["a", "b"])),
    );
    let diff = |format: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.args([
            "diff",
            "probe",
            "--root",
            dir.path().to_str().unwrap(),
            "--format",
            format,
        ]);
        snapshot_env(&mut command, true);
        run(command, b"")
    };
    let json: Value = serde_json::from_str(&diff("json").stdout).unwrap();
    crate::common::assert_matches_schema("diff-report", &json);
    let narrowed: Vec<&Value> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["kind"] == "enum_narrowed")
        .collect();
    assert_eq!(narrowed.len(), 1, "{json:#}");
    let mut places = vec![narrowed[0]["instance"].as_str().unwrap()];
    places.extend(
        narrowed[0]["more_places"]
            .as_array()
            .unwrap()
            .iter()
            .map(|place| place.as_str().unwrap()),
    );
    places.sort_unstable();
    assert_eq!(places, ["/data/state", "/data/was"]);
    assert_eq!(narrowed[0]["pointer"], "/$defs/state/enum");
    assert_eq!(
        narrowed[0]["effects"],
        json!({"upstream_breaking": true, "upstream_loosened": false, "agent_widened": false, "agent_narrowed": true})
    );
    let witnessed = json["witnesses"][0]["change"].as_u64().unwrap() as usize;
    assert_eq!(json["changes"][witnessed]["kind"], "enum_narrowed");
    let human = diff("human").stdout;
    assert!(human.contains("and 1 more place: /data/"), "{human}");
    let markdown = diff("markdown").stdout;
    assert!(markdown.contains("and 1 more place: "), "{markdown}");
}

#[test]
fn the_bundled_bumps_reports_are_what_was_reviewed() {
    for tool in ["review_status", "job_status"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(["diff", tool, "v1", "v2", "--format", "markdown", "--root"])
            .arg(repo_root());
        snapshot_env(&mut command, true);
        let report = run(command, b"");
        assert_eq!(report.code, 0, "{}", report.stderr);
        insta::with_settings!({
            snapshot_path => repo_root().join("tests/snapshots"),
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!(format!("diff__{tool}_v1_v2"), report.stdout);
        });
    }
}

use crate::render::HOSTILE;

#[test]
fn the_markdown_comment_shows_hostile_names_exactly_and_links_nothing() {
    let dir = repository(
        |_| {},
        |v2| *property(v2, HOSTILE) = json!({"type": "string", "maxLength": 3}),
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["diff", "probe", "--format", "markdown", "--root"])
        .arg(dir.path());
    snapshot_env(&mut command, true);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let rendered = crate::render::render(&outcome.stdout);
    let shown = crate::render::visible(&rendered.text);
    assert!(
        rendered.links.is_empty(),
        "{:?}\n{}",
        rendered.links,
        outcome.stdout
    );
    assert!(rendered.balanced(), "{:?}", rendered.tags);
    // GitHub reads mentions in prose only (code spans and blocks show them as written).
    assert!(
        !crate::render::mentions(&rendered.prose),
        "{}",
        rendered.prose
    );
    // The headline's tool is a code span; the change's pointer is one, exactly.
    assert!(
        shown.starts_with("toolgate diff probe v1 → v2: "),
        "{shown}"
    );
    assert_eq!(rendered.code[0], "probe");
    let pointer = format!("/data/{}", HOSTILE.replace('~', "~0").replace('/', "~1"));
    let spans: Vec<String> = rendered
        .code
        .iter()
        .map(|span| crate::render::visible(span))
        .collect();
    assert!(spans.contains(&pointer), "{spans:?}");
    // The description names the property as written, and no prose shows a stray backslash.
    assert!(
        shown.contains(&format!("property `{HOSTILE}` added")),
        "{shown}"
    );
    let prose = crate::render::visible(&rendered.prose)
        .replace(HOSTILE, "")
        .replace(&pointer, "");
    assert!(!prose.contains('\\'), "a stray backslash: {prose}");
    // The witness's bytes are in a fenced block, where the CI command is shown escaped.
    assert!(
        rendered
            .blocks
            .iter()
            .any(|block| block.contains(r"\u{23}#[add-mask]s")),
        "{:?}",
        rendered.blocks
    );
}

#[test]
fn a_witness_too_long_to_show_whole_shows_the_member_it_changed() {
    let long_note = |files: &mut Files| property(files, "note")["maxLength"] = json!(1000);
    let dir = repository(long_note, |v2| {
        long_note(v2);
        *property(v2, "zzz_added") = json!({"type": "string", "maxLength": 3});
    });
    // serde_json writes members in name order: the added member comes after 600 characters.
    write_fixture(
        dir.path(),
        "a",
        &success(
            json!({"id": "run_ab12", "state": "a", "note": "n".repeat(600), "count": 3, "kind": "run", "at": "2026-11-29T11:55:00Z"}),
        ),
    );
    for format in ["markdown", "human"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(["diff", "probe", "--format", format, "--root"])
            .arg(dir.path());
        snapshot_env(&mut command, true);
        let outcome = run(command, b"");
        assert_eq!(outcome.code, 0, "{}", outcome.stderr);
        let response = outcome
            .stdout
            .lines()
            .find(|line| line.trim_start().starts_with("response: "))
            .unwrap_or_else(|| panic!("{format}: no response line\n{}", outcome.stdout));
        assert!(
            response.contains("\"zzz_added\":\"\""),
            "{format}: {response}"
        );
        assert!(
            response.contains('…'),
            "{format}: cut, and says so: {response}"
        );
        assert!(response.chars().count() < 500, "{format}: {response}");
    }
}

#[test]
fn an_added_promised_field_says_every_output_now_carries_it() {
    let dir = repository(
        |_| {},
        |v2| {
            *property(v2, "extra") = json!({"type": "string", "maxLength": 3});
            required(v2).push(json!("extra"));
            v2.contract = v2
            .contract
            .replace("    - { name: note, from: /data/note }\n", "    - { name: note, from: /data/note }\n    - { name: extra, from: /data/extra }\n");
            v2.agent["properties"]["data"]["properties"]["extra"] = json!({"type": "string"});
        },
    );
    let report = toolgate_diff::compare(dir.path(), "probe", None, None).unwrap();
    let added = report
        .changes
        .iter()
        .find(|change| change.kind == "field_added")
        .unwrap_or_else(|| panic!("{:?}", report.changes));
    assert_eq!(
        added.description,
        "the agent is now promised `extra`: every successful output now carries `extra`"
    );
}
