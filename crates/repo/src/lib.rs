//! The repository a toolgate harness works in: `contracts/`, `fixtures/`, `snapshots/` and the
//! lock, every read and write confined to its root; fixtures, sidecars and request files parsed
//! into types; acceptance lists; one fixture through the gate's public API; the leak oracle and
//! the invariants every decision must keep; and the vocabulary every verb shares (a [`Status`],
//! a [`UsageError`], a [`Choice`], the JSON report convention).
//!
//! Architecture invariant: this crate knows nothing of the engines above it (lint, mutants, the
//! differ, the suite runner, the proxy) or of the command line; the compiler enforces it, since
//! none of them is a dependency.
//!
//! API boundary: the re-exports below. Modules are private except five namespaces read by their
//! module's name (`json_report::render`, `lines::read_line`, `lock::check`,
//! `sarif::Place`, `text::markdown::fenced`).

mod acceptance;
mod admission;
pub mod bundle;
mod case_result;
mod choice;
mod ci;
mod confine;
mod error;
mod fixture;
mod invariants;
pub mod json_report;
mod leak;
pub mod lines;
pub mod lock;
mod output_file;
mod repository;
mod request;
pub mod sarif;
mod save_fixture;
mod sidecar;
mod status;
pub mod text;

pub use acceptance::load as load_acceptances;
pub use acceptance::{Acceptance, Acceptances, Checked, EntryFile, check_pointer};
pub use admission::{
    Admitted, Prepared, RequestFiles, admit_fixture, prepare, reproduce_command, shell_command,
};
pub use case_result::{CaseResult, Problem, ProblemKind};
pub use choice::Choice;
pub use ci::running_in_ci;
pub use confine::{Entry, EntryKind, MAX_FILE_BYTES, RepoError, RepoProblem, RepoRoot};
pub use error::{FileError, LoadError, UsageError, plural, write_output};
pub use fixture::{
    DEFAULT_REQUEST_FILE, Discovery, FIXTURES_DIR, Fixture, FixtureClass, MAX_CASE_NAME,
    RootDiscovery, SIDECAR_SUFFIX, SURVIVORS_FILE, StructureProblem, discover_root, discover_tool,
    is_case_name,
};
pub use invariants::{agent_view_problems, reference_disagreements};
pub use leak::{allowed_strings, leaks, raw_strings};
pub use output_file::{OutputMode, create_output_folder, open_output_file};
pub use repository::{
    ARGUMENTS_SUFFIX, CONTRACTS_DIR, LINT_FILE, PIN_FILE, Repository, VersionDir, VersionFiles,
    parse_version,
};
pub use request::{
    RequestSpec, SCHEMA as REQUEST_SCHEMA, parse_request_file, parse_time, read_request_file,
};
pub use save_fixture::{
    FixtureTarget, Observed, fits as fits_class, parse_target, save as save_fixture,
};
pub use sidecar::{
    Expectation, Expectations, SCHEMA as SIDECAR_SCHEMA, Sidecar, check_versions, retry_words,
    with_version_expectation, yaml_string,
};
pub use status::Status;
