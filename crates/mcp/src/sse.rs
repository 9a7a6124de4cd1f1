//! Server-sent events, as a Streamable HTTP server answers a POST: each event's `data` lines
//! joined, every other field ignored. Shared by the HTTP upstream's client (read as the bytes
//! arrive) and `ext-proc` (a body Envoy buffered whole).

/// The events of a stream read so far, and the bytes of the one not yet ended.
#[derive(Default)]
pub(crate) struct Events {
    buffer: Vec<u8>,
    data: Vec<u8>,
}

impl Events {
    /// Reads `chunk`, handing `event` the data of each event it ends. `Err` with the bytes held
    /// once an event, or a line, is longer than `cap`: the rest of the stream is not read.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        cap: usize,
        mut event: impl FnMut(Vec<u8>),
    ) -> Result<(), Vec<u8>> {
        self.buffer.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(length) = self.buffer[start..].iter().position(|byte| *byte == b'\n') {
            let line = &self.buffer[start..start + length];
            start += length + 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    event(std::mem::take(&mut self.data));
                }
            } else if let Some(field) = line.strip_prefix(b"data:") {
                let field = field.strip_prefix(b" ").unwrap_or(field);
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(field);
            }
            if self.data.len() > cap {
                let mut held = std::mem::take(&mut self.data);
                held.truncate(cap);
                return Err(held);
            }
        }
        self.buffer.drain(..start);
        if self.buffer.len() > cap {
            return Err(std::mem::take(&mut self.buffer));
        }
        Ok(())
    }
}

/// The data of every event of a whole stream (an event the stream did not end is dropped, as
/// the format says), or the bytes held where one was longer than `cap`.
pub(crate) fn events_of(body: &[u8], cap: usize) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut events = Vec::new();
    Events::default().feed(body, cap, |data| events.push(data))?;
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_their_data_lines_joined_whatever_the_chunks() {
        let stream = b"event: message\r\nid: 1\r\ndata: {\"a\":\ndata: 1}\r\n\r\n: comment\n\ndata: two\n\ndata: unended";
        let whole = events_of(stream, 1024).unwrap();
        assert_eq!(whole, vec![b"{\"a\":\n1}".to_vec(), b"two".to_vec()]);
        let mut events = Events::default();
        let mut split = Vec::new();
        for byte in stream {
            events
                .feed(&[*byte], 1024, |data| split.push(data))
                .unwrap();
        }
        assert_eq!(split, whole);
    }

    #[test]
    fn an_event_longer_than_the_cap_stops_the_stream() {
        assert_eq!(events_of(b"data: 0123456789\n\n", 4), Err(b"0123".to_vec()));
        assert!(events_of(b"data: 0123456789", 4).is_err());
    }
}
