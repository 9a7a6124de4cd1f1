//! Signs of life for long runs: 10,000 fixtures take seconds to minutes, and a terminal or a CI
//! log that shows nothing for that long looks hung.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a run shows on stderr that it is going.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// Nothing.
    #[default]
    Off,
    /// A progress bar redrawn in place, cleared when the run ends: for a terminal.
    Bar,
    /// One line `every` so often (how many done, the rate, an estimate of what is left), none
    /// for a run shorter than that: for a CI log or a pipe, where a bar would be noise.
    Lines {
        /// How often; [`ProgressMode::LINE_EVERY`] unless `TOOLGATE_PROGRESS_EVERY` says.
        every: Duration,
    },
}

impl ProgressMode {
    /// How often a line is written by default: often enough that a CI log shows life, rarely
    /// enough that a run of a minute writes six lines.
    pub const LINE_EVERY: Duration = Duration::from_secs(10);

    /// How long a run must take to be worth a word on where its time went (the slowest tools):
    /// as long as it takes to write a progress line.
    pub(crate) fn long_run(self) -> Duration {
        match self {
            ProgressMode::Lines { every } => every,
            _ => ProgressMode::LINE_EVERY,
        }
    }
}

/// The progress of one run over its tools, and the cases they run.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    counts: Arc<Counts>,
    lines: Option<Lines>,
}

/// What is done so far, read by the thread that writes the lines.
#[derive(Default)]
struct Counts {
    cases: AtomicU64,
    /// How many cases the run has, once known (0: not known; a run of many tools learns each
    /// tool's cases only when it discovers it).
    cases_total: AtomicU64,
    tools: AtomicU64,
    tools_total: u64,
    /// When the run started, and how many milliseconds after that its cases began (set with
    /// `cases_total`): loading the contracts and deriving the mutants come first and can take
    /// most of the first lines' time, so a rate over the whole run would overstate what is left.
    started: Option<Instant>,
    cases_began_ms: AtomicU64,
}

/// The thread that writes [`ProgressMode::Lines`].
struct Lines {
    /// Dropped to stop the thread.
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Progress over `tools` tools, shown as `mode` says.
    pub(crate) fn new(mode: ProgressMode, tools: u64) -> Progress {
        let counts = Arc::new(Counts {
            tools_total: tools,
            started: Some(Instant::now()),
            ..Counts::default()
        });
        Progress {
            bar: (mode == ProgressMode::Bar).then(|| bar(tools)),
            lines: match mode {
                ProgressMode::Lines { every } => Some(Lines::start(Arc::clone(&counts), every)),
                _ => None,
            },
            counts,
        }
    }

    /// The run has `total` cases in all (known up front when it runs one tool).
    pub(crate) fn cases_total(&self, total: u64) {
        if let Some(started) = self.counts.started {
            let began = started.elapsed().as_millis() as u64;
            self.counts.cases_began_ms.store(began, Ordering::Relaxed);
        }
        self.counts.cases_total.store(total, Ordering::Relaxed);
    }

    /// One case more is done.
    pub(crate) fn case_done(&self) {
        self.counts.cases.fetch_add(1, Ordering::Relaxed);
    }

    /// One tool more is done; `message` says what the run has found so far, beside the bar.
    pub(crate) fn tool_done(&self, message: impl FnOnce() -> String) {
        self.counts.tools.fetch_add(1, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(message());
        }
    }

    /// Clears the bar, stops the lines.
    pub(crate) fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.lines = None;
    }
}

fn bar(tools: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(tools),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} tools {wide_bar} {msg}")
    {
        bar.set_style(style);
    }
    bar
}

impl Lines {
    fn start(counts: Arc<Counts>, every: Duration) -> Lines {
        let (stop, stopped) = mpsc::channel::<()>();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("toolgate-progress".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    let line = counts.line(started.elapsed());
                    // stderr gone: nobody is left to reassure.
                    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
                }
            })
            .ok();
        Lines {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Counts {
    /// `toolgate: 1200/2000 cases (60 %), 40/s, about 20 s left`, or for many tools
    /// `toolgate: 1200 cases, 3/12 tools, 40 cases/s, about 2 min left`.
    fn line(&self, elapsed: Duration) -> String {
        let cases = self.cases.load(Ordering::Relaxed);
        let cases_total = self.cases_total.load(Ordering::Relaxed);
        let tools = self.tools.load(Ordering::Relaxed);
        let seconds = elapsed.as_secs_f64().max(0.001);
        let mut line = if let Some(percent) = cases.saturating_mul(100).checked_div(cases_total) {
            format!("toolgate: {cases}/{cases_total} cases ({percent} %)")
        } else {
            format!(
                "toolgate: {cases} cases, {tools}/{} tools",
                self.tools_total
            )
        };
        let began = Duration::from_millis(self.cases_began_ms.load(Ordering::Relaxed));
        let casing = elapsed.saturating_sub(began).as_secs_f64().max(0.001);
        if cases > 0 {
            let rate = cases as f64 / if cases_total > 0 { casing } else { seconds };
            let unit = if cases_total > 0 { "/s" } else { " cases/s" };
            line.push_str(&format!(", {}{unit}", format_rate(rate)));
        }
        let left = if cases_total > 0 && cases > 0 {
            (cases_total > cases).then(|| (cases_total - cases) as f64 * casing / cases as f64)
        } else if tools > 0 {
            (self.tools_total > tools)
                .then(|| (self.tools_total - tools) as f64 * seconds / tools as f64)
        } else {
            None
        };
        match left {
            Some(left) => line.push_str(&format!(", about {} left", format_seconds(left))),
            None if cases == 0 && tools == 0 => {
                line.push_str(&format!(", {} s in", elapsed.as_secs()))
            }
            None => {}
        }
        line.push('\n');
        line
    }
}

fn format_rate(rate: f64) -> String {
    if rate >= 10.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.1}")
    }
}

fn format_seconds(seconds: f64) -> String {
    let seconds = seconds.ceil() as u64;
    if seconds < 120 {
        format!("{seconds} s")
    } else {
        format!("{} min", seconds.div_ceil(60))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cases: u64, cases_total: u64, tools: u64, tools_total: u64, seconds: u64) -> String {
        began_line(cases, cases_total, tools, tools_total, seconds, 0)
    }

    fn began_line(
        cases: u64,
        cases_total: u64,
        tools: u64,
        tools_total: u64,
        seconds: u64,
        began: u64,
    ) -> String {
        let counts = Counts {
            cases: AtomicU64::new(cases),
            cases_total: AtomicU64::new(cases_total),
            tools: AtomicU64::new(tools),
            tools_total,
            started: None,
            cases_began_ms: AtomicU64::new(began * 1000),
        };
        counts.line(Duration::from_secs(seconds))
    }

    #[test]
    fn a_line_says_how_many_how_fast_and_how_long_is_left() {
        // One tool: its cases are known up front.
        assert_eq!(
            line(1200, 2000, 0, 1, 30),
            "toolgate: 1200/2000 cases (60 %), 40/s, about 20 s left\n"
        );
        assert_eq!(
            line(3, 2000, 0, 1, 60),
            "toolgate: 3/2000 cases (0 %), 0.1/s, about 666 min left\n"
        );
        // Eight of the ten seconds went to loading: what is left is reckoned from the two the
        // cases took, not the ten.
        assert_eq!(
            began_line(400, 4008, 0, 1, 10, 8),
            "toolgate: 400/4008 cases (9 %), 200/s, about 19 s left\n"
        );
        assert_eq!(
            line(0, 10, 0, 1, 12),
            "toolgate: 0/10 cases (0 %), 12 s in\n"
        );
        // Many tools: the estimate is from the tools done.
        assert_eq!(
            line(1200, 0, 3, 12, 30),
            "toolgate: 1200 cases, 3/12 tools, 40 cases/s, about 90 s left\n"
        );
        assert_eq!(
            line(50, 0, 0, 12, 10),
            "toolgate: 50 cases, 0/12 tools, 5.0 cases/s\n"
        );
        assert_eq!(
            line(0, 0, 0, 12, 10),
            "toolgate: 0 cases, 0/12 tools, 10 s in\n"
        );
    }

    #[test]
    fn the_lines_stop_with_the_run() {
        let every = ProgressMode::LINE_EVERY;
        let mut progress = Progress::new(ProgressMode::Lines { every }, 1);
        progress.case_done();
        progress.tool_done(String::new);
        // The thread sleeps ten seconds between lines: finishing wakes it instead of waiting.
        let started = Instant::now();
        progress.finish();
        assert!(started.elapsed() < every);
    }
}
