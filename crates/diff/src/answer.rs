//! What `toolgate diff` found: one answer per verdict, every change, the replay. The data the
//! renderers in [`super::render`] read, apart from how it is computed.

use super::change::{BumpVerdict, Change};
use super::replay::Replayed;
use super::traffic::BlastRadius;
use super::witness::{Seen, Witness};

/// A verdict's answer: `Some(true)`, `Some(false)`, or `None` when it cannot be decided.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The verdict.
    pub verdict: BumpVerdict,
    /// True, false, or undecided.
    pub value: Option<bool>,
    /// Why it is undecided, when it is.
    pub reasons: Vec<String>,
    /// The confirmed witness, when it is true.
    pub witness: Option<Witness>,
}

/// Everything `toolgate diff` found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The tool.
    pub tool: String,
    /// The older version.
    pub from: String,
    /// The newer version.
    pub to: String,
    /// One answer per verdict, in [`BumpVerdict::ALL`] order.
    pub answers: Vec<Answer>,
    /// Every change.
    pub changes: Vec<Change>,
    /// How many fixtures were replayed.
    pub replayed: usize,
    /// The fixtures the two versions decide differently.
    pub replay: Vec<Replayed>,
    /// Production's traffic decided under both versions (`--replay`), when asked.
    pub traffic: Option<BlastRadius>,
    /// What a live server showed, when the report compares a contract with a server
    /// (`--upstream`): TO is then the contract with the server's `outputSchema` as its schema.
    pub server: Option<ServerFacts>,
}

/// What a live server showed of a tool (`toolgate diff --upstream`).
#[derive(Debug, Clone)]
pub struct ServerFacts {
    /// The server, as the command line names it (its program, or its URL).
    pub server: String,
    /// Whether it lists the tool.
    pub listed: bool,
    /// Whether it declares an `outputSchema` for the tool.
    pub declares_output_schema: bool,
    /// Each live call made (`--call`).
    pub calls: Vec<LiveCall>,
}

/// One live call's result, decided by the contract as `toolgate mcp-proxy` decides it.
#[derive(Debug, Clone)]
pub struct LiveCall {
    /// Where its arguments came from: an argument fixture, or `--arguments` N.
    pub arguments_from: String,
    /// The gate's decision of its result, or why there is no result to decide.
    pub decided: Result<Seen, String>,
}

impl ServerFacts {
    /// The live calls the contract refused, or that had no result.
    pub fn refused(&self) -> impl Iterator<Item = &LiveCall> {
        self.calls.iter().filter(|call| {
            call.decided
                .as_ref()
                .map_or(true, |seen| seen.outcome == "rejected")
        })
    }
}

impl Report {
    /// The answer for one verdict.
    pub fn answer(&self, verdict: BumpVerdict) -> &Answer {
        &self.answers[BumpVerdict::ALL
            .iter()
            .position(|v| *v == verdict)
            .unwrap_or(0)]
    }
}
