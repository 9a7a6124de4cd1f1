//! The host side over stdio: one host, for the proxy's life, on this process's stdin and
//! stdout. Its messages are read one line at a time (capped); every answer is written by the
//! thread that has it (no hand-off), one whole line at a time. When the host closes its input
//! the run ends.

use std::io::{BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use super::lines::{Line, read_line};
use super::proxy::{Host, Proxy};

/// Serves the host on `input` and `output` until it closes `input` and every request is answered.
pub(crate) fn serve(
    proxy: &Proxy,
    input: impl Read + Send,
    output: impl Write + Send + 'static,
    line_cap: usize,
) {
    // `None` once the host stopped reading: what is left to say has no one to hear it.
    let output = Arc::new(Mutex::new(Some(output)));
    let host = Host::new(
        Arc::new(move |mut line: Vec<u8>| {
            line.push(b'\n');
            let mut output = output
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(writer) = output.as_mut()
                && writer
                    .write_all(&line)
                    .and_then(|()| writer.flush())
                    .is_err()
            {
                output.take();
            }
        }),
        true,
    );
    proxy.attach_duplex_host(&host);
    let mut reader = BufReader::new(input);
    loop {
        match read_line(&mut reader, line_cap) {
            Ok(None) | Err(_) => break,
            Ok(Some(Line::TooLong(_))) => proxy.host_message_too_long(&host, line_cap),
            Ok(Some(Line::Complete(line))) => proxy.host_message(&host, line),
        }
    }
    // The host closed its input: close the upstream's, as a host would, give it the timeout to
    // finish what is in flight, then stop it; whatever is still pending is answered.
    proxy.shut_down("the host closed the connection");
}
