//! The published JSON Schema of contract.yaml accepts every bundled contract and refuses broken ones.

mod common;

use serde_json::Value;
use toolgate_gate::internals::compile_options;

struct Offline;

impl jsonschema::Retrieve for Offline {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is not available offline").into())
    }
}

fn validator() -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(common::contracts_dir().join("contract.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    compile_options(Offline)
        .build(&schema)
        .expect("the published contract schema compiles")
}

fn yaml(text: &str) -> Value {
    toolgate_gate::internals::read_strict_yaml(text).expect("test YAML parses")
}

#[test]
fn every_bundled_contract_validates_against_the_published_schema() {
    let validator = validator();
    let mut seen = 0;
    for entry in std::fs::read_dir(common::contracts_dir()).unwrap() {
        let tool = entry.unwrap().path();
        if !tool.is_dir() {
            continue;
        }
        for version in std::fs::read_dir(&tool).unwrap() {
            let file = version.unwrap().path().join("contract.yaml");
            let document = yaml(&std::fs::read_to_string(&file).unwrap());
            let problems: Vec<String> = validator
                .iter_errors(&document)
                .map(|error| error.to_string())
                .collect();
            assert!(problems.is_empty(), "{}: {problems:?}", file.display());
            seen += 1;
        }
    }
    assert_eq!(seen, 4, "the four bundled contracts");
}

#[test]
fn the_published_schema_refuses_what_the_compiler_refuses() {
    let validator = validator();
    let base = "tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields: [{ name: a, from: /a }]\nagent_schema: a.json\n";
    assert!(validator.is_valid(&yaml(base)));
    for broken in [
        format!("{base}limts: {{}}\n"),
        base.replace("direction: result", "direction: both"),
        base.replace("from: /a", "from: a"),
        format!("{base}rules: [{{ name: r, retryable: false }}]\n"),
        format!(
            "{base}rules: [{{ name: r, retryable: false, binding: {{field: a, context: c}}, membership: {{field: a, context: c}} }}]\n"
        ),
        format!("{base}limits: {{ max_depth: 500 }}\n"),
        base.replace("version: 1", "version: 0"),
    ] {
        assert!(!validator.is_valid(&yaml(&broken)), "accepted:\n{broken}");
    }
}
