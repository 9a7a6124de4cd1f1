//! `toolgate serve --stdio`: every bundled fixture, under every contract version, decided
//! through one long-lived `serve` process exactly as `toolgate check` decides it (agent bytes
//! and audit line, byte for byte); bad lines answered with an error and serving going on; and
//! the Node.js example client (`examples/node/gate-client.mjs`) driving it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every (tool, version, fixture file) of the bundled suite.
fn cases() -> Vec<(String, String, PathBuf)> {
    let mut cases = Vec::new();
    for tool in std::fs::read_dir(root().join("fixtures")).unwrap() {
        let tool = tool.unwrap().path();
        if !tool.is_dir() {
            continue;
        }
        let name = tool.file_name().unwrap().to_string_lossy().into_owned();
        let mut versions: Vec<String> = std::fs::read_dir(root().join("contracts").join(&name))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|version| version.starts_with('v'))
            .collect();
        versions.sort();
        for class in std::fs::read_dir(&tool).unwrap() {
            let class = class.unwrap().path();
            if !class.is_dir() {
                continue;
            }
            for raw in std::fs::read_dir(&class).unwrap() {
                let raw = raw.unwrap().path();
                if raw.to_string_lossy().ends_with(".expect.yaml") {
                    continue;
                }
                for version in &versions {
                    cases.push((name.clone(), version.clone(), raw.clone()));
                }
            }
        }
    }
    cases.sort();
    cases
}

/// What `toolgate check` decides: the agent line and the audit line.
fn check(tool: &str, version: &str, raw: &Path) -> (Vec<u8>, Vec<u8>) {
    let audit = tempfile::NamedTempFile::new().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["check", tool])
        .arg(raw)
        .arg("--root")
        .arg(root())
        .arg("--request")
        .arg(root().join("fixtures").join(tool).join("request.json"))
        .args(["--contract-version", version, "--audit"])
        .arg(audit.path())
        .args(
            upstream_status(raw)
                .map(|status| vec!["--upstream-status".to_owned(), status.to_string()])
                .unwrap_or_default(),
        )
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        output.stdout,
        unchained(&std::fs::read(audit.path()).unwrap()),
    )
}

/// An audit file's line without the chain its writer adds (`,"chain":{…}`, its last member):
/// the decision's own audit line, as an answer carries it.
fn unchained(line: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(line.to_vec()).unwrap();
    let cut = text.rfind(",\"chain\":{").expect("a chained audit line");
    let chain: Value =
        serde_json::from_str(text[cut + 9..].trim_end().strip_suffix('}').unwrap()).unwrap();
    assert!(chain["seq"].is_u64(), "{text}");
    format!("{}}}\n", &text[..cut]).into_bytes()
}

fn upstream_status(raw: &Path) -> Option<u16> {
    let sidecar = raw.with_file_name(format!(
        "{}.expect.yaml",
        raw.file_stem().unwrap().to_string_lossy()
    ));
    std::fs::read_to_string(sidecar)
        .ok()?
        .lines()
        .find_map(|line| {
            line.strip_prefix("upstream_status:")
                .and_then(|status| status.trim().parse().ok())
        })
}

fn request(tool: &str, raw: &Path) -> Value {
    let mut request: Value = serde_json::from_slice(
        &std::fs::read(root().join("fixtures").join(tool).join("request.json")).unwrap(),
    )
    .unwrap();
    if let Some(status) = upstream_status(raw) {
        request["upstream_status"] = json!(status);
    }
    request
}

#[test]
fn serve_decides_every_fixture_as_check_does() {
    let cases = cases();
    assert!(
        cases.len() > 100,
        "the bundled suite: {} cases",
        cases.len()
    );
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--stdio", "--root"])
        .arg(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = serve.stdin.take().unwrap();
    let mut output = BufReader::new(serve.stdout.take().unwrap());
    let mut answer = |line: Value| -> Value {
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
        let mut text = String::new();
        output.read_line(&mut text).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    // What the metrics must count, from the decisions themselves.
    let mut expected: BTreeMap<Vec<(String, String)>, f64> = BTreeMap::new();
    for (n, (tool, version, raw)) in cases.iter().enumerate() {
        let decided = answer(json!({
            "id": n,
            "tool": tool,
            "version": version,
            "raw_base64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(raw).unwrap()),
            "request": request(tool, raw),
        }));
        let shown = format!("{tool} {version} {}", raw.display());
        assert_eq!(decided["id"], json!(n), "{shown}");
        let (agent, audit) = check(tool, version, raw);
        let decision = &decided["decision"];
        let label = |value: &Value| value.as_str().unwrap_or("none").to_owned();
        let direction = if tool == "close_ticket" {
            "action"
        } else {
            "result"
        };
        let mut labels = vec![
            ("tool".to_owned(), tool.clone()),
            ("contract_version".to_owned(), version.clone()),
            ("direction".to_owned(), direction.to_owned()),
            ("outcome".to_owned(), label(&decision["outcome"])),
            ("layer".to_owned(), label(&decision["layer"])),
            ("code".to_owned(), label(&decision["code"])),
        ];
        labels.sort();
        *expected.entry(labels).or_default() += 1.0;
        let served_agent = base64::engine::general_purpose::STANDARD
            .decode(decision["agent_base64"].as_str().unwrap())
            .unwrap();
        assert_eq!([served_agent, b"\n".to_vec()].concat(), agent, "{shown}");
        assert_eq!(
            served_event(decision),
            serde_json::from_slice::<Value>(&audit).unwrap(),
            "{shown}"
        );
    }
    // The metrics count every decision, as the decisions predict.
    let counted = |metrics: &Value| -> BTreeMap<Vec<(String, String)>, f64> {
        metrics["samples"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|sample| sample["name"] == "toolgate_decisions_total")
            .map(|sample| {
                let mut labels: Vec<(String, String)> = sample["labels"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_owned()))
                    .collect();
                labels.sort();
                (labels, sample["value"].as_f64().unwrap())
            })
            .collect()
    };
    let metrics = answer(json!({"id": "m", "op": "metrics"}));
    assert_eq!(metrics["id"], "m");
    assert_eq!(counted(&metrics["metrics"]), expected);
    let exposition = metrics["metrics"]["exposition"].as_str().unwrap();
    assert!(
        exposition.contains(&format!(
            "toolgate_decision_duration_seconds_count{{tool=\"job_status\",direction=\"result\"}} {}",
            expected
                .iter()
                .filter(|(labels, _)| labels.contains(&("tool".to_owned(), "job_status".to_owned())))
                .map(|(_, count)| count)
                .sum::<f64>()
        )),
        "{exposition}"
    );
    // A bad line is answered, and serving goes on.
    for (line, kind, why) in [
        (json!({"id": "f", "op": "scrape"}), "request", "`op` is"),
        (
            json!({"id": "g", "op": "metrics", "tool": "job_status"}),
            "request",
            "no member \"tool\" in a metrics request",
        ),
        (
            json!({"id": "a", "tool": "nope", "raw_base64": "", "request": {"request_id": "r"}}),
            "contract",
            "no contract for tool `nope`",
        ),
        (
            json!({"id": "b", "tool": "job_status", "raw_base64": "!!", "request": {"request_id": "r", "context": {"project_id": "p", "runs": []}}}),
            "request",
            "not base64",
        ),
        (
            json!({"id": "c", "tool": "job_status", "raw_base64": "", "request": {"request_id": "r"}}),
            "request",
            "lacks `project_id`",
        ),
        (
            json!({"id": "d", "tool": "job_status", "raw": "{}", "request": {"request_id": "r"}}),
            "request",
            "no member \"raw\"",
        ),
        (
            json!({"id": "e", "tool": "job_status", "raw_base64": "", "request": {"id": "r"}}),
            "request",
            "`request`",
        ),
    ] {
        let answered = answer(line.clone());
        assert_eq!(answered["id"], line["id"]);
        assert_eq!(answered["error"]["kind"], kind, "{answered}");
        assert!(
            answered["error"]["message"].as_str().unwrap().contains(why),
            "{answered}"
        );
    }
    // Lines that decided nothing counted nothing, and named no series.
    let after = answer(json!({"id": "n", "op": "metrics"}));
    assert_eq!(counted(&after["metrics"]), expected);
    assert!(
        !after["metrics"]["exposition"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    writeln!(input, "not json").unwrap();
    input.flush().unwrap();
    let mut text = String::new();
    output.read_line(&mut text).unwrap();
    assert!(text.contains("\"kind\":\"request\""), "{text}");
    drop(input);
    assert!(serve.wait().unwrap().success());
}

#[test]
fn the_node_example_decides_through_serve() {
    let node = Command::new("node").arg("--version").output();
    if node.is_err() {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_NODE").is_none(),
            "node is required (TOOLGATE_REQUIRE_NODE) but not found"
        );
        eprintln!("the Node.js example did not run: no `node` on PATH");
        return;
    }
    let tool = "job_status";
    for raw in [
        "accepted/failed_run.json",
        "near-miss/another_requests_answer.json",
    ] {
        let raw = root().join("fixtures").join(tool).join(raw);
        let output = Command::new("node")
            .arg(root().join("examples/node/gate-client.mjs"))
            .arg(root())
            .arg(tool)
            .arg(&raw)
            .arg(root().join("fixtures").join(tool).join("request.json"))
            .arg("v2")
            .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let decision: Value = serde_json::from_slice(&output.stdout).unwrap();
        let (agent, audit) = check(tool, "v2", &raw);
        let mut sent = base64::engine::general_purpose::STANDARD
            .decode(decision["agent_base64"].as_str().unwrap())
            .unwrap();
        // `toolgate check` ends its one line with a newline.
        sent.push(b'\n');
        assert_eq!(
            sent, agent,
            "the bytes the example sends are the tested ones"
        );
        assert_eq!(
            served_event(&decision),
            serde_json::from_slice::<Value>(&audit).unwrap()
        );
    }
}

#[test]
fn serve_audits_every_decision_and_answers_an_overlong_line_without_reading_it() {
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--stdio", "--max-line-bytes", "4096", "--root"])
        .arg(root())
        .arg("--audit")
        .arg(audit.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let raw = root().join("fixtures/job_status/accepted/failed_run.json");
    let line = json!({
        "id": 1,
        "tool": "job_status",
        "raw_base64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(&raw).unwrap()),
        "request": request("job_status", &raw),
    });
    let mut input = serve.stdin.take().unwrap();
    writeln!(input, "{}", "x".repeat(10_000)).unwrap();
    writeln!(input, "{line}").unwrap();
    drop(input);
    let output = serve.wait_with_output().unwrap();
    assert!(output.status.success());
    let answers: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(
        answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 4096 bytes")
    );
    assert_eq!(answers[1]["decision"]["outcome"], "admitted");
    let audited = String::from_utf8(unchained(&std::fs::read(audit.path()).unwrap())).unwrap();
    assert_eq!(
        audited,
        format!(
            "{}\n",
            answers[1]["decision"]["audit_line"].as_str().unwrap()
        )
    );
}

/// `serve --metrics ADDR` serves the same counters to a scraper: what it decided, in the
/// Prometheus text format, and 404 off the metrics path.
#[test]
fn serve_serves_its_metrics_to_a_scraper() {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--stdio", "--metrics", "127.0.0.1:0", "--root"])
        .arg(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(serve.stderr.take().unwrap());
    let mut said = String::new();
    stderr.read_line(&mut said).unwrap();
    let address = said
        .trim()
        .strip_prefix("toolgate serve: metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address: {said:?}"))
        .to_owned();
    let raw = root().join("fixtures/job_status/accepted/failed_run.json");
    let mut input = serve.stdin.take().unwrap();
    let mut output = BufReader::new(serve.stdout.take().unwrap());
    writeln!(
        input,
        "{}",
        json!({"id": 1, "tool": "job_status", "version": "v1",
               "raw_base64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(&raw).unwrap()),
               "request": request("job_status", &raw)})
    )
    .unwrap();
    input.flush().unwrap();
    let mut answered = String::new();
    output.read_line(&mut answered).unwrap();
    assert!(answered.contains("\"outcome\":\"admitted\""), "{answered}");
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    };
    let scraped = get("/metrics");
    assert!(scraped.starts_with("HTTP/1.1 200"), "{scraped}");
    assert!(scraped.contains("text/plain; version=0.0.4"), "{scraped}");
    assert!(
        scraped.contains("toolgate_decisions_total{tool=\"job_status\",contract_version=\"v1\",direction=\"result\",outcome=\"admitted\",layer=\"none\",code=\"none\"} 1"),
        "{scraped}"
    );
    assert!(get("/other").starts_with("HTTP/1.1 404"));
    drop(input);
    assert!(serve.wait().unwrap().success());
}

/// The audit event `serve` answered with, less the call id it gives each call it serves (`check`
/// serves none): the rest is the same event, member for member.
fn served_event(decision: &Value) -> Value {
    let mut event: Value = serde_json::from_str(decision["audit_line"].as_str().unwrap()).unwrap();
    let call_id = event
        .as_object_mut()
        .and_then(|event| event.remove("call_id"));
    assert!(
        call_id
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|id| id.contains('-')),
        "serve names each call: {decision}"
    );
    event
}
