//! From production back to CI: the proxy (over stdio and over HTTP) and `toolgate serve` keep
//! what the gate refused (`--retain`), `toolgate reproduce` decides it again from its audit line
//! byte for byte (the agent bytes, the operator record), and `--save-fixture` turns it into a
//! fixture the suite passes; a shadow version's outcome is in the audit line and its
//! disagreements are kept; `--mode observe` forwards the upstream's result and says so; a full,
//! unwritable or symlinked store leaves every call decided and nothing written outside it. With
//! `TOOLGATE_S3_ENDPOINT` set (`.ci/run` starts moto), the same round trips run through an S3
//! bucket.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::http::{listening_proxy_at, modern, post_json};
use super::{LOG_VARIABLE, PATIENCE, Proxy, SCENARIO_VARIABLE, here, read_output, start_proxy_at};

/// A repository with the proxy tests' contracts, in a folder of its own that fixtures can be
/// saved into.
pub(crate) fn repository(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    copy_tree(&here().join("contracts"), &root.join("contracts"));
    root
}

/// As [`repository`], with a weather v2 that bounds the temperature tighter (`maximum: 20`), for
/// shadowing and for bump replays.
pub(crate) fn repository_with_bump(dir: &Path) -> PathBuf {
    let root = repository(dir);
    let v2 = root.join("contracts/weather/v2");
    copy_tree(&root.join("contracts/weather/v1"), &v2);
    let contract = fs::read_to_string(v2.join("contract.yaml")).unwrap();
    fs::write(
        v2.join("contract.yaml"),
        contract.replace("version: 1", "version: 2"),
    )
    .unwrap();
    let schema = fs::read_to_string(v2.join("weather.schema.json")).unwrap();
    fs::write(
        v2.join("weather.schema.json"),
        schema.replace("\"maximum\": 60", "\"maximum\": 20"),
    )
    .unwrap();
    root
}

pub(crate) fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A handshake-era server whose weather calls are answered, in turn: Lisbon at 21.5 (admitted
/// by v1, refused by v2's bound), a result with an undeclared member (refused by both), Lisbon
/// at 12 (admitted by both).
pub(crate) fn scenario(dir: &Path) -> PathBuf {
    let result = |structured: Value| json!({"result": {"content": [{"type": "text", "text": "CANARY upstream words"}], "structuredContent": structured}});
    let path = dir.join("scenario.json");
    fs::write(
        &path,
        json!({
            "server": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "s", "version": "1"},
                       "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]},
            "calls": {"weather": [
                result(json!({"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear"})),
                result(json!({"city": "Lisbon", "temperature_c": 21.5, "conditions": "clear", "note": "CANARY: escalate"})),
                result(json!({"city": "Lisbon", "temperature_c": 12, "conditions": "rain"})),
            ]}
        })
        .to_string(),
    )
    .unwrap();
    path
}

fn toolgate(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(root)
        .env_remove("CI")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The stores to try: a folder, and an S3 bucket when a server is named.
fn stores(dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut stores = vec![(dir.join("store").display().to_string(), Vec::new())];
    if let Ok(endpoint) = std::env::var("TOOLGATE_S3_ENDPOINT") {
        let bucket = std::env::var("TOOLGATE_S3_BUCKET").unwrap_or_else(|_| "evidence".into());
        let prefix = dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(['.', '_'], "-");
        stores.push((
            format!("s3://{bucket}/{prefix}"),
            vec!["--retain-endpoint".to_owned(), endpoint],
        ));
    } else if std::env::var("TOOLGATE_REQUIRE_S3").as_deref() == Ok("1") {
        panic!("TOOLGATE_REQUIRE_S3=1 but no TOOLGATE_S3_ENDPOINT");
    }
    stores
}

/// `reproduce`'s store arguments for a store `--retain` was given.
fn store_args(store: &str, extra: &[String]) -> Vec<String> {
    let mut args = vec!["--store".to_owned(), store.to_owned()];
    if let Some(endpoint) = extra.get(1) {
        args.push("--endpoint".to_owned());
        args.push(endpoint.clone());
    }
    args
}

/// The number (from 1) of the first audit line whose outcome is `outcome`.
fn line_of(audit: &Path, outcome: &str) -> usize {
    fs::read_to_string(audit)
        .unwrap()
        .lines()
        .position(|line| serde_json::from_str::<Value>(line).unwrap()["outcome"] == outcome)
        .map(|index| index + 1)
        .unwrap_or_else(|| panic!("no {outcome} line in the audit log"))
}

/// Reproduces audit line `number` and checks it against what the host saw (`agent`, the
/// result's `structuredContent`) and the record the proxy logged (`record`, when it logged one).
/// Byte equality is `reproduce`'s own check (the agent bytes' digest against the audit line's),
/// so the host's copy, re-encoded inside a JSON-RPC answer, is compared as JSON.
fn reproduced(
    root: &Path,
    audit: &Path,
    number: usize,
    store: &[String],
    agent: &Value,
    record: Option<&str>,
) -> Result<(), Failed> {
    let target = format!("{}:{number}", audit.display());
    let mut args = vec!["reproduce", "--audit", &target, "--explain=json"];
    args.extend(store.iter().map(String::as_str));
    let run = toolgate(root, &args);
    let (stdout, stderr) = (text(&run.stdout), text(&run.stderr));
    if serde_json::from_str::<Value>(&stdout).ok().as_ref() != Some(agent)
        || !stdout.ends_with('\n')
    {
        return Err(
            format!("reproduce printed {stdout:?}; the host saw {agent:?}\n{stderr}").into(),
        );
    }
    if !stderr.contains("reproduced exactly") {
        return Err(format!("not reproduced exactly:\n{stderr}").into());
    }
    if let Some(record) = record
        && !stderr.lines().any(|line| line == record)
    {
        return Err(format!("the operator record differs:\nlogged {record}\n{stderr}").into());
    }
    Ok(())
}

/// Stops a listening proxy as an orchestrator does (SIGTERM), and waits for it to exit.
pub(crate) fn stop(mut proxy: super::http::Running) {
    let _ = Command::new("kill")
        .args(["-TERM", &proxy.0.id().to_string()])
        .status();
    let _ = proxy.0.wait();
}

/// What the proxy logged for its refusals, each record's JSON.
fn logged_records(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|line| line.strip_prefix("toolgate mcp-proxy: refused: "))
        .map(str::to_owned)
        .collect()
}

/// The handshake-era `initialize` a host sends first.
pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}})
}

/// A `tools/call` of the scripted weather tool.
pub(crate) fn weather_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}})
}

/// A stdio session: each message sent and its answer read, then the host's input closed and
/// the proxy waited for. The answers, and what the proxy wrote on stderr.
pub(crate) fn stdio_session(
    mut proxy: Proxy,
    messages: &[Value],
) -> Result<(Vec<Value>, String), Failed> {
    let mut stdin = proxy.child.stdin.take().unwrap();
    let mut answers = Vec::new();
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
        let line = proxy
            .lines
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("no answer to {message}"))?;
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    proxy.child.wait().unwrap();
    Ok((answers, proxy.stderr.join().unwrap()))
}

/// `toolgate reproduce --save-fixture` on each (audit line, CLASS/NAME), then `toolgate test`
/// on `cases` (the snapshots accepted first, then checked as CI checks them): every case
/// passes, one per saved fixture and contract version.
fn saved_fixtures_pass(
    root: &Path,
    audit: &Path,
    saves: &[(usize, &str)],
    store_args: &[String],
    cases: &[&str],
) -> Result<(), String> {
    let mut notes = String::new();
    for (line, target) in saves {
        let line = format!("{}:{line}", audit.display());
        let mut args = vec!["reproduce", "--audit", &line, "--save-fixture", target];
        args.extend(store_args.iter().map(String::as_str));
        let saved = toolgate(root, &args);
        if !saved.status.success() && saved.status.code() != Some(1) {
            return Err(format!("--save-fixture {target}: {}", text(&saved.stderr)));
        }
        notes.push_str(&text(&saved.stderr));
    }
    let accepted = toolgate(root, &[&["test"], cases, &["--accept"]].concat());
    let checked = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("test")
        .args(cases)
        .current_dir(root)
        .env("CI", "true")
        .output()
        .unwrap();
    let stdout = text(&checked.stdout);
    let cases_run = stdout
        .lines()
        .find_map(|line| line.split_once(" cases passed"))
        .map(|(count, _)| count.trim().to_owned());
    // "… 2 of 2 cases passed": as many passed as ran, and some did.
    let all_passed = cases_run.as_deref().is_some_and(|count| {
        let words: Vec<&str> = count.split_whitespace().collect();
        matches!(words.as_slice(), [.., passed, "of", total] if passed == total && *passed != "0")
    });
    if !checked.status.success() || !all_passed {
        return Err(format!(
            "the saved fixtures pass:\n{notes}\n{}\n{stdout}\n{}",
            text(&accepted.stdout),
            text(&checked.stderr)
        ));
    }
    Ok(())
}

/// The proxy over stdio keeps the refusal and a sample of admissions; `reproduce` decides the
/// refusal again from its audit line, byte for byte; `--save-fixture` makes both a fixture that
/// `toolgate test` passes.
pub(crate) fn the_stdio_proxy_keeps_what_reproduce_decides_again() -> Result<(), Failed> {
    for (index, (store, extra)) in stores(&tempfile::tempdir().unwrap().keep())
        .into_iter()
        .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let root = repository(dir.path());
        let audit = dir.path().join("audit.jsonl");
        let mut args = vec![
            "--retain".to_owned(),
            store.clone(),
            "--retain-admitted".to_owned(),
            "1".to_owned(),
            "--audit".to_owned(),
            audit.display().to_string(),
        ];
        args.extend(extra.iter().cloned());
        let proxy = start_proxy_at(&root, &scenario(dir.path()), &dir.path().join("log"), &args);
        let (answers, stderr) =
            stdio_session(proxy, &[initialize(), weather_call(1), weather_call(2)])?;
        let agent = |answer: &Value| answer["result"]["structuredContent"].clone();
        let records = logged_records(&stderr);
        if records.len() != 1 {
            return Err(format!("one refusal logged:\n{stderr}").into());
        }
        let store_args = store_args(&store, &extra);
        reproduced(
            &root,
            &audit,
            line_of(&audit, "rejected"),
            &store_args,
            &agent(&answers[2]),
            Some(&records[0]),
        )?;
        reproduced(
            &root,
            &audit,
            line_of(&audit, "admitted"),
            &store_args,
            &agent(&answers[1]),
            None,
        )?;
        // Both become fixtures, and the suite passes on them (the snapshots accepted first).
        let saves = [
            (
                line_of(&audit, "rejected"),
                "near-miss/refused_in_production",
            ),
            (
                line_of(&audit, "admitted"),
                "accepted/admitted_in_production",
            ),
        ];
        saved_fixtures_pass(
            &root,
            &audit,
            &saves,
            &store_args,
            &[
                "--exact",
                "weather::accepted::admitted_in_production",
                "weather::near-miss::refused_in_production",
            ],
        )
        .map_err(|why| format!("store {index}: {why}"))?;
    }
    Ok(())
}

/// The same over HTTP (`--listen`), and a shadow version: its outcome is in every audit line,
/// and the call it decides otherwise is kept though it was admitted.
pub(crate) fn the_http_proxy_keeps_refusals_and_shadow_disagreements() -> Result<(), Failed> {
    for (store, extra) in stores(&tempfile::tempdir().unwrap().keep()) {
        let dir = tempfile::tempdir().unwrap();
        let root = repository_with_bump(dir.path());
        let audit = dir.path().join("audit.jsonl");
        let audit_path = audit.display().to_string();
        let mut args = vec![
            "--retain".to_owned(),
            store.clone(),
            "--audit".to_owned(),
            audit_path.clone(),
            "--shadow".to_owned(),
            "weather=v2".to_owned(),
        ];
        args.extend(extra.iter().cloned());
        let scenario = scenario(dir.path());
        let log = dir.path().join("log");
        let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
        let (proxy, address, stderr) = listening_proxy_at(
            &root,
            &borrowed,
            &[std::env::current_exe().unwrap().display().to_string()],
            &[
                (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
                (LOG_VARIABLE, log.to_str().unwrap()),
            ],
            Stdio::null(),
        )?;
        let mut agents = Vec::new();
        for id in 1..=3 {
            let (body, headers) = modern(
                id,
                "tools/call",
                json!({"name": "weather", "arguments": {"city": "Lisbon"}}),
            );
            let answer = post_json(&address, &body, &headers)?;
            agents.push(answer["result"]["structuredContent"].clone());
        }
        // Stopped as an orchestrator stops it, so what is queued is written.
        stop(proxy);
        let lines: Vec<Value> = fs::read_to_string(&audit)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        // v1 enforced; v2 beside it: it refuses the first call (21.5 is past its bound).
        if lines.len() != 3 || lines.iter().any(|line| line["shadow"]["version"] != "v2") {
            return Err(format!("a shadow outcome in every audit line: {lines:?}").into());
        }
        if lines[0]["outcome"] != "admitted" || lines[0]["shadow"]["outcome"] != "rejected" {
            return Err(format!("the first call: v1 admits, v2 refuses: {}", lines[0]).into());
        }
        let records: Vec<String> = stderr
            .try_iter()
            .filter_map(|line| {
                line.strip_prefix("toolgate mcp-proxy: refused: ")
                    .map(str::to_owned)
            })
            .collect();
        let store_args = store_args(&store, &extra);
        // The refusal (call 2), and the admitted call the shadow disagrees with (call 1).
        reproduced(
            &root,
            &audit,
            2,
            &store_args,
            &agents[1],
            records.first().map(String::as_str),
        )?;
        reproduced(&root, &audit, 1, &store_args, &agents[0], None)?;
        // The refusal becomes a fixture, a case under each version, and the suite passes on it.
        saved_fixtures_pass(
            &root,
            &audit,
            &[(2, "near-miss/refused_over_http")],
            &store_args,
            &["weather::near-miss::refused_over_http@"],
        )?;
        // The third, admitted by both, was not kept.
        let target = format!("{audit_path}:3");
        let mut args = vec!["reproduce", "--audit", &target];
        args.extend(store_args.iter().map(String::as_str));
        let missing = toolgate(&root, &args);
        if missing.status.code() != Some(2) || !text(&missing.stderr).contains("keeps no decision")
        {
            return Err(format!(
                "an admission agreed on is not kept: {}",
                text(&missing.stderr)
            )
            .into());
        }
    }
    Ok(())
}

/// A `toolgate serve --stdio` run, answered line by line.
struct Serving {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    answers: std::sync::mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

impl Serving {
    fn start(root: &Path, args: &[String]) -> Serving {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["serve", "--stdio"])
            .args(args)
            .current_dir(root)
            .env_remove("CI")
            .env_remove("TF_BUILD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (answers, stderr) = read_output(&mut child);
        Serving {
            stdin: child.stdin.take(),
            child,
            answers,
            stderr,
        }
    }

    /// Asks for a decision on `raw` (a weather result for Lisbon) and waits for it.
    fn decide(&mut self, id: u64, raw: &[u8]) -> Result<Value, Failed> {
        use base64::Engine;
        let line = json!({
            "id": id,
            "tool": "weather",
            "raw_base64": base64::engine::general_purpose::STANDARD.encode(raw),
            "request": {"request_id": format!("r{id}"), "context": {"city": "Lisbon"}},
        });
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer = self
            .answers
            .recv_timeout(PATIENCE)
            .map_err(|_| "serve did not answer")?;
        let answer: Value = serde_json::from_str(&answer).unwrap();
        if answer["id"] != id || answer.get("decision").is_none() {
            return Err(format!("no decision for line {id}: {answer}").into());
        }
        Ok(answer["decision"].clone())
    }

    /// Ends the input and waits for the exit; its status and stderr.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        (status, self.stderr.join().unwrap())
    }
}

/// The three weather results the scenario answers, as raw bytes.
fn weather_bodies() -> [Vec<u8>; 3] {
    [
        br#"{"city":"Lisbon","temperature_c":21.5,"conditions":"clear"}"#.to_vec(),
        br#"{"city":"Lisbon","temperature_c":21.5,"conditions":"clear","note":"CANARY: escalate"}"#
            .to_vec(),
        br#"{"city":"Lisbon","temperature_c":12,"conditions":"rain"}"#.to_vec(),
    ]
}

/// The agent bytes of a `serve` answer.
fn agent_bytes(decision: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(decision["agent_base64"].as_str().unwrap())
        .unwrap()
}

/// `toolgate serve` over `root`, retaining to `store` (with its `extra` arguments) and auditing
/// to `audit`, with `more` arguments: its decisions of `bodies`, in order, and its stderr, once
/// it has ended well.
fn serve_retaining(
    root: &Path,
    (store, extra): (&str, &[String]),
    audit: &Path,
    more: &[&str],
    bodies: &[Vec<u8>],
) -> Result<(Vec<Value>, String), Failed> {
    let mut args = vec![
        "--retain".to_owned(),
        store.to_owned(),
        "--audit".to_owned(),
        audit.display().to_string(),
    ];
    args.extend(more.iter().map(|arg| (*arg).to_owned()));
    args.extend(extra.iter().cloned());
    let mut serving = Serving::start(root, &args);
    let mut decisions = Vec::new();
    for (index, raw) in bodies.iter().enumerate() {
        decisions.push(serving.decide(index as u64 + 1, raw)?);
    }
    let (status, stderr) = serving.finish();
    if !status.success() {
        return Err(format!("serve failed: {stderr}").into());
    }
    Ok((decisions, stderr))
}

/// `toolgate serve` keeps the refusal and the call its shadow decides otherwise, and
/// `reproduce` gives back exactly the agent bytes it answered with and the operator record;
/// `--save-fixture` makes the refusal a fixture that passes.
pub(crate) fn serve_keeps_what_reproduce_decides_again() -> Result<(), Failed> {
    for (store, extra) in stores(&tempfile::tempdir().unwrap().keep()) {
        let dir = tempfile::tempdir().unwrap();
        let root = repository_with_bump(dir.path());
        let audit = dir.path().join("audit.jsonl");
        let (decisions, _) = serve_retaining(
            &root,
            (&store, &extra),
            &audit,
            &["--shadow", "weather=v2"],
            &weather_bodies(),
        )?;
        let outcomes: Vec<(&Value, &Value)> = decisions
            .iter()
            .map(|decision| (&decision["outcome"], &decision["shadow"]["outcome"]))
            .collect();
        if outcomes
            != [
                (&json!("admitted"), &json!("rejected")),
                (&json!("rejected"), &json!("rejected")),
                (&json!("admitted"), &json!("admitted")),
            ]
        {
            return Err(format!("v1 enforced, v2 beside it: {outcomes:?}").into());
        }
        let store_args = store_args(&store, &extra);
        for number in [1, 2] {
            let target = format!("{}:{number}", audit.display());
            let mut args = vec!["reproduce", "--audit", &target, "--explain=json"];
            args.extend(store_args.iter().map(String::as_str));
            let run = toolgate(&root, &args);
            let decision = &decisions[number - 1];
            let mut expected = agent_bytes(decision);
            expected.push(b'\n');
            if run.stdout != expected || !text(&run.stderr).contains("reproduced exactly") {
                return Err(format!(
                    "line {number}: reproduce printed {:?}, serve answered {:?}\n{}",
                    text(&run.stdout),
                    text(&expected),
                    text(&run.stderr)
                )
                .into());
            }
            let record = text(&run.stderr)
                .lines()
                .find_map(|line| serde_json::from_str::<Value>(line).ok());
            if decision["operator_record"] != record.unwrap_or(Value::Null) {
                return Err(format!(
                    "line {number}: the operator record differs from {}:\n{}",
                    decision["operator_record"],
                    text(&run.stderr)
                )
                .into());
            }
        }
        // `--explain` in text: the record as `toolgate check --explain` prints it, a line each.
        let target = format!("{}:2", audit.display());
        let mut args = vec!["reproduce", "--audit", &target, "--explain"];
        args.extend(store_args.iter().map(String::as_str));
        let explained = text(&toolgate(&root, &args).stderr);
        let lines: Vec<&str> = explained.lines().collect();
        if !lines
            .iter()
            .any(|line| line.starts_with("rejected by weather"))
            || !lines.iter().any(|line| line.starts_with("  what:"))
            || explained.contains("\\u{")
        {
            return Err(format!("reproduce --explain, a line each:\n{explained}").into());
        }
        // A case under each version (`…@v1`, `…@v2`): both refuse it.
        saved_fixtures_pass(
            &root,
            &audit,
            &[(2, "near-miss/noted_in_production")],
            &store_args,
            &["weather::near-miss::noted_in_production@"],
        )?;
    }
    Ok(())
}

/// A contract whose `retention: redact:` names a member: `serve` keeps the refusal with that
/// member's value replaced in place, every other byte as received, and `reproduce` decides the
/// kept bytes again, saying what was redacted; `--raw` prints the bytes as kept.
pub(crate) fn serve_keeps_no_value_a_contract_redacts() -> Result<(), Failed> {
    for (store, extra) in stores(&tempfile::tempdir().unwrap().keep()) {
        let dir = tempfile::tempdir().unwrap();
        let root = repository(dir.path());
        let contract = root.join("contracts/weather/v1/contract.yaml");
        let mut yaml = fs::read_to_string(&contract).unwrap();
        yaml.push_str("retention:\n  redact: [/note]\n");
        fs::write(&contract, yaml).unwrap();
        let audit = dir.path().join("audit.jsonl");
        let refused = &weather_bodies()[1];
        let (decisions, stderr) = serve_retaining(
            &root,
            (&store, &extra),
            &audit,
            &[],
            std::slice::from_ref(refused),
        )?;
        let decision = &decisions[0];
        if decision["outcome"] != "rejected" {
            return Err(format!("serve: {decision}\n{stderr}").into());
        }
        let store_args = store_args(&store, &extra);
        let target = format!("{}:1", audit.display());
        let mut args = vec!["reproduce", "--audit", &target];
        args.extend(store_args.iter().map(String::as_str));
        let run = toolgate(&root, &args);
        let said = text(&run.stderr);
        let mut expected = agent_bytes(decision);
        expected.push(b'\n');
        if run.stdout != expected
            || !said.contains("reproduced exactly")
            || !said.contains("replaced /note by \"[redacted]\"")
        {
            return Err(format!("reproduce of a redacted record:\n{said}").into());
        }
        args.push("--raw");
        let raw = toolgate(&root, &args).stdout;
        let expected = text(refused).replace("\"CANARY: escalate\"", "\"[redacted]\"");
        if text(&raw) != expected {
            return Err(format!("kept bytes {:?}, wanted {expected:?}", text(&raw)).into());
        }
    }
    Ok(())
}

/// `--mode observe`: the host gets the upstream's result unchanged, refused ones included; the
/// audit line says the decision was observed, the start says so loudly, and CI refuses it.
pub(crate) fn observe_mode_forwards_unchanged_and_says_so() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let root = repository(dir.path());
    let audit = dir.path().join("audit.jsonl");
    let scenario = scenario(dir.path());
    let upstream: Value = serde_json::from_str(&fs::read_to_string(&scenario).unwrap()).unwrap();
    let args = [
        "--mode".to_owned(),
        "observe".to_owned(),
        "--audit".to_owned(),
        audit.display().to_string(),
    ];
    let proxy = start_proxy_at(&root, &scenario, &dir.path().join("log"), &args);
    let messages = [
        initialize(),
        weather_call(1),
        weather_call(2),
        weather_call(3),
    ];
    let (mut answers, stderr) = stdio_session(proxy, &messages)?;
    answers.remove(0);
    for (index, answer) in answers.iter().enumerate() {
        if answer["result"] != upstream["calls"]["weather"][index]["result"] {
            return Err(format!(
                "call {}: not the upstream's result unchanged: {answer}",
                index + 1
            )
            .into());
        }
    }
    if !stderr.contains("OBSERVE MODE") {
        return Err(format!("observe mode is said at start:\n{stderr}").into());
    }
    let lines: Vec<Value> = fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let seen: Vec<(&Value, &Value)> = lines
        .iter()
        .map(|line| (&line["outcome"], &line["mode"]))
        .collect();
    if seen
        != [
            (&json!("admitted"), &json!("observe")),
            (&json!("rejected"), &json!("observe")),
            (&json!("admitted"), &json!("observe")),
        ]
    {
        return Err(format!("each call decided and marked observed: {seen:?}").into());
    }
    // serve answers with the raw bytes, says it did not enforce.
    let mut serving = Serving::start(&root, &["--mode".to_owned(), "observe".to_owned()]);
    let refused = &weather_bodies()[1];
    let decision = serving.decide(1, refused)?;
    let (_, stderr) = serving.finish();
    if decision["outcome"] != "rejected"
        || decision["enforced"] != false
        || agent_bytes(&decision) != *refused
    {
        return Err(format!("serve observes: {decision}").into());
    }
    if !stderr.contains("OBSERVE MODE") {
        return Err(format!("serve says observe mode at start:\n{stderr}").into());
    }
    // Never in CI, on either front.
    for front in [
        vec!["serve", "--stdio", "--mode", "observe"],
        vec!["mcp-proxy", "--mode", "observe", "--", "true"],
    ] {
        let refused = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(&front)
            .current_dir(&root)
            .env("CI", "true")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if refused.status.code() != Some(2) || !text(&refused.stderr).contains("refused in CI") {
            return Err(format!("{front:?} under CI=true: {}", text(&refused.stderr)).into());
        }
    }
    Ok(())
}

/// The size of every file under `folder`, and whether there is one.
fn files_under(folder: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir(folder) else {
        return found;
    };
    for entry in entries.flatten() {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            found.extend(files_under(&entry.path()));
        } else {
            found.push((entry.path(), entry.metadata().unwrap().len()));
        }
    }
    found
}

/// What a file takes on disk: its blocks, and its inode and directory entry.
fn disk_footprint(path: &Path) -> u64 {
    let metadata = fs::symlink_metadata(path).unwrap();
    #[cfg(unix)]
    let blocks = std::os::unix::fs::MetadataExt::blocks(&metadata) * 512;
    #[cfg(not(unix))]
    let blocks = metadata.len();
    blocks + toolgate_store::OBJECT_OVERHEAD
}

/// Every call is decided and answered, whatever the store does: a store at its budget (the
/// oldest go), a record larger than the whole budget, a store that cannot be written, one
/// replaced by a symbolic link after the start (nothing is written through it), and, with an
/// S3 server, a bucket that does not exist.
pub(crate) fn a_failing_store_never_costs_a_decision() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let root = repository(dir.path());
    let refused = &weather_bodies()[1];
    // Decides `calls` refusals (each its own bytes) with `args`; every one must be answered.
    let run = |args: &[String], calls: u64, between: &dyn Fn(u64)| -> Result<String, Failed> {
        let mut serving = Serving::start(&root, args);
        for id in 1..=calls {
            let raw =
                String::from_utf8_lossy(refused).replace("escalate", &format!("escalate {id}"));
            let decision = serving.decide(id, raw.as_bytes())?;
            if decision["outcome"] != "rejected"
                || decision["agent"]["error"]["code"] != "INVALID_RESPONSE"
            {
                return Err(format!("call {id} decided as usual: {decision}").into());
            }
            between(id);
        }
        let (status, stderr) = serving.finish();
        if !status.success() {
            return Err(format!("serve: {stderr}").into());
        }
        Ok(stderr)
    };
    let retain = |store: &Path, more: &[&str]| -> Vec<String> {
        let mut args = vec!["--retain".to_owned(), store.display().to_string()];
        args.extend(more.iter().map(|arg| (*arg).to_owned()));
        args
    };

    // At its budget: the oldest go, and the store never takes more disk than the budget (its
    // files' blocks and inodes, not their lengths).
    let full = dir.path().join("full");
    run(&retain(&full, &["--retain-budget", "16KiB"]), 20, &|_| {})?;
    let held: u64 = files_under(&full)
        .iter()
        .map(|(path, _)| disk_footprint(path))
        .sum();
    if held > 16 * 1024 || held == 0 {
        return Err(format!("a 16 KiB store takes {held} bytes of disk").into());
    }
    // A record larger than the whole budget is not kept, and said so.
    let tiny = dir.path().join("tiny");
    let stderr = run(&retain(&tiny, &["--retain-budget", "16"]), 3, &|_| {})?;
    if !files_under(&tiny).is_empty() || !stderr.contains("larger than the whole budget") {
        return Err(format!(
            "a record past the budget: {:?}\n{stderr}",
            files_under(&tiny)
        )
        .into());
    }
    // Cannot be written: the tool's folder in it is a file.
    let blocked = dir.path().join("blocked");
    fs::create_dir(&blocked).unwrap();
    fs::write(blocked.join("weather"), "not a folder").unwrap();
    let stderr = run(&retain(&blocked, &[]), 3, &|_| {})?;
    if files_under(&blocked).len() != 1
        || !stderr.contains("kept 0 in")
        || !stderr.contains("3 failed")
    {
        return Err(format!("an unwritable store: {:?}\n{stderr}", files_under(&blocked)).into());
    }
    // Read-only (meaningless to root, who may write anyway).
    #[cfg(unix)]
    if !nix_is_root() {
        use std::os::unix::fs::PermissionsExt;
        let read_only = dir.path().join("read-only");
        fs::create_dir(&read_only).unwrap();
        fs::set_permissions(&read_only, fs::Permissions::from_mode(0o500)).unwrap();
        let stderr = run(&retain(&read_only, &[]), 3, &|_| {})?;
        fs::set_permissions(&read_only, fs::Permissions::from_mode(0o700)).unwrap();
        if !files_under(&read_only).is_empty() || !stderr.contains("3 failed") {
            return Err(format!("a read-only store: {stderr}").into());
        }
    }
    // Replaced by a link once the first record is written: nothing goes through it.
    let linked = dir.path().join("linked");
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let stderr = run(&retain(&linked, &[]), 4, &|id| {
        if id == 1 {
            let deadline = std::time::Instant::now() + PATIENCE;
            let written = || {
                files_under(&linked)
                    .iter()
                    .any(|(path, _)| !path.file_name().unwrap().to_string_lossy().starts_with('.'))
            };
            while !written() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            fs::rename(&linked, dir.path().join("linked-before")).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
        }
    })?;
    if files_under(&dir.path().join("linked-before")).len() != 1 {
        return Err("the first record was kept before the link".into());
    }
    if !files_under(&elsewhere).is_empty()
        || !stderr.contains("symbolic link")
        || !stderr.contains("kept 1 in")
        || !stderr.contains("3 failed")
    {
        return Err(format!(
            "written through a link: {:?}\n{stderr}",
            files_under(&elsewhere)
        )
        .into());
    }
    // A bucket that does not exist.
    if let Ok(endpoint) = std::env::var("TOOLGATE_S3_ENDPOINT") {
        let args = [
            "--retain".to_owned(),
            "s3://no-such-bucket-here/evidence".to_owned(),
            "--retain-endpoint".to_owned(),
            endpoint,
        ];
        let stderr = run(&args, 3, &|_| {})?;
        if !stderr.contains("kept 0 in") || !stderr.contains("3 failed") {
            return Err(format!("a missing bucket is logged: {stderr}").into());
        }
    }
    Ok(())
}

/// Whether this process runs as root (who may write in a read-only folder).
fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| text(&output.stdout).trim() == "0")
}

/// A tool's own error (isError) is kept as one: `reproduce` decides it again by the contract's
/// `upstream_errors` (mapped, NOT_FOUND; unmapped, `tool_error`), not as a result; and it is no
/// fixture to save.
pub(crate) fn a_kept_tool_error_is_reproduced_as_one() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let root = repository(dir.path());
    let scenario = dir.path().join("scenario.json");
    fs::write(
        &scenario,
        json!({
            "server": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                       "serverInfo": {"name": "s", "version": "1"},
                       "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]},
            "calls": {"weather": [
                {"result": {"content": [{"type": "text", "text": "CANARY no such city"}], "structuredContent": {"error": "unknown_city"}, "isError": true}},
                {"result": {"content": [{"type": "text", "text": "CANARY quota"}], "isError": true}}
            ]}
        })
        .to_string(),
    )?;
    let store = dir.path().join("store").display().to_string();
    let audit = dir.path().join("audit.jsonl");
    let args = [
        "--retain".to_owned(),
        store.clone(),
        "--audit".to_owned(),
        audit.display().to_string(),
    ];
    let proxy = start_proxy_at(&root, &scenario, &dir.path().join("log"), &args);
    let (answers, stderr) =
        stdio_session(proxy, &[initialize(), weather_call(1), weather_call(2)])?;
    let records = logged_records(&stderr);
    if records.len() != 2 {
        return Err(format!("two refusals logged:\n{stderr}").into());
    }
    let store_args = store_args(&store, &[]);
    for (number, answer, record) in [(1, &answers[1], &records[0]), (2, &answers[2], &records[1])] {
        reproduced(
            &root,
            &audit,
            number,
            &store_args,
            &answer["result"]["structuredContent"],
            Some(record),
        )?;
    }
    if answers[1]["result"]["structuredContent"]["error"]["code"] != "NOT_FOUND"
        || !records[1].contains(r#""rule":"tool_error""#)
    {
        return Err(format!("the tool errors: {answers:?}\n{records:?}").into());
    }
    let target = format!("{}:1", audit.display());
    let mut args = vec![
        "reproduce",
        "--audit",
        &target,
        "--save-fixture",
        "near-miss/tool_error",
    ];
    args.extend(store_args.iter().map(String::as_str));
    let saved = toolgate(&root, &args);
    if saved.status.code() != Some(2) || !text(&saved.stderr).contains("the tool's own error") {
        return Err(format!("--save-fixture on a tool error: {}", text(&saved.stderr)).into());
    }
    Ok(())
}

/// Where records are sealed, the refusal the proxy logs quotes nothing of the response (pod logs
/// are read more widely than the sealed store); `--redact-values=false` logs it whole, and
/// `--redact-values` redacts without sealing.
pub(crate) fn a_sealed_store_logs_refusals_redacted() -> Result<(), Failed> {
    let recipient = age::x25519::Identity::generate().to_public().to_string();
    for (extra, redacted) in [
        (vec!["--retain-recipient", recipient.as_str()], true),
        (
            vec![
                "--retain-recipient",
                recipient.as_str(),
                "--redact-values=false",
            ],
            false,
        ),
        (vec!["--redact-values"], true),
        (vec![], false),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let root = repository(dir.path());
        let mut args = vec![
            "--retain".to_owned(),
            dir.path().join("store").display().to_string(),
        ];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        let proxy = start_proxy_at(&root, &scenario(dir.path()), &dir.path().join("log"), &args);
        let (_, stderr) = stdio_session(proxy, &[initialize(), weather_call(1), weather_call(2)])?;
        let records = logged_records(&stderr);
        let quoted = records.iter().any(|record| record.contains("'note'"));
        let said_redacted = records.iter().any(|record| record.contains("(redacted"));
        if records.len() != 1 || quoted == redacted || said_redacted != redacted {
            return Err(format!("{extra:?}: redacted {redacted} wanted:\n{stderr}").into());
        }
    }
    Ok(())
}

/// A shadow store estimates traffic, not itself: 400 calls, one in four answered at 21.5 (which
/// the shadow v2 refuses and v1 admits: a disagreement, always kept), the rest at 12, the same
/// bytes each time (admitted by both: kept at `--retain-admitted 10%`). The store holds the 100
/// disagreements and some 30 agreements (sampled by digest and call id, so identical answers
/// are kept like any, not all or none), and `diff --replay` reports the newly refused share of
/// calls as about 25 %, where a share of the records would say about 77 %.
pub(crate) fn a_replay_of_a_sampled_shadow_store_estimates_the_true_share() -> Result<(), Failed> {
    let dir = tempfile::tempdir().unwrap();
    let root = repository_with_bump(dir.path());
    let answer = |temperature: f64| json!({"result": {"content": [], "structuredContent": {"city": "Lisbon", "temperature_c": temperature, "conditions": "clear"}}});
    let answers: Vec<Value> = (0..400)
        .map(|n| answer(if n % 4 == 0 { 21.5 } else { 12.0 }))
        .collect();
    let scenario = crate::listener::scenario(dir.path(), json!({}), json!({"weather": answers}));
    let store = dir.path().join("store");
    let args: Vec<String> = [
        "--retain",
        store.to_str().unwrap(),
        "--retain-admitted",
        "10%",
        "--shadow",
        "weather=v2",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect();
    let proxy = start_proxy_at(&root, &scenario, &dir.path().join("log"), &args);
    let mut messages = vec![initialize()];
    messages.extend((1..=400).map(weather_call));
    stdio_session(proxy, &messages)?;
    let kept = fs::read_dir(store.join("weather"))?.count();
    // 100 disagreements, and 10 % of 300 agreements: 30, within a wide margin of chance.
    if !(110..=160).contains(&kept) {
        return Err(format!("{kept} records kept: not 100 and about 30 of 300").into());
    }
    let replay = |more: &[&str]| {
        let mut args = vec![
            "diff",
            "weather",
            "v1",
            "v2",
            "--replay",
            store.to_str().unwrap(),
        ];
        args.extend_from_slice(more);
        toolgate(&root, &args)
    };
    let output = replay(&["--format", "json"]);
    let report: Value = serde_json::from_slice(&output.stdout)
        .map_err(|error| format!("{error}: {}", text(&output.stderr)))?;
    let refused = &report["traffic"]["newly_refused"];
    let (share, margin) = (
        refused["estimated_share"].as_f64().unwrap_or(-1.0),
        refused["margin"].as_f64().unwrap_or(-1.0),
    );
    // The sample is random (call ids are): held to twice the 95 % margin (4 sigma), not to the
    // margin itself, which a true estimate misses one time in twenty.
    if refused["count"] != 100 || (share - 0.25).abs() > 2.0 * margin.max(0.01) || margin > 0.15 {
        return Err(format!("newly refused: {refused} (about 25 % of calls)").into());
    }
    // A percentage threshold reads the estimate itself: one just under it fails, one just over it
    // passes. Fixed thresholds (20 %, 40 %) made this as random as the sample.
    let percent = share * 100.0;
    let (under, over) = (percent.floor() as i64 - 2, percent.ceil() as i64 + 2);
    for (threshold, code) in [(under, Some(1)), (over, Some(0))] {
        let output = replay(&["--fail-on", &format!("newly-refused>{threshold}%")]);
        if output.status.code() != code {
            return Err(format!(
                "--fail-on newly-refused>{threshold}% (estimate {percent:.1} %): {:?}",
                output.status
            )
            .into());
        }
    }
    Ok(())
}
