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
    let spec = api.join("openapi.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    scaffold(&root, "droplet", &spec, "droplets_get");
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
    let description = json!({
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {"/thing": {"get": {
            "operationId": "thing",
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "object", "required": ["id"], "properties": {
                    "id": {"type": "string", "enum": ["a", "b"]},
                    "remote": {"$ref": "https://example.com/schemas/remote.json"},
                    "secret": {"$ref": "../outside.json"}
                }},
                "example": {"id": "a"}
            }}}}
        }}}
    });
    let spec = api.join("openapi.json");
    fs::write(&spec, description.to_string()).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir(&root).unwrap();
    scaffold(&root, "thing", &spec, "thing");
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
