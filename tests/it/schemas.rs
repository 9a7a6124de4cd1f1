//! `toolgate schema`: each published schema holds exactly what toolgate's own reader holds. Every
//! bundled sidecar and request file validates, and over a corpus of edits the schema and the
//! parser agree on every document, so an editor that validates with the schema tells the truth.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{repo_root, run};
use serde_json::Value;
use toolgate_gate::internals::{CONTRACT_SCHEMA, read_strict_yaml, standalone_validator};
use toolgate_repo::{Sidecar, parse_request_file};

fn schema(kind: &str) -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(["schema", kind]);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    serde_json::from_str(&outcome.stdout).unwrap()
}

fn files(dir: &Path, suffix: &str, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, suffix, out);
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
}

/// Every kind `toolgate schema` prints, in the order its help lists them.
const KINDS: [&str; 11] = [
    "report",
    "contract",
    "sidecar",
    "request",
    "diff-report",
    "lint-report",
    "mutate-report",
    "survivors",
    "lint-acceptances",
    "auth",
    "pin",
];

#[test]
fn the_published_copies_are_what_toolgate_prints() {
    for kind in KINDS {
        let published = if kind == "contract" {
            repo_root().join("contracts/contract.schema.json")
        } else {
            repo_root().join(format!("schemas/{kind}.schema.json"))
        };
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.args(["schema", kind]);
        assert!(
            fs::read_to_string(&published).unwrap() == run(command, b"").stdout,
            "{} is out of date: `toolgate schema {kind} > {}`",
            published.display(),
            published.display()
        );
    }
}

#[test]
fn every_kind_prints_a_schema_the_gate_compiles() {
    for kind in KINDS {
        standalone_validator(&schema(kind)).unwrap_or_else(|error| panic!("{kind}: {error}"));
    }
    assert_eq!(
        schema("contract"),
        serde_json::from_str::<Value>(CONTRACT_SCHEMA).unwrap()
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(["schema", "fixture"]);
    let outcome = run(command, b"");
    assert_eq!(outcome.code, 2);
    assert!(
        outcome
            .stderr
            .contains(&format!("possible values: {}", KINDS.join(", "))),
        "{}",
        outcome.stderr
    );
}

#[test]
fn the_sidecar_schema_and_the_sidecar_reader_agree() {
    let validator = standalone_validator(&schema("sidecar")).unwrap();
    let mut sidecars = Vec::new();
    files(&repo_root().join("fixtures"), ".expect.yaml", &mut sidecars);
    assert!(sidecars.len() > 100);
    for path in &sidecars {
        let text = fs::read_to_string(path).unwrap();
        let document: Value = read_strict_yaml(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&document)
            .map(|error| error.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
    let corpus = [
        "expect: { outcome: admitted }",
        "expect: { outcome: admitted, code: NOT_FOUND }",
        "expect: { outcome: admitted_failure, code: NOT_FOUND, retryable: false }",
        "expect: { outcome: admitted_failure, code: NOT_FOUND }",
        "expect: { outcome: admitted_failure, code: NOT_FOUND, retryable: false, layer: schema }",
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }",
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false, rule: required }",
        "expect: { outcome: rejected, layer: semantic, code: INVALID_RESPONSE, retryable: false }",
        "expect: { outcome: rejected, layer: semantic, code: INVALID_RESPONSE, retryable: true, rule: fresh }",
        "expect: { outcome: rejected, layer: kernel, code: INVALID_RESPONSE, retryable: false }",
        "expect: { outcome: rejected, layer: schema, code: TEAPOT, retryable: false }",
        "expect: { outcome: rejected, layer: schema, code: INVALID_RESPONSE }",
        "expect: { outcome: maybe }",
        "expect: { outcome: admitted, extra: 1 }",
        "expect: { outcome: admitted }\nversions: [v1]",
        "expect: { outcome: admitted }\nversions: []",
        "expect: { outcome: admitted }\nversions: [v1, v1]",
        "expect: { outcome: admitted }\nversions: [v0]",
        "expect: { outcome: admitted }\nversions: [version1]",
        "expect_by_version:\n  v1: { outcome: admitted }\n  v2: { outcome: rejected, layer: schema, code: INVALID_RESPONSE, retryable: false }",
        "expect_by_version: {}",
        "expect_by_version:\n  latest: { outcome: admitted }",
        "expect_by_version:\n  v1: { outcome: admitted }\nversions: [v1]",
        "expect_by_version:\n  v1: { outcome: admitted }\nexpect: { outcome: admitted }",
        "description: nothing expected",
        "expect: { outcome: admitted }\nrequest: other.json",
        "expect: { outcome: admitted }\nrequest: ../../etc/passwd",
        "expect: { outcome: admitted }\nrequest: ..",
        "expect: { outcome: admitted }\nrequest: ~root",
        "expect: { outcome: admitted }\nrequest: \"\"",
        "expect: { outcome: admitted }\nrequest: a\\\\b.json",
        "expect: { outcome: admitted }\nupstream_status: 503",
        "expect: { outcome: admitted }\nupstream_status: 70000",
        "expect: { outcome: admitted }\nupstream_status: \"503\"",
        "expect: { outcome: admitted }\ncanaries: [Ignore all prior]",
        "expect: { outcome: admitted }\ncovers: [extra_property]",
        "expect: { outcome: admitted }\ntwin: a\nnow: 2026-11-29T12:00:00Z\nrequest_id: req.1",
        "expect: { outcome: admitted }\nowner: me",
    ];
    for text in corpus {
        let parsed = Sidecar::parse(text);
        let document: Result<Value, _> = read_strict_yaml(text);
        let valid = document
            .as_ref()
            .is_ok_and(|document| validator.is_valid(document));
        assert_eq!(
            parsed.is_ok(),
            valid,
            "{text:?}: the reader says {:?}, the schema says {valid}",
            parsed.err().map(|error| error.to_string())
        );
    }
}

#[test]
fn the_request_schema_and_the_request_reader_agree() {
    let validator = standalone_validator(&schema("request")).unwrap();
    let mut requests = Vec::new();
    files(&repo_root().join("fixtures"), ".json", &mut requests);
    let requests: Vec<_> = requests
        .into_iter()
        .filter(|path| {
            path.parent()
                .and_then(Path::parent)
                .is_some_and(|grand| grand.ends_with("fixtures"))
        })
        .collect();
    assert!(requests.len() >= 4, "{requests:?}");
    for path in &requests {
        let document: Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
        assert!(validator.is_valid(&document), "{}", path.display());
    }
    let corpus = [
        r#"{"request_id": "req.1"}"#,
        r#"{"request_id": "req.1", "now": "2026-11-29T12:00:00Z", "context": {"a": [1]}, "upstream": "GET /x", "upstream_status": 503}"#,
        r#"{"request_id": "req.1", "now": "2026-11-29T12:00:00"}"#,
        r#"{"request_id": "req.1", "now": "yesterday"}"#,
        r#"{"request_id": "req.1", "now": "2026-02-30T12:00:00Z"}"#,
        r#"{"now": "2026-11-29T12:00:00Z"}"#,
        r#"{"request_id": 7}"#,
        r#"{"request_id": "req.1", "context": []}"#,
        r#"{"request_id": "req.1", "upstream_status": 70000}"#,
        r#"{"request_id": "req.1", "upstream_status": -1}"#,
        r#"{"request_id": "req.1", "tenant": "acme"}"#,
        r#"["req.1"]"#,
    ];
    for text in corpus {
        let parsed = parse_request_file(text.as_bytes(), Path::new("request.json"));
        let valid = validator.is_valid(&serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(
            parsed.is_ok(),
            valid,
            "{text}: reader {:?}, schema {valid}",
            parsed.err().map(|error| error.to_string())
        );
    }
}

#[test]
fn the_report_schemas_hold_the_bundled_reports_and_refuse_a_forged_one() {
    for (kind, args) in [
        ("lint-report", vec!["lint", "--format", "json"]),
        ("mutate-report", vec!["mutate", "--format", "json"]),
        (
            "diff-report",
            vec!["diff", "review_status", "v1", "v2", "--format", "json"],
        ),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command.args(&args).arg("--root").arg(repo_root());
        let outcome = run(command, b"");
        assert_eq!(outcome.code, 0, "{kind}: {}", outcome.stderr);
        let mut report: Value = serde_json::from_str(&outcome.stdout).unwrap();
        crate::common::assert_matches_schema(kind, &report);
        assert_eq!(report["format_version"], 4, "{kind}");
        // Not a rubber stamp: a member nobody documented is refused.
        report["summary"]["surprise"] = Value::from(1);
        let validator = standalone_validator(&schema(kind)).unwrap();
        assert!(
            !validator.is_valid(&report),
            "{kind} admits an undocumented member"
        );
    }
}

/// Whether `text`, as `file` of tool `t` in a fresh repository, loads with the acceptance reader.
fn acceptance_loads(file: &str, text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file.replace("TOOL", "t"));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    let root = toolgate_repo::RepoRoot::open(dir.path()).unwrap();
    if file.starts_with("fixtures") {
        toolgate_analyze::mutants::load_survivors(&root, "t").map(drop)
    } else {
        toolgate_analyze::lint::accepted(&root, "t").map(drop)
    }
    .map_err(|error| error.to_string())
}

#[test]
fn the_acceptance_schemas_and_their_readers_agree() {
    use toolgate_analyze::lint::Rule;
    use toolgate_analyze::mutants::Family;
    // The schemas list exactly the catalogues the readers know.
    let names = |schema: &Value, member: &str| -> Vec<String> {
        schema["items"]["properties"][member]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap().to_owned())
            .collect()
    };
    let families: Vec<String> = Family::ALL
        .iter()
        .map(|family| family.name().to_owned())
        .collect();
    // Every rule but object_open, which `tolerate:` declares instead.
    let rules: Vec<String> = Rule::ALL
        .iter()
        .filter(|rule| **rule != Rule::ObjectOpen)
        .map(|rule| rule.name().to_owned())
        .collect();
    assert_eq!(names(&schema("survivors"), "mutation"), families);
    assert_eq!(names(&schema("lint-acceptances"), "rule"), rules);

    for (kind, file, entry) in [
        (
            "survivors",
            "fixtures/TOOL/survivors.yaml",
            "mutation: canary_string\n  pointer: /data/note",
        ),
        (
            "lint-acceptances",
            "contracts/TOOL/lint.yaml",
            "rule: string_unbounded\n  file: a.schema.json\n  pointer: /properties/note",
        ),
    ] {
        let validator = standalone_validator(&schema(kind)).unwrap();
        // Every bundled file of the kind validates.
        let name = Path::new(file)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut bundled = Vec::new();
        files(
            &repo_root().join(&file[..file.find('/').unwrap()]),
            &name,
            &mut bundled,
        );
        assert!(!bundled.is_empty(), "{kind}");
        for path in &bundled {
            let document: Value = read_strict_yaml(&fs::read_to_string(path).unwrap()).unwrap();
            assert!(validator.is_valid(&document), "{}", path.display());
        }
        // Over a corpus of edits, the schema and the reader accept the same files.
        let corpus = [
            format!("- {entry}\n  reason: kept on purpose\n"),
            format!("- {entry}\n  versions: [v2]\n  reason: r\n"),
            format!("- {entry}\n  versions: []\n  reason: r\n"),
            format!("- {entry}\n  versions: [v1, v1]\n  reason: r\n"),
            format!("- {entry}\n  versions: [latest]\n  reason: r\n"),
            format!("- {entry}\n  reason: \"  \"\n"),
            format!("- {entry}\n"),
            format!("- {entry}\n  reason: r\n  owner: me\n"),
            "".to_owned(),
            "# nothing accepted yet\n".to_owned(),
            format!("{}\n  reason: r\n", entry.replace("\n  ", "\n")),
            "- mutation: canary_strings\n  rule: string_unbounded\n  pointer: /x\n  reason: r\n"
                .to_owned(),
            format!(
                "- {}\n  reason: r\n",
                entry.replace("pointer: /", "pointer: ")
            ),
            format!(
                "- {}\n  reason: r\n",
                entry
                    .replace("pointer: /data/note", "pointer: \"/\"")
                    .replace("pointer: /properties/note", "pointer: \"/\"")
            ),
            format!(
                "- {}\n  reason: r\n",
                entry
                    .replace("pointer: /data/note", "pointer: \"\"")
                    .replace("pointer: /properties/note", "pointer: \"\"")
            ),
        ];
        // A field_missing entry names its field, and only it does.
        let fields: Vec<String> = if kind == "lint-acceptances" {
            [
                "- rule: field_missing\n  file: a.json\n  pointer: /x\n  reason: r\n",
                "- rule: field_missing\n  file: a.json\n  pointer: /x\n  field: note\n  reason: r\n",
                "- rule: field_missing\n  file: a.json\n  pointer: /x\n  field: \" \"\n  reason: r\n",
                "- rule: string_unbounded\n  file: a.json\n  pointer: /x\n  field: note\n  reason: r\n",
                // An open object is declared with `tolerate:`, never accepted here.
                "- rule: object_open\n  file: a.json\n  pointer: /x\n  reason: r\n",
            ]
            .map(str::to_owned)
            .to_vec()
        } else {
            Vec::new()
        };
        for text in corpus.iter().chain(&fields) {
            let read = acceptance_loads(file, text);
            let document: Result<Value, _> = read_strict_yaml(text);
            let valid = match &document {
                Ok(document) => validator.is_valid(document),
                // An empty or comment-only file is no document; the reader accepts it as empty.
                Err(_) => text.trim().is_empty() || text.trim().starts_with('#'),
            };
            assert_eq!(
                read.is_ok(),
                valid,
                "{kind} {text:?}: the reader says {read:?}, the schema says {valid}"
            );
        }
    }
}

/// The `--auth` file's schema admits the shipped and documented files and refuses what the
/// reader refuses for its form (`mcp::auth::bad_auth_files_are_configuration_errors` runs the
/// reader on the same mistakes); a pin toolgate writes is one its schema admits.
#[test]
fn the_auth_and_pin_schemas_hold_what_their_readers_hold() {
    let auth = standalone_validator(&schema("auth")).unwrap();
    let shipped: Value = serde_saphyr::from_str(
        &fs::read_to_string(repo_root().join("deploy/kubernetes/auth.yaml")).unwrap(),
    )
    .unwrap();
    let shipped: Value =
        serde_saphyr::from_str(shipped["data"]["auth.yaml"].as_str().unwrap()).unwrap();
    assert!(auth.is_valid(&shipped), "{shipped}");
    let readme = fs::read_to_string(repo_root().join("doc/guide/src/mcp.md")).unwrap();
    let documented = readme
        .split("```yaml\nresource: ")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the guide documents the --auth file");
    let documented: Value = serde_saphyr::from_str(&format!("resource: {documented}")).unwrap();
    assert!(auth.is_valid(&documented), "{documented}");
    let base = "resource: https://x.test/mcp\nauthorization_servers: [https://auth.test]\njwks: jwks.json\n";
    for wrong in [
        format!("{base}algorithms: [HS256]\n"),
        format!("{base}algorithms: [none]\n"),
        format!("{base}surprise: 1\n"),
        base.replace("https://x.test/mcp", "http://x.test/mcp"),
        base.replace("[https://auth.test]", "[]"),
        format!("{base}tools:\n  weather: {{scopes: [a], roles: [b]}}\n"),
    ] {
        let document: Value = serde_saphyr::from_str(&wrong).unwrap();
        assert!(!auth.is_valid(&document), "{wrong}");
    }

    let pin = standalone_validator(&schema("pin")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("contracts/weather")).unwrap();
    let root = toolgate_repo::RepoRoot::open(dir.path()).unwrap();
    let listing = serde_json::json!({"name": "weather", "description": "The weather\u{202e}.", "inputSchema": {"type": "object"}, "icons": []});
    toolgate_mcp::write_pin(&root, "weather", &listing).unwrap();
    let written: Value = serde_json::from_slice(
        &fs::read(dir.path().join("contracts/weather/upstream.pin.json")).unwrap(),
    )
    .unwrap();
    assert!(pin.is_valid(&written), "{written}");
    assert_eq!(written["descriptor"]["description"], "The weather\u{202e}.");
}
