//! A progress line for long runs: 10,000 fixtures take seconds to minutes, and a terminal that
//! shows nothing for that long looks hung.

/// A progress line on stderr for a run that takes a while on a terminal: how many of its units
/// (tools, tool versions) are done, and a word on what they found. Off, it draws nothing; it is
/// cleared when the run ends, so the report that follows is all that stays.
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A progress line over `total` `units`, shown only when `shown`.
    pub(crate) fn new(shown: bool, total: u64, units: &str) -> Progress {
        Progress(shown.then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(total),
                indicatif::ProgressDrawTarget::stderr(),
            );
            let template = format!("{{spinner}} {{pos}}/{{len}} {units} {{wide_bar}} {{msg}}");
            if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                bar.set_style(style);
            }
            bar
        }))
    }

    /// One unit more is done; `message` says what the run has found so far.
    pub(crate) fn advance(&self, message: impl FnOnce() -> String) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
            bar.set_message(message());
        }
    }

    /// Clears the line.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
