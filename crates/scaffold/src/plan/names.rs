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

/// Whether a member holds a secret the upstream sends (a session token, a client secret, a
/// password): by a word of its name, or where the description marks it (`writeOnly`, which the
/// conversion also writes for `x-sensitive`-style hints, or `format: password`). Such a member
/// is never offered as a field, and its value is redacted from what a store keeps.
pub(super) fn is_secret(name: &str, schema: &Value) -> bool {
    if schema.get("writeOnly") == Some(&Value::Bool(true))
        || schema.get("format").and_then(Value::as_str) == Some("password")
    {
        return true;
    }
    let words = words(name);
    let has = |word: &str| words.iter().any(|known| known == word);
    let pair = |first: &str, second: &str| {
        words
            .windows(2)
            .any(|two| two[0] == first && two[1] == second)
    };
    // A page or sync token is a cursor, not a credential.
    let cursor = [
        "page",
        "next",
        "prev",
        "previous",
        "continuation",
        "cursor",
        "sync",
        "pagination",
    ]
    .iter()
    .any(|word| has(word));
    [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "credential",
        "credentials",
        "apikey",
    ]
    .iter()
    .any(|word| has(word))
        || (has("token") && !cursor)
        || [
            "api",
            "private",
            "access",
            "secret",
            "signing",
            "encryption",
        ]
        .iter()
        .any(|first| pair(first, "key"))
}

/// A member name's words, lowercase: split at anything not a letter or digit, and where a
/// lowercase letter or a digit meets an uppercase one (`clientSecret`, `APIKey` as `api key`).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (index, &ch) in chars.iter().enumerate() {
        if !ch.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        let previous = index.checked_sub(1).map(|at| chars[at]);
        let next = chars.get(index + 1);
        let boundary = ch.is_uppercase()
            && previous.is_some_and(|previous| {
                previous.is_lowercase()
                    || previous.is_ascii_digit()
                    || (previous.is_uppercase() && next.is_some_and(|next| next.is_lowercase()))
            });
        if boundary && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.extend(ch.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}
