//! The repository root as a boundary.
//!
//! CI runs `toolgate test` on pull requests, and a pull request controls the fixture tree: its
//! file names, its symlinks, its file types. So every path the harness reads, writes or deletes
//! goes through [`RepoRoot`]: each part of it that exists is resolved (symlinks followed) and must
//! stay inside the root; reads take regular files only (a FIFO or a device is an error, never a
//! wait) and stop at a size cap; writes never go through a symlink; deletes take regular files
//! only. A path that breaks a rule is an error naming it, never followed.

use std::fs;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

/// The largest sidecar, request file, snapshot, lock file, contract or schema the harness reads.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A repository root, resolved once.
#[derive(Debug, Clone)]
pub struct RepoRoot {
    /// The root as the user named it, for messages (`contracts/x`, not `/tmp/…/contracts/x`).
    shown: PathBuf,
    /// The root with every symlink resolved: the boundary.
    real: PathBuf,
}

/// What a confined path turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
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
    pub kind: Result<Kind, String>,
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
        Ok(RepoRoot { shown, real })
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
    pub fn confine(&self, relative: &Path) -> Result<(), String> {
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            match component {
                Component::Normal(part) => prefix.push(part),
                Component::CurDir => continue,
                _ => {
                    return Err(format!(
                        "{}: not a path inside the repository (no absolute paths, no `..`)",
                        relative.display()
                    ));
                }
            }
            let full = self.real.join(&prefix);
            let metadata = match fs::symlink_metadata(&full) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(error) => {
                    return Err(format!(
                        "{}: cannot inspect: {error}",
                        self.shown(&prefix).display()
                    ));
                }
            };
            if !metadata.file_type().is_symlink() {
                continue;
            }
            match fs::canonicalize(&full) {
                Ok(target) if target.starts_with(&self.real) => {}
                Ok(target) => {
                    return Err(format!(
                        "{}: a symlink that leads outside the repository (to {}); toolgate never follows it: replace it with the file or folder itself",
                        self.shown(&prefix).display(),
                        target.display()
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "{}: a symlink that leads nowhere; toolgate never follows or writes through one: remove it",
                        self.shown(&prefix).display()
                    ));
                }
            }
        }
        Ok(())
    }

    /// What is at `relative`, once it is confined.
    pub fn kind(&self, relative: &Path) -> Result<Kind, String> {
        self.confine(relative)?;
        match fs::metadata(self.real.join(relative)) {
            Ok(metadata) if metadata.is_file() => Ok(Kind::File),
            Ok(metadata) if metadata.is_dir() => Ok(Kind::Dir),
            Ok(_) => Ok(Kind::Other),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Kind::Missing),
            Err(error) => Err(format!(
                "{}: cannot inspect: {error}",
                self.shown(relative).display()
            )),
        }
    }

    /// The entries of the folder at `relative`, sorted by name, each with its kind (or why it
    /// may not be followed).
    pub fn list(&self, relative: &Path) -> Result<Vec<Entry>, String> {
        match self.kind(relative)? {
            Kind::Dir => {}
            Kind::Missing => {
                return Err(format!(
                    "{}: no such folder",
                    self.shown(relative).display()
                ));
            }
            _ => return Err(format!("{}: not a folder", self.shown(relative).display())),
        }
        let listing = fs::read_dir(self.real.join(relative))
            .map_err(|error| format!("{}: cannot list: {error}", self.shown(relative).display()))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|error| {
                format!("{}: cannot list: {error}", self.shown(relative).display())
            })?;
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
    pub fn read_capped(&self, relative: &Path, cap: u64) -> Result<Vec<u8>, String> {
        let shown = self.shown(relative);
        match self.kind(relative)? {
            Kind::File => {}
            Kind::Missing => return Err(format!("{}: no such file", shown.display())),
            Kind::Dir => return Err(format!("{}: a folder, not a file", shown.display())),
            Kind::Other => {
                return Err(format!(
                    "{}: not a regular file (a FIFO, socket or device); fixtures and their files are regular files",
                    shown.display()
                ));
            }
        }
        let file = fs::File::open(self.real.join(relative))
            .map_err(|error| format!("{}: cannot read: {error}", shown.display()))?;
        let mut bytes = Vec::new();
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|error| format!("{}: cannot read: {error}", shown.display()))?;
        Ok(bytes)
    }

    /// Reads the regular file at `relative` as UTF-8 text of at most [`MAX_FILE_BYTES`].
    pub fn read_text(&self, relative: &Path) -> Result<String, String> {
        let bytes = self.read_capped(relative, MAX_FILE_BYTES)?;
        let shown = self.shown(relative);
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "{}: larger than {MAX_FILE_BYTES} bytes; no file of this kind is ever this large",
                shown.display()
            ));
        }
        String::from_utf8(bytes).map_err(|error| {
            format!(
                "{}: not UTF-8 text (invalid byte at offset {})",
                shown.display(),
                error.utf8_error().valid_up_to()
            )
        })
    }

    /// Writes `bytes` to `relative`, creating folders inside the root as needed. Never writes
    /// through a symlink, and never replaces anything but a regular file.
    pub fn write(&self, relative: &Path, bytes: &[u8]) -> Result<(), String> {
        let shown = self.shown(relative);
        self.confine(relative)?;
        if let Some(parent) = relative.parent() {
            let mut folder = PathBuf::new();
            for component in parent.components() {
                folder.push(component);
                match self.kind(&folder)? {
                    Kind::Dir => {}
                    // Another worker may create the same folder at the same moment.
                    Kind::Missing => match fs::create_dir(self.real.join(&folder)) {
                        Ok(()) => {}
                        Err(error)
                            if error.kind() == io::ErrorKind::AlreadyExists
                                && self.kind(&folder)? == Kind::Dir => {}
                        Err(error) => {
                            return Err(format!(
                                "{}: cannot create: {error}",
                                self.shown(&folder).display()
                            ));
                        }
                    },
                    _ => {
                        return Err(format!(
                            "{}: not a folder, so {} cannot be written",
                            self.shown(&folder).display(),
                            shown.display()
                        ));
                    }
                }
            }
        }
        let full = self.real.join(relative);
        if let Ok(metadata) = fs::symlink_metadata(&full)
            && !metadata.file_type().is_file()
        {
            return Err(format!(
                "{}: not a regular file (a symlink, folder or special file); toolgate never writes through one: remove it",
                shown.display()
            ));
        }
        fs::write(&full, bytes)
            .map_err(|error| format!("{}: cannot write: {error}", shown.display()))
    }

    /// Deletes the regular file at `relative`; anything else (a symlink, a folder, a special
    /// file) is refused and left alone. A file that is already gone is not an error.
    pub fn remove_file(&self, relative: &Path) -> Result<(), String> {
        let shown = self.shown(relative);
        if let Some(parent) = relative.parent() {
            self.confine(parent)?;
        }
        let full = self.real.join(relative);
        match fs::symlink_metadata(&full) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("{}: cannot inspect: {error}", shown.display())),
            Ok(metadata) if !metadata.file_type().is_file() => Err(format!(
                "{}: not a regular file; toolgate only ever deletes its own snapshot files, so it is left alone",
                shown.display()
            )),
            Ok(_) => fs::remove_file(&full)
                .map_err(|error| format!("{}: cannot remove: {error}", shown.display())),
        }
    }
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
        assert!(error.contains("leads outside the repository"), "{error}");
        let error = root
            .read_text(Path::new("fixtures/t/leak.json"))
            .unwrap_err();
        assert!(error.contains("leads outside the repository"), "{error}");
        assert_eq!(
            root.read_text(Path::new("fixtures/t/alias.json")).unwrap(),
            "{}"
        );
        let error = root
            .write(Path::new("fixtures/out/new.snap"), b"x")
            .unwrap_err();
        assert!(error.contains("leads outside"), "{error}");
        assert!(!outside.path().join("new.snap").exists());
        assert!(root.read_text(Path::new("../secret")).is_err());
        assert!(root.read_text(Path::new("/etc/passwd")).is_err());
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
        assert!(error.contains("not a regular file"), "{error}");
        fs::write(repo.path().join("fixtures/t/big.json"), vec![b' '; 100]).unwrap();
        assert_eq!(
            root.read_capped(Path::new("fixtures/t/big.json"), 10)
                .unwrap()
                .len(),
            11
        );
    }
}
