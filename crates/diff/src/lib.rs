//! `toolgate diff`: reviewing a contract bump.
//!
//! Two versions of a tool's contract are compared on everything that decides what is admitted
//! and what the agent sees: every schema (after `$ref`), the limits, the legacy shapes, the rules,
//! the promised fields and their order, the agent schema and the retry policy. Each difference is
//! a [`Change`] with its effect on four verdicts (upstream breaking, upstream loosened,
//! agent widened, agent narrowed), decided on a model of the schemas ([`toolgate_model`], with pattern
//! inclusion by DFA in [`toolgate_model::strings`]) or reported as undecidable. A verdict is true only when a
//! witness built from one of the tool's fixtures (`witness.rs`) is confirmed by both compiled
//! contracts through the real gate. Every fixture is also replayed through both versions
//! (`replay.rs`), and, with `--replay STORE`, every response production kept (`traffic.rs`):
//! the blast radius. The report is human, markdown (a pull-request comment) or JSON (`render/`).

//!
//! Architecture invariant: a verdict is `true` only with a witness the real gate decides both
//! ways, and `false` only where the model decides every change involved; anything else is
//! undecided, with the reason.
//!
//! API boundary: the re-exports below; every module is private.

mod answer;
mod change;
mod compare;
mod contracts;
mod render;
mod repair;
mod replay;
mod schemas;
mod search;
mod synthesize;
mod traffic;
mod upstream;
mod witness;

pub use answer::{Answer, LiveCall, Report, ServerFacts};
pub use change::{BumpVerdict, Change, Effect};
pub use compare::{
    DiffConfig, DiffFormat, FailOn, Threshold, TrafficShift, compare, compare_with, emit, emit_all,
    replay_traffic, run,
};
pub use render::SCHEMA as DIFF_REPORT_SCHEMA;
pub use traffic::{BlastRadius, DEFAULT_LIMIT, Example, Shift, TrafficSource};
pub use upstream::{
    SERVER, UpstreamPlan, plan as upstream_plan, plan_every_tool as upstream_plans,
};
pub use witness::{Seen, Witness};
