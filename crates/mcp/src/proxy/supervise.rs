//! A stdio upstream that exits is noticed: how it ended is said; it is started again while
//! `--upstream-restart` allows (with backoff, the count forgiven once it has stayed up a
//! minute), or, with `--exit-with-upstream`, the proxy exits 3 for its own supervisor; otherwise
//! every call is answered with the fixed failure, and `/healthz` fails once the upstream has
//! been gone longer than `--timeout` (so an orchestrator restarts the pod).

use super::*;

/// What the proxy does when its stdio upstream exits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Supervision {
    /// How many times in a row it is started again (0: never).
    pub restarts: u32,
    /// Exit (status 3) once it is gone for good, instead of answering every call with the
    /// fixed failure.
    pub exit: bool,
}

/// The status the proxy exits with when its upstream is gone for good (`--exit-with-upstream`).
pub(crate) const UPSTREAM_GONE_STATUS: i32 = 3;

/// How long a restarted upstream must stay up for its restarts to be forgiven.
const STAYED_UP: Duration = Duration::from_secs(60);

/// The longest wait before a restart.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// The supervisor's memory: restarts in a row, and when the upstream went.
#[derive(Debug, Default)]
pub(super) struct Supervised {
    restarts: u32,
    restarted_at: Option<Instant>,
    /// When the upstream exited, while it is gone.
    exited_at: Option<Instant>,
}

impl Proxy {
    /// Reads the upstream's messages and handles each, until the upstream is gone for good;
    /// a process that exits is supervised ([`Proxy::after_upstream_exit`]), a restarted one's
    /// session opened again beside the reading.
    pub(crate) fn pump(&self, source: Source) {
        let mut source = source;
        let mut restarted = false;
        loop {
            std::thread::scope(|scope| {
                if restarted {
                    // Its answers arrive through the reading below.
                    scope.spawn(|| self.reopen_session());
                }
                self.pump_until_gone(&mut source);
            });
            match self.after_upstream_exit() {
                Some(next) => {
                    source = next;
                    restarted = true;
                }
                None => return,
            }
        }
    }

    /// Whether the process should be restarted by its orchestrator: its upstream has been gone
    /// longer than the timeout, and will not be started again.
    pub(crate) fn healthy(&self) -> bool {
        lock(&self.supervised)
            .exited_at
            .is_none_or(|exited| exited.elapsed() < self.timeout)
    }

    /// The upstream's output ended (every request in flight already answered): where it is a
    /// process, how it ended is said, and it is started again, or the proxy exits, as the
    /// operator asked. The new process's messages, if one was started.
    fn after_upstream_exit(&self) -> Option<Source> {
        if self.stopping.load(Ordering::Relaxed) {
            return None;
        }
        let ended = self.link.ended()?;
        log(&format!("the upstream {ended}"));
        lock(&self.supervised).exited_at = Some(Instant::now());
        while let Some((backoff, attempt)) = self.next_restart() {
            log(&format!(
                "starting the upstream again in {backoff:?} (restart {attempt} of {} in a row, --upstream-restart)",
                self.supervision.restarts
            ));
            if !self.sleep_unless_stopping(backoff) {
                return None;
            }
            match self.link.restart() {
                Some(Ok(source)) => return Some(source),
                Some(Err(why)) => log(&format!("cannot start the upstream again: {why}")),
                None => break,
            }
        }
        if self.supervision.exit {
            log(&format!(
                "the upstream is gone for good: the proxy exits with status {UPSTREAM_GONE_STATUS} (--exit-with-upstream) so its supervisor restarts it"
            ));
            self.stopping.store(true, Ordering::Relaxed);
            self.front.finish(Duration::from_secs(10));
            std::process::exit(UPSTREAM_GONE_STATUS);
        }
        log(&format!(
            "the upstream is gone for good: every call is answered with the fixed failure, and /healthz fails after {:?} (--upstream-restart N starts it again, --exit-with-upstream exits)",
            self.timeout
        ));
        None
    }

    /// The wait before the next restart and its number in the run, while restarts remain.
    fn next_restart(&self) -> Option<(Duration, u32)> {
        let mut supervised = lock(&self.supervised);
        if supervised
            .restarted_at
            .is_some_and(|at| at.elapsed() >= STAYED_UP)
        {
            supervised.restarts = 0;
        }
        if supervised.restarts >= self.supervision.restarts {
            return None;
        }
        let backoff = Duration::from_millis(500)
            .saturating_mul(1 << supervised.restarts.min(6))
            .min(MOST_BACKOFF);
        supervised.restarts += 1;
        supervised.restarted_at = Some(Instant::now());
        Some((backoff, supervised.restarts))
    }

    /// Sleeps `how_long`, or less if the proxy stops meanwhile; whether it is still running.
    fn sleep_unless_stopping(&self, how_long: Duration) -> bool {
        let until = Instant::now() + how_long;
        while Instant::now() < until {
            if self.stopping.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20).min(until - Instant::now()));
        }
        !self.stopping.load(Ordering::Relaxed)
    }

    /// A restarted upstream has no session: a handshake-era one is opened again as at start (a
    /// modern one needs none); calls are forwarded again once it is.
    fn reopen_session(&self) {
        let usable = match self.settled.get() {
            Some(Settled::Legacy { version, .. }) => {
                matches!(self.handshake(version), Settled::Legacy { .. })
            }
            Some(Settled::Modern { .. }) => true,
            Some(Settled::Unusable(_)) | None => false,
        };
        if !usable {
            return log("the restarted upstream did not open its session; calls still fail");
        }
        self.state().gone = None;
        lock(&self.supervised).exited_at = None;
        log("the upstream is running again; calls are forwarded");
    }
}
