//! One `tools/call`, whichever door it came through (`mcp-proxy`, `ext-proc`, `ext-mcp`): its
//! arguments decided by the tool's argument contract, its result (or the upstream's failure to
//! give one) decided by the tool's contract and made whole by the front, and the result the host
//! is given. The proxy and the doors call these same functions, so one contract gives the same
//! agent bytes and the same audit line through any of them.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use toolgate_front::{CallRecord, Front, Gated};
use toolgate_gate::{Contract, Decision, Request, Response};
use toolgate_telemetry::UpstreamFailure;

use crate::era::{self, modern_codes};
use crate::message::{result_line, value_result_line};
use crate::tools;

/// JSON-RPC's "Invalid params": a server's refusal of a call's arguments.
const INVALID_PARAMS: i64 = -32602;

/// A `tools/call` in flight.
pub(crate) struct Call {
    pub(crate) contract: Arc<Contract>,
    /// A candidate version decided beside the enforced one (`--shadow`).
    pub(crate) shadow: Option<Arc<Contract>>,
    pub(crate) request: Request,
    /// Its record: its contract's metrics, its place among the calls in flight, its trace;
    /// finished when it is decided (or dropped, whichever way it ends).
    pub(crate) record: CallRecord,
    /// The host's own `params`, kept only where a handshake-era host's call may meet a modern
    /// upstream's `input_required` on an opened route: the proxy then asks the host itself and
    /// sends the call again with the answers (`proxy/input.rs`). Never for a door.
    pub(crate) retry: Option<Value>,
    /// Whether the call may be answered with a task (`--allow tasks`, and the host asked for one
    /// or declared the extension). Never for a door.
    pub(crate) may_task: bool,
}

/// A call's answer for the host: the result the gate built, or (observe mode) the upstream's.
pub(crate) enum Decided {
    Built(Vec<u8>),
    Passed(Value),
}

impl Decided {
    /// The response line for request `id`.
    pub(crate) fn into_line(self, id: &Value) -> Vec<u8> {
        match self {
            Decided::Built(bytes) => result_line(id, &bytes),
            Decided::Passed(value) => value_result_line(id, &value),
        }
    }

    /// The result as a value, to hold inside another (a completed task's).
    pub(crate) fn into_value(self) -> Value {
        match self {
            Decided::Built(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Decided::Passed(value) => value,
        }
    }
}

/// A call's decision on `response`, made whole by the front (shadowed, marked observed,
/// counted, traced, logged, audited, retained); the call is then answered.
pub(crate) fn decide(
    front: &Front,
    call: &Call,
    response: Response<'_>,
    now: SystemTime,
) -> Decision {
    let gated = Gated {
        contract: &call.contract,
        shadow: call.shadow.as_deref(),
    };
    front
        .steps()
        .decide(gated, response, &call.request, now, &call.record)
}

/// A call's complete result decided by its contract: what the host is given, or in observe
/// mode the upstream's result as it came.
pub(crate) fn decided_result(
    front: &Front,
    call: &Call,
    result: &Value,
    waited: Option<Duration>,
    modern_host: bool,
) -> Decided {
    let now = SystemTime::now();
    let evidence = tools::evidence(&call.contract, result);
    call.record
        .upstream_over(waited, evidence.upstream_failure(), now);
    let decision = decide(front, call, evidence.response(), now);
    if front.observe() {
        // Report-only: decided and audited; the upstream's result as it came.
        Decided::Passed(era::passthrough_result(
            "tools/call",
            result.clone(),
            modern_host,
        ))
    } else {
        Decided::Built(tools::result_json(&decision, modern_host))
    }
}

/// The decision on an upstream that gave a call no result (`response` says how; `ended`: how
/// long it took to answer, if it did, and what went wrong), made whole as every call's is.
pub(crate) fn failure_decision(
    front: &Front,
    call: &Call,
    response: Response<'_>,
    ended: (Option<Duration>, UpstreamFailure),
) -> Decision {
    let now = SystemTime::now();
    call.record.upstream_over(ended.0, Some(ended.1), now);
    decide(front, call, response, now)
}

/// What the gate is told of a JSON-RPC error the upstream answered a call with, what went wrong,
/// and the line the operator's log gets, if any. What the front withholds (a client capability, a
/// revision) is withheld on the next call too: asking again cannot succeed, so the agent is not
/// told to. A server's refusal of the call's arguments (JSON-RPC Invalid params, as servers before
/// the 2025-11-25 revision report a bad argument) is the tool's own error, which the contract's
/// `upstream_errors` map and which is not retried by default.
pub(crate) fn call_error(error: &Value) -> (Response<'static>, UpstreamFailure, Option<String>) {
    let withheld = match error.get("code").and_then(Value::as_i64) {
        Some(modern_codes::MISSING_CLIENT_CAPABILITY) => Some(
            "the upstream needs a client capability toolgate does not pass on (a closed route)",
        ),
        Some(modern_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
            Some("the upstream refused the call's protocol version")
        }
        _ => None,
    };
    match withheld {
        Some(reason) => (
            Response::incomplete(reason),
            UpstreamFailure::Unusable,
            Some(format!(
                "{reason}; answered with the fixed failure, not retryable"
            )),
        ),
        None if error.get("code").and_then(Value::as_i64) == Some(INVALID_PARAMS) => {
            (Response::tool_error(&[]), UpstreamFailure::Error, None)
        }
        None => (
            Response::unreachable("the upstream answered the call with a JSON-RPC error"),
            UpstreamFailure::Error,
            None,
        ),
    }
}

/// `response`, unless the call's contract would admit it: then an unreachable answer saying
/// `why` (bytes that cannot be a call's result never answer it, whatever a contract says of
/// them).
pub(crate) fn never_admitted<'a>(
    call: &Call,
    response: Response<'a>,
    why: &'static str,
    now: SystemTime,
) -> Response<'a> {
    if call
        .contract
        .admit_response(response, &call.request, now)
        .is_admitted()
    {
        Response::unreachable(why)
    } else {
        response
    }
}

/// A call's arguments decided by the tool's argument contract, audited (and offered for
/// retention) like any decision: the arguments its projection rebuilt, or, refused, the tool's
/// own fixed failure (its output schema's failure branch) as the result the host is given, and
/// no upstream call is made. In observe mode a refusal is recorded and the arguments go on as
/// they came. `caller`: who asked, where the door knows.
pub(crate) struct ArgumentsAsked<'a> {
    pub(crate) id: &'a Value,
    pub(crate) modern_host: bool,
    pub(crate) tool: &'a tools::Tool,
    pub(crate) gate: &'a tools::ArgumentContract,
    pub(crate) arguments: &'a Value,
    pub(crate) caller: Option<Arc<str>>,
    pub(crate) context: serde_json::Map<String, Value>,
}

/// See [`ArgumentsAsked`]: `Ok` with the arguments to forward, `Err` with the result to answer.
pub(crate) fn gate_arguments(
    front: &Front,
    asked: ArgumentsAsked<'_>,
    record: &CallRecord,
) -> Result<Value, Vec<u8>> {
    let ArgumentsAsked {
        id,
        modern_host,
        tool,
        gate,
        arguments,
        caller,
        context,
    } = asked;
    let raw = serde_json::to_vec(arguments).unwrap_or_default();
    let mut request = tools::arguments_request(id, gate, context);
    if let Some(caller) = caller {
        request = request.with_caller(caller);
    }
    let now = SystemTime::now();
    let decision =
        front
            .steps()
            .decide_arguments(&gate.contract, Response::body(&raw), &request, now, record);
    // Projection builds the agent bytes as JSON text, so they read back.
    if decision.is_admitted()
        && let Ok(projected) = serde_json::from_slice(decision.agent_bytes())
    {
        return Ok(projected);
    }
    if front.observe() {
        return Ok(arguments.clone());
    }
    // The refusal's reason is the operator's, in the record above.
    let failure = tool.contract.admit_response(
        Response::incomplete("the call's arguments were refused by its argument contract"),
        &tools::request_for(id, &Value::Null, tool, serde_json::Map::new()),
        now,
    );
    Err(tools::result_json(&failure, modern_host))
}

/// The upstream's `tools/list` result as it came, but for the tools a host may not call or a
/// pin withholds (`offered` says which stay): observe mode's listing.
pub(crate) fn observed_listing(
    mut result: Value,
    upstream_tools: &[Value],
    offered: impl Fn(&str, &Value) -> bool,
) -> Value {
    let kept: Vec<Value> = upstream_tools
        .iter()
        .filter(|tool| {
            tool.get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| offered(name, tool))
        })
        .cloned()
        .collect();
    if let Some(tools) = result.get_mut("tools") {
        *tools = Value::Array(kept);
    }
    result
}

/// The `tools/list` result a host is given for the upstream's `result`: the contracted tools
/// `offered` keeps, each described by its contract (observe mode: the upstream's own listing,
/// every tool with its own schemas, so a client that checks results against a tool's output
/// schema accepts the results passed on unchanged).
pub(crate) fn listing_for_host(
    registry: &tools::Registry,
    observe: bool,
    result: Value,
    offered: impl Fn(&str, &Value) -> bool,
    modern_host: bool,
) -> Value {
    let upstream_tools = result
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if observe {
        let observed = observed_listing(result, &upstream_tools, offered);
        return era::passthrough_result("tools/list", observed, modern_host);
    }
    let listed = registry.list(&upstream_tools, offered);
    if modern_host {
        era::modern_result("tools/list", listed, Some(&result))
    } else {
        listed
    }
}
