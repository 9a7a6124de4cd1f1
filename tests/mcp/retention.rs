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
use super::{LOG_VARIABLE, PATIENCE, SCENARIO_VARIABLE, here, start_proxy_at};

/// A repository with the proxy tests' contracts, in a folder of its own that fixtures can be
/// saved into.
fn repository(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    copy_tree(&here().join("contracts"), &root.join("contracts"));
    root
}

/// As [`repository`], with a weather v2 that bounds the temperature tighter (`maximum: 20`), for
/// shadowing and for bump replays.
fn repository_with_bump(dir: &Path) -> PathBuf {
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

fn copy_tree(from: &Path, to: &Path) {
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
fn scenario(dir: &Path) -> PathBuf {
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
fn stop(mut proxy: super::http::Running) {
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
        let mut proxy =
            start_proxy_at(&root, &scenario(dir.path()), &dir.path().join("log"), &args);
        let mut stdin = proxy.child.stdin.take().unwrap();
        let mut answers = Vec::new();
        let messages = [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Lisbon"}}}),
        ];
        for message in messages {
            writeln!(stdin, "{message}").unwrap();
            stdin.flush().unwrap();
            let line = proxy
                .lines
                .recv_timeout(PATIENCE)
                .map_err(|_| "no answer")?;
            answers.push(serde_json::from_str::<Value>(&line).unwrap());
        }
        drop(stdin);
        proxy.child.wait().unwrap();
        let stderr = proxy.stderr.join().unwrap();
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
        for (outcome, target) in [
            ("rejected", "near-miss/refused_in_production"),
            ("admitted", "accepted/admitted_in_production"),
        ] {
            let line = format!("{}:{}", audit.display(), line_of(&audit, outcome));
            let mut args = vec!["reproduce", "--audit", &line, "--save-fixture", target];
            args.extend(store_args.iter().map(String::as_str));
            let saved = toolgate(&root, &args);
            if !saved.status.success() && saved.status.code() != Some(1) {
                return Err(format!("--save-fixture {target}: {}", text(&saved.stderr)).into());
            }
        }
        // Their cases, that is: the tool's coverage and mutants are the suite's other checks.
        let cases = [
            "weather::accepted::admitted_in_production",
            "weather::near-miss::refused_in_production",
        ];
        let accepted = toolgate(&root, &["test", "--exact", cases[0], cases[1], "--accept"]);
        let checked = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["test", "--exact", cases[0], cases[1]])
            .current_dir(&root)
            .env("CI", "true")
            .output()
            .unwrap();
        if !checked.status.success() || !text(&checked.stdout).contains("2 of 2 cases passed") {
            return Err(format!(
                "store {index}: the saved fixtures pass:\n{}\n{}\n{}",
                text(&accepted.stdout),
                text(&checked.stdout),
                text(&checked.stderr)
            )
            .into());
        }
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
