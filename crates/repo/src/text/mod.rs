//! Text for people: coloured unified diffs, and markdown that text from the repository cannot
//! break out of.

pub mod diff;
pub mod markdown;

use std::borrow::Cow;

/// A JSON pointer as reports, messages and acceptance files print it: the empty pointer (the
/// whole document) as `""` with those words, so nobody copies a `/` (which points at a member
/// named "") into an acceptance file.
pub fn pointer(pointer: &str) -> Cow<'_, str> {
    if pointer.is_empty() {
        Cow::Borrowed("\"\" (the whole document)")
    } else {
        Cow::Borrowed(pointer)
    }
}
