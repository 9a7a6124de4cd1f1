//! `toolgate check … --save-fixture <class>/<name>`: a response just reproduced becomes a
//! regression fixture. The raw bytes are written exactly as read; the sidecar expects what the
//! gate decided, under every published version (derived, not assumed: each version decides the
//! same bytes under the same request, and the sidecar records what each one said), with the
//! request and every override that produced the decision. Nothing is ever overwritten.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use toolgate_gate::internals::format_timestamp;
use toolgate_gate::{Decision, Outcome, Response};

use crate::error::UsageError;
use crate::fixture::{
    DEFAULT_REQUEST_FILE, FIXTURES_DIR, FixtureClass, MAX_CASE_NAME, SIDECAR_SUFFIX, is_case_name,
};
use crate::repository::Repository;
use crate::request::RequestSpec;
use crate::sidecar::{Expectation, Sidecar, yaml_string};

/// Where to save: `<class>/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureTarget {
    /// The fixture class.
    pub class: FixtureClass,
    /// The case name (the raw file's stem).
    pub name: String,
}

/// Parses `--save-fixture`'s value.
pub fn parse_target(text: &str) -> Result<FixtureTarget, String> {
    let (class, name) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?}: write CLASS/NAME, e.g. near-miss/copperhead_answer"))?;
    let class = FixtureClass::from_dir_name(class).ok_or_else(|| {
        format!("{class:?} is not a fixture class (accepted, near-miss, legacy, duplicate-key)")
    })?;
    // Exactly the rule `toolgate test` reads case names by, so a saved fixture is never refused
    // by the next run.
    if !is_case_name(name) {
        let hint = match name.rsplit_once('.') {
            Some((stem, _)) if is_case_name(stem) => {
                format!(
                    "; name the case without an extension (`{}/{stem}`): the raw file keeps the response's own",
                    class.as_str()
                )
            }
            _ => String::new(),
        };
        return Err(format!(
            "{name:?}: a case name is letters, digits, `_` and `-`, a letter or digit first, at most {MAX_CASE_NAME} characters{hint}"
        ));
    }
    Ok(FixtureTarget {
        class,
        name: name.to_owned(),
    })
}

/// What was observed, to be saved.
pub struct Observed<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The raw bytes, as the gate read them.
    pub raw: &'a [u8],
    /// The raw file the bytes came from (for its extension), if not stdin.
    pub raw_path: Option<&'a Path>,
    /// The request, after overrides.
    pub spec: &'a RequestSpec,
    /// The request file given with `--request`, if any.
    pub request_file: Option<&'a Path>,
    /// Whether `spec` is itself the request to save (kept with the response in production,
    /// not read from a file): it is written beside the fixture, `NAME.request.json`.
    pub save_request: bool,
    /// The command that captured it, for the sidecar's description (`toolgate check`).
    pub command: &'a str,
    /// Which fields came from `--request-id`, `--now`, `--upstream-status`.
    pub overridden: (bool, bool, bool),
    /// The decision time used.
    pub now: SystemTime,
    /// The version that decided (the one checked).
    pub version: &'a str,
    /// Its decision.
    pub decision: &'a Decision,
}

/// Saves the fixture; returns what to tell the user.
pub fn save(
    repository: &Repository,
    target: &FixtureTarget,
    observed: &Observed<'_>,
) -> Result<String, UsageError> {
    let root = repository.root();
    let tool = observed.tool;
    let class_folder = Path::new(FIXTURES_DIR)
        .join(tool)
        .join(target.class.as_str());
    if let Err(message) = fits(target.class, observed.decision) {
        return Err(UsageError::new(format!(
            "{} {}: {message}; save it in another class (--save-fixture CLASS/{})",
            tool, observed.version, target.name
        )));
    }
    // Nothing is overwritten: not a raw file of the same name (whatever its extension), not
    // the sidecar, not a request file.
    let taken = root
        .list(&class_folder)
        .unwrap_or_default()
        .into_iter()
        .any(|entry| {
            entry.name == format!("{}{SIDECAR_SUFFIX}", target.name)
                || Path::new(&entry.name)
                    .file_stem()
                    .and_then(|stem| stem.to_str())
                    == Some(target.name.as_str())
        });
    if taken {
        return Err(UsageError::new(format!(
            "{}: a fixture called `{}` exists already; choose another name (nothing was written)",
            root.shown(&class_folder).display(),
            target.name
        )));
    }
    let extension = observed
        .raw_path
        .and_then(Path::extension)
        .and_then(|extension| extension.to_str())
        .filter(|extension| !extension.is_empty() && *extension != "yaml")
        .unwrap_or("json");
    let raw_path = class_folder.join(format!("{}.{extension}", target.name));
    let sidecar_path = class_folder.join(format!("{}{SIDECAR_SUFFIX}", target.name));

    let (request_line, request_copy) = request_reference(repository, tool, target, observed)?;
    let (expect, pinned) = expectations(repository, tool, target.class, observed)?;

    let mut sidecar = String::new();
    let _ = writeln!(
        sidecar,
        "description: {}",
        yaml_string(&format!(
            "Captured with `{} --save-fixture`: {} by {tool} {}.",
            observed.command,
            Expectation::observed(observed.decision),
            observed.version
        ))
    );
    if let Some(line) = &request_line {
        sidecar.push_str(line);
    }
    let (request_id, now, status) = observed.overridden;
    if request_id {
        let _ = writeln!(
            sidecar,
            "request_id: {}",
            yaml_string(&observed.spec.request_id)
        );
    }
    // A fixture pins its decision time: the one given, or the one the check used.
    let pinned_now = observed.spec.now.is_some() && !now;
    if !pinned_now {
        let text = observed
            .spec
            .now
            .clone()
            .or_else(|| format_timestamp(observed.now))
            .unwrap_or_default();
        let _ = writeln!(sidecar, "now: {}", yaml_string(&text));
    }
    if status && let Some(status) = observed.spec.upstream_status {
        let _ = writeln!(sidecar, "upstream_status: {status}");
    }
    sidecar.push_str(&expect);
    if let Some(versions) = pinned {
        let _ = writeln!(sidecar, "versions: [{}]", versions.join(", "));
    }
    // What is written must read back: the same reader the suite uses.
    Sidecar::parse(&sidecar).map_err(|error| {
        UsageError::new(format!(
            "the sidecar toolgate built does not read back ({error}); this is a bug in toolgate:\n{sidecar}"
        ))
    })?;

    let write = |path: &Path, bytes: &[u8]| root.write(path, bytes).map_err(UsageError::new);
    if let Some((path, bytes)) = &request_copy {
        write(path, bytes)?;
    }
    write(&raw_path, observed.raw)?;
    write(&sidecar_path, sidecar.as_bytes())?;
    let mut message = format!(
        "saved {} and {}",
        root.shown(&raw_path).display(),
        root.shown(&sidecar_path).display()
    );
    if let Some((path, _)) = &request_copy {
        let _ = write!(
            message,
            " (and the request as {})",
            root.shown(path).display()
        );
    }
    let _ = write!(
        message,
        "\nnext: `toolgate test --accept` writes its snapshot; review it and commit the fixture, its sidecar and the snapshot"
    );
    Ok(message)
}

/// Whether a decision belongs in `class` (as the suite checks each case).
pub fn fits(class: FixtureClass, decision: &Decision) -> Result<(), String> {
    match (class, decision.outcome()) {
        (FixtureClass::Accepted, Outcome::Admitted | Outcome::AdmittedFailure { .. }) => Ok(()),
        (FixtureClass::Accepted, _) => {
            Err("the gate rejected it, so it is no `accepted` fixture (a near-miss?)".to_owned())
        }
        (FixtureClass::Legacy, Outcome::Admitted)
            if decision.shape() != Some(toolgate_gate::CURRENT_SHAPE) =>
        {
            Ok(())
        }
        (FixtureClass::Legacy, _) => {
            Err("a legacy fixture must be admitted through a legacy shape".to_owned())
        }
        (FixtureClass::NearMiss, Outcome::Rejected(_)) => Ok(()),
        (FixtureClass::NearMiss, _) => {
            Err("the gate admitted it, so it is no `near-miss` fixture (accepted?)".to_owned())
        }
        (FixtureClass::DuplicateKey, Outcome::Rejected(_))
            if decision.rule() == Some("duplicate_member") =>
        {
            Ok(())
        }
        (FixtureClass::DuplicateKey, _) => {
            Err("a duplicate-key fixture must be rejected as `duplicate_member`".to_owned())
        }
    }
}

/// A request file to write beside the tool's fixtures: where, and its bytes.
type RequestCopy = (PathBuf, Vec<u8>);

/// The sidecar's `request:` line (none for the tool's default request file) and, when the
/// `--request` file lives outside `fixtures/<tool>/`, a copy of it to write there.
fn request_reference(
    repository: &Repository,
    tool: &str,
    target: &FixtureTarget,
    observed: &Observed<'_>,
) -> Result<(Option<String>, Option<RequestCopy>), UsageError> {
    let root = repository.root();
    let tool_folder = Path::new(FIXTURES_DIR).join(tool);
    if observed.save_request {
        let mut bytes = serde_json::to_vec_pretty(observed.spec)
            .map_err(|error| UsageError::new(format!("cannot write the request: {error}")))?;
        bytes.push(b'\n');
        return copy_beside(repository, &tool_folder, target, bytes);
    }
    let Some(file) = observed.request_file else {
        let default = tool_folder.join(DEFAULT_REQUEST_FILE);
        if root.kind(&default).map_err(UsageError::new)? != crate::confine::EntryKind::File {
            return Err(UsageError::new(format!(
                "{}: no request file, and none given: pass --request FILE, which is saved with the fixture",
                root.shown(&default).display()
            )));
        }
        return Ok((None, None));
    };
    let inside = std::fs::canonicalize(file)
        .ok()
        .zip(std::fs::canonicalize(root.full(&tool_folder)).ok())
        .and_then(|(file, folder)| (file.parent() == Some(folder.as_path())).then_some(file));
    if let Some(file) = inside {
        let name = file
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default()
            .to_owned();
        return Ok((
            (name != DEFAULT_REQUEST_FILE).then(|| format!("request: {}\n", yaml_string(&name))),
            None,
        ));
    }
    let bytes = std::fs::read(file)
        .map_err(|error| UsageError::io(file, "read the request file", &error))?;
    copy_beside(repository, &tool_folder, target, bytes)
}

/// The request `bytes`, to be written as `NAME.request.json` in the tool's folder, and the
/// sidecar line naming it; refused when that file exists.
fn copy_beside(
    repository: &Repository,
    tool_folder: &Path,
    target: &FixtureTarget,
    bytes: Vec<u8>,
) -> Result<(Option<String>, Option<RequestCopy>), UsageError> {
    let root = repository.root();
    let name = format!("{}.request.json", target.name);
    let copy = tool_folder.join(&name);
    if root.kind(&copy).map_err(UsageError::new)? != crate::confine::EntryKind::Missing {
        return Err(UsageError::new(format!(
            "{}: exists already; choose another fixture name (nothing was written)",
            root.shown(&copy).display()
        )));
    }
    Ok((
        Some(format!("request: {}\n", yaml_string(&name))),
        Some((copy, bytes)),
    ))
}

/// `expect:` (with `versions:` when only some versions fit the class) or `expect_by_version:`,
/// from every published version's decision on the same bytes and request.
fn expectations(
    repository: &Repository,
    tool: &str,
    class: FixtureClass,
    observed: &Observed<'_>,
) -> Result<(String, Option<Vec<String>>), UsageError> {
    let request = observed.spec.to_request();
    let mut decided: Vec<(String, Expectation)> = Vec::new();
    let mut all = Vec::new();
    for dir in repository.versions(tool)? {
        let name = dir.name();
        all.push(name.clone());
        let expectation = if name == observed.version {
            Expectation::observed(observed.decision)
        } else {
            let Ok(contract) = repository.compile(tool, &dir) else {
                continue; // a broken version is `toolgate test`'s to report
            };
            let mut response = Response::body(observed.raw);
            if let Some(status) = observed.spec.upstream_status {
                response = response.with_status(status);
            }
            let decision = contract.admit_response(response, &request, observed.now);
            // An accepted fixture may be rejected by some versions (its sidecar says so per
            // version); every other class holds under each version it runs against, so a
            // version that decides otherwise is left out.
            if class != FixtureClass::Accepted && fits(class, &decision).is_err() {
                continue;
            }
            Expectation::observed(&decision)
        };
        decided.push((name, expectation));
    }
    let same = decided.windows(2).all(|pair| pair[0].1 == pair[1].1);
    if same {
        let pinned = (decided.len() < all.len())
            .then(|| decided.iter().map(|(name, _)| name.clone()).collect());
        return Ok((format!("expect: {}\n", decided[0].1.to_yaml()), pinned));
    }
    let mut text = "expect_by_version:\n".to_owned();
    for (name, expectation) in &decided {
        let _ = writeln!(text, "  {name}: {}", expectation.to_yaml());
    }
    Ok((text, None))
}
