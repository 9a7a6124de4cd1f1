//! RFC 3339 `date-time` to an instant, for the freshness rule.
//!
//! The common shape (`2026-11-29T11:55:00Z`, `…T13:58:30.250+02:00`) is parsed directly; anything
//! else (a leap second, more than nine fractional digits, a malformed string) goes to the `time`
//! crate, which is the reference: the fast path may only ever agree with it or step aside, which
//! `tests` below and the `rfc3339` fuzz target check.
//!
//! A leap second (`23:59:60`, in UTC) is what JSON Schema's `date-time` accepts on any day; it is
//! read as the last nanosecond of its minute, as the `time` crate reads the ones it knows of, so
//! the schema and the freshness rule never disagree about whether a timestamp is well formed.

use std::time::{Duration, SystemTime};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Nanoseconds since the Unix epoch.
pub(crate) type UnixNanos = i128;

/// Parses an RFC 3339 date-time strictly (date and time joined by `T` or `t`).
pub(crate) fn parse(text: &str) -> Result<UnixNanos, String> {
    match fast(text.as_bytes()) {
        Some(nanos) => Ok(nanos),
        None => reference(text).or_else(|error| leap_second(text).ok_or(error)),
    }
}

/// A leap second the `time` crate does not know of: `hh:mm:60[.fraction]` whose UTC time is
/// 23:59:60, as the last nanosecond of 23:59:59. `None` for anything else.
fn leap_second(text: &str) -> Option<UnixNanos> {
    const NANOS_PER_SECOND: UnixNanos = 1_000_000_000;
    if text.get(17..19)? != "60" {
        return None;
    }
    // The same timestamp one second earlier, without the fraction.
    let after_fraction = match text.as_bytes().get(19)? {
        b'.' => 20 + text[20..].bytes().take_while(u8::is_ascii_digit).count(),
        _ => 19,
    };
    let earlier = format!("{}59{}", &text[..17], &text[after_fraction..]);
    let second = reference(&earlier).ok()?;
    let second_of_day = second.div_euclid(NANOS_PER_SECOND).rem_euclid(86_400);
    (second % NANOS_PER_SECOND == 0 && second_of_day == 86_399)
        .then_some(second + NANOS_PER_SECOND - 1)
}

/// Parses an RFC 3339 timestamp exactly as freshness rules do (e.g. for a request's `now`).
pub fn parse_timestamp(text: &str) -> Result<SystemTime, String> {
    let nanos = parse(text)?;
    let magnitude = u64::try_from(nanos.unsigned_abs())
        .map(Duration::from_nanos)
        .map_err(|_| "out of range".to_owned())?;
    let time = if nanos >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(magnitude)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(magnitude)
    };
    time.ok_or_else(|| "out of this system's time range".to_owned())
}

/// The reference parse, with the `time` crate.
pub(crate) fn reference(text: &str) -> Result<UnixNanos, String> {
    // The `time` crate also takes the space separator RFC 3339 allows "for readability";
    // JSON Schema's `date-time` (RFC 3339 section 5.6 proper) does not, and neither do we.
    if text
        .as_bytes()
        .get(10)
        .is_some_and(|separator| !matches!(separator, b'T' | b't'))
    {
        return Err("date and time must be joined by `T`".to_owned());
    }
    OffsetDateTime::parse(text, &Rfc3339)
        .map(OffsetDateTime::unix_timestamp_nanos)
        .map_err(|error| error.to_string())
}

/// `now` as nanoseconds since the Unix epoch.
pub(crate) fn unix_nanos(now: SystemTime) -> UnixNanos {
    match now.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// The common shape, or `None` to defer to the reference.
pub(crate) fn fast(text: &[u8]) -> Option<UnixNanos> {
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        text.get(range)?.iter().try_fold(0u32, |number, byte| {
            byte.is_ascii_digit()
                .then(|| number * 10 + u32::from(byte - b'0'))
        })
    };
    if text.len() < 20
        || text[4] != b'-'
        || text[7] != b'-'
        || !matches!(text[10], b'T' | b't')
        || text[13] != b':'
        || text[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut at = 19;
    let mut fraction_nanos = 0u32;
    if text[at] == b'.' {
        let start = at + 1;
        let end = start
            + text[start..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
        if end == start || end - start > 9 {
            return None;
        }
        fraction_nanos = digits(start..end)? * 10u32.pow(9 - (end - start) as u32);
        at = end;
    }
    let offset_seconds: i64 = match text.get(at..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (hours, minutes) = (digits(at + 1..at + 3)?, digits(at + 4..at + 6)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let seconds = i64::from(hours * 3600 + minutes * 60);
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(year), month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_seconds;
    Some(i128::from(seconds) * 1_000_000_000 + i128::from(fraction_nanos))
}

/// `nanos` as an RFC 3339 UTC timestamp, written exactly as the `time` crate writes it (a
/// fraction only when there is one, without trailing zeros; `Z`), for the years 0 to 9999.
/// `None` outside them.
pub(crate) fn format_utc(nanos: UnixNanos) -> Option<String> {
    let mut text = Vec::with_capacity(30);
    write_utc(&mut text, nanos)
        .then(|| String::from_utf8(text).expect("digits and separators are ASCII"))
}

/// Appends [`format_utc`]'s text to `out`; `false`, having written nothing, outside the years
/// 0 to 9999.
pub(crate) fn write_utc(out: &mut Vec<u8>, nanos: UnixNanos) -> bool {
    // Division of an i128 is a library call several times slower than an i64's, and every
    // clock from 1678 to 2262 fits an i64 of nanoseconds.
    let (seconds, fraction) = match i64::try_from(nanos) {
        Ok(nanos) => (
            nanos.div_euclid(1_000_000_000),
            nanos.rem_euclid(1_000_000_000),
        ),
        Err(_) => match i64::try_from(nanos.div_euclid(1_000_000_000)) {
            Ok(seconds) => (seconds, nanos.rem_euclid(1_000_000_000) as i64),
            Err(_) => return false,
        },
    };
    let fraction = fraction as u32;
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let second_of_day = seconds.rem_euclid(86_400) as u32;
    let Some(year) = u32::try_from(year).ok().filter(|year| *year < 10_000) else {
        return false;
    };
    // `YYYY-MM-DDTHH:MM:SS` and at most `.NNNNNNNNNZ`, formatted on the stack and appended once.
    let mut text = *b"0000-00-00T00:00:00.000000000Z";
    put_digits(&mut text[0..4], year);
    put_digits(&mut text[5..7], month);
    put_digits(&mut text[8..10], day);
    put_digits(&mut text[11..13], second_of_day / 3600);
    put_digits(&mut text[14..16], second_of_day / 60 % 60);
    put_digits(&mut text[17..19], second_of_day % 60);
    let mut end = 19;
    if fraction != 0 {
        let (mut value, mut width) = (fraction, 9);
        while value % 10 == 0 {
            value /= 10;
            width -= 1;
        }
        put_digits(&mut text[20..20 + width], value);
        end = 20 + width;
    }
    text[end] = b'Z';
    out.extend_from_slice(&text[..=end]);
    true
}

/// Fills `digits` with `value`'s last `digits.len()` decimal digits, zero-padded.
fn put_digits(digits: &mut [u8], mut value: u32) {
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`, the inverse of `days_from_civil`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path must agree with the reference wherever it answers, and must answer for
    /// every ordinary timestamp.
    fn agrees(text: &str) {
        let reference = reference(text).ok();
        match fast(text.as_bytes()) {
            Some(nanos) => assert_eq!(
                Some(nanos),
                reference,
                "{text}: the fast path disagrees with the time crate"
            ),
            None => {
                let ordinary = reference.is_some()
                    && !text.contains(":60")
                    && text.split('.').nth(1).is_none_or(|tail| {
                        tail.chars().take_while(char::is_ascii_digit).count() <= 9
                    });
                assert!(
                    !ordinary,
                    "{text}: the fast path stepped aside for an ordinary timestamp"
                );
            }
        }
    }

    #[test]
    fn formatting_matches_the_time_crate() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Years 0 to 9999, with whole seconds a third of the time.
            let nanos =
                i128::from(state % 315_537_897_600_000_000) * 1_000 - 62_167_219_200_000_000_000;
            let nanos = if state.is_multiple_of(3) {
                nanos - nanos.rem_euclid(1_000_000_000)
            } else {
                nanos
            };
            let expected = OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .unwrap()
                .format(&Rfc3339)
                .unwrap();
            assert_eq!(
                format_utc(nanos).as_deref(),
                Some(expected.as_str()),
                "{nanos}"
            );
        }
        // Where the i64 fast path ends, on both sides, and around the epoch.
        let min = i128::from(i64::MIN);
        let max = i128::from(i64::MAX);
        for nanos in [min - 1, min, min + 1, -1, 0, 1, max - 1, max, max + 1] {
            let expected = OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .unwrap()
                .format(&Rfc3339)
                .unwrap();
            assert_eq!(
                format_utc(nanos).as_deref(),
                Some(expected.as_str()),
                "{nanos}"
            );
        }
        assert_eq!(
            format_utc(1_764_417_600_000_000_000).as_deref(),
            Some("2025-11-29T12:00:00Z")
        );
        assert_eq!(
            format_utc(-62_167_219_200_000_000_001),
            None,
            "before the year 0"
        );
    }

    #[test]
    fn ordinary_timestamps_take_the_fast_path_and_agree() {
        for text in [
            "2026-11-29T11:55:00Z",
            "2026-11-29t11:55:00z",
            "2026-11-29T13:58:30.250+02:00",
            "2026-11-29T06:00:00.000000001-05:30",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999999999Z",
            "2000-02-29T12:00:00Z",
            "2024-02-29T23:59:59+23:59",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59-23:59",
        ] {
            assert!(fast(text.as_bytes()).is_some(), "{text}");
            agrees(text);
        }
    }

    #[test]
    fn the_rest_is_refused_or_left_to_the_reference() {
        for text in [
            "2026-02-29T12:00:00Z",
            "2100-02-29T12:00:00Z",
            "2026-02-30T11:55:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-31T00:00:00Z",
            "2026-11-29 11:55:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T11:60:00Z",
            "2016-12-31T23:59:60Z",
            "2026-11-29T11:55:00",
            "2026-11-29T11:55:00+0200",
            "2026-11-29T11:55:00.Z",
            "2026-11-29T11:55:00.1234567891Z",
            "2026-11-29T11:55:00+24:00",
            "2026-11-29T11:55:00Zjunk",
            "+2026-11-29T11:55:00Z",
            "２026-11-29T11:55:00Z",
            "",
        ] {
            agrees(text);
        }
    }

    #[test]
    fn leap_seconds_are_read_wherever_json_schema_accepts_them() {
        let last_nanosecond = |text: &str| reference(text).unwrap() + 999_999_999;
        // Not a month's end: the `time` crate refuses, the schema accepts, so do we.
        assert_eq!(
            parse("2026-11-29T23:59:60Z"),
            Ok(last_nanosecond("2026-11-29T23:59:59Z"))
        );
        assert_eq!(
            parse("2026-11-30T01:29:60.25+01:30"),
            Ok(last_nanosecond("2026-11-29T23:59:59Z"))
        );
        // A month's end: the `time` crate's own reading, which ours matches.
        assert_eq!(
            parse("2016-12-31T23:59:60Z"),
            Ok(last_nanosecond("2016-12-31T23:59:59Z"))
        );
        // Not 23:59 in UTC: no leap second, as for JSON Schema.
        for bad in [
            "2026-11-29T12:00:60Z",
            "2026-11-29T23:59:60+01:00",
            "2026-11-29T23:59:61Z",
            "2026-11-29T23:59:60",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sweep_of_dates_and_offsets_agrees_with_the_time_crate() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |limit: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % limit
        };
        for _ in 0..20_000 {
            let text = format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}{}",
                next(10_000),
                next(14),
                next(33),
                next(25),
                next(61),
                next(61),
                match next(4) {
                    0 => String::new(),
                    1 => format!(".{}", next(1000)),
                    2 => format!(".{:09}", next(1_000_000_000)),
                    _ => format!(".{:012}", next(1_000_000_000_000)),
                },
                match next(3) {
                    0 => "Z".to_owned(),
                    1 => format!("+{:02}:{:02}", next(25), next(61)),
                    _ => format!("-{:02}:{:02}", next(25), next(61)),
                }
            );
            agrees(&text);
        }
    }
}
