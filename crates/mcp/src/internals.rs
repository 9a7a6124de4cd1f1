//! Not supported API: what the fuzzers need below [`run`](crate::run), compiled only under the
//! `_internals` feature (as the gate's `internals` is).
//!
//! [`Listener`] is the HTTP listener in process, in front of an upstream that lives in memory
//! (no child, no socket beyond the listener's own), with bounds tight enough that a fuzzer's
//! input runs in milliseconds: the `http_listener` fuzz target drives arbitrary requests and
//! connection behaviour at it, and checks that it never panics, stays answerable, and never
//! lets the upstream's own words through.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_repo::{Repository, UsageError};

use crate::listen::{self, Limits, Listen};
use crate::message::{self, Message};
use crate::proxy::{Proxy, Setup};
use crate::tools::Registry;
use crate::upstream::{Incoming, Link, Outgoing, Source};

/// Text the in-memory upstream writes wherever an upstream may write free text: it must never
/// reach a host.
pub const UPSTREAM_CANARY: &str = "CANARY-upstream-words";

/// The listener on a loopback port, in front of the in-memory upstream, on a runtime of its
/// own; it serves until the process ends.
pub struct Listener {
    address: std::net::SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

impl Listener {
    /// Serves the contracts under `root` (a repository whose tools include `weather`, as
    /// `tests/mcp` does) on a free loopback port, with `limits`, and the proxy's timeout
    /// `timeout`.
    pub fn start(root: &Path, limits: Limits, timeout: Duration) -> Result<Listener, UsageError> {
        let repository = Repository::open(root)?;
        let registry = Registry::load(&repository)?;
        let (incoming, received) = std::sync::mpsc::channel();
        let link = Memory {
            incoming: Mutex::new(incoming),
            calls: AtomicU64::new(0),
        };
        let proxy = Arc::new(Proxy::new(
            Setup::closed(registry, timeout)?,
            Box::new(link),
        ));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(limits.max_requests_in_flight + 16)
            .enable_all()
            .build()
            .map_err(|error| UsageError::new(format!("cannot start the runtime: {error}")))?;
        {
            let proxy = Arc::clone(&proxy);
            std::thread::spawn(move || proxy.pump(Source::Channel(received)));
        }
        {
            let proxy = Arc::clone(&proxy);
            std::thread::spawn(move || proxy.watch_timeouts());
        }
        proxy.settle();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .map_err(|error| UsageError::new(format!("cannot listen: {error}")))?;
        let address = listener
            .local_addr()
            .map_err(|error| UsageError::new(format!("cannot listen: {error}")))?;
        let options = Listen {
            allowed_origins: Vec::new(),
            loopback: true,
            body_cap: 256 * 1024,
            limits,
            auth: None,
            rate: None,
            metrics: Some(Arc::new(toolgate_telemetry::Metrics::new())),
            serve_metrics: true,
            metrics_token: None,
        };
        runtime.spawn(listen::serve(
            proxy,
            listener,
            options,
            listen::Drain::default(),
            std::future::pending::<()>(),
        ));
        Ok(Listener {
            address,
            _runtime: runtime,
        })
    }

    /// Where it listens.
    pub fn address(&self) -> std::net::SocketAddr {
        self.address
    }
}

/// An upstream in memory: a 2026-07-28 server with the `weather` tool, whose calls are answered
/// in turn with a result (its text the canary), an error, silence, a result too long for the
/// line cap, and progress before a result.
struct Memory {
    incoming: Mutex<Sender<Incoming>>,
    calls: AtomicU64,
}

impl Memory {
    fn deliver(&self, message: Incoming) {
        let _ = crate::lock(&self.incoming).send(message);
    }

    fn answer(&self, id: &Value, result: Value) {
        self.deliver(Incoming::Line(message::value_result_line(id, &result)));
    }
}

impl Link for Memory {
    fn send(&self, outgoing: Outgoing) -> bool {
        let Ok(Message::Request { id, method, params }) = message::parse(&outgoing.line) else {
            return true;
        };
        match method.as_str() {
            "server/discover" => self.answer(
                &id,
                json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}, "serverInfo": {"name": UPSTREAM_CANARY, "version": "1"}, "instructions": UPSTREAM_CANARY}),
            ),
            "tools/list" => self.answer(
                &id,
                json!({"resultType": "complete", "tools": [{"name": "weather", "description": UPSTREAM_CANARY, "inputSchema": {"type": "object", "description": UPSTREAM_CANARY}}]}),
            ),
            "tools/call" => {
                let city = params["arguments"]["city"].clone();
                let structured = json!({"city": city, "temperature_c": 21.5, "conditions": "clear", "note": UPSTREAM_CANARY});
                let closed = json!({"city": city, "temperature_c": 21.5, "conditions": "clear"});
                let text = json!([{"type": "text", "text": UPSTREAM_CANARY}]);
                match self.calls.fetch_add(1, Ordering::Relaxed) % 6 {
                    0 => self.answer(
                        &id,
                        json!({"resultType": "complete", "content": text, "structuredContent": closed}),
                    ),
                    1 => self.answer(
                        &id,
                        json!({"resultType": "complete", "content": text, "structuredContent": structured}),
                    ),
                    2 => self.deliver(Incoming::Line(message::error_line(
                        &id,
                        -32603,
                        UPSTREAM_CANARY,
                    ))),
                    // Silence: the proxy's timeout answers it.
                    3 => {}
                    4 => self.deliver(Incoming::TooLongFor(
                        id,
                        UPSTREAM_CANARY.as_bytes().to_vec(),
                    )),
                    _ => {
                        if let Some(token) = params["_meta"]["progressToken"].as_str() {
                            let progress = json!({"progressToken": token, "progress": 1, "message": UPSTREAM_CANARY});
                            self.deliver(Incoming::Line(message::notification_line(
                                "notifications/progress",
                                &progress,
                            )));
                        }
                        self.answer(
                            &id,
                            json!({"resultType": "complete", "content": text, "structuredContent": closed}),
                        );
                    }
                }
            }
            "ping" => self.answer(&id, json!({})),
            _ => self.deliver(Incoming::Line(message::error_line(
                &id,
                -32601,
                UPSTREAM_CANARY,
            ))),
        }
        true
    }

    fn close(&self) {}

    fn alive(&self) -> bool {
        true
    }
}

/// The listener's bearer-token check alone (`--auth`), for the authorization benchmark: the
/// `--auth` file read and its keys loaded, then tokens verified as a request's are.
pub struct BearerCheck {
    authorizer: crate::auth::Authorizer,
    runtime: tokio::runtime::Runtime,
}

impl BearerCheck {
    /// The check `auth_file` describes, for a repository whose tools are `tools`.
    pub fn load(auth_file: &Path, tools: &[&str]) -> Result<BearerCheck, UsageError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| UsageError::new(format!("cannot start the runtime: {error}")))?;
        let tools = tools.iter().map(|tool| (*tool).to_owned()).collect();
        let authorizer = runtime.block_on(crate::auth::Authorizer::load(auth_file, &tools))?;
        Ok(BearerCheck {
            authorizer,
            runtime,
        })
    }

    /// Whether `token` verifies (from the cache of verified tokens when it is there), and its
    /// caller may call `tool`.
    pub fn admits(&self, token: &str, tool: &str) -> bool {
        self.runtime
            .block_on(self.authorizer.verify(token))
            .is_ok_and(|caller| self.authorizer.may_call(&caller, Some(tool)).is_ok())
    }

    /// As [`BearerCheck::admits`], with the cache of verified tokens emptied first: a token's
    /// first call, its signature verified.
    pub fn admits_uncached(&self, token: &str, tool: &str) -> bool {
        self.authorizer.forget_verified();
        self.admits(token, tool)
    }
}
