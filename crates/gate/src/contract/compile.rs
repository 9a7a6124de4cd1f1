//! Compiling a contract version: read `contract.yaml`, compile every schema once, resolve every
//! field, pointer and rule, and report every problem found, each at its file and line or pointer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_saphyr::Spanned;

use super::Contract;
use super::agent_schema;
use crate::audit::contract_identity;
use crate::correlation::Correlation;
use crate::error::{CONTRACT_FILE, CompileError, CompileErrors, error_at};
use crate::facts::ContractIdentity;
use crate::parse;
use crate::pointer::JsonPointer;
use crate::projection::{FieldSource, Fields, ItemFields, Output};
use crate::retry::RetryPolicy;
use crate::schema::SchemaFiles;
use crate::semantic::Rule;
use crate::shape::{CURRENT_SHAPE, OutcomeSelector, Shape};
use crate::source::{ContractSource, SchemaText};
use crate::spec::{self, ContractFile, Direction, FieldSpec, ShapeSpec, Statuses};
use crate::text::TextPattern;
use crate::tolerate::Tolerated;
use crate::transport::Limits;
use crate::upstream::{UpstreamError, UpstreamErrors};

pub(super) fn compile(source: &ContractSource) -> Result<Contract, CompileErrors> {
    let file = spec::read_contract_file(&source.contract)?;
    let mut errors = Vec::new();

    let tool = file.tool.value.clone();
    if !is_tool_name(&tool) {
        errors.push(error_at(
            &file.tool,
            format!("tool name {tool:?} {TOOL_NAME_RULE}"),
        ));
    }
    if file.version.value == 0 {
        errors.push(error_at(&file.version, "version must be 1 or more"));
    }
    let version = format!("v{}", file.version.value);
    let limits = compile_limits(&file, &mut errors);

    let mut schema_files = SchemaFiles::new(format!("toolgate://contract/{tool}/{version}/"));
    for (name, text) in &source.schemas {
        let document = match text {
            SchemaText::Value(value) => value.clone(),
            SchemaText::Text(text) => {
                match parse::parse_value(text.as_bytes(), Limits::MAX_DEPTH_CEILING) {
                    Ok(value) => value,
                    Err(fault) => {
                        let error = CompileError::in_file(
                            name,
                            format!("not strict JSON ({}): {}", fault.rule, fault.message),
                        );
                        errors.push(match fault.instance_path.as_deref() {
                            Some(pointer) if !pointer.is_empty() => error.pointer(pointer),
                            _ => error,
                        });
                        continue;
                    }
                }
            }
        };
        if let Err(error) = schema_files.add(name, document) {
            errors.push(error);
        }
    }

    let mut shapes = Vec::new();
    let field_names = field_names(&file.shape, &mut errors);
    let text_input = file.shape.text_pattern.is_some();
    for (index, spec) in std::iter::once(&file.shape)
        .chain(&file.legacy_shapes)
        .enumerate()
    {
        let legacy = index > 0;
        if let Some(shape) = compile_shape(
            spec,
            legacy,
            &file,
            &field_names,
            text_input,
            &schema_files,
            &mut errors,
        ) {
            shapes.push(shape);
        }
    }
    let mut legacy_names = BTreeSet::new();
    for shape in &shapes[usize::from(!shapes.is_empty())..] {
        if !legacy_names.insert(Arc::clone(&shape.name)) {
            errors.push(CompileError::in_file(
                CONTRACT_FILE,
                format!("two legacy shapes are named `{}`", shape.name),
            ));
        }
    }

    // Written by hand, or derived from the promised fields (it then says exactly what
    // projection builds).
    // What projection can build, whatever the contract declares: the differ's proof that an
    // output is impossible under a version (`internals::projection_validator`).
    let projection_schema = agent_schema::derive(&file, &schema_files);
    let (agent_schema, derived_agent_schema) = match &file.agent_schema {
        Some(name) => {
            if !source.schemas.contains_key(&name.value) {
                errors.push(error_at(
                    name,
                    format!(
                        "agent_schema names `{}`, which is not a file of this contract",
                        name.value
                    ),
                ));
            }
            (
                collect(schema_files.compile(&name.value), &mut errors),
                None,
            )
        }
        None => {
            let derived = projection_schema.clone();
            let compiled = schema_files
                .add(agent_schema::DERIVED_AGENT_SCHEMA, derived.clone())
                .and_then(|()| schema_files.compile(agent_schema::DERIVED_AGENT_SCHEMA));
            (collect(compiled, &mut errors), Some(derived))
        }
    };

    let mut rules = Vec::new();
    let mut rule_names = BTreeSet::new();
    for spec in &file.rules {
        if !rule_names.insert(spec.name.value.clone()) {
            errors.push(error_at(
                &spec.name,
                format!("two rules are named `{}`", spec.name.value),
            ));
        }
        let resolve = |field: &Spanned<String>| {
            let listed = file
                .shape
                .fields
                .iter()
                .any(|spec| spec.name.value == field.value && spec.each.is_some());
            if listed {
                return Err(error_at(
                    field,
                    format!(
                        "rule field `{}` is a list field; a rule judges one value",
                        field.value
                    ),
                ));
            }
            field_names
                .iter()
                .position(|name| *name == field.value)
                .ok_or_else(|| {
                    error_at(
                        field,
                        format!(
                            "rule field `{}` is not one of the agent-visible fields ({})",
                            field.value,
                            field_names.join(", ")
                        ),
                    )
                })
        };
        if let Some(rule) = collect(Rule::compile(spec, resolve), &mut errors) {
            rules.push(rule);
        }
    }

    let from_arguments = compile_context(&file, &rules, &mut errors);
    let retry = compile_retry(&file, &mut errors);
    let upstream_errors = compile_upstream_errors(&file, text_input, &mut errors);
    let redact = compile_redact(&file, &mut errors);

    match (errors.is_empty(), agent_schema) {
        (true, Some(agent_schema)) if shapes.len() == 1 + file.legacy_shapes.len() => {
            let output = Output::new(file.direction, &tool, field_names);
            Ok(Contract {
                identity: Arc::new(ContractIdentity {
                    redact,
                    ..contract_identity(&tool, &version, source.digest())
                }),
                description: file.description,
                limits,
                text_input,
                shapes: shapes.into(),
                output,
                agent_schema,
                rules,
                retry,
                upstream_errors,
                derived_agent_schema,
                projection_schema,
                from_arguments,
            })
        }
        _ => Err(CompileErrors(errors)),
    }
}

/// The context keys a caller's arguments may supply: those `context: from_arguments` lists, or
/// without it, the keys only binding rules read (binding the answer to what was asked is right).
/// A membership or lookup rule's keys always come from the operator: a list or table the model
/// supplies would let it admit whatever it lists.
fn compile_context(
    file: &ContractFile,
    rules: &[Rule],
    errors: &mut Vec<CompileError>,
) -> BTreeSet<String> {
    let operator_only: BTreeSet<&str> = rules
        .iter()
        .filter(|rule| rule.operator_context)
        .flat_map(Rule::context_keys)
        .collect();
    let read: BTreeSet<&str> = rules.iter().flat_map(Rule::context_keys).collect();
    let Some(spec) = &file.context else {
        return read
            .difference(&operator_only)
            .map(|key| (*key).to_owned())
            .collect();
    };
    let mut from_arguments = BTreeSet::new();
    for key in &spec.from_arguments {
        if !read.contains(key.value.as_str()) {
            errors.push(error_at(
                key,
                format!(
                    "context key `{}` is read by no rule; list only keys the rules read",
                    key.value
                ),
            ));
        } else if operator_only.contains(key.value.as_str()) {
            errors.push(error_at(
                key,
                format!(
                    "context key `{}` is read by a membership or lookup rule, so it must come from the operator: a list the model supplies lets it admit whatever it lists",
                    key.value
                ),
            ));
        } else {
            from_arguments.insert(key.value.clone());
        }
    }
    from_arguments
}

/// The places `retention: redact:` names, each a JSON pointer (`*` for any index or name).
fn compile_redact(file: &ContractFile, errors: &mut Vec<CompileError>) -> Box<[Box<str>]> {
    let places = file.retention.iter().flat_map(|spec| &spec.redact);
    places
        .filter(|place| collect(pointer(place), errors).is_some())
        .map(|place| place.value.as_str().into())
        .collect()
}

fn collect<T>(result: Result<T, CompileError>, errors: &mut Vec<CompileError>) -> Option<T> {
    result.map_err(|error| errors.push(error)).ok()
}

fn compile_limits(file: &ContractFile, errors: &mut Vec<CompileError>) -> Limits {
    let mut limits = Limits {
        max_bytes: Limits::DEFAULT_MAX_BYTES,
        max_depth: Limits::DEFAULT_MAX_DEPTH,
        unavailable_statuses: Limits::DEFAULT_UNAVAILABLE_STATUSES.to_vec(),
    };
    if let Some(max_bytes) = &file.limits.max_bytes {
        match usize::try_from(max_bytes.value) {
            Ok(bytes) if (1..=Limits::MAX_BYTES_CEILING).contains(&bytes) => {
                limits.max_bytes = bytes
            }
            _ => errors.push(error_at(
                max_bytes,
                format!(
                    "max_bytes must be between 1 and {} (64 MiB)",
                    Limits::MAX_BYTES_CEILING
                ),
            )),
        }
    }
    if let Some(max_depth) = &file.limits.max_depth {
        match usize::try_from(max_depth.value) {
            Ok(depth) if (1..=Limits::MAX_DEPTH_CEILING).contains(&depth) => {
                limits.max_depth = depth
            }
            _ => errors.push(error_at(
                max_depth,
                format!(
                    "max_depth must be between 1 and {}",
                    Limits::MAX_DEPTH_CEILING
                ),
            )),
        }
    }
    if let Some(statuses) = &file.limits.unavailable_statuses {
        limits.unavailable_statuses = statuses.clone();
    }
    limits
}

fn field_names(current: &ShapeSpec, errors: &mut Vec<CompileError>) -> Vec<String> {
    let mut names = Vec::new();
    for field in &current.fields {
        let name = &field.name.value;
        if !is_identifier(name, true) {
            errors.push(error_at(
                &field.name,
                format!(
                    "field name {name:?} must be letters, digits and _, starting with a letter"
                ),
            ));
        }
        if names.contains(name) {
            errors.push(error_at(
                &field.name,
                format!("field `{name}` is listed twice"),
            ));
        }
        names.push(name.clone());
    }
    if names.is_empty() {
        errors.push(error_at(
            &current.schema,
            "the shape promises no fields; an agent-visible result needs at least one",
        ));
    }
    names
}

fn compile_shape(
    spec: &ShapeSpec,
    legacy: bool,
    file: &ContractFile,
    field_names: &[String],
    text_input: bool,
    schema_files: &SchemaFiles,
    errors: &mut Vec<CompileError>,
) -> Option<Shape> {
    let before = errors.len();
    let name = match (&spec.name, legacy) {
        (None, false) => CURRENT_SHAPE.to_owned(),
        (Some(name), true) if is_identifier(&name.value, false) && name.value != CURRENT_SHAPE => {
            name.value.clone()
        }
        (Some(name), true) => {
            errors.push(error_at(
                name,
                format!(
                    "legacy shape name {:?} must be a lowercase identifier other than `current`",
                    name.value
                ),
            ));
            name.value.clone()
        }
        (Some(name), false) => {
            errors.push(error_at(
                name,
                "the current shape takes no name (legacy shapes do)",
            ));
            CURRENT_SHAPE.to_owned()
        }
        (None, true) => {
            errors.push(error_at(
                &spec.schema,
                "every legacy shape needs a `name` (it is recorded in audit events)",
            ));
            String::new()
        }
    };

    let schema = collect(schema_files.compile(&spec.schema.value), errors);
    let text = match &spec.text_pattern {
        Some(pattern) if text_input => collect(
            TextPattern::compile(&pattern.value).map_err(|error| {
                error_at(pattern, format!("text_pattern does not compile: {error}"))
            }),
            errors,
        ),
        Some(pattern) => {
            errors.push(error_at(
                pattern,
                "only text contracts (whose current shape has a text_pattern) may use text_pattern",
            ));
            None
        }
        None if text_input => {
            errors.push(error_at(
                &spec.schema,
                "every shape of a text contract needs a text_pattern",
            ));
            None
        }
        None => None,
    };

    let outcome = spec.outcome.as_ref().and_then(|outcome| {
        let pointer = collect(pointer(&outcome.pointer), errors)?;
        Some(OutcomeSelector {
            pointer,
            success: outcome.success.clone(),
            failure: outcome.failure.clone(),
        })
    });
    // A result envelope's `oneOf` is decided by its outcome member when the schema allows it.
    let schema = match (schema, &outcome) {
        (Some(schema), Some(outcome)) => match outcome.pointer.single_member() {
            Some(member) => Some(schema.discriminated_by(member)),
            None => Some(schema),
        },
        (schema, _) => schema,
    };
    if file.direction == Direction::Action && spec.outcome.is_some() {
        errors.push(error_at(
            &spec.schema,
            "an action contract gates a proposal, which has no upstream outcome; remove `outcome`",
        ));
    }
    let error_code = match (&spec.outcome, &spec.error_code) {
        (Some(_), Some(code)) => collect(pointer(code), errors),
        (None, None) => None,
        (Some(outcome), None) => {
            errors.push(error_at(
                &outcome.pointer,
                "a shape with an `outcome` needs `error_code`: the pointer to a failure's code",
            ));
            None
        }
        (None, Some(code)) => {
            errors.push(error_at(
                code,
                "`error_code` only means something with an `outcome`",
            ));
            None
        }
    };
    let mut correlation = Correlation::default();
    if let Some(spec) = &spec.correlation {
        correlation.tool = spec
            .tool
            .as_ref()
            .and_then(|tool| collect(pointer(tool), errors));
        correlation.request_id = spec
            .request_id
            .as_ref()
            .and_then(|id| collect(pointer(id), errors));
    }

    let shape_name = &name;
    let mut fields = Vec::with_capacity(field_names.len());
    for name in field_names {
        match spec.fields.iter().find(|field| field.name.value == *name) {
            Some(field) => {
                let current = file.shape.fields.iter().find(|current| current.name.value == *name);
                let each = compile_each(field, current, errors);
                if let Some(pointer) = collect(pointer(&field.from), errors) {
                    fields.push(FieldSource {
                        pointer,
                        optional: field.optional,
                        each,
                    });
                }
            }
            None => errors.push(error_at(&spec.schema, format!("shape `{shape_name}` does not say where field `{name}` comes from; every shape must provide every agent-visible field"))),
        }
    }
    for field in &spec.fields {
        if !field_names.contains(&field.name.value) {
            errors.push(error_at(
                &field.name,
                format!(
                    "field `{}` is not an agent-visible field of the current shape ({})",
                    field.name.value,
                    field_names.join(", ")
                ),
            ));
        }
    }

    let mut tolerated = Vec::new();
    for spec in &spec.tolerate {
        match Tolerated::new(&spec.at.value, &spec.reason) {
            Ok(place) => tolerated.push(place),
            Err(message) => errors.push(error_at(&spec.at, message)),
        }
    }
    // What each field copies: a value read whole, or for a list field each item's members.
    let read_whole = |field: &FieldSpec| -> Vec<String> {
        match &field.each {
            None => vec![field.from.value.clone()],
            Some(each) => each
                .iter()
                .map(|item| format!("{}/*{}", field.from.value, item.from.value))
                .collect(),
        }
    };
    for (field, place) in spec.fields.iter().flat_map(|field| {
        let copied = read_whole(field);
        tolerated
            .iter()
            .filter(move |place| copied.iter().any(|pointer| place.is_within(pointer)))
            .map(move |place| (field, place))
    }) {
        errors.push(error_at(
            &field.from,
            format!(
                "field `{}` reads {} whole, and the shape tolerates members nobody declared at {}: they would reach the agent; promise the members you need one by one instead",
                field.name.value,
                if field.from.value.is_empty() { "the document" } else { &field.from.value },
                place.at()
            ),
        ));
    }

    if errors.len() > before {
        return None;
    }
    Some(Shape {
        name: Arc::from(name),
        schema: schema?,
        text,
        outcome,
        correlation,
        error_code,
        fields: Fields::new(fields),
        tolerated,
    })
}

/// A list field's item members: identifiers, each once, read by pointer from the item; in a
/// legacy shape, the same members as the current shape's, in the same order (the agent sees one
/// output whichever shape admitted the response).
fn compile_each(
    field: &FieldSpec,
    current: Option<&FieldSpec>,
    errors: &mut Vec<CompileError>,
) -> Option<Arc<ItemFields>> {
    let names = |field: &FieldSpec| -> Option<Vec<String>> {
        field
            .each
            .as_ref()
            .map(|each| each.iter().map(|item| item.name.value.clone()).collect())
    };
    if let Some(current) = current
        && names(current) != names(field)
    {
        errors.push(error_at(
            &field.name,
            format!(
                "list field `{}` must have the same `each` members as in the current shape",
                field.name.value
            ),
        ));
        return None;
    }
    let each = field.each.as_ref()?;
    if each.is_empty() {
        errors.push(error_at(
            &field.name,
            format!(
                "list field `{}` names no member in `each`",
                field.name.value
            ),
        ));
        return None;
    }
    let mut members = Vec::with_capacity(each.len());
    let mut seen = BTreeSet::new();
    for item in each {
        let name = &item.name.value;
        if !is_identifier(name, true) {
            errors.push(error_at(
                &item.name,
                format!(
                    "member name {name:?} must be letters, digits and _, starting with a letter"
                ),
            ));
        }
        if !seen.insert(name.clone()) {
            errors.push(error_at(
                &item.name,
                format!("member `{name}` is listed twice"),
            ));
        }
        if let Some(pointer) = collect(pointer(&item.from), errors) {
            members.push((name.clone(), pointer, item.optional));
        }
    }
    Some(Arc::new(ItemFields::new(members)))
}

fn compile_upstream_errors(
    file: &ContractFile,
    text_input: bool,
    errors: &mut Vec<CompileError>,
) -> UpstreamErrors {
    let mut names = BTreeSet::new();
    let mut mappings = Vec::new();
    for spec in &file.upstream_errors {
        let name = &spec.name.value;
        if !is_identifier(name, false) {
            errors.push(error_at(
                &spec.name,
                format!("upstream_errors name {name:?} must be a lowercase identifier"),
            ));
        }
        if !names.insert(name.clone()) {
            errors.push(error_at(
                &spec.name,
                format!("two upstream_errors entries are named `{name}`"),
            ));
        }
        let statuses = spec
            .status
            .as_ref()
            .map(Statuses::to_vec)
            .unwrap_or_default();
        let body = match &spec.body {
            Some(_) if text_input => {
                errors.push(error_at(
                    &spec.name,
                    "a text contract's output is not JSON: its upstream_errors can match a status only",
                ));
                None
            }
            Some(body) => collect(pointer(&body.pointer), errors)
                .map(|pointer| (pointer, body.equals.clone())),
            None => None,
        };
        if spec.tool_error && !statuses.is_empty() {
            errors.push(error_at(
                &spec.name,
                "a tool error has no status: an upstream_errors entry gives `status` or `tool_error`, not both",
            ));
        }
        mappings.push(UpstreamError {
            name: name.clone(),
            tool_error: spec.tool_error,
            statuses,
            body,
            code: spec.code,
            retryable: spec.retryable,
        });
    }
    UpstreamErrors(mappings)
}

fn compile_retry(file: &ContractFile, errors: &mut Vec<CompileError>) -> RetryPolicy {
    let mut policy = RetryPolicy::default();
    if let Some(attempts) = file.retry.max_attempts {
        if attempts == 0 {
            errors.push(CompileError::in_file(
                CONTRACT_FILE,
                "retry.max_attempts must be at least 1 (the first attempt counts)",
            ));
        } else {
            policy.max_attempts = attempts;
        }
    }
    if let Some(budget) = &file.retry.time_budget {
        match humantime::parse_duration(&budget.value) {
            Ok(duration) if duration > Duration::ZERO => policy.time_budget = duration,
            Ok(_) => errors.push(error_at(budget, "retry.time_budget must be more than zero")),
            Err(error) => errors.push(error_at(
                budget,
                format!(
                    "`{}` is not a duration ({error}); write e.g. 10s, 2m",
                    budget.value
                ),
            )),
        }
    }
    if let Some(codes) = &file.retry.retryable_codes {
        policy.retryable_codes = codes.clone();
    }
    policy
}

/// A pointer written in `contract.yaml`, parsed once.
fn pointer(spanned: &Spanned<String>) -> Result<JsonPointer, CompileError> {
    JsonPointer::parse(&spanned.value).map_err(|message| error_at(spanned, message))
}

/// What a tool name may be, as the compile error says it.
const TOOL_NAME_RULE: &str = "must be 1 to 128 ASCII letters, digits, `_`, `-` and `.` (a name MCP allows), not starting with `.` or `-`";

/// A tool name: any name MCP allows for a tool (letters, digits, `_`, `-`, `.`; 1 to 128
/// characters), so a contract can be written for the tool as its server names it. It is also the
/// contract's folder name, so it may not start with `.` (`..`, a hidden folder) or `-` (read as
/// an option on a command line).
pub(crate) fn is_tool_name(text: &str) -> bool {
    let allowed = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '-' | '.');
    (1..=128).contains(&text.len()) && text.chars().all(allowed) && !text.starts_with(['.', '-'])
}

fn is_identifier(text: &str, allow_upper: bool) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|first| {
        first.is_ascii_lowercase() || (allow_upper && first.is_ascii_alphabetic())
    }) && chars.all(|ch| {
        ch == '_'
            || ch.is_ascii_digit()
            || ch.is_ascii_lowercase()
            || (allow_upper && ch.is_ascii_uppercase())
    })
}
