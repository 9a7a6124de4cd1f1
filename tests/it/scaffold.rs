//! `toolgate new` on descriptions as their authors split and shape them: every `$ref` followed
//! (into `#/paths/…`, into a file beside the description), what it cannot follow refused with
//! the reason, an empty schema kept as "anything" and listed, annotations copied only where they
//! compile.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::{Run, run, snapshot_env};

fn toolgate(root: &Path, args: &[&str], ci: bool) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(args).arg("--root").arg(root);
    snapshot_env(&mut command, ci);
    run(command, b"")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// `description` written as `openapi.json` in `api`, scaffolded as TOOL from OPERATION into
/// a repository beside it; its root.
fn scaffold_description(
    dir: &Path,
    api: &Path,
    description: &Value,
    tool: &str,
    operation: &str,
) -> std::path::PathBuf {
    let spec = api.join("openapi.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.join("repo");
    fs::create_dir(&root).unwrap();
    scaffold(&root, tool, &spec, operation);
    root
}

/// An OpenAPI 3.1 description of one GET operation, `GET path` named `operation`, whose 200
/// response's JSON media object is `media` (its `schema`, and its `example` if any).
fn one_operation(path: &str, operation: &str, media: Value) -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {path: {"get": {
            "operationId": operation,
            "responses": {"200": {"description": "ok", "content": {"application/json": media}}}
        }}}
    })
}

/// An OpenAPI description of one operation, `thing`, whose response has a required `id` (an
/// enum, with an example) beside `properties`.
fn thing_description(properties: Value) -> Value {
    let mut schema = json!({"type": "object", "required": ["id"], "properties": {
        "id": {"type": "string", "enum": ["a", "b"]}
    }});
    for (name, property) in properties.as_object().into_iter().flatten() {
        schema["properties"][name] = property.clone();
    }
    one_operation(
        "/thing",
        "thing",
        json!({"schema": schema, "example": {"id": "a"}}),
    )
}

/// `toolgate new TOOL --from-openapi SPEC --operation OP` into `root`.
fn scaffold(root: &Path, tool: &str, spec: &Path, operation: &str) -> Run {
    let new = toolgate(
        root,
        &[
            "new",
            tool,
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            operation,
        ],
        true,
    );
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    new
}

/// A description whose response schema is a file beside it (as split descriptions are written),
/// and whose member refers into another operation under `#/paths/…` (every one of DigitalOcean's
/// references does): both are followed, and every object they reach is closed.
#[test]
fn references_into_paths_and_into_files_beside_the_description_are_followed_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let api = dir.path().join("api");
    fs::create_dir_all(api.join("schemas")).unwrap();
    fs::write(
        api.join("schemas/droplet.yaml"),
        "type: object\nrequired: [id, status]\nproperties:\n  id: {type: integer}\n  status: {type: string, enum: [new, active, off]}\n  region: {$ref: '../region.yaml#/Region'}\n",
    )
    .unwrap();
    fs::write(
        api.join("region.yaml"),
        "Region:\n  type: object\n  properties:\n    slug: {type: string, maxLength: 16}\n",
    )
    .unwrap();
    let description = json!({
        "openapi": "3.0.3",
        "info": {"title": "droplets", "version": "1"},
        "paths": {
            "/v2/droplets/{id}": {"get": {
                "operationId": "droplets_get",
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["droplet"],
                        "properties": {
                            "droplet": {"$ref": "schemas/droplet.yaml"},
                            "links": {"$ref": "#/paths/~1v2~1droplets/get/responses/200/content/application~1json/schema/properties/links"}
                        }
                    },
                    "example": {"droplet": {"id": 3164444, "status": "active", "region": {"slug": "nyc3"}}}
                }}}}
            }},
            "/v2/droplets": {"get": {
                "operationId": "droplets_list",
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"type": "object", "properties": {
                        "links": {"type": "object", "properties": {"next": {"type": "string"}}}
                    }}
                }}}}
            }}
        }
    });
    let root = scaffold_description(dir.path(), &api, &description, "droplet", "droplets_get");
    let schema = read_json(&root.join("contracts/droplet/v1/response.schema.json"));
    // Closed where each is used (a definition is a part; the place that holds it closes it).
    let defs = schema["$defs"].as_object().unwrap();
    let droplet = defs
        .values()
        .find(|def| def.pointer("/properties/status/enum").is_some())
        .unwrap_or_else(|| panic!("the file's schema is in $defs: {schema:#}"));
    let region = defs
        .values()
        .find(|def| def.pointer("/properties/slug").is_some())
        .unwrap_or_else(|| panic!("the second file's schema is in $defs: {schema:#}"));
    assert_eq!(region["properties"]["slug"]["maxLength"], 16);
    assert!(
        defs.values()
            .any(|def| def.pointer("/properties/next").is_some()),
        "the #/paths/… schema is in $defs: {schema:#}"
    );
    for closed in [
        &schema["properties"]["droplet"],
        &schema["properties"]["links"],
        &droplet["properties"]["region"],
    ] {
        assert_eq!(closed["unevaluatedProperties"], false, "{schema:#}");
    }
    // The gate says so too: the example with one member more in each object is refused.
    let accept = toolgate(&root, &["test", "--accept", "droplet"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    for extra in [
        json!({"droplet": {"id": 1, "status": "new", "admin_token": "x"}}),
        json!({"droplet": {"id": 1, "status": "new"}, "links": {"next": "n", "injected": "x"}}),
        json!({"droplet": {"id": 1, "status": "new", "region": {"slug": "a", "b": 1}}}),
    ] {
        let response = root.join("response.json");
        fs::write(&response, extra.to_string()).unwrap();
        let check = toolgate(
            &root,
            &[
                "check",
                "droplet",
                response.to_str().unwrap(),
                "--request",
                root.join("fixtures/droplet/request.json").to_str().unwrap(),
            ],
            true,
        );
        assert_eq!(check.code, 1, "{extra}: {}\n{}", check.stdout, check.stderr);
    }
}

/// A reference the scaffold cannot follow (a URL, a file outside the description's folder)
/// refuses the value it names, and the contract's header says why: never a value left open.
#[test]
fn a_reference_that_cannot_be_followed_refuses_its_value_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let api = dir.path().join("api");
    fs::create_dir_all(&api).unwrap();
    fs::write(dir.path().join("outside.json"), r#"{"type": "string"}"#).unwrap();
    let description = thing_description(json!({
        "remote": {"$ref": "https://example.com/schemas/remote.json"},
        "secret": {"$ref": "../outside.json"}
    }));
    let root = scaffold_description(dir.path(), &api, &description, "thing", "thing");
    let schema = read_json(&root.join("contracts/thing/v1/response.schema.json"));
    assert_eq!(schema["properties"]["remote"], false, "{schema:#}");
    assert_eq!(schema["properties"]["secret"], false, "{schema:#}");
    let contract = fs::read_to_string(root.join("contracts/thing/v1/contract.yaml")).unwrap();
    assert!(contract.contains("never fetches one"), "{contract}");
    assert!(
        contract.contains("outside the description's folder"),
        "{contract}"
    );
}

/// A description whose references name the secrets beside it (`.env`, a hidden folder, a
/// credentials file): nothing of them reaches any file `toolgate new` writes. Hidden files are
/// not read, and a value a reference names is copied only if it is a schema.
#[test]
fn secrets_beside_a_description_never_reach_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let api = dir.path().join("api");
    fs::create_dir_all(api.join(".config")).unwrap();
    fs::write(api.join(".env"), "API_KEY=sk-live-CANARY0\n").unwrap();
    fs::write(
        api.join(".config/token.json"),
        r#"{"type": "string", "default": "CANARY1"}"#,
    )
    .unwrap();
    fs::write(
        api.join("credentials.json"),
        r#"{"client_id": "CANARY2", "client_secret": "CANARY3", "type": "service_account"}"#,
    )
    .unwrap();
    let description = thing_description(json!({
        "env": {"$ref": ".env"},
        "token": {"$ref": ".config/token.json"},
        "credentials": {"$ref": "credentials.json"},
        "inline": {"type": "string", "maxLength": 8, "client_secret": "CANARY4"}
    }));
    let root = scaffold_description(dir.path(), &api, &description, "thing", "thing");
    let written: String = walk_files(&root)
        .iter()
        .map(|path| fs::read_to_string(path).unwrap_or_default())
        .collect();
    assert!(!written.contains("CANARY"), "{written}");
    let schema = read_json(&root.join("contracts/thing/v1/response.schema.json"));
    for member in ["env", "token", "credentials"] {
        assert!(
            schema["properties"][member] == false
                || schema["$defs"]
                    .as_object()
                    .is_some_and(|defs| defs.values().any(|def| def == &Value::Bool(false))),
            "{member}: {schema:#}"
        );
    }
}

fn walk_files(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk_files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// `toolgate new TOOL --from-openapi SPEC --operation x --field FIELD` into `root`.
fn new_with_field(root: &Path, tool: &str, spec: &Path, field: &str) -> Run {
    toolgate(
        root,
        &[
            "new",
            tool,
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            "x",
            "--field",
            field,
        ],
        true,
    )
}

/// A response schema that says nothing of its type (`{"additionalProperties": true}`): the
/// scaffold never writes a claim the schema does not hold. With an example, the root is typed
/// from it, and a field that reads the whole open root is refused before anything is written,
/// naming the members to promise instead; without one, the header says nothing is closed.
#[test]
fn an_untyped_open_response_is_typed_from_its_example_and_never_called_closed() {
    let dir = tempfile::tempdir().unwrap();
    let description = |example: Option<Value>| {
        let mut media = json!({"schema": {"additionalProperties": true}});
        if let Some(example) = example {
            media["example"] = example;
        }
        json!({
            "openapi": "3.1.0", "info": {"title": "t", "version": "1"},
            "paths": {"/x": {"get": {"operationId": "x", "responses": {"200": {
                "description": "ok", "content": {"application/json": media}}}}}}
        })
    };
    let spec = dir.path().join("with.json");
    fs::write(
        &spec,
        description(Some(json!({"body": "hello", "n": 3}))).to_string(),
    )
    .unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let whole = new_with_field(&root, "xt", &spec, "body=");
    assert_eq!(whole.code, 2, "{}\n{}", whole.stdout, whole.stderr);
    assert!(
        whole.stderr.contains("promise the members one by one")
            && whole.stderr.contains("--field body=/body --field n=/n"),
        "{}",
        whole.stderr
    );
    assert!(!root.join("contracts").exists(), "nothing is written");
    let one = new_with_field(&root, "xt", &spec, "body=/body");
    assert!(matches!(one.code, 0 | 1), "{}\n{}", one.stdout, one.stderr);
    let schema = read_json(&root.join("contracts/xt/v1/response.schema.json"));
    assert_eq!(schema["type"], "object", "{schema:#}");
    let header = fs::read_to_string(root.join("contracts/xt/v1/contract.yaml")).unwrap();
    assert!(
        header.contains("type object: the schema names no type"),
        "{header}"
    );
    // No example: nothing types the root, and nothing claims it closed.
    let bare = dir.path().join("bare.json");
    fs::write(&bare, description(None).to_string()).unwrap();
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    let new = new_with_field(&other, "yt", &bare, "body=");
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    let header = fs::read_to_string(other.join("contracts/yt/v1/contract.yaml")).unwrap();
    let schema = read_json(&other.join("contracts/yt/v1/response.schema.json"));
    assert!(schema.get("unevaluatedProperties").is_none(), "{schema:#}");
    assert!(!header.contains("dropped: closed"), "{header}");
    assert!(header.contains("nothing is closed"), "{header}");
}

/// A description with no example: the scaffold's only accepted fixture is built from the schema
/// and says so in its sidecar; `toolgate test` reports the tool unproven (neither passed nor
/// failed, and never green) and `--accept` refuses to lock it, until a real response is saved or
/// a person writes why none exists. A version whose suite fails is never locked either.
#[test]
fn a_contract_resting_on_a_synthesized_response_is_unproven_and_never_locked() {
    let dir = tempfile::tempdir().unwrap();
    let description = one_operation(
        "/order/{id}",
        "order",
        json!({
                "schema": {"type": "object", "required": ["id", "state"], "properties": {
                    "id": {"type": "integer"},
                    "state": {"type": "string", "enum": ["open", "shipped"]}
                }}
        }),
    );
    let spec = dir.path().join("openapi.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let new = scaffold(&root, "order", &spec, "order");
    assert!(
        new.stdout.contains("unproven: no documented example"),
        "{}",
        new.stdout
    );
    let sidecar = fs::read_to_string(
        root.join("fixtures/order/accepted/synthesized_from_schema.expect.yaml"),
    )
    .unwrap();
    assert!(sidecar.contains("synthesized: true"), "{sidecar}");
    let contract = fs::read_to_string(root.join("contracts/order/v1/contract.yaml")).unwrap();
    assert!(
        contract.contains("# UNPROVEN: written without a real response"),
        "{contract}"
    );
    let lock = root.join("contracts/contracts.lock");
    let locked = || {
        fs::read_to_string(&lock)
            .unwrap_or_default()
            .contains("order v1")
    };

    let accept = toolgate(&root, &["test", "--accept"], false);
    assert_eq!(accept.code, 1, "{}\n{}", accept.stdout, accept.stderr);
    assert!(
        accept.stdout.contains("order::proven: unproven"),
        "{}",
        accept.stdout
    );
    assert!(
        accept
            .stdout
            .contains("order v1 is not locked: it is unproven"),
        "{}",
        accept.stdout
    );
    assert!(!locked(), "an unproven version is not locked");
    // The filtered form refuses it too.
    let filtered = toolgate(&root, &["test", "--accept", "order::accepted"], false);
    assert_eq!(filtered.code, 1, "{}", filtered.stdout);
    assert!(
        filtered
            .stdout
            .contains("order's new versions are not locked"),
        "{}",
        filtered.stdout
    );
    assert!(!locked());
    // The JSON report says it in its own words.
    let json = toolgate(&root, &["test", "--format", "json"], true);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["passed"], false);
    assert_eq!(report["totals"]["checks_unproven"], 1);
    assert!(
        report["unproven"][0]
            .as_str()
            .unwrap()
            .starts_with("order::proven: unproven")
    );

    // A person who knows no example exists anywhere says why, and only then is it locked.
    let sidecar_path = root.join("fixtures/order/accepted/synthesized_from_schema.expect.yaml");
    fs::write(
        &sidecar_path,
        format!(
            "{sidecar}accepted_unproven: the vendor's sandbox returns no order and documents none\n"
        ),
    )
    .unwrap();
    let accept = toolgate(&root, &["test", "--accept"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    assert!(
        accept.stdout.contains("accepted unproven"),
        "{}",
        accept.stdout
    );
    assert!(locked());
    assert_eq!(toolgate(&root, &["test"], true).code, 0);
}

/// `--accept` never locks a version whose own suite fails in the run.
#[test]
fn accept_does_not_lock_a_version_whose_suite_fails() {
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.json");
    fs::write(&sample, r#"{"id": 7, "state": "open"}"#).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let new = toolgate(
        &root,
        &["new", "order", "--from-sample", sample.to_str().unwrap()],
        true,
    );
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    // A near-miss whose sidecar now expects it refused at another layer: the suite fails.
    let near_miss = root.join("fixtures/order/near-miss/near_miss.expect.yaml");
    let text = fs::read_to_string(&near_miss).unwrap();
    assert!(text.contains("layer: schema"), "{text}");
    fs::write(&near_miss, text.replace("layer: schema", "layer: parse")).unwrap();
    let accept = toolgate(&root, &["test", "--accept"], false);
    assert_eq!(accept.code, 1, "{}\n{}", accept.stdout, accept.stderr);
    assert!(
        accept.stdout.contains(
            "order v1 is not locked: its suite fails in this run (`order::near-miss::near_miss"
        ),
        "{}",
        accept.stdout
    );
    let lock = fs::read_to_string(root.join("contracts/contracts.lock")).unwrap_or_default();
    assert!(!lock.contains("order v1"), "{lock}");
}

/// A JSON response documented by example only (no schema, as a fifth of a breaking-change
/// corpus's descriptions write it): the schema is inferred from the example, which is a real
/// accepted fixture, and the suite passes. With neither, the refusal says what to do.
#[test]
fn a_response_with_an_example_and_no_schema_is_inferred_from_the_example() {
    let dir = tempfile::tempdir().unwrap();
    let description = |content: Value| {
        json!({
            "openapi": "3.0.3",
            "info": {"title": "t", "version": "1"},
            "paths": {"/status": {"get": {
                "operationId": "status",
                "responses": {"200": {"description": "ok", "content": {"application/json": content}}}
            }}}
        })
    };
    let spec = dir.path().join("openapi.json");
    fs::write(
        &spec,
        description(json!({"example": {"state": "green", "checked": 12}})).to_string(),
    )
    .unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let new = scaffold(&root, "status", &spec, "status");
    assert!(
        root.join("fixtures/status/accepted/example.json").is_file(),
        "{}",
        new.stdout
    );
    let contract = fs::read_to_string(root.join("contracts/status/v1/contract.yaml")).unwrap();
    assert!(
        contract.contains("inferred from the documented examples"),
        "{contract}"
    );
    let accept = toolgate(&root, &["test", "--accept", "status"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);

    fs::write(&spec, description(json!({})).to_string()).unwrap();
    let bare = dir.path().join("bare");
    fs::create_dir(&bare).unwrap();
    let refused = toolgate(
        &bare,
        &[
            "new",
            "status",
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            "status",
        ],
        true,
    );
    assert_eq!(refused.code, 2);
    assert!(
        refused
            .stderr
            .contains("no JSON schema and no JSON example"),
        "{}",
        refused.stderr
    );
}

/// `--next-version`: a newer description becomes v2 beside v1, with what the author decided in
/// v1 kept (its contract text, a field they chose), the newer schema in place, the newer
/// example a fixture of v2 only, and `toolgate diff` reviewing the bump at once. A field the
/// newer schema no longer declares is a to-do.
#[test]
fn next_version_writes_the_bump_beside_the_versions_and_keeps_what_was_decided() {
    let dir = tempfile::tempdir().unwrap();
    let description = |states: Value, example: Value, extra: Option<(&str, Value)>| {
        let mut properties = json!({
            "id": {"type": "integer"},
            "state": {"type": "string", "enum": states}
        });
        if let Some((name, schema)) = extra {
            properties[name] = schema;
        }
        json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {"/order/{id}": {"get": {
                "operationId": "order",
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["id", "state"], "properties": properties},
                    "example": example
                }}}}
            }}}
        })
    };
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let v1 = dir.path().join("v1.json");
    fs::write(
        &v1,
        description(
            json!(["open", "shipped"]),
            json!({"id": 1, "state": "open"}),
            None,
        )
        .to_string(),
    )
    .unwrap();
    scaffold(&root, "order", &v1, "order");
    // The author's own decision, in v1's text: a description the model is served.
    let contract = root.join("contracts/order/v1/contract.yaml");
    let text = fs::read_to_string(&contract).unwrap();
    fs::write(
        &contract,
        text.replace(
            "direction: result\n",
            "direction: result\ndescription: An order's state, as our shop reports it.\n",
        ),
    )
    .unwrap();
    let accept = toolgate(&root, &["test", "--accept", "order"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);

    let v2 = dir.path().join("v2.json");
    fs::write(
        &v2,
        description(
            json!(["open", "shipped", "cancelled"]),
            json!({"id": 2, "state": "cancelled", "carrier": "dhl"}),
            Some(("carrier", json!({"type": "string", "maxLength": 20}))),
        )
        .to_string(),
    )
    .unwrap();
    let bump = toolgate(
        &root,
        &[
            "new",
            "order",
            "--from-openapi",
            v2.to_str().unwrap(),
            "--operation",
            "order",
            "--next-version",
        ],
        true,
    );
    assert!(
        matches!(bump.code, 0 | 1),
        "{}\n{}",
        bump.stdout,
        bump.stderr
    );
    assert!(bump.stdout.contains("wrote order v2"), "{}", bump.stdout);
    assert!(
        bump.stdout.contains("toolgate diff order v1 v2"),
        "{}",
        bump.stdout
    );
    let bumped = fs::read_to_string(root.join("contracts/order/v2/contract.yaml")).unwrap();
    assert!(
        bumped.contains("version: 2\n")
            && bumped.contains("An order's state, as our shop reports it."),
        "{bumped}"
    );
    let schema = read_json(&root.join("contracts/order/v2/response.schema.json"));
    assert!(schema["properties"]["carrier"].is_object(), "{schema:#}");
    let sidecar =
        fs::read_to_string(root.join("fixtures/order/accepted/example_v2.expect.yaml")).unwrap();
    assert!(sidecar.contains("- v2"), "{sidecar}");
    // The bump is reviewed at once, and then accepted and locked.
    let diff = toolgate(&root, &["diff", "order", "v1", "v2"], true);
    assert!(
        matches!(diff.code, 0 | 1),
        "{}\n{}",
        diff.stdout,
        diff.stderr
    );
    assert!(
        diff.stdout.contains("carrier") || diff.stdout.contains("cancelled"),
        "{}",
        diff.stdout
    );
    let accept = toolgate(&root, &["test", "--accept"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    assert!(
        fs::read_to_string(root.join("contracts/contracts.lock"))
            .unwrap()
            .contains("order v2")
    );

    // A newer description without the promised member: the to-do says so.
    let v3 = dir.path().join("v3.json");
    let mut without = description(
        json!(["open"]),
        json!({"id": 3, "status": "open"}),
        Some(("status", json!({"type": "string", "enum": ["open"]}))),
    );
    without["paths"]["/order/{id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"] = json!({"type": "object", "required": ["id", "status"], "properties": {"id": {"type": "integer"}, "status": {"type": "string", "enum": ["open"]}}});
    fs::write(&v3, without.to_string()).unwrap();
    let bump = toolgate(
        &root,
        &[
            "new",
            "order",
            "--from-openapi",
            v3.to_str().unwrap(),
            "--operation",
            "order",
            "--next-version",
        ],
        true,
    );
    assert_eq!(bump.code, 1, "{}\n{}", bump.stdout, bump.stderr);
    assert!(
        bump.stdout.contains("contracts/order/v3/contract.yaml: field `state` reads /state, which the newer schema does not declare"),
        "{}",
        bump.stdout
    );
    // v1's example, which v3 refuses, says so in its sidecar, and the to-do asks whether the
    // upstream really changed.
    let sidecar =
        fs::read_to_string(root.join("fixtures/order/accepted/example.expect.yaml")).unwrap();
    assert!(
        sidecar.contains("expect_by_version:\n  v1: { outcome: admitted }\n  v2: { outcome: admitted }\n  v3: { outcome: rejected, layer: schema"),
        "{sidecar}"
    );
    assert!(
        bump.stdout
            .contains("fixtures/order/accepted/example.json: v3 decides it")
            && bump
                .stdout
                .contains("keep it if the upstream really changed"),
        "{}",
        bump.stdout
    );
    // Without a contract to follow, it says what to do.
    let none = toolgate(
        &root,
        &[
            "new",
            "other",
            "--from-openapi",
            v3.to_str().unwrap(),
            "--operation",
            "order",
            "--next-version",
        ],
        true,
    );
    assert_eq!(none.code, 2);
    assert!(none.stderr.contains("scaffold v1 first"), "{}", none.stderr);
}

/// A contract hardened by hand (the guide's advice: bounds, patterns) and bumped to a newer
/// release of the same real description (GitHub Enterprise Server 3.7 then 3.8, whose label
/// operation differs only in vendor extensions and a documentation link): every edit is carried
/// into v2, the bump reviews as no change, and v1's fixtures hold under v2 unchanged.
#[test]
fn a_hardened_contract_bumped_where_the_upstream_changed_nothing_diffs_as_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpora/real-apis/github");
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    scaffold(
        &root,
        "get_label",
        &corpus.join("label.ghes-3.7.openapi.json"),
        "issues/get-label",
    );
    let v1 = root.join("contracts/get_label/v1/response.schema.json");
    let mut schema = read_json(&v1);
    let properties = &mut schema["properties"];
    properties["color"]["pattern"] = json!("^[0-9a-fA-F]{6}$");
    properties["color"]["maxLength"] = json!(6);
    properties["name"]["maxLength"] = json!(50);
    properties["node_id"]["pattern"] = json!("^[A-Za-z0-9+/=_-]+$");
    fs::write(&v1, serde_json::to_string_pretty(&schema).unwrap() + "\n").unwrap();
    let accept = toolgate(&root, &["test", "--accept", "get_label"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);

    let bump = toolgate(
        &root,
        &[
            "new",
            "get_label",
            "--from-openapi",
            corpus.join("label.ghes-3.8.openapi.json").to_str().unwrap(),
            "--operation",
            "issues/get-label",
            "--next-version",
        ],
        true,
    );
    assert!(
        matches!(bump.code, 0 | 1),
        "{}\n{}",
        bump.stdout,
        bump.stderr
    );
    assert!(
        !bump.stdout.contains("response.schema.json#"),
        "{}",
        bump.stdout
    );
    assert_eq!(
        read_json(&root.join("contracts/get_label/v2/response.schema.json")),
        schema
    );
    let diff = toolgate(&root, &["diff", "get_label", "v1", "v2"], true);
    assert_eq!(diff.code, 0, "{}\n{}", diff.stdout, diff.stderr);
    assert!(diff.stdout.contains("changes (0)"), "{}", diff.stdout);
    let accept = toolgate(&root, &["test", "--accept", "get_label"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    let ci = toolgate(&root, &["test", "get_label"], true);
    assert_eq!(ci.code, 0, "{}\n{}", ci.stdout, ci.stderr);
}

/// The scaffold follows what the description says over what a name suggests, and reads what
/// real descriptions say their own way (shapes from Twilio's, Spotify's and Kubernetes'): a
/// timestamp-like name with a format of its own, a description in milliseconds or an example
/// that is no RFC 3339 date-time gets no `date-time`; an object with no declared member is
/// open, not closed to `{}`; `nullable` outside 3.0 and `x-nullable` admit null, Kubernetes'
/// `Time` is null when unset and its `IntOrString` an integer; an enum reached through `allOf`
/// gets no `maxLength`. A real response in those shapes passes with no hand edit.
#[test]
fn the_scaffold_follows_what_the_description_says_over_what_a_name_suggests() {
    let dir = tempfile::tempdir().unwrap();
    let mut description = one_operation(
        "/calls/{sid}",
        "call",
        json!({
                "schema": {"type": "object", "required": ["sid", "status"], "properties": {
                    "sid": {"type": "string", "pattern": "^CA[0-9a-f]{32}$"},
                    "status": {"allOf": [{"$ref": "#/components/schemas/call_status"}], "description": "The call's status"},
                    "start_time": {"type": "string", "format": "date-time-rfc-2822", "nullable": true},
                    "queue_time": {"type": "string", "description": "The wait time in milliseconds"},
                    "release_date": {"type": "string", "example": "1981-12"},
                    "created_at": {"type": "string"},
                    "subresource_uris": {"type": "object"},
                    "preview_url": {"type": "string", "description": "A link to a 30 second preview (MP3 format) of the track. Can be `null`"},
                    "next": {"type": "string", "nullable": true},
                    "price": {"type": "string", "x-nullable": true},
                    "deletionTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
                    "port": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}
                }},
                "example": {
                    "sid": "CAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                    "status": "queued",
                    "start_time": "Tue, 10 Aug 2010 08:02:17 +0000",
                    "queue_time": "1000",
                    "release_date": "1981-12",
                    "created_at": "2010-08-10T08:02:17Z",
                    "subresource_uris": {"notifications": "/2010-04-01/Notifications.json"},
                    "preview_url": null,
                    "next": null,
                    "price": null,
                    "deletionTimestamp": null,
                    "port": 8080
                }
        }),
    );
    description["components"] = json!({"schemas": {
        "call_status": {"type": "string", "enum": ["queued", "ringing", "completed"]},
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"}
    }});
    let api = dir.path().join("api");
    fs::create_dir(&api).unwrap();
    let root = scaffold_description(dir.path(), &api, &description, "call", "call");
    let schema = read_json(&root.join("contracts/call/v1/response.schema.json"));
    let properties = &schema["properties"];
    for name in ["start_time", "queue_time", "release_date"] {
        assert!(
            properties[name].get("format").is_none(),
            "{name}: {schema:#}"
        );
    }
    assert_eq!(
        properties["created_at"]["format"], "date-time",
        "{schema:#}"
    );
    assert!(
        properties["subresource_uris"]
            .get("unevaluatedProperties")
            .is_none()
            && properties["subresource_uris"]
                .get("additionalProperties")
                .is_none(),
        "{schema:#}"
    );
    assert!(
        properties["status"].get("maxLength").is_none(),
        "{schema:#}"
    );
    let header = fs::read_to_string(root.join("contracts/call/v1/contract.yaml")).unwrap();
    for said in [
        "the description gives it the format \"date-time-rfc-2822\"",
        "its description speaks of \"millisecond\"",
        "its example \"1981-12\" is not an RFC 3339 date-time",
        "open: the description declares no member of this object",
        "Kubernetes' API server writes a time not set as null",
        "Kubernetes' int-or-string",
        "null admitted: its description says it can be null",
    ] {
        assert!(header.contains(said), "{said}\n{header}");
    }
    // The documented response passes as it is.
    let accept = toolgate(&root, &["test", "--accept", "call"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    let ci = toolgate(&root, &["test", "call"], true);
    assert_eq!(ci.code, 0, "{}\n{}", ci.stdout, ci.stderr);
    assert!(!ci.stdout.contains("unproven"), "{}", ci.stdout);
}

/// Where the description allows any value (an empty schema, a union with a branch that admits
/// anything), the contract does too and never promises it: the lint's `value_untyped` there is
/// accepted in lint.yaml with the reason a person confirms, each place is a decision on the
/// to-do list, and the suite passes with no hand edit.
#[test]
fn a_value_the_description_leaves_open_is_kept_open_never_promised_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let description = one_operation(
        "/job",
        "job",
        json!({
                "schema": {"type": "object", "required": ["id", "state"], "properties": {
                    "id": {"type": "integer"},
                    "state": {"type": "string", "enum": ["queued", "done"]},
                    "metadata": {},
                    "pages": {"anyOf": [{"type": "object", "properties": {"next": {"type": "string"}}}, {}]}
                }},
                "example": {"id": 1, "state": "done", "metadata": {"k": [1, "x"]}, "pages": 7}
        }),
    );
    let spec = dir.path().join("openapi.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let new = scaffold(&root, "job", &spec, "job");
    assert!(
        new.stdout.contains(
            "response.schema.json#/properties/metadata: the description allows any value here"
        ),
        "{}",
        new.stdout
    );
    assert!(
        new.stdout.contains(
            "response.schema.json#/properties/pages: the description allows any value at /pages"
        ),
        "{}",
        new.stdout
    );
    assert!(
        !new.stdout.contains("[value_untyped]"),
        "accepted, not left undone: {}",
        new.stdout
    );
    let schema = read_json(&root.join("contracts/job/v1/response.schema.json"));
    assert_eq!(
        schema["properties"]["metadata"],
        json!({}),
        "kept as the description says"
    );
    let contract = fs::read_to_string(root.join("contracts/job/v1/contract.yaml")).unwrap();
    assert!(
        !contract.contains("/metadata") || contract.contains("#   /properties/metadata"),
        "never promised: {contract}"
    );
    let accepted = fs::read_to_string(root.join("contracts/job/lint.yaml")).unwrap();
    assert!(
        accepted.contains("The description allows any value here"),
        "{accepted}"
    );
    let accept = toolgate(&root, &["test", "--accept", "job"], false);
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    assert_eq!(toolgate(&root, &["test", "job"], true).code, 0);
}

/// List fields through `--field`: `NAME.MEMBER=LIST/*/POINTER` promises each item's members;
/// the to-do list speaks of a list member once (`/accounts/*/nickname`), not of each index; a
/// `*` in survivors.yaml accepts that member in every item, so a fixture with a longer list
/// makes no new survivor; and a pointer at a list without `/*` is refused with the spelling.
#[test]
fn a_list_field_is_promised_with_one_flag_per_member_and_its_survivors_take_a_star() {
    let dir = tempfile::tempdir().unwrap();
    let account = |id: &str, nickname: &str, amount: f64| json!({"id": id, "nickname": nickname, "balance": {"amount": amount}});
    let item = json!({"type": "object", "required": ["id", "nickname", "balance"], "properties": {
        "id": {"type": "string", "pattern": "^acc_[0-9]+$"},
        "nickname": {"type": "string"},
        "balance": {"type": "object", "required": ["amount"], "properties": {
            "amount": {"type": "number"}}}
    }});
    let description = one_operation(
        "/accounts",
        "x",
        json!({
            "schema": {"type": "object", "required": ["accounts"], "properties": {
                "accounts": {"type": "array", "items": item}}},
            "example": {"accounts": [
                account("acc_1", "rent", 10.5),
                account("acc_2", "savings", 200.0),
                account("acc_3", "travel", 3.25)
            ]}
        }),
    );
    let spec = dir.path().join("accounts.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();

    let whole = new_with_field(&root, "accounts", &spec, "accounts=/accounts");
    assert_eq!(whole.code, 2, "{}", whole.stderr);
    assert!(
        whole.stderr.contains("--field accounts=/accounts/*")
            && whole.stderr.contains("--field accounts.id=/accounts/*/id"),
        "{}",
        whole.stderr
    );
    assert!(!root.join("contracts").exists(), "nothing is written");

    let new = toolgate(
        &root,
        &[
            "new",
            "accounts",
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            "x",
            "--field",
            "accounts.id=/accounts/*/id",
            "--field",
            "accounts.nickname=/accounts/*/nickname",
            "--field",
            "accounts.amount=/accounts/*/balance/amount",
        ],
        true,
    );
    assert!(matches!(new.code, 0 | 1), "{}\n{}", new.stdout, new.stderr);
    let contract = fs::read_to_string(root.join("contracts/accounts/v1/contract.yaml")).unwrap();
    let contract: Value = serde_saphyr::from_str(&contract).unwrap();
    assert_eq!(
        contract["shape"]["fields"],
        json!([{"name": "accounts", "from": "/accounts", "each": [
            {"name": "id", "from": "/id"},
            {"name": "nickname", "from": "/nickname"},
            {"name": "amount", "from": "/balance/amount"}
        ]}]),
        "{contract:#}"
    );
    let todo: Vec<&str> = new
        .stdout
        .lines()
        .filter(|line| line.contains("/accounts/"))
        .collect();
    assert!(
        todo.iter()
            .any(|line| line.contains("at /accounts/*/nickname: the agent sees")),
        "{}",
        new.stdout
    );
    assert!(
        !todo
            .iter()
            .any(|line| line.contains("/accounts/0/") || line.contains("/accounts/1/")),
        "one line per list member, not per index: {todo:#?}"
    );

    // One `*` entry per member and mutation accepts every item's survivors.
    let survivors_file = root.join("fixtures/accounts/survivors.yaml");
    let mut survivors = fs::read_to_string(&survivors_file).unwrap_or_default();
    let mut accepted = Vec::new();
    for line in &todo {
        let Some(rest) = line.split("mutant ").nth(1) else {
            continue;
        };
        let (family, rest) = rest.split_once(" at ").unwrap();
        let pointer = rest.split(':').next().unwrap();
        if line.contains("the agent sees") && !accepted.contains(&(family, pointer)) {
            accepted.push((family, pointer));
            survivors.push_str(&format!(
                "- mutation: {family}\n  pointer: {pointer}\n  reason: a nickname is the holder's own text\n"
            ));
        }
    }
    assert!(!accepted.is_empty(), "{todo:#?}");
    fs::write(&survivors_file, survivors).unwrap();
    // A fixture with a longer list than the example's.
    let accepted_dir = root.join("fixtures/accounts/accepted");
    let longer = json!({"accounts": (1..=7).map(|n| account(&format!("acc_{n}"), "kid", n as f64)).collect::<Vec<_>>()});
    fs::write(accepted_dir.join("seven_accounts.json"), longer.to_string()).unwrap();
    fs::write(
        accepted_dir.join("seven_accounts.expect.yaml"),
        "description: seven accounts, longer than the example's list\nexpect: { outcome: admitted }\n",
    )
    .unwrap();
    let accept = toolgate(&root, &["test", "--accept"], false);
    let ci = toolgate(&root, &["test"], true);
    assert_eq!(
        ci.code, 0,
        "{}\n{}\n{}",
        accept.stdout, ci.stdout, ci.stderr
    );
}

/// `--sample FILE`: a response the upstream really sent corrects the description's own claims
/// that refuse it (a format, a type, an enum, a required member), each correction listed with
/// the sample's name, before anything is written; the sample becomes a real accepted fixture,
/// so the contract is proven. A sample no correction can admit is refused and nothing written.
#[test]
fn a_real_sample_corrects_the_descriptions_claims_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let description = one_operation(
        "/albums/{id}",
        "x",
        json!({"schema": {"type": "object",
        "required": ["id", "album_type", "release_date", "popularity"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9A-Za-z]{22}$"},
            "album_type": {"type": "string", "enum": ["album", "single"]},
            "release_date": {"type": "string", "format": "date"},
            "preview_url": {"type": "string"},
            "popularity": {"type": "integer"}
        }}}),
    );
    let spec = dir.path().join("albums.json");
    fs::write(&spec, description.to_string()).unwrap();
    let sample = dir.path().join("compilation_1981.json");
    fs::write(
        &sample,
        r#"{"id":"4aawyAB9vmqN3uQ7FjRGTy","album_type":"compilation","release_date":"1981-12","preview_url":null}"#,
    )
    .unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    let new = |root: &Path, sample: &Path| {
        toolgate(
            root,
            &[
                "new",
                "albums",
                "--from-openapi",
                spec.to_str().unwrap(),
                "--operation",
                "x",
                "--sample",
                sample.to_str().unwrap(),
            ],
            true,
        )
    };
    let made = new(&root, &sample);
    assert!(
        matches!(made.code, 0 | 1),
        "{}\n{}",
        made.stdout,
        made.stderr
    );
    let schema = read_json(&root.join("contracts/albums/v1/response.schema.json"));
    let album_type = &schema["properties"]["album_type"]["enum"];
    assert!(
        album_type
            .as_array()
            .unwrap()
            .contains(&json!("compilation")),
        "{schema:#}"
    );
    assert!(
        schema["properties"]["release_date"].get("format").is_none(),
        "{schema:#}"
    );
    assert_eq!(
        schema["properties"]["preview_url"]["type"],
        json!(["string", "null"]),
        "{schema:#}"
    );
    assert!(
        !schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("popularity")),
        "{schema:#}"
    );
    let header = fs::read_to_string(root.join("contracts/albums/v1/contract.yaml")).unwrap();
    for said in ["enum widened", "no format", "popularity optional"] {
        assert!(
            header.contains(&format!(
                "{said}: the sample `compilation_1981`, a real response"
            )),
            "{said}: {header}"
        );
    }
    let sidecar =
        fs::read_to_string(root.join("fixtures/albums/accepted/compilation_1981.expect.yaml"))
            .unwrap();
    assert!(sidecar.contains("A real response"), "{sidecar}");
    // A real response: the tool is proven, so --accept locks it and CI passes.
    let accept = toolgate(&root, &["test", "--accept"], false);
    assert!(
        accept.stdout.contains("locked albums v1"),
        "{}",
        accept.stdout
    );
    let ci = toolgate(&root, &["test"], true);
    assert_eq!(ci.code, 0, "{}", ci.stdout);

    // An array is no response of this operation: refused, nothing written.
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    let wrong = dir.path().join("a_list.json");
    fs::write(&wrong, "[1, 2]").unwrap();
    let refused = new(&other, &wrong);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "the sample `a_list` is refused however the description's schema is corrected"
        ),
        "{}",
        refused.stderr
    );
    assert!(!other.join("contracts").exists());
}

/// A path parameter the response answers for is bound to it (promised first, the request's
/// context holding the example's value, a near-miss proving the rule), and every member named or
/// marked as a secret is never offered, listed, and redacted from what a store keeps.
#[test]
fn a_path_parameter_binds_its_answer_and_secrets_are_never_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mut description = one_operation(
        "/accounts/{accountId}/sessions/{session_id}",
        "session",
        json!({"schema": {"type": "object",
            "required": ["id", "account_id", "state", "token"],
            "properties": {
                "id": {"type": "string", "pattern": "^ses_[0-9a-z]{6}$"},
                "account_id": {"type": "integer"},
                "state": {"type": "string", "enum": ["open", "closed"]},
                "token": {"type": "string", "pattern": "^tok_"},
                "next_page_token": {"type": "string", "pattern": "^p"},
                "pin": {"type": "string", "pattern": "^[0-9]{4}$", "x-sensitive": true},
                "keys": {"type": "array", "items": {"type": "object", "properties": {
                    "clientSecret": {"type": "string"}, "label": {"type": "string"}
                }}}
            }},
            "example": {"id": "ses_a1b2c3", "account_id": 42, "state": "open",
                "token": "tok_live_9Qz", "pin": "1234", "keys": [{"clientSecret": "cs_1", "label": "ci"}]}}),
    );
    description["paths"]["/accounts/{accountId}/sessions/{session_id}"]["get"]["parameters"] = json!([
        {"name": "accountId", "in": "path", "required": true, "schema": {"type": "integer"}},
        {"name": "session_id", "in": "path", "required": true, "schema": {"type": "string"}}
    ]);
    let root = scaffold_description(dir.path(), dir.path(), &description, "session", "session");
    let contract = fs::read_to_string(root.join("contracts/session/v1/contract.yaml")).unwrap();
    for said in [
        "- name: account_id_binding\n  binding:\n    field: account_id\n    context: accountId\n  retryable: false",
        "- name: id_binding\n  binding:\n    field: id\n    context: session_id",
        "retention:\n  redact:\n  - /keys/*/clientSecret\n  - /pin\n  - /token\n",
    ] {
        assert!(contract.contains(said), "{said}\n{contract}");
    }
    let fields = &contract[contract.find("fields:").unwrap()..contract.find("rules:").unwrap()];
    assert!(
        !fields.contains("token") || fields.contains("next_page_token"),
        "{fields}"
    );
    for secret in ["/token", "/pin", "clientSecret"] {
        assert!(!fields.contains(&format!("from: {secret}")), "{fields}");
    }
    let request = read_json(&root.join("fixtures/session/request.json"));
    assert_eq!(
        request["context"],
        json!({"accountId": 42, "session_id": "ses_a1b2c3"})
    );
    let near_miss = read_json(&root.join("fixtures/session/near-miss/another_session_id.json"));
    assert_eq!(near_miss["id"], "ses_a1b2c4");
    let accept = toolgate(&root, &["test", "--accept"], false);
    assert!(
        accept.stdout.contains("locked session v1"),
        "{}",
        accept.stdout
    );
    let ci = toolgate(&root, &["test"], true);
    assert_eq!(ci.code, 0, "{}", ci.stdout);
    // Named with --field all the same: promised, and the to-do list says what that costs.
    let spec = dir.path().join("openapi.json");
    let asked = toolgate(
        &root,
        &[
            "new",
            "asked",
            "--from-openapi",
            spec.to_str().unwrap(),
            "--operation",
            "session",
            "--field",
            "t=/token",
        ],
        true,
    );
    assert!(
        asked
            .stdout
            .contains("promised as asked, though it holds a secret: /token"),
        "{}",
        asked.stdout
    );
}
