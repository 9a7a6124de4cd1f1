//! What the `unevaluated*` keywords see: which members the keywords kept beside a node evaluate,
//! so a node keeps them only where they evaluate declared members alone.

use super::*;

/// Whether a keyword kept undecided in `node`, or in one of its `oneOf`/`anyOf` branches (whose
/// members count as evaluated too), evaluates members the node (or that branch) does not already
/// evaluate by its own `properties`: `unevaluatedProperties` beside it then means something the
/// model cannot say. One that evaluates only declared members (an `if` on a declared member's
/// value, a `then` that requires one) leaves the closing as it is, and is kept as written.
pub(super) fn kept_keyword_evaluates_members(node: &Node) -> bool {
    evaluates_undeclared(node, &BTreeSet::new())
}

pub(super) fn evaluates_undeclared(node: &Node, declared_above: &BTreeSet<&str>) -> bool {
    let Some(facts) = node.facts() else {
        return false;
    };
    let mut declared = declared_above.clone();
    declared.extend(facts.properties.keys().map(String::as_str));
    let mut evaluated = BTreeSet::new();
    let listed = ["dependentSchemas", "if", "then", "else"]
        .iter()
        .filter_map(|name| Some((*name, facts.conjuncts.get(*name)?)))
        .try_for_each(|(name, kept)| match name {
            "dependentSchemas" => kept
                .value
                .as_object()?
                .values()
                .try_for_each(|schema| listed_evaluations(schema, &mut evaluated)),
            _ => listed_evaluations(&kept.value, &mut evaluated),
        });
    listed.is_none()
        || evaluated
            .iter()
            .any(|name| !declared.contains(name.as_str()))
        || facts.union.as_ref().is_some_and(|union| {
            union
                .branches
                .iter()
                .any(|branch| evaluates_undeclared(branch, &declared))
        })
}

/// Adds the member names `schema` (written without references) evaluates for
/// `unevaluatedProperties` wherever it applies; `None` where a keyword may evaluate names it
/// does not list (`patternProperties`, `additionalProperties`, `unevaluatedProperties`, a
/// reference).
pub(super) fn listed_evaluations(schema: &Value, into: &mut BTreeSet<String>) -> Option<()> {
    let Value::Object(members) = schema else {
        return Some(());
    };
    for (keyword, value) in members {
        match keyword.as_str() {
            "properties" => into.extend(value.as_object()?.keys().cloned()),
            "patternProperties"
            | "additionalProperties"
            | "unevaluatedProperties"
            | "$ref"
            | "$dynamicRef"
            | "$recursiveRef" => return None,
            "allOf" | "anyOf" | "oneOf" => {
                for part in value.as_array()? {
                    listed_evaluations(part, into)?;
                }
            }
            "if" | "then" | "else" => listed_evaluations(value, into)?,
            "dependentSchemas" => {
                for part in value.as_object()?.values() {
                    listed_evaluations(part, into)?;
                }
            }
            // `not` keeps no annotations; the rest apply to items or to member values.
            _ => {}
        }
    }
    Some(())
}
