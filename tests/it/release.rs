//! Release assets as the release workflow packs them (`.github/scripts/package-release`) and as
//! the GitHub Action installs them (`.github/scripts/install-toolgate`): checked against their
//! checksum before anything is unpacked.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{repo_root, run};

/// Whether curl, which `install-toolgate` downloads with, is here: `cargo test` runs on a machine
/// with Rust alone, so without it these tests say they did not run (TOOLGATE_REQUIRE_CURL, set
/// by `.ci/run`, makes that a failure).
pub(crate) fn curl_available(test: &str) -> bool {
    if Command::new("curl").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("TOOLGATE_REQUIRE_CURL").is_none(),
        "curl is required (TOOLGATE_REQUIRE_CURL) but not found"
    );
    eprintln!("{test} did not run: no `curl` on PATH");
    false
}

/// The platform `install-toolgate` picks on this machine.
fn this_target() -> String {
    let arch = std::env::consts::ARCH;
    match std::env::consts::OS {
        "macos" => format!("{arch}-apple-darwin"),
        "windows" => format!("{arch}-pc-windows-msvc"),
        _ => format!("{arch}-unknown-linux-musl"),
    }
}

/// A folder laid out as GitHub serves release assets (`vX.Y.Z/ASSET`), holding `binary` packed
/// as this checkout's release for this machine, with its `.sha256`.
pub(crate) fn release_of(binary: &Path) -> tempfile::TempDir {
    let releases = tempfile::tempdir().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let mut pack = Command::new(repo_root().join(".github/scripts/package-release"));
    pack.args([version, &this_target()])
        .arg(binary)
        .arg(releases.path().join(format!("v{version}")));
    let packed = run(pack, b"");
    assert_eq!(packed.code, 0, "{}", packed.stderr);
    releases
}

/// `install-toolgate` with `settings`, from `releases` into `into`.
fn install(releases: &Path, into: &Path, settings: &[(&str, &str)]) -> crate::common::Run {
    let mut command = Command::new(repo_root().join(".github/scripts/install-toolgate"));
    command
        .env(
            "TOOLGATE_RELEASES",
            format!("file://{}", releases.display()),
        )
        .env("TOOLGATE_INSTALL_DIR", into)
        .env_remove("TOOLGATE_VERSION")
        .env_remove("TOOLGATE_SHA256")
        .env_remove("GITHUB_PATH");
    for (name, value) in settings {
        command.env(name, value);
    }
    run(command, b"")
}

fn asset(releases: &tempfile::TempDir) -> std::path::PathBuf {
    let releases = releases.path();
    let version = env!("CARGO_PKG_VERSION");
    releases.join(format!(
        "v{version}/toolgate-{version}-{}.tar.gz",
        this_target()
    ))
}

#[cfg(unix)]
#[test]
fn a_release_asset_installs_and_runs_and_its_checksum_can_be_pinned() {
    if !curl_available("the release install test") {
        return;
    }
    let releases = release_of(Path::new(env!("CARGO_BIN_EXE_toolgate")));
    let published = fs::read_to_string(asset(&releases).with_extension("gz.sha256")).unwrap();
    let sum = published.split_whitespace().next().unwrap().to_owned();
    assert_eq!(sum.len(), 64, "{published}");

    let into = tempfile::tempdir().unwrap();
    let installed = install(releases.path(), into.path(), &[]);
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    assert!(
        installed
            .stderr
            .contains(&format!("pin it with TOOLGATE_SHA256={sum}")),
        "{}",
        installed.stderr
    );
    let bin = into.path().join("bin");
    assert_eq!(installed.stdout.trim(), bin.display().to_string());
    for file in [
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "man/toolgate.1",
    ] {
        assert!(into.path().join(file).is_file(), "{file}");
    }
    let mut version = Command::new(bin.join("toolgate"));
    version.arg("--version");
    let version = run(version, b"");
    assert!(
        version
            .stdout
            .starts_with(&format!("toolgate {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        version.stdout
    );

    // The sum pinned, in either case, installs; the version given with or without its `v`.
    let again = tempfile::tempdir().unwrap();
    let upper = sum.to_uppercase();
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let pinned = install(
        releases.path(),
        again.path(),
        &[("TOOLGATE_SHA256", &upper), ("TOOLGATE_VERSION", &version)],
    );
    assert_eq!(pinned.code, 0, "{}", pinned.stderr);
    assert!(!pinned.stderr.contains("pin it"), "{}", pinned.stderr);
}

#[cfg(unix)]
#[test]
fn a_replaced_or_damaged_asset_is_not_installed() {
    if !curl_available("the release refusal test") {
        return;
    }
    let releases = release_of(Path::new(env!("CARGO_BIN_EXE_toolgate")));
    let published = fs::read_to_string(asset(&releases).with_extension("gz.sha256")).unwrap();
    let sum = published.split_whitespace().next().unwrap().to_owned();

    // Damaged in transit: the published checksum no longer matches.
    let original = fs::read(asset(&releases)).unwrap();
    let mut damaged = original.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xff;
    fs::write(asset(&releases), &damaged).unwrap();
    let into = tempfile::tempdir().unwrap();
    let refused = install(releases.path(), &into.path().join("t"), &[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("published beside it: it was not installed"),
        "{}",
        refused.stderr
    );
    assert!(!into.path().join("t").exists(), "nothing is unpacked");

    // Replaced, with a checksum to match: the pinned sum still refuses it.
    let mut replace = Command::new(repo_root().join(".github/scripts/package-release"));
    let version = env!("CARGO_PKG_VERSION");
    replace
        .args([version, &this_target(), "/bin/sh"])
        .arg(releases.path().join(format!("v{version}")));
    assert_eq!(run(replace, b"").code, 0);
    let replaced = install(
        releases.path(),
        &into.path().join("t"),
        &[("TOOLGATE_SHA256", &sum)],
    );
    assert_eq!(replaced.code, 1, "{}", replaced.stderr);
    assert!(
        replaced
            .stderr
            .contains(&format!("not the pinned {sum}: it was not installed")),
        "{}",
        replaced.stderr
    );
    assert!(!into.path().join("t").exists(), "nothing is unpacked");

    // Settings that are not a version, a checksum or a URL this script fetches from.
    for (setting, value, says) in [
        (
            "TOOLGATE_VERSION",
            "1.0; rm -rf /",
            "must be a release version",
        ),
        ("TOOLGATE_VERSION", "1.0\u{1b}[2J", "not '1.0?[2J'"),
        ("TOOLGATE_VERSION", "9.9.9", "could not download"),
        ("TOOLGATE_SHA256", "abc", "must be 64 hexadecimal digits"),
        ("TOOLGATE_TARGET", "../../etc", "is not a target triple"),
    ] {
        let outcome = install(releases.path(), &into.path().join("t"), &[(setting, value)]);
        let expected = if says == "could not download" { 1 } else { 2 };
        assert_eq!(
            outcome.code, expected,
            "{setting}={value}: {}",
            outcome.stderr
        );
        assert!(outcome.stderr.contains(says), "{}", outcome.stderr);
        assert!(
            !outcome.stderr.contains('\u{1b}'),
            "escaped: {}",
            outcome.stderr
        );
    }
    let mut plain = Command::new(repo_root().join(".github/scripts/install-toolgate"));
    plain
        .env("TOOLGATE_RELEASES", "http://example.invalid/releases")
        .env_remove("TOOLGATE_VERSION");
    let plain = run(plain, b"");
    assert_eq!(plain.code, 2);
    assert!(
        plain.stderr.contains("https:// or file://"),
        "{}",
        plain.stderr
    );
}

/// The `key = value` lines of one `[section]` of a TOML file.
fn toml_section(text: &str, section: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| line.trim() != format!("[{section}]"))
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| line.contains('=') && !line.trim_start().starts_with('#'))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn the_release_builds_its_binaries_stripped() {
    let workflow = fs::read_to_string(repo_root().join(".github/workflows/release.yml")).unwrap();
    let build = workflow
        .lines()
        .find(|line| line.contains("cargo build") && line.contains("--bin toolgate"))
        .expect("the release workflow builds the binary");
    let profile = build
        .split_whitespace()
        .skip_while(|word| *word != "--profile")
        .nth(1)
        .expect("the release builds with a named profile");
    let cargo = fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let settings = toml_section(&cargo, &format!("profile.{profile}"));
    for wanted in ["strip = true", "debug = \"none\""] {
        assert!(
            settings.iter().any(|line| line == wanted),
            "profile.{profile} lacks `{wanted}`: {settings:?}"
        );
    }
}
