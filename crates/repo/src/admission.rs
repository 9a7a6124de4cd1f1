//! Loading what a fixture runs under (its request file, adjusted by its sidecar, and its raw
//! bytes) and handing it to the gate's public API, exactly as production does; and the
//! `toolgate check` command line that reproduces any such decision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use toolgate_gate::{Contract, Decision, Request, Response};

use crate::case_result::{Problem, ProblemKind};
use crate::confine::{EntryKind, RepoRoot};
use crate::fixture::Fixture;
use crate::request::{RequestSpec, parse_request_file, parse_time};
use crate::sidecar::Sidecar;

/// The request files fixtures name, each read and checked once per run.
#[derive(Debug, Default)]
pub struct RequestFiles(BTreeMap<PathBuf, Result<RequestSpec, String>>);

impl RequestFiles {
    /// Reads every request file `fixtures` name, once each; a file that cannot be read is
    /// remembered with why, for each fixture that names it to report.
    pub fn load(root: &RepoRoot, fixtures: &[Arc<Fixture>]) -> RequestFiles {
        let mut files = BTreeMap::new();
        for fixture in fixtures {
            let path = fixture.request_file();
            files.entry(path.clone()).or_insert_with(|| {
                if root.kind(&path) == Ok(EntryKind::Missing) {
                    return Err(format!(
                        "{}: no such request file (a sidecar's `request:` names it, or it is the tool's default request.json)",
                        root.shown(&path).display()
                    ));
                }
                let text = root.read_text(&path)?;
                parse_request_file(text.as_bytes(), &root.shown(&path))
                    .map_err(|error| error.to_string())
            });
        }
        RequestFiles(files)
    }

    /// A copy of the request in `path` (relative to the root), for one fixture to adjust.
    fn get(&self, path: &Path) -> Result<RequestSpec, String> {
        match self.0.get(path) {
            Some(loaded) => loaded.clone(),
            None => Err(format!("{}: not loaded", path.display())),
        }
    }
}

/// Everything a fixture runs under: its raw bytes, its request (file and sidecar overrides), the
/// decision time and the upstream status.
#[derive(Debug)]
pub struct Prepared {
    /// The raw bytes, read at most one byte past the contract's limit.
    pub raw: Vec<u8>,
    /// The request file with the sidecar's overrides.
    pub request: RequestSpec,
    /// The same request, as the gate takes it.
    pub gate_request: Request,
    /// The decision time the fixture pins.
    pub now: SystemTime,
}

impl Prepared {
    /// The gate's decision on `bytes` under this fixture's request: the fixture's own raw bytes,
    /// or a mutant of them.
    pub fn admit(&self, contract: &Contract, bytes: &[u8]) -> Decision {
        let mut response = Response::body(bytes);
        if let Some(status) = self.request.upstream_status {
            response = response.with_status(status);
        }
        contract.admit_response(response, &self.gate_request, self.now)
    }
}

/// A fixture's raw bytes, request and the gate's decision on them.
pub struct Admitted {
    /// The raw bytes.
    pub raw: Vec<u8>,
    /// The request they were decided under.
    pub request: RequestSpec,
    /// The gate's decision.
    pub decision: Decision,
}

/// Loads a fixture's request and raw bytes (at most one byte past the contract's limit, as
/// `toolgate check` reads a response).
pub fn prepare(
    root: &RepoRoot,
    requests: &RequestFiles,
    fixture: &Fixture,
    spec: &Sidecar,
    contract: &Contract,
) -> Result<Prepared, Problem> {
    let load = |message: String| Problem::new(ProblemKind::Load, message);
    let mut request = requests.get(&fixture.request_file()).map_err(load)?;
    request.override_with(
        spec.request_id.as_deref(),
        spec.now.as_deref(),
        spec.upstream_status,
    );
    if request.request_id.is_empty() {
        return Err(load(format!(
            "{}: no request_id (in the request file or the sidecar)",
            fixture.sidecar.display()
        )));
    }
    let now = match &request.now {
        Some(text) => parse_time(text)
            .map_err(|error| load(format!("{}: `now`: {error}", fixture.sidecar.display())))?,
        None => {
            return Err(load(format!(
                "{}: no `now`: a fixture must pin its decision time, in its request file or sidecar",
                fixture.sidecar.display()
            )));
        }
    };
    let raw = root
        .read_capped(&fixture.raw, contract.max_bytes() as u64)
        .map_err(|error| load(error.to_string()))?;
    let gate_request = request.to_request();
    Ok(Prepared {
        raw,
        request,
        gate_request,
        now,
    })
}

/// Loads a fixture's request and raw bytes and runs them through the gate's public API.
pub fn admit_fixture(
    root: &RepoRoot,
    requests: &RequestFiles,
    fixture: &Fixture,
    spec: &Sidecar,
    contract: &Contract,
) -> Result<Admitted, Problem> {
    let prepared = prepare(root, requests, fixture, spec, contract)?;
    let decision = prepared.admit(contract, &prepared.raw);
    Ok(Admitted {
        raw: prepared.raw,
        request: prepared.request,
        decision,
    })
}

/// The `toolgate check` command that decides `raw` (the fixture's own bytes, or a mutant of them)
/// under the fixture's request, against `version`.
pub fn reproduce_command(fixture: &Fixture, spec: &Sidecar, version: &str, raw: &Path) -> String {
    let raw = raw.to_string_lossy();
    let request = fixture.request_file();
    let request = request.to_string_lossy();
    let mut words: Vec<&str> = vec![
        "toolgate",
        "check",
        &fixture.tool,
        &raw,
        "--request",
        &request,
        "--contract-version",
        version,
    ];
    let status = spec.upstream_status.map(|status| status.to_string());
    for (flag, value) in [
        ("--request-id", spec.request_id.as_deref()),
        ("--now", spec.now.as_deref()),
        ("--upstream-status", status.as_deref()),
    ] {
        if let Some(value) = value {
            words.extend([flag, value]);
        }
    }
    words.push("--explain");
    shell_command(&words)
}

/// Words joined into one POSIX shell command line, each quoted where the shell would otherwise
/// read it as more than itself: pasting the line runs `toolgate check` and nothing else.
pub fn shell_command(words: &[&str]) -> String {
    words
        .iter()
        .map(|word| {
            shlex::try_quote(word).map_or_else(
                |_| "'<an argument holding a NUL byte, which no shell can pass>'".into(),
                |quoted| quoted.into_owned(),
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduce_lines_quote_what_a_shell_would_interpret() {
        assert_eq!(
            shell_command(&[
                "toolgate",
                "check",
                "t",
                "fixtures/t/accepted/a.json",
                "--now",
                "2026-11-29T12:00:00+02:00"
            ]),
            "toolgate check t fixtures/t/accepted/a.json --now 2026-11-29T12:00:00+02:00"
        );
        assert_eq!(
            shell_command(&[
                "toolgate",
                "check",
                "t",
                "a.json;rm -rf ~",
                "--request-id",
                "$(id)`x`"
            ]),
            "toolgate check t 'a.json;rm -rf ~' --request-id '$(id)`x`'"
        );
        assert_eq!(shell_command(&["it's"]), r#""it's""#);
        assert!(shell_command(&["a\0b"]).starts_with("'<an argument"));
    }
}
