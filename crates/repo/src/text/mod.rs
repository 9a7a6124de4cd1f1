//! Text for people: coloured unified diffs, and markdown that text from the repository cannot
//! break out of.

pub mod diff;
pub mod markdown;
