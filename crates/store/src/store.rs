//! Where retained decisions go: a store of named objects ([`Store`]), opened from what an
//! operator writes (`--retain DIR` or `--retain s3://bucket/prefix`: [`StoreSpec`]).

use std::io;
use std::time::SystemTime;

/// One kept object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the store (`<tool>/<digest>-<key>`, and `.age` when sealed).
    pub name: String,
    /// What it takes in the store, in bytes: for a folder, the blocks its file occupies on disk
    /// and [`OBJECT_OVERHEAD`] for its inode and directory entry; for a bucket, its size and the
    /// same overhead for its key and metadata. Never less than its length.
    pub size: u64,
    /// When it was written.
    pub modified: SystemTime,
}

/// What one object costs a store besides its bytes: an inode and a directory entry on a
/// filesystem, a key and metadata in a bucket.
pub const OBJECT_OVERHEAD: u64 = 512;

/// A store of named objects. Names are a tool's name, `/`, and a file name, each of ASCII
/// letters, digits, `.`, `_` and `-` ([`check_name`]).
pub trait Store: Send + Sync {
    /// Writes `bytes` under `name`, whole or not at all; what the object takes in the store
    /// (as [`Entry::size`] counts it).
    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<u64>;
    /// Writes each `(name, bytes)` as [`Store::put`] does, the result of each in the same
    /// order. A store with a network between it and its objects writes several at once (the
    /// retainer hands it a batch: one at a time, a store adding 40 ms per write keeps 25 a
    /// second); one on a local disk, one after the other.
    fn put_all(&self, objects: &[(String, Vec<u8>)]) -> Vec<io::Result<u64>> {
        objects
            .iter()
            .map(|(name, bytes)| self.put(name, bytes))
            .collect()
    }
    /// The object `name`, if there is one (at most [`MAX_OBJECT_BYTES`]).
    fn get(&self, name: &str) -> io::Result<Option<Vec<u8>>>;
    /// Each of `names` as [`Store::get`] reads it, in the same order. A store with a network
    /// between it and its objects reads several at once (a replay reads thousands: one at a
    /// time, at 40 ms a read, 10,000 records take seven minutes); one on a local disk, one after
    /// the other.
    fn get_all(&self, names: &[&str]) -> Vec<io::Result<Option<Vec<u8>>>> {
        names.iter().map(|name| self.get(name)).collect()
    }
    /// Hands every object whose name starts with `prefix` to `each`, in no particular order,
    /// holding none of them: a store of millions of objects is walked in bounded memory.
    fn visit(&self, prefix: &str, each: &mut dyn FnMut(Entry)) -> io::Result<()>;
    /// Every object whose name starts with `prefix`, oldest first (for a reader that wants
    /// them all: `reproduce`, `diff --replay`).
    fn list(&self, prefix: &str) -> io::Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.visit(prefix, &mut |entry| entries.push(entry))?;
        entries.sort_by(|a, b| a.modified.cmp(&b.modified).then(a.name.cmp(&b.name)));
        Ok(entries)
    }
    /// Removes `name` (nothing if it is already gone).
    fn delete(&self, name: &str) -> io::Result<()>;
    /// What the store is, for messages (`folder /var/lib/…`, `s3://bucket/prefix`).
    fn describe(&self) -> String;
}

/// The largest object read back: a retained response is at most a contract's `max_bytes`
/// (64 MiB at the most) and its line of facts.
pub const MAX_OBJECT_BYTES: u64 = 80 << 20;

/// Refuses a name that could leave the store or mean something else: two parts (a tool and a
/// file), each 1 to 160 of ASCII letters, digits, `.`, `_` and `-`, neither `.` nor `..` nor
/// starting with `.`.
pub fn check_name(name: &str) -> io::Result<()> {
    let parts: Vec<&str> = name.split('/').collect();
    let part_ok = |part: &&str| {
        !part.is_empty()
            && part.len() <= 160
            && !part.starts_with('.')
            && part
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    };
    if parts.len() == 2 && parts.iter().all(part_ok) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a retained object's name (`<tool>/<file>`)"),
        ))
    }
}

/// A store as an operator names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// A local folder.
    Folder(std::path::PathBuf),
    /// An S3 bucket (or an S3-compatible server's), and a prefix inside it.
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix every object name is put under (empty: the bucket's root).
        prefix: String,
    },
}

impl StoreSpec {
    /// `s3://bucket[/prefix]`, or a folder's path.
    pub fn parse(text: &str) -> Result<StoreSpec, String> {
        match text.strip_prefix("s3://") {
            Some(rest) => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(format!("{text:?}: write s3://BUCKET or s3://BUCKET/PREFIX"));
                }
                Ok(StoreSpec::S3 {
                    bucket: bucket.to_owned(),
                    prefix: prefix.trim_matches('/').to_owned(),
                })
            }
            None if text.contains("://") => Err(format!(
                "{text:?}: a store is a folder's path or s3://BUCKET/PREFIX"
            )),
            None if text.is_empty() => Err("an empty store name".to_owned()),
            None => Ok(StoreSpec::Folder(text.into())),
        }
    }

    /// Opens the store: a folder is created private (0700) if it does not exist; an S3 bucket
    /// is reached with the credentials, region and endpoint of the environment
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`), or
    /// `endpoint` when given.
    pub fn open(&self, endpoint: Option<&str>) -> Result<Box<dyn Store>, String> {
        match self {
            StoreSpec::Folder(path) => crate::FolderStore::open(path)
                .map(|store| Box::new(store) as Box<dyn Store>)
                .map_err(|error| format!("{}: {error}", path.display())),
            StoreSpec::S3 { bucket, prefix } => crate::S3Store::open(bucket, prefix, endpoint)
                .map(|store| Box::new(store) as Box<dyn Store>),
        }
    }

    /// Opens the store to read what a front kept: as [`StoreSpec::open`], but a folder that
    /// does not exist is an error (a mistyped path is not an empty store).
    pub fn open_to_read(&self, endpoint: Option<&str>) -> Result<Box<dyn Store>, String> {
        if let StoreSpec::Folder(path) = self
            && std::fs::symlink_metadata(path).is_err()
        {
            return Err(format!(
                "{}: no such folder: give the folder a front was run with --retain",
                path.display()
            ));
        }
        self.open(endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_store_are_refused() {
        for good in ["job_status/abc-def", "get-forecast/0123.age", "a.b/c_d"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "../x",
            "a/../b",
            "a/.hidden",
            "a",
            "a/b/c",
            "/a/b",
            "a/",
            "a b/c",
            "a/b\n",
            "./a",
            "a\\b/c",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_store_is_a_folder_or_an_s3_bucket() {
        assert_eq!(
            StoreSpec::parse("s3://evidence/prod/eu").unwrap(),
            StoreSpec::S3 {
                bucket: "evidence".into(),
                prefix: "prod/eu".into()
            }
        );
        assert_eq!(
            StoreSpec::parse("s3://evidence").unwrap(),
            StoreSpec::S3 {
                bucket: "evidence".into(),
                prefix: String::new()
            }
        );
        assert_eq!(
            StoreSpec::parse("/var/lib/toolgate").unwrap(),
            StoreSpec::Folder("/var/lib/toolgate".into())
        );
        assert!(StoreSpec::parse("s3://").is_err());
        assert!(StoreSpec::parse("gs://bucket").is_err());
        assert!(StoreSpec::parse("").is_err());
    }
}
