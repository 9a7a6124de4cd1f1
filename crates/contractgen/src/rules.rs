//! Semantic rules for a generated contract, and their reference: a binding of a promised field to
//! a trusted context value (decided by serde_json's equality), and a freshness window on one
//! (decided by the `time` crate's RFC 3339 parser). Documents for a freshness rule get timestamps
//! near [`NOW`] in the forms RFC 3339 allows, so the gate's own timestamp parser is exercised
//! where its answer matters.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::Entropy;

/// The decision time the generated timestamps are drawn around (2026-11-29T12:00:00Z).
pub const NOW: i64 = 1_764_417_600;

/// How old a fresh value may be, and how far in the future, in seconds (`15m` and `2m`).
const MAX_AGE: i64 = 15 * 60;
const MAX_FUTURE: i64 = 2 * 60;

/// One rule on a promised field.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// The field equals the trusted context value under `context`.
    Binding {
        /// The promised field's agent-visible name.
        field: String,
        /// The context key.
        context: String,
    },
    /// The field is an RFC 3339 timestamp at most 15 minutes old and 2 minutes ahead.
    Freshness {
        /// The promised field's agent-visible name.
        field: String,
    },
}

impl Rule {
    /// The field it checks.
    pub fn field(&self) -> &str {
        match self {
            Rule::Binding { field, .. } | Rule::Freshness { field } => field,
        }
    }

    /// Its entry in `contract.yaml`'s `rules:`.
    pub(crate) fn yaml(&self, index: usize) -> String {
        match self {
            Rule::Binding { field, context } => format!(
                "  - name: rule{index}\n    binding: {{ field: {}, context: {} }}\n    retryable: false\n",
                Value::from(field.as_str()),
                Value::from(context.as_str())
            ),
            Rule::Freshness { field } => format!(
                "  - name: rule{index}\n    freshness: {{ field: {}, max_age: 15m, max_future: 2m }}\n    retryable: true\n",
                Value::from(field.as_str())
            ),
        }
    }

    /// Whether `value` (the field's value, absent as `None`) keeps the rule at `now` (nanoseconds
    /// since the Unix epoch), decided without the gate: serde_json's equality for a binding, the
    /// `time` crate for freshness.
    pub fn holds(&self, value: Option<&Value>, context: &Map<String, Value>, now: i128) -> bool {
        let Some(value) = value else {
            return false; // an absent field cannot keep a rule
        };
        match self {
            Rule::Binding { context: key, .. } => context.get(key) == Some(value),
            Rule::Freshness { .. } => {
                let Some(observed) = value
                    .as_str()
                    .and_then(|text| OffsetDateTime::parse(text, &Rfc3339).ok())
                else {
                    return false;
                };
                let age = now - observed.unix_timestamp_nanos();
                age <= i128::from(MAX_AGE) * 1_000_000_000
                    && -age <= i128::from(MAX_FUTURE) * 1_000_000_000
            }
        }
    }
}

/// A timestamp near [`NOW`]: inside the window, just past either edge, or far off, in one of the
/// spellings RFC 3339 allows (an offset, lower-case letters, a fraction).
pub(crate) fn timestamp(entropy: &mut impl Entropy) -> String {
    let seconds = *entropy.pick(&[
        0,
        -60,
        -MAX_AGE,
        -MAX_AGE - 1,
        MAX_FUTURE,
        MAX_FUTURE + 1,
        -86_400 * 365,
        3_600,
    ]);
    let offset_minutes = *entropy.pick(&[0i16, 0, 120, -180, 330, -59]);
    let offset =
        time::UtcOffset::from_hms((offset_minutes / 60) as i8, (offset_minutes % 60) as i8, 0)
            .unwrap_or(time::UtcOffset::UTC);
    let instant = OffsetDateTime::from_unix_timestamp(NOW + seconds)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .to_offset(offset);
    let mut text = instant
        .format(&Rfc3339)
        .unwrap_or_else(|_| "2026-11-29T12:00:00Z".to_owned());
    match entropy.below(5) {
        0 => text = text.replacen('T', "t", 1),
        1 => text = text.replace('Z', "z"),
        2 => {
            // A fraction before the offset: `…:00.5Z`, `…:00.000000001+02:00`.
            let at = text
                .rfind(['Z', '+', '-'])
                .filter(|at| *at > 18)
                .unwrap_or(text.len());
            let fraction = *entropy.pick(&[".5", ".000000001", ".999999999", ".0"]);
            text.insert_str(at, fraction);
        }
        _ => {}
    }
    text
}

/// `document` with the value at `pointer` replaced by `value`, when the place exists (its parent
/// an object or the member already there).
pub(crate) fn with_value_at(document: &Value, pointer: &str, value: Value) -> Option<Value> {
    let (parent, last) = pointer.rsplit_once('/')?;
    let name = last.replace("~1", "/").replace("~0", "~");
    let mut out = document.clone();
    out.pointer_mut(parent)?
        .as_object_mut()?
        .insert(name, value);
    Some(out)
}
