//! What every production front shares around the gate's decision: the audit log as evidence (a
//! hash chain, optionally signed, verified by `toolgate audit verify`) and the rollout rules
//! (`--shadow` pairs, observe mode refused in CI), read one way by `toolgate mcp-proxy`,
//! `toolgate serve`, `toolgate check` and the Python binding.
//!
//! A **front** is toolgate's own production runner around the gate (the proxy, `serve`, the
//! binding); an **adapter** is a user's code calling the gate directly. This crate is where the
//! fronts' common tail lands as it is drawn out of them (issue 65: one `Front::decide`).
//!
//! Architecture invariant: it knows the gate and the harness's repository (contracts are loaded
//! from it), never the command line or a transport.

mod audit_log;
mod rollout;

pub use audit_log::{
    AuditLogVerifier, AuditProblem, ChainSummary, ChainedAuditLog, Verified, chained_audit_stream,
    generate_key_pair, open_audit, open_audit_log, read_verifying_key, verify_audit_log,
};
pub use rollout::{ShadowPair, ShadowPlan, refuse_observe_in_ci};
