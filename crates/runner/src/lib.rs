//! The contract suite: every fixture against every contract version it names, and the suite-wide
//! checks (structure, contracts, coverage, the lint, the mutant trials, stale snapshots, the
//! lock), run through the gate; snapshots in insta's format; and the reports (human, JSON,
//! JUnit, markdown, GitHub workflow commands). `toolgate test` and `toolgate mutate` run here.
//!
//! Architecture invariant: a case's result is derived from the gate's own decision on the
//! fixture's bytes; a snapshot is compared, never trusted, and leakage is checked apart from it.
//!
//! API boundary: the re-exports below; every module is private.

mod mutate;
mod parallel;
mod progress;
mod report;
mod snapshot;
mod suite;
mod test;

pub use mutate::{MutateConfig, run as mutate};
pub use progress::ProgressMode;
pub use report::Summary;
pub use report::json::SCHEMA as REPORT_SCHEMA;
pub use snapshot::{SnapshotMode, references_file};
pub use suite::{Case, CheckKind, RunContext, Scope, Suite, SuiteCheck};
pub use test::{ReportFile, ReportFormat, TestConfig, run as test};
pub use toolgate_repo::running_in_ci;
