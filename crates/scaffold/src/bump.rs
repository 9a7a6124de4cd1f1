//! `toolgate new TOOL … --next-version`: a newer description made the tool's next version,
//! `contracts/<tool>/v<N+1>/`, beside the versions it has. What the author decided in `vN` is
//! kept as they wrote it (its `contract.yaml`, comments and all, its other files byte for byte);
//! only the response schema is the newer description's, and every promised field or tolerated
//! place the newer schema no longer declares is a to-do. The newer description's documented
//! examples that no fixture already holds become accepted fixtures of the new version, so
//! `toolgate diff <tool> vN vN+1` reviews the bump at once.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

use toolgate_repo::{
    CONTRACTS_DIR, EntryKind, Expectation, Expectations, FIXTURES_DIR, Fixture, FixtureClass,
    LoadError, RepoRoot, Repository, RequestFiles, admit_fixture, discover_tool, fits_class,
    with_version_expectation,
};

use toolgate_gate::internals::escape_hidden;

use crate::merge::merge;
use crate::plan::{Plan, SCAFFOLD_DIR, SYNTHESIZED_CASE, locate};
use crate::render;

/// The largest file of a version folder copied into the next.
const MAX_COPIED_BYTES: u64 = 16 << 20;

/// What `--next-version` wrote and what it leaves to decide.
pub struct Bumped {
    /// The version written (`v3`).
    pub version: String,
    /// The version it was made from (`v2`).
    pub from: String,
    /// Every file written, relative to the root.
    pub written: Vec<PathBuf>,
    /// What the newer description no longer holds of what `from` decided.
    pub todo: Vec<String>,
}

/// The newest version folder of `tool`: its number and its path.
fn newest(root: &RepoRoot, tool: &str) -> Result<(u32, PathBuf), String> {
    let folder = Path::new(CONTRACTS_DIR).join(tool);
    if root.kind(&folder).map_err(|error| error.to_string())? != EntryKind::Dir {
        return Err(format!(
            "{}: no contract to follow; --next-version writes the version after the newest one, so scaffold v1 first (without --next-version)",
            root.shown(&folder).display()
        ));
    }
    root.list(&folder)
        .map_err(|error| error.to_string())?
        .into_iter()
        .filter(|entry| matches!(entry.kind, Ok(EntryKind::Dir)))
        .filter_map(|entry| Some((toolgate_repo::parse_version(&entry.name)?, entry.path)))
        .max_by_key(|(number, _)| *number)
        .ok_or_else(|| {
            format!(
                "{}: no version folder (v1, v2, …) to follow",
                root.shown(&folder).display()
            )
        })
}

/// The response schema of the next version: the newer description's scaffold with every edit
/// the author made to `from`'s scaffold replayed ([`merge`]); each edit that no longer applies
/// is a to-do. A version with no scaffold beside it (written by hand, or by a `toolgate new`
/// older than the scaffold record) gives the newer scaffold as it is, and says so.
fn carried_schema(
    root: &RepoRoot,
    plan: &Plan,
    from_path: &Path,
    schema_name: &str,
    version: &str,
    todo: &mut Vec<String>,
) -> Result<Value, String> {
    let tool = &plan.tool;
    let read = |path: &Path| -> Result<Value, String> {
        let bytes = root
            .read_capped(path, MAX_COPIED_BYTES)
            .map_err(|error| error.to_string())?;
        serde_json::from_slice(&bytes)
            .map_err(|error| format!("{}: {error}", root.shown(path).display()))
    };
    let committed = from_path.join(schema_name);
    let scaffolded = from_path.join(SCAFFOLD_DIR).join(schema_name);
    if root.kind(&scaffolded).map_err(|error| error.to_string())? != EntryKind::File
        || root.kind(&committed).map_err(|error| error.to_string())? != EntryKind::File
    {
        todo.push(format!(
            "contracts/{tool}/{version}/{schema_name}: the newer description's scaffold as it is, because {} holds no scaffold to tell the author's edits from: carry over by hand what was changed there (`toolgate diff` between the two versions lists it)",
            root.shown(from_path).display()
        ));
        return Ok(plan.schema.clone());
    }
    let merged = merge(&read(&scaffolded)?, &read(&committed)?, &plan.schema);
    for conflict in &merged.conflicts {
        todo.push(format!(
            "contracts/{tool}/{version}/{schema_name}#{}: {}: decide what holds now, and write it here",
            escape_hidden(&conflict.at),
            conflict.why
        ));
    }
    Ok(merged.document)
}

/// A tool's newest version: its number, its folder, and its `contract.yaml` as written and as
/// read.
struct Newest {
    number: u32,
    path: PathBuf,
    text: String,
    contract: Value,
}

impl Newest {
    fn read(root: &RepoRoot, tool: &str) -> Result<Newest, String> {
        let (number, path) = newest(root, tool)?;
        let file = path.join("contract.yaml");
        let text = String::from_utf8(
            root.read_capped(&file, MAX_COPIED_BYTES)
                .map_err(|error| error.to_string())?,
        )
        .map_err(|_| format!("{}: not UTF-8", root.shown(&file).display()))?;
        let contract = toolgate_gate::internals::read_strict_yaml(&text)
            .map_err(|error| format!("{}: {error}", root.shown(&file).display()))?;
        Ok(Newest {
            number,
            path,
            text,
            contract,
        })
    }
}

/// The plain promised fields (`name`, `from`) of `tool`'s newest version: what the next one is
/// planned with, so the scaffold does not choose again what the author chose (a list field is
/// kept by the copied `contract.yaml` all the same).
pub fn kept_fields(root: &RepoRoot, tool: &str) -> Result<Vec<(String, String)>, String> {
    let newest = Newest::read(root, tool)?;
    Ok(newest
        .contract
        .pointer("/shape/fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|field| field.get("each").is_none())
        .filter_map(|field| {
            Some((
                field.get("name")?.as_str()?.to_owned(),
                field.get("from")?.as_str()?.to_owned(),
            ))
        })
        .collect())
}

/// Writes `plan` (made from the newer description) as the version after `tool`'s newest.
pub fn write_next(root: &RepoRoot, plan: &Plan, source: &str) -> Result<Bumped, String> {
    let tool = &plan.tool;
    let Newest {
        number,
        path: from_path,
        text,
        contract,
    } = Newest::read(root, tool)?;
    let from = format!("v{number}");
    let version = format!("v{}", number + 1);
    let to_path = Path::new(CONTRACTS_DIR).join(tool).join(&version);
    let contract_file = from_path.join("contract.yaml");
    let schema_name = contract
        .pointer("/shape/schema")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "{}: no `shape.schema` to replace with the newer description's",
                root.shown(&contract_file).display()
            )
        })?;
    let bumped = bumped_contract(&text, number).ok_or_else(|| {
        format!(
            "{}: no `version: {number}` line to raise; write v{} by hand",
            root.shown(&contract_file).display(),
            number + 1
        )
    })?;
    let mut todo = Vec::new();
    let schema = carried_schema(root, plan, &from_path, schema_name, &version, &mut todo)?;
    let header = render::comment(&format!(
        "{version}: the response schema is {source}'s (`toolgate new --next-version`), with every edit its author made to {from}'s scaffold replayed where the newer description left the place alone; the rest is {from}'s, as its author wrote it."
    ));
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![
        (
            to_path.join("contract.yaml"),
            format!("# {header}\n{bumped}").into_bytes(),
        ),
        (
            to_path.join(SCAFFOLD_DIR).join(schema_name),
            render::json(&plan.schema).bytes,
        ),
    ];
    for entry in root.list(&from_path).map_err(|error| error.to_string())? {
        if entry.name == "contract.yaml" || !matches!(entry.kind, Ok(EntryKind::File)) {
            continue;
        }
        let bytes = if entry.name == schema_name {
            render::json(&schema).bytes
        } else {
            root.read_capped(&entry.path, MAX_COPIED_BYTES)
                .map_err(|error| error.to_string())?
        };
        files.push((to_path.join(&entry.name), bytes));
    }
    if !files
        .iter()
        .any(|(path, _)| path.file_name().is_some_and(|name| name == schema_name))
    {
        files.push((to_path.join(schema_name), render::json(&schema).bytes));
    }
    for (what, pointer) in decided_places(&contract) {
        if locate(&schema, &pointer).is_none() {
            todo.push(format!(
                "contracts/{tool}/{version}/contract.yaml: {what} reads {pointer}, which the newer schema does not declare: map it to where the value now is, or remove it"
            ));
        }
    }
    files.extend(new_examples(root, plan, &version)?);
    for (path, _) in &files {
        if root.kind(path).map_err(|error| error.to_string())? != EntryKind::Missing {
            return Err(format!(
                "{}: already exists; `toolgate new` never overwrites a file",
                root.shown(path).display()
            ));
        }
    }
    for (path, bytes) in &files {
        root.write(path, bytes).map_err(|error| error.to_string())?;
    }
    Ok(Bumped {
        version,
        from,
        written: files.into_iter().map(|(path, _)| path).collect(),
        todo,
    })
}

/// `vN`'s contract text with its one `version: N` line raised to `N + 1`, or `None` when it
/// has no such line (or more than one).
fn bumped_contract(text: &str, number: u32) -> Option<String> {
    let is_version = |line: &str| {
        line.strip_prefix("version:")
            .map(|rest| rest.split('#').next().unwrap_or_default().trim())
            == Some(number.to_string().as_str())
    };
    if text.lines().filter(|line| is_version(line)).count() != 1 {
        return None;
    }
    Some(
        text.split_inclusive('\n')
            .map(|line| {
                if is_version(line.trim_end()) {
                    let ending = &line[line.trim_end().len()..];
                    format!("version: {}{ending}", number + 1)
                } else {
                    line.to_owned()
                }
            })
            .collect(),
    )
}

/// The places of a response a contract's author decided about: each promised field's `from`
/// (a list field's members under each item) and each tolerated place.
fn decided_places(contract: &Value) -> Vec<(String, String)> {
    let mut places = Vec::new();
    for field in contract
        .pointer("/shape/fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = field["name"].as_str().unwrap_or_default();
        let from = field["from"].as_str().unwrap_or_default();
        match field.get("each").and_then(Value::as_array) {
            None => places.push((format!("field `{name}`"), from.to_owned())),
            Some(members) => {
                for member in members {
                    places.push((
                        format!(
                            "field `{name}`'s member `{}`",
                            member["name"].as_str().unwrap_or_default()
                        ),
                        format!("{from}/0{}", member["from"].as_str().unwrap_or_default()),
                    ));
                }
            }
        }
    }
    for tolerated in contract
        .pointer("/shape/tolerate")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(at) = tolerated["at"].as_str() {
            places.push(("a `tolerate:` entry".to_owned(), at.to_owned()));
        }
    }
    places
}

/// A sidecar for an example new in one version.
#[derive(Serialize)]
struct NewExample<'a> {
    description: &'a str,
    versions: [&'a str; 1],
    expect: Admitted,
}

#[derive(Serialize)]
struct Admitted {
    outcome: &'static str,
}

/// The documented examples of the newer description that no accepted fixture of the tool holds
/// already, as accepted fixtures of `version` only (never one synthesized from the schema: the
/// fixtures the tool has are real).
fn new_examples(
    root: &RepoRoot,
    plan: &Plan,
    version: &str,
) -> Result<Vec<(PathBuf, Vec<u8>)>, String> {
    let folder = Path::new(FIXTURES_DIR).join(&plan.tool).join("accepted");
    let mut known: Vec<Value> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    if root.kind(&folder).map_err(|error| error.to_string())? == EntryKind::Dir {
        for entry in root.list(&folder).map_err(|error| error.to_string())? {
            names.push(entry.name.clone());
            if entry.name.ends_with(".expect.yaml") {
                continue;
            }
            if let Ok(bytes) = root.read_capped(&entry.path, MAX_COPIED_BYTES)
                && let Ok(value) = serde_json::from_slice::<Value>(&bytes)
            {
                known.push(value);
            }
        }
    }
    let mut files = Vec::new();
    for fixture in plan
        .fixtures
        .iter()
        .filter(|fixture| fixture.class == "accepted" && fixture.case != SYNTHESIZED_CASE)
    {
        let Ok(value) = serde_json::from_slice::<Value>(&fixture.body.bytes) else {
            continue;
        };
        if known.contains(&value) {
            continue;
        }
        let mut case = format!("{}_{version}", fixture.case);
        let mut counter = 1;
        while names
            .iter()
            .any(|name| name.starts_with(&format!("{case}.")))
        {
            counter += 1;
            case = format!("{}_{version}_{counter}", fixture.case);
        }
        names.push(format!("{case}.json"));
        let description = format!(
            "A documented example of the description {version} was scaffolded from (`{}`).",
            fixture.case
        );
        let sidecar = render::yaml(
            &[],
            &NewExample {
                description: &description,
                versions: [version],
                expect: Admitted {
                    outcome: "admitted",
                },
            },
        )?;
        files.push((
            folder.join(format!("{case}.json")),
            fixture.body.bytes.clone(),
        ));
        files.push((folder.join(format!("{case}.expect.yaml")), sidecar.bytes));
    }
    Ok(files)
}

/// What the bump did to the tool's fixtures.
#[derive(Debug, Default)]
pub struct Carried {
    /// Sidecars rewritten to say what the new version decides.
    pub rewritten: Vec<PathBuf>,
    /// What a person must decide.
    pub todo: Vec<String>,
}

/// Every fixture that runs under `from` decided under `version` (just written): where the new
/// version decides it as `from` does, nothing changes; where it decides otherwise and the outcome
/// still fits the fixture's class, its sidecar is rewritten to expect that under `version`
/// (`expect_by_version:`; an accepted fixture may be refused by a version), and the difference
/// is a decision, since it is either the upstream's real change or a contract made stricter
/// than it; where the outcome does not fit the class (a near-miss the new version admits), it
/// is a decision alone. A fixture that states its
/// expectation version by version gains one for `version`, so the suite keeps it.
pub fn carry_fixtures(
    repository: &Repository,
    tool: &str,
    from: &str,
    version: &str,
) -> Result<Carried, LoadError> {
    let root = repository.root();
    let versions = repository.versions(tool)?;
    // A version that does not compile is the to-do list's first line already (the lint).
    let Ok(contract) = repository
        .version(tool, Some(version))
        .and_then(|next| repository.compile(tool, &next))
    else {
        return Ok(Carried::default());
    };
    let earlier: Vec<String> = versions
        .iter()
        .map(|dir| dir.name())
        .filter(|name| name != version)
        .collect();
    let fixtures: Vec<Arc<Fixture>> = discover_tool(root, tool)
        .fixtures
        .into_iter()
        .map(Arc::new)
        .collect();
    let requests = RequestFiles::load(root, &fixtures);
    let mut carried = Carried::default();
    for fixture in &fixtures {
        let Ok(spec) = &fixture.spec else { continue };
        let Some(expected) = spec
            .expect
            .for_version(from)
            .filter(|_| spec.runs_against(from))
        else {
            continue;
        };
        let pinned = matches!(spec.expect, Expectations::Every(_)) && spec.versions.is_some();
        if spec.synthesized || pinned {
            continue;
        }
        let Ok(admitted) = admit_fixture(root, &requests, fixture, spec, &contract) else {
            continue; // a fixture that cannot be read is `toolgate test`'s to report
        };
        let observed = Expectation::observed(&admitted.decision);
        let same = expected.is_met_by(&admitted.decision);
        let raw = root.shown(&fixture.raw).display().to_string();
        let sidecar = root.shown(&fixture.sidecar).display().to_string();
        // An accepted fixture may be refused by some versions (its sidecar says so per
        // version), as save_fixture writes it; every other class holds under each version.
        if fixture.class != FixtureClass::Accepted
            && let Err(why) = fits_class(fixture.class, &admitted.decision)
        {
            carried.todo.push(format!(
                "{raw}: {version} decides it {observed} ({why}), {from} {expected}: if the upstream changed, move the fixture to the class it now belongs to; if not, {version} is wrong here"
            ));
            continue;
        }
        let by_version = matches!(spec.expect, Expectations::ByVersion(_));
        if same && !by_version {
            continue;
        }
        let text = root.read_text(&fixture.sidecar)?;
        let Some(rewritten) = with_version_expectation(&text, &earlier, version, &observed) else {
            if !same {
                carried.todo.push(format!(
                    "{raw}: {version} decides it {observed}, {from} {expected}: say so in {sidecar} (expect_by_version:) if the upstream changed, or loosen {version}"
                ));
            }
            continue;
        };
        root.write(&fixture.sidecar, rewritten.as_bytes())?;
        carried.rewritten.push(fixture.sidecar.clone());
        if !same {
            carried.todo.push(format!(
                "{raw}: {version} decides it {observed}, {from} {expected}; written into {sidecar} as {version}'s expectation: keep it if the upstream really changed, or loosen {version} and remove that line"
            ));
        }
    }
    Ok(carried)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_one_version_line_is_raised() {
        assert_eq!(
            bumped_contract("# v2\ntool: t\nversion: 2  # the second\nshape: {}\n", 2).as_deref(),
            Some("# v2\ntool: t\nversion: 3\nshape: {}\n")
        );
        assert_eq!(bumped_contract("tool: t\nversion: 1\n", 2), None);
        assert_eq!(bumped_contract("version: 1\nversion: 1\n", 1), None);
    }
}
