//! Asking an MCP server (stdio) which tools it offers, for `toolgate new --from-mcp`: start it,
//! initialize, page through `tools/list`, stop it. Every line is read capped and parsed strictly,
//! as the proxy reads them; a server that does not answer in time is stopped, never waited on.

use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_repo::UsageError;

use crate::lines::{Line, read_line};
use crate::message::{self, Message};
use crate::proxy::PROTOCOL_VERSIONS;

/// The longest line read from the server while listing (a large catalogue of tools).
const LISTING_LINE_CAP: usize = 16 << 20;
/// The most pages of tools followed.
const MOST_PAGES: usize = 100;

/// One tool as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Its name, as MCP names it.
    pub name: String,
    /// Its description, if it gives one.
    pub description: Option<String>,
    /// Its `outputSchema`, if it declares one.
    pub output_schema: Option<Value>,
}

/// The tools the server started by `command` offers, within `timeout` for the whole listing.
pub fn list_tools(command: &[OsString], timeout: Duration) -> Result<Vec<ListedTool>, UsageError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| UsageError::new("no server command: write it after `--`"))?;
    let shown = program.to_string_lossy().into_owned();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| {
            UsageError::new(format!("cannot start the MCP server `{shown}`: {error}"))
        })?;
    if let Some(stderr) = child.stderr.take() {
        crate::lines::relay_stderr(stderr, "toolgate new: upstream stderr".to_owned());
    }
    let result = talk(&mut child, &shown, timeout);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn talk(child: &mut Child, shown: &str, timeout: Duration) -> Result<Vec<ListedTool>, UsageError> {
    let deadline = Instant::now() + timeout;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        while let Ok(Some(line)) = read_line(&mut reader, LISTING_LINE_CAP) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |line: Vec<u8>| -> Result<(), UsageError> {
        stdin
            .write_all(&line)
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|error| {
                UsageError::new(format!("the MCP server `{shown}` stopped reading: {error}"))
            })
    };
    // The response to request `id`, answering whatever the server asks meanwhile.
    let await_response = |id: i64,
                          send: &mut dyn FnMut(Vec<u8>) -> Result<(), UsageError>|
     -> Result<Value, UsageError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = received.recv_timeout(left).map_err(|_| {
                UsageError::new(format!(
                    "the MCP server `{shown}` did not answer within {}s",
                    timeout.as_secs()
                ))
            })?;
            let bytes = match line {
                Line::Complete(bytes) => bytes,
                Line::TooLong(_) => {
                    return Err(UsageError::new(format!(
                        "the MCP server `{shown}` sent a line longer than {} MiB",
                        LISTING_LINE_CAP >> 20
                    )));
                }
            };
            match message::parse(&bytes) {
                Ok(Message::Response {
                    id: answered,
                    outcome,
                }) if answered == json!(id) => {
                    return outcome.map_err(|error| {
                        UsageError::new(format!("the MCP server `{shown}` refused: {error}"))
                    });
                }
                Ok(Message::Request { id: asked, .. }) => {
                    send(message::error_line(
                        &asked,
                        -32601,
                        "toolgate new answers no requests",
                    ))?;
                }
                // Notifications, logs, stray responses: nothing to do while listing.
                _ => {}
            }
        }
    };
    let version = PROTOCOL_VERSIONS[PROTOCOL_VERSIONS.len() - 1];
    send(message::request_line(
        &json!(1),
        "initialize",
        &json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "toolgate new", "version": env!("CARGO_PKG_VERSION")}
        }),
    ))?;
    await_response(1, &mut send)?;
    send(message::notification_line(
        "notifications/initialized",
        &json!({}),
    ))?;
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for page in 0..MOST_PAGES {
        let id = 2 + page as i64;
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        send(message::request_line(&json!(id), "tools/list", &params))?;
        let result = await_response(id, &mut send)?;
        for tool in result
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            tools.push(ListedTool {
                name: name.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                output_schema: tool.get("outputSchema").cloned(),
            });
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
