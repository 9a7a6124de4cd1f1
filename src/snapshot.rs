//! Snapshots of the exact agent-visible bytes, as insta `.snap` files under `snapshots/`.
//!
//! One file per fixture and contract version: `snapshots/<tool>/<class>/<case>@v<N>.snap`. The
//! header records which fixture, version and outcome produced it; the body is the agent bytes.
//! Files are read with insta itself, and pending ones are written as `.snap.new` next to them, so
//! `cargo insta review` and `cargo insta accept` work on them. Like insta: CI never writes.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::diff;

/// The folder under the root that holds the snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";

/// What to do with a missing or changed snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Fail, write nothing (CI, or `INSTA_UPDATE=no`).
    Check,
    /// Fail, and write a pending `.snap.new` for review (the local default).
    WritePending,
    /// Write the `.snap` and pass (`toolgate test --accept`, or `INSTA_UPDATE=always`).
    Accept,
}

impl SnapshotMode {
    /// The mode insta would pick from the environment: `INSTA_UPDATE` if set, else `Check` when
    /// `CI` is set, else `WritePending`.
    pub fn from_env() -> SnapshotMode {
        SnapshotMode::from_settings(
            std::env::var("CI").ok().as_deref(),
            std::env::var("INSTA_UPDATE").ok().as_deref(),
        )
    }

    fn from_settings(ci: Option<&str>, insta_update: Option<&str>) -> SnapshotMode {
        let ci = ci.is_some_and(|value| !value.is_empty() && value != "0" && value != "false");
        match insta_update {
            Some("always") => SnapshotMode::Accept,
            Some("no") => SnapshotMode::Check,
            Some("new") => SnapshotMode::WritePending,
            _ if ci => SnapshotMode::Check,
            _ => SnapshotMode::WritePending,
        }
    }
}

/// The path of a fixture's snapshot for one contract version, relative to the root.
pub fn snapshot_path(tool: &str, class: &str, case: &str, version: &str) -> PathBuf {
    Path::new(SNAPSHOTS_DIR)
        .join(tool)
        .join(class)
        .join(format!("{case}@{version}.snap"))
}

/// A snapshot as it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The fixture's raw file, relative to the root.
    pub fixture: String,
    /// One line: tool, version, class, outcome.
    pub description: String,
    /// The command that reproduces it.
    pub expression: String,
    /// The agent-visible bytes.
    pub body: String,
}

impl Snapshot {
    /// The file's text, in the layout insta writes.
    pub fn render(&self) -> String {
        let mut text = String::from("---\n");
        for (key, value) in [
            ("source", &self.fixture),
            ("description", &self.description),
            ("expression", &self.expression),
            ("input_file", &self.fixture),
        ] {
            text.push_str(key);
            text.push_str(": ");
            text.push_str(&yaml_scalar(value));
            text.push('\n');
        }
        text.push_str("---\n");
        text.push_str(&self.body);
        text.push('\n');
        text
    }
}

/// What comparing against the snapshot on disk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotCheck {
    /// The file matches.
    Matches,
    /// The file was written (accept mode).
    Accepted,
    /// There is no snapshot yet.
    Missing {
        /// The pending file written for review, if any.
        pending: Option<PathBuf>,
    },
    /// The snapshot differs.
    Drift {
        /// A unified diff from the snapshot to the current output.
        diff: String,
        /// The pending file written for review, if any.
        pending: Option<PathBuf>,
    },
    /// The snapshot file exists but cannot be read as one.
    Unreadable(String),
}

/// Compares `expected` with the file at `path` (relative to `root`), and writes according to `mode`.
pub fn check(
    root: &Path,
    path: &Path,
    expected: &Snapshot,
    mode: SnapshotMode,
    color: bool,
) -> SnapshotCheck {
    let full = root.join(path);
    let pending_path = pending_path(&full);
    let found = if full.exists() {
        Some(read(&full))
    } else {
        None
    };
    let verdict = match &found {
        Some(Ok(existing)) if existing == expected => {
            // A pending file from an earlier run is now obsolete.
            let _ = fs::remove_file(&pending_path);
            return SnapshotCheck::Matches;
        }
        Some(Err(message)) if mode != SnapshotMode::Accept => {
            return SnapshotCheck::Unreadable(message.clone());
        }
        _ => found,
    };
    let write = |target: &Path| -> Result<(), String> {
        if let Some(folder) = target.parent() {
            fs::create_dir_all(folder)
                .map_err(|error| format!("{}: cannot create: {error}", folder.display()))?;
        }
        fs::write(target, expected.render())
            .map_err(|error| format!("{}: cannot write: {error}", target.display()))
    };
    match mode {
        SnapshotMode::Accept => match write(&full) {
            Ok(()) => {
                let _ = fs::remove_file(&pending_path);
                SnapshotCheck::Accepted
            }
            Err(message) => SnapshotCheck::Unreadable(message),
        },
        SnapshotMode::Check | SnapshotMode::WritePending => {
            let pending = (mode == SnapshotMode::WritePending && write(&pending_path).is_ok())
                .then(|| relative(root, &pending_path));
            match verdict {
                Some(Ok(existing)) => SnapshotCheck::Drift {
                    diff: describe_drift(&existing, expected, color),
                    pending,
                },
                _ => SnapshotCheck::Missing { pending },
            }
        }
    }
}

fn describe_drift(existing: &Snapshot, expected: &Snapshot, color: bool) -> String {
    if existing.body != expected.body {
        return diff::unified(&existing.body, &expected.body, color);
    }
    // Same bytes, different header: the outcome or the reproducing command changed.
    diff::unified(
        &format!(
            "description: {}\nexpression: {}\nfixture: {}",
            existing.description, existing.expression, existing.fixture
        ),
        &format!(
            "description: {}\nexpression: {}\nfixture: {}",
            expected.description, expected.expression, expected.fixture
        ),
        color,
    )
}

/// Reads a `.snap` file with insta.
fn read(path: &Path) -> Result<Snapshot, String> {
    let snapshot = insta::Snapshot::from_file(path)
        .map_err(|error| format!("{}: not a snapshot file: {error}", path.display()))?;
    let body = match snapshot.contents() {
        insta::internals::SnapshotContents::Text(text) => text.to_string(),
        insta::internals::SnapshotContents::Binary(_) => {
            return Err(format!(
                "{}: a binary snapshot; toolgate snapshots are text",
                path.display()
            ));
        }
    };
    let metadata = snapshot.metadata();
    Ok(Snapshot {
        fixture: metadata.input_file().unwrap_or_default().to_owned(),
        description: metadata.description().unwrap_or_default().to_owned(),
        expression: metadata.expression().unwrap_or_default().to_owned(),
        body,
    })
}

fn pending_path(snapshot: &Path) -> PathBuf {
    let mut name = snapshot.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

/// Finds (and never touches) the snapshot files (and pending files) under `under` (relative to
/// the root) that no case produces, skipping the top-level folders named in `skip`. `expected` holds the `.snap` paths
/// the cases use; `owned` holds `snapshots/<tool>/<class>/<case>@` prefixes of fixtures whose
/// versions are unknown (their sidecar did not load), which are not stale.
pub fn find_stale(
    root: &Path,
    under: &Path,
    skip: &[String],
    expected: &BTreeSet<PathBuf>,
    owned: &BTreeSet<String>,
) -> Vec<PathBuf> {
    let base = root.join(under);
    let mut stale = Vec::new();
    let walker = WalkDir::new(&base)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            let skipped = entry.depth() == 1
                && entry.file_type().is_dir()
                && skip.iter().any(|name| entry.file_name() == name.as_str());
            !skipped
        });
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_file() {
            continue;
        }
        let path = relative(root, entry.path());
        let text = path.to_string_lossy();
        let snap = match text.strip_suffix(".new") {
            Some(stripped) => PathBuf::from(stripped),
            None => path.clone(),
        };
        let is_snapshot = snap
            .extension()
            .is_some_and(|extension| extension == "snap");
        let owned_by_unloaded = owned
            .iter()
            .any(|prefix| snap.to_string_lossy().starts_with(prefix.as_str()));
        if !is_snapshot || !(expected.contains(&snap) || owned_by_unloaded) {
            stale.push(path);
        }
    }
    stale
}

/// Removes the stale files `find_stale` found (paths relative to `root`); returns one message per
/// file that could not be removed.
pub fn remove_stale(root: &Path, stale: &[PathBuf]) -> Vec<String> {
    stale
        .iter()
        .filter_map(|path| {
            fs::remove_file(root.join(path))
                .err()
                .map(|error| format!("{}: cannot remove: {error}", path.display()))
        })
        .collect()
}

/// A YAML scalar as insta's emitter writes it: plain when unambiguous, else double-quoted.
fn yaml_scalar(value: &str) -> String {
    let needs_quotes = value.is_empty()
        || value.starts_with([
            ' ', '&', '*', '?', '|', '-', '<', '>', '=', '!', '%', '@', '.',
        ])
        || value.ends_with(' ')
        || value.contains([':', '{', '}', '[', ']', ',', '#', '`', '"', '\'', '\\'])
        || value.chars().any(char::is_control)
        || ["yes", "no", "true", "false", "on", "off", "null", "~"]
            .contains(&value.to_ascii_lowercase().as_str())
        || value.parse::<f64>().is_ok();
    if needs_quotes {
        serde_json::to_string(value).expect("a string always serializes")
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        Snapshot {
            fixture: "fixtures/review_status/accepted/approved.json".into(),
            description: "review_status v1, accepted: admitted (shape current)".into(),
            expression: "toolgate check review_status fixtures/review_status/accepted/approved.json --request fixtures/review_status/request.json --contract-version v1".into(),
            body: r#"{"tool":"review_status","request_id":"req.1","outcome":"success","data":{"decision":"approved"}}"#.into(),
        }
    }

    #[test]
    fn what_we_write_insta_reads_back_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x@v1.snap");
        fs::write(&path, snapshot().render()).unwrap();
        assert_eq!(read(&path).unwrap(), snapshot());
    }

    #[test]
    fn check_mode_never_writes_and_pending_mode_writes_snap_new() {
        let dir = tempfile::tempdir().unwrap();
        let path = Path::new("snapshots/t/accepted/x@v1.snap");
        let missing = check(dir.path(), path, &snapshot(), SnapshotMode::Check, false);
        assert_eq!(missing, SnapshotCheck::Missing { pending: None });
        assert!(!dir.path().join("snapshots").exists());

        let missing = check(
            dir.path(),
            path,
            &snapshot(),
            SnapshotMode::WritePending,
            false,
        );
        let pending = PathBuf::from("snapshots/t/accepted/x@v1.snap.new");
        assert_eq!(
            missing,
            SnapshotCheck::Missing {
                pending: Some(pending.clone())
            }
        );
        assert!(dir.path().join(&pending).exists());
        assert!(!dir.path().join(path).exists());

        assert_eq!(
            check(dir.path(), path, &snapshot(), SnapshotMode::Accept, false),
            SnapshotCheck::Accepted
        );
        assert!(
            !dir.path().join(&pending).exists(),
            "accepting removes the pending file"
        );
        assert_eq!(
            check(dir.path(), path, &snapshot(), SnapshotMode::Check, false),
            SnapshotCheck::Matches
        );
    }

    #[test]
    fn one_changed_byte_is_drift_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let path = Path::new("x@v1.snap");
        check(dir.path(), path, &snapshot(), SnapshotMode::Accept, false);
        let mut changed = snapshot();
        changed.body = changed.body.replace("approved", "rejected");
        match check(dir.path(), path, &changed, SnapshotMode::Check, false) {
            SnapshotCheck::Drift {
                diff,
                pending: None,
            } => {
                assert!(diff.contains("-") && diff.contains("rejected"), "{diff}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scalars_are_quoted_only_when_yaml_needs_it() {
        assert_eq!(yaml_scalar("fixtures/a/b.json"), "fixtures/a/b.json");
        assert_eq!(yaml_scalar("a: b"), "\"a: b\"");
        assert_eq!(yaml_scalar("true"), "\"true\"");
        assert_eq!(yaml_scalar("--x"), "\"--x\"");
    }

    #[test]
    fn insta_update_and_ci_pick_the_mode() {
        use SnapshotMode::*;
        assert_eq!(SnapshotMode::from_settings(None, None), WritePending);
        assert_eq!(SnapshotMode::from_settings(Some("true"), None), Check);
        assert_eq!(
            SnapshotMode::from_settings(Some("false"), None),
            WritePending
        );
        assert_eq!(
            SnapshotMode::from_settings(Some("true"), Some("always")),
            Accept
        );
        assert_eq!(SnapshotMode::from_settings(None, Some("no")), Check);
        assert_eq!(SnapshotMode::from_settings(Some("1"), Some("auto")), Check);
    }
}
