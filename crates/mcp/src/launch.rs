//! `toolgate mcp-proxy` started: its configuration, the upstream it connects to, the front and
//! the contract set it opens, and the loops it runs until it is told to stop; `toolgate pin` and
//! `toolgate diff --upstream`'s questions to a live server.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use toolgate_front::{Front, FrontConfig, Runner};
use toolgate_repo::{Repository, Status, UsageError};

use crate::auth::{RateLimit, Unavailable as RateStoreUnavailable};
use crate::listen::{Drain, Limits as ListenLimits};
use crate::listing::{self, ListedTool};
use crate::pins::SurfaceReport;
use crate::proxy::{Proxy, Setup, Supervision};
use crate::route::Route;
use crate::tools::Registry;
use crate::{auth, lines, listen, loaded, pins, proxy, remote, stdio_host, upstream};

/// What `toolgate mcp-proxy` was asked to do.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The repository root, holding contracts/ (one per tool the host may call).
    pub root: PathBuf,
    /// What every front shares: the audit log, retention, rollout (`--shadow`, observe mode),
    /// metrics (`--metrics`: the stdio proxy's only scrape endpoint; with `--listen`, it moves
    /// them off the listener's port) and tracing. Its runner is the proxy's to set.
    pub front: FrontConfig,
    /// How long a request may wait for the upstream before it is answered with the fixed failure.
    pub timeout: Duration,
    /// The longest message read from either side (default: twice the largest contract's
    /// max_bytes and 64 KiB, at least 1 MiB).
    pub max_line_bytes: Option<usize>,
    /// Routes for data opened beyond the default; their messages pass unchanged and ungated.
    pub allow: Vec<Route>,
    /// The operator's trusted context (a JSON object of tools, each an object of context
    /// values): every key a contract does not let a caller's arguments supply.
    pub context: Option<PathBuf>,
    /// Serve hosts over Streamable HTTP on this address instead of over stdio.
    pub listen: Option<std::net::SocketAddr>,
    /// The `Origin` values the HTTP listener accepts (a browser page's; none by default).
    pub allow_origins: Vec<String>,
    /// The listener as an OAuth resource server: the file naming the authorization server, its
    /// keys, and which scopes may call which tool (the user guide, doc/guide/src/mcp.md, "Who may call").
    pub auth: Option<PathBuf>,
    /// Serve on an address other than loopback although the listener authenticates no host:
    /// anyone who reaches it calls the upstream's tools with the operator's credential.
    pub insecure_no_auth: bool,
    /// Each caller's request rate over HTTP (its token's subject; its address without `--auth`).
    pub caller_rate: Option<RateLimit>,
    /// What the HTTP listener's clients may hold, and for how long.
    pub listen_limits: ListenLimits,
    /// What is done when a stdio upstream exits: started again, or the proxy exits.
    pub supervision: Supervision,
    /// How the HTTP listener drains on SIGTERM: new connections served for `min`, calls in
    /// flight waited for, everything done within `timeout`.
    pub drain: Drain,
    /// The store every replica's `--caller-rate` is kept in (`redis://…`), instead of each
    /// process's own.
    pub caller_rate_store: Option<String>,
    /// What a shared `--caller-rate` does when its store cannot be asked.
    pub caller_rate_unavailable: RateStoreUnavailable,
    /// How often the contracts' files are looked at for a change, to reload them
    /// (`--reload-check`); `None`: on SIGHUP only.
    pub reload_check: Option<Duration>,
    /// The threads the HTTP runtime (the listener, an HTTP upstream's client) runs its tasks
    /// on; `None` is one per core.
    pub http_threads: Option<usize>,
    /// Headers for an HTTP upstream, each `NAME=VARIABLE`: the value is read from the
    /// environment variable, so a credential never appears on a command line.
    pub upstream_headers: Vec<String>,
    /// The file holding the token a scraper sends for the listener's own `/metrics`; under
    /// `--auth`, the listener serves them only with one.
    pub metrics_token_file: Option<PathBuf>,
    /// The MCP server's command and its arguments, or its Streamable HTTP URL.
    pub command: Vec<OsString>,
}

/// The upstream's URL, when the command is one (`http://` or `https://`, alone).
fn upstream_url(command: &[OsString]) -> Option<String> {
    match command {
        [only] => only
            .to_str()
            .filter(|text| remote::is_url(text))
            .map(str::to_owned),
        _ => None,
    }
}

/// The upstream `command` names: a child over stdio, or a server at its URL (over `runtime`).
fn connect(
    command: &[OsString],
    upstream_headers: &[String],
    line_cap: usize,
    timeout: Duration,
    runtime: Option<&tokio::runtime::Runtime>,
    who: &str,
) -> Result<(Box<dyn upstream::Link>, upstream::Source), UsageError> {
    match (upstream_url(command), runtime) {
        (Some(url), Some(runtime)) => {
            let (incoming, received) = std::sync::mpsc::channel();
            let link = remote::Remote::connect(
                &url,
                upstream_headers,
                line_cap,
                timeout,
                incoming,
                runtime.handle().clone(),
            )?;
            Ok((Box::new(link), upstream::Source::Channel(received)))
        }
        _ => {
            if !upstream_headers.is_empty() {
                return Err(UsageError::new(
                    "--upstream-header is for an upstream reached over HTTP; a command's credentials come from its own environment",
                ));
            }
            let (link, source) = upstream::Stdio::spawn(command, line_cap, who)?;
            Ok((Box::new(link), source))
        }
    }
}

/// What `toolgate pin` was asked to do.
#[derive(Debug, Clone)]
pub struct PinConfig {
    /// The repository root, holding contracts/.
    pub root: PathBuf,
    /// Compare the server's tools with the pins instead of writing them.
    pub check: bool,
    /// How long the server has to list its tools.
    pub timeout: Duration,
    /// Headers for an HTTP server, each `NAME=VARIABLE`.
    pub upstream_headers: Vec<String>,
    /// The MCP server's command and its arguments, or its Streamable HTTP URL.
    pub command: Vec<OsString>,
}

/// Lists the server's tools and pins each one with a result contract (`contracts/TOOL/
/// upstream.pin.json`), or, with `check`, compares them with their pins.
pub fn pin(config: &PinConfig) -> Result<SurfaceReport, UsageError> {
    let repository = Repository::open(&config.root)?;
    let registry =
        Registry::load_with_shadows(&repository, &toolgate_front::ShadowPlan::default())?;
    let tools: Vec<String> = registry.iter().map(|(name, _)| name.to_owned()).collect();
    if tools.is_empty() {
        return Err(UsageError::new(format!(
            "{}: no tool has a result contract to pin",
            config.root.display()
        )));
    }
    let listed = with_server(
        &config.command,
        &config.upstream_headers,
        config.timeout,
        "toolgate pin",
        |proxy, shown| proxy.list_all_tools(shown, config.timeout),
    )?;
    pins::survey(&repository, &tools, &listed, !config.check)
}

/// The builder of the proxy's HTTP runtime: `threads` workers (one per core when `None`). One
/// thread spends less CPU per call where the proxy shares few cores with its upstream and its
/// clients: no task is handed between workers, so no thread is woken for it (BENCHMARKS.md,
/// "The MCP proxy over HTTP").
fn http_runtime(threads: Option<usize>) -> tokio::runtime::Builder {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Some(threads) = threads {
        builder.worker_threads(threads);
    }
    builder
}

/// `work` done with the server `command` names (a child over stdio, or a server at its URL),
/// its era settled as the proxy settles it, then stopped; `who` names the verb in its messages.
fn with_server<T>(
    command: &[OsString],
    upstream_headers: &[String],
    timeout: Duration,
    who: &str,
    work: impl FnOnce(&Proxy, &str) -> Result<T, UsageError>,
) -> Result<T, UsageError> {
    let runtime = match upstream_url(command) {
        Some(_) => Some(
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|error| {
                    UsageError::new(format!("cannot start the HTTP runtime: {error}"))
                })?,
        ),
        None => None,
    };
    let (link, source) = connect(
        command,
        upstream_headers,
        listing::LISTING_LINE_CAP,
        timeout,
        runtime.as_ref(),
        who,
    )?;
    let shown = listing::shown(command);
    listing::session_over(link, source, &shown, timeout, |proxy| work(proxy, &shown))
}

/// What `toolgate diff --upstream` (or `toolgate new --from-mcp --call`) asks of a server: its
/// tools, and, with `--call`, each call's result.
#[derive(Debug, Clone)]
pub struct ServerAsk {
    /// The MCP server's command and its arguments, or its Streamable HTTP URL.
    pub command: Vec<OsString>,
    /// Headers for an HTTP server, each `NAME=VARIABLE`.
    pub upstream_headers: Vec<String>,
    /// How long the listing, and each call, may take.
    pub timeout: Duration,
    /// Calls to make: a tool's name and its arguments.
    pub calls: Vec<(String, Value)>,
    /// The command asking, as the server's errors name it.
    pub who: &'static str,
}

/// What the server answered.
#[derive(Debug, Clone)]
pub struct ServerAnswers {
    /// The server as reports name it: its program, or its URL.
    pub shown: String,
    /// Every tool it lists.
    pub tools: Vec<ListedTool>,
    /// Each call's `CallToolResult`, in the order asked, or why there is none (an error
    /// answer, no answer in time).
    pub calls: Vec<Result<Value, String>>,
}

/// Starts (or reaches) the server, lists its tools, makes each call, and stops it.
pub fn ask_server(ask: &ServerAsk) -> Result<ServerAnswers, UsageError> {
    with_server(
        &ask.command,
        &ask.upstream_headers,
        ask.timeout,
        ask.who,
        |proxy, shown| {
            let tools = listing::listed_tools(&proxy.list_all_tools(shown, ask.timeout)?);
            let calls = ask
                .calls
                .iter()
                .map(|(tool, arguments)| {
                    let params = serde_json::json!({"name": tool, "arguments": arguments});
                    match proxy.request("tools/call", &params, ask.timeout) {
                        Some(Ok(result)) => Ok(result),
                        Some(Err(error)) => Err(format!(
                            "the server answered with an error: {}",
                            toolgate_gate::internals::escape_hidden(&error.to_string())
                        )),
                        None => Err(format!("no answer within {:?}", ask.timeout)),
                    }
                })
                .collect();
            Ok(ServerAnswers {
                shown: shown.to_owned(),
                tools,
                calls,
            })
        },
    )
}

/// Runs the proxy on this process's stdin and stdout until the host closes its input.
pub fn run(options: &ProxyConfig) -> Result<Status, UsageError> {
    if let Some(address) = options.listen
        && !address.ip().is_loopback()
        && options.auth.is_none()
        && !options.insecure_no_auth
    {
        return Err(UsageError::new(format!(
            "--listen {address}: without --auth the listener authenticates no host, and forwards every call with the upstream's credential, so anyone who can reach {address} would call the upstream's tools as you. Name your authorization server with --auth FILE (the user guide, doc/guide/src/mcp.md, \"Who may call\"), listen on 127.0.0.1 behind your own authentication, or, where a network policy already limits who reaches the port, say so with --insecure-no-auth"
        )));
    }
    if options.listen.is_none() && (options.auth.is_some() || options.caller_rate.is_some()) {
        return Err(UsageError::new(
            "--auth and --caller-rate are for the HTTP listener (--listen ADDR): a stdio host is the process that launched the proxy",
        ));
    }
    if options.auth.is_some() && options.insecure_no_auth {
        return Err(UsageError::new(
            "--auth and --insecure-no-auth contradict each other: with --auth every caller is authenticated",
        ));
    }
    let repository = toolgate_repo::bundle::open_contracts(&options.root)?;
    // Opened before any runtime: the exporter's blocking HTTP client may not be made on one.
    let front = Front::open(
        &FrontConfig {
            runner: Runner {
                name: lines::PROXY_NAME,
                stdout_taken: options.listen.is_none().then_some(
                    "carries the host's messages over stdio (serve over HTTP, --listen, to audit there)",
                ),
                // Metrics are kept where someone can read them: the listener serves them, or
                // --metrics.
                keeps_metrics: options.listen.is_some(),
                logs_refusals: true,
            },
            ..options.front.clone()
        },
        &repository,
    )?;
    let loaded = loaded::Loaded::of(&repository, front.shadows(), options.context.as_deref())?;
    let registry = &loaded.registry;
    front.contract_set(
        &loaded.digest,
        registry.contracts().map(|(_, contract)| contract),
    );
    lines::log(&configuration_line(options, &front, registry, &repository));
    let line_cap = options
        .max_line_bytes
        .unwrap_or_else(|| (registry.largest_max_bytes * 2 + 64 * 1024).max(1024 * 1024));
    let remote = upstream_url(&options.command);
    let runtime = if options.listen.is_some() || remote.is_some() {
        Some(
            http_runtime(options.http_threads)
                // Forwarding to a stdio upstream blocks while it does not read; each request in
                // flight may hold one blocking thread, and no more are needed.
                .max_blocking_threads(options.listen_limits.max_requests_in_flight + 16)
                .build()
                .map_err(|error| {
                    UsageError::new(format!("cannot start the HTTP runtime: {error}"))
                })?,
        )
    } else {
        None
    };
    listen::ignore_hangup();
    // Read before anything starts: a file that is wrong, or keys that cannot be had, are a
    // configuration error, not a listener that refuses every call.
    let authorizer = match (&options.auth, &runtime) {
        (Some(path), Some(runtime)) => {
            let tools = registry.iter().map(|(name, _)| name.to_owned()).collect();
            Some(std::sync::Arc::new(
                runtime.block_on(auth::Authorizer::load(path, &tools))?,
            ))
        }
        _ => None,
    };
    // Connected before anything starts: a shared limit whose store cannot be reached is a
    // configuration error, not a listener that refuses every call.
    let rate = match (&options.caller_rate, &options.caller_rate_store, &runtime) {
        (Some(rate), Some(url), Some(runtime)) => Some(std::sync::Arc::new(runtime.block_on(
            auth::CallerRate::shared(rate, url, options.caller_rate_unavailable),
        )?)),
        (Some(rate), _, _) => Some(std::sync::Arc::new(auth::CallerRate::new(rate))),
        (None, _, _) => None,
    };
    let metrics_token = options
        .metrics_token_file
        .as_deref()
        .map(read_scrape_token)
        .transpose()?;
    // Bound before anything starts, so a taken port is a configuration error, not a late one.
    let listener = options
        .listen
        .map(|address| {
            std::net::TcpListener::bind(address)
                .and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
                .map_err(|error| UsageError::new(format!("cannot listen on {address}: {error}")))
        })
        .transpose()?;
    let (link, source) = connect(
        &options.command,
        &options.upstream_headers,
        line_cap,
        options.timeout,
        runtime.as_ref(),
        "toolgate mcp-proxy",
    )?;
    let proxy = std::sync::Arc::new(Proxy::new(
        Setup {
            reload: proxy::Reload {
                root: options.root.clone(),
                shadow: options.front.shadow.clone(),
                enforce: options.front.enforce.clone(),
                context: options.context.clone(),
                check_every: options.reload_check,
            },
            line_cap,
            loaded,
            allowed: options.allow.clone(),
            timeout: options.timeout,
            front,
            supervision: options.supervision,
        },
        link,
    ));
    let metrics = proxy.front().metrics().cloned();
    if let Some(metrics) = &metrics {
        // Read at each scrape; weak, so the metrics keep no proxy alive.
        let watched = std::sync::Arc::downgrade(&proxy);
        metrics.watch_upstream(move || watched.upgrade().is_some_and(|proxy| proxy.ready()));
        let watched = std::sync::Arc::downgrade(&proxy);
        metrics.watch_withheld(move || watched.upgrade().map_or(0, |proxy| proxy.withheld()));
    }
    if listener.is_some() {
        proxy.decide_on_transport_tasks();
    }
    std::thread::scope(|scope| {
        scope.spawn(|| proxy.pump(source));
        scope.spawn(|| proxy.watch_timeouts());
        // No host request is read, let alone forwarded, before the upstream's era is settled
        // and its pinned tools are checked.
        proxy.settle();
        proxy.refresh_surface();
        scope.spawn(|| proxy.watch_surface());
        // Never joined: it waits on signals and timers for as long as the process runs.
        if let Some(watch) = proxy::Watch::new() {
            let watcher = std::sync::Arc::clone(&proxy);
            if let Err(error) = std::thread::Builder::new()
                .name("toolgate-reload".to_owned())
                .spawn(move || watcher.watch_contracts(watch))
            {
                lines::log(&format!("cannot watch the contracts for a reload: {error}"));
            }
        }
        match (listener, &runtime) {
            (Some(listener), Some(runtime)) => {
                let drained = runtime.block_on(async {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(error) => {
                            lines::log(&format!("cannot listen: {error}"));
                            return None;
                        }
                    };
                    if let Ok(address) = listener.local_addr() {
                        eprintln!(
                            "toolgate mcp-proxy: listening on http://{address}{}",
                            listen::ENDPOINT
                        );
                    }
                    listen::serve(
                        std::sync::Arc::clone(&proxy),
                        listener,
                        listen::Listen {
                            allowed_origins: options.allow_origins.clone(),
                            loopback: options
                                .listen
                                .is_some_and(|address| address.ip().is_loopback()),
                            body_cap: line_cap,
                            limits: options.listen_limits.clone(),
                            auth: authorizer.clone(),
                            rate: rate.clone(),
                            metrics: metrics.clone(),
                            serve_metrics: options.front.metrics.is_none(),
                            metrics_token,
                        },
                        options.drain,
                        listen::stop_signal(),
                    )
                    .await
                    .into()
                });
                match drained {
                    Some(drained) => {
                        lines::log(&drained.report());
                        proxy
                            .shut_down_within("the listener stopped", drained.left(&options.drain));
                    }
                    None => proxy.shut_down("the listener stopped"),
                }
            }
            _ => stdio_host::serve(&proxy, std::io::stdin(), std::io::stdout(), line_cap),
        }
    });
    Ok(Status::Passed)
}

/// The proxy's configuration in one line, at start: who may call, the front's parts, and the
/// contracts it enforces (the first dozen named, with their digests' first bytes).
fn configuration_line(
    options: &ProxyConfig,
    front: &Front,
    registry: &Registry,
    repository: &Repository,
) -> String {
    const NAMED: usize = 12;
    let source = match repository.root().bundle_digest() {
        Some(digest) => format!(
            "bundle {} (sha256:{})",
            options.root.display(),
            digest.to_hex()
        ),
        None => format!("folder {}", options.root.display()),
    };
    let auth = match (&options.auth, options.listen) {
        (Some(path), _) => format!("auth by {}", path.display()),
        (None, Some(address)) if address.ip().is_loopback() => "no auth (loopback)".to_owned(),
        (None, Some(_)) => "NO AUTH (--insecure-no-auth)".to_owned(),
        (None, None) => "stdio host".to_owned(),
    };
    let mut contracts: Vec<String> = registry
        .iter()
        .take(NAMED)
        .map(|(name, tool)| {
            let digest = tool.contract.digest().to_hex();
            format!(
                "{name} {} ({})",
                tool.contract.version(),
                digest.get(..8).unwrap_or_default()
            )
        })
        .collect();
    let count = registry.iter().count();
    if count > NAMED {
        contracts.push(format!("and {} more", count - NAMED));
    }
    format!(
        "configuration: {auth}; {}; {count} contract(s) from {source}: {}",
        front.summary(),
        contracts.join(", ")
    )
}

/// The longest scrape token file read.
const MAX_SCRAPE_TOKEN_BYTES: usize = 4096;

/// The digest of the scrape token in `path` (`--metrics-token-file`): its text, trimmed, at
/// least 16 characters.
fn read_scrape_token(path: &std::path::Path) -> Result<[u8; 32], UsageError> {
    use sha2::Digest;
    let file = std::fs::File::open(path)
        .map_err(|error| UsageError::io(path, "read the scrape token", &error))?;
    let bytes = toolgate_gate::read_capped(file, MAX_SCRAPE_TOKEN_BYTES)
        .map_err(|error| UsageError::io(path, "read the scrape token", &error))?;
    let token = std::str::from_utf8(&bytes).map(str::trim).unwrap_or("");
    if token.len() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UsageError::new(format!(
            "--metrics-token-file {}: a scrape token is one word of at least 16 characters (e.g. `head -c 24 /dev/urandom | base64 > metrics.token`)",
            path.display()
        )));
    }
    Ok(sha2::Sha256::digest(token.as_bytes()).into())
}
