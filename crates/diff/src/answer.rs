//! What `toolgate diff` found: one answer per verdict, every change, the replay. The data the
//! renderers in [`super::report`] read, apart from how it is computed.

use super::change::{BumpVerdict, Change};
use super::replay::Replayed;
use super::traffic::BlastRadius;
use super::witness::Witness;

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
