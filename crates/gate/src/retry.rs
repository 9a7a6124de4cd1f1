//! The retry policy a contract declares, so adapters retry by rule and never by a model's whim.

use std::time::Duration;

use crate::decision::Decision;
use crate::outcome::{ErrorCode, Outcome};

/// How often, for how long, and on which codes an adapter may ask the upstream again.
///
/// A retry is a new call to the tool whose bytes go through [`Contract::admit`](crate::Contract::admit)
/// again: fresh, validated evidence. A decision from an earlier attempt is never reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) time_budget: Duration,
    pub(crate) retryable_codes: Vec<ErrorCode>,
}

impl Default for RetryPolicy {
    /// One attempt, no retries; `UPSTREAM_UNAVAILABLE` is marked retryable for the agent's sake.
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            time_budget: Duration::from_secs(10),
            retryable_codes: vec![ErrorCode::UpstreamUnavailable],
        }
    }
}

impl RetryPolicy {
    /// Attempts in total, the first one included.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Wall-clock budget for all attempts together, measured from the start of the first.
    pub fn time_budget(&self) -> Duration {
        self.time_budget
    }

    /// Whether the contract lets this code be retried.
    pub fn is_retryable(&self, code: ErrorCode) -> bool {
        self.retryable_codes.contains(&code)
    }

    /// The codes the contract lets be retried.
    pub fn retryable_codes(&self) -> &[ErrorCode] {
        &self.retryable_codes
    }

    /// Whether an adapter that got `decision` on attempt `attempt` (1-based), `elapsed` after the
    /// first attempt began, should call the tool again. Never true for a success.
    pub fn should_retry(&self, decision: &Decision, attempt: u32, elapsed: Duration) -> bool {
        !matches!(decision.outcome(), Outcome::Admitted)
            && decision.retryable()
            && attempt < self.max_attempts
            && elapsed < self.time_budget
    }
}
