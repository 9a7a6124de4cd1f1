//! Running the built binaries from end-to-end tests.
#![allow(dead_code)] // each test file uses its own subset

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository this crate lives in.
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A private copy of the repository's contracts, fixtures and snapshots, to break on purpose.
pub(crate) fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for folder in ["contracts", "fixtures", "snapshots"] {
        copy(&repo_root().join(folder), &dir.path().join(folder));
    }
    dir
}

/// Copies a folder recursively, leaving out pending snapshots.
pub(crate) fn copy(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else if !entry.file_name().to_string_lossy().ends_with(".snap.new") {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// What a finished process left behind.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `command` with `stdin` as its standard input and collects its output.
pub(crate) fn run(mut command: Command, stdin: &[u8]) -> Run {
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

/// The `cargo test` trial runner (the `fixtures` test binary cargo built beside this one), on
/// `root`, in CI mode or not.
pub(crate) fn cargo_trials_command(root: &Path, ci: bool) -> Command {
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let binary = fs::read_dir(&deps)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("fixtures-")
                && path.extension().is_none_or(|extension| extension == "exe")
        })
        .max_by_key(|path| fs::metadata(path).and_then(|meta| meta.modified()).ok())
        .expect("cargo builds the fixtures test binary before running tests");
    let mut command = Command::new(binary);
    command.env("TOOLGATE_ROOT", root).arg("--test-threads=2");
    snapshot_env(&mut command, ci);
    command
}

/// `toolgate test --root ROOT EXTRA…`, in CI mode or not.
pub(crate) fn toolgate_test_command(root: &Path, extra: &[&str], ci: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["test", "--root", root.to_str().unwrap()])
        .args(extra);
    snapshot_env(&mut command, ci);
    command
}

/// Runs `toolgate test --root ROOT EXTRA…`.
pub(crate) fn toolgate_test(root: &Path, extra: &[&str], ci: bool) -> Run {
    run(toolgate_test_command(root, extra, ci), b"")
}

/// The closed failure branch of a result envelope for `tool` (`outcome: failure` with an
/// `error` of a finite code and a retryable flag): the schema of the failure the gate writes,
/// with its request id as `request_id` says.
pub(crate) fn failure_branch(tool: &str, request_id: serde_json::Value) -> serde_json::Value {
    let mut branch = toolgate_mcp::failure_schema(tool);
    branch["properties"]["request_id"] = request_id;
    branch
}

/// Sets or clears `CI`, and clears insta's variables, so a test decides the snapshot mode itself.
pub(crate) fn snapshot_env(command: &mut Command, ci: bool) {
    command
        .env_remove("INSTA_UPDATE")
        .env_remove("INSTA_FORCE_PASS")
        .env_remove("INSTA_SNAPSHOT_REFERENCES_FILE")
        .env_remove("TF_BUILD")
        .env("NO_COLOR", "1");
    if ci {
        command.env("CI", "true");
    } else {
        command.env_remove("CI");
    }
}

/// Runs `command` (stdin closed), killing it if it is still running after `limit`: a harness
/// that hangs on a hostile tree fails its test instead of stalling CI.
pub(crate) fn run_within(mut command: Command, limit: std::time::Duration) -> Run {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Drain both pipes on threads, so a child writing a lot never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|pipe| Box::new(pipe) as _));
    let stderr = drain(child.stderr.take().map(|pipe| Box::new(pipe) as _));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {limit:?}: the harness hung\nstdout so far:\n{}",
                stdout.join().unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Holds a JSON report to the schema `toolgate schema KIND` publishes (each kind read from the
/// binary and compiled once per test process), naming every error.
pub(crate) fn assert_matches_schema(kind: &str, report: &serde_json::Value) {
    use std::collections::BTreeMap;
    use std::sync::{Arc, LazyLock, Mutex};
    use toolgate_gate::internals::{SchemaValidator, standalone_validator};
    static VALIDATORS: LazyLock<Mutex<BTreeMap<String, Arc<SchemaValidator>>>> =
        LazyLock::new(Mutex::default);
    let validator = {
        let mut validators = VALIDATORS
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        Arc::clone(validators.entry(kind.to_owned()).or_insert_with(|| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
            command.args(["schema", kind]);
            let schema = serde_json::from_str(&run(command, b"").stdout).unwrap();
            Arc::new(standalone_validator(&schema).unwrap())
        }))
    };
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the {kind} does not match `toolgate schema {kind}`: {errors:#?}\n{report:#}"
    );
}

/// The MCP tests' contracts (tests/mcp/contracts) as a repository would ship them: copied into
/// `dir`, locked and bundled ([`locked_bundle`]). Returns the bundle's path.
pub(crate) fn bundled_mcp_contracts(dir: &Path) -> PathBuf {
    let repository = dir.join("repository");
    copy(
        &repo_root().join("tests/mcp/contracts"),
        &repository.join("contracts"),
    );
    locked_bundle(&repository, &dir.join("contracts.tar.gz"))
}

/// The repository at `repository`, every version folder locked (its digest, as `toolgate test
/// --accept` writes it), bundled by `toolgate bundle` into `bundle`, which is returned.
pub(crate) fn locked_bundle(repository: &Path, bundle: &Path) -> PathBuf {
    let root = toolgate_repo::RepoRoot::open(repository).unwrap();
    let mut lock = String::new();
    let mut tools: Vec<_> = fs::read_dir(repository.join("contracts"))
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().into_string().unwrap())
        .collect();
    tools.sort();
    for tool in tools {
        let mut versions: Vec<_> = fs::read_dir(repository.join("contracts").join(&tool))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with('v'))
            .collect();
        versions.sort();
        for version in versions {
            let folder = Path::new("contracts").join(&tool).join(&version);
            let digest = toolgate_repo::lock::digest(&root, &folder).unwrap();
            lock.push_str(&format!("{tool} {version} sha256:{}\n", digest.to_hex()));
        }
    }
    fs::write(repository.join("contracts/contracts.lock"), lock).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["bundle", "--root"])
        .arg(repository)
        .arg("--output")
        .arg(bundle)
        .output()
        .unwrap();
    assert!(output.status.success(), "toolgate bundle: {output:?}");
    bundle.to_path_buf()
}
