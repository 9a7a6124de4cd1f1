//! `toolgate bundle`: a repository's contracts as one file every front loads (`--contracts
//! BUNDLE`), for a ConfigMap, a Secret, an OCI artifact or an image layer; `--verify` reads one
//! as the fronts do.

use std::io::Write;
use std::path::{Path, PathBuf};

use toolgate_repo::bundle::{self, WrittenBundle};
use toolgate_repo::{Repository, Status, UsageError, write_output};

/// `toolgate bundle`'s options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BundleOptions {
    /// The repository root, holding contracts/ (every version locked, as `toolgate test`
    /// checks).
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Where to write the bundle: a file, or a folder to write toolgate-contracts-<digest>.tar.gz
    /// into (default: the current folder). An existing file is replaced.
    #[arg(long, short, value_name = "PATH", conflicts_with = "verify")]
    output: Option<PathBuf>,
    /// Read the bundle BUNDLE as every front does (every file against its manifest, every
    /// version folder against the lock, the digest its name carries) and print its digest,
    /// instead of writing one. Exit 1 when it is refused.
    #[arg(long, value_name = "BUNDLE")]
    verify: Option<PathBuf>,
}

/// Writes (or verifies) a bundle; says what on stdout.
pub(crate) fn run(options: &BundleOptions, out: &mut impl Write) -> Result<Status, UsageError> {
    if let Some(path) = &options.verify {
        return verify(path, out);
    }
    let repository = Repository::open(&options.root)?;
    let written = bundle::write_bundle(&repository).map_err(UsageError::new)?;
    let target = match &options.output {
        Some(path) if !path.is_dir() => path.clone(),
        Some(folder) => folder.join(written.file_name()),
        None => PathBuf::from(written.file_name()),
    };
    std::fs::write(&target, &written.bytes)
        .map_err(|error| UsageError::io(&target, "write the bundle", &error))?;
    write_output(out, said(&target, &written).as_bytes())?;
    Ok(Status::Passed)
}

/// What `toolgate bundle` prints: where, the digest a deployment pins, what is in it.
fn said(target: &Path, written: &WrittenBundle) -> String {
    format!(
        "wrote {}: sha256:{} ({} files, {} bytes)\n",
        target.display(),
        written.digest.to_hex(),
        written.files,
        written.bytes.len()
    )
}

/// `--verify BUNDLE`: 0 and its digest and versions when every front would load it, 1 and why
/// when not.
fn verify(path: &Path, out: &mut impl Write) -> Result<Status, UsageError> {
    match bundle::open_bundle(path) {
        Ok((repository, bundle)) => {
            let mut versions = Vec::new();
            for tool in repository.tools()? {
                for version in repository.versions(&tool)? {
                    versions.push(format!("{tool} {}", version.name()));
                }
            }
            write_output(
                out,
                format!(
                    "{}: sha256:{}, intact: {} files, {} version(s): {}\n",
                    path.display(),
                    bundle.digest.to_hex(),
                    bundle.files,
                    versions.len(),
                    versions.join(", ")
                )
                .as_bytes(),
            )?;
            Ok(Status::Passed)
        }
        Err(error) => {
            write_output(out, format!("{error}\n").as_bytes())?;
            Ok(Status::Failed)
        }
    }
}
