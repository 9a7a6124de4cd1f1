//! Binding rules from the path parameters a request names: a promised field that answers for the
//! resource the path asked about (`GET /pulls/{pull_number}` and the response's `number`) must
//! equal it, so an answer about another resource is refused. The request file's context is set
//! to the value the examples hold, and a near-miss proves the rule: the first example answering
//! for another resource.

use super::emit::{Expectation, sidecar};
use super::examples::validator;
use super::names::unique_case;
use super::*;
use toolgate_model::edit::with_value;

/// The binding rules `fields` admit for the path parameters in `context` (their order in
/// `upstream`'s path): a field named as a parameter, or the path's last parameter ending in the
/// field's name (`pull_number` and `number`, `user_id` and `id`), whose value every admitted
/// example agrees on and of the parameter's type. The context takes the examples' value; what
/// could not be bound is said in `todo`.
pub(super) fn bindings(
    fields: &[Field],
    admitted: &[(String, Value)],
    upstream: Option<&str>,
    context: &mut Map<String, Value>,
    todo: &mut Vec<String>,
) -> Vec<Binding> {
    let order = path_order(upstream.unwrap_or(""));
    let mut found: Vec<Binding> = Vec::new();
    for (position, parameter) in order.iter().enumerate() {
        let Some(declared) = context.get(parameter).cloned() else {
            continue;
        };
        let last = position + 1 == order.len();
        let Some(field) = fields
            .iter()
            .filter(|field| field.each.is_none() && !field.optional)
            .filter(|field| !found.iter().any(|binding| binding.field == field.name))
            .find(|field| names_bind(parameter, field, last))
        else {
            continue;
        };
        let values: BTreeSet<String> = admitted
            .iter()
            .filter_map(|(_, example)| example.pointer(&field.from))
            .map(Value::to_string)
            .collect();
        let Some(value) = admitted
            .iter()
            .find_map(|(_, example)| example.pointer(&field.from))
        else {
            continue;
        };
        let same_kind = std::mem::discriminant(value) == std::mem::discriminant(&declared);
        if values.len() != 1 || !same_kind || !(value.is_string() || value.is_number()) {
            todo.push(format!(
                "not bound: field `{}` ({}) looks like the path parameter `{parameter}`, but {}; bind it with a `binding:` rule and a request file whose context holds the value, if it answers for what the path names",
                field.name,
                field.from,
                if values.len() != 1 {
                    "the examples hold different values there".to_owned()
                } else {
                    format!("the description types the parameter {declared} and the examples hold {value}")
                }
            ));
            continue;
        }
        context.insert(parameter.clone(), value.clone());
        found.push(Binding {
            field: field.name.clone(),
            context: parameter.clone(),
        });
    }
    found
}

/// The path parameters `upstream` (`GET https://…/{owner}/{repo}/pulls/{pull_number}`) names,
/// in order.
fn path_order(upstream: &str) -> Vec<String> {
    upstream
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
        .collect()
}

/// Whether `field` answers for path parameter `parameter`: the same name (ignoring case and
/// separators, as the field's own name or its member's), or, for the path's last parameter, a
/// name that ends in the member's (`pull_number` and `number`).
fn names_bind(parameter: &str, field: &Field, last: bool) -> bool {
    let plain = |name: &str| -> String {
        name.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|ch| ch.to_ascii_lowercase())
            .collect()
    };
    let member = field
        .from
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .replace("~1", "/")
        .replace("~0", "~");
    let (parameter, member, name) = (plain(parameter), plain(&member), plain(&field.name));
    !member.is_empty()
        && (parameter == member
            || parameter == name
            || (last && parameter.len() > member.len() && parameter.ends_with(&member)))
}

/// The near-miss that proves each binding: the first admitted example answering for another
/// resource (the bound value changed, the schema still admitting it), refused by the rule.
pub(super) fn binding_near_misses(
    bindings: &[Binding],
    fields: &[Field],
    admitted: &[(String, Value)],
    schema: &Value,
    taken: &mut BTreeSet<String>,
) -> Result<Vec<Fixture>, String> {
    let Some((name, example)) = admitted.first() else {
        return Ok(Vec::new());
    };
    let Ok(validator) = validator(schema) else {
        return Ok(Vec::new());
    };
    let mut fixtures = Vec::new();
    for binding in bindings {
        let Some(field) = fields.iter().find(|field| field.name == binding.field) else {
            continue;
        };
        let Some(broken) = example
            .pointer(&field.from)
            .into_iter()
            .flat_map(others)
            .filter_map(|other| with_value(example, &field.from, other))
            .find(|broken| validator.is_valid(broken))
        else {
            continue;
        };
        let rule = format!("{}_binding", binding.field);
        fixtures.push(Fixture {
            class: "near-miss",
            case: unique_case(&format!("another_{}", binding.context), taken),
            body: render::json(&broken),
            sidecar: sidecar(
                &format!(
                    "The example `{name}` answering for another {} than the request names: field `{}` differs from the context.",
                    binding.context, binding.field
                ),
                None,
                Expectation::rejected("semantic", Some(&rule), "INVALID_RESPONSE", false),
            )
            .rendered()?,
        });
    }
    Ok(fixtures)
}

/// Values like `value` that differ from it, likeliest first to meet the same schema: the last
/// digit or letter changed in kind, then the number one more or less.
fn others(value: &Value) -> Vec<Value> {
    match value {
        Value::Number(number) => number
            .as_i64()
            .map(|number| vec![Value::from(number + 1), Value::from(number - 1)])
            .or_else(|| number.as_f64().map(|number| vec![json!(number + 1.0)]))
            .unwrap_or_default(),
        Value::String(text) => {
            let mut found = Vec::new();
            if let Some((at, ch)) = text
                .char_indices()
                .rev()
                .find(|(_, ch)| ch.is_ascii_alphanumeric())
            {
                for replacement in [next_of_kind(ch), next_of_kind(next_of_kind(ch))] {
                    let mut changed = text.clone();
                    changed.replace_range(at..at + 1, &replacement.to_string());
                    found.push(Value::from(changed));
                }
            }
            found.push(Value::from(format!("{text}-other")));
            found
        }
        _ => Vec::new(),
    }
}

/// The next character of the same kind (digit, lowercase, uppercase), wrapping around.
fn next_of_kind(ch: char) -> char {
    let (first, count) = match ch {
        '0'..='9' => (b'0', 10),
        'a'..='z' => (b'a', 26),
        _ => (b'A', 26),
    };
    (first + (ch as u8 - first + 1) % count) as char
}

/// Puts first among the fields chosen for the agent the response's own members that answer for
/// a path parameter (`number` for `{pull_number}`), where the schema pins them: the agent is told
/// what it asked about, and a binding rule can then hold the answer to it.
pub(super) fn promote_bound_members(
    schema: &Value,
    fields: &mut Vec<Field>,
    upstream: Option<&str>,
) {
    use super::reading::{object_branch, pinned, properties, required_names, resolve};
    let order = path_order(upstream.unwrap_or(""));
    let (root, in_union) = object_branch(schema, resolve(schema, schema));
    if root.get("properties").is_none() {
        return;
    }
    let required = required_names(schema, root);
    let mut promoted = Vec::new();
    for (position, parameter) in order.iter().enumerate() {
        let last = position + 1 == order.len();
        for (name, member) in properties(schema, root) {
            let field = Field {
                name: names::field_name(&name),
                from: format!("/{}", crate::convert::escape(&name)),
                optional: !required.contains(&name) || in_union,
                each: None,
            };
            let usable = !field.optional
                && pinned(schema, resolve(schema, member))
                && !names::is_secret(&name, resolve(schema, member));
            if usable && names_bind(parameter, &field, last) {
                fields.retain(|known| known.from != field.from && known.name != field.name);
                promoted.push(field);
                break;
            }
        }
    }
    if !promoted.is_empty() {
        fields.truncate(MOST_FIELDS.saturating_sub(promoted.len()));
        promoted.append(fields);
        *fields = promoted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, from: &str) -> Field {
        Field {
            name: name.to_owned(),
            from: from.to_owned(),
            optional: false,
            each: None,
        }
    }

    #[test]
    fn the_paths_last_parameter_binds_the_member_its_name_ends_in() {
        let fields = [field("number", "/number"), field("state", "/state")];
        let admitted = vec![("ex".to_owned(), json!({"number": 1347, "state": "open"}))];
        let mut context = Map::new();
        context.insert("owner".to_owned(), json!("example-owner"));
        context.insert("pull_number".to_owned(), json!(1));
        let mut todo = Vec::new();
        let upstream = "GET https://api.github.com/repos/{owner}/{repo}/pulls/{pull_number}";
        let found = bindings(&fields, &admitted, Some(upstream), &mut context, &mut todo);
        assert_eq!(
            found,
            [Binding {
                field: "number".to_owned(),
                context: "pull_number".to_owned()
            }]
        );
        assert_eq!(context["pull_number"], 1347);
        assert!(todo.is_empty(), "{todo:?}");
        // Not the last parameter: `owner` does not end in any member here, nor would `id` bind
        // an earlier `project_id`.
        assert!(!names_bind("project_id", &field("id", "/id"), false));
        assert!(names_bind(
            "projectId",
            &field("project_id", "/project_id"),
            false
        ));
        // Another type than the parameter's: said, not bound.
        let admitted = vec![("ex".to_owned(), json!({"number": "1347", "state": "open"}))];
        let found = bindings(&fields, &admitted, Some(upstream), &mut context, &mut todo);
        assert!(found.is_empty());
        assert!(todo[0].contains("not bound: field `number`"), "{todo:?}");
    }

    #[test]
    fn another_value_is_one_the_schema_still_admits() {
        assert_eq!(
            others(&json!("run_8f3kQ2LmZx9T"))[0],
            json!("run_8f3kQ2LmZx9U")
        );
        assert_eq!(others(&json!("a9"))[0], json!("a0"));
        assert_eq!(others(&json!(41))[0], json!(42));
    }
}
