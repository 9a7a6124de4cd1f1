//! The MCP proxy's HTTP listener (`toolgate mcp-proxy --listen`) under arbitrary clients: up to
//! eight connections at once, each sent requests built from the fuzzer's bytes (any method and
//! path, the transport's headers right, wrong or missing, JSON-RPC messages of both eras or raw
//! bytes, a `Content-Length` that lies, a body cut short) and any connection behaviour between
//! them (pauses, half-closes, closes mid-request), in front of an upstream in memory whose calls
//! are answered, refused, stalled, oversized or streamed in turn
//! (`toolgate_mcp::internals::Listener`).
//!
//! Each input must leave the listener as it found it: no panic on any of its threads (a panic
//! anywhere aborts, so the fuzzer sees it), `/healthz` answered within its bounds once the
//! connections are gone, and nothing the upstream wrote in any answer (its free text is a
//! canary).
#![no_main]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolgate_mcp::ListenLimits;
use toolgate_mcp::internals::{Listener, UPSTREAM_CANARY};

fn listener() -> SocketAddr {
    static LISTENER: OnceLock<Listener> = OnceLock::new();
    LISTENER
        .get_or_init(|| {
            // A panic on any thread (a listener task's, a blocking one's) is a finding.
            let default = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                default(info);
                std::process::abort();
            }));
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp");
            let limits = ListenLimits {
                max_connections: 6,
                max_requests_in_flight: 3,
                header_timeout: Duration::from_millis(150),
                idle_timeout: Duration::from_millis(300),
                body_timeout: Duration::from_millis(200),
            };
            Listener::start(&root, limits, Duration::from_millis(250)).expect("the listener starts")
        })
        .address()
}

#[derive(Arbitrary, Debug)]
enum Step {
    /// Opens a connection (at most eight are open).
    Open,
    /// Writes to connection `conn` (modulo those open).
    Send { conn: u8, part: Part },
    /// Waits a little, reading what has arrived.
    Pause { tenths_of_ms: u8 },
    /// Closes the connection's write half: the listener reads end of file mid-request.
    HalfClose { conn: u8 },
    /// Closes it.
    Close { conn: u8 },
}

#[derive(Arbitrary, Debug)]
enum Part {
    /// A whole request.
    Request(Request),
    /// The first `cut` bytes of one (a head or a body cut short).
    Cut { request: Request, cut: u16 },
    /// Anything at all.
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Request {
    method: HttpMethod,
    path: PathKind,
    headers: Vec<Header>,
    body: Body,
    /// How the body's length is stated.
    length: Length,
}

#[derive(Arbitrary, Debug)]
enum HttpMethod {
    Post,
    Get,
    Delete,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum PathKind {
    Mcp,
    Healthz,
    Readyz,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Header {
    ProtocolVersion(Version),
    McpMethod(Option<String>),
    McpName(Option<String>),
    Session(String),
    Origin(String),
    Host(String),
    AcceptStream,
    Other(String, String),
}

#[derive(Arbitrary, Debug)]
enum Version {
    Modern,
    Legacy,
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Length {
    Exact,
    Chunked,
    Lie(u32),
    None,
}

#[derive(Arbitrary, Debug)]
enum Body {
    Message(Rpc),
    Raw(Vec<u8>),
    /// Many bytes of nothing in particular (past the body cap, some of them).
    Large(u16),
}

#[derive(Arbitrary, Debug)]
struct Rpc {
    id: Id,
    method: RpcMethod,
    modern: bool,
    name: Option<String>,
    city: String,
    progress: bool,
    duplicate_member: bool,
}

#[derive(Arbitrary, Debug)]
enum Id {
    Number(i64),
    Text(String),
    Null,
    Missing,
}

#[derive(Arbitrary, Debug)]
enum RpcMethod {
    Initialize,
    Discover,
    ToolsList,
    ToolsCall,
    Ping,
    Cancelled(Id),
    Initialized,
    ResourcesList,
    SubscriptionsListen,
    Other(String),
    /// A response, which a client does not send.
    Response,
}

impl Rpc {
    fn json(&self) -> Vec<u8> {
        let id = |id: &Id| match id {
            Id::Number(number) => Some(json!(number)),
            Id::Text(text) => Some(json!(text)),
            Id::Null => Some(Value::Null),
            Id::Missing => None,
        };
        let method = match &self.method {
            RpcMethod::Initialize => "initialize".to_owned(),
            RpcMethod::Discover => "server/discover".to_owned(),
            RpcMethod::ToolsList => "tools/list".to_owned(),
            RpcMethod::ToolsCall => "tools/call".to_owned(),
            RpcMethod::Ping => "ping".to_owned(),
            RpcMethod::Cancelled(_) => "notifications/cancelled".to_owned(),
            RpcMethod::Initialized => "notifications/initialized".to_owned(),
            RpcMethod::ResourcesList => "resources/list".to_owned(),
            RpcMethod::SubscriptionsListen => "subscriptions/listen".to_owned(),
            RpcMethod::Other(other) => other.clone(),
            RpcMethod::Response => {
                return json!({"jsonrpc": "2.0", "id": id(&self.id), "result": {}})
                    .to_string()
                    .into_bytes();
            }
        };
        let mut params = json!({
            "name": self.name.clone().unwrap_or_else(|| "weather".to_owned()),
            "arguments": {"city": self.city},
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        });
        if let RpcMethod::Cancelled(cancelled) = &self.method {
            params = json!({"requestId": id(cancelled), "reason": "fuzz"});
        }
        if self.modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
            });
        }
        if self.progress {
            params["_meta"]["progressToken"] = json!("p");
        }
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id(&self.id) {
            message["id"] = id;
        }
        let mut text = message.to_string();
        if self.duplicate_member {
            text = text.replacen("{\"jsonrpc\"", "{\"jsonrpc\":\"2.0\",\"jsonrpc\"", 1);
        }
        text.into_bytes()
    }
}

/// Text for a header: one line, whatever the fuzzer wrote.
fn one_line(text: &str) -> String {
    text.chars()
        .filter(|ch| *ch != '\r' && *ch != '\n')
        .take(200)
        .collect()
}

impl Request {
    fn bytes(&self) -> Vec<u8> {
        let method = match &self.method {
            HttpMethod::Post => "POST".to_owned(),
            HttpMethod::Get => "GET".to_owned(),
            HttpMethod::Delete => "DELETE".to_owned(),
            HttpMethod::Other(other) => one_line(other).replace(' ', ""),
        };
        let path = match &self.path {
            PathKind::Mcp => "/mcp".to_owned(),
            PathKind::Healthz => "/healthz".to_owned(),
            PathKind::Readyz => "/readyz".to_owned(),
            PathKind::Other(other) => format!("/{}", one_line(other).replace(' ', "%20")),
        };
        let body = match &self.body {
            Body::Message(rpc) => rpc.json(),
            Body::Raw(bytes) => bytes.clone(),
            Body::Large(kilobytes) => vec![b'x'; usize::from(*kilobytes % 512) * 1024],
        };
        let mut out = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n").into_bytes();
        for header in &self.headers {
            let (name, value) = match header {
                Header::ProtocolVersion(Version::Modern) => ("MCP-Protocol-Version", "2026-07-28".to_owned()),
                Header::ProtocolVersion(Version::Legacy) => ("MCP-Protocol-Version", "2025-06-18".to_owned()),
                Header::ProtocolVersion(Version::Other(other)) => ("MCP-Protocol-Version", one_line(other)),
                Header::McpMethod(method) => ("Mcp-Method", one_line(method.as_deref().unwrap_or("tools/call"))),
                Header::McpName(name) => ("Mcp-Name", one_line(name.as_deref().unwrap_or("weather"))),
                Header::Session(session) => ("Mcp-Session-Id", one_line(session)),
                Header::Origin(origin) => ("Origin", one_line(origin)),
                Header::Host(host) => ("Host", one_line(host)),
                Header::AcceptStream => ("Accept", "application/json, text/event-stream".to_owned()),
                Header::Other(name, value) => {
                    let name: String = name.chars().filter(char::is_ascii_alphanumeric).take(40).collect();
                    if name.is_empty() {
                        continue;
                    }
                    out.extend_from_slice(format!("{name}: {}\r\n", one_line(value)).as_bytes());
                    continue;
                }
            };
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        out.extend_from_slice(b"Content-Type: application/json\r\n");
        match self.length {
            Length::Exact => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                out.extend_from_slice(&body);
            }
            Length::Lie(length) => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", length % 1_000_000).as_bytes());
                out.extend_from_slice(&body);
            }
            Length::Chunked => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for chunk in body.chunks(100) {
                    out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                    out.extend_from_slice(chunk);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
            Length::None => {
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&body);
            }
        }
        out
    }
}

/// Reads whatever has arrived on `stream` (without waiting), checking it holds no canary.
fn drain(stream: &mut TcpStream, seen: &mut Vec<u8>) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => seen.extend_from_slice(&buffer[..read]),
        }
    }
    let text = String::from_utf8_lossy(seen);
    assert!(!text.contains(UPSTREAM_CANARY), "the upstream's words reached a host:\n{text}");
    // Keep the tail only: a canary split across reads is still seen.
    if seen.len() > 4096 {
        seen.drain(..seen.len() - 64);
    }
}

/// Whether `/healthz` is answered 200 within `within` (through the connection cap, which may
/// still be full of connections the listener has not yet seen close).
fn answers_healthz(address: SocketAddr, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(500)) {
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            if stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .is_ok()
            {
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                if answer.starts_with(b"HTTP/1.1 200") {
                    return true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fuzz_target!(|steps: Vec<Step>| {
    let address = listener();
    let mut open: Vec<(TcpStream, Vec<u8>)> = Vec::new();
    for step in steps.iter().take(24) {
        match step {
            Step::Open if open.len() < 8 => {
                if let Ok(stream) = TcpStream::connect(address) {
                    let _ = stream.set_nonblocking(true);
                    open.push((stream, Vec::new()));
                }
            }
            Step::Open => {}
            Step::Send { conn, part } if !open.is_empty() => {
                let index = usize::from(*conn) % open.len();
                let (stream, _) = &mut open[index];
                let bytes = match part {
                    Part::Request(request) => request.bytes(),
                    Part::Cut { request, cut } => {
                        let mut bytes = request.bytes();
                        bytes.truncate(usize::from(*cut));
                        bytes
                    }
                    Part::Raw(bytes) => bytes.clone(),
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
                let _ = stream.write_all(&bytes);
                let _ = stream.set_nonblocking(true);
            }
            Step::Pause { tenths_of_ms } => {
                std::thread::sleep(Duration::from_micros(u64::from(*tenths_of_ms) * 100));
            }
            Step::HalfClose { conn } if !open.is_empty() => {
                let index = usize::from(*conn) % open.len();
                let _ = open[index].0.shutdown(Shutdown::Write);
            }
            Step::Close { conn } if !open.is_empty() => {
                let index = usize::from(*conn) % open.len();
                let (mut stream, mut seen) = open.remove(index);
                drain(&mut stream, &mut seen);
            }
            _ => {}
        }
        for (stream, seen) in &mut open {
            drain(stream, seen);
        }
    }
    // What the connections still get before they close, then none of them.
    std::thread::sleep(Duration::from_millis(5));
    for (mut stream, mut seen) in open {
        drain(&mut stream, &mut seen);
    }
    assert!(
        answers_healthz(address, Duration::from_secs(5)),
        "the listener does not answer /healthz after an input"
    );
});
