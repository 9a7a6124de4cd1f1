//! `toolgate diff --replay STORE`: a bump tried on the traffic a production front kept. A real
//! front (`toolgate serve --retain`, enforcing job_status v1 with v2 in shadow, every admission
//! kept) decides every bundled job_status response; the diff's blast radius is then checked
//! against each kept response decided one by one under both compiled versions, in every
//! rendering, with `--fail-on` thresholds on either side of the count, and without a value of
//! any response in what it prints.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use base64::Engine;
use serde_json::{Value, json};
use toolgate_gate::{Contract, ContractSource, Decision};
use toolgate_store::{Store, StoreSpec, read_retained};

use crate::common::{Run, assert_matches_schema, repo_root, run};

const TOOL: &str = "job_status";

/// Every bundled response of the tool, with the upstream status its sidecar gives.
fn responses() -> Vec<(PathBuf, Option<u16>)> {
    let mut found = Vec::new();
    for class in std::fs::read_dir(repo_root().join("fixtures").join(TOOL)).unwrap() {
        let class = class.unwrap().path();
        if !class.is_dir() {
            continue;
        }
        for raw in std::fs::read_dir(&class).unwrap() {
            let raw = raw.unwrap().path();
            if raw.extension().is_some_and(|ext| ext == "json") {
                let sidecar =
                    std::fs::read_to_string(raw.with_extension("expect.yaml")).unwrap_or_default();
                let status = sidecar.lines().find_map(|line| {
                    line.strip_prefix("upstream_status:")
                        .and_then(|status| status.trim().parse().ok())
                });
                found.push((raw, status));
            }
        }
    }
    found.sort();
    found
}

fn request() -> Value {
    serde_json::from_slice(
        &std::fs::read(repo_root().join("fixtures").join(TOOL).join("request.json")).unwrap(),
    )
    .unwrap()
}

/// `toolgate serve` keeping every decision in `store` (job_status v1 enforced, v2 in shadow);
/// each response sent once, under the tool's request.
fn serve_into(
    store: &str,
    extra: &[&str],
    sent: &[(PathBuf, Option<u16>)],
    edit: impl Fn(&mut Value),
) {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    serve
        .args(["serve", "--stdio", "--root"])
        .arg(repo_root())
        .args([
            "--retain",
            store,
            "--retain-admitted",
            "1",
            "--shadow",
            "v2",
        ])
        .args(extra)
        .env_remove("CI")
        .env_remove("TF_BUILD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut lines = Vec::new();
    for (n, (raw, status)) in sent.iter().enumerate() {
        let mut request = request();
        if let Some(status) = status {
            request["upstream_status"] = json!(status);
        }
        edit(&mut request);
        let line = json!({
            "id": n,
            "tool": TOOL,
            "raw_base64": base64::engine::general_purpose::STANDARD.encode(std::fs::read(raw).unwrap()),
            "request": request,
        });
        writeln!(lines, "{line}").unwrap();
    }
    let served = run(serve, &lines);
    assert_eq!(served.code, 0, "{}", served.stderr);
    assert!(
        served.stderr.contains(&format!("kept {} in", sent.len())),
        "{}",
        served.stderr
    );
    assert_eq!(served.stdout.lines().count(), sent.len());
    for line in served.stdout.lines() {
        let answer: Value = serde_json::from_str(line).unwrap();
        assert!(answer.get("decision").is_some(), "{line}");
    }
}

fn diff(args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["diff", TOOL, "v1", "v2", "--no-search", "--root"])
        .arg(repo_root())
        .args(args);
    run(command, b"")
}

fn compiled(version: &str) -> Contract {
    let folder = repo_root().join("contracts").join(TOOL).join(version);
    Contract::compile(&ContractSource::read_dir(&folder).unwrap()).unwrap()
}

/// A refusing version's (layer, code).
type Cause = (Option<String>, Option<String>);

/// What the report must say, from each kept response decided one by one.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    held: usize,
    undecided: usize,
    /// Per shift: (layer, code) → count, and the raw digests that shift.
    shifts: BTreeMap<&'static str, (BTreeMap<Cause, u64>, Vec<String>)>,
}

fn expected(store: &dyn Store) -> Expected {
    let (v1, v2) = (compiled("v1"), compiled("v2"));
    let mut expected = Expected::default();
    for shift in ["newly_refused", "newly_admitted", "output_changed"] {
        expected.shifts.insert(shift, Default::default());
    }
    for entry in store.list(&format!("{TOOL}/")).unwrap() {
        expected.held += 1;
        let kept = read_retained(store, &entry.name, None).unwrap().unwrap();
        let Ok(request) = kept.request(&serde_json::Map::new(), None) else {
            expected.undecided += 1;
            continue;
        };
        let now = kept.time().unwrap();
        let before = v1.admit_response(kept.response(), &request, now);
        let after = v2.admit_response(kept.response(), &request, now);
        let cause = |decision: &Decision| -> Cause {
            (
                decision
                    .rejection()
                    .map(|rejection| rejection.layer().as_str().to_owned()),
                decision
                    .outcome()
                    .code()
                    .map(|code| code.as_str().to_owned()),
            )
        };
        let (shift, cause) = match (before.is_admitted(), after.is_admitted()) {
            (true, false) => ("newly_refused", cause(&after)),
            (false, true) => ("newly_admitted", cause(&before)),
            _ if before.agent_bytes() != after.agent_bytes() => ("output_changed", (None, None)),
            _ => continue,
        };
        let (causes, digests) = expected.shifts.get_mut(shift).unwrap();
        *causes.entry(cause).or_default() += 1;
        digests.push(kept.raw_sha256.clone());
    }
    expected
}

/// The report's traffic section, in the shape of [`Expected`].
fn reported(traffic: &Value) -> Expected {
    let mut reported = Expected {
        held: traffic["held"].as_u64().unwrap() as usize,
        undecided: traffic["undecided"].as_u64().unwrap() as usize,
        ..Expected::default()
    };
    for shift in ["newly_refused", "newly_admitted", "output_changed"] {
        let section = &traffic[shift];
        let causes = section["by_cause"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cause| {
                let text = |member: &Value| member.as_str().map(str::to_owned);
                (
                    (text(&cause["layer"]), text(&cause["code"])),
                    cause["count"].as_u64().unwrap(),
                )
            })
            .collect();
        let digests = section["examples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|example| example["raw_sha256"].as_str().unwrap().to_owned())
            .collect();
        let count: u64 = BTreeMap::values(&causes).sum();
        assert_eq!(section["count"].as_u64(), Some(count), "{section}");
        reported.shifts.insert(shift, (causes, digests));
    }
    reported
}

/// Every string value (8 characters or more) in the responses sent: none may be printed.
fn values_sent(sent: &[(PathBuf, Option<u16>)]) -> Vec<String> {
    fn walk(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::String(text) if text.chars().count() >= 8 => found.push(text.clone()),
            Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
            Value::Object(members) => members.values().for_each(|item| walk(item, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for (raw, _) in sent {
        if let Ok(value) = serde_json::from_slice::<Value>(&std::fs::read(raw).unwrap()) {
            walk(&value, &mut found);
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Checks the report on `store` against the decisions made one by one, and its thresholds.
fn check_blast_radius(store_arg: &str, store: &dyn Store, extra: &[&str], sent_count: usize) {
    let expected = expected(store);
    let mut args = vec!["--replay", store_arg];
    args.extend_from_slice(extra);
    let json_run = diff(&[args.as_slice(), &["--format", "json"]].concat());
    assert_eq!(json_run.code, 0, "{}", json_run.stderr);
    let report: Value = serde_json::from_str(&json_run.stdout).unwrap();
    assert_matches_schema("diff-report", &report);
    let traffic = &report["traffic"];
    assert_eq!(
        traffic["decided"].as_u64().unwrap() as usize,
        expected.held - expected.undecided
    );
    let reported = reported(traffic);
    assert_eq!(reported.held, sent_count, "{traffic:#}");
    assert_eq!(
        (reported.held, reported.undecided),
        (expected.held, expected.undecided)
    );
    for (shift, (causes, digests)) in &expected.shifts {
        let (reported_causes, examples) = &reported.shifts[shift];
        assert_eq!(reported_causes, causes, "{shift}: {traffic:#}");
        assert_eq!(examples.len(), digests.len().min(5), "{shift}");
        assert!(
            examples.iter().all(|digest| digests.contains(digest)),
            "{shift}: {examples:?} are not among {digests:?}"
        );
    }
    let refused = expected.shifts["newly_refused"].0.values().sum::<u64>() as usize;
    assert!(
        refused > 0,
        "job_status v2 refuses none of what v1 admits: the test shows nothing"
    );

    // --fail-on: the count, plus what could not be decided (unknown is not safe).
    let measured = refused + expected.undecided;
    let fail_on = |value: String| diff(&[args.as_slice(), &["--fail-on", &value]].concat()).code;
    assert_eq!(fail_on("newly-refused".to_owned()), 1);
    assert_eq!(fail_on(format!("newly-refused>{measured}")), 0);
    assert_eq!(fail_on(format!("newly-refused>{}", measured - 1)), 1);
    let share = 100.0 * measured as f64 / expected.held as f64;
    assert_eq!(fail_on(format!("newly-refused>{:.3}%", share + 0.01)), 0);
    assert_eq!(fail_on(format!("newly-refused>{:.3}%", share - 0.01)), 1);
    assert_eq!(fail_on("newly-refused>lots".to_owned()), 2);

    // Human and markdown say the same counts, and print no value of any response.
    let human = diff(&args);
    let markdown = diff(&[args.as_slice(), &["--format", "markdown"]].concat());
    assert!(human.stdout.contains("traffic:"), "{}", human.stdout);
    assert!(
        human
            .stdout
            .contains(&format!("newly refused by v2: {refused} of ")),
        "{}",
        human.stdout
    );
    assert!(markdown.stdout.contains("### Production traffic"));
    for digest in &reported.shifts["newly_refused"].1 {
        assert!(markdown.stdout.contains(digest) && human.stdout.contains(digest));
    }
    // The traffic sections (the fixture replay above them shows committed fixtures' bytes).
    let section = |text: &str, heading: &str| text[text.find(heading).unwrap()..].to_owned();
    let sections = [
        ("human", section(&human.stdout, "traffic:")),
        (
            "markdown",
            section(&markdown.stdout, "### Production traffic"),
        ),
        ("json", traffic.to_string()),
    ];
    // (The tool's own name is one of them: it names the tool, and the records.)
    for value in values_sent(&responses())
        .iter()
        .filter(|value| *value != TOOL)
    {
        for (format, text) in &sections {
            assert!(
                !text.contains(value.as_str()),
                "the {format} report prints the response value {value:?}"
            );
        }
    }
}

#[test]
fn the_blast_radius_is_the_decisions_made_one_by_one() {
    let folder = tempfile::tempdir().unwrap();
    let store_path = folder.path().join("evidence");
    let store_arg = store_path.to_str().unwrap();
    let sent = responses();
    serve_into(store_arg, &[], &sent, |_| {});
    // One more, with a context key kept as a digest only: it cannot be decided again.
    let key = folder.path().join("retain.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    serve_into(
        store_arg,
        &[
            "--retain-secret",
            "project_id",
            "--retain-secret-key",
            key.to_str().unwrap(),
        ],
        &[(
            repo_root().join("fixtures/job_status/near-miss/another_requests_answer.json"),
            None,
        )],
        // A minute later: a decision of its own, not the first one's record written again.
        |request| request["now"] = json!("2026-11-29T12:01:00Z"),
    );
    let store = StoreSpec::parse(store_arg).unwrap().open(None).unwrap();
    check_blast_radius(store_arg, store.as_ref(), &[], sent.len() + 1);

    // Without the store there is nothing to measure: a configuration error, never a pass.
    assert_eq!(diff(&["--fail-on", "newly-refused"]).code, 2);
    let missing = diff(&["--replay", folder.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("no such folder"),
        "{}",
        missing.stderr
    );
    // Without --replay the report is the one it always was.
    let plain: Value = serde_json::from_str(&diff(&["--format", "json"]).stdout).unwrap();
    assert!(plain.get("traffic").is_none());
    // --replay-limit reads the newest N and says how many it left.
    let limited = diff(&["--replay", store_arg, "--replay-limit", "3"]);
    assert!(
        limited.stdout.contains("3 of the") && limited.stdout.contains("older not read"),
        "{}",
        limited.stdout
    );
    // `all` reads every one; 0 and words are refused.
    let every = diff(&["--replay", store_arg, "--replay-limit", "all"]);
    assert!(!every.stdout.contains("older not read"), "{}", every.stdout);
    for wrong in ["0", "lots"] {
        let refused = diff(&["--replay", store_arg, "--replay-limit", wrong]);
        assert_eq!(refused.code, 2, "{wrong}: {}", refused.stderr);
        assert!(refused.stderr.contains("or `all`"), "{}", refused.stderr);
    }
}

#[test]
fn the_blast_radius_is_measured_on_an_s3_store_too() {
    let Ok(endpoint) = std::env::var("TOOLGATE_S3_ENDPOINT") else {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_S3").is_none(),
            "TOOLGATE_REQUIRE_S3 is set, but TOOLGATE_S3_ENDPOINT is not"
        );
        eprintln!("skipped: no S3-compatible server (set TOOLGATE_S3_ENDPOINT, as .ci/run does)");
        return;
    };
    let bucket = std::env::var("TOOLGATE_S3_BUCKET").unwrap_or_else(|_| "evidence".to_owned());
    let prefix = format!(
        "diff-replay-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let store_arg = format!("s3://{bucket}/{prefix}");
    let sent = responses();
    serve_into(&store_arg, &["--retain-endpoint", &endpoint], &sent, |_| {});
    let store = StoreSpec::parse(&store_arg)
        .unwrap()
        .open(Some(&endpoint))
        .unwrap();
    check_blast_radius(
        &store_arg,
        store.as_ref(),
        &["--endpoint", &endpoint],
        sent.len(),
    );
}

#[test]
fn a_sealed_store_is_read_with_its_identity_only() {
    use age::secrecy::ExposeSecret;
    let folder = tempfile::tempdir().unwrap();
    let identity = age::x25519::Identity::generate();
    let identity_file = folder.path().join("identity.txt");
    std::fs::write(&identity_file, identity.to_string().expose_secret()).unwrap();
    let recipient = identity.to_public().to_string();
    let store_path = folder.path().join("evidence");
    let store_arg = store_path.to_str().unwrap();
    let sent: Vec<_> = responses().into_iter().take(4).collect();
    serve_into(
        store_arg,
        &["--retain-recipient", &recipient],
        &sent,
        |_| {},
    );

    // What the front kept, it cannot read back: every object sealed, no response in the clear.
    let kept: Vec<PathBuf> = walk(&store_path);
    assert_eq!(kept.len(), sent.len(), "{kept:?}");
    let request = request();
    let run_id = request["context"]["runs"][0].as_str().unwrap();
    for path in &kept {
        assert!(
            path.to_string_lossy().ends_with(".age"),
            "{}",
            path.display()
        );
        let bytes = std::fs::read(path).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(run_id),
            "{}",
            path.display()
        );
    }

    let without = diff(&["--replay", store_arg]);
    assert_eq!(without.code, 2, "{}", without.stdout);
    assert!(
        without.stderr.contains("--identity FILE"),
        "{}",
        without.stderr
    );
    let identity_arg = identity_file.to_str().unwrap();
    let with = diff(&[
        "--replay",
        store_arg,
        "--identity",
        identity_arg,
        "--format",
        "json",
    ]);
    assert_eq!(with.code, 0, "{}", with.stderr);
    let report: Value = serde_json::from_str(&with.stdout).unwrap();
    assert_eq!(report["traffic"]["held"], json!(sent.len()));
    assert_eq!(
        report["traffic"]["decided"],
        json!(sent.len()),
        "{report:#}"
    );

    // And reproduce opens one with the same identity, and says what it needs without it.
    let digest = toolgate_gate::Sha256Digest::of(&std::fs::read(&sent[0].0).unwrap()).to_hex();
    let reproduce = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args([
                "reproduce",
                "--digest",
                &digest,
                "--store",
                store_arg,
                "--root",
            ])
            .arg(repo_root())
            .args(extra);
        run(command, b"")
    };
    let refused = reproduce(&[]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("--identity FILE"),
        "{}",
        refused.stderr
    );
    let opened = reproduce(&["--identity", identity_arg]);
    assert!(matches!(opened.code, 0 | 1), "{}", opened.stderr);
    assert!(
        opened.stderr.contains("reproduced exactly"),
        "{}",
        opened.stderr
    );
}

/// Every file under `folder`.
fn walk(folder: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}
