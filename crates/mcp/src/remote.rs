//! The upstream over Streamable HTTP: the server's URL in place of its command. Each message is
//! its own POST; the answer (one JSON object, or an SSE stream of notifications ending with the
//! response) is handed to the proxy message by message, exactly as a child's lines are, capped
//! the same way. Headers are those the 2026-07-28 transport requires (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` for the parameters the server's tools mark with
//! `x-mcp-header`); credentials come from the environment (`--upstream-header NAME=VARIABLE`),
//! never from the command line. A handshake-era server's `Mcp-Session-Id` is kept and sent back.
//!
//! A request the server does not answer with a JSON-RPC message (a refused connection, a 5xx
//! page) is answered, in the proxy's own words, with an error for its id, so the proxy's usual
//! path (the fixed failure for a call) takes over. Each answer belongs to its POST: one that
//! names no id (a stateful server's `400` with `"id": null`) answers that POST's request, and
//! one longer than the cap fails that request alone.
//!
//! Cancelling a request of the 2026-07-28 revision closes its stream (the task reading it is
//! aborted); in the handshake era it is a `notifications/cancelled` POST. A handshake-era server
//! that answers `404` to a session it no longer knows (it restarted) gets a new `initialize`,
//! and the request is sent once more in the new session. An upstream that stops answering
//! (refused connections, `5xx` pages) is not ready until a probe gets a JSON-RPC answer again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use toolgate_gate::internals::{Document, Node, parse_document};
use toolgate_repo::UsageError;

use super::era;
use super::lines::log;
use super::listen::encode_header_value;
use super::lock;
use super::message::{self, codes, id_key};
use super::upstream::{Direct, DirectHandler, Incoming, Link, Outgoing};

/// How often an upstream that stopped answering is probed.
const PROBE_EVERY: Duration = Duration::from_secs(2);

/// The upstream server at a URL.
pub(crate) struct Remote {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
}

struct Shared {
    client: reqwest::Client,
    url: reqwest::Url,
    credentials: HeaderMap,
    incoming: Mutex<Option<Sender<Incoming>>>,
    /// Where whole messages go instead of `incoming`, once set ([`Link::deliver_directly`]).
    direct: OnceLock<DirectHandler>,
    line_cap: usize,
    /// The revision agreed, once it is (the header a handshake-era session sends).
    version: Mutex<Option<String>>,
    /// A handshake-era server's session.
    session: Mutex<Option<HeaderValue>>,
    /// Each tool's parameters its schema mirrors into headers.
    mirrored: Mutex<HashMap<String, Vec<Mirrored>>>,
    closed: AtomicBool,
    /// A way to stop the task reading each request's answer, by the request's id: a
    /// 2026-07-28 request is cancelled by dropping its POST (which closes its stream). Each
    /// entry is made before its task starts and removed by the task as it ends.
    in_flight: Mutex<HashMap<String, tokio::sync::oneshot::Sender<()>>>,
    /// The handshake-era `initialize` the proxy sent, to open a new session with when the
    /// server forgets the one it gave (`404`).
    handshake: Mutex<Option<Outgoing>>,
    /// Renews the session one request at a time; the count tells a request whether the
    /// session it failed in was already replaced.
    renewing: tokio::sync::Mutex<()>,
    sessions_opened: AtomicU64,
    /// Whether the upstream answered the last request with a JSON-RPC message (it starts so).
    reachable: AtomicBool,
    /// When the upstream was last probed while unreachable.
    last_probe: Mutex<Option<Instant>>,
}

/// A parameter a tool's schema mirrors into a header: its property path, the header's name.
type Mirrored = (Vec<String>, String);

/// Whether an upstream given on the command line is a URL rather than a command.
pub(crate) fn is_url(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://")
}

impl Remote {
    /// Reaches the server at `url` with the credential headers named in `headers` (each
    /// `NAME=VARIABLE`: the header's value is the environment variable's).
    pub(crate) fn connect(
        url: &str,
        headers: &[String],
        line_cap: usize,
        timeout: Duration,
        incoming: Sender<Incoming>,
        runtime: tokio::runtime::Handle,
    ) -> Result<Remote, UsageError> {
        let url = reqwest::Url::parse(url)
            .map_err(|error| UsageError::new(format!("the upstream URL {url:?}: {error}")))?;
        let credentials = credential_headers(headers)?;
        // One TLS stack for the process: rustls with ring, whatever else is linked in.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| UsageError::new(format!("cannot set up HTTPS: {error}")))?;
        Ok(Remote {
            shared: Arc::new(Shared {
                client,
                url,
                credentials,
                incoming: Mutex::new(Some(incoming)),
                direct: OnceLock::new(),
                line_cap,
                version: Mutex::new(None),
                session: Mutex::new(None),
                mirrored: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
                in_flight: Mutex::new(HashMap::new()),
                handshake: Mutex::new(None),
                renewing: tokio::sync::Mutex::new(()),
                sessions_opened: AtomicU64::new(0),
                reachable: AtomicBool::new(true),
                last_probe: Mutex::new(None),
            }),
            runtime,
        })
    }
}

/// The credential headers: each `NAME=VARIABLE` read from the environment now, so a missing
/// variable stops the start instead of every call.
fn credential_headers(headers: &[String]) -> Result<HeaderMap, UsageError> {
    let mut map = HeaderMap::new();
    for spec in headers {
        let Some((name, variable)) = spec.split_once('=') else {
            return Err(UsageError::new(format!(
                "--upstream-header {spec:?}: write NAME=VARIABLE (the value is read from the environment variable, never written on the command line)"
            )));
        };
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: {name:?} is not a header name"
            ))
        })?;
        let value = std::env::var(variable.trim()).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: the environment variable {variable:?} is not set (or not UTF-8)"
            ))
        })?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: the value of {variable:?} cannot be a header value"
            ))
        })?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

impl Link for Remote {
    fn send(&self, message: Outgoing) -> bool {
        if self.shared.closed.load(Ordering::Relaxed) {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        let Some(key) = message.id.as_ref().map(id_key) else {
            self.runtime
                .spawn(async move { shared.post(&message).await });
            return true;
        };
        let (cancel, cancelled) = tokio::sync::oneshot::channel();
        lock(&self.shared.in_flight).insert(key.clone(), cancel);
        self.runtime.spawn(async move {
            tokio::select! {
                () = shared.post(&message) => {}
                // Dropped mid-answer, the POST's connection closes: the upstream's cancellation.
                Ok(()) = cancelled => {}
            }
            lock(&shared.in_flight).remove(&key);
        });
        true
    }

    fn agreed(&self, version: &str) {
        *lock(&self.shared.version) = Some(version.to_owned());
        if era::MODERN_VERSIONS.contains(&version) {
            // Learn which parameters each tool mirrors into headers before any call needs them.
            let shared = Arc::clone(&self.shared);
            let version = version.to_owned();
            self.runtime
                .block_on(async move { shared.learn_mirrored(&version).await });
        }
    }

    fn close(&self) {
        self.shared.closed.store(true, Ordering::Relaxed);
    }

    fn stop(&self, _grace: Duration, _finished: &dyn Fn() -> bool) {
        self.shared.closed.store(true, Ordering::Relaxed);
        lock(&self.shared.incoming).take();
    }

    fn deliver_directly(&self, handler: DirectHandler) {
        let _ = self.shared.direct.set(handler);
    }

    fn alive(&self) -> bool {
        !self.shared.closed.load(Ordering::Relaxed) && self.shared.reachable.load(Ordering::Relaxed)
    }

    fn unblock_if_stuck(&self, _limit: Duration) {
        // Called on the proxy's watchdog tick: an unreachable upstream is probed from here.
        if self.shared.reachable.load(Ordering::Relaxed)
            || self.shared.closed.load(Ordering::Relaxed)
        {
            return;
        }
        {
            let mut last = lock(&self.shared.last_probe);
            if last.is_some_and(|at| at.elapsed() < PROBE_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let shared = Arc::clone(&self.shared);
        self.runtime.spawn(async move { shared.probe().await });
    }

    fn cancel(&self, id: &Value, reason: &str) {
        let modern = lock(&self.shared.version)
            .as_deref()
            .is_some_and(|version| era::MODERN_VERSIONS.contains(&version));
        if modern {
            // The revision: closing the request's stream is its cancellation.
            if let Some(cancel) = lock(&self.shared.in_flight).remove(&id_key(id)) {
                let _ = cancel.send(());
            }
            return;
        }
        let params = json!({"requestId": id, "reason": reason});
        self.send(Outgoing {
            line: message::notification_line("notifications/cancelled", &params),
            id: None,
            method: Some("notifications/cancelled".to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        });
    }
}

impl Shared {
    fn deliver(&self, message: Incoming) {
        if let (Incoming::Line(_), Some(direct)) = (&message, self.direct.get()) {
            if !self.stopped()
                && let Incoming::Line(line) = message
            {
                direct(Direct::Line(line));
            }
            return;
        }
        let sender = lock(&self.incoming).clone();
        if let Some(sender) = sender {
            let _ = sender.send(message);
        }
    }

    /// Whether the link was stopped: a direct handler then takes nothing more, as the channel
    /// (gone) would not.
    fn stopped(&self) -> bool {
        lock(&self.incoming).is_none()
    }

    /// Reads a body (a POST's JSON answer, or one SSE event) once, and hands it on if it
    /// answers: a response goes to the proxy (to the direct handler with the parse its kind was
    /// read from, so the proxy does not parse it again; or else to the channel as a line), and
    /// an error response that names no request answers `id`'s. What answers nothing is given
    /// back, for the caller to hand on or drop.
    fn hand_on_answer(&self, body: Vec<u8>, id: Option<&Value>) -> Result<(), Vec<u8>> {
        let document = parse_document(&body, message::MAX_MESSAGE_DEPTH).ok();
        match (answer_in(document.as_ref()), id) {
            // An error that names no request (a stateful server's `400` with `"id": null`, or
            // one without an id, which the revision allows) answers this POST's own.
            (
                Ok(AnswerBody::Response {
                    unnamed_error: Some(error),
                }),
                Some(id),
            )
            | (Err(Some(error)), Some(id)) => {
                self.deliver(Incoming::Line(message::error_object_line(id, &error)));
                Ok(())
            }
            (Ok(AnswerBody::Response { .. }), _) => {
                match (document, self.direct.get()) {
                    (Some(document), Some(direct)) => {
                        if !self.stopped() {
                            direct(Direct::Response(&body, document.root()));
                        }
                    }
                    (document, _) => {
                        drop(document);
                        self.deliver(Incoming::Line(body));
                    }
                }
                Ok(())
            }
            _ => {
                drop(document);
                Err(body)
            }
        }
    }

    fn headers(&self, message: &Outgoing) -> HeaderMap {
        let mut headers = self.credentials.clone();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        // Only what the headers name is read of the message; the rest is skipped, not built.
        let member = |path: &[&str]| {
            message::members(&message.line, [message::Wanted::value(path)])
                .ok()
                .and_then(|[found]| found.into_value())
                .unwrap_or(Value::Null)
        };
        let written = || match member(&["params", "_meta", era::meta::PROTOCOL_VERSION]) {
            Value::String(version) => Some(version),
            _ => None,
        };
        // Known when the proxy wrote the line from a value (most requests): not read back.
        debug_assert!(
            message
                .meta_version
                .as_ref()
                .is_none_or(|known| *known == written()),
            "the revision an outgoing message carries is the one its line names"
        );
        let named = match &message.meta_version {
            Some(known) => known.clone(),
            None => written(),
        }
        .or_else(|| {
            // A handshake-era session names its revision on every request after `initialize`.
            (message.method.as_deref() != Some("initialize"))
                .then(|| lock(&self.version).clone())
                .flatten()
        });
        let mut put = |name: &str, value: &str| {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(name, value);
            }
        };
        if let Some(version) = &named {
            put("mcp-protocol-version", version);
        }
        if let Some(method) = &message.method {
            put("mcp-method", &encode_header_value(method));
        }
        if let Some(name) = &message.name {
            put("mcp-name", &encode_header_value(name));
        }
        if let Some(traceparent) = &message.traceparent {
            put("traceparent", traceparent);
        }
        if message.method.as_deref() == Some("tools/call")
            && let Some(tool) = &message.name
        {
            let mirrored = lock(&self.mirrored).get(tool).cloned().unwrap_or_default();
            let arguments = if mirrored.is_empty() {
                Value::Null
            } else {
                member(&["params", "arguments"])
            };
            for (path, header) in mirrored {
                let mut value = &arguments;
                for step in &path {
                    value = &value[step.as_str()];
                }
                let text = match value {
                    Value::String(text) => text.clone(),
                    Value::Bool(flag) => flag.to_string(),
                    Value::Number(number) if number.is_i64() || number.is_u64() => {
                        number.to_string()
                    }
                    _ => continue,
                };
                put(&format!("mcp-param-{header}"), &encode_header_value(&text));
            }
        }
        if let Some(session) = lock(&self.session).clone() {
            headers.insert("mcp-session-id", session);
        }
        headers
    }

    /// One message's POST, and what its answer holds handed to the proxy.
    async fn post(&self, message: &Outgoing) {
        let failed = |why: String| {
            log(&format!(
                "the upstream at {} failed a request: {why}",
                self.url
            ));
            if let Some(id) = &message.id {
                self.deliver(Incoming::Line(message::error_line(
                    id,
                    codes::INTERNAL_ERROR,
                    "the upstream did not answer over HTTP",
                )));
            }
        };
        if message.method.as_deref() == Some("initialize") {
            *lock(&self.handshake) = Some(message.clone());
        }
        let response = match self.send_in_session(message).await {
            Sent::Answer(response) => response,
            Sent::Read(status, body) => {
                // A 400 read to tell whether it named the session, and it did not: the
                // server's answer all the same.
                let answered = self.hand_on_answer(body, message.id.as_ref()).is_ok();
                self.reachable.store(answered, Ordering::Relaxed);
                if !answered && message.id.is_some() {
                    failed(format!("HTTP {status} without a JSON-RPC answer"));
                }
                return;
            }
            Sent::Failed(error) => {
                self.reachable.store(false, Ordering::Relaxed);
                return failed(error.without_url().to_string());
            }
            Sent::Lost => {
                return failed("it forgot the session and did not open a new one".to_owned());
            }
        };
        if message.method.as_deref() == Some("initialize")
            && let Some(session) = response.headers().get("mcp-session-id")
        {
            *lock(&self.session) = Some(session.clone());
            self.sessions_opened.fetch_add(1, Ordering::Relaxed);
        }
        let status = response.status();
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if status == reqwest::StatusCode::ACCEPTED || message.id.is_none() {
            return;
        }
        let answered = if streamed {
            self.read_events(response, message.id.as_ref()).await
        } else {
            self.read_json(response, message.id.as_ref()).await
        };
        self.reachable.store(answered, Ordering::Relaxed);
        if !answered {
            failed(format!("HTTP {status} without a JSON-RPC answer"));
        }
    }

    /// One POST of `message`, and the session generation it was sent in (when it carried one).
    async fn send_once(
        &self,
        message: &Outgoing,
    ) -> Result<(reqwest::Response, Option<u64>), reqwest::Error> {
        let headers = self.headers(message);
        let generation = headers
            .contains_key("mcp-session-id")
            .then(|| self.sessions_opened.load(Ordering::Relaxed));
        let response = self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(message.line.clone())
            .send()
            .await?;
        Ok((response, generation))
    }

    /// One POST of `message`, sent once more in a new session where the handshake-era server
    /// no longer knows the one it carried (it restarted): it answers `404`, as the transport
    /// says, or, as the TypeScript SDK's stateful servers do (server-everything among them),
    /// `400` with an error naming the session. A `400` is read to tell; one that does not name
    /// the session is returned read. A request still refused so in its new session leaves the
    /// upstream unreachable (`/readyz` 503) until a probe is answered.
    async fn send_in_session(&self, message: &Outgoing) -> Sent {
        let renewable = message.method.as_deref() != Some("initialize");
        // A stateful server that refused the last new session is asked for one first: a request
        // sent without one is refused with an error naming no request, which would read as an
        // answer, and so as the server answering again.
        let opened = self.sessions_opened.load(Ordering::Relaxed);
        if renewable
            && opened > 0
            && lock(&self.session).is_none()
            && !self.renew_session(opened, None).await
        {
            self.reachable.store(false, Ordering::Relaxed);
            return Sent::Lost;
        }
        let (response, generation) = match self.send_once(message).await {
            Ok((response, Some(generation))) if renewable => (response, generation),
            Ok((response, _)) => return Sent::Answer(response),
            Err(error) => return Sent::Failed(error),
        };
        let stale = match response.status() {
            reqwest::StatusCode::NOT_FOUND => "404",
            reqwest::StatusCode::BAD_REQUEST => {
                let status = response.status();
                let Some(body) = read_capped(response, self.line_cap).await else {
                    return Sent::Read(status, Vec::new());
                };
                if !names_the_session(&body) {
                    return Sent::Read(status, body);
                }
                "400 naming the session"
            }
            _ => return Sent::Answer(response),
        };
        if !self.renew_session(generation, Some(stale)).await {
            self.reachable.store(false, Ordering::Relaxed);
            return Sent::Lost;
        }
        match self.send_once(message).await {
            Ok((response, _)) => Sent::Answer(response),
            Err(error) => Sent::Failed(error),
        }
    }

    /// Opens a new handshake-era session with the `initialize` the proxy sent first, unless one
    /// was opened since `generation` (another request renewed it first); `true` when the
    /// request should be sent again. `stale` says how the server said it forgot the session
    /// (`None`: a probe's renewal, every 2 s while the server refuses, said once it succeeds).
    async fn renew_session(&self, generation: u64, stale: Option<&str>) -> bool {
        let _one_at_a_time = self.renewing.lock().await;
        if self.sessions_opened.load(Ordering::Relaxed) != generation {
            return true;
        }
        let Some(initialize) = lock(&self.handshake).clone() else {
            return false;
        };
        if let Some(stale) = stale {
            log(&format!(
                "the upstream at {} no longer knows the session ({stale}); opening a new one",
                self.url
            ));
        }
        lock(&self.session).take();
        let Ok((response, _)) = self.send_once(&initialize).await else {
            return false;
        };
        let Some(session) = response.headers().get("mcp-session-id").cloned() else {
            return false;
        };
        if read_capped(response, self.line_cap).await.is_none() {
            return false;
        }
        *lock(&self.session) = Some(session);
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
        let initialized = Outgoing {
            line: message::notification_line("notifications/initialized", &json!({})),
            id: None,
            method: Some("notifications/initialized".to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        };
        self.send_once(&initialized).await.is_ok()
    }

    /// Whether the upstream answers again: a `ping` (handshake era) or `server/discover`
    /// (2026-07-28), its answer read here and never handed to the proxy. A stateful server
    /// that refused the last new session is asked for one first ([`Self::send_in_session`]):
    /// without it, every call fails however the `ping` is answered (a TypeScript SDK server
    /// answers a request without a session with an error, which would read as answering again).
    async fn probe(&self) {
        let version = lock(&self.version).clone().unwrap_or_default();
        let modern = era::MODERN_VERSIONS.contains(&version.as_str());
        let id = json!("toolgate-probe");
        let (method, params) = if modern {
            (
                "server/discover",
                json!({"_meta": {
                    era::meta::PROTOCOL_VERSION: version,
                    era::meta::CLIENT_CAPABILITIES: {},
                    era::meta::CLIENT_INFO: era::implementation(),
                }}),
            )
        } else {
            ("ping", json!({}))
        };
        let probe = Outgoing {
            line: message::request_line(&id, method, &params),
            id: Some(id),
            method: Some(method.to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        };
        let body = match self.send_in_session(&probe).await {
            Sent::Answer(response) => read_capped(response, self.line_cap).await,
            Sent::Read(_, body) => Some(body),
            Sent::Failed(_) | Sent::Lost => None,
        };
        let Some(body) = body else { return };
        if parse_listing(&body).is_some()
            || is_error_answer(&body)
            || matches!(answer_of(&body), Err(Some(_)))
        {
            log(&format!("the upstream at {} answers again", self.url));
            self.reachable.store(true, Ordering::Relaxed);
        }
    }

    /// Hands on a JSON answer (to the request `id`); `false` when there is none.
    async fn read_json(&self, mut response: reqwest::Response, id: Option<&Value>) -> bool {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() > self.line_cap {
                body.truncate(self.line_cap);
                self.deliver(too_long(id, body));
                return true;
            }
        }
        self.hand_on_answer(body, id).is_ok()
    }

    /// Hands on every event of an SSE answer (to the request `id`), each capped; `true` once a
    /// response was among them.
    async fn read_events(&self, mut response: reqwest::Response, id: Option<&Value>) -> bool {
        let mut events = crate::sse::Events::default();
        let mut answered = false;
        while let Ok(Some(chunk)) = response.chunk().await {
            let fed = events.feed(&chunk, self.line_cap, |event| {
                // Not an answer (a request or a notification of the server's): handed on
                // whole all the same.
                match self.hand_on_answer(event, None) {
                    Ok(()) => answered = true,
                    Err(event) => self.deliver(Incoming::Line(event)),
                }
            });
            if let Err(prefix) = fed {
                self.deliver(too_long(id, prefix));
                return true;
            }
        }
        answered
    }

    /// Lists the server's tools (every page) to learn their `x-mcp-header` parameters.
    async fn learn_mirrored(&self, version: &str) {
        let mut cursor: Option<Value> = None;
        for page in 0..100 {
            let mut params = json!({"_meta": {
                era::meta::PROTOCOL_VERSION: version,
                era::meta::CLIENT_CAPABILITIES: {},
                era::meta::CLIENT_INFO: era::implementation(),
            }});
            if let Some(cursor) = &cursor {
                params["cursor"] = cursor.clone();
            }
            let id = json!(format!("toolgate-headers-{page}"));
            let line = message::request_line(&id, "tools/list", &params);
            let outgoing = Outgoing {
                line,
                id: Some(id),
                method: Some("tools/list".to_owned()),
                name: None,
                traceparent: None,
                meta_version: None,
            };
            let Ok(response) = self
                .client
                .post(self.url.clone())
                .headers(self.headers(&outgoing))
                .body(outgoing.line.clone())
                .send()
                .await
            else {
                return;
            };
            // Read with the cap: a listing is the upstream's to size.
            let Some(body) = read_capped(response, self.line_cap).await else {
                log(
                    "the upstream's tools/list at start-up is longer than the line cap; no parameters are mirrored into headers",
                );
                return;
            };
            let result = parse_listing(&body);
            let Some(result) = result else { return };
            let mut mirrored = lock(&self.mirrored);
            for tool in result["tools"].as_array().into_iter().flatten() {
                if let Some(name) = tool["name"].as_str() {
                    mirrored.insert(name.to_owned(), mirrored_parameters(&tool["inputSchema"]));
                }
            }
            cursor = result.get("nextCursor").filter(|c| c.is_string()).cloned();
            if cursor.is_none() {
                return;
            }
        }
    }
}

/// An answer longer than the cap: the request's own failure when its id is known.
fn too_long(id: Option<&Value>, prefix: Vec<u8>) -> Incoming {
    match id {
        Some(id) => Incoming::TooLongFor(id.clone(), prefix),
        None => Incoming::TooLong(prefix),
    }
}

/// A whole body, read at most `cap` bytes; `None` past the cap or when the read fails.
/// What came of a POST sent in the handshake-era session.
enum Sent {
    /// The server's answer, unread.
    Answer(reqwest::Response),
    /// Its answer's status and body, already read (a `400` read to see whether it named the
    /// session).
    Read(reqwest::StatusCode, Vec<u8>),
    /// No answer.
    Failed(reqwest::Error),
    /// It forgot the session, and a new one could not be opened.
    Lost,
}

/// Whether an error body says the session is unknown: a JSON-RPC error (or any text) whose
/// message speaks of a session (`Bad Request: No valid session ID provided`, `Session not
/// found`).
fn names_the_session(body: &[u8]) -> bool {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|answer| {
            answer
                .pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned());
    message.to_ascii_lowercase().contains("session")
}

async fn read_capped(mut response: reqwest::Response, cap: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > cap {
                    return None;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Some(body),
            Err(_) => return None,
        }
    }
}

/// What an upstream's HTTP body (or SSE event) holds, read strictly in place: nothing of it is
/// built but the error of a response that names no request.
enum AnswerBody {
    /// A JSON-RPC response; `unnamed_error` when it is an error with `"id": null`.
    Response { unnamed_error: Option<Value> },
    /// A request or a notification.
    Other,
}

/// The body's [`AnswerBody`], or, where it is not a JSON-RPC message, the error object it holds
/// if it is an error response with no `id` at all.
fn answer_of(body: &[u8]) -> Result<AnswerBody, Option<Value>> {
    answer_in(
        parse_document(body, message::MAX_MESSAGE_DEPTH)
            .ok()
            .as_ref(),
    )
}

/// [`answer_of`] on a body already parsed (`None`: it is not strict JSON).
fn answer_in(document: Option<&Document<'_>>) -> Result<AnswerBody, Option<Value>> {
    let Some(document) = document else {
        return Err(None);
    };
    match message::shape(document.root()) {
        Ok(message::Shape::Response {
            id,
            outcome: Err(error),
        }) if id.is_null() => Ok(AnswerBody::Response {
            unnamed_error: Some(error.to_value()),
        }),
        Ok(message::Shape::Response { .. }) => Ok(AnswerBody::Response {
            unnamed_error: None,
        }),
        Ok(_) => Ok(AnswerBody::Other),
        Err(_) => Err(anonymous_error(document.root())),
    }
}

/// The error object of a JSON-RPC error response that has no `id` at all.
fn anonymous_error(root: Node<'_>) -> Option<Value> {
    if !root.is_object() || root.get("id").is_some() || root.get("method").is_some() {
        return None;
    }
    root.get("error")
        .filter(|error| error.is_object())
        .map(Node::to_value)
}

/// Whether a body is a JSON-RPC error response (the upstream answers, if only to refuse).
fn is_error_answer(body: &[u8]) -> bool {
    matches!(
        message::parse(body),
        Ok(message::Message::Response {
            outcome: Err(_),
            ..
        })
    )
}

/// A `tools/list` answer's result, from a JSON body or the response event of an SSE body.
fn parse_listing(body: &[u8]) -> Option<Value> {
    let from = |bytes: &[u8]| match message::parse(bytes) {
        Ok(message::Message::Response {
            outcome: Ok(result),
            ..
        }) => Some(result),
        _ => None,
    };
    from(body).or_else(|| {
        body.split(|byte| *byte == b'\n')
            .filter_map(|line| line.strip_prefix(b"data:"))
            .find_map(|data| from(data.strip_prefix(b" ").unwrap_or(data)))
    })
}

/// The parameters an input schema mirrors into headers: every property reached from the root
/// through `properties` alone that carries an `x-mcp-header` name (the revision's rule).
fn mirrored_parameters(schema: &Value) -> Vec<Mirrored> {
    let mut found = Vec::new();
    let mut stack: Vec<(Vec<String>, &Value)> = vec![(Vec::new(), schema)];
    while let Some((path, node)) = stack.pop() {
        if path.len() > 32 {
            continue;
        }
        if let Some(header) = node.get("x-mcp-header").and_then(Value::as_str)
            && !path.is_empty()
            && HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes()).is_ok()
        {
            found.push((path.clone(), header.to_owned()));
        }
        for (name, child) in node
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let mut child_path = path.clone();
            child_path.push(name.clone());
            stack.push((child_path, child));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an answer body is, read strictly without building it: a response (with the error of
    /// one whose id is null), a request or notification, an error object with no id at all (the
    /// POST's own), and what is no JSON-RPC at all, duplicate members and bad JSON included.
    #[test]
    fn an_answer_body_is_told_apart_strictly() {
        let error = json!({"code": -32600, "message": "no session"});
        let kind = |body: &str| match answer_of(body.as_bytes()) {
            Ok(AnswerBody::Response { unnamed_error }) => format!("response {unnamed_error:?}"),
            Ok(AnswerBody::Other) => "other".to_owned(),
            Err(anonymous) => format!("not a message {anonymous:?}"),
        };
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                "response None".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#,
                "response None".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no session"}}"#,
                format!("response {:?}", Some(&error)),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
                "other".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
                "other".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"no session"}}"#,
                format!("not a message {:?}", Some(&error)),
            ),
            (
                r#"{"error":{"code":-32600,"message":"no session"}}"#,
                format!("not a message {:?}", Some(&error)),
            ),
            (
                r#"{"jsonrpc":"2.0","method":1,"error":{"code":1}}"#,
                "not a message None".to_owned(),
            ),
            (r#"{"error":"text"}"#, "not a message None".to_owned()),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
                "not a message None".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","error":{"code":1},"error":{"code":2}}"#,
                "not a message None".to_owned(),
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
                "not a message None".to_owned(),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":"#,
                "not a message None".to_owned(),
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(kind(body), expected, "{body}");
        }
    }

    /// A body is parsed once where it arrives: a response is handed to the proxy with that
    /// parse (or, with no direct handler, to the channel as its bytes), an error naming no
    /// request answers the POST's own, what answers nothing is given back, and a stopped link
    /// hands on nothing.
    #[test]
    fn an_answer_is_parsed_once_and_handed_on_to_whom_it_answers() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (sender, channel) = std::sync::mpsc::channel();
        let remote = Remote::connect(
            "http://127.0.0.1:9/mcp",
            &[],
            1 << 20,
            Duration::from_secs(1),
            sender,
            runtime.handle().clone(),
        )
        .unwrap();
        let shared = &remote.shared;
        let response = br#"{"jsonrpc":"2.0","id":7,"result":{"isError":false}}"#.to_vec();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();

        // No direct handler (a stdio host's pump reads the channel): the bytes, as they came.
        assert_eq!(
            shared.hand_on_answer(response.clone(), Some(&json!(7))),
            Ok(())
        );
        match channel.try_recv() {
            Ok(Incoming::Line(line)) => assert_eq!(line, response),
            _ => panic!("the response did not reach the channel"),
        }

        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        remote.deliver_directly(Box::new(move |message| {
            let entry = match message {
                Direct::Line(line) => format!("line {}", text(&line)),
                Direct::Response(line, root) => format!(
                    "parsed {} (id {:?})",
                    text(line),
                    root.get("id").map(|id| id.to_value())
                ),
            };
            lock(&record).push(entry);
        }));
        let taken = || std::mem::take(&mut *lock(&seen));

        assert_eq!(
            shared.hand_on_answer(response.clone(), Some(&json!(7))),
            Ok(())
        );
        assert_eq!(
            taken(),
            [format!("parsed {} (id Some(Number(7)))", text(&response))]
        );

        let unnamed =
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no session"}}"#;
        assert_eq!(
            shared.hand_on_answer(unnamed.to_vec(), Some(&json!(7))),
            Ok(())
        );
        let error = json!({"code": -32600, "message": "no session"});
        assert_eq!(
            taken(),
            [format!(
                "line {}",
                text(&message::error_object_line(&json!(7), &error))
            )]
        );

        for answers_nothing in [
            br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#.as_slice(),
            br#"{"jsonrpc":"2.0","id":7,"id":8,"result":{}}"#,
            b"not json",
        ] {
            assert_eq!(
                shared.hand_on_answer(answers_nothing.to_vec(), None),
                Err(answers_nothing.to_vec())
            );
        }
        assert!(taken().is_empty());
        assert!(channel.try_recv().is_err());

        remote.stop(Duration::ZERO, &|| true);
        assert_eq!(shared.hand_on_answer(response, Some(&json!(7))), Ok(()));
        assert!(taken().is_empty());
    }

    #[test]
    fn mirrored_parameters_are_reached_through_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Nope"}},
            "bad": {"type": "string", "x-mcp-header": "has space"}
        }});
        let mut found = mirrored_parameters(&schema);
        found.sort();
        assert_eq!(
            found,
            vec![
                (
                    vec!["nested".to_owned(), "tenant".to_owned()],
                    "Tenant".to_owned()
                ),
                (vec!["region".to_owned()], "Region".to_owned()),
            ]
        );
    }

    #[test]
    fn credentials_come_from_the_environment_only() {
        assert!(credential_headers(&["Authorization".to_owned()]).is_err());
        assert!(
            credential_headers(&["Authorization=TOOLGATE_TEST_SURELY_UNSET_VARIABLE".to_owned()])
                .is_err()
        );
        let path = credential_headers(&["X-Path=PATH".to_owned()]).unwrap();
        assert!(path.get("x-path").unwrap().is_sensitive());
    }
}
