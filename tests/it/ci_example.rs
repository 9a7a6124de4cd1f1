//! The pull-request review in `.github/workflows/contracts.yml`, run the way the workflow runs it:
//! its script, fed the paths a pull request changed (the workflow takes them from `git diff`),
//! on a copy of the repository, with the real `toolgate` binary. The workflow itself needs
//! GitHub; everything it decides is in the script.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{copy, repo_root, run, tree};
use serde_json::Value;

/// The review script on `dir`, as if the pull request changed `paths`: its exit code, its
/// stderr, and the comment body.
fn review(dir: &Path, paths: &[&str], reviewed: bool) -> (i32, String, String) {
    let body = dir.join("review.md");
    let mut command = Command::new(repo_root().join(".github/scripts/contract-review"));
    command
        .arg(&body)
        .current_dir(dir)
        .env("TOOLGATE", env!("CARGO_BIN_EXE_toolgate"))
        .env(
            "LOOSENING_REVIEWED",
            if reviewed { "true" } else { "false" },
        )
        .env("NO_COLOR", "1")
        .env_remove("FAIL_ON");
    // As `git diff --name-only -z` writes them: each path followed by a NUL.
    let stdin: Vec<u8> = paths
        .iter()
        .flat_map(|path| [path.as_bytes(), b"\0"].concat())
        .collect();
    let outcome = run(command, &stdin);
    let text = fs::read_to_string(&body).unwrap_or_default();
    (outcome.code, outcome.stderr, text)
}

#[test]
fn a_pull_request_without_contract_changes_gets_no_comment() {
    let dir = tree();
    let paths = [
        "fixtures/job_status/accepted/running.json",
        "contracts/contracts.lock",
        "README.md",
    ];
    let (code, stderr, body) = review(dir.path(), &paths, false);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(body, "");
}

#[test]
fn a_breaking_bump_is_reported_and_may_land() {
    let dir = tree();
    let paths = [
        "contracts/job_status/v2/contract.yaml",
        "contracts/job_status/v2/envelope.schema.json",
    ];
    let (code, stderr, body) = review(dir.path(), &paths, false);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        body.starts_with("<!-- toolgate-contract-review -->\n"),
        "{body}"
    );
    assert!(
        body.contains("**toolgate diff** `job_status` v1 → v2: upstream breaking: **yes** · upstream loosened: no"),
        "{body}"
    );
    assert!(body.contains("| `enum_narrowed` |"), "{body}");
    assert!(
        !body.contains("review_status"),
        "only the changed tool: {body}"
    );
    assert!(!body.contains("nobody has reviewed"), "{body}");
}

#[test]
fn a_loosening_blocks_until_a_reviewer_labels_it() {
    let dir = tree();
    let paths = [
        "contracts/job_status/v2/contract.yaml",
        "contracts/review_status/v2/contract.yaml",
        "contracts/job_status/v2/envelope.schema.json",
    ];
    let (code, stderr, body) = review(dir.path(), &paths, false);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("add the label contract-loosening-reviewed"),
        "{stderr}"
    );
    for tool in ["job_status", "review_status"] {
        assert_eq!(
            body.matches(&format!("**toolgate diff** `{tool}` v1 → v2"))
                .count(),
            1,
            "{body}"
        );
    }
    assert!(body.contains("upstream loosened: **yes**"), "{body}");
    assert!(body.contains("nobody has reviewed it yet"), "{body}");

    let (code, stderr, body) = review(dir.path(), &paths, true);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        body.contains("a reviewer has reviewed it (label `contract-loosening-reviewed`)"),
        "{body}"
    );
}

#[test]
fn a_new_tool_has_nothing_to_compare_and_a_hostile_folder_name_is_refused() {
    let dir = tree();
    copy(
        &repo_root().join("contracts/close_ticket/v1"),
        &dir.path().join("contracts/close_ticket_two/v1"),
    );
    let (code, stderr, body) = review(
        dir.path(),
        &["contracts/close_ticket_two/v1/contract.yaml"],
        false,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        body.contains("`close_ticket_two`: a new tool with one version; nothing to compare yet."),
        "{body}"
    );

    // A folder named like an option, and one with a newline and markdown in its name: neither is
    // run nor printed.
    let paths = [
        "contracts/--fail-on=none/v1/contract.yaml",
        "contracts/x\n**approved**/v1/contract.yaml",
        "contracts/close_ticket_two/v1/contract.yaml",
    ];
    let (code, stderr, body) = review(dir.path(), &paths, false);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        body.contains(
            "**2 changed path(s) under `contracts/` are in a folder whose name is not a tool name**"
        ),
        "{body}"
    );
    assert!(
        !body.contains("fail-on=none") && !body.contains("**approved**"),
        "{body}"
    );
}

/// `git args…` in `dir`, which must succeed; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=toolgate",
            "-c",
            "user.email=toolgate@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// What one workflow job left behind.
struct JobRun {
    /// Each step's name (or first line) and exit code, in order; skipped steps are absent.
    steps: Vec<(String, i32)>,
    summary: String,
    temp: tempfile::TempDir,
}

/// Runs the `run:` steps of `job` in `.github/workflows/contracts.yml` in `repo`, in order, as
/// the runner would (bash -e, the workflow's, job's and step's environment, `GITHUB_OUTPUT`,
/// `GITHUB_STEP_SUMMARY`, `RUNNER_TEMP`), with `bin` first on PATH. `expressions` gives the
/// value of each `${{ … }}` the steps' environment uses; `steps.<id>.outputs.<name>` is read from
/// what earlier steps wrote. A step whose `if:` names the pull request's own repository runs only
/// when `same_repository`; a failing step ends the job, as on GitHub.
fn run_job(
    repo: &Path,
    job: &str,
    bin: &Path,
    expressions: &[(&str, &str)],
    same_repository: bool,
) -> JobRun {
    let workflow: Value = toolgate_gate::internals::read_strict_yaml(
        &fs::read_to_string(repo.join(".github/workflows/contracts.yml")).unwrap(),
    )
    .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let summary = temp.path().join("summary.md");
    let mut outputs: Vec<(String, String, String)> = Vec::new(); // (step id, name, value)
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let value_of = |expression: &str, outputs: &[(String, String, String)]| -> String {
        let inner = expression
            .trim()
            .strip_prefix("${{")
            .and_then(|rest| rest.strip_suffix("}}"))
            .map(str::trim);
        let Some(inner) = inner else {
            return expression.to_owned();
        };
        if let Some(rest) = inner.strip_prefix("steps.") {
            let (id, name) = rest.split_once(".outputs.").unwrap();
            return outputs
                .iter()
                .rev()
                .find(|(step, key, _)| step == id && key == name)
                .map(|(_, _, value)| value.clone())
                .unwrap_or_default();
        }
        expressions
            .iter()
            .find(|(known, _)| *known == inner)
            .unwrap_or_else(|| panic!("the test gives no value for `{inner}`"))
            .1
            .to_owned()
    };
    let mut steps = Vec::new();
    let job_env = &workflow["jobs"][job]["env"];
    for step in workflow["jobs"][job]["steps"].as_array().unwrap() {
        let Some(script) = step["run"].as_str() else {
            continue; // `uses:` steps: checkout, toolchain, cache, upload
        };
        if let Some(condition) = step["if"].as_str() {
            assert_eq!(
                condition,
                "github.event.pull_request.head.repo.full_name == github.repository"
            );
            if !same_repository {
                continue;
            }
        }
        let output_file = temp.path().join("output");
        fs::write(&output_file, "").unwrap();
        let mut command = Command::new("bash");
        command
            .args(["-e", "-c", script])
            .current_dir(repo)
            .env("PATH", &path)
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("RUNNER_TEMP", temp.path())
            .env("NO_COLOR", "1")
            .env_remove("CI");
        for env in [&workflow["env"], job_env, &step["env"]] {
            for (name, value) in env.as_object().into_iter().flatten() {
                let value = match value {
                    Value::String(text) => value_of(text, &outputs),
                    other => other.to_string(),
                };
                command.env(name, value);
            }
        }
        let outcome = run(command, b"");
        let name = step["name"].as_str().map_or_else(
            || script.lines().next().unwrap_or_default().to_owned(),
            str::to_owned,
        );
        if let Some(id) = step["id"].as_str() {
            for line in fs::read_to_string(&output_file).unwrap().lines() {
                if let Some((key, value)) = line.split_once('=') {
                    outputs.push((id.to_owned(), key.to_owned(), value.to_owned()));
                }
            }
        }
        steps.push((name, outcome.code));
        if outcome.code != 0 {
            break;
        }
    }
    JobRun {
        steps,
        summary: fs::read_to_string(&summary).unwrap_or_default(),
        temp,
    }
}

#[cfg(unix)]
#[test]
fn the_contracts_repository_workflow_runs_step_by_step_on_a_repository_of_contracts_only() {
    // A repository of contracts: no Cargo.toml, no Rust; the workflow and its script copied in.
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    for folder in ["contracts", "fixtures", "snapshots"] {
        copy(&repo_root().join(folder), &root.join(folder));
    }
    for file in [
        ".github/workflows/contracts.yml",
        ".github/scripts/contract-review",
    ] {
        fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
        fs::copy(repo_root().join(file), root.join(file)).unwrap();
    }
    git(root, &["init", "--quiet"]);
    git(root, &["add", "--all"]);
    git(root, &["commit", "--quiet", "-m", "contracts"]);
    let base = git(root, &["rev-parse", "HEAD"]);

    // The installed toolgate: the workflow finds it on PATH, as after a cached install.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_toolgate"), bin.path().join("toolgate"))
        .unwrap();
    let workflow = fs::read_to_string(root.join(".github/workflows/contracts.yml")).unwrap();
    assert!(
        workflow.contains(
            r#"cargo install --locked --git "$TOOLGATE_GIT" --tag "$TOOLGATE_TAG" toolgate"#
        ),
        "the workflow installs a pinned toolgate"
    );
    assert!(!workflow.contains("apt-get install") || workflow.contains("apt-get update"));

    // A pull request: job_status v3 admits a new state. Its author accepts the snapshots and
    // locks the version, as README's bump workflow says.
    git(root, &["checkout", "--quiet", "-b", "queued-state"]);
    copy(
        &root.join("contracts/job_status/v2"),
        &root.join("contracts/job_status/v3"),
    );
    for (file, from, to) in [
        ("contract.yaml", "version: 2", "version: 3"),
        (
            "envelope.schema.json",
            r#""enum": ["failed", "running", "succeeded"]"#,
            r#""enum": ["failed", "running", "succeeded", "queued"]"#,
        ),
    ] {
        let path = root.join("contracts/job_status/v3").join(file);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file}");
        fs::write(&path, text.replace(from, to)).unwrap();
    }
    let mut accept = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    accept
        .args(["test", "--accept"])
        .current_dir(root)
        .env_remove("CI");
    let accepted = run(accept, b"");
    assert_eq!(accepted.code, 0, "{}", accepted.stdout);
    git(root, &["add", "--all"]);
    git(root, &["commit", "--quiet", "-m", "job_status v3: queued"]);

    let reviewed = |labelled: bool| {
        let label = if labelled { "true" } else { "false" };
        let label_expression =
            "contains(github.event.pull_request.labels.*.name, 'contract-loosening-reviewed')";
        [
            ("github.event.pull_request.base.sha", base.as_str()),
            (label_expression, label),
            ("github.event.pull_request.number", "7"),
        ]
    };

    // The test job: every step passes, a JUnit report is written, the job summary is filled.
    let test = run_job(root, "test", bin.path(), &reviewed(false), false);
    let names: Vec<&str> = test.steps.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["install toolgate", "test every fixture"]);
    assert!(
        test.steps.iter().all(|(_, code)| *code == 0),
        "{:?}",
        test.steps
    );
    assert!(root.join("toolgate.xml").exists());
    assert!(
        test.summary.starts_with("**toolgate test**: ✅ passed"),
        "{}",
        test.summary
    );

    // The review job: the comment names the bumped tool, and the loosening blocks the merge
    // until a reviewer labels it.
    let review = run_job(root, "review", bin.path(), &reviewed(false), false);
    let codes: Vec<i32> = review.steps.iter().map(|(_, code)| *code).collect();
    assert_eq!(
        codes,
        [0, 0, 1],
        "install, review, decide: {:?}",
        review.steps
    );
    let comment = fs::read_to_string(review.temp.path().join("review.md")).unwrap();
    assert!(
        comment.contains("**toolgate diff** `job_status` v2 → v3: upstream breaking: no · upstream loosened: **yes**"),
        "{comment}"
    );
    assert!(
        review.summary.contains("nobody has reviewed it yet"),
        "{}",
        review.summary
    );
    let labelled = run_job(root, "review", bin.path(), &reviewed(true), false);
    let codes: Vec<i32> = labelled.steps.iter().map(|(_, code)| *code).collect();
    assert_eq!(codes, [0, 0, 0], "{:?}", labelled.steps);
}
