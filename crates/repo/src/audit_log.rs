//! The audit log `--audit FILE` names, shared by `toolgate check` and `toolgate mcp-proxy`.

use std::fs::{self, OpenOptions};
use std::path::Path;

use toolgate_gate::JsonLinesSink;

use crate::error::UsageError;

/// Opens (creating it if needed) the audit log `--audit FILE` names, for appending: several
/// processes may share one log, and each line is written whole.
pub fn open_audit_log(path: &Path) -> Result<JsonLinesSink<fs::File>, UsageError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(JsonLinesSink::new)
        .map_err(|error| UsageError::io(path, "open the audit log for appending", &error))
}
