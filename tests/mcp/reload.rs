//! Contracts reloaded without a restart, through the real binary under load: a changed bundle
//! (the file replaced, as a ConfigMap's update replaces it) is swapped in between calls, a broken
//! one is refused with the old set kept, and SIGHUP reloads where the files are not watched.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use libtest_mimic::Failed;
use serde_json::{Value, json};

use super::http::listening_proxy_at;
use super::listener::{answer_of, eventually, modern_call, scenario, weather};
use super::{LOG_VARIABLE, SCENARIO_VARIABLE};

/// Replaces `path` with `bytes` in one step, as a ConfigMap's update does.
fn replace(path: &Path, bytes: &[u8]) {
    let next = path.with_extension("next");
    fs::write(&next, bytes).unwrap();
    fs::rename(&next, path).unwrap();
}

/// Waits for a stderr line holding `text`, keeping every line read in `seen`.
fn said(lines: &Receiver<String>, seen: &mut String, text: &str) -> bool {
    eventually(Duration::from_secs(20), || {
        while let Ok(line) = lines.try_recv() {
            seen.push_str(&line);
            seen.push('\n');
        }
        seen.contains(text)
    })
}

/// Calls weather until `stop`, on fresh connections: each answer's outcome, in order.
fn load(address: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut outcomes = Vec::new();
        let mut id = 1;
        while !stop.load(Ordering::SeqCst) {
            let answer = answer_of(&address, &modern_call(id, "Lisbon", false));
            id += 1;
            outcomes.push(
                if answer.contains(r#"\"outcome\":\"success\""#)
                    || answer.contains(r#""outcome":"success""#)
                {
                    "admitted".to_owned()
                } else if answer.contains("INVALID_RESPONSE") {
                    "refused".to_owned()
                } else {
                    format!("unexpected: {answer}")
                },
            );
        }
        outcomes
    })
}

/// Under load, the bundle served is replaced by one whose newest weather (v2) refuses what v1
/// admits, then by one that is no bundle: the calls go from all admitted to all refused, once,
/// with no call failed or decided by a contract of the other set (each audit line's version
/// matches its outcome); the broken bundle is refused, the set before it kept; the metrics name
/// the set served. Then a proxy that does not watch its files reloads on SIGHUP.
pub(crate) fn a_changed_bundle_is_swapped_in_between_calls_and_a_broken_one_kept_out()
-> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let plain = crate::common::bundled_mcp_contracts(&dir.path().join("plain"));
    let bumped_root = crate::retention::repository_with_bump(&dir.path().join("bumped"));
    let bumped = crate::common::locked_bundle(&bumped_root, &dir.path().join("bumped.tar.gz"));
    let served = dir.path().join("contracts.tar.gz");
    fs::copy(&plain, &served)?;
    let scenario = scenario(
        dir.path(),
        json!({}),
        json!({"weather": vec![weather("Lisbon"); 6000]}),
    );
    let log = dir.path().join("upstream.log");
    let audit = dir.path().join("audit.jsonl");
    let upstream = [std::env::current_exe()?.display().to_string()];
    let environment = [
        (SCENARIO_VARIABLE, scenario.to_str().unwrap()),
        (LOG_VARIABLE, log.to_str().unwrap()),
    ];
    let (running, address, lines) = listening_proxy_at(
        &served,
        &[
            "--reload-check",
            "100ms",
            "--audit",
            audit.to_str().unwrap(),
        ],
        &upstream,
        &environment,
        Stdio::null(),
    )?;
    let mut seen = String::new();
    let stop = Arc::new(AtomicBool::new(false));
    let calls = load(address.clone(), Arc::clone(&stop));
    std::thread::sleep(Duration::from_millis(500));
    replace(&served, &fs::read(&bumped)?);
    if !said(
        &lines,
        &mut seen,
        "contracts reloaded (the contracts changed)",
    ) {
        return Err(format!("the replaced bundle was not reloaded:\n{seen}").into());
    }
    std::thread::sleep(Duration::from_millis(500));
    replace(&served, b"not a bundle at all");
    if !said(
        &lines,
        &mut seen,
        "contracts not reloaded (the contracts changed)",
    ) {
        return Err(format!("the broken bundle was not refused:\n{seen}").into());
    }
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    let outcomes = calls.join().unwrap();
    let flipped = outcomes.iter().position(|outcome| outcome != "admitted");
    let (before, after) = outcomes.split_at(flipped.unwrap_or(outcomes.len()));
    if before.len() < 10 || after.len() < 10 || after.iter().any(|outcome| outcome != "refused") {
        return Err(format!(
            "admitted, then refused once the bump is in, and nothing else: {outcomes:?}"
        )
        .into());
    }
    // Each decision names the contract that made it: v1 admits, v2 refuses, never crossed.
    let text = fs::read_to_string(&audit)?;
    let decided: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("\"tool\":\"weather\""))
        .collect();
    if decided.len() != outcomes.len() {
        return Err(format!("{} calls, {} audit lines", outcomes.len(), decided.len()).into());
    }
    for line in decided {
        let event: Value = serde_json::from_str(line)?;
        let expected = if event["outcome"] == "admitted" {
            "1"
        } else {
            "2"
        };
        if !event["contract_version"]
            .as_str()
            .is_some_and(|version| version.ends_with(expected))
        {
            return Err(format!("a decision under a mix of the two sets: {line}").into());
        }
    }
    let metrics = answer_of(&address, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let bumped_digest = seen
        .lines()
        .find(|line| line.contains("contracts reloaded"))
        .and_then(|line| line.split("sha256:").nth(1))
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .unwrap_or_default();
    for series in [
        "toolgate_contract_reloads_total{result=\"loaded\"} 1".to_owned(),
        "toolgate_contract_reloads_total{result=\"refused\"} 1".to_owned(),
        format!("toolgate_contract_set_info{{digest=\"sha256:{bumped_digest}\"}} 1"),
    ] {
        if !metrics.contains(&series) {
            return Err(format!("{series} not in the metrics:\n{metrics}").into());
        }
    }
    drop(running);
    sighup_reloads_where_files_are_not_watched(dir.path(), &plain, &bumped, &upstream, &environment)
}

/// `--reload-check 0s`: a replaced bundle is not reloaded until SIGHUP.
fn sighup_reloads_where_files_are_not_watched(
    dir: &Path,
    plain: &Path,
    bumped: &Path,
    upstream: &[String],
    environment: &[(&str, &str)],
) -> Result<(), Failed> {
    let served = dir.join("signalled.tar.gz");
    fs::copy(plain, &served)?;
    let (running, address, lines) = listening_proxy_at(
        &served,
        &["--reload-check", "0s"],
        upstream,
        environment,
        Stdio::null(),
    )?;
    let call = |id| answer_of(&address, &modern_call(id, "Lisbon", false));
    replace(&served, &fs::read(bumped)?);
    std::thread::sleep(Duration::from_millis(700));
    if !call(1).contains("success") {
        return Err("reloaded without SIGHUP though the files are not watched".into());
    }
    let _ = std::process::Command::new("kill")
        .args(["-HUP", &running.0.id().to_string()])
        .status();
    let mut seen = String::new();
    if !said(&lines, &mut seen, "contracts reloaded (SIGHUP)") {
        return Err(format!("SIGHUP did not reload:\n{seen}").into());
    }
    if !call(2).contains("INVALID_RESPONSE") {
        return Err("after SIGHUP the bumped set decides".into());
    }
    Ok(())
}
