//! The responses mutants are derived from: every accepted and legacy fixture the gate admits
//! under a contract version, with its request and what the schema said about it.

use std::sync::Arc;

use serde_json::Value;
use toolgate_gate::internals::{applied_keywords, correlation_pointers};
use toolgate_gate::{Contract, Tolerated};
use toolgate_model::layout::Layout;

use super::judge::{JudgedMutant, judge};
use super::{AppliedKeywords, Family, Seed};
use toolgate_repo::RepoRoot;
use toolgate_repo::{Fixture, FixtureClass};
use toolgate_repo::{Prepared, RequestFiles, prepare};

/// One admitted fixture, ready to be mutated.
#[derive(Debug)]
pub struct SeedFixture {
    /// The fixture.
    pub fixture: Arc<Fixture>,
    /// Its request and raw bytes.
    pub prepared: Prepared,
    document: Value,
    layout: Layout,
    keywords: AppliedKeywords,
    tool_pointer: Option<String>,
    request_id_pointer: Option<String>,
    /// The shape that admitted it.
    pub shape: String,
    tolerated: Vec<Tolerated>,
    fresh: Vec<String>,
}

/// Every accepted or legacy fixture of `fixtures` (one tool's) that runs against `contract` and
/// that the gate admits under it. A fixture that cannot be loaded or is not admitted is left out:
/// its own case reports why.
pub fn collect(
    root: &RepoRoot,
    requests: &RequestFiles,
    fixtures: &[Arc<Fixture>],
    contract: &Contract,
) -> Vec<SeedFixture> {
    if contract.is_text() {
        return Vec::new(); // the mutations are of JSON documents
    }
    let version = contract.version();
    fixtures
        .iter()
        .filter(|fixture| matches!(fixture.class, FixtureClass::Accepted | FixtureClass::Legacy))
        .filter_map(|fixture| {
            let spec = fixture.spec.as_ref().ok()?;
            if !spec.runs_against(version) {
                return None;
            }
            let prepared = prepare(root, requests, fixture, spec, contract).ok()?;
            let decision = prepared.admit(contract, &prepared.raw);
            if !decision.is_admitted() {
                return None;
            }
            let document: Value = serde_json::from_slice(&prepared.raw).ok()?;
            let (shape, keywords) = applied_keywords(contract, &document)?;
            let (tool_pointer, request_id_pointer) =
                correlation_pointers(contract, shape).unwrap_or_default();
            Some(SeedFixture {
                shape: shape.to_owned(),
                tolerated: toolgate_gate::internals::tolerated(contract, shape).to_vec(),
                fresh: toolgate_gate::internals::freshness_pointers(contract, shape)
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
                fixture: Arc::clone(fixture),
                tool_pointer: tool_pointer.map(str::to_owned),
                request_id_pointer: request_id_pointer.map(str::to_owned),
                prepared,
                layout: Layout::new(&document),
                document,
                keywords: AppliedKeywords::new(keywords),
            })
        })
        .collect()
}

impl SeedFixture {
    /// The mutation seed, with `other_tool` as the name a misrouted answer carries and `pinned`
    /// the places mutated whatever the sample.
    pub fn seed<'a>(
        &'a self,
        contract: &Contract,
        other_tool: &'a str,
        pinned: &'a [(Family, String)],
    ) -> Seed<'a> {
        Seed {
            raw: &self.prepared.raw,
            document: &self.document,
            layout: &self.layout,
            keywords: &self.keywords,
            max_bytes: contract.max_bytes(),
            max_depth: contract.max_depth(),
            tool_pointer: self.tool_pointer.as_deref(),
            request_id_pointer: self.request_id_pointer.as_deref(),
            other_tool,
            now: self.prepared.now,
            pinned,
            tolerated: &self.tolerated,
            fresh: &self.fresh,
        }
    }

    /// Every mutant of `families` derived from this fixture, judged under `contract`, and how
    /// many places the per-family sample left out (never one of `pinned`).
    pub fn judge_all(
        &self,
        contract: &Contract,
        families: &[Family],
        other_tool: &str,
        pinned: &[(Family, String)],
    ) -> (Vec<JudgedMutant>, usize) {
        let derived = self.seed(contract, other_tool, pinned).derive(families);
        let judged = derived
            .mutants
            .into_iter()
            .map(|mutant| judge(contract, &self.prepared, mutant))
            .collect();
        (judged, derived.left_out)
    }
}
