//! Replay: every fixture of the tool through both versions, and each one whose decision differs.

use std::path::PathBuf;

use super::witness::{Base, Seen};
use toolgate_repo::FixtureClass;

/// A fixture both versions decide, differently.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The fixture's raw file.
    pub fixture: PathBuf,
    /// Its class.
    pub class: FixtureClass,
    /// FROM's decision.
    pub from: Seen,
    /// TO's decision.
    pub to: Seen,
}

/// The fixtures whose outcome, layer, rule, code, retryable flag or agent bytes differ.
pub(crate) fn differences(bases: &[Base]) -> Vec<Replayed> {
    bases
        .iter()
        .filter_map(|base| {
            let (from, to) = (Seen::of(&base.from), Seen::of(&base.to));
            // Outcome, layer and rule are in `Seen`; code and retryable in the agent bytes.
            (from != to).then(|| Replayed {
                fixture: base.origin.clone(),
                class: base.class,
                from,
                to,
            })
        })
        .collect()
}
