//! Per-caller rate limits (`--caller-rate`): a token bucket per caller, bounded in number, in
//! this process or shared by every replica through Redis (`--caller-rate-store`).

use super::*;

/// The per-caller rate limit (`--caller-rate`): a token bucket for each caller (its token's
/// subject, or its address where the listener authenticates nobody), kept in this process, or
/// with `--caller-rate-store` in Redis (or Valkey), shared by every replica.
pub(crate) struct CallerRate {
    local: governor::DefaultKeyedRateLimiter<String>,
    shared: Option<SharedRate>,
}

/// A limit every replica shares: GCRA (a token bucket's equivalent, one timestamp a caller) in
/// one atomic script on the store, on the store's clock, so replicas' clocks never disagree.
struct SharedRate {
    connection: redis::aio::ConnectionManager,
    script: redis::Script,
    /// The time one request's token takes to come back, in µs.
    interval: u64,
    /// How far ahead of now a caller's next allowed time may run: `interval × burst`.
    tolerance: u64,
    unavailable: Unavailable,
}

/// What a shared limit does when its store cannot be asked (`--caller-rate-unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unavailable {
    /// Refuse the request (503, retry after a second): no caller gets past a limit nobody can
    /// check. The default.
    #[default]
    Closed,
    /// Hold the caller to this replica's own bucket meanwhile: at N replicas, N times the limit.
    Local,
}

/// Why a caller may not go on now.
#[derive(Debug)]
pub(crate) enum OverLimit {
    /// Over its rate: it may ask again after this.
    Wait(Duration),
    /// The shared store could not be asked, and the limit fails closed.
    StoreUnavailable,
}

/// GCRA over one key, atomic on the store: `KEYS[1]` the caller's key, `ARGV[1]` the interval
/// and `ARGV[2]` the tolerance in µs. Returns 0 (allowed: the caller's next allowed time
/// stored, expiring once it has passed) or how many µs the caller must wait.
const GCRA: &str = r"
local now = redis.call('TIME')
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now_us
if tat < now_us then tat = now_us end
local next_tat = tat + interval
local wait = next_tat - tolerance - now_us
if wait > 0 then return wait end
redis.call('SET', KEYS[1], next_tat, 'PX', math.floor((next_tat - now_us) / 1000) + 1)
return 0
";

/// How long one question to the shared store may take before the limit's failure mode
/// decides: a store slower than this is as good as down for a request in flight.
const STORE_TIMEOUT: Duration = Duration::from_millis(250);

/// The shared store's key for `caller`: a digest, so any subject or address is a short key.
fn store_key(caller: &str) -> String {
    let digest = toolgate_gate::Sha256Digest::of(caller.as_bytes()).to_hex();
    format!("toolgate:rate:{}", &digest[..32])
}

impl std::fmt::Debug for CallerRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallerRate")
            .field("shared", &self.shared.is_some())
            .finish_non_exhaustive()
    }
}

impl CallerRate {
    /// A limit kept in this process.
    pub(crate) fn new(rate: &RateLimit) -> CallerRate {
        let quota = governor::Quota::with_period(rate.period)
            .unwrap_or_else(|| governor::Quota::per_second(std::num::NonZeroU32::MIN))
            .allow_burst(rate.burst);
        CallerRate {
            local: governor::RateLimiter::keyed(quota),
            shared: None,
        }
    }

    /// A limit shared through the store at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`,
    /// `rediss://` for TLS), connected now: a store that cannot be reached at start is a
    /// configuration error.
    pub(crate) async fn shared(
        rate: &RateLimit,
        url: &str,
        unavailable: Unavailable,
    ) -> Result<CallerRate, UsageError> {
        let shown = shown_url(url);
        let client = redis::Client::open(url).map_err(|error| {
            UsageError::new(format!(
                "--caller-rate-store {shown}: {error}; write redis://HOST:PORT[/DB] (rediss:// for TLS)"
            ))
        })?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(5)))
            .set_response_timeout(Some(STORE_TIMEOUT))
            .set_number_of_retries(2);
        let connection = tokio::time::timeout(
            Duration::from_secs(10),
            redis::aio::ConnectionManager::new_with_config(client, config),
        )
        .await
        .map_err(|_| "no answer within 10s".to_owned())
        .and_then(|connected| connected.map_err(|error| error.to_string()))
        .map_err(|why| {
            UsageError::new(format!(
                "--caller-rate-store {shown}: cannot connect: {why}"
            ))
        })?;
        let interval = u64::try_from(rate.period.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        let mut limit = CallerRate::new(rate);
        limit.shared = Some(SharedRate {
            connection,
            script: redis::Script::new(GCRA),
            interval,
            tolerance: interval.saturating_mul(u64::from(rate.burst.get())),
            unavailable,
        });
        Ok(limit)
    }

    /// `Ok`, or why `caller` may not go on now.
    pub(crate) async fn check(&self, caller: &str) -> Result<(), OverLimit> {
        let Some(shared) = &self.shared else {
            return self.check_locally(caller);
        };
        let mut connection = shared.connection.clone();
        let mut invocation = shared.script.key(store_key(caller));
        invocation.arg(shared.interval).arg(shared.tolerance);
        let asked = invocation.invoke_async::<u64>(&mut connection);
        match tokio::time::timeout(STORE_TIMEOUT, asked).await {
            Ok(Ok(0)) => Ok(()),
            Ok(Ok(wait)) => Err(OverLimit::Wait(Duration::from_micros(wait))),
            failed => {
                let why = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer within {STORE_TIMEOUT:?}"),
                };
                STORE_DOWN.log(&format!(
                    "({why}); {}",
                    match shared.unavailable {
                        Unavailable::Closed => "requests are refused (503) until it answers",
                        Unavailable::Local =>
                            "each caller is held to this replica's own bucket meanwhile",
                    }
                ));
                match shared.unavailable {
                    Unavailable::Closed => Err(OverLimit::StoreUnavailable),
                    Unavailable::Local => self.check_locally(caller),
                }
            }
        }
    }

    fn check_locally(&self, caller: &str) -> Result<(), OverLimit> {
        use governor::clock::Clock;
        self.local
            .check_key(&caller.to_owned())
            .map_err(|not_until| {
                OverLimit::Wait(
                    not_until.wait_time_from(governor::clock::DefaultClock::default().now()),
                )
            })
    }

    /// Forgets the callers whose buckets are full again (run every minute), so distinct
    /// callers cannot grow the table without bound. (The store's keys expire by themselves.)
    pub(crate) async fn forget_idle_periodically(self: Arc<Self>) {
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            self.local.retain_recent();
            self.local.shrink_to_fit();
        }
    }
}

/// Says the store is down, at most once a second.
static STORE_DOWN: crate::lines::RateLimited =
    crate::lines::RateLimited::new("the shared rate store (--caller-rate-store) cannot be asked ");

/// `url` as it may be printed: without its password.
fn shown_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://…@{}", &url[..scheme], &url[at + 1..])
        }
        _ => url.to_owned(),
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
