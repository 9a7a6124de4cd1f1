//! The contract file (`contract.yaml`) as written by people: its serde types, read strictly.
//!
//! The format is documented in the README and published as a JSON Schema
//! (`contracts/contract.schema.json`); unknown keys are errors, duplicate YAML keys are errors
//! (serde-saphyr's default), and only `true`/`false` are booleans (no YAML 1.1 `yes`/`no`).
//! Values that need checking after deserialization carry their line (`Spanned`) so a bad pointer
//! or an unknown field name is reported where it was written.

use serde::Deserialize;
use serde_saphyr::Spanned;

use crate::error::{CONTRACT_FILE, CompileError};
use crate::outcome::ErrorCode;
use crate::semantic::RuleSpec;
use crate::yaml::read_strict_yaml;

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
