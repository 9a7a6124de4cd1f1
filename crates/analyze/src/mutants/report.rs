//! `toolgate mutate`'s report: per tool version, the mutants judged, then the survivors, misplaced
//! rejections, leaks and stale acceptances, for a terminal or as stable JSON; and the headline and
//! detail a failing mutant trial of `toolgate test` shows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use toolgate_gate::internals::escape_hidden;
use toolgate_repo::Status;
use toolgate_repo::json_report;
use toolgate_repo::plural;
use toolgate_repo::text::{Tone, paint};

use super::run::{FamilyCount, MutantFinding, MutantVerdict, Run};
use super::{Family, shown_pointer, survivors};

/// The report's JSON Schema, published by `toolgate schema mutate-report`; tests hold every report
/// to it.
pub const SCHEMA: &str = include_str!("../../schemas/mutate-report.schema.json");

/// Where reproduce commands say mutants are written: `toolgate mutate --emit mutants`.
pub const DEFAULT_EMIT_DIR: &str = "mutants";

/// How many characters of a mutant a failure shows.
pub const MUTANT_SHOWN: usize = 240;

/// How many of a reported mutant's bytes a run keeps: enough for its first [`MUTANT_SHOWN`]
/// characters and one more (which says it goes on) however the bytes decode, since a character
/// takes at most four bytes (and an invalid sequence, shown as U+FFFD, at most three). A suite of
/// thousands of fixtures can have hundreds of thousands of accepted survivors; keeping each whole
/// held gigabytes. `--emit` writes every mutant whole.
pub const MUTANT_KEPT_BYTES: usize = 4 * (MUTANT_SHOWN + 1);

/// One tool version's run, or why it could not run.
#[derive(Debug)]
pub struct VersionReport {
    /// The tool.
    pub tool: String,
    /// The contract version, or `(all)` when the tool as a whole could not run.
    pub version: String,
    /// The judged mutants.
    pub run: Result<Run, String>,
}

/// Everything one `toolgate mutate` found.
#[derive(Debug, Default)]
pub struct MutateReport {
    /// Each tool version's run.
    pub reports: Vec<VersionReport>,
    /// What someone should know that is not a finding (a text tool has no mutants).
    pub notes: Vec<String>,
}

impl MutateReport {
    /// Passed with no leak, no unaccepted survivor and no stale acceptance; failed otherwise;
    /// unusable when a contract or `survivors.yaml` could not be read.
    pub fn status(&self) -> Status {
        let totals = Totals::of(&self.reports);
        if totals.errors > 0 {
            Status::Unusable
        } else {
            Status::passed_if(
                totals.leaks == 0
                    && totals.survivors == totals.accepted_survivors
                    && totals.stale == 0,
            )
        }
    }

    /// For a terminal (coloured when `color`); `emit` is where `--emit` wrote every mutant, if
    /// it did.
    pub fn human(&self, emit: Option<&Path>, color: bool) -> String {
        human(&self.reports, &self.notes, emit, color)
    }

    /// Stable and documented field by field (`toolgate schema mutate-report`).
    pub fn json(&self) -> String {
        json(&self.reports, &self.notes)
    }
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
    places_left_out: usize,
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
            totals.places_left_out += run.left_out;
            totals.stale += run.stale.len();
            for finding in &run.findings {
                match &finding.verdict {
                    MutantVerdict::Survivor(accepted) => {
                        totals.survivors += 1;
                        totals.accepted_survivors += usize::from(accepted.is_some());
                    }
                    MutantVerdict::Misplaced { .. } => totals.misplaced += 1,
                    MutantVerdict::Leak(_) => totals.leaks += 1,
                }
            }
        }
        totals
    }
}

/// Findings of one kind at one place, however many fixtures show them.
fn grouped(run: &Run, keep: impl Fn(&MutantFinding) -> bool) -> Vec<(usize, &MutantFinding)> {
    let mut groups: BTreeMap<(Family, &str, String), (usize, &MutantFinding)> = BTreeMap::new();
    for finding in run.findings.iter().filter(|finding| keep(finding)) {
        let kind = match &finding.verdict {
            MutantVerdict::Survivor(accepted) => format!("survivor {accepted:?}"),
            MutantVerdict::Misplaced { layer, rule } => format!("misplaced {layer:?} {rule}"),
            MutantVerdict::Leak(leaks) => format!("leak {leaks:?}"),
        };
        groups
            .entry((finding.family, finding.pointer.as_str(), kind))
            .and_modify(|(count, _)| *count += 1)
            .or_insert((1, finding));
    }
    groups.into_values().collect()
}

fn human(reports: &[VersionReport], notes: &[String], emit: Option<&Path>, color: bool) -> String {
    let totals = Totals::of(reports);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}, {}, {} as seeds, {}",
        paint(color, Tone::Strong, "toolgate mutate:"),
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
                let count = |keep: fn(&MutantVerdict) -> bool| {
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
                    count(|verdict| matches!(verdict, MutantVerdict::Survivor(_))),
                    count(|verdict| matches!(verdict, MutantVerdict::Misplaced { .. })),
                    count(|verdict| matches!(verdict, MutantVerdict::Leak(_))),
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
    if totals.places_left_out > 0 {
        let _ = writeln!(out, "  note: {}", left_out_note(totals.places_left_out));
    }
    for note in notes {
        let _ = writeln!(out, "  note: {}", escape_hidden(note));
    }
    let runs = || reports.iter().filter_map(|report| report.run.as_ref().ok());
    let section = |out: &mut String,
                   (title, tone): (&str, Tone),
                   keep: fn(&MutantFinding) -> bool,
                   full: bool| {
        let groups: Vec<(usize, &MutantFinding, usize)> = runs()
            .flat_map(|run| {
                grouped(run, keep)
                    .into_iter()
                    .map(|(count, finding)| (count, finding, run.seeds))
            })
            .collect();
        if groups.is_empty() {
            return;
        }
        let _ = writeln!(out, "\n{}", paint(color, tone, title));
        for (count, finding, seeds) in groups {
            let _ = writeln!(
                out,
                "  {} {}",
                escape_hidden(&finding.tool),
                escape_hidden(&headline(finding, Some((count, seeds))))
            );
            match &finding.verdict {
                MutantVerdict::Survivor(Some(reason)) => {
                    let _ = writeln!(out, "      accepted: {}", escape_hidden(reason));
                }
                MutantVerdict::Survivor(None) if finding.projected => {
                    let _ = writeln!(
                        out,
                        "      not accepted: the agent sees this place; reject it in a new contract version, or accept it in {} with a reason",
                        survivors::path(&finding.tool).display()
                    );
                }
                MutantVerdict::Survivor(None) => {
                    let _ = writeln!(
                        out,
                        "      not accepted: no promised field reads this place; reject it in a new contract version, or accept the subtree the agent never sees in {} (`- pointer: {}/**` with a reason)",
                        survivors::path(&finding.tool).display(),
                        escape_hidden(top_member(&finding.pointer))
                    );
                }
                MutantVerdict::Misplaced { layer, rule } => {
                    let _ = writeln!(
                        out,
                        "      rejected at {layer} (rule {}), expected {}",
                        escape_hidden(rule),
                        escape_hidden(&finding.expected)
                    );
                }
                MutantVerdict::Leak(leaks) => {
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
        ("LEAKS (always a failure)", Tone::Bad),
        |finding| matches!(finding.verdict, MutantVerdict::Leak(_)),
        true,
    );
    section(
        &mut out,
        ("SURVIVORS THE AGENT CAN SEE, NOT ACCEPTED", Tone::Bad),
        |finding| finding.projected && matches!(finding.verdict, MutantVerdict::Survivor(None)),
        true,
    );
    section(
        &mut out,
        (
            "UPSTREAM DRIFT, NOT ACCEPTED (survivors where no promised field reads)",
            Tone::Bad,
        ),
        |finding| !finding.projected && matches!(finding.verdict, MutantVerdict::Survivor(None)),
        true,
    );
    section(
        &mut out,
        (
            "MISPLACED (rejected, but not where the mutation belongs)",
            Tone::Warn,
        ),
        |finding| matches!(finding.verdict, MutantVerdict::Misplaced { .. }),
        true,
    );
    section(
        &mut out,
        ("SURVIVORS, ACCEPTED", Tone::Good),
        |finding| matches!(finding.verdict, MutantVerdict::Survivor(Some(_))),
        false,
    );
    let stale: Vec<_> = runs().flat_map(|run| &run.stale).collect();
    if !stale.is_empty() {
        let _ = writeln!(out, "\n{}", paint(color, Tone::Bad, "STALE ACCEPTANCES"));
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
    places_left_out: usize,
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
    projected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    accepted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    layer: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    leaks: Option<&'a [String]>,
}

#[derive(Serialize)]
struct JsonStale<'a> {
    file: String,
    line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    mutation: Option<&'static str>,
    pointer: &'a str,
    version: &'a str,
    cause: &'static str,
}

fn json(reports: &[VersionReport], notes: &[String]) -> String {
    let runs: Vec<&Run> = reports
        .iter()
        .filter_map(|report| report.run.as_ref().ok())
        .collect();
    let findings = |keep: fn(&MutantVerdict) -> bool| -> Vec<JsonFinding<'_>> {
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
                    projected: finding.projected,
                    accepted: None,
                    reason: None,
                    layer: None,
                    rule: None,
                    expected: None,
                    leaks: None,
                };
                match &finding.verdict {
                    MutantVerdict::Survivor(reason) => {
                        entry.accepted = Some(reason.is_some());
                        entry.reason = reason.as_deref();
                    }
                    MutantVerdict::Misplaced { layer, rule } => {
                        entry.layer = Some(layer.as_str());
                        entry.rule = Some(rule);
                        entry.expected = Some(&finding.expected);
                    }
                    MutantVerdict::Leak(leaks) => entry.leaks = Some(leaks),
                }
                entry
            })
            .collect()
    };
    let families = Family::ALL
        .iter()
        .map(|family| {
            let count = runs.iter().fold(FamilyCount::default(), |sum, run| {
                let count = run.per_family.get(family).copied().unwrap_or_default();
                FamilyCount {
                    mutants: sum.mutants + count.mutants,
                    rejected: sum.rejected + count.rejected,
                    left_out: sum.left_out + count.left_out,
                }
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
                mutants: count.mutants,
                rejected: count.rejected,
                places_left_out: count.left_out,
            }
        })
        .collect();
    json_report::render(&JsonReport {
        format_version: json_report::FORMAT_VERSION,
        summary: Totals::of(reports),
        families,
        survivors: findings(|verdict| matches!(verdict, MutantVerdict::Survivor(_))),
        misplaced: findings(|verdict| matches!(verdict, MutantVerdict::Misplaced { .. })),
        leaks: findings(|verdict| matches!(verdict, MutantVerdict::Leak(_))),
        stale_acceptances: runs
            .iter()
            .flat_map(|run| &run.stale)
            .map(|stale| JsonStale {
                file: stale.file.display().to_string(),
                line: stale.line,
                mutation: stale.family.map(Family::name),
                pointer: &stale.pointer,
                version: &stale.version,
                cause: if stale.made { "rejected" } else { "no_mutant" },
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
    })
}

/// The first member of a pointer (`/head/repo/name` → `/head`), the subtree a drift entry
/// usually names.
fn top_member(pointer: &str) -> &str {
    match pointer[1.min(pointer.len())..].find('/') {
        Some(at) => &pointer[..at + 1],
        None => pointer,
    }
}

/// What a report says when the per-family sample left places out.
pub fn left_out_note(places: usize) -> String {
    let (count, were) = if places == 1 {
        ("1 place".to_owned(), "was")
    } else {
        (format!("{places} places"), "were")
    };
    format!(
        "{count} {were} not mutated: a family mutates at most {} places of one fixture (fewer of a fixture over 16 KiB, so its mutants stay under 1 MiB), an evenly spaced sample that is the same on every run",
        super::PLACES_PER_FAMILY
    )
}

/// `v2: mutant extra_property at /data (added member …), derived from 5 of 6 admitted fixtures
/// (e.g. fixtures/…)`.
pub fn headline(finding: &MutantFinding, counted: Option<(usize, usize)>) -> String {
    let source = match counted {
        Some((count, seeds)) if seeds > 1 => format!(
            "derived from {count} of {seeds} admitted fixtures (e.g. {})",
            finding.fixture.display()
        ),
        _ => format!("derived from {}", finding.fixture.display()),
    };
    format!(
        "{}: mutant {} at {} ({}), {source}",
        finding.version,
        finding.family,
        shown_pointer(&finding.pointer),
        finding.what
    )
}

/// The mutant's bytes (escaped, capped) and the commands that reproduce its decision.
pub fn detail(finding: &MutantFinding) -> String {
    let bytes = String::from_utf8_lossy(&finding.bytes);
    let mut shown: String = bytes.chars().take(MUTANT_SHOWN).collect();
    if bytes.chars().count() > MUTANT_SHOWN {
        shown.push('…');
    }
    format!(
        "mutant: {}\nreproduce: toolgate mutate {} --emit {DEFAULT_EMIT_DIR} && {}",
        escape_hidden(&shown),
        finding.tool,
        escape_hidden(&finding.reproduce)
    )
}
