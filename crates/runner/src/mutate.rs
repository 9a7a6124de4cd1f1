//! `toolgate mutate`: every mutant of every admitted accepted and legacy fixture, for every
//! published version it runs against, through the gate, on the suite's own cases and caches; the
//! report is `toolgate_analyze`'s.

use std::io::Write;
use std::path::{Path, PathBuf};

use toolgate_analyze::Format;
use toolgate_analyze::mutants::Family;
use toolgate_analyze::mutants::{DEFAULT_EMIT_DIR, MutateReport, VersionReport, load_survivors};
use toolgate_repo::RepoRoot;
use toolgate_repo::Repository;
use toolgate_repo::Status;
use toolgate_repo::{UsageError, write_output};

use crate::parallel::in_parallel;
use crate::progress::{Progress, ProgressMode};
use crate::suite::{Scope, Suite};

/// What `toolgate mutate` was asked to do.
#[derive(Debug, Clone)]
pub struct MutateConfig {
    /// Only this tool (default: every tool with a contract).
    pub tool: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    pub root: PathBuf,
    /// The report format.
    pub format: Format,
    /// Write every mutant as a file under this folder, as TOOL/VERSION/CLASS/CASE/MUTATION-N.json.
    pub emit: Option<PathBuf>,
    /// Colour the human report.
    pub color: bool,
    /// How the run shows on stderr that it is going: a bar on a terminal, a line every ten
    /// seconds in a CI log.
    pub progress: ProgressMode,
}

/// Runs `toolgate mutate`: passed with no leak, no unaccepted survivor and no stale acceptance,
/// failed otherwise, unusable when a contract or `survivors.yaml` cannot be read.
pub fn run(options: &MutateConfig, out: &mut impl Write) -> Result<Status, UsageError> {
    let repository = Repository::open(&options.root)?;
    let tools = repository.select_tools(options.tool.as_deref())?;
    let emit_dir = options
        .emit
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_EMIT_DIR));
    let emit_root = match &options.emit {
        Some(dir) => Some(open_emit_dir(dir)?),
        None => None,
    };
    let mut reports = Vec::new();
    let mut notes = Vec::new();
    let mut failed = None;
    let mut progress = Progress::new(options.progress, tools.len() as u64);
    // The tools on every core; their reports, and the mutants --emit writes, in tool order.
    in_parallel(
        &tools,
        |tool| mutate_tool(options, tool, &emit_dir, emit_root.is_some()),
        |tool, message| {
            Ok(Mutated {
                reports: vec![VersionReport {
                    tool: tool.clone(),
                    version: "(all)".to_owned(),
                    run: Err(format!(
                        "toolgate panicked here ({message}); this is a bug in toolgate: please report it with the fixture that caused it"
                    )),
                }],
                notes: Vec::new(),
            })
        },
        |mutated| {
            match mutated {
                Ok(mutated) => {
                    if let Some(root) = &emit_root {
                        for run in mutated
                            .reports
                            .iter()
                            .filter_map(|report| report.run.as_ref().ok())
                        {
                            for (file, bytes) in &run.emitted {
                                if let Err(error) = root.write(file, bytes) {
                                    failed.get_or_insert(UsageError::from(error));
                                }
                            }
                        }
                    }
                    reports.extend(mutated.reports);
                    notes.extend(mutated.notes);
                }
                Err(error) => {
                    failed.get_or_insert(error);
                }
            }
            progress.tool_done(|| format!("{} tool versions mutated", reports.len()));
        },
    );
    progress.finish();
    if let Some(error) = failed {
        return Err(error);
    }
    let report = MutateReport { reports, notes };
    let text = match options.format {
        Format::Human => report.human(options.emit.as_deref(), options.color),
        Format::Json => report.json(),
    };
    write_output(out, text.as_bytes())?;
    Ok(report.status())
}

/// Creates the `--emit` folder and opens it: mutants are written inside it only, never through a
/// symlink.
fn open_emit_dir(dir: &Path) -> Result<RepoRoot, UsageError> {
    std::fs::create_dir_all(dir).map_err(|error| {
        UsageError::new(format!(
            "{}: cannot create the --emit folder: {error}",
            dir.display()
        ))
    })?;
    RepoRoot::open(dir).map_err(|error| {
        UsageError::new(format!(
            "{}: cannot open the --emit folder: {error}",
            dir.display()
        ))
    })
}

/// One tool's mutants: a report per version, and notes.
struct Mutated {
    reports: Vec<VersionReport>,
    notes: Vec<String>,
}

/// One tool's mutants, every version of it (and a note for a text tool).
fn mutate_tool(
    options: &MutateConfig,
    tool: &str,
    emit_dir: &Path,
    emitting: bool,
) -> Result<Mutated, UsageError> {
    let mut mutated = Mutated {
        reports: Vec::new(),
        notes: Vec::new(),
    };
    let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.to_owned()))?;
    // A broken survivors.yaml is one error for the tool, not one per version.
    if let Err(error) = load_survivors(suite.root(), tool) {
        mutated.reports.push(VersionReport {
            tool: tool.to_owned(),
            version: "(all)".to_owned(),
            run: Err(format!(
                "{error}; no survivor is accepted until the file loads"
            )),
        });
        return Ok(mutated);
    }
    for (version, compiled) in suite.compiled_versions(tool) {
        let run = match compiled {
            Ok(true) => {
                mutated.notes.push(format!("{tool} {version}: a text tool; mutants are of JSON documents, so none are derived"));
                continue;
            }
            Ok(false) => suite.mutant_run(tool, &version, Family::ALL, emit_dir, emitting),
            Err(error) => Err(error),
        };
        mutated.reports.push(VersionReport {
            tool: tool.to_owned(),
            version,
            run,
        });
    }
    Ok(mutated)
}
