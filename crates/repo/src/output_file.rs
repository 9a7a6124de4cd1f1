//! Files a flag or the environment names outside the repository's layout: `--report
//! FORMAT=FILE`, `--audit FILE`, `--retain DIR`, `GITHUB_STEP_SUMMARY`. CI runs toolgate in a
//! checkout a pull request wrote, so such a path may be a symlink the pull request committed
//! (`toolgate.xml -> ~/.ssh/authorized_keys`): none is ever written through one. A relative path
//! is refused if any part of it is a symlink; an absolute one (the runner's own temporary files,
//! or a `/tmp` that is itself a link on some systems) if its last part is.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::UsageError;

/// How an output file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Created, or emptied and rewritten (a report).
    Replace,
    /// Created, or appended to (a log several processes may share, the job summary).
    Append,
    /// As `Append`, and readable: a log whose last line the writer reads back (the audit
    /// log's chain).
    AppendReadable,
}

/// Opens `path` for writing as `mode` says, refusing a symlink where one could lead the write
/// elsewhere; `what` names the file in errors ("the junit report").
pub fn open_output_file(path: &Path, mode: OutputMode, what: &str) -> Result<File, UsageError> {
    refuse_symlinks(path, what)?;
    let mut options = OpenOptions::new();
    match mode {
        OutputMode::Replace => options.write(true).create(true).truncate(true),
        OutputMode::Append => options.append(true).create(true),
        OutputMode::AppendReadable => options.append(true).read(true).create(true),
    };
    options
        .open(path)
        .map_err(|error| UsageError::io(path, &format!("open {what} for writing"), &error))
}

/// Creates the folder `path` names (and its parents) unless it exists, refusing symlinks as
/// [`open_output_file`] does; files are then written inside it by name.
pub fn create_output_folder(path: &Path, what: &str) -> Result<(), UsageError> {
    refuse_symlinks(path, what)?;
    fs::create_dir_all(path)
        .map_err(|error| UsageError::io(path, &format!("create {what}"), &error))
}

/// The symlink rule for output paths (see the module's documentation).
fn refuse_symlinks(path: &Path, what: &str) -> Result<(), UsageError> {
    refuse_symlinks_from(Path::new(""), path, what)
}

/// [`refuse_symlinks`] for a relative `path` taken from `base` rather than the current folder.
fn refuse_symlinks_from(base: &Path, path: &Path, what: &str) -> Result<(), UsageError> {
    let mut checked: Vec<PathBuf> = vec![path.to_path_buf()];
    if path.is_relative() {
        let mut prefix = PathBuf::new();
        for component in path.components() {
            if let Component::Normal(part) = component {
                prefix.push(part);
                checked.push(prefix.clone());
            } else {
                prefix.push(component);
            }
        }
    }
    for candidate in checked {
        match fs::symlink_metadata(base.join(&candidate)) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(UsageError::new(format!(
                    "{}: a symlink, so {what} ({}) is not written through it; toolgate never writes an output file through a symlink: remove it, or name another path",
                    candidate.display(),
                    path.display()
                )));
            }
            Ok(_) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(UsageError::io(&candidate, "inspect", &error)),
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::unix::fs::symlink;

    #[test]
    fn an_output_file_is_never_written_through_a_symlink() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("authorized_keys");
        fs::write(&target, "keep").unwrap();
        let repo = tempfile::tempdir().unwrap();
        symlink(&target, repo.path().join("toolgate.xml")).unwrap();
        symlink(outside.path(), repo.path().join("reports")).unwrap();
        for (path, mode) in [
            (repo.path().join("toolgate.xml"), OutputMode::Replace),
            (repo.path().join("toolgate.xml"), OutputMode::Append),
        ] {
            let error = open_output_file(&path, mode, "the junit report").unwrap_err();
            assert!(
                error.message().contains("a symlink, so the junit report"),
                "{error}"
            );
        }
        // A relative path through a linked folder is refused too.
        let relative = refuse_symlinks_from(repo.path(), Path::new("reports/x.xml"), "r");
        assert!(
            relative
                .unwrap_err()
                .message()
                .starts_with("reports: a symlink")
        );
        assert!(
            create_output_folder(&repo.path().join("reports"), "the retention folder").is_err()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        // An ordinary path is written, appended to, and replaced.
        let file = repo.path().join("report.json");
        open_output_file(&file, OutputMode::Append, "r")
            .unwrap()
            .write_all(b"a")
            .unwrap();
        open_output_file(&file, OutputMode::Append, "r")
            .unwrap()
            .write_all(b"b")
            .unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "ab");
        open_output_file(&file, OutputMode::Replace, "r")
            .unwrap()
            .write_all(b"c")
            .unwrap();
        assert_eq!(fs::read_to_string(&file).unwrap(), "c");
    }
}
