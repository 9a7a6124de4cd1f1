//! `toolgate diff` from end to end: pick the two versions, load both, compare them, decide each
//! verdict by a witness both compiled contracts confirm, replay every fixture, render.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toolgate_repo::{Fixture, discover_tool};

use serde_json::Value;
use toolgate_gate::internals::escape_hidden;

use crate::answer::{Answer, Report};
use crate::change::{BumpVerdict, Change, Effect};
use crate::traffic::{BlastRadius, Shift, TrafficSource};
use crate::witness::{Base, WitnessSearch};
use crate::{change, contracts, replay, search, synthesize, traffic, witness};
use toolgate_model::{Version, load};
use toolgate_repo::FixtureClass;
use toolgate_repo::Status;
use toolgate_repo::{Repository, VersionDir};
use toolgate_repo::{RequestFiles, prepare};
use toolgate_repo::{UsageError, write_output};

toolgate_repo::choices! {
    /// How `toolgate diff` reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum DiffFormat {
        /// For a terminal.
        #[default]
        Human = "human",
        /// Ready to paste as a pull-request comment.
        Markdown = "markdown",
        /// Stable and documented field by field (see the user guide, doc/guide/).
        Json = "json",
        /// SARIF 2.1.0, for GitHub code scanning: each verdict at the changes that make it.
        Sarif = "sarif",
    }
}

/// What `--fail-on` can name: a verdict (true or undecided fails), or a shift on real traffic
/// (`--replay`) above a threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailOn {
    /// A verdict: fails when it is true or undecided (unknown is not safe).
    Verdict(BumpVerdict),
    /// Fails when more retained responses than `above` would shift this way; a response that
    /// could not be decided counts as shifting.
    Traffic {
        /// Which shift.
        shift: TrafficShift,
        /// The most that may shift.
        above: Threshold,
    },
}

/// A way the new version treats production's traffic differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrafficShift {
    /// FROM admitted it, TO refuses it.
    NewlyRefused,
    /// FROM refused it, TO admits it.
    NewlyAdmitted,
    /// Both decide alike, the agent would see other bytes.
    OutputChanged,
}

/// How much of the traffic may shift before `--fail-on` fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// At most this many responses.
    Count(usize),
    /// At most this share of the responses replayed (0 to 1).
    Share(f64),
}

impl TrafficShift {
    const ALL: [(&'static str, TrafficShift); 3] = [
        ("newly-refused", TrafficShift::NewlyRefused),
        ("newly-admitted", TrafficShift::NewlyAdmitted),
        ("output-changed", TrafficShift::OutputChanged),
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        TrafficShift::ALL
            .iter()
            .find(|(_, shift)| *shift == self)
            .map_or("", |(name, _)| name)
    }

    fn of(self, radius: &BlastRadius) -> &Shift {
        match self {
            TrafficShift::NewlyRefused => &radius.newly_refused,
            TrafficShift::NewlyAdmitted => &radius.newly_admitted,
            TrafficShift::OutputChanged => &radius.output_changed,
        }
    }
}

const VERDICTS: [(&str, BumpVerdict); 4] = [
    ("breaking", BumpVerdict::UpstreamBreaking),
    ("loosened", BumpVerdict::UpstreamLoosened),
    ("widened", BumpVerdict::AgentWidened),
    ("narrowed", BumpVerdict::AgentNarrowed),
];

impl FailOn {
    /// One `--fail-on` value: `breaking`, `loosened`, `widened`, `narrowed`; or
    /// `newly-refused`, `newly-admitted`, `output-changed`, alone (any one fails) or with a
    /// threshold, `newly-refused>25` (more than 25 responses) or `newly-refused>0.5%`.
    pub fn parse(text: &str) -> Result<FailOn, String> {
        let text = text.trim();
        if let Some((_, verdict)) = VERDICTS.iter().find(|(name, _)| *name == text) {
            return Ok(FailOn::Verdict(*verdict));
        }
        let (name, threshold) = match text.split_once('>') {
            Some((name, threshold)) => (name.trim(), Some(threshold.trim())),
            None => (text, None),
        };
        let Some((_, shift)) = TrafficShift::ALL.iter().find(|(known, _)| *known == name) else {
            return Err(format!(
                "{text:?} is not one of breaking, loosened, widened, narrowed, newly-refused[>N|>N%], newly-admitted[>N|>N%], output-changed[>N|>N%]"
            ));
        };
        let above = match threshold {
            None => Threshold::Count(0),
            Some(share) if share.ends_with('%') => {
                let percent = share
                    .trim_end_matches('%')
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|percent| (0.0..=100.0).contains(percent))
                    .ok_or_else(|| {
                        format!("{text:?}: {share:?} is not a percentage from 0% to 100%")
                    })?;
                Threshold::Share(percent / 100.0)
            }
            Some(count) => Threshold::Count(count.parse::<usize>().map_err(|_| {
                format!("{text:?}: {count:?} is not a number of responses (or a percentage, 1%)")
            })?),
        };
        Ok(FailOn::Traffic {
            shift: *shift,
            above,
        })
    }

    /// Whether the report fails this; `None` when it measures traffic and none was replayed.
    pub(crate) fn fails(&self, report: &Report) -> Option<bool> {
        match *self {
            FailOn::Verdict(verdict) => Some(report.answer(verdict).value != Some(false)),
            FailOn::Traffic { shift, above } => {
                let radius = report.traffic.as_ref()?;
                Some(match above {
                    Threshold::Count(most) => radius.at_most_shifted(shift.of(radius)) > most,
                    // A share of traffic, estimated: what the store holds is weighted by how
                    // it was sampled.
                    Threshold::Share(share) => radius.at_most_share(shift.of(radius)) > share,
                })
            }
        }
    }
}

/// What `toolgate diff` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct DiffConfig {
    /// The tool whose contract versions to compare (a folder under contracts/).
    pub tool: String,
    /// The older version, e.g. `v1` (default: the second newest).
    pub from: Option<String>,
    /// The newer version, e.g. `v2` (default: the newest).
    pub to: Option<String>,
    /// The repository root, holding contracts/ and fixtures/.
    pub root: PathBuf,
    /// The report format.
    pub format: DiffFormat,
    /// Fail when one of these verdicts is true, or undecided (unknown is not safe).
    pub fail_on: Vec<FailOn>,
    /// Colour the human report.
    pub color: bool,
    /// Search for a counterexample before reporting an upstream verdict false.
    pub search: bool,
    /// Decide the traffic production kept under both versions (`--replay STORE`).
    pub replay: Option<TrafficSource>,
}

/// Compares two versions of `tool`'s contract under `root`, with the proof search on.
pub fn compare(
    root: &Path,
    tool: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Report, UsageError> {
    compare_with(root, tool, from, to, true)
}

/// Compares two versions of `tool`'s contract under `root`; `search`: look for a counterexample
/// before reporting an upstream verdict false.
pub fn compare_with(
    root: &Path,
    tool: &str,
    from: Option<&str>,
    to: Option<&str>,
    search: bool,
) -> Result<Report, UsageError> {
    let repository = Repository::open(root)?.naming_relative();
    let published = repository.versions(tool)?;
    let (from_dir, to_dir) = pick(tool, &published, from, to)?;
    let from = load(&repository, tool, &from_dir)?;
    let to = load(&repository, tool, &to_dir)?;
    Ok(compare_loaded(&repository, tool, &from, &to, search))
}

/// Compares two loaded versions of `tool`: the changes, each verdict decided by a witness both
/// compiled contracts confirm (or the search), every fixture replayed.
pub(crate) fn compare_loaded(
    repository: &Repository,
    tool: &str,
    from: &Version,
    to: &Version,
    search: bool,
) -> Report {
    let changes = contracts::compare(from, to);
    let mut bases = bases(repository, tool, from, to);
    let replayed = bases.len();
    let replay = replay::differences(&bases);
    // Witnesses start from the fixtures; responses synthesized from each version's schemas come
    // after them, for a change no fixture can show (or a tool with no fixtures yet).
    bases.extend(synthesize::bases(from, to));
    let mut answers: Vec<Answer> = BumpVerdict::ALL
        .iter()
        .map(|verdict| answer(*verdict, &changes, &bases, from, to, search))
        .collect();
    // Decided place by place (each place has its own probe); reported edit by edit.
    let (changes, index_of) = change::one_per_edit(changes);
    for witness in answers
        .iter_mut()
        .filter_map(|answer| answer.witness.as_mut())
    {
        witness.change = witness.change.map(|index| index_of[index]);
    }
    Report {
        tool: tool.to_owned(),
        from: from.name.clone(),
        to: to.name.clone(),
        answers,
        replayed,
        replay,
        changes,
        traffic: None,
        server: None,
    }
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
    let discovery = discover_tool(root, tool);
    let fixtures: Vec<Arc<Fixture>> = discovery.fixtures.into_iter().map(Arc::new).collect();
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
                origin: fixture.raw.clone(),
                class: fixture.class,
                shape: None,
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
    bases.sort_by_key(|base| rank(base.class));
    bases
}

fn answer(
    verdict: BumpVerdict,
    changes: &[Change],
    bases: &[Base],
    from: &Version,
    to: &Version,
    search: bool,
) -> Answer {
    let mut reasons: Vec<String> = changes
        .iter()
        .filter_map(|change| match change.effect(verdict) {
            Effect::Unknown(reason) => Some(format!("{}: {reason}", change.kind)),
            _ => None,
        })
        .collect();
    // A change reached through many places (a recursion unrolled) gives the same reason at
    // each: one line says it.
    let mut seen = std::collections::HashSet::new();
    reasons.retain(|reason| seen.insert(reason.clone()));
    let credited_to = |effect: fn(&Effect) -> bool| {
        changes
            .iter()
            .position(|change| effect(change.effect(verdict)))
    };
    // What the model left: the change a witness the search finds is credited to, and whether
    // the verdict stays open without one (the model says no only when nothing is open).
    let (credit, open) = match witness::find(verdict, changes, bases, from, to) {
        WitnessSearch::Confirmed(witness) => {
            return Answer {
                verdict,
                value: Some(true),
                reasons: Vec::new(),
                witness: Some(*witness),
            };
        }
        // A change says yes and no edit of a base shows it: credited to the first that claims it.
        WitnessSearch::Unconfirmed(reason) => {
            reasons.insert(0, reason);
            (credited_to(|effect| matches!(effect, Effect::Yes(_))), true)
        }
        // The model says no: a response the search finds says the model was wrong (no change
        // claimed it).
        WitnessSearch::None if reasons.is_empty() => (None, false),
        // Undecided by the model: credited to the first change it could not decide.
        WitnessSearch::None => (
            credited_to(|effect| matches!(effect, Effect::Unknown(_))),
            true,
        ),
    };
    // Before a no or an open verdict is printed, the search tries to show it true.
    match search
        .then(|| search::counterexample(verdict, bases, from, to))
        .flatten()
    {
        Some(mut witness) => {
            witness.change = credit;
            Answer {
                verdict,
                value: Some(true),
                reasons: Vec::new(),
                witness: Some(witness),
            }
        }
        None => Answer {
            verdict,
            value: (!open).then_some(false),
            reasons,
            witness: None,
        },
    }
}

/// Runs `toolgate diff`: passed when the report ran, failed when a `--fail-on` verdict is true
/// or undecided, or more of the replayed traffic shifts than its threshold allows.
pub fn run(options: &DiffConfig, out: &mut impl Write) -> Result<Status, UsageError> {
    if options.replay.is_none()
        && let Some(FailOn::Traffic { shift, .. }) = options
            .fail_on
            .iter()
            .find(|fail_on| matches!(fail_on, FailOn::Traffic { .. }))
    {
        return Err(UsageError::new(format!(
            "--fail-on {}: measures production traffic, and none is replayed: give --replay STORE (the folder or s3://BUCKET/PREFIX the fronts keep in with --retain)",
            shift.name()
        )));
    }
    let mut report = compare_with(
        &options.root,
        &options.tool,
        options.from.as_deref(),
        options.to.as_deref(),
        options.search,
    )?;
    if let Some(source) = &options.replay {
        report.traffic = Some(replay_traffic(
            &options.root,
            &report.tool,
            (&report.from, &report.to),
            source,
        )?);
    }
    emit(&report, options, out)
}

/// Writes `report` as `options` ask, and says whether it passes: failed when a `--fail-on`
/// names what it shows (a verdict true or undecided, a traffic shift over its threshold), or,
/// against a server (`--upstream`), when a live call's result is refused; with no `--fail-on`,
/// a server check fails on `loosened` (the server may send what the contract refuses).
pub fn emit(
    report: &Report,
    options: &DiffConfig,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let fail_on = fail_on_for(report, options);
    let text = match options.format {
        DiffFormat::Sarif => report.sarif(&options.root, fail_on),
        format => report.render(format, options.color),
    };
    write_output(out, text.as_bytes())?;
    Ok(Status::passed_if(passes(report, fail_on)))
}

/// Writes the reports of a server checked tool by tool (`--upstream` without TOOL), in the
/// order given, as [`emit`] writes one: human and Markdown one after another and a closing
/// line naming every tool that fails, JSON an array of reports, SARIF one run per tool. Fails
/// when any report fails.
pub fn emit_all(
    reports: &[Report],
    options: &DiffConfig,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let failing: Vec<&str> = reports
        .iter()
        .filter(|report| !passes(report, fail_on_for(report, options)))
        .map(|report| report.tool.as_str())
        .collect();
    let text = match options.format {
        DiffFormat::Sarif => toolgate_repo::sarif::Log::render_all(
            &reports
                .iter()
                .map(|report| report.sarif_log(&options.root, fail_on_for(report, options)))
                .collect::<Vec<_>>(),
        ),
        DiffFormat::Json => {
            let each: Vec<String> = reports
                .iter()
                .map(|report| report.render(DiffFormat::Json, false).trim_end().to_owned())
                .collect();
            format!("[\n{}\n]\n", each.join(",\n"))
        }
        format => {
            let each: Vec<String> = reports
                .iter()
                .map(|report| report.render(format, options.color))
                .collect();
            let server = reports
                .iter()
                .find_map(|report| report.server.as_ref())
                .map_or("the server", |facts| facts.server.as_str());
            let shown: Vec<String> = failing
                .iter()
                .map(|tool| escape_hidden(tool).into_owned())
                .collect();
            let closing = match shown.len() {
                0 => format!(
                    "{} tools checked against {}: this release passes every contract.",
                    reports.len(),
                    escape_hidden(server)
                ),
                _ => format!(
                    "{} tools checked against {}: {} would refuse this release ({}).",
                    reports.len(),
                    escape_hidden(server),
                    shown.len(),
                    shown.join(", ")
                ),
            };
            format!("{}\n{closing}\n", each.join("\n"))
        }
    };
    write_output(out, text.as_bytes())?;
    Ok(Status::passed_if(failing.is_empty()))
}

/// What fails `report`: `--fail-on` as given, or for a server check without one, `loosened`
/// (the server may send what the contract refuses).
fn fail_on_for<'o>(report: &Report, options: &'o DiffConfig) -> &'o [FailOn] {
    const RELEASE_GATE: [FailOn; 1] = [FailOn::Verdict(BumpVerdict::UpstreamLoosened)];
    match (&report.server, options.fail_on.is_empty()) {
        (Some(_), true) => &RELEASE_GATE,
        _ => &options.fail_on,
    }
}

/// Whether `report` passes: nothing `fail_on` names is shown (a verdict true or undecided, a
/// traffic shift over its threshold), and, against a server, it lists the tool and every live
/// call's result is admitted.
fn passes(report: &Report, fail_on: &[FailOn]) -> bool {
    let refused = report
        .server
        .as_ref()
        .is_some_and(|facts| !facts.listed || facts.refused().next().is_some());
    let failing = fail_on
        .iter()
        .any(|fail_on| fail_on.fails(report) != Some(false));
    !failing && !refused
}

/// The traffic `source` holds of `tool`, decided under the versions named `from` and `to`.
pub fn replay_traffic(
    root: &Path,
    tool: &str,
    (from, to): (&str, &str),
    source: &TrafficSource,
) -> Result<BlastRadius, UsageError> {
    let repository = Repository::open(root)?.naming_relative();
    let published = repository.versions(tool)?;
    let (from_dir, to_dir) = pick(tool, &published, Some(from), Some(to))?;
    let from = load(&repository, tool, &from_dir)?;
    let to = load(&repository, tool, &to_dir)?;
    traffic::blast_radius(source, tool, &from.contract, &to.contract)
}
