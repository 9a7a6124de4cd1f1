//! `toolgate new`: a contract in one command, then what is left to decide. The scaffold is
//! written (never over an existing contract), then the lint and every mutation family run on it,
//! exactly as `toolgate test` will, and each finding they leave becomes a line of the to-do list
//! with its file and pointer.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use toolgate_analyze::lint;
use toolgate_analyze::mutants::{DEFAULT_EMIT_DIR, Family, MutantVerdict, every_item};
use toolgate_gate::internals::{escape_hidden, parse_strict_json};
use toolgate_repo::{RepoRoot, Repository, Status, UsageError};
use toolgate_runner::{Scope, Suite};
use toolgate_scaffold::plan::survivors_file;
use toolgate_scaffold::{Parts, plan, render, sources, write};

/// Where a contract comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// One operation of an OpenAPI description.
    OpenApi {
        /// The description file.
        spec: PathBuf,
        /// Its `operationId`, or `GET /path`.
        operation: String,
    },
    /// Samples of the tool's output.
    Samples(Vec<PathBuf>),
    /// Every tool of an MCP server.
    Mcp {
        /// The server command and its arguments.
        command: Vec<OsString>,
        /// How long the server has to list its tools, and to answer each call.
        timeout: Duration,
        /// Tools to call once, each with its arguments (JSON text; `{}` when absent).
        calls: Vec<(String, Option<String>)>,
    },
}

/// What `toolgate new` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct NewConfig {
    /// The tool (for an OpenAPI operation or samples).
    pub tool: Option<String>,
    /// Where it comes from.
    pub source: Source,
    /// Promised fields named on the command line.
    pub fields: Vec<(String, String)>,
    /// Real responses that correct the description's schema (`--sample`).
    pub samples: Vec<PathBuf>,
    /// The repository root.
    pub root: PathBuf,
    /// Write the version after the tool's newest, keeping what its author decided there.
    pub next_version: bool,
}

/// The largest sample read.
const MAX_SAMPLE_BYTES: u64 = 16 << 20;

pub(crate) fn run(config: &NewConfig, out: &mut impl Write) -> Result<Status, UsageError> {
    let root = RepoRoot::open(&config.root)
        .map_err(|error| UsageError::io(&config.root, "open the repository root", &error))?
        .naming_relative();
    // The MCP server's tools as listed, by name (with --from-mcp).
    let mut listings: std::collections::BTreeMap<String, Value> = Default::default();
    let parts: Vec<Parts> = match &config.source {
        Source::OpenApi { spec, operation } => {
            let tool = required_tool(config)?;
            let description = toolgate_scaffold::openapi::read(spec).map_err(UsageError::new)?;
            let name = spec.file_name().map_or_else(
                || spec.display().to_string(),
                |name| name.to_string_lossy().into_owned(),
            );
            let mut parts =
                sources::from_openapi(&description, &name, operation, &tool, config.fields.clone())
                    .map_err(|message| UsageError::new(format!("{}: {message}", spec.display())))?;
            for file in &config.samples {
                parts.samples.push((sample_name(file), read_sample(file)?));
            }
            vec![parts]
        }
        Source::Samples(files) => {
            let tool = required_tool(config)?;
            let mut samples = Vec::new();
            for file in files {
                samples.push((sample_name(file), read_sample(file)?));
            }
            let shown: Vec<String> = files
                .iter()
                .map(|file| file.display().to_string())
                .collect();
            vec![sources::from_samples(
                samples,
                &format!("samples {}", shown.join(", ")),
                &tool,
                config.fields.clone(),
            )]
        }
        Source::Mcp {
            command,
            timeout,
            calls,
        } => {
            if config.tool.is_some() {
                return Err(UsageError::new(
                    "--from-mcp names every tool as its server does: drop the TOOL argument",
                ));
            }
            let server = command
                .first()
                .map(|program| program.to_string_lossy().into_owned())
                .unwrap_or_default();
            let calls = parsed_calls(calls)?;
            let (listed, answers) = if calls.is_empty() {
                (toolgate_mcp::list_tools(command, *timeout)?, Vec::new())
            } else {
                let asked = toolgate_mcp::ask_server(&toolgate_mcp::ServerAsk {
                    command: command.clone(),
                    upstream_headers: Vec::new(),
                    timeout: *timeout,
                    calls: calls.clone(),
                    who: "toolgate new --from-mcp",
                })?;
                let answers: Vec<(String, sources::Answer)> = calls
                    .iter()
                    .map(|(tool, _)| tool.clone())
                    .zip(asked.calls)
                    .collect();
                (asked.tools, answers)
            };
            if let Some((unknown, _)) = answers
                .iter()
                .find(|(tool, _)| !listed.iter().any(|listed| &listed.name == tool))
            {
                return Err(UsageError::new(format!(
                    "--call {}: the server lists no such tool",
                    escape_hidden(unknown)
                )));
            }
            if listed.is_empty() {
                return Err(UsageError::new(format!(
                    "the MCP server `{server}` offers no tool"
                )));
            }
            // Each contract is written against the tool as listed now: that listing is pinned
            // beside it, so the proxy withholds the tool if the server changes it later.
            listings = listed
                .iter()
                .map(|tool| (tool.name.clone(), tool.listing.clone()))
                .collect();
            listed
                .iter()
                .map(|tool| {
                    sources::from_mcp(
                        &server,
                        &tool.name,
                        tool.description.as_deref(),
                        tool.output_schema.as_ref(),
                        answers
                            .iter()
                            .find(|(called, _)| called == &tool.name)
                            .map(|(_, answer)| answer),
                        &contract_name(&tool.name),
                    )
                })
                .collect()
        }
    };

    let mcp = matches!(config.source, Source::Mcp { .. });
    if config.next_version {
        return next_version(config, &root, parts, &listings, out);
    }
    let mut left = 0;
    // Every tool is planned before anything is written, so one that cannot be written (a name
    // only the case tells from another) never leaves a tree half written.
    let mut planned = Vec::new();
    for parts in parts {
        let mcp_name = mcp.then(|| parts.origin.source.clone());
        let name = parts.tool.clone();
        match plan(parts) {
            Ok(plan) => planned.push((plan, mcp_name)),
            // One tool that cannot be scaffolded does not stop the others.
            Err(message) if mcp => {
                left += 1;
                let _ = writeln!(out, "skipped {name}: {}\n", escape_hidden(&message));
            }
            Err(message) => return Err(UsageError::new(message)),
        }
    }
    let mut taken = existing_tools(&root)?;
    let mut writable = Vec::new();
    for (plan, mcp_name) in planned {
        let twin = taken
            .iter()
            .find(|other| *other != &plan.tool && other.eq_ignore_ascii_case(&plan.tool))
            .cloned();
        match twin {
            None => {
                taken.push(plan.tool.clone());
                writable.push((plan, mcp_name));
            }
            Some(twin) => {
                let message = format!(
                    "its name differs from `{}` only in case, and a case-insensitive file system (macOS, Windows) holds one folder for both, so the repository refuses the pair; nothing of it was written",
                    escape_hidden(&twin)
                );
                if !mcp {
                    return Err(UsageError::new(format!("{}: {message}", plan.tool)));
                }
                left += 1;
                let _ = writeln!(out, "skipped {}: {message}\n", escape_hidden(&plan.tool));
            }
        }
    }
    for (plan, mcp_name) in writable {
        let written = match write(&root, &plan) {
            Ok(written) => written,
            Err(message) if mcp => {
                // One tool's existing contract does not stop the others.
                left += 1;
                let _ = writeln!(out, "skipped {}: {}\n", plan.tool, escape_hidden(&message));
                continue;
            }
            Err(message) => return Err(UsageError::new(message)),
        };
        if !plan.free_text.is_empty() {
            accept_free_text(&root, &config.root, &plan)?;
        }
        let mut written = written;
        let mut todo = plan.todo.clone();
        if let Some(lint_file) = accept_anything(&root, &config.root, &plan, &mut todo)? {
            written.push(lint_file);
        }
        if let Some(listing) = listings.get(&plan.tool) {
            toolgate_mcp::write_pin(&root, &plan.tool, listing)?;
            written.push(
                Path::new(toolgate_repo::CONTRACTS_DIR)
                    .join(&plan.tool)
                    .join(toolgate_repo::PIN_FILE),
            );
        }
        if let Some(source) = mcp_name
            && !source.ends_with(&format!("`{}`", plan.tool))
        {
            todo.push(format!(
                "{source}: its contract is named `{}` (the MCP name is not one a contract can have: 1 to 128 ASCII letters, digits, `_`, `-` and `.`), so the proxy cannot match the tool to it",
                plan.tool
            ));
        }
        todo.extend(findings(&config.root, &plan.tool, "v1")?);
        left += todo.len();
        report(out, &plan, &written, &todo)?;
    }
    Ok(Status::passed_if(left == 0))
}

/// Each `--call`'s tool and arguments, read: a JSON object, `{}` when none is given.
fn parsed_calls(calls: &[(String, Option<String>)]) -> Result<Vec<(String, Value)>, UsageError> {
    calls
        .iter()
        .map(|(tool, arguments)| {
            let arguments = match arguments {
                None => Value::Object(Default::default()),
                Some(text) => match parse_strict_json(text.as_bytes(), 64) {
                    Ok(value @ Value::Object(_)) => value,
                    Ok(_) => {
                        return Err(UsageError::new(format!(
                            "--call {}: its arguments must be a JSON object, e.g. '{{\"id\": 1}}'",
                            escape_hidden(tool)
                        )));
                    }
                    Err(message) => {
                        return Err(UsageError::new(format!(
                            "--call {}: its arguments are not strict JSON: {message}",
                            escape_hidden(tool)
                        )));
                    }
                },
            };
            Ok((tool.clone(), arguments))
        })
        .collect()
}

/// The tool folders already under `contracts/` and `fixtures/`.
fn existing_tools(root: &RepoRoot) -> Result<Vec<String>, UsageError> {
    let mut tools = Vec::new();
    for folder in [toolgate_repo::CONTRACTS_DIR, toolgate_repo::FIXTURES_DIR] {
        let folder = Path::new(folder);
        if root
            .kind(folder)
            .map_err(|error| UsageError::new(error.to_string()))?
            != toolgate_repo::EntryKind::Dir
        {
            continue;
        }
        for entry in root
            .list(folder)
            .map_err(|error| UsageError::new(error.to_string()))?
        {
            if !tools.contains(&entry.name) {
                tools.push(entry.name);
            }
        }
    }
    Ok(tools)
}

fn required_tool(config: &NewConfig) -> Result<String, UsageError> {
    config.tool.clone().ok_or_else(|| {
        UsageError::new(
            "name the tool: `toolgate new <TOOL> --from-openapi …` or `--from-sample …`",
        )
    })
}

/// An MCP tool's name as a contract name: the name itself, which the proxy then matches to the
/// tool; rewritten (letters, digits and `_`) only for a name MCP does not allow either.
fn contract_name(name: &str) -> String {
    if toolgate_gate::internals::is_tool_name(name) {
        return name.to_owned();
    }
    let mut out: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() {
                ch.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if !out.starts_with(|ch: char| ch.is_ascii_lowercase()) {
        out = format!("t_{out}");
        out.truncate(64);
    }
    out
}

fn sample_name(file: &Path) -> String {
    file.file_stem().map_or_else(
        || "sample".to_owned(),
        |stem| stem.to_string_lossy().into_owned(),
    )
}

fn read_sample(file: &Path) -> Result<Value, UsageError> {
    use std::io::Read;
    let handle = std::fs::File::open(file).map_err(|error| UsageError::io(file, "read", &error))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_SAMPLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| UsageError::io(file, "read", &error))?;
    if bytes.len() as u64 > MAX_SAMPLE_BYTES {
        return Err(UsageError::new(format!(
            "{}: larger than {} MiB; a sample is one tool answer",
            file.display(),
            MAX_SAMPLE_BYTES >> 20
        )));
    }
    parse_strict_json(&bytes, 100).map_err(|message| {
        UsageError::new(format!("{}: not strict JSON: {message}", file.display()))
    })
}

/// What the lint and the mutants leave to decide on the new contract, each with its place.
/// Where a tool's promised text is all it says: runs every mutation family on the fixtures just
/// written, and accepts, in the `survivors.yaml` just written, exactly the near-misses the gate
/// admits at those places (each with `FREE_TEXT_REASON`, for a person to confirm). What the
/// suite admits there is derived from the gate's decisions, not assumed.
fn accept_free_text(
    root: &RepoRoot,
    path: &Path,
    plan: &toolgate_scaffold::Plan,
) -> Result<(), UsageError> {
    let suite = Suite::discover_scoped(path, Scope::Tool(plan.tool.clone()))?;
    let run = match suite.mutant_run(
        &plan.tool,
        "v1",
        Family::ALL,
        Path::new(DEFAULT_EMIT_DIR),
        false,
    ) {
        Ok(run) => run,
        // Nothing to mutate (no admitted example): the to-do list already says so.
        Err(_) => return Ok(()),
    };
    // One entry per mutation and list member (`/accounts/*/nickname`), however many items the
    // fixtures' lists hold: a longer list in a new fixture needs no new entry.
    let mut accepted: Vec<(String, String)> = Vec::new();
    for finding in &run.findings {
        let place = every_item(&finding.pointer);
        if matches!(finding.verdict, MutantVerdict::Survivor(None))
            && finding.projected
            && plan.free_text.iter().any(|free| every_item(free) == place)
        {
            let entry = (finding.family.name().to_owned(), place);
            if !accepted.contains(&entry) {
                accepted.push(entry);
            }
        }
    }
    if accepted.is_empty() {
        return Ok(());
    }
    let file = Path::new(toolgate_repo::FIXTURES_DIR)
        .join(&plan.tool)
        .join(toolgate_repo::SURVIVORS_FILE);
    let survivors = survivors_file(&accepted).map_err(UsageError::new)?;
    render::check(&file.display().to_string(), &survivors).map_err(UsageError::new)?;
    root.write(&file, &survivors.bytes)
        .map_err(|error| UsageError::new(error.to_string()))
}

/// `--next-version`: the plan written as the version after the tool's newest, then the same
/// lint and mutants on it, and what is left to decide.
fn next_version(
    config: &NewConfig,
    root: &RepoRoot,
    parts: Vec<Parts>,
    listings: &std::collections::BTreeMap<String, Value>,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let mcp = matches!(config.source, Source::Mcp { .. });
    let mut left = 0;
    for mut parts in parts {
        let tool = parts.tool.clone();
        let folder = Path::new(toolgate_repo::CONTRACTS_DIR).join(&tool);
        // A server's tool with no contract yet has no version to follow: its first is written
        // without --next-version.
        if mcp
            && root
                .kind(&folder)
                .map_err(|error| UsageError::new(error.to_string()))?
                != toolgate_repo::EntryKind::Dir
        {
            let _ = writeln!(
                out,
                "skipped {}: no contract to follow; write its v1 with `toolgate new --from-mcp` (without --next-version)\n",
                escape_hidden(&tool)
            );
            continue;
        }
        if parts.fields.is_empty() {
            parts.fields =
                toolgate_scaffold::bump::kept_fields(root, &tool).map_err(UsageError::new)?;
        }
        let source = parts.origin.source.clone();
        let bumped = match plan(parts)
            .and_then(|plan| toolgate_scaffold::bump::write_next(root, &plan, &source))
        {
            Ok(bumped) => bumped,
            // One server tool that cannot be bumped does not stop the others.
            Err(message) if mcp => {
                left += 1;
                let _ = writeln!(out, "skipped {tool}: {}\n", escape_hidden(&message));
                continue;
            }
            Err(message) => return Err(UsageError::new(message)),
        };
        let mut written = bumped.written.clone();
        let mut todo = bumped.todo.clone();
        let repository = Repository::open(&config.root)?;
        let carried = toolgate_scaffold::bump::carry_fixtures(
            &repository,
            &tool,
            &bumped.from,
            &bumped.version,
        )?;
        written.extend(carried.rewritten);
        todo.extend(carried.todo);
        // The new version is written against the tool as the server lists it now.
        if let Some(listing) = listings.get(&tool) {
            toolgate_mcp::write_pin(root, &tool, listing)?;
            written.push(folder.join(toolgate_repo::PIN_FILE));
        }
        todo.extend(findings(&config.root, &tool, &bumped.version)?);
        left += todo.len();
        let text = bump_report(&tool, &source, &bumped, &written, &todo);
        toolgate_repo::write_output(out, text.as_bytes())?;
    }
    Ok(Status::passed_if(left == 0))
}

/// What `--next-version` prints for one tool: what it wrote, what is left, and the review.
fn bump_report(
    tool: &str,
    source: &str,
    bumped: &toolgate_scaffold::bump::Bumped,
    written: &[PathBuf],
    todo: &[String],
) -> String {
    let (from, version) = (&bumped.from, &bumped.version);
    let mut text = format!(
        "toolgate new: wrote {tool} {version} (the response schema from {source} with {from}'s edits replayed; everything else kept from {from})\n"
    );
    for path in written {
        text.push_str(&format!("  {}\n", path.display()));
    }
    text.push_str(&todo_list(todo));
    text.push_str(&format!(
        "\nnext: review the bump with `toolgate diff {tool} {from} {version}`, then `toolgate test --accept {tool}` (locks {version}) and `CI=true toolgate test {tool}`\n\n"
    ));
    text
}

/// Why `toolgate new` accepted a `value_untyped` finding: the words written into `lint.yaml`
/// beside each entry, for a person to confirm or replace.
pub(crate) const ANYTHING_REASON: &str = "The description allows any value here, so toolgate new kept it as it says: admitted unchecked, and never promised (an untyped promised field fails promised_field_open, which is not accepted). Confirm the agent needs nothing of it, or describe it in the schema and remove this entry.";

/// Why `toolgate new` accepted a `timestamp_without_format` finding.
pub(crate) const NOT_A_TIMESTAMP_REASON: &str = "Named like a timestamp, but the description (its format, its words or its example) says it is not an RFC 3339 date-time, so toolgate new gave it no format: the header of contract.yaml says why. Confirm, or give it a pattern that says what it is and remove this entry.";

/// The lint findings a fresh scaffold has only where it follows the description on purpose,
/// each with why, and the to-do line each place gets.
const DELIBERATE: [(lint::Rule, &str, &str); 2] = [
    (
        lint::Rule::ValueUntyped,
        ANYTHING_REASON,
        "the description allows any value at {instance}, so the contract admits it unchecked and the agent never sees it",
    ),
    (
        lint::Rule::TimestampWithoutFormat,
        NOT_A_TIMESTAMP_REASON,
        "{instance} is named like a timestamp, but the description says it is not an RFC 3339 one, so it has no format",
    ),
];

/// Where the scaffold follows the description on purpose against a lint rule (a value the
/// description allows to be anything, a timestamp-like name it says is no timestamp; an object
/// it declares no member of is tolerated in the shape instead), the contract does as the description says and never promises
/// it: each such place the lint reports is accepted in `contracts/<tool>/lint.yaml` with the
/// reason a person confirms, and is a decision on the to-do list. What the lint reports is
/// derived from the contract just written, not assumed. Returns the file written, if any.
fn accept_anything(
    root: &RepoRoot,
    path: &Path,
    plan: &toolgate_scaffold::Plan,
    todo: &mut Vec<String>,
) -> Result<Option<PathBuf>, UsageError> {
    let repository = Repository::open(path)?;
    let linted = lint::lint_tool(&repository, &plan.tool);
    let mut entries: Vec<Value> = Vec::new();
    for finding in linted.findings() {
        let Some((rule, reason, line)) =
            DELIBERATE.iter().find(|(rule, _, _)| *rule == finding.rule)
        else {
            continue;
        };
        let entry = serde_json::json!({
            "rule": rule.name(),
            "file": finding.file,
            "pointer": finding.pointer,
            "reason": reason,
        });
        if entries.contains(&entry) {
            continue;
        }
        entries.push(entry);
        let place = format!("{}#{}:", finding.file, finding.pointer);
        if !todo.iter().any(|line| line.starts_with(&place)) {
            let instance = finding.message.split(':').next().unwrap_or_default();
            todo.push(format!(
                "{place} {}; accepted in contracts/{}/lint.yaml for you to confirm, or describe it",
                line.replace("{instance}", instance),
                plan.tool
            ));
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let file = Path::new(toolgate_repo::CONTRACTS_DIR)
        .join(&plan.tool)
        .join("lint.yaml");
    let rendered = render::yaml(&[], &entries).map_err(UsageError::new)?;
    render::check(&file.display().to_string(), &rendered).map_err(UsageError::new)?;
    root.write(&file, &rendered.bytes)
        .map_err(|error| UsageError::new(error.to_string()))?;
    Ok(Some(file))
}

fn findings(root: &Path, tool: &str, version: &str) -> Result<Vec<String>, UsageError> {
    let mut todo = Vec::new();
    let repository = Repository::open(root)?;
    let linted = lint::lint_tool(&repository, tool);
    todo.extend(linted.errors());
    let findings = linted.findings();
    // What lint.yaml accepts (a place the description leaves open, accepted above for a person
    // to confirm) is already a to-do line of its own.
    let unaccepted: Vec<&lint::LintFinding> = match &linted.accepted {
        Ok(accepted) => lint::judge(&findings, accepted, &linted.read_versions())
            .0
            .into_iter()
            .filter(|judged| judged.accepted.is_none())
            .map(|judged| judged.finding)
            .collect(),
        Err(_) => findings.iter().collect(),
    };
    for finding in unaccepted {
        todo.push(format!(
            "contracts/{tool}/{}/{}#{} [{}]: {}",
            finding.version, finding.file, finding.pointer, finding.rule, finding.message
        ));
    }
    let suite = Suite::discover_scoped(root, Scope::Tool(tool.to_owned()))?;
    match suite.mutant_run(
        tool,
        version,
        Family::ALL,
        Path::new(DEFAULT_EMIT_DIR),
        false,
    ) {
        Ok(run) => {
            // One line per mutation and place, however many fixtures show it; a list's items
            // are one place (`/accounts/*/balance`), as a survivors.yaml entry accepts them.
            let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
            for finding in &run.findings {
                let every = every_item(&finding.pointer);
                let place = toolgate_repo::text::pointer(&every);
                let what = match &finding.verdict {
                    MutantVerdict::Survivor(Some(_)) => continue,
                    MutantVerdict::Survivor(None) if finding.projected => format!(
                        "the agent sees {place}, and the contract admits the near-miss: bound it in the schema, or accept it in fixtures/{tool}/survivors.yaml with a reason"
                    ),
                    MutantVerdict::Survivor(None) => {
                        format!("admitted at {place}, which no field reads")
                    }
                    MutantVerdict::Misplaced { layer, rule } => format!(
                        "rejected at {layer} (rule {rule}), expected {}",
                        finding.expected
                    ),
                    MutantVerdict::Leak(leaks) => format!("LEAK: {}", leaks.join("; ")),
                };
                let key = format!("mutant {} at {place}: {what}", finding.family);
                let fixture = finding.fixture.display().to_string();
                match grouped.iter_mut().find(|(known, _)| *known == key) {
                    Some((_, fixtures)) if fixtures.contains(&fixture) => {}
                    Some((_, fixtures)) => fixtures.push(fixture),
                    None => grouped.push((key, vec![fixture])),
                }
            }
            for (line, fixtures) in grouped {
                let source = match fixtures.as_slice() {
                    [one] => one.clone(),
                    [example, ..] => format!("{} fixtures, e.g. {example}", fixtures.len()),
                    [] => continue,
                };
                todo.push(format!("{line} ({source})"));
            }
        }
        Err(message) => todo.push(message),
    }
    Ok(todo)
}

/// The to-do list as the report prints it, each line escaped.
fn todo_list(todo: &[String]) -> String {
    if todo.is_empty() {
        return "\nnothing left to decide.\n".to_owned();
    }
    let mut text = format!("\nto decide ({}):\n", todo.len());
    for line in todo {
        text.push_str(&format!("  - {}\n", escape_hidden(line)));
    }
    text
}

fn report(
    out: &mut impl Write,
    plan: &toolgate_scaffold::Plan,
    written: &[PathBuf],
    todo: &[String],
) -> Result<(), UsageError> {
    let mut text = format!(
        "toolgate new: wrote {} (contract v1, {} fixtures, a request file)\n",
        plan.tool,
        plan.fixtures.len()
    );
    for path in written {
        text.push_str(&format!("  {}\n", path.display()));
    }
    if !plan.assumptions.is_empty() {
        text.push_str(&format!(
            "  {} assumptions, listed at the top of contracts/{}/v1/contract.yaml\n",
            plan.assumptions.len(),
            plan.tool
        ));
    }
    text.push_str(&todo_list(todo));
    text.push_str(&format!(
        "\nnext: review it, then `toolgate test --accept {0}` (writes the snapshots and locks v1) and `CI=true toolgate test {0}`\n\n",
        plan.tool
    ));
    toolgate_repo::write_output(out, text.as_bytes())
}
