//! What `toolgate mcp-proxy` adds to a tool call: the same calls timed against a minimal MCP
//! server directly, then through the proxy in front of it (BENCHMARKS.md, "The MCP proxy").
//!
//! ```sh
//! cargo build --release && cargo run --release -p toolgate-bench --bin mcp_latency
//! ```
//!
//! This binary is also the server: started with `MCP_LATENCY_SERVER=1`, it answers `initialize`
//! and every `tools/call` with one fixed weather result, as fast as it can.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CALLS: usize = 5_000;
const WARM_UP: usize = 500;

fn main() {
    if std::env::var_os("MCP_LATENCY_SERVER").is_some() {
        return serve();
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let toolgate = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target/release/toolgate"));
    let me = std::env::current_exe().expect("the benchmark knows where it is");
    let direct = measure(Command::new(&me));
    let mut proxied = Command::new(&toolgate);
    proxied
        .arg("mcp-proxy")
        .arg("--root")
        .arg(workspace.join("tests/mcp"))
        .arg("--")
        .arg(&me);
    let through = measure(proxied);
    println!(
        "{CALLS} sequential tools/call round trips on this machine (after {WARM_UP} to warm up):"
    );
    println!(
        "  direct        median {:>7.1} µs   mean {:>7.1} µs",
        micros(direct.0),
        micros(direct.1)
    );
    println!(
        "  through proxy median {:>7.1} µs   mean {:>7.1} µs",
        micros(through.0),
        micros(through.1)
    );
    println!(
        "  the proxy adds {:.1} µs per call (median), {:.1} µs (mean)",
        micros(through.0) - micros(direct.0),
        micros(through.1) - micros(direct.1)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Median and mean round trip of `CALLS` sequential calls to the server `command` starts.
fn measure(mut command: Command) -> (Duration, Duration) {
    let mut child = command
        .env("MCP_LATENCY_SERVER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the server (or the proxy) starts");
    let mut input = child.stdin.take().expect("piped");
    let mut output = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let mut round_trip = |message: String| {
        let started = Instant::now();
        input.write_all(message.as_bytes()).expect("write");
        input.write_all(b"\n").expect("write");
        input.flush().expect("flush");
        line.clear();
        output.read_line(&mut line).expect("read");
        assert!(line.contains("\"result\""), "{line}");
        started.elapsed()
    };
    round_trip(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#.to_owned());
    let mut times: Vec<Duration> = (1..=CALLS + WARM_UP)
        .map(|id| {
            round_trip(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"weather","arguments":{{"city":"Lisbon"}}}}}}"#
            ))
        })
        .skip(WARM_UP)
        .collect();
    drop(input);
    let _ = child.wait();
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    (times[times.len() / 2], mean)
}

fn serve() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id") else {
            continue;
        };
        let answer = match message["method"].as_str() {
            Some("initialize") => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "latency", "version": "1"}
            }}),
            Some("tools/call") => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "{\"city\":\"Lisbon\",\"temperature_c\":21.5,\"conditions\":\"clear\"}"}],
                "structuredContent": {"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"}
            }}),
            // A handshake-era server: the era probe (server/discover) is a method it lacks.
            _ => {
                serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}})
            }
        };
        writeln!(stdout, "{answer}").expect("write");
        stdout.flush().expect("flush");
    }
}
