//! `toolgate ext-proc`: Envoy's external processing filter, one MCP exchange over Streamable
//! HTTP per stream, in lock-step as Envoy sends its messages (the filter configured with
//! `request_body_mode: BUFFERED` and `response_body_mode: BUFFERED`, guide: "Inside Envoy"):
//!
//! 1. request headers: the method (a `GET` stream would carry the server's own messages, which
//!    nobody vouches for: refused), the caller, the trace, the session;
//! 2. request body: [`Door::request`]: forwarded (rewritten where the door rewrote it), or
//!    answered at once (`immediate_response`: the upstream is never called);
//! 3. response headers: the status and the content type, kept;
//! 4. response body: the upstream's raw bytes, decided ([`Door::answer_http`]) and replaced
//!    (`body_mutation`, `content-length` set by a header mutation).
//!
//! Fail closed: a body Envoy does not buffer whole, a stream out of order, a body past the
//! limit: the host gets the fixed failure or an error, never the upstream's bytes.

use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::header_value_option::HeaderAppendAction;
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption, Metadata};
use envoy_types::pb::envoy::service::ext_proc::v3::external_processor_server::{
    ExternalProcessor, ExternalProcessorServer,
};
use envoy_types::pb::envoy::service::ext_proc::v3::{
    BodyMutation, BodyResponse, CommonResponse, HeaderMutation, HeadersResponse, HttpHeaders,
    ImmediateResponse, ProcessingRequest, ProcessingResponse, TrailersResponse, body_mutation,
    common_response::ResponseStatus, processing_request::Request as Step,
    processing_response::Response as Reply,
};
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::google::protobuf::{Struct, value::Kind};
use tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};
use toolgate_mcp::{Asked, Door, Exchange, Sender};

use crate::CallerFrom;

/// The gRPC service, ready to serve.
pub(crate) fn service(
    door: Arc<Door>,
    caller_from: Option<CallerFrom>,
) -> tonic::transport::server::Router {
    let cap = door.max_message_bytes() + 64 * 1024;
    tonic::transport::Server::builder().add_service(
        ExternalProcessorServer::new(Processor { door, caller_from })
            .max_decoding_message_size(cap)
            .max_encoding_message_size(cap),
    )
}

struct Processor {
    door: Arc<Door>,
    caller_from: Option<CallerFrom>,
}

type Replies = Pin<Box<dyn Stream<Item = Result<ProcessingResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExternalProcessor for Processor {
    type ProcessStream = Replies;

    async fn process(
        &self,
        request: Request<Streaming<ProcessingRequest>>,
    ) -> Result<Response<Self::ProcessStream>, Status> {
        Ok(Response::new(Box::pin(Replying {
            steps: request.into_inner(),
            exchange: HttpExchange::new(Arc::clone(&self.door), self.caller_from.clone()),
        })))
    }
}

/// The replies of one stream, each made as Envoy's message is read, in the task that polls the
/// reply stream: no task of its own and no channel, so a message costs no wake-up of another
/// thread (a spawned task and a channel cost ten futex calls a call, measured). Ends when Envoy
/// ends the stream or abandons it: an exchange left waiting is dropped, its call no longer in
/// flight.
struct Replying {
    steps: Streaming<ProcessingRequest>,
    exchange: HttpExchange,
}

impl Stream for Replying {
    type Item = Result<ProcessingResponse, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        loop {
            match Pin::new(&mut self.steps).poll_next(context) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(step))) => {
                    if let Some(reply) = self.exchange.step(step) {
                        return Poll::Ready(Some(Ok(reply)));
                    }
                }
                Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(None),
            }
        }
    }
}

/// Where one stream's exchange stands.
enum Phase {
    /// Nothing read yet.
    Start,
    /// The request's headers read: who sent it.
    Headers(Who),
    /// The request forwarded: what its answer is decided as (`None`: a notification's).
    Forwarded(Option<Exchange>),
    /// The answer's headers read.
    Answering {
        exchange: Option<Exchange>,
        status: u16,
        content_type: String,
    },
    /// A stream toolgate does not look into past its headers (`DELETE`, ending a session).
    Passing,
    /// Answered: anything more is passed through untouched, having no body.
    Done,
}

/// What a request's headers say of its sender.
#[derive(Default)]
struct Who {
    caller: Option<String>,
    traceparent: Option<String>,
    session: Option<String>,
}

/// One stream: one HTTP request and its answer.
struct HttpExchange {
    door: Arc<Door>,
    caller_from: Option<CallerFrom>,
    phase: Phase,
}

impl HttpExchange {
    fn new(door: Arc<Door>, caller_from: Option<CallerFrom>) -> Self {
        HttpExchange {
            door,
            caller_from,
            phase: Phase::Start,
        }
    }

    /// Envoy's next message, and the reply to it (`None`: nothing is replied, a message this
    /// door did not ask for).
    fn step(&mut self, step: ProcessingRequest) -> Option<ProcessingResponse> {
        let metadata = step.metadata_context;
        let step = step.request?;
        // Trailers carry nothing the door decides, whenever Envoy sends them (the guide's
        // configuration skips them): continued, the exchange where it was.
        if matches!(step, Step::RequestTrailers(_) | Step::ResponseTrailers(_)) {
            return Some(reply(passed(&step)));
        }
        let replied = match (std::mem::replace(&mut self.phase, Phase::Done), step) {
            (Phase::Start, Step::RequestHeaders(headers)) => {
                self.request_headers(&headers, metadata.as_ref())
            }
            (Phase::Headers(who), Step::RequestBody(body)) => {
                if !body.end_of_stream {
                    return Some(immediate(
                        500,
                        error_body(
                            "toolgate ext-proc needs the whole request body: configure request_body_mode BUFFERED",
                        ),
                    ));
                }
                self.request_body(&who, &body.body)
            }
            (Phase::Forwarded(exchange), Step::ResponseHeaders(headers)) => {
                let status = header(&headers, ":status")
                    .and_then(|status| status.parse().ok())
                    .unwrap_or(0);
                let content_type = header(&headers, "content-type").unwrap_or_default();
                match exchange {
                    Some(exchange) if headers.end_of_stream => {
                        // An answer with no body: decided as the failure it is.
                        let answer = self.door.answer_http(exchange, status, &content_type, b"");
                        return Some(immediate_with(200, answer.content_type, answer.body));
                    }
                    exchange => {
                        self.phase = Phase::Answering {
                            exchange,
                            status,
                            content_type,
                        };
                        Reply::ResponseHeaders(HeadersResponse {
                            response: Some(continued()),
                        })
                    }
                }
            }
            (
                Phase::Answering {
                    exchange,
                    status,
                    content_type,
                },
                Step::ResponseBody(body),
            ) => self.response_body(
                exchange,
                status,
                &content_type,
                body.body,
                body.end_of_stream,
            ),
            (Phase::Passing, step) => {
                self.phase = Phase::Passing;
                passed(&step)
            }
            (_, _) => {
                // Out of order: Envoy is not configured as the guide says.
                return Some(immediate(
                    500,
                    error_body(
                        "toolgate ext-proc received Envoy's messages out of order: configure processing_mode as the guide says",
                    ),
                ));
            }
        };
        Some(reply(replied))
    }

    fn request_headers(&mut self, headers: &HttpHeaders, metadata: Option<&Metadata>) -> Reply {
        match header(headers, ":method").as_deref() {
            Some("POST") => {}
            Some("DELETE") => {
                self.phase = Phase::Passing;
                return Reply::RequestHeaders(HeadersResponse {
                    response: Some(continued()),
                });
            }
            // A GET opens the server's own stream of messages, which no contract vouches for.
            _ => {
                return immediate_reply(
                    405,
                    error_body(
                        "toolgate passes MCP messages a host POSTs; the server's own stream (GET) is not available",
                    ),
                );
            }
        }
        if headers.end_of_stream {
            return immediate_reply(400, error_body("a POST without a body"));
        }
        let caller = match &self.caller_from {
            Some(CallerFrom::Header(name)) => header(headers, name),
            Some(CallerFrom::Metadata { namespace, path }) => metadata
                .and_then(|metadata| metadata.filter_metadata.get(namespace))
                .and_then(|found| string_at(found, path)),
            None => None,
        };
        self.phase = Phase::Headers(Who {
            caller,
            traceparent: header(headers, "traceparent"),
            session: header(headers, "mcp-session-id"),
        });
        Reply::RequestHeaders(HeadersResponse {
            response: Some(continued()),
        })
    }

    fn request_body(&mut self, who: &Who, body: &[u8]) -> Reply {
        let sender = Sender {
            caller: who.caller.as_deref(),
            traceparent: who.traceparent.as_deref(),
            session: who.session.as_deref(),
        };
        match self.door.request(body, &sender) {
            Asked::Answer(line) if line.is_empty() => immediate_reply(202, Vec::new()),
            Asked::Answer(line) => immediate_reply(200, line),
            Asked::Forward {
                rewritten,
                exchange,
            } => {
                self.phase = Phase::Forwarded(exchange);
                let mut common = continued();
                if let Some(rewritten) = rewritten {
                    common.header_mutation = Some(set_headers(&[(
                        "content-length",
                        rewritten.len().to_string().as_bytes(),
                    )]));
                    common.body_mutation = Some(BodyMutation {
                        mutation: Some(body_mutation::Mutation::Body(rewritten)),
                    });
                }
                Reply::RequestBody(BodyResponse {
                    response: Some(common),
                })
            }
        }
    }

    fn response_body(
        &mut self,
        exchange: Option<Exchange>,
        status: u16,
        content_type: &str,
        body: Vec<u8>,
        whole: bool,
    ) -> Reply {
        let Some(exchange) = exchange else {
            // A notification's answer carries nothing the host needs: emptied.
            let mut common = continued();
            common.header_mutation = Some(set_headers(&[("content-length", b"0")]));
            common.body_mutation = Some(BodyMutation {
                mutation: Some(body_mutation::Mutation::ClearBody(true)),
            });
            return Reply::ResponseBody(BodyResponse {
                response: Some(common),
            });
        };
        let answer = if whole {
            self.door.answer_http(exchange, status, content_type, &body)
        } else {
            self.door
                .answer_http(exchange, 502, "application/json", b"")
        };
        let mut common = continued();
        common.header_mutation = Some(set_headers(&[
            ("content-length", answer.body.len().to_string().as_bytes()),
            ("content-type", answer.content_type.as_bytes()),
        ]));
        common.body_mutation = Some(BodyMutation {
            mutation: Some(body_mutation::Mutation::Body(answer.body)),
        });
        Reply::ResponseBody(BodyResponse {
            response: Some(common),
        })
    }
}

/// A header's value (Envoy sends `raw_value`; older versions `value`), its name lowercase.
fn header(headers: &HttpHeaders, name: &str) -> Option<String> {
    let found = headers
        .headers
        .as_ref()?
        .headers
        .iter()
        .find(|header| header.key.eq_ignore_ascii_case(name))?;
    if found.raw_value.is_empty() {
        Some(found.value.clone())
    } else {
        String::from_utf8(found.raw_value.clone()).ok()
    }
}

/// The string at `path` within `found`.
fn string_at(found: &Struct, path: &[String]) -> Option<String> {
    let (last, within) = path.split_last()?;
    let mut at = found;
    for key in within {
        match at.fields.get(key)?.kind.as_ref()? {
            Kind::StructValue(inner) => at = inner,
            _ => return None,
        }
    }
    match at.fields.get(last)?.kind.as_ref()? {
        Kind::StringValue(text) => Some(text.clone()),
        _ => None,
    }
}

fn reply(reply: Reply) -> ProcessingResponse {
    ProcessingResponse {
        response: Some(reply),
        ..Default::default()
    }
}

fn continued() -> CommonResponse {
    CommonResponse {
        status: ResponseStatus::Continue as i32,
        ..Default::default()
    }
}

/// What a stream this door does not look into gets: every message continued.
fn passed(step: &Step) -> Reply {
    let headers = || HeadersResponse {
        response: Some(continued()),
    };
    let body = || BodyResponse {
        response: Some(continued()),
    };
    match step {
        Step::RequestHeaders(_) => Reply::RequestHeaders(headers()),
        Step::ResponseHeaders(_) => Reply::ResponseHeaders(headers()),
        Step::RequestBody(_) => Reply::RequestBody(body()),
        Step::ResponseBody(_) => Reply::ResponseBody(body()),
        Step::RequestTrailers(_) => Reply::RequestTrailers(TrailersResponse::default()),
        Step::ResponseTrailers(_) => Reply::ResponseTrailers(TrailersResponse::default()),
    }
}

fn set_headers(headers: &[(&str, &[u8])]) -> HeaderMutation {
    HeaderMutation {
        set_headers: headers
            .iter()
            .map(|(key, value)| HeaderValueOption {
                header: Some(HeaderValue {
                    key: (*key).to_owned(),
                    raw_value: value.to_vec(),
                    ..Default::default()
                }),
                append_action: HeaderAppendAction::OverwriteIfExistsOrAdd as i32,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A JSON-RPC error with no id, for what is not a message toolgate can route.
fn error_body(message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": message},
    }))
    .unwrap_or_default()
}

fn immediate_reply(status: u16, body: Vec<u8>) -> Reply {
    immediate_of(status, "application/json", body)
}

fn immediate_of(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
    let headers = if body.is_empty() {
        None
    } else {
        Some(set_headers(&[("content-type", content_type.as_bytes())]))
    };
    Reply::ImmediateResponse(ImmediateResponse {
        status: Some(HttpStatus {
            code: i32::from(status),
        }),
        headers,
        body,
        ..Default::default()
    })
}

fn immediate(status: u16, body: Vec<u8>) -> ProcessingResponse {
    immediate_with(status, "application/json", body)
}

fn immediate_with(status: u16, content_type: &str, body: Vec<u8>) -> ProcessingResponse {
    reply(immediate_of(status, content_type, body))
}
