//! `crates/bench/mutants.sh` holds a cargo-mutants run to `crates/gate/mutants-survivors.txt`
//! through `crates/bench/mutants-compare.sh`. The run itself takes minutes (a periodic check);
//! the comparison, and the list it reads, are checked here on made-up results.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{Run, repo_root, run};

fn listed() -> Vec<String> {
    fs::read_to_string(repo_root().join("crates/gate/mutants-survivors.txt"))
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// A cargo-mutants name as it writes it: the listed name with a line and column.
fn with_position(entry: &str, line: usize) -> String {
    let (file, mutation) = entry.split_once(": ").expect("FILE: MUTATION");
    format!("{file}:{line}:9: {mutation}")
}

fn compare(missed: &[String], partial: bool) -> Run {
    let results = tempfile::tempdir().unwrap();
    fs::write(results.path().join("missed.txt"), missed.join("\n") + "\n").unwrap();
    let mut command = Command::new(repo_root().join("crates/bench/mutants-compare.sh"));
    command
        .arg(results.path())
        .arg(repo_root().join("crates/gate/mutants-survivors.txt"));
    if partial {
        command.arg("--partial");
    }
    run(command, b"")
}

fn missed_as_listed() -> Vec<String> {
    listed()
        .iter()
        .enumerate()
        .map(|(index, entry)| with_position(entry, 100 + index))
        .collect()
}

#[test]
fn every_listed_survivor_names_a_file_in_scope_and_gives_a_reason() {
    let text = fs::read_to_string(repo_root().join("crates/gate/mutants-survivors.txt")).unwrap();
    let mut reasoned = false;
    for line in text.lines() {
        if line.starts_with('#') {
            reasoned = true;
        } else if line.trim().is_empty() {
            reasoned = false;
        } else {
            assert!(reasoned, "no reason above {line:?}");
            let (file, _) = line.split_once(": ").expect("FILE: MUTATION");
            assert!(
                Path::new(&repo_root().join(file)).is_file(),
                "{file} does not exist"
            );
        }
    }
    let scope = fs::read_to_string(repo_root().join(".cargo/mutants.toml")).unwrap();
    for entry in listed() {
        let file = entry.split_once(": ").unwrap().0;
        let folder = file.rsplit_once('/').unwrap().0;
        assert!(
            scope.contains(&format!("\"{file}\"")) || scope.contains(&format!("\"{folder}/*.rs\"")),
            "{file} is outside .cargo/mutants.toml's scope"
        );
    }
}

#[test]
fn the_listed_survivors_match_wherever_their_lines_moved() {
    let outcome = compare(&missed_as_listed(), false);
    assert_eq!(outcome.code, 0, "{}", outcome.stdout);
    assert!(
        outcome
            .stdout
            .contains("every survivor is listed with its reason")
    );
}

#[test]
fn a_new_survivor_fails_and_is_named() {
    let mut missed = missed_as_listed();
    missed.push("crates/gate/src/wire.rs:151:15: replace | with ^ in write_string".to_owned());
    missed.push("crates/gate/src/parse.rs:7:1: replace \u{1b}[31mred with ()".to_owned());
    let outcome = compare(&missed, false);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    // Two `| -> ^` mutants of write_string are listed as equivalent; a third (the one that would
    // write two quotes raw) surviving is new, although its name matches theirs.
    let (_, new) = outcome
        .stdout
        .split_once("Survivors not in mutants-survivors.txt")
        .expect("the new survivors are reported");
    assert!(
        new.contains("crates/gate/src/wire.rs: replace | with ^ in write_string"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome
            .stdout
            .contains("crates/gate/src/parse.rs: replace [31mred with ()")
    );
    assert!(
        !outcome.stdout.contains('\u{1b}'),
        "control characters are dropped"
    );
}

#[test]
fn a_listed_survivor_that_is_now_caught_is_stale_unless_the_run_was_partial() {
    let mut missed = missed_as_listed();
    let caught = missed.pop().unwrap();
    let outcome = compare(&missed, false);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert!(
        outcome.stdout.contains("no longer surviving"),
        "{}",
        outcome.stdout
    );
    let name = caught.split_once(": ").unwrap().1;
    assert!(outcome.stdout.contains(name), "{}", outcome.stdout);
    assert_eq!(
        compare(&missed, true).code,
        0,
        "an --in-diff run sees part of the code"
    );
    assert_eq!(compare(&[], true).code, 0);
}
