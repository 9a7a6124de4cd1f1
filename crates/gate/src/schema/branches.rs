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
//! That equivalence holds for the document's root only: anything that evaluates the root schema
//! again, deeper in the document, must still get the whole `oneOf`. So the rewrite is taken only
//! where nothing in any file of the contract can resolve to the narrowed root, decided once, at
//! compile time, with the reason kept when it is declined ([`narrowing`]):
//!
//! - no dynamic or recursive reference anywhere (`$dynamicRef`, `$recursiveRef`): they resolve
//!   through the dynamic scope, whose outermost resource is the root being validated, the
//!   narrowed one included;
//! - no anchor in the root file (`$anchor`, `$dynamicAnchor`, `$recursiveAnchor`) and no `$id`
//!   below its top: a name for a place in the root is a way back to it;
//! - every `$ref` in the root file that resolves to the root file itself points into `$defs`
//!   (or `definitions`): `#` or `#/oneOf/0` would reach the narrowed copy;
//! - no other file claims the root's identity with an `$id` of its own.
//!
//! A `$ref` from another file back to the root keeps meaning the whole root: each narrowed
//! schema is compiled under a URI of its own beside the root's, without the root's `$id`, so the
//! root's own URI (and `$id`) still name the original. Everything is scanned alike, data under
//! `const` or a property that happens to be called `$ref` included: a false alarm only costs the
//! narrowing, never a decision.

use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::Uri;
use serde_json::{Map, Value};

/// What each narrowed schema's URI ends with, beside the root's (`schema.rs`).
pub(super) const NARROWED_SUFFIX: &str = ".toolgate-narrowed-";

/// The contract's schema files as the compiler sees them: every document by URI (each file's own
/// URI, and the absolute `$id` a file declares at its top).
pub(super) struct Files<'a> {
    /// The contract folder's base URI; a key under it names a file.
    pub base: &'a str,
    pub documents: &'a HashMap<String, Arc<Value>>,
}

/// For each outcome value, the root schema at `root_uri` with `oneOf` narrowed to that value's
/// branch; or why the narrowing is declined (in the operator's words, naming file and pointer).
pub(super) fn narrowing(
    files: &Files<'_>,
    root_uri: &str,
    member: &str,
) -> Result<Vec<(String, Value)>, String> {
    let root = files
        .documents
        .get(root_uri)
        .ok_or_else(|| "the root schema is not among the contract's files".to_owned())?;
    let branches = discriminated_branches(root, member)?;
    references_cannot_reach_root(files, root_uri, root)?;
    let object = root.as_object().expect("a `oneOf` envelope is an object");
    let mut narrowed = Vec::with_capacity(branches.len());
    for (value, branch) in branches {
        let mut schema: Map<String, Value> = object.clone();
        schema.remove("oneOf");
        // Compiled under a URI of its own (`schema.rs`): it must not claim the root's `$id`.
        schema.remove("$id");
        match schema
            .entry("allOf")
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(all) => all.push(branch.clone()),
            _ => return Err("the root's `allOf` is not a list".to_owned()),
        }
        narrowed.push((value, Value::Object(schema)));
    }
    Ok(narrowed)
}

/// The root's `oneOf` branches by the outcome value each fixes with a `const`.
fn discriminated_branches<'v>(
    root: &'v Value,
    member: &str,
) -> Result<Vec<(String, &'v Value)>, String> {
    let Some(branches) = root.get("oneOf").and_then(Value::as_array) else {
        return Err("the root has no `oneOf` list".to_owned());
    };
    if branches.len() < 2 {
        return Err("the root's `oneOf` has fewer than two branches".to_owned());
    }
    let pointer = format!("/properties/{}/const", escape(member));
    let mut by_value: Vec<(String, &Value)> = Vec::with_capacity(branches.len());
    for (index, branch) in branches.iter().enumerate() {
        let Some(value) = branch.pointer(&pointer).and_then(Value::as_str) else {
            return Err(format!(
                "`oneOf` branch {index} fixes no string `const` at {pointer}: its branches are not told apart by the outcome member"
            ));
        };
        if by_value.iter().any(|(known, _)| known == value) {
            return Err(format!("two `oneOf` branches fix the outcome to {value:?}"));
        }
        by_value.push((value.to_owned(), branch));
    }
    Ok(by_value)
}

/// Whether anything in any file of the contract could resolve to the root (see the module's
/// comment); `Err` names the first thing that could.
fn references_cannot_reach_root(
    files: &Files<'_>,
    root_uri: &str,
    root: &Arc<Value>,
) -> Result<(), String> {
    let root_file = root_uri.strip_prefix(files.base).unwrap_or(root_uri);
    let Ok(file_uri) = Uri::parse(root_uri.to_owned()) else {
        return Err(format!("the root's URI {root_uri:?} does not parse"));
    };
    // The root's identities: its file's URI, and its own `$id` resolved against it.
    let mut identities = vec![without_fragment(file_uri.as_str())];
    let mut base = file_uri.clone();
    if let Some(id) = root.get("$id") {
        let id = id
            .as_str()
            .ok_or_else(|| format!("{root_file}#/$id is not a string"))?;
        base = resolve(&file_uri, id)
            .ok_or_else(|| format!("{root_file}#/$id {:?} does not resolve", shown(id)))?;
        identities.push(without_fragment(base.as_str()));
    }
    let mut root_walk = Walk {
        file: root_file,
        is_root: true,
        identities: &identities,
    };
    root_walk.scan(root, &base, &mut String::new(), true)?;
    // Every other file, once (a document is also listed under its `$id`).
    let mut others: Vec<(&str, &Arc<Value>)> = files
        .documents
        .iter()
        .filter(|(uri, document)| *uri != root_uri && !Arc::ptr_eq(document, root))
        .filter_map(|(uri, document)| Some((uri.strip_prefix(files.base)?, document)))
        .collect();
    others.sort_by_key(|(file, _)| *file);
    for (file, document) in others {
        let Ok(file_uri) = Uri::parse(format!("{}{file}", files.base)) else {
            continue;
        };
        let mut walk = Walk {
            file,
            is_root: false,
            identities: &identities,
        };
        walk.scan(document, &file_uri, &mut String::new(), true)?;
    }
    Ok(())
}

/// A scan of one file for what could resolve to the root.
struct Walk<'a> {
    file: &'a str,
    /// Whether this file is the root's own.
    is_root: bool,
    /// The URIs (without fragment) that name the root.
    identities: &'a [String],
}

impl Walk<'_> {
    /// Scans `value` at `pointer`, whose references resolve against `base`; `top` when `value`
    /// is the file's top-level schema.
    fn scan(
        &mut self,
        value: &Value,
        base: &Uri<String>,
        pointer: &mut String,
        top: bool,
    ) -> Result<(), String> {
        match value {
            Value::Object(members) => {
                let mut base = base.clone();
                if let Some(id) = members.get("$id") {
                    if self.is_root && !top {
                        return Err(self.why(pointer, "$id", "a nested `$id` in the root's file names a resource of its own, which could be reached in ways the narrowing cannot follow"));
                    }
                    if let Some(resolved) = id.as_str().and_then(|id| resolve(&base, id)) {
                        if !self.is_root && self.names_root(&resolved) {
                            return Err(self.why(
                                pointer,
                                "$id",
                                "another file claims the root's own URI",
                            ));
                        }
                        base = resolved;
                    } else if !self.is_root {
                        return Err(self.why(
                            pointer,
                            "$id",
                            "an `$id` that does not resolve could name anything, the root included",
                        ));
                    }
                }
                for (name, member) in members {
                    match name.as_str() {
                        "$dynamicRef" | "$recursiveRef" => {
                            return Err(self.why(pointer, name, "a dynamic reference resolves through the dynamic scope, whose outermost resource is the root being validated (the narrowed one included)"));
                        }
                        "$anchor" | "$dynamicAnchor" | "$recursiveAnchor" if self.is_root => {
                            return Err(self.why(pointer, name, "an anchor in the root's file is a name a reference could reach the root by"));
                        }
                        "$ref" if self.is_root => self.root_reference(member, &base, pointer)?,
                        _ => {}
                    }
                    let length = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&escape(name));
                    let scanned = self.scan(member, &base, pointer, false);
                    pointer.truncate(length);
                    scanned?;
                }
                Ok(())
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let length = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&index.to_string());
                    let scanned = self.scan(item, base, pointer, false);
                    pointer.truncate(length);
                    scanned?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A `$ref` in the root's file: one that resolves to the root's file itself must point into
    /// `$defs` (or `definitions`); one into another file is that file's to answer for.
    fn root_reference(
        &self,
        reference: &Value,
        base: &Uri<String>,
        pointer: &str,
    ) -> Result<(), String> {
        let Some(text) = reference.as_str() else {
            return Err(self.why(pointer, "$ref", "a `$ref` that is not a string"));
        };
        let Some(resolved) = resolve(base, text) else {
            return Err(self.why(pointer, "$ref", "a `$ref` that does not resolve"));
        };
        if !self.names_root(&resolved) {
            return Ok(());
        }
        let fragment = resolved.fragment().map(|fragment| fragment.as_str());
        let into_defs = fragment.is_some_and(|fragment| {
            fragment.starts_with("/$defs/")
                || fragment.starts_with("/%24defs/")
                || fragment.starts_with("/definitions/")
        });
        if into_defs {
            Ok(())
        } else {
            Err(self.why(
                pointer,
                "$ref",
                &format!("`$ref` {:?} reaches the root outside `$defs`", shown(text)),
            ))
        }
    }

    fn names_root(&self, uri: &Uri<String>) -> bool {
        let bare = without_fragment(uri.as_str());
        self.identities.contains(&bare) || bare.contains(NARROWED_SUFFIX)
    }

    fn why(&self, pointer: &str, keyword: &str, reason: &str) -> String {
        let place = format!("{}#{pointer}/{}", self.file, escape(keyword));
        format!(
            "{}: {reason}",
            crate::sanitize::sanitize(&place, crate::sanitize::PATH_CAP)
        )
    }
}

fn resolve(base: &Uri<String>, reference: &str) -> Option<Uri<String>> {
    jsonschema::uri::resolve_against(&base.borrow(), reference).ok()
}

fn without_fragment(uri: &str) -> String {
    uri.split('#').next().unwrap_or_default().to_owned()
}

fn escape(member: &str) -> String {
    member.replace('~', "~0").replace('/', "~1")
}

/// Contract text as a reason quotes it: capped, escaped (a contract may come from a pull request).
fn shown(text: &str) -> String {
    crate::sanitize::sanitize(text, 120)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BASE: &str = "toolgate://contract/t/v1/";

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

    /// The narrowing of `root` (file `envelope.json`) beside `others` (each file's name and
    /// document), as `schema.rs` asks for it.
    fn narrowing_of(
        root: &Value,
        others: &[(&str, Value)],
        member: &str,
    ) -> Result<Vec<(String, Value)>, String> {
        let mut documents = HashMap::new();
        let mut add = |file: &str, document: &Value| {
            let document = Arc::new(document.clone());
            if let Some(id) = document.get("$id").and_then(Value::as_str)
                && id.contains("://")
            {
                documents.insert(id.to_owned(), Arc::clone(&document));
            }
            documents.insert(format!("{BASE}{file}"), document);
        };
        add("envelope.json", root);
        for (file, document) in others {
            add(file, document);
        }
        let files = Files {
            base: BASE,
            documents: &documents,
        };
        narrowing(&files, &format!("{BASE}envelope.json"), member)
    }

    #[test]
    fn each_outcome_gets_the_root_with_its_own_branch() {
        let narrowed = narrowing_of(&envelope(), &[], "outcome").unwrap();
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
    fn schemas_the_rewrite_could_change_are_declined_with_the_reason() {
        let mut cases = Vec::new();
        let mut with = |pointer: &str, value: Value, reason: &str| {
            let mut schema = envelope();
            *schema.pointer_mut(pointer).unwrap() = value;
            cases.push((schema, reason.to_owned()));
        };
        with(
            "/$defs/data",
            json!({"$ref": "#"}),
            "envelope.json#/$defs/data/$ref",
        );
        with(
            "/$defs/data",
            json!({"$ref": "#/oneOf/0"}),
            "reaches the root outside `$defs`",
        );
        with(
            "/$defs/data",
            json!({"$ref": "envelope.json"}),
            "outside `$defs`",
        );
        with(
            "/$defs/data",
            json!({"$ref": "https://example.invalid/envelope.json#/oneOf"}),
            "outside `$defs`",
        );
        with(
            "/$defs/data",
            json!({"$dynamicRef": "#/$defs/data"}),
            "dynamic reference",
        );
        with(
            "/$defs/data",
            json!({"$recursiveRef": "#"}),
            "dynamic reference",
        );
        with("/$defs/data", json!({"$id": "nested.json"}), "nested `$id`");
        with("/$defs/data", json!({"$anchor": "data"}), "anchor");
        with("/$defs/data", json!({"$dynamicAnchor": "data"}), "anchor");
        with(
            "/oneOf/1/properties/outcome/const",
            json!("success"),
            "two `oneOf` branches",
        );
        with(
            "/oneOf/1/properties/outcome",
            json!({"enum": ["failure"]}),
            "branch 1 fixes no string `const`",
        );
        with(
            "/oneOf",
            json!([{"properties": {"outcome": {"const": "success"}}}]),
            "fewer than two",
        );
        with(
            "/$defs/data",
            json!({"properties": {"const": {"$ref": "#"}}}),
            "$ref",
        );
        // A reference inside a list (`anyOf`, `prefixItems`) is a reference all the same.
        with(
            "/$defs/data",
            json!({"anyOf": [{"$ref": "#"}]}),
            "/anyOf/0/$ref",
        );
        for (schema, reason) in cases {
            let declined = narrowing_of(&schema, &[], "outcome").unwrap_err();
            assert!(declined.contains(&reason), "{declined:?} for {schema}");
        }
        assert!(narrowing_of(&envelope(), &[], "status").is_err());
        assert!(narrowing_of(&json!({"anyOf": []}), &[], "outcome").is_err());
    }

    #[test]
    fn a_root_anchor_is_declined_wherever_it_is_used_from() {
        // The shape that once slipped through: a root `$dynamicAnchor` reached by a `$dynamicRef`
        // from another file, which put the narrowed root in the dynamic scope.
        let mut root = envelope();
        root["$dynamicAnchor"] = json!("node");
        let other = json!({"$dynamicAnchor": "node", "$defs": {"n": {"$dynamicRef": "#node"}}});
        let declined = narrowing_of(&root, &[("node.json", other)], "outcome").unwrap_err();
        assert!(
            declined.starts_with("envelope.json#/$dynamicAnchor"),
            "{declined}"
        );
        // The dynamic reference alone, in another file, is enough.
        let other = json!({"$defs": {"n": {"$dynamicRef": "envelope.json#/$defs/data"}}});
        let declined = narrowing_of(&envelope(), &[("node.json", other)], "outcome").unwrap_err();
        assert!(
            declined.starts_with("node.json#/$defs/n/$dynamicRef"),
            "{declined}"
        );
    }

    #[test]
    fn other_files_may_refer_to_the_root_but_not_claim_it() {
        // A reference back to the whole root from another file resolves to the original root
        // (the narrowed copies live under URIs of their own).
        let back = json!({"$defs": {"tree": {"$ref": "envelope.json"}}});
        assert!(narrowing_of(&envelope(), &[("node.json", back)], "outcome").is_ok());
        // A reference into another file from the root is that file's to answer for.
        let mut root = envelope();
        root["$defs"]["data"] = json!({"$ref": "node.json"});
        assert!(narrowing_of(&root, &[("node.json", json!({}))], "outcome").is_ok());
        for id in [
            json!("https://example.invalid/envelope.json"),
            json!("envelope.json"),
            json!("https://example.invalid/envelope.json.toolgate-narrowed-0"),
        ] {
            let claim = json!({"$defs": {"x": {"$id": id.clone(), "type": "string"}}});
            let declined =
                narrowing_of(&envelope(), &[("node.json", claim)], "outcome").unwrap_err();
            assert!(
                declined.contains("claims the root's own URI"),
                "{id}: {declined}"
            );
        }
    }
}
