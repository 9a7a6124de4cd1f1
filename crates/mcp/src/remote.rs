//! The upstream over Streamable HTTP: the server's URL in place of its command. Each message is
//! its own POST; the answer (one JSON object, or an SSE stream of notifications ending with the
//! response) is handed to the proxy message by message, exactly as a child's lines are, capped
//! the same way. Headers are those the 2026-07-28 transport requires (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-*` for the parameters the server's tools mark with
//! `x-mcp-header`); credentials come from the environment (`--upstream-header NAME=VARIABLE`),
//! never from the command line. A handshake-era server's `Mcp-Session-Id` is kept and sent back.
//!
//! A request the server does not answer with a JSON-RPC message (a refused connection, a 5xx
//! page) is answered, in the proxy's own words, with an error for its id, so the proxy's usual
//! path (the fixed failure for a call) takes over.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use toolgate_repo::UsageError;

use super::era;
use super::lines::log;
use super::listen::encode_header_value;
use super::message::{self, codes};
use super::upstream::{Incoming, Link, Outgoing};

/// The upstream server at a URL.
pub(crate) struct Remote {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
}

struct Shared {
    client: reqwest::Client,
    url: reqwest::Url,
    credentials: HeaderMap,
    incoming: Mutex<Option<Sender<Incoming>>>,
    line_cap: usize,
    /// The revision agreed, once it is (the header a handshake-era session sends).
    version: Mutex<Option<String>>,
    /// A handshake-era server's session.
    session: Mutex<Option<HeaderValue>>,
    /// Each tool's parameters its schema mirrors into headers.
    mirrored: Mutex<HashMap<String, Vec<Mirrored>>>,
    closed: AtomicBool,
}

/// A parameter a tool's schema mirrors into a header: its property path, the header's name.
type Mirrored = (Vec<String>, String);

/// Whether an upstream given on the command line is a URL rather than a command.
pub(crate) fn is_url(text: &str) -> bool {
    text.starts_with("http://") || text.starts_with("https://")
}

impl Remote {
    /// Reaches the server at `url` with the credential headers named in `headers` (each
    /// `NAME=VARIABLE`: the header's value is the environment variable's).
    pub(crate) fn connect(
        url: &str,
        headers: &[String],
        line_cap: usize,
        timeout: Duration,
        incoming: Sender<Incoming>,
        runtime: tokio::runtime::Handle,
    ) -> Result<Remote, UsageError> {
        let url = reqwest::Url::parse(url)
            .map_err(|error| UsageError::new(format!("the upstream URL {url:?}: {error}")))?;
        let credentials = credential_headers(headers)?;
        // One TLS stack for the process: rustls with ring, whatever else is linked in.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| UsageError::new(format!("cannot set up HTTPS: {error}")))?;
        Ok(Remote {
            shared: Arc::new(Shared {
                client,
                url,
                credentials,
                incoming: Mutex::new(Some(incoming)),
                line_cap,
                version: Mutex::new(None),
                session: Mutex::new(None),
                mirrored: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
            }),
            runtime,
        })
    }
}

/// The credential headers: each `NAME=VARIABLE` read from the environment now, so a missing
/// variable stops the start instead of every call.
fn credential_headers(headers: &[String]) -> Result<HeaderMap, UsageError> {
    let mut map = HeaderMap::new();
    for spec in headers {
        let Some((name, variable)) = spec.split_once('=') else {
            return Err(UsageError::new(format!(
                "--upstream-header {spec:?}: write NAME=VARIABLE (the value is read from the environment variable, never written on the command line)"
            )));
        };
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: {name:?} is not a header name"
            ))
        })?;
        let value = std::env::var(variable.trim()).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: the environment variable {variable:?} is not set (or not UTF-8)"
            ))
        })?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            UsageError::new(format!(
                "--upstream-header {spec:?}: the value of {variable:?} cannot be a header value"
            ))
        })?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

impl Link for Remote {
    fn send(&self, message: Outgoing) -> bool {
        if self.shared.closed.load(Ordering::Relaxed) {
            return false;
        }
        let shared = Arc::clone(&self.shared);
        self.runtime
            .spawn(async move { shared.post(message).await });
        true
    }

    fn agreed(&self, version: &str) {
        *self
            .shared
            .version
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(version.to_owned());
        if era::MODERN_VERSIONS.contains(&version) {
            // Learn which parameters each tool mirrors into headers before any call needs them.
            let shared = Arc::clone(&self.shared);
            let version = version.to_owned();
            self.runtime
                .block_on(async move { shared.learn_mirrored(&version).await });
        }
    }

    fn close(&self) {
        self.shared.closed.store(true, Ordering::Relaxed);
    }

    fn stop(&self, _grace: Duration, _finished: &dyn Fn() -> bool) {
        self.shared.closed.store(true, Ordering::Relaxed);
        self.shared
            .incoming
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    }

    fn alive(&self) -> bool {
        !self.shared.closed.load(Ordering::Relaxed)
    }
}

impl Shared {
    fn deliver(&self, message: Incoming) {
        let sender = self
            .incoming
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some(sender) = sender {
            let _ = sender.send(message);
        }
    }

    fn headers(&self, message: &Outgoing) -> HeaderMap {
        let mut headers = self.credentials.clone();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let body: Value = serde_json::from_slice(&message.line).unwrap_or(Value::Null);
        let named = body["params"]["_meta"][era::meta::PROTOCOL_VERSION]
            .as_str()
            .map(str::to_owned)
            .or_else(|| {
                // A handshake-era session names its revision on every request after `initialize`.
                (message.method.as_deref() != Some("initialize"))
                    .then(|| {
                        self.version
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .clone()
                    })
                    .flatten()
            });
        let mut put = |name: &str, value: &str| {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.insert(name, value);
            }
        };
        if let Some(version) = &named {
            put("mcp-protocol-version", version);
        }
        if let Some(method) = &message.method {
            put("mcp-method", &encode_header_value(method));
        }
        if let Some(name) = &message.name {
            put("mcp-name", &encode_header_value(name));
        }
        if message.method.as_deref() == Some("tools/call")
            && let Some(tool) = &message.name
        {
            let mirrored = self
                .mirrored
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(tool)
                .cloned()
                .unwrap_or_default();
            for (path, header) in mirrored {
                let mut value = &body["params"]["arguments"];
                for step in &path {
                    value = &value[step.as_str()];
                }
                let text = match value {
                    Value::String(text) => text.clone(),
                    Value::Bool(flag) => flag.to_string(),
                    Value::Number(number) if number.is_i64() || number.is_u64() => {
                        number.to_string()
                    }
                    _ => continue,
                };
                put(&format!("mcp-param-{header}"), &encode_header_value(&text));
            }
        }
        if let Some(session) = self
            .session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
        {
            headers.insert("mcp-session-id", session);
        }
        headers
    }

    async fn post(&self, message: Outgoing) {
        let headers = self.headers(&message);
        let failed = |why: String| {
            log(&format!(
                "the upstream at {} failed a request: {why}",
                self.url
            ));
            if let Some(id) = &message.id {
                self.deliver(Incoming::Line(message::error_line(
                    id,
                    codes::INTERNAL_ERROR,
                    "the upstream did not answer over HTTP",
                )));
            }
        };
        let response = match self
            .client
            .post(self.url.clone())
            .headers(headers)
            .body(message.line.clone())
            .send()
            .await
        {
            Ok(response) => response,
            Err(error) => return failed(error.without_url().to_string()),
        };
        if message.method.as_deref() == Some("initialize")
            && let Some(session) = response.headers().get("mcp-session-id")
        {
            *self
                .session
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(session.clone());
        }
        let status = response.status();
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if status == reqwest::StatusCode::ACCEPTED || message.id.is_none() {
            return;
        }
        let answered = if streamed {
            self.read_events(response).await
        } else {
            self.read_json(response).await
        };
        if !answered {
            failed(format!("HTTP {status} without a JSON-RPC answer"));
        }
    }

    /// Hands on a JSON answer; `false` when there is none.
    async fn read_json(&self, mut response: reqwest::Response) -> bool {
        let mut body = Vec::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() > self.line_cap {
                body.truncate(self.line_cap);
                self.deliver(Incoming::TooLong(body));
                return true;
            }
        }
        if !matches!(message::parse(&body), Ok(message::Message::Response { .. })) {
            return false;
        }
        self.deliver(Incoming::Line(body));
        true
    }

    /// Hands on every event of an SSE answer, each capped; `true` once a response was among
    /// them.
    async fn read_events(&self, mut response: reqwest::Response) -> bool {
        let mut buffer: Vec<u8> = Vec::new();
        let mut data: Vec<u8> = Vec::new();
        let mut answered = false;
        while let Ok(Some(chunk)) = response.chunk().await {
            buffer.extend_from_slice(&chunk);
            while let Some(end) = buffer.iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let line = line
                    .strip_suffix(b"\n")
                    .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
                    .unwrap_or(&line);
                if line.is_empty() {
                    if !data.is_empty() {
                        answered |=
                            matches!(message::parse(&data), Ok(message::Message::Response { .. }));
                        self.deliver(Incoming::Line(std::mem::take(&mut data)));
                    }
                } else if let Some(field) = line.strip_prefix(b"data:") {
                    let field = field.strip_prefix(b" ").unwrap_or(field);
                    if !data.is_empty() {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(field);
                }
                if data.len() > self.line_cap {
                    data.truncate(self.line_cap);
                    self.deliver(Incoming::TooLong(std::mem::take(&mut data)));
                    return true;
                }
            }
            if buffer.len() > self.line_cap {
                self.deliver(Incoming::TooLong(std::mem::take(&mut buffer)));
                return true;
            }
        }
        answered
    }

    /// Lists the server's tools (every page) to learn their `x-mcp-header` parameters.
    async fn learn_mirrored(&self, version: &str) {
        let mut cursor: Option<Value> = None;
        for page in 0..100 {
            let mut params = json!({"_meta": {
                era::meta::PROTOCOL_VERSION: version,
                era::meta::CLIENT_CAPABILITIES: {},
                era::meta::CLIENT_INFO: era::implementation(),
            }});
            if let Some(cursor) = &cursor {
                params["cursor"] = cursor.clone();
            }
            let id = json!(format!("toolgate-headers-{page}"));
            let line = message::request_line(&id, "tools/list", &params);
            let outgoing = Outgoing {
                line,
                id: Some(id),
                method: Some("tools/list".to_owned()),
                name: None,
            };
            let Ok(response) = self
                .client
                .post(self.url.clone())
                .headers(self.headers(&outgoing))
                .body(outgoing.line.clone())
                .send()
                .await
            else {
                return;
            };
            let Ok(body) = response.bytes().await else {
                return;
            };
            let result = parse_listing(&body);
            let Some(result) = result else { return };
            let mut mirrored = self
                .mirrored
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            for tool in result["tools"].as_array().into_iter().flatten() {
                if let Some(name) = tool["name"].as_str() {
                    mirrored.insert(name.to_owned(), mirrored_parameters(&tool["inputSchema"]));
                }
            }
            cursor = result.get("nextCursor").filter(|c| c.is_string()).cloned();
            if cursor.is_none() {
                return;
            }
        }
    }
}

/// A `tools/list` answer's result, from a JSON body or the response event of an SSE body.
fn parse_listing(body: &[u8]) -> Option<Value> {
    let from = |bytes: &[u8]| match message::parse(bytes) {
        Ok(message::Message::Response {
            outcome: Ok(result),
            ..
        }) => Some(result),
        _ => None,
    };
    from(body).or_else(|| {
        body.split(|byte| *byte == b'\n')
            .filter_map(|line| line.strip_prefix(b"data:"))
            .find_map(|data| from(data.strip_prefix(b" ").unwrap_or(data)))
    })
}

/// The parameters an input schema mirrors into headers: every property reached from the root
/// through `properties` alone that carries an `x-mcp-header` name (the revision's rule).
fn mirrored_parameters(schema: &Value) -> Vec<Mirrored> {
    let mut found = Vec::new();
    let mut stack: Vec<(Vec<String>, &Value)> = vec![(Vec::new(), schema)];
    while let Some((path, node)) = stack.pop() {
        if path.len() > 32 {
            continue;
        }
        if let Some(header) = node.get("x-mcp-header").and_then(Value::as_str)
            && !path.is_empty()
            && HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes()).is_ok()
        {
            found.push((path.clone(), header.to_owned()));
        }
        for (name, child) in node
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let mut child_path = path.clone();
            child_path.push(name.clone());
            stack.push((child_path, child));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrored_parameters_are_reached_through_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Nope"}},
            "bad": {"type": "string", "x-mcp-header": "has space"}
        }});
        let mut found = mirrored_parameters(&schema);
        found.sort();
        assert_eq!(
            found,
            vec![
                (
                    vec!["nested".to_owned(), "tenant".to_owned()],
                    "Tenant".to_owned()
                ),
                (vec!["region".to_owned()], "Region".to_owned()),
            ]
        );
    }

    #[test]
    fn credentials_come_from_the_environment_only() {
        assert!(credential_headers(&["Authorization".to_owned()]).is_err());
        assert!(
            credential_headers(&["Authorization=TOOLGATE_TEST_SURELY_UNSET_VARIABLE".to_owned()])
                .is_err()
        );
        let path = credential_headers(&["X-Path=PATH".to_owned()]).unwrap();
        assert!(path.get("x-path").unwrap().is_sensitive());
    }
}
