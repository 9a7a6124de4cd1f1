//! G1 (and its tail after the strict parse): upstream errors that are not the envelope. Most APIs
//! say "not found" in their own words (GitHub answers 404 with `{"message":"Not Found"}`, Stripe
//! with `{"error":{"code":"resource_missing"}}`); a contract maps them to a failure code by the
//! status, a member of the body, or both (`upstream_errors:`), so the agent sees `NOT_FOUND`
//! rather than a schema rejection. Nothing of the body reaches the agent: only the mapped code.
//!
//! A mapping on the status alone decides before the body is read, as the unavailable statuses
//! do. A mapping that reads the body decides on the strictly parsed document, before any shape's
//! schema: its evidence went through the byte limit, the depth limit and the duplicate check.

use serde_json::Value;

use crate::document::Node;
use crate::fault::Fault;
use crate::outcome::{ErrorCode, Layer};
use crate::pointer::JsonPointer;

/// One declared mapping.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamError {
    /// Its name, recorded as the rule of the operator record.
    pub name: String,
    /// Whether it matches a tool's own error (MCP `isError`) instead of a status.
    pub tool_error: bool,
    /// The statuses it applies to; empty: any status, or none reported.
    pub statuses: Vec<u16>,
    /// A member of the body and the value it must equal.
    pub body: Option<(JsonPointer, Value)>,
    /// What the agent is told.
    pub code: ErrorCode,
    /// Whether the agent may retry; `None`: the retry policy decides from the code.
    pub retryable: Option<bool>,
}

/// A contract's mappings, in the order it lists them (the first that matches decides).
#[derive(Debug, Clone, Default)]
pub(crate) struct UpstreamErrors(pub Vec<UpstreamError>);

impl UpstreamErrors {
    /// The mapping that decides on the status alone, before the body is read.
    pub(crate) fn by_status(&self, status: Option<u16>) -> Result<(), Fault> {
        let Some(status) = status else {
            return Ok(());
        };
        match self.0.iter().find(|mapping| {
            !mapping.tool_error && mapping.body.is_none() && mapping.statuses.contains(&status)
        })
        {
            Some(mapping) => Err(mapping.fault(format!(
                "the upstream answered status {status}, which upstream_errors entry `{}` maps to {}",
                mapping.name,
                mapping.code.as_str()
            ))),
            None => Ok(()),
        }
    }

    /// What a tool's own error (MCP `isError`) is, before its body is read: the first
    /// `tool_error` entry without a body decides; otherwise, where an entry reads a body and
    /// there is one, the body decides ([`UpstreamErrors::by_body`]); otherwise it is
    /// [`UpstreamErrors::unmapped_tool_error`].
    pub(crate) fn by_tool_error(&self, has_body: bool) -> Result<(), Fault> {
        if let Some(mapping) = self
            .0
            .iter()
            .find(|mapping| mapping.tool_error && mapping.body.is_none())
        {
            return Err(mapping.fault(format!(
                "the upstream tool reported an error (isError), which upstream_errors entry `{}` maps to {}",
                mapping.name,
                mapping.code.as_str()
            )));
        }
        if has_body && self.0.iter().any(|mapping| mapping.body.is_some()) {
            return Ok(());
        }
        Err(Self::unmapped_tool_error())
    }

    /// A tool's own error that no entry maps: the call was answered, and asking again the same
    /// way gets the same answer (an argument the tool refused, most often), so the agent is not
    /// told to retry.
    pub(crate) fn unmapped_tool_error() -> Fault {
        Fault::new(
            Layer::Transport,
            "tool_error",
            "the upstream tool reported an error (isError) that no upstream_errors entry maps; its text is not passed on",
            "the tool answered with an error, not a result: calling again the same way gets the same; map it with an upstream_errors entry (tool_error: true) to tell the agent more",
        )
        .code(ErrorCode::InvalidResponse)
        .retryable(false)
    }

    /// An error status (400 and up) that no entry maps, answered to a contract whose shapes have
    /// no failure branch: its body is the upstream's error, never a success to validate. A 404
    /// or 410 is the upstream saying the thing asked about does not exist (`NOT_FOUND`); any
    /// other is refused naming its status, so the operator reads "the upstream answered 400"
    /// rather than a schema mismatch that blames the connector.
    pub(crate) fn unmapped_status(status: u16) -> Fault {
        match status {
            404 | 410 => Fault::new(
                Layer::Transport,
                "upstream_status",
                format!(
                    "the upstream answered status {status} (not found), which no upstream_errors entry maps; the contract describes only its success, so the body was not validated as one"
                ),
                "by default a 404 or 410 tells the agent NOT_FOUND (the thing asked about does not exist; the same call gets the same answer); if this status means something else for this API, map it with an upstream_errors entry",
            )
            .code(ErrorCode::NotFound)
            .retryable(false),
            _ => Fault::new(
                Layer::Transport,
                "upstream_status",
                format!(
                    "the upstream answered status {status}, an error which no upstream_errors entry maps; the contract describes only its success, so the body was not validated as one"
                ),
                "a 4xx is most often the call's own fault (its arguments, credentials or permissions): look at what the connector sent; to tell the agent a code for it, map the status with an upstream_errors entry (`status: [STATUS]`)",
            )
            .code(ErrorCode::InvalidResponse)
            .retryable(false),
        }
    }

    /// The mapping that decides on the parsed body (and the status, where it names statuses); a
    /// `tool_error` entry only for a tool's own error.
    pub(crate) fn by_body(
        &self,
        status: Option<u16>,
        tool_error: bool,
        root: Node<'_>,
    ) -> Result<(), Fault> {
        for mapping in &self.0 {
            let Some((pointer, expected)) = &mapping.body else {
                continue;
            };
            if mapping.tool_error && !tool_error {
                continue;
            }
            let status_matches = mapping.statuses.is_empty()
                || status.is_some_and(|status| mapping.statuses.contains(&status));
            if status_matches
                && pointer
                    .resolve(root)
                    .is_some_and(|node| node.equals(expected))
            {
                let status = match (status, tool_error) {
                    (_, true) => "a tool error (isError) with".to_owned(),
                    (Some(status), false) => format!("status {status},"),
                    (None, false) => String::new(),
                };
                return Err(mapping.fault(format!(
                    "the upstream answered {status}{}{} {expected}, which upstream_errors entry `{}` maps to {}",
                    if status.is_empty() { "" } else { " " },
                    if pointer.as_str().is_empty() { "a body of".to_owned() } else { format!("{} =", pointer.as_str()) },
                    mapping.name,
                    mapping.code.as_str()
                )));
            }
        }
        Ok(())
    }
}

impl UpstreamError {
    fn fault(&self, message: String) -> Fault {
        let fault = Fault::new(
            Layer::Transport,
            format!("upstream_errors.{}", self.name),
            message,
            "the upstream reported a failure in its own words; the agent sees the mapped code and nothing of the body",
        )
        .code(self.code);
        match self.retryable {
            Some(retryable) => fault.retryable(retryable),
            None => fault,
        }
    }
}
