//! What the gate can admit of a shape, as a schema: the shape's schema with correlation and
//! the rules' fields intersected in (the fields held where projection refuses a success
//! without them), then the objects whose required members cannot all be present taken out.

use super::*;

/// What the gate can admit of `shape` in `version`, as the model reads it: the shape's schema,
/// and what every decision checks after it: correlation and an outcome the contract names (on
/// every response), a failure code the agent can be shown (on a failure), the rules' fields and
/// the fields not marked optional (on a success) where `fields_held` says so. A value the schema admits and the gate always refuses (a response that is not an
/// object, a tool name the contract is not for, a failure code the agent has no word for) is
/// then not counted as admitted. Pointers through a member named
/// like an array index are left out, as the document there may be an array.
pub(super) fn admitted_root(version: &Version, shape: &ShapeDoc, fields_held: bool) -> Node {
    let root = version.schemas.root(&shape.schema);
    // A recursion back to the file's root stands for the schema alone: the comparison assumes
    // that pair holds where the recursion closes, which is sound only where the schema alone is
    // also expanded below the root (a `$ref` to it followed) and compared there.
    let (closes, expanded) = root_recursion(&root, &shape.schema);
    if closes && !expanded {
        return root;
    }
    let tool = version.contract.tool();
    let strings = |values: &[&str]| values.iter().map(|value| Value::from(*value)).collect();
    let mut held = vec![
        (shape.tool.as_deref(), Some(strings(&[tool]))),
        (shape.request_id.as_deref(), None),
    ];
    // The outcome is one of the two values the contract names, on every response.
    if let (Some((pointer, success)), Some(failure)) = (&shape.outcome, &shape.failure) {
        held.push((Some(pointer), Some(vec![success.clone(), failure.clone()])));
    }
    let checked = held
        .into_iter()
        .filter_map(|(pointer, values)| Some((pointer?, values)))
        .fold(root, |root, (pointer, values)| {
            match held_at(&root.at, pointer, true, None, values) {
                Some(held) => everywhere(&root, &held),
                None => root,
            }
        });
    // A failure's code is one the agent can be shown.
    let coded = match (&shape.error_code, &shape.failure) {
        (Some(pointer), Some(failure)) => {
            let codes = ErrorCode::ALL.map(ErrorCode::as_str);
            match held_at(&checked.at, pointer, true, None, Some(strings(&codes))) {
                Some(code) => on_outcome(checked, shape, failure, |node| {
                    toolgate_model::intersect(node, &code)
                }),
                None => checked,
            }
        }
        _ => checked,
    };
    toolgate_model::without_impossible_objects(&kept_by_rules(version, shape, coded, fields_held))
}

/// `root` with `held` intersected in, and into each branch of its union too (an envelope's
/// success and failure), where the comparison reads them: on the values `held` lets through,
/// a branch matches exactly when it does with `held` beside it.
pub(super) fn everywhere(root: &Node, held: &Node) -> Node {
    let mut admitted = toolgate_model::intersect(root, held);
    if let Kind::Facts(facts) = &mut admitted.kind
        && let Some(union) = &mut std::sync::Arc::make_mut(facts).union
    {
        for branch in &mut union.branches {
            *branch = toolgate_model::intersect(branch, held);
        }
    }
    admitted
}

/// `root` with `keep` applied to the responses whose outcome is `value`: the root where it
/// pins the outcome member to that value, else each union branch that does (the rest left as
/// they are; an outcome the model cannot find pinned leaves `root` unchanged).
pub(super) fn on_outcome(
    root: Node,
    shape: &ShapeDoc,
    value: &Value,
    keep: impl Fn(&Node) -> Node,
) -> Node {
    let Some((pointer, _)) = &shape.outcome else {
        return root;
    };
    let Some(member) = pointer
        .strip_prefix('/')
        .filter(|member| !member.contains('/') && !member.contains('~'))
    else {
        return root;
    };
    let pins = |node: &Node| {
        node.facts().is_some_and(|facts| {
            facts.required.contains(member)
                && facts.properties.get(member).is_some_and(|outcome| {
                    outcome
                        .facts()
                        .and_then(|facts| facts.values.as_ref())
                        .is_some_and(|values| {
                            values.len() == 1 && toolgate_model::same_value(&values[0], value)
                        })
                })
        })
    };
    if pins(&root) {
        return keep(&root);
    }
    let mut root = root;
    if let Kind::Facts(facts) = &mut root.kind
        && let Some(union) = &mut std::sync::Arc::make_mut(facts).union
    {
        for branch in &mut union.branches {
            if pins(branch) {
                *branch = keep(branch);
            }
        }
    }
    root
}

/// `root` where a success must keep every rule on a field the shape declares: the field
/// present (a rule on an absent field cannot hold), and a string where the rule is freshness
/// (an RFC 3339 timestamp); and, where `fields_held`, hold every field not marked optional. A success is every response of a shape without an outcome, else a
/// union branch (or the root) that pins the outcome member to the success value.
pub(super) fn kept_by_rules(
    version: &Version,
    shape: &ShapeDoc,
    root: Node,
    fields_held: bool,
) -> Node {
    let at = root.at.clone();
    // A freshness field holds an RFC 3339 timestamp, as `date-time` reads one (the gate parses
    // it so): written only where the schema's own format there admits no timestamp, so that
    // the two leave no string, and never where it would narrow what the gate admits.
    // A field not marked optional is held too: projection refuses a success without it.
    let kept = |node: &Node| -> Vec<Node> {
        let rules = version.rules();
        let ruled = rules.iter().filter_map(|rule| {
            let (pointer, _) = shape.fields.get(rule.field())?;
            let timestamp = rule.kind == "freshness";
            let format = format_at(node, pointer)
                .filter(|format| timestamp && toolgate_model::disjoint_formats("date-time", format))
                .map(|_| "date-time");
            held_at(&at, pointer, timestamp, format, None)
        });
        let projected = shape
            .fields
            .values()
            .filter(|(_, optional)| fields_held && !optional)
            .filter_map(|(pointer, _)| held_at(&at, pointer, false, None, None));
        ruled.chain(projected).collect()
    };
    let keep = |node: &Node| {
        kept(node).iter().fold(node.clone(), |node, rule| {
            toolgate_model::intersect(&node, rule)
        })
    };
    match &shape.outcome {
        Some((_, success)) => on_outcome(root, shape, success, keep),
        None => keep(&root),
    }
}

/// Whether a recursion in `root` closes at the root of `file`, and whether the root's schema is
/// expanded somewhere below it (a `$ref` to it followed: a node written at the root's place).
pub(super) fn root_recursion(root: &Node, file: &str) -> (bool, bool) {
    let target = format!("{file}#");
    let (mut closes, mut expanded) = (false, false);
    let mut pending: Vec<&Node> = match root.facts() {
        Some(facts) => children(facts),
        None => Vec::new(),
    };
    while let Some(node) = pending.pop() {
        closes |= node
            .recursion_closed()
            .is_some_and(|(closing, _)| closing == target);
        if let Some(facts) = node.facts() {
            expanded |= node.at.file == file && node.at.pointer.is_empty();
            pending.extend(children(facts));
        }
    }
    (closes, expanded)
}

/// The nodes one node's facts hold.
pub(super) fn children(facts: &toolgate_model::Facts) -> Vec<&Node> {
    let mut nodes: Vec<&Node> = facts.properties.values().collect();
    nodes.extend(facts.pattern_properties.values());
    nodes.extend([&*facts.additional, &*facts.property_names, &*facts.items]);
    if let Some(union) = &facts.union {
        nodes.extend(&union.branches);
    }
    nodes
}

/// The schema of a document holding a value at `pointer`: a string where `string` says so,
/// `value` itself when given.
pub(super) fn held_at(
    at: &toolgate_model::Location,
    pointer: &str,
    string: bool,
    format: Option<&str>,
    values: Option<Vec<Value>>,
) -> Option<Node> {
    use std::sync::Arc;
    use toolgate_model::{Facts, JsonType, Values};
    let tokens: Vec<String> = pointer
        .strip_prefix('/')?
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    if tokens.iter().any(|token| {
        token == "-" || (!token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()))
    }) {
        return None;
    }
    let mut leaf = Facts::new(at);
    if string {
        leaf.types = Some(BTreeSet::from([JsonType::String]));
    }
    leaf.format = format.map(str::to_owned);
    leaf.values = values.map(Values::new);
    let mut node = Node {
        at: at.clone(),
        kind: Kind::Facts(Arc::new(leaf)),
    };
    for token in tokens.into_iter().rev() {
        let mut object = Facts::new(at);
        object.types = Some(BTreeSet::from([JsonType::Object]));
        object.required.insert(token.clone());
        object.properties.insert(token, node);
        node = Node {
            at: at.clone(),
            kind: Kind::Facts(Arc::new(object)),
        };
    }
    Some(node)
}

/// The `format` `node` declares at `pointer`, read through `properties` alone.
pub(super) fn format_at(node: &Node, pointer: &str) -> Option<String> {
    let mut node = node;
    for token in pointer.strip_prefix('/')?.split('/') {
        let name = token.replace("~1", "/").replace("~0", "~");
        node = node.facts()?.properties.get(&name)?;
    }
    node.facts()?.format.clone()
}
