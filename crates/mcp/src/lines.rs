//! Newline-delimited messages, read with a cap: a line longer than the cap is reported (and
//! skipped to its end) without ever being held whole, so a hostile peer cannot make the proxy
//! buffer without bound.

use std::io::{self, BufRead};

/// One line read from a peer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The bytes of the line, without its newline (and without a `\r` before it).
    Complete(Vec<u8>),
    /// The line was longer than the cap: its first `cap` bytes; the rest was dropped unread.
    TooLong(Vec<u8>),
}

/// Reads the next line, holding at most `cap` bytes of it; `Ok(None)` at the end of the stream.
/// A final line without a newline still counts.
pub(crate) fn read_line(reader: &mut impl BufRead, cap: usize) -> io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut saw_any = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            return Ok(saw_any.then(|| finish(line, too_long)));
        }
        saw_any = true;
        let (chunk, done) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !too_long {
            let room = cap - line.len();
            if chunk.len() > room {
                too_long = true;
                line.extend_from_slice(&chunk[..room]);
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(buffer.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(Some(finish(line, too_long)));
        }
    }
}

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
            eprintln!(
                "{whose}: {}{cut}",
                toolgate_gate::internals::escape_hidden(&text)
            );
        }
    });
}

fn finish(mut line: Vec<u8>, too_long: bool) -> Line {
    if too_long {
        return Line::TooLong(line);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Line::Complete(line)
}

/// Something for the person running the host: stderr, escaped, capped.
pub(crate) fn log(message: &str) {
    let mut shown: String = message.chars().take(2000).collect();
    if message.chars().count() > 2000 {
        shown.push('…');
    }
    eprintln!(
        "toolgate mcp-proxy: {}",
        toolgate_gate::internals::escape_hidden(&shown)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_capped_and_the_last_one_counts_without_a_newline() {
        let mut input = io::Cursor::new(b"ab\r\n0123456789\nlast".to_vec());
        assert_eq!(
            read_line(&mut input, 5).unwrap(),
            Some(Line::Complete(b"ab".to_vec()))
        );
        assert_eq!(
            read_line(&mut input, 5).unwrap(),
            Some(Line::TooLong(b"01234".to_vec()))
        );
        assert_eq!(
            read_line(&mut input, 5).unwrap(),
            Some(Line::Complete(b"last".to_vec()))
        );
        assert_eq!(read_line(&mut input, 5).unwrap(), None);
        let mut empty = io::Cursor::new(b"\n".to_vec());
        assert_eq!(
            read_line(&mut empty, 5).unwrap(),
            Some(Line::Complete(Vec::new()))
        );
    }
}
