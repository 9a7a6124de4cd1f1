//! The upstream side of the proxy, whatever carries it: a child process over stdio, or a server
//! reached over Streamable HTTP (`remote.rs`). A link sends the messages the proxy wrote; every
//! message the upstream wrote comes from one [`Source`], which the proxy reads in order.

use std::ffi::OsString;
use std::io::{BufReader, Read};
use std::process::{self, Child, ChildStdin, Command};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_gate::internals::{Node, escape_hidden};
use toolgate_repo::UsageError;

use super::batch::{self, Batched};
use super::lines::{Line, read_line};
use super::lock;

/// One message for the upstream, with what a transport that routes on it needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// The JSON-RPC message, as the proxy wrote it.
    pub line: Vec<u8>,
    /// A request's id (the proxy's own), so a transport failure can answer it.
    pub id: Option<Value>,
    /// The method, for a request or a notification.
    pub method: Option<String>,
    /// The tool's name (`tools/call`, `prompts/get`) or the resource's URI (`resources/read`).
    pub name: Option<String>,
    /// The W3C trace context of a traced call (`--otlp-endpoint`): an HTTP upstream gets it as
    /// the `traceparent` header too (it is in the message's `_meta` for either transport).
    pub traceparent: Option<String>,
    /// The revision the message's `_meta` names (`Some(None)`: none), when the proxy read it off
    /// the value it wrote the line from; `None` when it did not, and a transport that needs it
    /// reads it from the line.
    pub meta_version: Option<Option<String>>,
}

impl Outgoing {
    /// A message that is neither a request nor a notification: a response to the upstream.
    pub(crate) fn response(line: Vec<u8>) -> Outgoing {
        Outgoing {
            line,
            id: None,
            method: None,
            name: None,
            traceparent: None,
            meta_version: None,
        }
    }
}

/// What the upstream wrote, in the order it arrived.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One message.
    Line(Vec<u8>),
    /// A message longer than the cap: its first bytes.
    TooLong(Vec<u8>),
    /// The answer to one request (its id, the proxy's own) longer than the cap: its first bytes.
    /// A transport where each answer belongs to its request (Streamable HTTP) knows whose it
    /// is, so only that request fails.
    TooLongFor(Value, Vec<u8>),
    /// The upstream is gone, and why.
    Gone(String),
}

/// One message a transport's task hands the proxy ([`Link::deliver_directly`]).
pub(crate) enum Direct<'a> {
    /// A message as its bytes, for the proxy to read.
    Line(Vec<u8>),
    /// A response the transport has already parsed strictly (to learn that it is one, and
    /// whether it answers the request it was sent for): its bytes, and the root of that parse,
    /// so the proxy reads it in place instead of parsing the same bytes again.
    Response(&'a [u8], Node<'a>),
}

/// What a transport's tasks call with each message they receive ([`Link::deliver_directly`]).
pub(crate) type DirectHandler = Box<dyn for<'a> Fn(Direct<'a>) + Send + Sync>;

/// How the proxy reaches the upstream.
pub(crate) trait Link: Send + Sync {
    /// Sends one message; `false` once the upstream is gone.
    fn send(&self, message: Outgoing) -> bool;
    /// The protocol revision the proxy and the upstream agreed on (a transport that carries it
    /// outside the message, as Streamable HTTP's header does, needs it).
    fn agreed(&self, _version: &str) {}
    /// No more messages: a child's input is closed, as a host would close it.
    fn close(&self);
    /// Waits up to `grace` for the upstream to finish, then stops it.
    fn stop(&self, _grace: Duration, _finished: &dyn Fn() -> bool) {}
    /// Whether the upstream is still there.
    fn alive(&self) -> bool;
    /// How the upstream ended, where it is a process that did (its exit status, or the signal
    /// that killed it).
    fn ended(&self) -> Option<String> {
        None
    }
    /// Starts the upstream again (a process that exited), its messages from the new source;
    /// `None` where the transport does not restart one.
    fn restart(&self) -> Option<Result<Source, String>> {
        None
    }
    /// Hands each whole message the transport's own tasks receive to `handler` on the task
    /// that received it, instead of the channel the proxy's pump thread reads; everything else
    /// (the upstream gone, a message past the cap) still goes to the channel. A transport
    /// without tasks of its own (a child's pipes) keeps its one reader.
    fn deliver_directly(&self, _handler: DirectHandler) {}
    /// Whether sending can block (a pipe the upstream stops reading): then an async caller
    /// sends from a blocking thread.
    fn send_may_block(&self) -> bool {
        false
    }
    /// Stops an upstream that has kept one message from being written for `limit` (it stopped
    /// reading its input), so the thread writing it goes on and what is in flight is answered.
    fn unblock_if_stuck(&self, _limit: Duration) {}
    /// Tells the upstream that the request it knows as `id` is cancelled (its host went away,
    /// cancelled it, or it waited past the timeout). Over stdio, and in the handshake era, that
    /// is `notifications/cancelled`; a transport with a stream per request closes it instead.
    fn cancel(&self, id: &Value, reason: &str) {
        let params = serde_json::json!({"requestId": id, "reason": reason});
        self.send(Outgoing {
            line: super::message::notification_line("notifications/cancelled", &params),
            id: None,
            method: Some("notifications/cancelled".to_owned()),
            name: None,
            traceparent: None,
            meta_version: None,
        });
    }
}

/// Where the upstream's messages come from: a channel its transport fills (Streamable HTTP),
/// or a stream the proxy reads itself, line by line, on the thread that handles them (a child's
/// stdout: no hand-off between reading a result and deciding on it).
pub(crate) enum Source {
    /// Messages a transport's own tasks deliver.
    Channel(Receiver<Incoming>),
    /// A child's stdout, read with the cap.
    Lines(BufReader<Box<dyn Read + Send>>, usize),
}

impl Source {
    /// The next message, `None` once the source is exhausted.
    pub(crate) fn next_message(&mut self) -> Option<Incoming> {
        match self {
            Source::Channel(receiver) => receiver.recv().ok(),
            Source::Lines(reader, cap) => Some(match read_line(reader, *cap) {
                Ok(None) => Incoming::Gone("the upstream exited".to_owned()),
                Err(error) => Incoming::Gone(format!("reading the upstream failed: {error}")),
                Ok(Some(Line::TooLong(prefix))) => Incoming::TooLong(prefix),
                Ok(Some(Line::Complete(line))) => Incoming::Line(line),
            }),
        }
    }

    /// Whether another whole message is already buffered, so reading it cannot block (the
    /// proxy then holds back what it writes for this one: `batch.rs`).
    pub(crate) fn more_buffered(&self) -> bool {
        match self {
            Source::Channel(_) => false,
            Source::Lines(reader, _) => batch::has_line(reader.buffer()),
        }
    }
}

/// An MCP server the proxy started, over its stdin and stdout; restarted in place
/// (`--upstream-restart`), the same command again.
pub(crate) struct Stdio {
    /// The current child's input and its cancellation writer, replaced at a restart.
    current: Mutex<Current>,
    /// The current child: the same handle across restarts, the process inside replaced.
    child: Arc<Mutex<Child>>,
    /// How to start it again.
    command: Vec<OsString>,
    line_cap: usize,
    whose: String,
}

/// What the proxy writes to the running child through.
struct Current {
    /// Written by whichever thread forwards a message, whole lines only (several to a write
    /// when that thread has more already buffered); closed when the run ends. When the write in
    /// progress began, if one is: a child that stops reading its input blocks it, and the
    /// proxy's watchdog stops such a child ([`Link::unblock_if_stuck`]).
    input: Arc<Batched<ChildStdin>>,
    /// Cancellations, written by a thread of their own: they are sent from the watchdog, which
    /// must never wait on a child that stopped reading (it is the one that stops it).
    cancellations: std::sync::mpsc::Sender<Vec<u8>>,
}

impl Stdio {
    /// Starts the server `command` names (its program and arguments), its stderr relayed
    /// escaped under `whose`, and takes it over.
    pub(crate) fn spawn(
        command: &[OsString],
        line_cap: usize,
        whose: &str,
    ) -> Result<(Stdio, Source), UsageError> {
        let mut child = start_child(command, whose).map_err(UsageError::new)?;
        let pipes = pipes_of(&mut child);
        let child = Arc::new(Mutex::new(child));
        let (current, source) = take_over(pipes, line_cap, &child);
        Ok((
            Stdio {
                current: Mutex::new(current),
                child,
                command: command.to_vec(),
                line_cap,
                whose: whose.to_owned(),
            },
            source,
        ))
    }

    fn input(&self) -> Arc<Batched<ChildStdin>> {
        Arc::clone(&lock(&self.current).input)
    }
}

/// Starts the server `command` names, its stderr relayed escaped under `whose`.
fn start_child(command: &[OsString], whose: &str) -> Result<Child, String> {
    let (program, arguments) = command
        .split_first()
        .ok_or_else(|| "no server command: write it after `--`".to_owned())?;
    let mut child = Command::new(program)
        .args(arguments)
        .stdin(process::Stdio::piped())
        .stdout(process::Stdio::piped())
        .stderr(process::Stdio::piped())
        .spawn()
        .map_err(|error| {
            format!(
                "cannot start the MCP server `{}`: {error}",
                escape_hidden(&program.to_string_lossy())
            )
        })?;
    if let Some(stderr) = child.stderr.take() {
        super::lines::relay_stderr(stderr, format!("{whose}: upstream stderr"));
    }
    Ok(child)
}

/// A started child's input and output.
fn pipes_of(child: &mut Child) -> (ChildStdin, process::ChildStdout) {
    let stdin = child.stdin.take().expect("the upstream's stdin is piped");
    let stdout = child.stdout.take().expect("the upstream's stdout is piped");
    (stdin, stdout)
}

/// Takes over a started child's pipes: messages are written to its input by the thread that
/// forwards them (no hand-off); its output is the returned source, each line capped at
/// `line_cap` bytes. A child that stops reading its input is stopped (`child`): its output then
/// ends, and every request in flight is answered.
fn take_over(
    (stdin, stdout): (ChildStdin, process::ChildStdout),
    line_cap: usize,
    child: &Arc<Mutex<Child>>,
) -> (Current, Source) {
    let stopped = Arc::clone(child);
    let input = Batched::new(stdin, move || {
        let _ = lock(&stopped).kill();
    });
    let stdout: Box<dyn Read + Send> = Box::new(stdout);
    let (cancellations, to_write) = std::sync::mpsc::channel::<Vec<u8>>();
    let writer = Arc::clone(&input);
    std::thread::spawn(move || {
        // Ends when the link is dropped or restarted (the channel closes) or the input is gone.
        while let Ok(line) = to_write.recv() {
            if !writer.send(&line) {
                return;
            }
        }
    });
    (
        Current {
            input,
            cancellations,
        },
        Source::Lines(BufReader::new(stdout), line_cap),
    )
}

/// How a child that exited ended, in words.
fn exit_words(status: process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => format!("ended ({status})"),
    }
}

impl Link for Stdio {
    fn send(&self, mut message: Outgoing) -> bool {
        message.line.push(b'\n');
        self.input().send(&message.line)
    }

    fn close(&self) {
        self.input().close();
    }

    fn send_may_block(&self) -> bool {
        true
    }

    fn stop(&self, grace: Duration, finished: &dyn Fn() -> bool) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.alive() && !finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
    }

    fn alive(&self) -> bool {
        matches!(lock(&self.child).try_wait(), Ok(None))
    }

    fn ended(&self) -> Option<String> {
        // Its output closed: the process exits, or has; a moment for its status.
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            match lock(&self.child).try_wait() {
                Ok(Some(status)) => return Some(exit_words(status)),
                Ok(None) if Instant::now() < deadline => {}
                Ok(None) => return Some("closed its output but is still running".to_owned()),
                Err(error) => return Some(format!("ended (its status cannot be read: {error})")),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn restart(&self) -> Option<Result<Source, String>> {
        let mut child = match start_child(&self.command, &self.whose) {
            Ok(child) => child,
            Err(why) => return Some(Err(why)),
        };
        let pipes = pipes_of(&mut child);
        {
            let mut running = lock(&self.child);
            let _ = running.kill();
            let _ = running.wait();
            *running = child;
        }
        let (current, source) = take_over(pipes, self.line_cap, &self.child);
        *lock(&self.current) = current;
        Some(Ok(source))
    }

    fn cancel(&self, id: &Value, reason: &str) {
        let params = serde_json::json!({"requestId": id, "reason": reason});
        let mut line = super::message::notification_line("notifications/cancelled", &params);
        line.push(b'\n');
        let _ = lock(&self.current).cancellations.send(line);
    }

    fn unblock_if_stuck(&self, limit: Duration) {
        let input = self.input();
        let stuck = lock(&input.writing_since).is_some_and(|since| since.elapsed() >= limit);
        if stuck {
            super::lines::log(&format!(
                "the upstream has not read its input for {limit:?}; it is stopped, and what is in flight answered"
            ));
            let _ = lock(&self.child).kill();
        }
    }
}
