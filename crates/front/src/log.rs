//! Where a front tells the person running it what it does: one line on stderr per event, whole,
//! named after the front, with what someone else wrote made inert.

use std::io::Write;

use toolgate_gate::OperatorRecord;

/// The most characters of one logged message (what a message quotes is someone else's text).
const MESSAGE_CAP: usize = 2000;

/// Where a front's lines go. [`StderrLog`] for a front that runs; `check` collects the lines
/// instead, since a step that fails there is an error, not a line.
pub trait FrontLog: Send + Sync {
    /// Something for the person running the front.
    fn line(&self, message: &str);

    /// A refused decision's operator record, for the person fixing the connector.
    fn refused(&self, record: &OperatorRecord) {
        match serde_json::to_string(record) {
            Ok(json) => self.line(&format!("refused: {json}")),
            Err(error) => self.line(&format!(
                "cannot write a refusal's operator record: {error}"
            )),
        }
    }
}

/// A front's lines on stderr, each starting with its name (`toolgate mcp-proxy: …`).
#[derive(Debug, Clone, Copy)]
pub struct StderrLog {
    name: &'static str,
}

impl StderrLog {
    /// Lines that start with `name`.
    pub const fn new(name: &'static str) -> StderrLog {
        StderrLog { name }
    }

    /// The front's name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl FrontLog for StderrLog {
    fn line(&self, message: &str) {
        let cut = if message.chars().count() > MESSAGE_CAP {
            "…"
        } else {
            ""
        };
        let capped: String = message.chars().take(MESSAGE_CAP).collect();
        stderr_line(&format!(
            "{}: {}{cut}",
            self.name,
            toolgate_gate::internals::escape_hidden(&capped)
        ));
    }

    /// One line, `NAME: refused: ` and the record as JSON (layer, rule, where, the validator's
    /// words, the hint, the raw bytes' length and SHA-256). The record's strings are already
    /// escaped and capped by the gate, and it holds at most a dozen findings, so the line is
    /// bounded and not cut.
    fn refused(&self, record: &OperatorRecord) {
        match serde_json::to_string(record) {
            Ok(json) => stderr_line(&format!("{}: refused: {json}", self.name)),
            Err(error) => self.line(&format!(
                "cannot write a refusal's operator record: {error}"
            )),
        }
    }
}

/// Writes one line to stderr, whole, ignoring a stderr that is gone: `eprintln!` panics when
/// its write fails, and a host that closes the front's stderr must not stop the thread that
/// happened to log (the one reading the upstream, say).
pub fn stderr_line(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let _ = std::io::stderr().lock().write_all(&bytes);
}
