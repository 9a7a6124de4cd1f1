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
        match self
            .0
            .iter()
            .find(|mapping| mapping.body.is_none() && mapping.statuses.contains(&status))
        {
            Some(mapping) => Err(mapping.fault(format!(
                "the upstream answered status {status}, which upstream_errors entry `{}` maps to {}",
                mapping.name,
                mapping.code.as_str()
            ))),
            None => Ok(()),
        }
    }

    /// The mapping that decides on the parsed body (and the status, where it names statuses).
    pub(crate) fn by_body(&self, status: Option<u16>, root: Node<'_>) -> Result<(), Fault> {
        for mapping in &self.0 {
            let Some((pointer, expected)) = &mapping.body else {
                continue;
            };
            let status_matches = mapping.statuses.is_empty()
                || status.is_some_and(|status| mapping.statuses.contains(&status));
            if status_matches
                && pointer
                    .resolve(root)
                    .is_some_and(|node| node.equals(expected))
            {
                let status = status.map_or_else(String::new, |status| format!("status {status}, "));
                return Err(mapping.fault(format!(
                    "the upstream answered {status}{} {expected}, which upstream_errors entry `{}` maps to {}",
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
