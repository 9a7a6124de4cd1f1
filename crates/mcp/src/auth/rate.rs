//! Per-caller rate limits (`--caller-rate`): a token bucket per caller, bounded in number.

use super::*;

/// The per-caller rate limit (`--caller-rate`): a token bucket for each caller (its token's
/// subject, or its address where the listener authenticates nobody).
pub(crate) struct CallerRate {
    limiter: governor::DefaultKeyedRateLimiter<String>,
}

impl std::fmt::Debug for CallerRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerRate").finish_non_exhaustive()
    }
}

impl CallerRate {
    pub(crate) fn new(rate: &RateLimit) -> CallerRate {
        let quota = governor::Quota::with_period(rate.period)
            .unwrap_or_else(|| governor::Quota::per_second(std::num::NonZeroU32::MIN))
            .allow_burst(rate.burst);
        CallerRate {
            limiter: governor::RateLimiter::keyed(quota),
        }
    }

    /// `Ok`, or how long `caller` must wait for its next request.
    pub(crate) fn check(&self, caller: &str) -> Result<(), Duration> {
        use governor::clock::Clock;
        self.limiter
            .check_key(&caller.to_owned())
            .map_err(|not_until| {
                not_until.wait_time_from(governor::clock::DefaultClock::default().now())
            })
    }

    /// Forgets the callers whose buckets are full again (run every minute), so distinct
    /// callers cannot grow the table without bound.
    pub(crate) async fn forget_idle_periodically(self: Arc<Self>) {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
    }
}

/// A `--caller-rate`: `N/s`, `N/m` or `N/h`, with a burst of `N` (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// The time one request's token takes to come back.
    pub period: Duration,
    /// The most requests at once.
    pub burst: std::num::NonZeroU32,
}

/// Reads a `--caller-rate` value.
pub fn parse_caller_rate(text: &str) -> Result<RateLimit, String> {
    let wrong = || format!("{text:?} is not a rate: write N/s, N/m or N/h (e.g. 20/s)");
    let (count, unit) = text.split_once('/').ok_or_else(wrong)?;
    let count: u32 = count.trim().parse().map_err(|_| wrong())?;
    let burst =
        std::num::NonZeroU32::new(count).ok_or("a rate of zero would refuse every request")?;
    let window = match unit.trim() {
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return Err(wrong()),
    };
    Ok(RateLimit {
        period: window / count,
        burst,
    })
}
