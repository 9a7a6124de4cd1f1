//! The host side over Streamable HTTP (`--listen ADDR`): one endpoint, `POST /mcp`, each
//! request its own host with nothing kept between requests, so any number of proxies behind
//! any load balancer serve one host alike. Plus `GET /healthz` (the process answers) and
//! `GET /readyz` (the upstream's era is settled and it is still there), for an orchestrator.
//!
//! Per the 2026-07-28 transport: a modern request's `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers must agree with its body (`-32020` and 400 otherwise), since a load
//! balancer may route on them; a handshake-era request need not send them, but one that does is
//! held to them all the same. A request is answered with one JSON object, or, when it asked for
//! progress and accepts it, an SSE stream of the progress and then the response; a
//! notification with 202. A modern host that closes its stream before the answer has cancelled
//! the request, and the upstream hears of it. A handshake-era host's `initialize` gets an
//! `Mcp-Session-Id`, which its later POSTs carry: nothing is kept for it but what ties a
//! `notifications/cancelled` to the request it cancels. `GET` and `DELETE` get 405. An `Origin`
//! header must be one the operator allowed (DNS rebinding), or the answer is 403.
//!
//! Bounded, whatever a client does ([`Limits`], RELIABILITY.md "The HTTP listener"): at most
//! `max_connections` connections (one more is answered 503 and closed), a connection that sends
//! no complete request head within `header_timeout` of its first byte, or nothing within
//! `idle_timeout` between requests, is closed; a body must arrive within `body_timeout`; at most
//! `max_requests_in_flight` requests are read or answered at once (each holding at most the
//! line cap of body and of answer), the rest wait for one up to `body_timeout`, then get 503;
//! progress for a stream nobody reads is dropped past a few dozen lines. Accept errors (the
//! descriptor limit) back off instead of spinning, and every log line the listener can repeat
//! is rate-limited. What blocks (a write to a stdio upstream that stopped reading) runs on the
//! runtime's blocking threads, never on the workers that answer `/healthz`.

mod activity;
mod answers;
mod drain;
mod headers;
use activity::{Activity, Busy, Watched, tracked};
use answers::{
    Answer, Answered, empty, json, json_error, refusal_of, sse, text, too_many, unauthorized,
};
pub use drain::Drain;
pub(crate) use drain::{Drained, ignore_hangup, stop_signal};
pub(crate) use headers::encode_header_value;
use headers::{accepts, check_headers, check_origin, new_session_id, session_of};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::auth::{Authorizer, CallerRate, Denied, OverLimit};
use super::era::refusal_line;
use super::era::{self, RequestEra, modern_codes};
use super::lock;
use super::message::{self, Message, codes};
use super::proxy::{Grant, Host, Proxy, Sent};
use crate::lines::{RateLimited, log};
use toolgate_telemetry::{CallerRefusal, Metrics};

/// The MCP endpoint's path.
pub(crate) const ENDPOINT: &str = "/mcp";

/// How the listener is set up.
#[derive(Debug, Clone)]
pub(crate) struct Listen {
    /// The `Origin` values a browser page may send beyond the loopback ones.
    pub allowed_origins: Vec<String>,
    /// Whether the listener is bound to a loopback address: then a request must name a
    /// loopback host (`Host`), and a loopback `Origin` is allowed without being listed.
    pub loopback: bool,
    /// The largest request body read.
    pub body_cap: usize,
    /// What one client, or many, may hold.
    pub limits: Limits,
    /// The resource server (`--auth`): who may call, and what.
    pub auth: Option<Arc<Authorizer>>,
    /// The per-caller rate limit (`--caller-rate`).
    pub rate: Option<Arc<CallerRate>>,
    /// Where callers turned away are counted, if anywhere.
    pub metrics: Option<Arc<Metrics>>,
    /// Whether `GET /metrics` is served here (not when `--metrics ADDR` moves it elsewhere).
    pub serve_metrics: bool,
    /// The digest of the token a scraper must send for `/metrics` here (`--metrics-token-file`);
    /// without one, `/metrics` is served here only where nobody is authenticated.
    pub metrics_token: Option<[u8; 32]>,
}

/// The listener's bounds: what connections, requests and their bodies may hold, and for how
/// long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most connections open at once.
    pub max_connections: usize,
    /// The most requests whose body is being read, or whose answer is awaited or written.
    pub max_requests_in_flight: usize,
    /// How long a request's head may take, from its first byte.
    pub header_timeout: Duration,
    /// How long a kept-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How long a request's body may take to arrive (and a request may wait for its turn).
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 512,
            max_requests_in_flight: 64,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            body_timeout: Duration::from_secs(30),
        }
    }
}

/// The most bytes hyper buffers for one connection's request head (and reads ahead).
const HEAD_BUFFER: usize = 64 * 1024;

/// The most progress lines held for a stream its host does not read; more are dropped
/// (progress is advisory). The response itself is always kept.
const PROGRESS_HELD: usize = 32;

type Body = BoxBody<Bytes, Infallible>;

static ACCEPT_FAILED: RateLimited = RateLimited::new("accepting a connection failed: ");
static AT_CAPACITY: RateLimited =
    RateLimited::new("refused a connection with 503: the listener holds --max-connections ");
static BUSY: RateLimited = RateLimited::new(
    "answered a request with 503: --max-requests-in-flight requests are in flight ",
);

/// Serves hosts on `listener` until `stop` resolves (SIGTERM or SIGINT, for the proxy), then
/// drains as `drain` says ([`drain`](self::drain)): what it did, for the closing line.
pub(crate) async fn serve(
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    options: Listen,
    drain: Drain,
    stop: impl Future<Output = ()>,
) -> Drained {
    if let Some(auth) = &options.auth {
        tokio::spawn(Arc::clone(auth).refresh_periodically());
    }
    if let Some(rate) = &options.rate {
        tokio::spawn(Arc::clone(rate).forget_idle_periodically());
    }
    let max_connections = options.limits.max_connections;
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut acceptor = Acceptor {
        listener,
        connections: Arc::new(Semaphore::new(max_connections)),
        requests: Arc::new(Semaphore::new(options.limits.max_requests_in_flight)),
        options: Arc::new(options),
        proxy: Arc::clone(&proxy),
        closing: closed,
        backoff: Duration::ZERO,
    };
    acceptor.accept_until(stop).await;
    let signalled = Instant::now();
    proxy.begin_draining();
    let in_flight = proxy.calls_in_flight();
    log(&format!(
        "stopping: /readyz answers 503; new connections are served for {:?} more, then the {in_flight} call(s) in flight are waited for, up to {:?} from now",
        drain.min, drain.timeout
    ));
    let min = tokio::time::sleep(drain.min.min(drain.timeout));
    acceptor
        .accept_until(async {
            tokio::select! {
                () = min => {}
                () = stop_signal() => log("a second signal: the drain is cut short"),
            }
        })
        .await;
    let connections = Arc::clone(&acceptor.connections);
    // No new connection from here; each open one closes once its request is answered.
    drop(acceptor);
    let _ = closing.send(true);
    let calls_deadline = drain.calls_deadline(signalled, proxy.front().retains());
    tokio::select! {
        _ = all_closed(&connections, max_connections) => {}
        () = tokio::time::sleep_until(calls_deadline.into()) => {}
        () = stop_signal() => log("a second signal: calls in flight are cut now"),
    }
    let cut = proxy.cut_in_flight(
        "the proxy stopped (its drain deadline passed) while the upstream ran the call",
    );
    if cut > 0 {
        // The cut calls' answers are written before the runtime stops.
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            all_closed(&connections, max_connections),
        )
        .await;
    }
    Drained {
        signalled: Some(signalled),
        in_flight,
        cut,
    }
}

/// Resolves once every connection has closed (all `max` permits are back).
async fn all_closed(connections: &Arc<Semaphore>, max: usize) {
    let max = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = connections.acquire_many(max).await;
}

/// The listener's accepting half: each connection accepted is served on a task of its own.
struct Acceptor {
    listener: tokio::net::TcpListener,
    connections: Arc<Semaphore>,
    requests: Arc<Semaphore>,
    options: Arc<Listen>,
    proxy: Arc<Proxy>,
    /// Becomes `true` when the listener drains: each connection then closes once its request
    /// is answered.
    closing: tokio::sync::watch::Receiver<bool>,
    backoff: Duration,
}

impl Acceptor {
    /// Accepts connections until `until` resolves.
    async fn accept_until(&mut self, until: impl Future<Output = ()>) {
        tokio::pin!(until);
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut until => return,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => {
                    self.backoff = Duration::ZERO;
                    accepted
                }
                Err(error) => {
                    // Out of descriptors, say: accepting again at once would spin. Waits that
                    // grow to a second, while connections in flight finish and free theirs.
                    self.backoff =
                        (self.backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                    ACCEPT_FAILED.log(&format!("{error}; accepting again in {:?}", self.backoff));
                    tokio::select! {
                        () = tokio::time::sleep(self.backoff) => continue,
                        () = &mut until => return,
                    }
                }
            };
            let Ok(permit) = Arc::clone(&self.connections).try_acquire_owned() else {
                AT_CAPACITY.log(&format!("({})", self.options.limits.max_connections));
                tokio::spawn(refuse_connection(stream));
                continue;
            };
            tokio::spawn(connection(
                stream,
                peer,
                permit,
                Arc::clone(&self.proxy),
                Arc::clone(&self.options),
                Arc::clone(&self.requests),
                self.closing.clone(),
            ));
        }
    }
}

/// A connection past the cap: one `503` written within a second, then closed.
async fn refuse_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let answer = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer)).await;
}

/// One connection, served until it closes, or is closed for sitting idle or sending its head
/// too slowly.
async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    _permit: OwnedSemaphorePermit,
    proxy: Arc<Proxy>,
    options: Arc<Listen>,
    requests: Arc<Semaphore>,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = hyper_util::rt::TokioIo::new(Watched {
        inner: stream,
        activity: Arc::clone(&activity),
    });
    let service = {
        let activity = Arc::clone(&activity);
        let options = Arc::clone(&options);
        hyper::service::service_fn(move |request| {
            let proxy = Arc::clone(&proxy);
            let options = Arc::clone(&options);
            let requests = Arc::clone(&requests);
            let busy = Busy::begin(&activity);
            async move {
                let response = handle(proxy, &options, &requests, peer, request).await;
                Ok::<_, Infallible>(response.map(|body| tracked(body, busy)))
            }
        })
    };
    let limits = &options.limits;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        // hyper's own timer starts while a connection waits too: the two bounds together are
        // its backstop; `Activity` keeps each one.
        .header_read_timeout(limits.header_timeout + limits.idle_timeout)
        .max_buf_size(HEAD_BUFFER);
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    let tick = (limits.header_timeout.min(limits.idle_timeout) / 4)
        .clamp(Duration::from_millis(20), Duration::from_secs(1));
    // A connection accepted while the listener drains closes after its first answer.
    let mut closed = *closing.borrow();
    if closed {
        served.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            _ = &mut served => return,
            _ = closing.changed(), if !closed => {
                closed = true;
                served.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep(tick) => {
                if activity.overdue(limits) {
                    // Dropping the connection closes it.
                    return;
                }
            }
        }
    }
}

/// The address a `--listen` value names.
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("{text:?} is not an address to listen on: write IP:PORT, e.g. 127.0.0.1:8080")
    })
}

/// Whether a request carries the scrape token: its digest compared with the wanted one's, so the
/// comparison's time says nothing of the token.
fn scrape_token_matches(headers: &HeaderMap, wanted: &[u8; 32]) -> bool {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    let Some(token) = value
        .to_str()
        .ok()
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
    else {
        return false;
    };
    let digest: [u8; 32] = <sha2::Sha256 as sha2::Digest>::digest(token.as_bytes()).into();
    digest == *wanted
}

async fn handle(
    proxy: Arc<Proxy>,
    options: &Listen,
    requests: &Arc<Semaphore>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    if request.method() == Method::GET
        && let Some(metadata) = options
            .auth
            .as_ref()
            .and_then(|auth| auth.metadata(request.uri().path()))
    {
        // RFC 9728 §3.2: the metadata, as JSON, to anyone (it is what a client reads first).
        return json(
            StatusCode::OK,
            serde_json::to_vec(metadata).unwrap_or_default(),
        );
    }
    if options.serve_metrics
        && request.uri().path() == toolgate_telemetry::METRICS_PATH
        && let Some(metrics) = &options.metrics
    {
        // The metrics name tools, versions, digests and counts: with a scrape token, only to
        // whoever sends it; under --auth without one, not here at all (--metrics ADDR serves
        // them on a port of the operator's choosing); else, like /healthz, to anyone.
        match (&options.metrics_token, &options.auth) {
            (Some(wanted), _) if !scrape_token_matches(request.headers(), wanted) => {
                let mut response = text(
                    StatusCode::UNAUTHORIZED,
                    "/metrics needs the scrape token (Authorization: Bearer …, --metrics-token-file)\n",
                );
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return response;
            }
            (None, Some(_)) => {
                return text(
                    StatusCode::NOT_FOUND,
                    "not found: under --auth the metrics are served on --metrics ADDR, or here with --metrics-token-file\n",
                );
            }
            _ => {
                return toolgate_telemetry::scrape_response(metrics, &request)
                    .map(|body| body.map_err(|never| match never {}).boxed());
            }
        }
    }
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/healthz") if proxy.healthy() => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/healthz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "the upstream process exited and is not started again (--upstream-restart)\n",
        ),
        (&Method::GET, "/readyz") if proxy.draining() => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: the proxy is stopping (SIGTERM); it answers the calls in flight\n",
        ),
        (&Method::GET, "/readyz") if proxy.ready() => text(StatusCode::OK, "ready\n"),
        (&Method::GET, "/readyz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the upstream's era is not settled, or it is gone or not answering\n",
        ),
        (&Method::POST, ENDPOINT) => post(proxy, options, requests, peer, request).await,
        (_, ENDPOINT) => {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "the MCP endpoint takes POST only: no session stream, no session to delete\n",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            response
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the MCP endpoint is /mcp\n",
        ),
    }
}

/// Who asks, and whether they may now: their verified token's caller under `--auth`, each
/// held to the caller rate (a token not verified before, or none, to its address's first, before
/// any signature is checked, so a stream of junk tokens is answered 429 without one); or why
/// not, and the answer to give.
async fn admit_caller(
    options: &Listen,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> Result<Option<Grant>, Box<(CallerRefusal, Response<Body>)>> {
    let grant = match &options.auth {
        Some(auth) => {
            let token = auth.bearer_token(headers);
            let cached = token.as_ref().ok().and_then(|token| auth.cached(token));
            if cached.is_none() {
                rate_check(options, format!("address {}", peer.ip())).await?;
            }
            let verified = match (token, cached) {
                (Err(denied), _) => Err(denied),
                (Ok(_), Some(answer)) => answer,
                (Ok(token), None) => auth.verify(token).await,
            }
            .and_then(|caller| auth.admits(&caller).map(|()| caller))
            .map_err(|denied| Box::new((refusal_of(&denied), unauthorized(auth, &denied))))?;
            Some(Grant {
                caller: verified,
                authorizer: Arc::clone(auth),
            })
        }
        None => None,
    };
    rate_check(
        options,
        match &grant {
            Some(grant) => format!("caller {}", grant.caller.subject),
            None => format!("address {}", peer.ip()),
        },
    )
    .await?;
    Ok(grant)
}

/// Holds `key` (a caller, or an address) to `--caller-rate`: `Ok`, or the refusal to answer.
async fn rate_check(
    options: &Listen,
    key: String,
) -> Result<(), Box<(CallerRefusal, Response<Body>)>> {
    let Some(rate) = &options.rate else {
        return Ok(());
    };
    match rate.check(&key).await {
        Ok(()) => Ok(()),
        Err(OverLimit::Wait(wait)) => Err(Box::new((CallerRefusal::Rate, too_many(wait)))),
        Err(OverLimit::StoreUnavailable) => {
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                codes::INTERNAL_ERROR,
                "the caller rate limit cannot be checked now; try again",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Err(Box::new((CallerRefusal::RateStoreUnavailable, response)))
        }
    }
}

async fn post(
    proxy: Arc<Proxy>,
    options: &Listen,
    requests: &Arc<Semaphore>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<Body> {
    let refused_caller = |refusal: CallerRefusal| {
        if let Some(metrics) = &options.metrics {
            metrics.caller_refused(refusal);
        }
    };
    if let Err(refused) = check_origin(request.headers(), options) {
        refused_caller(CallerRefusal::Origin);
        return json_error(
            StatusCode::FORBIDDEN,
            &Value::Null,
            codes::INVALID_REQUEST,
            refused,
        );
    }
    // Who asks, before anything of theirs is read: a token that does not verify costs the
    // listener no body.
    let grant = match admit_caller(options, peer, request.headers()).await {
        Ok(grant) => grant,
        Err(refused) => {
            let (refusal, response) = *refused;
            refused_caller(refusal);
            return response;
        }
    };
    // A request is read and answered holding one of the permits, which bounds the bodies and
    // answers held at once; its turn is waited for no longer than a body may take.
    let permit = match tokio::time::timeout(
        options.limits.body_timeout,
        Arc::clone(requests).acquire_owned(),
    )
    .await
    {
        Ok(Ok(permit)) => permit,
        _ => {
            BUSY.log(&format!("({})", options.limits.max_requests_in_flight));
            let mut response = json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &Value::Null,
                codes::INTERNAL_ERROR,
                "the proxy is answering as many requests as it may; try again",
            );
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
    };
    let wants_stream = accepts(request.headers(), "text/event-stream");
    let headers = request.headers().clone();
    let traceparent = headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .filter(|value| value.len() <= 128)
        .map(str::to_owned);
    let body = match tokio::time::timeout(
        options.limits.body_timeout,
        Limited::new(request.into_body(), options.body_cap).collect(),
    )
    .await
    {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(_)) => {
            return json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &Value::Null,
                codes::INVALID_REQUEST,
                &format!(
                    "a message longer than {} bytes; not forwarded",
                    options.body_cap
                ),
            );
        }
        Err(_) => {
            return json_error(
                StatusCode::REQUEST_TIMEOUT,
                &Value::Null,
                codes::INVALID_REQUEST,
                &format!(
                    "the body did not arrive within {:?}; not forwarded",
                    options.limits.body_timeout
                ),
            );
        }
    };
    let parsed = match message::parse(&body) {
        Ok(parsed) => parsed,
        Err(why) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                codes::PARSE_ERROR,
                &format!("not forwarded: {why}"),
            );
        }
    };
    let session = session_of(&headers);
    let (id, method, params) = match parsed {
        Message::Response { .. } => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                codes::INVALID_REQUEST,
                "a client does not send responses over Streamable HTTP: toolgate passes no server requests to an HTTP host",
            );
        }
        Message::Notification { method, params } => {
            if let Err(mismatch) = check_headers(&headers, &method, &params) {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    modern_codes::HEADER_MISMATCH,
                    &mismatch,
                );
            }
            let host = Host::with_peer(Arc::new(|_, _| {}), false, session, grant, None);
            forward(
                &proxy,
                &host,
                Message::Notification { method, params },
                body,
            )
            .await;
            return empty(StatusCode::ACCEPTED);
        }
        Message::Request { id, method, params } => (id, method, params),
    };
    if let Err(mismatch) = check_headers(&headers, &method, &params) {
        return json_error(
            StatusCode::BAD_REQUEST,
            &id,
            modern_codes::HEADER_MISMATCH,
            &mismatch,
        );
    }
    // A call's tool name is read once, strictly, before anything decides on it: a name that
    // is not a string (`["weather"]`) is refused, never taken for no name.
    let tool_name = match (method.as_str(), params.get("name")) {
        ("tools/call", Some(Value::String(name))) => Some(name.as_str()),
        ("tools/call", _) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &id,
                codes::INVALID_PARAMS,
                "tools/call needs a tool `name`, a string",
            );
        }
        _ => None,
    };
    // A tool the caller may not call is refused here and never reaches the upstream; one with
    // no contract is refused alike, so that the answer tells a caller nothing of the tools it
    // cannot see.
    if let (Some(grant), Some(name)) = (&grant, tool_name)
        && let Err(denied) = grant
            .authorizer
            .may_call(&grant.caller, proxy.has_contract(name).then_some(name))
    {
        refused_caller(refusal_of(&denied));
        return unauthorized(&grant.authorizer, &denied);
    }
    let modern = matches!(era::request_era(&params), Ok(RequestEra::Modern { .. }));
    let streams = wants_stream
        && params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .is_some();
    let (reply, progressed, answered) = answer_channels();
    let host = Host::with_peer(reply, false, session, grant, traceparent);
    // Until the answer is had, a modern host that goes away (its stream closed: the future
    // dropped) has cancelled the request.
    let waiting = Waiting {
        proxy: Arc::clone(&proxy),
        host: modern.then(|| Arc::clone(&host)),
    };
    let is_initialize = method == "initialize";
    let request = Message::Request {
        id: id.clone(),
        method,
        params,
    };
    forward(&proxy, &host, request, body).await;
    drop(host);
    if streams {
        return sse(progressed, answered, waiting, permit);
    }
    let Ok((line, answer)) = answered.await else {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &id,
            codes::INTERNAL_ERROR,
            "the proxy ended the request without an answer",
        );
    };
    waiting.answered();
    let status = answer.status();
    let opened = is_initialize && status == StatusCode::OK && answer.result;
    let mut response = json(status, line);
    if opened {
        // A handshake-era host's session: what ties its later `notifications/cancelled` to the
        // requests it made. Nothing else is kept for it.
        response
            .headers_mut()
            .insert("mcp-session-id", new_session_id());
    }
    drop(permit);
    response
}

/// Where one request's answers go: its response (one line, always kept) and the progress before
/// it, of which a stream nobody reads holds [`PROGRESS_HELD`] lines, never more (the rest are
/// dropped: progress is advisory).
fn answer_channels() -> (super::proxy::Reply, mpsc::Receiver<Vec<u8>>, Answered) {
    let (answer, answered) = oneshot::channel::<(Vec<u8>, Answer)>();
    let (progress, progressed) = mpsc::channel::<Vec<u8>>(PROGRESS_HELD);
    let answer = Mutex::new(Some(answer));
    let reply: super::proxy::Reply = Arc::new(move |line, sent| {
        // Read once, here (unless the proxy said what it wrote): the response's status and
        // kind go with it.
        let read = match sent {
            Sent::Result => Answer::RESULT,
            Sent::Line => Answer::of(&line),
        };
        debug_assert_eq!(
            read,
            Answer::of(&line),
            "the proxy told its line's kind wrong"
        );
        if read.response {
            if let Some(answer) = lock(&answer).take() {
                let _ = answer.send((line, read));
            }
        } else {
            let _ = progress.try_send(line);
        }
    });
    (reply, progressed, answered)
}

/// Hands a host's message (read from `body`) to the proxy, on a blocking thread where
/// forwarding it may write to a stdio upstream's input, which blocks when the upstream stops
/// reading (its watchdog then stops it): that must never hold a worker that answers `/healthz`.
async fn forward(proxy: &Arc<Proxy>, host: &Arc<Host>, message: Message, body: Bytes) {
    if !proxy.forwarding_may_block() {
        // An HTTP upstream's sends are tasks of their own: nothing here waits.
        return proxy.host_parsed(host, Ok(message), body.to_vec());
    }
    let proxy = Arc::clone(proxy);
    let host = Arc::clone(host);
    let _ =
        tokio::task::spawn_blocking(move || proxy.host_parsed(&host, Ok(message), body.to_vec()))
            .await;
}

/// A modern request not yet answered: dropped before [`Waiting::answered`], its host has gone,
/// and the proxy cancels the request toward the upstream.
struct Waiting {
    proxy: Arc<Proxy>,
    host: Option<Arc<Host>>,
}

impl Waiting {
    fn answered(mut self) {
        self.host = None;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Cancelling never blocks (a stdio link queues it for a writer of its own).
        if let Some(host) = self.host.take() {
            self.proxy.host_gone(&host);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::headers::decode_header_value;
    use super::*;

    #[test]
    fn header_values_round_trip_and_unsafe_ones_are_encoded() {
        for value in [
            "get_weather",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?x?=",
        ] {
            assert_eq!(
                decode_header_value(&encode_header_value(value)).as_deref(),
                Some(value)
            );
        }
        assert_eq!(encode_header_value("us-west1"), "us-west1");
        assert_eq!(
            encode_header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
    }

    #[test]
    fn a_loopback_listener_refuses_foreign_hosts_and_origins() {
        let options = Listen {
            allowed_origins: vec!["https://host.example".to_owned()],
            loopback: true,
            body_cap: 1024,
            limits: Limits::default(),
            auth: None,
            rate: None,
            metrics: Some(Arc::new(Metrics::new())),
            serve_metrics: true,
            metrics_token: None,
        };
        let headers = |host: &'static str, origin: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static(host));
            if let Some(origin) = origin {
                headers.insert(header::ORIGIN, HeaderValue::from_static(origin));
            }
            headers
        };
        for (host, origin) in [
            ("127.0.0.1:8080", None),
            ("localhost:8080", Some("http://localhost:8080")),
            ("[::1]:8080", Some("http://[::1]:8080")),
            ("127.0.0.1:8080", Some("https://host.example")),
        ] {
            assert_eq!(
                check_origin(&headers(host, origin), &options),
                Ok(()),
                "{host} {origin:?}"
            );
        }
        for (host, origin) in [
            ("evil.example.com", Some("http://evil.example.com")),
            ("evil.example.com", None),
            ("127.0.0.1:8080", Some("http://evil.example.com")),
            ("localhost.evil.example", None),
        ] {
            assert!(
                check_origin(&headers(host, origin), &options).is_err(),
                "{host} {origin:?}"
            );
        }
        let public = Listen {
            loopback: false,
            ..options
        };
        assert_eq!(
            check_origin(&headers("mcp.example.com", None), &public),
            Ok(())
        );
        assert!(
            check_origin(
                &headers("mcp.example.com", Some("http://localhost")),
                &public
            )
            .is_err()
        );
    }

    #[test]
    fn an_unread_stream_holds_a_few_progress_lines_and_always_its_answer() {
        let (reply, mut progress, mut answer) = answer_channels();
        let line = br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}"#;
        for _ in 0..10_000 {
            reply(line.to_vec(), Sent::Line);
        }
        // Told that it is a result, the stream takes it as the one it read itself would be.
        reply(
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec(),
            Sent::Result,
        );
        let mut held = 0;
        while progress.try_recv().is_ok() {
            held += 1;
        }
        assert_eq!(held, PROGRESS_HELD);
        let (line, read) = answer.try_recv().unwrap();
        assert_eq!(line, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec());
        assert!(read.response && read.result);
        assert_eq!(read.status(), StatusCode::OK);
        // What a proxy that says `Sent::Result` writes is read as that.
        let written = message::result_line(&serde_json::json!("a"), br#"{"isError":true}"#);
        assert_eq!(Answer::of(&written), Answer::RESULT);
    }

    /// A line's kind and status, read in one pass: each error code the revision answers with a
    /// status of its own, other codes and results 200, and what is not a response not taken for
    /// one.
    #[test]
    fn an_answer_is_read_once_for_its_kind_and_status() {
        let cases: [(&[u8], bool, bool, StatusCode); 8] = [
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
                true,
                true,
                StatusCode::OK,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
                true,
                false,
                StatusCode::NOT_FOUND,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#,
                true,
                false,
                StatusCode::BAD_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no"}}"#,
                true,
                false,
                StatusCode::OK,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601.0}}"#,
                true,
                false,
                StatusCode::OK,
            ),
            (
                br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
                false,
                false,
                StatusCode::OK,
            ),
            (
                br#"{"jsonrpc":"2.0","method":null}"#,
                false,
                false,
                StatusCode::OK,
            ),
            (br#"{"jsonrpc":"2.0","id":1,"#, false, false, StatusCode::OK),
        ];
        for (line, response, result, status) in cases {
            let read = Answer::of(line);
            let shown = String::from_utf8_lossy(line);
            assert_eq!((read.response, read.result), (response, result), "{shown}");
            assert_eq!(read.status(), status, "{shown}");
        }
    }

    #[test]
    fn a_handshake_era_request_is_held_to_the_headers_it_sends() {
        let params = serde_json::json!({"name": "weather"});
        // None sent: nothing to agree with.
        assert_eq!(
            check_headers(&HeaderMap::new(), "tools/call", &params),
            Ok(())
        );
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_static(value));
            }
            headers
        };
        let agreeing = with(&[("Mcp-Method", "tools/call"), ("Mcp-Name", "weather")]);
        assert_eq!(check_headers(&agreeing, "tools/call", &params), Ok(()));
        // A balancer rule on these headers cannot be bypassed by a handshake-era body.
        for disagreeing in [
            with(&[("Mcp-Method", "tools/list")]),
            with(&[("Mcp-Method", "tools/call"), ("Mcp-Name", "read_file")]),
            with(&[("Mcp-Name", "read_file")]),
            with(&[("Mcp-Name", "=?base64?not base64?=")]),
        ] {
            assert!(
                check_headers(&disagreeing, "tools/call", &params).is_err(),
                "{disagreeing:?}"
            );
        }
        assert!(
            check_headers(
                &with(&[("Mcp-Name", "weather")]),
                "tools/list",
                &serde_json::json!({})
            )
            .is_err()
        );
        assert!(
            check_headers(
                &with(&[("Mcp-Method", "notifications/initialized")]),
                "notifications/cancelled",
                &serde_json::json!({})
            )
            .is_err()
        );
    }

    #[test]
    fn modern_headers_must_agree_with_the_body() {
        let params = serde_json::json!({"name": "weather", "_meta": {
            era::meta::PROTOCOL_VERSION: "2026-07-28", era::meta::CLIENT_CAPABILITIES: {}}});
        let mut headers = HeaderMap::new();
        assert!(check_headers(&headers, "tools/call", &params).is_err());
        headers.insert(
            "MCP-Protocol-Version",
            HeaderValue::from_static("2026-07-28"),
        );
        headers.insert("Mcp-Method", HeaderValue::from_static("tools/call"));
        assert!(check_headers(&headers, "tools/call", &params).is_err());
        headers.insert(
            "Mcp-Name",
            HeaderValue::from_static("=?base64?d2VhdGhlcg==?="),
        );
        assert_eq!(check_headers(&headers, "tools/call", &params), Ok(()));
        headers.insert("Mcp-Name", HeaderValue::from_static("shell_exec"));
        assert!(check_headers(&headers, "tools/call", &params).is_err());
        assert!(
            check_headers(
                &headers,
                "tools/call",
                &serde_json::json!({"name": "weather"})
            )
            .is_err()
        );
        let mut legacy = HeaderMap::new();
        legacy.insert(
            "MCP-Protocol-Version",
            HeaderValue::from_static("2025-06-18"),
        );
        assert_eq!(
            check_headers(&legacy, "tools/call", &serde_json::json!({"name": "w"})),
            Ok(())
        );
    }
}
