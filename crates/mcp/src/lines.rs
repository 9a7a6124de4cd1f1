//! What the proxy tells the person running it, on stderr: its own lines and the upstream's
//! stderr, escaped and capped. Messages are read with `toolgate_repo::lines` (capped).

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) use toolgate_front::stderr_line;
use toolgate_front::{FrontLog, StderrLog};

pub(crate) use toolgate_repo::lines::{Line, read_line};

/// How much of one upstream stderr line is relayed.
const STDERR_LINE_CAP: usize = 2000;

/// Relays a child's stderr to this process's stderr, line by line, each escaped (control and
/// bidi characters shown as escapes, never interpreted by the terminal) and capped, with a prefix
/// that says whose it is: the upstream's own words reach the person running the host only as
/// inert text. Runs until the child closes its stderr.
pub(crate) fn relay_stderr(stderr: impl io::Read + Send + 'static, whose: String) {
    std::thread::spawn(move || {
        let mut reader = io::BufReader::new(stderr);
        while let Ok(Some(line)) = read_line(&mut reader, STDERR_LINE_CAP) {
            let (bytes, cut) = match line {
                Line::Complete(bytes) => (bytes, ""),
                Line::TooLong(bytes) => (bytes, "…"),
            };
            let text = String::from_utf8_lossy(&bytes);
            stderr_line(&format!(
                "{whose}: {}{cut}",
                toolgate_gate::internals::escape_hidden(&text)
            ));
        }
    });
}

/// Text someone else wrote, made inert for a terminal or a host: at most `cap` characters,
/// control and bidi characters shown as escapes, never interpreted.
pub(crate) fn inert(text: &str, cap: usize) -> String {
    let capped: String = text.chars().take(cap).collect();
    toolgate_gate::internals::escape_hidden(&capped).into_owned()
}

/// The name the proxy's lines start with.
pub(crate) const PROXY_NAME: &str = "toolgate mcp-proxy";

/// The proxy's own lines, as every front writes them.
const PROXY_LOG: StderrLog = StderrLog::new(PROXY_NAME);

/// Something for the person running the host: stderr, escaped, capped.
pub(crate) fn log(message: &str) {
    PROXY_LOG.line(message);
}

/// A log line that can repeat under attack (a refused connection, a failing accept), written
/// at most once a second with the count of those not written.
pub(crate) struct RateLimited {
    what: &'static str,
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimited {
    pub(crate) const fn new(what: &'static str) -> RateLimited {
        RateLimited {
            what,
            last: Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    pub(crate) fn log(&self, detail: &str) {
        let mut last = crate::lock(&self.last);
        if last.is_some_and(|at| at.elapsed() < Duration::from_secs(1)) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(Instant::now());
        let suppressed = self.suppressed.swap(0, Ordering::Relaxed);
        let more = if suppressed > 0 {
            format!(" ({suppressed} more in the last second)")
        } else {
            String::new()
        };
        log(&format!("{}{detail}{more}", self.what));
    }
}
