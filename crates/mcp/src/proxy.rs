//! The proxy's routing: every message from the host and from the upstream, in order, one thread
//! reading each side and one writing each side, with the state they share (the calls in flight)
//! behind one lock.
//!
//! Closed by default: `initialize`, `ping`, `tools/list` and `tools/call` go through, rewritten;
//! every other route for data (resources, prompts, completions, logging, sampling, elicitation,
//! roots, tasks) is refused unless `--allow` opens it. Fail closed: a call the upstream does not
//! answer properly (an error, `isError`, an unparseable line, a crash, a stall) is answered with
//! the gate's fixed failure, so the host never waits forever and never sees the upstream's words.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::process::{Child, ChildStdout};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_gate::internals::escape_hidden;
use toolgate_gate::{AuditSink, Contract, GATE_VERSION, JsonLinesSink, Request, Response};

use super::context::OperatorContext;
use super::lines::{Line, read_line};
use super::message::{self, Message, codes, error_line, id_key, notification_line, result_line};
use super::tools::{self, Registry};

/// The protocol revisions the proxy speaks: those with the `initialize` handshake.
pub(crate) const PROTOCOL_VERSIONS: [&str; 4] =
    ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

toolgate_repo::choices! {
    /// A route for data other than tool results, closed unless `--allow` opens it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Route {
        /// `resources/*` and their notifications.
        Resources = "resources",
        /// `prompts/*` and their notification.
        Prompts = "prompts",
        /// `completion/complete`.
        Completions = "completions",
        /// `logging/setLevel` (upstream log messages always go to stderr).
        Logging = "logging",
        /// The upstream's `sampling/createMessage` requests to the host.
        Sampling = "sampling",
        /// The upstream's `elicitation/create` requests to the host.
        Elicitation = "elicitation",
        /// The upstream's `roots/list` requests to the host, and roots notifications.
        Roots = "roots",
        /// Task-augmented calls and `tasks/*`: their results are not gated.
        Tasks = "tasks",
    }
}

impl Route {
    /// The route a host request method belongs to.
    fn of_host_method(method: &str) -> Option<Route> {
        Some(match method {
            _ if method.starts_with("resources/") => Route::Resources,
            _ if method.starts_with("prompts/") => Route::Prompts,
            "completion/complete" => Route::Completions,
            "logging/setLevel" => Route::Logging,
            _ if method.starts_with("tasks/") => Route::Tasks,
            _ => return None,
        })
    }

    /// The route an upstream request method belongs to.
    fn of_upstream_method(method: &str) -> Option<Route> {
        Some(match method {
            "sampling/createMessage" => Route::Sampling,
            "elicitation/create" => Route::Elicitation,
            "roots/list" => Route::Roots,
            _ => return None,
        })
    }

    /// The capability key it corresponds to (server-side routes in the server's capabilities,
    /// client-side ones in the client's).
    fn capability(self) -> &'static str {
        match self {
            Route::Resources => "resources",
            Route::Prompts => "prompts",
            Route::Completions => "completions",
            Route::Logging => "logging",
            Route::Sampling => "sampling",
            Route::Elicitation => "elicitation",
            Route::Roots => "roots",
            Route::Tasks => "tasks",
        }
    }

    fn is_client_side(self) -> bool {
        matches!(self, Route::Sampling | Route::Elicitation | Route::Roots)
    }
}

/// What a host request waiting for its response is.
enum Waiting {
    Initialize,
    Ping,
    ToolsList,
    Call(Box<Call>),
    /// An allowed route: its response passes unchanged.
    Passthrough,
}

/// A `tools/call` in flight.
struct Call {
    contract: Arc<Contract>,
    request: Request,
    progress_token: Option<Value>,
}

struct Pending {
    id: Value,
    waiting: Waiting,
    since: Instant,
}

#[derive(Default)]
struct State {
    /// Host requests forwarded and not yet answered, by id key.
    pending: HashMap<String, Pending>,
    /// Upstream requests forwarded to the host (allowed routes only), by id key.
    upstream_requests: HashMap<String, Instant>,
    /// Why the upstream is gone, once it is.
    gone: Option<String>,
}

/// The proxy between one host and one upstream.
pub(crate) struct Proxy {
    registry: Registry,
    allowed: Vec<Route>,
    timeout: Duration,
    line_cap: usize,
    audit: Option<JsonLinesSink<std::fs::File>>,
    context: OperatorContext,
    state: Mutex<State>,
    /// Taken when the run ends, so the writers finish once everything is written.
    to_host: Mutex<Option<Sender<Vec<u8>>>>,
    to_upstream: Mutex<Option<Sender<Vec<u8>>>>,
}

/// How the proxy is set up.
pub(crate) struct Setup {
    /// The tools with contracts.
    pub registry: Registry,
    /// The routes opened with `--allow`.
    pub allowed: Vec<Route>,
    /// How long a request may wait for the upstream.
    pub timeout: Duration,
    /// The longest line read from either side.
    pub line_cap: usize,
    /// Where decisions are audited.
    pub audit: Option<JsonLinesSink<std::fs::File>>,
    /// The operator's trusted context.
    pub context: OperatorContext,
}

/// Runs the proxy until the host closes its input and every call is answered.
pub(crate) fn run(
    setup: Setup,
    mut child: Child,
    host_in: impl std::io::Read + Send,
    host_out: impl Write + Send,
) {
    let upstream_in = child.stdin.take().expect("the upstream's stdin is piped");
    let upstream_out = child.stdout.take().expect("the upstream's stdout is piped");
    let (to_host, host_lines) = mpsc::channel();
    let (to_upstream, upstream_lines) = mpsc::channel();
    let proxy = Proxy {
        registry: setup.registry,
        allowed: setup.allowed,
        timeout: setup.timeout,
        line_cap: setup.line_cap,
        audit: setup.audit,
        context: setup.context,
        state: Mutex::new(State::default()),
        to_host: Mutex::new(Some(to_host)),
        to_upstream: Mutex::new(Some(to_upstream)),
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| write_lines(host_lines, host_out, || {}));
        scope.spawn(|| {
            write_lines(upstream_lines, upstream_in, || {
                proxy.upstream_gone("the upstream stopped reading its input");
            });
        });
        let upstream_reader = scope.spawn(|| proxy.read_upstream(upstream_out));
        scope.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(
                    (proxy.timeout / 8).clamp(Duration::from_millis(5), Duration::from_millis(100)),
                );
                proxy.expire();
            }
        });

        proxy.read_host(host_in);
        // The host closed its input: close the upstream's, as a host would, give it the timeout
        // to finish what is in flight, then stop it; whatever is still pending is answered.
        proxy
            .to_upstream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let deadline = Instant::now() + proxy.timeout;
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            if proxy.state().pending.is_empty() && upstream_reader.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        let _ = upstream_reader.join();
        proxy.upstream_gone("the host closed the connection");
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        // Without a sender, the host's writer ends once it has written everything.
        proxy
            .to_host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    });
}

/// Writes each line and a newline, in order, until every sender is gone or the reader is.
fn write_lines(lines: Receiver<Vec<u8>>, mut out: impl Write, on_error: impl Fn()) {
    for line in lines {
        let written = out
            .write_all(&line)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            on_error();
            return;
        }
    }
}

/// Something for the person running the host: stderr, escaped, capped.
fn log(message: &str) {
    let mut shown: String = message.chars().take(2000).collect();
    if message.chars().count() > 2000 {
        shown.push('…');
    }
    eprintln!("toolgate mcp-proxy: {}", escape_hidden(&shown));
}

impl Proxy {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every request still waiting for the upstream, removed from the table, oldest first (so
    /// the host hears about them in the order it asked).
    fn take_pending(&self) -> Vec<Pending> {
        let mut drained: Vec<Pending> = self
            .state()
            .pending
            .drain()
            .map(|(_, pending)| pending)
            .collect();
        drained.sort_by_key(|pending| pending.since);
        drained
    }

    fn allows(&self, route: Route) -> bool {
        self.allowed.contains(&route)
    }

    fn send_host(&self, line: Vec<u8>) {
        let sender = self
            .to_host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some(sender) = sender {
            let _ = sender.send(line);
        }
    }

    fn send_upstream(&self, line: Vec<u8>) -> bool {
        let sender = self
            .to_upstream
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        sender.is_some_and(|sender| sender.send(line).is_ok())
    }

    fn read_host(&self, input: impl std::io::Read) {
        let mut reader = BufReader::new(input);
        loop {
            match read_line(&mut reader, self.line_cap) {
                Ok(None) | Err(_) => return,
                Ok(Some(Line::TooLong(_))) => self.send_host(error_line(
                    &Value::Null,
                    codes::INVALID_REQUEST,
                    &format!(
                        "a message longer than {} bytes; not forwarded",
                        self.line_cap
                    ),
                )),
                Ok(Some(Line::Complete(line))) if line.iter().all(u8::is_ascii_whitespace) => {}
                Ok(Some(Line::Complete(line))) => match message::parse(&line) {
                    Err(why) => self.send_host(error_line(
                        &Value::Null,
                        codes::PARSE_ERROR,
                        &format!("not forwarded: {why}"),
                    )),
                    Ok(Message::Request { id, method, params }) => {
                        self.host_request(id, &method, params, line)
                    }
                    Ok(Message::Notification { method, params }) => {
                        self.host_notification(&method, &params, line)
                    }
                    Ok(Message::Response { id, .. }) => {
                        let forwarded = self
                            .state()
                            .upstream_requests
                            .remove(&id_key(&id))
                            .is_some();
                        if forwarded {
                            self.send_upstream(line);
                        } else {
                            log("dropped a response from the host to no request the upstream made");
                        }
                    }
                },
            }
        }
    }

    fn host_request(&self, id: Value, method: &str, params: Value, raw: Vec<u8>) {
        let key = id_key(&id);
        let refuse = |code, text: &str| self.send_host(error_line(&id, code, text));
        if self.state().pending.contains_key(&key) {
            return refuse(
                codes::INVALID_REQUEST,
                "a request with this id is still pending",
            );
        }
        let (waiting, line) = match method {
            "initialize" => {
                let mut params = params;
                if let Some(Value::Object(capabilities)) = params.get_mut("capabilities") {
                    capabilities.retain(|name, _| {
                        [
                            Route::Sampling,
                            Route::Elicitation,
                            Route::Roots,
                            Route::Tasks,
                        ]
                        .iter()
                        .any(|route| self.allows(*route) && route.capability() == name)
                    });
                }
                let line = message::request_line(&id, method, &params);
                (Waiting::Initialize, line)
            }
            "ping" => (Waiting::Ping, raw),
            "tools/list" => (Waiting::ToolsList, raw),
            "tools/call" => {
                if params.get("task").is_some() {
                    if !self.allows(Route::Tasks) {
                        return refuse(
                            codes::METHOD_NOT_FOUND,
                            "task-augmented tool calls are not available through toolgate (their results would bypass the contract); allow them with --allow tasks",
                        );
                    }
                    (Waiting::Passthrough, raw)
                } else {
                    let Some(name) = params.get("name").and_then(Value::as_str) else {
                        return refuse(codes::INVALID_PARAMS, "tools/call needs a tool `name`");
                    };
                    let Some(tool) = self.registry.get(name) else {
                        return refuse(
                            codes::INVALID_PARAMS,
                            &format!(
                                "tool {name:?} has no contract in this toolgate repository, so it is not available"
                            ),
                        );
                    };
                    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
                    let call = Call {
                        contract: Arc::clone(&tool.contract),
                        request: tools::request_for(
                            &id,
                            &arguments,
                            name,
                            &tool.contract,
                            self.context.for_tool(name),
                        ),
                        progress_token: params
                            .get("_meta")
                            .and_then(|meta| meta.get("progressToken"))
                            .cloned(),
                    };
                    (Waiting::Call(Box::new(call)), raw)
                }
            }
            _ => match Route::of_host_method(method) {
                Some(route) if self.allows(route) => (Waiting::Passthrough, raw),
                Some(route) => {
                    return refuse(
                        codes::METHOD_NOT_FOUND,
                        &format!(
                            "`{method}` is not available through toolgate: closed by default, as a route for unvetted data (allow it with --allow {})",
                            route.capability()
                        ),
                    );
                }
                None => {
                    return refuse(
                        codes::METHOD_NOT_FOUND,
                        &format!("`{method}` is not available through toolgate"),
                    );
                }
            },
        };
        let gone = self.state().gone.clone();
        if let Some(reason) = gone {
            return self.answer_gone(
                Pending {
                    id,
                    waiting,
                    since: Instant::now(),
                },
                &reason,
            );
        }
        self.state().pending.insert(
            key.clone(),
            Pending {
                id,
                waiting,
                since: Instant::now(),
            },
        );
        if !self.send_upstream(line)
            && let Some(pending) = self.state().pending.remove(&key)
        {
            self.answer_gone(pending, "the upstream is not running");
        }
    }

    fn host_notification(&self, method: &str, params: &Value, raw: Vec<u8>) {
        let forward = match method {
            "notifications/initialized" => true,
            "notifications/cancelled" => {
                // A cancelled request's late answer is dropped as an unknown id.
                if let Some(id) = params.get("requestId") {
                    self.state().pending.remove(&id_key(id));
                }
                true
            }
            "notifications/roots/list_changed" => self.allows(Route::Roots),
            "notifications/progress" => {
                self.allows(Route::Sampling) || self.allows(Route::Elicitation)
            }
            _ => false,
        };
        if forward {
            self.send_upstream(raw);
        } else {
            log(&format!("dropped the host's `{method}` notification"));
        }
    }

    fn read_upstream(&self, output: ChildStdout) {
        let mut reader = BufReader::new(output);
        loop {
            match read_line(&mut reader, self.line_cap) {
                Ok(None) => return self.upstream_gone("the upstream exited"),
                Err(error) => {
                    return self.upstream_gone(&format!("reading the upstream failed: {error}"));
                }
                Ok(Some(Line::TooLong(prefix))) => self.unreadable(
                    &format!("a line longer than {} bytes", self.line_cap),
                    &prefix,
                ),
                Ok(Some(Line::Complete(line))) if line.iter().all(u8::is_ascii_whitespace) => {}
                Ok(Some(Line::Complete(line))) => match message::parse(&line) {
                    Err(why) => self.unreadable(&why, &line),
                    Ok(Message::Response { id, outcome }) => {
                        self.upstream_response(&id, outcome, line)
                    }
                    Ok(Message::Request { id, method, .. }) => {
                        self.upstream_request(&id, &method, line)
                    }
                    Ok(Message::Notification { method, params }) => {
                        self.upstream_notification(&method, &params, line)
                    }
                },
            }
        }
    }

    /// The upstream wrote a line no one can read: which call it answered is unknown, so every
    /// pending call is decided on those bytes (the gate refuses them, at the layer that owns the
    /// flaw) and every other pending request gets an error.
    fn unreadable(&self, why: &str, line: &[u8]) {
        log(&format!(
            "the upstream wrote an unreadable line ({why}); every pending request is answered with the fixed failure"
        ));
        let pending = self.take_pending();
        for pending in pending {
            match &pending.waiting {
                Waiting::Call(call) => {
                    let now = SystemTime::now();
                    let mut decision =
                        call.contract
                            .admit_response(Response::body(line), &call.request, now);
                    if decision.is_admitted() {
                        // Bytes no message correlates with a call never answer it, even if a
                        // contract would admit them.
                        decision = call.contract.admit_response(
                            Response::unreachable("a line that answers no request"),
                            &call.request,
                            now,
                        );
                    }
                    self.audit(&decision);
                    self.send_host(result_line(&pending.id, &tools::result_json(&decision)));
                }
                _ => self.answer_gone(pending, "it wrote an unreadable line"),
            }
        }
    }

    fn upstream_response(&self, id: &Value, outcome: Result<Value, Value>, raw: Vec<u8>) {
        let Some(pending) = self.state().pending.remove(&id_key(id)) else {
            log(
                "dropped a response from the upstream to no pending request (a late, cancelled or unknown id)",
            );
            return;
        };
        let id = &pending.id;
        let line = match (pending.waiting, outcome) {
            (Waiting::Passthrough, _) => raw,
            (Waiting::Ping, Ok(_)) => result_line(id, "{}"),
            (Waiting::Initialize, Ok(result)) => match self.initialize_result(&result) {
                Ok(result) => result_line(id, &result.to_string()),
                Err(why) => error_line(id, codes::INTERNAL_ERROR, &why),
            },
            (Waiting::ToolsList, Ok(result)) => {
                if result.get("nextCursor").is_some() {
                    log(
                        "the upstream lists its tools in pages; toolgate lists the first page only",
                    );
                }
                let upstream_tools = result
                    .get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                result_line(id, &self.registry.list(&upstream_tools).to_string())
            }
            (Waiting::Call(call), Ok(result)) => {
                let decision =
                    tools::decide(&call.contract, &call.request, &result, SystemTime::now());
                self.audit(&decision);
                result_line(id, &tools::result_json(&decision))
            }
            (Waiting::Call(call), Err(_)) => {
                self.call_failed(
                    id,
                    &call,
                    "the upstream answered the call with a JSON-RPC error",
                );
                return;
            }
            (_, Err(error)) => {
                let code = error
                    .get("code")
                    .and_then(Value::as_i64)
                    .unwrap_or(codes::INTERNAL_ERROR);
                error_line(id, code, "the upstream failed this request")
            }
        };
        self.send_host(line);
    }

    fn upstream_request(&self, id: &Value, method: &str, raw: Vec<u8>) {
        if method == "ping" {
            self.send_upstream(result_line(id, "{}"));
            return;
        }
        match Route::of_upstream_method(method) {
            Some(route) if self.allows(route) => {
                self.state()
                    .upstream_requests
                    .insert(id_key(id), Instant::now());
                self.send_host(raw);
            }
            _ => {
                log(&format!(
                    "refused the upstream's `{method}` request: toolgate passes no server requests to the host unless allowed"
                ));
                self.send_upstream(error_line(
                    id,
                    codes::METHOD_NOT_FOUND,
                    "not available: the client is behind toolgate, which does not pass this request on",
                ));
            }
        }
    }

    fn upstream_notification(&self, method: &str, params: &Value, raw: Vec<u8>) {
        match method {
            "notifications/progress" => {
                let Some(token) = params.get("progressToken") else {
                    return;
                };
                let known = self.state().pending.values().any(|pending| {
                    matches!(&pending.waiting, Waiting::Call(call) if call.progress_token.as_ref() == Some(token))
                });
                if !known {
                    return log("dropped progress for no pending call");
                }
                // Progress without its free-text message: numbers the proxy writes itself.
                let mut rebuilt = json!({"progressToken": token});
                for field in ["progress", "total"] {
                    if let Some(number) = params.get(field).filter(|value| value.is_number()) {
                        rebuilt[field] = number.clone();
                    }
                }
                self.send_host(notification_line(method, &rebuilt));
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info");
                let data = params.get("data").map(Value::to_string).unwrap_or_default();
                log(&format!("upstream log ({level}): {data}"));
            }
            "notifications/tools/list_changed" => {
                self.send_host(
                    br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec(),
                );
            }
            _ if method.starts_with("notifications/resources/")
                && self.allows(Route::Resources) =>
            {
                self.send_host(raw)
            }
            "notifications/prompts/list_changed" if self.allows(Route::Prompts) => {
                self.send_host(raw)
            }
            _ if method.starts_with("notifications/tasks/") && self.allows(Route::Tasks) => {
                self.send_host(raw)
            }
            _ => log(&format!("dropped the upstream's `{method}` notification")),
        }
    }

    /// The `initialize` result the host receives: the protocol version (one the proxy speaks),
    /// the tools capability and the allowed routes', and the proxy's own identity. The upstream's
    /// `serverInfo` and `instructions` (free text a host may show the model) are not passed on.
    fn initialize_result(&self, result: &Value) -> Result<Value, String> {
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !PROTOCOL_VERSIONS.contains(&version) {
            return Err(format!(
                "the upstream chose protocol version {version:?}; toolgate speaks {}",
                PROTOCOL_VERSIONS.join(", ")
            ));
        }
        let upstream = result
            .get("capabilities")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let list_changed = upstream["tools"]["listChanged"] == Value::Bool(true);
        let mut capabilities = json!({"tools": {"listChanged": list_changed}});
        for route in [
            Route::Resources,
            Route::Prompts,
            Route::Completions,
            Route::Logging,
            Route::Tasks,
        ] {
            if self.allows(route)
                && !route.is_client_side()
                && let Some(capability) = upstream.get(route.capability())
            {
                capabilities[route.capability()] = capability.clone();
            }
        }
        Ok(json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "toolgate-mcp-proxy", "version": GATE_VERSION},
        }))
    }

    fn audit(&self, decision: &toolgate_gate::Decision) {
        if let Some(sink) = &self.audit
            && let Err(error) = sink.record(decision.audit_event())
        {
            log(&format!("cannot write the audit event: {error}"));
        }
    }

    /// A call that ended without a result the gate can read: the fixed failure, decided and
    /// audited by the gate like any other.
    fn call_failed(&self, id: &Value, call: &Call, reason: &str) {
        let decision = call.contract.admit_response(
            Response::unreachable(reason),
            &call.request,
            SystemTime::now(),
        );
        self.audit(&decision);
        self.send_host(result_line(id, &tools::result_json(&decision)));
    }

    fn answer_gone(&self, pending: Pending, reason: &str) {
        match &pending.waiting {
            Waiting::Call(call) => self.call_failed(&pending.id, call, reason),
            _ => self.send_host(error_line(
                &pending.id,
                codes::INTERNAL_ERROR,
                &format!("the upstream server is unavailable ({reason})"),
            )),
        }
    }

    /// Answers every pending request with the fixed failure.
    fn fail_pending(&self, reason: &str) {
        let pending = self.take_pending();
        for pending in pending {
            self.answer_gone(pending, reason);
        }
    }

    fn upstream_gone(&self, reason: &str) {
        {
            let mut state = self.state();
            if state.gone.is_none() {
                state.gone = Some(reason.to_owned());
            }
        }
        self.fail_pending(reason);
    }

    /// Answers every request that has waited longer than the timeout.
    fn expire(&self) {
        let expired: Vec<Pending> = {
            let mut state = self.state();
            let now = Instant::now();
            let keys: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, pending)| now.duration_since(pending.since) >= self.timeout)
                .map(|(key, _)| key.clone())
                .collect();
            let mut expired: Vec<Pending> = keys
                .iter()
                .filter_map(|key| state.pending.remove(key))
                .collect();
            expired.sort_by_key(|pending| pending.since);
            expired
        };
        for pending in expired {
            log("a request waited past the timeout; answered with the fixed failure");
            self.answer_gone(pending, &format!("no answer within {:?}", self.timeout));
        }
    }
}
