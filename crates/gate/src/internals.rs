//! Not part of the supported API: what the toolgate harness, its benchmarks, the conformance
//! tests and the fuzz targets need from inside the gate. Hidden from the documentation and free to
//! change in any release; a production adapter needs none of it.
//!
//! Kept in one place, as insta keeps its `internals`, so the public surface stays the handful of
//! types an adapter uses, and everything else is visibly off limits.

pub mod stages;

pub use crate::schema::{DIALECT, compile_options};
pub use crate::timestamp::parse_timestamp;
pub use crate::yaml::{YamlError, read_strict_yaml};

use crate::outcome::ErrorCode;

/// The exact bytes of the fixed failure envelope, so a harness can compare an agent's view
/// with them.
pub fn failure_envelope(tool: &str, request_id: &str, code: ErrorCode, retryable: bool) -> Vec<u8> {
    crate::wire::failure(tool, request_id, code, retryable).into_vec()
}
