//! One tool version's mutants, run and sorted into what a report shows: survivors (accepted or
//! not), misplaced rejections, leaks, and accepted survivors that no longer survive.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolgate_gate::{Contract, Layer};

use super::Family;
use super::judge::{Fate, JudgedMutant};
use super::seeds::SeedFixture;
use super::survivors::AcceptedSurvivor;
use toolgate_repo::Acceptances;
use toolgate_repo::Fixture;
use toolgate_repo::reproduce_command;

/// What a report says about one mutant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MutantVerdict {
    /// Admitted when its family expects a rejection; `Some(reason)` when `survivors.yaml`
    /// accepts it.
    Survivor(Option<String>),
    /// Rejected at another layer than its family expects.
    Misplaced {
        /// Where it was rejected.
        layer: Layer,
        /// The rule or keyword that rejected it.
        rule: String,
    },
    /// Something unpromised reached the agent: always a failure.
    Leak(Vec<String>),
}

/// One mutant worth reporting.
#[derive(Debug, Clone)]
pub struct MutantFinding {
    /// The tool.
    pub tool: String,
    /// The contract version.
    pub version: String,
    /// The fixture it was derived from.
    pub fixture: PathBuf,
    /// The family.
    pub family: Family,
    /// The JSON pointer in the raw response that was mutated.
    pub pointer: String,
    /// What was done, in words.
    pub what: String,
    /// Where `--emit` writes the mutant, relative to the emit folder.
    pub file: PathBuf,
    /// The mutant's first bytes, enough to show ([`super::MUTANT_KEPT_BYTES`]); `--emit`
    /// writes it whole.
    pub bytes: Vec<u8>,
    /// What the agent saw.
    pub agent_bytes: Vec<u8>,
    /// Whether the mutated place is one a promised field reads (the agent sees what is there),
    /// or upstream drift the agent never sees.
    pub projected: bool,
    /// What the gate was expected to do, in words (for a misplaced rejection).
    pub expected: String,
    /// What it means.
    pub verdict: MutantVerdict,
    /// The `toolgate check` command that reproduces the decision, once the mutant is emitted.
    pub reproduce: String,
}

/// An accepted survivor that survived nowhere in a version: the contract rejects it now, or no
/// mutant of its family was made at its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// `fixtures/<tool>/survivors.yaml`.
    pub file: PathBuf,
    /// The entry's line.
    pub line: u64,
    /// The family it names (`None`: every family, for a subtree).
    pub family: Option<Family>,
    /// The pointer it names.
    pub pointer: String,
    /// The version it was checked against.
    pub version: String,
    /// Whether a mutant of the family was made at the place (and the gate rejected every one);
    /// otherwise no admitted fixture of the version has a value there the family changes.
    pub made: bool,
}

impl std::fmt::Display for Stale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (file, line, version) = (self.file.display(), self.line, &self.version);
        let pointer = super::shown_pointer(&self.pointer);
        let Some(family) = self.family else {
            // A subtree entry: survivors anywhere below it that the agent cannot see.
            return write!(
                f,
                "{file}:{line}: the accepted subtree {pointer} holds no survivor the agent cannot see in {version}: the contract rejects every mutant there now (or no fixture reaches it); remove the entry, or limit its `versions:`"
            );
        };
        if self.made {
            write!(
                f,
                "{file}:{line}: the accepted survivor {family} at {pointer} no longer survives {version}: the contract rejects every such mutant now; remove the entry, or limit its `versions:` to those where it still survives"
            )
        } else {
            write!(
                f,
                "{file}:{line}: the accepted survivor {family} at {pointer} matches nothing in {version}: no admitted fixture of {version} has a value at {pointer} that {family} changes, so no such mutant was made; limit the entry's `versions:` to the versions it is for (or add a fixture of {version} with that value)"
            )
        }
    }
}

/// One tool version's mutants, counted and sorted.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// How many seeds (admitted accepted and legacy fixtures) they came from.
    pub seeds: usize,
    /// How many mutants ran.
    pub mutants: usize,
    /// How many the gate rejected.
    pub rejected: usize,
    /// Places not mutated: a family mutates at most [`super::places_per_family`] of a fixture.
    pub left_out: usize,
    /// Per family: mutants, rejected, places left out.
    pub per_family: BTreeMap<Family, FamilyCount>,
    /// Survivors, misplaced rejections and leaks, in family and seed order.
    pub findings: Vec<MutantFinding>,
    /// Accepted survivors of these families that no longer survive.
    pub stale: Vec<Stale>,
    /// Every mutant with its file name, for `--emit`.
    pub emitted: Vec<(PathBuf, Vec<u8>)>,
}

/// One family's counts in a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FamilyCount {
    /// How many mutants ran.
    pub mutants: usize,
    /// How many the gate rejected.
    pub rejected: usize,
    /// Places not mutated because a family applied to more than [`super::places_per_family`].
    pub left_out: usize,
}

/// One family's mutants of a tool version's seeds, judged. Only the mutants worth reporting
/// (not as expected, or leaking) are kept whole, so a suite can keep this for every family of a
/// tool and share it between the family's trial and the coverage check.
#[derive(Debug, Clone, Default)]
pub struct FamilyOutcome {
    /// How many mutants ran.
    pub mutants: usize,
    /// How many the gate rejected.
    pub rejected: usize,
    /// Places not mutated because a family applied to more than [`super::places_per_family`].
    pub left_out: usize,
    /// `(seed index, index of the mutant among its seed's of this family, judged)`, each
    /// mutant's bytes cut to [`super::MUTANT_KEPT_BYTES`].
    pub notable: Vec<(usize, usize, JudgedMutant)>,
    /// Every mutant's file name and bytes, when asked for (`--emit`).
    pub emitted: Vec<(PathBuf, Vec<u8>)>,
    /// Where in the responses mutants were made (JSON pointers), so an acceptance that matched
    /// nothing can say whether its mutant was rejected or never made.
    pub places: BTreeSet<String>,
}

/// What a run needs besides the seeds.
pub struct Setting<'a> {
    /// The tool.
    pub tool: &'a str,
    /// The compiled contract version.
    pub contract: &'a Contract,
    /// Another tool's name, for misrouted answers.
    pub other_tool: &'a str,
    /// The accepted survivors.
    pub accepted: &'a Acceptances<AcceptedSurvivor>,
    /// The folder reproduce commands name (`--emit`'s, or where it would write).
    pub emit_dir: &'a Path,
}

/// Runs every mutant of `family` derived from `seeds` through `contract`; with `keep_all`, keeps
/// every mutant's bytes for `--emit`. The places `accepted` names for the family and version are
/// mutated whatever the sample of a large fixture.
pub fn judge_family(
    tool: &str,
    contract: &Contract,
    seeds: &[SeedFixture],
    family: Family,
    other_tool: &str,
    accepted: Option<&Acceptances<AcceptedSurvivor>>,
    keep_all: bool,
) -> FamilyOutcome {
    let pinned: Vec<(Family, String)> = accepted
        .into_iter()
        .flat_map(|accepted| &accepted.entries)
        .filter(|entry| {
            entry.what.family == Some(family)
                && entry.what.subtree().is_none()
                && entry.applies_to(contract.version())
        })
        .map(|entry| (family, entry.what.pointer.clone()))
        .collect();
    let judge_seeds = |first: usize, seeds: &[SeedFixture]| {
        let mut out = FamilyOutcome::default();
        for (offset, seed) in seeds.iter().enumerate() {
            let (judged_all, left_out) = seed.judge_all(contract, &[family], other_tool, &pinned);
            out.left_out += left_out;
            for (index, judged) in judged_all.into_iter().enumerate() {
                out.mutants += 1;
                out.rejected += usize::from(judged.rejected);
                out.places.insert(judged.mutant.pointer.clone());
                if keep_all {
                    let file = mutant_file(tool, contract.version(), &seed.fixture, family, index);
                    out.emitted.push((file, judged.mutant.bytes.clone()));
                }
                if judged.fate != Fate::AsExpected || !judged.leaks.is_empty() {
                    let mut judged = judged;
                    judged.mutant.bytes.truncate(super::MUTANT_KEPT_BYTES);
                    judged.mutant.bytes.shrink_to_fit();
                    out.notable.push((first + offset, index, judged));
                }
            }
        }
        out
    };
    // The seeds in chunks, taken in turn by this thread and by any cores no other tool is using,
    // then put together in seed order: the outcome is the same however many cores ran it.
    let chunks = seeds.len().div_ceil(SEEDS_PER_CHUNK);
    let helpers = crate::cores::take_idle(chunks.saturating_sub(1));
    if helpers.count() == 0 {
        return judge_seeds(0, seeds);
    }
    let parts = crate::cores::in_chunks(seeds, SEEDS_PER_CHUNK, helpers.count(), judge_seeds);
    let mut out = FamilyOutcome::default();
    for part in parts {
        out.mutants += part.mutants;
        out.rejected += part.rejected;
        out.left_out += part.left_out;
        out.notable.extend(part.notable);
        out.emitted.extend(part.emitted);
        out.places.extend(part.places);
    }
    out
}

/// How many seeds a thread judges at a time when a family's mutants spread over several cores:
/// enough that taking the next chunk costs nothing beside judging it, few enough that the cores
/// finish together.
const SEEDS_PER_CHUNK: usize = 8;

/// Sorts judged families into a report: survivors matched against `survivors.yaml`, misplaced
/// rejections, leaks, and the acceptances of these families that matched nothing.
pub fn run(
    setting: &Setting<'_>,
    seeds: &[SeedFixture],
    outcomes: &[(Family, &FamilyOutcome)],
) -> Run {
    let version = setting.contract.version();
    let mut out = Run {
        seeds: seeds.len(),
        ..Run::default()
    };
    let mut used = vec![false; setting.accepted.entries.len()];
    for (family, outcome) in outcomes {
        out.mutants += outcome.mutants;
        out.rejected += outcome.rejected;
        out.left_out += outcome.left_out;
        out.per_family.insert(
            *family,
            FamilyCount {
                mutants: outcome.mutants,
                rejected: outcome.rejected,
                left_out: outcome.left_out,
            },
        );
        out.emitted.extend(outcome.emitted.iter().cloned());
        for (seed_index, index, judged) in &outcome.notable {
            let seed = &seeds[*seed_index];
            let projected = is_projected(setting.contract, &seed.shape, &judged.mutant.pointer);
            let Some(verdict) = verdict(setting, version, judged, projected, &mut used) else {
                continue;
            };
            let file = mutant_file(setting.tool, version, &seed.fixture, *family, *index);
            let reproduce = seed.fixture.spec.as_ref().map_or_else(
                |_| String::new(),
                |spec| {
                    reproduce_command(&seed.fixture, spec, version, &setting.emit_dir.join(&file))
                },
            );
            out.findings.push(MutantFinding {
                tool: setting.tool.to_owned(),
                version: version.to_owned(),
                fixture: seed.fixture.raw.clone(),
                family: *family,
                pointer: judged.mutant.pointer.clone(),
                what: judged.mutant.what.clone(),
                file,
                bytes: judged.mutant.bytes.clone(),
                agent_bytes: judged.agent_bytes.clone(),
                projected,
                expected: expected_words(&judged.mutant),
                verdict,
                reproduce,
            });
        }
    }
    // Only entries for the families that ran can be judged stale: a run of one family says
    // nothing about another's survivors. A run with no seed cannot judge any.
    // An entry for every family can only be judged by a run of every family.
    for (entry, used) in setting.accepted.entries.iter().zip(used) {
        let ran: Vec<&FamilyOutcome> = outcomes
            .iter()
            .filter(|(family, _)| entry.what.family.is_none_or(|accepted| accepted == *family))
            .map(|(_, outcome)| *outcome)
            .collect();
        let judged = match entry.what.family {
            Some(_) => !ran.is_empty(),
            None => ran.len() == Family::ALL.len(),
        };
        if judged && !used && !seeds.is_empty() && entry.applies_to(version) {
            out.stale.push(Stale {
                file: setting.accepted.file.clone(),
                line: entry.line,
                family: entry.what.family,
                pointer: entry.what.pointer.clone(),
                version: version.to_owned(),
                made: ran.iter().any(|outcome| {
                    outcome
                        .places
                        .iter()
                        .any(|place| entry.what.reaches(place, false))
                }),
            });
        }
    }
    out
}

/// Whether a promised field of `shape` reads the place at `pointer` (the field's pointer is the
/// place or one of its ancestors): what is there reaches the agent.
pub fn is_projected(contract: &Contract, shape: &str, pointer: &str) -> bool {
    // `pointer` is `read` or below it.
    let within = |pointer: &str, read: &str| {
        pointer
            .strip_prefix(read)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    toolgate_gate::internals::promised_pointers(contract, shape)
        .unwrap_or_default()
        .iter()
        .any(|(field, from)| {
            match toolgate_gate::internals::promised_items(contract, shape, field) {
                None => within(pointer, from),
                // A list field reads only its members of each item: `<from>/<index><member>`.
                Some(members) => {
                    let Some(rest) = pointer
                        .strip_prefix(*from)
                        .and_then(|rest| rest.strip_prefix('/'))
                    else {
                        return false;
                    };
                    let index = rest.find('/').unwrap_or(rest.len());
                    rest[..index].parse::<usize>().is_ok()
                        && members
                            .iter()
                            .any(|(_, member, _)| within(&rest[index..], member))
                }
            }
        })
}

/// What the gate should have done with `mutant`, in words.
fn expected_words(mutant: &super::Mutant) -> String {
    match &mutant.declared {
        Some(reason) => format!("admitted ({reason})"),
        None => {
            let layers: Vec<&str> = mutant
                .family
                .expected_layers()
                .iter()
                .map(|layer| layer.as_str())
                .collect();
            if layers.is_empty() {
                "past the schema".to_owned()
            } else {
                format!("at {}", layers.join(" or "))
            }
        }
    }
}

/// The report verdict for a judged mutant; `None` when there is nothing to report.
fn verdict(
    setting: &Setting<'_>,
    version: &str,
    judged: &JudgedMutant,
    projected: bool,
    used: &mut [bool],
) -> Option<MutantVerdict> {
    if !judged.leaks.is_empty() {
        return Some(MutantVerdict::Leak(judged.leaks.clone()));
    }
    match &judged.fate {
        Fate::AsExpected => None,
        Fate::Misplaced { layer, rule } => Some(MutantVerdict::Misplaced {
            layer: *layer,
            rule: rule.clone(),
        }),
        Fate::Survived => {
            let mutant = &judged.mutant;
            let accepted = setting.accepted.find(version, |what| {
                what.accepts(mutant.family, &mutant.pointer, projected)
            });
            if let Some((index, _)) = accepted {
                used[index] = true;
            }
            Some(MutantVerdict::Survivor(
                accepted.map(|(_, entry)| entry.reason.clone()),
            ))
        }
    }
}

/// Where a mutant is written: `<tool>/<version>/<class>/<case>/<family>-<n>.json`.
fn mutant_file(
    tool: &str,
    version: &str,
    fixture: &Fixture,
    family: Family,
    index: usize,
) -> PathBuf {
    Path::new(tool)
        .join(version)
        .join(fixture.class.as_str())
        .join(&fixture.case)
        .join(format!("{family}-{index}.json"))
}
