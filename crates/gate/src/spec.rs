//! The contract file (`contract.yaml`) as written by people: serde types and the YAML reader.
//!
//! The format is documented in the README and published as a JSON Schema
//! (`contracts/contract.schema.json`); unknown keys are errors, duplicate YAML keys are errors
//! (serde-saphyr's default), and only `true`/`false` are booleans (no YAML 1.1 `yes`/`no`).
//! Values that need checking after deserialization carry their line (`Spanned`) so a bad pointer
//! or an unknown field name is reported where it was written.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::decision::ErrorCode;
use crate::error::CompileError;

/// The file name of a contract inside its version folder.
pub const CONTRACT_FILE: &str = "contract.yaml";

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
    pub agent_schema: Spanned<String>,
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    #[serde(default)]
    pub retry: RetrySpec,
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
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleSpec {
    pub name: Spanned<String>,
    pub retryable: bool,
    #[serde(default)]
    pub binding: Option<BindingSpec>,
    #[serde(default)]
    pub freshness: Option<FreshnessSpec>,
    #[serde(default)]
    pub membership: Option<MembershipSpec>,
    #[serde(default)]
    pub lookup: Option<LookupSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BindingSpec {
    pub field: Spanned<String>,
    pub context: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FreshnessSpec {
    pub field: Spanned<String>,
    pub max_age: Spanned<String>,
    pub max_future: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MembershipSpec {
    pub field: Spanned<String>,
    pub context: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LookupSpec {
    pub field: Spanned<String>,
    pub context: String,
    #[serde(default)]
    pub require: BTreeMap<String, ExpectSpec>,
}

/// What one member of a looked-up record must equal: a context value, or a constant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExpectSpec {
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub equals: Option<serde_json::Value>,
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

/// Reads `contract.yaml`, reporting the line and column of the first problem.
pub(crate) fn read_contract_file(text: &str) -> Result<ContractFile, CompileError> {
    read_strict_yaml(text).map_err(|error| {
        let located = CompileError::in_file(CONTRACT_FILE, error.message);
        match error.line {
            Some((line, column)) => located.at_line(line, column),
            None => located,
        }
    })
}

/// Why a YAML document could not be read: what is wrong, and where, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    /// 1-based line and column.
    pub line: Option<(u64, u64)>,
    /// What is wrong, in one line.
    pub message: String,
}

impl std::fmt::Display for YamlError {
    /// `line:column: message`, ready to follow a file name and a colon.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some((line, column)) => write!(f, "{line}:{column}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Reads YAML as strictly as contracts are read: unknown keys (with `deny_unknown_fields`) and
/// duplicate keys are errors, only `true`/`false` are booleans. Harnesses use it for their own
/// files (fixture sidecars) so that every YAML file of a repository follows one dialect.
pub fn read_strict_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, YamlError> {
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|error| {
        // serde-saphyr appends the location in prose (kept here as numbers) and, for duplicate
        // keys, advice meant for the Rust programmer rather than the author.
        let message = error.to_string();
        let line = message.lines().next().unwrap_or_default();
        let line = line.rfind(" at line ").map_or(line, |cut| &line[..cut]);
        let message = match line.split_once(", set DuplicateKeyPolicy") {
            Some((before, _)) => format!("{before} (each key may appear once)"),
            None => line.to_owned(),
        };
        YamlError {
            line: error
                .location()
                .map(|location| (location.line(), location.column())),
            message,
        }
    })
}

/// A line-located error about a value written in `contract.yaml`.
pub(crate) fn error_at<T>(spanned: &Spanned<T>, message: impl Into<String>) -> CompileError {
    CompileError::in_file(CONTRACT_FILE, message)
        .at_line(spanned.referenced.line(), spanned.referenced.column())
}
