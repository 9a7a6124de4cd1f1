//! toolgate inside the gateways teams already run. Each door serves a gateway's hook over gRPC
//! and decides what passes through it with `toolgate_mcp::Door`, the functions `mcp-proxy`
//! decides with, so one contract gives the same agent bytes and audit line through any door:
//!
//! - [`ext_proc`]: Envoy's external processing filter (`envoy.service.ext_proc.v3`), one MCP
//!   exchange over Streamable HTTP per stream, the upstream's raw bytes decided;
//! - [`ext_mcp`]: agentgateway's `ExtMcp` service (`CheckRequest`, `CheckResponse`);
//! - [`agent`]: a coding agent's tool hook (Claude Code, Codex), one process per event.
//!
//! API boundary: [`run`] with a [`DoorServe`] naming the door, and the generated ExtMcp client
//! ([`ext_mcp_proto`]) for tests.

pub mod agent;
pub mod ext_mcp;
pub mod ext_proc;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use toolgate_mcp::{Door, DoorConfig};
use toolgate_repo::{Status, UsageError};

/// agentgateway's `ext_mcp.proto`, generated (`build.rs`): the messages, the server, the client.
#[allow(missing_docs, unreachable_pub, unused_qualifications, clippy::all)]
pub mod ext_mcp_proto {
    tonic::include_proto!("agentgateway.dev.ext_mcp");
}

/// Which gateway's hook a door serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Envoy's `ExternalProcessor/Process`.
    ExtProc,
    /// agentgateway's `ExtMcp`.
    ExtMcp,
}

impl Hook {
    /// The door's name in its log lines, metrics and traces.
    pub fn name(self) -> &'static str {
        match self {
            Hook::ExtProc => "ext-proc",
            Hook::ExtMcp => "ext-mcp",
        }
    }
}

/// Where a door reads the caller's identity, which the gateway authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerFrom {
    /// An HTTP request header (Envoy's `jwt_authn` `claim_to_headers`, an `ext_authz` header).
    Header(String),
    /// A key in the dynamic metadata the gateway forwards: a namespace (Envoy's filter name)
    /// and a path of keys within it (`envoy.filters.http.jwt_authn:payload.sub`), or
    /// agentgateway's `metadata_context` key.
    Metadata {
        /// The namespace (empty for agentgateway's `metadata_context`, which has none).
        namespace: String,
        /// The keys, outermost first.
        path: Vec<String>,
    },
}

/// Parses `--caller-from`: `header:NAME` or `metadata:NAMESPACE:KEY.KEY…` (`metadata:KEY` for
/// agentgateway).
pub fn parse_caller_from(text: &str) -> Result<CallerFrom, String> {
    if let Some(name) = text.strip_prefix("header:") {
        if name.is_empty()
            || !name
                .bytes()
                .all(|byte| byte.is_ascii_graphic() && byte != b':')
        {
            return Err(format!("{text:?}: a header name after `header:`"));
        }
        return Ok(CallerFrom::Header(name.to_ascii_lowercase()));
    }
    if let Some(rest) = text.strip_prefix("metadata:") {
        let (namespace, keys) = rest.rsplit_once(':').unwrap_or(("", rest));
        let path: Vec<String> = keys.split('.').map(str::to_owned).collect();
        if path.iter().any(String::is_empty) {
            return Err(format!(
                "{text:?}: keys separated by dots after the namespace"
            ));
        }
        return Ok(CallerFrom::Metadata {
            namespace: namespace.to_owned(),
            path,
        });
    }
    Err(format!(
        "{text:?}: `header:NAME` or `metadata:NAMESPACE:KEY.KEY` (where the gateway put the caller it authenticated)"
    ))
}

/// What `toolgate ext-proc` or `toolgate ext-mcp` was asked to do.
#[derive(Debug, Clone)]
pub struct DoorServe {
    /// Which hook.
    pub hook: Hook,
    /// The gRPC address to serve on.
    pub listen: SocketAddr,
    /// The contracts and the front.
    pub door: DoorConfig,
    /// Where the caller's identity is read, if anywhere.
    pub caller_from: Option<CallerFrom>,
    /// How long the gateway's open streams are waited for on SIGTERM, before they are cut.
    pub drain_timeout: Duration,
    /// The runtime's worker threads (`None`: one per core).
    pub threads: Option<usize>,
}

/// Serves the door until SIGTERM or SIGINT: then new streams are refused, those in flight
/// finished (within the drain timeout), and the front's audit and metrics flushed.
pub fn run(serve: DoorServe) -> Result<Status, UsageError> {
    // Opened before any runtime: the front's OTLP exporter may not be made on one.
    let door = Arc::new(Door::open(&serve.door)?);
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = serve.threads {
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|error| UsageError::new(format!("cannot start the gRPC runtime: {error}")))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(serve.listen))
        .map_err(|error| UsageError::new(format!("cannot listen on {}: {error}", serve.listen)))?;
    let address = listener.local_addr().unwrap_or(serve.listen);
    door.front().log(&format!(
        "serving {} on grpc://{address}",
        serve.hook.name()
    ));
    let shown = Arc::clone(&door);
    let drain_timeout = serve.drain_timeout;
    let served = runtime.block_on(async move {
        // Without TCP_NODELAY a reply's frames (headers, data, trailers: separate writes) wait
        // for the gateway's delayed ACK: 40 ms a call, measured with grpcio as the client.
        let incoming = tonic::transport::server::TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(Duration::from_secs(60)));
        let router = match serve.hook {
            Hook::ExtProc => ext_proc::service(Arc::clone(&door), serve.caller_from.clone()),
            Hook::ExtMcp => ext_mcp::service(Arc::clone(&door), serve.caller_from.clone()),
        };
        // A gateway keeps its gRPC streams open between requests, and tonic's graceful shutdown
        // waits for every one of them: the drain is bounded here, not by the gateway.
        let signalled = Arc::new(tokio::sync::Notify::new());
        let signal = {
            let signalled = Arc::clone(&signalled);
            async move {
                shutdown_signal().await;
                signalled.notify_one();
            }
        };
        let deadline = async move {
            signalled.notified().await;
            tokio::time::sleep(drain_timeout).await;
        };
        tokio::select! {
            served = router.serve_with_incoming_shutdown(incoming, signal) => served.map(|()| true),
            () = deadline => Ok(false),
        }
    });
    let front = shown.front();
    match served {
        Ok(true) => {}
        Ok(false) => front.log(&format!(
            "streams were still open {drain_timeout:?} after the signal; they were cut (--drain-timeout)"
        )),
        Err(error) => front.log(&format!("the gRPC server stopped: {error}")),
    }
    runtime.shutdown_timeout(serve.drain_timeout);
    front.finish(serve.drain_timeout);
    Ok(Status::Passed)
}

/// Resolves at SIGTERM or SIGINT.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(terminate) => terminate,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
