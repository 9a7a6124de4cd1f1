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
    let dialect = operation.dialect;
    let (schema, assumptions) = Converter::new(description, dialect)
        .with_unfollowed(unfollowed.iter().map(|skip| {
            (
                skip.reference.clone(),
                format!("{}, in {}", skip.why, skip.file),
            )
        }))
        .document(&operation.success.1);
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
    Ok(Parts {
        tool: tool.to_owned(),
        origin: Origin {
            source: format!("{source}, operation {}", operation.id),
            summary: operation.summary.clone(),
            upstream: Some(format!("{} {server}{}", operation.method, operation.path)),
        },
        schema,
        assumptions,
        examples: operation.examples,
        error_examples,
        fields,
        context,
        errors,
        text: false,
    })
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
        error_examples: Vec::new(),
        fields,
        context: Map::new(),
        errors: Vec::new(),
        text: false,
    }
}

/// From one MCP tool: its `outputSchema` converted (a tool without one is a text tool, whose
/// whole output is the one field), and no example (an MCP server documents none).
pub fn from_mcp(
    server: &str,
    name: &str,
    description: Option<&str>,
    output_schema: Option<&Value>,
    tool: &str,
) -> Parts {
    let (schema, assumptions, text) = match output_schema {
        Some(schema) => {
            let (converted, assumptions) =
                Converter::new(schema, Dialect::JsonSchema).document(schema);
            (converted, assumptions, false)
        }
        None => (
            serde_json::json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string", "maxLength": 65536}},
                "additionalProperties": false
            }),
            Vec::new(),
            true,
        ),
    };
    let fields = if text {
        vec![("text".to_owned(), "/text".to_owned())]
    } else {
        Vec::new()
    };
    Parts {
        tool: tool.to_owned(),
        origin: Origin {
            source: format!("MCP server `{server}`, tool `{name}`"),
            summary: description.map(str::to_owned),
            upstream: Some(format!("MCP tools/call {name}")),
        },
        schema,
        assumptions,
        examples: Vec::new(),
        error_examples: Vec::new(),
        fields,
        context: Map::new(),
        errors: Vec::new(),
        text,
    }
}
