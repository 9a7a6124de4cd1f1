//! toolgate's production front: what every front does around the gate's decision, opened from
//! one configuration and done in one place.
//!
//! A **front** is toolgate's own production runner around the gate: `toolgate mcp-proxy`,
//! `toolgate serve` (here, [`serve`]), the Python binding, and `toolgate check` when it audits.
//! An **adapter** is a user's code calling the gate directly. Each front opens its parts with
//! [`Front::open`] from a [`FrontConfig`] (the binding assembles its [`Steps`] from a call's
//! arguments instead), and makes every decision whole with [`Steps::decide`]: shadowed,
//! marked observed, counted, traced, logged, audited, retained, in that order.
//!
//! Also here: the audit log as evidence (a hash chain, optionally signed, verified by
//! `toolgate audit verify`) and the rollout rules (`--shadow` pairs, observe mode refused in CI).
//!
//! Architecture invariant: it knows the gate, the harness's repository (contracts are loaded from
//! it), the retention store and telemetry, never the command line or the MCP transport.

mod audit_log;
mod decide;
mod front;
mod log;
mod rollout;
pub mod serve;
mod span;

pub use audit_log::{
    AuditLogVerifier, AuditProblem, ChainSummary, ChainedAuditLog, MAX_FLUSH_INTERVAL, Verified,
    chained_audit_stream, generate_key_pair, open_audit, open_audit_log, read_verifying_key,
    verify_audit_log,
};
pub use decide::{CallRecord, Gated, Steps};
pub use front::{Front, FrontConfig, Runner};
pub use log::{FrontLog, StderrLog, stderr_line};
pub use rollout::{ShadowPair, ShadowPlan, refuse_observe_in_ci};
#[cfg(feature = "otlp")]
pub use span::TracingConfig;
pub use span::{CallSpan, Tracing};
pub use toolgate_telemetry::CallAttributes;
