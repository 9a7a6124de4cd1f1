//! The gate's vocabulary: the layers, the agent-visible failure codes, and what a decision can be.
//!
//! A leaf module: every stage, the decision, the operator record and the audit event speak these
//! words, and none of them needs anything else from the others to do so.

use std::fmt;

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
/// the layer is [`Decision::rule`](crate::Decision::rule).
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

    /// The code the agent sees: `None` for an admitted success.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Outcome::Admitted => None,
            Outcome::AdmittedFailure { code, .. } => Some(*code),
            Outcome::Rejected(rejection) => Some(rejection.code),
        }
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
