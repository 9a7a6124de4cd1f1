//! G1 transport: what the adapter says about the call, and the byte limit, before a byte is parsed.

use std::io::{self, Read};

use crate::fault::Fault;
use crate::outcome::{ErrorCode, Layer};
use crate::upstream::UpstreamErrors;

/// What a tool call produced, as the adapter hands it to the gate.
#[derive(Debug, Clone, Copy)]
pub struct Response<'a> {
    pub(crate) body: &'a [u8],
    pub(crate) status: Option<u16>,
    pub(crate) unreachable: Option<&'a str>,
    pub(crate) incomplete: Option<&'a str>,
    pub(crate) tool_error: bool,
}

impl<'a> Response<'a> {
    /// Bytes the tool returned, exactly as received.
    pub fn body(body: &'a [u8]) -> Response<'a> {
        Response {
            body,
            status: None,
            unreachable: None,
            incomplete: None,
            tool_error: false,
        }
    }

    /// The upstream status the adapter saw (an HTTP status, or an exit status mapped to one).
    /// A status the contract lists as unavailable (by default 408, 429, 500, 502, 503, 504)
    /// rejects with `UPSTREAM_UNAVAILABLE` without parsing the body; any other status is recorded
    /// and the body decides.
    pub fn with_status(mut self, status: u16) -> Response<'a> {
        self.status = Some(status);
        self
    }

    /// The call failed before any bytes arrived (connection refused, timeout). `reason` goes to
    /// the operator record only.
    pub fn unreachable(reason: &'a str) -> Response<'a> {
        Response {
            body: &[],
            status: None,
            unreachable: Some(reason),
            incomplete: None,
            tool_error: false,
        }
    }

    /// The upstream answered, but with no result: it asked for something the agent cannot give
    /// (an MCP `input_required` result, a confirmation), so calling again the same way cannot
    /// succeed. The agent sees `INVALID_RESPONSE`, not retryable; `reason` goes to the operator
    /// record only.
    pub fn incomplete(reason: &'a str) -> Response<'a> {
        Response {
            body: &[],
            status: None,
            unreachable: None,
            incomplete: Some(reason),
            tool_error: false,
        }
    }

    /// The tool answered with its own error rather than a result (an MCP result with
    /// `isError`, or a call refused as invalid): `body` is the error's structured part, if it
    /// has one (empty otherwise). An `upstream_errors` entry with `tool_error: true` maps it;
    /// unmapped, the agent sees `INVALID_RESPONSE`, not retryable: the same call gets the same
    /// answer.
    pub fn tool_error(body: &'a [u8]) -> Response<'a> {
        Response {
            body,
            status: None,
            unreachable: None,
            incomplete: None,
            tool_error: true,
        }
    }

    /// Whether the tool answered with its own error ([`Response::tool_error`]).
    pub fn is_tool_error(&self) -> bool {
        self.tool_error
    }

    /// The body bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.body
    }

    /// The status, if the adapter reported one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Why the upstream could not be reached, when the adapter said so
    /// ([`Response::unreachable`]).
    pub fn unreachable_reason(&self) -> Option<&'a str> {
        self.unreachable
    }

    /// What the upstream answered instead of a result, when the adapter said so
    /// ([`Response::incomplete`]).
    pub fn incomplete_reason(&self) -> Option<&'a str> {
        self.incomplete
    }
}

/// The per-contract transport and parse limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limits {
    pub max_bytes: usize,
    pub max_depth: usize,
    pub unavailable_statuses: Vec<u16>,
}

impl Limits {
    pub(crate) const DEFAULT_MAX_BYTES: usize = 64 * 1024;
    /// No agent needs a larger answer, and a limit this size can be added to without overflow
    /// anywhere (`read_capped` reads one byte more). The contract schema says the same.
    pub(crate) const MAX_BYTES_CEILING: usize = 64 * 1024 * 1024;
    pub(crate) const DEFAULT_MAX_DEPTH: usize = 32;
    /// serde_json refuses nesting at 128 on its own; the contract's limit must be the one that
    /// speaks, with its own message, so it stays comfortably below.
    pub(crate) const MAX_DEPTH_CEILING: usize = 100;
    pub(crate) const DEFAULT_UNAVAILABLE_STATUSES: [u16; 6] = [408, 429, 500, 502, 503, 504];
}

pub(crate) fn check(
    limits: &Limits,
    upstream_errors: &UpstreamErrors,
    response: &Response<'_>,
) -> Result<(), Fault> {
    if let Some(reason) = response.unreachable {
        return Err(Fault::new(
            Layer::Transport,
            "unreachable",
            format!("the adapter reported that the upstream could not be reached: {reason}"),
            "transient transport failure; the retry policy decides whether to call again",
        )
        .code(ErrorCode::UpstreamUnavailable));
    }
    if let Some(reason) = response.incomplete {
        return Err(Fault::new(
            Layer::Transport,
            "incomplete",
            format!("the upstream answered without a result: {reason}"),
            "asking again the same way cannot succeed; the tool needs input only a person or the operator can give",
        ));
    }
    if response.tool_error {
        upstream_errors.by_tool_error(!response.body.is_empty())?;
    }
    // A declared mapping speaks before the default unavailable statuses.
    upstream_errors.by_status(response.status)?;
    if let Some(status) = response.status
        && limits.unavailable_statuses.contains(&status)
    {
        return Err(Fault::new(
                Layer::Transport,
                "upstream_status",
                format!("the upstream answered with status {status}, which the contract treats as unavailable"),
                "the body was not read; the retry policy decides whether to call again",
            )
            .code(ErrorCode::UpstreamUnavailable));
    }
    let len = response.body.len();
    if len > limits.max_bytes {
        return Err(Fault::new(
            Layer::Transport,
            "max_bytes",
            format!(
                "the response is at least {len} bytes; the contract allows at most {}",
                limits.max_bytes
            ),
            "the upstream returned far more than this tool's answer needs: make the connector ask for less, or raise limits.max_bytes in a new contract version",
        ));
    }
    Ok(())
}

/// Reads at most `limit + 1` bytes from `reader`: enough for the gate to know a body is over the
/// limit without holding an unbounded one in memory. Pass the result to `admit`, which rejects it
/// when it is longer than the limit.
pub fn read_capped(reader: impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut body = Vec::with_capacity(limit.min(64 * 1024) + 1);
    reader.take(limit as u64 + 1).read_to_end(&mut body)?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_bytes: 8,
            max_depth: 4,
            unavailable_statuses: Limits::DEFAULT_UNAVAILABLE_STATUSES.to_vec(),
        }
    }

    #[test]
    fn a_body_at_the_limit_passes_and_one_byte_more_fails() {
        assert!(
            check(
                &limits(),
                &UpstreamErrors::default(),
                &Response::body(b"12345678")
            )
            .is_ok()
        );
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::body(b"123456789"),
        )
        .unwrap_err();
        assert_eq!(fault.rule, "max_bytes");
        assert_eq!(fault.code, ErrorCode::InvalidResponse);
    }

    #[test]
    fn unavailable_status_and_unreachable_are_upstream_unavailable() {
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::body(b"{}").with_status(503),
        )
        .unwrap_err();
        assert_eq!(
            (fault.rule.as_ref(), fault.code),
            ("upstream_status", ErrorCode::UpstreamUnavailable)
        );
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::unreachable("connection refused"),
        )
        .unwrap_err();
        assert_eq!(
            (fault.rule.as_ref(), fault.code),
            ("unreachable", ErrorCode::UpstreamUnavailable)
        );
        assert!(
            check(
                &limits(),
                &UpstreamErrors::default(),
                &Response::body(b"{}").with_status(404)
            )
            .is_ok()
        );
    }

    #[test]
    fn an_incomplete_answer_is_invalid_and_never_retryable() {
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::incomplete("input_required"),
        )
        .unwrap_err();
        assert_eq!(
            (fault.rule.as_ref(), fault.code),
            ("incomplete", ErrorCode::InvalidResponse)
        );
    }

    #[test]
    fn read_capped_stops_one_byte_past_the_limit() {
        let endless = io::repeat(b'x');
        let body = read_capped(endless, 10).unwrap();
        assert_eq!(body.len(), 11);
        assert_eq!(read_capped(io::repeat(b'x'), 0).unwrap(), b"x");
        assert_eq!(read_capped(&b"short"[..], 100_000).unwrap(), b"short");
    }

    /// The ceilings the typed reader enforces are the ones the contract schema publishes (and
    /// its messages state): a contract the schema accepts is never refused by the reader.
    #[test]
    fn the_ceilings_are_the_contract_schemas() {
        let schema: serde_json::Value = serde_json::from_str(crate::spec::CONTRACT_SCHEMA).unwrap();
        let limits = &schema["properties"]["limits"]["properties"];
        assert_eq!(
            limits["max_bytes"]["maximum"].as_u64(),
            Some(Limits::MAX_BYTES_CEILING as u64)
        );
        assert_eq!(
            limits["max_depth"]["maximum"].as_u64(),
            Some(Limits::MAX_DEPTH_CEILING as u64)
        );
    }

    /// What the operator is told names the limit and the size, or the status.
    #[test]
    fn the_operator_message_names_the_size_and_the_limit() {
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::body(b"123456789"),
        )
        .unwrap_err();
        assert_eq!(
            fault.message,
            "the response is at least 9 bytes; the contract allows at most 8"
        );
        let fault = check(
            &limits(),
            &UpstreamErrors::default(),
            &Response::body(b"").with_status(429),
        )
        .unwrap_err();
        assert_eq!(
            fault.message,
            "the upstream answered with status 429, which the contract treats as unavailable"
        );
    }
}
