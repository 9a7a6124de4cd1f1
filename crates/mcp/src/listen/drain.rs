//! Stopping without failing what was asked (SIGTERM, or SIGINT at a terminal). At the signal
//! `/readyz` answers 503 at once; new connections are still served for the minimum
//! (`--drain-min`: the balancers in front notice the pod going before it stops accepting), then
//! the listener stops accepting and closes each connection once its request is answered, and
//! waits for the calls in flight up to the deadline (`--drain-timeout`). A call still out then
//! is answered with a failure that is **not** retryable: its request reached the upstream, which
//! may have run the tool to the end, and an agent obeying a retryable flag would run it twice.
//! Retention drains in what is left. A second signal cuts the waits short. SIGHUP never stops
//! the proxy.

use std::time::{Duration, Instant};

use toolgate_repo::UsageError;

use crate::lines::log;

/// How the listener drains on SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drain {
    /// How long new connections are still served after the signal.
    pub min: Duration,
    /// The most the whole drain may take, from the signal: calls in flight, then retention.
    pub timeout: Duration,
}

/// The drain deadline without `--drain-timeout` and without a grace period to fit.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(25);

impl Default for Drain {
    fn default() -> Drain {
        Drain {
            min: Duration::ZERO,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl Drain {
    /// `--drain-timeout`'s default, as agentgateway reads it: inside the pod's grace period,
    /// `TERMINATION_GRACE_PERIOD_SECONDS` (set it from the pod spec) less 5 s (less 1 s for a
    /// period of 10 s or less), so what is left is cut before Kubernetes kills the process;
    /// 25 s without it (Kubernetes' default period, 30 s, less 5).
    pub fn default_timeout() -> Result<Duration, UsageError> {
        let Some(text) = std::env::var("TERMINATION_GRACE_PERIOD_SECONDS")
            .ok()
            .filter(|text| !text.trim().is_empty())
        else {
            return Ok(DEFAULT_TIMEOUT);
        };
        let seconds: u64 = text.trim().parse().map_err(|_| {
            UsageError::new(format!(
                "TERMINATION_GRACE_PERIOD_SECONDS={}: not a whole number of seconds (set it from the pod's terminationGracePeriodSeconds, or give --drain-timeout)",
                toolgate_gate::internals::escape_hidden(&text)
            ))
        })?;
        let spare = if seconds > 10 { 5 } else { 1 };
        Ok(Duration::from_secs(seconds.saturating_sub(spare).max(1)))
    }

    /// When calls in flight stop being waited for: the deadline less retention's share (a fifth
    /// of the drain, at most 5 s), so what was chosen for keeping is written too.
    pub(crate) fn calls_deadline(&self, signalled: Instant, retains: bool) -> Instant {
        let share = if retains {
            (self.timeout / 5).min(Duration::from_secs(5))
        } else {
            Duration::ZERO
        };
        signalled + self.timeout.saturating_sub(share)
    }
}

/// What a drain did, for its closing line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Drained {
    /// When the signal came (`None`: the listener stopped without one).
    pub signalled: Option<Instant>,
    /// The calls in flight at the signal.
    pub in_flight: usize,
    /// The calls still in flight at the deadline, answered not retryable.
    pub cut: usize,
}

impl Drained {
    /// What the drain leaves retention and the exporter, from `drain`'s deadline.
    pub(crate) fn left(&self, drain: &Drain) -> Duration {
        match self.signalled {
            Some(signalled) => {
                (signalled + drain.timeout).saturating_duration_since(Instant::now())
            }
            None => Duration::from_secs(10),
        }
    }

    /// The line that says what was drained and what was not.
    pub(crate) fn report(&self) -> String {
        let answered = self.in_flight.saturating_sub(self.cut);
        let took = self
            .signalled
            .map_or(Duration::ZERO, |signalled| signalled.elapsed());
        if self.cut == 0 {
            format!(
                "drained in {took:.1?}: the {} call(s) in flight at the signal were answered",
                self.in_flight
            )
        } else {
            format!(
                "drained in {took:.1?}: {answered} of the {} call(s) in flight at the signal were answered; {} still out at the deadline were answered INVALID_RESPONSE, not retryable (the upstream may have run them)",
                self.in_flight, self.cut
            )
        }
    }
}

/// Resolves on SIGINT or SIGTERM (an orchestrator stopping the pod, a person at a terminal).
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// SIGHUP never stops the proxy (a terminal closing, a supervisor's reload habit): from here on
/// it is caught, and once the proxy serves, it reloads the contracts (`Proxy::watch_contracts`).
pub(crate) fn ignore_hangup() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        // The handler stays installed once registered, whatever becomes of the stream: a
        // runtime of its own registers it where the proxy runs none.
        let Ok(own) = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
        else {
            return log("cannot catch SIGHUP; it would stop the proxy");
        };
        let registered = own.block_on(async { signal(SignalKind::hangup()).is_ok() });
        if !registered {
            log("cannot catch SIGHUP; it would stop the proxy");
        }
    }
}
