//! What the proxy tells the person running it, on stderr: its own lines and the upstream's
//! stderr, escaped and capped. Messages are read with `toolgate_repo::lines` (capped).

use std::io;

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

/// Something for the person running the host: stderr, escaped, capped.
pub(crate) fn log(message: &str) {
    let cut = if message.chars().count() > 2000 {
        "…"
    } else {
        ""
    };
    stderr_line(&format!(
        "toolgate mcp-proxy: {}{cut}",
        inert(message, 2000)
    ));
}

/// The operator record of a refused result, for the person fixing the connector: one line on
/// stderr, `toolgate mcp-proxy: refused: ` and the record as JSON (layer, rule, where, the
/// validator's words, the hint, the raw bytes' length and SHA-256, which the audit line holds
/// too). The record's strings are already escaped and capped by the gate, and there are at most
/// a dozen findings, so the line is bounded.
pub(crate) fn log_refusal(record: &toolgate_gate::OperatorRecord) {
    match serde_json::to_string(record) {
        Ok(json) => stderr_line(&format!("toolgate mcp-proxy: refused: {json}")),
        Err(error) => log(&format!(
            "cannot write a refusal's operator record: {error}"
        )),
    }
}

/// Writes one line to stderr, whole, ignoring a stderr that is gone: `eprintln!` panics when
/// its write fails, and a host that closes the proxy's stderr must not stop the thread that
/// happened to log (the one reading the upstream, say).
pub(crate) fn stderr_line(line: &str) {
    use std::io::Write;
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let _ = io::stderr().lock().write_all(&bytes);
}
