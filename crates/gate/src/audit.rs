//! Audit events: one per decision, accepted or not, and the JSON line each is written as.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;

use crate::facts::{
    ContractIdentity, Facts, GATE_VERSION, MAX_RECORDED_TEXT, Marks, Sha256Digest, ShadowOutcome,
    bounded_text,
};
use crate::outcome::{ErrorCode, Layer, Outcome};
use crate::timestamp;
use crate::wire::write_string;

/// The audit record of one decision. Serialize it with [`AuditEvent::to_json_line`] or hand it
/// to an [`AuditSink`](crate::AuditSink).
///
/// It carries digests, not content: the raw bytes and the agent-visible bytes are identified by
/// their SHA-256, so the log can prove what the agent saw without holding attacker text. The
/// line holds every string from outside (the request id, the caller, the upstream, a shape or
/// rule name) as [`bounded_text`] keeps it, so no host can make a line longer than a few KiB.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    #[serde(serialize_with = "rfc3339")]
    pub(crate) time: SystemTime,
    #[serde(serialize_with = "bounded")]
    pub(crate) request_id: Arc<str>,
    /// `tool` and `contract_version`, shared with the contract.
    #[serde(flatten)]
    pub(crate) contract: Arc<ContractIdentity>,
    pub(crate) gate_version: &'static str,
    #[serde(serialize_with = "bounded_optional")]
    pub(crate) upstream: Option<Arc<str>>,
    /// Who asked for the call, when the front authenticated them.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bounded_optional"
    )]
    pub(crate) caller: Option<Arc<str>>,
    pub(crate) outcome: &'static str,
    /// `current`, or the name of the legacy shape that admitted the bytes.
    #[serde(serialize_with = "bounded_optional")]
    pub(crate) shape: Option<Arc<str>>,
    pub(crate) layer: Option<Layer>,
    /// The rejecting rule, for layers whose rule is known without explaining the rejection
    /// (everything but a schema keyword, which the operator record carries).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bounded_optional"
    )]
    pub(crate) rule: Option<Cow<'static, str>>,
    pub(crate) code: Option<ErrorCode>,
    pub(crate) retryable: bool,
    pub(crate) raw_len: usize,
    pub(crate) raw_sha256: Sha256Digest,
    pub(crate) agent_sha256: Sha256Digest,
    /// What a shadow version decided of the same call, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shadow: Option<ShadowOutcome>,
    /// `observe` when the front forwarded the upstream's result unchanged (report-only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<&'static str>,
    /// The call this decision belongs to, as the front names it (see [`CallIds`](crate::CallIds)).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bounded_optional"
    )]
    pub(crate) call_id: Option<Arc<str>>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bounded_optional"
    )]
    pub(crate) trace_id: Option<Arc<str>>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "bounded_optional"
    )]
    pub(crate) span_id: Option<Arc<str>>,
    /// The same, as the line is written from.
    #[serde(skip)]
    pub(crate) marks: Option<Arc<Marks>>,
}

/// What the audit line calls report-only.
const OBSERVE: &str = "observe";

/// RFC 3339 in UTC; `null` for a time outside the years 0 to 9999, which RFC 3339 cannot write
/// (an adapter's clock that far off is still recorded, not a reason to fail).
fn rfc3339<S: serde::Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
    match timestamp::format_utc(timestamp::unix_nanos(*time)) {
        Some(formatted) => serializer.serialize_str(&formatted),
        None => serializer.serialize_none(),
    }
}

/// A string from outside, as [`bounded_text`] keeps it.
fn bounded<S: serde::Serializer>(text: &impl AsRef<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&bounded_text(text.as_ref()))
}

fn bounded_optional<S: serde::Serializer, T: AsRef<str>>(
    text: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match text {
        Some(text) => bounded(text, serializer),
        None => serializer.serialize_none(),
    }
}

/// One audit line's fields, borrowed: from an owned [`AuditEvent`], or straight from a decision's
/// facts by a sink that writes the line without keeping an event (no reference counts touched,
/// nothing allocated). Both write the same bytes, through [`AuditLine::write`].
pub(crate) struct AuditLine<'a> {
    pub time: SystemTime,
    pub request_id: &'a str,
    pub contract: &'a ContractIdentity,
    pub upstream: Option<&'a str>,
    pub caller: Option<&'a str>,
    pub verdict: Verdict,
    pub shape: Option<&'a str>,
    pub rule: Option<&'a str>,
    pub raw_len: usize,
    pub raw_sha256: Sha256Digest,
    pub agent_sha256: Sha256Digest,
    pub marks: Option<&'a Marks>,
}

/// What the audit line says of the outcome.
#[derive(Clone, Copy)]
pub(crate) struct Verdict {
    pub outcome: &'static str,
    pub layer: Option<Layer>,
    pub code: Option<ErrorCode>,
    pub retryable: bool,
}

impl Verdict {
    pub(crate) fn of(outcome: &Outcome) -> Verdict {
        let (layer, code, retryable) = match outcome {
            Outcome::Admitted => (None, None, false),
            Outcome::AdmittedFailure { code, retryable } => (None, Some(*code), *retryable),
            Outcome::Rejected(rejection) => (
                Some(rejection.layer),
                Some(rejection.code),
                rejection.retryable,
            ),
        };
        Verdict {
            outcome: outcome.as_str(),
            layer,
            code,
            retryable,
        }
    }
}

impl AuditLine<'_> {
    /// The facts of a decision, borrowed.
    pub(crate) fn of<'a>(
        facts: &'a Facts,
        outcome: &Outcome,
        rule: Option<&'a str>,
        agent_sha256: Sha256Digest,
    ) -> AuditLine<'a> {
        AuditLine {
            time: facts.time,
            request_id: &facts.request_id,
            contract: &facts.contract,
            upstream: facts.upstream.as_deref(),
            caller: facts.caller.as_deref(),
            verdict: Verdict::of(outcome),
            shape: facts.shape.as_deref(),
            rule,
            raw_len: facts.raw.len(),
            raw_sha256: facts.raw.digest(),
            agent_sha256,
            marks: facts.marks.as_deref(),
        }
    }

    /// The longest the line can be besides its variable strings: names, punctuation, the time,
    /// the three digests in hex, the gate version and the longest values of the finite fields.
    const FIXED_LINE_BYTES: usize = 496;

    /// The most bytes a string from outside takes in the line: [`MAX_RECORDED_TEXT`] bytes,
    /// each escaped as `\u00XX` at worst (its digest form is shorter).
    #[cfg(test)]
    const MAX_TEXT_BYTES: usize = 2 + 6 * MAX_RECORDED_TEXT;

    /// Appends the line (one JSON object and `\n`, the same object serde_json writes for the
    /// owned event) to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        // One reservation up front, so no write below grows the buffer.
        let bounded_len = |text: &str| text.len().min(MAX_RECORDED_TEXT);
        out.reserve(
            AuditLine::FIXED_LINE_BYTES
                + bounded_len(self.request_id)
                + self.contract.line_members.len()
                + self.upstream.map_or(0, bounded_len)
                + self.caller.map_or(0, |caller| bounded_len(caller) + 12)
                + self.shape.map_or(0, bounded_len)
                + self.rule.map_or(0, bounded_len)
                + self
                    .marks
                    .and_then(|marks| marks.call.as_ref())
                    .map_or(0, |call| 64 + bounded_len(&call.call_id)),
        );
        out.extend_from_slice(b"{\"time\":");
        let start = out.len();
        out.push(b'"');
        if timestamp::write_utc(out, timestamp::unix_nanos(self.time)) {
            out.push(b'"');
        } else {
            out.truncate(start);
            out.extend_from_slice(b"null");
        }
        out.extend_from_slice(b",\"request_id\":");
        write_bounded(out, self.request_id);
        out.extend_from_slice(&self.contract.line_members);
        out.extend_from_slice(b",\"upstream\":");
        write_optional(out, self.upstream);
        if let Some(caller) = self.caller {
            out.extend_from_slice(b",\"caller\":");
            write_bounded(out, caller);
        }
        out.extend_from_slice(b",\"outcome\":");
        write_name(out, self.verdict.outcome);
        out.extend_from_slice(b",\"shape\":");
        write_optional(out, self.shape);
        out.extend_from_slice(b",\"layer\":");
        match self.verdict.layer {
            Some(layer) => write_name(out, layer.as_str()),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(rule) = self.rule {
            out.extend_from_slice(b",\"rule\":");
            write_bounded(out, rule);
        }
        out.extend_from_slice(b",\"code\":");
        match self.verdict.code {
            Some(code) => write_name(out, code.as_str()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"retryable\":");
        out.extend_from_slice(if self.verdict.retryable {
            b"true"
        } else {
            b"false"
        });
        out.extend_from_slice(b",\"raw_len\":");
        write_decimal(out, self.raw_len);
        out.extend_from_slice(b",\"raw_sha256\":\"");
        self.raw_sha256.write_hex(out);
        out.extend_from_slice(b"\",\"agent_sha256\":\"");
        self.agent_sha256.write_hex(out);
        out.push(b'"');
        if let Some(marks) = self.marks {
            if let Some(shadow) = &marks.shadow {
                write_shadow(out, shadow);
            }
            if marks.observed {
                out.extend_from_slice(b",\"mode\":");
                write_name(out, OBSERVE);
            }
            if let Some(call) = &marks.call {
                write_call(out, call);
            }
        }
        out.extend_from_slice(b"}\n");
    }
}

/// A contract's identity, with the line members that name it and the gate (the same for every
/// line the contract writes, so written once here).
pub(crate) fn contract_identity(
    tool: &str,
    version: &str,
    digest: Sha256Digest,
) -> ContractIdentity {
    ContractIdentity {
        tool: tool.into(),
        version: version.into(),
        digest,
        line_members: contract_members(tool, version, digest).into(),
        redact: Box::new([]),
    }
}

fn contract_members(tool: &str, version: &str, digest: Sha256Digest) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + tool.len() + version.len());
    out.extend_from_slice(b",\"tool\":");
    write_string(&mut out, tool);
    out.extend_from_slice(b",\"contract_version\":");
    write_string(&mut out, version);
    out.extend_from_slice(b",\"contract_digest\":\"");
    digest.write_hex(&mut out);
    out.push(b'"');
    out.extend_from_slice(b",\"gate_version\":");
    write_name(&mut out, GATE_VERSION);
    out
}

/// `,"call_id":…` and, where the call has them, `,"trace_id":…,"span_id":…`.
fn write_call(out: &mut Vec<u8>, call: &crate::CallIds) {
    out.extend_from_slice(b",\"call_id\":");
    write_bounded(out, &call.call_id);
    if let Some(trace_id) = &call.trace_id {
        out.extend_from_slice(b",\"trace_id\":");
        write_bounded(out, trace_id);
    }
    if let Some(span_id) = &call.span_id {
        out.extend_from_slice(b",\"span_id\":");
        write_bounded(out, span_id);
    }
}

/// `,"shadow":{…}`, the members in the order serde writes [`ShadowOutcome`]'s.
fn write_shadow(out: &mut Vec<u8>, shadow: &ShadowOutcome) {
    out.extend_from_slice(b",\"shadow\":{\"version\":");
    write_string(out, &shadow.version);
    out.extend_from_slice(b",\"contract_digest\":\"");
    shadow.contract_digest.write_hex(out);
    out.extend_from_slice(b"\",\"outcome\":");
    write_name(out, shadow.outcome);
    out.extend_from_slice(b",\"layer\":");
    match shadow.layer {
        Some(layer) => write_name(out, layer),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"code\":");
    match shadow.code {
        Some(code) => write_name(out, code),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"agent_differs\":");
    out.extend_from_slice(if shadow.agent_differs {
        b"true"
    } else {
        b"false"
    });
    out.push(b'}');
}

impl AuditEvent {
    pub(crate) fn new(
        facts: &Facts,
        outcome: &Outcome,
        rule: Option<Cow<'static, str>>,
        agent_sha256: Sha256Digest,
    ) -> AuditEvent {
        let verdict = Verdict::of(outcome);
        let call = facts.marks.as_ref().and_then(|marks| marks.call.as_ref());
        AuditEvent {
            time: facts.time,
            request_id: facts.request_id.clone(),
            contract: Arc::clone(&facts.contract),
            gate_version: GATE_VERSION,
            upstream: facts.upstream.clone(),
            caller: facts.caller.clone(),
            outcome: verdict.outcome,
            shape: facts.shape.clone(),
            layer: verdict.layer,
            rule,
            code: verdict.code,
            retryable: verdict.retryable,
            raw_len: facts.raw.len(),
            raw_sha256: facts.raw.digest(),
            agent_sha256,
            shadow: facts.marks.as_ref().and_then(|marks| marks.shadow.clone()),
            mode: facts
                .marks
                .as_ref()
                .is_some_and(|marks| marks.observed)
                .then_some(OBSERVE),
            call_id: call.map(|call| Arc::clone(&call.call_id)),
            trace_id: call.and_then(|call| call.trace_id.clone()),
            span_id: call.and_then(|call| call.span_id.clone()),
            marks: facts.marks.clone(),
        }
    }

    /// The event's fields, borrowed, for writing its line.
    pub(crate) fn line(&self) -> AuditLine<'_> {
        AuditLine {
            time: self.time,
            request_id: &self.request_id,
            contract: &self.contract,
            upstream: self.upstream.as_deref(),
            caller: self.caller.as_deref(),
            verdict: Verdict {
                outcome: self.outcome,
                layer: self.layer,
                code: self.code,
                retryable: self.retryable,
            },
            shape: self.shape.as_deref(),
            rule: self.rule.as_deref(),
            raw_len: self.raw_len,
            raw_sha256: self.raw_sha256,
            agent_sha256: self.agent_sha256,
            marks: self.marks.as_deref(),
        }
    }

    /// What a shadow version decided of the same call, when one did.
    pub fn shadow(&self) -> Option<&ShadowOutcome> {
        self.shadow.as_ref()
    }

    /// Whether the call was only observed (`--mode observe`): decided and audited, and the
    /// upstream's result forwarded unchanged.
    pub fn is_observed(&self) -> bool {
        self.mode.is_some()
    }

    /// The event as one JSON object followed by `\n`: the same object serde_json writes for the
    /// event, written directly.
    pub fn to_json_line(&self) -> Vec<u8> {
        let mut line = Vec::new();
        self.write_json_line(&mut line);
        line
    }

    /// Appends [`to_json_line`](Self::to_json_line)'s bytes to `out`, for a sink that reuses
    /// one buffer.
    pub fn write_json_line(&self, out: &mut Vec<u8>) {
        self.line().write(out);
    }

    /// The contract's tool.
    pub fn tool(&self) -> &str {
        &self.contract.tool
    }

    /// The contract version that decided.
    pub fn contract_version(&self) -> &str {
        &self.contract.version
    }

    /// The digest of the contract's bytes that decided.
    pub fn contract_digest(&self) -> Sha256Digest {
        self.contract.digest
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

fn write_decimal(out: &mut Vec<u8>, mut value: usize) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// Writes one of the gate's own names (an outcome, layer, code, the gate version): fixed words
/// that never need escaping, so they are copied without the scan `write_string` makes.
fn write_name(out: &mut Vec<u8>, name: &'static str) {
    debug_assert!(
        !name
            .bytes()
            .any(|byte| byte < 0x20 || byte == b'"' || byte == b'\\')
    );
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
}

fn write_optional(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => write_bounded(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// A string from outside, as [`bounded_text`] keeps it (the common, short one without a copy).
fn write_bounded(out: &mut Vec<u8>, text: &str) {
    if text.len() <= MAX_RECORDED_TEXT {
        write_string(out, text);
    } else {
        write_string(out, &bounded_text(text));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::facts::RawEvidence;
    use crate::outcome::Rejection;

    fn event(
        time: SystemTime,
        (texts, raw_len): ([&str; 3], usize),
        upstream: Option<&str>,
        shape: Option<&str>,
        outcome: Outcome,
        rule: Option<&str>,
    ) -> AuditEvent {
        let [request_id, tool, version] = texts;
        let facts = Facts {
            time,
            request_id: Arc::from(request_id),
            contract: Arc::new(contract_identity(
                tool,
                version,
                Sha256Digest::of(tool.as_bytes()),
            )),
            upstream: upstream.map(Arc::from),
            // A caller wherever an upstream is named, with the upstream's escapes.
            caller: upstream.map(|upstream| Arc::from(format!("issuer sub {upstream}"))),
            upstream_status: None,
            shape: shape.map(Arc::from),
            raw: RawEvidence::hashed(raw_len, Sha256Digest::of(b"raw")),
            marks: None,
        };
        AuditEvent::new(
            &facts,
            &outcome,
            rule.map(|rule| Cow::Owned(rule.to_owned())),
            Sha256Digest::of(b"agent"),
        )
    }

    /// The line is written by hand for speed; serde_json, writing the same event, is the reference.
    #[test]
    fn the_line_is_exactly_what_serde_json_writes() {
        let at = |seconds: u64, nanos: u32| SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos);
        let rejected = Outcome::Rejected(Rejection {
            layer: Layer::Semantic,
            code: ErrorCode::NotFound,
            retryable: true,
        });
        let failure = Outcome::AdmittedFailure {
            code: ErrorCode::UpstreamUnavailable,
            retryable: true,
        };
        let events = [
            event(
                at(1_764_417_600, 0),
                (["req.1", "job_status", "v1"], 0),
                None,
                Some("current"),
                Outcome::Admitted,
                None,
            ),
            event(
                at(1_764_417_600, 120_000_000),
                (["r\"q\\1\n", "t", "v2"], 7),
                Some("GET https://x/\u{1b}[31m"),
                None,
                rejected,
                Some("project_binding"),
            ),
            event(
                at(0, 1),
                (["日本", "t", "v1"], 250),
                Some(""),
                Some("legacy_bare"),
                failure,
                None,
            ),
            event(
                SystemTime::UNIX_EPOCH - Duration::from_secs(86_400),
                (["r", "t", "v1"], 65_537),
                None,
                None,
                Outcome::Admitted,
                Some(""),
            ),
            event(
                at(400_000 * 365 * 86_400, 0),
                (["r", "t", "v1"], usize::MAX),
                None,
                None,
                Outcome::Admitted,
                None,
            ),
        ];
        // Every layer and code the gate can name is written unscanned: each must be what
        // serde_json would write.
        let every_name = Layer::ALL.into_iter().flat_map(|layer| {
            ErrorCode::ALL.into_iter().map(move |code| {
                let outcome = Outcome::Rejected(Rejection {
                    layer,
                    code,
                    retryable: false,
                });
                event(at(1, 0), (["r", "t", "v1"], 1), None, None, outcome, None)
            })
        });
        for event in events.into_iter().chain(every_name) {
            let mut expected = serde_json::to_vec(&event).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(event.to_json_line()).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
    }

    /// Each variable field long on its own (a host's megabyte request id, an adapter's upstream,
    /// a legacy shape or rule named at length): kept as its digest and length, never whole, and
    /// the line is still serde_json's.
    #[test]
    fn a_long_field_is_kept_as_its_digest_and_length() {
        let long = "x".repeat(1 << 20);
        let at = SystemTime::UNIX_EPOCH;
        let events = [
            event(
                at,
                ([&long, "t", "v1"], 1),
                None,
                None,
                Outcome::Admitted,
                None,
            ),
            event(
                at,
                (["r", "t", "v1"], 1),
                Some(&long),
                None,
                Outcome::Admitted,
                None,
            ),
            event(
                at,
                (["r", "t", "v1"], 1),
                None,
                Some(&long),
                Outcome::Admitted,
                None,
            ),
            event(
                at,
                (["r", "t", "v1"], 1),
                None,
                None,
                Outcome::Admitted,
                Some(&long),
            ),
        ];
        let digest = format!(
            "sha256:{} ({} bytes)",
            Sha256Digest::of(long.as_bytes()).to_hex(),
            long.len()
        );
        for event in events {
            let mut line = Vec::new();
            event.write_json_line(&mut line);
            let mut expected = serde_json::to_vec(&event).unwrap();
            expected.push(b'\n');
            assert_eq!(line, expected);
            assert!(line.len() < 1024, "{} bytes", line.len());
            assert!(String::from_utf8(line).unwrap().contains(&digest));
        }
        // At the bound, a field is itself; one byte past it, its digest.
        let at_bound = "y".repeat(MAX_RECORDED_TEXT);
        assert_eq!(bounded_text(&at_bound), at_bound.as_str());
        assert!(bounded_text(&format!("{at_bound}y")).starts_with("sha256:"));
    }

    /// Every string from outside at its worst (the bound, every byte a control character
    /// escaped six bytes wide), on a tool name of the longest a contract may have: the line
    /// stays within what `toolgate audit verify` and a writer continuing a chain read back.
    #[test]
    fn the_longest_line_is_bounded() {
        let worst = "\u{1}".repeat(MAX_RECORDED_TEXT);
        let tool = "t".repeat(128);
        let mut event = event(
            SystemTime::UNIX_EPOCH,
            ([&worst, &tool, "v1"], usize::MAX),
            Some(&worst),
            Some(&worst),
            Outcome::Admitted,
            Some(&worst),
        );
        event.caller = Some(Arc::from(worst.as_str()));
        let line = event.to_json_line();
        assert!(
            line.len() <= AuditLine::FIXED_LINE_BYTES + 5 * AuditLine::MAX_TEXT_BYTES + 400,
            "{} bytes",
            line.len()
        );
        assert!(line.len() < 16 * 1024);
    }

    #[test]
    fn a_clock_past_the_year_9999_is_recorded_as_no_time_rather_than_a_panic() {
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(400_000 * 365 * 86_400);
        let event = event(
            far,
            (["r", "t", "v1"], 1),
            None,
            None,
            Outcome::Admitted,
            None,
        );
        let line: serde_json::Value = serde_json::from_slice(&event.to_json_line()).unwrap();
        assert_eq!(line["time"], serde_json::Value::Null);
    }
}
