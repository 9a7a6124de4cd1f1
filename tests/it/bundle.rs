//! `toolgate bundle` and `--contracts BUNDLE`, through the binary: the repository's contracts
//! as one file, written the same twice, decided with exactly as the folder decides, and refused
//! by every front once anything in it no longer holds.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bundled_mcp_contracts, copy, repo_root};

fn toolgate(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The bundle of the bundled contracts, written into `dir` under the name `toolgate bundle`
/// gives it.
fn bundle_in(dir: &Path) -> PathBuf {
    let root = repo_root().display().to_string();
    let (code, said, err) = toolgate(&["bundle", "--root", &root], dir);
    assert_eq!(code, Some(0), "{said}{err}");
    let name = said
        .strip_prefix("wrote ")
        .and_then(|rest| rest.split(':').next())
        .unwrap();
    assert!(name.starts_with("toolgate-contracts-") && name.ends_with(".tar.gz"));
    let digest = said.split("sha256:").nth(1).unwrap();
    assert!(
        digest.starts_with(&name["toolgate-contracts-".len()..][..12]),
        "{said}"
    );
    dir.join(name)
}

#[test]
fn a_bundle_decides_exactly_as_its_folder_and_is_written_the_same_twice() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = bundle_in(dir.path());
    let again = tempfile::tempdir().unwrap();
    assert_eq!(
        std::fs::read(&bundle).unwrap(),
        std::fs::read(bundle_in(again.path())).unwrap()
    );
    let shown = bundle.display().to_string();
    let (code, said, _) = toolgate(&["bundle", "--verify", &shown], dir.path());
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("intact") && said.contains("job_status v2"),
        "{said}"
    );
    // Every job_status fixture, through the folder and through the bundle: the same bytes and
    // the same exit.
    let fixtures = repo_root().join("fixtures/job_status");
    let request = fixtures.join("request.json").display().to_string();
    let mut compared = 0;
    for class in ["accepted", "near-miss", "legacy", "duplicate-key"] {
        let Ok(entries) = std::fs::read_dir(fixtures.join(class)) else {
            continue;
        };
        for entry in entries {
            let raw = entry.unwrap().path();
            if raw.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            let raw = raw.display().to_string();
            let through = |contracts: &str| {
                let (code, out, _) = toolgate(
                    &[
                        "check",
                        "job_status",
                        &raw,
                        "--request",
                        &request,
                        "--contracts",
                        contracts,
                    ],
                    dir.path(),
                );
                (code, out)
            };
            assert_eq!(
                through(&shown),
                through(&repo_root().display().to_string()),
                "{raw}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 10, "{compared} fixtures compared");
}

/// The members of a bundle, and the same members packed again with `change` made to them.
fn repacked(bundle: &Path, change: impl Fn(&str, &mut Vec<u8>)) -> Vec<u8> {
    let bytes = std::fs::read(bundle).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for member in archive.entries().unwrap() {
        let mut member = member.unwrap();
        let path = member.path().unwrap().to_string_lossy().into_owned();
        let mut content = Vec::new();
        member.read_to_end(&mut content).unwrap();
        change(&path, &mut content);
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, &path, content.as_slice())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

#[test]
fn every_front_refuses_a_bundle_changed_after_it_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = bundle_in(dir.path());
    // A contract loosened in place, the name kept.
    let tampered = dir
        .path()
        .join("tampered")
        .join(bundle.file_name().unwrap());
    std::fs::create_dir_all(tampered.parent().unwrap()).unwrap();
    std::fs::write(
        &tampered,
        repacked(&bundle, |path, content| {
            if path == "contracts/job_status/v2/contract.yaml" {
                content.extend_from_slice(b"\n# loosened\n");
            }
        }),
    )
    .unwrap();
    let shown = tampered.display().to_string();
    let (code, said, _) = toolgate(&["bundle", "--verify", &shown], dir.path());
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains(
            "contracts/job_status/v2/contract.yaml: not as toolgate-bundle.json lists it"
        ),
        "{said}"
    );
    let raw = repo_root()
        .join("fixtures/job_status/accepted/failed_run.json")
        .display()
        .to_string();
    let (code, _, err) = toolgate(
        &["check", "job_status", &raw, "--contracts", &shown],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("not as toolgate-bundle.json lists it"),
        "{err}"
    );
    let (code, _, err) = toolgate(
        &["mcp-proxy", "--contracts", &shown, "--", "true"],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&shown), "{err}");
    // The same bytes under another bundle's name: the digest it carries is not theirs.
    let renamed = dir.path().join("toolgate-contracts-000000000000.tar.gz");
    std::fs::copy(&bundle, &renamed).unwrap();
    let (code, said, _) = toolgate(
        &["bundle", "--verify", &renamed.display().to_string()],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("named for digest 000000000000"), "{said}");
}

#[test]
fn only_a_locked_repository_is_bundled() {
    let dir = tempfile::tempdir().unwrap();
    copy(
        &repo_root().join("contracts"),
        &dir.path().join("contracts"),
    );
    std::fs::write(
        dir.path().join("contracts/job_status/v2/agent.schema.json"),
        "{\"type\": \"object\"}",
    )
    .unwrap();
    let (code, said, err) = toolgate(&["bundle", "--output", "out.tar.gz"], dir.path());
    assert_eq!(code, Some(2), "{said}");
    assert!(err.contains("changed after it was published"), "{err}");
    assert!(!dir.path().join("out.tar.gz").exists());
    // The proxy serves from a bundle of its own contracts: its configuration line names it.
    let bundle = bundled_mcp_contracts(dir.path());
    let (code, _, err) = toolgate(
        &[
            "mcp-proxy",
            "--contracts",
            &bundle.display().to_string(),
            "--upstream-header",
            "Authorization=TOOLGATE_UNSET_VARIABLE",
            "--",
            "http://127.0.0.1:9/mcp",
        ],
        dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not set"), "{err}");
}
