//! A store in a local folder: one file per object, under a folder per tool.
//!
//! The folder is created private (0700, as are the tool folders in it). Every write is atomic
//! (a new temporary file, created exclusively so that nothing planted at its name is followed,
//! written, flushed to disk, then renamed over the object's name, which replaces a link there
//! instead of writing through it), and before each one the store and the tool's folder must be
//! real folders, not symbolic links: a store replaced by a link is refused, never written
//! through. Reads take regular files only, each at most [`MAX_OBJECT_BYTES`].

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::{Entry, MAX_OBJECT_BYTES, OBJECT_OVERHEAD, Store, check_name};

/// A store in a local folder.
#[derive(Debug)]
pub struct FolderStore {
    root: PathBuf,
    /// Distinguishes one write's temporary file from another's, in this process.
    writes: AtomicU64,
}

impl FolderStore {
    /// The folder at `root`, created private (0700) if it does not exist; refused if it is a
    /// symbolic link or not a folder.
    pub fn open(root: &Path) -> io::Result<FolderStore> {
        match fs::symlink_metadata(root) {
            Ok(_) => real_folder(root)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => create_private(root)?,
            Err(error) => return Err(error),
        }
        Ok(FolderStore {
            root: root.to_path_buf(),
            writes: AtomicU64::new(0),
        })
    }

    fn path_of(&self, name: &str) -> io::Result<(PathBuf, PathBuf)> {
        check_name(name)?;
        let (tool, file) = name.split_once('/').expect("a checked name has two parts");
        let folder = self.root.join(tool);
        Ok((folder.clone(), folder.join(file)))
    }
}

/// `path` is a folder, not a link to one.
fn real_folder(path: &Path) -> io::Result<()> {
    let metadata = fs::symlink_metadata(path)?;
    if metadata.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link; a store is written only in a folder of its own",
                path.display()
            ),
        ));
    }
    if !metadata.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a folder", path.display()),
        ));
    }
    Ok(())
}

/// What a file takes on disk: the blocks it occupies (never less than its length, rounded up to
/// a block), and its inode and directory entry.
fn footprint(metadata: &fs::Metadata) -> u64 {
    #[cfg(unix)]
    let allocated = std::os::unix::fs::MetadataExt::blocks(metadata) * 512;
    #[cfg(not(unix))]
    let allocated = 0;
    allocated.max(metadata.len().div_ceil(4096) * 4096) + OBJECT_OVERHEAD
}

fn create_private(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

impl Store for FolderStore {
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<u64> {
        let (folder, path) = self.path_of(name)?;
        real_folder(&self.root)?;
        match fs::symlink_metadata(&folder) {
            Ok(_) => real_folder(&folder)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let mut builder = fs::DirBuilder::new();
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                match builder.create(&folder) {
                    Ok(()) => {}
                    // Another writer made it in between.
                    Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(error) => return Err(error),
                }
                real_folder(&folder)?;
            }
            Err(error) => return Err(error),
        }
        let temporary = folder.join(format!(
            ".{}.{}.{}.tmp",
            path.file_name().unwrap_or_default().to_string_lossy(),
            std::process::id(),
            self.writes.fetch_add(1, Ordering::Relaxed)
        ));
        let mut options = fs::OpenOptions::new();
        // Exclusive: a file, or a link, planted at the name is an error, never followed.
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written = options.open(&temporary).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(error);
        }
        fs::rename(&temporary, &path).inspect_err(|_| {
            let _ = fs::remove_file(&temporary);
        })?;
        Ok(
            fs::symlink_metadata(&path).map_or(bytes.len() as u64 + OBJECT_OVERHEAD, |metadata| {
                footprint(&metadata)
            }),
        )
    }

    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let (folder, path) = self.path_of(name)?;
        real_folder(&self.root)?;
        match fs::symlink_metadata(&folder) {
            Ok(_) => real_folder(&folder)?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        }
        let metadata = match fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        if !metadata.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        let mut bytes = Vec::new();
        fs::File::open(&path)?
            .take(MAX_OBJECT_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_OBJECT_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is larger than any retained object", path.display()),
            ));
        }
        Ok(Some(bytes))
    }

    fn visit(&self, prefix: &str, each: &mut dyn FnMut(Entry)) -> io::Result<()> {
        real_folder(&self.root)?;
        for tool in fs::read_dir(&self.root)? {
            let tool = tool?;
            let Ok(tool_name) = tool.file_name().into_string() else {
                continue;
            };
            // Only the store's own folders: not a link, not a file.
            if !tool.file_type()?.is_dir() || tool_name.starts_with('.') {
                continue;
            }
            for file in fs::read_dir(tool.path())? {
                let file = file?;
                let Ok(file_name) = file.file_name().into_string() else {
                    continue;
                };
                let name = format!("{tool_name}/{file_name}");
                if file_name.starts_with('.')
                    || !file.file_type()?.is_file()
                    || !name.starts_with(prefix)
                {
                    continue;
                }
                let metadata = match file.metadata() {
                    Ok(metadata) => metadata,
                    // Deleted by another writer since the folder was read.
                    Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                    Err(error) => return Err(error),
                };
                each(Entry {
                    name,
                    size: footprint(&metadata),
                    modified: metadata.modified()?,
                });
            }
        }
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let (folder, path) = self.path_of(name)?;
        real_folder(&self.root)?;
        real_folder(&folder)?;
        match fs::remove_file(path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn describe(&self) -> String {
        format!("the folder {}", self.root.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn the_folder_is_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("nested/store");
        let store = FolderStore::open(&root).unwrap();
        store.put("t/x", b"1").unwrap();
        for folder in [root.clone(), root.join("t")] {
            let mode = fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", folder.display());
        }
        let mode = fs::metadata(root.join("t/x")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[cfg(unix)]
    #[test]
    fn a_store_or_a_tool_folder_replaced_by_a_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let root = dir.path().join("store");
        // A link where the store is: refused at once.
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        assert!(FolderStore::open(&root).is_err());
        fs::remove_file(&root).unwrap();
        // Opened, then replaced by a link: every write refused.
        let store = FolderStore::open(&root).unwrap();
        store.put("t/x", b"1").unwrap();
        fs::rename(&root, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&outside, &root).unwrap();
        assert!(store.put("t/y", b"2").is_err());
        assert!(store.get("t/x").is_err());
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        // A tool folder that is a link.
        fs::remove_file(&root).unwrap();
        fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("t")).unwrap();
        assert!(store.put("t/z", b"3").is_err());
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        // A link planted at an object's name is replaced, not written through.
        fs::remove_file(root.join("t")).unwrap();
        fs::create_dir(root.join("t")).unwrap();
        let victim = outside.join("victim");
        fs::write(&victim, b"kept").unwrap();
        std::os::unix::fs::symlink(&victim, root.join("t/w")).unwrap();
        store.put("t/w", b"4").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"kept");
        assert_eq!(store.get("t/w").unwrap().unwrap(), b"4");
    }
}
