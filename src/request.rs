//! Request files: the outstanding request a response is checked against, as JSON.
//!
//! `{"request_id": "...", "now": "2026-11-29T12:00:00Z", "context": {...}, "upstream": "...",
//! "upstream_status": 200}`; only `request_id` is required.

use std::path::Path;
use std::time::SystemTime;

use serde::Deserialize;
use serde_json::{Map, Value};
use toolgate_gate::Request;

use crate::error::UsageError;

/// The outstanding request, as a connector owner writes it down to reproduce a decision.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// The id the adapter minted.
    pub request_id: String,
    /// The decision time, RFC 3339; the current time when absent.
    #[serde(default)]
    pub now: Option<String>,
    /// Trusted context values (project, tenant, tables) the contract's rules read.
    #[serde(default)]
    pub context: Map<String, Value>,
    /// The upstream endpoint or command, for the audit event.
    #[serde(default)]
    pub upstream: Option<String>,
    /// The upstream status the adapter saw.
    #[serde(default)]
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

    /// The gate's request.
    pub fn to_request(&self) -> Request {
        let request = Request::new(&self.request_id).with_context_map(self.context.clone());
        match &self.upstream {
            Some(upstream) => request.with_upstream(upstream),
            None => request,
        }
    }
}

/// Reads and checks a request file, naming the file, line and column of any problem.
pub fn read_request_file(path: &Path) -> Result<RequestSpec, UsageError> {
    let bytes = std::fs::read(path)
        .map_err(|error| UsageError::io(path, "read the request file", &error))?;
    let spec: RequestSpec = serde_json::from_slice(&bytes).map_err(|error| {
        UsageError::new(format!(
            "{}: not a request file: {error} (expected {{\"request_id\": ..., \"now\": RFC 3339, \"context\": {{...}}}})",
            path.display()
        ))
    })?;
    if let Some(now) = &spec.now {
        parse_time(now)
            .map_err(|error| UsageError::new(format!("{}: `now`: {error}", path.display())))?;
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
