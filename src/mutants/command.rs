//! `toolgate mutate`: every mutant of every admitted accepted and legacy fixture, for every
//! published version it runs against, through the gate; a report of survivors, misplaced
//! rejections, leaks and stale acceptances; `--emit` writes every mutant as a file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toolgate_gate::internals::escape_hidden;

use super::Family;
use super::run::{Finding, Run, Verdict};
use crate::confine::RepoRoot;
use crate::error::{UsageError, plural, write_output};
use crate::mutants::survivors;
use crate::repo::Repository;
use crate::status::Status;
use crate::suite::mutant_trials::{DEFAULT_EMIT_DIR, detail, headline};
use crate::suite::{Scope, Suite};

/// `toolgate mutate`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct MutateOptions {
    /// Only this tool (default: every tool with a contract).
    pub tool: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The report format.
    #[arg(long, value_enum, default_value_t = MutateFormat::Human)]
    pub format: MutateFormat,
    /// Write every mutant as a file under DIR, as TOOL/VERSION/CLASS/CASE/MUTATION-N.json,
    /// so the `toolgate check` commands in the report run as printed.
    #[arg(long, value_name = "DIR")]
    pub emit: Option<PathBuf>,
}

/// `toolgate mutate --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MutateFormat {
    /// For a terminal.
    Human,
    /// Stable and documented field by field (see the README).
    Json,
}

/// The JSON report's format version.
pub const FORMAT_VERSION: u32 = 1;

/// One tool version's run, or why it could not run.
struct VersionReport {
    tool: String,
    version: String,
    run: Result<Run, String>,
}

/// Runs `toolgate mutate`: passed with no leak, no unaccepted survivor and no stale acceptance,
/// failed otherwise, unusable when a contract or `survivors.yaml` cannot be read.
pub fn run(options: &MutateOptions, out: &mut impl Write) -> Result<Status, UsageError> {
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
    for tool in &tools {
        let suite = Suite::discover_scoped(&options.root, Scope::Tool(tool.clone()))?;
        // A broken survivors.yaml is one error for the tool, not one per version.
        if let Err(error) = survivors::load(suite.root(), tool) {
            reports.push(VersionReport {
                tool: tool.clone(),
                version: "(all)".to_owned(),
                run: Err(format!(
                    "{error}; no survivor is accepted until the file loads"
                )),
            });
            continue;
        }
        for (version, compiled) in suite.compiled_versions(tool) {
            let run = match compiled {
                Ok(true) => {
                    notes.push(format!("{tool} {version}: a text tool; mutants are of JSON documents, so none are derived"));
                    continue;
                }
                Ok(false) => {
                    suite.mutant_run(tool, &version, Family::ALL, &emit_dir, emit_root.is_some())
                }
                Err(error) => Err(error),
            };
            if let (Some(root), Ok(run)) = (&emit_root, &run) {
                for (file, bytes) in &run.emitted {
                    root.write(file, bytes).map_err(UsageError::new)?;
                }
            }
            reports.push(VersionReport {
                tool: tool.clone(),
                version,
                run,
            });
        }
    }
    let text = match options.format {
        MutateFormat::Human => human(&reports, &notes, options.emit.as_deref()),
        MutateFormat::Json => json(&reports, &notes),
    };
    write_output(out, text.as_bytes())?;
    let totals = Totals::of(&reports);
    Ok(if totals.errors > 0 {
        Status::Unusable
    } else if totals.leaks > 0 || totals.survivors > totals.accepted_survivors || totals.stale > 0 {
        Status::Failed
    } else {
        Status::Passed
    })
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

#[derive(Debug, Default, Serialize)]
struct Totals {
    tools: usize,
    versions: usize,
    seeds: usize,
    mutants: usize,
    rejected: usize,
    survivors: usize,
    accepted_survivors: usize,
    misplaced: usize,
    leaks: usize,
    stale: usize,
    #[serde(skip)]
    errors: usize,
}

impl Totals {
    fn of(reports: &[VersionReport]) -> Totals {
        let mut totals = Totals::default();
        let mut tools: Vec<&str> = reports.iter().map(|report| report.tool.as_str()).collect();
        tools.dedup();
        totals.tools = tools.len();
        for report in reports {
            totals.versions += 1;
            let Ok(run) = &report.run else {
                totals.errors += 1;
                continue;
            };
            totals.seeds += run.seeds;
            totals.mutants += run.mutants;
            totals.rejected += run.rejected;
            totals.stale += run.stale.len();
            for finding in &run.findings {
                match &finding.verdict {
                    Verdict::Survivor(accepted) => {
                        totals.survivors += 1;
                        totals.accepted_survivors += usize::from(accepted.is_some());
                    }
                    Verdict::Misplaced { .. } => totals.misplaced += 1,
                    Verdict::Leak(_) => totals.leaks += 1,
                }
            }
        }
        totals
    }
}

/// Findings of one kind at one place, however many fixtures show them.
fn grouped(run: &Run, keep: impl Fn(&Verdict) -> bool) -> Vec<(usize, &Finding)> {
    let mut groups: BTreeMap<(Family, &str, String), (usize, &Finding)> = BTreeMap::new();
    for finding in run.findings.iter().filter(|finding| keep(&finding.verdict)) {
        let kind = match &finding.verdict {
            Verdict::Survivor(accepted) => format!("survivor {accepted:?}"),
            Verdict::Misplaced { layer, rule } => format!("misplaced {layer:?} {rule}"),
            Verdict::Leak(leaks) => format!("leak {leaks:?}"),
        };
        groups
            .entry((finding.family, finding.pointer.as_str(), kind))
            .and_modify(|(count, _)| *count += 1)
            .or_insert((1, finding));
    }
    groups.into_values().collect()
}

fn human(reports: &[VersionReport], notes: &[String], emit: Option<&Path>) -> String {
    let totals = Totals::of(reports);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "toolgate mutate: {}, {}, {} as seeds, {}",
        plural(totals.tools, "tool"),
        plural(totals.versions, "contract version"),
        plural(totals.seeds, "admitted fixture"),
        plural(totals.mutants, "mutant")
    );
    let _ = writeln!(
        out,
        "  rejected {} · survivors {} ({} accepted) · misplaced {} · leaks {}{}\n",
        totals.rejected,
        totals.survivors,
        totals.accepted_survivors,
        totals.misplaced,
        totals.leaks,
        if totals.stale > 0 {
            format!(" · stale acceptances {}", totals.stale)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "  {:<20} {:<8} {:>6} {:>8} {:>9} {:>10} {:>10} {:>6}",
        "tool", "version", "seeds", "mutants", "rejected", "survivors", "misplaced", "leaks"
    );
    for report in reports {
        let tool = escape_hidden(&report.tool);
        match &report.run {
            Ok(run) => {
                let count = |keep: fn(&Verdict) -> bool| {
                    run.findings
                        .iter()
                        .filter(|finding| keep(&finding.verdict))
                        .count()
                };
                let _ = writeln!(
                    out,
                    "  {tool:<20} {:<8} {:>6} {:>8} {:>9} {:>10} {:>10} {:>6}",
                    report.version,
                    run.seeds,
                    run.mutants,
                    run.rejected,
                    count(|verdict| matches!(verdict, Verdict::Survivor(_))),
                    count(|verdict| matches!(verdict, Verdict::Misplaced { .. })),
                    count(|verdict| matches!(verdict, Verdict::Leak(_))),
                );
            }
            Err(error) => {
                let _ = writeln!(
                    out,
                    "  {tool:<20} {:<8} cannot run: {}",
                    report.version,
                    escape_hidden(error)
                );
            }
        }
    }
    for note in notes {
        let _ = writeln!(out, "  note: {}", escape_hidden(note));
    }
    let runs = || reports.iter().filter_map(|report| report.run.as_ref().ok());
    let section = |out: &mut String, title: &str, keep: fn(&Verdict) -> bool, full: bool| {
        let groups: Vec<(usize, &Finding, usize)> = runs()
            .flat_map(|run| {
                grouped(run, keep)
                    .into_iter()
                    .map(|(count, finding)| (count, finding, run.seeds))
            })
            .collect();
        if groups.is_empty() {
            return;
        }
        let _ = writeln!(out, "\n{title}");
        for (count, finding, seeds) in groups {
            let _ = writeln!(
                out,
                "  {} {}",
                escape_hidden(&finding.tool),
                escape_hidden(&headline(finding, Some((count, seeds))))
            );
            match &finding.verdict {
                Verdict::Survivor(Some(reason)) => {
                    let _ = writeln!(out, "      accepted: {}", escape_hidden(reason));
                }
                Verdict::Survivor(None) => {
                    let _ = writeln!(
                        out,
                        "      not accepted: reject it in a new contract version, or accept it in {} with a reason",
                        survivors::path(&finding.tool).display()
                    );
                }
                Verdict::Misplaced { layer, rule } => {
                    let expected: Vec<&str> = finding
                        .family
                        .expected_layers()
                        .iter()
                        .map(|layer| layer.as_str())
                        .collect();
                    let wanted = if expected.is_empty() {
                        "past the schema".to_owned()
                    } else {
                        format!("at {}", expected.join(" or "))
                    };
                    let _ = writeln!(
                        out,
                        "      rejected at {layer} (rule {}), expected {wanted}",
                        escape_hidden(rule)
                    );
                }
                Verdict::Leak(leaks) => {
                    for leak in leaks {
                        let _ = writeln!(out, "      LEAK: {}", escape_hidden(leak));
                    }
                    let _ = writeln!(
                        out,
                        "      agent saw: {}",
                        escape_hidden(&String::from_utf8_lossy(&finding.agent_bytes))
                    );
                }
            }
            if full {
                for line in detail(finding).lines() {
                    let line = match (emit, line.strip_prefix("reproduce: ")) {
                        // Already emitted: the check command alone runs as printed.
                        (Some(_), Some(command)) => format!(
                            "reproduce: {}",
                            command.rsplit(" && ").next().unwrap_or(command)
                        ),
                        _ => line.to_owned(),
                    };
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
    };
    section(
        &mut out,
        "LEAKS (always a failure)",
        |verdict| matches!(verdict, Verdict::Leak(_)),
        true,
    );
    section(
        &mut out,
        "SURVIVORS, NOT ACCEPTED",
        |verdict| matches!(verdict, Verdict::Survivor(None)),
        true,
    );
    section(
        &mut out,
        "MISPLACED (rejected, but not where the mutation belongs)",
        |verdict| matches!(verdict, Verdict::Misplaced { .. }),
        true,
    );
    section(
        &mut out,
        "SURVIVORS, ACCEPTED",
        |verdict| matches!(verdict, Verdict::Survivor(Some(_))),
        false,
    );
    let stale: Vec<_> = runs().flat_map(|run| &run.stale).collect();
    if !stale.is_empty() {
        let _ = writeln!(out, "\nSTALE ACCEPTANCES");
        for stale in stale {
            let _ = writeln!(out, "  {}", escape_hidden(&stale.to_string()));
        }
    }
    if let Some(dir) = emit {
        let _ = writeln!(out, "\nevery mutant is written under {}", dir.display());
    }
    out
}

#[derive(Serialize)]
struct JsonReport<'a> {
    format_version: u32,
    summary: Totals,
    families: Vec<JsonFamily>,
    survivors: Vec<JsonFinding<'a>>,
    misplaced: Vec<JsonFinding<'a>>,
    leaks: Vec<JsonFinding<'a>>,
    stale_acceptances: Vec<JsonStale<'a>>,
    errors: Vec<String>,
    notes: &'a [String],
}

#[derive(Serialize)]
struct JsonFamily {
    mutation: &'static str,
    level: &'static str,
    expected_layers: Vec<&'static str>,
    mutants: usize,
    rejected: usize,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    tool: &'a str,
    version: &'a str,
    fixture: String,
    mutation: &'static str,
    pointer: &'a str,
    what: &'a str,
    mutant_file: String,
    reproduce: &'a str,
    agent_bytes: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    leaks: Option<&'a [String]>,
}

#[derive(Serialize)]
struct JsonStale<'a> {
    file: String,
    line: u64,
    mutation: &'static str,
    pointer: &'a str,
    version: &'a str,
}

fn json(reports: &[VersionReport], notes: &[String]) -> String {
    let runs: Vec<&Run> = reports
        .iter()
        .filter_map(|report| report.run.as_ref().ok())
        .collect();
    let findings = |keep: fn(&Verdict) -> bool| -> Vec<JsonFinding<'_>> {
        runs.iter()
            .flat_map(|run| &run.findings)
            .filter(|finding| keep(&finding.verdict))
            .map(|finding| {
                let mut entry = JsonFinding {
                    tool: &finding.tool,
                    version: &finding.version,
                    fixture: finding.fixture.display().to_string(),
                    mutation: finding.family.name(),
                    pointer: &finding.pointer,
                    what: &finding.what,
                    mutant_file: finding.file.display().to_string(),
                    reproduce: &finding.reproduce,
                    agent_bytes: String::from_utf8_lossy(&finding.agent_bytes).into_owned(),
                    accepted: None,
                    reason: None,
                    layer: None,
                    rule: None,
                    leaks: None,
                };
                match &finding.verdict {
                    Verdict::Survivor(reason) => {
                        entry.accepted = Some(reason.is_some());
                        entry.reason = reason.as_deref();
                    }
                    Verdict::Misplaced { layer, rule } => {
                        entry.layer = Some(layer.as_str());
                        entry.rule = Some(rule);
                    }
                    Verdict::Leak(leaks) => entry.leaks = Some(leaks),
                }
                entry
            })
            .collect()
    };
    let families = Family::ALL
        .iter()
        .map(|family| {
            let (mutants, rejected) = runs.iter().fold((0, 0), |(mutants, rejected), run| {
                let (m, r) = run.per_family.get(family).copied().unwrap_or_default();
                (mutants + m, rejected + r)
            });
            JsonFamily {
                mutation: family.name(),
                level: match family.level() {
                    super::Level::Raw => "raw",
                    super::Level::Value => "value",
                    super::Level::Bound => "bound",
                },
                expected_layers: family
                    .expected_layers()
                    .iter()
                    .map(|layer| layer.as_str())
                    .collect(),
                mutants,
                rejected,
            }
        })
        .collect();
    let report = JsonReport {
        format_version: FORMAT_VERSION,
        summary: Totals::of(reports),
        families,
        survivors: findings(|verdict| matches!(verdict, Verdict::Survivor(_))),
        misplaced: findings(|verdict| matches!(verdict, Verdict::Misplaced { .. })),
        leaks: findings(|verdict| matches!(verdict, Verdict::Leak(_))),
        stale_acceptances: runs
            .iter()
            .flat_map(|run| &run.stale)
            .map(|stale| JsonStale {
                file: stale.file.display().to_string(),
                line: stale.line,
                mutation: stale.family.name(),
                pointer: &stale.pointer,
                version: &stale.version,
            })
            .collect(),
        errors: reports
            .iter()
            .filter_map(|report| {
                report
                    .run
                    .as_ref()
                    .err()
                    .map(|error| format!("{} {}: {error}", report.tool, report.version))
            })
            .collect(),
        notes,
    };
    let mut text = serde_json::to_string_pretty(&report).expect("the report always serializes");
    text.push('\n');
    text
}
