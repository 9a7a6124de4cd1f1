//! What `admit` answers: the outcome, the agent-visible bytes, the operator record, the audit event.

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::audit::{AuditEvent, AuditLine};
use crate::facts::{Facts, Marks, Sha256Digest, ShadowOutcome};
use crate::fault::Fault;
use crate::operator::OperatorRecord;
use crate::outcome::{Outcome, Rejection};
use crate::shape::PendingExplanation;
use crate::wire::AgentBytes;

/// Everything one call to [`Contract::admit`](crate::Contract::admit) decided.
///
/// The agent-visible bytes are the only part meant for the agent. The operator record and audit
/// event are for people and logs, never for a model's context. Both are built when first asked
/// for: a schema rejection is decided by the fast `is_valid` path, and the validator's detailed
/// errors are only collected if someone reads the record.
#[derive(Debug, Clone)]
pub struct Decision {
    pub(crate) outcome: Outcome,
    pub(crate) agent_bytes: AgentBytes,
    pub(crate) facts: Facts,
    pub(crate) detail: Option<Detail>,
    pub(crate) audit: OnceLock<AuditEvent>,
    /// The agent bytes' SHA-256, computed once: the audit line, the audit event and retention
    /// all name it.
    pub(crate) agent_digest: OnceLock<Sha256Digest>,
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
    pub(crate) fn new(explanation: Explanation) -> Detail {
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
        self.agent_bytes.as_slice()
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

    /// This decision, its audit line naming what `shadow` (another version's decision of the
    /// same call: a candidate decided beside the one enforced) decided.
    pub fn with_shadow(mut self, shadow: &Decision) -> Decision {
        let outcome = ShadowOutcome {
            version: shadow.facts.contract.version.to_string(),
            contract_digest: shadow.facts.contract.digest,
            outcome: shadow.outcome.as_str(),
            layer: shadow.rejection().map(|rejection| rejection.layer.as_str()),
            code: shadow.outcome.code().map(|code| code.as_str()),
            agent_differs: shadow.agent_bytes() != self.agent_bytes(),
        };
        self.mark(|marks| marks.shadow = Some(outcome));
        self
    }

    /// This decision, marked as observed only: the front forwarded the upstream's result
    /// unchanged (report-only mode), and the audit line says so.
    pub fn observed(mut self) -> Decision {
        self.mark(|marks| marks.observed = true);
        self
    }

    /// This decision, named as part of the call `ids` names: its audit line carries the call's
    /// id and trace context.
    pub fn in_call(mut self, ids: &crate::CallIds) -> Decision {
        self.mark(|marks| marks.call = Some(ids.clone()));
        self
    }

    /// The id of the call this decision is part of, if [`Decision::in_call`] named it.
    pub fn call_id(&self) -> Option<&str> {
        self.facts
            .marks
            .as_ref()?
            .call
            .as_ref()
            .map(|ids| &*ids.call_id)
    }

    /// What a shadow version decided of the same call, if [`Decision::with_shadow`] said.
    pub fn shadow(&self) -> Option<&ShadowOutcome> {
        self.facts.marks.as_ref()?.shadow.as_ref()
    }

    /// Whether the shadow version [`Decision::with_shadow`] gave decided otherwise: another
    /// outcome, or other bytes for the agent. `false` without a shadow.
    pub fn shadow_disagrees(&self) -> bool {
        self.shadow()
            .is_some_and(|shadow| shadow.outcome != self.outcome.as_str() || shadow.agent_differs)
    }

    fn mark(&mut self, change: impl FnOnce(&mut Marks)) {
        let mut marks = self.facts.marks.as_deref().cloned().unwrap_or_default();
        change(&mut marks);
        self.facts.marks = Some(std::sync::Arc::new(marks));
        // Built before the mark, the event would not carry it.
        self.audit = OnceLock::new();
    }

    /// When it was decided (the `now` it was decided at).
    pub fn time(&self) -> std::time::SystemTime {
        self.facts.time
    }

    /// The SHA-256 of the raw bytes the gate was given.
    pub fn raw_sha256(&self) -> Sha256Digest {
        self.facts.raw.digest()
    }

    /// The digest of the contract's bytes that decided.
    pub fn contract_digest(&self) -> Sha256Digest {
        self.facts.contract.digest
    }

    /// What the decision knew of its call.
    pub(crate) fn facts(&self) -> &Facts {
        &self.facts
    }

    /// The SHA-256 of the agent bytes, computed when first needed.
    pub(crate) fn agent_sha256(&self) -> Sha256Digest {
        *self
            .agent_digest
            .get_or_init(|| Sha256Digest::of(self.agent_bytes.as_slice()))
    }

    /// The audit event of this decision (every decision has one).
    pub fn audit_event(&self) -> &AuditEvent {
        self.audit.get_or_init(|| {
            AuditEvent::new(
                &self.facts,
                &self.outcome,
                self.known_rule().cloned(),
                self.agent_sha256(),
            )
        })
    }

    /// Appends this decision's audit line to `out`: the bytes of
    /// `audit_event().to_json_line()`, written from the decision itself, so a sink that only
    /// logs the line builds no event and keeps nothing (what [`JsonLinesSink`](crate::JsonLinesSink)
    /// does).
    pub fn write_audit_line(&self, out: &mut Vec<u8>) {
        match self.audit.get() {
            Some(event) => event.write_json_line(out),
            None => AuditLine::of(
                &self.facts,
                &self.outcome,
                self.known_rule().map(|rule| &**rule),
                self.agent_sha256(),
            )
            .write(out),
        }
    }

    /// The rejecting rule when it is known without explaining the rejection. The schema keyword
    /// is operator detail: the audit event names the layer and code, and this rule only.
    pub(crate) fn known_rule(&self) -> Option<&Cow<'static, str>> {
        self.detail.as_ref()?.known_rule.as_ref()
    }
}
