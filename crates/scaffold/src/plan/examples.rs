//! The examples against the schema: each one the schema refuses repaired where the refusal is
//! the scaffold's own assumption or an upstream addition (else set aside with its reason), what
//! the examples show that the schema does not say (formats), and the fixtures' bytes.

use super::reading::{locate, locate_all};
use super::*;

/// A response `schema` admits, built by the contract model (its bounds, patterns, enums and
/// required members), and checked by the validator the gate compiles: `None` when the model
/// cannot build one.
pub(super) fn synthesized_example(schema: &Value) -> Option<Value> {
    let root = toolgate_model::Schemas::standalone(SCHEMA_FILE, schema);
    let example = toolgate_model::example(&root, None)?;
    validator(schema)
        .ok()?
        .is_valid(&example)
        .then_some(example)
}

/// A compiled validator for `schema`, as the gate compiles contract schemas.
pub(super) fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    toolgate_gate::internals::standalone_validator(schema)
}

/// Makes `schema` admit `example` where it refuses it for a reason the scaffold owns: a member
/// the description does not declare (the upstream adds members: tolerated there, with the
/// reason), a bound the scaffold assumed, a `null` the description forgot. Anything else is the
/// description's own disagreement with its example: `Err` says what.
/// A real response (`sample`: its name, given with `--sample`) outranks the description: where
/// the description's own claim refuses it (a type, a format, an enum, a required member, a
/// bound), the claim is corrected to admit it, each correction an assumption that names the
/// sample.
pub(super) fn repair(
    schema: &mut Value,
    example: &Value,
    assumptions: &mut Vec<Assumption>,
    tolerated: &mut Vec<(String, String)>,
    sample: Option<&str>,
) -> Result<(), String> {
    for _ in 0..64 {
        let validator = validator(schema)?;
        let Some(error) = validator.iter_errors(example).next() else {
            return Ok(());
        };
        let instance = error.instance_path().to_string();
        let keyword = error
            .absolute_keyword_location()
            .and_then(|uri| uri.fragment().map(|fragment| fragment.as_str().to_owned()))
            .unwrap_or_else(|| error.schema_path().to_string())
            .replace("%24", "$")
            .replace("%25", "%");
        let (owner, name) = keyword.rsplit_once('/').unwrap_or(("", ""));
        let owner = owner.to_owned();
        let described = error.to_string();
        let changed = match error.kind() {
            ValidationErrorKind::UnevaluatedProperties { unexpected }
            | ValidationErrorKind::AdditionalProperties { unexpected }
                if !has_hidden(&instance) =>
            {
                let place = toolgate_repo::text::every_item(&instance);
                let members = unexpected.join(", ");
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove(name);
                }
                if !tolerated.iter().any(|(at, _)| *at == place) {
                    tolerated.push((
                        place.clone(),
                        format!("the upstream's own example has members the description does not declare here ({members})"),
                    ));
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: format!("open: tolerated at {place} (the example carries {members})"),
                });
                true
            }
            ValidationErrorKind::MaxLength { .. }
            | ValidationErrorKind::MaxItems { .. }
            | ValidationErrorKind::MaxProperties { .. } => {
                let seen = match example.pointer(&instance) {
                    Some(Value::String(text)) => text.chars().count(),
                    Some(Value::Array(items)) => items.len(),
                    Some(Value::Object(members)) => members.len(),
                    _ => 0,
                } as u64;
                let bound = seen * 2;
                let place = schema.pointer_mut(&owner).and_then(Value::as_object_mut);
                match place {
                    Some(object) if assumed(assumptions, &owner, name) => {
                        object.insert(name.to_owned(), json!(bound));
                        assumptions.push(Assumption {
                            pointer: owner.clone(),
                            what: format!("{name} {bound}: twice what the example holds ({seen})"),
                        });
                        true
                    }
                    _ => false,
                }
            }
            ValidationErrorKind::Minimum { .. } if assumed(assumptions, &owner, "minimum") => {
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove("minimum");
                }
                true
            }
            ValidationErrorKind::Format { .. } if assumed(assumptions, &owner, "format") => {
                if let Some(object) = schema.pointer_mut(&owner).and_then(Value::as_object_mut) {
                    object.remove("format");
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: "no format: the example is not a date-time after all".to_owned(),
                });
                true
            }
            ValidationErrorKind::Type { .. }
                if example.pointer(&instance) == Some(&Value::Null) =>
            {
                let types = schema.pointer_mut(&keyword);
                match types {
                    Some(Value::String(kind)) => {
                        let kind = kind.clone();
                        *schema.pointer_mut(&keyword).unwrap_or(&mut Value::Null) =
                            json!([kind, "null"]);
                    }
                    Some(Value::Array(kinds)) => kinds.push(json!("null")),
                    _ => return Err(format!("{described} at {}", shown(&instance))),
                }
                assumptions.push(Assumption {
                    pointer: owner.clone(),
                    what: "null admitted: the example has null here though the description does not say so".to_owned(),
                });
                true
            }
            // A whole response of another type is no response of this operation: never
            // corrected.
            ValidationErrorKind::Type { .. } if instance.is_empty() => false,
            kind => match sample {
                Some(sample) => {
                    let found = example.pointer(&instance).unwrap_or(&Value::Null);
                    let place = Place {
                        keyword: &keyword,
                        owner: &owner,
                        name,
                    };
                    let evidence = match kind {
                        ValidationErrorKind::Required { .. } => {
                            format!("lacks it at {}", shown(&instance))
                        }
                        _ => format!("has {} at {}", crate::merge::shown(found), shown(&instance)),
                    };
                    match corrected(schema, kind, found, &place) {
                        Some(what) => {
                            assumptions.push(Assumption {
                                pointer: owner.clone(),
                                what: format!(
                                    "{what}: the sample `{sample}`, a real response, {evidence}"
                                ),
                            });
                            true
                        }
                        None => false,
                    }
                }
                None => false,
            },
        };
        if !changed {
            let mut described = described;
            if described.chars().count() > 160 {
                described = described.chars().take(160).collect::<String>() + "…";
            }
            return Err(format!("{described} at {}", shown(&instance)));
        }
    }
    Err("it still fails after 64 repairs".to_owned())
}

/// Where a refusal is in the schema: the keyword's location, the schema object holding it, and
/// the keyword's name.
struct Place<'a> {
    keyword: &'a str,
    owner: &'a str,
    name: &'a str,
}

/// Corrects the description's claim that refuses `found` (a real response's value), returning
/// what changed, or `None` for a refusal no correction of one keyword can lift.
fn corrected(
    schema: &mut Value,
    kind: &ValidationErrorKind,
    found: &Value,
    place: &Place<'_>,
) -> Option<String> {
    let Place {
        keyword,
        owner,
        name,
    } = *place;
    let json_type = match found {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match kind {
        ValidationErrorKind::Type { .. } => {
            match schema.pointer_mut(keyword)? {
                Value::Array(kinds) => kinds.push(json!(json_type)),
                other @ Value::String(_) => *other = json!([other.clone(), json_type]),
                _ => return None,
            }
            Some(format!("type widened with {json_type}"))
        }
        ValidationErrorKind::Enum { .. } => {
            schema
                .pointer_mut(keyword)?
                .as_array_mut()?
                .push(found.clone());
            Some("enum widened".to_owned())
        }
        ValidationErrorKind::Required { property } => {
            let names = schema.pointer_mut(keyword)?.as_array_mut()?;
            names.retain(|name| name != property);
            let property = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            Some(format!("{property} optional"))
        }
        ValidationErrorKind::Format { .. }
        | ValidationErrorKind::Constant { .. }
        | ValidationErrorKind::Pattern { .. }
        | ValidationErrorKind::MaxLength { .. }
        | ValidationErrorKind::MinLength { .. }
        | ValidationErrorKind::Minimum { .. }
        | ValidationErrorKind::Maximum { .. }
        | ValidationErrorKind::ExclusiveMinimum { .. }
        | ValidationErrorKind::ExclusiveMaximum { .. }
        | ValidationErrorKind::MultipleOf { .. }
        | ValidationErrorKind::MinItems { .. }
        | ValidationErrorKind::MaxItems { .. } => {
            schema.pointer_mut(owner)?.as_object_mut()?.remove(name)?;
            Some(format!("no {name}"))
        }
        _ => None,
    }
}

/// Where the description says nothing of a value (`{}`, a bare description), it allows anything
/// there, and so does the contract: typing it from an example would refuse the next response
/// that differs, and refusing it would refuse what the description admits. Such a value is never
/// promised, so nothing unchecked reaches the agent; each place is a decision for the author,
/// returned by location.
pub(super) fn anything_left(schema: &Value, assumptions: &mut Vec<Assumption>) -> Vec<String> {
    let silent = |schema: &Value| {
        schema.as_object().is_some_and(|members| {
            ![
                "type",
                "enum",
                "const",
                "$ref",
                "allOf",
                "anyOf",
                "oneOf",
                "not",
                "properties",
                "items",
                "additionalProperties",
            ]
            .iter()
            .any(|keyword| members.contains_key(*keyword))
        })
    };
    let mut places = Vec::new();
    collect_silent(schema, String::new(), &silent, &mut places);
    for location in &places {
        assumptions.push(Assumption {
            pointer: location.clone(),
            what: "anything: the description says nothing of this value, so it is admitted as it comes and never promised".to_owned(),
        });
    }
    places
}

/// Every silent value schema (a property's, an array's items) in `schema`, by location.
pub(super) fn collect_silent(
    schema: &Value,
    at: String,
    silent: &impl Fn(&Value) -> bool,
    out: &mut Vec<String>,
) {
    let Value::Object(members) = schema else {
        return;
    };
    for (keyword, value) in members {
        let here = format!("{at}/{}", crate::convert::escape(keyword));
        match keyword.as_str() {
            "properties" | "$defs" => {
                for (name, inner) in value.as_object().into_iter().flatten() {
                    let inner_at = format!("{here}/{}", crate::convert::escape(name));
                    if keyword == "properties" && silent(inner) {
                        out.push(inner_at.clone());
                    }
                    collect_silent(inner, inner_at, silent, out);
                }
            }
            "items" => {
                if silent(value) {
                    out.push(here.clone());
                }
                collect_silent(value, here, silent, out);
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (index, inner) in value.as_array().into_iter().flatten().enumerate() {
                    collect_silent(inner, format!("{here}/{index}"), silent, out);
                }
            }
            "additionalProperties" => {
                if silent(value) {
                    out.push(here.clone());
                }
                collect_silent(value, here, silent, out);
            }
            _ => {}
        }
    }
}

/// The formats a top-level string (or a list item's) has in every example, written where the
/// description left it a bare string: it is then a value the agent may see checked.
pub(super) fn formats_from_examples(
    schema: &mut Value,
    examples: &[(String, Value)],
    assumptions: &mut Vec<Assumption>,
) {
    let Some((_, first)) = examples.first() else {
        return;
    };
    let members: Vec<String> = match first {
        Value::Object(members) => members
            .keys()
            .map(|name| format!("/{}", crate::convert::escape(name)))
            .collect(),
        Value::Array(items) => items
            .first()
            .and_then(Value::as_object)
            .map(|members| {
                members
                    .keys()
                    .map(|name| format!("/0/{}", crate::convert::escape(name)))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    for pointer in members {
        let texts: Vec<&str> = examples
            .iter()
            .filter_map(|(_, example)| example.pointer(&pointer))
            .filter_map(Value::as_str)
            .collect();
        if texts.is_empty() {
            continue;
        }
        let format = ["date-time", "date", "uuid", "email", "uri"]
            .into_iter()
            .find(|format| {
                texts.iter().all(|text| {
                    toolgate_gate::internals::format_accepts(format, text) == Some(true)
                        && (*format != "uri"
                            || text.starts_with("https://")
                            || text.starts_with("http://"))
                })
            });
        let (Some(format), Some(location)) = (format, locate(schema, &pointer)) else {
            continue;
        };
        let Some(object) = schema.pointer_mut(&location).and_then(Value::as_object_mut) else {
            continue;
        };
        let bare = object.get("type") == Some(&json!("string"))
            && !["format", "pattern", "enum", "const"]
                .iter()
                .any(|keyword| object.contains_key(*keyword));
        if bare {
            object.insert("format".to_owned(), json!(format));
            assumptions.push(Assumption {
                pointer: location,
                what: format!("format {format}: every example has one at {pointer}"),
            });
        }
    }
}

/// `document` written compactly with the first member of its first object written twice (the
/// same name, another value): bytes only a parser that keeps the last duplicate would accept.
pub(super) fn with_duplicate(document: &Value) -> Option<Vec<u8>> {
    fn write(value: &Value, done: &mut bool, out: &mut String) {
        match value {
            Value::Object(members) => {
                out.push('{');
                for (index, (name, member)) in members.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    if !*done {
                        *done = true;
                        out.push_str(&format!(
                            "{}:{},",
                            Value::from(name.as_str()),
                            json!("toolgate-duplicate")
                        ));
                    }
                    out.push_str(&Value::from(name.as_str()).to_string());
                    out.push(':');
                    write(member, done, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write(item, done, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut done = false;
    let mut out = String::new();
    write(document, &mut done, &mut out);
    done.then(|| out.into_bytes())
}

/// What the agent sees, place by place (`*` for each item of a list): the values the examples
/// hold there. A number there is not negative, and a string not empty, where no example's is:
/// assumptions, written into `schema` and listed.
pub(super) fn assume_seen_bounds(
    fields: &[Field],
    admitted: &[(String, Value)],
    schema: &mut Value,
    assumptions: &mut Vec<Assumption>,
) {
    let promised: Vec<(String, Vec<&Value>)> = fields
        .iter()
        .flat_map(|field| match &field.each {
            None => {
                let values: Vec<&Value> = admitted
                    .iter()
                    .filter_map(|(_, example)| example.pointer(&field.from))
                    .collect();
                // A whole list of values (`from` an array of scalars): each item is seen.
                if !values.is_empty() && values.iter().all(|value| value.is_array()) {
                    let items = values
                        .into_iter()
                        .flat_map(|value| value.as_array().into_iter().flatten())
                        .collect();
                    vec![(format!("{}/*", field.from), items)]
                } else {
                    vec![(field.from.clone(), values)]
                }
            }
            Some(members) => members
                .iter()
                .map(|(_, from, _)| {
                    let values = admitted
                        .iter()
                        .filter_map(|(_, example)| example.pointer(&field.from))
                        .filter_map(Value::as_array)
                        .flatten()
                        .filter_map(|item| item.pointer(from))
                        .collect();
                    (format!("{}/*{from}", field.from), values)
                })
                .collect(),
        })
        .collect();
    for (pointer, values) in promised {
        let texts: Vec<&str> = values.iter().filter_map(|value| value.as_str()).collect();
        let locations = locate_all(schema, &pointer);
        if !texts.is_empty() && texts.iter().all(|text| !text.is_empty()) {
            for location in &locations {
                if let Some(object) = schema.pointer_mut(location).and_then(Value::as_object_mut)
                    && !object.contains_key("minLength")
                    && !object.contains_key("enum")
                    && !object.contains_key("const")
                {
                    object.insert("minLength".to_owned(), json!(1));
                    assumptions.push(Assumption {
                        pointer: location.clone(),
                        what: format!(
                            "minLength 1: the agent sees {pointer}, and no example has it empty"
                        ),
                    });
                }
            }
        }
        let non_negative = values
            .iter()
            .filter(|value| !value.is_null())
            .all(|value| value.as_f64().is_some_and(|number| number >= 0.0))
            && values.iter().any(|value| value.is_number());
        if !non_negative {
            continue;
        }
        for location in locations {
            // A minimum the scaffold itself assumed (an int32's) may be raised; the
            // description's own stays.
            let assumed_minimum = assumed(assumptions, &location, "minimum");
            if let Some(object) = schema.pointer_mut(&location).and_then(Value::as_object_mut)
                && (!object.contains_key("minimum")
                    || (assumed_minimum
                        && object["minimum"]
                            .as_f64()
                            .is_some_and(|minimum| minimum < 0.0)))
                && !object.contains_key("exclusiveMinimum")
            {
                object.insert("minimum".to_owned(), json!(0));
                assumptions.push(Assumption {
                    pointer: location,
                    what: format!("minimum 0: the agent sees {pointer}, and no example holds a negative number there"),
                });
            }
        }
    }
}
