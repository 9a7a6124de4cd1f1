//! The operator record: the detailed "why" of a rejection, for people fixing a connector.
//!
//! API boundary: this type never meets the agent's. Its text is still attacker-influenced
//! (jsonschema messages quote the offending value; instance paths carry member names chosen by
//! the upstream), so every such string is escaped and length-capped on the way in: a record can be
//! printed to a terminal or a log without control sequences, and cannot grow without bound.

use std::fmt;

use serde::Serialize;

use crate::facts::{Facts, GATE_VERSION};
use crate::fault::{Fault, Finding};
use crate::outcome::{ErrorCode, Layer};

/// Everything an operator needs to understand and fix a rejection. Serializes to JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorRecord {
    pub(crate) tool: String,
    pub(crate) contract_version: String,
    pub(crate) contract_digest: String,
    pub(crate) gate_version: &'static str,
    pub(crate) request_id: String,
    pub(crate) layer: Layer,
    pub(crate) rule: String,
    pub(crate) code: ErrorCode,
    pub(crate) retryable: bool,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) instance_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) keyword_location: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) findings: Vec<Finding>,
    pub(crate) hint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) upstream_status: Option<u16>,
    pub(crate) raw_len: usize,
    pub(crate) raw_sha256: String,
}

impl OperatorRecord {
    /// The record of `fault`, with what the decision knew about the call.
    pub(crate) fn build(fault: Fault, retryable: bool, facts: &Facts) -> OperatorRecord {
        let fault = fault.into_detail();
        OperatorRecord {
            tool: facts.contract.tool.to_string(),
            contract_version: facts.contract.version.to_string(),
            contract_digest: facts.contract.digest.to_hex(),
            gate_version: GATE_VERSION,
            request_id: facts.request_id.to_string(),
            layer: fault.layer,
            rule: fault.rule.into_owned(),
            code: fault.code,
            retryable,
            message: fault.message,
            instance_path: fault.instance_path,
            keyword_location: fault.keyword_location,
            findings: fault.findings,
            hint: fault.hint.into_owned(),
            upstream_status: facts.upstream_status,
            raw_len: facts.raw.len(),
            raw_sha256: facts.raw.digest().to_hex(),
        }
    }

    /// The layer that refused.
    pub fn layer(&self) -> Layer {
        self.layer
    }
    /// The rule within the layer (see [`Decision::rule`](crate::Decision::rule)).
    pub fn rule(&self) -> &str {
        &self.rule
    }
    /// The code the agent was given.
    pub fn code(&self) -> ErrorCode {
        self.code
    }
    /// What went wrong, in the validator's or the gate's words (escaped, capped).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// JSON pointer into the response where it went wrong, when there is one.
    pub fn instance_path(&self) -> Option<&str> {
        self.instance_path.as_deref()
    }
    /// JSON pointer into the schema (the keyword that failed), for schema rejections.
    pub fn keyword_location(&self) -> Option<&str> {
        self.keyword_location.as_deref()
    }
    /// Further problems found in the same response.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }
    /// What to do about it.
    pub fn hint(&self) -> &str {
        &self.hint
    }
    /// The upstream status the adapter reported, if any.
    pub fn upstream_status(&self) -> Option<u16> {
        self.upstream_status
    }
    /// Length of the raw bytes the gate was given.
    pub fn raw_len(&self) -> usize {
        self.raw_len
    }
    /// Lowercase hex SHA-256 of the raw bytes: the key under which to retain them.
    pub fn raw_sha256(&self) -> &str {
        &self.raw_sha256
    }
    /// The contract's tool.
    pub fn tool(&self) -> &str {
        &self.tool
    }
    /// The contract version that decided.
    pub fn contract_version(&self) -> &str {
        &self.contract_version
    }
    /// The digest of the contract that decided (see
    /// [`ContractSource::digest`](crate::ContractSource::digest)).
    pub fn contract_digest(&self) -> &str {
        &self.contract_digest
    }
    /// This gate's version.
    pub fn gate_version(&self) -> &str {
        self.gate_version
    }
    /// The outstanding request's id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }
}

/// What stands for a message that quotes the response, in a redacted record.
const REDACTED_MESSAGE: &str =
    "(redacted: the validator's words quote the response; the sealed record keeps them)";

/// What stands for a member name in a redacted path that is not a plain identifier.
const REDACTED_NAME: &str = "~redacted~";

/// A JSON pointer with every member name that is not a plain identifier (letters, digits, `_`,
/// `-`, `.`, at most 64) replaced: array indices and the names a schema declares stay, a name an
/// upstream made of free text does not.
fn redacted_pointer(pointer: &str) -> String {
    if pointer.is_empty() {
        return String::new();
    }
    pointer
        .split('/')
        .enumerate()
        .map(|(at, token)| {
            let plain = token.len() <= 64
                && token
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'));
            if at == 0 || plain {
                token
            } else {
                REDACTED_NAME
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

impl OperatorRecord {
    /// The record without what quotes the response (for a log read more widely than the store
    /// that keeps the raw bytes, `--redact-values`): the validator's messages are replaced,
    /// and member names in paths that are not plain identifiers. The layer, rule, schema
    /// location, code, hint, lengths and digests stay, which is what tells an operator where
    /// to look.
    pub fn redacted(&self) -> OperatorRecord {
        let mut record = self.clone();
        record.message = REDACTED_MESSAGE.to_owned();
        record.instance_path = record.instance_path.as_deref().map(redacted_pointer);
        for finding in &mut record.findings {
            finding.message = REDACTED_MESSAGE.to_owned();
            finding.instance_path = redacted_pointer(&finding.instance_path);
        }
        record
    }
}

impl fmt::Display for OperatorRecord {
    /// A multi-line, human-readable account, as `toolgate check --explain` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let retry = if self.retryable {
            "retryable"
        } else {
            "not retryable"
        };
        writeln!(
            f,
            "rejected by {} {} at layer `{}`, rule `{}` ({}, {retry})",
            self.tool, self.contract_version, self.layer, self.rule, self.code
        )?;
        writeln!(f, "  what:     {}", self.message)?;
        if let Some(path) = &self.instance_path {
            let shown = if path.is_empty() {
                "(the whole document)"
            } else {
                path
            };
            writeln!(f, "  where:    {shown}")?;
        }
        if let Some(keyword) = &self.keyword_location {
            writeln!(f, "  schema:   {keyword}")?;
        }
        for finding in &self.findings {
            let path = if finding.instance_path.is_empty() {
                "(root)"
            } else {
                &finding.instance_path
            };
            writeln!(
                f,
                "  also:     {path}: {} [{}]",
                finding.message, finding.keyword_location
            )?;
        }
        if let Some(status) = self.upstream_status {
            writeln!(f, "  upstream: status {status}")?;
        }
        writeln!(
            f,
            "  raw:      {} bytes, sha256 {}",
            self.raw_len, self.raw_sha256
        )?;
        writeln!(
            f,
            "  request:  {} (gate {})",
            self.request_id, self.gate_version
        )?;
        writeln!(f, "  contract: sha256 {}", self.contract_digest)?;
        write!(f, "  fix:      {}", self.hint)
    }
}
