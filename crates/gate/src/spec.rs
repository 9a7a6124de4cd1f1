//! The contract file (`contract.yaml`) as written by people: its serde types, read strictly.
//!
//! The format is documented in the user guide (doc/guide/src/reference/contract-format.md) and published as a JSON Schema
//! (`contracts/contract.schema.json`); unknown keys are errors, duplicate YAML keys are errors
//! (serde-saphyr's default), and only `true`/`false` are booleans (no YAML 1.1 `yes`/`no`).
//! Values that need checking after deserialization carry their line (`Spanned`) so a bad pointer
//! or an unknown field name is reported where it was written.

use serde::Deserialize;
use serde_saphyr::Spanned;

use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use crate::error::{CONTRACT_FILE, CompileError, CompileErrors};
use crate::outcome::ErrorCode;
use crate::schema;
use crate::semantic::RuleSpec;
use crate::yaml::{YamlError, read_strict_yaml, read_yaml_tree};

/// Which way the gated bytes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// A tool's output on its way to the agent. The agent sees the success envelope
    /// `{"tool","request_id","outcome":"success","data":{..fields..}}`.
    Result,
    /// A model's proposed action on its way to an executor. The executor receives exactly
    /// `{..fields..}`; a refused proposal produces no call.
    Action,
}

impl Direction {
    /// `result` or `action`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Result => "result",
            Direction::Action => "action",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContractFile {
    pub tool: Spanned<String>,
    pub version: Spanned<u32>,
    pub direction: Direction,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub limits: LimitsSpec,
    pub shape: ShapeSpec,
    #[serde(default)]
    pub legacy_shapes: Vec<ShapeSpec>,
    #[serde(default)]
    pub agent_schema: Option<Spanned<String>>,
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    #[serde(default)]
    pub retry: RetrySpec,
    #[serde(default)]
    pub upstream_errors: Vec<UpstreamErrorSpec>,
    #[serde(default)]
    pub context: Option<ContextSpec>,
    #[serde(default)]
    pub retention: Option<RetentionSpec>,
}

/// `retention:`: what a front's store may keep of this tool's responses.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetentionSpec {
    /// Places whose values are replaced before the raw bytes are kept (a `*` token stands for
    /// any array index or member name): secrets the upstream sends that no store should hold.
    #[serde(default)]
    pub redact: Vec<Spanned<String>>,
}

/// `context:`: where the trusted context the rules read may come from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextSpec {
    /// The keys a caller's arguments may supply (what the agent asked about); every other key
    /// comes from the operator only.
    #[serde(default)]
    pub from_arguments: Vec<Spanned<String>>,
}

/// One entry of `upstream_errors:`: an upstream failure in the API's own words, mapped to a code.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpstreamErrorSpec {
    pub name: Spanned<String>,
    #[serde(default)]
    pub status: Option<Statuses>,
    #[serde(default)]
    pub body: Option<BodyMatch>,
    /// Matches a tool's own error (MCP `isError`) rather than a status.
    #[serde(default)]
    pub tool_error: bool,
    pub code: ErrorCode,
    #[serde(default)]
    pub retryable: Option<bool>,
}

/// `status: 404` or `status: [404, 410]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Statuses {
    One(u16),
    Many(Vec<u16>),
}

impl Statuses {
    pub(crate) fn to_vec(&self) -> Vec<u16> {
        match self {
            Statuses::One(status) => vec![*status],
            Statuses::Many(statuses) => statuses.clone(),
        }
    }
}

/// `body: { pointer: /error/code, equals: resource_missing }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BodyMatch {
    pub pointer: Spanned<String>,
    pub equals: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsSpec {
    #[serde(default)]
    pub max_bytes: Option<Spanned<u64>>,
    #[serde(default)]
    pub max_depth: Option<Spanned<u64>>,
    #[serde(default)]
    pub unavailable_statuses: Option<Vec<u16>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShapeSpec {
    /// Required for legacy shapes (it appears in audit events), refused for the current one.
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    pub schema: Spanned<String>,
    /// For text tools: an anchored pattern whose named captures become the document.
    #[serde(default)]
    pub text_pattern: Option<Spanned<String>>,
    #[serde(default)]
    pub outcome: Option<OutcomeSpec>,
    #[serde(default)]
    pub correlation: Option<CorrelationSpec>,
    #[serde(default)]
    pub error_code: Option<Spanned<String>>,
    pub fields: Vec<FieldSpec>,
    #[serde(default)]
    pub tolerate: Vec<TolerateSpec>,
}

/// One entry of a shape's `tolerate:`: a place where upstream additions are admitted.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TolerateSpec {
    pub at: Spanned<String>,
    pub reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeSpec {
    pub pointer: Spanned<String>,
    pub success: String,
    pub failure: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CorrelationSpec {
    #[serde(default)]
    pub tool: Option<Spanned<String>>,
    #[serde(default)]
    pub request_id: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FieldSpec {
    pub name: Spanned<String>,
    pub from: Spanned<String>,
    #[serde(default)]
    pub optional: bool,
    /// A list field: every item of the array at `from` becomes a new object of these members.
    #[serde(default)]
    pub each: Option<Vec<ItemFieldSpec>>,
}

/// One member of a list field's items, read from each item.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ItemFieldSpec {
    pub name: Spanned<String>,
    pub from: Spanned<String>,
    #[serde(default)]
    pub optional: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetrySpec {
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub time_budget: Option<Spanned<String>>,
    #[serde(default)]
    pub retryable_codes: Option<Vec<ErrorCode>>,
}

/// The JSON Schema of `contract.yaml` (published as `contracts/contract.schema.json`). Every
/// contract is validated against it before it is read, so the schema and the reader cannot
/// disagree about what a contract may say.
pub const CONTRACT_SCHEMA: &str = include_str!("../contract.schema.json");

/// The compiled [`CONTRACT_SCHEMA`], built once.
fn contract_schema() -> &'static (Value, Validator) {
    static SCHEMA: LazyLock<(Value, Validator)> = LazyLock::new(|| {
        let schema: Value =
            serde_json::from_str(CONTRACT_SCHEMA).expect("the embedded contract schema is JSON");
        let validator = schema::compile_options(schema::NoRetrieval)
            .build(&schema)
            .expect("the embedded contract schema compiles (a test checks it)");
        (schema, validator)
    });
    &SCHEMA
}

/// Reads `contract.yaml`: strict YAML, then the contract schema, then the typed reader. Every
/// problem is reported at its line and column, in the order they appear in the file.
pub(crate) fn read_contract_file(text: &str) -> Result<ContractFile, CompileErrors> {
    let tree = read_yaml_tree(text).map_err(yaml_error)?;
    let (schema, validator) = contract_schema();
    let mut errors: Vec<(Option<(u64, u64)>, CompileError)> =
        located_schema_errors(&tree, validator, |error| schema_message(schema, error))
            .into_iter()
            .map(|(at, pointer, message)| {
                let mut located = CompileError::in_file(CONTRACT_FILE, message);
                if let Some((line, column)) = at {
                    located = located.at_line(line, column);
                }
                if !pointer.is_empty() {
                    located = located.pointer(&pointer);
                }
                (at, located)
            })
            .collect();
    if !errors.is_empty() {
        errors.sort_by_key(|(at, _)| *at);
        return Err(CompileErrors(
            errors.into_iter().map(|(_, error)| error).collect(),
        ));
    }
    read_strict_yaml(text).map_err(|error| yaml_error(error).into())
}

/// A schema error in a YAML document: line and column, JSON pointer, message.
pub(crate) type LocatedError = (Option<(u64, u64)>, String, String);

/// Every error `validator` finds in a YAML document: where it was written, the JSON pointer, and
/// the message `describe` gives it. An unknown member is reported at its name, not at the object
/// that holds it.
pub(crate) fn located_schema_errors(
    tree: &crate::yaml::YamlTree,
    validator: &Validator,
    describe: impl Fn(&ValidationError<'_>) -> String,
) -> Vec<LocatedError> {
    validator
        .iter_errors(&tree.value)
        .map(|error| {
            let mut pointer = error.instance_path().to_string();
            let mut at = tree.location(&pointer);
            if let ValidationErrorKind::AdditionalProperties { unexpected }
            | ValidationErrorKind::UnevaluatedProperties { unexpected } = error.kind()
                && let Some(first) = unexpected.first()
            {
                pointer = format!("{pointer}/{}", first.replace('~', "~0").replace('/', "~1"));
                at = tree.name_location(&pointer);
            }
            (at, pointer, describe(&error))
        })
        .collect()
}

/// Whether the contract schema alone accepts `text` (for the differential test of the reader).
pub(crate) fn schema_accepts(text: &str) -> bool {
    read_yaml_tree(text).is_ok_and(|tree| contract_schema().1.is_valid(&tree.value))
}

fn yaml_error(error: YamlError) -> CompileError {
    let located = CompileError::in_file(CONTRACT_FILE, error.message);
    match error.line {
        Some((line, column)) => located.at_line(line, column),
        None => located,
    }
}

/// The schema's own words for a failed keyword (its `errorMessage`, as ajv-errors spells it), or
/// the validator's. `{value}` in the schema's words stands for the offending value.
fn schema_message(schema: &Value, error: &ValidationError<'_>) -> String {
    let keyword_location = error
        .absolute_keyword_location()
        .map(|uri| uri.fragment().map(|fragment| fragment.as_str().to_owned()))
        .unwrap_or_default()
        .unwrap_or_default();
    let decoded = keyword_location.replace("%24", "$");
    let (owner, keyword) = decoded.rsplit_once('/').unwrap_or_default();
    let custom = schema
        .pointer(owner)
        .and_then(|node| node.get("errorMessage"))
        .and_then(|message| match message {
            Value::String(text) => Some(text.as_str()),
            Value::Object(by_keyword) => by_keyword.get(keyword).and_then(Value::as_str),
            _ => None,
        });
    match custom {
        Some(text) => {
            let mut value = error.instance().to_string();
            if value.chars().count() > 80 {
                value = value.chars().take(80).collect::<String>() + "…";
            }
            text.replace("{value}", &value)
        }
        None => error.to_string(),
    }
}
