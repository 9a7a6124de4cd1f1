//! `toolgate mcp-proxy`: the gate in front of any MCP server (stdio transport). A host launches
//! it in place of the server's command; it launches the server, forwards messages in order, and
//! lets through only what the tools' contracts admit, rebuilt by projection. See `proxy.rs` for
//! the routing and README, "toolgate mcp-proxy", for the mapping from MCP to contracts.

pub mod lines;
pub mod message;
pub mod proxy;
pub mod schemas;
pub mod tools;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use toolgate_gate::internals::parse_duration;

use crate::error::UsageError;
use crate::repo::Repository;
use crate::status::Status;
use proxy::{Route, Setup};
use tools::Registry;

/// `toolgate mcp-proxy`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct McpProxyOptions {
    /// The repository root, holding contracts/ (one per tool the host may call).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// Append every decision's audit event (one JSON line each) to this file.
    #[arg(long, value_name = "FILE")]
    pub audit: Option<PathBuf>,
    /// How long a request may wait for the upstream before it is answered with the fixed failure
    /// (e.g. 30s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// The longest message read from either side (default: twice the largest contract's
    /// max_bytes and 64 KiB, at least 1 MiB).
    #[arg(long, value_name = "BYTES")]
    pub max_line_bytes: Option<usize>,
    /// Open a route for data that is closed by default; repeatable. Its messages then pass
    /// unchanged and ungated.
    #[arg(long, value_enum, value_name = "ROUTE")]
    pub allow: Vec<Route>,
    /// The MCP server's command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "SERVER COMMAND")]
    pub command: Vec<OsString>,
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration.is_zero() {
        return Err("a timeout of zero would fail every call".to_owned());
    }
    Ok(duration)
}

/// Runs the proxy on this process's stdin and stdout until the host closes its input.
pub fn run(options: &McpProxyOptions) -> Result<Status, UsageError> {
    let repository = Repository::open(&options.root)?;
    let registry = Registry::load(&repository)?;
    let line_cap = options
        .max_line_bytes
        .unwrap_or_else(|| (registry.largest_max_bytes * 2 + 64 * 1024).max(1024 * 1024));
    let audit = options
        .audit
        .as_deref()
        .map(crate::audit_log::open_audit_log)
        .transpose()?;
    let (program, arguments) = options
        .command
        .split_first()
        .ok_or_else(|| UsageError::new("no server command: write it after `--`"))?;
    let child = Command::new(program)
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| {
            UsageError::new(format!(
                "cannot start the MCP server {:?}: {error}",
                program.to_string_lossy()
            ))
        })?;
    proxy::run(
        Setup {
            registry,
            allowed: options.allow.clone(),
            timeout: options.timeout,
            line_cap,
            audit,
        },
        child,
        std::io::stdin(),
        std::io::stdout(),
    );
    Ok(Status::Passed)
}
