//! The host side over stdio: one host, for the proxy's life, on this process's stdin and
//! stdout. Its messages are read one line at a time (capped); every answer is written by the
//! thread that has it (no hand-off), whole lines only, several to a write when that thread has
//! more messages already buffered (`batch.rs`). When the host closes its input the run ends.

use std::io::{BufReader, Read, Write};
use std::sync::Arc;

use super::batch::{self, Batched};
use super::lines::{Line, read_line};
use super::proxy::{Host, Proxy};

/// Serves the host on `input` and `output` until it closes `input` and every request is answered.
pub(crate) fn serve(
    proxy: &Proxy,
    input: impl Read + Send,
    output: impl Write + Send + 'static,
    line_cap: usize,
) {
    // Once a write fails the host stopped reading: what is left to say has no one to hear it.
    let output = Batched::new(output, || {});
    let host = Host::new(
        Arc::new(move |mut line: Vec<u8>, _| {
            line.push(b'\n');
            output.send(&line);
        }),
        true,
    );
    proxy.attach_duplex_host(&host);
    let mut reader = BufReader::new(input);
    loop {
        let message = read_line(&mut reader, line_cap);
        let more_buffered = batch::has_line(reader.buffer());
        match message {
            Ok(None) | Err(_) => break,
            Ok(Some(Line::TooLong(_))) => batch::handling(more_buffered, || {
                proxy.host_message_too_long(&host, line_cap)
            }),
            Ok(Some(Line::Complete(line))) => {
                batch::handling(more_buffered, || proxy.host_message(&host, line))
            }
        }
    }
    // Nothing this thread held back stays unwritten.
    batch::handling(false, || {});
    // The host closed its input: close the upstream's, as a host would, give it the timeout to
    // finish what is in flight, then stop it; whatever is still pending is answered.
    proxy.shut_down("the host closed the connection");
}
