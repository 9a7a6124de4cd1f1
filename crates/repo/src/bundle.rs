//! A contracts bundle: a repository's `contracts/` tree (every version folder, argument
//! contracts, `lint.yaml`, `upstream.pin.json`, the lock) as one gzip'd tar file, for where a
//! folder tree cannot go: a ConfigMap or Secret (flat keys, 1 MiB), an OCI artifact or image
//! layer (a tar is what a layer is).
//!
//! Its first member is a manifest, `toolgate-bundle.json`:
//!
//! ```text
//! {"toolgate_bundle":1,"lock":"sha256:…","files":{"contracts/contracts.lock":"sha256:…",…}}
//! ```
//!
//! naming every other member with its SHA-256, and the lock's. The bundle's **digest** is the
//! SHA-256 of the manifest's bytes: it covers every file, so two bundles with one digest hold the
//! same contracts, and `toolgate bundle` names the file by it (`toolgate-contracts-<12 hex>.tar.gz`).
//!
//! Reading one trusts nothing in it: a member that is not a regular file (a symlink, a hard
//! link, a device), a path that is absolute, has `..`, is not UTF-8 or lies outside
//! `contracts/`, a member twice, a file over 1 MiB, more than [`MAX_BUNDLE_FILES`] members or
//! [`MAX_UNPACKED_BYTES`] in all (a gzip bomb) are each refused, naming the member. Then every
//! member must be the manifest's, byte for byte, and the lock the manifest names; every version
//! folder must match its lock entry; and a file named as `toolgate bundle` names it must carry
//! its own digest. A bundle is read into memory, never unpacked to disk.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use toolgate_gate::Sha256Digest;

use crate::confine::{EntryKind, MAX_FILE_BYTES, RepoRoot};
use crate::error::LoadError;
use crate::lock::{self, LOCK_FILE};
use crate::repository::{CONTRACTS_DIR, Repository};

/// The manifest's name, the bundle's first member.
pub const BUNDLE_MANIFEST: &str = "toolgate-bundle.json";

/// The format this build writes and reads.
const FORMAT: u64 = 1;

/// The largest bundle file read or written: a ConfigMap's or Secret's cap.
pub const MAX_BUNDLE_BYTES: u64 = 1024 * 1024;

/// The most a bundle may hold once unpacked (in memory): far past any real contract set,
/// short of a gzip bomb.
pub const MAX_UNPACKED_BYTES: u64 = 64 * 1024 * 1024;

/// The most members a bundle may have.
pub const MAX_BUNDLE_FILES: usize = 20_000;

/// How deep a member may lie: `contracts/<tool>/v<N>/<file>`.
const MAX_DEPTH: usize = 4;

/// A bundle's file name prefix, before its digest's first 12 hex digits and `.tar.gz`.
const NAME_PREFIX: &str = "toolgate-contracts-";
const NAME_SUFFIX: &str = ".tar.gz";

/// A bundle read and checked: its files by path (`contracts/…`), its digest and its lock's.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The SHA-256 of its manifest: what names it.
    pub digest: Sha256Digest,
    /// The SHA-256 of its `contracts/contracts.lock`.
    pub lock: Sha256Digest,
    /// Every file, by its path in the bundle.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

/// What names a bundle that was read, once its files are the repository's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleId {
    /// The SHA-256 of its manifest: what names it.
    pub digest: Sha256Digest,
    /// The SHA-256 of its `contracts/contracts.lock`.
    pub lock: Sha256Digest,
    /// How many files it holds (besides the manifest).
    pub files: usize,
}

/// A bundle written: its bytes and what names it.
#[derive(Debug, Clone)]
pub struct WrittenBundle {
    /// The gzip'd tar.
    pub bytes: Vec<u8>,
    /// The SHA-256 of its manifest.
    pub digest: Sha256Digest,
    /// How many files it holds (besides the manifest).
    pub files: usize,
}

impl WrittenBundle {
    /// The file name `toolgate bundle` gives it: `toolgate-contracts-<12 hex>.tar.gz`.
    pub fn file_name(&self) -> String {
        format!("{NAME_PREFIX}{}{NAME_SUFFIX}", &self.digest.to_hex()[..12])
    }
}

/// Whether `path` names a bundle (a file), not a repository folder.
pub fn is_bundle(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_dir())
}

/// Writes `repository`'s `contracts/` tree as a bundle. Refuses a repository whose lock does not
/// hold every version folder as it is (what `toolgate test` checks): a bundle ships what was
/// reviewed and locked.
pub fn write_bundle(repository: &Repository) -> Result<WrittenBundle, String> {
    let root = repository.root();
    if let Some(problem) = unlocked(repository).map_err(|error| error.to_string())? {
        return Err(format!(
            "{problem}\n(a bundle ships locked contracts only: `toolgate test` passes first)"
        ));
    }
    let mut files = BTreeMap::new();
    collect(root, Path::new(CONTRACTS_DIR), 1, &mut files)?;
    let lock_path = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
    let Some(lock_bytes) = files.get(&lock_path) else {
        return Err(format!(
            "{}: no lock; lock the contracts with `toolgate test --accept` first",
            root.shown(&lock_path).display()
        ));
    };
    let manifest = manifest_of(Sha256Digest::of(lock_bytes), &files);
    let digest = Sha256Digest::of(&manifest);
    let bytes = pack(&manifest, &files).map_err(|error| format!("cannot pack: {error}"))?;
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(format!(
            "the bundle would be {} bytes, over the {MAX_BUNDLE_BYTES} a ConfigMap, a Secret and every front take; split the tools among repositories (one per upstream)",
            bytes.len()
        ));
    }
    Ok(WrittenBundle {
        bytes,
        digest,
        files: files.len(),
    })
}

/// Every regular file under `folder`, at most [`MAX_DEPTH`] deep; anything else is an error.
fn collect(
    root: &RepoRoot,
    folder: &Path,
    depth: usize,
    files: &mut BTreeMap<PathBuf, Vec<u8>>,
) -> Result<(), String> {
    for entry in root.list(folder)? {
        let shown = || root.shown(&entry.path).display().to_string();
        if !entry.name_is_utf8 {
            return Err(format!("{}: a name that is not UTF-8; rename it", shown()));
        }
        match entry.kind? {
            EntryKind::File if depth < MAX_DEPTH + 1 => {
                let bytes = root.read_capped(&entry.path, MAX_FILE_BYTES)?;
                if bytes.len() as u64 > MAX_FILE_BYTES {
                    return Err(format!(
                        "{}: larger than {MAX_FILE_BYTES} bytes; no contract file is this large",
                        shown()
                    ));
                }
                files.insert(entry.path.clone(), bytes);
            }
            EntryKind::Dir if depth < MAX_DEPTH - 1 => {
                collect(root, &entry.path, depth + 1, files)?
            }
            EntryKind::Dir | EntryKind::File => {
                return Err(format!(
                    "{}: deeper than contracts/<tool>/v<N>/<file>; a contract folder holds files only",
                    shown()
                ));
            }
            EntryKind::Missing => {}
            EntryKind::Other => {
                return Err(format!(
                    "{}: not a regular file or folder (a FIFO, socket or device); remove it",
                    shown()
                ));
            }
        }
        if files.len() > MAX_BUNDLE_FILES {
            return Err(format!(
                "more than {MAX_BUNDLE_FILES} files under contracts/; split the tools among repositories"
            ));
        }
    }
    Ok(())
}

/// A front's contracts: the bundle `path` names (a file), or the repository folder.
pub fn open_contracts(path: &Path) -> Result<Repository, LoadError> {
    if is_bundle(path) {
        return open_bundle(path).map(|(repository, _)| repository);
    }
    Repository::open(path)
}

/// Opens the bundle at `path`: the repository it holds (every version folder checked against
/// the lock), and what names the bundle (what a front reports it serves).
pub fn open_bundle(path: &Path) -> Result<(Repository, BundleId), LoadError> {
    let bundle = read_bundle(path).map_err(LoadError::Bundle)?;
    let id = BundleId {
        digest: bundle.digest,
        lock: bundle.lock,
        files: bundle.files.len(),
    };
    let repository = Repository::from_root(RepoRoot::in_bundle(path, bundle.files, bundle.digest));
    if let Some(problem) = unlocked(&repository)? {
        return Err(LoadError::Bundle(format!(
            "{problem} (a bundle ships only contracts its lock holds as they are)"
        )));
    }
    Ok((repository, id))
}

/// The first way `repository`'s lock does not hold its version folders as they are, if any.
fn unlocked(repository: &Repository) -> Result<Option<String>, LoadError> {
    let mut versions = Vec::new();
    for tool in repository.tools()? {
        for version in repository.versions(&tool)? {
            versions.push((tool.clone(), version));
        }
    }
    let (_, problems) = lock::check(repository.root(), &versions, false, &BTreeMap::new(), true);
    Ok(problems.into_iter().next().map(|problem| problem.message))
}

/// The manifest's bytes: one JSON object, members in a fixed order, files sorted by path.
fn manifest_of(lock: Sha256Digest, files: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<u8> {
    let listed: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .map(|(path, bytes)| {
            (
                path_text(path),
                serde_json::Value::String(prefixed(&Sha256Digest::of(bytes))),
            )
        })
        .collect();
    let mut manifest = format!(
        "{{\"toolgate_bundle\":{FORMAT},\"lock\":\"{}\",\"files\":",
        prefixed(&lock)
    )
    .into_bytes();
    manifest.extend_from_slice(serde_json::Value::Object(listed).to_string().as_bytes());
    manifest.extend_from_slice(b"}\n");
    manifest
}

/// A path as the bundle spells it: `/`-separated, whatever the platform.
fn path_text(path: &Path) -> String {
    path.components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The tar, gzip'd: the manifest first, then every file in path order, each with the same
/// owner, mode and time, so one tree always packs to the same bytes.
fn pack(manifest: &[u8], files: &BTreeMap<PathBuf, Vec<u8>>) -> io::Result<Vec<u8>> {
    let encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    let mut builder = tar::Builder::new(encoder);
    builder.mode(tar::HeaderMode::Deterministic);
    let members = std::iter::once((PathBuf::from(BUNDLE_MANIFEST), manifest)).chain(
        files
            .iter()
            .map(|(path, bytes)| (path.clone(), bytes.as_slice())),
    );
    for (path, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_size(bytes.len() as u64);
        builder.append_data(&mut header, path_text(&path), bytes)?;
    }
    let encoder = builder.into_inner()?;
    let mut bytes = encoder.finish()?;
    bytes.flush()?;
    Ok(bytes)
}

/// Reads and checks the bundle at `path` (see the module's documentation for what is refused).
/// Every message names the bundle, and the member where one is to blame.
pub fn read_bundle(path: &Path) -> Result<Bundle, String> {
    let shown = path.display();
    let metadata = std::fs::metadata(path).map_err(|error| format!("{shown}: {error}"))?;
    if !metadata.is_file() {
        return Err(format!(
            "{shown}: not a regular file; a bundle is the file `toolgate bundle` writes"
        ));
    }
    let file = std::fs::File::open(path).map_err(|error| format!("{shown}: {error}"))?;
    let mut packed = Vec::new();
    file.take(MAX_BUNDLE_BYTES + 1)
        .read_to_end(&mut packed)
        .map_err(|error| format!("{shown}: {error}"))?;
    if packed.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(format!(
            "{shown}: larger than {MAX_BUNDLE_BYTES} bytes; no bundle `toolgate bundle` writes is this large"
        ));
    }
    let (manifest, files) = unpack(&packed).map_err(|why| format!("{shown}: {why}"))?;
    let bundle = checked(&manifest, files).map_err(|why| format!("{shown}: {why}"))?;
    if let Some(named) = named_digest(path)
        && !bundle.digest.to_hex().starts_with(&named)
    {
        return Err(format!(
            "{shown}: named for digest {named}… but its digest is {}: the file was changed or swapped after `toolgate bundle` wrote it",
            prefixed(&bundle.digest)
        ));
    }
    Ok(bundle)
}

/// The digest prefix a file named as `toolgate bundle` names it carries, if it is so named.
fn named_digest(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_prefix(NAME_PREFIX)?.strip_suffix(NAME_SUFFIX)?;
    (hex.len() >= 12 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

/// A bundle's files by path.
type Files = BTreeMap<PathBuf, Vec<u8>>;

/// The manifest and every other member, each checked for what it is and where it lies.
fn unpack(packed: &[u8]) -> Result<(Vec<u8>, Files), String> {
    let unzipped = flate2::read::GzDecoder::new(packed).take(MAX_UNPACKED_BYTES + 1);
    let mut archive = tar::Archive::new(unzipped);
    let mut manifest = None;
    let mut files = BTreeMap::new();
    let mut total = 0u64;
    let members = archive
        .entries()
        .map_err(|error| format!("not a gzip'd tar: {error}"))?;
    for (index, member) in members.enumerate() {
        let mut member = member.map_err(|error| format!("not a gzip'd tar: {error}"))?;
        let path = member
            .path()
            .map_err(|error| format!("member {}: {error}", index + 1))?
            .into_owned();
        let named = escaped(&path.to_string_lossy());
        let kind = member.header().entry_type();
        if kind == tar::EntryType::Directory {
            continue;
        }
        if kind != tar::EntryType::Regular && kind != tar::EntryType::Continuous {
            return Err(format!(
                "{named}: a {kind:?} member; a bundle holds regular files only, never links or devices"
            ));
        }
        let inside = path
            .components()
            .all(|part| matches!(part, Component::Normal(name) if name.to_str().is_some()));
        let depth = path.components().count();
        let placed = path.as_os_str() == BUNDLE_MANIFEST
            || (path.starts_with(CONTRACTS_DIR) && (2..=MAX_DEPTH).contains(&depth));
        if !inside || !placed {
            return Err(format!(
                "{named}: outside contracts/ (absolute, with `..`, not UTF-8, or deeper than contracts/<tool>/v<N>/<file>); a bundle holds the contracts tree only"
            ));
        }
        let size = member.header().size().unwrap_or(u64::MAX);
        if size > MAX_FILE_BYTES {
            return Err(format!(
                "{named}: larger than {MAX_FILE_BYTES} bytes; no contract file is this large"
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        member
            .read_to_end(&mut bytes)
            .map_err(|error| format!("{named}: {error}"))?;
        total += bytes.len() as u64;
        if total > MAX_UNPACKED_BYTES || files.len() >= MAX_BUNDLE_FILES {
            return Err(format!(
                "more than {MAX_UNPACKED_BYTES} bytes or {MAX_BUNDLE_FILES} files unpacked; no bundle `toolgate bundle` writes is this large"
            ));
        }
        if path.as_os_str() == BUNDLE_MANIFEST {
            if index != 0 || manifest.is_some() {
                return Err(format!("{named}: not the first member, or twice"));
            }
            manifest = Some(bytes);
        } else if files.insert(path, bytes).is_some() {
            return Err(format!("{named}: twice; a bundle holds each file once"));
        }
    }
    let manifest = manifest.ok_or_else(|| {
        format!("no {BUNDLE_MANIFEST} first; this is not a bundle `toolgate bundle` wrote")
    })?;
    Ok((manifest, files))
}

/// The manifest read strictly, and every member held to it, and the lock to it.
fn checked(manifest: &[u8], files: BTreeMap<PathBuf, Vec<u8>>) -> Result<Bundle, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Manifest {
        toolgate_bundle: u64,
        lock: String,
        files: BTreeMap<String, String>,
    }
    let read: Manifest = toolgate_gate::internals::parse_strict_json(manifest, 8)
        .map_err(|why| format!("{BUNDLE_MANIFEST}: {why}"))
        .and_then(|value| {
            serde_json::from_value(value).map_err(|error| format!("{BUNDLE_MANIFEST}: {error}"))
        })?;
    if read.toolgate_bundle != FORMAT {
        return Err(format!(
            "{BUNDLE_MANIFEST}: format {}, this build reads format {FORMAT}; bundle again with this build",
            read.toolgate_bundle
        ));
    }
    for (path, bytes) in &files {
        let listed = read.files.get(&path_text(path));
        let actual = prefixed(&Sha256Digest::of(bytes));
        if listed != Some(&actual) {
            return Err(format!(
                "{}: not as {BUNDLE_MANIFEST} lists it (changed, or added after the bundle was written)",
                escaped(&path_text(path))
            ));
        }
    }
    if let Some(missing) = read
        .files
        .keys()
        .find(|listed| !files.contains_key(Path::new(listed.as_str())))
    {
        return Err(format!(
            "{}: listed in {BUNDLE_MANIFEST} but not in the bundle",
            escaped(missing)
        ));
    }
    let lock_path = Path::new(CONTRACTS_DIR).join(LOCK_FILE);
    let lock = Sha256Digest::of(files.get(&lock_path).ok_or_else(|| {
        format!(
            "no {}; a bundle ships locked contracts",
            path_text(&lock_path)
        )
    })?);
    if read.lock != prefixed(&lock) {
        return Err(format!(
            "{}: its digest is {}, {BUNDLE_MANIFEST} names {}",
            path_text(&lock_path),
            prefixed(&lock),
            escaped(&read.lock)
        ));
    }
    Ok(Bundle {
        digest: Sha256Digest::of(manifest),
        lock,
        files,
    })
}

/// `sha256:<hex>`, as the manifest and the lock write a digest.
fn prefixed(digest: &Sha256Digest) -> String {
    format!("sha256:{}", digest.to_hex())
}

/// A name from the bundle as it may be printed: control characters escaped, cut at 200.
fn escaped(text: &str) -> String {
    let mut shown: String = text
        .chars()
        .take(200)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > 200 {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace's own repository: the bundled contracts.
    fn bundled() -> Repository {
        Repository::open(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")).unwrap()
    }

    /// A member as a test packs it: its path written into the header as is (so `..`, absolute
    /// and other paths tar's builder refuses can be made), its type and bytes.
    struct Member<'a> {
        path: &'a str,
        kind: tar::EntryType,
        bytes: Vec<u8>,
    }

    fn file<'a>(path: &'a str, bytes: &[u8]) -> Member<'a> {
        Member {
            path,
            kind: tar::EntryType::Regular,
            bytes: bytes.to_vec(),
        }
    }

    fn packed(members: &[Member<'_>]) -> Vec<u8> {
        let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut builder = tar::Builder::new(encoder);
        for member in members {
            let mut header = tar::Header::new_gnu();
            let name = &mut header.as_gnu_mut().unwrap().name;
            name[..member.path.len()].copy_from_slice(member.path.as_bytes());
            header.set_entry_type(member.kind);
            header.set_mode(0o644);
            header.set_size(member.bytes.len() as u64);
            if member.kind.is_symlink() || member.kind.is_hard_link() {
                header.set_link_name("/etc/passwd").unwrap();
            }
            header.set_cksum();
            builder.append(&header, member.bytes.as_slice()).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    /// The members of a bundle, to be changed and packed again.
    fn members_of(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
        archive
            .entries()
            .unwrap()
            .map(|member| {
                let mut member = member.unwrap();
                let path = member.path().unwrap().to_string_lossy().into_owned();
                let mut bytes = Vec::new();
                member.read_to_end(&mut bytes).unwrap();
                (path, bytes)
            })
            .collect()
    }

    fn repacked(members: &[(String, Vec<u8>)]) -> Vec<u8> {
        let members: Vec<_> = members
            .iter()
            .map(|(path, bytes)| file(path, bytes))
            .collect();
        packed(&members)
    }

    fn read_bytes(name: &str, bytes: &[u8]) -> Result<Bundle, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        read_bundle(&path)
    }

    fn opened(name: &str, bytes: &[u8]) -> Result<Repository, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        open_contracts(&path).map_err(|error| error.to_string())
    }

    #[test]
    fn a_bundle_holds_the_repository_and_packs_to_the_same_bytes() {
        let written = write_bundle(&bundled()).unwrap();
        assert_eq!(written.bytes, write_bundle(&bundled()).unwrap().bytes);
        let repository = opened(&written.file_name(), &written.bytes).unwrap();
        assert_eq!(repository.tools().unwrap(), bundled().tools().unwrap());
        let contract = repository.load("job_status", Some("v2")).unwrap();
        assert_eq!(
            contract.digest(),
            bundled().load("job_status", Some("v2")).unwrap().digest()
        );
        // Read-only: `--accept` and friends say so.
        let error = repository
            .root()
            .write(Path::new("contracts/x"), b"")
            .unwrap_err();
        assert!(error.to_string().contains("read-only"), "{error}");
    }

    #[test]
    fn a_changed_bundle_is_refused_at_the_first_thing_that_no_longer_holds() {
        let written = write_bundle(&bundled()).unwrap();
        let members = members_of(&written.bytes);
        let contract = members
            .iter()
            .position(|(path, _)| path == "contracts/job_status/v1/contract.yaml")
            .unwrap();
        // A contract edited, the manifest left: the manifest no longer lists it.
        let mut edited = members.clone();
        edited[contract].1.extend_from_slice(b"\n# edited\n");
        let said = read_bytes("c.tar.gz", &repacked(&edited)).unwrap_err();
        assert!(
            said.contains("contracts/job_status/v1/contract.yaml: not as"),
            "{said}"
        );
        // The manifest rewritten to match: the lock no longer holds the version.
        let mut manifest: serde_json::Value = serde_json::from_slice(&edited[0].1).unwrap();
        manifest["files"]["contracts/job_status/v1/contract.yaml"] =
            prefixed(&Sha256Digest::of(&edited[contract].1)).into();
        edited[0].1 = manifest.to_string().into_bytes();
        let said = opened("c.tar.gz", &repacked(&edited)).unwrap_err();
        assert!(said.contains("changed after it was published"), "{said}");
        // The lock rewritten too (and the manifest's lock digest): what is left is the name,
        // which carries the digest of what `toolgate bundle` wrote.
        let lock = edited
            .iter()
            .position(|(path, _)| path == "contracts/contracts.lock")
            .unwrap();
        edited[lock].1.extend_from_slice(b"# edited\n");
        manifest["files"]["contracts/contracts.lock"] =
            prefixed(&Sha256Digest::of(&edited[lock].1)).into();
        manifest["lock"] = prefixed(&Sha256Digest::of(&edited[lock].1)).into();
        edited[0].1 = manifest.to_string().into_bytes();
        let forged = repacked(&edited);
        let said = opened(&written.file_name(), &forged).unwrap_err();
        assert!(said.contains("named for digest"), "{said}");
        // A member added that the manifest does not list, and one it lists taken away.
        let mut added = members.clone();
        added.push((
            "contracts/job_status/v1/extra.json".to_owned(),
            b"{}".to_vec(),
        ));
        let said = read_bytes("c.tar.gz", &repacked(&added)).unwrap_err();
        assert!(said.contains("extra.json: not as"), "{said}");
        let mut removed = members.clone();
        removed.remove(contract);
        let said = read_bytes("c.tar.gz", &repacked(&removed)).unwrap_err();
        assert!(
            said.contains("listed in toolgate-bundle.json but not"),
            "{said}"
        );
    }

    #[test]
    fn hostile_members_are_refused_by_name() {
        let manifest = br#"{"toolgate_bundle":1,"lock":"sha256:00","files":{}}"#;
        let cases: Vec<(Vec<Member<'_>>, &str)> = vec![
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    Member {
                        path: "contracts/x/v1/schema.json",
                        kind: tar::EntryType::Symlink,
                        bytes: Vec::new(),
                    },
                ],
                "contracts/x/v1/schema.json: a Symlink member",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    Member {
                        path: "contracts/x/v1/schema.json",
                        kind: tar::EntryType::Link,
                        bytes: Vec::new(),
                    },
                ],
                "a Link member",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    Member {
                        path: "contracts/x/v1/fifo",
                        kind: tar::EntryType::Fifo,
                        bytes: Vec::new(),
                    },
                ],
                "a Fifo member",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file("contracts/../../etc/x", b""),
                ],
                "contracts/../../etc/x: outside contracts/",
            ),
            (
                vec![file(BUNDLE_MANIFEST, manifest), file("/etc/cron.d/x", b"")],
                "outside contracts/",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file("fixtures/x/a.json", b""),
                ],
                "fixtures/x/a.json: outside contracts/",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file("contracts/x/v1/a/b.json", b""),
                ],
                "deeper than",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file("contracts/x/v1/a.json", b"1"),
                    file("contracts/x/v1/a.json", b"2"),
                ],
                "a.json: twice",
            ),
            (
                vec![
                    file("contracts/x/v1/a.json", b"1"),
                    file(BUNDLE_MANIFEST, manifest),
                ],
                "not the first member",
            ),
            (
                vec![file("contracts/x/v1/a.json", b"1")],
                "no toolgate-bundle.json",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file(
                        "contracts/x/v1/big.json",
                        &vec![b' '; MAX_FILE_BYTES as usize + 1],
                    ),
                ],
                "big.json: larger than",
            ),
            (
                vec![
                    file(BUNDLE_MANIFEST, manifest),
                    file("contracts/x/v1/\u{1b}[31mred", b""),
                ],
                "contracts/x/v1/\\u{1b}[31mred: not as",
            ),
        ];
        for (members, wanted) in cases {
            let said = read_bytes("b.tar.gz", &packed(&members)).unwrap_err();
            assert!(said.contains(wanted), "wanted {wanted:?}: {said}");
        }
        let said = read_bytes("b.tar.gz", b"not gzip at all").unwrap_err();
        assert!(said.contains("not a gzip'd tar"), "{said}");
        let said = read_bytes("b.tar.gz", &vec![0; MAX_BUNDLE_BYTES as usize + 1]).unwrap_err();
        assert!(said.contains("larger than"), "{said}");
    }
}
