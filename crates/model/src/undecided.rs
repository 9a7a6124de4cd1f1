//! Why the model cannot answer a question exactly: a keyword it does not model, a pattern too
//! large to compare, a format it does not know. Every engine above turns it into an undecided
//! verdict with this reason, never into a guess.

use std::fmt;

/// Why a question about a schema cannot be decided exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecided(String);

impl Undecided {
    /// Undecided, because of `reason` (a sentence fragment: "… uses `not`").
    pub fn new(reason: impl Into<String>) -> Undecided {
        Undecided(reason.into())
    }

    /// The reason, as a report prints it.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Undecided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Undecided {}

/// Reports carry the reason as text.
impl From<Undecided> for String {
    fn from(undecided: Undecided) -> String {
        undecided.0
    }
}
