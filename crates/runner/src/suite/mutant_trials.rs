//! The mutant trials: one per tool, contract version and mutation family (`job_status::mutants::
//! extra_property@v2`), so a filter selects them. Each fails on a leak, on a survivor that
//! `survivors.yaml` does not accept, and on an accepted survivor that no longer survives.
//! `toolgate mutate` runs the same mutants through [`Suite::mutant_run`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::{CaseContract, CheckKind, Suite, SuiteCheck, ToolContracts};
use toolgate_analyze::mutants::Family;
use toolgate_analyze::mutants::{
    AcceptedSurvivor, DEFAULT_EMIT_DIR, FamilyOutcome, MutantFinding, MutantVerdict, Run,
    SeedFixture, Setting, collect_seeds, detail, headline, judge_family, left_out_note,
    load_survivors, survivors_path,
};
use toolgate_repo::Acceptances;
use toolgate_repo::{CaseResult, Problem, ProblemKind};

impl Suite {
    /// The mutant trials of one tool: each compiled JSON contract version × each family.
    pub(super) fn mutant_checks(&self, tool: &ToolContracts) -> Vec<SuiteCheck> {
        let compiled: Vec<String> = tool
            .versions
            .iter()
            .filter(|(_, compiled)| compiled.as_ref().is_ok_and(|contract| !contract.is_text()))
            .map(|(version, _)| version.name())
            .collect();
        let several = tool.versions.len() > 1;
        compiled
            .iter()
            .flat_map(|version| {
                Family::ALL.iter().map(move |family| SuiteCheck {
                    name: if several {
                        format!("{}::mutants::{family}@{version}", tool.tool)
                    } else {
                        format!("{}::mutants::{family}", tool.tool)
                    },
                    tool: Some(tool.tool.clone()),
                    version: Some(version.clone()),
                    kind: CheckKind::Mutants(*family),
                })
            })
            .collect()
    }

    /// Runs the mutants of `families` derived from `tool`'s fixtures admitted by `version`; with
    /// `keep_all`, keeps every mutant's bytes for `--emit`. `Err` when the version does not
    /// compile or `survivors.yaml` cannot be read.
    pub fn mutant_run(
        &self,
        tool: &str,
        version: &str,
        families: &[Family],
        emit_dir: &Path,
        keep_all: bool,
    ) -> Result<Run, String> {
        let CaseContract::Ready(contract) = self.contract_of(tool, version) else {
            return Err(format!(
                "{tool} {version} does not compile or cannot be read (see `toolgate test {tool}`)"
            ));
        };
        let accepted = self.accepted_survivors(tool)?;
        let seeds = self.seeds_of(tool, version, &contract);
        let outcomes: Vec<(Family, Arc<FamilyOutcome>)> = families
            .iter()
            .map(|family| {
                let outcome = if keep_all {
                    Arc::new(judge_family(
                        tool,
                        &contract,
                        &seeds,
                        *family,
                        self.other_tool(tool),
                        Some(&accepted),
                        true,
                    ))
                } else {
                    self.family_outcome(tool, version, *family, &contract, &seeds)
                };
                (*family, outcome)
            })
            .collect();
        let outcomes: Vec<(Family, &FamilyOutcome)> = outcomes
            .iter()
            .map(|(family, outcome)| (*family, &**outcome))
            .collect();
        let setting = Setting {
            tool,
            contract: &contract,
            other_tool: self.other_tool(tool),
            accepted: &accepted,
            emit_dir,
        };
        Ok(toolgate_analyze::mutants::run(&setting, &seeds, &outcomes))
    }

    /// One family's judged mutants of a tool version, computed once and shared by its trial and
    /// the coverage check.
    pub(super) fn family_outcome(
        &self,
        tool: &str,
        version: &str,
        family: Family,
        contract: &toolgate_gate::Contract,
        seeds: &[SeedFixture],
    ) -> Arc<FamilyOutcome> {
        let compute = || {
            // An unreadable survivors.yaml is reported by the trials that read it; the sample
            // then pins nothing.
            let accepted = self.accepted_survivors(tool).ok();
            Arc::new(judge_family(
                tool,
                contract,
                seeds,
                family,
                self.other_tool(tool),
                accepted.as_deref(),
                false,
            ))
        };
        match self
            .family_outcomes
            .get(&(tool.to_owned(), version.to_owned(), family))
        {
            Some(cell) => Arc::clone(cell.get_or_init(compute)),
            None => compute(),
        }
    }

    /// One mutant trial: its problems, what it counted, and the fixture, class and reproduce
    /// command of its first failure, in `result`.
    pub(super) fn mutant_trial(
        &self,
        tool: &str,
        family: Family,
        mut result: CaseResult,
    ) -> CaseResult {
        let version = result.version.clone().unwrap_or_default();
        let run = match self.mutant_run(
            tool,
            &version,
            &[family],
            Path::new(DEFAULT_EMIT_DIR),
            false,
        ) {
            Ok(run) => run,
            Err(message) => {
                result.problems = vec![Problem::new(ProblemKind::Load, message)];
                return result;
            }
        };
        result.problems = run_problems(&run);
        let count = |keep: fn(&MutantVerdict) -> bool| {
            run.findings
                .iter()
                .filter(|finding| keep(&finding.verdict))
                .count()
        };
        result.counts = [
            ("mutants", run.mutants),
            ("mutants_rejected", run.rejected),
            ("mutant_places_left_out", run.left_out),
            (
                "survivors",
                count(|verdict| matches!(verdict, MutantVerdict::Survivor(_))),
            ),
            (
                "survivors_accepted",
                count(|verdict| matches!(verdict, MutantVerdict::Survivor(Some(_)))),
            ),
            (
                "misplaced",
                count(|verdict| matches!(verdict, MutantVerdict::Misplaced { .. })),
            ),
            (
                "leaks",
                count(|verdict| matches!(verdict, MutantVerdict::Leak(_))),
            ),
        ]
        .into_iter()
        .collect();
        if run.left_out > 0 {
            result.routine_notes.push(left_out_note(run.left_out));
        }
        // A failing trial names the fixture its first failure was derived from, and the command
        // that decides that mutant again.
        if let Some(finding) = run.findings.iter().find(|finding| {
            matches!(
                finding.verdict,
                MutantVerdict::Leak(_) | MutantVerdict::Survivor(None)
            )
        }) {
            result.fixture = Some(finding.fixture.clone());
            result.class = self
                .fixtures
                .iter()
                .find(|fixture| fixture.raw == finding.fixture)
                .map(|fixture| fixture.class);
            result.reproduce = Some(format!(
                "toolgate mutate {} --emit {DEFAULT_EMIT_DIR} && {}",
                finding.tool, finding.reproduce
            ));
        }
        result
    }

    fn contract_of(&self, tool: &str, version: &str) -> CaseContract {
        let compiled = self
            .tools
            .iter()
            .find(|candidate| candidate.tool == tool)
            .and_then(|tool| tool.versions.iter().find(|(dir, _)| dir.name() == version));
        match compiled {
            Some((_, Ok(contract))) => CaseContract::Ready(Arc::clone(contract)),
            _ => CaseContract::Broken,
        }
    }

    pub(super) fn seeds_of(
        &self,
        tool: &str,
        version: &str,
        contract: &toolgate_gate::Contract,
    ) -> Arc<Vec<SeedFixture>> {
        let collect = || {
            let fixtures: Vec<_> = self
                .fixtures
                .iter()
                .filter(|fixture| fixture.tool == tool)
                .cloned()
                .collect();
            Arc::new(collect_seeds(
                self.root(),
                &self.requests,
                &fixtures,
                contract,
            ))
        };
        match self
            .mutant_seeds
            .get(&(tool.to_owned(), version.to_owned()))
        {
            Some(cell) => Arc::clone(cell.get_or_init(collect)),
            None => collect(),
        }
    }

    fn accepted_survivors(&self, tool: &str) -> Result<Arc<Acceptances<AcceptedSurvivor>>, String> {
        let load = || {
            load_survivors(self.root(), tool)
                .map(Arc::new)
                .map_err(|error| format!("{error}; no survivor is accepted until the file loads"))
        };
        match self.survivors.get(tool) {
            Some(cell) => cell.get_or_init(load).clone(),
            None => load(),
        }
    }
}

/// A trial's failures: every leak, every survivor nobody accepted (one problem per place, however
/// many fixtures show it), every stale acceptance.
fn run_problems(run: &Run) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut survivors: BTreeMap<(&str, &str), (usize, &MutantFinding)> = BTreeMap::new();
    for finding in &run.findings {
        match &finding.verdict {
            MutantVerdict::Leak(leaks) => {
                for leak in leaks {
                    problems.push(
                        Problem::new(
                            ProblemKind::Leak,
                            format!("{}: {leak}", headline(finding, None)),
                        )
                        .with_detail(detail(finding)),
                    );
                }
            }
            MutantVerdict::Survivor(None) => {
                survivors
                    .entry((finding.version.as_str(), finding.pointer.as_str()))
                    .and_modify(|(count, _)| *count += 1)
                    .or_insert((1, finding));
            }
            MutantVerdict::Survivor(Some(_)) | MutantVerdict::Misplaced { .. } => {}
        }
    }
    for (count, finding) in survivors.into_values() {
        problems.push(
            Problem::new(
                ProblemKind::Survivor,
                format!(
                    "{} is admitted: the contract is looser than it looks; reject it in a new contract version, or accept it in {} with a reason",
                    headline(finding, Some((count, run.seeds))),
                    survivors_path(&finding.tool).display()
                ),
            )
            .with_detail(detail(finding)),
        );
    }
    for stale in &run.stale {
        problems.push(
            Problem::new(ProblemKind::Stale, stale.to_string()).at(&stale.file, Some(stale.line)),
        );
    }
    problems
}
