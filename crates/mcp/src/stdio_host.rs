//! The host side over stdio: one host, for the proxy's life, on this process's stdin and
//! stdout. Its messages are read one line at a time (capped) and answered in the order the
//! proxy writes them; when it closes its input the run ends.

use std::io::{BufReader, Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use super::lines::{Line, read_line};
use super::proxy::{Host, Proxy};

/// Serves the host on `input` and `output` until it closes `input` and every request is answered.
pub(crate) fn serve(
    proxy: &Proxy,
    input: impl Read + Send,
    output: impl Write + Send,
    line_cap: usize,
) {
    let (to_host, host_lines) = mpsc::channel::<Vec<u8>>();
    // Taken when the run ends, so the writer finishes once everything is written.
    let sender = Arc::new(Mutex::new(Some(to_host)));
    let reply_sender = Arc::clone(&sender);
    let host = Host::new(
        Arc::new(move |line| {
            let sender = reply_sender
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone();
            if let Some(sender) = sender {
                let _ = sender.send(line);
            }
        }),
        true,
    );
    proxy.attach_duplex_host(&host);
    std::thread::scope(|scope| {
        scope.spawn(|| write_lines(host_lines, output));
        let mut reader = BufReader::new(input);
        loop {
            match read_line(&mut reader, line_cap) {
                Ok(None) | Err(_) => break,
                Ok(Some(Line::TooLong(_))) => proxy.host_message_too_long(&host, line_cap),
                Ok(Some(Line::Complete(line))) => proxy.host_message(&host, line),
            }
        }
        // The host closed its input: close the upstream's, as a host would, give it the timeout
        // to finish what is in flight, then stop it; whatever is still pending is answered.
        proxy.shut_down("the host closed the connection");
        sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
    });
}

/// Writes each line and a newline, in order, until every sender is gone or the reader is.
fn write_lines(lines: mpsc::Receiver<Vec<u8>>, mut out: impl Write) {
    for line in lines {
        let written = out
            .write_all(&line)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        if written.is_err() {
            return;
        }
    }
}
