//! Freshness: a timestamp field, parsed as RFC 3339 by a real date library, must be neither older
//! than the window nor further in the future than the allowed clock skew.

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{Check, CompiledKind, KindSpec, Violation};
use crate::document::Node;
use crate::error::{CompileError, error_at};
use crate::request::Request;
use crate::timestamp::{self, UnixNanos};

/// `freshness: { field, max_age, max_future }`, durations as humantime writes them (`15m`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FreshnessSpec {
    pub field: Spanned<String>,
    pub max_age: Spanned<String>,
    pub max_future: Spanned<String>,
}

impl KindSpec for FreshnessSpec {
    fn field(&self) -> &Spanned<String> {
        &self.field
    }

    fn compile(&self, _rule_name: &Spanned<String>) -> Result<CompiledKind, CompileError> {
        Ok(CompiledKind::Freshness(Freshness {
            max_age: duration(&self.max_age)?,
            max_future: duration(&self.max_future)?,
        }))
    }
}

#[derive(Debug)]
pub(crate) struct Freshness {
    max_age: Duration,
    max_future: Duration,
}

impl Check for Freshness {
    fn context_keys(&self) -> Vec<&str> {
        Vec::new()
    }

    fn check(
        &self,
        value: Node<'_>,
        field: &str,
        _request: &Request,
        now: SystemTime,
    ) -> Result<(), Violation> {
        let Some(text) = value.as_str() else {
            return Err(Violation::new(
                format!("`{field}` is {value}, not an RFC 3339 timestamp string"),
                "make the schema declare the field as a string with format date-time",
            ));
        };
        let observed = timestamp::parse(text).map_err(|reason| {
            Violation::new(
                format!("`{field}` is {value}, which is not a valid RFC 3339 timestamp ({reason})"),
                "the upstream's clock or formatting is broken; the evidence cannot be dated",
            )
        })?;
        let age: UnixNanos = timestamp::unix_nanos(now) - observed;
        if age > self.max_age.as_nanos() as i128 {
            return Err(Violation::new(
                format!(
                    "`{field}` is {text}, {} old; the contract accepts at most {}",
                    human(age),
                    human_duration(self.max_age)
                ),
                "stale evidence: fetch it again rather than act on an old observation",
            ));
        }
        if -age > self.max_future.as_nanos() as i128 {
            return Err(Violation::new(
                format!(
                    "`{field}` is {text}, {} in the future; the contract tolerates {} of clock skew",
                    human(-age),
                    human_duration(self.max_future)
                ),
                "the upstream's clock is wrong or the value is fabricated; a future observation proves nothing",
            ));
        }
        Ok(())
    }
}

fn duration(spanned: &Spanned<String>) -> Result<Duration, CompileError> {
    humantime::parse_duration(&spanned.value).map_err(|error| {
        error_at(
            spanned,
            format!(
                "`{}` is not a duration ({error}); write e.g. 15m, 2m, 90s, 1h",
                spanned.value
            ),
        )
    })
}

fn human(nanos: UnixNanos) -> String {
    human_duration(Duration::from_secs(
        u64::try_from(nanos.unsigned_abs() / 1_000_000_000).unwrap_or(u64::MAX),
    ))
}

fn human_duration(duration: Duration) -> String {
    humantime::format_duration(Duration::from_secs(duration.as_secs())).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::CheckValue;
    use serde_json::Value;
    use serde_json::json;

    fn at(text: &str) -> SystemTime {
        timestamp::parse_timestamp(text).unwrap()
    }

    fn rule() -> Freshness {
        Freshness {
            max_age: Duration::from_secs(15 * 60),
            max_future: Duration::from_secs(120),
        }
    }

    impl Freshness {
        fn at(&self, value: &Value, now: SystemTime) -> Result<(), Violation> {
            self.check_value(value, "observed_at", &Request::new("r"), now)
        }
    }

    #[test]
    fn inside_the_window_passes() {
        let now = at("2026-11-29T12:00:00Z");
        assert!(rule().at(&json!("2026-11-29T11:50:00Z"), now).is_ok());
        assert!(rule().at(&json!("2026-11-29T12:01:30Z"), now).is_ok());
        assert!(rule().at(&json!("2026-11-29T13:55:00+01:55"), now).is_ok());
    }

    /// The window is closed at both ends: exactly `max_age` old and exactly `max_future` ahead
    /// pass; a nanosecond more fails.
    #[test]
    fn the_window_includes_its_edges() {
        let now = at("2026-11-29T12:00:00Z");
        assert!(rule().at(&json!("2026-11-29T11:45:00Z"), now).is_ok());
        assert!(
            rule()
                .at(&json!("2026-11-29T11:44:59.999999999Z"), now)
                .is_err()
        );
        assert!(rule().at(&json!("2026-11-29T12:02:00Z"), now).is_ok());
        assert!(
            rule()
                .at(&json!("2026-11-29T12:02:00.000000001Z"), now)
                .is_err()
        );
    }

    #[test]
    fn stale_and_future_values_fail() {
        let now = at("2026-11-29T12:00:00Z");
        let stale = rule().at(&json!("2026-11-29T11:44:59Z"), now).unwrap_err();
        assert!(stale.message.contains("15m"), "{}", stale.message);
        assert!(rule().at(&json!("2026-11-29T12:02:01Z"), now).is_err());
    }

    /// The operator is told how far off the value was, to the second, against what the contract
    /// allows.
    #[test]
    fn the_operator_message_states_the_age_and_the_allowance() {
        let now = at("2026-11-29T12:00:00Z");
        let stale = rule()
            .at(&json!("2026-11-29T10:44:58.5Z"), now)
            .unwrap_err();
        assert_eq!(
            stale.message,
            "`observed_at` is 2026-11-29T10:44:58.5Z, 1h 15m 1s old; the contract accepts at most 15m"
        );
        let future = rule().at(&json!("2026-11-29T12:02:01Z"), now).unwrap_err();
        assert_eq!(
            future.message,
            "`observed_at` is 2026-11-29T12:02:01Z, 2m 1s in the future; the contract tolerates 2m of clock skew"
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
            assert!(rule().at(&json!(bad), now).is_err(), "{bad}");
        }
        assert!(rule().at(&json!(1764417600), now).is_err());
    }
}
