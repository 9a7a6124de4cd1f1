//! cargo-insta drives toolgate's snapshots through its environment: `INSTA_UPDATE`,
//! `INSTA_FORCE_PASS` and `INSTA_SNAPSHOT_REFERENCES_FILE`. Each is checked here with both
//! runners (`toolgate test` and the `cargo test` trials), as `cargo insta test` sets them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Run, cargo_trials_command, run, toolgate_test_command, tree};

const SNAPSHOT: &str = "snapshots/review_status/accepted/approved@v1.snap";

/// The two runners of the same suite.
const RUNNERS: [&str; 2] = ["toolgate test", "cargo test trials"];

/// One runner on `root`, not in CI, with `env` set.
fn run_with(runner: &str, root: &Path, env: &[(&str, &str)]) -> Run {
    let mut command = match runner {
        "toolgate test" => toolgate_test_command(root, &[], false),
        _ => cargo_trials_command(root, false),
    };
    for (key, value) in env {
        command.env(key, value);
    }
    run(command, b"")
}

fn every_snapshot(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "snap")
            {
                out.insert(fs::canonicalize(&path).unwrap());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&root.join("snapshots"), &mut out);
    out
}

#[test]
fn every_snapshot_used_is_named_in_the_references_file_so_unreferenced_deletes_nothing() {
    let dir = tree();
    let references = dir.path().join("references.txt");
    for runner in RUNNERS {
        let outcome = run_with(
            runner,
            dir.path(),
            &[(
                "INSTA_SNAPSHOT_REFERENCES_FILE",
                references.to_str().unwrap(),
            )],
        );
        assert_eq!(outcome.code, 0, "{runner}: {}", outcome.stdout);
        // As cargo-insta reads it: each line canonicalized; every .snap file not named would be
        // deleted (`--unreferenced=delete`) or fail the run (`--unreferenced=reject`).
        let named: BTreeSet<PathBuf> = fs::read_to_string(&references)
            .unwrap()
            .lines()
            .map(|line| {
                fs::canonicalize(line).unwrap_or_else(|_| panic!("{runner}: {line} does not exist"))
            })
            .collect();
        let unreferenced: Vec<_> = every_snapshot(dir.path())
            .difference(&named)
            .cloned()
            .collect();
        assert!(
            unreferenced.is_empty(),
            "{runner} left unreferenced: {unreferenced:?}"
        );
        assert!(named.len() > 150, "{runner}: {}", named.len());
        fs::remove_file(&references).unwrap();
    }
}

fn drift(root: &Path) {
    let path = root.join(SNAPSHOT);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.replace("maria.silva", "maria.silvia")).unwrap();
}

#[test]
fn force_pass_writes_the_pending_snapshot_and_does_not_fail_as_cargo_insta_test_expects() {
    for runner in RUNNERS {
        let dir = tree();
        drift(dir.path());
        // `cargo insta test` sets INSTA_UPDATE=new and INSTA_FORCE_PASS=1, then reviews or
        // accepts the .snap.new files the run left.
        let outcome = run_with(
            runner,
            dir.path(),
            &[("INSTA_UPDATE", "new"), ("INSTA_FORCE_PASS", "1")],
        );
        assert_eq!(
            outcome.code, 0,
            "{runner}: {}{}",
            outcome.stdout, outcome.stderr
        );
        let pending = dir.path().join(format!("{SNAPSHOT}.new"));
        assert!(pending.exists(), "{runner}");
        if runner == "toolgate test" {
            assert!(outcome.stdout.contains("notes"), "{}", outcome.stdout);
            assert!(
                outcome.stdout.contains("what the agent sees changed from"),
                "{}",
                outcome.stdout
            );
        }
        // `cargo insta accept`: the pending file becomes the snapshot, and CI passes again.
        fs::rename(&pending, dir.path().join(SNAPSHOT)).unwrap();
        let mut check = toolgate_test_command(dir.path(), &[], true);
        check.env_remove("INSTA_FORCE_PASS");
        assert_eq!(run(check, b"").code, 0, "{runner}");
        // Without INSTA_FORCE_PASS, the same drift fails.
        drift(dir.path());
        let failing = run_with(runner, dir.path(), &[("INSTA_UPDATE", "new")]);
        assert_ne!(failing.code, 0, "{runner}");
    }
}

#[test]
fn unseen_always_force_auto_and_no_follow_insta() {
    let dir = tree();
    let snapshot = dir.path().join(SNAPSHOT);
    let original = fs::read_to_string(&snapshot).unwrap();
    let toolgate = |env: &[(&str, &str)], ci: bool| {
        let mut command = toolgate_test_command(dir.path(), &[], ci);
        for (key, value) in env {
            command.env(key, value);
        }
        run(command, b"")
    };

    // unseen: a snapshot that does not exist yet is written in place and passes...
    fs::remove_file(&snapshot).unwrap();
    assert_eq!(toolgate(&[("INSTA_UPDATE", "unseen")], false).code, 0);
    assert_eq!(fs::read_to_string(&snapshot).unwrap(), original);
    // ...one that changed is written as .snap.new and fails.
    drift(dir.path());
    let changed = fs::read_to_string(&snapshot).unwrap();
    assert_eq!(toolgate(&[("INSTA_UPDATE", "unseen")], false).code, 1);
    assert_eq!(fs::read_to_string(&snapshot).unwrap(), changed);
    let pending = dir.path().join(format!("{SNAPSHOT}.new"));
    assert!(pending.exists());
    fs::remove_file(&pending).unwrap();

    // always: rewritten in place, and the run passes; nothing else is deleted or locked.
    assert_eq!(toolgate(&[("INSTA_UPDATE", "always")], false).code, 0);
    assert_eq!(fs::read_to_string(&snapshot).unwrap(), original);

    // force: even a matching snapshot is rewritten (an old header line goes).
    fs::write(
        &snapshot,
        original.replacen("---\n", "---\nassertion_line: 12\n", 1),
    )
    .unwrap();
    assert_eq!(
        toolgate(&[("INSTA_UPDATE", "no")], true).code,
        0,
        "it still matches"
    );
    assert!(
        fs::read_to_string(&snapshot)
            .unwrap()
            .contains("assertion_line")
    );
    assert_eq!(toolgate(&[("INSTA_UPDATE", "force")], false).code, 0);
    assert_eq!(fs::read_to_string(&snapshot).unwrap(), original);

    // auto: in CI nothing is written; elsewhere a pending file. `no` writes nothing anywhere.
    drift(dir.path());
    assert_eq!(toolgate(&[("INSTA_UPDATE", "auto")], true).code, 1);
    assert!(!pending.exists());
    assert_eq!(toolgate(&[("INSTA_UPDATE", "no")], false).code, 1);
    assert!(!pending.exists());
    assert_eq!(
        toolgate(&[("INSTA_UPDATE", "auto"), ("CI", "false")], false).code,
        1
    );
    assert!(pending.exists(), "CI=false is not CI, as insta reads it");
    fs::remove_file(&pending).unwrap();
    // Azure Pipelines sets TF_BUILD, not CI.
    assert_eq!(toolgate(&[("TF_BUILD", "True")], false).code, 1);
    assert!(!pending.exists());

    // A value insta would refuse is a usage error, not a silent default.
    for (key, value) in [("INSTA_UPDATE", "sometimes"), ("INSTA_FORCE_PASS", "yes")] {
        let outcome = toolgate(&[(key, value)], false);
        assert_eq!(outcome.code, 2, "{key}={value}");
        assert!(outcome.stderr.contains(key), "{}", outcome.stderr);
    }
}
