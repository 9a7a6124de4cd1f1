//! The host side over Streamable HTTP (`--listen ADDR`): one endpoint, `POST /mcp`, each
//! request its own host with nothing kept between requests, so any number of proxies behind
//! any load balancer serve one host alike. Plus `GET /healthz` (the process answers) and
//! `GET /readyz` (the upstream's era is settled and it is still there), for an orchestrator.
//!
//! Per the 2026-07-28 transport: a modern request's `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers must agree with its body (`-32020` and 400 otherwise), since a load
//! balancer may route on them; a request is answered with one JSON object, or, when it asked
//! for progress and accepts it, an SSE stream of the progress and then the response; a
//! notification with 202. No session is minted (a handshake-era host's `initialize` is
//! answered, and its later requests are served without one); `GET` and `DELETE` get 405. An
//! `Origin` header must be one the operator allowed (DNS rebinding), or the answer is 403.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

use super::era::{self, RequestEra, modern_codes};
use super::lines::log;
use super::message::{self, Message, codes};
use super::proxy::{Host, Proxy, refusal_line};

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
}

type Body = BoxBody<Bytes, Infallible>;

/// Serves hosts on `listener` until `shutdown` resolves.
pub(crate) async fn serve(
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    options: Listen,
    shutdown: impl Future<Output = ()>,
) {
    let options = Arc::new(options);
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    log(&format!("accepting a connection failed: {error}"));
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        let proxy = Arc::clone(&proxy);
        let options = Arc::clone(&options);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let proxy = Arc::clone(&proxy);
                let options = Arc::clone(&options);
                async move { Ok::<_, Infallible>(handle(&proxy, &options, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The address a `--listen` value names.
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("{text:?} is not an address to listen on: write IP:PORT, e.g. 127.0.0.1:8080")
    })
}

async fn handle(proxy: &Proxy, options: &Listen, request: Request<Incoming>) -> Response<Body> {
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") if proxy.ready() => text(StatusCode::OK, "ready\n"),
        (&Method::GET, "/readyz") => text(
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the upstream's era is not settled, or it is gone\n",
        ),
        (&Method::POST, ENDPOINT) => post(proxy, options, request).await,
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

async fn post(proxy: &Proxy, options: &Listen, request: Request<Incoming>) -> Response<Body> {
    if let Err(refused) = check_origin(request.headers(), options) {
        return json_error(
            StatusCode::FORBIDDEN,
            &Value::Null,
            codes::INVALID_REQUEST,
            refused,
        );
    }
    let wants_stream = accepts(request.headers(), "text/event-stream");
    let headers = request.headers().clone();
    let body = match Limited::new(request.into_body(), options.body_cap)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
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
    let (id, method, params) = match parsed {
        Message::Response { .. } => {
            return json_error(
                StatusCode::BAD_REQUEST,
                &Value::Null,
                codes::INVALID_REQUEST,
                "a client does not send responses over Streamable HTTP: toolgate passes no server requests to an HTTP host",
            );
        }
        Message::Notification { .. } => {
            let host = Host::new(Arc::new(|_| {}), false);
            proxy.host_message(&host, body.to_vec());
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
    let streams = wants_stream
        && params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .is_some();
    let (sender, mut answers) = mpsc::unbounded_channel::<Vec<u8>>();
    let host = Host::new(
        Arc::new(move |line| {
            let _ = sender.send(line);
        }),
        false,
    );
    proxy.host_message(&host, body.to_vec());
    drop(host);
    if streams {
        return sse(answers);
    }
    // The response is the first message that is not a notification (progress goes to a host
    // that asked for a stream only).
    while let Some(line) = answers.recv().await {
        if is_response(&line) {
            let status = status_of(&line);
            return json(status, line);
        }
    }
    json_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        &id,
        codes::INTERNAL_ERROR,
        "the proxy ended the request without an answer",
    )
}

/// DNS rebinding protection: a page on another site that resolved its name to this machine
/// sends its own `Host` and `Origin`. On a loopback listener the `Host` must name a loopback
/// host; an `Origin`, when sent, must be a loopback one (on a loopback listener) or one the
/// operator listed.
fn check_origin(headers: &HeaderMap, options: &Listen) -> Result<(), &'static str> {
    if options.loopback {
        let host = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("");
        if !is_loopback_authority(host) {
            return Err(
                "this Host is not the loopback address the proxy listens on (DNS rebinding)",
            );
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let listed = options
        .allowed_origins
        .iter()
        .any(|allowed| allowed.as_bytes() == origin.as_bytes());
    let loopback = options.loopback
        && origin.to_str().is_ok_and(|origin| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                .is_some_and(is_loopback_authority)
        });
    if listed || loopback {
        Ok(())
    } else {
        Err("this Origin is not allowed (toolgate mcp-proxy --allow-origin)")
    }
}

/// Whether a `host[:port]` names the loopback interface.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Whether a modern request's headers agree with its body. A request that names no revision
/// in `_meta` is a handshake-era one, whose headers that era did not bind to the body; but a
/// modern `MCP-Protocol-Version` header on it disagrees with its body all the same.
fn check_headers(headers: &HeaderMap, method: &str, params: &Value) -> Result<(), String> {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| value.to_str().unwrap_or("\u{fffd}"))
    };
    let version_header = header("mcp-protocol-version");
    let version = match era::request_era(params) {
        Ok(RequestEra::Modern { version, .. }) => version,
        // The era's own refusal (unknown revision, missing fields) is the proxy's to answer.
        Err(_) => return Ok(()),
        Ok(RequestEra::Legacy) => {
            return match version_header {
                Some(named) if era::MODERN_VERSIONS.contains(&named) => Err(format!(
                    "Header mismatch: MCP-Protocol-Version is {named} but the body's _meta names no protocol version"
                )),
                _ => Ok(()),
            };
        }
    };
    match version_header {
        Some(named) if named == version => {}
        Some(named) => {
            return Err(format!(
                "Header mismatch: MCP-Protocol-Version header value {:?} does not match the body's {version:?}",
                shown(named)
            ));
        }
        None => {
            return Err("Header mismatch: the MCP-Protocol-Version header is missing".to_owned());
        }
    }
    match header("mcp-method") {
        Some(named) if named == method => {}
        Some(named) => {
            return Err(format!(
                "Header mismatch: Mcp-Method header value {:?} does not match the body's {:?}",
                shown(named),
                shown(method)
            ));
        }
        None => return Err("Header mismatch: the Mcp-Method header is missing".to_owned()),
    }
    let named_in_body = match method {
        "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str),
        "resources/read" => params.get("uri").and_then(Value::as_str),
        _ => return Ok(()),
    };
    let Some(in_body) = named_in_body else {
        return Ok(());
    };
    match header("mcp-name").map(decode_header_value) {
        Some(Some(named)) if named == in_body => Ok(()),
        Some(Some(named)) => Err(format!(
            "Header mismatch: Mcp-Name header value {:?} does not match the body's {:?}",
            shown(&named),
            shown(in_body)
        )),
        Some(None) => Err("Header mismatch: the Mcp-Name header is not valid base64".to_owned()),
        None => Err("Header mismatch: the Mcp-Name header is missing".to_owned()),
    }
}

/// A header value, decoded from the revision's `=?base64?…?=` form when it has it.
pub(crate) fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

/// A value as a header carries it: as is when it is plain visible ASCII without edge spaces,
/// else in the revision's `=?base64?…?=` form (which a plain value of that shape takes too).
pub(crate) fn encode_header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|byte| byte == b' ' || byte == b'\t' || (0x21..=0x7e).contains(&byte))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && (!value.starts_with("=?base64?") || !value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// Text from a header or a host's body, as the proxy quotes it in an error: capped, escaped.
fn shown(text: &str) -> String {
    super::lines::inert(text, 200)
}

fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.split(',').any(|part| part.trim().starts_with(media)))
}

/// Whether a line the proxy wrote is a response (it has no method).
fn is_response(line: &[u8]) -> bool {
    serde_json::from_slice::<Value>(line).is_ok_and(|message| message.get("method").is_none())
}

/// The HTTP status of a response line: 400 for the errors the revision sends with 400
/// (malformed requests, header mismatches, unsupported versions, missing capabilities), 404
/// for an unknown method, 200 otherwise.
fn status_of(line: &[u8]) -> StatusCode {
    let code = serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|message| message.get("error")?.get("code")?.as_i64());
    match code {
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

/// An SSE response: every line the proxy writes for this request (progress, then the
/// response), one event each; the stream ends after the response.
fn sse(answers: mpsc::UnboundedReceiver<Vec<u8>>) -> Response<Body> {
    let events = events(answers);
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

/// The events of an SSE response, ending after the response line.
fn events(
    mut answers: mpsc::UnboundedReceiver<Vec<u8>>,
) -> impl futures_core::Stream<Item = Result<Frame<Bytes>, Infallible>> {
    let mut done = false;
    poll_stream(move |context| {
        if done {
            return std::task::Poll::Ready(None);
        }
        match answers.poll_recv(context) {
            std::task::Poll::Ready(Some(line)) => {
                done = is_response(&line);
                let mut event = b"event: message\ndata: ".to_vec();
                event.extend_from_slice(&line);
                event.extend_from_slice(b"\n\n");
                std::task::Poll::Ready(Some(Ok(Frame::data(Bytes::from(event)))))
            }
            std::task::Poll::Ready(None) => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
}

/// A stream from a poll function.
fn poll_stream<T>(
    poll: impl FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<T>> + Unpin,
) -> impl futures_core::Stream<Item = T> {
    struct PollStream<F>(F);
    impl<T, F> futures_core::Stream for PollStream<F>
    where
        F: FnMut(&mut std::task::Context<'_>) -> std::task::Poll<Option<T>> + Unpin,
    {
        type Item = T;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            context: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<T>> {
            (self.0)(context)
        }
    }
    PollStream(poll)
}

fn json(status: StatusCode, line: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::from(line))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn json_error(status: StatusCode, id: &Value, code: i64, message: &str) -> Response<Body> {
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

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
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

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::new())));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
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
