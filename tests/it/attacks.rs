//! The harness as an attack surface. CI runs `toolgate test` on pull requests, and a pull request
//! controls the fixture tree: each test here builds a hostile tree in a temporary folder (a copy
//! of the repository's, then broken on purpose) and runs the real binary on it under a time
//! limit. None of them may make the harness read or write outside the root, hang, read without
//! bound, believe a claim, or print a control sequence.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{Run, run_within, toolgate_test_command, tree};

/// Generous for a debug build on two cores; a hang is minutes, not seconds.
const LIMIT: Duration = Duration::from_secs(90);

fn toolgate_test(root: &Path, extra: &[&str], ci: bool) -> Run {
    run_within(toolgate_test_command(root, extra, ci), LIMIT)
}

/// Every file below `folder` with its content (symlinks as their target), to prove nothing changed.
fn contents(folder: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![folder.to_path_buf()];
    while let Some(path) = pending.pop() {
        let metadata = fs::symlink_metadata(&path).unwrap();
        if metadata.file_type().is_symlink() {
            let target = fs::read_link(&path).unwrap();
            found.insert(path, target.into_os_string().into_encoded_bytes());
        } else if metadata.is_dir() {
            pending.extend(
                fs::read_dir(&path)
                    .unwrap()
                    .map(|entry| entry.unwrap().path()),
            );
        } else {
            found.insert(path.clone(), fs::read(&path).unwrap());
        }
    }
    found
}

fn assert_shows(run: &Run, code: i32, expected: &[&str]) {
    assert_eq!(
        run.code, code,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    for text in expected {
        assert!(
            run.stdout.contains(text) || run.stderr.contains(text),
            "missing {text:?} in:\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
}

fn replace_with_symlink(path: &Path, target: &Path) {
    if path.is_dir() {
        fs::remove_dir_all(path).unwrap();
    } else if path.exists() {
        fs::remove_file(path).unwrap();
    }
    symlink(target, path).unwrap();
}

#[test]
fn symlinks_out_of_the_repository_are_refused_and_never_read() {
    let dir = tree();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    fs::write(&secret, r#"{"private_key":"OUTSIDE-SECRET-3141"}"#).unwrap();
    // A tool's whole fixture folder, a class folder, and one raw file lead outside.
    let moved = outside.path().join("job_status");
    crate::common::copy(&dir.path().join("fixtures/job_status"), &moved);
    replace_with_symlink(&dir.path().join("fixtures/job_status"), &moved);
    replace_with_symlink(
        &dir.path().join("fixtures/review_status/near-miss"),
        outside.path(),
    );
    replace_with_symlink(
        &dir.path()
            .join("fixtures/close_ticket/accepted/ticket_7.json"),
        &secret,
    );
    // And a tool's contract folder.
    let contract = outside.path().join("release_status");
    crate::common::copy(&dir.path().join("contracts/release_status"), &contract);
    replace_with_symlink(&dir.path().join("contracts/release_status"), &contract);

    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        2,
        &[
            "fixtures/job_status: a symlink that leads outside the repository",
            "fixtures/review_status/near-miss: a symlink that leads outside the repository",
            "fixtures/close_ticket/accepted/ticket_7.json: a symlink that leads outside the repository",
            "contracts/release_status: a symlink that leads outside the repository",
        ],
    );
    assert!(!run.stdout.contains("OUTSIDE-SECRET"), "{}", run.stdout);
}

#[test]
fn accepting_never_writes_or_deletes_outside_the_repository() {
    let dir = tree();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    fs::write(&victim, "keep me").unwrap();
    // A tool's snapshot folder leads outside: accepting would write there.
    let elsewhere = outside.path().join("job_status_snapshots");
    fs::create_dir(&elsewhere).unwrap();
    replace_with_symlink(&dir.path().join("snapshots/job_status"), &elsewhere);
    // A stale "snapshot" that is a symlink to a file outside: removing stale files must not
    // delete (or follow) it.
    symlink(
        &victim,
        dir.path()
            .join("snapshots/review_status/accepted/gone@v1.snap"),
    )
    .unwrap();
    // A dangling symlink where a snapshot will be written: never written through.
    let target = outside.path().join("created-through-a-dangling-link.snap");
    replace_with_symlink(
        &dir.path()
            .join("snapshots/close_ticket/accepted/ticket_7@v1.snap"),
        &target,
    );
    // A stale file that is not a snapshot: reported, never removed.
    fs::write(dir.path().join("snapshots/notes.txt"), "mine").unwrap();
    let before = contents(outside.path());

    let run = toolgate_test(dir.path(), &["--accept"], false);
    assert_eq!(contents(outside.path()), before, "{}", run.stdout);
    assert!(!target.exists());
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");
    assert!(dir.path().join("snapshots/notes.txt").exists());
    assert_shows(
        &run,
        2,
        &[
            "snapshots/job_status: a symlink that leads outside the repository",
            "snapshots/close_ticket/accepted/ticket_7@v1.snap: a symlink that leads nowhere",
            "snapshots/notes.txt: not a snapshot file, so toolgate does not remove it",
        ],
    );
}

#[test]
fn in_ci_nothing_is_written_or_deleted_and_leftovers_are_reported() {
    let dir = tree();
    let leftover = dir
        .path()
        .join("snapshots/job_status/accepted/failed_run@v1.snap.new");
    fs::write(&leftover, "an earlier local run's pending snapshot").unwrap();
    fs::remove_file(
        dir.path()
            .join("snapshots/job_status/accepted/not_found@v1.snap"),
    )
    .unwrap();
    fs::write(dir.path().join("snapshots/job_status/stale@v1.snap"), "x").unwrap();
    let before = contents(dir.path());
    let run = toolgate_test(dir.path(), &[], true);
    assert_eq!(
        contents(dir.path()),
        before,
        "CI wrote or deleted something"
    );
    assert_shows(
        &run,
        1,
        &[
            "failed_run@v1.snap.new: a pending snapshot that was never reviewed",
            "no snapshot at snapshots/job_status/accepted/not_found@v1.snap (nothing is written in CI)",
            "snapshots/job_status/stale@v1.snap: no fixture produces this snapshot",
        ],
    );
}

#[test]
fn a_sidecar_cannot_point_its_request_outside_the_tool_folder() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/accepted/failed_run.expect.yaml");
    let text = fs::read_to_string(&sidecar).unwrap();
    fs::write(&sidecar, format!("{text}request: ../../../../etc/passwd\n")).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        2,
        &[
            "failed_run.expect.yaml:3:10: request: \"../../../../etc/passwd\" must be a plain file name",
        ],
    );
}

#[test]
fn a_fifo_or_a_huge_sparse_file_is_an_error_never_a_hang() {
    let dir = tree();
    let fifo = dir
        .path()
        .join("fixtures/job_status/accepted/failed_run.json");
    fs::remove_file(&fifo).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // 16 GiB that take no disk: read whole, they would exhaust memory.
    let huge = fs::File::create(
        dir.path()
            .join("fixtures/job_status/accepted/not_found.json"),
    )
    .unwrap();
    huge.set_len(16 << 30).unwrap();
    let sidecar = fs::File::create(
        dir.path()
            .join("fixtures/job_status/near-miss/null_data.expect.yaml"),
    )
    .unwrap();
    sidecar.set_len(2 << 30).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        2,
        &[
            "FAILED job_status::accepted::failed_run",
            "cannot load: fixtures/job_status/accepted/failed_run.json: not a regular file (a FIFO, socket or device)",
            // Read like `toolgate check` reads a response: one byte past the limit, then refused.
            "admitted failure NOT_FOUND, not retryable, but the gate decided: rejected at transport, rule max_bytes",
            "fixtures/job_status/near-miss/null_data.expect.yaml: larger than 1048576 bytes",
        ],
    );
}

#[test]
fn snapshots_insta_would_warn_about_fail_their_own_case_and_never_hang() {
    let dir = tree();
    let snapshot = |case: &str| {
        dir.path()
            .join(format!("snapshots/review_status/accepted/{case}@v1.snap"))
    };
    let cases: Vec<String> = fs::read_dir(dir.path().join("snapshots/review_status/accepted"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix("@v1.snap").map(str::to_owned)
        })
        .collect();
    assert!(cases.len() >= 4, "{cases:?}");
    fs::write(snapshot(&cases[0]), "").unwrap();
    let text = fs::read_to_string(snapshot(&cases[1])).unwrap();
    fs::write(snapshot(&cases[1]), format!("\u{feff}{text}")).unwrap();
    fs::write(
        snapshot(&cases[2]),
        "Created: 2019-01-01T00:00:00Z\nCreator: insta@0.1\nExpression: x\n\n{}\n",
    )
    .unwrap();
    fs::write(
        snapshot(&cases[3]),
        format!("---\nsource: {}\n---\n{{}}\n", "[".repeat(100_000)),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        1,
        &[
            "an empty file, not a snapshot",
            "starts with a byte-order mark",
            "insta calls this format legacy",
            "is not one of insta's `key: value` lines",
        ],
    );
    assert!(
        !run.stderr.contains("legacy snapshot format"),
        "insta warned: {}",
        run.stderr
    );
}

#[test]
fn a_snapshot_header_naming_another_fixture_is_drift() {
    let dir = tree();
    let snapshot = dir
        .path()
        .join("snapshots/job_status/accepted/failed_run@v1.snap");
    let text = fs::read_to_string(&snapshot).unwrap();
    let edited = text.replacen(
        "source: fixtures/job_status/accepted/failed_run.json",
        "source: fixtures/job_status/accepted/failed_run_reordered.json",
        1,
    );
    assert_ne!(edited, text);
    fs::write(&snapshot, edited).unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        1,
        &[
            "FAILED job_status::accepted::failed_run",
            "-source: fixtures/job_status/accepted/failed_run_reordered.json",
            "+source: fixtures/job_status/accepted/failed_run.json",
        ],
    );
}

#[test]
fn a_contract_with_quoted_scalars_is_one_error_at_its_line_and_its_cases_do_not_run() {
    let dir = tree();
    let contract = dir.path().join("contracts/job_status/v1/contract.yaml");
    let text = fs::read_to_string(&contract).unwrap();
    fs::write(
        &contract,
        text.replacen("retryable: false", "retryable: \"false\"", 1),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_shows(
        &run,
        2,
        &[
            "FAILED job_status::contracts",
            "contracts/job_status/v1/contract.yaml:26:16 at /rules/0/retryable: retryable must be true or false",
            "26 cases were not run because their contract does not compile",
        ],
    );
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        errors.len(),
        1,
        "one line on stderr, not one per fixture: {errors:?}"
    );
    assert_eq!(run.stdout.matches("FAILED").count(), 3, "{}", run.stdout);
}

#[test]
fn what_the_tree_says_is_escaped_for_the_terminal_and_quoted_for_the_shell() {
    let dir = tree();
    let sidecar = dir
        .path()
        .join("fixtures/job_status/near-miss/copperhead_project.expect.yaml");
    let text = fs::read_to_string(&sidecar).unwrap();
    fs::write(
        &sidecar,
        format!("{text}request_id: \"req.$(touch pwned)\\e[2J\\u202egnp.\"\n"),
    )
    .unwrap();
    let renamed = "fixtures/job_status/accepted/failed_run.json\u{1b}]0;owned\u{7}";
    fs::rename(
        dir.path()
            .join("fixtures/job_status/accepted/failed_run.json"),
        dir.path().join(renamed),
    )
    .unwrap();
    let run = toolgate_test(dir.path(), &[], true);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    for hidden in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(
            !run.stdout.contains(hidden),
            "U+{:04X} reached the terminal",
            hidden as u32
        );
        assert!(
            !run.stderr.contains(hidden),
            "U+{:04X} reached stderr",
            hidden as u32
        );
    }
    assert!(run.stdout.contains("\\u{001b}"), "{}", run.stdout);
    // The reproduce line quotes the id: pasting it runs `toolgate check` and nothing else.
    assert!(
        run.stdout
            .contains("--request-id 'req.$(touch pwned)\\u{001b}[2J\\u{202e}gnp.'"),
        "{}",
        run.stdout
    );
    assert!(!dir.path().join("pwned").exists());
}

/// Whether a GitHub Actions runner would read `line` as a command toolgate did not mean: the
/// legacy `##[command]` anywhere, or a `::command::` at its start other than toolgate's own
/// annotations (`::error file=…`, `::notice title=toolgate::`).
fn forges_a_command(line: &str) -> bool {
    let start = line.trim_start();
    line.contains("##[")
        || (start.starts_with("::")
            && !start.starts_with("::error ")
            && !start.starts_with("::notice title=toolgate::"))
}

#[test]
fn names_and_values_from_the_tree_cannot_forge_a_ci_command() {
    let dir = tree();
    let root = dir.path();
    // A class folder, a fixture-root file, a raw file without a sidecar, and a sidecar value, each
    // named or written as a workflow command.
    fs::create_dir_all(root.join("fixtures/review_status/##[add-mask]secret")).unwrap();
    fs::write(root.join("fixtures/::warning::forged"), "").unwrap();
    fs::write(
        root.join("fixtures/job_status/accepted/##[group]x.json"),
        "{}",
    )
    .unwrap();
    fs::write(
        root.join("fixtures/job_status/near-miss/null_data.expect.yaml"),
        "expect: { outcome: rejected, layer: '::error::forged ##[endgroup]' }\n",
    )
    .unwrap();
    for format in ["human", "github", "markdown", "json", "junit"] {
        let run = toolgate_test(root, &["--format", format], true);
        assert_eq!(run.code, 2, "{format}: {}", run.stdout);
        for line in run.stdout.lines().chain(run.stderr.lines()) {
            assert!(!forges_a_command(line), "{format}: {line}");
        }
        // The names are still shown, escaped.
        if format == "human" {
            assert!(
                run.stdout.contains("\\u{23}#[add-mask]secret"),
                "{}",
                run.stdout
            );
        }
    }
}

#[test]
fn property_names_cannot_forge_a_ci_command_in_lint_diff_or_mutate() {
    let dir = tree();
    let root = dir.path();
    let schema = root.join("contracts/review_status/v2/envelope.schema.json");
    let text = fs::read_to_string(&schema).unwrap();
    fs::write(
        &schema,
        text.replace(
            r###""reviewed_by": { "type": "string", "minLength": 1, "maxLength": 128 },"###,
            r###""reviewed_by": { "type": "string", "minLength": 1, "maxLength": 128 },
        "##[add-mask]p": { "type": "string" },
        "::error::q": {},"###,
        ),
    )
    .unwrap();
    for args in [
        vec!["lint"],
        vec!["mutate", "review_status"],
        vec!["diff", "review_status"],
        vec!["diff", "review_status", "--format", "markdown"],
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(&args)
            .arg("--root")
            .arg(root)
            .env("NO_COLOR", "1");
        let run = run_within(command, LIMIT);
        assert!(run.code <= 1, "{args:?}: {}", run.stderr);
        for line in run.stdout.lines().chain(run.stderr.lines()) {
            assert!(!forges_a_command(line), "{args:?}: {line}");
        }
        if args[0] != "mutate" {
            assert!(
                run.stdout.contains("#[add-mask]p"),
                "{args:?} names the property: {}",
                run.stdout
            );
        }
    }
}

#[test]
fn no_write_goes_through_a_symlink_the_pull_request_committed() {
    let dir = tree();
    let root = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let keys = outside.path().join("authorized_keys");
    fs::write(&keys, "keep").unwrap();
    // --report and the job summary: a committed symlink at the report's path.
    symlink(&keys, root.join("toolgate.xml")).unwrap();
    // Named relative to the checkout, as a workflow names it.
    let mut report = toolgate_test_command(root, &["--report", "junit=toolgate.xml"], true);
    report.current_dir(root);
    let report = run_within(report, LIMIT);
    assert_eq!(report.code, 2, "{}", report.stdout);
    assert!(
        report.stderr.contains(
            "toolgate.xml: a symlink, so the junit report (toolgate.xml) is not written through it"
        ),
        "{}",
        report.stderr
    );
    let mut summary = toolgate_test_command(root, &["--format", "github"], true);
    summary.env("GITHUB_STEP_SUMMARY", root.join("toolgate.xml"));
    let summary = run_within(summary, LIMIT);
    assert_eq!(summary.code, 2, "{}", summary.stdout);
    assert!(
        summary.stderr.contains("the job summary"),
        "{}",
        summary.stderr
    );
    assert_eq!(fs::read_to_string(&keys).unwrap(), "keep");

    // --accept: a tool's snapshot folder that leads into its own locked contract version.
    let contract = root.join("contracts/close_ticket/v1/contract.yaml");
    let locked = fs::read(&contract).unwrap();
    fs::remove_dir_all(root.join("snapshots/close_ticket")).unwrap();
    symlink(
        root.join("contracts/close_ticket/v1"),
        root.join("snapshots/close_ticket"),
    )
    .unwrap();
    let before = contents(&root.join("contracts"));
    let accepted = toolgate_test(root, &["--accept", "close_ticket"], false);
    assert_ne!(accepted.code, 0, "{}", accepted.stdout);
    assert!(
        accepted
            .stdout
            .contains("snapshots/close_ticket: a symlink, so"),
        "{}",
        accepted.stdout
    );
    assert_eq!(contents(&root.join("contracts")), before);
    assert_eq!(fs::read(&contract).unwrap(), locked);

    // --save-fixture: a class folder that leads into a locked contract version.
    fs::remove_dir_all(root.join("fixtures/job_status/near-miss")).unwrap();
    symlink(
        root.join("contracts/job_status/v1"),
        root.join("fixtures/job_status/near-miss"),
    )
    .unwrap();
    let before = contents(&root.join("contracts"));
    let mut save = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    save.args([
        "check",
        "job_status",
        "--request",
        "fixtures/job_status/request.json",
    ])
    .args(["--save-fixture", "near-miss/planted", "--root"])
    .arg(root)
    .current_dir(root)
    .stdin(std::process::Stdio::null());
    let saved = run_within(save, LIMIT);
    assert_eq!(saved.code, 2, "{}", saved.stderr);
    assert!(
        saved
            .stderr
            .contains("fixtures/job_status/near-miss: a symlink, so"),
        "{}",
        saved.stderr
    );
    assert_eq!(contents(&root.join("contracts")), before);
}
