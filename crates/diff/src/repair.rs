//! Documents a schema admits, built by the schema's own validator: a candidate (the model's
//! example, or nothing at all) is repaired one error at a time. Each error says where and why
//! (a `required` member missing, a value of the wrong type, a string too short, a `contains`
//! unmet, a `oneOf` no branch of which matches), each suggests a few edits, and the edit that
//! leaves the document closest to valid is kept. The validator is the gate's own, so this works
//! for every keyword the gate decides with, including the ones the model leaves undecided
//! (`unevaluatedProperties`, `if`/`then`/`else`, `dependentRequired`, a pattern beside a
//! format): the model only suggests values.
//!
//! Bounded by a count of validations; a document is returned only once the validator accepts it.

use std::collections::{HashMap, HashSet};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};
use toolgate_gate::internals::shape_validator;
use toolgate_model::{
    Facts, JsonType, Kind, Node, Strings, Version, edit, example, format_examples,
    number_candidates, string_examples, strings,
};

use crate::witness::node_along;

/// Most edits one repair applies before it gives up.
const ROUNDS: usize = 48;
/// Errors looked at per round (the first ones the validator reports).
const ERRORS_PER_ROUND: usize = 3;
/// Most errors counted when a candidate is scored.
const SCORED_ERRORS: usize = 64;

/// How many validations repairs may still run: shared by every repair of one search.
pub(crate) struct Budget(usize);

impl Budget {
    pub(crate) fn new(validations: usize) -> Budget {
        Budget(validations)
    }

    fn spend(&mut self) -> bool {
        if self.0 == 0 {
            return false;
        }
        self.0 -= 1;
        true
    }

    pub(crate) fn is_spent(&self) -> bool {
        self.0 == 0
    }
}

/// What must still hold of a repaired document: the value at a pointer (`None`: absent), so
/// the repair of a mutant keeps the mutation it was made for.
pub(crate) type Kept<'a> = Option<(&'a str, Option<&'a Value>)>;

/// One shape's schema of one version, as a repair needs it: the gate's validator, which says
/// what is wrong, and the model of the same schema, which suggests values.
pub(crate) struct Repairer<'v> {
    validator: &'v Validator,
    root: Node,
}

impl<'v> Repairer<'v> {
    /// For `version`'s shape named `shape`; `None` for a shape it does not have.
    pub(crate) fn of(version: &'v Version, shape: &str) -> Option<Repairer<'v>> {
        let validator = shape_validator(&version.contract, shape)?;
        let schema = version
            .shapes()
            .into_iter()
            .find(|candidate| candidate.name == shape)?
            .schema;
        Some(Repairer {
            validator,
            root: version.schemas.root(&schema),
        })
    }

    /// The model of the shape's schema.
    pub(crate) fn root(&self) -> &Node {
        &self.root
    }

    /// Whether the shape's schema admits `document`.
    pub(crate) fn admits(&self, document: &Value) -> bool {
        self.validator.is_valid(document)
    }

    /// `document` repaired until the shape's schema admits it (see [`repaired`]).
    pub(crate) fn repair(
        &self,
        document: Value,
        kept: Kept<'_>,
        budget: &mut Budget,
    ) -> Option<Value> {
        repaired(self.validator, Some(&self.root), document, kept, budget)
    }
}

/// `document` repaired until `validator` accepts it; `root`, the model of the same schema,
/// suggests values. `None` when the budget ran out or no edit made progress.
fn repaired(
    validator: &Validator,
    root: Option<&Node>,
    document: Value,
    kept: Kept<'_>,
    budget: &mut Budget,
) -> Option<Value> {
    let holds =
        |candidate: &Value| kept.is_none_or(|(pointer, value)| candidate.pointer(pointer) == value);
    if !holds(&document) {
        return None;
    }
    // Documents the repair stood on (never stood on again, so it ends) and every candidate's
    // score (a candidate passed over once may be the best one later).
    let mut visited: HashSet<String> = HashSet::new();
    let mut scores: HashMap<String, usize> = HashMap::new();
    let mut current = document;
    visited.insert(current.to_string());
    for _ in 0..ROUNDS {
        if !budget.spend() {
            return None;
        }
        let errors: Vec<ValidationError<'_>> = validator
            .iter_errors(&current)
            .take(SCORED_ERRORS)
            .collect();
        if errors.is_empty() {
            return Some(current);
        }
        let mut best: Option<(usize, Value)> = None;
        for error in errors.iter().take(ERRORS_PER_ROUND) {
            for candidate in fixes(error, &current, root) {
                let text = candidate.to_string();
                if !holds(&candidate) || visited.contains(&text) {
                    continue;
                }
                let score = match scores.get(&text) {
                    Some(score) => *score,
                    None => {
                        if !budget.spend() {
                            return None;
                        }
                        let score = score(validator, &candidate);
                        scores.insert(text, score);
                        score
                    }
                };
                if best.as_ref().is_none_or(|(best, _)| score < *best) {
                    best = Some((score, candidate));
                }
            }
            if best.as_ref().is_some_and(|(score, _)| *score == 0) {
                break;
            }
        }
        // The closest candidate is kept even when it is no closer than the document was (a
        // value of the right type may first miss its own required members); a document stood
        // on once is never stood on again, so this ends.
        current = best?.1;
        visited.insert(current.to_string());
    }
    validator.is_valid(&current).then_some(current)
}

/// How far `document` is from valid: its errors, a union's counted by the branch closest to
/// matching.
fn score(validator: &Validator, document: &Value) -> usize {
    validator
        .iter_errors(document)
        .take(SCORED_ERRORS)
        .map(|error| weight(&error))
        .sum()
}

fn weight(error: &ValidationError<'_>) -> usize {
    match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            1 + context
                .iter()
                .map(|branch| branch.iter().map(weight).sum::<usize>())
                .min()
                .unwrap_or(0)
        }
        _ => 1,
    }
}

/// Documents that each undo `error` one way.
fn fixes(error: &ValidationError<'_>, document: &Value, root: Option<&Node>) -> Vec<Value> {
    let at = error.instance_path().as_str().to_owned();
    let node = root.and_then(|root| node_along(root.clone(), document, &at));
    let current = document.pointer(&at);
    let set = |values: Vec<Value>| -> Vec<Value> {
        values
            .into_iter()
            .filter_map(|value| edit::with_value_or_member(document, &at, value))
            .collect()
    };
    match error.kind() {
        ValidationErrorKind::Required { property } => {
            let Some(name) = property.as_str() else {
                return Vec::new();
            };
            let member = node
                .as_ref()
                .and_then(|node| node.facts())
                .map(|facts| facts.member(name).into_owned());
            let pointer = format!("{at}/{}", escape(name));
            values_for(member.as_ref(), None)
                .into_iter()
                .filter_map(|value| edit::with_value_or_member(document, &pointer, value))
                .collect()
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let mut all = document.clone();
            let mut out = Vec::new();
            for name in unexpected {
                let pointer = format!("{at}/{}", escape(name));
                all = edit::without_pointer(&all, &pointer);
                out.push(edit::without_pointer(document, &pointer));
            }
            out.insert(0, all);
            out
        }
        ValidationErrorKind::PropertyNames { error } => {
            let name = error.instance().as_str().map(str::to_owned);
            name.map(|name| {
                vec![edit::without_pointer(
                    document,
                    &format!("{at}/{}", escape(&name)),
                )]
            })
            .unwrap_or_default()
        }
        ValidationErrorKind::Constant { expected_value } => set(vec![(**expected_value).clone()]),
        ValidationErrorKind::Enum { options } => set(options
            .as_array()
            .map(|options| options.iter().take(16).cloned().collect())
            .unwrap_or_default()),
        ValidationErrorKind::Type { kind } => {
            let types: Vec<&str> = match kind {
                TypeKind::Single(kind) => vec![kind.as_str()],
                TypeKind::Multiple(kinds) => kinds.iter().map(|kind| kind.as_str()).collect(),
            };
            let mut values: Vec<Value> = values_for(node.as_ref(), current)
                .into_iter()
                .filter(|value| types.iter().any(|kind| is_type(value, kind)))
                .collect();
            values.extend(types.iter().filter_map(|kind| plain_of(kind)));
            set(values)
        }
        ValidationErrorKind::MinLength { limit } => {
            let text = current.and_then(Value::as_str).unwrap_or_default();
            let missing = usize::try_from(*limit)
                .unwrap_or(usize::MAX)
                .saturating_sub(text.chars().count())
                .min(1 << 16);
            let mut values = vec![Value::from(format!("{text}{}", "a".repeat(missing)))];
            values.extend(strings_for(node.as_ref()));
            set(values)
        }
        ValidationErrorKind::MaxLength { limit } => {
            let text = current.and_then(Value::as_str).unwrap_or_default();
            let kept: String = text
                .chars()
                .take(usize::try_from(*limit).unwrap_or(usize::MAX))
                .collect();
            let mut values = vec![Value::from(kept)];
            values.extend(strings_for(node.as_ref()));
            set(values)
        }
        ValidationErrorKind::Pattern { pattern } => {
            let mut values = strings_for(node.as_ref());
            let alone = Strings {
                patterns: vec![pattern.clone()],
                ..Strings::default()
            };
            if let Ok(Some(text)) = strings::example(&alone) {
                values.push(Value::from(text));
            }
            set(values)
        }
        ValidationErrorKind::Format { format } => {
            let lengths = node
                .as_ref()
                .and_then(|node| node.facts())
                .map(|facts| facts.strings.clone())
                .unwrap_or_default();
            let mut values: Vec<Value> = format_examples(format, &lengths)
                .into_iter()
                .map(Value::from)
                .collect();
            values.extend(strings_for(node.as_ref()));
            set(values)
        }
        ValidationErrorKind::Minimum { limit } | ValidationErrorKind::Maximum { limit } => {
            let mut values = vec![limit.clone()];
            values.extend(numbers_for(node.as_ref()));
            set(values)
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => set(offsets(limit, &[1.0, 0.5])
            .chain(numbers_for(node.as_ref()))
            .collect()),
        ValidationErrorKind::ExclusiveMaximum { limit } => set(offsets(limit, &[-1.0, -0.5])
            .chain(numbers_for(node.as_ref()))
            .collect()),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            let here = current.and_then(Value::as_f64).unwrap_or(0.0);
            let mut values = Vec::new();
            for factor in [
                (here / multiple_of).ceil(),
                (here / multiple_of).floor(),
                0.0,
                1.0,
            ] {
                values.extend(number(factor * multiple_of));
            }
            set(values)
        }
        ValidationErrorKind::MinItems { limit } => {
            let items = current
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let wanted = usize::try_from(*limit).unwrap_or(usize::MAX).min(1 << 12);
            item_values(node.as_ref(), &items)
                .into_iter()
                .filter_map(|item| {
                    let mut grown = items.clone();
                    grown.resize(wanted.max(items.len()), item);
                    edit::with_value(document, &at, Value::Array(grown))
                })
                .collect()
        }
        ValidationErrorKind::MaxItems { limit } => truncated(
            document,
            &at,
            current,
            usize::try_from(*limit).unwrap_or(usize::MAX),
        ),
        ValidationErrorKind::AdditionalItems { limit } => truncated(document, &at, current, *limit),
        ValidationErrorKind::UnevaluatedItems { .. } => {
            let length = current.and_then(Value::as_array).map_or(0, Vec::len);
            (0..length)
                .rev()
                .flat_map(|index| {
                    let mut shorter = truncated(document, &at, current, index);
                    let mut without = document.clone();
                    if let Some(Value::Array(items)) = without.pointer_mut(&at) {
                        items.remove(index);
                        shorter.push(without);
                    }
                    shorter
                })
                .take(8)
                .collect()
        }
        ValidationErrorKind::UniqueItems => {
            let items = current
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut distinct: Vec<Value> = Vec::new();
            for item in items {
                if !distinct.contains(&item) {
                    distinct.push(item);
                }
            }
            set(vec![Value::Array(distinct)])
        }
        ValidationErrorKind::Contains => {
            let items = current
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            // What `contains` names outright first (the model keeps it as written), then what
            // the items may be.
            contained(node.as_ref())
                .into_iter()
                .chain(item_values(node.as_ref(), &items))
                .chain(plain_values())
                .filter_map(|item| {
                    let mut grown = items.clone();
                    grown.push(item);
                    edit::with_value(document, &at, Value::Array(grown))
                })
                .collect()
        }
        ValidationErrorKind::MinProperties { .. } => {
            let present: Vec<String> = current
                .and_then(Value::as_object)
                .map(|members| members.keys().cloned().collect())
                .unwrap_or_default();
            let facts = node.as_ref().and_then(|node| node.facts());
            let mut out: Vec<Value> = Vec::new();
            if let Some(facts) = facts {
                for (name, member) in &facts.properties {
                    if present.contains(name) {
                        continue;
                    }
                    let pointer = format!("{at}/{}", escape(name));
                    out.extend(
                        values_for(Some(member), None)
                            .into_iter()
                            .take(2)
                            .filter_map(|value| {
                                edit::with_value_or_member(document, &pointer, value)
                            }),
                    );
                }
            }
            for name in ["a", "b", "c", "toolgate_member"] {
                if !present.iter().any(|present| present == name) {
                    let pointer = format!("{at}/{name}");
                    out.extend(
                        plain_values().into_iter().take(4).filter_map(|value| {
                            edit::with_value_or_member(document, &pointer, value)
                        }),
                    );
                }
            }
            out
        }
        ValidationErrorKind::MaxProperties { .. } => current
            .and_then(Value::as_object)
            .map(|members| {
                members
                    .keys()
                    .map(|name| edit::without_pointer(document, &format!("{at}/{}", escape(name))))
                    .collect()
            })
            .unwrap_or_default(),
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            // The branches closest to matching first; each repaired at its first error.
            let mut branches: Vec<&Vec<ValidationError<'static>>> = context.iter().collect();
            branches.sort_by_key(|branch| branch.iter().map(weight).sum::<usize>());
            let mut out: Vec<Value> = branches
                .into_iter()
                .filter_map(|branch| branch.first())
                .flat_map(|inner| fixes(inner, document, root))
                .collect();
            out.extend(anywhere(document, &at, node.as_ref(), current));
            out
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            // More than one branch takes it: each branch's pinned members (a const or enum,
            // such as an outcome) set to that branch's value, so that branch alone does.
            let mut out = Vec::new();
            let branches = node
                .as_ref()
                .and_then(|node| node.facts())
                .and_then(|facts| facts.union.as_ref())
                .map(|union| union.branches.clone())
                .unwrap_or_default();
            for branch in &branches {
                let Some(facts) = branch.facts() else {
                    continue;
                };
                let mut pinned = document.clone();
                for (name, member) in &facts.properties {
                    let Some(value) = member
                        .facts()
                        .and_then(|facts| facts.values.as_ref())
                        .and_then(|values| values.into_iter().next())
                    else {
                        continue;
                    };
                    let pointer = format!("{at}/{}", escape(name));
                    if let Some(changed) =
                        edit::with_value_or_member(&pinned, &pointer, value.clone())
                    {
                        pinned = changed;
                    }
                }
                out.push(pinned);
            }
            out.extend(anywhere(document, &at, node.as_ref(), current));
            out
        }
        ValidationErrorKind::FalseSchema if !at.is_empty() => {
            vec![edit::without_pointer(document, &at)]
        }
        _ => anywhere(document, &at, node.as_ref(), current),
    }
}

/// For an error nothing more specific undoes: the value replaced by what the model suggests and
/// by a value of each type, or removed.
fn anywhere(
    document: &Value,
    at: &str,
    node: Option<&Node>,
    current: Option<&Value>,
) -> Vec<Value> {
    let mut out: Vec<Value> = values_for(node, current)
        .into_iter()
        .chain(plain_values())
        .filter(|value| Some(value) != current)
        .filter_map(|value| edit::with_value_or_member(document, at, value))
        .collect();
    if !at.is_empty() {
        out.push(edit::without_pointer(document, at));
    }
    out
}

fn truncated(document: &Value, at: &str, current: Option<&Value>, length: usize) -> Vec<Value> {
    let Some(items) = current.and_then(Value::as_array) else {
        return Vec::new();
    };
    edit::with_value(
        document,
        at,
        Value::Array(items.iter().take(length).cloned().collect()),
    )
    .into_iter()
    .collect()
}

/// Values worth trying where `node` applies: its model's example (close to `hint`), its enum,
/// its bounds, its strings.
fn values_for(node: Option<&Node>, hint: Option<&Value>) -> Vec<Value> {
    let mut out = Vec::new();
    let Some(node) = node else {
        out.extend(plain_values());
        return out;
    };
    out.extend(example(node, hint));
    match &node.kind {
        Kind::Facts(facts) => {
            if let Some(values) = &facts.values {
                out.extend(values.iter().take(8).cloned());
            }
            out.extend(typed_values(facts));
        }
        Kind::Any => out.extend(plain_values()),
        Kind::Nothing => {}
        Kind::Unknown { .. } => out.extend(plain_values()),
    }
    if out.len() < 4 {
        out.extend(plain_values());
    }
    out
}

/// A value of each type the facts allow, built from their bounds.
fn typed_values(facts: &Facts) -> Vec<Value> {
    let mut out = Vec::new();
    let types: Vec<JsonType> = match &facts.types {
        Some(types) => types.iter().copied().collect(),
        None => return out,
    };
    for kind in types {
        match kind {
            JsonType::String => {
                out.extend(string_examples(facts, None).into_iter().map(Value::from))
            }
            JsonType::Integer | JsonType::Number => {
                out.extend(number_candidates(facts, kind).into_iter().take(4))
            }
            JsonType::Object => out.push(Value::Object(Map::new())),
            JsonType::Array => out.push(Value::Array(Vec::new())),
            JsonType::Boolean => out.push(Value::Bool(true)),
            JsonType::Null => out.push(Value::Null),
        }
    }
    out
}

fn strings_for(node: Option<&Node>) -> Vec<Value> {
    node.and_then(Node::facts)
        .map(|facts| {
            string_examples(facts, None)
                .into_iter()
                .map(Value::from)
                .collect()
        })
        .unwrap_or_default()
}

fn numbers_for(node: Option<&Node>) -> Vec<Value> {
    node.and_then(Node::facts)
        .map(|facts| {
            let mut out = number_candidates(facts, JsonType::Integer);
            out.extend(number_candidates(facts, JsonType::Number));
            out
        })
        .unwrap_or_default()
}

/// Items worth adding to `items`: its own last item, and what the model says an item is.
/// The values a kept `contains` lists outright (`const`, `enum`).
fn contained(node: Option<&Node>) -> Vec<Value> {
    let Some(contains) = node
        .and_then(Node::facts)
        .and_then(|facts| facts.conjuncts.get("contains"))
    else {
        return Vec::new();
    };
    let schema = &contains.value;
    match (
        schema.get("const"),
        schema.get("enum").and_then(Value::as_array),
    ) {
        (Some(value), _) => vec![value.clone()],
        (None, Some(values)) => values.iter().take(6).cloned().collect(),
        (None, None) => Vec::new(),
    }
}

fn item_values(node: Option<&Node>, items: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = items.last().cloned().into_iter().collect();
    if let Some(facts) = node.and_then(Node::facts) {
        out.extend(values_for(Some(&facts.items), None).into_iter().take(6));
    } else {
        out.extend(plain_values().into_iter().take(6));
    }
    out
}

fn offsets(limit: &Value, by: &[f64]) -> impl Iterator<Item = Value> {
    let limit = limit.as_f64();
    by.iter()
        .filter_map(move |offset| limit.and_then(|limit| number(limit + offset)))
        .collect::<Vec<_>>()
        .into_iter()
}

/// `value` as JSON, an integer where it is one.
fn number(value: f64) -> Option<Value> {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        return Some(Value::from(value as i64));
    }
    serde_json::Number::from_f64(value).map(Value::Number)
}

fn is_type(value: &Value, kind: &str) -> bool {
    match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_f64().is_some_and(|number| number.fract() == 0.0),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

fn plain_of(kind: &str) -> Option<Value> {
    Some(match kind {
        "null" => Value::Null,
        "boolean" => Value::Bool(true),
        "integer" | "number" => Value::from(0),
        "string" => Value::from("x"),
        "array" => Value::Array(Vec::new()),
        "object" => Value::Object(Map::new()),
        _ => return None,
    })
}

/// A value of every type, for a place the model knows nothing of.
fn plain_values() -> Vec<Value> {
    vec![
        Value::from("x"),
        Value::from(0),
        Value::from(1),
        Value::Bool(true),
        Value::Null,
        Value::Object(Map::new()),
        Value::Array(Vec::new()),
        Value::from(0.5),
    ]
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_gate::internals::standalone_validator;

    use super::{Budget, repaired};

    /// Keywords the model leaves undecided are still met: the validator says what is wrong.
    #[test]
    fn every_keyword_the_gate_decides_with_is_repaired_from_nothing() {
        let schemas = [
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "minLength": 3}}, "dependentRequired": {"a": ["b"]}}),
            json!({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 7, "exclusiveMinimum": 10}}, "required": ["n"], "unevaluatedProperties": false}),
            json!({"type": "array", "contains": {"const": "x"}, "minItems": 2, "uniqueItems": true}),
            json!({"type": "object", "required": ["kind"], "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["extra"]}, "properties": {"kind": {"enum": ["a"]}}}),
            json!({"type": "object", "required": ["at"], "properties": {"at": {"type": "string", "format": "date-time", "pattern": "Z$"}}}),
            json!({"oneOf": [{"type": "object", "properties": {"k": {"const": 1}}}, {"type": "object", "properties": {"k": {"const": 2}}}], "required": ["k"]}),
            json!({"type": "object", "propertyNames": {"maxLength": 2}, "minProperties": 1}),
        ];
        for schema in schemas {
            let validator = standalone_validator(&schema).unwrap();
            let mut budget = Budget::new(2_000);
            let document = repaired(&validator, None, json!({}), None, &mut budget)
                .unwrap_or_else(|| panic!("no document repaired for {schema}"));
            assert!(validator.is_valid(&document), "{schema}: {document}");
        }
    }

    /// The repair of a mutant never undoes the mutation it was made for.
    #[test]
    fn a_kept_place_is_never_changed() {
        let schema = json!({"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}});
        let validator = standalone_validator(&schema).unwrap();
        let kept = json!("not a number");
        let mut budget = Budget::new(2_000);
        let found = repaired(
            &validator,
            None,
            json!({"a": "not a number"}),
            Some(("/a", Some(&kept))),
            &mut budget,
        );
        assert_eq!(found, None);
        let kept = json!(5);
        let found = repaired(
            &validator,
            None,
            json!({"a": 5}),
            Some(("/a", Some(&kept))),
            &mut budget,
        );
        assert_eq!(found.unwrap()["a"], json!(5));
    }
}
