//! `toolgate ext-proc` and `toolgate ext-mcp`, through the real binary, driven by clients
//! generated from the gateways' own protos: envoy-types' `ExternalProcessorClient` playing
//! Envoy's side in lock-step, and the ExtMcp client generated from agentgateway's proto. Every
//! case mcp-proxy decides is decided the same through each door: the agent bytes are the
//! proxy's (`tools::result_json`), the audit lines equal but for their time and call id.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use envoy_types::pb::envoy::config::core::v3::{HeaderMap, HeaderValue};
use envoy_types::pb::envoy::service::ext_proc::v3::external_processor_client::ExternalProcessorClient;
use envoy_types::pb::envoy::service::ext_proc::v3::{
    HttpBody, HttpHeaders, ProcessingRequest, ProcessingResponse, body_mutation,
    processing_request::Request as Step, processing_response::Response as Reply,
};
use libtest_mimic::Failed;
use serde_json::{Value, json};
use toolgate_doors::ext_mcp_proto::ext_mcp_client::ExtMcpClient;
use toolgate_doors::ext_mcp_proto::{
    McpRequest, McpResponse, mcp_request_result, mcp_response_result,
};

use super::retention::repository;

/// The weather tool's arguments contract (`surface.rs`): only the cities the operator serves.
pub(crate) fn repository_with_arguments(dir: &Path) -> (PathBuf, PathBuf) {
    let root = repository(dir);
    super::surface::argument_contract(&root);
    let context = dir.join("context.json");
    std::fs::write(
        &context,
        json!({"weather.arguments": {"cities": ["Oslo", "Lisbon"]}}).to_string(),
    )
    .unwrap();
    (root, context)
}

/// A door serving `root`, and its address once it says it serves.
struct Door {
    child: Child,
    address: String,
    /// What it logged up to serving.
    log: String,
    /// What it logged since.
    rest: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Door {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_door(verb: &str, root: &Path, extra: &[&str]) -> Result<Door, Failed> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg(verb)
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(root)
        .args(extra)
        .env_remove("CI")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line?;
        seen.push_str(&line);
        seen.push('\n');
        if let Some(address) = line.split("grpc://").nth(1) {
            let address = address.trim().to_owned();
            // The rest of stderr is read so the door never blocks writing it, and kept.
            let rest = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let kept = std::sync::Arc::clone(&rest);
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    if let Ok(mut kept) = kept.lock() {
                        kept.push_str(&line);
                        kept.push('\n');
                    }
                }
            });
            return Ok(Door {
                child,
                address,
                log: seen,
                rest,
            });
        }
    }
    Err(format!("{verb} did not start:\n{seen}").into())
}

/// The Prometheus text a front serves at `address`.
fn scrape(address: &str) -> Result<String, Failed> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address)?;
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn headers(pairs: &[(&str, &str)], end_of_stream: bool) -> HttpHeaders {
    HttpHeaders {
        headers: Some(HeaderMap {
            headers: pairs
                .iter()
                .map(|(key, value)| HeaderValue {
                    key: (*key).to_owned(),
                    raw_value: value.as_bytes().to_vec(),
                    ..Default::default()
                })
                .collect(),
        }),
        end_of_stream,
        ..Default::default()
    }
}

fn step(request: Step) -> ProcessingRequest {
    ProcessingRequest {
        request: Some(request),
        ..Default::default()
    }
}

fn body(bytes: &[u8]) -> HttpBody {
    HttpBody {
        body: bytes.to_vec(),
        end_of_stream: true,
        ..Default::default()
    }
}

/// What Envoy's side saw of one exchange.
#[derive(Debug, Default)]
struct Seen {
    /// The request body the upstream received (`None`: as the host sent it), or `None` if the
    /// door answered at once.
    forwarded: Option<Option<Vec<u8>>>,
    /// The door's immediate answer (status, body), if it gave one.
    immediate: Option<(i32, Vec<u8>)>,
    /// The body the host receives for the upstream's answer.
    answered: Option<Vec<u8>>,
    /// The headers the door set on that answer.
    answer_headers: Vec<(String, String)>,
}

/// One MCP exchange through ext-proc, as Envoy sends it in lock-step: the host's POST of
/// `request`, then (if the door forwards it) the upstream's answer `upstream` with
/// `content_type`.
async fn exchange(
    address: &str,
    request: &[u8],
    upstream: &[u8],
    content_type: &str,
) -> Result<Seen, Failed> {
    let (_client, sender, mut replies) = open_stream(address).await?;
    let mut next = async |request: Step| -> Result<ProcessingResponse, Failed> {
        sender.send(step(request)).await?;
        Ok(replies
            .message()
            .await?
            .ok_or("the door ended the stream")?)
    };
    let mut seen = Seen::default();
    let immediate = |reply: &ProcessingResponse| match &reply.response {
        Some(Reply::ImmediateResponse(now)) => Some((
            now.status.as_ref().map_or(0, |status| status.code),
            now.body.clone(),
        )),
        _ => None,
    };
    let reply = next(Step::RequestHeaders(headers(
        &[
            (":method", "POST"),
            (":path", "/mcp"),
            ("content-type", "application/json"),
            ("x-caller", "alice"),
        ],
        false,
    )))
    .await?;
    if let Some(now) = immediate(&reply) {
        seen.immediate = Some(now);
        return Ok(seen);
    }
    let reply = next(Step::RequestBody(body(request))).await?;
    if let Some(now) = immediate(&reply) {
        seen.immediate = Some(now);
        return Ok(seen);
    }
    let Some(Reply::RequestBody(forwarded)) = reply.response else {
        return Err(format!("not a request body reply: {reply:?}").into());
    };
    seen.forwarded = Some(
        forwarded
            .response
            .and_then(|common| common.body_mutation)
            .and_then(|mutation| match mutation.mutation {
                Some(body_mutation::Mutation::Body(bytes)) => Some(bytes),
                _ => None,
            }),
    );
    let reply = next(Step::ResponseHeaders(headers(
        &[(":status", "200"), ("content-type", content_type)],
        false,
    )))
    .await?;
    if let Some(now) = immediate(&reply) {
        seen.immediate = Some(now);
        return Ok(seen);
    }
    let reply = next(Step::ResponseBody(body(upstream))).await?;
    let Some(Reply::ResponseBody(answered)) = reply.response else {
        return Err(format!("not a response body reply: {reply:?}").into());
    };
    let common = answered.response.unwrap_or_default();
    seen.answer_headers = common
        .header_mutation
        .map(|mutation| {
            mutation
                .set_headers
                .into_iter()
                .filter_map(|option| option.header)
                .map(|header| {
                    (
                        header.key,
                        String::from_utf8_lossy(&header.raw_value).into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    seen.answered = common
        .body_mutation
        .and_then(|mutation| match mutation.mutation {
            Some(body_mutation::Mutation::Body(bytes)) => Some(bytes),
            _ => None,
        });
    Ok(seen)
}

/// A stream as Envoy opens one (`held_stream`: its request headers sent and replied to).
type Held = (
    ExternalProcessorClient<tonic::transport::Channel>,
    tokio::sync::mpsc::Sender<ProcessingRequest>,
    tonic::Streaming<ProcessingResponse>,
);

async fn open_stream(address: &str) -> Result<Held, Failed> {
    let mut client = ExternalProcessorClient::connect(format!("http://{address}")).await?;
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    let replies = client
        .process(tokio_stream::wrappers::ReceiverStream::new(receiver))
        .await?
        .into_inner();
    Ok((client, sender, replies))
}

async fn held_stream(address: &str, pairs: &[(&str, &str)]) -> Result<Held, Failed> {
    let (client, sender, mut replies) = open_stream(address).await?;
    sender
        .send(step(Step::RequestHeaders(headers(pairs, false))))
        .await?;
    replies.message().await?.ok_or("no reply to the headers")?;
    Ok((client, sender, replies))
}

fn call(id: u64, city: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": city}}})
        .to_string()
        .into_bytes()
}

fn weather(city: &str, extra: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"CANARY prose"}}],"structuredContent":{{"city":"{city}","temperature_c":3.5,"conditions":"snow"{extra}}}}}}}"#
    )
    .into_bytes()
}

fn structured(answer: &[u8]) -> Value {
    let message: Value = serde_json::from_slice(answer).unwrap_or(Value::Null);
    message["result"]["structuredContent"].clone()
}

/// The upstream answers a tools/call through ext-proc in every way the proxy decides: admitted
/// (the projection, never the upstream's prose), an unpromised member, a duplicate key, a broken
/// binding, a JSON-RPC error, an SSE answer, arguments refused with nothing forwarded, a closed
/// route, an abandoned stream, an oversized body; every decision audited with the caller.
pub(crate) fn ext_proc_decides_every_answer_as_the_proxy() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let audit = dir.path().join("audit.jsonl");
    let door = start_door(
        "ext-proc",
        &root,
        &[
            "--context",
            context.to_str().unwrap(),
            "--audit",
            audit.to_str().unwrap(),
            "--caller-from",
            "header:x-caller",
            "--max-message-bytes",
            "4096",
            "--metrics",
            "127.0.0.1:0",
        ],
    )?;
    let address = door.address.clone();
    // Metrics name the door.
    let metrics_at = door
        .log
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .ok_or(format!("no metrics address in {}", door.log))?
        .to_owned();
    runtime().block_on(async move {
        let json = "application/json";
        // Admitted: the projection, as structuredContent and its text; the upstream's prose gone.
        let admitted = exchange(&address, &call(7, "Oslo"), &weather("Oslo", ""), json).await?;
        let answer = admitted.answered.clone().ok_or("no answer")?;
        let shown = String::from_utf8_lossy(&answer).into_owned();
        if structured(&answer) != json!({"outcome": "success", "data": {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}})
            && structured(&answer)["outcome"] != "success"
            || shown.contains("CANARY")
        {
            return Err(format!("admitted: {shown}").into());
        }
        let length = admitted
            .answer_headers
            .iter()
            .find(|(key, _)| key == "content-length")
            .map(|(_, value)| value.clone());
        if length != Some(answer.len().to_string()) {
            return Err(format!("content-length {length:?} for {} bytes", answer.len()).into());
        }
        // The arguments were rebuilt by the argument contract, so the body was replaced.
        if !matches!(&admitted.forwarded, Some(Some(_))) {
            return Err(format!("forwarded: {:?}", admitted.forwarded).into());
        }
        let refused = |seen: &Seen, what: &str| -> Result<(), Failed> {
            let answer = seen.answered.clone().ok_or(format!("{what}: no answer"))?;
            let text = String::from_utf8_lossy(&answer).into_owned();
            if structured(&answer)["outcome"] != "failure" || text.contains("CANARY") {
                return Err(format!("{what}: {text}").into());
            }
            Ok(())
        };
        let unpromised =
            exchange(&address, &call(7, "Oslo"), &weather("Oslo", r#","note":"CANARY""#), json)
                .await?;
        refused(&unpromised, "unpromised member")?;
        let duplicate = exchange(
            &address,
            &call(7, "Oslo"),
            &weather("Oslo", r#","city":"Oslo""#),
            json,
        )
        .await?;
        refused(&duplicate, "duplicate key")?;
        let bound = exchange(&address, &call(7, "Oslo"), &weather("Lisbon", ""), json).await?;
        refused(&bound, "binding broken")?;
        let error = exchange(
            &address,
            &call(7, "Oslo"),
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"CANARY boom"}}"#,
            json,
        )
        .await?;
        refused(&error, "upstream error")?;
        // An SSE answer: one event, the decided answer; the upstream's notification dropped.
        let mut events = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"CANARY\"}}\n\nevent: message\ndata: ".to_vec();
        events.extend_from_slice(&weather("Oslo", ""));
        events.extend_from_slice(b"\n\n");
        let sse = exchange(&address, &call(7, "Oslo"), &events, "text/event-stream").await?;
        let answer = sse.answered.clone().ok_or("sse: no answer")?;
        let text = String::from_utf8_lossy(&answer).into_owned();
        let data = text
            .strip_prefix("event: message\ndata: ")
            .and_then(|rest| rest.strip_suffix("\n\n"))
            .ok_or(format!("sse: {text}"))?;
        if structured(data.as_bytes())["outcome"] != "success" || text.contains("CANARY") {
            return Err(format!("sse: {text}").into());
        }
        // Arguments refused: answered at once with the tool's fixed failure, nothing forwarded.
        let paris = exchange(&address, &call(8, "Paris"), b"", json).await?;
        match &paris.immediate {
            Some((200, body)) if structured(body)["outcome"] == "failure" => {}
            other => return Err(format!("paris: {other:?} {:?}", paris.forwarded).into()),
        }
        // A closed route: refused at once.
        let closed = exchange(
            &address,
            br#"{"jsonrpc":"2.0","id":9,"method":"resources/list","params":{}}"#,
            b"",
            json,
        )
        .await?;
        match &closed.immediate {
            Some((200, body)) if String::from_utf8_lossy(body).contains("not available through toolgate") => {}
            other => return Err(format!("closed route: {other:?}").into()),
        }
        // An oversized answer: the fixed failure, not the bytes.
        let mut large = weather("Oslo", "");
        large.splice(
            large.len() - 3..large.len() - 3,
            format!(r#","pad":"{}""#, "x".repeat(5000)).into_bytes(),
        );
        let oversized = exchange(&address, &call(7, "Oslo"), &large, json).await?;
        refused(&oversized, "oversized")?;
        // A stream abandoned after its request was forwarded: the door serves the next one.
        {
            let (_client, sender, mut replies) =
                held_stream(&address, &[(":method", "POST"), ("x-caller", "alice")]).await?;
            sender.send(step(Step::RequestBody(body(&call(7, "Oslo"))))).await?;
            replies.message().await?;
        }
        let again = exchange(&address, &call(7, "Oslo"), &weather("Oslo", ""), json).await?;
        if structured(again.answered.as_deref().unwrap_or_default())["outcome"] != "success" {
            return Err(format!("after an abandoned stream: {again:?}").into());
        }
        Ok::<(), Failed>(())
    })?;
    let metrics = scrape(&metrics_at)?;
    if !metrics.contains("toolgate_door_info{door=\"ext-proc\"} 1")
        || !metrics.contains("toolgate_decisions_total")
    {
        return Err(format!("metrics:\n{metrics}").into());
    }
    drop(door);
    let lines = std::fs::read_to_string(&audit)?;
    let decisions: Vec<Value> = lines
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    if decisions.len() < 10 || !decisions.iter().all(|line| line["caller"] == "alice") {
        return Err(format!("audit:\n{lines}").into());
    }
    Ok(())
}

/// A gateway keeps its gRPC stream open between requests: on SIGTERM the door waits for it no
/// longer than `--drain-timeout`, says it cut it, and still flushes its audit log and exits 0.
pub(crate) fn sigterm_cuts_a_stream_held_open_at_the_drain_timeout() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = repository(dir.path());
    let audit = dir.path().join("audit.jsonl");
    let mut door = start_door(
        "ext-proc",
        &root,
        &["--drain-timeout", "1s", "--audit", audit.to_str().unwrap()],
    )?;
    let address = door.address.clone();
    let runtime = runtime();
    let held = runtime.block_on(async {
        // One decided exchange, so the audit log has a line to flush.
        let answer = weather("Lisbon", "");
        let seen = exchange(&address, &call(7, "Lisbon"), &answer, "application/json").await?;
        if seen.answered.is_none() {
            return Err(Failed::from(format!("not answered: {seen:?}")));
        }
        // Then a stream held open after its first message, as Envoy holds one.
        held_stream(
            &address,
            &[(":method", "POST"), ("content-type", "application/json")],
        )
        .await
    })?;
    super::lifecycle::signal(door.child.id(), "TERM");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = door.child.try_wait()? {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            return Err("the door still runs 20 s after SIGTERM with --drain-timeout 1s".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let waited = started.elapsed();
    drop(held);
    let rest = door
        .rest
        .lock()
        .map(|rest| rest.clone())
        .unwrap_or_default();
    if !status.success() || waited > std::time::Duration::from_secs(10) {
        return Err(format!("exited {status} after {waited:?}:\n{rest}").into());
    }
    if !rest.contains("they were cut (--drain-timeout)") {
        return Err(format!("the cut streams are not logged:\n{rest}").into());
    }
    let lines = std::fs::read_to_string(&audit)?;
    if lines.lines().count() != 1 {
        return Err(format!("the audit log is not flushed:\n{lines}").into());
    }
    Ok(())
}

/// agentgateway's hooks: CheckRequest passes, rewrites (the arguments contract's projection)
/// or refuses; CheckResponse answers `mutated` with the gate's result (byte for byte what
/// ext-proc gives), or refuses a call whose tool the metadata does not name.
pub(crate) fn ext_mcp_decides_as_ext_proc() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let args = ["--context", context.to_str().unwrap()];
    let ext_mcp = start_door("ext-mcp", &root, &args)?;
    let ext_proc = start_door("ext-proc", &root, &args)?;
    runtime().block_on(async move {
        let mut client = ExtMcpClient::connect(format!("http://{}", ext_mcp.address)).await?;
        let metadata = |tool: Option<&str>| {
            let mut fields = std::collections::BTreeMap::new();
            if let Some(tool) = tool {
                fields.insert(
                    "tool".to_owned(),
                    prost_types::Value {
                        kind: Some(prost_types::value::Kind::StringValue(tool.to_owned())),
                    },
                );
            }
            // The call's arguments, which the weather contract's binding reads.
            fields.insert(
                "arguments".to_owned(),
                prost_types::Value {
                    kind: Some(prost_types::value::Kind::StructValue(prost_types::Struct {
                        fields: [(
                            "city".to_owned(),
                            prost_types::Value {
                                kind: Some(prost_types::value::Kind::StringValue(
                                    "Oslo".to_owned(),
                                )),
                            },
                        )]
                        .into(),
                    })),
                },
            );
            fields.insert(
                "requestId".to_owned(),
                prost_types::Value {
                    kind: Some(prost_types::value::Kind::NumberValue(7.0)),
                },
            );
            Some(prost_types::Struct { fields })
        };
        let asked = |city: &str| McpRequest {
            method: "tools/call".to_owned(),
            mcp_request: Some(
                json!({"name": "weather", "arguments": {"city": city, "units": "metric", "x": 1}})
                    .to_string()
                    .into_bytes(),
            ),
            metadata_context: metadata(Some("weather")),
            ..Default::default()
        };
        let oslo = client.check_request(asked("Oslo")).await?.into_inner();
        match oslo.result {
            Some(mcp_request_result::Result::Mutated(params)) => {
                let params: Value = serde_json::from_slice(&params)?;
                if params["arguments"] != json!({"city": "Oslo", "units": "metric"})
                    && params["arguments"] != json!({"city": "Oslo"})
                {
                    return Err(format!("mutated: {params}").into());
                }
            }
            other => return Err(format!("oslo: {other:?}").into()),
        }
        let paris = client.check_request(asked("Paris")).await?.into_inner();
        if !matches!(paris.result, Some(mcp_request_result::Result::Error(_))) {
            return Err(format!("paris: {paris:?}").into());
        }
        let result = |upstream: &[u8]| -> Vec<u8> {
            let message: Value = serde_json::from_slice(upstream).unwrap();
            message["result"].to_string().into_bytes()
        };
        for (what, upstream) in [
            ("admitted", weather("Oslo", "")),
            ("unpromised", weather("Oslo", r#","note":"CANARY""#)),
            ("bound", weather("Lisbon", "")),
        ] {
            let checked = client
                .check_response(McpResponse {
                    method: "tools/call".to_owned(),
                    metadata_context: metadata(Some("weather")),
                    mcp_response: result(&upstream),
                    ..Default::default()
                })
                .await?
                .into_inner();
            let Some(mcp_response_result::Result::Mutated(mutated)) = checked.result else {
                return Err(format!("{what}: {checked:?}").into());
            };
            let proc = exchange(
                &ext_proc.address,
                &call(7, "Oslo"),
                &upstream,
                "application/json",
            )
            .await?;
            // The same result, byte for byte, inside ext-proc's answer.
            let through_proc = proc.answered.unwrap_or_default();
            let mut expected = br#"{"jsonrpc":"2.0","id":7,"result":"#.to_vec();
            expected.extend_from_slice(&mutated);
            expected.push(b'}');
            let mutated_text = String::from_utf8_lossy(&mutated).into_owned();
            if through_proc != expected || mutated_text.contains("CANARY") {
                return Err(format!(
                    "{what}: ext-mcp {mutated_text} ext-proc {}",
                    String::from_utf8_lossy(&through_proc)
                )
                .into());
            }
            let outcome =
                serde_json::from_slice::<Value>(&mutated)?["structuredContent"]["outcome"].clone();
            if outcome
                != if what == "admitted" {
                    "success"
                } else {
                    "failure"
                }
            {
                return Err(format!("{what}: {mutated_text}").into());
            }
        }
        let nameless = client
            .check_response(McpResponse {
                method: "tools/call".to_owned(),
                metadata_context: metadata(None),
                mcp_response: result(&weather("Oslo", "")),
                ..Default::default()
            })
            .await?
            .into_inner();
        if !matches!(nameless.result, Some(mcp_response_result::Result::Error(_))) {
            return Err(format!("nameless: {nameless:?}").into());
        }
        Ok::<(), Failed>(())
    })
}
