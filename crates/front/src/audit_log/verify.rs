//! `toolgate audit verify`: follows every chain of one log, or of a log and the files it was
//! rotated into, and reports every line that is edited, missing, reordered, forged, cut or
//! unreadable, going on past each; with a public key, every line must also be covered by a
//! signed line after it in its chain (a checkpoint, or, in older logs, each line's own
//! signature), and an unsigned tail is named.

use std::collections::VecDeque;
use std::io::{self, BufRead};

use base64::Engine;
use ed25519_dalek::{Verifier, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{MAX_LINE_BYTES, SIG_CLOSE, SIG_OPEN, hex};

/// The most problems reported one by one; past it they are counted.
const MAX_PROBLEMS: usize = 1000;

/// The most unreadable lines remembered (by digest) for a chain to continue over.
const REMEMBERED_UNREADABLE: usize = 64;

/// What `toolgate audit verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The lines read in each file, in the order the files were given.
    pub lines: Vec<usize>,
    /// Each chain: its id, its range, where it ends, and whether it came from a file not given.
    pub chains: Vec<ChainSummary>,
    /// Every broken, missing, reordered, unsigned or unreadable line, in order (at most 1,000).
    pub problems: Vec<AuditProblem>,
    /// Problems found past the first 1,000, counted only.
    pub unreported: usize,
}

impl Verified {
    /// Whether nothing was found wrong.
    pub fn intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One line found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditProblem {
    /// The file it is in (its index among those given).
    pub file: usize,
    /// Its line (from 1).
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

/// One chain of a verified log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSummary {
    /// The writer's chain id.
    pub id: String,
    /// Its first line's seq (0 unless it was rotated in from a file not given).
    pub first_seq: u64,
    /// Its last line's seq.
    pub last_seq: u64,
    /// The file (index among those given) and line (from 1) its last line is on.
    pub last_line: (usize, usize),
    /// Whether its first line continues a chain from a rotated file that was not given.
    pub rotated_in: bool,
    /// Whether it goes on from one given file into the next (checked).
    pub continued: bool,
}

struct Followed {
    summary: ChainSummary,
    prev: [u8; 32],
    /// The lines since the chain's last signed line that verified: the first one's place, and
    /// how many.
    uncovered: Option<((usize, usize), u64)>,
}

/// Follows chains over one or more files, in the order they were written (a rotated log, then
/// the file it was rotated into).
pub struct AuditLogVerifier<'k> {
    key: Option<&'k VerifyingKey>,
    chains: Vec<Followed>,
    lines: Vec<usize>,
    problems: Vec<AuditProblem>,
    unreported: usize,
    /// Lines that could not be read, by digest: a chain whose next line names one as its
    /// `prev` goes on over it (the line was reported already).
    unreadable: VecDeque<[u8; 32]>,
}

/// Verifies one log (see [`AuditLogVerifier`]).
pub fn verify_audit_log(reader: impl BufRead, key: Option<&VerifyingKey>) -> io::Result<Verified> {
    let mut verifier = AuditLogVerifier::new(key);
    verifier.read_file(reader)?;
    Ok(verifier.finish())
}

/// One line read, bounded.
enum Line {
    /// The end of the file.
    End,
    /// A line, in the buffer (with its newline unless it is the file's cut-off last line).
    Read,
    /// A line longer than any audit line: skipped, its digest and length kept.
    TooLong { digest: [u8; 32], length: u64 },
}

/// Reads the next line into `line`, never holding more than [`MAX_LINE_BYTES`] of it.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Line> {
    line.clear();
    let mut hasher: Option<(Sha256, u64)> = None;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let (take, done) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len(), false),
        };
        match &mut hasher {
            Some((hash, length)) => {
                hash.update(&buffer[..take]);
                *length += take as u64;
            }
            None if (line.len() + take) as u64 > MAX_LINE_BYTES + 1 => {
                let mut hash = Sha256::new();
                hash.update(&*line);
                hash.update(&buffer[..take]);
                hasher = Some((hash, (line.len() + take) as u64));
                line.clear();
            }
            None => line.extend_from_slice(&buffer[..take]),
        }
        reader.consume(take);
        if done {
            break;
        }
    }
    Ok(match hasher {
        Some((hash, length)) => Line::TooLong {
            digest: hash.finalize().into(),
            length,
        },
        None if line.is_empty() => Line::End,
        None => Line::Read,
    })
}

impl<'k> AuditLogVerifier<'k> {
    /// A verifier checking each line's signature with `key` when one is given (and then
    /// requiring one on every line).
    pub fn new(key: Option<&'k VerifyingKey>) -> AuditLogVerifier<'k> {
        AuditLogVerifier {
            key,
            chains: Vec::new(),
            lines: Vec::new(),
            problems: Vec::new(),
            unreported: 0,
            unreadable: VecDeque::new(),
        }
    }

    /// Reads the next file: the first, or one the file before was rotated into (a chain marked
    /// `rotated` there must continue a chain the files before it end).
    pub fn read_file(&mut self, mut reader: impl BufRead) -> io::Result<()> {
        let file = self.lines.len();
        self.lines.push(0);
        let mut line = Vec::new();
        loop {
            let read = next_line(&mut reader, &mut line)?;
            if matches!(read, Line::End) {
                break;
            }
            self.lines[file] += 1;
            let number = self.lines[file];
            match read {
                Line::End => unreachable!("handled above"),
                Line::TooLong { digest, length } => {
                    self.unreadable_line(digest);
                    self.problem(
                        file,
                        number,
                        format!(
                            "{length} bytes long, more than any audit line ({MAX_LINE_BYTES}): not read"
                        ),
                    );
                }
                Line::Read if line.last() != Some(&b'\n') => {
                    self.problem(
                        file,
                        number,
                        "the last line has no newline: it was cut off mid-write, or truncated"
                            .to_owned(),
                    );
                }
                Line::Read => self.follow(&line, file, number),
            }
        }
        Ok(())
    }

    /// What was found.
    pub fn finish(mut self) -> Verified {
        if self.key.is_some() {
            let tails: Vec<((usize, usize), u64, String)> = self
                .chains
                .iter()
                .filter_map(|chain| {
                    chain
                        .uncovered
                        .map(|(place, count)| (place, count, chain.summary.id.clone()))
                })
                .collect();
            for ((file, line), count, id) in tails {
                self.problem(
                    file,
                    line,
                    format!(
                        "unsigned tail: this line and the {} after it in chain {id} are covered by no checkpoint signature (written after the last one: the writer stopped without signing them, or they were added)",
                        count - 1
                    ),
                );
            }
        }
        Verified {
            lines: self.lines,
            chains: self.chains.into_iter().map(|chain| chain.summary).collect(),
            problems: self.problems,
            unreported: self.unreported,
        }
    }

    fn problem(&mut self, file: usize, line: usize, why: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(AuditProblem { file, line, why });
        } else {
            self.unreported += 1;
        }
    }

    fn unreadable_line(&mut self, digest: [u8; 32]) {
        if self.unreadable.len() == REMEMBERED_UNREADABLE {
            self.unreadable.pop_front();
        }
        self.unreadable.push_back(digest);
    }

    /// Whether `prev` names a line reported as unreadable (forgotten once a chain continues
    /// over it).
    fn continues_over_unreadable(&mut self, prev: Option<&str>) -> bool {
        let Some(prev) = prev else {
            return false;
        };
        match self
            .unreadable
            .iter()
            .position(|digest| hex(digest) == prev)
        {
            Some(at) => {
                self.unreadable.remove(at);
                true
            }
            None => false,
        }
    }

    /// Checks one line (with its newline) against the chain it names, and advances that chain.
    fn follow(&mut self, line: &[u8], file: usize, number: usize) {
        let digest: [u8; 32] = Sha256::digest(line).into();
        let body = &line[..line.len() - 1];
        let value = match toolgate_gate::internals::parse_strict_json(body, 64) {
            Ok(value) => value,
            Err(why) => {
                self.unreadable_line(digest);
                return self.problem(file, number, format!("not a JSON audit line ({why})"));
            }
        };
        let chain = match chain_of(&value) {
            Ok(chain) => chain,
            Err(why) => {
                self.unreadable_line(digest);
                return self.problem(file, number, why.to_owned());
            }
        };
        let signed = match check_signature(body, &value, self.key) {
            Ok(signed) => signed,
            Err(why) => {
                self.problem(file, number, why);
                false
            }
        };
        let place = (file, number);
        let at = match self
            .chains
            .iter()
            .position(|followed| followed.summary.id == chain.id)
        {
            None => {
                self.begin_chain(&chain, place, digest);
                self.chains.len() - 1
            }
            Some(at) => {
                self.continue_chain(at, &chain, place, digest);
                at
            }
        };
        // A signed line covers itself and, through `prev`, every line of its chain before it.
        let followed = &mut self.chains[at];
        followed.uncovered = if signed {
            None
        } else {
            match followed.uncovered {
                Some((first, count)) => Some((first, count + 1)),
                None => Some((place, 1)),
            }
        };
    }

    /// A chain's first line (at `place`: file, line): a new chain (seq 0, no prev), or one
    /// rotated in from a file before (marked), which must then be a file given before this one
    /// when there is one.
    fn begin_chain(&mut self, chain: &ChainMembers<'_>, place: (usize, usize), digest: [u8; 32]) {
        let ChainMembers {
            id,
            seq,
            prev,
            rotated,
        } = *chain;
        let (file, number) = place;
        let rotated_in = match (seq, prev, rotated) {
            (0, None, _) => false,
            (_, Some(_), true) if file == 0 => true,
            (_, Some(_), true) => {
                self.problem(
                    file,
                    number,
                    format!(
                        "chain {id} is continued here from a rotated file, but the file before this one holds no line of it: give the file it was rotated from first, or it was deleted"
                    ),
                );
                true
            }
            _ if self.continues_over_unreadable(prev) => false,
            _ => {
                self.problem(
                    file,
                    number,
                    format!(
                        "chain {id} begins here at seq {seq}, unmarked: its earlier lines were deleted"
                    ),
                );
                false
            }
        };
        self.chains.push(Followed {
            summary: ChainSummary {
                id: id.to_owned(),
                first_seq: seq,
                last_seq: seq,
                last_line: place,
                rotated_in,
                continued: false,
            },
            prev: digest,
            uncovered: None,
        });
    }

    /// A line of the chain followed at `at`: its seq one past the chain's last, its prev that
    /// line's digest; the chain then moves on to it (but past a line out of order, which is
    /// reported and the chain left where it was).
    fn continue_chain(
        &mut self,
        at: usize,
        chain: &ChainMembers<'_>,
        place: (usize, usize),
        digest: [u8; 32],
    ) {
        let ChainMembers { id, seq, prev, .. } = *chain;
        let (file, number) = place;
        let (last_seq, (last_file, last_line), held) = {
            let chain = &self.chains[at].summary;
            (chain.last_seq, chain.last_line, hex(&self.chains[at].prev))
        };
        let place = if last_file == file {
            format!("line {last_line}")
        } else {
            format!("line {last_line} of the file before")
        };
        let expected = last_seq.saturating_add(1);
        if seq < expected {
            // Reordered or repeated: the chain stays where it was, so the lines after it are
            // checked against its true last line.
            return self.problem(
                file,
                number,
                format!(
                    "chain {id}'s seq {seq} comes after seq {last_seq} ({place}): lines were reordered or repeated"
                ),
            );
        }
        let why = if prev == Some(held.as_str()) {
            (seq > expected).then(|| format!(
                "chain {id} goes from seq {last_seq} ({place}) to {seq} with no line between them missing from the digests: its seq was edited"
            ))
        } else if seq == expected + 1 && self.continues_over_unreadable(prev) {
            // The unreadable line between was reported as such.
            None
        } else if seq > expected {
            Some(format!(
                "chain {id} goes from seq {last_seq} ({place}) to {seq}: {} line(s) between them are missing",
                seq - expected
            ))
        } else {
            Some(format!(
                "its prev is not the digest of chain {id}'s line before it ({place}): that line was edited"
            ))
        };
        if let Some(why) = why {
            self.problem(file, number, why);
        }
        let followed = &mut self.chains[at];
        followed.summary.last_seq = seq;
        followed.summary.continued |= last_file != file;
        followed.summary.last_line = (file, number);
        followed.prev = digest;
    }
}

/// A line's `chain` members.
#[derive(Clone, Copy)]
struct ChainMembers<'a> {
    id: &'a str,
    seq: u64,
    prev: Option<&'a str>,
    rotated: bool,
}

fn chain_of(value: &Value) -> Result<ChainMembers<'_>, &'static str> {
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
        _ => return Err("the chain's prev is neither a digest nor null"),
    };
    Ok(ChainMembers {
        id,
        seq,
        prev,
        rotated: chain.get("rotated") == Some(&Value::Bool(true)),
    })
}

/// A line's signature, where it has one: with a key, a string that verifies over the whole line
/// but itself; the signature is the line's last member, written as a writer writes it, with
/// nothing after it. Without a key, a `sig` is still held to that form (a writer writes no
/// other). Whether the line is signed and verified with the key (`false` without a key, or for
/// a line that carries no signature: a checkpoint after it must cover it).
fn check_signature(body: &[u8], value: &Value, key: Option<&VerifyingKey>) -> Result<bool, String> {
    let signature = match value.get("sig") {
        None => return Ok(false),
        Some(Value::String(signature)) => signature,
        Some(_) => {
            return Err(
                "forged: its sig is not a signature (a writer writes a base64 string)".to_owned(),
            );
        }
    };
    // The exact bytes a writer appends: `,"sig":"<base64>"}` end the line, so nothing was
    // added after the signature, and the signed bytes are all the others.
    let tail_length = SIG_OPEN.len() + signature.len() + SIG_CLOSE.len();
    let cut = body.len().checked_sub(tail_length);
    let written_as_signed = cut.is_some_and(|cut| {
        body[cut..].starts_with(SIG_OPEN)
            && &body[cut + SIG_OPEN.len()..body.len() - SIG_CLOSE.len()] == signature.as_bytes()
            && body.ends_with(SIG_CLOSE)
    });
    let (Some(cut), true) = (cut, written_as_signed) else {
        return Err(
            "forged: the signature is not the line's last member as a writer writes it (members follow it, or it is escaped)"
                .to_owned(),
        );
    };
    let Some(key) = key else {
        return Ok(false);
    };
    let mut signed = body[..cut].to_vec();
    signed.push(b'}');
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(signature)
        .map_err(|_| "forged: the signature is not base64")?;
    let signature = ed25519_dalek::Signature::from_slice(&bytes)
        .map_err(|_| "forged: the signature is not 64 bytes")?;
    key.verify(&signed, &signature).map(|()| true).map_err(|_| {
        "the signature does not verify: the line was edited, or signed with another key".to_owned()
    })
}
