//! `toolgate audit`: the audit log as evidence. `verify` follows every hash chain in a log, or
//! in a log and the files it was rotated into (and checks each line's signature, given the
//! public key), and names every line that was edited, deleted, reordered, forged or cut;
//! `keygen` makes the Ed25519 key a front signs with (`--audit-key`).

use std::io::Write;
use std::path::{Path, PathBuf};

use toolgate_front::{AuditLogVerifier, read_verifying_key};
use toolgate_gate::internals::escape_hidden;
use toolgate_repo::{Status, UsageError};

/// `toolgate audit`'s verbs.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Verify an audit log's hash chains, and its signatures with --public-key: report every
    /// broken, missing, reordered, forged or unsigned line. Give a rotated log's files oldest
    /// first (`audit.jsonl.1 audit.jsonl`) to check that each goes on where the one before ends.
    /// Exit 0 intact, 1 broken, 2 unreadable.
    Verify {
        /// The audit log (JSON lines, as --audit writes them); several: a log and the files it
        /// was rotated into, oldest first.
        #[arg(required = true, num_args = 1..)]
        files: Vec<PathBuf>,
        /// The Ed25519 public key (SPKI PEM) the log's writer signed with: every line must be
        /// covered by a checkpoint after it whose signature verifies (an unsigned tail is
        /// named).
        #[arg(long, value_name = "FILE")]
        public_key: Option<PathBuf>,
    },
    /// Make an Ed25519 signing key for --audit-key: the private key is written to FILE (mode
    /// 0600, never over an existing file), the public key printed for `verify --public-key`.
    Keygen {
        /// Where to write the private key (PKCS#8 PEM).
        out: PathBuf,
    },
}

pub(crate) fn run(command: &AuditCommand, out: &mut impl Write) -> Result<Status, UsageError> {
    match command {
        AuditCommand::Verify { files, public_key } => verify(files, public_key.as_deref(), out),
        AuditCommand::Keygen { out: path } => {
            let (private, public) = toolgate_front::generate_key_pair()?;
            write_private(path, private.as_bytes())?;
            toolgate_repo::write_output(out, public.as_bytes())?;
            Ok(Status::Passed)
        }
    }
}

fn verify(
    files: &[PathBuf],
    public_key: Option<&Path>,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let key = public_key.map(read_verifying_key).transpose()?;
    let mut verifier = AuditLogVerifier::new(key.as_ref());
    for file in files {
        let opened = std::fs::File::open(file)
            .map_err(|error| UsageError::io(file, "read the audit log", &error))?;
        verifier
            .read_file(std::io::BufReader::new(opened))
            .map_err(|error| UsageError::io(file, "read the audit log", &error))?;
    }
    let verified = verifier.finish();
    let shown: Vec<String> = files
        .iter()
        .map(|file| escape_hidden(&file.display().to_string()).into_owned())
        .collect();
    let mut text = String::new();
    for problem in &verified.problems {
        text.push_str(&format!(
            "{}:{}: {}\n",
            shown[problem.file],
            problem.line,
            escape_hidden(&problem.why)
        ));
    }
    if verified.unreported > 0 {
        text.push_str(&format!(
            "… and {} more problem(s), not listed\n",
            verified.unreported
        ));
    }
    let lines: usize = verified.lines.iter().sum();
    let total = verified.problems.len() + verified.unreported;
    let whole = shown.join(" then ");
    let status = if verified.intact() {
        text.push_str(&format!(
            "{whole}: {lines} line(s), {} chain(s), intact{}\n",
            verified.chains.len(),
            if key.is_some() {
                ", every line covered by a checkpoint signature"
            } else {
                ""
            }
        ));
        Status::Passed
    } else {
        text.push_str(&format!(
            "{whole}: {lines} line(s), {} chain(s), {total} problem(s)\n",
            verified.chains.len()
        ));
        Status::Failed
    };
    for chain in &verified.chains {
        let (file, line) = chain.last_line;
        text.push_str(&format!(
            "  chain {}: seq {}..{}, its last line is {}:{line}{}{}\n",
            escape_hidden(&chain.id),
            chain.first_seq,
            chain.last_seq,
            shown[file],
            if chain.rotated_in {
                " (continued from a rotated file not given: give it first to check the two join)"
            } else {
                ""
            },
            if chain.continued {
                " (continued across the files, checked)"
            } else {
                ""
            }
        ));
    }
    if verified.intact() && key.is_none() {
        text.push_str("  unsigned: whoever can write the file could have rewritten every line; sign with --audit-key and verify with --public-key\n");
    }
    toolgate_repo::write_output(out, text.as_bytes())?;
    Ok(status)
}

/// Writes a private key: a new file only, readable by its owner alone.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), UsageError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|error| {
        UsageError::io(path, "create the key file (it must not exist yet)", &error)
    })?;
    file.write_all(bytes)
        .map_err(|error| UsageError::io(path, "write the key file", &error))
}
