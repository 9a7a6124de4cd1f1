//! Freshness: a timestamp field, parsed as RFC 3339 by a real date library, must be neither older
//! than the window nor further in the future than the allowed clock skew.

use std::time::{Duration, SystemTime};

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::Violation;
use crate::error::CompileError;
use crate::spec::{FreshnessSpec, error_at};

#[derive(Debug)]
pub(crate) struct Freshness {
    max_age: time::Duration,
    max_future: time::Duration,
}

impl Freshness {
    pub fn compile(spec: &FreshnessSpec) -> Result<Freshness, CompileError> {
        Ok(Freshness {
            max_age: duration(&spec.max_age)?,
            max_future: duration(&spec.max_future)?,
        })
    }

    #[cfg(test)]
    fn new(max_age: Duration, max_future: Duration) -> Freshness {
        Freshness {
            max_age: time::Duration::try_from(max_age).unwrap(),
            max_future: time::Duration::try_from(max_future).unwrap(),
        }
    }

    pub fn check(&self, value: &Value, field: &str, now: SystemTime) -> Result<(), Violation> {
        let Some(text) = value.as_str() else {
            return Err(Violation::new(
                format!("`{field}` is {value}, not an RFC 3339 timestamp string"),
                "make the schema declare the field as a string with format date-time",
            ));
        };
        let observed = parse_rfc3339(text).map_err(|reason| {
            Violation::new(
                format!("`{field}` is {value}, which is not a valid RFC 3339 timestamp ({reason})"),
                "the upstream's clock or formatting is broken; the evidence cannot be dated",
            )
        })?;
        let age = OffsetDateTime::from(now) - observed;
        if age > self.max_age {
            return Err(Violation::new(
                format!(
                    "`{field}` is {text}, {} old; the contract accepts at most {}",
                    human(age),
                    human(self.max_age)
                ),
                "stale evidence: fetch it again rather than act on an old observation",
            ));
        }
        if -age > self.max_future {
            return Err(Violation::new(
                format!(
                    "`{field}` is {text}, {} in the future; the contract tolerates {} of clock skew",
                    human(-age),
                    human(self.max_future)
                ),
                "the upstream's clock is wrong or the value is fabricated; a future observation proves nothing",
            ));
        }
        Ok(())
    }
}

/// Parses an RFC 3339 `date-time` strictly, with the `time` crate.
pub(crate) fn parse_rfc3339(text: &str) -> Result<OffsetDateTime, String> {
    // The `time` crate also takes the space separator RFC 3339 allows "for readability";
    // JSON Schema's `date-time` (RFC 3339 section 5.6 proper) does not, and neither do we.
    if text
        .as_bytes()
        .get(10)
        .is_some_and(|separator| !matches!(separator, b'T' | b't'))
    {
        return Err("date and time must be joined by `T`".to_owned());
    }
    OffsetDateTime::parse(text, &Rfc3339).map_err(|error| error.to_string())
}

/// Parses an RFC 3339 timestamp exactly as freshness rules do (e.g. for a request's `now`).
pub fn parse_timestamp(text: &str) -> Result<SystemTime, String> {
    parse_rfc3339(text).map(SystemTime::from)
}

fn duration(spanned: &serde_saphyr::Spanned<String>) -> Result<time::Duration, CompileError> {
    let parsed: Duration = humantime::parse_duration(&spanned.value).map_err(|error| {
        error_at(
            spanned,
            format!(
                "`{}` is not a duration ({error}); write e.g. 15m, 2m, 90s, 1h",
                spanned.value
            ),
        )
    })?;
    time::Duration::try_from(parsed).map_err(|_| {
        error_at(
            spanned,
            format!("`{}` is too long a duration", spanned.value),
        )
    })
}

fn human(duration: time::Duration) -> String {
    let whole = Duration::from_secs(duration.whole_seconds().unsigned_abs());
    humantime::format_duration(whole).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> SystemTime {
        OffsetDateTime::parse(text, &Rfc3339).unwrap().into()
    }

    fn rule() -> Freshness {
        Freshness::new(Duration::from_secs(15 * 60), Duration::from_secs(120))
    }

    #[test]
    fn inside_the_window_passes() {
        let now = at("2026-11-29T12:00:00Z");
        assert!(
            rule()
                .check(&json!("2026-11-29T11:50:00Z"), "observed_at", now)
                .is_ok()
        );
        assert!(
            rule()
                .check(&json!("2026-11-29T12:01:30Z"), "observed_at", now)
                .is_ok()
        );
        assert!(
            rule()
                .check(&json!("2026-11-29T13:55:00+01:55"), "observed_at", now)
                .is_ok()
        );
    }

    #[test]
    fn stale_and_future_values_fail() {
        let now = at("2026-11-29T12:00:00Z");
        let stale = rule()
            .check(&json!("2026-11-29T11:44:59Z"), "observed_at", now)
            .unwrap_err();
        assert!(stale.message.contains("15m"), "{}", stale.message);
        assert!(
            rule()
                .check(&json!("2026-11-29T12:02:01Z"), "observed_at", now)
                .is_err()
        );
    }

    #[test]
    fn impossible_or_malformed_dates_fail() {
        let now = at("2026-11-29T12:00:00Z");
        for bad in [
            "2026-02-30T12:00:00Z",
            "2026-11-29 12:00:00Z",
            "yesterday",
            "2026-11-29T12:00:00",
        ] {
            assert!(
                rule().check(&json!(bad), "observed_at", now).is_err(),
                "{bad}"
            );
        }
        assert!(
            rule()
                .check(&json!(1764417600), "observed_at", now)
                .is_err()
        );
    }
}
