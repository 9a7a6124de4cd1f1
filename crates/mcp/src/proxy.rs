//! The proxy's routing, whatever the transports: every message from a host and from the
//! upstream, in order, with the state they share (the calls in flight) behind one lock.
//!
//! Closed by default: `server/discover`, `initialize`, `ping`, `tools/list` and `tools/call` go
//! through, rewritten; every other route for data (resources, prompts, completions, logging,
//! sampling, elicitation, roots, tasks) is refused unless `--allow` opens it. Fail closed: a call
//! the upstream does not answer properly (an error, `isError`, `input_required`, an unparseable
//! line, a crash, a stall) is answered with the gate's fixed failure, so the host never waits
//! forever and never sees the upstream's words.
//!
//! Both eras on both sides (`era.rs`): before any host request is forwarded, the upstream's era
//! is settled ([`Proxy::settle`]: a `server/discover` probe, and the `initialize` handshake,
//! done by the proxy itself, if the upstream turns out to be legacy). Every host request then
//! reaches the upstream in the upstream's era under an id the proxy assigns (hosts on different
//! HTTP requests may reuse ids), and every answer reaches the host in the host's era.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_gate::internals::parse_document;
use toolgate_gate::{AuditSink, Contract, Decision, Request, Response};
use toolgate_store::Retainer;
use toolgate_telemetry::{
    CallAttributes, CallSpan, ContractMetrics, InFlight, Metrics, Tracing, UpstreamFailure,
};

use super::auth::{Authorizer, Caller};
use super::batch;
use super::context::OperatorContext;
use super::era::{
    self, LEGACY_VERSIONS, MODERN_VERSIONS, Refusal, RequestEra, ResultKind, modern_codes,
};
use super::lines::{log, log_refusal};
use super::lock;
use super::message::{
    self, Message, codes, error_line, id_key, notification_line, result_line, value_result_line,
};
use super::pins::{self, Pin};
use super::route::Route;
use super::tools::{self, Registry};
use super::upstream::{Incoming, Link, Outgoing, Source};
use toolgate_repo::UsageError;

/// Where decisions are audited: a file, or stdout when it is free.
pub(crate) type AuditLog = toolgate_repo::ChainedAuditLog;

/// Where a host's answers go: a stdio host's output, or one HTTP request's response stream.
pub(crate) type Reply = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// One host the proxy serves: a stdio connection (one for the proxy's life), or one HTTP POST.
pub(crate) struct Host {
    reply: Reply,
    /// The handshake-era session an HTTP host's requests carry (`Mcp-Session-Id`, which the
    /// listener minted at its `initialize`): each POST is a host of its own, and the session is
    /// what a later POST's `notifications/cancelled` shares with the request it cancels.
    peer: Option<Arc<str>>,
    /// Whether the upstream's requests on opened client-side routes can be passed to this host
    /// (a stdio connection can; an HTTP response cannot carry a request).
    duplex: bool,
    /// A legacy host's handshake on this connection: the revision agreed and the capabilities
    /// it declared (already stripped to the opened routes).
    session: Mutex<Option<Session>>,
    /// The caller an HTTP listener with `--auth` authenticated, and what it may call; `None`
    /// where the listener authenticates nobody (stdio, `--insecure-no-auth`, loopback).
    grant: Option<Grant>,
    /// The W3C trace context an HTTP host sent as its `traceparent` header (a request's
    /// `params._meta.traceparent` comes first).
    traceparent: Option<String>,
}

/// An authenticated caller and the rules that say which tools it may call.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub caller: Arc<Caller>,
    pub authorizer: Arc<Authorizer>,
}

#[derive(Debug, Clone)]
struct Session {
    capabilities: Value,
}

impl Host {
    /// A host whose answers go to `reply`.
    pub(crate) fn new(reply: Reply, duplex: bool) -> Arc<Host> {
        Host::with_peer(reply, duplex, None, None, None)
    }

    /// A host whose answers go to `reply`, in the handshake-era session `peer`, as the caller
    /// `grant` names, in the trace `traceparent` names.
    pub(crate) fn with_peer(
        reply: Reply,
        duplex: bool,
        peer: Option<Arc<str>>,
        grant: Option<Grant>,
        traceparent: Option<String>,
    ) -> Arc<Host> {
        Arc::new(Host {
            reply,
            peer,
            duplex,
            session: Mutex::new(None),
            grant,
            traceparent,
        })
    }

    /// Whether this host's caller may call `tool` (every host may, where nobody is
    /// authenticated).
    fn may_call(&self, tool: &str) -> bool {
        self.grant
            .as_ref()
            .is_none_or(|grant| grant.authorizer.may_call(&grant.caller, tool).is_ok())
    }

    /// Who this host's caller is, for the audit.
    fn caller(&self) -> Option<Arc<str>> {
        self.grant
            .as_ref()
            .map(|grant| Arc::clone(&grant.caller.subject))
    }

    /// Whether `other` is this host, or an HTTP host in the same handshake-era session and, with
    /// `--auth`, of the same caller: a session id another caller learned cancels nothing of
    /// this one's.
    fn is(&self, other: &Arc<Host>) -> bool {
        std::ptr::eq(self, Arc::as_ptr(other))
            || (self
                .peer
                .as_ref()
                .is_some_and(|peer| other.peer.as_ref() == Some(peer))
                && self.caller() == other.caller())
    }

    fn send(&self, line: Vec<u8>) {
        (self.reply)(line);
    }

    fn session(&self) -> Option<Session> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// What a forwarded request waiting for its response is.
enum Waiting {
    /// The proxy's own request (the era probe, the handshake): the answer goes to the channel.
    Own(mpsc::Sender<Result<Value, Value>>),
    Ping,
    ToolsList,
    Call(Box<Call>),
    /// An opened route: its answer passes, in the host's era.
    Passthrough(String),
}

/// A `tools/call` in flight.
struct Call {
    contract: Arc<Contract>,
    /// A candidate version decided beside the enforced one (`--shadow`).
    shadow: Option<Arc<Contract>>,
    request: Request,
    /// Its trace, when the proxy exports one (`--otlp-endpoint`): ended when the call is.
    trace: Option<CallSpan>,
    /// Its contract's metrics, when the proxy keeps them, and its place among the calls in
    /// flight (`toolgate_in_flight_calls`) until it is dropped, whichever way it ends.
    metrics: Option<(Arc<ContractMetrics>, InFlight)>,
}

struct Pending {
    /// Who asked (none for the proxy's own requests).
    host: Option<Arc<Host>>,
    /// The id the proxy gave it toward the upstream.
    upstream_id: Value,
    /// The id the host gave the request.
    id: Value,
    /// Whether the host asked in the modern era (and is answered in it).
    modern_host: bool,
    /// The progress token the host gave, replaced toward the upstream by the proxy's id.
    progress_token: Option<Value>,
    waiting: Waiting,
    since: Instant,
}

/// The upstream's era, once settled.
#[derive(Debug, Clone)]
pub(crate) enum Settled {
    /// A modern upstream: the revision every request names, and what `server/discover` said.
    Modern {
        /// The revision.
        version: String,
        /// Its capabilities.
        capabilities: Value,
    },
    /// A legacy upstream, its session opened by the proxy's own `initialize`.
    Legacy {
        /// The revision it chose.
        version: String,
        /// Its capabilities.
        capabilities: Value,
    },
    /// An upstream the proxy cannot speak to, and why (in the proxy's words).
    Unusable(String),
}

impl Settled {
    fn capabilities(&self) -> Value {
        match self {
            Settled::Modern { capabilities, .. } | Settled::Legacy { capabilities, .. } => {
                capabilities.clone()
            }
            Settled::Unusable(_) => json!({}),
        }
    }

    fn modern_version(&self) -> Option<&str> {
        match self {
            Settled::Modern { version, .. } => Some(version),
            _ => None,
        }
    }
}

#[derive(Default)]
struct State {
    /// Requests forwarded and not yet answered, by the proxy's id.
    pending: HashMap<String, Pending>,
    /// Upstream requests passed to the stdio host (opened routes only), by their id.
    upstream_requests: HashMap<String, Instant>,
    /// Why the upstream is gone, once it is.
    gone: Option<String>,
}

/// How the proxy is set up.
pub(crate) struct Setup {
    /// The tools with contracts.
    pub registry: Registry,
    /// The routes opened with `--allow`.
    pub allowed: Vec<Route>,
    /// How long a request may wait for the upstream.
    pub timeout: Duration,
    /// Where decisions are audited.
    pub audit: Option<AuditLog>,
    /// The operator's trusted context.
    pub context: OperatorContext,
    /// Where refusals (and sampled admissions) are kept, if anywhere.
    pub retainer: Option<Retainer>,
    /// Report-only: every result is decided and audited, and the upstream's own is forwarded.
    pub observe: bool,
    /// The upstream's tools as they were reviewed (`toolgate pin`), by name.
    pub pins: BTreeMap<String, Pin>,
    /// Where decisions, latencies and failures are counted (`/metrics`), if anywhere.
    pub metrics: Option<Arc<Metrics>>,
    /// Where calls are traced and audit events exported (`--otlp-endpoint`), if anywhere.
    pub tracing: Option<Arc<Tracing>>,
}

/// What the proxy knows of the upstream's pinned tools: each one's descriptor digest as last
/// listed (`None` where the listing did not hold it), and how many changes the upstream has
/// announced against how many a finished listing has seen: a listing in progress when a change
/// is announced does not count for it, so no call goes out on it.
#[derive(Default)]
struct Surface {
    listed: Option<BTreeMap<String, Option<String>>>,
    announced: u64,
    seen: u64,
}

impl Surface {
    fn stale(&self) -> bool {
        self.announced > self.seen
    }
}

/// How often the proxy lists the upstream's tools again on its own, for an upstream that does
/// not announce changes (`notifications/tools/list_changed`).
const SURFACE_REFRESH: Duration = Duration::from_secs(60);

/// The most pages of tools followed.
const MOST_PAGES: usize = 100;

/// The most a whole listing may hold, every page together (as JSON): a server that lists more
/// is refused rather than held in memory. A large real catalogue is a few hundred kilobytes.
const LISTING_TOTAL_CAP: usize = 16 << 20;

/// The most tools a listing may hold.
const MOST_TOOLS: usize = 2000;

impl Setup {
    /// A proxy that opens no route and audits nothing (listing a server's tools, the fuzzers'
    /// listener): `registry`'s tools, each call waiting up to `timeout`.
    pub(crate) fn closed(registry: Registry, timeout: Duration) -> Result<Setup, UsageError> {
        let context = OperatorContext::load(None, &registry)?;
        Ok(Setup {
            registry,
            allowed: Vec::new(),
            timeout,
            audit: None,
            context,
            retainer: None,
            observe: false,
            pins: BTreeMap::new(),
            metrics: None,
            tracing: None,
        })
    }
}

/// The proxy between its hosts and one upstream.
pub(crate) struct Proxy {
    registry: Registry,
    allowed: Vec<Route>,
    timeout: Duration,
    audit: Option<AuditLog>,
    context: OperatorContext,
    retainer: Option<Retainer>,
    observe: bool,
    pins: BTreeMap<String, Pin>,
    metrics: Option<Arc<Metrics>>,
    tracing: Option<Arc<Tracing>>,
    surface: Mutex<Surface>,
    surface_changed: Condvar,
    link: Box<dyn Link>,
    state: Mutex<State>,
    next_id: AtomicU64,
    settled: OnceLock<Settled>,
    /// The stdio host, the one host the upstream's requests on opened routes can reach.
    duplex_host: Mutex<Option<Arc<Host>>>,
    stopping: AtomicBool,
}

/// How long the era probe waits before it takes silence for a legacy upstream (the revision's
/// "reasonable timeout"; the SDKs wait 10 s).
const PROBE_WINDOW: Duration = Duration::from_secs(10);

impl Proxy {
    /// A proxy over `link`, whose upstream messages arrive on `incoming` (read by
    /// [`Proxy::pump`] on a thread of the caller's).
    pub(crate) fn new(setup: Setup, link: Box<dyn Link>) -> Proxy {
        Proxy {
            registry: setup.registry,
            allowed: setup.allowed,
            timeout: setup.timeout,
            audit: setup.audit,
            context: setup.context,
            retainer: setup.retainer,
            observe: setup.observe,
            pins: setup.pins,
            metrics: setup.metrics,
            tracing: setup.tracing,
            surface: Mutex::new(Surface::default()),
            surface_changed: Condvar::new(),
            link,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(0),
            settled: OnceLock::new(),
            duplex_host: Mutex::new(None),
            stopping: AtomicBool::new(false),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn allows(&self, route: Route) -> bool {
        self.allowed.contains(&route)
    }

    /// The upstream's era (settled before any host request is read).
    fn upstream(&self) -> &Settled {
        static UNSETTLED: OnceLock<Settled> = OnceLock::new();
        self.settled.get().unwrap_or_else(|| {
            UNSETTLED
                .get_or_init(|| Settled::Unusable("the upstream's era is not settled".to_owned()))
        })
    }

    /// Whether handing the proxy a host's message can block (it may write to a pipe the
    /// upstream stopped reading).
    pub(crate) fn forwarding_may_block(&self) -> bool {
        self.link.send_may_block()
    }

    /// Whether the proxy can serve: settled on a usable upstream that is still there.
    pub(crate) fn ready(&self) -> bool {
        matches!(
            self.settled.get(),
            Some(Settled::Modern { .. } | Settled::Legacy { .. })
        ) && self.state().gone.is_none()
            && self.link.alive()
    }

    /// Reads the upstream's messages until it is gone (run on a thread of its own).
    pub(crate) fn pump(&self, mut source: Source) {
        while let Some(message) = source.next_message() {
            let more_buffered = source.more_buffered();
            if !batch::handling(more_buffered, || self.upstream_message(message)) {
                return;
            }
        }
        batch::handling(false, || {
            self.upstream_gone("the upstream's connection closed");
        });
    }

    /// One message from the upstream; `false` once the upstream is gone.
    fn upstream_message(&self, message: Incoming) -> bool {
        match message {
            Incoming::Gone(reason) => {
                self.upstream_gone(&reason);
                return false;
            }
            Incoming::TooLong(prefix) => {
                self.unreadable("a message longer than the proxy's line cap", &prefix)
            }
            Incoming::TooLongFor(id, prefix) => self.too_long_for(&id, &prefix),
            Incoming::Line(line) if line.iter().all(u8::is_ascii_whitespace) => {}
            Incoming::Line(line) => match self.call_result_in_place(&line) {
                Err(why) => self.unreadable(&why, &line),
                Ok(None) => {}
                Ok(Some(value)) => match message::classify(value) {
                    Err(why) => self.unreadable(&why, &line),
                    Ok(message) => self.upstream_classified(message, line),
                },
            },
        }
        true
    }

    /// A message from the upstream, parsed and classified in full.
    fn upstream_classified(&self, message: Message, line: Vec<u8>) {
        match message {
            Message::Response { id, outcome } => self.upstream_response(&id, outcome),
            Message::Request { id, method, .. } => self.upstream_request(&id, &method, line),
            Message::Notification { method, params } => {
                self.upstream_notification(&method, &params, line)
            }
        }
    }

    /// The common answer, read without building values: a complete result for a tool call in
    /// flight is decided from the message's document itself (`structuredContent` written once,
    /// for the gate, with nothing else of the message turned into a `serde_json::Value`).
    /// `Ok(None)` when it was answered so; otherwise the message as a value, for the general
    /// path, or why the line is unreadable.
    fn call_result_in_place(&self, line: &[u8]) -> Result<Option<Value>, String> {
        let document = parse_document(line, message::MAX_MESSAGE_DEPTH)?;
        let root = document.root();
        // Observing forwards the upstream's own result, which the general path has as a value.
        let Some((id, result)) = message::result_in_place(root).filter(|_| !self.observe) else {
            return Ok(Some(root.to_value()));
        };
        let complete = match result.get("resultType") {
            None => true,
            Some(kind) => kind.as_str() == Some("complete"),
        };
        let key = id_key(&id);
        let (host, id, modern_host, call, since) = {
            let mut state = self.state();
            match state.pending.remove(&key) {
                Some(Pending {
                    host: Some(host),
                    id,
                    modern_host,
                    waiting: Waiting::Call(call),
                    since,
                    ..
                }) if complete && result.is_object() => (host, id, modern_host, call, since),
                // Anything else (a listing, an opened route, the proxy's own request, a result
                // that is not complete) takes the general path, as it is.
                Some(other) => {
                    state.pending.insert(key, other);
                    return Ok(Some(root.to_value()));
                }
                None => return Ok(Some(root.to_value())),
            }
        };
        let started = Instant::now();
        let now = SystemTime::now();
        let (decision, evidence) =
            tools::decide_in_place(&call.contract, &call.request, result, now);
        self.upstream_over(
            &call,
            Some(started.saturating_duration_since(since)),
            evidence.upstream_failure(),
            now,
        );
        let decision = self.judge(&call, started, decision, &evidence.response());
        host.send(result_line(
            &id,
            &tools::result_json(&decision, modern_host),
        ));
        Ok(None)
    }

    /// Answers every request that has waited longer than the timeout, and stops an upstream
    /// that has not read its input for as long, until the proxy stops (run on a thread of its
    /// own).
    pub(crate) fn watch_timeouts(&self) {
        while !self.stopping.load(Ordering::Relaxed) {
            std::thread::sleep(
                (self.timeout / 8).clamp(Duration::from_millis(5), Duration::from_millis(100)),
            );
            self.expire();
            self.link.unblock_if_stuck(self.timeout);
        }
    }

    /// Lists the upstream's tools again whenever a change is announced, and every minute,
    /// until the proxy stops (run on a thread of its own, only where tools are pinned).
    pub(crate) fn watch_surface(&self) {
        let mut surface = lock(&self.surface);
        while !self.stopping.load(Ordering::Relaxed) {
            if !surface.stale() {
                surface = self
                    .surface_changed
                    .wait_timeout(surface, SURFACE_REFRESH)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0;
            }
            if self.stopping.load(Ordering::Relaxed) {
                return;
            }
            drop(surface);
            self.refresh_surface();
            surface = lock(&self.surface);
        }
    }

    /// Lists the upstream's tools (every page) and holds what it says of the pinned ones. A
    /// listing that fails leaves every pinned tool withheld until one succeeds: a surface
    /// nobody could check is not the reviewed one.
    pub(crate) fn refresh_surface(&self) {
        if self.pins.is_empty() {
            return;
        }
        // The changes announced before this listing was asked for are the ones it sees.
        let covers = lock(&self.surface).announced;
        match self.list_all_tools("upstream", self.timeout) {
            Ok(tools) => self.note_surface(&tools, true),
            Err(error) => {
                log(&format!(
                    "cannot list the upstream's tools to check them against their pins ({error}); the pinned tools are withheld"
                ));
                lock(&self.surface).listed = Some(BTreeMap::new());
            }
        }
        let mut surface = lock(&self.surface);
        surface.seen = surface.seen.max(covers);
    }

    /// Holds what a listing (`complete`: every page) says of the pinned tools, and logs each
    /// one whose standing changed: withheld (naming what differs from its pin) or served again.
    fn note_surface(&self, tools: &[Value], complete: bool) {
        if self.pins.is_empty() {
            return;
        }
        let mut surface = lock(&self.surface);
        let mut listed = surface.listed.clone().unwrap_or_default();
        for (name, pin) in &self.pins {
            let found = tools
                .iter()
                .find(|tool| tool.get("name").and_then(Value::as_str) == Some(name.as_str()));
            let now = match found {
                Some(tool) => Some(pins::sha256(&pins::descriptor(tool))),
                None if complete => None,
                // A page of a paged listing says nothing of the tools it does not hold.
                None => continue,
            };
            let before = listed.get(name).cloned();
            let was_served = before
                .as_ref()
                .is_some_and(|digest| digest.as_deref() == Some(pin.sha256.as_str()));
            let served = now.as_deref() == Some(pin.sha256.as_str());
            if before.is_none() || was_served != served {
                match (found, served) {
                    (_, true) if before.is_some() => log(&format!(
                        "the upstream's tool {name:?} matches its pin again; it is served"
                    )),
                    (_, true) => {}
                    (Some(tool), false) => log(&format!(
                        "the upstream's tool {name:?} changed since it was pinned ({} differ); it is withheld from tools/list and every call to it gets the fixed failure until it is reviewed and pinned again (toolgate pin)",
                        pins::changed(&pin.descriptor, &pins::descriptor(tool)).join(", ")
                    )),
                    (None, false) => log(&format!(
                        "the upstream no longer lists the pinned tool {name:?}; calls to it get the fixed failure"
                    )),
                }
            }
            listed.insert(name.clone(), now);
        }
        surface.listed = Some(listed);
    }

    /// Before a call of the pinned tool `name` is forwarded after the upstream announced a
    /// change, its tools are listed again, on this thread, where waiting blocks no one else (a
    /// stdio upstream: the host's reader, or a blocking thread of the listener): no call goes
    /// out on a listing the upstream said is stale. Over HTTP the watcher's thread lists again.
    fn refresh_surface_if_changed(&self, name: &str) {
        if !self.pins.contains_key(name) || !self.link.send_may_block() {
            return;
        }
        let stale = lock(&self.surface).stale();
        if stale {
            self.refresh_surface();
        }
    }

    /// Why a call to `name` may not be forwarded: its pin and the upstream's tool disagree (or
    /// the upstream's tools could not be listed).
    fn surface_refusal(&self, name: &str) -> Option<&'static str> {
        let pin = self.pins.get(name)?;
        let surface = lock(&self.surface);
        let current = surface.listed.as_ref().and_then(|listed| listed.get(name));
        match current {
            Some(Some(digest)) if *digest == pin.sha256 => None,
            Some(Some(_)) => {
                Some("the upstream's descriptor of the tool changed since it was pinned")
            }
            Some(None) => Some("the upstream no longer lists the pinned tool"),
            None => Some("the upstream's tools could not be listed to check the tool's pin"),
        }
    }

    /// Whether a listed tool is the one pinned (a tool without a pin always is).
    fn matches_pin(&self, name: &str, tool: &Value) -> bool {
        self.pins
            .get(name)
            .is_none_or(|pin| pins::sha256(&pins::descriptor(tool)) == pin.sha256)
    }

    /// Every tool the upstream (its era settled) lists, page after page, as it lists
    /// them (each with a `name`), within `timeout` for the whole listing.
    pub(crate) fn list_all_tools(
        &self,
        shown: &str,
        timeout: Duration,
    ) -> Result<Vec<Value>, UsageError> {
        let deadline = Instant::now() + timeout;
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut listed_bytes = 0usize;
        for _ in 0..MOST_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let result = match self.request("tools/list", &params, left) {
                Some(Ok(result)) => result,
                Some(Err(error)) => {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` refused tools/list: {error}"
                    )));
                }
                None => {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` did not answer within {}s",
                        timeout.as_secs()
                    )));
                }
            };
            for tool in result
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if tool.get("name").and_then(Value::as_str).is_none() {
                    continue;
                }
                listed_bytes += tool.to_string().len();
                if listed_bytes > LISTING_TOTAL_CAP || tools.len() >= MOST_TOOLS {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` lists more than {MOST_TOOLS} tools or {} MiB of them; toolgate stops there rather than hold them all",
                        LISTING_TOTAL_CAP >> 20
                    )));
                }
                tools.push(tool.clone());
            }
            cursor = result
                .get("nextCursor")
                .filter(|cursor| !cursor.is_null())
                .cloned();
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err(UsageError::new(format!(
            "the MCP server `{shown}` kept paging past {MOST_PAGES} pages of tools"
        )))
    }

    /// Ends the run: the upstream's input closed, the time to finish what is in flight, then
    /// the upstream stopped and every request still pending answered.
    pub(crate) fn shut_down(&self, reason: &str) {
        self.link.close();
        self.link
            .stop(self.timeout, &|| self.state().pending.is_empty());
        self.upstream_gone(reason);
        self.stopping.store(true, Ordering::Relaxed);
        self.surface_changed.notify_all();
        // What was chosen for keeping is written before the process ends.
        if let Some(retainer) = &self.retainer {
            log(&retainer.finish(Duration::from_secs(10)));
        }
    }

    // -----------------------------------------------------------------------------------------
    // Settling the upstream's era.

    /// Settles the upstream's era before any host request is forwarded, as the revision's stdio
    /// compatibility rules describe: a `server/discover` probe; a `DiscoverResult` or a modern
    /// error means a modern upstream (and a version it lists is chosen), any other error or
    /// silence a legacy one, with which the proxy opens the session itself (`initialize`, then
    /// `notifications/initialized`) declaring only the opened client-side routes.
    pub(crate) fn settle(&self) -> &Settled {
        let settled = self.probe();
        match &settled {
            Settled::Modern { version, .. } | Settled::Legacy { version, .. } => {
                self.link.agreed(version);
            }
            Settled::Unusable(reason) => log(&format!(
                "the upstream cannot be served: {reason}; every request is answered with an error"
            )),
        }
        self.settled.get_or_init(|| settled)
    }

    fn probe(&self) -> Settled {
        let capabilities = era::strip_client_capabilities(&json!({}), &self.allowed);
        let discover = json!({"_meta": {
            era::meta::PROTOCOL_VERSION: MODERN_VERSIONS[0],
            era::meta::CLIENT_CAPABILITIES: capabilities,
            era::meta::CLIENT_INFO: era::implementation(),
        }});
        let window = PROBE_WINDOW.min(self.timeout);
        match self.ask("server/discover", discover, window) {
            // A DiscoverResult lists the revisions spoken; a result without that list is a
            // legacy server answering a method it does not know with something.
            Some(Ok(result)) if result.get("supportedVersions").is_some_and(Value::is_array) => {
                let supported = versions(result.get("supportedVersions"));
                match MODERN_VERSIONS
                    .iter()
                    .find(|version| supported.iter().any(|listed| listed == *version))
                {
                    Some(version) => Settled::Modern {
                        version: (*version).to_owned(),
                        capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                    },
                    None => self.legacy_or(&supported),
                }
            }
            Some(Err(error))
                if error.get("code").and_then(Value::as_i64)
                    == Some(modern_codes::UNSUPPORTED_PROTOCOL_VERSION) =>
            {
                let supported = versions(error.get("data").and_then(|data| data.get("supported")));
                self.legacy_or(&supported)
            }
            None if self.state().gone.is_some() => Settled::Unusable(format!(
                "it ended before answering ({})",
                self.state().gone.clone().unwrap_or_default()
            )),
            // Any other error, or silence: a legacy upstream.
            _ => self.handshake(LEGACY_VERSIONS[0]),
        }
    }

    /// A modern upstream that speaks none of the proxy's modern revisions: the legacy
    /// handshake if it lists a legacy revision the proxy speaks, else unusable.
    fn legacy_or(&self, supported: &[String]) -> Settled {
        match LEGACY_VERSIONS
            .iter()
            .find(|version| supported.iter().any(|listed| listed == *version))
        {
            Some(version) => self.handshake(version),
            None => Settled::Unusable(format!(
                "it speaks {}; toolgate speaks {}",
                if supported.is_empty() {
                    "no revision it names".to_owned()
                } else {
                    supported.join(", ")
                },
                era::supported_versions().join(", ")
            )),
        }
    }

    fn handshake(&self, version: &str) -> Settled {
        let capabilities = era::strip_client_capabilities(
            &json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}, "tasks": {}}),
            &self.allowed,
        );
        let params = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": era::implementation(),
        });
        match self.ask("initialize", params, self.timeout) {
            Some(Ok(result)) => {
                let chosen = result
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !LEGACY_VERSIONS.contains(&chosen) {
                    return Settled::Unusable(format!(
                        "it chose protocol version {chosen:?} in the handshake; toolgate speaks {}",
                        LEGACY_VERSIONS.join(", ")
                    ));
                }
                self.link.send(Outgoing {
                    line: notification_line("notifications/initialized", &json!({})),
                    id: None,
                    method: Some("notifications/initialized".to_owned()),
                    name: None,
                    traceparent: None,
                });
                Settled::Legacy {
                    version: chosen.to_owned(),
                    capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
                }
            }
            Some(Err(error)) => {
                let supported = versions(error.get("data").and_then(|data| data.get("supported")));
                Settled::Unusable(format!(
                    "it refused the handshake (error {}){}",
                    error
                        .get("code")
                        .and_then(Value::as_i64)
                        .unwrap_or_default(),
                    if supported.is_empty() {
                        String::new()
                    } else {
                        format!(" and speaks {}", supported.join(", "))
                    }
                ))
            }
            None => Settled::Unusable("it did not answer the handshake".to_owned()),
        }
    }

    /// Sends the proxy's own request and waits up to `window` for its answer (`None`: no
    /// answer, or the upstream is gone).
    fn ask(&self, method: &str, params: Value, window: Duration) -> Option<Result<Value, Value>> {
        // The proxy asks from threads that read no messages (settling, before the host is read;
        // a listing's caller): a reader holding its writes would wait on its own held request.
        debug_assert!(!batch::holding(), "asked while holding writes back");
        let (answer, answered) = mpsc::channel();
        let id = self.next_upstream_id();
        let key = id_key(&id);
        self.state().pending.insert(
            key.clone(),
            Pending {
                host: None,
                upstream_id: id.clone(),
                id: id.clone(),
                modern_host: false,
                progress_token: None,
                waiting: Waiting::Own(answer),
                since: Instant::now(),
            },
        );
        let sent = self.link.send(Outgoing {
            line: message::request_line(&id, method, &params),
            id: Some(id),
            method: Some(method.to_owned()),
            name: None,
            traceparent: None,
        });
        let outcome = if sent {
            answered.recv_timeout(window).ok()
        } else {
            None
        };
        self.state().pending.remove(&key);
        outcome
    }

    /// The proxy's own request to a settled upstream, in its era (a modern upstream's request
    /// carries the protocol fields), waiting up to `window`.
    pub(crate) fn request(
        &self,
        method: &str,
        params: &Value,
        window: Duration,
    ) -> Option<Result<Value, Value>> {
        let params = era::params_for_upstream(
            params.clone(),
            self.upstream().modern_version(),
            &json!({}),
            &self.allowed,
        );
        self.ask(method, params, window)
    }

    fn next_upstream_id(&self) -> Value {
        Value::from(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    // -----------------------------------------------------------------------------------------
    // From a host.

    /// Registers the stdio host, the one to which the upstream's requests on opened routes go.
    pub(crate) fn attach_duplex_host(&self, host: &Arc<Host>) {
        *self
            .duplex_host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Arc::clone(host));
    }

    /// One message from a host, already read (at most the line cap).
    pub(crate) fn host_message(&self, host: &Arc<Host>, line: Vec<u8>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match message::parse(&line) {
            Err(why) => host.send(error_line(
                &Value::Null,
                codes::PARSE_ERROR,
                &format!("not forwarded: {why}"),
            )),
            Ok(Message::Request { id, method, params }) => {
                self.host_request(host, id, &method, params)
            }
            Ok(Message::Notification { method, params }) => {
                self.host_notification(host, &method, &params, line)
            }
            Ok(Message::Response { id, .. }) => {
                let forwarded = self
                    .state()
                    .upstream_requests
                    .remove(&id_key(&id))
                    .is_some();
                if forwarded {
                    self.link.send(Outgoing::response(line));
                } else {
                    log("dropped a response from the host to no request the upstream made");
                }
            }
        }
    }

    /// A message from a host that is longer than the cap.
    pub(crate) fn host_message_too_long(&self, host: &Host, cap: usize) {
        host.send(error_line(
            &Value::Null,
            codes::INVALID_REQUEST,
            &format!("a message longer than {cap} bytes; not forwarded"),
        ));
    }

    fn host_request(&self, host: &Arc<Host>, id: Value, method: &str, mut params: Value) {
        let refuse = |refusal: Refusal| host.send(refusal_line(&id, &refusal));
        // A call's arguments as its argument contract rebuilt them, when it has one.
        let mut gated_arguments: Option<Value> = None;
        let request_era = match era::request_era(&params) {
            Ok(request_era) => request_era,
            Err(refusal) => return refuse(refusal),
        };
        let modern_host = matches!(request_era, RequestEra::Modern { .. });
        let duplicate = self.state().pending.values().any(|pending| {
            pending.id == id
                && pending
                    .host
                    .as_ref()
                    .is_some_and(|asker| Arc::ptr_eq(asker, host))
        });
        if duplicate {
            return refuse(plain(
                codes::INVALID_REQUEST,
                "a request with this id is still pending",
            ));
        }
        let waiting = match method {
            "initialize" => return self.initialize(host, &id, &params, modern_host),
            "server/discover" => return self.discover(host, &id, modern_host),
            "ping" if modern_host => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "`ping` is not part of the 2026-07-28 revision",
                ));
            }
            // A modern upstream has no ping: the proxy answers for itself.
            "ping" if self.upstream().modern_version().is_some() => {
                return host.send(result_line(&id, b"{}"));
            }
            "ping" => Waiting::Ping,
            "tools/list" => Waiting::ToolsList,
            "tools/call" if params.get("task").is_some() => {
                if !self.allows(Route::Tasks) {
                    return refuse(plain(
                        codes::METHOD_NOT_FOUND,
                        "task-augmented tool calls are not available through toolgate (their results would bypass the contract); allow them with --allow tasks",
                    ));
                }
                Waiting::Passthrough(method.to_owned())
            }
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    return refuse(plain(
                        codes::INVALID_PARAMS,
                        "tools/call needs a tool `name`",
                    ));
                };
                let Some(tool) = self.registry.get(name) else {
                    return refuse(plain(
                        codes::INVALID_PARAMS,
                        &format!(
                            "tool {name:?} has no contract in this toolgate repository, so it is not available"
                        ),
                    ));
                };
                if !host.may_call(name) {
                    // The listener answers 403 before this; a host reaching here is refused
                    // all the same.
                    return refuse(plain(
                        codes::INVALID_PARAMS,
                        &format!("tool {name:?} is not available to this caller"),
                    ));
                }
                let mut arguments = params.get("arguments").unwrap_or(&Value::Null);
                let trace = self.tracing.as_ref().map(|tracing| {
                    tracing.call(&CallAttributes {
                        tool: name,
                        request_id: &IdText(&id),
                        transport: if host.duplex { "pipe" } else { "tcp" },
                        session: host.peer.as_deref(),
                        protocol_version: match &request_era {
                            RequestEra::Modern { version, .. } => Some(version.as_str()),
                            RequestEra::Legacy => None,
                        },
                        traceparent: params
                            .get("_meta")
                            .and_then(|meta| meta.get("traceparent"))
                            .and_then(Value::as_str)
                            .or(host.traceparent.as_deref()),
                    })
                });
                let metrics = self.metrics.as_ref().map(|metrics| {
                    let resolved = metrics.contract(&tool.contract);
                    let in_flight = resolved.call_started();
                    (resolved, in_flight)
                });
                self.refresh_surface_if_changed(name);
                if let Some(reason) = self.surface_refusal(name) {
                    // Not the tool that was reviewed: nothing is forwarded, and the refusal is
                    // decided and audited like an unusable answer.
                    let mut request =
                        tools::request_for(&id, arguments, tool, self.context.for_tool(name));
                    if let Some(caller) = host.caller() {
                        request = request.with_caller(caller);
                    }
                    let call = Call {
                        contract: Arc::clone(&tool.contract),
                        shadow: None,
                        request,
                        trace,
                        metrics,
                    };
                    return self.decide_failure(
                        host,
                        &id,
                        &call,
                        modern_host,
                        Response::incomplete(reason),
                        (None, UpstreamFailure::Changed),
                    );
                }
                if let Some(gate) = &tool.arguments {
                    // What the upstream receives is what the argument contract's projection
                    // built, or nothing.
                    match self.gate_arguments(
                        host,
                        &id,
                        modern_host,
                        tool,
                        gate,
                        arguments,
                        trace.as_ref(),
                    ) {
                        Some(projected) => {
                            gated_arguments = Some(projected);
                            arguments = gated_arguments.as_ref().unwrap_or(&Value::Null);
                        }
                        None => return,
                    }
                }
                let mut request =
                    tools::request_for(&id, arguments, tool, self.context.for_tool(name));
                if let Some(caller) = host.caller() {
                    request = request.with_caller(caller);
                }
                Waiting::Call(Box::new(Call {
                    contract: Arc::clone(&tool.contract),
                    shadow: tool.shadow.clone(),
                    request,
                    trace,
                    metrics,
                }))
            }
            "subscriptions/listen" => {
                return refuse(plain(
                    codes::METHOD_NOT_FOUND,
                    "`subscriptions/listen` is not available through toolgate: its notifications are not gated",
                ));
            }
            _ => match Route::of_host_method(method) {
                Some(route) if self.allows(route) => Waiting::Passthrough(method.to_owned()),
                Some(route) => {
                    return refuse(plain(
                        codes::METHOD_NOT_FOUND,
                        &format!(
                            "`{method}` is not available through toolgate: closed by default, as a route for unvetted data (allow it with --allow {})",
                            route.capability()
                        ),
                    ));
                }
                None => {
                    return refuse(plain(
                        codes::METHOD_NOT_FOUND,
                        &format!("`{method}` is not available through toolgate"),
                    ));
                }
            },
        };
        if let Some(arguments) = gated_arguments {
            params["arguments"] = arguments;
        }
        // The client capabilities the upstream hears of: this request's (modern), or the
        // handshake's on this connection (legacy), stripped either way.
        let capabilities = match &request_era {
            RequestEra::Modern { capabilities, .. } => capabilities.clone(),
            RequestEra::Legacy => host
                .session()
                .map(|session| session.capabilities)
                .unwrap_or_else(|| json!({})),
        };
        let upstream_id = self.next_upstream_id();
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .cloned();
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut upstream_params = era::params_for_upstream(
            params,
            self.upstream().modern_version(),
            &capabilities,
            &self.allowed,
        );
        if progress_token.is_some() {
            upstream_params["_meta"]["progressToken"] = upstream_id.clone();
        }
        // A traced call's upstream continues its trace, under the client span.
        let traceparent = match (&waiting, &name) {
            (Waiting::Call(call), Some(tool)) => call
                .trace
                .as_ref()
                .and_then(|trace| trace.upstream_started(tool, self.upstream_transport())),
            _ => None,
        };
        if let Some(traceparent) = &traceparent {
            upstream_params["_meta"]["traceparent"] = Value::from(traceparent.as_str());
        }
        let pending = Pending {
            host: Some(Arc::clone(host)),
            upstream_id: upstream_id.clone(),
            id,
            modern_host,
            progress_token,
            waiting,
            since: Instant::now(),
        };
        if let Settled::Unusable(reason) = self.upstream() {
            // Asking again cannot help: no call is retryable while no revision is shared.
            return match (&pending.waiting, &pending.host) {
                (Waiting::Call(call), Some(host)) => self.decide_failure(
                    host,
                    &pending.id,
                    call,
                    modern_host,
                    Response::incomplete(reason),
                    (None, UpstreamFailure::Unavailable),
                ),
                _ => self.answer_gone(pending, reason, UpstreamFailure::Unavailable),
            };
        }
        let gone = self.state().gone.clone();
        if let Some(reason) = gone {
            return self.answer_gone(pending, &reason, UpstreamFailure::Unavailable);
        }
        let key = id_key(&upstream_id);
        self.state().pending.insert(key.clone(), pending);
        let outgoing = Outgoing {
            line: message::request_line(&upstream_id, method, &upstream_params),
            id: Some(upstream_id),
            method: Some(method.to_owned()),
            name,
            traceparent,
        };
        if !self.link.send(outgoing)
            && let Some(pending) = self.state().pending.remove(&key)
        {
            self.answer_gone(
                pending,
                "the upstream is not running",
                UpstreamFailure::Unavailable,
            );
        }
    }

    /// Decides a call's arguments by the tool's argument contract, audited (and offered for
    /// retention) like any decision: the arguments its projection rebuilt, or, refused, `None`
    /// after answering the host with the tool's fixed failure (no upstream call is made). In
    /// observe mode a refusal is recorded and the arguments go on as they came.
    #[allow(clippy::too_many_arguments)]
    fn gate_arguments(
        &self,
        host: &Host,
        id: &Value,
        modern_host: bool,
        tool: &tools::Tool,
        gate: &tools::ArgumentContract,
        arguments: &Value,
        trace: Option<&CallSpan>,
    ) -> Option<Value> {
        let raw = serde_json::to_vec(arguments).unwrap_or_default();
        let mut request = tools::arguments_request(id, gate, self.context.for_tool(&gate.folder));
        if let Some(caller) = host.caller() {
            request = request.with_caller(caller);
        }
        let response = Response::body(&raw);
        let started = Instant::now();
        let now = SystemTime::now();
        let mut decision = gate.contract.admit_response(response, &request, now);
        if self.observe {
            decision = decision.observed();
        }
        let metrics = self
            .metrics
            .as_ref()
            .map(|metrics| metrics.contract(&gate.contract));
        self.record(
            &gate.contract,
            &decision,
            started,
            metrics.as_deref(),
            trace,
        );
        if let Some(retainer) = &self.retainer {
            retainer.offer(&decision, &response, &request);
        }
        if decision.is_admitted() {
            return serde_json::from_slice(decision.agent_bytes()).ok();
        }
        if self.observe {
            return Some(arguments.clone());
        }
        // The host hears the tool's own fixed failure (its output schema's failure branch);
        // the refusal's reason is the operator's, in the record above.
        let failure = tool.contract.admit_response(
            Response::incomplete("the call's arguments were refused by its argument contract"),
            &tools::request_for(id, &Value::Null, tool, serde_json::Map::new()),
            now,
        );
        host.send(result_line(id, &tools::result_json(&failure, modern_host)));
        None
    }

    /// A legacy host's handshake, answered by the proxy (it opened the upstream's session, or
    /// the upstream has none): the revision the host asked for when the proxy speaks it, the
    /// capabilities the proxy offers, the proxy's own identity. The upstream's `serverInfo` and
    /// `instructions` (free text a host may show the model) are not passed on.
    fn initialize(&self, host: &Arc<Host>, id: &Value, params: &Value, modern_host: bool) {
        if modern_host {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::INVALID_REQUEST,
                    "`initialize` belongs to the handshake revisions; a 2026-07-28 client calls server/discover",
                ),
            ));
        }
        if let Settled::Unusable(reason) = self.upstream() {
            return host.send(error_line(
                id,
                codes::INTERNAL_ERROR,
                &format!("the upstream server is unavailable ({reason})"),
            ));
        }
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let version = LEGACY_VERSIONS
            .iter()
            .find(|version| **version == asked)
            .unwrap_or(&LEGACY_VERSIONS[0]);
        let capabilities = era::strip_client_capabilities(
            params.get("capabilities").unwrap_or(&Value::Null),
            &self.allowed,
        );
        *host
            .session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Session { capabilities });
        let result = json!({
            "protocolVersion": version,
            "capabilities": self.server_capabilities(),
            "serverInfo": era::implementation(),
        });
        host.send(value_result_line(id, &result));
    }

    /// `server/discover`, answered by the proxy: every revision it speaks, the capabilities it
    /// offers, its own identity; no `instructions` (the upstream's are free text).
    fn discover(&self, host: &Arc<Host>, id: &Value, modern_host: bool) {
        if !modern_host {
            return host.send(refusal_line(
                id,
                &plain(
                    codes::INVALID_PARAMS,
                    &format!(
                        "server/discover needs `_meta.{}` and `_meta.{}`",
                        era::meta::PROTOCOL_VERSION,
                        era::meta::CLIENT_CAPABILITIES
                    ),
                ),
            ));
        }
        let result = era::modern_result(
            "server/discover",
            json!({
                "supportedVersions": era::supported_versions(),
                "capabilities": self.server_capabilities(),
            }),
            None,
        );
        host.send(value_result_line(id, &result));
    }

    /// The capabilities the proxy offers a host: tools (with the upstream's `listChanged` for a
    /// stdio host), and the capabilities of the server-side routes the operator opened, as the
    /// upstream declared them.
    fn server_capabilities(&self) -> Value {
        let upstream = self.upstream().capabilities();
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
        capabilities
    }

    fn host_notification(&self, host: &Arc<Host>, method: &str, params: &Value, raw: Vec<u8>) {
        let legacy_upstream = matches!(self.upstream(), Settled::Legacy { .. });
        match method {
            // The proxy opened the upstream's session itself.
            "notifications/initialized" => {}
            "notifications/cancelled" => {
                let Some(cancelled) = params.get("requestId") else {
                    return;
                };
                // The request this host (or another POST of its handshake-era session) made.
                let found = {
                    let mut state = self.state();
                    let key = state
                        .pending
                        .iter()
                        .find(|(_, pending)| {
                            &pending.id == cancelled
                                && pending.host.as_ref().is_some_and(|asker| asker.is(host))
                        })
                        .map(|(key, _)| key.clone());
                    key.and_then(|key| state.pending.remove(&key))
                };
                // A cancelled request's late answer is dropped as an unknown id.
                if let Some(pending) = found {
                    let reason = params
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("the host cancelled the request");
                    self.link.cancel(&pending.upstream_id, reason);
                }
            }
            "notifications/roots/list_changed" if self.allows(Route::Roots) && legacy_upstream => {
                self.forward_notification(method, raw)
            }
            "notifications/progress"
                if (self.allows(Route::Sampling) || self.allows(Route::Elicitation))
                    && legacy_upstream =>
            {
                self.forward_notification(method, raw)
            }
            _ => log(&format!("dropped the host's `{method}` notification")),
        }
    }

    fn forward_notification(&self, method: &str, raw: Vec<u8>) {
        self.link.send(Outgoing {
            line: raw,
            id: None,
            method: Some(method.to_owned()),
            name: None,
            traceparent: None,
        });
    }

    // -----------------------------------------------------------------------------------------
    // From the upstream.

    /// The upstream wrote a message no one can read: which request it answered is unknown, so
    /// every pending call is decided on those bytes (the gate refuses them, at the layer that
    /// owns the flaw) and every other pending request gets an error.
    fn unreadable(&self, why: &str, line: &[u8]) {
        log(&format!(
            "the upstream wrote an unreadable line ({why}); every pending request is answered with the fixed failure"
        ));
        for pending in self.take_pending() {
            match (&pending.waiting, &pending.host) {
                (Waiting::Call(call), Some(host)) => {
                    let started = Instant::now();
                    let now = SystemTime::now();
                    self.upstream_over(call, None, Some(UpstreamFailure::Unreadable), now);
                    let mut decision =
                        call.contract
                            .admit_response(Response::body(line), &call.request, now);
                    let mut response = Response::body(line);
                    if decision.is_admitted() {
                        // Bytes no message correlates with a call never answer it, even if a
                        // contract would admit them.
                        response = Response::unreachable("a line that answers no request");
                        decision = call.contract.admit_response(response, &call.request, now);
                    }
                    let decision = self.judge(call, started, decision, &response);
                    host.send(result_line(
                        &pending.id,
                        &tools::result_json(&decision, pending.modern_host),
                    ));
                }
                _ => self.answer_gone(
                    pending,
                    "it wrote an unreadable line",
                    UpstreamFailure::Unreadable,
                ),
            }
        }
    }

    fn upstream_response(&self, id: &Value, outcome: Result<Value, Value>) {
        let Some(pending) = self.state().pending.remove(&id_key(id)) else {
            log(
                "dropped a response from the upstream to no pending request (a late, cancelled or unknown id)",
            );
            return;
        };
        let Some(host) = pending.host.clone() else {
            if let Waiting::Own(answer) = pending.waiting {
                let _ = answer.send(outcome);
            }
            return;
        };
        let id = &pending.id;
        let modern_host = pending.modern_host;
        let started = Instant::now();
        let waited = Some(started.saturating_duration_since(pending.since));
        let line = match (pending.waiting, outcome) {
            (Waiting::Own(_), _) => return,
            (Waiting::Passthrough(method), Ok(result)) => {
                value_result_line(id, &era::passthrough_result(&method, result, modern_host))
            }
            // An opened route: its error passes as the upstream wrote it.
            (Waiting::Passthrough(_), Err(error)) => message::error_object_line(id, &error),
            (Waiting::Ping, Ok(_)) => result_line(id, b"{}"),
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
                self.note_surface(&upstream_tools, result.get("nextCursor").is_none());
                let listed = self.registry.list(&upstream_tools, |name, tool| {
                    host.may_call(name) && self.matches_pin(name, tool)
                });
                let listed = if modern_host {
                    era::modern_result("tools/list", listed, Some(&result))
                } else {
                    listed
                };
                value_result_line(id, &listed)
            }
            (Waiting::Call(call), Ok(result)) => {
                let unusable = match era::result_kind(&result) {
                    ResultKind::Complete => None,
                    ResultKind::InputRequired => {
                        if modern_host
                            && let Some(passed) =
                                era::input_required_for_host(&result, &self.allowed)
                        {
                            log("passed an input_required result to the host on an opened route");
                            return host.send(value_result_line(id, &passed));
                        }
                        Some(
                            "the upstream asked for input (input_required) on a route that is closed, or of a host that cannot give it",
                        )
                    }
                    ResultKind::Unknown => {
                        Some("the upstream's result has a resultType toolgate does not know")
                    }
                };
                if let Some(reason) = unusable {
                    return self.decide_failure(
                        &host,
                        id,
                        &call,
                        modern_host,
                        Response::incomplete(reason),
                        (waited, UpstreamFailure::Unusable),
                    );
                }
                let now = SystemTime::now();
                let (decision, evidence) =
                    tools::decide(&call.contract, &call.request, &result, now);
                self.upstream_over(&call, waited, evidence.upstream_failure(), now);
                let decision = self.judge(&call, started, decision, &evidence.response());
                if self.observe {
                    // Report-only: decided and audited; the upstream's result as it came.
                    value_result_line(
                        id,
                        &era::passthrough_result("tools/call", result, modern_host),
                    )
                } else {
                    result_line(id, &tools::result_json(&decision, modern_host))
                }
            }
            (Waiting::Call(call), Err(error)) if self.observe => {
                let response =
                    Response::unreachable("the upstream answered the call with a JSON-RPC error");
                let now = SystemTime::now();
                self.upstream_over(&call, waited, Some(UpstreamFailure::Error), now);
                let decision = call.contract.admit_response(response, &call.request, now);
                self.judge(&call, started, decision, &response);
                message::error_object_line(id, &error)
            }
            (Waiting::Call(call), Err(error)) => {
                // What the proxy withholds (a client capability, a revision) is withheld on the
                // next call too: asking again cannot succeed, so the agent is not told to.
                let withheld = match error.get("code").and_then(Value::as_i64) {
                    Some(modern_codes::MISSING_CLIENT_CAPABILITY) => Some(
                        "the upstream needs a client capability toolgate does not pass on (a closed route)",
                    ),
                    Some(modern_codes::UNSUPPORTED_PROTOCOL_VERSION) => {
                        Some("the upstream refused the call's protocol version")
                    }
                    _ => None,
                };
                return match withheld {
                    Some(reason) => {
                        log(&format!(
                            "{reason}; answered with the fixed failure, not retryable"
                        ));
                        self.decide_failure(
                            &host,
                            id,
                            &call,
                            modern_host,
                            Response::incomplete(reason),
                            (waited, UpstreamFailure::Unusable),
                        )
                    }
                    None => self.decide_failure(
                        &host,
                        id,
                        &call,
                        modern_host,
                        Response::unreachable(
                            "the upstream answered the call with a JSON-RPC error",
                        ),
                        (waited, UpstreamFailure::Error),
                    ),
                };
            }
            (_, Err(error)) => refusal_line(id, &relayed_error(&error)),
        };
        host.send(line);
    }

    fn upstream_request(&self, id: &Value, method: &str, raw: Vec<u8>) {
        if method == "ping" {
            self.link.send(Outgoing::response(result_line(id, b"{}")));
            return;
        }
        let host = self
            .duplex_host
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        match (Route::of_upstream_method(method), host) {
            (Some(route), Some(host)) if self.allows(route) && host.duplex => {
                self.state()
                    .upstream_requests
                    .insert(id_key(id), Instant::now());
                host.send(raw);
            }
            _ => {
                log(&format!(
                    "refused the upstream's `{method}` request: toolgate passes no server requests to the host unless allowed"
                ));
                self.link.send(Outgoing::response(error_line(
                    id,
                    codes::METHOD_NOT_FOUND,
                    "not available: the client is behind toolgate, which does not pass this request on",
                )));
            }
        }
    }

    fn upstream_notification(&self, method: &str, params: &Value, raw: Vec<u8>) {
        let duplex_host = || {
            self.duplex_host
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone()
        };
        match method {
            "notifications/progress" => {
                let Some(token) = params.get("progressToken") else {
                    return;
                };
                let target = self
                    .state()
                    .pending
                    .get(&id_key(token))
                    .and_then(|pending| {
                        let host_token = pending.progress_token.clone()?;
                        matches!(pending.waiting, Waiting::Call(_))
                            .then(|| pending.host.clone())
                            .flatten()
                            .map(|host| (host, host_token))
                    });
                let Some((host, host_token)) = target else {
                    return log("dropped progress for no pending call");
                };
                // Progress without its free-text message: numbers the proxy writes itself.
                let mut rebuilt = json!({"progressToken": host_token});
                for field in ["progress", "total"] {
                    if let Some(number) = params.get(field).filter(|value| value.is_number()) {
                        rebuilt[field] = number.clone();
                    }
                }
                host.send(notification_line(method, &rebuilt));
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info");
                let data = params.get("data").map(Value::to_string).unwrap_or_default();
                log(&format!("upstream log ({level}): {data}"));
            }
            "notifications/tools/list_changed" if !self.pins.is_empty() => {
                // Listed again on the watcher's thread; until then the last listing stands.
                lock(&self.surface).announced += 1;
                self.surface_changed.notify_all();
                if let Some(host) = duplex_host() {
                    host.send(
                        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
                            .to_vec(),
                    );
                }
            }
            "notifications/tools/list_changed" => match duplex_host() {
                Some(host) => host.send(
                    br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec(),
                ),
                None => log("the upstream's tools changed; hosts see it at their next tools/list"),
            },
            _ if (method.starts_with("notifications/resources/")
                && self.allows(Route::Resources))
                || (method == "notifications/prompts/list_changed"
                    && self.allows(Route::Prompts))
                || (method.starts_with("notifications/tasks/") && self.allows(Route::Tasks)) =>
            {
                match duplex_host() {
                    Some(host) => host.send(raw),
                    None => log(&format!(
                        "dropped the upstream's `{method}` notification: no host holds a connection"
                    )),
                }
            }
            _ => log(&format!("dropped the upstream's `{method}` notification")),
        }
    }

    /// Every decision is counted, traced and audited (begun at `started`, in the call's trace
    /// `trace`); a refusal's operator record goes to stderr as well (the audit line holds
    /// digests, not the reason).
    fn record(
        &self,
        contract: &Contract,
        decision: &Decision,
        started: Instant,
        metrics: Option<&ContractMetrics>,
        trace: Option<&CallSpan>,
    ) {
        if let Some(metrics) = metrics {
            metrics.decided(decision, started.elapsed());
        }
        if let Some(trace) = trace {
            trace.decided(contract, decision, decision.time());
        }
        if let Some(record) = decision.operator_record() {
            log_refusal(record);
        }
        if let Some(sink) = &self.audit
            && let Err(error) = sink.record_decision(decision)
        {
            log(&format!("cannot write the audit event: {error}"));
        }
        if let Some(tracing) = &self.tracing {
            tracing.audit(decision, trace);
        }
    }

    /// The upstream's part of `call` is over at `at`: it answered after `waited` (`None`: it
    /// did not answer), and `failure` says what went wrong, if anything.
    fn upstream_over(
        &self,
        call: &Call,
        waited: Option<Duration>,
        failure: Option<UpstreamFailure>,
        at: SystemTime,
    ) {
        if let Some((metrics, _)) = &call.metrics {
            if let Some(waited) = waited {
                metrics.upstream_answered(waited);
            }
            if let Some(failure) = failure {
                metrics.upstream_failed(failure);
            }
        }
        if let Some(trace) = &call.trace {
            trace.upstream_ended(failure.map(UpstreamFailure::as_str), at);
        }
    }

    /// How the upstream is reached, as `network.transport` names it.
    fn upstream_transport(&self) -> &'static str {
        if self.link.send_may_block() {
            "pipe"
        } else {
            "tcp"
        }
    }

    /// The gate's decision on a call that has no result to read (the upstream's part `ended`
    /// as it says: how long it took to answer, if it did, and what went wrong), audited and
    /// answered.
    fn decide_failure(
        &self,
        host: &Host,
        id: &Value,
        call: &Call,
        modern_host: bool,
        response: Response<'_>,
        ended: (Option<Duration>, UpstreamFailure),
    ) {
        let started = Instant::now();
        let now = SystemTime::now();
        self.upstream_over(call, ended.0, Some(ended.1), now);
        let decision = call.contract.admit_response(response, &call.request, now);
        let decision = self.judge(call, started, decision, &response);
        host.send(result_line(id, &tools::result_json(&decision, modern_host)));
    }

    /// A call's decision (begun at `started`), made whole: what a shadow version decides of the
    /// same response beside it, the observe mark, then counted, traced and audited (and a
    /// refusal's reason logged) and offered for retention (a disagreement with the shadow
    /// always kept).
    fn judge(
        &self,
        call: &Call,
        started: Instant,
        decision: Decision,
        response: &Response<'_>,
    ) -> Decision {
        let mut decision = decision;
        if let Some(shadow) = &call.shadow {
            let shadowed = shadow.admit_response(*response, &call.request, decision.time());
            decision = decision.with_shadow(&shadowed);
        }
        if self.observe {
            decision = decision.observed();
        }
        self.record(
            &call.contract,
            &decision,
            started,
            call.metrics.as_ref().map(|(metrics, _)| &**metrics),
            call.trace.as_ref(),
        );
        // Decided: the answer goes out next, so the call is no longer in flight.
        if let Some((_, in_flight)) = &call.metrics {
            in_flight.answered();
        }
        if let Some(retainer) = &self.retainer {
            retainer.offer(&decision, response, &call.request);
        }
        decision
    }

    /// A request the upstream will not answer (`failure` says why, for a call).
    fn answer_gone(&self, pending: Pending, reason: &str, failure: UpstreamFailure) {
        match (&pending.waiting, &pending.host) {
            (Waiting::Call(call), Some(host)) => self.decide_failure(
                host,
                &pending.id,
                call,
                pending.modern_host,
                Response::unreachable(reason),
                (None, failure),
            ),
            (_, Some(host)) => host.send(error_line(
                &pending.id,
                codes::INTERNAL_ERROR,
                &format!("the upstream server is unavailable ({reason})"),
            )),
            // The proxy's own request: its waiter sees the channel close.
            (_, None) => {}
        }
    }

    /// A host that will read no answer: a 2026-07-28 host that closed its HTTP stream, which the
    /// revision makes a cancellation. Each of its requests still in flight is dropped and
    /// cancelled toward the upstream, so the tool stops instead of running to completion.
    pub(crate) fn host_gone(&self, host: &Arc<Host>) {
        let gone: Vec<Pending> = {
            let mut state = self.state();
            let keys: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, pending)| {
                    pending
                        .host
                        .as_ref()
                        .is_some_and(|asker| Arc::ptr_eq(asker, host))
                })
                .map(|(key, _)| key.clone())
                .collect();
            keys.iter()
                .filter_map(|key| state.pending.remove(key))
                .collect()
        };
        for pending in gone {
            log("a host closed its stream before the answer; the request is cancelled upstream");
            self.link
                .cancel(&pending.upstream_id, "the host closed its stream");
        }
    }

    /// One request's answer was longer than the cap (a transport that knows whose it is): that
    /// request alone fails, a call decided by the gate on the bytes that arrived.
    fn too_long_for(&self, id: &Value, prefix: &[u8]) {
        let Some(pending) = self.state().pending.remove(&id_key(id)) else {
            return log("dropped an oversized answer to no pending request");
        };
        log(
            "the upstream's answer to one request is longer than the proxy's line cap; that request is answered with the fixed failure",
        );
        match (&pending.waiting, &pending.host) {
            (Waiting::Call(call), Some(host)) => {
                let started = Instant::now();
                let now = SystemTime::now();
                self.upstream_over(
                    call,
                    Some(started.saturating_duration_since(pending.since)),
                    Some(UpstreamFailure::TooLong),
                    now,
                );
                let mut response = Response::body(prefix);
                let mut decision = call.contract.admit_response(response, &call.request, now);
                // Cut short, the bytes never parse; a result is never admitted from a prefix.
                if decision.is_admitted() {
                    response = Response::unreachable("an answer longer than the line cap");
                    decision =
                        call.contract
                            .admit_response(response, &call.request, SystemTime::now());
                }
                let decision = self.judge(call, started, decision, &response);
                host.send(result_line(
                    &pending.id,
                    &tools::result_json(&decision, pending.modern_host),
                ));
            }
            _ => self.answer_gone(
                pending,
                "its answer was longer than the line cap",
                UpstreamFailure::TooLong,
            ),
        }
    }

    /// Every request still waiting for the upstream, removed from the table, oldest first (so
    /// the hosts hear about them in the order they asked).
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

    fn upstream_gone(&self, reason: &str) {
        {
            let mut state = self.state();
            if state.gone.is_none() {
                state.gone = Some(reason.to_owned());
            }
        }
        for pending in self.take_pending() {
            self.answer_gone(pending, reason, UpstreamFailure::Unavailable);
        }
    }

    /// Answers every request that has waited longer than the timeout.
    fn expire(&self) {
        let expired: Vec<Pending> = {
            let mut state = self.state();
            let now = Instant::now();
            let keys: Vec<String> = state
                .pending
                .iter()
                .filter(|(_, pending)| {
                    pending.host.is_some() && now.duration_since(pending.since) >= self.timeout
                })
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
            log(
                "a request waited past the timeout; answered with the fixed failure, and cancelled upstream",
            );
            self.link
                .cancel(&pending.upstream_id, "no answer within the proxy's timeout");
            self.answer_gone(
                pending,
                &format!("no answer within {:?}", self.timeout),
                UpstreamFailure::Timeout,
            );
        }
    }
}

/// A JSON-RPC id as a trace names it: a string as it is, a number as its digits (written only
/// for a call that is traced).
struct IdText<'a>(&'a Value);

impl std::fmt::Display for IdText<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Value::String(text) => f.write_str(text),
            other => write!(f, "{other}"),
        }
    }
}

/// The revisions listed under `key` of an upstream's answer, those shaped like one.
fn versions(listed: Option<&Value>) -> Vec<String> {
    listed
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|text| era::looks_like_version(text))
        .map(str::to_owned)
        .collect()
}

/// A refusal in the proxy's own words, without data.
fn plain(code: i64, message: &str) -> Refusal {
    Refusal {
        code,
        message: message.to_owned(),
        data: None,
    }
}

/// An error response line for a refusal.
pub(crate) fn refusal_line(id: &Value, refusal: &Refusal) -> Vec<u8> {
    let mut error = json!({"code": refusal.code, "message": refusal.message});
    if let Some(data) = &refusal.data {
        error["data"] = data.clone();
    }
    message::error_object_line(id, &error)
}

/// The upstream's error on a request that is not a call, as the host sees it: its code, the
/// proxy's words, and for the modern revision's errors the data they define, kept to what
/// the revision defines (versions, capability names).
fn relayed_error(error: &Value) -> Refusal {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(codes::INTERNAL_ERROR);
    match code {
        modern_codes::UNSUPPORTED_PROTOCOL_VERSION => Refusal {
            code,
            message: "Unsupported protocol version".to_owned(),
            data: Some(era::version_error_data(error.get("data"))),
        },
        modern_codes::MISSING_CLIENT_CAPABILITY => Refusal {
            code,
            message: "Missing required client capability".to_owned(),
            data: Some(era::missing_capability_data(error.get("data"))),
        },
        _ => plain(code, "the upstream failed this request"),
    }
}
