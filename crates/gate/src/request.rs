//! The outstanding request: what the adapter asked for, and the trusted context to check against.

use std::sync::Arc;

use serde_json::{Map, Value};

/// The request a response answers, created by the adapter before it called the tool.
///
/// Everything here is trusted: the id was minted by the adapter, the context comes from the
/// application (the project the user asked about, the tenant they are signed in as), never from the
/// response or the model's proposal being checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    // Shared rather than copied: every decision records them, and retention keeps the context.
    id: Arc<str>,
    context: Arc<Map<String, Value>>,
    upstream: Option<Arc<str>>,
    caller: Option<Arc<str>>,
}

impl Request {
    /// A request with this id and an empty context.
    pub fn new(id: impl Into<String>) -> Request {
        Request {
            id: Arc::from(id.into()),
            context: Arc::new(Map::new()),
            upstream: None,
            caller: None,
        }
    }

    /// Adds one trusted context value (e.g. `project_id`, `runs`, `tenant`, `tickets`).
    pub fn with_context(mut self, key: impl Into<String>, value: impl Into<Value>) -> Request {
        Arc::make_mut(&mut self.context).insert(key.into(), value.into());
        self
    }

    /// Replaces the whole trusted context.
    pub fn with_context_map(mut self, context: Map<String, Value>) -> Request {
        self.context = Arc::new(context);
        self
    }

    /// Names the upstream endpoint or command, for the audit event. An adapter that names the
    /// same upstream on every request can hand over one shared `Arc<str>` (nothing copied).
    pub fn with_upstream(mut self, upstream: impl Into<Arc<str>>) -> Request {
        self.upstream = Some(upstream.into());
        self
    }

    /// Names who asked for the call (an authenticated caller's identity: a token's issuer and
    /// subject), for the audit event.
    pub fn with_caller(mut self, caller: impl Into<Arc<str>>) -> Request {
        self.caller = Some(caller.into());
        self
    }

    /// Who asked for the call, if the adapter named them.
    pub fn caller(&self) -> Option<&str> {
        self.caller.as_deref()
    }

    pub(crate) fn shared_caller(&self) -> Option<Arc<str>> {
        self.caller.clone()
    }

    /// The request id the adapter minted.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The trusted context.
    pub fn context(&self) -> &Map<String, Value> {
        &self.context
    }

    /// The trusted context, shared rather than copied.
    pub(crate) fn shared_context(&self) -> Arc<Map<String, Value>> {
        Arc::clone(&self.context)
    }

    /// The upstream, shared rather than copied.
    pub(crate) fn upstream_shared(&self) -> Option<Arc<str>> {
        self.upstream.clone()
    }

    /// The upstream endpoint or command, if the adapter named one.
    pub fn upstream(&self) -> Option<&str> {
        self.upstream.as_deref()
    }

    pub(crate) fn shared_id(&self) -> Arc<str> {
        Arc::clone(&self.id)
    }

    pub(crate) fn shared_upstream(&self) -> Option<Arc<str>> {
        self.upstream.clone()
    }
}
