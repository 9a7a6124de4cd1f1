//! A decision made whole: what every front does after the gate decides, in one place and one
//! order. A front that leaves a step out says so by leaving it off in its [`Steps`], not by
//! writing its own copy of the rest.
//!
//! The order, and why:
//! 1. the gate decides on the enforced contract;
//! 2. a shadow version decides the same response beside it (`--shadow`), at the same time, so
//!    the two can only differ by the contract;
//! 3. observe mode marks the decision not enforced (before it is recorded, so every record says so);
//! 4. it is recorded: metrics, the trace's decide span, the operator's line for a refusal, the
//!    audit line, the audit line as an OTLP log record, then retention (last, since it only
//!    queues, and a full queue drops the record, never the decision);
//! 5. a call's decision ends its flight (`toolgate_in_flight_calls`): the answer goes out next.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use toolgate_gate::{AuditSink, CallIds, Contract, Decision, Request, Response};
use toolgate_store::Retainer;
use toolgate_telemetry::{ContractMetrics, InFlight, Metrics, UpstreamFailure};

use crate::log::FrontLog;
use crate::span::{CallSpan, Tracing};

/// What decides a response: the enforced contract, and the candidate version decided beside it
/// (`--shadow`), never enforced.
#[derive(Debug, Clone, Copy)]
pub struct Gated<'a> {
    /// The contract whose decision the agent is given.
    pub contract: &'a Contract,
    /// A candidate version of the same tool, decided beside it and only recorded.
    pub shadow: Option<&'a Contract>,
}

impl<'a> Gated<'a> {
    /// `contract` alone, no shadow.
    pub fn by(contract: &'a Contract) -> Gated<'a> {
        Gated {
            contract,
            shadow: None,
        }
    }
}

/// The steps a front takes around the gate's decision, borrowed from wherever the front keeps
/// them ([`Front::steps`](crate::Front::steps), or a binding's per-call arguments). Each step
/// is off where its field is `None` or `false`:
///
/// | front | observe | metrics | trace | operator line | audit | retain |
/// | --- | --- | --- | --- | --- | --- | --- |
/// | `mcp-proxy` | flag | listener or `--metrics` | `--otlp-endpoint` | stderr | `--audit` | `--retain` |
/// | `serve` | flag | always | `--otlp-endpoint` | in the answer | `--audit` | `--retain` |
/// | Python | argument | `metrics=` | never | on the `Decision` | never | `retain=` |
/// | `check` | never | never | never | `--explain` | `--audit` | its own, synchronous |
#[derive(Clone, Copy, Default)]
pub struct Steps<'a> {
    /// Report-only: every decision is marked not enforced; the front passes the raw bytes on.
    pub observe: bool,
    /// Counted by contract (`toolgate_decisions_total`, the decision's duration, calls in flight).
    pub metrics: Option<&'a Metrics>,
    /// Traced, and audited as OTLP log records where the exporter asks for them.
    pub tracing: Option<&'a Tracing>,
    /// Where the front says what went wrong in a step (an audit line it could not write).
    pub log: Option<&'a dyn FrontLog>,
    /// Whether a refusal's operator record is logged (to [`Steps::log`]); fronts that hand it
    /// to their caller leave it off.
    pub log_refusals: bool,
    /// Refusals logged without what quotes the response (the validator's messages, free-text
    /// member names).
    pub redact_values: bool,
    /// The audit log every decision appends a line to.
    pub audit: Option<&'a dyn AuditSink>,
    /// Where refused (and sampled admitted) responses are offered for keeping.
    pub retainer: Option<&'a Retainer>,
    /// Whether each call gets a unique id (and its trace context) in its audit lines; the
    /// binding and `check` leave it to their caller.
    pub identifies_calls: bool,
}

impl std::fmt::Debug for Steps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps")
            .field("observe", &self.observe)
            .field("metrics", &self.metrics.is_some())
            .field("tracing", &self.tracing.is_some())
            .field("log_refusals", &self.log_refusals)
            .field("audit", &self.audit.is_some())
            .field("retainer", &self.retainer.is_some())
            .finish()
    }
}

/// One call, from the moment a front takes it to its decision: its contract's metrics, its
/// place among the calls in flight, its trace. Finished once, by [`Steps::decide`] (or
/// [`CallRecord::answered`] for a call that ends without a decision); dropped, it ends its
/// flight and its spans whichever way the call ended.
#[derive(Debug, Default)]
pub struct CallRecord {
    metrics: Option<Arc<ContractMetrics>>,
    in_flight: Option<InFlight>,
    span: Option<CallSpan>,
    /// The call's id and trace context, written into each of its audit lines.
    ids: Option<CallIds>,
}

impl CallRecord {
    /// The call's trace, if it is traced.
    pub fn span(&self) -> Option<&CallSpan> {
        self.span.as_ref()
    }

    /// The call's id and trace context, where the front names its calls.
    pub fn ids(&self) -> Option<&CallIds> {
        self.ids.as_ref()
    }

    /// The upstream's part of the call is over at `at`: it answered after `waited` (`None`: it
    /// did not answer), and `failure` says what went wrong, if anything.
    pub fn upstream_over(
        &self,
        waited: Option<Duration>,
        failure: Option<UpstreamFailure>,
        at: SystemTime,
    ) {
        if let Some(metrics) = &self.metrics {
            if let Some(waited) = waited {
                metrics.upstream_answered(waited);
            }
            if let Some(failure) = failure {
                metrics.upstream_failed(failure);
            }
        }
        if let Some(span) = &self.span {
            span.upstream_ended(failure.map(UpstreamFailure::as_str), at);
        }
    }

    /// The call is answered (with its decision, or handed on as a task): no longer in flight.
    pub fn answered(&self) {
        if let Some(in_flight) = &self.in_flight {
            in_flight.answered();
        }
    }
}

impl<'a> Steps<'a> {
    /// A call of `contract`'s tool begins (traced by `span`, where it is).
    pub fn begin(&self, contract: &Contract, span: Option<CallSpan>) -> CallRecord {
        let metrics = self.metrics.map(|metrics| metrics.contract(contract));
        let ids = self.identifies_calls.then(|| {
            let (trace_id, span_id) = span.as_ref().and_then(CallSpan::ids).unzip();
            CallIds {
                call_id: next_call_id(),
                trace_id: trace_id.map(Arc::from),
                span_id: span_id.map(Arc::from),
            }
        });
        CallRecord {
            in_flight: metrics.as_ref().map(|metrics| metrics.call_started()),
            metrics,
            span,
            ids,
        }
    }

    /// The call's decision on `response` to `request` at `now`, made whole: shadowed, marked
    /// observed, recorded, retained; the call is then answered.
    pub fn decide(
        &self,
        gated: Gated<'_>,
        response: Response<'_>,
        request: &Request,
        now: SystemTime,
        call: &CallRecord,
    ) -> Decision {
        let started = Instant::now();
        let mut decision = gated.contract.admit_response(response, request, now);
        if let Some(shadow) = gated.shadow {
            let shadowed = shadow.admit_response(response, request, decision.time());
            decision = decision.with_shadow(&shadowed);
        }
        decision = self.marked(decision, call);
        let metrics = call.metrics.as_deref();
        self.record(gated.contract, &decision, started, metrics, call.span());
        self.retain(&decision, &response, request);
        // Decided: the answer goes out next, so the call is no longer in flight.
        call.answered();
        decision
    }

    /// A decision within `call` that does not end it: the call's arguments, decided by the
    /// tool's argument contract before anything is forwarded. Never shadowed (`--shadow` pairs
    /// result contracts); counted under `contract`'s own metrics; traced in the call's trace.
    pub fn decide_arguments(
        &self,
        contract: &Contract,
        response: Response<'_>,
        request: &Request,
        now: SystemTime,
        call: &CallRecord,
    ) -> Decision {
        let started = Instant::now();
        let mut decision = contract.admit_response(response, request, now);
        decision = self.marked(decision, call);
        let metrics = self.metrics.map(|metrics| metrics.contract(contract));
        self.record(
            contract,
            &decision,
            started,
            metrics.as_deref(),
            call.span(),
        );
        self.retain(&decision, &response, request);
        decision
    }

    /// What the front adds to a decision before it is recorded: observe mode's mark, and the
    /// call it belongs to.
    fn marked(&self, decision: Decision, call: &CallRecord) -> Decision {
        let decision = if self.observe {
            decision.observed()
        } else {
            decision
        };
        match &call.ids {
            Some(ids) => decision.in_call(ids),
            None => decision,
        }
    }

    /// Counted, traced, logged (a refusal's record: the audit line holds digests, not the
    /// reason), audited.
    fn record(
        &self,
        contract: &Contract,
        decision: &Decision,
        started: Instant,
        metrics: Option<&ContractMetrics>,
        span: Option<&CallSpan>,
    ) {
        if let Some(metrics) = metrics {
            metrics.decided(decision, started.elapsed());
        }
        if let Some(span) = span {
            span.decided(contract, decision, decision.time());
        }
        if let (true, Some(log), Some(record)) =
            (self.log_refusals, self.log, decision.operator_record())
        {
            if self.redact_values {
                log.refused(&record.redacted());
            } else {
                log.refused(record);
            }
        }
        if let Some(sink) = self.audit
            && let Err(error) = sink.record_decision(decision)
            && let Some(log) = self.log
        {
            log.line(&format!("cannot write the audit event: {error}"));
        }
        if let Some(tracing) = self.tracing {
            tracing.audit(decision, span);
        }
    }

    /// Offered for keeping: never waits (a full queue drops the record, counted), and a
    /// disagreement with the shadow is always kept.
    fn retain(&self, decision: &Decision, response: &Response<'_>, request: &Request) {
        if let Some(retainer) = self.retainer {
            retainer.offer(decision, response, request);
        }
    }
}

/// A new call id: this process's random prefix (64 bits, so replicas do not collide) and a
/// count (so calls of one process never do), e.g. `9f2c4e1a7b3d5e6f-42`. No system call per
/// call: the prefix is drawn once.
fn next_call_id() -> Arc<str> {
    static PREFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            // No generator: the time and the process id still tell replicas apart.
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_nanos());
            bytes = ((nanos as u64) ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
        }
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    });
    let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Written on the stack and copied once into the shared string: one allocation per call.
    let mut text = [0u8; 16 + 1 + 20];
    let prefix = prefix.as_bytes();
    text[..prefix.len()].copy_from_slice(prefix);
    text[prefix.len()] = b'-';
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = count;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let end = prefix.len() + 1 + (digits.len() - at);
    text[prefix.len() + 1..end].copy_from_slice(&digits[at..]);
    Arc::from(std::str::from_utf8(&text[..end]).unwrap_or("0"))
}

#[cfg(test)]
mod tests {
    use super::next_call_id;

    /// A call id is this process's prefix (16 hex digits), a dash and a count: never the same
    /// twice in a process, and the same prefix throughout it.
    #[test]
    fn call_ids_are_unique_and_share_the_process_prefix() {
        let ids: Vec<_> = (0..1000).map(|_| next_call_id()).collect();
        let unique: std::collections::BTreeSet<&str> = ids.iter().map(|id| &**id).collect();
        assert_eq!(unique.len(), ids.len());
        let prefix = ids[0].split('-').next().unwrap();
        assert_eq!(prefix.len(), 16);
        assert!(prefix.bytes().all(|byte| byte.is_ascii_hexdigit()));
        for id in &ids {
            let (head, count) = id.split_once('-').unwrap();
            assert_eq!(head, prefix);
            assert!(count.parse::<u64>().is_ok(), "{id}");
        }
    }
}
