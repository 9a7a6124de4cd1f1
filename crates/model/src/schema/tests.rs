//! The model's unit tests: schemas normalized, walked and compared.

use super::*;
use serde_json::json;

fn schemas(files: &[(&str, Value)]) -> Schemas {
    Schemas::new(
        files
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect(),
    )
}

#[test]
fn refs_across_files_and_ids_are_merged_into_one_node() {
    let set = schemas(&[
        (
            "envelope.json",
            json!({"$id": "https://example.invalid/e.json", "properties": {"data": {"$ref": "#/$defs/run", "required": ["state"]}}, "$defs": {"run": {"type": "object", "properties": {"state": {"$ref": "common.json#/$defs/state"}}, "additionalProperties": false}}}),
        ),
        (
            "common.json",
            json!({"$defs": {"state": {"enum": ["a", "b"]}}}),
        ),
    ]);
    let root = set.root("envelope.json");
    let data = root.facts().unwrap().properties["data"].facts().unwrap();
    assert!(data.required.contains("state"));
    assert_eq!(data.additional.kind, Kind::Nothing);
    let state = data.properties["state"].facts().unwrap();
    assert_eq!(state.values.as_deref(), Some(&[json!("a"), json!("b")][..]));
    assert_eq!(
        data.member("state").at.to_string(),
        "common.json#/$defs/state"
    );
}

#[test]
fn unevaluated_properties_closes_over_the_branch_that_matched() {
    let set = schemas(&[(
        "s.json",
        json!({"properties": {"tool": {"const": "t"}}, "oneOf": [{"properties": {"data": {}}}, {"properties": {"error": {}}}], "unevaluatedProperties": false}),
    )]);
    let root = set.root("s.json");
    assert_eq!(admits(&root, &json!({"tool": "t", "data": 1})), Ok(true));
    assert_eq!(
        admits(&root, &json!({"tool": "t", "data": 1, "x": 1})),
        Ok(false)
    );
    assert_eq!(
        admits(&root, &json!({"tool": "t", "error": 1, "data": 1})),
        Ok(false)
    );
}

#[test]
fn unmodelled_keywords_make_an_unknown_node_that_still_compares_equal() {
    let set = schemas(&[("s.json", json!({"unevaluatedItems": {"type": "string"}}))]);
    let root = set.root("s.json");
    assert!(matches!(root.kind, Kind::Unknown { .. }), "{:?}", root.kind);
    assert_eq!(root, set.root("s.json"));
    assert!(admits(&root, &json!(1)).is_err());
}

#[test]
fn pattern_properties_govern_every_name_they_match() {
    let set = schemas(&[(
        "s.json",
        json!({
            "type": "object",
            "properties": {"x-id": {"type": "string", "maxLength": 3}, "name": {"type": "string"}},
            "patternProperties": {"^x-": {"type": "string"}, "id$": {"minLength": 2}},
            "unevaluatedProperties": false
        }),
    )]);
    let root = set.root("s.json");
    let facts = root.facts().unwrap();
    assert_eq!(facts.pattern_properties.len(), 2);
    let admitted = |value: Value| admits(&root, &value);
    assert_eq!(admitted(json!({"x-a": "v", "name": "n"})), Ok(true));
    assert_eq!(admitted(json!({"x-a": 1})), Ok(false), "the pattern's type");
    assert_eq!(admitted(json!({"y": "v"})), Ok(false), "closed");
    assert_eq!(
        admitted(json!({"x-id": "abcd"})),
        Ok(false),
        "the property's bound"
    );
    assert_eq!(
        admitted(json!({"x-id": "a"})),
        Ok(false),
        "both patterns apply"
    );
    assert_eq!(admitted(json!({"x-id": "ab"})), Ok(true));
    assert_eq!(
        admitted(json!({"pid": "a"})),
        Ok(false),
        "`id$` alone, unclosed"
    );
    // One undeclared name for each combination of patterns a name can match.
    let kinds = undeclared_kinds(&[facts]).unwrap().unwrap();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    for name in &kinds {
        assert!(!facts.properties.contains_key(name), "{name}");
    }
    assert_eq!(undeclared_kinds(&[&Facts::new(&root.at)]), Ok(None));
}

#[test]
fn a_self_contained_keyword_is_kept_beside_the_facts_it_does_not_spoil() {
    let set = schemas(&[
        (
            "kept.json",
            json!({"type": "array", "maxItems": 3, "contains": {"const": 1}}),
        ),
        (
            "referring.json",
            json!({"type": "array", "contains": {"$ref": "#/$defs/one"}, "$defs": {"one": {"const": 1}}}),
        ),
        (
            "unevaluated.json",
            json!({"type": "object", "dependentSchemas": {"a": {"properties": {"b": {}}}, "c": {"properties": {"d": {}}}}, "unevaluatedProperties": false}),
        ),
        (
            "one_dependent.json",
            json!({"type": "object", "properties": {"a": {}}, "dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}, "unevaluatedProperties": false}),
        ),
        (
            "branch.json",
            json!({"type": "object", "oneOf": [{"if": {"required": ["a"]}, "then": {"properties": {"b": {}}}}, {"required": ["c"]}], "unevaluatedProperties": false}),
        ),
        (
            "items_only.json",
            json!({"type": "object", "properties": {"a": {}}, "not": {"required": ["z"]}, "unevaluatedProperties": false}),
        ),
    ]);
    let kept = set.root("kept.json");
    let facts = kept.facts().expect("modelled");
    assert_eq!(facts.max_items, Some(3));
    assert_eq!(facts.conjuncts["contains"].value, json!({"const": 1}));
    assert_eq!(facts.conjuncts["contains"].at.pointer, "/contains");
    // What the model reads refuses it: refused. What it reads admits: the kept keyword may
    // still refuse it, which the model cannot tell.
    assert_eq!(admits(&kept, &json!([1, 1, 1, 1])), Ok(false));
    assert!(admits(&kept, &json!([1])).is_err());
    // Written with a reference, or beside `unevaluated*`: not modelled at all.
    assert!(matches!(
        set.root("referring.json").kind,
        Kind::Unknown { .. }
    ));
    assert!(matches!(
        set.root("unevaluated.json").kind,
        Kind::Unknown { .. }
    ));
    assert!(matches!(set.root("branch.json").kind, Kind::Unknown { .. }));
    // One dependent schema is the member absent, or present with the schema holding (its
    // members then evaluated): modelled exactly.
    let one = set.root("one_dependent.json");
    for (value, admitted) in [
        (json!({}), true),
        (json!({"a": 1}), true),
        (json!({"a": 1, "b": "x"}), true),
        (json!({"a": 1, "b": 2}), false),
        (json!({"b": "x"}), false),
        (json!({"a": 1, "z": 0}), false),
    ] {
        assert_eq!(admits(&one, &value), Ok(admitted), "{value}");
    }
    // `not` evaluates no member: the object is closed as the model closes it.
    let closed = set.root("items_only.json");
    assert_eq!(closed.facts().unwrap().additional.kind, Kind::Nothing);
}

#[test]
fn examples_respect_every_fact() {
    let set = schemas(&[(
        "s.json",
        json!({"type": "object", "required": ["id", "at", "n"], "properties": {"id": {"type": "string", "pattern": "^run_[a-z]{3}$"}, "at": {"type": "string", "format": "date-time", "maxLength": 30}, "n": {"type": "integer", "minimum": 5}}, "additionalProperties": false}),
    )]);
    let root = set.root("s.json");
    let value = example(&root, None).unwrap();
    assert_eq!(admits(&root, &value), Ok(true), "{value}");
    assert_eq!(value["id"], json!("run_aaa"));
}

fn size(node: &Node) -> usize {
    match &node.kind {
        Kind::Facts(facts) => {
            1 + facts.properties.values().map(size).sum::<usize>()
                + size(&facts.additional)
                + size(&facts.items)
                + facts
                    .union
                    .iter()
                    .flat_map(|union| &union.branches)
                    .map(size)
                    .sum::<usize>()
        }
        _ => 1,
    }
}

#[test]
fn a_binary_tree_is_modelled_as_deep_as_the_budget_allows() {
    let tree = json!({"type": "object", "properties": {"left": {"$ref": "#"}, "right": {"$ref": "#"}, "value": {"type": "integer"}}, "additionalProperties": false});
    let set = schemas(&[("tree.json", tree)]);
    let root = set.root("tree.json");
    assert!(size(&root) <= NODE_BUDGET, "{}", size(&root));
    // Eight levels are followed: a tree that deep is decided, one deeper is not.
    let mut deep = json!({"value": 1});
    for _ in 0..8 {
        deep = json!({"left": deep, "value": 2});
    }
    assert_eq!(admits(&root, &deep), Ok(true));
    let mut wrong = json!({"value": "x"});
    for _ in 0..8 {
        wrong = json!({"right": wrong});
    }
    assert_eq!(admits(&root, &wrong), Ok(false));
    assert!(admits(&root, &json!({"left": deep})).is_err());
    assert_eq!(root, set.root("tree.json"));
}

#[test]
fn a_linear_recursion_is_followed_the_full_depth() {
    let list = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
    let set = schemas(&[("list.json", list)]);
    let mut deep = json!({});
    for _ in 0..24 {
        deep = json!({"next": deep});
    }
    assert_eq!(admits(&set.root("list.json"), &deep), Ok(true));
}

#[test]
fn a_schema_that_doubles_at_every_definition_is_not_modelled_past_the_budget() {
    // No recursion: 40 definitions, each using the one before twice (2^40 places).
    let mut defs = serde_json::Map::new();
    defs.insert("d0".into(), json!({"type": "string"}));
    for level in 1..40 {
        let previous = format!("#/$defs/d{}", level - 1);
        defs.insert(
            format!("d{level}"),
            json!({"type": "object", "properties": {"a": {"$ref": previous}, "b": {"$ref": previous}}}),
        );
    }
    let set = schemas(&[("s.json", json!({"$defs": defs, "$ref": "#/$defs/d39"}))]);
    let root = set.root("s.json");
    assert!(size(&root) <= NODE_BUDGET);
    assert!(matches!(root.kind, Kind::Facts(_)), "{:?}", root.kind);
    // Unchanged, it compares equal; changed anywhere below the cut, it does not.
    assert_eq!(root, set.root("s.json"));
    let mut changed = set.files()["s.json"].clone();
    changed["$defs"]["d0"] = json!({"type": "integer"});
    assert_ne!(root, schemas(&[("s.json", changed)]).root("s.json"));
}

#[test]
fn a_file_with_more_nodes_than_the_budget_is_not_modelled() {
    let properties: serde_json::Map<String, Value> = (0..NODE_BUDGET + 1)
        .map(|index| (format!("p{index}"), json!({"type": "string"})))
        .collect();
    let set = schemas(&[("s.json", json!({"properties": properties}))]);
    let root = set.root("s.json");
    let Kind::Unknown { reason, .. } = &root.kind else {
        panic!("{:?}", root.kind)
    };
    assert!(reason.contains("not modelled"), "{reason}");
}

/// A recursion closing stands for its target, which is modelled where it is expanded above:
/// an edit it cuts off is seen there, and the closings themselves are equal.
#[test]
fn an_edit_behind_a_recursion_closing_is_seen_where_its_target_is_expanded() {
    let files = |leaf: Value| {
        schemas(&[
            (
                "s.json",
                json!({"properties": {"next": {"$ref": "#"}, "x": {"$ref": "leaf.json"}}}),
            ),
            ("leaf.json", leaf),
        ])
    };
    let before = files(json!({"type": "string"})).root("s.json");
    let after = files(json!({"type": "integer"})).root("s.json");
    let mut deepest = &before;
    let mut deepest_after = &after;
    while let (Kind::Facts(a), Kind::Facts(b)) = (&deepest.kind, &deepest_after.kind) {
        deepest = &a.properties["next"];
        deepest_after = &b.properties["next"];
    }
    assert!(deepest.recursion_closed().is_some(), "{:?}", deepest.kind);
    assert_eq!(deepest, deepest_after);
    assert_ne!(before, after);
    let leaf = |root: &Node| root.facts().unwrap().member("x").into_owned();
    assert_ne!(leaf(&before), leaf(&after));
}

#[test]
fn canonical_forms_are_equal_exactly_when_the_values_are() {
    let same = [
        (json!(1), json!(1.0)),
        (json!(0.0), json!(-0.0)),
        (
            json!({"a": 1, "b": [true, null]}),
            json!({"b": [true, null], "a": 1.0}),
        ),
    ];
    for (a, b) in same {
        assert!(same_value(&a, &b));
        assert_eq!(canonical(&a), canonical(&b), "{a} {b}");
    }
    let different = [
        (json!("1"), json!(1)),
        (json!(["a,b"]), json!(["a", "b"])),
        (json!({"a": "b"}), json!({"a:b": null})),
        (json!([]), json!({})),
        (json!(null), json!("z")),
    ];
    for (a, b) in different {
        assert!(!same_value(&a, &b));
        assert_ne!(canonical(&a), canonical(&b), "{a} {b}");
    }
    let values = Values::new(vec![json!(1), json!("x")]);
    assert!(values.contains(&json!(1.0)));
    assert!(!values.contains(&json!("1")));
}

/// `format_min_length` is a floor the gate's own format validators keep: the shortest string
/// of each format is admitted, and no string one character shorter made from it (a character
/// left out anywhere, or the whole cut short) is.
#[test]
fn a_formats_fewest_characters_are_what_the_gate_admits() {
    use toolgate_gate::internals::format_accepts;
    for (format, shortest) in [
        ("date-time", "2026-01-01T00:00:00Z"),
        ("date", "2026-01-01"),
        ("time", "00:00:00Z"),
        ("uuid", "00000000-0000-4000-8000-000000000000"),
        ("ipv4", "0.0.0.0"),
        ("ipv6", "::"),
        ("email", "a@b"),
        ("duration", "P1D"),
    ] {
        let floor = format_min_length(format);
        assert_eq!(shortest.chars().count() as u64, floor, "{format}");
        assert_eq!(format_accepts(format, shortest), Some(true), "{format}");
        let characters: Vec<char> = shortest.chars().collect();
        for left_out in 0..characters.len() {
            let mut shorter = characters.clone();
            shorter.remove(left_out);
            let shorter: String = shorter.into_iter().collect();
            assert_eq!(
                format_accepts(format, &shorter),
                Some(false),
                "{format}: {shorter:?} is shorter than the floor"
            );
        }
    }
    assert_eq!(
        format_min_length("hostname"),
        0,
        "no floor for a format not listed"
    );
}
