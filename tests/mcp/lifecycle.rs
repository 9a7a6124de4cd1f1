//! The proxy's life as an orchestrator runs it: SIGTERM drains (the call in flight answered,
//! `/readyz` 503 first; a call cut by the deadline answered not retryable), SIGHUP reloads, never stops
//! it. Each test runs the real binary in front of the fake server.

use std::process::Command;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::json;

use super::http::{fake_http, listening_proxy};
use super::listener::{
    answer_of, eventually, healthz, modern_call, proxy, scenario, status_of, weather,
};

/// Sends `signal` (`TERM`, `HUP`) to the process `pid`.
pub(crate) fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status();
}

fn readyz(address: &str) -> Option<u16> {
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    status_of(
        &mut stream,
        b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
}

/// Everything the proxy wrote on stderr until it exited.
fn rest_of(lines: &std::sync::mpsc::Receiver<String>) -> String {
    let mut text = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(30)) {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// SIGTERM with a 3 s call in flight: `/readyz` answers 503 at once while new connections are
/// still served (`--drain-min`), the call gets its admitted result (its tool ran to the end
/// upstream: a retryable failure would have an agent run it twice), and the process exits 0
/// with a line saying what it drained.
pub(crate) fn sigterm_answers_the_call_in_flight_and_readyz_goes_503_first() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut slow = weather("Lisbon");
    slow["delay_ms"] = json!(3000);
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [slow]}));
    let (mut running, address, lines) = proxy(
        &["--drain-min", "2s", "--drain-timeout", "20s"],
        &scenario,
        &log,
    )?;
    if readyz(&address) != Some(200) {
        return Err("ready before the signal".into());
    }
    let call = {
        let address = address.clone();
        std::thread::spawn(move || answer_of(&address, &modern_call(1, "Lisbon", false)))
    };
    std::thread::sleep(Duration::from_millis(500));
    signal(running.0.id(), "TERM");
    if !eventually(Duration::from_millis(1500), || {
        readyz(&address) == Some(503)
    }) {
        return Err("/readyz does not answer 503 within the drain's minimum".into());
    }
    let answer = call.join().unwrap();
    if !answer.contains("\"outcome\":\"success\"") {
        return Err(format!("the call in flight is not answered with its result: {answer}").into());
    }
    let status = running.0.wait()?;
    let stderr = rest_of(&lines);
    if !status.success() {
        return Err(format!("the proxy exits {status} after draining:\n{stderr}").into());
    }
    // The one configuration line at start says what runs.
    if !stderr.contains("configuration: no auth (loopback); audit off; retention off; mode enforce; no shadow; metrics kept; traces off; 3 contract(s) from folder ") || !stderr.contains(": get-structured-content v1") {
        return Err(format!("no configuration line at start:\n{stderr}").into());
    }
    if !stderr.contains("drained in")
        || !stderr.contains("the 1 call(s) in flight at the signal were answered")
    {
        return Err(format!("no line says what was drained:\n{stderr}").into());
    }
    Ok(())
}

/// A call still out at the drain deadline is answered with a failure that is not retryable:
/// its request reached the upstream, which may run it to the end.
pub(crate) fn a_call_cut_by_the_drain_deadline_is_not_retryable() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut slow = weather("Lisbon");
    slow["delay_ms"] = json!(8000);
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [slow]}));
    let (mut running, address, lines) = proxy(&["--drain-timeout", "1s"], &scenario, &log)?;
    let call = {
        let address = address.clone();
        std::thread::spawn(move || answer_of(&address, &modern_call(1, "Lisbon", false)))
    };
    std::thread::sleep(Duration::from_millis(500));
    signal(running.0.id(), "TERM");
    let answer = call.join().unwrap();
    if !answer.contains("\"code\":\"INVALID_RESPONSE\"") || !answer.contains("\"retryable\":false")
    {
        return Err(format!("the cut call is not answered as not retryable: {answer}").into());
    }
    let status = running.0.wait()?;
    let stderr = rest_of(&lines);
    if !status.success() || !stderr.contains("1 still out at the deadline") {
        return Err(format!("the drain does not say what it cut ({status}):\n{stderr}").into());
    }
    Ok(())
}

/// SIGHUP (a closed terminal, a supervisor's reload habit) never stops the proxy: it reloads
/// the contracts, and serving goes on.
pub(crate) fn sighup_never_stops_the_proxy() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": [weather("Lisbon")]}),
    );
    let (mut running, address, lines) = proxy(&[], &scenario, &log)?;
    signal(running.0.id(), "HUP");
    let mut said = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        if line.contains("SIGHUP") {
            said = line;
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    if running.0.try_wait()?.is_some() || healthz(&address) != Some(200) {
        return Err("the proxy stopped at SIGHUP".into());
    }
    if !said.contains("contracts reloaded (SIGHUP)") {
        return Err(format!("SIGHUP is not said: {said}").into());
    }
    let answer = answer_of(&address, &modern_call(1, "Lisbon", false));
    if !answer.contains("\"outcome\":\"success\"") {
        return Err(format!("a call after SIGHUP: {answer}").into());
    }
    Ok(())
}

/// Waits for a line of the proxy's stderr holding `wanted`; the lines read until then.
fn wait_for(lines: &std::sync::mpsc::Receiver<String>, wanted: &str) -> Result<String, String> {
    let mut seen = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(20)) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(wanted) {
            return Ok(seen);
        }
    }
    Err(format!("no line says {wanted:?}:\n{seen}"))
}

/// A stdio upstream that exits is logged with its status and started again
/// (`--upstream-restart`): the call it dropped fails retryable (it may be made again), and once
/// its session is open again calls are answered.
pub(crate) fn a_stdio_upstream_that_exits_is_logged_and_started_again() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut crashing = weather("Lisbon");
    crashing["crash_once"] = json!(true);
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": [crashing, weather("Lisbon")]}),
    );
    let (_running, address, lines) = proxy(&["--upstream-restart", "2"], &scenario, &log)?;
    let dropped = answer_of(&address, &modern_call(1, "Lisbon", false));
    if !dropped.contains("UPSTREAM_UNAVAILABLE") || !dropped.contains("\"retryable\":true") {
        return Err(format!("the dropped call: {dropped}").into());
    }
    let said = wait_for(&lines, "the upstream is running again")?;
    for wanted in [
        "the upstream exited with status 3",
        "starting the upstream again in 500ms",
    ] {
        if !said.contains(wanted) {
            return Err(format!("no line says {wanted:?}:\n{said}").into());
        }
    }
    let answer = answer_of(&address, &modern_call(2, "Lisbon", false));
    if !answer.contains("\"outcome\":\"success\"") {
        return Err(format!("a call to the restarted upstream: {answer}").into());
    }
    Ok(())
}

/// An upstream gone for good: without `--exit-with-upstream`, `/healthz` fails once it has
/// been gone past `--timeout` (an orchestrator then restarts the pod); with it, the proxy exits
/// with status 3 for its supervisor.
pub(crate) fn an_upstream_gone_for_good_fails_healthz_or_ends_the_proxy() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut crashing = weather("Lisbon");
    crashing["crash"] = json!(true);
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [crashing]}));
    let (mut staying, address, lines) = proxy(&["--timeout", "2s"], &scenario, &log)?;
    answer_of(&address, &modern_call(1, "Lisbon", false));
    wait_for(&lines, "gone for good")?;
    if healthz(&address) != Some(200) {
        return Err("/healthz fails before the bound".into());
    }
    if !eventually(Duration::from_secs(6), || healthz(&address) == Some(503)) {
        return Err("/healthz still answers 200 with the upstream gone past --timeout".into());
    }
    if staying.0.try_wait()?.is_some() {
        return Err("the proxy exited without --exit-with-upstream".into());
    }
    let (mut exiting, address, lines) = proxy(&["--exit-with-upstream"], &scenario, &log)?;
    answer_of(&address, &modern_call(1, "Lisbon", false));
    let status = exiting.0.wait()?;
    let said = rest_of(&lines);
    if status.code() != Some(3) || !said.contains("exits with status 3") {
        return Err(format!("the proxy ends {status}:\n{said}").into());
    }
    Ok(())
}

/// A stateful HTTP upstream that restarted answers the old session with `400` naming it
/// (server-everything's Streamable HTTP), not `404`: the proxy opens a new session and sends
/// the call again. One that will not open a new session leaves `/readyz` at 503.
pub(crate) fn a_restarted_stateful_http_upstream_is_initialized_again() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let calls = json!({"weather": [weather("Lisbon"), weather("Lisbon"), weather("Lisbon")]});
    let server =
        json!({"stateful": true, "forget_session_after_calls": 1, "stale_session_status": 400});
    let forgetting = scenario(dir.path(), server, calls.clone());
    let (_server, upstream) = fake_http(&forgetting, &log);
    let (_proxy, address, lines) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    for id in 1..=2 {
        let answer = answer_of(&address, &modern_call(id, "Lisbon", false));
        if !answer.contains("\"outcome\":\"success\"") {
            return Err(format!("call {id} after the server forgot its session:\n{answer}").into());
        }
    }
    wait_for(
        &lines,
        "no longer knows the session (400 naming the session)",
    )?;
    if readyz(&address) != Some(200) {
        return Err("not ready in the new session".into());
    }

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let server = json!({"stateful": true, "forget_session_after_calls": 1, "stale_session_status": 400, "sessions_allowed": 1});
    let refusing = scenario(dir.path(), server, calls);
    let (_server, upstream) = fake_http(&refusing, &log);
    let (_proxy, address, _) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    answer_of(&address, &modern_call(1, "Lisbon", false));
    let failed = answer_of(&address, &modern_call(2, "Lisbon", false));
    if failed.contains("\"outcome\":\"success\"") {
        return Err(format!("a call without a session succeeded: {failed}").into());
    }
    // The failed call marks the upstream unready; a loaded machine may answer the probe first.
    if !eventually(Duration::from_secs(10), || readyz(&address) == Some(503)) {
        return Err("/readyz answers 200 while every call fails for want of a session".into());
    }
    // And it stays so: the probes (every 2 s), and every call after, ask for a session first,
    // which the server refuses, instead of reading its refusal of a sessionless request as
    // answering again (a call sent so once made /readyz flap back to 200).
    let again = answer_of(&address, &modern_call(3, "Lisbon", false));
    if again.contains("\"outcome\":\"success\"") {
        return Err(format!("a call without a session succeeded: {again}").into());
    }
    std::thread::sleep(Duration::from_secs(3));
    if readyz(&address) != Some(503) {
        return Err("/readyz answers 200 again while the server still opens no session".into());
    }
    Ok(())
}

/// Observe mode, as the first days in front of a server nobody contracted yet: the host is
/// served the upstream's own listing (every tool, its own schemas, so an SDK that checks results
/// against a tool's output schema accepts the raw results), a contracted tool's call is decided
/// and audited and its result passed unchanged, and a tool without a contract is called as the
/// upstream serves it, counted as `toolgate_no_contract_calls_total`.
pub(crate) fn observe_mode_serves_the_upstreams_own_tools() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let tools = json!([
        {"name": "weather", "description": "CANARY the server's own words", "inputSchema": {"type": "object"},
         "outputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
        {"name": "echo", "inputSchema": {"type": "object"}}
    ]);
    let mut refused = weather("Lisbon");
    refused["result"]["structuredContent"]["note"] = json!("a member no contract promises");
    let echoed = json!({"result": {"content": [{"type": "text", "text": "Echo: hello"}]}});
    let scenario = scenario(
        dir.path(),
        json!({"tools": tools}),
        json!({"weather": [refused.clone()], "echo": [echoed.clone()]}),
    );
    let audit = dir.path().join("audit.jsonl");
    let (_running, address, _) = proxy(
        &["--mode", "observe", "--audit", audit.to_str().unwrap()],
        &scenario,
        &log,
    )
    .map_err(|error| Failed::from(format!("{error:?}")))?;
    let result_of = |request: &str| -> Result<serde_json::Value, Failed> {
        let answer = answer_of(&address, request);
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        let message: serde_json::Value = serde_json::from_str(body)
            .map_err(|error| Failed::from(format!("{error}: {answer}")))?;
        Ok(message["result"].clone())
    };
    let (body, headers) = super::http::modern(1, "tools/list", json!({}));
    let listed = result_of(&super::listener::post_text(&body.to_string(), &headers))?;
    if listed["tools"] != tools {
        return Err(format!("not the upstream's own listing: {listed}").into());
    }
    let called = result_of(&modern_call(2, "Lisbon", false))?;
    if called["structuredContent"] != refused["result"]["structuredContent"] {
        return Err(
            format!("the contracted tool's result is not passed unchanged: {called}").into(),
        );
    }
    let (body, headers) = super::http::modern(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hello"}}),
    );
    let echo = result_of(&super::listener::post_text(&body.to_string(), &headers))?;
    if echo["content"] != echoed["result"]["content"] {
        return Err(format!("a tool without a contract is not passed: {echo}").into());
    }
    let audited = std::fs::read_to_string(&audit).unwrap_or_default();
    if audited.lines().count() != 1 || !audited.contains("\"mode\":\"observe\"") {
        return Err(format!("only the contracted call is audited, as observed:\n{audited}").into());
    }
    let mut stream = std::net::TcpStream::connect(&address)?;
    std::io::Write::write_all(
        &mut stream,
        b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )?;
    let mut metrics = String::new();
    std::io::Read::read_to_string(&mut stream, &mut metrics)?;
    if !metrics.contains("toolgate_no_contract_calls_total 1") {
        return Err(format!("the uncontracted call is not counted:\n{metrics}").into());
    }
    Ok(())
}

/// A TCP proxy in front of `upstream` that holds each request starting `PUT ` back 40 ms, as a
/// distant S3 endpoint does: its address.
fn slow_puts(upstream: std::net::SocketAddr) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let requests = async move {
                        let mut buffer = vec![0u8; 64 * 1024];
                        while let Ok(read) = client_read.read(&mut buffer).await {
                            if read == 0 {
                                break;
                            }
                            if buffer[..read].starts_with(b"PUT ") {
                                tokio::time::sleep(Duration::from_millis(40)).await;
                            }
                            if server_write.write_all(&buffer[..read]).await.is_err() {
                                break;
                            }
                        }
                        let _ = server_write.shutdown().await;
                    };
                    let answers = async move {
                        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                    };
                    tokio::join!(requests, answers);
                });
            }
        });
    });
    address
}

/// A burst of refusals retained to an S3 store that takes 40 ms per `PUT` (moto's server behind
/// a delaying proxy): when the host leaves, everything offered is kept within the stop's
/// deadline, or counted as lost or dropped, never lost silently; what the line says was kept is
/// what the bucket holds. Skipped without an S3-compatible server (`.ci/run` starts one).
pub(crate) fn a_retention_burst_to_a_slow_store_is_kept_or_counted() -> Result<(), Failed> {
    let Ok(endpoint) = std::env::var("TOOLGATE_S3_ENDPOINT") else {
        if std::env::var("TOOLGATE_REQUIRE_S3").as_deref() == Ok("1") {
            return Err("TOOLGATE_REQUIRE_S3=1 but no TOOLGATE_S3_ENDPOINT".into());
        }
        eprintln!("skipped: no S3-compatible server (TOOLGATE_S3_ENDPOINT is not set)");
        return Ok(());
    };
    let bucket = std::env::var("TOOLGATE_S3_BUCKET").unwrap_or_else(|_| "evidence".into());
    let moto: std::net::SocketAddr = endpoint
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()?;
    let slow = format!("http://{}", slow_puts(moto));
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!(
        "burst-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos()
    );
    const CALLS: usize = 400;
    let mut refused = weather("Lisbon");
    refused["result"]["structuredContent"]["note"] = json!("a member no contract promises");
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": vec![refused; CALLS]}),
    );
    let args: Vec<String> = [
        "--retain",
        &format!("s3://{bucket}/{prefix}"),
        "--retain-endpoint",
        &slow,
    ]
    .map(str::to_owned)
    .to_vec();
    let proxy = super::start_proxy_at(&super::here(), &scenario, &dir.path().join("log"), &args);
    let mut messages = vec![super::retention::initialize()];
    for id in 1..=CALLS as u64 {
        messages.push(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}}));
    }
    let (_, stderr) = super::retention::stdio_session(proxy, &messages)?;
    let line = stderr
        .lines()
        .find(|line| line.contains("retention: kept"))
        .ok_or_else(|| format!("no line says what retention kept:\n{stderr}"))?;
    let number_after = |word: &str| -> u64 {
        line.split(word)
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or(u64::MAX / 8)
    };
    let number_before = |word: &str| -> u64 {
        line.split(word)
            .next()
            .and_then(|before| before.rsplit(' ').next())
            .and_then(|number| number.parse().ok())
            .unwrap_or(u64::MAX / 8)
    };
    let (kept, failed, dropped, lost) = (
        number_after("kept "),
        number_before(" failed"),
        number_before(" dropped"),
        number_before(" lost"),
    );
    if kept + dropped + lost + failed != CALLS as u64 {
        return Err(format!("{CALLS} refusals offered, {kept} kept, {dropped} dropped, {lost} lost, {failed} failed:\n{line}").into());
    }
    let store = toolgate_store::S3Store::open(&bucket, &prefix, Some(&endpoint))?;
    let held = toolgate_store::Store::list(&store, "")?.len() as u64;
    if held != kept {
        return Err(format!("the line says {kept} kept, the bucket holds {held}:\n{line}").into());
    }
    Ok(())
}

/// `--contracts BUNDLE`: the proxy serves from a bundle of its contracts (`toolgate bundle`) the
/// same answers as from the folder, and its configuration line names the bundle and its digest.
pub(crate) fn the_proxy_serves_a_bundle_as_it_serves_its_folder() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let bundle = crate::common::bundled_mcp_contracts(dir.path());
    let scenario = crate::retention::scenario(dir.path());
    let mut answers = Vec::new();
    for root in [crate::here(), bundle.clone()] {
        let proxy = crate::start_proxy_at(&root, &scenario, &dir.path().join("log"), &[]);
        let (got, stderr) = crate::retention::stdio_session(
            proxy,
            &[
                crate::retention::initialize(),
                crate::retention::weather_call(1),
                crate::retention::weather_call(2),
            ],
        )?;
        if root == bundle && !stderr.contains(&format!("from bundle {}", bundle.display())) {
            return Err(
                format!("the configuration line does not name the bundle:\n{stderr}").into(),
            );
        }
        answers.push(got);
    }
    if answers[0] != answers[1] || answers[0][1]["result"]["structuredContent"].is_null() {
        return Err(format!("the folder and the bundle answer differently: {answers:?}").into());
    }
    Ok(())
}

/// `--enforce weather=v1` with v2 published: the call v2 refuses (Lisbon at 21.5, over v2's
/// bound) is admitted as v1 admits it, and the configuration line says which version runs.
pub(crate) fn enforce_rolls_a_tool_back_to_an_older_version() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let root = crate::retention::repository_with_bump(dir.path());
    let scenario = crate::retention::scenario(dir.path());
    let mut outcomes = Vec::new();
    for flags in [
        vec![],
        vec!["--enforce".to_owned(), "weather=v1".to_owned()],
    ] {
        let proxy = crate::start_proxy_at(&root, &scenario, &dir.path().join("log"), &flags);
        let (answers, stderr) = crate::retention::stdio_session(
            proxy,
            &[
                crate::retention::initialize(),
                crate::retention::weather_call(1),
            ],
        )?;
        let enforced = if flags.is_empty() {
            "no shadow"
        } else {
            "rollout weather v1 enforced"
        };
        if !stderr.contains(enforced) {
            return Err(
                format!("the configuration line does not say {enforced:?}:\n{stderr}").into(),
            );
        }
        outcomes.push(answers[1]["result"]["structuredContent"]["outcome"].clone());
    }
    if outcomes != [json!("failure"), json!("success")] {
        return Err(format!("v2 refuses and v1, enforced, admits: {outcomes:?}").into());
    }
    Ok(())
}

/// One root per upstream: two servers that both offer `weather` are fronted by two proxies, each
/// with a repository of its own, and each call is decided by its own server's contract (the
/// second's bounds the temperature at 20, so the same answer is admitted by one and refused
/// by the other). The guide's "One repository per upstream" shows the same two commands.
pub(crate) fn two_upstreams_with_one_tool_name_get_a_root_each() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let strict = crate::retention::repository(&dir.path().join("strict"));
    let schema = strict.join("contracts/weather/v1/weather.schema.json");
    let text = std::fs::read_to_string(&schema)?;
    std::fs::write(&schema, text.replace("\"maximum\": 60", "\"maximum\": 20"))?;
    let scenario = crate::retention::scenario(dir.path());
    let mut outcomes = Vec::new();
    for root in [crate::here(), strict] {
        let proxy = crate::start_proxy_at(&root, &scenario, &dir.path().join("log"), &[]);
        let (answers, _) = crate::retention::stdio_session(
            proxy,
            &[
                crate::retention::initialize(),
                crate::retention::weather_call(1),
            ],
        )?;
        outcomes.push(answers[1]["result"]["structuredContent"]["outcome"].clone());
    }
    if outcomes != [json!("success"), json!("failure")] {
        return Err(format!("each upstream's own contract decides its calls: {outcomes:?}").into());
    }
    Ok(())
}
