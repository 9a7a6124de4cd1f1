//! `toolgate audit`: the audit log as evidence. `verify` follows every hash chain in a log (and
//! checks each line's signature, given the public key) and names the first line that was
//! edited, deleted, reordered or cut; `keygen` makes the Ed25519 key a front signs with
//! (`--audit-key`).

use std::io::Write;
use std::path::{Path, PathBuf};

use toolgate_gate::internals::escape_hidden;
use toolgate_repo::{Status, UsageError, read_verifying_key, verify_audit_log};

/// `toolgate audit`'s verbs.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum AuditCommand {
    /// Verify an audit log's hash chains, and its signatures with --public-key: report the
    /// first broken, missing or reordered line. Exit 0 intact, 1 broken, 2 unreadable.
    Verify {
        /// The audit log (JSON lines, as --audit writes them).
        file: PathBuf,
        /// The Ed25519 public key (SPKI PEM) the log's writer signed with: every line must
        /// carry a signature that verifies.
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
        AuditCommand::Verify { file, public_key } => verify(file, public_key.as_deref(), out),
        AuditCommand::Keygen { out: path } => {
            let (private, public) = toolgate_repo::generate_key_pair()?;
            write_private(path, private.as_bytes())?;
            toolgate_repo::write_output(out, public.as_bytes())?;
            Ok(Status::Passed)
        }
    }
}

fn verify(
    file: &Path,
    public_key: Option<&Path>,
    out: &mut impl Write,
) -> Result<Status, UsageError> {
    let key = public_key.map(read_verifying_key).transpose()?;
    let opened = std::fs::File::open(file)
        .map_err(|error| UsageError::io(file, "read the audit log", &error))?;
    let verified = verify_audit_log(std::io::BufReader::new(opened), key.as_ref())
        .map_err(|error| UsageError::io(file, "read the audit log", &error))?;
    let path = file.display().to_string();
    let shown = escape_hidden(&path);
    let mut text = String::new();
    let status = match &verified.broken {
        Some((line, why)) => {
            text.push_str(&format!("{shown}:{line}: {}\n", escape_hidden(why)));
            Status::Failed
        }
        None => {
            text.push_str(&format!(
                "{shown}: {} line(s), {} chain(s), intact{}\n",
                verified.lines,
                verified.chains.len(),
                if key.is_some() {
                    ", every line signed"
                } else {
                    ""
                }
            ));
            Status::Passed
        }
    };
    for chain in &verified.chains {
        text.push_str(&format!(
            "  chain {}: seq {}..{}, its last line is line {}{}\n",
            escape_hidden(&chain.id),
            chain.first_seq,
            chain.last_seq,
            chain.last_line,
            if chain.rotated_in {
                " (continued from a rotated file)"
            } else {
                ""
            }
        ));
    }
    if verified.broken.is_none() && key.is_none() {
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
