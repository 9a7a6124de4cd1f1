//! What `admit` answers: the outcome, the agent-visible bytes, the operator record, the audit event.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::audit::{AuditEvent, Sha256Digest};
use crate::contract::PendingExplanation;
use crate::fault::Fault;
use crate::operator::OperatorRecord;

/// The finite set of failure codes an agent can see. Nothing else ever appears in the `code`
/// member of an agent-visible failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The upstream answered, validly, that the thing asked about does not exist.
    NotFound,
    /// The upstream could not be reached or said it was unavailable.
    UpstreamUnavailable,
    /// The bytes did not meet the contract (any gate layer said no).
    InvalidResponse,
}

impl ErrorCode {
    /// Every code, in a stable order.
    pub const ALL: [ErrorCode; 3] = [
        ErrorCode::NotFound,
        ErrorCode::UpstreamUnavailable,
        ErrorCode::InvalidResponse,
    ];

    /// The wire spelling, e.g. `INVALID_RESPONSE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            ErrorCode::InvalidResponse => "INVALID_RESPONSE",
        }
    }

    /// Parses the wire spelling.
    pub fn from_wire(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The gate's layers, in the order they run (SPEC G1–G6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// G1: byte limit, upstream status.
    Transport,
    /// G2: strict JSON parse (duplicates, depth, encoding) or the text pattern.
    Parse,
    /// G3: JSON Schema 2020-12 with format assertions.
    Schema,
    /// G4: tool and request id against the outstanding request.
    Correlation,
    /// G5: binding, freshness, membership and lookup rules against trusted context.
    Semantic,
    /// G6: building the agent-visible object.
    Projection,
}

impl Layer {
    /// Every layer, in pipeline order.
    pub const ALL: [Layer; 6] = [
        Layer::Transport,
        Layer::Parse,
        Layer::Schema,
        Layer::Correlation,
        Layer::Semantic,
        Layer::Projection,
    ];

    /// The lowercase name used in fixtures, audit events and operator records.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Transport => "transport",
            Layer::Parse => "parse",
            Layer::Schema => "schema",
            Layer::Correlation => "correlation",
            Layer::Semantic => "semantic",
            Layer::Projection => "projection",
        }
    }

    /// Parses the lowercase name.
    pub fn from_name(name: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|layer| layer.as_str() == name)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the gate refused: the layer, and the code and retryable flag the agent sees. The rule within
/// the layer is [`Decision::rule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    pub(crate) layer: Layer,
    pub(crate) code: ErrorCode,
    pub(crate) retryable: bool,
}

impl Rejection {
    /// The layer that refused.
    pub fn layer(&self) -> Layer {
        self.layer
    }

    /// The code the agent sees.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// Whether the agent is told that asking again may help.
    pub fn retryable(&self) -> bool {
        self.retryable
    }
}

/// The three things a decision can be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The response met the contract; the agent sees the projected success (or, for an action
    /// contract, the executor receives the projected call).
    Admitted,
    /// The upstream answered with a failure the contract allows (e.g. `NOT_FOUND`); the agent sees
    /// that failure, rebuilt by the gate.
    AdmittedFailure {
        /// The upstream's code, one of the finite set.
        code: ErrorCode,
        /// The contract's retry verdict for that code (never the upstream's claim).
        retryable: bool,
    },
    /// The gate refused; the agent sees the fixed failure envelope.
    Rejected(Rejection),
}

impl Outcome {
    /// `admitted`, `admitted_failure` or `rejected`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Admitted => "admitted",
            Outcome::AdmittedFailure { .. } => "admitted_failure",
            Outcome::Rejected(_) => "rejected",
        }
    }
}

/// Everything one call to [`Contract::admit`](crate::Contract::admit) decided.
///
/// The agent-visible bytes are the only part meant for the agent. The operator record and audit
/// event are for people and logs, never for a model's context. Both are built when first asked
/// for: a schema rejection is decided by the fast `is_valid` path, and the validator's detailed
/// errors are only collected if someone reads the record.
#[derive(Debug, Clone)]
pub struct Decision {
    pub(crate) outcome: Outcome,
    pub(crate) agent_bytes: Vec<u8>,
    pub(crate) facts: Facts,
    pub(crate) detail: Option<Detail>,
    pub(crate) audit: OnceLock<AuditEvent>,
}

/// What the decision knew about the call, for the audit event and the operator record.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub time: SystemTime,
    pub request_id: Arc<str>,
    pub tool: Arc<str>,
    pub contract_version: Arc<str>,
    pub upstream: Option<Arc<str>>,
    pub upstream_status: Option<u16>,
    pub shape: Option<Arc<str>>,
    pub raw: RawEvidence,
}

/// What the audit event and the operator record say about the raw bytes: their length and
/// SHA-256. The digest is computed when first needed; until then a small body is kept (copying
/// 64 KiB costs a fraction of hashing it), and a larger one is hashed at once so a decision never
/// holds a large response.
#[derive(Debug, Clone)]
pub(crate) struct RawEvidence {
    len: usize,
    kept: Option<Box<[u8]>>,
    digest: OnceLock<Sha256Digest>,
}

impl RawEvidence {
    const KEEP_AT_MOST: usize = 64 * 1024;

    pub fn new(raw: &[u8]) -> RawEvidence {
        if raw.len() <= RawEvidence::KEEP_AT_MOST {
            RawEvidence {
                len: raw.len(),
                kept: Some(raw.into()),
                digest: OnceLock::new(),
            }
        } else {
            RawEvidence {
                len: raw.len(),
                kept: None,
                digest: OnceLock::from(Sha256Digest::of(raw)),
            }
        }
    }

    /// Evidence whose digest is already known.
    pub fn hashed(len: usize, digest: Sha256Digest) -> RawEvidence {
        RawEvidence {
            len,
            kept: None,
            digest: OnceLock::from(digest),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn digest(&self) -> Sha256Digest {
        *self
            .digest
            .get_or_init(|| Sha256Digest::of(self.kept.as_deref().unwrap_or_default()))
    }
}

/// A rejection's operator detail, turned into an [`OperatorRecord`] only when someone reads it.
#[derive(Debug, Clone)]
pub(crate) struct Detail {
    /// The rule, when it is known without explaining the rejection (every layer but the schema's).
    pub known_rule: Option<Cow<'static, str>>,
    pub explanation: Explanation,
    pub record: OnceLock<Box<OperatorRecord>>,
}

/// What explains a rejection: a fault a stage already described, or a document the schema
/// refused, whose errors the validator collects on demand.
#[derive(Debug, Clone)]
pub(crate) enum Explanation {
    Fault(Fault),
    Schema(PendingExplanation),
}

impl Detail {
    pub fn new(explanation: Explanation) -> Detail {
        let known_rule = match &explanation {
            Explanation::Fault(fault) => Some(fault.rule.clone()),
            Explanation::Schema(_) => None,
        };
        Detail {
            known_rule,
            explanation,
            record: OnceLock::new(),
        }
    }
}

impl Decision {
    /// What happened.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The exact bytes the agent may see: one compact JSON object, no trailing newline. Either the
    /// projected success, or the fixed failure envelope.
    pub fn agent_bytes(&self) -> &[u8] {
        &self.agent_bytes
    }

    /// The projected output only when the outcome is [`Outcome::Admitted`]. For an action contract
    /// this is the exact call to hand to the executor; `None` means make zero calls.
    pub fn admitted_output(&self) -> Option<&[u8]> {
        matches!(self.outcome, Outcome::Admitted).then_some(self.agent_bytes.as_slice())
    }

    /// Whether the gate admitted the bytes (as a success or as a contract-valid failure).
    pub fn is_admitted(&self) -> bool {
        !matches!(self.outcome, Outcome::Rejected(_))
    }

    /// The rejection, if the gate refused.
    pub fn rejection(&self) -> Option<&Rejection> {
        match &self.outcome {
            Outcome::Rejected(rejection) => Some(rejection),
            _ => None,
        }
    }

    /// The rule within the rejecting layer: a limit (`max_bytes`), a parse check
    /// (`duplicate_member`), a schema keyword (`additionalProperties`), a correlation member
    /// (`request_id`) or the contract's own name for a semantic rule (`project_binding`).
    /// For a schema rejection this builds the operator record.
    pub fn rule(&self) -> Option<&str> {
        match self.detail.as_ref()?.known_rule.as_deref() {
            Some(rule) => Some(rule),
            None => self.operator_record().map(OperatorRecord::rule),
        }
    }

    /// Whether the agent is told that asking again may help (false for a success).
    pub fn retryable(&self) -> bool {
        match &self.outcome {
            Outcome::Admitted => false,
            Outcome::AdmittedFailure { retryable, .. } => *retryable,
            Outcome::Rejected(rejection) => rejection.retryable,
        }
    }

    /// The shape that admitted the bytes: `current`, or a legacy shape's name. `None` on rejection.
    pub fn shape(&self) -> Option<&str> {
        self.facts.shape.as_deref()
    }

    /// The detailed record for the operator, present on every rejection.
    pub fn operator_record(&self) -> Option<&OperatorRecord> {
        let detail = self.detail.as_ref()?;
        let record = detail.record.get_or_init(|| {
            let fault = match &detail.explanation {
                Explanation::Fault(fault) => fault.clone(),
                Explanation::Schema(pending) => pending.explain(),
            };
            Box::new(OperatorRecord::build(fault, self.retryable(), &self.facts))
        });
        Some(record)
    }

    /// The audit event of this decision (every decision has one).
    pub fn audit_event(&self) -> &AuditEvent {
        self.audit.get_or_init(|| {
            // The schema keyword is operator detail: the audit event names the layer and code
            // (and the rule when it is known without explaining the rejection).
            let rule = self
                .detail
                .as_ref()
                .and_then(|detail| detail.known_rule.as_deref().map(str::to_owned));
            AuditEvent::new(
                &self.facts,
                &self.outcome,
                rule,
                Sha256Digest::of(&self.agent_bytes),
            )
        })
    }
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl serde::Serialize for Layer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
