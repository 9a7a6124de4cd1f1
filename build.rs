//! Records the commit the binary is built from, for `toolgate --version`: a bug report or a
//! pinned CI install then says exactly which toolgate it ran. Outside a git checkout (a source
//! archive, a registry) the version is printed without a commit; the build never fails for it.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let long = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => format!("{version} (commit {commit})"),
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=TOOLGATE_VERSION={long}");
    // Rebuild when the checkout moves to another commit: HEAD, the branch it names, packed refs.
    println!("cargo:rerun-if-changed=build.rs");
    let head = Path::new(".git/HEAD");
    if head.exists() {
        println!("cargo:rerun-if-changed=.git/HEAD");
        if let Some(branch) = std::fs::read_to_string(head).ok().and_then(|text| {
            text.strip_prefix("ref: ")
                .map(|name| name.trim().to_owned())
        }) {
            println!("cargo:rerun-if-changed=.git/{branch}");
        }
        if Path::new(".git/packed-refs").exists() {
            println!("cargo:rerun-if-changed=.git/packed-refs");
        }
    }
}

/// `git args…` in the package's folder, trimmed; `None` when git or the checkout is missing.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !text.is_empty()).then_some(text)
}
