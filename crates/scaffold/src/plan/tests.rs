//! The plan's unit tests: what `plan` decides on small schemas and examples.

use super::examples::with_duplicate;
use super::names::field_name;
use super::*;

/// What the plan's `contract.yaml` says, as the gate reads it.
fn contract_of(plan: &Plan) -> Value {
    toolgate_gate::internals::read_strict_yaml(plan.contract.text()).unwrap()
}

fn parts(schema: Value, examples: Vec<(String, Value)>) -> Parts {
    Parts {
        tool: "pull".to_owned(),
        origin: Origin {
            source: "a test".to_owned(),
            summary: Some("Get a pull request".to_owned()),
            upstream: None,
        },
        schema,
        assumptions: Vec::new(),
        examples,
        samples: Vec::new(),
        error_examples: vec![(404, json!({"message": "Not Found"}))],
        fields: Vec::new(),
        context: Map::new(),
        errors: vec![ErrorMapping {
            name: "not_found".to_owned(),
            statuses: vec![404],
            code: "NOT_FOUND",
        }],
        text: false,
        decisions: Vec::new(),
    }
}

fn closed_pull() -> Value {
    json!({
        "type": "object",
        "required": ["number", "title", "head"],
        "properties": {
            "number": {"type": "integer"},
            "title": {"type": "string", "maxLength": 100},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "url": {"type": "string", "maxLength": 200},
            "head": {"type": "object", "properties": {"sha": {"type": "string", "maxLength": 40}}, "unevaluatedProperties": false},
            "labels": {"type": "array", "items": {}}
        },
        "unevaluatedProperties": false
    })
}

#[test]
fn an_upstream_addition_in_an_example_is_tolerated_where_it_is_and_said_why() {
    let example = json!({"number": 7, "title": "Gate", "state": "open", "url": "https://api.example.com/pulls/7", "head": {"sha": "abc", "repo": {"id": 1}}, "labels": []});
    let plan = plan(parts(closed_pull(), vec![("default".to_owned(), example)])).unwrap();
    let contract = contract_of(&plan);
    assert_eq!(
        contract["shape"]["tolerate"][0]["at"],
        "/head",
        "{}",
        plan.contract.text()
    );
    assert!(
        plan.contract.text().contains("(repo)"),
        "{}",
        plan.contract.text()
    );
    assert!(
        plan.schema
            .pointer("/properties/head/unevaluatedProperties")
            .is_none()
    );
    // The examples are real: every one is an accepted fixture, and the two near-misses
    // every tool needs are derived from the first.
    let classes: Vec<&str> = plan.fixtures.iter().map(|fixture| fixture.class).collect();
    assert_eq!(
        classes,
        ["accepted", "near-miss", "duplicate-key", "near-miss"]
    );
    assert_eq!(
        contract["upstream_errors"],
        json!([{"name": "not_found", "status": [404], "code": "NOT_FOUND"}])
    );
    // Pinned values are promised; free text is left for a person, by pointer.
    let fields = contract["shape"]["fields"].as_array().unwrap();
    assert!(
        fields.contains(&json!({"name": "number", "from": "/number"})),
        "{}",
        plan.contract.text()
    );
    assert!(fields.contains(&json!({"name": "state", "from": "/state", "optional": true})));
    assert!(
        fields.contains(&json!({"name": "url", "from": "/url", "optional": true})),
        "the URL got its format from the examples"
    );
    assert!(
        plan.todo.iter().any(|line| line.contains("/title")),
        "{:?}",
        plan.todo
    );
    // A value the description leaves silent is kept as it says (anything), never promised,
    // and left to the author to decide.
    assert_eq!(
        plan.schema.pointer("/properties/labels/items"),
        Some(&json!({}))
    );
    assert!(
        plan.contract
            .text()
            .contains("anything: the description says nothing of this value")
    );
    assert!(
        plan.todo.iter().any(|line| line.starts_with(
            "response.schema.json#/properties/labels/items: the description allows any value here"
        )),
        "{:?}",
        plan.todo
    );
    // The number the agent sees is not negative, as no example is.
    assert_eq!(
        plan.schema.pointer("/properties/number/minimum"),
        Some(&json!(0))
    );
}

/// Nothing at the top to promise: the refusal lists what lies below, identifiers first,
/// each as the `--field` that promises it; a schema with no named member says so.
#[test]
fn no_field_to_promise_names_the_candidates() {
    let nested = json!({
        "type": "object",
        "properties": {"page": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 10},
            "page_id": {"type": "string", "maxLength": 10},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}}
        }}},
        "unevaluatedProperties": false
    });
    let Err(message) = plan(parts(nested, Vec::new())) else {
        panic!("nothing to promise at the top");
    };
    let lines: Vec<&str> = message.lines().skip(1).map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "--field page_page_id=/page/page_id   (an identifier)",
            "--field page_title=/page/title   (free text: accept its near-misses with a reason)"
        ],
        "{message}"
    );
    let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    let Err(message) = plan(parts(map, Vec::new())) else {
        panic!("a map has no member to promise");
    };
    assert!(message.contains("names no member"), "{message}");
}

/// A list one level down that the schema does not require is an optional list field: a
/// response without it passes the schema, so projection must not fail on it.
#[test]
fn a_list_the_schema_does_not_require_is_an_optional_field() {
    let schema = json!({
        "type": "object",
        "properties": {"clicks": {"type": "array", "maxItems": 5, "items": {
            "type": "object", "required": ["slug"],
            "properties": {"slug": {"type": "string", "enum": ["a", "b"]}},
            "unevaluatedProperties": false
        }}},
        "unevaluatedProperties": false
    });
    let plan = plan(parts(
        schema,
        vec![("a".to_owned(), json!({"clicks": [{"slug": "a"}]}))],
    ))
    .unwrap();
    let field = &contract_of(&plan)["shape"]["fields"][0];
    assert_eq!(field["from"], "/clicks", "{}", plan.contract.text());
    assert_eq!(field["optional"], true, "{}", plan.contract.text());
}

/// A field chosen for the author is a choice they confirm: the to-do list says, in one line,
/// all the agent will see and what else it could be given.
#[test]
fn the_to_do_list_says_what_the_agent_will_see() {
    let schema = json!({
        "type": "object",
        "required": ["ok"],
        "properties": {"ok": {"type": "boolean"}, "zone_id": {"type": "string", "maxLength": 40}},
        "unevaluatedProperties": false
    });
    let plan = plan(parts(
        schema,
        vec![("a".to_owned(), json!({"ok": true, "zone_id": "z1"}))],
    ))
    .unwrap();
    let line = plan
        .todo
        .iter()
        .find(|line| line.starts_with("the agent will see only ok (/ok), and nothing else"))
        .unwrap_or_else(|| panic!("{:?}", plan.todo));
    assert!(line.contains("--field zone_id=/zone_id"), "{line}");
}

#[test]
fn an_example_the_description_refuses_for_its_own_reasons_is_set_aside() {
    let wrong = json!({"number": "seven", "title": "x", "head": {"sha": "a"}});
    let right = json!({"number": 7, "title": "x", "head": {"sha": "a"}});
    let plan = plan(parts(
        closed_pull(),
        vec![("wrong".to_owned(), wrong), ("right".to_owned(), right)],
    ))
    .unwrap();
    assert_eq!(
        plan.fixtures
            .iter()
            .filter(|fixture| fixture.class == "accepted")
            .count(),
        1
    );
    assert!(
        plan.todo
            .iter()
            .any(|line| line.contains("example `wrong` is refused")),
        "{:?}",
        plan.todo
    );
}

#[test]
fn a_list_is_promised_item_by_item() {
    let schema = json!({"type": "array", "maxItems": 30, "items": closed_pull()});
    let example = json!([{"number": 1, "title": "a", "head": {"sha": "x"}}, {"number": 2, "title": "b", "head": {"sha": "y"}}]);
    let plan = plan(parts(schema, vec![("list".to_owned(), example)])).unwrap();
    let contract = contract_of(&plan);
    let items = &contract["shape"]["fields"][0];
    assert_eq!(
        (&items["name"], &items["from"]),
        (&json!("items"), &json!(""))
    );
    assert_eq!(
        items["each"][0],
        json!({"name": "number", "from": "/number"}),
        "{}",
        plan.contract.text()
    );
    assert_eq!(contract["limits"]["max_bytes"], 65536);
}

#[test]
fn a_union_of_objects_promises_what_every_branch_declares_and_bounds_it_in_each() {
    let branch = |extra: &str| json!({"type": "object", "required": ["id", "kind"], "properties": {"id": {"type": "integer"}, "kind": {"enum": ["user", "bot"]}, extra: {"type": "boolean"}}, "additionalProperties": false});
    let schema = json!({"oneOf": [branch("private"), branch("public")]});
    let example = json!({"id": 7, "kind": "user", "private": true});
    let plan = plan(parts(schema, vec![("default".to_owned(), example)])).unwrap();
    let contract = contract_of(&plan);
    let promised = contract["shape"]["fields"].as_array().unwrap();
    assert_eq!(promised.len(), 2, "{}", plan.contract.text());
    assert!(
        promised.iter().all(|field| field["optional"] == true),
        "{promised:?}"
    );
    assert!(
        !plan.contract.text().contains("/private"),
        "{}",
        plan.contract.text()
    );
    // The bound assumed for what the agent sees holds in both branches.
    assert_eq!(
        plan.schema.pointer("/oneOf/0/properties/id/minimum"),
        Some(&json!(0))
    );
    assert_eq!(
        plan.schema.pointer("/oneOf/1/properties/id/minimum"),
        Some(&json!(0))
    );
}

#[test]
fn without_an_admitted_example_a_response_is_built_from_the_schema_and_said_so() {
    let wrong = json!({"number": "seven", "title": "x", "head": {"sha": "a"}});
    let plan = plan(parts(closed_pull(), vec![("documented".to_owned(), wrong)])).unwrap();
    let synthesized = plan
        .fixtures
        .iter()
        .find(|fixture| fixture.case == SYNTHESIZED_CASE)
        .expect("a synthesized accepted fixture");
    assert_eq!(synthesized.class, "accepted");
    let body: Value = serde_json::from_slice(&synthesized.body.bytes).unwrap();
    assert!(validator(&plan.schema).unwrap().is_valid(&body), "{body}");
    assert!(
        plan.todo
            .iter()
            .any(|line| line.contains("not one the upstream sent")),
        "{:?}",
        plan.todo
    );
}

#[test]
fn a_list_of_scalars_is_a_list_field_of_values_and_its_duplicate_wraps_it() {
    let schema = json!({"type": "array", "items": {"type": "integer"}});
    let plan = plan(parts(schema, vec![("counts".to_owned(), json!([3, 1, 2]))])).unwrap();
    assert_eq!(
        contract_of(&plan)["shape"]["fields"][0],
        json!({"name": "items", "from": "", "each": [{"name": "value", "from": ""}]}),
        "{}",
        plan.contract.text()
    );
    // Every count seen is non-negative: so is every item the agent is shown.
    assert_eq!(plan.schema.pointer("/items/minimum"), Some(&json!(0)));
    let duplicate = plan
        .fixtures
        .iter()
        .find(|fixture| fixture.class == "duplicate-key")
        .unwrap();
    assert_eq!(
        duplicate.body.text(),
        r#"{"toolgate-duplicate":1,"toolgate-duplicate":[3,1,2]}"#
    );
}

#[test]
fn a_list_one_level_down_is_a_list_field() {
    let schema = json!({"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": {"type": "object", "required": ["mac", "seen"], "properties": {"mac": {"type": "string"}, "seen": {"type": "integer"}}, "additionalProperties": false}}}, "additionalProperties": false});
    let example = json!({"results": [{"mac": "5c5b35000001", "seen": 3}]});
    let plan = plan(parts(schema, vec![("list".to_owned(), example)])).unwrap();
    let results = &contract_of(&plan)["shape"]["fields"][0];
    assert_eq!(
        (&results["name"], &results["from"]),
        (&json!("results"), &json!("/results"))
    );
    assert_eq!(
        results["each"][0],
        json!({"name": "seen", "from": "/seen"}),
        "{}",
        plan.contract.text()
    );
    assert_eq!(
        plan.schema
            .pointer("/properties/results/items/properties/seen/minimum"),
        Some(&json!(0))
    );
}

#[test]
fn a_list_of_union_items_promises_what_every_branch_declares() {
    let branch = |kind: &str, extra: &str| json!({"type": "object", "required": ["id", "event"], "properties": {"id": {"type": "integer"}, "event": {"const": kind}, extra: {"type": "boolean"}}, "additionalProperties": false});
    let schema = json!({"type": "array", "items": {"anyOf": [branch("a", "only_a"), branch("b", "only_b")]}});
    let example = json!([{"id": 1, "event": "a", "only_a": true}, {"id": 2, "event": "b"}]);
    let plan = plan(parts(schema, vec![("events".to_owned(), example)])).unwrap();
    let each = &contract_of(&plan)["shape"]["fields"][0]["each"];
    assert!(
        each.as_array()
            .unwrap()
            .contains(&json!({"name": "id", "from": "/id", "optional": true})),
        "{}",
        plan.contract.text()
    );
    assert!(
        !plan.contract.text().contains("only_a"),
        "{}",
        plan.contract.text()
    );
}

#[test]
fn duplicates_and_wildcards() {
    assert_eq!(
        String::from_utf8(with_duplicate(&json!({"a": 1, "b": [2]})).unwrap()).unwrap(),
        r#"{"a":"toolgate-duplicate","a":1,"b":[2]}"#
    );
    assert_eq!(
        String::from_utf8(with_duplicate(&json!([1, {"x": {"y": 2}}])).unwrap()).unwrap(),
        r#"[1,{"x":"toolgate-duplicate","x":{"y":2}}]"#
    );
    assert!(with_duplicate(&json!([1, 2])).is_none());
    assert_eq!(
        toolgate_repo::text::every_item("/items/12/labels/0"),
        "/items/*/labels/*"
    );
    assert_eq!(field_name("html-url"), "html_url");
    assert_eq!(field_name("2fa"), "f_2fa");
}
