//! One tool version's mutants, run and sorted into what a report shows: survivors (accepted or
//! not), misplaced rejections, leaks, and accepted survivors that no longer survive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_gate::{Contract, Layer};

use super::Family;
use super::judge::{Fate, Judged};
use super::seeds::SeedFixture;
use super::survivors::AcceptedSurvivor;
use crate::acceptance::Acceptances;
use crate::fixture::Fixture;
use crate::suite::reproduce_command;

/// What a report says about one mutant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
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
pub struct Finding {
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
    /// The mutant's bytes.
    pub bytes: Vec<u8>,
    /// What the agent saw.
    pub agent_bytes: Vec<u8>,
    /// What it means.
    pub verdict: Verdict,
    /// The `toolgate check` command that reproduces the decision, once the mutant is emitted.
    pub reproduce: String,
}

/// An accepted survivor that survived nowhere: the contract rejects it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    /// `fixtures/<tool>/survivors.yaml`.
    pub file: PathBuf,
    /// The entry's line.
    pub line: u64,
    /// The family it names.
    pub family: Family,
    /// The pointer it names.
    pub pointer: String,
    /// The version it was checked against.
    pub version: String,
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
    /// Per family: mutants, rejected.
    pub per_family: BTreeMap<Family, (usize, usize)>,
    /// Survivors, misplaced rejections and leaks, in seed and family order.
    pub findings: Vec<Finding>,
    /// Accepted survivors of these families that no longer survive.
    pub stale: Vec<Stale>,
    /// Every mutant with its file name, for `--emit`.
    pub emitted: Vec<(PathBuf, Vec<u8>)>,
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
    /// Whether to keep every mutant's bytes for `--emit`.
    pub keep_all: bool,
}

/// Runs every mutant of `families` derived from `seeds` through the contract.
pub fn run(setting: &Setting<'_>, seeds: &[SeedFixture], families: &[Family]) -> Run {
    let version = setting.contract.version();
    let mut out = Run {
        seeds: seeds.len(),
        ..Run::default()
    };
    let mut used = vec![false; setting.accepted.entries.len()];
    for seed in seeds {
        let mut index_in_family: BTreeMap<Family, usize> = BTreeMap::new();
        for judged in seed.judge_all(setting.contract, families, setting.other_tool) {
            let family = judged.mutant.family;
            let index = index_in_family.entry(family).or_default();
            let file = mutant_file(setting.tool, version, &seed.fixture, family, *index);
            *index += 1;
            out.mutants += 1;
            let counts = out.per_family.entry(family).or_default();
            counts.0 += 1;
            if judged.rejected {
                out.rejected += 1;
                counts.1 += 1;
            }
            if setting.keep_all {
                out.emitted
                    .push((file.clone(), judged.mutant.bytes.clone()));
            }
            let Some(verdict) = verdict(setting, version, &judged, &mut used) else {
                continue;
            };
            let reproduce = seed.fixture.spec.as_ref().map_or_else(
                |_| String::new(),
                |spec| {
                    reproduce_command(&seed.fixture, spec, version, &setting.emit_dir.join(&file))
                },
            );
            out.findings.push(Finding {
                tool: setting.tool.to_owned(),
                version: version.to_owned(),
                fixture: seed.fixture.raw.clone(),
                family,
                pointer: judged.mutant.pointer,
                what: judged.mutant.what,
                file,
                bytes: judged.mutant.bytes,
                agent_bytes: judged.agent_bytes,
                verdict,
                reproduce,
            });
        }
    }
    // Only entries for the families that ran can be judged stale: a run of one family says
    // nothing about another's survivors. A run with no seed cannot judge any.
    for (entry, used) in setting.accepted.entries.iter().zip(used) {
        if !used
            && !seeds.is_empty()
            && entry.applies_to(version)
            && families.contains(&entry.what.family)
        {
            out.stale.push(Stale {
                file: setting.accepted.file.clone(),
                line: entry.line,
                family: entry.what.family,
                pointer: entry.what.pointer.clone(),
                version: version.to_owned(),
            });
        }
    }
    out
}

/// The report verdict for a judged mutant; `None` when there is nothing to report.
fn verdict(
    setting: &Setting<'_>,
    version: &str,
    judged: &Judged,
    used: &mut [bool],
) -> Option<Verdict> {
    if !judged.leaks.is_empty() {
        return Some(Verdict::Leak(judged.leaks.clone()));
    }
    match &judged.fate {
        Fate::AsExpected => None,
        Fate::Misplaced { layer, rule } => Some(Verdict::Misplaced {
            layer: *layer,
            rule: rule.clone(),
        }),
        Fate::Survived => {
            let mutant = &judged.mutant;
            let accepted = setting.accepted.find(version, |what| {
                what.family == mutant.family && what.pointer == mutant.pointer
            });
            if let Some((index, _)) = accepted {
                used[index] = true;
            }
            Some(Verdict::Survivor(
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
