//! Newline-delimited messages, read with a cap: a line longer than the cap is reported (and
//! skipped to its end) without ever being held whole, so a hostile peer cannot make a reader
//! buffer without bound. `toolgate mcp-proxy` reads JSON-RPC with it, `toolgate serve` its
//! requests.

use std::io::{self, BufRead};

/// One line read from a peer.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The bytes of the line, without its newline (and without a `\r` before it).
    Complete(Vec<u8>),
    /// The line was longer than the cap: its first `cap` bytes; the rest was dropped unread.
    TooLong(Vec<u8>),
}

/// Reads the next line, holding at most `cap` bytes of it; `Ok(None)` at the end of the stream.
/// A final line without a newline still counts.
pub fn read_line(reader: &mut impl BufRead, cap: usize) -> io::Result<Option<Line>> {
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
        let (chunk, done) = match memchr::memchr(b'\n', buffer) {
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

/// Whether `buffered` (what a reader holds and has not handed out yet) has a whole line in it:
/// only then is the next [`read_line`] sure not to block.
pub fn has_line(buffered: &[u8]) -> bool {
    memchr::memchr(b'\n', buffered).is_some()
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

    /// A reader may go on without blocking only while a whole line is buffered (the proxy holds
    /// its writes back meanwhile): a partial message is not one.
    #[test]
    fn a_whole_line_is_what_makes_the_next_read_safe() {
        assert!(!has_line(b""));
        assert!(!has_line(b"{\"jsonrpc\":"));
        assert!(has_line(b"{}\n{\"a\""));
        assert!(has_line(b"\n"));
        // Past the first machine word, where a vectorized search takes over.
        let mut long = vec![b' '; 100];
        assert!(!has_line(&long));
        long[97] = b'\n';
        assert!(has_line(&long));
    }
}
