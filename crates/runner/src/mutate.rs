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

use crate::progress::Progress;
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
    /// Show progress on stderr while the run goes (for a terminal; never in CI or when piped).
    pub progress: bool,
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
    let progress = Progress::new(options.progress, tools.len() as u64, "tools");
    for tool in &tools {
        mutate_tool(
            options,
            tool,
            (&emit_dir, emit_root.as_ref()),
            &mut reports,
            &mut notes,
        )?;
        progress.advance(|| format!("{} tool versions mutated", reports.len()));
    }
    progress.finish();
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

/// One tool's mutants, every version of it, into `reports` (and `notes` for a text tool).
fn mutate_tool(
    options: &MutateConfig,
    tool: &str,
    (emit_dir, emit_root): (&Path, Option<&RepoRoot>),
    reports: &mut Vec<VersionReport>,
    notes: &mut Vec<String>,
) -> Result<(), UsageError> {
    let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.to_owned()))?;
    // A broken survivors.yaml is one error for the tool, not one per version.
    if let Err(error) = load_survivors(suite.root(), tool) {
        reports.push(VersionReport {
            tool: tool.to_owned(),
            version: "(all)".to_owned(),
            run: Err(format!(
                "{error}; no survivor is accepted until the file loads"
            )),
        });
        return Ok(());
    }
    for (version, compiled) in suite.compiled_versions(tool) {
        let run = match compiled {
            Ok(true) => {
                notes.push(format!("{tool} {version}: a text tool; mutants are of JSON documents, so none are derived"));
                continue;
            }
            Ok(false) => {
                suite.mutant_run(tool, &version, Family::ALL, emit_dir, emit_root.is_some())
            }
            Err(error) => Err(error),
        };
        if let (Some(root), Ok(run)) = (emit_root, &run) {
            for (file, bytes) in &run.emitted {
                root.write(file, bytes)?;
            }
        }
        reports.push(VersionReport {
            tool: tool.to_owned(),
            version,
            run,
        });
    }
    Ok(())
}
