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

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod audit;
mod contract;
mod correlation;
mod decision;
mod error;
mod fault;
mod operator;
mod parse;
mod pointer;
mod projection;
mod request;
mod retry;
mod schema;
mod semantic;
mod source;
mod spec;
#[doc(hidden)]
pub mod stages;
mod text;
mod timestamp;
mod transport;
mod wire;

pub use audit::{AuditEvent, AuditSink, JsonLinesSink, Sha256Digest};
pub use contract::{CURRENT_SHAPE, Contract, GATE_VERSION};
pub use decision::{Decision, ErrorCode, Layer, Outcome, Rejection};
pub use error::{CompileError, CompileErrors};
pub use operator::{Finding, OperatorRecord};
pub use request::Request;
pub use retry::RetryPolicy;
pub use schema::{DIALECT, compile_options};
pub use semantic::parse_timestamp;
pub use source::ContractSource;
pub use spec::{CONTRACT_FILE, Direction, YamlError, read_strict_yaml};
pub use transport::{Response, read_capped};
pub use wire::failure_envelope;
