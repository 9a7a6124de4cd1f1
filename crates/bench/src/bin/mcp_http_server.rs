//! A minimal MCP server over Streamable HTTP (2026-07-28, stateless), for the proxy's load test
//! (BENCHMARKS.md, "The MCP proxy over HTTP"): it answers `server/discover`, `tools/list` and
//! every `tools/call` with one fixed weather result, as fast as it can, so what a load
//! generator measures through the proxy beyond it is the proxy.
//!
//! ```sh
//! cargo run --release -p toolgate-bench --bin mcp_http_server -- 127.0.0.1:9100
//! ```

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use serde_json::{Value, json};

fn main() {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9100".to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&address)
            .await
            .expect("the address is free");
        println!(
            "listening on http://{}/mcp",
            listener.local_addr().expect("bound")
        );
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(answer);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

async fn answer(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(id) = message.get("id") else {
        return Ok(Response::builder()
            .status(202)
            .body(Full::new(Bytes::new()))
            .expect("a response"));
    };
    let result = match message["method"].as_str() {
        Some("server/discover") => json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "public"
        }),
        Some("tools/list") => json!({
            "resultType": "complete",
            "tools": [{"name": "weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "ttlMs": 0,
            "cacheScope": "public"
        }),
        _ => json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "{\"city\":\"Lisbon\",\"temperature_c\":21.5,\"conditions\":\"clear\"}"}],
            "structuredContent": {"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"}
        }),
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .expect("a response"))
}
