//! Hostile and broken input to the tools themselves. Every usage or configuration error exits 2
//! with one clear line naming the file; responses that are merely bad are rejections (exit 1, the
//! fixed failure envelope on stdout), including a 1 GiB body that is never read whole.

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{Run, repo_root, run, snapshot_env, tree};

const REQUEST_ID: &str = "req.J7q94MkP";

fn toolgate(dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.args(args).current_dir(dir);
    snapshot_env(&mut command, true);
    run(command, stdin)
}

fn edit(dir: &Path, file: &str, from: &str, to: &str) {
    let path = dir.join(file);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} does not contain {from:?}");
    fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

/// Exit 2, nothing on stdout (for check), and exactly this first line on stderr.
fn assert_usage_error(run: &Run, first_line: &str) {
    assert_eq!(
        run.code, 2,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let line = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        line,
        format!("toolgate: error: {first_line}"),
        "full stderr:\n{}",
        run.stderr
    );
}

fn check_ticket(dir: &Path, body: &[u8]) -> Run {
    toolgate(
        dir,
        &[
            "check",
            "close_ticket",
            "--request",
            "fixtures/close_ticket/request.json",
        ],
        body,
    )
}

/// `toolgate check job_status` against v1, the version these cases break on purpose.
fn check_job(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["check", "job_status"];
    if !extra.contains(&"--request") {
        args.extend(["--request", "fixtures/job_status/request.json"]);
    }
    if !extra.contains(&"--contract-version") {
        args.extend(["--contract-version", "v1"]);
    }
    args.extend_from_slice(extra);
    let body = fs::read(repo_root().join("fixtures/job_status/accepted/failed_run.json")).unwrap();
    toolgate(dir, &args, &body)
}

#[test]
fn a_missing_contracts_folder() {
    let dir = tempfile::tempdir().unwrap();
    assert_usage_error(
        &toolgate(
            dir.path(),
            &["check", "job_status", "--request-id", REQUEST_ID],
            b"{}",
        ),
        "contracts: no contracts folder here (expected contracts/<tool>/v<N>/contract.yaml); pass --root with the repository's folder",
    );
    assert_usage_error(
        &toolgate(dir.path(), &["test"], b""),
        "contracts: no contracts folder here (expected contracts/<tool>/v<N>/contract.yaml); pass --root with the repository's folder",
    );
}

#[test]
fn a_contract_with_a_duplicate_yaml_key() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/contract.yaml",
        "direction: result\n",
        "direction: result\ndirection: action\n",
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/v1/contract.yaml:5:1: duplicate mapping key: direction (each key may appear once)",
    );
}

#[test]
fn a_contract_with_a_yaml_1_1_boolean() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/contract.yaml",
        "retryable: false",
        "retryable: no",
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/v1/contract.yaml:26:16 at /rules/0/retryable: retryable must be true or false; \"no\" is not a boolean (no quotes, no yes/no)",
    );
}

#[test]
fn a_schema_that_does_not_compile() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/envelope.schema.json",
        r#""enum": ["failed", "running""#,
        r#""enum": "failed", "x": ["running""#,
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        r#"contracts/job_status/v1/envelope.schema.json at /$defs/run/properties/state/enum: "failed" is not of type "array""#,
    );
}

#[test]
fn a_schema_that_is_not_json() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/agent.schema.json",
        "\"title\"",
        "title",
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/v1/agent.schema.json: not strict JSON (syntax): key must be a string at line 3 column 3",
    );
}

#[test]
fn an_unknown_format() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/envelope.schema.json",
        r#""format": "date-time""#,
        r#""format": "date-tme""#,
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/v1/envelope.schema.json at /$defs/run/properties/observed_at/format: Unknown format: 'date-tme'. Adjust configuration to ignore unrecognized formats",
    );
}

#[test]
fn a_remote_ref_is_refused_and_never_fetched() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!(
        "http://127.0.0.1:{}/run.schema.json",
        listener.local_addr().unwrap().port()
    );
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/envelope.schema.json",
        r##""data": { "$ref": "#/$defs/run" }"##,
        &format!(r#""data": {{ "$ref": "{url}" }}"#),
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        &format!(
            "contracts/job_status/v1/envelope.schema.json: cannot resolve `$ref` to {url}: toolgate never fetches schemas over the network; copy the schema into the contract folder and refer to it by file name"
        ),
    );
    match listener.accept() {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the gate connected to the remote $ref: {other:?}"),
    }
}

#[test]
fn a_ref_escaping_the_contract_folder() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/close_ticket/v1/proposal.schema.json",
        r#""reason": {"type": "string""#,
        r#""reason": {"$ref": "../../review_status/v1/envelope.schema.json", "type": "string""#,
    );
    let body = br#"{"action":"close_ticket","ticket_id":7,"reason":"x"}"#;
    assert_usage_error(
        &check_ticket(dir.path(), body),
        "contracts/close_ticket/v1/proposal.schema.json: cannot resolve `$ref` to toolgate://contract/review_status/v1/envelope.schema.json: it points outside the contract folder; a contract version must be self-contained, so copy the schema into its folder",
    );
}

#[test]
fn a_schema_written_for_another_draft() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/close_ticket/v1/proposal.schema.json",
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-07/schema#",
    );
    let body = br#"{"action":"close_ticket","ticket_id":7,"reason":"x"}"#;
    assert_usage_error(
        &check_ticket(dir.path(), body),
        "contracts/close_ticket/v1/proposal.schema.json at /$schema: `$schema` is \"http://json-schema.org/draft-07/schema#\"; toolgate reads every schema as Draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`) (fix: rewrite the schema for 2020-12, or drop `$schema`)",
    );
}

#[test]
fn a_contract_in_the_wrong_tool_folder() {
    let dir = tree();
    edit(
        dir.path(),
        "contracts/job_status/v1/contract.yaml",
        "tool: job_status",
        "tool: review_status",
    );
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/v1/contract.yaml: says `tool: review_status` but lives in the folder of tool `job_status`",
    );
}

#[test]
fn a_folder_that_is_not_a_version() {
    let dir = tree();
    fs::create_dir_all(dir.path().join("contracts/job_status/draft")).unwrap();
    assert_usage_error(
        &check_job(dir.path(), &[]),
        "contracts/job_status/draft: not a contract version folder; a tool's folder holds only v1, v2, ... (a breaking change is a new version folder), lint.yaml and upstream.pin.json",
    );
}

#[test]
fn an_unknown_tool_and_an_unknown_version() {
    let dir = tree();
    assert_usage_error(
        &toolgate(
            dir.path(),
            &["check", "job_stat", "--request-id", REQUEST_ID],
            b"{}",
        ),
        "contracts/job_stat: no contract for tool `job_stat` (did you mean `job_status`? known tools: job_status, review_status, close_ticket, release_status)",
    );
    assert_usage_error(
        &check_job(dir.path(), &["--contract-version", "v3"]),
        "contracts/job_status: tool `job_status` has no contract version v3 (published: v1, v2)",
    );
    assert_usage_error(
        &check_job(dir.path(), &["--contract-version", "2"]),
        "--contract-version \"2\": write a version folder name such as v1",
    );
}

#[test]
fn an_unreadable_raw_and_a_directory_instead_of_a_raw() {
    let dir = tree();
    assert_usage_error(
        &check_job(dir.path(), &["fixtures/job_status/accepted/no_such.json"]),
        "fixtures/job_status/accepted/no_such.json: cannot open the raw response: No such file or directory (os error 2)",
    );
    assert_usage_error(
        &check_job(dir.path(), &["fixtures/job_status/accepted"]),
        "fixtures/job_status/accepted: is a directory; pass the raw response file",
    );
}

#[test]
fn a_request_file_of_the_wrong_shape_or_not_json() {
    let dir = tree();
    fs::write(dir.path().join("request.json"), "{\"request_id\": 42}\n").unwrap();
    assert_usage_error(
        &check_job(dir.path(), &["--request", "request.json"]),
        "request.json: not a request file: invalid type: integer `42`, expected a string at line 1 column 17 (expected {\"request_id\": ..., \"now\": RFC 3339, \"context\": {...}})",
    );
    assert_usage_error(
        &check_job(dir.path(), &["--request", "no-such-request.json"]),
        "no-such-request.json: cannot read the request file: No such file or directory (os error 2)",
    );
    fs::write(
        dir.path().join("request.json"),
        "{\n  \"request_id\": \"req.J7q94MkP\",\n  \"contxt\": {}\n}\n",
    )
    .unwrap();
    assert_usage_error(
        &check_job(dir.path(), &["--request", "request.json"]),
        "request.json: not a request file: unknown field `contxt`, expected one of `request_id`, `now`, `context`, `upstream`, `upstream_status` at line 3 column 10 (expected {\"request_id\": ..., \"now\": RFC 3339, \"context\": {...}})",
    );
    fs::write(dir.path().join("request.json"), "request_id: req.1\n").unwrap();
    assert_usage_error(
        &check_job(dir.path(), &["--request", "request.json"]),
        "request.json: not a request file: expected value at line 1 column 1 (expected {\"request_id\": ..., \"now\": RFC 3339, \"context\": {...}})",
    );
}

#[test]
fn a_bad_now() {
    let dir = tree();
    assert_usage_error(
        &check_job(dir.path(), &["--now", "2026-11-29 12:00:00"]),
        "--now: \"2026-11-29 12:00:00\" is not an RFC 3339 timestamp (date and time must be joined by `T`); write e.g. 2026-11-29T12:00:00Z",
    );
}

#[test]
fn missing_trusted_context() {
    let dir = tree();
    let body = fs::read(repo_root().join("fixtures/close_ticket/accepted/ticket_7.json")).unwrap();
    assert_usage_error(
        &toolgate(
            dir.path(),
            &["check", "close_ticket", "--request-id", REQUEST_ID],
            &body,
        ),
        "--request-id: the request has no trusted context `tenant`, `tickets`, which the rules of close_ticket v1 read; put it under \"context\" in the --request file",
    );
}

#[test]
fn a_missing_sidecar() {
    let dir = tree();
    fs::remove_file(
        dir.path()
            .join("fixtures/close_ticket/near-miss/ticket_zero.expect.yaml"),
    )
    .unwrap();
    assert_usage_error(
        &toolgate(dir.path(), &["test"], b""),
        "fixtures/close_ticket/near-miss/ticket_zero.json: a raw fixture without its sidecar ticket_zero.expect.yaml (the request and the expected outcome)",
    );
}

#[test]
fn a_malformed_sidecar() {
    let dir = tree();
    fs::write(
        dir.path()
            .join("fixtures/close_ticket/near-miss/ticket_zero.expect.yaml"),
        "expect:\n  outcome: rejected\n  layer: [schema\n",
    )
    .unwrap();
    let run = toolgate(dir.path(), &["test"], b"");
    assert_eq!(run.code, 2, "{}", run.stdout);
    let line = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        line,
        "toolgate: error: fixtures/close_ticket/near-miss/ticket_zero.expect.yaml:3:10: expected string scalar",
        "{}",
        run.stderr
    );
}

#[test]
fn a_sidecar_naming_an_unpublished_version_or_a_missing_request_file() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/close_ticket/near-miss/ticket_zero.expect.yaml");
    let text = fs::read_to_string(&sidecar).unwrap();
    fs::write(&sidecar, format!("{text}versions: [v3]\n")).unwrap();
    assert_usage_error(
        &toolgate(dir.path(), &["test"], b""),
        "fixtures/close_ticket/near-miss/ticket_zero.expect.yaml: `versions` names v3, which is not a published version of close_ticket (v1)",
    );
    fs::write(&sidecar, format!("{text}request: other.json\n")).unwrap();
    assert_usage_error(
        &toolgate(dir.path(), &["test"], b""),
        "fixtures/close_ticket/other.json: no such request file (a sidecar's `request:` names it, or it is the tool's default request.json)",
    );
}

#[test]
fn an_empty_body_is_a_rejection_not_a_usage_error() {
    let dir = tree();
    let run = toolgate(
        dir.path(),
        &[
            "check",
            "review_status",
            "--request",
            "fixtures/review_status/request.json",
            "--explain",
        ],
        b"",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "{\"tool\":\"review_status\",\"request_id\":\"req.J7q94MkP\",\"outcome\":\"failure\",\"error\":{\"code\":\"INVALID_RESPONSE\",\"retryable\":false}}\n"
    );
    assert!(run.stderr.contains("rule `empty`"), "{}", run.stderr);
}

#[test]
fn a_one_gibibyte_body_on_stdin_is_rejected_without_being_read() {
    const GIB: usize = 1 << 30;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "check",
            "close_ticket",
            "--request",
            "fixtures/close_ticket/request.json",
            "--explain",
        ])
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'['; 1 << 20];
        let mut written = 0usize;
        while written < GIB {
            match stdin.write(&chunk) {
                Ok(count) => written += count,
                Err(_) => break, // the gate stopped reading and closed the pipe
            }
        }
        written
    });
    let output = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "{\"tool\":\"close_ticket\",\"request_id\":\"req.J7q94MkP\",\"outcome\":\"failure\",\"error\":{\"code\":\"INVALID_RESPONSE\",\"retryable\":false}}\n"
    );
    let explain = String::from_utf8_lossy(&output.stderr);
    assert!(
        explain.contains("rule `max_bytes`") && explain.contains("at least 4097 bytes"),
        "{explain}"
    );
    assert!(
        written < 64 << 20,
        "the gate read {written} bytes of a 1 GiB body; it must stop just past its limit"
    );
}

/// A store is read back as evidence, but anyone who could write to it may have planted a
/// record: every field `reproduce` prints from one is escaped, so a planted time cannot put
/// escape sequences on a terminal or a line a CI runner reads as a command.
#[test]
fn reproduce_escapes_every_field_it_prints_from_a_store() {
    use toolgate_gate::{Request, Response, Retained, SecretContext};
    use toolgate_store::Store;
    let dir = tempfile::tempdir().unwrap();
    let store = toolgate_store::FolderStore::open(&dir.path().join("kept")).unwrap();
    let contract = toolgate_gate::Contract::compile(
        &toolgate_gate::ContractSource::read_dir(repo_root().join("contracts/review_status/v1"))
            .unwrap(),
    )
    .unwrap();
    let raw = br#"{"tool":"review_status","request_id":"req.J7q94MkP","outcome":"success","data":{"change_id":"CR-1","decision":"maybe","reviewed_by":"ana"}}"#;
    let request = Request::new(REQUEST_ID);
    let now = toolgate_gate::internals::parse_timestamp("2026-11-29T12:00:00Z").unwrap();
    let decision = contract.admit(raw, &request, now);
    let genuine = Retained::of(
        &decision,
        &Response::body(raw),
        &request,
        &SecretContext::none(),
    );
    store.put(&genuine.name(), &genuine.to_bytes()).unwrap();
    let mut planted = genuine.clone();
    planted.time = "\u{1b}]8;;https://evil\u{7}\u{1b}[31m\n::error::planted".to_owned();
    planted.request_id = "\u{202e}reversed".to_owned();
    store.put(&planted.name(), &planted.to_bytes()).unwrap();
    let kept = dir.path().join("kept");
    let run = toolgate(
        &repo_root(),
        &[
            "reproduce",
            "--digest",
            &genuine.raw_sha256,
            "--store",
            kept.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("also decided for request"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{1b}')
            && !run.stderr.contains('\u{202e}')
            && !run.stderr.lines().any(|line| line.starts_with("::")),
        "{:?}",
        run.stderr
    );
}
