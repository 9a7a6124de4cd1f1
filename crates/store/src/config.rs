//! Retention as an operator configures it, the same at every front (`--retain STORE`,
//! `--retain-admitted RATE`, `--retain-budget BYTES`, `--retain-max-age DURATION`,
//! `--retain-secret KEY`, `--retain-recipient AGE1…`, `--retain-endpoint URL`; the Python
//! binding's `Retention(…)`).

use std::time::Duration;

use toolgate_gate::{RetentionPolicy, SecretContext};

use crate::retainer::{Log, Retainer, RetentionOptions};
use crate::seal::Seal;
use crate::store::StoreSpec;

/// What to keep, where, and within what.
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionConfig {
    /// A folder's path, or `s3://BUCKET/PREFIX`.
    pub store: String,
    /// The share of admissions kept (every refusal is).
    pub admitted_rate: f64,
    /// The most bytes the store may use (its files' blocks on disk, not their lengths).
    pub budget_bytes: u64,
    /// The most records the store may hold.
    pub max_records: usize,
    /// The oldest an object may be.
    pub max_age: Duration,
    /// Context keys kept as their keyed digest only.
    pub secret_keys: Vec<String>,
    /// The operator's key for those digests (HMAC-SHA-256): at least 32 random bytes (the file
    /// `--retain-secret-key` names, as the front reads it), required when `secret_keys` names any.
    pub secret_key: Option<Vec<u8>>,
    /// `age` recipients every object is sealed to (none: not sealed).
    pub recipients: Vec<String>,
    /// An S3-compatible server's endpoint (default: the environment's, or Amazon's).
    pub endpoint: Option<String>,
}

impl RetentionConfig {
    /// Defaults for `store`: refusals only, 1 GiB, 100,000 records, 30 days.
    pub fn new(store: impl Into<String>) -> RetentionConfig {
        RetentionConfig {
            store: store.into(),
            admitted_rate: 0.0,
            budget_bytes: 1 << 30,
            max_records: crate::retainer::DEFAULT_MAX_RECORDS,
            max_age: Duration::from_secs(30 * 24 * 3600),
            secret_keys: Vec::new(),
            secret_key: None,
            recipients: Vec::new(),
            endpoint: None,
        }
    }

    /// Opens the store and starts keeping in it; `Err` says what is wrong (a store that cannot
    /// be opened, a recipient that is not one), for the front to stop at start.
    pub fn start(&self, log: Log) -> Result<Retainer, String> {
        let store = StoreSpec::parse(&self.store)?.open(self.endpoint.as_deref())?;
        let secret = self.secret()?;
        let seal = if self.recipients.is_empty() {
            None
        } else {
            Some(Seal::new(&self.recipients)?)
        };
        Ok(Retainer::start(
            store,
            RetentionOptions {
                policy: RetentionPolicy::new(self.admitted_rate),
                budget_bytes: self.budget_bytes,
                max_records: self.max_records,
                max_age: self.max_age,
                secret,
                seal,
                queue: 1024,
            },
            log,
        ))
    }
}

impl RetentionConfig {
    /// The secret context keys with the operator's key, read from its file; `Err` when keys are
    /// named without a key file, or the file is not a key.
    fn secret(&self) -> Result<SecretContext, String> {
        match (&self.secret_key, self.secret_keys.is_empty()) {
            (_, true) => Ok(SecretContext::none()),
            (None, false) => Err(format!(
                "--retain-secret {} needs --retain-secret-key FILE: its values are kept as an HMAC under the operator's key (an unkeyed digest of a tenant or an e-mail is found again by hashing guesses); make one with `head -c 32 /dev/urandom > retain.key`, keep it private, and give the same file to `toolgate reproduce`",
                self.secret_keys.join(", ")
            )),
            (Some(key), false) => {
                SecretContext::new(self.secret_keys.clone(), key).map_err(|short| short.to_string())
            }
        }
    }
}

/// A rate from 0 to 1 (`0.01`, `1`, `0`), or a percentage (`1%`).
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.strip_suffix('%') {
        Some(number) => (number, 100.0),
        None => (text, 1.0),
    };
    let rate = number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("{text:?} is not a rate: write 0.01 or 1%"))?
        / scale;
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!("{text:?} is not between 0 and 1 (0 % and 100 %)"))
    }
}

/// An age (`30d`, `12h`, `90m`) above zero: how long a kept record may stay.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let age = humantime::parse_duration(text.trim())
        .map_err(|error| format!("{text:?} is not a duration ({error}): write 7d, 12h or 90m"))?;
    if age.is_zero() {
        return Err(format!(
            "{text:?}: an age of zero would delete every record as it is written"
        ));
    }
    Ok(age)
}

/// A size in bytes: a number, with `KiB`, `MiB`, `GiB` (or `KB`, `MB`, `GB`, in thousands).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|ch: char| !ch.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "{text:?}: write a number of bytes, or one with KiB, MiB, GiB"
            ));
        }
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|number| number.checked_mul(scale))
        .filter(|bytes| *bytes > 0)
        .ok_or_else(|| format!("{text:?} is not a size above zero"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Secret context keys are kept under the operator's key or not at all: named without a
    /// key, or with a short one, the front refuses to start.
    #[test]
    fn secret_keys_need_the_operators_key() {
        let mut config = RetentionConfig::new("kept");
        assert!(config.secret().unwrap().keys().is_empty());
        config.secret_keys = vec!["tenant".to_owned()];
        assert!(config.secret().unwrap_err().contains("--retain-secret-key"));
        config.secret_key = Some(vec![1; 16]);
        assert!(config.secret().unwrap_err().contains("at least 32"));
        config.secret_key = Some(vec![1; 32]);
        assert_eq!(config.secret().unwrap().keys(), ["tenant"]);
    }

    #[test]
    fn rates_and_sizes_read_as_an_operator_writes_them() {
        assert_eq!(parse_rate("0.01"), Ok(0.01));
        assert_eq!(parse_rate("1%"), Ok(0.01));
        assert_eq!(parse_rate("0"), Ok(0.0));
        assert!(parse_rate("2").is_err());
        assert!(parse_rate("-1").is_err());
        assert!(parse_rate("a lot").is_err());
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2000"), Ok(2000));
        assert_eq!(parse_bytes("3MB"), Ok(3_000_000));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("1 parsec").is_err());
        assert!(parse_bytes("99999999999999999999GiB").is_err());
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age(" 90m "), Ok(Duration::from_secs(5_400)));
        assert!(parse_age("0s").is_err());
        assert!(parse_age("soon").is_err());
    }
}
