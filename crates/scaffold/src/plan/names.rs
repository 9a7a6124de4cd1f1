//! The names a scaffold gives: a promised field's name from a member's, and a fixture case's
//! from an example's, unique among those taken.

use super::*;

/// A member name as a field name: letters, digits and `_`, starting with a letter.
pub(super) fn field_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
        .collect();
    if !out.starts_with(|ch: char| ch.is_ascii_alphabetic()) {
        out.insert_str(0, "f_");
    }
    out
}

/// An example's name as a fixture case name.
pub(super) fn case_name(name: &str) -> String {
    let mut case: String = name
        .chars()
        .map(|ch| {
            if ch.is_ascii_alphanumeric() || ch == '-' {
                ch.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if !case.starts_with(|ch: char| ch.is_ascii_alphanumeric()) {
        case.insert_str(0, "example");
    }
    case
}

pub(super) fn unique_case(base: &str, taken: &mut BTreeSet<String>) -> String {
    let mut case = base.to_owned();
    let mut counter = 2;
    while !taken.insert(case.clone()) || !is_case_name(&case) {
        case = format!("{base}_{counter}");
        counter += 1;
    }
    case
}
