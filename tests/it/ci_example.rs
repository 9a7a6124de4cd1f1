//! The pull-request review in `.github/workflows/contracts.yml`, run the way the workflow runs it:
//! its script, fed the paths a pull request changed (the workflow takes them from `git diff`),
//! on a copy of the repository, with the real `toolgate` binary. The workflow itself needs
//! GitHub; everything it decides is in the script.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{copy, repo_root, run, tree};
use crate::release::release_of;
use crate::workflow::{Job, run_job};

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
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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

#[cfg(unix)]
#[test]
fn the_contracts_repository_workflow_runs_step_by_step_on_a_repository_of_contracts_only() {
    if !crate::release::curl_available("the contracts workflow test") {
        return;
    }
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

    // The release the workflow installs through the action: the binary this test runs, packed
    // by the release workflow's script, served from a folder as GitHub serves release assets.
    let releases = release_of(Path::new(env!("CARGO_BIN_EXE_toolgate")));
    let workflow = fs::read_to_string(root.join(".github/workflows/contracts.yml")).unwrap();
    assert!(
        !workflow.contains("cargo install") && !workflow.contains("--branch"),
        "the workflow installs a release asset, never a build from a branch"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        workflow
            .matches(&format!("uses: toolgate/toolgate@v{version}\n"))
            .count(),
        2,
        "both jobs install the release this checkout is"
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
    let environment = [(
        "TOOLGATE_RELEASES",
        format!("file://{}", releases.path().display()),
    )];
    let job = |name| Job {
        repo: root,
        name,
        expressions: &[],
        same_repository: false,
        environment: &environment,
    };
    let expressions = reviewed(false);
    let test = run_job(&Job {
        expressions: &expressions,
        ..job("test")
    });
    let names: Vec<&str> = test.steps.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["install toolgate", "toolgate test"]);
    assert!(
        test.steps.iter().all(|(_, code)| *code == 0),
        "{:?} {:?}",
        test.steps,
        test.stderr
    );
    assert!(
        test.stderr[0].contains("matches its published checksum; pin it with TOOLGATE_SHA256="),
        "{}",
        test.stderr[0]
    );
    assert!(test.temp.path().join("toolgate-junit.xml").exists());
    assert!(
        test.summary.starts_with("**toolgate test**: ✅ passed"),
        "{}",
        test.summary
    );

    // The review job: the comment names the bumped tool, and the loosening blocks the merge
    // until a reviewer labels it.
    let review = run_job(&Job {
        expressions: &expressions,
        ..job("review")
    });
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
    let expressions = reviewed(true);
    let labelled = run_job(&Job {
        expressions: &expressions,
        ..job("review")
    });
    let codes: Vec<i32> = labelled.steps.iter().map(|(_, code)| *code).collect();
    assert_eq!(codes, [0, 0, 0], "{:?}", labelled.steps);
}
