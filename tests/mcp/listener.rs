//! The HTTP listener under attack, and the revision's behaviour over HTTP: what a client can
//! hold (connections, heads, bodies, memory, time), a stdio upstream that stops reading, an
//! SSE stream nobody reads, cancellation in both eras, an HTTP upstream that refuses the era
//! probe, forgets its session, goes down, or answers one request with too much. Each test is a
//! regression test of one defect (RELIABILITY.md, "The HTTP listener").

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::http::{Running, fake_http, listening_proxy, modern};
use super::{LOG_VARIABLE, SCENARIO_VARIABLE};

/// A handshake-era server with the weather tool, and what it does for each call.
pub(crate) fn scenario(dir: &Path, server: Value, calls: Value) -> PathBuf {
    let mut base = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
        "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]
    });
    for (key, value) in server.as_object().into_iter().flatten() {
        base[key] = value.clone();
    }
    let path = dir.join("scenario.json");
    std::fs::write(&path, json!({"server": base, "calls": calls}).to_string()).unwrap();
    path
}

pub(crate) fn weather(city: &str) -> Value {
    json!({"result": {"content": [], "structuredContent": {"city": city, "temperature_c": 21.5, "conditions": "clear"}}})
}

/// The proxy listening in front of the fake stdio server replaying `scenario`.
pub(crate) fn proxy(
    extra: &[&str],
    scenario: &Path,
    log: &Path,
) -> Result<(Running, String, std::sync::mpsc::Receiver<String>), Failed> {
    listening_proxy(
        extra,
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
            // Observe mode is refused in CI; a test that observes is no pipeline.
            ("CI", "false"),
        ],
    )
}

/// A raw HTTP/1.1 POST of `body` to `/mcp` with `headers`, as bytes.
pub(crate) fn post_text(body: &str, headers: &[(String, String)]) -> String {
    let mut text = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text
}

/// A modern call of the weather tool, as an HTTP request.
pub(crate) fn modern_call(id: u64, city: &str, progress: bool) -> String {
    let mut params = json!({"name": "weather", "arguments": {"city": city}});
    if progress {
        params["_meta"] = json!({"progressToken": "p"});
    }
    let (body, headers) = modern(id, "tools/call", params);
    post_text(&body.to_string(), &headers)
}

pub(crate) fn connect(address: &str) -> TcpStream {
    let stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// The status of the first response on `stream`, after writing `request`.
pub(crate) fn status_of(stream: &mut TcpStream, request: &[u8]) -> Option<u16> {
    stream.write_all(request).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let line = String::from_utf8_lossy(&head);
    line.split(' ').nth(1)?.parse().ok()
}

/// The whole response on `stream` to `request` (the connection is closed by the proxy or by
/// `Connection: close`).
/// The `Mcp-Session-Id` an answer to a handshake-era `initialize` carries.
pub(crate) fn session_id(answer: &str) -> Result<String, Failed> {
    answer
        .lines()
        .find_map(|line| {
            line.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| line.split_once(':').unwrap().1.trim().to_owned())
        })
        .ok_or_else(|| format!("initialize answered with a session: {answer}").into())
}

pub(crate) fn answer_of(address: &str, request: &str) -> String {
    let mut stream = connect(address);
    let request = request.replacen("\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1);
    stream.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

pub(crate) fn healthz(address: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    status_of(
        &mut stream,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
}

/// Whether the peer closes `stream` within `within` (a read gives end of file or an error).
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buffer = [0u8; 256];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(error) => {
                return !matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

/// A process's resident memory, in KiB.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A process's CPU time so far (user and system), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its `)`.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |index: usize| {
        fields
            .get(index)
            .and_then(|value| value.parse::<u64>().ok())
    };
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

/// Waits up to `within` for `log` to hold `text`.
pub(crate) fn log_holds(log: &Path, text: &str, within: Duration) -> bool {
    eventually(within, || {
        std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains(text)
    })
}

/// Whether `holds` comes true within `within` (asked every 50 ms).
pub(crate) fn eventually(within: Duration, mut holds: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if holds() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A connection that sends nothing is closed after the idle timeout, one that sends half a
/// head after the header timeout, and the listener answers `/healthz` all along. Idle
/// connections used to be held forever.
pub(crate) fn idle_and_slow_heads_are_closed() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({}));
    let (_proxy, address, _) = proxy(
        &["--idle-timeout", "1s", "--header-timeout", "500ms"],
        &scenario,
        &log,
    )?;
    let mut idle = connect(&address);
    let mut slow = connect(&address);
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .unwrap();
    if healthz(&address) != Some(200) {
        return Err("/healthz is answered while others sit".into());
    }
    let started = Instant::now();
    if !closed_within(&mut slow, Duration::from_secs(10)) {
        return Err("a connection that sends half a head is closed".into());
    }
    if !closed_within(&mut idle, Duration::from_secs(10)) {
        return Err("a connection that sends nothing is closed".into());
    }
    // The slow head went first, and neither was closed before its bound.
    if started.elapsed() < Duration::from_millis(400) {
        return Err(format!("closed too early: {:?}", started.elapsed()).into());
    }
    // A kept-alive connection serves one request after another within the idle timeout.
    let mut kept = connect(&address);
    for _ in 0..2 {
        if status_of(
            &mut kept,
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ) != Some(200)
        {
            return Err("a kept-alive connection serves its next request".into());
        }
        let mut rest = [0u8; 128];
        let _ = kept.read(&mut rest);
    }
    Ok(())
}

/// Past `--max-connections`, a connection is answered 503 and closed (the listener used to
/// hold every one, and at the descriptor limit served nobody).
pub(crate) fn past_the_connection_cap_a_connection_gets_503() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({}));
    let (_proxy, address, _) = proxy(&["--max-connections", "3"], &scenario, &log)?;
    let held: Vec<TcpStream> = (0..3).map(|_| connect(&address)).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut one_more = connect(&address);
    let status = status_of(
        &mut one_more,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    if status != Some(503) {
        return Err(format!("past the cap: {status:?}, expected 503").into());
    }
    drop(held);
    if !eventually(Duration::from_secs(10), || healthz(&address) == Some(200)) {
        return Err("a closed connection frees its place".into());
    }
    Ok(())
}

/// At the descriptor limit, accepting fails: the loop backs off (it used to spin at up to 75 %
/// of a core and write a million lines in 6 s), logs a line a second at most, and serves again
/// once descriptors are free.
pub(crate) fn at_the_descriptor_limit_accepting_backs_off() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({}));
    let program = env!("CARGO_BIN_EXE_toolgate");
    let server = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 48 && exec "$0" mcp-proxy --root "$1" --listen 127.0.0.1:0 -- "$2""#)
        .arg(program)
        .arg(super::here())
        .arg(&server)
        .env(SCENARIO_VARIABLE, &scenario)
        .env(LOG_VARIABLE, &log)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let read = super::line_channel(child.stderr.take().unwrap());
    let running = Running(child);
    let address = loop {
        let line = read
            .recv_timeout(Duration::from_secs(20))
            .map_err(|_| "the proxy never said where it listens")?;
        if let Some(rest) = line.strip_prefix("toolgate mcp-proxy: listening on http://") {
            break rest.trim_end_matches("/mcp").to_owned();
        }
    };
    // More connections than descriptors: the kernel queues what the proxy cannot accept.
    let held: Vec<TcpStream> = (0..80)
        .filter_map(|_| TcpStream::connect(&address).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(pid);
    let watched = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let ticks = cpu_ticks(pid) - before;
    let logged = read
        .try_iter()
        .filter(|line| line.contains("accepting a connection failed"))
        .count();
    // Clock ticks are 1/100 s: spinning would be ~300 in 3 s.
    if ticks > 60 {
        return Err(format!(
            "{ticks} ticks of CPU in {:?} at the descriptor limit",
            watched.elapsed()
        )
        .into());
    }
    if logged > 5 {
        return Err(
            format!("{logged} accept-failure lines in 3 s: rate-limited to one a second").into(),
        );
    }
    drop(held);
    if !eventually(Duration::from_secs(15), || healthz(&address) == Some(200)) {
        return Err("serves again once descriptors are free".into());
    }
    drop(running);
    Ok(())
}

/// A body that stalls is answered 408 after `--body-timeout`; a request that cannot get its
/// turn (every one of `--max-requests-in-flight` held) is answered 503 after as long.
pub(crate) fn stalled_bodies_time_out_and_requests_in_flight_are_capped() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // The first call stalls upstream, holding its turn until --timeout.
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [{"stall": true}]}));
    let (_proxy, address, _) = proxy(
        &[
            "--body-timeout",
            "1s",
            "--max-requests-in-flight",
            "1",
            "--timeout",
            "20s",
        ],
        &scenario,
        &log,
    )?;
    // A body that never finishes.
    let mut stalled = connect(&address);
    stalled
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
        .unwrap();
    let started = Instant::now();
    let status = status_of(&mut stalled, b"");
    if status != Some(408) || started.elapsed() < Duration::from_millis(900) {
        return Err(format!(
            "a stalled body: {status:?} after {:?}, expected 408 after 1 s",
            started.elapsed()
        )
        .into());
    }
    // A call that waits on the upstream holds the one turn; the next request waits, then 503.
    let call = modern_call(1, "Lisbon", false);
    let address_for_call = address.clone();
    let _holder = std::thread::spawn(move || answer_of(&address_for_call, &call));
    assert!(
        log_holds(&log, "tools/call", Duration::from_secs(10)),
        "the call reached the upstream"
    );
    let (body, headers) = modern(2, "tools/list", json!({}));
    let waited = Instant::now();
    let answer = answer_of(&address, &post_text(&body.to_string(), &headers));
    if !answer.starts_with("HTTP/1.1 503") || waited.elapsed() < Duration::from_millis(900) {
        return Err(format!("without a turn: {answer:?} after {:?}", waited.elapsed()).into());
    }
    Ok(())
}

/// Many slow clients, each sending most of a large body: the proxy reads at most
/// `--max-requests-in-flight` bodies at once, so its memory stays bounded by its configuration
/// (150 such clients used to add 254-280 MiB, past the shipped pod's limit).
pub(crate) fn memory_stays_bounded_under_slow_bodies() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({}));
    let (proxy, address, _) = proxy(
        &[
            "--max-requests-in-flight",
            "4",
            "--body-timeout",
            "20s",
            "--max-line-bytes",
            "2000000",
        ],
        &scenario,
        &log,
    )?;
    let pid = proxy.0.id();
    std::thread::sleep(Duration::from_millis(300));
    let before = resident_kib(pid);
    let chunk = vec![b' '; 1_400_000];
    let mut clients = Vec::new();
    for _ in 0..60 {
        let mut stream = connect(&address);
        stream
            .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1500000\r\n\r\n")
            .unwrap();
        stream.set_nonblocking(true).unwrap();
        // As much of the body as the socket takes now; the rest of it never comes.
        let _ = stream.write(&chunk);
        clients.push(stream);
    }
    std::thread::sleep(Duration::from_secs(2));
    let grown = resident_kib(pid).saturating_sub(before);
    // Four bodies of 1.4 MB and 60 heads' buffers, with room; unbounded it is ~80 MiB more.
    if grown > 40 * 1024 {
        return Err(format!("resident memory grew by {grown} KiB under 60 slow bodies").into());
    }
    if healthz(&address) != Some(200) {
        return Err("/healthz is answered under slow bodies".into());
    }
    drop(clients);
    Ok(())
}

/// A stdio upstream that stops reading its input, sent a few large requests: forwarding them
/// blocks, on the runtime's blocking threads, and `/healthz` is still answered at once (the
/// writes used to run on the async workers and freeze the listener).
pub(crate) fn an_upstream_that_stops_reading_never_freezes_the_listener() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": [{"stop_reading": true}]}),
    );
    let (_proxy, address, _) = proxy(&["--timeout", "60s"], &scenario, &log)?;
    let mut calls = Vec::new();
    for id in 0..4 {
        let request = modern_call(id, &"x".repeat(900 * 1024), false);
        let address = address.clone();
        calls.push(std::thread::spawn(move || {
            let mut stream = connect(&address);
            let _ = stream.write_all(request.as_bytes());
            stream
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let asked = Instant::now();
    if healthz(&address) != Some(200) {
        return Err("/healthz must be answered while the upstream does not read".into());
    }
    if asked.elapsed() > Duration::from_secs(2) {
        return Err(format!("/healthz took {:?}", asked.elapsed()).into());
    }
    Ok(())
}

/// A non-loopback `--listen` is refused unless the operator says, by name, that nothing
/// authenticates the hosts (the shipped deployment bound 0.0.0.0 with the upstream's token).
pub(crate) fn a_public_listener_needs_insecure_no_auth() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({}));
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["mcp-proxy", "--root"])
        .arg(super::here())
        .args(["--listen", "0.0.0.0:0", "--"])
        .arg(std::env::current_exe().unwrap())
        .env(SCENARIO_VARIABLE, &scenario)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    if refused.status.code() != Some(2) || !stderr.contains("--insecure-no-auth") {
        return Err(format!("exit {:?}: {stderr}", refused.status.code()).into());
    }
    // With it, the same listener starts (on 0.0.0.0), and answers on loopback.
    let (_proxy, address, _) = listening_proxy(
        &["--insecure-no-auth"],
        &[std::env::current_exe().unwrap().display().to_string()],
        &[
            (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
            (LOG_VARIABLE, log.to_str().unwrap()),
        ],
    )?;
    if healthz(&address) != Some(200) {
        return Err("the listener serves".into());
    }
    Ok(())
}

/// A 2026-07-28 host that closes its stream has cancelled its call (the revision's MUST): a
/// stdio upstream hears `notifications/cancelled` for it. The tool used to run to completion.
pub(crate) fn a_modern_host_closing_its_stream_cancels_upstream() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [{"stall": true}]}));
    let (_proxy, address, _) = proxy(&["--timeout", "60s"], &scenario, &log)?;
    for progress in [false, true] {
        let mut stream = connect(&address);
        stream
            .write_all(modern_call(u64::from(progress), "Lisbon", progress).as_bytes())
            .unwrap();
        if !log_holds(&log, "\"tools/call\"", Duration::from_secs(10)) {
            return Err("the call reached the upstream".into());
        }
        drop(stream);
        if !log_holds(&log, "notifications/cancelled", Duration::from_secs(10)) {
            return Err(format!(
                "the upstream hears of the host that went away (streamed: {progress}):\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
            .into());
        }
        // The next round reads a fresh log.
        std::fs::write(&log, "").unwrap();
    }
    Ok(())
}

/// A handshake-era host over HTTP gets a session at `initialize`; its `notifications/cancelled`,
/// a POST of its own in that session, reaches the upstream for the call it names (it used to be
/// dropped: each POST is a host of its own).
pub(crate) fn a_handshake_era_host_cancels_through_its_session() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(dir.path(), json!({}), json!({"weather": [{"stall": true}]}));
    let (_proxy, address, _) = proxy(&["--timeout", "60s"], &scenario, &log)?;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let answer = answer_of(&address, &post_text(&initialize.to_string(), &[]));
    let session = session_id(&answer)?;
    let with_session = vec![("Mcp-Session-Id".to_owned(), session.clone())];
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}});
    let call = post_text(&call.to_string(), &with_session);
    let address_for_call = address.clone();
    let pending = std::thread::spawn(move || answer_of(&address_for_call, &call));
    if !log_holds(&log, "\"tools/call\"", Duration::from_secs(10)) {
        return Err("the call reached the upstream".into());
    }
    // Another host's cancellation (no session, or another) does not reach it.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "the user gave up"}});
    for headers in [
        vec![],
        vec![("Mcp-Session-Id".to_owned(), "someone-else".to_owned())],
    ] {
        let answer = answer_of(&address, &post_text(&cancel.to_string(), &headers));
        if !answer.starts_with("HTTP/1.1 202") {
            return Err(format!("a notification is accepted: {answer}").into());
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    if std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("notifications/cancelled")
    {
        return Err("only the session's own cancellation reaches the upstream".into());
    }
    let answer = answer_of(&address, &post_text(&cancel.to_string(), &with_session));
    if !answer.starts_with("HTTP/1.1 202") {
        return Err(format!("a notification is accepted: {answer}").into());
    }
    if !log_holds(&log, "notifications/cancelled", Duration::from_secs(10)) {
        return Err("the session's cancellation reaches the upstream".into());
    }
    // The cancelled POST ends (without a result).
    let ended = pending.join().unwrap();
    if ended.contains("\"result\"") {
        return Err(format!("a cancelled call is not answered with a result: {ended}").into());
    }
    Ok(())
}

/// A stateful handshake-era server (the TypeScript SDK's) answers the era probe with `400` and
/// `"id": null`: the proxy falls back at once (it waited out the 10 s probe window), and when
/// the server forgets the session (a restart: `404`), opens a new one and serves the call.
pub(crate) fn a_stateful_upstream_settles_at_once_and_gets_a_new_session() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let scenario = scenario(
        dir.path(),
        json!({"stateful": true, "forget_session_after_calls": 1}),
        json!({"weather": [weather("Lisbon"), weather("Lisbon")]}),
    );
    let (_server, upstream) = fake_http(&scenario, &log);
    let started = Instant::now();
    let (_proxy, address, _) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    if started.elapsed() > Duration::from_secs(6) {
        return Err(format!("the era took {:?} to settle", started.elapsed()).into());
    }
    for id in 1..=2 {
        let answer = answer_of(&address, &modern_call(id, "Lisbon", false));
        if !answer.contains("\\\"outcome\\\":\\\"success\\\"")
            && !answer.contains("\"outcome\":\"success\"")
        {
            return Err(format!(
                "call {id}:\n{answer}\nupstream saw:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
            .into());
        }
    }
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    if seen.matches("\"initialize\"").count() != 2 {
        return Err(format!("a new session for the restarted server:\n{seen}").into());
    }
    Ok(())
}

/// An HTTP upstream that stops answering (error pages): `/readyz` says not ready until a probe
/// gets an answer again (it stayed 200 while the upstream was down).
pub(crate) fn readyz_follows_an_http_upstream_down_and_back() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // The first call is answered; then the server is down for three requests: the second
    // call and the first two probes get error pages.
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": [{"go_down": 3, "result": weather("Lisbon")["result"]}]}),
    );
    let (_server, upstream) = fake_http(&scenario, &log);
    let (_proxy, address, _) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    let readyz = || {
        let mut stream = connect(&address);
        status_of(
            &mut stream,
            b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        )
    };
    if readyz() != Some(200) {
        return Err("ready at first".into());
    }
    let answer = answer_of(&address, &modern_call(1, "Lisbon", false));
    if !answer.contains("\"outcome\":\"success\"") {
        return Err(format!("the first call is answered: {answer}").into());
    }
    let answer = answer_of(&address, &modern_call(2, "Lisbon", false));
    if !answer.contains("UPSTREAM_UNAVAILABLE") {
        return Err(format!("the call fails: {answer}").into());
    }
    if readyz() != Some(503) {
        return Err("not ready while the upstream is down".into());
    }
    if !eventually(Duration::from_secs(20), || readyz() == Some(200)) {
        return Err("ready again once a probe is answered".into());
    }
    Ok(())
}

/// Over HTTP each answer belongs to its own POST: one longer than the line cap fails that call
/// alone, and a call in flight beside it is answered (every call in flight used to fail).
pub(crate) fn an_oversized_answer_fails_only_its_own_call() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":{{{{id}}}},"result":{{"content":[],"structuredContent":{{"city":"Lisbon","pad":"{}"}}}}}}"#,
        "x".repeat(1_200_000)
    );
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": [
            {"delay_ms": 1500, "result": weather("Lisbon")["result"]},
            {"raw": huge}
        ]}),
    );
    let (_server, upstream) = fake_http(&scenario, &log);
    let (_proxy, address, _) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    let slow = {
        let address = address.clone();
        std::thread::spawn(move || answer_of(&address, &modern_call(1, "Lisbon", false)))
    };
    std::thread::sleep(Duration::from_millis(300));
    let oversized = answer_of(&address, &modern_call(2, "Lisbon", false));
    if !oversized.contains("\"outcome\":\"failure\"") {
        return Err(format!("the oversized answer is the fixed failure: {oversized}").into());
    }
    let slow = slow.join().unwrap();
    if !slow.contains("\"outcome\":\"success\"") {
        return Err(format!("the other call is answered: {slow}").into());
    }
    Ok(())
}

/// A 2026-07-28 HTTP upstream's call is cancelled by closing its stream: when the host goes
/// away, the upstream sees the request closed before its answer.
pub(crate) fn a_modern_http_upstream_sees_the_cancelled_stream_closed() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut modern_server: Value = serde_json::from_str(
        &std::fs::read_to_string(super::here().join("http/modern.json")).unwrap(),
    )
    .unwrap();
    modern_server["calls"] =
        json!({"weather": [{"delay_ms": 8000, "result": weather("Lisbon")["result"]}]});
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, modern_server.to_string()).unwrap();
    let (_server, upstream) = fake_http(&scenario, &log);
    let (_proxy, address, _) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    let mut stream = connect(&address);
    stream
        .write_all(modern_call(1, "Lisbon", false).as_bytes())
        .unwrap();
    if !log_holds(&log, "\"tools/call\"", Duration::from_secs(10)) {
        return Err("the call reached the upstream".into());
    }
    drop(stream);
    if !log_holds(
        &log,
        "# the client closed the request before its answer",
        Duration::from_secs(6),
    ) {
        return Err(format!(
            "the upstream's stream is closed:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        )
        .into());
    }
    Ok(())
}

/// A 2026-07-28 HTTP upstream whose `tools/list` at start-up is longer than the line cap: it is
/// read no further than the cap (a 400 MiB listing used to be held whole, 890 MiB, before the
/// proxy listened), no parameter is mirrored, and the proxy serves.
pub(crate) fn an_upstream_listing_past_the_cap_is_not_held_at_start_up() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut modern_server: Value = serde_json::from_str(
        &std::fs::read_to_string(super::here().join("http/modern.json")).unwrap(),
    )
    .unwrap();
    modern_server["server"]["tools"][0]["description"] = json!("x".repeat(3 << 20));
    modern_server["calls"] = json!({"weather": [{"result": weather("Lisbon")["result"]}]});
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, modern_server.to_string()).unwrap();
    let (_server, upstream) = fake_http(&scenario, &log);
    let (proxy, address, stderr) = listening_proxy(&[], &[format!("http://{upstream}/mcp")], &[])?;
    let pid = proxy.0.id();
    // The first line it says past its configuration.
    let logged = std::iter::from_fn(|| stderr.recv_timeout(Duration::from_secs(10)).ok())
        .find(|line| !line.contains("configuration: "))
        .unwrap_or_default();
    if !logged.contains("tools/list at start-up is longer than the line cap") {
        return Err(format!("the listing is read no further than the cap: {logged:?}").into());
    }
    let answer = answer_of(&address, &modern_call(1, "Lisbon", false));
    if !answer.contains("\"outcome\":\"success\"") {
        return Err(format!("the proxy serves: {answer}").into());
    }
    // Three listings' worth would be held at least once over; the cap keeps one line's.
    let resident = resident_kib(pid);
    if resident > 200 * 1024 {
        return Err(format!("{resident} KiB resident after a 3 MiB listing").into());
    }
    Ok(())
}
