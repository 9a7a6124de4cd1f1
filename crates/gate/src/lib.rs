//! The toolgate gate: nothing reaches an agent that a contract did not promise.
//!
//! A tool adapter hands the gate the raw bytes a tool returned (or the raw JSON a model proposed
//! as an action) and the outstanding request. The gate runs, in this order and never another:
//!
//! 1. **transport**: the adapter's status, and the contract's byte limit;
//! 2. **parse**: strict RFC 8259, refusing duplicate member names (also when equal only after
//!    unescaping), nesting past the contract's limit, BOMs, invalid UTF-8, lone surrogates,
//!    out-of-range numbers (or, for text tools, an anchored pattern over the whole output);
//! 3. **schema**: JSON Schema Draft 2020-12 with format assertions on, compiled once;
//! 4. **correlation**: the tool and the request id against the outstanding request;
//! 5. **semantic**: binding, freshness, membership and lookup rules against trusted context;
//! 6. **projection**: a new object with exactly the promised fields, serialized canonically.
//!
//! The answer is a [`Decision`]: the exact agent-visible bytes (the projection, or one fixed
//! failure envelope with a finite [`ErrorCode`] and a retryable flag), an [`OperatorRecord`] on
//! rejection, and an [`AuditEvent`] always.
//!
//! ```
//! use std::time::SystemTime;
//! use toolgate_gate::{Contract, ContractSource, Outcome, Request};
//!
//! let source = ContractSource::new(r#"
//! tool: review_status
//! version: 1
//! direction: result
//! shape:
//!   schema: review.schema.json
//!   correlation: { tool: /tool, request_id: /request_id }
//!   fields:
//!     - { name: decision, from: /decision }
//! agent_schema: agent.schema.json
//! "#)
//! .with_schema("review.schema.json", r#"{
//!     "type": "object", "additionalProperties": false,
//!     "required": ["tool", "request_id", "decision"],
//!     "properties": {
//!         "tool": {"const": "review_status"},
//!         "request_id": {"type": "string"},
//!         "decision": {"enum": ["approved", "rejected", "pending"]}
//!     }
//! }"#)
//! .with_schema("agent.schema.json", r#"{"type": "object"}"#);
//! let contract = Contract::compile(&source).expect("a valid contract");
//!
//! let request = Request::new("req.J7q94MkP");
//! let raw = br#"{"tool":"review_status","request_id":"req.J7q94MkP","decision":"approved","admin_override":true}"#;
//! let decision = contract.admit(raw, &request, SystemTime::now());
//!
//! assert!(matches!(decision.outcome(), Outcome::Rejected(_)));
//! assert_eq!(
//!     decision.agent_bytes(),
//!     br#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"failure","error":{"code":"INVALID_RESPONSE","retryable":false}}"#
//! );
//! assert_eq!(decision.operator_record().unwrap().rule(), "additionalProperties");
//! ```

// Without the `_internals` feature (an adapter's build), what only `internals` reaches (each
// stage alone, the reference validator, the document from a `Value`) is compiled but unused.
#![cfg_attr(not(feature = "_internals"), allow(dead_code, unreachable_pub))]

// In pipeline order, then what the decision is made of, then the contract around them. The
// modules import each other without a cycle (`tests/it/architecture.rs` in the workspace checks it).
mod correlation;
mod document;
mod parse;
mod projection;
mod retention;
mod schema;
mod semantic;
mod text;
mod transport;
mod upstream;
mod wire;

mod audit;
mod decision;
mod facts;
mod fault;
mod operator;
mod outcome;
mod sanitize;
mod sink;

mod contract;
mod error;
mod pointer;
mod request;
mod retry;
mod shape;
mod source;
mod spec;
mod timestamp;
mod tolerate;
mod yaml;

#[cfg(feature = "_internals")]
#[doc(hidden)]
pub mod internals;

pub use audit::AuditEvent;
pub use contract::Contract;
pub use decision::Decision;
pub use error::{CONTRACT_FILE, CompileError, CompileErrors};
pub use facts::{
    CallIds, GATE_VERSION, MAX_RECORDED_TEXT, Sha256Digest, ShadowOutcome, bounded_text,
};
pub use fault::Finding;
pub use operator::OperatorRecord;
pub use outcome::{ErrorCode, Layer, Outcome, Rejection};
pub use request::Request;
pub use retention::{
    Captured, REDACTED, RETAINED_FORMAT, Retained, RetentionPolicy, SecretContext, ShortSecretKey,
};
pub use retry::RetryPolicy;
pub use shape::CURRENT_SHAPE;
pub use sink::{AuditSink, JsonLinesSink};
pub use source::ContractSource;
pub use spec::Direction;
pub use tolerate::Tolerated;
pub use transport::{Response, read_capped};
