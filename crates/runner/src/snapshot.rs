//! Snapshots of the exact agent-visible bytes, as insta `.snap` files under `snapshots/`.
//!
//! One file per fixture and contract version: `snapshots/<tool>/<class>/<case>@v<N>.snap`. The
//! header records which fixture, version and outcome produced it; the body is the agent bytes.
//! Files are read with insta itself, and pending ones are written as `.snap.new` next to them, so
//! `cargo insta review` and `cargo insta accept` work on them. Like insta: CI never writes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use toolgate_repo::text::diff;
use toolgate_repo::{EntryKind, RepoRoot};

/// The folder under the root that holds the snapshots.
pub(crate) const SNAPSHOTS_DIR: &str = "snapshots";

/// What insta's `INSTA_UPDATE` says to do with a snapshot that is missing or differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// `no`, and `auto` in CI: write nothing.
    No,
    /// `new`, and `auto` elsewhere: write a pending `.snap.new` for review.
    New,
    /// `always` (or `1`): write the `.snap`.
    Always,
    /// `unseen`: write the `.snap` of a snapshot that does not exist yet, and a `.snap.new` for
    /// one that changed.
    Unseen,
    /// `force`: write the `.snap`, even when it matches.
    Force,
}

/// How a run treats snapshots: insta's `INSTA_UPDATE` and `INSTA_FORCE_PASS`, with insta's
/// defaults, plus `toolgate test --accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotMode {
    /// What to write for a snapshot that is missing or differs.
    pub update: Update,
    /// `INSTA_FORCE_PASS=1`: a snapshot that is missing or differs does not fail its case (the
    /// pending file is still written, for `cargo insta review`).
    pub force_pass: bool,
    /// `toolgate test --accept`: write every snapshot, remove stale and pending ones, lock new
    /// contract versions.
    pub accept: bool,
}

impl SnapshotMode {
    /// Compare only: write and delete nothing (CI).
    pub const CHECK: SnapshotMode = SnapshotMode {
        update: Update::No,
        force_pass: false,
        accept: false,
    };
    /// Write a pending `.snap.new` for each difference (the local default).
    pub const WRITE_PENDING: SnapshotMode = SnapshotMode {
        update: Update::New,
        force_pass: false,
        accept: false,
    };
    /// `toolgate test --accept`.
    pub const ACCEPT: SnapshotMode = SnapshotMode {
        update: Update::Always,
        force_pass: false,
        accept: true,
    };

    /// The mode insta would pick from the environment: `INSTA_UPDATE` and `INSTA_FORCE_PASS` if
    /// set, else no writes when `CI` (or Azure's `TF_BUILD`) says this is CI, else pending files.
    /// A value insta would refuse is an error naming the variable.
    pub fn from_env() -> Result<SnapshotMode, String> {
        let var = |name: &str| std::env::var(name).ok();
        SnapshotMode::from_settings(
            toolgate_repo::running_in_ci(),
            var("INSTA_UPDATE").as_deref(),
            var("INSTA_FORCE_PASS").as_deref(),
        )
    }

    fn from_settings(
        ci: bool,
        insta_update: Option<&str>,
        force_pass: Option<&str>,
    ) -> Result<SnapshotMode, String> {
        let update = match insta_update.unwrap_or("") {
            "" | "auto" if ci => Update::No,
            "" | "auto" | "new" => Update::New,
            "always" | "1" => Update::Always,
            "unseen" => Update::Unseen,
            "no" => Update::No,
            "force" => Update::Force,
            other => {
                return Err(format!(
                    "INSTA_UPDATE={other:?} is not one insta knows: auto, new, always, unseen, no or force"
                ));
            }
        };
        let force_pass = match force_pass.unwrap_or("") {
            "" | "0" => false,
            "1" => true,
            other => {
                return Err(format!(
                    "INSTA_FORCE_PASS={other:?}: insta takes 1 (snapshot differences do not fail) or 0"
                ));
            }
        };
        Ok(SnapshotMode {
            update,
            force_pass,
            accept: false,
        })
    }

    /// Whether the run may write or delete files (never in CI, never with `INSTA_UPDATE=no`).
    pub fn writes(self) -> bool {
        self.accept || self.update != Update::No
    }
}

/// insta's `INSTA_SNAPSHOT_REFERENCES_FILE`, when set and not empty.
pub fn references_file() -> Option<PathBuf> {
    std::env::var_os("INSTA_SNAPSHOT_REFERENCES_FILE")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// Appends the absolute path of a snapshot this run used to insta's references file, when
/// `cargo insta test` asked for one (`INSTA_SNAPSHOT_REFERENCES_FILE`): its `--unreferenced`
/// option deletes or rejects every snapshot nobody named. Each line is one append of a few
/// hundred bytes, so lines from parallel cases never interleave.
pub(crate) fn record_reference(
    references: &Path,
    root: &RepoRoot,
    snapshot: &Path,
) -> Result<(), String> {
    use std::io::Write as _;
    let line = format!("{}\n", root.full(snapshot).display());
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(references)
        .and_then(|mut file| file.write_all(line.as_bytes()))
        .map_err(|error| {
            format!(
                "cannot record the snapshot in INSTA_SNAPSHOT_REFERENCES_FILE ({}): {error}",
                references.display()
            )
        })
}

/// The path of a fixture's snapshot for one contract version, relative to the root.
/// How to accept a pending snapshot: `toolgate test --accept`, and `cargo insta review` too
/// where the repository is a Rust one (a `Cargo.toml` at its root) and so may have it.
pub(crate) fn how_to_accept(root: &RepoRoot) -> &'static str {
    match root.kind(Path::new("Cargo.toml")) {
        Ok(EntryKind::File) => "`toolgate test --accept` (or `cargo insta review`)",
        _ => "`toolgate test --accept`",
    }
}

pub(crate) fn snapshot_path(tool: &str, class: &str, case: &str, version: &str) -> PathBuf {
    Path::new(SNAPSHOTS_DIR)
        .join(tool)
        .join(class)
        .join(format!("{case}@{version}.snap"))
}

/// A snapshot as it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// The fixture's raw file, relative to the root (the header's `input_file`).
    pub fixture: String,
    /// The header's `source`: the fixture's raw file too. A header that names another file is
    /// drift, not a match.
    pub source: String,
    /// One line: tool, version, class, outcome.
    pub description: String,
    /// The command that reproduces it.
    pub expression: String,
    /// The agent-visible bytes.
    pub body: String,
}

impl Snapshot {
    /// The file's text, in the layout insta writes.
    pub(crate) fn render(&self) -> String {
        let mut text = String::from("---\n");
        for (key, value) in [
            ("source", &self.source),
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
pub(crate) enum SnapshotCheck {
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

/// Compares `expected` with the file at `path` (relative to the root), and writes according to
/// `mode`. Every read and write stays inside the root; in [`SnapshotMode::CHECK`] nothing is
/// written or deleted.
pub(crate) fn check(
    root: &RepoRoot,
    path: &Path,
    expected: &Snapshot,
    mode: SnapshotMode,
    color: bool,
) -> SnapshotCheck {
    let pending_path = pending_path(path);
    let found = match root.kind(path) {
        Ok(EntryKind::Missing) => None,
        Ok(_) => Some(read(root, path)),
        Err(message) => return SnapshotCheck::Unreadable(message.into()),
    };
    let matches = matches!(&found, Some(Ok(existing)) if existing == expected);
    if matches && mode.update != Update::Force {
        // A pending file from an earlier run is now obsolete; in CI it is reported, not removed.
        if mode.writes() {
            let _ = root.remove_file(&pending_path);
        }
        return SnapshotCheck::Matches;
    }
    if let Some(Err(message)) = &found
        && !mode.accept
        && mode.update == Update::No
    {
        return SnapshotCheck::Unreadable(message.clone());
    }
    let write = |target: &Path| root.write(target, expected.render().as_bytes());
    let in_place = match mode.update {
        Update::Always | Update::Force => true,
        Update::Unseen => found.is_none(),
        Update::New | Update::No => mode.accept,
    };
    if in_place {
        return match write(path) {
            Ok(()) => {
                let _ = root.remove_file(&pending_path);
                if matches {
                    SnapshotCheck::Matches
                } else {
                    SnapshotCheck::Accepted
                }
            }
            Err(message) => SnapshotCheck::Unreadable(message.into()),
        };
    }
    if let Some(Err(message)) = &found {
        return SnapshotCheck::Unreadable(message.clone());
    }
    let pending =
        (mode.update != Update::No && write(&pending_path).is_ok()).then_some(pending_path);
    match found {
        Some(Ok(existing)) => SnapshotCheck::Drift {
            diff: describe_drift(&existing, expected, color),
            pending,
        },
        _ => SnapshotCheck::Missing { pending },
    }
}

fn describe_drift(existing: &Snapshot, expected: &Snapshot, color: bool) -> String {
    if existing.body != expected.body {
        return diff::unified(&existing.body, &expected.body, color);
    }
    // Same bytes, different header: the outcome, the reproducing command or the fixture changed.
    let header = |snapshot: &Snapshot| {
        format!(
            "source: {}\ndescription: {}\nexpression: {}\ninput_file: {}",
            snapshot.source, snapshot.description, snapshot.expression, snapshot.fixture
        )
    };
    diff::unified(&header(existing), &header(expected), color)
}

/// The header keys insta writes in a `.snap` file.
const HEADER_KEYS: [&str; 7] = [
    "source",
    "description",
    "expression",
    "input_file",
    "info",
    "assertion_line",
    "snapshot_kind",
];

/// Checks that `text` is a snapshot in insta's current format with a flat header, so that insta
/// reads it without a warning (a legacy file makes it print one) and without recursion (a deeply
/// nested header could exhaust its parser's stack).
fn check_format(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err(
            "an empty file, not a snapshot: delete it, or run `toolgate test --accept` to write it"
                .to_owned(),
        );
    }
    if text.starts_with('\u{feff}') {
        return Err("starts with a byte-order mark; snapshots are plain UTF-8: delete it and run `toolgate test --accept`".to_owned());
    }
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("not in insta's current format (it must start with a `---` header line); insta calls this format legacy: delete it and run `toolgate test --accept`".to_owned());
    }
    for line in lines {
        if line.trim_end() == "---" {
            return Ok(());
        }
        let flat = line.split_once(": ").is_some_and(|(key, value)| {
            HEADER_KEYS.contains(&key) && !value.starts_with(['[', '{', '|', '>', '&', '*', '!'])
        });
        if !flat {
            return Err(format!(
                "its header line {line:?} is not one of insta's `key: value` lines ({})",
                HEADER_KEYS.join(", ")
            ));
        }
    }
    Err("its header is never closed by a `---` line".to_owned())
}

/// Reads a `.snap` file inside the root: bounded, checked, then parsed by insta itself.
fn read(root: &RepoRoot, path: &Path) -> Result<Snapshot, String> {
    let shown = root.shown(path);
    let text = root.read_text(path)?;
    check_format(&text).map_err(|message| format!("{}: {message}", shown.display()))?;
    let snapshot = insta::Snapshot::from_file(&root.full(path))
        .map_err(|error| format!("{}: not a snapshot file: {error}", shown.display()))?;
    let body = match snapshot.contents() {
        insta::internals::SnapshotContents::Text(text) => text.to_string(),
        insta::internals::SnapshotContents::Binary(_) => {
            return Err(format!(
                "{}: a binary snapshot; toolgate snapshots are text",
                shown.display()
            ));
        }
    };
    let metadata = snapshot.metadata();
    Ok(Snapshot {
        fixture: metadata.input_file().unwrap_or_default().to_owned(),
        source: metadata.source().map(str::to_owned).unwrap_or_default(),
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

/// What is under `snapshots/` (or a part of it) that no case produces.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct StaleScan {
    /// Files no case produces (paths relative to the root).
    pub stale: Vec<PathBuf>,
    /// Pending `.snap.new` files beside a snapshot a case does produce: left from an earlier
    /// local run, awaiting review.
    pub pending: Vec<PathBuf>,
    /// What cannot be inspected: a symlink out of the repository, a special file, a folder too
    /// deep for a snapshot.
    pub problems: Vec<String>,
}

/// Snapshots live at `snapshots/<tool>/<class>/<case>@vN.snap`: three levels below `snapshots/`.
const SNAPSHOT_DEPTH: usize = 3;

/// Finds (and never touches) the files under `under` (relative to the root) that no case
/// produces, skipping the top-level folders named in `skip`. `expected` holds the `.snap` paths
/// the cases use; `owned` holds `snapshots/<tool>/<class>/<case>@` prefixes of fixtures whose
/// versions are unknown (their sidecar did not load), which are not stale.
pub(crate) fn find_stale(
    root: &RepoRoot,
    under: &Path,
    skip: &[String],
    expected: &BTreeSet<PathBuf>,
    owned: &BTreeSet<String>,
) -> StaleScan {
    let mut scan = StaleScan::default();
    match root.kind(under) {
        Ok(EntryKind::Dir) => {}
        Ok(EntryKind::Missing) => return scan,
        Ok(_) => {
            scan.problems.push(format!(
                "{}: not a folder; snapshots live in folders",
                root.shown(under).display()
            ));
            return scan;
        }
        Err(message) => {
            scan.problems.push(message.into());
            return scan;
        }
    }
    let depth = under.components().count().saturating_sub(1);
    let mut folders = vec![(under.to_path_buf(), depth)];
    while let Some((folder, depth)) = folders.pop() {
        let entries = match root.list(&folder) {
            Ok(entries) => entries,
            Err(message) => {
                scan.problems.push(message.into());
                continue;
            }
        };
        for entry in entries {
            match entry.kind {
                Err(message) => scan.problems.push(message.into()),
                Ok(EntryKind::Dir) if depth == 0 && skip.contains(&entry.name) => {}
                Ok(EntryKind::Dir) if depth + 1 < SNAPSHOT_DEPTH => {
                    folders.push((entry.path, depth + 1))
                }
                Ok(EntryKind::Dir) => scan.problems.push(format!(
                    "{}: a folder where only snapshot files belong; remove it",
                    root.shown(&entry.path).display()
                )),
                Ok(EntryKind::Missing) => {}
                Ok(EntryKind::File | EntryKind::Other) => {
                    let text = entry.path.to_string_lossy();
                    let (snap, is_pending) = match text.strip_suffix(".new") {
                        Some(stripped) => (PathBuf::from(stripped), true),
                        None => (entry.path.clone(), false),
                    };
                    let is_snapshot = snap
                        .extension()
                        .is_some_and(|extension| extension == "snap");
                    let owned_by_unloaded = owned
                        .iter()
                        .any(|prefix| snap.to_string_lossy().starts_with(prefix.as_str()));
                    if !is_snapshot || !(expected.contains(&snap) || owned_by_unloaded) {
                        scan.stale.push(entry.path);
                    } else if is_pending {
                        scan.pending.push(entry.path);
                    }
                }
            }
        }
    }
    scan.stale.sort();
    scan.pending.sort();
    scan
}

/// Removes stale files `find_stale` found: only regular `*.snap` and `*.snap.new` files under
/// `snapshots/`; anything else is left alone and reported. One message per file not removed.
pub(crate) fn remove_stale(root: &RepoRoot, stale: &[PathBuf]) -> Vec<String> {
    stale
        .iter()
        .filter_map(|path| {
            let name = path.to_string_lossy();
            let ours = path.starts_with(SNAPSHOTS_DIR)
                && (name.ends_with(".snap") || name.ends_with(".snap.new"));
            if !ours {
                return Some(format!(
                    "{}: not a snapshot file, so toolgate does not remove it; delete it yourself if it does not belong here",
                    root.shown(path).display()
                ));
            }
            root.remove_file(path).err().map(String::from)
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
            source: "fixtures/review_status/accepted/approved.json".into(),
            description: "review_status v1, accepted: admitted (shape current)".into(),
            expression: "toolgate check review_status fixtures/review_status/accepted/approved.json --request fixtures/review_status/request.json --contract-version v1".into(),
            body: r#"{"tool":"review_status","request_id":"req.1","outcome":"success","data":{"decision":"approved"}}"#.into(),
        }
    }

    fn root() -> (tempfile::TempDir, RepoRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = RepoRoot::open(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn what_we_write_insta_reads_back_identically() {
        let (dir, root) = root();
        std::fs::write(dir.path().join("x@v1.snap"), snapshot().render()).unwrap();
        assert_eq!(read(&root, Path::new("x@v1.snap")).unwrap(), snapshot());
    }

    #[test]
    fn check_mode_never_writes_and_pending_mode_writes_snap_new() {
        let (dir, root) = root();
        let path = Path::new("snapshots/t/accepted/x@v1.snap");
        let missing = check(&root, path, &snapshot(), SnapshotMode::CHECK, false);
        assert_eq!(missing, SnapshotCheck::Missing { pending: None });
        assert!(!dir.path().join("snapshots").exists());

        let missing = check(&root, path, &snapshot(), SnapshotMode::WRITE_PENDING, false);
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
            check(&root, path, &snapshot(), SnapshotMode::ACCEPT, false),
            SnapshotCheck::Accepted
        );
        assert!(
            !dir.path().join(&pending).exists(),
            "accepting removes the pending file"
        );
        assert_eq!(
            check(&root, path, &snapshot(), SnapshotMode::CHECK, false),
            SnapshotCheck::Matches
        );
        std::fs::write(dir.path().join(&pending), "left over").unwrap();
        assert_eq!(
            check(&root, path, &snapshot(), SnapshotMode::CHECK, false),
            SnapshotCheck::Matches
        );
        assert!(dir.path().join(&pending).exists(), "CI deletes nothing");
    }

    #[test]
    fn one_changed_byte_is_drift_with_a_diff() {
        let (_dir, root) = root();
        let path = Path::new("x@v1.snap");
        check(&root, path, &snapshot(), SnapshotMode::ACCEPT, false);
        let mut changed = snapshot();
        changed.body = changed.body.replace("approved", "rejected");
        match check(&root, path, &changed, SnapshotMode::CHECK, false) {
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
    fn a_header_naming_another_source_is_drift() {
        let (dir, root) = root();
        let path = Path::new("x@v1.snap");
        let mut other = snapshot();
        other.source = "fixtures/review_status/accepted/other.json".into();
        std::fs::write(dir.path().join(path), other.render()).unwrap();
        match check(&root, path, &snapshot(), SnapshotMode::CHECK, false) {
            SnapshotCheck::Drift { diff, .. } => assert!(diff.contains("other.json"), "{diff}"),
            found => panic!("{found:?}"),
        }
    }

    #[test]
    fn files_insta_would_warn_about_or_choke_on_are_refused_first() {
        for (text, words) in [
            ("", "an empty file"),
            ("\u{feff}---\nsource: x\n---\nbody\n", "byte-order mark"),
            ("expression: x\n\nbody\n", "legacy"),
            ("---\nsource: [[[[[[\n---\nbody\n", "not one of insta's"),
            ("---\nsource: x\ndescription: y\n", "never closed"),
        ] {
            let message = check_format(text).unwrap_err();
            assert!(message.contains(words), "{text:?}: {message}");
        }
        assert_eq!(check_format(&snapshot().render()), Ok(()));
    }

    #[test]
    fn scalars_are_quoted_only_when_yaml_needs_it() {
        assert_eq!(yaml_scalar("fixtures/a/b.json"), "fixtures/a/b.json");
        assert_eq!(yaml_scalar("a: b"), "\"a: b\"");
        assert_eq!(yaml_scalar("true"), "\"true\"");
        assert_eq!(yaml_scalar("--x"), "\"--x\"");
    }

    #[test]
    fn insta_update_force_pass_and_ci_pick_the_mode_as_insta_does() {
        let mode = |ci, update, force| SnapshotMode::from_settings(ci, update, force).unwrap();
        assert_eq!(mode(false, None, None), SnapshotMode::WRITE_PENDING);
        assert_eq!(mode(true, None, None), SnapshotMode::CHECK);
        assert_eq!(mode(true, Some("auto"), None), SnapshotMode::CHECK);
        assert_eq!(mode(true, Some("new"), None).update, Update::New);
        assert_eq!(mode(true, Some("always"), None).update, Update::Always);
        assert_eq!(mode(false, Some("1"), None).update, Update::Always);
        assert_eq!(mode(false, Some("unseen"), None).update, Update::Unseen);
        assert_eq!(mode(false, Some("force"), None).update, Update::Force);
        assert_eq!(mode(false, Some("no"), None), SnapshotMode::CHECK);
        assert!(mode(false, None, Some("1")).force_pass);
        assert!(!mode(false, None, Some("0")).force_pass);
        assert!(
            !mode(true, Some("always"), None).accept,
            "only --accept locks and deletes"
        );
        assert!(SnapshotMode::from_settings(false, Some("sometimes"), None).is_err());
        assert!(SnapshotMode::from_settings(false, None, Some("yes")).is_err());
    }

    #[test]
    fn unseen_writes_new_snapshots_in_place_and_changed_ones_as_pending() {
        let (dir, root) = root();
        let path = Path::new("snapshots/t/accepted/x@v1.snap");
        let unseen = SnapshotMode {
            update: Update::Unseen,
            ..SnapshotMode::WRITE_PENDING
        };
        assert_eq!(
            check(&root, path, &snapshot(), unseen, false),
            SnapshotCheck::Accepted
        );
        assert!(dir.path().join(path).exists());
        let mut changed = snapshot();
        changed.body.push(' ');
        assert!(matches!(
            check(&root, path, &changed, unseen, false),
            SnapshotCheck::Drift {
                pending: Some(_),
                ..
            }
        ));
        // force rewrites even a matching snapshot, and it still matches.
        std::fs::write(
            dir.path().join(path),
            snapshot()
                .render()
                .replacen("---\n", "---\nassertion_line: 3\n", 1),
        )
        .unwrap();
        let force = SnapshotMode {
            update: Update::Force,
            ..SnapshotMode::WRITE_PENDING
        };
        assert_eq!(
            check(&root, path, &snapshot(), force, false),
            SnapshotCheck::Matches
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(path)).unwrap(),
            snapshot().render()
        );
    }
}
