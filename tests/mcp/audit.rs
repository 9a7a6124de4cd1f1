//! The audit trail as evidence, end to end: the proxy writes hash-chained lines signed with a
//! key `toolgate audit keygen` made; `toolgate audit verify` finds them intact, and finds an
//! edited, a deleted and a reordered line, and a line signed by no one; a log rotated under the
//! proxy goes on in the new file, marked.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::retention::initialize;
use super::{PATIENCE, here, start_proxy_at};

fn verify(log: &Path, key: Option<&Path>) -> (Option<i32>, String) {
    verify_all(&[log], key)
}

fn verify_all(logs: &[&Path], key: Option<&Path>) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(["audit", "verify"]).args(logs);
    if let Some(key) = key {
        command.arg("--public-key").arg(key);
    }
    let output = command.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr),
    )
}

fn call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "weather", "arguments": {"city": "Oslo"}}})
}

/// Signed, chained, verified; then each tampering found at its line; then a rotation.
pub(crate) fn tampering_with_the_audit_log_is_found() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let key = dir.path().join("audit.pem");
    let public = dir.path().join("audit.pub");
    let made = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["audit", "keygen"])
        .arg(&key)
        .output()?;
    fs::write(&public, &made.stdout)?;
    if !made.status.success() || !String::from_utf8_lossy(&made.stdout).contains("BEGIN PUBLIC KEY")
    {
        return Err("audit keygen printed no public key".into());
    }
    let (log, rotated) = run_and_rotate(dir.path(), "audit.jsonl", &key, &public, &[])?;
    // Lines held back for a flush interval: written before the rename is followed, and at the
    // stop, so the same two files verify the same.
    run_and_rotate(
        dir.path(),
        "held-back.jsonl",
        &key,
        &public,
        &["--audit-flush-interval", "50ms"],
    )?;
    // The rotated file's first line continues the old file's last.
    let old = fs::read_to_string(&rotated)?;
    let new = fs::read_to_string(&log)?;
    let first: Value = serde_json::from_str(new.lines().next().unwrap())?;
    if first["chain"]["seq"] != 5 || first["chain"]["rotated"] != true {
        return Err(format!("the new file's first line: {first}").into());
    }
    let lines: Vec<&str> = old.lines().collect();
    let tampered = |name: &str, lines: Vec<String>| -> PathBuf {
        let path = dir.path().join(name);
        fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let owned = |picked: &[usize]| {
        picked
            .iter()
            .map(|at| lines[*at].to_owned())
            .collect::<Vec<_>>()
    };
    let mut edited = owned(&[0, 1, 2, 3, 4]);
    edited[1] = edited[1].replacen("\"outcome\":\"admitted\"", "\"outcome\":\"rejected\"", 1);
    let mut resigned = edited.clone();
    // Someone without the key rewrites the chain after the edit: the checkpoint no longer
    // verifies over it.
    let mut prev =
        toolgate_gate::Sha256Digest::of(format!("{}\n", resigned[1]).as_bytes()).to_hex();
    for line in resigned.iter_mut().skip(2) {
        let mut value: Value = serde_json::from_str(line)?;
        value["chain"]["prev"] = json!(prev);
        *line = value.to_string();
        prev = toolgate_gate::Sha256Digest::of(format!("{line}\n").as_bytes()).to_hex();
    }
    for (what, path, key, line, needle) in [
        (
            "an edited line",
            tampered("edited", edited.clone()),
            None,
            3,
            "line 2",
        ),
        (
            "an edited line, the chain rewritten after it, signed",
            tampered("resigned", resigned),
            Some(&public),
            5,
            "signature",
        ),
        (
            "a deleted line",
            tampered("deleted", owned(&[0, 1, 3])),
            None,
            3,
            "missing",
        ),
        (
            "reordered lines",
            tampered("reordered", owned(&[0, 2, 1, 3])),
            None,
            2,
            "missing",
        ),
        (
            "a deleted head",
            tampered("headless", owned(&[1, 2, 3])),
            None,
            1,
            "deleted",
        ),
    ] {
        let (code, said) = verify(&path, key.map(|key| key.as_path()));
        let wanted = format!("{}:{line}: ", path.display());
        if code != Some(1) || !said.contains(&wanted) || !said.contains(needle) {
            return Err(format!(
                "{what}: wanted exit 1 at line {line} ({needle}); got {code:?} {said}"
            )
            .into());
        }
    }
    forged_signatures_are_named(dir.path(), &old, &public)?;
    check_runs_continue_one_chain(dir.path(), &key, &public)?;
    // Another key's public half: nothing verifies.
    let other = dir.path().join("other.pem");
    let made = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["audit", "keygen"])
        .arg(&other)
        .output()?;
    let other_public = dir.path().join("other.pub");
    fs::write(&other_public, made.stdout)?;
    let (code, said) = verify(&rotated, Some(&other_public));
    if code != Some(1) || !said.contains(":5: the signature does not verify") {
        return Err(format!("another key: {code:?} {said}").into());
    }
    Ok(())
}

/// Runs the proxy with `extra` flags, auditing to `name` in `dir`, signed with `key`: four
/// calls, the file renamed away (logrotate's `create`), two more; then both files verify, and
/// verify together in order only. Returns the new file and the rotated one.
fn run_and_rotate(
    dir: &Path,
    name: &str,
    key: &Path,
    public: &Path,
    extra: &[&str],
) -> Result<(PathBuf, PathBuf), Failed> {
    let answer = json!({"result": {"content": [], "structuredContent": {"city": "Oslo", "temperature_c": 3.5, "conditions": "snow"}}});
    let scenario = dir.join(format!("{name}.scenario.json"));
    fs::write(
        &scenario,
        json!({"server": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
            "tools": [{"name": "weather", "inputSchema": {"type": "object"}}]
        }, "calls": {"weather": vec![answer; 6]}})
        .to_string(),
    )?;
    let log = dir.join(name);
    let mut flags = vec![
        "--audit".to_owned(),
        log.display().to_string(),
        "--audit-key".to_owned(),
        key.display().to_string(),
    ];
    flags.extend(extra.iter().map(|flag| (*flag).to_owned()));
    let mut proxy = start_proxy_at(
        &here(),
        &scenario,
        &dir.join(format!("{name}.upstream.log")),
        &flags,
    );
    let mut stdin = proxy.child.stdin.take().unwrap();
    let mut ask = |message: Value| -> Result<(), Failed> {
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        proxy
            .lines
            .recv_timeout(PATIENCE)
            .map_err(|_| format!("no answer to {message}"))?;
        Ok(())
    };
    ask(initialize())?;
    for id in 1..=4 {
        ask(call(id))?;
    }
    // logrotate's `create` mode: the file is renamed away, the next line goes to a new one.
    let rotated = dir.join(format!("{name}.1"));
    fs::rename(&log, &rotated)?;
    // The writer looks its path up again within a quarter of a second.
    std::thread::sleep(std::time::Duration::from_millis(300));
    for id in 5..=6 {
        ask(call(id))?;
    }
    drop(stdin);
    proxy.child.wait()?;

    // Four events and the checkpoint the writer signed as the file was renamed away.
    let (code, said) = verify(&rotated, Some(public));
    if code != Some(0)
        || !said
            .contains("5 line(s), 1 chain(s), intact, every line covered by a checkpoint signature")
    {
        return Err(format!("the intact log: {code:?} {said}").into());
    }
    let (code, said) = verify(&log, Some(public));
    if code != Some(0) || !said.contains("continued from a rotated file") {
        return Err(format!("the log rotated into: {code:?} {said}").into());
    }
    // Both files, oldest first: the new one goes on where the old one ends.
    let (code, said) = verify_all(&[&rotated, &log], Some(public));
    if code != Some(0) || !said.contains("continued across the files, checked") {
        return Err(format!("the rotated log and its successor: {code:?} {said}").into());
    }
    // In the wrong order, the join is refused.
    let (code, said) = verify_all(&[&log, &rotated], Some(public));
    if code != Some(1) {
        return Err(format!("the files in the wrong order: {code:?} {said}").into());
    }
    Ok((log, rotated))
}

/// Every line of `old` rewritten by someone without the key (outcomes flipped, the chain
/// recomputed) with a `sig` that is not a string: each line is named forged.
fn forged_signatures_are_named(dir: &Path, old: &str, public: &Path) -> Result<(), Failed> {
    let mut forged = String::new();
    let mut prev = Value::Null;
    for line in old.lines() {
        let mut value: Value = serde_json::from_str(line)?;
        value["outcome"] = json!("admitted");
        value["caller"] = json!("admin");
        value["chain"]["prev"] = prev.clone();
        value["sig"] = Value::Null;
        let written = format!("{value}\n");
        prev = json!(toolgate_gate::Sha256Digest::of(written.as_bytes()).to_hex());
        forged.push_str(&written);
    }
    let forged_path = dir.join("forged");
    fs::write(&forged_path, &forged)?;
    let (code, said) = verify(&forged_path, Some(public));
    if code != Some(1) || said.matches(": forged: ").count() != old.lines().count() {
        return Err(format!("a log forged with sig null: {code:?} {said}").into());
    }
    Ok(())
}

/// `toolgate check --audit-key` signs as the fronts do, and run after run continues one chain:
/// every line verifies, and an edit of the first is found.
fn check_runs_continue_one_chain(dir: &Path, key: &Path, public: &Path) -> Result<(), Failed> {
    let checked = dir.join("check.jsonl");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/job_status");
    for _ in 0..3 {
        let status = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["check", "job_status"])
            .arg(fixtures.join("accepted/failed_run.json"))
            .arg("--root")
            .arg(env!("CARGO_MANIFEST_DIR"))
            .arg("--request")
            .arg(fixtures.join("request.json"))
            .arg("--audit")
            .arg(&checked)
            .arg("--audit-key")
            .arg(key)
            .output()?
            .status;
        if status.code() != Some(0) {
            return Err(format!("check --audit-key: {status:?}").into());
        }
    }
    let (code, said) = verify(&checked, Some(public));
    // Each run's line, and the checkpoint it signed as it ended.
    if code != Some(0)
        || !said
            .contains("6 line(s), 1 chain(s), intact, every line covered by a checkpoint signature")
    {
        return Err(format!("check --audit-key, three runs: {code:?} {said}").into());
    }
    let text = fs::read_to_string(&checked)?;
    let edited = text.replacen("\"outcome\":\"admitted\"", "\"outcome\":\"rejected\"", 1);
    fs::write(&checked, edited)?;
    let (code, said) = verify(&checked, None);
    if code != Some(1) || !said.contains(":2: its prev is not the digest") {
        return Err(format!("an edited check line: {code:?} {said}").into());
    }
    Ok(())
}
