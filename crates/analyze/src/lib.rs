//! Evidence that a contract is as tight as it looks: near-miss mutants derived from admitted
//! fixtures and judged by the gate's own decisions, and the lint that reads each version's
//! schemas for open objects, unbounded values and promised fields that can carry anything.

pub mod cores;
pub mod lint;
pub mod mutants;

toolgate_repo::choices! {
    /// How `toolgate mutate` reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Format {
        /// For a terminal.
        #[default]
        Human = "human",
        /// Stable and documented field by field (see the user guide, doc/guide/).
        Json = "json",
    }
}

toolgate_repo::choices! {
    /// How `toolgate lint` reports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum LintFormat {
        /// For a terminal.
        #[default]
        Human = "human",
        /// Stable and documented field by field (see the user guide, doc/guide/).
        Json = "json",
        /// SARIF 2.1.0, for GitHub code scanning: each finding at its line; accepted ones suppressed.
        Sarif = "sarif",
    }
}
