//! `toolgate schema KIND`: the JSON Schema of each file toolgate reads or writes, for editors
//! (`yaml-language-server`), validators (check-jsonschema) and consumers of the JSON reports.
//! Each is the one the code holds itself to: the contract schema is the one the gate validates
//! every `contract.yaml` against, the sidecar schema the one the sidecar reader does, and tests
//! hold the others to their readers and to every report the tests write. Each lives beside its
//! reader or writer; `schemas/` holds the published copies.

use std::io::Write;

use toolgate_repo::Status;
use toolgate_repo::{UsageError, write_output};

/// `toolgate schema`'s argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SchemaKind {
    /// `toolgate test --format json`.
    Report,
    /// `contracts/<tool>/v<N>/contract.yaml`.
    Contract,
    /// `fixtures/<tool>/<class>/<case>.expect.yaml`.
    Sidecar,
    /// `fixtures/<tool>/request.json` and `toolgate check --request FILE`.
    Request,
    /// `toolgate diff --format json`.
    DiffReport,
    /// `toolgate lint --format json`.
    LintReport,
    /// `toolgate mutate --format json`.
    MutateReport,
    /// `fixtures/<tool>/survivors.yaml`.
    Survivors,
    /// `contracts/<tool>/lint.yaml`.
    LintAcceptances,
    /// `toolgate mcp-proxy --auth FILE`.
    Auth,
    /// `contracts/<tool>/upstream.pin.json`.
    Pin,
}

/// `toolgate schema`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SchemaOptions {
    /// Which file's schema to print.
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

/// The schema's text.
pub(crate) fn text(kind: SchemaKind) -> &'static str {
    match kind {
        SchemaKind::Report => toolgate_runner::REPORT_SCHEMA,
        SchemaKind::Contract => toolgate_gate::internals::CONTRACT_SCHEMA,
        SchemaKind::Sidecar => toolgate_repo::SIDECAR_SCHEMA,
        SchemaKind::Request => toolgate_repo::REQUEST_SCHEMA,
        SchemaKind::DiffReport => toolgate_diff::DIFF_REPORT_SCHEMA,
        SchemaKind::LintReport => toolgate_analyze::lint::LINT_REPORT_SCHEMA,
        SchemaKind::MutateReport => toolgate_analyze::mutants::MUTATE_REPORT_SCHEMA,
        SchemaKind::Survivors => toolgate_analyze::mutants::SURVIVORS_SCHEMA,
        SchemaKind::LintAcceptances => toolgate_analyze::lint::LINT_ACCEPTANCES_SCHEMA,
        SchemaKind::Auth => toolgate_mcp::AUTH_SCHEMA,
        SchemaKind::Pin => toolgate_mcp::PIN_SCHEMA,
    }
}

/// Prints the schema.
pub(crate) fn run(options: &SchemaOptions, out: &mut impl Write) -> Result<Status, UsageError> {
    write_output(out, text(options.kind).as_bytes())?;
    Ok(Status::Passed)
}
