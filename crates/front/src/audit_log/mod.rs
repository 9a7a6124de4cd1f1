//! The audit log as evidence: every line a writer appends carries a hash chain, so an edited,
//! deleted or reordered line is found by `toolgate audit verify`, and optionally an Ed25519
//! signature with the operator's key, so the chain cannot be rewritten without it.
//!
//! A line is the gate's audit event with two members added at its end:
//!
//! ```text
//! {…the event…,"chain":{"id":"6f1c…","seq":41,"prev":"9b2e…"},"sig":"base64…"}
//! ```
//!
//! A file holds one chain, whoever writes it: a writer appends under the file's lock (`flock`)
//! and, when the file has grown since it last held the lock (another process appended, or this
//! is its first line in a log that already has some), reads the file's last line and continues
//! that line's chain: its `id`, the next `seq`, `prev` the SHA-256 of that line, bytes and
//! newline. So the lines of sequential `toolgate check --audit` runs, or of replicas sharing a
//! file, are one chain, and an edit of any of them breaks the line after it. A file whose last
//! line is not a chained line (older, cut off mid-write, or not an audit line) begins a new chain
//! at seq 0 with `prev` null, which `verify` shows as a chain of its own. A stream (stdout) has
//! a chain of its own.
//!
//! A writer keeps the lock across the lines of a burst and lets it go every [`LOCK_LEASE`] (a
//! thread of its own does, so an idle writer holds nothing): a line then costs one `write`, not a
//! lock, a length look-up, the write and an unlock, and another process appending to the same file
//! waits at most that long for its turn, as it waited for a line before. With a flush interval
//! ([`ChainedAuditLog::flushing_every`], `--audit-flush-interval`) the lines are also held back
//! while the lock is kept and written together as it is let go: one `write` for a burst, at the
//! price of the last interval's lines if the process is killed.
//!
//! When the file is rotated under a writer (renamed away, which it sees within
//! `RENAME_CHECK_EVERY`, or truncated), the writer opens the path again and goes on in the new file with `"rotated":true` on the first line there: the
//! chain continues from the digest of the line the old file ended with, which `toolgate audit
//! verify OLD NEW` checks.
//!
//! With a key, the writer signs **checkpoints**, as transparency logs sign their tree heads: a
//! chained line `{"checkpoint":true,"time":…,"chain":{…},"sig":"base64…"}` after every 1,024
//! lines, at least once a second while lines come, and when the log is closed. `sig` signs the
//! whole line but the signature (its bytes up to and with the `}` that closes `chain`; it is the
//! last member, and nothing may follow it), so it covers the chain's head, `prev`: the digest of
//! the line before, which holds the one before it, and so every line of the chain up to it. An
//! Ed25519 signature costs some 40 µs; a checkpoint's share of a line is a few hundredths of it.
//! (Logs written before checkpoints signed every line: `verify` reads those too, each signed line
//! covering the ones before it alike.)
//!
//! What the chain proves: lines kept in place, in order, none removed between two that remain.
//! Without a key, whoever can write the file can rewrite every line after an edit; with one,
//! only the key's holder can. The last lines of a chain can always be cut off unseen: ship the
//! log off the machine as it is written (a collector) for that.

mod chain;
mod keys;
mod verify;

use chain::ChainState;
pub(crate) use keys::read_signing_key;
pub use keys::{generate_key_pair, read_verifying_key};

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_gate::{AuditEvent, AuditSink, Decision};

use toolgate_repo::{OutputMode, UsageError, open_output_file};

pub use verify::{AuditLogVerifier, AuditProblem, ChainSummary, Verified, verify_audit_log};

/// The longest key file read.
const MAX_KEY_BYTES: usize = 16 * 1024;

/// The longest audit line read back, by `verify` and by a writer continuing a file's chain. The
/// gate bounds what a host can put in a line (`toolgate_gate::MAX_RECORDED_TEXT`), so a line
/// this writer writes is a few KiB at most; longer ones are older logs', or not audit lines.
const MAX_LINE_BYTES: u64 = 1 << 20;

/// How often a writer looks its path up again to see the file renamed away.
const RENAME_CHECK_EVERY: Duration = Duration::from_millis(250);

/// The longest a writer keeps the file's lock after taking it for a line: the lines of a burst
/// share one lock (and one look at the file's length), and another writer waits at most this.
const LOCK_LEASE: Duration = Duration::from_millis(25);

/// The longest flush interval (`--audit-flush-interval`): the lock is let go at each flush, so
/// this is also the longest another writer of the file waits.
pub const MAX_FLUSH_INTERVAL: Duration = Duration::from_secs(1);

/// Lines held back for the flush interval are written sooner when they come to this many bytes.
const HELD_BACK_BYTES: usize = 64 * 1024;

/// A checkpoint is signed after this many lines since the last…
const CHECKPOINT_LINES: u64 = 1024;

/// …or once this long has passed since it, while lines come (a quiet log is signed by the timer).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// The lengths of the members a signature adds: `,"sig":"` before it, `"}` after.
const SIG_OPEN: &[u8] = b",\"sig\":\"";
const SIG_CLOSE: &[u8] = b"\"}";

/// Where a chained log writes.
enum Target {
    /// A file, locked for each line, re-opened at `path` when it is rotated under the writer.
    File {
        file: File,
        path: PathBuf,
        /// The file's inode, to see a rename.
        inode: Option<u64>,
        /// The file's length after the last line this writer knows of (its own, or one it read
        /// back); `None` before its first line, so that line reads the file's last.
        known_end: Option<u64>,
        /// This writer holds the file's lock (taken for a line, let go by the lease thread).
        locked: bool,
    },
    /// Any other writer (stdout for a container's log).
    Stream(Box<dyn Write + Send>),
}

/// An audit log whose lines are chained (and signed, with a key): an [`AuditSink`] for every
/// front that writes `--audit`.
pub struct ChainedAuditLog {
    state: Arc<Mutex<ChainState>>,
}

impl std::fmt::Debug for ChainedAuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainedAuditLog").finish_non_exhaustive()
    }
}

/// Opens (creating it if needed) the audit log `path` names, for appending chained lines,
/// signed with the key at `key` if one is named (an Ed25519 PKCS#8 PEM file, as `openssl
/// genpkey -algorithm ed25519` or `toolgate audit keygen` writes it).
pub fn open_audit_log(path: &Path, key: Option<&Path>) -> Result<ChainedAuditLog, UsageError> {
    let signer = key.map(read_signing_key).transpose()?;
    let file = open_output_file(path, OutputMode::AppendReadable, "the audit log")?;
    let inode = file_inode(&file);
    Ok(ChainedAuditLog::with_target(
        Target::File {
            file,
            path: path.to_path_buf(),
            inode,
            known_end: None,
            locked: false,
        },
        signer,
    ))
}

/// The audit log `--audit PATH` names, in every verb: `-` is standard output, where the verb
/// leaves it free (`stdout_taken` says why it does not: it carries a protocol's messages), else
/// a file opened for appending ([`open_audit_log`]).
pub fn open_audit(
    path: &Path,
    key: Option<&Path>,
    stdout_taken: Option<&str>,
) -> Result<ChainedAuditLog, UsageError> {
    if path.as_os_str() != "-" {
        return open_audit_log(path, key);
    }
    match stdout_taken {
        Some(why) => Err(UsageError::new(format!(
            "--audit -: stdout {why}; audit to a file instead"
        ))),
        None => chained_audit_stream(Box::new(io::stdout()), key),
    }
}

/// A chained audit log on any writer (stdout, a socket): never re-opened.
pub fn chained_audit_stream(
    writer: Box<dyn Write + Send>,
    key: Option<&Path>,
) -> Result<ChainedAuditLog, UsageError> {
    let signer = key.map(read_signing_key).transpose()?;
    Ok(ChainedAuditLog::with_target(Target::Stream(writer), signer))
}

#[cfg(unix)]
fn file_inode(file: &File) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|meta| meta.ino())
}

#[cfg(not(unix))]
fn file_inode(_file: &File) -> Option<u64> {
    Some(0)
}

#[cfg(unix)]
fn path_inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|meta| meta.ino())
}

#[cfg(not(unix))]
fn path_inode(_path: &Path) -> Option<u64> {
    Some(0)
}

/// A new chain's id: random, or (without a generator) the time and the process.
fn new_chain_id() -> String {
    let mut id = [0u8; 8];
    if getrandom::fill(&mut id).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        id = (nanos ^ u64::from(std::process::id())).to_be_bytes();
    }
    hex(&id)
}

/// How a file ends, read back under its lock: what the next line continues.
#[derive(Debug, PartialEq, Eq)]
enum Tail {
    /// Nothing in it.
    Empty,
    /// A chained line: its chain's id and seq, and its digest.
    Chained {
        id: String,
        seq: u64,
        digest: [u8; 32],
    },
    /// A last line that is complete but no chained audit line (older, or not an audit line).
    Unchained,
    /// A last line without its newline (a writer stopped mid-line): the next line must begin on
    /// a line of its own.
    Cut,
}

/// Reads the last line of `file`, `end` bytes long, without moving its position (it is opened
/// for appending; every write goes to the end whatever the position).
fn read_tail(file: &File, end: u64) -> io::Result<Tail> {
    if end == 0 {
        return Ok(Tail::Empty);
    }
    let start = end.saturating_sub(MAX_LINE_BYTES + 1);
    let mut bytes = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
    read_exact_at(file, &mut bytes, start)?;
    if bytes.last() != Some(&b'\n') {
        return Ok(Tail::Cut);
    }
    let body = &bytes[..bytes.len() - 1];
    let line_start = match body.iter().rposition(|byte| *byte == b'\n') {
        Some(newline) => newline + 1,
        // The whole window is one line: the file's first, or longer than any audit line.
        None if start == 0 => 0,
        None => return Ok(Tail::Unchained),
    };
    let line = &bytes[line_start..];
    let Ok(value) = toolgate_gate::internals::parse_strict_json(&line[..line.len() - 1], 64) else {
        return Ok(Tail::Unchained);
    };
    let chain = value.get("chain");
    let id = chain
        .and_then(|chain| chain.get("id"))
        .and_then(Value::as_str);
    let seq = chain
        .and_then(|chain| chain.get("seq"))
        .and_then(Value::as_u64);
    Ok(match (id, seq) {
        (Some(id), Some(seq)) if is_chain_id(id) && seq < u64::MAX => Tail::Chained {
            id: id.to_owned(),
            seq,
            digest: Sha256::digest(line).into(),
        },
        _ => Tail::Unchained,
    })
}

/// A chain id as writers make them: 1 to 64 hex digits (a planted line cannot hand the next
/// writer an id that breaks its line).
fn is_chain_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|byte| byte.is_ascii_hexdigit())
}

#[cfg(unix)]
fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
}

#[cfg(not(unix))]
fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buffer)
}

impl ChainedAuditLog {
    fn with_target(target: Target, signer: Option<SigningKey>) -> ChainedAuditLog {
        let tended = signer.is_some() || matches!(target, Target::File { .. });
        let state = Arc::new(Mutex::new(ChainState {
            target,
            id: new_chain_id(),
            next_seq: 0,
            prev: None,
            rotated: false,
            signer,
            line: Vec::with_capacity(1024),
            uncovered: 0,
            rename_checked: None,
            waiting_since: None,
            leases_lock: false,
            flush_every: None,
            held_back: Vec::new(),
            unwritten: None,
        }));
        if tended && tend_while_open(Arc::downgrade(&state)) {
            let mut held = state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            held.leases_lock = true;
        }
        ChainedAuditLog { state }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ChainState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes one line `fill` appends (the gate's event line, `}\n`-terminated), chained; then
    /// a signed checkpoint where one is due.
    fn write_chained(&self, fill: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let mut state = self.lock();
        let earlier = state.unwritten.take();
        state.write_line(fill, false)?;
        if state.checkpoint_due() {
            state.checkpoint()?;
        }
        match earlier {
            Some(error) => Err(io::Error::new(
                error.kind(),
                format!("lines held back for the flush interval were lost: {error}"),
            )),
            None => Ok(()),
        }
    }

    /// Holds lines back for at most `interval` (at most [`MAX_FLUSH_INTERVAL`]), while this
    /// writer keeps the file's lock, and writes them together: one `write` for the lines of a
    /// burst instead of one a line, at the price of lines the process had no time to write if it
    /// is killed. A stream, or a file this writer cannot keep locked, is written line by line.
    pub fn flushing_every(self, interval: Duration) -> ChainedAuditLog {
        {
            let mut state = self.lock();
            if state.leases_lock && matches!(state.target, Target::File { .. }) {
                state.flush_every =
                    Some(interval.clamp(Duration::from_millis(1), MAX_FLUSH_INTERVAL));
            }
        }
        self
    }

    /// Signs a checkpoint now, if any line is not yet covered by one (a front that stops, `check`
    /// after its line): every line of the chain up to it is then signed. Lines held back for the
    /// flush interval are written with it.
    pub fn checkpoint(&self) -> io::Result<()> {
        let mut state = self.lock();
        state.checkpoint()?;
        state.write_held_back()
    }
}

impl Drop for ChainedAuditLog {
    fn drop(&mut self) {
        // The last lines are signed and written before the log is closed; a failure here has
        // nowhere to go.
        let _ = self.checkpoint();
    }
}

/// While the log is open, every [`LOCK_LEASE`] (or flush interval): signs a checkpoint where
/// lines wait for one (a quiet log's last lines are not left unsigned until the next call), then
/// writes the lines held back and lets the file's lock go (another writer's turn). Whether the
/// thread runs: without it, checkpoints still come every N lines, every second of traffic and at
/// close, and each line is written under a lock taken for it.
fn tend_while_open(state: std::sync::Weak<Mutex<ChainState>>) -> bool {
    std::thread::Builder::new()
        .name("toolgate-audit".to_owned())
        .spawn(move || {
            let mut every = LOCK_LEASE;
            loop {
                std::thread::sleep(every);
                let Some(state) = state.upgrade() else {
                    return;
                };
                let mut state = state
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if state.checkpoint_due() {
                    // Written at the next line, or at close, if the file refuses it now.
                    let _ = state.checkpoint();
                }
                state.let_lock_go();
                every = state.flush_every.unwrap_or(LOCK_LEASE);
            }
        })
        .is_ok()
}

impl AuditSink for ChainedAuditLog {
    fn record(&self, event: &AuditEvent) -> io::Result<()> {
        self.write_chained(|line| event.write_json_line(line))
    }

    fn record_decision(&self, decision: &Decision) -> io::Result<()> {
        self.write_chained(|line| decision.write_audit_line(line))
    }
}

/// A checkpoint's own members, as an event line is filled: `{"checkpoint":true,"time":…}`.
fn checkpoint_line(line: &mut Vec<u8>) {
    line.extend_from_slice(b"{\"checkpoint\":true,\"time\":");
    match toolgate_gate::internals::format_timestamp(std::time::SystemTime::now()) {
        // RFC 3339: digits and `-:.TZ`, nothing to escape.
        Some(time) => {
            line.push(b'"');
            line.extend_from_slice(time.as_bytes());
            line.push(b'"');
        }
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b"}\n");
}

/// `bytes` in lowercase hex, appended to `out` (no allocation on the write path).
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0x0f)]);
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u64) -> impl FnOnce(&mut Vec<u8>) {
        move |line: &mut Vec<u8>| {
            line.extend_from_slice(
                format!("{{\"request_id\":\"r{n}\",\"outcome\":\"admitted\"}}\n").as_bytes(),
            )
        }
    }

    /// A writer whose bytes the test reads back.
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A chained log on a stream, and what it has written.
    fn stream_log(key: Option<SigningKey>) -> (ChainedAuditLog, Arc<Mutex<Vec<u8>>>) {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let log =
            ChainedAuditLog::with_target(Target::Stream(Box::new(Shared(buffer.clone()))), key);
        (log, buffer)
    }

    /// `lines` events, and, with a key, the checkpoint the log signs when it is closed.
    fn log_of(lines: u64, key: Option<SigningKey>) -> Vec<u8> {
        let (log, buffer) = stream_log(key);
        for n in 0..lines {
            log.write_chained(event(n)).unwrap();
        }
        drop(log);
        buffer.lock().unwrap().clone()
    }

    /// Every problem found, as (line, why).
    fn problems(text: &[u8], key: Option<&VerifyingKey>) -> Vec<(usize, String)> {
        verify_audit_log(text, key)
            .unwrap()
            .problems
            .into_iter()
            .map(|problem| (problem.line, problem.why))
            .collect()
    }

    /// The first problem found.
    fn broken(text: &[u8], key: Option<&VerifyingKey>) -> Option<(usize, String)> {
        problems(text, key).into_iter().next()
    }

    fn lines_of(text: &[u8]) -> Vec<Vec<u8>> {
        text.split_inclusive(|byte| *byte == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    }

    #[test]
    fn an_intact_log_verifies_and_every_tampering_is_found() {
        let text = log_of(5, None);
        assert_eq!(broken(&text, None), None);
        let lines = lines_of(&text);
        // Edited: the next line's prev no longer matches.
        let mut edited = lines.clone();
        edited[1] = String::from_utf8_lossy(&lines[1])
            .replace("r1", "r9")
            .into_bytes();
        let (at, why) = broken(&edited.concat(), None).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("line 2") && why.contains("edited"), "{why}");
        // Deleted.
        let deleted = [&lines[0], &lines[1], &lines[3], &lines[4]].map(Vec::as_slice);
        let (at, why) = broken(&deleted.concat(), None).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("missing"), "{why}");
        // Reordered: the one line out of place is named, and the chain goes on from the line
        // before it.
        let reordered = [&lines[0], &lines[2], &lines[1], &lines[3], &lines[4]].map(Vec::as_slice);
        let found = problems(&reordered.concat(), None);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[1].1.contains("reordered"), "{found:?}");
        // The head deleted.
        let headless = [&lines[2], &lines[3], &lines[4]].map(Vec::as_slice);
        let (at, why) = broken(&headless.concat(), None).unwrap();
        assert_eq!(at, 1);
        assert!(why.contains("deleted"), "{why}");
        // Cut mid-line.
        assert!(
            broken(&text[..text.len() - 3], None)
                .unwrap()
                .1
                .contains("cut off")
        );
    }

    #[test]
    fn a_signed_log_verifies_only_with_its_key_and_an_edited_last_line_is_found() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let text = log_of(3, Some(key.clone()));
        assert_eq!(broken(&text, Some(&key.verifying_key())), None);
        let other = SigningKey::from_bytes(&[4; 32]).verifying_key();
        assert!(broken(&text, Some(&other)).unwrap().1.contains("signature"));
        // The last line: no next line holds its digest, but its signature does not verify. Its
        // request id is edited as a whole JSON string: a bare `r2` may also occur inside an
        // earlier line's digest or signature, which would make this a different test.
        let edited = String::from_utf8(text.clone()).unwrap().replacen(
            "\"request_id\":\"r2\"",
            "\"request_id\":\"r7\"",
            1,
        );
        // The last event: the checkpoint after it holds its digest, under the signature.
        let (at, why) = broken(edited.as_bytes(), Some(&key.verifying_key())).unwrap();
        assert_eq!(at, 4);
        assert!(why.contains("edited"), "{why}");
        // The checkpoint itself edited: its signature no longer verifies, and the lines before
        // it are then covered by none.
        let retimed = String::from_utf8(text.clone()).unwrap().replacen(
            "\"checkpoint\":true,\"time\":\"",
            "\"checkpoint\":true,\"time\":\"1",
            1,
        );
        let found = problems(retimed.as_bytes(), Some(&key.verifying_key()));
        assert!(
            found
                .iter()
                .any(|(at, why)| *at == 4 && why.contains("signature")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(at, why)| *at == 1 && why.starts_with("unsigned tail")),
            "{found:?}"
        );
        // Unsigned lines with a key given: the tail is named from its first line.
        let (at, why) = broken(&log_of(2, None), Some(&key.verifying_key())).unwrap();
        assert_eq!(at, 1);
        assert!(
            why.contains("unsigned tail") && why.contains("the 1 after it"),
            "{why}"
        );
    }

    /// Lines written after the last checkpoint (a writer killed before it signed them, or lines
    /// added by someone without the key) are named from the first; the ones before it verify.
    #[test]
    fn lines_after_the_last_checkpoint_are_an_unsigned_tail() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let (log, buffer) = stream_log(Some(key.clone()));
        for n in 0..3 {
            log.write_chained(event(n)).unwrap();
        }
        log.checkpoint().unwrap();
        log.write_chained(event(3)).unwrap();
        log.write_chained(event(4)).unwrap();
        // The process dies here: no checkpoint at close.
        let text = buffer.lock().unwrap().clone();
        std::mem::forget(log);
        let found = problems(&text, Some(&key.verifying_key()));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 5);
        assert!(found[0].1.contains("unsigned tail"), "{found:?}");
        assert_eq!(problems(&text, None), Vec::new());
    }

    /// Every line rewritten (outcomes flipped, a forged caller, the chain recomputed) with a
    /// `sig` that is not a string: each is named, with the key and without it.
    #[test]
    fn a_signature_that_is_not_a_string_is_a_forgery() {
        let key = SigningKey::from_bytes(&[3; 32]);
        for fake in ["null", "0", "{}", "[]", "true"] {
            let mut forged = Vec::new();
            let mut prev: Option<[u8; 32]> = None;
            for seq in 0..3 {
                let prev_text =
                    prev.map_or("null".to_owned(), |digest| format!("\"{}\"", hex(&digest)));
                let line = format!(
                    "{{\"request_id\":\"r{seq}\",\"caller\":\"admin\",\"outcome\":\"admitted\",\"chain\":{{\"id\":\"ab\",\"seq\":{seq},\"prev\":{prev_text}}},\"sig\":{fake}}}\n"
                );
                prev = Some(Sha256::digest(line.as_bytes()).into());
                forged.extend_from_slice(line.as_bytes());
            }
            for key in [Some(&key.verifying_key()), None] {
                let found = problems(&forged, key);
                let forgeries = found
                    .iter()
                    .filter(|(_, why)| why.starts_with("forged"))
                    .count();
                assert_eq!(forgeries, 3, "{fake}: {found:?}");
                // With a key, nothing is signed at all: every line is an unsigned tail too.
                let tails = found
                    .iter()
                    .filter(|(_, why)| why.starts_with("unsigned tail"))
                    .count();
                assert_eq!(tails, usize::from(key.is_some()), "{fake}: {found:?}");
            }
        }
    }

    /// Members appended after a genuine signature (the last line, which no later line's digest
    /// holds) are found: the signature covers the whole line but itself.
    #[test]
    fn members_after_the_signature_are_found() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let text = log_of(2, Some(key.clone()));
        let text = String::from_utf8(text).unwrap();
        for appended in [",\"verdict\":\"rejected\"", ",\"x\":1", " "] {
            let forged = format!("{}{appended}}}\n", &text[..text.len() - 2]);
            let found = problems(forged.as_bytes(), Some(&key.verifying_key()));
            // The checkpoint (line 3) is forged, so lines 1 to 3 are covered by no signature.
            assert_eq!(found.len(), 2, "{appended}: {found:?}");
            assert_eq!(found[0].0, 3);
            assert!(found[0].1.starts_with("forged"), "{found:?}");
            assert!(found[1].1.starts_with("unsigned tail"), "{found:?}");
        }
        // An escaped signature reads as the same string, but is not what was signed.
        let last = text.lines().last().unwrap();
        let cut = last.rfind(",\"sig\":\"").unwrap() + 8;
        let escaped = format!(
            "{}{}\\u{:04x}{}\n",
            &text[..text.len() - last.len() - 1],
            &last[..cut],
            last.as_bytes()[cut],
            &last[cut + 1..]
        );
        let found = problems(escaped.as_bytes(), Some(&key.verifying_key()));
        assert!(
            found
                .iter()
                .any(|(at, why)| *at == 3 && why.starts_with("forged"))
        );
    }

    /// A line past the bound (an older writer's megabyte request id, or junk) is named and
    /// skipped; an edit after it is still found, and the chain goes on over it.
    #[test]
    fn verify_goes_on_past_a_line_it_cannot_read() {
        let text = log_of(4, None);
        let mut lines = lines_of(&text);
        let mut long = vec![b'x'; (MAX_LINE_BYTES + 10) as usize];
        long.push(b'\n');
        lines.insert(1, long);
        lines.insert(2, b"not json\n".to_vec());
        lines[4] = String::from_utf8_lossy(&lines[4])
            .replace("r2", "r8")
            .into_bytes();
        let found = problems(&lines.concat(), None);
        let at: Vec<usize> = found.iter().map(|(at, _)| *at).collect();
        assert_eq!(at, vec![2, 3, 6], "{found:?}");
        assert!(found[0].1.contains("more than any audit line"), "{found:?}");
        assert!(found[2].1.contains("edited"), "{found:?}");
    }

    /// A chain line too long to read (an older writer's megabyte request id) is reported once;
    /// the next line, which names its digest, continues the chain over it, not called a gap.
    #[test]
    fn a_chain_goes_on_over_a_line_reported_unreadable() {
        let (log, buffer) = stream_log(None);
        let huge = "i".repeat((MAX_LINE_BYTES + 100) as usize);
        log.write_chained(event(0)).unwrap();
        log.write_chained(|line: &mut Vec<u8>| {
            line.extend_from_slice(format!("{{\"request_id\":\"{huge}\"}}\n").as_bytes())
        })
        .unwrap();
        log.write_chained(event(2)).unwrap();
        log.write_chained(event(3)).unwrap();
        let text = buffer.lock().unwrap().clone();
        let found = problems(&text, None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 2);
        // An edit after it is still found.
        let edited = String::from_utf8(text)
            .unwrap()
            .replacen("\"r2\"", "\"r9\"", 1);
        let found = problems(edited.as_bytes(), None);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].0, 4);
    }

    fn file_log(path: &Path, key: Option<&Path>) -> ChainedAuditLog {
        open_audit_log(path, key).unwrap()
    }

    fn verify_files(paths: &[&Path], key: Option<&VerifyingKey>) -> Verified {
        let mut verifier = AuditLogVerifier::new(key);
        for path in paths {
            verifier
                .read_file(io::BufReader::new(File::open(path).unwrap()))
                .unwrap();
        }
        verifier.finish()
    }

    /// Sequential writers (`toolgate check --audit` run after run) continue one chain, so an
    /// edit of any line but the last is found.
    #[test]
    fn writers_appending_to_a_log_continue_its_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        for n in 0..4 {
            file_log(&path, None).write_chained(event(n)).unwrap();
        }
        let verified = verify_files(&[&path], None);
        assert!(verified.intact(), "{verified:?}");
        assert_eq!(verified.chains.len(), 1);
        assert_eq!(verified.chains[0].last_seq, 3);
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replacen("\"r1\"", "\"r5\"", 1);
        let (at, why) = broken(edited.as_bytes(), None).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("edited"), "{why}");
        // A line cut off mid-write by a writer that stopped: the next writer begins on a line of
        // its own, and a new chain; only the cut line is reported.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"request_id\":\"half").unwrap();
        file_log(&path, None).write_chained(event(9)).unwrap();
        file_log(&path, None).write_chained(event(10)).unwrap();
        let verified = verify_files(&[&path], None);
        assert_eq!(verified.problems.len(), 1, "{verified:?}");
        assert_eq!(verified.problems[0].line, 5);
        assert_eq!(verified.chains.len(), 2);
        assert_eq!(verified.lines, vec![7]);
    }

    /// A writer keeps the file's lock across a burst and lets it go within the lease: another
    /// writer (its own handle, as another process has) waiting for it gets its turn, and
    /// continues the chain, with lines interleaved both ways.
    #[test]
    fn a_writer_keeping_the_lock_lets_the_next_one_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let first = file_log(&path, None);
        first.write_chained(event(0)).unwrap();
        let started = Instant::now();
        let second = file_log(&path, None);
        second.write_chained(event(1)).unwrap();
        // It waited for the lease to end, not for the first writer's next line or its close.
        assert!(started.elapsed() < Duration::from_secs(5));
        first.write_chained(event(2)).unwrap();
        second.write_chained(event(3)).unwrap();
        let verified = verify_files(&[&path], None);
        assert!(verified.intact(), "{verified:?}");
        assert_eq!(verified.chains.len(), 1, "{verified:?}");
        assert_eq!(verified.lines, vec![4]);
        let text = std::fs::read_to_string(&path).unwrap();
        let order: Vec<_> = (0..4)
            .map(|n| text.find(&format!("\"r{n}\"")).unwrap())
            .collect();
        assert!(order.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
    }

    /// With a flush interval the lines of a burst are held back and written together within it
    /// (or at close), chained and signed as any; a file that refuses them is said with the next
    /// line.
    #[test]
    fn lines_held_back_are_written_within_the_flush_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = file_log(&path, None).flushing_every(MAX_FLUSH_INTERVAL);
        // The first tick comes within the lease; from then on, within the interval.
        std::thread::sleep(LOCK_LEASE * 2);
        for n in 0..3 {
            log.write_chained(event(n)).unwrap();
        }
        let written = || std::fs::read_to_string(&path).unwrap().lines().count();
        assert_eq!(written(), 0, "held back");
        let deadline = Instant::now() + Duration::from_secs(10);
        while written() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(written(), 3);
        log.write_chained(event(3)).unwrap();
        drop(log);
        let verified = verify_files(&[&path], None);
        assert!(verified.intact(), "{verified:?}");
        assert_eq!(verified.lines, vec![4]);

        // A file that refuses the lines (a full disk): the next line says they were lost.
        #[cfg(target_os = "linux")]
        {
            let full = file_log(Path::new("/dev/full"), None).flushing_every(LOCK_LEASE);
            std::thread::sleep(LOCK_LEASE * 2);
            full.write_chained(event(0)).unwrap();
            std::thread::sleep(LOCK_LEASE * 4);
            let said = full.write_chained(event(1)).unwrap_err().to_string();
            assert!(said.contains("were lost"), "{said}");
        }
    }

    /// Writers in several threads, each with its own handle on the file (as processes have),
    /// interleave their lines in one chain under the lock.
    #[test]
    fn concurrent_writers_share_one_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let key = SigningKey::from_bytes(&[5; 32]);
        let key_path = dir.path().join("k.pem");
        std::fs::write(
            &key_path,
            ed25519_dalek::pkcs8::KeypairBytes {
                secret_key: key.to_bytes(),
                public_key: None,
            }
            .to_pkcs8_pem(Default::default())
            .unwrap()
            .as_bytes(),
        )
        .unwrap();
        std::thread::scope(|scope| {
            for writer in 0..4 {
                let (path, key_path) = (&path, &key_path);
                scope.spawn(move || {
                    let log = file_log(path, Some(key_path));
                    for n in 0..25 {
                        log.write_chained(event(writer * 100 + n)).unwrap();
                    }
                });
            }
        });
        let verified = verify_files(&[&path], Some(&key.verifying_key()));
        assert!(verified.intact(), "{verified:?}");
        assert_eq!(verified.chains.len(), 1);
        // 100 events, and each writer's checkpoints among them, in one chain.
        let text = std::fs::read_to_string(&path).unwrap();
        let events = text
            .lines()
            .filter(|line| !line.contains("\"checkpoint\""))
            .count();
        assert_eq!(events, 100);
        assert_eq!(verified.chains[0].last_seq + 1, text.lines().count() as u64);
    }

    /// A log renamed away under two writers: the new file continues the old one's chain,
    /// which `verify OLD NEW` checks; the new file alone is taken as rotated in; the new file
    /// after the wrong old one is not.
    #[test]
    fn a_rotated_chain_is_continued_and_checked_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let first = file_log(&path, None);
        let second = file_log(&path, None);
        for n in 0..3 {
            first.write_chained(event(n)).unwrap();
            second.write_chained(event(10 + n)).unwrap();
        }
        let old = dir.path().join("audit.jsonl.1");
        std::fs::rename(&path, &old).unwrap();
        // A writer looks its path up again within RENAME_CHECK_EVERY.
        std::thread::sleep(RENAME_CHECK_EVERY + Duration::from_millis(50));
        // The writer that wrote the old file's last line goes on first; then the other.
        second.write_chained(event(20)).unwrap();
        first.write_chained(event(21)).unwrap();
        let both = verify_files(&[&old, &path], None);
        assert!(both.intact(), "{both:?}");
        assert_eq!(both.chains.len(), 1);
        assert!(both.chains[0].continued && !both.chains[0].rotated_in);
        let alone = verify_files(&[&path], None);
        assert!(alone.intact() && alone.chains[0].rotated_in, "{alone:?}");
        // The old file's last line cut off: the new file's first line no longer continues it.
        let text = std::fs::read(&old).unwrap();
        let lines = lines_of(&text);
        let cut = dir.path().join("cut");
        std::fs::write(&cut, lines[..lines.len() - 1].concat()).unwrap();
        let found = verify_files(&[&cut, &path], None);
        assert_eq!(found.problems.len(), 1, "{found:?}");
        assert_eq!((found.problems[0].file, found.problems[0].line), (1, 1));
        assert!(found.problems[0].why.contains("missing"), "{found:?}");
        // Another log entirely before it.
        let other = dir.path().join("other");
        file_log(&other, None).write_chained(event(1)).unwrap();
        let found = verify_files(&[&other, &path], None);
        assert!(found.problems[0].why.contains("file before"), "{found:?}");
        // Truncated in place (copytruncate): the next line is marked and chained to the last
        // line the writer knew.
        let copy = dir.path().join("copy");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        first.write_chained(event(30)).unwrap();
        let both = verify_files(&[&copy, &path], None);
        assert!(both.intact(), "{both:?}");
    }

    #[test]
    fn keys_round_trip_through_pem() {
        let (private, public) = generate_key_pair().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.pem"), private).unwrap();
        std::fs::write(dir.path().join("k.pub"), public).unwrap();
        let signing = read_signing_key(&dir.path().join("k.pem")).unwrap();
        let verifying = read_verifying_key(&dir.path().join("k.pub")).unwrap();
        assert_eq!(signing.verifying_key(), verifying);
        assert!(read_signing_key(&dir.path().join("k.pub")).is_err());
    }
}
