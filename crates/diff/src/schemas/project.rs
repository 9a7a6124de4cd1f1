//! What the agent can tell apart below a node: the node's values cut down to the pointers the
//! gate reads (the promised fields, the outcome, the failure code, correlation), as a node of
//! its own. Two versions whose cut-down nodes include one another give the agent the same
//! outputs there, whatever changed beside the fields: a union whose new branch only differs in
//! members no field reads widens nothing the agent sees.
//!
//! The cut is a fixed function of a value and the pointers, the same for both versions: an
//! object keeps the members some pointer names, each cut further; an array keeps its items cut
//! where a pointer goes through them (`*`), and whole otherwise; every other value stays whole.
//! The output of a response is a function of its cut, so an inclusion of the cut sets is an
//! inclusion of the outputs. The node built here admits exactly the cut values of the node it
//! is built from, or there is none: a coupling between a read member and one it drops
//! (`dependentSchemas`, `if`, counts of members), a keyword the model keeps undecided, or a
//! dropped required member the model cannot fill would make the cut set wider or narrower than
//! what it says, and a wrong "no" is worse than an undecided one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;
use toolgate_model::{Facts, JsonType, Kind, Node, Union, Values, admits, alternatives, example};

use super::unions::disjoint_branches;

/// How deep a cut follows unions and members before it gives up (a recursive schema).
const DEEPEST: usize = 48;

/// The values of `node` cut down to `rests` (pointers below it, as unescaped tokens; an empty
/// one reads the whole value), or `None` where the model cannot build that set exactly.
pub(super) fn cut(node: &Node, rests: &[Vec<String>]) -> Option<Node> {
    cut_at(node, rests, 0)
}

fn cut_at(node: &Node, rests: &[Vec<String>], depth: usize) -> Option<Node> {
    if depth > DEEPEST {
        return None;
    }
    if rests.iter().any(Vec::is_empty) {
        return Some(node.clone());
    }
    let facts = match &node.kind {
        Kind::Nothing => return Some(node.clone()),
        Kind::Unknown { .. } => return None,
        Kind::Any => Facts::new(&node.at),
        Kind::Facts(facts) => (**facts).clone(),
    };
    if let Some(union) = &facts.union {
        if union.exactly_one && !disjoint_branches(&union.branches) {
            // A value in two branches is refused by `oneOf`, yet its cut may be another
            // value's, in one branch only.
            return None;
        }
        let branches = alternatives(node)
            .iter()
            .map(|branch| cut_at(branch, rests, depth + 1))
            .collect::<Option<Vec<Node>>>()?;
        let mut cut = Facts::new(&node.at);
        cut.union = Some(Union {
            exactly_one: false,
            branches,
        });
        return Some(with_facts(node, cut));
    }
    if facts
        .conjuncts
        .keys()
        .any(|name| name != "dependentRequired")
    {
        return None;
    }
    if let Some(values) = &facts.values {
        return listed(node, values, rests);
    }
    let mut cut = facts.clone();
    cut.conjuncts = BTreeMap::new();
    if facts.allows_type(JsonType::Object) {
        members(node, &facts, rests, depth, &mut cut)?;
    }
    if facts.allows_type(JsonType::Array) {
        let through_items: Vec<Vec<String>> = rests
            .iter()
            .filter(|rest| rest[0] == "*")
            .map(|rest| rest[1..].to_vec())
            .collect();
        if rests.iter().any(|rest| is_index(&rest[0])) {
            // A pointer to one item: the cut would keep that item alone, which the items'
            // schema does not say.
            return None;
        }
        if !through_items.is_empty() {
            // Distinct items may share a cut, which `uniqueItems` would have refused.
            if facts.unique_items {
                return None;
            }
            *cut.items = cut_at(&facts.items, &through_items, depth + 1)?;
        }
    }
    Some(with_facts(node, cut))
}

/// Listed values: the cut of each one the node admits.
fn listed(node: &Node, values: &Values, rests: &[Vec<String>]) -> Option<Node> {
    let mut kept = Vec::new();
    for value in values.iter() {
        if admits(node, value).ok()? {
            kept.push(cut_value(value, rests));
        }
    }
    let mut cut = Facts::new(&node.at);
    cut.values = Some(Values::new(kept));
    Some(with_facts(node, cut))
}

/// The cut of one value: the function the node's cut is the image of.
fn cut_value(value: &Value, rests: &[Vec<String>]) -> Value {
    if rests.iter().any(Vec::is_empty) {
        return value.clone();
    }
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter_map(|(name, member)| {
                    let below = below(rests, name);
                    (!below.is_empty()).then(|| (name.clone(), cut_value(member, &below)))
                })
                .collect(),
        ),
        Value::Array(items) => {
            let through_items = below(rests, "*");
            if through_items.is_empty() {
                value.clone()
            } else {
                Value::Array(
                    items
                        .iter()
                        .map(|item| cut_value(item, &through_items))
                        .collect(),
                )
            }
        }
        _ => value.clone(),
    }
}

/// The rests that go through member `name`, below it.
fn below(rests: &[Vec<String>], name: &str) -> Vec<Vec<String>> {
    rests
        .iter()
        .filter(|rest| rest[0] == name)
        .map(|rest| rest[1..].to_vec())
        .collect()
}

fn is_index(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|byte| byte.is_ascii_digit())
}

/// The object part of the cut: the read members, each cut, and nothing else. Exact only where
/// the dropped members can always be left out or filled whatever the read ones hold.
fn members(
    node: &Node,
    facts: &Facts,
    rests: &[Vec<String>],
    depth: usize,
    cut: &mut Facts,
) -> Option<()> {
    let read: BTreeSet<&str> = rests
        .iter()
        .map(|rest| rest[0].as_str())
        .filter(|name| *name != "*")
        .collect();
    let named = |name: &str| admits(&facts.property_names, &Value::from(name)).ok();
    let dependents = facts.dependent_required()?;
    // Required outright, or by a member that always is.
    let mut always: BTreeSet<String> = facts.required.clone();
    loop {
        let more: Vec<String> = always
            .iter()
            .filter_map(|name| dependents.get(name))
            .flatten()
            .filter(|name| !always.contains(*name))
            .cloned()
            .collect();
        if more.is_empty() {
            break;
        }
        always.extend(more);
    }
    let fillable = |name: &str| -> Option<()> {
        named(name)?.then_some(())?;
        example(&facts.member(name), None).map(|_| ())
    };
    for name in always.iter().filter(|name| !read.contains(name.as_str())) {
        fillable(name)?;
    }
    for (key, needed) in &dependents {
        if always.contains(key) || !read.contains(key.as_str()) {
            // Always there (its dependents are in `always`), or dropped and left out.
            continue;
        }
        for name in needed.iter().filter(|name| !always.contains(*name)) {
            if read.contains(name.as_str()) {
                // Two read members whose presence is tied: not a product of members.
                return None;
            }
            fillable(name)?;
        }
    }
    let present = always.len() + read.iter().filter(|name| !always.contains(**name)).count();
    if facts.min_properties > always.len() as u64
        || facts
            .max_properties
            .is_some_and(|most| most < present as u64)
    {
        return None;
    }
    let mut properties = BTreeMap::new();
    for name in &read {
        let member = if named(name)? {
            cut_at(&facts.member(name), &below(rests, name), depth + 1)?
        } else {
            Node {
                at: node.at.clone(),
                kind: Kind::Nothing,
            }
        };
        properties.insert((*name).to_owned(), member);
    }
    cut.required = always
        .into_iter()
        .filter(|name| read.contains(name.as_str()))
        .collect();
    cut.properties = properties;
    cut.pattern_properties = BTreeMap::new();
    *cut.additional = Node {
        at: node.at.clone(),
        kind: Kind::Nothing,
    };
    *cut.property_names = Node::any(&node.at);
    cut.min_properties = 0;
    cut.max_properties = None;
    Some(())
}

fn with_facts(node: &Node, facts: Facts) -> Node {
    Node {
        at: node.at.clone(),
        kind: Kind::Facts(Arc::new(facts)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolgate_model::Schemas;

    fn root(schema: Value) -> Node {
        Schemas::new([("s.json".to_owned(), schema)].into_iter().collect()).root("s.json")
    }

    fn rests(pointers: &[&str]) -> Vec<Vec<String>> {
        pointers
            .iter()
            .map(|pointer| pointer.split('/').skip(1).map(str::to_owned).collect())
            .collect()
    }

    /// Every value the node admits has its cut in the cut set, and what the cut set admits
    /// and refuses is what the members read allow.
    #[test]
    fn a_cut_keeps_the_read_members_and_drops_the_rest() {
        let node = root(json!({
            "type": "object",
            "required": ["id", "name"],
            "properties": {"id": {"type": "integer"}, "name": {"type": "string", "maxLength": 3}, "note": {"type": "string"}},
            "additionalProperties": false
        }));
        let cut = cut(&node, &rests(&["/name"])).unwrap();
        for value in [
            json!({"id": 1, "name": "ab"}),
            json!({"id": 2, "name": "", "note": "x"}),
        ] {
            assert_eq!(admits(&node, &value), Ok(true));
            assert_eq!(
                admits(&cut, &cut_value(&value, &rests(&["/name"]))),
                Ok(true)
            );
        }
        assert_eq!(admits(&cut, &json!({"name": "ab"})), Ok(true));
        assert_eq!(admits(&cut, &json!({})), Ok(false), "name is required");
        assert_eq!(admits(&cut, &json!({"name": "abcd"})), Ok(false));
        assert_eq!(
            admits(&cut, &json!({"name": "a", "id": 1})),
            Ok(false),
            "id is dropped"
        );
    }

    /// A union's cut is the union of its branches' cuts: branches that differ only in dropped
    /// members cut to one set.
    #[test]
    fn branches_that_differ_beside_the_read_members_cut_to_one_set() {
        let pet = |extra: &str| json!({"type": "object", "required": ["name", extra], "properties": {"name": {"type": "string"}, extra: {"type": "integer"}}, "additionalProperties": false});
        let two = root(json!({"anyOf": [pet("legs"), pet("wings")]}));
        let one = root(pet("legs"));
        let (two, one) = (
            cut(&two, &rests(&["/name"])).unwrap(),
            cut(&one, &rests(&["/name"])).unwrap(),
        );
        for value in [json!({"name": "x"}), json!({}), json!({"name": 1})] {
            assert_eq!(admits(&two, &value), admits(&one, &value), "{value}");
        }
    }

    /// Where the read members are tied to each other or to what is dropped, or the cut of an
    /// overlapping `oneOf` would admit a value no response has, there is no cut.
    #[test]
    fn no_cut_where_it_would_not_be_exact() {
        let object = |extra: Value| {
            let mut schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
            schema
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            root(schema)
        };
        let both = rests(&["/a", "/b"]);
        for (extra, pointers) in [
            (json!({"dependentRequired": {"a": ["b"]}}), &both),
            (json!({"minProperties": 1}), &both),
            (
                json!({"if": {"required": ["b"]}, "then": {"required": ["a"]}}),
                &both,
            ),
            (
                json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
                &both,
            ),
            (
                json!({"required": ["c"], "additionalProperties": false}),
                &rests(&["/a"]),
            ),
        ] {
            assert!(cut(&object(extra.clone()), pointers).is_none(), "{extra}");
        }
        // A tie between a read member and a dropped one it can always be given is no tie.
        let tied = object(json!({"dependentRequired": {"a": ["b"]}}));
        assert!(cut(&tied, &rests(&["/a"])).is_some());
    }
}
