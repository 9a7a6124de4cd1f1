//! The toolgate harness and command line: loading contracts from a repository, `toolgate check`,
//! and the fixture runner. The gate itself is the `toolgate-gate` crate; this crate only drives it
//! through its public API, exactly as a production adapter would.

pub mod acceptance;
pub mod admission;
pub mod audit_log;
pub mod bump;
pub mod check;
pub mod cli;
pub mod confine;
pub mod diff;
pub mod error;
pub mod fixture;
pub mod invariants;
pub mod leak;
pub mod lint;
pub mod lock;
pub mod markdown;
pub mod mcp;
pub mod model;
pub mod mutants;
pub mod mutate;
pub mod repo;
pub mod report;
pub mod request;
pub mod save_fixture;
pub mod scale;
pub mod schema_cmd;
pub mod sidecar;
pub mod snapshot;
pub mod status;
pub mod suite;
pub mod test_cmd;
pub mod verdict;

pub use error::UsageError;
pub use status::Status;
