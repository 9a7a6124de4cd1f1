//! Running the built binaries from end-to-end tests.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

/// What a finished process left behind.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` with `stdin` as its standard input and collects its output.
pub fn run(mut command: Command, stdin: &[u8]) -> Run {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    // Write from a thread: the child may stop reading early (an oversized body is rejected
    // after max_bytes + 1 bytes).
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("the binary finishes");
    writer.join().expect("the stdin writer finishes");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Sets or clears `CI`, and clears `INSTA_UPDATE`, so a test decides the snapshot mode itself.
pub fn snapshot_env(command: &mut Command, ci: bool) {
    command.env_remove("INSTA_UPDATE").env("NO_COLOR", "1");
    if ci {
        command.env("CI", "true");
    } else {
        command.env_remove("CI");
    }
}
