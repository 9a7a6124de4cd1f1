//! A door: the gate inside a gateway someone else runs (Envoy's external processing filter,
//! agentgateway's ExtMcp hook). The gateway carries each MCP message end to end; the door is
//! handed the host's message before it is forwarded and the upstream's answer before the host
//! reads it, and decides both as `mcp-proxy` does, with the same functions (`call.rs`): argument
//! contracts before anything is forwarded, a call's result rebuilt by projection, a `tools/list`
//! rewritten, every closed route refused.
//!
//! Unlike the proxy, a door does not stand between two sessions: the host and the upstream share
//! one (the gateway's), so both speak the same era, ids are the host's, and `initialize` and
//! `server/discover` reach the upstream, their answers rewritten as the proxy would write them.
//! Pins are held from the listings that pass through the door: a pinned tool is served once a
//! listing seen by this door matched its pin.
//!
//! Fail closed: whatever the door cannot read answers the host with the fixed failure (a call)
//! or an error, never with the upstream's bytes.

mod answer;
mod parsed;
mod request;
mod surface;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;
use toolgate_front::{Front, FrontConfig, Runner};
use toolgate_repo::UsageError;

use crate::call::Call;
use crate::loaded::Loaded;
use crate::route::Route;

pub use answer::{Answered, HttpAnswer};
pub use parsed::{ArgumentsDecided, Handed, ResultDecided, fixed_failure};

/// What a door is opened with.
#[derive(Debug, Clone)]
pub struct DoorConfig {
    /// The door's name, as its log lines, metrics and traces name it (`ext-proc`, `ext-mcp`).
    pub name: &'static str,
    /// The contracts: a repository folder or a bundle.
    pub root: PathBuf,
    /// What every front shares: audit, retention, rollout, metrics, tracing.
    pub front: FrontConfig,
    /// The operator's trusted context (as `mcp-proxy --context`).
    pub context: Option<PathBuf>,
    /// Routes for data opened beyond the default; their messages pass unchanged and ungated.
    pub allow: Vec<Route>,
    /// The longest message read from either side (default: as `mcp-proxy`'s line cap).
    pub max_message_bytes: Option<usize>,
    /// The one tool whose contracts are compiled (`None`: every tool's). A door that lives for
    /// one call (a coding agent's hook) compiles what that call needs, not the repository.
    pub only_tool: Option<String>,
}

/// The gate as a gateway's hook: see the module's documentation.
pub struct Door {
    name: &'static str,
    loaded: Loaded,
    front: Front,
    allowed: Vec<Route>,
    line_cap: usize,
    /// Each pinned tool's descriptor digest as the last listing through the door held it
    /// (`None`: the listing did not hold it); no entry until a listing is seen.
    surface: Mutex<BTreeMap<String, Option<String>>>,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door")
            .field("name", &self.name)
            .field("front", &self.front)
            .finish_non_exhaustive()
    }
}

/// Who sent a host's message, as the gateway knows: the caller it authenticated, the trace the
/// request continues, the session it belongs to.
#[derive(Debug, Clone, Default)]
pub struct Sender<'a> {
    /// The authenticated caller (a token's subject), for the audit and the contracts' rules.
    pub caller: Option<&'a str>,
    /// The W3C trace context of the HTTP request (a request's `params._meta.traceparent` comes
    /// first).
    pub traceparent: Option<&'a str>,
    /// The handshake-era session (`Mcp-Session-Id`).
    pub session: Option<&'a str>,
}

/// What the door says of a host's message.
pub enum Asked {
    /// Forward it (`rewritten`: with these bytes in its place), and hand the upstream's answer
    /// to [`Door::answer`] with `exchange` (`None`: a notification, whose answer carries
    /// nothing to decide; the host is given none of it).
    Forward {
        /// The message as the upstream receives it, where the door rewrote it.
        rewritten: Option<Vec<u8>>,
        /// What the answer is decided as.
        exchange: Option<Exchange>,
    },
    /// Do not forward it: answer the host with this JSON-RPC message (empty: nothing, as a
    /// notification is answered).
    Answer(Vec<u8>),
}

/// A host's request forwarded, waiting for the upstream's answer.
pub struct Exchange {
    id: Value,
    modern_host: bool,
    since: Instant,
    kind: Kind,
}

enum Kind {
    Call(Box<Call>),
    Other(Other),
}

/// A request that is not a call.
enum Other {
    ToolsList { first_page: bool },
    Initialize,
    Discover,
    Ping,
    Passthrough(String),
}

impl Door {
    /// Opens the contracts and the front `config` names. Call it before any async runtime
    /// starts (the front's OTLP exporter may not be made on one).
    pub fn open(config: &DoorConfig) -> Result<Door, UsageError> {
        let repository = toolgate_repo::bundle::open_contracts(&config.root)?;
        let front = Front::open(
            &FrontConfig {
                runner: Runner {
                    name: config.name,
                    stdout_taken: None,
                    keeps_metrics: false,
                    logs_refusals: true,
                },
                ..config.front.clone()
            },
            &repository,
        )?;
        let loaded = Loaded::of_only(
            &repository,
            front.shadows(),
            config.context.as_deref(),
            config.only_tool.as_deref(),
        )?;
        front.contract_set(
            &loaded.digest,
            loaded.registry.contracts().map(|(_, contract)| contract),
        );
        let line_cap = config.max_message_bytes.unwrap_or_else(|| {
            (loaded.registry.largest_max_bytes * 2 + 64 * 1024).max(1024 * 1024)
        });
        front.log(&format!(
            "serving {} tool(s) (contract set {}); {}",
            loaded.registry.iter().count(),
            loaded.digest,
            front.summary()
        ));
        Ok(Door {
            name: config.name,
            loaded,
            front,
            allowed: config.allow.clone(),
            line_cap,
            surface: Mutex::new(BTreeMap::new()),
        })
    }

    /// The longest message the door reads, either way: a longer one is refused.
    pub fn max_message_bytes(&self) -> usize {
        self.line_cap
    }

    /// The front: its metrics (to serve), its log, its summary.
    pub fn front(&self) -> &Front {
        &self.front
    }
}
