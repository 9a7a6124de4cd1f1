//! The converter's unit tests: OpenAPI's dialects to 2020-12, keyword by keyword.

use super::*;

#[test]
fn definitions_are_named_by_what_the_pointer_names() {
    for (pointer, name) in [
        ("/components/schemas/Pet", "Pet"),
        (
            "/paths/~1v2~1apps/get/responses/200/content/application~1json/schema/properties/links",
            "links",
        ),
        (
            "/paths/~1v2~1apps/get/responses/200/content/application~1json/schema/allOf/1",
            "v2_apps_get",
        ),
        ("/x-toolgate-external/schemas~1pet.yaml", "pet"),
        ("/x-toolgate-external/owner.json/Owner", "Owner"),
        ("/x-toolgate-external/owner.json", "owner"),
        ("", "schema"),
    ] {
        assert_eq!(definition_name(pointer), name, "{pointer}");
    }
}

#[test]
fn a_composition_of_typed_schemas_is_typed() {
    let source = json!({"components": {"schemas": {
        "A": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}},
        "B": {"properties": {"b": {"type": "integer"}}},
        "Open": {"description": "anything"}
    }}});
    let schema = json!({"type": "object", "properties": {
        "either": {"anyOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]},
        "both": {"allOf": [{"$ref": "#/components/schemas/A"}, {"description": "more"}]},
        "loose": {"anyOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/Open"}]},
        "mixed": {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]}
    }});
    let (converted, _) = Converter::new(&source, Dialect::JsonSchema).document(&schema);
    let properties = &converted["properties"];
    assert_eq!(properties["either"]["type"], "object");
    assert_eq!(properties["both"]["type"], "object");
    assert!(
        properties["loose"].get("type").is_none(),
        "a branch admits anything"
    );
    assert_eq!(properties["mixed"]["type"], json!(["integer", "string"]));
}

/// Compositions that refer to one another fan out: twelve `allOf` parts, each the next
/// level, sixteen levels deep, is a 7 KB description and was 12^8 walks of the question
/// "does this describe objects?" (hours; eight parts took 30 s). Each schema is now visited
/// once per question (milliseconds); the watchdog only keeps a regression from hanging the
/// suite.
#[test]
fn compositions_that_fan_out_are_walked_once() {
    let mut schemas = Map::new();
    for level in 0..16 {
        let parts: Vec<Value> = (0..12)
            .map(|_| json!({"$ref": format!("#/components/schemas/S{}", level + 1)}))
            .collect();
        schemas.insert(format!("S{level}"), json!({"allOf": parts}));
    }
    schemas.insert("S16".to_owned(), json!({"type": "string"}));
    let source = json!({"components": {"schemas": schemas}});
    assert!(source.to_string().len() < 8 * 1024);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let converted = convert(&source, &json!({"$ref": "#/components/schemas/S0"}));
        let _ = done.send(converted);
    });
    let (schema, _) = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("converted without walking every path");
    assert_eq!(schema["$defs"].as_object().map(Map::len), Some(17));
}

fn convert(source: &Value, schema: &Value) -> (Value, Vec<Assumption>) {
    Converter::new(source, Dialect::OpenApi30).document(schema)
}

#[test]
fn components_become_defs_closed_where_they_are_used() {
    let source = json!({"components": {"schemas": {
        "pull": {"type": "object", "required": ["number"], "properties": {
            "number": {"type": "integer"},
            "title": {"type": "string"},
            "merged_at": {"type": "string", "format": "date-time", "nullable": true},
            "head": {"$ref": "#/components/schemas/ref"},
            "labels": {"type": "array", "items": {"$ref": "#/components/schemas/label"}},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}}
        }, "x-github": {"a": 1}},
        "ref": {"allOf": [{"$ref": "#/components/schemas/base"}, {"type": "object", "properties": {"sha": {"type": "string", "maxLength": 40}}}]},
        "base": {"type": "object", "properties": {"label": {"type": "string", "maxLength": 10}}},
        "label": {"type": "object", "properties": {"name": {"type": "string", "format": "int64-ish"}}}
    }}});
    let (schema, assumptions) = convert(&source, &json!({"$ref": "#/components/schemas/pull"}));
    assert_eq!(schema["$ref"], "#/$defs/pull");
    assert_eq!(schema["unevaluatedProperties"], false, "the root is closed");
    let pull = &schema["$defs"]["pull"];
    assert!(pull.get("x-github").is_none());
    assert!(
        pull.get("unevaluatedProperties").is_none(),
        "a definition is closed where used"
    );
    assert_eq!(pull["properties"]["title"]["maxLength"], STRING_BOUND);
    assert_eq!(pull["properties"]["number"]["minimum"], 0);
    assert_eq!(
        pull["properties"]["merged_at"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        pull["properties"]["head"],
        json!({"$ref": "#/$defs/ref", "unevaluatedProperties": false}),
        "closed at the use site, over what allOf composes"
    );
    assert_eq!(pull["properties"]["labels"]["maxItems"], ARRAY_BOUND);
    assert_eq!(
        pull["properties"]["labels"]["items"]["unevaluatedProperties"],
        false
    );
    assert_eq!(pull["properties"]["meta"]["maxProperties"], MAP_BOUND);
    assert!(
        schema["$defs"]["ref"]["allOf"][1]
            .get("unevaluatedProperties")
            .is_none()
    );
    assert!(
        schema["$defs"]["label"]["properties"]["name"]
            .get("format")
            .is_none()
    );
    assert!(
        assumptions
            .iter()
            .any(|assumption| assumption.what.contains("format \"int64-ish\" dropped"))
    );
    // Every schema the converter writes compiles as the gate compiles contract schemas.
    toolgate_gate::internals::standalone_validator(&schema).unwrap();
}

#[test]
fn a_type_its_own_keywords_imply_is_written_in() {
    let source = json!({});
    let (schema, assumptions) = convert(
        &source,
        &json!({"properties": {"tags": {"items": {"type": "string"}}}}),
    );
    assert_eq!(schema["type"], json!("object"));
    assert_eq!(schema["properties"]["tags"]["type"], json!("array"));
    assert!(
        assumptions
            .iter()
            .any(|assumption| assumption.what.starts_with("type object")),
        "{assumptions:?}"
    );
}

#[test]
fn openapi_3_0_spellings_become_2020_12() {
    let source = json!({});
    let (schema, _) = convert(
        &source,
        &json!({"type": "object", "properties": {
            "a": {"allOf": [{"type": "string", "maxLength": 3}], "nullable": true},
            "b": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "example": 1.5},
            "c": {"type": "string", "enum": ["x"], "nullable": true},
            "d": {"oneOf": [{"type": "string", "maxLength": 1}, {"type": "integer"}]}
        }}),
    );
    let properties = &schema["properties"];
    assert_eq!(properties["a"]["anyOf"][1], json!({"type": "null"}));
    assert_eq!(properties["b"]["exclusiveMinimum"], 0);
    assert!(properties["b"].get("minimum").is_none());
    assert_eq!(properties["b"]["examples"], json!([1.5]));
    assert_eq!(properties["c"]["enum"], json!(["x", null]));
    assert!(properties["d"].get("anyOf").is_some() && properties["d"].get("oneOf").is_none());
    let validator = toolgate_gate::internals::standalone_validator(&schema).unwrap();
    assert!(validator.is_valid(&json!({"a": null, "b": 0.5, "c": null, "d": 7})));
    assert!(!validator.is_valid(&json!({"b": 0})));
    assert!(!validator.is_valid(&json!({"e": 1})), "closed");
}

#[test]
fn conditions_are_copied_as_written_and_dependent_schemas_stay_open() {
    let source = json!({});
    let (schema, _) = Converter::new(&source, Dialect::JsonSchema).document(&json!({
        "type": "object",
        "properties": {
            "name": {"not": {"type": "string", "properties": {"x": {"type": "integer"}}}},
            "card": {"type": "string"},
            "kind": {"type": "string"}
        },
        "dependentSchemas": {"card": {"properties": {"billing": {"type": "string"}}, "required": ["billing"]}},
        "if": {"properties": {"kind": {"const": "a"}}},
        "then": {"properties": {"a": {"type": "string"}}},
        "else": {"properties": {"b": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}
    }));
    // Nothing bounded, typed or closed beneath `not` or `if`.
    assert_eq!(
        schema["properties"]["name"]["not"],
        json!({"type": "string", "properties": {"x": {"type": "integer"}}})
    );
    assert_eq!(
        schema["if"],
        json!({"properties": {"kind": {"const": "a"}}})
    );
    // A dependent schema, `then` and `else` apply to the object itself: its closing
    // `unevaluatedProperties` sees their members, so they are not closed on their own.
    let dependent = &schema["dependentSchemas"]["card"];
    assert!(
        dependent.get("unevaluatedProperties").is_none(),
        "{dependent}"
    );
    assert!(schema["then"].get("unevaluatedProperties").is_none());
    let validator = toolgate_gate::internals::standalone_validator(&schema).unwrap();
    assert!(
        validator.is_valid(&json!({"name": 1, "card": "c", "billing": "b", "kind": "a", "a": "x"}))
    );
    assert!(validator.is_valid(&json!({"kind": "b", "b": 3})));
    assert!(
        !validator.is_valid(&json!({"name": "x".repeat(10_000)})),
        "`not` refuses every string, however long"
    );
    assert!(
        !validator.is_valid(&json!({"card": "c"})),
        "the dependent schema applies"
    );
    assert!(
        !validator.is_valid(&json!({"kind": "a", "b": 3})),
        "b only where else applies"
    );
}
