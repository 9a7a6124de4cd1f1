//! Loading what a fixture runs under (its request file, adjusted by its sidecar, and its raw
//! bytes) and handing it to the gate's public API, exactly as production does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use toolgate_gate::{Contract, Decision, Request, Response};

use crate::confine::{Kind, RepoRoot};
use crate::fixture::Fixture;
use crate::request::{RequestSpec, parse_request_file, parse_time};
use crate::sidecar::Sidecar;
use crate::verdict::{Problem, ProblemKind};

/// The request files fixtures name, each read and checked once per run.
#[derive(Debug, Default)]
pub struct RequestFiles(BTreeMap<PathBuf, Result<RequestSpec, String>>);

impl RequestFiles {
    pub(crate) fn load(root: &RepoRoot, fixtures: &[Arc<Fixture>]) -> RequestFiles {
        let mut files = BTreeMap::new();
        for fixture in fixtures {
            let path = fixture.request_file();
            files.entry(path.clone()).or_insert_with(|| {
                if root.kind(&path) == Ok(Kind::Missing) {
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
pub(crate) struct Prepared {
    pub raw: Vec<u8>,
    pub request: RequestSpec,
    pub gate_request: Request,
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
pub(super) struct Admitted {
    pub raw: Vec<u8>,
    pub request: RequestSpec,
    pub decision: Decision,
}

/// Loads a fixture's request and raw bytes (at most one byte past the contract's limit, as
/// `toolgate check` reads a response).
pub(crate) fn prepare(
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
        .map_err(load)?;
    let gate_request = request.to_request();
    Ok(Prepared {
        raw,
        request,
        gate_request,
        now,
    })
}

/// Loads a fixture's request and raw bytes and runs them through the gate's public API.
pub(super) fn admit_fixture(
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
