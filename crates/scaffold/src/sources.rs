//! The three sources of a contract, each turned into the [`Parts`] of a plan.

use serde_json::{Map, Value};

use crate::convert::{Converter, Dialect};
use crate::infer::infer;
use crate::openapi;
use crate::plan::{ErrorMapping, Origin, Parts};

/// From one operation of an OpenAPI description: its success schema converted, its documented
/// examples, its 404/410 and 429/5xx statuses as error mappings, its path parameters as the
/// request's trusted context.
pub fn from_openapi(
    (description, unfollowed): &(Value, Vec<crate::bundle::Unfollowed>),
    source: &str,
    operation: &str,
    tool: &str,
    fields: Vec<(String, String)>,
) -> Result<Parts, String> {
    let operation = openapi::operation(description, operation)?;
    let (schema, assumptions) = if operation.success.1.is_null() {
        // No schema, only examples: the schema every example fits, each assumption listed.
        let values: Vec<Value> = operation
            .examples
            .iter()
            .map(|(_, value)| value.clone())
            .collect();
        let (schema, mut assumptions) = infer(&values);
        assumptions.insert(
            0,
            crate::Assumption {
                pointer: String::new(),
                what: "inferred from the documented examples: the description gives the response no schema".to_owned(),
            },
        );
        (schema, assumptions)
    } else {
        let (success, typed) = typed_by_examples(&operation.success.1, &operation.examples);
        let (schema, mut assumptions) = Converter::new(description, operation.dialect)
            .with_unfollowed(unfollowed.iter().map(|skip| {
                (
                    skip.reference.clone(),
                    format!("{}, in {}", skip.why, skip.file),
                )
            }))
            .document(&success);
        if let Some(kind) = typed {
            assumptions.insert(
                0,
                crate::Assumption {
                    pointer: String::new(),
                    what: format!(
                        "type {kind}: the schema names no type, and every documented example is one"
                    ),
                },
            );
        }
        (schema, assumptions)
    };
    Ok(openapi_parts(
        description,
        source,
        operation,
        tool,
        fields,
        schema,
        assumptions,
    ))
}

/// The parts of an operation's contract, its schema made.
fn openapi_parts(
    description: &Value,
    source: &str,
    operation: openapi::Operation,
    tool: &str,
    fields: Vec<(String, String)>,
    schema: Value,
    assumptions: Vec<crate::Assumption>,
) -> Parts {
    let server = description
        .pointer("/servers/0/url")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim_end_matches('/');
    let mut not_found = Vec::new();
    let mut unavailable = Vec::new();
    let mut error_examples = Vec::new();
    for (status, example) in &operation.errors {
        if *status == 404 || *status == 410 {
            not_found.push(*status);
        } else {
            unavailable.push(*status);
        }
        if let Some(example) = example {
            error_examples.push((*status, example.clone()));
        }
    }
    let mut errors = Vec::new();
    if !not_found.is_empty() {
        errors.push(ErrorMapping {
            name: "not_found".to_owned(),
            statuses: not_found,
            code: "NOT_FOUND",
        });
    }
    if !unavailable.is_empty() {
        errors.push(ErrorMapping {
            name: "unavailable".to_owned(),
            statuses: unavailable,
            code: "UPSTREAM_UNAVAILABLE",
        });
    }
    let context: Map<String, Value> = operation.path_parameters.iter().cloned().collect();
    Parts {
        tool: tool.to_owned(),
        origin: Origin {
            source: format!("{source}, operation {}", operation.id),
            summary: operation.summary.clone(),
            upstream: Some(format!("{} {server}{}", operation.method, operation.path)),
        },
        schema,
        assumptions,
        examples: operation.examples,
        samples: Vec::new(),
        error_examples,
        fields,
        context,
        errors,
        text: false,
        decisions: Vec::new(),
    }
}

/// From samples of a tool's output: the schema every sample fits, and the samples as fixtures.
pub fn from_samples(
    samples: Vec<(String, Value)>,
    source: &str,
    tool: &str,
    fields: Vec<(String, String)>,
) -> Parts {
    let values: Vec<Value> = samples.iter().map(|(_, sample)| sample.clone()).collect();
    let (schema, assumptions) = infer(&values);
    Parts {
        tool: tool.to_owned(),
        origin: Origin {
            source: source.to_owned(),
            summary: None,
            upstream: None,
        },
        schema,
        assumptions,
        examples: samples,
        samples: Vec::new(),
        error_examples: Vec::new(),
        fields,
        context: Map::new(),
        errors: Vec::new(),
        text: false,
        decisions: Vec::new(),
    }
}

/// What a tool said when `toolgate new --from-mcp --call` called it: its `CallToolResult`, or
/// why there is none.
pub type Answer = Result<Value, String>;

/// From one MCP tool: its `outputSchema` converted, with the answer to a `--call` as a real
/// response where there is one. A tool without an `outputSchema` is inferred from its answer
/// (`structuredContent`, or a text block that is a JSON document); with no such answer there is
/// nothing to say what the agent may see, so its contract refuses every answer, and that decision
/// heads the to-do list. A contract that admits any text is never written.
pub fn from_mcp(
    server: &str,
    name: &str,
    description: Option<&str>,
    output_schema: Option<&Value>,
    answer: Option<&Answer>,
    tool: &str,
) -> Parts {
    let origin = Origin {
        source: format!("MCP server `{server}`, tool `{name}`"),
        summary: description.map(str::to_owned),
        upstream: Some(format!("MCP tools/call {name}")),
    };
    let document = answer
        .and_then(|answer| answer.as_ref().ok())
        .and_then(answered_document);
    // The proxy serves a contract's `description:` to the model as the tool's: only its author
    // writes one, never the upstream.
    let describe = format!(
        "contracts/{tool}/v1/contract.yaml: no `description:`, so the proxy lists `{name}` to the model with none; write one in your own words where the placeholder comment is (the upstream's own text is quoted at the top, unchecked, never served)"
    );
    let decisions = vec![describe.clone()];
    let parts = |schema, assumptions, examples: Vec<(String, Value)>| Parts {
        tool: tool.to_owned(),
        origin: origin.clone(),
        schema,
        assumptions,
        examples,
        samples: Vec::new(),
        error_examples: Vec::new(),
        fields: Vec::new(),
        context: Map::new(),
        errors: Vec::new(),
        text: false,
        decisions: decisions.clone(),
    };
    if let Some(schema) = output_schema {
        let (converted, assumptions) = Converter::new(schema, Dialect::JsonSchema).document(schema);
        let examples = document.map(|value| vec![(CALLED_CASE.to_owned(), value)]);
        return parts(converted, assumptions, examples.unwrap_or_default());
    }
    if let Some(value) = document {
        let (schema, assumptions) = infer(std::slice::from_ref(&value));
        return parts(schema, assumptions, vec![(CALLED_CASE.to_owned(), value)]);
    }
    let why = match answer {
        None => format!(
            "`{name}` declares no outputSchema, so nothing says what the agent may see of its answer: its contract refuses every answer until you decide. Call it once to infer one from a real answer (`toolgate new --from-mcp --call {name} '{{…arguments…}}' -- SERVER`, into a fresh folder), or write response.schema.json and a text_pattern yourself"
        ),
        Some(Err(why)) => format!(
            "`{name}` declares no outputSchema and its call gave no answer ({why}): its contract refuses every answer until you decide what the agent may see"
        ),
        Some(Ok(result)) => format!(
            "`{name}` declares no outputSchema and answered {}: there is no structure to infer, so its contract refuses every answer; write a text_pattern (and the schema of what it captures) that admits only what the agent may read",
            answered_words(result)
        ),
    };
    Parts {
        fields: vec![("text".to_owned(), "/text".to_owned())],
        text: true,
        decisions: vec![why, describe],
        ..parts(refuse_every_text(), Vec::new(), Vec::new())
    }
}

/// The case name of a fixture made from a `--call`'s answer.
pub const CALLED_CASE: &str = "called";

/// The JSON document an answer holds for the gate, as the proxy hands it over: its
/// `structuredContent`, or its one text block when that parses as a JSON object or array.
fn answered_document(result: &Value) -> Option<Value> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return None;
    }
    if let Some(structured) = result.get("structuredContent") {
        return Some(structured.clone());
    }
    let text = single_text(result)?;
    match toolgate_gate::internals::parse_strict_json(text.as_bytes(), 100) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => Some(value),
        _ => None,
    }
}

/// The one text block of a result's `content`, if that is all it holds.
fn single_text(result: &Value) -> Option<&str> {
    match result.get("content")?.as_array()?.as_slice() {
        [block] if block.get("type").and_then(Value::as_str) == Some("text") => {
            block.get("text")?.as_str()
        }
        _ => None,
    }
}

/// What an answer was, in a few words for the to-do list (the server's words are data: never
/// quoted at length, and escaped where printed).
fn answered_words(result: &Value) -> String {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return "with an error (isError)".to_owned();
    }
    match single_text(result) {
        Some(text) => format!("prose ({} characters of text)", text.chars().count()),
        None => "with no single text block".to_owned(),
    }
}

/// A text contract's schema that admits nothing: the place a person writes what the agent may
/// read of a tool that describes none.
fn refuse_every_text() -> Value {
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "Refuses every answer: the tool declares no outputSchema. Replace `false` at /properties/text with what the agent may read, and the contract's text_pattern with one that captures only that.",
        "type": "object",
        "required": ["text"],
        "properties": {"text": false},
        "additionalProperties": false
    })
}

/// A success schema that says nothing of its type (`{"additionalProperties": true}`, `{}`)
/// typed by the description's examples, when they all agree: what the schema then closes and
/// bounds is what the examples show, and no claim is written that the schema does not hold. The
/// type given, if one was.
fn typed_by_examples(
    schema: &Value,
    examples: &[(String, Value)],
) -> (Value, Option<&'static str>) {
    const TYPING: [&str; 10] = [
        "type",
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "enum",
        "const",
        "properties",
        "items",
        "not",
    ];
    let Value::Object(members) = schema else {
        return (schema.clone(), None);
    };
    if TYPING.iter().any(|keyword| members.contains_key(*keyword)) || examples.is_empty() {
        return (schema.clone(), None);
    }
    let kind_of = |value: &Value| match value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Null => "null",
    };
    let first = kind_of(&examples[0].1);
    if !examples
        .iter()
        .all(|(_, example)| kind_of(example) == first)
    {
        return (schema.clone(), None);
    }
    let mut typed = members.clone();
    typed.insert("type".to_owned(), Value::from(first));
    (Value::Object(typed), Some(first))
}
