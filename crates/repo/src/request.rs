//! Request files: the outstanding request a response is checked against, as JSON.
//!
//! `{"request_id": "...", "now": "2026-11-29T12:00:00Z", "context": {...}, "upstream": "...",
//! "upstream_status": 200}`; only `request_id` is required.

use std::io::Read;
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolgate_gate::{Contract, Request};

use crate::confine::MAX_FILE_BYTES;
use crate::error::UsageError;

/// The request file's JSON Schema, published by `toolgate schema request`; tests hold it to
/// [`parse_request_file`].
pub const SCHEMA: &str = include_str!("../schemas/request.schema.json");

/// The outstanding request, as a connector owner writes it down to reproduce a decision.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// The id the adapter minted.
    pub request_id: String,
    /// The decision time, RFC 3339; the current time when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    /// Trusted context values (project, tenant, tables) the contract's rules read.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// The upstream endpoint or command, for the audit event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// The upstream status the adapter saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
}

impl RequestSpec {
    /// Replaces the fields given (by command-line flags or a fixture's sidecar).
    pub fn override_with(
        &mut self,
        request_id: Option<&str>,
        now: Option<&str>,
        upstream_status: Option<u16>,
    ) {
        if let Some(id) = request_id {
            self.request_id = id.to_owned();
        }
        if let Some(now) = now {
            self.now = Some(now.to_owned());
        }
        if let Some(status) = upstream_status {
            self.upstream_status = Some(status);
        }
    }

    /// The context keys `contract`'s rules read that this request lacks.
    pub fn missing_context<'c>(&self, contract: &'c Contract) -> Vec<&'c str> {
        contract
            .required_context()
            .into_iter()
            .filter(|key| !self.context.contains_key(*key))
            .collect()
    }

    /// The gate's request.
    pub fn to_request(&self) -> Request {
        let request = Request::new(&self.request_id).with_context_map(self.context.clone());
        match &self.upstream {
            Some(upstream) => request.with_upstream(upstream.as_str()),
            None => request,
        }
    }
}

/// Reads and checks a request file named on the command line: a regular file of at most
/// [`MAX_FILE_BYTES`], naming the file, line and column of any problem.
pub fn read_request_file(path: &Path) -> Result<RequestSpec, UsageError> {
    let too_large = || {
        UsageError::new(format!(
            "{}: larger than {MAX_FILE_BYTES} bytes; a request file is never this large",
            path.display()
        ))
    };
    // Checked before opening: opening a FIFO waits for a writer that may never come.
    let metadata = std::fs::metadata(path)
        .map_err(|error| UsageError::io(path, "read the request file", &error))?;
    if !metadata.is_file() {
        return Err(UsageError::new(format!(
            "{}: not a regular file; pass the request as a JSON file",
            path.display()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|error| UsageError::io(path, "read the request file", &error))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    parse_request_file(&bytes, path)
}

/// Parses and checks the bytes of a request file; `shown` names it in errors.
pub fn parse_request_file(bytes: &[u8], shown: &Path) -> Result<RequestSpec, UsageError> {
    // serde would read a struct from an array too; a request file is an object.
    if serde_json::from_slice::<Value>(bytes).is_ok_and(|value| !value.is_object()) {
        return Err(UsageError::new(format!(
            "{}: not a request file: expected a JSON object {{\"request_id\": ..., \"now\": RFC 3339, \"context\": {{...}}}}",
            shown.display()
        )));
    }
    let spec: RequestSpec = serde_json::from_slice(bytes).map_err(|error| {
        UsageError::new(format!(
            "{}: not a request file: {error} (expected {{\"request_id\": ..., \"now\": RFC 3339, \"context\": {{...}}}})",
            shown.display()
        ))
    })?;
    // Read as strictly as a response: a duplicate key in trusted context is refused, not
    // resolved by whichever copy a parser happens to keep.
    toolgate_gate::internals::parse_strict_json(bytes, 32).map_err(|message| {
        UsageError::new(format!("{}: not strict JSON: {message}", shown.display()))
    })?;
    if let Some(now) = &spec.now {
        parse_time(now)
            .map_err(|error| UsageError::new(format!("{}: `now`: {error}", shown.display())))?;
    }
    Ok(spec)
}

/// Parses an RFC 3339 timestamp exactly as the gate's freshness rules do.
pub fn parse_time(text: &str) -> Result<SystemTime, String> {
    toolgate_gate::internals::parse_timestamp(text).map_err(|reason| {
        format!("{text:?} is not an RFC 3339 timestamp ({reason}); write e.g. 2026-11-29T12:00:00Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_strict_rfc3339() {
        assert!(parse_time("2026-11-29T12:00:00Z").is_ok());
        assert!(parse_time("2026-11-29T12:00:00.5+02:00").is_ok());
        for bad in [
            "2026-11-29 12:00:00Z",
            "2026-02-30T12:00:00Z",
            "now",
            "2026-11-29T12:00:00",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }
}
