//! Not part of the supported API: what the toolgate harness, its benchmarks, the conformance
//! tests and the fuzz targets need from inside the gate. Hidden from the documentation and free to
//! change in any release; a production adapter needs none of it.
//!
//! Kept in one place, as insta keeps its `internals`, so the public surface stays the handful of
//! types an adapter uses, and everything else is visibly off limits.

pub mod stages;

pub use crate::document::{Document, DocumentJson, Node};
pub use crate::sanitize::{escape_hidden, escape_invisible, escape_json_hidden, is_hidden};
pub use crate::schema::{
    AppliedKeyword, DIALECT, compile_options, document_compile_options, subschemas,
};
pub use crate::timestamp::parse_timestamp;
pub use crate::yaml::{YamlError, read_strict_yaml};

use crate::outcome::ErrorCode;

/// The agent-visible field names of `contract`, in output order.
pub fn fields(contract: &crate::Contract) -> &[String] {
    contract.fields()
}

/// The names of the shapes `contract` admits: `current`, then its legacy shapes.
pub fn shape_names(contract: &crate::Contract) -> impl Iterator<Item = &str> {
    contract.shape_names()
}

/// For a shape, where each promised field is read from: `(field, JSON pointer)` pairs.
pub fn promised_pointers<'c>(
    contract: &'c crate::Contract,
    shape: &str,
) -> Option<Vec<(&'c str, &'c str)>> {
    contract.promised_pointers(shape)
}

/// For a shape, where the fields a freshness rule judges are read from.
pub fn freshness_pointers<'c>(contract: &'c crate::Contract, shape: &str) -> Vec<&'c str> {
    contract.freshness_pointers(shape)
}

/// For a shape, the places where it tolerates members nobody declared (empty for an unknown
/// shape).
pub fn tolerated<'c>(contract: &'c crate::Contract, shape: &str) -> &'c [crate::Tolerated] {
    contract.tolerated(shape)
}

/// For a shape's list field, each item member's name, where it is read from in an item, and
/// whether it is optional; `None` when the field is not a list field.
pub fn promised_items<'c>(
    contract: &'c crate::Contract,
    shape: &str,
    field: &str,
) -> Option<Vec<(&'c str, &'c str, bool)>> {
    contract.promised_items(shape, field)
}

/// The names of `contract`'s semantic rules, in evaluation order.
pub fn rule_names(contract: &crate::Contract) -> impl Iterator<Item = &str> {
    contract.rule_names()
}

/// Whether `agent_bytes` is a success `contract`'s agent-visible schema accepts: a harness's
/// proof that every admitted output has the promised shape.
pub fn agent_view_accepts(contract: &crate::Contract, agent_bytes: &[u8]) -> bool {
    contract.agent_view_accepts(agent_bytes)
}

/// The JSON Schema of the fixed failure envelope for `tool`, its `request_id` held to the schema
/// `request_id`: the one place the finite set of codes is written into a schema.
pub fn failure_schema(tool: &str, request_id: serde_json::Value) -> serde_json::Value {
    crate::wire::failure_schema(tool, request_id)
}

/// The exact bytes of the fixed failure envelope, so a harness can compare an agent's view
/// with them.
pub fn failure_envelope(tool: &str, request_id: &str, code: ErrorCode, retryable: bool) -> Vec<u8> {
    crate::wire::failure(tool, request_id, code, retryable).into_vec()
}

pub use crate::spec::CONTRACT_SCHEMA;
/// A compiled JSON Schema (jsonschema's), for [`standalone_validator`] and [`yaml_schema_errors`].
pub use jsonschema::Validator as SchemaValidator;

/// Whether the contract schema alone accepts `contract_yaml` (read as strictly as contracts are).
pub fn contract_schema_accepts(contract_yaml: &str) -> bool {
    crate::spec::schema_accepts(contract_yaml)
}

/// Reads `contract.yaml` as `Contract::compile` does (schema, then the typed reader), without
/// compiling the rest; the errors, one per line.
pub fn read_contract_file(contract_yaml: &str) -> Result<(), String> {
    crate::spec::read_contract_file(contract_yaml)
        .map(drop)
        .map_err(|errors| errors.to_string())
}

/// Parses `bytes` exactly as the gate's G2 layer does (UTF-8, no BOM, no duplicate member names
/// even after unescaping, nesting at most `max_depth`), for a harness's own JSON files. The error
/// is one line, naming the JSON pointer where it applies.
pub fn parse_strict_json(bytes: &[u8], max_depth: usize) -> Result<serde_json::Value, String> {
    crate::parse::parse_value(bytes, max_depth).map_err(|fault| one_line(&fault))
}

/// Parses `bytes` exactly as the gate's G2 layer does, into the document admission reads (and
/// a `document_compile_options` validator validates). The error is one line, as
/// [`parse_strict_json`]'s.
pub fn parse_document(bytes: &[u8], max_depth: usize) -> Result<Document<'_>, String> {
    crate::parse::parse_document(bytes, max_depth).map_err(|fault| one_line(&fault))
}

fn one_line(fault: &crate::fault::Fault) -> String {
    match &fault.instance_path {
        Some(pointer) if !pointer.is_empty() => format!("at {pointer}: {}", fault.message),
        _ => fault.message.clone(),
    }
}

/// For a document one of `contract`'s shapes accepts, that shape's name and every assertion
/// keyword its schema applied to the document's values (the bounds mutants probe and the lint
/// reads); `None` when no shape accepts it.
pub fn applied_keywords<'c>(
    contract: &'c crate::Contract,
    document: &serde_json::Value,
) -> Option<(&'c str, Vec<AppliedKeyword>)> {
    contract.applied_keywords(document)
}

/// The validator behind `shape`'s schema over plain `Value`s, compiled as the gate compiles it
/// (2020-12, formats asserted, the contract's files, nothing fetched; no `oneOf` narrowing, which
/// decides alike): every error with its instance path and kind. The differ builds responses a
/// schema admits by repairing a candidate error by error (`toolgate-diff`'s `repair.rs`).
/// `None` for a shape the contract does not have.
pub fn shape_validator<'c>(
    contract: &'c crate::Contract,
    shape: &str,
) -> Option<&'c jsonschema::Validator> {
    contract.shape_validator(shape)
}

/// A validator every output `contract`'s projection can build passes: the agent schema derived
/// from its promised fields (each field's own schema, read where projection reads it), whether
/// or not the contract declares an `agent_schema` of its own. An output it refuses is one no
/// response makes this contract show the agent: the differ's proof of an agent verdict.
/// Compiled on each call; `None` if it does not compile.
pub fn projection_validator(contract: &crate::Contract) -> Option<jsonschema::Validator> {
    contract.projection_validator()
}

/// Where `shape` carries the tool name and the request id (the correlation members), for
/// mutants that swap them; `None` when the contract has no such shape.
pub fn correlation_pointers<'c>(
    contract: &'c crate::Contract,
    shape: &str,
) -> Option<(Option<&'c str>, Option<&'c str>)> {
    contract.correlation_pointers(shape)
}

/// The file name a derived agent schema is compiled under (see
/// [`Contract::derived_agent_schema`](crate::Contract::derived_agent_schema)).
pub use crate::contract::DERIVED_AGENT_SCHEMA;

/// `contract.yaml` as the JSON value it denotes, after the contract schema accepted it: the
/// contract format exactly as documented, for tools that compare contracts field by field.
pub fn contract_document(contract_yaml: &str) -> Result<serde_json::Value, String> {
    crate::spec::read_contract_file(contract_yaml).map_err(|errors| errors.to_string())?;
    crate::yaml::read_yaml_tree(contract_yaml)
        .map(|tree| tree.value)
        .map_err(|error| error.to_string())
}

/// A duration as contracts write them (`15m`, `90s`), as the freshness rule reads it.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|error| error.to_string())
}

/// Whether `text` is valid in JSON Schema `format` as the gate asserts it; `None` for a format
/// the gate does not know.
pub fn format_accepts(format: &str, text: &str) -> Option<bool> {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};
    static VALIDATORS: LazyLock<Mutex<HashMap<String, Option<jsonschema::Validator>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut validators = VALIDATORS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let validator = validators.entry(format.to_owned()).or_insert_with(|| {
        compile_options(crate::schema::NoRetrieval)
            .build(&serde_json::json!({"type": "string", "format": format}))
            .ok()
    });
    validator
        .as_ref()
        .map(|validator| validator.is_valid(&serde_json::Value::from(text)))
}

/// A schema that refers to nothing outside itself, compiled exactly as the gate compiles contract
/// schemas (2020-12, formats asserted, nothing fetched): for the harness's own schemas (its JSON
/// report, sidecars, request files) and the tests that hold documents to them.
pub fn standalone_validator(schema: &serde_json::Value) -> Result<jsonschema::Validator, String> {
    compile_options(crate::schema::NoRetrieval)
        .build(schema)
        .map_err(|error| error.to_string())
}

/// Checks a YAML document (read as strictly as contracts are) against `validator`: every error
/// with the line and column it was written at and its JSON pointer, in file order. For the
/// harness's YAML files (sidecars), held to their published schema as contracts are to theirs.
pub fn yaml_schema_errors(
    text: &str,
    validator: &jsonschema::Validator,
) -> Result<(), Vec<YamlError>> {
    let tree = crate::yaml::read_yaml_tree(text).map_err(|error| vec![error])?;
    let mut errors =
        crate::spec::located_schema_errors(&tree, validator, |error| error.to_string());
    if errors.is_empty() {
        return Ok(());
    }
    errors.sort_by_key(|(at, _, _)| *at);
    Err(errors
        .into_iter()
        .map(|(line, pointer, message)| YamlError {
            line,
            message: if pointer.is_empty() {
                message
            } else {
                format!("at {pointer}: {message}")
            },
        })
        .collect())
}

/// The upstream statuses this contract treats as unavailable.
pub fn unavailable_statuses(contract: &crate::Contract) -> Vec<u16> {
    contract.limits().unavailable_statuses.clone()
}

/// `time` in RFC 3339, UTC, as audit events write it.
pub fn format_timestamp(time: std::time::SystemTime) -> Option<String> {
    crate::timestamp::format_utc(crate::timestamp::unix_nanos(time))
}

/// A JSON Schema `pattern` (ECMA-262) as the `regex` syntax the gate's validator runs: jsonschema's
/// own translation (`.` excludes every line terminator, `\d` `\w` `\s` are ECMA's sets, `\cX`
/// escapes), so a model that builds automata from patterns reads them exactly as the gate does.
/// `None` for a pattern the gate cannot translate.
pub fn pattern_as_regex(pattern: &str) -> Option<String> {
    jsonschema_regex::to_rust_regex(pattern)
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// Appends `node` as compact JSON with every object's members sorted by name: the bytes
/// `serde_json` writes for the same value read as a `Value` (the MCP proxy hands a result's
/// `structuredContent` to the gate this way, without building a `Value`).
pub fn write_json(out: &mut Vec<u8>, node: Node<'_>) {
    crate::wire::write_json(out, node);
}

/// Every `pattern` keyword in `schema` (or in any document that holds schemas, such as an API
/// description): a string under `pattern` in a schema object, not a property or definition
/// merely named `pattern`, nor one inside `const`, `enum`, `examples` or `default`. The census
/// the fast-path benchmarks take, read as the gate reads a contract's schema files.
pub fn schema_patterns(schema: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    crate::schema::collect_patterns(schema, false, &mut found);
    found
}

/// Whether the gate matches `pattern` by position (`schema/pattern.rs`) rather than with
/// jsonschema's own matcher.
pub fn is_positional_pattern(pattern: &str) -> bool {
    crate::schema::is_positional_pattern(pattern)
}

/// Whether `name` may be a tool's name (and its contract's folder name): any name MCP allows
/// (ASCII letters, digits, `_`, `-`, `.`; 1 to 128 characters), not starting with `.` or `-`.
pub fn is_tool_name(name: &str) -> bool {
    crate::contract::compile::is_tool_name(name)
}

/// The formats JSON Schema defines (2020-12, draft-07's included), each of which the gate
/// asserts; a contract naming any other format does not compile. Outside a contract (an
/// upstream's input schema) any other `format` is free text.
pub const JSON_SCHEMA_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

pub use crate::contract::FastPaths;

/// The fast-path census of a compiled contract (`crates/bench`'s `fast_paths`).
pub fn fast_paths(contract: &crate::Contract) -> FastPaths {
    contract.fast_paths()
}
