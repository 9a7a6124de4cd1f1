//! A result envelope's `oneOf`, decided by its discriminator.
//!
//! Result schemas are written as a `oneOf` of a success and a failure branch that differ in a
//! `const` on the outcome member. jsonschema must try every branch to prove exactly one holds
//! (it dispatches on a `const` itself only from three branches up), so a success pays for the
//! failure branch too: about a quarter of `is_valid` on the bundled envelope. The contract names
//! the outcome member, so the gate can do better.
//!
//! When the root's `oneOf` branches each say `properties: {<outcome>: {const: "<value>"}}` with
//! different values, a document whose outcome is one of those values fails every other branch by
//! that `properties` alone; `oneOf` then holds exactly when that branch holds. So the root is
//! equivalent, for such a document, to the root with `oneOf` replaced by `allOf: [that branch]`
//! (which keeps the branch's annotations for `unevaluated*` as `oneOf` does). One validator is
//! compiled per value, and a document with any other outcome goes to the full schema.
//!
//! The rewrite must not change what a reference means, so it is declined for a schema that could
//! refer to its own root or into its `oneOf`: every `$ref` in it must point into `$defs` (or
//! `definitions`), and it may use no `$dynamicRef`, `$recursiveRef` and no nested `$id`. A
//! reference from another file back to the root is kept meaning the whole root: each narrowed
//! schema is compiled under a URI of its own beside the root's, without the root's `$id`, so the
//! root's own URI (and `$id`) still name the original.

use serde_json::{Map, Value};

/// For each outcome value, the root schema with `oneOf` narrowed to that value's branch; `None`
/// when the schema is not a `oneOf` envelope discriminated by `member`, or could tell the
/// difference.
pub(super) fn narrowed(root: &Value, member: &str) -> Option<Vec<(String, Value)>> {
    let object = root.as_object()?;
    let branches = object.get("oneOf")?.as_array()?;
    if branches.len() < 2 || !references_stay_in_defs(root, true) {
        return None;
    }
    let mut narrowed: Vec<(String, Value)> = Vec::with_capacity(branches.len());
    for branch in branches {
        let value = branch
            .pointer(&format!("/properties/{}/const", escape(member)))?
            .as_str()?;
        if narrowed.iter().any(|(known, _)| known == value) {
            return None;
        }
        let mut schema: Map<String, Value> = object.clone();
        schema.remove("oneOf");
        // Compiled under a URI of its own (`schema.rs`): it must not claim the root's `$id`.
        schema.remove("$id");
        match schema
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(all) => all.push(branch.clone()),
            _ => return None,
        }
        narrowed.push((value.to_owned(), Value::Object(schema)));
    }
    Some(narrowed)
}

fn escape(member: &str) -> String {
    member.replace('~', "~0").replace('/', "~1")
}

/// Whether every reference in `schema` points into `$defs` or `definitions`, and nothing in it
/// could resolve against a different root. Errs on the side of no.
fn references_stay_in_defs(schema: &Value, at_root: bool) -> bool {
    match schema {
        Value::Object(members) => members.iter().all(|(name, value)| match name.as_str() {
            "$ref" => value.as_str().is_some_and(points_into_defs),
            "$dynamicRef" | "$recursiveRef" => false,
            "$id" if !at_root => false,
            // Everything else is scanned alike, data under `const` or a property that happens to
            // be called `$ref` included: a false alarm only costs the narrowing.
            _ => references_stay_in_defs(value, false),
        }),
        Value::Array(items) => items
            .iter()
            .all(|item| references_stay_in_defs(item, false)),
        _ => true,
    }
}

fn points_into_defs(reference: &str) -> bool {
    reference.split_once('#').is_some_and(|(_, fragment)| {
        fragment.starts_with("/$defs/") || fragment.starts_with("/definitions/")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope() -> Value {
        json!({
            "$id": "https://example.invalid/envelope.json",
            "oneOf": [
                {"type": "object", "properties": {"outcome": {"const": "success"}, "data": {"$ref": "#/$defs/data"}}},
                {"type": "object", "properties": {"outcome": {"const": "failure"}}}
            ],
            "$defs": {"data": {"type": "object"}}
        })
    }

    #[test]
    fn each_outcome_gets_the_root_with_its_own_branch() {
        let narrowed = narrowed(&envelope(), "outcome").unwrap();
        let values: Vec<&str> = narrowed.iter().map(|(value, _)| value.as_str()).collect();
        assert_eq!(values, ["success", "failure"]);
        let success = &narrowed[0].1;
        assert!(success.get("oneOf").is_none());
        assert_eq!(success["allOf"], json!([envelope()["oneOf"][0]]));
        assert_eq!(success["$defs"], envelope()["$defs"]);
        // Compiled under a URI of its own, it does not claim the root's.
        assert!(success.get("$id").is_none());
    }

    #[test]
    fn schemas_the_rewrite_could_change_are_declined() {
        let mut cases = Vec::new();
        let mut with = |pointer: &str, value: Value| {
            let mut schema = envelope();
            *schema.pointer_mut(pointer).unwrap() = value;
            cases.push(schema);
        };
        with("/$defs/data", json!({"$ref": "#"}));
        with("/$defs/data", json!({"$ref": "#/oneOf/0"}));
        with("/$defs/data", json!({"$ref": "envelope.json"}));
        with("/$defs/data", json!({"$dynamicRef": "#/$defs/data"}));
        with("/$defs/data", json!({"$id": "nested.json"}));
        with("/oneOf/1/properties/outcome/const", json!("success"));
        with("/oneOf/1/properties/outcome", json!({"enum": ["failure"]}));
        with(
            "/oneOf",
            json!([{"properties": {"outcome": {"const": "success"}}}]),
        );
        with(
            "/$defs/data",
            json!({"properties": {"const": {"$ref": "#"}}}),
        );
        // A reference inside a list (`anyOf`, `prefixItems`) is a reference all the same.
        with("/$defs/data", json!({"anyOf": [{"$ref": "#"}]}));
        for schema in cases {
            assert!(narrowed(&schema, "outcome").is_none(), "{schema}");
        }
        assert!(narrowed(&envelope(), "status").is_none());
        assert!(narrowed(&json!({"anyOf": []}), "outcome").is_none());
    }
}
