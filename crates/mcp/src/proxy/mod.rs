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

mod host;
mod input;
mod reload;
mod settle;
mod supervise;
mod surface;
mod tasks;
mod upstream;

pub use supervise::Supervision;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_front::{CallRecord, Front};
use toolgate_gate::internals::{Node, parse_document};
use toolgate_gate::{Decision, Response};
use toolgate_telemetry::{CallAttributes, UpstreamFailure};

use super::auth::{Authorizer, Caller};
use super::batch;
use super::call::{Call, Decided};
use super::era::{
    self, LEGACY_VERSIONS, MODERN_VERSIONS, Refusal, RequestEra, ResultKind, modern_codes,
};
use super::lines::{PROXY_NAME, log};
use super::lock;
use super::message::{
    self, Message, codes, error_line, id_key, notification_line, result_line, value_result_line,
};
use super::pins;
use super::route::Route;
use super::tools;
use super::upstream::{Direct, Incoming, Link, Outgoing, Source};
use crate::era::{plain, refusal_line, relayed_error};
pub(crate) use crate::loaded::Loaded;
use crate::message::IdText;
pub(crate) use reload::{Reload, Watch};
use surface::Surface;
use toolgate_repo::UsageError;

/// Where a host's answers go: a stdio host's output, or one HTTP request's response stream.
pub(crate) type Reply = Arc<dyn Fn(Vec<u8>, Sent) + Send + Sync>;

/// What the proxy knows of a line it hands a [`Reply`], so a transport that routes on a line's
/// kind (the HTTP listener: a response ends the request, its error sets the status) need not
/// read back what the proxy just wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Any line: a transport that needs its kind reads it.
    Line,
    /// A response holding a `result` (written by `message::result_line`).
    Result,
}

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

    /// Whether this host's caller may call `tool`, a tool with a contract (every host may,
    /// where nobody is authenticated).
    fn may_call(&self, tool: &str) -> bool {
        self.grant
            .as_ref()
            .is_none_or(|grant| grant.authorizer.may_call(&grant.caller, Some(tool)).is_ok())
    }

    /// Who may ask about the tasks this host's calls created: its caller where it is
    /// authenticated, else its session; `None` for the one stdio host.
    fn task_owner(&self) -> Option<Arc<str>> {
        self.caller().or_else(|| self.peer.clone())
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
        (self.reply)(line, Sent::Line);
    }

    /// Sends a response holding a `result`, as `message::result_line` writes one.
    fn send_result(&self, line: Vec<u8>) {
        (self.reply)(line, Sent::Result);
    }

    fn session(&self) -> Option<Session> {
        lock(&self.session).clone()
    }
}

/// What a forwarded request waiting for its response is.
enum Waiting {
    /// The proxy's own request (the era probe, the handshake): the answer goes to the channel.
    Own(mpsc::Sender<Result<Value, Value>>),
    Ping,
    /// A host's `tools/list`; `first_page` when it named no cursor (only a listing from its
    /// first page to its last says which tools the upstream no longer has).
    ToolsList {
        first_page: bool,
    },
    Call(Box<Call>),
    /// A host's request about a task the proxy follows (`--allow tasks`).
    Task(Box<TaskWait>),
    /// An opened route: its answer passes, in the host's era.
    Passthrough(String),
}

/// A host's request about a task, waiting for the upstream's answer: the host's id for the
/// task, and for `tasks/get` the call whose result a completed extension task holds.
enum TaskWait {
    Get {
        id: String,
        call: Box<Call>,
        extension: bool,
    },
    Cancel {
        id: String,
        extension: bool,
    },
    Update,
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
    /// The proxy's own requests to a handshake-era host for a modern upstream's
    /// `input_required`, by their id: which round, and which input request each answers.
    input_asks: HashMap<String, (Arc<Mutex<input::Round>>, String)>,
    /// Why the upstream is gone, once it is.
    gone: Option<String>,
}

/// How the proxy is set up.
pub(crate) struct Setup {
    /// The contract set calls are decided under at first: the tools and their contracts, the
    /// operator's trusted context, the upstream's tools as they were reviewed (`toolgate pin`).
    pub loaded: Loaded,
    /// How the set is loaded again (SIGHUP, or its files changed).
    pub reload: Reload,
    /// The longest line (or body) read, set at start.
    pub line_cap: usize,
    /// The routes opened with `--allow`.
    pub allowed: Vec<Route>,
    /// How long a request may wait for the upstream.
    pub timeout: Duration,
    /// What is done around every decision: shadow, observe, metrics, trace, operator log,
    /// audit, retention.
    pub front: Front,
    /// What is done when a stdio upstream exits.
    pub supervision: Supervision,
}

impl Setup {
    /// A proxy that opens no route and audits nothing (listing a server's tools, the fuzzers'
    /// listener): `registry`'s tools, each call waiting up to `timeout`.
    pub(crate) fn closed(
        registry: tools::Registry,
        timeout: Duration,
    ) -> Result<Setup, UsageError> {
        let context = super::context::OperatorContext::load(None, &registry)?;
        Ok(Setup {
            line_cap: (registry.largest_max_bytes * 2 + 64 * 1024).max(1024 * 1024),
            loaded: Loaded {
                registry,
                context,
                pins: BTreeMap::new(),
                digest: String::new(),
            },
            reload: Reload::default(),
            allowed: Vec::new(),
            timeout,
            front: Front::bare(PROXY_NAME),
            supervision: Supervision::default(),
        })
    }
}

/// The proxy between its hosts and one upstream.
pub(crate) struct Proxy {
    /// The contract set calls are decided under: swapped whole by a reload, taken once by each
    /// call.
    loaded: std::sync::RwLock<Arc<Loaded>>,
    reload: Reload,
    line_cap: usize,
    allowed: Vec<Route>,
    timeout: Duration,
    front: Front,
    /// The front's observe mode, read on every answer.
    observe: bool,
    surface: Mutex<Surface>,
    surface_changed: Condvar,
    link: Box<dyn Link>,
    state: Mutex<State>,
    next_id: AtomicU64,
    settled: OnceLock<Settled>,
    /// The stdio host, the one host the upstream's requests on opened routes can reach.
    duplex_host: Mutex<Option<Arc<Host>>>,
    /// The modern hosts' `subscriptions/listen` streams that asked for a changed tool list:
    /// each host and its subscription's id (the request's JSON-RPC id).
    tool_subscriptions: Mutex<Vec<(Arc<Host>, Value)>>,
    /// The tasks the upstream created for hosts' calls (`--allow tasks`).
    tasks: tasks::Tasks,
    stopping: AtomicBool,
    /// Set at SIGTERM: `/readyz` answers 503 while the calls in flight are answered.
    draining: AtomicBool,
    supervision: Supervision,
    supervised: Mutex<supervise::Supervised>,
}

/// Where a modern notification names the `subscriptions/listen` stream it belongs to.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long the era probe waits before it takes silence for a legacy upstream (the revision's
/// "reasonable timeout"; the SDKs wait 10 s).
const PROBE_WINDOW: Duration = Duration::from_secs(10);

impl Proxy {
    /// What the proxy does around every decision.
    pub(crate) fn front(&self) -> &Front {
        &self.front
    }

    /// Whether `tool` has a contract here.
    pub(crate) fn has_contract(&self, tool: &str) -> bool {
        self.loaded().registry.get(tool).is_some()
    }

    /// A proxy over `link`, whose upstream messages arrive on `incoming` (read by
    /// [`Proxy::pump`] on a thread of the caller's).
    pub(crate) fn new(setup: Setup, link: Box<dyn Link>) -> Proxy {
        Proxy {
            loaded: std::sync::RwLock::new(Arc::new(setup.loaded)),
            reload: setup.reload,
            line_cap: setup.line_cap,
            allowed: setup.allowed,
            timeout: setup.timeout,
            observe: setup.front.observe(),
            front: setup.front,
            surface: Mutex::new(Surface::default()),
            surface_changed: Condvar::new(),
            link,
            state: Mutex::new(State::default()),
            next_id: AtomicU64::new(0),
            settled: OnceLock::new(),
            duplex_host: Mutex::new(None),
            tool_subscriptions: Mutex::new(Vec::new()),
            tasks: tasks::Tasks::default(),
            stopping: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            supervision: setup.supervision,
            supervised: Mutex::default(),
        }
    }

    /// Tells the hosts that asked that the tool list changed: a legacy stdio host by
    /// `notifications/tools/list_changed`, each modern subscription by the same notification
    /// tagged with its id. Where tools are pinned it is called only once the new listing has been
    /// checked against the pins, so a host that lists again sees what the proxy will serve.
    pub(crate) fn announce_tools_changed(&self) {
        let duplex = lock(&self.duplex_host).clone();
        let subscriptions = lock(&self.tool_subscriptions).clone();
        let mut told = false;
        if let Some(host) = duplex.filter(|host| host.session().is_some()) {
            host.send(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#.to_vec());
            told = true;
        }
        for (host, id) in subscriptions {
            host.send(notification_line(
                "notifications/tools/list_changed",
                &json!({"_meta": {SUBSCRIPTION_ID: id}}),
            ));
            told = true;
        }
        if !told {
            log("the upstream's tools changed; hosts see it at their next tools/list");
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
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
    /// The proxy is stopping: `/readyz` says so from now on.
    pub(crate) fn begin_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Whether the proxy is stopping.
    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// How many hosts' calls are waiting for the upstream.
    pub(crate) fn calls_in_flight(&self) -> usize {
        self.state()
            .pending
            .values()
            .filter(|pending| pending.host.is_some() && matches!(pending.waiting, Waiting::Call(_)))
            .count()
    }

    pub(crate) fn ready(&self) -> bool {
        matches!(
            self.settled.get(),
            Some(Settled::Modern { .. } | Settled::Legacy { .. })
        ) && self.state().gone.is_none()
            && self.link.alive()
    }

    /// Has an HTTP upstream's answers decided on the task that received them, instead of
    /// handed to the pump thread: for HTTP hosts, whose answers go to their own request's task
    /// and never block, that saves two thread wake-ups per call (the pump's, then the host
    /// task's), most of what the listener added to a call. A stdio host (whose answers are
    /// written to a pipe that can block) keeps the pump.
    pub(crate) fn decide_on_transport_tasks(self: &Arc<Self>) {
        let proxy = Arc::downgrade(self);
        self.link.deliver_directly(Box::new(move |message| {
            if let Some(proxy) = proxy.upgrade() {
                batch::handling(false, || match message {
                    Direct::Line(line) => proxy.upstream_message(Incoming::Line(line)),
                    Direct::Response(line, root) => {
                        proxy.upstream_parsed(line, root);
                        true
                    }
                });
            }
        }));
    }

    /// Reads the upstream's messages and handles each, until its source ends.
    fn pump_until_gone(&self, source: &mut Source) {
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
            Incoming::Line(line) => {
                match parse_document(&line, message::MAX_MESSAGE_DEPTH)
                    .and_then(|document| self.call_result_in_place(document.root()))
                {
                    Err(why) => self.unreadable(&why, &line),
                    Ok(None) => {}
                    Ok(Some(message)) => self.upstream_classified(message, line),
                }
            }
        }
        true
    }

    /// A message from the upstream that its transport has already parsed (strictly, as
    /// [`Proxy::upstream_message`] would): read in place from that parse.
    fn upstream_parsed(&self, line: &[u8], root: Node<'_>) {
        match self.call_result_in_place(root) {
            Err(why) => self.unreadable(&why, line),
            Ok(None) => {}
            // Off the common path (a listing, the answer to the proxy's own request), where
            // the bytes are kept as the general path keeps them.
            Ok(Some(message)) => self.upstream_classified(message, line.to_vec()),
        }
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
    /// `Ok(None)` when it was answered so; otherwise the message, its parts as values, for the
    /// general path, or why the line is unreadable.
    fn call_result_in_place(&self, root: Node<'_>) -> Result<Option<Message>, String> {
        // Observing forwards the upstream's own result, which the general path has as a value.
        let Some((id, result)) = message::result_in_place(root).filter(|_| !self.observe) else {
            return message::classify(root).map(Some);
        };
        // A 2025-11-25 task (`{"task": {…}}`, no `resultType`) is no result: the general path
        // follows it.
        let complete = match result.get("resultType") {
            None => result.get("task").is_none(),
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
                    drop(state);
                    return message::classify(root).map(Some);
                }
                None => return message::classify(root).map(Some),
            }
        };
        let now = SystemTime::now();
        let evidence = tools::evidence_in_place(&call.contract, result);
        call.record.upstream_over(
            Some(Instant::now().saturating_duration_since(since)),
            evidence.upstream_failure(),
            now,
        );
        let decision = self.decide(&call, evidence.response(), now);
        host.send_result(result_line(
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

    /// Ends the run: the upstream's input closed, the time to finish what is in flight, then
    /// the upstream stopped and every request still pending answered.
    pub(crate) fn shut_down(&self, reason: &str) {
        self.shut_down_within(reason, Duration::from_secs(10));
    }

    /// [`Proxy::shut_down`], leaving retention and the exporter `within` to write what they
    /// hold.
    pub(crate) fn shut_down_within(&self, reason: &str, within: Duration) {
        // First: an upstream stopped from here on is not one to start again.
        self.stopping.store(true, Ordering::Relaxed);
        self.link.close();
        self.link
            .stop(self.timeout, &|| self.state().pending.is_empty());
        self.upstream_gone(reason);
        self.surface_changed.notify_all();
        // What was chosen for keeping, and what the exporter holds, is written before the
        // process ends.
        self.front.finish(within);
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
