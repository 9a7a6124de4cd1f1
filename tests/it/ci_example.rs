//! The pull-request review in `.github/workflows/contracts.yml`, run the way the workflow runs it:
//! its script, fed the paths a pull request changed (the workflow takes them from `git diff`),
//! on a copy of the repository, with the real `toolgate` binary. The workflow itself needs
//! GitHub; everything it decides is in the script.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{copy, repo_root, run, tree};

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
