//! `toolgate mcp-proxy`: the gate in front of any MCP server. A host launches it in place of the
//! server's command (stdio) or reaches it over Streamable HTTP (`--listen`); it launches the
//! server (or reaches it at its URL), settles the server's protocol era, forwards messages in
//! order in each side's era, and lets through only what the tools' contracts admit, rebuilt by
//! projection. See `proxy/` for the routing, `era.rs` for the two eras, and the user guide (doc/guide/src/mcp.md), "toolgate
//! mcp-proxy", for the mapping from MCP to contracts.
//!
//! Architecture invariant: nothing the upstream wrote reaches the host but what a contract's
//! projection rebuilt, the fixed failure, or a route the operator opened.
//!
//! API boundary: [`run`] with a [`ProxyConfig`], the [`Route`]s it can open, and the failure
//! branch its output schemas carry (for tests that validate what the host sees).

// Without the proxy, the core holds what only the proxy calls (task results, the handshake
// era's inert text): kept in one place rather than split by feature.
#![cfg_attr(
    not(feature = "proxy"),
    allow(dead_code, reason = "the proxy's half of shared modules")
)]

// The door's core: what every door decides a message with, without a network of its own (the
// Python wheel links these alone: `default-features = false`).
mod call;
mod context;
mod door;
mod era;
mod lines;
mod loaded;
mod message;
mod pins;
mod route;
mod schemas;
mod sse;
mod tools;

// The proxy, its listener and its upstreams: what `toolgate mcp-proxy` runs (feature `proxy`).
#[cfg(feature = "proxy")]
mod auth;
#[cfg(feature = "proxy")]
mod batch;
#[cfg(feature = "proxy")]
mod launch;
#[cfg(feature = "proxy")]
mod listen;
#[cfg(feature = "proxy")]
mod listing;
#[cfg(feature = "proxy")]
mod proxy;
#[cfg(feature = "proxy")]
mod remote;
#[cfg(feature = "proxy")]
mod stdio_host;
#[cfg(feature = "proxy")]
mod upstream;

/// Not supported API, for the fuzzers: the listener in process before an upstream in memory.
#[cfg(feature = "_internals")]
#[doc(hidden)]
pub mod internals;

pub use door::{
    Answered, ArgumentsDecided, Asked, Door, DoorConfig, Exchange, Handed, HttpAnswer,
    ResultDecided, Sender, fixed_failure,
};
pub use pins::{SurfaceReport, write_pin};
pub use route::Route;
pub use schemas::failure_schema;

#[cfg(feature = "proxy")]
pub use auth::{RateLimit, Unavailable as RateStoreUnavailable, parse_caller_rate};
#[cfg(feature = "proxy")]
pub use launch::{PinConfig, ProxyConfig, ServerAnswers, ServerAsk, ask_server, pin, run};
#[cfg(feature = "proxy")]
pub use listen::{Drain, Limits as ListenLimits, parse_address};
#[cfg(feature = "proxy")]
pub use listing::{ListedTool, list_tools};
#[cfg(feature = "proxy")]
pub use proxy::Supervision;

use std::time::Duration;

use serde_json::Value;
use toolgate_gate::internals::parse_duration;

/// The JSON Schema of an `--auth` file (`toolgate schema auth`).
pub const AUTH_SCHEMA: &str = include_str!("auth.schema.json");
/// The JSON Schema of a pin, `contracts/<tool>/upstream.pin.json` (`toolgate schema pin`).
pub const PIN_SCHEMA: &str = include_str!("pin.schema.json");

/// A new id nobody can guess: 128 bits from the operating system's generator, in hex (a
/// session's, a task's). Without a generator, the time: the id still names one thing, it is
/// only guessable by the host's neighbours.
#[cfg(feature = "proxy")]
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Locks `mutex`, going on past a panic on another thread that held it: the proxy keeps
/// answering, with the guarded value (a buffer, a writer, a child's handle) as that thread left it.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The gate's decision on a live call's result, made as `toolgate mcp-proxy` makes it for a
/// host's call with JSON-RPC id `id`: the result's `structuredContent` (a text contract: its
/// text block) decided under a request whose context is `context`, with the members the
/// contract takes from the arguments taken from `arguments`.
pub fn decide_call_result(
    contract: &toolgate_gate::Contract,
    id: &Value,
    arguments: &Value,
    context: serde_json::Map<String, Value>,
    result: &Value,
    now: std::time::SystemTime,
) -> toolgate_gate::Decision {
    let request = tools::request_under(contract, id, arguments, context)
        .with_upstream("mcp tools/call (toolgate diff --upstream --call)");
    tools::decide(contract, &request, result, now)
}

/// A `--timeout`: a duration (`30s`, `500ms`) other than zero.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err("a timeout of zero would fail every call".to_owned());
    }
    Ok(duration)
}
