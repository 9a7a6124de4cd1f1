//! The repository root as a boundary.
//!
//! CI runs `toolgate test` on pull requests, and a pull request controls the fixture tree: its
//! file names, its symlinks, its file types. So every path the harness reads, writes or deletes
//! goes through [`RepoRoot`]: each part of it that exists is resolved (symlinks followed) and must
//! stay inside the root; reads take regular files only (a FIFO or a device is an error, never a
//! wait) and stop at a size cap; writes never go through a symlink; deletes take regular files
//! only. A path that breaks a rule is a [`RepoError`] naming it, never followed.
//!
//! A root may also be a contracts bundle read into memory ([`RepoRoot::in_bundle`]): the same
//! reads, over the bundle's files, and no writes.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The largest sidecar, request file, snapshot, lock file, contract or schema the harness reads.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A repository root, resolved once.
#[derive(Debug, Clone)]
pub struct RepoRoot {
    /// The root as the user named it, for messages (`contracts/x`, not `/tmp/…/contracts/x`).
    shown: PathBuf,
    /// The root with every symlink resolved: the boundary.
    real: PathBuf,
    /// A bundle's files by path, when the root is one: read from there, never written.
    bundle: Option<Arc<BTreeMap<PathBuf, Vec<u8>>>>,
    /// That bundle's digest.
    bundle_digest: Option<toolgate_gate::Sha256Digest>,
}

/// What a confined path turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Nothing is there.
    Missing,
    /// A regular file (possibly through a symlink inside the root).
    File,
    /// A folder (possibly through a symlink inside the root).
    Dir,
    /// Something else: a FIFO, a socket, a device.
    Other,
}

/// One entry of a listed folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's name (lossily decoded; names that are not UTF-8 are reported by the caller).
    pub name: String,
    /// Whether the name is exactly what is on disk.
    pub name_is_utf8: bool,
    /// The path, relative to the root.
    pub path: PathBuf,
    /// What it is, or why it may not be followed.
    pub kind: Result<EntryKind, RepoError>,
}

/// Why a path of the repository could not be used: the path as the user knows it, and what is
/// wrong with it. Its `Display` is one line that names the path and, where it can, the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoError {
    path: PathBuf,
    problem: RepoProblem,
}

/// What is wrong with a path of the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepoProblem {
    /// An absolute path, or one with `..`: not a path inside the repository at all.
    NotInside,
    /// A symlink that resolves outside the root (to `target`): never followed.
    Escapes {
        /// Where it leads.
        target: PathBuf,
    },
    /// A symlink that resolves nowhere: never followed or written through.
    Dangling,
    /// No file (or folder) is there.
    Missing {
        /// A folder was wanted, not a file.
        folder: bool,
    },
    /// A folder where a file was wanted.
    Folder,
    /// Not a folder where one was wanted.
    NotFolder,
    /// A FIFO, socket or device where a regular file was wanted: never read, never waited on.
    NotRegular,
    /// Larger than the most any file of its kind may be.
    TooLarge {
        /// The cap, in bytes.
        cap: u64,
    },
    /// Not UTF-8 text.
    NotUtf8 {
        /// The offset of the first invalid byte.
        offset: usize,
    },
    /// A folder on the way to a file to write is something else.
    Blocked {
        /// The file that was to be written, as the user knows it.
        file: PathBuf,
    },
    /// A symlink, folder or special file where a file was to be written: never written through.
    NotWritable,
    /// A symlink on the way to a file to write or delete, even one that stays inside the root: a
    /// write never goes through one (a committed `snapshots -> contracts/x/v1` would otherwise
    /// let `--accept` rewrite a locked contract).
    SymlinkOnTheWay {
        /// The file that was to be written or deleted, as the user knows it.
        file: PathBuf,
    },
    /// Not a regular file where one was to be deleted: left alone.
    NotRemovable,
    /// A file to write or delete inside a bundle, which is read-only.
    InBundle,
    /// The operating system refused.
    Io {
        /// What was being done: `inspect`, `list`, `read`, `create`, `write`, `remove`.
        action: &'static str,
        /// The operating system's kind of error.
        kind: io::ErrorKind,
        /// Its message.
        message: String,
    },
}

impl RepoError {
    fn new(path: PathBuf, problem: RepoProblem) -> RepoError {
        RepoError { path, problem }
    }

    fn io(path: PathBuf, action: &'static str, error: &io::Error) -> RepoError {
        RepoError::new(
            path,
            RepoProblem::Io {
                action,
                kind: error.kind(),
                message: error.to_string(),
            },
        )
    }

    /// The path, as the user knows it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &RepoProblem {
        &self.problem
    }

    /// Whether the path is refused because it leads outside the root (an absolute path, `..`, a
    /// symlink out or to nowhere), as opposed to a file that is missing, unreadable or too large.
    pub fn is_confinement(&self) -> bool {
        matches!(
            self.problem,
            RepoProblem::NotInside | RepoProblem::Escapes { .. } | RepoProblem::Dangling
        )
    }
}

impl fmt::Display for RepoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            RepoProblem::NotInside => write!(
                f,
                "{path}: not a path inside the repository (no absolute paths, no `..`)"
            ),
            RepoProblem::Escapes { target } => write!(
                f,
                "{path}: a symlink that leads outside the repository (to {}); toolgate never follows it: replace it with the file or folder itself",
                target.display()
            ),
            RepoProblem::Dangling => write!(
                f,
                "{path}: a symlink that leads nowhere; toolgate never follows or writes through one: remove it"
            ),
            RepoProblem::Missing { folder: true } => write!(f, "{path}: no such folder"),
            RepoProblem::Missing { folder: false } => write!(f, "{path}: no such file"),
            RepoProblem::Folder => write!(f, "{path}: a folder, not a file"),
            RepoProblem::NotFolder => write!(f, "{path}: not a folder"),
            RepoProblem::NotRegular => write!(
                f,
                "{path}: not a regular file (a FIFO, socket or device); fixtures and their files are regular files"
            ),
            RepoProblem::TooLarge { cap } => write!(
                f,
                "{path}: larger than {cap} bytes; no file of this kind is ever this large"
            ),
            RepoProblem::NotUtf8 { offset } => write!(
                f,
                "{path}: not UTF-8 text (invalid byte at offset {offset})"
            ),
            RepoProblem::Blocked { file } => write!(
                f,
                "{path}: not a folder, so {} cannot be written",
                file.display()
            ),
            RepoProblem::NotWritable => write!(
                f,
                "{path}: not a regular file (a symlink, folder or special file); toolgate never writes through one: remove it"
            ),
            RepoProblem::SymlinkOnTheWay { file } => write!(
                f,
                "{path}: a symlink, so {} is not written or deleted through it (toolgate never writes through a symlink, even one inside the repository): replace it with the folder itself",
                file.display()
            ),
            RepoProblem::NotRemovable => write!(
                f,
                "{path}: not a regular file; toolgate only ever deletes its own snapshot files, so it is left alone"
            ),
            RepoProblem::InBundle => write!(
                f,
                "{path}: inside a contracts bundle, which is read-only; run this on the repository's folder"
            ),
            RepoProblem::Io {
                action, message, ..
            } => write!(f, "{path}: cannot {action}: {message}"),
        }
    }
}

impl std::error::Error for RepoError {}

/// Most readers report a path's problem as one line among others.
impl From<RepoError> for String {
    fn from(error: RepoError) -> String {
        error.to_string()
    }
}

impl RepoRoot {
    /// Resolves `root`, which must be an existing folder.
    pub fn open(root: &Path) -> io::Result<RepoRoot> {
        let real = fs::canonicalize(root)?;
        // Messages read better as `contracts/x` than `./contracts/x`.
        let shown = if root == Path::new(".") {
            PathBuf::new()
        } else {
            root.to_path_buf()
        };
        Ok(RepoRoot {
            shown,
            real,
            bundle: None,
            bundle_digest: None,
        })
    }

    /// A root over a bundle's files (paths relative to the root, `contracts/…`), named `shown`
    /// (the bundle's file) in messages.
    pub fn in_bundle(
        shown: &Path,
        files: BTreeMap<PathBuf, Vec<u8>>,
        digest: toolgate_gate::Sha256Digest,
    ) -> RepoRoot {
        RepoRoot {
            shown: shown.to_path_buf(),
            real: PathBuf::new(),
            bundle: Some(Arc::new(files)),
            bundle_digest: Some(digest),
        }
    }

    /// The digest of the bundle this root is, if it is one (read-only, then).
    pub fn bundle_digest(&self) -> Option<toolgate_gate::Sha256Digest> {
        self.bundle_digest
    }

    /// What is at `relative` in a bundle: a file it holds, a folder some file lies in, or
    /// nothing.
    fn bundle_kind(files: &BTreeMap<PathBuf, Vec<u8>>, relative: &Path) -> EntryKind {
        let relative = normal(relative);
        if files.contains_key(&relative) {
            EntryKind::File
        } else if files.keys().any(|path| path.starts_with(&relative)) {
            EntryKind::Dir
        } else {
            EntryKind::Missing
        }
    }

    /// The same root, naming paths relative to it in every message (as a suite's report does,
    /// whatever folder it was started from).
    pub fn naming_relative(mut self) -> RepoRoot {
        self.shown = PathBuf::new();
        self
    }

    /// `relative` as the user knows it: under the root as they named it.
    pub fn shown(&self, relative: &Path) -> PathBuf {
        self.shown.join(relative)
    }

    /// Where `relative` really is, for a reader that must open the file itself (after
    /// [`confine`](Self::confine) said it is inside).
    pub fn full(&self, relative: &Path) -> PathBuf {
        self.real.join(relative)
    }

    /// The root as the user named it (empty for the current folder).
    pub fn shown_root(&self) -> &Path {
        &self.shown
    }

    /// Checks that `relative` names a place inside the root: no absolute path, no `..`, and every
    /// part of it that exists, resolved, lies inside the root. A symlink that leads nowhere is
    /// refused too: nothing is ever written through one.
    pub fn confine(&self, relative: &Path) -> Result<(), RepoError> {
        if self.bundle.is_some() {
            // A bundle holds no links: only a path's own parts can leave it.
            return match relative
                .components()
                .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
            {
                true => Ok(()),
                false => Err(RepoError::new(
                    relative.to_path_buf(),
                    RepoProblem::NotInside,
                )),
            };
        }
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => prefix.push(part),
                Component::CurDir => continue,
                _ => {
                    return Err(RepoError::new(
                        relative.to_path_buf(),
                        RepoProblem::NotInside,
                    ));
                }
            }
            let full = self.real.join(&prefix);
            let metadata = match fs::symlink_metadata(&full) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(error) => return Err(RepoError::io(self.shown(&prefix), "inspect", &error)),
            };
            if !metadata.file_type().is_symlink() {
                continue;
            }
            match fs::canonicalize(&full) {
                Ok(target) if target.starts_with(&self.real) => {}
                Ok(target) => {
                    return Err(RepoError::new(
                        self.shown(&prefix),
                        RepoProblem::Escapes { target },
                    ));
                }
                Err(_) => {
                    return Err(RepoError::new(self.shown(&prefix), RepoProblem::Dangling));
                }
            }
        }
        Ok(())
    }

    /// What is at `relative`, once it is confined.
    pub fn kind(&self, relative: &Path) -> Result<EntryKind, RepoError> {
        self.confine(relative)?;
        if let Some(files) = &self.bundle {
            return Ok(RepoRoot::bundle_kind(files, relative));
        }
        match fs::metadata(self.real.join(relative)) {
            Ok(metadata) if metadata.is_file() => Ok(EntryKind::File),
            Ok(metadata) if metadata.is_dir() => Ok(EntryKind::Dir),
            Ok(_) => Ok(EntryKind::Other),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(EntryKind::Missing),
            Err(error) => Err(RepoError::io(self.shown(relative), "inspect", &error)),
        }
    }

    /// The entries of the folder at `relative`, sorted by name, each with its kind (or why it
    /// may not be followed).
    pub fn list(&self, relative: &Path) -> Result<Vec<Entry>, RepoError> {
        let shown = || self.shown(relative);
        match self.kind(relative)? {
            EntryKind::Dir => {}
            EntryKind::Missing => {
                return Err(RepoError::new(
                    shown(),
                    RepoProblem::Missing { folder: true },
                ));
            }
            _ => return Err(RepoError::new(shown(), RepoProblem::NotFolder)),
        }
        if let Some(files) = &self.bundle {
            return Ok(self.bundle_entries(files, relative));
        }
        let listing = fs::read_dir(self.real.join(relative))
            .map_err(|error| RepoError::io(shown(), "list", &error))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|error| RepoError::io(shown(), "list", &error))?;
            let file_name = entry.file_name();
            let path = relative.join(&file_name);
            entries.push(Entry {
                name: file_name.to_string_lossy().into_owned(),
                name_is_utf8: file_name.to_str().is_some(),
                kind: self.kind(&path),
                path,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Reads at most `cap + 1` bytes of the regular file at `relative`: enough to know it is
    /// larger than `cap` without holding it.
    pub fn read_capped(&self, relative: &Path, cap: u64) -> Result<Vec<u8>, RepoError> {
        let shown = || self.shown(relative);
        let problem = match self.kind(relative)? {
            EntryKind::File => None,
            EntryKind::Missing => Some(RepoProblem::Missing { folder: false }),
            EntryKind::Dir => Some(RepoProblem::Folder),
            EntryKind::Other => Some(RepoProblem::NotRegular),
        };
        if let Some(problem) = problem {
            return Err(RepoError::new(shown(), problem));
        }
        if let Some(files) = &self.bundle {
            let bytes = &files[&normal(relative)];
            let kept = bytes
                .len()
                .min(usize::try_from(cap.saturating_add(1)).unwrap_or(usize::MAX));
            return Ok(bytes[..kept].to_vec());
        }
        let file = fs::File::open(self.real.join(relative))
            .map_err(|error| RepoError::io(shown(), "read", &error))?;
        let mut bytes = Vec::new();
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| RepoError::io(shown(), "read", &error))?;
        Ok(bytes)
    }

    /// Reads the regular file at `relative` as UTF-8 text of at most [`MAX_FILE_BYTES`].
    pub fn read_text(&self, relative: &Path) -> Result<String, RepoError> {
        let bytes = self.read_capped(relative, MAX_FILE_BYTES)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(RepoError::new(
                self.shown(relative),
                RepoProblem::TooLarge {
                    cap: MAX_FILE_BYTES,
                },
            ));
        }
        String::from_utf8(bytes).map_err(|error| {
            RepoError::new(
                self.shown(relative),
                RepoProblem::NotUtf8 {
                    offset: error.utf8_error().valid_up_to(),
                },
            )
        })
    }

    /// Refuses a symlink among the folders on the way to `relative`, even one that leads inside
    /// the root: reads may follow those, writes and deletes never do.
    fn no_symlink_on_the_way(&self, relative: &Path) -> Result<(), RepoError> {
        let mut folder = PathBuf::new();
        for component in relative.parent().into_iter().flat_map(Path::components) {
            folder.push(component);
            match fs::symlink_metadata(self.real.join(&folder)) {
                Ok(metadata) if metadata.file_type().is_symlink() => {
                    return Err(RepoError::new(
                        self.shown(&folder),
                        RepoProblem::SymlinkOnTheWay {
                            file: self.shown(relative),
                        },
                    ));
                }
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(error) => return Err(RepoError::io(self.shown(&folder), "inspect", &error)),
            }
        }
        Ok(())
    }

    /// Writes `bytes` to `relative`, creating folders inside the root as needed. Never writes
    /// through a symlink (neither the file nor a folder on the way), and never replaces anything
    /// but a regular file.
    pub fn write(&self, relative: &Path, bytes: &[u8]) -> Result<(), RepoError> {
        let shown = || self.shown(relative);
        if self.bundle.is_some() {
            return Err(RepoError::new(shown(), RepoProblem::InBundle));
        }
        self.confine(relative)?;
        self.no_symlink_on_the_way(relative)?;
        if let Some(parent) = relative.parent() {
            let mut folder = PathBuf::new();
            for component in parent.components() {
                folder.push(component);
                match self.kind(&folder)? {
                    EntryKind::Dir => {}
                    // Another worker may create the same folder at the same moment.
                    EntryKind::Missing => match fs::create_dir(self.real.join(&folder)) {
                        Ok(()) => {}
                        Err(error)
                            if error.kind() == io::ErrorKind::AlreadyExists
                                && self.kind(&folder)? == EntryKind::Dir => {}
                        Err(error) => {
                            return Err(RepoError::io(self.shown(&folder), "create", &error));
                        }
                    },
                    _ => {
                        return Err(RepoError::new(
                            self.shown(&folder),
                            RepoProblem::Blocked { file: shown() },
                        ));
                    }
                }
            }
        }
        let full = self.real.join(relative);
        if let Ok(metadata) = fs::symlink_metadata(&full)
            && !metadata.file_type().is_file()
        {
            return Err(RepoError::new(shown(), RepoProblem::NotWritable));
        }
        fs::write(&full, bytes).map_err(|error| RepoError::io(shown(), "write", &error))
    }

    /// Deletes the regular file at `relative`; anything else (a symlink, a folder, a special
    /// file) is refused and left alone. A file that is already gone is not an error.
    pub fn remove_file(&self, relative: &Path) -> Result<(), RepoError> {
        let shown = || self.shown(relative);
        if self.bundle.is_some() {
            return Err(RepoError::new(shown(), RepoProblem::InBundle));
        }
        if let Some(parent) = relative.parent() {
            self.confine(parent)?;
        }
        self.no_symlink_on_the_way(relative)?;
        let full = self.real.join(relative);
        match fs::symlink_metadata(&full) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(RepoError::io(shown(), "inspect", &error)),
            Ok(metadata) if !metadata.file_type().is_file() => {
                Err(RepoError::new(shown(), RepoProblem::NotRemovable))
            }
            Ok(_) => {
                fs::remove_file(&full).map_err(|error| RepoError::io(shown(), "remove", &error))
            }
        }
    }
}

impl RepoRoot {
    /// The entries of a bundle's folder `relative`: each file directly in it, and each folder
    /// a file lies in below it, sorted by name.
    fn bundle_entries(&self, files: &BTreeMap<PathBuf, Vec<u8>>, relative: &Path) -> Vec<Entry> {
        let folder = normal(relative);
        let mut names = BTreeMap::new();
        for path in files.keys() {
            let Ok(rest) = path.strip_prefix(&folder) else {
                continue;
            };
            let mut parts = rest.components();
            if let Some(first) = parts.next() {
                let kind = match parts.next() {
                    None => EntryKind::File,
                    Some(_) => EntryKind::Dir,
                };
                names.insert(first.as_os_str().to_string_lossy().into_owned(), kind);
            }
        }
        names
            .into_iter()
            .map(|(name, kind)| Entry {
                path: relative.join(&name),
                name,
                name_is_utf8: true,
                kind: Ok(kind),
            })
            .collect()
    }
}

/// `relative` without `.` parts, as a bundle's paths are kept.
fn normal(relative: &Path) -> PathBuf {
    relative
        .components()
        .filter(|part| matches!(part, Component::Normal(_)))
        .collect()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, RepoRoot) {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "outside").unwrap();
        let repo = tempfile::tempdir().unwrap();
        fs::create_dir_all(repo.path().join("fixtures/t")).unwrap();
        fs::write(repo.path().join("fixtures/t/inside.json"), "{}").unwrap();
        let root = RepoRoot::open(repo.path()).unwrap();
        (outside, repo, root)
    }

    #[test]
    fn symlinks_out_of_the_root_are_never_followed() {
        let (outside, repo, root) = setup();
        symlink(outside.path(), repo.path().join("fixtures/out")).unwrap();
        symlink(
            outside.path().join("secret"),
            repo.path().join("fixtures/t/leak.json"),
        )
        .unwrap();
        symlink(
            repo.path().join("fixtures/t/inside.json"),
            repo.path().join("fixtures/t/alias.json"),
        )
        .unwrap();
        let error = root
            .read_text(Path::new("fixtures/out/secret"))
            .unwrap_err();
        assert!(error.is_confinement());
        assert!(
            error.to_string().contains("leads outside the repository"),
            "{error}"
        );
        let error = root
            .read_text(Path::new("fixtures/t/leak.json"))
            .unwrap_err();
        assert!(matches!(error.problem(), RepoProblem::Escapes { .. }));
        assert_eq!(
            root.read_text(Path::new("fixtures/t/alias.json")).unwrap(),
            "{}"
        );
        let error = root
            .write(Path::new("fixtures/out/new.snap"), b"x")
            .unwrap_err();
        assert!(error.to_string().contains("leads outside"), "{error}");
        assert!(!outside.path().join("new.snap").exists());
        for escaping in ["../secret", "/etc/passwd"] {
            let error = root.read_text(Path::new(escaping)).unwrap_err();
            assert_eq!(error.problem(), &RepoProblem::NotInside);
        }
    }

    #[test]
    fn nothing_is_written_through_or_deleted_behind_a_symlink() {
        let (outside, repo, root) = setup();
        symlink(
            outside.path().join("secret"),
            repo.path().join("fixtures/t/x.snap"),
        )
        .unwrap();
        symlink(
            outside.path().join("nothing"),
            repo.path().join("fixtures/t/dangling.snap"),
        )
        .unwrap();
        assert!(root.write(Path::new("fixtures/t/x.snap"), b"x").is_err());
        assert!(
            root.write(Path::new("fixtures/t/dangling.snap"), b"x")
                .is_err()
        );
        assert!(!outside.path().join("nothing").exists());
        assert!(root.remove_file(Path::new("fixtures/t/x.snap")).is_err());
        assert_eq!(
            fs::read_to_string(outside.path().join("secret")).unwrap(),
            "outside"
        );
        root.write(Path::new("snapshots/t/a/b.snap"), b"ok")
            .unwrap();
        assert_eq!(
            fs::read_to_string(repo.path().join("snapshots/t/a/b.snap")).unwrap(),
            "ok"
        );
        root.remove_file(Path::new("snapshots/t/a/b.snap")).unwrap();
        assert!(
            root.remove_file(Path::new("snapshots/t/a")).is_err(),
            "a folder is not deleted"
        );
    }

    #[test]
    fn a_fifo_is_an_error_not_a_wait_and_reads_are_bounded() {
        let (_outside, repo, root) = setup();
        let fifo = repo.path().join("fixtures/t/pipe.json");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let error = root
            .read_text(Path::new("fixtures/t/pipe.json"))
            .unwrap_err();
        assert_eq!(error.problem(), &RepoProblem::NotRegular);
        assert!(!error.is_confinement());
        assert!(error.to_string().contains("not a regular file"), "{error}");
        fs::write(repo.path().join("fixtures/t/big.json"), vec![b' '; 100]).unwrap();
        assert_eq!(
            root.read_capped(Path::new("fixtures/t/big.json"), 10)
                .unwrap()
                .len(),
            11
        );
    }

    #[test]
    fn nothing_is_written_or_deleted_through_a_symlink_inside_the_root() {
        let (_outside, repo, root) = setup();
        fs::create_dir_all(repo.path().join("contracts/t/v1")).unwrap();
        fs::write(repo.path().join("contracts/t/v1/contract.yaml"), "locked").unwrap();
        // A committed `snapshots/t` that points at a locked contract version.
        fs::create_dir_all(repo.path().join("snapshots")).unwrap();
        symlink(
            repo.path().join("contracts/t/v1"),
            repo.path().join("snapshots/t"),
        )
        .unwrap();
        let error = root
            .write(Path::new("snapshots/t/contract.yaml"), b"rewritten")
            .unwrap_err();
        assert!(
            matches!(error.problem(), RepoProblem::SymlinkOnTheWay { .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains("snapshots/t: a symlink, so"),
            "{error}"
        );
        assert!(
            root.remove_file(Path::new("snapshots/t/contract.yaml"))
                .is_err()
        );
        assert_eq!(
            fs::read_to_string(repo.path().join("contracts/t/v1/contract.yaml")).unwrap(),
            "locked"
        );
        // Reading through it is still allowed: it stays inside the root.
        assert_eq!(
            root.read_text(Path::new("snapshots/t/contract.yaml"))
                .unwrap(),
            "locked"
        );
    }
}
