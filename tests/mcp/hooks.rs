//! `toolgate hook claude-code` and `toolgate hook codex`, through the real binary, fed the
//! events the agents document on stdin: every answer is the gate's bytes or the fixed failure,
//! never the tool's own output, and every path that could let the original through (an event
//! the door cannot read, a contract it cannot open, a tool without one, a deadline passed)
//! answers the fixed failure, exit 0.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::doors::repository_with_arguments;

/// What one hook run printed, and how it ended.
struct Ran {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    took: Duration,
}

/// Runs `toolgate hook AGENT` on `event`, killed (an error) if it runs past 30 s.
fn hook(agent: &str, root: &Path, extra: &[&str], event: &[u8]) -> Result<Ran, Failed> {
    match serde_json::from_slice::<Value>(event) {
        Ok(Value::Object(_)) => hook_with(agent, root, extra, &as_sent(agent, event)?, true),
        // An event that is not a JSON object goes as it is.
        _ => hook_with(agent, root, extra, event, true),
    }
}

/// As [`hook`]; `close`: stdin is closed after the event (else held open, as an agent that
/// never ends the event would).
fn hook_with(
    agent: &str,
    root: &Path,
    extra: &[&str],
    event: &[u8],
    close: bool,
) -> Result<Ran, Failed> {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", agent, "--root"])
        .arg(root)
        .args(extra)
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let event = event.to_vec();
    // Written from a thread: a hook that stops reading must not block the test.
    std::thread::spawn(move || {
        let _ = stdin.write_all(&event);
        if !close {
            std::thread::sleep(Duration::from_secs(30));
        }
    });
    while child.try_wait()?.is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            return Err(format!("toolgate hook {agent} still runs after 30 s").into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output()?;
    Ok(Ran {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        code: output.status.code(),
        took: started.elapsed(),
    })
}

/// Claude Code's documented PostToolUse event for an MCP tool: `tool_response` is the compact
/// JSON of the result's structuredContent, as a string.
fn post(tool_name: &str, arguments: Value, structured: &str) -> Vec<u8> {
    json!({
        "session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "permission_mode": "default", "hook_event_name": "PostToolUse",
        "tool_name": tool_name, "tool_input": arguments, "tool_response": structured,
        "tool_use_id": "toolu_1", "mcp_server": {"name": "weather", "source": "dynamic"}
    })
    .to_string()
    .into_bytes()
}

/// `event` as `agent` sends it: Codex's documented input (0.171.0's schema) names no MCP server
/// and adds the model and the turn.
fn as_sent(agent: &str, event: &[u8]) -> Result<Vec<u8>, Failed> {
    let mut event: Value = serde_json::from_slice(event)?;
    if agent == "codex" {
        let fields = event.as_object_mut().ok_or("an event is an object")?;
        fields.remove("mcp_server");
        fields.insert("model".to_owned(), json!("gpt-5.5-codex"));
        fields.insert("turn_id".to_owned(), json!("turn_1"));
    }
    Ok(serde_json::to_vec(&event)?)
}

fn pre(tool_name: &str, arguments: Value) -> Vec<u8> {
    json!({
        "session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool_name, "tool_input": arguments,
        "tool_use_id": "toolu_1", "mcp_server": {"name": "weather", "source": "dynamic"}
    })
    .to_string()
    .into_bytes()
}

const OSLO: &str = r#"{"city":"Oslo","temperature_c":3.5,"conditions":"snow"}"#;

/// The gate's agent bytes for an admitted Oslo answer: what every door gives.
const OSLO_ADMITTED: &str = r#"{"tool":"weather","request_id":"toolu_1","outcome":"success","data":{"city":"Oslo","temperature_c":3.5,"conditions":"snow"}}"#;

const FAILURE: &str = r#"{"tool":"weather","request_id":"toolu_1","outcome":"failure","error":{"code":"INVALID_RESPONSE","retryable":false}}"#;

/// The text the agent is handed in place of the tool's output, and that it is all it is
/// handed: a Claude Code replacement or a Codex block.
fn replaced(ran: &Ran, agent: &str) -> Result<String, Failed> {
    let answer: Value = serde_json::from_str(&ran.stdout)
        .map_err(|error| format!("{agent}: {error}: {:?}\n{}", ran.stdout, ran.stderr))?;
    let text = match agent {
        "claude-code" if answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse" => {
            answer["hookSpecificOutput"]["updatedMCPToolOutput"].as_str()
        }
        _ if answer["decision"] == "block" => answer["reason"].as_str(),
        _ => None,
    };
    match (text, ran.code) {
        (Some(text), Some(0)) if !text.is_empty() => Ok(text.to_owned()),
        _ => Err(format!(
            "{agent}: not a replacement: {} ({:?})\n{}",
            ran.stdout, ran.code, ran.stderr
        )
        .into()),
    }
}

fn denied(ran: &Ran) -> Result<String, Failed> {
    let answer: Value = serde_json::from_str(&ran.stdout)
        .map_err(|error| format!("{error}: {:?}\n{}", ran.stdout, ran.stderr))?;
    let output = &answer["hookSpecificOutput"];
    match (
        output["permissionDecision"].as_str(),
        output["permissionDecisionReason"].as_str(),
        ran.code,
    ) {
        (Some("deny"), Some(reason), Some(0)) if !reason.is_empty() => Ok(reason.to_owned()),
        _ => Err(format!("not a denial: {} ({:?})", ran.stdout, ran.code).into()),
    }
}

/// Results: the projection (never the tool's own prose or unpromised members), and for every
/// result the contract refuses, the fixed failure; Codex, which cannot replace a result, blocks
/// each with the same bytes as the reason. Each decision is one audit line.
pub(crate) fn a_hook_replaces_every_result_with_the_gates() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let audit = dir.path().join("audit.jsonl");
    let flags = [
        "--context",
        context.to_str().unwrap(),
        "--audit",
        audit.to_str().unwrap(),
    ];
    let tool = "mcp__weather__weather";
    let oslo = json!({"city": "Oslo"});
    for agent in ["claude-code", "codex"] {
        let admitted = hook(agent, &root, &flags, &post(tool, oslo.clone(), OSLO))?;
        if replaced(&admitted, agent)? != OSLO_ADMITTED {
            return Err(format!("{agent} admitted: {}", admitted.stdout).into());
        }
        let cases = [
            (
                "an unpromised member",
                oslo.clone(),
                r#"{"city":"Oslo","temperature_c":3.5,"conditions":"snow","note":"CANARY"}"#,
            ),
            (
                "a duplicate key",
                oslo.clone(),
                r#"{"city":"Oslo","temperature_c":3.5,"conditions":"snow","city":"CANARY"}"#,
            ),
            (
                "a broken binding",
                oslo.clone(),
                r#"{"city":"Lisbon","temperature_c":3.5,"conditions":"snow"}"#,
            ),
            ("not JSON", oslo.clone(), "CANARY prose"),
        ];
        for (what, arguments, structured) in cases {
            let ran = hook(agent, &root, &flags, &post(tool, arguments, structured))?;
            let text = replaced(&ran, agent)?;
            if text != FAILURE {
                return Err(format!("{agent}, {what}: {text}").into());
            }
        }
        // A result as an MCP result object (what another agent version may hand over).
        let object = json!({"content": [{"type": "text", "text": "CANARY"}], "structuredContent": serde_json::from_str::<Value>(OSLO)?});
        let mut event: Value = serde_json::from_slice(&post(tool, oslo.clone(), ""))?;
        event["tool_response"] = object;
        let ran = hook(agent, &root, &flags, event.to_string().as_bytes())?;
        if replaced(&ran, agent)? != OSLO_ADMITTED {
            return Err(format!("{agent}, a result object: {}", ran.stdout).into());
        }
    }
    // A tool's error: Claude Code shows its text whatever a hook says (PostToolUseFailure); the
    // hook decides it, audits it, and tells the model its outcome is the fixed failure.
    let mut error: Value = serde_json::from_slice(&post(tool, oslo.clone(), ""))?;
    error["hook_event_name"] = json!("PostToolUseFailure");
    error["error"] = json!("CANARY error prose");
    let ran = hook("claude-code", &root, &flags, error.to_string().as_bytes())?;
    let answer: Value = serde_json::from_str(&ran.stdout)?;
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    if !context.contains(r#""outcome":"failure""#) || context.contains("CANARY") {
        return Err(format!("a tool's error: {}", ran.stdout).into());
    }
    let lines = std::fs::read_to_string(&audit)?;
    let decisions: Vec<Value> = lines
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let admitted = decisions
        .iter()
        .filter(|line| line["outcome"] == "admitted")
        .count();
    if decisions.len() != 13 || admitted != 4 {
        return Err(format!(
            "{} audit lines, {admitted} admitted:\n{lines}",
            decisions.len()
        )
        .into());
    }
    // Thirteen processes appended one chain.
    let verify = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["audit", "verify"])
        .arg(&audit)
        .output()?;
    if !verify.status.success() {
        return Err(format!("audit verify: {}", String::from_utf8_lossy(&verify.stdout)).into());
    }
    Ok(())
}

/// Arguments: refused ones denied with the tool's fixed failure (the tool never runs), rebuilt
/// ones handed back to Claude Code as updatedInput and denied by Codex (which cannot rewrite
/// them), untouched ones let through with no answer.
pub(crate) fn a_hook_decides_arguments_before_the_tool_runs() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let flags = ["--context", context.to_str().unwrap()];
    let tool = "mcp__weather__weather";
    for agent in ["claude-code", "codex"] {
        let paris = hook(agent, &root, &flags, &pre(tool, json!({"city": "Paris"})))?;
        let reason = denied(&paris)?;
        let failure: Value = serde_json::from_str(&reason)?;
        if failure["outcome"] != "failure"
            || failure["tool"] != "weather"
            || reason.contains("Paris")
        {
            return Err(format!("{agent}, Paris: {reason}").into());
        }
        let oslo = hook(agent, &root, &flags, &pre(tool, json!({"city": "Oslo"})))?;
        if !oslo.stdout.is_empty() || oslo.code != Some(0) {
            return Err(format!("{agent}, Oslo: {:?}", oslo.stdout).into());
        }
        let more = hook(
            agent,
            &root,
            &flags,
            &pre(tool, json!({"city": "Oslo", "units": "metric"})),
        )?;
        if agent == "claude-code" {
            let answer: Value = serde_json::from_str(&more.stdout)?;
            if answer["hookSpecificOutput"]["updatedInput"] != json!({"city": "Oslo"}) {
                return Err(format!("rebuilt: {}", more.stdout).into());
            }
        } else {
            denied(&more)?;
        }
    }
    Ok(())
}

/// Every way a hook could fail open answers the fixed failure instead, exit 0: a tool without a
/// contract, an event that is not JSON or is past the limit, contracts that cannot be opened, a
/// flag a hook cannot use, an event that never ends (the deadline). A tool that is not an
/// MCP tool, and observe mode, are answered with nothing: the agent goes on as it would.
pub(crate) fn a_hook_fails_closed_on_every_path() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let context = context.to_str().unwrap();
    let event = post("mcp__weather__weather", json!({"city": "Oslo"}), OSLO);
    let unknown = post("mcp__weather__forecast", json!({}), OSLO);
    let huge = post("mcp__weather__weather", json!({}), &"x".repeat(100_000));
    let missing = dir.path().join("nowhere");
    let unsplit = post("mcp____", json!({}), OSLO);
    let cases: [(&str, &Path, Vec<&str>, &[u8]); 7] = [
        (
            "an MCP tool name that cannot be split",
            &root,
            vec!["--context", context],
            &unsplit,
        ),
        (
            "an event that is not an object",
            &root,
            vec!["--context", context],
            b"[]",
        ),
        (
            "a tool without a contract",
            &root,
            vec!["--context", context],
            &unknown,
        ),
        (
            "an event that is not JSON",
            &root,
            vec!["--context", context],
            b"CANARY {",
        ),
        (
            "an event past the limit",
            &root,
            vec!["--context", context, "--max-message-bytes", "1024"],
            &huge,
        ),
        (
            "contracts that cannot be opened",
            &missing,
            vec!["--context", context],
            &event,
        ),
        (
            "a flag a hook cannot use",
            &root,
            vec!["--context", context, "--metrics", "127.0.0.1:0"],
            &event,
        ),
    ];
    for (what, at, flags, input) in cases {
        for agent in ["claude-code", "codex"] {
            let ran = hook(agent, at, &flags, input)?;
            let text = replaced(&ran, agent).map_err(|error| format!("{what}: {error:?}"))?;
            let failure: Value = serde_json::from_str(&text)?;
            if failure["outcome"] != "failure" || text.contains("CANARY") {
                return Err(format!("{agent}, {what}: {text}").into());
            }
            if ran.stderr.trim().is_empty() {
                return Err(format!("{agent}, {what}: nothing says why").into());
            }
        }
    }
    // An agent that never closes stdin: the watchdog answers at the deadline.
    for agent in ["claude-code", "codex"] {
        let flags = ["--deadline", "1s", "--context", context];
        let late = hook_with(agent, &root, &flags, &event[..event.len() / 2], false)?;
        let text = replaced(&late, agent)?;
        if late.took > Duration::from_secs(10)
            || !late.stderr.contains("--deadline")
            || serde_json::from_str::<Value>(&text)?["outcome"] != "failure"
        {
            return Err(format!(
                "{agent}, the deadline: {:?} {text}\n{}",
                late.took, late.stderr
            )
            .into());
        }
    }
    let bash = post("Bash", json!({"command": "ls"}), "CANARY");
    let observe = ["--context", context, "--mode", "observe"];
    let plain = ["--context", context];
    for (what, flags, input) in [
        ("a tool that is not MCP", &plain[..], &bash),
        ("observe mode", &observe[..], &event),
    ] {
        let ran = hook("claude-code", &root, flags, input)?;
        if !ran.stdout.is_empty() || ran.code != Some(0) {
            return Err(
                format!("{what}: {:?} ({:?})\n{}", ran.stdout, ran.code, ran.stderr).into(),
            );
        }
    }
    Ok(())
}

/// A hook lives for one event, so it compiles the event's tool alone (a repository of 200
/// contracts cost 320 ms an event, one costs 8 ms: BENCHMARKS.md): another tool's broken contract
/// does not touch it, its own broken contract answers the fixed failure.
pub(crate) fn a_hook_compiles_only_the_tool_it_decides() -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (root, context) = repository_with_arguments(dir.path());
    let flags = ["--context", context.to_str().unwrap()];
    let broken = root.join("contracts/broken/v1");
    std::fs::create_dir_all(&broken)?;
    std::fs::write(
        broken.join("contract.yaml"),
        "tool: broken\nversion: 1\nCANARY: [",
    )?;
    let event = post("mcp__weather__weather", json!({"city": "Oslo"}), OSLO);
    let ran = hook("claude-code", &root, &flags, &event)?;
    if replaced(&ran, "claude-code")? != OSLO_ADMITTED {
        return Err(format!(
            "beside another tool's broken contract: {}\n{}",
            ran.stdout, ran.stderr
        )
        .into());
    }
    let event = post("mcp__weather__broken", json!({}), OSLO);
    let ran = hook("claude-code", &root, &flags, &event)?;
    let text = replaced(&ran, "claude-code")?;
    if !text.contains(r#""outcome":"failure""#) || !ran.stderr.contains("broken") {
        return Err(format!("its own broken contract: {text}\n{}", ran.stderr).into());
    }
    Ok(())
}
