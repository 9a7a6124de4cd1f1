//! The upstream's answer through a door: decided as `mcp-proxy` decides it, and rewritten into
//! the message the host is given.

use std::time::{Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_gate::Response;
use toolgate_telemetry::UpstreamFailure;

use super::{Door, Exchange, Kind, Other};
use crate::call::{self, never_admitted};
use crate::era::{self, LEGACY_VERSIONS, ResultKind};
use crate::era::{refusal_line, relayed_error};
use crate::message::{self, Message, codes, error_line, result_line, value_result_line};
use crate::tools;

/// What came back for a forwarded request.
#[derive(Debug, Clone, Copy)]
pub enum Answered<'a> {
    /// The upstream's answer: one JSON-RPC message, its bytes as they came.
    Message(&'a [u8]),
    /// No answer the door can read (an HTTP error status, a stream that held no answer, a body
    /// past the limit): why, in the door's words.
    Failed(&'a str),
}

impl Door {
    /// The message the host is given for `exchange`'s answer: a call's result rebuilt by
    /// projection (or the fixed failure), a listing rewritten, an opened route's answer as it
    /// came; never bytes the upstream wrote in a place the door does not vouch for.
    pub fn answer(&self, exchange: Exchange, answered: Answered<'_>) -> Vec<u8> {
        let Exchange {
            id,
            modern_host,
            since,
            kind,
        } = exchange;
        let waited = Some(Instant::now().saturating_duration_since(since));
        let parsed = match answered {
            Answered::Message(bytes) if bytes.len() > self.line_cap => Err((
                "a message longer than the door's limit",
                bytes,
                UpstreamFailure::Unusable,
            )),
            Answered::Message(bytes) => match message::parse(bytes) {
                Ok(Message::Response {
                    id: answered,
                    outcome,
                }) if answered == id => Ok(outcome),
                Ok(_) => Err((
                    "a message that answers no request of the host's",
                    bytes,
                    UpstreamFailure::Unusable,
                )),
                Err(_) => Err(("an unreadable message", bytes, UpstreamFailure::Unreadable)),
            },
            Answered::Failed(why) => Err((why, &[][..], UpstreamFailure::Unusable)),
        };
        match kind {
            Kind::Call(call) => self.call_answer(&id, &call, parsed, waited, modern_host),
            Kind::Other(other) => match parsed {
                Ok(outcome) => self.other_answer(&id, other, outcome, modern_host),
                Err((why, _, _)) => error_line(
                    &id,
                    codes::INTERNAL_ERROR,
                    &format!("the upstream server is unavailable ({why})"),
                ),
            },
        }
    }

    /// [`Door::answer`], for a hook that carries a result alone: `Ok` with the result the host
    /// is given (its bytes as the other doors write them), `Err` with the JSON-RPC error object
    /// to give instead.
    pub fn answer_result(
        &self,
        exchange: Exchange,
        answered: Answered<'_>,
    ) -> Result<Vec<u8>, Vec<u8>> {
        let prefix = result_line(&exchange.id, b"");
        let prefix = &prefix[..prefix.len() - 1];
        let line = self.answer(exchange, answered);
        match line
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(b"}"))
        {
            Some(result) => Ok(result.to_vec()),
            None => Err(serde_json::from_slice::<Value>(&line)
                .ok()
                .and_then(|mut message| message.get_mut("error").map(Value::take))
                .map(|error| error.to_string().into_bytes())
                .unwrap_or_default()),
        }
    }

    /// A call's answer, decided.
    fn call_answer(
        &self,
        id: &Value,
        call: &call::Call,
        parsed: Result<Result<Value, Value>, (&str, &[u8], UpstreamFailure)>,
        waited: Option<std::time::Duration>,
        modern_host: bool,
    ) -> Vec<u8> {
        let (response, failure) = match parsed {
            Ok(Ok(result)) => match era::result_kind(&result) {
                ResultKind::Complete if result.is_object() && result.get("task").is_none() => {
                    return call::decided_result(&self.front, call, &result, waited, modern_host)
                        .into_line(id);
                }
                ResultKind::Complete => (
                    Response::incomplete(
                        "the upstream answered with a task, which the call did not ask for",
                    ),
                    UpstreamFailure::Unusable,
                ),
                ResultKind::InputRequired => (
                    Response::incomplete(
                        "the upstream asked for input (input_required), which a toolgate door does not pass on",
                    ),
                    UpstreamFailure::Unusable,
                ),
                ResultKind::Unknown => (
                    Response::incomplete(
                        "the upstream's result has a resultType toolgate does not know",
                    ),
                    UpstreamFailure::Unusable,
                ),
            },
            Ok(Err(error)) if self.front.observe() => {
                call::failure_decision(
                    &self.front,
                    call,
                    Response::unreachable("the upstream answered the call with a JSON-RPC error"),
                    (waited, UpstreamFailure::Error),
                );
                return message::error_object_line(id, &error);
            }
            Ok(Err(error)) => {
                let (response, failure, logged) = call::call_error(&error);
                if let Some(line) = logged {
                    self.front.log(&line);
                }
                (response, failure)
            }
            Err((why, bytes, failure)) => {
                self.front.log(&format!(
                    "the upstream's answer to a call is {why}; answered with the fixed failure"
                ));
                if bytes.is_empty() {
                    (Response::unreachable(why), failure)
                } else {
                    // Bytes no message correlates with the call never answer it, even if the
                    // contract would admit them: the gate refuses them at the layer that owns
                    // the flaw (a duplicate key at the parse).
                    let response = never_admitted(
                        call,
                        Response::body(bytes),
                        "a message that answers no request",
                        SystemTime::now(),
                    );
                    (response, failure)
                }
            }
        };
        let decision = call::failure_decision(&self.front, call, response, (waited, failure));
        result_line(id, &tools::result_json(&decision, modern_host))
    }

    /// The answer to a request that is not a call.
    fn other_answer(
        &self,
        id: &Value,
        other: Other,
        outcome: Result<Value, Value>,
        modern_host: bool,
    ) -> Vec<u8> {
        let result = match (other, outcome) {
            (Other::Passthrough(method), Ok(result)) => {
                return value_result_line(
                    id,
                    &era::passthrough_result(&method, result, modern_host),
                );
            }
            // An opened route: its error passes as the upstream wrote it.
            (Other::Passthrough(_), Err(error)) => return message::error_object_line(id, &error),
            (_, Err(error)) => return refusal_line(id, &relayed_error(&error)),
            (Other::Ping, Ok(_)) => return result_line(id, b"{}"),
            (Other::ToolsList { first_page }, Ok(result)) => {
                let upstream_tools = result
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                self.note_surface(
                    upstream_tools,
                    first_page && result.get("nextCursor").is_none(),
                );
                call::listing_for_host(
                    &self.loaded.registry,
                    self.front.observe(),
                    result,
                    |name, tool| self.matches_pin(name, tool),
                    modern_host,
                )
            }
            (Other::Initialize, Ok(result)) => {
                // The revision the upstream chose, where toolgate speaks it; the upstream's
                // `serverInfo` and `instructions` (free text a host may show the model) are not
                // passed on.
                let chosen = result.get("protocolVersion").and_then(Value::as_str);
                let Some(version) = LEGACY_VERSIONS.iter().find(|known| Some(**known) == chosen)
                else {
                    return error_line(
                        id,
                        codes::INTERNAL_ERROR,
                        "the upstream server chose a protocol revision toolgate does not speak",
                    );
                };
                json!({
                    "protocolVersion": version,
                    "capabilities": self.offered(result.get("capabilities")),
                    "serverInfo": era::implementation(),
                })
            }
            (Other::Discover, Ok(result)) => {
                let offered: Vec<&str> = era::supported_versions()
                    .into_iter()
                    .filter(|version| {
                        result
                            .get("supportedVersions")
                            .and_then(Value::as_array)
                            .is_some_and(|listed| listed.iter().any(|v| v == version))
                    })
                    .collect();
                era::modern_result(
                    "server/discover",
                    json!({
                        "supportedVersions": offered,
                        "capabilities": self.offered(result.get("capabilities")),
                    }),
                    None,
                )
            }
        };
        value_result_line(id, &result)
    }
}

/// What the host is given for an HTTP answer: the body, and its content type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    /// The body: one JSON-RPC message, or one server-sent event holding it.
    pub body: Vec<u8>,
    /// `application/json` or `text/event-stream`, as the upstream answered.
    pub content_type: &'static str,
}

impl Door {
    /// [`Door::answer`] for an answer over Streamable HTTP: its status, its `Content-Type`, its
    /// whole body (a JSON message, or a stream of events, buffered within the door's limit). An
    /// event stream is answered with one event, the answer: the upstream's notifications and
    /// requests on it are not passed on.
    pub fn answer_http(
        &self,
        exchange: Exchange,
        status: u16,
        content_type: &str,
        body: &[u8],
    ) -> HttpAnswer {
        let events = content_type
            .split(';')
            .next()
            .is_some_and(|media| media.trim().eq_ignore_ascii_case("text/event-stream"));
        let failed;
        let parsed_events;
        let answered = if !(200..300).contains(&status) {
            failed = format!("it answered HTTP {status}");
            Answered::Failed(&failed)
        } else if events {
            parsed_events = crate::sse::events_of(body, self.line_cap);
            match &parsed_events {
                Err(_) => Answered::Failed("an event longer than the door's limit"),
                Ok(events) => match events.iter().find(|event| {
                    !matches!(
                        message::parse(event),
                        Ok(Message::Request { .. } | Message::Notification { .. })
                    )
                }) {
                    Some(event) => Answered::Message(event),
                    None => Answered::Failed("its event stream ended without an answer"),
                },
            }
        } else {
            Answered::Message(body)
        };
        if events {
            return self.sse_answer(exchange, answered);
        }
        HttpAnswer {
            body: self.answer(exchange, answered),
            content_type: "application/json",
        }
    }

    /// The answer as one server-sent event.
    fn sse_answer(&self, exchange: Exchange, answered: Answered<'_>) -> HttpAnswer {
        let line = self.answer(exchange, answered);
        let mut body = Vec::with_capacity(line.len() + 24);
        body.extend_from_slice(b"event: message\ndata: ");
        body.extend_from_slice(&line);
        body.extend_from_slice(b"\n\n");
        HttpAnswer {
            body,
            content_type: "text/event-stream",
        }
    }
}
