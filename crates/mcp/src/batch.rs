//! Lines held back while a reader has more messages already buffered, and written together when
//! it has none: with many calls in flight, one system call carries several messages instead of
//! one each (a pipe write costs more than the proxy's own work on a call).
//!
//! A thread that reads messages (the host's input, the upstream's output) handles each one
//! inside [`handling`], saying whether another whole line is already in its buffer. What that
//! thread writes to a [`Batched`] writer meanwhile is appended to the writer's buffer; after the
//! last buffered message, everything it held back is written, before the thread reads again and
//! so before it can block. A line written by any other thread (the timeout watcher, a transport's
//! task) goes out at once, after whatever the writer already holds, so the order is kept.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

pub(crate) use toolgate_repo::lines::has_line;

use super::lock;

thread_local! {
    /// Whether this thread is handling a message with more already buffered behind it.
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    /// The writers this thread appended to while holding, to write out when it stops.
    static HELD: RefCell<Vec<Arc<dyn Held>>> = const { RefCell::new(Vec::new()) };
}

/// A writer with lines held back.
trait Held: Send + Sync {
    fn write_held(&self);
}

/// Runs `handle` for one message. While `more_buffered`, lines written to [`Batched`] writers
/// are held; otherwise they are written, with everything this thread held before.
pub(crate) fn handling<R>(more_buffered: bool, handle: impl FnOnce() -> R) -> R {
    HOLDING.set(more_buffered);
    let result = handle();
    HOLDING.set(false);
    if !more_buffered {
        let held = HELD.take();
        for writer in held {
            writer.write_held();
        }
    }
    result
}

/// Whether this thread is holding back what it writes. A thread that waits for an answer must
/// not be: the request it waits on could be among the lines it holds.
pub(crate) fn holding() -> bool {
    HOLDING.get()
}

/// One destination of whole lines (a child's input, this process's output) whose writes may be
/// held back by the thread writing them ([`handling`]).
pub(crate) struct Batched<W> {
    state: Mutex<State<W>>,
    /// Set while a write is in progress: a reader that stops reading blocks it, and a watchdog
    /// can tell (`upstream.rs`).
    pub writing_since: Mutex<Option<Instant>>,
    /// Called once, when a write fails: the destination is gone.
    on_broken: Box<dyn Fn() + Send + Sync>,
}

struct State<W> {
    /// `None` once a write failed or the destination was closed.
    writer: Option<W>,
    held: Vec<u8>,
}

impl<W: Write + Send + 'static> Batched<W> {
    pub(crate) fn new(writer: W, on_broken: impl Fn() + Send + Sync + 'static) -> Arc<Batched<W>> {
        Arc::new(Batched {
            state: Mutex::new(State {
                writer: Some(writer),
                held: Vec::new(),
            }),
            writing_since: Mutex::new(None),
            on_broken: Box::new(on_broken),
        })
    }

    /// Writes one whole line (with its `\n`), or holds it when this thread is handling a message
    /// with more buffered behind it. `false` once the destination is gone.
    pub(crate) fn send(self: &Arc<Self>, line: &[u8]) -> bool {
        let mut state = lock(&self.state);
        if state.writer.is_none() {
            return false;
        }
        if HOLDING.get() {
            state.held.extend_from_slice(line);
            drop(state);
            let me: Arc<dyn Held> = Arc::clone(self) as Arc<dyn Held>;
            HELD.with_borrow_mut(|held| {
                if !held.iter().any(|writer| Arc::ptr_eq(writer, &me)) {
                    held.push(me);
                }
            });
            return true;
        }
        self.write_out(state, line)
    }

    /// Closes the destination (a child's input ends); what is held is written first.
    pub(crate) fn close(&self) {
        let state = lock(&self.state);
        self.write_out(state, &[]);
        lock(&self.state).writer.take();
    }

    /// Writes what is held, then `line`, in one write (`line` alone, uncopied, when nothing is
    /// held: the common case of one call at a time).
    fn write_out(&self, mut state: MutexGuard<'_, State<W>>, line: &[u8]) -> bool {
        let State { writer, held } = &mut *state;
        let Some(output) = writer.as_mut() else {
            held.clear();
            return false;
        };
        let bytes: &[u8] = if held.is_empty() {
            line
        } else {
            held.extend_from_slice(line);
            held
        };
        if bytes.is_empty() {
            return true;
        }
        *lock(&self.writing_since) = Some(Instant::now());
        let written = output.write_all(bytes).and_then(|()| output.flush());
        *lock(&self.writing_since) = None;
        held.clear();
        if written.is_ok() {
            return true;
        }
        writer.take();
        drop(state);
        (self.on_broken)();
        false
    }
}

impl<W: Write + Send + 'static> Held for Batched<W> {
    fn write_held(&self) {
        let state = lock(&self.state);
        self.write_out(state, &[]);
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts the writes it is given, and keeps what they wrote.
    /// A destination that refuses every byte.
    struct Refusing;

    impl Write for Refusing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::new(io::ErrorKind::BrokenPipe, "closed"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Recorder {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            lock(&self.0).push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_written_while_more_is_buffered_go_out_together_after_the_last() {
        let recorder = Recorder::default();
        let batched = Batched::new(recorder.clone(), || {});
        for (index, more) in [true, true, false].into_iter().enumerate() {
            handling(more, || {
                assert!(batched.send(format!("{index}\n").as_bytes()));
                let written = lock(&recorder.0).len();
                assert_eq!(written, usize::from(!more), "after message {index}");
            });
        }
        assert_eq!(*lock(&recorder.0), vec![b"0\n1\n2\n".to_vec()]);
    }

    #[test]
    fn a_line_from_a_thread_not_holding_goes_out_at_once_after_what_is_held() {
        let recorder = Recorder::default();
        let batched = Batched::new(recorder.clone(), || {});
        handling(true, || {
            batched.send(b"held\n");
            let other = Arc::clone(&batched);
            std::thread::spawn(move || assert!(other.send(b"now\n")))
                .join()
                .unwrap();
            assert_eq!(*lock(&recorder.0), vec![b"held\nnow\n".to_vec()]);
        });
        // Nothing is left to write: the other thread wrote it.
        assert_eq!(lock(&recorder.0).len(), 1);
    }

    #[test]
    fn a_failed_write_reports_the_destination_gone_once() {
        let broken = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&broken);
        let batched = Batched::new(Refusing, move || {
            count.fetch_add(1, Ordering::SeqCst);
        });
        handling(true, || assert!(batched.send(b"held\n")));
        // The held line failed when the batch ended.
        handling(false, || {});
        assert_eq!(broken.load(Ordering::SeqCst), 1);
        assert!(!batched.send(b"later\n"));
        assert_eq!(broken.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn closing_writes_what_is_held_first() {
        let recorder = Recorder::default();
        let batched = Batched::new(recorder.clone(), || {});
        handling(true, || {
            batched.send(b"last\n");
            batched.close();
        });
        assert_eq!(*lock(&recorder.0), vec![b"last\n".to_vec()]);
        assert!(!batched.send(b"after\n"));
    }
}
