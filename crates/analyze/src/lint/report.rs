//! `toolgate lint`'s report: every contract version's findings, which `lint.yaml` accepts, and which
//! acceptances no longer match anything.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use toolgate_gate::internals::escape_hidden;

use super::{JudgedFinding, Rule, ToolLint, judge, lint_tool};
use crate::LintFormat;
use toolgate_repo::Repository;
use toolgate_repo::Status;
use toolgate_repo::json_report;
use toolgate_repo::text::{Tone, paint};
use toolgate_repo::{UsageError, plural, write_output};

/// The report's JSON Schema, published by `toolgate schema lint-report`; tests hold every report
/// to it.
pub const SCHEMA: &str = include_str!("../../schemas/lint-report.schema.json");

/// What `toolgate lint` was asked to do.
#[derive(Debug, Clone)]
pub struct LintConfig {
    /// Only this tool (default: every tool with a contract).
    pub tool: Option<String>,
    /// The repository root, holding contracts/.
    pub root: PathBuf,
    /// The report format.
    pub format: LintFormat,
    /// Colour the human report.
    pub color: bool,
}

/// Runs `toolgate lint`: passed when clean or every finding is accepted, failed on a finding
/// nobody accepted or a stale acceptance, unusable when a contract or `lint.yaml` cannot be read.
pub fn run(options: &LintConfig, out: &mut impl Write) -> Result<Status, UsageError> {
    let repository = Repository::open(&options.root)?.naming_relative();
    let tools = repository.select_tools(options.tool.as_deref())?;
    let linted: Vec<ToolLint> = tools
        .iter()
        .map(|tool| lint_tool(&repository, tool))
        .collect();
    let report = Report::of(&linted);
    let text = match options.format {
        LintFormat::Human => report.human(options.color),
        LintFormat::Json => report.json(),
        LintFormat::Sarif => report.sarif(&repository, options),
    };
    write_output(out, text.as_bytes())?;
    Ok(if !report.errors.is_empty() {
        Status::Unusable
    } else if report.unaccepted() > 0 || !report.stale.is_empty() {
        Status::Failed
    } else {
        Status::Passed
    })
}

/// One finding as reported.
#[derive(Debug, Serialize)]
struct Row {
    tool: String,
    version: String,
    file: String,
    pointer: String,
    rule: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    message: String,
    accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Debug, Serialize)]
struct Stale {
    file: String,
    line: u64,
}

struct Report {
    tools: usize,
    versions: usize,
    rows: Vec<Row>,
    stale: Vec<Stale>,
    errors: Vec<String>,
}

impl Report {
    fn of(linted: &[ToolLint]) -> Report {
        let mut report = Report {
            tools: linted.len(),
            versions: 0,
            rows: Vec::new(),
            stale: Vec::new(),
            errors: Vec::new(),
        };
        for tool in linted {
            report.versions += tool.versions.len();
            report.errors.extend(tool.errors());
            let findings = tool.findings();
            let (judged, stale) = match &tool.accepted {
                Ok(accepted) => {
                    let (judged, stale) = judge(&findings, accepted, &tool.read_versions());
                    let file = accepted.file.display().to_string();
                    (
                        judged,
                        stale
                            .into_iter()
                            .map(|line| Stale {
                                file: file.clone(),
                                line,
                            })
                            .collect(),
                    )
                }
                Err(_) => (
                    findings
                        .iter()
                        .map(|finding| JudgedFinding {
                            finding,
                            accepted: None,
                        })
                        .collect(),
                    Vec::new(),
                ),
            };
            report.stale.extend(stale);
            report.rows.extend(judged.into_iter().map(|judged| Row {
                tool: judged.finding.tool.clone(),
                version: judged.finding.version.clone(),
                file: judged.finding.file.clone(),
                pointer: judged.finding.pointer.clone(),
                rule: judged.finding.rule.name(),
                field: judged.finding.field.clone(),
                message: judged.finding.message.clone(),
                accepted: judged.accepted.is_some(),
                reason: judged.accepted,
            }));
        }
        report
    }

    fn unaccepted(&self) -> usize {
        self.rows.iter().filter(|row| !row.accepted).count()
    }

    fn human(&self, color: bool) -> String {
        let mut out = String::new();
        let accepted = self.rows.len() - self.unaccepted();
        let _ = writeln!(
            out,
            "{} {}, {}: {} ({accepted} accepted)",
            paint(color, Tone::Strong, "toolgate lint:"),
            plural(self.tools, "tool"),
            plural(self.versions, "contract version"),
            plural(self.rows.len(), "finding")
        );
        for row in self
            .rows
            .iter()
            .filter(|row| !row.accepted)
            .chain(self.rows.iter().filter(|row| row.accepted))
        {
            let field = row
                .field
                .as_ref()
                .map(|field| format!(" field `{}`", escape_hidden(field)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "\n{} {} {}#{} [{}]{field}\n    {}",
                paint(color, Tone::Strong, &escape_hidden(&row.tool)),
                row.version,
                escape_hidden(&row.file),
                escape_hidden(&row.pointer),
                paint(
                    color,
                    if row.accepted { Tone::Good } else { Tone::Bad },
                    row.rule
                ),
                escape_hidden(&row.message)
            );
            match &row.reason {
                Some(reason) => {
                    let _ = writeln!(out, "    accepted: {}", escape_hidden(reason));
                }
                None => {
                    let _ = writeln!(out, "    {}", fix_words(row.rule, &row.tool));
                }
            }
        }
        for stale in &self.stale {
            let _ = writeln!(
                out,
                "\n{}:{}: {}",
                escape_hidden(&stale.file),
                stale.line,
                paint(color, Tone::Bad, STALE_WORDS)
            );
        }
        for error in &self.errors {
            let _ = writeln!(
                out,
                "\n{} {}",
                paint(color, Tone::Bad, "error:"),
                escape_hidden(error)
            );
        }
        if self.rows.is_empty() && self.errors.is_empty() {
            let rules: Vec<&str> = Rule::ALL.iter().map(|rule| rule.name()).collect();
            let _ = writeln!(
                out,
                "{} {}",
                paint(color, Tone::Good, "clean:"),
                rules.join(", ")
            );
        }
        out
    }

    fn json(&self) -> String {
        #[derive(Serialize)]
        struct Summary {
            tools: usize,
            versions: usize,
            findings: usize,
            accepted: usize,
            unaccepted: usize,
            stale_acceptances: usize,
        }
        #[derive(Serialize)]
        struct Document<'a> {
            format_version: u32,
            summary: Summary,
            findings: &'a [Row],
            stale_acceptances: &'a [Stale],
            errors: &'a [String],
        }
        json_report::render(&Document {
            format_version: json_report::FORMAT_VERSION,
            summary: Summary {
                tools: self.tools,
                versions: self.versions,
                findings: self.rows.len(),
                accepted: self.rows.len() - self.unaccepted(),
                unaccepted: self.unaccepted(),
                stale_acceptances: self.stale.len(),
            },
            findings: &self.rows,
            stale_acceptances: &self.stale,
            errors: &self.errors,
        })
    }
}

/// What a stale acceptance means and what to do.
const STALE_WORDS: &str =
    "this accepted finding is no longer found in the versions it names; remove the entry";

/// How to resolve a finding of `rule` (a rule name) in `tool`'s contract: every report says it
/// in these words (an open object is never accepted in `lint.yaml`, which refuses it).
pub fn fix_words(rule: &str, tool: &str) -> String {
    if rule == Rule::ObjectOpen.name() {
        "fix it in a new contract version, or, where the upstream adds members on purpose, declare the place under the shape's `tolerate:` with a reason".to_owned()
    } else {
        format!(
            "fix it in a new contract version, or accept it in contracts/{}/lint.yaml with a reason",
            escape_hidden(tool)
        )
    }
}

impl Report {
    /// The report as a SARIF log: a rule per lint rule, each finding at the line its JSON
    /// pointer is written on (accepted ones suppressed with their reason), each stale acceptance
    /// at its `lint.yaml` line, and what could not be read as the run's notifications.
    fn sarif(&self, repository: &Repository, options: &LintConfig) -> String {
        use toolgate_repo::sarif::{Finding, Level, Log, Place, Rule as SarifRule};
        const STALE: &str = "stale_acceptance";
        let mut rules: Vec<SarifRule> = Rule::ALL
            .iter()
            .map(|rule| SarifRule {
                id: rule.name(),
                summary: rule.describe().to_owned(),
                help: fix_words(rule.name(), "TOOL"),
                level: Level::Error,
            })
            .collect();
        rules.push(SarifRule {
            id: STALE,
            summary: "An entry of lint.yaml accepts a finding no version it names has any more."
                .to_owned(),
            help: STALE_WORDS.to_owned(),
            level: Level::Error,
        });
        let mut texts = std::collections::BTreeMap::new();
        let mut findings: Vec<Finding> = self
            .rows
            .iter()
            .map(|row| {
                let file = std::path::Path::new(toolgate_repo::CONTRACTS_DIR)
                    .join(&row.tool)
                    .join(&row.version)
                    .join(&row.file);
                let text: &String = texts
                    .entry(file.clone())
                    .or_insert_with(|| repository.root().read_text(&file).unwrap_or_default());
                let field = row
                    .field
                    .as_ref()
                    .map(|field| format!(" (field `{field}`)"))
                    .unwrap_or_default();
                Finding {
                    rule: Rule::from_name(row.rule).map_or(row.rule, Rule::name),
                    level: Level::Error,
                    message: format!(
                        "{} {}{field}: {}\n{}",
                        row.tool,
                        row.version,
                        row.message,
                        fix_words(row.rule, &row.tool)
                    ),
                    place: Some(Place::pointer(file, text, &row.pointer)),
                    accepted: row.reason.clone(),
                    identity: format!(
                        "{}\u{0}{}",
                        row.version,
                        row.field.as_deref().unwrap_or_default()
                    ),
                }
            })
            .collect();
        findings.extend(self.stale.iter().map(|stale| Finding {
            rule: STALE,
            level: Level::Error,
            message: STALE_WORDS.to_owned(),
            place: Some(Place {
                file: stale.file.clone().into(),
                line: usize::try_from(stale.line).ok(),
                pointer: None,
            }),
            accepted: None,
            identity: stale.line.to_string(),
        }));
        Log {
            category: match &options.tool {
                Some(tool) => format!("toolgate/lint/{tool}"),
                None => "toolgate/lint".to_owned(),
            },
            root: options.root.clone(),
            rules,
            findings,
            errors: self.errors.clone(),
            fallback: Place::file(toolgate_repo::CONTRACTS_DIR),
        }
        .render()
    }
}
