//! `toolgate diff`: reviewing a contract bump.
//!
//! Two versions of a tool's contract are compared on everything that decides what is admitted
//! and what the agent sees: every schema (after `$ref`), the limits, the legacy shapes, the rules,
//! the promised fields and their order, the agent schema and the retry policy. Each difference is
//! a [`change::Change`] with its effect on four verdicts (upstream breaking, upstream loosened,
//! agent widened, agent narrowed), decided on a model of the schemas ([`crate::model`], with pattern
//! inclusion by DFA in [`crate::model::strings`]) or reported as undecidable. A verdict is true only when a
//! witness built from one of the tool's fixtures ([`witness`]) is confirmed by both compiled
//! contracts through the real gate. Every fixture is also replayed through both versions
//! ([`replay`]). The report is human, markdown (a pull-request comment) or JSON ([`report`]).

pub mod answer;
pub mod change;
pub mod contracts;
pub mod replay;
pub mod report;
pub mod schemas;
pub mod witness;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::admission::{RequestFiles, prepare};
use crate::error::{UsageError, write_output};
use crate::fixture::{self, FixtureClass};
use crate::model::{Version, load};
use crate::repo::{Repository, VersionDir};
use crate::status::Status;
pub use answer::{Answer, Report};
use change::{Change, Effect, Verdict};
use witness::{Base, Finding};

/// How `toolgate diff` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DiffFormat {
    /// For a terminal.
    #[default]
    Human,
    /// Ready to paste as a pull-request comment.
    Markdown,
    /// Stable and documented field by field (see the README).
    Json,
}

/// A verdict `--fail-on` can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Some response FROM admits, TO rejects.
    Breaking,
    /// Some response TO admits, FROM rejects.
    Loosened,
    /// Some agent-visible output possible under TO is impossible under FROM.
    Widened,
    /// Some output possible under FROM is impossible under TO.
    Narrowed,
}

impl FailOn {
    fn verdict(self) -> Verdict {
        match self {
            FailOn::Breaking => Verdict::UpstreamBreaking,
            FailOn::Loosened => Verdict::UpstreamLoosened,
            FailOn::Widened => Verdict::AgentWidened,
            FailOn::Narrowed => Verdict::AgentNarrowed,
        }
    }
}

/// What `toolgate diff` was asked to do: its command-line arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DiffOptions {
    /// The tool whose contract versions to compare (a folder under contracts/).
    pub tool: String,
    /// The older version, e.g. `v1` (default: the second newest).
    pub from: Option<String>,
    /// The newer version, e.g. `v2` (default: the newest).
    pub to: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The report format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Human)]
    pub format: DiffFormat,
    /// Exit 1 when one of these verdicts is true, or undecided (unknown is not safe):
    /// breaking, loosened, widened, narrowed (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    pub fail_on: Vec<FailOn>,
    /// Colour the human report (decided from the terminal, not a flag).
    #[arg(skip)]
    pub color: bool,
}

/// Compares two versions of `tool`'s contract under `root`.
pub fn compare(
    root: &Path,
    tool: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Report, UsageError> {
    let repository = Repository::open(root)?.naming_relative();
    let published = repository.versions(tool)?;
    let (from_dir, to_dir) = pick(tool, &published, from, to)?;
    let from = load(&repository, tool, &from_dir)?;
    let to = load(&repository, tool, &to_dir)?;
    let changes = contracts::compare(&from, &to);
    let bases = bases(&repository, tool, &from, &to);
    let answers = Verdict::ALL
        .iter()
        .map(|verdict| answer(*verdict, &changes, &bases, &from, &to))
        .collect();
    Ok(Report {
        tool: tool.to_owned(),
        from: from.name.clone(),
        to: to.name.clone(),
        answers,
        replayed: bases.len(),
        replay: replay::differences(&bases),
        changes,
    })
}

fn pick(
    tool: &str,
    published: &[VersionDir],
    from: Option<&str>,
    to: Option<&str>,
) -> Result<(VersionDir, VersionDir), UsageError> {
    let names: Vec<String> = published.iter().map(VersionDir::name).collect();
    let find = |name: &str| {
        published
            .iter()
            .find(|version| version.name() == name)
            .cloned()
            .ok_or_else(|| {
                UsageError::new(format!(
                    "tool `{tool}` has no contract version {name:?} (published: {})",
                    names.join(", ")
                ))
            })
    };
    let newest = published.last().cloned();
    let (from, to) = match (from, to) {
        (Some(from), Some(to)) => (find(from)?, find(to)?),
        (Some(from), None) => (
            find(from)?,
            newest.ok_or_else(|| UsageError::new("no versions"))?,
        ),
        (None, _) => {
            if published.len() < 2 {
                return Err(UsageError::new(format!(
                    "tool `{tool}` has only {}: there is nothing to compare yet (a contract bump is a new folder contracts/{tool}/v<N+1>/)",
                    names.join(", ")
                )));
            }
            (
                published[published.len() - 2].clone(),
                published[published.len() - 1].clone(),
            )
        }
    };
    if from == to {
        return Err(UsageError::new(format!(
            "FROM and TO are both {}: name two different versions of `{tool}` ({})",
            from.name(),
            names.join(", ")
        )));
    }
    Ok((from, to))
}

/// Every fixture of the tool that loads, decided by both versions: witnesses start from these,
/// and replay reports where they differ. Accepted and legacy fixtures first.
fn bases(repository: &Repository, tool: &str, from: &Version, to: &Version) -> Vec<Base> {
    let root = repository.root();
    let discovery = fixture::discover_tool(root, tool);
    let fixtures: Vec<Arc<fixture::Fixture>> =
        discovery.fixtures.into_iter().map(Arc::new).collect();
    let requests = RequestFiles::load(root, &fixtures);
    // Read with the larger limit, so neither version sees a truncated response.
    let reader = if from.contract.max_bytes() >= to.contract.max_bytes() {
        &from.contract
    } else {
        &to.contract
    };
    let mut bases: Vec<Base> = fixtures
        .iter()
        .filter_map(|fixture| {
            let spec = fixture.spec.as_ref().ok()?;
            let prepared = prepare(root, &requests, fixture, spec, reader).ok()?;
            let document = serde_json::from_slice::<Value>(&prepared.raw).ok();
            Some(Base {
                from: prepared.admit(&from.contract, &prepared.raw),
                to: prepared.admit(&to.contract, &prepared.raw),
                fixture: Arc::clone(fixture),
                prepared,
                document,
            })
        })
        .collect();
    let rank = |class: FixtureClass| match class {
        FixtureClass::Accepted => 0,
        FixtureClass::Legacy => 1,
        FixtureClass::NearMiss => 2,
        FixtureClass::DuplicateKey => 3,
    };
    bases.sort_by_key(|base| rank(base.fixture.class));
    bases
}

fn answer(
    verdict: Verdict,
    changes: &[Change],
    bases: &[Base],
    from: &Version,
    to: &Version,
) -> Answer {
    let mut reasons: Vec<String> = changes
        .iter()
        .filter_map(|change| match change.effect(verdict) {
            Effect::Unknown(reason) => Some(format!("{}: {reason}", change.kind)),
            _ => None,
        })
        .collect();
    reasons.dedup();
    match witness::find(verdict, changes, bases, from, to) {
        Finding::Confirmed(witness) => Answer {
            verdict,
            value: Some(true),
            reasons: Vec::new(),
            witness: Some(*witness),
        },
        Finding::Unconfirmed(reason) => {
            reasons.insert(0, reason);
            Answer {
                verdict,
                value: None,
                reasons,
                witness: None,
            }
        }
        Finding::None => Answer {
            verdict,
            value: if reasons.is_empty() {
                Some(false)
            } else {
                None
            },
            reasons,
            witness: None,
        },
    }
}

/// Runs `toolgate diff`: passed when the report ran, failed when a `--fail-on` verdict is true
/// or undecided.
pub fn run(options: &DiffOptions, out: &mut impl Write) -> Result<Status, UsageError> {
    let report = compare(
        &options.root,
        &options.tool,
        options.from.as_deref(),
        options.to.as_deref(),
    )?;
    let text = match options.format {
        DiffFormat::Human => report::human(&report, options.color),
        DiffFormat::Markdown => report::markdown(&report),
        DiffFormat::Json => report::json(&report),
    };
    write_output(out, text.as_bytes())?;
    let failing = options
        .fail_on
        .iter()
        .any(|fail_on| report.answer(fail_on.verdict()).value != Some(false));
    Ok(Status::passed_if(!failing))
}
