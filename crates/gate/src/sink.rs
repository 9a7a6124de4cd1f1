//! Where audit events go: the [`AuditSink`] trait, and [`JsonLinesSink`], which keeps each line
//! whole under concurrent use and writes it from the decision without building an event.

use std::io::{self, Write};
use std::sync::Mutex;

use crate::audit::AuditEvent;
use crate::decision::Decision;

/// Where audit events go. Implementations must keep each event whole under concurrent use.
pub trait AuditSink: Send + Sync {
    /// Records one event.
    fn record(&self, event: &AuditEvent) -> io::Result<()>;

    /// Records a decision's event. The default builds the decision's [`AuditEvent`] and hands it
    /// to [`record`](Self::record); a sink that only writes the line (as [`JsonLinesSink`] does)
    /// can write it from the decision directly, without building or keeping an event.
    fn record_decision(&self, decision: &Decision) -> io::Result<()> {
        self.record(decision.audit_event())
    }
}

/// Writes one JSON line per event to any writer (an append-mode file, a socket, stdout).
///
/// Each line is written into one buffer the sink keeps (so logging allocates nothing per event)
/// and handed to the writer with a single `write_all` and `flush` while the lock is held, so
/// lines from concurrent admissions never interleave. Open files with `O_APPEND` when several
/// processes share one log.
#[derive(Debug)]
pub struct JsonLinesSink<W> {
    writer: Mutex<LineWriter<W>>,
}

#[derive(Debug)]
struct LineWriter<W> {
    writer: W,
    line: Vec<u8>,
}

impl<W: Write> JsonLinesSink<W> {
    /// Wraps a writer.
    pub fn new(writer: W) -> JsonLinesSink<W> {
        JsonLinesSink {
            writer: Mutex::new(LineWriter {
                writer,
                line: Vec::new(),
            }),
        }
    }

    /// Returns the writer.
    pub fn into_inner(self) -> W {
        self.writer
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .writer
    }
}

impl<W: Write + Send> JsonLinesSink<W> {
    /// Writes one line that `fill` appends to the sink's buffer, whole, under the lock.
    fn write_line(&self, fill: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        // A panic elsewhere while holding the lock cannot leave half a line behind (the buffer is
        // cleared before each line, which is written in one call), so a poisoned lock is safe to
        // keep using.
        let mut guard = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let LineWriter { writer, line } = &mut *guard;
        line.clear();
        fill(line);
        writer.write_all(line)?;
        writer.flush()
    }
}

impl<W: Write + Send> AuditSink for JsonLinesSink<W> {
    fn record(&self, event: &AuditEvent) -> io::Result<()> {
        self.write_line(|line| event.write_json_line(line))
    }

    fn record_decision(&self, decision: &Decision) -> io::Result<()> {
        self.write_line(|line| decision.write_audit_line(line))
    }
}
