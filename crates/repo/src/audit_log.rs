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
//! `id` names one writer (random per process and file), so several processes may append to one
//! file (`O_APPEND`) and each chain is followed on its own. `seq` counts that writer's lines
//! from 0; `prev` is the SHA-256 of the chain's previous line, bytes and newline (`null` on the
//! first). When the file is rotated under a writer (renamed away, or truncated), the writer
//! opens it again and goes on in the new file with `"rotated":true` on its first line there:
//! the chain restarts visibly, from the digest of the line the old file ended with. `sig`,
//! present when the writer holds a key, signs the line's bytes without the `,"sig":…` member
//! (that is, up to and with the closing `}` that follows `chain`).
//!
//! What the chain proves: lines kept in place, in order, none removed between two that remain.
//! Without a key, whoever can write the file can rewrite every line after an edit; with one,
//! only the key's holder can. The last lines of a chain can always be cut off unseen: ship the
//! log off the machine as it is written (a collector) for that.

use std::fs::File;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::Engine;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_gate::{AuditEvent, AuditSink, Decision};

use crate::error::UsageError;
use crate::output_file::{OutputMode, open_output_file};

/// The longest key file read.
const MAX_KEY_BYTES: usize = 16 * 1024;

/// Where a chained log writes.
enum Target {
    /// A file, re-opened at `path` when it is rotated under the writer.
    File {
        file: File,
        path: PathBuf,
        /// The file's identity and length after the last line, to see a rotation.
        identity: Option<(u64, u64)>,
        written_to: u64,
    },
    /// Any other writer (stdout for a container's log).
    Stream(Box<dyn Write + Send>),
}

struct ChainState {
    target: Target,
    /// This writer's chain.
    id: String,
    next_seq: u64,
    /// The digest of the chain's last line.
    prev: Option<[u8; 32]>,
    /// The next line is the first in a file the chain was rotated into.
    rotated: bool,
    signer: Option<SigningKey>,
    /// The line being written (kept, so writing allocates nothing per line).
    line: Vec<u8>,
}

/// An audit log whose lines are chained (and signed, with a key): an [`AuditSink`] for every
/// front that writes `--audit`.
pub struct ChainedAuditLog {
    state: Mutex<ChainState>,
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
    let file = open_output_file(path, OutputMode::Append, "the audit log")?;
    let identity = file_identity(&file);
    let written_to = identity.map_or(0, |(_, length)| length);
    Ok(ChainedAuditLog::with_target(
        Target::File {
            file,
            path: path.to_path_buf(),
            identity,
            written_to,
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
fn file_identity(file: &File) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    file.metadata().ok().map(|meta| (meta.ino(), meta.len()))
}

#[cfg(not(unix))]
fn file_identity(file: &File) -> Option<(u64, u64)> {
    file.metadata().ok().map(|meta| (0, meta.len()))
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

impl ChainedAuditLog {
    fn with_target(target: Target, signer: Option<SigningKey>) -> ChainedAuditLog {
        let mut id = [0u8; 8];
        if getrandom::fill(&mut id).is_err() {
            // No generator: the chain is still one writer's, told apart by time.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| since.as_nanos() as u64);
            id = (nanos ^ u64::from(std::process::id())).to_be_bytes();
        }
        ChainedAuditLog {
            state: Mutex::new(ChainState {
                target,
                id: hex(&id),
                next_seq: 0,
                prev: None,
                rotated: false,
                signer,
                line: Vec::with_capacity(1024),
            }),
        }
    }

    /// Writes one line `fill` appends (the gate's event line, `}\n`-terminated), chained.
    fn write_chained(&self, fill: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let mut guard = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let state = &mut *guard;
        state.reopen_if_rotated()?;
        let line = &mut state.line;
        line.clear();
        fill(line);
        // The event's closing `}` and newline give way to the chain's members.
        if line.ends_with(b"}\n") {
            line.truncate(line.len() - 2);
        }
        line.extend_from_slice(b",\"chain\":{\"id\":\"");
        line.extend_from_slice(state.id.as_bytes());
        line.extend_from_slice(b"\",\"seq\":");
        let _ = write!(line, "{}", state.next_seq);
        line.extend_from_slice(b",\"prev\":");
        match &state.prev {
            Some(prev) => {
                line.push(b'"');
                push_hex(line, prev);
                line.push(b'"');
            }
            None => line.extend_from_slice(b"null"),
        }
        if state.rotated {
            line.extend_from_slice(b",\"rotated\":true");
        }
        line.extend_from_slice(b"}}");
        if let Some(signer) = &state.signer {
            let signature = signer.sign(line);
            line.truncate(line.len() - 1);
            line.extend_from_slice(b",\"sig\":\"");
            line.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(signature.to_bytes())
                    .as_bytes(),
            );
            line.extend_from_slice(b"\"}");
        }
        line.push(b'\n');
        match &mut state.target {
            Target::File {
                file, written_to, ..
            } => {
                file.write_all(line)?;
                file.flush()?;
                *written_to = file_identity(file).map_or(*written_to, |(_, length)| length);
            }
            Target::Stream(writer) => {
                writer.write_all(line)?;
                writer.flush()?;
            }
        }
        state.prev = Some(Sha256::digest(&*line).into());
        state.next_seq += 1;
        state.rotated = false;
        Ok(())
    }
}

impl ChainState {
    /// A file renamed away (its path now names another file, or none) or truncated under the
    /// writer has been rotated: the path is opened again and the chain goes on there, marked.
    fn reopen_if_rotated(&mut self) -> io::Result<()> {
        let Target::File {
            file,
            path,
            identity,
            written_to,
        } = &mut self.target
        else {
            return Ok(());
        };
        let now = file_identity(file);
        let renamed = match (path_inode(path), identity.as_ref()) {
            (Some(inode), Some((held, _))) => inode != *held,
            (None, _) => true,
            _ => false,
        };
        let truncated = now.is_some_and(|(_, length)| length < *written_to);
        if !renamed && !truncated {
            return Ok(());
        }
        let reopened = open_output_file(path, OutputMode::Append, "the audit log")
            .map_err(|error| io::Error::other(error.to_string()))?;
        *identity = file_identity(&reopened);
        *written_to = identity.map_or(0, |(_, length)| length);
        *file = reopened;
        self.rotated = self.next_seq > 0;
        Ok(())
    }
}

impl AuditSink for ChainedAuditLog {
    fn record(&self, event: &AuditEvent) -> io::Result<()> {
        self.write_chained(|line| event.write_json_line(line))
    }

    fn record_decision(&self, decision: &Decision) -> io::Result<()> {
        self.write_chained(|line| decision.write_audit_line(line))
    }
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

fn read_key_text(path: &Path, what: &str) -> Result<String, UsageError> {
    let file =
        File::open(path).map_err(|error| UsageError::io(path, &format!("read {what}"), &error))?;
    let bytes = toolgate_gate::read_capped(file, MAX_KEY_BYTES)
        .map_err(|error| UsageError::io(path, &format!("read {what}"), &error))?;
    String::from_utf8(bytes)
        .map_err(|_| UsageError::new(format!("{}: {what} is PEM text", path.display())))
}

/// The signing key in `path`: an Ed25519 private key, PKCS#8 PEM.
pub(crate) fn read_signing_key(path: &Path) -> Result<SigningKey, UsageError> {
    let text = read_key_text(path, "the audit signing key")?;
    SigningKey::from_pkcs8_pem(&text).map_err(|_| {
        UsageError::new(format!(
            "{}: not an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----); make one with `toolgate audit keygen` or `openssl genpkey -algorithm ed25519`",
            path.display()
        ))
    })
}

/// The verification key in `path`: an Ed25519 public key, SPKI PEM.
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey, UsageError> {
    let text = read_key_text(path, "the audit public key")?;
    VerifyingKey::from_public_key_pem(&text).map_err(|_| {
        UsageError::new(format!(
            "{}: not an Ed25519 public key in PEM (-----BEGIN PUBLIC KEY-----), as `toolgate audit keygen` prints it or `openssl pkey -pubout` writes it",
            path.display()
        ))
    })
}

/// A new signing key from the operating system's generator: its private half as PKCS#8 PEM,
/// its public half as SPKI PEM.
pub fn generate_key_pair() -> Result<(String, String), UsageError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|error| UsageError::new(format!("no random source for a key: {error}")))?;
    let key = SigningKey::from_bytes(&seed);
    // PKCS#8 v1 (the seed alone), as OpenSSL writes and reads it; v2's embedded public key is
    // one OpenSSL 3.0 refuses.
    let private = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: seed,
        public_key: None,
    }
    .to_pkcs8_pem(Default::default())
    .map_err(|error| UsageError::new(format!("cannot encode the key: {error}")))?;
    let public = key
        .verifying_key()
        .to_public_key_pem(Default::default())
        .map_err(|error| UsageError::new(format!("cannot encode the key: {error}")))?;
    Ok((private.to_string(), public))
}

/// What `toolgate audit verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The lines read.
    pub lines: usize,
    /// Each chain: its id, its first and last seq, the line it ends on, and whether it came
    /// from another file (rotated) or restarted.
    pub chains: Vec<ChainSummary>,
    /// The first broken, missing or reordered line: its number (from 1) and what is wrong.
    pub broken: Option<(usize, String)>,
}

/// One chain of a verified log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    /// The writer's chain id.
    pub id: String,
    /// Its first line's seq in this file (0 unless it was rotated in).
    pub first_seq: u64,
    /// Its last line's seq.
    pub last_seq: u64,
    /// The line (from 1) its last line is on.
    pub last_line: usize,
    /// Whether its first line here continues a chain from a rotated file.
    pub rotated_in: bool,
}

struct Followed {
    summary: ChainSummary,
    prev: [u8; 32],
}

/// The longest audit line verified: an event is a few hundred bytes.
const MAX_LINE_BYTES: u64 = 1 << 20;

/// Follows every chain of the log `reader` holds, a line at a time, checking each line's
/// signature with `key` when one is given (and then requiring one on every line), and reports
/// the first line that breaks.
pub fn verify_audit_log(
    mut reader: impl BufRead,
    key: Option<&VerifyingKey>,
) -> io::Result<Verified> {
    let mut chains: Vec<Followed> = Vec::new();
    let mut lines = 0;
    let mut broken = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = io::Read::take(&mut reader, MAX_LINE_BYTES + 1).read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        lines += 1;
        if line.last() != Some(&b'\n') {
            broken = Some((
                lines,
                if line.len() as u64 > MAX_LINE_BYTES {
                    format!("longer than {MAX_LINE_BYTES} bytes: not an audit line")
                } else {
                    "the last line has no newline: it was cut off mid-write, or truncated"
                        .to_owned()
                },
            ));
            break;
        }
        if let Err(why) = follow(&line, lines, key, &mut chains) {
            broken = Some((lines, why));
            break;
        }
    }
    Ok(Verified {
        lines,
        chains: chains.into_iter().map(|chain| chain.summary).collect(),
        broken,
    })
}

/// Checks one line against the chain it names, and advances that chain.
fn follow(
    line: &[u8],
    number: usize,
    key: Option<&VerifyingKey>,
    chains: &mut Vec<Followed>,
) -> Result<(), String> {
    let body = &line[..line.len() - 1];
    let value = toolgate_gate::internals::parse_strict_json(body, 64)
        .map_err(|why| format!("not a JSON audit line ({why})"))?;
    let chain = value
        .get("chain")
        .ok_or("the line carries no chain (written before chaining, or inserted)")?;
    let id = chain
        .get("id")
        .and_then(Value::as_str)
        .ok_or("the chain has no id")?;
    let seq = chain
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or("the chain has no seq")?;
    let prev = match chain.get("prev") {
        Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        _ => return Err("the chain's prev is neither a digest nor null".to_owned()),
    };
    let rotated = chain.get("rotated") == Some(&Value::Bool(true));
    match (value.get("sig"), key) {
        (Some(Value::String(signature)), Some(key)) => {
            let cut = find_last(body, b",\"sig\":\"")
                .ok_or("the signature is not the line's last member")?;
            let mut signed = body[..cut].to_vec();
            signed.push(b'}');
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(signature)
                .map_err(|_| "the signature is not base64")?;
            let signature = ed25519_dalek::Signature::from_slice(&bytes)
                .map_err(|_| "the signature is not 64 bytes")?;
            key.verify(&signed, &signature).map_err(|_| {
                "the signature does not verify: the line was edited, or signed with another key"
                    .to_owned()
            })?;
        }
        (None, Some(_)) => {
            return Err("the line is not signed, and a public key was given".to_owned());
        }
        _ => {}
    }
    let digest: [u8; 32] = Sha256::digest(line).into();
    let known = chains.iter_mut().find(|chain| chain.summary.id == id);
    match known {
        None => {
            // A chain's first line in this file: a new writer (seq 0, no prev), or one rotated
            // in from the file before (marked).
            match (seq, prev, rotated) {
                (0, None, _) => {}
                (_, Some(_), true) => {}
                _ => {
                    return Err(format!(
                        "chain {id} begins here at seq {seq}, unmarked: its earlier lines were deleted"
                    ));
                }
            }
            chains.push(Followed {
                summary: ChainSummary {
                    id: id.to_owned(),
                    first_seq: seq,
                    last_seq: seq,
                    last_line: number,
                    rotated_in: rotated,
                },
                prev: digest,
            });
        }
        Some(chain) => {
            let expected = chain.summary.last_seq + 1;
            if seq > expected {
                return Err(format!(
                    "chain {id} goes from seq {} (line {}) to {seq}: {} line(s) between them are missing",
                    chain.summary.last_seq,
                    chain.summary.last_line,
                    seq - expected
                ));
            }
            if seq < expected {
                return Err(format!(
                    "chain {id}'s seq {seq} comes after seq {} (line {}): lines were reordered or repeated",
                    chain.summary.last_seq, chain.summary.last_line
                ));
            }
            if prev != Some(hex(&chain.prev).as_str()) {
                return Err(format!(
                    "its prev is not the digest of chain {id}'s line before it (line {}): that line was edited",
                    chain.summary.last_line
                ));
            }
            chain.summary.last_seq = seq;
            chain.summary.last_line = number;
            chain.prev = digest;
        }
    }
    Ok(())
}

fn find_last(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .rposition(|window| window == needle)
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

    fn log_of(lines: u64, key: Option<SigningKey>) -> Vec<u8> {
        let buffer = std::sync::Arc::new(Mutex::new(Vec::new()));
        struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let log =
            ChainedAuditLog::with_target(Target::Stream(Box::new(Shared(buffer.clone()))), key);
        for n in 0..lines {
            log.write_chained(event(n)).unwrap();
        }
        buffer.lock().unwrap().clone()
    }

    fn broken(text: &[u8], key: Option<&VerifyingKey>) -> Option<(usize, String)> {
        verify_audit_log(text, key).unwrap().broken
    }

    #[test]
    fn an_intact_log_verifies_and_every_tampering_is_found() {
        let text = log_of(5, None);
        assert_eq!(broken(&text, None), None);
        let lines: Vec<&[u8]> = text.split_inclusive(|byte| *byte == b'\n').collect();
        // Edited: the next line's prev no longer matches.
        let edited: Vec<u8> = [
            lines[0],
            &String::from_utf8_lossy(lines[1])
                .replace("r1", "r9")
                .into_bytes(),
            lines[2],
            lines[3],
            lines[4],
        ]
        .concat();
        let (at, why) = broken(&edited, None).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("line 2") && why.contains("edited"), "{why}");
        // Deleted.
        let deleted: Vec<u8> = [lines[0], lines[1], lines[3], lines[4]].concat();
        let (at, why) = broken(&deleted, None).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("missing"), "{why}");
        // Reordered.
        let reordered: Vec<u8> = [lines[0], lines[2], lines[1], lines[3], lines[4]].concat();
        assert!(broken(&reordered, None).is_some());
        // The head deleted.
        let headless: Vec<u8> = [lines[2], lines[3], lines[4]].concat();
        let (at, why) = broken(&headless, None).unwrap();
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
        let (at, why) = broken(edited.as_bytes(), Some(&key.verifying_key())).unwrap();
        assert_eq!(at, 3);
        assert!(why.contains("signature"), "{why}");
        // Unsigned lines with a key given.
        assert!(
            broken(&log_of(1, None), Some(&key.verifying_key()))
                .unwrap()
                .1
                .contains("not signed")
        );
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
