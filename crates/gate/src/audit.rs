//! Audit events: one JSON line per decision, accepted or not, and a sink that keeps lines whole.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::facts::{Facts, GATE_VERSION, Sha256Digest};
use crate::outcome::{ErrorCode, Layer, Outcome};
use crate::timestamp;

/// The audit record of one decision. Serialize it with [`AuditEvent::to_json_line`] or hand it
/// to an [`AuditSink`].
///
/// It carries digests, not content: the raw bytes and the agent-visible bytes are identified by
/// their SHA-256, so the log can prove what the agent saw without holding attacker text.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    #[serde(serialize_with = "rfc3339")]
    pub(crate) time: SystemTime,
    pub(crate) request_id: Arc<str>,
    pub(crate) tool: Arc<str>,
    pub(crate) contract_version: Arc<str>,
    pub(crate) gate_version: &'static str,
    pub(crate) upstream: Option<Arc<str>>,
    pub(crate) outcome: &'static str,
    /// `current`, or the name of the legacy shape that admitted the bytes.
    pub(crate) shape: Option<Arc<str>>,
    pub(crate) layer: Option<Layer>,
    /// The rejecting rule, for layers whose rule is known without explaining the rejection
    /// (everything but a schema keyword, which the operator record carries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rule: Option<String>,
    pub(crate) code: Option<ErrorCode>,
    pub(crate) retryable: bool,
    pub(crate) raw_len: usize,
    pub(crate) raw_sha256: Sha256Digest,
    pub(crate) agent_sha256: Sha256Digest,
}

fn rfc3339<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    let formatted = match timestamp::format_utc(timestamp::unix_nanos(*time)) {
        Some(formatted) => formatted,
        // Outside the years 0 to 9999 the time crate says why it cannot write RFC 3339.
        None => OffsetDateTime::from(*time)
            .format(&Rfc3339)
            .map_err(serde::ser::Error::custom)?,
    };
    serializer.serialize_str(&formatted)
}

impl AuditEvent {
    pub(crate) fn new(
        facts: &Facts,
        outcome: &Outcome,
        rule: Option<String>,
        agent_sha256: Sha256Digest,
    ) -> AuditEvent {
        let (layer, code, retryable) = match outcome {
            Outcome::Admitted => (None, None, false),
            Outcome::AdmittedFailure { code, retryable } => (None, Some(*code), *retryable),
            Outcome::Rejected(rejection) => (
                Some(rejection.layer),
                Some(rejection.code),
                rejection.retryable,
            ),
        };
        AuditEvent {
            time: facts.time,
            request_id: facts.request_id.clone(),
            tool: Arc::clone(&facts.tool),
            contract_version: Arc::clone(&facts.contract_version),
            gate_version: GATE_VERSION,
            upstream: facts.upstream.clone(),
            outcome: outcome.as_str(),
            shape: facts.shape.clone(),
            layer,
            rule,
            code,
            retryable,
            raw_len: facts.raw.len(),
            raw_sha256: facts.raw.digest(),
            agent_sha256,
        }
    }

    /// The event as one JSON object followed by `\n`.
    pub fn to_json_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("an audit event always serializes");
        line.push(b'\n');
        line
    }

    /// The outstanding request's id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// `admitted`, `admitted_failure` or `rejected`.
    pub fn outcome(&self) -> &str {
        self.outcome
    }

    /// Digest of the raw bytes the gate was given.
    pub fn raw_sha256(&self) -> Sha256Digest {
        self.raw_sha256
    }

    /// Digest of the bytes the agent was given.
    pub fn agent_sha256(&self) -> Sha256Digest {
        self.agent_sha256
    }
}

/// Where audit events go. Implementations must keep each event whole under concurrent use.
pub trait AuditSink: Send + Sync {
    /// Records one event.
    fn record(&self, event: &AuditEvent) -> io::Result<()>;
}

/// Writes one JSON line per event to any writer (an append-mode file, a socket, stdout).
///
/// Each line is serialized before the lock is taken and written with a single `write_all` and
/// `flush` while it is held, so lines from concurrent admissions never interleave. Open files with
/// `O_APPEND` when several processes share one log.
#[derive(Debug)]
pub struct JsonLinesSink<W> {
    writer: Mutex<W>,
}

impl<W: Write> JsonLinesSink<W> {
    /// Wraps a writer.
    pub fn new(writer: W) -> JsonLinesSink<W> {
        JsonLinesSink {
            writer: Mutex::new(writer),
        }
    }

    /// Returns the writer.
    pub fn into_inner(self) -> W {
        self.writer
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<W: Write + Send> AuditSink for JsonLinesSink<W> {
    fn record(&self, event: &AuditEvent) -> io::Result<()> {
        let line = event.to_json_line();
        // A panic elsewhere while holding the lock cannot leave half a line behind (the line is
        // written in one call), so a poisoned lock is safe to keep using.
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        writer.write_all(&line)?;
        writer.flush()
    }
}
