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
mod exchange;

use exchange::{Waiting, handle};
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

#[cfg(test)]
mod tests {
    use super::exchange::answer_channels;
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
