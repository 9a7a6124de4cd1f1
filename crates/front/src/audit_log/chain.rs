//! The chain's state under its lock: each line composed (its sequence, the digest of the line
//! before, a signature where one is due), held back or written, checkpoints signed, and a
//! rotated or locked file reopened where the chain goes on.

use super::*;

pub(super) struct ChainState {
    pub(super) target: Target,
    /// The chain this writer continues.
    pub(super) id: String,
    pub(super) next_seq: u64,
    /// The digest of the chain's last line.
    pub(super) prev: Option<[u8; 32]>,
    /// The next line is the first in a file the chain was rotated into.
    pub(super) rotated: bool,
    pub(super) signer: Option<SigningKey>,
    /// The line being written (kept, so writing allocates nothing per line).
    pub(super) line: Vec<u8>,
    /// Lines this writer wrote since its last checkpoint (none signed yet).
    pub(super) uncovered: u64,
    /// When the path was last looked up for a rename (logrotate's `create`).
    pub(super) rename_checked: Option<Instant>,
    /// When the oldest of those lines was written: none waits much more than
    /// [`CHECKPOINT_EVERY`] for its signature.
    pub(super) waiting_since: Option<Instant>,
    /// Whether the file's lock is kept across lines: only while a thread lets it go every
    /// [`LOCK_LEASE`] (or flush interval).
    pub(super) leases_lock: bool,
    /// With a flush interval, lines are held back while this writer keeps the file's lock and
    /// written together when it lets the lock go: one `write` for a burst.
    pub(super) flush_every: Option<Duration>,
    /// Lines written (chained) but not yet in the file.
    pub(super) held_back: Vec<u8>,
    /// Why held-back lines could not be written, said with the next line.
    pub(super) unwritten: Option<io::Error>,
}

impl ChainState {
    /// Writes one chained line `fill` appends, signed when `sign` says (a checkpoint).
    pub(super) fn write_line(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>),
        sign: bool,
    ) -> io::Result<()> {
        let Target::File { .. } = &self.target else {
            self.compose(fill, false, sign);
            let Target::Stream(writer) = &mut self.target else {
                unreachable!("matched above")
            };
            writer.write_all(&self.line)?;
            writer.flush()?;
            self.advance(sign);
            return Ok(());
        };
        self.reopen_if_rotated()?;
        self.append_under_lock(fill, sign)
    }

    /// Appends the line `fill` writes to the file this writer holds, under the file's lock:
    /// other processes may append to the same file, and the lock makes reading its last line and
    /// appending the next one a single step. The lock is kept for the next lines when the lease
    /// thread will let it go.
    pub(super) fn append_under_lock(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>),
        sign: bool,
    ) -> io::Result<()> {
        let Target::File { file, locked, .. } = &mut self.target else {
            unreachable!("called for a file")
        };
        if *locked {
            return self.append_locked(fill, sign, false);
        }
        let lockable = match file.lock() {
            Ok(()) => true,
            // A filesystem without locks: written as before, each writer's view its own.
            Err(error) if error.kind() == io::ErrorKind::Unsupported => false,
            Err(error) => return Err(error),
        };
        *locked = lockable && self.leases_lock;
        let written = self.append_locked(fill, sign, true);
        if lockable && !self.leases_lock {
            self.let_lock_go_now();
        }
        written
    }

    /// The lease is over: the lines held back are written and the file's lock, if this writer
    /// keeps it, is let go.
    pub(super) fn let_lock_go(&mut self) {
        if let Err(error) = self.write_held_back() {
            self.unwritten = Some(error);
        }
        if let Target::File { locked, .. } = &mut self.target
            && *locked
        {
            *locked = false;
            self.let_lock_go_now();
        }
    }

    /// Writes the lines held back for the flush interval. If the file refuses them they are
    /// lost, and the next line continues the chain from the file's own last line (read back),
    /// so the chain `verify` reads stays whole around the gap.
    pub(super) fn write_held_back(&mut self) -> io::Result<()> {
        if self.held_back.is_empty() {
            return Ok(());
        }
        let Target::File {
            file, known_end, ..
        } = &mut self.target
        else {
            unreachable!("lines are held back for a file only")
        };
        let written = file.write_all(&self.held_back);
        if written.is_err() {
            *known_end = None;
        }
        self.held_back.clear();
        written
    }

    pub(super) fn let_lock_go_now(&self) {
        if let Target::File { file, .. } = &self.target {
            let _ = file.unlock();
        }
    }

    /// Whether a checkpoint is due: [`CHECKPOINT_LINES`] lines wait for one, or the oldest has
    /// waited [`CHECKPOINT_EVERY`].
    pub(super) fn checkpoint_due(&self) -> bool {
        self.uncovered >= CHECKPOINT_LINES
            || self
                .waiting_since
                .is_some_and(|since| since.elapsed() >= CHECKPOINT_EVERY)
    }

    /// A signed checkpoint line, if this writer has lines no checkpoint covers yet.
    pub(super) fn checkpoint(&mut self) -> io::Result<()> {
        if self.signer.is_none() || self.uncovered == 0 {
            return Ok(());
        }
        self.write_line(checkpoint_line, true)
    }

    /// Composes the chained (and, for a checkpoint, signed) line from the event `fill` writes,
    /// into `self.line`; `cut` starts it with a newline, ending a line another writer left
    /// unfinished.
    pub(super) fn compose(&mut self, fill: impl FnOnce(&mut Vec<u8>), cut: bool, sign: bool) {
        let line = &mut self.line;
        line.clear();
        if cut {
            line.push(b'\n');
        }
        let start = line.len();
        fill(line);
        // The event's closing `}` and newline give way to the chain's members.
        if line.ends_with(b"}\n") {
            line.truncate(line.len() - 2);
        }
        line.extend_from_slice(b",\"chain\":{\"id\":\"");
        line.extend_from_slice(self.id.as_bytes());
        line.extend_from_slice(b"\",\"seq\":");
        let _ = write!(line, "{}", self.next_seq);
        line.extend_from_slice(b",\"prev\":");
        match &self.prev {
            Some(prev) => {
                line.push(b'"');
                push_hex(line, prev);
                line.push(b'"');
            }
            None => line.extend_from_slice(b"null"),
        }
        if self.rotated {
            line.extend_from_slice(b",\"rotated\":true");
        }
        line.extend_from_slice(b"}}");
        if let (true, Some(signer)) = (sign, &self.signer) {
            let signature = signer.sign(&line[start..]);
            line.truncate(line.len() - 1);
            line.extend_from_slice(SIG_OPEN);
            line.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(signature.to_bytes())
                    .as_bytes(),
            );
            line.extend_from_slice(SIG_CLOSE);
        }
        line.push(b'\n');
    }

    /// The next line continues chain `id` after its line `seq`, whose digest is `digest`.
    pub(super) fn continue_after(&mut self, id: String, seq: u64, digest: [u8; 32]) {
        self.id = id;
        self.next_seq = seq + 1;
        self.prev = Some(digest);
    }

    /// The line in `self.line` was written (`signed`: a checkpoint): the chain moves on past
    /// it.
    pub(super) fn advance(&mut self, signed: bool) {
        let line = self.line.strip_prefix(b"\n").unwrap_or(&self.line);
        self.prev = Some(Sha256::digest(line).into());
        self.next_seq += 1;
        self.rotated = false;
        if signed {
            self.uncovered = 0;
            self.waiting_since = None;
        } else {
            self.uncovered += 1;
            self.waiting_since.get_or_insert_with(Instant::now);
        }
    }

    /// Continues the chain the file's last line ends (when the file grew since this writer's
    /// last line), then appends the next line. Called holding the file's lock; `taken` says it
    /// was just taken (else this writer held it since its last line, which ended the file).
    pub(super) fn append_locked(
        &mut self,
        fill: impl FnOnce(&mut Vec<u8>),
        sign: bool,
        taken: bool,
    ) -> io::Result<()> {
        let Target::File {
            file, known_end, ..
        } = &mut self.target
        else {
            unreachable!("called for a file")
        };
        let end = match (taken, *known_end) {
            (false, Some(end)) => end,
            _ => file.metadata()?.len(),
        };
        let mut cut = false;
        if *known_end != Some(end) {
            match read_tail(file, end)? {
                Tail::Empty => {}
                Tail::Chained { id, seq, digest } => {
                    self.continue_after(id, seq, digest);
                    self.rotated = false;
                }
                tail @ (Tail::Unchained | Tail::Cut) => {
                    cut = tail == Tail::Cut;
                    self.id = new_chain_id();
                    self.next_seq = 0;
                    self.prev = None;
                    self.rotated = false;
                }
            }
        }
        self.compose(fill, cut, sign);
        let Target::File {
            file,
            known_end,
            locked,
            ..
        } = &mut self.target
        else {
            unreachable!("called for a file")
        };
        let hold_back = self.flush_every.is_some() && *locked;
        if hold_back {
            self.held_back.extend_from_slice(&self.line);
        } else {
            file.write_all(&self.line)?;
        }
        *known_end = Some(end + self.line.len() as u64);
        self.advance(sign);
        if hold_back && self.held_back.len() >= HELD_BACK_BYTES {
            self.write_held_back()?;
        }
        Ok(())
    }

    /// A file renamed away (its path now names another file, or none) or truncated under the
    /// writer has been rotated: the chain is first brought up to the old file's last line (other
    /// writers may have appended after this one's), then the path is opened again and the chain
    /// goes on there, its first line marked.
    pub(super) fn reopen_if_rotated(&mut self) -> io::Result<()> {
        let Target::File { locked, .. } = &self.target else {
            return Ok(());
        };
        // The path is looked up again at most every RENAME_CHECK_EVERY (a lookup by path costs
        // a call more than the rest of the line): lines written meanwhile go on in the renamed
        // file, chained as any. The file's length likewise while this writer keeps the lock
        // (no other writer has appended), else for every line.
        let look = self
            .rename_checked
            .is_none_or(|at| at.elapsed() >= RENAME_CHECK_EVERY);
        if *locked && !look {
            return Ok(());
        }
        // What is held back belongs to the file as it is now, before it is measured.
        self.write_held_back()?;
        let Target::File {
            file,
            path,
            inode,
            known_end,
            ..
        } = &mut self.target
        else {
            unreachable!("matched above")
        };
        let length = file.metadata()?.len();
        let renamed = look
            && match (path_inode(path), inode.as_ref()) {
                (Some(now), Some(held)) => now != *held,
                (None, _) => true,
                _ => false,
            };
        if look {
            self.rename_checked = Some(Instant::now());
        }
        let truncated = known_end.is_some_and(|end| length < end);
        if !renamed && !truncated {
            return Ok(());
        }
        if renamed
            && known_end.is_some_and(|end| end != length)
            && let Tail::Chained { id, seq, digest } = read_tail(file, length)?
        {
            // Fields, not `continue_after`: the target is borrowed until the reopen below.
            self.id = id;
            self.next_seq = seq + 1;
            self.prev = Some(digest);
        }
        if renamed && self.signer.is_some() && self.uncovered > 0 {
            // The old file ends with a checkpoint: verified alone, its lines are signed.
            self.append_under_lock(checkpoint_line, true)?;
            self.write_held_back()?;
        }
        let Target::File {
            file,
            path,
            inode,
            known_end,
            locked,
        } = &mut self.target
        else {
            unreachable!("a file stays a file")
        };
        let reopened = open_output_file(path, OutputMode::AppendReadable, "the audit log")
            .map_err(|error| io::Error::other(error.to_string()))?;
        *inode = file_inode(&reopened);
        // The old file's lock goes with it.
        *locked = false;
        // The new file's first line: continued from this chain, unless another writer already
        // wrote there (then its last line is read, under the lock).
        *known_end = if reopened.metadata()?.len() == 0 {
            Some(0)
        } else {
            None
        };
        *file = reopened;
        self.rotated = self.prev.is_some();
        Ok(())
    }
}
