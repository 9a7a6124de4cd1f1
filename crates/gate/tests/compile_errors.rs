//! A broken contract fails to compile with the file, the line (or JSON pointer) and what is wrong.

use toolgate_gate::{CompileErrors, Contract, ContractSource};

const GOOD_SCHEMA: &str =
    r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}"#;

fn contract(yaml: &str) -> ContractSource {
    ContractSource::new(yaml)
        .with_schema("s.json", GOOD_SCHEMA)
        .with_schema("agent.json", "{}")
}

fn minimal(extra: &str) -> String {
    format!(
        "tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields:\n    - {{ name: a, from: /a }}\nagent_schema: agent.json\n{extra}"
    )
}

fn errors(source: &ContractSource) -> CompileErrors {
    Contract::compile(source).expect_err("the contract must not compile")
}

fn first(source: &ContractSource) -> String {
    errors(source).errors()[0].to_string()
}

#[test]
fn the_minimal_contract_compiles() {
    let contract = Contract::compile(&contract(&minimal(""))).unwrap();
    assert_eq!((contract.tool(), contract.version()), ("t", "v1"));
    assert_eq!(contract.max_bytes(), 65536);
    assert_eq!(contract.max_depth(), 32);
}

#[test]
fn an_unknown_key_names_the_file_line_and_column() {
    let message = first(&contract(&minimal("limts:\n  max_bytes: 10\n")));
    assert!(
        message.starts_with("contract.yaml:9:1 at /limts: "),
        "{message}"
    );
    assert!(message.contains("limts"), "{message}");
}

#[test]
fn a_duplicate_yaml_key_is_an_error() {
    let message = first(&contract(&minimal("tool: u\n")));
    assert!(message.starts_with("contract.yaml:9:"), "{message}");
    assert!(message.to_lowercase().contains("duplicate"), "{message}");
}

#[test]
fn yes_is_not_a_boolean() {
    let yaml =
        minimal("rules:\n  - name: r\n    retryable: yes\n    binding: { field: a, context: a }\n");
    let message = first(&contract(&yaml));
    assert!(message.starts_with("contract.yaml:11:"), "{message}");
}

#[test]
fn a_schema_that_does_not_compile_names_the_file_and_pointer() {
    let source = ContractSource::new(minimal(""))
        .with_schema("s.json", r#"{"type": "strin"}"#)
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(message.starts_with("s.json at /type: "), "{message}");
}

#[test]
fn an_unknown_format_is_a_compile_error() {
    let source = ContractSource::new(minimal(""))
        .with_schema("s.json", r#"{"properties": {"a": {"format": "date-tme"}}}"#)
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(
        message.contains("s.json") && message.contains("date-tme"),
        "{message}"
    );
}

#[test]
fn a_remote_ref_is_refused_and_named_never_fetched() {
    let source = ContractSource::new(minimal(""))
        .with_schema(
            "s.json",
            r#"{"$ref": "https://schemas.example.com/payload.json"}"#,
        )
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(
        message.contains("https://schemas.example.com/payload.json"),
        "{message}"
    );
    assert!(message.contains("never fetches"), "{message}");
    assert!(
        message.contains("cannot resolve `$ref` to https://schemas.example.com/payload.json"),
        "{message}"
    );
}

#[test]
fn a_ref_escaping_the_contract_folder_is_refused() {
    let source = ContractSource::new(minimal(""))
        .with_schema("s.json", r#"{"$ref": "../../other_tool/v1/s.json"}"#)
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(message.contains("outside the contract folder"), "{message}");
}

#[test]
fn refs_between_the_contracts_own_files_resolve() {
    let source = ContractSource::new(minimal(""))
        .with_schema(
            "s.json",
            r#"{"type": "object", "properties": {"a": {"$ref": "defs.json#/$defs/name"}}}"#,
        )
        .with_schema(
            "defs.json",
            r#"{"$defs": {"name": {"type": "string", "maxLength": 3}}}"#,
        )
        .with_schema("agent.json", "{}");
    let contract = Contract::compile(&source).unwrap();
    let now = std::time::SystemTime::UNIX_EPOCH;
    let request = toolgate_gate::Request::new("r");
    assert!(
        contract
            .admit(br#"{"a":"abc"}"#, &request, now)
            .is_admitted()
    );
    assert!(
        !contract
            .admit(br#"{"a":"abcd"}"#, &request, now)
            .is_admitted()
    );
}

#[test]
fn a_ref_to_a_missing_file_names_it() {
    let source = ContractSource::new(minimal(""))
        .with_schema("s.json", r#"{"$ref": "payload.json"}"#)
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(message.contains("no file `payload.json`"), "{message}");
}

#[test]
fn another_draft_is_refused() {
    let source = ContractSource::new(minimal(""))
        .with_schema(
            "s.json",
            r#"{"$schema": "http://json-schema.org/draft-07/schema#"}"#,
        )
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(message.starts_with("s.json at /$schema: "), "{message}");
}

#[test]
fn a_duplicate_key_in_a_schema_file_is_refused() {
    let source = ContractSource::new(minimal(""))
        .with_schema("s.json", r#"{"type": "object", "type": "string"}"#)
        .with_schema("agent.json", "{}");
    let message = first(&source);
    assert!(
        message.starts_with("s.json at /type: ") && message.contains("duplicate"),
        "{message}"
    );
}

#[test]
fn schema_problems_are_all_reported_first_then_every_meaning_problem() {
    // The contract schema speaks first: every problem it sees, each at its line.
    let yaml = "tool: t\nversion: 1\ndirection: result\nshape:\n  schema: s.json\n  fields:\n    - { name: a, from: data/a }\nagent_schema: agent.json\nlimits: { max_bytes: \"4096\" }\nrules:\n  - name: r\n    retryable: false\n    binding: { field: nope, context: x }\n  - name: f\n    retryable: \"true\"\n    freshness: { field: a, max_age: soon, max_future: 2m }\n";
    let all = errors(&contract(yaml)).to_string();
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 3, "{all}");
    assert!(
        lines[0].starts_with(
            "contract.yaml:7:24 at /shape/fields/0/from: \"data/a\" is not a JSON pointer"
        ),
        "{all}"
    );
    assert!(
        lines[1].starts_with(
            "contract.yaml:9:22 at /limits/max_bytes: max_bytes must be a whole number"
        ),
        "{all}"
    );
    assert!(
        lines[2].starts_with(
            "contract.yaml:15:16 at /rules/1/retryable: retryable must be true or false"
        ),
        "{all}"
    );
    // Once the shape is right, what only the compiler can tell: unknown fields, bad durations.
    let yaml = yaml
        .replace("data/a", "/data/a")
        .replace("\"4096\"", "4096")
        .replace("\"true\"", "true");
    let all = errors(&contract(&yaml)).to_string();
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 2, "{all}");
    assert!(
        lines[0].starts_with("contract.yaml:13:") && lines[0].contains("nope"),
        "{all}"
    );
    assert!(
        lines[1].starts_with("contract.yaml:16:") && lines[1].contains("soon"),
        "{all}"
    );
}

#[test]
fn a_rule_must_have_exactly_one_kind() {
    let yaml = minimal("rules:\n  - name: r\n    retryable: false\n");
    assert!(first(&contract(&yaml)).contains("exactly one of"));
}

#[test]
fn limits_are_bounded() {
    assert!(
        first(&contract(&minimal("limits: { max_depth: 500 }\n"))).contains("between 1 and 100")
    );
    assert!(first(&contract(&minimal("limits: { max_bytes: 0 }\n"))).contains("positive"));
    assert!(
        first(&contract(&minimal("limits: { max_bytes: 67108865 }\n")))
            .contains("past the ceiling of 67108864")
    );
}

#[test]
fn legacy_shapes_must_provide_every_field_and_a_name() {
    let yaml = minimal("legacy_shapes:\n  - schema: s.json\n    fields: [{ name: b, from: /b }]\n");
    let all = errors(&contract(&yaml)).to_string();
    assert!(all.contains("needs a `name`"), "{all}");
    let yaml = yaml.replace("- schema: s.json", "- name: old\n    schema: s.json");
    let all = errors(&contract(&yaml)).to_string();
    assert!(
        all.contains("field `a`") && all.contains("field `b`"),
        "{all}"
    );
}

#[test]
fn action_contracts_have_no_outcome() {
    let yaml = "tool: t\nversion: 1\ndirection: action\nshape:\n  schema: s.json\n  outcome: { pointer: /o, success: s, failure: f }\n  error_code: /e\n  fields:\n    - { name: a, from: /a }\nagent_schema: agent.json\n";
    assert!(first(&contract(yaml)).contains("action contract"));
}

#[test]
fn a_missing_agent_schema_file_is_named() {
    let yaml = minimal("").replace("agent_schema: agent.json", "agent_schema: agent-view.json");
    assert!(
        errors(&contract(&yaml))
            .to_string()
            .contains("agent-view.json")
    );
}

#[test]
fn errors_from_a_folder_name_the_real_path() {
    let folder = std::env::temp_dir().join(format!("toolgate-compile-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("contract.yaml"), minimal("bogus: 1\n")).unwrap();
    std::fs::write(folder.join("s.json"), GOOD_SCHEMA).unwrap();
    std::fs::write(folder.join("agent.json"), "{}").unwrap();
    let source = ContractSource::read_dir(&folder).unwrap();
    let message = first(&source);
    std::fs::remove_dir_all(&folder).unwrap();
    assert!(
        message.starts_with(&format!(
            "{}:9:1 at /bogus: ",
            folder.join("contract.yaml").display()
        )),
        "{message}"
    );
}

#[test]
fn a_tool_is_named_as_mcp_names_it_and_never_as_a_hidden_folder_or_an_option() {
    let named =
        |tool: &str| contract(&minimal("").replacen("tool: t", &format!("tool: {tool:?}"), 1));
    for tool in [
        "get-structured-content",
        "Get.Weather-v2",
        "github.search_code",
        "_x",
        "7up",
        &"a".repeat(128),
    ] {
        let compiled =
            Contract::compile(&named(tool)).unwrap_or_else(|error| panic!("{tool}: {error}"));
        assert_eq!(compiled.tool(), tool);
        // The agent's bytes carry the name as written.
        let decision = compiled.admit(
            br#"{"a": "x"}"#,
            &toolgate_gate::Request::new("r1"),
            std::time::SystemTime::UNIX_EPOCH,
        );
        let agent = String::from_utf8(decision.agent_bytes().to_vec()).unwrap();
        assert!(agent.contains(&format!("\"tool\":\"{tool}\"")), "{agent}");
    }
    for tool in [
        ".hidden",
        "..",
        "-rf",
        "a b",
        "ünïcode",
        "a/b",
        &"a".repeat(129),
        "",
    ] {
        let message = first(&named(tool));
        assert!(message.contains("a name MCP allows"), "{tool:?}: {message}");
    }
}

/// Where the rules' trusted context may come from: a binding rule's key from the caller's
/// arguments (by default, or as `context: from_arguments` lists it), a membership or lookup
/// rule's only from the operator, whatever the contract says.
#[test]
fn context_from_the_arguments_is_declared_and_never_a_membership_list() {
    let schema =
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}"#;
    let with = |extra: &str| {
        ContractSource::new(minimal(&format!(
            "rules:\n  - {{ name: asked, retryable: false, binding: {{ field: a, context: asked }} }}\n  - {{ name: known, retryable: false, membership: {{ field: a, context: known_runs }} }}\n{extra}"
        )))
        .with_schema("s.json", schema)
        .with_schema("agent.json", "{}")
    };
    let defaulted = Contract::compile(&with("")).unwrap();
    assert_eq!(defaulted.required_context(), ["asked", "known_runs"]);
    assert_eq!(defaulted.context_from_arguments(), ["asked"]);
    assert_eq!(defaulted.context_from_operator(), ["known_runs"]);
    let none = Contract::compile(&with("context:\n  from_arguments: []\n")).unwrap();
    assert!(none.context_from_arguments().is_empty());
    assert_eq!(none.context_from_operator(), ["asked", "known_runs"]);
    let message = first(&with("context:\n  from_arguments: [known_runs]\n"));
    assert!(
        message.contains("must come from the operator") && message.contains("contract.yaml:"),
        "{message}"
    );
    let message = first(&with("context:\n  from_arguments: [nobody_reads_it]\n"));
    assert!(message.contains("read by no rule"), "{message}");
}

/// The formats the harness names as JSON Schema's are exactly ones the gate asserts.
#[test]
fn every_json_schema_format_is_one_the_gate_asserts() {
    for format in toolgate_gate::internals::JSON_SCHEMA_FORMATS {
        assert!(
            toolgate_gate::internals::format_accepts(format, "x").is_some(),
            "{format}"
        );
    }
    assert_eq!(toolgate_gate::internals::format_accepts("int32", "x"), None);
}
