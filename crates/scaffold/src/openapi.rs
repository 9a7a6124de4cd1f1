//! Reading an OpenAPI description (3.0 or 3.1, JSON or YAML): one operation's success response
//! schema, its documented examples, its error statuses and its path parameters.

use serde_json::Value;

use crate::convert::Dialect;

/// The largest description read (GitHub's is about 12 MB).
pub const MAX_DESCRIPTION_BYTES: u64 = 64 * 1024 * 1024;

/// One operation, as much of it as a contract needs.
#[derive(Debug, Clone)]
pub struct Operation {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path template, e.g. `/repos/{owner}/{repo}/pulls/{pull_number}`.
    pub path: String,
    /// Its `operationId`, or `METHOD path` when it has none.
    pub id: String,
    /// Its summary, when it has one.
    pub summary: Option<String>,
    /// The dialect its schemas are written in.
    pub dialect: Dialect,
    /// The success status and its JSON schema.
    pub success: (String, Value),
    /// The success response's documented examples, by name.
    pub examples: Vec<(String, Value)>,
    /// Documented error statuses, each with its example body when one is given.
    pub errors: Vec<(u16, Option<Value>)>,
    /// Path parameters and an example value for each.
    pub path_parameters: Vec<(String, Value)>,
}

/// Reads a description file and every file its references name beside it
/// ([`crate::bundle`]): one document, and the references not followed with the reason for each.
pub fn read(path: &std::path::Path) -> Result<(Value, Vec<crate::bundle::Unfollowed>), String> {
    crate::bundle::bundle(read_one(path)?, path, read_one)
}

/// Reads one file of a description: JSON, or YAML (read strictly: a duplicate key is an error).
pub fn read_one(path: &std::path::Path) -> Result<Value, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_DESCRIPTION_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("{}: {error}", path.display()))?;
    if bytes.len() as u64 > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "{}: larger than {} MiB; no API description is this large",
            path.display(),
            MAX_DESCRIPTION_BYTES >> 20
        ));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        serde_json::from_str(&text)
            .map_err(|error| format!("{}: not JSON: {error}", path.display()))
    } else {
        toolgate_gate::internals::read_strict_yaml(&text)
            .map_err(|error| format!("{}: {error}", path.display()))
    }
}

/// The dialect of a description, or why it is not one this reads.
pub fn dialect(description: &Value) -> Result<Dialect, String> {
    match (
        description.get("openapi").and_then(Value::as_str),
        description.get("swagger"),
    ) {
        (Some(version), _) if version.starts_with("3.0") => Ok(Dialect::OpenApi30),
        (Some(version), _) if version.starts_with("3.1") => Ok(Dialect::JsonSchema),
        (Some(version), _) => Err(format!("OpenAPI {version} is not read: toolgate reads 3.0 and 3.1")),
        (None, Some(_)) => Err("Swagger 2.0 (OpenAPI 2) is not read: convert it to OpenAPI 3 first (for example with swagger2openapi)".to_owned()),
        (None, None) => Err("not an OpenAPI description: it has no `openapi` version".to_owned()),
    }
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Every operation of the description: `(method, path, operationId or "METHOD path")`.
pub fn operations(description: &Value) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (path, item) in description
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                let id = operation
                    .get("operationId")
                    .and_then(Value::as_str)
                    .map_or_else(
                        || format!("{} {path}", method.to_uppercase()),
                        str::to_owned,
                    );
                found.push((method.to_uppercase(), path.clone(), id));
            }
        }
    }
    found
}

/// The operation `wanted` names (its `operationId`, or `GET /path`).
pub fn operation(description: &Value, wanted: &str) -> Result<Operation, String> {
    let dialect = dialect(description)?;
    let all = operations(description);
    let Some((method, path, id)) = all.iter().find(|(method, path, id)| {
        id == wanted || format!("{method} {path}").eq_ignore_ascii_case(wanted)
    }) else {
        let near: Vec<&str> = all
            .iter()
            .map(|(_, _, id)| id.as_str())
            .filter(|id| {
                wanted
                    .split(['/', '-', '_', ' '])
                    .filter(|part| part.len() > 2)
                    .any(|part| id.contains(part))
            })
            .take(8)
            .collect();
        return Err(if near.is_empty() {
            format!(
                "the description has no operation `{wanted}` ({} operations; name one by its operationId, or as `GET /path`)",
                all.len()
            )
        } else {
            format!(
                "the description has no operation `{wanted}`; did you mean {}?",
                near.join(", ")
            )
        });
    };
    let item = &description["paths"][path];
    let operation = &item[method.to_lowercase()];
    let responses = operation
        .get("responses")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("operation `{id}` documents no responses"))?;
    let resolve = |value: &'_ Value| -> Value { resolve_ref(description, value) };

    let success_status = ["200", "201", "202", "203", "206", "2XX", "2xx", "default"]
        .into_iter()
        .find(|status| responses.contains_key(*status))
        .ok_or_else(|| format!("operation `{id}` documents no success response (2xx)"))?;
    let success = resolve(&responses[success_status]);
    let (schema, examples) = json_content(description, &success)
        .filter(|(schema, examples)| !schema.is_null() || !examples.is_empty())
        .ok_or_else(|| {
            format!("operation `{id}`'s {success_status} response has no JSON schema and no JSON example: nothing says it is a JSON tool result; describe it, or scaffold from real responses with --from-sample")
        })?;

    let mut errors = Vec::new();
    for (status, response) in responses {
        let Ok(code) = status.parse::<u16>() else {
            continue;
        };
        if code == 404 || code == 410 || code == 429 || (500..600).contains(&code) {
            let example = json_content(description, &resolve(response))
                .and_then(|(_, examples)| examples.into_iter().next())
                .map(|(_, example)| example);
            errors.push((code, example));
        }
    }

    let mut path_parameters = Vec::new();
    let declared = item
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(
            operation
                .get("parameters")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        );
    for parameter in declared {
        let parameter = resolve(parameter);
        if parameter.get("in").and_then(Value::as_str) != Some("path") {
            continue;
        }
        let Some(name) = parameter.get("name").and_then(Value::as_str) else {
            continue;
        };
        let example = parameter
            .get("example")
            .or_else(|| {
                parameter
                    .get("examples")
                    .and_then(Value::as_object)
                    .and_then(|examples| examples.values().next())
                    .and_then(|example| example.get("value"))
            })
            .or_else(|| parameter.pointer("/schema/example"))
            .cloned()
            .unwrap_or_else(
                || match parameter.pointer("/schema/type").and_then(Value::as_str) {
                    Some("integer" | "number") => Value::from(1),
                    _ => Value::from(format!("example-{name}")),
                },
            );
        if !path_parameters.iter().any(|(known, _)| known == name) {
            path_parameters.push((name.to_owned(), example));
        }
    }

    Ok(Operation {
        method: method.clone(),
        path: path.clone(),
        id: id.clone(),
        summary: operation
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_owned),
        dialect,
        success: (success_status.to_owned(), schema),
        examples,
        errors,
        path_parameters,
    })
}

/// A response's JSON schema and examples: `application/json`, or any `…json` media type
/// (`application/vnd.github+json`). An example written as a JSON string is read as the JSON it
/// holds.
fn json_content(description: &Value, response: &Value) -> Option<(Value, Vec<(String, Value)>)> {
    let content = response.get("content")?.as_object()?;
    let media = content.get("application/json").or_else(|| {
        content
            .iter()
            .find(|(name, _)| name.contains("json"))
            .map(|(_, media)| media)
    })?;
    // A JSON media type with examples and no schema still says what the response is: the
    // schema is then `null` here, and inferred from the examples.
    let schema = media.get("schema").cloned().unwrap_or(Value::Null);
    let mut examples = Vec::new();
    if let Some(example) = media.get("example") {
        examples.push(("example".to_owned(), example.clone()));
    }
    for (name, example) in media
        .get("examples")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(value) = resolve_ref(description, example).get("value") {
            examples.push((name.clone(), value.clone()));
        }
    }
    if examples.is_empty()
        && let Some(example) = resolve_ref(description, &schema).get("example")
    {
        examples.push(("schema-example".to_owned(), example.clone()));
    }
    let examples = examples
        .into_iter()
        .map(|(name, value)| match &value {
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(parsed @ (Value::Object(_) | Value::Array(_))) => (name, parsed),
                _ => (name, value),
            },
            _ => (name, value),
        })
        .collect();
    Some((schema, examples))
}

/// `value`, or what its `$ref` (within the description) points to, followed a few times.
fn resolve_ref(description: &Value, value: &Value) -> Value {
    let mut current = value;
    for _ in 0..8 {
        match current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| description.pointer(pointer))
        {
            Some(target) => current = target,
            None => break,
        }
    }
    current.clone()
}
