//! Contracts written to hurt: recursion, a definition used twice at every level, a 60,000-value
//! enum, a pattern whose automaton is enormous, long `allOf` chains, fifteen hundred schema files,
//! a fixture with thousands of places to mutate. Every verb (`check`, `test`, `lint`, `mutate`,
//! `diff`) runs on each under a memory cap and a CPU-time limit, and must answer (exit 0 or 1) or
//! refuse with a clear message (exit 2), never crash or grow without bound. The budgets are
//! RELIABILITY.md's; release-build figures for each case are there too.
//!
//! Each case is its own repository (one tool, versions v1 and v2 that differ in the pathological
//! part, one accepted fixture), so a failure names the case. `TOOLGATE_KEEP_PATHOLOGICAL=DIR`
//! writes them under DIR to run by hand.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Run, run_within, snapshot_env};

/// The address-space cap every verb runs under, in KiB (RELIABILITY.md: 512 MB).
const MEMORY_CAP_KIB: u64 = 512 * 1024;
/// The CPU-time limit every verb runs under, in seconds (RELIABILITY.md: 30 s). CPU time, not
/// wall time: a loaded CI machine must not fail the budget, a runaway computation must.
const CPU_SECONDS: u64 = 30;
/// A hang (waiting, not computing) is caught by the wall clock instead.
const WALL_LIMIT: Duration = Duration::from_secs(180);

const REQUEST_ID: &str = "req.J7q94MkP";

/// One pathological contract: what its data schema is in each version (plus any extra schema
/// files), and the data of its accepted fixture.
struct Case {
    tool: &'static str,
    v1: Schemas,
    v2: Schemas,
    data: Value,
}

/// The data schema and the other files of one version.
struct Schemas {
    data: Value,
    extra: Vec<(String, Value)>,
}

impl Schemas {
    fn data(data: Value) -> Schemas {
        Schemas {
            data,
            extra: Vec::new(),
        }
    }
}

fn envelope(tool: &str) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "oneOf": [
            {
                "type": "object",
                "required": ["tool", "request_id", "outcome", "data"],
                "properties": {
                    "tool": {"const": tool},
                    "request_id": {"type": "string", "maxLength": 64},
                    "outcome": {"const": "success"},
                    "data": {"$ref": "data.schema.json"}
                },
                "additionalProperties": false
            },
            toolgate_gate::internals::failure_schema(tool, json!({"type": "string", "maxLength": 64}))
        ]
    })
}

fn agent(tool: &str) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["tool", "request_id", "outcome", "data"],
        "properties": {
            "tool": {"const": tool},
            "request_id": {"type": "string"},
            "outcome": {"const": "success"},
            "data": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "maxLength": 64}},
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

/// The data schema every case shares: a promised `name`, and the pathological member `rest`.
fn data_with(rest: Value) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string", "maxLength": 64}, "rest": rest},
        "additionalProperties": false
    })
}

/// Writes `value` compactly: the enum case is close to the 1 MiB a schema file may hold.
fn write_json(path: &Path, value: &Value) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, value.to_string() + "\n").unwrap();
}

impl Case {
    fn write(&self, root: &Path) {
        let tool = self.tool;
        for (version, schemas) in [(1, &self.v1), (2, &self.v2)] {
            let folder = root.join(format!("contracts/{tool}/v{version}"));
            fs::create_dir_all(&folder).unwrap();
            fs::write(
                folder.join("contract.yaml"),
                format!(
                    "tool: {tool}\nversion: {version}\ndirection: result\n\
                     limits: {{ max_bytes: 1048576, max_depth: 64 }}\n\
                     shape:\n  schema: envelope.schema.json\n  \
                     outcome: {{ pointer: /outcome, success: success, failure: failure }}\n  \
                     error_code: /error/code\n  \
                     correlation: {{ tool: /tool, request_id: /request_id }}\n  \
                     fields:\n    - {{ name: name, from: /data/name }}\n\
                     agent_schema: agent.schema.json\n"
                ),
            )
            .unwrap();
            write_json(&folder.join("envelope.schema.json"), &envelope(tool));
            write_json(&folder.join("agent.schema.json"), &agent(tool));
            write_json(&folder.join("data.schema.json"), &schemas.data);
            for (name, schema) in &schemas.extra {
                write_json(&folder.join(name), schema);
            }
        }
        let fixtures = root.join(format!("fixtures/{tool}"));
        write_json(
            &fixtures.join("request.json"),
            &json!({"request_id": REQUEST_ID, "now": "2026-11-29T12:00:00Z"}),
        );
        fs::create_dir_all(fixtures.join("accepted")).unwrap();
        let body = json!({"tool": tool, "request_id": REQUEST_ID, "outcome": "success", "data": self.data});
        fs::write(
            fixtures.join("accepted/pathological.json"),
            serde_json::to_vec(&body).unwrap(),
        )
        .unwrap();
        fs::write(
            fixtures.join("accepted/pathological.expect.yaml"),
            "description: \"The pathological part, filled in.\"\nexpect: { outcome: admitted }\n",
        )
        .unwrap();
    }
}

/// `toolgate ARGS` in `root` under the memory cap and CPU limit (bash's `ulimit`: RLIMIT_AS and
/// RLIMIT_CPU), with `stdin` from a file of `root` when given.
fn bounded(root: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_CAP_KIB} && ulimit -t {CPU_SECONDS} && exec \"$@\" < \"${{STDIN_FILE:-/dev/null}}\""
        ))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(root);
    if let Some(file) = stdin {
        command.env("STDIN_FILE", root.join(file));
    }
    snapshot_env(&mut command, true);
    run_within(command, WALL_LIMIT)
}

/// Every verb on `case`: each answers or refuses in words, within the budgets.
fn every_verb_is_bounded(case: &Case) {
    let kept = std::env::var_os("TOOLGATE_KEEP_PATHOLOGICAL");
    let temporary = tempfile::tempdir().unwrap();
    let root = match &kept {
        Some(dir) => Path::new(dir).join(case.tool),
        None => temporary.path().to_path_buf(),
    };
    case.write(&root);
    let tool = case.tool;
    let request = format!("fixtures/{tool}/request.json");
    let verbs: [(&str, Vec<&str>, Option<&str>); 5] = [
        (
            "check",
            vec!["check", tool, "--request", &request],
            Some("body.json"),
        ),
        ("test", vec!["test"], None),
        ("lint", vec!["lint", tool], None),
        ("mutate", vec!["mutate", tool], None),
        ("diff", vec!["diff", tool, "v1", "v2"], None),
    ];
    fs::copy(
        root.join(format!("fixtures/{tool}/accepted/pathological.json")),
        root.join("body.json"),
    )
    .unwrap();
    for (verb, args, stdin) in verbs {
        let run = bounded(&root, &args, stdin);
        assert!(
            matches!(run.code, 0..=2),
            "`toolgate {}` on {tool} did not finish within {MEMORY_CAP_KIB} KiB and {CPU_SECONDS} s of CPU (exit {}):\nstderr:\n{}",
            args.join(" "),
            run.code,
            tail(&run.stderr)
        );
        if run.code == 2 {
            let first = run.stderr.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("toolgate: error: "),
                "{verb} on {tool} refused without saying why:\n{}",
                tail(&run.stderr)
            );
        }
        if verb == "check" {
            assert_eq!(
                run.code, 0,
                "{tool}: the gate admits the fixture\n{}",
                run.stderr
            );
        }
        if kept.is_some() {
            eprintln!("{tool}: toolgate {} -> {}", args.join(" "), run.code);
        }
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[test]
fn a_binary_tree() {
    let tree = |extra: Value| {
        let mut properties = json!({"left": {"$ref": "#/$defs/tree"}, "right": {"$ref": "#/$defs/tree"}, "value": {"type": "integer"}});
        properties
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"type": "object", "properties": properties, "additionalProperties": false})
    };
    let with = |extra: Value| {
        let mut data = data_with(json!({"$ref": "#/$defs/tree"}));
        data["$defs"] = json!({"tree": tree(extra)});
        Schemas::data(data)
    };
    let mut data = json!({"value": 1});
    for depth in 0..12 {
        data = json!({"left": data, "right": {"value": depth}, "value": 0});
    }
    every_verb_is_bounded(&Case {
        tool: "binary_tree",
        v1: with(json!({})),
        v2: with(json!({"label": {"type": "string", "maxLength": 16}})),
        data: json!({"name": "root", "rest": data}),
    });
}

#[test]
fn a_definition_used_twice_at_every_level() {
    let doubling = |leaf: Value| {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), leaf);
        for level in 1..40 {
            let previous = format!("#/$defs/d{}", level - 1);
            defs.insert(
                format!("d{level}"),
                json!({"type": "object", "properties": {"a": {"$ref": previous}, "b": {"$ref": previous}}, "additionalProperties": false}),
            );
        }
        let mut data = data_with(json!({"$ref": "#/$defs/d39"}));
        data["$defs"] = Value::Object(defs);
        Schemas::data(data)
    };
    let mut value = json!("leaf");
    for _ in 0..39 {
        value = json!({"a": value});
    }
    every_verb_is_bounded(&Case {
        tool: "doubling_refs",
        v1: doubling(json!({"type": "string"})),
        v2: doubling(json!({"type": "string", "maxLength": 8})),
        data: json!({"name": "root", "rest": value}),
    });
}

#[test]
fn an_enum_of_sixty_thousand_values() {
    let values: Vec<Value> = (0..60_000).map(|n| json!(format!("v{n:05}"))).collect();
    let mut more = values.clone();
    more.push(json!("v60000"));
    every_verb_is_bounded(&Case {
        tool: "huge_enum",
        v1: Schemas::data(data_with(json!({"enum": values}))),
        v2: Schemas::data(data_with(json!({"enum": more}))),
        data: json!({"name": "root", "rest": "v31337"}),
    });
}

#[test]
fn a_pattern_with_an_enormous_automaton() {
    let pattern = |bound: u32| json!({"type": "string", "pattern": format!("^\\w{{1,{bound}}}$")});
    every_verb_is_bounded(&Case {
        tool: "huge_pattern",
        v1: Schemas::data(data_with(pattern(20_000))),
        v2: Schemas::data(data_with(pattern(20_001))),
        data: json!({"name": "root", "rest": "word_characters_only"}),
    });
}

#[test]
fn long_all_of_chains() {
    // Nested nearly as deep as a schema file may be (100 containers), and a chain of 500
    // definitions, each all of the one before and a member of its own.
    let chain = |last: Value| {
        let mut nested = json!({"type": "object"});
        for _ in 0..45 {
            nested = json!({"allOf": [nested]});
        }
        let mut defs = serde_json::Map::new();
        defs.insert("c0".into(), json!({"type": "object"}));
        for link in 1..500 {
            defs.insert(
                format!("c{link}"),
                json!({"allOf": [{"$ref": format!("#/$defs/c{}", link - 1)}, {"properties": {format!("f{link}"): {"type": "string"}}}]}),
            );
        }
        defs.insert(
            "c500".into(),
            json!({"allOf": [{"$ref": "#/$defs/c499"}, last]}),
        );
        let mut data = data_with(json!({"allOf": [nested, {"$ref": "#/$defs/c500"}]}));
        data["$defs"] = Value::Object(defs);
        Schemas::data(data)
    };
    every_verb_is_bounded(&Case {
        tool: "deep_all_of",
        v1: chain(json!({"properties": {"f1": {"maxLength": 10}}})),
        v2: chain(json!({"properties": {"f1": {"maxLength": 9}}})),
        data: json!({"name": "root", "rest": {"f1": "short", "f499": "x"}}),
    });
}

#[test]
fn fifteen_hundred_schema_files() {
    let files = |changed: usize| {
        let mut properties = serde_json::Map::new();
        let mut extra = Vec::new();
        for n in 0..1_500 {
            let name = format!("part{n:04}.schema.json");
            properties.insert(format!("p{n}"), json!({"$ref": name}));
            let bound = if n == changed { 9 } else { 10 };
            extra.push((
                name,
                json!({"type": "object", "properties": {"x": {"type": "string", "maxLength": bound}}, "additionalProperties": false}),
            ));
        }
        let data = data_with(
            json!({"type": "object", "properties": properties, "additionalProperties": false}),
        );
        Schemas { data, extra }
    };
    every_verb_is_bounded(&Case {
        tool: "many_files",
        v1: files(usize::MAX),
        v2: files(700),
        data: json!({"name": "root", "rest": {"p0": {"x": "a"}, "p700": {"x": "b"}}}),
    });
}

#[test]
fn a_fixture_with_thousands_of_places() {
    let item = json!({"type": "object", "required": ["id", "n", "tags"], "properties": {"id": {"type": "string", "maxLength": 16}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 8}}, "additionalProperties": false});
    let list = |max: u32| {
        Schemas::data(data_with(
            json!({"type": "array", "items": item, "maxItems": max}),
        ))
    };
    let items: Vec<Value> = (0..1_500)
        .map(|n| json!({"id": format!("item{n}"), "n": n, "tags": ["a", "b"]}))
        .collect();
    let case = Case {
        tool: "big_fixture",
        v1: list(5_000),
        v2: list(4_000),
        data: json!({"name": "root", "rest": items}),
    };
    assert!(serde_json::to_vec(&case.data).unwrap().len() > 50_000);
    every_verb_is_bounded(&case);

    // The report says what the sample left out, and an accepted survivor at a place the sample
    // would not reach is still judged at its place (not stale for want of a mutant).
    let dir = tempfile::tempdir().unwrap();
    case.write(dir.path());
    fs::write(
        dir.path().join("fixtures/big_fixture/survivors.yaml"),
        "- mutation: empty_string\n  pointer: /data/rest/1499/tags/1\n  reason: a tag may be empty\n",
    )
    .unwrap();
    let run = bounded(
        dir.path(),
        &["mutate", "big_fixture", "--format", "json"],
        None,
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    crate::common::assert_matches_schema("mutate-report", &report);
    assert!(report["summary"]["places_left_out"].as_u64().unwrap() > 10_000);
    assert_eq!(report["stale_acceptances"], json!([]), "{report:#}");
    let accepted: Vec<&Value> = report["survivors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|survivor| survivor["accepted"] == true)
        .collect();
    assert_eq!(accepted.len(), 2, "v1 and v2: {report:#}");
    assert!(
        accepted
            .iter()
            .all(|survivor| survivor["pointer"] == "/data/rest/1499/tags/1")
    );

    // In a pull request, the sample is routine: a line of the log and of the report, never an
    // annotation crowding out the ones that matter.
    let run = bounded(dir.path(), &["test", "--format", "github"], None);
    let sampled = "places were not mutated: a family mutates at most";
    assert!(
        run.stdout
            .lines()
            .any(|line| line.starts_with("note: ") && line.contains(sampled)),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout
            .lines()
            .any(|line| line.starts_with("::") && line.contains(sampled)),
        "{}",
        run.stdout
    );
}
