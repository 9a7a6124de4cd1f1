//! `toolgate mcp-proxy` over Streamable HTTP: the listener a host reaches (`--listen`), an
//! upstream reached at its URL, and two instances behind a round-robin serving one host alike.
//! The host here is an HTTP client written against the transport's text (reqwest), the server
//! is the fake server in its HTTP mode.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::{HTTP_VARIABLE, LOG_VARIABLE, PATIENCE, SCENARIO_VARIABLE, here};

/// A process that is killed when the test is done with it.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake server over HTTP, and the address it prints.
pub(crate) fn fake_http(scenario: &Path, log: &Path) -> (Running, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(SCENARIO_VARIABLE, scenario)
        .env(LOG_VARIABLE, log)
        .env(HTTP_VARIABLE, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Running(child), line.trim().to_owned())
}

/// `toolgate mcp-proxy --listen 127.0.0.1:0 …`, and the address it listens on.
pub(crate) fn listening_proxy(
    extra: &[&str],
    upstream: &[String],
    environment: &[(&str, &str)],
) -> Result<(Running, String, mpsc::Receiver<String>), Failed> {
    listening_proxy_to(extra, upstream, environment, Stdio::null())
}

/// As [`listening_proxy`], its stdout going to `stdout`.
pub(crate) fn listening_proxy_to(
    extra: &[&str],
    upstream: &[String],
    environment: &[(&str, &str)],
    stdout: Stdio,
) -> Result<(Running, String, mpsc::Receiver<String>), Failed> {
    listening_proxy_at(&here(), extra, upstream, environment, stdout)
}

/// As [`listening_proxy_to`], serving the repository at `root`.
pub(crate) fn listening_proxy_at(
    root: &Path,
    extra: &[&str],
    upstream: &[String],
    environment: &[(&str, &str)],
    stdout: Stdio,
) -> Result<(Running, String, mpsc::Receiver<String>), Failed> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("mcp-proxy")
        .arg("--root")
        .arg(root)
        .args(if extra.contains(&"--listen") {
            &[][..]
        } else {
            &["--listen", "127.0.0.1:0"][..]
        })
        .args(extra)
        .arg("--")
        .args(upstream)
        .envs(environment.iter().copied())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = super::line_channel(child.stderr.take().unwrap());
    let running = Running(child);
    let mut before = Vec::new();
    loop {
        let line = lines
            .recv_timeout(PATIENCE)
            .map_err(|_| Failed::from("the proxy never said where it listens"))?;
        if let Some(address) = line
            .strip_prefix("toolgate mcp-proxy: listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
        {
            // What it said before, then everything after.
            let (forward, all) = mpsc::channel();
            for line in before {
                let _ = forward.send(line);
            }
            std::thread::spawn(move || {
                for line in lines {
                    if forward.send(line).is_err() {
                        return;
                    }
                }
            });
            return Ok((running, address.to_owned(), all));
        }
        before.push(line);
    }
}

/// One POST of `body` to the listener at `address`, its JSON answer (a plain HTTP/1.1 exchange
/// over one connection, closed after the answer).
pub(crate) fn post_json(
    address: &str,
    body: &Value,
    headers: &[(String, String)],
) -> Result<Value, Failed> {
    let (_, _, json) = http_exchange(address, "POST", "/mcp", &body.to_string(), headers)?;
    serde_json::from_str(&json).map_err(|error| format!("{error}: {json:?}").into())
}

/// An HTTP answer: its status, its header lines (names lowercased) and its body.
pub(crate) type Answer = (u16, Vec<(String, String)>, String);

/// One plain HTTP/1.1 exchange over its own connection.
pub(crate) fn http_exchange(
    address: &str,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(String, String)],
) -> Result<Answer, Failed> {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = TcpStream::connect(address).map_err(|error| error.to_string())?;
    stream
        .set_read_timeout(Some(PATIENCE))
        .map_err(|error| error.to_string())?;
    stream
        .write_all(request.as_bytes())
        .map_err(|error| error.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|error| error.to_string())?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("not an HTTP answer: {answer:?}"))?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no status line: {head:?}"))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Ok((status, headers, body.to_owned()))
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    // reqwest's TLS is rustls without a default provider (the proxy installs ring; so does this
    // client, though it speaks plain HTTP).
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub(crate) fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "http-test-host", "version": "1"}
    })
}

/// A modern request with the headers the transport requires.
pub(crate) fn modern(id: u64, method: &str, mut params: Value) -> (Value, Vec<(String, String)>) {
    let mut headers = vec![
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
        ("Mcp-Method".to_owned(), method.to_owned()),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    let mut merged = meta();
    if let Some(extra) = params.get("_meta").and_then(Value::as_object) {
        for (key, value) in extra {
            merged[key] = value.clone();
        }
    }
    params["_meta"] = merged;
    (
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        headers,
    )
}

/// One exchange: what was sent, and the status, content type and body that came back.
pub(crate) async fn exchange(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<&Value>,
    headers: &[(String, String)],
) -> Result<(u16, String, String), Failed> {
    exchange_with_headers(client, method, url, body, headers)
        .await
        .map(|(status, kind, text, _)| (status, kind, text))
}

/// [`exchange`], with the response's headers.
pub(crate) async fn exchange_with_headers(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<&Value>,
    headers: &[(String, String)],
) -> Result<(u16, String, String, reqwest::header::HeaderMap), Failed> {
    let mut request = client
        .request(method, url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.body(body.to_string());
    }
    let response = request
        .send()
        .await
        .map_err(|error| format!("{url}: {error}"))?;
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let headers = response.headers().clone();
    let text = response.text().await.map_err(|error| error.to_string())?;
    Ok((status, kind, text, headers))
}

/// One step of a transcript: its label, the HTTP method, the URL, the body, the headers.
type Step = (String, reqwest::Method, String, Option<Value>, Headers);
type Headers = Vec<(String, String)>;

/// The listener in front of a modern server reached over HTTP: every exchange a host can
/// have, as a transcript (a snapshot), with nothing the server wrote in any answer, and the
/// server's log showing the transport's headers, the credential from the environment and the
/// mirrored parameter.
pub(crate) fn listener_and_http_upstream() -> Result<(), Failed> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let audit = tempfile::NamedTempFile::new().unwrap();
    let (_server, upstream) = fake_http(&here().join("http/modern.json"), log.path());
    let audit_path = audit.path().display().to_string();
    let (_proxy, address, _stderr) = listening_proxy(
        &[
            "--audit",
            &audit_path,
            "--upstream-header",
            "Authorization=TOOLGATE_TEST_UPSTREAM_TOKEN",
            "--allow-origin",
            "https://host.example",
            // The whole exchange on one runtime thread (the other tests keep one per core).
            "--http-threads",
            "1",
        ],
        &[format!("http://{upstream}/mcp")],
        &[("TOOLGATE_TEST_UPSTREAM_TOKEN", "Bearer s3cret")],
    )?;
    let endpoint = format!("http://{address}/mcp");
    let call = |id: u64, city: &str| {
        modern(
            id,
            "tools/call",
            json!({"name": "weather", "arguments": {"city": city}}),
        )
    };
    let mut steps: Vec<Step> = vec![(
        "readiness".into(),
        reqwest::Method::GET,
        format!("http://{address}/readyz"),
        None,
        vec![],
    )];
    let mut add = |label: &str, (body, headers): (Value, Vec<(String, String)>)| {
        steps.push((
            label.to_owned(),
            reqwest::Method::POST,
            endpoint.clone(),
            Some(body),
            headers,
        ));
    };
    add("discover", modern(1, "server/discover", json!({})));
    add("list", modern(2, "tools/list", json!({})));
    add(
        "a call asking for progress: an SSE stream",
        modern(
            3,
            "tools/call",
            json!({"name": "weather", "arguments": {"city": "Lisbon"}, "_meta": {"progressToken": "p"}}),
        ),
    );
    add("a call: one JSON answer", call(4, "Lisbon"));
    add("the tool's isError: the fixed failure", call(5, "Lisbon"));
    let (body, mut headers) = call(6, "Lisbon");
    headers.retain(|(name, _)| name != "Mcp-Name");
    headers.push(("Mcp-Name".to_owned(), "shell_exec".to_owned()));
    add(
        "Mcp-Name disagrees with the body: 400, -32020",
        (body, headers),
    );
    let (body, mut headers) = call(7, "Lisbon");
    headers.retain(|(name, _)| name != "MCP-Protocol-Version");
    add("no MCP-Protocol-Version: 400, -32020", (body, headers));
    let (mut body, mut headers) = call(8, "Lisbon");
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    headers[0].1 = "2099-01-01".to_owned();
    add(
        "an unknown revision: 400, -32022 and the revisions spoken",
        (body, headers),
    );
    let (body, mut headers) = call(9, "Lisbon");
    headers.push(("Origin".to_owned(), "https://evil.example".to_owned()));
    add("an Origin not allowed: 403", (body, headers));
    let (body, mut headers) = call(10, "Lisbon");
    headers.push(("Origin".to_owned(), "https://host.example".to_owned()));
    add("the allowed Origin", (body, headers));
    add(
        "a handshake-era host's initialize, answered with a session (for its cancellations)",
        (
            json!({"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}}),
            vec![],
        ),
    );
    add(
        "a notification: 202",
        (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            vec![],
        ),
    );
    add(
        "a handshake-era call, answered in that era",
        (
            json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}}),
            vec![("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned())],
        ),
    );
    add(
        "an unknown method: 404, -32601",
        modern(13, "resources/list", json!({})),
    );
    steps.push((
        "GET on the endpoint: 405".into(),
        reqwest::Method::GET,
        endpoint.clone(),
        None,
        vec![],
    ));

    let runtime = runtime();
    let client = reqwest::Client::new();
    let mut transcript = String::new();
    runtime.block_on(async {
        for (label, method, url, body, headers) in &steps {
            let (status, kind, text, answered_headers) =
                exchange_with_headers(&client, method.clone(), url, body.as_ref(), headers).await?;
            transcript.push_str(&format!("## {label}\n"));
            if let Some(body) = body {
                transcript.push_str(&format!("→ {body}\n"));
            }
            transcript.push_str(&format!(
                "← {status} {}\n",
                kind.split(';').next().unwrap_or("")
            ));
            // A session id is random: shown by its shape.
            if let Some(session) = answered_headers.get("mcp-session-id") {
                let shaped =
                    session.len() == 32 && session.as_bytes().iter().all(u8::is_ascii_hexdigit);
                transcript.push_str(&format!(
                    "  Mcp-Session-Id: {}\n",
                    if shaped {
                        "<32 hex digits>"
                    } else {
                        "<not 128 bits in hex>"
                    }
                ));
            }
            for line in text.lines().filter(|line| !line.is_empty()) {
                transcript.push_str(&format!("  {line}\n"));
            }
        }
        Ok::<(), Failed>(())
    })?;
    if transcript.contains("CANARY") || transcript.contains("s3cret") {
        return Err(
            format!("upstream text or a credential reached the host:\n{transcript}").into(),
        );
    }
    let received = std::fs::read_to_string(log.path()).unwrap_or_default();
    for expected in [
        "# authorization: Bearer s3cret",
        "# mcp-protocol-version: 2026-07-28",
        "# mcp-method: tools/call",
        "# mcp-name: weather",
        "# mcp-param-city: Lisbon",
    ] {
        if !received.contains(expected) {
            return Err(format!("the server never received {expected:?}:\n{received}").into());
        }
    }
    let audited = std::fs::read_to_string(audit.path())
        .unwrap_or_default()
        .lines()
        .count();
    let results = transcript.matches("\"structuredContent\"").count();
    if audited != results {
        return Err(format!("{results} tool results, {audited} audit events\n{transcript}").into());
    }
    transcript.push_str("\nthe server received:\n");
    for line in received.lines() {
        transcript.push_str(&format!("· {line}\n"));
    }
    super::snapshot("http", "Both sides over Streamable HTTP.", &transcript)
}

/// A handshake-era server over HTTP that opens a session: the proxy's handshake, then every
/// request with the session's id and revision.
pub(crate) fn legacy_http_upstream() -> Result<(), Failed> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let (_server, upstream) = fake_http(&here().join("http/legacy.json"), log.path());
    let mut proxy = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["mcp-proxy", "--root"])
        .arg(here())
        .arg("--")
        .arg(format!("http://{upstream}/mcp"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = proxy.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}}),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut output = BufReader::new(proxy.stdout.take().unwrap());
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        answers.push(line);
    }
    drop(stdin);
    let _ = proxy.wait();
    let admitted: Value = serde_json::from_str(&answers[1]).map_err(|error| error.to_string())?;
    if admitted["result"]["structuredContent"]["outcome"] != "success" {
        return Err(format!("expected the call admitted: {answers:?}").into());
    }
    let received = std::fs::read_to_string(log.path()).unwrap_or_default();
    let call_headers = received
        .split("\"method\":\"tools/call\"")
        .next()
        .unwrap_or_default();
    for expected in [
        "# mcp-session-id: session-1",
        "# mcp-protocol-version: 2025-06-18",
    ] {
        if !call_headers.contains(expected) {
            return Err(format!("the call did not carry {expected:?}:\n{received}").into());
        }
    }
    Ok(())
}

/// Two instances behind a round-robin balancer (a TCP one, connection by connection) serve one
/// host exactly as one instance does: the same answer to every request and, together, the
/// same audit lines (but their times).
pub(crate) fn two_instances_behind_a_round_robin() -> Result<(), Failed> {
    let scenario = here().join("http/round_robin.json");
    // The third instance audits to its stdout (`--audit -`, as in a container).
    let start = |audit: &Path, to_stdout: bool| -> Result<(Running, String), Failed> {
        let log = tempfile::NamedTempFile::new().unwrap();
        let server = std::env::current_exe().unwrap();
        let (target, stdout) = if to_stdout {
            (
                "-".to_owned(),
                Stdio::from(std::fs::File::create(audit).unwrap()),
            )
        } else {
            (audit.display().to_string(), Stdio::null())
        };
        let (proxy, address, _) = listening_proxy_to(
            &["--audit", &target],
            &[server.display().to_string()],
            &[
                (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
                (LOG_VARIABLE, log.path().to_str().unwrap()),
            ],
            stdout,
        )?;
        Ok((proxy, address))
    };
    let audits: Vec<tempfile::NamedTempFile> = (0..3)
        .map(|_| tempfile::NamedTempFile::new().unwrap())
        .collect();
    let (_first, first) = start(audits[0].path(), false)?;
    let (_second, second) = start(audits[1].path(), false)?;
    let (_single, single) = start(audits[2].path(), true)?;
    let balancer = round_robin(vec![first, second]);

    let calls: Vec<(Value, Vec<(String, String)>)> = (0..12)
        .map(|n| {
            let city = if n % 3 == 0 { "Porto" } else { "Lisbon" };
            modern(
                n,
                "tools/call",
                json!({"name": "weather", "arguments": {"city": city}}),
            )
        })
        .collect();
    let runtime = runtime();
    // A new connection per request, as many balancers and clients do.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (through_balancer, direct) = runtime.block_on(async {
        let mut through_balancer = Vec::new();
        let mut direct = Vec::new();
        for (body, headers) in &calls {
            let url = format!("http://{balancer}/mcp");
            through_balancer
                .push(exchange(&client, reqwest::Method::POST, &url, Some(body), headers).await?);
            let url = format!("http://{single}/mcp");
            direct.push(exchange(&client, reqwest::Method::POST, &url, Some(body), headers).await?);
        }
        Ok::<_, Failed>((through_balancer, direct))
    })?;
    if through_balancer != direct {
        return Err(format!(
            "answers differ:\nthrough the balancer: {through_balancer:#?}\ndirect: {direct:#?}"
        )
        .into());
    }
    let admitted = direct
        .iter()
        .filter(|(_, _, text)| text.contains("\\\"outcome\\\":\\\"success\\\""))
        .count();
    if admitted != 8 {
        return Err(format!("expected 8 admitted calls and 4 refused: {direct:#?}").into());
    }
    let lines = |file: &tempfile::NamedTempFile| -> Vec<String> {
        std::fs::read_to_string(file.path())
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let mut event: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                event["time"] = Value::Null;
                // Each file's own hash chain (its writer's id, the line before it), and each
                // call's own id (unique to the replica that served it).
                if let Some(members) = event.as_object_mut() {
                    members.remove("chain");
                    members.remove("call_id");
                }
                event.to_string()
            })
            .collect()
    };
    let (from_first, from_second) = (lines(&audits[0]), lines(&audits[1]));
    if from_first.is_empty() || from_second.is_empty() {
        return Err("the balancer sent every call to one instance".into());
    }
    let mut together: Vec<String> = from_first.into_iter().chain(from_second).collect();
    together.sort();
    let mut alone = lines(&audits[2]);
    alone.sort();
    if together != alone {
        return Err(format!("audit lines differ:\n{together:#?}\n{alone:#?}").into());
    }
    Ok(())
}

/// A round-robin TCP balancer on a free port: each connection goes to the next backend.
fn round_robin(backends: Vec<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for (turn, client) in listener.incoming().enumerate() {
            let Ok(client) = client else { continue };
            let Ok(backend) = TcpStream::connect(&backends[turn % backends.len()]) else {
                continue;
            };
            pipe(client.try_clone().unwrap(), backend.try_clone().unwrap());
            pipe(backend, client);
        }
    });
    address
}

/// Copies one direction of a connection until it closes.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => {
                    if to.write_all(&buffer[..read]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}
