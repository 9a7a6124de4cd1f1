//! The HTTP answers the listener writes: JSON lines, SSE streams, and the fixed refusals (too
//! many requests, unauthorized), each with the status a JSON-RPC line maps to.

use super::*;
use crate::message::Wanted;

/// `429`: over the caller rate, to be tried again after `wait` (in whole seconds, at least one).
pub(super) fn too_many(wait: Duration) -> Response<Body> {
    let mut response = json_error(
        StatusCode::TOO_MANY_REQUESTS,
        &Value::Null,
        codes::INTERNAL_ERROR,
        "this caller is over its request rate (--caller-rate); try again after Retry-After seconds",
    );
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// How the metrics name a refused token.
pub(super) fn refusal_of(denied: &Denied) -> CallerRefusal {
    match denied {
        Denied::Missing => CallerRefusal::Missing,
        Denied::Invalid(_) => CallerRefusal::Invalid,
        Denied::Insufficient { .. } => CallerRefusal::Insufficient,
    }
}

/// `401` (no valid token) or `403` (a scope or claim missing), with the challenge that names
/// the resource's metadata and what is needed.
pub(super) fn unauthorized(auth: &Authorizer, denied: &Denied) -> Response<Body> {
    let (status, message) = match denied {
        Denied::Missing => (
            StatusCode::UNAUTHORIZED,
            "this endpoint needs a bearer token (Authorization: Bearer …) from its authorization server".to_owned(),
        ),
        Denied::Invalid(why) => (StatusCode::UNAUTHORIZED, format!("the bearer token was refused: {why}")),
        Denied::Insufficient { why, .. } => (StatusCode::FORBIDDEN, why.clone()),
    };
    let mut response = json_error(status, &Value::Null, codes::INVALID_REQUEST, &message);
    if let Ok(challenge) = HeaderValue::from_str(&auth.challenge(denied)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// Where a request's response arrives, read ([`Answer`]) as the proxy handed it over.
pub(super) type Answered = oneshot::Receiver<(Vec<u8>, Answer)>;

/// What the listener needs to know of a line the proxy wrote to an HTTP host, read in one pass:
/// whether it is a response (it has no method), a result, and the code of its error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Answer {
    pub(super) response: bool,
    pub(super) result: bool,
    error_code: Option<i64>,
}

impl Answer {
    /// A response holding a result.
    pub(super) const RESULT: Answer = Answer {
        response: true,
        result: true,
        error_code: None,
    };

    pub(super) fn of(line: &[u8]) -> Answer {
        let read = message::members(
            line,
            [
                Wanted::presence(&["method"]),
                Wanted::presence(&["result"]),
                Wanted::value(&["error", "code"]),
            ],
        );
        match read {
            Ok([method, result, code]) => Answer {
                response: !method.is_present(),
                result: result.is_present(),
                error_code: code.into_value().and_then(|code| code.as_i64()),
            },
            // Not a line the proxy writes: nothing it could answer with.
            Err(_) => Answer {
                response: false,
                result: false,
                error_code: None,
            },
        }
    }

    /// The HTTP status of a response: 400 for the errors the revision sends with 400
    /// (malformed requests, header mismatches, unsupported versions, missing capabilities), 404
    /// for an unknown method, 200 otherwise.
    pub(super) fn status(&self) -> StatusCode {
        match self.error_code {
            Some(codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
            Some(
                codes::PARSE_ERROR
                | codes::INVALID_REQUEST
                | codes::INVALID_PARAMS
                | modern_codes::HEADER_MISMATCH
                | modern_codes::MISSING_CLIENT_CAPABILITY
                | modern_codes::UNSUPPORTED_PROTOCOL_VERSION,
            ) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        }
    }
}

/// An SSE response: the progress the proxy writes for this request (as much as is held), then
/// the response; the stream ends after it. Dropped before the response (the host closed it),
/// `waiting` cancels the request.
pub(super) fn sse(
    progress: mpsc::Receiver<Vec<u8>>,
    answered: Answered,
    waiting: Waiting,
    permit: OwnedSemaphorePermit,
) -> Response<Body> {
    let events = events(progress, answered, waiting, permit);
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(events)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The events of an SSE response: progress while the answer is awaited, then the answer.
pub(super) fn events(
    mut progress: mpsc::Receiver<Vec<u8>>,
    mut answered: Answered,
    waiting: Waiting,
    permit: OwnedSemaphorePermit,
) -> impl futures_core::Stream<Item = Result<Frame<Bytes>, Infallible>> {
    let mut held = Some((waiting, permit));
    let event = |line: &[u8]| {
        let mut event = b"event: message\ndata: ".to_vec();
        event.extend_from_slice(line);
        event.extend_from_slice(b"\n\n");
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
    };
    poll_stream(move |context| {
        if held.is_none() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(Some(line)) = progress.poll_recv(context) {
            return event(&line);
        }
        match Pin::new(&mut answered).poll(context) {
            Poll::Ready(Ok((line, _))) => {
                if let Some((waiting, _permit)) = held.take() {
                    waiting.answered();
                }
                event(&line)
            }
            // The proxy dropped the request without an answer: the stream ends.
            Poll::Ready(Err(_)) => {
                if let Some((waiting, _permit)) = held.take() {
                    waiting.answered();
                }
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    })
}

/// A stream from a poll function.
pub(super) fn poll_stream<T>(
    poll: impl FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
) -> impl futures_core::Stream<Item = T> {
    struct PollStream<F>(F);
    impl<T, F> futures_core::Stream for PollStream<F>
    where
        F: FnMut(&mut Context<'_>) -> Poll<Option<T>> + Unpin,
    {
        type Item = T;
        fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<T>> {
            (self.0)(context)
        }
    }
    PollStream(poll)
}

pub(super) fn json(status: StatusCode, line: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::from(line))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn json_error(
    status: StatusCode,
    id: &Value,
    code: i64,
    message: &str,
) -> Response<Body> {
    let refusal = era::Refusal {
        code,
        message: message.to_owned(),
        data: None,
    };
    let line = if id.is_null() {
        // An error the revision sends without an id.
        serde_json::json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}})
            .to_string()
            .into_bytes()
    } else {
        refusal_line(id, &refusal)
    };
    json(status, line)
}

pub(super) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::from_static(
        body.as_bytes(),
    ))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::new())));
    *response.status_mut() = status;
    response
}
