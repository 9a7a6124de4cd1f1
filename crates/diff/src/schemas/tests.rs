//! The side-by-side walk's unit tests.

use super::kept::narrowing;
use super::*;
use serde_json::json;
use toolgate_model::Schemas;

fn root(schema: Value) -> Node {
    Schemas::new([("s.json".to_owned(), schema)].into_iter().collect()).root("s.json")
}

#[test]
fn a_kept_keywords_change_narrows_or_widens_only_where_it_is_monotone() {
    use Ordering::{Equal, Greater, Less};
    let n = |value: u64| json!(value);
    let deps = |value: Value| value;
    for (name, before, after, expected) in [
        // `minContains` is 1 when not written: 0 widens, 2 narrows.
        ("minContains", None, Some(n(2)), Some(Less)),
        ("minContains", None, Some(n(0)), Some(Greater)),
        ("minContains", Some(n(0)), None, Some(Less)),
        ("minContains", None, Some(n(1)), Some(Equal)),
        ("minContains", Some(n(3)), Some(n(2)), Some(Greater)),
        ("minContains", Some(json!("x")), Some(n(2)), None),
        // `maxContains` is unbounded when not written.
        ("maxContains", None, Some(n(2)), Some(Less)),
        ("maxContains", Some(n(2)), None, Some(Greater)),
        ("maxContains", Some(n(2)), Some(n(3)), Some(Greater)),
        ("maxContains", Some(n(3)), Some(n(2)), Some(Less)),
        // A further condition: written, narrower; gone, wider; rewritten, unknown.
        ("contains", None, Some(json!({"const": 1})), Some(Less)),
        ("not", Some(json!({"const": 1})), None, Some(Greater)),
        (
            "not",
            Some(json!({"const": 1})),
            Some(json!({"const": 2})),
            None,
        ),
        (
            "dependentRequired",
            Some(deps(json!({"a": ["b"]}))),
            Some(deps(json!({"a": ["b", "c"]}))),
            Some(Less),
        ),
        (
            "dependentRequired",
            Some(deps(json!({"a": ["b"], "c": ["d"]}))),
            Some(deps(json!({"c": ["d"]}))),
            Some(Greater),
        ),
        (
            "dependentRequired",
            Some(deps(json!({"a": ["b"]}))),
            Some(deps(json!({"c": ["d"]}))),
            None,
        ),
    ] {
        assert_eq!(
            narrowing(name, before.as_ref(), after.as_ref()),
            expected,
            "{name}: {before:?} → {after:?}"
        );
    }
}

fn changes(from: Value, to: Value, promised: &[&str]) -> Vec<Change> {
    let context = ShapeContext {
        shape: "current".into(),
        promised: promised.iter().map(|p| (*p).to_owned()).collect(),
        observed: promised.iter().map(|p| (*p).to_owned()).collect(),
        projected: (Vec::new(), Vec::new()),
    };
    let mut out = Vec::new();
    compare(&root(from), &root(to), &context, &mut out);
    out
}

fn effects(change: &Change) -> [Value; 4] {
    BumpVerdict::ALL.map(|verdict| change.effect(verdict).as_json())
}

#[test]
fn an_enum_narrowed_under_a_promised_field_breaks_and_narrows() {
    let from = json!({"type": "object", "properties": {"state": {"enum": ["a", "b"]}}});
    let to = json!({"type": "object", "properties": {"state": {"enum": ["a"]}}});
    let found = changes(from, to, &["/state"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, "enum_narrowed");
    assert_eq!(
        effects(&found[0]),
        [json!(true), json!(false), json!(false), json!(true)]
    );
    assert_eq!(
        found[0].effect(BumpVerdict::UpstreamBreaking),
        &Effect::Yes(Probe::replace("/state", json!("b")))
    );
}

#[test]
fn opening_an_object_loosens_upstream_and_widens_nothing() {
    let from = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false});
    let to = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let found = changes(from, to, &["/a"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].kind, "object_opened");
    assert_eq!(
        effects(&found[0]),
        [json!(false), json!(true), json!(false), json!(false)]
    );
}

#[test]
fn a_pattern_change_is_decided_by_language_inclusion() {
    let from = json!({"type": "string", "pattern": "^run_[a-z]{12}$"});
    let to = json!({"type": "string", "pattern": "^run_[a-z0-9]{12,48}$"});
    let found = changes(from.clone(), to.clone(), &[""]);
    assert_eq!(found[0].kind, "pattern_changed");
    assert_eq!(
        effects(&found[0]),
        [json!(false), json!(true), json!(true), json!(false)]
    );
    let found = changes(to, from, &[""]);
    assert_eq!(
        effects(&found[0]),
        [json!(true), json!(false), json!(false), json!(true)]
    );
}
