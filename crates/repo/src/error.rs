//! The one error type of the command line: a usage, I/O or configuration problem (exit code 2).

use std::fmt;
use std::path::Path;

/// Something the user must fix before toolgate can decide anything. Displayed as one line per
/// problem, each naming the file (and line or pointer) it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    message: String,
}

impl UsageError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> UsageError {
        UsageError {
            message: message.into(),
        }
    }

    /// An I/O error about a path.
    pub fn io(path: &Path, action: &str, error: &std::io::Error) -> UsageError {
        UsageError::new(format!("{}: cannot {action}: {error}", path.display()))
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// Writes a command's output. A reader that stopped reading (`| head`) is not an error of ours.
pub fn write_output(out: &mut impl std::io::Write, bytes: &[u8]) -> Result<(), UsageError> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(UsageError::new(format!("cannot write the output: {error}")))
        }
        _ => Ok(()),
    }
}

impl From<crate::RepoError> for UsageError {
    fn from(error: crate::RepoError) -> UsageError {
        UsageError::new(error.to_string())
    }
}

impl From<toolgate_gate::CompileErrors> for UsageError {
    fn from(errors: toolgate_gate::CompileErrors) -> UsageError {
        UsageError::new(errors.to_string())
    }
}

/// `1 tool`, `2 tools`: a count and its noun, for report headlines.
pub fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}
